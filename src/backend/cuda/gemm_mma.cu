/* gemm_mma.cu: the small-M quantized GEMM of batched decode (issue 26): y (m, n_out) = W · x_c for m columns of
 * x16 activations (gemv_dp4a.cu's format), the weights read once for all columns, each 32-element block's integer
 * dot on the tensor cores (mma.sync m16n8k32 s8: K = 32 is one block; the 16-bit activation is its two int8
 * planes, two MMAs, 256·Σw·hi + Σw·lo exact in int32 as the dp4a kernels' sum).
 *
 * Batch invariance: column c's bits equal tcu_gemv_dp4a's one-column call on x_c in the weight's family, so a
 * token's logits do not depend on how many others share its pass or which kernel the pass size picked. The
 * float part repeats the GEMV's operations in its order: per block acc = fma(dw*dx, (float)isum, acc) (Q4_K: then
 * fma(mw*dx, (float)Σq, acc)) along a chain of blocks t, t+C, t+2C, ... (C = 128 for the cta family, where thread
 * t of 4 warps owns the chain; C = 32 for the warp and tma families, lane t), then the xor-shuffle tree of 32
 * chains (offsets 16, 8, 4, 2, 1), then for C = 128 the 4 warps' trees added in order (reduce.cuh).
 * The tree in bit-reversed order: chain l sits at leaf i = brev5(l), and the xor tree pairs leaves i, i^1, then
 * pairs of pairs... So the 8 chains of leaves [8j, 8j+8) form a complete subtree, which one warp here computes
 * (all 8 chains advance together, a block of each a step); the CTA adds the subtrees as the tree does,
 * ((S0 + S1) + (S2 + S3)), and C = 128's four trees in order. A CTA is C/8 warps on one unit of 16 weight rows
 * and 16 columns (two n8 tiles; each lane's MMA rows are its epilogue's rows, so a row's scale is a register).
 *
 * Types: the repacked Q4_0R, Q8_0R, Q4_KR (tcu.h), the layouts every Q4_0 / Q8_0 / Q4_K weight is uploaded in;
 * tcu_gemm_mma returns 0 for the rest (the caller runs the dp4a twins). Reference: tests/gpu/gpu_multi.c compares
 * every column with the one-column dp4a call (memcmp) for each family and type. */
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda/check.cuh"
#include "cuda/dequant.cuh"
#include "cuda/pdl.cuh"
#include "cuda/tcu.h"
#include "cuda/x16.cuh"

#define MM_ROWS 16 /* weight rows of a unit (the MMA's M) */
#define MM_COLS 16 /* columns of a unit: two n8 tiles */
#define MM_CHAINS 8 /* chains a warp: a complete 8-leaf subtree of the 32-chain tree */

static __device__ __forceinline__ int brev5(int x) { return (int)(__brev((unsigned)x) >> 27); }

/* d (16x8 s32) = a (16x32 s8, row) · b (32x8 s8, col); fragments as PTX ISA "mma.m16n8k32" lays them out. */
static __device__ __forceinline__ void mma_s8(const int (&a)[4], int b0, int b1, int (&d)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%10,%10,%10};\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
#else
    d[0] = d[1] = d[2] = d[3] = 0;
#endif
}

/* Block b of a row: this lane's two words of quants (elements 4tg..4tg+3 in lo, 16+4tg..16+4tg+3 in hi, the A
 * fragment's layout) and the row's dw, mw, as gemv_dp4a.cu's load_blk decodes them. */
template <int T>
static __device__ __forceinline__ void mm_blk(const uint8_t *__restrict__ row, int b, int tg, int *lo, int *hi, float *dw,
                                              float *mw) {
    if (T == TCU_TYPE_Q4_0R) {
        const uint8_t *g = row + (size_t)(b >> 3) * RQ40_GROUP;
        *dw = dq_h2f(dq_ld16(g + 2 * (b & 7)));
        *mw = 0.0f;
        const uint32_t w = __ldg((const unsigned *)(g + 16 + 16 * (b & 7)) + tg);
        *lo = (int)(w & 0x0F0F0F0Fu);
        *hi = (int)((w >> 4) & 0x0F0F0F0Fu);
    } else if (T == TCU_TYPE_Q8_0R) {
        const uint8_t *g = row + (size_t)(b >> 3) * RQ80_GROUP;
        *dw = dq_h2f(dq_ld16(g + 2 * (b & 7)));
        *mw = 0.0f;
        const unsigned *q = (const unsigned *)(g + 16 + 32 * (b & 7));
        *lo = (int)__ldg(q + tg);
        *hi = (int)__ldg(q + 4 + tg);
    } else { /* TCU_TYPE_Q4_KR */
        const uint8_t *p = row + (size_t)(b >> 3) * 144;
        k4_header(p, b & 7, dw, mw);
        const uint32_t w = __ldg((const unsigned *)(p + 16 + 16 * (b & 7)) + tg);
        *lo = (int)(w & 0x0F0F0F0Fu);
        *hi = (int)((w >> 4) & 0x0F0F0F0Fu);
    }
}

/* One CTA = one unit (rows r0.., columns c0..); warp w = 4 * grp + j owns the chains t = 32 grp + brev5(8j + q),
 * q < 8. nb >= 1. */
template <int T, int C>
__global__ void __launch_bounds__(32 * C / 8)
gemm_mma_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
           const int8_t *__restrict__ xl, const int2 *__restrict__ xds, int m, float *__restrict__ y) {
    constexpr int NW = C / 8;
    __shared__ float part[NW][MM_ROWS][MM_COLS];
    pdl_trigger();
    pdl_wait();
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, gid = lane >> 2, tg = lane & 3;
    const int ncg = (m + MM_COLS - 1) / MM_COLS;
    const int r0 = (int)(blockIdx.x / ncg) * MM_ROWS, c0 = (int)(blockIdx.x % ncg) * MM_COLS;
    const int grp = warp >> 2, j = warp & 3;
    const size_t n_in = (size_t)nb * 32;
    /* this lane's weight rows (the A fragment's and the accumulator's) and B-fragment columns, clamped for loads */
    const int ra = r0 + gid < n_out ? r0 + gid : n_out - 1, rb = r0 + gid + 8 < n_out ? r0 + gid + 8 : n_out - 1;
    const uint8_t *wa = w + (size_t)ra * stride, *wb = w + (size_t)rb * stride;
    int bcol[2], ecol[2][2];
#pragma unroll
    for (int nt = 0; nt < 2; nt++) {
        const int cb = c0 + 8 * nt + gid;
        bcol[nt] = cb < m ? cb : m - 1;
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int ce = c0 + 8 * nt + 2 * tg + e;
            ecol[nt][e] = ce < m ? ce : m - 1;
        }
    }
    /* acc[q][nt][e]: chain q, tile nt, accumulator element e (rows gid, gid+8 x columns 2tg, 2tg+1) */
    float acc[MM_CHAINS][2][4];
#pragma unroll
    for (int q = 0; q < MM_CHAINS; q++)
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[q][nt][e] = 0.0f;
    const int steps = (nb + C - 1) / C;
    for (int k = 0; k < steps; k++) {
#pragma unroll
        for (int q = 0; q < MM_CHAINS; q++) {
            const int b = 32 * grp + brev5(8 * j + q) + C * k;
            if (b >= nb) continue; /* warp-uniform */
            int a[4];
            float dwa, dwb, mwa, mwb;
            mm_blk<T>(wa, b, tg, &a[0], &a[2], &dwa, &mwa);
            mm_blk<T>(wb, b, tg, &a[1], &a[3], &dwb, &mwb);
#pragma unroll
            for (int nt = 0; nt < 2; nt++) {
                const size_t xo = (size_t)bcol[nt] * n_in + (size_t)b * 32 + 4 * tg;
                const int bh0 = __ldg((const int *)(xh + xo)), bh1 = __ldg((const int *)(xh + xo + 16));
                const int bl0 = __ldg((const int *)(xl + xo)), bl1 = __ldg((const int *)(xl + xo + 16));
                int sh[4], sl[4];
                mma_s8(a, bh0, bh1, sh);
                mma_s8(a, bl0, bl1, sl);
                const int2 dsc[2] = {__ldg(xds + (size_t)ecol[nt][0] * nb + b), __ldg(xds + (size_t)ecol[nt][1] * nb + b)};
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int2 ds = dsc[e & 1];
                    const float dx = __int_as_float(ds.x), dw = e < 2 ? dwa : dwb;
                    int s = sh[e] * 256 + sl[e];
                    if (T == TCU_TYPE_Q4_0R) s -= 8 * ds.y;
                    float v = fmaf(__fmul_rn(dw, dx), __int2float_rn(s), acc[q][nt][e]);
                    if (T == TCU_TYPE_Q4_KR) v = fmaf(__fmul_rn(e < 2 ? mwa : mwb, dx), __int2float_rn(ds.y), v);
                    acc[q][nt][e] = v;
                }
            }
        }
    }
    /* the subtree of leaves 8j..8j+7: ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)) */
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float s01 = __fadd_rn(acc[0][nt][e], acc[1][nt][e]), s23 = __fadd_rn(acc[2][nt][e], acc[3][nt][e]);
            const float s45 = __fadd_rn(acc[4][nt][e], acc[5][nt][e]), s67 = __fadd_rn(acc[6][nt][e], acc[7][nt][e]);
            part[warp][gid + 8 * (e >> 1)][8 * nt + 2 * tg + (e & 1)] =
                __fadd_rn(__fadd_rn(s01, s23), __fadd_rn(s45, s67));
        }
    __syncthreads();
    for (int o = (int)threadIdx.x; o < MM_ROWS * MM_COLS; o += 32 * NW) {
        const int rr = o / MM_COLS, cc = o % MM_COLS;
        if (r0 + rr >= n_out || c0 + cc >= m) continue;
        float v = 0.0f;
#pragma unroll
        for (int g = 0; g < C / 32; g++) {
            const float *p = &part[4 * g][rr][cc];
            const size_t ws = MM_ROWS * MM_COLS; /* one warp's part */
            const float t = __fadd_rn(__fadd_rn(p[0], p[ws]), __fadd_rn(p[2 * ws], p[3 * ws]));
            v = g == 0 ? t : __fadd_rn(v, t);
        }
        y[(size_t)(c0 + cc) * n_out + r0 + rr] = v;
    }
}

template <int T>
static void mma_launch(int C, const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *xh, const int8_t *xl,
                       const int2 *xds, int m, float *y, cudaStream_t st) {
    const int64_t units = (int64_t)((n_out + MM_ROWS - 1) / MM_ROWS) * ((m + MM_COLS - 1) / MM_COLS);
    if (C == 128)
        PDL_LAUNCH((gemm_mma_k<T, 128>), dim3((unsigned)units), dim3(32 * 128 / 8), 0, st, w, stride, nb, n_out, xh, xl, xds,
                   m, y);
    else
        PDL_LAUNCH((gemm_mma_k<T, 32>), dim3((unsigned)units), dim3(32 * 32 / 8), 0, st, w, stride, nb, n_out, xh, xl, xds,
                   m, y);
}

extern "C" int tcu_gemm_mma_supported(int t) {
    return t == TCU_TYPE_Q4_0R || t == TCU_TYPE_Q8_0R || t == TCU_TYPE_Q4_KR;
}

extern "C" int tcu_gemm_mma(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq,
                            int m, float *y, cudaStream_t st) {
    if (!tcu_gemm_mma_supported(t) || m < 1 || n_out < 1 || n_in < 32) return 0;
    if (fam != 0 && fam != 1 && fam != 3) fam = tcu_gemv_dp4a_family(t, row_bytes, n_in, n_out);
    const int C = fam == 0 ? 128 : 32, nb = (int)(n_in / 32);
    const size_t pb = x16_plane_bytes(m, n_in);
    const int8_t *xh = (const int8_t *)xq, *xl = (const int8_t *)xq + pb;
    const int2 *xds = (const int2 *)((const char *)xq + 2 * pb);
    const uint8_t *wb = (const uint8_t *)w;
    if (t == TCU_TYPE_Q4_0R) mma_launch<TCU_TYPE_Q4_0R>(C, wb, row_bytes, nb, (int)n_out, xh, xl, xds, m, y, st);
    else if (t == TCU_TYPE_Q8_0R) mma_launch<TCU_TYPE_Q8_0R>(C, wb, row_bytes, nb, (int)n_out, xh, xl, xds, m, y, st);
    else mma_launch<TCU_TYPE_Q4_KR>(C, wb, row_bytes, nb, (int)n_out, xh, xl, xds, m, y, st);
    return 1;
}
