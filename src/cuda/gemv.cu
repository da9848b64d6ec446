/* gemv.cu: decode GEMV y = W·x for every weight type with a GPU kernel, weights in their stored block
 * format (rows padded to 16 bytes), x f32, f32 accumulation.
 *
 * Variant 1 (this file, the only one so far): a warp owns R consecutive rows; lane l handles the 8
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

template <int T, int R, int U>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_k(const uint8_t *__restrict__ w, size_t stride, int n_in, int n_out, const float *__restrict__ x,
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
    *U = fu ? fu : 2;
}

#define GEMV_CASE(RR, UU)                                                                                    \
    if (R == RR && U == UU) {                                                                                \
        const unsigned grid = (unsigned)((n_out + GEMV_WARPS * RR - 1) / (GEMV_WARPS * RR));                 \
        gemv_k<T, RR, UU><<<grid, GEMV_WARPS * 32, 0, st>>>(wb, stride, (int)n_in, (int)n_out, x, y);        \
        return;                                                                                              \
    }

template <int T>
static void gemv_launch(const void *w, size_t stride, int64_t n_in, int64_t n_out, const float *x, float *y,
                        cudaStream_t st) {
    int R, U;
    gemv_rule(n_out, &R, &U);
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
