/* synth.h: synthetic llama-architecture models (src/model/synth.c): presets, types, and the rows tern synth writes
 * (cli/synth.c) or tern bench --synthetic makes in memory (tern_synth_model_new). */
#ifndef TERN_SYNTH_H
#define TERN_SYNTH_H
#include <stddef.h>
#include <stdint.h>

#include "quant.h"
#include "tern.h"

#define SYNTH_RMS_EPS 1e-5f

typedef struct {
    const char *name, *title;
    int n_embd, n_layer, n_ff, n_head, n_head_kv, n_vocab, n_ctx;
    float rope_base;
    int tied; /* 1: no output.weight, the output projection is token_embd */
} synth_preset;

typedef struct {
    const char *name;
    enum tern_type type;
    int ftype;
    int d_off, m_off;
    float m_ratio;
} synth_type;

typedef struct {
    const synth_type *ty;
    int64_t n_in;   /* elements per row */
    size_t row_bytes;
    float std;      /* target element std (1/sqrt(n_in)) for matrices */
    float d;        /* block scale giving that std (quantized types) */
    int is_norm;    /* 1-D norm weight: 1 + N(0, 0.05^2) */
    uint64_t seed;  /* per-tensor stream seed */
} synth_fill_spec;

typedef struct { const char *name; int64_t n_in, n_out; int is_norm; } synth_tensor;

/* "a, b, c": the preset / type names, for messages. */
void synth_list_presets(char *out, size_t n);
void synth_list_types(char *out, size_t n);
/* Preset and type by name, and the check that every matrix row is whole blocks of the type. Returns 0, or
 * -1 with the reason in why. */
int synth_resolve(const char *arch, const char *type, const synth_preset **Pp, const synth_type **Tp, char *why,
                  size_t nwhy);
/* The tensor list in file order; returns the count; *ts_out and *names_out (strdup'ed) are the caller's to free. */
int synth_tensor_list(const synth_preset *P, int n_layer, int64_t n_vocab, synth_tensor **ts_out, char ***names_out);
/* Tensor i's PRNG stream seed for a model seed. */
uint64_t synth_tensor_seed(long long seed, int i);
/* The RMS of dequantized random blocks of ty with d = 1: d = target std / this. */
float synth_calibrate(const synth_type *ty);
/* Row r of a tensor (fs->row_bytes bytes at dst); rows [r0, r0 + n) on up to n_threads threads. The bytes
 * depend only on (fs, r), never on the thread count. */
void synth_fill_row(const synth_fill_spec *fs, int64_t r, uint8_t *dst);
void synth_fill_rows(const synth_fill_spec *fs, int64_t r0, int64_t n, uint8_t *dst, int n_threads);

/* The model tern synth --arch ARCH --type TYPE [--layers N] --seed SEED would write, held in memory: metadata,
 * norms and a generator (tern_model.gen_rows) that makes each matrix's rows, byte for byte the file's, when
 * the CUDA backend uploads them, so a model larger than the disk (llama3-405b at q4_0, ~229 GB) runs. No
 * tokenizer; layers <= 0: the preset's. NULL with tern_last_error on an unknown preset or type or rows that
 * are not whole blocks. Free with tern_model_free. */
tern_model *tern_synth_model_new(const char *arch, const char *type, int layers, long long seed);

#endif
