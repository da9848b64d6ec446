/* dequant.cu: embedding row lookup (tcu_get_rows), whole-weight dequantization to f16 for the
 * prefill GEMM (tcu_dequant_f16) and the upload-time regrouping of Q4_0/Q8_0 rows (tcu_repack). One thread per 8 consecutive elements (16-byte f16 stores, 32-byte
 * f32 stores); the element values come from dequant.cuh, bit-equal to tern_dequantize_row.
 * CPU reference: tern_dequantize_row (src/backend/cpu/quant.c); checked by tests/gpu/gpu_ops.c. */
#include <cuda_fp16.h>

#include "cuda/check.cuh"
#include "cuda/dequant.cuh"
#include "cuda/tcu.h"

extern "C" int tcu_type_supported(int t) {
    switch (t) {
#define X(T) case T:
        TCU_FOR_TYPES(X)
#undef X
        return 1;
    default:
        return 0;
    }
}

template <int T>
__global__ void get_rows_k(const uint8_t *w, size_t stride, int n_in, const int32_t *ids, int n, float *out) {
    const int e0 = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (e0 >= n_in) return;
    for (int t = blockIdx.y; t < n; t += gridDim.y) { /* grid.y <= 65535 < the largest ubatch (65536) */
        float v[8];
        dequant8<T>(w + (size_t)ids[t] * stride, e0, v);
        float4 *o = (float4 *)(out + (size_t)t * n_in + e0);
        o[0] = make_float4(v[0], v[1], v[2], v[3]);
        o[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
}

extern "C" void tcu_get_rows(int t, const void *w, size_t row_bytes, int64_t n_in, const int32_t *ids, int n,
                             float *out, cudaStream_t st) {
    if (n <= 0) return;
    dim3 grid((unsigned)((n_in / 8 + 127) / 128), (unsigned)(n < 65535 ? n : 65535));
    switch (t) {
#define X(T) \
    case T: get_rows_k<T><<<grid, 128, 0, st>>>((const uint8_t *)w, row_bytes, (int)n_in, ids, n, out); TCU_CHECK_LAUNCH(st); break;
        TCU_FOR_DEVICE_TYPES(X)
#undef X
    default: break;
    }
}

/* 8 values rounded to f16, one 16-byte store */
static __device__ __forceinline__ void dq_store_f16x8(uint16_t *out, const float *v) {
    uint4 o;
    o.x = (uint32_t)__half_as_ushort(__float2half_rn(v[0])) | (uint32_t)__half_as_ushort(__float2half_rn(v[1])) << 16;
    o.y = (uint32_t)__half_as_ushort(__float2half_rn(v[2])) | (uint32_t)__half_as_ushort(__float2half_rn(v[3])) << 16;
    o.z = (uint32_t)__half_as_ushort(__float2half_rn(v[4])) | (uint32_t)__half_as_ushort(__float2half_rn(v[5])) << 16;
    o.w = (uint32_t)__half_as_ushort(__float2half_rn(v[6])) | (uint32_t)__half_as_ushort(__float2half_rn(v[7])) << 16;
    *(uint4 *)out = o;
}

template <int T>
__global__ void dequant_f16_k(const uint8_t *w, size_t stride, int n_in, int64_t n_out, uint16_t *out) {
    const int64_t r = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
    const int e0 = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (r >= n_out || e0 >= n_in) return;
    float v[8];
    dequant8<T>(w + (size_t)r * stride, e0, v);
    dq_store_f16x8(out + (size_t)r * n_in + e0, v);
}

/* The f16 order's tiled Q4_0, Q8_0 and Q4_K (tcu.h TCU_TYPE_Q4_0T, Q8_0T, Q4_KT; Q4_KT's below, in its branch): row r's 8 elements e0.. of step s = e0 / 128,
 * block t of it, in chunk (r / 64, s). Q4_0T: quants at 64 (r % 64) + 16 t (Q4_0R's in-block order), the scale at
 * 4096 + 8 (r % 64) + 2 t; the arithmetic of dequant8<TCU_TYPE_Q4_0R> (dq_q40_8). Q8_0T: bytes j.. (j = e0 % 32) at
 * 128 (r % 64) + 64 (j / 16 ^ r % 2) + 16 t + j % 16, the scale at 8192 + 8 (r % 64) + 2 t; dequant8<TCU_TYPE_Q8_0R>'s
 * arithmetic. Q6_KT (K6): q bytes in Q8_0T's places, the row's d at 8192 + 12 (r % 64), sub-block 2t + j / 16's int8
 * scale at 8192 + 12 (r % 64) + 4 + 2t + j / 16; dequant8<TERN_TYPE_Q6_K>'s arithmetic. So the rows' bits. */
template <int Q8, int K4 = 0, int K6 = 0>
__global__ void dequant_f16_tl_k(const uint8_t *w, int n_in, int64_t n_out, uint16_t *out) {
    const int64_t r = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
    const int e0 = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (r >= n_out || e0 >= n_in) return;
    const int s = e0 >> 7, tb = (e0 >> 5) & 3, j = e0 & 31, rt = (int)(r & 63);
    const uint8_t *c = w + ((size_t)(r >> 6) * (size_t)(n_in >> 7) + (size_t)s) *
                               (Q8 ? TCU_HM_TCH8 : K4 ? TCU_HM_TCHK : K6 ? TCU_HM_TCH6 : TCU_HM_TCH);
    float v[8];
    if (K6) {
        const uint8_t *k = c + 8192 + 12 * rt;
        const float dl = __fmul_rn(dq_h2f(dq_ld16(k)), (float)(int8_t)k[4 + 2 * tb + (j >> 4)]);
        const uint2 q = *(const uint2 *)(c + 128 * rt + 64 * ((j >> 4) ^ (rt & 1)) + 16 * tb + (j & 15));
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = __fmul_rn(dl, (float)((int)dq_byte(q.x, q.y, i) - 32));
        dq_store_f16x8(out + (size_t)r * n_in + e0, v);
        return;
    }
    if (K4) { /* dequant8<TCU_TYPE_Q4_KR>'s arithmetic on the tile's d, dmin and block tb's scale and min */
        const uint8_t *k = c + 4096 + 12 * rt;
        const float d = dq_h2f(dq_ld16(k)), dmin = dq_h2f(dq_ld16(k + 2));
        const float dl = __fmul_rn(d, (float)k[4 + 2 * tb]), ml = __fmul_rn(dmin, (float)k[5 + 2 * tb]);
        const uint2 q8 = *(const uint2 *)(c + 64 * rt + 16 * tb + (j & 15)); /* 8-byte aligned */
        const int sh = j >= 16 ? 4 : 0;
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = __fsub_rn(__fmul_rn(dl, (float)((dq_byte(q8.x, q8.y, i) >> sh) & 0xF)), ml);
        dq_store_f16x8(out + (size_t)r * n_in + e0, v);
        return;
    }
    const float d = dq_h2f(dq_ld16(c + (Q8 ? 8192 : 4096) + 8 * rt + 2 * tb));
    if (Q8) {
        const uint2 q = *(const uint2 *)(c + 128 * rt + 64 * ((j >> 4) ^ (rt & 1)) + 16 * tb + (j & 15));
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = __fmul_rn((float)(int8_t)dq_byte(q.x, q.y, i), d);
    } else {
        dq_q40_8(d, *(const uint2 *)(c + 64 * rt + 16 * tb + (j & 15)), j >= 16 ? 4 : 0, v); /* 8-byte aligned */
    }
    dq_store_f16x8(out + (size_t)r * n_in + e0, v);
}

extern "C" void tcu_dequant_f16(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, uint16_t *out,
                                cudaStream_t st) {
    /* rows over grid.y (≤ 65535) and grid.z */
    const unsigned gy = n_out < 65535 ? (unsigned)n_out : 65535u;
    dim3 grid((unsigned)((n_in / 8 + 127) / 128), gy, (unsigned)((n_out + gy - 1) / gy));
    if (t == TCU_TYPE_Q4_0T || t == TCU_TYPE_Q8_0T || t == TCU_TYPE_Q4_KT || t == TCU_TYPE_Q6_KT) { /* n_in a multiple of 128
                                                                                            * (what the conversion takes) */
        if (n_in % 128 == 0 && t == TCU_TYPE_Q4_0T)
            dequant_f16_tl_k<0><<<grid, 128, 0, st>>>((const uint8_t *)w, (int)n_in, n_out, out);
        else if (n_in % 128 == 0 && t == TCU_TYPE_Q8_0T)
            dequant_f16_tl_k<1><<<grid, 128, 0, st>>>((const uint8_t *)w, (int)n_in, n_out, out);
        else if (n_in % 256 == 0 && t == TCU_TYPE_Q6_KT)
            dequant_f16_tl_k<0, 0, 1><<<grid, 128, 0, st>>>((const uint8_t *)w, (int)n_in, n_out, out);
        else if (n_in % 256 == 0)
            dequant_f16_tl_k<0, 1><<<grid, 128, 0, st>>>((const uint8_t *)w, (int)n_in, n_out, out);
        TCU_CHECK_LAUNCH(st);
        return;
    }
    switch (t) {
#define X(T) \
    case T: dequant_f16_k<T><<<grid, 128, 0, st>>>((const uint8_t *)w, row_bytes, (int)n_in, n_out, out); TCU_CHECK_LAUNCH(st); break;
        TCU_FOR_DEVICE_TYPES(X)
#undef X
    default: break;
    }
}

/* ---- repacked layouts (tcu.h) ---- */

extern "C" int tcu_repack_type(int t) {
    return t == TERN_TYPE_Q4_0 ? TCU_TYPE_Q4_0R : t == TERN_TYPE_Q8_0 ? TCU_TYPE_Q8_0R : t == TERN_TYPE_Q4_K ? TCU_TYPE_Q4_KR : t;
}

extern "C" size_t tcu_repack_row_bytes(int t, int64_t n_in) {
    if (t == TCU_TYPE_Q4_KR) return (size_t)(n_in / 256) * 144;
    const size_t qb = t == TCU_TYPE_Q4_0R ? 16 : t == TCU_TYPE_Q8_0R ? 32 : 0;
    if (!qb) return 0;
    const size_t nb = (size_t)(n_in / 32), rem = nb % 8;
    return nb / 8 * (16 + 8 * qb) + (rem ? 16 + rem * qb : 0);
}

/* One thread per block: the GGUF block (f16 d, QB quant bytes; 2-byte aligned) to its group slots. */
template <int QB>
__global__ void repack_k(const uint8_t *__restrict__ src, size_t ss, uint8_t *__restrict__ dst, size_t ds, int nb,
                         int64_t n_rows) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)nb * n_rows) return;
    const int64_t r = i / nb;
    const int b = (int)(i % nb);
    const uint16_t *s = (const uint16_t *)(src + (size_t)r * ss + (size_t)b * (2 + QB));
    uint8_t *g = dst + (size_t)r * ds + (size_t)(b >> 3) * (16 + 8 * QB);
    *(uint16_t *)(g + 2 * (b & 7)) = s[0];
    uint16_t *q = (uint16_t *)(g + 16 + QB * (b & 7));
#pragma unroll
    for (int k = 0; k < QB / 2; k++) q[k] = s[1 + k];
}

/* Q4_K: one thread per 32-element sub-block (and its super-block's header when it is sub-block 0). */
__global__ void repack_q4k_k(const uint8_t *__restrict__ src, size_t ss, uint8_t *__restrict__ dst, size_t ds, int nsb,
                             int64_t n_rows) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)nsb * 8 * n_rows) return;
    const int64_t r = i / (nsb * 8);
    const int rem = (int)(i % (nsb * 8)), sb = rem >> 3, j = rem & 7;
    const uint8_t *s = src + (size_t)r * ss + (size_t)sb * 144;
    uint8_t *d = dst + (size_t)r * ds + (size_t)sb * 144;
    if (j == 0)
        for (int k = 0; k < 16; k++) d[k] = s[k];
    const uint8_t *g = s + 16 + 32 * (j >> 1); /* element i of the sub-block: nibble (j & 1) of g[i] */
    const int sh = 4 * (j & 1);
    for (int k = 0; k < 16; k++)
        d[16 + 16 * j + k] = (uint8_t)(((g[k] >> sh) & 0xF) | (((g[k + 16] >> sh) & 0xF) << 4));
}

extern "C" void tcu_repack(int t, const void *src, size_t src_stride, void *dst, size_t dst_stride, int64_t n_in,
                           int64_t n_rows, cudaStream_t st) {
    if (t == TERN_TYPE_Q4_K) {
        const int nsb = (int)(n_in / 256);
        const int64_t n = (int64_t)nsb * 8 * n_rows;
        if (n > 0) {
            repack_q4k_k<<<(unsigned)((n + 255) / 256), 256, 0, st>>>((const uint8_t *)src, src_stride, (uint8_t *)dst,
                                                                     dst_stride, nsb, n_rows);
            TCU_CHECK_LAUNCH(st);
        }
        return;
    }
    const int nb = (int)(n_in / 32);
    const int64_t n = (int64_t)nb * n_rows;
    if (n <= 0) return;
    const unsigned grid = (unsigned)((n + 255) / 256);
    if (t == TERN_TYPE_Q4_0)
        repack_k<16><<<grid, 256, 0, st>>>((const uint8_t *)src, src_stride, (uint8_t *)dst, dst_stride, nb, n_rows);
    else if (t == TERN_TYPE_Q8_0)
        repack_k<32><<<grid, 256, 0, st>>>((const uint8_t *)src, src_stride, (uint8_t *)dst, dst_stride, nb, n_rows);
    TCU_CHECK_LAUNCH(st);
}
