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

/* ---- the chunk-major order (issue 26 v2; tcu_gemv_order_set(1), TERN_GEMV_CHUNK=1) ------------------------------
 * The canonical float order of an output (row r, column c) over nb blocks of 32 elements, followed bit for bit by
 * every dp4a GEMV family (gemv_dp4a.cu, its m-column twins) and by gemm_mma.cu's v2, so a token's bits do not depend
 * on the kernel its pass size picks, nor on the family (all families give the same bits in this order):
 *   leaf p_b = chunk_leaf(dw_b, dx_b, isum_b[, mw_b, Σq_b]): (dw·dx)·(float)isum, as products, no accumulator
 *              (Q4_K / any type with a min term: fma(mw·dx, (float)Σq, (dw·dx)·(float)isum)); isum the block's exact
 *              int32 dot (Q4_0: minus 8·Σq), (float) round-to-nearest-even;
 *   chunk j  = blocks 32j .. 32j+31; T_j = the balanced binary tree over its 32 leaves in block order, adjacent
 *              pairs first: ((p0+p1)+(p2+p3))+..., exactly chunk_tree32 (an xor butterfly, offsets 1, 2, 4, 8, 16)
 *              with lane l holding p_{32j+l}, and +0.0f for the leaves past nb;
 *   output   = T_0 + T_1 + ... in chunk order (acc = -0.0f, acc = acc + T_j: -0.0 is the exact identity of IEEE
 *              round-to-nearest addition, so the first add gives T_0 itself, -0.0 included).
 * Every operation is an explicit _rn intrinsic: no contraction can fuse a product into a sum. A kernel that owns
 * consecutive leaves instead of lanes builds T_j with a pairwise stack (gemm_mma.cu v2: push a leaf, combine while the
 * two top entries have equal level), which pairs the same leaves: dev/chunk_order_sim.py checks both against the
 * butterfly in float32 for nb = 1..100. Float addition is commutative bit for bit (a + b == b + a), so which of two
 * lanes' operands comes first in the butterfly does not matter. */
static __device__ __forceinline__ float chunk_leaf(float dw, float dx, int isum, float mw, int sq, bool kmin) {
    const float p = __fmul_rn(__fmul_rn(dw, dx), __int2float_rn(isum));
    return kmin ? __fmaf_rn(__fmul_rn(mw, dx), __int2float_rn(sq), p) : p;
}

/* T_j of the 32 lanes' leaves (every lane gets it). Call from all 32 lanes. */
static __device__ __forceinline__ float chunk_tree32(float v) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
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
