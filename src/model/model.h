/* model.h: a model as loaded (internal to tern; the public API is tern.h). arch.c fills it from a GGUF file
 * through one recipe row per architecture (tern_recipe below); graph.c turns it into the forward pass over a
 * batch; backends run that graph and own no model knowledge.
 *
 * Shapes: innermost dimension last. A weight W of GGUF shape ne = (n_in, n_out) is (n_out, n_in) here. */
#ifndef TERN_MODEL_H
#define TERN_MODEL_H
#include <stdint.h>

#include "backend_cpu.h"
#include "gguf.h"
#include "tern.h"
#include "tokenizer.h"

/* RoPE pairing (RoFormer eq. 34). NORM: adjacent pairs (x[2i], x[2i+1]), llama.cpp's LLAMA type, over the Q/K
 * rows convert_hf_to_gguf.py permutes for llama GGUFs; NEOX: pairs (x[i], x[i + n_rot/2]), the HF order. */
typedef enum { TERN_ROPE_NORM = 0, TERN_ROPE_NEOX = 1 } tern_rope_kind;
/* The gated FFN's activation: SwiGLU (silu(g) * u; Shazeer 2020) or GeGLU with GELU's tanh form. */
typedef enum { TERN_ACT_SILU = 0, TERN_ACT_GELU_TANH = 1 } tern_act;

/* Block-recipe flags. */
enum {
    TERN_RECIPE_QK_NORM = 1u << 0,   /* per-head RMSNorm on q and k after their projections (attn_q_norm, attn_k_norm) */
    TERN_RECIPE_POST_NORM = 1u << 1, /* RMSNorm on the attention and FFN outputs before their residual adds
                                      * (post_attention_norm, post_ffw_norm) */
    TERN_RECIPE_EMBD_SCALE = 1u << 2, /* embeddings multiplied by sqrt(n_embd) */
    TERN_RECIPE_YARN_PARAMS = 1u << 3 /* the file's YaRN beta_fast / beta_slow and yarn_log_multiplier and the attention
                                       * temperature are read (llama.cpp reads them for mistral3 among tern's rows; the
                                       * others keep its defaults: 32, 1, none, none) */
};

/* One architecture as data: which `general.architecture` it answers to and its block recipe. Hyperparameter
 * keys are `{arch}.<GGUF standard key>` and tensor names GGUF's standard ones (llama.cpp LLM_TENSOR_NAMES) for
 * every row; per-row differences are the fields here. A new family adds a row (arch.c) and, where a field
 * needs one, a kernel; never another forward. */
typedef struct {
    const char *arch;       /* general.architecture */
    tern_rope_kind rope;
    tern_act act;
    unsigned flags;         /* TERN_RECIPE_* */
    int swa_period;         /* sliding window on every layer but each swa_period-th (0: no sliding window) */
} tern_recipe;

/* The recipe row of arch, or NULL. tern_recipe_names: the supported names, comma-separated. */
const tern_recipe *tern_recipe_find(const char *arch);
const char *tern_recipe_names(void);

typedef struct {
    float *attn_norm;                /* (n_embd) */
    float *attn_post_norm;           /* (n_embd) or NULL (TERN_RECIPE_POST_NORM) */
    float *q_norm, *k_norm;          /* (head_dim) or NULL (TERN_RECIPE_QK_NORM) */
    tern_weight wq, wk, wv, wo;      /* (n_head*hd, n_embd), (n_kv*hd, n_embd) x2, (n_embd, n_head*hd) */
    float *bq, *bk, *bv, *bo;        /* optional biases, NULL when absent */
    float *ffn_norm;                 /* (n_embd) */
    float *ffn_post_norm;            /* (n_embd) or NULL */
    tern_weight w_gate, w_up, w_down; /* (n_ff, n_embd) x2, (n_embd, n_ff) */
    int window;                      /* sliding-window attention: keys at positions > pos - window (0: all) */
    int rope_table;                  /* which RoPE frequency table: 0 global, 1 local (sliding-window) layers */
} tern_layer;

struct tern_model {
    gguf_file *gguf;
    const tern_recipe *recipe;
    tern_vocab *vocab; /* NULL for a model without a tokenizer (tokenizer.ggml.model "no_vocab") */
    char arch[32];
    char desc[256];
    /* hyperparameters */
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_rot;
    float rms_eps;
    double rope_base, rope_scale;   /* rope_scale: linear scaling factor, 1 = none */
    double rope_yarn;               /* YaRN's factor (rope.scaling.type yarn), 0 = none; then rope_scale is 1 */
    int rope_yarn_ctx;              /* rope.scaling.original_context_length (YaRN's ramp, LongRoPE's long/short) */
    float rope_mscale;              /* cos and sin times this: rope.scaling.attn_factor x YaRN's 1 + 0.1 ln factor
                                     * (over 1 + 0.1 yarn_log_multiplier ln factor where the file sets one) */
    float rope_yarn_beta_fast, rope_yarn_beta_slow; /* YaRN's ramp (rope.scaling.yarn_beta_fast/slow; 32, 1) */
    float attn_temp;                /* Llama 4 / Mistral 3 attention temperature (attention.temperature_scale): q
                                     * times 1 + attn_temp ln(floor(pos / attn_temp_floor) + 1); 0: none */
    int attn_temp_floor;            /* its floor scale: the original context (rope.scaling.original_context_length) */
    double rope_base_local;         /* RoPE base of sliding-window layers (rope_table 1) */
    float attn_scale;               /* softmax scale of q.k (1/sqrt(head_dim) unless the metadata says) */
    float logit_softcap;            /* final logits = c * tanh(logits / c); 0: none */
    float embd_scale;               /* embeddings times this (1: none) */
    /* weights */
    tern_weight tok_embd;   /* (n_vocab, n_embd) */
    tern_weight output;     /* (n_vocab, n_embd); = tok_embd when tied */
    float *output_norm;     /* (n_embd) */
    float *rope_factors;    /* (n_rot/2) or NULL: rope_freqs.weight (Llama-3.1 style) */
    float *rope_long, *rope_short; /* (n_rot/2) or NULL: LongRoPE's factors (Phi-3 128k), by the context's size */
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
    /* Device copies of the weights, uploaded once per model and device and shared by every engine (sequences,
     * drafters) on it: the CUDA backend's (backend_cuda.c), freed with the model. */
    void *dev_weights;
    void (*dev_weights_free)(void *);
};

/* tern_model_load over an opened file f (the model owns it from here, on error too): the recipe's metadata and
 * tensors bound by name. path names it in messages. tern synth's in-memory models (synth.c) load through it from a
 * header image (gguf_open_header), so they are bound exactly as the file tern synth writes. NULL on error. */
struct tern_model *tern_model_load_gguf(gguf_file *f, const char *path, int progress);

/* Fill what follows from the hyperparameters and the recipe (per-layer windows and RoPE tables, defaults of
 * attn_scale, embd_scale): after the loader set the fields above. */
void tern_model_finish(struct tern_model *m);

#endif
