/* model.h: the llama-family model as loaded from GGUF (internal to tern; the public API is tern.h).
 * arch.c fills it (hyperparameters from {arch}.* metadata, tensors by GGUF name); forward.c runs it. */
#ifndef TERN_MODEL_H
#define TERN_MODEL_H
#include <stdint.h>

#include "backend_cpu.h"
#include "gguf.h"
#include "tokenizer.h"

typedef struct {
    float *attn_norm;                /* (n_embd) */
    tern_weight wq, wk, wv, wo;      /* (n_head*hd, n_embd), (n_kv*hd, n_embd) x2, (n_embd, n_head*hd) */
    float *bq, *bk, *bv, *bo;        /* optional biases, NULL when absent */
    float *ffn_norm;                 /* (n_embd) */
    tern_weight w_gate, w_up, w_down; /* (n_ff, n_embd) x2, (n_embd, n_ff) */
} tern_layer;

struct tern_model {
    gguf_file *gguf;
    tern_vocab *vocab; /* NULL for a model without a tokenizer (tokenizer.ggml.model "no_vocab") */
    char arch[32];
    char desc[256];
    /* hyperparameters */
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_rot;
    float rms_eps;
    double rope_base, rope_scale; /* rope_scale: linear scaling factor, 1 = none */
    /* weights */
    tern_weight tok_embd;   /* (n_vocab, n_embd) */
    tern_weight output;     /* (n_vocab, n_embd); = tok_embd when tied */
    float *output_norm;     /* (n_embd) */
    float *rope_factors;    /* (n_rot/2) or NULL: rope_freqs.weight (Llama-3.1 style) */
    tern_layer *layers;     /* (n_layer) */
    uint64_t n_params, n_bytes;
    int n_tensors_used; /* tensors bound at load; must equal the file's tensor count */
    char *chat_template;
    /* In-memory synthetic models (tern bench --synthetic, cli/synth.c): every matrix has data == NULL and
     * gen_rows writes rows [r0, r0 + n) of w (n * w->row_bytes bytes at dst), the bytes tern synth would
     * write to a file; returns 0 or -1. Only the CUDA backend uploads such weights (the CPU path refuses).
     * gen_free(gen_ctx) runs in tern_model_free. NULL for a model loaded from a file. */
    int (*gen_rows)(const struct tern_model *m, const tern_weight *w, int64_t r0, int64_t n, void *dst);
    void (*gen_free)(void *gen_ctx);
    void *gen_ctx;
};

#endif
