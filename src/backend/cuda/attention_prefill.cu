/* attention_prefill.cu: causal GQA flash attention on the tensor cores for prefill chunks (tcu_attention_flash
 * in tcu.h), "v3" beside attention.cu's ref / v1 / v2.
 *
 * Contract: as tcu_attention. q (n, n_head, hd) f32; kc, vc (n_rows, n_head_kv, hd) f16 bits; pos (n) int32 on
 * the device; out (n, n_head, hd) f32. All n tokens belong to one sequence, whose logical row j is physical row
 * kv_row(bt, lbs, j) (kv.cuh; bt NULL: row j). Token t attends to logical rows [0, pos[t]]; query head h reads KV
 * head h / (n_head / n_head_kv). hd in {64, 96, 128, 256}. Any pos (a later chunk of a chunked prefill has
 * S_q < S_kv; positions need not be contiguous): the mask is key j visible iff j <= pos[t], and, under a sliding
 * window of win keys (win > 0), j > pos[t] - win (blocks wholly below every row's window are neither loaded nor
 * computed).
 *
 * Algorithm: FlashAttention-2 (Dao 2023, "FlashAttention-2: Faster Attention with Better Parallelism and Work
 * Partitioning", Algorithm 1) with mma.sync.m16n8k16 (f16 operands, f32 accumulators; PTX ISA "Matrix
 * fragments for mma.m16n8k16"). One CTA per (block of BM = 16 * NW query tokens, query head); warp w owns
 * tokens [16w, 16w + 16) of the block, its Q fragments in registers (Q rounded to f16 once) and its O
 * accumulator (16 x hd f32) in registers. The CTA walks KV blocks of BN keys from its rows' lowest visible key (0
 * without a window) up to the largest
 * pos of its tokens (causal block skip: a block wholly in the future of every token is never loaded; a warp
 * skips the math of a block wholly in the future of its 16 tokens), K/V tiles double-buffered in shared
 * memory by cp.async (rows past that largest pos are zero-filled, never read). Per block and warp:
 *   S = Q K^T (K fragments by ldmatrix), scaled by scale * log2(e); masked entries -inf;
 *   online softmax in base 2 (Milakov & Gimelshein 2018): m' = max(m, rowmax S), corr = 2^(m - m'),
 *   P = 2^(S - m'), l = l * corr + rowsum P, O = O * corr + P V. When every entry of a row seen so far is
 *   masked (m' = -inf) the subtracted max is 0, so 2^(-inf - 0) = 0 and exp(-inf - -inf) never happens;
 *   P is rounded to f16 as the A operand of P V (its C-fragment layout is the A-fragment layout), V
 *   fragments by ldmatrix.trans.
 * At the end O / l (l = 0, a token with no visible key: zeros).
 *
 * Numerics (tests/gpu/gpu_attention.c, vs float64 on the same f32 q and f16 K/V): Q and P rounded to f16
 * (unit roundoff 2^-11), f32 scores and accumulation; relative L2 error ~3e-4, against ~1e-6 for v1's f32
 * CUDA-core path. Prefill only (n > TCU_MULTI_MAX): decode and verify keep v1/v2's bits.
 */
#include <cuda_fp16.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "cuda/check.cuh"
#include "cuda/kv.cuh"
#include "cuda/tcu.h"

__device__ __forceinline__ uint32_t fa_pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi); /* lo in the low 16 bits: the lower column index */
    return *(const uint32_t *)&h;
}

/* D = A (16x16 f16, row) * B (16x8 f16, col) + D (16x8 f32). */
__device__ __forceinline__ void fa_mma(float *d, const uint32_t *a, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void fa_ldsm4(uint32_t *r, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void fa_ldsm4_t(uint32_t *r, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

/* 16 bytes global -> shared, bypassing L1; src_bytes 0 writes zeros (nothing is read). */
__device__ __forceinline__ void fa_cp16(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void fa_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void fa_wait(void) { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* Shared-memory row of a K/V tile: hd + 8 halves, so the 8 rows of an ldmatrix phase (and of the cp.async
 * stores) fall in distinct banks ((hd + 8) * 2 bytes is an odd multiple of 16: 144, 208, 272, 528). */
template <int HD> struct fa_cfg {
    static constexpr int BN = HD >= 256 ? 32 : 64; /* keys per block; hd 256 halves it for registers */
    static constexpr int LD = HD + 8;
    static constexpr size_t SMEM = sizeof(uint16_t) * 2 /*stages*/ * 2 /*K,V*/ * BN * LD;
};

/* K and V logical rows [b * BN, b * BN + BN) of one KV head into stage s (K at stage * 2 * BN * LD halves, V BN * LD
 * halves after it), one commit group; rows >= n_kv are zero-filled (never read from global memory); row j is read
 * from physical row kv_row(bt, lbs, j), a row at a time, so a tile may span blocks of any size. */
template <int HD, int NW, int PG>
__device__ __forceinline__ void fa_load_block(uint32_t sbase, const uint16_t *__restrict__ kb,
                                              const uint16_t *__restrict__ vb, size_t kv_stride, int n_kv, int b,
                                              int s, const int32_t *__restrict__ bt, int lbs) {
    constexpr int BN = fa_cfg<HD>::BN, LD = fa_cfg<HD>::LD, CH = HD / 8;
    const uint32_t sk = sbase + (uint32_t)(s * 2 * BN * LD * 2), sv = sk + (uint32_t)(BN * LD * 2);
    for (int c = threadIdx.x; c < BN * CH; c += NW * 32) {
        const int r = c / CH, col = (c % CH) * 8, j = b * BN + r;
        const int ok = j < n_kv;
        const size_t off = ok ? (size_t)(PG ? kv_row(bt, lbs, j) : j) * kv_stride + col : 0;
        const uint32_t so = (uint32_t)((r * LD + col) * 2);
        fa_cp16(sk + so, kb + off, ok ? 16 : 0);
        fa_cp16(sv + so, vb + off, ok ? 16 : 0);
    }
    fa_commit();
}

/* PG = 1: rows through the block table bt (kv.cuh); PG = 0 the identity, an instantiation of its own (as the decode
 * kernels: no table arithmetic on the identity's loads). */
template <int HD, int NW, int PG>
__global__ void __launch_bounds__(NW * 32)
flash_prefill_kernel(const float *__restrict__ q, const uint16_t *__restrict__ kc, const uint16_t *__restrict__ vc,
                     int n, const int32_t *__restrict__ pos, int n_head, int n_head_kv, float scale_log2,
                     float *__restrict__ out, const int32_t *__restrict__ bt, int lbs, int win) {
    constexpr int BM = 16 * NW, BN = fa_cfg<HD>::BN, LD = fa_cfg<HD>::LD;
    constexpr int KT = HD / 16;  /* k-steps of S = Q K^T */
    constexpr int NT = BN / 8;   /* n-tiles of S */
    constexpr int DT = HD / 8;   /* n-tiles of O */
    extern __shared__ __align__(16) uint16_t fa_sm[];
    __shared__ int sm_max[NW], sm_lo[NW];

    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int qb = (int)gridDim.x - 1 - (int)blockIdx.x; /* the longest (latest) query blocks first */
    const int h = (int)blockIdx.y, hk = h / (n_head / n_head_kv);
    const int t0 = qb * BM + w * 16 + g, t1 = t0 + 8; /* this thread's two query rows */
    const int p0 = t0 < n ? pos[t0] : -1, p1 = t1 < n ? pos[t1] : -1;
    /* each row's first visible key: p - win + 1 under a window (win > 0), else 0; INT_MAX for a padding row */
    const int lo0 = t0 < n ? (win > 0 && p0 - win + 1 > 0 ? p0 - win + 1 : 0) : INT_MAX;
    const int lo1 = t1 < n ? (win > 0 && p1 - win + 1 > 0 ? p1 - win + 1 : 0) : INT_MAX;

    /* key range: the warp's and the CTA's largest pos; the warp's smallest (a block at or below it needs
     * no mask for any of the warp's rows); the window's lowest first key (blocks wholly below it are skipped: the
     * warp's, the CTA's) and highest (a block from it up needs no window mask) */
    int wmax = max(p0, p1), wmin = min(t0 < n ? p0 : INT_MAX, t1 < n ? p1 : INT_MAX);
    int wlo = min(lo0, lo1), whi = max(t0 < n ? lo0 : 0, t1 < n ? lo1 : 0);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        wmax = max(wmax, __shfl_xor_sync(0xffffffffu, wmax, o));
        wmin = min(wmin, __shfl_xor_sync(0xffffffffu, wmin, o));
        wlo = min(wlo, __shfl_xor_sync(0xffffffffu, wlo, o));
        whi = max(whi, __shfl_xor_sync(0xffffffffu, whi, o));
    }
    if (lane == 0) sm_max[w] = wmax, sm_lo[w] = wlo;

    /* Q fragments (A operand, row-major 16 x hd): a0 (g, 2tq..), a1 (g+8, 2tq..), a2 (g, 2tq+8..), a3 (g+8, ..) */
    uint32_t qf[KT][4];
    {
        const float *q0 = q + ((size_t)t0 * n_head + h) * HD, *q1 = q + ((size_t)t1 * n_head + h) * HD;
#pragma unroll
        for (int kt = 0; kt < KT; kt++) {
            const int c = kt * 16 + 2 * tq;
            const float2 x0 = t0 < n ? *(const float2 *)(q0 + c) : make_float2(0.f, 0.f);
            const float2 x1 = t1 < n ? *(const float2 *)(q1 + c) : make_float2(0.f, 0.f);
            const float2 x2 = t0 < n ? *(const float2 *)(q0 + c + 8) : make_float2(0.f, 0.f);
            const float2 x3 = t1 < n ? *(const float2 *)(q1 + c + 8) : make_float2(0.f, 0.f);
            qf[kt][0] = fa_pack(x0.x, x0.y);
            qf[kt][1] = fa_pack(x1.x, x1.y);
            qf[kt][2] = fa_pack(x2.x, x2.y);
            qf[kt][3] = fa_pack(x3.x, x3.y);
        }
    }
    __syncthreads();
    int cmax = -1, clo = INT_MAX;
#pragma unroll
    for (int i = 0; i < NW; i++) cmax = max(cmax, sm_max[i]), clo = min(clo, sm_lo[i]);
    const int n_kv = cmax + 1, n_blk = (n_kv + BN - 1) / BN;
    const int b0 = clo == INT_MAX ? 0 : clo / BN; /* the first block any row of the CTA sees */

    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fa_sm);
    const size_t kv_stride = (size_t)n_head_kv * HD; /* elements between cache rows */
    const uint16_t *kb = kc + (size_t)hk * HD, *vb = vc + (size_t)hk * HD;
    float o[DT][4];
#pragma unroll
    for (int d = 0; d < DT; d++) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    /* ldmatrix lane addressing: lane supplies row (lane & 7) of matrix (lane >> 3) */
    const int mi = lane >> 3, mr = lane & 7;

    if (n_blk > b0) fa_load_block<HD, NW, PG>(sbase, kb, vb, kv_stride, n_kv, b0, b0 & 1, bt, lbs);
    for (int b = b0; b < n_blk; b++) {
        if (b + 1 < n_blk) {
            fa_load_block<HD, NW, PG>(sbase, kb, vb, kv_stride, n_kv, b + 1, (b + 1) & 1, bt, lbs);
            fa_wait<1>();
        } else {
            fa_wait<0>();
        }
        __syncthreads();
        const int j0 = b * BN;
        if (j0 <= wmax && j0 + BN - 1 >= wlo) { /* warp-uniform: some key of this block is visible to some row */
            const uint32_t sk = sbase + (uint32_t)((b & 1) * 2 * BN * LD * 2), sv = sk + (uint32_t)(BN * LD * 2);
            float s[NT][4];
#pragma unroll
            for (int nt = 0; nt < NT; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
            /* S = Q K^T: an x4 ldmatrix gives B fragments of two n-tiles (16 keys) for one k-step:
             * matrices (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15) */
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
#pragma unroll
                for (int kt = 0; kt < KT; kt++) {
                    uint32_t r[4];
                    const int key = np * 16 + (mi >> 1) * 8 + mr, col = kt * 16 + (mi & 1) * 8;
                    fa_ldsm4(r, sk + (uint32_t)((key * LD + col) * 2));
                    fa_mma(s[2 * np], qf[kt], r[0], r[1]);
                    fa_mma(s[2 * np + 1], qf[kt], r[2], r[3]);
                }
            }
            /* scale into base 2; mask the future (and the keys below a window) when the block is not wholly visible
             * to the warp */
            const bool full = j0 + BN - 1 <= wmin && j0 >= whi;
            float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int j = j0 + nt * 8 + 2 * tq + e;
                    float a = s[nt][e] * scale_log2, c = s[nt][2 + e] * scale_log2;
                    if (!full) {
                        if (j > p0 || j < lo0) a = -INFINITY;
                        if (j > p1 || j < lo1) c = -INFINITY;
                    }
                    s[nt][e] = a;
                    s[nt][2 + e] = c;
                    mx0 = fmaxf(mx0, a);
                    mx1 = fmaxf(mx1, c);
                }
            }
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
            const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
            const float u0 = n0 == -INFINITY ? 0.0f : n0, u1 = n1 == -INFINITY ? 0.0f : n1; /* safe max */
            const float c0 = exp2f(m0 - u0), c1 = exp2f(m1 - u1); /* m = -inf: 0 (nothing accumulated) */
            m0 = n0;
            m1 = n1;
            float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    s[nt][e] = exp2f(s[nt][e] - u0);
                    s[nt][2 + e] = exp2f(s[nt][2 + e] - u1);
                    rs0 += s[nt][e];
                    rs1 += s[nt][2 + e];
                }
            }
            l0 = l0 * c0 + rs0; /* this thread's columns; the quad's partials are summed at the end */
            l1 = l1 * c1 + rs1;
#pragma unroll
            for (int d = 0; d < DT; d++) {
                o[d][0] *= c0; o[d][1] *= c0;
                o[d][2] *= c1; o[d][3] *= c1;
            }
            /* O += P V: P's k-step kt2 (keys 16kt2..) is S n-tiles 2kt2, 2kt2+1 as an A fragment; an x4.trans
             * ldmatrix gives V's B fragments of two d-tiles: (keys 0-7, d 0-7), (keys 8-15, d 0-7),
             * (keys 0-7, d 8-15), (keys 8-15, d 8-15) */
#pragma unroll
            for (int kt2 = 0; kt2 < BN / 16; kt2++) {
                uint32_t a[4];
                a[0] = fa_pack(s[2 * kt2][0], s[2 * kt2][1]);
                a[1] = fa_pack(s[2 * kt2][2], s[2 * kt2][3]);
                a[2] = fa_pack(s[2 * kt2 + 1][0], s[2 * kt2 + 1][1]);
                a[3] = fa_pack(s[2 * kt2 + 1][2], s[2 * kt2 + 1][3]);
#pragma unroll
                for (int dp = 0; dp < DT / 2; dp++) {
                    uint32_t r[4];
                    const int key = kt2 * 16 + (mi & 1) * 8 + mr, col = dp * 16 + (mi >> 1) * 8;
                    fa_ldsm4_t(r, sv + (uint32_t)((key * LD + col) * 2));
                    fa_mma(o[2 * dp], a, r[0], r[1]);
                    fa_mma(o[2 * dp + 1], a, r[2], r[3]);
                }
            }
        }
        __syncthreads(); /* every warp is done with stage b & 1 before block b + 2 is loaded into it */
    }

    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float i0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, i1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
    float *o0 = out + ((size_t)t0 * n_head + h) * HD + 2 * tq, *o1 = out + ((size_t)t1 * n_head + h) * HD + 2 * tq;
#pragma unroll
    for (int d = 0; d < DT; d++) {
        if (t0 < n) *(float2 *)(o0 + d * 8) = make_float2(o[d][0] * i0, o[d][1] * i0);
        if (t1 < n) *(float2 *)(o1 + d * 8) = make_float2(o[d][2] * i1, o[d][3] * i1);
    }
}

template <int HD, int NW, int PG>
static void flash_launch_pg(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                            const int32_t *bt, int lbs, int win, int n_head, int n_head_kv, float scale, float *out,
                            cudaStream_t st) {
    constexpr size_t smem = fa_cfg<HD>::SMEM;
    static unsigned attr_set; /* the > 48 KiB opt-in, once per device (bit d; a benign race between TP ranks) */
    int dev = 0;
    cudaGetDevice(&dev);
    if (dev >= 32 || !(attr_set >> dev & 1u)) {
        /* on failure the bit stays clear (asked again next call) and the launch below reports the error */
        if (cudaFuncSetAttribute(flash_prefill_kernel<HD, NW, PG>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)smem) == cudaSuccess && dev < 32)
            attr_set |= 1u << dev;
    }
    const dim3 grid((unsigned)((n + 16 * NW - 1) / (16 * NW)), (unsigned)n_head);
    flash_prefill_kernel<HD, NW, PG><<<grid, NW * 32, smem, st>>>(q, kc, vc, n, pos, n_head, n_head_kv,
                                                                  scale * 1.4426950408889634f, out, bt, lbs, win);
    TCU_CHECK_LAUNCH(st);
}
template <int HD, int NW>
static void flash_launch(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                         const int32_t *bt, int lbs, int win, int n_head, int n_head_kv, float scale, float *out,
                         cudaStream_t st) {
    if (bt) flash_launch_pg<HD, NW, 1>(q, kc, vc, n, pos, bt, lbs, win, n_head, n_head_kv, scale, out, st);
    else flash_launch_pg<HD, NW, 0>(q, kc, vc, n, pos, bt, lbs, win, n_head, n_head_kv, scale, out, st);
}

extern "C" int tcu_attention_flash_variant(int n_head, int n_head_kv, int hd, int kv_rows) {
    if (n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv || (hd != 64 && hd != 96 && hd != 128 && hd != 256))
        return 0;
    if (hd == 96) return TCU_FLASH_V3; /* Phi-3's head: v3 only (the wgmma kernels take multiples of 64) */
    /* v6b where the device runs it (sm_90a: 79-85% of cuDNN at causal D = 128 where v3 read 33-51%, docs/ledger.md),
     * given the cache's readable rows (its TMA tensor map); v6a (hd 64, 128) without them; v3 elsewhere */
    if (kv_rows > 0 && tcu_attention_wg_tma_ok(n_head, n_head_kv, hd)) return TCU_FLASH_V6B;
    if (tcu_attention_wg_ok(n_head, n_head_kv, hd)) return TCU_FLASH_V6A;
    return TCU_FLASH_V3;
}

extern "C" int tcu_attention_flash_ok(int n_head, int n_head_kv, int hd) {
    return tcu_attention_flash_variant(n_head, n_head_kv, hd, 0) != 0;
}

extern "C" void tcu_attention_flash(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                                    const int32_t *bt, int lbs, int n_head, int n_head_kv, int hd, float scale, float *out,
                                    cudaStream_t st) {
    tcu_attention_flash_rows(q, kc, vc, 0, n, pos, bt, lbs, n_head, n_head_kv, hd, scale, out, st);
}

extern "C" int tcu_attention_flash_v3(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                                      const int32_t *bt, int lbs, int win, int n_head, int n_head_kv, int hd,
                                      float scale, float *out, cudaStream_t st) {
    if (n <= 0 || !tcu_attention_flash_ok(n_head, n_head_kv, hd)) return 0;
    switch (hd) {
    case 64: flash_launch<64, 4>(q, kc, vc, n, pos, bt, lbs, win, n_head, n_head_kv, scale, out, st); break;
    case 96: flash_launch<96, 4>(q, kc, vc, n, pos, bt, lbs, win, n_head, n_head_kv, scale, out, st); break;
    case 128: flash_launch<128, 4>(q, kc, vc, n, pos, bt, lbs, win, n_head, n_head_kv, scale, out, st); break;
    default: flash_launch<256, 4>(q, kc, vc, n, pos, bt, lbs, win, n_head, n_head_kv, scale, out, st); break;
    }
    return 1;
}

/* The chooser's variant; a v6 launcher that still declines (a tensor-map encode refused) falls to the next one. v3
 * with 4 warps a CTA: 8 (128-token query blocks) was within the spread end to end (docs/ledger.md); v4, two m-tiles
 * a warp, lost (dev/cuda/attention_prefill_v4.cu). Each version sums in another order (other bits). */
extern "C" void tcu_attention_flash_rows(const float *q, const uint16_t *kc, const uint16_t *vc, int kv_rows, int n,
                                         const int32_t *pos, const int32_t *bt, int lbs, int n_head, int n_head_kv,
                                         int hd, float scale, float *out, cudaStream_t st) {
    if (n <= 0) return;
    switch (tcu_attention_flash_variant(n_head, n_head_kv, hd, kv_rows)) {
    case TCU_FLASH_V6B:
        if (tcu_attention_wg_tma(q, kc, vc, kv_rows, n, pos, bt, lbs, n_head, n_head_kv, hd, scale, out, st)) return;
        /* fall through */
    case TCU_FLASH_V6A:
        if (tcu_attention_wg(q, kc, vc, n, pos, bt, lbs, n_head, n_head_kv, hd, scale, out, st)) return;
        /* fall through */
    case TCU_FLASH_V3: tcu_attention_flash_v3(q, kc, vc, n, pos, bt, lbs, 0, n_head, n_head_kv, hd, scale, out, st); return;
    default: return;
    }
}
