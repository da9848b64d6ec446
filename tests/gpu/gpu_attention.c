/* gpu_attention.c: tcu_attention (v1) and tcu_attention_ref (src/backend/cuda/attention.cu) against cpu_attention and a
 * float64 reference, then a timing table.
 *
 * Every case: fresh seeded random q (n, n_head, hd) f32 and f16 K/V cache (n_ctx, n_head_kv, hd), the output
 * poisoned with 0xFF bytes (NaN) before the launch so an unwritten element fails; token t at position pos0 + t.
 * Tolerances: relative L2 error vs float64 < 1e-5 (f32 softmax and accumulation on the same f16 inputs; the
 * f32 sum over up to 4098 rows is the largest term, ~1e-6), vs cpu_attention < 1e-4 (both f32, different
 * summation orders).
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

/* attention.cu's reference variant (not in tcu.h: tests only). */
void tcu_attention_ref(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos, int n_head,
                       int n_head_kv, int hd, float scale, float *out, cudaStream_t st);

#define CK(call)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));          \
            exit(2);                                                                                         \
        }                                                                                                    \
    } while (0)

typedef void (*attn_fn)(const float *, const uint16_t *, const uint16_t *, int, const int32_t *, int, int, int, float,
                        float *, cudaStream_t);

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
static void ref_f64(const float *q, const float *kc, const float *vc, int n, int pos0, int n_head, int n_head_kv,
                    int hd, double scale, double *out) {
    const int group = n_head / n_head_kv;
    const size_t stride = (size_t)n_head_kv * hd;
    double *s = malloc(sizeof(double) * (pos0 + n));
    for (int t = 0; t < n; t++)
        for (int h = 0; h < n_head; h++) {
            const int hk = h / group, n_kv = pos0 + t + 1;
            const float *qh = q + ((size_t)t * n_head + h) * hd;
            double mx = -INFINITY, sum = 0.0;
            for (int j = 0; j < n_kv; j++) {
                const float *k = kc + j * stride + (size_t)hk * hd;
                double d = 0.0;
                for (int i = 0; i < hd; i++) d += (double)qh[i] * k[i];
                s[j] = d * scale;
                if (s[j] > mx) mx = s[j];
            }
            for (int j = 0; j < n_kv; j++) sum += (s[j] = exp(s[j] - mx));
            double *o = out + ((size_t)t * n_head + h) * hd;
            for (int i = 0; i < hd; i++) o[i] = 0.0;
            for (int j = 0; j < n_kv; j++) {
                const float *v = vc + j * stride + (size_t)hk * hd;
                for (int i = 0; i < hd; i++) o[i] += s[j] / sum * v[i];
            }
        }
    free(s);
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
static double wg_worst[6]; /* largest error seen: v6a, v6b modes 0..4 */
static int wg_runs[6];     /* cases each ran (0 off sm_90) */
static const char *wg_name[6] = {"a", "b", "b pingpong", "b pipelined", "b pingpong+pipelined",
                                 "b pingpong+pipelined, scale unfolded"};

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
    tcu_attention_set_flash(0); /* tcu_attention is v1 for every n */
    for (int v = 0; v < 2; v++) {
        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
        fns[v](d_q, d_k, d_v, n, d_pos, n_head, n_head_kv, hd, scale, d_out, 0);
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
    tcu_attention_set_flash(1);
    /* v3 (tensor-core flash attention, any n; tcu_attention takes it for n > 16): Q and P rounded to f16, so
     * the bound is FLASH_TOL (f16 unit roundoff 2^-11 = 4.9e-4 on Q and P; measured ~3e-4), both warp counts */
    /* arms: v4 (2 m-tiles a warp, hd <= 128; TERN_CUDA_FLASH_MT=2), v3 (the default) with 4 and 8 warps;
     * v4 must equal v3 (4 warps) bit for bit */
    if (tcu_attention_flash_ok(n_head, n_head_kv, hd)) {
        float *o_v3 = malloc(sizeof(float) * nq);
        tcu_attention_flash_set_wg(0); /* v3 / v4 here; v6 below */
        for (int arm = 0; arm < 3; arm++) {
            const int nw = arm == 2 ? 8 : 4, mt = arm == 0 ? 2 : 1;
            tcu_attention_flash_set_warps(nw);
            tcu_attention_flash_set_mt(mt);
            CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
            if (n > 16 && arm == 1) tcu_attention(d_q, d_k, d_v, n, d_pos, n_head, n_head_kv, hd, scale, d_out, 0);
            else tcu_attention_flash(d_q, d_k, d_v, n, d_pos, n_head, n_head_kv, hd, scale, d_out, 0);
            CK(cudaGetLastError());
            CK(cudaMemcpy(arm == 1 ? o_v3 : o_gpu, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            size_t n_nan;
            const double e64 = rel_l2_d(arm == 1 ? o_v3 : o_gpu, o_ref, nq, &n_nan);
            if (e64 > flash_worst) flash_worst = e64;
            CHECK(n_nan == 0 && e64 < FLASH_TOL, "%s (%d warps) hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g "
                  "(%zu NaN)", mt == 2 && hd <= 128 ? "v4" : "v3", nw, hd, n_head, n_head_kv, n, pos0, e64, n_nan);
            if (arm == 1 && hd <= 128) { /* o_gpu holds v4's output */
                CHECK(memcmp(o_gpu, o_v3, sizeof(float) * nq) == 0,
                      "v4 hd=%d heads=%d/%d n=%d pos0=%d: differs from v3 (4 warps) bit for bit", hd, n_head,
                      n_head_kv, n, pos0);
            }
        }
        tcu_attention_flash_set_warps(4);
        tcu_attention_flash_set_mt(1);
        tcu_attention_flash_set_wg(1);
        /* v6 (wgmma, sm_90a; v6a hd 64/128, v6b also 256), the same bound: v6a (cp.async) through tcu_attention_wg and the
         * dispatcher (tcu_attention for n > 16: the same bytes); v6b (TMA) through tcu_attention_wg_tma (tile
         * order 0) and tcu_attention_flash_rows (orders 1 and 2: the same bytes) on a copy of the cache followed
         * by WG_PAD rows of f16 NaN past kv_rows = n_ctx: a last 128-key block that runs past kv_rows reads
         * TMA's zero fill there, never the NaN rows behind it */
        if (tcu_attention_wg_ok(n_head, n_head_kv, hd)) {
            enum { WG_PAD = 200 };
            const size_t row = (size_t)n_head_kv * hd;
            uint16_t *d_kp, *d_vp;
            CK(cudaMalloc((void **)&d_kp, 2 * (nkv + WG_PAD * row)));
            CK(cudaMalloc((void **)&d_vp, 2 * (nkv + WG_PAD * row)));
            CK(cudaMemset(d_kp, 0xFF, 2 * (nkv + WG_PAD * row))); /* 0xFFFF: an f16 NaN */
            CK(cudaMemset(d_vp, 0xFF, 2 * (nkv + WG_PAD * row)));
            CK(cudaMemcpy(d_kp, kc, 2 * nkv, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d_vp, vc, 2 * nkv, cudaMemcpyHostToDevice));
            for (int ver = 0; ver < 6; ver++) { /* v6a, then v6b's modes 0..4 */
                CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
                const int ran = ver == 0 ? tcu_attention_wg(d_q, d_k, d_v, n, d_pos, n_head, n_head_kv, hd, scale, d_out, 0)
                                         : tcu_attention_wg_tma(d_q, d_kp, d_vp, n_ctx, n, d_pos, n_head,
                                                                n_head_kv, hd, scale, d_out, ver - 1, 0);
                CK(cudaGetLastError());
                if (!ran) continue;
                wg_runs[ver]++;
                CK(cudaMemcpy(o_gpu, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
                size_t n_nan;
                const double e64 = rel_l2_d(o_gpu, o_ref, nq, &n_nan);
                if (e64 > wg_worst[ver]) wg_worst[ver] = e64;
                CHECK(n_nan == 0 && e64 < FLASH_TOL, "v6%s hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g (%zu NaN)",
                      wg_name[ver], hd, n_head, n_head_kv, n, pos0, e64, n_nan);
                /* the dispatcher's choice for this version (v6b: tile orders 1 and 2): the same bytes. At hd 256 the
                 * default switch value (5) runs mode 0, not mode 3: mode 3 is only called directly there, and mode 0's
                 * bytes are checked under both switch values (2 and 5) */
                if (hd == 256 && ver == 4) continue;
                for (int sw = ver + 1; sw <= (hd == 256 && ver == 1 ? 5 : ver + 1); sw += 3) {
                    tcu_attention_flash_set_wg(sw);
                    for (int ord = 1; ord <= (ver == 0 ? 1 : 2); ord++) {
                        tcu_attention_flash_set_order(ord);
                        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
                        if (ver == 0 && n > 16) tcu_attention(d_q, d_k, d_v, n, d_pos, n_head, n_head_kv, hd, scale, d_out, 0);
                        else if (ver == 0) tcu_attention_flash(d_q, d_k, d_v, n, d_pos, n_head, n_head_kv, hd, scale, d_out, 0);
                        else tcu_attention_flash_rows(d_q, d_kp, d_vp, n_ctx, n, d_pos, n_head, n_head_kv, hd, scale, d_out, 0);
                        CK(cudaMemcpy(o_v3, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
                        CHECK(memcmp(o_gpu, o_v3, sizeof(float) * nq) == 0,
                              "v6%s hd=%d heads=%d/%d n=%d pos0=%d order %d: the dispatcher's output differs from the direct "
                              "call", wg_name[ver], hd, n_head, n_head_kv, n, pos0, ord);
                    }
                }
                tcu_attention_flash_set_order(1);
            }
            tcu_attention_flash_set_wg(5);
            CK(cudaFree(d_kp));
            CK(cudaFree(d_vp));
        }
        free(o_v3);
    }
    /* v2 (split-K decode, n <= 16): against float64 as above, and every token's row bit-identical to a
     * one-token call at its position */
    if (n <= 16) {
        float *d_ws = NULL, *o_one = malloc(sizeof(float) * nq);
        const int S = 1 + (pos0 + n) % 17; /* 1..17 splits: empty splits happen when S > the rows */
        const size_t wsb = tcu_attention_ws_bytes(n, n_head, hd, S);
        if (wsb) CK(cudaMalloc((void **)&d_ws, wsb));
        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
        tcu_attention_split(d_q, d_k, d_v, n, d_pos, n_head, n_head_kv, hd, scale, d_out, d_ws, S, 0);
        CK(cudaGetLastError());
        CK(cudaMemcpy(o_gpu, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        size_t n_nan;
        const double e64 = rel_l2_d(o_gpu, o_ref, nq, &n_nan);
        CHECK(n_nan == 0 && e64 < 1e-5, "v2 hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g (%zu NaN)", hd, n_head,
              n_head_kv, n, pos0, e64, n_nan);
        const size_t row = (size_t)n_head * hd;
        for (int t = 0; t < n; t++)
            tcu_attention_split(d_q + t * row, d_k, d_v, 1, d_pos + t, n_head, n_head_kv, hd, scale, d_out + t * row,
                                d_ws, S, 0);
        CK(cudaMemcpy(o_one, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        CHECK(memcmp(o_one, o_gpu, sizeof(float) * nq) == 0, "v2 hd=%d heads=%d/%d n=%d pos0=%d: a token's row differs "
              "from its one-token call", hd, n_head, n_head_kv, n, pos0);
        /* the K/V prefetch ring over an f16 cache (mode 2, an arm) and plain loads (the default): the same bits */
        tcu_attention_set_prefetch(2);
        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
        tcu_attention_split(d_q, d_k, d_v, n, d_pos, n_head, n_head_kv, hd, scale, d_out, d_ws, S, 0);
        CK(cudaMemcpy(o_one, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        tcu_attention_set_prefetch(1);
        CHECK(memcmp(o_one, o_gpu, sizeof(float) * nq) == 0, "v2 hd=%d heads=%d/%d n=%d pos0=%d: the prefetch ring "
              "changes the bits", hd, n_head, n_head_kv, n, pos0);
        if (d_ws) CK(cudaFree(d_ws));
        free(o_one);
    }
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
static double g_qq_worst; /* the quantized-q arm's worst rel L2 vs float64 */
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
    /* v5 (16 int8 a lane, the default) and v2 (the arm): each against float64, 1 and S splits, and each
     * token's row equal to its one-token call; v2 also with and without its prefetch ring (the same bits) */
    for (int wide = 1; wide >= 0; wide--) {
        tcu_attention_set_q8_wide(wide);
        const char *kn = wide ? "v5" : "v2";
        if (wide)
            CHECK(tcu_attention_q8_wide(n_head, n_head_kv, hd), "q8 hd=%d heads=%d/%d: the chooser does not take v5",
                  hd, n_head, n_head_kv);
        for (int split = 0; split < 2; split++) {
            CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
            const uint64_t c0 = tcu_attention_q8w_count();
            tcu_attention_split_q8(d_q, d_kq, d_vq, d_ks, d_vs, n, d_pos, n_head, n_head_kv, hd, scale, d_out,
                                   split ? d_ws : NULL, split ? S : 1, 0);
            CK(cudaGetLastError());
            /* the kernel that ran is the one the switch names (v2 where the device refuses v5's shared memory) */
            if (!wide || g_q8w_smem_ok) /* a smaller device may grant some shapes and refuse others */
                CHECK(tcu_attention_q8w_count() - c0 == (uint64_t)wide, "q8 %s hd=%d heads=%d/%d: %llu v5 launches", kn,
                      hd, n_head, n_head_kv, (unsigned long long)(tcu_attention_q8w_count() - c0));
            CK(cudaMemcpy(o_gpu, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            size_t n_nan;
            const double e64 = rel_l2_d(o_gpu, o_ref, nq, &n_nan);
            CHECK(n_nan == 0 && e64 < 1e-5, "q8 %s (%d splits) hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g "
                  "(%zu NaN)", kn, split ? S : 1, hd, n_head, n_head_kv, n, pos0, e64, n_nan);
        }
        if (!wide) { /* v2's K/V prefetch ring (default) and plain loads (o_gpu holds the S-split call's) */
            tcu_attention_set_prefetch(0);
            CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
            tcu_attention_split_q8(d_q, d_kq, d_vq, d_ks, d_vs, n, d_pos, n_head, n_head_kv, hd, scale, d_out, d_ws, S, 0);
            CK(cudaMemcpy(o_one, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
            tcu_attention_set_prefetch(1);
            CHECK(memcmp(o_one, o_gpu, sizeof(float) * nq) == 0, "q8 v2 hd=%d heads=%d/%d n=%d pos0=%d: the prefetch "
                  "ring changes the bits", hd, n_head, n_head_kv, n, pos0);
        }
        if (wide && hd == 128 && n_head == 4 * n_head_kv) {
            /* the 12-warp arm (another warp combine) and the 16-row batch arm (another butterfly), each with its
             * own bits: float64 and the verify property */
            /* and the quantized-q arm (8 and 16 warps): q rounded to int8, so a bound of its own (measured
             * ~1e-3 is the expectation; 3e-2 still fails any wrong row, head or scale, which give O(1)) */
            for (int arm = 0; arm < 4; arm++) {
                if (arm == 0) tcu_attention_set_q8_wide_warps(12);
                else if (arm == 1) tcu_attention_set_q8_wide_batch(4);
                else tcu_attention_set_q8_wide_qq(1), tcu_attention_set_q8_wide_warps(arm == 2 ? 8 : 16);
                const char *an = arm == 0 ? "12 warps" : arm == 1 ? "batch 4" : arm == 2 ? "qq" : "qq 16 warps";
                const double bound = arm >= 2 ? 3e-2 : 1e-5;
                float *o_arm = malloc(sizeof(float) * nq);
                CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
                tcu_attention_split_q8(d_q, d_kq, d_vq, d_ks, d_vs, n, d_pos, n_head, n_head_kv, hd, scale, d_out, d_ws,
                                       S, 0);
                CK(cudaMemcpy(o_arm, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
                size_t n_nan;
                const double e64 = rel_l2_d(o_arm, o_ref, nq, &n_nan);
                CHECK(n_nan == 0 && e64 < bound, "q8 v5 %s hd=%d heads=%d/%d n=%d pos0=%d: rel L2 vs float64 %.3g", an,
                      hd, n_head, n_head_kv, n, pos0, e64);
                if (arm >= 2 && e64 > g_qq_worst) g_qq_worst = e64;
                CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
                for (int t = 0; t < n; t++)
                    tcu_attention_split_q8(d_q + t * qrow, d_kq, d_vq, d_ks, d_vs, 1, d_pos + t, n_head, n_head_kv, hd,
                                           scale, d_out + t * qrow, d_ws, S, 0);
                CK(cudaMemcpy(o_one, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
                CHECK(memcmp(o_one, o_arm, sizeof(float) * nq) == 0, "q8 v5 %s hd=%d heads=%d/%d n=%d pos0=%d: a "
                      "token's row differs from its one-token call", an, hd, n_head, n_head_kv, n, pos0);
                free(o_arm);
                tcu_attention_set_q8_wide_warps(8);
                tcu_attention_set_q8_wide_batch(2);
                tcu_attention_set_q8_wide_qq(0);
            }
        }
        CK(cudaMemset(d_out, 0xFF, sizeof(float) * nq));
        for (int t = 0; t < n; t++)
            tcu_attention_split_q8(d_q + t * qrow, d_kq, d_vq, d_ks, d_vs, 1, d_pos + t, n_head, n_head_kv, hd, scale,
                                   d_out + t * qrow, d_ws, S, 0);
        CK(cudaMemcpy(o_one, d_out, sizeof(float) * nq, cudaMemcpyDeviceToHost));
        CHECK(memcmp(o_one, o_gpu, sizeof(float) * nq) == 0, "q8 %s hd=%d heads=%d/%d n=%d pos0=%d: a token's row "
              "differs from its one-token call", kn, hd, n_head, n_head_kv, n, pos0);
    }
    tcu_attention_set_q8_wide(1);
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

/* Median of 20 timed launches (after 3 warm-ups) of tcu_attention for n tokens at positions pos0.. */
static void bench(const char *label, int hd, int n_head, int n_head_kv, int n, int pos0, int split, int flash) {
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
    tcu_attention_set_flash(flash);
    const float scale = 1.0f / sqrtf((float)hd);
    float *d_ws = NULL;
    if (split) CK(cudaMalloc((void **)&d_ws, tcu_attention_ws_bytes(n, n_head, hd, split)));
    /* a prefill chunk through the flash kernels as the backend calls them (the cache's rows known: v6b) */
#define BENCH_CALL()                                                                                              \
    do {                                                                                                          \
        if (flash && n > 16 && tcu_attention_flash_ok(n_head, n_head_kv, hd))                                     \
            tcu_attention_flash_rows(d_q, d_k, d_v, n_ctx, n, d_pos, n_head, n_head_kv, hd, scale, d_out, 0);   \
        else tcu_attention_split(d_q, d_k, d_v, n, d_pos, n_head, n_head_kv, hd, scale, d_out, d_ws, split, 0);   \
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

/* Median of 20 timed one-token launches of tcu_attention_split_q8 at position pos (16 splits), v5 or v2
 * (wide 0). Bytes: the visible K/V rows once, int8 plus the f16 scale a block (1.0625 bytes an element). */
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
    tcu_attention_set_q8_wide(wide);
    const float scale = 1.0f / sqrtf((float)hd);
    for (int i = 0; i < 3; i++)
        tcu_attention_split_q8(d_q, d_k, d_v, d_ks, d_vs, 1, d_pos, n_head, n_head_kv, hd, scale, d_out, d_ws, splits, 0);
    CK(cudaGetLastError());
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float ms[20];
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(e0, 0));
        tcu_attention_split_q8(d_q, d_k, d_v, d_ks, d_vs, 1, d_pos, n_head, n_head_kv, hd, scale, d_out, d_ws, splits, 0);
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    CK(cudaGetLastError());
    tcu_attention_set_q8_wide(1);
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
int main(int argc, char **argv) {
    const int only_q8 = argc > 1 && !strcmp(argv[1], "q8");
    /* "wg": the prefill cases (every flash version) and the causal table's v6 / v3 rows only */
    const int only_wg = argc > 1 && !strcmp(argv[1], "wg");
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
        printf("gpu_attention: no CUDA device, skipped\n");
        return check_summary("gpu_attention");
    }
    /* the decode CTA's warps as the backend would set them (TERN_CUDA_ATT_WARPS: 16 default, 8 an arm) */
    if (getenv("TERN_CUDA_ATT_WARPS")) tcu_attention_set_decode_warps(atoi(getenv("TERN_CUDA_ATT_WARPS")));
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
    /* every split of the grid whatever the depth (TERN_CUDA_ATT_ADAPT=0): splits with no keys */
    tcu_attention_set_rows_per_split(0);
    run_case_q8(128, 32, 8, 3, 5, 16);
    run_case_q8(256, 8, 8, 1, 2, 16);
    tcu_attention_set_rows_per_split(256);
    tern_pool_free(pool);
    printf("q8 v5 quantized-q arm worst rel L2 vs float64: %.3g (bound 3e-2)\n", g_qq_worst);
    printf("%-34s %15s\n", "tcu_attention_split_q8 (median of 20)", "time");
    static const int q8_pos[] = {32767, 8191, 127};
    for (int i = 0; i < 3; i++) {
        char label[64];
        snprintf(label, sizeof label, "q8 decode pos %d 32/8 hd128 v5", q8_pos[i]);
        bench_q8(label, 128, 32, 8, q8_pos[i], 1);
        snprintf(label, sizeof label, "q8 decode pos %d 32/8 hd128 v5 w12", q8_pos[i]);
        tcu_attention_set_q8_wide_warps(12);
        bench_q8(label, 128, 32, 8, q8_pos[i], 1);
        tcu_attention_set_q8_wide_warps(8);
        snprintf(label, sizeof label, "q8 decode pos %d 32/8 hd128 v5 b4", q8_pos[i]);
        tcu_attention_set_q8_wide_batch(4);
        bench_q8(label, 128, 32, 8, q8_pos[i], 1);
        tcu_attention_set_q8_wide_batch(2);
        for (int nw = 8; nw <= 16; nw += 4) {
            snprintf(label, sizeof label, "q8 decode pos %d 32/8 hd128 v5 qq w%d", q8_pos[i], nw);
            tcu_attention_set_q8_wide_qq(1);
            tcu_attention_set_q8_wide_warps(nw);
            bench_q8(label, 128, 32, 8, q8_pos[i], 1);
            tcu_attention_set_q8_wide_qq(0);
            tcu_attention_set_q8_wide_warps(8);
        }
        snprintf(label, sizeof label, "q8 decode pos %d 32/8 hd128 v2", q8_pos[i]);
        bench_q8(label, 128, 32, 8, q8_pos[i], 0);
    }
    if (only_q8) return check_summary("gpu_attention");
    printf("v3 (flash) worst rel L2 vs float64: %.3g (bound %.0e)\n", flash_worst, FLASH_TOL);
    for (int v = 0; v < 6; v++)
        printf("v6%s (wgmma) ran %d cases, worst rel L2 vs float64: %.3g (bound %.0e)\n", wg_name[v], wg_runs[v],
               wg_worst[v], FLASH_TOL);
    int cc_major = 0, cc_minor = 0;
    cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, 0);
    if (cc_major == 9 && cc_minor == 0)
        for (int v = 0; v < 6; v++) CHECK(wg_runs[v] > 0, "v6%s never ran on this sm_90 device", wg_name[v]);
    static const int big_s[] = {2048, 8192, 32768};
    if (only_wg) {
        printf("%-34s %15s\n", "tcu_attention (median of 20)", "time");
        for (int a = 0; a < 3; a++)
            for (int i = 0; i < 3; i++)
                for (int ver = 8; ver >= 0; ver--) {
                    if (hds[a] == 256 && (ver == 1 || ver >= 6)) continue; /* v6a is hd 64/128 only */
                    static const char *lab[9] = {"v3 w4", "v6a", "v6b", "v6b pp", "v6b iw", "v6b pp+iw",
                                                 "v6b pp+iw nofold", "v6b pp+iw order0", "v6b pp+iw order2"};
                    static const char *lab256[9] = {"v3 w4", "", "v6b", "v6b pp", "v6b iw", "v6b default (plain)"};
                    char label[64];
                    snprintf(label, sizeof label, "causal S=%d D=%d %s", big_s[i], hds[a], hds[a] == 256 ? lab256[ver] : lab[ver]);
                    tcu_attention_flash_set_wg(ver >= 7 ? 5 : ver);
                    tcu_attention_flash_set_order(ver == 7 ? 0 : ver == 8 ? 2 : 1);
                    bench(label, hds[a], 32, 8, big_s[i], 0, 0, 1);
                }
        tcu_attention_flash_set_order(1);
        tcu_attention_flash_set_wg(5);
        return check_summary("gpu_attention");
    }
    tcu_attention_flash_set_wg(0); /* the rows below are v1 / v3 / v4 as labelled; v6 in the causal table */

    printf("%-34s %15s\n", "tcu_attention (median of 20)", "time");
    bench("decode pos 4095 32/8 hd128 v1", 128, 32, 8, 1, 4095, 0, 1);
    bench("decode pos 4095 32/8 hd128 v2", 128, 32, 8, 1, 4095, 16, 1);
    bench("decode pos 32767 32/8 v1", 128, 32, 8, 1, 32767, 0, 1);
    bench("decode pos 32767 32/8 v2", 128, 32, 8, 1, 32767, 16, 1);
    tcu_attention_set_prefetch(2); /* the arm: the K/V prefetch ring over the f16 cache too */
    bench("decode pos 4095 32/8 hd128 v2 pf", 128, 32, 8, 1, 4095, 16, 1);
    bench("decode pos 32767 32/8 v2 pf", 128, 32, 8, 1, 32767, 16, 1);
    tcu_attention_set_prefetch(1);
    bench("decode pos 1500 9/3 hd64 v1", 64, 9, 3, 1, 1500, 0, 1);
    bench("decode pos 1500 9/3 hd64 v2", 64, 9, 3, 1, 1500, 6, 1);
    bench("prefill n=512 32/8 hd128 v1", 128, 32, 8, 512, 0, 0, 0);
    bench("prefill n=512 32/8 hd128 v3", 128, 32, 8, 512, 0, 0, 1);
    bench("prefill n=512 pos0=3584 hd128 v1", 128, 32, 8, 512, 3584, 0, 0);
    bench("prefill n=512 pos0=3584 hd128 v3", 128, 32, 8, 512, 3584, 0, 1);
    bench("prefill n=2048 32/8 hd128 v1", 128, 32, 8, 2048, 0, 0, 0);
    /* the table: causal self-attention over S tokens, 32/8 heads, flops 4*S^2*D*Hq/2 (+ the
     * diagonal); bench/sdpa_bench.py prints torch SDPA on the same shapes */
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < 3; i++)
            for (int arm = -1; arm < 3; arm++) { /* v6 and v4 (hd <= 128), v3 with 4 and 8 warps */
                if (arm == 0 && hds[a] > 128) continue; /* v4: hd <= 128 */
                const int nw = arm == 2 ? 8 : 4, mt = arm == 0 ? 2 : 1;
                char label[64];
                if (arm < 0) snprintf(label, sizeof label, "causal S=%d D=%d v6b", big_s[i], hds[a]);
                else if (mt == 2) snprintf(label, sizeof label, "causal S=%d D=%d v4", big_s[i], hds[a]);
                else snprintf(label, sizeof label, "causal S=%d D=%d v3 w%d", big_s[i], hds[a], nw);
                tcu_attention_flash_set_wg(arm < 0 ? 5 : 0);
                tcu_attention_flash_set_warps(nw);
                tcu_attention_flash_set_mt(mt);
                bench(label, hds[a], 32, 8, big_s[i], 0, 0, 1);
            }
    tcu_attention_flash_set_warps(4);
    tcu_attention_flash_set_mt(1);
    tcu_attention_flash_set_wg(5);
    return check_summary("gpu_attention");
}
