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

/* A chain's block as the warp loads it: for each of RT row tiles this lane's A-fragment words of rows gid and gid+8
 * with their scales, and for each n8 tile its B-fragment words (hi, lo planes) and the (d, Σq) of its two
 * accumulator columns. */
template <int NT, int RT> struct mm_frag {
    int a[RT][4];
    float dw[RT][2], mw[RT][2];
    int bh[NT][2], bl[NT][2];
    int2 ds[NT][2];
};

template <int T, int NT, int RT>
static __device__ __forceinline__ void mm_load(mm_frag<NT, RT> &f, const uint8_t *const (&wr)[RT][2], int b, int tg,
                                               const int (&bcol)[NT], const int (&ecol)[NT][2], size_t n_in, int nb,
                                               const int8_t *__restrict__ xh, const int8_t *__restrict__ xl,
                                               const int2 *__restrict__ xds) {
#pragma unroll
    for (int rt = 0; rt < RT; rt++) {
        mm_blk<T>(wr[rt][0], b, tg, &f.a[rt][0], &f.a[rt][2], &f.dw[rt][0], &f.mw[rt][0]);
        mm_blk<T>(wr[rt][1], b, tg, &f.a[rt][1], &f.a[rt][3], &f.dw[rt][1], &f.mw[rt][1]);
    }
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        const size_t xo = (size_t)bcol[nt] * n_in + (size_t)b * 32 + 4 * tg;
        f.bh[nt][0] = __ldg((const int *)(xh + xo));
        f.bh[nt][1] = __ldg((const int *)(xh + xo + 16));
        f.bl[nt][0] = __ldg((const int *)(xl + xo));
        f.bl[nt][1] = __ldg((const int *)(xl + xo + 16));
        f.ds[nt][0] = __ldg(xds + (size_t)ecol[nt][0] * nb + b);
        f.ds[nt][1] = __ldg(xds + (size_t)ecol[nt][1] * nb + b);
    }
}

/* The block's two MMAs per (row tile, n8 tile) and the GEMV's float operations on each accumulator element. */
template <int T, int NT, int RT>
static __device__ __forceinline__ void mm_apply(const mm_frag<NT, RT> &f, float (&acc)[RT][NT][4]) {
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            int sh[4], sl[4];
            mma_s8(f.a[rt], f.bh[nt][0], f.bh[nt][1], sh);
            mma_s8(f.a[rt], f.bl[nt][0], f.bl[nt][1], sl);
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int2 ds = f.ds[nt][e & 1];
                const float dx = __int_as_float(ds.x);
                int s = sh[e] * 256 + sl[e];
                if (T == TCU_TYPE_Q4_0R) s -= 8 * ds.y;
                float v = fmaf(__fmul_rn(f.dw[rt][e >> 1], dx), __int2float_rn(s), acc[rt][nt][e]);
                if (T == TCU_TYPE_Q4_KR) v = fmaf(__fmul_rn(f.mw[rt][e >> 1], dx), __int2float_rn(ds.y), v);
                acc[rt][nt][e] = v;
            }
        }
}

/* v[0..N) summed as the xor tree sums N consecutive leaves: pairs (0,1), (2,3), ..., then pairs of pairs. N a power
 * of 2, v overwritten. */
template <int N> static __device__ __forceinline__ float tree_sum(float *v) {
#pragma unroll
    for (int w = 1; w < N; w *= 2)
#pragma unroll
        for (int i = 0; i < N; i += 2 * w) v[i] = __fadd_rn(v[i], v[i + w]);
    return v[0];
}

/* One CTA = one unit (16·RT rows from r0, 8·NT columns from c0). Warp w = (32/Q)·grp + j owns the Q chains
 * t = 32·grp + brev5(Q·j + q), q < Q: the complete Q-leaf subtree j of 32-chain tree grp. PF: the next chain's loads
 * issued before this chain's MMAs (registers for two fragments). RT row tiles share each B fragment. nb >= 1. */
template <int T, int C, int Q, int NT, int RT, int PF>
__global__ void __launch_bounds__(32 * C / Q)
gemm_mma_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
           const int8_t *__restrict__ xl, const int2 *__restrict__ xds, int m, float *__restrict__ y) {
    constexpr int NW = C / Q, SUB = 32 / Q, COLS = 8 * NT, ROWS = MM_ROWS * RT; /* warps, subtrees a tree, unit */
    __shared__ float part[NW][ROWS][COLS];
    pdl_trigger();
    pdl_wait();
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, gid = lane >> 2, tg = lane & 3;
    const int ncg = (m + COLS - 1) / COLS;
    const int r0 = (int)(blockIdx.x / ncg) * ROWS, c0 = (int)(blockIdx.x % ncg) * COLS;
    const int grp = warp / SUB, j = warp % SUB;
    const size_t n_in = (size_t)nb * 32;
    /* this lane's weight rows (the A fragment's and the accumulator's) and B-fragment columns, clamped for loads */
    const uint8_t *wr[RT][2];
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = r0 + 16 * rt + 8 * h + gid;
            wr[rt][h] = w + (size_t)(r < n_out ? r : n_out - 1) * stride;
        }
    int bcol[NT], ecol[NT][2];
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        const int cb = c0 + 8 * nt + gid;
        bcol[nt] = cb < m ? cb : m - 1;
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int ce = c0 + 8 * nt + 2 * tg + e;
            ecol[nt][e] = ce < m ? ce : m - 1;
        }
    }
    /* acc[q][rt][nt][e]: chain q, row tile rt, n8 tile nt, accumulator element e (rows gid, gid+8 x columns 2tg,
     * 2tg+1) */
    float acc[Q][RT][NT][4];
#pragma unroll
    for (int q = 0; q < Q; q++)
#pragma unroll
        for (int rt = 0; rt < RT; rt++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[q][rt][nt][e] = 0.0f;
    const int steps = (nb + C - 1) / C, base = 32 * grp;
    for (int k = 0; k < steps; k++) {
        if (PF) {
            mm_frag<NT, RT> f[2];
            int bq = base + brev5(Q * j) + C * k;
            if (bq < nb) mm_load<T, NT, RT>(f[0], wr, bq, tg, bcol, ecol, n_in, nb, xh, xl, xds);
#pragma unroll
            for (int q = 0; q < Q; q++) {
                const int bn = q + 1 < Q ? base + brev5(Q * j + q + 1) + C * k : nb;
                if (bn < nb) mm_load<T, NT, RT>(f[(q + 1) & 1], wr, bn, tg, bcol, ecol, n_in, nb, xh, xl, xds);
                if (bq < nb) mm_apply<T, NT, RT>(f[q & 1], acc[q]); /* warp-uniform */
                bq = bn;
            }
        } else {
#pragma unroll
            for (int q = 0; q < Q; q++) {
                const int b = base + brev5(Q * j + q) + C * k;
                if (b >= nb) continue; /* warp-uniform */
                mm_frag<NT, RT> f;
                mm_load<T, NT, RT>(f, wr, b, tg, bcol, ecol, n_in, nb, xh, xl, xds);
                mm_apply<T, NT, RT>(f, acc[q]);
            }
        }
    }
    /* the subtree of leaves Q·j .. Q·j+Q-1 */
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float v[Q];
#pragma unroll
                for (int q = 0; q < Q; q++) v[q] = acc[q][rt][nt][e];
                part[warp][16 * rt + gid + 8 * (e >> 1)][8 * nt + 2 * tg + (e & 1)] = tree_sum<Q>(v);
            }
    __syncthreads();
    /* the tree's top levels over the SUB subtrees, then C = 128's four trees in order (reduce.cuh) */
    for (int o = (int)threadIdx.x; o < ROWS * COLS; o += 32 * NW) {
        const int rr = o / COLS, cc = o % COLS;
        if (r0 + rr >= n_out || c0 + cc >= m) continue;
        float v = 0.0f;
#pragma unroll
        for (int g = 0; g < C / 32; g++) {
            float sv[SUB];
#pragma unroll
            for (int s2 = 0; s2 < SUB; s2++) sv[s2] = part[SUB * g + s2][rr][cc];
            const float t = tree_sum<SUB>(sv);
            v = g == 0 ? t : __fadd_rn(v, t);
        }
        y[(size_t)(c0 + cc) * n_out + r0 + rr] = v;
    }
}

template <int T, int C, int Q, int NT, int RT, int PF>
static void mma_launch1(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *xh, const int8_t *xl,
                        const int2 *xds, int m, float *y, cudaStream_t st) {
    const int64_t units = (int64_t)((n_out + 16 * RT - 1) / (16 * RT)) * ((m + 8 * NT - 1) / (8 * NT));
    PDL_LAUNCH((gemm_mma_k<T, C, Q, NT, RT, PF>), dim3((unsigned)units), dim3(32 * C / Q), 0, st, w, stride, nb, n_out, xh,
               xl, xds, m, y);
}

/* The arms under measurement (issue 26; docs/ledger.md, "The MMA GEMM sweeps"): chains a warp Q, n8 tiles a unit NT, 16-row tiles a
 * unit RT, prefetch PF. */
#define MMA_ARMS 8
template <int T, int C>
static void mma_arm(int arm, const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *xh, const int8_t *xl,
                    const int2 *xds, int m, float *y, cudaStream_t st) {
    switch (arm) {
    case 1: mma_launch1<T, C, 8, 2, 1, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, st); break;
    case 2: mma_launch1<T, C, 4, 2, 1, 0>(w, stride, nb, n_out, xh, xl, xds, m, y, st); break;
    case 3: mma_launch1<T, C, 4, 2, 1, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, st); break;
    case 4: mma_launch1<T, C, 8, 1, 1, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, st); break;
    case 5: mma_launch1<T, C, 4, 1, 1, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, st); break;
    case 6: mma_launch1<T, C, 4, 1, 2, 0>(w, stride, nb, n_out, xh, xl, xds, m, y, st); break;
    case 7: mma_launch1<T, C, 4, 1, 2, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, st); break;
    default: mma_launch1<T, C, 8, 2, 1, 0>(w, stride, nb, n_out, xh, xl, xds, m, y, st); break; /* v1 */
    }
}

template <int T>
static void mma_launch(int arm, int C, const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *xh,
                       const int8_t *xl, const int2 *xds, int m, float *y, cudaStream_t st) {
    if (C == 128) mma_arm<T, 128>(arm, w, stride, nb, n_out, xh, xl, xds, m, y, st);
    else mma_arm<T, 32>(arm, w, stride, nb, n_out, xh, xl, xds, m, y, st);
}

extern "C" int tcu_gemm_mma_supported(int t) {
    return t == TCU_TYPE_Q4_0R || t == TCU_TYPE_Q8_0R || t == TCU_TYPE_Q4_KR;
}

extern "C" int tcu_gemm_mma_arm(int arm, int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out,
                                const void *xq, int m, float *y, cudaStream_t st) {
    if (!tcu_gemm_mma_supported(t) || m < 1 || n_out < 1 || n_in < 32 || arm < 0 || arm >= MMA_ARMS) return 0;
    if (fam != 0 && fam != 1 && fam != 3) fam = tcu_gemv_dp4a_family(t, row_bytes, n_in, n_out);
    const int C = fam == 0 ? 128 : 32, nb = (int)(n_in / 32);
    const size_t pb = x16_plane_bytes(m, n_in);
    const int8_t *xh = (const int8_t *)xq, *xl = (const int8_t *)xq + pb;
    const int2 *xds = (const int2 *)((const char *)xq + 2 * pb);
    const uint8_t *wb = (const uint8_t *)w;
    if (t == TCU_TYPE_Q4_0R) mma_launch<TCU_TYPE_Q4_0R>(arm, C, wb, row_bytes, nb, (int)n_out, xh, xl, xds, m, y, st);
    else if (t == TCU_TYPE_Q8_0R) mma_launch<TCU_TYPE_Q8_0R>(arm, C, wb, row_bytes, nb, (int)n_out, xh, xl, xds, m, y, st);
    else mma_launch<TCU_TYPE_Q4_KR>(arm, C, wb, row_bytes, nb, (int)n_out, xh, xl, xds, m, y, st);
    return 1;
}

extern "C" int tcu_gemm_mma(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq,
                            int m, float *y, cudaStream_t st) {
    return tcu_gemm_mma_arm(0, fam, t, w, row_bytes, n_in, n_out, xq, m, y, st);
}
