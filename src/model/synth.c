/* synth.c: synthetic models (issue 3's tern synth, and in memory for tern bench --synthetic): a real model's
 * general.architecture, tensor names, shapes, metadata and quant types, filled with random blocks at realistic
 * scales. cli/synth.c writes them to a GGUF file; tern_synth_model_new holds one in memory (the file's header image,
 * loaded by the same loader as the file) and makes each matrix's rows (the file's bytes) when the CUDA backend
 * uploads them.
 *
 * What the file holds (llama.cpp's tensor names, GGUF ne order = (n_in, n_out), innermost first; hd = head_dim):
 *   token_embd.weight (n_embd, n_vocab) TYPE   output_norm.weight (n_embd) f32   output.weight (n_embd, n_vocab)
 *   TYPE only for untied presets; per layer i (blk.i.), as each family's converter writes it (FAMILIES below):
 *   attn_norm (n_embd) f32; attn_q (n_embd, n_head*hd), attn_k / attn_v (n_embd, n_kv*hd), or for phi3 attn_qkv
 *   (n_embd, (n_head + 2*n_kv)*hd) holding q|k|v rows; qwen2: attn_q/k/v.bias (n_head*hd / n_kv*hd) f32; qwen3 and
 *   gemma3: attn_q_norm / attn_k_norm (hd) f32; attn_output (n_head*hd, n_embd); gemma3: post_attention_norm (n_embd)
 *   f32; ffn_norm (n_embd) f32; ffn_gate / ffn_up (n_embd, n_ff), or for phi3 ffn_up (n_embd, 2*n_ff) holding
 *   gate|up rows and no ffn_gate; ffn_down (n_ff, n_embd); gemma3: post_ffw_norm (n_embd) f32. Matrices TYPE.
 * Values: every matrix element has std ~ 1/sqrt(n_in) (so activations keep their scale through 80 layers:
 * each matmul maps unit-RMS inputs to unit-RMS outputs), norm weights are 1 + N(0, 0.05^2) (Gemma's converter
 * stores its norms as 1 + w, and tern and llama.cpp multiply by the stored value, so the same holds for gemma3),
 * biases N(0, 0.1^2). No zeros in the scale fields, no NaN/Inf anywhere. Deterministic: the same arguments give the
 * same bytes, on any number of threads (each row has its own PRNG stream seeded from (seed, tensor, row)).
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
#include <sys/mman.h>

#include "backend_cpu.h"
#include "model.h"
#include "quant.h"
#include "synth.h"
#include "util.h"

/* ---- families --------------------------------------------------------------------------------
 * What a family's GGUF holds beyond the llama block, as llama.cpp's converter (0.3.36's conversion/: llama.py,
 * qwen.py, gemma.py, phi.py) writes it; the loader (arch.c) binds each of these by name, and refuses a file with a
 * tensor it did not bind, so a family listing a tensor its recipe does not take fails to load. */
enum {
    SYNTH_F_ROPE_DIMS = 1u << 0, /* {arch}.rope.dimension_count (llama, phi3) */
    SYNTH_F_QKV_BIAS = 1u << 1,  /* attn_q/k/v.bias (qwen2) */
    SYNTH_F_QK_NORM = 1u << 2,   /* attn_q_norm, attn_k_norm (qwen3, gemma3) */
    SYNTH_F_POST_NORM = 1u << 3, /* post_attention_norm, post_ffw_norm (gemma3) */
    SYNTH_F_FUSED = 1u << 4,     /* attn_qkv, ffn_up of gate|up rows, no ffn_gate (phi3: the HF tensors as they are) */
    SYNTH_F_ORIG_CTX = 1u << 5,  /* {arch}.rope.scaling.original_context_length = the context (phi3) */
};
typedef struct { const char *arch; unsigned flags; } synth_family;
static const synth_family FAMILIES[] = {
    {"llama", SYNTH_F_ROPE_DIMS},
    {"qwen2", SYNTH_F_QKV_BIAS},
    {"qwen3", SYNTH_F_QK_NORM},
    {"gemma3", SYNTH_F_QK_NORM | SYNTH_F_POST_NORM},
    {"phi3", SYNTH_F_FUSED | SYNTH_F_ROPE_DIMS | SYNTH_F_ORIG_CTX},
};

static unsigned family_flags(const char *arch) {
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++)
        if (!strcmp(FAMILIES[i].arch, arch)) return FAMILIES[i].flags;
    return 0; /* not reached: every preset names a family (test_synth loads each) */
}

/* ---- presets --------------------------------------------------------------------------------
 * Numbers from each model's Hugging Face config.json (hidden_size, num_hidden_layers, intermediate_size,
 * num_attention_heads, num_key_value_heads, vocab_size, max_position_embeddings, rope_theta,
 * tie_word_embeddings, rms_norm_eps; head_dim, sliding_window, rope_local_base_freq and rope_scaling where the
 * model has them). head_dim = n_embd / n_head unless given (then the file has attention.key_length/value_length,
 * as the converter writes them when config.json has head_dim).
 *  - HuggingFaceTB/SmolLM2-135M: 576, 30, 1536, 9/3, 49152, 8192, 100000, tied, 1e-5.
 *  - meta-llama/Llama-3.2-1B: 2048, 16, 8192, 32/8, 128256, 131072, 500000, tied, 1e-5. Its rope_scaling
 *    ("llama3" type, factor 32) and rope_freqs.weight are left out: synth is for shapes and speed, and
 *    tern's loader would otherwise need the llama3 frequency table (arch.c accepts rope_freqs only).
 *  - meta-llama/Meta-Llama-3-8B: 4096, 32, 14336, 32/8, 128256, 8192, 500000, untied, 1e-5.
 *  - meta-llama/Meta-Llama-3-70B: 8192, 80, 28672, 64/8, 128256, 8192, 500000, untied, 1e-5.
 *  - meta-llama/Llama-3.1-405B: 16384, 126, 53248, 128/8, 128256, 131072, 500000, untied, 1e-5 (its rope_scaling
 *    left out as for Llama-3.2-1B). At Q4_0 ~229 GB: `tern bench --synthetic` makes it in memory.
 *  - mistralai/Mistral-7B-v0.1: 4096, 32, 14336, 32/8, 32000, 32768, 10000, untied, 1e-5. v0.1 (not v0.2's
 *    rope_theta 1e6); its 4096-token sliding window is not expressed (tern has none for llama; llama.cpp's
 *    converter does not store it for llama-arch either).
 *  - Qwen/Qwen2.5-7B (qwen2): 3584, 28, 18944, 28/4, 152064, 131072, 1000000, untied, 1e-6 (the base model: no
 *    rope_scaling; the Instruct model's YaRN block is what the loader refuses). q/k/v biases (attention has them in
 *    every Qwen2).
 *  - Qwen/Qwen3-8B (qwen3): 4096, 36, 12288, 32/8, 151936, 40960, 1000000, untied, 1e-6, head_dim 128; q/k norms.
 *  - google/gemma-3-4b-it (gemma3), its text_config (the keys it leaves out are Gemma3TextConfig's defaults): 2560,
 *    34, 10240, 8/4, head_dim 256, 131072, rope_theta 1000000, rope_local_base_freq 10000, rope_scaling linear
 *    factor 8 (global layers only, as llama.cpp and tern apply it), sliding_window 1024, 1e-6, tied. vocab_size
 *    262208 there, but the converter drops the rows past the tokenizer's 262144 pieces (gemma.py "remove OOV
 *    rows"; models/gemma-3-270m-q4_k_m.gguf's token_embd has 262144), so 262144.
 *  - google/gemma-3-27b-it (gemma3), text_config as for 4b: 5376, 62, 21504, 32/16, head_dim 128 (so q is
 *    scaled by 1/sqrt(5376/32) on both sides: query_pre_attn_scalar 168), the same RoPE, window and vocab.
 *  - microsoft/Phi-3-mini-4k-instruct (phi3): 3072, 32, 8192, 32/32, 32064, 4096, 10000, untied, 1e-5;
 *    sliding_window 2047 is written as the converter does (llama.cpp disables Phi-3's window, tern's phi3 row
 *    has none), rope.scaling.original_context_length 4096. */

static const synth_preset PRESETS[] = {
    /* name, title, arch, n_embd, n_layer, n_ff, n_head, n_head_kv, n_vocab, n_ctx, rope_base, tied, rms_eps, ... */
    {"smollm2-135m", "SmolLM2 135M", "llama", 576, 30, 1536, 9, 3, 49152, 8192, 100000.0f, 1, .rms_eps = 1e-5f},
    {"llama3.2-1b", "Llama 3.2 1B", "llama", 2048, 16, 8192, 32, 8, 128256, 131072, 500000.0f, 1, .rms_eps = 1e-5f},
    {"llama3-8b", "Llama 3 8B", "llama", 4096, 32, 14336, 32, 8, 128256, 8192, 500000.0f, 0, .rms_eps = 1e-5f},
    {"llama3-70b", "Llama 3 70B", "llama", 8192, 80, 28672, 64, 8, 128256, 8192, 500000.0f, 0, .rms_eps = 1e-5f},
    {"llama3-405b", "Llama 3.1 405B", "llama", 16384, 126, 53248, 128, 8, 128256, 131072, 500000.0f, 0,
     .rms_eps = 1e-5f},
    {"mistral-7b", "Mistral 7B v0.1", "llama", 4096, 32, 14336, 32, 8, 32000, 32768, 10000.0f, 0, .rms_eps = 1e-5f},
    {"qwen2.5-7b", "Qwen2.5 7B", "qwen2", 3584, 28, 18944, 28, 4, 152064, 131072, 1000000.0f, 0, .rms_eps = 1e-6f},
    {"qwen3-8b", "Qwen3 8B", "qwen3", 4096, 36, 12288, 32, 8, 151936, 40960, 1000000.0f, 0, .rms_eps = 1e-6f,
     .head_dim = 128},
    {"gemma3-4b", "Gemma 3 4B", "gemma3", 2560, 34, 10240, 8, 4, 262144, 131072, 1000000.0f, 1, .rms_eps = 1e-6f,
     .head_dim = 256, .window = 1024, .rope_base_swa = 10000.0f, .rope_linear = 8.0f},
    {"gemma3-27b", "Gemma 3 27B", "gemma3", 5376, 62, 21504, 32, 16, 262144, 131072, 1000000.0f, 1, .rms_eps = 1e-6f,
     .head_dim = 128, .window = 1024, .rope_base_swa = 10000.0f, .rope_linear = 8.0f},
    {"phi3-mini", "Phi-3 mini 4k", "phi3", 3072, 32, 8192, 32, 32, 32064, 4096, 10000.0f, 0, .rms_eps = 1e-5f,
     .window = 2047},
};
#define N_PRESETS ((int)(sizeof PRESETS / sizeof PRESETS[0]))

static int preset_head_dim(const synth_preset *P) { return P->head_dim ? P->head_dim : P->n_embd / P->n_head; }

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
    if (fs->kind != SYNTH_MATRIX) { /* f32 vectors: norm weights around 1, biases around 0 */
        float *y = (float *)dst;
        const float mean = fs->kind == SYNTH_NORM ? 1.0f : 0.0f, sd = fs->kind == SYNTH_NORM ? 0.05f : 0.1f;
        for (int64_t i = 0; i < fs->n_in; i++) y[i] = mean + sd * rng_gauss(&g);
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
    synth_fill_spec fs = {ty, n, tern_type_row_size(ty->type, n), 1.0f, 1.0f, SYNTH_MATRIX, 0x5eedull};
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
    const int64_t bsz = tern_type_block_size(T->type), hd = preset_head_dim(P);
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

/* The tensor list in file order (llama.cpp's convert order: embeddings, output, then blocks; within a block the
 * llama tensors in llama's order with the family's extras beside the tensor they belong to); tensor i's PRNG
 * stream seed is synth_tensor_seed(seed, i) in the file and in the in-memory model alike. */
int synth_tensor_list(const synth_preset *P, int n_layer, int64_t n_vocab, synth_tensor **ts_out,
                             char ***names_out) {
    const unsigned fl = family_flags(P->arch);
    const int64_t E = P->n_embd, F = P->n_ff, hd = preset_head_dim(P);
    const int64_t Hq = P->n_head * hd, Hkv = P->n_head_kv * hd;
    const int per_layer_max = 16, n_max = 3 + per_layer_max * n_layer;
    synth_tensor *ts = tern_xcalloc((size_t)n_max, sizeof *ts);
    char **names = tern_xcalloc((size_t)n_max, sizeof *names);
    int k = 0;
#define ADD(nm, in, outn, kind) (names[k] = strdup(nm), ts[k] = (synth_tensor){names[k], in, outn, kind}, k++)
    ADD("token_embd.weight", E, n_vocab, SYNTH_MATRIX);
    ADD("output_norm.weight", E, 1, SYNTH_NORM);
    if (!P->tied) ADD("output.weight", E, n_vocab, SYNTH_MATRIX);
    for (int l = 0; l < n_layer; l++) {
        char n[64];
#define L(s) (snprintf(n, sizeof n, "blk.%d." s, l), n)
        ADD(L("attn_norm.weight"), E, 1, SYNTH_NORM);
        if (fl & SYNTH_F_FUSED) {
            ADD(L("attn_qkv.weight"), E, Hq + 2 * Hkv, SYNTH_MATRIX);
        } else {
            ADD(L("attn_q.weight"), E, Hq, SYNTH_MATRIX);
            ADD(L("attn_k.weight"), E, Hkv, SYNTH_MATRIX);
            ADD(L("attn_v.weight"), E, Hkv, SYNTH_MATRIX);
        }
        if (fl & SYNTH_F_QKV_BIAS) {
            ADD(L("attn_q.bias"), Hq, 1, SYNTH_BIAS);
            ADD(L("attn_k.bias"), Hkv, 1, SYNTH_BIAS);
            ADD(L("attn_v.bias"), Hkv, 1, SYNTH_BIAS);
        }
        if (fl & SYNTH_F_QK_NORM) {
            ADD(L("attn_q_norm.weight"), hd, 1, SYNTH_NORM);
            ADD(L("attn_k_norm.weight"), hd, 1, SYNTH_NORM);
        }
        ADD(L("attn_output.weight"), Hq, E, SYNTH_MATRIX);
        if (fl & SYNTH_F_POST_NORM) ADD(L("post_attention_norm.weight"), E, 1, SYNTH_NORM);
        ADD(L("ffn_norm.weight"), E, 1, SYNTH_NORM);
        if (fl & SYNTH_F_FUSED) {
            ADD(L("ffn_up.weight"), E, 2 * F, SYNTH_MATRIX);
        } else {
            ADD(L("ffn_gate.weight"), E, F, SYNTH_MATRIX);
            ADD(L("ffn_up.weight"), E, F, SYNTH_MATRIX);
        }
        ADD(L("ffn_down.weight"), F, E, SYNTH_MATRIX);
        if (fl & SYNTH_F_POST_NORM) ADD(L("post_ffw_norm.weight"), E, 1, SYNTH_NORM);
#undef L
    }
#undef ADD
    *ts_out = ts;
    *names_out = names;
    return k;
}

void synth_tensor_list_free(synth_tensor *ts, char **names, int n_t) {
    for (int i = 0; names && i < n_t; i++) free(names[i]);
    free(names);
    free(ts);
}

uint64_t synth_tensor_seed(long long seed, int i) {
    uint64_t s = (uint64_t)seed * 0x9e3779b97f4a7c15ull + (uint64_t)i;
    return splitmix64(&s);
}

static const synth_type F32_TYPE = {"f32", TERN_TYPE_F32, 0, -1, -1, 0};

synth_fill_spec synth_tensor_spec(const synth_tensor *t, int i, const synth_type *T, float dq_unit, long long seed) {
    synth_fill_spec fs = {t->kind == SYNTH_MATRIX ? T : &F32_TYPE, t->n_in, 0, 0, 0, t->kind,
                          synth_tensor_seed(seed, i)};
    fs.row_bytes = tern_type_row_size(fs.ty->type, t->n_in);
    fs.std = 1.0f / sqrtf((float)t->n_in);
    fs.d = fs.std / dq_unit;
    return fs;
}

int64_t synth_vocab_size(const gguf_file *f) {
    const char *model = gguf_get_cstr(f, "tokenizer.ggml.model");
    const gguf_value *toks = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_VT_STRING);
    if (!model || !strcmp(model, "no_vocab") || !toks || toks->count == 0) {
        tern_set_error("it has no tokenizer (tokenizer.ggml.model and tokenizer.ggml.tokens)");
        return -1;
    }
    return (int64_t)toks->count;
}

/* Metadata setters that also print "KEY = VALUE" to show (--dry-run). */
static void kv_u32(gguf_writer *w, FILE *show, const char *k, uint32_t v) {
    gguf_writer_add_u32(w, k, v);
    if (show) fprintf(show, "%s = %u\n", k, v);
}
static void kv_f32(gguf_writer *w, FILE *show, const char *k, float v) {
    gguf_writer_add_f32(w, k, v);
    if (show) fprintf(show, "%s = %g\n", k, v);
}
static void kv_str(gguf_writer *w, FILE *show, const char *k, const char *v) {
    gguf_writer_add_str(w, k, v);
    if (show) fprintf(show, "%s = %s\n", k, v);
}

/* The keys each family's converter writes (see FAMILIES), in the llama converter's order for llama presets (their
 * files are byte for byte those of before the families came). */
gguf_writer *synth_writer_new(const synth_preset *P, const synth_type *T, int n_layer, int64_t n_vocab, long long seed,
                              const synth_tensor *ts, int n_t, const gguf_file *vocab, FILE *show) {
    const unsigned fl = family_flags(P->arch);
    gguf_writer *w = gguf_writer_new();
    char title[128], k[128];
#define KEY(s) (snprintf(k, sizeof k, "%s." s, P->arch), k)
    snprintf(title, sizeof title, "%s (synthetic %s, tern synth seed %lld)", P->title, T->name, seed);
    kv_str(w, show, "general.architecture", P->arch);
    kv_str(w, show, "general.name", title);
    kv_u32(w, show, "general.file_type", (uint32_t)T->ftype);
    kv_u32(w, show, KEY("context_length"), (uint32_t)P->n_ctx);
    if (fl & SYNTH_F_ORIG_CTX) kv_u32(w, show, KEY("rope.scaling.original_context_length"), (uint32_t)P->n_ctx);
    kv_u32(w, show, KEY("embedding_length"), (uint32_t)P->n_embd);
    kv_u32(w, show, KEY("block_count"), (uint32_t)n_layer);
    kv_u32(w, show, KEY("feed_forward_length"), (uint32_t)P->n_ff);
    kv_u32(w, show, KEY("attention.head_count"), (uint32_t)P->n_head);
    kv_u32(w, show, KEY("attention.head_count_kv"), (uint32_t)P->n_head_kv);
    if (P->head_dim) {
        kv_u32(w, show, KEY("attention.key_length"), (uint32_t)P->head_dim);
        kv_u32(w, show, KEY("attention.value_length"), (uint32_t)P->head_dim);
    }
    kv_f32(w, show, KEY("rope.freq_base"), P->rope_base);
    if (P->rope_base_swa > 0) kv_f32(w, show, KEY("rope.freq_base_swa"), P->rope_base_swa);
    if (P->rope_linear > 0) {
        kv_str(w, show, KEY("rope.scaling.type"), "linear");
        kv_f32(w, show, KEY("rope.scaling.factor"), P->rope_linear);
    }
    if (P->window > 0) kv_u32(w, show, KEY("attention.sliding_window"), (uint32_t)P->window);
    kv_f32(w, show, KEY("attention.layer_norm_rms_epsilon"), P->rms_eps);
    if (fl & SYNTH_F_ROPE_DIMS) kv_u32(w, show, KEY("rope.dimension_count"), (uint32_t)preset_head_dim(P));
    if (!vocab) {
        kv_u32(w, show, KEY("vocab_size"), (uint32_t)n_vocab); /* no token list: llama.cpp takes n_vocab from here */
        kv_str(w, show, "tokenizer.ggml.model", "no_vocab");
    } else { /* llama.cpp takes n_vocab from the token list then (llama-vocab.cpp), so no vocab_size */
        for (uint64_t i = 0; i < vocab->n_kv; i++) {
            const gguf_str *k = &vocab->kv[i].key;
            if (k->len < 10 || memcmp(k->ptr, "tokenizer.", 10)) continue;
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)k->len, k->ptr);
            gguf_writer_add_value(w, key, &vocab->kv[i].val);
            if (show) fprintf(show, "%s = (copied)\n", key);
        }
    }
#undef KEY
    for (int i = 0; i < n_t; i++) {
        const int vec = ts[i].kind != SYNTH_MATRIX, type = vec ? TERN_TYPE_F32 : (int)T->type;
        const int64_t ne[2] = {ts[i].n_in, ts[i].n_out};
        if (gguf_writer_add_tensor(w, ts[i].name, vec ? 1 : 2, ne, type)) {
            gguf_writer_free(w);
            return NULL;
        }
        if (show)
            fprintf(show, "tensor %s %s %lld %lld\n", ts[i].name, tern_type_name(type), (long long)ne[0],
                    (long long)ne[1]);
    }
    return w;
}


/* ---- in-memory models (tern bench --synthetic): the same bytes as the file, made when uploaded ----
 * The file's header image goes through tern_model_load_gguf, so the model is bound by name exactly as the file
 * (fused tensors as row views, biases, norms, every metadata key). The vectors' bytes are made now (the loader copies
 * them). A matrix's data pointer is an address in a reserved, inaccessible range (PROT_NONE: a read faults) at the
 * tensor's offset in the file's data section; once loaded, each model weight (a tensor, or rows of one) is found by
 * that address, entered in the generator's table with its first row, and its data set to NULL (what the CUDA
 * backend takes as "ask gen_rows"). */

typedef struct {
    const tern_weight *w;
    synth_fill_spec fs;
    int64_t row0; /* the weight's first row in its tensor (a row view of a fused tensor) */
} gen_entry;
typedef struct {
    gen_entry *e;
    int n;
    synth_type ty; /* fs.ty points here (the preset tables are static; this keeps the spec self-contained) */
} gen_table;

/* What the header image's gguf_file holds until gguf_close: the vectors' bytes and the reserved range. */
typedef struct {
    void **vecs;
    int n_vecs;
    void *base;
    size_t span;
} synth_image;

static void image_release(void *p) {
    synth_image *im = p;
    if (!im) return;
    for (int i = 0; i < im->n_vecs; i++) free(im->vecs[i]);
    free(im->vecs);
    if (im->base) munmap(im->base, im->span);
    free(im);
}

static int gen_rows(const tern_model *m, const tern_weight *w, int64_t r0, int64_t n, void *dst) {
    const gen_table *t = m->gen_ctx;
    for (int i = 0; i < t->n; i++) {
        if (t->e[i].w != w) continue;
        synth_fill_rows(&t->e[i].fs, t->e[i].row0 + r0, n, dst, tern_n_cores());
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

/* The file's header image as a gguf_file whose tensors' data are the vectors' bytes (made here) and, for matrices,
 * addresses in a reserved range (*base, tensor i at base + off[i], off[n_t] the data section's size). NULL with
 * tern_last_error. */
static gguf_file *image_open(const synth_preset *P, const synth_type *T, int n_layer, long long seed,
                             const synth_tensor *ts, int n_t, size_t *off, const uint8_t **base) {
    gguf_writer *gw = synth_writer_new(P, T, n_layer, P->n_vocab, seed, ts, n_t, NULL, NULL);
    if (!gw) return NULL;
    char *img = NULL;
    size_t img_len = 0;
    FILE *ms = open_memstream(&img, &img_len);
    int bad = !ms || gguf_writer_write_header(gw, ms) != 0;
    if (ms) bad |= fclose(ms) != 0;
    off[0] = 0; /* each tensor padded to the writer's alignment, as in the file */
    for (int i = 0; i < n_t; i++) {
        const size_t nb = gguf_writer_tensor_nbytes(gw, i);
        off[i + 1] = off[i] + (nb + GGUF_WRITE_ALIGN - 1) / GGUF_WRITE_ALIGN * GGUF_WRITE_ALIGN;
    }
    gguf_writer_free(gw);
    synth_image *im = tern_xcalloc(1, sizeof *im);
    im->vecs = tern_xcalloc((size_t)n_t, sizeof *im->vecs);
    im->span = off[n_t] ? off[n_t] : 1;
    im->base = mmap(NULL, im->span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (im->base == MAP_FAILED) im->base = NULL, bad = 1;
    if (bad) {
        tern_set_error("cannot make the header image");
        free(img);
        image_release(im);
        return NULL;
    }
    const void **data = tern_xcalloc((size_t)n_t, sizeof *data);
    const float dq_unit = synth_calibrate(T);
    for (int i = 0; i < n_t; i++) {
        if (ts[i].kind == SYNTH_MATRIX) {
            data[i] = (const uint8_t *)im->base + off[i];
            continue;
        }
        const synth_fill_spec fs = synth_tensor_spec(&ts[i], i, T, dq_unit, seed);
        void *v = tern_xmalloc(fs.row_bytes);
        synth_fill_row(&fs, 0, v);
        data[i] = im->vecs[im->n_vecs++] = v;
    }
    *base = im->base;
    gguf_file *f = gguf_open_header(img, img_len, (const void *const *)data, image_release, im);
    free(data);
    return f;
}

/* The generator's table of a model loaded from image_open's file: every weight as the loader bound it, its tensor
 * found by address, its first row there; each weight's data set to NULL. NULL (error set) for a weight outside the
 * tensors (not reached: the loader binds matrices only from the directory). */
static gen_table *gen_table_new(tern_model *m, const synth_type *T, long long seed, const synth_tensor *ts, int n_t,
                                const size_t *off, const uint8_t *base) {
    gen_table *gt = tern_xcalloc(1, sizeof *gt);
    gt->ty = *T;
    const float dq_unit = synth_calibrate(T);
    const int n_w = 2 + 7 * m->n_layer;
    gt->e = tern_xcalloc((size_t)n_w, sizeof *gt->e);
    for (int j = 0; j < n_w; j++) {
        tern_weight *w;
        if (j < 2) w = j == 0 ? &m->tok_embd : &m->output;
        else {
            tern_layer *l = &m->layers[(j - 2) / 7];
            tern_weight *lw[7] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
            w = lw[(j - 2) % 7];
        }
        const size_t at = (size_t)((const uint8_t *)w->data - base);
        int i = 0;
        while (i < n_t && !(ts[i].kind == SYNTH_MATRIX && at >= off[i] && at < off[i + 1])) i++;
        if (i == n_t) {
            tern_set_error("a weight outside the model's tensors");
            gen_free(gt);
            return NULL;
        }
        gen_entry *e = &gt->e[gt->n++];
        e->w = w;
        e->fs = synth_tensor_spec(&ts[i], i, &gt->ty, dq_unit, seed);
        e->row0 = (int64_t)((at - off[i]) / e->fs.row_bytes);
    }
    for (int j = 0; j < gt->n; j++) ((tern_weight *)gt->e[j].w)->data = NULL;
    return gt;
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
    size_t *off = tern_xcalloc((size_t)n_t + 1, sizeof *off);
    const uint8_t *base = NULL;
    gguf_file *f = image_open(P, T, n_layer, seed, ts, n_t, off, &base);
    tern_model *m = f ? tern_model_load_gguf(f, P->name, 0) : NULL; /* owns f from here */
    gen_table *gt = m ? gen_table_new(m, T, seed, ts, n_t, off, base) : NULL;
    free(off);
    synth_tensor_list_free(ts, names, n_t);
    if (!gt) {
        char e[512]; /* the reason, copied: tern_set_error writes where tern_last_error points */
        snprintf(e, sizeof e, "%s", tern_last_error());
        tern_set_error("--synthetic %s: %s", P->name, e);
        tern_model_free(m);
        return NULL;
    }
    snprintf(m->desc, sizeof m->desc, "%s (synthetic %s in memory, seed %lld, %d layers)", P->title, T->name, seed,
             n_layer);
    m->gen_rows = gen_rows;
    m->gen_free = gen_free;
    m->gen_ctx = gt;
    return m;
}
