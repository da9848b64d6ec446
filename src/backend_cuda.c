/* backend_cuda.c: the llama forward pass on the GPU, as a sequence of src/cuda/ kernel launches
 * (the same op order as forward.c's CPU pass), plus the memory plan and the CUDA graph of a decode step.
 * See backend_cuda.h for the contract and the numerics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "tern.h"
#include "util.h"

#ifndef TERN_CUDA

int tern_cuda_available(void) { return 0; }
const char *tern_cuda_device_name(void) { return ""; }
tern_cuda *tern_cuda_new(const tern_model *m, int n_ctx, int ubatch, int verbose) {
    (void)m; (void)n_ctx; (void)ubatch; (void)verbose;
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

#include "cuda/tcu.h"

_Static_assert(TERN_CUDA_SAMPLE_KMAX == TCU_SAMPLE_KMAX, "backend_cuda.h and tcu.h disagree on the device top_k limit");

typedef struct {
    void *d;           /* device rows, stride bytes apart */
    int type;
    int64_t n_in, n_out;
    size_t stride;
    const void *host;  /* the mmapped source (tied weights share one upload) */
} dweight;

typedef struct {
    float *attn_norm, *ffn_norm, *bq, *bk, *bv, *bo;
    dweight *wq, *wk, *wv, *wo, *gate, *up, *down;
} dlayer;

struct tern_cuda {
    const tern_model *m;
    int n_ctx, ubatch;
    cudaStream_t st;
    tcu_blas *blas;
    dweight *w;        /* every uploaded matrix */
    int n_w;
    dlayer *layers;
    dweight *tok_embd, *output;
    float *output_norm, *freq;
    uint16_t *kc, *vc; /* (n_layer, n_ctx, Hkv) f16 */
    /* scratch for ubatch tokens */
    float *x, *xn, *tmp, *q, *att, *k, *v, *g, *u, *logits;
    uint16_t *x16, *dq;   /* f16 GEMM input (ubatch, max(E, Hq, n_ff)); dequantized weight (max n_out*n_in) */
    int32_t *tok, *pos, *next, *ids; /* ids: per-row argmax (ubatch) */
    int32_t *hpos;                   /* host: positions of the chunk being copied (ubatch) */
    /* device sampler (tcu_sample): penalty ids (pen_cap), the uniform draw, an n_vocab scratch */
    int32_t *pen;
    int pen_cap;
    double *ud;
    float *samp;
    uint64_t b_weights, b_kv, b_scratch;
    cudaGraphExec_t graph;
    int graph_ok, use_graph;
    int n_layer_eval; /* layers the forward pass runs (tern_cuda_set_layers) */
    /* TERN_CUDA_TIMING=1: device time of each eval, from events around its launches (printed at free) */
    int timing;
    cudaEvent_t ev0, ev1;
    double t_dec_ms, t_pre_ms;
    long n_dec, n_pre_tok;
};

static int g_avail = -1;
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
    g_avail = 1;
    return 1;
}

const char *tern_cuda_device_name(void) { return tern_cuda_available() ? g_name : ""; }

#define CU(call)                                                                                     \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            tern_set_error("CUDA error %s at %s:%d (%s)", cudaGetErrorName(e_), __FILE__, __LINE__, #call); \
            (void)cudaGetLastError(); /* not left for the next call's cudaGetLastError to report */  \
            return -1;                                                                               \
        }                                                                                            \
    } while (0)

static size_t pad16(size_t b) { return (b + 15) & ~(size_t)15; }

static const tern_weight *layer_weight(const tern_layer *l, int j) {
    const tern_weight *ws[7] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
    return ws[j];
}

/* Bytes of one matrix on the device. */
static uint64_t dweight_bytes(const tern_weight *w) { return (uint64_t)pad16(w->row_bytes) * (uint64_t)w->n_out; }

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

static dweight *upload(tern_cuda *g, const tern_weight *w) {
    for (int i = 0; i < g->n_w; i++)
        if (g->w[i].host == w->data && g->w[i].type == (int)w->type && g->w[i].n_out == w->n_out) return &g->w[i];
    dweight *d = &g->w[g->n_w++];
    d->type = (int)w->type;
    d->n_in = w->n_in;
    d->n_out = w->n_out;
    d->stride = pad16(w->row_bytes);
    d->host = w->data;
    if (cudaMalloc(&d->d, d->stride * (size_t)w->n_out) != cudaSuccess) return NULL;
    if (cudaMemcpy2D(d->d, d->stride, w->data, w->row_bytes, w->row_bytes, (size_t)w->n_out, cudaMemcpyHostToDevice) !=
        cudaSuccess)
        return NULL;
    if (d->stride != w->row_bytes) /* padding bytes: defined, never read as data */
        if (cudaMemset2D((char *)d->d + w->row_bytes, d->stride, 0, d->stride - w->row_bytes, (size_t)w->n_out) != cudaSuccess)
            return NULL;
    return d;
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

tern_cuda *tern_cuda_new(const tern_model *m, int n_ctx, int ubatch, int verbose) {
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
    if (check_weight(&m->tok_embd, "token_embd") || check_weight(&m->output, "output")) return NULL;
    for (int il = 0; il < m->n_layer; il++)
        for (int j = 0; j < 7; j++) {
            char what[64];
            snprintf(what, sizeof what, "layer %d", il);
            if (check_weight(layer_weight(&m->layers[il], j), what)) return NULL;
        }

    /* ---- memory plan ---- */
    const int E = m->n_embd, hd = m->head_dim, Hq = m->n_head * hd, Hkv = m->n_head_kv * hd, F = m->n_ff;
    const int V = m->n_vocab, B = ubatch;
    uint64_t wb = dweight_bytes(&m->tok_embd), max_mat = (uint64_t)m->tok_embd.n_in * m->tok_embd.n_out;
    if (m->output.data != m->tok_embd.data) wb += dweight_bytes(&m->output);
    if ((uint64_t)m->output.n_in * m->output.n_out > max_mat) max_mat = (uint64_t)m->output.n_in * m->output.n_out;
    for (int il = 0; il < m->n_layer; il++) {
        for (int j = 0; j < 7; j++) {
            const tern_weight *w = layer_weight(&m->layers[il], j);
            wb += dweight_bytes(w);
            if ((uint64_t)w->n_in * w->n_out > max_mat) max_mat = (uint64_t)w->n_in * w->n_out;
        }
        wb += sizeof(float) * (2 * (uint64_t)E + (m->layers[il].bq ? Hq : 0) + (m->layers[il].bk ? Hkv : 0) + (m->layers[il].bv ? Hkv : 0) +
                               (m->layers[il].bo ? E : 0));
    }
    wb += sizeof(float) * ((uint64_t)E + m->n_rot / 2 + 1);
    const uint64_t kvb = 2ull * sizeof(uint16_t) * m->n_layer * (uint64_t)n_ctx * Hkv;
    int maxin = E > Hq ? E : Hq;
    if (F > maxin) maxin = F;
    const size_t ws_bytes = 32u << 20;
    uint64_t sb = sizeof(float) * (uint64_t)B * (3ull * E + 2ull * Hq + 2ull * Hkv + 2ull * F + V) +
                  sizeof(uint16_t) * ((uint64_t)B * maxin + max_mat) + sizeof(int32_t) * (3ull * B + 1 + 4096) +
                  sizeof(double) + sizeof(float) * (uint64_t)V + ws_bytes;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        tern_set_error("cannot query device memory");
        return NULL;
    }
    const uint64_t need = wb + kvb + sb, reserve = 256ull << 20; /* CUDA context, cuBLASLt, graphs */
    if (verbose)
        fprintf(stderr,
                "tern: cuda memory plan on %s: weights %.2f GiB + KV cache %.2f GiB (%d positions, f16) + scratch "
                "%.2f GiB (ubatch %d) = %.2f GiB of %.2f GiB free\n",
                g_name, gib(wb), gib(kvb), n_ctx, gib(sb), B, gib(need), gib(free_b));
    if (need + reserve > free_b) {
        tern_set_error("the model does not fit on %s: it needs %.2f GiB (weights %.2f + KV cache %.2f for %d positions + "
                       "scratch %.2f) and %.2f GiB are free; try a smaller -c or --device cpu",
                       g_name, gib(need), gib(wb), gib(kvb), n_ctx, gib(sb), gib(free_b));
        return NULL;
    }

    tern_cuda *g = calloc(1, sizeof *g);
    if (!g) { tern_set_error("out of memory"); return NULL; }
    g->m = m;
    g->n_layer_eval = m->n_layer;
    g->n_ctx = n_ctx;
    g->ubatch = B;
    g->b_weights = wb;
    g->b_kv = kvb;
    g->b_scratch = sb;
    g->use_graph = !(getenv("TERN_CUDA_GRAPH") && !strcmp(getenv("TERN_CUDA_GRAPH"), "0"));
    g->timing = getenv("TERN_CUDA_TIMING") && !strcmp(getenv("TERN_CUDA_TIMING"), "1");
    if (g->timing && (cudaEventCreate(&g->ev0) != cudaSuccess || cudaEventCreate(&g->ev1) != cudaSuccess)) g->timing = 0;
    int fail = 0;
    if (cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking) != cudaSuccess) fail = 1;
    char err[256] = "";
    if (!fail && !(g->blas = tcu_blas_new(ws_bytes, err))) fail = 1;
    g->w = calloc((size_t)m->n_layer * 7 + 2, sizeof *g->w);
    g->layers = calloc((size_t)m->n_layer, sizeof *g->layers);
    if (!g->w || !g->layers) fail = 1;
    if (!fail && (!(g->tok_embd = upload(g, &m->tok_embd)) || !(g->output = upload(g, &m->output)))) fail = 1;
    for (int il = 0; il < m->n_layer && !fail; il++) {
        const tern_layer *l = &m->layers[il];
        dlayer *d = &g->layers[il];
        dweight **slots[7] = {&d->wq, &d->wk, &d->wv, &d->wo, &d->gate, &d->up, &d->down};
        for (int j = 0; j < 7 && !fail; j++)
            if (!(*slots[j] = upload(g, layer_weight(l, j)))) fail = 1;
        if (fail) break;
        if (!(d->attn_norm = upload_f32(l->attn_norm, E)) || !(d->ffn_norm = upload_f32(l->ffn_norm, E))) fail = 1;
        if ((l->bq && !(d->bq = upload_f32(l->bq, Hq))) || (l->bk && !(d->bk = upload_f32(l->bk, Hkv))) ||
            (l->bv && !(d->bv = upload_f32(l->bv, Hkv))) || (l->bo && !(d->bo = upload_f32(l->bo, E))))
            fail = 1;
    }
    if (!fail && !(g->output_norm = upload_f32(m->output_norm, E))) fail = 1;
    if (!fail) {
        float *fq = tern_xmalloc(sizeof(float) * (size_t)(m->n_rot / 2 + 1));
        cpu_rope_freqs(fq, m->n_rot, m->rope_base, m->rope_scale, m->rope_factors);
        if (!(g->freq = upload_f32(fq, (size_t)(m->n_rot / 2 + 1)))) fail = 1;
        free(fq);
    }
    if (!fail) {
        g->kc = dalloc(kvb / 2, &fail);
        g->vc = dalloc(kvb / 2, &fail);
        g->x = dalloc(sizeof(float) * (size_t)B * E, &fail);
        g->xn = dalloc(sizeof(float) * (size_t)B * E, &fail);
        g->tmp = dalloc(sizeof(float) * (size_t)B * E, &fail);
        g->q = dalloc(sizeof(float) * (size_t)B * Hq, &fail);
        g->att = dalloc(sizeof(float) * (size_t)B * Hq, &fail);
        g->k = dalloc(sizeof(float) * (size_t)B * Hkv, &fail);
        g->v = dalloc(sizeof(float) * (size_t)B * Hkv, &fail);
        g->g = dalloc(sizeof(float) * (size_t)B * F, &fail);
        g->u = dalloc(sizeof(float) * (size_t)B * F, &fail);
        g->logits = dalloc(sizeof(float) * (size_t)B * V, &fail);
        g->x16 = dalloc(sizeof(uint16_t) * (size_t)B * maxin, &fail);
        g->dq = dalloc(sizeof(uint16_t) * (size_t)max_mat, &fail);
        g->tok = dalloc(sizeof(int32_t) * (size_t)B, &fail);
        g->pos = dalloc(sizeof(int32_t) * (size_t)B, &fail);
        g->next = dalloc(sizeof(int32_t), &fail);
        g->ids = dalloc(sizeof(int32_t) * (size_t)B, &fail);
        if (!(g->hpos = malloc(sizeof(int32_t) * (size_t)B))) fail = 1;
        g->pen_cap = 4096;
        g->pen = dalloc(sizeof(int32_t) * (size_t)g->pen_cap, &fail);
        g->ud = dalloc(sizeof(double), &fail);
        g->samp = dalloc(sizeof(float) * (size_t)V, &fail);
    }
    if (fail) {
        const cudaError_t e_last = cudaGetLastError(); /* read (and cleared) whichever message is used */
        tern_set_error("CUDA setup failed: %s", err[0] ? err : cudaGetErrorString(e_last));
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
    if (g->graph_ok) cudaGraphExecDestroy(g->graph);
    for (int i = 0; i < g->n_w; i++) cudaFree(g->w[i].d);
    if (g->layers)
        for (int il = 0; il < g->m->n_layer; il++) {
            dlayer *d = &g->layers[il];
            cudaFree(d->attn_norm); cudaFree(d->ffn_norm);
            cudaFree(d->bq); cudaFree(d->bk); cudaFree(d->bv); cudaFree(d->bo);
        }
    void *bufs[] = {g->output_norm, g->freq, g->kc, g->vc, g->x, g->xn, g->tmp, g->q, g->att, g->k, g->v, g->g, g->u,
                    g->logits, g->x16, g->dq, g->tok, g->pos, g->next, g->pen, g->ud, g->samp, g->ids};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
    if (g->blas) tcu_blas_free(g->blas);
    if (g->st) cudaStreamDestroy(g->st);
    free(g->hpos);
    free(g->w);
    free(g->layers);
    free(g);
}

void tern_cuda_set_layers(tern_cuda *g, int n_layer) {
    if (n_layer > 0 && n_layer <= g->m->n_layer && !g->graph_ok) g->n_layer_eval = n_layer;
}

void tern_cuda_plan(const tern_cuda *g, uint64_t *w, uint64_t *kv, uint64_t *s) {
    *w = g->b_weights;
    *kv = g->b_kv;
    *s = g->b_scratch;
}

/* y (n, n_out) = x · Wᵀ: GEMV for up to TCU_MULTI_MAX tokens (x32), cuBLASLt on f16 tiles beyond (x16). */
static int matmul(tern_cuda *g, const dweight *w, int n, const float *x32, const uint16_t *x16, float *y) {
    if (n <= TCU_MULTI_MAX) { /* GEMV and its bit-identical multi-column twin: the exact (decode) path */
        tcu_gemv_multi(w->type, w->d, w->stride, w->n_in, w->n_out, x32, n, y, g->st);
        return 0;
    }
    tcu_dequant_f16(w->type, w->d, w->stride, w->n_in, w->n_out, g->dq, g->st);
    if (tcu_gemm_f16(g->blas, g->dq, x16, y, n, w->n_in, w->n_out, g->st) != 0) {
        tern_set_error("cuBLASLt refused a %d x %lld x %lld GEMM", n, (long long)w->n_in, (long long)w->n_out);
        return -1;
    }
    return 0;
}

/* The forward pass over tokens already in g->tok / positions in g->pos (device), n tokens; logits of
 * the last row (or all rows) into g->logits and the argmax of the last row into g->next. */
static int forward(tern_cuda *g, int n, int all_logits) {
    const tern_model *m = g->m;
    const int E = m->n_embd, hd = m->head_dim, Hq = m->n_head * hd, Hkv = m->n_head_kv * hd, F = m->n_ff;
    const int one = n <= TCU_MULTI_MAX; /* the GEMV path: every token's bits as in its own decode step */
    cudaStream_t st = g->st;
    tcu_get_rows(g->tok_embd->type, g->tok_embd->d, g->tok_embd->stride, E, g->tok, n, g->x, st);
    for (int il = 0; il < g->n_layer_eval; il++) {
        const dlayer *l = &g->layers[il];
        uint16_t *kc = g->kc + (size_t)il * g->n_ctx * Hkv, *vc = g->vc + (size_t)il * g->n_ctx * Hkv;
        tcu_rmsnorm(g->x, l->attn_norm, m->rms_eps, n, E, one ? g->xn : NULL, one ? NULL : g->x16, st);
        if (matmul(g, l->wq, n, g->xn, g->x16, g->q) || matmul(g, l->wk, n, g->xn, g->x16, g->k) ||
            matmul(g, l->wv, n, g->xn, g->x16, g->v))
            return -1;
        if (l->bq) tcu_add_bias(g->q, l->bq, n, Hq, st);
        if (l->bk) tcu_add_bias(g->k, l->bk, n, Hkv, st);
        if (l->bv) tcu_add_bias(g->v, l->bv, n, Hkv, st);
        tcu_rope(g->q, n, m->n_head, hd, m->n_rot, g->pos, g->freq, st);
        tcu_rope(g->k, n, m->n_head_kv, hd, m->n_rot, g->pos, g->freq, st);
        tcu_kv_write(g->k, g->v, kc, vc, n, Hkv, g->pos, st);
        tcu_attention(g->q, kc, vc, n, g->pos, m->n_head, m->n_head_kv, hd, 1.0f / sqrtf((float)hd), g->att, st);
        if (!one) tcu_f32_to_f16(g->att, g->x16, (int64_t)n * Hq, st);
        if (matmul(g, l->wo, n, g->att, g->x16, g->tmp)) return -1;
        if (l->bo) tcu_add_bias(g->tmp, l->bo, n, E, st);
        tcu_add(g->x, g->tmp, (int64_t)n * E, st);

        tcu_rmsnorm(g->x, l->ffn_norm, m->rms_eps, n, E, one ? g->xn : NULL, one ? NULL : g->x16, st);
        if (matmul(g, l->gate, n, g->xn, g->x16, g->g) || matmul(g, l->up, n, g->xn, g->x16, g->u)) return -1;
        tcu_swiglu(g->g, g->u, (int64_t)n * F, one ? NULL : g->x16, st);
        if (matmul(g, l->down, n, g->g, g->x16, g->tmp)) return -1;
        tcu_add(g->x, g->tmp, (int64_t)n * E, st);
    }
    const int V = m->n_vocab;
    if (all_logits && n > 1) {
        tcu_rmsnorm(g->x, g->output_norm, m->rms_eps, n, E, one ? g->xn : NULL, one ? NULL : g->x16, st);
        if (matmul(g, g->output, n, g->xn, g->x16, g->logits)) return -1;
        tcu_argmax(g->logits + (size_t)(n - 1) * V, V, g->next, st);
    } else {
        tcu_rmsnorm(g->x + (size_t)(n - 1) * E, g->output_norm, m->rms_eps, 1, E, g->xn, NULL, st);
        tcu_gemv(g->output->type, g->output->d, g->output->stride, E, V, g->xn, g->logits, st);
        tcu_argmax(g->logits, V, g->next, st);
    }
    return 0;
}

/* Copy tokens and positions, run the forward pass (graph replay for one token), leave the results on
 * the device. *timed: whether the events bracket this call. */
static int run(tern_cuda *g, const int32_t *tokens, int n, int pos0, int all_logits, int *timed) {
    if (n < 1 || n > g->ubatch) { tern_set_error("tern_cuda_eval: %d tokens (ubatch %d)", n, g->ubatch); return -1; }
    if (pos0 < 0 || pos0 + n > g->n_ctx) { tern_set_error("tern_cuda_eval: positions beyond the context"); return -1; }
    int32_t *pos = g->hpos; /* host staging (ubatch ints), not a stack array of up to 256 KiB */
    for (int i = 0; i < n; i++) pos[i] = pos0 + i;
    CU(cudaMemcpyAsync(g->tok, tokens, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice, g->st));
    CU(cudaMemcpyAsync(g->pos, pos, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice, g->st));
    *timed = g->timing && !(n == 1 && g->use_graph && !g->graph_ok); /* not the capturing call */
    if (*timed) CU(cudaEventRecord(g->ev0, g->st));
    if (n == 1 && g->use_graph) {
        if (!g->graph_ok) {
            cudaGraph_t graph = NULL;
            CU(cudaStreamBeginCapture(g->st, cudaStreamCaptureModeThreadLocal));
            int rc = forward(g, 1, 0);
            cudaError_t e = cudaStreamEndCapture(g->st, &graph);
            if (rc != 0 && graph) cudaGraphDestroy(graph); /* not leaked on a failed capture */
            if (rc != 0) return -1;
            CU(e);
            e = cudaGraphInstantiate(&g->graph, graph, 0);
            cudaGraphDestroy(graph);
            CU(e);
            g->graph_ok = 1;
        }
        CU(cudaGraphLaunch(g->graph, g->st));
    } else if (forward(g, n, all_logits) != 0) {
        return -1;
    }
    CU(cudaGetLastError());
    return 0;
}

/* Wait for the stream; account the call's device time. */
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
    if (run(g, tokens, n, pos0, all_logits, &timed) != 0) return -1;
    const size_t V = (size_t)g->m->n_vocab;
    if (logits) {
        const size_t rows = all_logits && n > 1 ? (size_t)n : 1;
        CU(cudaMemcpyAsync(logits, g->logits, sizeof(float) * V * rows, cudaMemcpyDeviceToHost, g->st));
    }
    if (next) CU(cudaMemcpyAsync(next, g->next, sizeof(int32_t), cudaMemcpyDeviceToHost, g->st));
    return finish(g, n, timed);
}

int tern_cuda_eval_argmax(tern_cuda *g, const int32_t *tokens, int n, int pos0, int32_t *ids) {
    int timed = 0;
    if (run(g, tokens, n, pos0, 1, &timed) != 0) return -1;
    const size_t V = (size_t)g->m->n_vocab;
    for (int r = 0; r < n; r++) tcu_argmax(g->logits + (size_t)r * V, (int)V, g->ids + r, g->st);
    CU(cudaGetLastError());
    CU(cudaMemcpyAsync(ids, g->ids, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost, g->st));
    return finish(g, n, timed);
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
    if (run(g, tokens, n, pos0, 0, &timed) != 0) return -1;
    if (sp->n_pen > 0)
        CU(cudaMemcpyAsync(g->pen, sp->pen_ids, sizeof(int32_t) * (size_t)sp->n_pen, cudaMemcpyHostToDevice, g->st));
    CU(cudaMemcpyAsync(g->ud, &sp->u, sizeof(double), cudaMemcpyHostToDevice, g->st));
    tcu_sample(g->logits, g->m->n_vocab, g->pen, sp->n_pen, sp->penalty, sp->top_k, sp->top_p, sp->min_p, sp->temp,
               g->ud, g->samp, g->next, g->st);
    CU(cudaGetLastError());
    CU(cudaMemcpyAsync(next, g->next, sizeof(int32_t), cudaMemcpyDeviceToHost, g->st));
    if (finish(g, n, timed) != 0) return -1;
    if (*next < 0) { tern_set_error("sampler: all logits are NaN"); return -1; }
    return 0;
}

#endif
