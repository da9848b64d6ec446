/* test_quant: block layouts, dequantizers against gguf-py (tests/fixtures/quant, made by
 * tests/gen_quant_fixtures.py), activation quantizers, and the dot products: against a double
 * dot of the dequantized operands, and bit-identity scalar vs AVX2 and vec_dot vs vec_dot_multi.
 * Run from the repo root (tests/run.sh does). */
#include "check.h"
#include "quant.h"
#include "tern.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FIXDIR "tests/fixtures/quant/"

/* Expected (block elements, block bytes): gguf-py GGML_QUANT_SIZES / ggml-common.h. */
static const struct {
    enum tern_type t;
    const char *name;
    int64_t blck;
    size_t size;
    enum tern_type vdot;
} k_types[] = {
    {TERN_TYPE_F32, "f32", 1, 4, TERN_TYPE_F32},          {TERN_TYPE_F16, "f16", 1, 2, TERN_TYPE_F32},
    {TERN_TYPE_BF16, "bf16", 1, 2, TERN_TYPE_F32},        {TERN_TYPE_Q4_0, "q4_0", 32, 18, TERN_TYPE_Q8_0},
    {TERN_TYPE_Q4_1, "q4_1", 32, 20, TERN_TYPE_Q8_1},     {TERN_TYPE_Q5_0, "q5_0", 32, 22, TERN_TYPE_Q8_0},
    {TERN_TYPE_Q5_1, "q5_1", 32, 24, TERN_TYPE_Q8_1},     {TERN_TYPE_Q8_0, "q8_0", 32, 34, TERN_TYPE_Q8_0},
    {TERN_TYPE_Q2_K, "q2_K", 256, 84, TERN_TYPE_Q8_K},    {TERN_TYPE_Q3_K, "q3_K", 256, 110, TERN_TYPE_Q8_K},
    {TERN_TYPE_Q4_K, "q4_K", 256, 144, TERN_TYPE_Q8_K},   {TERN_TYPE_Q5_K, "q5_K", 256, 176, TERN_TYPE_Q8_K},
    {TERN_TYPE_Q6_K, "q6_K", 256, 210, TERN_TYPE_Q8_K},   {TERN_TYPE_IQ4_NL, "iq4_nl", 32, 18, TERN_TYPE_Q8_0},
};
#define N_TYPES ((int)(sizeof k_types / sizeof k_types[0]))

/* Byte offsets of the fp16 scale fields per block (same table as gen_quant_fixtures.py). */
static int scale_fields(enum tern_type t, int off[2]) {
    switch (t) {
    case TERN_TYPE_Q4_1: case TERN_TYPE_Q5_1: case TERN_TYPE_Q4_K: case TERN_TYPE_Q5_K:
        off[0] = 0; off[1] = 2; return 2;
    case TERN_TYPE_Q2_K: off[0] = 80; off[1] = 82; return 2;
    case TERN_TYPE_Q3_K: off[0] = 108; return 1;
    case TERN_TYPE_Q6_K: off[0] = 208; return 1;
    default: off[0] = 0; return 1;
    }
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ULL;
static uint32_t rnd32(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static float rnd_unif(float lo, float hi) { return lo + (hi - lo) * (float)(rnd32() & 0xFFFFFF) / 16777216.0f; }
static float rnd_normalish(void) { return rnd_unif(-1, 1) + rnd_unif(-1, 1) + rnd_unif(-1, 1); }

static int is_float_type(enum tern_type t) {
    return t == TERN_TYPE_F32 || t == TERN_TYPE_F16 || t == TERN_TYPE_BF16;
}

/* A random row of n elements of type t: random bytes with sane fp16 scales, or random floats. */
static void *random_row(enum tern_type t, int64_t n) {
    size_t bytes = tern_type_row_size(t, n);
    uint8_t *w = malloc(bytes + 1);
    if (is_float_type(t)) {
        for (int64_t i = 0; i < n; i++) {
            float f = rnd_normalish();
            if (t == TERN_TYPE_F32) memcpy(w + 4 * i, &f, 4);
            else {
                uint16_t h = t == TERN_TYPE_F16 ? tern_fp32_to_fp16(f) : tern_fp32_to_bf16(f);
                memcpy(w + 2 * i, &h, 2);
            }
        }
        return w;
    }
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)rnd32();
    size_t bs = tern_type_type_size(t);
    int off[2], nf = scale_fields(t, off);
    for (size_t b = 0; b < bytes / bs; b++)
        for (int f = 0; f < nf; f++) {
            uint16_t h = tern_fp32_to_fp16(rnd_unif(-0.05f, 0.05f));
            memcpy(w + b * bs + off[f], &h, 2);
        }
    return w;
}

/* Activations with a per-32 magnitude that varies over 3 decades (and one all-zero block). */
static void random_act(float *x, int64_t n) {
    float s = 1.0f;
    for (int64_t i = 0; i < n; i++) {
        if (i % 32 == 0) s = rnd_unif(0.01f, 10.0f);
        x[i] = rnd_normalish() * s;
    }
    if (n >= 64)
        for (int i = 32; i < 64; i++) x[i] = 0.0f;
}

static int have_avx2(void) {
    const char *cur = tern_simd_name();
    int ok = tern_simd_set("avx2") == 0;
    tern_simd_set(cur);
    return ok;
}

/* The paths this CPU has, scalar first: avx2, avxvnni (the AVX2 kernels with AVX-VNNI's VEX vpdpbusd / vpdpwssd),
 * avx512, avx512vnni (AVX512_VNNI's EVEX forms in the AVX2 and AVX-512 kernels), each where the CPU has it. */
static int g_vnni;
static const char *k_paths[5];
static int g_npath;
static void find_paths(void) {
    static const char *const all[5] = {"scalar", "avx2", "avxvnni", "avx512", "avx512vnni"};
    const char *cur = tern_simd_name();
    g_npath = 0;
    for (int i = 0; i < 5; i++)
        if (tern_simd_set(all[i]) == 0) k_paths[g_npath++] = all[i];
    tern_simd_set(cur);
    g_vnni = tern_simd_set("avx512vnni") == 0;
    tern_simd_set(cur);
    for (int i = 0; i < 5; i++) {
        int have = 0;
        for (int j = 0; j < g_npath; j++) have |= !strcmp(k_paths[j], all[i]);
        if (!have) printf("test_quant: note: this CPU has no %s path, its arm is skipped\n", all[i]);
    }
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- 1. traits ---- */
static void test_traits(void) {
    for (int i = 0; i < N_TYPES; i++) {
        enum tern_type t = k_types[i].t;
        CHECK(tern_type_supported(t), "%s", k_types[i].name);
        CHECK(strcmp(tern_type_name(t), k_types[i].name) == 0, "%s vs %s", tern_type_name(t), k_types[i].name);
        CHECK(tern_type_block_size(t) == k_types[i].blck, "%s block size %lld", k_types[i].name,
              (long long)tern_type_block_size(t));
        CHECK(tern_type_type_size(t) == k_types[i].size, "%s type size %zu", k_types[i].name, tern_type_type_size(t));
        CHECK(tern_type_vec_dot_type(t) == k_types[i].vdot, "%s vec_dot_type", k_types[i].name);
        int64_t b = k_types[i].blck;
        CHECK(tern_type_row_size(t, 6 * b) == 6 * k_types[i].size, "%s row size", k_types[i].name);
        if (b > 1) {
            CHECK(tern_type_row_size(t, 6 * b + 1) == 0, "%s row of non-multiple", k_types[i].name);
            CHECK(tern_type_row_size(t, b - 1) == 0, "%s row of b-1", k_types[i].name);
        }
    }
    CHECK(tern_type_supported(TERN_TYPE_Q8_1) && tern_type_type_size(TERN_TYPE_Q8_1) == 36, "q8_1");
    CHECK(tern_type_supported(TERN_TYPE_Q8_K) && tern_type_type_size(TERN_TYPE_Q8_K) == 292, "q8_K");
    CHECK(tern_type_block_size(TERN_TYPE_Q8_K) == 256, "q8_K block");
    CHECK(!tern_type_supported(4) && !tern_type_supported(39) && !tern_type_supported(-1) &&
              !tern_type_supported(TERN_TYPE_COUNT),
          "unsupported ids");
    CHECK(strcmp(tern_type_name(4), "unknown") == 0, "name of id 4");
    CHECK(tern_type_row_size((enum tern_type)4, 32) == 0, "row size of unsupported id");
}

/* ---- 2. dequantizers vs gguf-py ---- */
typedef struct {
    int type;
    uint32_t n, nbytes;
    uint8_t *raw;
    float *deq;
} fixture;

static int load_fixture(const char *name, fixture *f) {
    char path[256];
    snprintf(path, sizeof path, FIXDIR "%s.bin", name);
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    char magic[4];
    uint32_t hdr[3];
    int ok = fread(magic, 1, 4, fp) == 4 && memcmp(magic, "TQF1", 4) == 0 && fread(hdr, 4, 3, fp) == 3;
    if (ok) {
        f->type = (int)hdr[0];
        f->n = hdr[1];
        f->nbytes = hdr[2];
        f->raw = malloc(f->nbytes);
        f->deq = malloc(sizeof(float) * f->n);
        ok = fread(f->raw, 1, f->nbytes, fp) == f->nbytes && fread(f->deq, 4, f->n, fp) == f->n;
    }
    fclose(fp);
    return ok ? 0 : -1;
}

/* Expected: bit-equal. tern's dequantizers do the same float32 operations in the same order as
 * gguf-py's numpy code (exact fp16->fp32, then e.g. (d*sc)*q - dmin*m), so no tolerance is needed. */
static void test_dequant_fixtures(void) {
    for (int i = 0; i < N_TYPES; i++) {
        fixture f;
        if (load_fixture(k_types[i].name, &f) != 0) {
            CHECK(0, "cannot read fixture %s%s.bin (run from the repo root)", FIXDIR, k_types[i].name);
            continue;
        }
        CHECK(f.type == (int)k_types[i].t, "%s fixture type %d", k_types[i].name, f.type);
        CHECK(tern_type_row_size(k_types[i].t, f.n) == f.nbytes, "%s fixture size", k_types[i].name);
        float *y = malloc(sizeof(float) * (f.n + 4));
        for (int g = 0; g < 4; g++) y[f.n + g] = 777.0f;
        tern_dequantize_row(k_types[i].t, f.raw, y, f.n);
        int bad = 0, first = -1;
        for (uint32_t j = 0; j < f.n; j++)
            if (!same_bits(y[j], f.deq[j])) {
                if (first < 0) first = (int)j;
                bad++;
            }
        CHECK(bad == 0, "%s: %d of %u differ from gguf-py, first at %d: %.9g vs %.9g", k_types[i].name, bad, f.n,
              first, first >= 0 ? y[first] : 0.0, first >= 0 ? f.deq[first] : 0.0);
        CHECK(y[f.n] == 777.0f && y[f.n + 3] == 777.0f, "%s: dequantize wrote past n", k_types[i].name);
        free(y);
        free(f.raw);
        free(f.deq);
    }
    /* non-multiple n: error, NaN fill */
    float y[40];
    uint8_t blk[18] = {0};
    tern_dequantize_row(TERN_TYPE_Q4_0, blk, y, 33);
    CHECK(isnan(y[0]) && isnan(y[32]), "dequantize of n=33 q4_0 fills NaN");
}

/* ---- 3. activation quantizers ---- */
static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return tern_fp16_to_fp32(h);
}

static void quantize_both(enum tern_type vt, const float *x, int64_t n, uint8_t *ys, uint8_t *ya, int avx2) {
    tern_simd_set("scalar");
    tern_quantize_activation(vt, x, ys, n);
    if (avx2) {
        tern_simd_set("avx2");
        tern_quantize_activation(vt, x, ya, n);
    } else {
        memcpy(ya, ys, tern_type_row_size(vt, n));
    }
}

static void test_activations(int avx2) {
    /* vs gguf-py's Q8_0 (ggml reference rule: q = roundf(x * (1/d))). tern follows llama.cpp's x86
     * quantizer: q = round-half-even(x * (127/amax)); the two products can differ by an ulp, so a
     * value lying within an ulp of .5 may round the other way: allow |dq| <= 1 on a few elements.
     * d (fp16 of amax/127) must be identical. */
    FILE *fp = fopen(FIXDIR "act_q8_0.bin", "rb");
    CHECK(fp != NULL, "cannot read %sact_q8_0.bin", FIXDIR);
    if (fp) {
        char magic[4];
        uint32_t n = 0;
        int ok = fread(magic, 1, 4, fp) == 4 && memcmp(magic, "TQA1", 4) == 0 && fread(&n, 4, 1, fp) == 1 && n % 32 == 0;
        float *x = malloc(sizeof(float) * (n + 1));
        uint8_t *ref = malloc(n / 32 * 34 + 1), *ys = malloc(n / 32 * 34 + 1), *ya = malloc(n / 32 * 34 + 1);
        ok = ok && fread(x, 4, n, fp) == n && fread(ref, 1, n / 32 * 34, fp) == n / 32 * 34;
        CHECK(ok, "act_q8_0.bin malformed");
        if (ok) {
            quantize_both(TERN_TYPE_Q8_0, x, n, ys, ya, avx2);
            int dbad = 0, qbad = 0, qoff = 0;
            for (uint32_t b = 0; b < n / 32; b++) {
                if (memcmp(ys + 34 * b, ref + 34 * b, 2) != 0) dbad++;
                for (int j = 0; j < 32; j++) {
                    int a = (int8_t)ys[34 * b + 2 + j], r = (int8_t)ref[34 * b + 2 + j];
                    if (a != r) qoff++;
                    if (abs(a - r) > 1) qbad++;
                }
            }
            CHECK(dbad == 0, "q8_0 activation: %d block scales differ from gguf-py", dbad);
            CHECK(qbad == 0 && qoff <= (int)n / 64, "q8_0 activation: %d quants off by >1, %d off by 1", qbad, qoff);
            CHECK(memcmp(ys, ya, n / 32 * 34) == 0, "q8_0 activation: scalar and avx2 bytes differ");
        }
        free(x); free(ref); free(ys); free(ya);
        fclose(fp);
    }

    const int64_t n = 1536;
    float *x = malloc(sizeof(float) * n), *dq = malloc(sizeof(float) * n);
    random_act(x, n);
    x[100] = 1e-30f; /* tiny, subnormal-d territory is not needed: just odd values */
    static const enum tern_type vts[] = {TERN_TYPE_Q8_0, TERN_TYPE_Q8_1, TERN_TYPE_Q8_K};
    for (int v = 0; v < 3; v++) {
        enum tern_type vt = vts[v];
        size_t rs = tern_type_row_size(vt, n), bs = tern_type_type_size(vt);
        int64_t blck = tern_type_block_size(vt);
        uint8_t *ys = malloc(rs), *ya = malloc(rs);
        quantize_both(vt, x, n, ys, ya, avx2);
        CHECK(memcmp(ys, ya, rs) == 0, "%s activation: scalar and avx2 bytes differ", tern_type_name(vt));
        tern_dequantize_row(vt, ys, dq, n);
        int bad = 0, sbad = 0;
        for (int64_t b = 0; b < n / blck; b++) {
            const uint8_t *blk = ys + b * bs;
            float amax = 0;
            for (int64_t j = 0; j < blck; j++) amax = fmaxf(amax, fabsf(x[b * blck + j]));
            /* |x - d*q| <= d/2 up to d's fp16 rounding (Q8_0/Q8_1: q*|d-dfp16| <= 127*2^-11*d) */
            const float tol = amax / 127.0f * (0.5f + (vt == TERN_TYPE_Q8_K ? 1e-5f : 0.07f)) + 1e-30f;
            for (int64_t j = 0; j < blck; j++)
                if (!(fabsf(dq[b * blck + j] - x[b * blck + j]) <= tol)) bad++;
            if (vt == TERN_TYPE_Q8_1) { /* s = fp16(d * sum q), d unrounded: within 2^-10 of dfp16*sum */
                int sum = 0;
                for (int j = 0; j < 32; j++) sum += (int8_t)blk[4 + j];
                const double want = (double)half_at(blk) * sum;
                if (!(fabs(half_at(blk + 2) - want) <= fabs(want) * 0x1p-10 + 1e-30)) sbad++;
            }
            if (vt == TERN_TYPE_Q8_K) {
                int16_t bsums[16];
                memcpy(bsums, blk + 4 + 256, sizeof bsums);
                for (int g = 0; g < 16; g++) {
                    int s = 0;
                    for (int j = 0; j < 16; j++) s += (int8_t)blk[4 + 16 * g + j];
                    if (s != bsums[g]) sbad++;
                }
                for (int j = 0; j < 256; j++)
                    if ((int8_t)blk[4 + j] == -128) sbad++;
            }
        }
        CHECK(bad == 0, "%s activation: %d elements beyond d/2 of x", tern_type_name(vt), bad);
        CHECK(sbad == 0, "%s activation: %d bad sums", tern_type_name(vt), sbad);
        free(ys);
        free(ya);
    }
    float y[8];
    tern_quantize_activation(TERN_TYPE_F32, x, y, 8);
    CHECK(memcmp(x, y, sizeof y) == 0, "f32 activation is a copy");
    free(x);
    free(dq);
}

/* ---- 4. dot products ---- */
#define MAXC 9

/* One (type, n) case: w is one row of type t. Checks, on each available path:
 *  - vec_dot against a double dot of dequantized w and dequantized activations;
 *  - vec_dot_multi (1..MAXC columns, stride > row size) bit-equal to vec_dot per column,
 *    not writing past ncols;
 *  - every path's results (scalar, avx2, avxvnni, avx512, avx512vnni, those the CPU has) bit-equal. */
static void check_dot_case(enum tern_type t, int64_t n, const void *w, int avx2, const char *what) {
    const enum tern_type vt = tern_type_vec_dot_type(t);
    const size_t xs = tern_type_row_size(vt, n) + 64;
    float *x = malloc(sizeof(float) * n), *wd = malloc(sizeof(float) * n), *xd = malloc(sizeof(float) * n);
    uint8_t *xq = calloc(MAXC, xs);
    tern_dequantize_row(t, w, wd, n);
    double ref[MAXC], tol[MAXC];
    for (int c = 0; c < MAXC; c++) {
        random_act(x, n);
        tern_simd_set("scalar");
        tern_quantize_activation(vt, x, xq + c * xs, n);
        tern_dequantize_row(vt, xq + c * xs, xd, n);
        double s = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) {
            s += (double)wd[i] * xd[i];
            mag += fabs((double)wd[i] * xd[i]);
        }
        /* Tolerance: one float rounding (<= 2^-24 of the magnitude sum) per step of the longest
         * accumulation chain (blocks per lane; elements per lane for the float types; 2 per
         * super-block for K-quants), plus 16 for the tree, the scale products, the dequantization
         * roundings of w, and the cancellation inside min-type dequantization (d*sc*q - dmin*m).
         * Measured: worst case stays under 5% of this bound. */
        const int64_t blck = tern_type_block_size(t);
        const double chain = blck == 1 ? (double)(n / 32 + n % 32) : (double)(n / blck) * 2;
        double t_ = (chain + 16) * 0x1p-24 * mag;
        if (t == TERN_TYPE_Q4_1 || t == TERN_TYPE_Q5_1) {
            /* The min term uses the activation's s = fp16(d*sum q), whose rounding (and that of
             * its unrounded d) is not in the dequantized activations: <= 2^-10 |m*s| per block. */
            const size_t wbs = tern_type_type_size(t);
            for (int64_t b = 0; b < n / 32; b++)
                t_ += fabs((double)half_at((const uint8_t *)w + b * wbs + 2) * half_at(xq + c * xs + b * 36 + 2)) *
                      0x1p-9;
        }
        ref[c] = s;
        tol[c] = t_ + 1e-30;
    }
    float res[5][MAXC];
    const int npath = g_npath;
    for (int p = 0; p < npath; p++) {
        tern_simd_set(k_paths[p]);
        for (int c = 0; c < MAXC; c++) {
            res[p][c] = tern_vec_dot(t, n, w, xq + c * xs);
            CHECK_NEAR(res[p][c], ref[c], tol[c], 0.0, "%s %s n=%lld col %d (%s): %.9g vs ref %.9g", tern_type_name(t),
                       what, (long long)n, c, tern_simd_name(), res[p][c], ref[c]);
        }
        for (int nc = 1; nc <= MAXC; nc++) {
            float out[MAXC + 4];
            for (int g = 0; g < MAXC + 4; g++) out[g] = -4242.0f;
            tern_vec_dot_multi(t, n, w, xq, xs, nc, out);
            int bad = 0;
            for (int c = 0; c < nc; c++) bad += !same_bits(out[c], res[p][c]);
            CHECK(bad == 0, "%s %s n=%lld multi nc=%d (%s): %d columns differ from vec_dot", tern_type_name(t), what,
                  (long long)n, nc, tern_simd_name(), bad);
            CHECK(out[nc] == -4242.0f && out[nc + 3] == -4242.0f, "%s multi nc=%d wrote past ncols", tern_type_name(t), nc);
        }
    }
    for (int p = 1; p < npath; p++) {
        int bad = 0;
        for (int c = 0; c < MAXC; c++) bad += !same_bits(res[0][c], res[p][c]);
        CHECK(bad == 0, "%s %s n=%lld: scalar and %s differ in %d columns (e.g. %.9g vs %.9g)", tern_type_name(t),
              what, (long long)n, k_paths[p], bad, res[0][0], res[p][0]);
    }
    free(x);
    free(wd);
    free(xd);
    free(xq);
}

/* tern_vec_dot_rows: nrows rows (stride > row size) bit-equal to tern_vec_dot per row on each path,
 * nothing written past nrows. */
static void check_rows_case(enum tern_type t, int64_t n, int avx2) {
    enum { R = 11 };
    const enum tern_type vt = tern_type_vec_dot_type(t);
    const size_t rb = tern_type_row_size(t, n), ws = rb + 8;
    uint8_t *w = malloc(ws * R);
    for (int r = 0; r < R; r++) {
        void *row = random_row(t, n);
        memcpy(w + r * ws, row, rb);
        free(row);
    }
    float *x = malloc(sizeof(float) * n);
    uint8_t *xq = malloc(tern_type_row_size(vt, n));
    random_act(x, n);
    tern_quantize_activation(vt, x, xq, n);
    float first[R];
    const int npath = g_npath; /* the rows kernels differ on the VNNI paths */
    for (int p = 0; p < npath; p++) {
        tern_simd_set(k_paths[p]);
        for (int nr = 1; nr <= R; nr++) {
            float out[R + 2];
            for (int g = 0; g < R + 2; g++) out[g] = -4242.0f;
            tern_vec_dot_rows(t, n, w, ws, xq, nr, out);
            int bad = 0;
            for (int r = 0; r < nr; r++) {
                const float one = tern_vec_dot(t, n, w + r * ws, xq);
                bad += !same_bits(out[r], one);
                if (nr == R && p == 0) first[r] = one;
                if (nr == R && p >= 1) bad += !same_bits(one, first[r]);
            }
            CHECK(bad == 0, "%s n=%lld rows nr=%d (%s): %d rows differ from vec_dot", tern_type_name(t), (long long)n, nr,
                  tern_simd_name(), bad);
            CHECK(out[nr] == -4242.0f && out[nr + 1] == -4242.0f, "%s rows nr=%d wrote past nrows", tern_type_name(t), nr);
        }
    }
    free(w);
    free(x);
    free(xq);
}

/* The int16 edge of the byte products (review of the VNNI copies): Q8_0 weights of -128 (|w| = 128 on the unsigned
 * side) against activations of +-127 (the quantizer's range: pairs of +-32512, every path, scalar too, must agree) and
 * of -128 (the sign trick's wrap, pairs of -32768: the SIMD paths agree with each other, scalar does not, as NaN input
 * is unspecified), at 1..9 columns and through the rows kernels. */
static void test_dot_edges(int avx2) {
    enum { NB = 4, N = 32 * NB };
    uint8_t w[NB * 34], x[MAXC][NB * 34];
    for (int b = 0; b < NB; b++) {
        const uint16_t d = tern_fp32_to_fp16(0.01f * (float)(b + 1));
        memcpy(w + 34 * b, &d, 2);
        for (int i = 0; i < 32; i++) w[34 * b + 2 + i] = (uint8_t)(i % 5 == 4 ? 127 : 0x80); /* mostly -128 */
    }
    for (int wrap = 0; wrap < 2; wrap++) {
        for (int c = 0; c < MAXC; c++)
            for (int b = 0; b < NB; b++) {
                const uint16_t d = tern_fp32_to_fp16(0.02f * (float)(c + b + 1));
                memcpy(x[c] + 34 * b, &d, 2);
                for (int i = 0; i < 32; i++) {
                    const int v = (i + c + b) % 3 == 0 ? 127 : wrap ? -128 : -127;
                    x[c][34 * b + 2 + i] = (uint8_t)(int8_t)v;
                }
            }
        float res[5][MAXC];
        const int npath = g_npath;
        for (int p = 0; p < npath; p++) {
            tern_simd_set(k_paths[p]);
            for (int c = 0; c < MAXC; c++) res[p][c] = tern_vec_dot(TERN_TYPE_Q8_0, N, w, x[c]);
            for (int nc = 1; nc <= MAXC; nc++) {
                float out[MAXC];
                tern_vec_dot_multi(TERN_TYPE_Q8_0, N, w, x, sizeof x[0], nc, out);
                int bad = 0;
                for (int c = 0; c < nc; c++) bad += !same_bits(out[c], res[p][c]);
                CHECK(bad == 0, "q8_0 edges (%s) multi nc=%d (%s): %d columns differ from vec_dot",
                      wrap ? "-128" : "+-127", nc, k_paths[p], bad);
            }
            uint8_t rows[5][NB * 34];
            for (int r = 0; r < 5; r++) memcpy(rows[r], w, sizeof w);
            float ro[5];
            tern_vec_dot_rows(TERN_TYPE_Q8_0, N, rows, sizeof rows[0], x[0], 5, ro);
            int bad = 0;
            for (int r = 0; r < 5; r++) bad += !same_bits(ro[r], res[p][0]);
            CHECK(bad == 0, "q8_0 edges (%s) rows (%s): %d rows differ", wrap ? "-128" : "+-127", k_paths[p], bad);
        }
        for (int p = wrap ? 2 : 1; p < npath; p++) {
            int bad = 0;
            for (int c = 0; c < MAXC; c++) bad += !same_bits(res[wrap ? 1 : 0][c], res[p][c]);
            CHECK(bad == 0, "q8_0 edges (%s): %s and %s differ in %d columns", wrap ? "-128" : "+-127",
                  k_paths[wrap ? 1 : 0], k_paths[p], bad);
        }
    }
}

static void test_dots(int avx2) {
    static const int64_t n32[] = {32, 96, 576, 1536};
    static const int64_t nK[] = {256, 768, 1536};
    static const int64_t nF[] = {1, 31, 32, 520, 576};
    for (int i = 0; i < N_TYPES; i++) {
        enum tern_type t = k_types[i].t;
        const int64_t *ns = k_types[i].blck == 1 ? nF : k_types[i].blck == 32 ? n32 : nK;
        int nn = k_types[i].blck == 1 ? 5 : k_types[i].blck == 32 ? 4 : 3;
        for (int j = 0; j < nn; j++) {
            void *w = random_row(t, ns[j]);
            check_dot_case(t, ns[j], w, avx2, "random");
            free(w);
        }
        check_rows_case(t, ns[nn - 1], avx2);
        fixture f; /* the fixture rows include zero and subnormal scales */
        if (load_fixture(k_types[i].name, &f) == 0) {
            check_dot_case(t, f.n, f.raw, avx2, "fixture");
            free(f.raw);
            free(f.deq);
        }
    }
    /* errors: non-multiple n, activation-only types */
    uint8_t buf[512] = {0};
    CHECK(isnan(tern_vec_dot(TERN_TYPE_Q4_0, 33, buf, buf)), "vec_dot n=33 q4_0 is NaN");
    CHECK(isnan(tern_vec_dot(TERN_TYPE_Q8_K, 256, buf, buf)), "vec_dot of q8_K weights is NaN");
    float out[2] = {0, 0};
    tern_vec_dot_multi(TERN_TYPE_Q4_K, 100, buf, buf, 0, 2, out);
    CHECK(isnan(out[0]) && isnan(out[1]), "vec_dot_multi n=100 q4_K is NaN");
    out[0] = 0;
    tern_vec_dot_rows(TERN_TYPE_Q8_0, 40, buf, 34, buf, 1, out);
    CHECK(isnan(out[0]), "vec_dot_rows n=40 q8_0 is NaN");
}

int main(void) {
    const int avx2 = have_avx2();
    find_paths();
    /* the settings table's scalar switch (the CLI's TERN_SIMD=scalar) forces the scalar path, and only while set */
    tern_config c = tern_config_get(), c0 = c;
    c.simd_scalar = 1;
    tern_config_set(&c);
    CHECK(strcmp(tern_simd_name(), "scalar") == 0, "tern_config.simd_scalar honoured");
    tern_config_set(&c0);
    CHECK(strcmp(tern_simd_name(), k_paths[g_npath - 1]) == 0, "the best path back: %s, want %s", tern_simd_name(),
          k_paths[g_npath - 1]);
    if (!avx2) printf("test_quant: note: this CPU has no AVX2+FMA+F16C, the avx2 arm is skipped\n");
    CHECK(tern_simd_set("nonsense") == -1, "unknown simd name refused");
    test_traits();
    test_dequant_fixtures();
    test_activations(avx2);
    test_dots(avx2);
    test_dot_edges(avx2);
    return check_summary("test_quant");
}
