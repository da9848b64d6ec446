/* gpu_attention.c: tcu_attention (v1) and tcu_attention_ref (src/backend/cuda/attention.cu) against cpu_attention and a
 * float64 reference, then a timing table.
 *
 * Every case: fresh seeded random q (n, n_head, hd) f32 and f16 K/V cache (n_ctx, n_head_kv, hd), the output
 * poisoned with 0xFF bytes (NaN) before the launch so an unwritten element fails; token t at position pos0 + t.
 * Tolerances: relative L2 error vs float64 < 1e-5 (f32 softmax and accumulation on the same f16 inputs; the
 * f32 sum over up to 4098 rows is the largest term, ~1e-6), vs cpu_attention < 1e-4 (both f32, different
 * summation orders).
 * The paged cache (paged_case, paged_case_q8): every entry again over a pool of 16- and of 128-row pages in a random
 * order (two copies of the sequence, a decode call's tokens alternating between them by bt_off; a prefill call one
 * table), stale finite values in every other row: the output equals the identity's byte for byte.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend_cpu.h"
#include "check.h"
#include "cuda/tcu.h"
#include "quant.h"
#include "util.h"

/* attention.cu's reference variant and v2 over a Q8_0 cache (the kernel of devices that refuse v5's shared memory)
 * (not in tcu.h: tests only). */
void tcu_attention_ref(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                       const int32_t *bt, const int32_t *bt_off, int lbs, int win, int n_head, int n_head_kv, int hd, float scale,
                       float *out, cudaStream_t st);
void tcu_attention_split_q8_v2(const float *q, const int8_t *kq, const int8_t *vq, const uint16_t *ks, const uint16_t *vs,
                               int n, const int32_t *pos, const int32_t *bt, const int32_t *bt_off, int lbs, int win,
                               int n_head, int n_head_kv, int hd, float scale, float *out, float *ws, int splits, cudaStream_t st);

#define CK(call)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));          \
            exit(2);                                                                                         \
        }                                                                                                    \
    } while (0)

typedef void (*attn_fn)(const float *, const uint16_t *, const uint16_t *, int, const int32_t *, const int32_t *,
                        const int32_t *, int, int, int, int, int, float, float *, cudaStream_t);


static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float frand(float a) { return a * (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

/* float64 reference: two-pass softmax on the same f32 q and the K/V values as float (kf, vf: the f16 cache
 * converted, or a Q8_0 cache's q * d). out (n, n_head, hd). */
static void ref_f64_win(const float *q, const float *kc, const float *vc, int n, int pos0, int n_head, int n_head_kv,
                        int hd, double scale, int win, double *out) {
    const int group = n_head / n_head_kv;
    const size_t stride = (size_t)n_head_kv * hd;
    double *s = malloc(sizeof(double) * (pos0 + n));
    for (int t = 0; t < n; t++)
        for (int h = 0; h < n_head; h++) {
            const int hk = h / group, n_kv = pos0 + t + 1, j0 = win > 0 && n_kv - win > 0 ? n_kv - win : 0;
            const float *qh = q + ((size_t)t * n_head + h) * hd;
            double mx = -INFINITY, sum = 0.0;
            for (int j = j0; j < n_kv; j++) {
                const float *k = kc + j * stride + (size_t)hk * hd;
                double d = 0.0;
                for (int i = 0; i < hd; i++) d += (double)qh[i] * k[i];
                s[j] = d * scale;
                if (s[j] > mx) mx = s[j];
            }
            for (int j = j0; j < n_kv; j++) sum += (s[j] = exp(s[j] - mx));
            double *o = out + ((size_t)t * n_head + h) * hd;
            for (int i = 0; i < hd; i++) o[i] = 0.0;
            for (int j = j0; j < n_kv; j++) {
                const float *v = vc + j * stride + (size_t)hk * hd;
                for (int i = 0; i < hd; i++) o[i] += s[j] / sum * v[i];
            }
        }
    free(s);
}
static void ref_f64(const float *q, const float *kc, const float *vc, int n, int pos0, int n_head, int n_head_kv,
                    int hd, double scale, double *out) {
    ref_f64_win(q, kc, vc, n, pos0, n_head, n_head_kv, hd, scale, 0, out);
}

/* ||got - want|| / ||want||; *n_nan counts NaN elements of got (they make the result NaN too). */
static double rel_l2_d(const float *got, const double *want, size_t n, size_t *n_nan) {
    double num = 0.0, den = 0.0;
    *n_nan = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i])) ++*n_nan;
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
static double rel_l2_f(const float *got, const float *want, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        den += (double)want[i] * want[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

#define FLASH_TOL 2e-3
static double flash_worst; /* largest v3 error seen, printed at the end */
static double wg_worst[2]; /* largest error seen: v6a, v6b */
static int wg_runs[2];     /* cases each ran (0 off sm_90a) */
static const char *wg_name[2] = {"a", "b"};

/* ---- the paged cache: the same values through block tables give the same bits ----
 * A pool of pages of bs = 1 << lbs rows holds NSEQ copies of a contiguous cache (copy c's page i at pool page
 * pg[c * npg + i], a random permutation over npool = NSEQ * npg + 2 pages); every other row (the spare pages, the
 * tail of a last page) holds random finite "stale" values. Decode calls give token t copy t % NSEQ's table (bt_off),
 * a prefill call copy 0's; each call's output must equal the identity's (bt NULL on the contiguous cache) byte for
 * byte: the kernels read the same values in the same order. */
enum { NSEQ = 2 };
typedef struct {
    int lbs, npg, npool;
    int32_t *pg;             /* host: NSEQ * npg pool pages */
    int32_t *d_bt, *d_off;   /* device: the tables (NSEQ * npg), token t's offset (t % NSEQ) * npg (n entries) */
} pages;

static pages pages_new(int n_ctx, int lbs, int n) {
    pages P;
    P.lbs = lbs;
    P.npg = (n_ctx + (1 << lbs) - 1) >> lbs;
    P.npool = NSEQ * P.npg + 2;
    int32_t *perm = malloc(sizeof(int32_t) * (size_t)P.npool);
    for (int i = 0; i < P.npool; i++) perm[i] = i;
    for (int i = P.npool - 1; i > 0; i--) {
        const int j = (int)(next_u64() % (uint64_t)(i + 1)), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    P.pg = perm; /* the first NSEQ * npg entries are the tables */
    int32_t *off = malloc(sizeof(int32_t) * (size_t)n);
    for (int t = 0; t < n; t++) off[t] = (t % NSEQ) * P.npg;
    CK(cudaMalloc((void **)&P.d_bt, sizeof(int32_t) * (size_t)NSEQ * P.npg));
    CK(cudaMalloc((void **)&P.d_off, sizeof(int32_t) * (size_t)n));
    CK(cudaMemcpy(P.d_bt, perm, sizeof(int32_t) * (size_t)NSEQ * P.npg, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(P.d_off, off, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice));
    free(off);
    return P;
}
static void pages_free(pages *P) {
    free(P->pg);
    CK(cudaFree(P->d_bt));
    CK(cudaFree(P->d_off));
}
/* The device pool of a contiguous plane h of n_ctx rows of rb bytes; stale bytes from fill (kind 0: f16 values in
 * [-1, 1), 1: any byte, 2: f16 scales in [0.01, 0.03)). */
static void *pages_plane(const pages *P, const void *h, size_t rb, int n_ctx, int kind) {
    const int bs = 1 << P->lbs;
    const size_t bytes = rb * (size_t)P->npool * bs;
    uint8_t *pool = malloc(bytes);
    if (kind == 1) {
        for (size_t i = 0; i < bytes; i++) pool[i] = (uint8_t)next_u64();
    } else {
        for (size_t i = 0; i < bytes / 2; i++)
            ((uint16_t *)pool)[i] = tern_fp32_to_fp16(kind == 0 ? frand(1.0f) : 0.02f + frand(0.01f));
    }
    for (int c = 0; c < NSEQ; c++)
        for (int j = 0; j < n_ctx; j++) {
            const size_t pr = (size_t)P->pg[c * P->npg + (j >> P->lbs)] * bs + (size_t)(j & (bs - 1));
            memcpy(pool + pr * rb, (const uint8_t *)h + (size_t)j * rb, rb);
        }
    void *d;
    CK(cudaMalloc(&d, bytes));
    CK(cudaMemcpy(d, pool, bytes, cudaMemcpyHostToDevice));
    free(pool);
    return d;
}

/* Every f16 attention entry with the identity and with pages of 16 and 128 rows, byte for byte. */
static int g_paged_cases; /* calls compared */
static void paged_case(int hd, int n_head, int n_head_kv, int n, int pos0, const float *d_q, const int32_t *d_pos,
                       const uint16_t *kc, const uint16_t *vc) {
    const int n_ctx = pos0 + n;
    const size_t nq = (size_t)n * n_head * hd, rb = 2 * (size_t)n_head_kv * hd, nkv = (size_t)n_ctx * n_head_kv * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    const int S = 1 + (pos0 + n) % 17;
    float *d_out, *d_ws = NULL, *a = malloc(sizeof(float) * nq), *b = malloc(sizeof(float) * nq);
    uint16_t *d_k, *d_v;
    CK(cudaMalloc((void **)&d_out, sizeof(float) * nq));
    if (tcu_attention_ws_bytes(n, n_head, hd, S)) CK(cudaMalloc((void **)&d_ws, tcu_attention_ws_bytes(n, n_head, hd, S)));
    CK(cudaMalloc((void **)&d_k, 2 * nkv));
    CK(cudaMalloc((void **)&d_v, 2 * nkv));
    CK(cudaMemcpy(d_k, kc, 2 * nkv, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_v, vc, 2 * nkv, cudaMemcpyHostToDevice));
    const int flash = tcu_attention_flash_ok(n_head, n_head_kv, hd);
    static const int lbss[2] = {4, 7};
    for (int li = 0; li < 2; li++) {
        pages P = pages_new(n_ctx, lbss[li], n);
        uint16_t *pk = pages_plane(&P, kc, rb, n_ctx, 0), *pv = pages_plane(&P, vc, rb, n_ctx, 0);
        for (int kind = 0; kind < 7; kind++) {
            /* 0 tcu_attention, 1 ref, 2 split (n <= 16; tcu_attention_decode up to TCU_PASS_MAX), 3 v3, 4 v6a, 5 v6b,
             * 6 flash_rows */
            if (kind == 2 && n > TCU_PASS_MAX) continue;
            if (kind >= 3 && !flash) continue;
            if (kind == 4 && !tcu_attention_wg_ok(n_head, n_head_kv, hd)) continue;
            if (kind == 5 && !tcu_attention_wg_tma_ok(n_head, n_head_kv, hd)) continue;
            for (int pg = 0; pg < 2; pg++) {
                const uint16_t *k = pg ? pk : d_k, *v = pg ? pv : d_v;
                /* decode calls: a table a token (two copies of the sequence); prefill: one sequence */
                const int32_t *bt = pg ? P.d_bt : NULL, *off = pg && (n <= 16 || (kind == 2 && n <= TCU_PASS_MAX)) ? P.d_off : NULL;
                const int lbs = pg ? P.lbs : 0;
                CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
                switch (kind) {
                case 0: tcu_attention(d_q, k, v, n, d_pos, bt, off, lbs, 0, n_head, n_head_kv, hd, scale, d_out, 0); break;
                case 1: tcu_attention_ref(d_q, k, v, n, d_pos, bt, off, lbs, 0, n_head, n_head_kv, hd, scale, d_out, 0); break;
                case 2:
                    if (n <= 16)
                        tcu_attention_split(d_q, k, v, n, d_pos, bt, off, lbs, 0, n_head, n_head_kv, hd, scale, d_out, d_ws, S, 0);
                    else
                        tcu_attention_decode(d_q, k, v, NULL, NULL, n, d_pos, bt, off, lbs, 0, n_head, n_head_kv, hd, scale, d_out,
                                             d_ws, S, 0);
                    break;
                case 3: tcu_attention_flash_v3(d_q, k, v, n, d_pos, bt, lbs, 0, n_head, n_head_kv, hd, scale, d_out, 0); break;
                case 4: tcu_attention_wg(d_q, k, v, n, d_pos, bt, lbs, n_head, n_head_kv, hd, scale, d_out, 0); break;
                case 5: tcu_attention_wg_tma(d_q, k, v, n_ctx, n, d_pos, bt, lbs, n_head, n_head_kv, hd, scale, d_out, 0);
                    break;
                default: tcu_attention_flash_rows(d_q, k, v, n_ctx, n, d_pos, bt, lbs, n_head, n_head_kv, hd, scale, d_out, 0);
                }
                CK(cudaGetLastError());
                CK(cudaMemcpy(pg ? b : a, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            }
            g_paged_cases++;
            size_t n_nan = 0;
            for (size_t i = 0; i < nq; i++) n_nan += isnan(b[i]);
            CHECK(n_nan == 0 && memcmp(a, b, sizeof(float) * nq) == 0,
                  "paged (bs %d) call %d hd=%d heads=%d/%d n=%d pos0=%d: differs from the identity's (%zu NaN)",
                  1 << P.lbs, kind, hd, n_head, n_head_kv, n, pos0, n_nan);
        }
        CK(cudaFree(pk));
        CK(cudaFree(pv));
        pages_free(&P);
    }
    CK(cudaFree(d_out));
    if (d_ws) CK(cudaFree(d_ws));
    CK(cudaFree(d_k));
    CK(cudaFree(d_v));
    free(a), free(b);
}

/* The Q8_0-cache entries (the chooser's v5, v2, the x16 form) with the identity and with pages of 16 and 128 rows. */
static void paged_case_q8(int hd, int n_head, int n_head_kv, int n, int S, const float *d_q, const int32_t *d_pos,
                          const int8_t *kq, const int8_t *vq, const uint16_t *ks, const uint16_t *vs, int n_ctx) {
    const size_t nq = (size_t)n * n_head * hd, row = (size_t)n_head_kv * hd, nkv = (size_t)n_ctx * row;
    const float scale = 1.0f / sqrtf((float)hd);
    float *d_out, *d_ws = NULL, *a = malloc(sizeof(float) * nq), *b = malloc(sizeof(float) * nq);
    void *d_xq;
    const size_t xb = tcu_x16_bytes(n, (int64_t)n_head * hd);
    uint8_t *xa = malloc(xb), *xbb = malloc(xb);
    int8_t *d_kq, *d_vq;
    uint16_t *d_ks, *d_vs;
    CK(cudaMalloc((void **)&d_out, sizeof(float) * nq));
    CK(cudaMalloc(&d_xq, xb));
    if (tcu_attention_ws_bytes(n, n_head, hd, S)) CK(cudaMalloc((void **)&d_ws, tcu_attention_ws_bytes(n, n_head, hd, S)));
    CK(cudaMalloc((void **)&d_kq, nkv)); CK(cudaMalloc((void **)&d_vq, nkv));
    CK(cudaMalloc((void **)&d_ks, 2 * (nkv / 32))); CK(cudaMalloc((void **)&d_vs, 2 * (nkv / 32)));
    CK(cudaMemcpy(d_kq, kq, nkv, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_vq, vq, nkv, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_ks, ks, 2 * (nkv / 32), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_vs, vs, 2 * (nkv / 32), cudaMemcpyHostToDevice));
    static const int lbss[2] = {4, 7};
    for (int li = 0; li < 2; li++) {
        pages P = pages_new(n_ctx, lbss[li], n);
        int8_t *pkq = pages_plane(&P, kq, row, n_ctx, 1), *pvq = pages_plane(&P, vq, row, n_ctx, 1);
        uint16_t *pks = pages_plane(&P, ks, 2 * (row / 32), n_ctx, 2), *pvs = pages_plane(&P, vs, 2 * (row / 32), n_ctx, 2);
        for (int kind = 0; kind < 3; kind++) { /* 0 the chooser's, 1 v2, 2 decode_x16 */
            for (int pg = 0; pg < 2; pg++) {
                const int8_t *k = pg ? pkq : d_kq, *v = pg ? pvq : d_vq;
                const uint16_t *sk = pg ? pks : d_ks, *sv = pg ? pvs : d_vs;
                const int32_t *bt = pg ? P.d_bt : NULL, *off = pg ? P.d_off : NULL;
                const int lbs = pg ? P.lbs : 0;
                CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
                CK(cudaMemset(d_xq, 0x5A, xb));
                if (kind == 0)
                    tcu_attention_split_q8(d_q, k, v, sk, sv, n, d_pos, bt, off, lbs, 0, n_head, n_head_kv, hd, scale, d_out,
                                           d_ws, S, 0);
                else if (kind == 1)
                    tcu_attention_split_q8_v2(d_q, k, v, sk, sv, n, d_pos, bt, off, lbs, 0, n_head, n_head_kv, hd, scale,
                                              d_out, d_ws, S, 0);
                else
                    tcu_attention_decode_x16(d_q, k, v, sk, sv, n, d_pos, bt, off, lbs, 0, n_head, n_head_kv, hd, scale,
                                             d_out, d_ws, S, d_xq, 0);
                CK(cudaGetLastError());
                CK(cudaMemcpy(pg ? b : a, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(pg ? xbb : xa, d_xq, xb, cudaMemcpyDeviceToHost));
            }
            g_paged_cases++;
            CHECK(memcmp(a, b, sizeof(float) * nq) == 0 && (kind < 2 || memcmp(xa, xbb, xb) == 0),
                  "paged q8 (bs %d) call %d hd=%d heads=%d/%d n=%d: differs from the identity's", 1 << P.lbs, kind, hd,
                  n_head, n_head_kv, n);
        }
        CK(cudaFree(pkq)); CK(cudaFree(pvq)); CK(cudaFree(pks)); CK(cudaFree(pvs));
        pages_free(&P);
    }
    CK(cudaFree(d_out)); CK(cudaFree(d_xq));
    if (d_ws) CK(cudaFree(d_ws));
    CK(cudaFree(d_kq)); CK(cudaFree(d_vq)); CK(cudaFree(d_ks)); CK(cudaFree(d_vs));
    free(a), free(b), free(xa), free(xbb);
}

static void run_case(tern_pool *pool, int hd, int n_head, int n_head_kv, int n, int pos0) {
    const int n_ctx = pos0 + n;
    const size_t nq = (size_t)n * n_head * hd, nkv = (size_t)n_ctx * n_head_kv * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    float *q = malloc(sizeof(float) * nq), *o_cpu = malloc(sizeof(float) * nq), *o_gpu = malloc(sizeof(float) * nq);
    double *o_ref = malloc(sizeof(double) * nq);
    uint16_t *kc = malloc(2 * nkv), *vc = malloc(2 * nkv);
    int32_t *pos = malloc(sizeof(int32_t) * n);
    float *scratch = malloc(sizeof(float) * (size_t)tern_pool_size(pool) * n_ctx);
    /* |q| up to 3: scores up to ~3*sqrt(hd)/3, so the softmax is far from flat */
    for (size_t i = 0; i < nq; i++) q[i] = frand(3.0f);
    for (size_t i = 0; i < nkv; i++) kc[i] = tern_fp32_to_fp16(frand(1.0f)), vc[i] = tern_fp32_to_fp16(frand(1.0f));
    for (int t = 0; t < n; t++) pos[t] = pos0 + t;

    float *kf = malloc(sizeof(float) * nkv), *vf = malloc(sizeof(float) * nkv);
    for (size_t i = 0; i < nkv; i++) kf[i] = tern_fp16_to_fp32(kc[i]), vf[i] = tern_fp16_to_fp32(vc[i]);
    ref_f64(q, kf, vf, n, pos0, n_head, n_head_kv, hd, scale, o_ref);
    free(kf), free(vf);
    cpu_attention(pool, q, kc, vc, n, pos0, n_head, n_head_kv, hd, scale, o_cpu, scratch);

    float *d_q, *d_out;
    uint16_t *d_k, *d_v;
    int32_t *d_pos;
    CK(cudaMalloc((void **)&d_q, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_out, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_k, 2 * nkv));
    CK(cudaMalloc((void **)&d_v, 2 * nkv));
    CK(cudaMalloc((void **)&d_pos, sizeof(int32_t) * n));
    CK(cudaMemcpy(d_q, q, sizeof(float) * nq, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_k, kc, 2 * nkv, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_v, vc, 2 * nkv, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_pos, pos, sizeof(int32_t) * n, cudaMemcpyHostToDevice));

    const attn_fn fns[2] = {tcu_attention, tcu_attention_ref};
    const char *names[2] = {"v1", "ref"};
    /* tcu_attention is v1 for n <= 16 and for shapes without a flash kernel (hd 160 here); the flash kernels below */
    const int v1_runs = n <= 16 || !tcu_attention_flash_ok(n_head, n_head_kv, hd);
    for (int v = v1_runs ? 0 : 1; v < 2; v++) {
        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
        fns[v](d_q, d_k, d_v, n, d_pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out, 0);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(o_gpu, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        size_t n_nan;
        const double e64 = rel_l2_d(o_gpu, o_ref, nq, &n_nan), ecpu = rel_l2_f(o_gpu, o_cpu, nq);
        CHECK(n_nan == 0, "%s hd=%d heads=%d/%d n=%d pos0=%d: %zu of %zu outputs NaN (unwritten?)", names[v], hd,
              n_head, n_head_kv, n, pos0, n_nan, nq);
        CHECK(e64 < 1e-5, "%s hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g", names[v], hd, n_head,
              n_head_kv, n, pos0, e64);
        CHECK(ecpu < 1e-4, "%s hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs cpu_attention %.3g", names[v], hd, n_head,
              n_head_kv, n, pos0, ecpu);
    }
    /* v3 (tensor-core flash attention, mma.sync, any n; the chooser's kernel below sm_90a): Q and P rounded to f16, so
     * the bound is FLASH_TOL (f16 unit roundoff 2^-11 = 4.9e-4 on Q and P; measured ~3e-4) */
    if (tcu_attention_flash_ok(n_head, n_head_kv, hd)) {
        float *o_v = malloc(sizeof(float) * nq);
        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
        CHECK(tcu_attention_flash_v3(d_q, d_k, d_v, n, d_pos, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out, 0) == 1,
              "v3 hd=%d: declined", hd);
        CK(cudaGetLastError());
        CK(cudaMemcpy(o_gpu, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        size_t n_nan;
        double e64 = rel_l2_d(o_gpu, o_ref, nq, &n_nan);
        if (e64 > flash_worst) flash_worst = e64;
        CHECK(n_nan == 0 && e64 < FLASH_TOL, "v3 hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g (%zu NaN)", hd,
              n_head, n_head_kv, n, pos0, e64, n_nan);
        /* v6 (wgmma, sm_90a; v6a hd 64/128, v6b also 256), the same bound: v6a (cp.async) through tcu_attention_wg,
         * v6b (TMA) through tcu_attention_wg_tma on a copy of the cache followed by WG_PAD rows of f16 NaN past
         * kv_rows = n_ctx: a last block that runs past kv_rows reads TMA's zero fill there, never the NaN rows */
        enum { WG_PAD = 200 };
        const size_t row = (size_t)n_head_kv * hd;
        uint16_t *d_kp, *d_vp;
        CK(cudaMalloc((void **)&d_kp, 2 * (nkv + WG_PAD * row)));
        CK(cudaMalloc((void **)&d_vp, 2 * (nkv + WG_PAD * row)));
        CK(cudaMemset(d_kp, 0xFF, 2 * (nkv + WG_PAD * row))); /* 0xFFFF: an f16 NaN */
        CK(cudaMemset(d_vp, 0xFF, 2 * (nkv + WG_PAD * row)));
        CK(cudaMemcpy(d_kp, kc, 2 * nkv, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_vp, vc, 2 * nkv, cudaMemcpyHostToDevice));
        float *o_wg[2] = {malloc(sizeof(float) * nq), malloc(sizeof(float) * nq)};
        int ran[2];
        for (int ver = 0; ver < 2; ver++) { /* v6a, v6b */
            CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
            ran[ver] = ver == 0 ? tcu_attention_wg(d_q, d_k, d_v, n, d_pos, NULL, 0, n_head, n_head_kv, hd, scale, d_out, 0)
                                : tcu_attention_wg_tma(d_q, d_kp, d_vp, n_ctx, n, d_pos, NULL, 0, n_head, n_head_kv, hd,
                                                       scale, d_out, 0);
            CK(cudaGetLastError());
            CHECK(ran[ver] == (ver == 0 ? tcu_attention_wg_ok(n_head, n_head_kv, hd)
                                        : tcu_attention_wg_tma_ok(n_head, n_head_kv, hd)),
                  "v6%s hd=%d: launched %d, its _ok says otherwise", wg_name[ver], hd, ran[ver]);
            if (!ran[ver]) continue;
            wg_runs[ver]++;
            CK(cudaMemcpy(o_wg[ver], d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            e64 = rel_l2_d(o_wg[ver], o_ref, nq, &n_nan);
            if (e64 > wg_worst[ver]) wg_worst[ver] = e64;
            CHECK(n_nan == 0 && e64 < FLASH_TOL, "v6%s hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g (%zu NaN)",
                  wg_name[ver], hd, n_head, n_head_kv, n, pos0, e64, n_nan);
        }
        /* the dispatchers give the chooser's variant, byte for byte: tcu_attention_flash_rows (kv_rows = n_ctx),
         * tcu_attention_flash (no rows) and tcu_attention for n > 16 */
        for (int a = 0; a < 3; a++) {
            if (a == 2 && n <= 16) continue;
            const int var = tcu_attention_flash_variant(n_head, n_head_kv, hd, a == 0 ? n_ctx : 0);
            const float *want = var == TCU_FLASH_V6B ? o_wg[1] : var == TCU_FLASH_V6A ? o_wg[0] : o_gpu;
            CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
            if (a == 0)
                tcu_attention_flash_rows(d_q, d_kp, d_vp, n_ctx, n, d_pos, NULL, 0, n_head, n_head_kv, hd, scale, d_out, 0);
            else if (a == 1) tcu_attention_flash(d_q, d_k, d_v, n, d_pos, NULL, 0, n_head, n_head_kv, hd, scale, d_out, 0);
            else tcu_attention(d_q, d_k, d_v, n, d_pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out, 0);
            CK(cudaMemcpy(o_v, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            CHECK(var == TCU_FLASH_V3 || var == TCU_FLASH_V6A || var == TCU_FLASH_V6B, "flash hd=%d: variant %d", hd, var);
            CHECK(memcmp(o_v, want, sizeof(float) * nq) == 0,
                  "flash hd=%d heads=%d/%d n=%d pos0=%d: dispatcher %d (variant %d) differs from the direct call", hd,
                  n_head, n_head_kv, n, pos0, a, var);
        }
        CK(cudaFree(d_kp));
        CK(cudaFree(d_vp));
        free(o_wg[0]), free(o_wg[1]), free(o_v);
    }
    /* v2 (split-K decode: tcu_attention_split at n <= 16, tcu_attention_decode up to TCU_PASS_MAX, a batched step's
     * pass): against float64 as above, and every token's row bit-identical to a one-token call at its position; at n
     * <= 16 the two entries give the same bytes */
    if (n <= TCU_PASS_MAX) {
        float *d_ws = NULL, *o_one = malloc(sizeof(float) * nq);
        const int S = 1 + (pos0 + n) % 17; /* 1..17 splits: empty splits happen when S > the rows */
        const size_t wsb = tcu_attention_ws_bytes(n, n_head, hd, S);
        if (wsb) CK(cudaMalloc((void **)&d_ws, wsb));
        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
        if (n <= 16)
            tcu_attention_split(d_q, d_k, d_v, n, d_pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out, d_ws, S, 0);
        else
            tcu_attention_decode(d_q, d_k, d_v, NULL, NULL, n, d_pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out,
                                 d_ws, S, 0);
        CK(cudaGetLastError());
        CK(cudaMemcpy(o_gpu, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        if (n <= 16) {
            CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
            tcu_attention_decode(d_q, d_k, d_v, NULL, NULL, n, d_pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out,
                                 d_ws, S, 0);
            CK(cudaMemcpy(o_one, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            CHECK(memcmp(o_one, o_gpu, sizeof(float) * nq) == 0,
                  "decode hd=%d heads=%d/%d n=%d pos0=%d: tcu_attention_decode differs from tcu_attention_split", hd,
                  n_head, n_head_kv, n, pos0);
        }
        size_t n_nan;
        const double e64 = rel_l2_d(o_gpu, o_ref, nq, &n_nan);
        CHECK(n_nan == 0 && e64 < 1e-5, "v2 hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g (%zu NaN)", hd, n_head,
              n_head_kv, n, pos0, e64, n_nan);
        const size_t row = (size_t)n_head * hd;
        for (int t = 0; t < n; t++)
            tcu_attention_split(d_q + t * row, d_k, d_v, 1, d_pos + t, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale,
                                d_out + t * row, d_ws, S, 0);
        CK(cudaMemcpy(o_one, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        CHECK(memcmp(o_one, o_gpu, sizeof(float) * nq) == 0, "v2 hd=%d heads=%d/%d n=%d pos0=%d: a token's row differs "
              "from its one-token call", hd, n_head, n_head_kv, n, pos0);
        if (d_ws) CK(cudaFree(d_ws));
        free(o_one);
    }
    paged_case(hd, n_head, n_head_kv, n, pos0, d_q, d_pos, kc, vc);
    CK(cudaFree(d_q));
    CK(cudaFree(d_out));
    CK(cudaFree(d_k));
    CK(cudaFree(d_v));
    CK(cudaFree(d_pos));
    free(q), free(o_cpu), free(o_gpu), free(o_ref), free(kc), free(vc), free(pos), free(scratch);
}

/* tcu_attention_split_q8 (Q8_0 cache, n <= 16): random f32 K/V quantized by tern_quantize_activation(Q8_0)
 * (the CPU's rule) into the int8 and scale planes; against float64 on the dequantized q * d (exact in f32,
 * so the f16 case's bound 1e-5 holds), with 1 split and with S splits, and every token's row equal to its
 * one-token call (the verify property). */
static int g_q8w_smem_ok; /* the device grants v5's largest CTA (~152 KiB at hd 256; sm_80/sm_90 do) */
static void run_case_q8(int hd, int n_head, int n_head_kv, int n, int pos0, int S0) {
    const int n_ctx = pos0 + n, row = n_head_kv * hd;
    const size_t nq = (size_t)n * n_head * hd, nkv = (size_t)n_ctx * row;
    const float scale = 1.0f / sqrtf((float)hd);
    float *q = malloc(sizeof(float) * nq), *o_gpu = malloc(sizeof(float) * nq), *o_one = malloc(sizeof(float) * nq);
    float *kf = malloc(sizeof(float) * nkv), *vf = malloc(sizeof(float) * nkv);
    double *o_ref = malloc(sizeof(double) * nq);
    int8_t *kq = malloc(nkv), *vq = malloc(nkv);
    uint16_t *ks = malloc(2 * (nkv / 32)), *vs = malloc(2 * (nkv / 32));
    uint8_t *blk = malloc((size_t)row / 32 * 34);
    int32_t *pos = malloc(sizeof(int32_t) * n);
    for (size_t i = 0; i < nq; i++) q[i] = frand(3.0f);
    for (int kv = 0; kv < 2; kv++) {
        float *f = kv ? vf : kf;
        int8_t *pq = kv ? vq : kq;
        uint16_t *ps = kv ? vs : ks;
        for (size_t i = 0; i < nkv; i++) f[i] = frand(1.0f);
        for (int r = 0; r < n_ctx; r++) { /* quantize a row, split the blocks into planes, keep q * d */
            tern_quantize_activation(TERN_TYPE_Q8_0, f + (size_t)r * row, blk, row);
            for (int b = 0; b < row / 32; b++) {
                memcpy(&ps[(size_t)r * (row / 32) + b], blk + (size_t)b * 34, 2);
                memcpy(&pq[(size_t)r * row + b * 32], blk + (size_t)b * 34 + 2, 32);
                const float d = tern_fp16_to_fp32(ps[(size_t)r * (row / 32) + b]);
                for (int j = 0; j < 32; j++) f[(size_t)r * row + b * 32 + j] = (float)pq[(size_t)r * row + b * 32 + j] * d;
            }
        }
    }
    for (int t = 0; t < n; t++) pos[t] = pos0 + t;
    ref_f64(q, kf, vf, n, pos0, n_head, n_head_kv, hd, scale, o_ref);
    float *d_q, *d_out, *d_ws = NULL;
    int8_t *d_kq, *d_vq;
    uint16_t *d_ks, *d_vs;
    int32_t *d_pos;
    CK(cudaMalloc((void **)&d_q, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_out, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_kq, nkv));
    CK(cudaMalloc((void **)&d_vq, nkv));
    CK(cudaMalloc((void **)&d_ks, 2 * (nkv / 32)));
    CK(cudaMalloc((void **)&d_vs, 2 * (nkv / 32)));
    CK(cudaMalloc((void **)&d_pos, sizeof(int32_t) * n));
    CK(cudaMemcpy(d_q, q, sizeof(float) * nq, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_kq, kq, nkv, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_vq, vq, nkv, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_ks, ks, 2 * (nkv / 32), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_vs, vs, 2 * (nkv / 32), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_pos, pos, sizeof(int32_t) * n, cudaMemcpyHostToDevice));
    const int S = S0 > 0 ? S0 : 1 + (pos0 + n) % 17; /* S0: the grid's splits (16 as the backend's at depth) */
    const size_t wsb = tcu_attention_ws_bytes(n, n_head, hd, S);
    if (wsb) CK(cudaMalloc((void **)&d_ws, wsb));
    const size_t qrow = (size_t)n_head * hd;
    /* the chooser's kernel (v5, 16 int8 a lane, where the device grants its shared memory) and v2 (the kernel of
     * devices that refuse it): each against float64, 1 and S splits, and each token's row equal to its one-token call */
    typedef void (*q8_fn)(const float *, const int8_t *, const int8_t *, const uint16_t *, const uint16_t *, int,
                          const int32_t *, const int32_t *, const int32_t *, int, int, int, int, int, float, float *, float *,
                          int, cudaStream_t);
    for (int wide = 1; wide >= 0; wide--) {
        const q8_fn fn = wide ? tcu_attention_split_q8 : tcu_attention_split_q8_v2;
        const int v5 = wide && tcu_attention_q8_wide(n_head, n_head_kv, hd);
        const char *kn = v5 ? "v5" : "v2";
        if (wide && g_q8w_smem_ok)
            CHECK(v5, "q8 hd=%d heads=%d/%d: the chooser does not take v5", hd, n_head, n_head_kv);
        for (int split = 0; split < 2; split++) {
            CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
            const uint64_t c0 = tcu_attention_q8w_count();
            fn(d_q, d_kq, d_vq, d_ks, d_vs, n, d_pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out,
               split ? d_ws : NULL, split ? S : 1, 0);
            CK(cudaGetLastError());
            /* the kernel that ran is the one the chooser names */
            CHECK(tcu_attention_q8w_count() - c0 == (uint64_t)v5, "q8 %s hd=%d heads=%d/%d: %llu v5 launches", kn, hd,
                  n_head, n_head_kv, (unsigned long long)(tcu_attention_q8w_count() - c0));
            CK(cudaMemcpy(o_gpu, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            size_t n_nan;
            const double e64 = rel_l2_d(o_gpu, o_ref, nq, &n_nan);
            CHECK(n_nan == 0 && e64 < 1e-5, "q8 %s (%d splits) hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g "
                  "(%zu NaN)", kn, split ? S : 1, hd, n_head, n_head_kv, n, pos0, e64, n_nan);
        }
        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
        for (int t = 0; t < n; t++)
            fn(d_q + t * qrow, d_kq, d_vq, d_ks, d_vs, 1, d_pos + t, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale,
               d_out + t * qrow, d_ws, S, 0);
        CK(cudaMemcpy(o_one, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        CHECK(memcmp(o_one, o_gpu, sizeof(float) * nq) == 0, "q8 %s hd=%d heads=%d/%d n=%d pos0=%d: a token's row "
              "differs from its one-token call", kn, hd, n_head, n_head_kv, n, pos0);
    }
    paged_case_q8(hd, n_head, n_head_kv, n, S, d_q, d_pos, kq, vq, ks, vs, n_ctx);
    CK(cudaFree(d_q)); CK(cudaFree(d_out)); CK(cudaFree(d_kq)); CK(cudaFree(d_vq)); CK(cudaFree(d_ks)); CK(cudaFree(d_vs));
    CK(cudaFree(d_pos));
    if (d_ws) CK(cudaFree(d_ws));
    free(q), free(o_gpu), free(o_one), free(kf), free(vf), free(o_ref), free(kq), free(vq), free(ks), free(vs), free(blk),
        free(pos);
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median of 20 timed launches (after 3 warm-ups) for n tokens at positions pos0..: ver 0 tcu_attention_split (v1, v2
 * with split splits), BV_V3 v3, BV_V6A v6a, BV_FLASH the chooser with the cache's rows (as the backend calls it). */
enum { BV_SPLIT = 0, BV_V3 = 3, BV_V6A = 6, BV_FLASH = 7 };
static void bench(const char *label, int hd, int n_head, int n_head_kv, int n, int pos0, int split, int ver) {
    const int n_ctx = pos0 + n, reps = 20;
    const size_t nq = (size_t)n * n_head * hd, nkv = (size_t)n_ctx * n_head_kv * hd;
    float *d_q, *d_out;
    uint16_t *d_k, *d_v;
    int32_t *d_pos, *pos = malloc(sizeof(int32_t) * n);
    for (int t = 0; t < n; t++) pos[t] = pos0 + t;
    CK(cudaMalloc((void **)&d_q, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_out, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_k, 2 * nkv));
    CK(cudaMalloc((void **)&d_v, 2 * nkv));
    CK(cudaMalloc((void **)&d_pos, sizeof(int32_t) * n));
    CK(cudaMemcpy(d_pos, pos, sizeof(int32_t) * n, cudaMemcpyHostToDevice));
    /* uniform random operands in [-1, 1) (never zeros or a constant: the tensor cores' power, and so the clock,
     * depend on the data) */
    tcu_fill_uniform(d_q, nq, TCU_FILL_F32, 1, 0);
    tcu_fill_uniform(d_k, nkv, TCU_FILL_F16, 2, 0);
    tcu_fill_uniform(d_v, nkv, TCU_FILL_F16, 3, 0);
    const float scale = 1.0f / sqrtf((float)hd);
    float *d_ws = NULL;
    if (split) CK(cudaMalloc((void **)&d_ws, tcu_attention_ws_bytes(n, n_head, hd, split)));
    /* a prefill chunk through the flash kernels as the backend calls them (the cache's rows known: v6b) */
#define BENCH_CALL()                                                                                              \
    do {                                                                                                          \
        if (ver == BV_FLASH)                                                                                      \
            tcu_attention_flash_rows(d_q, d_k, d_v, n_ctx, n, d_pos, NULL, 0, n_head, n_head_kv, hd, scale, d_out, 0); \
        else if (ver == BV_V3)                                                                                    \
            tcu_attention_flash_v3(d_q, d_k, d_v, n, d_pos, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out, 0);  \
        else if (ver == BV_V6A)                                                                                   \
            tcu_attention_wg(d_q, d_k, d_v, n, d_pos, NULL, 0, n_head, n_head_kv, hd, scale, d_out, 0);           \
        else                                                                                                      \
            tcu_attention_split(d_q, d_k, d_v, n, d_pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out, d_ws, \
                                split, 0);                                                                        \
    } while (0)
    for (int i = 0; i < 3; i++) BENCH_CALL();
    CK(cudaGetLastError());
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float ms[20];
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(e0, 0));
        BENCH_CALL();
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    CK(cudaGetLastError());
    qsort(ms, reps, sizeof(float), cmp_float);
    const double med = 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]) * 1e-3; /* seconds */
    /* bytes: K and V rows each token reads (once per KV head); flops: 4*hd per (query head, visible row) */
    double rows = 0.0;
    for (int t = 0; t < n; t++) rows += pos0 + t + 1;
    const double kv_bytes = (double)(pos0 + n) * n_head_kv * hd * 2 * 2, flops = 4.0 * hd * n_head * rows;
    printf("%-34s %12.1f us %10.1f GB/s (KV once) %10.2f TFLOP/s\n", label, med * 1e6, kv_bytes / med * 1e-9,
           flops / med * 1e-12);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(d_q));
    CK(cudaFree(d_out));
    CK(cudaFree(d_k));
    CK(cudaFree(d_v));
    CK(cudaFree(d_pos));
    if (d_ws) CK(cudaFree(d_ws));
    free(pos);
}

/* Median of 20 timed one-token launches of tcu_attention_split_q8 at position pos (16 splits), the chooser's kernel
 * or v2 (wide 0). Bytes: the visible K/V rows once, int8 plus the f16 scale a block (1.0625 bytes an element). */
static void bench_q8(const char *label, int hd, int n_head, int n_head_kv, int pos, int wide) {
    const int n_ctx = pos + 1, reps = 20, splits = 16;
    const size_t nq = (size_t)n_head * hd, nkv = (size_t)n_ctx * n_head_kv * hd;
    float *d_q, *d_out, *d_ws;
    int8_t *d_k, *d_v;
    uint16_t *d_ks, *d_vs;
    int32_t *d_pos;
    CK(cudaMalloc((void **)&d_q, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_out, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_k, nkv));
    CK(cudaMalloc((void **)&d_v, nkv));
    CK(cudaMalloc((void **)&d_ks, 2 * (nkv / 32)));
    CK(cudaMalloc((void **)&d_vs, 2 * (nkv / 32)));
    CK(cudaMalloc((void **)&d_pos, sizeof(int32_t)));
    CK(cudaMalloc((void **)&d_ws, tcu_attention_ws_bytes(1, n_head, hd, splits)));
    CK(cudaMemcpy(d_pos, &pos, sizeof(int32_t), cudaMemcpyHostToDevice));
    /* random operands, never zeros: int8 planes from random f16 bits' bytes, scales f16 in [-1, 1) */
    tcu_fill_uniform(d_q, nq, TCU_FILL_F32, 4, 0);
    tcu_fill_uniform(d_k, nkv / 2, TCU_FILL_F16, 5, 0);
    tcu_fill_uniform(d_v, nkv / 2, TCU_FILL_F16, 6, 0);
    tcu_fill_uniform(d_ks, nkv / 32, TCU_FILL_F16, 7, 0);
    tcu_fill_uniform(d_vs, nkv / 32, TCU_FILL_F16, 8, 0);
    const float scale = 1.0f / sqrtf((float)hd);
    void (*fn)(const float *, const int8_t *, const int8_t *, const uint16_t *, const uint16_t *, int, const int32_t *,
               const int32_t *, const int32_t *, int, int, int, int, int, float, float *, float *, int, cudaStream_t) =
        wide ? tcu_attention_split_q8 : tcu_attention_split_q8_v2;
    for (int i = 0; i < 3; i++)
        fn(d_q, d_k, d_v, d_ks, d_vs, 1, d_pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out, d_ws, splits, 0);
    CK(cudaGetLastError());
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float ms[20];
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(e0, 0));
        fn(d_q, d_k, d_v, d_ks, d_vs, 1, d_pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, d_out, d_ws, splits, 0);
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    CK(cudaGetLastError());
    qsort(ms, reps, sizeof(float), cmp_float);
    const double med = 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]) * 1e-3;
    const double kv_bytes = (double)n_ctx * n_head_kv * hd * 2 * 1.0625;
    printf("%-34s %12.1f us %10.1f GB/s (KV once)\n", label, med * 1e6, kv_bytes / med * 1e-9);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(d_q)); CK(cudaFree(d_out)); CK(cudaFree(d_k)); CK(cudaFree(d_v)); CK(cudaFree(d_ks)); CK(cudaFree(d_vs));
    CK(cudaFree(d_pos)); CK(cudaFree(d_ws));
}

/* argv[1] == "q8": only the Q8_0-cache cases (a quick check) and their timings. */
/* The sliding window (a recipe's tern_layer.window, Gemma 3): token t at position p attends to keys [p - win + 1, p]
 * only. Every entry that takes win against float64 with the window (and, as a mutation check, not without it where
 * the window cuts keys): the f16 decode split (1 and 16 splits), the x16 form, the ref kernel, a prefill chunk
 * (tcu_attention: flash v3 with the window, v1 where no flash kernel takes the head dim), and the Q8_0 cache's
 * chooser kernel and v2. */
static int g_win_cases, g_win_v3;
static void window_case(int hd, int n_head, int n_head_kv, int n, int pos0, int win) {
    const int n_ctx = pos0 + n, row = n_head_kv * hd;
    const size_t nq = (size_t)n * n_head * hd, nkv = (size_t)n_ctx * row;
    const float scale = 1.0f / sqrtf((float)hd);
    float *q = malloc(sizeof(float) * nq), *got = malloc(sizeof(float) * nq);
    float *kf = malloc(sizeof(float) * nkv), *vf = malloc(sizeof(float) * nkv);
    float *kq8f = malloc(sizeof(float) * nkv), *vq8f = malloc(sizeof(float) * nkv);
    double *ref = malloc(sizeof(double) * nq), *ref_all = malloc(sizeof(double) * nq), *ref8 = malloc(sizeof(double) * nq);
    uint16_t *kc = malloc(2 * nkv), *vc = malloc(2 * nkv), *ks = malloc(2 * (nkv / 32)), *vs = malloc(2 * (nkv / 32));
    int8_t *kq = malloc(nkv), *vq = malloc(nkv);
    int32_t *pos = malloc(sizeof(int32_t) * n);
    for (size_t i = 0; i < nq; i++) q[i] = frand(3.0f);
    for (size_t i = 0; i < nkv; i++) {
        kc[i] = tern_fp32_to_fp16(frand(1.0f)), vc[i] = tern_fp32_to_fp16(frand(1.0f));
        kf[i] = tern_fp16_to_fp32(kc[i]), vf[i] = tern_fp16_to_fp32(vc[i]);
    }
    for (size_t b = 0; b < nkv / 32; b++) { /* a Q8_0 cache of random int8 and scales, its values for the reference */
        ks[b] = tern_fp32_to_fp16(0.004f + 0.004f * (float)(next_u64() % 1000) / 1000.0f);
        vs[b] = tern_fp32_to_fp16(0.004f + 0.004f * (float)(next_u64() % 1000) / 1000.0f);
        for (int j = 0; j < 32; j++) {
            const size_t i = b * 32 + (size_t)j;
            kq[i] = (int8_t)(next_u64() % 255 - 127), vq[i] = (int8_t)(next_u64() % 255 - 127);
            kq8f[i] = kq[i] * tern_fp16_to_fp32(ks[b]), vq8f[i] = vq[i] * tern_fp16_to_fp32(vs[b]);
        }
    }
    for (int t = 0; t < n; t++) pos[t] = pos0 + t;
    ref_f64_win(q, kf, vf, n, pos0, n_head, n_head_kv, hd, scale, win, ref);
    ref_f64_win(q, kf, vf, n, pos0, n_head, n_head_kv, hd, scale, 0, ref_all);
    ref_f64_win(q, kq8f, vq8f, n, pos0, n_head, n_head_kv, hd, scale, win, ref8);
    const int cut = pos0 + n > win; /* the window leaves out some token's keys */
    float *d_q, *d_out, *d_ws = NULL;
    uint16_t *d_k, *d_v, *d_ks, *d_vs;
    int8_t *d_kq, *d_vq;
    int32_t *d_pos;
    void *d_xq;
    const int S = 16;
    CK(cudaMalloc((void **)&d_q, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_out, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_k, 2 * nkv)); CK(cudaMalloc((void **)&d_v, 2 * nkv));
    CK(cudaMalloc((void **)&d_kq, nkv)); CK(cudaMalloc((void **)&d_vq, nkv));
    CK(cudaMalloc((void **)&d_ks, 2 * (nkv / 32))); CK(cudaMalloc((void **)&d_vs, 2 * (nkv / 32)));
    CK(cudaMalloc((void **)&d_pos, sizeof(int32_t) * n));
    CK(cudaMalloc(&d_xq, tcu_x16_bytes(n, (int64_t)n_head * hd)));
    if (tcu_attention_ws_bytes(n, n_head, hd, S)) CK(cudaMalloc((void **)&d_ws, tcu_attention_ws_bytes(n, n_head, hd, S)));
    CK(cudaMemcpy(d_q, q, sizeof(float) * nq, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_k, kc, 2 * nkv, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_v, vc, 2 * nkv, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_kq, kq, nkv, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_vq, vq, nkv, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_ks, ks, 2 * (nkv / 32), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_vs, vs, 2 * (nkv / 32), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_pos, pos, sizeof(int32_t) * n, cudaMemcpyHostToDevice));
    const int q8ok = hd == 64 || hd == 128 || hd == 256;
    static const char *names[] = {"ref", "tcu_attention", "split 1", "split 16", "decode_x16", "q8 chooser", "q8 v2"};
    for (int c = 0; c < 7; c++) {
        if (c >= 2 && n > TCU_MULTI_MAX) continue; /* the decode entries take <= 16 tokens */
        if (c >= 5 && !q8ok) continue;
        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
        switch (c) {
        case 0: tcu_attention_ref(d_q, d_k, d_v, n, d_pos, NULL, NULL, 0, win, n_head, n_head_kv, hd, scale, d_out, 0); break;
        case 1: tcu_attention(d_q, d_k, d_v, n, d_pos, NULL, NULL, 0, win, n_head, n_head_kv, hd, scale, d_out, 0); break;
        case 2:
        case 3:
            tcu_attention_split(d_q, d_k, d_v, n, d_pos, NULL, NULL, 0, win, n_head, n_head_kv, hd, scale, d_out, d_ws,
                                c == 2 ? 1 : S, 0);
            break;
        case 4:
            tcu_attention_decode_x16(d_q, d_k, d_v, NULL, NULL, n, d_pos, NULL, NULL, 0, win, n_head, n_head_kv, hd,
                                     scale, d_out, d_ws, S, d_xq, 0);
            break;
        case 5:
            tcu_attention_split_q8(d_q, d_kq, d_vq, d_ks, d_vs, n, d_pos, NULL, NULL, 0, win, n_head, n_head_kv, hd, scale,
                                   d_out, d_ws, S, 0);
            break;
        default:
            tcu_attention_split_q8_v2(d_q, d_kq, d_vq, d_ks, d_vs, n, d_pos, NULL, NULL, 0, win, n_head, n_head_kv, hd,
                                      scale, d_out, d_ws, S, 0);
        }
        CK(cudaGetLastError());
        CK(cudaMemcpy(got, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        size_t n_nan = 0;
        const double e = rel_l2_d(got, c >= 5 ? ref8 : ref, nq, &n_nan), e_all = rel_l2_d(got, ref_all, nq, &n_nan);
        g_win_cases++;
        /* a prefill chunk through tcu_attention runs flash v3 with the window where the shape has it: f16 Q and P */
        const int v3 = c == 1 && n > TCU_MULTI_MAX && tcu_attention_flash_ok(n_head, n_head_kv, hd);
        g_win_v3 += v3;
        CHECK(n_nan == 0 && e < (v3 ? FLASH_TOL : 1e-5),
              "window %d %s%s hd=%d heads=%d/%d n=%d pos0=%d: rel L2 %.3g vs float64 (%zu NaN)", win, names[c],
              v3 ? " (v3)" : "", hd, n_head, n_head_kv, n, pos0, e, n_nan);
        if (cut && c < 5) CHECK(e_all > 1e-3, "window %d %s n=%d pos0=%d: equals the unwindowed result (%.3g)", win,
                                names[c], n, pos0, e_all);
    }
    /* the paged cache under the window (decode calls): pages of 16 rows in a random order, two copies of the sequence
     * (tokens alternating between them), stale rows elsewhere: the f16 split and the Q8_0 chooser's kernel give the
     * identity's bytes */
    if (n <= TCU_MULTI_MAX) {
        pages P = pages_new(n_ctx, 4, n);
        uint16_t *pk = pages_plane(&P, kc, 2 * row, n_ctx, 0), *pv = pages_plane(&P, vc, 2 * row, n_ctx, 0);
        float *a = malloc(sizeof(float) * nq), *b = malloc(sizeof(float) * nq);
        for (int q8 = 0; q8 < 1 + q8ok; q8++) {
            int8_t *pkq = NULL, *pvq = NULL;
            uint16_t *pks = NULL, *pvs = NULL;
            if (q8) {
                pkq = pages_plane(&P, kq, (size_t)row, n_ctx, 1), pvq = pages_plane(&P, vq, (size_t)row, n_ctx, 1);
                pks = pages_plane(&P, ks, 2 * (size_t)(row / 32), n_ctx, 2);
                pvs = pages_plane(&P, vs, 2 * (size_t)(row / 32), n_ctx, 2);
            }
            for (int pg = 0; pg < 2; pg++) {
                CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
                const int32_t *bt = pg ? P.d_bt : NULL, *off = pg ? P.d_off : NULL;
                const int lbs = pg ? P.lbs : 0;
                if (!q8)
                    tcu_attention_split(d_q, pg ? pk : d_k, pg ? pv : d_v, n, d_pos, bt, off, lbs, win, n_head, n_head_kv,
                                        hd, scale, d_out, d_ws, S, 0);
                else
                    tcu_attention_split_q8(d_q, pg ? pkq : d_kq, pg ? pvq : d_vq, pg ? pks : d_ks, pg ? pvs : d_vs, n,
                                           d_pos, bt, off, lbs, win, n_head, n_head_kv, hd, scale, d_out, d_ws, S, 0);
                CK(cudaGetLastError());
                CK(cudaMemcpy(pg ? b : a, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            }
            g_win_cases++;
            size_t n_nan = 0;
            for (size_t i = 0; i < nq; i++) n_nan += isnan(b[i]);
            CHECK(n_nan == 0 && memcmp(a, b, sizeof(float) * nq) == 0, "window %d %s paged (16-row pages) hd=%d heads=%d/%d "
                  "n=%d pos0=%d: differs from the identity's (%zu NaN)", win, q8 ? "q8" : "f16 split", hd, n_head, n_head_kv,
                  n, pos0, n_nan);
            if (q8) { CK(cudaFree(pkq)); CK(cudaFree(pvq)); CK(cudaFree(pks)); CK(cudaFree(pvs)); }
        }
        CK(cudaFree(pk));
        CK(cudaFree(pv));
        pages_free(&P);
        free(a), free(b);
    } else { /* a prefill chunk through one sequence's table: flash v3 with the window (or v1), the identity's bytes */
        pages P = pages_new(n_ctx, 4, n);
        uint16_t *pk = pages_plane(&P, kc, 2 * row, n_ctx, 0), *pv = pages_plane(&P, vc, 2 * row, n_ctx, 0);
        float *a = malloc(sizeof(float) * nq), *b = malloc(sizeof(float) * nq);
        for (int pg = 0; pg < 2; pg++) {
            CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
            tcu_attention(d_q, pg ? pk : d_k, pg ? pv : d_v, n, d_pos, pg ? P.d_bt : NULL, NULL, pg ? P.lbs : 0, win,
                          n_head, n_head_kv, hd, scale, d_out, 0);
            CK(cudaGetLastError());
            CK(cudaMemcpy(pg ? b : a, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        }
        g_win_cases++;
        size_t n_nan = 0;
        for (size_t i = 0; i < nq; i++) n_nan += isnan(b[i]);
        CHECK(n_nan == 0 && memcmp(a, b, sizeof(float) * nq) == 0, "window %d prefill paged (16-row pages) hd=%d "
              "heads=%d/%d n=%d pos0=%d: differs from the identity's (%zu NaN)", win, hd, n_head, n_head_kv, n, pos0, n_nan);
        CK(cudaFree(pk));
        CK(cudaFree(pv));
        pages_free(&P);
        free(a), free(b);
    }
    CK(cudaFree(d_q)); CK(cudaFree(d_out)); CK(cudaFree(d_k)); CK(cudaFree(d_v)); CK(cudaFree(d_kq));
    CK(cudaFree(d_vq)); CK(cudaFree(d_ks)); CK(cudaFree(d_vs)); CK(cudaFree(d_pos)); CK(cudaFree(d_xq));
    if (d_ws) CK(cudaFree(d_ws));
    free(q); free(got); free(kf); free(vf); free(kq8f); free(vq8f); free(ref); free(ref_all); free(ref8);
    free(kc); free(vc); free(ks); free(vs); free(kq); free(vq); free(pos);
}

/* The decode attention's physical warps (tcu_attention_warps_set: 16, 8, 4, the rule) give the same bytes, out and the
 * x16 form, as 16 warps: n tokens of n different sequences (block tables of 128-row pages in reverse order), token t at
 * pos0 + t * step, so the tokens use 1..S splits in one launch. timing: each count's median of 20 launches
 * (cudaEvent; the split kernel and the merge), the KV bytes once against the rule's time. */
/* q8: the Q8_0 cache (int8 planes, an f16 scale a 32 values; hd 64/128/256, n <= 16) through the split kernel
 * (tcu_attention_split_q8_v2: v5, which the chooser takes on a Hopper, has its own fixed warps), whose K/V prefetch
 * ring (PF) then runs at each physical warp count; no x16 output there. q8 = 2: the same cache through
 * tcu_attention_decode_x16, i.e. v5 on a Hopper (its own warps: the warp arms repeat it; arm 4 gives it a grid of fewer
 * splits than the engine's). */
/* g_arms_mode (f16 cache): bit 0 no block tables (every token reads rows 0..pos, the one-sequence kernels), bit 1 the f16
 * order's side output (tcu_attention_decode_h16: f16 at tcu_hm_pos) instead of the x16 one, bit 2 a sliding window of
 * ARMS_WIN keys */
static int g_arms_mode;
#define ARMS_WIN 300
static void arms_call(int q8, const float *q, const void *k, const void *v, const uint16_t *ks, const uint16_t *vs, int n,
                      const int32_t *pos, const int32_t *bt, const int32_t *off, int lbs, int n_head, int n_head_kv, int hd,
                      float scale, float *out, float *ws, int S, void *xq) {
    const int flat = !q8 && (g_arms_mode & 1), win = !q8 && (g_arms_mode & 4) ? ARMS_WIN : 0;
    if (flat) bt = off = NULL;
    if (q8 == 1)
        tcu_attention_split_q8_v2(q, k, v, ks, vs, n, pos, bt, off, lbs, 0, n_head, n_head_kv, hd, scale, out, ws, S, 0);
    else if (!q8 && (g_arms_mode & 2))
        tcu_attention_decode_h16(q, k, v, NULL, NULL, n, pos, bt, off, lbs, win, n_head, n_head_kv, hd, scale, out, ws, S,
                                 (uint16_t *)xq, 0);
    else
        tcu_attention_decode_x16(q, k, v, q8 ? ks : NULL, q8 ? vs : NULL, n, pos, bt, off, lbs, win, n_head, n_head_kv,
                                 hd, scale, out, ws, S, xq, 0);
}

static void arms_case(int hd, int n_head, int n_head_kv, int n, int pos0, int step, int S, int timing, int q8) {
    const int lbs = 7, bs = 1 << lbs, last = pos0 + (n - 1) * step, per = (last + bs) / bs; /* pages a sequence */
    const size_t row = (size_t)n_head_kv * hd, n_rows = (size_t)n * per * bs, nq = (size_t)n * n_head * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    float *d_q, *d_out, *d_ws;
    void *d_k, *d_v;
    uint16_t *d_ks = NULL, *d_vs = NULL;
    int32_t *d_pos, *d_bt, *d_off;
    void *d_xq;
    const size_t xb = tcu_x16_bytes(n, (int64_t)n_head * hd), wsb = tcu_attention_ws_bytes(n, n_head, hd, S);
    CK(cudaMalloc((void **)&d_q, sizeof(float) * nq));
    CK(cudaMalloc((void **)&d_out, sizeof(float) * nq));
    CK(cudaMalloc(&d_k, (q8 ? 1 : 2) * n_rows * row));
    CK(cudaMalloc(&d_v, (q8 ? 1 : 2) * n_rows * row));
    CK(cudaMalloc(&d_xq, xb));
    CK(cudaMalloc((void **)&d_ws, wsb));
    tcu_fill_uniform(d_q, nq, TCU_FILL_F32, 11, 0);
    if (q8) { /* any int8 quants; scales 1/64 .. 1/32 (f16), so the scores stay in a few units */
        const size_t nsc = n_rows * row / 32;
        uint16_t *hs = malloc(sizeof(uint16_t) * nsc);
        tcu_fill_random(d_k, n_rows * row, 12, 0);
        tcu_fill_random(d_v, n_rows * row, 13, 0);
        CK(cudaMalloc((void **)&d_ks, sizeof(uint16_t) * nsc));
        CK(cudaMalloc((void **)&d_vs, sizeof(uint16_t) * nsc));
        for (int pl = 0; pl < 2; pl++) {
            for (size_t i = 0; i < nsc; i++) hs[i] = tern_fp32_to_fp16((float)(1.0 + (double)(next_u64() % 1024) / 1024.0) / 64.0f);
            CK(cudaMemcpy(pl ? d_vs : d_ks, hs, sizeof(uint16_t) * nsc, cudaMemcpyHostToDevice));
        }
        free(hs);
    } else {
        tcu_fill_uniform(d_k, n_rows * row, TCU_FILL_F16, 12, 0);
        tcu_fill_uniform(d_v, n_rows * row, TCU_FILL_F16, 13, 0);
    }
    int32_t *pos = malloc(sizeof(int32_t) * n), *bt = malloc(sizeof(int32_t) * (size_t)n * per), *off = malloc(sizeof(int32_t) * n);
    for (int t = 0; t < n; t++) {
        pos[t] = pos0 + t * step;
        off[t] = t * per;
        for (int i = 0; i < per; i++) bt[t * per + i] = (int32_t)((size_t)n * per - 1 - ((size_t)t * per + i)); /* reversed */
    }
    CK(cudaMalloc((void **)&d_pos, sizeof(int32_t) * n));
    CK(cudaMalloc((void **)&d_bt, sizeof(int32_t) * (size_t)n * per));
    CK(cudaMalloc((void **)&d_off, sizeof(int32_t) * n));
    CK(cudaMemcpy(d_pos, pos, sizeof(int32_t) * n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_bt, bt, sizeof(int32_t) * (size_t)n * per, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_off, off, sizeof(int32_t) * n, cudaMemcpyHostToDevice));
    float *o0 = malloc(sizeof(float) * nq), *o1 = malloc(sizeof(float) * nq);
    uint8_t *x0 = malloc(xb), *x1 = malloc(xb);
    /* arms 0..3: 16, 8, 4 physical warps, the rule; arm 4: the rule launching only the splits the tokens can use
     * (TCU_ATT_FIT, as exec.c's att_need launches: the deepest token's count at 256 keys a split, at most S); arms 5..7:
     * MS (tcu_attention_ms_set: a token's splits in one CTA, where the launch's splits are 2..4 at hd 64 or 128 over an f16
     * cache) over the whole grid at its own warps, over the splits used (fit), and fit at 4 physical warps; arm 8: the
     * default (tcu_attention_ms_set(-1): MS's rule, attention.cu att_ms_rule) over the splits used, as the engine runs */
    static const int arms[] = {16, 8, 4, 0, 0, 0, 0, 4, 0}, arm_fit[] = {0, 0, 0, 0, 1, 0, 1, 1, 1},
                     arm_ms[] = {0, 0, 0, 0, 0, 1, 1, 1, -1};
    enum { N_ARMS = 9 };
    int need = 1;
    for (int t = 0; t < n; t++) need = (pos[t] + 256) / 256 > need ? (pos[t] + 256) / 256 : need;
    need = need < S ? need : S;
    /* MS's shared memory (its launcher asks the opt-in for 4 splits of 16 virtual warps' accumulators, ~4 KiB static
     * beside them): a device that refuses it runs the rule */
    const int G = n_head / n_head_kv, n_chunk = (G + 3) / 4, qh = (G + n_chunk - 1) / n_chunk;
    int optin = 0;
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    const int ms_fits = (size_t)optin >= (size_t)4 * 16 * qh * hd * sizeof(float) + 4096;
    /* MS's rule as docs/ledger.md 2026-12-08 states it (written here from the statement, not from attention.cu): 2 or 3
     * splits launched, MS's n x KV heads x chunks CTAs at least 0.7 of the SMs and within one wave: one CTA an SM at 16
     * warps (CTAs <= SMs), two at 8 warps (more CTAs, where two CTAs' accumulators of 16 virtual warps, ~5 KiB beside
     * each, fit an SM's shared memory) */
    int sms = 0, sm_smem = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&sm_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    const int ms_ctas = n * n_head_kv * n_chunk;
    const int two_fit = 2 * ((size_t)need * 16 * qh * hd * sizeof(float) + 5 * 1024) <= (size_t)sm_smem;
    const int ms_rule = need >= 2 && need <= 3 && 10 * ms_ctas >= 7 * sms &&
                        (ms_ctas <= sms || (two_fit && ms_ctas <= 2 * sms));
    double us[N_ARMS] = {0};
    for (int a = 0; a < N_ARMS; a++) {
        const int sa = arm_fit[a] ? TCU_ATT_FIT(S, need) : S, sl = arm_fit[a] ? need : S;
        /* MS runs where attention.cu's launcher takes it: f16, hd 64 or 128, 2..4 splits launched */
        const int ms_runs = arm_ms[a] && !q8 && (hd == 64 || hd == 128) && sl > 1 && sl <= 4 && ms_fits &&
                            (arm_ms[a] > 0 || ms_rule);
        tcu_attention_warps_set(arms[a]);
        tcu_attention_ms_set(arm_ms[a]);
        for (int rep = 0; rep < 2; rep++) {
            const uint64_t ms0 = tcu_attention_ms_count();
            CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
            CK(cudaMemset(d_xq, 0x5A, xb));
            arms_call(q8, d_q, d_k, d_v, d_ks, d_vs, n, d_pos, d_bt, d_off, lbs, n_head, n_head_kv, hd, scale, d_out, d_ws,
                      sa, d_xq);
            CK(cudaGetLastError());
            CHECK(tcu_attention_ms_count() - ms0 == (uint64_t)ms_runs, "attention%s arm %d hd=%d n=%d splits %d: %llu MS "
                  "launches, want %d", q8 ? " q8" : "", a, hd, n, sl, (unsigned long long)(tcu_attention_ms_count() - ms0),
                  ms_runs);
            CK(cudaMemcpy(a ? o1 : o0, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(a ? x1 : x0, d_xq, xb, cudaMemcpyDeviceToHost));
            if (a) CHECK(memcmp(o0, o1, sizeof(float) * nq) == 0 && memcmp(x0, x1, xb) == 0,
                         "attention%s warps %d (fit %d of %d%s) call %d hd=%d heads=%d/%d n=%d pos %d+%d*t: "
                         "differs from 16 warps",
                         q8 ? " q8" : "", arms[a], arm_fit[a] ? need : S, S, ms_runs ? ", MS" : "", rep, hd, n_head,
                         n_head_kv, n, pos0, step);
            else if (rep == 0) { /* the output was NaN (0xFF bytes) before the call: every element written, finite */
                size_t bad = 0;
                for (size_t i = 0; i < nq; i++) bad += !isfinite(o0[i]);
                CHECK(bad == 0, "attention%s 16 warps hd=%d heads=%d/%d n=%d: %zu of %zu outputs not finite", q8 ? " q8" : "",
                      hd, n_head, n_head_kv, n, bad, nq);
            }
        }
        if (timing) {
            cudaEvent_t e0, e1;
            float ms[20];
            CK(cudaEventCreate(&e0));
            CK(cudaEventCreate(&e1));
            for (int r = 0; r < 20; r++) {
                CK(cudaEventRecord(e0, 0));
                arms_call(q8, d_q, d_k, d_v, d_ks, d_vs, n, d_pos, d_bt, d_off, lbs, n_head, n_head_kv, hd, scale, d_out,
                          d_ws, sa, d_xq);
                CK(cudaEventRecord(e1, 0));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms[r], e0, e1));
            }
            qsort(ms, 20, sizeof(float), cmp_float);
            us[a] = 0.5 * (ms[9] + ms[10]) * 1e3;
            CK(cudaEventDestroy(e0));
            CK(cudaEventDestroy(e1));
        }
    }
    tcu_attention_warps_set(0);
    tcu_attention_ms_set(-1);
    if (timing) {
        double kv = 0;
        for (int t = 0; t < n; t++) kv += (double)(pos[t] + 1) * row * (q8 ? 1.0 + 2.0 / 32 : 2.0) * 2;
        printf("decode attention%s n=%-2d pos %d+%d*t hd%d %d/%d (KV %.1f MB): warps 16 %.1f, 8 %.1f, 4 %.1f, the rule %.1f us "
               "(%.0f GB/s); the rule over the %d of %d splits used %.1f us; MS %.1f, fit %.1f, fit at 4 warps %.1f us; the "
               "default (%s) %.1f us\n",
               q8 ? " q8" : "", n, pos0, step, hd, n_head, n_head_kv, kv * 1e-6, us[0], us[1], us[2], us[3],
               kv / us[3] * 1e-3, need, S, us[4], us[5], us[6], us[7],
               !q8 && (hd == 64 || hd == 128) && ms_fits && ms_rule ? "MS" : "split", us[8]);
    }
    free(pos), free(bt), free(off), free(o0), free(o1), free(x0), free(x1);
    CK(cudaFree(d_q)); CK(cudaFree(d_out)); CK(cudaFree(d_k)); CK(cudaFree(d_v)); CK(cudaFree(d_xq)); CK(cudaFree(d_ws));
    CK(cudaFree(d_pos)); CK(cudaFree(d_bt)); CK(cudaFree(d_off));
    if (d_ks) CK(cudaFree(d_ks));
    if (d_vs) CK(cudaFree(d_vs));
}

int main(int argc, char **argv) {
    const int only_q8 = argc > 1 && !strcmp(argv[1], "q8");
    /* "wg": the prefill cases (every flash version) and the causal table's v6 / v3 rows only */
    const int only_wg = argc > 1 && !strcmp(argv[1], "wg");
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
        printf("gpu_attention: no CUDA device, skipped\n");
        return check_summary("gpu_attention");
    }
    /* cpu_attention's result does not depend on the thread count (backend_cpu.h); threads only save time */
    int smem_optin = 0;
    cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    g_q8w_smem_ok = smem_optin >= 160 * 1024;
    if (!g_q8w_smem_ok) printf("gpu_attention: %d bytes of shared memory a block: v5 may fall back to v2\n", smem_optin);
    int n_thr = tern_n_cores();
    if (n_thr > 16) n_thr = 16;
    tern_pool *pool = tern_pool_new(n_thr);
    CHECK(pool != NULL, "tern_pool_new(%d)", n_thr);
    if (!pool) return check_summary("gpu_attention");

    static const int hds[] = {64, 128, 256};
    static const int heads[][2] = {{9, 3}, {32, 8}, {8, 8}};
    static const int decode_pos[] = {0, 1, 31, 32, 1000, 4097};
    /* (n, pos0): chunks not a multiple of the 64/128-token query block or the 64/32-key block, S_q < S_kv
     * (a later chunk of a chunked prefill, block boundaries straddled: 56 + 16 crosses key 64), exact blocks */
    static const int prefill[][2] = {{100, 0}, {37, 555}, {513, 0}, {17, 0}, {64, 0}, {129, 56}, {200, 1000}};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            const int hd = hds[a], nh = heads[b][0], nkv = heads[b][1];
            for (int i = 0; i < 6 && !only_q8 && !only_wg; i++) run_case(pool, hd, nh, nkv, 1, decode_pos[i]);
            for (int n = 1; n <= 7 && !only_q8 && !only_wg; n++) run_case(pool, hd, nh, nkv, n, 0);
            for (int i = 0; i < 7 && !only_q8; i++) run_case(pool, hd, nh, nkv, prefill[i][0], prefill[i][1]);
            if (only_wg) continue;
            for (int i = 0; i < 6; i++) run_case_q8(hd, nh, nkv, 1, decode_pos[i], 0);
            for (int nn = 2; nn <= 16; nn += 7) run_case_q8(hd, nh, nkv, nn, 37, 0);
        }
    /* sliding windows: decode at depths before, at and past the window, verify chunks straddling its edge, and
     * prefill chunks (flash v3; v1 at hd 160) longer than the window */
    static const int wins[][3] = {{1, 0, 7}, {1, 600, 512}, {1, 511, 512}, {1, 4097, 1024}, {16, 500, 512},
                                  {9, 1030, 1024}, {100, 0, 64}, {300, 200, 128}, {40, 10, 1}};
    for (int w = 0; w < 9 && !only_q8 && !only_wg; w++) {
        window_case(256, 8, 4, wins[w][0], wins[w][1], wins[w][2]); /* Gemma 3 4B's head shape */
        window_case(128, 32, 16, wins[w][0], wins[w][1], wins[w][2]);
        window_case(64, 9, 3, wins[w][0], wins[w][1], wins[w][2]);
        window_case(96, 32, 32, wins[w][0], wins[w][1], wins[w][2]); /* Phi-3 mini's */
        window_case(160, 10, 2, wins[w][0], wins[w][1], wins[w][2]); /* no flash kernel: v1's prefill configuration */
    }
    if (!only_q8 && !only_wg) printf("sliding window: %d calls against float64 (%d through flash v3)\n", g_win_cases, g_win_v3);
    if (!only_q8 && !only_wg) CHECK(g_win_v3 > 0, "no windowed prefill chunk ran flash v3");
    /* hd 96 (Phi-3): flash v3 for prefill chunks, v1 for decode */
    for (int i = 0; i < 3 && !only_q8 && !only_wg; i++) run_case(pool, 96, 9, 3, prefill[i][0], prefill[i][1]);
    if (!only_q8 && !only_wg) run_case(pool, 96, 9, 3, 1, 1000);
    /* hd 160 has no flash kernel: v1 runs prefill chunks too (its 8-warp configuration), the only unit test of it */
    for (int i = 0; i < 3 && !only_q8 && !only_wg; i++) run_case(pool, 160, 10, 2, prefill[i][0], prefill[i][1]);
    /* the Q8_0 cache's other query-head chunkings: G = 2 (QH 2) and G = 5 (two chunks of 3, the second with a
     * padding head), decode and a verify chunk */
    static const int heads_q8[][2] = {{16, 8}, {40, 8}};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 2; b++) {
            run_case_q8(hds[a], heads_q8[b][0], heads_q8[b][1], 1, 1000, 0);
            run_case_q8(hds[a], heads_q8[b][0], heads_q8[b][1], 5, 300, 0);
        }
    /* the backend's 16-split grid: all 16 active at depth (8191), a chunk of 16 straddling the 1 -> 2 split step
     * at 256 keys (tokens writing out directly and through the workspace in one launch), 2 -> 3 at 512 */
    run_case_q8(128, 32, 8, 1, 8191, 16);
    run_case_q8(128, 32, 8, 16, 248, 16);
    run_case_q8(128, 32, 8, 9, 507, 16);
    run_case_q8(64, 9, 3, 16, 248, 16);
    /* other keys a split (TERN_ATT_RPS, an arm under measurement): 16 and 64 keys a split, so up to 16 splits are
     * active at a few hundred positions; the same checks (float64, a token's row = its one-token call, the paged
     * identity), then the default back */
    for (int r = 0; r < 2 && !only_wg; r++) {
        const int rule = r ? 64 : 16;
        tcu_attention_rps_set(rule);
        CHECK(tcu_attention_rps() == rule, "tcu_attention_rps_set(%d) read back %d", rule, tcu_attention_rps());
        if (!only_q8) {
            run_case(pool, 128, 32, 8, 1, 1000);
            run_case(pool, 128, 32, 8, 7, 90);
            run_case(pool, 64, 9, 3, 16, 200);
            window_case(256, 8, 4, 16, 500, 512);
        }
        run_case_q8(128, 32, 8, 16, 248, 16);
        run_case_q8(128, 32, 8, 1, 300, 16);
    }
    tcu_attention_rps_set(0);
    CHECK(tcu_attention_rps() == TCU_ATT_RPS, "tcu_attention_rps_set(0) gave %d, not the default", tcu_attention_rps());
    /* the decode attention's physical warps: the same bytes (16 grid splits, tokens of 1..16 active splits), then times
     * at Llama-3-8B's heads, depth ~512 (3 splits a token at 256 keys) and n = 1, 4, 16, 64 */
    if (!only_wg) {
        arms_case(128, 32, 8, 64, 3, 131, 16, 0, 0);
        arms_case(64, 9, 3, 13, 200, 77, 16, 0, 0);
        arms_case(256, 8, 4, 5, 500, 300, 16, 0, 0);
        arms_case(256, 16, 4, 7, 300, 150, 16, 0, 0); /* hd 256 at QH 4: the largest PF ring */
        arms_case(96, 32, 32, 3, 400, 1, 4, 0, 0);
        arms_case(128, 32, 8, 16, 3, 131, 16, 0, 1); /* the Q8_0 cache's split kernel at 4, 8, 16 physical warps */
        arms_case(64, 8, 2, 13, 200, 77, 16, 0, 1);
        arms_case(128, 32, 8, 13, 200, 77, 16, 0, 2); /* v5: arm 4 over 5 of the 16 splits */
        arms_case(128, 32, 8, 4, 100, 10, 16, 0, 0);  /* every token one split: arm 4 over 1 of 16, no combine */
        arms_case(256, 16, 4, 5, 500, 300, 16, 0, 1);
        /* MS (arms 5..7) where it runs: tokens of 1..4 splits in one launch of 4 (whole grid and fit); 1..3 of a 16-deep
         * grid (fit only); QH 3 with a head chunk of 2 real heads (G = 5); QH 1 and 2 */
        arms_case(128, 32, 8, 13, 200, 77, 4, 0, 0);
        arms_case(128, 32, 8, 16, 0, 40, 16, 0, 0);
        arms_case(128, 20, 4, 9, 300, 50, 3, 0, 0);
        arms_case(128, 8, 8, 6, 250, 100, 4, 0, 0);
        arms_case(128, 16, 8, 5, 400, 60, 2, 0, 0);
        arms_case(64, 32, 8, 13, 200, 77, 4, 0, 0); /* hd 64 (Llama-3.2-1B's heads) */
        arms_case(64, 9, 3, 9, 100, 60, 4, 0, 0);   /* hd 64 at QH 3 */
        /* and without block tables, with the f16 side output, and without tables under a window of ARMS_WIN keys (the
         * rule's splits at <= 300 keys: 1 or 2 a token) */
        static const int modes[] = {1, 2, 5};
        for (int i = 0; i < 3; i++) {
            g_arms_mode = modes[i];
            arms_case(128, 32, 8, 13, 200, 77, 4, 0, 0);
        }
        g_arms_mode = 0;
        static const int an[] = {1, 4, 16, 64};
        for (int i = 0; i < 4; i++) arms_case(128, 32, 8, an[i], 512, 1, 3, 1, 0);
        for (int i = 0; i < 4; i++) arms_case(128, 32, 8, an[i], 4096, 1, 16, 1, 0);
        arms_case(128, 32, 8, 16, 512, 1, 3, 1, 1);
    }
    tern_pool_free(pool);
    printf("%-34s %15s\n", "tcu_attention_split_q8 (median of 20)", "time");
    static const int q8_pos[] = {32767, 8191, 127};
    for (int i = 0; i < 3; i++) {
        char label[64];
        snprintf(label, sizeof label, "q8 decode pos %d 32/8 hd128 v5", q8_pos[i]);
        bench_q8(label, 128, 32, 8, q8_pos[i], 1);
        snprintf(label, sizeof label, "q8 decode pos %d 32/8 hd128 v2", q8_pos[i]);
        bench_q8(label, 128, 32, 8, q8_pos[i], 0);
    }
    if (only_q8) return check_summary("gpu_attention");
    printf("v3 (flash) worst rel L2 vs float64: %.3g (bound %.0e)\n", flash_worst, FLASH_TOL);
    printf("paged cache (pages of 16 and 128 rows, two sequences a decode call): %d calls equal the identity's bytes\n",
           g_paged_cases);
    for (int v = 0; v < 2; v++)
        printf("v6%s (wgmma) ran %d cases, worst rel L2 vs float64: %.3g (bound %.0e)\n", wg_name[v], wg_runs[v],
               wg_worst[v], FLASH_TOL);
    int cc_major = 0, cc_minor = 0;
    cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, 0);
    if (cc_major == 9 && cc_minor == 0)
        for (int v = 0; v < 2; v++) CHECK(wg_runs[v] > 0, "v6%s never ran on this sm_90 device", wg_name[v]);
    /* the table: causal self-attention over S tokens, 32/8 heads, flops 4*S^2*D*Hq/2 (+ the diagonal);
     * bench/sdpa_bench.py prints torch SDPA on the same shapes. The chooser's kernel (v6b on the H200), v6a, v3. */
    static const int big_s[] = {2048, 8192, 32768};
    printf("%-34s %15s\n", "tcu_attention (median of 20)", "time");
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) {
                static const int vers[3] = {BV_FLASH, BV_V6A, BV_V3};
                static const char *lab[3] = {"chooser (v6b)", "v6a", "v3"};
                if (k == 1 && hds[a] == 256) continue; /* v6a is hd 64/128 only */
                char label[64];
                snprintf(label, sizeof label, "causal S=%d D=%d %s", big_s[i], hds[a], lab[k]);
                bench(label, hds[a], 32, 8, big_s[i], 0, 0, vers[k]);
            }
    if (only_wg) return check_summary("gpu_attention");
    bench("decode pos 4095 32/8 hd128 v1", 128, 32, 8, 1, 4095, 0, BV_SPLIT);
    bench("decode pos 4095 32/8 hd128 v2", 128, 32, 8, 1, 4095, 16, BV_SPLIT);
    bench("decode pos 32767 32/8 v1", 128, 32, 8, 1, 32767, 0, BV_SPLIT);
    bench("decode pos 32767 32/8 v2", 128, 32, 8, 1, 32767, 16, BV_SPLIT);
    bench("decode pos 1500 9/3 hd64 v1", 64, 9, 3, 1, 1500, 0, BV_SPLIT);
    bench("decode pos 1500 9/3 hd64 v2", 64, 9, 3, 1, 1500, 6, BV_SPLIT);
    bench("prefill n=512 32/8 hd128 v3", 128, 32, 8, 512, 0, 0, BV_V3);
    bench("prefill n=512 32/8 hd128 chooser", 128, 32, 8, 512, 0, 0, BV_FLASH);
    bench("prefill n=512 pos0=3584 hd128 v3", 128, 32, 8, 512, 3584, 0, BV_V3);
    bench("prefill n=512 pos0=3584 hd128 chooser", 128, 32, 8, 512, 3584, 0, BV_FLASH);
    bench("prefill n=512 32/8 hd96 (v3 since 5cff0d4)", 96, 32, 8, 512, 0, 0, BV_SPLIT);
    bench("prefill n=512 32/8 hd160 v1", 160, 32, 8, 512, 0, 0, BV_SPLIT);
    return check_summary("gpu_attention");
}
