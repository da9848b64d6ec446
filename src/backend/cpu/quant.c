/* quant.c: ggml block formats (layout, reference dequantizers), the activation quantizers, and
 * the CPU dot products every matmul runs on, in a scalar reference and an AVX2+FMA+F16C path
 * chosen at run time (no -march: the build runs on any x86-64).
 *
 * Layout source: ggml's ggml-common.h and gguf-py 0.19.0 quants.py (the numpy dequantizers are
 * the reference the fixtures in tests/fixtures/quant/ are made from). No code is taken from ggml.
 *
 * ---- The determinism contract (why the kernels look the way they do) --------------------------
 * Every path returns the same bits. Integer work inside a block is exact (int32, no saturation:
 * see the bounds at each kernel); the float work follows one order, written out here once:
 *
 *  F32/F16/BF16 x f32 ("lanes32"): 32 partial sums, element i goes to lane i % 32 through
 *    lane = fmaf(w_i, x_i, lane), over the leading multiple of 32. Then v[k] = (l[k] + l[8+k]) +
 *    (l[16+k] + l[24+k]) for k < 8, r = hsum8(v), and the tail i >= n/32*32 goes r = fmaf(w_i, x_i, r).
 *  32-blocks (Q4_0 Q5_0 Q8_0 IQ4_NL x Q8_0, Q4_1 Q5_1 x Q8_1) ("lanes8"): per block, d = dw * dx and
 *    8 int32 partials p_k = sum of w*x over elements 4k..4k+3; lane_k = fmaf(d, (float)p_k, lane_k).
 *    Result hsum8(lanes), plus for Q4_1/Q5_1 summs, where summs = summs + mw * sx in block order.
 *    This is also the order of ggml's AVX2 ggml_vec_dot_q4_1_q8_1 / q8_0_q8_0, so for the default
 *    model (Q4_1 + Q8_0) tern reproduces llama.cpp's AVX2 dot bit for bit given the same activations.
 *  hsum8(v) = ((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7)) (the extract/movehl/movehdup tree).
 *  K-quants x Q8_K ("ksum"): per super-block one exact int32 isum (and imin for the types with
 *    mins); acc = acc + (dx*dw) * (float)isum, then acc = acc - (dx*dmin) * (float)imin, in order.
 * -ffp-contract=off (Makefile) keeps the compiler from fusing anything else.
 *
 * ---- Activation formats ------------------------------------------------------------------------
 *  Q8_0 (34 B) and Q8_1 (36 B, d and s = fp16(d*sum q)) are byte-compatible with ggml's
 *  block_q8_0/block_q8_1, and are filled by the rule of llama.cpp's x86 quantize_row_q8_0/_1:
 *  d = amax/127 stored fp16, q = round-half-even(x * (127/amax)) (bytes equal to ggml's output on
 *  the benchmark vectors below; gguf-py's reference quantizer rounds half away from zero instead). Q8_K (292 B) is ggml's
 *  block_q8_K with its quantize_row_q8_K_ref rule (iscale = -127/max-by-magnitude, d = 1/iscale).
 *
 * ---- Kernel variants and what they measured ----------------------------------------------------
 *  dot*_scalar        reference for every type; mirrors the contract with fmaf. Slow on purpose.
 *  dot32_avx2_nc      32-blocks, NC columns (1..8) per pass: the weight block is unpacked once
 *                     (nibbles -> bytes, Q5 fifth bit via pshufb/cmpeq, IQ4_NL via pshufb lookup),
 *                     maddubs/madd int8 dot (sign trick for signed weights), one fmadd chain per
 *                     column. vec_dot uses its NC=1 instance through a single-column entry (name##1);
 *                     vec_dot_multi runs groups of 8 columns, then 4, then the rest (8 over 4: +1-3% S_TG at
 *                     B = 8, 16 on SmolLM2, ledger 2026-12-04 "the CPU's decode of many sequences").
 *    v1: scale pairs through F16C (movd + vcvtph2ps per side). v2 (kept): fp16 -> f32 table g_h2f
 *        (256 KB, filled once from tern_fp16_to_fp32, exact like F16C). A/B in one session, min of 21
 *        interleaved rounds, ns/row: Q4_1 576: v1 45.9, v2 39.6; Q4_1 1536: v1 106.8, v2 94.6;
 *        Q8_0 576: v1 31.3, v2 30.5. v1's code is gone (a one-line difference in h2f_t).
 *  dot32_avx2_rows    32-blocks, 4 weight rows against one activation (tern_vec_dot_rows): same ops
 *                     per row, 4 independent fmadd chains. The single-row kernel is latency bound on
 *                     its chain (fmadd 4 cycles per block on Zen 3); this removes that bound.
 *  dotk_avx2          K-quants: scales/mins unpacked in registers (v1 went through a byte-written
 *                     struct and lost ~2x to store-forwarding stalls: Q4_K 1536 ~750 -> ~220 ns),
 *                     quants unpacked per 32-chunk in registers (v2 stored 256 bytes and reloaded
 *                     them: Q4_K 1536 ~100 -> ~71 ns), maddubs against Q8_K, madd against per-16
 *                     int16 scales picked by one in-lane pshufb, offsets/mins from the Q8_K bsums.
 *                     Multi (dotk_avx2_nc, groups of 8, 4, rest): each 32-chunk's quants and scales unpacked
 *                     once for the NC columns (v1 unpacked them again a column: Qwen2.5-1.5B Q4_K_M S_TG
 *                     at B = 2 24 -> 51 tok/s with the decode-pass work items; 8 over 4 columns +4-5% at
 *                     B = 8, 16; ledger 2026-12-04 "the CPU's decode of many sequences").
 *  dotf_avx2          F32/F16/BF16: 4 ymm accumulators (the 32 lanes), 2 columns per pass in multi.
 *  *_avx512_np        the quantized types' multi-column dots from 4 columns on AVX-512 F/BW/VL/DQ (the "avx512"
 *                     path): a column pair in one zmm, each half the AVX2 kernel's lanes, so the same bits
 *                     (ledger 2026-12-04 "the CPU's multi-column dots on AVX-512"); their _vnni copies (the
 *                     "avx512vnni" path) sum the byte products with vpdpbusd / vpdpwssd, the same int32.
 *  quantize_q8_32_avx2  Q8_0/Q8_1 activation quantizer, same bytes as the scalar one.
 *
 *  Measured on the dev box: 2-core AMD EPYC (Zen 3, family 25 model 1, AVX2+FMA+F16C, no AVX-512),
 *  gcc 12.2 -O2, weights L2-resident (~200 KB of rows, each row dotted against one activation), min
 *  of 21 interleaved rounds; the box was shared (load ~3), so +-10% between runs. "ggml" is
 *  llama.cpp's ggml_vec_dot_* (AVX2 build in llama_cpp_python 0.3.36) on the same bytes; tern's
 *  result bits equal ggml's for Q4_1, Q8_0, Q4_0, Q5_0 on every row tested.
 *  Command: cc -std=c11 -O2 -ffp-contract=off -D_GNU_SOURCE -Isrc /tmp/qb/bench_quant.c src/backend/cpu/quant.c
 *           src/core/util.c -L$LLAMA_LIB -lggml-cpu -lggml-base -lm && MIN=1 ./a.out   (throwaway program)
 *                      ns/row:  scalar   avx2 vec_dot   ggml vec_dot   rows (16/call)   multi (8 cols, per col)
 *    Q4_1  576                    830        38.7           36.5            27.8              22.3
 *    Q4_1 1536                   2180        90.6           85.8            72.4              57.3
 *    Q8_0  576                    765        29.1           29.2            22.1              20.0
 *    Q8_0 1536                   2050        70.9           73.3            58.1              51.5
 *    Q4_0  576                   1070        38-48          40-42           31.6              23.6
 *    Q5_0  576                   1300        47-50          45-54           39-44             26.2
 *    Q4_K 1536                   3700        71-75          62-74           69-78             45.8
 *    Q6_K 1536                   4600        73-92          68-104          72-86             40.8
 *  So: single-row vec_dot is at parity with ggml (same float order, so it is latency bound the same
 *  way); tern_vec_dot_rows beats it by ~1.3x and vec_dot_multi by ~1.6x per column.
 */
#include "quant.h"
#include "config.h"
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TERN_X86 1
#define TERN_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TERN_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) static inline
#endif

/* ---- block layouts (ggml-common.h); fp16 fields are raw IEEE half bits -------------------- */

#define QK32 32  /* elements per block: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 IQ4_NL */
#define QK_K 256 /* elements per super-block: Q2_K..Q8_K */

typedef struct { uint16_t d; uint8_t qs[16]; } block_q4_0;                  /* x = d * (q - 8) */
typedef struct { uint16_t d, m; uint8_t qs[16]; } block_q4_1;               /* x = d * q + m */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } block_q5_0;   /* x = d * (q - 16) */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } block_q5_1; /* x = d * q + m */
typedef struct { uint16_t d; int8_t qs[32]; } block_q8_0;                   /* x = d * q */
typedef struct { uint16_t d, s; int8_t qs[32]; } block_q8_1;                /* s = fp16(d * sum q) */
typedef struct { uint16_t d; uint8_t qs[16]; } block_iq4_nl;                /* x = d * kv[q] */
/* Q2_K: 16 groups of 16; scales byte = scale (low 4 bits) | min (high 4 bits). */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } block_q2_K;
/* Q3_K: 2 low bits in qs, high bit in hmask (set = no -4), 16 6-bit scales packed in 12 bytes, -32. */
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } block_q3_K;
/* Q4_K: 8 sub-blocks of 32; 6-bit scale and min each, packed in 12 bytes (get_scale_min_k4). */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } block_q4_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } block_q5_K;
/* Q6_K: low 4 bits in ql, high 2 in qh, int8 scale per 16, value q - 32. */
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } block_q6_K;
/* Q8_K: activation format; float d, int8 q, sum of q per 16. */
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } block_q8_K;

_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 layout (ggml-common.h)");
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1 layout (ggml-common.h)");
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0 layout (ggml-common.h)");
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1 layout (ggml-common.h)");
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 layout (ggml-common.h)");
_Static_assert(sizeof(block_q8_1) == 36, "block_q8_1 layout (ggml-common.h)");
_Static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl layout (ggml-common.h)");
_Static_assert(sizeof(block_q2_K) == 84, "block_q2_K layout (ggml-common.h)");
_Static_assert(sizeof(block_q3_K) == 110, "block_q3_K layout (ggml-common.h)");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K layout (ggml-common.h)");
_Static_assert(sizeof(block_q5_K) == 176, "block_q5_K layout (ggml-common.h)");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K layout (ggml-common.h)");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K layout (ggml-common.h)");

/* IQ4_NL's non-linear 4-bit grid (ggml-common.h kvalues_iq4nl, gguf-py IQ4_NL.kvalues). */
static const int8_t k_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* ---- type traits ----------------------------------------------------------------------------- */

typedef struct {
    const char *name;    /* NULL: unsupported id */
    int64_t blck;        /* elements per block */
    size_t size;         /* bytes per block */
    enum tern_type vdot; /* activation format of tern_vec_dot; TERN_TYPE_COUNT: not a weight type */
} type_traits;

static const type_traits k_traits[TERN_TYPE_COUNT] = {
    [TERN_TYPE_F32] = {"f32", 1, 4, TERN_TYPE_F32},
    [TERN_TYPE_F16] = {"f16", 1, 2, TERN_TYPE_F32},
    [TERN_TYPE_BF16] = {"bf16", 1, 2, TERN_TYPE_F32},
    [TERN_TYPE_Q4_0] = {"q4_0", QK32, sizeof(block_q4_0), TERN_TYPE_Q8_0},
    [TERN_TYPE_Q4_1] = {"q4_1", QK32, sizeof(block_q4_1), TERN_TYPE_Q8_1},
    [TERN_TYPE_Q5_0] = {"q5_0", QK32, sizeof(block_q5_0), TERN_TYPE_Q8_0},
    [TERN_TYPE_Q5_1] = {"q5_1", QK32, sizeof(block_q5_1), TERN_TYPE_Q8_1},
    [TERN_TYPE_Q8_0] = {"q8_0", QK32, sizeof(block_q8_0), TERN_TYPE_Q8_0},
    [TERN_TYPE_Q8_1] = {"q8_1", QK32, sizeof(block_q8_1), TERN_TYPE_COUNT},
    [TERN_TYPE_Q2_K] = {"q2_K", QK_K, sizeof(block_q2_K), TERN_TYPE_Q8_K},
    [TERN_TYPE_Q3_K] = {"q3_K", QK_K, sizeof(block_q3_K), TERN_TYPE_Q8_K},
    [TERN_TYPE_Q4_K] = {"q4_K", QK_K, sizeof(block_q4_K), TERN_TYPE_Q8_K},
    [TERN_TYPE_Q5_K] = {"q5_K", QK_K, sizeof(block_q5_K), TERN_TYPE_Q8_K},
    [TERN_TYPE_Q6_K] = {"q6_K", QK_K, sizeof(block_q6_K), TERN_TYPE_Q8_K},
    [TERN_TYPE_Q8_K] = {"q8_K", QK_K, sizeof(block_q8_K), TERN_TYPE_COUNT},
    [TERN_TYPE_IQ4_NL] = {"iq4_nl", QK32, sizeof(block_iq4_nl), TERN_TYPE_Q8_0},
};

int tern_type_supported(int t) { return t >= 0 && t < TERN_TYPE_COUNT && k_traits[t].name != NULL; }

const char *tern_type_name(int t) { return tern_type_supported(t) ? k_traits[t].name : "unknown"; }

int64_t tern_type_block_size(enum tern_type t) { return tern_type_supported((int)t) ? k_traits[t].blck : 0; }

size_t tern_type_type_size(enum tern_type t) { return tern_type_supported((int)t) ? k_traits[t].size : 0; }

size_t tern_type_row_size(enum tern_type t, int64_t n) {
    if (!tern_type_supported((int)t) || n < 0 || n % k_traits[t].blck != 0) return 0;
    return (size_t)(n / k_traits[t].blck) * k_traits[t].size;
}

enum tern_type tern_type_vec_dot_type(enum tern_type t) {
    return tern_type_supported((int)t) ? k_traits[t].vdot : TERN_TYPE_COUNT;
}

static inline float h2f(uint16_t h) { return tern_fp16_to_fp32(h); }

static inline uint32_t rd_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- K-quant scale unpacking (shared by dequantizers and every dot path) -------------------- */

/* Q4_K/Q5_K: 8 6-bit scales and mins from 12 bytes (ggml get_scale_min_k4):
 * j < 4: sc = s[j] & 63, m = s[j+4] & 63;  j >= 4: low 4 bits from s[j+4], high 2 bits from the
 * top bits of s[j-4] (scale) / s[j] (min). */
static void k4_scale_min(const uint8_t s[12], uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
    }
    for (int j = 4; j < 8; j++) {
        sc[j] = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        mn[j] = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* Q3_K: 16 6-bit scales (low 4 bits: nibbles of bytes 0..7, group i < 8 low nibble of byte i,
 * i >= 8 high nibble of byte i-8; high 2 bits: bits 2*(i/4) of byte 8 + i%4), minus 32. */
static void k3_scales(const uint8_t s[12], int8_t sc[16]) {
    for (int i = 0; i < 16; i++) {
        int lo = i < 8 ? (s[i] & 0xF) : (s[i - 8] >> 4);
        int hi = (s[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
        sc[i] = (int8_t)((lo | hi << 4) - 32);
    }
}

/* ---- dequantizers (match gguf-py's numpy operation order, so results are bit-equal) ------- */

static void dequant_block(enum tern_type t, const uint8_t *b, float *y) {
    switch (t) {
    case TERN_TYPE_Q4_0: {
        const block_q4_0 *x = (const void *)b;
        const float d = h2f(x->d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((x->qs[j] & 0xF) - 8);
            y[j + 16] = d * (float)((x->qs[j] >> 4) - 8);
        }
        break;
    }
    case TERN_TYPE_Q4_1: {
        const block_q4_1 *x = (const void *)b;
        const float d = h2f(x->d), m = h2f(x->m);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)(x->qs[j] & 0xF) + m;
            y[j + 16] = d * (float)(x->qs[j] >> 4) + m;
        }
        break;
    }
    case TERN_TYPE_Q5_0: {
        const block_q5_0 *x = (const void *)b;
        const float d = h2f(x->d);
        const uint32_t qh = rd_u32le(x->qh);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((int)((x->qs[j] & 0xF) | ((qh >> j) & 1) << 4) - 16);
            y[j + 16] = d * (float)((int)((x->qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16);
        }
        break;
    }
    case TERN_TYPE_Q5_1: {
        const block_q5_1 *x = (const void *)b;
        const float d = h2f(x->d), m = h2f(x->m);
        const uint32_t qh = rd_u32le(x->qh);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((x->qs[j] & 0xF) | ((qh >> j) & 1) << 4) + m;
            y[j + 16] = d * (float)((x->qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) + m;
        }
        break;
    }
    case TERN_TYPE_Q8_0: {
        const block_q8_0 *x = (const void *)b;
        const float d = h2f(x->d);
        for (int j = 0; j < 32; j++) y[j] = (float)x->qs[j] * d;
        break;
    }
    case TERN_TYPE_Q8_1: {
        const block_q8_1 *x = (const void *)b;
        const float d = h2f(x->d);
        for (int j = 0; j < 32; j++) y[j] = (float)x->qs[j] * d;
        break;
    }
    case TERN_TYPE_IQ4_NL: {
        const block_iq4_nl *x = (const void *)b;
        const float d = h2f(x->d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)k_iq4nl[x->qs[j] & 0xF];
            y[j + 16] = d * (float)k_iq4nl[x->qs[j] >> 4];
        }
        break;
    }
    case TERN_TYPE_Q2_K: {
        const block_q2_K *x = (const void *)b;
        const float d = h2f(x->d), dmin = h2f(x->dmin);
        for (int e = 0; e < QK_K; e++) {
            const int q = (x->qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            const uint8_t s = x->scales[e / 16];
            const float dl = d * (float)(s & 0xF), ml = dmin * (float)(s >> 4);
            y[e] = dl * (float)q - ml;
        }
        break;
    }
    case TERN_TYPE_Q3_K: {
        const block_q3_K *x = (const void *)b;
        const float d = h2f(x->d);
        int8_t sc[16];
        k3_scales(x->scales, sc);
        for (int e = 0; e < QK_K; e++) {
            const int lo = (x->qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            const int hb = (x->hmask[e % 32] >> (e / 32)) & 1;
            const float dl = d * (float)sc[e / 16];
            y[e] = dl * (float)(lo - (hb ? 0 : 4));
        }
        break;
    }
    case TERN_TYPE_Q4_K:
    case TERN_TYPE_Q5_K: {
        const int five = t == TERN_TYPE_Q5_K;
        const block_q4_K *x4 = (const void *)b;
        const block_q5_K *x5 = (const void *)b;
        const uint8_t *qs = five ? x5->qs : x4->qs;
        const float d = h2f(x4->d), dmin = h2f(x4->dmin); /* same offsets in both layouts */
        uint8_t sc[8], mn[8];
        k4_scale_min(x4->scales, sc, mn);
        for (int e = 0; e < QK_K; e++) {
            int q = (qs[(e / 64) * 32 + e % 32] >> (4 * ((e % 64) / 32))) & 0xF;
            if (five) q |= ((x5->qh[e % 32] >> (e / 32)) & 1) << 4;
            const float dl = d * (float)sc[e / 32], ml = dmin * (float)mn[e / 32];
            y[e] = dl * (float)q - ml;
        }
        break;
    }
    case TERN_TYPE_Q6_K: {
        const block_q6_K *x = (const void *)b;
        const float d = h2f(x->d);
        for (int e = 0; e < QK_K; e++) {
            const int h = e / 128, r = e % 128;
            const int lo = (x->ql[h * 64 + r % 64] >> (4 * (r / 64))) & 0xF;
            const int hi = (x->qh[h * 32 + r % 32] >> (2 * (r / 32))) & 3;
            const float dl = d * (float)x->scales[e / 16];
            y[e] = dl * (float)((lo | hi << 4) - 32);
        }
        break;
    }
    case TERN_TYPE_Q8_K: {
        const block_q8_K *x = (const void *)b;
        for (int e = 0; e < QK_K; e++) y[e] = x->d * (float)x->qs[e];
        break;
    }
    default:
        break;
    }
}

void tern_dequantize_row(enum tern_type t, const void *x, float *y, int64_t n) {
    if (!tern_type_supported((int)t) || n < 0 || n % k_traits[t].blck != 0) {
        tern_set_error("tern_dequantize_row: type %s, n=%lld not a multiple of its block", tern_type_name((int)t),
                       (long long)n);
        for (int64_t i = 0; i < n; i++) y[i] = NAN;
        return;
    }
    const uint8_t *b = x;
    switch (t) {
    case TERN_TYPE_F32:
        memcpy(y, x, (size_t)n * sizeof(float));
        return;
    case TERN_TYPE_F16:
        for (int64_t i = 0; i < n; i++) y[i] = h2f((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
        return;
    case TERN_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) y[i] = tern_bf16_to_fp32((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
        return;
    default: {
        const int64_t bs = k_traits[t].blck, nb = n / bs;
        for (int64_t i = 0; i < nb; i++) dequant_block(t, b + (size_t)i * k_traits[t].size, y + i * bs);
        return;
    }
    }
}

/* fp16 -> f32 by table for the per-block scale products of dot32_avx2 (v2): two loads instead
 * of movd + vcvtph2ps per side. Same values as h2f (filled from it). */
static float g_h2f[65536];
static pthread_once_t g_h2f_once = PTHREAD_ONCE_INIT;
static void h2f_table_init(void) {
    for (int i = 0; i < 65536; i++) g_h2f[i] = tern_fp16_to_fp32((uint16_t)i);
}
static inline float h2f_t(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return g_h2f[h];
}

/* ---- SIMD path selection (the one chooser) ---------------------------------------------------- */

/* ordered by what they use: >= SIMD_AVX2 the AVX2 kernels, >= SIMD_AVX512 the AVX-512 multi-column ones; tern_simd_level
 * reports 0 scalar, 1 avx2 / avxvnni, 2 avx512, 3 avx512vnni */
enum { SIMD_UNSET = -1, SIMD_SCALAR = 0, SIMD_AVX2 = 1, SIMD_AVX2_VNNI = 2, SIMD_AVX512 = 3, SIMD_AVX512_VNNI = 4 };
static _Atomic int g_simd = SIMD_UNSET;

static int cpu_has_avx2(void) {
#ifdef TERN_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
    return 0;
#endif
}

/* AVX-512 F/BW/VL/DQ besides AVX2 (libgcc's check includes the OS's zmm state) */
static int cpu_has_avx512(void) {
#ifdef TERN_X86
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
    return 0;
#endif
}

/* and AVX512_VNNI (vpdpbusd, vpdpwssd) */
static int cpu_has_avx512vnni(void) {
#ifdef TERN_X86
    return cpu_has_avx512() && __builtin_cpu_supports("avx512vnni");
#else
    return 0;
#endif
}

/* AVX-VNNI (the VEX vpdpbusd / vpdpwssd on ymm: Alder Lake and later Intel client CPUs, Zen 5) besides AVX2 */
static int cpu_has_avxvnni(void) {
#ifdef TERN_X86
    return cpu_has_avx2() && __builtin_cpu_supports("avxvnni");
#else
    return 0;
#endif
}

static int cpu_has_none(void) { return 1; }

/* The paths by SIMD_* value (the order of preference, worst first): name (TERN_SIMD's), the CPU's check, the level
 * tern_simd_level reports (its width: 1 AVX2, 2-3 AVX-512). */
static const struct {
    const char *name;
    int (*has)(void);
    int level;
} k_simd[] = {
    [SIMD_SCALAR] = {"scalar", cpu_has_none, 0},         [SIMD_AVX2] = {"avx2", cpu_has_avx2, 1},
    [SIMD_AVX2_VNNI] = {"avxvnni", cpu_has_avxvnni, 1},  [SIMD_AVX512] = {"avx512", cpu_has_avx512, 2},
    [SIMD_AVX512_VNNI] = {"avx512vnni", cpu_has_avx512vnni, 3},
};
#define N_SIMD ((int)(sizeof k_simd / sizeof k_simd[0]))

/* The path every entry point uses: the scalar one when the settings ask for it (tern_config.simd_scalar; the CLI's
 * TERN_SIMD=scalar) or tern_simd_set chose it, otherwise the best k_simd path the CPU has (avx512vnni, avx512,
 * avxvnni, avx2, scalar). */
static int simd_path(void) {
    int s = atomic_load_explicit(&g_simd, memory_order_acquire);
    if (s != SIMD_UNSET) return tern_cfg()->simd_scalar ? SIMD_SCALAR : s;
    pthread_once(&g_h2f_once, h2f_table_init); /* before any path is published (release below) */
    for (s = N_SIMD - 1; s > SIMD_SCALAR && !k_simd[s].has(); s--) {}
    if (tern_cfg()->simd_scalar) s = SIMD_SCALAR;
    int expect = SIMD_UNSET;
    atomic_compare_exchange_strong_explicit(&g_simd, &expect, s, memory_order_release, memory_order_acquire);
    return atomic_load_explicit(&g_simd, memory_order_acquire);
}

int tern_simd_level(void) { return k_simd[simd_path()].level; }

const char *tern_simd_name(void) { return k_simd[simd_path()].name; }

int tern_simd_set(const char *name) {
    pthread_once(&g_h2f_once, h2f_table_init);
    char have[96] = "";
    for (int i = 0; i < N_SIMD; i++) {
        if (!k_simd[i].has()) continue;
        if (name && strcmp(name, k_simd[i].name) == 0) {
            atomic_store(&g_simd, i);
            return 0;
        }
        snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", i ? ", " : "", k_simd[i].name);
    }
    tern_set_error("SIMD path '%s' is not available on this CPU (have: %s)", name ? name : "(null)", have);
    return -1;
}

/* ---- activation quantizers ------------------------------------------------------------------- */

/* Round to nearest, ties to even (same result as vroundps nearest) for the |v| <= 127.5 that
 * finite activations produce; NaN (from Inf/NaN inputs, whose results are unspecified) gives -128
 * instead of undefined behaviour. */
static inline int round_ne(float v) {
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    const float r = (v + magic) - magic;
    return r >= -128.0f && r <= 127.0f ? (int)r : (r > 127.0f ? 127 : -128); /* as cvtps+packs saturate */
}

/* Q8_0 / Q8_1 (with_sum): llama.cpp's x86 rule, see the header comment. */
static void quantize_q8_32_scalar(const float *x, uint8_t *y, int64_t nb, int with_sum) {
    const size_t bsz = with_sum ? sizeof(block_q8_1) : sizeof(block_q8_0);
    for (int64_t i = 0; i < nb; i++, x += QK32) {
        uint8_t *b = y + (size_t)i * bsz;
        int8_t *qs = (int8_t *)(b + (with_sum ? 4 : 2));
        float amax = 0.0f;
        for (int j = 0; j < QK32; j++) {
            const float a = fabsf(x[j]);
            if (a > amax) amax = a;
        }
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        int sum = 0;
        for (int j = 0; j < QK32; j++) {
            qs[j] = (int8_t)round_ne(x[j] * id);
            sum += qs[j];
        }
        const uint16_t dh = tern_fp32_to_fp16(d);
        memcpy(b, &dh, 2);
        if (with_sum) {
            const uint16_t sh = tern_fp32_to_fp16(d * (float)sum);
            memcpy(b + 2, &sh, 2);
        }
    }
}

/* Q8_K: ggml quantize_row_q8_K_ref semantics (scale by the signed max-magnitude element). */
static void quantize_q8_K(const float *x, block_q8_K *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            const float a = fabsf(x[j]);
            if (a > amax) {
                amax = a;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) {
            const int v = round_ne(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int j = 0; j < 16; j++) s += y[i].qs[16 * g + j];
            y[i].bsums[g] = (int16_t)s;
        }
        y[i].d = 1.0f / iscale;
    }
}

#ifdef TERN_X86
TERN_AVX2 static void quantize_q8_32_avx2(const float *x, uint8_t *y, int64_t nb, int with_sum) {
    const size_t bsz = with_sum ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < nb; i++, x += QK32) {
        uint8_t *b = y + (size_t)i * bsz;
        __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4); /* max is exact in any order: same as the scalar loop */
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        const __m256 mul = _mm256_set1_ps(id);
        const int rnd = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, mul), rnd));
        __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, mul), rnd));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, mul), rnd));
        __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, mul), rnd));
        const uint16_t dh = tern_fp32_to_fp16(d);
        memcpy(b, &dh, 2);
        if (with_sum) {
            __m256i s8 = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
            s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
            const uint16_t sh = tern_fp32_to_fp16(d * (float)_mm_cvtsi128_si32(s4));
            memcpy(b + 2, &sh, 2);
        }
        /* packs work per 128-bit lane: the permute puts the 4-element groups back in order */
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(b + (with_sum ? 4 : 2)), p);
    }
}
#endif

void tern_quantize_activation(enum tern_type vt, const float *x, void *y, int64_t n) {
    if (!tern_type_supported((int)vt) || n < 0 || n % k_traits[vt].blck != 0) {
        tern_set_error("tern_quantize_activation: type %s, n=%lld not a multiple of its block",
                       tern_type_name((int)vt), (long long)n);
        return;
    }
    switch (vt) {
    case TERN_TYPE_F32:
        memcpy(y, x, (size_t)n * sizeof(float));
        return;
    case TERN_TYPE_Q8_0:
    case TERN_TYPE_Q8_1: {
        const int with_sum = vt == TERN_TYPE_Q8_1;
#ifdef TERN_X86
        if (simd_path() >= SIMD_AVX2) {
            quantize_q8_32_avx2(x, y, n / QK32, with_sum);
            return;
        }
#endif
        quantize_q8_32_scalar(x, y, n / QK32, with_sum);
        return;
    }
    case TERN_TYPE_Q8_K:
        quantize_q8_K(x, y, n / QK_K);
        return;
    default:
        tern_set_error("tern_quantize_activation: %s is not an activation format", tern_type_name((int)vt));
        return;
    }
}

/* ---- shared float epilogues ---------------------------------------------------------------- */

/* hsum8 of the contract: ((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7)). */
static inline float hsum8_scalar(const float v[8]) {
    const float r0 = v[0] + v[4], r1 = v[1] + v[5], r2 = v[2] + v[6], r3 = v[3] + v[7];
    return (r0 + r2) + (r1 + r3);
}

/* ---- scalar reference dot kernels ----------------------------------------------------------- */

/* Signature of every dot kernel: out[c] = dot(w, x_c), x_c = xq + c * xs, c < nc; n a multiple of
 * the block size (checked by the caller). */
typedef void (*dot_fn)(int64_t n, const void *w, const void *xq, size_t xs, int nc, float *out);
/* The single-column form (vec_dot's hot path in decode: no column loop, lighter prologue). */
typedef float (*dot1_fn)(int64_t n, const void *w, const void *xq);
/* The multi-row form: out[r] = dot(w + r * ws, xq), r < nr. */
typedef void (*dotr_fn)(int64_t n, const void *w, size_t ws, const void *xq, int nr, float *out);

static inline float wload_scalar(enum tern_type t, const uint8_t *w, int64_t i) {
    switch (t) {
    case TERN_TYPE_F16: return h2f((uint16_t)(w[2 * i] | w[2 * i + 1] << 8));
    case TERN_TYPE_BF16: return tern_bf16_to_fp32((uint16_t)(w[2 * i] | w[2 * i + 1] << 8));
    default: {
        float f;
        memcpy(&f, w + 4 * i, 4);
        return f;
    }
    }
}

/* lanes32 contract for F32/F16/BF16 weights against f32 activations. */
static void dotf_scalar(enum tern_type t, int64_t n, const void *w, const void *xq, size_t xs, int nc,
                        float *out) {
    for (int c = 0; c < nc; c++) {
        const float *x = (const float *)((const uint8_t *)xq + (size_t)c * xs);
        float l[32] = {0};
        int64_t i = 0;
        for (; i + 32 <= n; i += 32)
            for (int k = 0; k < 32; k++) l[k] = fmaf(wload_scalar(t, w, i + k), x[i + k], l[k]);
        float v[8];
        for (int k = 0; k < 8; k++) v[k] = (l[k] + l[8 + k]) + (l[16 + k] + l[24 + k]);
        float r = hsum8_scalar(v);
        for (; i < n; i++) r = fmaf(wload_scalar(t, w, i), x[i], r);
        out[c] = r;
    }
}
static void dot_f32_scalar(int64_t n, const void *w, const void *x, size_t xs, int nc, float *o) {
    dotf_scalar(TERN_TYPE_F32, n, w, x, xs, nc, o);
}
static void dot_f16_scalar(int64_t n, const void *w, const void *x, size_t xs, int nc, float *o) {
    dotf_scalar(TERN_TYPE_F16, n, w, x, xs, nc, o);
}
static void dot_bf16_scalar(int64_t n, const void *w, const void *x, size_t xs, int nc, float *o) {
    dotf_scalar(TERN_TYPE_BF16, n, w, x, xs, nc, o);
}

/* One 32-block as the dot sees it: the int8 values multiplied against the activation quants
 * (offsets already applied: Q4_0 q-8, Q5_0 q-16, IQ4_NL kv[q]; Q4_1/Q5_1 unsigned q), its fp16
 * scale d and (Q4_1/Q5_1) min m as floats. */
static void unpack32_scalar(enum tern_type t, const uint8_t *b, int8_t q[32], float *d, float *m) {
    *d = 0.0f;
    *m = 0.0f;
    switch (t) {
    case TERN_TYPE_Q4_0:
    case TERN_TYPE_IQ4_NL: {
        const block_q4_0 *x = (const void *)b; /* IQ4_NL has Q4_0's layout */
        *d = h2f(x->d);
        for (int j = 0; j < 16; j++) {
            const int lo = x->qs[j] & 0xF, hi = x->qs[j] >> 4;
            q[j] = (int8_t)(t == TERN_TYPE_Q4_0 ? lo - 8 : k_iq4nl[lo]);
            q[j + 16] = (int8_t)(t == TERN_TYPE_Q4_0 ? hi - 8 : k_iq4nl[hi]);
        }
        return;
    }
    case TERN_TYPE_Q4_1: {
        const block_q4_1 *x = (const void *)b;
        *d = h2f(x->d);
        *m = h2f(x->m);
        for (int j = 0; j < 16; j++) {
            q[j] = (int8_t)(x->qs[j] & 0xF);
            q[j + 16] = (int8_t)(x->qs[j] >> 4);
        }
        return;
    }
    case TERN_TYPE_Q5_0:
    case TERN_TYPE_Q5_1: {
        const int one = t == TERN_TYPE_Q5_1;
        const uint8_t *qh = one ? ((const block_q5_1 *)(const void *)b)->qh : ((const block_q5_0 *)(const void *)b)->qh;
        const uint8_t *qs = one ? ((const block_q5_1 *)(const void *)b)->qs : ((const block_q5_0 *)(const void *)b)->qs;
        uint16_t dh, mh;
        memcpy(&dh, b, 2);
        *d = h2f(dh);
        if (one) {
            memcpy(&mh, b + 2, 2);
            *m = h2f(mh);
        }
        const uint32_t h = rd_u32le(qh);
        const int off = one ? 0 : 16;
        for (int j = 0; j < 16; j++) {
            q[j] = (int8_t)((int)((qs[j] & 0xF) | ((h >> j) & 1) << 4) - off);
            q[j + 16] = (int8_t)((int)((qs[j] >> 4) | ((h >> (j + 16)) & 1) << 4) - off);
        }
        return;
    }
    case TERN_TYPE_Q8_0: {
        const block_q8_0 *x = (const void *)b;
        *d = h2f(x->d);
        memcpy(q, x->qs, 32);
        return;
    }
    default:
        return;
    }
}

/* lanes8 contract; bounds: |q| <= 128, |x| <= 127, so |p_k| <= 4*128*127 < 2^24 (exact in float). */
static void dot32_scalar(enum tern_type t, int64_t n, const void *w, const void *xq, size_t xs, int nc,
                         float *out) {
    const int has_min = t == TERN_TYPE_Q4_1 || t == TERN_TYPE_Q5_1;
    const size_t wbs = k_traits[t].size, xbs = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const int64_t nb = n / QK32;
    for (int c = 0; c < nc; c++) {
        const uint8_t *x = (const uint8_t *)xq + (size_t)c * xs;
        float lane[8] = {0}, summs = 0.0f;
        for (int64_t ib = 0; ib < nb; ib++) {
            int8_t q[32];
            float dw, mw;
            unpack32_scalar(t, (const uint8_t *)w + (size_t)ib * wbs, q, &dw, &mw);
            const uint8_t *xb = x + (size_t)ib * xbs;
            const int8_t *qx = (const int8_t *)(xb + (has_min ? 4 : 2));
            uint16_t dxh, sxh;
            memcpy(&dxh, xb, 2);
            const float d = dw * h2f(dxh);
            if (has_min) {
                memcpy(&sxh, xb + 2, 2);
                summs = summs + mw * h2f(sxh);
            }
            for (int k = 0; k < 8; k++) {
                int32_t p = 0;
                for (int j = 4 * k; j < 4 * k + 4; j++) p += (int32_t)q[j] * qx[j];
                lane[k] = fmaf(d, (float)p, lane[k]);
            }
        }
        out[c] = has_min ? hsum8_scalar(lane) + summs : hsum8_scalar(lane);
    }
}
#define DOT32_SCALAR(name, T) \
    static void name(int64_t n, const void *w, const void *x, size_t xs, int nc, float *o) { dot32_scalar(T, n, w, x, xs, nc, o); }
DOT32_SCALAR(dot_q4_0_scalar, TERN_TYPE_Q4_0)
DOT32_SCALAR(dot_q4_1_scalar, TERN_TYPE_Q4_1)
DOT32_SCALAR(dot_q5_0_scalar, TERN_TYPE_Q5_0)
DOT32_SCALAR(dot_q5_1_scalar, TERN_TYPE_Q5_1)
DOT32_SCALAR(dot_q8_0_scalar, TERN_TYPE_Q8_0)
DOT32_SCALAR(dot_iq4_nl_scalar, TERN_TYPE_IQ4_NL)

/* A K-quant super-block as the dot sees it: 256 unsigned quants qu (offset folded into `off`),
 * an int8 scale per 16 elements, a min per 16 elements (0 for types without mins), and the
 * value of element e is  d*sc[e/16]*(qu[e] - off) - dmin*mn[e/16]. */
typedef struct {
    int8_t sc[16];
    uint8_t mn[16];
    int off;  /* Q3_K: 4, Q6_K: 32, else 0 */
    int has_min;
    float d, dmin;
} kblock;

static void kblock_scales(enum tern_type t, const uint8_t *b, kblock *k) {
    memset(k, 0, sizeof *k);
    switch (t) {
    case TERN_TYPE_Q2_K: {
        const block_q2_K *x = (const void *)b;
        for (int g = 0; g < 16; g++) {
            k->sc[g] = (int8_t)(x->scales[g] & 0xF);
            k->mn[g] = x->scales[g] >> 4;
        }
        k->has_min = 1;
        k->d = h2f(x->d);
        k->dmin = h2f(x->dmin);
        return;
    }
    case TERN_TYPE_Q3_K: {
        const block_q3_K *x = (const void *)b;
        k3_scales(x->scales, k->sc);
        k->off = 4;
        k->d = h2f(x->d);
        return;
    }
    case TERN_TYPE_Q4_K:
    case TERN_TYPE_Q5_K: {
        const block_q4_K *x = (const void *)b; /* d, dmin, scales at the same offsets in Q5_K */
        uint8_t sc[8], mn[8];
        k4_scale_min(x->scales, sc, mn);
        for (int g = 0; g < 16; g++) {
            k->sc[g] = (int8_t)sc[g / 2];
            k->mn[g] = mn[g / 2];
        }
        k->has_min = 1;
        k->d = h2f(x->d);
        k->dmin = h2f(x->dmin);
        return;
    }
    case TERN_TYPE_Q6_K: {
        const block_q6_K *x = (const void *)b;
        memcpy(k->sc, x->scales, 16);
        k->off = 32;
        k->d = h2f(x->d);
        return;
    }
    default:
        return;
    }
}

static void kblock_quants_scalar(enum tern_type t, const uint8_t *b, uint8_t qu[256]) {
    for (int e = 0; e < QK_K; e++) {
        switch (t) {
        case TERN_TYPE_Q2_K: {
            const block_q2_K *x = (const void *)b;
            qu[e] = (x->qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            break;
        }
        case TERN_TYPE_Q3_K: {
            const block_q3_K *x = (const void *)b;
            const int lo = (x->qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            qu[e] = (uint8_t)(lo | ((x->hmask[e % 32] >> (e / 32)) & 1) << 2); /* q + 4 */
            break;
        }
        case TERN_TYPE_Q4_K: {
            const block_q4_K *x = (const void *)b;
            qu[e] = (x->qs[(e / 64) * 32 + e % 32] >> (4 * ((e % 64) / 32))) & 0xF;
            break;
        }
        case TERN_TYPE_Q5_K: {
            const block_q5_K *x = (const void *)b;
            qu[e] = (uint8_t)(((x->qs[(e / 64) * 32 + e % 32] >> (4 * ((e % 64) / 32))) & 0xF) |
                              ((x->qh[e % 32] >> (e / 32)) & 1) << 4);
            break;
        }
        case TERN_TYPE_Q6_K: {
            const block_q6_K *x = (const void *)b;
            const int h = e / 128, r = e % 128;
            qu[e] = (uint8_t)(((x->ql[h * 64 + r % 64] >> (4 * (r / 64))) & 0xF) |
                              ((x->qh[h * 32 + r % 32] >> (2 * (r / 32))) & 3) << 4);
            break;
        }
        default:
            qu[e] = 0;
        }
    }
}

/* The ksum float epilogue of the contract, shared by both paths. isum and imin are exact int32:
 * isum = sum_g sc_g * (sum_{e in g} qu_e*x_e - off*bsum_g), imin = sum_g mn_g * bsum_g
 * (|isum| <= 128*63*127*256 < 2^31). */
static inline float ksum_float(float acc, float xd, float d, float dmin, int32_t isum, int32_t imin, int has_min) {
    acc = acc + (xd * d) * (float)isum;
    if (has_min) acc = acc - (xd * dmin) * (float)imin;
    return acc;
}

static inline float ksum_step(float acc, const kblock *k, const block_q8_K *x, int32_t dotq) {
    int32_t isum = dotq, imin = 0;
    if (k->off) {
        int32_t cs = 0;
        for (int g = 0; g < 16; g++) cs += (int32_t)k->sc[g] * x->bsums[g];
        isum -= k->off * cs;
    }
    if (k->has_min)
        for (int g = 0; g < 16; g++) imin += (int32_t)k->mn[g] * x->bsums[g];
    return ksum_float(acc, x->d, k->d, k->dmin, isum, imin, k->has_min);
}

static void dotk_scalar(enum tern_type t, int64_t n, const void *w, const void *xq, size_t xs, int nc,
                        float *out) {
    const int64_t nb = n / QK_K;
    const size_t wbs = k_traits[t].size;
    for (int c = 0; c < nc; c++) {
        const block_q8_K *x = (const block_q8_K *)(const void *)((const uint8_t *)xq + (size_t)c * xs);
        float acc = 0.0f;
        for (int64_t ib = 0; ib < nb; ib++) {
            const uint8_t *b = (const uint8_t *)w + (size_t)ib * wbs;
            kblock k;
            uint8_t qu[256];
            kblock_scales(t, b, &k);
            kblock_quants_scalar(t, b, qu);
            int32_t dotq = 0;
            for (int g = 0; g < 16; g++) {
                int32_t s = 0;
                for (int e = 16 * g; e < 16 * g + 16; e++) s += (int32_t)qu[e] * x[ib].qs[e];
                dotq += (int32_t)k.sc[g] * s;
            }
            acc = ksum_step(acc, &k, &x[ib], dotq);
        }
        out[c] = acc;
    }
}
#define DOTK_SCALAR(name, T) \
    static void name(int64_t n, const void *w, const void *x, size_t xs, int nc, float *o) { dotk_scalar(T, n, w, x, xs, nc, o); }
DOTK_SCALAR(dot_q2_K_scalar, TERN_TYPE_Q2_K)
DOTK_SCALAR(dot_q3_K_scalar, TERN_TYPE_Q3_K)
DOTK_SCALAR(dot_q4_K_scalar, TERN_TYPE_Q4_K)
DOTK_SCALAR(dot_q5_K_scalar, TERN_TYPE_Q5_K)
DOTK_SCALAR(dot_q6_K_scalar, TERN_TYPE_Q6_K)

static const dot_fn k_dot_scalar[TERN_TYPE_COUNT] = {
    [TERN_TYPE_F32] = dot_f32_scalar,   [TERN_TYPE_F16] = dot_f16_scalar,   [TERN_TYPE_BF16] = dot_bf16_scalar,
    [TERN_TYPE_Q4_0] = dot_q4_0_scalar, [TERN_TYPE_Q4_1] = dot_q4_1_scalar, [TERN_TYPE_Q5_0] = dot_q5_0_scalar,
    [TERN_TYPE_Q5_1] = dot_q5_1_scalar, [TERN_TYPE_Q8_0] = dot_q8_0_scalar, [TERN_TYPE_IQ4_NL] = dot_iq4_nl_scalar,
    [TERN_TYPE_Q2_K] = dot_q2_K_scalar, [TERN_TYPE_Q3_K] = dot_q3_K_scalar, [TERN_TYPE_Q4_K] = dot_q4_K_scalar,
    [TERN_TYPE_Q5_K] = dot_q5_K_scalar, [TERN_TYPE_Q6_K] = dot_q6_K_scalar,
};

/* ---- AVX2 + FMA + F16C kernels ------------------------------------------------------------ */
#ifdef TERN_X86

/* hsum8 of the contract, the same tree as hsum8_scalar. */
TERN_AVX2_INLINE float hsum8_avx2(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v)); /* r_i = v_i + v_{i+4} */
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));                                         /* r0+r2, r1+r3 */
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

TERN_AVX2_INLINE int32_t hsum_i32_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* fp16 fields -> floats in the low lanes of an xmm (F16C conversion is exact, like h2f). */
TERN_AVX2_INLINE __m128 half1_avx2(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(h));
}
TERN_AVX2_INLINE __m128 half2_avx2(const uint8_t *p) {
    int32_t h;
    memcpy(&h, p, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(h));
}

/* 16 packed nibbles -> 32 bytes: low nibbles (elements 0..15) then high nibbles (16..31). */
TERN_AVX2_INLINE __m256i nibbles32_avx2(const uint8_t *qs) {
    const __m128i v = _mm_loadu_si128((const __m128i *)qs);
    const __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
    return _mm256_and_si256(b, _mm256_set1_epi8(0x0F));
}

/* 32 bits (little-endian) -> 32 bytes, byte j = 0x10 if bit j is set (the Q5 fifth bit). */
TERN_AVX2_INLINE __m256i bit5_avx2(const uint8_t *qh) {
    int32_t h;
    memcpy(&h, qh, 4);
    const __m256i rep = _mm256_shuffle_epi8(_mm256_set1_epi32(h),
                                            _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL,
                                                               0x0303030303030303LL));
    const __m256i sel = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(rep, sel), sel);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

/* Unpack block ib of a 32-block weight row: the 32 values (signed for Q4_0 Q5_0 Q8_0 IQ4_NL,
 * unsigned for Q4_1 Q5_1). The fp16 d (and m) stay where they are: scales are read by the caller. */
TERN_AVX2_INLINE __m256i unpack32_avx2(enum tern_type t, const uint8_t *b) {
    switch (t) {
    case TERN_TYPE_Q4_0:
        return _mm256_sub_epi8(nibbles32_avx2(b + 2), _mm256_set1_epi8(8));
    case TERN_TYPE_IQ4_NL: {
        const __m256i kv = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k_iq4nl));
        return _mm256_shuffle_epi8(kv, nibbles32_avx2(b + 2));
    }
    case TERN_TYPE_Q4_1:
        return nibbles32_avx2(b + 4);
    case TERN_TYPE_Q5_0:
        return _mm256_sub_epi8(_mm256_or_si256(nibbles32_avx2(b + 6), bit5_avx2(b + 2)), _mm256_set1_epi8(16));
    case TERN_TYPE_Q5_1:
        return _mm256_or_si256(nibbles32_avx2(b + 8), bit5_avx2(b + 4));
    default: /* TERN_TYPE_Q8_0 */
        return _mm256_loadu_si256((const __m256i *)(b + 2));
    }
}

/* vpdpbusd / vpdpwssd on ymm, VNNI = 1: EVEX (written {evex}; AVX512_VL + AVX512_VNNI, the avx512vnni path), VNNI = 2:
 * VEX (written {vex}; AVX-VNNI, the avxvnni path: Intel client CPUs from Alder Lake have it without AVX-512; the
 * EVEX form would fault there, the VEX one on AVX512_VNNI CPUs before Alder Lake / Zen 5), as asm so that the AVX2 kernels stay compiled for AVX2 and take VNNI as a
 * compile-time 0 / 1: their VNNI copies run only on the "avx512vnni" path (cpu_has_avx512vnni). dpbusd(a, b): the sums
 * of 4 adjacent u8 x s8 products in int32, no saturation: madd(maddubs(a, b), ones) wherever maddubs does not saturate
 * (the bounds at each use); dpwssd(acc, a, b) = acc + madd(a, b) (both wrap). */
TERN_AVX2_INLINE __m256i dpbusd_avx2(const int VNNI, __m256i a, __m256i b) {
    __m256i acc = _mm256_setzero_si256();
    if (VNNI == 2) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    else __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    return acc;
}
TERN_AVX2_INLINE __m256i dpwssd_avx2(const int VNNI, __m256i acc, __m256i a, __m256i b) {
    if (VNNI == 2) __asm__("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    else __asm__("%{evex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    return acc;
}
/* the int32 sums of 4 adjacent u8 x s8 products: VNNI's one instruction or maddubs + madd */
#define I8DOT_AVX2(VNNI, a, b, ones) ((VNNI) ? dpbusd_avx2(VNNI, a, b) : _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones))

/* dot32_avx2 (lanes8 contract) for NC columns at once; t, NC and VNNI are compile-time constants
 * after inlining. Int8 bounds: maddubs pairs <= 2*128*127 = 32512 < 2^15 (no saturation), so
 * madd(., 1) (or dpbusd) gives the exact p_k of the contract. */
TERN_AVX2_INLINE void dot32_avx2_nc(enum tern_type t, int64_t nb, const uint8_t *w, const uint8_t *x, size_t xs,
                                    const int NC, const int VNNI, float *out) {
    const int has_min = t == TERN_TYPE_Q4_1 || t == TERN_TYPE_Q5_1;
    const int is_signed = !has_min;
    const size_t wbs = k_traits[t].size, xbs = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const size_t xoff = has_min ? 4 : 2;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[8];
    float summs[8];
#pragma GCC unroll 8
    for (int c = 0; c < NC; c++) {
        acc[c] = _mm256_setzero_ps();
        summs[c] = 0.0f;
    }
    for (int64_t ib = 0; ib < nb; ib++) {
        const uint8_t *wb = w + (size_t)ib * wbs;
        const __m256i qw = unpack32_avx2(t, wb);
        const __m256i aw = is_signed ? _mm256_sign_epi8(qw, qw) : qw;
        const float dw = h2f_t(wb), mw = has_min ? h2f_t(wb + 2) : 0.0f;
#pragma GCC unroll 8
        for (int c = 0; c < NC; c++) {
            const uint8_t *xb = x + (size_t)c * xs + (size_t)ib * xbs;
            if (has_min) summs[c] = summs[c] + mw * h2f_t(xb + 2);
            const __m256i qx = _mm256_loadu_si256((const __m256i *)(xb + xoff));
            const __m256 p = _mm256_cvtepi32_ps(is_signed ? I8DOT_AVX2(VNNI, aw, _mm256_sign_epi8(qx, qw), ones)
                                                          : I8DOT_AVX2(VNNI, qw, qx, ones));
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dw * h2f_t(xb)), p, acc[c]);
        }
    }
#pragma GCC unroll 8
    for (int c = 0; c < NC; c++) {
        const float h = hsum8_avx2(acc[c]);
        out[c] = has_min ? h + summs[c] : h;
    }
}

/* dot32_avx2_rows: the transpose of dot32_avx2_nc, NR weight rows against one activation row:
 * the activation block is loaded once per step and the NR fmadd chains are independent, so
 * they overlap (the single-row kernel waits on its one chain: fmadd latency 4 per block on Zen 3).
 * Per row the operations and their order are those of dot32_avx2_nc: bit-identical results. */
TERN_AVX2_INLINE void dot32_avx2_rows(enum tern_type t, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *x,
                                      const int NR, const int VNNI, float *out) {
    const int has_min = t == TERN_TYPE_Q4_1 || t == TERN_TYPE_Q5_1;
    const int is_signed = !has_min;
    const size_t wbs = k_traits[t].size, xbs = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const size_t xoff = has_min ? 4 : 2;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[4];
    float summs[4];
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) {
        acc[r] = _mm256_setzero_ps();
        summs[r] = 0.0f;
    }
    for (int64_t ib = 0; ib < nb; ib++) {
        const uint8_t *xb = x + (size_t)ib * xbs;
        const __m256i qx = _mm256_loadu_si256((const __m256i *)(xb + xoff));
        const float dx = h2f_t(xb), sx = has_min ? h2f_t(xb + 2) : 0.0f;
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const uint8_t *wb = w + (size_t)r * ws + (size_t)ib * wbs;
            const __m256i qw = unpack32_avx2(t, wb);
            const __m256 p = _mm256_cvtepi32_ps(is_signed ? I8DOT_AVX2(VNNI, _mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw), ones)
                                                          : I8DOT_AVX2(VNNI, qw, qx, ones));
            if (has_min) summs[r] = summs[r] + h2f_t(wb + 2) * sx;
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(h2f_t(wb) * dx), p, acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) {
        const float h = hsum8_avx2(acc[r]);
        out[r] = has_min ? h + summs[r] : h;
    }
}

#define DOT32_AVX2(name, T, V)                                                                        \
    TERN_AVX2 static void name(int64_t n, const void *w, const void *xq, size_t xs, int nc, float *o) { \
        const uint8_t *x = xq;                                                                        \
        const int64_t nb = n / QK32;                                                                  \
        int c = 0;                                                                                    \
        for (; c + 8 <= nc; c += 8) dot32_avx2_nc(T, nb, w, x + (size_t)c * xs, xs, 8, V, o + c);      \
        if (c + 4 <= nc) { dot32_avx2_nc(T, nb, w, x + (size_t)c * xs, xs, 4, V, o + c); c += 4; }       \
        switch (nc - c) {                                                                             \
        case 3: dot32_avx2_nc(T, nb, w, x + (size_t)c * xs, xs, 3, V, o + c); break;                    \
        case 2: dot32_avx2_nc(T, nb, w, x + (size_t)c * xs, xs, 2, V, o + c); break;                    \
        case 1: dot32_avx2_nc(T, nb, w, x + (size_t)c * xs, xs, 1, V, o + c); break;                    \
        default: break;                                                                               \
        }                                                                                             \
    }                                                                                                 \
    TERN_AVX2 static float name##1(int64_t n, const void *w, const void *xq) {                       \
        float r;                                                                                      \
        dot32_avx2_nc(T, n / QK32, w, xq, 0, 1, V, &r);                                                  \
        return r;                                                                                     \
    }                                                                                                 \
    TERN_AVX2 static void name##r(int64_t n, const void *w, size_t ws, const void *xq, int nr, float *o) { \
        const uint8_t *wr = w;                                                                        \
        const int64_t nb = n / QK32;                                                                  \
        int r = 0;                                                                                    \
        for (; r + 4 <= nr; r += 4) dot32_avx2_rows(T, nb, wr + (size_t)r * ws, ws, xq, 4, V, o + r);   \
        switch (nr - r) {                                                                             \
        case 3: dot32_avx2_rows(T, nb, wr + (size_t)r * ws, ws, xq, 3, V, o + r); break;                \
        case 2: dot32_avx2_rows(T, nb, wr + (size_t)r * ws, ws, xq, 2, V, o + r); break;                \
        case 1: dot32_avx2_rows(T, nb, wr + (size_t)r * ws, ws, xq, 1, V, o + r); break;                \
        default: break;                                                                               \
        }                                                                                             \
    }
/* each type's kernels without VNNI, with AVX512_VNNI's EVEX form (name##_vnni, name##_vnni1, name##_vnnir) and
 * with AVX-VNNI's VEX form (name##_vex...) */
#define DOT32_AVX2_2(name, T) DOT32_AVX2(name, T, 0) DOT32_AVX2(name##_vnni, T, 1) DOT32_AVX2(name##_vex, T, 2)
DOT32_AVX2_2(dot_q4_0_avx2, TERN_TYPE_Q4_0)
DOT32_AVX2_2(dot_q4_1_avx2, TERN_TYPE_Q4_1)
DOT32_AVX2_2(dot_q5_0_avx2, TERN_TYPE_Q5_0)
DOT32_AVX2_2(dot_q5_1_avx2, TERN_TYPE_Q5_1)
DOT32_AVX2_2(dot_q8_0_avx2, TERN_TYPE_Q8_0)
DOT32_AVX2_2(dot_iq4_nl_avx2, TERN_TYPE_IQ4_NL)

/* F32/F16/BF16: 8 weights at element i as floats (all three conversions are exact). */
TERN_AVX2_INLINE __m256 wload8_avx2(enum tern_type t, const uint8_t *w, int64_t i) {
    switch (t) {
    case TERN_TYPE_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 2 * i)));
    case TERN_TYPE_BF16:
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(w + 2 * i))), 16));
    default: return _mm256_loadu_ps((const float *)(const void *)(w + 4 * i));
    }
}

/* lanes32 contract, NC (1 or 2) columns per pass over the row. */
TERN_AVX2_INLINE void dotf_avx2_nc(enum tern_type t, int64_t n, const uint8_t *w, const uint8_t *xq, size_t xs,
                                   const int NC, float *out) {
    __m256 acc[2][4];
    for (int c = 0; c < NC; c++)
        for (int k = 0; k < 4; k++) acc[c][k] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 wv[4];
        for (int k = 0; k < 4; k++) wv[k] = wload8_avx2(t, w, i + 8 * k);
        for (int c = 0; c < NC; c++) {
            const float *x = (const float *)(const void *)(xq + (size_t)c * xs);
            for (int k = 0; k < 4; k++) acc[c][k] = _mm256_fmadd_ps(wv[k], _mm256_loadu_ps(x + i + 8 * k), acc[c][k]);
        }
    }
    for (int c = 0; c < NC; c++) {
        const float *x = (const float *)(const void *)(xq + (size_t)c * xs);
        float r = hsum8_avx2(_mm256_add_ps(_mm256_add_ps(acc[c][0], acc[c][1]), _mm256_add_ps(acc[c][2], acc[c][3])));
        for (int64_t j = i; j < n; j++) r = fmaf(wload_scalar(t, w, j), x[j], r);
        out[c] = r;
    }
}

#define DOTF_AVX2(name, T)                                                                            \
    TERN_AVX2 static void name(int64_t n, const void *w, const void *xq, size_t xs, int nc, float *o) { \
        const uint8_t *x = xq;                                                                        \
        int c = 0;                                                                                    \
        for (; c + 2 <= nc; c += 2) dotf_avx2_nc(T, n, w, x + (size_t)c * xs, xs, 2, o + c);        \
        if (c < nc) dotf_avx2_nc(T, n, w, x + (size_t)c * xs, xs, 1, o + c);                        \
    }                                                                                                 \
    TERN_AVX2 static float name##1(int64_t n, const void *w, const void *xq) {                       \
        float r;                                                                                      \
        dotf_avx2_nc(T, n, w, xq, 0, 1, &r);                                                          \
        return r;                                                                                     \
    }
DOTF_AVX2(dot_f32_avx2, TERN_TYPE_F32)
DOTF_AVX2(dot_f16_avx2, TERN_TYPE_F16)
DOTF_AVX2(dot_bf16_avx2, TERN_TYPE_BF16)

/* K-quants: quants 32c..32c+31 of the super-block as unsigned bytes (same values as
 * kblock_quants_scalar). srli_epi16 moves bits across byte boundaries, the masks cut them off
 * again. c is a constant after unrolling, so repeated loads of the same bytes are CSEd. */
TERN_AVX2_INLINE __m256i kchunk_avx2(enum tern_type t, const uint8_t *b, const int c) {
    const __m256i m2 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(0x0F), m1 = _mm256_set1_epi8(1);
    switch (t) {
    case TERN_TYPE_Q2_K:
    case TERN_TYPE_Q3_K: {
        const uint8_t *qs = t == TERN_TYPE_Q2_K ? ((const block_q2_K *)(const void *)b)->qs
                                                : ((const block_q3_K *)(const void *)b)->qs;
        const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (c / 4)));
        __m256i q = _mm256_and_si256(_mm256_srli_epi16(v, 2 * (c % 4)), m2);
        if (t == TERN_TYPE_Q3_K) { /* hmask bit c of byte l: 1 means no -4, i.e. qu = q + 4 */
            const __m256i hm = _mm256_loadu_si256((const __m256i *)((const block_q3_K *)(const void *)b)->hmask);
            q = _mm256_or_si256(q, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, c), m1), 2));
        }
        return q;
    }
    case TERN_TYPE_Q4_K:
    case TERN_TYPE_Q5_K: {
        const int five = t == TERN_TYPE_Q5_K;
        const uint8_t *qs = five ? ((const block_q5_K *)(const void *)b)->qs : ((const block_q4_K *)(const void *)b)->qs;
        const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (c / 2)));
        __m256i q = _mm256_and_si256(c % 2 ? _mm256_srli_epi16(v, 4) : v, m4);
        if (five) {
            const __m256i hm = _mm256_loadu_si256((const __m256i *)((const block_q5_K *)(const void *)b)->qh);
            q = _mm256_or_si256(q, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, c), m1), 4));
        }
        return q;
    }
    default: { /* TERN_TYPE_Q6_K: chunk c = 4h + k takes ql[64h + 32(k%2)] (low nibble for k < 2, high
                * for k >= 2) and bits 2k, 2k+1 of qh[32h] */
        const block_q6_K *x = (const void *)b;
        const int h = c / 4, k = c % 4;
        const __m256i l = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h + 32 * (k % 2)));
        const __m256i hh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
        const __m256i lo = _mm256_and_si256(k < 2 ? l : _mm256_srli_epi16(l, 4), m4);
        return _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hh, 2 * k), m2), 4));
    }
    }
}

/* The super-block's scales in registers (same values as kblock_scales, which goes through
 * memory byte by byte and would stall the 16-byte reload on store forwarding): int8 scale and
 * uint8 min per 16-element group, d and dmin. */
TERN_AVX2_INLINE void kscales_avx2(enum tern_type t, const uint8_t *b, __m128i *sc, __m128i *mn, float *d,
                                   float *dmin) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    *mn = _mm_setzero_si128();
    *dmin = 0.0f;
    switch (t) {
    case TERN_TYPE_Q2_K: {
        const block_q2_K *x = (const void *)b;
        const __m128i v = _mm_loadu_si128((const __m128i *)x->scales);
        *sc = _mm_and_si128(v, m4);
        *mn = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
        const __m128 f = half2_avx2((const uint8_t *)&x->d);
        *d = _mm_cvtss_f32(f);
        *dmin = _mm_cvtss_f32(_mm_movehdup_ps(f));
        return;
    }
    case TERN_TYPE_Q3_K: {
        const block_q3_K *x = (const void *)b;
        uint64_t lo;
        uint32_t hi;
        memcpy(&lo, x->scales, 8);
        memcpy(&hi, x->scales + 8, 4);
        const __m128i l = _mm_and_si128(_mm_set_epi64x((long long)(lo >> 4), (long long)lo), m4);
        const __m128i h = _mm_and_si128(_mm_setr_epi32((int)hi, (int)(hi >> 2), (int)(hi >> 4), (int)(hi >> 6)),
                                        _mm_set1_epi8(3));
        *sc = _mm_sub_epi8(_mm_or_si128(l, _mm_slli_epi16(h, 4)), _mm_set1_epi8(32));
        *d = _mm_cvtss_f32(half1_avx2((const uint8_t *)&x->d));
        return;
    }
    case TERN_TYPE_Q4_K:
    case TERN_TYPE_Q5_K: {
        const block_q4_K *x = (const void *)b; /* d, dmin, scales at the same offsets in Q5_K */
        uint32_t w0, w1, w2;
        memcpy(&w0, x->scales, 4);
        memcpy(&w1, x->scales + 4, 4);
        memcpy(&w2, x->scales + 8, 4);
        /* k4_scale_min on 4 bytes at a time */
        const uint32_t s03 = w0 & 0x3F3F3F3Fu, m03 = w1 & 0x3F3F3F3Fu;
        const uint32_t s47 = (w2 & 0x0F0F0F0Fu) | ((w0 >> 6) & 0x03030303u) << 4;
        const uint32_t m47 = ((w2 >> 4) & 0x0F0F0F0Fu) | ((w1 >> 6) & 0x03030303u) << 4;
        const __m128i s8 = _mm_setr_epi32((int)s03, (int)s47, 0, 0), n8 = _mm_setr_epi32((int)m03, (int)m47, 0, 0);
        *sc = _mm_unpacklo_epi8(s8, s8); /* one per 32 -> one per 16 */
        *mn = _mm_unpacklo_epi8(n8, n8);
        const __m128 f = half2_avx2(b);
        *d = _mm_cvtss_f32(f);
        *dmin = _mm_cvtss_f32(_mm_movehdup_ps(f));
        return;
    }
    default: { /* TERN_TYPE_Q6_K */
        const block_q6_K *x = (const void *)b;
        *sc = _mm_loadu_si128((const __m128i *)x->scales);
        *d = _mm_cvtss_f32(half1_avx2((const uint8_t *)&x->d));
        return;
    }
    }
}

/* A super-block's scales in the forms the K dots use (kscales_avx2): the int16 scales and mins of the 16 groups, the
 * scales broadcast per 128-bit lane (groups 0..7 in lo, 8..15 in hi), d and dmin. */
typedef struct {
    __m256i sc16, mn16, s_lo, s_hi;
    float d, dmin;
} kblock_avx2;

TERN_AVX2_INLINE kblock_avx2 kblock_load_avx2(enum tern_type t, const uint8_t *b) {
    __m128i sc, mn;
    kblock_avx2 k;
    kscales_avx2(t, b, &sc, &mn, &k.d, &k.dmin);
    k.sc16 = _mm256_cvtepi8_epi16(sc);
    k.mn16 = _mm256_cvtepu8_epi16(mn);
    k.s_lo = _mm256_permute2x128_si256(k.sc16, k.sc16, 0x00);
    k.s_hi = _mm256_permute2x128_si256(k.sc16, k.sc16, 0x11);
    return k;
}

/* 32-chunk c's int16 scales: group 2c's in the low lane, group 2c+1's in the high lane (one in-lane pshufb). */
TERN_AVX2_INLINE __m256i kchunk_scales_avx2(const kblock_avx2 *k, const int c) {
    const int g = (2 * c) & 7;
    const __m256i pick = _mm256_setr_epi8(2 * g, 2 * g + 1, 2 * g, 2 * g + 1, 2 * g, 2 * g + 1, 2 * g, 2 * g + 1,
                                          2 * g, 2 * g + 1, 2 * g, 2 * g + 1, 2 * g, 2 * g + 1, 2 * g, 2 * g + 1,
                                          2 * g + 2, 2 * g + 3, 2 * g + 2, 2 * g + 3, 2 * g + 2, 2 * g + 3, 2 * g + 2,
                                          2 * g + 3, 2 * g + 2, 2 * g + 3, 2 * g + 2, 2 * g + 3, 2 * g + 2, 2 * g + 3,
                                          2 * g + 2, 2 * g + 3);
    return _mm256_shuffle_epi8(c < 4 ? k->s_lo : k->s_hi, pick);
}

/* One column's isum and imin from its chunk sums acc and its Q8_K block x: the offset and min terms. */
TERN_AVX2_INLINE void kfinish_avx2(enum tern_type t, const kblock_avx2 *k, __m256i acc, const block_q8_K *x,
                                   int32_t *isum, int32_t *imin) {
    const __m256i bs = _mm256_loadu_si256((const __m256i *)x->bsums);
    if (t == TERN_TYPE_Q3_K) acc = _mm256_sub_epi32(acc, _mm256_slli_epi32(_mm256_madd_epi16(k->sc16, bs), 2));
    if (t == TERN_TYPE_Q6_K) acc = _mm256_sub_epi32(acc, _mm256_slli_epi32(_mm256_madd_epi16(k->sc16, bs), 5));
    *isum = hsum_i32_avx2(acc);
    *imin = (t == TERN_TYPE_Q3_K || t == TERN_TYPE_Q6_K) ? 0 : hsum_i32_avx2(_mm256_madd_epi16(k->mn16, bs));
}

/* isum and imin of the ksum contract for NC columns (NC a compile-time constant after inlining; column j's Q8_K
 * block at x + j * xs), exact: maddubs pairs <= 2*63*127 (qu <= 63); madd against the int16 scales of the two
 * groups in each 32-chunk (pshufb picks bytes 2c, 2c+1 eight times each, cvtepi8_epi16 sign-extends them into the
 * low / high 128-bit lane); the offset and min terms are madds of the scales / mins against the Q8_K bsums. Each
 * 32-chunk's quants and group scales are unpacked once for the NC columns; integers, so a column's sums do not
 * depend on NC. */
TERN_AVX2_INLINE void kdot_avx2_nc(enum tern_type t, const uint8_t *b, const kblock_avx2 *k, const uint8_t *x,
                                   size_t xs, const int NC, const int VNNI, int32_t *isum, int32_t *imin) {
    __m256i acc[8];
#pragma GCC unroll 8
    for (int j = 0; j < NC; j++) acc[j] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++) {
        const __m256i s16 = kchunk_scales_avx2(k, c);
        const __m256i q = kchunk_avx2(t, b, c);
#pragma GCC unroll 8
        for (int j = 0; j < NC; j++) {
            const block_q8_K *xj = (const block_q8_K *)(const void *)(x + (size_t)j * xs);
            const __m256i p16 = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(xj->qs + 32 * c)));
            acc[j] = VNNI ? dpwssd_avx2(VNNI, acc[j], p16, s16) : _mm256_add_epi32(acc[j], _mm256_madd_epi16(p16, s16));
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NC; j++)
        kfinish_avx2(t, k, acc[j], (const block_q8_K *)(const void *)(x + (size_t)j * xs), &isum[j], &imin[j]);
}

/* NC (1..4) columns of one weight row: per super-block the scales are unpacked once, each 32-chunk's quants once
 * (kdot_avx2_nc), then each column's float step (ksum_float) in block order: column c's value is the one-column
 * call's, bit for bit. */
TERN_AVX2_INLINE void dotk_avx2_nc(enum tern_type t, int64_t n, const void *w, const uint8_t *xq, size_t xs,
                                   const int NC, const int VNNI, float *out) {
    const int has_min = t == TERN_TYPE_Q2_K || t == TERN_TYPE_Q4_K || t == TERN_TYPE_Q5_K;
    const int64_t nb = n / QK_K;
    const size_t wbs = k_traits[t].size;
    float acc[8];
#pragma GCC unroll 8
    for (int j = 0; j < NC; j++) acc[j] = 0.0f;
    for (int64_t ib = 0; ib < nb; ib++) {
        const uint8_t *b = (const uint8_t *)w + (size_t)ib * wbs;
        const kblock_avx2 k = kblock_load_avx2(t, b);
        int32_t isum[8], imin[8];
        kdot_avx2_nc(t, b, &k, xq + (size_t)ib * sizeof(block_q8_K), xs, NC, VNNI, isum, imin);
#pragma GCC unroll 8
        for (int j = 0; j < NC; j++) {
            const block_q8_K *x = (const block_q8_K *)(const void *)(xq + (size_t)j * xs) + ib;
            acc[j] = ksum_float(acc[j], x->d, k.d, k.dmin, isum[j], imin[j], has_min);
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NC; j++) out[j] = acc[j];
}

TERN_AVX2_INLINE void dotk_avx2(enum tern_type t, int64_t n, const void *w, const void *xq, size_t xs, int nc,
                                const int VNNI, float *out) {
    const uint8_t *x = xq;
    int c = 0;
    for (; c + 8 <= nc; c += 8) dotk_avx2_nc(t, n, w, x + (size_t)c * xs, xs, 8, VNNI, out + c);
    if (c + 4 <= nc) { dotk_avx2_nc(t, n, w, x + (size_t)c * xs, xs, 4, VNNI, out + c); c += 4; }
    switch (nc - c) {
    case 3: dotk_avx2_nc(t, n, w, x + (size_t)c * xs, xs, 3, VNNI, out + c); break;
    case 2: dotk_avx2_nc(t, n, w, x + (size_t)c * xs, xs, 2, VNNI, out + c); break;
    case 1: dotk_avx2_nc(t, n, w, x + (size_t)c * xs, xs, 1, VNNI, out + c); break;
    default: break;
    }
}
#define DOTK_AVX2(name, T, V)                                                                                \
    TERN_AVX2 static void name(int64_t n, const void *w, const void *x, size_t xs, int nc, float *o) {        \
        dotk_avx2(T, n, w, x, xs, nc, V, o);                                                                 \
    }                                                                                                        \
    TERN_AVX2 static float name##1(int64_t n, const void *w, const void *x) {                                \
        float r;                                                                                             \
        dotk_avx2(T, n, w, x, 0, 1, V, &r);                                                                  \
        return r;                                                                                            \
    }
#define DOTK_AVX2_2(name, T) DOTK_AVX2(name, T, 0) DOTK_AVX2(name##_vnni, T, 1) DOTK_AVX2(name##_vex, T, 2)
DOTK_AVX2_2(dot_q2_K_avx2, TERN_TYPE_Q2_K)
DOTK_AVX2_2(dot_q3_K_avx2, TERN_TYPE_Q3_K)
DOTK_AVX2_2(dot_q4_K_avx2, TERN_TYPE_Q4_K)
DOTK_AVX2_2(dot_q5_K_avx2, TERN_TYPE_Q5_K)
DOTK_AVX2_2(dot_q6_K_avx2, TERN_TYPE_Q6_K)

/* ---- AVX-512 multi-column kernels (AVX-512 F/BW/VL/DQ): two columns a zmm ------------------------------------
 * The multi-column dots (tern_vec_dot_multi, nc >= 2) on 512-bit vectors: column pair (2j, 2j+1) in the low and high
 * 256 bits of one zmm, the weights unpacked once (the AVX2 kernels' ymm, broadcast to both halves). Each half computes
 * its column's operations of the AVX2 kernel lane for lane (the same integer products and sums, the same f32 fmadd a
 * block, the same hsum8 at the end), so every column's bits are the one-column call's. AVX-512 has no vpsignb: a signed
 * type's activations are negated where the weight is negative (a masked 0 - x, which wraps -128 as vpsignb does); where
 * the weight is 0 vpsignb gives 0 and this keeps x, but |w| = 0 makes that product 0 either way. */
#define TERN_AVX512_INLINE __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"), always_inline)) static inline
#define TERN_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

/* AVX512_VNNI's vpdpbusd and vpdpwssd, as asm: the kernels below are compiled once for F/BW/VL/DQ and take VNNI as a
 * compile-time 0 / 1 (two copies of each, the "avx512vnni" path's run only where cpu_has_avx512vnni()); an intrinsic
 * would need the vnni target on every function it is inlined into, the non-VNNI copies too. dpbusd: acc + the sum of 4
 * adjacent u8 x s8 products in each int32, without saturation, so the int32 of madd(maddubs(a, b), ones) wherever
 * maddubs does not saturate (the bounds at each use); dpwssd: acc + madd(a, b), the same int32 (both wrap). */
TERN_AVX512_INLINE __m512i dpbusd_avx512(__m512i acc, __m512i a, __m512i b) {
    __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
}
TERN_AVX512_INLINE __m512i dpwssd_avx512(__m512i acc, __m512i a, __m512i b) {
    __asm__("%{evex%} vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
}

TERN_AVX512_INLINE __m512i bcast256_avx512(__m256i v) { return _mm512_inserti64x4(_mm512_castsi256_si512(v), v, 1); }
TERN_AVX512_INLINE __m512i load2_avx512(const uint8_t *a, const uint8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

/* dot32_avx2_nc for NP column pairs (VNNI: the block's int32 sums by dpbusd; maddubs pairs <= 2*128*127, as above). */
TERN_AVX512_INLINE void dot32_avx512_np(enum tern_type t, int64_t nb, const uint8_t *w, const uint8_t *x, size_t xs,
                                        const int NP, const int VNNI, float *out) {
    const int has_min = t == TERN_TYPE_Q4_1 || t == TERN_TYPE_Q5_1;
    const int is_signed = !has_min;
    const size_t wbs = k_traits[t].size, xbs = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const size_t xoff = has_min ? 4 : 2;
    const __m512i ones = _mm512_set1_epi16(1), zero = _mm512_setzero_si512();
    __m512 acc[4];
    float summs[8];
#pragma GCC unroll 4
    for (int j = 0; j < NP; j++) acc[j] = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int c = 0; c < 2 * NP; c++) summs[c] = 0.0f;
    for (int64_t ib = 0; ib < nb; ib++) {
        const uint8_t *wb = w + (size_t)ib * wbs;
        const __m256i qw = unpack32_avx2(t, wb);
        const __m512i QW = bcast256_avx512(is_signed ? _mm256_sign_epi8(qw, qw) : qw);
        const __mmask64 neg = is_signed ? _mm512_movepi8_mask(bcast256_avx512(qw)) : 0;
        const float dw = h2f_t(wb), mw = has_min ? h2f_t(wb + 2) : 0.0f;
#pragma GCC unroll 4
        for (int j = 0; j < NP; j++) {
            const uint8_t *x0 = x + (size_t)(2 * j) * xs + (size_t)ib * xbs, *x1 = x0 + xs;
            if (has_min) {
                summs[2 * j] = summs[2 * j] + mw * h2f_t(x0 + 2);
                summs[2 * j + 1] = summs[2 * j + 1] + mw * h2f_t(x1 + 2);
            }
            __m512i qx = load2_avx512(x0 + xoff, x1 + xoff);
            if (is_signed) qx = _mm512_mask_sub_epi8(qx, neg, zero, qx);
            const __m512 pf = _mm512_cvtepi32_ps(VNNI ? dpbusd_avx512(zero, QW, qx)
                                                      : _mm512_madd_epi16(_mm512_maddubs_epi16(QW, qx), ones));
            const __m512 sc = _mm512_insertf32x8(_mm512_set1_ps(dw * h2f_t(x0)), _mm256_set1_ps(dw * h2f_t(x1)), 1);
            acc[j] = _mm512_fmadd_ps(sc, pf, acc[j]);
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NP; j++) {
        const float h0 = hsum8_avx2(_mm512_castps512_ps256(acc[j])), h1 = hsum8_avx2(_mm512_extractf32x8_ps(acc[j], 1));
        out[2 * j] = has_min ? h0 + summs[2 * j] : h0;
        out[2 * j + 1] = has_min ? h1 + summs[2 * j + 1] : h1;
    }
}

/* kdot_avx2_nc for NP column pairs (column c's Q8_K block at x + c * xs): the int32 sums (VNNI: the scales' madd and
 * the add as one dpwssd). */
TERN_AVX512_INLINE void kdot_avx512_np(enum tern_type t, const uint8_t *b, const kblock_avx2 *k, const uint8_t *x,
                                       size_t xs, const int NP, const int VNNI, int32_t *isum, int32_t *imin) {
    __m512i acc[4];
#pragma GCC unroll 4
    for (int j = 0; j < NP; j++) acc[j] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++) {
        const __m512i S16 = bcast256_avx512(kchunk_scales_avx2(k, c));
        const __m512i Q = bcast256_avx512(kchunk_avx2(t, b, c));
#pragma GCC unroll 4
        for (int j = 0; j < NP; j++) {
            const block_q8_K *x0 = (const block_q8_K *)(const void *)(x + (size_t)(2 * j) * xs);
            const block_q8_K *x1 = (const block_q8_K *)(const void *)(x + (size_t)(2 * j + 1) * xs);
            const __m512i p16 = _mm512_maddubs_epi16(Q, load2_avx512((const uint8_t *)x0->qs + 32 * c, (const uint8_t *)x1->qs + 32 * c));
            acc[j] = VNNI ? dpwssd_avx512(acc[j], p16, S16) : _mm512_add_epi32(acc[j], _mm512_madd_epi16(p16, S16));
        }
    }
#pragma GCC unroll 8
    for (int c = 0; c < 2 * NP; c++)
        kfinish_avx2(t, k, c & 1 ? _mm512_extracti64x4_epi64(acc[c / 2], 1) : _mm512_castsi512_si256(acc[c / 2]),
                     (const block_q8_K *)(const void *)(x + (size_t)c * xs), &isum[c], &imin[c]);
}

TERN_AVX512_INLINE void dotk_avx512_np(enum tern_type t, int64_t n, const void *w, const uint8_t *xq, size_t xs,
                                       const int NP, const int VNNI, float *out) {
    const int has_min = t == TERN_TYPE_Q2_K || t == TERN_TYPE_Q4_K || t == TERN_TYPE_Q5_K;
    const int64_t nb = n / QK_K;
    const size_t wbs = k_traits[t].size;
    float acc[8];
#pragma GCC unroll 8
    for (int c = 0; c < 2 * NP; c++) acc[c] = 0.0f;
    for (int64_t ib = 0; ib < nb; ib++) {
        const uint8_t *b = (const uint8_t *)w + (size_t)ib * wbs;
        const kblock_avx2 k = kblock_load_avx2(t, b);
        int32_t isum[8], imin[8];
        kdot_avx512_np(t, b, &k, xq + (size_t)ib * sizeof(block_q8_K), xs, NP, VNNI, isum, imin);
#pragma GCC unroll 8
        for (int c = 0; c < 2 * NP; c++) {
            const block_q8_K *x = (const block_q8_K *)(const void *)(xq + (size_t)c * xs) + ib;
            acc[c] = ksum_float(acc[c], x->d, k.d, k.dmin, isum[c], imin[c], has_min);
        }
    }
#pragma GCC unroll 8
    for (int c = 0; c < 2 * NP; c++) out[c] = acc[c];
}

/* nc columns: pairs in groups of 4, 2, 1 pairs on AVX-512, an odd last column on the AVX2 kernel (the same bits). */
#define DOT_AVX512(name, T, NPFN, ONE, VNNI)                                                                 \
    TERN_AVX512 static void name(int64_t n, const void *w, const void *xq, size_t xs, int nc, float *o) {     \
        const uint8_t *x = xq;                                                                               \
        int c = 0;                                                                                           \
        for (; c + 8 <= nc; c += 8) NPFN(T, n, w, x + (size_t)c * xs, xs, 4, VNNI, o + c);                   \
        if (c + 4 <= nc) { NPFN(T, n, w, x + (size_t)c * xs, xs, 2, VNNI, o + c); c += 4; }                  \
        if (c + 2 <= nc) { NPFN(T, n, w, x + (size_t)c * xs, xs, 1, VNNI, o + c); c += 2; }                  \
        if (c < nc) ONE(n, w, x + (size_t)c * xs, 0, 1, o + c);                                              \
    }
#define DOT32_NP(T, n, w, x, xs, NP, V, o) dot32_avx512_np(T, (n) / QK32, w, x, xs, NP, V, o)
#define DOTK_NP(T, n, w, x, xs, NP, V, o) dotk_avx512_np(T, n, w, x, xs, NP, V, o)
/* each type's kernel without and with VNNI */
#define DOT_AVX512_2(name, T, NPFN, ONE) DOT_AVX512(name, T, NPFN, ONE, 0) DOT_AVX512(name##_vnni, T, NPFN, ONE##_vnni, 1)
DOT_AVX512_2(dot_q4_0_avx512, TERN_TYPE_Q4_0, DOT32_NP, dot_q4_0_avx2)
DOT_AVX512_2(dot_q4_1_avx512, TERN_TYPE_Q4_1, DOT32_NP, dot_q4_1_avx2)
DOT_AVX512_2(dot_q5_0_avx512, TERN_TYPE_Q5_0, DOT32_NP, dot_q5_0_avx2)
DOT_AVX512_2(dot_q5_1_avx512, TERN_TYPE_Q5_1, DOT32_NP, dot_q5_1_avx2)
DOT_AVX512_2(dot_q8_0_avx512, TERN_TYPE_Q8_0, DOT32_NP, dot_q8_0_avx2)
DOT_AVX512_2(dot_iq4_nl_avx512, TERN_TYPE_IQ4_NL, DOT32_NP, dot_iq4_nl_avx2)
DOT_AVX512_2(dot_q2_K_avx512, TERN_TYPE_Q2_K, DOTK_NP, dot_q2_K_avx2)
DOT_AVX512_2(dot_q3_K_avx512, TERN_TYPE_Q3_K, DOTK_NP, dot_q3_K_avx2)
DOT_AVX512_2(dot_q4_K_avx512, TERN_TYPE_Q4_K, DOTK_NP, dot_q4_K_avx2)
DOT_AVX512_2(dot_q5_K_avx512, TERN_TYPE_Q5_K, DOTK_NP, dot_q5_K_avx2)
DOT_AVX512_2(dot_q6_K_avx512, TERN_TYPE_Q6_K, DOTK_NP, dot_q6_K_avx2)

/* The multi-column kernels on AVX-512 (the types above; the float types keep AVX2's), from AVX512_MIN_COLS columns: at
 * 2 they lost 2-5% S_TG at B = 2 on the 32-block types (ledger 2026-12-04 "the CPU's multi-column dots on AVX-512"). */
#define AVX512_MIN_COLS 4
#define K_DOT_AVX512(S)                                                                                                  \
    {                                                                                                                    \
        [TERN_TYPE_Q4_0] = dot_q4_0_avx512##S, [TERN_TYPE_Q4_1] = dot_q4_1_avx512##S, [TERN_TYPE_Q5_0] = dot_q5_0_avx512##S, \
        [TERN_TYPE_Q5_1] = dot_q5_1_avx512##S, [TERN_TYPE_Q8_0] = dot_q8_0_avx512##S,                                    \
        [TERN_TYPE_IQ4_NL] = dot_iq4_nl_avx512##S, [TERN_TYPE_Q2_K] = dot_q2_K_avx512##S,                                \
        [TERN_TYPE_Q3_K] = dot_q3_K_avx512##S, [TERN_TYPE_Q4_K] = dot_q4_K_avx512##S,                                    \
        [TERN_TYPE_Q5_K] = dot_q5_K_avx512##S, [TERN_TYPE_Q6_K] = dot_q6_K_avx512##S,                                    \
    }
static const dot_fn k_dot_avx512[TERN_TYPE_COUNT] = K_DOT_AVX512();
static const dot_fn k_dot_avx512vnni[TERN_TYPE_COUNT] = K_DOT_AVX512(_vnni);

/* The AVX2 kernels' tables, S = "", _vnni or _vex (the float types have one kernel for all), R = "" (multi-column) or 1 */
#define K_DOT_AVX2(S, R)                                                                                                 \
    {                                                                                                                    \
        [TERN_TYPE_F32] = dot_f32_avx2##R, [TERN_TYPE_F16] = dot_f16_avx2##R, [TERN_TYPE_BF16] = dot_bf16_avx2##R,       \
        [TERN_TYPE_Q4_0] = dot_q4_0_avx2##S##R, [TERN_TYPE_Q4_1] = dot_q4_1_avx2##S##R,                                  \
        [TERN_TYPE_Q5_0] = dot_q5_0_avx2##S##R, [TERN_TYPE_Q5_1] = dot_q5_1_avx2##S##R,                                  \
        [TERN_TYPE_Q8_0] = dot_q8_0_avx2##S##R, [TERN_TYPE_IQ4_NL] = dot_iq4_nl_avx2##S##R,                              \
        [TERN_TYPE_Q2_K] = dot_q2_K_avx2##S##R, [TERN_TYPE_Q3_K] = dot_q3_K_avx2##S##R,                                  \
        [TERN_TYPE_Q4_K] = dot_q4_K_avx2##S##R, [TERN_TYPE_Q5_K] = dot_q5_K_avx2##S##R,                                  \
        [TERN_TYPE_Q6_K] = dot_q6_K_avx2##S##R,                                                                          \
    }
static const dot_fn k_dot_avx2[TERN_TYPE_COUNT] = K_DOT_AVX2(, );
static const dot_fn k_dot_avx2vnni[TERN_TYPE_COUNT] = K_DOT_AVX2(_vnni, );
static const dot1_fn k_dot1_avx2[TERN_TYPE_COUNT] = K_DOT_AVX2(, 1);
static const dot1_fn k_dot1_avx2vnni[TERN_TYPE_COUNT] = K_DOT_AVX2(_vnni, 1);
static const dot_fn k_dot_avx2vex[TERN_TYPE_COUNT] = K_DOT_AVX2(_vex, );
static const dot1_fn k_dot1_avx2vex[TERN_TYPE_COUNT] = K_DOT_AVX2(_vex, 1);
/* Multi-row kernels where interleaving rows pays (the 32-block types); others loop over rows. */
#define K_DOTR_AVX2(S)                                                                                                   \
    {                                                                                                                    \
        [TERN_TYPE_Q4_0] = dot_q4_0_avx2##S##r, [TERN_TYPE_Q4_1] = dot_q4_1_avx2##S##r,                                  \
        [TERN_TYPE_Q5_0] = dot_q5_0_avx2##S##r, [TERN_TYPE_Q5_1] = dot_q5_1_avx2##S##r,                                  \
        [TERN_TYPE_Q8_0] = dot_q8_0_avx2##S##r, [TERN_TYPE_IQ4_NL] = dot_iq4_nl_avx2##S##r,                              \
    }
static const dotr_fn k_dotr_avx2[TERN_TYPE_COUNT] = K_DOTR_AVX2();
static const dotr_fn k_dotr_avx2vnni[TERN_TYPE_COUNT] = K_DOTR_AVX2(_vnni);
static const dotr_fn k_dotr_avx2vex[TERN_TYPE_COUNT] = K_DOTR_AVX2(_vex);
#endif /* TERN_X86 */

/* ---- public dot entry points ------------------------------------------------------------------ */

/* 1 if t has a dot kernel and n is a whole number of its blocks (block sizes are 1, 32, 256);
 * otherwise 0 with the error set. */
static inline int dot_args_ok(enum tern_type t, int64_t n) {
    if ((unsigned)t < TERN_TYPE_COUNT && k_traits[t].name && k_traits[t].vdot != TERN_TYPE_COUNT && n >= 0 &&
        (n & (k_traits[t].blck - 1)) == 0)
        return 1;
    if (tern_type_supported((int)t) && k_traits[t].vdot != TERN_TYPE_COUNT)
        tern_set_error("dot: n=%lld is not a multiple of %s's block size %lld", (long long)n, tern_type_name((int)t),
                       (long long)k_traits[t].blck);
    else
        tern_set_error("no dot product for weight type %s", tern_type_name((int)t));
    return 0;
}

float tern_vec_dot(enum tern_type t, int64_t n, const void *w, const void *xq) {
    if (!dot_args_ok(t, n)) return NAN;
#ifdef TERN_X86
    const int sp = simd_path();
    if (sp >= SIMD_AVX2)
        return (sp == SIMD_AVX512_VNNI ? k_dot1_avx2vnni : sp == SIMD_AVX2_VNNI ? k_dot1_avx2vex : k_dot1_avx2)[t](n, w, xq);
#endif
    float r;
    k_dot_scalar[t](n, w, xq, 0, 1, &r);
    return r;
}

void tern_vec_dot_multi(enum tern_type t, int64_t n, const void *w, const void *xq, size_t xq_stride, int ncols,
                        float *out) {
    if (!dot_args_ok(t, n)) {
        for (int c = 0; c < ncols; c++) out[c] = NAN;
        return;
    }
    if (ncols <= 0) return;
#ifdef TERN_X86
    const int sp = simd_path();
    const dot_fn f512 = sp >= SIMD_AVX512 ? (sp == SIMD_AVX512_VNNI ? k_dot_avx512vnni : k_dot_avx512)[t] : NULL;
    if (f512 && ncols >= AVX512_MIN_COLS) {
        f512(n, w, xq, xq_stride, ncols, out);
        return;
    }
    if (sp >= SIMD_AVX2) {
        (sp == SIMD_AVX512_VNNI ? k_dot_avx2vnni : sp == SIMD_AVX2_VNNI ? k_dot_avx2vex : k_dot_avx2)[t](n, w, xq, xq_stride, ncols, out);
        return;
    }
#endif
    k_dot_scalar[t](n, w, xq, xq_stride, ncols, out);
}

void tern_vec_dot_rows(enum tern_type t, int64_t n, const void *w, size_t w_stride, const void *xq, int nrows,
                       float *out) {
    if (!dot_args_ok(t, n)) {
        for (int r = 0; r < nrows; r++) out[r] = NAN;
        return;
    }
    const uint8_t *wr = w;
#ifdef TERN_X86
    const int sp = simd_path();
    if (sp >= SIMD_AVX2) {
        const dotr_fn fr = (sp == SIMD_AVX512_VNNI ? k_dotr_avx2vnni : sp == SIMD_AVX2_VNNI ? k_dotr_avx2vex : k_dotr_avx2)[t];
        const dot1_fn f1 = (sp == SIMD_AVX512_VNNI ? k_dot1_avx2vnni : sp == SIMD_AVX2_VNNI ? k_dot1_avx2vex : k_dot1_avx2)[t];
        if (fr) {
            if (nrows > 0) fr(n, w, w_stride, xq, nrows, out);
        } else {
            for (int r = 0; r < nrows; r++) out[r] = f1(n, wr + (size_t)r * w_stride, xq);
        }
        return;
    }
#endif
    for (int r = 0; r < nrows; r++) k_dot_scalar[t](n, wr + (size_t)r * w_stride, xq, 0, 1, &out[r]);
}
