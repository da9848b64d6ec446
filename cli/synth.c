/* cli/synth.c: `tern synth` (issue 3): write a GGUF with exactly the tensor names, shapes, metadata and
 * quant types of a real llama-architecture model, filled with random blocks at realistic scales, so
 * loading, memory and speed can be measured on models nobody has downloaded.
 *
 *   tern synth --arch PRESET --type TYPE [--layers N] [--vocab N] [--seed S] -o FILE.gguf
 *   tern synth --arch PRESET --type TYPE [--layers N] [--vocab N] --dry-run   (prints metadata + directory)
 *
 * What the file holds (llama.cpp's llama-arch names, GGUF ne order = (n_in, n_out), innermost first):
 *   token_embd.weight (n_embd, n_vocab) TYPE   output_norm.weight (n_embd) f32   output.weight (n_embd, n_vocab)
 *   TYPE only for untied presets; per layer i: blk.i.attn_norm (n_embd) f32, attn_q (n_embd, n_head*hd),
 *   attn_k / attn_v (n_embd, n_kv*hd), attn_output (n_head*hd, n_embd), ffn_norm (n_embd) f32,
 *   ffn_gate / ffn_up (n_embd, n_ff), ffn_down (n_ff, n_embd), all matrices TYPE.
 * Values: every matrix element has std ~ 1/sqrt(n_in) (so activations keep their scale through 80 layers:
 * each matmul maps unit-RMS inputs to unit-RMS outputs), norm weights are 1 + N(0, 0.05^2). No zeros in
 * the scale fields, no NaN/Inf anywhere. Deterministic: the same arguments give the same bytes, on any
 * number of threads (each row has its own PRNG stream seeded from (seed, tensor, row)).
 *
 * How blocks are made, without a quantizer: each row is random bytes (xoshiro256+, 8 bytes a call), then
 * every block's fp16 scale fields are overwritten: d = D * jitter (jitter uniform in [0.75, 1.25], as real
 * blocks' scales vary; a random sign for the types without a minimum, see fill_row), and for the types
 * with a minimum (q4_1, q5_1: x = d*q + m; q2_k, q4_k, q5_k: x = d*sc*q - dmin*m) the minimum is set to centre the block's values around zero on average. D is
 * the target std divided by the RMS measured by dequantizing random blocks with d = 1 (calibrate(); the
 * 6-bit and int8 sub-scales of the K-quants make a closed form tedious, the measurement is exact enough).
 *
 * Errors (one line "tern: error: ...", exit 2): unknown preset or type (the message lists the valid ones),
 * a row length not a multiple of the type's block size (K-quants need 256 | n_in, e.g. smollm2's 576
 * fails: llama.cpp's quantizer would fall back to another type for those tensors, synth refuses so the
 * file is one type throughout), bad numbers, I/O errors (the partial file is removed).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "commands.h"
#include "gguf_write.h"
#include "quant.h"
#include "util.h"

/* ---- presets --------------------------------------------------------------------------------
 * Numbers from each model's Hugging Face config.json (hidden_size, num_hidden_layers, intermediate_size,
 * num_attention_heads, num_key_value_heads, vocab_size, max_position_embeddings, rope_theta,
 * tie_word_embeddings); rms_norm_eps is 1e-5 for all five. head_dim = n_embd / n_head for all of them.
 *  - HuggingFaceTB/SmolLM2-135M: 576, 30, 1536, 9/3, 49152, 8192, 100000, tied.
 *  - meta-llama/Llama-3.2-1B: 2048, 16, 8192, 32/8, 128256, 131072, 500000, tied. Its rope_scaling
 *    ("llama3" type, factor 32) and rope_freqs.weight are left out: synth is for shapes and speed, and
 *    tern's loader would otherwise need the llama3 frequency table (arch.c accepts rope_freqs only).
 *  - meta-llama/Meta-Llama-3-8B: 4096, 32, 14336, 32/8, 128256, 8192, 500000, untied.
 *  - meta-llama/Meta-Llama-3-70B: 8192, 80, 28672, 64/8, 128256, 8192, 500000, untied.
 *  - mistralai/Mistral-7B-v0.1: 4096, 32, 14336, 32/8, 32000, 32768, 10000, untied. v0.1 (not v0.2's
 *    rope_theta 1e6); its 4096-token sliding window is not expressed (tern has none; llama.cpp's
 *    converter does not store it for llama-arch either). */
typedef struct {
    const char *name, *title;
    int n_embd, n_layer, n_ff, n_head, n_head_kv, n_vocab, n_ctx;
    float rope_base;
    int tied; /* 1: no output.weight, the output projection is token_embd */
} synth_preset;

static const synth_preset PRESETS[] = {
    {"smollm2-135m", "SmolLM2 135M", 576, 30, 1536, 9, 3, 49152, 8192, 100000.0f, 1},
    {"llama3.2-1b", "Llama 3.2 1B", 2048, 16, 8192, 32, 8, 128256, 131072, 500000.0f, 1},
    {"llama3-8b", "Llama 3 8B", 4096, 32, 14336, 32, 8, 128256, 8192, 500000.0f, 0},
    {"llama3-70b", "Llama 3 70B", 8192, 80, 28672, 64, 8, 128256, 8192, 500000.0f, 0},
    {"mistral-7b", "Mistral 7B v0.1", 4096, 32, 14336, 32, 8, 32000, 32768, 10000.0f, 0},
};
#define N_PRESETS ((int)(sizeof PRESETS / sizeof PRESETS[0]))
#define RMS_EPS 1e-5f

/* ---- types ----------------------------------------------------------------------------------
 * ftype: llama.cpp's llama_ftype for general.file_type (the _S variant where the K-quant ftypes come in
 * S/M/L mixes: a file that is one type throughout is closest to _S). d_off / m_off: byte offsets of the
 * fp16 scale and minimum in a block (src/quant.c's block structs; -1: none). m_ratio: the minimum as a
 * multiple of d that centres the values: q4_1/q5_1 store m = -d * E[q] (q uniform 0..15 / 0..31);
 * the K-quants store dmin = d * E[q] since sub-scale and sub-minimum have the same distribution. */
typedef struct {
    const char *name;
    enum tern_type type;
    int ftype;
    int d_off, m_off;
    float m_ratio;
} synth_type;

static const synth_type TYPES[] = {
    {"f32", TERN_TYPE_F32, 0, -1, -1, 0},         {"f16", TERN_TYPE_F16, 1, -1, -1, 0},
    {"bf16", TERN_TYPE_BF16, 32, -1, -1, 0},      {"q4_0", TERN_TYPE_Q4_0, 2, 0, -1, 0},
    {"q4_1", TERN_TYPE_Q4_1, 3, 0, 2, -7.5f},     {"q5_0", TERN_TYPE_Q5_0, 8, 0, -1, 0},
    {"q5_1", TERN_TYPE_Q5_1, 9, 0, 2, -15.5f},    {"q8_0", TERN_TYPE_Q8_0, 7, 0, -1, 0},
    {"q2_k", TERN_TYPE_Q2_K, 10, 80, 82, 1.5f},   {"q3_k", TERN_TYPE_Q3_K, 11, 108, -1, 0},
    {"q4_k", TERN_TYPE_Q4_K, 14, 0, 2, 7.5f},     {"q5_k", TERN_TYPE_Q5_K, 16, 0, 2, 15.5f},
    {"q6_k", TERN_TYPE_Q6_K, 18, 208, -1, 0},     {"iq4_nl", TERN_TYPE_IQ4_NL, 25, 0, -1, 0},
};
#define N_TYPES ((int)(sizeof TYPES / sizeof TYPES[0]))

static int synth_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int synth_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tern: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

/* ---- PRNG: splitmix64 seeds xoshiro256+ (Blackman & Vigna); + is enough for bytes and uniforms. ---- */
typedef struct { uint64_t s[4]; } rng_t;
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static void rng_seed(rng_t *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t rng_next(rng_t *r) {
    uint64_t *s = r->s, res = s[0] + s[3], t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return res;
}
/* Approximately N(0, 1): sum of four 16-bit uniforms, centred and scaled (Irwin-Hall, var 4/12). */
static inline float rng_gauss(rng_t *r) {
    uint64_t u = rng_next(r);
    float s = (float)((u & 0xffff) + ((u >> 16) & 0xffff) + ((u >> 32) & 0xffff) + (u >> 48)) * (1.0f / 65536.0f);
    return (s - 2.0f) * 1.7320508f;
}

/* ---- row filling ---- */

typedef struct {
    const synth_type *ty;
    int64_t n_in;   /* elements per row */
    size_t row_bytes;
    float std;      /* target element std (1/sqrt(n_in)) for matrices */
    float d;        /* block scale giving that std (quantized types) */
    int is_norm;    /* 1-D norm weight: 1 + N(0, 0.05^2) */
    uint64_t seed;  /* per-tensor stream seed */
} fill_spec;

/* Fill one row (row_bytes bytes at dst) of row index r. */
static void fill_row(const fill_spec *fs, int64_t r, uint8_t *dst) {
    rng_t g;
    rng_seed(&g, fs->seed ^ ((uint64_t)r * 0xd1342543de82ef95ull));
    const synth_type *ty = fs->ty;
    if (fs->is_norm) {
        float *y = (float *)dst;
        for (int64_t i = 0; i < fs->n_in; i++) y[i] = 1.0f + 0.05f * rng_gauss(&g);
        return;
    }
    if (ty->type == TERN_TYPE_F32 || ty->type == TERN_TYPE_F16 || ty->type == TERN_TYPE_BF16) {
        for (int64_t i = 0; i < fs->n_in; i++) {
            float v = fs->std * rng_gauss(&g);
            if (ty->type == TERN_TYPE_F32) ((float *)dst)[i] = v;
            else if (ty->type == TERN_TYPE_F16) ((uint16_t *)dst)[i] = tern_fp32_to_fp16(v);
            else ((uint16_t *)dst)[i] = tern_fp32_to_bf16(v);
        }
        return;
    }
    size_t n8 = fs->row_bytes / 8;
    for (size_t i = 0; i < n8; i++) {
        uint64_t v = rng_next(&g);
        memcpy(dst + 8 * i, &v, 8);
    }
    if (fs->row_bytes % 8) {
        uint64_t v = rng_next(&g);
        memcpy(dst + 8 * n8, &v, fs->row_bytes % 8);
    }
    const size_t bs = tern_type_type_size(ty->type);
    const size_t nb = fs->row_bytes / bs;
    for (size_t b = 0; b < nb; b++) {
        uint8_t *blk = dst + b * bs;
        uint64_t u = rng_next(&g);
        float jitter = 0.75f + 0.5f * (float)(u >> 40) * (1.0f / 16777216.0f);
        float d = fs->d * jitter;
        /* Types without a minimum have a biased code range (q4_0: q - 8 for q in 0..15 averages -0.5; iq4_nl's
         * table averages -5.9/127): one sign for every block would add a rank-1 component that swells outputs
         * (measured: logit RMS 5 instead of 1 on a 2-layer llama3.2-1b q4_0). Real quantizers store d with
         * either sign (d = max / -8, max the signed largest-magnitude value), so a random sign is realistic. */
        if (ty->m_off < 0 && (u & 1)) d = -d;
        uint16_t h = tern_fp32_to_fp16(d);
        memcpy(blk + ty->d_off, &h, 2);
        if (ty->m_off >= 0) {
            h = tern_fp32_to_fp16(d * ty->m_ratio);
            memcpy(blk + ty->m_off, &h, 2);
        }
    }
}

/* RMS of dequantized random blocks of type ty with d = 1 (and the minimum at m_ratio): the factor by which
 * d scales the element std. 64 rows of 256 elements (64 K-quant or 512 small blocks) measure it to ~1%. */
static float calibrate(const synth_type *ty) {
    if (ty->d_off < 0) return 1.0f;
    const int64_t n = 256, rows = 64;
    fill_spec fs = {ty, n, tern_type_row_size(ty->type, n), 1.0f, 1.0f, 0, 0x5eedull};
    uint8_t *buf = tern_xmalloc(fs.row_bytes);
    float *y = tern_xmalloc(sizeof(float) * (size_t)n);
    double ss = 0;
    for (int64_t r = 0; r < rows; r++) {
        fill_row(&fs, r, buf);
        /* undo the jitter for the measurement: d = 1 exactly (the jitter's E[j^2] = 1.0052 is ignored) */
        const size_t bs = tern_type_type_size(ty->type);
        for (size_t b = 0; b < fs.row_bytes / bs; b++) {
            uint16_t one = tern_fp32_to_fp16(1.0f), m = tern_fp32_to_fp16(ty->m_ratio);
            memcpy(buf + b * bs + ty->d_off, &one, 2);
            if (ty->m_off >= 0) memcpy(buf + b * bs + ty->m_off, &m, 2);
        }
        tern_dequantize_row(ty->type, buf, y, n);
        for (int64_t i = 0; i < n; i++) ss += (double)y[i] * y[i];
    }
    free(buf);
    free(y);
    return (float)sqrt(ss / (double)(n * rows));
}

/* ---- threaded tensor writer ---- */

typedef struct {
    const fill_spec *fs;
    uint8_t *buf;
    int64_t r0, r1; /* rows [r0, r1) of the tensor; buf holds row r0 at offset 0 */
} fill_job;

static void *fill_worker(void *p) {
    fill_job *j = p;
    for (int64_t r = j->r0; r < j->r1; r++) fill_row(j->fs, r, j->buf + (size_t)(r - j->r0) * j->fs->row_bytes);
    return NULL;
}

/* Generate n_rows rows and write them to fp, in chunks of about 64 MiB split across n_threads.
 * buf: at least chunk_rows * row_bytes bytes. Returns 0 or -1 on a write error.
 * Tried and dropped: double buffering (a thread fwrites chunk k while chunk k + 1 is generated). On the 2-core
 * dev box a 1.5 GB prefix went 5.1 s -> 3.8-4.5 s, but full llama3-8b q4_0 files (4.5 GB, past the page
 * cache's dirty limit) took 6.6-8.1 s against 5.8-6.0 s serial: writeback, not generation (870 MiB/s on 2
 * cores to /dev/null), is the bound there, and the extra thread and 64 MiB only compete with it. */
static int write_tensor(FILE *fp, const fill_spec *fs, int64_t n_rows, uint8_t *buf, size_t buf_bytes,
                        int n_threads) {
    int64_t chunk = (int64_t)(buf_bytes / fs->row_bytes);
    if (chunk < 1) chunk = 1;
    for (int64_t c0 = 0; c0 < n_rows; c0 += chunk) {
        int64_t c1 = c0 + chunk < n_rows ? c0 + chunk : n_rows;
        int nt = n_threads;
        if (c1 - c0 < 64 * (int64_t)nt) nt = 1; /* small tensors (norms, tests): not worth a thread */
        pthread_t th[64];
        fill_job jobs[64];
        for (int t = 0; t < nt; t++) {
            int64_t a = c0 + (c1 - c0) * t / nt, b = c0 + (c1 - c0) * (t + 1) / nt;
            jobs[t] = (fill_job){fs, buf + (size_t)(a - c0) * fs->row_bytes, a, b};
            if (t > 0 && pthread_create(&th[t], NULL, fill_worker, &jobs[t]) != 0) {
                fill_worker(&jobs[t]); /* could not start a thread: do it here */
                th[t] = 0;
            }
        }
        fill_worker(&jobs[0]);
        for (int t = 1; t < nt; t++)
            if (th[t]) pthread_join(th[t], NULL);
        size_t nbytes = (size_t)(c1 - c0) * fs->row_bytes;
        if (fwrite(buf, 1, nbytes, fp) != nbytes) return -1;
    }
    return 0;
}

/* ---- the command ---- */

static void list_presets(char *out, size_t n) {
    out[0] = 0;
    for (int i = 0; i < N_PRESETS; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? ", " : "", PRESETS[i].name);
}
static void list_types(char *out, size_t n) {
    out[0] = 0;
    for (int i = 0; i < N_TYPES; i++) snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? ", " : "", TYPES[i].name);
}

static int parse_int(const char *opt, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    (void)opt;
    *out = v;
    return 0;
}

typedef struct { const char *name; int64_t n_in, n_out; int is_norm; } synth_tensor;

/* Metadata setters that also print "KEY = VALUE" for --dry-run. */
static void kv_u32(gguf_writer *w, int show, const char *k, uint32_t v) {
    gguf_writer_add_u32(w, k, v);
    if (show) printf("%s = %u\n", k, v);
}
static void kv_f32(gguf_writer *w, int show, const char *k, float v) {
    gguf_writer_add_f32(w, k, v);
    if (show) printf("%s = %g\n", k, v);
}
static void kv_str(gguf_writer *w, int show, const char *k, const char *v) {
    gguf_writer_add_str(w, k, v);
    if (show) printf("%s = %s\n", k, v);
}

int cmd_synth(int argc, char **argv) {
    const char *arch = NULL, *type = NULL, *out = NULL;
    long long layers = -1, vocab = -1, seed = 0;
    int dry = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            char p[256], t[256];
            list_presets(p, sizeof p);
            list_types(t, sizeof t);
            printf("usage: tern synth --arch PRESET --type TYPE [--layers N] [--vocab N] [--seed S] -o FILE.gguf\n"
                   "       tern synth --arch PRESET --type TYPE [--layers N] [--vocab N] --dry-run\n"
                   "  write a llama-architecture GGUF with a real model's tensor shapes and random weights\n"
                   "  presets: %s\n  types:   %s (every matrix; norms are f32)\n"
                   "  --dry-run prints the metadata and tensor directory (name type ne0 ne1) and writes nothing\n",
                   p, t);
            return 0;
        }
        if (!strcmp(a, "--dry-run")) { dry = 1; continue; }
        if (i + 1 >= argc) return synth_fail("synth: option %s needs a value (or unknown option)", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--arch")) arch = v;
        else if (!strcmp(a, "--type")) type = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) out = v;
        else if (!strcmp(a, "--layers")) {
            if (parse_int(a, v, 1, 1000, &layers)) return synth_fail("synth: --layers expects an integer in 1..1000, got '%s'", v);
        } else if (!strcmp(a, "--vocab")) {
            if (parse_int(a, v, 1, 1 << 24, &vocab)) return synth_fail("synth: --vocab expects an integer in 1..16777216, got '%s'", v);
        } else if (!strcmp(a, "--seed")) {
            if (parse_int(a, v, 0, 0x7fffffffffffffffll, &seed)) return synth_fail("synth: --seed expects a non-negative integer, got '%s'", v);
        } else
            return synth_fail("synth: unknown option '%s' (see tern synth --help)", a);
    }
    char plist[256], tlist[256];
    list_presets(plist, sizeof plist);
    list_types(tlist, sizeof tlist);
    if (!arch) return synth_fail("synth: --arch PRESET is required (presets: %s)", plist);
    if (!type) return synth_fail("synth: --type TYPE is required (types: %s)", tlist);
    if (!out && !dry) return synth_fail("synth: -o FILE.gguf is required");
    const synth_preset *P = NULL;
    const synth_type *T = NULL;
    for (int i = 0; i < N_PRESETS; i++)
        if (!strcmp(arch, PRESETS[i].name)) P = &PRESETS[i];
    for (int i = 0; i < N_TYPES; i++)
        if (!strcmp(type, TYPES[i].name)) T = &TYPES[i];
    if (!P) return synth_fail("synth: unknown preset '%s' (presets: %s)", arch, plist);
    if (!T) return synth_fail("synth: unknown type '%s' (types: %s)", type, tlist);

    const int64_t E = P->n_embd, F = P->n_ff, hd = P->n_embd / P->n_head;
    const int64_t Hq = P->n_head * hd, Hkv = P->n_head_kv * hd;
    const int n_layer = layers > 0 ? (int)layers : P->n_layer;
    const int64_t n_vocab = vocab > 0 ? vocab : P->n_vocab;
    const int64_t bsz = tern_type_block_size(T->type);
    const int64_t row_lens[3] = {E, Hq, F};
    const char *row_names[3] = {"n_embd", "n_head*head_dim", "n_ff"};
    for (int i = 0; i < 3; i++)
        if (row_lens[i] % bsz)
            return synth_fail("synth: type %s needs rows that are a multiple of %lld elements, but %s has %s = %lld "
                              "(llama.cpp would fall back to another type for those tensors; synth refuses, so every "
                              "matrix is %s)", T->name, (long long)bsz, P->name, row_names[i], (long long)row_lens[i],
                              T->name);

    /* tensor list in file order (llama.cpp's convert order: embeddings, output, then blocks) */
    int n_t = 2 + (P->tied ? 0 : 1) + 9 * n_layer;
    synth_tensor *ts = tern_xcalloc((size_t)n_t, sizeof *ts);
    char **names = tern_xcalloc((size_t)n_t, sizeof *names);
    int k = 0;
#define ADD(nm, in, outn, norm) (names[k] = strdup(nm), ts[k] = (synth_tensor){names[k], in, outn, norm}, k++)
    ADD("token_embd.weight", E, n_vocab, 0);
    ADD("output_norm.weight", E, 1, 1);
    if (!P->tied) ADD("output.weight", E, n_vocab, 0);
    for (int l = 0; l < n_layer; l++) {
        char n[64];
#define L(s) (snprintf(n, sizeof n, "blk.%d." s, l), n)
        ADD(L("attn_norm.weight"), E, 1, 1);
        ADD(L("attn_q.weight"), E, Hq, 0);
        ADD(L("attn_k.weight"), E, Hkv, 0);
        ADD(L("attn_v.weight"), E, Hkv, 0);
        ADD(L("attn_output.weight"), Hq, E, 0);
        ADD(L("ffn_norm.weight"), E, 1, 1);
        ADD(L("ffn_gate.weight"), E, F, 0);
        ADD(L("ffn_up.weight"), E, F, 0);
        ADD(L("ffn_down.weight"), F, E, 0);
#undef L
    }
#undef ADD

    gguf_writer *w = gguf_writer_new();
    char title[128];
    snprintf(title, sizeof title, "%s (synthetic %s, tern synth seed %lld)", P->title, T->name, seed);
    kv_str(w, dry, "general.architecture", "llama");
    kv_str(w, dry, "general.name", title);
    kv_u32(w, dry, "general.file_type", (uint32_t)T->ftype);
    kv_u32(w, dry, "llama.context_length", (uint32_t)P->n_ctx);
    kv_u32(w, dry, "llama.embedding_length", (uint32_t)E);
    kv_u32(w, dry, "llama.block_count", (uint32_t)n_layer);
    kv_u32(w, dry, "llama.feed_forward_length", (uint32_t)F);
    kv_u32(w, dry, "llama.attention.head_count", (uint32_t)P->n_head);
    kv_u32(w, dry, "llama.attention.head_count_kv", (uint32_t)P->n_head_kv);
    kv_f32(w, dry, "llama.rope.freq_base", P->rope_base);
    kv_f32(w, dry, "llama.attention.layer_norm_rms_epsilon", RMS_EPS);
    kv_u32(w, dry, "llama.rope.dimension_count", (uint32_t)hd);
    kv_u32(w, dry, "llama.vocab_size", (uint32_t)n_vocab);
    kv_str(w, dry, "tokenizer.ggml.model", "no_vocab");
    const synth_type F32T = {"f32", TERN_TYPE_F32, 0, -1, -1, 0};
    int rc = 0;
    for (int i = 0; i < n_t && !rc; i++) {
        int64_t ne[2] = {ts[i].n_in, ts[i].n_out};
        if (gguf_writer_add_tensor(w, ts[i].name, ts[i].is_norm ? 1 : 2, ne, ts[i].is_norm ? F32T.type : T->type))
            rc = synth_fail("synth: %s", tern_last_error());
        else if (dry)
            printf("tensor %s %s %lld %lld\n", ts[i].name, tern_type_name(ts[i].is_norm ? F32T.type : T->type),
                   (long long)ne[0], (long long)(ts[i].is_norm ? 1 : ne[1]));
    }
    if (dry && !rc) {
        printf("file size %llu bytes\n", (unsigned long long)gguf_writer_file_size(w));
        for (int i = 0; i < n_t; i++) free(names[i]);
        free(names);
        free(ts);
        gguf_writer_free(w);
        return 0;
    }

    FILE *fp = NULL;
    double t0 = tern_time_s();
    const int n_threads = tern_n_cores() < 64 ? tern_n_cores() : 64;
    const size_t buf_bytes = (size_t)64 << 20;
    uint8_t *buf = NULL;
    if (!rc && !(fp = fopen(out, "wb"))) rc = synth_fail("synth: cannot create '%s': %s", out, strerror(errno));
    if (!rc && gguf_writer_write_header(w, fp)) rc = synth_fail("synth: writing '%s': %s", out, strerror(errno));
    if (!rc) buf = tern_xmalloc(buf_bytes + (size_t)E * 4 * 8); /* room for one row of any type at least */
    const float dq_unit = calibrate(T);
    for (int i = 0; i < n_t && !rc; i++) {
        const synth_tensor *t = &ts[i];
        fill_spec fs = {t->is_norm ? &F32T : T, t->n_in, 0, 0, 0, t->is_norm, 0};
        fs.row_bytes = tern_type_row_size(fs.ty->type, t->n_in);
        fs.std = 1.0f / sqrtf((float)t->n_in);
        fs.d = fs.std / dq_unit;
        uint64_t s = (uint64_t)seed * 0x9e3779b97f4a7c15ull + (uint64_t)i;
        fs.seed = splitmix64(&s);
        size_t nbytes = gguf_writer_tensor_nbytes(w, i);
        size_t room = buf_bytes > fs.row_bytes ? buf_bytes : fs.row_bytes;
        if (write_tensor(fp, &fs, t->n_out, buf, room, n_threads) || gguf_writer_write_pad(fp, nbytes))
            rc = synth_fail("synth: writing '%s': %s", out, strerror(errno));
    }
    if (fp && fclose(fp) != 0 && !rc) rc = synth_fail("synth: writing '%s': %s", out, strerror(errno));
    if (rc && fp) remove(out);
    if (!rc) {
        double dt = tern_time_s() - t0, mib = (double)gguf_writer_file_size(w) / (1024.0 * 1024.0);
        printf("wrote %s: %s %s, %d layers, vocab %lld, %d tensors, %.1f MiB in %.2f s (%.0f MiB/s, %d threads)\n",
               out, P->name, T->name, n_layer, (long long)n_vocab, n_t, mib, dt, mib / (dt > 0 ? dt : 1e-9), n_threads);
    }
    free(buf);
    for (int i = 0; i < n_t; i++) free(names[i]);
    free(names);
    free(ts);
    gguf_writer_free(w);
    return rc;
}
