/* exec.c: the CUDA backend's executor: model/graph.c's op list over one pass, lowered to the kernels of
 * src/backend/cuda/ (tcu.h). The backend picks its fusions from the op sequence, never from the model:
 *   [ADD x += t] RMSNORM xn <- x          -> one tcu_add_rmsnorm_to (the residual add, the norm, and the x16
 *                                            activations the next GEMVs read)
 *   MATMUL q, k, v <- xn (one token)      -> one GEMV over the q|k|v rows uploaded as one matrix (gate, up alike)
 *   ROPE q, ROPE k, KV_STORE, ATTN, MATMUL o -> RoPE with the cache write (tcu_rope_kv), the attention writing
 *                                            the O GEMV's x16 input, the O GEMV (+ the TP all-reduce)
 *   GLU, MATMUL down                      -> the SwiGLU writing the down GEMV's x16 input, the down GEMV
 *   [ADD] GATHER, RMSNORM, MATMUL out     -> the output rows' residual add and norm, the head, the argmax
 * which is the decode step of 9 kernels a layer that the single-sequence engine ran (docs/gpu.md), now for any
 * pass of tokens of several sequences at once. Passes of up to gemv_max tokens take the GEMV twins (16 columns; up to
 * TCU_PASS_MAX = 64 with the chunk or f16 order, whose longer passes run gemm_mma v2 or gemm_hmma, and the twins on
 * slices of 16 columns for a matrix without them), so a token's bits do not depend on the
 * pass (batch invariance); longer ones (prefill chunks of one sequence) the
 * dequantize + cuBLASLt path and the flash attention. A GEMV-path pass (up to gemv_max tokens) replays a CUDA graph captured at
 * the first pass of its (table kind, output kind, size) (positions, slots and block tables are device data; one
 * GPU; at TP only the one-token pass, after one eager run).
 * The recipe rows' extra ops take a kernel each: HEAD_NORM (inside the RoPE kernel at head dims 64, 128, 256, else
 * tcu_rmsnorm_rows over the heads), a post-norm RMSNORM
 * t <- t (folded into the next [ADD] RMSNORM's cluster launch in GEMV-path passes: tcu_add_rmsnorm_post_to;
 * tcu_rmsnorm_rows in longer ones), the embedding scale (tcu_scale), SOFTCAP after the head; NEOX pairing, YaRN / LongRoPE
 * tables and factors and the sliding window are arguments of the RoPE and attention kernels (a windowed layer's
 * prefill chunk runs flash v3 with the window where it cuts the chunk's keys), GeGLU the GLU kernel's act. */
#ifdef TERN_CUDA /* the CUDA build's; a CPU build compiles nothing here */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "quant.h"
#include "tern.h"
#include "util.h"

#define OUT_SUBSET 3 /* some rows' outputs: launched each time, never captured */

typedef struct {
    int n, n_out, kind;  /* tokens, output rows, OUT_* */
    int kv_rows;         /* a prefill pass's attention reads its sequence's logical rows [0, kv_rows) */
    const int32_t *hout; /* host: the output rows (OUT_SUBSET) */
    int ident;           /* one sequence whose block table is the identity (pool row = position): the kernels get
                          * no table, the contiguous cache's code path of a single-sequence engine */
} pass_t;

/* ---- matmuls ---- */

static uint16_t *dq_slot(crank *g, int s) { return s ? g->dq1 : g->dq; }

/* y (n, n_out) = x · Wᵀ: the GEMV for up to gemv_max tokens (the dp4a kernel on xq for its types when xq is
 * given, else f32 x32; each row the bits of a one-row call), beyond it cuBLASLt on f16 tiles (x16) with the next
 * matrix dequantized on a side stream meanwhile (docs/ledger.md "dequant prefetch": +3% pp512). */
/* In the chunk order v2 gives the twins' bits, so from v2_from tokens on the faster one runs (one launch over the fused
 * q|k|v and gate|up rows, where the twins take one a matrix). By S_TG end to end (bench/gpu/s26-v2from, H200, synthetic
 * Llama-3-8B, v2 from 4 against the twins up to 7): Q8_0 from 4 (B = 4 856 / 828 against 630 / 630, B = 6 1,328 against
 * 843), then from 2 (bench/gpu/s27-v2from2: B = 2 424 / 424 against 416 / 418, B = 3 645 / 646 against 544 / 543);
 * Q4_0 and Q4_K from 5 (B = 4 913 against 1,046 and 939 against 997: the twins; B = 5 1,166 against 991 and 1,162
 * against 1,066, B = 6 1,369 against 970 and 1,357 against 1,114: v2). The single-matrix sweeps
 * (bench/gpu/s23-split/mma-sweep.txt) had put the crossing at 8 for all three. */
static int v2_from(int t) { return t == TCU_TYPE_Q8_0R ? 2 : 5; }

/* 1 when an n-token pass runs the f16 order (gemm_hmma.cu): every matrix of it reads f16 activations in g->x16, written
 * by their producers (the norms and the GLU as f16(v), the decode attention by its own kernels, a prefill chunk's
 * attention output by one conversion), and no x16 input. */
static int f16_pass(const crank *g, int n) { return g->gemv_ord == 2 && n <= g->gemv_max; }

/* 1 when matmul runs v2 for w at n tokens. */
static int v2_runs(const crank *g, const dweight *w, int n, const void *xq) {
    if (g->gemv_ord == 2) return n <= g->gemv_max && tcu_gemm_hm_supported(w->type, w->n_in); /* the f16 order: all n */
    return n <= g->gemv_max && (n > TCU_MULTI_MAX || (g->gemv_ord == 1 && n >= v2_from(w->type))) && xq &&
           tcu_gemm_mma_supported(w->type);
}

/* v2 over w's rows in parts (rows[0..2], part j into y[j] as (n, rows[j]); a plain matrix is one part, and the fused
 * q|k|v or gate|up one launch with each part into its own buffer: tcu_gemm_mma_v2_split, every output the bits of the
 * per-part calls). For a pass that v2_runs. */
static int matmul_v2(crank *g, const dweight *w, int n, const void *xq, const int64_t rows[3], float *const y[3]) {
    if (f16_pass(g, n)) { /* the f16 order (gemm_hmma.cu): the f16 input its producer wrote in x16; w in rows or, as
                           * wrank_tile converts them, tiles (the type says; the same bits) */
        if (!tcu_gemm_hm(-1, w->type, w->d, w->stride, w->n_in, rows, g->x16, n, y, g->mmws, g->mmws_n, g->st)) {
            tern_set_error("internal: a %d-token pass reached a matrix (%lld rows, type %d) the f16-order GEMM refused",
                           n, (long long)w->n_out, w->type);
            return -1;
        }
        const int tl = w->type == TCU_TYPE_Q4_0T || w->type == TCU_TYPE_Q8_0T || w->type == TCU_TYPE_Q4_KT ||
                       w->type == TCU_TYPE_Q6_KT;
        g->tr[tl ? TR_HM_TL : TR_HM]++;
        return 0;
    }
    if (!xq || !tcu_gemm_mma_v2_split(-1, w->type, w->d, w->stride, w->n_in, rows, xq, n, y, g->mmws, g->mmws_n, g->st)) {
        tern_set_error("internal: a %d-token GEMV-path pass reached a matrix (%lld rows, type %d) without the "
                       "chunk-order GEMM", n, (long long)w->n_out, w->type);
        return -1;
    }
    g->tr[TR_MMA_V2]++;
    return 0;
}

static int matmul(crank *g, const dweight *w, int n, const float *x32, const void *xq, const uint16_t *x16, float *y) {
    if (v2_runs(g, w, n, xq)) { /* a pass longer than the twins take, or where v2 is faster: v2 in the chunk order */
        const int64_t rows[3] = {w->n_out, 0, 0};
        float *const ys[3] = {y, y, y};
        return matmul_v2(g, w, n, xq, rows, ys);
    }
    if (n <= g->gemv_max) {
        /* a pass longer than the twins take (TCU_MULTI_MAX columns) on a matrix without v2 (Q6_K, Q4_1: pass_limit):
         * the twins on slices of its columns, each column the bits of its one-column call; the matrix is read once a
         * slice (docs/gpu.md "Files of mixed types") */
        for (int c0 = 0; c0 < n; c0 += TCU_MULTI_MAX) {
            const int k = n - c0 < TCU_MULTI_MAX ? n - c0 : TCU_MULTI_MAX;
            float *yk = y + (size_t)c0 * (size_t)w->n_out;
            if (xq && tcu_gemv_dp4a_supported(w->type)) {
                const int r = tcu_gemv_dp4a_cols(w->fam, w->type, w->d, w->stride, w->n_in, w->n_out, xq, n, c0, k, yk,
                                                 g->st);
                if (r < 0) {
                    tern_set_error("internal: the dp4a GEMV refused columns %d..%d of %d (type %d)", c0, c0 + k - 1, n,
                                   w->type);
                    return -1;
                }
                if (r) g->tr[TR_DP4A_TMA]++;
                g->tr[n == 1 ? TR_DP4A_ROW : TR_DP4A_ROWS]++;
            } else {
                if (!tcu_type_supported(w->type)) { /* a repacked layout: the dp4a kernels only */
                    tern_set_error("internal: the f32 GEMV got a repacked weight (type %d)", w->type);
                    return -1;
                }
                tcu_gemv_multi(w->type, w->d, w->stride, w->n_in, w->n_out, x32 + (size_t)c0 * (size_t)w->n_in, k, yk,
                               g->st);
                g->tr[n == 1 ? TR_F32_ROW : TR_F32_ROWS]++;
            }
            if (n > TCU_MULTI_MAX) g->tr[TR_SLICE]++;
        }
        return 0;
    }
    g->tr[TR_GEMM]++;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(g->st, &cap);
    if (cap != cudaStreamCaptureStatusNone) { /* one slot, in stream order (every pass joins its prefetches at its end) */
        g->held[0] = NULL;
        tcu_dequant_f16(w->type, w->d, w->stride, w->n_in, w->n_out, g->dq, g->st);
        if (tcu_gemm_f16(g->blas, g->dq, x16, y, n, w->n_in, w->n_out, g->st) != 0) goto refused;
        return 0;
    }
    int s = g->held[0] == w ? 0 : g->held[1] == w ? 1 : -1;
    if (s < 0) { /* not prefetched: slot 0 (the largest), once any prefetch into it has landed */
        s = 0;
        CU(cudaStreamWaitEvent(g->st, g->ready[0], 0));
        tcu_dequant_f16(w->type, w->d, w->stride, w->n_in, w->n_out, g->dq, g->st);
        g->held[0] = w;
    } else {
        CU(cudaStreamWaitEvent(g->st, g->ready[s], 0));
    }
    const dweight *nx = w->pf_next;
    const int o = s ^ 1;
    if (nx && nx != g->held[o] && (o == 0 || (uint64_t)nx->n_in * nx->n_out <= g->W->max_layer_mat)) {
        CU(cudaStreamWaitEvent(g->side, g->free_[o], 0)); /* the GEMM that last read slot o is done */
        tcu_dequant_f16(nx->type, nx->d, nx->stride, nx->n_in, nx->n_out, dq_slot(g, o), g->side);
        CU(cudaEventRecord(g->ready[o], g->side));
        g->held[o] = nx;
    }
    if (tcu_gemm_f16(g->blas, dq_slot(g, s), x16, y, n, w->n_in, w->n_out, g->st) != 0) goto refused;
    CU(cudaEventRecord(g->free_[s], g->st));
    return 0;
refused:
    tern_set_error("cuBLASLt refused a %d x %lld x %lld GEMM", n, (long long)w->n_in, (long long)w->n_out);
    return -1;
}

/* TP: sum the ranks' partial (n, E) outputs in place (f32). */
static int allreduce(crank *g, float *buf, size_t count) {
    if (g->n_rank == 1) return 0;
    const cuda_nccl *nc = cuda_nccl_fns();
    const ncclResult_t r = nc->AllReduce(buf, buf, count, ncclFloat, ncclSum, g->comm, g->st);
    if (r != ncclSuccess) { tern_set_error("NCCL all-reduce: %s", nc->GetErrorString(r)); return -1; }
    return 0;
}

/* TP: every rank's (n, nv) logits into rank 0's (n, n_vocab) lfull, in vocabulary order. */
static int gather_logits(crank *g, int n) {
    if (g->n_rank == 1) return 0;
    const cuda_nccl *nc = cuda_nccl_fns();
    const ncclResult_t r = nc->AllGather(g->logits, g->gath, (size_t)n * g->W->vpad, ncclFloat, g->comm, g->st);
    if (r != ncclSuccess) { tern_set_error("NCCL all-gather: %s", nc->GetErrorString(r)); return -1; }
    if (g->rank != 0) return 0;
    const int V = g->m->n_vocab, vpad = g->W->vpad;
    for (int k = 0; k < g->n_rank; k++) {
        const int nv = k < g->n_rank - 1 ? vpad : V - (g->n_rank - 1) * vpad;
        CU(cudaMemcpy2DAsync(g->lfull + (size_t)k * vpad, sizeof(float) * (size_t)V, g->gath + (size_t)k * n * vpad,
                             sizeof(float) * (size_t)nv, sizeof(float) * (size_t)nv, (size_t)n, cudaMemcpyDeviceToDevice,
                             g->st));
    }
    return 0;
}

/* 1 when a GEMV-path pass of n tokens runs w with the dp4a kernel (on x16 activations): in an f16-order pass only a
 * matrix the f16 order lacks (a Q6_K head tied to the embeddings, which stay rows: backend_cuda.c hm_all). */
static int dp4a_runs(const crank *g, int n, const dweight *w) {
    return w && tcu_gemv_dp4a_supported(w->type) && !(f16_pass(g, n) && v2_runs(g, w, n, NULL));
}

/* g->xq when a GEMV-path pass (n <= gemv_max) runs one of a, b, c (NULL: none) with the dp4a kernel: its input's
 * producer writes it in the x16 format too (in an f16-order pass beside the f16 its other readers take); else NULL. */
static void *want_x16(const crank *g, int n, const dweight *a, const dweight *b, const dweight *c) {
    if (n > g->gemv_max) return NULL;
    return dp4a_runs(g, n, a) || dp4a_runs(g, n, b) || dp4a_runs(g, n, c) ? g->xq : NULL;
}

/* The residual buffer a residual add writes when the stream is in xc. */
static float *other_x(const crank *g, const float *xc) { return xc == g->x ? g->x2 : g->x; }

/* Passes of up to this many tokens take the decode configuration of the norms, RoPE tables, attention and argmaxes
 * (each token's bits those of its one-token pass): the GEMV path's limit, and at least TCU_MULTI_MAX (with verify fast
 * the 2..16-token passes take the GEMM but keep that configuration). */
static int dec_max(const crank *g) { return g->gemv_max > TCU_MULTI_MAX ? g->gemv_max : TCU_MULTI_MAX; }

/* The residual add and norm (tcu_add_rmsnorm_to), with a pending Gemma post-norm of r (weight pn, eps pe) folded in
 * (tcu_add_rmsnorm_post_to: one launch instead of two; set only where tcu_rms_post_fused holds for the pass). */
static void add_norm(const float *x, float *xo, float *r, const float *pn, float pe, const float *w, float eps, int n,
                     int dim, float *y32, uint16_t *y16, void *xq, int dec, cudaStream_t st) {
    if (pn && r)
        tcu_add_rmsnorm_post_to(x, xo, r, pn, pe, w, eps, n, dim, y32, y16, xq, st);
    else
        tcu_add_rmsnorm_dec_to(x, xo, r, w, eps, n, dim, y32, y16, xq, dec, st);
}

/* The device copy of a node's weight (by its layer and role) and of its vector (norm weight or bias). */
static const dweight *node_weight(const cuda_wrank *W, const tg_node *nd) {
    if (nd->role == TW_OUT) return W->output;
    const dlayer *l = &W->layers[nd->layer];
    const dweight *ws[TW_N] = {l->wq, l->wk, l->wv, l->wo, l->gate, l->up, l->down, W->output};
    return ws[nd->role];
}

static const float *node_vec(const cuda_wrank *W, const tg_node *nd) {
    const tern_model *m = W->m;
    if (!nd->vec) return NULL;
    if (nd->vec == m->output_norm) return W->output_norm;
    const tern_layer *h = &m->layers[nd->layer];
    const dlayer *d = &W->layers[nd->layer];
    const float *hs[10] = {h->attn_norm, h->ffn_norm, h->bq,     h->bk,          h->bv,
                           h->bo,        h->q_norm,   h->k_norm, h->attn_post_norm, h->ffn_post_norm};
    const float *ds[10] = {d->attn_norm, d->ffn_norm, d->bq,     d->bk,          d->bv,
                           d->bo,        d->q_norm,   d->k_norm, d->attn_post_norm, d->ffn_post_norm};
    for (int i = 0; i < 10; i++)
        if (nd->vec == hs[i]) return ds[i];
    return NULL;
}

int cuda_graph_supported(const tern_graph *G, const tern_model *m) {
    for (int i = 0; i < G->n_nodes; i++) {
        const tg_node *nd = &G->nodes[i];
        const char *why = NULL;
        if (nd->op == TG_ROPE && nd->rope == TERN_ROPE_NEOX && m->head_dim > 256) why = "NEOX RoPE over heads > 256";
        else if (nd->op == TG_GLU && nd->act != TERN_ACT_SILU && nd->act != TERN_ACT_GELU_TANH) why = "this activation";
        if (why) {
            tern_set_error("the %s recipe needs %s, which the CUDA backend has no kernel for yet; use --device cpu",
                           m->arch, why);
            return -1;
        }
    }
    return 0;
}

/* ---- the pass ---- */

/* The layer's K and V cache: f16 planes, or the Q8_0 int8 planes and their scales. */
typedef struct {
    uint16_t *kc, *vc, *ks, *vs;
    int8_t *kq, *vq;
} kv_layer;

static kv_layer layer_kv(const crank *g, int il, int Hkv) {
    kv_layer L;
    uint64_t off = 0;
    const int64_t rows = cuda_kv_layer(g, il, &off) ? g->kv_rows_w : g->kv_rows; /* its pool's */
    L.kc = (uint16_t *)((char *)g->kc + off);
    L.vc = (uint16_t *)((char *)g->vc + off);
    L.kq = (int8_t *)L.kc;
    L.vq = (int8_t *)L.vc;
    L.ks = (uint16_t *)(L.kq + (size_t)rows * Hkv);
    L.vs = (uint16_t *)(L.vq + (size_t)rows * Hkv);
    return L;
}

/* Programmatic dependent launch in every pass but GEMV-path passes of more than PDL_MAX tokens (the chunk order's
 * v2 passes of 49..64). H200, synthetic Llama-3-8B Q4_0, chunk order, -p 512 -n 128, S_TG with it on / off for
 * every pass (docs/ledger.md 2026-12-03 "PDL at 64 tokens a pass"): B = 1 466.7 / 418.7, 4 1,042.0 / 1,017.8,
 * 16 2,595.5 / 2,573.9, 64 3,677.2 / 4,493.2; S_PP (the prefill passes, which keep it) level. Then TERN_PDL_MAX 64 /
 * 16, two rounds (bench/gpu/s23-split/pdl.md): B = 24 2,984 / 2,916 and 2,965 / 2,917, 32 3,843 / 3,742 and
 * 3,845 / 3,736, 48 3,935 / 3,840 and 3,920 / 3,860, 64 4,176 / 4,516 and 4,182 / 4,565: the crossing lies in (48,
 * 64], unmeasured inside it; no bit depends on it (pdl.cuh's contract holds either way).
 * In the chunk order, also none in passes of PDL_OFF_LO..PDL_OFF_HI tokens (v2's passes from 5 tokens; 2026-12-04, this
 * tree with TERN_PDL_MAX 4 against 48, two rounds, bench/gpu/s31-tiled calls g, h): B = 5 1,234.5 / 1,229.7 against
 * 1,155.2 / 1,151.3, 6 1,507.4 / 1,455.3 against 1,385.8 / 1,387.1, 8 1,952.3 / 1,943.2 against 1,823.0 / 1,821.9, 10
 * 1,870.3 / 1,870.2 against 1,834.5 / 1,856.1, 12 2,201.0 / 2,206.3 against 2,136.5 / 2,127.1, 16 2,902.1 / 2,889.8
 * against 2,823.6 / 2,812.0; but B = 20 2,538.5 / 2,531.9 against 2,634.9 / 2,613.3, 24 -3%, 32 -1..-3%, 48 -2%, and
 * B = 4 (the GEMV twins) -4.5% without it (call c).
 * In the f16 order, none in passes of 9..PDL_OFF_HI tokens (its arm 9 at two columns; 2026-12-05, TERN_PDL_MAX
 * 1 against the rule's 48, two rounds, bench/gpu/s35-pdl): B = 9 2,508 / 2,518 against 2,394 / 2,425, 10 2,770 /
 * 2,769 against 2,664 / 2,674, 12 3,146 / 3,167 against 2,987 / 2,992, 16 4,137 / 4,131 against 3,843 / 3,863; PDL
 * ahead at B = 2 (+8%), 4 (+1.7%), 8 (+4%), 20 (+4.5%), 24 (+4%), 32 (+2%) and 48 (+1.4%), level at B = 1.
 * Where no matrix is Q8_0 or Q4_K (cuda_wrank.tile_b32 18: Q4_0's tiles, and a Q6_K head or matrix where the file has
 * one), none from PDL_OFF_F16Q4_LO = 2 tokens: Q4_0's passes of 2..8 tokens run arm 10 (bulk copies) since 2026-12-06,
 * which gains without PDL only (H100, synthetic Llama-3-8B Q4_0, bench/gpu/s45-bulk28: B = 2 +3.4%, 4 +6.4%, 8 +4.6%
 * over arm 6 with PDL; arm 10 with PDL +0.3..1%). Since 2026-12-07 passes of 3..8 tokens run arm 9 (bulk copies, four
 * stages; measured without PDL as here: gemm_hmma.cu hm_pick_tl); with PDL not measured.
 * Elsewhere in the f16 order (Q8_0 and Q4_K matrices), none from PDL_OFF_F16_LO = 5 tokens (2026-12-07, H100, synthetic
 * Llama-3-8B, TERN_PDL_MAX 4 against the rule's 48 (then 9..16 only), two rounds, bench/gpu/s47-pdl): Q4_K B = 5
 * +28%, 6 +28%, 7 +33%, 8 +16%; the Q4_K_M mix B = 5 +18.6%, 6 +22.6%, 7 +25.5%, 8 +11.0%; Q8_0 B = 5 +1.4%, 6 +2.1%,
 * 7 +2.5%, 8 -0.8%. At 2..4 they keep it: without (TERN_PDL_MAX 1) Q4_K B = 2 -4.2%, 4 -1.8%, Q8_0 level (why PDL
 * helps Q4_K at 2..4 and hurts it at 5..8: not measured; a Q4_K B = 6 timeline with it puts every GEMM 7-17 us longer
 * and the pass 4.81 ms against 3.70, bench/gpu/s48-pdl64/).
 * The f16 order keeps it up to PDL_MAX_F16 = 64 tokens (PDL_MAX came from the chunk order's v2 at 64): 2026-12-07, H100,
 * synthetic Llama-3-8B, TERN_PDL_MAX 64 against the rule's 48, two rounds (bench/gpu/s48-pdl64): Q4_0 B = 56 +3.2%,
 * 64 +2.1%; Q8_0 56 +1.7%, 64 +3.1%; Q4_K 56 +2.9%, 64 +1.7%; B = 48 (PDL in both) level. */
#define PDL_MAX 48
#define PDL_MAX_F16 64
#define PDL_OFF_LO 5
#define PDL_OFF_F16_LO 5
#define PDL_OFF_F16Q4_LO 2
#define PDL_OFF_HI 16

/* The graph's ops over the pass's tokens (already in g->tok, g->pos, g->slot, g->bt_off, g->bt). Launched or
 * captured: a graph keeps the PDL setting it was captured with, and the outputs after a pass launch with it too. */
static int forward(crank *g, const tern_graph *G, const pass_t *P) {
    const int pmax = g->pdl_max > 0 ? g->pdl_max : g->gemv_ord == 2 ? PDL_MAX_F16 : PDL_MAX; /* TERN_PDL_MAX: an arm */
    /* TERN_PDL_MAX -1: none in any pass; 0: the rule, its window included */
    const int lo = g->gemv_ord == 2 ? (g->W->tile_b32 == 18 ? PDL_OFF_F16Q4_LO : PDL_OFF_F16_LO)
                   : g->gemv_ord == 1 ? PDL_OFF_LO : PDL_MAX + 1;
    const int off = g->pdl_max < 0 || (g->pdl_max == 0 && P->n >= lo && P->n <= PDL_OFF_HI);
    tcu_set_pdl(g->pdl && !off && (P->n <= pmax || P->n > g->gemv_max));
    const tern_model *m = g->m;
    const cuda_wrank *W = g->W;
    const int n = P->n, E = m->n_embd, hd = m->head_dim, Hq = W->nh * hd, Hkv = W->nkv * hd, F = W->nf, V = m->n_vocab;
    const int one = n <= g->gemv_max; /* the GEMV path: every token's bits as in its own one-token pass */
    const int dec = n <= dec_max(g);  /* the decode configuration of the norms, RoPE tables, attention and argmaxes */
    /* where the producers also write the matrices' f16 input: the GEMM path (cuBLASLt, row-major) and the f16 order (in
     * its layout, tcu_hm_pos) */
    uint16_t *const h16 = one && !f16_pass(g, n) ? NULL : g->x16;
    tcu_set_hm_layout(f16_pass(g, n));
    const tg_node *N = G->nodes;
    const int nn = G->n_nodes;
    cudaStream_t st = g->st;
    const uint64_t rcl0 = tcu_rms_cluster_count(); /* cluster RMSNorm launches of this pass (the trace) */
    /* the (cos, sin) of the pass's positions once, for every layer's RoPE (a GEMV-path pass) */
    const int tabled = dec && m->n_rot >= 2;
    for (int t = 0; t < g->n_tables && tabled; t++) tcu_rope_table(g->pos, g->freq[t], n, m->n_rot, g->mscale[t], g->ropecs[t], st);
    float *xc = g->x; /* the residual stream: g->x or g->x2, toggled by each residual add */
    int pending = 0;  /* a residual add xc += tmp not launched yet: the next norm takes it */
    const float *pn = NULL; /* Gemma's post-norm of tmp (its weight, eps pe) not launched yet: the next norm folds it in */
    float pe = 0.0f;
    void *xq = NULL;  /* the x16 activations the last norm wrote for the matmuls after it */
    float *bq = g->q, *bk = g->k, *bv = g->v, *bg = g->g, *bu = g->u;
    int gu_rows = 0;  /* this layer's gate|up ran as one GEMM into g->g (2F a row) */
    const float *hq = NULL, *hk = NULL; /* the q and k head norms the next RoPE kernel applies first */
    float heps = 0.0f;
    const int32_t *bt = P->ident ? NULL : g->bt, *bt_off = P->ident ? NULL : g->bt_off;
    for (int i = 0; i < nn;) {
        const tg_node *nd = &N[i];
        const int il = nd->layer;
        const dlayer *l = il >= 0 ? &W->layers[il] : NULL;
        switch (nd->op) {
        case TG_EMBED:
            tcu_get_rows(W->tok_embd->type, W->tok_embd->d, W->tok_embd->stride, E, g->tok, n, g->x, st);
            if (nd->f != 1.0f) tcu_scale(g->x, (int64_t)n * E, nd->f, st); /* Gemma's sqrt(n_embd) */
            xc = g->x;
            i++;
            break;
        case TG_ADD: /* x += t: taken by the next norm (or the output rows' norm) */
            pending = 1;
            i++;
            break;
        case TG_RMSNORM: { /* xn = rmsnorm(x [+ t]), with the x16 input of the dp4a GEMVs that read xn next */
            if (nd->dst == TB_T) { /* a post-norm (Gemma): the block's output t before its residual add, in place */
                if (dec && i + 1 < nn && N[i + 1].op == TG_ADD && tcu_rms_post_fused(n, E)) /* into the next norm's launch */
                    pn = node_vec(W, nd), pe = nd->f;
                else
                    tcu_rmsnorm_rows(g->tmp, node_vec(W, nd), nd->f, n, E, st);
                i++;
                break;
            }
            const dweight *cw[3] = {NULL, NULL, NULL};
            for (int k = 0; k < 3 && i + 1 + k < nn && N[i + 1 + k].op == TG_MATMUL && N[i + 1 + k].src0 == TB_XN; k++)
                cw[k] = node_weight(W, &N[i + 1 + k]);
            xq = want_x16(g, n, cw[0], cw[1], cw[2]);
            float *xo = pending ? other_x(g, xc) : xc;
            add_norm(xc, xo, pending ? g->tmp : NULL, pn, pe, node_vec(W, nd), nd->f, n, E, one ? g->xn : NULL,
                     h16, xq, dec, st);
            pn = NULL;
            xc = xo;
            pending = 0;
            i++;
            break;
        }
        case TG_MATMUL: { /* the projections of xn: q, k, v or gate, up */
            int k = 1;
            while (i + k < nn && N[i + k].op == TG_MATMUL && N[i + k].src0 == nd->src0) k++;
            if (nd->role == TW_Q && k == 3) {
                bq = g->q, bk = g->k, bv = g->v;
                if (n == 1 && l->qkv) { /* one GEMV over the fused rows */
                    if (matmul(g, l->qkv, 1, g->xn, xq, g->x16, g->qkv1)) return -1;
                    bq = g->qkv1, bk = bq + Hq, bv = bk + Hkv;
                } else if (l->qkv && v2_runs(g, l->qkv, n, xq)) { /* one v2 launch over the fused rows */
                    const int64_t rows[3] = {Hq, Hkv, Hkv};
                    float *const ys[3] = {bq, bk, bv};
                    if (matmul_v2(g, l->qkv, n, xq, rows, ys)) return -1;
                } else if (matmul(g, l->wq, n, g->xn, xq, g->x16, bq) || matmul(g, l->wk, n, g->xn, xq, g->x16, bk) ||
                           matmul(g, l->wv, n, g->xn, xq, g->x16, bv)) {
                    return -1;
                }
                if (l->bq) tcu_add_bias(bq, l->bq, n, Hq, st);
                if (l->bk) tcu_add_bias(bk, l->bk, n, Hkv, st);
                if (l->bv) tcu_add_bias(bv, l->bv, n, Hkv, st);
            } else if (nd->role == TW_GATE && k == 2) {
                bg = g->g, bu = g->u;
                gu_rows = W->pf_gu && l->gu && n > g->gemv_max; /* one GEMM, its rows to the f16 SwiGLU */
                if (n == 1 && l->gu) {
                    if (matmul(g, l->gu, 1, g->xn, xq, g->x16, g->gu1)) return -1;
                    bg = g->gu1, bu = bg + F;
                } else if (gu_rows) {
                    if (matmul(g, l->gu, n, g->xn, NULL, g->x16, g->g)) return -1;
                } else if (l->gu && v2_runs(g, l->gu, n, xq)) { /* one v2 launch over the fused rows */
                    const int64_t rows[3] = {F, F, 0};
                    float *const ys[3] = {bg, bu, bu};
                    if (matmul_v2(g, l->gu, n, xq, rows, ys)) return -1;
                } else if (matmul(g, l->gate, n, g->xn, xq, g->x16, bg) || matmul(g, l->up, n, g->xn, xq, g->x16, bu)) {
                    return -1;
                }
            } else {
                tern_set_error("internal: the CUDA executor has no lowering for %d projections from node %d", k, i);
                return -1;
            }
            i += k;
            break;
        }
        case TG_HEAD_NORM: /* q or k in place: RMSNorm over each head (Qwen3, Gemma 3): inside the RoPE kernel where
                            * it takes this head dim (the pair q, k right before the RoPE), else a kernel of its own */
            if (tcu_rope_kv_norm_ok(hd) && nd->dst == TB_Q && i + 2 < nn && N[i + 1].op == TG_HEAD_NORM &&
                N[i + 1].dst == TB_K && N[i + 2].op == TG_ROPE) {
                hq = node_vec(W, nd), hk = node_vec(W, &N[i + 1]), heps = nd->f;
                i += 2;
                break;
            }
            tcu_rmsnorm_rows(nd->dst == TB_Q ? bq : bk, node_vec(W, nd), nd->f, n * (nd->dst == TB_Q ? W->nh : W->nkv), hd,
                             st);
            i++;
            break;
        case TG_ROPE: { /* ROPE q, ROPE k, [QTEMP q], KV_STORE, ATTN, MATMUL o */
            const int qt = i + 2 < nn && N[i + 2].op == TG_QTEMP; /* Mistral 3's attention temperature */
            if (!(i + 4 + qt < nn && N[i + 1].op == TG_ROPE && N[i + 2 + qt].op == TG_KV_STORE &&
                  N[i + 3 + qt].op == TG_ATTN && N[i + 4 + qt].op == TG_MATMUL && N[i + 4 + qt].role == TW_O)) {
                tern_set_error("internal: the CUDA executor expects RoPE, KV store, attention, O at node %d", i);
                return -1;
            }
            const kv_layer L = layer_kv(g, il, Hkv);
            /* a window-pool layer's slots and tables (never the identity: its released blocks read as block 0) */
            const int wl = cuda_kv_layer(g, il, NULL);
            const int32_t *kslot = wl ? g->slot_w : g->slot, *lbt = wl ? g->bt_w : bt, *lbt_off = wl ? g->bt_off : bt_off;
            const float sc = N[i + 3 + qt].f;
            const int win = N[i + 3 + qt].window, tb = nd->table, neox = nd->rope == TERN_ROPE_NEOX;
            const float *cs = tabled ? g->ropecs[tb] : NULL;
            /* the O GEMV's x16 input written by the attention kernel itself (+1.4% Q4_0 tg128, docs/ledger.md) */
            xq = want_x16(g, n, l->wo, NULL, NULL);
            /* the f16 order's O input from the attention kernels (its layout is on in an f16 pass) */
            const int att_h16 = h16 && dec && f16_pass(g, n);
            /* (an f16 pass's wo has the f16 GEMM (hm_all), so no xq; were it to, the quantize below writes it) */
            const int att_x16 = xq && dec && !att_h16;
            const uint64_t q8w0 = tcu_attention_q8w_count(); /* v5 launches below: the trace counts what ran */
            const uint64_t ms0 = tcu_attention_ms_count();   /* and MS launches (TERN_ATT_MS) */
            if (!g->kv_q8)
                tcu_rope_kv(bq, bk, bv, n, W->nh, W->nkv, hd, m->n_rot, neox, g->mscale[tb], g->pos, kslot, g->freq[tb],
                            cs, hq, hk, heps, L.kc, L.vc, st);
            else
                tcu_rope_kv_q8(bq, bk, bv, n, W->nh, W->nkv, hd, m->n_rot, neox, g->mscale[tb], g->pos, kslot,
                               g->freq[tb], cs, hq, hk, heps, L.kq, L.ks, L.vq, L.vs, st);
            hq = hk = NULL;
            if (qt) tcu_attn_temp(bq, n, Hq, g->pos, N[i + 2].f, N[i + 2].window, st);
            if (dec) { /* decode configuration, per-token tables; the O GEMM's input written by it too: the f16 order's
                        * f16 (att_h16), else with xq the O GEMV's x16 */
                const void *kd = g->kv_q8 ? (const void *)L.kq : (const void *)L.kc;
                const void *vd = g->kv_q8 ? (const void *)L.vq : (const void *)L.vc;
                const uint16_t *ksd = g->kv_q8 ? L.ks : NULL, *vsd = g->kv_q8 ? L.vs : NULL;
                if (att_h16)
                    tcu_attention_decode_h16(bq, kd, vd, ksd, vsd, n, g->pos, lbt, lbt_off, g->lbs, win, W->nh, W->nkv, hd,
                                             sc, g->att, g->attws, TCU_ATT_FIT(g->att_splits, g->att_sl), h16, st);
                else
                    tcu_attention_decode_x16(bq, kd, vd, ksd, vsd, n, g->pos, lbt, lbt_off, g->lbs, win, W->nh, W->nkv, hd,
                                             sc, g->att, g->attws, TCU_ATT_FIT(g->att_splits, g->att_sl),
                                             att_x16 ? xq : NULL, st);
            } else { /* a prefill chunk of one sequence: its table is bt (offset 0) */
                const uint16_t *kc = L.kc, *vc = L.vc;
                const int32_t *pbt = lbt;
                if (g->kv_q8) { /* its rows up to the chunk's last position as f16, then the f16 kernels */
                    tcu_kv_dequant_q8(L.kq, L.ks, lbt, g->lbs, P->kv_rows, Hkv, g->kc16, st);
                    tcu_kv_dequant_q8(L.vq, L.vs, lbt, g->lbs, P->kv_rows, Hkv, g->vc16, st);
                    kc = g->kc16, vc = g->vc16, pbt = NULL;
                }
                /* the window only where it cuts the chunk's keys (its last position past it): then tcu_attention (v3
                 * with the window; v1 where no flash kernel takes the shape), else the chooser's flash kernel */
                const int wcut = win > 0 && P->kv_rows > win ? win : 0;
                if (g->flash && !wcut)
                    tcu_attention_flash_rows(bq, kc, vc, P->kv_rows, n, g->pos, pbt, g->lbs, W->nh, W->nkv, hd, sc, g->att,
                                             st);
                else
                    tcu_attention(bq, kc, vc, n, g->pos, pbt, NULL, g->lbs, wcut, W->nh, W->nkv, hd, sc, g->att, st);
            }
            g->tr[dec && g->att_splits > 1 ? TR_ATT_SPLIT : TR_ATT]++;
            g->tr[TR_ATT_Q8W] += tcu_attention_q8w_count() - q8w0;
            g->tr[TR_ATT_MS] += tcu_attention_ms_count() - ms0;
            if (h16 && !att_h16) tcu_f32_to_f16(g->att, h16, (int64_t)n * Hq, st);
            if (xq && !att_x16) tcu_quantize_x16(g->att, n, Hq, xq, st);
            if (matmul(g, l->wo, n, g->att, xq, g->x16, g->tmp) || allreduce(g, g->tmp, (size_t)n * E)) return -1;
            if (l->bo) tcu_add_bias(g->tmp, l->bo, n, E, st);
            i += 5 + qt;
            break;
        }
        case TG_GLU: { /* GLU, MATMUL down */
            if (!(i + 1 < nn && N[i + 1].op == TG_MATMUL && N[i + 1].role == TW_DOWN)) {
                tern_set_error("internal: the CUDA executor expects the down projection after the GLU at node %d", i);
                return -1;
            }
            xq = want_x16(g, n, l->down, NULL, NULL);
            const int act = nd->act == TERN_ACT_GELU_TANH;
            if (gu_rows) tcu_glu_rows(act, g->g, n, F, g->x16, st); /* the down GEMM reads x16 only */
            else if (xq) tcu_glu_x16(act, bg, bu, n, F, xq, st);
            else if (f16_pass(g, n) && h16 && v2_runs(g, l->down, n, xq)) /* matmul_v2 below reads h16 alone */
                tcu_glu_f16(act, bg, bu, (int64_t)n * F, h16, st);
            else tcu_glu(act, bg, bu, (int64_t)n * F, h16, st);
            if (matmul(g, l->down, n, bg, xq, g->x16, g->tmp) || allreduce(g, g->tmp, (size_t)n * E)) return -1;
            gu_rows = 0;
            i += 2;
            break;
        }
        case TG_GATHER: { /* [ADD] GATHER xo, RMSNORM xo, MATMUL logits: the output rows */
            if (!(i + 2 < nn && N[i + 1].op == TG_RMSNORM && N[i + 2].op == TG_MATMUL && N[i + 2].role == TW_OUT) ||
                (i + 3 != nn && !(i + 4 == nn && N[i + 3].op == TG_SOFTCAP))) {
                tern_set_error("internal: the CUDA executor expects gather, norm, head [, softcap] at the graph's end (node %d)",
                               i);
                return -1;
            }
            /* final logit soft-capping (f * tanh(x / f)) over this rank's rows (ld floats a row) before they leave */
            const float cap = i + 4 == nn ? N[i + 3].f : 0.0f;
            const int64_t ld = g->n_rank > 1 ? W->vpad : W->nv;
            const float *on = node_vec(W, &N[i + 1]);
            float *r = pending ? g->tmp : NULL;
            const float eps = N[i + 1].f;
            float *xo = pending ? other_x(g, xc) : xc;
            const dweight *wo = W->output;
            if (P->kind == OUT_LAST) {
                const size_t at = (size_t)(n - 1) * E;
                xq = want_x16(g, 1, wo, NULL, NULL);
                tcu_set_hm_layout(f16_pass(g, 1)); /* the head's one row: the f16 order's layout even after a prefill */
                add_norm(xc + at, xo + at, r ? r + at : NULL, pn, pe, on, eps, 1, E, g->xn, f16_pass(g, 1) ? g->x16 : NULL,
                         xq, 1, st);
                const int hm = f16_pass(g, 1) && v2_runs(g, wo, 1, xq);
                if (hm) { /* the f16 order: its GEMM at one token too (matmul_v2 counts TR_HM) */
                    const int64_t rows[3] = {W->nv, 0, 0};
                    float *const ys[3] = {g->logits, g->logits, g->logits};
                    if (matmul_v2(g, wo, 1, xq, rows, ys)) return -1;
                } else if (xq) {
                    if (tcu_gemv_dp4a_fam(wo->fam, wo->type, wo->d, wo->stride, E, W->nv, xq, 1, g->logits, st))
                        g->tr[TR_DP4A_TMA]++;
                } else if (tcu_type_supported(wo->type)) {
                    tcu_gemv(wo->type, wo->d, wo->stride, E, W->nv, g->xn, g->logits, st);
                } else {
                    tern_set_error("internal: the f32 GEMV got a repacked output head");
                    return -1;
                }
                if (!hm) g->tr[xq ? TR_DP4A_ROW : TR_F32_ROW]++;
                if (cap > 0.0f) tcu_softcap(g->logits, ld, cap, st);
                if (gather_logits(g, 1)) return -1;
                if (g->rank == 0) tcu_argmax(g->lg, V, g->ids, g->amkeys, st);
            } else if (P->kind == OUT_ALL) {
                xq = want_x16(g, n, wo, NULL, NULL);
                add_norm(xc, xo, r, pn, pe, on, eps, n, E, one ? g->xn : NULL, h16, xq, dec, st);
                if (matmul(g, wo, n, g->xn, xq, g->x16, g->logits)) return -1;
                if (cap > 0.0f) tcu_softcap(g->logits, n * ld, cap, st);
                if (gather_logits(g, n)) return -1;
                /* every row's argmax (a verify pass's, inside its graph) */
                if (g->rank == 0 && dec) tcu_argmax_rows(g->lg, V, n, (size_t)V, g->ids, g->amkeys, st);
            } else if (P->kind == OUT_SUBSET) { /* a long pass's output rows: each one's add and norm alone */
                const int no = P->n_out;
                for (int o = 0; o < no; o++) {
                    const size_t at = (size_t)P->hout[o] * E;
                    add_norm(xc + at, xo + at, r ? r + at : NULL, pn, pe, on, eps, 1, E, g->xn + (size_t)o * E, NULL,
                             NULL, 1, st);
                }
                xq = want_x16(g, no, wo, NULL, NULL);
                if (xq) tcu_quantize_x16(g->xn, no, E, xq, st);
                tcu_set_hm_layout(f16_pass(g, no));
                if (no > g->gemv_max || f16_pass(g, no)) tcu_f32_to_f16(g->xn, g->x16, (int64_t)no * E, st);
                if (matmul(g, wo, no, g->xn, xq, g->x16, g->logits)) return -1;
                if (cap > 0.0f) tcu_softcap(g->logits, no * ld, cap, st);
                if (gather_logits(g, no)) return -1;
            }
            i = nn;
            break;
        }
        default:
            tern_set_error("internal: the CUDA executor has no lowering for op %d at node %d", nd->op, i);
            return -1;
        }
    }
    g->tr[TR_RMS_CL] += tcu_rms_cluster_count() - rcl0;
    /* join the dequant prefetches (a pass that stops early leaves one pending) */
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(st, &cap);
    if (cap == cudaStreamCaptureStatusNone) {
        CU(cudaStreamWaitEvent(st, g->ready[0], 0));
        CU(cudaStreamWaitEvent(st, g->ready[1], 0));
    }
    return 0;
}

/* Capture forward(g, G, P) on g->st into *exec. tr (TR_N) gets the trace counts of one pass, which each replay
 * adds; g->tr is left as before the capture, also when it fails. */
static int capture_forward(crank *g, const tern_graph *G, const pass_t *P, cudaGraphExec_t *exec, uint64_t *tr) {
    uint64_t before[TR_N];
    memcpy(before, g->tr, sizeof before);
    cudaGraph_t graph = NULL;
    CU(cudaStreamBeginCapture(g->st, cudaStreamCaptureModeThreadLocal));
    const int rc = forward(g, G, P);
    cudaError_t e = cudaStreamEndCapture(g->st, &graph);
    for (int k = 0; k < TR_N; k++) {
        tr[k] = g->tr[k] - before[k];
        g->tr[k] = before[k];
    }
    if (rc != 0 && graph) cudaGraphDestroy(graph); /* not leaked on a failed capture */
    if (rc != 0) return -1;
    CU(e);
    e = cudaGraphInstantiate(exec, graph, 0);
    cudaGraphDestroy(graph);
    CU(e);
    return 0;
}

/* Where a pass of n tokens finds its inputs in g->pd: tok, pos, slot, bt_off (n each), then the block tables. Fixed
 * for a given n, so a graph captured for n reads the inputs each replay copies there. */
static void set_layout(crank *g, int n) {
    g->tok = g->pd, g->pos = g->pd + n, g->slot = g->pd + 2 * n, g->bt_off = g->pd + 3 * n, g->bt = g->pd + 4 * n;
    g->slot_w = g->pd + 4 * n + g->bt_cap, g->bt_w = g->pd + 5 * n + g->bt_cap; /* the window pool's (kv_rows_w > 0) */
}

/* The splits of the engine's decode-attention grid that a pass launches (ledger 2026-12-06, "the splits its tokens
 * use"): the most any token takes at its position by the engine's rule (tcu.h tcu_att_splits; a sliding window only
 * lowers it), at most the grid's. Launching only those changes no bit (each token's count is the rule's) and drops
 * CTAs without rows; each count a pass size runs gets a graph of its own (graph_slot). */
static int att_need(const crank *g, const int32_t *pos, int n) {
    int s = 1;
    for (int t = 0; t < n; t++) {
        const int st = tcu_att_splits(pos[t] + 1, g->att_splits, g->att_rps);
        s = st > s ? st : s;
    }
    return s;
}

/* The graph slot of a pass of n tokens (identity table id, output kind) at this pass's att_sl: the one captured with
 * it, else a free one or the least recently used, released, for the caller to capture (slot->ok 0). */
static graph_slot_t *graph_slot(crank *g, int id, int kind, int n) {
    graph_slot_t *s = g->gr[id][kind][n], *v = NULL;
    for (int j = 0; j < GRAPH_ALT; j++) {
        if (s[j].ok && s[j].sl == g->att_sl) { s[j].used = ++g->gclock; return &s[j]; }
        if (!v || (v->ok && (!s[j].ok || s[j].used < v->used))) v = &s[j];
    }
    if (v->ok) {
        cudaGraphExecDestroy(v->ex);
        v->ok = 0;
    }
    v->sl = (unsigned char)g->att_sl, v->used = ++g->gclock;
    return v;
}

/* The pass's inputs to the device (one copy of 4n ints and the tables, none for an identity table), then its
 * forward pass: a graph replay where one is (or can be) captured, else launched. One rank, on its own thread.
 * *timed: the events bracket this call. */
static int run(crank *g, const tern_graph *G, const tern_ubatch *ub, const pass_t *P, int *timed) {
    const int n = ub->n, n_bt = P->ident ? 0 : ub->n_bt;
    if (g->n_rank > 1) CU(cudaSetDevice(g->dev));
    set_layout(g, n);
    int32_t *h = g->hpd;
    memcpy(h, ub->tok, sizeof(int32_t) * (size_t)n);
    memcpy(h + n, ub->pos, sizeof(int32_t) * (size_t)n);
    memcpy(h + 2 * n, ub->slot, sizeof(int32_t) * (size_t)n);
    memcpy(h + 3 * n, ub->bt_off, sizeof(int32_t) * (size_t)n);
    memcpy(h + 4 * n, ub->bt, sizeof(int32_t) * (size_t)n_bt);
    CU(cudaMemcpyAsync(g->pd, h, sizeof(int32_t) * ((size_t)4 * n + (size_t)n_bt), cudaMemcpyHostToDevice, g->st));
    if (g->kv_rows_w > 0) { /* the window pool's slots and tables; a released block (-1) reads as block 0: finite rows
                             * below every window, which the attention skips or masks (tcu.h) */
        int32_t *hw = h + 4 * n + g->bt_cap;
        memcpy(hw, ub->slot_w, sizeof(int32_t) * (size_t)n);
        for (int i = 0; i < ub->n_bt; i++) hw[n + i] = ub->bt_w[i] < 0 ? 0 : ub->bt_w[i];
        CU(cudaMemcpyAsync(g->pd + 4 * n + g->bt_cap, hw, sizeof(int32_t) * ((size_t)n + (size_t)ub->n_bt),
                           cudaMemcpyHostToDevice, g->st));
    }
    /* TP: the first one-token pass runs eagerly (NCCL sets up its decode-sized channels outside a capture), and
     * passes of several tokens are launched each time */
    const int can = P->kind != OUT_SUBSET && n <= g->gemv_max && g->use_graph &&
                    (g->n_rank == 1 || (n == 1 && g->warm));
    const int need = att_need(g, ub->pos, n);
    g->att_sl = need < g->att_splits ? need : 0; /* 0: the whole grid (a graph captured with it serves) */
    graph_slot_t *gs = can ? graph_slot(g, P->ident, P->kind, n) : NULL;
    const int capture = gs && !gs->ok;
    if (n == 1) g->warm = 1;
    *timed = g->timing && !capture;
    if (*timed) CU(cudaEventRecord(g->ev0, g->st));
    if (gs) {
        if (capture) {
            if (capture_forward(g, G, P, &gs->ex, gs->tr)) return -1;
            gs->ok = 1;
            g->n_graphs++;
        }
        CU(cudaGraphLaunch(gs->ex, g->st));
        for (int k = 0; k < TR_N; k++) g->tr[k] += gs->tr[k];
    } else if (forward(g, G, P) != 0) {
        return -1;
    }
    CU(cudaGetLastError());
    return 0;
}

typedef struct {
    cuda_be *be;
    const tern_graph *G;
    const tern_ubatch *ub;
    const pass_t *P;
    int timed;
    int rc[TERN_TP_MAX];
} run_job;

static void run_rank(void *arg, int ith, int nth) {
    (void)nth;
    run_job *j = arg;
    crank *g = j->be->rk[ith];
    int timed = 0;
    j->rc[ith] = run(g, j->G, j->ub, j->P, ith == 0 ? &j->timed : &timed);
    if (j->rc[ith]) snprintf(g->errmsg, sizeof g->errmsg, "%s", tern_last_error());
}

/* The logits row of output o: row 0 for the last row's pass, the token's own row for an all-rows pass (which a
 * small pass asking some rows' outputs runs as), else o. */
static int out_row(const tern_ubatch *ub, const pass_t *P, int o) { return P->kind == OUT_ALL ? ub->out[o] : o; }

/* The device sampler's range and buffer: 0, or -1 (error set) before anything is launched. */
static int check_samples(crank *g, const tern_ubatch *ub) {
    int n_pen = 0;
    for (int o = 0; o < ub->n_out; o++) {
        if (ub->outs[o].mode != TERN_OUT_SAMPLE) continue;
        const tern_sample_req *r = ub->outs[o].samp;
        if (!r || r->top_k < 1 || r->top_k > TCU_SAMPLE_KMAX || r->top_k >= g->m->n_vocab || !(r->temp > 0.0f)) {
            tern_set_error("device sampling: top_k %d / temp %g outside the device sampler's range", r ? r->top_k : 0,
                           r ? (double)r->temp : 0.0);
            return -1;
        }
        n_pen += r->n_pen;
    }
    if (n_pen > g->pen_cap) {
        int32_t *np = NULL;
        CU(cudaMalloc((void **)&np, sizeof(int32_t) * (size_t)n_pen));
        cudaFree(g->pen);
        g->pen = np;
        g->pen_cap = n_pen;
    }
    return 0;
}

/* The output rows' requests, after the pass: argmaxes not made inside it, device sampling, logits to the host (one
 * copy a run of rows adjacent in both places); then the ids back. Rank 0. */
static int outputs(crank *g, const tern_ubatch *ub, const pass_t *P) {
    const size_t V = (size_t)g->m->n_vocab;
    const int no = ub->n_out;
    /* in-graph argmaxes: LAST's one row, ALL's rows at n <= 16 */
    const int argmax_done = P->kind == OUT_LAST || (P->kind == OUT_ALL && P->n <= dec_max(g));
    int at = 0;
    for (int o = 0; o < no; o++) {
        const tern_out *out = &ub->outs[o];
        const int r = out_row(ub, P, o);
        const float *lg = g->lg + (size_t)r * V;
        if (out->mode == TERN_OUT_ARGMAX && !argmax_done) tcu_argmax(lg, (int)V, g->ids + r, g->amkeys, g->st);
        else if (out->mode == TERN_OUT_SAMPLE) {
            const tern_sample_req *q = out->samp;
            if (q->n_pen > 0)
                CU(cudaMemcpyAsync(g->pen + at, q->pen_ids, sizeof(int32_t) * (size_t)q->n_pen, cudaMemcpyHostToDevice,
                                   g->st));
            CU(cudaMemcpyAsync(g->ud + r, &q->u, sizeof(double), cudaMemcpyHostToDevice, g->st));
            tcu_sample(lg, (int)V, g->pen + at, q->n_pen, q->penalty, q->top_k, q->top_p, q->min_p, q->temp, g->ud + r,
                       g->samp, g->ids + r, g->st);
            at += q->n_pen;
        } else if (out->mode == TERN_OUT_LOGITS) {
            int k = 1; /* rows adjacent on the device and on the host: one copy */
            while (o + k < no && ub->outs[o + k].mode == TERN_OUT_LOGITS && out_row(ub, P, o + k) == r + k &&
                   ub->outs[o + k].logits == out->logits + (size_t)k * V)
                k++;
            CU(cudaMemcpyAsync(out->logits, lg, sizeof(float) * V * (size_t)k, cudaMemcpyDeviceToHost, g->st));
            o += k - 1;
        }
    }
    CU(cudaGetLastError());
    const int rows = P->kind == OUT_ALL ? P->n : no;
    if (no) CU(cudaMemcpyAsync(g->hpd, g->ids, sizeof(int32_t) * (size_t)rows, cudaMemcpyDeviceToHost, g->st));
    return 0;
}

/* After a failure mid-pass: every rank's stream drained (the pinned staging is not rewritten under a copy in
 * flight), the error kept. */
static int fail_sync(cuda_be *be) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tern_last_error());
    for (int r = 0; r < be->n_rank; r++) {
        cudaSetDevice(be->rk[r]->dev);
        cudaStreamSynchronize(be->rk[r]->st);
        (void)cudaGetLastError();
    }
    cudaSetDevice(0);
    tern_set_error("%s", msg);
    return -1;
}

int cuda_exec(tern_backend *be_, const tern_graph *G, const tern_ubatch *ub) {
    cuda_be *be = (cuda_be *)be_;
    crank *g = be->rk[0];
    const int n = ub->n;
    /* the GEMVs' order is process-wide (tcu.h) and kernels (graphs too) pick it when launched: an engine made later
     * with the other tern_config.gemv_chunk would change this one's bits from pass to pass (batch invariance) */
    if (tcu_gemv_order() != g->gemv_ord) {
        tern_set_error("the GEMV float order changed under this engine (tern_config.gemv_chunk %d here, another engine "
                       "in this process set %d)", g->gemv_ord, tcu_gemv_order());
        return -1;
    }
    if (tcu_attention_rps() != g->att_rps) { /* the same for the decode attention's splits (a token's bits) */
        tern_set_error("the decode attention's keys a split changed under this engine (tern_config.att_rps %d here, "
                       "another engine in this process set %d)", g->att_rps, tcu_attention_rps());
        return -1;
    }
    if (n < 1 || n > g->ubatch || ub->max_pos > g->n_ctx || ub->n_bt > g->bt_cap || ub->n_out > n ||
        (n > dec_max(g) && ub->n_seq != 1)) {
        tern_set_error("internal: a pass of %d tokens of %d sequences (ubatch %d) up to position %d (n_ctx %d), %d table "
                       "entries (%d)", n, ub->n_seq, g->ubatch, ub->max_pos, g->n_ctx, ub->n_bt, g->bt_cap);
        return -1;
    }
    if (g->kv_rows_w > 0 && (!ub->slot_w || !ub->bt_w)) {
        tern_set_error("internal: a pass without the window pool's slots and tables (backend made with one)");
        return -1;
    }
    if (check_samples(g, ub) != 0) return -1;
    pass_t P = {n, ub->n_out, OUT_SUBSET, ub->max_pos, ub->out, ub->n_seq == 1};
    for (int i = 0; i < ub->n_bt && P.ident; i++) P.ident = ub->bt[i] == i;
    /* a small pass asking some rows' outputs runs as the all-rows pass (its captured graph; the GEMV reads the
     * weights once for all 16 columns, and each row's bits are the same) */
    if (ub->n_out == 0) P.kind = OUT_NONE;
    else if (ub->n_out == 1 && ub->out[0] == n - 1) P.kind = OUT_LAST;
    else if (ub->n_out == n || n <= g->gemv_max) P.kind = OUT_ALL;
    int timed = 0;
    if (be->n_rank == 1) {
        if (run(g, G, ub, &P, &timed) != 0) return fail_sync(be);
    } else {
        run_job j = {be, G, ub, &P, 0, {0}};
        tern_pool_run(be->pool, run_rank, &j);
        for (int r = 0; r < be->n_rank; r++)
            if (j.rc[r]) {
                tern_set_error("GPU %d: %s", r, be->rk[r]->errmsg);
                return fail_sync(be);
            }
        timed = j.timed;
    }
    if (outputs(g, ub, &P) != 0) return fail_sync(be);
    if (timed) CU(cudaEventRecord(g->ev1, g->st));
    CU(cudaStreamSynchronize(g->st)); /* rank 0's stream: at TP its all-gather waited for every rank */
    if (timed) {
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, g->ev0, g->ev1));
        if (n <= g->gemv_max) { g->t_dec_ms += ms; g->n_dec++; g->n_dec_tok += n; } /* a GEMV-path (decode) pass */
        else { g->t_pre_ms += ms; g->n_pre_tok += n; }
    }
    for (int o = 0; o < ub->n_out; o++) {
        tern_out *out = &ub->outs[o];
        if (out->mode != TERN_OUT_LOGITS) out->id = g->hpd[out_row(ub, &P, o)];
        if (out->mode == TERN_OUT_SAMPLE && out->id < 0) { tern_set_error("sampler: all logits are NaN"); return -1; }
    }
    return 0;
}

int cuda_prepare(tern_backend *be_, const tern_graph *G, int max_rows) {
    cuda_be *be = (cuda_be *)be_;
    crank *g = be->rk[0];
    if (be->n_rank > 1 || !g->use_graph) return 0;
    int k = 0;
    /* speculative decoding's verify passes: one sequence (a context), its table the identity; captured over the
     * decode attention's whole grid (a pass launching fewer takes a graph slot of its own at first use, graph_slot) */
    g->att_sl = 0;
    for (int n = 2; n <= max_rows && n <= g->gemv_max && n <= g->ubatch; n++) {
        graph_slot_t *gs = graph_slot(g, 1, OUT_ALL, n);
        if (gs->ok) continue;
        const pass_t P = {n, n, OUT_ALL, 0, NULL, 1};
        set_layout(g, n);
        if (capture_forward(g, G, &P, &gs->ex, gs->tr)) return -1;
        gs->ok = 1;
        g->n_graphs++;
        k++;
    }
    return k;
}

void cuda_rank_trace_print(const crank *g) {
    fprintf(stderr, "trace: cuda gemv_dp4a_row=%llu gemv_dp4a_rows=%llu gemv_dp4a_tma=%llu gemv_f32_row=%llu "
                    "gemv_f32_rows=%llu gemm=%llu attention_split=%llu attention=%llu attention_q8w=%llu "
                    "attention_ms=%llu rmsnorm_cluster=%llu gemm_mma_v2=%llu gemm_hm=%llu gemm_hm_tiled=%llu gemv_slices=%llu graphs=%d "
                    "(rows <= %d: GEMV)\n",
            (unsigned long long)g->tr[TR_DP4A_ROW], (unsigned long long)g->tr[TR_DP4A_ROWS],
            (unsigned long long)g->tr[TR_DP4A_TMA], (unsigned long long)g->tr[TR_F32_ROW],
            (unsigned long long)g->tr[TR_F32_ROWS], (unsigned long long)g->tr[TR_GEMM],
            (unsigned long long)g->tr[TR_ATT_SPLIT], (unsigned long long)g->tr[TR_ATT],
            (unsigned long long)g->tr[TR_ATT_Q8W], (unsigned long long)g->tr[TR_ATT_MS],
            (unsigned long long)g->tr[TR_RMS_CL],
            (unsigned long long)g->tr[TR_MMA_V2], (unsigned long long)g->tr[TR_HM], (unsigned long long)g->tr[TR_HM_TL],
            (unsigned long long)g->tr[TR_SLICE], g->n_graphs, g->gemv_max);
}

#endif
