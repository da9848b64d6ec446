/* sample.cu: greedy argmax on the device, so a decode step copies back one token id.
 * One CTA of 1024 threads: thread-strided scan, then a tree over (value, index) pairs; the order
 * "larger value, then lower index; NaN never" makes the result equal tern_argmax (src/sampler.c). */
#include <math.h>

#include "cuda/tcu.h"

#define ARGMAX_THREADS 1024

static __device__ __forceinline__ int am_better(float v, int i, float bv, int bi) {
    if (i < 0) return 0;
    if (bi < 0) return 1;
    return v > bv || (v == bv && i < bi);
}

__global__ void __launch_bounds__(ARGMAX_THREADS) argmax_k(const float *x, int n, int32_t *out) {
    __shared__ float sv[ARGMAX_THREADS];
    __shared__ int si[ARGMAX_THREADS];
    float bv = 0.0f;
    int bi = -1;
    for (int i = threadIdx.x; i < n; i += ARGMAX_THREADS) {
        const float v = x[i];
        if (!isnan(v) && am_better(v, i, bv, bi)) { bv = v; bi = i; }
    }
    sv[threadIdx.x] = bv;
    si[threadIdx.x] = bi;
    __syncthreads();
    for (int s = ARGMAX_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s && am_better(sv[threadIdx.x + s], si[threadIdx.x + s], sv[threadIdx.x], si[threadIdx.x])) {
            sv[threadIdx.x] = sv[threadIdx.x + s];
            si[threadIdx.x] = si[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = si[0] < 0 ? 0 : si[0];
}

extern "C" void tcu_argmax(const float *x, int n, int32_t *out, cudaStream_t st) {
    argmax_k<<<1, ARGMAX_THREADS, 0, st>>>(x, n, out);
}
