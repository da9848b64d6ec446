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

/* chunk_tree32 of N values a lane at once (N a power of 2), by recursive halving: at the step of offset o = 2^s a lane
 * keeps half of its values (the upper half where bit s of its lane is set), sends the other half to lane ^ o and adds
 * what it receives, so each kept value is v_l + v_{l^o} of one index, the butterfly's own pair; once a lane holds one
 * value (N < 32) the remaining steps are the plain butterfly. So every index gets exactly chunk_tree32's tree (float
 * addition commutes bit for bit), with 31·N/32 shuffles for N >= 32 instead of 5·N. After it lane l holds in
 * v[0..K), K = max(N / 32, 1), the sums of the indices chunk_tree_n_idx(i, l); for N < 32 the lanes l < N hold each
 * index once (the others repeat them). dev/chunk_order_sim.py replays it against the butterfly: N = 2..64, 0 differ. */
template <int N, int S> static __device__ __forceinline__ void chunk_tree32_from(float (&v)[N], int lane) {
    if constexpr (S < 5) {
        constexpr int n = N >> S; /* values a lane holds before step S (a constant: the loop below unrolls fully) */
        if constexpr (n >= 2) {
            /* the selects as bit operations on the two values (a choice between two elements can become a choice
             * between their addresses, which puts the array in local memory) */
            const unsigned up = 0u - (unsigned)((lane >> S) & 1);
#pragma unroll
            for (int i = 0; i < n / 2; i++) {
                const unsigned lo = __float_as_uint(v[i]), hi = __float_as_uint(v[i + n / 2]);
                const float send = __uint_as_float((lo & up) | (hi & ~up)), keep = __uint_as_float((hi & up) | (lo & ~up));
                v[i] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, 1 << S));
            }
        } else {
            v[0] = __fadd_rn(v[0], __shfl_xor_sync(0xffffffffu, v[0], 1 << S));
        }
        chunk_tree32_from<N, S + 1>(v, lane);
    }
}

template <int N> static __device__ __forceinline__ void chunk_tree32_n(float (&v)[N], int lane) {
    chunk_tree32_from<N, 0>(v, lane);
}

/* The index whose sum lane `lane` holds in v[i] after chunk_tree32_n<N>. */
template <int N> static __device__ __forceinline__ int chunk_tree_n_idx(int i, int lane) {
    int idx = i, n = N;
#pragma unroll
    for (int s = 0; s < 5; s++)
        if (n >= 2) {
            idx += (n >> 1) * ((lane >> s) & 1);
            n >>= 1;
        }
    return idx;
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
