/* fuzz_sampler: libFuzzer over the sampler's parameters and logits (issue 28; this harness found top-p drawing a
 * token outside the kept set when the largest logit was ~1e16). The input: temp, top_p, min_p, repeat_penalty as raw
 * floats, top_k, repeat_last_n, seed, then n_vocab (1..512) raw float logits and a history of ids. Either
 * tern_sampler_new refuses the parameters with a message, or every draw is an id in range, never a NaN logit's, and
 * one the sampler's own distribution gives weight (tern_sampler_probs: the kept set). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "tern.h"

static size_t take(const uint8_t **p, size_t *n, void *out, size_t k) {
    memset(out, 0, k);
    size_t c = *n < k ? *n : k;
    memcpy(out, *p, c);
    *p += c;
    *n -= c;
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    tern_sampler_params sp;
    float f4[4];
    int32_t i2[2];
    uint16_t nv16;
    take(&data, &n, f4, sizeof f4);
    take(&data, &n, i2, sizeof i2);
    take(&data, &n, &sp.seed, sizeof sp.seed);
    take(&data, &n, &nv16, sizeof nv16);
    sp.temp = f4[0]; sp.top_p = f4[1]; sp.min_p = f4[2]; sp.repeat_penalty = f4[3];
    sp.top_k = i2[0]; sp.repeat_last_n = i2[1];
    const int nv = 1 + nv16 % 512;
    float logits[512];
    take(&data, &n, logits, sizeof(float) * (size_t)nv);
    int32_t hist[64];
    const int nh = (int)(n / 4 < 64 ? n / 4 : 64);
    take(&data, &n, hist, sizeof(int32_t) * (size_t)nh);
    tern_sampler *s = tern_sampler_new(&sp, nv);
    if (!s) {
        if (!tern_last_error()[0]) abort();
        return 0;
    }
    int all_nan = 1;
    for (int i = 0; i < nv; i++) all_nan &= isnan(logits[i]);
    double probs[512];
    const int pr = tern_sampler_probs(s, logits, hist, nh, probs);
    for (int d = 0; d < 4; d++) {
        const int32_t id = tern_sampler_sample(s, logits, hist, nh);
        if (all_nan) {
            if (id != -1) abort();
            continue;
        }
        if (id < 0 || id >= nv || isnan(logits[id])) {
            fprintf(stderr, "fuzz_sampler: drew %d of %d\n", id, nv);
            abort();
        }
        if (pr == 0 && !(probs[id] > 0.0)) {
            fprintf(stderr, "fuzz_sampler: drew %d, which the distribution gives p = %g\n", id, probs[id]);
            abort();
        }
    }
    tern_sampler_free(s);
    return 0;
}
