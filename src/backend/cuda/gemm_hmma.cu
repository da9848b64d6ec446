/* gemm_hmma.cu: the f16 order of batched decode (issue 26; tern_config.gemv_chunk = 2, an arm under measurement):
 * y (m, n_out) = W · x_c for 1..TCU_PASS_MAX columns, the weights dequantized to f16 in registers (each value
 * f16(d·(q - 8)) for Q4_0, f16(d·q) for Q8_0, rounded once: the bits tcu_dequant_f16 gives the prefill GEMM) and
 * multiplied with the f16
 * activations by Hopper's warpgroup MMA (wgmma.mma_async m64nNk16, A from registers, B from shared memory, f32
 * accumulator; N = 8 ceil(m / 8)). No per-block float work is left to the ALUs. v2 (gemm_mma.cu) keeps an exact int32
 * dot a block and adds dw·dx·isum in f32 by the ALUs, 5-6 instructions an output and block (docs/ledger.md 2026-12-02).
 * Until 2026-12-04 this file ran mma.sync m16n8k16 with x fragments loaded from shared memory by each warp (ncu at
 * m = 64: 9.2 instructions an MMA, 1.5 warps a scheduler, the tensor pipe 13-38% busy; docs/ledger.md).
 *
 * Batch invariance: every output (row r, column c) is one chain of wgmmas over K in a fixed order (steps of 4 blocks,
 * in each step the 8 slabs u = 0..7 of 16), from +0, in K segments fixed by the matrix's shape alone (hm_splits: n_in
 * and the rows of the launch, a fused matrix's total), the segments' sums added in segment order. Nothing in that
 * depends on m, on the column's place in its tile, on the arm or on the other columns: an MMA's output element reads
 * only its row of A and its column of B, and N only sets how many columns one instruction carries. So column c of an
 * m-column call has the bits of the one-column call on x_c, for every arm; tests/gpu/gpu_hmma.c checks it (memcmp)
 * and checks the values against a float64 sum of the same f16 products.
 *
 * The K order inside a step: lane quad t (lane % 4) owns block 4s + t, one 16-byte load of its quants (Q4_0R: byte i
 * holds element i low, i + 16 high) a row. Slab u takes word w = u % 4 of it, low nibbles for u < 4, high for u >= 4:
 * A's k slots 2t, 2t+1 <- bytes 4w, 4w+2 and 2t+8, 2t+9 <- bytes 4w+1, 4w+3, so a fragment register is the word (or
 * the word >> 8) masked to two nibbles, no byte permute. The activations are laid out to match by their producers
 * (tcu_hm_pos, tcu.h): a step's 128 values are 8 slabs of 16 in k-slot order, copied to shared memory as they are.
 *
 * Form: gemm_hw_k (each warp loads its weights from global memory into registers, the CTA copies x by cp.async); the
 * arms are its warpgroups a CTA (1, 2), x stages (4, 6) and MMA groups a step. Arms 6, 7, 8 (TCU_HM_TILED) are arms 4,
 * 1 and 0 over the tiled layout (TCU_TYPE_Q4_0T, tcu_hm_tile: a 64-row tile's step one contiguous chunk), which the
 * engine converts an f16-order model's matrices to (docs/ledger.md 2026-12-04 "a tiled weight layout" and "the f16
 * order over the tiled layout in the engine"); arms 9, 10 (gemm_hb_k) are arm 6 with the weights by bulk copies
 * ("the f16 order's weights by bulk copies"); arm 11 (gemm_hp_k) runs the chains by warps on mma.sync (2026-12-06
 * "the f16 order by warps"); the rows' arms stay for gpu_hmma and for tensor parallelism. Lost and deleted
 * (docs/ledger.md 2026-12-04 "the streamed form and four warpgroups on the H200"): the streamed form (a producer warp
 * filling a shared-memory ring of weights and x behind mbarriers; its code at 2e5ae43) and four
 * warpgroups a CTA.
 *
 * Types: the repacked Q4_0R, Q8_0R and Q4_KR (tcu.h) and their tiled layouts, and Q6_K as its tiles (Q6_KT) only, n_in
 * a multiple of 128 (of 256 for the K-quants; hm_ty: a type's constants; Q8_0 and Q4_K built 2026-12-05, Q6_K 2026-12-06,
 * all three the default since 2026-12-06: Q8_0's slab u is the block's word u, Q4_K's and Q6_K's weights are computed
 * in f32, hm_w2_k4, hm_w2_k6). Activations: f16 (m, n_in), each value f16(v) of the f32
 * activation at tcu_hm_pos of its index, written by its producer (exec.c f16_pass: the norms, the GLU, the decode
 * attention's kernels). tcu_x16_to_f16 (f16(d·q) of the x16 format, row-major) makes the tests' inputs. */
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda/check.cuh"
#include "cuda/dequant.cuh"
#include "cuda/pdl.cuh"
#include "cuda/tcu.h"
#include "cuda/wgmma.cuh"
#include "cuda/x16.cuh"

/* wgmma exists on sm_90a only: the Makefile builds this file for it alone (attention_wgmma.cu's rule); the launcher
 * checks compute capability 9.0 and binaryVersion 90 before it runs anything (tcu_gemm_hm_supported). */
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm_hmma.cu needs -gencode=arch=compute_90a,code=sm_90a (the Makefile's WG_ARCHS)"
#endif

#define HM_CNT 8192 /* ints at the workspace's head: the split's tickets, one a row tile (kept zero between calls) */

/* ---- activations: x16 -> f16 ---- */
__global__ void x16_to_f16_k(const int8_t *__restrict__ xh, const int8_t *__restrict__ xl, const int2 *__restrict__ ds,
                             int64_t n, __half *__restrict__ out) {
    pdl_trigger();
    pdl_wait();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float d = __int_as_float(__ldg(&ds[i >> 5]).x);
    const int q = 256 * (int)xh[i] + (int)xl[i];
    out[i] = __float2half_rn(__fmul_rn(d, (float)q));
}

extern "C" void tcu_x16_to_f16(const void *xq, int m, int64_t n_in, uint16_t *out, cudaStream_t st) {
    const int64_t n = (int64_t)m * n_in;
    const size_t plane = x16_plane_bytes(m, n_in);
    const int8_t *h = (const int8_t *)xq, *l = h + plane;
    const int2 *ds = (const int2 *)((const char *)xq + 2 * plane);
    PDL_LAUNCH(x16_to_f16_k, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, st, h, l, ds, n, (__half *)out);
}

/* ---- the GEMM ---- */

/* D (64 x 8NT f32) += A (64 x 16 f16 in registers: each warp's 16 rows as the m16n8k16 A fragment) · B (16 x 8NT,
 * shared-memory descriptor db, K-major); PTX ISA "wgmma.mma_async", register fragments as mma.m16n8k16's per warp. */
template <int NT> struct hw_mma;
template <> struct hw_mma<1> {
    static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], uint64_t db) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
    }
};
template <> struct hw_mma<2> {
    static __device__ __forceinline__ void run(float (&d)[8], const uint32_t (&a)[4], uint64_t db) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
    }
};
template <> struct hw_mma<3> {
    static __device__ __forceinline__ void run(float (&d)[12], const uint32_t (&a)[4], uint64_t db) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %17, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, %16, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
    }
};
template <> struct hw_mma<4> {
    static __device__ __forceinline__ void run(float (&d)[16], const uint32_t (&a)[4], uint64_t db) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
    }
};
template <> struct hw_mma<5> {
    static __device__ __forceinline__ void run(float (&d)[20], const uint32_t (&a)[4], uint64_t db) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %25, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n40k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19}, {%20, %21, %22, %23}, %24, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
    }
};
template <> struct hw_mma<6> {
    static __device__ __forceinline__ void run(float (&d)[24], const uint32_t (&a)[4], uint64_t db) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %29, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n48k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}, {%24, %25, %26, %27}, %28, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
    }
};
template <> struct hw_mma<7> {
    static __device__ __forceinline__ void run(float (&d)[28], const uint32_t (&a)[4], uint64_t db) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %33, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n56k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27}, {%28, %29, %30, %31}, %32, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
    }
};
template <> struct hw_mma<8> {
    static __device__ __forceinline__ void run(float (&d)[32], const uint32_t (&a)[4], uint64_t db) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
    }
};

static __device__ __forceinline__ unsigned hm_smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

/* x's descriptor (wgmma.cuh's wg_desc): 128-byte swizzle, rows of 128 bytes in 8-row groups 1024 apart */
static __device__ __forceinline__ uint64_t hw_desc(uint32_t saddr) { return wg_desc(saddr, 16, 1024); }

static __device__ __forceinline__ uint32_t hm_h2u(__half2 h) { return *reinterpret_cast<uint32_t *>(&h); }
static __device__ __forceinline__ __half2 hm_u2h(uint32_t u) { return *reinterpret_cast<__half2 *>(&u); }

/* (p & M) | 0x64006400 as one LOP3 (0xEA: (a & b) | c). Written in C, nvcc emitted an AND and an OR: 32 of the 237
 * instructions of gemm_hb_k<1,2>'s step (bench/gpu/s35-arms). The same bits either way. */
template <uint32_t M> static __device__ __forceinline__ uint32_t hm_lop_or(uint32_t p) {
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(p), "n"(M), "n"(0x64006400));
    return r;
}

/* Two weights f16(d·(n - 8)) from the nibbles of bytes 0 and 2 of p: the low ones (hi = 0) or the high ones (hi = 1).
 * 0x6400 | n is 1024 + n in f16, 0x6400 | 16n is 1024 + 16n: n - 8 exactly, then one rounding by the multiply. */
static __device__ __forceinline__ uint32_t hm_w2(uint32_t p, int hi, __half2 d) {
    if (!hi) return hm_h2u(__hmul2(__hsub2(hm_u2h(hm_lop_or<0x000F000Fu>(p)), __float2half2_rn(1032.0f)), d));
    return hm_h2u(__hmul2(__hfma2(hm_u2h(hm_lop_or<0x00F000F0u>(p)), __float2half2_rn(0.0625f),
                                  __float2half2_rn(-72.0f)),
                          d));
}

/* Two Q8_0 weights f16(d·q) from the int8 bytes S & 3 and S >> 4 & 3 of p (S 0x4240: bytes 0 and 2; 0x4341: 1 and 3), p
 * already xor 0x80808080 (q + 128, unsigned): PRMT puts 0x64 above each byte, 1024 + q + 128 in f16; minus 1152 is q
 * exactly, then one rounding by the multiply (f32 d·q is exact, so tcu_dequant_f16's bits). */
template <uint32_t S> static __device__ __forceinline__ uint32_t hm_w2_q8(uint32_t p, __half2 d) {
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(p), "r"(0x64646464u), "n"(S));
    return hm_h2u(__hmul2(__hsub2(hm_u2h(r), __float2half2_rn(1152.0f)), d));
}

/* Two Q4_K weights f16(fmaf(dw, n, mw)) from the nibbles of bytes 0 and 2 of p (p already shifted for the high ones):
 * n exactly as f16 (Q4_0's 1024 + n trick), then to f32, one FFMA each (dw·n is exact in f32, so this is dequant8
 * <TCU_TYPE_Q4_KR>'s __fsub_rn(__fmul_rn(dl, n), ml) with mw = -ml), one rounding to f16 (cvt.rn.f16x2.f32). */
static __device__ __forceinline__ uint32_t hm_w2_k4(uint32_t p, float dw, float mw) {
    const float2 n = __half22float2(__hsub2(hm_u2h(hm_lop_or<0x000F000Fu>(p)), __float2half2_rn(1024.0f)));
    return hm_h2u(__floats2half2_rn(fmaf(dw, n.x, mw), fmaf(dw, n.y, mw)));
}

/* Two Q6_K weights f16(fmaf(dw, 1024 + q, mw)) from the bytes S & 3 and S >> 4 & 3 of p (Q8_0's PRMT: 0x64 above each
 * byte q = 0..63, 1024 + q in f16, exact), to f32, one FFMA each with mw = -1056·dw: dw = d·sc has at most 18
 * significant bits, so 1056·dw is exact and so is dw·(q - 32), which the FFMA therefore returns; then one rounding to
 * f16 (cvt.rn.f16x2.f32). tcu_dequant_f16's f16(dw·(q - 32)) but for a zero weight under a negative dw: +0 here, -0
 * there, which no sum of products can show (the accumulator starts at +0). */
template <uint32_t S> static __device__ __forceinline__ uint32_t hm_w2_k6(uint32_t p, float dw, float mw) {
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(p), "r"(0x64646464u), "n"(S));
    const float2 n = __half22float2(hm_u2h(r));
    return hm_h2u(__floats2half2_rn(fmaf(dw, n.x, mw), fmaf(dw, n.y, mw)));
}

/* The weight types: T the repacked rows' id (Q4_0R, Q8_0R, Q4_KR; the tiled layout of each is its own id, tcu.h), or
 * GGUF's Q6_K for Q6_KT (no rows arms: K6). QB quant bytes a block, QN 16-byte quant loads a row and step (one block),
 * B8 a byte a weight in the tiles (Q8_0T's places: Q8_0, Q6_K), GRP a rows' group or super-block (dequant.cuh), TCH a
 * tiled chunk (64 rows x 4 blocks: quants, then the scales [row][SRS] at SOF; Q4_K's and Q6_K's SRS = 12 as one
 * form: a 4-byte word, then a 2-byte pair a block). */
template <int T> struct hm_ty {
    static constexpr int Q8 = T == TCU_TYPE_Q8_0R, K4 = T == TCU_TYPE_Q4_KR, K6 = T == TERN_TYPE_Q6_K, B8 = Q8 || K6;
    static constexpr int QB = B8 ? 32 : 16, QN = QB / 16;
    static constexpr int GRP = Q8 ? RQ80_GROUP : K4 ? 144 : K6 ? 210 : RQ40_GROUP;
    static constexpr int TCH = Q8 ? TCU_HM_TCH8 : K4 ? TCU_HM_TCHK : K6 ? TCU_HM_TCH6 : TCU_HM_TCH, SOF = 64 * 4 * QB;
    static constexpr int SRS = K4 || K6 ? 12 : 8, KS = K4 || K6; /* KS: scales in the 12-byte form (hm_scales) */
};

/* A lane's weights of one step: rows g and g + 8, block 4s + t (Q8_0: qa its words 0..3, qa2 4..7; Q4_K: ha, hb the
 * rows' scales, the super-block's 16-byte header (rows) or x = d | dmin << 16 and y = sc | mn << 8 (tiles); Q4_0 leaves
 * the others unused, so its code is what it was before Q8_0 came) */
template <int T> struct hm_wregs {
    uint4 qa, qb, qa2, qb2;
    uint16_t da, db;
};
template <> struct hm_wregs<TCU_TYPE_Q4_KR> {
    uint4 qa, qb, qa2, qb2;
    uint16_t da, db;
    uint4 ha, hb;
};
template <> struct hm_wregs<TERN_TYPE_Q6_K> { /* Q8_0's quant words, Q4_K's scale form (ha, hb: x = d, y = sc | sc' << 8) */
    uint4 qa, qb, qa2, qb2;
    uint16_t da, db;
    uint4 ha, hb;
};

/* Q4_K's scales of a step for the fragments: dw = d·sc and mw = -(dmin·mn) of each row in f32 (dequant.cuh k4_header's
 * arithmetic); Q6_K's: dw = d·sc and mw = -1056·dw of each row's two sub-blocks of 16 (the block's first 16 weights:
 * dwa, mwa; the second: dwa1, mwa1); Q4_0 and Q8_0 take their rows' f16 d (da, db) instead */
template <int T> struct hm_scl {
    float dwa, mwa, dwb, mwb;
};
template <> struct hm_scl<TERN_TYPE_Q6_K> {
    float dwa, mwa, dwb, mwb;
    float dwa1, mwa1, dwb1, mwb1;
};
/* Q4_K's 16-byte super-block header h, sub-block j: k4_header on registers */
static __device__ __forceinline__ void hm_k4(uint4 h, int j, float &dw, float &mw) {
    const float d = __half2float(__ushort_as_half((unsigned short)(h.x & 0xFFFFu)));
    const float dmin = __half2float(__ushort_as_half((unsigned short)(h.x >> 16)));
    const int sh = 8 * (j & 3);
    const uint32_t b0 = (h.y >> sh) & 0xFFu, b1 = (h.z >> sh) & 0xFFu, b2 = (h.w >> sh) & 0xFFu;
    const int sc = j < 4 ? (int)(b0 & 63u) : (int)((b2 & 0xFu) | ((b0 >> 6) << 4));
    const int mn = j < 4 ? (int)(b1 & 63u) : (int)((b2 >> 4) | ((b1 >> 6) << 4));
    dw = __fmul_rn(d, (float)sc);
    mw = -__fmul_rn(dmin, (float)mn);
}
/* the tiles' form: x = d | dmin << 16, y = sc | mn << 8 */
static __device__ __forceinline__ void hm_k4t(uint4 h, float &dw, float &mw) {
    const float d = __half2float(__ushort_as_half((unsigned short)(h.x & 0xFFFFu)));
    const float dmin = __half2float(__ushort_as_half((unsigned short)(h.x >> 16)));
    dw = __fmul_rn(d, (float)(int)(h.y & 0xFFu));
    mw = -__fmul_rn(dmin, (float)(int)((h.y >> 8) & 0xFFu));
}
/* Q6_KT's form: x = d (f16), y = the block's two int8 sub-block scales */
static __device__ __forceinline__ void hm_k6t(uint4 h, float &dw0, float &mw0, float &dw1, float &mw1) {
    const float d = __half2float(__ushort_as_half((unsigned short)(h.x & 0xFFFFu)));
    dw0 = __fmul_rn(d, (float)(int)(int8_t)(h.y & 0xFFu));
    dw1 = __fmul_rn(d, (float)(int)(int8_t)((h.y >> 8) & 0xFFu));
    mw0 = __fmul_rn(-1056.0f, dw0);
    mw1 = __fmul_rn(-1056.0f, dw1);
}
/* b: the lane's block (4s + t), for Q4_K's rows (its sub-block b % 8); Q4_K and Q6_K only */
template <int T, int TL> static __device__ __forceinline__ hm_scl<T> hm_scales(const hm_wregs<T> &r, int b) {
    hm_scl<T> c;
    if constexpr (hm_ty<T>::K6) {
        hm_k6t(r.ha, c.dwa, c.mwa, c.dwa1, c.mwa1);
        hm_k6t(r.hb, c.dwb, c.mwb, c.dwb1, c.mwb1);
    } else if constexpr (hm_ty<T>::K4) {
        if (TL) {
            hm_k4t(r.ha, c.dwa, c.mwa);
            hm_k4t(r.hb, c.dwb, c.mwb);
        } else {
            hm_k4(r.ha, b & 7, c.dwa, c.mwa);
            hm_k4(r.hb, b & 7, c.dwb, c.mwb);
        }
    }
    return c;
}

template <int T>
static __device__ __forceinline__ void hm_wload(hm_wregs<T> &r, const uint8_t *ra, const uint8_t *rb, int b) {
    typedef hm_ty<T> Y;
    const size_t go = (size_t)(b >> 3) * Y::GRP;
    r.qa = __ldg((const uint4 *)(ra + go + 16 + Y::QB * (b & 7)));
    r.qb = __ldg((const uint4 *)(rb + go + 16 + Y::QB * (b & 7)));
    if constexpr (Y::Q8) {
        r.qa2 = __ldg((const uint4 *)(ra + go + 32 + Y::QB * (b & 7)));
        r.qb2 = __ldg((const uint4 *)(rb + go + 32 + Y::QB * (b & 7)));
    }
    if constexpr (Y::K4) { /* the super-block's header */
        r.ha = __ldg((const uint4 *)(ra + go));
        r.hb = __ldg((const uint4 *)(rb + go));
    } else {
        r.da = __ldg((const unsigned short *)(ra + go + 2 * (b & 7)));
        r.db = __ldg((const unsigned short *)(rb + go + 2 * (b & 7)));
    }
}

/* The tiled layout (arms >= TCU_HM_TILED, tcu_hm_tile): for each 64-row tile and 4-block step s one contiguous TCH-byte
 * chunk, the 64 rows' quants, then their scales [row][8] at SOF; tb the tile's first chunk, rt the lane's row in the
 * tile (g or g + 16 w), rt + 8 its second. Q4_0 and Q4_K: quants [row][64] (blocks 4s..4s+3, Q4_0R's in-block order;
 * Q4_K's scales [row][12]: d | dmin << 16, then sc, mn of each block t at 4 + 2t, 5 + 2t). Q8_0:
 * [row][128], half h (words 4h..4h+3) of block t at 64 (h ^ (row & 1)) + 16 t: a warp's first 16-byte loads (rows g of
 * both parities) then cover all 32 banks of shared memory, as Q4_0's do (the bulk-copy arms read the chunk there). */
template <int T> static __device__ __forceinline__ int hm_qoff(int rt, int t, int h) {
    return hm_ty<T>::B8 ? rt * 128 + 64 * (h ^ (rt & 1)) + 16 * t : rt * 64 + 16 * t;
}
template <int T>
static __device__ __forceinline__ void hm_wload_tl(hm_wregs<T> &r, const uint8_t *tb, int s, int rt, int t) {
    typedef hm_ty<T> Y;
    const uint8_t *c = tb + (size_t)s * Y::TCH;
    if constexpr (Y::B8) {
        r.qa = __ldg((const uint4 *)(c + hm_qoff<T>(rt, t, 0)));
        r.qa2 = __ldg((const uint4 *)(c + hm_qoff<T>(rt, t, 1)));
        r.qb = __ldg((const uint4 *)(c + hm_qoff<T>(rt + 8, t, 0)));
        r.qb2 = __ldg((const uint4 *)(c + hm_qoff<T>(rt + 8, t, 1)));
    } else {
        r.qa = __ldg((const uint4 *)(c + rt * 64 + 16 * t));
        r.qb = __ldg((const uint4 *)(c + (rt + 8) * 64 + 16 * t));
    }
    if constexpr (Y::KS) {
        r.ha.x = __ldg((const unsigned int *)(c + Y::SOF + rt * 12));
        r.ha.y = __ldg((const unsigned short *)(c + Y::SOF + rt * 12 + 4 + 2 * t));
        r.hb.x = __ldg((const unsigned int *)(c + Y::SOF + (rt + 8) * 12));
        r.hb.y = __ldg((const unsigned short *)(c + Y::SOF + (rt + 8) * 12 + 4 + 2 * t));
    } else {
        r.da = __ldg((const unsigned short *)(c + Y::SOF + rt * 8 + 2 * t));
        r.db = __ldg((const unsigned short *)(c + Y::SOF + (rt + 8) * 8 + 2 * t));
    }
}

static __device__ __forceinline__ uint32_t hm_word(const uint4 &q, int wi) {
    return wi == 0 ? q.x : wi == 1 ? q.y : wi == 2 ? q.z : q.w;
}

/* Slab u's A fragment (rows g, g + 8; k slots 2t, 2t+1, 2t+8, 2t+9) from the step's weights. Q4_0: word u % 4, the
 * low nibbles for u < 4, the high ones past; Q8_0: word u (elements 4u..4u+3, the same elements: tcu_hm_pos). */
template <int T>
static __device__ __forceinline__ void hm_afrag(const hm_wregs<T> &r, __half2 da, __half2 db, int u, uint32_t (&a)[4]) {
    const int wi = u & 3, hi = u >> 2;
    if constexpr (hm_ty<T>::Q8) {
        const uint32_t wa = hm_word(hi ? r.qa2 : r.qa, wi) ^ 0x80808080u, wb = hm_word(hi ? r.qb2 : r.qb, wi) ^ 0x80808080u;
        a[0] = hm_w2_q8<0x4240>(wa, da); /* row g: bytes 4u, 4u+2 */
        a[1] = hm_w2_q8<0x4240>(wb, db); /* row g + 8 */
        a[2] = hm_w2_q8<0x4341>(wa, da); /* row g: bytes 4u+1, 4u+3 */
        a[3] = hm_w2_q8<0x4341>(wb, db);
    } else {
        const uint32_t wa = hm_word(r.qa, wi), wb = hm_word(r.qb, wi);
        a[0] = hm_w2(wa, hi, da);      /* row g: bytes 4w, 4w+2 */
        a[1] = hm_w2(wb, hi, db);      /* row g + 8 */
        a[2] = hm_w2(wa >> 8, hi, da); /* row g: bytes 4w+1, 4w+3 */
        a[3] = hm_w2(wb >> 8, hi, db);
    }
}
/* Q4_K's: Q4_0's words and nibbles (Q4_KR keeps Q4_0R's in-block order), its own arithmetic (hm_w2_k4). A function of
 * its own, called under `if constexpr`, so the Q4_0 and Q8_0 kernels' code is what it was before Q4_K came. */
static __device__ __forceinline__ void hm_afrag_k4(const hm_wregs<TCU_TYPE_Q4_KR> &r, const hm_scl<TCU_TYPE_Q4_KR> &sc, int u,
                                                   uint32_t (&a)[4]) {
    const int wi = u & 3, hi = u >> 2;
    const uint32_t wa = hm_word(r.qa, wi) >> (4 * hi), wb = hm_word(r.qb, wi) >> (4 * hi);
    a[0] = hm_w2_k4(wa, sc.dwa, sc.mwa);      /* row g: bytes 4w, 4w+2 */
    a[1] = hm_w2_k4(wb, sc.dwb, sc.mwb);      /* row g + 8 */
    a[2] = hm_w2_k4(wa >> 8, sc.dwa, sc.mwa); /* row g: bytes 4w+1, 4w+3 */
    a[3] = hm_w2_k4(wb >> 8, sc.dwb, sc.mwb);
}
/* Q6_K's: Q8_0's words (slab u: the block's word u, elements 4u..4u+3, in its first sub-block of 16 for u < 4), its own
 * arithmetic (hm_w2_k6) with the sub-block's scale. Under `if constexpr` as Q4_K's. */
static __device__ __forceinline__ void hm_afrag_k6(const hm_wregs<TERN_TYPE_Q6_K> &r, const hm_scl<TERN_TYPE_Q6_K> &sc, int u,
                                                   uint32_t (&a)[4]) {
    const int wi = u & 3, hi = u >> 2;
    const uint32_t wa = hm_word(hi ? r.qa2 : r.qa, wi), wb = hm_word(hi ? r.qb2 : r.qb, wi);
    const float dwa = hi ? sc.dwa1 : sc.dwa, mwa = hi ? sc.mwa1 : sc.mwa;
    const float dwb = hi ? sc.dwb1 : sc.dwb, mwb = hi ? sc.mwb1 : sc.mwb;
    a[0] = hm_w2_k6<0x4240>(wa, dwa, mwa); /* row g: bytes 4u, 4u+2 */
    a[1] = hm_w2_k6<0x4240>(wb, dwb, mwb); /* row g + 8 */
    a[2] = hm_w2_k6<0x4341>(wa, dwa, mwa); /* row g: bytes 4u+1, 4u+3 */
    a[3] = hm_w2_k6<0x4341>(wb, dwb, mwb);
}
/* slab u's fragment of any kind (Q4_K, Q6_K: sc; the others: da, db) */
#define HM_AFRAG(u)                                                                                                    \
    do {                                                                                                               \
        if constexpr (hm_ty<T>::K6) hm_afrag_k6(cur, sc, (u), af[(u)]);                                                \
        else if constexpr (hm_ty<T>::K4) hm_afrag_k4(cur, sc, (u), af[(u)]);                                           \
        else hm_afrag<T>(cur, da, db, (u), af[(u)]);                                                                   \
    } while (0)

/* The K split: S segments of K fixed by the launch's shape alone (every output's bits depend on it, not on m or the
 * arm): enough warps (16 rows each) for ~12 an SM of 132, S a power of two up to 8, segments of at least 8 steps.
 * Llama-3-8B: q|k|v (6144 rows) and o 4 segments, down (4096 rows of 14336) 8, gate|up and the head 1
 * (bench/gpu/s24-hmma/hmma-sweep.txt, the mma.sync form's sweep). */
static int g_hm_splits; /* tcu_gemm_hm_splits_set: 0 the rule */
extern "C" void tcu_gemm_hm_splits_set(int s) { g_hm_splits = s > 0 && s <= 16 ? s : 0; }
static int hm_splits(int nb, int64_t n_out) {
    const int64_t warps = (n_out + 15) / 16;
    const int nst = (nb + 3) / 4;
    if (g_hm_splits) { /* the measurement's count, halved until a segment has at least 4 steps */
        int s = g_hm_splits;
        while (s > 1 && nst < 4 * s) s >>= 1;
        return s;
    }
    int s = 1;
    while (s < 8 && warps * s < 1536 && nst >= 16 * s) s *= 2;
    return s;
}

typedef struct {
    float *y[3];
    int r1, r2;
} hm_out;

static __device__ __forceinline__ void hm_store(const hm_out &o, int n_out, int r, int c, float v) {
    if (r < o.r1) o.y[0][(size_t)c * o.r1 + r] = v;
    else if (r < o.r2) o.y[1][(size_t)c * (o.r2 - o.r1) + (r - o.r1)] = v;
    else o.y[2][(size_t)c * (n_out - o.r2) + (r - o.r2)] = v;
}

/* The CTA's outputs, acc (rows r0 + g and r0 + g + 8, columns 8j + 2t and + 1): into y (S = 1), or its segment's
 * partial sums into ws, the last CTA of the row tile to finish adding the S partials in segment order (the bits depend
 * on S alone). The partials are the CTA's own: segment z (blockIdx.y) of row tile x at ws + HM_CNT +
 * (z gridDim.x + x) 4NT TH floats, acc[i] of thread tid at i TH + tid (every store and load of a warp one 128-byte
 * line, each address an immediate offset of one pointer); rows past n_out and columns past m are written too, never
 * stored to y. */
template <int NT, int TH>
static __device__ __forceinline__ void hm_epilogue(const float (&acc)[4 * NT], int r0, int g, int t, int m, int n_out,
                                                   const hm_out &yo, float *__restrict__ ws, int &last) {
    const int S = (int)gridDim.y;
    const size_t ps = (size_t)gridDim.x * (size_t)(4 * NT * TH); /* a segment's partials */
    float *part = ws + HM_CNT + (size_t)blockIdx.x * (size_t)(4 * NT * TH) + threadIdx.x;
    if (S > 1) {
#pragma unroll
        for (int i = 0; i < 4 * NT; i++) __stcg(part + (size_t)blockIdx.y * ps + i * TH, acc[i]);
    } else {
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = r0 + g + 8 * (e >> 1), c = 8 * j + 2 * t + (e & 1);
                if (r < n_out && c < m) hm_store(yo, n_out, r, c, acc[4 * j + e]);
            }
        return;
    }
    /* the split: the last CTA of a row tile to finish adds the S partial sums in segment order (last: a __shared__ int
     * of the kernel's), a segment's 4NT loads issued together */
    __threadfence();
    __syncthreads();
    int *cnt = (int *)ws;
    if (threadIdx.x == 0) last = atomicAdd(&cnt[blockIdx.x], 1) == S - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const float *p = part;
    float v[4 * NT];
#pragma unroll
    for (int i = 0; i < 4 * NT; i++) v[i] = __ldcg(p + i * TH);
    for (int q = 1; q < S; q++) {
        p += ps;
#pragma unroll
        for (int i = 0; i < 4 * NT; i++) v[i] = v[i] + __ldcg(p + i * TH);
    }
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = r0 + g + 8 * (e >> 1), c = 8 * j + 2 * t + (e & 1);
            if (r < n_out && c < m) hm_store(yo, n_out, r, c, v[4 * j + e]);
        }
    if (threadIdx.x == 0) cnt[blockIdx.x] = 0;
}

/* CTA: WG warpgroups, each 64 rows (a warp 16) and all 8NT columns; grid (row tiles, S). x: f16 (m, n_in) in the f16
 * order's layout. A 4-block step's x (8NT rows of 256 bytes: two 64-element swizzle atoms) goes to shared memory by
 * cp.async NS - 2 steps ahead into a ring of NS stages; the weights to registers two steps ahead. Each slab's wgmma is
 * its own commit group: before slab u's fragment registers are rewritten the group that read them (8 back) is waited
 * for, so the dequantization of slab u + 1 runs while slab u's MMA does. A stage is refilled two steps after its
 * last read (every warp has waited for that step's groups at the barrier before the copy). The tiled arms at two
 * warpgroups ask for two CTAs an SM (<= 128 registers): unbounded, arm 7 at 64 columns took 130 and one CTA an SM, and
 * lost 51.5 -> 81.6 us on 4096x28672 (bench/gpu/s29-hmma/c-splits-sweep.txt); bounded 124, no spills (built, not run). */
template <int T, int NT, int WG, int NS, int BAT, int TL>
__global__ void __launch_bounds__(128 * WG, TL && WG == 2 ? 2 : 0)
gemm_hw_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const __half *__restrict__ x, int m,
          const hm_out yo, float *__restrict__ ws) {
    constexpr int R = 8 * NT, SB = R * 256, TH = 128 * WG, CS = TH / 16, NCH = (R + CS - 1) / CS;
    extern __shared__ __align__(16) uint8_t hw_sm[];
    const uint32_t sbase = (hm_smem(hw_sm) + 1023u) & ~1023u;
    const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int r0 = (int)blockIdx.x * (64 * WG) + warp * 16;
    const int S = (int)gridDim.y, nst = nb / 4, per = (nst + S - 1) / S;
    const int sb = (int)blockIdx.y * per, se = min(nst, sb + per); /* this CTA's 4-block steps [sb, se) */
    const uint8_t *ra = w + (size_t)min(r0 + g, n_out - 1) * stride, *rb = w + (size_t)min(r0 + g + 8, n_out - 1) * stride;
    /* TL: the tile's chunks (a second warpgroup past the last tile reads the last one: its rows are never stored) */
    typedef hm_ty<T> Y;
    const uint8_t *tb = w + (size_t)min(r0 >> 6, (n_out - 1) >> 6) * (size_t)nst * Y::TCH;
    const int rt = (r0 & 63) + g;
    auto wload = [&](hm_wregs<T> &r, int s) {
        if (TL) hm_wload_tl<T>(r, tb, s, rt, t);
        else hm_wload<T>(r, ra, rb, 4 * s + t);
    };
    const size_t ldx = (size_t)nb * 32;
    /* the thread's x pieces: piece q of columns c0 + CS i (i < NCH), at a fixed offset in every stage. Columns past m
     * are not copied: their stale shared memory only reaches the MMA's output columns past m, never stored. */
    const int q = tid & 15, c0 = tid >> 4;
    const __half *xs0 = x + (size_t)c0 * ldx + 8 * q;
    const size_t xcs = (size_t)CS * ldx;
    const uint32_t dofs = (uint32_t)((q >> 3) * (R * 128) + c0 * 128 + (((q & 7) ^ (c0 & 7)) << 4));
    const uint64_t desc0 = hw_desc(sbase);
    float acc[4 * NT];
#pragma unroll
    for (int i = 0; i < 4 * NT; i++) acc[i] = 0.0f;
    hm_wregs<T> cur, nx1;
    uint32_t af[8][4]; /* slab u's fragment, read by its wgmma until that group is waited for */
    if (sb < se) wload(cur, sb); /* the weights are constant: before the wait */
    if (sb + 1 < se) wload(nx1, sb + 1);
    pdl_wait();
    auto xcopy = [&](int s, int stg) { /* step s's x into stage stg; one commit group a call, empty past the segment */
        if (s < se) {
            const uint32_t d = sbase + (uint32_t)stg * SB + dofs;
            const __half *src = xs0 + (size_t)s * 128;
#pragma unroll
            for (int i = 0; i < NCH; i++)
                if (c0 + CS * i < R && c0 + CS * i < m)
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d + (uint32_t)(i * CS * 128)),
                                 "l"(src + (size_t)i * xcs)
                                 : "memory");
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
#pragma unroll
    for (int i = 0; i < NS - 2; i++) xcopy(sb + i, i);
    int stg = 0, cst = NS - 2; /* step s's stage, and the stage step s + NS - 2 is copied into */
    for (int s = sb; s < se; s++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(NS - 3) : "memory"); /* step s's copies (this thread's) */
        if (BAT) wg_wait_mma_n<0>(); /* BAT: the step's 8 wgmmas one group, all waited for here */
        else wg_wait_mma_n<7>();     /* step s - 2's MMAs (and s - 1's first) are done: its stage is free */
        wg_fence_proxy();  /* this thread's copies, visible to the async proxy */
        __syncthreads();   /* every thread's copies of step s; every warp past its wait */
        xcopy(s + NS - 2, cst); /* into step s - 2's stage */
        if (s + 4 < se) { /* the weights of 4 steps on into L2 (the registers hold the next one) */
            if (TL) {
                const uint8_t *c = tb + (size_t)(s + 4) * Y::TCH;
                if constexpr (Y::B8) { /* the warp's 16 rows' 128-byte lines and its scales' line(s) */
                    pdl_prefetch_l2(c + rt * 128);
                    pdl_prefetch_l2(t & 1 ? c + Y::SOF + (r0 & 63) * Y::SRS + (Y::K6 ? (t >> 1) * 128 : 0) : c + (rt + 8) * 128);
                } else {
                    pdl_prefetch_l2(c + rt * 64 + 16 * t);
                    pdl_prefetch_l2(lane < 16 ? c + (rt + 8) * 64 + 16 * t : c + 4096 + rt * Y::SRS);
                }
            } else {
                const int bp = 4 * (s + 4) + t;
                pdl_prefetch_l2(ra + (size_t)(bp >> 3) * Y::GRP + 16 + Y::QB * (bp & 7));
                pdl_prefetch_l2(rb + (size_t)(bp >> 3) * Y::GRP + 16 + Y::QB * (bp & 7));
            }
        }
        const uint64_t dst = desc0 + (uint64_t)(((uint32_t)stg * SB) >> 4);
        const __half2 da = __half2half2(__ushort_as_half(cur.da)), db = __half2half2(__ushort_as_half(cur.db));
        hm_scl<T> sc;
        if constexpr (hm_ty<T>::KS) sc = hm_scales<T, TL>(cur, 4 * s + t);
        if (BAT) {
#pragma unroll
            for (int u = 0; u < 8; u++) HM_AFRAG(u);
            wg_fence();
#pragma unroll
            for (int u = 0; u < 8; u++) hw_mma<NT>::run(acc, af[u], dst + (uint64_t)(((u >> 2) * (R * 128) + (u & 3) * 32) >> 4));
            wg_commit_mma();
        }
#pragma unroll
        for (int u = 0; u < 8 && !BAT; u++) {
            if (u) wg_wait_mma_n<7>(); /* the group that last read af[u] (8 back) */
            HM_AFRAG(u);
            wg_fence();
            hw_mma<NT>::run(acc, af[u], dst + (uint64_t)(((u >> 2) * (R * 128) + (u & 3) * 32) >> 4));
            wg_commit_mma();
        }
        cur = nx1;
        if (s + 2 < se) wload(nx1, s + 2);
        stg = stg + 1 == NS ? 0 : stg + 1;
        cst = cst + 1 == NS ? 0 : cst + 1;
    }
    wg_wait_mma_n<0>();
    wg_touch(acc);
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    pdl_trigger();

    __shared__ int last;
    hm_epilogue<NT, TH>(acc, r0, g, t, m, n_out, yo, ws, last);
}

/* Arms 9, 10 (the tiled layout; NW 4, 2): arm 6's schedule (one warpgroup, x by cp.async NS - 2 steps ahead, the step's 8
 * wgmmas one group waited for at the next step's top) with the weights streamed into shared memory by bulk copies:
 * thread 0 copies a step's chunk (4608 bytes, Q8_0 8704, Q4_K 4864; cp.async.bulk, completion in bytes on the stage's mbarrier) NW steps
 * ahead, the first NW before the PDL wait (the weights are constant); each lane reads its 16-byte quant words and its
 * scales from the stage (LDS) where arm 6 loads them from global memory one step ahead. A stage is refilled at the top
 * of the step after its use, past the CTA barrier every thread crosses after reading it (no proxy fence between those
 * reads and the copy: gemv_dp4a.cu's TMA form and CUTLASS's pipelines omit it too). The same operations on the same
 * values as arm 6, so the same bits. In gpu_hmma's sweep ~10% ahead of arm 6 at 8, 16 and 32 columns; in the engine
 * ahead at one column and at 9..16 and 25..32, behind at 2..8 with PDL (docs/ledger.md 2026-12-04 "the f16 order's
 * weights by bulk copies") and ahead there without (2026-12-06 "Q4_0's f16 order at 2..8 tokens by bulk copies without
 * PDL"; hm_pick_tl, exec.c PDL_OFF_F16Q4_LO). */
template <int T, int NT, int NW>
__global__ void __launch_bounds__(128)
gemm_hb_k(const uint8_t *__restrict__ w, int nb, int n_out, const __half *__restrict__ x, int m, const hm_out yo,
          float *__restrict__ ws) {
    constexpr int NS = 4, R = 8 * NT, SB = R * 256, TH = 128, CS = TH / 16, NCH = (R + CS - 1) / CS, TCH = hm_ty<T>::TCH;
    extern __shared__ __align__(16) uint8_t hw_sm[];
    __shared__ __align__(8) uint64_t hb_bar[NW];
    const uint32_t sbase = (hm_smem(hw_sm) + 1023u) & ~1023u, wbase = sbase + NS * SB;
    const uint8_t *wsm = hw_sm + (wbase - hm_smem(hw_sm)); /* the weight stages, generic */
    const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int r0 = (int)blockIdx.x * 64 + warp * 16;
    const int S = (int)gridDim.y, nst = nb / 4, per = (nst + S - 1) / S;
    const int sb = (int)blockIdx.y * per, se = min(nst, sb + per);
    const uint8_t *tb = w + (size_t)blockIdx.x * (size_t)nst * TCH;
    const int rt = warp * 16 + g;
    if (tid == 0) {
#pragma unroll
        for (int k = 0; k < NW; k++) wg_mbar_init(hm_smem(&hb_bar[k]), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    auto wissue = [&](int s, int k) { /* thread 0: step s's chunk into stage k */
        const uint32_t b = hm_smem(&hb_bar[k]);
        wg_mbar_expect_tx(b, TCH);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                         wbase + (uint32_t)(k * TCH)),
                     "l"(tb + (size_t)s * TCH), "n"(TCH), "r"(b)
                     : "memory");
    };
    if (tid == 0)
        for (int i = 0; i < NW && sb + i < se; i++) wissue(sb + i, i);
    pdl_wait();
    const size_t ldx = (size_t)nb * 32;
    const int q = tid & 15, c0 = tid >> 4;
    const __half *xs0 = x + (size_t)c0 * ldx + 8 * q;
    const size_t xcs = (size_t)CS * ldx;
    const uint32_t dofs = (uint32_t)((q >> 3) * (R * 128) + c0 * 128 + (((q & 7) ^ (c0 & 7)) << 4));
    const uint64_t desc0 = hw_desc(sbase);
    float acc[4 * NT];
#pragma unroll
    for (int i = 0; i < 4 * NT; i++) acc[i] = 0.0f;
    uint32_t af[8][4];
    auto xcopy = [&](int s, int stg) {
        if (s < se) {
            const uint32_t d = sbase + (uint32_t)stg * SB + dofs;
            const __half *src = xs0 + (size_t)s * 128;
#pragma unroll
            for (int i = 0; i < NCH; i++)
                if (c0 + CS * i < R && c0 + CS * i < m)
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d + (uint32_t)(i * CS * 128)),
                                 "l"(src + (size_t)i * xcs)
                                 : "memory");
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
#pragma unroll
    for (int i = 0; i < NS - 2; i++) xcopy(sb + i, i);
    int stg = 0, cst = NS - 2, wk = 0;
    uint32_t ph = 0;
    for (int s = sb; s < se; s++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(NS - 3) : "memory");
        wg_wait_mma_n<0>();
        wg_fence_proxy();
        __syncthreads(); /* every thread's x copies of step s; every thread past step s - 1's weight reads */
        xcopy(s + NS - 2, cst);
        if (tid == 0 && s > sb && s - 1 + NW < se) wissue(s - 1 + NW, wk == 0 ? NW - 1 : wk - 1);
        wg_mbar_wait(hm_smem(&hb_bar[wk]), ph);
        const uint8_t *c = wsm + wk * TCH;
        hm_wregs<T> cur;
        if constexpr (hm_ty<T>::B8) {
            cur.qa = *(const uint4 *)(c + hm_qoff<T>(rt, t, 0));
            cur.qa2 = *(const uint4 *)(c + hm_qoff<T>(rt, t, 1));
            cur.qb = *(const uint4 *)(c + hm_qoff<T>(rt + 8, t, 0));
            cur.qb2 = *(const uint4 *)(c + hm_qoff<T>(rt + 8, t, 1));
        } else {
            cur.qa = *(const uint4 *)(c + rt * 64 + 16 * t);
            cur.qb = *(const uint4 *)(c + (rt + 8) * 64 + 16 * t);
        }
        if constexpr (hm_ty<T>::KS) {
            cur.ha.x = *(const unsigned int *)(c + hm_ty<T>::SOF + rt * 12);
            cur.ha.y = *(const unsigned short *)(c + hm_ty<T>::SOF + rt * 12 + 4 + 2 * t);
            cur.hb.x = *(const unsigned int *)(c + hm_ty<T>::SOF + (rt + 8) * 12);
            cur.hb.y = *(const unsigned short *)(c + hm_ty<T>::SOF + (rt + 8) * 12 + 4 + 2 * t);
        } else {
            cur.da = *(const unsigned short *)(c + hm_ty<T>::SOF + rt * 8 + 2 * t);
            cur.db = *(const unsigned short *)(c + hm_ty<T>::SOF + (rt + 8) * 8 + 2 * t);
        }
        const uint64_t dst = desc0 + (uint64_t)(((uint32_t)stg * SB) >> 4);
        const __half2 da = __half2half2(__ushort_as_half(cur.da)), db = __half2half2(__ushort_as_half(cur.db));
        hm_scl<T> sc;
        if constexpr (hm_ty<T>::KS) sc = hm_scales<T, 1>(cur, 4 * s + t);
#pragma unroll
        for (int u = 0; u < 8; u++) HM_AFRAG(u);
        wg_fence();
#pragma unroll
        for (int u = 0; u < 8; u++) hw_mma<NT>::run(acc, af[u], dst + (uint64_t)(((u >> 2) * (R * 128) + (u & 3) * 32) >> 4));
        wg_commit_mma();
        stg = stg + 1 == NS ? 0 : stg + 1;
        cst = cst + 1 == NS ? 0 : cst + 1;
        if (++wk == NW) { wk = 0; ph ^= 1u; }
    }
    wg_wait_mma_n<0>();
    wg_touch(acc);
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    pdl_trigger();

    __shared__ int last;
    hm_epilogue<NT, TH>(acc, r0, g, t, m, n_out, yo, ws, last);
}

/* Arm 11 (the tiled layout): the f16 order by warps (issue 26; Q4_K's passes of 2..4 tokens). Each warp runs its 16
 * rows' chains alone with mma.sync m16n8k16, NT of them a slab (one per 8 columns): the A fragments are arm 6's (the
 * same loads and dequantization), the B fragments 32-bit loads of x from global memory (L1; a step's 128 values of a
 * column are 256 contiguous bytes), no shared memory and no barrier in the loop; the warp keeps its next D steps'
 * weights in registers (D 4 for the 4-bit types, 2 for Q8_0 and Q6_K: a step's words are twice as many; D 8 spilled
 * 160-240 bytes at one column under the 128-register cap, D 2 (arm 12, deleted) summed level with D 4 in the sweep).
 * mma.sync m16n8k16 gives wgmma m64nNk16's bits for the same fragments (dev/cuda/mma_bits.cu, docs/ledger.md 2026-12-06
 * "does mma.sync give wgmma's bits?"), so each output is the same chain of 16-deep MMAs over the same K segments as
 * every other arm's, from +0: the same bits (gpu_hmma's memcmp against the one-column call). The grid, the 128-thread
 * CTA of 64 rows and the epilogue are arm 10's. Built for one column, where arm 10 waits on each step's copy and
 * barrier (ledger 2026-12-05 "what bounds the f16 order at one column"): there it lost (H100 sweep: Q4_0 gate|up 33.8
 * against 29.0 us; the engine at B = 1 -8.4% on Q4_0, -1.7% on Q4_K), and at 8 columns, where every lane loads x (16
 * LDG a step), it lost more; it won in the engine on Q4_K at 2..4 columns only (ledger 2026-12-06 "the f16 order by
 * warps"). <= 128 registers (4 CTAs an SM: gate|up's 448 tiles and down's 512 CTAs in one wave). */
template <int T, int NT, int D0>
__global__ void __launch_bounds__(128, 4)
gemm_hp_k(const uint8_t *__restrict__ w, int nb, int n_out, const __half *__restrict__ x, int m, const hm_out yo,
          float *__restrict__ ws) {
    typedef hm_ty<T> Y;
    constexpr int D = Y::B8 ? D0 / 2 : D0;
    const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int r0 = (int)blockIdx.x * 64 + warp * 16;
    const int S = (int)gridDim.y, nst = nb / 4, per = (nst + S - 1) / S;
    const int sb = (int)blockIdx.y * per, se = min(nst, sb + per);
    const uint8_t *tb = w + (size_t)blockIdx.x * (size_t)nst * Y::TCH;
    const int rt = warp * 16 + g;
    hm_wregs<T> ring[D];
#pragma unroll
    for (int i = 0; i < D; i++)
        if (sb + i < se) hm_wload_tl<T>(ring[i], tb, sb + i, rt, t); /* the weights are constant: before the wait */
    pdl_wait();
    const size_t ldx = (size_t)nb * 32;
    /* the lane's x: column 8j + g (none past m), k slots 2t, 2t+1 (b0) and 2t+8, 2t+9 (b1) of each slab */
    const unsigned *xg[NT];
    bool xon[NT];
#pragma unroll
    for (int j = 0; j < NT; j++) {
        xon[j] = 8 * j + g < m;
        xg[j] = (const unsigned *)(x + (size_t)(xon[j] ? 8 * j + g : 0) * ldx + 2 * t);
    }
    float acc[4 * NT];
#pragma unroll
    for (int i = 0; i < 4 * NT; i++) acc[i] = 0.0f;
    for (int s0 = sb; s0 < se; s0 += D) {
#pragma unroll
        for (int p = 0; p < D; p++) {
            const int s = s0 + p;
            if (s >= se) break;
            const hm_wregs<T> cur = ring[p];
            if (s + D < se) hm_wload_tl<T>(ring[p], tb, s + D, rt, t);
            const __half2 da = __half2half2(__ushort_as_half(cur.da)), db = __half2half2(__ushort_as_half(cur.db));
            hm_scl<T> sc;
            if constexpr (Y::KS) sc = hm_scales<T, 1>(cur, 4 * s + t);
            uint32_t af[8][4];
#pragma unroll
            for (int u = 0; u < 8; u++) {
                HM_AFRAG(u);
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    const uint32_t b0 = xon[j] ? __ldg(xg[j] + 64 * s + 8 * u) : 0u; /* 128 halves a step, 16 a slab */
                    const uint32_t b1 = xon[j] ? __ldg(xg[j] + 64 * s + 8 * u + 4) : 0u;
                    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                                 "{%8, %9}, {%0, %1, %2, %3};\n"
                                 : "+f"(acc[4 * j]), "+f"(acc[4 * j + 1]), "+f"(acc[4 * j + 2]), "+f"(acc[4 * j + 3])
                                 : "r"(af[u][0]), "r"(af[u][1]), "r"(af[u][2]), "r"(af[u][3]), "r"(b0), "r"(b1));
                }
            }
        }
    }
    pdl_trigger();

    __shared__ int last;
    hm_epilogue<NT, 128>(acc, r0, g, t, m, n_out, yo, ws, last);
}

/* Arms: (WG, NS, BAT). Every arm the same bits. */
static const int hm_arm_cfg[TCU_HM_ARMS][3] = {{1, 4, 0}, {2, 4, 0}, {1, 6, 0}, {2, 6, 0}, {1, 4, 1}, {2, 4, 1},
                                               {1, 4, 1}, {2, 4, 0}, {1, 4, 0},  /* 6, 7, 8: arms 4, 1, 0 tiled */
                                               {1, 4, 1}, {1, 4, 1},  /* 9, 10: arm 6, weights by bulk copies */
                                               {1, 4, 1}};            /* 11: by warps (mma.sync), D 4 */

static size_t hw_smem_bytes(int nt, int ns) { return (size_t)ns * (size_t)(8 * nt) * 256 + 1024; }

template <int T, int NT, int WG, int NS, int BAT, int TL = 0>
static void hm_launch(const uint8_t *w, size_t stride, int nb, int n_out, const __half *x, int m, const hm_out &o,
                      float *ws, int S, cudaStream_t st) {
    const int rows = 64 * WG;
    const int smem = (int)hw_smem_bytes(NT, NS);
    static int set = 0; /* above 48 KiB a kernel must ask for its dynamic shared memory (once a process) */
    if (!set) {
        cudaFuncSetAttribute(gemm_hw_k<T, NT, WG, NS, BAT, TL>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        set = 1;
    }
    const dim3 grid((unsigned)((n_out + rows - 1) / rows), (unsigned)S);
    PDL_LAUNCH((gemm_hw_k<T, NT, WG, NS, BAT, TL>), grid, dim3(128 * WG), smem, st, w, stride, nb, n_out, x, m, o, ws);
}

template <int T, int NT, int NW>
static void hb_launch(const uint8_t *w, int nb, int n_out, const __half *x, int m, const hm_out &o, float *ws, int S,
                      cudaStream_t st) {
    const int smem = (int)hw_smem_bytes(NT, 4) + NW * hm_ty<T>::TCH;
    static int set = 0;
    if (!set) {
        cudaFuncSetAttribute(gemm_hb_k<T, NT, NW>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        set = 1;
    }
    const dim3 grid((unsigned)((n_out + 63) / 64), (unsigned)S);
    PDL_LAUNCH((gemm_hb_k<T, NT, NW>), grid, dim3(128), smem, st, w, nb, n_out, x, m, o, ws);
}

template <int T, int NT, int D>
static void hp_launch(const uint8_t *w, int nb, int n_out, const __half *x, int m, const hm_out &o, float *ws, int S,
                      cudaStream_t st) {
    const dim3 grid((unsigned)((n_out + 63) / 64), (unsigned)S);
    PDL_LAUNCH((gemm_hp_k<T, NT, D>), grid, dim3(128), 0, st, w, nb, n_out, x, m, o, ws);
}

template <int T, int NT>
static void hm_arm(int arm, const uint8_t *w, size_t stride, int nb, int n_out, const __half *x, int m, const hm_out &o,
                   float *ws, int S, cudaStream_t st) {
    if constexpr (hm_ty<T>::K6) { /* tiles only (tcu_gemm_hm refuses the rows' arms for it) */
        switch (arm) {
        case 6: hm_launch<T, NT, 1, 4, 1, 1>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 7: hm_launch<T, NT, 2, 4, 0, 1>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 8: hm_launch<T, NT, 1, 4, 0, 1>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 9: hb_launch<T, NT, 4>(w, nb, n_out, x, m, o, ws, S, st); break;
        case 11: hp_launch<T, NT, 4>(w, nb, n_out, x, m, o, ws, S, st); break;
        default: hb_launch<T, NT, 2>(w, nb, n_out, x, m, o, ws, S, st); break;
        }
    } else {
        switch (arm) {
        case 0: hm_launch<T, NT, 1, 4, 0>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 1: hm_launch<T, NT, 2, 4, 0>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 2: hm_launch<T, NT, 1, 6, 0>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 3: hm_launch<T, NT, 2, 6, 0>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 4: hm_launch<T, NT, 1, 4, 1>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 5: hm_launch<T, NT, 2, 4, 1>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 6: hm_launch<T, NT, 1, 4, 1, 1>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 7: hm_launch<T, NT, 2, 4, 0, 1>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 8: hm_launch<T, NT, 1, 4, 0, 1>(w, stride, nb, n_out, x, m, o, ws, S, st); break;
        case 9: hb_launch<T, NT, 4>(w, nb, n_out, x, m, o, ws, S, st); break;
        case 11: hp_launch<T, NT, 4>(w, nb, n_out, x, m, o, ws, S, st); break;
        default: hb_launch<T, NT, 2>(w, nb, n_out, x, m, o, ws, S, st); break;
        }
    }
}

template <int T>
static void hm_type(int arm, const uint8_t *w, size_t stride, int nb, int n_out, const __half *x, int m,
                    const hm_out &o, float *ws, int S, cudaStream_t st) {
    switch ((m + 7) / 8) {
    case 1: hm_arm<T, 1>(arm, w, stride, nb, n_out, x, m, o, ws, S, st); break;
    case 2: hm_arm<T, 2>(arm, w, stride, nb, n_out, x, m, o, ws, S, st); break;
    case 3: hm_arm<T, 3>(arm, w, stride, nb, n_out, x, m, o, ws, S, st); break;
    case 4: hm_arm<T, 4>(arm, w, stride, nb, n_out, x, m, o, ws, S, st); break;
    case 5: hm_arm<T, 5>(arm, w, stride, nb, n_out, x, m, o, ws, S, st); break;
    case 6: hm_arm<T, 6>(arm, w, stride, nb, n_out, x, m, o, ws, S, st); break;
    case 7: hm_arm<T, 7>(arm, w, stride, nb, n_out, x, m, o, ws, S, st); break;
    default: hm_arm<T, 8>(arm, w, stride, nb, n_out, x, m, o, ws, S, st); break;
    }
}

/* The chooser, from the first sweep (bench/gpu/s27-wgmma/hmma-sweep.txt, H200, Q4_0, m = 1..64, Llama-3-8B's shapes):
 * arm 4 (one warpgroup, the step's 8 wgmmas one group) fastest or within 2% up to m = 24 on every shape; past it two
 * warpgroups a CTA (arm 1: x staged once for 128 rows) on the matrices with 14336 rows or inputs (gate|up at m = 64 50.5
 * us against arm 0's 70.6, down 70.4 against 76.8), arm 0 on q|k|v and o. */
static int hm_pick(int nb, int n_out, int m) {
    if (m <= 24) return 4;
    return n_out >= 8192 || nb * 32 >= 8192 ? 1 : 0;
}
/* Over the tiled layout, by end-to-end S_TG (bench/gpu/s31-tiled call e; docs/ledger.md 2026-12-04 "the f16 order's
 * weights by bulk copies"): 1..2 columns arm 10 (1..8 until 2026-12-07, below; bulk copies, 2 stages: B = 1 380 against arm 6's 360; at 2..8 with
 * exec.c's passes of 2..8 tokens without PDL, H100: B = 2 +3.4%, 4 +6.4%, 8 +4.6% over arm 6 with PDL, where the bulk
 * arm with PDL is level, +0.3..1%: bench/gpu/s45-bulk28, docs/ledger.md 2026-12-06 "Q4_0's f16 order at 2..8 tokens by
 * bulk copies without PDL"; on 2026-12-04 it had lost 5-9% there with PDL, on older code); 16 and 32 columns (NT 2, 4)
 * arm 9 (bulk copies, 4 stages: B = 16 +2-3%, B = 32 +16%; arm 10 level with it at 12 and 16, s45-bulk28); 24 columns
 * (NT 3) and past 32 the rows' rule on the tiled twins of arms 4, 1 and 0 (the sweep: the bulk arms 10-20% behind
 * there); 3..8 columns arm 9 since 2026-12-07 (TERN_HM_ARM=3-8:9 against the rule, H100, synthetic Llama-3-8B Q4_0,
 * S_TG r1 / r2, bench/gpu/s51-arm9: B = 3 +2.6 / +2.2%, 4 +2.6 / +2.4%, 6 +2.3 / +6.0%, 8 +2.7 / +3.2%; B = 2 -4.3 /
 * +0.6% and B = 1 -0.3 / -1.3% (s50-rms) keep arm 10). The other types' overrides follow in tcu_gemm_hm: below 17
 * columns this rule is Q4_0's only. */
static int hm_pick_tl(int nb, int n_out, int m) {
    const int nt = (m + 7) / 8, a = hm_pick(nb, n_out, m);
    return m <= 2 ? 10 : nt <= 2 || nt == 4 ? 9 : a == 4 ? 6 : a == 1 ? 7 : 8;
}

/* 1 when this device runs the wgmma kernels: compute capability 9.0 and their sm_90a code loaded (per device, once). */
static int hm_device_ok(void) {
    static unsigned ok_dev, no_dev;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 32) return 0;
    const unsigned bit = 1u << dev;
    if (__atomic_load_n(&no_dev, __ATOMIC_RELAXED) & bit) return 0;
    if (__atomic_load_n(&ok_dev, __ATOMIC_RELAXED) & bit) return 1;
    int major = 0, minor = 0, ok = 1;
    cudaFuncAttributes fa;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
        ok = -1;
    else if (major != 9 || minor != 0)
        ok = 0;
    else if (cudaFuncGetAttributes(&fa, gemm_hw_k<TCU_TYPE_Q4_0R, 1, 1, 4, 0, 0>) != cudaSuccess)
        ok = -1;
    else if (fa.binaryVersion != 90)
        ok = 0;
    if (ok <= 0) {
        if (ok < 0) (void)cudaGetLastError();
        __atomic_fetch_or(&no_dev, bit, __ATOMIC_RELAXED);
        return 0;
    }
    __atomic_fetch_or(&ok_dev, bit, __ATOMIC_RELAXED);
    return 1;
}

/* the rows' type of t (Q4_0R for Q4_0R and Q4_0T, Q8_0R for Q8_0R and Q8_0T, Q4_KR for Q4_KR and Q4_KT, GGUF's Q6_K for
 * Q6_K and Q6_KT: hm_ty's T), 0 for a type the f16 order lacks */
static int hm_rows_type(int t) {
    return t == TCU_TYPE_Q4_0R || t == TCU_TYPE_Q4_0T   ? TCU_TYPE_Q4_0R
           : t == TCU_TYPE_Q8_0R || t == TCU_TYPE_Q8_0T ? TCU_TYPE_Q8_0R
           : t == TCU_TYPE_Q4_KR || t == TCU_TYPE_Q4_KT ? TCU_TYPE_Q4_KR
           : t == TERN_TYPE_Q6_K || t == TCU_TYPE_Q6_KT ? TERN_TYPE_Q6_K
                                                        : 0;
}

extern "C" int tcu_hm_tiled_type(int t) {
    return t == TCU_TYPE_Q4_0R   ? TCU_TYPE_Q4_0T
           : t == TCU_TYPE_Q8_0R ? TCU_TYPE_Q8_0T
           : t == TCU_TYPE_Q4_KR ? TCU_TYPE_Q4_KT
           : t == TERN_TYPE_Q6_K ? TCU_TYPE_Q6_KT
                                 : 0;
}

extern "C" int tcu_gemm_hm_supported(int t, int64_t n_in) {
    const int rt = hm_rows_type(t);
    const int on = rt == TERN_TYPE_Q6_K ? t == TCU_TYPE_Q6_KT /* Q6_K: tiles only */ : rt != 0;
    const int blk = rt == TCU_TYPE_Q4_KR || rt == TERN_TYPE_Q6_K ? 256 : 128; /* K-quants: whole super-blocks */
    return on && n_in >= blk && n_in % blk == 0 && hm_device_ok();
}

extern "C" size_t tcu_gemm_hm_ws_floats(int64_t n_in, int64_t n_out, int m_max) {
    if (n_in < 32 || n_out < 1 || m_max < 1) return 0;
    const int S = hm_splits((int)(n_in / 32), n_out);
    /* S segments of the row tiles' partials (hm_epilogue): rows to a multiple of 128 (two warpgroups' tiles), columns to 8 */
    return S > 1 ? (size_t)HM_CNT + (size_t)S * (size_t)((n_out + 127) / 128 * 128) * (size_t)((m_max + 7) / 8 * 8) : 0;
}

/* TERN_HM_ARM (tcu_gemm_hm_arm_set): the chooser's arm replaced by g_hm_arm for m in g_hm_arm_lo..g_hm_arm_hi, where the
 * arm reads the matrix's layout (an arm under measurement; no bit depends on the arm) */
static int g_hm_arm_lo, g_hm_arm_hi, g_hm_arm;
extern "C" void tcu_gemm_hm_arm_set(int lo, int hi, int arm) {
    const int on = hi >= 1 && lo >= 1 && lo <= hi && arm >= 0 && arm < TCU_HM_ARMS;
    g_hm_arm_lo = on ? lo : 0, g_hm_arm_hi = on ? hi : 0, g_hm_arm = on ? arm : 0;
}

extern "C" int tcu_gemm_hm(int arm, int t, const void *w, size_t row_bytes, int64_t n_in, const int64_t rows[3],
                           const uint16_t *x, int m, float *const y[3], float *ws, size_t ws_floats, cudaStream_t st) {
    const int64_t n_out = rows[0] + rows[1] + rows[2];
    const int tl = hm_rows_type(t) && t != hm_rows_type(t); /* the layout: rows' arms or the tiled ones */
    if (m < 1 || m > TCU_PASS_MAX || rows[0] < 1 || rows[1] < 0 || rows[2] < 0 || n_out > INT32_MAX || arm < -1 ||
        arm >= TCU_HM_ARMS || (arm >= 0 && (arm >= TCU_HM_TILED) != tl) || !tcu_gemm_hm_supported(t, n_in))
        return 0;
    const int nb = (int)(n_in / 32);
    const int pick = arm < 0, rt = hm_rows_type(t);
    if (arm < 0) arm = tl ? hm_pick_tl(nb, (int)n_out, m) : hm_pick(nb, (int)n_out, m);
    /* Q8_0's tiles at every m, Q4_K's and Q6_K's up to 16 columns: arm 10 (bulk copies, two stages). The engine's A/B
     * (H100, synthetic Llama-3-8B, S_TG, bench/gpu/s40-hm/hmbulk/): Q8_0 B = 4 +9.7%, 8 +7.4%, 16 +1.7%, 32 +13.2%, 64
     * +3.3%; Q4_K B = 4 +3.8%, 8 +1.4%, 16 +2.6% but 32 -6.9%, 64 -7.2% (the Q4_K_M mix alike: +2..4%, then -3..4%);
     * B = 1 level (arm 10 already). docs/ledger.md 2026-12-06 "the bulk-copy arm for Q8_0 and the K-quants" */
    if (pick && tl && (rt == TCU_TYPE_Q8_0R || m <= 16) && rt != TCU_TYPE_Q4_0R) arm = 10;
    /* Q4_K's tiles at 2..4 columns: arm 11 (the chains by warps on mma.sync). The engine's A/B (H100, synthetic
     * Llama-3-8B Q4_K, S_TG, bench/gpu/s40-hm/warps/): B = 2 +9.3%, B = 4 +12.6% over arm 10, but B = 1 -1.7% and B = 8
     * -5.7%; Q4_0 lost at 1 (-8.4%), 2-4 (-1%) and 8 (-20%); Q8_0 at 1..8 columns -4 to -13.5% and the Q4_K_M mix (its
     * Q6_K tiles too) at 1 and 8 -4.4% / -7.1% (bench/gpu/s42-att/hw/). B = 3 unmeasured. The sweep had arm 11 13% behind
     * arm 10 on Q4_K at 2 columns: not understood (docs/ledger.md 2026-12-06 "the f16 order by warps") */
    if (pick && tl && rt == TCU_TYPE_Q4_KR && m >= 2 && m <= 4) arm = 11;
    if (pick && g_hm_arm_hi && m >= g_hm_arm_lo && m <= g_hm_arm_hi && (g_hm_arm >= TCU_HM_TILED) == tl)
        arm = g_hm_arm; /* TERN_HM_ARM */
    /* Q6_K: arm 7 (two warpgroups capped at 128 registers) spills 20-68 bytes at 41..64 columns (ptxas), so arm 8 (its
     * one-warpgroup form) there, named, picked or TERN_HM_ARM's (gpu_hmma's arm-7 rows at m > 40 time arm 8); not swept */
    if (arm == 7 && m > 40 && rt == TERN_TYPE_Q6_K) arm = 8;
    const int tile = 64 * hm_arm_cfg[arm][0], S = hm_splits(nb, n_out); /* once: the grid and the check */
    if (S > 1 && ((n_out + tile - 1) / tile > HM_CNT || !ws || ws_floats < tcu_gemm_hm_ws_floats(n_in, n_out, m)))
        return 0;
    const hm_out o = {{y[0], y[1], y[2]}, (int)rows[0], (int)(rows[0] + rows[1])};
    const uint8_t *wb = (const uint8_t *)w;
    const __half *xh = (const __half *)x;
    if (rt == TCU_TYPE_Q8_0R) hm_type<TCU_TYPE_Q8_0R>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, S, st);
    else if (rt == TERN_TYPE_Q6_K) hm_type<TERN_TYPE_Q6_K>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, S, st);
    else if (rt == TCU_TYPE_Q4_KR) hm_type<TCU_TYPE_Q4_KR>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, S, st);
    else hm_type<TCU_TYPE_Q4_0R>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, S, st);
    return 1;
}

/* tcu.h: the tiled layout of a Q4_0R, Q8_0R, Q4_KR or Q6_K matrix (hm_ty, hm_qoff): chunk (tile, s) row rt = row
 * 64 tile + rt of w (clamped to the last row), its blocks 4s..4s+3's quants then scales; one thread a (tile, step, row). */
template <int T>
__global__ void hm_tile_k(const uint8_t *__restrict__ w, size_t stride, int nst, int n_out, int tiles,
                          uint8_t *__restrict__ dst) {
    typedef hm_ty<T> Y;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)tiles * nst * 64) return;
    const int rt = (int)(i & 63), s = (int)((i >> 6) % nst), tile = (int)((i >> 6) / nst);
    const uint8_t *row = w + (size_t)min(64 * tile + rt, n_out - 1) * stride + (size_t)(s >> 1) * Y::GRP;
    uint8_t *c = dst + ((size_t)tile * nst + s) * Y::TCH;
    if constexpr (Y::K6) { /* the GGUF super-block (dequant8<TERN_TYPE_Q6_K>'s places): element e = 128 h + r, h = s & 1 */
        const int h = s & 1;
        for (int t = 0; t < 4; t++)
            for (int k = 0; k < 32; k++) {
                const int r = 32 * t + k;
                const int q = ((row[64 * h + (r & 63)] >> (4 * (r >> 6))) & 0xF) |
                              ((row[128 + 32 * h + (r & 31)] >> (2 * (r >> 5))) & 3) << 4;
                c[hm_qoff<T>(rt, t, k >> 4) + (k & 15)] = (uint8_t)q;
            }
        uint8_t *k6 = c + Y::SOF + rt * 12; /* d, two zero bytes, the step's 8 sub-blocks' scales */
        k6[0] = row[208], k6[1] = row[209], k6[2] = 0, k6[3] = 0;
        for (int j = 0; j < 8; j++) k6[4 + j] = row[192 + 8 * h + j];
        return;
    }
    const uint4 *q = (const uint4 *)(row + 16 + 4 * Y::QB * (s & 1)); /* blocks 4(s & 1).. of the group, in order */
    for (int t = 0; t < 4; t++)
        for (int h = 0; h < Y::QN; h++) *(uint4 *)(c + hm_qoff<T>(rt, t, h)) = q[Y::QN * t + h];
    if constexpr (Y::K4) { /* d | dmin << 16, then sub-block 4 (s & 1) + t's 6-bit scale and min as bytes */
        uint8_t *k = c + Y::SOF + rt * 12;
        *(uint32_t *)k = *(const uint32_t *)row;
        for (int t = 0; t < 4; t++) {
            int sc, mn;
            dq_k4_scale_min(row + 4, 4 * (s & 1) + t, &sc, &mn);
            k[4 + 2 * t] = (uint8_t)sc;
            k[5 + 2 * t] = (uint8_t)mn;
        }
    } else {
        *(uint2 *)(c + Y::SOF + rt * 8) = *(const uint2 *)(row + 8 * (s & 1));
    }
}

extern "C" size_t tcu_hm_tile_bytes(int t, int64_t n_in, int64_t n_out) {
    const int rt = hm_rows_type(t);
    if (!rt || n_in < 128 || n_out < 1 || ((rt == TCU_TYPE_Q4_KR || rt == TERN_TYPE_Q6_K) && n_in % 256)) return 0;
    return (size_t)((n_out + 63) / 64) * (size_t)(n_in / 128) *
           (rt == TCU_TYPE_Q8_0R   ? TCU_HM_TCH8
            : rt == TCU_TYPE_Q4_KR ? TCU_HM_TCHK
            : rt == TERN_TYPE_Q6_K ? TCU_HM_TCH6
                                   : TCU_HM_TCH);
}

extern "C" void tcu_hm_tile(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, void *dst,
                            cudaStream_t st) {
    if (n_in < 128 || n_in % 128 || n_out < 1 || n_out > INT32_MAX) return; /* not a shape the f16 order takes */
    const int nst = (int)(n_in / 128), tiles = (int)((n_out + 63) / 64);
    const int64_t n = (int64_t)tiles * nst * 64;
    const unsigned gr = (unsigned)((n + 255) / 256);
    if (t == TCU_TYPE_Q4_0R)
        hm_tile_k<TCU_TYPE_Q4_0R><<<gr, 256, 0, st>>>((const uint8_t *)w, row_bytes, nst, (int)n_out, tiles, (uint8_t *)dst);
    else if (t == TCU_TYPE_Q8_0R)
        hm_tile_k<TCU_TYPE_Q8_0R><<<gr, 256, 0, st>>>((const uint8_t *)w, row_bytes, nst, (int)n_out, tiles, (uint8_t *)dst);
    else if (t == TCU_TYPE_Q4_KR && n_in % 256 == 0)
        hm_tile_k<TCU_TYPE_Q4_KR><<<gr, 256, 0, st>>>((const uint8_t *)w, row_bytes, nst, (int)n_out, tiles, (uint8_t *)dst);
    else if (t == TERN_TYPE_Q6_K && n_in % 256 == 0)
        hm_tile_k<TERN_TYPE_Q6_K><<<gr, 256, 0, st>>>((const uint8_t *)w, row_bytes, nst, (int)n_out, tiles, (uint8_t *)dst);
}
