/* cli/bench.c: `tern bench` (issue 3): llama-bench-shaped throughput table plus a JSON receipt.
 *
 *   tern bench -m MODEL [-p 512,2048] [-n 128] [-v 1,2,4,8,16] [-r 5] [--device cpu] [-t THREADS]
 *              [-o md|json] [--depth D] [--receipt PATH]
 *   tern bench -m MODEL --parallel 1,4,16,64 [-p 512] [-n 128] [--read-bw B/S] [--matrix-peak FLOP/S] ...
 *
 * Tests: ppN = one tern_eval of N tokens (prefill), tgN = N tern_eval calls of one token (decode), each
 * after D tokens already in the KV cache (--depth, default 0; filled once per test, untimed, and kept
 * by tern_context_truncate between repetitions). Token ids are pseudo-random in [0, n_vocab) from a
 * fixed seed, so models without a tokenizer (tern synth's no_vocab files) bench too; decode speed does
 * not depend on the id, so tg feeds the next id of the same sequence instead of the argmax; each tg step
 * is a tern_eval_greedy call (the argmax computed, one id copied back: the greedy decode step of tern run).
 * vrN (-v, N in 1..16) = the verify pass of speculative decoding: VR_PASSES tern_eval_argmax calls of N
 * tokens, each at the same position (the cache truncated back to D between them, as a fully rejected
 * draft leaves it), so its t/s counts rows verified a second and the receipt adds the milliseconds a pass:
 * the cost curve by row count that decides the draft depth (issue 7).
 * Each test runs once untimed (warm-up: page cache, thread pool, branch predictors), then r timed
 * repetitions by wall clock around the tern_eval calls; the table shows the median tok/s ± the
 * sample standard deviation, the receipt every sample (shared/MEASURE.md).
 * Output (-o): md (llama-bench's table, a row as each test finishes), csv and jsonl (a row / an object as each test
 * finishes), json (the receipt, at the end). The receipt goes to a file only when asked: --receipt PATH (issue 28:
 * never into the current directory unasked).
 * --parallel: llama-batched-bench's table (B, S_PP, S_TG as it names them) instead, each row with its floor and the
 * share of it reached (par_floor below; issue 26); bench/parallel_peer.sh runs it beside llama-batched-bench. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend_cpu.h"
#include "commands.h"
#include "model.h"
#ifndef TERN_BUILD_COMMIT
#define TERN_BUILD_COMMIT "unknown"
#endif
#include "quant.h"
#include "synth.h"
#include "tern.h"
#include "unicode.h"
#include "util.h"

#define BENCH_SEED 0x7465726eULL /* "tern" */
#define MAX_TESTS 64
#define VR_PASSES 32 /* verify passes a vrN repetition times */



/* A rate (bytes/s, FLOP/s): a finite number > 0, e.g. 4.15e12. */
static double parse_rate(const char *flag, const char *s) {
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v <= 0)
        cli_die("%s expects a number > 0 (e.g. 4.15e12), got '%s'", flag, s);
    return v;
}

/* "512,2048" -> values; each in [lo, hi]. Returns the count. */
static int parse_list(const char *flag, const char *s, int *out, int max, long lo, long hi) {
    int n = 0;
    const char *p = s;
    if (!*s) cli_die("%s expects a comma-separated list of integers, got ''", flag);
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || (*end && *end != ',') || v < lo || v > hi)
            cli_die("%s expects a comma-separated list of integers in [%ld, %ld], got '%s'", flag, lo, hi, s);
        if (n == max) cli_die("%s: more than %d values", flag, max);
        out[n++] = (int)v;
        if (!*end) break;
        p = end + 1;
    }
    return n;
}

/* ---- receipt helpers ------------------------------------------------------------------------ */

/* s as a JSON string; bytes that are not UTF-8 (a model's name from its metadata or file name may hold any) as U+FFFD,
 * each code point re-encoded in its shortest form, a surrogate as U+FFFD: the receipt stays JSON a strict reader takes */
void bench_json_str(FILE *f, const char *s) {
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    for (size_t n = strlen((const char *)p); *p;) {
        if (*p < 0x80) {
            if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
            else if (*p == '\n') fputs("\\n", f);
            else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
            p++, n--;
            continue;
        }
        int adv = 1;
        uint32_t cp = tern_utf8_decode(p, n, &adv);
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
        char u[4];
        fwrite(u, 1, (size_t)tern_utf8_encode(cp, u), f);
        p += adv, n -= (size_t)adv;
    }
    fputc('"', f);
}

/* A receipt's model type fields: ", \"weight_type\": ..., \"file_type\": ..." (null where the file has none). */
static void bench_json_types(FILE *f, const tern_model *m) {
    fputs(", \"weight_type\": ", f);
    bench_json_str(f, tern_model_weight_type(m));
    fputs(", \"file_type\": ", f);
    if (tern_model_file_type(m)) bench_json_str(f, tern_model_file_type(m));
    else fputs("null", f);
}

void bench_json_head(FILE *f, const char *tool, const char *stamp, const char *commit, int dirty) {
    fputs("{\n  \"tool\": ", f);
    bench_json_str(f, tool);
    fprintf(f, ",\n  \"timestamp\": \"%s\",\n  \"commit\": ", stamp);
    bench_json_str(f, commit);
    fprintf(f, ",\n  \"dirty\": %s,\n", dirty < 0 ? "null" : dirty ? "true" : "false");
    fputs("  \"build_commit\": \"" TERN_BUILD_COMMIT "\",\n", f);
    fputs("  \"build\": {\"compiler\": ", f);
#ifdef __VERSION__
    bench_json_str(f, __VERSION__);
#else
    bench_json_str(f, "unknown");
#endif
    fputs(", \"simd\": ", f);
    bench_json_str(f, tern_simd_name());
}

/* First line of a shell command's stdout (trailing newline dropped), or `dflt`. */
static void cmd_line(const char *cmd, char *buf, size_t n, const char *dflt) {
    snprintf(buf, n, "%s", dflt);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char tmp[512];
    if (fgets(tmp, sizeof tmp, p)) {
        tmp[strcspn(tmp, "\n")] = 0;
        if (tmp[0]) snprintf(buf, n, "%s", tmp);
    }
    pclose(p);
}

/* bench_json_str and bench_git_info are shared with cli/ab.c (declared in commands.h). */

/* The git commit of the repository the binary lives in (run time, not build time: a binary older
 * than HEAD records HEAD; `dirty` flags uncommitted changes to tracked files). */
void bench_git_info(char *commit, size_t n, int *dirty) {
    char exe[PATH_MAX], cmd[PATH_MAX + 128];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    *dirty = -1;
    snprintf(commit, n, "unknown");
    if (l <= 0) return;
    exe[l] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    if (strchr(exe, '\'')) return; /* keep the shell quoting simple */
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD 2>/dev/null", exe);
    cmd_line(cmd, commit, n, "unknown");
    if (!strcmp(commit, "unknown")) return;
    char st[64];
    snprintf(cmd, sizeof cmd, "git -C '%s' status --porcelain --untracked-files=no 2>/dev/null | head -n 1", exe);
    cmd_line(cmd, st, sizeof st, "");
    *dirty = st[0] != 0;
}

/* CPU model name and the current clock of every core (MHz) from /proc/cpuinfo. */
typedef struct {
    char name[256];
    double mhz_min, mhz_max, mhz_mean;
    int n_mhz;
} cpu_info;

static cpu_info read_cpuinfo(void) {
    cpu_info ci = {.name = "unknown"};
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return ci;
    char line[512];
    double sum = 0;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        if (!strncmp(line, "model name", 10) && !strcmp(ci.name, "unknown")) snprintf(ci.name, sizeof ci.name, "%s", v);
        else if (!strncmp(line, "cpu MHz", 7)) {
            double mhz = atof(v);
            if (ci.n_mhz == 0 || mhz < ci.mhz_min) ci.mhz_min = mhz;
            if (ci.n_mhz == 0 || mhz > ci.mhz_max) ci.mhz_max = mhz;
            sum += mhz;
            ci.n_mhz++;
        }
    }
    fclose(f);
    if (ci.n_mhz) ci.mhz_mean = sum / ci.n_mhz;
    return ci;
}

/* ---- the tests ------------------------------------------------------------------------------ */

typedef struct {
    char name[48];       /* pp512, tg128, "pp512 @ d1024" */
    int n_prompt, n_gen; /* one of them is 0 (both, for a vr test) */
    int n_rows;          /* vrN: rows a verify pass (else 0) */
    double *secs, *tps;  /* (r) wall seconds and tok/s per repetition */
    double median, sd;   /* of tps */
} bench_test;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double cli_median(const double *v, int n) {
    double *s = tern_xmalloc(sizeof(double) * (size_t)n);
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

static double sd_of(const double *v, int n) {
    if (n < 2) return 0.0;
    double mean = 0, ss = 0;
    for (int i = 0; i < n; i++) mean += v[i];
    mean /= n;
    for (int i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
    return sqrt(ss / (n - 1));
}

/* One timed run of test t with `depth` tokens already in the cache; returns wall seconds. */
static double run_once(tern_context *c, const bench_test *t, int depth, const int32_t *toks, float *logits) {
    int32_t next, ids[16];
    if (tern_context_truncate(c, depth) != 0) cli_die("%s", tern_last_error());
    double t0 = tern_time_s();
    if (t->n_rows > 0) {
        for (int i = 0; i < VR_PASSES; i++) {
            if (tern_context_truncate(c, depth) != 0 || tern_eval_argmax(c, toks, t->n_rows, ids) != 0)
                cli_die("%s", tern_last_error());
        }
    } else if (t->n_prompt > 0) {
        if (tern_eval(c, toks, t->n_prompt, logits, 0) != 0) cli_die("%s", tern_last_error());
    } else {
        for (int i = 0; i < t->n_gen; i++)
            if (tern_eval_greedy(c, toks + i, 1, &next) != 0) cli_die("%s", tern_last_error());
    }
    return tern_time_s() - t0;
}

static void fmt_size(char *buf, size_t n, uint64_t bytes) {
    if (bytes >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", bytes / (double)(1ull << 30));
    else snprintf(buf, n, "%.2f MiB", bytes / (double)(1ull << 20));
}

static void fmt_params(char *buf, size_t n, uint64_t p) {
    if (p >= 1000000000ull) snprintf(buf, n, "%.2f B", p / 1e9);
    else snprintf(buf, n, "%.2f M", p / 1e6);
}

/* ---- --parallel: llama-batched-bench's table ------------------------------------------------- */

/* The floor of a --parallel step (shared/MEASURE.md "Before a kernel: the two ceilings"; issue 26): max(bytes /
 * read bandwidth, FLOPs / matrix peak), each input read once and each output written once. This struct and
 * par_floor_* below are the only place that arithmetic lives; bench/parallel_peer.sh reads its results from the
 * receipt.
 *   bytes: every matrix a forward streams, once a step whatever the number of rows (each layer's wq wk wv wo w_gate
 *          w_up w_down and the output head, tied or not, in their stored types: the bytes the GEMV / GEMM read; the
 *          embedding table is read a row a token and the norms are a few KiB, both left out), plus the KV cache:
 *          a decode step reads every sequence's keys and values at its depth, a prefill step writes its positions;
 *   FLOPs: 2 a matrix element a token (the matrices' elements, not tern_model_n_params, which counts the
 *          embedding table), plus attention, 4 n_head head_dim a query and key a layer (q.k and p.v), causal in a
 *          prompt; a sliding-window layer reads at most its window of keys.
 * Ceilings: --read-bw and --matrix-peak where given; else on CUDA the H200's (the box this floor is meant for):
 * read 4.15e12 B/s, the read-only stream the issue and bench/perf_table.sh use; peak 989e12 FLOP/s, the H200's
 * dense FP16/BF16 tensor rate. Not INT8's 1979e12: the decode GEMM (gemm_mma.cu) runs the int8 MMA twice a block,
 * once for each byte plane of its 16-bit activations, so its multiply-adds cost two int8 ones and its ceiling is
 * 1979 / 2; prefill's GEMM and attention run on f16 tensor cores. On the CPU they are measured at the start, on the
 * bench's threads (roofline_cpu_ceilings: `tern roofline --device cpu --quick`'s read and, for quantized matrices,
 * int8 rows; fma for float ones): the H200's numbers there gave %fl columns of nothing. */
#define PAR_READ_BW 4.15e12
#define PAR_MATRIX_PEAK 989e12

typedef struct {
    double read_bw, peak;  /* bytes/s, FLOP/s */
    double w_bytes;        /* the matrices' stored bytes */
    double w_params;       /* their elements */
    double kv_layer_pos;   /* K and V bytes of one position in one layer (the cache type's element size) */
    double attn_layer_key; /* FLOPs of one query on one key in one layer */
    const tern_model *m;   /* its layers' windows */
} par_floor;

static double wbytes(const tern_weight *w) { return (double)w->row_bytes * (double)w->n_out; }
static double wparams(const tern_weight *w) { return (double)w->n_in * (double)w->n_out; }

static par_floor par_floor_of(const tern_model *m, int kv_type, double read_bw, double peak) {
    par_floor f = {.read_bw = read_bw, .peak = peak, .m = m};
    for (int l = 0; l < m->n_layer; l++) {
        const tern_layer *L = &m->layers[l];
        const tern_weight *w[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 7; i++) f.w_bytes += wbytes(w[i]), f.w_params += wparams(w[i]);
    }
    f.w_bytes += wbytes(&m->output);
    f.w_params += wparams(&m->output);
    /* f16: 2 bytes an element; Q8_0: blocks of 32 in 34 bytes */
    f.kv_layer_pos = 2.0 * m->n_head_kv * m->head_dim * (kv_type == TERN_CACHE_Q8_0 ? 34.0 / 32.0 : 2.0);
    f.attn_layer_key = 4.0 * m->n_head * m->head_dim;
    return f;
}

/* Keys one query at position n - 1 (n keys in its sequence) reads, summed over the layers. */
static double par_layer_keys(const par_floor *f, int n) {
    double s = 0;
    for (int l = 0; l < f->m->n_layer; l++) {
        const int w = f->m->layers[l].window;
        s += w > 0 && w < n ? w : n;
    }
    return s;
}

/* Seconds of the floor of one decode step: B sequences, each appending a token after n - 1 cached ones (n keys).
 * *flops_bound: 1 when the FLOPs side is the larger. */
static double par_floor_decode(const par_floor *f, int B, int n, int *flops_bound) {
    const double keys = par_layer_keys(f, n);
    const double bytes = f->w_bytes + B * keys * f->kv_layer_pos;
    const double flops = B * (2.0 * f->w_params + keys * f->attn_layer_key);
    if (flops_bound) *flops_bound = flops / f->peak > bytes / f->read_bw;
    return fmax(bytes / f->read_bw, flops / f->peak);
}

/* Seconds of the floor of the prefill step: B prompts of pp tokens in one step (query i of a prompt sees i keys,
 * at most a layer's window), their K and V written once. */
static double par_floor_prefill(const par_floor *f, int B, int pp, int *flops_bound) {
    double qk = 0; /* sum over the layers of the query-key pairs of one prompt */
    for (int l = 0; l < f->m->n_layer; l++) {
        const double w = f->m->layers[l].window > 0 && f->m->layers[l].window < pp ? f->m->layers[l].window : pp;
        qk += w * (w + 1) / 2 + (pp - w) * w;
    }
    const double bytes = f->w_bytes + (double)B * pp * f->m->n_layer * f->kv_layer_pos;
    const double flops = B * (2.0 * f->w_params * pp + qk * f->attn_layer_key);
    if (flops_bound) *flops_bound = flops / f->peak > bytes / f->read_bw;
    return fmax(bytes / f->read_bw, flops / f->peak);
}

/* The floor of a whole row: *t_pp the prefill step's, *t_tg the sum of its tg decode steps' (step k at pp + k + 1
 * keys); *tg_flops: whether the deepest step is FLOPs-bound. */
static void par_floor_row(const par_floor *f, int B, int pp, int tg, double *t_pp, double *t_tg, int *pp_flops,
                          int *tg_flops) {
    *pp_flops = *tg_flops = 0;
    *t_pp = pp > 0 ? par_floor_prefill(f, B, pp, pp_flops) : 0.0;
    *t_tg = 0;
    for (int k = 0; k < tg; k++) *t_tg += par_floor_decode(f, B, pp + k + 1, tg_flops);
}

/* The KV cache bytes a tg test's token reads, the mean over its tokens (token k at depth d attends to d + k + 1 keys,
 * a sliding-window layer to at most its window: par_layer_keys), from the shapes and the cache types (issue 25: a
 * windowed model's decode should stay nearly flat in depth). nowin: the same with every layer reading all its keys. */
static double kv_bytes_token(const tern_model *m, int ctk, int ctv, int depth, int n_gen, int nowin) {
    const par_floor f = {.m = m};
    const double el = (ctk == TERN_CACHE_Q8_0 ? 34.0 / 32.0 : 2.0) + (ctv == TERN_CACHE_Q8_0 ? 34.0 / 32.0 : 2.0);
    double s = 0;
    for (int k = 0; k < n_gen; k++) {
        const int n = depth + k + 1;
        s += nowin ? (double)m->n_layer * n : par_layer_keys(&f, n);
    }
    return n_gen > 0 ? s / n_gen * m->n_head_kv * m->head_dim * el : 0.0;
}

typedef struct {
    tern_device device;
    int n_threads, ubatch, tp, kv_type, reps, block;
    double read_bw, peak;
    const int *pp; int n_pp;
    const int *tg; int n_tg;
    const int *par; int n_par;
    const char *out_fmt, *receipt, *model, *stamp, *commit;
    int dirty;
    const char *cpu_name;
    int swa_compact;
    int n_ctx; /* -c: each sequence's context (0: the prompt plus the generated tokens, the least it can be) */
} bench_par_opts;

typedef struct {
    int pp, tg, b;
    double t_pp, t_tg;   /* seconds, the median repetition (by T) */
    double f_pp, f_tg;   /* seconds, their floors (par_floor_row) */
    int pp_flops, tg_flops;
} par_row;

/* One repetition: B sequences each prefill pp tokens (one step: every prompt in one batch, the last row of each
 * asking its greedy id) and decode tg steps of B tokens (each sequence fed its own greedy id). Seconds into
 * *t_pp, *t_tg. The sequences are freed after. */
static void par_once(tern_engine *e, tern_batch *b, int pp, int tg, int B, const int32_t *toks, int n_vocab, double *t_pp,
                     double *t_tg) {
    tern_seq **s = tern_xcalloc((size_t)B, sizeof *s);
    int32_t *next = tern_xcalloc((size_t)B, sizeof(int32_t));
    int *row = tern_xcalloc((size_t)B, sizeof(int));
    for (int i = 0; i < B; i++)
        if (!(s[i] = tern_seq_new(e))) cli_die("%s", tern_last_error());
    tern_batch_clear(b);
    for (int i = 0; i < B; i++)
        for (int k = 0; k < pp; k++)
            row[i] = tern_batch_add(b, s[i], toks[(i * 7919 + k) % (pp + 7919)] % n_vocab, k == pp - 1 ? TERN_BATCH_ARGMAX : 0);
    double t0 = tern_time_s();
    if (pp > 0 && tern_engine_decode(e, b) != 0) cli_die("%s", tern_last_error());
    *t_pp = tern_time_s() - t0;
    for (int i = 0; i < B; i++) next[i] = pp > 0 ? tern_batch_id(b, row[i]) : toks[i] % n_vocab;
    t0 = tern_time_s();
    for (int k = 0; k < tg; k++) {
        tern_batch_clear(b);
        for (int i = 0; i < B; i++) row[i] = tern_batch_add(b, s[i], next[i], TERN_BATCH_ARGMAX);
        if (tern_engine_decode(e, b) != 0) cli_die("%s", tern_last_error());
        for (int i = 0; i < B; i++) next[i] = tern_batch_id(b, row[i]);
    }
    *t_tg = tern_time_s() - t0;
    for (int i = 0; i < B; i++) tern_seq_free(s[i]);
    free(s);
    free(next);
    free(row);
}

static int bench_parallel(tern_model *m, const bench_par_opts *o) {
    int max_b = 1, max_pp = 0, max_tg = 0;
    for (int i = 0; i < o->n_par; i++) max_b = o->par[i] > max_b ? o->par[i] : max_b;
    for (int i = 0; i < o->n_pp; i++) max_pp = o->pp[i] > max_pp ? o->pp[i] : max_pp;
    for (int i = 0; i < o->n_tg; i++) max_tg = o->tg[i] > max_tg ? o->tg[i] : max_tg;
    tern_engine_params ep = tern_engine_default_params();
    /* each sequence's context: -c where given (at least what a row needs), so an engine can be made as tern serve makes
     * one (its context fixes the CUDA decode attention's grid of splits, backend_cuda.c att_splits_rule) */
    ep.ctx.n_ctx = max_pp + max_tg > 0 ? max_pp + max_tg : 1;
    if (o->n_ctx > ep.ctx.n_ctx) ep.ctx.n_ctx = o->n_ctx;
    ep.ctx.n_threads = o->n_threads;
    ep.ctx.device = o->device;
    ep.ctx.ubatch = o->ubatch;
    ep.ctx.tp = o->tp;
    ep.ctx.cache_type_k = ep.ctx.cache_type_v = o->kv_type;
    ep.ctx.swa_compact = o->swa_compact;
    ep.ctx.verbose = 1;
    ep.n_seq_max = max_b;
    ep.block_size = o->block;
    cli_batch_order(max_b);
    tern_engine *e = tern_engine_new(m, &ep);
    if (!e) cli_die("%s", tern_last_error());
    const int n_vocab = tern_model_n_vocab(m), on_cuda = !strcmp(tern_engine_device(e), "cuda");
    int32_t *toks = tern_xmalloc(sizeof(int32_t) * (size_t)(max_pp + 7919));
    uint64_t sd = BENCH_SEED;
    for (int i = 0; i < max_pp + 7919; i++) {
        uint64_t z = (sd += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        toks[i] = (int32_t)((z ^ (z >> 31)) % (uint64_t)n_vocab);
    }
    tern_batch *b = tern_batch_new(max_b * (max_pp > 1 ? max_pp : 1));
    par_row *rows = tern_xcalloc((size_t)o->n_pp * o->n_tg * o->n_par, sizeof *rows);
    int n_rows = 0;
    double *tp_s = tern_xmalloc(sizeof(double) * (size_t)o->reps), *tg_s = tern_xmalloc(sizeof(double) * (size_t)o->reps);
    const int md = !strcmp(o->out_fmt, "md");
    if (md) {
        /* llama-batched-bench's columns, then the floors (tok/s) and the share of them (par_floor) */
        printf("|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s | "
               "S_PP floor | PP %%fl | S_TG floor | TG %%fl |\n");
        printf("|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|"
               "------------|--------|------------|--------|\n");
        fflush(stdout);
    }
    /* the ceilings (par_floor's comment): given, the H200's on CUDA, measured on the CPU */
    double read_bw = o->read_bw, peak = o->peak;
    const char *ceil_src = read_bw > 0 && peak > 0 ? "given" : on_cuda ? "the H200's (defaults)" : "measured";
    if (!on_cuda && (read_bw <= 0 || peak <= 0)) {
        double rd, fm, i8;
        roofline_cpu_ceilings(o->n_threads, &rd, &fm, &i8);
        const char *wt = tern_model_weight_type(m); /* the type of most matrix bytes */
        const int fl_w = !strcmp(wt, "F32") || !strcmp(wt, "F16") || !strcmp(wt, "BF16");
        if (read_bw <= 0) read_bw = rd;
        if (peak <= 0) peak = fl_w ? fm : i8;
        if (o->read_bw > 0 || o->peak > 0) ceil_src = "given and measured";
    } else {
        if (read_bw <= 0) read_bw = PAR_READ_BW;
        if (peak <= 0) peak = PAR_MATRIX_PEAK;
        if (on_cuda && (o->read_bw > 0) != (o->peak > 0)) ceil_src = "given and the H200's";
    }
    const par_floor fl = par_floor_of(m, o->kv_type, read_bw, peak);
    double w0, w1;
    par_once(e, b, o->pp[0], o->tg[0] > 4 ? 4 : o->tg[0], o->par[0], toks, n_vocab, &w0, &w1); /* warm-up */
    for (int ip = 0; ip < o->n_pp; ip++)
        for (int it = 0; it < o->n_tg; it++)
            for (int ib = 0; ib < o->n_par; ib++) {
                par_row *r = &rows[n_rows++];
                r->pp = o->pp[ip], r->tg = o->tg[it], r->b = o->par[ib];
                /* each B's first decode steps outside the timer too: two steps of B tokens, so the B-token pass's
                 * one-time costs (its CUDA graph's capture, the first launch of kernels no earlier B ran, which the
                 * driver loads lazily) do not land in T_TG (docs/ledger.md 2026-12-04 "v2 from 4 or 5 tokens") */
                if (ip == 0 && it == 0 && ib > 0) par_once(e, b, 0, ep.ctx.n_ctx < 2 ? 1 : 2, r->b, toks, n_vocab, &w0, &w1);
                double *tot = tern_xmalloc(sizeof(double) * (size_t)o->reps);
                for (int k = 0; k < o->reps; k++) {
                    par_once(e, b, r->pp, r->tg, r->b, toks, n_vocab, &tp_s[k], &tg_s[k]);
                    tot[k] = tp_s[k] + tg_s[k];
                }
                const double med = cli_median(tot, o->reps);
                int pick = 0; /* the repetition whose total is the median (the lower middle for an even count) */
                for (int k = 0; k < o->reps; k++)
                    if (fabs(tot[k] - med) < fabs(tot[pick] - med)) pick = k;
                free(tot);
                r->t_pp = tp_s[pick];
                r->t_tg = tg_s[pick];
                par_floor_row(&fl, r->b, r->pp, r->tg, &r->f_pp, &r->f_tg, &r->pp_flops, &r->tg_flops);
                const double nkv = (double)r->b * (r->pp + r->tg), t = r->t_pp + r->t_tg;
                if (md) {
                    printf("| %5d | %6d | %4d | %6.0f | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f | %10.1f | %5.1f%% | "
                           "%10.1f | %5.1f%% |\n",
                           r->pp, r->tg, r->b, nkv, r->t_pp, r->t_pp > 0 ? r->b * r->pp / r->t_pp : 0.0, r->t_tg,
                           r->t_tg > 0 ? r->b * r->tg / r->t_tg : 0.0, t, t > 0 ? nkv / t : 0.0,
                           r->f_pp > 0 ? r->b * r->pp / r->f_pp : 0.0, r->t_pp > 0 ? 100 * r->f_pp / r->t_pp : 0.0,
                           r->f_tg > 0 ? r->b * r->tg / r->f_tg : 0.0, r->t_tg > 0 ? 100 * r->f_tg / r->t_tg : 0.0);
                    fflush(stdout);
                }
            }
    /* the receipt: -o json on stdout, and --receipt PATH */
    for (int pass = 0; pass < 2; pass++) {
        FILE *rf = NULL;
        if (pass == 0 && o->receipt) {
            if (!(rf = fopen(o->receipt, "w"))) cli_die("cannot write receipt '%s': %s", o->receipt, strerror(errno));
        } else if (pass == 1 && !md) rf = stdout;
        if (!rf) continue;
        bench_json_head(rf, "tern bench --parallel", o->stamp, o->commit, o->dirty);
        fputs("},\n  \"device\": {\"backend\": ", rf);
        bench_json_str(rf, tern_engine_device(e));
        fputs(", \"name\": ", rf);
        bench_json_str(rf, on_cuda ? tern_cuda_name() : o->cpu_name);
        int bs = 0;
        tern_engine_kv_usage(e, NULL, NULL, &bs);
        /* gemv_chunk: the order asked for (tern_config); gemv_order: the one the CUDA engine runs (null on the CPU) */
        char ord[16] = "null";
        if (on_cuda) snprintf(ord, sizeof ord, "%d", tern_cuda_order());
        fprintf(rf, ", \"threads\": %d, \"cache_type\": \"%s\", \"kv_block_size\": %d, \"gemv_chunk\": %d, \"gemv_order\": %s, "
                    "\"n_ctx\": %d},\n  \"model\": {\"path\": ",
                o->n_threads, o->kv_type == TERN_CACHE_Q8_0 ? "q8_0" : "f16", bs, tern_config_get().gemv_chunk, ord,
                ep.ctx.n_ctx);
        bench_json_str(rf, o->model);
        fputs(", \"desc\": ", rf);
        bench_json_str(rf, tern_model_desc(m));
        bench_json_types(rf, m);
        fprintf(rf, ", \"n_layer\": %d, \"n_head\": %d, \"n_head_kv\": %d, \"head_dim\": %d},\n", m->n_layer, m->n_head,
                m->n_head_kv, m->head_dim);
        fprintf(rf, "  \"floor\": {\"read_bw\": %.6g, \"matrix_peak\": %.6g, \"weight_bytes\": %.0f, \"weight_params\": %.0f, "
                    "\"kv_bytes_layer_position\": %.4f, \"attn_flops_layer_key\": %.0f,\n    \"ceilings\": \"%s\", \"rule\": ",
                fl.read_bw, fl.peak, fl.w_bytes, fl.w_params, fl.kv_layer_pos, fl.attn_layer_key, ceil_src);
        bench_json_str(rf, "a step's floor = max(bytes / read_bw, FLOPs / matrix_peak); bytes = weight_bytes (every matrix "
                           "once a step, the embedding table left out) + the KV cache (decode: read, each sequence at its "
                           "depth; prefill: written), FLOPs = 2 weight_params a token + attention; S_TG_floor = B TG / the "
                           "sum of the TG decode steps' floors, TG_share = that sum / T_TG (PP alike, one step); *_bound: "
                           "the side that decides (TG: the deepest step)");
        fprintf(rf, "},\n  \"repetitions\": %d,\n  \"timer\": \"wall clock around tern_engine_decode: the prefill step "
                    "(every sequence's prompt) and the tg decode steps; the repetition with the median T; untimed before: one "
                    "warm-up of the first B, two decode steps of each further B\",\n  \"results\": [\n",
                o->reps);
        for (int i = 0; i < n_rows; i++) {
            const par_row *r = &rows[i];
            const double nkv = (double)r->b * (r->pp + r->tg), t = r->t_pp + r->t_tg;
            /* every record names its device and weight type, so records of several receipts stay apart when merged */
            fputs("    {\"device\": ", rf);
            bench_json_str(rf, on_cuda ? tern_cuda_name() : o->cpu_name);
            fputs(", \"backend\": ", rf);
            bench_json_str(rf, tern_engine_device(e));
            fputs(", \"weight_type\": ", rf);
            bench_json_str(rf, tern_model_weight_type(m));
            fprintf(rf, ",\n     \"PP\": %d, \"TG\": %d, \"B\": %d, \"N_KV\": %.0f, \"T_PP\": %.6f, \"S_PP\": %.3f, "
                        "\"T_TG\": %.6f, \"S_TG\": %.3f, \"T\": %.6f, \"S\": %.3f,\n",
                    r->pp, r->tg, r->b, nkv, r->t_pp, r->t_pp > 0 ? r->b * r->pp / r->t_pp : 0.0, r->t_tg,
                    r->t_tg > 0 ? r->b * r->tg / r->t_tg : 0.0, t, t > 0 ? nkv / t : 0.0);
            fprintf(rf, "     \"T_PP_floor\": %.9g, \"S_PP_floor\": %.3f, \"PP_share\": %.9g, \"PP_bound\": \"%s\", "
                        "\"T_TG_floor\": %.9g, \"S_TG_floor\": %.3f, \"TG_share\": %.9g, \"TG_bound\": \"%s\"}%s\n",
                    r->f_pp, r->f_pp > 0 ? r->b * r->pp / r->f_pp : 0.0, r->t_pp > 0 ? r->f_pp / r->t_pp : 0.0,
                    r->pp_flops ? "flops" : "bytes", r->f_tg, r->f_tg > 0 ? r->b * r->tg / r->f_tg : 0.0,
                    r->t_tg > 0 ? r->f_tg / r->t_tg : 0.0, r->tg_flops ? "flops" : "bytes", i + 1 < n_rows ? "," : "");
        }
        fputs("  ]\n}\n", rf);
        if (rf != stdout) {
            if (fclose(rf) != 0) cli_die("cannot write receipt '%s'", o->receipt);
            fprintf(stderr, "bench: receipt %s\n", o->receipt);
        }
    }
    if (md)
        printf("\n%s on %s (%s); B sequences, prompt PP and TG generated tokens each; median of %d repetitions by T after "
               "1 warm-up (each further B: 2 untimed decode steps first); commit %.12s%s\n", tern_model_desc(m), on_cuda ? tern_cuda_name() : o->cpu_name,
               tern_engine_device(e), o->reps, o->commit, o->dirty > 0 ? " (dirty)" : "");
    if (md)
        printf("floor of a step: max(bytes / %.4g B/s, FLOPs / %.4g FLOP/s) (%s%s; --read-bw, --matrix-peak); the "
               "matrices' %.3f GB once a step plus each sequence's KV cache (%.0f bytes a position), 2 x %.3g FLOPs a "
               "token plus attention; %%fl = the floor's time / the measured time\n",
               fl.read_bw, fl.peak, ceil_src, strcmp(ceil_src, "measured") ? "" : " at the start: tern roofline --quick's "
               "read and int8 (fma for float matrices) probes on the bench's threads", fl.w_bytes / 1e9,
               fl.kv_layer_pos * m->n_layer, fl.w_params);
    free(tp_s); free(tg_s); free(rows); free(toks);
    tern_batch_free(b);
    tern_engine_free(e);
    return 0;
}

int cmd_bench(int argc, char **argv) {
    const char *model = NULL, *out_fmt = "md", *receipt = NULL;
    tern_device device = cli_default_device();
    int ubatch = 0, tp = 1, syn_layers = 0, ctk = TERN_CACHE_F16, ctv = TERN_CACHE_F16, swa_compact = 0;
    const char *synthetic = NULL, *syn_type = "q4_0";
    int pp[MAX_TESTS] = {512}, n_pp = 1, tg[MAX_TESTS] = {128}, n_tg = 1, reps = 5, depth = 0, n_threads = 0, ctx_size = 0;
    int vr[MAX_TESTS] = {0}, n_vr = 0, par[MAX_TESTS] = {0}, n_par = 0, block = 0;
    double read_bw = 0, peak = 0; /* 0: not given (bench_parallel picks) */
    cli_args it = cli_args_begin(argc, argv);
    while (cli_args_next(&it)) {
        const char *a = it.opt;
#define ARG() cli_args_value(&it)
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = ARG();
        else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) n_pp = parse_list(a, ARG(), pp, MAX_TESTS, 0, 1 << 20);
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) n_tg = parse_list(a, ARG(), tg, MAX_TESTS, 0, 1 << 20);
        else if (!strcmp(a, "-v") || !strcmp(a, "--verify-rows")) n_vr = parse_list(a, ARG(), vr, MAX_TESTS, 1, 16);
        else if (!strcmp(a, "--parallel") || !strcmp(a, "-npl")) n_par = parse_list(a, ARG(), par, MAX_TESTS, 1, 4096);
        else if (!strcmp(a, "--block-size")) block = (int)cli_parse_long(a, ARG(), 16, 256);
        else if (!strcmp(a, "--read-bw")) read_bw = parse_rate(a, ARG());
        else if (!strcmp(a, "--matrix-peak")) peak = parse_rate(a, ARG());
        else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) reps = (int)cli_parse_long(a, ARG(), 1, 1000);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) n_threads = (int)cli_parse_long(a, ARG(), 1, 1024);
        else if (!strcmp(a, "-d") || !strcmp(a, "--depth")) depth = (int)cli_parse_long(a, ARG(), 0, 1 << 20);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) ctx_size = (int)cli_parse_long(a, ARG(), 0, 1 << 24);
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) out_fmt = ARG();
        else if (!strcmp(a, "--receipt")) receipt = ARG();
        else if (!strcmp(a, "--device")) device = cli_parse_device(ARG());
        else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch")) ubatch = (int)cli_parse_long(a, ARG(), 1, 1 << 16);
        else if (!strcmp(a, "--tp")) tp = (int)cli_parse_long(a, ARG(), 1, 8);
        else if (!strcmp(a, "--swa-compact")) swa_compact = 1;
        else if (!strcmp(a, "--swa-full")) swa_compact = 0; /* bench's default; accepted as run, chat and serve do */
        else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") || !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v")) {
            const char *v = ARG();
            const int t = tern_cache_type_parse(v);
            if (t < 0) cli_die("%s expects f16 or q8_0, got '%s'", a, v);
            if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k")) ctk = t;
            else ctv = t;
        }
        else if (!strcmp(a, "--synthetic")) synthetic = ARG();
        else if (!strcmp(a, "--synthetic-type")) syn_type = ARG();
        else if (!strcmp(a, "--synthetic-layers")) syn_layers = (int)cli_parse_long(a, ARG(), 1, 1000);
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: tern bench -m MODEL [-p 512,2048] [-n 128] [-v ROWS] [-r 5] [--device cpu|cuda|auto] [-t THREADS]\n"
                 "                  [-ub UBATCH] [--tp N] [-o md|json|jsonl|csv] [--depth D] [-c CTX] [--receipt PATH]\n"
                 "                  [--parallel B,B... [--block-size N] [--read-bw B/S] [--matrix-peak FLOP/S]]\n"
                 "                  [-ctk f16|q8_0] [-ctv f16|q8_0]   (KV cache type; q8_0: CUDA, K and V the same)\n"
                 "                  [--swa-compact]   (sliding-window layers' KV in a pool of their own; a test that\n"
                 "                  truncates back past the window + 64 positions fails)\n"
                 "       tern bench --synthetic PRESET [--synthetic-type q4_0] [--synthetic-layers N] ... (CUDA)\n"
                 "  --synthetic: the model tern synth --arch PRESET --type TYPE would write (seed 0), made in memory\n"
                 "  while it is uploaded (no file: for models larger than the disk, e.g. llama3-405b); --tp N: tensor\n"
                 "  parallelism over CUDA GPUs 0..N-1 (NCCL)\n"
                 "  --parallel 1,4,16,64: llama-batched-bench's table instead: B sequences at once, each a prompt of -p\n"
                 "  tokens (all B prompts in one step) then -n decode steps of B tokens (one a sequence); --block-size N:\n"
                 "  rows a KV block (a power of two, 16..256; default 16 on the CPU, 128 on CUDA); each row adds its\n"
                 "  floor, max(bytes / --read-bw, FLOPs / --matrix-peak) a step (defaults: on CUDA the H200's, 4.15e12\n"
                 "  B/s and 989e12 FLOP/s; on the CPU measured at the start, ~1 s), and the share of it reached\n"
                 "  -p, -n: comma-separated prompt / generation lengths (0 = skip); -v: rows of a speculative verify\n"
                 "  pass (1..16; vrN: 32 tern_eval_argmax passes of N tokens at one position, t/s = rows a second,\n"
                 "  the receipt adds ms a pass); -r: timed repetitions after one\n"
                 "  warm-up; --depth D: tokens already in the KV cache; -c CTX: each sequence's context (default and\n"
                 "  least: depth + prompt + generated; tern serve's default is the model's, at most 4096; on CUDA it sets\n"
                 "  the decode attention's grid of splits); -o md (llama-bench's table), csv, jsonl: a row\n"
                 "  as each test finishes; -o json: the receipt (JSON, every sample) on stdout at the end; --receipt PATH\n"
                 "  writes the receipt to PATH too (nothing is written unless asked); each tg test also gives the KV\n"
                 "  cache bytes a token reads (from the shapes; sliding-window layers read at most their window)");
            return 0;
        } else cli_die("unknown option '%s' for bench (see tern bench --help)", a);
#undef ARG
    }
    if (strcmp(out_fmt, "md") && strcmp(out_fmt, "json") && strcmp(out_fmt, "jsonl") && strcmp(out_fmt, "csv"))
        cli_die("-o expects md, json, jsonl or csv, got '%s'", out_fmt);
    if (n_par && strcmp(out_fmt, "md") && strcmp(out_fmt, "json"))
        cli_die("-o %s: --parallel prints md or json", out_fmt);
    char syn_path[128];
    if (synthetic && model) cli_die("bench takes -m MODEL or --synthetic PRESET, not both");
    if (synthetic) {
        snprintf(syn_path, sizeof syn_path, "synthetic:%s:%s", synthetic, syn_type);
        model = syn_path;
    }
    if (!model) model = getenv("TERN_MODEL");
    if (!model) cli_die("bench needs a model: -m MODEL (or TERN_MODEL, or --synthetic PRESET)");
    if (!synthetic && access(model, R_OK) != 0) cli_die("cannot read model '%s': %s", model, strerror(errno));
    if (n_threads > 4 * tern_n_cores())
        cli_die("-t %d is more than 4x the %d cores available (spinning threads would crawl)", n_threads,
                  tern_n_cores());
    if (n_threads <= 0) n_threads = tern_n_cores();

    /* the test list, llama-bench order: every pp, then every tg */
    bench_test tests[3 * MAX_TESTS];
    int n_tests = 0, max_len = 0;
    for (int k = 0; k < 3; k++) {
        const int *v = k == 2 ? vr : k ? tg : pp, nv = k == 2 ? n_vr : k ? n_tg : n_pp;
        const char *kind = k == 2 ? "vr" : k ? "tg" : "pp";
        for (int i = 0; i < nv; i++) {
            if (v[i] == 0) continue;
            bench_test *t = &tests[n_tests++];
            memset(t, 0, sizeof *t);
            t->n_prompt = k == 0 ? v[i] : 0;
            t->n_gen = k == 1 ? v[i] : 0;
            t->n_rows = k == 2 ? v[i] : 0;
            if (depth) snprintf(t->name, sizeof t->name, "%s%d @ d%d", kind, v[i], depth);
            else snprintf(t->name, sizeof t->name, "%s%d", kind, v[i]);
            t->secs = tern_xcalloc((size_t)reps, sizeof(double));
            t->tps = tern_xcalloc((size_t)reps, sizeof(double));
            if (v[i] > max_len) max_len = v[i];
        }
    }
    if (n_tests == 0 && !n_par) cli_die("nothing to run: every -p and -n value is 0");

    /* receipt facts gathered before the first load, so the clocks are the idle clocks at start */
    cpu_info ci = read_cpuinfo();
    char commit[512];
    int dirty;
    bench_git_info(commit, sizeof commit, &dirty);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32], stamp_file[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    strftime(stamp_file, sizeof stamp_file, "%Y%m%dT%H%M%SZ", &tm);

    tern_model *m = synthetic ? tern_synth_model_new(synthetic, syn_type, syn_layers, 0) : tern_model_load(model, 0);
    if (!m) cli_die("%s", tern_last_error());
    const int n_vocab = tern_model_n_vocab(m);
    if (n_par) {
        const bench_par_opts po = {device, n_threads, ubatch, tp, ctk, reps, block, read_bw, peak, pp, n_pp, tg, n_tg, par,
                                   n_par, out_fmt, receipt, model, stamp, commit, dirty, ci.name, swa_compact, ctx_size};
        const int rc = bench_parallel(m, &po);
        for (int ti = 0; ti < n_tests; ti++) {
            free(tests[ti].secs);
            free(tests[ti].tps);
        }
        tern_model_free(m);
        return rc;
    }
    const int n_ctx = depth + max_len > ctx_size ? depth + max_len : ctx_size;
    tern_context_params cp = tern_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = n_threads;
    cp.device = device;
    cp.ubatch = ubatch;
    cp.tp = tp;
    cp.cache_type_k = ctk;
    cp.cache_type_v = ctv;
    cp.swa_compact = swa_compact;
    cp.verbose = 1;
    tern_context *c = tern_context_new_ex(m, &cp);
    if (!c) cli_die("%s", tern_last_error());
    const int on_cuda = !strcmp(tern_context_device(c), "cuda");

    /* pseudo-random ids (splitmix64 of a fixed seed): depth prefix, then max_len test tokens */
    int32_t *toks = tern_xmalloc(sizeof(int32_t) * (size_t)(depth + max_len));
    uint64_t s = BENCH_SEED;
    for (int i = 0; i < depth + max_len; i++) {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        toks[i] = (int32_t)(z % (uint64_t)n_vocab);
    }
    float *logits = tern_xmalloc(sizeof(float) * (size_t)n_vocab);

    /* the model column as llama-bench's: "arch size type", e.g. "llama 135M Q4_1", the type the file's general.file_type
     * by llama.cpp's name ("Q4_K - Medium"), else the type of most matrix bytes; the receipt keeps the whole desc */
    char size_s[32], params_s[32], model_name[256], psize[32];
    const char *arch = tern_model_arch(m);
    fmt_size(size_s, sizeof size_s, tern_model_size_bytes(m));
    fmt_params(params_s, sizeof params_s, tern_model_n_params(m));
    const double np = (double)tern_model_n_params(m);
    if (np >= 1e9) snprintf(psize, sizeof psize, np >= 1e10 ? "%.0fB" : "%.1fB", np / 1e9);
    else snprintf(psize, sizeof psize, "%.0fM", np / 1e6);
    const char *ftype = tern_model_file_type(m);
    snprintf(model_name, sizeof model_name, "%s %s %s", arch, psize, ftype ? ftype : tern_model_weight_type(m));
    char backend[300];
    snprintf(backend, sizeof backend, "%s (%s)", on_cuda ? "CUDA" : "CPU", on_cuda ? tern_cuda_name() : tern_simd_name());
    const int f_md = !strcmp(out_fmt, "md"), f_csv = !strcmp(out_fmt, "csv"), f_jsonl = !strcmp(out_fmt, "jsonl");
    if (f_md) {
        printf("| model | size | params | backend | threads | test | t/s |\n");
        printf("| ----- | ---: | -----: | ------- | ------: | ---: | --: |\n");
    } else if (f_csv) {
        printf("model,size_bytes,n_params,backend,threads,test,n_prompt,n_gen,depth,median_tok_s,sd_tok_s\n");
    }
    fflush(stdout);

    for (int ti = 0; ti < n_tests; ti++) {
        bench_test *t = &tests[ti];
        if (tern_context_truncate(c, 0) != 0) cli_die("%s", tern_last_error());
        if (depth > 0 && tern_eval(c, toks, depth, logits, 0) != 0) cli_die("%s", tern_last_error());
        const int n = t->n_rows ? t->n_rows * VR_PASSES : t->n_prompt ? t->n_prompt : t->n_gen;
        run_once(c, t, depth, toks + depth, logits); /* warm-up */
        for (int r = 0; r < reps; r++) {
            t->secs[r] = run_once(c, t, depth, toks + depth, logits);
            t->tps[r] = t->secs[r] > 0 ? n / t->secs[r] : 0.0;
        }
        t->median = cli_median(t->tps, reps);
        t->sd = sd_of(t->tps, reps);
        /* the row now, not at the end */
        if (f_md) {
            printf("| %s | %s | %s | %s | %d | %s | %.2f ± %.2f |\n", model_name, size_s, params_s, backend, n_threads,
                   t->name, t->median, t->sd);
        } else if (f_csv) {
            printf("\"%s\",%llu,%llu,\"%s\",%d,\"%s\",%d,%d,%d,%.3f,%.3f\n", model_name,
                   (unsigned long long)tern_model_size_bytes(m), (unsigned long long)tern_model_n_params(m), backend,
                   n_threads, t->name, t->n_prompt, t->n_gen, depth, t->median, t->sd);
        } else if (f_jsonl) {
            fputs("{\"model\": ", stdout);
            bench_json_str(stdout, model_name);
            fputs(", \"desc\": ", stdout);
            bench_json_str(stdout, tern_model_desc(m));
            printf(", \"size_bytes\": %llu, \"n_params\": %llu, \"backend\": ", (unsigned long long)tern_model_size_bytes(m),
                   (unsigned long long)tern_model_n_params(m));
            bench_json_str(stdout, backend);
            printf(", \"threads\": %d, \"test\": ", n_threads);
            bench_json_str(stdout, t->name);
            printf(", \"n_prompt\": %d, \"n_gen\": %d, \"depth\": %d, \"repetitions\": %d, \"median_tok_s\": %.3f, "
                   "\"sd_tok_s\": %.3f, \"samples\": [", t->n_prompt, t->n_gen, depth, reps, t->median, t->sd);
            for (int r = 0; r < reps; r++) printf("%s%.3f", r ? ", " : "", t->tps[r]);
            printf("], \"commit\": \"%.40s\", \"dirty\": %s}\n", commit, dirty > 0 ? "true" : "false");
        }
        fflush(stdout);
    }
    (void)stamp_file;

    /* the receipt: on stdout with -o json, to a file only with --receipt */
    FILE *rf = NULL;
    char rpath[PATH_MAX];
    if (receipt) snprintf(rpath, sizeof rpath, "%s", receipt);
    else rpath[0] = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            if (!rpath[0]) continue;
            rf = fopen(rpath, "w");
            if (!rf) cli_die("cannot write receipt '%s': %s", rpath, strerror(errno));
        } else {
            if (strcmp(out_fmt, "json")) continue;
            rf = stdout;
        }
        bench_json_head(rf, "tern bench", stamp, commit, dirty);
#ifdef __OPTIMIZE__
        fputs(", \"optimized\": true", rf);
#else
        fputs(", \"optimized\": false", rf);
#endif
        fputs(", \"cflags\": \"unknown at run time (Makefile default: -O2 -g -ffp-contract=off)\"},\n", rf);
        fputs("  \"device\": {\"backend\": ", rf);
        bench_json_str(rf, tern_context_device(c));
        fputs(", \"name\": ", rf);
        bench_json_str(rf, on_cuda ? tern_cuda_name() : ci.name);
        fputs(", \"host_cpu\": ", rf);
        bench_json_str(rf, ci.name);
        fprintf(rf, ", \"tp\": %d, \"cache_type_k\": \"%s\", \"cache_type_v\": \"%s\"", tp,
                ctk == TERN_CACHE_Q8_0 ? "q8_0" : "f16", ctv == TERN_CACHE_Q8_0 ? "q8_0" : "f16");
        fprintf(rf, ", \"ubatch\": %d, \"cores\": %d, \"cpu_mhz_at_start\": {\"min\": %.1f, \"mean\": %.1f, \"max\": %.1f, \"n\": %d}},\n",
                ubatch, tern_n_cores(), ci.mhz_min, ci.mhz_mean, ci.mhz_max, ci.n_mhz);
        fputs("  \"model\": {\"path\": ", rf);
        bench_json_str(rf, model);
        fputs(", \"desc\": ", rf);
        bench_json_str(rf, tern_model_desc(m));
        bench_json_types(rf, m);
        fprintf(rf, ", \"size_bytes\": %llu, \"n_params\": %llu, \"n_vocab\": %d},\n",
                (unsigned long long)tern_model_size_bytes(m), (unsigned long long)tern_model_n_params(m), n_vocab);
        fprintf(rf, "  \"threads\": %d,\n  \"repetitions\": %d,\n  \"warmup\": 1,\n  \"depth\": %d,\n  \"n_ctx\": %d,\n",
                n_threads, reps, depth, n_ctx);
        fprintf(rf, "  \"token_seed\": %llu,\n  \"timer\": \"wall clock around tern_eval (pp), tern_eval_greedy (tg) and tern_eval_argmax (vr)\",\n  \"results\": [\n",
                (unsigned long long)BENCH_SEED);
        for (int ti = 0; ti < n_tests; ti++) {
            const bench_test *t = &tests[ti];
            fputs("    {\"test\": ", rf);
            bench_json_str(rf, t->name);
            fprintf(rf, ", \"n_prompt\": %d, \"n_gen\": %d, \"depth\": %d, \"median_tok_s\": %.3f, \"sd_tok_s\": %.3f,\n",
                    t->n_prompt, t->n_gen, depth, t->median, t->sd);
            if (t->n_rows)
                fprintf(rf, "     \"verify_rows\": %d, \"passes\": %d, \"median_ms_per_pass\": %.4f,\n", t->n_rows,
                        VR_PASSES, t->median > 0 ? 1e3 * t->n_rows / t->median : 0.0);
            else if (t->n_gen)
                fprintf(rf, "     \"kv_bytes_token\": %.1f, \"kv_bytes_token_no_window\": %.1f,\n",
                        kv_bytes_token(m, ctk, ctv, depth, t->n_gen, 0), kv_bytes_token(m, ctk, ctv, depth, t->n_gen, 1));
            fputs("     \"samples\": [", rf);
            for (int r = 0; r < reps; r++) fprintf(rf, "%s%.3f", r ? ", " : "", t->tps[r]);
            fputs("],\n     \"samples_s\": [", rf);
            for (int r = 0; r < reps; r++) fprintf(rf, "%s%.6f", r ? ", " : "", t->secs[r]);
            fprintf(rf, "]}%s\n", ti + 1 < n_tests ? "," : "");
        }
        fputs("  ]\n}\n", rf);
        if (rf != stdout) {
            if (fclose(rf) != 0) cli_die("cannot write receipt '%s'", rpath);
            fprintf(stderr, "bench: receipt %s\n", rpath);
        }
    }

    if (f_md) {
        printf("\nmedian of %d repetitions after 1 warm-up ± sample sd; commit %.12s%s; %s\n", reps, commit,
               dirty > 0 ? " (dirty)" : "", ci.name);
        int n_win = 0;
        for (int l = 0; l < m->n_layer; l++) n_win += m->layers[l].window > 0;
        for (int ti = 0; ti < n_tests; ti++) {
            const bench_test *t = &tests[ti];
            if (t->n_rows && t->median > 0)
                printf("%s: %.3f ms a verify pass of %d rows\n", t->name, 1e3 * t->n_rows / t->median, t->n_rows);
            else if (!t->n_rows && t->n_gen) { /* the KV bytes a token reads (the receipt's kv_bytes_token) */
                char kb[32], kw[32];
                fmt_size(kb, sizeof kb, (uint64_t)kv_bytes_token(m, ctk, ctv, depth, t->n_gen, 0));
                fmt_size(kw, sizeof kw, (uint64_t)kv_bytes_token(m, ctk, ctv, depth, t->n_gen, 1));
                if (n_win)
                    printf("%s: KV cache read a token %s (mean over its tokens; %d of %d layers read at most their window; "
                           "%s without the windows)\n", t->name, kb, n_win, m->n_layer, kw);
                else
                    printf("%s: KV cache read a token %s (mean over its tokens)\n", t->name, kb);
            }
        }
    }
    fflush(stdout);

    for (int ti = 0; ti < n_tests; ti++) {
        free(tests[ti].secs);
        free(tests[ti].tps);
    }
    free(toks);
    free(logits);
    tern_context_free(c);
    tern_model_free(m);
    return 0;
}
