/* backend_cuda.c: the CUDA backend's devices and memory: which GPUs there are, the model's weights uploaded to
 * them once (owned by the model, shared by every engine), the memory plan, an engine's KV pool and scratch on each
 * GPU of a tensor-parallel split. exec.c runs the graph over them. backend_cuda.h has the contract and numerics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
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
int tern_cuda_gemv_order(void) { return 0; }
void cuda_hm_tiling_set(int on) { (void)on; }
int cuda_model_tiled(const tern_model *m) { (void)m; return 0; }
tern_backend *tern_backend_cuda_new(const tern_model *m, const tern_backend_params *p) {
    (void)m; (void)p;
    tern_set_error("this tern was built without CUDA (build with make CUDA=1)");
    return NULL;
}

#else

#include <dlfcn.h>

#include "backend_cpu.h"
#include "config.h"
#include "cuda_backend.h"

_Static_assert(TERN_CUDA_SAMPLE_KMAX == TCU_SAMPLE_KMAX, "backend_cuda.h and tcu.h disagree on the device top_k limit");

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
int tern_cuda_gemv_order(void) { return tcu_gemv_order(); }

/* ---- NCCL, loaded at run time (a CUDA build runs without it; --tp > 1 needs it) ---- */

static struct {
    int tried, ok;
    ncclResult_t (*CommInitAll)(ncclComm_t *, int, const int *);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*GetVersion)(int *);
    cuda_nccl fns;
    int version;
} nccl;

const cuda_nccl *cuda_nccl_fns(void) { return &nccl.fns; }

static int nccl_load(void) {
    if (nccl.tried) return nccl.ok ? 0 : -1;
    nccl.tried = 1;
    const char *names[] = {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib/libnccl.so.2",
                           "/usr/local/cuda/lib64/libnccl.so.2"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        tern_set_error("--tp > 1 needs NCCL: libnccl.so.2 was not found (install libnccl2, or put its folder on "
                       "LD_LIBRARY_PATH)");
        return -1;
    }
#define SYM(p, f) ((*(void **)&(p) = dlsym(h, "nccl" #f)) != NULL)
    if (!SYM(nccl.CommInitAll, CommInitAll) || !SYM(nccl.CommDestroy, CommDestroy) || !SYM(nccl.GetVersion, GetVersion) ||
        !SYM(nccl.fns.AllReduce, AllReduce) || !SYM(nccl.fns.AllGather, AllGather) ||
        !SYM(nccl.fns.GetErrorString, GetErrorString)) {
        tern_set_error("NCCL library lacks a symbol tern needs (too old?)");
        return -1;
    }
#undef SYM
    nccl.GetVersion(&nccl.version);
    nccl.ok = 1;
    return 0;
}

/* ---- the model's weights on the GPUs ---- */

static size_t pad16(size_t b) { return (b + 15) & ~(size_t)15; }
static double gib(uint64_t b) { return b / (double)(1ull << 30); }

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
static void layer_slice(const cuda_wrank *W, const tern_weight *w, int j, int64_t *r0, int64_t *nr, int64_t *c0,
                        int64_t *nc) {
    const int hd = W->m->head_dim;
    *r0 = 0; *nr = w->n_out; *c0 = 0; *nc = w->n_in;
    switch (j) {
    case 0: *nr = (int64_t)W->nh * hd; *r0 = *nr * W->rank; break;           /* q: heads */
    case 1: case 2: *nr = (int64_t)W->nkv * hd; *r0 = *nr * W->rank; break; /* k, v: KV heads */
    case 3: *nc = (int64_t)W->nh * hd; *c0 = *nc * W->rank; break;           /* o: its input columns */
    case 4: case 5: *nr = W->nf; *r0 = *nr * W->rank; break;                 /* gate, up: FFN rows */
    default: *nc = W->nf; *c0 = *nc * W->rank; break;                       /* down: its input columns */
    }
}

/* Bytes of a device row of nc elements of GGUF type t (unpadded), in its device layout (tcu_repack_type). */
static size_t dev_row_bytes(int t, int64_t nc) {
    const int dt = tcu_repack_type(t);
    return dt != t ? tcu_repack_row_bytes(dt, nc) : tern_type_row_size((enum tern_type)t, nc);
}

/* Bytes of a slice of nr rows of nc elements on the device (rows padded to 16 bytes). */
static uint64_t slice_bytes(const tern_weight *w, int64_t nr, int64_t nc) {
    return (uint64_t)pad16(dev_row_bytes((int)w->type, nc)) * (uint64_t)nr;
}

#define STAGE_BYTES ((size_t)64 << 20)

/* The rows of fill_part in the repacked layout: GGUF rows staged on the device chunk by chunk, then
 * tcu_repack into dst (zeroed first: padding and unused scale slots). 0 or -1. */
static int fill_repacked(cuda_wrank *W, void *dst, size_t stride, const tern_weight *w, int64_t row0, int64_t nr,
                         int64_t c0, int64_t nc) {
    const size_t off = tern_type_row_size(w->type, c0), rb = tern_type_row_size(w->type, nc);
    if (cudaMemset(dst, 0, stride * (size_t)nr) != cudaSuccess) return -1;
    if (!W->dstage && cudaMalloc(&W->dstage, STAGE_BYTES) != cudaSuccess) return -1;
    if (!w->data && !W->m->gen_rows) { tern_set_error("a weight without data"); return -1; }
    if (!w->data && !W->stage && cudaMallocHost(&W->stage, STAGE_BYTES + w->row_bytes) != cudaSuccess) return -1;
    int64_t chunk = (int64_t)(STAGE_BYTES / w->row_bytes);
    if (chunk < 1) { tern_set_error("a %zu-byte row is larger than the upload stage", w->row_bytes); return -1; }
    for (int64_t c = 0; c < nr; c += chunk) {
        const int64_t cn = c + chunk < nr ? chunk : nr - c;
        const char *src = (const char *)w->data + (size_t)(row0 + c) * w->row_bytes + off;
        if (!w->data) {
            if (W->m->gen_rows(W->m, w, row0 + c, cn, W->stage) != 0) return -1;
            src = (const char *)W->stage + off;
        }
        if (cudaMemcpy2D(W->dstage, rb, src, w->row_bytes, rb, (size_t)cn, cudaMemcpyHostToDevice) != cudaSuccess) return -1;
        tcu_repack((int)w->type, W->dstage, rb, (char *)dst + (size_t)c * stride, stride, nc, cn, 0);
        if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
            return -1; /* a launch error, or the stage is rewritten next */
    }
    return 0;
}

/* Copy rows [row0, row0+nr), columns [c0, c0+nc) of w in block format into dst (rows stride bytes apart,
 * padding bytes zeroed), in its device layout. 0 or -1. */
static int fill_part(cuda_wrank *W, void *dst, size_t stride, const tern_weight *w, int64_t row0, int64_t nr, int64_t c0,
                     int64_t nc) {
    if (tcu_repack_type((int)w->type) != (int)w->type) return fill_repacked(W, dst, stride, w, row0, nr, c0, nc);
    const size_t off = tern_type_row_size(w->type, c0), rb = tern_type_row_size(w->type, nc);
    if (w->data) {
        if (cudaMemcpy2D(dst, stride, (const char *)w->data + (size_t)row0 * w->row_bytes + off, w->row_bytes, rb,
                         (size_t)nr, cudaMemcpyHostToDevice) != cudaSuccess)
            return -1;
    } else { /* in-memory synthetic model: make the rows chunk by chunk, upload the slice */
        if (!W->m->gen_rows) { tern_set_error("a weight without data"); return -1; }
        if (!W->stage && cudaMallocHost(&W->stage, STAGE_BYTES + w->row_bytes) != cudaSuccess) return -1;
        int64_t chunk = (int64_t)(STAGE_BYTES / w->row_bytes);
        if (chunk < 1) chunk = 1;
        for (int64_t c = 0; c < nr; c += chunk) {
            const int64_t cn = c + chunk < nr ? chunk : nr - c;
            if (W->m->gen_rows(W->m, w, row0 + c, cn, W->stage) != 0) return -1;
            if (cudaMemcpy2D((char *)dst + (size_t)c * stride, stride, (const char *)W->stage + off, w->row_bytes, rb,
                             (size_t)cn, cudaMemcpyHostToDevice) != cudaSuccess)
                return -1;
        }
    }
    if (stride != rb) /* padding bytes: defined, never read as data */
        if (cudaMemset2D((char *)dst + rb, stride, 0, stride - rb, (size_t)nr) != cudaSuccess) return -1;
    return 0;
}

static dweight *new_dweight(cuda_wrank *W, const tern_weight *w, int64_t row0, int64_t nr, int64_t c0, int64_t nc) {
    dweight *d = &W->w[W->n_w++];
    d->type = tcu_repack_type((int)w->type);
    d->n_in = nc;
    d->n_out = nr;
    d->row0 = row0;
    d->col0 = c0;
    d->stride = pad16(dev_row_bytes((int)w->type, nc));
    d->host = w->data;
    d->fam = tcu_gemv_dp4a_family(d->type, d->stride, nc, nr);
    return d;
}

/* Upload rows [row0, row0+nr), columns [c0, c0+nc) of w (a tied weight already uploaded is shared). */
static dweight *upload_part(cuda_wrank *W, const tern_weight *w, int64_t row0, int64_t nr, int64_t c0, int64_t nc) {
    for (int i = 0; i < W->n_w; i++) {
        const dweight *o = &W->w[i];
        if (w->data && o->host == w->data && o->type == tcu_repack_type((int)w->type) && o->n_out == nr &&
            o->n_in == nc && o->row0 == row0 && o->col0 == c0)
            return &W->w[i];
    }
    dweight *d = new_dweight(W, w, row0, nr, c0, nc);
    if (cudaMalloc(&d->d, d->stride * (size_t)nr) != cudaSuccess) return NULL;
    d->own = 1;
    return fill_part(W, d->d, d->stride, w, row0, nr, c0, nc) == 0 ? d : NULL;
}

/* Layer weights js[0..nj) (all one type, rows of nc columns) stacked in one allocation: returns the fused
 * view and sets *parts[j] to views of its rows. */
static dweight *upload_fused(cuda_wrank *W, const tern_layer *l, const int *js, int nj, dweight ***parts) {
    int64_t r0[3], nr[3], c0[3], nc[3], rows = 0;
    for (int j = 0; j < nj; j++) {
        layer_slice(W, layer_weight(l, js[j]), js[j], &r0[j], &nr[j], &c0[j], &nc[j]);
        rows += nr[j];
    }
    const tern_weight *w0 = layer_weight(l, js[0]);
    dweight *f = new_dweight(W, w0, 0, rows, c0[0], nc[0]);
    f->host = NULL;
    if (cudaMalloc(&f->d, f->stride * (size_t)rows) != cudaSuccess) return NULL;
    f->own = 1;
    int64_t at = 0;
    for (int j = 0; j < nj; j++) {
        dweight *p = new_dweight(W, layer_weight(l, js[j]), r0[j], nr[j], c0[j], nc[j]);
        p->host = NULL;
        p->d = (char *)f->d + (size_t)at * f->stride;
        if (fill_part(W, p->d, p->stride, layer_weight(l, js[j]), r0[j], nr[j], c0[j], nc[j]) != 0) return NULL;
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

/* Rank `rank` of an n_rank split: its shape and its weights' bytes (nothing allocated). */
static void wrank_plan(cuda_wrank *W, const tern_model *m, int rank, int n_rank) {
    W->m = m;
    W->dev = rank;
    W->rank = rank;
    W->n_rank = n_rank;
    W->nh = m->n_head / n_rank;
    W->nkv = m->n_head_kv / n_rank;
    W->nf = m->n_ff / n_rank;
    W->vpad = (m->n_vocab + n_rank - 1) / n_rank;
    W->nv = rank < n_rank - 1 ? W->vpad : m->n_vocab - (n_rank - 1) * W->vpad;
    const int E = m->n_embd, hd = m->head_dim, Hq = W->nh * hd, Hkv = W->nkv * hd, F = W->nf;
    const int V = n_rank > 1 ? W->vpad : W->nv;
    uint64_t wb = slice_bytes(&m->tok_embd, m->tok_embd.n_out, m->tok_embd.n_in);
    uint64_t max_mat = (uint64_t)E * V; /* the f16 tile holds one matrix the GEMM path reads (token_embd: rows only) */
    uint64_t max_layer = 0;             /* the prefetch slot (dq1) holds one layer matrix */
    /* the f16 order's tiled copy, bytes a 32-element block: Q4_0T 18, Q4_KT 19, Q8_0T 34 (the largest type present;
     * Q6_KT's 35 are added below) */
    /* Q4_KT is 19 bytes a block where the rows are 18, Q6_KT 35 where they are 26.25: what the converted matrices add
     * for good (tile_one); a head tied to the embeddings stays in rows */
    const int own_head = m->output.data && m->output.data != m->tok_embd.data;
    int q8 = m->output.type == TERN_TYPE_Q8_0, k4 = m->output.type == TERN_TYPE_Q4_K;
    int q6 = own_head && m->output.type == TERN_TYPE_Q6_K;
    uint64_t grow = k4 && own_head ? (uint64_t)V * E / 32 : 0;
    uint64_t grow6 = q6 && own_head ? (uint64_t)V * E * 35 / 128 : 0;
    if (m->output.data != m->tok_embd.data || n_rank > 1 || !m->output.data) wb += slice_bytes(&m->output, V, E);
    for (int il = 0; il < m->n_layer; il++) {
        for (int j = 0; j < 7; j++) {
            const tern_weight *w = layer_weight(&m->layers[il], j);
            int64_t r0, nr, c0, nc;
            layer_slice(W, w, j, &r0, &nr, &c0, &nc);
            wb += slice_bytes(w, nr, nc);
            q8 |= w->type == TERN_TYPE_Q8_0;
            k4 |= w->type == TERN_TYPE_Q4_K;
            q6 |= w->type == TERN_TYPE_Q6_K;
            if (w->type == TERN_TYPE_Q4_K) grow += (uint64_t)nr * nc / 32;
            if (w->type == TERN_TYPE_Q6_K) grow6 += (uint64_t)nr * nc * 35 / 128;
            if ((uint64_t)nr * nc > max_mat) max_mat = (uint64_t)nr * nc;
            if ((uint64_t)nr * nc > max_layer) max_layer = (uint64_t)nr * nc;
        }
        const tern_layer *l = &m->layers[il];
        wb += sizeof(float) * (2 * (uint64_t)E + (l->bq ? Hq : 0) + (l->bk ? Hkv : 0) + (l->bv ? Hkv : 0) + (l->bo ? E : 0) +
                               (l->q_norm ? hd : 0) + (l->k_norm ? hd : 0) + (l->attn_post_norm ? E : 0) +
                               (l->ffn_post_norm ? E : 0));
    }
    wb += sizeof(float) * (uint64_t)E;
    /* prefill's gate|up as one GEMM (one GPU; TP keeps two): its dequantized matrix (2F x E) in the prefetch slot.
     * Interleaved A/B, synthetic Llama-3-8B: Q4_0 pp512 +3.4%, pp2048 +0.6%; Q8_0 +1.5% / +0.9% (bench/gpu/pfgu-d41f054/) */
    W->pf_gu = n_rank == 1;
    for (int il = 0; il < m->n_layer && W->pf_gu; il++) /* every layer's gate|up fused at upload (same type) */
        if (m->layers[il].w_gate.type != m->layers[il].w_up.type) W->pf_gu = 0;
    if (W->pf_gu && 2ull * F * E > max_layer) max_layer = 2ull * F * E;
    if (W->pf_gu && 2ull * F * E > max_mat) max_mat = 2ull * F * E;
    int maxin = E > Hq ? E : Hq;
    if (F > maxin) maxin = F;
    W->bytes = wb;
    W->max_mat = max_mat;
    W->tile_b32 = q8 ? 34 : k4 ? 19 : 18;
    W->tile_grow = grow;
    W->q6 = q6;
    W->tile_grow6 = grow6;
    W->max_layer_mat = max_layer;
    W->maxin = maxin;
}

/* Upload rank W's slices (on its device, from its own thread). 0 or -1 (W->errmsg). */
static int wrank_upload(cuda_wrank *W) {
    const tern_model *m = W->m;
    const int E = m->n_embd, hd = m->head_dim, Hq = W->nh * hd, Hkv = W->nkv * hd;
    int fail = cudaSetDevice(W->dev) != cudaSuccess;
    W->w = calloc((size_t)m->n_layer * 9 + 2, sizeof *W->w);
    W->layers = calloc((size_t)m->n_layer, sizeof *W->layers);
    if (!W->w || !W->layers) fail = 1;
    if (!fail && (!(W->tok_embd = upload_part(W, &m->tok_embd, 0, m->tok_embd.n_out, 0, E)) ||
                  !(W->output = upload_part(W, &m->output, (int64_t)W->rank * W->vpad, W->nv, 0, E))))
        fail = 1;
    for (int il = 0; il < m->n_layer && !fail; il++) {
        const tern_layer *l = &m->layers[il];
        dlayer *d = &W->layers[il];
        dweight **slots[7] = {&d->wq, &d->wk, &d->wv, &d->wo, &d->gate, &d->up, &d->down};
        static const int jq[3] = {0, 1, 2}, jg[2] = {4, 5};
        if (l->wq.type == l->wk.type && l->wq.type == l->wv.type) {
            dweight **ps[3] = {&d->wq, &d->wk, &d->wv};
            if (!(d->qkv = upload_fused(W, l, jq, 3, ps))) fail = 1;
        }
        if (!fail && l->w_gate.type == l->w_up.type) {
            dweight **ps[2] = {&d->gate, &d->up};
            if (!(d->gu = upload_fused(W, l, jg, 2, ps))) fail = 1;
        }
        for (int j = 0; j < 7 && !fail; j++) {
            if (*slots[j]) continue; /* a part of a fused upload */
            const tern_weight *w = layer_weight(l, j);
            int64_t r0, nr, c0, nc;
            layer_slice(W, w, j, &r0, &nr, &c0, &nc);
            if (!(*slots[j] = upload_part(W, w, r0, nr, c0, nc))) fail = 1;
        }
        if (fail) break;
        if (!(d->attn_norm = upload_f32(l->attn_norm, E)) || !(d->ffn_norm = upload_f32(l->ffn_norm, E))) fail = 1;
        if ((l->bq && !(d->bq = upload_f32(l->bq + (size_t)W->rank * Hq, Hq))) ||
            (l->bk && !(d->bk = upload_f32(l->bk + (size_t)W->rank * Hkv, Hkv))) ||
            (l->bv && !(d->bv = upload_f32(l->bv + (size_t)W->rank * Hkv, Hkv))) || (l->bo && !(d->bo = upload_f32(l->bo, E))))
            fail = 1;
        if ((l->q_norm && !(d->q_norm = upload_f32(l->q_norm, hd))) || (l->k_norm && !(d->k_norm = upload_f32(l->k_norm, hd))) ||
            (l->attn_post_norm && !(d->attn_post_norm = upload_f32(l->attn_post_norm, E))) ||
            (l->ffn_post_norm && !(d->ffn_post_norm = upload_f32(l->ffn_post_norm, E))))
            fail = 1;
    }
    if (!fail && !(W->output_norm = upload_f32(m->output_norm, E))) fail = 1;
    /* the prefill pass's GEMM order: q, k, v, o, gate, up, down, then the next layer's q (the dequant prefetch) */
    for (int il = 0; il < m->n_layer && !fail; il++) {
        dlayer *d = &W->layers[il];
        dweight *seq[7] = {d->wq, d->wk, d->wv, d->wo, d->gate, d->up, d->down};
        for (int j = 0; j < 6; j++) seq[j]->pf_next = seq[j + 1];
        if (W->pf_gu && d->gu) { /* the fused prefill's order: ... o, gate|up, down */
            d->wo->pf_next = d->gu;
            d->gu->pf_next = d->down;
        }
        d->down->pf_next = il + 1 < m->n_layer ? W->layers[il + 1].wq : NULL;
    }
    if (W->stage) { cudaFreeHost(W->stage); W->stage = NULL; }
    if (W->dstage) { cudaFree(W->dstage); W->dstage = NULL; }
    if (fail) {
        const cudaError_t e = cudaGetLastError();
        snprintf(W->errmsg, sizeof W->errmsg, "uploading the weights to GPU %d failed: %s", W->dev,
                 e != cudaSuccess ? cudaGetErrorString(e) : tern_last_error());
        return -1;
    }
    return 0;
}

static void wrank_free(cuda_wrank *W) {
    cudaSetDevice(W->dev);
    if (W->w)
        for (int i = 0; i < W->n_w; i++)
            if (W->w[i].own) cudaFree(W->w[i].d);
    if (W->layers)
        for (int il = 0; il < W->m->n_layer; il++) {
            dlayer *d = &W->layers[il];
            cudaFree(d->attn_norm); cudaFree(d->ffn_norm);
            cudaFree(d->bq); cudaFree(d->bk); cudaFree(d->bv); cudaFree(d->bo);
            cudaFree(d->q_norm); cudaFree(d->k_norm); cudaFree(d->attn_post_norm); cudaFree(d->ffn_post_norm);
        }
    cudaFree(W->output_norm);
    if (W->stage) cudaFreeHost(W->stage);
    if (W->dstage) cudaFree(W->dstage);
    free(W->w);
    free(W->layers);
}

/* tern_model.dev_weights_free */
static void weights_free(void *p) {
    cuda_weights *cw = p;
    if (!cw) return;
    for (int r = 0; r < cw->n_rank; r++) wrank_free(&cw->r[r]);
    cudaSetDevice(0);
    free(cw);
}

static void upload_job(void *arg, int ith, int nth) {
    (void)nth;
    (void)wrank_upload(&((cuda_weights *)arg)->r[ith]);
}

/* ---- an engine's state on each GPU ---- */

/* Splits of the decode attention over the keys (tcu_attention_split) for a context of n_ctx positions:
 * about 256 rows a split, at most 16 (H200, Llama-3-8B Q4_0: at depth 4096 one split 8.40 ms a step, 4:
 * 4.55, 16: 3.65, 32: 4.03; at depth 0 one split 3.10 vs 16: 3.19; docs/ledger.md). The grid's count, fixed
 * per engine (a graph replays it); each token uses one split per 256 keys of its own position, up to it
 * (attention.cu), so a token's bits do not depend on its pass. */
static int att_splits_rule(int n_ctx, int rps) {
    const int s = (n_ctx + rps - 1) / rps; /* rps: tern_config.att_rps (tcu_attention_rps_norm), TCU_ATT_RPS by default */
    return s < 1 ? 1 : s > 16 ? 16 : s;
}

/* Rows of the decode-configuration buffers (RoPE tables, x16 activations, attention splits, argmax keys): the GEMV
 * path's pass limit, at least TCU_MULTI_MAX (exec.c dec_max). */
static int pass_rows(const crank *g) { return g->gemv_max > TCU_MULTI_MAX ? g->gemv_max : TCU_MULTI_MAX; }

/* The GEMV path's pass limit (exec.c; the engine's exact_rows): TCU_PASS_MAX where a longer pass gives each column the
 * bits of its one-column GEMV, i.e. the chunk or f16 order is on (tern_config.gemv_chunk) on Hopper and every matrix
 * is Q4_0, Q8_0 or Q4_K (uploaded repacked, which v2 and the f16 order read) or has the dp4a twins (Q6_K, Q4_1: run on
 * slices of 16 columns, exec.c matmul); else TCU_MULTI_MAX (the twins' columns). */
/* 1 when every layer matrix a GEMV-path pass runs has the f16 order's GEMM (gemm_hmma.cu: Q4_0, Q8_0, Q4_K with n_in a
 * multiple of 128 (K-quants 256), and Q6_K as the tiles an engine on one GPU converts it to (hm_takes), on Hopper), as
 * each of n_tp ranks holds it: o and down have their inputs split over the ranks (wrank_plan), so 14 heads of 64 at TP 2
 * give o 448 inputs a rank, which the f16 order does not take; the head has it or the dp4a twins. A layer matrix
 * without it keeps the chunk order: its twins in an f16 pass (slices of 16 columns) measured worse than the chunk
 * order at 1..16 sequences (docs/ledger.md 2026-12-06 "Q8_0, Q4_K and Q6_K take the f16 order": a Q4_K_M file with
 * its Q6_K matrices on the twins). One exception, unmeasured: a fused Q6_K q|k|v or gate|up with a part off a 64-row
 * boundary stays rows (wrank_tile) and so runs on the twins; no shipped Llama-family shape has one. */
static int g_hm_tiling;
static int hm_takes(int type, int64_t n_in, int n_tp) {
    const int rt = tcu_repack_type(type);
    return tcu_gemm_hm_supported(rt, n_in) || (n_tp == 1 && g_hm_tiling && tcu_gemm_hm_supported(tcu_hm_tiled_type(rt), n_in));
}
static int hm_all(const tern_model *m, int n_tp) {
    for (int l = 0; l < m->n_layer; l++) {
        const tern_layer *L = &m->layers[l];
        const tern_weight *w[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 7; i++) {
            const int64_t n_in = i == 3 || i == 6 ? w[i]->n_in / n_tp : w[i]->n_in;
            if (!hm_takes(w[i]->type, n_in, n_tp)) return 0;
        }
    }
    /* the head: the f16 order's, or the dp4a twins' (exec.c want_x16: its norm writes x16 activations too), as a Q6_K
     * head tied to the embeddings (which stay rows) */
    return hm_takes(m->output.type, m->output.n_in, n_tp) || tcu_gemv_dp4a_supported(m->output.type);
}

/* The f16 order's weights (issue 26): an engine in the f16 order on one GPU converts the matrices its passes read from
 * rows to the tiled layout (TCU_TYPE_Q4_0T, Q8_0T, Q4_KT, Q6_KT; tcu_hm_tile: a 64-row tile's 4-block step one
 * contiguous chunk), which gemm_hmma.cu's tiled arms and the prefill's tcu_dequant_f16 read; the rows are freed. The
 * same bits as the rows (gpu_batch's tiled check); docs/ledger.md 2026-12-04 "the f16 order over the tiled layout in
 * the engine". Every layer matrix and the head, not the token embeddings (a row lookup) nor a head tied to them (the
 * f16 order reads rows too); a fused q|k|v or gate|up with a part starting off a 64-row boundary keeps its rows. Once
 * per model (its engines share the weights; an engine in another order or over several GPUs is refused on it
 * afterwards).
 * cuda_hm_tiling_set(0), a test hook, keeps the rows. 0 or -1 (the error set; the weights stay usable). */
static int g_hm_tiling = 1;
void cuda_hm_tiling_set(int on) { g_hm_tiling = on != 0; }
int cuda_model_tiled(const tern_model *m) {
    const cuda_weights *cw = m ? m->dev_weights : NULL;
    return cw && cw->r[0].tiled;
}

/* w's rows to tiles (w->d then the tiles, w->type its tiled type: TCU_TYPE_Q4_0T, Q8_0T, Q4_KT or Q6_KT); 0 or -1 */
static int tile_one(cuda_wrank *W, dweight *w) {
    void *t = NULL;
    if (cudaMalloc(&t, tcu_hm_tile_bytes(w->type, w->n_in, w->n_out)) != cudaSuccess) {
        (void)cudaGetLastError();
        tern_set_error("no room on GPU %d to convert a %lldx%lld matrix to the f16 order's tiled layout", W->dev,
                       (long long)w->n_out, (long long)w->n_in);
        return -1;
    }
    tcu_hm_tile(w->type, w->d, w->stride, w->n_in, w->n_out, t, 0);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        tern_set_error("converting the weights on GPU %d to the tiled layout failed: %s", W->dev,
                       cudaGetErrorString(cudaGetLastError()));
        cudaFree(t);
        return -1;
    }
    cudaFree(w->d);
    w->d = t;
    w->type = tcu_hm_tiled_type(w->type);
    return 0;
}

static int wrank_tile(cuda_wrank *W) { /* converts what is still in rows (a retry after a failure continues) */
    cudaSetDevice(W->dev);
    for (int il = 0; il < W->m->n_layer; il++) { /* a fused matrix with its parts (views into it) */
        dlayer *d = &W->layers[il];
        dweight *fu[2] = {d->qkv, d->gu}, *parts[2][3] = {{d->wq, d->wk, d->wv}, {d->gate, d->up, NULL}};
        for (int k = 0; k < 2; k++) {
            dweight *f = fu[k];
            if (!f || !f->own || !tcu_gemm_hm_supported(tcu_hm_tiled_type(f->type), f->n_in)) continue;
            int64_t off[3] = {0, 0, 0};
            int ok = 1;
            for (int j = 0; j < 3; j++) {
                const dweight *p = parts[k][j];
                if (!p) continue;
                off[j] = (int64_t)(((const char *)p->d - (const char *)f->d) / (ptrdiff_t)f->stride);
                ok &= !p->own && p->stride == f->stride && p->n_in == f->n_in && off[j] % 64 == 0;
            }
            if (!ok) continue;
            if (tile_one(W, f) != 0) return -1;
            W->tiled = 1; /* from the first matrix converted: engines in another order are refused on these weights */
            for (int j = 0; j < 3; j++)
                if (parts[k][j]) {
                    parts[k][j]->d = (char *)f->d + tcu_hm_tile_bytes(f->type, f->n_in, off[j]);
                    parts[k][j]->type = f->type;
                }
        }
    }
    for (int i = 0; i < W->n_w; i++) { /* the other matrices with their own rows, but the embeddings */
        dweight *w = &W->w[i];
        if (!w->own || w == W->tok_embd || w->n_out < 1 || !tcu_gemm_hm_supported(tcu_hm_tiled_type(w->type), w->n_in))
            continue;
        int part = 0; /* a fused matrix left in rows (a part off a 64-row boundary) keeps its rows */
        for (int il = 0; il < W->m->n_layer && !part; il++) part = w == W->layers[il].qkv || w == W->layers[il].gu;
        if (part) continue;
        if (tile_one(W, w) != 0) return -1;
        W->tiled = 1;
    }
    return 0;
}

static int pass_limit(const tern_model *m, int ord, int n_dev) {
    if (ord < 1) return TCU_MULTI_MAX;
    for (int d = 0; d < n_dev; d++) { /* v2's tilings take up to ~160 KiB of shared memory a CTA: Hopper's budget */
        int major = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess || major < 9) {
            (void)cudaGetLastError();
            return TCU_MULTI_MAX;
        }
    }
    /* every matrix in v2's types (Q4_0, Q8_0, Q4_K) or the dp4a twins' (Q6_K, Q4_1: exec.c matmul runs them on
     * slices of 16 columns, the matrix read once a slice), so Q4_K_M files and Q4_0 files with a Q6_K head take
     * 64-token passes too; a matrix of another type (Q5_K, f16) keeps passes to the twins' 16 */
    for (int l = 0; l < m->n_layer; l++) {
        const tern_layer *L = &m->layers[l];
        const tern_weight *w[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 7; i++)
            if (!tcu_gemv_dp4a_supported(w[i]->type)) return TCU_MULTI_MAX;
    }
    return tcu_gemv_dp4a_supported(m->output.type) ? TCU_PASS_MAX : TCU_MULTI_MAX;
}

int cuda_kv_layer(const crank *g, int il, uint64_t *off) {
    uint64_t o = 0;
    for (int l = 0; l < il; l++) o += g->kv_rows_w > 0 && g->m->layers[l].window > 0 ? g->kv_layer_bytes_w : g->kv_layer_bytes;
    if (off) *off = o;
    return g->kv_rows_w > 0 && g->m->layers[il].window > 0;
}

/* A layer's K (or V) bytes over `rows` pool rows: f16, or Q8_0's int8 then f16 scales padded to 256 bytes. */
static uint64_t kv_layer_bytes_of(const crank *g, int64_t rows, int Hkv) {
    return g->kv_q8 ? ((uint64_t)rows * Hkv + (uint64_t)rows * (Hkv / 32) * 2 + 255) & ~255ull
                    : sizeof(uint16_t) * (uint64_t)rows * Hkv;
}

/* The rank's KV pool and scratch bytes (its weights are W's). */
static void crank_plan(crank *g) {
    const tern_model *m = g->m;
    const cuda_wrank *W = g->W;
    const int E = m->n_embd, hd = m->head_dim, Hq = W->nh * hd, Hkv = W->nkv * hd, F = W->nf;
    const int B = g->ubatch, V = g->n_rank > 1 ? W->vpad : W->nv; /* logits rows as allocated */
    g->kv_layer_bytes = kv_layer_bytes_of(g, g->kv_rows, Hkv);
    g->kv_layer_bytes_w = kv_layer_bytes_of(g, g->kv_rows_w, Hkv);
    uint64_t kv_off = 0;
    cuda_kv_layer(g, g->n_layer, &kv_off); /* every layer's bytes */
    g->b_kv = 2ull * kv_off;
    const size_t ws_bytes = 32u << 20; /* cuBLASLt's workspace */
    { /* v2's split arms' workspace: the largest need of the matrices a GEMV-path pass runs (fused or not) */
        const int64_t shp[8][2] = {{E, Hq + 2ll * Hkv}, {E, Hq}, {E, Hkv}, {Hq, E}, {E, 2ll * F}, {E, F}, {F, E}, {E, V}};
        g->mmws_n = 0;
        for (int i = 0; i < 8; i++) {
            const size_t k = g->gemv_ord == 2 ? tcu_gemm_hm_ws_floats(shp[i][0], shp[i][1], g->gemv_max)
                                              : tcu_gemm_mma_v2_ws_floats(shp[i][0], shp[i][1], g->gemv_max);
            if (k > g->mmws_n) g->mmws_n = k;
        }
    }
    uint64_t sb = sizeof(float) * ((uint64_t)B * (4ull * E + 2ull * Hq + 2ull * Hkv + (W->pf_gu ? 3ull : 2ull) * F + V) + Hq +
                                   2ull * Hkv + 2ull * F) +
                  sizeof(uint16_t) * ((uint64_t)B * W->maxin + W->max_mat + W->max_layer_mat) +
                  sizeof(int32_t) * (5ull * B + g->bt_cap + g->pen_cap + (g->kv_rows_w > 0 ? (uint64_t)B + g->bt_cap : 0)) + sizeof(double) * B + sizeof(float) * (uint64_t)m->n_vocab +
                  sizeof(float) * 2 * pass_rows(g) * (uint64_t)(m->n_rot / 2 + 1) + sizeof(uint64_t) * pass_rows(g) +
                  ws_bytes + tcu_x16_bytes(pass_rows(g), W->maxin) + sizeof(float) * g->mmws_n +
                  tcu_attention_ws_bytes(pass_rows(g), W->nh, hd, g->att_splits);
    if (g->kv_q8) sb += 2ull * sizeof(uint16_t) * g->n_ctx * Hkv; /* kc16, vc16 */
    if (g->n_rank > 1) {
        sb += sizeof(float) * (uint64_t)g->n_rank * B * W->vpad;          /* gath */
        if (g->rank == 0) sb += sizeof(float) * (uint64_t)B * m->n_vocab; /* lfull */
    }
    g->b_scratch = sb;
}

static void *dalloc(size_t bytes, int *fail) {
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 16) != cudaSuccess) { *fail = 1; return NULL; }
    return p;
}

/* Allocate one rank's KV pool (zeroed: rows past a sequence's length are finite) and scratch, on its device. 0 or -1
 * (g->errmsg). */
static int crank_setup(crank *g) {
    const tern_model *m = g->m;
    const cuda_wrank *W = g->W;
    const int E = m->n_embd, hd = m->head_dim, Hq = W->nh * hd, Hkv = W->nkv * hd, F = W->nf, B = g->ubatch;
    int fail = 0;
    char err[256] = "";
    if (cudaSetDevice(g->dev) != cudaSuccess) fail = 1;
    if (!fail && cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking) != cudaSuccess) fail = 1;
    if (!fail && !(g->blas = tcu_blas_new(32u << 20, err))) fail = 1;
    if (!fail) {
        g->kc = dalloc(g->b_kv / 2, &fail);
        g->vc = dalloc(g->b_kv / 2, &fail);
        if (!fail && (cudaMemset(g->kc, 0, g->b_kv / 2) != cudaSuccess || cudaMemset(g->vc, 0, g->b_kv / 2) != cudaSuccess))
            fail = 1;
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
        g->g = dalloc(sizeof(float) * (size_t)B * F * (W->pf_gu ? 2 : 1), &fail); /* with pf_gu: the fused gate|up's rows */
        g->u = dalloc(sizeof(float) * (size_t)B * F, &fail);
        g->qkv1 = dalloc(sizeof(float) * (size_t)(Hq + 2 * Hkv), &fail);
        g->gu1 = dalloc(sizeof(float) * 2 * (size_t)F, &fail);
        g->attws = dalloc(tcu_attention_ws_bytes(pass_rows(g), W->nh, hd, g->att_splits), &fail);
        g->logits = dalloc(sizeof(float) * (size_t)B * (g->n_rank > 1 ? W->vpad : W->nv), &fail);
        g->x16 = dalloc(sizeof(uint16_t) * (size_t)B * W->maxin, &fail);
        g->dq = dalloc(sizeof(uint16_t) * (size_t)W->max_mat, &fail);
        g->dq1 = dalloc(sizeof(uint16_t) * (size_t)W->max_layer_mat, &fail);
        /* dequant prefetch: a side stream at the lowest priority (+3% pp512; the highest: the same, docs/ledger.md) */
        int pr_least = 0, pr_greatest = 0;
        cudaDeviceGetStreamPriorityRange(&pr_least, &pr_greatest);
        if (cudaStreamCreateWithPriority(&g->side, cudaStreamNonBlocking, pr_least) != cudaSuccess) fail = 1;
        for (int i = 0; i < 2 && !fail; i++)
            if (cudaEventCreateWithFlags(&g->ready[i], cudaEventDisableTiming) != cudaSuccess ||
                cudaEventCreateWithFlags(&g->free_[i], cudaEventDisableTiming) != cudaSuccess)
                fail = 1;
        g->xq = dalloc(tcu_x16_bytes(pass_rows(g), W->maxin), &fail);
        g->mmws = dalloc(sizeof(float) * g->mmws_n, &fail);
        /* the f16 order's K split keeps its tickets at the workspace's head, zero between calls (gemm_hmma.cu) */
        if (g->mmws && cudaMemset(g->mmws, 0, sizeof(float) * g->mmws_n) != cudaSuccess) fail = 1;
        /* programmatic dependent launch on Hopper and later (each pass sets it by its size: exec.c PDL_MAX) */
        int cc_major = 0;
        cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, g->dev);
        g->pdl = cc_major >= 9;
        g->pdl_max = tern_cfg()->pdl_max; /* 0: the rule */
        tcu_set_pdl(g->pdl);
        g->flash = tcu_attention_flash_ok(W->nh, W->nkv, m->head_dim);
        const size_t pd_ints = (g->kv_rows_w > 0 ? 5 : 4) * (size_t)B + (g->kv_rows_w > 0 ? 2 : 1) * (size_t)g->bt_cap;
        g->pd = dalloc(sizeof(int32_t) * pd_ints, &fail);
        if (cudaMallocHost((void **)&g->hpd, sizeof(int32_t) * pd_ints) != cudaSuccess) fail = 1;
        g->ids = dalloc(sizeof(int32_t) * (size_t)B, &fail);
        /* the RoPE tables at this context (LongRoPE picks its factors by it) and a pass's (cos, sin) of each */
        g->n_tables = 1;
        for (int il = 0; il < m->n_layer; il++)
            if (m->layers[il].rope_table) g->n_tables = 2;
        float *fq = tern_xmalloc(sizeof(float) * (size_t)(m->n_rot / 2 + 1));
        for (int t = 0; t < g->n_tables && !fail; t++) {
            g->mscale[t] = cpu_rope_table(m, g->n_ctx, t, fq);
            if (!(g->freq[t] = upload_f32(fq, (size_t)(m->n_rot / 2 + 1)))) fail = 1;
            g->ropecs[t] = dalloc(sizeof(float) * 2 * pass_rows(g) * (size_t)(m->n_rot / 2 + 1), &fail);
        }
        free(fq);
        g->amkeys = dalloc(sizeof(uint64_t) * pass_rows(g), &fail); /* the argmax keys (tcu_argmax), zero */
        if (g->amkeys && cudaMemset(g->amkeys, 0, sizeof(uint64_t) * pass_rows(g)) != cudaSuccess) fail = 1;
        g->pen = dalloc(sizeof(int32_t) * (size_t)g->pen_cap, &fail);
        g->ud = dalloc(sizeof(double) * (size_t)B, &fail);
        g->samp = dalloc(sizeof(float) * (size_t)m->n_vocab, &fail);
        g->lg = g->logits;
        if (g->n_rank > 1) {
            g->gath = dalloc(sizeof(float) * (size_t)g->n_rank * B * W->vpad, &fail);
            if (g->rank == 0) g->lg = g->lfull = dalloc(sizeof(float) * (size_t)B * m->n_vocab, &fail);
        }
    }
    if (g->timing && (cudaEventCreate(&g->ev0) != cudaSuccess || cudaEventCreate(&g->ev1) != cudaSuccess)) fail = 1;
    if (fail) {
        const cudaError_t e_last = cudaGetLastError(); /* read (and cleared) whichever message is used */
        snprintf(g->errmsg, sizeof g->errmsg, "CUDA setup failed on GPU %d: %s", g->dev,
                 err[0] ? err : e_last != cudaSuccess ? cudaGetErrorString(e_last) : tern_last_error());
        return -1;
    }
    return 0;
}

static void crank_free(crank *g) {
    if (!g) return;
    cudaSetDevice(g->dev);
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < OUT_KINDS; k++)
            for (int n = 0; n <= TCU_PASS_MAX; n++)
                for (int j = 0; j < GRAPH_ALT; j++)
                    if (g->gr[a][k][n][j].ok) cudaGraphExecDestroy(g->gr[a][k][n][j].ex);
    void *bufs[] = {g->kc, g->vc, g->kc16, g->vc16, g->x, g->x2, g->xn, g->tmp, g->q, g->att, g->k, g->v, g->g, g->u,
                    g->qkv1, g->gu1, g->attws, g->logits, g->x16, g->dq, g->dq1, g->xq, g->mmws, g->pd, g->ids, g->ropecs[0],
                    g->ropecs[1], g->freq[0], g->freq[1], g->amkeys, g->pen, g->ud, g->samp, g->gath, g->lfull};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
    if (g->hpd) cudaFreeHost(g->hpd);
    if (g->comm) nccl.CommDestroy(g->comm);
    if (g->blas) tcu_blas_free(g->blas);
    if (g->st) cudaStreamDestroy(g->st);
    if (g->side) cudaStreamDestroy(g->side);
    for (int i = 0; i < 2; i++) {
        if (g->ready[i]) cudaEventDestroy(g->ready[i]);
        if (g->free_[i]) cudaEventDestroy(g->free_[i]);
    }
    if (g->ev0) cudaEventDestroy(g->ev0);
    if (g->ev1) cudaEventDestroy(g->ev1);
    free(g);
}

static void setup_job(void *arg, int ith, int nth) {
    (void)nth;
    (void)crank_setup(((crank **)arg)[ith]);
}

static void cuda_free(tern_backend *be_) {
    cuda_be *be = (cuda_be *)be_;
    if (!be) return;
    crank *g = be->rk[0];
    if (g && g->timing)
        fprintf(stderr, "cuda timing: decode %ld passes, %.4f ms/pass device time (%s; GEMV-path passes of 1..%d tokens, "
                        "%.1f tokens each); prefill %ld tokens, %.4f ms/token\n",
                g->n_dec, g->n_dec ? g->t_dec_ms / g->n_dec : 0.0, g->use_graph ? "graph replay" : "un-captured launches",
                g->gemv_max, g->n_dec ? (double)g->n_dec_tok / (double)g->n_dec : 0.0, g->n_pre_tok,
                g->n_pre_tok ? g->t_pre_ms / g->n_pre_tok : 0.0);
    if (g && g->trace) cuda_rank_trace_print(g);
    if (cuda_timeline_on()) { /* TERN_TIMELINE's records while the context stands, every kernel finished first (a
                               * forced flush hands over incomplete records, which end a buffer's walk: timeline.c) */
        for (int r = 0; r < be->n_rank; r++)
            if (be->rk[r]) { cudaSetDevice(be->rk[r]->dev); cudaDeviceSynchronize(); }
        cuda_timeline_flush();
    }
    if (be->pool) tern_pool_free(be->pool);
    for (int r = be->n_rank - 1; r >= 0; r--) crank_free(be->rk[r]);
    cudaSetDevice(0);
    free(be);
}

/* Copy pool rows [src, src + n) to [dst, dst + n) of every layer, on every GPU (copy-on-write of a shared block). */
static int cuda_kv_copy(tern_backend *be_, int pool, int64_t dst, int64_t src, int64_t n) {
    cuda_be *be = (cuda_be *)be_;
    for (int r = 0; r < be->n_rank; r++) {
        crank *g = be->rk[r];
        const int Hkv = g->W->nkv * g->m->head_dim;
        CU(cudaSetDevice(g->dev));
        /* the planes of a layer: f16 rows (Hkv * 2 bytes), or int8 rows (Hkv) then their scales (Hkv / 32 f16) */
        const size_t plane[2] = {g->kv_q8 ? (size_t)Hkv : sizeof(uint16_t) * Hkv, g->kv_q8 ? sizeof(uint16_t) * (Hkv / 32) : 0};
        const size_t plane_off[2] = {0, g->kv_q8 ? (size_t)(pool ? g->kv_rows_w : g->kv_rows) * Hkv : 0};
        for (int il = 0; il < g->n_layer; il++)
            for (int kv = 0; kv < 2; kv++) {
                uint64_t off = 0;
                if (cuda_kv_layer(g, il, &off) != pool) continue;
                char *base = (char *)(kv ? g->vc : g->kc) + off;
                for (int p = 0; p < 2; p++)
                    if (plane[p])
                        CU(cudaMemcpyAsync(base + plane_off[p] + (size_t)dst * plane[p], base + plane_off[p] + (size_t)src * plane[p],
                                           plane[p] * (size_t)n, cudaMemcpyDeviceToDevice, g->st));
            }
        CU(cudaStreamSynchronize(g->st));
    }
    cudaSetDevice(0);
    return 0;
}

static const tern_backend_ops CUDA_OPS = {cuda_exec, cuda_kv_copy, cuda_prepare, cuda_free};

tern_backend *tern_backend_cuda_new(const tern_model *m, const tern_backend_params *p) {
    const int n_tp = p->tp > 1 ? p->tp : 1;
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
    if (p->kv_q8 && m->head_dim != 64 && m->head_dim != 128 && m->head_dim != 256) {
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
    tern_graph *G = tern_graph_build(m, p->n_layer);
    const int ok = cuda_graph_supported(G, m);
    tern_graph_free(G);
    if (ok != 0) return NULL;
    cuda_weights *cw = m->dev_weights;
    if (cw && cw->n_rank != n_tp) {
        tern_set_error("the model's weights are split over %d GPU(s) already; an engine with --tp %d needs another load "
                       "of the model", cw->n_rank, n_tp);
        return NULL;
    }
    if (n_tp > 1) {
        setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast stays off (shared/ KINDS: it can take GPUs down) */
        if (!getenv("NCCL_RUNTIME_CONNECT")) setenv("NCCL_RUNTIME_CONNECT", "0", 1); /* connect at init, not in a capture */
        if (nccl_load() != 0) return NULL;
    }
    const int have_weights = cw != NULL;
    cuda_weights plan_w; /* the weights' shape when they are not uploaded yet */
    const cuda_weights *wv = cw;
    if (!cw) {
        memset(&plan_w, 0, sizeof plan_w);
        plan_w.n_rank = n_tp;
        for (int r = 0; r < n_tp; r++) wrank_plan(&plan_w.r[r], m, r, n_tp);
        wv = &plan_w;
    }

    /* ---- memory plan, every GPU, before anything is allocated ---- */
    cuda_be *be = tern_xcalloc(1, sizeof *be);
    /* exact_rows: passes of up to 16 tokens run the GEMV twins (each row the bits of a one-row call; up to 64 with the
     * chunk order, longer ones through gemm_mma v2: pass_limit); with verify fast
     * 2..16-token passes take the GEMM, and at TP > 2 an all-reduce's summation order follows its size (NCCL's ring
     * and tree), so there a pass holds one token of one sequence's run among others (batch invariance) */
    /* the GEMVs' float order (0 today's, 1 the chunk order, 2 the f16 order where every matrix has it): set process-wide
     * once this engine stands */
    const int ord = tern_cfg()->gemv_chunk == 2 && hm_all(m, n_tp) ? 2 : tern_cfg()->gemv_chunk ? 1 : 0;
    const int plim = n_tp > 2 ? TCU_MULTI_MAX : pass_limit(m, ord, n_tp);
    const int tile = ord == 2 && n_tp == 1 && g_hm_tiling; /* the f16 order's tiled layout: wrank_tile */
    if (cw && cw->r[0].tiled && (ord != 2 || n_tp != 1)) {
        tern_set_error("this model's weights are in the f16 order's tiled layout (an engine with TERN_GEMV_CHUNK=2 made "
                       "them so): an engine in another order or over several GPUs needs the model loaded again");
        free(be);
        return NULL;
    }
    be->base = (tern_backend){&CUDA_OPS, "cuda", p->max_rows, p->verify_fast || n_tp > 2 ? 1 : plim, 1};
    be->m = m;
    be->n_rank = n_tp;
    const int bs = 1 << p->lbs, blocks_per_seq = (p->n_ctx + bs - 1) / bs;
    int refuse = 0;
    for (int r = 0; r < n_tp; r++) {
        crank *g = be->rk[r] = tern_xcalloc(1, sizeof *g);
        g->m = m;
        g->W = &wv->r[r];
        g->dev = r;
        g->rank = r;
        g->n_rank = n_tp;
        g->n_ctx = p->n_ctx;
        g->ubatch = p->max_rows;
        g->kv_q8 = p->kv_q8;
        g->lbs = p->lbs;
        g->kv_rows = p->kv_rows;
        g->kv_rows_w = p->kv_rows_w;
        g->n_layer = p->n_layer > 0 && p->n_layer < m->n_layer ? p->n_layer : m->n_layer;
        g->pen_cap = 4096;
        g->att_rps = tcu_attention_rps_norm(tern_cfg()->att_rps);
        g->att_splits = att_splits_rule(p->n_ctx, g->att_rps);
        g->gemv_max = p->verify_fast ? 1 : plim;
        g->gemv_ord = ord;
        g->bt_cap = pass_rows(g) * blocks_per_seq; /* a pass mixes at most exact_rows sequences */
        g->use_graph = tern_cfg()->cuda_graph;
        g->trace = tern_cfg()->trace;
        g->timing = tern_cfg()->cuda_timing;
        crank_plan(g);
    }
    for (int r = 0; r < n_tp && !refuse; r++) {
        const crank *g = be->rk[r];
        /* converting to tiles holds one matrix twice at a time (wrank_tile, once the KV pool and scratch stand), and Q4_K's
         * and Q6_K's tiles stay larger than their rows */
        const int q6t = g->W->q6 && tcu_gemm_hm_supported(TCU_TYPE_Q6_KT, 256); /* Hopper */
        const uint64_t wb = (have_weights ? 0 : g->W->bytes) +
                            (tile && !g->W->tiled ? g->W->max_mat / 32 * (q6t ? 35 : g->W->tile_b32) + g->W->tile_grow +
                                                        (q6t ? g->W->tile_grow6 : 0)
                                                  : 0);
        size_t free_b = 0, total_b = 0;
        if (cudaSetDevice(r) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
            (void)cudaGetLastError();
            tern_set_error("cannot query the memory of GPU %d", r);
            refuse = 1;
            break;
        }
        const uint64_t need = wb + g->b_kv + g->b_scratch, reserve = (256ull << 20) + (n_tp > 1 ? 512ull << 20 : 0);
        char wpool[96] = ""; /* the window pool's rows, and what one pool for every layer would take */
        if (p->kv_rows_w > 0) {
            uint64_t all = 0;
            for (int il = 0; il < g->n_layer; il++) all += 2ull * g->kv_layer_bytes;
            snprintf(wpool, sizeof wpool, "; sliding-window layers %lld rows: %.2f GiB as one pool", (long long)p->kv_rows_w,
                     gib(all));
        }
        if (p->verbose)
            fprintf(stderr,
                    "tern: cuda memory plan on GPU %d (%s)%s: weights %.2f GiB%s%s + KV cache %.2f GiB (%lld rows in blocks of "
                    "%d, %s%s) + scratch %.2f GiB (ubatch %d) = %.2f GiB of %.2f GiB free\n",
                    r, g_name, n_tp > 1 ? ", tensor-parallel shard" : "", gib(g->W->bytes),
                    have_weights ? " (uploaded already)" : "", tile ? ", f16 order's tiled layout" : "", gib(g->b_kv), (long long)p->kv_rows, bs,
                    p->kv_q8 ? "q8_0" : "f16", wpool, gib(g->b_scratch), p->max_rows, gib(need), gib(free_b));
        if (need + reserve > free_b) {
            tern_set_error("the model does not fit on GPU %d (%s): it needs %.2f GiB (weights %.2f + KV cache %.2f for %lld "
                           "rows + scratch %.2f) and %.2f GiB are free; try a smaller -c%s or --device cpu",
                           r, g_name, gib(need), gib(wb), gib(g->b_kv), (long long)p->kv_rows, gib(g->b_scratch),
                           gib(free_b), n_tp < TERN_TP_MAX ? ", a larger --tp" : "");
            refuse = 1;
        }
    }
    cudaSetDevice(0);
    if (refuse) {
        for (int r = 0; r < n_tp; r++) free(be->rk[r]);
        free(be);
        return NULL;
    }
    int fail = 0;
    if (n_tp > 1) {
        be->pool = tern_pool_new(n_tp);
        if (tern_pool_size(be->pool) < n_tp) { tern_set_error("cannot start %d threads for --tp", n_tp); fail = 1; }
    }
    /* the weights, once per model: every GPU uploads its shard at once */
    if (!fail && !cw) {
        cw = tern_xcalloc(1, sizeof *cw);
        *cw = plan_w;
        if (n_tp > 1) tern_pool_run(be->pool, upload_job, cw);
        else (void)wrank_upload(&cw->r[0]);
        for (int r = 0; r < n_tp && !fail; r++)
            if (cw->r[r].errmsg[0]) { tern_set_error("%s", cw->r[r].errmsg); fail = 1; }
        if (fail) weights_free(cw);
        else {
            tern_model *mm = (tern_model *)m; /* the model owns its device copies (model.h) */
            mm->dev_weights = cw;
            mm->dev_weights_free = weights_free;
        }
    }
    if (!fail)
        for (int r = 0; r < n_tp; r++) be->rk[r]->W = &cw->r[r];
    if (!fail) {
        if (n_tp > 1) tern_pool_run(be->pool, setup_job, be->rk);
        else (void)crank_setup(be->rk[0]);
        for (int r = 0; r < n_tp && !fail; r++)
            if (be->rk[r]->errmsg[0]) { tern_set_error("%s", be->rk[r]->errmsg); fail = 1; }
    }
    if (!fail && n_tp > 1) {
        ncclComm_t comms[TERN_TP_MAX];
        int devs[TERN_TP_MAX];
        for (int r = 0; r < n_tp; r++) devs[r] = r;
        ncclResult_t nr = nccl.CommInitAll(comms, n_tp, devs);
        if (nr != ncclSuccess) {
            tern_set_error("NCCL init over %d GPUs failed: %s", n_tp, nccl.fns.GetErrorString(nr));
            fail = 1;
        } else {
            for (int r = 0; r < n_tp; r++) be->rk[r]->comm = comms[r];
        }
        cudaSetDevice(0);
    }
    /* the f16 order's tiled layout, last (nothing of this engine can fail after it but the conversion itself), with the
     * order set first: an engine made earlier in another order is refused from here on, even if the conversion fails
     * midway, since its graphs and passes read the rows this frees */
    if (!fail && tile) {
        tcu_gemv_order_set(ord);
        if (wrank_tile(&cw->r[0]) != 0) fail = 1;
    }
    if (fail) {
        cuda_free(&be->base);
        return NULL;
    }
    tcu_gemv_order_set(ord); /* process-wide (tcu.h): an engine made with the other order refuses its passes (exec.c) */
    /* process-wide too (TERN_ATT_RPS): another value refuses passes (exec.c) */
    tcu_attention_rps_set(tern_cfg()->att_rps);
    tcu_attention_warps_set(tern_cfg()->att_warps); /* no bit depends on it */
    tcu_attention_ms_set(tern_cfg()->att_ms);       /* nor on this */
    tcu_gemm_hm_arm_set(tern_cfg()->hm_arm_lo, tern_cfg()->hm_arm_hi, tern_cfg()->hm_arm); /* nor on this */
    return &be->base;
}

#endif
