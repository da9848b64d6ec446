/* gpu_hmma: the f16 order of batched decode (gemm_hmma.cu, tcu_gemm_hm; issue 26, tern_config.gemv_chunk = 2).
 * - tcu_x16_to_f16: every value equals f16(d·q) of the x16 bytes, computed here (round to nearest even);
 * - the producers in the f16 order's layout (tcu_set_hm_layout(1)): the RMSNorms (rmsnorm_k and the cluster kernel),
 *   the GLU and tcu_f32_to_f16 write value i at tcu_hm_pos(i), the bits they write row-major with it off;
 * - values: every output of the one-column call is within (K/16 + 32)·2^-22·Σ|w_k·x_k| of the float64 sum of the
 *   f16 products w_k·x_k, w_k = f16(d·(q - 8)) from the GGUF Q4_0 block or f16(d·q) from the Q8_0 block (computed
 *   here from the bytes), or f16 of quant.h's Q4_K or Q6_K dequantization, x_k the f16 activation: a wrong element, block, scale or row would be off by a whole term;
 * - batch invariance: for every arm (-1 the chooser on rows and on the tiled layout TCU_TYPE_Q4_0T / Q8_0T / Q4_KT, 0..TCU_HM_ARMS-1;
 *   arms >= TCU_HM_TILED on the tiled layout) and m = 1, 2, 7, 8, 9, 16, 17, 33, 64, column c of the m-column call
 *   equals the rows' one-column call on x_c by memcmp, columns past m untouched; the fused form (rows in three parts
 *   into three buffers, rows and tiled) gives each output the bits of the plain call; an arm of the other layout is
 *   refused; tcu_dequant_f16 of the tiled layout gives the rows' bytes (the prefill's weights in a tiled engine);
 * - the weights the GEMM multiplies are tcu_dequant_f16's bits (one-hot columns read each weight out; n_in <= 2048);
 * - a call whose K split needs a workspace refuses to run without one.
 * The GEMM's inputs are the f16 columns permuted here by tcu_hm_pos (the layout the producers write).
 * Shapes: 4096 x 1000 (K split in 4), 14336 x 33 (in 8), 6144 x 70 (in 4), 2048 x 100 (in 2), 384 x 130 (3 steps, a
 * partial row tile; no split), 128 x 9 (one step); 1056 x 45 and 800 x 7 (n_in not a multiple of 128) refused.
 * Every check on Q4_0, Q8_0, Q4_K and Q6_K weights: random GGUF blocks (Q8_0 with -128 and 127 in some; Q4_K at n_in a
 * multiple of 256, random scale bytes, dmin negative in some), repacked by tcu_repack as the upload does, the bytes it
 * leaves unwritten NaN halves; Q6_K (n_in a multiple of 256, random ql, qh and int8 scales with -128 and 127 in some, d
 * negative in some) uploaded as it is and read as tiles only (Q6_KT): its rows arms and the chooser on rows refused,
 * the one-column reference the chooser on the tiles.
 * --sweep: times (us, best of 10 rounds of 20 calls, weights rotated over 4 copies) of the arms against v2's chooser
 * at Llama-3-8B's shapes and m = 1..64, and the one-column dp4a GEMV. Run by bench/gpu_check.sh on a GPU box.
 * `--sweep-only --splits S` (or `--sweep --splits S`, the checks too): every shape's K split forced to S segments
 * (tcu_gemm_hm_splits_set), the split rule's measurement.
 * --q8 / --q4k / --q6k (after the first argument; last for --one): the sweep's and --one's weights Q8_0 / Q4_K / Q6_K
 * (the checks run every type).
 * --one N_IN N_OUT M ARM: 30 calls of one arm (-1 the chooser; -2 the one-column dp4a GEMV; -3 the chooser on the tiled
 * layout) on one shape, for ncu
 * (bench/gpu_check.sh hmprof); prints its time as the sweep takes it. */
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

#define CU(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "CUDA %s at %s:%d\n", cudaGetErrorName(e_), __FILE__, __LINE__);                           \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

#define MMAX 64
#define ARMS TCU_HM_ARMS

static uint64_t rs;
static int g_type = TERN_TYPE_Q4_0; /* --sweep's and --one's weights (--q8: Q8_0) */
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}
static float frnd(float a) { return ((float)(rnd() & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f) * a; }

typedef struct {
    int64_t n_in, n_out;
    int gt, rt, tt;   /* the GGUF type (Q4_0, Q8_0), its repacked rows' and its tiled layout's ids */
    size_t gstride, rstride;
    uint8_t *hw;      /* GGUF rows on the host */
    void *dr;         /* repacked on the device */
    void *dt[4];      /* dr in the tiled layout (arms >= TCU_HM_TILED; tcu_hm_tile), dt[0] by setup, 1..3 the sweep's copies */
    void *xq;         /* MMAX columns in x16 */
    uint16_t *xh;     /* the same as f16, (MMAX, n_in), row-major */
    uint16_t *hx;     /* xh on the host */
    uint16_t *xp;     /* xh in the f16 order's layout (each column's n_in values at tcu_hm_pos), the GEMM's input */
    float *ws;        /* the K split's workspace, zeroed once */
    size_t wsn;
} shape_t;

/* bytes of a GGUF block of gt (Q4_K, Q6_K: a 256-element super-block) */
static int gblock(int gt) { return gt == TERN_TYPE_Q8_0 ? 34 : gt == TERN_TYPE_Q4_K ? 144 : gt == TERN_TYPE_Q6_K ? 210 : 18; }
/* 1 for a type the f16 order reads as tiles only (Q6_K: its GGUF rows are uploaded as they are, no rows arms) */
static int tiles_only(int gt) { return gt == TERN_TYPE_Q6_K; }
static int superblocks(int gt) { return gt == TERN_TYPE_Q4_K || gt == TERN_TYPE_Q6_K; }

static void setup(shape_t *s, int gt, int64_t n_in, int64_t n_out) {
    s->n_in = n_in, s->n_out = n_out;
    s->gt = gt, s->rt = tcu_repack_type(gt), s->tt = tcu_hm_tiled_type(s->rt);
    s->gstride = (tern_type_row_size(gt, n_in) + 15) & ~(size_t)15;
    s->rstride = tiles_only(gt) ? s->gstride : (tcu_repack_row_bytes(s->rt, n_in) + 15) & ~(size_t)15;
    s->hw = calloc(s->gstride, (size_t)n_out);
    const int64_t nb = n_in / (superblocks(gt) ? 256 : 32);
    const int bb = gblock(gt);
    for (int64_t r = 0; r < n_out; r++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *p = s->hw + (size_t)r * s->gstride + (size_t)b * bb;
            for (int i = 2; i < bb; i++) p[i] = (uint8_t)rnd();
            if (gt == TERN_TYPE_Q6_K) { /* ql, qh, the int8 scales random (-128 and 127 in some), d at 208: its sign
                                         * flipped in some super-blocks */
                for (int i = 0; i < 208; i++) p[i] = (uint8_t)rnd();
                if (b % 4 == 1) p[192 + (r % 16)] = 0x80, p[192 + ((r + 5) % 16)] = 0x7F;
                const uint16_t d = tern_fp32_to_fp16((frnd(0.0004f) + 0.0005f) * (b % 3 == 2 ? -1.0f : 1.0f));
                memcpy(p + 208, &d, 2);
                continue;
            }
            if (gt == TERN_TYPE_Q4_K) { /* d and dmin: small, positive, dmin's sign flipped in some super-blocks */
                const uint16_t d = tern_fp32_to_fp16(frnd(0.002f) + 0.0025f);
                const uint16_t dm = tern_fp32_to_fp16((frnd(0.002f) + 0.0025f) * (b % 3 == 2 ? -1.0f : 1.0f));
                memcpy(p, &d, 2);
                memcpy(p + 2, &dm, 2);
                continue;
            }
            /* Q8_0: -128 and 127 in some blocks (the dequantization's ends) */
            if (gt == TERN_TYPE_Q8_0 && b % 5 == 1) p[2 + (r % 32)] = 0x80, p[2 + ((r + 7) % 32)] = 0x7F;
            const uint16_t d = tern_fp32_to_fp16((frnd(0.02f) + 0.001f) * (gt == TERN_TYPE_Q8_0 ? 0.125f : 1.0f));
            memcpy(p, &d, 2);
        }
    void *dw;
    CU(cudaMalloc(&dw, s->gstride * (size_t)n_out));
    CU(cudaMemcpy(dw, s->hw, s->gstride * (size_t)n_out, cudaMemcpyHostToDevice));
    if (tiles_only(gt)) { /* uploaded as they are (the engine does the same) */
        s->dr = dw;
    } else {
        CU(cudaMalloc(&s->dr, s->rstride * (size_t)n_out));
        CU(cudaMemset(s->dr, 0xFF, s->rstride * (size_t)n_out));
        tcu_repack(gt, dw, s->gstride, s->dr, s->rstride, n_in, n_out, 0);
        CU(cudaFree(dw));
    }
    float *hx = malloc(sizeof(float) * (size_t)n_in * MMAX), *dx;
    for (int64_t i = 0; i < n_in * MMAX; i++) hx[i] = frnd(2.0f) * (i % 97 == 0 ? 40.0f : 1.0f);
    for (int i = 0; i < 32 && n_in >= 64; i++) hx[(size_t)3 * n_in + 32 + i] = 0.0f; /* an all-zero block */
    CU(cudaMalloc((void **)&dx, sizeof(float) * (size_t)n_in * MMAX));
    CU(cudaMemcpy(dx, hx, sizeof(float) * (size_t)n_in * MMAX, cudaMemcpyHostToDevice));
    free(hx);
    CU(cudaMalloc(&s->xq, tcu_x16_bytes(MMAX, n_in)));
    tcu_quantize_x16(dx, MMAX, n_in, s->xq, 0);
    CU(cudaFree(dx));
    CU(cudaMalloc((void **)&s->xh, sizeof(uint16_t) * (size_t)n_in * MMAX));
    tcu_x16_to_f16(s->xq, MMAX, n_in, s->xh, 0);
    CU(cudaGetLastError());
    s->hx = malloc(sizeof(uint16_t) * (size_t)n_in * MMAX);
    CU(cudaMemcpy(s->hx, s->xh, sizeof(uint16_t) * (size_t)n_in * MMAX, cudaMemcpyDeviceToHost));
    s->xp = NULL;
    memset(s->dt, 0, sizeof s->dt);
    if (n_in % 128 == 0) {
        CU(cudaMalloc(&s->dt[0], tcu_hm_tile_bytes(s->rt, n_in, n_out)));
        tcu_hm_tile(s->rt, s->dr, s->rstride, n_in, n_out, s->dt[0], 0);
        CU(cudaGetLastError());
        uint16_t *hp = malloc(sizeof(uint16_t) * (size_t)n_in * MMAX);
        for (int c = 0; c < MMAX; c++)
            for (int64_t k = 0; k < n_in; k++) hp[(size_t)c * n_in + tcu_hm_pos(k)] = s->hx[(size_t)c * n_in + k];
        CU(cudaMalloc((void **)&s->xp, sizeof(uint16_t) * (size_t)n_in * MMAX));
        CU(cudaMemcpy(s->xp, hp, sizeof(uint16_t) * (size_t)n_in * MMAX, cudaMemcpyHostToDevice));
        free(hp);
    }
    s->wsn = tcu_gemm_hm_ws_floats(n_in, n_out, MMAX);
    s->ws = NULL;
    if (s->wsn) {
        CU(cudaMalloc((void **)&s->ws, sizeof(float) * s->wsn));
        CU(cudaMemset(s->ws, 0, sizeof(float) * s->wsn));
    }
}

static void release(shape_t *s) {
    CU(cudaFree(s->dr));
    CU(cudaFree(s->xq));
    CU(cudaFree(s->xh));
    if (s->xp) CU(cudaFree(s->xp));
    if (s->dt[0]) CU(cudaFree(s->dt[0]));
    if (s->ws) CU(cudaFree(s->ws));
    free(s->hw);
    free(s->hx);
}

/* the x16 bytes back to f16 on the host: f16(d·q), q = 256·hi + lo */
static void check_x16(const shape_t *s) {
    const size_t plane = ((size_t)MMAX * (size_t)s->n_in + 15) & ~(size_t)15, nb = (size_t)s->n_in / 32;
    const size_t bytes = tcu_x16_bytes(MMAX, s->n_in);
    uint8_t *q = malloc(bytes);
    CU(cudaMemcpy(q, s->xq, bytes, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (size_t i = 0; i < (size_t)MMAX * (size_t)s->n_in; i++) {
        int32_t dbits;
        memcpy(&dbits, q + 2 * plane + 8 * (i / 32), 4);
        float d;
        memcpy(&d, &dbits, 4);
        const int v = 256 * (int)(int8_t)q[i] + (int)(int8_t)q[plane + i];
        if (tern_fp32_to_fp16(d * (float)v) != s->hx[i]) bad++;
    }
    (void)nb;
    CHECK(bad == 0, "x16 -> f16 at %lld inputs: %d of %lld values differ", (long long)s->n_in, bad,
          (long long)MMAX * s->n_in);
    free(q);
}

/* arm TL_PICK: the chooser on the tiled layout */
#define TL_PICK (-3)
/* 1 when arm reads the tiled layout */
static int tiled(int arm) { return arm >= TCU_HM_TILED || arm == TL_PICK; }

static int call(int arm, const shape_t *s, const void *w, const int64_t rows[3], const uint16_t *x, int m,
                float *const y[3], int with_ws) {
    return tcu_gemm_hm(arm == TL_PICK ? -1 : arm, tiled(arm) ? s->tt : s->rt, w, s->rstride, s->n_in,
                       rows, x, m, y, with_ws ? s->ws : NULL, with_ws ? s->wsn : 0, 0);
}

/* The weights the GEMM multiplies are tcu_dequant_f16's, bit for bit: column c one-hot (1.0) at input k_c, so output
 * (r, c) is the weight (r, k_c) exactly (one product by 1.0 plus zeros in f32; -0 reads as +0), for every input k
 * (n_in / 64 calls of 64 columns, the chooser on the tiled layout and on rows) against the rows' dequantization. */
static void check_weights(const shape_t *s) {
    const int64_t n_in = s->n_in, n_out = s->n_out;
    const size_t nw = (size_t)n_in * (size_t)n_out;
    uint16_t *dq, *hq = malloc(sizeof(uint16_t) * nw), *hx = calloc((size_t)n_in * MMAX, sizeof(uint16_t)), *dx;
    float *dy, *hy = malloc(sizeof(float) * (size_t)n_out * MMAX);
    CU(cudaMalloc((void **)&dq, sizeof(uint16_t) * nw));
    CU(cudaMalloc((void **)&dx, sizeof(uint16_t) * (size_t)n_in * MMAX));
    CU(cudaMalloc((void **)&dy, sizeof(float) * (size_t)n_out * MMAX));
    tcu_dequant_f16(s->rt, s->dr, s->rstride, n_in, n_out, dq, 0);
    CU(cudaMemcpy(hq, dq, sizeof(uint16_t) * nw, cudaMemcpyDeviceToHost));
    const int64_t rows1[3] = {n_out, 0, 0};
    float *const ya[3] = {dy, dy, dy};
    int bad = 0, ran = 1;
    for (int tl = tiles_only(s->gt); tl < 2; tl++)
        for (int64_t k0 = 0; k0 < n_in; k0 += MMAX) {
            memset(hx, 0, sizeof(uint16_t) * (size_t)n_in * MMAX);
            for (int c = 0; c < MMAX; c++) hx[(size_t)c * n_in + tcu_hm_pos(k0 + c)] = 0x3C00; /* 1.0 */
            CU(cudaMemcpy(dx, hx, sizeof(uint16_t) * (size_t)n_in * MMAX, cudaMemcpyHostToDevice));
            ran &= call(tl ? TL_PICK : -1, s, tl ? s->dt[0] : s->dr, rows1, dx, MMAX, ya, 1);
            CU(cudaMemcpy(hy, dy, sizeof(float) * (size_t)n_out * MMAX, cudaMemcpyDeviceToHost));
            for (int c = 0; c < MMAX; c++)
                for (int64_t r = 0; r < n_out; r++)
                    if (hy[(size_t)c * n_out + r] != tern_fp16_to_fp32(hq[(size_t)r * n_in + k0 + c]) && bad++ < 3)
                        fprintf(stderr, "  %s %lldx%lld%s: weight (%lld, %lld) %.9g, tcu_dequant_f16 %.9g\n",
                                tern_type_name(s->gt), (long long)n_in, (long long)n_out, tl ? " tiled" : "",
                                (long long)r, (long long)(k0 + c), hy[(size_t)c * n_out + r],
                                tern_fp16_to_fp32(hq[(size_t)r * n_in + k0 + c]));
        }
    CHECK(ran && bad == 0, "%s %lldx%lld: the GEMM's weights are tcu_dequant_f16's bits (ran %d, %d differ)",
          tern_type_name(s->gt), (long long)n_in, (long long)n_out, ran, bad);
    CU(cudaFree(dq));
    CU(cudaFree(dx));
    CU(cudaFree(dy));
    free(hq);
    free(hx);
    free(hy);
}

static void check_shape(int gt, int64_t n_in, int64_t n_out) {
    shape_t s;
    setup(&s, gt, n_in, n_out);
    printf("  %s %lldx%lld\n", tern_type_name(gt), (long long)n_in, (long long)n_out);
    check_x16(&s);
    if (n_in % 128) { /* the f16 order's layout needs whole 4-block steps: refused, nothing written */
        float *dy;
        CU(cudaMalloc((void **)&dy, sizeof(float) * (size_t)n_out));
        const int64_t rows1[3] = {n_out, 0, 0};
        float *const ya[3] = {dy, dy, dy};
        CHECK(!tcu_gemm_hm_supported(s.rt, n_in) && !call(-1, &s, s.dr, rows1, s.xh, 1, ya, 1),
              "%lldx%lld: n_in not a multiple of 128 refused", (long long)n_in, (long long)n_out);
        CU(cudaFree(dy));
        release(&s);
        return;
    }
    const size_t ny = (size_t)n_out * MMAX;
    float *dy1, *dym, *y1 = malloc(sizeof(float) * ny), *ym = malloc(sizeof(float) * ny);
    CU(cudaMalloc((void **)&dy1, sizeof(float) * ny));
    CU(cudaMalloc((void **)&dym, sizeof(float) * ny));
    const int64_t rows1[3] = {n_out, 0, 0};
    /* the one-column calls (the chooser; on the tiles for a type without rows arms), column c from x_c alone */
    const int ref = tiles_only(gt) ? TL_PICK : -1;
    void *const rw = tiles_only(gt) ? s.dt[0] : s.dr;
    int ran = 1;
    for (int c = 0; c < MMAX; c++) {
        float *const yc[3] = {dy1 + (size_t)c * n_out, dy1, dy1};
        ran &= call(ref, &s, rw, rows1, s.xp + (size_t)c * n_in, 1, yc, 1);
    }
    CU(cudaDeviceSynchronize());
    CHECK(ran, "%lldx%lld: the one-column call did not run", (long long)n_in, (long long)n_out);
    CU(cudaMemcpy(y1, dy1, sizeof(float) * ny, cudaMemcpyDeviceToHost));
    /* values against float64 over the same f16 products */
    const int64_t nb = n_in / 32;
    float *wr = malloc(sizeof(float) * (size_t)n_in);
    int bad = 0;
    double worst = 0;
    for (int64_t r = 0; r < n_out; r++) {
        if (superblocks(gt)) { /* the reference dequantizer (quant.h), then f16 */
            tern_dequantize_row(gt, s.hw + (size_t)r * s.gstride, wr, n_in);
            for (int64_t k = 0; k < n_in; k++) wr[k] = tern_fp16_to_fp32(tern_fp32_to_fp16(wr[k]));
        }
        for (int64_t b = 0; b < nb && !superblocks(gt); b++) {
            const uint8_t *p = s.hw + (size_t)r * s.gstride + (size_t)b * gblock(gt);
            uint16_t dh;
            memcpy(&dh, p, 2);
            const float d = tern_fp16_to_fp32(dh);
            for (int j = 0; j < 32; j++) {
                const int q = gt == TERN_TYPE_Q8_0 ? (int)(int8_t)p[2 + j]
                                                   : (j < 16 ? (p[2 + j] & 15) : (p[2 + j - 16] >> 4)) - 8;
                wr[b * 32 + j] = tern_fp16_to_fp32(tern_fp32_to_fp16(d * (float)q));
            }
        }
        for (int c = 0; c < MMAX; c++) {
            double sum = 0, mag = 0;
            for (int64_t k = 0; k < n_in; k++) {
                const double t = (double)wr[k] * (double)tern_fp16_to_fp32(s.hx[(size_t)c * n_in + k]);
                sum += t;
                mag += fabs(t);
            }
            const double got = y1[(size_t)c * n_out + r], tol = ((double)n_in / 16 + 32) * ldexp(1.0, -22) * mag;
            const double e = fabs(got - sum);
            if (!(e <= tol)) {
                if (bad++ < 3)
                    fprintf(stderr, "  %lldx%lld row %lld col %d: %.9g vs float64 %.9g (tol %.3g)\n", (long long)n_in,
                            (long long)n_out, (long long)r, c, got, sum, tol);
            } else if (mag > 0 && e / mag > worst) worst = e / mag;
        }
    }
    CHECK(bad == 0, "%lldx%lld: %d outputs off the float64 sum of the f16 products", (long long)n_in, (long long)n_out, bad);
    printf("  %lldx%lld: worst |y - float64| / sum|terms| %.3g\n", (long long)n_in, (long long)n_out, worst);
    free(wr);
    /* every arm, every m: column c the one-column bits, past m untouched */
    static const int ms[9] = {1, 2, 7, 8, 9, 16, 17, 33, 64};
    for (int arm = TL_PICK; arm < ARMS; arm++)
        for (int i = 0; i < 9 && arm != -2; i++) {
            const int m = ms[i];
            CU(cudaMemset(dym, 0xFF, sizeof(float) * ny));
            float *const ya[3] = {dym, dym, dym};
            const int ok = call(arm, &s, tiled(arm) ? s.dt[0] : s.dr, rows1, s.xp, m, ya, 1);
            CU(cudaDeviceSynchronize());
            CU(cudaMemcpy(ym, dym, sizeof(float) * ny, cudaMemcpyDeviceToHost));
            if (tiles_only(gt) && !tiled(arm)) { /* no rows arms: refused, nothing written */
                int untouched = 1;
                for (size_t k = 0; k < ny; k++) untouched &= ((uint32_t *)ym)[k] == 0xFFFFFFFFu;
                CHECK(!ok && untouched, "%lldx%lld arm %d m %d: a rows arm on %s refused (ran %d, untouched %d)",
                      (long long)n_in, (long long)n_out, arm, m, tern_type_name(gt), ok, untouched);
                continue;
            }
            int same = memcmp(ym, y1, sizeof(float) * (size_t)m * n_out) == 0, untouched = 1;
            for (size_t k = (size_t)m * n_out; k < ny; k++) untouched &= ((uint32_t *)ym)[k] == 0xFFFFFFFFu;
            CHECK(ok && same && untouched, "%lldx%lld arm %d m %d: ran %d, columns equal to the one-column call %d, "
                  "past m untouched %d", (long long)n_in, (long long)n_out, arm, m, ok, same, untouched);
        }
    /* fused: three parts into three buffers */
    for (int tl = tiles_only(gt); tl < 2 && n_out >= 30; tl++) {
        const int64_t rows3[3] = {n_out / 2, n_out / 3, n_out - n_out / 2 - n_out / 3};
        const int m = 17;
        float *dp[3];
        for (int j = 0; j < 3; j++) CU(cudaMalloc((void **)&dp[j], sizeof(float) * (size_t)rows3[j] * m));
        float *const yp[3] = {dp[0], dp[1], dp[2]};
        const int ok = call(tl ? TL_PICK : -1, &s, tl ? s.dt[0] : s.dr, rows3, s.xp, m, yp, 1);
        CU(cudaDeviceSynchronize());
        int same = 1;
        int64_t r0 = 0;
        for (int j = 0; j < 3; j++) {
            float *h = malloc(sizeof(float) * (size_t)rows3[j] * m);
            CU(cudaMemcpy(h, dp[j], sizeof(float) * (size_t)rows3[j] * m, cudaMemcpyDeviceToHost));
            for (int c = 0; c < m; c++)
                same &= memcmp(h + (size_t)c * rows3[j], y1 + (size_t)c * n_out + r0, sizeof(float) * rows3[j]) == 0;
            r0 += rows3[j];
            free(h);
            CU(cudaFree(dp[j]));
        }
        CHECK(ok && same, "%lldx%lld fused in three parts%s: ran %d, the plain call's bits %d", (long long)n_in,
              (long long)n_out, tl ? " (tiled)" : "", ok, same);
    }
    { /* an arm of the other layout refused; the tiled layout's dequantization the rows' bytes */
        float *const ya[3] = {dym, dym, dym};
        const int r0 = tcu_gemm_hm(0, s.tt, s.dt[0], s.rstride, n_in, rows1, s.xp, 4, ya, s.ws, s.wsn, 0);
        const int r6 = tcu_gemm_hm(TCU_HM_TILED, s.rt, s.dr, s.rstride, n_in, rows1, s.xp, 4, ya, s.ws, s.wsn, 0);
        CHECK(!r0 && !r6, "%lldx%lld: an arm of the other layout refused (row arm on tiles %d, tiled arm on rows %d)",
              (long long)n_in, (long long)n_out, r0, r6);
        uint16_t *q0, *q1;
        const size_t nw = (size_t)n_in * (size_t)n_out;
        CU(cudaMalloc((void **)&q0, sizeof(uint16_t) * nw));
        CU(cudaMalloc((void **)&q1, sizeof(uint16_t) * nw));
        CU(cudaMemset(q1, 0xFF, sizeof(uint16_t) * nw));
        tcu_dequant_f16(s.rt, s.dr, s.rstride, n_in, n_out, q0, 0);
        tcu_dequant_f16(s.tt, s.dt[0], s.rstride, n_in, n_out, q1, 0);
        CU(cudaDeviceSynchronize());
        uint16_t *h0 = malloc(sizeof(uint16_t) * nw), *h1 = malloc(sizeof(uint16_t) * nw);
        CU(cudaMemcpy(h0, q0, sizeof(uint16_t) * nw, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(h1, q1, sizeof(uint16_t) * nw, cudaMemcpyDeviceToHost));
        CHECK(!memcmp(h0, h1, sizeof(uint16_t) * nw), "%lldx%lld: tcu_dequant_f16 of the tiled layout = the rows'",
              (long long)n_in, (long long)n_out);
        free(h0);
        free(h1);
        CU(cudaFree(q0));
        CU(cudaFree(q1));
    }
    if (n_in <= 2048) check_weights(&s);
    if (s.wsn) {
        float *const ya[3] = {dym, dym, dym};
        CHECK(call(ref, &s, rw, rows1, s.xp, 4, ya, 0) == 0, "%lldx%lld: a split call without its workspace ran",
              (long long)n_in, (long long)n_out);
    }
    CU(cudaFree(dy1));
    CU(cudaFree(dym));
    free(y1);
    free(ym);
    release(&s);
}

/* The producers' f16 outputs with tcu_set_hm_layout(1): value i at tcu_hm_pos(i), the row-major run's bits. */
static int same_permuted(const uint16_t *d0, const uint16_t *d1, int64_t n) {
    uint16_t *a = malloc(sizeof(uint16_t) * (size_t)n), *b = malloc(sizeof(uint16_t) * (size_t)n);
    CU(cudaMemcpy(a, d0, sizeof(uint16_t) * (size_t)n, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(b, d1, sizeof(uint16_t) * (size_t)n, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad += b[tcu_hm_pos(i)] != a[i];
    free(a);
    free(b);
    return bad;
}

static void check_layout(void) {
    const int n = 20, dim = 4096; /* the RMSNorms at 3 rows and at 20 (rmsnorm_cl_k on 256 threads from 17) */
    const int64_t tot = (int64_t)n * dim;
    float *h = malloc(sizeof(float) * (size_t)tot), *x, *xo, *g, *u, *gc;
    uint16_t *y0, *y1;
    for (int64_t i = 0; i < tot; i++) h[i] = frnd(3.0f);
    CU(cudaMalloc((void **)&x, sizeof(float) * (size_t)tot));
    CU(cudaMalloc((void **)&xo, sizeof(float) * (size_t)tot));
    CU(cudaMalloc((void **)&g, sizeof(float) * (size_t)tot));
    CU(cudaMalloc((void **)&u, sizeof(float) * (size_t)tot));
    CU(cudaMalloc((void **)&gc, sizeof(float) * (size_t)tot));
    CU(cudaMalloc((void **)&y0, sizeof(uint16_t) * (size_t)tot));
    CU(cudaMalloc((void **)&y1, sizeof(uint16_t) * (size_t)tot));
    CU(cudaMemcpy(x, h, sizeof(float) * (size_t)tot, cudaMemcpyHostToDevice));
    for (int64_t i = 0; i < tot; i++) h[i] = frnd(1.5f);
    CU(cudaMemcpy(g, h, sizeof(float) * (size_t)tot, cudaMemcpyHostToDevice));
    for (int64_t i = 0; i < tot; i++) h[i] = frnd(2.0f);
    CU(cudaMemcpy(u, h, sizeof(float) * (size_t)tot, cudaMemcpyHostToDevice));
    for (int dec = 0; dec < 2; dec++) /* dec 1: the cluster kernel on sm_90 (or rmsnorm_k's 8 CTAs a row) */
        for (int nr = 3; nr <= n; nr += n - 3) {
            for (int on = 0; on < 2; on++) {
                tcu_set_hm_layout(on);
                tcu_add_rmsnorm_dec_to(x, xo, NULL, g, 1e-5f, nr, dim, NULL, on ? y1 : y0, NULL, dec, 0);
            }
            CU(cudaDeviceSynchronize());
            const int bad = same_permuted(y0, y1, (int64_t)nr * dim);
            CHECK(bad == 0, "RMSNorm (dec %d, %d rows) in the f16 order's layout: %d of %lld values misplaced", dec, nr, bad,
                  (long long)nr * dim);
        }
    for (int on = 0; on < 2; on++) {
        tcu_set_hm_layout(on);
        CU(cudaMemcpy(gc, g, sizeof(float) * (size_t)tot, cudaMemcpyDeviceToDevice)); /* the GLU writes its gate */
        tcu_glu(0, gc, u, tot, on ? y1 : y0, 0);
    }
    CU(cudaDeviceSynchronize());
    int bad = same_permuted(y0, y1, tot);
    CHECK(bad == 0, "SwiGLU's g16 in the f16 order's layout: %d of %lld values misplaced", bad, (long long)tot);
    { /* tcu_glu_f16 (four elements a thread where the sizes allow: tot is a multiple of 4) writes tcu_glu's bytes in
       * either layout, and at a size off the vector path (tot - 3 elements) too */
        uint16_t *y2, *hy = malloc(sizeof(uint16_t) * (size_t)tot), *hz = malloc(sizeof(uint16_t) * (size_t)tot);
        CU(cudaMalloc((void **)&y2, sizeof(uint16_t) * (size_t)tot));
        for (int odd = 0; odd < 2; odd++)
            for (int on = 0; on < 2; on++) {
                const int64_t m = odd ? tot - 3 : tot;
                tcu_set_hm_layout(on && !odd); /* the layout needs whole 128-element groups */
                CU(cudaMemset(y2, 0xff, sizeof(uint16_t) * (size_t)tot));
                CU(cudaMemcpy(gc, g, sizeof(float) * (size_t)tot, cudaMemcpyDeviceToDevice));
                tcu_glu(0, gc, u, m, y1, 0);
                tcu_glu_f16(0, g, u, m, y2, 0);
                CU(cudaDeviceSynchronize());
                CU(cudaMemcpy(hy, y1, sizeof(uint16_t) * (size_t)m, cudaMemcpyDeviceToHost));
                CU(cudaMemcpy(hz, y2, sizeof(uint16_t) * (size_t)m, cudaMemcpyDeviceToHost));
                CHECK(!memcmp(hy, hz, sizeof(uint16_t) * (size_t)m), "tcu_glu_f16 (%lld elements, layout %d): not tcu_glu's bytes",
                      (long long)m, on && !odd);
            }
        CU(cudaFree(y2));
        free(hy);
        free(hz);
    }
    for (int on = 0; on < 2; on++) {
        tcu_set_hm_layout(on);
        tcu_f32_to_f16(x, on ? y1 : y0, tot, 0);
    }
    CU(cudaDeviceSynchronize());
    bad = same_permuted(y0, y1, tot);
    CHECK(bad == 0, "tcu_f32_to_f16 in the f16 order's layout: %d of %lld values misplaced", bad, (long long)tot);
    tcu_set_hm_layout(0);
    CU(cudaFree(x));
    CU(cudaFree(xo));
    CU(cudaFree(g));
    CU(cudaFree(u));
    CU(cudaFree(gc));
    CU(cudaFree(y0));
    CU(cudaFree(y1));
    free(h);
}

/* us a call: best of 10 timed rounds of 20 calls over 4 copies of the weights (kind 0: hm arm, 1: v2 arm, 2: the
 * one-column dp4a GEMV in the chunk order, 3: the x16 -> f16 conversion) */
static float time_call(int kind, int arm, const shape_t *s, void **dw, int m, float *dy, void *v2ws, size_t v2wsn) {
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    float best = 1e9f;
    const int64_t rows1[3] = {s->n_out, 0, 0};
    float *const ya[3] = {dy, dy, dy};
    int ok = 1;
    for (int r = 0; r < 12; r++) {
        CU(cudaEventRecord(e0, 0));
        for (int i = 0; i < 20; i++) {
            void *w = dw[(r * 20 + i) % 4];
            if (kind == 0) ok &= call(arm, s, tiled(arm) ? s->dt[(r * 20 + i) % 4] : w, rows1, s->xp, m, ya, 1);
            else if (kind == 1)
                ok &= tcu_gemm_mma_v2_arm(arm, s->rt, w, s->rstride, s->n_in, s->n_out, s->xq, m, dy, v2ws, v2wsn, 0);
            else if (kind == 2) tcu_gemv_dp4a_fam(-1, s->rt, w, s->rstride, s->n_in, s->n_out, s->xq, 1, dy, 0);
            else tcu_x16_to_f16(s->xq, m, s->n_in, s->xh, 0);
        }
        CU(cudaEventRecord(e1, 0));
        CU(cudaEventSynchronize(e1));
        float ms_ = 0;
        CU(cudaEventElapsedTime(&ms_, e0, e1));
        if (r >= 2 && ms_ < best) best = ms_;
    }
    CU(cudaGetLastError());
    CU(cudaEventDestroy(e0));
    CU(cudaEventDestroy(e1));
    return ok ? best * 1000.0f / 20 : -1.0f;
}

static void sweep(int gt, int64_t n_in, int64_t n_out) {
    shape_t s;
    setup(&s, gt, n_in, n_out);
    const size_t wb = s.rstride * (size_t)n_out;
    void *dw[4];
    dw[0] = s.dr;
    for (int c = 1; c < 4; c++) {
        CU(cudaMalloc(&dw[c], wb));
        CU(cudaMemcpy(dw[c], s.dr, wb, cudaMemcpyDeviceToDevice));
        CU(cudaMalloc(&s.dt[c], tcu_hm_tile_bytes(s.rt, n_in, n_out)));
        CU(cudaMemcpy(s.dt[c], s.dt[0], tcu_hm_tile_bytes(s.rt, n_in, n_out), cudaMemcpyDeviceToDevice));
    }
    float *dy, *v2ws;
    CU(cudaMalloc((void **)&dy, sizeof(float) * (size_t)n_out * MMAX));
    const size_t v2n = tcu_gemm_mma_v2_ws_floats(n_in, n_out, MMAX);
    CU(cudaMalloc((void **)&v2ws, sizeof(float) * (v2n ? v2n : 1)));
    tcu_gemv_order_set(1);
    printf("sweep %s %lldx%lld (%.1f MB): one-column dp4a (chunk order) %.1f us; m: x16->f16, v2 chooser, hm chooser, "
           "hm tiled chooser, hm arms 0..%d (warpgroups, x stages, one group a step = 140 240 160 260 141 241; tiled layout 141 240 140; bulk-copied weights 4, 2 stages; by warps, mma.sync, 4 steps ahead)%s\n",
           tern_type_name(gt), (long long)n_in, (long long)n_out, wb / 1e6, time_call(2, 0, &s, dw, 1, dy, NULL, 0), ARMS - 1,
           tiles_only(gt) ? "; Q6_K: no rows arms (-1), arm 7 runs as arm 8 past 40 columns (tcu_gemm_hm)" : "");
    static const int ms[10] = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64};
    for (int i = 0; i < 10; i++) {
        const int m = ms[i];
        printf("  m=%2d  cvt %5.1f  v2 %7.1f  hm %7.1f  hmT %7.1f |", m, time_call(3, 0, &s, dw, m, dy, NULL, 0),
               time_call(1, -1, &s, dw, m, dy, v2ws, v2n), time_call(0, -1, &s, dw, m, dy, NULL, 0),
               time_call(0, TL_PICK, &s, dw, m, dy, NULL, 0));
        for (int a = 0; a < ARMS; a++) printf(" %7.1f", time_call(0, a, &s, dw, m, dy, NULL, 0));
        const float best = time_call(0, tiles_only(gt) ? TL_PICK : -1, &s, dw, m, dy, NULL, 0);
        printf("   (chooser %.0f GB/s of weights)\n", wb / best * 1e-3);
    }
    for (int c = 1; c < 4; c++) {
        CU(cudaFree(dw[c]));
        CU(cudaFree(s.dt[c]));
    }
    CU(cudaFree(dy));
    CU(cudaFree(v2ws));
    release(&s);
}

static int one(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: gpu_hmma --one N_IN N_OUT M ARM\n");
        return 2;
    }
    const int64_t n_in = atoll(argv[2]), n_out = atoll(argv[3]);
    const int m = atoi(argv[4]), arm0 = atoi(argv[5]);
    const int arm = arm0 == -1 && tiles_only(g_type) ? TL_PICK : arm0; /* Q6_K: the chooser on its tiles */
    if (n_in < 32 || n_in % 32 || n_out < 1 || m < 1 || m > MMAX || arm < TL_PICK || arm >= ARMS) {
        fprintf(stderr, "gpu_hmma --one: bad shape, m or arm\n");
        return 2;
    }
    shape_t s;
    setup(&s, g_type, n_in, n_out);
    float *dy;
    CU(cudaMalloc((void **)&dy, sizeof(float) * (size_t)n_out * MMAX));
    void *dw[4] = {s.dr, s.dr, s.dr, s.dr};
    for (int c = 1; c < 4; c++) s.dt[c] = s.dt[0]; /* one copy (release frees dt[0] alone) */
    tcu_gemv_order_set(1);
    for (int i = 0; i < 30; i++) {
        const int64_t rows1[3] = {n_out, 0, 0};
        float *const ya[3] = {dy, dy, dy};
        if (arm == -2) tcu_gemv_dp4a_fam(-1, s.rt, s.dr, s.rstride, n_in, n_out, s.xq, 1, dy, 0);
        else if (!call(arm, &s, tiled(arm) ? s.dt[0] : s.dr, rows1, s.xp, m, ya, 1)) {
            fprintf(stderr, "gpu_hmma --one: the call did not run\n");
            CU(cudaFree(dy));
            release(&s);
            return 1;
        }
    }
    CU(cudaDeviceSynchronize());
    printf("one %s %lldx%lld m %d arm %d: %.1f us (one copy of the weights)\n", tern_type_name(g_type), (long long)n_in, (long long)n_out, m, arm,
           time_call(arm == -2 ? 2 : 0, arm, &s, dw, m, dy, NULL, 0));
    CU(cudaFree(dy));
    release(&s);
    return 0;
}

int main(int argc, char **argv) {
    int dev_n = 0;
    if (cudaGetDeviceCount(&dev_n) != cudaSuccess || dev_n < 1) {
        printf("gpu_hmma: no CUDA device, skipped\ngpu_hmma: 0 passed, 0 failed\n");
        return 0;
    }
    const char *se = getenv("GPU_TEST_SEED");
    rs = se ? strtoull(se, NULL, 10) : (uint64_t)time(NULL) * 2654435761ull + 7;
    printf("gpu_hmma: seed %llu\n", (unsigned long long)rs);
    if (!tcu_gemm_hm_supported(TCU_TYPE_Q4_0R, 4096)) {
        printf("gpu_hmma: no sm_90 device with the sm_90a code (the f16 order is Hopper's), skipped\ngpu_hmma: 0 passed, 0 failed\n");
        return 0;
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--q8")) g_type = TERN_TYPE_Q8_0; /* the sweep's and --one's weights */
        else if (!strcmp(argv[i], "--q4k")) g_type = TERN_TYPE_Q4_K;
        else if (!strcmp(argv[i], "--q6k")) g_type = TERN_TYPE_Q6_K;
    if (argc > 1 && !strcmp(argv[1], "--one")) return one(argc, argv);
    const int sweep_only = argc > 1 && !strcmp(argv[1], "--sweep-only");
    for (int i = 2; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--splits")) { /* the K split forced for every shape (a measurement) */
            tcu_gemm_hm_splits_set(atoi(argv[i + 1]));
            printf("gpu_hmma: K split forced to %d segments (fewer where a segment would have < 4 steps)\n", atoi(argv[i + 1]));
        }
    }
    if (!sweep_only) {
        for (int q8 = 0; q8 < 2; q8++) {
            const int gt = q8 ? TERN_TYPE_Q8_0 : TERN_TYPE_Q4_0;
            check_shape(gt, 4096, 1000);
            check_shape(gt, 14336, 33);
            check_shape(gt, 6144, 70);
            check_shape(gt, 2048, 100);
            check_shape(gt, 384, 130);
            check_shape(gt, 128, 9);
            check_shape(gt, 1056, 45);
            check_shape(gt, 800, 7);
        }
        /* Q4_K: whole super-blocks (n_in a multiple of 256; 2 steps each) */
        check_shape(TERN_TYPE_Q4_K, 4096, 1000);
        check_shape(TERN_TYPE_Q4_K, 14336, 33);
        check_shape(TERN_TYPE_Q4_K, 6144, 70);
        check_shape(TERN_TYPE_Q4_K, 2048, 100);
        check_shape(TERN_TYPE_Q4_K, 512, 130);
        check_shape(TERN_TYPE_Q4_K, 256, 9);
        /* Q6_K: tiles only (Q6_KT), whole super-blocks */
        check_shape(TERN_TYPE_Q6_K, 4096, 1000);
        check_shape(TERN_TYPE_Q6_K, 14336, 33);
        check_shape(TERN_TYPE_Q6_K, 6144, 70);
        check_shape(TERN_TYPE_Q6_K, 2048, 100);
        check_shape(TERN_TYPE_Q6_K, 512, 130);
        check_shape(TERN_TYPE_Q6_K, 256, 9);
        check_layout();
    }
    if (argc > 1 && (!strcmp(argv[1], "--sweep") || sweep_only)) {
        sweep(g_type, 4096, 14336);
        sweep(g_type, 14336, 4096);
        sweep(g_type, 4096, 4096);
        sweep(g_type, 4096, 6144);
        sweep(g_type, 4096, 28672);
    }
    return check_summary("gpu_hmma");
}
