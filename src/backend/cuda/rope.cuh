/* rope.cuh: RoPE on one adjacent pair (x[2i], x[2i+1]) (GGML's "normal" mode; RoFormer, Su et al. 2021,
 * eq. 34), shared by the RoPE kernels (elementwise.cu: rope_k, rope_kv_k, rope_table_k) so they give the same bits:
 * the angle pos * freq[i] in double like cpu_rope, cos and sin rounded to f32, the products and sums with _rn
 * intrinsics (nvcc contracts nothing into an FMA). */
#ifndef TERN_CUDA_ROPE_CUH
#define TERN_CUDA_ROPE_CUH
#include <stdint.h>

static __device__ __forceinline__ void rope_cs(int32_t pos, float freq, float *c, float *s) {
    const double th = (double)pos * (double)freq;
    *c = (float)cos(th);
    *s = (float)sin(th);
}
/* The pair's rotated first element (a cos - b sin) and second (a sin + b cos). */
static __device__ __forceinline__ float rope_first(float a, float b, float c, float s) {
    return __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
}
static __device__ __forceinline__ float rope_second(float a, float b, float c, float s) {
    return __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
}

#endif
