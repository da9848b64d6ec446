/* gemm_mma.cu: the small-M quantized GEMM of batched decode in the chunk order (issue 26, "v2"): y (m, n_out) = W · x_c
 * for m columns of x16 activations (gemv_dp4a.cu's format), the weights read once for all columns, each 32-element
 * block's integer dot on the tensor cores (mma.sync m16n8k32 s8: K = 32 is one block; the 16-bit activation is its two
 * int8 planes, two MMAs, 256·Σw·hi + Σw·lo exact in int32 as the dp4a kernels' sum).
 *
 * Batch invariance: column c's bits equal tcu_gemv_dp4a's one-column call on x_c in the chunk-major order
 * (tcu_gemv_order_set(1), TERN_GEMV_CHUNK=1; the order is defined once, in reduce.cuh), so a token's logits do not
 * depend on how many others share its pass or which kernel the pass size picked.
 * v1, the same MMAs in today's GEMV order (chains of blocks t, t+C, ... and a 32-leaf xor tree), was measured no faster
 * than the dp4a twins in eight arms (docs/ledger.md 2026-12-02 "the MMA GEMM's eight arms": the order needs C = 32..128
 * live chains an output) and was deleted on 2026-12-07 (ledger "gemm_mma v1 deleted").
 * Types: the repacked Q4_0R, Q8_0R, Q4_KR (tcu.h), the layouts every Q4_0 / Q8_0 / Q4_K weight is uploaded in;
 * tcu_gemm_mma_v2_* return 0 for the rest (the caller runs the dp4a twins). Reference: tests/gpu/gpu_mma.c compares
 * every column of every arm with the one-column dp4a call (memcmp) for each type. */
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda/check.cuh"
#include "cuda/dequant.cuh"
#include "cuda/pdl.cuh"
#include "cuda/reduce.cuh"
#include "cuda/tcu.h"
#include "cuda/x16.cuh"

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

extern "C" int tcu_gemm_mma_supported(int t) {
    return t == TCU_TYPE_Q4_0R || t == TCU_TYPE_Q8_0R || t == TCU_TYPE_Q4_KR;
}

/* ==== v2: a K-streaming tile in the chunk-major order (issue 26 v2) ================================================
 * Column c of v2 equals the one-column tcu_gemv_dp4a in the chunk order (tcu_gemv_order_set(1); the order
 * is defined once, in reduce.cuh): per output the leaves p_b = chunk_leaf(...) of blocks b = 0..nb-1, a 32-block
 * chunk's adjacent-pair tree T_j, then acc = -0.0 + T_0 + T_1 + ... in order. A tile streams K with three live floats
 * an output (below), where today's order needs C = 32..128 chains an output.
 *
 * Tile: a CTA owns BM = 16·RT·WR weight rows x BN = 8·NT·WC columns (blockIdx: column tiles fastest, so the CTAs
 * that share a row tile's weights run together and the second read hits L2). K streams in steps of KW repacked groups
 * of 8 blocks (a group is 256 elements: a contiguous 144-byte Q4_0R / Q4_KR or 272-byte Q8_0R piece of each row), NS
 * stages deep in shared memory by cp.async (16-byte pieces, the missing ones of a partial last group and of blocks
 * >= nb zero-filled, 8-byte pieces for the (d, Σq) pairs): the weights of the first NS-1 steps are requested before
 * pdl_wait (constant data, pdl.cuh), the activations after it. A warp owns a 16·RT x 8·NT piece of the tile and one
 * group of each step (mm2_cfg): per block and (row tile, n8 tile) two mma.sync m16n8k32 s8 (the hi and lo planes,
 * 256·Σw·hi + Σw·lo = the dp4a sum exactly), then each of the lane's 4 accumulator elements forms its leaf and pushes
 * it into its pairwise stack.
 *
 * The pairwise stack, on paper. Push leaves p_0, p_1, ... of a chunk; entry = (value, level); after a push, while the
 * top two entries have equal level k, pop both and push (lower + upper, k + 1). After leaf i the stack holds one entry
 * per set bit of i + 1 (the binary counter), the entry of bit k being the sum over the 2^k consecutive leaves it covers,
 * formed as (left half) + (right half) of those leaves: the node of the balanced adjacent-pair tree over that aligned
 * range [2^k·a, 2^k·(a+1)). The butterfly (offsets 1, 2, 4, 8, 16; reduce.cuh chunk_tree32) forms at step k on lane l
 * v_l + v_{l^2^k}: by induction each lane holds the node over the aligned 2^k-range containing l, and the step adds
 * the two aligned halves of the 2^(k+1)-range, the same pair of nodes (in either order: float addition commutes
 * bit for bit). So both give T_j = node over [0, 32), including the +0.0 leaves past nb (pushed here as zeros: a
 * block >= nb has zero-filled weights, scale and activations, so its leaf is (0·0)·0 = +0.0; a whole step past the
 * last group pushes +0.0 subtrees without loads). dev/chunk_order_sim.py checks both, and the layout below, in float32.
 * Layout of the stack here: the 8 blocks of a K step are unrolled, so levels 0-2 are compile-time temporaries and the
 * step ends with the 8-leaf subtree S (level 3); levels 3 and 4 live in two registers across steps: step s = k mod 4 of
 * the chunk does s=0: L3 = S; s=1: L4 = L3 + S; s=2: L3 = S; s=3: acc = acc + (L4 + (L3 + S)). Live floats an output
 * between steps: acc, L3, L4. With KW > 1 the KW subtrees of a step are combined the same way by one warp (mm2_cfg).
 *
 * Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k32" with .s8; gid = lane >> 2, tg = lane & 3):
 *   A (16x32 s8, row): a0 = A[gid][4tg..4tg+3], a1 = A[gid+8][4tg..4tg+3], a2 = A[gid][16+4tg..], a3 = A[gid+8][16+4tg..]
 *   B (32x8 s8, col):  b0 = B[4tg..4tg+3][gid], b1 = B[16+4tg..16+4tg+3][gid]
 *   D (16x8 s32):      d0 = D[gid][2tg], d1 = D[gid][2tg+1], d2 = D[gid+8][2tg], d3 = D[gid+8][2tg+1]
 * The MMA's k index κ is mapped to the block's element π(κ): κ = 4tg+i -> 8tg+i, κ = 16+4tg+i -> 8tg+4+i (i < 4), a
 * bijection on 0..31, the same for A and B, so Σ_κ A·B is the block's dot exactly; it makes a lane's two words of a
 * plane (b0, b1) the adjacent bytes 8tg..8tg+7 of the activation block, one 8-byte shared load, and a0/a2 (a1/a3) one
 * 8-byte load of a weight row: Q8_0R bytes 8tg..8tg+7 of the block's quants; Q4_0R / Q4_KR (byte i: element i low
 * nibble, element i+16 high) bytes 8(tg&1)..+7, low nibbles for tg < 2, high for tg >= 2.
 * Shared memory a stage (bank-conflict-free 8-byte loads: a half warp's row/column strides are 8 words mod 32, or 4
 * words with two lanes on each address): weights BM rows x SW bytes (SW = 144, or 288 for Q8_0R's 272), activations
 * BN columns x 544 bytes (hi 256, lo 256, 32 of padding), (d, Σq) as [8 blocks][BN] int2 (a lane's two columns one
 * 16-byte load). */
#define MM2_XCOL 544 /* bytes of a column's step in shared memory: hi 256, lo 256, pad */

template <int T> struct mm2_fmt {
    static constexpr int GB = T == TCU_TYPE_Q8_0R ? RQ80_GROUP : (T == TCU_TYPE_Q4_0R ? RQ40_GROUP : 144); /* group bytes */
    static constexpr int SW = T == TCU_TYPE_Q8_0R ? 288 : 144; /* a row's group in shared memory */
    static constexpr int QB = T == TCU_TYPE_Q8_0R ? 32 : 16;   /* quant bytes a block */
};

static __device__ __forceinline__ uint32_t mm2_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16 (8) bytes global -> shared, zero-filled when !ok (src must still be a valid address). */
static __device__ __forceinline__ void mm2_cp16(void *dst, const void *src, bool ok) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(mm2_smem(dst)), "l"(src), "r"(ok ? 16 : 0)
                 : "memory");
#endif
}
/* 16 bytes into shared memory of which the first n (0..16) come from src, the rest zero-filled. */
static __device__ __forceinline__ void mm2_cp16n(void *dst, const void *src, int n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(mm2_smem(dst)), "l"(src), "r"(n) : "memory");
#endif
}
static __device__ __forceinline__ void mm2_cp8(void *dst, const void *src, bool ok) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(mm2_smem(dst)), "l"(src), "r"(ok ? 8 : 0)
                 : "memory");
#endif
}
static __device__ __forceinline__ void mm2_commit(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N> static __device__ __forceinline__ void mm2_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/* Group g's weight pieces (BM rows from r0, rows past n_out clamped: loaded, never written) into stage ws; a group
 * past nb (a step of KW > 1 groups that runs past the last) is all zeros. */
template <int T, int BM, int NTH>
static __device__ __forceinline__ void mm2_issue_w(uint8_t *ws, const uint8_t *__restrict__ w, size_t stride, int nb,
                                                   int n_out, int r0, int g) {
    typedef mm2_fmt<T> F;
    constexpr int PW = F::GB / 16;
    const int left = nb - 8 * g; /* a partial last group: 16 + QB·left bytes (tcu.h) */
    const int gbytes = left >= 8 ? F::GB : left > 0 ? 16 + F::QB * left : 0;
    for (int i = (int)threadIdx.x; i < BM * PW; i += NTH) {
        const int rr = i / PW, p = i - rr * PW, r = r0 + rr < n_out ? r0 + rr : n_out - 1;
        const uint8_t *src = w + (size_t)r * stride + (left > 0 ? (size_t)g * F::GB : 0);
        const bool ok = 16 * p < gbytes;
        /* a partial group's header: only its live blocks' f16 scales, the slots past nb zero-filled (the upload zeroes
         * them, a caller's buffer may not; the GEMV never reads them, and a NaN there would reach the leaf) */
        const int n = !ok ? 0 : p == 0 && left < 8 && T != TCU_TYPE_Q4_KR ? 2 * left : 16;
        mm2_cp16n(ws + rr * F::SW + 16 * p, ok ? src + 16 * p : src, n);
    }
}

/* Step g's activation pieces of BN columns from c0 (columns past m clamped) into stage xs (planes) and ds_s (pairs). */
template <int BN, int NTH>
static __device__ __forceinline__ void mm2_issue_x(uint8_t *xs, int2 *ds_s, const int8_t *__restrict__ xh,
                                                   const int8_t *__restrict__ xl, const int2 *__restrict__ xds, int nb,
                                                   int m, int c0, int g) {
    const size_t n_in = (size_t)nb * 32;
    for (int i = (int)threadIdx.x; i < BN * 32; i += NTH) { /* column, plane, 16 pieces of 16 bytes */
        const int cc = i >> 5, pl = (i >> 4) & 1, p = i & 15, c = c0 + cc < m ? c0 + cc : m - 1;
        const int b = 8 * g + (p >> 1);
        const int8_t *src = (pl ? xl : xh) + (size_t)c * n_in;
        const bool ok = b < nb;
        mm2_cp16(xs + cc * MM2_XCOL + 256 * pl + 16 * p, ok ? src + (size_t)b * 32 + 16 * (p & 1) : src, ok);
    }
    for (int i = (int)threadIdx.x; i < BN * 8; i += NTH) {
        const int cc = i >> 3, t = i & 7, c = c0 + cc < m ? c0 + cc : m - 1, b = 8 * g + t;
        const bool ok = b < nb;
        mm2_cp8(ds_s + t * BN + cc, xds + (size_t)c * nb + (ok ? b : 0), ok);
    }
}

/* A fragment of block t, rows rw and rw + 8 of the stage's weights (the permuted k above). */
template <int T>
static __device__ __forceinline__ void mm2_afrag(const uint8_t *ws, int rw, int t, int tg, int (&a)[4]) {
    typedef mm2_fmt<T> F;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const uint8_t *q = ws + (rw + 8 * h) * F::SW + 16 + F::QB * t;
        if (T == TCU_TYPE_Q8_0R) {
            const uint2 u = *(const uint2 *)(q + 8 * tg);
            a[h] = (int)u.x;
            a[2 + h] = (int)u.y;
        } else {
            const uint2 u = *(const uint2 *)(q + 8 * (tg & 1));
            const int sh = 4 * (tg >> 1);
            a[h] = (int)((u.x >> sh) & 0x0F0F0F0Fu);
            a[2 + h] = (int)((u.y >> sh) & 0x0F0F0F0Fu);
        }
    }
}

/* Row rw's dw (and mw) of block t from the stage's group header, as gemv_dp4a.cu's load_blk decodes them. */
template <int T>
static __device__ __forceinline__ void mm2_scale(const uint8_t *ws, int rw, int t, float &dw, float &mw) {
    typedef mm2_fmt<T> F;
    const uint8_t *g = ws + rw * F::SW;
    if (T == TCU_TYPE_Q4_KR) {
        k4_header(g, t, &dw, &mw);
    } else {
        dw = dq_h2f(dq_ld16(g + 2 * t));
        mw = 0.0f;
    }
}

/* Block t (0..7, a compile-time constant once unrolled) of a 16x8 tile: a lane's 4 outputs' leaves (reduce.cuh
 * chunk_leaf) from the hi and lo planes' MMA sums (256·Σhi + Σlo, less 8·Σq for Q4_0), pushed into the step's 8-leaf
 * tree: levels q0, q1, q2, and at t = 7 the subtree ((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7)) into sub. Output e: row
 * e >> 1 (dw, mw), column e & 1 (dx, sq). mm2_sub and mm2_sub_all both push through it: the same leaves, the same tree. */
template <int T>
static __device__ __forceinline__ void mm2_leaves(int t, const int (&sh)[4], const int (&sl)[4], const float (&dw)[2],
                                                  const float (&mw)[2], const float (&dx)[2], const int (&sq)[2],
                                                  float (&q0)[4], float (&q1)[4], float (&q2)[4], float (&sub)[4]) {
#pragma unroll
    for (int e = 0; e < 4; e++) {
        int isum = sh[e] * 256 + sl[e];
        if (T == TCU_TYPE_Q4_0R) isum -= 8 * sq[e & 1];
        const float p = chunk_leaf(dw[e >> 1], dx[e & 1], isum, mw[e >> 1], sq[e & 1], T == TCU_TYPE_Q4_KR);
        if ((t & 1) == 0) {
            q0[e] = p;
        } else {
            const float v = __fadd_rn(q0[e], p);
            if (t == 1 || t == 5) q1[e] = v;
            else if (t == 3) q2[e] = __fadd_rn(q1[e], v);
            else sub[e] = __fadd_rn(q2[e], __fadd_rn(q1[e], v)); /* t == 7 */
        }
    }
}

/* One group of a warp for n8 tile nt: 8 blocks x RT row tiles from stage (ws, xs, ds_s): sub = each output's 8-leaf
 * subtree (level 3 of the chunk's tree). Called per n8 tile, so only one tile's subtrees are live at a time. */
template <int T, int RT, int BN>
static __device__ __forceinline__ void mm2_sub(const uint8_t *ws, const uint8_t *xs, const int2 *ds_s, int rw0, int cw0,
                                               int nt, float (&sub)[RT][4]) {
    const int lane = (int)threadIdx.x & 31, gid = lane >> 2, tg = lane & 3;
    {
        float q0[RT][4], q1[RT][4], q2[RT][4]; /* the 8-leaf tree's levels 0, 1, 2 */
        const uint8_t *xc = xs + (cw0 + 8 * nt + gid) * MM2_XCOL + 8 * tg;
#pragma unroll
        for (int t = 0; t < 8; t++) {
            const uint2 bh = *(const uint2 *)(xc + 32 * t), bl = *(const uint2 *)(xc + 256 + 32 * t);
            const int4 dd = *(const int4 *)(ds_s + t * BN + cw0 + 8 * nt + 2 * tg); /* columns 2tg, 2tg+1: (d, Σq) */
            const float dx[2] = {__int_as_float(dd.x), __int_as_float(dd.z)};
            const int sq[2] = {dd.y, dd.w};
#pragma unroll
            for (int rt = 0; rt < RT; rt++) {
                int a[4], sh[4], sl[4];
                const int rw = rw0 + 16 * rt + gid;
                mm2_afrag<T>(ws, rw, t, tg, a);
                mma_s8(a, (int)bh.x, (int)bh.y, sh);
                mma_s8(a, (int)bl.x, (int)bl.y, sl);
                float dw[2], mw[2];
                mm2_scale<T>(ws, rw, t, dw[0], mw[0]);
                mm2_scale<T>(ws, rw + 8, t, dw[1], mw[1]);
                mm2_leaves<T>(t, sh, sl, dw, mw, dx, sq, q0[rt], q1[rt], q2[rt], sub[rt]);
            }
        }
    }
}

/* mm2_sub for all NT n8 tiles at once (the AH arms): a block's A fragments and scales are loaded and unpacked once
 * for the NT tiles, where mm2_sub called per tile loads them NT times (SASS of arm 3, NT = 4: 246 LDS, 241 SHF and 211
 * LOP3 a step against 64 IMMA). The cost is registers: every tile's tree levels are live across the 8 blocks. The same
 * leaves and the same tree, so the same bits (gpu_mma checks every arm against the one-column GEMV). */
template <int T, int RT, int NT, int BN>
static __device__ __forceinline__ void mm2_sub_all(const uint8_t *ws, const uint8_t *xs, const int2 *ds_s, int rw0,
                                                   int cw0, float (&sub)[RT][NT][4]) {
    const int lane = (int)threadIdx.x & 31, gid = lane >> 2, tg = lane & 3;
    float q0[RT][NT][4], q1[RT][NT][4], q2[RT][NT][4]; /* the 8-leaf trees' levels 0, 1, 2 */
#pragma unroll
    for (int t = 0; t < 8; t++) {
        int a[RT][4];
        float dw[RT][2], mw[RT][2];
#pragma unroll
        for (int rt = 0; rt < RT; rt++) {
            const int rw = rw0 + 16 * rt + gid;
            mm2_afrag<T>(ws, rw, t, tg, a[rt]);
            mm2_scale<T>(ws, rw, t, dw[rt][0], mw[rt][0]);
            mm2_scale<T>(ws, rw + 8, t, dw[rt][1], mw[rt][1]);
        }
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const uint8_t *xc = xs + (cw0 + 8 * nt + gid) * MM2_XCOL + 8 * tg;
            const uint2 bh = *(const uint2 *)(xc + 32 * t), bl = *(const uint2 *)(xc + 256 + 32 * t);
            const int4 dd = *(const int4 *)(ds_s + t * BN + cw0 + 8 * nt + 2 * tg); /* columns 2tg, 2tg+1: (d, Σq) */
            const float dx[2] = {__int_as_float(dd.x), __int_as_float(dd.z)};
            const int sq[2] = {dd.y, dd.w};
#pragma unroll
            for (int rt = 0; rt < RT; rt++) {
                int sh[4], sl[4];
                mma_s8(a[rt], (int)bh.x, (int)bh.y, sh);
                mma_s8(a[rt], (int)bl.x, (int)bl.y, sl);
                mm2_leaves<T>(t, sh, sl, dw[rt], mw[rt], dx, sq, q0[rt][nt], q1[rt][nt], q2[rt][nt], sub[rt][nt]);
            }
        }
    }
}

/* A CTA of WR x WC x KW warps; warp w = (wi, kw) = (w % (WR·WC), w / (WR·WC)), wi = (wr, wc) = (wi % WR, wi / WR),
 * owns rows 16·RT·wr .. +16·RT and columns 8·NT·wc .. +8·NT of the tile and, of each K step's KW groups, group kw.
 * KW = 1: a step is one group, its subtree S goes into the level-3/4 registers by the step's place s = k mod 4 in its
 * chunk. KW = 2 or 4 (a split of each chunk over warps, for matrices of few rows: the n_out/16 x m/8 output tiles are
 * then KW times as many warps of work): the KW warps of an output tile each build the 8-leaf subtree of their group,
 * park it in shared memory (red), and the kw = 0 warp combines them as the tree does: KW = 2, a step is blocks 16s ..
 * 16s+15 of a chunk, S = S_0 + S_1 is level 4, s = k mod 2 (s=0: L4 = S; s=1: acc = acc + (L4 + S)); KW = 4, a step
 * is a whole chunk, acc = acc + ((S_0 + S_1) + (S_2 + S_3)). A group past nb is zero-filled (its subtree +0.0, as the
 * butterfly's padding). MINB: CTAs an SM asked of the compiler (__launch_bounds__), registers <= 64K / (MINB·threads). */
template <int T, int WR, int WC, int RT, int NT, int NS, int KW> struct mm2_cfg {
    static constexpr int BM = 16 * RT * WR, BN = 8 * NT * WC, NTH = 32 * WR * WC * KW;
    static constexpr int MINB = 384 / NTH > 0 ? 384 / NTH : 1;
    static constexpr int WB = BM * mm2_fmt<T>::SW, XB = BN * MM2_XCOL, DB = 8 * BN * 8; /* a group's parts, bytes */
    static constexpr int STAGE = KW * (WB + XB + DB), RED = KW > 1 ? 4 * KW * BM * BN : 0;
    static constexpr int SMEM = NS * STAGE + RED;
};

/* Where output (row r, column c) goes: rows [0, r1) to y[0] (c·r1 + r), [r1, r2) to y[1] (c·(r2 - r1) + r - r1),
 * [r2, n_out) to y[2] (c·(n_out - r2) + r - r2): the parts of a fused matrix (q|k|v, gate|up) into their own buffers
 * (tcu_gemm_mma_v2_split). One part: r1 = r2 = n_out. Each output's value does not depend on where it goes. */
typedef struct {
    float *y[3];
    int r1, r2;
} mm2_out;

static __device__ __forceinline__ void mm2_store(const mm2_out &o, int n_out, int r, int c, float v) {
    if (r < o.r1) o.y[0][(size_t)c * o.r1 + r] = v;
    else if (r < o.r2) o.y[1][(size_t)c * (o.r2 - o.r1) + (r - o.r1)] = v;
    else o.y[2][(size_t)c * (n_out - o.r2) + (r - o.r2)] = v;
}

/* nb >= 1, n_out >= 1, m >= 1 (tcu_gemm_mma_v2_arm). AH: a step's A fragments once for its NT tiles (mm2_sub_all).
 * SK > 1 (KW = 1 only): the chunks split over SK CTAs a tile (blockIdx.y), each writing its chunks' sums T_j to
 * wsk[j][c][r] instead of adding them; mm2_combine_k then adds them in chunk order from -0.0, as the one-CTA loop does
 * (acc = acc + T_j), so the same bits. */
template <int T, int WR, int WC, int RT, int NT, int NS, int KW, int AH, int MB, int SK>
__global__ void __launch_bounds__(32 * WR * WC * KW, (MB ? MB : mm2_cfg<T, WR, WC, RT, NT, NS, KW>::MINB))
gemm_mma2_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
            const int8_t *__restrict__ xl, const int2 *__restrict__ xds, int m, const mm2_out yo, float *__restrict__ wsk) {
    typedef mm2_cfg<T, WR, WC, RT, NT, NS, KW> C;
    static_assert(SK == 1 || KW == 1, "the chunk split is for KW = 1");
    constexpr int NO = RT * NT * 4; /* outputs a lane */
    extern __shared__ __align__(16) uint8_t mm2_sm[];
    const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31, gid = lane >> 2, tg = lane & 3;
    const int wi = warp % (WR * WC), kw = warp / (WR * WC);
    const int ncg = (m + C::BN - 1) / C::BN;
    const int r0 = (int)(blockIdx.x / ncg) * C::BM, c0 = (int)(blockIdx.x % ncg) * C::BN;
    /* steps holding data, and steps to the last chunk's end (a chunk is 4 / KW steps); this CTA's steps [kb, ke) (all
     * of them but with SK > 1: its part of the chunks), kl = the end of those holding data */
    const int KS = ((nb + 7) / 8 + KW - 1) / KW, KT = (4 / KW) * ((nb + 31) >> 5);
    int kb = 0, ke = KT;
    if constexpr (SK > 1) {
        const int nch = (nb + 31) >> 5, cpc = (nch + SK - 1) / SK, j0 = (int)blockIdx.y * cpc;
        kb = 4 * j0;
        ke = 4 * (j0 + cpc < nch ? j0 + cpc : nch);
    }
    const int kl = KS < ke ? KS : ke;
    /* stage st: the KW groups' weights, then their activations, then their (d, Σq) pairs */
    auto wst = [&](int st, int q) { return mm2_sm + (size_t)st * C::STAGE + q * C::WB; };
    auto xst = [&](int st, int q) { return mm2_sm + (size_t)st * C::STAGE + KW * C::WB + q * C::XB; };
    auto dst = [&](int st, int q) {
        return (int2 *)(mm2_sm + (size_t)st * C::STAGE + KW * (C::WB + C::XB) + q * C::DB);
    };
    float *red = (float *)(mm2_sm + (size_t)NS * C::STAGE); /* KW > 1: [KW][WR·WC][NO][32] subtrees, lane fastest */
#pragma unroll
    for (int st = 0; st < NS - 1; st++)
        if (kb + st < kl)
#pragma unroll
            for (int q = 0; q < KW; q++)
                mm2_issue_w<T, C::BM, C::NTH>(wst(st, q), w, stride, nb, n_out, r0, KW * (kb + st) + q);
    pdl_trigger();
    pdl_wait();
#pragma unroll
    for (int st = 0; st < NS - 1; st++) {
        if (kb + st < kl)
#pragma unroll
            for (int q = 0; q < KW; q++)
                mm2_issue_x<C::BN, C::NTH>(xst(st, q), dst(st, q), xh, xl, xds, nb, m, c0, KW * (kb + st) + q);
        mm2_commit(); /* group st (group 0 also holds the weights of steps kb..kb+NS-2) */
    }
    float acc[RT][NT][4], l3[RT][NT][4], l4[RT][NT][4];
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[rt][nt][e] = -0.0f, l3[rt][nt][e] = 0.0f, l4[rt][nt][e] = 0.0f;
    const int rw0 = 16 * RT * (wi % WR), cw0 = 8 * NT * (wi / WR);
    /* output e of a lane's tile (rt, nt): its row and column */
    auto orow = [&](int rt, int e) { return r0 + rw0 + 16 * rt + gid + 8 * (e >> 1); };
    auto ocol = [&](int nt, int e) { return c0 + cw0 + 8 * nt + 2 * tg + (e & 1); };
    for (int k = kb; k < ke; k++) {
        const bool live = k < KS; /* CTA-uniform; a step past the last group has +0.0 subtrees */
        int sc = 0;
        if (live) {
            mm2_wait<NS - 2>(); /* groups 0..k-kb complete: step k's stage has landed (this thread's copies) */
            __syncthreads();    /* ... and every thread's; every warp is done with step k-1's stage */
            const int kn = k + NS - 1, sn = (kn - kb) % NS;
            if (kn < kl) {
#pragma unroll
                for (int q = 0; q < KW; q++) {
                    mm2_issue_w<T, C::BM, C::NTH>(wst(sn, q), w, stride, nb, n_out, r0, KW * kn + q);
                    mm2_issue_x<C::BN, C::NTH>(xst(sn, q), dst(sn, q), xh, xl, xds, nb, m, c0, KW * kn + q);
                }
            }
            mm2_commit(); /* group k - kb + NS - 1, empty past the last step: the count stays uniform */
            sc = (k - kb) % NS;
        }
        float suba[AH ? RT : 1][AH ? NT : 1][4]; /* AH: every tile's subtrees of the step */
        if constexpr (AH != 0) {
            if (live) mm2_sub_all<T, RT, NT, C::BN>(wst(sc, kw), xst(sc, kw), dst(sc, kw), rw0, cw0, suba);
        }
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            float sub[RT][4];
            if (live) {
                if constexpr (AH != 0) {
#pragma unroll
                    for (int rt = 0; rt < RT; rt++)
#pragma unroll
                        for (int e = 0; e < 4; e++) sub[rt][e] = suba[AH ? rt : 0][AH ? nt : 0][e];
                } else {
                    mm2_sub<T, RT, C::BN>(wst(sc, kw), xst(sc, kw), dst(sc, kw), rw0, cw0, nt, sub);
                }
            } else {
#pragma unroll
                for (int rt = 0; rt < RT; rt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) sub[rt][e] = 0.0f;
            }
            if (KW > 1) { /* every warp parks its subtrees; the kw = 0 warp combines them below */
#pragma unroll
                for (int rt = 0; rt < RT; rt++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        red[((kw * (WR * WC) + wi) * NO + (rt * NT + nt) * 4 + e) * 32 + lane] = sub[rt][e];
            } else {
                const int s = k & 3;
#pragma unroll
                for (int rt = 0; rt < RT; rt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const float sv = sub[rt][e];
                        if (s == 0) l3[rt][nt][e] = sv;
                        else if (s == 1) l4[rt][nt][e] = __fadd_rn(l3[rt][nt][e], sv);
                        else if (s == 2) l3[rt][nt][e] = sv;
                        else if (SK == 1) acc[rt][nt][e] = __fadd_rn(acc[rt][nt][e], __fadd_rn(l4[rt][nt][e], __fadd_rn(l3[rt][nt][e], sv)));
                        else { /* chunk k / 4's sum T_j, for mm2_combine_k */
                            const int r = orow(rt, e), c = ocol(nt, e);
                            if (r < n_out && c < m)
                                wsk[((size_t)(k >> 2) * m + c) * n_out + r] = __fadd_rn(l4[rt][nt][e], __fadd_rn(l3[rt][nt][e], sv));
                        }
                    }
            }
        }
        if (KW > 1) { /* the KW subtrees of an output, combined by its kw = 0 warp as the chunk's tree does */
            __syncthreads();
            if (kw == 0) {
#pragma unroll
                for (int rt = 0; rt < RT; rt++)
#pragma unroll
                    for (int nt = 0; nt < NT; nt++)
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const int o = (rt * NT + nt) * 4 + e;
                            float sq[KW];
#pragma unroll
                            for (int q = 0; q < KW; q++) sq[q] = red[((q * (WR * WC) + wi) * NO + o) * 32 + lane];
                            const float s01 = __fadd_rn(sq[0], sq[1]); /* level 4: 16 blocks */
                            if (KW == 2) {
                                if ((k & 1) == 0) l4[rt][nt][e] = s01;
                                else acc[rt][nt][e] = __fadd_rn(acc[rt][nt][e], __fadd_rn(l4[rt][nt][e], s01));
                            } else { /* KW == 4: a whole chunk */
                                acc[rt][nt][e] = __fadd_rn(acc[rt][nt][e], __fadd_rn(s01, __fadd_rn(sq[KW > 2 ? 2 : 0], sq[KW > 3 ? 3 : 0])));
                            }
                        }
            }
            __syncthreads(); /* red is read before the next step writes it (a dead step has no barrier of its own) */
        }
    }
    if (kw == 0 && SK == 1)
#pragma unroll
        for (int rt = 0; rt < RT; rt++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int r = orow(rt, e), c = ocol(nt, e);
                    if (r < n_out && c < m) mm2_store(yo, n_out, r, c, acc[rt][nt][e]);
                }
}

/* The split chunks' sums added in chunk order: y(r, c) = (((-0.0 + T_0) + T_1) + ...) + T_{nch-1}, the one-CTA loop's
 * acc. Plain launch (no PDL): it reads what gemm_mma2_k wrote. */
__global__ void mm2_combine_k(const float *__restrict__ wsk, int nch, int n_out, int m, const mm2_out yo) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n_out * m) return;
    const int r = (int)(i % n_out), c = (int)(i / n_out);
    float acc = -0.0f;
    for (int j = 0; j < nch; j++) acc = __fadd_rn(acc, wsk[((size_t)j * m + c) * n_out + r]);
    mm2_store(yo, n_out, r, c, acc);
}

/* The split arms' workspace: nch x m x n_out floats of the caller's (an engine's, allocated with its scratch from
 * tcu_gemm_mma_v2_ws_floats, so a captured pass holds a fixed address; one stream uses it at a time). */
#define MM2_SPLIT_ARM0 18 /* arms 18, 19 split the chunks over CTAs */
typedef struct {
    float *p;
    size_t n; /* floats */
} mm2_ws;
static size_t mm2_ws_need(int arm, int nb, int n_out, int m) {
    return arm >= MM2_SPLIT_ARM0 ? (size_t)((nb + 31) >> 5) * (size_t)m * (size_t)n_out : 0;
}

template <int T, int WR, int WC, int RT, int NT, int NS, int KW, int AH = 0, int MB = 0, int SK = 1>
static int mma2_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *xh, const int8_t *xl,
                        const int2 *xds, int m, const mm2_out &y, const mm2_ws &ws, cudaStream_t st) {
    typedef mm2_cfg<T, WR, WC, RT, NT, NS, KW> C;
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, int, const mm2_out,
               float *) = gemm_mma2_k<T, WR, WC, RT, NT, NS, KW, AH, MB, SK>;
    const int nch = (nb + 31) >> 5;
    float *wsk = NULL;
    if (SK > 1) {
        if (!ws.p || ws.n < (size_t)nch * m * n_out) return 0; /* nothing launched */
        wsk = ws.p;
    }
    static int dev_set = 0; /* the opt-in past 48 KiB, per device (bit) */
    int dev = 0;
    cudaGetDevice(&dev);
    if (C::SMEM > (48 << 10) && dev >= 0 && dev < 31 && !(__atomic_load_n(&dev_set, __ATOMIC_RELAXED) & (1 << dev))) {
        cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM);
        __atomic_fetch_or(&dev_set, 1 << dev, __ATOMIC_RELAXED);
    }
    const int64_t units = (int64_t)((n_out + C::BM - 1) / C::BM) * ((m + C::BN - 1) / C::BN);
    const int cpc = (nch + SK - 1) / SK, sk = (nch + cpc - 1) / cpc; /* chunks a CTA (as the kernel), CTAs with chunks */
    PDL_LAUNCH(kf, dim3((unsigned)units, (unsigned)sk), dim3(C::NTH), (size_t)C::SMEM, st, w, stride, nb, n_out, xh, xl,
               xds, m, y, wsk);
    if (SK > 1) {
        const int64_t outs = (int64_t)n_out * m;
        mm2_combine_k<<<(unsigned)((outs + 255) / 256), 256, 0, st>>>(wsk, nch, n_out, m, y);
        TCU_CHECK_LAUNCH(st);
    }
    return 1;
}

/* The tilings under measurement (WR x WC warps, RT 16-row tiles and NT n8 tiles a warp, NS stages), BM x BN and the
 * CTAs at m = 64 on Q4_0 4096x14336 (n_out 14336) / 14336x4096, 132 SMs; shared memory a CTA for Q4_0 (Q8_0):
 *   arm 0: 4x1, 64x32,  448 / 128 CTAs, 2 stages  57 KB (76 KB)
 *   arm 1: 4x2, 64x64,  224 /  64 CTAs, 2 stages  96 KB (115 KB)
 *   arm 2: 2x2, 32x64,  448 / 128 CTAs, 2 stages  87 KB (96 KB)
 *   arm 3: 8x1, 128x32, 224 /  64 CTAs, 2 stages  76 KB (113 KB)
 *   arm 4: 4x1, 64x16,  for m <= 16: 224 / 64 CTAs, 3 stages 57 KB (85 KB)
 *   arm 5: 4x1, 64x8,   for m <= 8:  224 / 64 CTAs, 4 stages 56 KB (93 KB)
 *   arm 6: 2x8, 32x64,  a 16x8 tile a warp (NT 1), 16 warps: 448 / 128 CTAs, 2 stages 87 KB (96 KB)
 *   arm 7: 4x2, 64x16,  a 16x8 tile a warp, 8 warps, for m <= 16: 224 / 64 CTAs, 3 stages 57 KB (85 KB)
 * The epilogue (an I2F, two FMULs, an FADD, two integer ops an output and block) runs for every column of the tile,
 * used or not, so the narrow arms are for short passes. Warps: a 16x8 output tile is the finest a warp can own, so a
 * matrix of n_out rows has at most n_out/16 x m/8 warps of work: 4096 rows at m = 16 give 512 (~4 an SM), which only
 * a split of the chunks would raise (over warps: arms 8-10 below; over CTAs: arms 18, 19, with a combine); arms 6 and 7
 * give each warp one such tile so that a CTA holds many warps. The chooser (arm -1) is the first
 * sweep's fastest arm (H200, `MMA_SWEEP=1 bench/gpu_check.sh mma`, Q4_0/Q8_0/Q4_K at 4096x14336 and 14336x4096, m = 1..64;
 * bench/gpu/s19-0d38df8/mma-sweep.md, the arm whose worst ratio to each type's best is least): a matrix of at least 4
 * row tiles of 16 an SM (14336 rows on 132 SMs) takes 5 up to m = 8, 12 up to 16, 11 up to 32, 12 up to 48, else 15
 * (within 4% of every type's best; the s18 rule 5/4/3/4/3 ran up to 40% over on Q4_K; 15, arm 11 at two CTAs an SM,
 * from the s20 sweep: bench/gpu/s20-6eb3176); one of fewer (4096 or 6144 rows) takes the CTA-split 18 up to m = 8
 * and 19 up to 48, then 12 (s23: arms 18, 19 below), and without a workspace the warp-split 8 up to m = 8, 9 up to 16,
 * then 7, then 12 past 32 (the s19 rule).
 *   arm 8: 2x1 x KW 4, 32x8,  a chunk a step split over 4 warps a tile, 8 warps: 448 / 128 CTAs, 2 stages 80 KB (117 KB)
 *   arm 9: 2x2 x KW 4, 32x16, 16 warps: 2 stages 123 KB (160 KB)
 *   arm 10: 2x2 x KW 2, 32x16, half a chunk a step, 8 warps: 2 stages 61 KB (80 KB)
 * Arms 11-14 (AH, mm2_sub_all: a block's A fragments and scales once for the warp's NT tiles): 11 = arm 3 (128x32),
 * 12 = arm 4 (64x16), 13 = arm 1 (64x64), 14 = arm 0 (64x32) (the NT = 1 arms have nothing to share). Measured
 * (s19 sweep): 11 and 12 the fastest from m = 12 on 14336 rows, 12 from m = 48 on 4096; far short of the SASS count's
 * promise at m = 64 (arm 11 87 us vs arm 3's 90 on Q4_0; docs/ledger.md). Arm 15: 11 with an occupancy floor
 * (__launch_bounds__ minimum CTAs 2: at most 128 registers; ptxas spills 64 bytes on Q4_0R): ncu of
 * arm 11 at m = 64 in a B = 64 step (bench/gpu/s20-6eb3176) had 2 warps a scheduler (171 registers, one CTA an SM),
 * 3.05 cycles between a warp's instructions and 52% of issue slots busy. Measured (s20 sweep, mma/sweep.txt there): arm
 * 15 at m = 64 on 14336 rows 79.1 us vs arm 11's 86.9 on Q4_0, 93.4 vs 95.9 on Q8_0, 98.8 vs 98.3 on Q4_K. The chooser
 * takes 15 past m = 48 on many rows. 12 and 13 with the same floor lost (docs/ledger.md, session 20) and are gone.
 *   arm 16: arm 5 with 8 stages and arm 17: arm 12 with 6 (more weight bytes in flight a CTA). Measured (s23 sweep,
 *   bench/gpu/s23-split/): within 5% of arms 5 and 12 and never faster: bytes in flight are not v2's bound at small m.
 *   arm 18: arm 5 and arm 19: arm 12 with the chunks split over 4 CTAs a tile (SK = 4: a 4096-input matrix's 4 chunks
 *   one a CTA, 14336's 14 four a CTA), the chunk sums T_j through the caller's workspace and mm2_combine_k (the same
 *   bits). Measured (s23): no gain on 14336 rows (arm 18 at m = 8 24.8 us vs arm 5's 23.5: twice the warps a scheduler,
 *   ncu, but 40% more instructions issued), a win where the rows are few (64 row tiles on 132 SMs): Q4_0 14336x4096 at
 *   m = 8 28.5 vs 34.6 (arm 8), at m = 48 83.3 vs 100.4 (arm 12); 4096x6144 (q|k|v) at m = 16 17.2 vs 26.7. The chooser
 *   takes them on few rows up to m = 48 where the engine gives a workspace (tcu_gemm_mma_v2_ws_floats); its worst case,
 *   4096x4096 at m = 24-32, is 10-11% over arm 7 on Q4_0 and Q8_0 (bench/gpu/s23-split/one-fewrows.txt). */
/* The chooser's arm for a matrix of nb blocks a row and n_out rows at m columns, with ws_n floats of workspace: the
 * sweeps' fastest over Q4_0/Q8_0/Q4_K by rows per SM (bench/gpu/s19-0d38df8/mma-sweep.md; few rows: s23). A split arm
 * whose workspace is not there gives way to the arm it replaced (the same bits). */
static int mma2_pick(int nb, int n_out, int m, size_t ws_n) {
    if ((n_out + 15) / 16 >= 4 * gemv_sms()) return m <= 8 ? 5 : m <= 16 ? 12 : m <= 32 ? 11 : m <= 48 ? 12 : 15;
    const int arm = m <= 8 ? 18 : m <= 48 ? 19 : 12; /* few rows: the chunks split over 4 CTAs, then 16x8 a warp */
    if (mm2_ws_need(arm, nb, n_out, m) <= ws_n) return arm;
    return m <= 8 ? 8 : m <= 16 ? 9 : m <= 32 ? 7 : 12; /* the chunks split over warps (the s19 rule) */
}

template <int T>
static int mma2_arm(int arm, const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *xh, const int8_t *xl,
                     const int2 *xds, int m, const mm2_out &y, const mm2_ws &ws, cudaStream_t st) {
    if (arm < 0) arm = mma2_pick(nb, n_out, m, ws.p ? ws.n : 0);
    switch (arm) {
    case 6: return mma2_launch<T, 2, 8, 1, 1, 2, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 7: return mma2_launch<T, 4, 2, 1, 1, 3, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 4: return mma2_launch<T, 4, 1, 1, 2, 3, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 5: return mma2_launch<T, 4, 1, 1, 1, 4, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 1: return mma2_launch<T, 4, 2, 1, 4, 2, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 2: return mma2_launch<T, 2, 2, 1, 4, 2, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 3: return mma2_launch<T, 8, 1, 1, 4, 2, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 8: return mma2_launch<T, 2, 1, 1, 1, 2, 4>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 9: return mma2_launch<T, 2, 2, 1, 1, 2, 4>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 10: return mma2_launch<T, 2, 2, 1, 1, 2, 2>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 11: return mma2_launch<T, 8, 1, 1, 4, 2, 1, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 12: return mma2_launch<T, 4, 1, 1, 2, 3, 1, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 13: return mma2_launch<T, 4, 2, 1, 4, 2, 1, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 14: return mma2_launch<T, 4, 1, 1, 4, 2, 1, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 15: return mma2_launch<T, 8, 1, 1, 4, 2, 1, 1, 2>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 16: return mma2_launch<T, 4, 1, 1, 1, 8, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 17: return mma2_launch<T, 4, 1, 1, 2, 6, 1, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 18: return mma2_launch<T, 4, 1, 1, 1, 4, 1, 0, 0, 4>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    case 19: return mma2_launch<T, 4, 1, 1, 2, 3, 1, 1, 0, 4>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    default: return mma2_launch<T, 4, 1, 1, 4, 2, 1>(w, stride, nb, n_out, xh, xl, xds, m, y, ws, st);
    }
}

static int mma2_run(int arm, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq, int m,
                    const mm2_out &y, const mm2_ws &ws, cudaStream_t st) {
    if (!tcu_gemm_mma_supported(t) || m < 1 || n_out < 1 || n_in < 32 || arm < -1 || arm >= TCU_MMA_V2_ARMS) return 0;
    const int nb = (int)(n_in / 32);
    const size_t pb = x16_plane_bytes(m, n_in);
    const int8_t *xh = (const int8_t *)xq, *xl = (const int8_t *)xq + pb;
    const int2 *xds = (const int2 *)((const char *)xq + 2 * pb);
    const uint8_t *wb = (const uint8_t *)w;
    if (t == TCU_TYPE_Q4_0R) return mma2_arm<TCU_TYPE_Q4_0R>(arm, wb, row_bytes, nb, (int)n_out, xh, xl, xds, m, y, ws, st);
    if (t == TCU_TYPE_Q8_0R) return mma2_arm<TCU_TYPE_Q8_0R>(arm, wb, row_bytes, nb, (int)n_out, xh, xl, xds, m, y, ws, st);
    return mma2_arm<TCU_TYPE_Q4_KR>(arm, wb, row_bytes, nb, (int)n_out, xh, xl, xds, m, y, ws, st);
}

extern "C" int tcu_gemm_mma_v2_arm(int arm, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out,
                                   const void *xq, int m, float *y, float *ws, size_t ws_floats, cudaStream_t st) {
    const mm2_out o = {{y, y, y}, (int)n_out, (int)n_out};
    const mm2_ws k = {ws, ws_floats};
    return mma2_run(arm, t, w, row_bytes, n_in, n_out, xq, m, o, k, st);
}

extern "C" int tcu_gemm_mma_v2_split(int arm, int t, const void *w, size_t row_bytes, int64_t n_in, const int64_t rows[3],
                                     const void *xq, int m, float *const y[3], float *ws, size_t ws_floats,
                                     cudaStream_t st) {
    const int64_t n_out = rows[0] + rows[1] + rows[2];
    if (rows[0] < 1 || rows[1] < 0 || rows[2] < 0 || n_out > INT32_MAX) return 0;
    const mm2_out o = {{y[0], y[1], y[2]}, (int)rows[0], (int)(rows[0] + rows[1])};
    const mm2_ws k = {ws, ws_floats};
    return mma2_run(arm, t, w, row_bytes, n_in, n_out, xq, m, o, k, st);
}

extern "C" size_t tcu_gemm_mma_v2_ws_floats(int64_t n_in, int64_t n_out, int m_max) {
    if (n_in < 32 || n_out < 1 || n_out > INT32_MAX) return 0;
    const int nb = (int)(n_in / 32);
    size_t need = 0;
    for (int m = 1; m <= m_max; m++) {
        const size_t k = mm2_ws_need(mma2_pick(nb, (int)n_out, m, SIZE_MAX), nb, (int)n_out, m);
        if (k > need) need = k;
    }
    return need;
}
