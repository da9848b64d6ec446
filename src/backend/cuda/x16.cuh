/* x16.cuh: the 16-bit block fixed-point activation format of the dp4a GEMV (gemv_dp4a.cu), written by the
 * quantize kernel and by the kernels that produce a GEMV input (RMSNorm, SwiGLU: elementwise.cu), so the
 * bytes are the same whichever kernel writes them. Per 32-element block: d = amax / 32512 (f32),
 * q = round-half-even(x * 32512 / amax) in [-32512, 32512], stored as int8 planes hi, lo with q = 256*hi + lo
 * (lo the signed low byte), and ds = (bits of d, Σ q). Buffer for m rows of n_in: hi [m][n_in], lo [m][n_in]
 * (each plane padded to 16 bytes), ds [m][n_in/32]. */
#ifndef TERN_CUDA_X16_CUH
#define TERN_CUDA_X16_CUH
#include <stdint.h>

#define X16_MAX 32512.0f /* 127 * 256 */

static __host__ __device__ __forceinline__ size_t x16_plane_bytes(int m, int64_t n_in) {
    return ((size_t)m * (size_t)n_in + 15) & ~(size_t)15;
}

/* Called by all 32 lanes of a warp, lane l holding element l of block b (v its value): writes the block. */
static __device__ __forceinline__ void x16_put(float v, int lane, int64_t b, void *xq, size_t plane) {
    float a = fabsf(v);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
    const float d = __fdiv_rn(a, X16_MAX);
    /* 1/amax overflows for amax < ~1e-34: cap it, so zeros stay 0 (0 * inf would be NaN) */
    const float id = a != 0.0f ? fminf(__fdiv_rn(X16_MAX, a), 3.0e38f) : 0.0f;
    const float r = rintf(__fmul_rn(v, id)); /* round half to even */
    const int q = r >= -X16_MAX && r <= X16_MAX ? (int)r : (r > X16_MAX ? 32512 : -32512); /* NaN: -32512 */
    const int l = (int)(int8_t)(q & 0xFF);
    int8_t *hi = (int8_t *)xq, *lo = (int8_t *)xq + plane;
    hi[b * 32 + lane] = (int8_t)((q - l) / 256);
    lo[b * 32 + lane] = (int8_t)l;
    int s = q;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) ((int2 *)((char *)xq + 2 * plane))[b] = make_int2(__float_as_int(d), s);
}

#endif
