/* gpu_tp: tensor parallelism (--tp) against one GPU, on a synthetic model held in memory (run by
 * bench/gpu_check.sh on a box with >= 2 GPUs; with fewer it prints SKIP and checks only the refusals).
 *
 *   gpu_tp [PRESET [TYPE [LAYERS]]]      default: llama3-8b q4_0 4 (tern_synth_model_new, seed 0)
 *
 * For every n in 2, 4, 8 that the box has GPUs for, a TP = n context against a TP = 1 context:
 * 1. Prefill logits, every row, relative L2 < 1e-2: 40 tokens (the GEMM path) and 12 tokens (the GEMV path).
 * 2. 64 greedy decode steps in lockstep (both fed TP = 1's argmax; decode graphs with the logits copied
 *    back): logits rel L2 < 1e-2 each step; the argmaxes equal, or a near-tie: TP = 1's top-2 gap under
 *    twice the largest |difference| over those two ids.
 * 3. tern_eval_greedy on each context alone from the same prompt: identical 64-token streams (unless step 2
 *    found a near-tie, then reported, not failed).
 * 4. Chunk == steps under TP: 8 rows through tern_eval_argmax give the argmaxes of 8 decode steps, and at
 *    TP = 2 (one f32 add per all-reduced element, a + b = b + a) the 8-row logits equal the steps' bit for bit.
 * 5. Refusals: --tp 3 (8 KV heads do not split over 3) and --tp beyond the GPU count, one-line messages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "check.h"
#include "synth.h"
#include "tern.h"

static double rel_l2(const float *a, const float *ref, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        double d = (double)a[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

static tern_context *ctx(tern_model *m, int tp, int n_ctx) {
    tern_context_params p = tern_context_default_params();
    p.n_ctx = n_ctx;
    p.device = TERN_DEVICE_CUDA;
    p.tp = tp;
    p.verbose = 1;
    return tern_context_new_ex(m, &p);
}

static void top2(const float *x, int n, int *i1, int *i2) {
    *i1 = tern_argmax(x, n);
    *i2 = -1;
    for (int i = 0; i < n; i++)
        if (i != *i1 && (*i2 < 0 || x[i] > x[*i2])) *i2 = i;
}

int main(int argc, char **argv) {
    const char *arch = argc > 1 ? argv[1] : "llama3-8b", *type = argc > 2 ? argv[2] : "q4_0";
    const int layers = argc > 3 ? atoi(argv[3]) : 4;
    const int ndev = tern_cuda_device_count();
    tern_model *m = tern_synth_model_new(arch, type, layers, 0);
    CHECK(m != NULL, "model: %s", tern_last_error());
    if (!m) return check_summary("gpu_tp");
    const int V = tern_model_n_vocab(m), NCTX = 256;

    /* 5. refusals (need no second GPU) */
    tern_context *bad = ctx(m, 3, 64);
    CHECK(bad == NULL && strstr(tern_last_error(), "do not split"), "--tp 3 refused: %s",
          bad ? "(accepted)" : tern_last_error());
    tern_context_free(bad);
    if (ndev < TERN_TP_MAX) {
        bad = ctx(m, ndev + 1, 64);
        const int splits = m->n_head_kv % (ndev + 1) == 0;
        CHECK(bad == NULL && (!splits || strstr(tern_last_error(), "GPUs and")), "--tp %d with %d GPUs refused: %s",
              ndev + 1, ndev, bad ? "(accepted)" : tern_last_error());
        tern_context_free(bad);
    }
    if (ndev < 2) {
        printf("gpu_tp: SKIP the TP comparisons: %d GPU(s) visible\n", ndev);
        tern_model_free(m);
        return check_summary("gpu_tp");
    }

    int32_t prompt[40];
    uint64_t s = 0x7470;
    for (int i = 0; i < 40; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        prompt[i] = (int32_t)((s >> 33) % (uint64_t)V);
    }
    float *l1 = malloc(sizeof(float) * (size_t)V * 40), *ln = malloc(sizeof(float) * (size_t)V * 40);
    float *s1 = malloc(sizeof(float) * (size_t)V * 8), *sn = malloc(sizeof(float) * (size_t)V * 8);
    tern_context *c1 = ctx(m, 1, NCTX);
    CHECK(c1 != NULL, "tp 1: %s", tern_last_error());
    for (int n = 2; n <= TERN_TP_MAX && c1; n *= 2) {
        if (n > ndev) break;
        tern_context *cn = ctx(m, n, NCTX);
        CHECK(cn != NULL, "tp %d: %s", n, tern_last_error());
        if (!cn) continue;
        /* 1. prefill logits */
        const int lens[2] = {40, 12};
        for (int k = 0; k < 2; k++) {
            tern_context_truncate(c1, 0);
            tern_context_truncate(cn, 0);
            int r1 = tern_eval(c1, prompt, lens[k], l1, 1), rn = tern_eval(cn, prompt, lens[k], ln, 1);
            CHECK(r1 == 0 && rn == 0, "prefill: %s", tern_last_error());
            double worst = 0;
            for (int i = 0; i < lens[k]; i++) {
                double e = rel_l2(ln + (size_t)i * V, l1 + (size_t)i * V, V);
                if (!(e <= worst)) worst = e;
            }
            CHECK(worst < 1e-2, "tp %d prefill %d: max rel L2 %g", n, lens[k], worst);
            printf("tp %d: prefill %d tokens, logits max rel L2 vs tp 1: %.3g\n", n, lens[k], worst);
        }
        /* 2. lockstep decode from the 12-token prefill */
        int32_t tok = tern_argmax(l1 + (size_t)11 * V, V);
        int same = 0, ties = 0, bad_steps = 0;
        double worst = 0;
        int32_t lock[64];
        for (int t = 0; t < 64; t++) {
            lock[t] = tok;
            int r1 = tern_eval(c1, &tok, 1, l1, 0), rn = tern_eval(cn, &tok, 1, ln, 0);
            CHECK(r1 == 0 && rn == 0, "decode: %s", tern_last_error());
            double e = rel_l2(ln, l1, V);
            if (!(e <= worst)) worst = e;
            int a1, b1, an, bn;
            top2(l1, V, &a1, &b1);
            top2(ln, V, &an, &bn);
            if (an == a1) same++;
            else {
                double d = fmax(fabs(ln[a1] - l1[a1]), fabs(ln[b1] - l1[b1]));
                if (l1[a1] - l1[b1] < 2 * d) ties++;
                else bad_steps++;
            }
            tok = a1;
        }
        CHECK(worst < 1e-2, "tp %d decode: max rel L2 %g", n, worst);
        CHECK(bad_steps == 0, "tp %d decode: %d argmax differences that are not near-ties", n, bad_steps);
        printf("tp %d: decode 64 steps, logits max rel L2 %.3g, argmax equal %d/64, near-ties %d\n", n, worst, same,
               ties);
        /* 3. greedy streams through the device argmax */
        int32_t g1[65], gn[65];
        tern_context_truncate(c1, 0);
        tern_context_truncate(cn, 0);
        int ok = tern_eval_greedy(c1, prompt, 12, &g1[0]) == 0 && tern_eval_greedy(cn, prompt, 12, &gn[0]) == 0;
        for (int t = 0; t < 64 && ok; t++)
            ok = tern_eval_greedy(c1, &g1[t], 1, &g1[t + 1]) == 0 && tern_eval_greedy(cn, &gn[t], 1, &gn[t + 1]) == 0;
        CHECK(ok, "greedy: %s", tern_last_error());
        int first = -1;
        for (int t = 0; t < 65 && first < 0; t++)
            if (g1[t] != gn[t]) first = t;
        CHECK(first < 0 || ties > 0, "tp %d: greedy streams differ at token %d with no near-tie in the lockstep run", n,
              first);
        CHECK(!memcmp(g1, lock, sizeof lock), "tp 1 greedy stream == its lockstep argmaxes");
        printf("tp %d: 64 greedy tokens %s tp 1%s\n", n, first < 0 ? "identical to" : "differ from",
               first < 0 ? "" : " (near-tie, see above)");
        /* 4. a chunk of 8 == 8 steps (argmax; logits bit for bit at tp 2) */
        tern_context_truncate(cn, 12);
        int32_t ids8[8], step_ids[8];
        CHECK(tern_eval_argmax(cn, gn, 8, ids8) == 0, "argmax chunk: %s", tern_last_error());
        tern_context_truncate(cn, 12);
        CHECK(tern_eval(cn, gn, 8, sn, 1) == 0, "chunk logits");
        tern_context_truncate(cn, 12);
        for (int t = 0; t < 8; t++) {
            CHECK(tern_eval(cn, gn + t, 1, s1 + (size_t)t * V, 0) == 0, "step");
            step_ids[t] = tern_argmax(s1 + (size_t)t * V, V);
        }
        CHECK(!memcmp(ids8, step_ids, sizeof ids8), "tp %d: 8-row argmax == 8 decode steps", n);
        if (n == 2)
            CHECK(!memcmp(sn, s1, sizeof(float) * (size_t)V * 8), "tp 2: 8-row logits == 8 decode steps, bit for bit");
        tern_context_free(cn);
    }
    tern_context_free(c1);
    free(l1); free(ln); free(s1); free(sn);
    tern_model_free(m);
    return check_summary("gpu_tp");
}
