/* dev/cuda/attention_tc.cu: v7, the decode attention over an f16 cache on the tensor cores, moved out of
 * src/backend/cuda/attention_tc.cu (at efbc016, where it ran behind the arm TERN_ATT_TC). NOT BUILT, and not compilable
 * on its own: it needs efbc016's src/backend/cuda/att.cuh (att_first, att_active_splits, att_warp_factor, att_put, shared
 * with attention.cu there) and attention.cu's hand-off in att_split_launch; to re-run it, check out efbc016 and set
 * TERN_ATT_TC=1 (gpu_attention reruns v2's decode checks under it; gpu_batch MODEL f16 tc).
 * Measured (H100, bench/gpu/s41-att/, docs/ledger.md 2026-12-06 "the decode attention on the tensor cores"): every check
 * passed (gpu_attention 11568 / 0 with v7 in 2574 launches, float64 within 1e-5; gpu_batch f16 tc 289 / 0), but the
 * kernel times were v2's (Llama-3-8B heads, depth 512: n = 1 15.7 against 16.8 us, 64 91.5 against 87.4) and the engine
 * level at B = 1..16, -1.6% at 64: ~10x fewer instructions a row did not move it, so v2 is not issue-bound. What it
 * teaches: the fragment layouts (q and p as two f16 halves in the MMA's spare columns, V^T by PRMT pairs, P^T by four
 * shuffles), and that v2's time is not its arithmetic. In the harness a wave of CTAs (2 an SM) took ~15 us at depth 512
 * and at 4096 alike (about 2 steps a warp in both), several times a step's load latency plus its compute: the likely
 * reading, not measured, is each CTA's chain of dependent loads (pos, the block table's offset, q, a table entry, K/V).
 * Known limits, from a review (not hit by the tests): |q| > 65504 makes its f16 high half inf and the score NaN (v2
 * keeps f32 q); low halves under 2^-14 are subnormal, so q and p below ~1/8 carry fewer than 22 bits (a power-of-two
 * scale before the split would fix both); the MMA's f32 accumulation truncates (Fasi et al. 2021).
 * The design as it ran:
 *
 * The decode configuration of attention.cu (passes of up to TCU_PASS_MAX tokens of any
 * sequences, a speculative verify chunk) over an f16 cache at hd 64 and 128: the same grid as v2 (a CTA a token, KV
 * head, chunk of up to 4 query heads and split; the splits a function of the token's position, att.cuh), the same
 * workspace and combine kernel, another order inside a CTA.
 *
 * Why: ncu of v2 in a B = 64 step of the synthetic Llama-3-8B (H100, bench/gpu/s41-att/) counts ~120 warp instructions
 * a cached row (scalar FMAs for 4 heads, the f16 conversions, the transposing sums, shuffles), 0.59 issued a cycle a
 * scheduler at 4 warps a scheduler and DRAM at 54%: an issue- and latency-bound kernel. Here a warp takes 16 keys a
 * step through 16 mma.sync (m16n8k16, f16 in, f32 sums), ~10 instructions a row.
 *
 * A warp's step: keys j0 .. j0 + 15 of its CTA's rows (warp w takes steps w, w + 8, ...; 8 warps, fixed: the bits).
 *   scores  S^T (16 keys x 8) = K (16 keys x hd) . Q^T (hd x 8) in hd / 16 MMAs; the 8 columns are the 4 query heads'
 *           f16(q) (columns 0..3) and f16(q - f16(q)) (4..7), so the score is their two f32 sums added: q to ~22 bits,
 *           K exact (f16), the products exact, f32 accumulation. Lane (g, t) (g = lane / 4, t = lane % 4) holds keys
 *           g and g + 8, columns 2t, 2t + 1; lanes t and t ^ 2 add their halves (the same sum in both: IEEE addition
 *           commutes), so each lane has its two heads' scores, 2 (t & 1) and 2 (t & 1) + 1.
 *           The MMA's k index runs over the dims in an order the loads make natural: lane t's 16-byte load of a row
 *           holds dims 32 s + 8 t .. + 7, and k-step 2 s + h takes dims 32 s + 8 t + 4 h + {0, 1} (k = 2t, 2t + 1) and
 *           + {2, 3} (k = 2t + 8, 2t + 9); q's fragments are built in the same order once a CTA.
 *   softmax online per head (Milakov & Gimelshein 2018): the step's max over its 16 keys by an xor tree over g, the
 *           running max, the correction e^(m - m'), p = e^(s - m') (expf; masked keys, past the CTA's last row, p = 0),
 *           a lane's running sum over its own keys; the accumulator scaled by the correction.
 *   P.V     O^T (hd x 8) += V^T (hd x 16 keys) . P^T (16 keys x 8) in hd / 16 MMAs; P's 8 columns again f16(p) and
 *           f16(p - f16(p)) for the 4 heads (so p to ~22 bits), V exact. V^T's fragments pair two keys of one dim in a
 *           register: lane (g, t) loads 16 bytes (dims 64 m + 8 g .. + 7) of keys 2t, 2t + 1, 2t + 8, 2t + 9 and one
 *           PRMT a register pairs them; m-tile i's row g is dim 64 (i / 4) + 8 g + 2 (i % 4), row g + 8 the next dim.
 *           P^T's fragments come from the score lanes by 4 shuffles (lanes t < 2 offer column 0, t >= 2 column 1).
 * A warp's end: l summed over its lanes by an xor tree; the high and low columns of the accumulator added (lanes t and
 * t ^ 2); (m, l) and the accumulator to shared memory. The CTA merges its 8 warps in warp order as v2 does (M = max m_w,
 * L = sum_w l_w e^(m_w - M), out = sum_w acc_w e^(m_w - M) (/ L with one split)), and writes out (and the O GEMM's input,
 * att_put) or its split's slot of the workspace (attention_combine_kernel merges the splits in order).
 *
 * Properties: a token's bits depend on its position, its q and its sequence's rows only (the splits, the steps, the
 * warps and every order are functions of them): the same in any batch, in a verify chunk as in its decode step, through
 * block tables as contiguous (tests/gpu/gpu_attention.c runs v2's checks under the arm). Other bits than v2's. */
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "cuda/att.cuh"
#include "cuda/check.cuh"
#include "cuda/kv.cuh"
#include "cuda/pdl.cuh"
#include "cuda/tcu.h"

#define ATT_TC_WARPS 8 /* warps a CTA, each its own chain of steps: fixes the bits */
#define ATT_TC_QH 4    /* query heads a CTA (the MMAs' 8 columns: 4 heads, high and low halves) */

/* D += A . B, m16n8k16, A row-major f16 (a0..a3), B column-major f16 (b0, b1), D f32 (PTX ISA "mma.m16n8k16"). */
static __device__ __forceinline__ void tc_mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                              uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}
/* f16 bits of x (part 0) or of x - f16(x) (part 1): x's high and low halves, x = high + low to ~22 bits */
static __device__ __forceinline__ uint32_t tc_half(float x, int part) {
    const __half h = __float2half_rn(x);
    return part ? (uint32_t)__half_as_ushort(__float2half_rn(x - __half2float(h))) : (uint32_t)__half_as_ushort(h);
}
/* word i (0..3) of a 16-byte load */
static __device__ __forceinline__ uint32_t tc_word(const uint4 &v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

template <int HD, int PG>
__global__ void __launch_bounds__(ATT_TC_WARPS * 32, 2)
attention_tc_kernel(const float *__restrict__ q, const void *__restrict__ kc, const void *__restrict__ vc, int n,
                    const int32_t *__restrict__ pos, int n_head, int n_head_kv, float scale, float *__restrict__ out,
                    int n_chunk, float *__restrict__ ws, void *__restrict__ xq, size_t plane, int rps,
                    const int32_t *__restrict__ bt, const int32_t *__restrict__ bt_off, int lbs, int win) {
    constexpr int KS = HD / 16; /* k-steps of q.k; m-tiles of p.v */
    constexpr int NS = HD / 32; /* 16-byte K loads a row a lane */
    constexpr int NM = HD / 64; /* 16-byte V loads a key a lane */
    constexpr int NW = ATT_TC_WARPS, QH = ATT_TC_QH;
    __shared__ float sm_m[NW][QH], sm_l[NW][QH], sm_ML[2][QH], sm_f[NW][QH];
    __shared__ float sm_o[NW][QH][HD];
    pdl_trigger();
    pdl_wait();

    const int t = n - 1 - (int)blockIdx.x; /* longest rows first */
    const int hk = (int)blockIdx.y / n_chunk, c = (int)blockIdx.y % n_chunk;
    const int G = n_head / n_head_kv, qh = (G + n_chunk - 1) / n_chunk;
    const int h0 = hk * G + c * qh, n_real = G - c * qh < qh ? G - c * qh : qh; /* the CTA's first head, real heads */
    const int lane = (int)threadIdx.x & 31, w = (int)threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int jw = att_first(pos[t], win), n_kv = pos[t] + 1 - jw, SZ = (int)gridDim.z;
    const int S = att_active_splits(n_kv, SZ, rps), z = (int)blockIdx.z;
    if (z >= S) return; /* CTA-uniform, after the PDL wait */
    const int r0 = jw + (int)((int64_t)n_kv * z / S), r1 = jw + (int)((int64_t)n_kv * (z + 1) / S);
    const int32_t *tb = PG ? kv_table(bt, bt_off, t) : NULL;
    const size_t stride = (size_t)n_head_kv * HD;
    const uint16_t *kb = (const uint16_t *)kc + (size_t)hk * HD + 8 * tq; /* this lane's slices of a row */
    const uint16_t *vb = (const uint16_t *)vc + (size_t)hk * HD + 8 * g;

    /* q^T's fragments: column g is head g & 3's high (g < 4) or low half; k-step k = 2 s + h holds dims
     * 32 s + 8 tq + 4 h + {0, 1} (b0) and + {2, 3} (b1). Heads past the group's: zero. */
    uint32_t qb[KS][2];
    {
        const int hq = g & 3, part = g >> 2;
        const bool real = hq < n_real;
        const float *qp = q + ((size_t)t * n_head + (size_t)(h0 + (real ? hq : 0))) * HD;
#pragma unroll
        for (int k = 0; k < KS; k++) {
            const float4 x = *(const float4 *)(qp + 32 * (k >> 1) + 8 * tq + 4 * (k & 1));
            qb[k][0] = real ? tc_half(x.x, part) | tc_half(x.y, part) << 16 : 0u;
            qb[k][1] = real ? tc_half(x.z, part) | tc_half(x.w, part) << 16 : 0u;
        }
    }

    /* acc[i]: O^T m-tile i, (dim 64 (i / 4) + 8 g + 2 (i % 4), column 2 tq), (same, 2 tq + 1), (dim + 1, 2 tq), (dim
     * + 1, 2 tq + 1); the columns: heads ha = 2 (tq & 1) and hb = ha + 1, high halves (tq < 2) or low */
    float acc[KS][4];
#pragma unroll
    for (int i = 0; i < KS; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    float ma = -INFINITY, mb = -INFINITY, la = 0.0f, lb = 0.0f;
    /* the P^T lane a column g takes its p from: (g & 3) >> 1 picks the head pair, lanes t >= 2 offer the pair's second */
    const int src = ((g & 3) >> 1) + 2 * (g & 1), part = g >> 2;

    for (int j0 = r0 + 16 * w; j0 < r1; j0 += 16 * NW) { /* warp-uniform: row j0 is visible */
        uint4 kr[2][NS], vr[4][NM];
#pragma unroll
        for (int rr = 0; rr < 2; rr++) { /* K rows j0 + g, j0 + g + 8 (past r1: zeros, masked below) */
            const int j = j0 + g + 8 * rr;
            const bool ok = j < r1;
            const uint16_t *p = kb + (size_t)(PG ? kv_row(tb, lbs, ok ? j : j0) : (ok ? j : j0)) * stride;
#pragma unroll
            for (int s = 0; s < NS; s++) kr[rr][s] = ok ? __ldg((const uint4 *)(p + 32 * s)) : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int kk = 0; kk < 4; kk++) { /* V rows j0 + 2 tq + {0, 1, 8, 9} */
            const int j = j0 + 2 * tq + (kk & 1) + 8 * (kk >> 1);
            const bool ok = j < r1;
            const uint16_t *p = vb + (size_t)(PG ? kv_row(tb, lbs, ok ? j : j0) : (ok ? j : j0)) * stride;
#pragma unroll
            for (int mh = 0; mh < NM; mh++) vr[kk][mh] = ok ? __ldg((const uint4 *)(p + 64 * mh)) : make_uint4(0u, 0u, 0u, 0u);
        }
        float sc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int k = 0; k < KS; k++) {
            const int s = k >> 1, h = k & 1;
            tc_mma(sc, tc_word(kr[0][s], 2 * h), tc_word(kr[1][s], 2 * h), tc_word(kr[0][s], 2 * h + 1),
                   tc_word(kr[1][s], 2 * h + 1), qb[k][0], qb[k][1]);
        }
        /* the scores of keys j0 + g (x[0], x[1]) and j0 + g + 8 (x[2], x[3]) for heads ha, hb */
        float x[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float full = sc[i] + __shfl_xor_sync(0xffffffffu, sc[i], 2);
            x[i] = j0 + g + 8 * (i >> 1) < r1 ? full * scale : -INFINITY;
        }
        float tma = fmaxf(x[0], x[2]), tmb = fmaxf(x[1], x[3]);
#pragma unroll
        for (int o = 4; o < 32; o <<= 1) {
            tma = fmaxf(tma, __shfl_xor_sync(0xffffffffu, tma, o));
            tmb = fmaxf(tmb, __shfl_xor_sync(0xffffffffu, tmb, o));
        }
        const float na = fmaxf(ma, tma), nb = fmaxf(mb, tmb); /* finite: row j0 is visible */
        const float ca = ma == -INFINITY ? 0.0f : expf(ma - na), cb = mb == -INFINITY ? 0.0f : expf(mb - nb);
        float p[4];
        p[0] = x[0] == -INFINITY ? 0.0f : expf(x[0] - na);
        p[1] = x[1] == -INFINITY ? 0.0f : expf(x[1] - nb);
        p[2] = x[2] == -INFINITY ? 0.0f : expf(x[2] - na);
        p[3] = x[3] == -INFINITY ? 0.0f : expf(x[3] - nb);
        la = la * ca + (p[0] + p[2]);
        lb = lb * cb + (p[1] + p[3]);
        ma = na;
        mb = nb;
#pragma unroll
        for (int i = 0; i < KS; i++) {
            acc[i][0] *= ca;
            acc[i][1] *= cb;
            acc[i][2] *= ca;
            acc[i][3] *= cb;
        }
        /* P^T's fragments: column g (head g & 3, part g >> 2), keys 2 tq, 2 tq + 1 (b0) and + 8 (b1); key k's p of head
         * h sits in lane 4 (k & 7) + (h >> 1) + 2 (h & 1), which offers column h & 1 */
        const float o0 = tq < 2 ? p[0] : p[1], o1 = tq < 2 ? p[2] : p[3];
        const float pa0 = __shfl_sync(0xffffffffu, o0, 8 * tq + src), pb0 = __shfl_sync(0xffffffffu, o0, 8 * tq + 4 + src);
        const float pa1 = __shfl_sync(0xffffffffu, o1, 8 * tq + src), pb1 = __shfl_sync(0xffffffffu, o1, 8 * tq + 4 + src);
        const uint32_t b0 = tc_half(pa0, part) | tc_half(pb0, part) << 16, b1 = tc_half(pa1, part) | tc_half(pb1, part) << 16;
#pragma unroll
        for (int i = 0; i < KS; i++) {
            const int mh = i >> 2, wi = i & 3;
            const uint32_t v0 = tc_word(vr[0][mh], wi), v1 = tc_word(vr[1][mh], wi);
            const uint32_t v2 = tc_word(vr[2][mh], wi), v3 = tc_word(vr[3][mh], wi);
            tc_mma(acc[i], __byte_perm(v0, v1, 0x5410), __byte_perm(v0, v1, 0x7632), __byte_perm(v2, v3, 0x5410),
                   __byte_perm(v2, v3, 0x7632), b0, b1);
        }
    }

    /* the warp's (m, l) per head: l over its lanes (keys g, g + 8 of every step) by an xor tree, the same sum in every
     * lane; the accumulator's high and low columns added (lanes tq and tq ^ 2) */
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) {
        la += __shfl_xor_sync(0xffffffffu, la, o);
        lb += __shfl_xor_sync(0xffffffffu, lb, o);
    }
#pragma unroll
    for (int i = 0; i < KS; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[i][e] += __shfl_xor_sync(0xffffffffu, acc[i][e], 2);
    if (tq < 2) {
        if (g == 0) {
            sm_m[w][2 * tq] = ma;
            sm_m[w][2 * tq + 1] = mb;
            sm_l[w][2 * tq] = la;
            sm_l[w][2 * tq + 1] = lb;
        }
#pragma unroll
        for (int i = 0; i < KS; i++) {
            const int d = 64 * (i >> 2) + 8 * g + 2 * (i & 3);
            sm_o[w][2 * tq][d] = acc[i][0];
            sm_o[w][2 * tq + 1][d] = acc[i][1];
            sm_o[w][2 * tq][d + 1] = acc[i][2];
            sm_o[w][2 * tq + 1][d + 1] = acc[i][3];
        }
    }
    __syncthreads();
    /* each head's (M, L) by thread h, in warp order (empty warps skipped); with S > 1 also to the workspace */
    if ((int)threadIdx.x < QH) {
        const int h = (int)threadIdx.x;
        float M = -INFINITY;
        for (int i = 0; i < NW; i++) M = fmaxf(M, sm_m[i][h]);
        float L = 0.0f;
        for (int i = 0; i < NW; i++) L = __fadd_rn(L, sm_m[i][h] == -INFINITY ? 0.0f : __fmul_rn(sm_l[i][h], expf(sm_m[i][h] - M)));
        sm_ML[0][h] = M;
        sm_ML[1][h] = L;
        if (S > 1 && h < n_real) {
            float *ml = ws + (size_t)n * n_head * SZ * HD;
            const size_t sl = ((size_t)t * n_head + (size_t)(h0 + h)) * SZ + z;
            ml[2 * sl] = M;
            ml[2 * sl + 1] = L;
        }
    }
    __syncthreads();
    if ((int)threadIdx.x < NW * QH) {
        const int i = (int)threadIdx.x;
        sm_f[i / QH][i % QH] = att_warp_factor(sm_m[i / QH][i % QH], sm_ML[0][i % QH], sm_ML[1][i % QH], S);
    }
    __syncthreads();
    /* element (h, d): the warps' accumulators weighted, summed in warp order; a warp's 32 values are one 32-element
     * block of one head (HD a multiple of 32, 256 threads), as att_put's x16 form needs */
    for (int i = (int)threadIdx.x; i < QH * HD; i += (int)blockDim.x) {
        const int h = i / HD, d = i % HD;
        if (h >= n_real) continue;
        float o = __fmul_rn(sm_o[0][h][d], sm_f[0][h]);
#pragma unroll
        for (int v = 1; v < NW; v++) o = __fadd_rn(o, __fmul_rn(sm_o[v][h][d], sm_f[v][h]));
        if (S > 1) ws[(((size_t)t * n_head + (size_t)(h0 + h)) * SZ + z) * HD + d] = o;
        else {
            const size_t e = ((size_t)t * n_head + (size_t)(h0 + h)) * HD + d;
            out[e] = o;
            if (xq) att_put(o, lane, (int64_t)e, xq, plane);
        }
    }
}

/* v7 launches this host thread issued (tests: the arm ran) */
static thread_local uint64_t g_att_tc_launches;
extern "C" uint64_t tcu_attention_tc_count(void) { return g_att_tc_launches; }

/* 1 when this device runs mma.sync's f16 form (sm_80 on), cached per device */
static int att_tc_device_ok(void) {
    static int ok[32]; /* 0 unknown, 1 yes, 2 no */
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 32) return 0;
    if (!__atomic_load_n(&ok[dev], __ATOMIC_RELAXED)) {
        int major = 0;
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        __atomic_store_n(&ok[dev], major >= 8 ? 1 : 2, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&ok[dev], __ATOMIC_RELAXED) == 1;
}

/* attention.cu's decode configuration hands its f16-cache calls here when the arm is on: launches v7 on the grid
 * (n, n_head_kv * chunks, S) and returns 1, or returns 0 (nothing launched: hd not 64 or 128, a head ratio that is not
 * whole, a device below sm_80). S > 1: ws is the split workspace (tcu_attention_ws_bytes) and the caller launches the
 * combine; xq, plane as attention.cu's att_put. */
extern "C" int tcu_attention_tc_launch(const float *q, const void *kc, const void *vc, int n, const int32_t *pos,
                                       const int32_t *bt, const int32_t *bt_off, int lbs, int win, int rps, int n_head,
                                       int n_head_kv, int hd, float scale, float *out, int S, float *ws, void *xq,
                                       size_t plane, cudaStream_t st) {
    if (n <= 0 || n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv || (hd != 64 && hd != 128)) return 0;
    if (!att_tc_device_ok()) return 0;
    const int G = n_head / n_head_kv, n_chunk = (G + ATT_TC_QH - 1) / ATT_TC_QH;
    const dim3 grid((unsigned)n, (unsigned)(n_head_kv * n_chunk), (unsigned)(S > 1 ? S : 1)), block(ATT_TC_WARPS * 32);
    typedef void (*tc_fn)(const float *, const void *, const void *, int, const int32_t *, int, int, float, float *, int,
                          float *, void *, size_t, int, const int32_t *, const int32_t *, int, int);
    const tc_fn kf = hd == 64 ? (bt ? attention_tc_kernel<64, 1> : attention_tc_kernel<64, 0>)
                              : (bt ? attention_tc_kernel<128, 1> : attention_tc_kernel<128, 0>);
    PDL_LAUNCH(kf, grid, block, 0, st, q, kc, vc, n, pos, n_head, n_head_kv, scale, out, n_chunk, ws, xq, plane, rps, bt,
               bt_off, lbs, win);
    g_att_tc_launches++;
    return 1;
}
