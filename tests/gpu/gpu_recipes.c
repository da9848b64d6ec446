/* gpu_recipes: the recipe rows beyond llama on the CUDA backend against llama.cpp (run by bench/gpu_check.sh on a GPU
 * box, not in CI): the tiny random GGUFs of tests/fixtures/recipes/ (tests/gen_recipe_fixtures.py: qwen2 with q/k/v
 * biases, qwen3 with per-head q/k norms, phi3 with fused q|k|v and gate|up, qwen2 with YaRN, phi3 with LongRoPE,
 * gemma3 at 6 layers with a sliding window of 8, head_dim 64; all NEOX RoPE) and llama.cpp's logits of 40 fixed ids
 * (llama-cpp-python 0.3.36, CPU, f16 KV). For each file, on the GPU:
 *   1. the 40 ids in one pass (a prefill chunk: the f16 GEMMs, v1 or flash attention) and in chunks of 16 and of 1
 *      (the GEMV path, the decode attention): every position's logits within REL_MAX relative L2 of llama.cpp's, the
 *      argmax equal at >= 38 of 40 positions (F32 weights rounded to f16 for the prefill GEMMs: near-ties may flip);
 *   2. chunks of 8 equal one-token steps bit for bit (the recipe's kernels keep batch invariance);
 *   3. a mutation the check must see: the recipe's RoPE pairing flipped (every file), every window removed (gemma3);
 *   4. gemma3 (head_dim 64) over a Q8_0 KV cache: within Q8_REL_MAX of llama.cpp's f16-cache logits.
 * The CPU side of the same fixtures is tests/test_recipes.c (CI). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "tern.h"

#define FIX "tests/fixtures/recipes/"
#define N_IDS 40
#define REL_MAX 1e-2    /* the GPU's f16 GEMM inputs over F32 weights; gpu_model's bound against the CPU reference */
#define Q8_REL_MAX 5e-2 /* a Q8_0 KV cache against llama.cpp's f16 one */

static int argmax_f(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static double worst_rel(const float *got, const float *want, int n, int V, int *bad_argmax) {
    double worst = 0;
    *bad_argmax = 0;
    for (int r = 0; r < n; r++) {
        double num = 0, den = 0;
        for (int i = 0; i < V; i++) {
            const double d = (double)got[(size_t)r * V + i] - want[(size_t)r * V + i];
            num += d * d;
            den += (double)want[(size_t)r * V + i] * want[(size_t)r * V + i];
        }
        const double e = den > 0 ? sqrt(num / den) : INFINITY;
        if (!(e <= worst)) worst = e;
        *bad_argmax += argmax_f(got + (size_t)r * V, V) != argmax_f(want + (size_t)r * V, V);
    }
    return worst;
}

/* All n positions' logits on the GPU, fed `chunk` ids a call (0: all at once). */
static int eval_gpu(tern_model *m, const int32_t *ids, int n, int chunk, int q8, float *out) {
    tern_context_params p = tern_context_default_params();
    p.n_ctx = 64;
    p.device = TERN_DEVICE_CUDA;
    p.cache_type_k = p.cache_type_v = q8 ? TERN_CACHE_Q8_0 : TERN_CACHE_F16;
    tern_context *c = tern_context_new_ex(m, &p);
    if (!c) return -1;
    const int V = tern_model_n_vocab(m), step = chunk > 0 ? chunk : n;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i += step) {
        const int k = n - i < step ? n - i : step;
        rc = tern_eval(c, ids + i, k, out + (size_t)i * V, 1);
    }
    tern_context_free(c);
    return rc;
}

static void check_file(const char *name) {
    char path[256];
    snprintf(path, sizeof path, FIX "%s.gguf", name);
    tern_model *m = tern_model_load(path, 0);
    CHECK(m != NULL, "load %s: %s", name, tern_last_error());
    if (!m) return;
    const int V = tern_model_n_vocab(m);
    int32_t ids[N_IDS];
    snprintf(path, sizeof path, FIX "%s.ids", name);
    const int n = check_read_ids(path, ids, N_IDS);
    float *want = malloc(sizeof(float) * (size_t)N_IDS * V), *got = malloc(sizeof(float) * (size_t)N_IDS * V),
          *one = malloc(sizeof(float) * (size_t)N_IDS * V);
    snprintf(path, sizeof path, FIX "%s.logits", name);
    FILE *f = fopen(path, "rb");
    const size_t nr = f ? fread(want, sizeof(float), (size_t)N_IDS * V, f) : 0;
    if (f) fclose(f);
    CHECK(n == N_IDS && nr == (size_t)N_IDS * V, "%s fixtures: %d ids, %zu floats", name, n, nr);
    if (n != N_IDS || nr != (size_t)N_IDS * V) goto done;
    static const int chunks[3] = {0, 16, 1};
    for (int c = 0; c < 3; c++) {
        int bad = 0;
        float *dst = chunks[c] == 1 ? one : got;
        CHECK(eval_gpu(m, ids, n, chunks[c], 0, dst) == 0, "%s: gpu eval (chunk %d): %s", name, chunks[c], tern_last_error());
        const double e = worst_rel(dst, want, n, V, &bad);
        printf("gpu_recipes: %-13s chunk %-3d: worst rel L2 vs llama.cpp %.3e, argmax equal at %d of %d\n", name,
               chunks[c] ? chunks[c] : n, e, n - bad, n);
        CHECK(e < REL_MAX && bad <= 2, "%s chunk %d: logits vs llama.cpp: worst row %.3e, %d argmax differ", name,
              chunks[c], e, bad);
    }
    /* chunks of 8 == one-token steps, bit for bit */
    CHECK(eval_gpu(m, ids, n, 8, 0, got) == 0, "%s: gpu eval (chunk 8)", name);
    CHECK(!memcmp(got, one, sizeof(float) * (size_t)n * V), "%s: chunks of 8 differ from one-token steps", name);
    /* mutations: the RoPE pairing flipped; gemma3: no window */
    {
        tern_recipe wrong = *m->recipe;
        wrong.rope = wrong.rope == TERN_ROPE_NEOX ? TERN_ROPE_NORM : TERN_ROPE_NEOX;
        const tern_recipe *keep = m->recipe;
        m->recipe = &wrong;
        int bad = 0;
        CHECK(eval_gpu(m, ids, n, 16, 0, got) == 0, "%s: gpu eval (flipped RoPE)", name);
        const double e = worst_rel(got, want, n, V, &bad);
        CHECK(e > 10 * REL_MAX, "%s: with the RoPE pairing flipped the logits are %.3e from llama.cpp's", name, e);
        m->recipe = keep;
    }
    if (!strcmp(name, "gemma3")) {
        int w[64], bad = 0;
        for (int il = 0; il < m->n_layer; il++) w[il] = m->layers[il].window, m->layers[il].window = 0;
        for (int c = 0; c < 2; c++) { /* the prefill path and the decode path */
            CHECK(eval_gpu(m, ids, n, c ? 16 : 0, 0, got) == 0, "gemma3: gpu eval (no window)");
            const double e = worst_rel(got, want, n, V, &bad);
            CHECK(e > 10 * REL_MAX, "gemma3 chunk %d: with no window the logits are %.3e from llama.cpp's", c ? 16 : n, e);
        }
        for (int il = 0; il < m->n_layer; il++) m->layers[il].window = w[il];
        for (int c = 0; c < 2; c++) {
            CHECK(eval_gpu(m, ids, n, c ? 16 : 0, 1, got) == 0, "gemma3: gpu eval (Q8_0 cache): %s", tern_last_error());
            const double e = worst_rel(got, want, n, V, &bad);
            printf("gpu_recipes: gemma3 Q8_0 KV chunk %-3d: worst rel L2 vs llama.cpp (f16 KV) %.3e, argmax equal at %d of "
                   "%d\n", c ? 16 : n, e, n - bad, n);
            CHECK(e < Q8_REL_MAX, "gemma3 Q8_0 cache chunk %d: %.3e from llama.cpp's", c ? 16 : n, e);
        }
    }
done:
    free(want);
    free(got);
    free(one);
    tern_model_free(m);
}

int main(void) {
    if (!tern_cuda_name()[0]) {
        printf("gpu_recipes: no CUDA device (or a CPU build), skipped\ngpu_recipes: 0 passed, 0 failed\n");
        return 0;
    }
    static const char *files[] = {"qwen2", "qwen3", "phi3", "qwen2-yarn", "phi3-longrope", "gemma3"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) check_file(files[i]);
    return check_summary("gpu_recipes");
}
