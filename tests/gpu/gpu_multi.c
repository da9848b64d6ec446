/* gpu_multi: tcu_gemv_multi (m = 2..16 columns, one weight stream) must give, for every column, exactly
 * the bits of tcu_gemv on that column (memcmp): the exact verify path of speculative decoding and of
 * chunks of <= 16 tokens rests on it. Weights: random blocks with finite f16 scales for each weight type
 * with a GPU kernel; shapes with rows not a multiple of anything (n_out 1000, 7) and n_in 4096 / 512.
 * The dp4a path (gemv_dp4a.cu, Q4_0/Q4_1/Q8_0/Q4_K/Q6_K): tcu_quantize_x16 gives the bytes of the same rule in C here
 * (d = amax/32512, q = rint(x*32512/amax), hi/lo planes, Σ q); tcu_gemv_dp4a per column is within
 * 1e-5 * sum|w*x| of the double dot of the dequantized weights with q*d; its m-column call equals the
 * 1-column calls bit for bit. Shapes include an odd block count (the last block's words start 2 bytes
 * past a word) and an all-zero block. Also times Q4_0 4096x14336 at m = 1, 2, 4, 8, 16, f32 and dp4a
 * paths, weights rotated over 4 copies
 * (118 MB, beyond the 60 MB L2): the verify cost curve and the GEMV's DRAM rate (no assertions).
 * Repacked Q4_0/Q8_0/Q4_K (tcu.h TCU_TYPE_Q4_0R/Q8_0R/Q4_KR): tcu_repack's bytes equal the layout built here in C; the
 * repacked weight gives the GGUF weight's bits through tcu_dequant_f16, tcu_get_rows and tcu_gemv_dp4a
 * (1 column and m columns), including rows whose last group is partial.
 * Every dp4a check runs each kernel family (tcu_gemv_dp4a_fam: 0 cta, 1 warp, 3 tma; tma falls back to the warp kernel,
 * the same bits, where the device has no TMA) and the chooser's (-1): each family must meet the bound and give m
 * columns == 1 column; the families sum in other orders, so their outputs are not compared with each other.
 * Run by bench/gpu_check.sh on a GPU box. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "cuda/tcu.h"
#include "quant.h"
#include "util.h"

#define CU(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) { fprintf(stderr, "CUDA %s at %s:%d\n", cudaGetErrorName(e_), __FILE__, __LINE__); exit(1); } \
    } while (0)

static uint64_t rs;
static uint32_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (uint32_t)(rs >> 16); }
static float frnd(float a) { return ((float)(rnd() & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f) * a; }

/* Byte offsets of the f16 scale fields inside a block (ggml-common.h); -1 ends the list. */
static void scale_fields(int t, int off[3]) {
    off[0] = off[1] = off[2] = -1;
    switch (t) {
    case TERN_TYPE_Q4_0: case TERN_TYPE_Q5_0: case TERN_TYPE_Q8_0: off[0] = 0; break;
    case TERN_TYPE_Q4_1: case TERN_TYPE_Q5_1: case TERN_TYPE_Q4_K: case TERN_TYPE_Q5_K: off[0] = 0; off[1] = 2; break;
    case TERN_TYPE_Q6_K: off[0] = 208; break;
    default: break;
    }
}

static void fill_weights(int t, uint8_t *w, int64_t n_in, int64_t n_out, size_t stride) {
    const size_t rb = tern_type_row_size((enum tern_type)t, n_in), bs = tern_type_type_size((enum tern_type)t);
    memset(w, 0, stride * (size_t)n_out);
    for (int64_t r = 0; r < n_out; r++) {
        uint8_t *row = w + (size_t)r * stride;
        if (t == TERN_TYPE_F32) { for (int64_t i = 0; i < n_in; i++) ((float *)row)[i] = frnd(1.0f); continue; }
        if (t == TERN_TYPE_F16) { for (int64_t i = 0; i < n_in; i++) ((uint16_t *)row)[i] = tern_fp32_to_fp16(frnd(1.0f)); continue; }
        if (t == TERN_TYPE_BF16) { for (int64_t i = 0; i < n_in; i++) ((uint16_t *)row)[i] = tern_fp32_to_bf16(frnd(1.0f)); continue; }
        for (size_t b = 0; b < rb; b++) row[b] = (uint8_t)rnd();
        int off[3];
        scale_fields(t, off);
        for (size_t blk = 0; blk < rb / bs; blk++)
            for (int k = 0; k < 3 && off[k] >= 0; k++) {
                const uint16_t h = tern_fp32_to_fp16(frnd(0.05f));
                memcpy(row + blk * bs + (size_t)off[k], &h, 2);
            }
    }
}

/* The dp4a path's activation rule in C (gemv_dp4a.cu): per 32-block d = amax/32512, q = rint(x*32512/amax). */
static void x16_ref(const float *x, int64_t n, int8_t *hi, int8_t *lo, float *d, int *sum) {
    for (int64_t b = 0; b < n / 32; b++) {
        float a = 0.0f;
        for (int i = 0; i < 32; i++) a = fmaxf(a, fabsf(x[b * 32 + i]));
        d[b] = a / 32512.0f;
        const float id = a != 0.0f ? fminf(32512.0f / a, 3.0e38f) : 0.0f; /* as x16.cuh */
        sum[b] = 0;
        for (int i = 0; i < 32; i++) {
            const int q = (int)rintf(x[b * 32 + i] * id), l = (int)(int8_t)(q & 0xFF);
            hi[b * 32 + i] = (int8_t)((q - l) / 256);
            lo[b * 32 + i] = (int8_t)l;
            sum[b] += q;
        }
    }
}

/* The dp4a path for one type, shape and family: quantizer bytes, the reference dot, multi == single. */
static void check_q8_fam(int t, int64_t n_in, int64_t n_out, int fam) {
    const size_t stride = (tern_type_row_size((enum tern_type)t, n_in) + 15) & ~(size_t)15;
    const int nb = (int)(n_in / 32);
    uint8_t *hw = malloc(stride * (size_t)n_out);
    fill_weights(t, hw, n_in, n_out, stride);
    float *hx = malloc(sizeof(float) * (size_t)n_in * 16);
    for (int64_t i = 0; i < n_in * 16; i++) hx[i] = frnd(2.0f);
    for (int i = 0; i < 32; i++) hx[3 * n_in + i] = 0.0f; /* an all-zero block: d = 0 */
    void *dw, *dq1, *dqm;
    float *dx, *dy1, *dym;
    const size_t q1 = (tcu_x16_bytes(1, n_in) + 15) & ~(size_t)15, qm = tcu_x16_bytes(16, n_in);
    const size_t pb = ((size_t)n_in + 15) & ~(size_t)15;
    CU(cudaMalloc(&dw, stride * (size_t)n_out));
    CU(cudaMalloc(&dq1, q1 * 16));
    CU(cudaMalloc(&dqm, qm));
    CU(cudaMalloc((void **)&dx, sizeof(float) * (size_t)n_in * 16));
    CU(cudaMalloc((void **)&dy1, sizeof(float) * (size_t)n_out * 16));
    CU(cudaMalloc((void **)&dym, sizeof(float) * (size_t)n_out * 16));
    CU(cudaMemcpy(dw, hw, stride * (size_t)n_out, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dx, hx, sizeof(float) * (size_t)n_in * 16, cudaMemcpyHostToDevice));
    CU(cudaMemset(dy1, 0xFF, sizeof(float) * (size_t)n_out * 16));
    for (int c = 0; c < 16; c++) {
        tcu_quantize_x16(dx + (size_t)c * n_in, 1, n_in, (char *)dq1 + (size_t)c * q1, 0);
        tcu_gemv_dp4a_fam(fam, t, dw, stride, n_in, n_out, (char *)dq1 + (size_t)c * q1, 1, dy1 + (size_t)c * n_out, 0);
    }
    CU(cudaGetLastError());
    uint8_t *hq = malloc(q1 * 16);
    float *y1 = malloc(sizeof(float) * (size_t)n_out * 16), *ym = malloc(sizeof(float) * (size_t)n_out * 16);
    CU(cudaMemcpy(hq, dq1, q1 * 16, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(y1, dy1, sizeof(float) * (size_t)n_out * 16, cudaMemcpyDeviceToHost));
    int8_t *rh = malloc((size_t)n_in), *rl = malloc((size_t)n_in);
    float *rd = malloc(sizeof(float) * (size_t)nb), *xd = malloc(sizeof(float) * (size_t)n_in);
    float *wd = malloc(sizeof(float) * (size_t)n_in);
    int *rsum = malloc(sizeof(int) * (size_t)nb);
    int qbad = 0;
    double worst = 0;
    for (int c = 0; c < 16; c++) {
        x16_ref(hx + (size_t)c * n_in, n_in, rh, rl, rd, rsum);
        const uint8_t *base = hq + (size_t)c * q1;
        const int32_t *gds = (const int32_t *)(base + 2 * pb);
        if (memcmp(base, rh, (size_t)n_in) || memcmp(base + pb, rl, (size_t)n_in)) qbad++;
        for (int b = 0; b < nb; b++) {
            float gd;
            memcpy(&gd, &gds[2 * b], 4);
            if (gd != rd[b] || gds[2 * b + 1] != rsum[b]) qbad++;
            for (int i = 0; i < 32; i++) xd[b * 32 + i] = (float)(256 * rh[b * 32 + i] + rl[b * 32 + i]) * rd[b];
        }
        for (int64_t r = 0; r < n_out; r++) {
            tern_dequantize_row((enum tern_type)t, hw + (size_t)r * stride, wd, n_in);
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < n_in; i++) { ref += (double)wd[i] * xd[i]; mag += fabs((double)wd[i] * xd[i]); }
            const double e = fabs(y1[(size_t)c * n_out + r] - ref) / (1e-5 * mag + 1e-6);
            if (!(e <= worst)) worst = e;
        }
    }
    CHECK(qbad == 0, "dp4a %s n_in %lld: %d activation planes/blocks differ from the rule in C", tern_type_name(t),
          (long long)n_in, qbad);
    CHECK(worst <= 1.0, "dp4a %s %lldx%lld family %d: worst err/tol %.3g against the double dot", tern_type_name(t),
          (long long)n_in, (long long)n_out, fam, worst);
    const int ms[4] = {2, 5, 8, 16};
    for (int mi = 0; mi < 4; mi++) {
        const int m = ms[mi];
        tcu_quantize_x16(dx, m, n_in, dqm, 0);
        CU(cudaMemset(dym, 0xFF, sizeof(float) * (size_t)n_out * 16));
        tcu_gemv_dp4a_fam(fam, t, dw, stride, n_in, n_out, dqm, m, dym, 0);
        CU(cudaGetLastError());
        CU(cudaMemcpy(ym, dym, sizeof(float) * (size_t)n_out * 16, cudaMemcpyDeviceToHost));
        CHECK(memcmp(ym, y1, sizeof(float) * (size_t)n_out * (size_t)m) == 0,
              "dp4a %s %lldx%lld family %d m=%d: multi-column result differs from the single-column kernel",
              tern_type_name(t), (long long)n_in, (long long)n_out, fam, m);
    }
    printf("dp4a %s %lldx%lld family %d: quantizer bytes equal, worst err/tol %.3g, m = 2/5/8/16 bit-identical\n",
           tern_type_name(t), (long long)n_in, (long long)n_out, fam, worst);
    free(hw); free(hx); free(hq); free(y1); free(ym); free(rh); free(rl); free(rd); free(xd); free(wd); free(rsum);
    CU(cudaFree(dw)); CU(cudaFree(dq1)); CU(cudaFree(dqm)); CU(cudaFree(dx)); CU(cudaFree(dy1)); CU(cudaFree(dym));
}

static void check_q8(int t, int64_t n_in, int64_t n_out) {
    static const int fams[4] = {-1, 0, 1, 3};
    for (int f = 0; f < 4; f++) check_q8_fam(t, n_in, n_out, fams[f]);
}

/* tcu.h's repacked layouts in C: Q4_0/Q8_0 8-block groups of a 16-byte scale header and the blocks' quant
 * bytes; Q4_K super-blocks with each 32-element sub-block's nibbles in 16 bytes (byte i: element i low,
 * element i+16 high). */
static void repack_ref(int t, const uint8_t *src, size_t ss, uint8_t *dst, size_t ds, int64_t n_in, int64_t n_rows) {
    memset(dst, 0, ds * (size_t)n_rows);
    if (t == TERN_TYPE_Q4_K) {
        for (int64_t r = 0; r < n_rows; r++)
            for (int64_t sb = 0; sb < n_in / 256; sb++) {
                const uint8_t *s = src + (size_t)r * ss + (size_t)sb * 144;
                uint8_t *d = dst + (size_t)r * ds + (size_t)sb * 144;
                memcpy(d, s, 16);
                for (int e = 0; e < 256; e++) { /* GGUF: element e is nibble (e%64)/32 of byte 16 + 32(e/64) + e%32 */
                    const int q = (s[16 + 32 * (e / 64) + e % 32] >> (4 * ((e % 64) / 32))) & 0xF;
                    const int j = e / 32, i = e % 32;
                    d[16 + 16 * j + i % 16] |= (uint8_t)(q << (i >= 16 ? 4 : 0));
                }
            }
        return;
    }
    const int qb = t == TERN_TYPE_Q4_0 ? 16 : 32, nb = (int)(n_in / 32);
    for (int64_t r = 0; r < n_rows; r++)
        for (int b = 0; b < nb; b++) {
            const uint8_t *blk = src + (size_t)r * ss + (size_t)b * (2 + qb);
            uint8_t *g = dst + (size_t)r * ds + (size_t)(b / 8) * (16 + 8 * qb);
            memcpy(g + 2 * (b % 8), blk, 2);
            memcpy(g + 16 + qb * (b % 8), blk + 2, (size_t)qb);
        }
}

/* The repacked layout of t against the GGUF one: bytes, dequant, get_rows, dp4a (1 and m columns; each family). */
static void check_repack_fam(int t, int64_t n_in, int64_t n_out, int fam) {
    const int rt = tcu_repack_type(t);
    const size_t rb = tern_type_row_size((enum tern_type)t, n_in), stride = (rb + 15) & ~(size_t)15;
    const size_t rrb = tcu_repack_row_bytes(rt, n_in), rstride = (rrb + 15) & ~(size_t)15;
    const int nb = (int)(n_in / 32);
    CHECK(t == TERN_TYPE_Q4_K ? rrb == rb
                              : rrb == (size_t)(nb / 8) * (16 + 8 * (rb / nb - 2)) + (nb % 8 ? 16 + (nb % 8) * (rb / nb - 2) : 0),
          "repack %s n_in %lld: row bytes %zu", tern_type_name(t), (long long)n_in, rrb);
    uint8_t *hw = malloc(stride * (size_t)n_out), *want = malloc(rstride * (size_t)n_out), *got = malloc(rstride * (size_t)n_out);
    fill_weights(t, hw, n_in, n_out, stride);
    repack_ref(t, hw, stride, want, rstride, n_in, n_out);
    void *dw, *dr, *dxq;
    uint16_t *f0, *f1;
    float *dx, *y0, *y1, *g0, *g1;
    int32_t *dids;
    CU(cudaMalloc(&dw, stride * (size_t)n_out));
    CU(cudaMalloc(&dr, rstride * (size_t)n_out));
    CU(cudaMemcpy(dw, hw, stride * (size_t)n_out, cudaMemcpyHostToDevice));
    CU(cudaMemset(dr, 0, rstride * (size_t)n_out));
    tcu_repack(t, dw, stride, dr, rstride, n_in, n_out, 0);
    CU(cudaGetLastError());
    CU(cudaMemcpy(got, dr, rstride * (size_t)n_out, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got, want, rstride * (size_t)n_out) == 0, "repack %s %lldx%lld: bytes differ from the layout in C",
          tern_type_name(t), (long long)n_in, (long long)n_out);
    const size_t ne = (size_t)n_in * (size_t)n_out;
    CU(cudaMalloc((void **)&f0, ne * 2));
    CU(cudaMalloc((void **)&f1, ne * 2));
    tcu_dequant_f16(t, dw, stride, n_in, n_out, f0, 0);
    tcu_dequant_f16(rt, dr, rstride, n_in, n_out, f1, 0);
    uint16_t *h0 = malloc(ne * 2), *h1 = malloc(ne * 2);
    CU(cudaMemcpy(h0, f0, ne * 2, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(h1, f1, ne * 2, cudaMemcpyDeviceToHost));
    CHECK(memcmp(h0, h1, ne * 2) == 0, "repack %s %lldx%lld: tcu_dequant_f16 differs from the GGUF layout's",
          tern_type_name(t), (long long)n_in, (long long)n_out);
    int32_t ids[3] = {0, (int32_t)(n_out - 1), (int32_t)(n_out / 2)};
    CU(cudaMalloc((void **)&dids, sizeof ids));
    CU(cudaMemcpy(dids, ids, sizeof ids, cudaMemcpyHostToDevice));
    CU(cudaMalloc((void **)&g0, sizeof(float) * 3 * (size_t)n_in));
    CU(cudaMalloc((void **)&g1, sizeof(float) * 3 * (size_t)n_in));
    tcu_get_rows(t, dw, stride, n_in, dids, 3, g0, 0);
    tcu_get_rows(rt, dr, rstride, n_in, dids, 3, g1, 0);
    float *hg0 = malloc(sizeof(float) * 3 * (size_t)n_in), *hg1 = malloc(sizeof(float) * 3 * (size_t)n_in);
    CU(cudaMemcpy(hg0, g0, sizeof(float) * 3 * (size_t)n_in, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(hg1, g1, sizeof(float) * 3 * (size_t)n_in, cudaMemcpyDeviceToHost));
    CHECK(memcmp(hg0, hg1, sizeof(float) * 3 * (size_t)n_in) == 0, "repack %s %lldx%lld: tcu_get_rows differs",
          tern_type_name(t), (long long)n_in, (long long)n_out);
    float *hx = malloc(sizeof(float) * (size_t)n_in * 16);
    for (int64_t i = 0; i < n_in * 16; i++) hx[i] = frnd(2.0f);
    const size_t q1 = (tcu_x16_bytes(1, n_in) + 15) & ~(size_t)15;
    CU(cudaMalloc((void **)&dx, sizeof(float) * (size_t)n_in * 16));
    CU(cudaMalloc(&dxq, q1 * 16 + tcu_x16_bytes(16, n_in)));
    CU(cudaMalloc((void **)&y0, sizeof(float) * (size_t)n_out * 16));
    CU(cudaMalloc((void **)&y1, sizeof(float) * (size_t)n_out * 16));
    CU(cudaMemcpy(dx, hx, sizeof(float) * (size_t)n_in * 16, cudaMemcpyHostToDevice));
    for (int c = 0; c < 16; c++) {
        tcu_quantize_x16(dx + (size_t)c * n_in, 1, n_in, (char *)dxq + (size_t)c * q1, 0);
        tcu_gemv_dp4a_fam(fam, t, dw, stride, n_in, n_out, (char *)dxq + (size_t)c * q1, 1, y0 + (size_t)c * n_out, 0);
    }
    float *a = malloc(sizeof(float) * (size_t)n_out * 16), *b = malloc(sizeof(float) * (size_t)n_out * 16);
    CU(cudaMemcpy(a, y0, sizeof(float) * (size_t)n_out * 16, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int c = 0; c < 16; c++) {
        CU(cudaMemset(y1, 0xFF, sizeof(float) * (size_t)n_out));
        tcu_gemv_dp4a_fam(fam, rt, dr, rstride, n_in, n_out, (char *)dxq + (size_t)c * q1, 1, y1, 0);
        CU(cudaMemcpy(b, y1, sizeof(float) * (size_t)n_out, cudaMemcpyDeviceToHost));
        if (memcmp(a + (size_t)c * n_out, b, sizeof(float) * (size_t)n_out)) bad++;
    }
    CHECK(bad == 0, "repack %s %lldx%lld family %d: %d of 16 one-column dp4a results differ from the GGUF layout's",
          tern_type_name(t), (long long)n_in, (long long)n_out, fam, bad);
    void *dqm = (char *)dxq + q1 * 16;
    const int ms[4] = {2, 5, 8, 16};
    for (int mi = 0; mi < 4; mi++) {
        tcu_quantize_x16(dx, ms[mi], n_in, dqm, 0);
        CU(cudaMemset(y1, 0xFF, sizeof(float) * (size_t)n_out * 16));
        tcu_gemv_dp4a_fam(fam, rt, dr, rstride, n_in, n_out, dqm, ms[mi], y1, 0);
        CU(cudaGetLastError());
        CU(cudaMemcpy(b, y1, sizeof(float) * (size_t)n_out * 16, cudaMemcpyDeviceToHost));
        CHECK(memcmp(a, b, sizeof(float) * (size_t)n_out * (size_t)ms[mi]) == 0,
              "repack %s %lldx%lld family %d m=%d: multi-column result differs from the GGUF single-column kernel",
              tern_type_name(t), (long long)n_in, (long long)n_out, fam, ms[mi]);
    }
    printf("repack %s %lldx%lld family %d: bytes as the layout in C; dequant, get_rows, dp4a m = 1/2/5/8/16 equal the "
           "GGUF layout's\n", tern_type_name(t), (long long)n_in, (long long)n_out, fam);
    free(hw); free(want); free(got); free(h0); free(h1); free(hg0); free(hg1); free(hx); free(a); free(b);
    CU(cudaFree(dw)); CU(cudaFree(dr)); CU(cudaFree(f0)); CU(cudaFree(f1)); CU(cudaFree(dids)); CU(cudaFree(g0));
    CU(cudaFree(g1)); CU(cudaFree(dx)); CU(cudaFree(dxq)); CU(cudaFree(y0)); CU(cudaFree(y1));
}

static void check_repack(int t, int64_t n_in, int64_t n_out) {
    static const int fams[4] = {-1, 0, 1, 3};
    for (int f = 0; f < 4; f++) check_repack_fam(t, n_in, n_out, fams[f]);
}

/* Best of 10 calls (b2b: of 10 rounds of 20 calls back to back, per call), weights rotated over nc copies;
 * x quantized once (int8) or f32. Returns us. */
static float time_gemv(int t, int q8, void **dw, int nc, size_t stride, int64_t n_in, int64_t n_out, const float *dx,
                       void *dxq, int m, float *dy, int b2b) {
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0)); CU(cudaEventCreate(&e1));
    float best = 1e9f;
    const int k = b2b ? 20 : 1;
    for (int r = 0; r < 12; r++) {
        CU(cudaEventRecord(e0, 0));
        for (int i = 0; i < k; i++) {
            if (q8) tcu_gemv_dp4a(t, dw[(r * k + i) % nc], stride, n_in, n_out, dxq, m, dy, 0);
            else tcu_gemv_multi(t, dw[(r * k + i) % nc], stride, n_in, n_out, dx, m, dy, 0);
        }
        CU(cudaEventRecord(e1, 0));
        CU(cudaEventSynchronize(e1));
        float ms_ = 0; CU(cudaEventElapsedTime(&ms_, e0, e1));
        if (r >= 2 && ms_ < best) best = ms_;
    }
    CU(cudaEventDestroy(e0)); CU(cudaEventDestroy(e1));
    return best * 1000.0f / k;
}

int main(void) {
    int dev_n = 0;
    if (cudaGetDeviceCount(&dev_n) != cudaSuccess || dev_n < 1) {
        printf("gpu_multi: no CUDA device, skipped\ngpu_multi: 0 passed, 0 failed\n");
        return 0;
    }
    const char *se = getenv("GPU_TEST_SEED");
    rs = se ? strtoull(se, NULL, 10) : (uint64_t)time(NULL) * 2654435761ull + 7;
    printf("gpu_multi: seed %llu\n", (unsigned long long)rs);
    const int types[] = {TERN_TYPE_F32, TERN_TYPE_F16, TERN_TYPE_BF16, TERN_TYPE_Q4_0, TERN_TYPE_Q4_1, TERN_TYPE_Q5_0,
                         TERN_TYPE_Q5_1, TERN_TYPE_Q8_0, TERN_TYPE_Q4_K, TERN_TYPE_Q5_K, TERN_TYPE_Q6_K};
    const int64_t shapes[3][2] = {{4096, 1000}, {512, 7}, {4096, 33}};
    const int ms[5] = {2, 3, 8, 13, 16};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const int t = types[ti];
        for (int si = 0; si < 3; si++) {
            const int64_t n_in = shapes[si][0], n_out = shapes[si][1];
            const size_t stride = (tern_type_row_size((enum tern_type)t, n_in) + 15) & ~(size_t)15;
            uint8_t *hw = malloc(stride * (size_t)n_out);
            fill_weights(t, hw, n_in, n_out, stride);
            float *hx = malloc(sizeof(float) * (size_t)n_in * 16);
            for (int64_t i = 0; i < n_in * 16; i++) hx[i] = frnd(2.0f);
            void *dw; float *dx, *dy1, *dym;
            CU(cudaMalloc(&dw, stride * (size_t)n_out));
            CU(cudaMalloc((void **)&dx, sizeof(float) * (size_t)n_in * 16));
            CU(cudaMalloc((void **)&dy1, sizeof(float) * (size_t)n_out * 16));
            CU(cudaMalloc((void **)&dym, sizeof(float) * (size_t)n_out * 16));
            CU(cudaMemcpy(dw, hw, stride * (size_t)n_out, cudaMemcpyHostToDevice));
            CU(cudaMemcpy(dx, hx, sizeof(float) * (size_t)n_in * 16, cudaMemcpyHostToDevice));
            CU(cudaMemset(dy1, 0xFF, sizeof(float) * (size_t)n_out * 16));
            for (int c = 0; c < 16; c++) tcu_gemv(t, dw, stride, n_in, n_out, dx + (size_t)c * n_in, dy1 + (size_t)c * n_out, 0);
            float *y1 = malloc(sizeof(float) * (size_t)n_out * 16), *ym = malloc(sizeof(float) * (size_t)n_out * 16);
            CU(cudaMemcpy(y1, dy1, sizeof(float) * (size_t)n_out * 16, cudaMemcpyDeviceToHost));
            int finite = 1;
            for (int64_t i = 0; i < n_out * 16; i++) if (!isfinite(y1[i])) finite = 0;
            CHECK(finite, "type %s %lldx%lld: single-column results not all finite", tern_type_name(t), (long long)n_in, (long long)n_out);
            for (int mi = 0; mi < 5; mi++) {
                const int m = ms[mi];
                CU(cudaMemset(dym, 0xFF, sizeof(float) * (size_t)n_out * 16));
                tcu_gemv_multi(t, dw, stride, n_in, n_out, dx, m, dym, 0);
                CU(cudaGetLastError());
                CU(cudaMemcpy(ym, dym, sizeof(float) * (size_t)n_out * 16, cudaMemcpyDeviceToHost));
                CHECK(memcmp(ym, y1, sizeof(float) * (size_t)n_out * (size_t)m) == 0,
                      "type %s %lldx%lld m=%d: multi-column result differs from the single-column kernel", tern_type_name(t),
                      (long long)n_in, (long long)n_out, m);
                int untouched = 1; /* rows >= m stay poisoned */
                for (int64_t i = (int64_t)m * n_out; i < 16 * n_out; i++) if (!isnan(ym[i])) untouched = 0;
                CHECK(untouched, "type %s m=%d wrote beyond its %d columns", tern_type_name(t), m, m);
            }
            free(hw); free(hx); free(y1); free(ym);
            CU(cudaFree(dw)); CU(cudaFree(dx)); CU(cudaFree(dy1)); CU(cudaFree(dym));
        }
    }
    /* the dp4a path */
    const int64_t q8shapes[5][2] = {{4096, 1000}, {512, 7}, {4096, 33}, {96, 5}, {14336, 64}};
    const int q8types[3] = {TERN_TYPE_Q4_0, TERN_TYPE_Q4_1, TERN_TYPE_Q8_0};
    for (int ti = 0; ti < 3; ti++)
        for (int si = 0; si < 5; si++) check_q8(q8types[ti], q8shapes[si][0], q8shapes[si][1]);
    /* Q4_K: rows of whole 256-element super-blocks (one super-block: 256 x 5) */
    const int64_t kshapes[5][2] = {{4096, 1000}, {512, 7}, {4096, 33}, {256, 5}, {14336, 64}};
    for (int si = 0; si < 5; si++) check_q8(TERN_TYPE_Q4_K, kshapes[si][0], kshapes[si][1]);
    for (int si = 0; si < 5; si++) check_q8(TERN_TYPE_Q6_K, kshapes[si][0], kshapes[si][1]);
    /* repacked Q4_0 / Q8_0: whole groups, a partial last group (4192 = 131 blocks, 96 = 3) */
    const int64_t rshapes[5][2] = {{4096, 1000}, {4192, 33}, {96, 5}, {512, 7}, {14336, 64}};
    for (int si = 0; si < 5; si++) {
        check_repack(TERN_TYPE_Q4_0, rshapes[si][0], rshapes[si][1]);
        check_repack(TERN_TYPE_Q8_0, rshapes[si][0], rshapes[si][1]);
    }
    for (int si = 0; si < 5; si++) check_repack(TERN_TYPE_Q4_K, kshapes[si][0], kshapes[si][1]);
    /* the verify cost curve and the DRAM rate: 4 rotated weight copies (beyond L2), random x */
    const struct { int t; int64_t n_in, n_out; } cs[] = {{TERN_TYPE_Q4_0, 4096, 14336}, {TCU_TYPE_Q4_0R, 4096, 14336},
                                                       {TERN_TYPE_Q8_0, 4096, 14336}, {TCU_TYPE_Q8_0R, 4096, 14336},
                                                       {TERN_TYPE_Q4_0, 14336, 4096}, {TCU_TYPE_Q4_0R, 14336, 4096},
                                                       {TCU_TYPE_Q4_0R, 4096, 6144}, {TCU_TYPE_Q4_0R, 4096, 128256},
                                                       {TERN_TYPE_Q4_K, 4096, 14336}, {TCU_TYPE_Q4_KR, 4096, 14336},
                                                       {TERN_TYPE_Q6_K, 4096, 14336}};
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        const int t = cs[k].t,
                  gt = t == TCU_TYPE_Q4_0R ? TERN_TYPE_Q4_0 : t == TCU_TYPE_Q8_0R ? TERN_TYPE_Q8_0 : t == TCU_TYPE_Q4_KR ? TERN_TYPE_Q4_K : t;
        const int64_t n_in = cs[k].n_in, n_out = cs[k].n_out;
        const size_t gstride = (tern_type_row_size((enum tern_type)gt, n_in) + 15) & ~(size_t)15;
        const size_t stride = t != gt ? (tcu_repack_row_bytes(t, n_in) + 15) & ~(size_t)15 : gstride;
        uint8_t *hw = malloc(gstride * (size_t)n_out);
        fill_weights(gt, hw, n_in, n_out, gstride);
        void *dw[4], *dxq, *dg = NULL;
        float *dx, *dy;
        if (t != gt) {
            CU(cudaMalloc(&dg, gstride * (size_t)n_out));
            CU(cudaMemcpy(dg, hw, gstride * (size_t)n_out, cudaMemcpyHostToDevice));
        }
        for (int c = 0; c < 4; c++) {
            CU(cudaMalloc(&dw[c], stride * (size_t)n_out));
            if (t != gt) tcu_repack(gt, dg, gstride, dw[c], stride, n_in, n_out, 0);
            else CU(cudaMemcpy(dw[c], hw, stride * (size_t)n_out, cudaMemcpyHostToDevice));
        }
        if (dg) CU(cudaFree(dg));
        float *hx = malloc(sizeof(float) * (size_t)n_in * 16);
        for (int64_t i = 0; i < n_in * 16; i++) hx[i] = frnd(1.0f);
        CU(cudaMalloc((void **)&dx, sizeof(float) * (size_t)n_in * 16));
        CU(cudaMalloc(&dxq, tcu_x16_bytes(16, n_in)));
        CU(cudaMalloc((void **)&dy, sizeof(float) * (size_t)n_out * 16));
        CU(cudaMemcpy(dx, hx, sizeof(float) * (size_t)n_in * 16, cudaMemcpyHostToDevice));
        const double mb = (double)stride * n_out / 1e6;
        printf("gemv %s%s %lldx%lld (%.1f MB, 4 copies rotated): us (GB/s) per call, f32 path | dp4a path | dp4a, "
               "20 calls back to back\n", tern_type_name(gt), t != gt ? " repacked" : "", (long long)n_in,
               (long long)n_out, mb);
        const int mm[5] = {1, 2, 4, 8, 16};
        for (int i = 0; i < 5; i++) {
            tcu_quantize_x16(dx, mm[i], n_in, dxq, 0);
            const float a = t != gt ? 0.0f : time_gemv(t, 0, dw, 4, stride, n_in, n_out, dx, dxq, mm[i], dy, 0);
            const float b = time_gemv(t, 1, dw, 4, stride, n_in, n_out, dx, dxq, mm[i], dy, 0);
            const float c = time_gemv(t, 1, dw, 4, stride, n_in, n_out, dx, dxq, mm[i], dy, 1);
            printf("  m=%2d  %8.1f (%6.0f) | %8.1f (%6.0f) | %8.1f (%6.0f)\n", mm[i], a, a > 0 ? mb * 1e3 / a : 0.0, b,
                   mb * 1e3 / b, c, mb * 1e3 / c);
        }
        free(hw); free(hx);
        for (int c = 0; c < 4; c++) CU(cudaFree(dw[c]));
        CU(cudaFree(dx)); CU(cudaFree(dxq)); CU(cudaFree(dy));
    }
    return check_summary("gpu_multi");
}
