/* reduce.cuh: what the GEMV files (gemv.cu, gemv_dp4a.cu) share: the SM count their persistent grids are
 * sized by, and the fixed-order CTA reduction their kernels end with, in one place because their
 * bit-identity rests on it: the single-row and multi-row kernels must sum every
 * output in the same order. Order: an xor-shuffle tree inside each warp (offsets 16, 8, 4, 2, 1), then
 * warps 0..W-1 added in order by one thread per output. */
#ifndef TERN_CUDA_REDUCE_CUH
#define TERN_CUDA_REDUCE_CUH
#include <stddef.h>

/* acc[j] (j < N): this thread's partial of output j. part: __shared__ float[W][N] scratch. The warp trees of acc[j]
 * into part[warp][j], then (after a barrier) thread j < nout sums part[0..W-1][j] in order into y[j * ystride], then
 * a barrier (part may be reused at once). Call from every thread. */
template <int W, int N>
static __device__ __forceinline__ void cta_sum_out(const float (&acc)[N], float (*part)[N], int nout, float *y,
                                                   size_t ystride) {
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
#pragma unroll
    for (int j = 0; j < N; j++) {
        float s = acc[j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) part[warp][j] = s;
    }
    __syncthreads();
    if (tid < nout) {
        float s = part[0][tid];
#pragma unroll
        for (int k = 1; k < W; k++) s += part[k][tid];
        y[(size_t)tid * ystride] = s;
    }
    __syncthreads();
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
