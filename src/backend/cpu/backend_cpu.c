/* backend_cpu.c: CPU ops (matmul over quantized weights, RMSNorm, RoPE, attention, SwiGLU) and the
 * thread pool. Kernels with SIMD variants live in quant.c (the dot products); everything here is
 * plain C whose float reductions run in one fixed order (the build uses -ffp-contract=off and no
 * -ffast-math, so the compiler cannot reorder them). */
#include "backend_cpu.h"

#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "util.h"

/* ---- thread pool ----------------------------------------------------------------------------
 * Workers spin on a generation counter for a short while after each job (decode dispatches a few
 * hundred jobs per token, ~10 µs apart: a condvar wake-up per job would cost more than the job), then
 * sleep on a condvar so an idle pool (a chat waiting for input) burns no CPU. */

#define POOL_SPIN_ITERS 200000

struct tern_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic unsigned gen;   /* incremented per job */
    _Atomic int n_done;     /* workers finished with the current job */
    _Atomic int n_sleeping;
    _Atomic int quit;
    void (*fn)(void *, int, int);
    void *arg;
};

typedef struct { tern_pool *p; int ith; } worker_arg;

/* Busy-wait step: pause for the first iterations, then yield so an oversubscribed machine (more
 * runnable threads than cores) still makes progress instead of burning the time slice. */
static inline void cpu_relax_n(int i) {
    if (i > 2000) { sched_yield(); return; }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *a_) {
    worker_arg *a = a_;
    tern_pool *p = a->p;
    int ith = a->ith;
    free(a);
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen && !atomic_load(&p->quit)) {
            if (++spins < POOL_SPIN_ITERS) { cpu_relax_n(spins); continue; }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->n_sleeping, 1);
            while (atomic_load_explicit(&p->gen, memory_order_acquire) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->n_sleeping, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        if (atomic_load(&p->quit)) return NULL;
        seen = g;
        p->fn(p->arg, ith, p->n);
        atomic_fetch_add_explicit(&p->n_done, 1, memory_order_release);
    }
}

int tern_n_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

tern_pool *tern_pool_new(int n_threads) {
    if (n_threads < 1) n_threads = 1;
    tern_pool *p = tern_xcalloc(1, sizeof *p);
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = tern_xcalloc((size_t)n_threads, sizeof(pthread_t));
    for (int i = 1; i < n_threads; i++) {
        worker_arg *a = tern_xmalloc(sizeof *a);
        a->p = p;
        a->ith = i;
        if (pthread_create(&p->threads[i], NULL, worker_main, a) != 0) {
            free(a);
            p->n = i; /* run with the threads we have */
            break;
        }
    }
    return p;
}

void tern_pool_free(tern_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}

int tern_pool_size(const tern_pool *p) { return p->n; }

void tern_pool_run(tern_pool *p, void (*fn)(void *, int, int), void *arg) {
    if (p->n == 1) { fn(arg, 0, 1); return; }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->n_done, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(arg, 0, p->n);
    for (int i = 0; atomic_load_explicit(&p->n_done, memory_order_acquire) < p->n - 1; i++) cpu_relax_n(i);
}

/* ---- matmul --------------------------------------------------------------------------------- */

static size_t act_row_bytes(enum tern_type t, int64_t n_in) {
    enum tern_type vt = tern_type_vec_dot_type(t);
    return tern_type_row_size(vt, n_in);
}

size_t cpu_matmul_scratch(enum tern_type t, int64_t n_in, int n) { return act_row_bytes(t, n_in) * (size_t)n; }

#define MM_ROW_CHUNK 16 /* rows of W per work item: small enough to balance 2..16 threads */
#define MM_COLS 8       /* activation columns per tern_vec_dot_multi call */
/* Passes of up to this many tokens (one decode step of up to 16 sequences) take decode_chunk_div's long work items,
 * and every row the decode_prefetch: each column's row bits are unchanged (docs/ledger.md 2026-12-04 "the CPU's
 * decode of many sequences"). Longer passes (prefill) keep 16-row items. */
#define MM_DECODE_COLS 16

/* Decode kernel: per-row tern_vec_dot (docs/ledger.md "decode matmul": 4 rows a call (tern_vec_dot_rows) was
 * 1.3x faster with L2-hot rows but 0.63x end to end, and its dispatch arm is gone). tern_config.decode_prefetch:
 * software-prefetch the weight bytes this far ahead of the row being dotted (ledger "decode prefetch");
 * tern_config.decode_chunk_div: decode work items of rows / (threads * D) rows (ledger "decode chunks").
 * tern_config.matmul_ref: the reference matmul, each weight row dequantized to f32 and dotted with the f32
 * activations in double (no activation quantization). Slow; it separates the forward graph's correctness
 * from the 8-bit activation rounding when comparing against a float64 reference (tests/test_model.c);
 * cpu_matmul_set_reference overrides it. */
static int g_prefetch, g_decode_chunk_div, g_matmul_ref, g_config_read;
#define MM_MAX_W 4 /* weights sharing one input in one dispatch (q/k/v, gate/up) */

typedef struct {
    const tern_weight *w[MM_MAX_W];
    float *y[MM_MAX_W];
    int64_t row_end[MM_MAX_W]; /* cumulative row counts: weight i owns rows [row_end[i-1], row_end[i]) */
    int n_w;
    const float *x;
    int n;
    uint8_t *xq;
    size_t xq_row;
    _Atomic int64_t next;  /* next row chunk to take, over the concatenated rows of all weights */
    int64_t chunk;         /* rows per work item */
} mm_job;

static void mm_quantize(void *a_, int ith, int nth) {
    mm_job *a = a_;
    enum tern_type vt = tern_type_vec_dot_type(a->w[0]->type);
    for (int i = ith; i < a->n; i += nth)
        tern_quantize_activation(vt, a->x + (size_t)i * a->w[0]->n_in, a->xq + (size_t)i * a->xq_row, a->w[0]->n_in);
}

/* The matmul settings, read from the table (config.h) once. */
static void matmul_config_init(void) {
    if (g_config_read) return;
    g_config_read = 1;
    g_matmul_ref = tern_cfg()->matmul_ref;
    g_prefetch = tern_cfg()->decode_prefetch;
    g_decode_chunk_div = tern_cfg()->decode_chunk_div;
}

void cpu_matmul_set_reference(int on) {
    matmul_config_init();
    g_matmul_ref = on;
}

static int g_kv_q8_ref = 0;
void cpu_kv_q8_reference_set(int on) { g_kv_q8_ref = on; }
int cpu_kv_q8_reference(void) { return g_kv_q8_ref; }

void cpu_round_q8_0(float *x, int64_t n) {
    uint8_t blk[34]; /* one Q8_0 block: f16 d, 32 int8 */
    if (n % 32) { /* the caller's contract (a KV row is whole Q8_0 blocks): a partial block would stay unrounded */
        fprintf(stderr, "cpu_round_q8_0: n = %lld is not a multiple of 32\n", (long long)n);
        abort();
    }
    for (int64_t i = 0; i + 32 <= n; i += 32) {
        tern_quantize_activation(TERN_TYPE_Q8_0, x + i, blk, 32);
        tern_dequantize_row(TERN_TYPE_Q8_0, blk, x + i, 32);
    }
}

/* The reference arm: rows [r0, r1) dequantized, dotted in double with the f32 activations. */
static void mm_segment_ref(const mm_job *a, const tern_weight *w, float *y, int64_t r0, int64_t r1) {
    float *row = tern_xmalloc(sizeof(float) * (size_t)w->n_in);
    for (int64_t r = r0; r < r1; r++) {
        tern_dequantize_row(w->type, (const uint8_t *)w->data + (size_t)r * w->row_bytes, row, w->n_in);
        for (int c = 0; c < a->n; c++) {
            const float *x = a->x + (size_t)c * w->n_in;
            double s = 0.0;
            for (int64_t k = 0; k < w->n_in; k++) s += (double)row[k] * x[k];
            y[(size_t)c * w->n_out + r] = (float)s;
        }
    }
    free(row);
}

/* Rows [r0, r1) of one weight against the n activation columns; in a decode pass (n <= MM_DECODE_COLS) each row
 * first prefetches the bytes decode_prefetch ahead. */
static void mm_segment(const mm_job *a, const tern_weight *w, float *y, int64_t r0, int64_t r1) {
    const int64_t n_out = w->n_out;
    if (g_matmul_ref) { mm_segment_ref(a, w, y, r0, r1); return; }
    const size_t pf = a->n <= MM_DECODE_COLS ? (size_t)g_prefetch : 0, end = (size_t)n_out * w->row_bytes;
    float tmp[MM_COLS];
    for (int c0 = 0; c0 < a->n; c0 += MM_COLS) {
        int nc = a->n - c0 < MM_COLS ? a->n - c0 : MM_COLS;
        const uint8_t *xq = a->xq + (size_t)c0 * a->xq_row;
        for (int64_t r = r0; r < r1; r++) {
            const void *wr = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
            if (pf && (size_t)(r + 1) * w->row_bytes + pf <= end) {
                const char *p = (const char *)wr + pf;
                for (size_t off = 0; off < w->row_bytes; off += 64) __builtin_prefetch(p + off, 0, 0);
            }
            if (nc == 1) {
                y[(size_t)c0 * n_out + r] = tern_vec_dot(w->type, w->n_in, wr, xq);
                continue;
            }
            tern_vec_dot_multi(w->type, w->n_in, wr, xq, a->xq_row, nc, tmp);
            for (int c = 0; c < nc; c++) y[(size_t)(c0 + c) * n_out + r] = tmp[c];
        }
    }
}

/* Work items are ranges of a->chunk rows over the concatenated rows of all weights; a range may span
 * the end of one weight and the start of the next. */
static void mm_rows(void *a_, int ith, int nth) {
    mm_job *a = a_;
    const int64_t total = a->row_end[a->n_w - 1];
    for (;;) {
        int64_t g = atomic_fetch_add(&a->next, a->chunk);
        if (g >= total) break;
        const int64_t g_end = g + a->chunk < total ? g + a->chunk : total;
        int wi = 0;
        while (g < g_end) {
            while (g >= a->row_end[wi]) wi++;
            const int64_t base = wi ? a->row_end[wi - 1] : 0;
            const int64_t seg_end = g_end < a->row_end[wi] ? g_end : a->row_end[wi];
            mm_segment(a, a->w[wi], a->y[wi], g - base, seg_end - base);
            g = seg_end;
        }
    }
    (void)ith;
    (void)nth;
}

/* ---- kernel-path counters (TERN_TRACE=1) -----------------------------------------------------
 * Proof that an A/B arm dispatched the code it claims (shared/MEASURE.md "Proof the arm ran"): one
 * relaxed atomic increment per matmul dispatch (cpu_matmul_n call, counted before weights that need
 * their own quantization are split off) or attention call, never per row, so the cost is a few ns
 * against dispatches of ~10 µs. With TERN_TRACE=1 in the environment the first count registers an
 * atexit handler that prints the line cpu_trace_print writes. */
static _Atomic uint64_t g_trace[CPU_TRACE_N];
static int g_trace_on = -1; /* -1: environment not read yet */
static void trace_atexit(void) { cpu_trace_print(stderr); }

static inline void trace_count(enum cpu_trace_path k) {
    if (g_trace_on < 0) {
        g_trace_on = tern_cfg()->trace ? 1 : 0;
        if (g_trace_on) atexit(trace_atexit);
    }
    atomic_fetch_add_explicit(&g_trace[k], 1, memory_order_relaxed);
}

uint64_t cpu_trace_count(enum cpu_trace_path k) {
    return k >= 0 && k < CPU_TRACE_N ? atomic_load_explicit(&g_trace[k], memory_order_relaxed) : 0;
}

void cpu_trace_print(FILE *f) {
    fprintf(f, "trace: simd=%s decode_row=%llu prefill_multi=%llu matmul_ref=%llu attention=%llu\n", tern_simd_name(),
            (unsigned long long)cpu_trace_count(CPU_TRACE_DECODE_ROW),
            (unsigned long long)cpu_trace_count(CPU_TRACE_PREFILL_MULTI),
            (unsigned long long)cpu_trace_count(CPU_TRACE_MATMUL_REF),
            (unsigned long long)cpu_trace_count(CPU_TRACE_ATTENTION));
    fflush(f);
}

/* The path mm_segment will take for a dispatch of n activation columns (same tests, same order). */
static enum cpu_trace_path mm_path(int n) {
    if (g_matmul_ref) return CPU_TRACE_MATMUL_REF;
    if (n == 1) return CPU_TRACE_DECODE_ROW;
    return CPU_TRACE_PREFILL_MULTI;
}

static void cpu_matmul_n_(tern_pool *p, int n_w, const tern_weight *const *w, const float *x, int n,
                          float *const *y, void *scratch);

void cpu_matmul_n(tern_pool *p, int n_w, const tern_weight *const *w, const float *x, int n, float *const *y,
                  void *scratch) {
    matmul_config_init();
    trace_count(mm_path(n));
    cpu_matmul_n_(p, n_w, w, x, n, y, scratch);
}

static void cpu_matmul_n_(tern_pool *p, int n_w, const tern_weight *const *w, const float *x, int n,
                          float *const *y, void *scratch) {
    mm_job a = {.n_w = 0, .x = x, .n = n, .xq = scratch, .xq_row = act_row_bytes(w[0]->type, w[0]->n_in)};
    enum tern_type vt = tern_type_vec_dot_type(w[0]->type);
    int64_t rows = 0;
    for (int i = 0; i < n_w; i++) {
        /* weights join one dispatch only if they read the same quantized activations */
        if (i > 0 && (a.n_w == MM_MAX_W || tern_type_vec_dot_type(w[i]->type) != vt || w[i]->n_in != w[0]->n_in)) {
            cpu_matmul_n_(p, n_w - i, w + i, x, n, y + i, (uint8_t *)scratch + (size_t)n * a.xq_row);
            break;
        }
        a.w[a.n_w] = w[i];
        a.y[a.n_w] = y[i];
        rows += w[i]->n_out;
        a.row_end[a.n_w++] = rows;
    }
    atomic_init(&a.next, 0);
    a.chunk = MM_ROW_CHUNK;
    if (n <= MM_DECODE_COLS && g_decode_chunk_div > 0) { /* decode: long sequential streams per thread */
        int64_t c = rows / ((int64_t)tern_pool_size(p) * g_decode_chunk_div);
        a.chunk = c > MM_ROW_CHUNK ? c : MM_ROW_CHUNK;
    }
    if (!g_matmul_ref) { /* (the reference arm reads the f32 activations directly) */
        if (n == 1) mm_quantize(&a, 0, 1);
        else tern_pool_run(p, mm_quantize, &a);
    }
    tern_pool_run(p, mm_rows, &a);
}

void cpu_matmul(tern_pool *p, const tern_weight *w, const float *x, int n, float *y, void *scratch) {
    cpu_matmul_n(p, 1, &w, x, n, &y, scratch);
}

void cpu_get_rows(const tern_weight *w, const int32_t *ids, int n, float *out) {
    for (int i = 0; i < n; i++)
        tern_dequantize_row(w->type, (const uint8_t *)w->data + (size_t)ids[i] * w->row_bytes,
                            out + (size_t)i * w->n_in, w->n_in);
}

/* ---- elementwise ---------------------------------------------------------------------------- */

void cpu_rmsnorm(const float *x, const float *g, float eps, int n, int dim, float *y) {
    for (int t = 0; t < n; t++) {
        const float *xr = x + (size_t)t * dim;
        float *yr = y + (size_t)t * dim;
        double ss = 0.0; /* double: one pass, exact enough, and order-fixed */
        for (int i = 0; i < dim; i++) ss += (double)xr[i] * xr[i];
        float s = (float)(1.0 / sqrt(ss / dim + eps));
        for (int i = 0; i < dim; i++) yr[i] = xr[i] * s * g[i];
    }
}

void cpu_rope_freqs(float *freq, int n_rot, double base, double scale, const float *factors) {
    for (int i = 0; i < n_rot / 2; i++) {
        double f = pow(base, -2.0 * i / n_rot) / scale;
        if (factors) f /= factors[i];
        freq[i] = (float)f;
    }
}

/* YaRN (ggml's rope_yarn, after jquesnelle/yarn): each pair's angle mixes the interpolated frequency (freq / factor)
 * and the original one by a ramp over the pairs between the correction dims of beta_fast = 32 and beta_slow = 1 at
 * the original context; both are linear in the position, so the mix is a frequency table. */
void cpu_rope_freqs_yarn(float *freq, int n_rot, double base, double factor, int orig_ctx, float bf, float bs,
                         const float *factors) {
    const float pi2 = 2 * (float)M_PI;
    float lo = floorf((float)n_rot * logf((float)orig_ctx / (bf * pi2)) / (2 * logf((float)base)));
    float hi = ceilf((float)n_rot * logf((float)orig_ctx / (bs * pi2)) / (2 * logf((float)base)));
    lo = lo > 0 ? lo : 0;
    hi = hi < n_rot - 1 ? hi : (float)(n_rot - 1);
    for (int i = 0; i < n_rot / 2; i++) {
        double f = pow(base, -2.0 * i / n_rot);
        if (factors) f /= factors[i];
        const float y = ((float)i - lo) / (hi - lo > 0.001f ? hi - lo : 0.001f);
        const double mix = 1.0 - (y < 0 ? 0 : y > 1 ? 1 : y); /* 1: the original frequency, 0: interpolated */
        freq[i] = (float)(f / factor * (1.0 - mix) + f * mix);
    }
}

void cpu_rope_ex(float *x, int n, int n_heads, int head_dim, int n_rot, const int32_t *pos, const float *freq, int neox) {
    cpu_rope_ms(x, n, n_heads, head_dim, n_rot, pos, freq, neox, 1.0f);
}

void cpu_rope_ms(float *x, int n, int n_heads, int head_dim, int n_rot, const int32_t *pos, const float *freq, int neox,
                 float mscale) {
    const int half = n_rot / 2;
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < half; i++) {
            double th = (double)pos[t] * freq[i];
            float c = (float)cos(th) * mscale, s = (float)sin(th) * mscale;
            for (int h = 0; h < n_heads; h++) {
                float *v = x + ((size_t)t * n_heads + h) * head_dim;
                float *p0 = neox ? v + i : v + 2 * i, *p1 = neox ? v + i + half : v + 2 * i + 1;
                float a = *p0, b = *p1;
                *p0 = a * c - b * s;
                *p1 = a * s + b * c;
            }
        }
    }
}

void cpu_rope(float *x, int n, int n_heads, int head_dim, int n_rot, const int32_t *pos, const float *freq) {
    cpu_rope_ex(x, n, n_heads, head_dim, n_rot, pos, freq, 0);
}

void cpu_swiglu(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void cpu_geglu(float *g, const float *u, int64_t n) {
    /* GELU, tanh form (Hendrycks & Gimpel 2016, eq. for the approximation), as ggml_gelu */
    const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        g[i] = 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x))) * u[i];
    }
}

void cpu_add(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

/* ---- attention ------------------------------------------------------------------------------
 * KV cache in f16 (llama.cpp's default --cache-type-k/v f16): half the bytes of f32 per position.
 * q and the probabilities stay f32 (rounding them to f16 as llama.cpp's non-flash CPU path does did not bring
 * tern closer to llama.cpp's greedy goldens: docs/ledger.md "KV cache f16"; that arm is gone).
 * Float reductions follow one order on every SIMD path (quant.c's "lanes8" order): the dot has 8
 * lanes, lane k accumulating elements i = k mod 8 by fmaf over the leading multiple of 8, combined
 * by ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), tail by fmaf; the V sum is o[d] = fmaf(p_j, v_j[d], o[d])
 * in position order. The AVX2 variant runs exactly these operations 8 lanes at a time (vfmadd is the
 * correctly rounded fmaf, vcvtph2ps/vcvtps2ph are exact/round-to-nearest-even like util.c). */

#define ATTN_MAX_HD 512

typedef struct {
    const float *q;
    const uint16_t *kc, *vc;
    int n, n_head, n_head_kv, hd;
    const int32_t *pos, *bt, *bt_off;
    int lbs, window, scratch_len;
    float scale;
    float *out, *scratch;
    int avx2;
} attn_job;

static float attn_dot_scalar(const float *a, const uint16_t *b, int n) {
    float l[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) l[k] = fmaf(a[i + k], tern_fp16_to_fp32(b[i + k]), l[k]);
    float r = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
    for (; i < n; i++) r = fmaf(a[i], tern_fp16_to_fp32(b[i]), r);
    return r;
}

static void attn_axpy_scalar(float *o, float p, const uint16_t *v, int n) {
    for (int d = 0; d < n; d++) o[d] = fmaf(p, tern_fp16_to_fp32(v[d]), o[d]);
}

static void f32_to_f16_scalar(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = tern_fp32_to_fp16(x[i]);
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTN_AVX2 __attribute__((target("avx2,fma,f16c")))
ATTN_AVX2 static float attn_dot_avx2(const float *a, const uint16_t *b, int n) {
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i))), acc);
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc)); /* l_k + l_{k+4} */
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));                                           /* (0+4)+(2+6), (1+5)+(3+7) */
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    float s = _mm_cvtss_f32(r);
    for (; i < n; i++) s = fmaf(a[i], tern_fp16_to_fp32(b[i]), s);
    return s;
}

ATTN_AVX2 static void attn_axpy_avx2(float *o, float p, const uint16_t *v, int n) {
    const __m256 pv = _mm256_set1_ps(p);
    int d = 0;
    for (; d + 8 <= n; d += 8) {
        const __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + d)));
        _mm256_storeu_ps(o + d, _mm256_fmadd_ps(pv, vv, _mm256_loadu_ps(o + d)));
    }
    for (; d < n; d++) o[d] = fmaf(p, tern_fp16_to_fp32(v[d]), o[d]);
}

ATTN_AVX2 static void f32_to_f16_avx2(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) y[i] = tern_fp32_to_fp16(x[i]);
}
#endif

static int use_avx2(void) { return tern_simd_level() >= 1; }

void cpu_f32_to_f16(const float *x, uint16_t *y, int64_t n) {
#if defined(__x86_64__) || defined(__i386__)
    if (use_avx2()) { f32_to_f16_avx2(x, y, n); return; }
#endif
    f32_to_f16_scalar(x, y, n);
}

static void attn_rows(void *a_, int ith, int nth) {
    attn_job *a = a_;
    const int hd = a->hd, group = a->n_head / a->n_head_kv;
    const size_t kv_stride = (size_t)a->n_head_kv * hd;
    const int bmask = (1 << a->lbs) - 1;
    float (*dot)(const float *, const uint16_t *, int) = attn_dot_scalar;
    void (*axpy)(float *, float, const uint16_t *, int) = attn_axpy_scalar;
#if defined(__x86_64__) || defined(__i386__)
    if (a->avx2) { dot = attn_dot_avx2; axpy = attn_axpy_avx2; }
#endif
    float qh[ATTN_MAX_HD];
    for (int job = ith; job < a->n * a->n_head; job += nth) {
        int t = job / a->n_head, h = job % a->n_head, hk = h / group;
        const int p = a->pos[t], j0 = a->window > 0 && p - a->window + 1 > 0 ? p - a->window + 1 : 0, n_kv = p + 1 - j0;
        const int32_t *bt = a->bt ? a->bt + a->bt_off[t] : NULL;
#define KV_ROW(j) ((size_t)(bt ? ((size_t)bt[(j) >> a->lbs] << a->lbs) + ((j) & bmask) : (size_t)(j)) * kv_stride)
        const float *q = a->q + ((size_t)t * a->n_head + h) * hd;
        memcpy(qh, q, sizeof(float) * hd);
        float *sc = a->scratch + (size_t)ith * a->scratch_len;
        float mx = -INFINITY;
        for (int i = 0; i < n_kv; i++) {
            sc[i] = dot(qh, a->kc + KV_ROW(j0 + i) + (size_t)hk * hd, hd) * a->scale;
            if (sc[i] > mx) mx = sc[i];
        }
        double sum = 0.0;
        for (int i = 0; i < n_kv; i++) {
            sc[i] = expf(sc[i] - mx);
            sum += sc[i];
        }
        const float inv = (float)(1.0 / sum);
        float *o = a->out + ((size_t)t * a->n_head + h) * hd;
        memset(o, 0, sizeof(float) * hd);
        for (int i = 0; i < n_kv; i++)
            axpy(o, sc[i] * inv, a->vc + KV_ROW(j0 + i) + (size_t)hk * hd, hd);
#undef KV_ROW
    }
}

void cpu_attention_paged(tern_pool *p, const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                         const int32_t *bt, const int32_t *bt_off, int lbs, int window, int n_head, int n_head_kv, int hd,
                         float scale, float *out, float *scratch, int scratch_len) {
    trace_count(CPU_TRACE_ATTENTION);
    attn_job a = {q, kc, vc, n, n_head, n_head_kv, hd, pos, bt, bt_off, lbs, window, scratch_len, scale, out, scratch,
                  use_avx2()};
    tern_pool_run(p, attn_rows, &a);
}

void cpu_attention(tern_pool *p, const float *q, const uint16_t *kc, const uint16_t *vc, int n, int pos0, int n_head,
                   int n_head_kv, int hd, float scale, float *out, float *scratch) {
    int32_t *pos = tern_xmalloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    for (int t = 0; t < n; t++) pos[t] = pos0 + t;
    cpu_attention_paged(p, q, kc, vc, n, pos, NULL, NULL, 0, 0, n_head, n_head_kv, hd, scale, out, scratch, pos0 + n);
    free(pos);
}
