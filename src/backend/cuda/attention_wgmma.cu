/* attention_wgmma.cu: causal GQA flash attention for prefill on Hopper's warpgroup MMA (wgmma.mma_async,
 * sm_90a only), "v6" beside attention_prefill.cu's v3 (mma.sync). Same contract as tcu_attention_flash:
 * q (n, n_head, hd) f32; kc, vc (n_rows, n_head_kv, hd) f16 bits; pos (n) int32 on the device; out (n, n_head,
 * hd) f32; the n tokens are one sequence whose logical row j is physical row kv_row(bt, lbs, j) (kv.cuh; bt NULL:
 * row j); token t attends to logical rows [0, pos[t]]; query head h reads KV head h / (n_head / n_head_kv).
 * hd 64 or 128 (v6a, v6b) and 256 (v6b, with 64-key blocks: S by m64n64k16, O += P V by m64n256k16, 128 f32
 * accumulators of O a thread; tcu_attention_wg_ok); the launcher runs v3 otherwise.
 *
 * Algorithm: FlashAttention-2's loop (Dao 2023, Algorithm 1; the online softmax in base 2 as v3) with the two
 * GEMMs as FlashAttention-3 places them on Hopper (Shah et al. 2024, "FlashAttention-3", section 3): one CTA per
 * (block of 128 query tokens, query head), two warpgroups of 64 tokens each. Q (f16) and double-buffered
 * K/V blocks of BN keys (128; 64 at hd 256) live in shared memory in the 128-byte-swizzled layout wgmma reads through matrix
 * descriptors (PTX ISA 9.7.15.5.1.2: K-major for Q and K, MN-major for V). Per block and warpgroup:
 *   S = Q K^T   by hd/16 wgmma m64n{BN}k16, both operands from shared memory;
 *   the online softmax on S in registers (the m64nNk16 accumulator fragment: each warp owns 16 rows, a
 *   thread rows g and g + 8 of them, columns 8j + 2(lane % 4) + {0, 1});
 *   O += P V    by BN/16 wgmma m64n{hd}k16 with P (rounded to f16) as the A operand from registers: the
 *   accumulator fragment of two adjacent 8-column tiles is the A fragment of one k16 step, as in v3.
 * The loads are cp.async by all 256 threads (no producer warpgroup, no TMA); the two warpgroups of a CTA
 * overlap one's softmax with the other's MMAs only as the warp schedulers interleave them. Causal block skip:
 * a block after every token of the CTA is never loaded; a warpgroup skips the math of a block after all its
 * 64 tokens (wgmma is warpgroup-collective, so the skip is per warpgroup). Masked scores are -inf; a row with
 * no visible key so far subtracts 0 (2^(-inf - 0) = 0; exp(-inf - -inf) never happens).
 *
 * Numerics: as v3 (Q and P rounded to f16, f32 scores, softmax and accumulation), another summation order
 * (the MMA shapes differ), so other bits than v3; gpu_attention holds both to FLASH_TOL vs float64.
 */
#include <cuda.h> /* CUtensorMap and its encoder's signature only: the encoder comes from the driver at run time */
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "cuda/check.cuh"
#include "cuda/kv.cuh"
#include "cuda/tcu.h"
#include "cuda/wgmma.cuh"

#define WG_BM 128 /* query tokens a CTA (2 warpgroups x 64) */
#define WG_BN 128 /* keys a K/V block */
#define WG_T 256

/* wgmma exists on sm_90a only: the Makefile builds this file for it alone. Any other device target would give
 * empty kernels that the launcher (which checks compute capability 9.0 and binaryVersion 90) could start on an
 * H100 built for plain sm_90, so such a build is refused here. */
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "attention_wgmma.cu needs -gencode=arch=compute_90a,code=sm_90a (the Makefile's WG_ARCHS)"
#endif
#if defined(__CUDA_ARCH__)
#define WG_PTX 1
#else
#define WG_PTX 0
#endif

/* D (64 x 128 f32, the accumulator fragment) = A (64 x 16 f16, smem descriptor da) * B (16 x 128, smem descriptor
 * db, K-major) + (acc ? D : 0). */
__device__ __forceinline__ void wg_mma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(acc));
}

/* D (64 x 128 f32) += A (64 x 16 f16 in registers: the m16n8k16 A fragment of each warp's 16 rows) * B (16 x 128,
 * smem descriptor db, MN-major: imm-trans-b 1). */
__device__ __forceinline__ void wg_mma_rs_n128_t(float (&d)[64], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}

/* D (64 x 64 f32) = A (64 x 16 f16, smem descriptor da) * B (16 x 64, smem descriptor db, K-major) + (acc ? D : 0)
 * (S = Q K^T at hd 256, 64-key blocks). */
__device__ __forceinline__ void wg_mma_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(acc));
}

/* D (64 x 256 f32) += A (64 x 16 f16 in registers: the m16n8k16 A fragment of each warp's 16 rows) * B (16 x 256,
 * smem descriptor db, MN-major: imm-trans-b 1) (O += P V at hd 256). */
__device__ __forceinline__ void wg_mma_rs_n256_t(float (&d)[128], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}

/* D (64 x 64 f32) += A (64 x 16 f16 in registers: the m16n8k16 A fragment of each warp's 16 rows) * B (16 x 64,
 * smem descriptor db, MN-major: imm-trans-b 1). */
__device__ __forceinline__ void wg_mma_rs_n64_t(float (&d)[32], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}


/* Byte offset of element (row r, column c) of an R-row, 16-bit tile in the 128-byte-swizzled layout: the
 * columns in atoms of 64 (a region of R rows x 128 bytes each), in a row the 16-byte chunk k stored at
 * k ^ (r % 8) (Swizzle<3,4,3>). */
template <int R> __device__ __forceinline__ uint32_t wg_sw(int r, int c) {
    return (uint32_t)((c >> 6) * (R * 128) + r * 128 + ((((c >> 3) & 7) ^ (r & 7)) << 4) + (c & 7) * 2);
}

__device__ __forceinline__ void wg_cp16(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void wg_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void wg_wait_cp(void) { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ uint32_t wg_pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *(const uint32_t *)&h;
}

/* BN: keys a K/V block, WG_BN except at hd 256 (v6b only), where 64 keep a thread's registers (O's 128
 * accumulators + S's BN / 2 + P's BN / 4) under setmaxnreg's 240 and two ring stages in shared memory (80-key
 * blocks were within the spread of identical runs, docs/ledger.md; dev/cuda/attention_wgmma_arms.cu) */
#define WG256_BN 64
template <int HD> struct wg_cfg {
    static constexpr int BN = HD == 256 ? WG256_BN : WG_BN;
    static constexpr uint32_t Q_BYTES = WG_BM * HD * 2;     /* Q tile */
    static constexpr uint32_t KV_BYTES = BN * HD * 2;       /* one K or V block */
    static constexpr size_t SMEM = Q_BYTES + 4 * KV_BYTES + 1024; /* + alignment slack */
};

/* K and V logical rows [b * BN, b * BN + BN) of one KV head into stage s (K at Q_BYTES + s * 2 * KV_BYTES, V after
 * it), one commit group; rows >= n_kv zero-filled (never read from global memory); row j from physical row
 * kv_row(bt, lbs, j), a row at a time (a block may span pages of any size). */
template <int HD, int PG>
__device__ __forceinline__ void wg_load_kv(uint32_t sbase, const uint16_t *__restrict__ kb,
                                           const uint16_t *__restrict__ vb, size_t kv_stride, int n_kv, int b, int s,
                                           const int32_t *__restrict__ bt, int lbs) {
    constexpr int CH = HD / 8;
    const uint32_t sk = sbase + wg_cfg<HD>::Q_BYTES + (uint32_t)s * 2 * wg_cfg<HD>::KV_BYTES,
                   sv = sk + wg_cfg<HD>::KV_BYTES;
#pragma unroll
    for (int i = 0; i < WG_BN * CH / WG_T; i++) {
        const int c = (int)threadIdx.x + i * WG_T, r = c / CH, col = (c % CH) * 8, j = b * WG_BN + r;
        const int ok = j < n_kv;
        const size_t off = ok ? (size_t)(PG ? kv_row(bt, lbs, j) : j) * kv_stride + col : 0;
        const uint32_t so = wg_sw<WG_BN>(r, col);
        wg_cp16(sk + so, kb + off, ok ? 16 : 0);
        wg_cp16(sv + so, vb + off, ok ? 16 : 0);
    }
    wg_commit();
}

/* The warpgroup's pieces of a block (v6a, v6b): S = Q K^T issued (not waited); the masked online softmax of S in
 * place, returning the rescale factors of O's two rows; P packed to f16 A fragments; O += P V issued. The MMA
 * loops alone (no fence, no commit): */
template <int HD>
__device__ __forceinline__ void wg_mmas_s(float (&sc)[wg_cfg<HD>::BN / 2], uint32_t sq, uint32_t sk) {
    constexpr int BN = wg_cfg<HD>::BN;
#pragma unroll
    for (int kt = 0; kt < HD / 16; kt++) {
        const uint32_t off = (uint32_t)(kt & 3) * 32;
        const uint64_t da = wg_desc(sq + (uint32_t)(kt >> 2) * (WG_BM * 128) + off, 16, 1024);
        const uint64_t db = wg_desc(sk + (uint32_t)(kt >> 2) * (BN * 128) + off, 16, 1024);
        if constexpr (BN == 128) wg_mma_ss_n128(sc, da, db, kt > 0);
        else wg_mma_ss_n64(sc, da, db, kt > 0);
    }
}
template <int HD>
__device__ __forceinline__ void wg_mmas_pv(float (&o)[HD / 2], uint32_t (&pa)[wg_cfg<HD>::BN / 16][4], uint32_t sv) {
    constexpr int BN = wg_cfg<HD>::BN;
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
        /* V MN-major: 8-key groups 1024 bytes apart (SBO), 64-column atoms BN * 128 apart (LBO) */
        const uint64_t dv = wg_desc(sv + (uint32_t)kk * 16 * 128, BN * 128, 1024);
        if constexpr (HD == 256) wg_mma_rs_n256_t(o, pa[kk], dv);
        else if constexpr (HD == 128) wg_mma_rs_n128_t(o, pa[kk], dv);
        else wg_mma_rs_n64_t(o, pa[kk], dv);
    }
}
/* the A fragments of an issued P V stay in their registers until its wait */
template <int NK> __device__ __forceinline__ void wg_touch_p(uint32_t (&pa)[NK][4]) {
#pragma unroll
    for (int kk = 0; kk < NK; kk++)
#pragma unroll
        for (int i = 0; i < 4; i++) asm volatile("" : "+r"(pa[kk][i])::"memory");
}
template <int HD>
__device__ __forceinline__ void wg_issue_s(float (&sc)[wg_cfg<HD>::BN / 2], uint32_t sq, uint32_t sk) {
    wg_touch(sc);
    wg_fence();
    wg_mmas_s<HD>(sc, sq, sk);
    wg_commit_mma();
}
template <int HD>
__device__ __forceinline__ void wg_issue_pv(float (&o)[HD / 2], uint32_t (&pa)[wg_cfg<HD>::BN / 16][4], uint32_t sv) {
    wg_touch(o);
    wg_fence();
    wg_mmas_pv<HD>(o, pa, sv);
    wg_commit_mma();
}
/* IW's pair: S = Q K^T (one commit group), then O += P V (another), under one wgmma.fence: no register of
 * either is touched between them (ptxas serializes the MMAs otherwise, C7513) */
template <int HD>
__device__ __forceinline__ void wg_issue_s_pv(float (&sc)[wg_cfg<HD>::BN / 2], uint32_t sq, uint32_t sk, float (&o)[HD / 2],
                                              uint32_t (&pa)[wg_cfg<HD>::BN / 16][4], uint32_t sv) {
    wg_touch(sc);
    wg_touch(o);
    wg_touch_p(pa);
    wg_fence();
    wg_mmas_s<HD>(sc, sq, sk);
    wg_commit_mma();
    wg_mmas_pv<HD>(o, pa, sv);
    wg_commit_mma();
}
/* 2^x: exp2f. (ex2.approx.ftz directly, by inline PTX or -ftz=true, would save ~3 instructions an element, but
 * ptxas then spills the pipelined kernels at hd 128: 136-168 bytes of stack.) */
__device__ __forceinline__ float wg_ex2(float x) { return exp2f(x); }
/* The online softmax of one block's S (raw Q K^T, unscaled) in place, base 2 (v3's steps): masked entries
 * -inf; m' = max(m, scale_log2 * rowmax S) (scale_log2 > 0, so the max commutes with the scaling); P =
 * 2^(S * scale_log2 - m') as one FFMA and one ex2 an element; c = 2^(m - m') the factor for O and l. A row with
 * nothing visible so far subtracts 0. */
template <int FOLD, int NS2>
__device__ __forceinline__ void wg_softmax(float (&sc)[NS2], int j0, int p0, int p1, int tq, float scale_log2,
                                           float &m0, float &m1, float &l0, float &l1, float &c0, float &c1) {
    constexpr int BN = 2 * NS2; /* keys in the block: S's accumulator holds BN / 2 a thread */
    if constexpr (!FOLD) { /* v6a's form: S scaled first (one FMUL an element more), then 2^(S' - m') */
#pragma unroll
        for (int i = 0; i < BN / 2; i++) sc[i] *= scale_log2;
        scale_log2 = 1.0f;
    }
    const bool fullv = j0 + BN - 1 <= min(p0, p1);
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < BN / 8; nt++) {
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int j = j0 + nt * 8 + 2 * tq + e;
            if (!fullv) {
                if (j > p0) sc[4 * nt + e] = -INFINITY;
                if (j > p1) sc[4 * nt + 2 + e] = -INFINITY;
            }
            mx0 = fmaxf(mx0, sc[4 * nt + e]);
            mx1 = fmaxf(mx1, sc[4 * nt + 2 + e]);
        }
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    const float n0 = fmaxf(m0, mx0 * scale_log2), n1 = fmaxf(m1, mx1 * scale_log2);
    const float u0 = n0 == -INFINITY ? 0.0f : n0, u1 = n1 == -INFINITY ? 0.0f : n1;
    c0 = wg_ex2(m0 - u0);
    c1 = wg_ex2(m1 - u1);
    m0 = n0;
    m1 = n1;
    float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
    for (int nt = 0; nt < BN / 8; nt++) {
#pragma unroll
        for (int e = 0; e < 2; e++) {
            sc[4 * nt + e] = wg_ex2(fmaf(sc[4 * nt + e], scale_log2, -u0));
            sc[4 * nt + 2 + e] = wg_ex2(fmaf(sc[4 * nt + 2 + e], scale_log2, -u1));
            rs0 += sc[4 * nt + e];
            rs1 += sc[4 * nt + 2 + e];
        }
    }
    l0 = l0 * c0 + rs0;
    l1 = l1 * c1 + rs1;
}
template <int NS2> __device__ __forceinline__ void wg_pack_p(const float (&sc)[NS2], uint32_t (&pa)[NS2 / 8][4]) {
#pragma unroll
    for (int kk = 0; kk < NS2 / 8; kk++) { /* k-step kk: keys [16 kk, 16 kk + 16), S's tiles 2kk and 2kk + 1 */
        pa[kk][0] = wg_pack(sc[8 * kk + 0], sc[8 * kk + 1]);
        pa[kk][1] = wg_pack(sc[8 * kk + 2], sc[8 * kk + 3]);
        pa[kk][2] = wg_pack(sc[8 * kk + 4], sc[8 * kk + 5]);
        pa[kk][3] = wg_pack(sc[8 * kk + 6], sc[8 * kk + 7]);
    }
}
template <int HD> __device__ __forceinline__ void wg_scale_o(float (&o)[HD / 2], float c0, float c1) {
#pragma unroll
    for (int d = 0; d < HD / 8; d++) {
        o[4 * d] *= c0; o[4 * d + 1] *= c0;
        o[4 * d + 2] *= c1; o[4 * d + 3] *= c1;
    }
}

/* The largest position of each MMA warp's 32 x 2 rows into sm[warp] (-1: none), before a CTA barrier; after
 * it, wg_block_max gives the CTA's largest (cmax) and warpgroup wg's (gmax). */
__device__ __forceinline__ void wg_warp_max(int v, int *sm) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) sm[threadIdx.x >> 5] = v;
}
__device__ __forceinline__ void wg_block_max(const int *sm, int wg, int &cmax, int &gmax) {
    cmax = gmax = -1;
#pragma unroll
    for (int w = 0; w < 8; w++) {
        cmax = max(cmax, sm[w]);
        if ((w >> 2) == wg) gmax = max(gmax, sm[w]);
    }
}
/* The CTA's 128 query rows of head h (f32) into shared memory as f16, swizzled; rows past n zero. By threads
 * [0, WG_T). */
template <int HD>
__device__ __forceinline__ void wg_load_q(uint8_t *sq, const float *__restrict__ q, int n, int n_head, int h, int qb,
                                          int tid) {
    constexpr int CH = HD / 8;
    for (int c = tid; c < WG_BM * CH; c += WG_T) {
        const int r = c / CH, col = (c % CH) * 8, t = qb * WG_BM + r;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (t < n) {
            const float4 *src = (const float4 *)(q + ((size_t)t * n_head + h) * HD + col);
            const float4 a = src[0], b = src[1];
            v.x = wg_pack(a.x, a.y); v.y = wg_pack(a.z, a.w); v.z = wg_pack(b.x, b.y); v.w = wg_pack(b.z, b.w);
        }
        *(uint4 *)(sq + wg_sw<WG_BM>(r, col)) = v;
    }
}
/* O / l of this thread's rows t0, t0 + 8 into out (rows past n not written; l = 0: zeros). */
template <int HD>
__device__ __forceinline__ void wg_store_o(const float (&o)[HD / 2], float l0, float l1, float *__restrict__ out,
                                           int t0, int n, int n_head, int h, int tq) {
    const int t1 = t0 + 8;
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float i0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, i1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
    float *o0 = out + ((size_t)t0 * n_head + h) * HD + 2 * tq, *o1 = out + ((size_t)t1 * n_head + h) * HD + 2 * tq;
#pragma unroll
    for (int d = 0; d < HD / 8; d++) {
        if (t0 < n) *(float2 *)(o0 + d * 8) = make_float2(o[4 * d] * i0, o[4 * d + 1] * i0);
        if (t1 < n) *(float2 *)(o1 + d * 8) = make_float2(o[4 * d + 2] * i1, o[4 * d + 3] * i1);
    }
}

/* PG = 1: rows through the block table bt (kv.cuh); PG = 0 the identity, an instantiation of its own. */
template <int HD, int PG>
__global__ void __launch_bounds__(WG_T, 1)
flash_wgmma_kernel(const float *__restrict__ q, const uint16_t *__restrict__ kc, const uint16_t *__restrict__ vc,
                   int n, const int32_t *__restrict__ pos, int n_head, int n_head_kv, float scale_log2,
                   float *__restrict__ out, const int32_t *__restrict__ bt, int lbs) {
#if WG_PTX
    extern __shared__ uint8_t wg_sm_raw[];
    __shared__ int sm_max[8];
    const uint32_t sraw = (uint32_t)__cvta_generic_to_shared(wg_sm_raw);
    const uint32_t sbase = (sraw + 1023u) & ~1023u; /* the swizzle atoms start at 1024-byte boundaries */
    uint8_t *sgen = wg_sm_raw + (sbase - sraw);

    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2, g = lane >> 2, tq = lane & 3;
    const int qb = (int)gridDim.x - 1 - (int)blockIdx.x; /* the longest (latest) query blocks first */
    const int h = (int)blockIdx.y, hk = h / (n_head / n_head_kv);
    const int r0 = wg * 64 + (warp & 3) * 16 + g; /* this thread's rows r0, r0 + 8 of the CTA's block */
    const int t0 = qb * WG_BM + r0, t1 = t0 + 8;
    const int p0 = t0 < n ? pos[t0] : -1, p1 = t1 < n ? pos[t1] : -1;
    wg_warp_max(max(p0, p1), sm_max);

    wg_load_q<HD>(sgen, q, n, n_head, h, qb, tid);
    __syncthreads();
    int cmax, gmax;
    wg_block_max(sm_max, wg, cmax, gmax);
    const int n_kv = cmax + 1, n_blk = (n_kv + WG_BN - 1) / WG_BN;
    const size_t kv_stride = (size_t)n_head_kv * HD;
    const uint16_t *kb = kc + (size_t)hk * HD, *vb = vc + (size_t)hk * HD;

    float o[HD / 2];
#pragma unroll
    for (int i = 0; i < HD / 2; i++) o[i] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    const uint32_t sq = sbase + (uint32_t)wg * 64 * 128; /* this warpgroup's 64 rows in each Q atom */

    if (n_blk > 0) wg_load_kv<HD, PG>(sbase, kb, vb, kv_stride, n_kv, 0, 0, bt, lbs);
    for (int b = 0; b < n_blk; b++) {
        if (b + 1 < n_blk) {
            wg_load_kv<HD, PG>(sbase, kb, vb, kv_stride, n_kv, b + 1, (b + 1) & 1, bt, lbs);
            wg_wait_cp<1>();
        } else {
            wg_wait_cp<0>();
        }
        wg_fence_proxy(); /* this thread's Q stores and K/V copies, before the barrier that publishes them */
        __syncthreads();
        const int j0 = b * WG_BN;
        if (j0 <= gmax) { /* warpgroup-uniform */
            const uint32_t sk = sbase + wg_cfg<HD>::Q_BYTES + (uint32_t)(b & 1) * 2 * wg_cfg<HD>::KV_BYTES,
                           sv = sk + wg_cfg<HD>::KV_BYTES;
            float sc[WG_BN / 2], c0, c1;
            uint32_t pa[WG_BN / 16][4];
            wg_issue_s<HD>(sc, sq, sk);
            wg_wait_mma();
            wg_touch(sc);
            wg_softmax<0>(sc, j0, p0, p1, tq, scale_log2, m0, m1, l0, l1, c0, c1); /* scale first: v6a's bits */
            wg_scale_o<HD>(o, c0, c1);
            wg_pack_p(sc, pa);
            wg_issue_pv<HD>(o, pa, sv);
            wg_wait_mma();
            wg_touch(o);
            wg_touch_p(pa);
        }
        __syncthreads(); /* stage b & 1 is free for the copies issued next */
    }

    wg_store_o<HD>(o, l0, l1, out, t0, n, n_head, h, tq);
#else
    (void)q; (void)kc; (void)vc; (void)n; (void)pos; (void)bt; (void)lbs; (void)n_head; (void)n_head_kv;
    (void)scale_log2; (void)out;
#endif
}

/* ---- v6b: the same math, K/V blocks by TMA from a producer warp (FlashAttention-3's warp specialization) ----
 * 8 consumer warps (2 warpgroups) as v6a plus a producer warpgroup (warp 8's lane 0) that copies each K/V block
 * into a ring of NS stages by 2 * hd / 64 tensor copies (cp.async.bulk.tensor.3d over the cache viewed as
 * (rows, n_head_kv, hd), 128-byte swizzle: the copy lands in the layout wg_sw writes), completion counted in
 * bytes on the stage's "full" mbarrier; each consumer thread arrives on the stage's "empty" mbarrier when its
 * warpgroup's MMAs on it have completed. No CTA barrier in the loop, so the two warpgroups drift apart and one's
 * softmax overlaps the other's MMAs (v6a's two __syncthreads a block kept them in step). Rows past the tensor
 * map's kv_rows arrive as zeros (TMA's out-of-bounds fill); rows below it must hold finite values (the caller's
 * contract, tcu.h): those past a token's pos get P = 0, and 0 * NaN in P V would not be 0.
 * Paged (bt != NULL, kv.cuh): the tensor maps span the pool and their boxes are PR = min(bs, BN) rows, so a block is
 * BN / PR copies a 64-column atom, piece p (logical rows j = b BN + p PR ..) from physical row kv_row(bt, lbs, j)
 * into the atom's rows [p PR, p PR + PR) (PR x 128 bytes, a multiple of the 1024-byte swizzle atom: the layout one
 * box of BN rows gives). A piece at or past kv_rows (no table entry) is copied from row -PR: wholly out of bounds,
 * zeros, its bytes counted as any box's. Rows of a last page past kv_rows hold the pool's finite values (masked, P
 * = 0) where the identity's map reads zeros. */
/* box (64 columns, 1 head, BN rows) of the 3-D tensor map at (c0, c1, c2) into shared memory at dst */
__device__ __forceinline__ void wg_tma3(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

template <int HD> struct wg_ws_cfg {
    static constexpr int NS = HD == 256 ? 2 : HD == 128 ? 3 : 4; /* ring stages: Q + NS * (K + V) <= 227 KiB */
    static constexpr size_t SMEM = wg_cfg<HD>::Q_BYTES + (size_t)NS * 2 * wg_cfg<HD>::KV_BYTES + 1024;
};

/* The configurations kept (tcu_attention_wg_tma): PP + IW at hd 64 and 128 (causal D=128 S=8192 466 vs 388
 * TFLOP/s plain, bench/gpu/flash-wg-v6c/), neither at hd 256 (there the pipelining lost: 371 / 466 / 500 plain vs
 * 315 / 426 / 429 at S = 2048 / 8192 / 32768, bench/gpu/wg256-b7480d7/); pingpong alone, pipelining alone and the
 * softmax scale as its own multiply are in dev/cuda/attention_wgmma_arms.cu.
 * PP (v6c's pingpong, FlashAttention-3 section 3.1): the two warpgroups take turns issuing their MMAs, by two
 * named barriers (3 + w: "warpgroup w may issue"; 256 threads: the waiter's 128 by bar.sync, the other's by
 * bar.arrive), so one's softmax runs while the other's MMAs do. Every warpgroup passes the same number of
 * turns (skipped blocks included); warpgroup 1 grants the first, warpgroup 0 takes a last one at the end.
 * IW (intra-warpgroup pipelining, section 3.2): block b's S = Q K^T and block b - 1's O += P V are issued
 * together, and block b's softmax runs while that P V does. */
template <int HD, int PP, int IW>
__global__ void __launch_bounds__(WG_T + 128, 1)
flash_wgmma_ws_kernel(const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv,
                      const float *__restrict__ q, int n, const int32_t *__restrict__ pos, int n_head, int n_head_kv,
                      float scale_log2, float *__restrict__ out, const int32_t *__restrict__ bt, int lbs, int kv_rows) {
    constexpr int FOLD = 1; /* the softmax scale folded into the exponent's FFMA (+1..5%, docs/ledger.md) */
#if WG_PTX
    constexpr int NA = HD / 64, NS = wg_ws_cfg<HD>::NS, BN = wg_cfg<HD>::BN;
    constexpr uint32_t KVB = wg_cfg<HD>::KV_BYTES;
    extern __shared__ uint8_t wg_sm_raw[];
    __shared__ int sm_max[8];
    __shared__ __align__(8) uint64_t full[NS], empty[NS];
    const uint32_t sraw = (uint32_t)__cvta_generic_to_shared(wg_sm_raw);
    const uint32_t sbase = (sraw + 1023u) & ~1023u;
    uint8_t *sgen = wg_sm_raw + (sbase - sraw);
    const uint32_t sstage = sbase + wg_cfg<HD>::Q_BYTES; /* stage s: K at sstage + s * 2 * KVB, V after it */

    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2, g = lane >> 2, tq = lane & 3;
    /* the tile: a 1-D grid with every head's latest query block before any earlier one (the longest tiles first
     * over the whole grid: +15% at causal S = 2048 over a (query block, head) grid with each head's latest first,
     * docs/ledger.md; the other orders in dev/cuda/attention_wgmma_arms.cu) */
    const int nqb = (n + WG_BM - 1) / WG_BM, G = n_head / n_head_kv, bx = (int)blockIdx.x;
    const int qb = nqb - 1 - bx / n_head, h = bx % n_head;
    const int hk = h / G;
    const bool producer = warp >= 8; /* warpgroup 2; its warp 8's lane 0 issues the copies */
    const int r0 = wg * 64 + (warp & 3) * 16 + g;
    const int t0 = qb * WG_BM + r0, t1 = t0 + 8;
    const int p0 = !producer && t0 < n ? pos[t0] : -1, p1 = !producer && t1 < n ? pos[t1] : -1;
    if (!producer) {
        wg_warp_max(max(p0, p1), sm_max);
        wg_load_q<HD>(sgen, q, n, n_head, h, qb, tid);
        wg_fence_proxy();
    } else if (lane == 0) {
        for (int s = 0; s < NS; s++) {
            wg_mbar_init((uint32_t)__cvta_generic_to_shared(&full[s]), 1);
            wg_mbar_init((uint32_t)__cvta_generic_to_shared(&empty[s]), WG_T);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    int cmax, gmax;
    wg_block_max(sm_max, wg, cmax, gmax);
    const int n_kv = cmax + 1, n_blk = (n_kv + BN - 1) / BN;

    /* registers from the producer warpgroup to the two MMA warpgroups (FlashAttention-3's split: 168 each at
     * entry, __launch_bounds__(384, 1); 24 + 2 * 240 = 3 * 168) */
    if (producer) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
        if (warp == 8 && lane == 0) {
            for (int b = 0; b < n_blk; b++) {
                const int s = b % NS;
                const uint32_t fb = (uint32_t)__cvta_generic_to_shared(&full[s]);
                if (b >= NS) wg_mbar_wait((uint32_t)__cvta_generic_to_shared(&empty[s]), (uint32_t)((b / NS - 1) & 1));
                wg_mbar_expect_tx(fb, 2 * KVB);
                const uint32_t sk = sstage + (uint32_t)s * 2 * KVB;
                if (!bt) {
#pragma unroll
                    for (int a = 0; a < NA; a++) {
                        wg_tma3(sk + (uint32_t)a * (BN * 128), &tk, a * 64, hk, b * BN, fb);
                        wg_tma3(sk + KVB + (uint32_t)a * (BN * 128), &tv, a * 64, hk, b * BN, fb);
                    }
                } else {
                    const int PR = (1 << lbs) < BN ? 1 << lbs : BN; /* rows a box: within one page */
                    for (int p = 0; p < BN / PR; p++) {
                        const int j = b * BN + p * PR, row = j < kv_rows ? kv_row(bt, lbs, j) : -PR;
#pragma unroll
                        for (int a = 0; a < NA; a++) {
                            const uint32_t off = (uint32_t)a * (BN * 128) + (uint32_t)p * (uint32_t)PR * 128;
                            wg_tma3(sk + off, &tk, a * 64, hk, row, fb);
                            wg_tma3(sk + KVB + off, &tv, a * 64, hk, row, fb);
                        }
                    }
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");

    float o[HD / 2];
#pragma unroll
    for (int i = 0; i < HD / 2; i++) o[i] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    const uint32_t sq = sbase + (uint32_t)wg * 64 * 128;
    /* blocks this warpgroup computes: the first nbw (j0 <= gmax); the rest it only waits for and releases */
    const int nbw = gmax < 0 ? 0 : min(n_blk, gmax / BN + 1);
    auto turn_begin = [&]() { if constexpr (PP) asm volatile("bar.sync %0, 256;\n" ::"r"(3 + wg) : "memory"); };
    auto turn_end = [&]() { if constexpr (PP) asm volatile("bar.arrive %0, 256;\n" ::"r"(4 - wg) : "memory"); };
    if constexpr (PP) {
        if (wg == 1) asm volatile("bar.arrive 3, 256;\n" ::: "memory");
    }
    /* block b's stage ready (rows past kv_rows arrived as zeros; rows below it are finite by the contract, and
     * those past a token's pos get P = 0) */
    auto acquire = [&](int b) {
        wg_mbar_wait((uint32_t)__cvta_generic_to_shared(&full[b % NS]), (uint32_t)((b / NS) & 1));
    };
    auto release = [&](int b) { wg_mbar_arrive((uint32_t)__cvta_generic_to_shared(&empty[b % NS])); };
    auto stage_k = [&](int b) { return sstage + (uint32_t)(b % NS) * 2 * KVB; };

    if constexpr (!IW) {
        for (int b = 0; b < n_blk; b++) {
            acquire(b);
            if (b < nbw) {
                float sc[BN / 2], c0, c1;
                uint32_t pa[BN / 16][4];
                turn_begin();
                wg_issue_s<HD>(sc, sq, stage_k(b));
                turn_end();
                wg_wait_mma();
                wg_touch(sc);
                wg_softmax<FOLD>(sc, b * BN, p0, p1, tq, scale_log2, m0, m1, l0, l1, c0, c1);
                wg_scale_o<HD>(o, c0, c1);
                wg_pack_p(sc, pa);
                turn_begin();
                wg_issue_pv<HD>(o, pa, stage_k(b) + KVB);
                turn_end();
                wg_wait_mma();
                wg_touch(o);
                wg_touch_p(pa);
            } else {
                turn_begin();
                turn_end();
                turn_begin();
                turn_end();
            }
            release(b);
        }
    } else {
        /* no wgmma under a condition inside the loop (ptxas serializes them there, C7518): block 0 and the
         * last P V are peeled */
        uint32_t pp[BN / 16][4]; /* the previous block's P, in flight in its P V */
        if (nbw > 0) {
            float sc[BN / 2], c0, c1;
            acquire(0);
            turn_begin();
            wg_issue_s<HD>(sc, sq, stage_k(0));
            turn_end();
            wg_wait_mma();
            wg_touch(sc);
            wg_softmax<FOLD>(sc, 0, p0, p1, tq, scale_log2, m0, m1, l0, l1, c0, c1);
            wg_pack_p(sc, pp);
        }
        /* block b: its S with block b - 1's P V (in pin), its P into pout; unrolled by two so the P buffers
         * swap roles without a copy (a loop-carried copy into the next P V's A registers serializes the MMAs,
         * C7513) */
        uint32_t pq[BN / 16][4];
        auto step = [&](int b, uint32_t (&pin)[BN / 16][4], uint32_t (&pout)[BN / 16][4]) {
            float sc[BN / 2], c0, c1;
            acquire(b);
            turn_begin();
            wg_issue_s_pv<HD>(sc, sq, stage_k(b), o, pin, stage_k(b - 1) + KVB);
            turn_end();
            wg_wait_mma_n<1>(); /* S done; the previous P V may still run */
            wg_touch(sc);
            wg_softmax<FOLD>(sc, b * BN, p0, p1, tq, scale_log2, m0, m1, l0, l1, c0, c1);
            wg_pack_p(sc, pout);
            wg_wait_mma();
            wg_touch(o);
            wg_touch_p(pin);
            release(b - 1);
            wg_scale_o<HD>(o, c0, c1);
        };
        int b = 1;
        for (; b + 1 < nbw; b += 2) {
            step(b, pp, pq);
            step(b + 1, pq, pp);
        }
        auto tail = [&](uint32_t (&pl)[BN / 16][4]) { /* the last computed block's P V */
            turn_begin();
            wg_issue_pv<HD>(o, pl, stage_k(nbw - 1) + KVB);
            turn_end();
            wg_wait_mma();
            wg_touch(o);
            wg_touch_p(pl);
            release(nbw - 1);
        };
        if (b < nbw) { /* one more step: the last P is in pq */
            step(b, pp, pq);
            tail(pq);
        } else if (nbw > 0) {
            tail(pp);
        }
        for (int b = nbw; b < n_blk; b++) {
            acquire(b);
            turn_begin();
            turn_end();
            release(b);
        }
        if (nbw == 0) { /* the turn count: n_blk + 1 for every warpgroup */
            turn_begin();
            turn_end();
        }
    }
    if constexpr (PP) {
        if (wg == 0) asm volatile("bar.sync 3, 256;\n" ::: "memory");
    }

    wg_store_o<HD>(o, l0, l1, out, t0, n, n_head, h, tq);
#else
    (void)tk; (void)tv; (void)q; (void)n; (void)pos; (void)n_head; (void)n_head_kv; (void)scale_log2; (void)out;
    (void)bt; (void)lbs; (void)kv_rows;
#endif
}

/* the shapes v6 takes: hd 64, 128 (v6a, v6b) and 256 (v6b), n_head a multiple of n_head_kv */
static int wg_shape_ok(int n_head, int n_head_kv, int hd) {
    return n_head > 0 && n_head_kv > 0 && n_head % n_head_kv == 0 && (hd == 64 || hd == 128 || hd == 256);
}

/* 1 when this device runs kernel kf: compute capability 9.0 and its sm_90a code loaded, the shared-memory
 * opt-in granted (per device and kernel, once) */
static int wg_device_ok(const void *kf, size_t smem, unsigned *ok_dev, unsigned *no_dev) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 32) return 0;
    const unsigned bit = 1u << dev;
    if (__atomic_load_n(no_dev, __ATOMIC_RELAXED) & bit) return 0;
    if (__atomic_load_n(ok_dev, __ATOMIC_RELAXED) & bit) return 1;
    int major = 0, minor = 0, ok = 1;
    cudaFuncAttributes fa;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        ok = -1;
    } else if (major != 9 || minor != 0) {
        ok = 0; /* no error raised: nothing to clear */
    } else if (cudaFuncGetAttributes(&fa, kf) != cudaSuccess ||
               cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) {
        ok = -1;
    } else if (fa.binaryVersion != 90) {
        ok = 0;
    }
    if (ok <= 0) {
        if (ok < 0) (void)cudaGetLastError(); /* only the error this check raised: the fallback runs instead */
        __atomic_fetch_or(no_dev, bit, __ATOMIC_RELAXED);
        return 0;
    }
    __atomic_fetch_or(ok_dev, bit, __ATOMIC_RELAXED);
    return 1;
}

/* v6a's kernel for hd (64, 128) and paging, and its per-device statics; NULL for another hd */
static const void *wg_a_kernel(int hd, int pg, unsigned **ok, unsigned **no) {
    static unsigned ok_dev[2][2], no_dev[2][2];
    *ok = &ok_dev[pg][hd == 64];
    *no = &no_dev[pg][hd == 64];
    if (hd == 128) return pg ? (const void *)flash_wgmma_kernel<128, 1> : (const void *)flash_wgmma_kernel<128, 0>;
    if (hd == 64) return pg ? (const void *)flash_wgmma_kernel<64, 1> : (const void *)flash_wgmma_kernel<64, 0>;
    return NULL;
}
static int wg_a_ok(int n_head, int n_head_kv, int hd, int pg) {
    unsigned *ok = NULL, *no = NULL;
    const void *kf = wg_shape_ok(n_head, n_head_kv, hd) ? wg_a_kernel(hd, pg, &ok, &no) : NULL;
    return kf && wg_device_ok(kf, hd == 128 ? wg_cfg<128>::SMEM : wg_cfg<64>::SMEM, ok, no);
}

extern "C" int tcu_attention_wg_ok(int n_head, int n_head_kv, int hd) { return wg_a_ok(n_head, n_head_kv, hd, 0); }

extern "C" int tcu_attention_wg(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                                const int32_t *bt, int lbs, int n_head, int n_head_kv, int hd, float scale, float *out,
                                cudaStream_t st) {
    if (n <= 0 || !wg_a_ok(n_head, n_head_kv, hd, bt != NULL)) return 0; /* v6a: hd 64 and 128 */
    const dim3 grid((unsigned)((n + WG_BM - 1) / WG_BM), (unsigned)n_head);
    const float sl2 = scale * 1.4426950408889634f;
    typedef void (*fn)(const float *, const uint16_t *, const uint16_t *, int, const int32_t *, int, int, float, float *,
                       const int32_t *, int);
    const fn kf = hd == 128 ? (bt ? flash_wgmma_kernel<128, 1> : flash_wgmma_kernel<128, 0>)
                            : (bt ? flash_wgmma_kernel<64, 1> : flash_wgmma_kernel<64, 0>);
    kf<<<grid, WG_T, hd == 128 ? wg_cfg<128>::SMEM : wg_cfg<64>::SMEM, st>>>(q, kc, vc, n, pos, n_head, n_head_kv, sl2,
                                                                             out, bt, lbs);
    TCU_CHECK_LAUNCH(st);
    return 1;
}

/* cuTensorMapEncodeTiled from the driver (CUDA driver API, "Tensor Map Object Management"), once; NULL when
 * the driver has none */
typedef CUresult (*wg_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                 const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static wg_encode_fn wg_encoder(void) {
    static wg_encode_fn fn;
    static int tried;
    if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult qr;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &qr) != cudaSuccess) {
            (void)cudaGetLastError(); /* this call's error only */
            p = NULL;
        } else if (qr != cudaDriverEntryPointSuccess) {
            p = NULL;
        }
        fn = (wg_encode_fn)p;
        __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    return fn;
}

/* The (rows, n_head_kv, hd) f16 cache at base as a 3-D tensor map with (64, 1, bn) boxes, 128-byte swizzle,
 * zeros past rows (and below row 0). */
static int wg_map(CUtensorMap *m, const uint16_t *base, int64_t rows, int n_head_kv, int hd, int bn) {
    wg_encode_fn enc = wg_encoder();
    if (!enc || ((uintptr_t)base & 15)) return -1;
    const cuuint64_t dim[3] = {(cuuint64_t)hd, (cuuint64_t)n_head_kv, (cuuint64_t)rows};
    const cuuint64_t stride[2] = {(cuuint64_t)hd * 2, (cuuint64_t)n_head_kv * hd * 2};
    const cuuint32_t box[3] = {64, 1, (cuuint32_t)bn}, es[3] = {1, 1, 1};
    return enc(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, (void *)base, dim, stride, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
                   CUDA_SUCCESS ? 0 : -1;
}

/* v6b's kernel for hd: pingpong + pipelining at hd 64 and 128, plain at hd 256 (the comment above the kernel), with
 * its per-device statics; NULL for another hd. */
typedef void (*wg_ws_fn)(CUtensorMap, CUtensorMap, const float *, int, const int32_t *, int, int, float, float *,
                         const int32_t *, int, int);
static wg_ws_fn wg_ws_kernel(int hd, size_t *smem, unsigned **ok, unsigned **no) {
    static unsigned ok_dev[3], no_dev[3];
    const int k = hd == 64 ? 0 : hd == 128 ? 1 : 2;
    *ok = &ok_dev[k];
    *no = &no_dev[k];
    switch (hd) {
    case 64: *smem = wg_ws_cfg<64>::SMEM; return flash_wgmma_ws_kernel<64, 1, 1>;
    case 128: *smem = wg_ws_cfg<128>::SMEM; return flash_wgmma_ws_kernel<128, 1, 1>;
    case 256: *smem = wg_ws_cfg<256>::SMEM; return flash_wgmma_ws_kernel<256, 0, 0>;
    default: return NULL;
    }
}

extern "C" int tcu_attention_wg_tma_ok(int n_head, int n_head_kv, int hd) {
    size_t smem = 0;
    unsigned *ok = NULL, *no = NULL;
    const wg_ws_fn kf = wg_shape_ok(n_head, n_head_kv, hd) ? wg_ws_kernel(hd, &smem, &ok, &no) : NULL;
    return kf && wg_encoder() && wg_device_ok((const void *)kf, smem, ok, no);
}

extern "C" int tcu_attention_wg_tma(const float *q, const uint16_t *kc, const uint16_t *vc, int kv_rows, int n,
                                    const int32_t *pos, const int32_t *bt, int lbs, int n_head, int n_head_kv, int hd,
                                    float scale, float *out, cudaStream_t st) {
    if (n <= 0 || kv_rows <= 0 || !tcu_attention_wg_tma_ok(n_head, n_head_kv, hd)) return 0;
    if ((int64_t)((n + WG_BM - 1) / WG_BM) * n_head > 0x7FFFFFFF) return 0; /* gridDim.x */
    size_t smem = 0;
    unsigned *ok = NULL, *no = NULL;
    const wg_ws_fn kf = wg_ws_kernel(hd, &smem, &ok, &no);
    const int bn = hd == 256 ? wg_cfg<256>::BN : WG_BN;
    /* identity: the map ends at kv_rows (rows past it arrive as zeros), boxes of bn rows. Paged: the map spans the pool
     * (its size is not passed: 2^31 - 1 rows, addressed only through the table's rows), boxes of one page at most,
     * and a piece past kv_rows is copied from a negative row (zeros) */
    if (bt && (lbs < 4 || lbs > 8)) return 0; /* pages of 16..256 rows */
    const int pr = bt ? ((1 << lbs) < bn ? 1 << lbs : bn) : bn;
    const int64_t rows = bt ? (int64_t)0x7FFFFFFF : kv_rows;
    CUtensorMap mk, mv; /* encoded on the host each call (two ~us encodes a layer a chunk) */
    if (wg_map(&mk, kc, rows, n_head_kv, hd, pr) || wg_map(&mv, vc, rows, n_head_kv, hd, pr)) return 0;
    const unsigned nqb = (unsigned)((n + WG_BM - 1) / WG_BM);
    kf<<<dim3(nqb * (unsigned)n_head), WG_T + 128, smem, st>>>(mk, mv, q, n, pos, n_head, n_head_kv,
                                                                scale * 1.4426950408889634f, out, bt, lbs, kv_rows);
    TCU_CHECK_LAUNCH(st);
    return 1;
}
