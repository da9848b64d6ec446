/* gemv_q8.cu: decode GEMV for Q4_0 and Q8_0 weights against activations quantized to 8 bits (the int8
 * path): y = W · x with x first quantized per 32-element block by tern's CPU rule for Q8_0 activations
 * (src/quant.c, llama.cpp's x86 quantize_row_q8_0: d = fp16(amax/127), q = round-half-even(x*127/amax)),
 * so the GPU dots the same integers as tern's CPU path. Per block, one integer dot by __dp4a (4 int8
 * products and a sum per instruction) replaces 32 dequantize-and-FMA steps of the f32 path (gemv.cu),
 * which measured issue-bound on Q4_0 (~1.2 TB/s): Σ_i (qw_i - 8)·qx_i = Σ qw·qx - 8·Σ qx for Q4_0, with
 * Σ qx computed once per activation block; then acc = fma(dw·dx, (float)isum, acc) in block order.
 *
 * Weight loads keep the GGUF block layout (18- and 34-byte blocks, 2-byte aligned): each block's quant
 * bytes are read as 32-bit words from the 4-byte-aligned address at or below them (one word more when
 * they start 2 bytes past a word), and __funnelshift_r realigns them.
 *
 * Layout of the quantized activations for m columns of n_in (tcu_q8_bytes): int8 q[m][n_in], then at a
 * 16-byte aligned offset int2 ds[m][n_in/32] = (bits of the f32 d, Σ q) per block.
 * Bit-identity: the multi-column kernel applies each decoded weight block to every column with the
 * single-column kernel's operations in its order (blocks t, t+128, ... per thread; the same xor-shuffle
 * tree; warps in order), so column c of tcu_gemv_q8(m) equals tcu_gemv_q8(1) on x_c bit for bit.
 * CPU reference (tests/gpu/gpu_multi.c): the double dot of the dequantized weights with the CPU-quantized
 * activations; the quantizer is compared byte for byte with tern_quantize_activation. */
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda/dequant.cuh"
#include "cuda/tcu.h"

#define Q8_WARPS 4
#define Q8_T (Q8_WARPS * 32)

extern "C" size_t tcu_q8_bytes(int m, int64_t n_in) {
    return (((size_t)m * (size_t)n_in + 15) & ~(size_t)15) + sizeof(int2) * (size_t)m * (size_t)(n_in / 32);
}

extern "C" int tcu_gemv_q8_supported(int t) { return t == TERN_TYPE_Q4_0 || t == TERN_TYPE_Q8_0; }

/* ---- activations: one warp per 32-element block ---- */
__global__ void quant_q8_k(const float *__restrict__ x, int64_t nb, int8_t *__restrict__ q, int2 *__restrict__ ds) {
    const int64_t b = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (b >= nb) return;
    const float v = x[b * 32 + lane];
    float a = fabsf(v);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
    const float d = __fdiv_rn(a, 127.0f), id = a != 0.0f ? __fdiv_rn(127.0f, a) : 0.0f;
    const float r = rintf(__fmul_rn(v, id)); /* round half to even, as the CPU's round_ne */
    const int qi = r >= -128.0f && r <= 127.0f ? (int)r : (r > 127.0f ? 127 : -128);
    q[b * 32 + lane] = (int8_t)qi;
    int s = qi;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) ds[b] = make_int2(__float_as_int(__half2float(__float2half_rn(d))), s);
}

extern "C" void tcu_quantize_q8(const float *x, int m, int64_t n_in, void *xq, cudaStream_t st) {
    const int64_t nb = (int64_t)m * (n_in / 32);
    int8_t *q = (int8_t *)xq;
    int2 *ds = (int2 *)((char *)xq + (((size_t)m * (size_t)n_in + 15) & ~(size_t)15));
    quant_q8_k<<<(unsigned)((nb + 7) / 8), 256, 0, st>>>(x, nb, q, ds);
}

/* ---- weights: one block as 8 words of 4 signed bytes (element order 4i..4i+3 in word i) and d ---- */

/* n words of the bytes at p (2-byte aligned), via 4-byte loads and a funnel shift. */
template <int N> static __device__ __forceinline__ void ld_words(const uint8_t *p, uint32_t *w) {
    const uintptr_t a = (uintptr_t)p;
    const uint32_t *wp = (const uint32_t *)(a & ~(uintptr_t)3);
    if ((a & 3) == 0) {
#pragma unroll
        for (int i = 0; i < N; i++) w[i] = wp[i];
    } else {
        uint32_t v[N + 1];
#pragma unroll
        for (int i = 0; i <= N; i++) v[i] = wp[i];
#pragma unroll
        for (int i = 0; i < N; i++) w[i] = __funnelshift_r(v[i], v[i + 1], 16);
    }
}

template <int T> static __device__ __forceinline__ void load_blk(const uint8_t *row, int b, int *wq, float *dw);

/* Q4_0: 18 bytes = fp16 d, 16 bytes of nibbles (element j low nibble of byte j, element j+16 high). */
template <> __device__ __forceinline__ void load_blk<TERN_TYPE_Q4_0>(const uint8_t *row, int b, int *wq, float *dw) {
    const uint8_t *p = row + (size_t)b * 18;
    *dw = dq_h2f(dq_ld16(p));
    uint32_t w[4];
    ld_words<4>(p + 2, w);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        wq[i] = (int)(w[i] & 0x0F0F0F0Fu);
        wq[4 + i] = (int)((w[i] >> 4) & 0x0F0F0F0Fu);
    }
}

/* Q8_0: 34 bytes = fp16 d, 32 signed bytes. */
template <> __device__ __forceinline__ void load_blk<TERN_TYPE_Q8_0>(const uint8_t *row, int b, int *wq, float *dw) {
    const uint8_t *p = row + (size_t)b * 34;
    *dw = dq_h2f(dq_ld16(p));
    ld_words<8>(p + 2, (uint32_t *)wq);
}

/* The block's contribution, added to acc: fma(dw*dx, isum, acc) with isum the exact integer dot. */
template <int T>
static __device__ __forceinline__ float blk_dot(const int *wq, float dw, const int4 xa, const int4 xb, int2 ds, float acc) {
    int s = 0;
    s = __dp4a(wq[0], xa.x, s); s = __dp4a(wq[1], xa.y, s); s = __dp4a(wq[2], xa.z, s); s = __dp4a(wq[3], xa.w, s);
    s = __dp4a(wq[4], xb.x, s); s = __dp4a(wq[5], xb.y, s); s = __dp4a(wq[6], xb.z, s); s = __dp4a(wq[7], xb.w, s);
    if (T == TERN_TYPE_Q4_0) s -= 8 * ds.y;
    return fmaf(__fmul_rn(dw, __int_as_float(ds.x)), __int2float_rn(s), acc);
}

/* Single column: a CTA of 4 warps owns R rows at a time (persistent over row groups); thread t takes
 * blocks t, t+128, ... of each row; the activation block is loaded once for the R rows. */
template <int T, int R>
__global__ void __launch_bounds__(Q8_T)
gemv_q8_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xq,
          const int2 *__restrict__ xds, float *__restrict__ y) {
    __shared__ float part[Q8_WARPS][R];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int r0 = blockIdx.x * R; r0 < n_out; r0 += gridDim.x * R) {
        const uint8_t *rows[R];
#pragma unroll
        for (int r = 0; r < R; r++) rows[r] = w + (size_t)(r0 + r < n_out ? r0 + r : n_out - 1) * stride;
        float acc[R];
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = 0.0f;
        for (int b = threadIdx.x; b < nb; b += Q8_T) {
            const int4 xa = __ldg((const int4 *)(xq + (size_t)b * 32)), xb = __ldg((const int4 *)(xq + (size_t)b * 32 + 16));
            const int2 ds = __ldg(xds + b);
            int wq[R][8];
            float dw[R];
#pragma unroll
            for (int r = 0; r < R; r++) load_blk<T>(rows[r], b, wq[r], &dw[r]);
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] = blk_dot<T>(wq[r], dw[r], xa, xb, ds, acc[r]);
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
            for (int k = 1; k < Q8_WARPS; k++) s += part[k][threadIdx.x];
            y[r0 + threadIdx.x] = s;
        }
        __syncthreads();
    }
}

/* m <= M columns: a CTA owns one row at a time; each weight block is decoded once for every column. */
template <int T, int M>
__global__ void __launch_bounds__(Q8_T)
gemv_q8_multi_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xq,
                const int2 *__restrict__ xds, int m, float *__restrict__ y) {
    __shared__ float part[Q8_WARPS][M];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const size_t n_in = (size_t)nb * 32;
    for (int r0 = blockIdx.x; r0 < n_out; r0 += gridDim.x) {
        const uint8_t *row = w + (size_t)r0 * stride;
        float acc[M];
#pragma unroll
        for (int c = 0; c < M; c++) acc[c] = 0.0f;
        for (int b = threadIdx.x; b < nb; b += Q8_T) {
            int wq[8];
            float dw;
            load_blk<T>(row, b, wq, &dw);
#pragma unroll
            for (int c = 0; c < M; c++)
                if (c < m) {
                    const int8_t *xc = xq + c * n_in + (size_t)b * 32;
                    acc[c] = blk_dot<T>(wq, dw, __ldg((const int4 *)xc), __ldg((const int4 *)(xc + 16)),
                                        __ldg(xds + (size_t)c * nb + b), acc[c]);
                }
        }
#pragma unroll
        for (int c = 0; c < M; c++) {
            float s = acc[c];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0) part[warp][c] = s;
        }
        __syncthreads();
        if ((int)threadIdx.x < m) {
            float s = part[0][threadIdx.x];
#pragma unroll
            for (int k = 1; k < Q8_WARPS; k++) s += part[k][threadIdx.x];
            y[(size_t)threadIdx.x * n_out + r0] = s;
        }
        __syncthreads();
    }
}

static int q8_sms(void) {
    static int n = 0;
    if (!n) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            n = 132;
    }
    return n;
}

/* Rows per CTA: TERN_CUDA_Q8_ROWS (1, 2, 4, 8) overrides the default for sweeps. */
static int q8_rows(void) {
    static int r = -1;
    if (r < 0) {
        const char *e = getenv("TERN_CUDA_Q8_ROWS");
        const int v = e ? atoi(e) : 0;
        r = v == 1 || v == 2 || v == 4 || v == 8 ? v : 4;
    }
    return r;
}

template <int T, int R>
static void q8_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int2 *ds, float *y,
                      cudaStream_t st) {
    static int per_sm = 0;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_q8_k<T, R>, Q8_T, 0) != cudaSuccess)
        per_sm = 4;
    const int64_t groups = (n_out + R - 1) / R, cap = (int64_t)q8_sms() * (per_sm > 0 ? per_sm : 4);
    gemv_q8_k<T, R><<<(unsigned)(groups < cap ? groups : cap), Q8_T, 0, st>>>(w, stride, nb, n_out, q, ds, y);
}

template <int T, int M>
static void q8_multi_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int2 *ds, int m,
                            float *y, cudaStream_t st) {
    static int per_sm = 0;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_q8_multi_k<T, M>, Q8_T, 0) != cudaSuccess)
        per_sm = 4;
    const int64_t cap = (int64_t)q8_sms() * (per_sm > 0 ? per_sm : 4);
    gemv_q8_multi_k<T, M><<<(unsigned)(n_out < cap ? n_out : cap), Q8_T, 0, st>>>(w, stride, nb, n_out, q, ds, m, y);
}

template <int T>
static void q8_dispatch(const uint8_t *w, size_t stride, int64_t n_in, int64_t n_out, const void *xq, int m, float *y,
                        cudaStream_t st) {
    const int nb = (int)(n_in / 32);
    const int8_t *q = (const int8_t *)xq;
    const int2 *ds = (const int2 *)((const char *)xq + (((size_t)m * (size_t)n_in + 15) & ~(size_t)15));
    if (m == 1) {
        switch (q8_rows()) {
        case 1: q8_launch<T, 1>(w, stride, nb, (int)n_out, q, ds, y, st); break;
        case 2: q8_launch<T, 2>(w, stride, nb, (int)n_out, q, ds, y, st); break;
        case 8: q8_launch<T, 8>(w, stride, nb, (int)n_out, q, ds, y, st); break;
        default: q8_launch<T, 4>(w, stride, nb, (int)n_out, q, ds, y, st); break;
        }
    } else if (m <= 2) q8_multi_launch<T, 2>(w, stride, nb, (int)n_out, q, ds, m, y, st);
    else if (m <= 4) q8_multi_launch<T, 4>(w, stride, nb, (int)n_out, q, ds, m, y, st);
    else if (m <= 8) q8_multi_launch<T, 8>(w, stride, nb, (int)n_out, q, ds, m, y, st);
    else q8_multi_launch<T, 16>(w, stride, nb, (int)n_out, q, ds, m, y, st);
}

extern "C" void tcu_gemv_q8(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq, int m,
                            float *y, cudaStream_t st) {
    if (m < 1 || m > TCU_MULTI_MAX) return;
    if (t == TERN_TYPE_Q4_0) q8_dispatch<TERN_TYPE_Q4_0>((const uint8_t *)w, row_bytes, n_in, n_out, xq, m, y, st);
    else if (t == TERN_TYPE_Q8_0) q8_dispatch<TERN_TYPE_Q8_0>((const uint8_t *)w, row_bytes, n_in, n_out, xq, m, y, st);
}
