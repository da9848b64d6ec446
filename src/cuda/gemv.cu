/* gemv.cu: decode GEMV y = W·x for every weight type with a GPU kernel, weights in their stored block
 * format (rows padded to 16 bytes), x f32, f32 accumulation.
 *
 * Variant 1 (this file, the only one so far): a warp owns R consecutive rows; lane l handles the 8
 * consecutive elements e0 = 8l + 256k of every row, so a warp's x loads are 1 KB contiguous (two
 * float4 per lane, L1/L2-resident) and are reused across the R rows; each row's 8 weights come from
 * dequant.cuh (16-bit loads for the 2-byte aligned block formats). Per-lane partial sums run in
 * element order; the warp reduces them with a fixed xor-shuffle tree: no atomics, so the same inputs
 * give the same bits on every launch. R is a compile-time constant (1, 2, 4) chosen per call:
 * TERN_CUDA_GEMV_ROWS overrides the default rule (below) for sweeps.
 * CPU reference: dot of tern_dequantize_row with x in double (tests/gpu/gpu_ops.c). */
#include <stdlib.h>

#include "cuda/dequant.cuh"
#include "cuda/tcu.h"

#define GEMV_WARPS 4

template <int T, int R>
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
#pragma unroll 2
    for (int e0 = lane * 8; e0 < n_in; e0 += 256) {
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

static int gemv_rows_rule(int64_t n_out) {
    static int forced = -1;
    if (forced < 0) {
        const char *e = getenv("TERN_CUDA_GEMV_ROWS");
        forced = e ? atoi(e) : 0;
        if (forced != 1 && forced != 2 && forced != 4) forced = 0;
    }
    if (forced) return forced;
    return n_out >= 8192 ? 2 : 1; /* first guess; the sweep in bench/sweeps decides (issue: decode roofline) */
}

template <int T>
static void gemv_launch(const void *w, size_t stride, int64_t n_in, int64_t n_out, const float *x, float *y,
                        cudaStream_t st) {
    const int R = gemv_rows_rule(n_out);
    const unsigned grid = (unsigned)((n_out + GEMV_WARPS * R - 1) / (GEMV_WARPS * R));
    const uint8_t *wb = (const uint8_t *)w;
    if (R == 4) gemv_k<T, 4><<<grid, GEMV_WARPS * 32, 0, st>>>(wb, stride, (int)n_in, (int)n_out, x, y);
    else if (R == 2) gemv_k<T, 2><<<grid, GEMV_WARPS * 32, 0, st>>>(wb, stride, (int)n_in, (int)n_out, x, y);
    else gemv_k<T, 1><<<grid, GEMV_WARPS * 32, 0, st>>>(wb, stride, (int)n_in, (int)n_out, x, y);
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
