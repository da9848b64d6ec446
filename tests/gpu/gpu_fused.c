/* gpu_fused: each fused decode kernel against the unfused kernels it replaces, bit for bit, on random
 * inputs (run by bench/gpu_check.sh on a GPU box):
 * - tcu_add_rmsnorm(x, r) == tcu_add then tcu_rmsnorm (x written back, y32, y16), and its x16 output ==
 *   tcu_quantize_x16 of y32 (n = 1, 3, 16 rows; dim 576, 4096);
 * - tcu_add_rmsnorm_to (out of place) where it runs rmsnorm_k (8 CTAs a row writing slices for <= 16 rows where the
 *   cluster kernel does not run; one CTA a row above) == tcu_add_rmsnorm, bit for bit (dims 4096, 576, 8192, 16384,
 *   96; with and without the residual add);
 * - the cluster RMSNorm (tcu_add_rmsnorm_to's default on sm_90) against a double host reference, its own x16
 *   and y16 against tcu_quantize_x16 / tcu_f32_to_f16 of its y32, rows alone == rows of a batch, in place;
 * - tcu_swiglu_x16 == tcu_swiglu, and its x16 output == tcu_quantize_x16 of the result; tcu_swiglu_rows on a fused
 *   gate|up GEMM's rows == tcu_swiglu's f16 output on the halves;
 * - tcu_rope_kv == tcu_rope on q, tcu_rope on k, tcu_kv_write (q, k, both caches; n_rot = hd and n_rot < hd);
 *   the paged cache: tcu_rope_kv, tcu_rope_kv_q8 and tcu_kv_write at rows slot[t] of a pool of 16-row pages in a
 *   random order put the identity cache's rows pos[t] there and touch no other row; tcu_kv_dequant_q8 through the
 *   block table == the identity's rows;
 * - tcu_rope_kv_q8: the same q and k bits, and its Q8_0 cache rows == tern_quantize_activation(TERN_TYPE_Q8_0)
 *   (the CPU's rule, src/backend/cpu/quant.c) of the rotated k and of v, byte for byte (scales and int8), rows at pos;
 *   tcu_kv_dequant_q8 == f16(q * d) of those bytes;
 * - tcu_attention_decode_x16 == tcu_attention_split (or _q8) then tcu_quantize_x16: out and the x16 bytes
 *   (and tcu_attention_decode_h16 == the same then tcu_f32_to_f16_layout in the f16 order's layout)
 *   (f16 and Q8_0 caches; hd 64, 128; 1 and 4 splits; n = 1, 3, 16; GQA 32/8 and 4/4 heads). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "cuda/tcu.h"
#include "quant.h"
#include "util.h"

#define CU(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) { fprintf(stderr, "CUDA %s at %s:%d\n", cudaGetErrorName(e_), __FILE__, __LINE__); exit(1); } \
    } while (0)

static uint64_t rs;
static float frnd(float a) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return ((float)((rs >> 20) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f) * a;
}

static void *dup_dev(const void *h, size_t b) {
    void *d;
    CU(cudaMalloc(&d, b));
    CU(cudaMemcpy(d, h, b, cudaMemcpyHostToDevice));
    return d;
}

/* 1 if the device buffers a and b (bytes) are equal. */
static int dev_eq(const void *a, const void *b, size_t bytes) {
    void *ha = malloc(bytes), *hb = malloc(bytes);
    CU(cudaMemcpy(ha, a, bytes, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(hb, b, bytes, cudaMemcpyDeviceToHost));
    const int eq = memcmp(ha, hb, bytes) == 0;
    free(ha); free(hb);
    return eq;
}

static float *rand_dev(size_t n, float a) {
    float *h = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) h[i] = frnd(a);
    float *d = dup_dev(h, sizeof(float) * n);
    free(h);
    return d;
}

int main(void) {
    int dev_n = 0;
    if (cudaGetDeviceCount(&dev_n) != cudaSuccess || dev_n < 1) {
        printf("gpu_fused: no CUDA device, skipped\ngpu_fused: 0 passed, 0 failed\n");
        return 0;
    }
    const char *se = getenv("GPU_TEST_SEED");
    rs = se ? strtoull(se, NULL, 10) : (uint64_t)time(NULL) * 2654435761ull + 7;
    printf("gpu_fused: seed %llu\n", (unsigned long long)rs);
    /* add + RMSNorm (+ x16) */
    const int dims[2] = {576, 4096}, ns[3] = {1, 3, 16};
    for (int di = 0; di < 2; di++)
        for (int ni = 0; ni < 3; ni++) {
            const int dim = dims[di], n = ns[ni];
            const size_t nb = (size_t)n * dim;
            float *x = rand_dev(nb, 3.0f), *r = rand_dev(nb, 1.0f), *g = rand_dev((size_t)dim, 1.5f);
            float *x2;
            CU(cudaMalloc((void **)&x2, sizeof(float) * nb));
            CU(cudaMemcpy(x2, x, sizeof(float) * nb, cudaMemcpyDeviceToDevice));
            float *ya, *yb;
            uint16_t *ha, *hb;
            void *qa, *qb;
            CU(cudaMalloc((void **)&ya, sizeof(float) * nb)); CU(cudaMalloc((void **)&yb, sizeof(float) * nb));
            CU(cudaMalloc((void **)&ha, 2 * nb)); CU(cudaMalloc((void **)&hb, 2 * nb));
            CU(cudaMalloc(&qa, tcu_x16_bytes(n, dim))); CU(cudaMalloc(&qb, tcu_x16_bytes(n, dim)));
            CU(cudaMemset(qa, 0x5A, tcu_x16_bytes(n, dim))); CU(cudaMemset(qb, 0x5A, tcu_x16_bytes(n, dim)));
            tcu_add(x, r, (int64_t)nb, 0);
            tcu_rmsnorm(x, g, 1e-5f, n, dim, ya, ha, 0);
            tcu_quantize_x16(ya, n, dim, qa, 0);
            tcu_add_rmsnorm(x2, r, g, 1e-5f, n, dim, yb, hb, qb, 0);
            CU(cudaDeviceSynchronize());
            CHECK(dev_eq(x, x2, sizeof(float) * nb) && dev_eq(ya, yb, sizeof(float) * nb) && dev_eq(ha, hb, 2 * nb),
                  "add_rmsnorm n=%d dim=%d: x / y32 / y16 differ from add + rmsnorm", n, dim);
            CHECK(dev_eq(qa, qb, tcu_x16_bytes(n, dim)), "add_rmsnorm n=%d dim=%d: x16 differs from tcu_quantize_x16", n,
                  dim);
            cudaFree(x); cudaFree(x2); cudaFree(r); cudaFree(g); cudaFree(ya); cudaFree(yb); cudaFree(ha); cudaFree(hb);
            cudaFree(qa); cudaFree(qb);
        }
    /* tcu_add_rmsnorm_to (out of place) where it runs rmsnorm_k (8 CTAs a row, each writing a slice, for <= 16 rows
     * where the cluster kernel does not run: other devices, rows that fit no cluster; one CTA a row for 17 rows) ==
     * tcu_add_rmsnorm (in place, one CTA) bit for bit: new x, y32, y16, x16; with r NULL x is left alone. dims:
     * Llama-3-8B, the default model, 8192 (the fast path's widest), 16384 (the slow path: C falls to 1), 96 (C falls
     * to 1: 96 / 32 blocks do not split in 8) */
    {
        const int rdims[5] = {4096, 576, 8192, 16384, 96}, rn[3] = {1, 3, 17};
        for (int di = 0; di < 5; di++)
            for (int ci = 0; ci < 3; ci++)
                for (int withr = 0; withr < 2; withr++) {
                    const int dim = rdims[di], n = rn[ci];
                    if (n <= 16 && tcu_rms_cluster_ctas(dim)) continue; /* the cluster kernel: its own order, below */
                    const size_t nb = (size_t)n * dim;
                    float *x = rand_dev(nb, 3.0f), *r = rand_dev(nb, 1.0f), *g = rand_dev((size_t)dim, 1.5f);
                    float *x2, *xo, *ya, *yb;
                    uint16_t *ha, *hb;
                    void *qa, *qb;
                    CU(cudaMalloc((void **)&x2, sizeof(float) * nb)); CU(cudaMalloc((void **)&xo, sizeof(float) * nb));
                    CU(cudaMemcpy(x2, x, sizeof(float) * nb, cudaMemcpyDeviceToDevice));
                    CU(cudaMemset(xo, 0x7F, sizeof(float) * nb));
                    CU(cudaMalloc((void **)&ya, sizeof(float) * nb)); CU(cudaMalloc((void **)&yb, sizeof(float) * nb));
                    CU(cudaMalloc((void **)&ha, 2 * nb)); CU(cudaMalloc((void **)&hb, 2 * nb));
                    CU(cudaMalloc(&qa, tcu_x16_bytes(n, dim))); CU(cudaMalloc(&qb, tcu_x16_bytes(n, dim)));
                    CU(cudaMemset(qa, 0x5A, tcu_x16_bytes(n, dim))); CU(cudaMemset(qb, 0x5A, tcu_x16_bytes(n, dim)));
                    tcu_add_rmsnorm(x, withr ? r : NULL, g, 1e-5f, n, dim, ya, ha, qa, 0);
                    tcu_add_rmsnorm_to(x2, xo, withr ? r : NULL, g, 1e-5f, n, dim, yb, hb, qb, 0);
                    CU(cudaDeviceSynchronize());
                    CHECK(dev_eq(ya, yb, sizeof(float) * nb) && dev_eq(ha, hb, 2 * nb) &&
                              dev_eq(qa, qb, tcu_x16_bytes(n, dim)),
                          "add_rmsnorm_to dim=%d n=%d r=%d: y32 / y16 / x16 differ from add_rmsnorm", dim, n, withr);
                    CHECK(withr ? dev_eq(x, xo, sizeof(float) * nb) : dev_eq(x, x2, sizeof(float) * nb),
                          "add_rmsnorm_to dim=%d n=%d r=%d: the residual differs", dim, n, withr);
                    if (!withr) { /* r NULL: xo is never written (still its 0x7F fill) */
                        float *xf = malloc(sizeof(float) * nb), *xg = malloc(sizeof(float) * nb);
                        memset(xf, 0x7F, sizeof(float) * nb);
                        CU(cudaMemcpy(xg, xo, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                        CHECK(!memcmp(xf, xg, sizeof(float) * nb), "add_rmsnorm_to dim=%d n=%d: xo written without r",
                              dim, n);
                        free(xf);
                        free(xg);
                    }
                    cudaFree(x); cudaFree(x2); cudaFree(xo); cudaFree(r); cudaFree(g); cudaFree(ya); cudaFree(yb);
                    cudaFree(ha); cudaFree(hb); cudaFree(qa); cudaFree(qb);
                }
    }
    /* the cluster RMSNorm (tcu_add_rmsnorm_to's default for n <= TCU_MULTI_MAX on sm_90: rmsnorm_cl_k) against
     * the host in double (y32 within 1e-6 relative: only the order of the sum of squares differs), the residual
     * x + r bit for bit (a float add either way), its x16 == tcu_quantize_x16 of its own y32 and y16 == f16 of
     * y32, row t of an n-row call == a 1-row call on that row bit for bit, in place (xo == x) == out of place,
     * and the launch counted (tcu_rms_cluster_count); dims 4096 (C 8 CTAs of 512), 576 (C 6 of 96), 8192 (C 8
     * of 1024), 5120 (C 8 of 640), 96 (C 3 of 32); 16384 fits no C (rmsnorm_k runs: not counted); n 1, 3, 8, 16 and 40
     * (tcu_add_rmsnorm_dec_to with dec = 1, a GEMV-path pass longer than TCU_MULTI_MAX; the same call as
     * tcu_add_rmsnorm_to at n <= 16); each call is made again in an f16-order pass (the hm layout on) and must give
     * the same y32, x16 and residual bytes */
    {
        int major = 0;
        CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
        const int rdims[6] = {4096, 576, 8192, 5120, 96, 16384}, rns[5] = {1, 3, 8, 16, 40};
        for (int di = 0; di < 6; di++)
            for (int ni = 0; ni < 5; ni++)
                for (int withr = 0; withr < 2; withr++) {
                    const int dim = rdims[di], n = rns[ni];
                    const size_t nb = (size_t)n * dim, xb = tcu_x16_bytes(n, dim);
                    const float eps = 1e-5f;
                    float *x = rand_dev(nb, 3.0f), *r = rand_dev(nb, 1.0f), *g = rand_dev((size_t)dim, 1.5f);
                    float *xo, *y, *y1, *xin;
                    uint16_t *h, *hc;
                    void *q, *qc, *q1;
                    CU(cudaMalloc((void **)&xo, sizeof(float) * nb)); CU(cudaMalloc((void **)&y, sizeof(float) * nb));
                    CU(cudaMalloc((void **)&y1, sizeof(float) * dim)); CU(cudaMalloc((void **)&xin, sizeof(float) * nb));
                    CU(cudaMalloc((void **)&h, 2 * nb)); CU(cudaMalloc((void **)&hc, 2 * nb));
                    CU(cudaMalloc(&q, xb)); CU(cudaMalloc(&qc, xb)); CU(cudaMalloc(&q1, tcu_x16_bytes(1, dim)));
                    CU(cudaMemset(q, 0x5A, xb)); CU(cudaMemset(qc, 0x3C, xb));
                    CU(cudaMemset(xo, 0x7F, sizeof(float) * nb));
                    CU(cudaMemcpy(xin, x, sizeof(float) * nb, cudaMemcpyDeviceToDevice));
                    const uint64_t c0 = tcu_rms_cluster_count();
                    tcu_add_rmsnorm_dec_to(x, xo, withr ? r : NULL, g, eps, n, dim, y, h, q, 1, 0);
                    const uint64_t c1 = tcu_rms_cluster_count();
                    const int want = major >= 9 && dim != 16384;
                    CHECK(c1 - c0 == (uint64_t)want, "rms cluster dim=%d n=%d: %llu launches counted, want %d", dim, n,
                          (unsigned long long)(c1 - c0), want);
                    if (want) { /* the f16-order pass (hm layout on; y16 then in tcu_hm_pos order): the same bytes */
                        float *y2, *xo2;
                        uint16_t *h2;
                        void *q2;
                        CU(cudaMalloc((void **)&y2, sizeof(float) * nb)); CU(cudaMalloc((void **)&xo2, sizeof(float) * nb));
                        CU(cudaMalloc((void **)&h2, 2 * nb)); CU(cudaMalloc(&q2, xb));
                        CU(cudaMemset(q2, 0x5A, xb)); CU(cudaMemset(xo2, 0x7F, sizeof(float) * nb));
                        tcu_set_hm_layout(1);
                        const uint64_t c2 = tcu_rms_cluster_count();
                        tcu_add_rmsnorm_dec_to(x, xo2, withr ? r : NULL, g, eps, n, dim, y2, h2, q2, 1, 0);
                        const uint64_t c3 = tcu_rms_cluster_count();
                        tcu_set_hm_layout(0);
                        CU(cudaDeviceSynchronize());
                        CHECK(c3 - c2 == 1 && dev_eq(y, y2, sizeof(float) * nb) && dev_eq(q, q2, xb) &&
                                  dev_eq(xo, xo2, sizeof(float) * nb),
                              "rms dim=%d n=%d r=%d: the f16 pass differs from the plain call (%llu launches)", dim, n, withr,
                              (unsigned long long)(c3 - c2));
                        cudaFree(y2); cudaFree(xo2); cudaFree(h2); cudaFree(q2);
                    }
                    tcu_quantize_x16(y, n, dim, qc, 0);
                    tcu_f32_to_f16(y, hc, (int64_t)nb, 0);
                    CU(cudaDeviceSynchronize());
                    CHECK(dev_eq(q, qc, xb), "rms cluster dim=%d n=%d r=%d: x16 differs from tcu_quantize_x16 of y32",
                          dim, n, withr);
                    CHECK(dev_eq(h, hc, 2 * nb), "rms cluster dim=%d n=%d r=%d: y16 differs from f16 of y32", dim, n,
                          withr);
                    float *hx = malloc(sizeof(float) * nb), *hr = malloc(sizeof(float) * nb), *hg = malloc(sizeof(float) * dim);
                    float *hxo = malloc(sizeof(float) * nb), *hy = malloc(sizeof(float) * nb);
                    CU(cudaMemcpy(hx, x, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(hr, r, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(hg, g, sizeof(float) * dim, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(hxo, xo, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(hy, y, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                    double md = 0.0;
                    int res_ok = 1;
                    for (int t = 0; t < n; t++) {
                        double ss = 0.0;
                        for (int i = 0; i < dim; i++) {
                            const size_t k = (size_t)t * dim + i;
                            const float v = withr ? hx[k] + hr[k] : hx[k];
                            if (withr && memcmp(&v, &hxo[k], sizeof v)) res_ok = 0;
                            ss += (double)v * v;
                        }
                        const float sc = (float)(1.0 / sqrt(ss / dim + (double)eps));
                        for (int i = 0; i < dim; i++) {
                            const size_t k = (size_t)t * dim + i;
                            const float v = withr ? hx[k] + hr[k] : hx[k];
                            const float want_y = (v * sc) * hg[i];
                            const double d = fabs((double)hy[k] - want_y) / (fabs((double)want_y) + 1e-30);
                            if (d > md) md = d;
                        }
                    }
                    CHECK(md < 1e-6, "rms cluster dim=%d n=%d r=%d: y32 %.3g from the host reference", dim, n, withr, md);
                    CHECK(res_ok, "rms cluster dim=%d n=%d: the residual x + r differs from the host's float add", dim, n);
                    if (!withr) {
                        float *xf = malloc(sizeof(float) * nb);
                        memset(xf, 0x7F, sizeof(float) * nb);
                        CHECK(!memcmp(xf, hxo, sizeof(float) * nb), "rms cluster dim=%d n=%d: xo written without r", dim,
                              n);
                        free(xf);
                    }
                    /* the last row alone (a 1-row call on it) gives that row's bits */
                    if (n > 1) {
                        float *xo1;
                        CU(cudaMalloc((void **)&xo1, sizeof(float) * dim));
                        const size_t lo = (size_t)(n - 1) * dim;
                        tcu_add_rmsnorm_dec_to(x + lo, xo1, withr ? r + lo : NULL, g, eps, 1, dim, y1, NULL, q1, 1, 0);
                        CU(cudaDeviceSynchronize());
                        float *hy1 = malloc(sizeof(float) * dim);
                        CU(cudaMemcpy(hy1, y1, sizeof(float) * dim, cudaMemcpyDeviceToHost));
                        CHECK(!memcmp(hy1, hy + lo, sizeof(float) * dim), "rms cluster dim=%d n=%d r=%d: row %d alone differs",
                              dim, n, withr, n - 1);
                        free(hy1);
                        cudaFree(xo1);
                    }
                    /* in place (xo == x, the first layer's call has r NULL; with r the same bits) */
                    if (withr && (n == 3 || n == 16)) { /* one and two elements a thread (RMS_CL_EPT_MIN) */
                        tcu_add_rmsnorm_dec_to(xin, xin, r, g, eps, n, dim, y, NULL, NULL, 1, 0);
                        CU(cudaDeviceSynchronize());
                        float *hy2 = malloc(sizeof(float) * nb), *hx2 = malloc(sizeof(float) * nb);
                        CU(cudaMemcpy(hy2, y, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                        CU(cudaMemcpy(hx2, xin, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                        CHECK(!memcmp(hy2, hy, sizeof(float) * nb) && !memcmp(hx2, hxo, sizeof(float) * nb),
                              "rms cluster dim=%d: in place differs from out of place", dim);
                        free(hy2); free(hx2);
                    }
                    free(hx); free(hr); free(hg); free(hxo); free(hy);
                    cudaFree(x); cudaFree(r); cudaFree(g); cudaFree(xo); cudaFree(y); cudaFree(y1); cudaFree(xin);
                    cudaFree(h); cudaFree(hc); cudaFree(q); cudaFree(qc); cudaFree(q1);
                }
    }
    /* Gemma's post-norm folded into the next norm (tcu_add_rmsnorm_post_to: rmsnorm_cl_k<1>): xo = x + rmsnorm(r) * pg
     * and y32 = rmsnorm(xo) * g against the host's float formulas with double sums, y32 against the unfused pair
     * (tcu_rmsnorm_rows, a float sum, then tcu_add_rmsnorm_to), each error measured against the operands' size
     * ((|x| + |r'|) sc |g|: x + r' can cancel, so a last-bit change of a scale is no small relative error of y), x16 ==
     * tcu_quantize_x16 of y32, row n-1 alone == its row of the n-row call bit for bit (batch invariance), one cluster
     * launch counted. Where the fused launch does not run (dim 16384 fits no cluster; n = 65 > TCU_PASS_MAX):
     * tcu_rms_post_fused says 0 and the call equals the unfused pair bit for bit. eps and peps far apart and large
     * against the rows' mean squares, so a swap shows. Dims: Gemma 3 4B (2560: C 8 of 320), 27B (5376: C 8 of 672),
     * 1B (1152: C 6 of 192), 270M (640: C 5 of 128). */
    {
        int major = 0;
        CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
        const int pdims[5] = {2560, 5376, 1152, 640, 16384}, pns[5] = {1, 3, 16, 40, 65};
        for (int di = 0; di < 5; di++)
            for (int ni = 0; ni < 5; ni++) {
                const int dim = pdims[di], n = pns[ni];
                const size_t nb = (size_t)n * dim, xb = tcu_x16_bytes(n, dim);
                const float eps = 0.5f, peps = 200.0f; /* r's mean square ~533, x + r' ~3 */
                float *x = rand_dev(nb, 3.0f), *r = rand_dev(nb, 40.0f), *g = rand_dev((size_t)dim, 1.5f);
                float *pg = rand_dev((size_t)dim, 2.0f), *r2, *xo, *xo2, *y, *y2, *y1, *xo1, *r1;
                void *q, *qc;
                CU(cudaMalloc((void **)&r2, sizeof(float) * nb)); CU(cudaMalloc((void **)&xo, sizeof(float) * nb));
                CU(cudaMalloc((void **)&xo2, sizeof(float) * nb)); CU(cudaMalloc((void **)&y, sizeof(float) * nb));
                CU(cudaMalloc((void **)&y2, sizeof(float) * nb)); CU(cudaMalloc((void **)&y1, sizeof(float) * dim));
                CU(cudaMalloc((void **)&xo1, sizeof(float) * dim)); CU(cudaMalloc((void **)&r1, sizeof(float) * dim));
                CU(cudaMalloc(&q, xb)); CU(cudaMalloc(&qc, xb));
                CU(cudaMemcpy(r2, r, sizeof(float) * nb, cudaMemcpyDeviceToDevice));
                const size_t lo = (size_t)(n - 1) * dim;
                CU(cudaMemcpy(r1, r + lo, sizeof(float) * dim, cudaMemcpyDeviceToDevice));
                const int fused = tcu_rms_post_fused(n, dim);
                const int want = major >= 9 && dim != 16384 && n <= TCU_PASS_MAX;
                CHECK(fused == want, "rms post dim=%d n=%d: tcu_rms_post_fused %d, want %d", dim, n, fused, want);
                const uint64_t c0 = tcu_rms_cluster_count();
                tcu_add_rmsnorm_post_to(x, xo, r, pg, peps, g, eps, n, dim, y, NULL, q, 0);
                const uint64_t c1 = tcu_rms_cluster_count();
                /* the unfused pair on a copy of r */
                tcu_rmsnorm_rows(r2, pg, peps, n, dim, 0);
                tcu_add_rmsnorm_to(x, xo2, r2, g, eps, n, dim, y2, NULL, NULL, 0);
                tcu_quantize_x16(y, n, dim, qc, 0);
                CU(cudaDeviceSynchronize());
                CHECK(c1 - c0 == (uint64_t)fused, "rms post dim=%d n=%d: %llu cluster launches counted", dim, n,
                      (unsigned long long)(c1 - c0));
                CHECK(dev_eq(q, qc, xb), "rms post dim=%d n=%d: x16 differs from tcu_quantize_x16 of y32", dim, n);
                float *hx = malloc(sizeof(float) * nb), *hr = malloc(sizeof(float) * nb), *hg = malloc(sizeof(float) * dim);
                float *hpg = malloc(sizeof(float) * dim), *hxo = malloc(sizeof(float) * nb), *hy = malloc(sizeof(float) * nb);
                float *hxo2 = malloc(sizeof(float) * nb), *hy2 = malloc(sizeof(float) * nb);
                CU(cudaMemcpy(hx, x, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hr, r2, sizeof(float) * nb, cudaMemcpyDeviceToHost)); /* r2 normalised: read r below */
                CU(cudaMemcpy(hg, g, sizeof(float) * dim, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hpg, pg, sizeof(float) * dim, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hxo, xo, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hy, y, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hxo2, xo2, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hy2, y2, sizeof(float) * nb, cudaMemcpyDeviceToHost));
                if (fused) CU(cudaMemcpy(hr, r, sizeof(float) * nb, cudaMemcpyDeviceToHost)); /* untouched by the fused call */
                double mxo = 0.0, my = 0.0, mpair = 0.0;
                for (int t = 0; t < n && fused; t++) {
                    double s1 = 0.0, s2 = 0.0;
                    for (int i = 0; i < dim; i++) s1 += (double)hr[(size_t)t * dim + i] * hr[(size_t)t * dim + i];
                    const float sc1 = (float)(1.0 / sqrt(s1 / dim + (double)peps));
                    for (int i = 0; i < dim; i++) {
                        const size_t k = (size_t)t * dim + i;
                        const float rp = (hr[k] * sc1) * hpg[i], v = hx[k] + rp;
                        const double d = fabs((double)hxo[k] - v) / (fabs((double)hx[k]) + fabs((double)rp) + 1e-30);
                        if (d > mxo) mxo = d;
                        s2 += (double)hxo[k] * hxo[k];
                    }
                    const float sc = (float)(1.0 / sqrt(s2 / dim + (double)eps));
                    for (int i = 0; i < dim; i++) {
                        const size_t k = (size_t)t * dim + i;
                        const float w = (hxo[k] * sc) * hg[i];
                        const float rp = (hr[k] * sc1) * hpg[i];
                        const double mag = (fabs((double)hx[k]) + fabs((double)rp)) * sc * fabs((double)hg[i]) + 1e-30;
                        const double d = fabs((double)hy[k] - w) / (fabs((double)w) + 1e-30);
                        if (d > my) my = d;
                        const double dp = fabs((double)hy[k] - hy2[k]) / mag;
                        if (dp > mpair) mpair = dp;
                    }
                }
                if (fused) {
                    CHECK(mxo < 1e-6, "rms post dim=%d n=%d: xo %.3g from the host's x + rmsnorm(r) * pg", dim, n, mxo);
                    CHECK(my < 1e-6, "rms post dim=%d n=%d: y32 %.3g from the host's norm of xo", dim, n, my);
                    CHECK(mpair < 2e-6, "rms post dim=%d n=%d: y32 %.3g from the unfused pair", dim, n, mpair);
                } else {
                    CHECK(!memcmp(hy, hy2, sizeof(float) * nb) && !memcmp(hxo, hxo2, sizeof(float) * nb),
                          "rms post dim=%d n=%d: the unfused fallback differs from the pair", dim, n);
                }
                if (n > 1) { /* the last row alone */
                    tcu_add_rmsnorm_post_to(x + lo, xo1, r1, pg, peps, g, eps, 1, dim, y1, NULL, NULL, 0);
                    CU(cudaDeviceSynchronize());
                    float *hy1 = malloc(sizeof(float) * dim);
                    CU(cudaMemcpy(hy1, y1, sizeof(float) * dim, cudaMemcpyDeviceToHost));
                    /* n = 65 ran unfused (one CTA a row), the 1-row call the fused kernel: equal to rounding only */
                    if (n <= TCU_PASS_MAX)
                        CHECK(!memcmp(hy1, hy + lo, sizeof(float) * dim), "rms post dim=%d n=%d: row %d alone differs", dim,
                              n, n - 1);
                    free(hy1);
                }
                free(hx); free(hr); free(hg); free(hpg); free(hxo); free(hy); free(hxo2); free(hy2);
                cudaFree(x); cudaFree(r); cudaFree(g); cudaFree(pg); cudaFree(r2); cudaFree(xo); cudaFree(xo2);
                cudaFree(y); cudaFree(y2); cudaFree(y1); cudaFree(xo1); cudaFree(r1); cudaFree(q); cudaFree(qc);
            }
    }
    /* SwiGLU (+ x16) */
    for (int ni = 0; ni < 3; ni++) {
        const int n = ns[ni], F = 14336;
        const size_t nb = (size_t)n * F;
        float *ga = rand_dev(nb, 6.0f), *u = rand_dev(nb, 2.0f), *gb;
        CU(cudaMalloc((void **)&gb, sizeof(float) * nb));
        CU(cudaMemcpy(gb, ga, sizeof(float) * nb, cudaMemcpyDeviceToDevice));
        void *qa, *qb;
        CU(cudaMalloc(&qa, tcu_x16_bytes(n, F))); CU(cudaMalloc(&qb, tcu_x16_bytes(n, F)));
        CU(cudaMemset(qa, 0x5A, tcu_x16_bytes(n, F))); CU(cudaMemset(qb, 0x5A, tcu_x16_bytes(n, F)));
        tcu_glu(0, ga, u, (int64_t)nb, NULL, 0);
        tcu_quantize_x16(ga, n, F, qa, 0);
        tcu_glu_x16(0, gb, u, n, F, qb, 0);
        CU(cudaDeviceSynchronize());
        CHECK(dev_eq(ga, gb, sizeof(float) * nb) && dev_eq(qa, qb, tcu_x16_bytes(n, F)), "swiglu_x16 n=%d differs", n);
        cudaFree(ga); cudaFree(gb); cudaFree(u); cudaFree(qa); cudaFree(qb);
    }
    /* SwiGLU over a fused gate|up GEMM's rows (tcu_swiglu_rows, the prefill path) == tcu_swiglu's f16 output on the
     * two halves copied apart */
    for (int ni = 0; ni < 3; ni++) {
        const int n = ns[ni] + 17, F = 14336; /* prefill-sized row counts */
        const size_t nb = (size_t)n * F;
        float *gu = rand_dev(2 * nb, 6.0f), *ga, *u;
        uint16_t *ha, *hb;
        CU(cudaMalloc((void **)&ga, sizeof(float) * nb)); CU(cudaMalloc((void **)&u, sizeof(float) * nb));
        CU(cudaMalloc((void **)&ha, 2 * nb)); CU(cudaMalloc((void **)&hb, 2 * nb));
        CU(cudaMemset(ha, 0x5A, 2 * nb)); CU(cudaMemset(hb, 0xA5, 2 * nb));
        CU(cudaMemcpy2D(ga, sizeof(float) * F, gu, sizeof(float) * 2 * F, sizeof(float) * F, n, cudaMemcpyDeviceToDevice));
        CU(cudaMemcpy2D(u, sizeof(float) * F, gu + F, sizeof(float) * 2 * F, sizeof(float) * F, n, cudaMemcpyDeviceToDevice));
        tcu_glu(0, ga, u, (int64_t)nb, ha, 0);
        tcu_glu_rows(0, gu, n, F, hb, 0);
        CU(cudaDeviceSynchronize());
        CHECK(dev_eq(ha, hb, 2 * nb), "swiglu_rows n=%d differs from swiglu on the halves", n);
        cudaFree(gu); cudaFree(ga); cudaFree(u); cudaFree(ha); cudaFree(hb);
    }
    /* RoPE + KV write */
    const int rots[2] = {128, 64};
    /* the pairing and the cos/sin factor: normal, NEOX, NEOX with a YaRN-style factor (the table carries it) */
    for (int vi = 0; vi < 3; vi++)
    for (int ri = 0; ri < 2; ri++)
        for (int ni = 0; ni < 3; ni++) {
            const int neox = vi > 0;
            const float ms = vi == 2 ? 1.1386294f : 1.0f;
            const int n = ns[ni], nh = 32, nkv = 8, hd = 128, n_rot = rots[ri], n_ctx = 64, row = nkv * hd;
            float *qa = rand_dev((size_t)n * nh * hd, 2.0f), *ka = rand_dev((size_t)n * row, 2.0f);
            float *v = rand_dev((size_t)n * row, 2.0f), *qb, *kb;
            CU(cudaMalloc((void **)&qb, sizeof(float) * n * nh * hd)); CU(cudaMalloc((void **)&kb, sizeof(float) * n * row));
            CU(cudaMemcpy(qb, qa, sizeof(float) * n * nh * hd, cudaMemcpyDeviceToDevice));
            CU(cudaMemcpy(kb, ka, sizeof(float) * n * row, cudaMemcpyDeviceToDevice));
            float *q0, *k0, *q1, *k1, *q2, *k2; /* unrotated copies for the Q8_0 and the paged checks */
            CU(cudaMalloc((void **)&q0, sizeof(float) * n * nh * hd)); CU(cudaMalloc((void **)&k0, sizeof(float) * n * row));
            CU(cudaMemcpy(q0, qa, sizeof(float) * n * nh * hd, cudaMemcpyDeviceToDevice));
            CU(cudaMemcpy(k0, ka, sizeof(float) * n * row, cudaMemcpyDeviceToDevice));
            CU(cudaMalloc((void **)&q1, sizeof(float) * n * nh * hd)); CU(cudaMalloc((void **)&k1, sizeof(float) * n * row));
            CU(cudaMemcpy(q1, qa, sizeof(float) * n * nh * hd, cudaMemcpyDeviceToDevice));
            CU(cudaMemcpy(k1, ka, sizeof(float) * n * row, cudaMemcpyDeviceToDevice));
            CU(cudaMalloc((void **)&q2, sizeof(float) * n * nh * hd)); CU(cudaMalloc((void **)&k2, sizeof(float) * n * row));
            CU(cudaMemcpy(q2, qa, sizeof(float) * n * nh * hd, cudaMemcpyDeviceToDevice));
            CU(cudaMemcpy(k2, ka, sizeof(float) * n * row, cudaMemcpyDeviceToDevice));
            float *hf = malloc(sizeof(float) * (n_rot / 2 + 1));
            for (int i = 0; i < n_rot / 2; i++) hf[i] = powf(500000.0f, -2.0f * i / n_rot);
            float *freq = dup_dev(hf, sizeof(float) * (n_rot / 2 + 1));
            int32_t hp[16];
            for (int t = 0; t < n; t++) hp[t] = 40 + 3 * t % 20;
            int32_t *pos = dup_dev(hp, sizeof hp);
            uint16_t *kca, *vca, *kcb, *vcb;
            const size_t cb = sizeof(uint16_t) * (size_t)n_ctx * row;
            CU(cudaMalloc((void **)&kca, cb)); CU(cudaMalloc((void **)&vca, cb));
            CU(cudaMalloc((void **)&kcb, cb)); CU(cudaMalloc((void **)&vcb, cb));
            CU(cudaMemset(kca, 0x11, cb)); CU(cudaMemset(vca, 0x11, cb)); CU(cudaMemset(kcb, 0x11, cb)); CU(cudaMemset(vcb, 0x11, cb));
            tcu_rope(qa, n, nh, hd, n_rot, neox, ms, pos, freq, 0);
            tcu_rope(ka, n, nkv, hd, n_rot, neox, ms, pos, freq, 0);
            tcu_kv_write(ka, v, kca, vca, n, row, pos, 0); /* the identity: slot = pos */
            float *cs; /* the pass's (cos, sin) table (tcu_rope_table): read instead of computed, the same bits */
            CU(cudaMalloc((void **)&cs, sizeof(float) * 2 * n * (n_rot / 2)));
            tcu_rope_table(pos, freq, n, n_rot, ms, cs, 0);
            /* the f16 kernel with the table but at n = 3 (computed there), the Q8_0 one below the other way round */
            tcu_rope_kv(qb, kb, v, n, nh, nkv, hd, n_rot, neox, ms, pos, pos, freq, n == 3 ? NULL : cs, NULL, NULL, 0.0f, kcb, vcb,
                        0);
            CU(cudaDeviceSynchronize());
            CHECK(dev_eq(qa, qb, sizeof(float) * n * nh * hd) && dev_eq(ka, kb, sizeof(float) * n * row) &&
                      dev_eq(kca, kcb, cb) && dev_eq(vca, vcb, cb),
                  "rope_kv (table %d) n=%d n_rot=%d neox=%d mscale=%g differs from rope + rope + kv_write", n != 3, n, n_rot,
                  neox, ms);
            { /* the Q8_0 cache: q0/k0 hold the unrotated inputs (copied before the rope calls) */
                int8_t *kq, *vq;
                uint16_t *ks, *vs, *k16;
                const size_t nq8 = (size_t)n_ctx * row, nsc = nq8 / 32;
                CU(cudaMalloc((void **)&kq, nq8)); CU(cudaMalloc((void **)&vq, nq8));
                CU(cudaMalloc((void **)&ks, 2 * nsc)); CU(cudaMalloc((void **)&vs, 2 * nsc));
                CU(cudaMalloc((void **)&k16, 2 * nq8));
                tcu_rope_kv_q8(q0, k0, v, n, nh, nkv, hd, n_rot, neox, ms, pos, pos, freq, n == 3 ? cs : NULL, NULL, NULL, 0.0f, kq,
                               ks, vq, vs, 0);
                tcu_kv_dequant_q8(kq, ks, NULL, 0, n_ctx, row, k16, 0);
                CU(cudaDeviceSynchronize());
                CHECK(dev_eq(qa, q0, sizeof(float) * n * nh * hd) && dev_eq(ka, k0, sizeof(float) * n * row),
                      "rope_kv_q8 n=%d n_rot=%d: q or k differs from rope", n, n_rot);
                float *hk = malloc(sizeof(float) * n * row), *hv = malloc(sizeof(float) * n * row);
                int8_t *hkq = malloc(nq8), *hvq = malloc(nq8);
                uint16_t *hks = malloc(2 * nsc), *hvs = malloc(2 * nsc), *hk16 = malloc(2 * nq8);
                uint8_t *blk = malloc((size_t)row / 32 * 34);
                CU(cudaMemcpy(hk, ka, sizeof(float) * n * row, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hv, v, sizeof(float) * n * row, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hkq, kq, nq8, cudaMemcpyDeviceToHost)); CU(cudaMemcpy(hvq, vq, nq8, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hks, ks, 2 * nsc, cudaMemcpyDeviceToHost)); CU(cudaMemcpy(hvs, vs, 2 * nsc, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hk16, k16, 2 * nq8, cudaMemcpyDeviceToHost));
                int bad = 0, bad16 = 0;
                for (int t = 0; t < n; t++)
                    for (int kv = 0; kv < 2; kv++) {
                        tern_quantize_activation(TERN_TYPE_Q8_0, (kv ? hv : hk) + (size_t)t * row, blk, row);
                        const int8_t *gq = (kv ? hvq : hkq) + (size_t)hp[t] * row;
                        const uint16_t *gs = (kv ? hvs : hks) + (size_t)hp[t] * (row / 32);
                        for (int b = 0; b < row / 32; b++) {
                            uint16_t d;
                            memcpy(&d, blk + (size_t)b * 34, 2);
                            if (d != gs[b] || memcmp(blk + (size_t)b * 34 + 2, gq + b * 32, 32)) bad++;
                            if (kv) continue;
                            for (int j = 0; j < 32; j++) { /* the dequantized f16 of the K row */
                                const float x = (float)gq[b * 32 + j] * tern_fp16_to_fp32(gs[b]);
                                if (hk16[(size_t)hp[t] * row + b * 32 + j] != tern_fp32_to_fp16(x)) bad16++;
                            }
                        }
                    }
                CHECK(bad == 0, "rope_kv_q8 n=%d n_rot=%d: %d Q8_0 blocks differ from tern_quantize_activation", n,
                      n_rot, bad);
                CHECK(bad16 == 0, "kv_dequant_q8 n=%d: %d elements differ from f16(q * d)", n, bad16);
                /* the paged cache: the pool is n_ctx rows in 16-row pages, page i of the sequence at pool page bt[i]
                 * (a random permutation), token t's row at slot[t] = bt[pos >> 4] * 16 + (pos & 15); the pool starts as
                 * the identity caches' sentinel rows, so every other row must stay as it was */
                {
                    enum { LBS = 4 };
                    const int npg = n_ctx >> LBS;
                    int32_t hbt[64], hsl[16];
                    for (int i = 0; i < npg; i++) hbt[i] = i;
                    for (int i = npg - 1; i > 0; i--) { /* Fisher-Yates on the test's generator */
                        frnd(1.0f);
                        const int j = (int)((rs >> 11) % (uint64_t)(i + 1)), tmp = hbt[i];
                        hbt[i] = hbt[j];
                        hbt[j] = tmp;
                    }
                    for (int t = 0; t < n; t++) hsl[t] = hbt[hp[t] >> LBS] * (1 << LBS) + (hp[t] & ((1 << LBS) - 1));
                    int32_t *bt = dup_dev(hbt, sizeof hbt), *slot = dup_dev(hsl, sizeof hsl);
                    uint16_t *kcp, *vcp, *kcw, *vcw, *k16p;
                    int8_t *kqp, *vqp;
                    uint16_t *ksp, *vsp;
                    CU(cudaMalloc((void **)&kcp, cb)); CU(cudaMalloc((void **)&vcp, cb));
                    CU(cudaMalloc((void **)&kcw, cb)); CU(cudaMalloc((void **)&vcw, cb));
                    CU(cudaMalloc((void **)&k16p, 2 * nq8));
                    CU(cudaMemset(kcp, 0x11, cb)); CU(cudaMemset(vcp, 0x11, cb));
                    CU(cudaMemset(kcw, 0x11, cb)); CU(cudaMemset(vcw, 0x11, cb));
                    CU(cudaMalloc((void **)&kqp, nq8)); CU(cudaMalloc((void **)&vqp, nq8));
                    CU(cudaMalloc((void **)&ksp, 2 * nsc)); CU(cudaMalloc((void **)&vsp, 2 * nsc));
                    CU(cudaMemset(kqp, 0x22, nq8)); CU(cudaMemset(vqp, 0x22, nq8));
                    CU(cudaMemset(ksp, 0x22, 2 * nsc)); CU(cudaMemset(vsp, 0x22, 2 * nsc));
                    tcu_rope_kv(q1, k1, v, n, nh, nkv, hd, n_rot, neox, ms, pos, slot, freq, n == 3 ? NULL : cs, NULL, NULL, 0.0f, kcp, vcp, 0);
                    tcu_kv_write(ka, v, kcw, vcw, n, row, slot, 0);
                    tcu_rope_kv_q8(q2, k2, v, n, nh, nkv, hd, n_rot, neox, ms, pos, slot, freq, n == 3 ? cs : NULL, NULL, NULL, 0.0f, kqp, ksp, vqp,
                                   vsp, 0);
                    tcu_kv_dequant_q8(kqp, ksp, bt, LBS, n_ctx, row, k16p, 0);
                    CU(cudaDeviceSynchronize());
                    CHECK(dev_eq(qa, q1, sizeof(float) * n * nh * hd) && dev_eq(ka, k1, sizeof(float) * n * row) &&
                              dev_eq(qa, q2, sizeof(float) * n * nh * hd) && dev_eq(ka, k2, sizeof(float) * n * row),
                          "paged rope_kv n=%d n_rot=%d: q or k differs from the identity's", n, n_rot);
                    /* expected pools: the sentinel, with the identity's row pos[t] at slot[t] */
                    uint16_t *hkc = malloc(cb), *hvc = malloc(cb), *ek = malloc(cb), *ev = malloc(cb);
                    uint16_t *gk = malloc(cb), *gv = malloc(cb), *gwk = malloc(cb), *gwv = malloc(cb);
                    int8_t *gkq = malloc(nq8), *gvq = malloc(nq8), *eq = malloc(nq8), *evq = malloc(nq8);
                    uint16_t *gks = malloc(2 * nsc), *gvs = malloc(2 * nsc), *es = malloc(2 * nsc), *evs = malloc(2 * nsc);
                    uint16_t *g16 = malloc(2 * nq8);
                    CU(cudaMemcpy(hkc, kca, cb, cudaMemcpyDeviceToHost)); CU(cudaMemcpy(hvc, vca, cb, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(gk, kcp, cb, cudaMemcpyDeviceToHost)); CU(cudaMemcpy(gv, vcp, cb, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(gwk, kcw, cb, cudaMemcpyDeviceToHost)); CU(cudaMemcpy(gwv, vcw, cb, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(gkq, kqp, nq8, cudaMemcpyDeviceToHost)); CU(cudaMemcpy(gvq, vqp, nq8, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(gks, ksp, 2 * nsc, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(gvs, vsp, 2 * nsc, cudaMemcpyDeviceToHost));
                    CU(cudaMemcpy(g16, k16p, 2 * nq8, cudaMemcpyDeviceToHost));
                    memset(ek, 0x11, cb); memset(ev, 0x11, cb);
                    memset(eq, 0x22, nq8); memset(evq, 0x22, nq8); memset(es, 0x22, 2 * nsc); memset(evs, 0x22, 2 * nsc);
                    for (int t = 0; t < n; t++) {
                        memcpy(ek + (size_t)hsl[t] * row, hkc + (size_t)hp[t] * row, 2 * (size_t)row);
                        memcpy(ev + (size_t)hsl[t] * row, hvc + (size_t)hp[t] * row, 2 * (size_t)row);
                        memcpy(eq + (size_t)hsl[t] * row, hkq + (size_t)hp[t] * row, (size_t)row);
                        memcpy(evq + (size_t)hsl[t] * row, hvq + (size_t)hp[t] * row, (size_t)row);
                        memcpy(es + (size_t)hsl[t] * (row / 32), hks + (size_t)hp[t] * (row / 32), 2 * (size_t)(row / 32));
                        memcpy(evs + (size_t)hsl[t] * (row / 32), hvs + (size_t)hp[t] * (row / 32), 2 * (size_t)(row / 32));
                    }
                    CHECK(!memcmp(gk, ek, cb) && !memcmp(gv, ev, cb), "paged rope_kv n=%d n_rot=%d: the pool differs from "
                          "the identity cache's rows at their slots (or another row was written)", n, n_rot);
                    CHECK(!memcmp(gwk, ek, cb) && !memcmp(gwv, ev, cb), "paged kv_write n=%d: the pool differs from the "
                          "identity cache's rows at their slots (or another row was written)", n);
                    CHECK(!memcmp(gkq, eq, nq8) && !memcmp(gvq, evq, nq8) && !memcmp(gks, es, 2 * nsc) &&
                              !memcmp(gvs, evs, 2 * nsc),
                          "paged rope_kv_q8 n=%d n_rot=%d: the Q8_0 pool differs from the identity's rows at their slots",
                          n, n_rot);
                    int bad_g = 0; /* the gather: logical row pos[t] == the identity's dequantized row */
                    for (int t = 0; t < n; t++)
                        if (memcmp(g16 + (size_t)hp[t] * row, hk16 + (size_t)hp[t] * row, 2 * (size_t)row)) bad_g++;
                    CHECK(bad_g == 0, "paged kv_dequant_q8 n=%d: %d gathered rows differ from the identity's", n, bad_g);
                    free(hkc); free(hvc); free(ek); free(ev); free(gk); free(gv); free(gwk); free(gwv);
                    free(gkq); free(gvq); free(eq); free(evq); free(gks); free(gvs); free(es); free(evs); free(g16);
                    cudaFree(bt); cudaFree(slot); cudaFree(kcp); cudaFree(vcp); cudaFree(kcw); cudaFree(vcw);
                    cudaFree(k16p); cudaFree(kqp); cudaFree(vqp); cudaFree(ksp); cudaFree(vsp);
                }
                free(hk); free(hv); free(hkq); free(hvq); free(hks); free(hvs); free(hk16); free(blk);
                cudaFree(kq); cudaFree(vq); cudaFree(ks); cudaFree(vs); cudaFree(k16);
                cudaFree(q0); cudaFree(k0); cudaFree(q1); cudaFree(k1); cudaFree(q2); cudaFree(k2);
            }
            free(hf);
            cudaFree(cs);
            cudaFree(qa); cudaFree(qb); cudaFree(ka); cudaFree(kb); cudaFree(v); cudaFree(freq); cudaFree(pos);
            cudaFree(kca); cudaFree(vca); cudaFree(kcb); cudaFree(vcb);
        }
    /* decode attention with the x16 of its output: == the attention then tcu_quantize_x16 (tcu_attention_split /
     * _q8 at n <= 16; tcu_attention_decode above, the 17..64-token passes of the chunk order's GEMV path), and at n =
     * 40 and 64 each token's out and x16 row == its one-token call's */
    const int nsx[5] = {1, 3, 16, 40, 64};
    for (int hi = 0; hi < 2; hi++)
        for (int gi = 0; gi < 2; gi++)
            for (int si = 0; si < 2; si++)
                for (int ni = 0; ni < 5; ni++)
                    for (int q8 = 0; q8 < 2; q8++) {
                        const int hd = hi ? 128 : 64, nh = gi ? 4 : 32, nkv = gi ? 4 : 8, S = si ? 4 : 1, n = nsx[ni];
                        const int n_ctx = 512, row = nkv * hd, Hq = nh * hd;
                        float *q = rand_dev((size_t)n * Hq, 2.0f);
                        const size_t nc = (size_t)n_ctx * row;
                        uint16_t *hk = malloc(2 * nc);
                        for (size_t i = 0; i < 2 * nc / 2; i++) hk[i] = tern_fp32_to_fp16(frnd(1.5f));
                        uint16_t *kc = dup_dev(hk, 2 * nc), *vc;
                        for (size_t i = 0; i < nc; i++) hk[i] = tern_fp32_to_fp16(frnd(1.5f));
                        vc = dup_dev(hk, 2 * nc);
                        /* Q8_0 planes: random int8 and f16 scales */
                        int8_t *hq8 = malloc(nc);
                        for (size_t i = 0; i < nc; i++) hq8[i] = (int8_t)(frnd(127.0f));
                        int8_t *kq = dup_dev(hq8, nc);
                        for (size_t i = 0; i < nc; i++) hq8[i] = (int8_t)(frnd(127.0f));
                        int8_t *vq = dup_dev(hq8, nc);
                        for (size_t i = 0; i < nc / 32; i++) hk[i] = tern_fp32_to_fp16(0.01f + fabsf(frnd(0.02f)));
                        uint16_t *ks = dup_dev(hk, 2 * (nc / 32));
                        for (size_t i = 0; i < nc / 32; i++) hk[i] = tern_fp32_to_fp16(0.01f + fabsf(frnd(0.02f)));
                        uint16_t *vs = dup_dev(hk, 2 * (nc / 32));
                        int32_t hp[64];
                        for (int t = 0; t < n; t++) hp[t] = 250 + 3 * t; /* up to 439: 1 or 2 active splits of 256 keys */
                        int32_t *pos = dup_dev(hp, sizeof hp);
                        float *oa, *ob, *ws;
                        void *xa, *xb;
                        CU(cudaMalloc((void **)&oa, sizeof(float) * n * Hq)); CU(cudaMalloc((void **)&ob, sizeof(float) * n * Hq));
                        CU(cudaMalloc((void **)&ws, tcu_attention_ws_bytes(n, nh, hd, 4) + 16));
                        CU(cudaMalloc(&xa, tcu_x16_bytes(n, Hq))); CU(cudaMalloc(&xb, tcu_x16_bytes(n, Hq)));
                        CU(cudaMemset(xa, 0x5A, tcu_x16_bytes(n, Hq))); CU(cudaMemset(xb, 0x5A, tcu_x16_bytes(n, Hq)));
                        CU(cudaMemset(oa, 0x33, sizeof(float) * n * Hq)); CU(cudaMemset(ob, 0x44, sizeof(float) * n * Hq));
                        const float sc = 1.0f / sqrtf((float)hd);
                        if (n > 16) tcu_attention_decode(q, q8 ? (const void *)kq : (const void *)kc, q8 ? (const void *)vq : (const void *)vc,
                                                         q8 ? ks : NULL, q8 ? vs : NULL, n, pos, NULL, NULL, 0, 0, nh, nkv, hd, sc,
                                                         oa, ws, S, 0);
                        else if (q8) tcu_attention_split_q8(q, kq, vq, ks, vs, n, pos, NULL, NULL, 0, 0, nh, nkv, hd, sc, oa, ws, S, 0);
                        else tcu_attention_split(q, kc, vc, n, pos, NULL, NULL, 0, 0, nh, nkv, hd, sc, oa, ws, S, 0);
                        tcu_quantize_x16(oa, n, Hq, xa, 0);
                        if (q8) tcu_attention_decode_x16(q, kq, vq, ks, vs, n, pos, NULL, NULL, 0, 0, nh, nkv, hd, sc, ob, ws, S,
                                                         xb, 0);
                        else tcu_attention_decode_x16(q, kc, vc, NULL, NULL, n, pos, NULL, NULL, 0, 0, nh, nkv, hd, sc, ob, ws,
                                                      S, xb, 0);
                        CU(cudaDeviceSynchronize());
                        CHECK(dev_eq(oa, ob, sizeof(float) * n * Hq) && dev_eq(xa, xb, tcu_x16_bytes(n, Hq)),
                              "attention_decode_x16 hd=%d heads=%d/%d splits=%d n=%d %s: out or x16 differs from "
                              "attention + quantize_x16", hd, nh, nkv, S, n, q8 ? "q8_0" : "f16");
                        { /* the f16 order's O input: decode_h16's out and f16 bytes == the attention's out, then
                           * tcu_f32_to_f16_layout with the layout on */
                            uint16_t *ha, *hb;
                            float *oc;
                            const size_t nh16 = sizeof(uint16_t) * (size_t)n * Hq;
                            CU(cudaMalloc((void **)&ha, nh16)); CU(cudaMalloc((void **)&hb, nh16));
                            CU(cudaMalloc((void **)&oc, sizeof(float) * n * Hq));
                            CU(cudaMemset(ha, 0x5A, nh16)); CU(cudaMemset(hb, 0x5A, nh16));
                            CU(cudaMemset(oc, 0x55, sizeof(float) * n * Hq));
                            tcu_f32_to_f16_layout(oa, ha, (int64_t)n * Hq, 1, 0);
                            tcu_attention_decode_h16(q, q8 ? (const void *)kq : (const void *)kc,
                                                     q8 ? (const void *)vq : (const void *)vc, q8 ? ks : NULL,
                                                     q8 ? vs : NULL, n, pos, NULL, NULL, 0, 0, nh, nkv, hd, sc, oc, ws, S, hb, 0);
                            CU(cudaDeviceSynchronize());
                            CHECK(dev_eq(oa, oc, sizeof(float) * n * Hq) && dev_eq(ha, hb, nh16),
                                  "attention_decode_h16 hd=%d heads=%d/%d splits=%d n=%d %s: out or f16 bytes differ from "
                                  "attention + f32_to_f16 (f16 order layout)", hd, nh, nkv, S, n, q8 ? "q8_0" : "f16");
                            cudaFree(ha); cudaFree(hb); cudaFree(oc);
                        }
                        if (n > 16) { /* each token alone: out into oa's row, x16 into a one-row buffer vs xb's planes */
                            int bad = 0;
                            float *h1 = malloc(sizeof(float) * Hq), *hn = malloc(sizeof(float) * (size_t)n * Hq);
                            int8_t *x1 = malloc(tcu_x16_bytes(1, Hq)), *xn = malloc(tcu_x16_bytes(n, Hq));
                            void *x1d;
                            CU(cudaMalloc(&x1d, tcu_x16_bytes(1, Hq)));
                            CU(cudaMemcpy(hn, ob, sizeof(float) * (size_t)n * Hq, cudaMemcpyDeviceToHost));
                            CU(cudaMemcpy(xn, xb, tcu_x16_bytes(n, Hq), cudaMemcpyDeviceToHost));
                            const size_t pl1 = ((size_t)Hq + 15) & ~(size_t)15, pln = ((size_t)n * Hq + 15) & ~(size_t)15;
                            for (int t = 0; t < n; t++) {
                                tcu_attention_decode_x16(q + (size_t)t * Hq, q8 ? (const void *)kq : (const void *)kc,
                                                         q8 ? (const void *)vq : (const void *)vc, q8 ? ks : NULL, q8 ? vs : NULL,
                                                         1, pos + t, NULL, NULL, 0, 0, nh, nkv, hd, sc, oa, ws, S, x1d, 0);
                                CU(cudaMemcpy(h1, oa, sizeof(float) * Hq, cudaMemcpyDeviceToHost));
                                CU(cudaMemcpy(x1, x1d, tcu_x16_bytes(1, Hq), cudaMemcpyDeviceToHost));
                                /* the x16 layout (x16.cuh): hi plane, lo plane (each padded to 16 bytes), then (d, sum) a block */
                                if (memcmp(h1, hn + (size_t)t * Hq, sizeof(float) * Hq) ||
                                    memcmp(x1, xn + (size_t)t * Hq, Hq) || memcmp(x1 + pl1, xn + pln + (size_t)t * Hq, Hq) ||
                                    memcmp(x1 + 2 * pl1, xn + 2 * pln + (size_t)t * (Hq / 32) * 8, (size_t)(Hq / 32) * 8))
                                    bad++;
                            }
                            CHECK(bad == 0, "attention_decode_x16 hd=%d heads=%d/%d splits=%d n=%d %s: %d tokens differ from "
                                  "their one-token call", hd, nh, nkv, S, n, q8 ? "q8_0" : "f16", bad);
                            free(h1); free(hn); free(x1); free(xn);
                            cudaFree(x1d);
                        }
                        free(hk); free(hq8);
                        cudaFree(q); cudaFree(kc); cudaFree(vc); cudaFree(kq); cudaFree(vq); cudaFree(ks); cudaFree(vs);
                        cudaFree(pos); cudaFree(oa); cudaFree(ob); cudaFree(ws); cudaFree(xa); cudaFree(xb);
                    }
    return check_summary("gpu_fused");
}
