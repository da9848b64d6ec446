/* backend.h: the interface between the engine (runtime/engine.c) and a device. A backend holds the model's
 * weights in its own form (uploaded once per model and device), the rows of the paged KV cache of every layer,
 * and scratch for one pass; it runs the graph (model/graph.h) over a ubatch: the tokens of one forward pass,
 * each with its sequence's position, KV slot and block table. It knows ops, not models: which ops to fuse into
 * one kernel it decides from the graph's op sequence.
 *
 * Implementations: backend/cpu/exec.c (tern_backend_cpu_new), backend/cuda/backend_cuda.c (tern_backend_cuda_new). */
#ifndef TERN_BACKEND_H
#define TERN_BACKEND_H
#include <stdint.h>

#include "graph.h"

/* What an output row returns. */
typedef enum {
    TERN_OUT_LOGITS = 1, /* the row's logits, (n_vocab) f32, into tern_out.logits (host memory) */
    TERN_OUT_ARGMAX = 2, /* the index of the largest logit (lowest id on ties) into tern_out.id */
    TERN_OUT_SAMPLE = 3  /* a draw of the sampling chain run by the device (tern_sample_req) into tern_out.id */
} tern_out_mode;

/* The sampling chain a device runs for one row (backend->device_sample): the exact choice of
 * tern_sampler_sample with the same parameters on the same logits, given the host RNG's uniform draw u. */
typedef struct {
    const int32_t *pen_ids; /* the distinct ids the repeat penalty touches (tern_sampler_penalty_ids) */
    int n_pen;
    float penalty, top_p, min_p, temp;
    int top_k;              /* 1..1024, < n_vocab */
    double u;
} tern_sample_req;

typedef struct {
    tern_out_mode mode;
    float *logits;                 /* TERN_OUT_LOGITS: n_vocab floats */
    const tern_sample_req *samp;   /* TERN_OUT_SAMPLE */
    int32_t id;                    /* result of ARGMAX / SAMPLE (-1: every logit NaN) */
} tern_out;

/* One forward pass. Token t (0..n) is id tok[t] at position pos[t] of its sequence; its K/V go to pool row
 * slot[t]; it attends to its sequence's rows 0..pos[t], logical row j at pool row
 * bt[bt_off[t] + (j >> lbs)] * (1 << lbs) + (j & ((1 << lbs) - 1)). Tokens of one sequence are contiguous and
 * in position order; the rows of a position are written before any token attends to them.
 *
 * The window pool (tern_backend_params.kv_rows_w > 0, the engine's swa_compact): a layer with a sliding window keeps
 * its rows in a second, smaller pool; its token t writes pool row slot_w[t] and reads logical row j at
 * bt_w[bt_off[t] + (j >> lbs)] (the same offsets as bt: a sequence's two tables have the same logical length). Entries
 * of bt_w for blocks wholly before every query's window are -1 (released); a windowed layer reads only rows
 * > pos[t] - window (a kernel that loads whole tiles and masks may substitute a valid block: CUDA reads block 0).
 * slot_w and bt_w are NULL when there is no window pool. */
typedef struct {
    int n;
    const int32_t *tok, *pos, *slot, *bt_off; /* (n) */
    const int32_t *bt;                        /* (n_bt) the block tables of the pass's sequences */
    int n_bt, lbs;
    int n_seq;                                /* sequences in the pass */
    int max_pos;                              /* 1 + the largest pos */
    int n_out;
    const int32_t *out;                       /* (n_out) ascending rows whose logits are computed */
    tern_out *outs;                           /* (n_out) */
    const int32_t *slot_w;                    /* (n) windowed layers' pool rows, or NULL */
    const int32_t *bt_w;                      /* (n_bt) windowed layers' block tables, or NULL */
} tern_ubatch;

typedef struct tern_backend tern_backend;
typedef struct {
    /* Run graph g over ub; fill ub->outs. 0, or -1 (error set). */
    int (*exec)(tern_backend *be, const tern_graph *g, const tern_ubatch *ub);
    /* Copy pool rows [src, src + n) to [dst, dst + n) in every layer of a pool (copy-on-write of a shared block):
     * pool 0 the main pool (every layer without the window pool), 1 the window pool's layers. */
    int (*kv_copy)(tern_backend *be, int pool, int64_t dst, int64_t src, int64_t n);
    /* Prepare passes of 2..max_rows tokens (capture their CUDA graphs now); the count prepared, -1 on error. */
    int (*prepare)(tern_backend *be, const tern_graph *g, int max_rows);
    void (*free)(tern_backend *be);
} tern_backend_ops;

struct tern_backend {
    const tern_backend_ops *ops;
    const char *name;   /* "cpu", "cuda" */
    int max_rows;       /* tokens a pass at most (the prefill chunk, -ub) */
    int exact_rows;     /* a pass of up to this many tokens gives each token the bits of its own one-token pass,
                         * whatever shares the pass (batch invariance); the engine never mixes sequences in a
                         * longer pass, and runs a longer run of one sequence's tokens alone */
    int device_sample;  /* TERN_OUT_SAMPLE is supported */
};

/* What a backend is made for. */
typedef struct {
    int64_t kv_rows;    /* pool rows of the KV cache (blocks x block size) */
    int64_t kv_rows_w;  /* pool rows of the window pool, which holds the sliding-window layers (window > 0) alone;
                         * 0: none, every layer in the main pool */
    int lbs;            /* log2 of the block size */
    int n_ctx;          /* positions a sequence at most */
    int max_rows;       /* tokens a pass at most */
    int n_threads;      /* CPU workers */
    int n_layer;        /* layers the graph runs (<= 0: all) */
    int kv_q8;          /* the KV cache in Q8_0 blocks (CUDA) */
    int tp;             /* GPUs of a tensor-parallel split (CUDA) */
    int verify_fast;    /* CUDA: 2..16-token passes through the GEMM (not bit-exact to one-token passes) */
    int verbose;        /* print the device memory plan */
} tern_backend_params;

tern_backend *tern_backend_cpu_new(const tern_model *m, const tern_backend_params *p);
tern_backend *tern_backend_cuda_new(const tern_model *m, const tern_backend_params *p);

#endif
