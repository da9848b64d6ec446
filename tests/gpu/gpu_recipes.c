/* gpu_recipes: the recipe rows beyond llama on the CUDA backend against llama.cpp (run by bench/gpu_check.sh on a GPU
 * box, not in CI): the tiny random GGUFs of tests/fixtures/recipes/ (tests/gen_recipe_fixtures.py: qwen2 with q/k/v
 * biases, qwen3 with per-head q/k norms, phi3 with fused q|k|v and gate|up, qwen2 with YaRN, phi3 with LongRoPE,
 * gemma3 at 6 layers with a sliding window of 8, head_dim 64; all NEOX RoPE; mistral3 with YaRN's betas and log
 * multiplier and the attention temperature, NORM RoPE) and llama.cpp's logits of 40 fixed ids
 * (llama-cpp-python 0.3.36, CPU, f16 KV). For each file, on the GPU:
 *   1. the 40 ids in one pass (a prefill chunk: the f16 GEMMs, v1 or flash attention) and in chunks of 16 and of 1
 *      (the GEMV path, the decode attention): every position's logits within REL_MAX relative L2 of llama.cpp's, the
 *      argmax equal at >= 38 of 40 positions (F32 weights rounded to f16 for the prefill GEMMs: near-ties may flip);
 *   2. chunks of 8 equal one-token steps bit for bit (the recipe's kernels keep batch invariance);
 *   3. a mutation the check must see: the recipe's RoPE pairing flipped (every file), every window removed (gemma3);
 *   4. gemma3 (head_dim 64) over a Q8_0 KV cache: within Q8_REL_MAX of llama.cpp's f16-cache logits.
 * Then, against tern's own CPU backend on the same files (features no fixture of llama.cpp's holds):
 *   5. final logit soft-capping set on the qwen3 file (cap 2): GPU == CPU within REL_MAX, and not the uncapped logits;
 *   6. LongRoPE's short factors (phi3-longrope at a context of 16, within its original one): GPU == CPU, and not the
 *      context-64 (long-factor) logits;
 *   7. the window's edge in prefill: gemma3 with windows of 24, chunks of 24 (a chunk ending at the window: flash
 *      without the window) and of 25 (the window cuts: v3 with it), GPU == CPU.
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

/* All n positions' logits on a device, fed `chunk` ids a call (0: all at once), in a context of n_ctx. */
static int eval_on(tern_model *m, tern_device dev, int n_ctx, const int32_t *ids, int n, int chunk, int q8, float *out) {
    tern_context_params p = tern_context_default_params();
    p.n_ctx = n_ctx;
    p.device = dev;
    p.n_threads = dev == TERN_DEVICE_CPU ? 4 : 0;
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
static int eval_gpu(tern_model *m, const int32_t *ids, int n, int chunk, int q8, float *out) {
    return eval_on(m, TERN_DEVICE_CUDA, 64, ids, n, chunk, q8, out);
}

/* ids and V of a fixture; *m loaded. 0 on failure. */
static int load_fixture(const char *name, tern_model **m, int32_t *ids) {
    char path[256];
    snprintf(path, sizeof path, FIX "%s.gguf", name);
    *m = tern_model_load(path, 0);
    CHECK(*m != NULL, "load %s: %s", name, tern_last_error());
    if (!*m) return 0;
    snprintf(path, sizeof path, FIX "%s.ids", name);
    return check_read_ids(path, ids, N_IDS) == N_IDS;
}

/* 5-7: the GPU against tern's CPU backend where llama.cpp's fixtures do not reach. */
static void check_vs_cpu(void) {
    int32_t ids[N_IDS];
    tern_model *m = NULL;
    int bad = 0;
    /* 5. soft-capping on the qwen3 file */
    if (load_fixture("qwen3", &m, ids)) {
        const int V = tern_model_n_vocab(m);
        float *cpu = malloc(sizeof(float) * N_IDS * V), *gpu = malloc(sizeof(float) * N_IDS * V),
              *raw = malloc(sizeof(float) * N_IDS * V);
        CHECK(eval_gpu(m, ids, N_IDS, 16, 0, raw) == 0, "qwen3 uncapped");
        m->logit_softcap = 2.0f;
        CHECK(eval_on(m, TERN_DEVICE_CPU, 64, ids, N_IDS, 16, 0, cpu) == 0, "qwen3 capped, cpu");
        static const int chunks[3] = {0, 16, 1};
        for (int c = 0; c < 3; c++) {
            CHECK(eval_gpu(m, ids, N_IDS, chunks[c], 0, gpu) == 0, "qwen3 capped, gpu chunk %d", chunks[c]);
            const double e = check_rows_rel(gpu, cpu, N_IDS, V, &bad);
            printf("gpu_recipes: qwen3 softcap 2 chunk %-3d: worst rel L2 vs tern's CPU %.3e\n", chunks[c] ? chunks[c] : N_IDS, e);
            CHECK(e < REL_MAX, "softcap chunk %d: GPU vs CPU %.3e", chunks[c], e);
        }
        const double eu = check_rows_rel(raw, cpu, N_IDS, V, &bad);
        CHECK(eu > 10 * REL_MAX, "softcap: the capped CPU logits are only %.3e from the uncapped GPU ones", eu);
        free(cpu), free(gpu), free(raw);
        tern_model_free(m);
    }
    /* 6. LongRoPE's short factors: a context of 16 */
    if (load_fixture("phi3-longrope", &m, ids)) {
        const int V = tern_model_n_vocab(m), n = 16;
        float *cpu = malloc(sizeof(float) * n * V), *gpu = malloc(sizeof(float) * n * V), *lng = malloc(sizeof(float) * n * V);
        CHECK(eval_on(m, TERN_DEVICE_CPU, 16, ids, n, 16, 0, cpu) == 0, "phi3-longrope n_ctx 16, cpu");
        CHECK(eval_on(m, TERN_DEVICE_CUDA, 16, ids, n, 1, 0, gpu) == 0, "phi3-longrope n_ctx 16, gpu: %s", tern_last_error());
        CHECK(eval_on(m, TERN_DEVICE_CUDA, 64, ids, n, 1, 0, lng) == 0, "phi3-longrope n_ctx 64, gpu");
        const double e = check_rows_rel(gpu, cpu, n, V, &bad), el = check_rows_rel(lng, cpu, n, V, &bad);
        printf("gpu_recipes: phi3-longrope n_ctx 16 (short factors): worst rel L2 vs tern's CPU %.3e; the long factors' %.3e\n",
               e, el);
        CHECK(e < REL_MAX && el > 10 * REL_MAX, "LongRoPE short factors: GPU vs CPU %.3e, long vs short %.3e", e, el);
        free(cpu), free(gpu), free(lng);
        tern_model_free(m);
    }
    /* 7. the window's edge in prefill */
    if (load_fixture("gemma3", &m, ids)) {
        const int V = tern_model_n_vocab(m);
        for (int il = 0; il < m->n_layer; il++)
            if (m->layers[il].window) m->layers[il].window = 24;
        float *cpu = malloc(sizeof(float) * N_IDS * V), *gpu = malloc(sizeof(float) * N_IDS * V);
        CHECK(eval_on(m, TERN_DEVICE_CPU, 64, ids, N_IDS, 16, 0, cpu) == 0, "gemma3 window 24, cpu");
        static const int chunks[3] = {24, 25, 0};
        for (int c = 0; c < 3; c++) {
            CHECK(eval_gpu(m, ids, N_IDS, chunks[c], 0, gpu) == 0, "gemma3 window 24, gpu chunk %d", chunks[c]);
            const double e = check_rows_rel(gpu, cpu, N_IDS, V, &bad);
            printf("gpu_recipes: gemma3 window 24 chunk %-3d: worst rel L2 vs tern's CPU %.3e\n", chunks[c] ? chunks[c] : N_IDS, e);
            CHECK(e < REL_MAX, "gemma3 window 24 chunk %d: GPU vs CPU %.3e", chunks[c], e);
        }
        free(cpu), free(gpu);
        tern_model_free(m);
    }
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
    const size_t nr = check_read_f32(path, want, (size_t)N_IDS * V);
    CHECK(n == N_IDS && nr == (size_t)N_IDS * V, "%s fixtures: %d ids, %zu floats", name, n, nr);
    if (n != N_IDS || nr != (size_t)N_IDS * V) goto done;
    static const int chunks[3] = {0, 16, 1};
    for (int c = 0; c < 3; c++) {
        int bad = 0;
        float *dst = chunks[c] == 1 ? one : got;
        CHECK(eval_gpu(m, ids, n, chunks[c], 0, dst) == 0, "%s: gpu eval (chunk %d): %s", name, chunks[c], tern_last_error());
        const double e = check_rows_rel(dst, want, n, V, &bad);
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
        const double e = check_rows_rel(got, want, n, V, &bad);
        CHECK(e > 10 * REL_MAX, "%s: with the RoPE pairing flipped the logits are %.3e from llama.cpp's", name, e);
        m->recipe = keep;
    }
    if (!strcmp(name, "gemma3")) {
        int w[64], bad = 0;
        for (int il = 0; il < m->n_layer; il++) w[il] = m->layers[il].window, m->layers[il].window = 0;
        for (int c = 0; c < 2; c++) { /* the prefill path and the decode path */
            CHECK(eval_gpu(m, ids, n, c ? 16 : 0, 0, got) == 0, "gemma3: gpu eval (no window)");
            const double e = check_rows_rel(got, want, n, V, &bad);
            CHECK(e > 10 * REL_MAX, "gemma3 chunk %d: with no window the logits are %.3e from llama.cpp's", c ? 16 : n, e);
        }
        for (int il = 0; il < m->n_layer; il++) m->layers[il].window = w[il];
        for (int c = 0; c < 2; c++) {
            CHECK(eval_gpu(m, ids, n, c ? 16 : 0, 1, got) == 0, "gemma3: gpu eval (Q8_0 cache): %s", tern_last_error());
            const double e = check_rows_rel(got, want, n, V, &bad);
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
    static const char *files[] = {"qwen2", "qwen3", "phi3", "qwen2-yarn", "phi3-longrope", "gemma3", "mistral3"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) check_file(files[i]);
    check_vs_cpu();
    return check_summary("gpu_recipes");
}
