/* gemv.cu: decode GEMV y = W·x for every weight type with a GPU kernel, weights in their stored block
 * format (rows padded to 16 bytes), x f32, f32 accumulation.
 *
 * Variant 1 (replaced by variant 2 below): a warp owns R consecutive rows; lane l handles the 8
 * consecutive elements e0 = 8l + 256k of every row, so a warp's x loads are 1 KB contiguous (two
 * float4 per lane, L1/L2-resident) and are reused across the R rows; each row's 8 weights come from
 * dequant.cuh (16-bit loads for the 2-byte aligned block formats). Per-lane partial sums run in
 * element order; the warp reduces them with a fixed xor-shuffle tree: no atomics, so the same inputs
 * give the same bits on every launch. R (1, 2, 4) and the steps in flight U (1, 2, 4) are compile-time
 * constants chosen per call by gemv_rule; env vars override it for sweeps.
 * CPU reference: dot of tern_dequantize_row with x in double (tests/gpu/gpu_ops.c). */
#include <stdlib.h>

#include "cuda/dequant.cuh"
#include "cuda/tcu.h"

#define GEMV_WARPS 4
#define GEMV_T (GEMV_WARPS * 32)

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
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r0 = blockIdx.x * R;
    const uint8_t *rows[R];
#pragma unroll
    for (int r = 0; r < R; r++) rows[r] = w + (size_t)(r0 + r < n_out ? r0 + r : n_out - 1) * stride;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    const int step = GEMV_T * 8;
    int e0 = threadIdx.x * 8;
    /* U steps at once: every load of the U*R row pieces is issued before the first FMA (more bytes in
     * flight per warp); the FMAs still run in element order, so U does not change bits */
    for (; e0 + step * (U - 1) < n_in; e0 += step * U) {
        float wv[U][R][8], xv[U][8];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const float4 xa = __ldg((const float4 *)(x + e0 + step * u));
            const float4 xb = __ldg((const float4 *)(x + e0 + step * u + 4));
            xv[u][0] = xa.x; xv[u][1] = xa.y; xv[u][2] = xa.z; xv[u][3] = xa.w;
            xv[u][4] = xb.x; xv[u][5] = xb.y; xv[u][6] = xb.z; xv[u][7] = xb.w;
#pragma unroll
            for (int r = 0; r < R; r++) dequant8<T>(rows[r], e0 + step * u, wv[u][r]);
        }
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int i = 0; i < 8; i++) acc[r] = fmaf(wv[u][r][i], xv[u][i], acc[r]);
    }
    for (; e0 < n_in; e0 += step) {
        const float4 xa = __ldg((const float4 *)(x + e0)), xb = __ldg((const float4 *)(x + e0 + 4));
        const float xv[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
        for (int r = 0; r < R; r++) {
            float wv[8];
            dequant8<T>(rows[r], e0, wv);
#pragma unroll
            for (int i = 0; i < 8; i++) acc[r] = fmaf(wv[i], xv[i], acc[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        float s = acc[r];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) part[warp][r] = s;
    }
    __syncthreads();
    if (threadIdx.x < R && r0 + (int)threadIdx.x < n_out) {
        float s = part[0][threadIdx.x];
#pragma unroll
        for (int k = 1; k < GEMV_WARPS; k++) s += part[k][threadIdx.x];
        y[r0 + threadIdx.x] = s;
    }
}

/* Variant 1, kept for A/B (TERN_CUDA_GEMV_VARIANT=1): a warp per R rows, lanes over 256-element steps. */
template <int T, int R, int U>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_warp_k(const uint8_t *__restrict__ w, size_t stride, int n_in, int n_out, const float *__restrict__ x,
       float *__restrict__ y) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r0 = (blockIdx.x * GEMV_WARPS + warp) * R;
    if (r0 >= n_out) return;
    const uint8_t *rows[R];
#pragma unroll
    for (int r = 0; r < R; r++) rows[r] = w + (size_t)(r0 + r < n_out ? r0 + r : n_out - 1) * stride;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    int e0 = lane * 8;
    /* U steps of 256 elements at once: every load of the U*R row pieces is issued before the first FMA
     * (more bytes in flight per warp); the FMAs still run in element order, so U does not change bits */
    for (; e0 + 256 * (U - 1) < n_in; e0 += 256 * U) {
        float wv[U][R][8], xv[U][8];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const float4 xa = __ldg((const float4 *)(x + e0 + 256 * u)), xb = __ldg((const float4 *)(x + e0 + 256 * u + 4));
            xv[u][0] = xa.x; xv[u][1] = xa.y; xv[u][2] = xa.z; xv[u][3] = xa.w;
            xv[u][4] = xb.x; xv[u][5] = xb.y; xv[u][6] = xb.z; xv[u][7] = xb.w;
#pragma unroll
            for (int r = 0; r < R; r++) dequant8<T>(rows[r], e0 + 256 * u, wv[u][r]);
        }
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int i = 0; i < 8; i++) acc[r] = fmaf(wv[u][r][i], xv[u][i], acc[r]);
    }
    for (; e0 < n_in; e0 += 256) {
        const float4 xa = __ldg((const float4 *)(x + e0)), xb = __ldg((const float4 *)(x + e0 + 4));
        const float xv[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
        for (int r = 0; r < R; r++) {
            float wv[8];
            dequant8<T>(rows[r], e0, wv);
#pragma unroll
            for (int i = 0; i < 8; i++) acc[r] = fmaf(wv[i], xv[i], acc[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        float s = acc[r];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0 && r0 + r < n_out) y[r0 + r] = s;
    }
}

static int env_choice(const char *name, int a, int b, int c) {
    const char *e = getenv(name);
    const int v = e ? atoi(e) : 0;
    return v == a || v == b || v == c ? v : 0;
}

/* Rows per warp R and steps in flight U: TERN_CUDA_GEMV_ROWS / TERN_CUDA_GEMV_UNROLL (1, 2, 4) override
 * the default for sweeps (bench/sweeps/gemv.md). */
static void gemv_rule(int64_t n_out, int *R, int *U) {
    static int fr = -1, fu = -1;
    if (fr < 0) {
        fr = env_choice("TERN_CUDA_GEMV_ROWS", 1, 2, 4);
        fu = env_choice("TERN_CUDA_GEMV_UNROLL", 1, 2, 4);
    }
    *R = fr ? fr : (n_out >= 8192 ? 2 : 1);
    *U = fu ? fu : 2; /* first guesses: the sweep (bench/sweeps/gemv.md) replaces them */
}

#define GEMV_CASE(RR, UU)                                                                                    \
    if (R == RR && U == UU) {                                                                                \
        if (variant == 1) {                                                                                  \
            const unsigned g1 = (unsigned)((n_out + GEMV_WARPS * RR - 1) / (GEMV_WARPS * RR));               \
            gemv_warp_k<T, RR, UU><<<g1, GEMV_T, 0, st>>>(wb, stride, (int)n_in, (int)n_out, x, y);          \
            return;                                                                                          \
        }                                                                                                    \
        const unsigned grid = (unsigned)((n_out + RR - 1) / RR);                                             \
        gemv_k<T, RR, UU><<<grid, GEMV_T, 0, st>>>(wb, stride, (int)n_in, (int)n_out, x, y);                 \
        return;                                                                                              \
    }

template <int T>
static void gemv_launch(const void *w, size_t stride, int64_t n_in, int64_t n_out, const float *x, float *y,
                        cudaStream_t st) {
    int R, U;
    gemv_rule(n_out, &R, &U);
    static int variant = -1;
    if (variant < 0) variant = env_choice("TERN_CUDA_GEMV_VARIANT", 1, 2, 2) == 1 ? 1 : 2;
    const uint8_t *wb = (const uint8_t *)w;
    GEMV_CASE(1, 1) GEMV_CASE(1, 2) GEMV_CASE(1, 4)
    GEMV_CASE(2, 1) GEMV_CASE(2, 2) GEMV_CASE(2, 4)
    GEMV_CASE(4, 1) GEMV_CASE(4, 2) GEMV_CASE(4, 4)
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
