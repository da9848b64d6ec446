/* cli/roofline.c: `tern roofline`: the ceilings of the device in hand, and tern's own kernels as a
 * percentage of the floor those ceilings give (shared/MEASURE.md "Before a kernel: the two ceilings").
 *
 *   tern roofline [--device cuda|cpu] [-m MODEL] [-o md|json] [-t THREADS] [--quick] [--prefill-n N] [--receipt FILE]
 *
 * Ceilings, measured in this run:
 *   cpu:  read   all threads sum a buffer (1 GiB; --quick 256 MiB) with AVX2 loads      GB/s
 *         copy   memcpy of one chunk per thread (512 MiB -> 512 MiB), bytes read + written  GB/s
 *         fma    per thread 12 independent _mm256_fmadd_ps chains, 2 flops per lane       GFLOP/s
 *         int8   per thread 12 independent vpmaddubsw chains (the quantized dots' multiply; zmm where tern's SIMD
 *                is avx512 or avx512vnni; on the VNNI paths vpdpbusd chains too, the faster kept), 2 ops per byte
 *                product                                                                    Gop/s
 *   cuda: read   tcu_read_stream over 4 GiB (less if memory is short), 16-byte loads       GB/s
 *         copy   tcu_copy_stream 1 GiB -> 1 GiB, bytes read + written                      GB/s
 *         boundary  288 dependent steps in one CUDA graph: a kernel a step (tcu_boundary_chain, with and
 *                without programmatic dependent launch), or one kernel with a grid barrier a step
 *                (tcu_barrier_chain): the latency floor a step                                  us
 *         matmul tcu_gemm_bf16 / tcu_gemm_f16 at 4096³ and 8192³ (and with -m at the model's
 *                shapes for n = --prefill-n, default 512), operands uniform in [-1, 1) (never zeros)  TFLOP/s
 * Kernels (-m MODEL; each distinct (type, n_in, n_out) among layer 0's wq wk wv wo w_gate w_up w_down
 * and the output head):
 *   cpu:  cpu_matmul n = 1   floor = bytes / read                       (bw)
 *         cpu_matmul n = 64  floor = max(flops / int8 (a quantized type; fma: f32, f16, bf16), bytes / read)
 *   cuda: tcu_gemv_dp4a (Q4_0, Q8_0) / tcu_gemv, the decode GEMV   floor = bytes / read   (bw)
 *         tcu_dequant_f16 + tcu_gemm_f16, n = --prefill-n: floor = max(flops / f16 matmul at that shape,
 *         bytes / read); then tcu_gemm_f16 alone on that dequantized weight (the same operand data)
 *         tcu_attention decode at pos 4095: floor = KV bytes / read (bw); prefill n = --prefill-n: floor = causal
 *         FLOPs 4·S²·D·Hq/2 / best square f16 matmul rate (flops)
 * "bytes" counts each input read once and each output written once (the weight in its stored format, f32
 * activations). Weights (and the decode KV cache) are rotated over enough copies that the working set is
 * at least 4x the last-level cache (cpu: 2x L3, at most 512 MiB; --quick 64 MiB), so a bw floor is met from
 * DRAM, not cache (MEASURE.md "Caches lie"); each kernel row says the working set.
 * Timing: warm-up, then batches of calls (enough calls that a batch takes ~1 ms on the GPU, ~20-100 ms on
 * the CPU; cudaEvents / wall clock around the batch), time per call = median over batches (>= 10 on the
 * GPU, 5 with --quick on the CPU).
 * Output: markdown (ceilings, then kernels) or -o json; --receipt FILE also writes the JSON there. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <immintrin.h>

#include "backend_cpu.h"
#include "commands.h"
#include "model.h"
#include "quant.h"
#include "tern.h"
#include "util.h"
#ifdef TERN_CUDA
#include "cuda/tcu.h"
#endif

#define RF_SEED 0x726f6f666c696e65ULL /* "roofline" */
#define RF_MAX_ROWS 96
#define RF_MAX_SHAPES 8

/* ---- the report ------------------------------------------------------------------------------ */

typedef struct {
    char name[48]; /* "read", "copy", "fma", "matmul_bf16 8192x8192x8192" */
    double value;  /* NaN: not measured (the reason in how) */
    const char *unit;
    char how[200];
} rf_ceiling;

typedef struct {
    char kernel[48];  /* "cpu_matmul n=1", "tcu_gemv", "attention decode" */
    char weights[64]; /* "wq,wo" or "" */
    char type[16];    /* stored weight type or "f16" */
    int n;            /* tokens */
    int64_t n_in, n_out;
    double bytes, flops;
    double time_us, floor_us; /* time NaN: not run (note says why) */
    const char *floor_kind;   /* "bw" or "flops" */
    char note[224];
} rf_kernel;

typedef struct {
    const char *backend, *model_path, *model_desc;
    char dev_name[256];
    int threads, cores, quick;
    int prefill_n;                                               /* cuda: n of the prefill GEMM and attention rows */
    long long llc_bytes;                                         /* cpu: L3; cuda: L2 */
    int sm_count, sm_clock_mhz, mem_clock_mhz, bus_width_bits;   /* cuda */
    long long total_mem_bytes;                                   /* cuda */
    int cuda_runtime, cuda_driver;                               /* cuda */
    rf_ceiling ceil[RF_MAX_ROWS];
    int n_ceil;
    rf_kernel kern[RF_MAX_ROWS];
    int n_kern;
} rf_report;

static rf_ceiling *add_ceiling(rf_report *r, const char *name, double value, const char *unit) {
    if (r->n_ceil == RF_MAX_ROWS) cli_die("roofline: too many ceilings");
    rf_ceiling *c = &r->ceil[r->n_ceil++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->value = value;
    c->unit = unit;
    return c;
}

static rf_kernel *add_kernel(rf_report *r, const char *kernel, const char *weights, const char *type, int n,
                             int64_t n_in, int64_t n_out) {
    if (r->n_kern == RF_MAX_ROWS) cli_die("roofline: too many kernel rows");
    rf_kernel *k = &r->kern[r->n_kern++];
    memset(k, 0, sizeof *k);
    snprintf(k->kernel, sizeof k->kernel, "%s", kernel);
    snprintf(k->weights, sizeof k->weights, "%s", weights);
    snprintf(k->type, sizeof k->type, "%s", type);
    k->n = n;
    k->n_in = n_in;
    k->n_out = n_out;
    k->time_us = k->floor_us = NAN;
    k->floor_kind = "bw";
    return k;
}

/* floor = max(bytes / bw, flops / peak) in µs; bw in GB/s, peak in GFLOP/s (<= 0 or NaN: that term absent). */
static void set_floor(rf_kernel *k, double bw_gbs, double peak_gflops) {
    const double t_bw = bw_gbs > 0 ? k->bytes / (bw_gbs * 1e9) * 1e6 : 0;
    const double t_fl = peak_gflops > 0 && k->flops > 0 ? k->flops / (peak_gflops * 1e9) * 1e6 : 0;
    k->floor_us = t_fl > t_bw ? t_fl : t_bw;
    k->floor_kind = t_fl > t_bw ? "flops" : "bw";
}

/* ---- timing ---------------------------------------------------------------------------------- */

/* One call of the op under test; i counts calls from 0 across warm-up and timed batches (rotation index). */
typedef void (*rf_fn)(void *arg, long i);

/* CPU: median seconds per call. warm-up calls, a one-call estimate, then `reps` batches of calls sized so a
 * batch lasts about target_s, each timed by the wall clock. */
static double time_cpu(rf_fn fn, void *arg, int reps, double target_s) {
    long i = 0;
    fn(arg, i++); /* warm-up: page faults, pool wake-up */
    double t0 = tern_time_s();
    fn(arg, i++);
    const double est = tern_time_s() - t0;
    long batch = est > 0 ? (long)ceil(target_s / est) : 1000;
    if (batch < 1) batch = 1;
    if (batch > 100000) batch = 100000;
    double *s = tern_xmalloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        t0 = tern_time_s();
        for (long b = 0; b < batch; b++) fn(arg, i++);
        s[r] = (tern_time_s() - t0) / (double)batch;
    }
    double med = cli_median(s, reps);
    free(s);
    return med;
}

/* ---- cpu probes ------------------------------------------------------------------------------ */

#define TARGET_AVX2 __attribute__((target("avx2,fma")))

static int g_avx2; /* tern's SIMD choice (quant.c): "avx2" or "avx512" (AVX2+FMA+F16C); TERN_SIMD=scalar turns it off */

TARGET_AVX2 static float sum_avx2(const float *p, size_t n) { /* n a multiple of 64, p 32-byte aligned */
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 64) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

static float sum_scalar(const float *p, size_t n) { /* 8 chains; the compiler may vectorise with SSE2 */
    float a[8] = {0};
    for (size_t i = 0; i < n; i += 8)
        for (int k = 0; k < 8; k++) a[k] += p[i + k];
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

typedef struct {
    tern_pool *pool;
    float *buf;           /* read: (n) floats; copy: src */
    char *dst;            /* copy */
    size_t n;             /* read: floats (multiple of 64 * threads); copy: bytes */
    long iters;           /* fma, int8: iterations per thread */
    int int8;             /* with iters: the int8 probe, not fma */
    float part[1024];     /* per-thread results (keep the work alive) */
} cpu_probe;

static void read_chunk(void *arg, int ith, int nth) {
    cpu_probe *p = arg;
    const size_t blocks = p->n / 64, lo = blocks * (size_t)ith / (size_t)nth * 64,
                 hi = blocks * (size_t)(ith + 1) / (size_t)nth * 64;
    p->part[ith] = g_avx2 ? sum_avx2(p->buf + lo, hi - lo) : sum_scalar(p->buf + lo, hi - lo);
}

static void copy_chunk(void *arg, int ith, int nth) {
    cpu_probe *p = arg;
    const size_t lines = p->n / 64, lo = lines * (size_t)ith / (size_t)nth * 64,
                 hi = lines * (size_t)(ith + 1) / (size_t)nth * 64;
    memcpy(p->dst + lo, (const char *)p->buf + lo, hi - lo);
}

/* First touch by the thread that will read the chunk (NUMA placement), non-zero finite floats (0x3f3f3f3f
 * = 0.747). */
static void fill_chunk(void *arg, int ith, int nth) {
    cpu_probe *p = arg;
    const size_t bytes = p->dst ? p->n : p->n * sizeof(float), lines = bytes / 64,
                 lo = lines * (size_t)ith / (size_t)nth * 64, hi = lines * (size_t)(ith + 1) / (size_t)nth * 64;
    memset((char *)p->buf + lo, 0x3f, hi - lo);
    if (p->dst) memset(p->dst + lo, 0x3f, hi - lo);
}

#define FMA_CHAINS 12 /* latency 4-5 cycles x 2 FMA ports on Zen 2-4 / Skylake+: >= 10 chains keep both busy */

TARGET_AVX2 static float fma_avx2(long iters, float seed) {
    /* x = x * b + c converges to c / (1 - b) = 1: no overflow, no denormals, nothing the compiler can fold */
    const __m256 b = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f * seed);
    __m256 x0 = _mm256_set1_ps(seed), x1 = _mm256_set1_ps(seed + 1), x2 = _mm256_set1_ps(seed + 2),
           x3 = _mm256_set1_ps(seed + 3), x4 = _mm256_set1_ps(seed + 4), x5 = _mm256_set1_ps(seed + 5),
           x6 = _mm256_set1_ps(seed + 6), x7 = _mm256_set1_ps(seed + 7), x8 = _mm256_set1_ps(seed + 8),
           x9 = _mm256_set1_ps(seed + 9), x10 = _mm256_set1_ps(seed + 10), x11 = _mm256_set1_ps(seed + 11);
    for (long i = 0; i < iters; i++) {
        x0 = _mm256_fmadd_ps(x0, b, c); x1 = _mm256_fmadd_ps(x1, b, c); x2 = _mm256_fmadd_ps(x2, b, c);
        x3 = _mm256_fmadd_ps(x3, b, c); x4 = _mm256_fmadd_ps(x4, b, c); x5 = _mm256_fmadd_ps(x5, b, c);
        x6 = _mm256_fmadd_ps(x6, b, c); x7 = _mm256_fmadd_ps(x7, b, c); x8 = _mm256_fmadd_ps(x8, b, c);
        x9 = _mm256_fmadd_ps(x9, b, c); x10 = _mm256_fmadd_ps(x10, b, c); x11 = _mm256_fmadd_ps(x11, b, c);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                             _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0] + v[7];
}

/* Without AVX2: mul + add chains (2 flops per element), whatever the compiler makes of them. */
static float fma_scalar(long iters, float seed) {
    float x[FMA_CHAINS * 4];
    for (int k = 0; k < FMA_CHAINS * 4; k++) x[k] = seed + (float)k;
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < FMA_CHAINS * 4; k++) x[k] = x[k] * 0.999f + 0.001f;
    float s = 0;
    for (int k = 0; k < FMA_CHAINS * 4; k++) s += x[k];
    return s;
}

static void fma_chunk(void *arg, int ith, int nth) {
    cpu_probe *p = arg;
    p->part[ith] = g_avx2 ? fma_avx2(p->iters, (float)(ith + 1)) : fma_scalar(p->iters, (float)(ith + 1));
}

/* The quantized dots' multiply (quant.c: every Q4/Q5/Q8 and K-quant dot multiplies its bytes with vpmaddubsw, u8 x s8
 * pairs summed into s16): INT8_CHAINS independent chains of it a thread, each result fed back as the next unsigned
 * operand (saturating, never constant: nothing for the compiler to fold or hoist). 32 byte products an AVX2
 * instruction, 64 an AVX-512 one (tern_simd_level() 2, the width the dots run at); a product counts 2 ops, a multiply
 * and an add, as a matrix's 2 FLOPs an element do. The dots spend more instructions a product than this (unpacking,
 * the s16 -> s32 sum, the scale's FMA), so it is a ceiling they stay under, not a rate they reach. */
#define INT8_CHAINS 12
#define TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw")))

TARGET_AVX2 static int int8_avx2(long iters, int seed) {
    const __m256i b = _mm256_set1_epi8((char)(3 + seed));
    __m256i x[INT8_CHAINS];
    for (int k = 0; k < INT8_CHAINS; k++) x[k] = _mm256_set1_epi8((char)(seed + k + 1));
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < INT8_CHAINS; k++) x[k] = _mm256_maddubs_epi16(x[k], b);
    __m256i s = x[0];
    for (int k = 1; k < INT8_CHAINS; k++) s = _mm256_xor_si256(s, x[k]);
    return _mm256_extract_epi32(s, 0) ^ _mm256_extract_epi32(s, 7);
}

TARGET_AVX512 static int int8_avx512(long iters, int seed) {
    const __m512i b = _mm512_set1_epi8((char)(3 + seed));
    __m512i x[INT8_CHAINS];
    for (int k = 0; k < INT8_CHAINS; k++) x[k] = _mm512_set1_epi8((char)(seed + k + 1));
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < INT8_CHAINS; k++) x[k] = _mm512_maddubs_epi16(x[k], b);
    __m512i s = x[0];
    for (int k = 1; k < INT8_CHAINS; k++) s = _mm512_xor_si512(s, x[k]);
    return _mm512_reduce_add_epi32(s);
}

/* On the VNNI paths (quant.c's avx512vnni: zmm and ymm, EVEX; avxvnni: ymm, VEX) the 32-block dots multiply with
 * vpdpbusd instead (64 / 32 byte products an instruction, summed into the accumulator): chains of it, the accumulator
 * fed back; the int8 ceiling is the faster of the two probes. */
TARGET_AVX512 static int int8_dp_avx512(long iters, int seed) {
    const __m512i a = _mm512_set1_epi8((char)(3 + seed)), b = _mm512_set1_epi8((char)(5 + seed));
    __m512i x[INT8_CHAINS];
    for (int k = 0; k < INT8_CHAINS; k++) x[k] = _mm512_set1_epi32(seed + k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < INT8_CHAINS; k++) __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+v"(x[k]) : "v"(a), "v"(b));
    __m512i s = x[0];
    for (int k = 1; k < INT8_CHAINS; k++) s = _mm512_xor_si512(s, x[k]);
    return _mm512_reduce_add_epi32(s);
}
TARGET_AVX2 static int int8_dp_avx2(long iters, int seed) { /* VEX (AVX-VNNI) */
    const __m256i a = _mm256_set1_epi8((char)(3 + seed)), b = _mm256_set1_epi8((char)(5 + seed));
    __m256i x[INT8_CHAINS];
    for (int k = 0; k < INT8_CHAINS; k++) x[k] = _mm256_set1_epi32(seed + k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < INT8_CHAINS; k++) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(x[k]) : "x"(a), "x"(b));
    __m256i s = x[0];
    for (int k = 1; k < INT8_CHAINS; k++) s = _mm256_xor_si256(s, x[k]);
    return _mm256_extract_epi32(s, 0) ^ _mm256_extract_epi32(s, 7);
}
/* 64: avx512vnni's zmm vpdpbusd; 32: avxvnni's ymm one; 0: no VNNI path */
static int dp_lanes(void) {
    const char *n = tern_simd_name();
    return !strcmp(n, "avx512vnni") ? 64 : !strcmp(n, "avxvnni") ? 32 : 0;
}

/* Without AVX2 the dots are scalar C: a multiply and an add an element, as fma_scalar's chains. */
static int int8_scalar(long iters, int seed) {
    int32_t x[INT8_CHAINS * 4];
    for (int k = 0; k < INT8_CHAINS * 4; k++) x[k] = seed + k;
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < INT8_CHAINS * 4; k++) x[k] = (int32_t)((int8_t)x[k] * 3 + 1);
    int32_t s = 0;
    for (int k = 0; k < INT8_CHAINS * 4; k++) s ^= x[k];
    return s;
}

/* products an instruction of the probe (2 ops each) */
static int int8_lanes(void) { return tern_simd_level() >= 2 ? 64 : g_avx2 ? 32 : 1; }

static void int8_chunk(void *arg, int ith, int nth) {
    cpu_probe *p = arg;
    if (p->int8 == 2) {
        p->part[ith] = (float)(dp_lanes() == 64 ? int8_dp_avx512(p->iters, ith) : int8_dp_avx2(p->iters, ith));
        return;
    }
    const int l = int8_lanes();
    p->part[ith] = (float)(l == 64 ? int8_avx512(p->iters, ith) : l == 32 ? int8_avx2(p->iters, ith) : int8_scalar(p->iters, ith));
}

static void probe_run(void *arg, long i) {
    cpu_probe *p = arg;
    tern_pool_run(p->pool, p->iters ? (p->int8 ? int8_chunk : fma_chunk) : p->dst ? copy_chunk : read_chunk, p);
}

/* ---- cpu matmul at the model's shapes -------------------------------------------------------- */

typedef struct {
    const tern_weight *w; /* distinct (type, n_in, n_out) */
    char names[64];
} rf_shape;

/* Layer 0's wq wk wv wo w_gate w_up w_down and the output head, deduplicated by (type, n_in, n_out). */
static int model_shapes(const tern_model *m, rf_shape *out) {
    const tern_layer *l = &m->layers[0];
    const struct { const tern_weight *w; const char *name; } all[] = {
        {&l->wq, "wq"}, {&l->wk, "wk"}, {&l->wv, "wv"}, {&l->wo, "wo"},
        {&l->w_gate, "w_gate"}, {&l->w_up, "w_up"}, {&l->w_down, "w_down"}, {&m->output, "output"}};
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const tern_weight *w = all[i].w;
        int j = 0;
        while (j < n && !(out[j].w->type == w->type && out[j].w->n_in == w->n_in && out[j].w->n_out == w->n_out)) j++;
        if (j == n) {
            if (n == RF_MAX_SHAPES) break;
            out[n].w = w;
            out[n].names[0] = 0;
            n++;
        }
        size_t len = strlen(out[j].names);
        snprintf(out[j].names + len, sizeof out[j].names - len, "%s%s", len ? "," : "", all[i].name);
    }
    return n;
}


typedef struct {
    tern_pool *pool;
    tern_weight *copies;
    long n_copies;
    const float *x;
    float *y;
    int n;
    void *scratch;
} cpu_mm;

static void cpu_mm_run(void *arg, long i) {
    cpu_mm *a = arg;
    cpu_matmul(a->pool, &a->copies[i % a->n_copies], a->x, a->n, a->y, a->scratch);
}

static long long cpu_llc_bytes(void) {
    long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v <= 0) v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? v : 32ll << 20;
}

static void cpu_kernels(rf_report *r, tern_model *m, tern_pool *pool, double read_gbs, double fma_gflops,
                        double int8_gops) {
    rf_shape shapes[RF_MAX_SHAPES];
    const int n_shapes = model_shapes(m, shapes);
    /* working set of the rotated weight copies: 2x L3, capped (a 2-vCPU VM reports the whole socket's L3) */
    long long ws = 2 * r->llc_bytes;
    if (ws > (512ll << 20)) ws = 512ll << 20;
    if (ws < (64ll << 20)) ws = 64ll << 20;
    if (r->quick) ws = 64ll << 20;
    const int ns[2] = {1, 64};
    for (int si = 0; si < n_shapes; si++) {
        const tern_weight *w = shapes[si].w;
        const size_t wb = w->row_bytes * (size_t)w->n_out, stride = (wb + 63) & ~(size_t)63;
        long n_copies = (long)((ws + (long long)wb - 1) / (long long)wb);
        if (n_copies < 1) n_copies = 1;
        char *buf = aligned_alloc(64, stride * (size_t)n_copies);
        if (!buf) cli_die("out of memory for %ld copies of a %zu-byte weight", n_copies, wb);
        tern_weight *copies = tern_xmalloc(sizeof(tern_weight) * (size_t)n_copies);
        for (long c = 0; c < n_copies; c++) {
            memcpy(buf + stride * (size_t)c, w->data, wb);
            copies[c] = *w;
            copies[c].data = buf + stride * (size_t)c;
        }
        for (int ni = 0; ni < 2; ni++) {
            const int n = ns[ni];
            float *x = tern_xmalloc(sizeof(float) * (size_t)n * (size_t)w->n_in);
            float *y = tern_xmalloc(sizeof(float) * (size_t)n * (size_t)w->n_out);
            uint64_t s = RF_SEED;
            for (int64_t i = 0; i < (int64_t)n * w->n_in; i++) { /* uniform in [-1, 1): never zeros */
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                x[i] = (float)(s >> 40) * (2.0f / 16777216.0f) - 1.0f;
            }
            void *scratch = tern_xmalloc(cpu_matmul_scratch(w->type, w->n_in, n) + 64);
            cpu_mm a = {pool, copies, n_copies, x, y, n, scratch};
            const double sec = time_cpu(cpu_mm_run, &a, r->quick ? 5 : 10, r->quick ? 0.02 : 0.1);
            char kname[48];
            snprintf(kname, sizeof kname, "cpu_matmul n=%d", n);
            rf_kernel *k = add_kernel(r, kname, shapes[si].names, tern_type_name(w->type), n, w->n_in, w->n_out);
            k->bytes = (double)wb + 4.0 * n * (double)(w->n_in + w->n_out);
            k->flops = 2.0 * n * (double)w->n_in * (double)w->n_out;
            k->time_us = sec * 1e6;
            /* a quantized matrix multiplies bytes (the int8 ceiling), a float one floats (the FMA ceiling) */
            const int fl = w->type == TERN_TYPE_F32 || w->type == TERN_TYPE_F16 || w->type == TERN_TYPE_BF16;
            set_floor(k, read_gbs, n > 1 ? (fl ? fma_gflops : int8_gops) : 0);
            snprintf(k->note, sizeof k->note, "%ld rotated copies, %.0f MiB", n_copies,
                     (double)n_copies * (double)wb / 1048576.0);
            free(scratch);
            free(x);
            free(y);
        }
        free(copies);
        free(buf);
    }
}

static void cpu_model_name(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        snprintf(buf, n, "%s", v);
        break;
    }
    fclose(f);
}

/* The ceilings (read, copy unless !with_copy, fma, int8) as rows of r; their values in GB/s, GFLOP/s, Gop/s. */
static void cpu_ceilings(rf_report *r, tern_pool *pool, int with_copy, double *read_gbs, double *fma_gflops,
                         double *int8_gops) {
    g_avx2 = tern_simd_level() >= 1;
    const int reps = r->quick ? 5 : 10;

    /* (1) read-only bandwidth */
    cpu_probe *p = tern_xcalloc(1, sizeof *p);
    p->pool = pool;
    size_t bytes = r->quick ? (size_t)256 << 20 : (size_t)1 << 30;
    p->buf = aligned_alloc(64, bytes);
    if (!p->buf) cli_die("out of memory for a %zu MiB read buffer", bytes >> 20);
    p->n = bytes / sizeof(float);
    tern_pool_run(pool, fill_chunk, p);
    double sec = time_cpu(probe_run, p, reps, 0);
    *read_gbs = (double)bytes / sec / 1e9;
    snprintf(add_ceiling(r, "read", *read_gbs, "GB/s")->how, sizeof r->ceil[0].how,
             "%d threads sum %zu MiB (%s loads), median of %d", r->threads, bytes >> 20, g_avx2 ? "AVX2" : "scalar",
             reps);
    free(p->buf);
    p->buf = NULL;

    /* (2) copy bandwidth: bytes read + written */
    if (with_copy) {
        bytes = r->quick ? (size_t)128 << 20 : (size_t)512 << 20;
        p->buf = aligned_alloc(64, bytes);
        p->dst = aligned_alloc(64, bytes);
        if (!p->buf || !p->dst) cli_die("out of memory for %zu MiB copy buffers", bytes >> 20);
        p->n = bytes;
        tern_pool_run(pool, fill_chunk, p);
        sec = time_cpu(probe_run, p, reps, 0);
        if (memcmp(p->dst, p->buf, 4096) || memcmp(p->dst + bytes - 4096, (char *)p->buf + bytes - 4096, 4096))
            cli_die("roofline: the copy probe's destination differs from its source");
        snprintf(add_ceiling(r, "copy", 2.0 * (double)bytes / sec / 1e9, "GB/s")->how, sizeof r->ceil[0].how,
                 "%d threads memcpy %zu MiB -> %zu MiB, bytes read + written, median of %d", r->threads, bytes >> 20,
                 bytes >> 20, reps);
        free(p->buf);
        free(p->dst);
        p->buf = NULL;
        p->dst = NULL;
    }

    /* (3) FMA peak */
    p->iters = r->quick ? 2000000 : 10000000;
    sec = time_cpu(probe_run, p, reps, 0);
    const double flops_per = g_avx2 ? FMA_CHAINS * 8 * 2 : FMA_CHAINS * 4 * 2;
    *fma_gflops = (double)r->threads * (double)p->iters * flops_per / sec / 1e9;
    snprintf(add_ceiling(r, "fma", *fma_gflops, "GFLOP/s")->how, sizeof r->ceil[0].how,
             "%d threads x %d independent %s chains, 2 flops per lane, median of %d", r->threads, FMA_CHAINS,
             g_avx2 ? "_mm256_fmadd_ps" : "scalar mul+add (no AVX2)", reps);

    /* (4) int8 peak: the quantized dots' multiply */
    p->int8 = 1;
    sec = time_cpu(probe_run, p, reps, 0);
    const int lanes = int8_lanes();
    *int8_gops = (double)r->threads * (double)p->iters * (lanes == 1 ? INT8_CHAINS * 4 : INT8_CHAINS * lanes) * 2.0 / sec / 1e9;
    const char *what = lanes == 64 ? "_mm512_maddubs_epi16" : lanes == 32 ? "_mm256_maddubs_epi16" : "scalar int8 mul+add";
    char dp[96] = "";
    const int dl = dp_lanes();
    if (dl) { /* the VNNI paths: vpdpbusd too, the faster of the two */
        p->int8 = 2;
        sec = time_cpu(probe_run, p, reps, 0);
        const double g = (double)r->threads * (double)p->iters * INT8_CHAINS * dl * 2.0 / sec / 1e9;
        snprintf(dp, sizeof dp, " (%.1f Gop/s) and vpdpbusd (%s, %.1f Gop/s), the faster", *int8_gops,
                 dl == 64 ? "zmm" : "ymm, VEX", g);
        if (g > *int8_gops) *int8_gops = g;
    }
    snprintf(add_ceiling(r, "int8", *int8_gops, "Gop/s")->how, sizeof r->ceil[0].how,
             "%d threads x %d independent chains of %s%s, 2 ops per byte product, median of %d", r->threads,
             INT8_CHAINS, what, dp, reps);
    free(p);
}

static void run_cpu(rf_report *r, tern_model *m) {
    r->backend = "cpu";
    cpu_model_name(r->dev_name, sizeof r->dev_name);
    r->cores = tern_n_cores();
    r->llc_bytes = cpu_llc_bytes();
    tern_pool *pool = tern_pool_new(r->threads);
    if (!pool) cli_die("cannot start %d threads", r->threads);
    double read_gbs, fma_gflops, int8_gops;
    cpu_ceilings(r, pool, 1, &read_gbs, &fma_gflops, &int8_gops);
    if (m) cpu_kernels(r, m, pool, read_gbs, fma_gflops, int8_gops);
    tern_pool_free(pool);
}

void roofline_cpu_ceilings(int n_threads, double *read_bps, double *fma_flops, double *int8_ops) {
    rf_report *r = tern_xcalloc(1, sizeof *r);
    r->threads = n_threads;
    r->quick = 1;
    tern_pool *pool = tern_pool_new(n_threads);
    if (!pool) cli_die("cannot start %d threads", n_threads);
    double rd, fm, i8;
    cpu_ceilings(r, pool, 0, &rd, &fm, &i8);
    tern_pool_free(pool);
    free(r);
    *read_bps = rd * 1e9, *fma_flops = fm * 1e9, *int8_ops = i8 * 1e9;
}

/* ---- cuda ------------------------------------------------------------------------------------ */
#ifdef TERN_CUDA

#define CK(x)                                                                                        \
    do {                                                                                             \
        cudaError_t e_ = (x);                                                                        \
        if (e_ != cudaSuccess) cli_die("%s:%d: %s: %s", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
    } while (0)

static int cuda_available(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

static void *dmalloc(size_t bytes, const char *what) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) cli_die("cudaMalloc %.1f MiB for %s: %s", (double)bytes / 1048576.0, what, cudaGetErrorString(e));
    return p;
}

static size_t dfree_bytes(void) {
    size_t fr = 0, tot = 0;
    CK(cudaMemGetInfo(&fr, &tot));
    return fr;
}

/* GPU: median seconds per call over reps batches timed with cudaEvents; a batch is enough calls to last
 * ~target_s (launch gaps amortised, never more than 4096 calls). */
static double time_gpu(rf_fn fn, void *arg, cudaStream_t st, int reps, double target_s) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    long i = 0;
    for (int w = 0; w < 3; w++) fn(arg, i++); /* warm-up: module load, cuBLASLt heuristics, clocks */
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(st));
    float ms = 0;
    CK(cudaEventRecord(e0, st));
    fn(arg, i++);
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    long batch = ms > 0 ? (long)ceil(target_s * 1e3 / ms) : 4096;
    if (batch < 1) batch = 1;
    if (batch > 4096) batch = 4096;
    double *s = tern_xmalloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(e0, st));
        for (long b = 0; b < batch; b++) fn(arg, i++);
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        CK(cudaEventElapsedTime(&ms, e0, e1));
        s[r] = ms * 1e-3 / (double)batch;
    }
    double med = cli_median(s, reps);
    free(s);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return med;
}

#define GPU_REPS 15

typedef struct {
    cudaStream_t st;
    void *a, *b; /* read: buf, -; copy: dst, src */
    size_t bytes;
    uint32_t *sink;
} gpu_stream;

static void gpu_read_run(void *arg, long i) {
    gpu_stream *g = arg;
    tcu_read_stream(g->a, g->bytes, g->sink, g->st);
}

static void gpu_copy_run(void *arg, long i) {
    gpu_stream *g = arg;
    tcu_copy_stream(g->a, g->b, g->bytes, g->st);
}

typedef struct {
    tcu_blas *blas;
    cudaStream_t st;
    const uint16_t *w, *x;
    float *y;
    int n, bf16, rc;
    int64_t n_in, n_out;
} gpu_gemm;

static void gpu_gemm_run(void *arg, long i) {
    gpu_gemm *g = arg;
    int rc = g->bf16 ? tcu_gemm_bf16(g->blas, g->w, g->x, g->y, g->n, g->n_in, g->n_out, g->st)
                     : tcu_gemm_f16(g->blas, g->w, g->x, g->y, g->n, g->n_in, g->n_out, g->st);
    if (rc) g->rc = rc;
}

/* TFLOP/s of Y (n, n_out) = X (n, n_in) · Wᵀ in bf16 or f16 (operands uniform in [-1, 1)); NaN (and a
 * ceiling row saying so) if cuBLASLt refuses the shape. Adds the ceiling row. */
static double gemm_peak(rf_report *r, tcu_blas *blas, cudaStream_t st, int bf16, int n, int64_t n_in, int64_t n_out,
                        const char *label) {
    uint16_t *w = dmalloc((size_t)n_in * (size_t)n_out * 2, "gemm W");
    uint16_t *x = dmalloc((size_t)n * (size_t)n_in * 2, "gemm X");
    float *y = dmalloc((size_t)n * (size_t)n_out * 4, "gemm Y");
    const int kind = bf16 ? TCU_FILL_BF16 : TCU_FILL_F16;
    tcu_fill_uniform(w, (size_t)n_in * (size_t)n_out, kind, RF_SEED + 1, st);
    tcu_fill_uniform(x, (size_t)n * (size_t)n_in, kind, RF_SEED + 2, st);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(st));
    gpu_gemm g = {blas, st, w, x, y, n, bf16, 0, n_in, n_out};
    char name[48];
    snprintf(name, sizeof name, "matmul_%s %dx%lldx%lld", bf16 ? "bf16" : "f16", n, (long long)n_in,
             (long long)n_out);
    gpu_gemm_run(&g, 0);
    CK(cudaStreamSynchronize(st));
    double tflops = NAN;
    rf_ceiling *c;
    if (g.rc) {
        c = add_ceiling(r, name, NAN, "TFLOP/s");
        snprintf(c->how, sizeof c->how, "cuBLASLt refused the shape (%s)", label);
    } else {
        const double sec = time_gpu(gpu_gemm_run, &g, st, GPU_REPS, 2e-3);
        tflops = 2.0 * n * (double)n_in * (double)n_out / sec / 1e12;
        c = add_ceiling(r, name, tflops, "TFLOP/s");
        snprintf(c->how, sizeof c->how, "tcu_gemm_%s (cuBLASLt, f32 accumulate), n x n_in x n_out, %s, median of %d",
                 bf16 ? "bf16" : "f16", label, GPU_REPS);
    }
    CK(cudaFree(w));
    CK(cudaFree(x));
    CK(cudaFree(y));
    return tflops;
}

typedef struct {
    cudaStream_t st;
    tcu_blas *blas;
    int type;
    char *copies;
    size_t stride;
    long n_copies;
    size_t row_bytes;
    int64_t n_in, n_out;
    const float *x;
    float *y;
    uint16_t *wf16, *x16; /* prefill */
    void *xq;             /* the decode step's dp4a input (x quantized once, outside the timing) or NULL */
    int n, rc;
} gpu_mm;

/* The decode GEMV the forward pass runs for this type: tcu_gemv_dp4a for the types it has
 * (tcu_gemv_dp4a_supported), else tcu_gemv. */
static void gpu_gemv_run(void *arg, long i) {
    gpu_mm *a = arg;
    const char *w = a->copies + a->stride * (size_t)(i % a->n_copies);
    if (a->xq) tcu_gemv_dp4a(a->type, w, a->row_bytes, a->n_in, a->n_out, a->xq, 1, a->y, a->st);
    else tcu_gemv(a->type, w, a->row_bytes, a->n_in, a->n_out, a->x, a->y, a->st);
}

/* cuBLASLt alone on the weight gpu_prefill_run dequantized last (the peer: the same data, so the
 * tensor cores see the same operand bits; random f16 operands draw more power and can clock lower). */
static void gpu_gemm_only_run(void *arg, long i) {
    (void)i;
    gpu_mm *a = arg;
    if (tcu_gemm_f16(a->blas, a->wf16, a->x16, a->y, a->n, a->n_in, a->n_out, a->st)) a->rc = -1;
}

static void gpu_prefill_run(void *arg, long i) {
    gpu_mm *a = arg;
    tcu_dequant_f16(a->type, a->copies + a->stride * (size_t)(i % a->n_copies), a->row_bytes, a->n_in, a->n_out,
                    a->wf16, a->st);
    if (tcu_gemm_f16(a->blas, a->wf16, a->x16, a->y, a->n, a->n_in, a->n_out, a->st)) a->rc = -1;
}

typedef struct {
    cudaStream_t st;
    const float *q;
    uint16_t *kv; /* copies of [kc | vc] */
    size_t copy_elems, kc_elems;
    long n_copies;
    const int32_t *pos;
    int n, n_head, n_kv, hd;
    float scale, *out;
    float *ws; /* the decode step's split-K workspace (tcu_attention_split), NULL for prefill */
} gpu_attn;

static void gpu_attn_run(void *arg, long i) {
    gpu_attn *a = arg;
    const uint16_t *kc = a->kv + a->copy_elems * (size_t)(i % a->n_copies);
    tcu_attention_split(a->q, kc, kc + a->kc_elems, a->n, a->pos, NULL, NULL, 0, 0, a->n_head, a->n_kv, a->hd, a->scale,
                        a->out, a->ws, a->ws ? 16 : 1, a->st);
}

/* Copies of `bytes` each so the set is >= 4x L2, within half the free memory (at least one copy). */
static long rotation_copies(const rf_report *r, size_t bytes) {
    long n = (long)((4 * (double)r->llc_bytes + (double)bytes - 1) / (double)bytes);
    if (n < 1) n = 1;
    const double room = 0.5 * (double)dfree_bytes();
    while (n > 1 && (double)n * (double)bytes > room) n--;
    return n;
}

static void gpu_kernels(rf_report *r, tern_model *m, tcu_blas *blas, cudaStream_t st, double read_gbs,
                        const double *f16_shape_tflops, double f16_peak) {
    rf_shape shapes[RF_MAX_SHAPES];
    const int n_shapes = model_shapes(m, shapes);
    const int NP = r->prefill_n;
    for (int si = 0; si < n_shapes; si++) {
        const tern_weight *w = shapes[si].w;
        const char *tn = tern_type_name(w->type);
        if (!tcu_type_supported(w->type)) {
            snprintf(add_kernel(r, "tcu_gemv", shapes[si].names, tn, 1, w->n_in, w->n_out)->note,
                     sizeof r->kern[0].note, "no GPU kernel for %s", tn);
            continue;
        }
        /* rows padded to 16 bytes on the device, as the backend uploads them (tcu.h's row contract) */
        const size_t rp = (w->row_bytes + 15) & ~(size_t)15, wb = w->row_bytes * (size_t)w->n_out;
        const size_t wbp = rp * (size_t)w->n_out, stride = (wbp + 255) & ~(size_t)255;
        gpu_mm a;
        memset(&a, 0, sizeof a);
        a.st = st;
        a.blas = blas;
        a.type = w->type;
        a.stride = stride;
        a.n_copies = rotation_copies(r, stride);
        a.row_bytes = rp;
        a.n_in = w->n_in;
        a.n_out = w->n_out;
        a.copies = dmalloc(stride * (size_t)a.n_copies, "weight copies");
        /* on st, like the D2D copies after it: a pageable cudaMemcpy may return before its DMA lands, and st
         * does not wait for the legacy stream */
        CK(cudaMemsetAsync(a.copies, 0, stride, st));
        CK(cudaMemcpy2DAsync(a.copies, rp, w->data, w->row_bytes, w->row_bytes, (size_t)w->n_out, cudaMemcpyHostToDevice,
                             st));
        for (long c = 1; c < a.n_copies; c++)
            CK(cudaMemcpyAsync(a.copies + stride * (size_t)c, a.copies, wbp, cudaMemcpyDeviceToDevice, st));
        float *x = dmalloc(sizeof(float) * (size_t)w->n_in, "gemv x");
        a.y = dmalloc(sizeof(float) * (size_t)NP * (size_t)w->n_out, "y");
        tcu_fill_uniform(x, (size_t)w->n_in, TCU_FILL_F32, RF_SEED + 3, st);
        a.x = x;
        const int dp4a = tcu_gemv_dp4a_supported(w->type);
        if (dp4a) {
            a.xq = dmalloc(tcu_x16_bytes(1, w->n_in), "gemv x16");
            tcu_quantize_x16(x, 1, w->n_in, a.xq, st);
        }
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(st));
        const double ws_mib = (double)a.n_copies * (double)wb / 1048576.0;

        /* decode GEMV */
        a.n = 1;
        double sec = time_gpu(gpu_gemv_run, &a, st, GPU_REPS, 1e-3);
        rf_kernel *k = add_kernel(r, dp4a ? "tcu_gemv_dp4a" : "tcu_gemv", shapes[si].names, tn, 1, w->n_in, w->n_out);
        k->bytes = (double)wb + 4.0 * (double)(w->n_in + w->n_out);
        k->flops = 2.0 * (double)w->n_in * (double)w->n_out;
        k->time_us = sec * 1e6;
        set_floor(k, read_gbs, 0);
        snprintf(k->note, sizeof k->note, "%ld rotated copies, %.0f MiB = %.1fx L2", a.n_copies, ws_mib,
                 ws_mib * 1048576.0 / (double)r->llc_bytes);

        /* prefill: dequant to f16 + cuBLASLt f16 GEMM */
        a.n = NP;
        a.wf16 = dmalloc((size_t)w->n_in * (size_t)w->n_out * 2, "dequantized f16 weight");
        a.x16 = dmalloc((size_t)NP * (size_t)w->n_in * 2, "prefill x");
        tcu_fill_uniform(a.x16, (size_t)NP * (size_t)w->n_in, TCU_FILL_F16, RF_SEED + 4, st);
        CK(cudaGetLastError());
        k = add_kernel(r, "tcu_dequant_f16+tcu_gemm_f16", shapes[si].names, tn, NP, w->n_in, w->n_out);
        k->bytes = (double)wb + 2.0 * NP * (double)w->n_in + 4.0 * NP * (double)w->n_out;
        k->flops = 2.0 * NP * (double)w->n_in * (double)w->n_out;
        if (!(f16_shape_tflops[si] > 0)) {
            snprintf(k->note, sizeof k->note, "not run: cuBLASLt refused the f16 GEMM at this shape");
        } else {
            gpu_prefill_run(&a, 0);
            CK(cudaStreamSynchronize(st));
            if (a.rc) {
                snprintf(k->note, sizeof k->note, "not run: tcu_gemm_f16 refused the shape");
            } else {
                sec = time_gpu(gpu_prefill_run, &a, st, GPU_REPS, 1e-3);
                k->time_us = sec * 1e6;
                set_floor(k, read_gbs, f16_shape_tflops[si] * 1e3);
                const double sec_g = time_gpu(gpu_gemm_only_run, &a, st, GPU_REPS, 1e-3);
                snprintf(k->note, sizeof k->note,
                         "flops floor at the f16 GEMM rate of this shape (%.0f TFLOP/s); %ld copies; cuBLASLt alone on "
                         "the dequantized weight %.2f us: %.1f%% of it", f16_shape_tflops[si], a.n_copies, sec_g * 1e6,
                         100.0 * sec_g / sec);
                rf_kernel *kg = add_kernel(r, "tcu_gemm_f16 (the dequantized weight)", shapes[si].names, "f16", NP,
                                           w->n_in, w->n_out);
                kg->bytes = 2.0 * (double)w->n_in * (double)w->n_out + 2.0 * NP * (double)w->n_in + 4.0 * NP * (double)w->n_out;
                kg->flops = k->flops;
                kg->time_us = sec_g * 1e6;
                set_floor(kg, read_gbs, f16_shape_tflops[si] * 1e3);
                snprintf(kg->note, sizeof kg->note, "the peer of the row above: cuBLASLt on its dequantized f16 weight");
            }
        }
        CK(cudaFree(a.wf16));
        CK(cudaFree(a.x16));
        CK(cudaFree(x));
        if (a.xq) CK(cudaFree(a.xq));
        CK(cudaFree(a.y));
        CK(cudaFree(a.copies));
    }

    /* attention: decode at pos 4095 (bw floor: the KV cache read), prefill n = NP (flops floor) */
    const int n_head = m->n_head, n_kv = m->n_head_kv, hd = m->head_dim;
    char shape[48];
    snprintf(shape, sizeof shape, "Hq=%d Hkv=%d D=%d", n_head, n_kv, hd);
    for (int pass = 0; pass < 2; pass++) {
        const int decode = pass == 0, S = decode ? 4096 : NP, n = decode ? 1 : NP;
        gpu_attn g;
        memset(&g, 0, sizeof g);
        g.st = st;
        g.n = n;
        g.n_head = n_head;
        g.n_kv = n_kv;
        g.hd = hd;
        g.scale = 1.0f / sqrtf((float)hd);
        g.kc_elems = (size_t)S * (size_t)n_kv * (size_t)hd;
        g.copy_elems = 2 * g.kc_elems;
        g.n_copies = decode ? rotation_copies(r, g.copy_elems * 2) : 1;
        g.kv = dmalloc(g.copy_elems * 2 * (size_t)g.n_copies, "KV cache copies");
        float *q = dmalloc(sizeof(float) * (size_t)n * (size_t)n_head * (size_t)hd, "attention q");
        g.out = dmalloc(sizeof(float) * (size_t)n * (size_t)n_head * (size_t)hd, "attention out");
        int32_t *pos = dmalloc(sizeof(int32_t) * (size_t)n, "attention pos");
        int32_t *hpos = tern_xmalloc(sizeof(int32_t) * (size_t)n);
        for (int t = 0; t < n; t++) hpos[t] = decode ? S - 1 : t;
        CK(cudaMemcpyAsync(pos, hpos, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice, st));
        CK(cudaStreamSynchronize(st)); /* before hpos is freed */
        free(hpos);
        tcu_fill_uniform(g.kv, g.copy_elems * (size_t)g.n_copies, TCU_FILL_F16, RF_SEED + 5, st);
        tcu_fill_uniform(q, (size_t)n * (size_t)n_head * (size_t)hd, TCU_FILL_F32, RF_SEED + 6, st);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(st));
        g.q = q;
        g.pos = pos;
        if (decode) g.ws = dmalloc(tcu_attention_ws_bytes(1, n_head, hd, 16), "attention ws"); /* a 4096-position context's split */
        const double sec = time_gpu(gpu_attn_run, &g, st, GPU_REPS, 1e-3);
        if (g.ws) CK(cudaFree(g.ws));
        char kname[48];
        snprintf(kname, sizeof kname, decode ? "tcu_attention decode pos=4095" : "tcu_attention prefill n=%d", NP);
        rf_kernel *k = add_kernel(r, kname, shape,
                                  "f16 kv", n, S, hd);
        k->bytes = (double)g.copy_elems * 2 + 8.0 * n * n_head * hd; /* K and V rows [0, S), q in, out */
        k->flops = decode ? 4.0 * S * hd * n_head : 4.0 * (double)S * S * hd * n_head / 2;
        k->time_us = sec * 1e6;
        if (decode) {
            set_floor(k, read_gbs, 0);
            snprintf(k->note, sizeof k->note, "%ld rotated KV copies, %.0f MiB", g.n_copies,
                     (double)g.copy_elems * 2 * (double)g.n_copies / 1048576.0);
        } else {
            set_floor(k, 0, f16_peak * 1e3);
            k->floor_kind = "flops";
            snprintf(k->note, sizeof k->note, "causal FLOPs 4*S^2*D*Hq/2 at the best square f16 rate (%.0f TFLOP/s)",
                     f16_peak);
        }
        CK(cudaFree(g.kv));
        CK(cudaFree(q));
        CK(cudaFree(g.out));
        CK(cudaFree(pos));
    }
}

typedef struct {
    cudaGraphExec_t exec;
    cudaStream_t st;
} gpu_graph;

static void gpu_graph_run(void *arg, long i) {
    gpu_graph *g = arg;
    (void)i;
    CK(cudaGraphLaunch(g->exec, g->st));
}

/* One boundary row: k steps (tcu_boundary_chain with pdl 0/1, or tcu_barrier_chain when barrier) captured in a
 * graph, run once from zeroed words and checked (every word of the last-written buffer == k), then timed; the
 * value is microseconds a step. */
static void boundary_row(rf_report *r, cudaStream_t st, int k, int grid, int threads, int pdl, int barrier) {
    char name[48];
    snprintf(name, sizeof name, "%s %dx%d", barrier ? "grid barrier" : pdl ? "kernel boundary, PDL" : "kernel boundary",
             grid, threads);
    rf_ceiling *c = add_ceiling(r, name, NAN, "us");
    unsigned *a = dmalloc(sizeof(unsigned) * (size_t)grid, "boundary words");
    unsigned *b = dmalloc(sizeof(unsigned) * (size_t)grid, "boundary words");
    unsigned *ctr = dmalloc(sizeof(unsigned), "barrier counter");
    cudaGraph_t graph;
    gpu_graph g = {NULL, st};
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    const int rc = barrier ? tcu_barrier_chain(a, b, ctr, k, grid, threads, st)
                           : tcu_boundary_chain(a, b, k, grid, threads, pdl, st);
    if (rc) { /* a failed launch invalidates the capture: end it without the check, clear its error */
        graph = NULL;
        if (cudaStreamEndCapture(st, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        snprintf(c->how, sizeof c->how, rc == -2 ? "not run: %d CTAs are not all resident" : "not run: the launch failed (%d CTAs)",
                 grid);
        goto done;
    }
    CK(cudaStreamEndCapture(st, &graph));
    CK(cudaGraphInstantiate(&g.exec, graph, 0));
    CK(cudaGraphDestroy(graph));
    CK(cudaMemsetAsync(a, 0, sizeof(unsigned) * (size_t)grid, st));
    CK(cudaMemsetAsync(b, 0, sizeof(unsigned) * (size_t)grid, st));
    gpu_graph_run(&g, 0);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    {
        unsigned *h = tern_xmalloc(sizeof(unsigned) * (size_t)grid);
        CK(cudaMemcpy(h, (k - 1) & 1 ? a : b, sizeof(unsigned) * (size_t)grid, cudaMemcpyDeviceToHost));
        for (int i = 0; i < grid; i++)
            if (h[i] != (unsigned)k) cli_die("roofline: %s: word %d holds %u after %d steps, not %d", name, i, h[i], k, k);
        free(h);
    }
    const double sec = time_gpu(gpu_graph_run, &g, st, GPU_REPS, 2e-3);
    c->value = sec * 1e6 / k;
    snprintf(c->how, sizeof c->how, "%s, %d dependent steps in one CUDA graph (each reads another CTA's word of the step "
             "before), us a step, median of %d",
             barrier ? "tcu_barrier_chain: one kernel, a grid barrier a step" :
             pdl ? "tcu_boundary_chain: a kernel a step, programmatic dependent launch" : "tcu_boundary_chain: a kernel a step",
             k, GPU_REPS);
    CK(cudaGraphExecDestroy(g.exec));
done:
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(ctr));
}

static void gpu_boundaries(rf_report *r, cudaStream_t st) {
    const int k = 288; /* 9 kernels a layer x 32 layers: the chain of a Llama-3-8B decode step */
    const int sms = r->sm_count > 0 ? r->sm_count : 132;
    boundary_row(r, st, k, sms, 256, 0, 0);
    boundary_row(r, st, k, sms, 256, 1, 0);
    boundary_row(r, st, k, 8, 1024, 1, 0);
    boundary_row(r, st, k, 8 * sms, 256, 1, 0);
    boundary_row(r, st, k, 8 * sms, 128, 1, 0); /* the dp4a pipe GEMV's grid: 8 CTAs of 128 an SM */
    boundary_row(r, st, k, 2 * sms, 512, 1, 0); /* the same threads in a quarter of the CTAs */
    boundary_row(r, st, k, sms, 1024, 1, 0);
    boundary_row(r, st, k, sms, 256, 0, 1);
    boundary_row(r, st, k, 2 * sms, 256, 0, 1);
}

static void run_cuda(rf_report *r, tern_model *m) {
    r->backend = "cuda";
    int dev = 0;
    CK(cudaSetDevice(dev));
    struct cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, dev));
    snprintf(r->dev_name, sizeof r->dev_name, "%s", pr.name);
    r->sm_count = pr.multiProcessorCount;
    r->llc_bytes = pr.l2CacheSize;
    r->total_mem_bytes = (long long)pr.totalGlobalMem;
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, dev) == cudaSuccess) r->sm_clock_mhz = v / 1000;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, dev) == cudaSuccess) r->mem_clock_mhz = v / 1000;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess) r->bus_width_bits = v;
    cudaRuntimeGetVersion(&r->cuda_runtime);
    cudaDriverGetVersion(&r->cuda_driver);
    cudaGetLastError(); /* an unsupported attribute above is not an error of ours */
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    /* (1) read-only stream: 4 GiB (>= 8x any L2), less if memory is short */
    size_t bytes = (size_t)4 << 30;
    const size_t fr = dfree_bytes();
    while (bytes > fr / 2 && bytes > ((size_t)64 << 20)) bytes /= 2;
    gpu_stream g = {st, dmalloc(bytes, "read buffer"), NULL, bytes, dmalloc(sizeof(uint32_t), "sink")};
    tcu_fill_random(g.a, bytes, RF_SEED, st);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(st));
    double sec = time_gpu(gpu_read_run, &g, st, GPU_REPS, 0);
    const double read_gbs = (double)bytes / sec / 1e9;
    snprintf(add_ceiling(r, "read", read_gbs, "GB/s")->how, sizeof r->ceil[0].how,
             "tcu_read_stream over %zu MiB (%.0fx L2), 16-byte loads, median of %d", bytes >> 20,
             (double)bytes / (double)r->llc_bytes, GPU_REPS);
    CK(cudaFree(g.a));

    /* (2) copy: bytes read + written */
    bytes = (size_t)1 << 30;
    while (2 * bytes > dfree_bytes() / 2 && bytes > ((size_t)32 << 20)) bytes /= 2;
    g.a = dmalloc(bytes, "copy dst");
    g.b = dmalloc(bytes, "copy src");
    g.bytes = bytes;
    tcu_fill_random(g.b, bytes, RF_SEED + 7, st);
    CK(cudaMemsetAsync(g.a, 0, bytes, st));
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(st));
    sec = time_gpu(gpu_copy_run, &g, st, GPU_REPS, 0);
    {
        unsigned char h0[4096], h1[4096];
        const size_t off = bytes - sizeof h0;
        CK(cudaMemcpy(h0, (char *)g.a + off, sizeof h0, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(h1, (char *)g.b + off, sizeof h1, cudaMemcpyDeviceToHost));
        if (memcmp(h0, h1, sizeof h0)) cli_die("roofline: tcu_copy_stream's destination differs from its source");
    }
    snprintf(add_ceiling(r, "copy", 2.0 * (double)bytes / sec / 1e9, "GB/s")->how, sizeof r->ceil[0].how,
             "tcu_copy_stream %zu MiB -> %zu MiB, bytes read + written, median of %d", bytes >> 20, bytes >> 20,
             GPU_REPS);
    CK(cudaFree(g.a));
    CK(cudaFree(g.b));
    CK(cudaFree(g.sink));

    /* (2b) kernel boundaries: the latency floor of a chain of dependent kernels in a graph (a decode step is
     * ~290 of them), and of a grid barrier in one persistent kernel */
    gpu_boundaries(r, st);

    /* (3) matrix peak: square, then the model's shapes at n = r->prefill_n */
    char err[256] = "";
    tcu_blas *blas = tcu_blas_new((size_t)64 << 20, err);
    if (!blas) cli_die("tcu_blas_new: %s", err);
    double f16_peak = 0;
    const int sq[2] = {4096, 8192};
    for (int i = 0; i < 2; i++)
        for (int bf = 1; bf >= 0; bf--) {
            double t = gemm_peak(r, blas, st, bf, sq[i], sq[i], sq[i], "square");
            if (!bf && t > f16_peak) f16_peak = t;
        }
    if (m) {
        rf_shape shapes[RF_MAX_SHAPES];
        double f16_shape[RF_MAX_SHAPES];
        const int n_shapes = model_shapes(m, shapes);
        for (int si = 0; si < n_shapes; si++) {
            const tern_weight *w = shapes[si].w;
            f16_shape[si] = NAN;
            int seen = -1; /* the same (n_in, n_out) in another type: measured already */
            for (int j = 0; j < si; j++)
                if (shapes[j].w->n_in == w->n_in && shapes[j].w->n_out == w->n_out) seen = j;
            if (seen >= 0) { f16_shape[si] = f16_shape[seen]; continue; }
            char label[80];
            snprintf(label, sizeof label, "model shape %s", shapes[si].names);
            gemm_peak(r, blas, st, 1, r->prefill_n, w->n_in, w->n_out, label);
            f16_shape[si] = gemm_peak(r, blas, st, 0, r->prefill_n, w->n_in, w->n_out, label);
        }
        if (!(f16_peak > 0)) cli_die("roofline: no f16 matmul rate measured (cuBLASLt refused 4096 and 8192)");
        gpu_kernels(r, m, blas, st, read_gbs, f16_shape, f16_peak);
    }
    tcu_blas_free(blas);
    CK(cudaStreamDestroy(st));
}
#endif /* TERN_CUDA */

/* ---- output ---------------------------------------------------------------------------------- */

static void json_num(FILE *f, double v, const char *fmt) {
    if (isfinite(v)) fprintf(f, fmt, v);
    else fputs("null", f);
}

static void write_json(FILE *f, const rf_report *r, const char *stamp, const char *commit, int dirty) {
    bench_json_head(f, "tern roofline", stamp, commit, dirty);
#ifdef TERN_CUDA
    fputs(", \"cuda\": true},\n", f);
#else
    fputs(", \"cuda\": false},\n", f);
#endif
    fputs("  \"device\": {\"backend\": ", f);
    bench_json_str(f, r->backend);
    fputs(", \"name\": ", f);
    bench_json_str(f, r->dev_name);
    if (!strcmp(r->backend, "cpu"))
        fprintf(f, ", \"cores\": %d, \"l3_bytes\": %lld},\n", r->cores, r->llc_bytes);
    else
        fprintf(f, ", \"sm_count\": %d, \"l2_bytes\": %lld, \"sm_clock_mhz\": %d, \"mem_clock_mhz\": %d, "
                   "\"bus_width_bits\": %d, \"total_mem_bytes\": %lld, \"cuda_runtime\": %d, \"cuda_driver\": %d},\n",
                r->sm_count, r->llc_bytes, r->sm_clock_mhz, r->mem_clock_mhz, r->bus_width_bits, r->total_mem_bytes,
                r->cuda_runtime, r->cuda_driver);
    fprintf(f, "  \"threads\": %d,\n  \"quick\": %s,\n  \"model\": ", r->threads, r->quick ? "true" : "false");
    if (r->model_path) {
        fputs("{\"path\": ", f);
        bench_json_str(f, r->model_path);
        fputs(", \"desc\": ", f);
        bench_json_str(f, r->model_desc);
        fputs("},\n", f);
    } else fputs("null,\n", f);
    fputs("  \"ceilings\": [\n", f);
    for (int i = 0; i < r->n_ceil; i++) {
        const rf_ceiling *c = &r->ceil[i];
        fputs("    {\"name\": ", f);
        bench_json_str(f, c->name);
        fputs(", \"value\": ", f);
        json_num(f, c->value, "%.4g");
        fputs(", \"unit\": ", f);
        bench_json_str(f, c->unit);
        fputs(", \"how\": ", f);
        bench_json_str(f, c->how);
        fprintf(f, "}%s\n", i + 1 < r->n_ceil ? "," : "");
    }
    fputs("  ],\n  \"kernels\": [\n", f);
    for (int i = 0; i < r->n_kern; i++) {
        const rf_kernel *k = &r->kern[i];
        fputs("    {\"kernel\": ", f);
        bench_json_str(f, k->kernel);
        fputs(", \"weights\": ", f);
        bench_json_str(f, k->weights);
        fputs(", \"type\": ", f);
        bench_json_str(f, k->type);
        fprintf(f, ", \"n\": %d, \"n_in\": %lld, \"n_out\": %lld, \"bytes\": %.0f, \"flops\": %.0f, \"time_us\": ", k->n,
                (long long)k->n_in, (long long)k->n_out, k->bytes, k->flops);
        json_num(f, k->time_us, "%.3f");
        fputs(", \"floor_us\": ", f);
        json_num(f, k->floor_us, "%.3f");
        fputs(", \"pct_of_floor\": ", f);
        json_num(f, 100.0 * k->floor_us / k->time_us, "%.2f");
        fputs(", \"floor_kind\": ", f);
        bench_json_str(f, k->floor_kind);
        fputs(", \"note\": ", f);
        bench_json_str(f, k->note);
        fprintf(f, "}%s\n", i + 1 < r->n_kern ? "," : "");
    }
    fputs("  ]\n}\n", f);
}

static void write_md(FILE *f, const rf_report *r, const char *commit, int dirty) {
    fprintf(f, "## tern roofline: %s, %s", r->backend, r->dev_name);
    if (!strcmp(r->backend, "cpu")) fprintf(f, " (%d threads of %d cores, %s)\n\n", r->threads, r->cores, tern_simd_name());
    else fprintf(f, " (%d SMs, L2 %lld MiB, SM clock %d MHz)\n\n", r->sm_count, r->llc_bytes >> 20, r->sm_clock_mhz);
    fputs("### ceilings\n\n| ceiling | value | unit | method |\n| ------- | ----: | ---- | ------ |\n", f);
    for (int i = 0; i < r->n_ceil; i++) {
        const rf_ceiling *c = &r->ceil[i];
        if (isfinite(c->value)) fprintf(f, "| %s | %.2f | %s | %s |\n", c->name, c->value, c->unit, c->how);
        else fprintf(f, "| %s | - | %s | %s |\n", c->name, c->unit, c->how);
    }
    if (r->n_kern) {
        fprintf(f, "\n### kernels: %s\n\n", r->model_desc);
        fputs("| kernel | weights | type | n x n_in x n_out | time (us) | floor (us) | % of floor | floor | note |\n"
              "| ------ | ------- | ---- | ---------------- | --------: | ---------: | ---------: | ----- | ---- |\n", f);
        for (int i = 0; i < r->n_kern; i++) {
            const rf_kernel *k = &r->kern[i];
            fprintf(f, "| %s | %s | %s | %dx%lldx%lld | ", k->kernel, k->weights, k->type, k->n, (long long)k->n_in,
                    (long long)k->n_out);
            if (isfinite(k->time_us))
                fprintf(f, "%.2f | %.2f | %.1f | %s | %s |\n", k->time_us, k->floor_us, 100.0 * k->floor_us / k->time_us,
                        k->floor_kind, k->note);
            else fprintf(f, "- | - | - | - | %s |\n", k->note);
        }
    }
    fprintf(f, "\nfloor = max(bytes / read, flops / peak); %% of floor = floor / time; commit %.12s%s\n", commit,
            dirty > 0 ? " (dirty)" : "");
}

/* ---- the command ----------------------------------------------------------------------------- */

int cmd_roofline(int argc, char **argv) {
    const char *model = NULL, *out_fmt = "md", *receipt = NULL, *device = NULL;
    int n_threads = 0, quick = 0, prefill_n = 512;
    cli_args it = cli_args_begin(argc, argv);
    while (cli_args_next(&it)) {
        const char *a = it.opt;
#define ARG() cli_args_value(&it)
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = ARG();
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) out_fmt = ARG();
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) n_threads = (int)cli_parse_long(a, ARG(), 1, 1024);
        else if (!strcmp(a, "--device")) device = ARG();
        else if (!strcmp(a, "--receipt")) receipt = ARG();
        else if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--prefill-n")) prefill_n = (int)cli_parse_long(a, ARG(), 16, 8192);
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: tern roofline [--device cuda|cpu] [-m MODEL] [-o md|json] [-t THREADS] [--quick] [--prefill-n N]\n"
                 "       [--receipt FILE]\n"
                 "  measures the device's ceilings (read and copy bandwidth; FMA peak on the CPU, bf16/f16 matmul\n"
                 "  peak on CUDA) and, with -m, tern's kernels at the model's layer-0 and output-head shapes as\n"
                 "  time and % of floor (floor = max(bytes / read bandwidth, flops / peak)).\n"
                 "  --device: default cuda when built with CUDA and a GPU is present, else cpu; --quick: smaller\n"
                 "  CPU buffers and fewer repetitions; --prefill-n N (16..8192, default 512): tokens of the CUDA\n"
                 "  prefill rows (dequant + GEMM at the model's shapes, and attention); --receipt FILE: also write\n"
                 "  the JSON there");
            return 0;
        } else cli_die("unknown option '%s' for roofline (see tern roofline --help)", a);
#undef ARG
    }
    if (strcmp(out_fmt, "md") && strcmp(out_fmt, "json")) cli_die("-o expects md or json, got '%s'", out_fmt);
    /* as run and bench: --device cpu|cuda|auto, else TERN_DEVICE, else auto */
    if (!device && getenv("TERN_DEVICE") && *getenv("TERN_DEVICE")) {
        device = getenv("TERN_DEVICE");
        if (strcmp(device, "cpu") && strcmp(device, "cuda") && strcmp(device, "auto"))
            cli_die("TERN_DEVICE=%s: expected cpu, cuda or auto", device);
    }
    if (device && !strcmp(device, "auto")) device = NULL;
    if (device && strcmp(device, "cpu") && strcmp(device, "cuda"))
        cli_die("--device expects cpu, cuda or auto, got '%s'", device);
#ifdef TERN_CUDA
    if (!device) device = cuda_available() ? "cuda" : "cpu";
    else if (!strcmp(device, "cuda") && !cuda_available()) cli_die("--device cuda: no CUDA device is available");
#else
    if (device && !strcmp(device, "cuda")) cli_die("--device cuda: this build has no CUDA backend (make CUDA=1)");
    if (!device) device = "cpu";
#endif
    if (n_threads > 4 * tern_n_cores())
        cli_die("-t %d is more than 4x the %d cores available (spinning threads would crawl)", n_threads, tern_n_cores());
    if (n_threads <= 0) n_threads = tern_n_cores();
    if (model && access(model, R_OK) != 0) cli_die("cannot read model '%s': %s", model, strerror(errno));
    FILE *rf = NULL;
    if (receipt) { /* opened before the measurements: a bad path fails in a second, not after minutes */
        rf = fopen(receipt, "w");
        if (!rf) cli_die("cannot write receipt '%s': %s", receipt, strerror(errno));
    }

    char commit[512];
    int dirty;
    bench_git_info(commit, sizeof commit, &dirty);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);

    tern_model *m = NULL;
    if (model) {
        m = tern_model_load(model, 0);
        if (!m) cli_die("%s", tern_last_error());
        if (m->n_layer < 1) cli_die("model '%s' has no layers", model);
    }
    rf_report *r = tern_xcalloc(1, sizeof *r);
    r->threads = n_threads;
    r->quick = quick;
    r->prefill_n = prefill_n;
    r->model_path = model;
    r->model_desc = m ? tern_model_desc(m) : NULL;
#ifdef TERN_CUDA
    if (!strcmp(device, "cuda")) run_cuda(r, m);
    else run_cpu(r, m);
#else
    run_cpu(r, m);
#endif

    if (rf) {
        write_json(rf, r, stamp, commit, dirty);
        if (fclose(rf) != 0) cli_die("cannot write receipt '%s'", receipt);
        fprintf(stderr, "roofline: receipt %s\n", receipt);
    }
    if (!strcmp(out_fmt, "json")) write_json(stdout, r, stamp, commit, dirty);
    else write_md(stdout, r, commit, dirty);
    fflush(stdout);
    free(r);
    if (m) tern_model_free(m);
    return 0;
}
