/* test_backend: the CPU ops against references.
 *  - cpu_matmul_n: every output equals tern_vec_dot of its row and column bit for bit (the ops only
 *    split work, they never change numerics), for row counts that are not multiples of the work-item
 *    size, several weights of different types in one dispatch, one token (n = 1), a decode pass of 13
 *    (long work items, MM_DECODE_COLS) and a prefill pass of 21 columns, 1..3 threads; and within quantization
 *    error of a double-precision reference.
 *  - cpu_attention: against a double-precision causal GQA softmax(q·kᵀ/√d)·v over the same f16 cache.
 *  - cpu_rmsnorm, cpu_rope: against the formulas in double. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "check.h"
#include "quant.h"
#include "util.h"

static uint64_t rng = 88172645463325252ULL;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* A random weight of type t: quantize via the activation quantizer where the layout matches (Q8_0),
 * else fill raw bytes with sane scales: we build blocks from random floats through the dequantizer's
 * inverse only for Q8_0 and F32/F16; for Q4_1 random nibbles + small fp16 scales. */
static void *make_weight(enum tern_type t, int64_t n_in, int64_t n_out, tern_weight *w) {
    size_t rb = tern_type_row_size(t, n_in);
    uint8_t *d = malloc(rb * (size_t)n_out);
    for (size_t i = 0; i < rb * (size_t)n_out; i++) d[i] = (uint8_t)(frand() * 127.0f + 128.0f);
    if (t == TERN_TYPE_Q4_1 || t == TERN_TYPE_Q8_0) { /* fix the fp16 scale fields to finite values */
        size_t bs = tern_type_type_size(t), nb = rb * (size_t)n_out / bs;
        for (size_t b = 0; b < nb; b++) {
            uint16_t h = tern_fp32_to_fp16(0.01f + 0.02f * fabsf(frand()));
            memcpy(d + b * bs, &h, 2);
            if (t == TERN_TYPE_Q4_1) { h = tern_fp32_to_fp16(-0.1f * fabsf(frand())); memcpy(d + b * bs + 2, &h, 2); }
        }
    } else if (t == TERN_TYPE_F32) {
        float *f = (float *)d;
        for (int64_t i = 0; i < n_in * n_out; i++) f[i] = frand() * 0.1f;
    }
    *w = (tern_weight){d, t, n_in, n_out, rb};
    return d;
}

static void test_matmul(void) {
    const int64_t n_in = 64;
    const int64_t outs[3] = {37, 5, 100};
    const enum tern_type types[3] = {TERN_TYPE_Q4_1, TERN_TYPE_Q4_1, TERN_TYPE_Q8_0};
    tern_weight w[3];
    void *mem[3];
    for (int i = 0; i < 3; i++) mem[i] = make_weight(types[i], n_in, outs[i], &w[i]);
    const int ncols[3] = {1, 13, 21}; /* one token, a decode pass of 13 (long work items), a prefill pass (16 rows) */
    for (int ci = 0; ci < 3; ci++) {
        int n = ncols[ci];
        float *x = malloc(sizeof(float) * n * n_in);
        for (int i = 0; i < n * n_in; i++) x[i] = frand();
        float *ref[3];
        for (int i = 0; i < 3; i++) ref[i] = malloc(sizeof(float) * n * outs[i]);
        /* reference: tern_vec_dot per (row, column) */
        uint8_t *xq = malloc(4096);
        float *wrow = malloc(sizeof(float) * n_in), *xd = malloc(sizeof(float) * n_in);
        double worst_rel = 0;
        for (int i = 0; i < 3; i++) {
            enum tern_type vt = tern_type_vec_dot_type(types[i]);
            for (int c = 0; c < n; c++) {
                tern_quantize_activation(vt, x + c * n_in, xq, n_in);
                tern_dequantize_row(vt, xq, xd, n_in);
                for (int64_t r = 0; r < outs[i]; r++) {
                    const void *wr = (const uint8_t *)w[i].data + r * w[i].row_bytes;
                    ref[i][c * outs[i] + r] = tern_vec_dot(types[i], n_in, wr, xq);
                    tern_dequantize_row(types[i], wr, wrow, n_in);
                    double s = 0, sa = 0;
                    for (int k = 0; k < n_in; k++) { s += (double)wrow[k] * xd[k]; sa += fabs((double)wrow[k] * xd[k]); }
                    double e = fabs(s - ref[i][c * outs[i] + r]) / (sa + 1e-30);
                    if (e > worst_rel) worst_rel = e;
                }
            }
        }
        CHECK(worst_rel < 1e-3, "vec_dot vs double on dequantized operands: rel err %.2e", worst_rel);
        for (int nt = 1; nt <= 3; nt++) {
            tern_pool *p = tern_pool_new(nt);
            float *y[3];
            for (int i = 0; i < 3; i++) {
                y[i] = malloc(sizeof(float) * n * outs[i]);
                for (int k = 0; k < n * outs[i]; k++) y[i][k] = NAN; /* poison: unwritten outputs fail */
            }
            const tern_weight *wp[3] = {&w[0], &w[1], &w[2]};
            size_t scratch = 3 * cpu_matmul_scratch(TERN_TYPE_Q8_0, n_in, n) + 64;
            void *sc = malloc(scratch);
            cpu_matmul_n(p, 3, wp, x, n, y, sc);
            int bad = 0;
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < n * outs[i]; k++)
                    if (memcmp(&y[i][k], &ref[i][k], 4) != 0) bad++;
            CHECK(bad == 0, "cpu_matmul_n n=%d threads=%d: %d outputs differ from tern_vec_dot", n, nt, bad);
            for (int i = 0; i < 3; i++) free(y[i]);
            free(sc);
            tern_pool_free(p);
        }
        for (int i = 0; i < 3; i++) free(ref[i]);
        free(x); free(xq); free(wrow); free(xd);
    }
    for (int i = 0; i < 3; i++) free(mem[i]);
}

static void test_attention(void) {
    const int n_head = 4, n_kv = 2, hd = 24, pos0 = 5, n = 3, n_ctx = pos0 + n;
    const int kvw = n_kv * hd;
    float *q = malloc(sizeof(float) * n * n_head * hd), *out = malloc(sizeof(float) * n * n_head * hd);
    uint16_t *kc = malloc(2 * n_ctx * kvw), *vc = malloc(2 * n_ctx * kvw);
    for (int i = 0; i < n * n_head * hd; i++) q[i] = frand();
    for (int i = 0; i < n_ctx * kvw; i++) { kc[i] = tern_fp32_to_fp16(frand()); vc[i] = tern_fp32_to_fp16(frand()); }
    for (int nt = 1; nt <= 2; nt++) {
        tern_pool *p = tern_pool_new(nt);
        float *scratch = malloc(sizeof(float) * nt * n_ctx);
        cpu_attention(p, q, kc, vc, n, pos0, n_head, n_kv, hd, 1.0f / sqrtf((float)hd), out, scratch);
        double worst = 0;
        for (int t = 0; t < n; t++)
            for (int h = 0; h < n_head; h++) {
                int hk = h / (n_head / n_kv), nk = pos0 + t + 1;
                double s[16], mx = -1e300, sum = 0;
                for (int j = 0; j < nk; j++) {
                    double d = 0;
                    for (int k = 0; k < hd; k++)
                        d += (double)q[(t * n_head + h) * hd + k] * tern_fp16_to_fp32(kc[j * kvw + hk * hd + k]);
                    s[j] = d / sqrt((double)hd);
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j < nk; j++) { s[j] = exp(s[j] - mx); sum += s[j]; }
                for (int k = 0; k < hd; k++) {
                    double o = 0;
                    for (int j = 0; j < nk; j++) o += s[j] / sum * tern_fp16_to_fp32(vc[j * kvw + hk * hd + k]);
                    double e = fabs(o - out[(t * n_head + h) * hd + k]);
                    if (e > worst || isnan(out[(t * n_head + h) * hd + k])) worst = isnan(out[(t * n_head + h) * hd + k]) ? 1e9 : e;
                }
            }
        CHECK(worst < 1e-5, "attention vs double reference, threads=%d: max abs err %.2e", nt, worst);
        free(scratch);
        tern_pool_free(p);
    }
    free(q); free(out); free(kc); free(vc);
}

static void test_norm_rope(void) {
    float x[2 * 8], g[8], y[2 * 8];
    for (int i = 0; i < 16; i++) x[i] = frand() * 3.0f;
    for (int i = 0; i < 8; i++) g[i] = 1.0f + frand() * 0.1f;
    cpu_rmsnorm(x, g, 1e-5f, 2, 8, y);
    double worst = 0;
    for (int t = 0; t < 2; t++) {
        double ss = 0;
        for (int i = 0; i < 8; i++) ss += (double)x[t * 8 + i] * x[t * 8 + i];
        for (int i = 0; i < 8; i++) {
            double want = x[t * 8 + i] / sqrt(ss / 8 + 1e-5) * g[i];
            double e = fabs(want - y[t * 8 + i]) / (fabs(want) + 1e-6);
            if (e > worst) worst = e;
        }
    }
    CHECK(worst < 1e-6, "rmsnorm rel err %.2e", worst);
    /* RoPE on adjacent pairs: 2 tokens, 2 heads, head_dim 8, rotating the first 6 dims */
    float r[2 * 2 * 8], r0[2 * 2 * 8], freq[3];
    int32_t pos[2] = {3, 17};
    for (int i = 0; i < 32; i++) r0[i] = r[i] = frand();
    cpu_rope_freqs(freq, 6, 10000.0, 1.0, NULL);
    cpu_rope(r, 2, 2, 8, 6, pos, freq);
    worst = 0;
    for (int t = 0; t < 2; t++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 4; i++) {
                const float *a = r0 + (t * 2 + h) * 8 + 2 * i;
                const float *b = r + (t * 2 + h) * 8 + 2 * i;
                double e0, e1;
                if (i < 3) {
                    double th = pos[t] * pow(10000.0, -2.0 * i / 6);
                    e0 = fabs(b[0] - (a[0] * cos(th) - a[1] * sin(th)));
                    e1 = fabs(b[1] - (a[0] * sin(th) + a[1] * cos(th)));
                } else { /* past n_rot: untouched */
                    e0 = fabs(b[0] - a[0]);
                    e1 = fabs(b[1] - a[1]);
                }
                if (e0 > worst) worst = e0;
                if (e1 > worst) worst = e1;
            }
    CHECK(worst < 1e-5, "rope max abs err %.2e", worst);
}

int main(void) {
    test_matmul();
    test_attention();
    test_norm_rope();
    return check_summary("test_backend");
}
