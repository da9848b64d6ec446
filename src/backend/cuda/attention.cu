/* attention.cu: causal GQA attention over the f16 KV cache (tcu_attention in tcu.h).
 *
 * Shapes (innermost last): q (n, n_head, hd) f32; kc, vc (n_rows, n_head_kv, hd) f16 bits; out (n, n_head, hd)
 * f32; pos (n) int32 on the device. Token t attends to its sequence's logical rows [jw, pos[t]], jw = 0, or under a
 * sliding window of win keys max(0, pos[t] - win + 1) (att_first; Gemma 3's local layers); query head h reads
 * KV head h / (n_head / n_head_kv). The paged cache (kv.cuh): logical row j of token t's sequence is physical row
 * kv_row(bt + bt_off[t], lbs, j) (bt NULL: row j, the identity); a kernel reads the same values in the same order
 * whatever the mapping, so a token's bits depend on its position and its sequence's contents only. CPU reference: cpu_attention (backend_cpu.c), which takes the max, then
 * exp(s - max) / sum, then the weighted sum of V rows; the kernels below get the same value (to f32 rounding)
 * by the online softmax (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax").
 *
 * Variants (llm.c dev/cuda style; tests/gpu/gpu_attention.c checks each against a float64 reference):
 *
 *   ref   attention_ref_kernel: one thread per (token, query head). Three passes over the keys: max of the
 *         scores, sum of exp(s - max) (in double, as cpu_attention), then out[d] += p_j * v_j[d] straight
 *         into global memory. Slow (O(S * hd) serial work per thread, uncoalesced), obviously correct, handles any hd and any head
 *         ratio: it is also the fallback for shapes the fast kernel does not take (hd not a multiple of 32
 *         or > 256, n_head not a multiple of n_head_kv).
 *
 *   v1    attention_split_kernel<EPL, QH>: one CTA per (token, KV head, chunk of QH <= 4 query heads of its
 *         group), so a K/V row is read once for the QH heads that share it. The CTA's NW warps split the
 *         keys [0, pos[t]] into batches of U consecutive rows (warp w takes batches w, w + NW, ...). A lane
 *         holds EPL = hd/32 consecutive elements of q, of each K/V row and of the accumulator, so a warp
 *         reads a row as one coalesced hd*2-byte segment (16/8/4-byte loads for EPL 8/4/2). Each warp
 *         loads its U K rows and U V rows first (2 KiB in flight per warp), then keeps its own (m, l, acc)
 *         by the online softmax. The warps' partials are combined in shared memory in a fixed order
 *         (M = max m_w, L = sum_w l_w e^(m_w - M), out = sum_w acc_w e^(m_w - M) / L, warp w + 8 folded
 *         into w, then w = 0..7 summed in order), so the same inputs give the same bits.
 *         Prefill (n > 16): 8 warps; decode and short chunks (n <= 16, TCU_MULTI_MAX): 16 warps (more loads in flight: decode is
 *         latency-bound with only n_head_kv CTAs). CTAs are issued longest-first (token n-1 first) to
 *         shorten the tail. The warps are virtual (NV, cfg): a CTA's blockDim/32 physical warps run them one after
 *         another (physical warp w: v = w, w + NWP, ...), each virtual warp's raw (m, l, acc) parked in shared
 *         memory, then merged in virtual-warp order; so the bits are NV's whatever runs them, and a decode pass of
 *         many tokens (more CTAs than SMs) runs 8 or 4 physical warps, several CTAs an SM (att_phys_warps).
 *
 *   v3    prefill on the tensor cores (attention_prefill.cu, tcu_attention_flash): FlashAttention-2 with
 *         mma.sync; tcu_attention_split sends n > TCU_MULTI_MAX there when the shape allows (hd 64/128/256).
 *
 *   v5    the decode kernel over a Q8_0 cache with 16 int8 of one row a lane (attention_q8w_kernel, below
 *         v2's merge), the kernel of Q8_0-cache decode and verify chunks (v2 where a device refuses its shared
 *         memory). The arms that lost or were not adopted (dev/cuda/attention_decode_arms.cu): the per-score xor
 *         tree, the f16 prefetch ring, RoPE inside the kernel, QH and warp sweeps, v5's warp/batch/quantized-q.
 *
 *   v2    decode split-K across CTAs ("flash-decoding", Dao et al. 2023), tcu_attention_split: v1 for
 *         n <= TCU_MULTI_MAX runs only n * n_head_kv * chunks CTAs, each streaming all pos+1 rows of its KV
 *         head, so at long contexts it is bound by per-SM load latency, not HBM bandwidth. v2 gives each
 *         (token, KV head, chunk) SZ CTAs (grid.z, the caller's, fixed per context: backend_cuda.c picks it
 *         from n_ctx, never from n or pos, so a graph can replay it); a token at position p with n_kv keys
 *         (p + 1 - jw) uses S = att_active_splits(n_kv, SZ, rps) of them (one per rps = 256 keys, at most SZ),
 *         split z taking rows jw + [n_kv*z/S, n_kv*(z+1)/S); a CTA writes its unnormalised (M, L, Σ acc e^(m_w - M)) to a
 *         workspace and attention_combine_kernel merges the S partials in order z = 0..S-1 (S = 1: the split
 *         kernel writes the output itself). S depends on the token's position only, so a verify chunk of k
 *         tokens still gives each token the bits of its decode step.
 *         MS (where att_ms_rule takes it: 2..3 splits, its grid 0.7..1 wave; TERN_ATT_MS): one CTA a (token, KV
 *         head, chunk) runs all S of the token's splits and merges them as the S split CTAs and the combine kernel
 *         do (att_ms_merge): v2's bits from fewer, wider CTAs and no combine launch.
 *
 * Numerics: f32 scores (fmaf over the lane's EPL elements, then a warp sum: TR = 1, one transposing
 * butterfly for a batch's QHP x U scores, att_transpose_sum; TR = 0, an xor tree per score), expf (not
 * __expf), f32 l and acc. A fully masked batch never reaches exp: a warp only
 * enters a batch whose first row is visible, so its running max is finite after the first batch, and
 * masked scores (-inf) are given p = 0 explicitly; a warp with no rows has m = -inf and weight 0 in the
 * combine (never exp(-inf - -inf)).
 */
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "cuda/check.cuh"
#include "cuda/kv.cuh"
#include "cuda/pdl.cuh"
#include "cuda/tcu.h"
#include "cuda/x16.cuh"

/* The O GEMM's input, written beside out by the kernel that writes out (element e of (n, n_head * hd)): the dp4a
 * GEMV's x16 format (plane > 0: x16_put, a warp's 32 values one block), or with plane 0 the f16 order's input, f16
 * bits at tcu_hm_pos(e) (tcu_attention_decode_h16: tcu_f32_to_f16's bytes with the layout on). */
static __device__ __forceinline__ void att_put(float v, int lane, int64_t e, void *xq, size_t plane) {
    if (plane) x16_put(v, lane, e / 32, xq, plane);
    else ((uint16_t *)xq)[tcu_hm_pos(e)] = __half_as_ushort(__float2half_rn(v));
}

#define ATT_MAX_WARPS 16   /* decode CTA: 512 threads; __launch_bounds__ caps registers at 128 */
#define ATT_RED_SLOTS 8    /* shared-memory partial slots; NW must be a multiple of this */
#define ATT_MAX_QH 4       /* query heads per CTA (registers: QH * EPL accumulators per lane) */
#define ATT_PREFILL_WARPS 8
#define ATT_MAX_SPLITS 64 /* split-K CTAs a head at most (the combine kernel's shared weights) */
#define ATT_DECODE_WARPS 16 /* 8 lost by 4-19% at depth 8192/32768, also with 32 splits: bench/sweeps/att_cta.md */
/* partials a combine thread loads beside the splits' (m, l) (attention_combine_kernel): 3 splits at 513..768 keys */
#define ATT_COMB_PF 4
/* a token's splits in one CTA (MS, hd 64 and 128) at most: its virtual warps' accumulators are 32 KiB a split at hd
 * 128, QH 4 */
#define ATT_MS_MAX 4
#define ATT_Q8_U 8 /* rows a warp batch of v2 over a Q8_0 cache at hd 128 (4: spill-free, never measured) */
/* attention_split_kernel's cfg argument: the virtual warps NV (8 or 16), which fix the bits; the CTA's physical warps
 * (blockDim) only run them */
#define ATT_CFG_NV 31
/* cfg bits 8..15: the engine's splits SZ (att_active_splits' cap and the workspace's stride), which a launch's grid.z
 * (the splits the pass's tokens can use, tcu.h TCU_ATT_FIT) may undercut */
#define ATT_CFG_SZ_SHIFT 8
/* cfg bits 16..23 with MS: the launch's splits SL, which every token's must not pass (its shared memory's size) */
#define ATT_CFG_SL_SHIFT 16
/* Keys a split of the decode attention (att_active_splits): one split per 256 keys of a token's position, at
 * most the grid's count. H200, Llama-3-8B Q4_0 (docs/ledger.md "the split count follows the token's depth"):
 * tg128 in an 8192-position context +6.7% over every split of the grid, depth 1024 neutral, depth 8192 -0.7%. */
/* (tcu.h TCU_ATT_RPS, 256) The keys a split under measurement (tcu_attention_rps_set, from tern_config.att_rps:
 * TERN_ATT_RPS): process-wide, set when an engine is made; att_split_launch reads it once (att_pages.rps) for the split
 * kernel and the combine, so a token's splits (and bits) are a function of its position alone within an engine. Short
 * contexts use 1 split of 256 keys: 8 CTAs for Llama-3-8B's 8 KV heads, ncu 7.3 us a layer at ~64 positions
 * (bench/gpu/s18-9363872/stepprof-chunk0). */
static int g_att_rps = TCU_ATT_RPS;
extern "C" int tcu_attention_rps_norm(int rps) {
    if (rps <= 0) return TCU_ATT_RPS; /* 0 (and a negative value): the default */
    return rps < 16 ? 16 : rps > 4096 ? 4096 : rps;
}
extern "C" void tcu_attention_rps_set(int rps) {
    __atomic_store_n(&g_att_rps, tcu_attention_rps_norm(rps), __ATOMIC_RELAXED);
}
extern "C" int tcu_attention_rps(void) { return __atomic_load_n(&g_att_rps, __ATOMIC_RELAXED); }

/* ---- ref: one thread per (token, head), two-pass softmax ------------------------------------------ */

/* The first key a query at position p attends to: p - win + 1 under a sliding window of win keys (win > 0, the
 * recipe's tern_layer.window, as cpu_attention_paged), else 0. */
static __device__ __forceinline__ int att_first(int p, int win) { return win > 0 && p - win + 1 > 0 ? p - win + 1 : 0; }

__global__ void attention_ref_kernel(const float *__restrict__ q, const uint16_t *__restrict__ kc,
                                     const uint16_t *__restrict__ vc, int n, const int32_t *__restrict__ pos,
                                     const int32_t *__restrict__ bt, const int32_t *__restrict__ bt_off, int lbs,
                                     int win, int n_head, int n_head_kv, int hd, float scale, float *__restrict__ out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * n_head) return;
    const int t = (int)(i / n_head), h = (int)(i % n_head), hk = h / (n_head / n_head_kv);
    const int j0 = att_first(pos[t], win), n_kv = pos[t] + 1;
    const int32_t *tb = kv_table(bt, bt_off, t);
    const float *qh = q + i * hd;
    float *o = out + i * hd;
    const size_t stride = (size_t)n_head_kv * hd;
    float mx = -INFINITY;
    for (int j = j0; j < n_kv; j++) {
        const uint16_t *k = kc + (size_t)kv_row(tb, lbs, j) * stride + (size_t)hk * hd;
        float s = 0.0f;
        for (int d = 0; d < hd; d++) s = fmaf(qh[d], __half2float(__ushort_as_half(k[d])), s);
        mx = fmaxf(mx, s * scale);
    }
    double sum = 0.0; /* as cpu_attention */
    for (int j = j0; j < n_kv; j++) {
        const uint16_t *k = kc + (size_t)kv_row(tb, lbs, j) * stride + (size_t)hk * hd;
        float s = 0.0f;
        for (int d = 0; d < hd; d++) s = fmaf(qh[d], __half2float(__ushort_as_half(k[d])), s);
        sum += expf(s * scale - mx);
    }
    for (int d = 0; d < hd; d++) o[d] = 0.0f;
    for (int j = j0; j < n_kv; j++) {
        const size_t r = (size_t)kv_row(tb, lbs, j) * stride + (size_t)hk * hd;
        const uint16_t *k = kc + r, *v = vc + r;
        float s = 0.0f;
        for (int d = 0; d < hd; d++) s = fmaf(qh[d], __half2float(__ushort_as_half(k[d])), s);
        const float p = (float)(expf(s * scale - mx) / sum);
        for (int d = 0; d < hd; d++) o[d] = fmaf(p, __half2float(__ushort_as_half(v[d])), o[d]);
    }
}

/* Reference launcher (same contract as tcu_attention); for tests and as the fallback. */
extern "C" void tcu_attention_ref(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                                  const int32_t *bt, const int32_t *bt_off, int lbs, int win, int n_head, int n_head_kv,
                                  int hd, float scale, float *out, cudaStream_t st) {
    if (n <= 0 || n_head <= 0) return;
    const int64_t threads = (int64_t)n * n_head;
    attention_ref_kernel<<<(unsigned)((threads + 127) / 128), 128, 0, st>>>(q, kc, vc, n, pos, bt, bt_off, lbs, win,
                                                                            n_head, n_head_kv, hd, scale, out);
    TCU_CHECK_LAUNCH(st);
}

/* ---- v1: split-warp CTA per (token, KV head, query-head chunk) ------------------------------------ */

/* A lane's EPL consecutive f16 of a row, kept packed: word i holds elements 2i (low half) and 2i+1. */
template <int EPL> struct att_raw { uint32_t w[(EPL + 1) / 2]; };

template <int EPL>
__device__ __forceinline__ void att_load(att_raw<EPL> &r, const uint16_t *__restrict__ p) {
    if constexpr (EPL % 8 == 0) {
#pragma unroll
        for (int i = 0; i < EPL / 8; i++) {
            const uint4 x = ((const uint4 *)p)[i];
            r.w[4 * i] = x.x; r.w[4 * i + 1] = x.y; r.w[4 * i + 2] = x.z; r.w[4 * i + 3] = x.w;
        }
    } else if constexpr (EPL % 4 == 0) {
        const uint2 x = *(const uint2 *)p;
        r.w[0] = x.x; r.w[1] = x.y;
    } else if constexpr (EPL % 2 == 0) {
#pragma unroll
        for (int i = 0; i < EPL / 2; i++) r.w[i] = ((const uint32_t *)p)[i];
    } else {
#pragma unroll
        for (int i = 0; i < (EPL + 1) / 2; i++) {
            const uint32_t lo = p[2 * i], hi = 2 * i + 1 < EPL ? p[2 * i + 1] : 0u;
            r.w[i] = lo | (hi << 16);
        }
    }
}

template <int EPL> __device__ __forceinline__ void att_zero(att_raw<EPL> &r) {
#pragma unroll
    for (int i = 0; i < (EPL + 1) / 2; i++) r.w[i] = 0u;
}

template <int EPL> __device__ __forceinline__ float att_elem(const att_raw<EPL> &r, int e) {
    return __half2float(__ushort_as_half((unsigned short)(r.w[e / 2] >> (16 * (e & 1)))));
}

/* The Q8_0 cache (tcu_attention_split_q8): a lane's EPL consecutive int8 of a row (EPL 2, 4 or 8: within
 * one 32-block) packed in words (element e in byte e % 4 of word e / 4), and that block's f32 scale. An
 * element is (float)q * d, exact in f32 (8-bit q times an f16 d). */
template <int EPL> struct att_raw8 { uint32_t w[(EPL + 3) / 4]; float d; };

template <int EPL>
__device__ __forceinline__ void att_load(att_raw8<EPL> &r, const int8_t *__restrict__ p, const uint16_t *__restrict__ sc) {
    if constexpr (EPL == 8) {
        const uint2 x = *(const uint2 *)p;
        r.w[0] = x.x; r.w[1] = x.y;
    } else if constexpr (EPL == 4) {
        r.w[0] = *(const uint32_t *)p;
    } else if constexpr (EPL == 2) {
        r.w[0] = *(const unsigned short *)p;
    } else {
#pragma unroll
        for (int i = 0; i < (EPL + 3) / 4; i++) r.w[i] = 0u;
#pragma unroll
        for (int e = 0; e < EPL; e++) r.w[e / 4] |= (uint32_t)(uint8_t)p[e] << (8 * (e % 4));
    }
    r.d = __half2float(__ushort_as_half(*sc));
}

template <int EPL> __device__ __forceinline__ void att_zero(att_raw8<EPL> &r) {
#pragma unroll
    for (int i = 0; i < (EPL + 3) / 4; i++) r.w[i] = 0u;
    r.d = 0.0f;
}

template <int EPL> __device__ __forceinline__ float att_elem(const att_raw8<EPL> &r, int e) {
    return __fmul_rn((float)(int8_t)(r.w[e / 4] >> (8 * (e % 4))), r.d);
}

/* The transposing kernel's element reads: an f16 element as is; a Q8_0 element unscaled (the int8 as
 * f32), its block scale applied once per row a lane (att_row_scale) instead of once per element. */
template <int EPL> __device__ __forceinline__ float att_elem_u(const att_raw<EPL> &r, int e) { return att_elem<EPL>(r, e); }
template <int EPL> __device__ __forceinline__ float att_elem_u(const att_raw8<EPL> &r, int e) {
    return (float)(int8_t)(r.w[e / 4] >> (8 * (e % 4)));
}
template <int EPL> __device__ __forceinline__ float att_row_scale(const att_raw<EPL> &r, float x) { (void)r; return x; }
template <int EPL> __device__ __forceinline__ float att_row_scale(const att_raw8<EPL> &r, float x) { return x * r.d; }

/* The raw K/V slice type of a lane: f16 (Q8 = 0) or Q8_0 (Q8 = 1). */
template <int EPL, int Q8> struct att_kv { typedef att_raw<EPL> raw; };
template <int EPL> struct att_kv<EPL, 1> { typedef att_raw8<EPL> raw; };

__device__ __forceinline__ float att_warp_sum(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

/* Rows per warp batch: 16 f16 per lane per K (and V) batch, so 2 KiB of loads in flight per warp (hd 64:
 * 8 rows; hd 256: 2), except hd 128: 8 rows, 4 KiB (128 registers at QH = 4, no spill; measured on the H200,
 * Llama-3-8B Q4_0: 4 -> 8 rows took tg64 at depth 32768 from 183.9 to 205.5 tok/s, at 4096 from 325.9 to
 * 336.2, at depth 0 426.6 -> 423.5; docs/ledger.md); hd = 32 stops at 4 rows (8 spilled bytes at QH = 3
 * with 8: the QH * U scores live in registers too). */
template <int EPL> struct att_batch { static constexpr int U = EPL >= 8 ? 2 : EPL >= 4 ? 8 : EPL >= 2 ? 8 : 4; };

/* grid (n, n_head_kv * n_chunk), block NW*32 (NW a multiple of ATT_RED_SLOTS, <= ATT_MAX_WARPS).
 * Chunk c of KV head hk serves query heads hk*G + c*QH + g, g < QH, those < (hk+1)*G (G = group size). */
/* Power-of-two ceiling of QH (1, 2, 4) and log2 of small powers of two, for the transposing reduction. */
template <int N> struct att_pow2 { static constexpr int v = N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : N <= 8 ? 8 : N <= 16 ? 16 : 32; };
template <int N> struct att_log2 { static constexpr int v = N <= 1 ? 0 : 1 + att_log2<N / 2>::v; };
template <> struct att_log2<1> { static constexpr int v = 0; };

/* Sum of P (a power of two <= 32) per-lane values over the warp, "transposing": at the level of xor offset o
 * a lane keeps the half of its values that its bit o selects and adds its partner's copy of that half, so
 * P - 1 shuffles in all (not 5 P); levels past log2 P are plain xor sums. Returns, in every lane, the full
 * sum of value index lane >> (5 - log2 P) (the lane's top log2 P bits, in order). The order of additions
 * is fixed by the lane, so the result is deterministic. */
template <int N, int O> struct att_tlevel { /* one level (N values left, xor offset O), then the next */
    static __device__ __forceinline__ void run(float *v, int lane) {
        const bool hi = (lane & O) != 0;
#pragma unroll
        for (int i = 0; i < N / 2; i++) {
            const float send = hi ? v[i] : v[i + N / 2], keep = hi ? v[i + N / 2] : v[i];
            v[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
        }
        att_tlevel<N / 2, O / 2>::run(v, lane);
    }
};
template <int O> struct att_tlevel<1, O> {
    static __device__ __forceinline__ void run(float *v, int lane) { (void)v; (void)lane; }
};
template <int N> struct att_tlevel<N, 0> { /* the lanes are used up: N values stay a lane (att_tsum_group) */
    static __device__ __forceinline__ void run(float *v, int lane) { (void)v; (void)lane; }
};
template <> struct att_tlevel<1, 0> {
    static __device__ __forceinline__ void run(float *v, int lane) { (void)v; (void)lane; }
};
template <int P> __device__ __forceinline__ float att_transpose_sum(float (&v)[P], int lane) {
    att_tlevel<P, 16>::run(v, lane);
    float r = v[0];
#pragma unroll
    for (int o = 16 / P; o > 0; o >>= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
    return r;
}

/* Splits a token at n_kv keys uses out of the engine's SZ under the split rule rps (tcu.h tcu_att_splits, which
 * exec.c's att_need counts with too). A function of the token's position only, so a token's bits in any call. */
static __device__ __forceinline__ int att_active_splits(int n_kv, int SZ, int rps) {
    return tcu_att_splits(n_kv, SZ, rps);
}

/* A lane's K and V slices of one row from its ring slots (PF): f16, or Q8_0 with its block's scale in the
 * low (hs = 0) or high half of the copied scale word. */
template <int EPL>
__device__ __forceinline__ void att_sload(att_raw<EPL> &k, att_raw<EPL> &v, const uint8_t *sk, const uint8_t *sv,
                                          const uint8_t *, const uint8_t *, int) {
#pragma unroll
    for (int i = 0; i < (EPL + 1) / 2; i++) {
        k.w[i] = ((const uint32_t *)sk)[i];
        v.w[i] = ((const uint32_t *)sv)[i];
    }
}
template <int EPL>
__device__ __forceinline__ void att_sload(att_raw8<EPL> &k, att_raw8<EPL> &v, const uint8_t *sk, const uint8_t *sv,
                                          const uint8_t *sks, const uint8_t *svs, int hs) {
#pragma unroll
    for (int i = 0; i < (EPL + 3) / 4; i++) {
        k.w[i] = ((const uint32_t *)sk)[i];
        v.w[i] = ((const uint32_t *)sv)[i];
    }
    k.d = __half2float(__ushort_as_half((unsigned short)(*(const uint32_t *)sks >> (16 * hs))));
    v.d = __half2float(__ushort_as_half((unsigned short)(*(const uint32_t *)svs >> (16 * hs))));
}

/* ---- PF: a warp's next batch of K/V rows in flight while it computes the current one ----
 * Each lane copies its own slice of the batch's rows (f16: 2*EPL bytes, Q8_0: EPL bytes and the 4-byte word
 * holding its block's f16 scale) into its warp's stage of a 2-stage shared-memory ring by cp.async, and
 * reads back only what it copied (cp.async.wait_group is per thread: no barrier). The values and the
 * operations on them are the register path's, so the bits are too. Motive: the loop issued a batch's loads
 * and waited one memory latency a batch (U rows); at depth a warp walks many batches (docs/ledger.md). */
template <int EPL, int Q8> struct att_pf {
    static constexpr int KB = Q8 ? EPL : 2 * EPL; /* bytes of a lane's slice of a row */
    static constexpr bool ok = Q8 ? (EPL == 4 || EPL == 8) : (EPL == 2 || EPL == 4 || EPL == 8);
    static constexpr int U = Q8 && EPL == 4 ? ATT_Q8_U : att_batch<EPL>::U;
    static constexpr int ROW = 2 * KB + (Q8 ? 8 : 0); /* a lane's bytes of one row: K, V (and 2 scale words) */
    static constexpr size_t WARP = (size_t)2 * U * 32 * ROW;
};
template <int N> __device__ __forceinline__ void att_cp(void *dst, const void *src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"((uint32_t)__cvta_generic_to_shared(dst)), "l"(src),
                 "n"(N)
                 : "memory");
}
__device__ __forceinline__ void att_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/* "memory": the shared-memory reads after it are not moved above it */
template <int N> __device__ __forceinline__ void att_wait(void) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* The end of a decode CTA (v2, v5), in two parts.
 * att_cta_ml: lane 0 of warp w puts its heads' running (m, l) in sm_m[w], sm_l[w]; after a barrier thread g < QH
 * folds the nw warps in warp order into (M, L) = (sm_ML[0][g], sm_ML[1][g]) (max, then sum of l e^(m - M),
 * empty warps skipped), once a CTA; a second barrier publishes them. With S > 1 splits thread 0 also writes
 * (M, L) of the CTA's real heads to the workspace slot the combine kernel reads. */
template <int QH, int NWM>
__device__ __forceinline__ void att_cta_ml(float (&sm_m)[NWM][QH], float (&sm_l)[NWM][QH], float (&sm_ML)[2][QH],
                                           const float (&m)[QH], const float (&l)[QH], int nw, int w, int lane,
                                           float *__restrict__ ws, int n, int n_head, int SZ, int HD, int t, int h0,
                                           int n_real, int S, int z) {
    if (lane == 0) {
#pragma unroll
        for (int g = 0; g < QH; g++) { sm_m[w][g] = m[g]; sm_l[w][g] = l[g]; }
    }
    __syncthreads();
    /* each head's (M, L) once, by thread g, in warp order (every thread computed all of them before: QH * NW
     * expf a thread; the same operations in the same order, so the same bits) */
    if ((int)threadIdx.x < QH) {
        const int g = (int)threadIdx.x;
        float M = -INFINITY;
        for (int i = 0; i < nw; i++) M = fmaxf(M, sm_m[i][g]);
        float L = 0.0f;
        for (int i = 0; i < nw; i++) L += sm_m[i][g] == -INFINITY ? 0.0f : sm_l[i][g] * expf(sm_m[i][g] - M);
        sm_ML[0][g] = M;
        sm_ML[1][g] = L;
        if (S > 1 && g < n_real) {
            float *ml = ws + (size_t)n * n_head * SZ * HD;
            const size_t slot = ((size_t)t * n_head + (size_t)(h0 + g)) * SZ + z;
            ml[2 * slot] = M;
            ml[2 * slot + 1] = L;
        }
    }
    __syncthreads();
}
/* The factor of a warp's accumulator for a head whose warp max is mg: e^(mg - M), divided by L when the CTA is
 * the token's only split (S = 1: the output itself); 0 for an empty warp. L >= 1 whenever row 0 is visible
 * (pos[t] >= 0); a negative pos gives zeros, not NaN. */
__device__ __forceinline__ float att_warp_factor(float mg, float M, float L, int S) {
    return mg == -INFINITY || L == 0.0f ? 0.0f : S > 1 ? expf(mg - M) : expf(mg - M) / L;
}

/* att_cta_out: red (NSLOT, QH, HD) holds the CTA's partial outputs; element (g, d) is their sum in slot order,
 * written to the workspace (S > 1, unnormalised) or to out (and the O GEMV's x16 input when xq). Heads g with
 * h0 + g past the group (g >= n_real) are skipped. A warp's 32 values are one 32-element block of one head (HD
 * and blockDim multiples of 32), as x16_put needs. */
template <int NSLOT, int QH, int HD>
__device__ __forceinline__ void att_cta_out(const float (&red)[NSLOT][QH][HD], float *__restrict__ out,
                                            float *__restrict__ ws, void *__restrict__ xq, size_t plane, int n_head,
                                            int SZ, int t, int h0, int n_real, int S, int z, int lane) {
    for (int i = threadIdx.x; i < QH * HD; i += blockDim.x) {
        const int g = i / HD, d = i % HD;
        if (g >= n_real) continue;
        float o = red[0][g][d];
#pragma unroll
        for (int k = 1; k < NSLOT; k++) o += red[k][g][d];
        if (S > 1) ws[(((size_t)t * n_head + (size_t)(h0 + g)) * SZ + z) * HD + d] = o;
        else {
            const size_t e = ((size_t)t * n_head + (size_t)(h0 + g)) * HD + d;
            out[e] = o;
            if (xq) att_put(o, lane, (int64_t)e, xq, plane);
        }
    }
}

/* The split kernel's rows: a token at position p (its keys [jw, p], jw = att_first) takes S = att_active_splits of
 * the grid's SZ, and split z reads rows [r0, r1) (the whole range when S = 1; none when z >= S), logical. */
struct att_span { int S, r0, r1; };
static __device__ __forceinline__ att_span att_span_of(int p, int win, int SZ, int rps, int z) {
    const int jw = att_first(p, win), n_kv = p + 1 - jw, S = att_active_splits(n_kv, SZ, rps);
    return {S, jw + (int)((int64_t)n_kv * z / S), jw + (int)((int64_t)n_kv * (z + 1) / S)};
}

/* The combine kernel's fold of a (token, head)'s S split partials (M_z, L_z) (attention_combine_kernel and MS's
 * att_ms_merge share it: the same operations in the same order): M = max M_z, e_z = e^(M_z - M) (0 for an empty
 * split) into e[z * es], and L = sum L_z e_z in split order, returned. m and l are read at z * ms. */
static __device__ __forceinline__ float att_comb_fold(const float *m, const float *l, int ms, float *e, int es, int S) {
    float M = -INFINITY;
    for (int z = 0; z < S; z++) M = fmaxf(M, m[z * ms]);
    float L = 0.0f;
    for (int z = 0; z < S; z++) {
        const float ez = m[z * ms] == -INFINITY ? 0.0f : expf(m[z * ms] - M);
        e[z * es] = ez;
        L += m[z * ms] == -INFINITY ? 0.0f : l[z * ms] * ez;
    }
    return L;
}

/* The merge after the split kernel's loop: the CTA's NV virtual warps' (m, l, acc) in a fixed order, for ZS splits at
 * once (the rule: ZS = 1, the CTA's own split z; MS: ZS = S, split zi's virtual warp v in slot zi * NV + v of sm_m,
 * sm_l, sm_f and vacc, (M, L) of split zi in sm_ml[zi]). Per split: e^(m_v - M) of each (virtual warp, head) on a thread
 * of its own (M by every such thread, the same fold), then thread g sums the terms l_v e^(m_v - M) in warp order (four
 * threads with NV serial exps each had held the CTA at a barrier: docs/ledger.md 2026-12-06 "the decode attention's
 * merge by (virtual warp, head)", the same bits), the factors (/ L when S = 1: the output itself; 0 for an empty warp),
 * then element (g, d)'s slot sum, slot s = acc_s f_s + acc_{s+8} f_{s+8} (NV = 16), the slots in order s = 0..7. Where
 * it goes: S = 1, out (and xq); S > 1, the rule writes (M, L) and the unnormalised partial to the workspace slot of the
 * combine kernel, MS keeps the partial in place of split zi's virtual warp 0's accumulator (read by this thread alone).
 * A warp's 32 values are one 32-element block of one head (HD and blockDim multiples of 32), as x16_put needs. */
template <int QH, int HD, int MS>
__device__ __forceinline__ void att_vw_merge(float (*sm_m)[QH], float (*sm_l)[QH], float (*sm_f)[QH],
                                             float (*sm_ml)[2][QH], float *__restrict__ vacc, int NV, int ZS, int S,
                                             int t, int h0, int n_real, int n_head, int n, int SZ, int z,
                                             float *__restrict__ ws, float *__restrict__ out, void *__restrict__ xq,
                                             size_t plane, int lane) {
    for (int i = (int)threadIdx.x; i < ZS * NV * QH; i += (int)blockDim.x) {
        const int zi = MS ? i / (NV * QH) : 0, vv = MS ? i / QH % NV : i / QH, g = i % QH, b = zi * NV;
        float M = -INFINITY;
        for (int k = 0; k < NV; k++) M = fmaxf(M, sm_m[b + k][g]);
        sm_f[b + vv][g] = sm_m[b + vv][g] == -INFINITY ? 0.0f : expf(sm_m[b + vv][g] - M);
        if (vv == 0) sm_ml[zi][0][g] = M;
    }
    __syncthreads();
    if ((int)threadIdx.x < ZS * QH) {
        const int zi = MS ? (int)threadIdx.x / QH : 0, g = MS ? (int)threadIdx.x % QH : (int)threadIdx.x, b = zi * NV;
        const float M = sm_ml[zi][0][g];
        float L = 0.0f;
        for (int i = 0; i < NV; i++)
            L = __fadd_rn(L, sm_m[b + i][g] == -INFINITY ? 0.0f : __fmul_rn(sm_l[b + i][g], sm_f[b + i][g]));
        sm_ml[zi][1][g] = L;
        if (!MS && S > 1 && g < n_real) {
            float *ml = ws + (size_t)n * n_head * SZ * HD;
            const size_t sl = ((size_t)t * n_head + (size_t)(h0 + g)) * SZ + z;
            ml[2 * sl] = M;
            ml[2 * sl + 1] = L;
        }
    }
    __syncthreads();
    for (int i = (int)threadIdx.x; i < ZS * NV * QH; i += (int)blockDim.x) {
        const int zi = MS ? i / (NV * QH) : 0, vv = MS ? i / QH % NV : i / QH, g = i % QH, b = zi * NV;
        const float L = sm_ml[zi][1][g];
        sm_f[b + vv][g] = sm_m[b + vv][g] == -INFINITY || L == 0.0f ? 0.0f : S > 1 ? sm_f[b + vv][g] : sm_f[b + vv][g] / L;
    }
    __syncthreads();
    for (int i = (int)threadIdx.x; i < ZS * QH * HD; i += (int)blockDim.x) {
        const int zi = MS ? i / (QH * HD) : 0, g = MS ? i / HD % QH : i / HD, d = i % HD, b = zi * NV;
        if (g >= n_real) continue;
        float o = 0.0f;
#pragma unroll
        for (int s = 0; s < ATT_RED_SLOTS; s++) {
            float a = __fmul_rn(vacc[((size_t)(b + s) * QH + g) * HD + d], sm_f[b + s][g]);
            for (int r = 1; r < NV / ATT_RED_SLOTS; r++) {
                const int vv = s + r * ATT_RED_SLOTS;
                a = __fadd_rn(a, __fmul_rn(vacc[((size_t)(b + vv) * QH + g) * HD + d], sm_f[b + vv][g]));
            }
            o = s == 0 ? a : __fadd_rn(o, a);
        }
        if (S > 1) {
            if (MS) vacc[((size_t)b * QH + g) * HD + d] = o;
            else ws[(((size_t)t * n_head + (size_t)(h0 + g)) * SZ + z) * HD + d] = o;
        } else {
            const size_t e = ((size_t)t * n_head + (size_t)(h0 + g)) * HD + d;
            out[e] = o;
            if (xq) att_put(o, lane, (int64_t)e, xq, plane);
        }
    }
}

/* MS (attention_split_kernel's last argument): one CTA runs all S of a token's splits (S <= ATT_MS_MAX), then does
 * what S split CTAs and the combine kernel do after their loops, in the same order, so the same bits: each split's
 * merge (att_vw_merge with ZS = S), then the combine kernel's fold of the S partials (att_comb_fold) and its sum. Why:
 * a decode step of many tokens launches S CTAs a (token, KV head, head chunk) and a combine kernel; at depth ~512 (3
 * splits) and 16 tokens the rule's 384 CTAs run 4 physical warps each, ~12 warps an SM, while one split a token (keys a
 * split 1024) ran B = 16 +6.7% and B = 64 +7.9% with other bits (docs/ledger.md 2026-12-06 "the one-split bound under
 * fit"). */
template <int QH, int HD>
__device__ __forceinline__ void att_ms_merge(float (*sm_m)[QH], float (*sm_l)[QH], float (*sm_f)[QH],
                                             float *__restrict__ vacc, int NV, int S, int t, int h0, int n_real,
                                             int n_head, float *__restrict__ out, void *__restrict__ xq, size_t plane,
                                             int lane) {
    __shared__ float sm_zml[ATT_MS_MAX][2][QH], sm_e[ATT_MS_MAX][QH], sm_cl[QH];
    att_vw_merge<QH, HD, 1>(sm_m, sm_l, sm_f, sm_zml, vacc, NV, S, S, t, h0, n_real, n_head, 0, 0, 0, NULL, out, xq,
                            plane, lane);
    if (S == 1) return; /* CTA-uniform */
    __syncthreads();
    const int tid = (int)threadIdx.x;
    if (tid < QH) /* the combine kernel's weights and L, a head */
        sm_cl[tid] = att_comb_fold(&sm_zml[0][0][tid], &sm_zml[0][1][tid], 2 * QH, &sm_e[0][tid], QH, S);
    __syncthreads();
    for (int i = tid; i < QH * HD; i += (int)blockDim.x) { /* the combine kernel's sum: partials in split order, / L */
        const int g = i / HD, d = i % HD;
        if (g >= n_real) continue;
        const float L = sm_cl[g];
        float o = 0.0f;
        for (int z = 0; z < S; z++)
            if (sm_zml[z][0][g] != -INFINITY) o = fmaf(vacc[((size_t)z * NV * QH + g) * HD + d], sm_e[z][g], o);
        const float r = L == 0.0f ? 0.0f : o / L;
        const size_t e = ((size_t)t * n_head + (size_t)(h0 + g)) * HD + d;
        out[e] = r;
        if (xq) att_put(r, lane, (int64_t)e, xq, plane);
    }
}

/* PF = 1: the K/V prefetch ring (over a Q8_0 cache only: over f16 it lost, docs/ledger.md 2026-11-30 at one token and
 * 2026-12-06 "the decode attention's merge by (virtual warp, head)" at 64). PG = 1: rows through
 * block tables (kv.cuh), PG = 0 the identity (bt unused): an instantiation of its own, since a table lookup on every
 * row's address cost the f16 kernel 13% at depth 32768 (H200, 16 splits: 56.7 vs 48.8-50.9 us) even with bt NULL. */
template <int EPL, int QH, int Q8, int PF, int PG, int MS>
__global__ void __launch_bounds__(ATT_MAX_WARPS * 32)
attention_split_kernel(const float *__restrict__ q, const void *__restrict__ kc, const void *__restrict__ vc,
                       const uint16_t *__restrict__ ks, const uint16_t *__restrict__ vs,
                       int n, const int32_t *__restrict__ pos, int n_head, int n_head_kv, float scale,
                       float *__restrict__ out, int n_chunk, float *__restrict__ ws, void *__restrict__ xq,
                       size_t plane, int rps, const int32_t *__restrict__ bt, const int32_t *__restrict__ bt_off,
                       int lbs, int win, int cfg) {
    constexpr int HD = EPL * 32, U = Q8 && EPL == 4 ? ATT_Q8_U : att_batch<EPL>::U;
    static_assert(!PF || Q8, "the prefetch ring: over a Q8_0 cache only");
    static_assert(!MS || (!Q8 && !PF), "a token's splits in one CTA: over an f16 cache");
    /* MS: (split, virtual warp) slots, split zi's virtual warp v at zi * NV + v */
    constexpr int ZM = MS ? ATT_MS_MAX : 1;
    __shared__ float sm_m[ZM * ATT_MAX_WARPS][QH], sm_l[ZM * ATT_MAX_WARPS][QH], sm_ML[2][QH],
        sm_f[ZM * ATT_MAX_WARPS][QH];
    pdl_trigger();
    pdl_wait();

    const int t = n - 1 - (int)blockIdx.x; /* longest rows first */
    const int hk = (int)blockIdx.y / n_chunk, c = (int)blockIdx.y % n_chunk;
    const int G = n_head / n_head_kv;
    /* NV virtual warps (the bits: warp v's batches v, v + NV, ..., their fold), run by the CTA's NWP physical warps,
     * physical warp w taking v = w, w + NWP, ... one after the other (att_cfg) */
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, NWP = blockDim.x >> 5, NV = cfg & ATT_CFG_NV;
    /* SZ: the engine's splits (cfg; the workspace's stride, the grid's z or more); S: this token's
     * (att_active_splits). A CTA past S has no rows (CTA-uniform exit, after its PDL wait) */
    const int SZ = MS ? (cfg >> ATT_CFG_SZ_SHIFT) & 0xFF : cfg >> ATT_CFG_SZ_SHIFT, z = (int)blockIdx.z;
    const att_span sp = att_span_of(pos[t], win, SZ, rps, z);
    const int S = sp.S;
    if (z >= S) return;
    /* MS: a token's splits past the launch's (a caller's TCU_ATT_FIT count below its deepest token's) would run past
     * the shared memory; the rule would leave them out (a wrong output), MS stops the launch */
    if (MS && S > (cfg >> ATT_CFG_SL_SHIFT)) __trap();
    /* this CTA's rows (v2 split z of S), logical; tb: the token's block table */
    const int r1 = sp.r1; /* the ring's bound (PF: never with MS) */
    const int32_t *tb = PG ? kv_table(bt, bt_off, t) : NULL;
    const size_t stride = (size_t)n_head_kv * HD; /* elements between cache rows */
    const uint16_t *kb = (const uint16_t *)kc + (size_t)hk * HD + lane * EPL;
    const uint16_t *vb = (const uint16_t *)vc + (size_t)hk * HD + lane * EPL;
    /* Q8: int8 rows of the same element stride, and the lane's block scale (stride / 32 scales a row) */
    const int8_t *kb8 = (const int8_t *)kc + (size_t)hk * HD + lane * EPL;
    const int8_t *vb8 = (const int8_t *)vc + (size_t)hk * HD + lane * EPL;
    const size_t sstride = stride / 32, soff = ((size_t)hk * HD + lane * EPL) / 32;

    float qr[QH][EPL];
#pragma unroll
    for (int g = 0; g < QH; g++) {
        const int gi = c * QH + g; /* index within the group */
        const float *qp = q + ((size_t)t * n_head + (size_t)hk * G + gi) * HD + lane * EPL;
#pragma unroll
        for (int e = 0; e < EPL; e++) qr[g][e] = gi < G ? qp[e] : 0.0f;
    }
    /* the scores of a batch (QHP heads x U rows, padded to a power of two) are summed by one
     * transposing reduction, after which lane l holds score (head g_l, row u_l) and computes that score's
     * exp alone; per-lane running max mL (of its head) and partial sum lL (of its slot) */
    constexpr int QHP = att_pow2<QH>::v, P = QHP * U, LP = att_log2<P>::v, REP = 32 / P;
    static_assert(P <= 32, "the transposing reduction takes at most 32 scores a batch (QHP * U)");
    const int slot = lane >> (5 - LP), gl = slot / U, ul = slot % U;

    /* PF: stage st of this warp's ring: K [U][32][KB], V [U][32][KB], then (Q8) K and V scale words [U][32] */
    extern __shared__ __align__(16) uint8_t att_sm[];
    constexpr int KB = att_pf<EPL, Q8>::KB;
    uint8_t *ring = att_sm + (size_t)w * att_pf<EPL, Q8>::WARP;
    /* the virtual warps' raw accumulators [NV][QH][HD], after the physical warps' rings */
    float *vacc = (float *)(att_sm + (PF ? (size_t)NWP * att_pf<EPL, Q8>::WARP : 0));
    auto pfs = [&](int st, int part, int u, int bytes) -> uint8_t * { /* part 0 K, 1 V, 2 K scale, 3 V scale */
        uint8_t *base = ring + (size_t)st * U * 32 * att_pf<EPL, Q8>::ROW;
        return base + (part < 2 ? part * U * 32 * KB + (u * 32 + lane) * bytes
                                : 2 * U * 32 * KB + (part - 2) * U * 32 * 4 + (u * 32 + lane) * 4);
    };
    auto issue = [&](int jb, int st) {
        if constexpr (PF) {
#pragma unroll
            for (int u = 0; u < U; u++)
                if (jb + u < r1) {
                    const size_t row = (size_t)(PG ? kv_row(tb, lbs, jb + u) : jb + u);
                    att_cp<KB>(pfs(st, 0, u, KB), kb8 + row * stride);
                    att_cp<KB>(pfs(st, 1, u, KB), vb8 + row * stride);
                    att_cp<4>(pfs(st, 2, u, 4), (const void *)((uintptr_t)(ks + row * sstride + soff) & ~(uintptr_t)3));
                    att_cp<4>(pfs(st, 3, u, 4), (const void *)((uintptr_t)(vs + row * sstride + soff) & ~(uintptr_t)3));
                }
            att_commit();
        }
    };
    /* MS: the CTA runs all S of the token's splits, item it = v * S + zi being split zi's virtual warp v (v-major: the
     * virtual warps with the most batches, the low v of every split, come first and spread over the physical warps) */
    const int NI = MS ? S * NV : NV;
    for (int it = w; it < NI; it += NWP) {
    const int v = MS ? it / S : it, zi = MS ? it % S : 0, vs0 = zi * NV + v; /* vs0: the item's shared-memory slot */
    const att_span si = MS ? att_span_of(pos[t], win, SZ, rps, zi) : sp;
    const int rb = si.r0, re = si.r1; /* the item's rows (the CTA's r0, r1 without MS) */
    float acc[QH][EPL], m[QH], l[QH];
#pragma unroll
    for (int g = 0; g < QH; g++) {
#pragma unroll
        for (int e = 0; e < EPL; e++) acc[g][e] = 0.0f;
        m[g] = -INFINITY;
        l[g] = 0.0f;
    }
    float mL = -INFINITY, lL = 0.0f;
    int st = 0;
    if constexpr (PF) {
        if (rb + v * U < re) issue(rb + v * U, 0);
    }
    /* PG, the register path: a table load a row before its K/V loads. Measured (H200, 32/8 heads hd 128, one token, 16
     * splits): 60 us at depth 32767 with pages of 16 or 128 rows against the identity's 50; the two pages of a batch
     * loaded a batch ahead instead ran 92 us (not understood; no spills). The lever left: fewer dependent loads a
     * batch (a lane a row and shuffles), or the Q8_0 kernels' cp.async ring. */
    for (int j0 = rb + v * U; j0 < re; j0 += NV * U, st ^= 1) { /* warp-uniform: row j0 is visible */
        typename att_kv<EPL, Q8>::raw kr[U], vr[U];
        if constexpr (PF) {
            if (j0 + NV * U < re) {
                issue(j0 + NV * U, st ^ 1);
                att_wait<1>();
            } else {
                att_wait<0>();
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (PF && j0 + u < re) {
                /* sstride is even here (hd >= 128): the half of the scale word is soff's whatever the (logical or
                 * physical) row */
                if constexpr (PF) att_sload<EPL>(kr[u], vr[u], pfs(st, 0, u, KB), pfs(st, 1, u, KB), pfs(st, 2, u, 4),
                                                 pfs(st, 3, u, 4), (int)(((size_t)(j0 + u) * sstride + soff) & 1));
            } else if (j0 + u < re) {
                const size_t row = (size_t)(PG ? kv_row(tb, lbs, j0 + u) : j0 + u);
                if constexpr (Q8) {
                    att_load<EPL>(kr[u], kb8 + row * stride, ks + row * sstride + soff);
                    att_load<EPL>(vr[u], vb8 + row * stride, vs + row * sstride + soff);
                } else {
                    att_load<EPL>(kr[u], kb + row * stride);
                    att_load<EPL>(vr[u], vb + row * stride);
                }
            } else {
                att_zero<EPL>(kr[u]);
                att_zero<EPL>(vr[u]);
            }
        }
        float pv[P];
#pragma unroll
        for (int g = 0; g < QHP; g++)
#pragma unroll
            for (int u = 0; u < U; u++) {
                float d = 0.0f;
                if (g < QH) {
#pragma unroll
                    for (int e = 0; e < EPL; e++) d = fmaf(qr[g < QH ? g : 0][e], att_elem_u<EPL>(kr[u], e), d);
                }
                pv[g * U + u] = att_row_scale<EPL>(kr[u], d); /* Q8_0: the lane's block scale, once */
            }
        const float dsum = att_transpose_sum<P>(pv, lane);
        const float sc = gl < QH && j0 + ul < re ? dsum * scale : -INFINITY;
        float mx = sc;
#pragma unroll
        for (int o = REP; o < U * REP; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        mx = fmaxf(mL, mx);
        /* mx is finite for a real head (row j0 is visible); the guard keeps exp(-inf - -inf) away */
        const float corr = mL == -INFINITY || mx == -INFINITY ? 0.0f : expf(mL - mx);
        const float p = sc == -INFINITY ? 0.0f : expf(sc - mx);
        lL = lL * corr + p;
        mL = mx;
#pragma unroll
        for (int g = 0; g < QH; g++) {
            const float cg = __shfl_sync(0xffffffffu, corr, g * U * REP);
#pragma unroll
            for (int e = 0; e < EPL; e++) acc[g][e] *= cg;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const float pg = att_row_scale<EPL>(vr[u], __shfl_sync(0xffffffffu, p, (g * U + u) * REP));
#pragma unroll
                for (int e = 0; e < EPL; e++) acc[g][e] = fmaf(pg, att_elem_u<EPL>(vr[u], e), acc[g][e]);
            }
        }
    }

    { /* each head's (m, l) from its lanes: l summed over its U distinct slots */
        float ls = lL;
#pragma unroll
        for (int o = REP; o < U * REP; o <<= 1) ls += __shfl_xor_sync(0xffffffffu, ls, o);
#pragma unroll
        for (int g = 0; g < QH; g++) {
            m[g] = __shfl_sync(0xffffffffu, mL, g * U * REP);
            l[g] = __shfl_sync(0xffffffffu, ls, g * U * REP);
        }
    }
    /* virtual warp v's (m, l) and raw accumulators to shared memory */
    if (lane == 0) {
#pragma unroll
        for (int g = 0; g < QH; g++) { sm_m[vs0][g] = m[g]; sm_l[vs0][g] = l[g]; }
    }
#pragma unroll
    for (int g = 0; g < QH; g++)
#pragma unroll
        for (int e = 0; e < EPL; e++) vacc[((size_t)vs0 * QH + g) * HD + lane * EPL + e] = acc[g][e];
    } /* the virtual warps */
    __syncthreads();
    if constexpr (MS) {
        att_ms_merge<QH, HD>(sm_m, sm_l, sm_f, vacc, NV, S, t, hk * G + c * QH, G - c * QH < QH ? G - c * QH : QH,
                             n_head, out, xq, plane, lane);
        return;
    }
    /* the rule: this CTA's split z, its (M, L) and partial to the workspace (S > 1) or the output itself */
    const int h0 = hk * G + c * QH, n_real = G - c * QH < QH ? G - c * QH : QH; /* the CTA's first head, real heads */
    att_vw_merge<QH, HD, 0>(sm_m, sm_l, sm_f, &sm_ML, vacc, NV, 1, S, t, h0, n_real, n_head, n, SZ, z, ws, out, xq, plane,
                            lane);
}

/* ---- v5: the Q8_0-cache decode kernel with 16-byte lane slices ------------------------------------
 * v2's transposing kernel over a Q8_0 cache gives a lane EPL = hd/32 int8 of every row (4 bytes at hd 128),
 * so a row costs a lane 4 memory instructions (K, V, two scale words; 8 with the ring) for 8 bytes, and ncu
 * put that kernel at 75% of L1/TEX throughput with DRAM at 20% (docs/ledger.md, 2026-11-30). Here a lane
 * owns 16 consecutive int8 of one row (lane = r * SL + s: slice s of SL = hd/16 a row, row r of the RW =
 * 32/SL rows one warp-wide load covers), so one 16-byte copy a lane moves RW rows of K for the warp, and the
 * lane's 16 elements lie in one 32-element block: one scale a lane a row. A batch is B such loads (BR = B*RW
 * rows), B = SL / QHP (at most 4), so the SL lanes of a row hold B x QHP partial dots that one transposing
 * butterfly over those SL lanes turns into one score a lane (REP lanes a score when B x QHP < SL): lane
 * (r, s) ends with the score of row j0 + b*RW + r and head g, b*QHP + g = s / REP. Softmax as v2's TR path
 * (per-lane running max of its head over the warp, its slot's partial sum), p and the max's correction
 * reach the V FMAs by broadcast shuffles; the correction multiply is skipped when every real head's factor
 * is exactly 1 (x * 1.0f == x: the same bits as always doing it). int8 -> f32 by PRMT + FADD (exact:
 * 2^23 + (b + 128) as a float, minus 2^23 + 128). K/V and the scale words reach shared memory through a
 * per-warp NS-stage cp.async ring (rows past the CTA's last are zero-filled), each lane reading back only
 * what it copied (no barrier). At the end the RW row groups of a warp are summed by xor shuffles (lanes of
 * one orbit get the same bits: IEEE addition commutes), then the NW warps in order w = 0..NW-1. 8 warps a
 * CTA: q and the accumulators take 2 x QH x 16 registers a lane (128 at QH 4), so __launch_bounds__(256, 1)
 * lets a lane have up to 255. The same splits, workspace and combine as v2: a token's bits do not depend on
 * the call (the verify property). v2 (other bits) runs where a device refuses v5's shared memory.
 * Measured (H200, Llama-3-8B shape 32/8 heads hd 128, bench/gpu/att-q8w-a7ea0ef/): one launch at pos 32767 with
 * 16 splits 50.3 us against v2's 85.6 in gpu_attention's harness (ncu: 41.0 us against 76.3), pos 8191 24.2 vs
 * 35.0; end to end tg64 at depth 32768 228.2 -> 309.5 tok/s, 8192 359.2 -> 413.1, tg128 490.5 -> 504.1 (Q4_0
 * weights, Q8_0 cache, interleaved). Now issue-bound, not L1-bound: ncu 0.60 warps issued a cycle a scheduler
 * (2 warps a scheduler), DRAM 37%, ~656 SASS instructions an 8-row batch of which ~360 on the FP32 pipe (the
 * q.k and p.v FMAs for 4 heads, the int8 conversions) (bench/gpu/att-q8w-ncu-1a79245/). The next lever is the
 * tensor cores (q.k as an int8 mma on a quantized q, p.v as an f16 mma), not more bytes in flight. (But over the f16
 * cache that lever was built and lost: v7, the decode attention on mma.sync at ~10 instructions a row, ran at v2's
 * speed, which had read as issue-bound the same way; dev/cuda/attention_tc.cu, docs/ledger.md 2026-12-06 "the decode
 * attention on the tensor cores". Measure where v5's warps wait first: bench/gpu_check.sh attprof.) */
/* Ring stages a warp. 2..8 measured the same kernel time at depth 32768 and 8192 (48-51 us, 23-25 us in
 * gpu_attention's harness) and 6, 8 lost 1-4% end to end (bench/gpu/att-q8w-ns-e18ab91/; binaries of e18ab91
 * had the switch TERN_CUDA_ATT_Q8W_NS): not bytes-in-flight-bound. */
#define ATT_Q8W_NS 3
/* Warps a CTA: 8. 12 (+1.3..+3.2% at depth 32768, -2.2..-3.3% tg128) and 16-row batches (+0.2/+2.4%, -1.6/-1.0%)
 * were not adopted: the grid and block are fixed per decode graph (dev/cuda/attention_decode_arms.cu). */
#define ATT_Q8W_WARPS 8

template <int HD, int QH> struct att_q8w {
    static constexpr int NS_ = ATT_Q8W_NS, NW_ = ATT_Q8W_WARPS;
    static constexpr int SL = HD / 16, RW = 32 / SL, QHP = att_pow2<QH>::v;
    /* warp-wide loads a batch: SL / QHP (at most 4), so the butterfly leaves one score a lane */
    static constexpr int B = SL / QHP > 4 ? 4 : SL / QHP < 1 ? 1 : SL / QHP;
    /* P scores a row group; a lane ends with NV of them (P > SL), or one held by REP lanes (P < SL) */
    static constexpr int P = B * QHP, NV = P > SL ? P / SL : 1, REP = P < SL ? SL / P : 1, BR = B * RW, NS = NS_;
    static constexpr int O0 = REP * QHP / NV; /* xor offsets O0 .. 16 join the lanes holding one head's scores */
    static constexpr int KOFF = 0, VOFF = B * 32 * 16, SOFF = 2 * B * 32 * 16; /* a stage: K, V, scale words */
    static constexpr int STAGE = B * 32 * 40;
    static constexpr size_t WARP = (size_t)NS * STAGE, SMEM = (size_t)NW_ * WARP;
    static_assert(SL * RW == 32 && QHP % NV == 0, "a lane's NV scores are distinct heads of one warp-wide load");
};

/* cp.async of N bytes with zero fill when !ok (src-size 0: nothing is read; src must still be a valid address). */
template <int N> __device__ __forceinline__ void att_cpz(void *dst, const void *src, bool ok) {
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    if constexpr (N == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(N), "r"(ok ? N : 0)
                     : "memory");
}

/* int8 byte e of w as f32, exactly, without I2F: PRMT puts (byte ^ 0x80) = value + 128 under the exponent of
 * 2^23, one FADD takes 2^23 + 128 away. (float)(int8_t)byte for every byte value. */
__device__ __forceinline__ float att_i8f(uint32_t wx, int e) { /* wx = w ^ 0x80808080 */
    return __fsub_rn(__uint_as_float(__byte_perm(wx, 0x4Bu, 0x4650u | (uint32_t)e)), 8388736.0f);
}
__device__ __forceinline__ void att_i8f16(const uint4 &x, float (&f)[16]) {
    const uint32_t w[4] = {x.x ^ 0x80808080u, x.y ^ 0x80808080u, x.z ^ 0x80808080u, x.w ^ 0x80808080u};
#pragma unroll
    for (int e = 0; e < 16; e++) f[e] = att_i8f(w[e / 4], e % 4);
}

/* The transposing sum of att_transpose_sum within aligned groups of SL lanes: P <= SL values a lane leave in
 * v[0], in every lane, the group's sum of value index (lane % SL) / (SL / P); P > SL leave NV = P / SL sums
 * in v[0..NV-1], of value indices (lane % SL) * NV + k. */
template <int P, int SL> __device__ __forceinline__ void att_tsum_group(float (&v)[P], int lane) {
    att_tlevel<P, SL / 2>::run(v, lane);
#pragma unroll
    for (int o = SL / P / 2; o > 0; o >>= 1) v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
}

template <int HD, int QH, int PG>
__global__ void __launch_bounds__(ATT_Q8W_WARPS * 32, 1)
attention_q8w_kernel(const float *__restrict__ q, const void *__restrict__ kc, const void *__restrict__ vc,
                     const uint16_t *__restrict__ ks, const uint16_t *__restrict__ vs, int n,
                     const int32_t *__restrict__ pos, int n_head, int n_head_kv, float scale, float *__restrict__ out,
                     int n_chunk, float *__restrict__ ws, void *__restrict__ xq, size_t plane, int rps,
                     const int32_t *__restrict__ bt, const int32_t *__restrict__ bt_off, int lbs, int win,
                     int cfg) {
    /* cfg: the split kernel's virtual warps (not v5's), and the engine's splits SZ (ATT_CFG_SZ_SHIFT) */
    typedef att_q8w<HD, QH> C;
    constexpr int SL = C::SL, RW = C::RW, QHP = C::QHP, B = C::B, P = C::P, REP = C::REP, BR = C::BR, NS = C::NS;
    constexpr int NV = C::NV, O0 = C::O0;
    constexpr int NW = C::NW_;
    __shared__ float sm_m[NW][QH], sm_l[NW][QH], sm_ML[2][QH];
    __shared__ __align__(16) float red[NW][QH][HD];
    extern __shared__ __align__(16) uint8_t att_sm[];
    pdl_trigger();
    pdl_wait();

    const int t = n - 1 - (int)blockIdx.x; /* longest rows first */
    const int hk = (int)blockIdx.y / n_chunk, c = (int)blockIdx.y % n_chunk;
    const int G = n_head / n_head_kv;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, r = lane / SL, s = lane % SL;
    const int jw = att_first(pos[t], win), n_kv = pos[t] + 1 - jw, SZ = cfg >> ATT_CFG_SZ_SHIFT; /* keys [jw, pos] */
    const int S = att_active_splits(n_kv, SZ, rps), z = (int)blockIdx.z;
    if (z >= S) return;
    const int r0 = jw + (int)((int64_t)n_kv * z / S), r1 = jw + (int)((int64_t)n_kv * (z + 1) / S); /* logical rows */
    const int32_t *tb = PG ? kv_table(bt, bt_off, t) : NULL; /* the token's block table (PG: as v2's) */
    const size_t stride = (size_t)n_head_kv * HD, sstride = stride / 32; /* sstride is even (HD >= 64) */
    const int8_t *kb = (const int8_t *)kc + (size_t)hk * HD + s * 16;
    const int8_t *vb = (const int8_t *)vc + (size_t)hk * HD + s * 16;
    const size_t soff = (size_t)hk * (HD / 32) + s / 2; /* the lane's block in a scale row */
    const int hs = (int)(soff & 1);                     /* its half of the aligned scale word */
    const uint16_t *ksw = ks + (soff & ~(size_t)1), *vsw = vs + (soff & ~(size_t)1);

    float qr[QH][16], acc[QH][16];
#pragma unroll
    for (int g = 0; g < QH; g++) {
        const int gi = c * QH + g;
        const float4 *qp = (const float4 *)(q + ((size_t)t * n_head + (size_t)hk * G + gi) * HD + s * 16);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float4 x = gi < G ? qp[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            qr[g][4 * i] = x.x; qr[g][4 * i + 1] = x.y; qr[g][4 * i + 2] = x.z; qr[g][4 * i + 3] = x.w;
        }
#pragma unroll
        for (int e = 0; e < 16; e++) acc[g][e] = 0.0f;
    }
    /* this lane's scores after the butterfly: index (s / REP) * NV + k, i.e. warp-load bl, head gl + k, row
     * j0 + bl*RW + r (QHP % NV == 0: the NV are heads of one load) */
    const int il = (s / REP) * NV, bl = il / QHP, gl = il % QHP;
    float mL[NV], lL[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) mL[k] = -INFINITY, lL[k] = 0.0f;

    uint8_t *ring = att_sm + (size_t)w * C::WARP;
    auto issue = [&](int jb, int st) { /* batch at row jb (< r1) into stage st, as one commit group */
        uint8_t *sb = ring + (size_t)st * C::STAGE;
#pragma unroll
        for (int b = 0; b < B; b++) {
            const int j = jb + b * RW + r;
            const bool ok = j < r1;
            const size_t jr = (size_t)(PG ? kv_row(tb, lbs, ok ? j : jb) : ok ? j : jb); /* valid even when unread */
            att_cpz<16>(sb + C::KOFF + (b * 32 + lane) * 16, kb + jr * stride, ok);
            att_cpz<16>(sb + C::VOFF + (b * 32 + lane) * 16, vb + jr * stride, ok);
            att_cpz<4>(sb + C::SOFF + (b * 32 + lane) * 8, ksw + jr * sstride, ok);
            att_cpz<4>(sb + C::SOFF + (b * 32 + lane) * 8 + 4, vsw + jr * sstride, ok);
        }
        att_commit();
    };
#pragma unroll
    for (int i = 0; i < NS - 1; i++) { /* the prologue: NS - 1 batches in flight (empty groups past the end) */
        const int jb = r0 + (w + i * NW) * BR;
        if (jb < r1) issue(jb, i);
        else att_commit();
    }
    int st = 0;
    for (int j0 = r0 + w * BR; j0 < r1; j0 += NW * BR) { /* warp-uniform: row j0 is visible */
        {
            const int jn = j0 + (NS - 1) * NW * BR;
            const int sn = st == 0 ? NS - 1 : st - 1; /* (st + NS - 1) % NS: the stage read last iteration */
            if (jn < r1) issue(jn, sn);
            else att_commit();
        }
        att_wait<NS - 1>();
        const uint8_t *sb = ring + (size_t)st * C::STAGE;
        st = st + 1 == NS ? 0 : st + 1;
        float pv[P], dv[B];
#pragma unroll
        for (int b = 0; b < B; b++) {
            const uint4 kw = *(const uint4 *)(sb + C::KOFF + (b * 32 + lane) * 16);
            const uint2 sw = *(const uint2 *)(sb + C::SOFF + (b * 32 + lane) * 8);
            const float dk = __half2float(__ushort_as_half((unsigned short)(sw.x >> (16 * hs))));
            dv[b] = __half2float(__ushort_as_half((unsigned short)(sw.y >> (16 * hs))));
            float kf[16];
            att_i8f16(kw, kf);
#pragma unroll
            for (int g = 0; g < QHP; g++) {
                float d = 0.0f;
                if (g < QH) {
#pragma unroll
                    for (int e = 0; e < 16; e++) d = fmaf(qr[g < QH ? g : 0][e], kf[e], d);
                }
                pv[b * QHP + g] = d * dk; /* the block scale once a row a lane */
            }
        }
        att_tsum_group<P, SL>(pv, lane);
        float p[NV], corr[NV];
        bool any = false;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const float sc = gl + k < QH && j0 + bl * RW + r < r1 ? pv[k] * scale : -INFINITY;
            float mx = sc;
#pragma unroll
            for (int o = O0; o < 32; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            mx = fmaxf(mL[k], mx);
            /* mx is finite for a real head (row j0 is visible); the guard keeps exp(-inf - -inf) away */
            corr[k] = mL[k] == -INFINITY || mx == -INFINITY ? 0.0f : expf(mL[k] - mx);
            p[k] = sc == -INFINITY ? 0.0f : expf(sc - mx);
            lL[k] = lL[k] * corr[k] + p[k];
            mL[k] = mx;
            any |= gl + k < QH && corr[k] != 1.0f;
        }
        if (__any_sync(0xffffffffu, any)) {
#pragma unroll
            for (int g = 0; g < QH; g++) {
                const float cg = __shfl_sync(0xffffffffu, corr[g % NV], (g / NV) * REP);
#pragma unroll
                for (int e = 0; e < 16; e++) acc[g][e] *= cg;
            }
        }
#pragma unroll
        for (int b = 0; b < B; b++) {
            const uint4 vw = *(const uint4 *)(sb + C::VOFF + (b * 32 + lane) * 16);
            float vf[16];
            att_i8f16(vw, vf);
#pragma unroll
            for (int g = 0; g < QH; g++) {
                const float pg = __shfl_sync(0xffffffffu, p[g % NV], r * SL + ((b * QHP + g) / NV) * REP) * dv[b];
#pragma unroll
                for (int e = 0; e < 16; e++) acc[g][e] = fmaf(pg, vf[e], acc[g][e]);
            }
        }
    }
    att_wait<0>();

    /* each head's (m, l) from its lanes (l over its distinct slots), and the warp's rows summed */
    float m[QH], l[QH];
    {
        float ls[NV];
#pragma unroll
        for (int k = 0; k < NV; k++) {
            ls[k] = lL[k];
#pragma unroll
            for (int o = O0; o < 32; o <<= 1) ls[k] += __shfl_xor_sync(0xffffffffu, ls[k], o);
        }
#pragma unroll
        for (int g = 0; g < QH; g++) {
            m[g] = __shfl_sync(0xffffffffu, mL[g % NV], (g / NV) * REP);
            l[g] = __shfl_sync(0xffffffffu, ls[g % NV], (g / NV) * REP);
        }
    }
#pragma unroll
    for (int o = SL; o < 32; o <<= 1)
#pragma unroll
        for (int g = 0; g < QH; g++)
#pragma unroll
            for (int e = 0; e < 16; e++) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], o);
    const int h0 = hk * G + c * QH, n_real = G - c * QH < QH ? G - c * QH : QH; /* the CTA's first head, real heads */
    att_cta_ml<QH, NW>(sm_m, sm_l, sm_ML, m, l, NW, w, lane, ws, n, n_head, SZ, HD, t, h0, n_real, S, z);
#pragma unroll
    for (int g = 0; g < QH; g++) {
        const float f = att_warp_factor(m[g], sm_ML[0][g], sm_ML[1][g], S);
        if (r == 0) {
            float4 *dst = (float4 *)&red[w][g][s * 16];
#pragma unroll
            for (int i = 0; i < 4; i++)
                dst[i] = make_float4(acc[g][4 * i] * f, acc[g][4 * i + 1] * f, acc[g][4 * i + 2] * f, acc[g][4 * i + 3] * f);
        }
    }
    __syncthreads();
    att_cta_out<NW, QH, HD>(red, out, ws, xq, plane, n_head, SZ, t, h0, n_real, S, z, lane);
}

/* v2's merge: block per (token, head), thread per element; partials in split order. SZ: the grid's splits
 * (the workspace's stride); a token whose att_active_splits is 1 was written by the split kernel itself. */
__global__ void attention_combine_kernel(const float *__restrict__ ws, int n, int n_head, int hd, int SZ,
                                         float *__restrict__ out, void *__restrict__ xq, size_t plane,
                                         const int32_t *__restrict__ pos, int rps, int win) {
    pdl_trigger();
    pdl_wait();
    const size_t th = blockIdx.x; /* t * n_head + h */
    const int p = pos[th / (size_t)n_head], S = att_active_splits(p + 1 - att_first(p, win), SZ, rps);
    if (S <= 1) return;
    const float *ml = ws + (size_t)n * n_head * SZ * hd + th * SZ * 2;
    /* the splits' (m, l) into shared memory and a thread's first ATT_COMB_PF partials into registers, all loads issued
     * at once (they depend on S alone; a slot of an empty split is read and never used); then the weights e^(m_z - M)
     * (0 for an empty split) and L once, by thread 0, in split order, as before: the same operations, the same bits */
    __shared__ float s_e[ATT_MAX_SPLITS], s_m[ATT_MAX_SPLITS], s_l[ATT_MAX_SPLITS], s_L;
    for (int z = (int)threadIdx.x; z < S; z += (int)blockDim.x) {
        s_m[z] = ml[2 * z];
        s_l[z] = ml[2 * z + 1];
    }
    const int d0 = (int)threadIdx.x; /* blockDim <= hd: every thread has a first element */
    float pf[ATT_COMB_PF];
#pragma unroll
    for (int z = 0; z < ATT_COMB_PF; z++) pf[z] = z < S ? ws[(th * SZ + z) * hd + d0] : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) s_L = att_comb_fold(s_m, s_l, 1, s_e, 1, S);
    __syncthreads();
    const float L = s_L;
    for (int d = d0; d < hd; d += blockDim.x) {
        float o = 0.0f;
#pragma unroll
        for (int z = 0; z < ATT_COMB_PF; z++)
            if (z < S && s_m[z] != -INFINITY) o = fmaf(d == d0 ? pf[z] : ws[(th * SZ + z) * hd + d], s_e[z], o);
        for (int z = ATT_COMB_PF; z < S; z++)
            if (s_m[z] != -INFINITY) o = fmaf(ws[(th * SZ + z) * hd + d], s_e[z], o);
        const float r = L == 0.0f ? 0.0f : o / L;
        out[th * hd + d] = r;
        /* blockDim and hd multiples of 32: a warp holds one whole 32-element block */
        if (xq) att_put(r, (int)threadIdx.x & 31, (int64_t)(th * hd + d), xq, plane);
    }
}

/* ---- the chooser and the public launcher ---------------------------------------------------------- */

/* Query heads per CTA for v1/v2/v5 (0: not supported, use ref): as many of the group as fit ATT_MAX_QH, in equal
 * chunks (G = 5 -> 3 + 2, G = 8 -> 4 + 4). QH 1 and 2 were measured at Llama-3-8B's 32/8 heads (+2.7% tg128 at 2,
 * -9% at depth 8192: each extra CTA of a KV head re-reads its rows), not adopted (docs/ledger.md). */
static int att_choose_qh(int n_head, int n_head_kv, int hd) {
    if (n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv) return 0;
    if (hd <= 0 || hd % 32 || hd > 256) return 0;
    const int G = n_head / n_head_kv, n_chunk = (G + ATT_MAX_QH - 1) / ATT_MAX_QH;
    return (G + n_chunk - 1) / n_chunk;
}

typedef void (*att_kernel_fn)(const float *, const void *, const void *, const uint16_t *, const uint16_t *, int,
                              const int32_t *, int, int, float, float *, int, float *, void *, size_t, int,
                              const int32_t *, const int32_t *, int, int, int);
/* A call's block tables (kv.cuh): bt NULL is the identity */
typedef struct {
    const int32_t *bt, *bt_off;
    int lbs, win; /* win: the sliding window (keys a query sees), 0 none */
    int rps;      /* keys a split: att_split_launch reads tcu_attention_rps() once for the kernel and the combine */
    int cfg;      /* attention_split_kernel's virtual warps (ATT_CFG_NV) and the engine's splits (ATT_CFG_SZ_SHIFT) */
} att_pages;
static void att_launch_s(att_kernel_fn kf, size_t smem, dim3 grid, dim3 block, cudaStream_t st, const float *q,
                         const void *kc, const void *vc, const uint16_t *ks, const uint16_t *vs, int n,
                         const int32_t *pos, att_pages pg, int n_head, int n_head_kv, float scale, float *out,
                         int n_chunk, float *ws, void *xq, size_t plane) {
    PDL_LAUNCH(kf, grid, block, smem, st, q, kc, vc, ks, vs, n, pos, n_head, n_head_kv, scale, out, n_chunk, ws, xq,
               plane, pg.rps, pg.bt, pg.bt_off, pg.lbs, pg.win, pg.cfg);
}

/* The > 48 KiB dynamic shared-memory opt-in of kernel kf for `bytes`, asked once per device (bit d of *ok_dev or
 * *no_dev, the caller's statics for kf): 1 when the current device granted it. */
static int att_smem_optin(att_kernel_fn kf, size_t bytes, unsigned *ok_dev, unsigned *no_dev) {
    int dev = 0;
    cudaGetDevice(&dev);
    if (dev < 0 || dev >= 32) return 0;
    if (!((__atomic_load_n(ok_dev, __ATOMIC_RELAXED) | __atomic_load_n(no_dev, __ATOMIC_RELAXED)) >> dev & 1u)) {
        if (cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) == cudaSuccess)
            __atomic_fetch_or(ok_dev, 1u << dev, __ATOMIC_RELAXED);
        else {
            (void)cudaGetLastError(); /* no error left pending for the caller's check */
            __atomic_fetch_or(no_dev, 1u << dev, __ATOMIC_RELAXED);
        }
    }
    return (int)(__atomic_load_n(ok_dev, __ATOMIC_RELAXED) >> dev & 1u);
}

/* v5 launches issued by this host thread (tcu_attention_q8w_count: the trace counts what ran, per GPU thread). */
static thread_local uint64_t g_att_q8w_launches;
extern "C" uint64_t tcu_attention_q8w_count(void) { return g_att_q8w_launches; }

/* v5's kernel for (hd, qh) and its shared memory, or NULL (no v5 for the shape). */
template <int HD, int QH> static att_kernel_fn att_q8w_fn(int paged, size_t *smem, unsigned **ok, unsigned **no) {
    static unsigned ok_dev[2], no_dev[2];
    *smem = att_q8w<HD, QH>::SMEM;
    *ok = &ok_dev[paged];
    *no = &no_dev[paged];
    return paged ? attention_q8w_kernel<HD, QH, 1> : attention_q8w_kernel<HD, QH, 0>;
}
#define ATT_Q8W_QH(HD)                                                                                      \
    switch (qh) {                                                                                           \
    case 1: kf = att_q8w_fn<HD, 1>(paged, &smem, &ok, &no); break;                                          \
    case 2: kf = att_q8w_fn<HD, 2>(paged, &smem, &ok, &no); break;                                          \
    case 3: kf = att_q8w_fn<HD, 3>(paged, &smem, &ok, &no); break;                                          \
    default: kf = att_q8w_fn<HD, 4>(paged, &smem, &ok, &no); break;                                         \
    }                                                                                                       \
    break;
/* The one chooser of the Q8_0-cache decode kernel: v5 (its kernel and shared memory in *kf, *smem) for hd 64, 128,
 * 256 and a supported head ratio where this device grants v5's shared memory (up to ~150 KiB a CTA at hd 256;
 * sm_86/sm_89 grant 99 KiB), else NULL: v2's transposing kernel. The launcher and tcu_attention_q8_wide both ask it. */
static att_kernel_fn att_q8_choose(int n_head, int n_head_kv, int hd, int paged, size_t *smem_out) {
    const int qh = att_choose_qh(n_head, n_head_kv, hd);
    if (!qh) return NULL;
    att_kernel_fn kf = NULL;
    size_t smem = 0;
    unsigned *ok = NULL, *no = NULL;
    switch (hd) {
    case 64: ATT_Q8W_QH(64)
    case 128: ATT_Q8W_QH(128)
    case 256: ATT_Q8W_QH(256)
    default: return NULL;
    }
    if (!att_smem_optin(kf, smem, ok, no)) return NULL; /* v2 runs */
    *smem_out = smem;
    return kf;
}
#undef ATT_Q8W_QH
extern "C" int tcu_attention_q8_wide(int n_head, int n_head_kv, int hd) {
    size_t smem = 0;
    return att_q8_choose(n_head, n_head_kv, hd, 0, &smem) != NULL; /* the paged kernel asks the same shared memory */
}

/* The transposing kernel for (E, QH, Q8); over a Q8_0 cache with the K/V prefetch ring where att_pf::ok (the same
 * bits as plain loads; interleaved tg64, docs/ledger.md: Q8_0 cache +3.7% at depth 32768, +0.5% at 8192; over f16
 * -0.8% / -1.1%, so not there). */
template <int E, int QH, int Q8>
static void att_launch_tr(dim3 grid, dim3 block, cudaStream_t st, const float *q, const void *kc, const void *vc,
                          const uint16_t *ks, const uint16_t *vs, int n, const int32_t *pos, att_pages pg, int n_head,
                          int n_head_kv, float scale, float *out, int n_chunk, float *ws, void *xq, size_t plane) {
    const int paged = pg.bt != NULL;
    /* dynamic shared memory: the rings of the physical warps (PF), then the virtual warps' accumulators; the > 48 KiB
     * opt-in asked once a kernel and device for the most any call asks (16 rings, 16 virtual warps) */
    const size_t vacc = (size_t)(pg.cfg & ATT_CFG_NV) * QH * E * 32 * sizeof(float);
    const size_t vmax = (size_t)ATT_MAX_WARPS * QH * E * 32 * sizeof(float);
    if constexpr (Q8 && att_pf<E, Q8>::ok) {
        att_kernel_fn kf = paged ? attention_split_kernel<E, QH, Q8, 1, 1, 0> : attention_split_kernel<E, QH, Q8, 1, 0, 0>;
        /* a device that refuses the opt-in (99 KiB a block on sm_86/sm_89) runs the plain loads, whose bits are the
         * same */
        static unsigned ok_dev[2], no_dev[2];
        if (att_smem_optin(kf, ATT_MAX_WARPS * att_pf<E, Q8>::WARP + vmax, &ok_dev[paged], &no_dev[paged])) {
            att_launch_s(kf, (size_t)(block.x / 32) * att_pf<E, Q8>::WARP + vacc, grid, block, st, q, kc, vc, ks, vs, n,
                         pos, pg, n_head, n_head_kv, scale, out, n_chunk, ws, xq, plane);
            return;
        }
    }
    att_kernel_fn kf = paged ? attention_split_kernel<E, QH, Q8, 0, 1, 0> : attention_split_kernel<E, QH, Q8, 0, 0, 0>;
    static unsigned ok0[2], no0[2];
    att_smem_optin(kf, vmax, &ok0[paged], &no0[paged]); /* static + dynamic past 48 KiB from hd 256 at QH 3 */
    att_launch_s(kf, vacc, grid, block, st, q, kc, vc, ks, vs, n, pos, pg, n_head, n_head_kv, scale, out, n_chunk, ws, xq,
                 plane);
}

#define ATT_ARGS grid, block, st, q, kc, vc, ks, vs, n, pos, pg, n_head, n_head_kv, scale, out, n_chunk, ws, xq, plane
#define ATT_CASE_QH(E, Q8)                                                                                  \
    case E:                                                                                                 \
        switch (qh) {                                                                                       \
        case 1: att_launch_tr<E, 1, Q8>(ATT_ARGS); break;                                                   \
        case 2: att_launch_tr<E, 2, Q8>(ATT_ARGS); break;                                                   \
        case 3: att_launch_tr<E, 3, Q8>(ATT_ARGS); break;                                                   \
        default: att_launch_tr<E, 4, Q8>(ATT_ARGS); break;                                                  \
        }                                                                                                   \
        break;

/* MS's launch (hd E * 32, 64 or 128, over an f16 cache; grid (n, n_head_kv * n_chunk), one CTA a token's splits): the
 * accumulators of sl splits' virtual warps (32 KiB a split at hd 128, QH 4). 0 where the device refuses the most any
 * call asks (ATT_MS_MAX splits: 128 KiB at hd 128, QH 4; sm_86 / sm_89 grant 99 KiB), the caller then launching the
 * rule (the same bits). */
template <int E, int QH>
static int att_launch_ms(int sl, dim3 grid, dim3 block, cudaStream_t st, const float *q, const void *kc, const void *vc,
                         const uint16_t *ks, const uint16_t *vs, int n, const int32_t *pos, att_pages pg, int n_head,
                         int n_head_kv, float scale, float *out, int n_chunk, float *ws, void *xq, size_t plane) {
    const int paged = pg.bt != NULL;
    att_kernel_fn kf = paged ? attention_split_kernel<E, QH, 0, 0, 1, 1> : attention_split_kernel<E, QH, 0, 0, 0, 1>;
    static unsigned ok[2], no[2];
    if (!att_smem_optin(kf, (size_t)ATT_MS_MAX * ATT_MAX_WARPS * QH * E * 32 * sizeof(float), &ok[paged], &no[paged]))
        return 0;
    att_launch_s(kf, (size_t)sl * (pg.cfg & ATT_CFG_NV) * QH * E * 32 * sizeof(float), grid, block, st, q, kc, vc, ks, vs,
                 n, pos, pg, n_head, n_head_kv, scale, out, n_chunk, ws, xq, plane);
    return 1;
}

extern "C" size_t tcu_attention_ws_bytes(int n, int n_head, int hd, int splits) {
    return splits > 1 ? sizeof(float) * (size_t)n * n_head * splits * (hd + 2) : 0;
}

/* Physical warps of a decode CTA (the arm TERN_ATT_WARPS, else the rule): the bits are the 16 virtual warps' whatever
 * runs them, so the count follows the grid: 16 while the CTAs fit one an SM, then 8, then 4 (more CTAs an SM at 128
 * registers a thread: one CTA's latency overlapped by another's). H100, Llama-3-8B heads, depth 512 (gpu_attention's
 * table): n = 64 89.3 us at 4 against 121.1 at 16, n = 16 28.3 against 37.2, n = 1 and 4 best at 16 (docs/ledger.md
 * 2026-12-02 "the decode attention's virtual warps"). */
/* A device attribute of the current device, asked once a device (cache: the caller's static, 32 devices); fallback
 * (an H100's value) where the runtime does not answer */
static int att_dev_attr(cudaDeviceAttr a, int fallback, int (&cache)[32]) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 32) return fallback;
    if (!__atomic_load_n(&cache[dev], __ATOMIC_RELAXED)) {
        int v = 0;
        if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess || v <= 0) v = fallback;
        __atomic_store_n(&cache[dev], v, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&cache[dev], __ATOMIC_RELAXED);
}
static int att_sms(void) {
    static int sms[32];
    return att_dev_attr(cudaDevAttrMultiProcessorCount, 132, sms);
}
static int g_att_warps = 0;
extern "C" void tcu_attention_warps_set(int warps) {
    __atomic_store_n(&g_att_warps, warps == 4 || warps == 8 || warps == 16 ? warps : 0, __ATOMIC_RELAXED);
}
static int att_phys_warps(int ctas) {
    const int a = __atomic_load_n(&g_att_warps, __ATOMIC_RELAXED);
    if (a) return a;
    const int sms = att_sms();
    return ctas <= sms ? 16 : ctas <= 2 * sms ? 8 : 4;
}

/* MS (tcu_attention_ms_set, tern_config.att_ms, TERN_ATT_MS): a token's splits in one CTA (att_ms_merge). -1, the
 * default: att_ms_rule below; 0: never; N > 0 (the arm): wherever the rule's grid (n x n_head_kv x head chunks x the
 * launch's splits) has at least N CTAs. No bit depends on it. */
static int g_att_ms = -1;
extern "C" void tcu_attention_ms_set(int min_ctas) {
    __atomic_store_n(&g_att_ms, min_ctas < 0 ? -1 : min_ctas, __ATOMIC_RELAXED);
}
/* MS launches issued by this host thread (the trace counts what ran) */
static thread_local uint64_t g_att_ms_launches;
extern "C" uint64_t tcu_attention_ms_count(void) { return g_att_ms_launches; }
/* MS's physical warps (TERN_ATT_WARPS, else): 16 while its CTAs fit one an SM; else 8 where two CTAs' shared memory
 * (smem dynamic bytes, ~5 KiB static and reserved beside it) fits an SM, so 16 warps an SM at 128 registers a
 * thread; else 16 */
static int att_ms_warps(int ctas, size_t smem) {
    const int a = __atomic_load_n(&g_att_warps, __ATOMIC_RELAXED);
    if (a) return a;
    if (ctas <= att_sms()) return 16;
    static int sm_bytes[32];
    return 2 * (smem + 5 * 1024) <= (size_t)att_dev_attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor, 228 * 1024, sm_bytes)
               ? 8
               : 16;
}

/* MS's rule (att_ms -1): MS where the launch carries 2 or 3 splits and MS's grid (ctas: n x n_head_kv x head chunks, of
 * `warps` physical warps, att_ms_warps's) fills at least 0.7 of the SMs in one wave: 0.7 x SMs <= ctas <= SMs x its
 * CTAs an SM (16 / warps: att_ms_warps gives 8 only where two CTAs' shared memory fits an SM). H100, synthetic
 * Llama-3-8B Q4_0 (hd 128, 8 KV heads, QH 4), S_TG against the split kernel + combine (docs/ledger.md 2026-12-08 "MS
 * measured"): 2..3 splits, 96..256 CTAs +0.9..+5.1%; 64 CTAs (0.48 of the SMs) -4%; 320..384 (past one wave) -5..-8%;
 * 512 level; 4 splits -0.4..-2.4% */
static int att_ms_rule(int sl, int ctas, int warps) {
    const int sms = att_sms();
    return sl >= 2 && sl <= 3 && 10 * ctas >= 7 * sms && ctas <= sms * (16 / warps);
}

/* v1 / v2 / v5 for an f16 (ks = NULL) or Q8_0 cache; dec: the decode configuration (S splits when ws, the decode
 * warps, v5 for a Q8_0 cache), else the prefill one. qh != 0. xq != NULL: out is also written in the x16 format of
 * (n, n_head * hd) by the kernel that writes out. */
static void att_split_launch(const float *q, const void *kc, const void *vc, const uint16_t *ks, const uint16_t *vs,
                             int n, const int32_t *pos, att_pages pg, int n_head, int n_head_kv, int hd, float scale,
                             float *out, float *ws, int splits, int qh, void *xq, cudaStream_t st, int dec, int no_v5 = 0,
                             int h16 = 0) {
    pg.rps = tcu_attention_rps(); /* once: the split kernel and the combine must agree */
    const size_t plane = h16 ? 0 : x16_plane_bytes(n, (int64_t)n_head * hd); /* 0: xq is f16 in the f16 order's layout */
    const int G = n_head / n_head_kv, n_chunk = (G + qh - 1) / qh;
    /* S: the engine's splits, SL: the launch's (TCU_ATT_FIT's packing: the splits the pass's deepest token can use in
     * the second byte; 0 or more than S: S). A token's splits are att_active_splits(.., S, ..) either way, so its bits;
     * SL only drops CTAs that would have no rows */
    const int fit = (splits & TCU_ATT_FIT_BIT) != 0;
    const int sq = fit ? splits & 0xFF : splits, sl = fit ? (splits >> 8) & 0xFF : 0;
    const int S = ws && sq > 1 && dec ? (sq < ATT_MAX_SPLITS ? sq : ATT_MAX_SPLITS) : 1;
    const int SL = sl >= 1 && sl < S ? sl : S;
    const dim3 grid((unsigned)n, (unsigned)(n_head_kv * n_chunk), (unsigned)SL);
    /* the decode configuration (passes of up to TCU_PASS_MAX tokens): a token's keys are split over the same warps
     * and combined in the same order as in a one-token call, so a token of a batched step or of a speculative verify
     * gets the bits of its own decode step */
    const int nv = dec ? ATT_DECODE_WARPS : ATT_PREFILL_WARPS;
    const dim3 block(32 * (dec ? att_phys_warps(n * n_head_kv * n_chunk * SL) : ATT_PREFILL_WARPS));
    pg.cfg = nv | S << ATT_CFG_SZ_SHIFT;
    /* MS: a token's SL splits in one CTA, no combine (the same bits: att_ms_merge), at the warps att_ms_warps gives its
     * ms_ctas CTAs and their shared memory */
    const int ms = __atomic_load_n(&g_att_ms, __ATOMIC_RELAXED), ms_ctas = n * n_head_kv * n_chunk;
    const int ms_can = ms && dec && !ks && SL > 1 && SL <= ATT_MS_MAX && (hd == 64 || hd == 128);
    const int ms_w = ms_can ? att_ms_warps(ms_ctas, (size_t)SL * nv * qh * hd * sizeof(float)) : 0;
    if (ms_can && (ms > 0 ? ms_ctas * SL >= ms : att_ms_rule(SL, ms_ctas, ms_w))) {
        const dim3 gm((unsigned)n, (unsigned)(n_head_kv * n_chunk), 1);
        const dim3 bm(32 * ms_w);
        const int cfg_rule = pg.cfg;
        pg.cfg |= SL << ATT_CFG_SL_SHIFT;
        int done = 0;
#define ATT_MS_ARGS SL, gm, bm, st, q, kc, vc, ks, vs, n, pos, pg, n_head, n_head_kv, scale, out, n_chunk, ws, xq, plane
        switch (qh * 8 + hd / 32) {
        case 1 * 8 + 2: done = att_launch_ms<2, 1>(ATT_MS_ARGS); break;
        case 2 * 8 + 2: done = att_launch_ms<2, 2>(ATT_MS_ARGS); break;
        case 3 * 8 + 2: done = att_launch_ms<2, 3>(ATT_MS_ARGS); break;
        case 4 * 8 + 2: done = att_launch_ms<2, 4>(ATT_MS_ARGS); break;
        case 1 * 8 + 4: done = att_launch_ms<4, 1>(ATT_MS_ARGS); break;
        case 2 * 8 + 4: done = att_launch_ms<4, 2>(ATT_MS_ARGS); break;
        case 3 * 8 + 4: done = att_launch_ms<4, 3>(ATT_MS_ARGS); break;
        default: done = att_launch_ms<4, 4>(ATT_MS_ARGS); break;
        }
#undef ATT_MS_ARGS
        if (done) {
            g_att_ms_launches++;
            return;
        }
        pg.cfg = cfg_rule;
    }
    size_t smem = 0;
    att_kernel_fn v5 = ks && dec && !no_v5 ? att_q8_choose(n_head, n_head_kv, hd, pg.bt != NULL, &smem) : NULL;
    if (v5) {
        att_launch_s(v5, smem, grid, dim3(ATT_Q8W_WARPS * 32), st, q, kc, vc, ks, vs, n, pos, pg, n_head, n_head_kv,
                     scale, out, n_chunk, ws, xq, plane);
        g_att_q8w_launches++;
    } else if (ks) {
        switch (hd / 32) {
            ATT_CASE_QH(2, 1)
            ATT_CASE_QH(4, 1)
            ATT_CASE_QH(8, 1)
        }
    } else {
        switch (hd / 32) {
            ATT_CASE_QH(1, 0)
            ATT_CASE_QH(2, 0)
            ATT_CASE_QH(3, 0)
            ATT_CASE_QH(4, 0)
            ATT_CASE_QH(5, 0)
            ATT_CASE_QH(6, 0)
            ATT_CASE_QH(7, 0)
            ATT_CASE_QH(8, 0)
        }
    }
    if (SL > 1)
        PDL_LAUNCH(attention_combine_kernel, dim3((unsigned)(n * n_head)), dim3(hd < 256 ? hd : 256), 0, st,
                   (const float *)ws, n, n_head, hd, S, out, xq, plane, pos, pg.rps, pg.win);
}

/* tcu.h: causal GQA attention, q (n, n_head, hd) f32, kc/vc (n_rows, n_head_kv, hd) f16, pos (n) on the
 * device, out (n, n_head, hd) f32; online softmax in f32 (Milakov & Gimelshein 2018). The grid depends on
 * n and the head shape only, never on pos (graph capture). Prefill chunks (n > TCU_MULTI_MAX, one sequence: bt_off
 * NULL) take the tensor-core flash kernels where tcu_attention_flash_ok; else v1 for hd a multiple of 32 up to 256
 * and n_head a multiple of n_head_kv, else the ref kernel. */
extern "C" void tcu_attention_split(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                                    const int32_t *bt, const int32_t *bt_off, int lbs, int win, int n_head,
                                    int n_head_kv, int hd, float scale, float *out, float *ws, int splits,
                                    cudaStream_t st) {
    if (n <= 0 || n_head <= 0) return;
    /* prefill chunks to the flash kernels; under a sliding window to v3, the one that takes it */
    if (n > TCU_MULTI_MAX && !bt_off && tcu_attention_flash_ok(n_head, n_head_kv, hd)) {
        if (win > 0) tcu_attention_flash_v3(q, kc, vc, n, pos, bt, lbs, win, n_head, n_head_kv, hd, scale, out, st);
        else tcu_attention_flash_rows(q, kc, vc, 0, n, pos, bt, lbs, n_head, n_head_kv, hd, scale, out, st);
        return;
    }
    const int qh = att_choose_qh(n_head, n_head_kv, hd);
    if (!qh) {
        tcu_attention_ref(q, kc, vc, n, pos, bt, bt_off, lbs, win, n_head, n_head_kv, hd, scale, out, st);
        return;
    }
    att_split_launch(q, kc, vc, NULL, NULL, n, pos, {bt, bt_off, lbs, win}, n_head, n_head_kv, hd, scale, out, ws, splits,
                     qh, NULL, st, n <= TCU_MULTI_MAX);
}

/* tcu.h: tcu_attention_split over a Q8_0 cache (int8 planes kq, vq as the f16 layout; f16 scales ks, vs,
 * (n_rows, n_head_kv * hd / 32)): n <= TCU_MULTI_MAX, hd 64, 128 or 256 (else nothing is launched). */
extern "C" void tcu_attention_split_q8(const float *q, const int8_t *kq, const int8_t *vq, const uint16_t *ks,
                                       const uint16_t *vs, int n, const int32_t *pos, const int32_t *bt,
                                       const int32_t *bt_off, int lbs, int win, int n_head, int n_head_kv, int hd,
                                       float scale, float *out, float *ws, int splits, cudaStream_t st) {
    if (n <= 0 || n > TCU_MULTI_MAX || n_head <= 0 || (hd != 64 && hd != 128 && hd != 256)) return;
    const int qh = att_choose_qh(n_head, n_head_kv, hd);
    if (!qh) return;
    att_split_launch(q, kq, vq, ks, vs, n, pos, {bt, bt_off, lbs, win}, n_head, n_head_kv, hd, scale, out, ws, splits, qh,
                     NULL, st, 1);
}

/* v2 over a Q8_0 cache whatever the chooser says (not in tcu.h: tests only; the kernel devices that refuse v5's shared
 * memory run). */
extern "C" void tcu_attention_split_q8_v2(const float *q, const int8_t *kq, const int8_t *vq, const uint16_t *ks,
                                          const uint16_t *vs, int n, const int32_t *pos, const int32_t *bt,
                                          const int32_t *bt_off, int lbs, int win, int n_head, int n_head_kv, int hd,
                                          float scale, float *out, float *ws, int splits, cudaStream_t st) {
    if (n <= 0 || n > TCU_MULTI_MAX || n_head <= 0 || (hd != 64 && hd != 128 && hd != 256)) return;
    const int qh = att_choose_qh(n_head, n_head_kv, hd);
    if (!qh) return;
    att_split_launch(q, kq, vq, ks, vs, n, pos, {bt, bt_off, lbs, win}, n_head, n_head_kv, hd, scale, out, ws, splits, qh,
                     NULL, st, 1, 1);
}

/* The decode configuration for a pass of up to TCU_PASS_MAX tokens of any sequences (f16 cache: ks NULL; Q8_0: kc, vc
 * the int8 planes), each token the bits of its one-token call; xo != NULL: out also written by the kernel that writes
 * out, as the dp4a GEMV's x16 activations of (n, n_head * hd) (h16 0: tcu_quantize_x16's bytes, x16_put on the same f32
 * values) or as f16 in the f16 order's layout (h16 1: tcu_f32_to_f16_layout's bytes). Shapes the fused kernels do not
 * take (the ref kernel's) run the ref kernel, then the conversion. */
static void att_decode(const float *q, const void *kc, const void *vc, const uint16_t *ks, const uint16_t *vs, int n,
                       const int32_t *pos, const int32_t *bt, const int32_t *bt_off, int lbs, int win, int n_head,
                       int n_head_kv, int hd, float scale, float *out, float *ws, int splits, void *xo, int h16,
                       cudaStream_t st) {
    if (n <= 0 || n > TCU_PASS_MAX || n_head <= 0) return;
    const int qh = att_choose_qh(n_head, n_head_kv, hd);
    if (ks && (hd != 64 && hd != 128 && hd != 256)) return; /* as tcu_attention_split_q8 */
    if (!qh) {
        if (ks) return;
        tcu_attention_ref(q, (const uint16_t *)kc, (const uint16_t *)vc, n, pos, bt, bt_off, lbs, win, n_head, n_head_kv, hd,
                          scale, out, st);
        if (xo && h16) tcu_f32_to_f16_layout(out, (uint16_t *)xo, (int64_t)n * n_head * hd, 1, st);
        else if (xo) tcu_quantize_x16(out, n, (int64_t)n_head * hd, xo, st);
        return;
    }
    att_split_launch(q, kc, vc, ks, vs, n, pos, {bt, bt_off, lbs, win}, n_head, n_head_kv, hd, scale, out, ws, splits, qh, xo,
                     st, 1, 0, h16);
}

/* tcu.h: the decode configuration; xq != NULL: out also as the dp4a GEMV's x16 activations */
extern "C" void tcu_attention_decode_x16(const float *q, const void *kc, const void *vc, const uint16_t *ks,
                                         const uint16_t *vs, int n, const int32_t *pos, const int32_t *bt,
                                         const int32_t *bt_off, int lbs, int win, int n_head, int n_head_kv, int hd,
                                         float scale, float *out, float *ws, int splits, void *xq, cudaStream_t st) {
    att_decode(q, kc, vc, ks, vs, n, pos, bt, bt_off, lbs, win, n_head, n_head_kv, hd, scale, out, ws, splits, xq, 0, st);
}

/* tcu.h: the same with out also written as f16 bits in the f16 order's layout (tcu_hm_pos) into h16, by the kernel
 * that writes out (the split kernel, v5, or the combine): the f16 order's O input without a conversion launch. */
extern "C" void tcu_attention_decode_h16(const float *q, const void *kc, const void *vc, const uint16_t *ks,
                                         const uint16_t *vs, int n, const int32_t *pos, const int32_t *bt,
                                         const int32_t *bt_off, int lbs, int win, int n_head, int n_head_kv, int hd,
                                         float scale, float *out, float *ws, int splits, uint16_t *h16, cudaStream_t st) {
    att_decode(q, kc, vc, ks, vs, n, pos, bt, bt_off, lbs, win, n_head, n_head_kv, hd, scale, out, ws, splits, h16, h16 != NULL,
               st);
}

extern "C" void tcu_attention_decode(const float *q, const void *kc, const void *vc, const uint16_t *ks, const uint16_t *vs,
                                     int n, const int32_t *pos, const int32_t *bt, const int32_t *bt_off, int lbs, int win,
                                     int n_head, int n_head_kv, int hd, float scale, float *out, float *ws, int splits,
                                     cudaStream_t st) {
    tcu_attention_decode_x16(q, kc, vc, ks, vs, n, pos, bt, bt_off, lbs, win, n_head, n_head_kv, hd, scale, out, ws, splits,
                             NULL, st);
}

extern "C" void tcu_attention(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                              const int32_t *bt, const int32_t *bt_off, int lbs, int win, int n_head, int n_head_kv,
                              int hd, float scale, float *out, cudaStream_t st) {
    tcu_attention_split(q, kc, vc, n, pos, bt, bt_off, lbs, win, n_head, n_head_kv, hd, scale, out, NULL, 1, st);
}
