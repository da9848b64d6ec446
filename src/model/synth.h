/* synth.h: synthetic models of the supported families (src/model/synth.c): presets, types, and the rows tern synth
 * writes (cli/synth.c) or tern bench --synthetic makes in memory (tern_synth_model_new). */
#ifndef TERN_SYNTH_H
#define TERN_SYNTH_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gguf_write.h"
#include "quant.h"
#include "tern.h"

/* A preset: a real model's shapes and the metadata its GGUF carries (its Hugging Face config.json, through llama.cpp's
 * converter). arch is general.architecture: one of the families in synth.c (llama, qwen2, qwen3, gemma3, phi3),
 * which says the tensors a layer has beyond the llama block. */
typedef struct {
    const char *name, *title, *arch;
    int n_embd, n_layer, n_ff, n_head, n_head_kv, n_vocab, n_ctx;
    float rope_base;
    int tied;            /* 1: no output.weight, the output projection is token_embd */
    float rms_eps;       /* attention.layer_norm_rms_epsilon */
    int head_dim;        /* 0: n_embd / n_head, no key_length key; else attention.key_length = value_length */
    int window;          /* attention.sliding_window (0: not written) */
    float rope_base_swa; /* rope.freq_base_swa, the sliding-window layers' base (0: not written) */
    float rope_linear;   /* rope.scaling.type linear with this rope.scaling.factor (0: no scaling keys) */
} synth_preset;

typedef struct {
    const char *name;
    enum tern_type type;
    int ftype;
    int d_off, m_off;
    float m_ratio;
} synth_type;

/* What a tensor holds: a matrix of the file's type (std 1/sqrt(n_in)), or an f32 vector: a norm weight
 * (1 + N(0, 0.05^2)) or a bias (N(0, 0.1^2)). */
typedef enum { SYNTH_MATRIX = 0, SYNTH_NORM = 1, SYNTH_BIAS = 2 } synth_kind;

typedef struct {
    const synth_type *ty;
    int64_t n_in;   /* elements per row */
    size_t row_bytes;
    float std;      /* target element std (1/sqrt(n_in)) for matrices */
    float d;        /* block scale giving that std (quantized types) */
    synth_kind kind;
    uint64_t seed;  /* per-tensor stream seed */
} synth_fill_spec;

/* One tensor of the file: ne = (n_in, n_out) for a matrix, (n_in) for a vector (n_out = 1). */
typedef struct { const char *name; int64_t n_in, n_out; synth_kind kind; } synth_tensor;

/* "a, b, c": the preset / type names, for messages. */
void synth_list_presets(char *out, size_t n);
void synth_list_types(char *out, size_t n);
/* Preset and type by name, and the check that every matrix row is whole blocks of the type. Returns 0, or
 * -1 with the reason in why. */
int synth_resolve(const char *arch, const char *type, const synth_preset **Pp, const synth_type **Tp, char *why,
                  size_t nwhy);
/* The tensor list in file order; returns the count; *ts_out and *names_out (strdup'ed) are the caller's to free
 * (synth_tensor_list_free). */
int synth_tensor_list(const synth_preset *P, int n_layer, int64_t n_vocab, synth_tensor **ts_out, char ***names_out);
void synth_tensor_list_free(synth_tensor *ts, char **names, int n_t);
/* The GGUF header of the model (metadata, then ts[0..n_t) as the directory) in a new writer; with show != NULL each
 * key is printed there as "KEY = VALUE" and each tensor as "tensor NAME TYPE NE0 NE1" (--dry-run). vocab: NULL (no
 * tokenizer: "tokenizer.ggml.model" = "no_vocab" and {arch}.vocab_size = n_vocab, token ids only), or a GGUF whose
 * tokenizer.* keys are copied verbatim (tern synth --vocab-from; n_vocab must be its token count: synth_vocab_size).
 * NULL with tern_last_error on a tensor the writer refuses. */
struct gguf_file;
gguf_writer *synth_writer_new(const synth_preset *P, const synth_type *T, int n_layer, int64_t n_vocab, long long seed,
                              const synth_tensor *ts, int n_t, const struct gguf_file *vocab, FILE *show);
/* The token count of f's tokenizer (tokenizer.ggml.tokens), or -1 with tern_last_error when f has none. */
int64_t synth_vocab_size(const struct gguf_file *f);
/* How tensor t (index i of the list) is filled for a model seed: type, row bytes, scales, PRNG stream. dq_unit:
 * synth_calibrate(T). */
synth_fill_spec synth_tensor_spec(const synth_tensor *t, int i, const synth_type *T, float dq_unit, long long seed);
/* The RMS of dequantized random blocks of ty with d = 1: d = target std / this. */
float synth_calibrate(const synth_type *ty);
/* Row r of a tensor (fs->row_bytes bytes at dst; a vector is one row); rows [r0, r0 + n) on up to n_threads
 * threads. The bytes depend only on (fs, r), never on the thread count. */
void synth_fill_row(const synth_fill_spec *fs, int64_t r, uint8_t *dst);
void synth_fill_rows(const synth_fill_spec *fs, int64_t r0, int64_t n, uint8_t *dst, int n_threads);

/* The model tern synth --arch ARCH --type TYPE [--layers N] --seed SEED would write, held in memory: the file's
 * header image loaded by tern_model_load_gguf (bound by name exactly as the file would be), its vectors made now,
 * and a generator (tern_model.gen_rows) that makes each matrix's rows, byte for byte the file's, when the CUDA
 * backend uploads them, so a model larger than the disk (llama3-405b at q4_0, ~229 GB) runs. No tokenizer;
 * layers <= 0: the preset's. NULL with tern_last_error on an unknown preset or type or rows that
 * are not whole blocks. Free with tern_model_free. */
tern_model *tern_synth_model_new(const char *arch, const char *type, int layers, long long seed);

#endif
