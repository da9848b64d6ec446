/* gemv.cu: decode GEMV y = W·x for every weight type with a GPU kernel, weights in their stored block
 * format (rows padded to 16 bytes), x f32, f32 accumulation.
 *
 * Variant 1 (replaced by variant 2 below): a warp owns R consecutive rows; lane l handles the 8
 * consecutive elements e0 = 8l + 256k of every row, so a warp's x loads are 1 KB contiguous (two
 * float4 per lane, L1/L2-resident) and are reused across the R rows; each row's 8 weights come from
 * dequant.cuh (16-bit loads for the 2-byte aligned block formats). Per-lane partial sums run in
 * element order; the warp reduces them with a fixed xor-shuffle tree: no atomics, so the same inputs
 * give the same bits on every launch. Variants 1 and 3 lost to variant 2 (below; dev/cuda/gemv_f32_v1_v3.cu).
 * CPU reference: dot of tern_dequantize_row with x in double (tests/gpu/gpu_ops.c). */
#include <stdint.h>

#include "cuda/check.cuh"
#include "cuda/dequant.cuh"
#include "cuda/reduce.cuh"
#include "cuda/tcu.h"

/* ---- per-type 8-element dot products ----------------------------------------------------------
 * dot8<T>(row, e0, x) = Σ_{i<8} W[e0+i]·x[i] for the thread's 8 elements. The generic form dequantizes
 * (dequant.cuh) and chains FMAs. The block formats that matter most for decode are specialised to spend
 * fewer instructions per weight (the first kernel was issue-bound on Q4_0: ~1 TB/s on 4096x14336 where
 * Q8_0, twice the bytes per element, reached 2.4 TB/s): the integer -> float conversion (I2F, a
 * quarter-rate instruction on sm_90) is replaced by the exponent trick: a byte k placed in the low
 * mantissa bits of 2^23 by one PRMT is the float 2^23 + k, and one FADD removes the 2^23 (exact for
 * k < 2^23); the block scale multiplies the 8-element partial once instead of every weight. */
#define MAGIC 0x4B000000u /* the bits of 8388608.0f = 2^23 */
static __device__ __forceinline__ float magic_byte(uint32_t v, int k) {
    /* bytes: [v.byte k, 0x00, 0x00, 0x4B] -> 2^23 + byte */
    return __uint_as_float(__byte_perm(v, MAGIC, 0x7540u | (unsigned)k));
}

/* Each dot8 is split into load8 (the weights as exact small floats plus up to two block constants) and
 * apply8 (the dot with x), so the multi-column GEMV (tcu_gemv_multi) decodes a weight piece once and
 * applies it to every column with exactly the float operations of the single-column kernel: its result
 * per column is bit-identical (explicit fmaf / _rn intrinsics, nothing left for nvcc to contract). */
typedef struct {
    float w[8]; /* exact: small integers, or the dequantized value for the generic kind */
    float a, b; /* kind 1: result = a * s; kind 2: result = fma(a, s, b * Σx); kind 0: unused */
} wpiece;

static __device__ __forceinline__ constexpr int wkind(int t) {
    return t == TERN_TYPE_Q4_0 || t == TERN_TYPE_Q8_0 || t == TERN_TYPE_Q6_K ? 1
           : t == TERN_TYPE_Q4_1 || t == TERN_TYPE_Q4_K                      ? 2
                                                                             : 0;
}

template <int T> static __device__ __forceinline__ void load8(const uint8_t *row, int e0, wpiece *k) {
    dequant8<T>(row, e0, k->w);
    k->a = k->b = 0.0f;
}

/* Q4_0: w = q - 8, a = d. */
template <> __device__ __forceinline__ void load8<TERN_TYPE_Q4_0>(const uint8_t *row, int e0, wpiece *k) {
    const uint8_t *b = row + (size_t)(e0 >> 5) * 18;
    const int j = e0 & 31, sh = j >= 16 ? 4 : 0;
    uint32_t lo, hi;
    dq_ld8(b + 2 + (j & 15), &lo, &hi);
    k->a = dq_h2f(dq_ld16(b));
    k->b = 0.0f;
    lo = (lo >> sh) & 0x0F0F0F0Fu;
    hi = (hi >> sh) & 0x0F0F0F0Fu;
#pragma unroll
    for (int i = 0; i < 4; i++) { k->w[i] = magic_byte(lo, i) - 8388616.0f; k->w[4 + i] = magic_byte(hi, i) - 8388616.0f; }
}

/* Q4_1: w = q, a = d, b = m. */
template <> __device__ __forceinline__ void load8<TERN_TYPE_Q4_1>(const uint8_t *row, int e0, wpiece *k) {
    const uint8_t *b = row + (size_t)(e0 >> 5) * 20;
    const int j = e0 & 31, sh = j >= 16 ? 4 : 0;
    uint32_t lo, hi;
    dq_ld8(b + 4 + (j & 15), &lo, &hi);
    k->a = dq_h2f(dq_ld16(b));
    k->b = dq_h2f(dq_ld16(b + 2));
    lo = (lo >> sh) & 0x0F0F0F0Fu;
    hi = (hi >> sh) & 0x0F0F0F0Fu;
#pragma unroll
    for (int i = 0; i < 4; i++) { k->w[i] = magic_byte(lo, i) - 8388608.0f; k->w[4 + i] = magic_byte(hi, i) - 8388608.0f; }
}

/* Q8_0: w = q (signed: (q ^ 0x80) is q + 128 as an unsigned byte), a = d. */
template <> __device__ __forceinline__ void load8<TERN_TYPE_Q8_0>(const uint8_t *row, int e0, wpiece *k) {
    const uint8_t *b = row + (size_t)(e0 >> 5) * 34;
    uint32_t lo, hi;
    dq_ld8(b + 2 + (e0 & 31), &lo, &hi);
    k->a = dq_h2f(dq_ld16(b));
    k->b = 0.0f;
    lo ^= 0x80808080u;
    hi ^= 0x80808080u;
#pragma unroll
    for (int i = 0; i < 4; i++) { k->w[i] = magic_byte(lo, i) - 8388736.0f; k->w[4 + i] = magic_byte(hi, i) - 8388736.0f; }
}

/* Q4_K: w = q, a = d*sc, b = -(dmin*mn) (one sub-block, one nibble). */
template <> __device__ __forceinline__ void load8<TERN_TYPE_Q4_K>(const uint8_t *row, int e0, wpiece *k) {
    const uint8_t *b = row + (size_t)(e0 >> 8) * 144;
    const int e = e0 & 255, sub = e >> 5;
    const uint2 q8 = *(const uint2 *)(b + 16 + (e >> 6) * 32 + (e & 31));
    const float d = dq_h2f(dq_ld16(b)), dmin = dq_h2f(dq_ld16(b + 2));
    int sc, mn;
    dq_k4_scale_min(b + 4, sub, &sc, &mn);
    k->a = __fmul_rn(d, (float)sc);
    k->b = -__fmul_rn(dmin, (float)mn);
    const int sh = 4 * ((e & 63) >> 5);
    const uint32_t lo = (q8.x >> sh) & 0x0F0F0F0Fu, hi = (q8.y >> sh) & 0x0F0F0F0Fu;
#pragma unroll
    for (int i = 0; i < 4; i++) { k->w[i] = magic_byte(lo, i) - 8388608.0f; k->w[4 + i] = magic_byte(hi, i) - 8388608.0f; }
}

/* Q6_K: w = q - 32 (low nibble | 2 high bits << 4), a = d*sc (one 16-element scale group). */
template <> __device__ __forceinline__ void load8<TERN_TYPE_Q6_K>(const uint8_t *row, int e0, wpiece *k) {
    const uint8_t *b = row + (size_t)(e0 >> 8) * 210;
    const int e = e0 & 255, h = e >> 7, r = e & 127;
    uint32_t l0, l1, h0, h1;
    dq_ld8(b + h * 64 + (r & 63), &l0, &l1);
    dq_ld8(b + 128 + h * 32 + (r & 31), &h0, &h1);
    k->a = __fmul_rn(dq_h2f(dq_ld16(b + 208)), (float)(int8_t)b[192 + (e >> 4)]);
    k->b = 0.0f;
    const int sl = 4 * (r >> 6), shh = 2 * (r >> 5);
    const uint32_t q0 = ((l0 >> sl) & 0x0F0F0F0Fu) | (((h0 >> shh) & 0x03030303u) << 4);
    const uint32_t q1 = ((l1 >> sl) & 0x0F0F0F0Fu) | (((h1 >> shh) & 0x03030303u) << 4);
#pragma unroll
    for (int i = 0; i < 4; i++) { k->w[i] = magic_byte(q0, i) - 8388640.0f; k->w[4 + i] = magic_byte(q1, i) - 8388640.0f; }
}

template <int T> static __device__ __forceinline__ float apply8(const wpiece *k, const float *x) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; i++) s = fmaf(k->w[i], x[i], s);
    if (wkind(T) == 1) return __fmul_rn(k->a, s);
    if (wkind(T) == 2) {
        float sx = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++) sx = __fadd_rn(sx, x[i]);
        return fmaf(k->a, s, __fmul_rn(k->b, sx));
    }
    return s;
}

/* dot8<T>(row, e0, x) = Σ_{i<8} W[e0+i]·x[i] for the thread's 8 elements. */
template <int T> static __device__ __forceinline__ float dot8(const uint8_t *row, int e0, const float *x) {
    wpiece k;
    load8<T>(row, e0, &k);
    return apply8<T>(&k, x);
}

#define GEMV_WARPS 4
#define GEMV_T (GEMV_WARPS * 32)
/* Rows a CTA (R) and 1024-element steps in flight (U): R = 4, U = 2, the best of a 3 x 3 sweep (bench/sweeps/gemv.md,
 * variant 2, Llama-3-8B Q4_0 tg128 on the H200; a smaller-R rule for matrices under 8192 rows lost, docs/ledger.md) */
#define GEMV_R 4
#define GEMV_U 2

/* Variant 2 (default): the CTA's 4 warps split each row's columns (split-K inside the CTA): thread t of
 * the CTA takes the 8 elements e0 = 8t + 1024k; partial sums go warp-reduced into shared memory and are
 * added in warp order by one thread, so the result is still one fixed order per row. A CTA owns R rows,
 * so a 1024-row matrix still launches 1024/R CTAs of 4 warps (variant 1, a warp per R rows, left a
 * 1024- or 4096-row matrix with a few warps per SM and ran the Llama-3-8B decode at 0.67 TB/s). */
template <int T, int R, int U>
__global__ void __launch_bounds__(GEMV_T)
gemv_k(const uint8_t *__restrict__ w, size_t stride, int n_in, int n_out, const float *__restrict__ x,
       float *__restrict__ y) {
    __shared__ float part[GEMV_WARPS][R];
    /* persistent: a grid of a few CTAs per SM walks the row groups (a CTA per group spent more time
     * being scheduled than reading: 27 us for Q4_0 and for Q8_0 4096x14336 alike) */
    for (int r0 = blockIdx.x * R; r0 < n_out; r0 += gridDim.x * R) {
    const uint8_t *rows[R];
#pragma unroll
    for (int r = 0; r < R; r++) rows[r] = w + (size_t)(r0 + r < n_out ? r0 + r : n_out - 1) * stride;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    const int step = GEMV_T * 8;
    int e0 = threadIdx.x * 8;
    /* U steps at once: the loads of all U*R row pieces can issue before the first FMA (more bytes in
     * flight per warp); each row's partials are still added in element order, so U does not change bits */
    for (; e0 + step * (U - 1) < n_in; e0 += step * U) {
        float xv[U][8], pr[U][R];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const float4 xa = __ldg((const float4 *)(x + e0 + step * u));
            const float4 xb = __ldg((const float4 *)(x + e0 + step * u + 4));
            xv[u][0] = xa.x; xv[u][1] = xa.y; xv[u][2] = xa.z; xv[u][3] = xa.w;
            xv[u][4] = xb.x; xv[u][5] = xb.y; xv[u][6] = xb.z; xv[u][7] = xb.w;
        }
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int r = 0; r < R; r++) pr[u][r] = dot8<T>(rows[r], e0 + step * u, xv[u]);
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] = __fadd_rn(acc[r], pr[u][r]);
    }
    for (; e0 < n_in; e0 += step) {
        const float4 xa = __ldg((const float4 *)(x + e0)), xb = __ldg((const float4 *)(x + e0 + 4));
        const float xv[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = __fadd_rn(acc[r], dot8<T>(rows[r], e0, xv));
    }
    cta_sum_out<GEMV_WARPS, R>(acc, part, n_out - r0 < R ? n_out - r0 : R, y + r0, 1);
    }
}

template <int T>
static void gemv_launch(const void *w, size_t stride, int64_t n_in, int64_t n_out, const float *x, float *y,
                        cudaStream_t st) {
    constexpr int R = GEMV_R, U = GEMV_U;
    static int per_sm = 0;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_k<T, R, U>, GEMV_T, 0) != cudaSuccess)
        per_sm = 4;
    const int64_t groups = (n_out + R - 1) / R, cap = (int64_t)gemv_sms() * (per_sm > 0 ? per_sm : 4);
    const unsigned grid = (unsigned)(groups < cap ? groups : cap);
    gemv_k<T, R, U><<<grid, GEMV_T, 0, st>>>((const uint8_t *)w, stride, (int)n_in, (int)n_out, x, y);
    TCU_CHECK_LAUNCH(st);
}
extern "C" void tcu_gemv(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const float *x, float *y,
                         cudaStream_t st) {
    switch (t) {
#define X(T) case T: gemv_launch<T>(w, row_bytes, n_in, n_out, x, y, st); break;
        TCU_FOR_TYPES(X)
#undef X
    default: break;
    }
}
/* The multi-column twin (tcu_gemv_multi): m <= M columns of x against one stream of W. A CTA owns one
 * row at a time; each thread decodes its 8-weight piece once (load8) and applies it to every column
 * (apply8); per column the partials are added in the single-column kernel's order (steps in element
 * order, the same xor-shuffle tree, warps 0..3 in order), so y[c] is bit-identical to tcu_gemv on x_c:
 * the exact verify path of speculative decoding rests on it (tests/gpu/gpu_ops.c checks memcmp). */
template <int T, int M>
__global__ void __launch_bounds__(GEMV_T)
gemv_multi_k(const uint8_t *__restrict__ w, size_t stride, int n_in, int n_out, const float *__restrict__ x, int m,
             float *__restrict__ y) {
    __shared__ float part[GEMV_WARPS][M];
    for (int r0 = blockIdx.x; r0 < n_out; r0 += gridDim.x) {
        const uint8_t *row = w + (size_t)r0 * stride;
        float acc[M];
#pragma unroll
        for (int c = 0; c < M; c++) acc[c] = 0.0f;
        for (int e0 = threadIdx.x * 8; e0 < n_in; e0 += GEMV_T * 8) {
            wpiece k;
            load8<T>(row, e0, &k);
#pragma unroll
            for (int c = 0; c < M; c++) {
                if (c < m) {
                    const float *xc = x + (size_t)c * n_in + e0;
                    const float4 xa = __ldg((const float4 *)xc), xb = __ldg((const float4 *)(xc + 4));
                    const float xv[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
                    acc[c] = __fadd_rn(acc[c], apply8<T>(&k, xv));
                }
            }
        }
        cta_sum_out<GEMV_WARPS, M>(acc, part, m, y + r0, (size_t)n_out);
    }
}

template <int T, int M>
static void gemv_multi_launch(const uint8_t *w, size_t stride, int64_t n_in, int64_t n_out, const float *x, int m,
                              float *y, cudaStream_t st) {
    static int per_sm = 0;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_multi_k<T, M>, GEMV_T, 0) != cudaSuccess)
        per_sm = 4;
    const int64_t cap = (int64_t)gemv_sms() * (per_sm > 0 ? per_sm : 4);
    const unsigned grid = (unsigned)(n_out < cap ? n_out : cap);
    gemv_multi_k<T, M><<<grid, GEMV_T, 0, st>>>(w, stride, (int)n_in, (int)n_out, x, m, y);
    TCU_CHECK_LAUNCH(st);
}

extern "C" void tcu_gemv_multi(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const float *x,
                               int m, float *y, cudaStream_t st) {
    if (m <= 1) {
        if (m == 1) tcu_gemv(t, w, row_bytes, n_in, n_out, x, y, st);
        return;
    }
    const uint8_t *wb = (const uint8_t *)w;
    switch (t) {
#define X(T)                                                                                   \
    case T:                                                                                    \
        if (m <= 2) gemv_multi_launch<T, 2>(wb, row_bytes, n_in, n_out, x, m, y, st);          \
        else if (m <= 4) gemv_multi_launch<T, 4>(wb, row_bytes, n_in, n_out, x, m, y, st);     \
        else if (m <= 8) gemv_multi_launch<T, 8>(wb, row_bytes, n_in, n_out, x, m, y, st);     \
        else gemv_multi_launch<T, 16>(wb, row_bytes, n_in, n_out, x, m, y, st);                \
        break;
        TCU_FOR_TYPES(X)
#undef X
    default: break;
    }
}
