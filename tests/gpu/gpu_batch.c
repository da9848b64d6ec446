/* gpu_batch: the engine's batch on the GPU (run by bench/gpu_check.sh on a GPU box, not in CI).
 *
 *   gpu_batch MODEL [chunk | f16 | f16k6 [fit [ms]]]
 *
 * chunk: everything below with tern_config.gemv_chunk = 1 (the chunk-major GEMV order; on a model whose matrices are
 * all Q4_0, Q8_0 or Q4_K the 64 sequences' decode steps are single passes of up to 64 tokens through gemm_mma v2) and
 * the trace on, so the engines' trace lines on stderr show gemm_mma_v2= (bench/gpu_check.sh step batch checks it).
 * f16: the same with tern_config.gemv_chunk = 2 (the f16 order, gemm_hmma.cu, on a Q4_0, Q8_0 or Q4_K model: every matrix of a pass
 * of up to 64 tokens, one token too, over the matrices the engine converted to the tiled layout: the trace's
 * gemm_hm_tiled=; a Q6_K head tied to the embeddings on the dp4a twins), and 5. below. f16k6: f16 on a model with
 * Q6_K matrices the engine converts (Q6_KT: layer matrices, an untied head), without 5. (Q6_K has the f16 order only as
 * tiles, so a load kept in rows runs the chunk order).
 *
 * 1. Batch invariance (tests/batch_invariance.h) on CUDA: 64 sequences of 3..93 prompt tokens, 12 greedy tokens
 *    each, joining at steps 0..3 of one engine (prefills mixed with other sequences' decode tokens, KV blocks of 16
 *    rows interleaved in the pool), give the tokens and the logits bits each gives in an engine of its own. The same
 *    with a Q8_0 KV cache. A sequence sampling with its own sampler (device sampling) beside two greedy ones draws what
 *    the host chain draws from its logits alone.
 * 2. The GPU against the CPU on one batch: 8 sequences in one step each, the last rows' logits within 1e-2 relative
 *    L2 of the CPU reference arm (f32 activations, double dots).
 * 3. A forked sequence on the GPU (its shared partial block copied on write in every layer) gives the logits bits of
 *    a fresh sequence fed the same tokens in the same steps.
 * 4. A model with sliding-window layers (the gemma3 fixture, window 8): the window pool (swa_compact) gives the logits
 *    bits of one pool over 300 tokens fed as one step (prefill chunks of 64: the flash / v3 kernels and, with a Q8_0
 *    cache, its dequantization read the window tables, released blocks as block 0), in chunks of 7 and token by token
 *    (the decode kernels); batch invariance with it on, batched bits equal to it off; a fork continued apart; a
 *    prefix-cache hit (48 of 64 tokens) continued, the same bits as the hit without the window pool.
 * 5. (f16) The tiled layout gives the rows' bits: 100 tokens fed in one step (the prefill GEMM over the tiles'
 *    dequantization), in steps of 7 and of 1, every row's logits, through the model its engines converted and through
 *    a second load kept in rows (cuda_hm_tiling_set(0)); an engine in another order is refused on the converted model
 *    (the guard's check then runs on a second load). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "backend_cuda.h"
#include "check.h"
#include "batch_invariance.h"
#include "tern.h"

/* each sequence's context: 256, or under "fit" (32 keys a split) 1024: a grid of 16 splits of which the passes
 * (positions up to ~105) launch 1..4 (exec.c att_need), the count growing as tokens cross multiples of 32 (a pass
 * size's graph captured for each count, exec.c graph_slot). "fit ms": the same with the decode attention's MS arm
 * (tern_config.att_ms = 64: a token's splits in one CTA where the rule's grid has >= 64 CTAs), so the batched passes of
 * 4 or more tokens at 2..4 splits run MS while the engines of one sequence (8 KV heads x <= 4 splits) run the rule:
 * batch invariance then says MS gives the rule's bits in the engine (the trace's attention_ms= shows it ran) */
static int g_n_ctx = 256;

static tern_engine_params params(tern_device dev, int n_seq, int kv_q8) {
    tern_engine_params p = tern_engine_default_params();
    p.ctx.n_ctx = g_n_ctx;
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

/* Feed toks[0..n) to a new sequence of an engine of p in steps of `chunk`, the FNV-1a of every row's logits into h. */
static int swa_feed(tern_model *m, tern_engine_params p, const int32_t *toks, int n, int chunk, uint64_t *h) {
    const int V = tern_model_n_vocab(m);
    tern_engine *e = tern_engine_new(m, &p);
    tern_seq *s = e ? tern_seq_new(e) : NULL;
    tern_batch *b = tern_batch_new(0);
    int rc = s ? 0 : -1;
    for (int i0 = 0; i0 < n && rc == 0; i0 += chunk) {
        const int k = n - i0 < chunk ? n - i0 : chunk;
        tern_batch_clear(b);
        for (int i = 0; i < k; i++) tern_batch_add(b, s, toks[i0 + i], TERN_BATCH_LOGITS);
        rc = tern_engine_decode(e, b);
        for (int i = 0; i < k && rc == 0; i++) h[i0 + i] = bi_fnv(tern_batch_logits(b, i), sizeof(float) * V, 1469598103934665603ull);
    }
    if (rc == 0 && chunk == 1) { /* the window pool bounded: printed */
        tern_kv_stats st;
        tern_engine_kv_stats(e, &st);
        printf("swa: after %d tokens: main pool %d blocks in use, window pool %d of %d\n", n, st.blocks_used,
               st.swa_blocks_used, st.swa_blocks_total);
    }
    tern_batch_free(b);
    tern_engine_free(e);
    return rc;
}

static void tiled_check(const char *path, tern_model *m) {
    tern_model *m0 = tern_model_load(path, 0);
    CHECK(m0 != NULL, "tiled: a second load: %s", tern_last_error());
    const int V = tern_model_n_vocab(m), N = 100;
    int32_t toks[100];
    uint64_t h0[100], h1[100];
    for (int i = 0; i < N; i++) toks[i] = 1 + (int32_t)(((uint64_t)i * 2654435761u + 777u) % (uint64_t)(V - 1));
    static const int chunks[3] = {100, 7, 1};
    CHECK(cuda_model_tiled(m) == 1, "tiled: the f16 engines converted the model's matrices");
    for (int k = 0; k < 3 && m0; k++) {
        cuda_hm_tiling_set(0);
        const int r0 = swa_feed(m0, params(TERN_DEVICE_CUDA, 1, 0), toks, N, chunks[k], h0);
        cuda_hm_tiling_set(1);
        const int r1 = swa_feed(m, params(TERN_DEVICE_CUDA, 1, 0), toks, N, chunks[k], h1);
        CHECK(r0 == 0 && r1 == 0 && !memcmp(h0, h1, sizeof h0),
              "tiled: %d tokens in steps of %d: ran %d %d, every row's logits the rows' bits %d", N, chunks[k], r0, r1,
              r0 == 0 && r1 == 0 && !memcmp(h0, h1, sizeof h0));
    }
    CHECK(!m0 || cuda_model_tiled(m0) == 0, "tiled: the load kept in rows was not converted");
    if (m0) tern_model_free(m0);
}

static void swa_check(tern_model *m, int kv_q8) {
    const char *what = kv_q8 ? "swa, q8_0 KV cache" : "swa";
    tern_engine_params on = params(TERN_DEVICE_CUDA, 1, kv_q8), off = on;
    on.ctx.swa_compact = 1;
    on.ctx.ubatch = off.ctx.ubatch = 64;
    on.ctx.n_ctx = off.ctx.n_ctx = 320;
    tern_engine *e = tern_engine_new(m, &on);
    tern_kv_stats st = {0};
    if (e) tern_engine_kv_stats(e, &st);
    tern_engine_free(e);
    CHECK(e != NULL, "%s: engine: %s", what, tern_last_error());
    if (!e || st.swa_blocks_total == 0) return; /* no windowed layers */
    const int V = tern_model_n_vocab(m), N = 300;
    int32_t toks[300];
    for (int i = 0; i < N; i++) toks[i] = 1 + (int32_t)(((uint64_t)i * 2654435761u + 12345u) % (uint64_t)(V - 1));
    uint64_t ha[300], hb[300];
    const int chunks[3] = {300, 7, 1};
    for (int c = 0; c < 3; c++) {
        CHECK(swa_feed(m, off, toks, N, chunks[c], ha) == 0 && swa_feed(m, on, toks, N, chunks[c], hb) == 0,
              "%s: chunks of %d: %s", what, chunks[c], tern_last_error());
        CHECK(!memcmp(ha, hb, sizeof ha), "%s: logits bits differ with the window pool, chunks of %d", what, chunks[c]);
    }
    tern_engine_params bon = params(TERN_DEVICE_CUDA, 64, kv_q8), boff = bon;
    bon.ctx.swa_compact = 1;
    bi_check(m, bon, 64, 12, kv_q8 ? "cuda, 64 sequences, window pool, q8_0" : "cuda, 64 sequences, window pool");
    int32_t *ta = calloc(64 * 12, sizeof(int32_t)), *tb = calloc(64 * 12, sizeof(int32_t));
    uint64_t xa[64], xb[64];
    CHECK(bi_run(m, bon, 64, 12, 1, ta, xa) == 0 && bi_run(m, boff, 64, 12, 1, tb, xb) == 0, "%s: bi_run: %s", what,
          tern_last_error());
    CHECK(!memcmp(xa, xb, sizeof xa), "%s: batched logits differ with the window pool", what);
    free(ta);
    free(tb);
    /* a fork 40 tokens in (a partial block, past the window), each continued 20 tokens: the bits of the pool off */
    for (int arm = 0; arm < 2; arm++) {
        tern_engine_params p = params(TERN_DEVICE_CUDA, 2, kv_q8);
        p.ctx.swa_compact = arm;
        p.ctx.swa_margin = 4; /* blocks released from position 52 on: below a prefill tile's reach too */
        tern_engine *f = tern_engine_new(m, &p);
        tern_seq *a = f ? tern_seq_new(f) : NULL, *c = NULL;
        tern_batch *b = tern_batch_new(0);
        int ok = a != NULL;
        for (int i = 0; i < 40 && ok; i++) tern_batch_add(b, a, toks[i], TERN_BATCH_NONE);
        ok = ok && tern_engine_decode(f, b) == 0 && (c = tern_seq_fork(a)) != NULL;
        for (int k = 0; k < 20 && ok; k++) {
            tern_batch_clear(b);
            tern_batch_add(b, a, toks[100 + k], TERN_BATCH_LOGITS);
            tern_batch_add(b, c, toks[200 + k], TERN_BATCH_LOGITS);
            ok = tern_engine_decode(f, b) == 0;
            if (ok) (arm ? hb : ha)[k] = bi_fnv(tern_batch_logits(b, 1), sizeof(float) * V, bi_fnv(tern_batch_logits(b, 0), sizeof(float) * V, 1));
        }
        CHECK(ok, "%s: fork arm %d: %s", what, arm, tern_last_error());
        tern_batch_free(b);
        tern_engine_free(f);
    }
    CHECK(!memcmp(ha, hb, 20 * sizeof(uint64_t)), "%s: a fork's logits differ with the window pool", what);
    /* the prefix cache: 64 tokens in one pass, then a new sequence attaches 48 and runs the rest; on and off alike */
    int att[2] = {-1, -1};
    for (int arm = 0; arm < 2; arm++) {
        tern_engine_params p = params(TERN_DEVICE_CUDA, 2, kv_q8);
        p.ctx.swa_compact = arm;
        p.prefix_cache = 1;
        tern_engine *f = tern_engine_new(m, &p);
        tern_seq *a = f ? tern_seq_new(f) : NULL, *c = NULL;
        tern_batch *b = tern_batch_new(0);
        int ok = a != NULL;
        for (int i = 0; i < 64 && ok; i++) tern_batch_add(b, a, toks[i], TERN_BATCH_NONE);
        ok = ok && tern_engine_decode(f, b) == 0;
        if (ok) tern_seq_free(a);
        ok = ok && (c = tern_seq_new(f)) != NULL && (att[arm] = tern_seq_attach_prefix(c, toks, 64)) >= 0;
        tern_batch_clear(b);
        for (int i = att[arm]; i < 64 && ok; i++) tern_batch_add(b, c, toks[i], TERN_BATCH_LOGITS);
        ok = ok && tern_engine_decode(f, b) == 0;
        for (int i = 0; i < 64 - att[arm] && ok; i++)
            (arm ? hb : ha)[i] = bi_fnv(tern_batch_logits(b, i), sizeof(float) * V, 1469598103934665603ull);
        CHECK(ok, "%s: prefix arm %d: %s", what, arm, tern_last_error());
        tern_batch_free(b);
        tern_engine_free(f);
    }
    CHECK(att[0] == 48 && att[1] == 48 && !memcmp(ha, hb, 16 * sizeof(uint64_t)),
          "%s: a prefix hit with the window pool (%d vs %d attached) differs", what, att[1], att[0]);
}

/* The process-wide arms' guards (exec.c): an engine made under another tern_config.att_rps or gemv_chunk sets the
 * kernels' value for the process, so an earlier engine's passes must be refused (an error naming the setting), never
 * run with other bits; the later engine runs. which: 0 att_rps (64 against the first engine's), 1 gemv_chunk. */
static void guard_check(tern_model *m, int which, const char *path) {
    const tern_config c0 = tern_config_get();
    tern_config c1 = c0;
    if (which) c1.gemv_chunk = !c0.gemv_chunk;
    else c1.att_rps = c0.att_rps == 64 ? 128 : 64;
    tern_engine_params p = params(TERN_DEVICE_CUDA, 1, 0);
    tern_engine *e1 = tern_engine_new(m, &p);
    tern_config_set(&c1);
    tern_engine *e2 = tern_engine_new(m, &p);
    tern_model *m2 = NULL;
    if (which && c0.gemv_chunk == 2) { /* f16: m's matrices are tiles now; another order is refused on them */
        CHECK(!e2 && strstr(tern_last_error(), "tiled layout"), "guard: an engine in another order on the tiled "
              "weights made (%d) or its error does not say why: %s", e2 != NULL, e2 ? "" : tern_last_error());
        if (!e2 && (m2 = tern_model_load(path, 0)) != NULL) e2 = tern_engine_new(m2, &p);
    }
    tern_config_set(&c0);
    CHECK(e1 && e2, "guard %d: engines: %s", which, tern_last_error());
    if (e1 && e2) {
        tern_batch *b = tern_batch_new(0);
        tern_seq *s1 = tern_seq_new(e1), *s2 = tern_seq_new(e2);
        tern_batch_add(b, s1, 1, TERN_BATCH_LOGITS);
        const int r1 = tern_engine_decode(e1, b);
        const char *want = which ? "GEMV float order changed" : "keys a split changed";
        CHECK(r1 != 0 && strstr(tern_last_error(), want), "guard %d: the first engine's pass ran (%d) or its error "
              "does not say why: %s", which, r1, r1 ? tern_last_error() : "");
        tern_batch_clear(b);
        tern_batch_add(b, s2, 1, TERN_BATCH_LOGITS);
        CHECK(tern_engine_decode(e2, b) == 0, "guard %d: the later engine: %s", which, tern_last_error());
        tern_seq_free(s1);
        tern_seq_free(s2);
        tern_batch_free(b);
    }
    if (e1) tern_engine_free(e1);
    if (e2) tern_engine_free(e2);
    if (m2) tern_model_free(m2);
}

int main(int argc, char **argv) {
    const int k6 = argc > 2 && !strcmp(argv[2], "f16k6"), f16 = k6 || (argc > 2 && !strcmp(argv[2], "f16"));
    const int fit = argc > 3 && !strcmp(argv[3], "fit"), ms = fit && argc > 4 && !strcmp(argv[4], "ms");
    if (argc < 2 || (argc > 2 && strcmp(argv[2], "chunk") && !f16) || (argc > 3 && !fit) || (argc > 4 && !ms) ||
        argc > 5) {
        fprintf(stderr, "usage: gpu_batch MODEL [chunk | f16 | f16k6 [fit [ms]]]\n");
        return 2;
    }
    if (argc > 2) {
        tern_config c = tern_config_get();
        c.gemv_chunk = f16 ? 2 : 1;
        c.trace = 1;
        if (fit) c.att_rps = 32;
        if (ms) c.att_ms = 64;
        tern_config_set(&c);
        if (fit) g_n_ctx = 1024;
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
    /* f16k6: Q6_K has the f16 order only as tiles, so a load kept in rows runs the chunk order: no rows to compare */
    if (f16 && !k6) tiled_check(argv[1], m);
    guard_check(m, 0, argv[1]);
    guard_check(m, 1, argv[1]);
    swa_check(m, 0); /* new engines: the process-wide values back to this run's */
    swa_check(m, 1);
    tern_model_free(m);
    return check_summary("gpu_batch");
}
