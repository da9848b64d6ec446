/* quantize.c: the weight quantizers of quantize.h.
 *
 * A port of llama.cpp's reference quantizers (ggml/src/ggml-quants.c, llama-cpp-python 0.3.36's vendored copy; MIT,
 * Copyright (c) 2023-2026 The ggml authors), kept operation for operation: the search loops, the float types of
 * every accumulator, nearest_int's magic-number rounding and the (int8_t) truncations are what make the bytes equal
 * to llama-quantize's (tests/t_quantize.sh). Where ggml's code relies on a conversion C leaves undefined (a float
 * past the int8 range cast to int8_t), the x86-64 behaviour it gets (cvttss2si, then the low byte) is written out.
 *
 * Block layouts (bytes; ggml-common.h): sizes pinned by static_assert below, the same as quant.c reads. */
#include "quantize.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "util.h"

#define QK_K 256
#define GROUP_MAX_EPS 1e-15f

typedef struct { uint16_t d; uint8_t qs[16]; } q_block_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[16]; } q_block_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } q_block_q5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } q_block_q5_1;
typedef struct { uint16_t d; int8_t qs[32]; } q_block_q8_0;
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d, dmin; } q_block_q2_K;
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; } q_block_q3_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; } q_block_q4_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } q_block_q5_K;
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } q_block_q6_K;
typedef struct { uint16_t d; uint8_t qs[16]; } q_block_iq4_nl;
_Static_assert(sizeof(q_block_q4_0) == 18, "q4_0 block");
_Static_assert(sizeof(q_block_q4_1) == 20, "q4_1 block");
_Static_assert(sizeof(q_block_q5_0) == 22, "q5_0 block");
_Static_assert(sizeof(q_block_q5_1) == 24, "q5_1 block");
_Static_assert(sizeof(q_block_q8_0) == 34, "q8_0 block");
_Static_assert(sizeof(q_block_q2_K) == 84, "q2_K block");
_Static_assert(sizeof(q_block_q3_K) == 110, "q3_K block");
_Static_assert(sizeof(q_block_q4_K) == 144, "q4_K block");
_Static_assert(sizeof(q_block_q5_K) == 176, "q5_K block");
_Static_assert(sizeof(q_block_q6_K) == 210, "q6_K block");
_Static_assert(sizeof(q_block_iq4_nl) == 18, "iq4_nl block");

static const int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

#define MAXI(a, b) ((a) > (b) ? (a) : (b))
#define MINI(a, b) ((a) < (b) ? (a) : (b))
static inline uint16_t f2h(float f) { return tern_fp32_to_fp16(f); }
static inline float h2f(uint16_t h) { return tern_fp16_to_fp32(h); }
/* (int8_t)(float) as x86-64 compiles it: truncate to int32, keep the low byte */
static inline int8_t f_to_i8(float f) { return (int8_t)(int32_t)f; }
static inline uint8_t f_to_u8(float f) { return (uint8_t)(int32_t)f; }

/* ggml's nearest_int: round half to even through the float magic number 1.5 * 2^23 (|v| <= 2^22). */
static inline int nearest_int(float fval) {
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

/* ---- 32-element legacy blocks --------------------------------------------------------------------------- */

static void q4_0_row(const float *x, q_block_q4_0 *y, int64_t k) {
    const int qk = 32, nb = (int)(k / qk);
    for (int i = 0; i < nb; i++) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < qk; j++) {
            const float v = x[i * qk + j];
            if (amax < fabsf(v)) { amax = fabsf(v); max = v; }
        }
        const float d = max / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = x[i * qk + j] * id, x1 = x[i * qk + qk / 2 + j] * id;
            const uint8_t xi0 = (uint8_t)MINI(15, f_to_i8(x0 + 8.5f));
            const uint8_t xi1 = (uint8_t)MINI(15, f_to_i8(x1 + 8.5f));
            y[i].qs[j] = (uint8_t)(xi0 | (xi1 << 4));
        }
    }
}

static void q4_1_row(const float *x, q_block_q4_1 *y, int64_t k) {
    const int qk = 32, nb = (int)(k / qk);
    for (int i = 0; i < nb; i++) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < qk; j++) {
            const float v = x[i * qk + j];
            if (v < min) min = v;
            if (v > max) max = v;
        }
        const float d = (max - min) / ((1 << 4) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        y[i].m = f2h(min);
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = (x[i * qk + j] - min) * id, x1 = (x[i * qk + qk / 2 + j] - min) * id;
            const uint8_t xi0 = (uint8_t)MINI(15, f_to_i8(x0 + 0.5f));
            const uint8_t xi1 = (uint8_t)MINI(15, f_to_i8(x1 + 0.5f));
            y[i].qs[j] = (uint8_t)(xi0 | (xi1 << 4));
        }
    }
}

static void q5_0_row(const float *x, q_block_q5_0 *y, int64_t k) {
    const int qk = 32, nb = (int)(k / qk);
    for (int i = 0; i < nb; i++) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < qk; j++) {
            const float v = x[i * qk + j];
            if (amax < fabsf(v)) { amax = fabsf(v); max = v; }
        }
        const float d = max / -16;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        uint32_t qh = 0;
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = x[i * qk + j] * id, x1 = x[i * qk + qk / 2 + j] * id;
            const uint8_t xi0 = (uint8_t)MINI(31, f_to_i8(x0 + 16.5f));
            const uint8_t xi1 = (uint8_t)MINI(31, f_to_i8(x1 + 16.5f));
            y[i].qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
            qh |= ((xi1 & 0x10u) >> 4) << (j + qk / 2);
        }
        memcpy(y[i].qh, &qh, sizeof qh);
    }
}

static void q5_1_row(const float *x, q_block_q5_1 *y, int64_t k) {
    const int qk = 32, nb = (int)(k / qk);
    for (int i = 0; i < nb; i++) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < qk; j++) {
            const float v = x[i * qk + j];
            if (v < min) min = v;
            if (v > max) max = v;
        }
        const float d = (max - min) / ((1 << 5) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        y[i].m = f2h(min);
        uint32_t qh = 0;
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = (x[i * qk + j] - min) * id, x1 = (x[i * qk + qk / 2 + j] - min) * id;
            const uint8_t xi0 = f_to_u8(x0 + 0.5f), xi1 = f_to_u8(x1 + 0.5f);
            y[i].qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
            qh |= ((xi1 & 0x10u) >> 4) << (j + qk / 2);
        }
        memcpy(y[i].qh, &qh, sizeof qh);
    }
}

static void q8_0_row(const float *x, q_block_q8_0 *y, int64_t k) {
    const int nb = (int)(k / 32);
    for (int i = 0; i < nb; i++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = amax > fabsf(x[i * 32 + j]) ? amax : fabsf(x[i * 32 + j]); /* MAX */
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        for (int j = 0; j < 32; ++j) y[i].qs[j] = (int8_t)(int32_t)roundf(x[i * 32 + j] * id);
    }
}

/* ---- K-quant helpers ------------------------------------------------------------------------------------- */

static float make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            L[i] = (int8_t)(nmax + MAXI(-nmax, MINI(nmax - 1, l)));
        }
        return 1 / iscale;
    }
    int return_early = 0;
    if (rmse_type < 0) { rmse_type = -rmse_type; return_early = 1; }
#define QX_W(i) (rmse_type == 1 ? x[i] * x[i] : rmse_type == 2 ? 1 : rmse_type == 3 ? fabsf(x[i]) : sqrtf(fabsf(x[i])))
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = MAXI(-nmax, MINI(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        float w = QX_W(i);
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = MAXI(-nmax, MINI(nmax - 1, l));
            float w = QX_W(i);
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                int l = nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + MAXI(-nmax, MINI(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
#undef QX_W
    return scale;
}

static float make_q3_quants(int n, int nmax, const float *x, int8_t *L) { /* do_rmse = true */
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = MAXI(-nmax, MINI(nmax - 1, l));
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                int new_l = nearest_int(x[i] * sl2 / slx);
                new_l = MAXI(-nmax, MINI(nmax - 1, new_l));
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min,
                              uint8_t *Laux, float rmin, float rdelta, int nstep, int use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)MAXI(0, MINI(nmax, l));
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = MAXI(0, MINI(nmax, l));
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

static inline void get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

/* ---- K-quants -------------------------------------------------------------------------------------------- */

static void q2_K_row(const float *x, q_block_q2_K *y, int64_t k) {
    const int nb = (int)(k / QK_K);
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    const float q4scale = 15.f;
    for (int i = 0; i < nb; i++) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = fabsf(x[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, 1);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) y[i].scales[j] = (uint8_t)nearest_int(iscale * scales[j]);
            y[i].d = f2h(max_scale / q4scale);
        } else {
            for (int j = 0; j < QK_K / 16; ++j) y[i].scales[j] = 0;
            y[i].d = f2h(0.f);
        }
        if (max_min > 0) {
            float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; ++j) y[i].scales[j] |= (uint8_t)(nearest_int(iscale * mins[j]) << 4);
            y[i].dmin = f2h(max_min / q4scale);
        } else {
            y[i].dmin = f2h(0.f);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = h2f(y[i].d) * (y[i].scales[j] & 0xF);
            if (!d) continue;
            const float dm = h2f(y[i].dmin) * (y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ++ii) {
                int l = nearest_int((x[16 * j + ii] + dm) / d);
                L[16 * j + ii] = (uint8_t)MAXI(0, MINI(3, l));
            }
        }
        for (int j = 0; j < QK_K; j += 128)
            for (int l = 0; l < 32; ++l)
                y[i].qs[j / 4 + l] =
                    (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        x += QK_K;
    }
}

static void q3_K_row(const float *x, q_block_q3_K *y, int64_t k) {
    const int nb = (int)(k / QK_K);
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int i = 0; i < nb; i++) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            float scale = fabsf(scales[j]);
            if (scale > amax) { amax = scale; max_scale = scales[j]; }
        }
        memset(y[i].scales, 0, 12);
        if (max_scale) {
            float iscale = -32.f / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                int8_t l = (int8_t)nearest_int(iscale * scales[j]);
                l = (int8_t)(MAXI(-32, MINI(31, l)) + 32);
                if (j < 8) y[i].scales[j] = (uint8_t)(l & 0xF);
                else y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                l >>= 4;
                y[i].scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
            }
            y[i].d = f2h(1 / iscale);
        } else {
            y[i].d = f2h(0.f);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            int8_t sc = (int8_t)(j < 8 ? y[i].scales[j] & 0xF : y[i].scales[j - 8] >> 4);
            sc = (int8_t)((sc | (((y[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
            float d = h2f(y[i].d) * sc;
            if (!d) continue;
            for (int ii = 0; ii < 16; ++ii) {
                int l = nearest_int(x[16 * j + ii] / d);
                l = MAXI(-4, MINI(3, l));
                L[16 * j + ii] = (int8_t)(l + 4);
            }
        }
        memset(y[i].hmask, 0, QK_K / 8);
        int m = 0;
        uint8_t hm = 1;
        for (int j = 0; j < QK_K; ++j) {
            if (L[j] > 3) {
                y[i].hmask[m] |= hm;
                L[j] -= 4;
            }
            if (++m == QK_K / 8) { m = 0; hm <<= 1; }
        }
        for (int j = 0; j < QK_K; j += 128)
            for (int l = 0; l < 32; ++l)
                y[i].qs[j / 4 + l] =
                    (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        x += QK_K;
    }
}

/* Q4_K and Q5_K share everything but the level count (nmax 15 / 31), the search (rmin -1 / -0.5, 20 / 15 steps)
 * and the packing of the quants. */
static void q45_K_scales(const float *x, int nmax, float rmin, int nstep, uint8_t *L, uint16_t *d_out,
                         uint16_t *dmin_out, uint8_t scales_out[12]) {
    uint8_t Laux[32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, 0);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
        ls = MINI(63, ls);
        lm = MINI(63, lm);
        if (j < 4) {
            scales_out[j] = ls;
            scales_out[j + 4] = lm;
        } else {
            scales_out[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            scales_out[j - 4] |= (uint8_t)((ls >> 4) << 6);
            scales_out[j - 0] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d_out = f2h(max_scale / 63.f);
    *dmin_out = f2h(max_min / 63.f);
    uint8_t sc, m;
    for (int j = 0; j < QK_K / 32; ++j) {
        get_scale_min_k4(j, scales_out, &sc, &m);
        const float d = h2f(*d_out) * sc;
        if (!d) continue;
        const float dm = h2f(*dmin_out) * m;
        for (int ii = 0; ii < 32; ++ii) {
            int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)MAXI(0, MINI(nmax, l));
        }
    }
}

static void q4_K_row(const float *x, q_block_q4_K *y, int64_t k) {
    const int nb = (int)(k / QK_K);
    uint8_t L[QK_K];
    for (int i = 0; i < nb; i++) {
        q45_K_scales(x, 15, -1.f, 20, L, &y[i].d, &y[i].dmin, y[i].scales);
        uint8_t *q = y[i].qs;
        for (int j = 0; j < QK_K; j += 64) {
            for (int l = 0; l < 32; ++l) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
            q += 32;
        }
        x += QK_K;
    }
}

static void q5_K_row(const float *x, q_block_q5_K *y, int64_t k) {
    const int nb = (int)(k / QK_K);
    uint8_t L[QK_K];
    for (int i = 0; i < nb; i++) {
        q45_K_scales(x, 31, -0.5f, 15, L, &y[i].d, &y[i].dmin, y[i].scales);
        uint8_t *qh = y[i].qh, *ql = y[i].qs;
        memset(qh, 0, QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int n = 0; n < QK_K; n += 64) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[n + j];
                if (l1 > 15) { l1 -= 16; qh[j] |= m1; }
                int l2 = L[n + j + 32];
                if (l2 > 15) { l2 -= 16; qh[j] |= m2; }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            m1 <<= 2;
            m2 <<= 2;
            ql += 32;
        }
        x += QK_K;
    }
}

static void q6_K_row(const float *x, q_block_q6_K *y, int64_t k) {
    const int nb = (int)(k / QK_K);
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int i = 0; i < nb; i++) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1);
            scales[ib] = scale;
            const float abs_scale = fabsf(scale);
            if (abs_scale > max_abs_scale) { max_abs_scale = abs_scale; max_scale = scale; }
        }
        if (max_abs_scale < GROUP_MAX_EPS) {
            memset(&y[i], 0, sizeof(q_block_q6_K));
            y[i].d = f2h(0.f);
            x += QK_K;
            continue;
        }
        float iscale = -128.f / max_scale;
        y[i].d = f2h(1 / iscale);
        for (int ib = 0; ib < QK_K / 16; ++ib) y[i].scales[ib] = (int8_t)MINI(127, nearest_int(iscale * scales[ib]));
        for (int j = 0; j < QK_K / 16; ++j) {
            float d = h2f(y[i].d) * y[i].scales[j];
            if (!d) continue;
            for (int ii = 0; ii < 16; ++ii) {
                int l = nearest_int(x[16 * j + ii] / d);
                l = MAXI(-32, MINI(31, l));
                L[16 * j + ii] = (int8_t)(l + 32);
            }
        }
        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; ++l) {
                const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF;
                const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l + 0] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                  ((L[j + l + 96] >> 4) << 6));
            }
            ql += 64;
            qh += 32;
        }
        x += QK_K;
    }
}

/* ---- IQ4_NL: quantize_iq4_nl (no importance matrix), quantize_row_iq4_nl_impl at super_block_size =
 * block_size = 32, ntry 7 ---------------------------------------------------------------------------------- */

static inline int best_index_int8(int n, const int8_t *val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int ml = 0, mu = n - 1;
    while (mu - ml > 1) {
        int mav = (ml + mu) / 2;
        if (x < val[mav]) mu = mav;
        else ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

static void iq4_nl_row(const float *x, q_block_iq4_nl *y, int64_t k) {
    const int nb = (int)(k / 32), ntry = 7;
    const int8_t *values = kvalues_iq4nl;
    uint8_t L[32] = {0}; /* ggml's persists across blocks; every path below rewrites it before use */
    float weight[32];
    for (int ib = 0; ib < nb; ib++, x += 32) {
        memset(y[ib].qs, 0, 16);
        y[ib].d = f2h(0.f);
        for (int j = 0; j < 32; ++j) weight[j] = x[j] * x[j];
        float amax = 0, max = 0;
        for (int j = 0; j < 32; ++j) {
            float ax = fabsf(x[j]);
            if (ax > amax) { amax = ax; max = x[j]; }
        }
        float scale = 0;
        if (!(amax < GROUP_MAX_EPS)) {
            float d = ntry > 0 ? -max / values[0] : max / values[0];
            float id = 1 / d;
            float sumqx = 0, sumq2 = 0;
            for (int j = 0; j < 32; ++j) {
                float al = id * x[j];
                int l = best_index_int8(16, values, al);
                L[j] = (uint8_t)l;
                float q = values[l], w = weight[j];
                sumqx += w * q * x[j];
                sumq2 += w * q * q;
            }
            d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
            float best = d * sumqx;
            for (int itry = -ntry; itry <= ntry; ++itry) {
                id = (itry + values[0]) / max;
                sumqx = sumq2 = 0;
                for (int j = 0; j < 32; ++j) {
                    float al = id * x[j];
                    int l = best_index_int8(16, values, al);
                    float q = values[l], w = weight[j];
                    sumqx += w * q * x[j];
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    d = sumqx / sumq2;
                    best = d * sumqx;
                }
            }
            scale = d;
        }
        y[ib].d = f2h(scale);
        float id = scale ? 1 / scale : 0;
        for (int j = 0; j < 32; ++j) L[j] = (uint8_t)best_index_int8(16, values, id * x[j]);
        for (int j = 0; j < 16; ++j) y[ib].qs[j] = (uint8_t)(L[j] | (L[16 + j] << 4));
    }
}

/* ---- entry ----------------------------------------------------------------------------------------------- */

int tern_quantize_supported(enum tern_type t) {
    switch (t) {
    case TERN_TYPE_F32: case TERN_TYPE_F16: case TERN_TYPE_BF16: case TERN_TYPE_Q4_0: case TERN_TYPE_Q4_1:
    case TERN_TYPE_Q5_0: case TERN_TYPE_Q5_1: case TERN_TYPE_Q8_0: case TERN_TYPE_Q2_K: case TERN_TYPE_Q3_K:
    case TERN_TYPE_Q4_K: case TERN_TYPE_Q5_K: case TERN_TYPE_Q6_K: case TERN_TYPE_IQ4_NL:
        return 1;
    default:
        return 0;
    }
}

size_t tern_quantize_row(enum tern_type t, const float *x, void *y, int64_t n) {
    if (!tern_quantize_supported(t) || n <= 0 || n % tern_type_block_size(t) != 0) return 0;
    switch (t) {
    case TERN_TYPE_F32: memcpy(y, x, sizeof(float) * (size_t)n); break;
    case TERN_TYPE_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)y)[i] = tern_fp32_to_fp16(x[i]); break;
    case TERN_TYPE_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)y)[i] = tern_fp32_to_bf16(x[i]); break;
    case TERN_TYPE_Q4_0: q4_0_row(x, y, n); break;
    case TERN_TYPE_Q4_1: q4_1_row(x, y, n); break;
    case TERN_TYPE_Q5_0: q5_0_row(x, y, n); break;
    case TERN_TYPE_Q5_1: q5_1_row(x, y, n); break;
    case TERN_TYPE_Q8_0: q8_0_row(x, y, n); break;
    case TERN_TYPE_Q2_K: q2_K_row(x, y, n); break;
    case TERN_TYPE_Q3_K: q3_K_row(x, y, n); break;
    case TERN_TYPE_Q4_K: q4_K_row(x, y, n); break;
    case TERN_TYPE_Q5_K: q5_K_row(x, y, n); break;
    case TERN_TYPE_Q6_K: q6_K_row(x, y, n); break;
    case TERN_TYPE_IQ4_NL: iq4_nl_row(x, y, n); break;
    default: return 0;
    }
    return tern_type_row_size(t, n);
}
