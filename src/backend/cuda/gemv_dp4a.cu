/* gemv_dp4a.cu: decode GEMV for Q4_0, Q4_1, Q8_0, Q4_K and Q6_K weights by integer dot products (__dp4a: 4 int8 products
 * and a sum per instruction), replacing 32 dequantize-and-FMA steps of the f32 path (gemv.cu) per block;
 * the f32 path measured issue-bound on Q4_0 (~1.2 TB/s).
 *
 * Activations: per 32-element block, 16-bit fixed point: d = amax / 32512, q = round-half-even(x*32512/amax)
 * in [-32512, 32512], stored as two int8 planes, q = 256*hi + lo (lo = the low byte as a signed value, so hi
 * stays in [-127, 127]). The block's dot is one exact int32: Σ w·q = 256·Σ w·hi + Σ w·lo, minus 8·Σ q for
 * Q4_0's offset (|.| < 2^28). 8-bit activations (tern's CPU rule, llama.cpp's) were tried first and put
 * the 2-layer synthetic Llama-3-8B's logits 1.7e-2 from the CPU reference (bar 1e-2; the f32 path: 1e-3;
 * docs/ledger.md); 15 bits cost 8 more dp4a and 32 more activation bytes per block (L1-resident, reused
 * over R rows) and keep the f32 path's accuracy. Per block: acc = fma(dw*d, (float)isum, acc), blocks in order.
 *
 * Weights: Q4_0, Q8_0 and Q4_K arrive repacked at upload (tcu.h TCU_TYPE_Q4_0R/Q8_0R/Q4_KR: a 32-block's
 * quants are aligned 16-byte loads, read evict-first); the GGUF block layouts (Q4_1, Q6_K, and any caller that
 * keeps them) are read as 32-bit words from the 4-byte-aligned address at or below a block's quant bytes (18- and
 * 34-byte blocks are 2-byte aligned), realigned by __funnelshift_r.
 * Kernel families (q8_family, the one chooser; bench/sweeps/dp4a.md, bench/sweeps/tma.md): 0 cta (a CTA per R rows,
 * software-pipelined), 1 warp (a warp per R rows), 3 tma (bulk-copy-staged, the large matrices); each has its
 * bit-identical multi-column twin. The arms that lost (cp.async staging, shared-memory staging, sub-CTAs, the RoPE
 * epilogue, the RMSNorm prologue, the sweep switches) are in dev/cuda/gemv_dp4a_arms.cu.
 *
 * Activation buffer for m columns of n_in (tcu_x16_bytes): int8 hi[m][n_in], int8 lo[m][n_in], then
 * int2 ds[m][n_in/32] = (bits of the f32 d, Σ q); each part at a 16-byte aligned offset.
 * Bit-identity: the multi-column kernel applies each decoded weight block to every column with the
 * single-column kernel's operations in its order (blocks t, t+128, ... per thread; the same xor-shuffle
 * tree; warps in order), so column c of tcu_gemv_dp4a(m) equals tcu_gemv_dp4a(1) on x_c bit for bit.
 * CPU reference (tests/gpu/gpu_multi.c): the quantizer against the same rule in C, byte for byte; the GEMV
 * against the double dot of the dequantized weights with the dequantized activations.
 * The chunk-order arm (issue 26 v2; tcu_gemv_order_set(1), from tern_config.gemv_chunk): every family of the
 * repacked types sums in reduce.cuh's chunk-major order instead (a butterfly a 32-block chunk, chunks in order; the
 * cta family parks its warps' chunk sums in shared memory), the order gemm_mma.cu's v2 follows; the memory access is
 * unchanged.
 * Default off: the default path's bits do not change until an A/B of single-stream decode says so. In that order
 * the families give the same bits as each other. Checked by tests/gpu/gpu_mma.c (twins, v2, a float64 bound). */
#include <cuda_fp16.h>
#include <stdint.h>
#include <string.h>

#include "cuda/check.cuh"
#include "cuda/dequant.cuh"
#include "cuda/pdl.cuh"
#include "cuda/reduce.cuh"
#include "cuda/tcu.h"
#include "cuda/x16.cuh"

#define Q8_WARPS 4
#define Q8_T (Q8_WARPS * 32)
#define plane_bytes x16_plane_bytes

extern "C" size_t tcu_x16_bytes(int m, int64_t n_in) {
    return 2 * plane_bytes(m, n_in) + sizeof(int2) * (size_t)m * (size_t)(n_in / 32);
}


/* ---- activations: one warp per 32-element block ---- */
__global__ void quant_x16_k(const float *__restrict__ x, int64_t nb, void *__restrict__ xq, size_t plane) {
    pdl_trigger();
    pdl_wait();
    const int64_t b = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    if (b >= nb) return;
    x16_put(x[b * 32 + (threadIdx.x & 31)], threadIdx.x & 31, b, xq, plane);
}

extern "C" void tcu_quantize_x16(const float *x, int m, int64_t n_in, void *xq, cudaStream_t st) {
    const int64_t nb = (int64_t)m * (n_in / 32);
    PDL_LAUNCH(quant_x16_k, dim3((unsigned)((nb + 7) / 8)), dim3(256), 0, st, x, nb, xq, plane_bytes(m, n_in));
}

/* ---- weights: one block as 8 words of 4 signed bytes (element order 4i..4i+3 in word i) and d ---- */

/* n words of the bytes at p (2-byte aligned), via 4-byte loads and a funnel shift. */
template <int N> static __device__ __forceinline__ void ld_words(const uint8_t *p, uint32_t *w) {
    const uintptr_t a = (uintptr_t)p;
    const uint32_t *wp = (const uint32_t *)(a & ~(uintptr_t)3);
    if ((a & 3) == 0) {
#pragma unroll
        for (int i = 0; i < N; i++) w[i] = wp[i];
    } else {
        uint32_t v[N + 1];
#pragma unroll
        for (int i = 0; i <= N; i++) v[i] = wp[i];
#pragma unroll
        for (int i = 0; i < N; i++) w[i] = __funnelshift_r(v[i], v[i + 1], 16);
    }
}

template <int T> static __device__ __forceinline__ void load_blk(const uint8_t *row, int b, int *wq, float *dw, float *mw);

/* Q4_0: 18 bytes = fp16 d, 16 bytes of nibbles (element j low nibble of byte j, element j+16 high). */
template <> __device__ __forceinline__ void load_blk<TERN_TYPE_Q4_0>(const uint8_t *row, int b, int *wq, float *dw, float *mw) {
    *mw = 0.0f;
    const uint8_t *p = row + (size_t)b * 18;
    *dw = dq_h2f(dq_ld16(p));
    uint32_t w[4];
    ld_words<4>(p + 2, w);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        wq[i] = (int)(w[i] & 0x0F0F0F0Fu);
        wq[4 + i] = (int)((w[i] >> 4) & 0x0F0F0F0Fu);
    }
}

/* Q8_0: 34 bytes = fp16 d, 32 signed bytes. */
/* Q4_1: 20 bytes = fp16 d, fp16 m, 16 bytes of nibbles (value d*q + m); every field 4-byte aligned. */
template <> __device__ __forceinline__ void load_blk<TERN_TYPE_Q4_1>(const uint8_t *row, int b, int *wq, float *dw, float *mw) {
    const uint8_t *p = row + (size_t)b * 20;
    const uint32_t dm = *(const uint32_t *)p;
    *dw = dq_h2f((uint16_t)(dm & 0xFFFFu));
    *mw = dq_h2f((uint16_t)(dm >> 16));
    const uint32_t *qw = (const uint32_t *)(p + 4);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t w = qw[i];
        wq[i] = (int)(w & 0x0F0F0F0Fu);
        wq[4 + i] = (int)((w >> 4) & 0x0F0F0F0Fu);
    }
}

template <> __device__ __forceinline__ void load_blk<TERN_TYPE_Q8_0>(const uint8_t *row, int b, int *wq, float *dw, float *mw) {
    *mw = 0.0f;
    const uint8_t *p = row + (size_t)b * 34;
    *dw = dq_h2f(dq_ld16(p));
    ld_words<8>(p + 2, (uint32_t *)wq);
}

/* Weight quant loads of the repacked types: the evict-first streaming load (ld.global.cs; weights are read
 * once a step), +2.2% tg128 on Q4_0 and +1.1% on Q8_0 over plain loads (docs/ledger.md). Global memory only
 * (the tma kernel reads its shared-memory copy through sload_blk). */
#define WLD(p) __ldcs(p)

/* 16 bytes of nibbles in Q4_0's order (byte i: element i low, element i + 16 high) as 8 words of 4 bytes
 * (element order 4i..4i+3 in word i). */
static __device__ __forceinline__ void nib16_words(const uint4 q, int *wq) {
    const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        wq[i] = (int)(w[i] & 0x0F0F0F0Fu);
        wq[4 + i] = (int)((w[i] >> 4) & 0x0F0F0F0Fu);
    }
}

/* The repacked Q4_0 and Q8_0 (tcu.h, dequant.cuh): a block's quants are one (two) aligned 16-byte loads, and
 * the 32 lanes of a warp on 32 consecutive blocks read 4 whole groups (576 or 1088 contiguous bytes). */
template <> __device__ __forceinline__ void load_blk<TCU_TYPE_Q4_0R>(const uint8_t *row, int b, int *wq, float *dw, float *mw) {
    *mw = 0.0f;
    const uint8_t *g = row + (size_t)(b >> 3) * RQ40_GROUP;
    *dw = dq_h2f(dq_ld16(g + 2 * (b & 7)));
    nib16_words(WLD((const uint4 *)(g + 16 + 16 * (b & 7))), wq);
}

template <> __device__ __forceinline__ void load_blk<TCU_TYPE_Q8_0R>(const uint8_t *row, int b, int *wq, float *dw, float *mw) {
    *mw = 0.0f;
    const uint8_t *g = row + (size_t)(b >> 3) * RQ80_GROUP;
    *dw = dq_h2f(dq_ld16(g + 2 * (b & 7)));
    const uint4 *q = (const uint4 *)(g + 16 + 32 * (b & 7));
    const uint4 a = WLD(q), c = WLD(q + 1);
    wq[0] = (int)a.x; wq[1] = (int)a.y; wq[2] = (int)a.z; wq[3] = (int)a.w;
    wq[4] = (int)c.x; wq[5] = (int)c.y; wq[6] = (int)c.z; wq[7] = (int)c.w;
}

/* TCU_TYPE_Q4_KR (tcu.h): the Q4_K header, then the block's 16 nibble bytes in Q4_0's order: one
 * streaming 16-byte load where Q4_K reads 32 bytes and keeps half of each. */
template <> __device__ __forceinline__ void load_blk<TCU_TYPE_Q4_KR>(const uint8_t *row, int b, int *wq, float *dw, float *mw) {
    const uint8_t *p = row + (size_t)(b >> 3) * 144;
    k4_header(p, b & 7, dw, mw); /* the header is shared by the 8 lanes of the super-block (one request) */
    nib16_words(WLD((const uint4 *)(p + 16 + 16 * (b & 7))), wq);
}

/* Q4_K (GGUF spec / ggml block_q4_K): 144-byte super-blocks of 256 = f16 d, f16 dmin, 12 bytes of 6-bit
 * (scale, min) pairs for 8 sub-blocks of 32 (dq_k4_scale_min), 128 bytes of nibbles: byte i of group g
 * (g = 0..3, 32 bytes at 16 + 32g) holds element 64g + i (low nibble) and 64g + 32 + i (high). Value
 * x = d*sc*q - dmin*mn. Block b here is sub-block b % 8 of super-block b / 8, so it lines up with the
 * activation's 32-blocks: dw = d*sc, mw = -(dmin*mn) (the Q4_1 form: Σ w·x = dw·dx·Σqw·qx + mw·dx·Σqx).
 * Super-blocks are 16-byte aligned (144 = 9 * 16, rows padded to 16 bytes): the 32 nibble bytes are two
 * 16-byte loads; the 8 threads of a super-block read its 16-byte header once each (L1). */
template <> __device__ __forceinline__ void load_blk<TERN_TYPE_Q4_K>(const uint8_t *row, int b, int *wq, float *dw, float *mw) {
    const uint8_t *p = row + (size_t)(b >> 3) * 144;
    const int j = b & 7;
    k4_header(p, j, dw, mw);
    const uint4 *q = (const uint4 *)(p + 16 + (j >> 1) * 32);
    const uint4 a = q[0], c = q[1];
    const uint32_t w[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
    const int sh = 4 * (j & 1);
#pragma unroll
    for (int i = 0; i < 8; i++) wq[i] = (int)((w[i] >> sh) & 0x0F0F0F0Fu);
}

/* Q6_K (GGUF spec / ggml block_q6_K): 210-byte super-blocks of 256 = ql[128] (low 4 bits), qh[64] (high 2
 * bits), int8 scales[16] (one per 16 elements), f16 d; x = d*sc*(q - 32). Element e: half h = e/128,
 * quarter qq = (e%128)/32, l = e%32: low nibble (qq/2) of ql[64h + 32(qq%2) + l], bits 2qq of qh[32h + l],
 * scale sc[8h + l/16 + 2qq]. Block b here is quarter b%4 of half (b%8)/4 of super-block b/8: 32 ql and 32
 * qh bytes, two scales (dw = d*sc for elements 0-15, mw = d*sc for 16-31; blk_dot sums the two 16-element
 * halves apart). q - 32 per byte by __vsub4. Super-blocks are 2-byte aligned (210 bytes): ld_words. */
template <> __device__ __forceinline__ void load_blk<TERN_TYPE_Q6_K>(const uint8_t *row, int b, int *wq, float *dw, float *mw) {
    const uint8_t *p = row + (size_t)(b >> 3) * 210;
    const int h = (b >> 2) & 1, qq = b & 3;
    const float d = dq_h2f(dq_ld16(p + 208));
    *dw = __fmul_rn(d, (float)(int8_t)p[192 + 8 * h + 2 * qq]);
    *mw = __fmul_rn(d, (float)(int8_t)p[192 + 8 * h + 2 * qq + 1]);
    uint32_t ql[8], qh[8];
    ld_words<8>(p + 64 * h + 32 * (qq & 1), ql);
    ld_words<8>(p + 128 + 32 * h, qh);
    const int sl = 4 * (qq >> 1), shh = 2 * qq;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint32_t v = ((ql[i] >> sl) & 0x0F0F0F0Fu) | (((qh[i] >> shh) & 0x03030303u) << 4);
        wq[i] = (int)__vsub4(v, 0x20202020u);
    }
}

/* The block's two plane sums sh = Σ w·hi, sl = Σ w·lo over its 32 activation bytes of each plane. */
static __device__ __forceinline__ void dot_hl(const int *wq, const int8_t *hi, const int8_t *lo, int &sh, int &sl) {
    const int4 ha = __ldg((const int4 *)hi);
    const int4 hb = __ldg((const int4 *)(hi + 16));
    const int4 la = __ldg((const int4 *)lo);
    const int4 lb = __ldg((const int4 *)(lo + 16));
    sh = 0, sl = 0;
    sh = __dp4a(wq[0], ha.x, sh); sh = __dp4a(wq[1], ha.y, sh); sh = __dp4a(wq[2], ha.z, sh); sh = __dp4a(wq[3], ha.w, sh);
    sh = __dp4a(wq[4], hb.x, sh); sh = __dp4a(wq[5], hb.y, sh); sh = __dp4a(wq[6], hb.z, sh); sh = __dp4a(wq[7], hb.w, sh);
    sl = __dp4a(wq[0], la.x, sl); sl = __dp4a(wq[1], la.y, sl); sl = __dp4a(wq[2], la.z, sl); sl = __dp4a(wq[3], la.w, sl);
    sl = __dp4a(wq[4], lb.x, sl); sl = __dp4a(wq[5], lb.y, sl); sl = __dp4a(wq[6], lb.z, sl); sl = __dp4a(wq[7], lb.w, sl);
}

/* The block's contribution, added to acc: fma(dw*d, isum, acc) with isum the exact integer dot. */
template <int T>
static __device__ __forceinline__ float blk_dot(const int *wq, float dw, float mw, const int8_t *hi, const int8_t *lo,
                                                int2 ds, float acc) {
    const float dx = __int_as_float(ds.x);
    if (T == TERN_TYPE_Q6_K) { /* two 16-element halves with their own scales (dw, mw); each |sum| < 2^24. The four
                                * half-block plane sums straight (16 dp4a; the whole-block sums first, then half 0's,
                                * took 24): the same integers, so the same bits. Predicted +5-9% at 64 sequences on a
                                * Q6_K head, measured +0.6% (+0.8% at 16; docs/ledger.md 2026-12-05 "the Q6_K twin's
                                * plane sums"): the dp4a count is not what bounds the twin at 16 columns */
        const int4 ha = __ldg((const int4 *)hi), hb = __ldg((const int4 *)(hi + 16));
        const int4 la = __ldg((const int4 *)lo), lb = __ldg((const int4 *)(lo + 16));
        int h0 = 0, h1 = 0, l0 = 0, l1 = 0;
        h0 = __dp4a(wq[0], ha.x, h0); h0 = __dp4a(wq[1], ha.y, h0); h0 = __dp4a(wq[2], ha.z, h0); h0 = __dp4a(wq[3], ha.w, h0);
        h1 = __dp4a(wq[4], hb.x, h1); h1 = __dp4a(wq[5], hb.y, h1); h1 = __dp4a(wq[6], hb.z, h1); h1 = __dp4a(wq[7], hb.w, h1);
        l0 = __dp4a(wq[0], la.x, l0); l0 = __dp4a(wq[1], la.y, l0); l0 = __dp4a(wq[2], la.z, l0); l0 = __dp4a(wq[3], la.w, l0);
        l1 = __dp4a(wq[4], lb.x, l1); l1 = __dp4a(wq[5], lb.y, l1); l1 = __dp4a(wq[6], lb.z, l1); l1 = __dp4a(wq[7], lb.w, l1);
        const int s0 = h0 * 256 + l0, s1 = h1 * 256 + l1;
        acc = fmaf(__fmul_rn(dw, dx), __int2float_rn(s0), acc);
        return fmaf(__fmul_rn(mw, dx), __int2float_rn(s1), acc);
    }
    int sh, sl;
    dot_hl(wq, hi, lo, sh, sl);
    int s = sh * 256 + sl;
    if (T == TERN_TYPE_Q4_0 || T == TCU_TYPE_Q4_0R) s -= 8 * ds.y;
    acc = fmaf(__fmul_rn(dw, dx), __int2float_rn(s), acc);
    /* Q4_1 / Q4_K minimum: Σ m·x = m·d·Σq, one more term in the same fixed order */
    if (T == TERN_TYPE_Q4_1 || T == TERN_TYPE_Q4_K || T == TCU_TYPE_Q4_KR)
        acc = fmaf(__fmul_rn(mw, dx), __int2float_rn(ds.y), acc);
    return acc;
}

/* The chunk order's leaf of the block (reduce.cuh chunk_leaf): the repacked types only (the dispatch instantiates
 * CH = 1 for them alone; Q6_K's two half-block terms have no leaf form here). */
template <int T>
static __device__ __forceinline__ float blk_leaf(const int *wq, float dw, float mw, const int8_t *hi, const int8_t *lo,
                                                 int2 ds) {
    int sh, sl;
    dot_hl(wq, hi, lo, sh, sl);
    int s = sh * 256 + sl;
    if (T == TCU_TYPE_Q4_0R) s -= 8 * ds.y;
    return chunk_leaf(dw, __int_as_float(ds.x), s, mw, ds.y, T == TCU_TYPE_Q4_KR);
}

/* gemv_q8_pipe_k: the cta family. A CTA of 4 warps owns R rows at a time (persistent over row groups); thread t
 * takes blocks t, t+128, ... of each row; the activation block is loaded once for the R rows. Software-pipelined
 * (+1.6% over the plain loop, gemv_q8_k in dev/cuda/gemv_dp4a_arms.cu): the CTA walks (row group, block step k) pairs in order and
 * issues the loads of the next pair before the dot products of the current one, so each thread has two
 * blocks per row in flight and the CTA reduction of a finished group overlaps the next group's loads.
 * Motive: at n_in = 4096 each thread owns one block per row, so gemv_q8_k waits one memory latency per row
 * group and the CTA reduction sits between them (Little's law: ~41 KB in flight an SM at 9 CTAs an SM,
 * 2.06 TB/s on Q4_0 4096x14336). Every thread takes ceil(nb / 128) steps per group (loads and dots
 * predicated on b < nb) so all threads reach each reduction together. */
template <int T, int R>
static __device__ __forceinline__ void pipe_load(const uint8_t *__restrict__ w, size_t stride, int n_out, int g, int b,
                                                 int nb, int (&wq)[R][8], float (&dw)[R], float (&mw)[R]) {
    if (b >= nb) return;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int row = g * R + r < n_out ? g * R + r : n_out - 1;
        load_blk<T>(w + (size_t)row * stride, b, wq[r], &dw[r], &mw[r]);
    }
}

/* The cta family's chunk order (CH = 1; reduce.cuh): at step k warp w holds chunk j = 4k + w (thread t = 32w + l has
 * block t + 128k = 32j + l), so the warp's butterfly (chunk_tree32_n) gives T_j of each output, which the lane owning
 * it parks in cpart[j][n] (n of the N outputs); at the group's end thread n < nout adds cpart[0..nch)[n] in chunk
 * order. Shared memory: nch * N floats (dynamic). */
template <int N>
static __device__ __forceinline__ void cta_chunk_out(float (*cpart)[N], int nch, int nout, float *y, size_t ystride) {
    __syncthreads();
    if ((int)threadIdx.x < nout) {
        /* in chunk order; 8 chunks' loads first, then their adds, and the last < 8 predicated: the plain loop
         * compiled to an unrolled-by-16/8/4 cascade with a remainder (SASS: 7 branches and the shared window's
         * base re-read before the first load) on the path every warp waits for at the next barrier */
        const int t = (int)threadIdx.x;
        float v = -0.0f;
        int j = 0;
        for (; j + 8 <= nch; j += 8) {
            float c[8];
#pragma unroll
            for (int i = 0; i < 8; i++) c[i] = cpart[j + i][t];
#pragma unroll
            for (int i = 0; i < 8; i++) v = __fadd_rn(v, c[i]);
        }
        float c[7];
#pragma unroll
        for (int i = 0; i < 7; i++) c[i] = j + i < nch ? cpart[j + i][t] : 0.0f;
#pragma unroll
        for (int i = 0; i < 7; i++)
            if (j + i < nch) v = __fadd_rn(v, c[i]);
        y[(size_t)t * ystride] = v;
    }
    __syncthreads();
}

/* One step: dots of (g, k) from cur (issuing (g', k') into nxt first), the group's reduction when k is its
 * last step. Returns 0 when (g', k') is past the last group. CH: the chunk order (cta_chunk_out). */
template <int T, int R, int CH>
static __device__ __forceinline__ int pipe_step(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, int K,
                                                int G, const int8_t *__restrict__ xh, const int8_t *__restrict__ xl,
                                                const int2 *__restrict__ xds, float *__restrict__ y, int &g, int &k,
                                                int (&wc)[R][8], float (&dc)[R], float (&mc)[R], int (&wn)[R][8],
                                                float (&dn)[R], float (&mn)[R], float (&acc)[R],
                                                float (*part)[R], int tid, int vg, float (*cpart)[R]) {
    int gn = g, kn = k + 1;
    if (kn == K) { kn = 0; gn = g + vg; }
    const int more = gn < G;
    if (more) pipe_load<T, R>(w, stride, n_out, gn, tid + kn * Q8_T, nb, wn, dn, mn);
    const int b = tid + k * Q8_T;
    if (CH) {
        const int j = 4 * k + (tid >> 5);
        /* One test of b < nb around all R leaves, and the butterfly outside any test (a warp whose chunk is past the
         * end trees +0.0 leaves and parks nothing). The first form (a test a row, the butterfly inside the chunk's
         * test) loaded the activation block once a row (its SASS) and ran 27% slower than the plain order at m = 1
         * (bench/gpu/s18-9363872: 10.32 -> 13.05 us a launch) */
        float v[R];
#pragma unroll
        for (int r = 0; r < R; r++) v[r] = 0.0f;
        if (b < nb) {
            const int2 ds = __ldg(xds + b);
#pragma unroll
            for (int r = 0; r < R; r++)
                v[r] = blk_leaf<T>(wc[r], dc[r], mc[r], xh + (size_t)b * 32, xl + (size_t)b * 32, ds);
        }
        chunk_tree32_n<R>(v, tid & 31); /* R < 32: lane l < R holds row chunk_tree_n_idx(0, l) */
        if (32 * j < nb && (tid & 31) < R) cpart[j][chunk_tree_n_idx<R>(0, tid & 31)] = v[0];
        if (kn == 0) {
            const int r0 = g * R;
            cta_chunk_out<R>(cpart, (nb + 31) >> 5, n_out - r0 < R ? n_out - r0 : R, y + r0, 1);
        }
    } else if (b < nb) {
        const int2 ds = __ldg(xds + b);
#pragma unroll
        for (int r = 0; r < R; r++)
            acc[r] = blk_dot<T>(wc[r], dc[r], mc[r], xh + (size_t)b * 32, xl + (size_t)b * 32, ds, acc[r]);
    }
    if (!CH && kn == 0) {
        const int r0 = g * R;
        cta_sum_out<Q8_WARPS, R>(acc, part, n_out - r0 < R ? n_out - r0 : R, y + r0, 1);
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = 0.0f;
    }
    g = gn;
    k = kn;
    return more;
}

/* nb >= 1 (q8_dispatch): with nb = 0 no group would end. The register budget is the compiler's (64 at R = 2, 8 CTAs an
 * SM); an occupancy floor by __launch_bounds__ (9 or 10 CTAs an SM) spilled and lost ("session 4", docs/ledger.md). */
template <int T, int R, int CH>
__global__ void __launch_bounds__(Q8_T, 0)
gemv_q8_pipe_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
               const int8_t *__restrict__ xl, const int2 *__restrict__ xds, float *__restrict__ y) {
    __shared__ float part[Q8_WARPS][R];
    extern __shared__ float q8_dyn[]; /* CH: cpart[ceil(nb / 32)][R] */
    float (*cpart)[R] = (float (*)[R])q8_dyn;
    const int tid = (int)threadIdx.x, vg = (int)gridDim.x;
    const int G = (n_out + R - 1) / R, K = (nb + Q8_T - 1) / Q8_T;
    int g = (int)blockIdx.x, k = 0;
    if (g >= G) { /* CTA-uniform; not reached while the grid has at most G CTAs (q8_launch). Waits first: a grid whose
                   * CTAs all waited is what lets the next kernel's pdl_wait stand for every earlier kernel (pdl.cuh) */
        pdl_trigger();
        pdl_wait();
        return;
    }
    int wa[R][8], wb[R][8];
    float da[R], db[R], ma[R], mb[R], acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    /* the first pair's weights are constant: loaded before waiting for the previous kernel (pdl.cuh). An L2 prefetch
     * of the matrix's head there took Q6_K's kernel from 64 to 66 registers (7 CTAs an SM), -2.6% tg128 */
    pipe_load<T, R>(w, stride, n_out, g, tid, nb, wa, da, ma);
    pdl_trigger();
    pdl_wait();
    for (;;) {
        if (!pipe_step<T, R, CH>(w, stride, nb, n_out, K, G, xh, xl, xds, y, g, k, wa, da, ma, wb, db, mb, acc, part, tid,
                                 vg, cpart))
            break;
        if (!pipe_step<T, R, CH>(w, stride, nb, n_out, K, G, xh, xl, xds, y, g, k, wb, db, mb, wa, da, ma, acc, part, tid,
                                 vg, cpart))
            break;
    }
}

/* The multi-column twins' step: block b of R rows (decoded into wq, dw, mw) applied to each of the m <= M
 * columns' activation block, into acc[c * R + r] (column c, row r), in the single-column kernels' order. */
template <int T, int M, int R>
static __device__ __forceinline__ void multi_dot(const int (&wq)[R][8], const float (&dw)[R], const float (&mw)[R], int b,
                                                 int nb, int m, const int8_t *__restrict__ xh,
                                                 const int8_t *__restrict__ xl, const int2 *__restrict__ xds,
                                                 float (&acc)[M * R]) {
    const size_t n_in = (size_t)nb * 32;
#pragma unroll
    for (int c = 0; c < M; c++)
        if (c < m) {
            const size_t o = c * n_in + (size_t)b * 32;
            const int2 ds = __ldg(xds + (size_t)c * nb + b);
#pragma unroll
            for (int r = 0; r < R; r++)
                acc[c * R + r] = blk_dot<T>(wq[r], dw[r], mw[r], xh + o, xl + o, ds, acc[c * R + r]);
        }
}

/* The chunk order's twins: block b of R rows (decoded into wq, dw, mw) against the m <= M columns: v[c * R + r] = the
 * leaf (reduce.cuh chunk_leaf), 0 for a column past m or a block past nb (the butterfly's +0.0 padding). */
template <int T, int M, int R>
static __device__ __forceinline__ void multi_leaves_w(const int (&wq)[R][8], const float (&dw)[R], const float (&mw)[R],
                                                      int b, int nb, int m, const int8_t *__restrict__ xh,
                                                      const int8_t *__restrict__ xl, const int2 *__restrict__ xds,
                                                      float (&v)[M * R]) {
    const size_t n_in = (size_t)nb * 32;
#pragma unroll
    for (int c = 0; c < M; c++) {
#pragma unroll
        for (int r = 0; r < R; r++) v[c * R + r] = 0.0f;
        if (c < m && b < nb) {
            const size_t o = c * n_in + (size_t)b * 32;
            const int2 ds = __ldg(xds + (size_t)c * nb + b);
#pragma unroll
            for (int r = 0; r < R; r++) v[c * R + r] = blk_leaf<T>(wq[r], dw[r], mw[r], xh + o, xl + o, ds);
        }
    }
}

/* multi_leaves_w with the R rows' block b loaded here (rows: the R row pointers). */
template <int T, int M, int R>
static __device__ __forceinline__ void multi_leaves(const uint8_t *const (&rows)[R], int b, int nb, int m,
                                                    const int8_t *__restrict__ xh, const int8_t *__restrict__ xl,
                                                    const int2 *__restrict__ xds, float (&v)[M * R]) {
    int wq[R][8];
    float dw[R], mw[R];
    if (b < nb) {
#pragma unroll
        for (int r = 0; r < R; r++) load_blk<T>(rows[r], b, wq[r], &dw[r], &mw[r]);
    }
    multi_leaves_w<T, M, R>(wq, dw, mw, b, nb, m, xh, xl, xds, v);
}

/* m <= M columns: a CTA owns R rows at a time; each weight block is decoded once for every column, and
 * each column's activation block serves the R rows. Thread t takes blocks t, t+128, ... of every row in
 * that order and each of the R*M sums is reduced as cta_sum_out reduces one (the warp's xor tree, then the
 * warps in order), so column c of row r equals the single-column kernels' value bit for bit, for any R
 * (gemv_q8_pipe_k; gpu_multi checks it). R = 1 was the first version: a row's blocks are one load a thread at
 * n_in = 4096, so a CTA waited one memory latency a row (docs/ledger.md "multi-column GEMV twins own R rows"). */
template <int T, int M, int R, int CH>
__global__ void __launch_bounds__(Q8_T)
gemv_q8_multi_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
                const int8_t *__restrict__ xl, const int2 *__restrict__ xds, int m, float *__restrict__ y) {
    __shared__ float part[Q8_WARPS][M * R];
    extern __shared__ float q8_dyn[]; /* CH: cpart[ceil(nb / 32)][M * R] */
    float (*cpart)[M * R] = (float (*)[M * R])q8_dyn;
    pdl_trigger();
    pdl_wait();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int r0 = blockIdx.x * R; r0 < n_out; r0 += gridDim.x * R) {
        const uint8_t *rows[R];
#pragma unroll
        for (int r = 0; r < R; r++) rows[r] = w + (size_t)(r0 + r < n_out ? r0 + r : n_out - 1) * stride;
        if (CH) { /* the chunk order: block b = 32j + lane of chunk j = 4k + warp, as gemv_q8_pipe_k */
            for (int j = warp; 32 * j < nb; j += Q8_WARPS) { /* warp-uniform */
                float v[M * R]; /* this lane's leaves (column c, row r at c * R + r), then its share of the trees */
                multi_leaves<T, M, R>(rows, 32 * j + lane, nb, m, xh, xl, xds, v);
                chunk_tree32_n<M * R>(v, lane);
#pragma unroll
                for (int i = 0; i < (M * R >= 32 ? M * R / 32 : 1); i++)
                    if (M * R >= 32 || lane < M * R) cpart[j][chunk_tree_n_idx<M * R>(i, lane)] = v[i];
            }
            __syncthreads();
            for (int jj = threadIdx.x; jj < M * R; jj += Q8_T) {
                const int c = jj / R, r = jj % R;
                if (c < m && r0 + r < n_out) {
                    float v = -0.0f;
                    for (int j = 0; 32 * j < nb; j++) v = __fadd_rn(v, cpart[j][jj]);
                    y[(size_t)c * n_out + r0 + r] = v;
                }
            }
            __syncthreads();
        } else {
            float acc[M * R]; /* column c, row r at c * R + r */
#pragma unroll
            for (int j = 0; j < M * R; j++) acc[j] = 0.0f;
            for (int b = threadIdx.x; b < nb; b += Q8_T) {
                int wq[R][8];
                float dw[R], mw[R];
#pragma unroll
                for (int r = 0; r < R; r++) load_blk<T>(rows[r], b, wq[r], &dw[r], &mw[r]);
                multi_dot<T, M, R>(wq, dw, mw, b, nb, m, xh, xl, xds, acc);
            }
            /* cta_sum_out's reduction of every value; output (c, r) to y[c * n_out + r0 + r] */
#pragma unroll
            for (int j = 0; j < M * R; j++) {
                float v = acc[j];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
                if (lane == 0) part[warp][j] = v;
            }
            __syncthreads();
            for (int j = threadIdx.x; j < M * R; j += Q8_T) {
                const int c = j / R, r = j % R;
                if (c < m && r0 + r < n_out) {
                    float v = part[0][j];
#pragma unroll
                    for (int k = 1; k < Q8_WARPS; k++) v += part[k][j];
                    y[(size_t)c * n_out + r0 + r] = v;
                }
            }
            __syncthreads();
        }
    }
}

/* A warp's R reduced rows (every lane holds every sum) out: lane r writes row r0 + r (r < nr). */
template <int R>
static __device__ __forceinline__ void warp_out(const float (&v)[R], int nr, float *y, int r0) {
    const int lane = (int)threadIdx.x & 31;
#pragma unroll
    for (int r = 0; r < R; r++)
        if (lane == r && r < nr) y[r0 + r] = v[r];
}

/* ---- bulk-copy-staged kernel (family 3; the per-weight rule is at q8_family) ----
 * A persistent grid of one CTA an SM (TM_WARPS warps); CTA c owns the contiguous row groups
 * [c*G/grid, (c+1)*G/grid) of R rows, and its warp j the groups j, j+TM_WARPS, ... of those. A warp walks its
 * units (row group, chunk of 32*U blocks of each of the R rows) in order through its own ring of P
 * shared-memory slots, each filled by R bulk copies (cp.async.bulk, Hopper's TMA engine: one instruction
 * for kilobytes, completion counted in bytes on the slot's mbarrier); P units are in flight a warp. The
 * first P units are issued before pdl_wait (weights are constant, pdl.cuh), so the weight stream starts
 * while the previous kernels of the step finish.
 * Motive: the cta kernel costs ~4.5 us a launch beyond its bytes (ramp-up, tail; docs/ledger.md), its
 * pre-wait prefetch is one block a row a thread, and its rate on a large matrix is ~3.4 TB/s.
 * Compute: the warp kernel's order (lane l takes blocks l, l+32, ... of each row in order, across chunks,
 * then the xor-shuffle tree), so the result equals gemv_q8_warp_k and the multi-column twin
 * gemv_q8_warp_multi_k bit for bit; no barrier. Two first versions lost (docs/ledger.md): teams of 4 warps in
 * the cta kernel's order (two named barriers a slot), and one whole R-row slot a warp (no overlap of a
 * warp's compute with its next load). Requires stride % 16 == 0 and w 16-byte aligned (rows are padded to
 * 16 bytes at upload); the launcher falls back to the warp kernel otherwise. */
#define TM_WARPS 16
#define TM_T (TM_WARPS * 32)
#define TM_MAX_SLOTS 128

/* The bulk-copy and mbarrier PTX exists from sm_90 on: below it these are empty, and q8_tma_launch never
 * launches the kernel there (it checks the device; the warp kernel gives the same bits). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TM_PTX 1
#else
#define TM_PTX 0
#endif
#if TM_PTX
static __device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
#endif
static __device__ __forceinline__ void mbar_init(uint64_t *b) {
#if TM_PTX
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_u32(b)) : "memory");
#endif
}
static __device__ __forceinline__ void mbar_init_fence(void) {
#if TM_PTX
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
/* One arrival that also expects `bytes` of transaction (the bulk copy's completion) on this phase. */
static __device__ __forceinline__ void mbar_expect_tx(uint64_t *b, uint32_t bytes) {
#if TM_PTX
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(b)), "r"(bytes) : "memory");
#endif
}
static __device__ __forceinline__ void mbar_wait(uint64_t *b, uint32_t parity) {
#if TM_PTX
    uint32_t ok;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}\n"
                     : "=r"(ok)
                     : "r"(smem_u32(b)), "r"(parity)
                     : "memory");
    } while (!ok);
#endif
}
/* bytes (a multiple of 16, both addresses 16-byte aligned) from global src to shared dst, counted on b. */
static __device__ __forceinline__ void bulk_g2s(void *dst, const void *src, uint32_t bytes, uint64_t *b) {
#if TM_PTX
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(smem_u32(b))
                 : "memory");
#endif
}

/* load_blk from a shared-memory copy of the row: the repacked types' loads without the global-only
 * evict-first hint (WLD); the GGUF layouts' load_blk reads through generic pointers already. Same values. */
template <int T> static __device__ __forceinline__ void sload_blk(const uint8_t *row, int b, int *wq, float *dw, float *mw) {
    if constexpr (T == TCU_TYPE_Q4_0R) {
        *mw = 0.0f;
        const uint8_t *g = row + (size_t)(b >> 3) * RQ40_GROUP;
        *dw = dq_h2f(dq_ld16(g + 2 * (b & 7)));
        nib16_words(*(const uint4 *)(g + 16 + 16 * (b & 7)), wq);
    } else if constexpr (T == TCU_TYPE_Q8_0R) {
        *mw = 0.0f;
        const uint8_t *g = row + (size_t)(b >> 3) * RQ80_GROUP;
        *dw = dq_h2f(dq_ld16(g + 2 * (b & 7)));
        const uint4 *q = (const uint4 *)(g + 16 + 32 * (b & 7));
        const uint4 a = q[0], c = q[1];
        wq[0] = (int)a.x; wq[1] = (int)a.y; wq[2] = (int)a.z; wq[3] = (int)a.w;
        wq[4] = (int)c.x; wq[5] = (int)c.y; wq[6] = (int)c.z; wq[7] = (int)c.w;
    } else if constexpr (T == TCU_TYPE_Q4_KR) {
        const uint8_t *p = row + (size_t)(b >> 3) * 144;
        k4_header(p, b & 7, dw, mw);
        nib16_words(*(const uint4 *)(p + 16 + 16 * (b & 7)), wq);
    } else {
        load_blk<T>(row, b, wq, dw, mw);
    }
}

template <int T, int R, int CH>
__global__ void __launch_bounds__(TM_T, 1)
gemv_q8_tma_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
              const int8_t *__restrict__ xl, const int2 *__restrict__ xds, float *__restrict__ y, int cb, int cbytes,
              int P) {
    extern __shared__ __align__(128) uint8_t tm_sm[];
    __shared__ __align__(8) uint64_t full[TM_MAX_SLOTS];
    const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31;
    const int G = (n_out + R - 1) / R, C = (nb + cb - 1) / cb;
    const int g0 = (int)((int64_t)blockIdx.x * G / gridDim.x), ng = (int)((int64_t)(blockIdx.x + 1) * G / gridDim.x) - g0;
    const int units = (warp < ng ? (ng - warp + TM_WARPS - 1) / TM_WARPS : 0) * C; /* nb >= 1 (q8_tma_launch) */
    const size_t slot = (size_t)R * (size_t)cbytes;
    uint8_t *ring = tm_sm + (size_t)warp * P * slot;
    uint64_t *bars = full + warp * P;
#if !TM_PTX
    __trap(); /* not launched below sm_90 */
#endif
    if (threadIdx.x == 0) {
        for (int s = 0; s < TM_WARPS * P; s++) mbar_init(&full[s]);
        mbar_init_fence();
    }
    __syncthreads();
    /* this warp's unit k = (its (k / C)-th row group, chunk k % C) goes to its slot k % P */
    auto issue = [&](int k) {
        const int r0 = (g0 + warp + (k / C) * TM_WARPS) * R, nr = n_out - r0 < R ? n_out - r0 : R;
        const size_t off = (size_t)(k % C) * (size_t)cbytes;
        const uint32_t bytes = (uint32_t)(stride - off < (size_t)cbytes ? stride - off : (size_t)cbytes);
        uint64_t *bar = &bars[k % P];
        mbar_expect_tx(bar, bytes * (uint32_t)nr);
        for (int r = 0; r < nr; r++)
            bulk_g2s(ring + (size_t)(k % P) * slot + (size_t)r * cbytes, w + (size_t)(r0 + r) * stride + off, bytes, bar);
    };
    if (lane == 0)
        for (int k = 0; k < units && k < P; k++) issue(k);
    pdl_trigger();
    pdl_wait(); /* every thread of every CTA waits (pdl.cuh) */
    float acc[R];
    /* unit k = (row group index gi, chunk c), slot k % P = sl on its (k / P)-th use (parity ph), kept as counters */
    int c = 0, sl = 0, gi = 0;
    uint32_t ph = 0;
    for (int k = 0; k < units; k++) {
        if (c == 0) {
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] = CH ? -0.0f : 0.0f;
        }
        mbar_wait(&bars[sl], ph);
        const uint8_t *base = ring + (size_t)sl * slot;
        const int r0 = (g0 + warp + gi * TM_WARPS) * R, nr = n_out - r0 < R ? n_out - r0 : R;
        const int b0 = c * cb, b1 = nb - b0 < cb ? nb : b0 + cb;
        if (CH) { /* chunk order (reduce.cuh): a unit is U <= 4 whole chunks (cb = 32U), lane l holds block 32j + l of
                   * each. The leaves of the unit's chunks first, then one chunk_tree32_n over their 4R values (every
                   * T_j of the unit in one halving tree: 5 dependent shuffle steps a unit, where a butterfly a chunk
                   * chained 5 a chunk), then the row's owner lane adds the T_j in chunk order; a chunk past b1 (U < 4,
                   * or the row's last unit) trees +0.0 leaves and is not added */
            static_assert(R == 1 || R == 2, "the lane of index i after chunk_tree32_n<4R> is chunk_tree_n_idx<4R>(0, i) "
                                            "(a bit reversal) only while 4R <= 32");
            float v[4 * R];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int b = b0 + 32 * u + lane;
#pragma unroll
                for (int r = 0; r < R; r++) v[u * R + r] = 0.0f;
                if (b < b1) {
                    const int2 ds = __ldg(xds + b);
                    int wq[R][8];
                    float dw[R], mw[R];
#pragma unroll
                    for (int r = 0; r < R; r++)
                        sload_blk<T>(base + (size_t)(r < nr ? r : nr - 1) * cbytes, b - b0, wq[r], &dw[r], &mw[r]);
#pragma unroll
                    for (int r = 0; r < R; r++)
                        v[u * R + r] = blk_leaf<T>(wq[r], dw[r], mw[r], xh + (size_t)b * 32, xl + (size_t)b * 32, ds);
                }
            }
            chunk_tree32_n<4 * R>(v, lane); /* lane l < 4R holds index chunk_tree_n_idx<4R>(0, l) = u * R + r */
            const int rr = chunk_tree_n_idx<R>(0, lane); /* the row this lane accumulates (lanes < R) */
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const float t = __shfl_sync(0xffffffffu, v[0], chunk_tree_n_idx<4 * R>(0, u * R + rr));
                if (b0 + 32 * u < b1) acc[0] = __fadd_rn(acc[0], t);
            }
        }
        else
        for (int b = b0 + lane; b < b1; b += 32) {
            const int2 ds = __ldg(xds + b);
            int wq[R][8];
            float dw[R], mw[R];
#pragma unroll
            for (int r = 0; r < R; r++)
                sload_blk<T>(base + (size_t)(r < nr ? r : nr - 1) * cbytes, b - b0, wq[r], &dw[r], &mw[r]);
#pragma unroll
            for (int r = 0; r < R; r++)
                acc[r] = blk_dot<T>(wq[r], dw[r], mw[r], xh + (size_t)b * 32, xl + (size_t)b * 32, ds, acc[r]);
        }
        /* every lane is done reading the slot before the next bulk copy into it. No fence.proxy.async between
         * these generic-proxy reads and that async-proxy write: CUTLASS's TMA pipelines omit it too (the copy
         * reads global memory before it writes the slot); strictly, PTX's memory model asks for one
         * (docs/ledger.md, the TMA GEMV entry; a review note, not measured) */
        __syncwarp();
        if (lane == 0 && k + P < units) issue(k + P);
        if (++sl == P) { sl = 0; ph ^= 1u; }
        if (++c == C) {
            c = 0;
            gi++;
            if (CH) {
                const int rr = chunk_tree_n_idx<R>(0, lane);
                if (lane < R && rr < nr) y[r0 + rr] = acc[0];
            } else {
#pragma unroll
                for (int r = 0; r < R; r++) {
#pragma unroll
                    for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
                }
                warp_out<R>(acc, nr, y, r0);
            }
        }
    }
}

/* ---- warp-per-row kernels (family 1; the per-type rule is at q8_family) ----
 * A warp owns R rows at a time (persistent over row groups, 4 warps a CTA, no shared memory, no barrier);
 * lane l takes blocks l, l+32, l+64, ... of each row in that order, U of them loaded (for all R rows) before
 * their dot products, so a warp has U*R 16-byte-aligned block loads in flight (repacked layouts). A row
 * ends with the xor-shuffle tree (offsets 16, 8, 4, 2, 1). Motive: gemv_q8_k gives a thread one block a row
 * at n_in = 4096 and ends every R rows with a CTA barrier; here the reduction is in registers.
 * Bit-identity: gemv_q8_warp_multi_k applies each block to every column in the same lane order and the same
 * tree, so column c of the m-column call equals the 1-column call on x_c (any R, U). */
#define W_WARPS 4
#define W_T (W_WARPS * 32)

template <int T, int R, int U>
static __device__ __forceinline__ void warp_load(const uint8_t *__restrict__ w, size_t stride, int n_out, int g, int b0,
                                                 int nb, int (&wq)[U][R][8], float (&dw)[U][R], float (&mw)[U][R]) {
    const int lane = (int)threadIdx.x & 31;
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int b = b0 + 32 * u + lane;
        if (b < nb) {
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int row = g * R + r < n_out ? g * R + r : n_out - 1;
                load_blk<T>(w + (size_t)row * stride, b, wq[u][r], &dw[u][r], &mw[u][r]);
            }
        }
    }
}

template <int T, int R, int U, int CH>
__global__ void __launch_bounds__(W_T)
gemv_q8_warp_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
               const int8_t *__restrict__ xl, const int2 *__restrict__ xds, float *__restrict__ y) {
    const int lane = (int)threadIdx.x & 31;
    const int G = (n_out + R - 1) / R, step = (int)gridDim.x * W_WARPS;
    int g = (int)blockIdx.x * W_WARPS + ((int)threadIdx.x >> 5);
    int wq[U][R][8];
    float dw[U][R], mw[U][R];
    /* the first batch's weights are constant: loaded before waiting for the previous kernel (pdl.cuh) */
    int pre = g < G;
    if (pre) warp_load<T, R, U>(w, stride, n_out, g, 0, nb, wq, dw, mw);
    pdl_trigger();
    pdl_wait(); /* every thread of every CTA waits (pdl.cuh) */
    for (; g < G; g += step) {
        float acc[R];
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = CH ? -0.0f : 0.0f;
        for (int b0 = 0; b0 < nb; b0 += 32 * U) {
            if (!pre) warp_load<T, R, U>(w, stride, n_out, g, b0, nb, wq, dw, mw);
            pre = 0;
            if (CH) { /* chunk order (reduce.cuh): lane l holds block 32j + l of chunk j = b0 / 32 + u. The leaves of the
                       * U chunks first, then one chunk_tree32_n over their U * R values, then the row's owner lane adds
                       * the T_j in chunk order (as gemv_q8_tma_k; a chunk past nb trees +0.0 leaves, not added) */
                static_assert((U * R) <= 32 && ((U * R) & (U * R - 1)) == 0,
                              "the lane of index i after chunk_tree32_n<UR> is chunk_tree_n_idx<UR>(0, i) (a bit reversal)");
                float v[U * R];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const int b = b0 + 32 * u + lane;
#pragma unroll
                    for (int r = 0; r < R; r++) v[u * R + r] = 0.0f;
                    if (b < nb) {
                        const int2 ds = __ldg(xds + b);
#pragma unroll
                        for (int r = 0; r < R; r++)
                            v[u * R + r] = blk_leaf<T>(wq[u][r], dw[u][r], mw[u][r], xh + (size_t)b * 32,
                                                       xl + (size_t)b * 32, ds);
                    }
                }
                chunk_tree32_n<U * R>(v, lane); /* lane l < UR holds index chunk_tree_n_idx<UR>(0, l) = u * R + r */
                const int rr = chunk_tree_n_idx<R>(0, lane);
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const float t = __shfl_sync(0xffffffffu, v[0], chunk_tree_n_idx<U * R>(0, u * R + rr));
                    if (b0 + 32 * u < nb) acc[0] = __fadd_rn(acc[0], t);
                }
            } else {
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const int b = b0 + 32 * u + lane;
                    if (b < nb) {
                        const int2 ds = __ldg(xds + b);
#pragma unroll
                        for (int r = 0; r < R; r++)
                            acc[r] = blk_dot<T>(wq[u][r], dw[u][r], mw[u][r], xh + (size_t)b * 32, xl + (size_t)b * 32,
                                                ds, acc[r]);
                    }
                }
            }
        }
        if (CH) {
            const int rr = chunk_tree_n_idx<R>(0, lane);
            if (lane < R && rr < n_out - g * R) y[g * R + rr] = acc[0];
        } else {
#pragma unroll
            for (int r = 0; r < R; r++) {
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
            }
            warp_out<R>(acc, n_out - g * R < R ? n_out - g * R : R, y, g * R);
        }
    }
}

/* The warp family's m-column twin: a warp owns R rows at a time, lane l takes blocks l, l+32, ... of each
 * (U of them loaded for the R rows before their dot products, as gemv_q8_warp_k), and each block is applied
 * to every column; a value ends with the same xor tree. R = 1, U = 1 was the first version (one block load
 * a lane in flight; docs/ledger.md "multi-column GEMV twins own R rows"). */
template <int T, int M, int R, int U, int CH>
__global__ void __launch_bounds__(W_T)
gemv_q8_warp_multi_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
                     const int8_t *__restrict__ xl, const int2 *__restrict__ xds, int m, float *__restrict__ y) {
    pdl_trigger();
    pdl_wait();
    const int lane = (int)threadIdx.x & 31;
    const int G = (n_out + R - 1) / R;
    for (int g = (int)blockIdx.x * W_WARPS + ((int)threadIdx.x >> 5); g < G; g += (int)gridDim.x * W_WARPS) {
        float acc[M * R]; /* column c, row r at c * R + r */
#pragma unroll
        for (int j = 0; j < M * R; j++) acc[j] = CH ? -0.0f : 0.0f;
        for (int b0 = 0; b0 < nb; b0 += 32 * U) {
            int wq[U][R][8];
            float dw[U][R], mw[U][R];
            warp_load<T, R, U>(w, stride, n_out, g, b0, nb, wq, dw, mw);
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int b = b0 + 32 * u + lane;
                if (CH) { /* chunk order, as gemv_q8_warp_k; acc[0..K): the sums this lane owns (chunk_tree32_n) */
                    if (b0 + 32 * u < nb) { /* warp-uniform */
                        float v[M * R];
                        multi_leaves_w<T, M, R>(wq[u], dw[u], mw[u], b, nb, m, xh, xl, xds, v);
                        chunk_tree32_n<M * R>(v, lane);
#pragma unroll
                        for (int i = 0; i < (M * R >= 32 ? M * R / 32 : 1); i++) acc[i] = __fadd_rn(acc[i], v[i]);
                    }
                } else if (b < nb) {
                    multi_dot<T, M, R>(wq[u], dw[u], mw[u], b, nb, m, xh, xl, xds, acc);
                }
            }
        }
        if (CH) {
#pragma unroll
            for (int i = 0; i < (M * R >= 32 ? M * R / 32 : 1); i++) {
                const int j = chunk_tree_n_idx<M * R>(i, lane), c = j / R, r = j % R;
                if ((M * R >= 32 || lane < M * R) && c < m && g * R + r < n_out) y[(size_t)c * n_out + g * R + r] = acc[i];
            }
        } else {
#pragma unroll
            for (int j = 0; j < M * R; j++) {
                float v = acc[j];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
                const int c = j / R, r = j % R;
                if (lane == (j & 31) && c < m && g * R + r < n_out) y[(size_t)c * n_out + g * R + r] = v;
            }
        }
    }
}

/* ---- launchers and the one chooser ----------------------------------------------------------------------- */

/* Rows a CTA of the cta family (R): 2 won a 1/2/4/8 sweep (3.75 ms a Llama-3-8B Q4_0 step vs 3.96 at 4, 4.17 at 1;
 * docs/ledger.md "decode on the H200: integer GEMV"). Rows a warp x blocks a lane in flight of the warp family: R 2,
 * U 4 (Q8_0 339.9 tok/s vs R1 U4 315.4, R4 U2 411.0 on Q4_0: bench/sweeps/dp4a.md). Rows a multi-column twin owns
 * (both families): 4 (a verify pass of 8 tokens on synthetic Llama-3-8B Q4_0: 11.59 ms at 1, 8.79 at 2, 5.97 at 4;
 * "multi-column GEMV twins own R rows"). The bits do not depend on any of them. */
#define Q8_CTA_ROWS 2
#define Q8_WARP_ROWS 2
#define Q8_WARP_U 4
#define Q8_MULTI_ROWS 4
/* The tma family: a matrix of >= 48 MiB with n_in <= 8192 (H200, tg128 +5.4% Q4_0, +8.0% Q6_K with the large
 * matrices on it; 12 and 30 MiB were measured and not adopted: -6% Q8_0, and the warp twin's verify cost;
 * "decode GEMV streamed into shared memory by bulk copies", "the TMA GEMV's size threshold lowered"); a ring of
 * 160 KiB a CTA (96: -19%), 2 slots a warp, 2 rows a unit. */
#define Q8_TMA_MIN_BYTES ((size_t)48 << 20)
#define Q8_TMA_BUDGET ((size_t)160 << 10)
#define Q8_TMA_SLOTS 2

template <int T, int R, int U, int CH>
static void q8_warp_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                           const int2 *ds, float *y, cudaStream_t st) {
    static int per_sm = 0;
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, float *) =
        gemv_q8_warp_k<T, R, U, CH>;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, W_T, 0) != cudaSuccess) per_sm = 4;
    const int64_t groups = (n_out + R - 1) / R, ctas = (groups + W_WARPS - 1) / W_WARPS;
    const int64_t cap = (int64_t)gemv_sms() * (per_sm > 0 ? per_sm : 4);
    PDL_LAUNCH(kf, dim3((unsigned)(ctas < cap ? ctas : cap)), dim3(W_T), 0, st, w, stride, nb, n_out, q, ql, ds, y);
}

template <int T, int M, int R, int U, int CH>
static void q8_warp_multi_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                                 const int2 *ds, int m, float *y, cudaStream_t st) {
    static int per_sm = 0;
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, int, float *) =
        gemv_q8_warp_multi_k<T, M, R, U, CH>;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, W_T, 0) != cudaSuccess) per_sm = 4;
    const int64_t groups = ((int64_t)n_out + R - 1) / R, ctas = (groups + W_WARPS - 1) / W_WARPS;
    const int64_t cap = (int64_t)gemv_sms() * (per_sm > 0 ? per_sm : 4);
    PDL_LAUNCH(kf, dim3((unsigned)(ctas < cap ? ctas : cap)), dim3(W_T), 0, st, w, stride, nb, n_out, q, ql, ds, m, y);
}

/* The cta family's chunk-order scratch (cta_chunk_out): ceil(nb / 32) x n floats of dynamic shared memory, the opt-in
 * raised past 48 KiB where needed (64 outputs: n_in > 196,608). */
template <typename K> static size_t q8_chunk_smem(K kf, int nb, int n) {
    const size_t bytes = sizeof(float) * (size_t)((nb + 31) / 32) * (size_t)n;
    if (bytes > ((size_t)48 << 10)) cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    return bytes;
}

template <int T, int R, int CH>
static void q8_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                      const int2 *ds, float *y, cudaStream_t st) {
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, float *) =
        gemv_q8_pipe_k<T, R, CH>;
    static int per_sm = 0;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, Q8_T, 0) != cudaSuccess) per_sm = 4;
    const int64_t groups = (n_out + R - 1) / R, cap = (int64_t)gemv_sms() * (per_sm > 0 ? per_sm : 4);
    const size_t smem = CH ? q8_chunk_smem(kf, nb, R) : 0;
    PDL_LAUNCH(kf, dim3((unsigned)(groups < cap ? groups : cap)), dim3(Q8_T), smem, st, w, stride, nb, n_out, q, ql, ds, y);
}

/* Bytes of 8 consecutive blocks of type T in a row (a repacked group, a K-quant super-block, 8 GGUF blocks). */
template <int T> static int q8_bytes8(void) {
    return T == TCU_TYPE_Q8_0R || T == TERN_TYPE_Q8_0 ? 272 : T == TERN_TYPE_Q6_K ? 210 : T == TERN_TYPE_Q4_1 ? 160 : 144;
}

/* gemv_q8_tma_k with R rows a unit: a chunk is 32*U blocks of a row (the largest U of 4, 2, 1 whose
 * TM_WARPS * P slots fit the budget, with 16-byte chunk sizes); returns 0 (nothing launched) when none
 * fits, the layout is not 16-byte aligned or the device cannot run it. */
template <int T, int R, int CH>
static int q8_tma_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                         const int2 *ds, float *y, cudaStream_t st) {
    const int P = Q8_TMA_SLOTS;
    int U = 4;
    for (; U >= 1; U >>= 1) {
        const size_t cbytes = (size_t)4 * U * q8_bytes8<T>();
        if (cbytes % 16 == 0 && (size_t)TM_WARPS * P * R * cbytes <= Q8_TMA_BUDGET) break;
    }
    if (U < 1 || stride % 16 || ((uintptr_t)w & 15) || n_out < 1 || nb < 1) return 0;
    const int cbytes = 4 * U * q8_bytes8<T>();
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, float *, int, int, int) =
        gemv_q8_tma_k<T, R, CH>;
    /* per device (tensor parallelism drives several GPUs): sm_90 or later, and the shared-memory opt-in set;
     * a device without them runs the warp kernel (the caller), whose bits are the same */
    static unsigned long long ok_dev = 0, no_dev = 0;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev > 63) return 0;
    const unsigned long long bit = 1ull << dev;
    if (__atomic_load_n(&no_dev, __ATOMIC_RELAXED) & bit) return 0;
    if (!(__atomic_load_n(&ok_dev, __ATOMIC_RELAXED) & bit)) {
        /* the code the device runs must come from sm_90 PTX or later (a compute_80 PTX build JIT-compiled on
         * Hopper would hold the __trap body); the opt-in covers the budget, which bounds every launch */
        int major = 0;
        cudaFuncAttributes fa;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 9 ||
            cudaFuncGetAttributes(&fa, kf) != cudaSuccess || fa.ptxVersion < 90 ||
            cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Q8_TMA_BUDGET) != cudaSuccess) {
            (void)cudaGetLastError(); /* the fallback ran: no error left pending for the caller's check */
            __atomic_fetch_or(&no_dev, bit, __ATOMIC_RELAXED);
            return 0;
        }
        __atomic_fetch_or(&ok_dev, bit, __ATOMIC_RELAXED);
    }
    const int64_t groups = (n_out + R - 1) / R, sms = gemv_sms();
    PDL_LAUNCH(kf, dim3((unsigned)(groups < sms ? groups : sms)), dim3(TM_T), (size_t)TM_WARPS * P * R * cbytes, st, w,
               stride, nb, n_out, q, ql, ds, y, 32 * U, cbytes, P);
    return 1;
}

template <int T, int M, int R, int CH>
static void q8_multi_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                            const int2 *ds, int m, float *y, cudaStream_t st) {
    static int per_sm = 0;
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, int, float *) =
        gemv_q8_multi_k<T, M, R, CH>;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, Q8_T, 0) != cudaSuccess) per_sm = 4;
    const int64_t groups = ((int64_t)n_out + R - 1) / R, cap = (int64_t)gemv_sms() * (per_sm > 0 ? per_sm : 4);
    const size_t smem = CH ? q8_chunk_smem(kf, nb, M * R) : 0;
    PDL_LAUNCH(kf, dim3((unsigned)(groups < cap ? groups : cap)), dim3(Q8_T), smem, st, w, stride, nb, n_out, q, ql, ds, m,
               y);
}

/* The one chooser: the family a matrix of type T and this shape gets, -1 for a type without the dp4a path. >=
 * Q8_TMA_MIN_BYTES with n_in <= 8192: tma (Llama-3-8B's gate and up, 33 MB each as separate matrices, are
 * decided with their fused gate|up by the caller, which passes the fused matrix's family for its parts:
 * tcu_gemv_dp4a_fam); else warp for Q8_0 (339.9 vs cta 329.4 tok/s tg128, repacked; 330.5 vs 301.7 on the GGUF
 * layout) and cta for the rest (Q4_0 430.0 vs warp 415.1, Q4_K 319.0 vs 307.5; Q4_1 and Q6_K unmeasured with warp)
 * (bench/sweeps/dp4a.md). */
template <int T> static int q8_family(size_t stride, int64_t n_in, int64_t n_out) {
    if ((size_t)n_out * stride >= Q8_TMA_MIN_BYTES && n_in <= 8192) return 3;
    return T == TERN_TYPE_Q8_0 || T == TCU_TYPE_Q8_0R ? 1 : 0;
}

/* Returns 1 when the call ran gemv_q8_tma_k (the trace's count), else 0. CH: the chunk order (reduce.cuh). */
template <int T, int CH>
static int q8_dispatch(int fam, const uint8_t *w, size_t stride, int64_t n_in, int64_t n_out, const void *xq, int m_all,
                       int c0, int m, float *y, cudaStream_t st) {
    const int nb = (int)(n_in / 32);
    if (nb < 1) { /* an empty dot: every output 0 (the kernels' loops would not end a group) */
        cudaMemsetAsync(y, 0, sizeof(float) * (size_t)n_out * (size_t)m, st);
        return 0;
    }
    /* columns c0 .. c0 + m - 1 of the m_all in xq: each plane's rows are columns, so the slice is an offset in each */
    const size_t pb = plane_bytes(m_all, n_in);
    const int8_t *q = (const int8_t *)xq + (size_t)c0 * (size_t)n_in, *ql = (const int8_t *)xq + pb + (size_t)c0 * (size_t)n_in;
    const int2 *ds = (const int2 *)((const char *)xq + 2 * pb) + (size_t)c0 * (size_t)nb;
    /* a family a caller fixed for the matrix (its bit pattern, one for its 1- and m-column calls), else the rule */
    const int kern = fam == 0 || fam == 1 || fam == 3 ? fam : q8_family<T>(stride, n_in, n_out);
    if (kern == 3 && m == 1) { /* multi-column calls: the warp family's twin (the same bits) */
        if (q8_tma_launch<T, 2, CH>(w, stride, nb, (int)n_out, q, ql, ds, y, st)) return 1;
        if (q8_tma_launch<T, 1, CH>(w, stride, nb, (int)n_out, q, ql, ds, y, st)) return 1;
        q8_warp_launch<T, Q8_WARP_ROWS, Q8_WARP_U, CH>(w, stride, nb, (int)n_out, q, ql, ds, y, st); /* the same bits */
        return 0;
    }
    if (kern >= 1) {
        if (m == 1) q8_warp_launch<T, Q8_WARP_ROWS, Q8_WARP_U, CH>(w, stride, nb, (int)n_out, q, ql, ds, y, st);
        else if (m <= 2) q8_warp_multi_launch<T, 2, Q8_MULTI_ROWS, 1, CH>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
        else if (m <= 4) q8_warp_multi_launch<T, 4, Q8_MULTI_ROWS, 1, CH>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
        else if (m <= 8) q8_warp_multi_launch<T, 8, Q8_MULTI_ROWS, 1, CH>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
        else q8_warp_multi_launch<T, 16, Q8_MULTI_ROWS, 1, CH>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
        return 0;
    }
    if (m == 1) q8_launch<T, Q8_CTA_ROWS, CH>(w, stride, nb, (int)n_out, q, ql, ds, y, st);
    else if (m <= 2) q8_multi_launch<T, 2, Q8_MULTI_ROWS, CH>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
    else if (m <= 4) q8_multi_launch<T, 4, Q8_MULTI_ROWS, CH>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
    else if (m <= 8) q8_multi_launch<T, 8, Q8_MULTI_ROWS, CH>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
    else q8_multi_launch<T, 16, Q8_MULTI_ROWS, CH>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
    return 0;
}

extern "C" int tcu_gemv_dp4a_family(int t, size_t row_bytes, int64_t n_in, int64_t n_out) {
    switch (t) {
    case TERN_TYPE_Q4_0: return q8_family<TERN_TYPE_Q4_0>(row_bytes, n_in, n_out);
    case TERN_TYPE_Q4_1: return q8_family<TERN_TYPE_Q4_1>(row_bytes, n_in, n_out);
    case TERN_TYPE_Q8_0: return q8_family<TERN_TYPE_Q8_0>(row_bytes, n_in, n_out);
    case TERN_TYPE_Q4_K: return q8_family<TERN_TYPE_Q4_K>(row_bytes, n_in, n_out);
    case TERN_TYPE_Q6_K: return q8_family<TERN_TYPE_Q6_K>(row_bytes, n_in, n_out);
    case TCU_TYPE_Q4_0R: return q8_family<TCU_TYPE_Q4_0R>(row_bytes, n_in, n_out);
    case TCU_TYPE_Q8_0R: return q8_family<TCU_TYPE_Q8_0R>(row_bytes, n_in, n_out);
    case TCU_TYPE_Q4_KR: return q8_family<TCU_TYPE_Q4_KR>(row_bytes, n_in, n_out);
    default: return -1;
    }
}

/* A type has the dp4a path when the chooser gives it a family (any shape: an empty matrix here). */
extern "C" int tcu_gemv_dp4a_supported(int t) { return tcu_gemv_dp4a_family(t, 0, 0, 0) >= 0; }

/* The order switch (tcu.h tcu_gemv_order): process-wide, 0 until tcu_gemv_order_set (the backend sets it from
 * tern_config.gemv_chunk when an engine is made; the library reads no environment). */
static int g_gemv_order = 0;

extern "C" int tcu_gemv_order(void) { return __atomic_load_n(&g_gemv_order, __ATOMIC_RELAXED); }

extern "C" void tcu_gemv_order_set(int ord) {
    __atomic_store_n(&g_gemv_order, ord < 0 ? 0 : ord > 2 ? 2 : ord, __ATOMIC_RELAXED);
}

extern "C" int tcu_gemv_dp4a_cols(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out,
                                  const void *xq, int m_all, int c0, int m, float *y, cudaStream_t st) {
    if (m < 1 || m > TCU_MULTI_MAX || c0 < 0 || c0 + m > m_all) return -1;
    const uint8_t *wb = (const uint8_t *)w;
    const int ch = tcu_gemv_order() != 0; /* 2 (the f16 order) keeps the chunk order for what stays on the GEMV */
    switch (t) {
    case TERN_TYPE_Q4_0: return q8_dispatch<TERN_TYPE_Q4_0, 0>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st);
    case TERN_TYPE_Q4_1: return q8_dispatch<TERN_TYPE_Q4_1, 0>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st);
    case TERN_TYPE_Q8_0: return q8_dispatch<TERN_TYPE_Q8_0, 0>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st);
    case TERN_TYPE_Q4_K: return q8_dispatch<TERN_TYPE_Q4_K, 0>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st);
    case TERN_TYPE_Q6_K: return q8_dispatch<TERN_TYPE_Q6_K, 0>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st);
    case TCU_TYPE_Q4_0R:
        return ch ? q8_dispatch<TCU_TYPE_Q4_0R, 1>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st)
                  : q8_dispatch<TCU_TYPE_Q4_0R, 0>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st);
    case TCU_TYPE_Q8_0R:
        return ch ? q8_dispatch<TCU_TYPE_Q8_0R, 1>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st)
                  : q8_dispatch<TCU_TYPE_Q8_0R, 0>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st);
    case TCU_TYPE_Q4_KR:
        return ch ? q8_dispatch<TCU_TYPE_Q4_KR, 1>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st)
                  : q8_dispatch<TCU_TYPE_Q4_KR, 0>(fam, wb, row_bytes, n_in, n_out, xq, m_all, c0, m, y, st);
    default: return 0;
    }
}

extern "C" int tcu_gemv_dp4a_fam(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out,
                                 const void *xq, int m, float *y, cudaStream_t st) {
    return tcu_gemv_dp4a_cols(fam, t, w, row_bytes, n_in, n_out, xq, m, 0, m, y, st) > 0;
}

extern "C" void tcu_gemv_dp4a(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq, int m,
                              float *y, cudaStream_t st) {
    tcu_gemv_dp4a_fam(-1, t, w, row_bytes, n_in, n_out, xq, m, y, st);
}
