/* backend_cuda.c: the llama forward pass on the GPU, as a sequence of src/backend/cuda/ kernel launches
 * (the same op order as forward.c's CPU pass), plus the memory plan and the CUDA graph of a decode step.
 * See backend_cuda.h for the contract and the numerics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "quant.h"
#include "tern.h"
#include "util.h"

int tern_tp_check(const tern_model *m, int n, char *why, size_t nwhy) {
    if (n < 1 || n > TERN_TP_MAX) {
        snprintf(why, nwhy, "--tp %d: expected 1..%d GPUs", n, TERN_TP_MAX);
        return -1;
    }
    if (n == 1) return 0;
    if (m->n_head_kv % n != 0 || m->n_head % n != 0) {
        snprintf(why, nwhy,
                 "--tp %d: the model's %d attention heads / %d KV heads do not split evenly over %d GPUs (each GPU "
                 "holds whole KV heads); use a --tp that divides %d",
                 n, m->n_head, m->n_head_kv, n, m->n_head_kv);
        return -1;
    }
    const int64_t hq = (int64_t)m->n_head / n * m->head_dim, f = (int64_t)m->n_ff / n;
    for (int il = 0; il < m->n_layer; il++) {
        const tern_weight *wo = &m->layers[il].wo, *wd = &m->layers[il].w_down;
        if (hq % tern_type_block_size(wo->type) || hq % 8 || f % tern_type_block_size(wd->type) || f % 8) {
            snprintf(why, nwhy,
                     "--tp %d: layer %d's per-GPU slices (%lld attention-output columns of %s, %lld FFN-down columns "
                     "of %s) are not whole blocks; use a smaller --tp",
                     n, il, (long long)hq, tern_type_name((int)wo->type), (long long)f, tern_type_name((int)wd->type));
            return -1;
        }
    }
    const int vpad = (m->n_vocab + n - 1) / n;
    if ((int64_t)(n - 1) * vpad >= m->n_vocab) {
        snprintf(why, nwhy, "--tp %d: a vocabulary of %d rows leaves a GPU without output rows", n, m->n_vocab);
        return -1;
    }
    return 0;
}

#ifndef TERN_CUDA

int tern_cuda_available(void) { return 0; }
int tern_cuda_device_count(void) { return 0; }
const char *tern_cuda_device_name(void) { return ""; }
tern_cuda *tern_cuda_new(const tern_model *m, int n_ctx, int ubatch, int verbose, int n_tp, int kv_q8) {
    (void)m; (void)n_ctx; (void)ubatch; (void)verbose; (void)n_tp; (void)kv_q8;
    tern_set_error("this tern was built without CUDA (build with make CUDA=1)");
    return NULL;
}
void tern_cuda_free(tern_cuda *g) { (void)g; }
int tern_cuda_eval(tern_cuda *g, const int32_t *tokens, int n, int pos0, float *logits, int all_logits, int32_t *next) {
    (void)g; (void)tokens; (void)n; (void)pos0; (void)logits; (void)all_logits; (void)next;
    tern_set_error("this tern was built without CUDA");
    return -1;
}
void tern_cuda_plan(const tern_cuda *g, uint64_t *w, uint64_t *kv, uint64_t *s) {
    (void)g; *w = *kv = *s = 0;
}
void tern_cuda_set_layers(tern_cuda *g, int n_layer) { (void)g; (void)n_layer; }
void tern_cuda_set_verify_fast(tern_cuda *g, int on) { (void)g; (void)on; }
int tern_cuda_prepare_verify(tern_cuda *g, int max_n, double *ms) {
    (void)g; (void)max_n;
    if (ms) *ms = 0.0;
    return 0;
}
int tern_cuda_eval_argmax(tern_cuda *g, const int32_t *tokens, int n, int pos0, int32_t *ids) {
    (void)g; (void)tokens; (void)n; (void)pos0; (void)ids;
    tern_set_error("this tern was built without CUDA");
    return -1;
}
int tern_cuda_eval_sample(tern_cuda *g, const int32_t *tokens, int n, int pos0, const tern_cuda_sampling *sp,
                          int32_t *next) {
    (void)g; (void)tokens; (void)n; (void)pos0; (void)sp; (void)next;
    tern_set_error("this tern was built without CUDA");
    return -1;
}

#else

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include "backend_cpu.h"
#include "cuda/tcu.h"

_Static_assert(TERN_CUDA_SAMPLE_KMAX == TCU_SAMPLE_KMAX, "backend_cuda.h and tcu.h disagree on the device top_k limit");

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

/* Dispatch counters (TERN_TRACE=1, printed at free): which matmul and attention kernels a run used. */
enum { TR_DP4A_ROW, TR_DP4A_ROWS, TR_DP4A_TMA, TR_F32_ROW, TR_F32_ROWS, TR_GEMM, TR_ATT_SPLIT, TR_ATT, TR_ATT_Q8W, TR_RMS_CL, TR_N };

typedef struct {
    float *attn_norm, *ffn_norm, *bq, *bk, *bv, *bo;
    dweight *wq, *wk, *wv, *wo, *gate, *up, *down;
    dweight *qkv, *gu; /* q|k|v and gate|up rows in one allocation (same type), the parts views into it; the
                        * decode step runs each as one GEMV; NULL when the types differ */
} dlayer;

/* One GPU's state. At TP = 1 the only one; at TP = n, rank 0's struct is the handle the API sees and
 * rk[] holds every rank (rk[0] == itself). */
struct tern_cuda {
    const tern_model *m;
    int n_ctx, ubatch;
    int rank, n_rank, dev;
    int nh, nkv, nf, nv, vpad; /* this GPU's heads, KV heads, FFN columns, vocab rows; vocab rows per GPU */
    cudaStream_t st;
    tcu_blas *blas;
    dweight *w;        /* every uploaded matrix */
    int n_w;
    dlayer *layers;
    dweight *tok_embd, *output;
    float *output_norm, *freq;
    uint16_t *kc, *vc; /* (n_layer, n_ctx, nkv*hd) f16; with kv_q8 byte buffers of kv_layer_bytes a layer */
    int kv_q8;          /* Q8_0 KV cache (--cache-type-k/v q8_0): per layer int8 (n_ctx, nkv*hd), then f16
                         * scales (n_ctx, nkv*hd/32), the layer padded to 256 bytes */
    uint64_t kv_layer_bytes;
    uint16_t *kc16, *vc16; /* kv_q8: f16 copies of one layer's cache rows for the prefill attention */
    /* scratch for ubatch tokens */
    float *x, *xn, *tmp, *q, *att, *k, *v, *g, *u, *logits;
    float *x2; /* the residual stream alternates between x and x2: each residual add writes the other one
                * (tcu_add_rmsnorm_to's CTAs read all of the old one while writing slices of the new) */
    float *qkv1, *gu1;    /* one token's fused q|k|v and gate|up outputs */
    float *attws;         /* split-K decode attention partials (tcu_attention_ws_bytes for 16 tokens) */
    int att_splits;       /* splits of the decode attention (att_splits_rule) */
    int gemv_max;         /* chunks of up to this many tokens take the GEMV path (TCU_MULTI_MAX; 1 with
                           * tern_cuda_set_verify_fast: 2..16-token chunks through the GEMM) */
    uint64_t tr[TR_N], tr_graph[TR_N]; /* TERN_TRACE dispatch counts; those of one graph replay */
    uint64_t *amkeys; /* device: tcu_argmax's keys, this context's own (TCU_MULTI_MAX words) */
    float *ropecs;    /* device: tcu_rope_table's (cos, sin) of a GEMV-path pass's positions (TCU_MULTI_MAX x n_rot/2 pairs) */
    int trace;
    uint16_t *x16, *dq;   /* f16 GEMM input (ubatch, max(E, Hq, n_ff)); dequantized weight (max n_out*n_in) */
    /* dequant prefetch: the GEMM path dequantizes matrix i+1 on the side
     * stream into one f16 slot while the GEMM of matrix i reads the other. Slot 0 is dq, slot 1 dq1 (the
     * largest layer matrix, max_layer_mat elements); held[s] is what slot s holds (or will, once ready[s]);
     * free_[s] is recorded on st after the last GEMM that read slot s. */
    uint16_t *dq1;
    uint64_t max_layer_mat;
    int pf_gu; /* one GPU, every layer's gate|up fused: prefill chunks run gate|up as one GEMM, then tcu_swiglu_rows */
    cudaStream_t side;
    cudaEvent_t ready[2], free_[2];
    const dweight *held[2];
    void *xq;             /* integer GEMV input: <= 16 rows of max(E, Hq, n_ff) quantized (tcu_x16_bytes) */
    /* the integer GEMV runs the types it has (tcu_gemv_dp4a_supported); Q4_0/Q8_0/Q4_K matrices are uploaded in
     * its repacked layouts (tcu.h) */
    int32_t *tok, *pos, *next, *ids; /* ids: per-row argmax (ubatch) */
    int32_t *hpos;                   /* host: positions of the chunk being copied (ubatch) */
    /* device sampler (tcu_sample): penalty ids (pen_cap), the uniform draw, an n_vocab scratch */
    int32_t *pen;
    int pen_cap;
    double *ud;
    float *samp;
    float *lg;         /* logits in vocabulary order, (ubatch, n_vocab): = logits at TP = 1, = lfull at TP > 1 */
    uint64_t b_weights, b_kv, b_scratch;
    cudaGraphExec_t graph;
    int graph_ok, use_graph, warm;
    /* chunks of 2..TCU_MULTI_MAX tokens (a speculative verify pass, a short prompt): one graph per (n,
     * all_logits), captured at its first call, one rank only */
    cudaGraphExec_t mgraph[2][TCU_MULTI_MAX + 1];
    uint64_t mtr[2][TCU_MULTI_MAX + 1][TR_N]; /* the trace counts of one replay */
    unsigned char mgraph_ok[2][TCU_MULTI_MAX + 1];
    int use_mgraph, n_mgraph;
    int flash;   /* prefill chunks take the flash kernels: this shape has them */
    int n_layer_eval; /* layers the forward pass runs (tern_cuda_set_layers) */
    /* TERN_CUDA_TIMING=1: device time of each eval, from events around its launches (printed at free) */
    int timing;
    cudaEvent_t ev0, ev1;
    double t_dec_ms, t_pre_ms;
    long n_dec, n_pre_tok;
    /* tensor parallelism */
    ncclComm_t comm;
    struct tern_cuda **rk; /* rank 0 at TP > 1: every rank */
    tern_pool *pool;       /* rank 0 at TP > 1: one thread per rank (the caller runs rank 0) */
    float *gath;           /* (n_rank, ubatch, vpad): all-gathered logits */
    float *lfull;          /* rank 0: (ubatch, n_vocab) */
    void *stage;           /* pinned host staging for generated weights (in-memory synthetic models) */
    void *dstage;          /* device staging of GGUF rows for tcu_repack */
    char errmsg[512];      /* this rank's last error (tern_last_error is per thread) */
};

static int g_avail = -1, g_ndev = 0;
static char g_name[256];

int tern_cuda_available(void) {
    if (g_avail >= 0) return g_avail;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        (void)cudaGetLastError();
        g_avail = 0;
        return 0;
    }
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) snprintf(g_name, sizeof g_name, "%s", p.name);
    else (void)cudaGetLastError();
    g_ndev = n;
    g_avail = 1;
    return 1;
}

const char *tern_cuda_device_name(void) { return tern_cuda_available() ? g_name : ""; }
int tern_cuda_device_count(void) { return tern_cuda_available() ? g_ndev : 0; }

#define CU(call)                                                                                     \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            tern_set_error("CUDA error %s at %s:%d (%s)", cudaGetErrorName(e_), __FILE__, __LINE__, #call); \
            (void)cudaGetLastError(); /* not left for the next call's cudaGetLastError to report */  \
            return -1;                                                                               \
        }                                                                                            \
    } while (0)

/* ---- NCCL, loaded at run time (a CUDA build runs without it; --tp > 1 needs it) ---- */

static struct {
    int tried, ok;
    ncclResult_t (*CommInitAll)(ncclComm_t *, int, const int *);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*GetVersion)(int *);
    const char *(*GetErrorString)(ncclResult_t);
    int version;
} nccl;

static int nccl_load(void) {
    if (nccl.tried) return nccl.ok ? 0 : -1;
    nccl.tried = 1;
    const char *env = getenv("TERN_NCCL_LIB");
    const char *names[] = {env && *env ? env : "libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib/libnccl.so.2",
                           "/usr/local/cuda/lib64/libnccl.so.2"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        tern_set_error("--tp > 1 needs NCCL: libnccl.so.2 was not found (install libnccl2 or set TERN_NCCL_LIB)");
        return -1;
    }
#define SYM(f) ((*(void **)&nccl.f = dlsym(h, "nccl" #f)) != NULL)
    if (!SYM(CommInitAll) || !SYM(CommDestroy) || !SYM(AllReduce) || !SYM(AllGather) || !SYM(GetVersion) ||
        !SYM(GetErrorString)) {
        tern_set_error("NCCL library lacks a symbol tern needs (too old?)");
        return -1;
    }
#undef SYM
    nccl.GetVersion(&nccl.version);
    nccl.ok = 1;
    return 0;
}

#define NC(call)                                                                                      \
    do {                                                                                              \
        ncclResult_t r_ = (call);                                                                     \
        if (r_ != ncclSuccess) {                                                                      \
            tern_set_error("NCCL error '%s' at %s:%d (%s)", nccl.GetErrorString(r_), __FILE__, __LINE__, #call); \
            return -1;                                                                                \
        }                                                                                             \
    } while (0)

/* ---- weights ---- */

static size_t pad16(size_t b) { return (b + 15) & ~(size_t)15; }

static const tern_weight *layer_weight(const tern_layer *l, int j) {
    const tern_weight *ws[7] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
    return ws[j];
}

static int check_weight(const tern_weight *w, const char *what) {
    if (!tcu_type_supported((int)w->type)) {
        tern_set_error("%s: weight type %s has no GPU kernel (supported: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 "
                       "q4_K q5_K q6_K); use --device cpu",
                       what, tern_type_name((int)w->type));
        return -1;
    }
    if (w->n_in % 8 != 0) {
        tern_set_error("%s: row length %lld is not a multiple of 8 (the GPU kernels need it); use --device cpu", what,
                       (long long)w->n_in);
        return -1;
    }
    return 0;
}

/* A rank's slice of layer weight j (q k v o gate up down): rows [*r0, *r0 + *nr), columns [*c0, *c0 + *nc). */
static void layer_slice(const tern_cuda *g, const tern_weight *w, int j, int64_t *r0, int64_t *nr, int64_t *c0,
                        int64_t *nc) {
    const int hd = g->m->head_dim;
    *r0 = 0; *nr = w->n_out; *c0 = 0; *nc = w->n_in;
    switch (j) {
    case 0: *nr = (int64_t)g->nh * hd; *r0 = *nr * g->rank; break;   /* q: heads */
    case 1: case 2: *nr = (int64_t)g->nkv * hd; *r0 = *nr * g->rank; break; /* k, v: KV heads */
    case 3: *nc = (int64_t)g->nh * hd; *c0 = *nc * g->rank; break;   /* o: its input columns */
    case 4: case 5: *nr = g->nf; *r0 = *nr * g->rank; break;           /* gate, up: FFN rows */
    default: *nc = g->nf; *c0 = *nc * g->rank; break;                 /* down: its input columns */
    }
}

/* The device type of a weight of GGUF type t: its repacked layout where it has one. */
static int dev_type(const tern_cuda *g, int t) { (void)g; return tcu_repack_type(t); }

/* Bytes of a device row of nc elements of GGUF type t (unpadded). */
static size_t dev_row_bytes(const tern_cuda *g, int t, int64_t nc) {
    const int dt = dev_type(g, t);
    return dt != t ? tcu_repack_row_bytes(dt, nc) : tern_type_row_size((enum tern_type)t, nc);
}

/* Bytes of a slice of nr rows of nc elements on the device (rows padded to 16 bytes). */
static uint64_t slice_bytes(const tern_cuda *g, const tern_weight *w, int64_t nr, int64_t nc) {
    return (uint64_t)pad16(dev_row_bytes(g, (int)w->type, nc)) * (uint64_t)nr;
}

#define STAGE_BYTES ((size_t)64 << 20)

/* The rows of fill_part in the repacked layout: GGUF rows staged on the device chunk by chunk, then
 * tcu_repack into dst (zeroed first: padding and unused scale slots). 0 or -1. */
static int fill_repacked(tern_cuda *g, void *dst, size_t stride, const tern_weight *w, int64_t row0, int64_t nr,
                         int64_t c0, int64_t nc) {
    const size_t off = tern_type_row_size(w->type, c0), rb = tern_type_row_size(w->type, nc);
    if (cudaMemset(dst, 0, stride * (size_t)nr) != cudaSuccess) return -1;
    if (!g->dstage && cudaMalloc(&g->dstage, STAGE_BYTES) != cudaSuccess) return -1;
    if (!w->data && !g->m->gen_rows) { tern_set_error("a weight without data"); return -1; }
    if (!w->data && !g->stage && cudaMallocHost(&g->stage, STAGE_BYTES + w->row_bytes) != cudaSuccess) return -1;
    int64_t chunk = (int64_t)(STAGE_BYTES / w->row_bytes);
    if (chunk < 1) { tern_set_error("a %zu-byte row is larger than the upload stage", w->row_bytes); return -1; }
    for (int64_t c = 0; c < nr; c += chunk) {
        const int64_t cn = c + chunk < nr ? chunk : nr - c;
        const char *src = (const char *)w->data + (size_t)(row0 + c) * w->row_bytes + off;
        if (!w->data) {
            if (g->m->gen_rows(g->m, w, row0 + c, cn, g->stage) != 0) return -1;
            src = (const char *)g->stage + off;
        }
        if (cudaMemcpy2D(g->dstage, rb, src, w->row_bytes, rb, (size_t)cn, cudaMemcpyHostToDevice) != cudaSuccess) return -1;
        tcu_repack((int)w->type, g->dstage, rb, (char *)dst + (size_t)c * stride, stride, nc, cn, 0);
        if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
            return -1; /* a launch error, or the stage is rewritten next */
    }
    return 0;
}

/* Copy rows [row0, row0+nr), columns [c0, c0+nc) of w in block format into dst (rows stride bytes apart,
 * padding bytes zeroed), in the rank's device layout (dev_type). 0 or -1. */
static int fill_part(tern_cuda *g, void *dst, size_t stride, const tern_weight *w, int64_t row0, int64_t nr, int64_t c0,
                     int64_t nc) {
    if (dev_type(g, (int)w->type) != (int)w->type) return fill_repacked(g, dst, stride, w, row0, nr, c0, nc);
    const size_t off = tern_type_row_size(w->type, c0), rb = tern_type_row_size(w->type, nc);
    if (w->data) {
        if (cudaMemcpy2D(dst, stride, (const char *)w->data + (size_t)row0 * w->row_bytes + off, w->row_bytes, rb,
                         (size_t)nr, cudaMemcpyHostToDevice) != cudaSuccess)
            return -1;
    } else { /* in-memory synthetic model: make the rows chunk by chunk, upload the slice */
        if (!g->m->gen_rows) { tern_set_error("a weight without data"); return -1; }
        if (!g->stage && cudaMallocHost(&g->stage, STAGE_BYTES + w->row_bytes) != cudaSuccess) return -1;
        int64_t chunk = (int64_t)(STAGE_BYTES / w->row_bytes);
        if (chunk < 1) chunk = 1;
        for (int64_t c = 0; c < nr; c += chunk) {
            const int64_t cn = c + chunk < nr ? chunk : nr - c;
            if (g->m->gen_rows(g->m, w, row0 + c, cn, g->stage) != 0) return -1;
            if (cudaMemcpy2D((char *)dst + (size_t)c * stride, stride, (const char *)g->stage + off, w->row_bytes, rb,
                             (size_t)cn, cudaMemcpyHostToDevice) != cudaSuccess)
                return -1;
        }
    }
    if (stride != rb) /* padding bytes: defined, never read as data */
        if (cudaMemset2D((char *)dst + rb, stride, 0, stride - rb, (size_t)nr) != cudaSuccess) return -1;
    return 0;
}

static dweight *new_dweight(tern_cuda *g, const tern_weight *w, int64_t row0, int64_t nr, int64_t c0, int64_t nc) {
    dweight *d = &g->w[g->n_w++];
    d->type = dev_type(g, (int)w->type);
    d->n_in = nc;
    d->n_out = nr;
    d->row0 = row0;
    d->col0 = c0;
    d->stride = pad16(dev_row_bytes(g, (int)w->type, nc));
    d->host = w->data;
    d->fam = tcu_gemv_dp4a_family(d->type, d->stride, nc, nr);
    return d;
}

/* Upload rows [row0, row0+nr), columns [c0, c0+nc) of w in block format, each row padded to 16 bytes. */
static dweight *upload_part(tern_cuda *g, const tern_weight *w, int64_t row0, int64_t nr, int64_t c0, int64_t nc) {
    for (int i = 0; i < g->n_w; i++) {
        const dweight *o = &g->w[i];
        if (w->data && o->host == w->data && o->type == dev_type(g, (int)w->type) && o->n_out == nr && o->n_in == nc &&
            o->row0 == row0 && o->col0 == c0)
            return &g->w[i];
    }
    dweight *d = new_dweight(g, w, row0, nr, c0, nc);
    if (cudaMalloc(&d->d, d->stride * (size_t)nr) != cudaSuccess) return NULL;
    d->own = 1;
    return fill_part(g, d->d, d->stride, w, row0, nr, c0, nc) == 0 ? d : NULL;
}

/* Layer weights js[0..nj) (all one type, rows of nc columns) stacked in one allocation: returns the fused
 * view and sets *parts[j] to views of its rows. */
static dweight *upload_fused(tern_cuda *g, const tern_layer *l, const int *js, int nj, dweight ***parts) {
    int64_t r0[3], nr[3], c0[3], nc[3], rows = 0;
    for (int j = 0; j < nj; j++) {
        layer_slice(g, layer_weight(l, js[j]), js[j], &r0[j], &nr[j], &c0[j], &nc[j]);
        rows += nr[j];
    }
    const tern_weight *w0 = layer_weight(l, js[0]);
    dweight *f = new_dweight(g, w0, 0, rows, c0[0], nc[0]);
    f->host = NULL;
    if (cudaMalloc(&f->d, f->stride * (size_t)rows) != cudaSuccess) return NULL;
    f->own = 1;
    int64_t at = 0;
    for (int j = 0; j < nj; j++) {
        dweight *p = new_dweight(g, layer_weight(l, js[j]), r0[j], nr[j], c0[j], nc[j]);
        p->host = NULL;
        p->d = (char *)f->d + (size_t)at * f->stride;
        if (fill_part(g, p->d, p->stride, layer_weight(l, js[j]), r0[j], nr[j], c0[j], nc[j]) != 0) return NULL;
        p->fam = f->fam; /* one summation order for a row in the fused and the per-part calls */
        *parts[j] = p;
        at += nr[j];
    }
    return f;
}

static float *upload_f32(const float *h, size_t n) {
    if (!h) return NULL;
    float *d = NULL;
    if (cudaMalloc((void **)&d, n * sizeof(float)) != cudaSuccess) return NULL;
    if (cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) { cudaFree(d); return NULL; }
    return d;
}

static void *dalloc(size_t bytes, int *fail) {
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 16) != cudaSuccess) { *fail = 1; return NULL; }
    return p;
}

static double gib(uint64_t b) { return b / (double)(1ull << 30); }

/* ---- the memory plan and setup of one rank ---- */

/* Splits of the decode attention over the keys (tcu_attention_split) for a context of n_ctx positions:
 * about 256 rows a split, at most 16 (H200, Llama-3-8B Q4_0: at depth 4096 one split 8.40 ms a step, 4:
 * 4.55, 16: 3.65, 32: 4.03; at depth 0 one split 3.10 vs 16: 3.19; docs/ledger.md). The grid's count, fixed
 * per context (a graph replays it); each token uses one split per 256 keys of its own position, up to it
 * (attention.cu ATT_ROWS_PER_SPLIT), so chunks and steps give the same bits. */
static int att_splits_rule(int n_ctx) {
    const int s = (n_ctx + 255) / 256;
    return s < 1 ? 1 : s > 16 ? 16 : s;
}

static void rank_dims(tern_cuda *g, const tern_model *m, int rank, int n_rank) {
    g->m = m;
    g->rank = rank;
    g->n_rank = n_rank;
    g->dev = rank;
    g->nh = m->n_head / n_rank;
    g->nkv = m->n_head_kv / n_rank;
    g->nf = m->n_ff / n_rank;
    g->vpad = (m->n_vocab + n_rank - 1) / n_rank;
    g->nv = rank < n_rank - 1 ? g->vpad : m->n_vocab - (n_rank - 1) * g->vpad;
}

/* The rank's bytes: weights, KV cache, scratch; the largest matrix (elements) for the f16 tile. */
static void rank_plan(tern_cuda *g, uint64_t *wb_, uint64_t *kvb_, uint64_t *sb_, uint64_t *max_mat_, int *maxin_) {
    const tern_model *m = g->m;
    const int E = m->n_embd, hd = m->head_dim, Hq = g->nh * hd, Hkv = g->nkv * hd, F = g->nf;
    const int B = g->ubatch, V = g->n_rank > 1 ? g->vpad : g->nv; /* logits rows as allocated */
    uint64_t wb = slice_bytes(g, &m->tok_embd, m->tok_embd.n_out, m->tok_embd.n_in);
    uint64_t max_mat = (uint64_t)E * V; /* the f16 tile holds one matrix the GEMM path reads (token_embd: rows only) */
    uint64_t max_layer = 0;             /* the prefetch slot (dq1) holds one layer matrix */
    if (m->output.data != m->tok_embd.data || g->n_rank > 1 || !m->output.data) wb += slice_bytes(g, &m->output, V, E);
    for (int il = 0; il < m->n_layer; il++) {
        for (int j = 0; j < 7; j++) {
            const tern_weight *w = layer_weight(&m->layers[il], j);
            int64_t r0, nr, c0, nc;
            layer_slice(g, w, j, &r0, &nr, &c0, &nc);
            wb += slice_bytes(g, w, nr, nc);
            if ((uint64_t)nr * nc > max_mat) max_mat = (uint64_t)nr * nc;
            if ((uint64_t)nr * nc > max_layer) max_layer = (uint64_t)nr * nc;
        }
        wb += sizeof(float) * (2 * (uint64_t)E + (m->layers[il].bq ? Hq : 0) + (m->layers[il].bk ? Hkv : 0) +
                               (m->layers[il].bv ? Hkv : 0) + (m->layers[il].bo ? E : 0));
    }
    wb += sizeof(float) * ((uint64_t)E + m->n_rot / 2 + 1);
    g->kv_layer_bytes = g->kv_q8 ? ((uint64_t)g->n_ctx * Hkv + (uint64_t)g->n_ctx * (Hkv / 32) * 2 + 255) & ~255ull
                                 : sizeof(uint16_t) * (uint64_t)g->n_ctx * Hkv;
    const uint64_t kvb = 2ull * m->n_layer * g->kv_layer_bytes;
    /* prefill's gate|up as one GEMM (one GPU; TP keeps two): its dequantized
     * matrix (2F x E) in the prefetch slot, gate|up's rows in g. Interleaved A/B, synthetic Llama-3-8B: Q4_0 pp512
     * +3.4%, pp2048 +0.6%, at -ub 512 +1.7%; Q8_0 +1.5% / +0.9%; the same logits (bench/gpu/pfgu-d41f054/) */
    g->pf_gu = g->n_rank == 1;
    for (int il = 0; il < m->n_layer && g->pf_gu; il++) /* every layer's gate|up fused at upload (same type) */
        if (m->layers[il].w_gate.type != m->layers[il].w_up.type) g->pf_gu = 0;
    if (g->pf_gu && 2ull * F * E > max_layer) max_layer = 2ull * F * E;
    if (g->pf_gu && 2ull * F * E > max_mat) max_mat = 2ull * F * E;
    int maxin = E > Hq ? E : Hq;
    if (F > maxin) maxin = F;
    const size_t ws_bytes = 32u << 20;
    uint64_t sb = sizeof(float) * ((uint64_t)B * (4ull * E + 2ull * Hq + 2ull * Hkv + (g->pf_gu ? 3ull : 2ull) * F + V) + Hq +
                                   2ull * Hkv + 2ull * F) +
                  sizeof(uint16_t) * ((uint64_t)B * maxin + max_mat + max_layer) + sizeof(int32_t) * (3ull * B + 1 + 4096) +
                  sizeof(double) + sizeof(float) * (uint64_t)m->n_vocab + ws_bytes + tcu_x16_bytes(TCU_MULTI_MAX, maxin) +
                  tcu_attention_ws_bytes(TCU_MULTI_MAX, g->nh, hd, g->att_splits);
    if (g->kv_q8) sb += 2ull * sizeof(uint16_t) * g->n_ctx * Hkv; /* kc16, vc16 */
    if (g->n_rank > 1) {
        sb += sizeof(float) * (uint64_t)g->n_rank * B * g->vpad;                 /* gath */
        if (g->rank == 0) sb += sizeof(float) * (uint64_t)B * m->n_vocab;        /* lfull */
    }
    *wb_ = wb; *kvb_ = kvb; *sb_ = sb; *max_mat_ = max_mat; *maxin_ = maxin;
    g->max_layer_mat = max_layer;
}

/* Allocate and upload one rank (on its device, from its own thread). 0 or -1 (g->errmsg). */
static int rank_setup(tern_cuda *g) {
    const tern_model *m = g->m;
    const int E = m->n_embd, hd = m->head_dim, Hq = g->nh * hd, Hkv = g->nkv * hd, F = g->nf, B = g->ubatch;
    uint64_t wb, kvb, sb, max_mat;
    int maxin;
    rank_plan(g, &wb, &kvb, &sb, &max_mat, &maxin);
    int fail = 0;
    char err[256] = "";
    if (cudaSetDevice(g->dev) != cudaSuccess) fail = 1;
    if (!fail && cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking) != cudaSuccess) fail = 1;
    if (!fail && !(g->blas = tcu_blas_new(32u << 20, err))) fail = 1;
    g->w = calloc((size_t)m->n_layer * 9 + 2, sizeof *g->w);
    g->layers = calloc((size_t)m->n_layer, sizeof *g->layers);
    if (!g->w || !g->layers) fail = 1;
    if (!fail && (!(g->tok_embd = upload_part(g, &m->tok_embd, 0, m->tok_embd.n_out, 0, E)) ||
                  !(g->output = upload_part(g, &m->output, (int64_t)g->rank * g->vpad, g->nv, 0, E))))
        fail = 1;
    for (int il = 0; il < m->n_layer && !fail; il++) {
        const tern_layer *l = &m->layers[il];
        dlayer *d = &g->layers[il];
        dweight **slots[7] = {&d->wq, &d->wk, &d->wv, &d->wo, &d->gate, &d->up, &d->down};
        static const int jq[3] = {0, 1, 2}, jg[2] = {4, 5};
        if (l->wq.type == l->wk.type && l->wq.type == l->wv.type) {
            dweight **ps[3] = {&d->wq, &d->wk, &d->wv};
            if (!(d->qkv = upload_fused(g, l, jq, 3, ps))) fail = 1;
        }
        if (!fail && l->w_gate.type == l->w_up.type) {
            dweight **ps[2] = {&d->gate, &d->up};
            if (!(d->gu = upload_fused(g, l, jg, 2, ps))) fail = 1;
        }
        for (int j = 0; j < 7 && !fail; j++) {
            if (*slots[j]) continue; /* a part of a fused upload */
            const tern_weight *w = layer_weight(l, j);
            int64_t r0, nr, c0, nc;
            layer_slice(g, w, j, &r0, &nr, &c0, &nc);
            if (!(*slots[j] = upload_part(g, w, r0, nr, c0, nc))) fail = 1;
        }
        if (fail) break;
        if (!(d->attn_norm = upload_f32(l->attn_norm, E)) || !(d->ffn_norm = upload_f32(l->ffn_norm, E))) fail = 1;
        if ((l->bq && !(d->bq = upload_f32(l->bq + (size_t)g->rank * Hq, Hq))) ||
            (l->bk && !(d->bk = upload_f32(l->bk + (size_t)g->rank * Hkv, Hkv))) ||
            (l->bv && !(d->bv = upload_f32(l->bv + (size_t)g->rank * Hkv, Hkv))) ||
            (l->bo && !(d->bo = upload_f32(l->bo, E))))
            fail = 1;
    }
    if (!fail && !(g->output_norm = upload_f32(m->output_norm, E))) fail = 1;
    if (!fail) {
        float *fq = tern_xmalloc(sizeof(float) * (size_t)(m->n_rot / 2 + 1));
        cpu_rope_freqs(fq, m->n_rot, m->rope_base, m->rope_scale, m->rope_factors);
        if (!(g->freq = upload_f32(fq, (size_t)(m->n_rot / 2 + 1)))) fail = 1;
        free(fq);
    }
    if (g->stage) { cudaFreeHost(g->stage); g->stage = NULL; }
    if (g->dstage) { cudaFree(g->dstage); g->dstage = NULL; }
    if (!fail) {
        g->kc = dalloc(kvb / 2, &fail);
        g->vc = dalloc(kvb / 2, &fail);
        if (g->kv_q8) {
            g->kc16 = dalloc(sizeof(uint16_t) * (size_t)g->n_ctx * Hkv, &fail);
            g->vc16 = dalloc(sizeof(uint16_t) * (size_t)g->n_ctx * Hkv, &fail);
        }
        g->x = dalloc(sizeof(float) * (size_t)B * E, &fail);
        g->x2 = dalloc(sizeof(float) * (size_t)B * E, &fail);
        g->xn = dalloc(sizeof(float) * (size_t)B * E, &fail);
        g->tmp = dalloc(sizeof(float) * (size_t)B * E, &fail);
        g->q = dalloc(sizeof(float) * (size_t)B * Hq, &fail);
        g->att = dalloc(sizeof(float) * (size_t)B * Hq, &fail);
        g->k = dalloc(sizeof(float) * (size_t)B * Hkv, &fail);
        g->v = dalloc(sizeof(float) * (size_t)B * Hkv, &fail);
        g->g = dalloc(sizeof(float) * (size_t)B * F * (g->pf_gu ? 2 : 1), &fail); /* with pf_gu: the fused gate|up's rows */
        g->u = dalloc(sizeof(float) * (size_t)B * F, &fail);
        g->qkv1 = dalloc(sizeof(float) * (size_t)(Hq + 2 * Hkv), &fail);
        g->gu1 = dalloc(sizeof(float) * 2 * (size_t)F, &fail);
        g->attws = dalloc(tcu_attention_ws_bytes(TCU_MULTI_MAX, g->nh, hd, g->att_splits), &fail);
        g->logits = dalloc(sizeof(float) * (size_t)B * (g->n_rank > 1 ? g->vpad : g->nv), &fail);
        g->x16 = dalloc(sizeof(uint16_t) * (size_t)B * maxin, &fail);
        g->dq = dalloc(sizeof(uint16_t) * (size_t)max_mat, &fail);
        g->dq1 = dalloc(sizeof(uint16_t) * (size_t)g->max_layer_mat, &fail);
        /* dequant prefetch: a side stream at the lowest priority (+3% pp512; the highest: the same, docs/ledger.md) */
        int pr_least = 0, pr_greatest = 0;
        cudaDeviceGetStreamPriorityRange(&pr_least, &pr_greatest);
        if (cudaStreamCreateWithPriority(&g->side, cudaStreamNonBlocking, pr_least) != cudaSuccess)
            fail = 1;
        for (int i = 0; i < 2 && !fail; i++)
            if (cudaEventCreateWithFlags(&g->ready[i], cudaEventDisableTiming) != cudaSuccess ||
                cudaEventCreateWithFlags(&g->free_[i], cudaEventDisableTiming) != cudaSuccess)
                fail = 1;
        /* the prefill pass's GEMM order: q, k, v, o, gate, up, down, then the next layer's q */
        for (int il = 0; il < m->n_layer && !fail; il++) {
            dlayer *d = &g->layers[il];
            dweight *seq[7] = {d->wq, d->wk, d->wv, d->wo, d->gate, d->up, d->down};
            for (int j = 0; j < 6; j++) seq[j]->pf_next = seq[j + 1];
            if (g->pf_gu && d->gu) { /* the fused prefill's order: ... o, gate|up, down */
                d->wo->pf_next = d->gu;
                d->gu->pf_next = d->down;
            }
            d->down->pf_next = il + 1 < m->n_layer ? g->layers[il + 1].wq : NULL;
        }
        g->xq = dalloc(tcu_x16_bytes(TCU_MULTI_MAX, maxin), &fail);
        /* programmatic dependent launch on Hopper and later */
        int cc_major = 0;
        cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, g->dev);
        tcu_set_pdl(cc_major >= 9);
        g->gemv_max = TCU_MULTI_MAX;
        g->flash = tcu_attention_flash_ok(g->nh, g->nkv, m->head_dim);
        g->trace = getenv("TERN_TRACE") && atoi(getenv("TERN_TRACE"));
        g->tok = dalloc(sizeof(int32_t) * (size_t)B, &fail);
        g->pos = dalloc(sizeof(int32_t) * (size_t)B, &fail);
        g->next = dalloc(sizeof(int32_t), &fail);
        g->ids = dalloc(sizeof(int32_t) * (size_t)B, &fail);
        g->ropecs = dalloc(sizeof(float) * 2 * TCU_MULTI_MAX * (size_t)(m->n_rot / 2 + 1), &fail);
        g->amkeys = dalloc(sizeof(uint64_t) * TCU_MULTI_MAX, &fail); /* the argmax keys (tcu_argmax), zero */
        if (g->amkeys && cudaMemset(g->amkeys, 0, sizeof(uint64_t) * TCU_MULTI_MAX) != cudaSuccess) fail = 1;
        if (!(g->hpos = malloc(sizeof(int32_t) * (size_t)B))) fail = 1;
        g->pen_cap = 4096;
        g->pen = dalloc(sizeof(int32_t) * (size_t)g->pen_cap, &fail);
        g->ud = dalloc(sizeof(double), &fail);
        g->samp = dalloc(sizeof(float) * (size_t)m->n_vocab, &fail);
        g->lg = g->logits;
        if (g->n_rank > 1) {
            g->gath = dalloc(sizeof(float) * (size_t)g->n_rank * B * g->vpad, &fail);
            if (g->rank == 0) g->lg = g->lfull = dalloc(sizeof(float) * (size_t)B * m->n_vocab, &fail);
        }
    }
    if (fail) {
        const cudaError_t e_last = cudaGetLastError(); /* read (and cleared) whichever message is used */
        snprintf(g->errmsg, sizeof g->errmsg, "CUDA setup failed on GPU %d: %s", g->dev,
                 err[0] ? err : e_last != cudaSuccess ? cudaGetErrorString(e_last) : tern_last_error());
        return -1;
    }
    return 0;
}

static void rank_free(tern_cuda *g) {
    if (!g) return;
    cudaSetDevice(g->dev);
    if (g->graph_ok) cudaGraphExecDestroy(g->graph);
    for (int a = 0; a < 2; a++)
        for (int k = 0; k <= TCU_MULTI_MAX; k++)
            if (g->mgraph_ok[a][k]) cudaGraphExecDestroy(g->mgraph[a][k]);
    if (g->w)
        for (int i = 0; i < g->n_w; i++)
            if (g->w[i].own) cudaFree(g->w[i].d);
    if (g->layers)
        for (int il = 0; il < g->m->n_layer; il++) {
            dlayer *d = &g->layers[il];
            cudaFree(d->attn_norm); cudaFree(d->ffn_norm);
            cudaFree(d->bq); cudaFree(d->bk); cudaFree(d->bv); cudaFree(d->bo);
        }
    void *bufs[] = {g->output_norm, g->freq, g->kc, g->vc, g->kc16, g->vc16, g->x, g->x2, g->xn, g->tmp, g->q, g->att, g->k, g->v, g->g, g->u,
                    g->qkv1, g->gu1, g->attws, g->logits, g->x16, g->dq, g->dq1, g->xq, g->tok, g->pos, g->next, g->pen, g->ud, g->samp, g->ids, g->amkeys, g->gath,
                    g->lfull, g->ropecs};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
    if (g->stage) cudaFreeHost(g->stage);
    if (g->dstage) cudaFree(g->dstage);
    if (g->comm) nccl.CommDestroy(g->comm);
    if (g->blas) tcu_blas_free(g->blas);
    if (g->st) cudaStreamDestroy(g->st);
    if (g->side) cudaStreamDestroy(g->side);
    for (int i = 0; i < 2; i++) {
        if (g->ready[i]) cudaEventDestroy(g->ready[i]);
        if (g->free_[i]) cudaEventDestroy(g->free_[i]);
    }
    free(g->hpos);
    free(g->w);
    free(g->layers);
}

static void setup_job(void *arg, int ith, int nth) {
    (void)nth;
    tern_cuda **rk = arg;
    (void)rank_setup(rk[ith]);
}

tern_cuda *tern_cuda_new(const tern_model *m, int n_ctx, int ubatch, int verbose, int n_tp, int kv_q8) {
    if (!tern_cuda_available()) {
        tern_set_error("no CUDA device found (driver missing or no GPU); use --device cpu");
        return NULL;
    }
    if (m->head_dim % 32 != 0 || m->head_dim > 256) {
        tern_set_error("head dim %d: the GPU attention kernel needs a multiple of 32 up to 256; use --device cpu",
                       m->head_dim);
        return NULL;
    }
    if (m->n_rot % 2 != 0) { tern_set_error("n_rot %d is odd", m->n_rot); return NULL; }
    if (kv_q8 && m->head_dim != 64 && m->head_dim != 128 && m->head_dim != 256) {
        tern_set_error("-ctk/-ctv q8_0: head dim %d has no Q8_0 cache kernel (64, 128, 256); use f16", m->head_dim);
        return NULL;
    }
    char why[512];
    if (tern_tp_check(m, n_tp, why, sizeof why)) { tern_set_error("%s", why); return NULL; }
    if (n_tp > g_ndev) {
        tern_set_error("--tp %d needs %d GPUs and %d %s visible", n_tp, n_tp, g_ndev, g_ndev == 1 ? "is" : "are");
        return NULL;
    }
    if (check_weight(&m->tok_embd, "token_embd") || check_weight(&m->output, "output")) return NULL;
    for (int il = 0; il < m->n_layer; il++)
        for (int j = 0; j < 7; j++) {
            char what[64];
            snprintf(what, sizeof what, "layer %d", il);
            if (check_weight(layer_weight(&m->layers[il], j), what)) return NULL;
        }
    if (n_tp > 1) {
        setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast stays off (shared/ KINDS: it can take GPUs down) */
        if (!getenv("NCCL_RUNTIME_CONNECT")) setenv("NCCL_RUNTIME_CONNECT", "0", 1); /* connect at init, not in a capture */
        if (nccl_load() != 0) return NULL;
    }

    /* ---- memory plan, every GPU, before anything is allocated ---- */
    tern_cuda **rk = calloc((size_t)n_tp, sizeof *rk);
    if (!rk) { tern_set_error("out of memory"); return NULL; }
    for (int r = 0; r < n_tp; r++) {
        if (!(rk[r] = calloc(1, sizeof **rk))) {
            for (int q = 0; q < r; q++) free(rk[q]);
            free(rk);
            tern_set_error("out of memory");
            return NULL;
        }
        rank_dims(rk[r], m, r, n_tp);
        rk[r]->n_ctx = n_ctx;
        rk[r]->ubatch = ubatch;
        rk[r]->kv_q8 = kv_q8;
        rk[r]->att_splits = att_splits_rule(n_ctx);
    }
    int refuse = 0;
    for (int r = 0; r < n_tp && !refuse; r++) {
        uint64_t wb, kvb, sb, max_mat;
        int maxin;
        rank_plan(rk[r], &wb, &kvb, &sb, &max_mat, &maxin);
        rk[r]->b_weights = wb;
        rk[r]->b_kv = kvb;
        rk[r]->b_scratch = sb;
        size_t free_b = 0, total_b = 0;
        if (cudaSetDevice(r) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
            (void)cudaGetLastError();
            tern_set_error("cannot query the memory of GPU %d", r);
            refuse = 1;
            break;
        }
        const uint64_t need = wb + kvb + sb, reserve = (256ull << 20) + (n_tp > 1 ? 512ull << 20 : 0); /* context, cuBLASLt, graphs, NCCL */
        if (verbose)
            fprintf(stderr,
                    "tern: cuda memory plan on GPU %d (%s)%s: weights %.2f GiB + KV cache %.2f GiB (%d positions, %s) + "
                    "scratch %.2f GiB (ubatch %d) = %.2f GiB of %.2f GiB free\n",
                    r, g_name, n_tp > 1 ? ", tensor-parallel shard" : "", gib(wb), gib(kvb), n_ctx,
                    kv_q8 ? "q8_0" : "f16", gib(sb), ubatch,
                    gib(need), gib(free_b));
        if (need + reserve > free_b) {
            tern_set_error("the model does not fit on GPU %d (%s): it needs %.2f GiB (weights %.2f + KV cache %.2f for %d "
                           "positions + scratch %.2f) and %.2f GiB are free; try a smaller -c%s or --device cpu",
                           r, g_name, gib(need), gib(wb), gib(kvb), n_ctx, gib(sb), gib(free_b),
                           n_tp < TERN_TP_MAX ? ", a larger --tp" : "");
            refuse = 1;
        }
    }
    cudaSetDevice(0);
    if (refuse) {
        for (int r = 0; r < n_tp; r++) free(rk[r]);
        free(rk);
        return NULL;
    }

    tern_cuda *g = rk[0];
    g->n_layer_eval = m->n_layer;
    g->use_graph = !(getenv("TERN_CUDA_GRAPH") && !strcmp(getenv("TERN_CUDA_GRAPH"), "0"));
    g->use_mgraph = g->use_graph && n_tp == 1;
    for (int r = 1; r < n_tp; r++) {
        rk[r]->n_layer_eval = m->n_layer;
        rk[r]->use_graph = g->use_graph;
    }
    g->timing = getenv("TERN_CUDA_TIMING") && !strcmp(getenv("TERN_CUDA_TIMING"), "1");
    if (g->timing && (cudaEventCreate(&g->ev0) != cudaSuccess || cudaEventCreate(&g->ev1) != cudaSuccess)) g->timing = 0;
    int fail = 0;
    if (n_tp > 1) {
        g->rk = rk;
        g->pool = tern_pool_new(n_tp);
        if (tern_pool_size(g->pool) < n_tp) { tern_set_error("cannot start %d threads for --tp", n_tp); fail = 1; }
        if (!fail) tern_pool_run(g->pool, setup_job, rk); /* every GPU uploads its shard at once */
    } else if (rank_setup(g) != 0) {
        fail = 1;
    }
    for (int r = 0; r < n_tp && !fail; r++)
        if (rk[r]->errmsg[0]) { tern_set_error("%s", rk[r]->errmsg); fail = 1; }
    if (!fail && n_tp > 1) {
        ncclComm_t comms[TERN_TP_MAX];
        int devs[TERN_TP_MAX];
        for (int r = 0; r < n_tp; r++) devs[r] = r;
        ncclResult_t nr = nccl.CommInitAll(comms, n_tp, devs);
        if (nr != ncclSuccess) {
            tern_set_error("NCCL init over %d GPUs failed: %s", n_tp, nccl.GetErrorString(nr));
            fail = 1;
        } else {
            for (int r = 0; r < n_tp; r++) rk[r]->comm = comms[r];
        }
        cudaSetDevice(0);
    }
    if (n_tp == 1) free(rk);
    if (fail) {
        tern_cuda_free(g);
        return NULL;
    }
    return g;
}

void tern_cuda_free(tern_cuda *g) {
    if (!g) return;
    if (g->timing) {
        fprintf(stderr, "cuda timing: decode %ld steps, %.4f ms/step device time (%s); prefill %ld tokens, %.4f ms/token\n",
                g->n_dec, g->n_dec ? g->t_dec_ms / g->n_dec : 0.0, g->use_graph ? "graph replay" : "un-captured launches",
                g->n_pre_tok, g->n_pre_tok ? g->t_pre_ms / g->n_pre_tok : 0.0);
        cudaEventDestroy(g->ev0);
        cudaEventDestroy(g->ev1);
    }
    if (g->trace)
        fprintf(stderr, "trace: cuda gemv_dp4a_row=%llu gemv_dp4a_rows=%llu gemv_dp4a_tma=%llu gemv_f32_row=%llu "
                        "gemv_f32_rows=%llu gemm=%llu attention_split=%llu attention=%llu attention_q8w=%llu "
                        "rmsnorm_cluster=%llu (rows <= %d: GEMV)\n",
                (unsigned long long)g->tr[TR_DP4A_ROW], (unsigned long long)g->tr[TR_DP4A_ROWS],
                (unsigned long long)g->tr[TR_DP4A_TMA],
                (unsigned long long)g->tr[TR_F32_ROW], (unsigned long long)g->tr[TR_F32_ROWS],
                (unsigned long long)g->tr[TR_GEMM], (unsigned long long)g->tr[TR_ATT_SPLIT],
                (unsigned long long)g->tr[TR_ATT], (unsigned long long)g->tr[TR_ATT_Q8W],
                (unsigned long long)g->tr[TR_RMS_CL], g->gemv_max);
    tern_cuda **rk = g->rk;
    const int n = g->n_rank;
    if (g->pool) tern_pool_free(g->pool);
    if (rk) {
        for (int r = n - 1; r >= 0; r--) {
            rank_free(rk[r]);
            if (r > 0) free(rk[r]);
        }
        free(rk);
    } else {
        rank_free(g);
    }
    cudaSetDevice(0);
    free(g);
}

void tern_cuda_set_verify_fast(tern_cuda *g, int on) {
    if (g->graph_ok || g->n_mgraph) return; /* before the first eval only */
    for (int r = 0; r < g->n_rank; r++) (g->rk ? g->rk[r] : g)->gemv_max = on ? 1 : TCU_MULTI_MAX;
}

void tern_cuda_set_layers(tern_cuda *g, int n_layer) {
    if (n_layer > 0 && n_layer <= g->m->n_layer && !g->graph_ok && !g->n_mgraph) {
        g->n_layer_eval = n_layer;
        for (int r = 1; g->rk && r < g->n_rank; r++) g->rk[r]->n_layer_eval = n_layer;
    }
}

void tern_cuda_plan(const tern_cuda *g, uint64_t *w, uint64_t *kv, uint64_t *s) {
    *w = g->b_weights;
    *kv = g->b_kv;
    *s = g->b_scratch;
}

/* ---- the forward pass of one rank ---- */

/* y (n, n_out) = x · Wᵀ: GEMV for up to TCU_MULTI_MAX tokens (the dp4a kernel on xq for Q4_0/Q8_0 when xq
 * is given, else f32 x32), cuBLASLt on f16 tiles beyond (x16). */
/* The f16 slot s (0: dq, 1: dq1). */
static uint16_t *dq_slot(tern_cuda *g, int s) { return s ? g->dq1 : g->dq; }

static int matmul(tern_cuda *g, const dweight *w, int n, const float *x32, const void *xq, const uint16_t *x16,
                  float *y) {
    if (n <= g->gemv_max) { /* GEMV and its bit-identical multi-column twin: the exact (decode) path */
        if (xq && tcu_gemv_dp4a_supported(w->type)) {
            if (tcu_gemv_dp4a_fam(w->fam, w->type, w->d, w->stride, w->n_in, w->n_out, xq, n, y, g->st)) g->tr[TR_DP4A_TMA]++;
            g->tr[n == 1 ? TR_DP4A_ROW : TR_DP4A_ROWS]++;
        } else {
            if (!tcu_type_supported(w->type)) { /* a repacked layout: the dp4a kernels only */
                tern_set_error("internal: the f32 GEMV got a repacked weight (type %d)", w->type);
                return -1;
            }
            tcu_gemv_multi(w->type, w->d, w->stride, w->n_in, w->n_out, x32, n, y, g->st);
            g->tr[n == 1 ? TR_F32_ROW : TR_F32_ROWS]++;
        }
        return 0;
    }
    g->tr[TR_GEMM]++;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(g->st, &cap);
    if (cap != cudaStreamCaptureStatusNone) {
        /* one slot, in stream order (no prefetch is pending: every forward pass joins them at its end) */
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
    if (nx && nx != g->held[o] && (o == 0 || (uint64_t)nx->n_in * nx->n_out <= g->max_layer_mat)) {
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
static int allreduce(tern_cuda *g, float *buf, size_t count) {
    if (g->n_rank == 1) return 0;
    NC(nccl.AllReduce(buf, buf, count, ncclFloat, ncclSum, g->comm, g->st));
    return 0;
}

/* TP: every rank's (n, nv) logits into rank 0's (n, n_vocab) lfull, in vocabulary order. */
static int gather_logits(tern_cuda *g, int n) {
    if (g->n_rank == 1) return 0;
    NC(nccl.AllGather(g->logits, g->gath, (size_t)n * g->vpad, ncclFloat, g->comm, g->st));
    if (g->rank != 0) return 0;
    const int V = g->m->n_vocab;
    for (int r = 0; r < g->n_rank; r++) {
        const int nv = r < g->n_rank - 1 ? g->vpad : V - (g->n_rank - 1) * g->vpad;
        CU(cudaMemcpy2DAsync(g->lfull + (size_t)r * g->vpad, sizeof(float) * (size_t)V,
                             g->gath + (size_t)r * n * g->vpad, sizeof(float) * (size_t)nv, sizeof(float) * (size_t)nv,
                             (size_t)n, cudaMemcpyDeviceToDevice, g->st));
    }
    return 0;
}

/* g->xq when the GEMV path (n <= TCU_MULTI_MAX) runs one of the matrices a, b, c (NULL: none) with the dp4a
 * kernel: the producer of their input then writes it in the x16 format too; else NULL. */
/* The residual buffer a residual add writes when the stream is in xc (forward). */
static float *other_x(const tern_cuda *g, const float *xc) { return xc == g->x ? g->x2 : g->x; }

static void *want_x16(const tern_cuda *g, int n, const dweight *a, const dweight *b, const dweight *c) {
    if (n > g->gemv_max) return NULL;
    const int any = tcu_gemv_dp4a_supported(a->type) || (b && tcu_gemv_dp4a_supported(b->type)) ||
                    (c && tcu_gemv_dp4a_supported(c->type));
    return any ? g->xq : NULL;
}

/* The largest of the chunk's n positions (the host copy g->hpos). */
static int max_pos(const tern_cuda *g, int n) {
    int m = 0;
    for (int t = 0; t < n; t++)
        if (g->hpos[t] > m) m = g->hpos[t];
    return m;
}

/* The forward pass over tokens already in g->tok / positions in g->pos (device), n tokens; logits of
 * the last row (or all rows) into g->lg (rank 0) and the argmax of the last row into g->next.
 * Per layer (decode): attention RMSNorm with the previous layer's FFN residual add and the x16 activations
 * (1 kernel), q|k|v GEMV (1), RoPE + KV-cache write (1), attention with the x16 of its output (1; 2 with
 * split-K), O GEMV (1), [TP all-reduce], FFN RMSNorm with the attention residual add (1), gate|up GEMV (1),
 * SwiGLU with the x16 output (1), down GEMV (1), [TP all-reduce]: 9 kernels. Weights of different types are
 * uploaded apart (5 GEMVs a layer). */
static int forward(tern_cuda *g, int n, int all_logits) {
    const tern_model *m = g->m;
    const int E = m->n_embd, hd = m->head_dim, Hq = g->nh * hd, Hkv = g->nkv * hd, F = g->nf;
    const int one = n <= g->gemv_max; /* the GEMV path: every token's bits as in its own decode step */
    cudaStream_t st = g->st;
    /* a prefill chunk's attention reads cache rows up to its last position: this chunk's and earlier ones' */
    const int kv_rows = n > TCU_MULTI_MAX ? max_pos(g, n) + 1 : 0;
    const uint64_t rcl0 = tcu_rms_cluster_count(); /* cluster RMSNorm launches of this pass (the trace) */
    /* the (cos, sin) of the pass's positions once, for every layer's RoPE (a decode step or verify chunk) */
    const float *cs = n <= TCU_MULTI_MAX && m->n_rot >= 2 ? g->ropecs : NULL;
    if (cs) tcu_rope_table(g->pos, g->freq, n, m->n_rot, g->ropecs, st);
    tcu_get_rows(g->tok_embd->type, g->tok_embd->d, g->tok_embd->stride, E, g->tok, n, g->x, st);
    float *xc = g->x; /* the residual stream: g->x or g->x2, toggled by each residual add */
    for (int il = 0; il < g->n_layer_eval; il++) {
        const dlayer *l = &g->layers[il];
        uint16_t *kc = (uint16_t *)((char *)g->kc + il * g->kv_layer_bytes);
        uint16_t *vc = (uint16_t *)((char *)g->vc + il * g->kv_layer_bytes);
        /* kv_q8: the int8 plane, then the scales */
        int8_t *kq = (int8_t *)kc, *vq = (int8_t *)vc;
        uint16_t *ksc = (uint16_t *)(kq + (size_t)g->n_ctx * Hkv), *vsc = (uint16_t *)(vq + (size_t)g->n_ctx * Hkv);
        void *xq = want_x16(g, n, l->wq, l->wk, l->wv);
        {
            float *xo = il > 0 ? other_x(g, xc) : xc;
            tcu_add_rmsnorm_to(xc, xo, il > 0 ? g->tmp : NULL, l->attn_norm, m->rms_eps, n, E, one ? g->xn : NULL,
                               one ? NULL : g->x16, xq, st);
            xc = xo;
        }
        float *q = g->q, *k = g->k, *v = g->v;
        if (n == 1 && l->qkv) {
            if (matmul(g, l->qkv, 1, g->xn, xq, g->x16, g->qkv1)) return -1;
            q = g->qkv1;
            k = q + Hq;
            v = k + Hkv;
        } else if (matmul(g, l->wq, n, g->xn, xq, g->x16, q) || matmul(g, l->wk, n, g->xn, xq, g->x16, k) ||
                   matmul(g, l->wv, n, g->xn, xq, g->x16, v)) {
            return -1;
        }
        if (l->bq) tcu_add_bias(q, l->bq, n, Hq, st);
        if (l->bk) tcu_add_bias(k, l->bk, n, Hkv, st);
        if (l->bv) tcu_add_bias(v, l->bv, n, Hkv, st);
        const float sc = 1.0f / sqrtf((float)hd);
        /* the O GEMV's x16 input written by the attention kernel itself (+1.4% Q4_0 tg128 over a separate
         * tcu_quantize_x16, docs/ledger.md; the same bytes) */
        xq = want_x16(g, n, l->wo, NULL, NULL);
        const int att_x16 = xq && n <= TCU_MULTI_MAX;
        const uint64_t q8w0 = tcu_attention_q8w_count(); /* v5 launches below: the trace counts what ran */
        if (att_x16) {
            if (!g->kv_q8) tcu_rope_kv(q, k, v, n, g->nh, g->nkv, hd, m->n_rot, g->pos, g->pos, g->freq, cs, kc, vc, st);
            else tcu_rope_kv_q8(q, k, v, n, g->nh, g->nkv, hd, m->n_rot, g->pos, g->pos, g->freq, cs, kq, ksc, vq, vsc, st);
            tcu_attention_decode_x16(q, g->kv_q8 ? (const void *)kq : (const void *)kc,
                                     g->kv_q8 ? (const void *)vq : (const void *)vc, g->kv_q8 ? ksc : NULL,
                                     g->kv_q8 ? vsc : NULL, n, g->pos, NULL, NULL, 0, g->nh, g->nkv, hd, sc, g->att, g->attws,
                                     g->att_splits, xq, st);
        } else if (!g->kv_q8) {
            tcu_rope_kv(q, k, v, n, g->nh, g->nkv, hd, m->n_rot, g->pos, g->pos, g->freq, cs, kc, vc, st);
            if (n > TCU_MULTI_MAX && g->flash) /* prefill: the flash kernels, told the rows they read (v6b's TMA) */
                tcu_attention_flash_rows(q, kc, vc, kv_rows, n, g->pos, NULL, 0, g->nh, g->nkv, hd, sc, g->att, st);
            else tcu_attention_split(q, kc, vc, n, g->pos, NULL, NULL, 0, g->nh, g->nkv, hd, sc, g->att, g->attws,
                                     g->att_splits, st);
        } else {
            tcu_rope_kv_q8(q, k, v, n, g->nh, g->nkv, hd, m->n_rot, g->pos, g->pos, g->freq, cs, kq, ksc, vq, vsc, st);
            if (n <= TCU_MULTI_MAX) {
                tcu_attention_split_q8(q, kq, vq, ksc, vsc, n, g->pos, NULL, NULL, 0, g->nh, g->nkv, hd, sc, g->att, g->attws,
                                       g->att_splits, st);
            } else { /* prefill: the rows up to the chunk's last position as f16, then the f16 kernels */
                tcu_kv_dequant_q8(kq, ksc, NULL, 0, kv_rows, Hkv, g->kc16, st);
                tcu_kv_dequant_q8(vq, vsc, NULL, 0, kv_rows, Hkv, g->vc16, st);
                if (g->flash) tcu_attention_flash_rows(q, g->kc16, g->vc16, kv_rows, n, g->pos, NULL, 0, g->nh, g->nkv, hd,
                                                       sc, g->att, st);
                else tcu_attention_split(q, g->kc16, g->vc16, n, g->pos, NULL, NULL, 0, g->nh, g->nkv, hd, sc, g->att,
                                         g->attws, g->att_splits, st);
            }
        }
        g->tr[n <= TCU_MULTI_MAX && g->att_splits > 1 ? TR_ATT_SPLIT : TR_ATT]++;
        g->tr[TR_ATT_Q8W] += tcu_attention_q8w_count() - q8w0;
        if (!one) tcu_f32_to_f16(g->att, g->x16, (int64_t)n * Hq, st);
        if (xq && !att_x16) tcu_quantize_x16(g->att, n, Hq, xq, st);
        if (matmul(g, l->wo, n, g->att, xq, g->x16, g->tmp) || allreduce(g, g->tmp, (size_t)n * E)) return -1;
        if (l->bo) tcu_add_bias(g->tmp, l->bo, n, E, st);

        xq = want_x16(g, n, l->gate, l->up, NULL);
        {
            float *xo = other_x(g, xc);
            tcu_add_rmsnorm_to(xc, xo, g->tmp, l->ffn_norm, m->rms_eps, n, E, one ? g->xn : NULL, one ? NULL : g->x16,
                               xq, st);
            xc = xo;
        }
        float *gp = g->g, *up = g->u;
        const int gu_rows = g->pf_gu && l->gu && n > g->gemv_max; /* one GEMM, its rows to the f16 SwiGLU */
        if (n == 1 && l->gu) {
            if (matmul(g, l->gu, 1, g->xn, xq, g->x16, g->gu1)) return -1;
            gp = g->gu1;
            up = gp + F;
        } else if (gu_rows) {
            if (matmul(g, l->gu, n, g->xn, NULL, g->x16, g->g)) return -1;
        } else if (matmul(g, l->gate, n, g->xn, xq, g->x16, gp) || matmul(g, l->up, n, g->xn, xq, g->x16, up)) {
            return -1;
        }
        xq = want_x16(g, n, l->down, NULL, NULL);
        if (gu_rows) tcu_swiglu_rows(g->g, n, F, g->x16, st); /* the down GEMM reads x16 only */
        else if (xq) tcu_swiglu_x16(gp, up, n, F, xq, st);
        else tcu_swiglu(gp, up, (int64_t)n * F, one ? NULL : g->x16, st);
        if (matmul(g, l->down, n, gp, xq, g->x16, g->tmp) || allreduce(g, g->tmp, (size_t)n * E)) return -1;
    }
    /* the output norm takes the last layer's FFN residual add (all rows, or only the row that is read) */
    const int V = m->n_vocab;
    void *xq = want_x16(g, all_logits ? n : 1, g->output, NULL, NULL);
    if (all_logits && n > 1) {
        tcu_add_rmsnorm_to(xc, other_x(g, xc), g->tmp, g->output_norm, m->rms_eps, n, E, one ? g->xn : NULL,
                           one ? NULL : g->x16, xq, st);
        if (matmul(g, g->output, n, g->xn, xq, g->x16, g->logits) || gather_logits(g, n)) return -1;
        if (g->rank == 0) tcu_argmax(g->lg + (size_t)(n - 1) * V, V, g->next, g->amkeys, st);
        /* every row's argmax too (a verify pass's, in its graph): tern_cuda_eval_argmax copies them */
        if (g->rank == 0 && n <= TCU_MULTI_MAX) tcu_argmax_rows(g->lg, V, n, (size_t)V, g->ids, g->amkeys, st);
    } else {
        tcu_add_rmsnorm_to(xc + (size_t)(n - 1) * E, other_x(g, xc) + (size_t)(n - 1) * E, g->tmp + (size_t)(n - 1) * E,
                           g->output_norm, m->rms_eps, 1, E, g->xn, NULL, xq, st);
        if (xq) {
            if (tcu_gemv_dp4a_fam(g->output->fam, g->output->type, g->output->d, g->output->stride, E, g->nv, xq, 1,
                                  g->logits, st))
                g->tr[TR_DP4A_TMA]++;
        } else if (tcu_type_supported(g->output->type))
            tcu_gemv(g->output->type, g->output->d, g->output->stride, E, g->nv, g->xn, g->logits, st);
        else { tern_set_error("internal: the f32 GEMV got a repacked output head"); return -1; }
        g->tr[xq ? TR_DP4A_ROW : TR_F32_ROW]++;
        if (gather_logits(g, 1)) return -1;
        if (g->rank == 0) tcu_argmax(g->lg, V, g->next, g->amkeys, st);
    }
    g->tr[TR_RMS_CL] += tcu_rms_cluster_count() - rcl0;
    /* join the dequant prefetches (a pass that stops early, tern_cuda_set_layers, leaves one pending) */
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(st, &cap);
    if (cap == cudaStreamCaptureStatusNone) {
        CU(cudaStreamWaitEvent(st, g->ready[0], 0));
        CU(cudaStreamWaitEvent(st, g->ready[1], 0));
    }
    return 0;
}

/* Capture forward(g, n, all_logits) on g->st into *exec (instantiated). tr (TR_N) gets the trace counts of
 * one pass, which each replay adds; g->tr is left as before the capture, also when it fails. */
static int capture_forward(tern_cuda *g, int n, int all_logits, cudaGraphExec_t *exec, uint64_t *tr) {
    uint64_t before[TR_N];
    memcpy(before, g->tr, sizeof before);
    cudaGraph_t graph = NULL;
    CU(cudaStreamBeginCapture(g->st, cudaStreamCaptureModeThreadLocal));
    const int rc = forward(g, n, all_logits);
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

/* Copy tokens and positions, run the forward pass (graph replay for one token), leave the results on
 * the device. *timed: whether the events bracket this call. One rank, on its own thread. */
static int run(tern_cuda *g, const int32_t *tokens, int n, int pos0, int all_logits, int *timed) {
    if (n < 1 || n > g->ubatch) { tern_set_error("tern_cuda_eval: %d tokens (ubatch %d)", n, g->ubatch); return -1; }
    if (pos0 < 0 || pos0 + n > g->n_ctx) { tern_set_error("tern_cuda_eval: positions beyond the context"); return -1; }
    if (g->n_rank > 1) CU(cudaSetDevice(g->dev));
    int32_t *pos = g->hpos; /* host staging (ubatch ints), not a stack array of up to 256 KiB */
    for (int i = 0; i < n; i++) pos[i] = pos0 + i;
    CU(cudaMemcpyAsync(g->tok, tokens, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice, g->st));
    CU(cudaMemcpyAsync(g->pos, pos, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice, g->st));
    /* TP: the first decode step runs eagerly (NCCL sets up its decode-sized channels outside a capture) */
    const int capture = n == 1 && g->use_graph && !g->graph_ok && (g->n_rank == 1 || g->warm);
    if (n == 1) g->warm = 1;
    *timed = g->timing && !capture;
    if (*timed) CU(cudaEventRecord(g->ev0, g->st));
    if (n == 1 && g->use_graph && (g->graph_ok || capture)) {
        if (!g->graph_ok) {
            if (capture_forward(g, 1, 0, &g->graph, g->tr_graph)) return -1;
            g->graph_ok = 1;
        }
        CU(cudaGraphLaunch(g->graph, g->st));
        for (int k = 0; k < TR_N; k++) g->tr[k] += g->tr_graph[k];
    } else if (n > 1 && n <= g->gemv_max && g->use_mgraph) { /* the GEMV path (not --verify fast's GEMMs) */
        const int a = all_logits != 0;
        if (!g->mgraph_ok[a][n]) { /* the same launches as forward(g, n, all_logits) each time: positions and
                                    * tokens are device data, the attention grid is fixed per context */
            if (capture_forward(g, n, all_logits, &g->mgraph[a][n], g->mtr[a][n])) return -1;
            g->mgraph_ok[a][n] = 1;
            g->n_mgraph++;
        }
        CU(cudaGraphLaunch(g->mgraph[a][n], g->st));
        for (int k = 0; k < TR_N; k++) g->tr[k] += g->mtr[a][n][k];
    } else if (forward(g, n, all_logits) != 0) {
        return -1;
    }
    CU(cudaGetLastError());
    return 0;
}

typedef struct {
    tern_cuda *g;
    const int32_t *tokens;
    int n, pos0, all_logits, timed;
    int rc[TERN_TP_MAX];
} run_job;

static void run_rank(void *arg, int ith, int nth) {
    (void)nth;
    run_job *j = arg;
    tern_cuda *g = j->g->rk[ith];
    int timed = 0;
    j->rc[ith] = run(g, j->tokens, j->n, j->pos0, j->all_logits, ith == 0 ? &j->timed : &timed);
    if (j->rc[ith]) snprintf(g->errmsg, sizeof g->errmsg, "%s", tern_last_error());
}

/* run() on every rank at once (TP), or on the one GPU. */
static int run_all(tern_cuda *g, const int32_t *tokens, int n, int pos0, int all_logits, int *timed) {
    if (g->n_rank == 1) return run(g, tokens, n, pos0, all_logits, timed);
    run_job j = {g, tokens, n, pos0, all_logits, 0, {0}};
    tern_pool_run(g->pool, run_rank, &j);
    for (int r = 0; r < g->n_rank; r++)
        if (j.rc[r]) {
            tern_set_error("GPU %d: %s", r, g->rk[r]->errmsg);
            return -1;
        }
    *timed = j.timed;
    return 0;
}

/* Wait for the stream (rank 0's: at TP its last op is the all-gather, which waits for every rank); account
 * the call's device time. */
static int finish(tern_cuda *g, int n, int timed) {
    if (timed) CU(cudaEventRecord(g->ev1, g->st));
    CU(cudaStreamSynchronize(g->st));
    if (timed) {
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, g->ev0, g->ev1));
        if (n == 1) { g->t_dec_ms += ms; g->n_dec++; }
        else { g->t_pre_ms += ms; g->n_pre_tok += n; }
    }
    return 0;
}

int tern_cuda_eval(tern_cuda *g, const int32_t *tokens, int n, int pos0, float *logits, int all_logits, int32_t *next) {
    int timed = 0;
    if (run_all(g, tokens, n, pos0, all_logits, &timed) != 0) return -1;
    const size_t V = (size_t)g->m->n_vocab;
    if (logits) {
        const size_t rows = all_logits && n > 1 ? (size_t)n : 1;
        CU(cudaMemcpyAsync(logits, g->lg, sizeof(float) * V * rows, cudaMemcpyDeviceToHost, g->st));
    }
    if (next) CU(cudaMemcpyAsync(next, g->next, sizeof(int32_t), cudaMemcpyDeviceToHost, g->st));
    return finish(g, n, timed);
}

int tern_cuda_eval_argmax(tern_cuda *g, const int32_t *tokens, int n, int pos0, int32_t *ids) {
    int timed = 0;
    if (run_all(g, tokens, n, pos0, 1, &timed) != 0) return -1;
    const size_t V = (size_t)g->m->n_vocab;
    /* one token: the pass's own argmax (g->next); 2..16: forward's per-row argmax (g->ids); more: a loop */
    if (n > TCU_MULTI_MAX)
        for (int r = 0; r < n; r++) tcu_argmax(g->lg + (size_t)r * V, (int)V, g->ids + r, g->amkeys, g->st);
    CU(cudaGetLastError());
    CU(cudaMemcpyAsync(ids, n == 1 ? g->next : g->ids, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost, g->st));
    return finish(g, n, timed);
}

int tern_cuda_prepare_verify(tern_cuda *g, int max_n, double *ms) {
    const double t0 = tern_time_s();
    int k = 0;
    if (g->use_mgraph)
        for (int n = 2; n <= max_n && n <= g->gemv_max && n <= g->ubatch; n++) {
            if (g->mgraph_ok[1][n]) continue;
            if (capture_forward(g, n, 1, &g->mgraph[1][n], g->mtr[1][n])) return -1;
            g->mgraph_ok[1][n] = 1;
            g->n_mgraph++;
            k++;
        }
    if (ms) *ms = 1e3 * (tern_time_s() - t0);
    return k;
}

int tern_cuda_eval_sample(tern_cuda *g, const int32_t *tokens, int n, int pos0, const tern_cuda_sampling *sp,
                          int32_t *next) {
    if (sp->top_k < 1 || sp->top_k > TERN_CUDA_SAMPLE_KMAX || sp->top_k >= g->m->n_vocab || !(sp->temp > 0.0f)) {
        tern_set_error("tern_cuda_eval_sample: top_k %d / temp %g outside the device sampler's range", sp->top_k,
                       (double)sp->temp);
        return -1;
    }
    if (sp->n_pen > g->pen_cap) {
        int32_t *np = NULL;
        CU(cudaMalloc((void **)&np, sizeof(int32_t) * (size_t)sp->n_pen));
        cudaFree(g->pen);
        g->pen = np;
        g->pen_cap = sp->n_pen;
    }
    int timed = 0;
    if (run_all(g, tokens, n, pos0, 0, &timed) != 0) return -1;
    if (sp->n_pen > 0)
        CU(cudaMemcpyAsync(g->pen, sp->pen_ids, sizeof(int32_t) * (size_t)sp->n_pen, cudaMemcpyHostToDevice, g->st));
    CU(cudaMemcpyAsync(g->ud, &sp->u, sizeof(double), cudaMemcpyHostToDevice, g->st));
    tcu_sample(g->lg, g->m->n_vocab, g->pen, sp->n_pen, sp->penalty, sp->top_k, sp->top_p, sp->min_p, sp->temp,
               g->ud, g->samp, g->next, g->st);
    CU(cudaGetLastError());
    CU(cudaMemcpyAsync(next, g->next, sizeof(int32_t), cudaMemcpyDeviceToHost, g->st));
    if (finish(g, n, timed) != 0) return -1;
    if (*next < 0) { tern_set_error("sampler: all logits are NaN"); return -1; }
    return 0;
}

#endif
