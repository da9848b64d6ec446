/* cuda_backend.h: the CUDA backend's own types, shared by backend_cuda.c (devices, the model's weights on them,
 * the memory plan, an engine's buffers and KV pool) and exec.c (the graph over a pass: the fusions, the CUDA
 * graphs, the outputs). Only those two files include it; the engine sees backend.h. CUDA builds only. */
#ifndef TERN_CUDA_BACKEND_H
#define TERN_CUDA_BACKEND_H
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "backend.h"
#include "backend_cuda.h"
#include "cuda/tcu.h"

#define CU(call)                                                                                     \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            tern_set_error("CUDA error %s at %s:%d (%s)", cudaGetErrorName(e_), __FILE__, __LINE__, #call); \
            (void)cudaGetLastError(); /* not left for the next call's cudaGetLastError to report */  \
            return -1;                                                                               \
        }                                                                                            \
    } while (0)

/* A matrix on one GPU: a rank's slice of a model weight, rows in the stored GGUF block type (Q4_0/Q8_0/Q4_K in
 * tcu.h's repacked layouts), each row padded to 16 bytes; or, once an f16-order engine converted it, Q4_0, Q8_0, Q4_K or Q6_K in
 * the tiled layout (type TCU_TYPE_Q4_0T, Q8_0T, Q4_KT or Q6_KT, d the tiles, stride the rows' as before: backend_cuda.c
 * wrank_tile). */
typedef struct dweight {
    void *d;           /* device rows, stride bytes apart */
    int type;
    int64_t n_in, n_out;
    size_t stride;
    const void *host;  /* the source tensor (tied weights share one upload) */
    int64_t row0, col0; /* the slice of the source: rows [row0, row0 + n_out), columns [col0, col0 + n_in) */
    int own;            /* d is this matrix's allocation (else a view into a fused one) */
    const struct dweight *pf_next; /* the matrix the prefill GEMM path reads next (dequant prefetch), or NULL */
    int fam;            /* the dp4a GEMV family (tcu_gemv_dp4a_family): a fused matrix's, for its parts too */
} dweight;

typedef struct {
    float *attn_norm, *ffn_norm, *bq, *bk, *bv, *bo;
    float *q_norm, *k_norm, *attn_post_norm, *ffn_post_norm; /* the recipe's extra norms (NULL: none) */
    dweight *wq, *wk, *wv, *wo, *gate, *up, *down;
    dweight *qkv, *gu; /* q|k|v and gate|up rows in one allocation (same type), the parts views into it; a
                        * one-token pass runs each as one GEMV; NULL when the types differ */
} dlayer;

/* The model's weights on one GPU (rank `rank` of an n_rank tensor-parallel split): uploaded once per model and
 * split, owned by the model (tern_model.dev_weights), shared by every engine on it (sequences, drafters). */
typedef struct {
    const tern_model *m;
    int dev, rank, n_rank;
    int nh, nkv, nf, nv, vpad; /* this GPU's heads, KV heads, FFN columns, vocab rows; vocab rows per GPU */
    dweight *w;                /* every uploaded matrix */
    int n_w;
    dlayer *layers;
    dweight *tok_embd, *output;
    float *output_norm;        /* (n_embd) */
    int pf_gu;                 /* one GPU, every layer's gate|up fused: prefill chunks run gate|up as one GEMM */
    uint64_t bytes;            /* device bytes of all of it */
    int tiled;                 /* an f16-order engine converted its matrices to the tiled layout (wrank_tile) */
    uint64_t max_mat, max_layer_mat; /* elements of the largest matrix the GEMM path dequantizes; of a layer's */
    int tile_b32;              /* bytes a 32-element block of the f16 order's tiled copy: 18 (Q4_0T), 19 with a Q4_K
                                * matrix, 34 with a Q8_0 one */
    uint64_t tile_grow;        /* bytes the Q4_K matrices' tiles add to their rows (19 against 18 a block) */
    int q6;                    /* a Q6_K matrix (or untied head): the tiled copy (Q6_KT) is 35 bytes a block */
    uint64_t tile_grow6;       /* and the Q6_K matrices' tiles add 35 - 26.25 bytes a block to their rows */
    int maxin;                 /* the widest matmul input */
    void *stage, *dstage;      /* upload staging (freed after the upload) */
    char errmsg[512];
} cuda_wrank;

typedef struct {
    int n_rank;
    cuda_wrank r[TERN_TP_MAX];
} cuda_weights;

/* Dispatch counters (TERN_TRACE=1, printed at free): which matmul and attention kernels a run used. */
enum { TR_DP4A_ROW, TR_DP4A_ROWS, TR_DP4A_TMA, TR_F32_ROW, TR_F32_ROWS, TR_GEMM, TR_ATT_SPLIT, TR_ATT, TR_ATT_Q8W, TR_ATT_MS,
       TR_RMS_CL, TR_MMA_V2, TR_HM, TR_HM_TL, TR_SLICE, TR_N };

/* What a captured pass computes at its end: nothing, the last row's logits and argmax, every row's. */
enum { OUT_NONE = 0, OUT_LAST = 1, OUT_ALL = 2, OUT_KINDS = 3 };
/* One captured pass: its graph, the decode attention's launched splits it was captured with (att_sl), its last use
 * (crank.gclock) and its trace counts. */
#define GRAPH_ALT 4
typedef struct {
    cudaGraphExec_t ex;
    unsigned char ok, sl;
    unsigned used;
    uint64_t tr[TR_N];
} graph_slot_t;

/* One engine's state on one GPU (a rank): the KV pool, scratch for max_rows tokens, the pass's device inputs,
 * the CUDA graphs. */
typedef struct crank crank;
/* Layer il's place in the KV pool: 1 when its rows are in the window pool; *off the bytes before its K (V alike). */
int cuda_kv_layer(const crank *g, int il, uint64_t *off);

struct crank {
    const tern_model *m;
    const cuda_wrank *W;
    int dev, rank, n_rank;
    int n_ctx, ubatch, kv_q8, lbs;
    int64_t kv_rows;           /* pool rows a layer */
    int64_t kv_rows_w;         /* the window pool's rows, which a sliding-window layer has instead when > 0 (backend.h) */
    int n_layer;               /* layers the engine's graph runs: the KV pool holds these */
    cudaStream_t st, side;
    tcu_blas *blas;
    /* KV pool: per layer K then V... kc, vc: (n_layer) layers of kv_layer_bytes: f16 (kv_rows, nkv*hd), or Q8_0:
     * int8 (kv_rows, nkv*hd) then f16 scales (kv_rows, nkv*hd/32), padded to 256 bytes */
    void *kc, *vc;
    uint64_t kv_layer_bytes;   /* a main-pool layer's; a window-pool layer's kv_layer_bytes_w (layers in order: cuda_kv_off) */
    uint64_t kv_layer_bytes_w;
    uint16_t *kc16, *vc16;     /* kv_q8: one sequence's rows as f16 for the prefill attention (n_ctx rows) */
    /* scratch for ubatch tokens */
    float *x, *x2, *xn, *tmp, *q, *att, *k, *v, *g, *u, *logits;
    float *qkv1, *gu1;         /* one token's fused q|k|v and gate|up outputs */
    float *attws;              /* split-K decode attention partials */
    int att_splits;
    int gemv_max;              /* passes of up to this many tokens take the GEMV path (TCU_MULTI_MAX, or TCU_PASS_MAX with
                                * the chunk order: backend_cuda.c pass_limit; 1: verify fast) */
    int gemv_ord;              /* the GEMVs' float order this engine was made with (tcu_gemv_order: 0 today's, 1 chunk) */
    int att_rps;               /* the decode attention's keys a split this engine was made with (tcu_attention_rps) */
    int att_sl;                /* this pass's decode-attention splits: exec.c att_need, 0 all (tcu.h TCU_ATT_FIT) */
    uint16_t *x16, *dq, *dq1;  /* f16 GEMM input; dequantized weight tiles (slot 0, slot 1) */
    cudaEvent_t ready[2], free_[2];
    const dweight *held[2];
    void *xq;                  /* integer GEMV input: <= 16 rows quantized (tcu_x16_bytes) */
    float *mmws;               /* v2's split arms' workspace (mmws_n floats: tcu_gemm_mma_v2_ws_floats of the largest
                                * need among this rank's matrices at gemv_max columns) */
    size_t mmws_n;
    int flash;
    /* a pass's inputs on the device, one int32 block copied at once (exec.c set_layout: tok, pos, slot, bt_off, n each,
     * then the block tables; with the window pool then its slots, n, and tables), room for 4 ubatch + bt_cap (5 ubatch
     * + 2 bt_cap); hpd its pinned host staging, which also takes the ids back */
    int32_t *pd, *hpd;
    int32_t *tok, *pos, *slot, *bt_off, *bt;
    int32_t *slot_w, *bt_w;    /* the window pool's (kv_rows_w > 0) */
    int bt_cap;
    int32_t *ids;              /* the argmax or sampled id of each output row (ubatch) */
    float *freq[2];            /* RoPE frequencies (n_rot / 2) of tables 0 and 1 (cpu_rope_table: global, sliding-window
                                * layers) at this engine's n_ctx (LongRoPE picks by it) */
    float mscale[2];           /* their cos/sin factors */
    int n_tables;              /* 2 when a layer rotates with table 1 */
    float *ropecs[2];          /* (cos, sin) of a GEMV-path pass's positions, each table */
    uint64_t *amkeys;
    int32_t *pen;              /* device sampler: penalty ids (pen_cap), uniform draws (ubatch), scratch (n_vocab) */
    int pen_cap;
    double *ud;
    float *samp;
    float *lg;                 /* logits in vocabulary order, (ubatch, n_vocab): = logits at TP = 1, = lfull at TP > 1 */
    float *gath, *lfull;       /* TP: the all-gathered logits (n_rank, ubatch, vpad); rank 0's (ubatch, n_vocab) */
    /* CUDA graphs of passes of n <= gemv_max tokens, by (identity table, output kind, n), GRAPH_ALT of them a key for
     * as many decode-attention split counts (att_sl), the least recently used captured again (exec.c graph_slot) */
    graph_slot_t gr[2][OUT_KINDS][TCU_PASS_MAX + 1][GRAPH_ALT];
    unsigned gclock;
    int use_graph, warm, n_graphs;
    int pdl, pdl_max; /* the device has programmatic dependent launch (sm_90+); a pass sets it by its size: up to
                       * pdl_max tokens (tern_config.pdl_max; 0: exec.c PDL_MAX) */
    uint64_t tr[TR_N];
    int trace, timing;
    cudaEvent_t ev0, ev1;
    double t_dec_ms, t_pre_ms;
    long n_dec, n_dec_tok, n_pre_tok;
    ncclComm_t comm;
    uint64_t b_kv, b_scratch;
    char errmsg[512];
};

/* The backend (backend.h's tern_backend first). */
typedef struct {
    tern_backend base;
    const tern_model *m;
    int n_rank;
    crank *rk[TERN_TP_MAX];
    tern_pool *pool;           /* TP: one thread per rank (the caller runs rank 0) */
} cuda_be;

/* NCCL entry points (backend_cuda.c loads libnccl at run time). */
typedef struct {
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    const char *(*GetErrorString)(ncclResult_t);
} cuda_nccl;
const cuda_nccl *cuda_nccl_fns(void);

/* exec.c */
int cuda_exec(tern_backend *be, const tern_graph *g, const tern_ubatch *ub);
int cuda_prepare(tern_backend *be, const tern_graph *g, int max_rows);
/* Is every op of g one the executor has kernels for? 0, or -1 with the reason set. */
int cuda_graph_supported(const tern_graph *g, const tern_model *m);
void cuda_rank_trace_print(const crank *g);

#endif
