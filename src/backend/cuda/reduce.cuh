/* reduce.cuh: what the GEMV files (gemv.cu, gemv_dp4a.cu) share: the SM count their persistent grids are
 * sized by, and the fixed-order CTA reduction their kernels end with, in one place because their
 * bit-identity rests on it: the single-row and multi-row kernels must sum every
 * output in the same order. Order: an xor-shuffle tree inside each warp (offsets 16, 8, 4, 2, 1), then
 * warps 0..W-1 added in order by one thread per output. */
#ifndef TERN_CUDA_REDUCE_CUH
#define TERN_CUDA_REDUCE_CUH
#include <stddef.h>

/* The warp trees of acc[j] (j < N) into part[warp][j], then (after a barrier) thread tid < nout sums part[0..W-1]
 * [tid] in order into y[tid * ystride], then a barrier. bar 0: __syncthreads (tid = threadIdx.x, the CTA is the
 * group); bar 1..15: a named barrier over the W*32 threads of a sub-CTA (tid its thread, part its scratch). */
template <int W, int N>
static __device__ __forceinline__ void cta_sum_group(const float (&acc)[N], float (*part)[N], int nout, float *y,
                                                     size_t ystride, int tid, int bar) {
    const int lane = tid & 31, warp = tid >> 5;
#pragma unroll
    for (int j = 0; j < N; j++) {
        float s = acc[j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) part[warp][j] = s;
    }
    if (bar) asm volatile("bar.sync %0, %1;\n" ::"r"(bar), "r"(W * 32) : "memory");
    else __syncthreads();
    if (tid < nout) {
        float s = part[0][tid];
#pragma unroll
        for (int k = 1; k < W; k++) s += part[k][tid];
        y[(size_t)tid * ystride] = s;
    }
    if (bar) asm volatile("bar.sync %0, %1;\n" ::"r"(bar), "r"(W * 32) : "memory");
    else __syncthreads();
}

/* acc[j] (j < N): this thread's partial of output j. part: __shared__ float[W][N] scratch. Thread j < nout
 * writes y[j * ystride]. Ends with __syncthreads (part may be reused at once). Call from every thread. */
template <int W, int N>
static __device__ __forceinline__ void cta_sum_out(const float (&acc)[N], float (*part)[N], int nout, float *y,
                                                   size_t ystride) {
    cta_sum_group<W, N>(acc, part, nout, y, ystride, (int)threadIdx.x, 0);
}

/* cta_sum_out for a sub-CTA: thread tid (0 .. W*32-1) of the W-warp group that owns the rows, part that
 * group's scratch, its barrier the named barrier bar (1..15, one a group) instead of __syncthreads. The same
 * order, so the same bits as cta_sum_out in a CTA of its own. */
template <int W, int N>
static __device__ __forceinline__ void cta_sum_sub(const float (&acc)[N], float (*part)[N], int nout, float *y, int tid,
                                                   int bar) {
    cta_sum_group<W, N>(acc, part, nout, y, 1, tid, bar);
}

/* Multiprocessors of the current device (asked once; 132, an H100/H200's, if the query fails). */
static int gemv_sms(void) {
    static int n = 0;
    if (!n) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            n = 132;
    }
    return n;
}

#endif
