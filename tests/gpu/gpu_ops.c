/* gpu_ops: every launcher of src/backend/cuda/tcu.h (except attention and the roofline probes) on the GPU,
 * against its CPU reference on fresh random inputs.
 *
 *  - weights: for every type with a GPU kernel (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K,
 *    Q6_K) random rows in that block format (random qs/scales bytes, finite random f16 d/m/dmin), over
 *    n_in {256, 512, 4096, 14336, 2816} x n_out {1, 7, 33, 256, 1000}, rows packed (stride = row_bytes)
 *    and, for n_out 7 and 33, rows padded to 16 bytes (the backend's layout) or wider, random padding:
 *      tcu_get_rows    bit-equal to tern_dequantize_row;
 *      tcu_dequant_f16 bit-equal to f16 (round to nearest even) of tern_dequantize_row;
 *      tcu_gemv        |y - ref| <= 1e-5 * sum|w_i x_i| + 1e-6 per row, ref = dot in double of the
 *                      dequantized row and x; two launches give identical bits.
 *  - tcu_gemm_f16 / tcu_gemm_bf16: n {1, 3, 64, 257, 512}, relative L2 < 1e-5 against a double reference
 *    on the same f16/bf16 operands; plus tcu_dequant_f16 -> tcu_gemm_f16 on a Q4_K weight.
 *  - tcu_rmsnorm (y32, y16, both), tcu_rope (positions 0, 1, 4095, 131071; n_rot < hd), tcu_kv_write
 *    (sentinel-filled cache), tcu_swiglu (with/without g16), tcu_add, tcu_add_bias, tcu_f32_to_f16 (overflow,
 *    subnormals, ties, NaN), tcu_pos_add, tcu_argmax (ties, NaN entries, all NaN), tcu_argmax_rows (1..16, 24, 48, 64 rows, padded rows, twice).
 *  - a timing table (cudaEvents, median of 20 after warm-up; no assertions).
 * Every output buffer is poisoned (0xFF bytes: NaN for f32/f16, -1 for int32) before each launch.
 * Seed: from the clock, printed; GPU_TEST_SEED=N replays a run. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "backend_cpu.h"
#include "check.h"
#include "cuda/tcu.h"
#include "quant.h"
#include "tern.h"
#include "util.h"

#define CU(call)                                                                                       \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_), \
                    cudaGetErrorName(e_));                                                             \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

static cudaStream_t g_st;

/* After a launcher: launch errors, then execution errors. */
#define SYNC()                                   \
    do {                                         \
        CU(cudaGetLastError());                  \
        CU(cudaStreamSynchronize(g_st));         \
    } while (0)

/* ---- helpers ----------------------------------------------------------------------------------- */

static uint64_t g_rng;
static uint64_t rnd64(void) { /* splitmix64 */
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double rnd01(void) { return (double)(rnd64() >> 11) * (1.0 / 9007199254740992.0); }
static float urand(float lo, float hi) { return (float)(lo + (hi - lo) * rnd01()); }
static void fill_bytes(uint8_t *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t r = rnd64();
        memcpy(p + i, &r, 8);
    }
    uint64_t r = rnd64();
    for (; i < n; i++, r >>= 8) p[i] = (uint8_t)r;
}
static void fill_f32(float *p, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) p[i] = urand(lo, hi);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "gpu_ops: out of host memory (%zu bytes)\n", n); exit(1); }
    return p;
}
static void *dmalloc(size_t n) {
    void *p = NULL;
    CU(cudaMalloc(&p, n ? n : 16));
    return p;
}
static void h2d(void *d, const void *h, size_t n) {
    CU(cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, g_st));
    CU(cudaStreamSynchronize(g_st));
}
static void d2h(void *h, const void *d, size_t n) {
    CU(cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, g_st));
    CU(cudaStreamSynchronize(g_st));
}
/* 0xFF bytes: NaN as f32 and f16, -1 as int32. */
static void poison(void *d, size_t n) { CU(cudaMemsetAsync(d, 0xFF, n, g_st)); }

static int f16_isnan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
/* f16 bits on a line (so |ord(a) - ord(b)| is the distance in ulps; +0 and -0 coincide). */
static int f16_ord(uint16_t h) { return (h & 0x8000) ? -(int)(h & 0x7fff) : (int)h; }
/* First index where two arrays of 4-byte (or 2-byte) words differ, -1 if none. */
static int64_t first_diff(const void *a, const void *b, size_t n, size_t elt) {
    if (memcmp(a, b, n * elt) == 0) return -1;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * elt, (const char *)b + i * elt, elt) != 0) return (int64_t)i;
    return -1;
}
static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---- weights: random rows in every GPU weight format -------------------------------------------- */

static const enum tern_type k_wtypes[] = {TERN_TYPE_F32,  TERN_TYPE_F16,  TERN_TYPE_BF16, TERN_TYPE_Q4_0,
                                          TERN_TYPE_Q4_1, TERN_TYPE_Q5_0, TERN_TYPE_Q5_1, TERN_TYPE_Q8_0,
                                          TERN_TYPE_Q4_K, TERN_TYPE_Q5_K, TERN_TYPE_Q6_K};
#define N_WTYPES ((int)(sizeof(k_wtypes) / sizeof(k_wtypes[0])))

static uint16_t rand_scale(void) { return tern_fp32_to_fp16(urand(-0.05f, 0.05f)); }
static void put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

/* n_out rows of n_in elements of type t into w (tern_type_row_size(t, n_in) * n_out bytes). Block
 * formats: random bytes everywhere (every qs/qh/scales pattern is valid), then finite f16 scale fields
 * (d, m / dmin) uniform in [-0.05, 0.05]. Float formats: uniform in [-1, 1]. */
static void gen_weight(enum tern_type t, int64_t n_in, int64_t n_out, uint8_t *w) {
    const size_t rb = tern_type_row_size(t, n_in), total = rb * (size_t)n_out;
    const size_t ne = (size_t)n_in * (size_t)n_out;
    switch (t) {
    case TERN_TYPE_F32:
        for (size_t i = 0; i < ne; i++) {
            float f = urand(-1.0f, 1.0f);
            memcpy(w + 4 * i, &f, 4);
        }
        return;
    case TERN_TYPE_F16:
        for (size_t i = 0; i < ne; i++) put_u16(w + 2 * i, tern_fp32_to_fp16(urand(-1.0f, 1.0f)));
        return;
    case TERN_TYPE_BF16:
        for (size_t i = 0; i < ne; i++) put_u16(w + 2 * i, tern_fp32_to_bf16(urand(-1.0f, 1.0f)));
        return;
    default:
        break;
    }
    fill_bytes(w, total);
    const size_t bs = tern_type_type_size(t), nb = total / bs;
    for (size_t b = 0; b < nb; b++) {
        uint8_t *blk = w + b * bs;
        switch (t) {
        case TERN_TYPE_Q4_0: case TERN_TYPE_Q5_0: case TERN_TYPE_Q8_0:
            put_u16(blk, rand_scale()); /* d */
            break;
        case TERN_TYPE_Q4_1: case TERN_TYPE_Q5_1: case TERN_TYPE_Q4_K: case TERN_TYPE_Q5_K:
            put_u16(blk, rand_scale());     /* d */
            put_u16(blk + 2, rand_scale()); /* m / dmin */
            break;
        case TERN_TYPE_Q6_K:
            put_u16(blk + 208, rand_scale()); /* d after ql[128], qh[64], scales[16] */
            break;
        default:
            fprintf(stderr, "gen_weight: no generator for type %d\n", (int)t);
            exit(1);
        }
    }
}

static void test_type_supported(void) {
    int bad = -1;
    for (int i = 0; i < N_WTYPES; i++)
        if (tcu_type_supported((int)k_wtypes[i]) != 1) bad = (int)k_wtypes[i];
    CHECK(bad < 0, "tcu_type_supported(%s) != 1", tern_type_name(bad));
    const int no[] = {-1, TERN_TYPE_COUNT, 1000, TERN_TYPE_Q8_1, TERN_TYPE_Q8_K};
    int bad_no = 0, which = 0;
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        if (tcu_type_supported(no[i]) != 0) { bad_no++; which = no[i]; }
    CHECK(bad_no == 0, "tcu_type_supported(%d) != 0 (not a weight type)", which);
}

#define MAX_IN 14336
#define MAX_OUT 1000
#define MAX_IDS 6
#define W_OFFSET 32 /* weights start 32 bytes into their allocation (GGUF tensor alignment) */

typedef struct {
    uint8_t *d_wbase;
    float *d_x, *d_y1, *d_y2, *d_rows;
    uint16_t *d_h16;
    int32_t *d_ids;
    uint8_t *w, *ws; /* rows packed (row_bytes apart), rows `stride` apart with random padding */
    float *deq, *x, *y1, *y2, *rows;
    uint16_t *h16;
} wbufs;

typedef struct {
    double gemv_worst; /* max over cases of err/tol */
    int cases;
} wstats;

/* One weight shape. stride: bytes between rows on the device: row_bytes (packed rows, "uploaded
 * unchanged") or larger (the backend pads rows to 16 bytes); padding bytes are random, never data. */
static void weight_case(wbufs *B, enum tern_type t, int64_t n_in, int64_t n_out, size_t stride, wstats *S) {
    const size_t rb = tern_type_row_size(t, n_in);
    char tn[64];
    if (stride == rb) snprintf(tn, sizeof(tn), "%s", tern_type_name((int)t));
    else snprintf(tn, sizeof(tn), "%s(stride %zu, row %zu B)", tern_type_name((int)t), stride, rb);
    uint8_t *d_w = B->d_wbase + W_OFFSET;
    gen_weight(t, n_in, n_out, B->w);
    if (stride == rb) {
        h2d(d_w, B->w, rb * (size_t)n_out);
    } else {
        for (int64_t r = 0; r < n_out; r++) {
            memcpy(B->ws + (size_t)r * stride, B->w + (size_t)r * rb, rb);
            fill_bytes(B->ws + (size_t)r * stride + rb, stride - rb);
        }
        h2d(d_w, B->ws, stride * (size_t)n_out);
    }
    for (int64_t r = 0; r < n_out; r++) tern_dequantize_row(t, B->w + (size_t)r * rb, B->deq + r * n_in, n_in);
    fill_f32(B->x, (size_t)n_in, -1.0f, 1.0f);
    h2d(B->d_x, B->x, sizeof(float) * (size_t)n_in);

    /* gemv, twice (determinism) */
    poison(B->d_y1, sizeof(float) * (size_t)n_out);
    tcu_gemv((int)t, d_w, stride, n_in, n_out, B->d_x, B->d_y1, g_st);
    SYNC();
    poison(B->d_y2, sizeof(float) * (size_t)n_out);
    tcu_gemv((int)t, d_w, stride, n_in, n_out, B->d_x, B->d_y2, g_st);
    SYNC();
    d2h(B->y1, B->d_y1, sizeof(float) * (size_t)n_out);
    d2h(B->y2, B->d_y2, sizeof(float) * (size_t)n_out);
    double worst = -1, wy = 0, wref = 0, wsa = 0;
    int64_t wr = -1;
    for (int64_t r = 0; r < n_out; r++) {
        const float *wrow = B->deq + r * n_in;
        double s = 0, sa = 0;
        for (int64_t k = 0; k < n_in; k++) {
            double p = (double)wrow[k] * (double)B->x[k];
            s += p;
            sa += fabs(p);
        }
        double y = B->y1[r], tol = 1e-5 * sa + 1e-6;
        double q = isfinite(y) ? fabs(y - s) / tol : INFINITY;
        if (q > worst) { worst = q; wr = r; wy = y; wref = s; wsa = sa; }
    }
    CHECK(worst <= 1.0, "gemv %s %lld->%lld: row %lld y=%.9g ref=%.9g err/tol=%.3g (sum|wx|=%.4g)", tn,
          (long long)n_in, (long long)n_out, (long long)wr, wy, wref, worst, wsa);
    if (worst > S->gemv_worst) S->gemv_worst = worst;
    int64_t dd = first_diff(B->y1, B->y2, (size_t)n_out, 4);
    CHECK(dd < 0, "gemv %s %lld->%lld not deterministic: row %lld %.9g vs %.9g", tn, (long long)n_in,
          (long long)n_out, (long long)dd, dd < 0 ? 0.0 : B->y1[dd], dd < 0 ? 0.0 : B->y2[dd]);

    /* dequant_f16: f16(round to nearest even) of the reference, bit for bit */
    const size_t ne = (size_t)n_in * (size_t)n_out;
    poison(B->d_h16, 2 * ne);
    tcu_dequant_f16((int)t, d_w, stride, n_in, n_out, B->d_h16, g_st);
    SYNC();
    d2h(B->h16, B->d_h16, 2 * ne);
    size_t nbad = 0, first = 0;
    for (size_t i = 0; i < ne; i++)
        if (B->h16[i] != tern_fp32_to_fp16(B->deq[i])) {
            if (!nbad) first = i;
            nbad++;
        }
    CHECK(nbad == 0, "dequant_f16 %s %lld->%lld: %zu of %zu differ; first [%zu] got 0x%04x want 0x%04x (ref %.9g)",
          tn, (long long)n_in, (long long)n_out, nbad, ne, first, nbad ? B->h16[first] : 0,
          nbad ? tern_fp32_to_fp16(B->deq[first]) : 0, nbad ? B->deq[first] : 0.0);

    /* get_rows: last row, first row, random rows, a duplicate */
    int32_t ids[MAX_IDS];
    const int n_ids = MAX_IDS;
    ids[0] = (int32_t)(n_out - 1);
    ids[1] = 0;
    for (int i = 2; i < n_ids - 1; i++) ids[i] = (int32_t)(rnd64() % (uint64_t)n_out);
    ids[n_ids - 1] = ids[2];
    h2d(B->d_ids, ids, sizeof(ids));
    poison(B->d_rows, sizeof(float) * (size_t)n_ids * (size_t)n_in);
    tcu_get_rows((int)t, d_w, stride, n_in, B->d_ids, n_ids, B->d_rows, g_st);
    SYNC();
    d2h(B->rows, B->d_rows, sizeof(float) * (size_t)n_ids * (size_t)n_in);
    int bad_id = -1;
    int64_t bad_k = -1;
    for (int i = 0; i < n_ids && bad_id < 0; i++) {
        int64_t k = first_diff(B->rows + (size_t)i * n_in, B->deq + (size_t)ids[i] * n_in, (size_t)n_in, 4);
        if (k >= 0) { bad_id = i; bad_k = k; }
    }
    CHECK(bad_id < 0, "get_rows %s %lld->%lld: out row %d (id %d) element %lld got %.9g want %.9g", tn,
          (long long)n_in, (long long)n_out, bad_id, bad_id < 0 ? 0 : ids[bad_id], (long long)bad_k,
          bad_id < 0 ? 0.0 : B->rows[(size_t)bad_id * n_in + bad_k],
          bad_id < 0 ? 0.0 : B->deq[(size_t)ids[bad_id] * n_in + bad_k]);
    S->cases++;
}

static void test_weights(void) {
    static const int64_t ins[] = {256, 512, 4096, 14336, 2816};
    static const int64_t outs[] = {1, 7, 33, 256, 1000};
    wbufs B;
    const size_t max_w = (size_t)MAX_IN * MAX_OUT * 4; /* F32 is the largest format */
    const size_t max_ws = max_w + (size_t)32 * MAX_OUT; /* rows padded by at most 31 bytes */
    B.d_wbase = dmalloc(max_ws + W_OFFSET);
    B.d_x = dmalloc(sizeof(float) * MAX_IN);
    B.d_y1 = dmalloc(sizeof(float) * MAX_OUT);
    B.d_y2 = dmalloc(sizeof(float) * MAX_OUT);
    B.d_rows = dmalloc(sizeof(float) * MAX_IDS * MAX_IN);
    B.d_h16 = dmalloc(2 * (size_t)MAX_IN * MAX_OUT);
    B.d_ids = dmalloc(sizeof(int32_t) * MAX_IDS);
    B.w = xmalloc(max_w);
    B.ws = xmalloc(max_ws);
    B.deq = xmalloc(sizeof(float) * (size_t)MAX_IN * MAX_OUT);
    B.x = xmalloc(sizeof(float) * MAX_IN);
    B.y1 = xmalloc(sizeof(float) * MAX_OUT);
    B.y2 = xmalloc(sizeof(float) * MAX_OUT);
    B.rows = xmalloc(sizeof(float) * MAX_IDS * MAX_IN);
    B.h16 = xmalloc(2 * (size_t)MAX_IN * MAX_OUT);
    for (int ti = 0; ti < N_WTYPES; ti++) {
        enum tern_type t = k_wtypes[ti];
        if (!tcu_type_supported((int)t)) continue; /* reported by test_type_supported */
        wstats S = {0, 0};
        for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++) {
            if (ins[i] % tern_type_block_size(t) != 0) continue;
            const size_t rb = tern_type_row_size(t, ins[i]), rb16 = (rb + 15) & ~(size_t)15;
            for (size_t o = 0; o < sizeof(outs) / sizeof(outs[0]); o++) {
                weight_case(&B, t, ins[i], outs[o], rb, &S); /* packed rows */
                /* padded rows: the backend's layout (rows padded to 16 bytes), and a wider stride */
                if (outs[o] == 7 && rb16 != rb) weight_case(&B, t, ins[i], outs[o], rb16, &S);
                if (outs[o] == 33) weight_case(&B, t, ins[i], outs[o], rb16 + 16, &S);
            }
        }
        printf("  weights %-5s %2d cases: gemv worst err/tol %.3g; get_rows, dequant_f16 bit-compared\n",
               tern_type_name((int)t), S.cases, S.gemv_worst);
    }
    CU(cudaFree(B.d_wbase)); CU(cudaFree(B.d_x)); CU(cudaFree(B.d_y1)); CU(cudaFree(B.d_y2));
    CU(cudaFree(B.d_rows)); CU(cudaFree(B.d_h16)); CU(cudaFree(B.d_ids));
    free(B.w); free(B.ws); free(B.deq); free(B.x); free(B.y1); free(B.y2); free(B.rows); free(B.h16);
}

/* ---- GEMM (cuBLASLt) ------------------------------------------------------------------------------ */

/* Relative L2 error of y (n, n_out) against the double product of a (n, k) and b (n_out, k) (as floats,
 * already rounded to the operand format). NaN/Inf in y gives INFINITY. */
static double gemm_rel_l2(const float *a, const float *b, const float *y, int n, int64_t k, int64_t n_out) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++)
        for (int64_t j = 0; j < n_out; j++) {
            const float *ar = a + (size_t)i * k, *br = b + (size_t)j * k;
            double s = 0;
            for (int64_t q = 0; q < k; q++) s += (double)ar[q] * (double)br[q];
            double g = y[(size_t)i * n_out + j];
            if (!isfinite(g)) return INFINITY;
            num += (g - s) * (g - s);
            den += s * s;
        }
    return sqrt(num / (den > 0 ? den : 1e-300));
}

typedef int (*gemm_fn)(tcu_blas *, const uint16_t *, const uint16_t *, float *, int, int64_t, int64_t,
                       cudaStream_t);

static void test_gemm(tcu_blas *blas) {
    static const int ns[] = {1, 3, 64, 257, 512};
    static const int64_t shapes[][2] = {{256, 1000}, {4096, 256}, {2816, 33}}; /* n_in, n_out */
    const int max_n = 512;
    const size_t max_w = 4096 * 256, max_x = (size_t)max_n * 4096, max_y = (size_t)max_n * 1000;
    uint16_t *hw = xmalloc(2 * max_w), *hx = xmalloc(2 * max_x);
    float *fw = xmalloc(4 * max_w), *fx = xmalloc(4 * max_x), *hy = xmalloc(4 * max_y);
    uint16_t *dw = dmalloc(2 * max_w), *dx = dmalloc(2 * max_x);
    float *dy = dmalloc(4 * max_y);
    for (int bf = 0; bf < 2; bf++) {
        gemm_fn fn = bf ? tcu_gemm_bf16 : tcu_gemm_f16;
        const char *nm = bf ? "gemm_bf16" : "gemm_f16";
        double worst = 0;
        for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
            const int64_t n_in = shapes[s][0], n_out = shapes[s][1];
            for (size_t i = 0; i < (size_t)n_in * n_out; i++) {
                float f = urand(-1.0f, 1.0f);
                hw[i] = bf ? tern_fp32_to_bf16(f) : tern_fp32_to_fp16(f);
                fw[i] = bf ? tern_bf16_to_fp32(hw[i]) : tern_fp16_to_fp32(hw[i]);
            }
            h2d(dw, hw, 2 * (size_t)n_in * n_out);
            for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
                const int n = ns[ni];
                for (size_t i = 0; i < (size_t)n * n_in; i++) {
                    float f = urand(-1.0f, 1.0f);
                    hx[i] = bf ? tern_fp32_to_bf16(f) : tern_fp32_to_fp16(f);
                    fx[i] = bf ? tern_bf16_to_fp32(hx[i]) : tern_fp16_to_fp32(hx[i]);
                }
                h2d(dx, hx, 2 * (size_t)n * n_in);
                poison(dy, 4 * (size_t)n * n_out);
                int rc = fn(blas, dw, dx, dy, n, n_in, n_out, g_st);
                SYNC();
                if (rc != 0 && n_out % 8 != 0) { /* the contract lets cuBLASLt refuse a shape */
                    printf("  note: %s n=%d %lld->%lld refused by cuBLASLt (allowed: n_out %% 8 != 0)\n", nm, n,
                           (long long)n_in, (long long)n_out);
                    continue;
                }
                CHECK(rc == 0, "%s n=%d %lld->%lld returned %d", nm, n, (long long)n_in, (long long)n_out, rc);
                if (rc != 0) continue;
                d2h(hy, dy, 4 * (size_t)n * n_out);
                double e = gemm_rel_l2(fx, fw, hy, n, n_in, n_out);
                CHECK(e < 1e-5, "%s n=%d %lld->%lld: relative L2 error %.3g", nm, n, (long long)n_in,
                      (long long)n_out, e);
                if (!(e <= worst)) worst = e;
            }
        }
        printf("  %s: %zu shapes x %zu n, worst relative L2 %.3g\n", nm, sizeof(shapes) / sizeof(shapes[0]),
               sizeof(ns) / sizeof(ns[0]), worst);
    }

    /* the prefill path: Q4_K weight -> tcu_dequant_f16 -> tcu_gemm_f16 */
    {
        const enum tern_type t = TERN_TYPE_Q4_K;
        const int64_t n_in = 4096, n_out = 256;
        const int n = 64;
        const size_t rb = tern_type_row_size(t, n_in);
        uint8_t *q = xmalloc(rb * n_out);
        float *row = xmalloc(4 * n_in);
        gen_weight(t, n_in, n_out, q);
        for (int64_t r = 0; r < n_out; r++) {
            tern_dequantize_row(t, q + r * rb, row, n_in);
            for (int64_t k = 0; k < n_in; k++) fw[r * n_in + k] = tern_fp16_to_fp32(tern_fp32_to_fp16(row[k]));
        }
        for (size_t i = 0; i < (size_t)n * n_in; i++) {
            hx[i] = tern_fp32_to_fp16(urand(-1.0f, 1.0f));
            fx[i] = tern_fp16_to_fp32(hx[i]);
        }
        uint8_t *dq = dmalloc(rb * n_out);
        h2d(dq, q, rb * n_out);
        h2d(dx, hx, 2 * (size_t)n * n_in);
        poison(dw, 2 * (size_t)n_in * n_out);
        tcu_dequant_f16((int)t, dq, rb, n_in, n_out, dw, g_st);
        SYNC();
        poison(dy, 4 * (size_t)n * n_out);
        int rc = tcu_gemm_f16(blas, dw, dx, dy, n, n_in, n_out, g_st);
        SYNC();
        CHECK(rc == 0, "dequant_f16 -> gemm_f16 q4_K n=%d %lld->%lld returned %d", n, (long long)n_in,
              (long long)n_out, rc);
        if (rc == 0) {
            d2h(hy, dy, 4 * (size_t)n * n_out);
            double e = gemm_rel_l2(fx, fw, hy, n, n_in, n_out);
            CHECK(e < 1e-5, "dequant_f16 -> gemm_f16 q4_K n=%d %lld->%lld: relative L2 error %.3g", n,
                  (long long)n_in, (long long)n_out, e);
            printf("  dequant_f16 -> gemm_f16 (q4_K, n=%d, %lld->%lld): relative L2 %.3g\n", n, (long long)n_in,
                   (long long)n_out, e);
        }
        CU(cudaFree(dq));
        free(q);
        free(row);
    }
    CU(cudaFree(dw)); CU(cudaFree(dx)); CU(cudaFree(dy));
    free(hw); free(hx); free(fw); free(fx); free(hy);
}

/* ---- RMSNorm ------------------------------------------------------------------------------------ */

/* Worst |y - ref| / |ref| (INFINITY for NaN/Inf or a nonzero y where ref is 0). */
static double worst_rel(const float *y, const float *ref, size_t n, size_t *at) {
    double w = 0;
    *at = 0;
    for (size_t i = 0; i < n; i++) {
        double e;
        if (!isfinite(y[i])) e = INFINITY;
        else if (ref[i] == 0) e = y[i] == 0 ? 0 : INFINITY;
        else e = fabs((double)y[i] - (double)ref[i]) / fabs((double)ref[i]);
        if (e > w) { w = e; *at = i; }
    }
    return w;
}

/* Worst distance in f16 ulps of y16 from f16(ref) (INT32_MAX for a NaN). */
static int worst_ulp16(const uint16_t *y16, const float *ref, size_t n, size_t *at) {
    int w = 0;
    *at = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t want = tern_fp32_to_fp16(ref[i]);
        int d = f16_isnan(y16[i]) ? INT32_MAX : abs(f16_ord(y16[i]) - f16_ord(want));
        if (d > w) { w = d; *at = i; }
    }
    return w;
}

static void test_rmsnorm(void) {
    static const struct { int n, dim; float eps; } cs[] = {
        {1, 4096, 1e-5f}, {5, 576, 1e-5f}, {3, 8192, 1e-6f}, {7, 1000, 1e-5f}, {2, 2048, 1e-6f}, {64, 4096, 1e-5f}};
    for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
        const int n = cs[c].n, dim = cs[c].dim;
        const float eps = cs[c].eps;
        const size_t ne = (size_t)n * dim;
        float *x = xmalloc(4 * ne), *g = xmalloc(4 * (size_t)dim), *ref = xmalloc(4 * ne), *y = xmalloc(4 * ne);
        uint16_t *y16 = xmalloc(2 * ne);
        /* rows of different magnitudes (one tiny: eps matters) */
        for (int t = 0; t < n; t++) {
            float sc = t % 3 == 0 ? 3.0f : t % 3 == 1 ? 0.05f : 1e-3f;
            fill_f32(x + (size_t)t * dim, (size_t)dim, -sc, sc);
        }
        fill_f32(g, (size_t)dim, -2.0f, 2.0f);
        cpu_rmsnorm(x, g, eps, n, dim, ref);
        float *dx = dmalloc(4 * ne), *dg = dmalloc(4 * (size_t)dim), *dy = dmalloc(4 * ne);
        uint16_t *dy16 = dmalloc(2 * ne);
        h2d(dx, x, 4 * ne);
        h2d(dg, g, 4 * (size_t)dim);
        for (int mode = 0; mode < 3; mode++) { /* 0: both outputs, 1: y32 only, 2: y16 only */
            const char *mn = mode == 0 ? "y32+y16" : mode == 1 ? "y32 only" : "y16 only";
            poison(dy, 4 * ne);
            poison(dy16, 2 * ne);
            tcu_rmsnorm(dx, dg, eps, n, dim, mode == 2 ? NULL : dy, mode == 1 ? NULL : dy16, g_st);
            SYNC();
            size_t at;
            if (mode != 2) {
                d2h(y, dy, 4 * ne);
                double e = worst_rel(y, ref, ne, &at);
                CHECK(e <= 1e-6, "rmsnorm %s n=%d dim=%d: [%zu] got %.9g want %.9g (rel %.3g)", mn, n, dim, at,
                      y[at], ref[at], e);
            }
            if (mode != 1) {
                d2h(y16, dy16, 2 * ne);
                int u = worst_ulp16(y16, ref, ne, &at);
                CHECK(u <= 1, "rmsnorm %s n=%d dim=%d: y16[%zu]=0x%04x want 0x%04x (%d ulp)", mn, n, dim, at,
                      y16[at], tern_fp32_to_fp16(ref[at]), u);
            }
        }
        CU(cudaFree(dx)); CU(cudaFree(dg)); CU(cudaFree(dy)); CU(cudaFree(dy16));
        free(x); free(g); free(ref); free(y); free(y16);
    }
}

/* ---- RoPE ----------------------------------------------------------------------------------------- */

static void test_rope(void) {
    static const struct { int n_heads, hd, n_rot; double base, scale; int factors; } cs[] = {
        {8, 128, 128, 500000.0, 1.0, 1}, /* llama3 with rope_freqs factors */
        {32, 128, 128, 10000.0, 1.0, 0},
        {4, 64, 32, 10000.0, 1.0, 0},     /* partial rotation: n_rot < hd */
        {3, 80, 64, 10000.0, 4.0, 0},     /* hd not a power of two, linear scaling */
        {9, 64, 64, 100000.0, 1.0, 0}};
    enum { N_POS = 7 };
    /* each shape in GGML's normal pairing, then NEOX (Qwen, Gemma, Phi-3), then NEOX with a YaRN-style cos/sin factor */
    for (size_t cv = 0; cv < 3 * sizeof(cs) / sizeof(cs[0]); cv++) {
        const size_t c = cv % (sizeof(cs) / sizeof(cs[0]));
        const int neox = cv >= sizeof(cs) / sizeof(cs[0]);
        const float mscale = cv >= 2 * sizeof(cs) / sizeof(cs[0]) ? 1.1386294f : 1.0f;
        const int nh = cs[c].n_heads, hd = cs[c].hd, nr = cs[c].n_rot, n = N_POS;
        int32_t pos[N_POS] = {0, 1, 4095, 131071, (int32_t)(rnd64() % 8192), (int32_t)(rnd64() % 131072), 2};
        float *fac = NULL, *freq = xmalloc(4 * (size_t)(nr / 2));
        if (cs[c].factors) {
            fac = xmalloc(4 * (size_t)(nr / 2));
            for (int i = 0; i < nr / 2; i++) fac[i] = i < nr / 8 ? 1.0f : urand(1.0f, 8.0f);
        }
        cpu_rope_freqs(freq, nr, cs[c].base, cs[c].scale, fac);
        const size_t ne = (size_t)n * nh * hd;
        float *x = xmalloc(4 * ne), *ref = xmalloc(4 * ne), *y = xmalloc(4 * ne);
        fill_f32(x, ne, -1.0f, 1.0f);
        memcpy(ref, x, 4 * ne);
        cpu_rope_ms(ref, n, nh, hd, nr, pos, freq, neox, mscale);
        float *dx = dmalloc(4 * ne), *dfreq = dmalloc(4 * (size_t)(nr / 2));
        int32_t *dpos = dmalloc(sizeof(pos));
        h2d(dx, x, 4 * ne);
        h2d(dfreq, freq, 4 * (size_t)(nr / 2));
        h2d(dpos, pos, sizeof(pos));
        tcu_rope(dx, n, nh, hd, nr, neox, mscale, dpos, dfreq, g_st);
        SYNC();
        d2h(y, dx, 4 * ne);
        double worst = 0;
        size_t at = 0;
        int64_t pass_bad = -1;
        for (size_t i = 0; i < ne; i++) {
            double e = isfinite(y[i]) ? fabs((double)y[i] - ref[i]) : INFINITY;
            if (e > worst) { worst = e; at = i; }
            if ((int)(i % (size_t)hd) >= nr && pass_bad < 0 && memcmp(&y[i], &x[i], 4) != 0) pass_bad = (int64_t)i;
        }
        CHECK(worst <= 1e-5, "rope neox=%d mscale=%g heads=%d hd=%d n_rot=%d: [tok %zu pos %d head %zu dim %zu] got %.9g "
              "want %.9g (abs err %.3g)", neox, mscale, nh, hd, nr, at / ((size_t)nh * hd), pos[at / ((size_t)nh * hd)],
              (at / (size_t)hd) % (size_t)nh, at % (size_t)hd, y[at], ref[at], worst);
        if (nr < hd)
            CHECK(pass_bad < 0, "rope heads=%d hd=%d n_rot=%d: dim past n_rot changed at [%lld]: %.9g was %.9g", nh,
                  hd, nr, (long long)pass_bad, pass_bad < 0 ? 0.0 : y[pass_bad], pass_bad < 0 ? 0.0 : x[pass_bad]);
        CU(cudaFree(dx)); CU(cudaFree(dfreq)); CU(cudaFree(dpos));
        free(fac); free(freq); free(x); free(ref); free(y);
    }
}

/* tcu_rope_kv with the per-head q/k RMSNorm inside (Qwen3, Gemma 3) against cpu_rmsnorm over each head then
 * cpu_rope_ms (NEOX and normal pairing, partial rotation, head dims 64/128/256, 1 and 5 tokens), q and k to 2e-6 of
 * the largest value, the f16 cache rows to one f16 step (a kernel that skipped the norm would fail: inputs in
 * [-30, 30], weights in [0.5, 2]). */
static void test_rope_norm(void) {
    static const struct { int nh, nkv, hd, n_rot, neox, n; } cs[] = {
        {8, 4, 256, 256, 1, 1}, {8, 4, 256, 256, 1, 5}, {32, 8, 128, 128, 1, 5}, {16, 8, 128, 64, 1, 1},
        {9, 3, 64, 64, 0, 5}, {4, 1, 64, 32, 1, 1}};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        const int nh = cs[c].nh, nkv = cs[c].nkv, hd = cs[c].hd, nr = cs[c].n_rot, neox = cs[c].neox, n = cs[c].n;
        const size_t nq = (size_t)n * nh * hd, nk = (size_t)n * nkv * hd, row = (size_t)nkv * hd;
        int32_t pos[5] = {7, 300, 4095, 12, 65000};
        float *q = xmalloc(4 * nq), *k = xmalloc(4 * nk), *v = xmalloc(4 * nk), *qr = xmalloc(4 * nq), *kr = xmalloc(4 * nk);
        float *qw = xmalloc(4 * (size_t)hd), *kw = xmalloc(4 * (size_t)hd), *freq = xmalloc(4 * (size_t)(nr / 2 + 1));
        float *gq = xmalloc(4 * nq), *gk = xmalloc(4 * nk);
        uint16_t *kc = xmalloc(2 * (size_t)n * row), *vc = xmalloc(2 * (size_t)n * row);
        fill_f32(q, nq, -30.0f, 30.0f);
        fill_f32(k, nk, -30.0f, 30.0f);
        fill_f32(v, nk, -2.0f, 2.0f);
        fill_f32(qw, (size_t)hd, 0.5f, 2.0f);
        fill_f32(kw, (size_t)hd, 0.5f, 2.0f);
        cpu_rope_freqs(freq, nr, 1000000.0, 1.0, NULL);
        freq[nr / 2] = 0.0f;
        cpu_rmsnorm(q, qw, 1e-6f, n * nh, hd, qr);
        cpu_rmsnorm(k, kw, 1e-6f, n * nkv, hd, kr);
        cpu_rope_ms(qr, n, nh, hd, nr, pos, freq, neox, 1.0f);
        cpu_rope_ms(kr, n, nkv, hd, nr, pos, freq, neox, 1.0f);
        float *dq = dmalloc(4 * nq), *dk = dmalloc(4 * nk), *dv = dmalloc(4 * nk), *dqw = dmalloc(4 * (size_t)hd),
              *dkw = dmalloc(4 * (size_t)hd), *dfreq = dmalloc(4 * (size_t)(nr / 2 + 1));
        uint16_t *dkc = dmalloc(2 * (size_t)n * row), *dvc = dmalloc(2 * (size_t)n * row);
        int32_t *dslot = dmalloc(sizeof(int32_t) * 5), *dpos = dmalloc(sizeof(int32_t) * 5);
        const int32_t slot[5] = {0, 1, 2, 3, 4};
        h2d(dq, q, 4 * nq); h2d(dk, k, 4 * nk); h2d(dv, v, 4 * nk); h2d(dqw, qw, 4 * (size_t)hd); h2d(dkw, kw, 4 * (size_t)hd);
        h2d(dfreq, freq, 4 * (size_t)(nr / 2 + 1)); h2d(dslot, slot, sizeof slot); h2d(dpos, pos, sizeof pos);
        CHECK(tcu_rope_kv_norm_ok(hd), "rope_kv norm: hd %d not taken", hd);
        tcu_rope_kv(dq, dk, dv, n, nh, nkv, hd, nr, neox, 1.0f, dpos, dslot, dfreq, NULL, dqw, dkw, 1e-6f, dkc, dvc, g_st);
        SYNC();
        d2h(gq, dq, 4 * nq); d2h(gk, dk, 4 * nk); d2h(kc, dkc, 2 * (size_t)n * row); d2h(vc, dvc, 2 * (size_t)n * row);
        double wq = 0, wk = 0, mx = 0;
        for (size_t i = 0; i < nq; i++) wq = fmax(wq, isfinite(gq[i]) ? fabs((double)gq[i] - qr[i]) : INFINITY), mx = fmax(mx, fabs(qr[i]));
        for (size_t i = 0; i < nk; i++) wk = fmax(wk, isfinite(gk[i]) ? fabs((double)gk[i] - kr[i]) : INFINITY), mx = fmax(mx, fabs(kr[i]));
        size_t bad16 = 0;
        for (size_t i = 0; i < nk; i++) {
            /* f16 bits to an order-preserving key (sign-magnitude to offset), then one step apart at most */
            const uint16_t want = tern_fp32_to_fp16(kr[i]);
            const int ka = kc[i] & 0x8000 ? 0x8000 - (kc[i] & 0x7fff) : 0x8000 + kc[i];
            const int kb = want & 0x8000 ? 0x8000 - (want & 0x7fff) : 0x8000 + want;
            const int dk16 = abs(ka - kb);
            bad16 += dk16 > 1 || vc[i] != tern_fp32_to_fp16(v[i]);
        }
        CHECK(wq <= 2e-6 * mx && wk <= 2e-6 * mx && bad16 == 0,
              "rope_kv norm nh=%d/%d hd=%d n_rot=%d neox=%d n=%d: q err %.3g, k err %.3g (max %.3g), %zu cache elements off",
              nh, nkv, hd, nr, neox, n, wq, wk, mx, bad16);
        free(q); free(k); free(v); free(qr); free(kr); free(qw); free(kw); free(freq); free(gq); free(gk); free(kc); free(vc);
        CU(cudaFree(dq)); CU(cudaFree(dk)); CU(cudaFree(dv)); CU(cudaFree(dqw)); CU(cudaFree(dkw)); CU(cudaFree(dfreq));
        CU(cudaFree(dkc)); CU(cudaFree(dvc)); CU(cudaFree(dslot)); CU(cudaFree(dpos));
    }
}

/* ---- KV write ------------------------------------------------------------------------------------- */

/* Values whose f16 rounding is a tie or an edge (exercise round-to-nearest-even). */
static const float k_f16_edges[] = {
    1.00048828125f,   /* 1 + 2^-11: tie -> 1 (even) */
    1.00146484375f,   /* 1 + 3*2^-11: tie -> 1 + 2^-9 */
    -2049.0f,         /* tie -> -2048 */
    2051.0f,          /* tie -> 2052 */
    5.9604645e-08f,   /* 2^-24: smallest subnormal */
    2.9802322e-08f,   /* 2^-25: tie -> 0 */
    8.9406967e-08f,   /* 3*2^-25: tie -> 2*2^-24 */
    6.0975552e-05f,   /* just below the smallest normal */
    65504.0f, -65519.0f,
};

static void test_kv_write(void) {
    static const struct { int n, row, n_ctx; } cs[] = {{5, 1024, 300}, {1, 576, 64}, {4, 320, 4100}, {7, 64, 17}};
    for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
        const int n = cs[c].n, row = cs[c].row, n_ctx = cs[c].n_ctx;
        int32_t pos[8];
        /* distinct positions: the ends of the cache, then random ones not yet taken */
        pos[0] = n_ctx - 1;
        for (int t = 1; t < n; t++) {
            int ok;
            do {
                pos[t] = t == 1 ? 0 : (int32_t)(rnd64() % (uint64_t)n_ctx);
                ok = 1;
                for (int u = 0; u < t; u++) ok &= pos[u] != pos[t];
            } while (!ok);
        }
        const size_t ne = (size_t)n * row, nc = (size_t)n_ctx * row;
        float *k = xmalloc(4 * ne), *v = xmalloc(4 * ne);
        fill_f32(k, ne, -4.0f, 4.0f);
        fill_f32(v, ne, -4.0f, 4.0f);
        for (size_t i = 0; i < sizeof(k_f16_edges) / sizeof(k_f16_edges[0]) && i < ne; i++) {
            k[i * 7 % ne] = k_f16_edges[i];
            v[i * 11 % ne] = -k_f16_edges[i];
        }
        uint16_t *kc = xmalloc(2 * nc), *vc = xmalloc(2 * nc);
        float *dk = dmalloc(4 * ne), *dv = dmalloc(4 * ne);
        uint16_t *dkc = dmalloc(2 * nc), *dvc = dmalloc(2 * nc);
        int32_t *dpos = dmalloc(sizeof(int32_t) * (size_t)n);
        h2d(dk, k, 4 * ne);
        h2d(dv, v, 4 * ne);
        h2d(dpos, pos, sizeof(int32_t) * (size_t)n);
        poison(dkc, 2 * nc); /* sentinel 0xFFFF in every row */
        poison(dvc, 2 * nc);
        tcu_kv_write(dk, dv, dkc, dvc, n, row, dpos, g_st);
        SYNC();
        d2h(kc, dkc, 2 * nc);
        d2h(vc, dvc, 2 * nc);
        size_t wrong = 0, touched = 0;
        int64_t w_at = -1, t_at = -1;
        for (int r = 0; r < n_ctx; r++) {
            int t = -1;
            for (int u = 0; u < n; u++)
                if (pos[u] == r) t = u;
            for (int i = 0; i < row; i++) {
                size_t ci = (size_t)r * row + i;
                if (t >= 0) {
                    size_t xi = (size_t)t * row + i;
                    if (kc[ci] != tern_fp32_to_fp16(k[xi]) || vc[ci] != tern_fp32_to_fp16(v[xi])) {
                        if (!wrong) w_at = (int64_t)ci;
                        wrong++;
                    }
                } else if (kc[ci] != 0xFFFF || vc[ci] != 0xFFFF) {
                    if (!touched) t_at = (int64_t)ci;
                    touched++;
                }
            }
        }
        CHECK(wrong == 0, "kv_write n=%d row=%d n_ctx=%d: %zu written elements differ from f16 RNE; first cache "
              "row %lld col %lld", n, row, n_ctx, wrong, (long long)(w_at / row), (long long)(w_at % row));
        CHECK(touched == 0, "kv_write n=%d row=%d n_ctx=%d: %zu elements of rows not in pos were modified; first "
              "row %lld col %lld", n, row, n_ctx, touched, (long long)(t_at / row), (long long)(t_at % row));
        CU(cudaFree(dk)); CU(cudaFree(dv)); CU(cudaFree(dkc)); CU(cudaFree(dvc)); CU(cudaFree(dpos));
        free(k); free(v); free(kc); free(vc);
    }
}

/* ---- SwiGLU, add, add_bias, f32_to_f16, pos_add ------------------------------------------------- */

static void test_swiglu(void) {
    static const int64_t ns[] = {1, 7, 4096, 14336 * 5 + 3, 14336 * 64, (1 << 20) + 1};
    static const float specials[] = {0.0f, -0.0f, 20.0f, -20.0f, -30.0f, 40.0f, 1e-6f, -1e-6f};
    for (size_t cv = 0; cv < 2 * sizeof(ns) / sizeof(ns[0]); cv++) { /* act 0 SwiGLU, then 1 GeGLU (GELU tanh) */
        const size_t c = cv % (sizeof(ns) / sizeof(ns[0]));
        const int act = cv >= sizeof(ns) / sizeof(ns[0]);
        const int64_t n = ns[c];
        float *g = xmalloc(4 * (size_t)n), *u = xmalloc(4 * (size_t)n), *ref = xmalloc(4 * (size_t)n),
              *y = xmalloc(4 * (size_t)n);
        uint16_t *y16 = xmalloc(2 * (size_t)n);
        fill_f32(g, (size_t)n, -12.0f, 12.0f);
        fill_f32(u, (size_t)n, -2.0f, 2.0f);
        for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]) && (int64_t)i < n; i++)
            g[(size_t)(i * 977) % (size_t)n] = specials[i];
        memcpy(ref, g, 4 * (size_t)n);
        if (act) cpu_geglu(ref, u, n);
        else cpu_swiglu(ref, u, n);
        float *dg = dmalloc(4 * (size_t)n), *du = dmalloc(4 * (size_t)n);
        uint16_t *dg16 = dmalloc(2 * (size_t)n);
        h2d(du, u, 4 * (size_t)n);
        for (int with16 = 0; with16 < 2; with16++) {
            h2d(dg, g, 4 * (size_t)n);
            poison(dg16, 2 * (size_t)n);
            tcu_glu(act, dg, du, n, with16 ? dg16 : NULL, g_st);
            SYNC();
            d2h(y, dg, 4 * (size_t)n);
            size_t at;
            double e = worst_rel(y, ref, (size_t)n, &at);
            if (act) { /* GELU's 1 + tanh cancels for negative g: the error against |g u| there (tanh's ulps) */
                e = 0;
                for (size_t i = 0; i < (size_t)n; i++) {
                    const double d = isfinite(y[i]) ? fabs((double)y[i] - ref[i]) : INFINITY;
                    const double r = d / (fabs((double)ref[i]) + 0.05 * fabs((double)g[i] * u[i]) + 1e-30);
                    if (r > e) e = r, at = i;
                }
            }
            CHECK(e <= (act ? 2e-6 : 1e-6), "glu act=%d n=%lld %s: [%zu] g=%.9g u=%.9g got %.9g want %.9g (rel %.3g)", act,
                  (long long)n,
                  with16 ? "with g16" : "no g16", at, g[at], u[at], y[at], ref[at], e);
            if (with16) {
                d2h(y16, dg16, 2 * (size_t)n);
                int64_t bad = -1;
                for (int64_t i = 0; i < n && bad < 0; i++)
                    if (y16[i] != tern_fp32_to_fp16(y[i])) bad = i;
                CHECK(bad < 0, "swiglu n=%lld: g16[%lld]=0x%04x, f16(g)=0x%04x (g=%.9g)", (long long)n,
                      (long long)bad, bad < 0 ? 0 : y16[bad], bad < 0 ? 0 : tern_fp32_to_fp16(y[bad]),
                      bad < 0 ? 0.0 : y[bad]);
                /* tcu_glu_f16: the same g16 bytes, g left as it was (the f16 order's decode passes) */
                uint16_t *z16 = xmalloc(2 * (size_t)n);
                float *gz = xmalloc(4 * (size_t)n);
                h2d(dg, g, 4 * (size_t)n);
                poison(dg16, 2 * (size_t)n);
                tcu_glu_f16(act, dg, du, n, dg16, g_st);
                SYNC();
                d2h(z16, dg16, 2 * (size_t)n);
                d2h(gz, dg, 4 * (size_t)n);
                CHECK(!memcmp(z16, y16, 2 * (size_t)n), "glu_f16 act=%d n=%lld: g16 differs from tcu_glu's", act,
                      (long long)n);
                CHECK(!memcmp(gz, g, 4 * (size_t)n), "glu_f16 act=%d n=%lld: g was written", act, (long long)n);
                free(z16);
                free(gz);
            }
        }
        CU(cudaFree(dg)); CU(cudaFree(du)); CU(cudaFree(dg16));
        free(g); free(u); free(ref); free(y); free(y16);
    }
}

/* tcu_rmsnorm_rows (q/k head norm, post-norms) against cpu_rmsnorm (double sum), in place; a row's bits do not depend
 * on the number of rows; tcu_scale and tcu_softcap against their float formulas. */
static void test_recipe_ops(void) {
    static const struct { int rows, dim; } cs[] = {{1, 128}, {8 * 16, 128}, {64 * 16, 256}, {3, 2560}, {5, 5376},
                                                   {17, 96}, {1, 640}};
    for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
        const int rows = cs[c].rows, dim = cs[c].dim;
        const size_t ne = (size_t)rows * dim;
        float *x = xmalloc(4 * ne), *w = xmalloc(4 * (size_t)dim), *ref = xmalloc(4 * ne), *y = xmalloc(4 * ne),
              *y1 = xmalloc(4 * (size_t)dim);
        fill_f32(x, ne, -40.0f, 40.0f);
        fill_f32(w, (size_t)dim, 0.5f, 2.0f);
        cpu_rmsnorm(x, w, 1e-6f, rows, dim, ref);
        float *dx = dmalloc(4 * ne), *dw = dmalloc(4 * (size_t)dim);
        h2d(dx, x, 4 * ne);
        h2d(dw, w, 4 * (size_t)dim);
        tcu_rmsnorm_rows(dx, dw, 1e-6f, rows, dim, g_st);
        SYNC();
        d2h(y, dx, 4 * ne);
        size_t at;
        const double e = worst_rel(y, ref, ne, &at);
        CHECK(e <= 2e-6, "rmsnorm_rows rows=%d dim=%d: [%zu] got %.9g want %.9g (rel %.3g)", rows, dim, at, y[at], ref[at], e);
        h2d(dx, x + (size_t)(rows - 1) * dim, 4 * (size_t)dim); /* the last row alone: the same bits */
        tcu_rmsnorm_rows(dx, dw, 1e-6f, 1, dim, g_st);
        SYNC();
        d2h(y1, dx, 4 * (size_t)dim);
        CHECK(!memcmp(y1, y + (size_t)(rows - 1) * dim, 4 * (size_t)dim), "rmsnorm_rows rows=%d dim=%d: a row alone differs",
              rows, dim);
        /* scale and softcap */
        h2d(dx, x, 4 * ne);
        tcu_scale(dx, (int64_t)ne, 25.298221f, g_st);
        SYNC();
        d2h(y, dx, 4 * ne);
        size_t bad = ne;
        for (size_t i = 0; i < ne && bad == ne; i++)
            if (y[i] != x[i] * 25.298221f) bad = i;
        CHECK(bad == ne, "scale n=%zu: [%zu] got %.9g want %.9g", ne, bad, bad < ne ? y[bad] : 0.0, bad < ne ? x[bad] * 25.298221f : 0.0);
        h2d(dx, x, 4 * ne);
        tcu_softcap(dx, (int64_t)ne, 30.0f, g_st);
        SYNC();
        d2h(y, dx, 4 * ne);
        for (size_t i = 0; i < ne; i++) ref[i] = 30.0f * tanhf(x[i] / 30.0f);
        const double es = worst_rel(y, ref, ne, &at);
        CHECK(es <= 1e-6, "softcap n=%zu: [%zu] x=%.9g got %.9g want %.9g (rel %.3g)", ne, at, x[at], y[at], ref[at], es);
        CU(cudaFree(dx)); CU(cudaFree(dw));
        free(x); free(w); free(ref); free(y); free(y1);
    }
}

static void test_add(void) {
    static const int64_t ns[] = {1, 5, 4096, 1000003};
    for (size_t c = 0; c < sizeof(ns) / sizeof(ns[0]); c++) {
        const size_t n = (size_t)ns[c];
        float *y = xmalloc(4 * n), *x = xmalloc(4 * n), *ref = xmalloc(4 * n), *got = xmalloc(4 * n);
        fill_f32(y, n, -100.0f, 100.0f);
        fill_f32(x, n, -1.0f, 1.0f);
        memcpy(ref, y, 4 * n);
        cpu_add(ref, x, (int64_t)n);
        float *dy = dmalloc(4 * n), *dx = dmalloc(4 * n);
        h2d(dy, y, 4 * n);
        h2d(dx, x, 4 * n);
        tcu_add(dy, dx, (int64_t)n, g_st);
        SYNC();
        d2h(got, dy, 4 * n);
        int64_t bad = first_diff(got, ref, n, 4);
        CHECK(bad < 0, "add n=%zu: [%lld] got %.9g want %.9g", n, (long long)bad, bad < 0 ? 0.0 : got[bad],
              bad < 0 ? 0.0 : ref[bad]);
        CU(cudaFree(dy)); CU(cudaFree(dx));
        free(y); free(x); free(ref); free(got);
    }
    static const struct { int n, dim; } bs[] = {{1, 4096}, {3, 1000}, {7, 576}, {64, 14336}, {5, 1}};
    for (size_t c = 0; c < sizeof(bs) / sizeof(bs[0]); c++) {
        const int n = bs[c].n, dim = bs[c].dim;
        const size_t ne = (size_t)n * dim;
        float *y = xmalloc(4 * ne), *b = xmalloc(4 * (size_t)dim), *ref = xmalloc(4 * ne), *got = xmalloc(4 * ne);
        fill_f32(y, ne, -10.0f, 10.0f);
        fill_f32(b, (size_t)dim, -1.0f, 1.0f);
        for (size_t i = 0; i < ne; i++) ref[i] = y[i] + b[i % (size_t)dim];
        float *dy = dmalloc(4 * ne), *db = dmalloc(4 * (size_t)dim);
        h2d(dy, y, 4 * ne);
        h2d(db, b, 4 * (size_t)dim);
        tcu_add_bias(dy, db, n, dim, g_st);
        SYNC();
        d2h(got, dy, 4 * ne);
        int64_t bad = first_diff(got, ref, ne, 4);
        CHECK(bad < 0, "add_bias n=%d dim=%d: [%lld] got %.9g want %.9g", n, dim, (long long)bad,
              bad < 0 ? 0.0 : got[bad], bad < 0 ? 0.0 : ref[bad]);
        CU(cudaFree(dy)); CU(cudaFree(db));
        free(y); free(b); free(ref); free(got);
    }
}

static void test_f32_to_f16(void) {
    const uint32_t special_bits[] = {
        0x00000000u, 0x80000000u,              /* +-0 */
        0x7f800000u, 0xff800000u,              /* +-inf */
        0x7fc00000u, 0xffc00000u, 0x7f800001u, /* NaN: quiet, negative, signalling (must not become inf) */
        0x7fbfffffu, 0x7f802000u,              /* NaNs whose top 10 mantissa bits are 0 / payload */
        0x00000001u, 0x807fffffu,              /* f32 subnormals -> +-0 */
        0x7f7fffffu, 0xff7fffffu,              /* +-FLT_MAX -> +-inf */
        0x00800000u,                           /* FLT_MIN -> 0 */
    };
    const float special_f[] = {
        65504.0f, 65519.996f, 65520.0f, 70000.0f, -70000.0f, 1e10f, -65505.0f, /* max, rounds to max, overflow */
        6.1035156e-05f, 6.0975552e-05f, 3.0517578e-05f, 1e-5f, -1e-6f,        /* normal/subnormal boundary */
        5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f, 8.9406967e-08f, 1e-8f, -1e-8f, /* 2^-24, ties */
        1.00048828125f, 1.00146484375f, 2049.0f, 2051.0f, -0.333333343f, 3.14159274f, 1.0f, -1.0f};
    const size_t n_sp = sizeof(special_bits) / 4 + sizeof(special_f) / 4;
    const size_t n = 300007;
    float *x = xmalloc(4 * n);
    size_t i = 0;
    for (size_t j = 0; j < sizeof(special_bits) / 4; j++) x[i++] = bits_f32(special_bits[j]);
    for (size_t j = 0; j < sizeof(special_f) / 4; j++) x[i++] = special_f[j];
    for (; i < n; i++) {
        uint32_t r = (uint32_t)rnd64();
        switch (i % 4) {
        case 0: x[i] = bits_f32(r); break; /* any bit pattern (NaNs included) */
        case 1: {                          /* exponents around the f16 range: subnormals .. overflow */
            uint32_t e = 127 - 27 + (uint32_t)(rnd64() % 46);
            x[i] = bits_f32((r & 0x807fffffu) | (e << 23));
            break;
        }
        case 2: { /* f16 ties: a random f16 value plus exactly half its ulp (or an exact f16 value) */
            uint32_t e = 127 - 14 + (uint32_t)(rnd64() % 30);
            x[i] = bits_f32((r & 0x807fe000u) | (e << 23) | ((r >> 7) & 1 ? 0x1000u : 0));
            break;
        }
        default: x[i] = urand(-8.0f, 8.0f); break;
        }
    }
    uint16_t *y = xmalloc(2 * n), *y0 = xmalloc(2 * n);
    float *dx = dmalloc(4 * n);
    uint16_t *dy = dmalloc(2 * n);
    h2d(dx, x, 4 * n);
    /* two runs: poison 0xFFFF (NaN) catches unwritten non-NaN outputs, poison 0x0000 unwritten NaN ones */
    poison(dy, 2 * n);
    tcu_f32_to_f16(dx, dy, (int64_t)n, g_st);
    SYNC();
    d2h(y, dy, 2 * n);
    CU(cudaMemsetAsync(dy, 0x00, 2 * n, g_st));
    tcu_f32_to_f16(dx, dy, (int64_t)n, g_st);
    SYNC();
    d2h(y0, dy, 2 * n);
    size_t bad = 0, bad_at = 0, nan_bad = 0, nan_at = 0, n_nan = 0;
    for (size_t k = 0; k < n; k++) {
        if (isnan(x[k])) {
            n_nan++;
            if (!f16_isnan(y[k]) || !f16_isnan(y0[k])) { if (!nan_bad) nan_at = k; nan_bad++; }
        } else {
            uint16_t want = tern_fp32_to_fp16(x[k]);
            if (y[k] != want || y0[k] != want) { if (!bad) bad_at = k; bad++; }
        }
    }
    CHECK(bad == 0, "f32_to_f16: %zu of %zu differ from RNE; first [%zu] x=%.9g (0x%08x) got 0x%04x/0x%04x want "
          "0x%04x (specials are the first %zu)", bad, n, bad_at, x[bad_at], f32_bits(x[bad_at]), y[bad_at],
          y0[bad_at], tern_fp32_to_fp16(x[bad_at]), n_sp);
    CHECK(nan_bad == 0, "f32_to_f16: %zu of %zu NaN inputs not NaN; first [%zu] x=0x%08x got 0x%04x/0x%04x",
          nan_bad, n_nan, nan_at, f32_bits(x[nan_at]), y[nan_at], y0[nan_at]);
    CU(cudaFree(dx)); CU(cudaFree(dy));
    free(x); free(y); free(y0);
}

static void test_pos_add(void) {
    static const struct { int n, delta; } cs[] = {{1, 1}, {7, 1}, {7, -3}, {5, 100}, {3, 0}};
    int32_t *dp = dmalloc(sizeof(int32_t) * 8);
    for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
        const int n = cs[c].n;
        int32_t p[8], want[8], got[8];
        for (int i = 0; i < 8; i++) p[i] = (int32_t)(100 + rnd64() % 100000);
        for (int i = 0; i < 8; i++) want[i] = i < n ? p[i] + cs[c].delta : p[i];
        h2d(dp, p, sizeof(p));
        tcu_pos_add(dp, n, cs[c].delta, g_st);
        SYNC();
        d2h(got, dp, sizeof(got));
        int64_t bad = first_diff(got, want, 8, 4);
        CHECK(bad < 0, "pos_add n=%d delta=%d: pos[%lld]=%d want %d (entries >= n must stay)", n, cs[c].delta,
              (long long)bad, bad < 0 ? 0 : got[bad], bad < 0 ? 0 : want[bad]);
    }
    CU(cudaFree(dp));
}

/* ---- argmax ---------------------------------------------------------------------------------------- */

static uint64_t *g_keys; /* tcu_argmax's key scratch (TCU_PASS_MAX words, zero) */

static void argmax_case(const char *name, const float *x, int n, float *dx, int32_t *dout) {
    int32_t got = -7;
    h2d(dx, x, 4 * (size_t)n);
    poison(dout, sizeof(int32_t));
    tcu_argmax(dx, n, dout, g_keys, g_st);
    SYNC();
    d2h(&got, dout, sizeof(got));
    int32_t want = tern_argmax(x, n);
    CHECK(got == want, "argmax %s n=%d: got %d want %d (x[got]=%.9g x[want]=%.9g)", name, n, got, want,
          got >= 0 && got < n ? x[got] : NAN, x[want]);
}

static void test_argmax(void) {
    g_keys = dmalloc(sizeof(uint64_t) * TCU_PASS_MAX);
    CU(cudaMemset(g_keys, 0, sizeof(uint64_t) * TCU_PASS_MAX));
    const int max_n = 262144 + 37;
    float *x = xmalloc(4 * (size_t)max_n);
    float *dx = dmalloc(4 * (size_t)max_n);
    int32_t *dout = dmalloc(sizeof(int32_t));
    static const int sizes[] = {1, 2, 31, 33, 1000, 32000, 49152, 128256, 151936, 262144 + 37};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        const int n = sizes[s];
        fill_f32(x, (size_t)n, -30.0f, 30.0f);
        argmax_case("random", x, n, dx, dout);
        if (n >= 2) { /* ties: the same max at several places, far apart */
            float mx = 31.0f;
            int a = (int)(rnd64() % (uint64_t)n), b = (int)(rnd64() % (uint64_t)n);
            x[a] = mx; x[b] = mx; x[n - 1] = mx;
            argmax_case("ties", x, n, dx, dout);
            /* NaN entries everywhere, including before and at the first maximum */
            for (int i = 0; i < n; i += 3) x[i] = NAN;
            x[0] = NAN;
            x[a] = NAN;
            argmax_case("ties+NaN", x, n, dx, dout);
        }
        /* maximum at the last index only */
        fill_f32(x, (size_t)n, -1.0f, 1.0f);
        x[n - 1] = 2.0f;
        argmax_case("max last", x, n, dx, dout);
        /* all NaN -> 0, as tern_argmax */
        for (int i = 0; i < n; i++) x[i] = (i & 1) ? -NAN : NAN;
        argmax_case("all NaN", x, n, dx, dout);
        /* NaN first, then all -inf: the first non-NaN */
        x[0] = NAN;
        for (int i = 1; i < n; i++) x[i] = -INFINITY;
        argmax_case("NaN then -inf", x, n, dx, dout);
        /* all equal: lowest index */
        for (int i = 0; i < n; i++) x[i] = -5.0f;
        argmax_case("all equal", x, n, dx, dout);
        /* +inf and -0/+0 mixtures */
        fill_f32(x, (size_t)n, -1.0f, 0.0f);
        x[n / 2] = 0.0f;
        x[n - 1] = -0.0f; /* -0 == +0: the lower index wins */
        argmax_case("+-0 tie", x, n, dx, dout);
        x[n - 1] = INFINITY;
        argmax_case("+inf", x, n, dx, dout);
    }
    CU(cudaFree(dx)); CU(cudaFree(dout));
    free(x);
    /* tcu_argmax_rows: 1..16, 24, 48 and 64 rows (ld > n: padding that must not be read), each row its own pattern
     * (random, ties, NaN, all NaN, max last), every row == tern_argmax of that row; twice in a row (the per-row keys
     * are cleared for the next call); n up to Llama 3's vocabulary (a grid of fewer CTAs a row as rows grow) */
    static const int rn[] = {1, 33, 49152, 128256};
    for (size_t s = 0; s < sizeof(rn) / sizeof(rn[0]); s++) {
        const int n = rn[s], ld = n + 5;
        for (int rows = 1; rows <= TCU_PASS_MAX; rows = rows < TCU_MULTI_MAX ? rows + 1 : rows == TCU_MULTI_MAX ? 24
                                                                                         : rows == 24 ? 48 : rows + 16) {
            if (n == 128256 && rows > 2 && rows < 48) continue; /* the large rows at 1, 2, 48 and 64 */
            float *xr = xmalloc(4 * (size_t)ld * rows);
            float *dxr = dmalloc(4 * (size_t)ld * rows);
            int32_t *dids = dmalloc(sizeof(int32_t) * TCU_PASS_MAX), got[TCU_PASS_MAX];
            for (int r = 0; r < rows; r++) {
                float *row = xr + (size_t)r * ld;
                fill_f32(row, (size_t)ld, -30.0f, 30.0f);
                row[n] = 1e30f; /* padding: larger than any row value */
                const int kind = (r + (int)s) % 5;
                if (kind == 1 && n >= 2) { row[n - 1] = 31.0f; row[(int)(rnd64() % (uint64_t)n)] = 31.0f; }
                if (kind == 2) for (int i = 0; i < n; i += 3) row[i] = NAN;
                if (kind == 3) for (int i = 0; i < n; i++) row[i] = NAN;
                if (kind == 4) row[n - 1] = 40.0f;
            }
            h2d(dxr, xr, 4 * (size_t)ld * rows);
            for (int rep = 0; rep < 2; rep++) {
                poison(dids, sizeof(int32_t) * TCU_PASS_MAX);
                tcu_argmax_rows(dxr, n, rows, (size_t)ld, dids, g_keys, g_st);
                SYNC();
                d2h(got, dids, sizeof(int32_t) * (size_t)rows);
                int ok = 1;
                for (int r = 0; r < rows; r++) ok &= got[r] == tern_argmax(xr + (size_t)r * ld, n);
                CHECK(ok, "argmax_rows n=%d rows=%d call %d: a row differs from tern_argmax", n, rows, rep);
            }
            CU(cudaFree(dxr)); CU(cudaFree(dids));
            free(xr);
        }
    }
    /* two contexts at once: argmaxes of different rows on two streams, each with its own keys buffer, in
     * flight together (a device-wide key word would mix their maxima), 40 times */
    {
        const int n = 128256;
        float *xa = xmalloc(4 * (size_t)n), *xb = xmalloc(4 * (size_t)n);
        fill_f32(xa, (size_t)n, -30.0f, 30.0f);
        fill_f32(xb, (size_t)n, -30.0f, 30.0f);
        xa[7] = 50.0f;     /* far apart maxima: a mixed-up key gives the other row's index */
        xb[n - 9] = 60.0f;
        float *da = dmalloc(4 * (size_t)n), *db = dmalloc(4 * (size_t)n);
        h2d(da, xa, 4 * (size_t)n);
        h2d(db, xb, 4 * (size_t)n);
        uint64_t *kb = dmalloc(sizeof(uint64_t) * TCU_MULTI_MAX);
        CU(cudaMemset(kb, 0, sizeof(uint64_t) * TCU_MULTI_MAX));
        int32_t *oa = dmalloc(sizeof(int32_t) * 40), *ob = dmalloc(sizeof(int32_t) * 40), ha[40], hb[40];
        cudaStream_t s2;
        CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
        for (int it = 0; it < 40; it++) {
            tcu_argmax(da, n, oa + it, g_keys, g_st);
            tcu_argmax(db, n, ob + it, kb, s2);
        }
        SYNC();
        CU(cudaStreamSynchronize(s2));
        d2h(ha, oa, sizeof ha);
        d2h(hb, ob, sizeof hb);
        int ok = 1;
        for (int it = 0; it < 40; it++) ok &= ha[it] == 7 && hb[it] == n - 9;
        CHECK(ok, "argmax on two streams with their own keys: a result was mixed up");
        CU(cudaStreamDestroy(s2));
        CU(cudaFree(da)); CU(cudaFree(db)); CU(cudaFree(kb)); CU(cudaFree(oa)); CU(cudaFree(ob));
        free(xa); free(xb);
    }
}

/* ---- timing ------------------------------------------------------------------------------------- */

#define BENCH_ITERS 20
#define BENCH_WARM 3

typedef struct bench bench;
struct bench {
    void (*run)(bench *b, int iter);
    int t, nc;
    int64_t n_in, n_out;
    size_t rb;
    uint8_t **w;
    float *x, *y;
    uint16_t *w16, *x16;
    int n;
    tcu_blas *blas;
    int mode; /* dequant+gemm bench: 0 dequant, 1 gemm, 2 both */
};

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
static float bench_median_ms(bench *b) {
    cudaEvent_t e0[BENCH_ITERS], e1[BENCH_ITERS];
    for (int i = 0; i < BENCH_ITERS; i++) { CU(cudaEventCreate(&e0[i])); CU(cudaEventCreate(&e1[i])); }
    for (int i = 0; i < BENCH_WARM; i++) b->run(b, i);
    SYNC();
    for (int i = 0; i < BENCH_ITERS; i++) {
        CU(cudaEventRecord(e0[i], g_st));
        b->run(b, BENCH_WARM + i);
        CU(cudaEventRecord(e1[i], g_st));
    }
    SYNC();
    float ms[BENCH_ITERS];
    for (int i = 0; i < BENCH_ITERS; i++) {
        CU(cudaEventElapsedTime(&ms[i], e0[i], e1[i]));
        CU(cudaEventDestroy(e0[i]));
        CU(cudaEventDestroy(e1[i]));
    }
    qsort(ms, BENCH_ITERS, sizeof(float), cmp_float);
    return 0.5f * (ms[BENCH_ITERS / 2 - 1] + ms[BENCH_ITERS / 2]);
}

static void run_gemv(bench *b, int iter) {
    tcu_gemv(b->t, b->w[iter % b->nc], b->rb, b->n_in, b->n_out, b->x, b->y, g_st);
}
static void run_dq_gemm(bench *b, int iter) {
    if (b->mode != 1) tcu_dequant_f16(b->t, b->w[iter % b->nc], b->rb, b->n_in, b->n_out, b->w16, g_st);
    if (b->mode != 0) (void)tcu_gemm_f16(b->blas, b->w16, b->x16, b->y, b->n, b->n_in, b->n_out, g_st);
}

/* nc copies of one random weight, at least 4x the L2 in total (MEASURE.md: caches lie). */
static uint8_t **bench_weights(enum tern_type t, int64_t n_in, int64_t n_out, size_t l2, int *nc_out, uint8_t **host) {
    const size_t bytes = tern_type_row_size(t, n_in) * (size_t)n_out;
    int nc = (int)((4 * l2 + bytes - 1) / bytes);
    if (nc < 2) nc = 2;
    uint8_t *h = xmalloc(bytes);
    gen_weight(t, n_in, n_out, h);
    uint8_t **w = xmalloc(sizeof(uint8_t *) * (size_t)nc);
    for (int i = 0; i < nc; i++) {
        w[i] = dmalloc(bytes);
        if (i == 0) h2d(w[0], h, bytes);
        else CU(cudaMemcpyAsync(w[i], w[0], bytes, cudaMemcpyDeviceToDevice, g_st));
    }
    SYNC();
    *nc_out = nc;
    if (host) *host = h;
    else free(h);
    return w;
}
static void free_weights(uint8_t **w, int nc) {
    for (int i = 0; i < nc; i++) CU(cudaFree(w[i]));
    free(w);
}

static void bench_all(tcu_blas *blas) {
    int dev = 0, l2i = 0;
    CU(cudaGetDevice(&dev));
    CU(cudaDeviceGetAttribute(&l2i, cudaDevAttrL2CacheSize, dev));
    const size_t l2 = l2i > 0 ? (size_t)l2i : (size_t)64 << 20;
    printf("timing (median of %d after %d warm-up, cudaEvents; weights rotated over copies >= 4x L2 = %zu MB;"
           " no assertions):\n", BENCH_ITERS, BENCH_WARM, l2 >> 20);
    printf("  %-34s %9s %7s %12s\n", "op", "ms", "copies", "rate");
    static const enum tern_type gt[] = {TERN_TYPE_Q4_0, TERN_TYPE_Q8_0};
    static const int64_t gs[][2] = {{4096, 14336}, {14336, 4096}};
    for (size_t ti = 0; ti < 2; ti++)
        for (size_t si = 0; si < 2; si++) {
            bench b;
            memset(&b, 0, sizeof(b));
            b.run = run_gemv;
            b.t = (int)gt[ti];
            b.n_in = gs[si][0];
            b.n_out = gs[si][1];
            b.rb = tern_type_row_size(gt[ti], b.n_in);
            b.w = bench_weights(gt[ti], b.n_in, b.n_out, l2, &b.nc, NULL);
            float *hx = xmalloc(4 * (size_t)b.n_in);
            fill_f32(hx, (size_t)b.n_in, -1.0f, 1.0f);
            b.x = dmalloc(4 * (size_t)b.n_in);
            b.y = dmalloc(4 * (size_t)b.n_out);
            h2d(b.x, hx, 4 * (size_t)b.n_in);
            float ms = bench_median_ms(&b);
            double bytes = (double)b.rb * b.n_out + 4.0 * b.n_in + 4.0 * b.n_out;
            char nm[64];
            snprintf(nm, sizeof(nm), "gemv %s %lld->%lld", tern_type_name(b.t), (long long)b.n_in,
                     (long long)b.n_out);
            printf("  %-34s %9.4f %7d %8.0f GB/s\n", nm, ms, b.nc, bytes / (ms * 1e-3) / 1e9);
            free_weights(b.w, b.nc);
            CU(cudaFree(b.x)); CU(cudaFree(b.y));
            free(hx);
        }

    /* prefill: dequant_f16 + gemm_f16, n = 512, 4096 -> 14336, Q4_0 */
    {
        bench b;
        memset(&b, 0, sizeof(b));
        b.run = run_dq_gemm;
        b.t = TERN_TYPE_Q4_0;
        b.n_in = 4096;
        b.n_out = 14336;
        b.n = 512;
        b.blas = blas;
        b.rb = tern_type_row_size(TERN_TYPE_Q4_0, b.n_in);
        uint8_t *hw = NULL;
        b.w = bench_weights(TERN_TYPE_Q4_0, b.n_in, b.n_out, l2, &b.nc, &hw);
        const size_t nw = (size_t)b.n_in * b.n_out, nx = (size_t)b.n * b.n_in, ny = (size_t)b.n * b.n_out;
        uint16_t *hx = xmalloc(2 * nx);
        for (size_t i = 0; i < nx; i++) hx[i] = tern_fp32_to_fp16(urand(-1.0f, 1.0f));
        b.w16 = dmalloc(2 * nw);
        b.x16 = dmalloc(2 * nx);
        b.y = dmalloc(4 * ny);
        h2d(b.x16, hx, 2 * nx);
        /* correctness at this shape too: 256 sampled outputs against double on the f16 operands */
        poison(b.w16, 2 * nw);
        poison(b.y, 4 * ny);
        tcu_dequant_f16(b.t, b.w[0], b.rb, b.n_in, b.n_out, b.w16, g_st);
        SYNC();
        int rc = tcu_gemm_f16(blas, b.w16, b.x16, b.y, b.n, b.n_in, b.n_out, g_st);
        SYNC();
        CHECK(rc == 0, "gemm_f16 n=%d %lld->%lld returned %d", b.n, (long long)b.n_in, (long long)b.n_out, rc);
        if (rc == 0) {
            float *hy = xmalloc(4 * ny), *row = xmalloc(4 * (size_t)b.n_in);
            d2h(hy, b.y, 4 * ny);
            double num = 0, den = 0;
            int all_written = 1;
            for (size_t i = 0; i < ny; i++) all_written &= isfinite(hy[i]) != 0;
            for (int s = 0; s < 256; s++) {
                int i = (int)(rnd64() % (uint64_t)b.n);
                int64_t j = (int64_t)(rnd64() % (uint64_t)b.n_out);
                tern_dequantize_row(TERN_TYPE_Q4_0, hw + (size_t)j * b.rb, row, b.n_in);
                double r = 0;
                for (int64_t k = 0; k < b.n_in; k++)
                    r += (double)tern_fp16_to_fp32(tern_fp32_to_fp16(row[k])) *
                         (double)tern_fp16_to_fp32(hx[(size_t)i * b.n_in + k]);
                double g = hy[(size_t)i * b.n_out + j];
                num += (g - r) * (g - r);
                den += r * r;
            }
            double e = sqrt(num / den);
            CHECK(all_written && e < 1e-5, "dequant_f16 -> gemm_f16 q4_0 n=%d %lld->%lld: all finite %d, relative "
                  "L2 of 256 sampled outputs %.3g", b.n, (long long)b.n_in, (long long)b.n_out, all_written, e);
            free(hy);
            free(row);
            const double flop = 2.0 * b.n * (double)b.n_in * (double)b.n_out;
            const double dq_bytes = (double)b.rb * b.n_out + 2.0 * nw;
            b.mode = 0;
            float ms0 = bench_median_ms(&b);
            b.mode = 1;
            float ms1 = bench_median_ms(&b);
            b.mode = 2;
            float ms2 = bench_median_ms(&b);
            printf("  %-34s %9.4f %7d %8.0f GB/s\n", "dequant_f16 q4_0 4096->14336", ms0, b.nc,
                   dq_bytes / (ms0 * 1e-3) / 1e9);
            printf("  %-34s %9.4f %7s %8.1f TFLOP/s\n", "gemm_f16 n=512 4096->14336", ms1, "-",
                   flop / (ms1 * 1e-3) / 1e12);
            printf("  %-34s %9.4f %7d %8.1f TFLOP/s\n", "dequant_f16+gemm_f16 n=512", ms2, b.nc,
                   flop / (ms2 * 1e-3) / 1e12);
        }
        free_weights(b.w, b.nc);
        CU(cudaFree(b.w16)); CU(cudaFree(b.x16)); CU(cudaFree(b.y));
        free(hx);
        free(hw);
    }
}

/* ---- main ---------------------------------------------------------------------------------------- */

int main(void) {
    uint64_t seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)(tern_time_s() * 1e9) ^ ((uint64_t)getpid() << 40);
    const char *se = getenv("GPU_TEST_SEED");
    if (se && *se) seed = strtoull(se, NULL, 0);
    g_rng = seed;
    printf("gpu_ops: seed %llu (GPU_TEST_SEED=%llu replays this run)\n", (unsigned long long)seed,
           (unsigned long long)seed);

    int dev = 0, n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev < 1) {
        printf("gpu_ops: no CUDA device, skipped\ngpu_ops: 0 passed, 0 failed\n");
        return 0;
    }
    CU(cudaSetDevice(dev));
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, dev));
    printf("gpu_ops: device %d: %s, sm_%d%d, %.1f GiB\n", dev, prop.name, prop.major, prop.minor,
           (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024));
    CU(cudaStreamCreate(&g_st));

    char err[256] = {0};
    tcu_blas *blas = tcu_blas_new((size_t)32 << 20, err);
    CHECK(blas != NULL, "tcu_blas_new: %s", err);

    test_type_supported();
    test_weights();
    if (blas) test_gemm(blas);
    test_rmsnorm();
    test_rope();
    test_rope_norm();
    test_kv_write();
    test_swiglu();
    test_recipe_ops();
    test_add();
    test_f32_to_f16();
    test_pos_add();
    test_argmax();
    if (blas) bench_all(blas);

    if (blas) tcu_blas_free(blas);
    CU(cudaStreamDestroy(g_st));
    return check_summary("gpu_ops");
}
