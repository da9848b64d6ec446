/* dequant.cuh: device-side dequantization of weight blocks, 8 consecutive elements at a time.
 *
 * Layouts: ggml-common.h (GGUF spec, ggml_type), as src/backend/cpu/quant.c documents them. The arithmetic
 * matches tern_dequantize_row (src/backend/cpu/quant.c) operation for operation, with explicit round-to-nearest
 * intrinsics (__fmul_rn, __fadd_rn, __fsub_rn) so nvcc cannot contract a multiply-add into an FMA:
 * every element equals the CPU reference bit for bit.
 *
 * A row starts 16-byte aligned (the backend pads each uploaded row to a multiple of 16 bytes); every
 * block type's size is even, so every f16 field is 2-byte aligned and is read with 16-bit loads.
 * e0 (the first of the 8 elements) is a multiple of 8; 8 divides every block size.
 */
#ifndef TERN_DEQUANT_CUH
#define TERN_DEQUANT_CUH
#include <cuda_fp16.h>
#include <stdint.h>

#include "quant.h"
#include "cuda/tcu.h"

static __device__ __forceinline__ float dq_h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
static __device__ __forceinline__ float dq_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
/* Plain (generic) loads, not the read-only-cache intrinsic: the same code reads weights from global
 * memory and, in the GEMV's staged variant, from shared memory. */
static __device__ __forceinline__ uint16_t dq_ld16(const uint8_t *p) { return *(const unsigned short *)p; }
/* 8 bytes at a 2-byte aligned address, little-endian, as two words. */
static __device__ __forceinline__ void dq_ld8(const uint8_t *p, uint32_t *lo, uint32_t *hi) {
    const unsigned short *s = (const unsigned short *)p;
    *lo = (uint32_t)s[0] | (uint32_t)s[1] << 16;
    *hi = (uint32_t)s[2] | (uint32_t)s[3] << 16;
}
static __device__ __forceinline__ int dq_byte(uint32_t lo, uint32_t hi, int i) {
    return (int)(((i < 4 ? lo : hi) >> (8 * (i & 3))) & 0xFF);
}

/* Q4_K/Q5_K 6-bit scale and min of sub-block j (ggml get_scale_min_k4). s: the 12 scale bytes. */
static __device__ __forceinline__ void dq_k4_scale_min(const uint8_t *s, int j, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        const int b = s[j + 4];
        *sc = (b & 0xF) | ((s[j - 4] >> 6) << 4);
        *mn = (b >> 4) | ((s[j] >> 6) << 4);
    }
}

/* w[0..8) = elements e0..e0+7 of the row at `row` (type T). */
template <int T> static __device__ __forceinline__ void dequant8(const uint8_t *row, int e0, float *w);

template <> __device__ __forceinline__ void dequant8<TERN_TYPE_Q4_0>(const uint8_t *row, int e0, float *w) {
    const uint8_t *b = row + (size_t)(e0 >> 5) * 18;
    const int j = e0 & 31, sh = j >= 16 ? 4 : 0;
    const float d = dq_h2f(dq_ld16(b));
    uint32_t lo, hi;
    dq_ld8(b + 2 + (j & 15), &lo, &hi);
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = __fmul_rn(d, (float)(((dq_byte(lo, hi, i) >> sh) & 0xF) - 8));
}

template <> __device__ __forceinline__ void dequant8<TERN_TYPE_Q4_1>(const uint8_t *row, int e0, float *w) {
    const uint8_t *b = row + (size_t)(e0 >> 5) * 20;
    const int j = e0 & 31, sh = j >= 16 ? 4 : 0;
    const float d = dq_h2f(dq_ld16(b)), m = dq_h2f(dq_ld16(b + 2));
    uint32_t lo, hi;
    dq_ld8(b + 4 + (j & 15), &lo, &hi);
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = __fadd_rn(__fmul_rn(d, (float)((dq_byte(lo, hi, i) >> sh) & 0xF)), m);
}

template <> __device__ __forceinline__ void dequant8<TERN_TYPE_Q5_0>(const uint8_t *row, int e0, float *w) {
    const uint8_t *b = row + (size_t)(e0 >> 5) * 22;
    const int j = e0 & 31, sh = j >= 16 ? 4 : 0;
    const float d = dq_h2f(dq_ld16(b));
    const uint32_t qh = (uint32_t)dq_ld16(b + 2) | (uint32_t)dq_ld16(b + 4) << 16;
    uint32_t lo, hi;
    dq_ld8(b + 6 + (j & 15), &lo, &hi);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int q = ((dq_byte(lo, hi, i) >> sh) & 0xF) | (int)((qh >> (j + i)) & 1) << 4;
        w[i] = __fmul_rn(d, (float)(q - 16));
    }
}

template <> __device__ __forceinline__ void dequant8<TERN_TYPE_Q5_1>(const uint8_t *row, int e0, float *w) {
    const uint8_t *b = row + (size_t)(e0 >> 5) * 24;
    const int j = e0 & 31, sh = j >= 16 ? 4 : 0;
    const float d = dq_h2f(dq_ld16(b)), m = dq_h2f(dq_ld16(b + 2));
    const uint32_t qh = (uint32_t)dq_ld16(b + 4) | (uint32_t)dq_ld16(b + 6) << 16;
    uint32_t lo, hi;
    dq_ld8(b + 8 + (j & 15), &lo, &hi);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int q = ((dq_byte(lo, hi, i) >> sh) & 0xF) | (int)((qh >> (j + i)) & 1) << 4;
        w[i] = __fadd_rn(__fmul_rn(d, (float)q), m);
    }
}

template <> __device__ __forceinline__ void dequant8<TERN_TYPE_Q8_0>(const uint8_t *row, int e0, float *w) {
    const uint8_t *b = row + (size_t)(e0 >> 5) * 34;
    const float d = dq_h2f(dq_ld16(b));
    uint32_t lo, hi;
    dq_ld8(b + 2 + (e0 & 31), &lo, &hi);
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = __fmul_rn((float)(int8_t)dq_byte(lo, hi, i), d);
}

/* A Q4_K super-block's 16-byte header at p (f16 d, f16 dmin, 12 scale bytes): sub-block j's dw = d*sc and
 * mw = -(dmin*mn) (the Q4_1 form, see gemv_dp4a.cu load_blk<TERN_TYPE_Q4_K>); the
 * dp4a GEMV and the MMA GEMM (gemm_mma.cu) both read it here, so their dw and mw are the same bits. */
static __device__ __forceinline__ void k4_header(const uint8_t *p, int j, float *dw, float *mw) {
    const uint4 h = *(const uint4 *)p;
    const float d = dq_h2f((uint16_t)(h.x & 0xFFFFu)), dmin = dq_h2f((uint16_t)(h.x >> 16));
    /* dq_k4_scale_min on the 12 scale bytes (h.y, h.z, h.w little-endian), in registers: indexing a byte
     * array by the run-time j put it in local memory (a 16-byte stack frame in every Q4_K kernel) */
    const int sh = 8 * (j & 3);
    const uint32_t b0 = (h.y >> sh) & 0xFFu, b1 = (h.z >> sh) & 0xFFu, b2 = (h.w >> sh) & 0xFFu;
    const int sc = j < 4 ? (int)(b0 & 63u) : (int)((b2 & 0xFu) | ((b0 >> 6) << 4));
    const int mn = j < 4 ? (int)(b1 & 63u) : (int)((b2 >> 4) | ((b1 >> 6) << 4));
    *dw = __fmul_rn(d, (float)sc);
    *mw = -__fmul_rn(dmin, (float)mn);
}

/* The repacked layouts (tcu.h, TCU_TYPE_Q4_0R / Q8_0R): block b's f16 scale at byte 2(b%8) of group b/8,
 * its quants at 16 + QB(b%8) of the group (QB = 16 or 32 quant bytes a block); the same values as the GGUF
 * block, so the same operations give the same bits. */
#define RQ40_GROUP 144
#define RQ80_GROUP 272
/* 8 Q4_0 values d·(n - 8) from the nibbles (low: sh 0, high: sh 4) of 8 quant bytes q: the repacked rows' and the f16
 * order's tiled layout's (dequant.cu dequant_f16_tl_k) one arithmetic. */
static __device__ __forceinline__ void dq_q40_8(float d, uint2 q, int sh, float *w) {
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = __fmul_rn(d, (float)(((dq_byte(q.x, q.y, i) >> sh) & 0xF) - 8));
}

template <> __device__ __forceinline__ void dequant8<TCU_TYPE_Q4_0R>(const uint8_t *row, int e0, float *w) {
    const int b = e0 >> 5, j = e0 & 31, sh = j >= 16 ? 4 : 0;
    const uint8_t *g = row + (size_t)(b >> 3) * RQ40_GROUP;
    const float d = dq_h2f(dq_ld16(g + 2 * (b & 7)));
    dq_q40_8(d, *(const uint2 *)(g + 16 + 16 * (b & 7) + (j & 15)), sh, w); /* 8-byte aligned */
}

template <> __device__ __forceinline__ void dequant8<TCU_TYPE_Q8_0R>(const uint8_t *row, int e0, float *w) {
    const int b = e0 >> 5;
    const uint8_t *g = row + (size_t)(b >> 3) * RQ80_GROUP;
    const float d = dq_h2f(dq_ld16(g + 2 * (b & 7)));
    const uint2 q = *(const uint2 *)(g + 16 + 32 * (b & 7) + (e0 & 31)); /* 8-byte aligned */
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = __fmul_rn((float)(int8_t)dq_byte(q.x, q.y, i), d);
}

/* TCU_TYPE_Q4_KR (tcu.h): sub-block sub's nibbles at 16 + 16*sub of the super-block, Q4_0's order. */
template <> __device__ __forceinline__ void dequant8<TCU_TYPE_Q4_KR>(const uint8_t *row, int e0, float *w) {
    const uint8_t *b = row + (size_t)(e0 >> 8) * 144;
    const int e = e0 & 255, sub = e >> 5, j = e & 31;
    const float d = dq_h2f(dq_ld16(b)), dmin = dq_h2f(dq_ld16(b + 2));
    int sc, mn;
    dq_k4_scale_min(b + 4, sub, &sc, &mn);
    const float dl = __fmul_rn(d, (float)sc), ml = __fmul_rn(dmin, (float)mn);
    const uint2 q8 = *(const uint2 *)(b + 16 + 16 * sub + (j & 15)); /* 8-byte aligned */
    const int sh = j >= 16 ? 4 : 0;
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = __fsub_rn(__fmul_rn(dl, (float)((dq_byte(q8.x, q8.y, i) >> sh) & 0xF)), ml);
}

/* Q4_K and Q5_K: sub-block e/32 has 6-bit scale and min; nibble (e%64)/32 of byte qs[(e/64)*32 + e%32];
 * Q5_K adds bit e/32 of qh[e%32] as bit 4. x = (d*sc)*q - (dmin*mn). */
template <int FIVE> static __device__ __forceinline__ void dq_k45(const uint8_t *row, int e0, float *w) {
    const uint8_t *b = row + (size_t)(e0 >> 8) * (FIVE ? 176 : 144);
    const int e = e0 & 255, sub = e >> 5;
    const float d = dq_h2f(dq_ld16(b)), dmin = dq_h2f(dq_ld16(b + 2));
    int sc, mn;
    dq_k4_scale_min(b + 4, sub, &sc, &mn);
    const float dl = __fmul_rn(d, (float)sc), ml = __fmul_rn(dmin, (float)mn);
    const uint8_t *qs = b + (FIVE ? 48 : 16);
    const uint2 q8 = *(const uint2 *)(qs + (e >> 6) * 32 + (e & 31)); /* 8-byte aligned */
    const int sh = 4 * ((e & 63) >> 5);
    uint32_t hlo = 0, hhi = 0;
    if (FIVE) dq_ld8(b + 16 + (e & 31), &hlo, &hhi);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int q = (dq_byte(q8.x, q8.y, i) >> sh) & 0xF;
        if (FIVE) q |= ((dq_byte(hlo, hhi, i) >> sub) & 1) << 4;
        w[i] = __fsub_rn(__fmul_rn(dl, (float)q), ml);
    }
}
template <> __device__ __forceinline__ void dequant8<TERN_TYPE_Q4_K>(const uint8_t *row, int e0, float *w) {
    dq_k45<0>(row, e0, w);
}
template <> __device__ __forceinline__ void dequant8<TERN_TYPE_Q5_K>(const uint8_t *row, int e0, float *w) {
    dq_k45<1>(row, e0, w);
}

/* Q6_K: 128-element halves h; low 4 bits: nibble r/64 of ql[h*64 + r%64]; high 2 bits: bits 2*(r/32) of
 * qh[h*32 + r%32]; int8 scale per 16; x = (d*sc)*(q - 32). */
template <> __device__ __forceinline__ void dequant8<TERN_TYPE_Q6_K>(const uint8_t *row, int e0, float *w) {
    const uint8_t *b = row + (size_t)(e0 >> 8) * 210;
    const int e = e0 & 255, h = e >> 7, r = e & 127;
    const float d = dq_h2f(dq_ld16(b + 208));
    const float dl = __fmul_rn(d, (float)(int8_t)b[192 + (e >> 4)]);
    uint32_t l0, l1, h0, h1;
    dq_ld8(b + h * 64 + (r & 63), &l0, &l1);
    dq_ld8(b + 128 + h * 32 + (r & 31), &h0, &h1);
    const int sl = 4 * (r >> 6), shh = 2 * (r >> 5);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int q = ((dq_byte(l0, l1, i) >> sl) & 0xF) | ((dq_byte(h0, h1, i) >> shh) & 3) << 4;
        w[i] = __fmul_rn(dl, (float)(q - 32));
    }
}

template <> __device__ __forceinline__ void dequant8<TERN_TYPE_F16>(const uint8_t *row, int e0, float *w) {
    const uint4 v = *(const uint4 *)(row + (size_t)e0 * 2);
    const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        w[2 * i] = dq_h2f((uint16_t)(u[i] & 0xFFFF));
        w[2 * i + 1] = dq_h2f((uint16_t)(u[i] >> 16));
    }
}

template <> __device__ __forceinline__ void dequant8<TERN_TYPE_BF16>(const uint8_t *row, int e0, float *w) {
    const uint4 v = *(const uint4 *)(row + (size_t)e0 * 2);
    const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        w[2 * i] = dq_bf2f((uint16_t)(u[i] & 0xFFFF));
        w[2 * i + 1] = dq_bf2f((uint16_t)(u[i] >> 16));
    }
}

template <> __device__ __forceinline__ void dequant8<TERN_TYPE_F32>(const uint8_t *row, int e0, float *w) {
    const float4 a = *(const float4 *)(row + (size_t)e0 * 4), b = *(const float4 *)(row + (size_t)e0 * 4 + 16);
    w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
    w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
}

/* Dispatch a templated launcher over the weight types with a GPU kernel: X(T) for each. */
#define TCU_FOR_TYPES(X) \
    X(TERN_TYPE_F32) X(TERN_TYPE_F16) X(TERN_TYPE_BF16) X(TERN_TYPE_Q4_0) X(TERN_TYPE_Q4_1) X(TERN_TYPE_Q5_0) \
    X(TERN_TYPE_Q5_1) X(TERN_TYPE_Q8_0) X(TERN_TYPE_Q4_K) X(TERN_TYPE_Q5_K) X(TERN_TYPE_Q6_K)
/* The same with the repacked device layouts (tcu.h), for the launchers that read uploaded weights. */
#define TCU_FOR_DEVICE_TYPES(X) TCU_FOR_TYPES(X) X(TCU_TYPE_Q4_0R) X(TCU_TYPE_Q8_0R) X(TCU_TYPE_Q4_KR)

#endif
