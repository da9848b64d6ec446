/* gpu_batch: the engine's batch on the GPU (run by bench/gpu_check.sh on a GPU box, not in CI).
 *
 *   gpu_batch MODEL [chunk]
 *
 * chunk: everything below with tern_config.gemv_chunk = 1 (the chunk-major GEMV order; on a model whose matrices are
 * all Q4_0, Q8_0 or Q4_K the 64 sequences' decode steps are single passes of up to 64 tokens through gemm_mma v2) and
 * the trace on, so the engines' trace lines on stderr show gemm_mma_v2= (bench/gpu_check.sh step batch checks it).
 *
 * 1. Batch invariance (tests/batch_invariance.h) on CUDA: 64 sequences of 3..93 prompt tokens, 12 greedy tokens
 *    each, joining at steps 0..3 of one engine (prefills mixed with other sequences' decode tokens, KV blocks of 16
 *    rows interleaved in the pool), give the tokens and the logits bits each gives in an engine of its own. The same
 *    with a Q8_0 KV cache. A sequence sampling with its own sampler (device sampling) beside two greedy ones draws what
 *    the host chain draws from its logits alone.
 * 2. The GPU against the CPU on one batch: 8 sequences in one step each, the last rows' logits within 1e-2 relative
 *    L2 of the CPU reference arm (f32 activations, double dots).
 * 3. A forked sequence on the GPU (its shared partial block copied on write in every layer) gives the logits bits of
 *    a fresh sequence fed the same tokens in the same steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "check.h"
#include "batch_invariance.h"
#include "tern.h"

static tern_engine_params params(tern_device dev, int n_seq, int kv_q8) {
    tern_engine_params p = tern_engine_default_params();
    p.ctx.n_ctx = 256;
    p.ctx.device = dev;
    p.ctx.cache_type_k = p.ctx.cache_type_v = kv_q8 ? TERN_CACHE_Q8_0 : TERN_CACHE_F16;
    p.n_seq_max = n_seq;
    p.block_size = 16;
    return p;
}

static double rel_l2(const float *a, const float *ref, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        const double d = (double)a[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

/* 8 sequences' prompts in one step on dev; their last rows' logits into out (8, V). 0 or -1. */
static int eight(tern_model *m, tern_device dev, float *out) {
    const int V = tern_model_n_vocab(m);
    tern_engine_params p = params(dev, 8, 0);
    tern_engine *e = tern_engine_new(m, &p);
    if (!e) return -1;
    tern_batch *b = tern_batch_new(0);
    int rows[8];
    for (int i = 0; i < 8; i++) rows[i] = bi_add(b, tern_seq_new(e), i, V, 0);
    const int rc = tern_engine_decode(e, b);
    for (int i = 0; i < 8 && rc == 0; i++) memcpy(out + (size_t)i * V, tern_batch_logits(b, rows[i]), sizeof(float) * V);
    tern_batch_free(b);
    tern_engine_free(e);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2 || (argc > 2 && strcmp(argv[2], "chunk"))) { fprintf(stderr, "usage: gpu_batch MODEL [chunk]\n"); return 2; }
    if (argc > 2) {
        tern_config c = tern_config_get();
        c.gemv_chunk = 1;
        c.trace = 1;
        tern_config_set(&c);
    }
    tern_model *m = tern_model_load(argv[1], 0);
    CHECK(m != NULL, "load: %s", tern_last_error());
    if (!m) return check_summary("gpu_batch");
    const int V = tern_model_n_vocab(m);

    bi_check(m, params(TERN_DEVICE_CUDA, 64, 0), 64, 12, "cuda, 64 sequences");
    bi_check(m, params(TERN_DEVICE_CUDA, 64, 1), 64, 12, "cuda, 64 sequences, q8_0 KV cache");
    bi_sample_check(m, params(TERN_DEVICE_CUDA, 3, 0), 16, "cuda (device sampling)");

    float *lg = malloc(sizeof(float) * 8 * (size_t)V), *lc = malloc(sizeof(float) * 8 * (size_t)V);
    CHECK(eight(m, TERN_DEVICE_CUDA, lg) == 0, "8 sequences on cuda: %s", tern_last_error());
    cpu_matmul_set_reference(1);
    CHECK(eight(m, TERN_DEVICE_CPU, lc) == 0, "8 sequences on the cpu: %s", tern_last_error());
    cpu_matmul_set_reference(0);
    double worst = 0;
    for (int i = 0; i < 8; i++) {
        const double r = rel_l2(lg + (size_t)i * V, lc + (size_t)i * V, V);
        if (r > worst) worst = r;
    }
    printf("8 sequences in one step: logits rel L2, GPU vs CPU reference arm: worst %.3e\n", worst);
    CHECK(worst < 1e-2, "gpu vs cpu: %.3e", worst);

    /* fork on the GPU: copy on write of the shared partial block */
    tern_engine_params p = params(TERN_DEVICE_CUDA, 4, 0);
    tern_engine *e = tern_engine_new(m, &p);
    CHECK(e != NULL, "engine: %s", tern_last_error());
    if (e) {
        tern_batch *b = tern_batch_new(0);
        int32_t toks[30];
        for (int i = 0; i < 30; i++) toks[i] = 1 + (i * 7919) % (V - 1);
        tern_seq *a = tern_seq_new(e);
        for (int i = 0; i < 20; i++) tern_batch_add(b, a, toks[i], TERN_BATCH_NONE);
        CHECK(tern_engine_decode(e, b) == 0, "prompt: %s", tern_last_error());
        tern_seq *f = tern_seq_fork(a);
        tern_batch_clear(b);
        int rf = -1;
        for (int i = 20; i < 25; i++) rf = tern_batch_add(b, f, toks[i + 5], i == 24 ? TERN_BATCH_LOGITS : 0);
        CHECK(tern_engine_decode(e, b) == 0, "fork step: %s", tern_last_error());
        memcpy(lg, tern_batch_logits(b, rf), sizeof(float) * V);
        tern_seq *r = tern_seq_new(e); /* the same two steps (a 20-token prefill, then 5 tokens on the GEMV path) */
        tern_batch_clear(b);
        for (int i = 0; i < 20; i++) tern_batch_add(b, r, toks[i], TERN_BATCH_NONE);
        CHECK(tern_engine_decode(e, b) == 0, "fresh prompt: %s", tern_last_error());
        tern_batch_clear(b);
        int rr = -1;
        for (int i = 20; i < 25; i++) rr = tern_batch_add(b, r, toks[i + 5], i == 24 ? TERN_BATCH_LOGITS : 0);
        CHECK(tern_engine_decode(e, b) == 0, "fresh: %s", tern_last_error());
        CHECK(!memcmp(lg, tern_batch_logits(b, rr), sizeof(float) * V), "fork on the GPU = a fresh sequence");
        tern_batch_free(b);
        tern_engine_free(e);
    }
    free(lg);
    free(lc);
    tern_model_free(m);
    return check_summary("gpu_batch");
}
