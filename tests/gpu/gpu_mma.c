/* gpu_mma: the small-M GEMM of batched decode (gemm_mma.cu v2, the chunk order) must give, for every one of its m
 * columns, exactly the bits of the one-column dp4a GEMV (tcu_gemv_dp4a_fam) on that column (memcmp): batch invariance
 * rests on it (a token's logits do not depend on how many tokens share its pass, nor on which kernel the pass size
 * picks). Weights: random GGUF Q4_0 / Q8_0 / Q4_K blocks with finite f16 scales, repacked by tcu_repack as the upload
 * does (the bytes the repack leaves unwritten are NaN halves).
 * check_chunk: in the chunk-major order (tcu_gemv_order_set(1), reduce.cuh) every dp4a family gives the
 * same bits for a column, the twins' columns (m = 2, 7, 16) equal the one-column call, every column of v2 (each
 * tiling arm and the chooser, m = 1, 2, 7, 16, 17, 33, 64) equals it by memcmp with outputs past m untouched, and the
 * one-column call is within (16 + chunks)·2^-24·Σ|w_i·x_i| (Q4_K: Σ(|a_i| + |b_i|)·|x_i| for w = a - b, the scale and
 * min terms) of the float64 dot of the dequantized weights with the
 * dequantized x16 activations (a tree of depth 5 + chunks over leaves with 3 roundings each: the classical bound,
 * with margin); shapes of 128, 448, 80, 24 and 33 blocks (chunks whole and not, a partial repacked group, an odd
 * block count), rows 1000, 33, 70, 7, 45.
 * Then the crossover sweep (--sweep, no assertions): Q4_0 / Q8_0 / Q4_K 4096 x 14336 and 14336 x 4096 at m = 1..64,
 * the dp4a twins in both orders (m > 16: in calls of 16 columns) and the v2 arms, weights rotated over 4 copies
 * (beyond the L2). Run by bench/gpu_check.sh (step mma) on a GPU box. (v1, the MMAs in today's order, and its
 * checks were deleted on 2026-12-07: docs/ledger.md "gemm_mma v1 deleted".) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "cuda/tcu.h"
#include "quant.h"
#include "util.h"

#define CU(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "CUDA %s at %s:%d\n", cudaGetErrorName(e_), __FILE__, __LINE__);                           \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

#define MMAX 64

static uint64_t rs;

/* v2's split arms' workspace (tcu_gemm_mma_v2_arm's ws), grown to nch·m·n_out floats before a call needs it */
static float *g_ws;
static size_t g_wsn;
static void ws_ensure(int64_t n_in, int64_t n_out, int m) {
    const size_t need = (size_t)((n_in / 32 + 31) / 32) * (size_t)m * (size_t)n_out;
    if (need <= g_wsn) return;
    CU(cudaDeviceSynchronize());
    if (g_ws) CU(cudaFree(g_ws));
    CU(cudaMalloc((void **)&g_ws, sizeof(float) * need));
    g_wsn = need;
}
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}
static float frnd(float a) { return ((float)(rnd() & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f) * a; }

/* Random GGUF blocks of t (Q4_0, Q8_0, Q4_K) with finite f16 scales. */
static void fill(int t, uint8_t *w, int64_t n_in, int64_t n_out, size_t stride) {
    const size_t bs = tern_type_type_size((enum tern_type)t), nb = (size_t)n_in / tern_type_block_size((enum tern_type)t);
    memset(w, 0, stride * (size_t)n_out);
    for (int64_t r = 0; r < n_out; r++)
        for (size_t b = 0; b < nb; b++) {
            uint8_t *p = w + (size_t)r * stride + b * bs;
            for (size_t i = 0; i < bs; i++) p[i] = (uint8_t)rnd();
            const uint16_t d = tern_fp32_to_fp16(frnd(0.02f) + 0.001f);
            memcpy(p, &d, 2);
            if (t == TERN_TYPE_Q4_K) {
                const uint16_t dm = tern_fp32_to_fp16(frnd(0.01f));
                memcpy(p + 2, &dm, 2);
            }
        }
}

/* Device buffers of one shape: the GGUF weight, its repacked copy, x quantized as m columns and one by one. */
typedef struct {
    int t, rt;
    int64_t n_in, n_out;
    size_t rstride, q1, gstride;
    void *dr, *xqm, *xq1; /* xqm: quantized for m columns by quant_m (its planes' offsets depend on m) */
    float *dx;
    uint8_t *hw; /* the GGUF weight on the host (gstride bytes a row) */
} shape_t;

static void quant_m(const shape_t *s, int m) {
    tcu_quantize_x16(s->dx, m, s->n_in, s->xqm, 0);
    CU(cudaGetLastError());
}

static void setup(shape_t *s, int t, int64_t n_in, int64_t n_out) {
    s->t = t, s->rt = tcu_repack_type(t), s->n_in = n_in, s->n_out = n_out;
    const size_t stride = (tern_type_row_size((enum tern_type)t, n_in) + 15) & ~(size_t)15;
    s->rstride = (tcu_repack_row_bytes(s->rt, n_in) + 15) & ~(size_t)15;
    uint8_t *hw = malloc(stride * (size_t)n_out);
    fill(t, hw, n_in, n_out, stride);
    void *dw;
    CU(cudaMalloc(&dw, stride * (size_t)n_out));
    CU(cudaMalloc(&s->dr, s->rstride * (size_t)n_out));
    /* bytes tcu_repack leaves unwritten (a partial group's scale slots and quants past nb, row padding) as NaN halves:
     * no kernel may read them (the upload zeroes them; a caller's buffer need not) */
    CU(cudaMemset(s->dr, 0xFF, s->rstride * (size_t)n_out));
    CU(cudaMemcpy(dw, hw, stride * (size_t)n_out, cudaMemcpyHostToDevice));
    tcu_repack(t, dw, stride, s->dr, s->rstride, n_in, n_out, 0);
    CU(cudaGetLastError());
    float *hx = malloc(sizeof(float) * (size_t)n_in * MMAX), *dx;
    for (int64_t i = 0; i < n_in * MMAX; i++) hx[i] = frnd(2.0f) * (i % 97 == 0 ? 40.0f : 1.0f);
    for (int i = 0; i < 32 && n_in >= 64; i++) hx[(size_t)3 * n_in + 32 + i] = 0.0f; /* an all-zero block */
    CU(cudaMalloc((void **)&dx, sizeof(float) * (size_t)n_in * MMAX));
    CU(cudaMemcpy(dx, hx, sizeof(float) * (size_t)n_in * MMAX, cudaMemcpyHostToDevice));
    s->q1 = (tcu_x16_bytes(1, n_in) + 15) & ~(size_t)15;
    CU(cudaMalloc(&s->xq1, s->q1 * MMAX));
    CU(cudaMalloc(&s->xqm, tcu_x16_bytes(MMAX, n_in)));
    for (int c = 0; c < MMAX; c++) tcu_quantize_x16(dx + (size_t)c * n_in, 1, n_in, (char *)s->xq1 + (size_t)c * s->q1, 0);
    CU(cudaGetLastError());
    CU(cudaFree(dw));
    s->dx = dx;
    s->hw = hw;
    s->gstride = stride;
    free(hx);
}

static void release(shape_t *s) {
    CU(cudaFree(s->dr));
    CU(cudaFree(s->xqm));
    CU(cudaFree(s->xq1));
    CU(cudaFree(s->dx));
    free(s->hw);
}

/* Q4_K (GGUF get_scale_min_k4): the min term dmin·mn of sub-block j of the super-block at p, the b of x = a - b. */
static double k4_min(const uint8_t *p, int j) {
    const uint8_t *q = p + 4;
    uint16_t h;
    memcpy(&h, p + 2, 2);
    const int mn = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    return (double)tern_fp16_to_fp32(h) * mn;
}

/* The chunk order (v2): families agree, twins and every v2 arm equal the one-column GEMV, and a float64 bound. */
#define REF_COLS 8 /* columns checked against float64 (column 3 holds an all-zero block) */
static void check_chunk(int t, int64_t n_in, int64_t n_out) {
    shape_t s;
    tcu_gemv_order_set(1);
    setup(&s, t, n_in, n_out);
    const int nb = (int)(n_in / 32), nch = (nb + 31) / 32;
    const size_t ny = (size_t)n_out * (MMAX + 1), n1 = (size_t)n_out * MMAX;
    float *dy1, *dym;
    CU(cudaMalloc((void **)&dy1, sizeof(float) * n1));
    CU(cudaMalloc((void **)&dym, sizeof(float) * ny));
    float *y1 = malloc(sizeof(float) * n1), *yf = malloc(sizeof(float) * n1), *ym = malloc(sizeof(float) * ny);
    static const int fams[4] = {-1, 0, 1, 3};
    static const int ms[7] = {1, 2, 7, 16, 17, 33, 64};
    for (int f = 0; f < 4; f++) {
        for (int c = 0; c < MMAX; c++)
            tcu_gemv_dp4a_fam(fams[f], s.rt, s.dr, s.rstride, n_in, n_out, (char *)s.xq1 + (size_t)c * s.q1, 1,
                              dy1 + (size_t)c * n_out, 0);
        CU(cudaGetLastError());
        CU(cudaMemcpy(f == 0 ? y1 : yf, dy1, sizeof(float) * n1, cudaMemcpyDeviceToHost));
        if (f == 0) {
            int finite = 1;
            for (size_t i = 0; i < n1; i++) finite &= isfinite(y1[i]) != 0;
            CHECK(finite, "chunk %s %lldx%lld: the one-column GEMV's outputs are not all finite", tern_type_name(t),
                  (long long)n_in, (long long)n_out);
        } else {
            CHECK(!memcmp(yf, y1, sizeof(float) * n1), "chunk %s %lldx%lld: family %d differs from the chooser's family",
                  tern_type_name(t), (long long)n_in, (long long)n_out, fams[f]);
        }
        /* the twins: m columns in one call, each the one-column call's bits */
        for (int mi = 1; mi < 4; mi++) {
            const int m = ms[mi];
            quant_m(&s, m);
            CU(cudaMemset(dym, 0xFF, sizeof(float) * ny));
            tcu_gemv_dp4a_fam(fams[f], s.rt, s.dr, s.rstride, n_in, n_out, s.xqm, m, dym, 0);
            CU(cudaGetLastError());
            CU(cudaMemcpy(ym, dym, sizeof(float) * ny, cudaMemcpyDeviceToHost));
            CHECK(!memcmp(ym, y1, sizeof(float) * (size_t)m * n_out),
                  "chunk %s %lldx%lld family %d: a twin's column (m=%d) differs from the one-column GEMV", tern_type_name(t),
                  (long long)n_in, (long long)n_out, fams[f], m);
        }
    }
    /* v2: every arm (-1 the chooser; -2 the chooser without a workspace, which must give way to a no-split arm), every
     * m; a split arm without its workspace is refused */
    ws_ensure(n_in, n_out, MMAX);
    for (int arm = -2; arm < TCU_MMA_V2_ARMS; arm++)
        for (int mi = 0; mi < 7; mi++) {
            const int m = ms[mi];
            quant_m(&s, m);
            CU(cudaMemset(dym, 0xFF, sizeof(float) * ny));
            if (arm >= 18 && mi == 0)
                CHECK(!tcu_gemm_mma_v2_arm(arm, s.rt, s.dr, s.rstride, n_in, n_out, s.xqm, m, dym, g_ws, 1, 0),
                      "v2 %s %lldx%lld arm %d: ran with a workspace of one float", tern_type_name(t), (long long)n_in,
                      (long long)n_out, arm);
            const int ran = tcu_gemm_mma_v2_arm(arm < -1 ? -1 : arm, s.rt, s.dr, s.rstride, n_in, n_out, s.xqm, m, dym,
                                                arm < -1 ? NULL : g_ws, arm < -1 ? 0 : g_wsn, 0);
            CU(cudaGetLastError());
            CU(cudaMemcpy(ym, dym, sizeof(float) * ny, cudaMemcpyDeviceToHost));
            int bad = -1, nbad = 0;
            for (int c = 0; c < m; c++)
                if (memcmp(ym + (size_t)c * n_out, y1 + (size_t)c * n_out, sizeof(float) * (size_t)n_out)) {
                    if (bad < 0) bad = c;
                    nbad++;
                }
            int untouched = 1;
            for (size_t i = (size_t)m * n_out; i < ny; i++) untouched &= isnan(ym[i]) != 0;
            int brow = 0;
            if (bad >= 0)
                while (brow < n_out - 1 && !memcmp(ym + (size_t)bad * n_out + brow, y1 + (size_t)bad * n_out + brow, 4)) brow++;
            CHECK(ran && bad < 0 && untouched,
                  "v2 %s %lldx%lld arm %d m=%d: ran %d, %d columns differ from the chunk-order GEMV (first: column %d row "
                  "%d, got %.9g want %.9g), outputs past m untouched %d",
                  tern_type_name(t), (long long)n_in, (long long)n_out, arm, m, ran, nbad, bad, brow,
                  bad >= 0 ? (double)ym[(size_t)bad * n_out + brow] : 0.0,
                  bad >= 0 ? (double)y1[(size_t)bad * n_out + brow] : 0.0, untouched);
        }
    /* the split store (tcu_gemm_mma_v2_split: a fused q|k|v or gate|up into its parts' buffers): the rows cut in three
     * (and in two) parts, each part's (m, rows) block equal to the whole call's rows of that part, at the chooser's arm
     * at an AH arm and at a chunk-split arm (its combine kernel stores); outputs past each part untouched */
    if (n_out >= 3)
        for (int ai = 0; ai < 3; ai++)
            for (int mi = 0; mi < 7; mi += 3) {
                const int m = ms[mi], arm = ai == 2 ? 19 : ai ? 15 : -1;
                quant_m(&s, m);
                for (int np = 2; np <= 3; np++) {
                    int64_t rows[3] = {n_out / 2, np == 3 ? n_out / 3 : n_out - n_out / 2, 0};
                    if (np == 3) rows[2] = n_out - rows[0] - rows[1];
                    float *dp[3] = {NULL, NULL, NULL};
                    for (int j = 0; j < 3; j++) {
                        CU(cudaMalloc((void **)&dp[j], sizeof(float) * ((size_t)m * rows[j] + 64)));
                        CU(cudaMemset(dp[j], 0xFF, sizeof(float) * ((size_t)m * rows[j] + 64)));
                    }
                    float *const ys[3] = {dp[0], dp[1], dp[np == 3 ? 2 : 1]};
                    const int ran = tcu_gemm_mma_v2_split(arm, s.rt, s.dr, s.rstride, n_in, rows, s.xqm, m, ys, g_ws, g_wsn, 0);
                    CU(cudaGetLastError());
                    int bad = 0, untouched = 1;
                    int64_t r0 = 0;
                    for (int j = 0; j < np; j++) {
                        const size_t cnt = (size_t)m * rows[j] + 64;
                        float *hp = malloc(sizeof(float) * cnt);
                        CU(cudaMemcpy(hp, dp[j], sizeof(float) * cnt, cudaMemcpyDeviceToHost));
                        for (int c = 0; c < m; c++)
                            bad += memcmp(hp + (size_t)c * rows[j], y1 + (size_t)c * n_out + r0, sizeof(float) * rows[j]) != 0;
                        for (size_t i = (size_t)m * rows[j]; i < cnt; i++) untouched &= isnan(hp[i]) != 0;
                        free(hp);
                        r0 += rows[j];
                    }
                    CHECK(ran && bad == 0 && untouched,
                          "v2 split %s %lldx%lld arm %d m=%d, %d parts (%lld %lld %lld): ran %d, %d part columns differ "
                          "from the whole call, outputs past the parts untouched %d",
                          tern_type_name(t), (long long)n_in, (long long)n_out, arm, m, np, (long long)rows[0],
                          (long long)rows[1], (long long)rows[2], ran, bad, untouched);
                    for (int j = 0; j < 3; j++) CU(cudaFree(dp[j]));
                }
            }
    /* float64: the dequantized GGUF rows against the dequantized x16 columns (the bytes the device wrote) */
    const size_t q1 = s.q1, pb = (size_t)(n_in + 15) & ~(size_t)15;
    uint8_t *hq = malloc(q1 * REF_COLS);
    CU(cudaMemcpy(hq, s.xq1, q1 * REF_COLS, cudaMemcpyDeviceToHost));
    double *xd = malloc(sizeof(double) * (size_t)n_in * REF_COLS);
    for (int c = 0; c < REF_COLS; c++) {
        const int8_t *hi = (const int8_t *)(hq + (size_t)c * q1), *lo = hi + pb;
        const int32_t *ds = (const int32_t *)(hq + (size_t)c * q1 + 2 * pb);
        for (int64_t i = 0; i < n_in; i++) {
            float d;
            memcpy(&d, &ds[2 * (i / 32)], 4);
            xd[(size_t)c * n_in + i] = (double)d * (256.0 * hi[i] + lo[i]);
        }
    }
    float *wr = malloc(sizeof(float) * (size_t)n_in);
    double worst = 0.0;
    int over = 0;
    for (int64_t r = 0; r < n_out; r++) {
        tern_dequantize_row((enum tern_type)t, s.hw + (size_t)r * s.gstride, wr, n_in);
        for (int c = 0; c < REF_COLS; c++) {
            double dot = 0.0, mag = 0.0; /* mag: Σ|w·x|, for Q4_K Σ(|a| + |b|)·|x| (its two terms may cancel) */
            for (int64_t i = 0; i < n_in; i++) {
                const double x = xd[(size_t)c * n_in + i], p = (double)wr[i] * x;
                dot += p;
                if (t == TERN_TYPE_Q4_K) {
                    const double b = k4_min(s.hw + (size_t)r * s.gstride + (size_t)(i / 256) * 144, (int)(i % 256) / 32);
                    mag += (fabs((double)wr[i] + b) + fabs(b)) * fabs(x);
                } else {
                    mag += fabs(p);
                }
            }
            const double err = fabs((double)y1[(size_t)c * n_out + r] - dot), tol = (16.0 + nch) * ldexp(mag, -24) + 1e-30;
            if (err / tol > worst) worst = err / tol;
            over += !(err <= tol);
        }
    }
    CHECK(over == 0, "chunk %s %lldx%lld: %d of %lld outputs past (16 + %d)·2^-24·Σ|w·x| of float64 (worst %.3g of the bound)",
          tern_type_name(t), (long long)n_in, (long long)n_out, over, (long long)n_out * REF_COLS, nch, worst);
    /* informative: how many outputs the order changes (today's order, the chooser's family) */
    tcu_gemv_order_set(0);
    for (int c = 0; c < REF_COLS; c++)
        tcu_gemv_dp4a_fam(-1, s.rt, s.dr, s.rstride, n_in, n_out, (char *)s.xq1 + (size_t)c * s.q1, 1,
                          dy1 + (size_t)c * n_out, 0);
    CU(cudaMemcpy(yf, dy1, sizeof(float) * (size_t)n_out * REF_COLS, cudaMemcpyDeviceToHost));
    int differ = 0;
    for (size_t i = 0; i < (size_t)n_out * REF_COLS; i++) differ += memcmp(&yf[i], &y1[i], 4) != 0;
    printf("chunk %s %lldx%lld: families agree, twins and v2 arms -1..%d equal the one-column GEMV at m = 1..64; "
           "float64 worst %.3g of the bound; %d of %lld outputs differ from today's order\n",
           tern_type_name(t), (long long)n_in, (long long)n_out, TCU_MMA_V2_ARMS - 1, worst, differ,
           (long long)n_out * REF_COLS);
    free(hq);
    free(xd);
    free(wr);
    free(y1);
    free(yf);
    free(ym);
    CU(cudaFree(dy1));
    CU(cudaFree(dym));
    release(&s);
}

/* Best of 10 rounds of 20 calls, per call in us: v2's arm (mma 2) or the dp4a twins (mma 0) in calls of <= 16 columns,
 * in the order tcu_gemv_order_set gave. */
static float time_call(int mma, int arm, const shape_t *s, void **dw, int nc, int m, float *dy, void *xq16) {
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    float best = 1e9f;
    const size_t pb16 = tcu_x16_bytes(16, s->n_in);
    if (mma == 2) ws_ensure(s->n_in, s->n_out, m);
    for (int r = 0; r < 12; r++) {
        CU(cudaEventRecord(e0, 0));
        for (int i = 0; i < 20; i++) {
            void *w = dw[(r * 20 + i) % nc];
            if (mma == 2) tcu_gemm_mma_v2_arm(arm, s->rt, w, s->rstride, s->n_in, s->n_out, s->xqm, m, dy, g_ws, g_wsn, 0);
            else
                for (int c0 = 0; c0 < m; c0 += 16) /* the dp4a twins take 16 columns a call (their own x16 buffers) */
                    tcu_gemv_dp4a_fam(-1, s->rt, w, s->rstride, s->n_in, s->n_out, (char *)xq16 + (c0 / 16) * pb16,
                                      m - c0 < 16 ? m - c0 : 16, dy + (size_t)c0 * s->n_out, 0);
        }
        CU(cudaEventRecord(e1, 0));
        CU(cudaEventSynchronize(e1));
        float ms_ = 0;
        CU(cudaEventElapsedTime(&ms_, e0, e1));
        if (r >= 2 && ms_ < best) best = ms_;
    }
    CU(cudaEventDestroy(e0));
    CU(cudaEventDestroy(e1));
    return best * 1000.0f / 20;
}

/* dw[0] = the shape's weights, dw[1..3] copies of them: timed calls take them in turn, so no call finds its matrix in
 * L2 (the caller frees dw[1..3]). */
static void weight_copies(const shape_t *s, void *dw[4]) {
    const size_t wb = s->rstride * (size_t)s->n_out;
    dw[0] = s->dr;
    for (int c = 1; c < 4; c++) {
        CU(cudaMalloc(&dw[c], wb));
        CU(cudaMemcpy(dw[c], s->dr, wb, cudaMemcpyDeviceToDevice));
    }
}

static void sweep(int t, int64_t n_in, int64_t n_out) {
    shape_t s;
    setup(&s, t, n_in, n_out);
    const size_t wb = s.rstride * (size_t)n_out;
    void *dw[4];
    weight_copies(&s, dw);
    float *dy;
    CU(cudaMalloc((void **)&dy, sizeof(float) * (size_t)n_out * MMAX));
    const size_t pb16 = tcu_x16_bytes(16, n_in);
    void *xq16; /* the m columns in calls of 16: each call's own buffer */
    CU(cudaMalloc(&xq16, pb16 * (MMAX / 16)));
    for (int c0 = 0; c0 < MMAX; c0 += 16) tcu_quantize_x16(s.dx + (size_t)c0 * n_in, 16, n_in, (char *)xq16 + (c0 / 16) * pb16, 0);
    printf("sweep %s %lldx%lld (%.1f MB, family %d): m, dp4a us (today's order, chunk order), v2 the chooser, then arms 0..%d (64x32 64x64 32x64 128x32 64x16 64x8 32x64w16 64x16w8 32x8k4 32x16k4 32x16k2 128x32a 64x16a 64x64a 64x32a 128x32a2 64x8s8 64x16as6 64x8k4c 64x16ak4c)\n",
           tern_type_name(t), (long long)n_in, (long long)n_out, wb / 1e6,
           tcu_gemv_dp4a_family(s.rt, s.rstride, n_in, n_out), TCU_MMA_V2_ARMS - 1);
    static const int ms[10] = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64};
    for (int i = 0; i < 10; i++) {
        quant_m(&s, ms[i]);
        tcu_gemv_order_set(0);
        printf("  m=%2d  dp4a %8.1f", ms[i], time_call(0, 0, &s, dw, 4, ms[i], dy, xq16));
        tcu_gemv_order_set(1);
        printf(" %8.1f", time_call(0, 0, &s, dw, 4, ms[i], dy, xq16));
        printf("  v2");
        for (int arm = -1; arm < TCU_MMA_V2_ARMS; arm++) printf(" %8.1f", time_call(2, arm, &s, dw, 4, ms[i], dy, xq16));
        printf("\n");
    }
    CU(cudaGetLastError());
    for (int c = 0; c < 4; c++) CU(cudaFree(dw[c]));
    CU(cudaFree(dy));
    CU(cudaFree(xq16));
    CU(cudaFree(s.xqm));
    CU(cudaFree(s.xq1));
    CU(cudaFree(s.dx));
    free(s.hw);
}

/* Parses a comma list of integers in [lo, hi] into v (at most 32). The count, or -1. */
static int int_list(const char *a, int lo, int hi, int *v) {
    int n = 0;
    for (const char *p = a;; p++) {
        char *e;
        const long x = strtol(p, &e, 10);
        if (e == p || x < lo || x > hi || n == 32 || (*e != ',' && *e != 0)) return -1;
        v[n++] = (int)x;
        p = e;
        if (!*e) return n;
    }
}

/* --one TYPE N_IN N_OUT M ARM: only v2's arm (-1: the chooser) at m columns of one shape, timed as the sweep times it
 * (12 rounds of 20 calls over 4 copies of the weights): a launch for ncu to profile (gpu_check.sh mmaprof). M and ARM
 * may be comma lists (every pair, one line each, on one upload of the weights). */
static int one(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "gpu_mma --one TYPE N_IN N_OUT M ARM (TYPE q4_0, q8_0 or q4_k; M and ARM lists like 4,8,16)\n");
        return 2;
    }
    static const int types[3] = {TERN_TYPE_Q4_0, TERN_TYPE_Q8_0, TERN_TYPE_Q4_K};
    int t = -1;
    for (int i = 0; i < 3; i++)
        if (!strcasecmp(argv[2], tern_type_name(types[i]))) t = types[i];
    const long n_in = strtol(argv[3], NULL, 10), n_out = strtol(argv[4], NULL, 10);
    int ms[32], arms[32];
    const int nm = int_list(argv[5], 1, MMAX, ms), na = int_list(argv[6], -1, TCU_MMA_V2_ARMS - 1, arms);
    if (t < 0 || n_in < 256 || n_in % 256 || n_out < 1 || n_out > 1 << 20 || nm < 1 || na < 1) {
        fprintf(stderr, "gpu_mma --one: a type of q4_0/q8_0/q4_k, n_in a multiple of 256, 1 <= m <= %d, arm -1..%d\n", MMAX,
                TCU_MMA_V2_ARMS - 1);
        return 2;
    }
    shape_t s;
    setup(&s, t, n_in, n_out);
    const size_t wb = s.rstride * (size_t)n_out;
    void *dw[4];
    weight_copies(&s, dw);
    float *dy;
    CU(cudaMalloc((void **)&dy, sizeof(float) * (size_t)n_out * MMAX));
    for (int i = 0; i < nm; i++) {
        quant_m(&s, ms[i]);
        for (int a = 0; a < na; a++) {
            const float us = time_call(2, arms[a], &s, dw, 4, ms[i], dy, NULL);
            CU(cudaGetLastError());
            printf("one %s %ldx%ld m=%d v2 arm %d: %.1f us (%.0f GB/s of weights)\n", argv[2], n_in, n_out, ms[i], arms[a],
                   us, wb / us * 1e-3);
        }
    }
    for (int c = 1; c < 4; c++) CU(cudaFree(dw[c]));
    CU(cudaFree(dy));
    return 0;
}

int main(int argc, char **argv) {
    int dev_n = 0;
    if (cudaGetDeviceCount(&dev_n) != cudaSuccess || dev_n < 1) {
        printf("gpu_mma: no CUDA device, skipped\ngpu_mma: 0 passed, 0 failed\n");
        return 0;
    }
    const char *se = getenv("GPU_TEST_SEED");
    rs = se ? strtoull(se, NULL, 10) : (uint64_t)time(NULL) * 2654435761ull + 7;
    printf("gpu_mma: seed %llu\n", (unsigned long long)rs);
    if (argc > 1 && !strcmp(argv[1], "--one")) return one(argc, argv);
    static const int types[3] = {TERN_TYPE_Q4_0, TERN_TYPE_Q8_0, TERN_TYPE_Q4_K};
    for (int ti = 0; ti < 3; ti++) {
        const int t = types[ti];
        check_chunk(t, 4096, 1000); /* 128 blocks: 4 whole chunks */
        check_chunk(t, 14336, 33);  /* 448: 14 chunks */
        check_chunk(t, 2560, 70);   /* 80: 2 chunks and a half one */
        check_chunk(t, 768, 7);     /* 24: one short chunk */
        if (t != TERN_TYPE_Q4_K) check_chunk(t, 1056, 45); /* 33: a last chunk of one block, a partial group of 1 */
    }
    if (argc > 1 && !strcmp(argv[1], "--sweep"))
        for (int ti = 0; ti < 3; ti++) {
            sweep(types[ti], 4096, 14336);
            sweep(types[ti], 14336, 4096);
        }
    return check_summary("gpu_mma");
}
