/* synth.c: synthetic llama-architecture models (issue 3's tern synth, and in memory for tern bench
 * --synthetic): a real model's tensor names, shapes, metadata and quant types, filled with random blocks at
 * realistic scales. cli/synth.c writes them to a GGUF file; tern_synth_model_new holds one in memory and
 * makes each matrix's rows (the file's bytes) when the CUDA backend uploads them.
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
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "model.h"
#include "quant.h"
#include "synth.h"
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
 *  - meta-llama/Llama-3.1-405B: 16384, 126, 53248, 128/8, 128256, 131072, 500000, untied (its rope_scaling
 *    left out as for Llama-3.2-1B). At Q4_0 ~229 GB: `tern bench --synthetic` makes it in memory.
 *  - mistralai/Mistral-7B-v0.1: 4096, 32, 14336, 32/8, 32000, 32768, 10000, untied. v0.1 (not v0.2's
 *    rope_theta 1e6); its 4096-token sliding window is not expressed (tern has none; llama.cpp's
 *    converter does not store it for llama-arch either). */

static const synth_preset PRESETS[] = {
    {"smollm2-135m", "SmolLM2 135M", 576, 30, 1536, 9, 3, 49152, 8192, 100000.0f, 1},
    {"llama3.2-1b", "Llama 3.2 1B", 2048, 16, 8192, 32, 8, 128256, 131072, 500000.0f, 1},
    {"llama3-8b", "Llama 3 8B", 4096, 32, 14336, 32, 8, 128256, 8192, 500000.0f, 0},
    {"llama3-70b", "Llama 3 70B", 8192, 80, 28672, 64, 8, 128256, 8192, 500000.0f, 0},
    {"llama3-405b", "Llama 3.1 405B", 16384, 126, 53248, 128, 8, 128256, 131072, 500000.0f, 0},
    {"mistral-7b", "Mistral 7B v0.1", 4096, 32, 14336, 32, 8, 32000, 32768, 10000.0f, 0},
};
#define N_PRESETS ((int)(sizeof PRESETS / sizeof PRESETS[0]))

/* ---- types ----------------------------------------------------------------------------------
 * ftype: llama.cpp's llama_ftype for general.file_type (the _S variant where the K-quant ftypes come in
 * S/M/L mixes: a file that is one type throughout is closest to _S). d_off / m_off: byte offsets of the
 * fp16 scale and minimum in a block (src/backend/cpu/quant.c's block structs; -1: none). m_ratio: the minimum as a
 * multiple of d that centres the values: q4_1/q5_1 store m = -d * E[q] (q uniform 0..15 / 0..31);
 * the K-quants store dmin = d * E[q] since sub-scale and sub-minimum have the same distribution. */

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


/* Fill one row (row_bytes bytes at dst) of row index r. */
void synth_fill_row(const synth_fill_spec *fs, int64_t r, uint8_t *dst) {
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
float synth_calibrate(const synth_type *ty) {
    if (ty->d_off < 0) return 1.0f;
    const int64_t n = 256, rows = 64;
    synth_fill_spec fs = {ty, n, tern_type_row_size(ty->type, n), 1.0f, 1.0f, 0, 0x5eedull};
    uint8_t *buf = tern_xmalloc(fs.row_bytes);
    float *y = tern_xmalloc(sizeof(float) * (size_t)n);
    double ss = 0;
    for (int64_t r = 0; r < rows; r++) {
        synth_fill_row(&fs, r, buf);
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


typedef struct {
    const synth_fill_spec *fs;
    uint8_t *buf;
    int64_t r0, r1; /* rows [r0, r1) of the tensor; buf holds row r0 at offset 0 */
} fill_job;

static void *fill_worker(void *p) {
    fill_job *j = p;
    for (int64_t r = j->r0; r < j->r1; r++) synth_fill_row(j->fs, r, j->buf + (size_t)(r - j->r0) * j->fs->row_bytes);
    return NULL;
}

void synth_fill_rows(const synth_fill_spec *fs, int64_t r0, int64_t n, uint8_t *dst, int n_threads) {
    int nt = n_threads < 1 ? 1 : n_threads > 64 ? 64 : n_threads;
    if (n < 64 * (int64_t)nt) nt = 1; /* small tensors (norms, tests): not worth a thread */
    pthread_t th[64];
    fill_job jobs[64];
    for (int k = 0; k < nt; k++) {
        int64_t a = r0 + n * k / nt, b = r0 + n * (k + 1) / nt;
        jobs[k] = (fill_job){fs, dst + (size_t)(a - r0) * fs->row_bytes, a, b};
        if (k > 0 && pthread_create(&th[k], NULL, fill_worker, &jobs[k]) != 0) {
            fill_worker(&jobs[k]); /* could not start a thread: do it here */
            th[k] = 0;
        }
    }
    fill_worker(&jobs[0]);
    for (int k = 1; k < nt; k++)
        if (th[k]) pthread_join(th[k], NULL);
}

void synth_list_presets(char *out, size_t n) {
    out[0] = 0;
    for (int i = 0; i < N_PRESETS; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? ", " : "", PRESETS[i].name);
}
void synth_list_types(char *out, size_t n) {
    out[0] = 0;
    for (int i = 0; i < N_TYPES; i++) snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? ", " : "", TYPES[i].name);
}



/* Preset and type by name, and the check that every matrix row is whole blocks of the type. Returns 0, or
 * -1 with the reason in why. */
int synth_resolve(const char *arch, const char *type, const synth_preset **Pp, const synth_type **Tp,
                         char *why, size_t nwhy) {
    char plist[256], tlist[256];
    synth_list_presets(plist, sizeof plist);
    synth_list_types(tlist, sizeof tlist);
    const synth_preset *P = NULL;
    const synth_type *T = NULL;
    for (int i = 0; i < N_PRESETS; i++)
        if (!strcmp(arch, PRESETS[i].name)) P = &PRESETS[i];
    for (int i = 0; i < N_TYPES; i++)
        if (!strcmp(type, TYPES[i].name)) T = &TYPES[i];
    if (!P) { snprintf(why, nwhy, "unknown preset '%s' (presets: %s)", arch, plist); return -1; }
    if (!T) { snprintf(why, nwhy, "unknown type '%s' (types: %s)", type, tlist); return -1; }
    const int64_t bsz = tern_type_block_size(T->type), hd = P->n_embd / P->n_head;
    const int64_t row_lens[3] = {P->n_embd, P->n_head * hd, P->n_ff};
    const char *row_names[3] = {"n_embd", "n_head*head_dim", "n_ff"};
    for (int i = 0; i < 3; i++)
        if (row_lens[i] % bsz) {
            snprintf(why, nwhy,
                     "type %s needs rows that are a multiple of %lld elements, but %s has %s = %lld (llama.cpp would "
                     "fall back to another type for those tensors; synth refuses, so every matrix is %s)",
                     T->name, (long long)bsz, P->name, row_names[i], (long long)row_lens[i], T->name);
            return -1;
        }
    *Pp = P;
    *Tp = T;
    return 0;
}

/* The tensor list in file order (llama.cpp's convert order: embeddings, output, then blocks); tensor i's
 * PRNG stream seed is synth_tensor_seed(seed, i) in the file and in the in-memory model alike. */
int synth_tensor_list(const synth_preset *P, int n_layer, int64_t n_vocab, synth_tensor **ts_out,
                             char ***names_out) {
    const int64_t E = P->n_embd, F = P->n_ff, hd = P->n_embd / P->n_head;
    const int64_t Hq = P->n_head * hd, Hkv = P->n_head_kv * hd;
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
    *ts_out = ts;
    *names_out = names;
    return n_t;
}

uint64_t synth_tensor_seed(long long seed, int i) {
    uint64_t s = (uint64_t)seed * 0x9e3779b97f4a7c15ull + (uint64_t)i;
    return splitmix64(&s);
}


/* ---- in-memory models (tern bench --synthetic): the same bytes as the file, made when uploaded ---- */

typedef struct {
    const tern_weight *w;
    synth_fill_spec fs;
} gen_entry;
typedef struct {
    gen_entry *e;
    int n;
    synth_type ty; /* fs.ty points here (the preset tables are static; this keeps the spec self-contained) */
} gen_table;

static int gen_rows(const tern_model *m, const tern_weight *w, int64_t r0, int64_t n, void *dst) {
    const gen_table *t = m->gen_ctx;
    for (int i = 0; i < t->n; i++) {
        if (t->e[i].w != w) continue;
        synth_fill_rows(&t->e[i].fs, r0, n, dst, tern_n_cores());
        return 0;
    }
    tern_set_error("synthetic model: a weight without a generator");
    return -1;
}

static void gen_free(void *p) {
    gen_table *t = p;
    if (!t) return;
    free(t->e);
    free(t);
}

tern_model *tern_synth_model_new(const char *arch, const char *type, int layers, long long seed) {
    const synth_preset *P = NULL;
    const synth_type *T = NULL;
    char why[512];
    if (synth_resolve(arch, type, &P, &T, why, sizeof why)) {
        tern_set_error("--synthetic: %s", why);
        return NULL;
    }
    const int n_layer = layers > 0 ? layers : P->n_layer;
    synth_tensor *ts = NULL;
    char **names = NULL;
    const int n_t = synth_tensor_list(P, n_layer, P->n_vocab, &ts, &names);
    tern_model *m = tern_xcalloc(1, sizeof *m);
    snprintf(m->arch, sizeof m->arch, "llama");
    m->n_vocab = P->n_vocab;
    m->n_ctx_train = P->n_ctx;
    m->n_embd = P->n_embd;
    m->n_layer = n_layer;
    m->n_head = P->n_head;
    m->n_head_kv = P->n_head_kv;
    m->head_dim = P->n_embd / P->n_head;
    m->n_ff = P->n_ff;
    m->n_rot = m->head_dim;
    m->rms_eps = SYNTH_RMS_EPS;
    m->rope_base = P->rope_base;
    m->rope_scale = 1.0;
    m->layers = tern_xcalloc((size_t)n_layer, sizeof *m->layers);
    gen_table *gt = tern_xcalloc(1, sizeof *gt);
    gt->ty = *T;
    gt->e = tern_xcalloc((size_t)n_t + 1, sizeof *gt->e);
    const synth_type F32T = {"f32", TERN_TYPE_F32, 0, -1, -1, 0};
    const float dq_unit = synth_calibrate(T);
    for (int i = 0; i < n_t; i++) {
        const synth_tensor *t = &ts[i];
        synth_fill_spec fs = {t->is_norm ? &F32T : &gt->ty, t->n_in, 0, 0, 0, t->is_norm, synth_tensor_seed(seed, i)};
        fs.row_bytes = tern_type_row_size(fs.ty->type, t->n_in);
        fs.std = 1.0f / sqrtf((float)t->n_in);
        fs.d = fs.std / dq_unit;
        m->n_params += (uint64_t)t->n_in * (uint64_t)t->n_out;
        m->n_bytes += fs.row_bytes * (uint64_t)t->n_out;
        /* slot of tensor i, in synth_tensor_list's order */
        const int head = P->tied ? 2 : 3;
        float **vec = NULL;
        tern_weight *w = NULL;
        if (i == 0) w = &m->tok_embd;
        else if (i == 1) vec = &m->output_norm;
        else if (i == 2 && !P->tied) w = &m->output;
        else {
            tern_layer *l = &m->layers[(i - head) / 9];
            switch ((i - head) % 9) {
            case 0: vec = &l->attn_norm; break;
            case 1: w = &l->wq; break;
            case 2: w = &l->wk; break;
            case 3: w = &l->wv; break;
            case 4: w = &l->wo; break;
            case 5: vec = &l->ffn_norm; break;
            case 6: w = &l->w_gate; break;
            case 7: w = &l->w_up; break;
            default: w = &l->w_down; break;
            }
        }
        if (vec) { /* norms: small, made now (f32 rows are their own data) */
            *vec = tern_xmalloc(fs.row_bytes);
            synth_fill_row(&fs, 0, (uint8_t *)*vec);
            continue;
        }
        *w = (tern_weight){NULL, T->type, t->n_in, t->n_out, fs.row_bytes};
        gt->e[gt->n++] = (gen_entry){w, fs};
    }
    if (P->tied) { /* the output head is token_embd's bytes */
        m->output = m->tok_embd;
        gt->e[gt->n] = gt->e[0];
        gt->e[gt->n++].w = &m->output;
    }
    snprintf(m->desc, sizeof m->desc, "%s (synthetic %s in memory, seed %lld, %d layers)", P->title, T->name, seed,
             n_layer);
    m->gen_rows = gen_rows;
    m->gen_free = gen_free;
    m->gen_ctx = gt;
    m->recipe = tern_recipe_find(m->arch);
    tern_model_finish(m);
    for (int i = 0; i < n_t; i++) free(names[i]);
    free(names);
    free(ts);
    return m;
}

