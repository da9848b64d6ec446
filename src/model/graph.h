/* graph.h: THE forward pass, once for every architecture and backend: a short list of ops (a tape) built from
 * a model's recipe, which a backend runs over a batch of tokens (backend.h). The graph holds model knowledge
 * only (which op, which weight, which buffer); how an op runs, and which neighbouring ops a backend fuses into
 * one kernel, is the backend's choice (backend/cpu/exec.c, backend/cuda/exec.c).
 *
 * Buffers are activations of the batch: (rows, width) f32, rows = the batch's n tokens, or its n_out output
 * rows for TB_XO and TB_LOGITS. Widths: tern_graph.width[]. */
#ifndef TERN_GRAPH_H
#define TERN_GRAPH_H
#include <stdio.h>

#include "model.h"

typedef enum {
    TB_X,      /* (n, n_embd) the residual stream */
    TB_XN,     /* (n, n_embd) a normalised copy, the input of the projections */
    TB_Q,      /* (n, n_head * head_dim) */
    TB_K,      /* (n, n_head_kv * head_dim) */
    TB_V,      /* (n, n_head_kv * head_dim) */
    TB_ATT,    /* (n, n_head * head_dim) attention output */
    TB_T,      /* (n, n_embd) a block's output before its residual add */
    TB_G,      /* (n, n_ff) gate, then the gated activation */
    TB_U,      /* (n, n_ff) up */
    TB_XO,     /* (n_out, n_embd) the residual rows whose logits are wanted */
    TB_LOGITS, /* (n_out, n_vocab) */
    TB_N
} tg_buf;

typedef enum {
    TG_EMBED,     /* dst = rows tok of w (the token embedding) times f (1: none) */
    TG_RMSNORM,   /* dst = rmsnorm(src0) * vec, eps f (Zhang & Sennrich 2019); dst may be src0 */
    TG_HEAD_NORM, /* dst in place: RMSNorm over each head_dim slice of a row, times vec (head_dim), eps f */
    TG_ADD,       /* dst += src0 */
    TG_MATMUL,    /* dst = src0 . w^T (+ vec, the bias, when not NULL) */
    TG_ROPE,      /* dst (rows, heads, head_dim) in place: rotated at the tokens' positions (rope, table) */
    TG_KV_STORE,  /* K = src0, V = src1 stored into the layer's cache at the tokens' slots */
    TG_ATTN,      /* dst = causal attention of q = src0 over the layer's cache rows of each token's sequence, up to
                   * its position (and > position - window when window > 0), softmax scale f */
    TG_GLU,       /* dst = act(src0) * src1 (act) */
    TG_GATHER,    /* dst (n_out rows) = the output rows of src0 */
    TG_SOFTCAP,   /* dst = f * tanh(dst / f) */
    TG_QTEMP      /* dst (rows, heads, head_dim) in place times 1 + f ln(floor(pos / window) + 1), the token's position
                   * (Llama 4 / Mistral 3 attention temperature; llama.cpp's inp_attn_scale) */
} tg_op;

/* What a TG_MATMUL's weight is: a backend may fuse the projections that share an input (Q|K|V, GATE|UP) or
 * shard them over GPUs (Q K V GATE UP by output rows, O DOWN by input columns, OUT by vocabulary rows). */
typedef enum { TW_Q, TW_K, TW_V, TW_O, TW_GATE, TW_UP, TW_DOWN, TW_OUT, TW_N } tg_role;

typedef struct {
    tg_op op;
    tg_buf dst, src0, src1;
    int layer;              /* -1 outside the layers */
    tg_role role;           /* TG_MATMUL */
    const tern_weight *w;   /* TG_EMBED, TG_MATMUL */
    const float *vec;       /* norm weight, bias or NULL */
    float f;                /* eps, scale, soft-cap */
    int heads;              /* TG_ROPE, TG_HEAD_NORM: heads in a row */
    tern_rope_kind rope;    /* TG_ROPE */
    int table;              /* TG_ROPE: the frequency table (tern_layer.rope_table) */
    int window;             /* TG_ATTN: 0 all keys; TG_QTEMP: the floor scale */
    tern_act act;           /* TG_GLU */
} tg_node;

typedef struct {
    tg_node *nodes;
    int n_nodes;
    int n_layer;        /* layers run (a self-speculative drafter runs the first few) */
    int width[TB_N];    /* elements a row of each buffer */
} tern_graph;

/* The forward pass of m's first n_layer layers (<= 0: all), then the output norm and head over the output
 * rows. Never fails for a loaded model (the recipe was checked at load). Free with tern_graph_free. */
tern_graph *tern_graph_build(const tern_model *m, int n_layer);
void tern_graph_free(tern_graph *g);
/* One line a node (for tests and TERN_TRACE-style dumps). */
void tern_graph_print(const tern_graph *g, FILE *f);

#endif
