/* engine.c: the engine (tern.h): a model on a device, the paged KV cache's bookkeeping, sequences, batches, and
 * the step that turns a batch into forward passes of the graph (model/graph.c) on the backend (backend/).
 * tern_context, the single-sequence API the CLI and speculative decoding use, is an engine with one sequence.
 *
 * A step: each sequence's new tokens get consecutive positions and KV slots (blocks allocated up front, so a
 * step that cannot fit changes nothing); the tokens are cut into passes. Batch invariance: a pass of at most
 * backend->exact_rows tokens gives every token the bits of its own one-token pass, so such passes mix sequences
 * freely; a longer run of one sequence's tokens (a prefill) runs alone, chunked from its start exactly as it
 * would be without company.
 *
 * The window pool (tern_context_params.swa_compact): a model's sliding-window layers keep their rows in a second pool
 * and a sequence has a second table into it (table_w), of the same logical length. Its blocks are allocated pass by
 * pass and released once wholly before position p0 - window + 1 - margin, p0 the first position the sequence can
 * still query (its next token's, less the margin kept for truncation), so a sequence holds about window + margin +
 * one pass of rows there whatever its length. The global layers keep every position in the main pool. A prefix-cache
 * entry also holds its block's window block while its sequence did when keyed; a hit ends where those are held. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_cuda.h"
#include "kv_cache.h"
#include "model.h"
#include "prefix_cache.h"
#include "sampler.h"
#include "tern.h"
#include "util.h"

#define TERN_MAX_CHUNK 256 /* tokens per CPU pass: bounds the activation scratch */
/* positions the window pool keeps past the window by default: a speculative verify rolls back at most its drafts */
#define TERN_SWA_MARGIN 64
_Static_assert(TERN_SWA_MARGIN > TERN_SPEC_MAX_DRAFT, "the window pool's margin must cover a rejected draft");

struct tern_seq {
    tern_engine *e;
    int slot_idx;            /* index in e->seqs */
    int n_past;
    int32_t *table;          /* (cap) pool blocks of logical blocks 0.. */
    int n_blocks, cap;
    int32_t *table_w;        /* (cap) window-pool blocks of logical blocks 0..n_blocks_w-1; -1 below w_lo (released) */
    int w_lo, n_blocks_w;    /* logical blocks [w_lo, n_blocks_w) held in the window pool */
    tern_sampler *smp;       /* TERN_BATCH_SAMPLE's sampler (the caller's), or NULL */
    int32_t *hist;           /* (hist_cap) the tokens in the cache, position order: the repeat penalty's history */
    int n_hist, hist_cap;
    /* prefix cache: the entries of logical blocks 0..pc_n-1 (slot, uid), its blocks keyed so far */
    int32_t *pc_idx;
    uint64_t *pc_uid;
    int pc_n, pc_cap;
    /* step scratch */
    int step_k;              /* tokens of this sequence in the step */
    int step_seg;            /* its segment in the step */
};

typedef struct {
    int32_t tok;
    tern_seq *seq;
    int out;                        /* TERN_BATCH_* or 3: sample (internal) */
    float *dst;                     /* LOGITS destination (NULL: the batch's storage) */
    const tern_sample_req *req;     /* device sampling request (internal) */
    int32_t id;
    int logit_row;                  /* row of b->logits, -1 */
    int rank;                       /* the row's place among its sequence's tokens of the step */
    int host_sample;                /* TERN_BATCH_SAMPLE drawn on the host from the row's logits */
} batch_row;

struct tern_batch {
    batch_row *r;
    int n, cap;
    float *logits;                  /* (logits_cap, n_vocab) */
    int logits_cap, n_vocab;
};

struct tern_engine {
    tern_model *m;
    tern_backend *be;
    tern_graph *g;
    tern_kv kv;
    tern_kv kvw;                    /* the window pool (swa), else unused */
    int swa, swa_window, swa_margin; /* swa: the window pool is on; the largest window; rows kept past it */
    tern_pcache *pc;                /* the prefix cache, or NULL (tern_engine_params.prefix_cache) */
    int n_ctx, n_seq_max;
    tern_seq **seqs;                /* (n_seq_max) */
    /* step scratch, grown: per pass token arrays, per step ordering */
    int32_t *tok, *pos, *slot, *bt_off, *bt, *out, *order, *seg_start, *seg_len;
    int32_t *slot_w, *bt_w;                /* the window pool's (swa) */
    int32_t *p_rk, *p_small, *p_small_rk;  /* the passes' row lists (cap_tok) */
    tern_sample_req *reqs;                 /* device sampling requests of the step's TERN_BATCH_SAMPLE rows (cap_tok) */
    int32_t *pen;                          /* their penalty ids */
    int pen_cap;
    tern_out *outs;
    int cap_tok, cap_bt;
    tern_seq **segs;
};

/* ---- parameters, devices ---- */

tern_context_params tern_context_default_params(void) {
    tern_context_params p = {0, 0, TERN_DEVICE_AUTO, 0, 0, 0, 1, 0, TERN_CACHE_F16, TERN_CACHE_F16, 0, 0};
    return p;
}

tern_engine_params tern_engine_default_params(void) {
    tern_engine_params p = {tern_context_default_params(), 1, 0, 0, 0};
    return p;
}

const char *tern_cuda_name(void) { return tern_cuda_device_name(); }
int tern_cuda_order(void) { return tern_cuda_gemv_order(); }

int tern_cache_type_parse(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "f16")) return TERN_CACHE_F16;
    if (!strcmp(s, "q8_0")) return TERN_CACHE_Q8_0;
    return -1;
}

/* The device for dev: AUTO is CUDA when the build has it and a GPU is present, else the CPU. */
static int resolve_device(tern_device dev) {
    if (dev != TERN_DEVICE_AUTO) return dev;
    return tern_cuda_available() ? TERN_DEVICE_CUDA : TERN_DEVICE_CPU;
}

/* ---- engine ---- */

tern_engine *tern_engine_new(tern_model *m, const tern_engine_params *ep) {
    const tern_context_params *p = &ep->ctx;
    int n_ctx = p->n_ctx;
    if (n_ctx <= 0) n_ctx = m->n_ctx_train < 4096 ? m->n_ctx_train : 4096;
    int dev = resolve_device(p->device);
    if ((p->cache_type_k != TERN_CACHE_F16 && p->cache_type_k != TERN_CACHE_Q8_0) ||
        (p->cache_type_v != TERN_CACHE_F16 && p->cache_type_v != TERN_CACHE_Q8_0)) {
        tern_set_error("unknown KV cache type (expected f16 or q8_0)");
        return NULL;
    }
    if ((p->cache_type_k == TERN_CACHE_Q8_0 || p->cache_type_v == TERN_CACHE_Q8_0) && dev != TERN_DEVICE_CUDA) {
        tern_set_error("-ctk/-ctv q8_0 (--cache-type-k/v) needs the CUDA backend (the CPU KV cache is f16)");
        return NULL;
    }
    if (p->cache_type_k != p->cache_type_v) {
        tern_set_error("-ctk and -ctv (--cache-type-k/v) must name the same type (give both: -ctk q8_0 -ctv q8_0)");
        return NULL;
    }
    const int n_seq = ep->n_seq_max > 0 ? ep->n_seq_max : 1;
    /* the default block: 16 rows on the CPU (fine-grained sharing; its attention maps a row at a time for free), 128
     * on CUDA (H200, the attention kernels over 16- vs 128-row pages against the contiguous cache: prefill v6b at
     * S = 8192 D = 128 +28-31% vs +3%, Q8_0 decode at depth 32767 +9% vs +0%, f16 decode +20% either way:
     * docs/ledger.md "the paged KV cache") */
    int bs = ep->block_size > 0 ? ep->block_size : dev == TERN_DEVICE_CUDA ? 128 : 16, lbs = 0;
    while ((1 << lbs) < bs) lbs++;
    if ((1 << lbs) != bs || bs < 16 || bs > 256) {
        tern_set_error("KV block size %d: expected a power of two from 16 to 256", ep->block_size);
        return NULL;
    }
    /* the pool: kv_tokens rows in whole blocks, else room for every sequence's n_ctx positions (each rounded up to whole
     * blocks: n_seq full-length sequences must fit) */
    const int64_t per_seq = ((int64_t)n_ctx + bs - 1) / bs;
    const int64_t n_blocks = ep->kv_tokens > 0 ? ((int64_t)ep->kv_tokens + bs - 1) / bs : (int64_t)n_seq * per_seq;
    if (n_blocks > (1 << 26) || n_blocks * bs > INT32_MAX) {
        tern_set_error("KV cache of %lld blocks of %d rows is out of range", (long long)n_blocks, bs);
        return NULL;
    }
    tern_backend_params bp = {0};
    bp.kv_rows = n_blocks * bs;
    bp.lbs = lbs;
    bp.n_ctx = n_ctx;
    bp.n_threads = p->n_threads;
    bp.n_layer = p->n_layer;
    bp.kv_q8 = p->cache_type_k == TERN_CACHE_Q8_0;
    bp.tp = p->tp;
    bp.verify_fast = p->verify_fast;
    bp.verbose = p->verbose;
    /* the window pool: the largest window of the layers run; each sequence holds at most window + margin rows before
     * a pass's first query and the pass's own (<= max_rows), plus a partial block at each end */
    int swa_window = 0, swa_margin = p->swa_margin > 0 ? p->swa_margin : TERN_SWA_MARGIN;
    const int n_run = p->n_layer > 0 && p->n_layer < m->n_layer ? p->n_layer : m->n_layer;
    for (int il = 0; il < n_run; il++)
        if (m->layers[il].window > swa_window) swa_window = m->layers[il].window;
    if (p->swa_margin > (1 << 24)) {
        tern_set_error("swa_margin %d is out of range", p->swa_margin);
        return NULL;
    }
    const int swa = p->swa_compact && swa_window > 0;
    int64_t n_blocks_w = 0;
#define SWA_BLOCKS(rows) /* window-pool blocks for passes of up to `rows` tokens */                                    \
    do {                                                                                                               \
        const int64_t w_seq = (((int64_t)swa_window + swa_margin + (rows) + bs - 1) >> lbs) + 2;                        \
        n_blocks_w = (int64_t)n_seq * (w_seq < per_seq ? w_seq : per_seq);                                             \
        if (n_blocks_w > n_blocks) n_blocks_w = n_blocks;                                                              \
        bp.kv_rows_w = n_blocks_w * bs;                                                                                \
    } while (0)
    tern_backend *be = NULL;
    if (dev == TERN_DEVICE_CUDA) {
        /* default chunk 2048 tokens: bench/sweeps/ubatch.md (H200, Llama-3-8B Q4_0: pp2048 23.4k tok/s at 512,
         * 32.0k at 2048; scratch 1.37 -> 2.44 GiB) */
        bp.max_rows = p->ubatch > 0 ? (p->ubatch < n_ctx ? p->ubatch : n_ctx) : (n_ctx < 2048 ? n_ctx : 2048);
        if (swa) SWA_BLOCKS(bp.max_rows);
        be = tern_backend_cuda_new(m, &bp);
        /* auto: a recipe the GPU has no kernel for yet runs on the CPU, said once on stderr */
        if (!be && p->device == TERN_DEVICE_AUTO && strstr(tern_last_error(), "no kernel for yet")) {
            fprintf(stderr, "tern: %s: running on the CPU\n", tern_last_error());
            dev = TERN_DEVICE_CPU;
        }
    }
    if (dev != TERN_DEVICE_CUDA) {
        bp.max_rows = n_ctx < TERN_MAX_CHUNK ? n_ctx : TERN_MAX_CHUNK;
        if (p->ubatch > 0 && p->ubatch < bp.max_rows) bp.max_rows = p->ubatch;
        if (swa) SWA_BLOCKS(bp.max_rows);
        be = tern_backend_cpu_new(m, &bp);
    }
    if (!be) return NULL;
    tern_engine *e = tern_xcalloc(1, sizeof *e);
    e->m = m;
    e->be = be;
    e->n_ctx = n_ctx;
    e->n_seq_max = n_seq;
    e->g = tern_graph_build(m, p->n_layer);
    e->seqs = tern_xcalloc((size_t)n_seq, sizeof *e->seqs);
    e->segs = tern_xcalloc((size_t)n_seq, sizeof *e->segs);
    e->seg_start = tern_xcalloc((size_t)n_seq, sizeof(int32_t));
    e->seg_len = tern_xcalloc((size_t)n_seq, sizeof(int32_t));
    if (tern_kv_init(&e->kv, (int)n_blocks, lbs) != 0) {
        tern_engine_free(e);
        return NULL;
    }
    if (swa) {
        e->swa = 1;
        e->swa_window = swa_window;
        e->swa_margin = swa_margin;
        if (tern_kv_init(&e->kvw, (int)n_blocks_w, lbs) != 0) {
            tern_engine_free(e);
            return NULL;
        }
    }
    if (ep->prefix_cache) e->pc = tern_pc_new((int)n_blocks, bs);
    /* with the window pool, an entry keeps its block's window rows while its sequence still held them when it was
     * keyed; a hit ends only where the rows its next query reads are kept (tern_seq_attach_prefix) */
    if (e->pc && swa) tern_pc_set_window(e->pc, &e->kvw);
    return e;
}

void tern_engine_free(tern_engine *e) {
    if (!e) return;
    for (int i = 0; i < e->n_seq_max; i++)
        if (e->seqs[i]) tern_seq_free(e->seqs[i]);
    tern_pc_free(e->pc, &e->kv);
    if (e->be) e->be->ops->free(e->be);
    tern_graph_free(e->g);
    tern_kv_free(&e->kv);
    tern_kv_free(&e->kvw);
    free(e->slot_w); free(e->bt_w);
    free(e->seqs); free(e->segs); free(e->seg_start); free(e->seg_len);
    free(e->tok); free(e->pos); free(e->slot); free(e->bt_off); free(e->bt); free(e->out); free(e->order);
    free(e->p_rk); free(e->p_small); free(e->p_small_rk); free(e->reqs); free(e->pen);
    free(e->outs);
    free(e);
}

const char *tern_engine_device(const tern_engine *e) { return e->be->name; }
int tern_engine_n_ctx(const tern_engine *e) { return e->n_ctx; }

void tern_engine_kv_usage(const tern_engine *e, int *used, int *total, int *block_size) {
    if (used) *used = tern_kv_used(&e->kv);
    if (total) *total = e->kv.n_blocks;
    if (block_size) *block_size = e->kv.bs;
}

void tern_engine_kv_stats(const tern_engine *e, tern_kv_stats *st) {
    memset(st, 0, sizeof *st);
    tern_engine_kv_usage(e, &st->blocks_used, &st->blocks_total, &st->block_size);
    if (e->pc) tern_pc_stats(e->pc, &e->kv, &st->cached_blocks, &st->cached_idle, &st->evicted);
    if (e->swa) {
        st->swa_blocks_used = tern_kv_used(&e->kvw);
        st->swa_blocks_total = e->kvw.n_blocks;
    }
}

/* ---- sequences ---- */

static tern_seq *seq_alloc(tern_engine *e) {
    for (int i = 0; i < e->n_seq_max; i++)
        if (!e->seqs[i]) {
            tern_seq *s = tern_xcalloc(1, sizeof *s);
            s->e = e;
            s->slot_idx = i;
            e->seqs[i] = s;
            return s;
        }
    tern_set_error("the engine holds %d sequences already (its n_seq_max)", e->n_seq_max);
    return NULL;
}

tern_seq *tern_seq_new(tern_engine *e) { return e ? seq_alloc(e) : NULL; }

static void table_reserve(tern_seq *s, int n) {
    if (n <= s->cap) return;
    s->cap = n > 2 * s->cap ? n : 2 * s->cap;
    s->table = realloc(s->table, sizeof(int32_t) * (size_t)s->cap);
    if (s->e->swa) s->table_w = realloc(s->table_w, sizeof(int32_t) * (size_t)s->cap);
    if (!s->table || (s->e->swa && !s->table_w)) { fprintf(stderr, "tern: out of memory\n"); abort(); }
}

/* Room for n tokens of history. */
static void hist_reserve(tern_seq *s, int n) {
    if (n <= s->hist_cap) return;
    s->hist_cap = n > 2 * s->hist_cap ? n : 2 * s->hist_cap;
    s->hist = realloc(s->hist, sizeof(int32_t) * (size_t)s->hist_cap);
    if (!s->hist) { fprintf(stderr, "tern: out of memory\n"); abort(); }
}

tern_seq *tern_seq_fork(tern_seq *src) {
    if (!src) return NULL;
    tern_seq *s = seq_alloc(src->e);
    if (!s) return NULL;
    table_reserve(s, src->n_blocks);
    for (int i = 0; i < src->n_blocks; i++) {
        s->table[i] = src->table[i];
        tern_kv_ref(&src->e->kv, src->table[i]);
    }
    s->n_blocks = src->n_blocks;
    if (src->e->swa) {
        for (int i = 0; i < src->n_blocks_w; i++) {
            s->table_w[i] = src->table_w[i];
            if (i >= src->w_lo) tern_kv_ref(&src->e->kvw, src->table_w[i]);
        }
        s->w_lo = src->w_lo;
        s->n_blocks_w = src->n_blocks_w;
    }
    s->n_past = src->n_past;
    hist_reserve(s, src->n_hist);
    if (src->n_hist) memcpy(s->hist, src->hist, sizeof(int32_t) * (size_t)src->n_hist);
    s->n_hist = src->n_hist;
    return s;
}

/* Release the blocks past the first `keep`. */
static void seq_drop_blocks(tern_seq *s, int keep) {
    for (int i = keep; i < s->n_blocks; i++) tern_kv_unref(&s->e->kv, s->table[i]);
    if (keep < s->n_blocks) s->n_blocks = keep;
    for (int i = keep > s->w_lo ? keep : s->w_lo; i < s->n_blocks_w; i++) tern_kv_unref(&s->e->kvw, s->table_w[i]);
    if (keep < s->n_blocks_w) s->n_blocks_w = keep;
    if (s->w_lo > s->n_blocks_w) s->w_lo = s->n_blocks_w;
}

/* A free window-pool block, the prefix cache's least recently used idle window block released when none is. */
static int32_t kvw_alloc(tern_engine *e) {
    int32_t b = tern_kv_alloc(&e->kvw);
    while (b < 0 && e->pc && tern_pc_evict_w(e->pc)) b = tern_kv_alloc(&e->kvw);
    return b;
}

/* The first position a query at position p reads in a windowed layer. */
static int swa_first_key(const tern_engine *e, int p) { return p - e->swa_window + 1 > 0 ? p - e->swa_window + 1 : 0; }

/* Window pool: release the blocks of s wholly before the keys of a query at p0 less the margin, then hold blocks for
 * positions [p0, p_end) (a shared block being written copied first). 0, or -1 (error set) when the pool is full or a
 * key p0 needs was released already (a failed step, or a truncate past what the pool held). */
static int seq_window_reserve(tern_seq *s, int p0, int p_end) {
    tern_engine *e = s->e;
    const int lbs = e->kvw.lbs, bs = e->kvw.bs;
    if (swa_first_key(e, p0) < p0 && (swa_first_key(e, p0) >> lbs) < s->w_lo) {
        tern_set_error("the sliding-window layers' KV pool no longer holds position %d (it keeps %d positions past the "
                       "window of %d; --swa-full keeps every row); truncate to 0 or start a new sequence",
                       swa_first_key(e, p0), e->swa_margin, e->swa_window);
        return -1;
    }
    const int lo = p0 - e->swa_window + 1 - e->swa_margin;
    int rel = lo > 0 ? lo >> lbs : 0;
    if (rel > s->n_blocks_w) rel = s->n_blocks_w;
    for (; s->w_lo < rel; s->w_lo++) {
        tern_kv_unref(&e->kvw, s->table_w[s->w_lo]);
        s->table_w[s->w_lo] = -1;
    }
    const int need = (p_end + bs - 1) >> lbs, fill = p0 & (bs - 1);
    table_reserve(s, need);
    if (p_end > p0 && fill && s->n_blocks_w > s->w_lo && s->n_blocks_w == (p0 >> lbs) + 1 &&
        e->kvw.ref[s->table_w[s->n_blocks_w - 1]] > 1) { /* copy on write */
        const int32_t old = s->table_w[s->n_blocks_w - 1], nb = kvw_alloc(e);
        if (nb < 0) goto full;
        if (e->be->ops->kv_copy(e->be, 1, (int64_t)nb << lbs, (int64_t)old << lbs, fill) != 0) {
            tern_kv_unref(&e->kvw, nb);
            return -1;
        }
        tern_kv_unref(&e->kvw, old);
        s->table_w[s->n_blocks_w - 1] = nb;
    }
    if (s->n_blocks_w < s->w_lo) s->n_blocks_w = s->w_lo;
    while (s->n_blocks_w < need) {
        const int32_t b = kvw_alloc(e);
        if (b < 0) goto full;
        s->table_w[s->n_blocks_w++] = b;
    }
    return 0;
full:
    tern_set_error("sliding-window KV pool full: %d of %d blocks in use (%d tokens a block); free sequences",
                   tern_kv_used(&e->kvw), e->kvw.n_blocks, bs);
    return -1;
}

void tern_seq_free(tern_seq *s) {
    if (!s) return;
    if (s->e->pc) /* its cached blocks most recently used, the chain's head last (evicted after its tail) */
        for (int i = s->pc_n - 1; i >= 0; i--)
            if (tern_pc_uid(s->e->pc, s->pc_idx[i]) == s->pc_uid[i]) tern_pc_touch(s->e->pc, s->pc_idx[i]);
    seq_drop_blocks(s, 0);
    s->e->seqs[s->slot_idx] = NULL;
    free(s->table);
    free(s->table_w);
    free(s->hist);
    free(s->pc_idx);
    free(s->pc_uid);
    free(s);
}

int tern_seq_n_past(const tern_seq *s) { return s->n_past; }

int tern_seq_truncate(tern_seq *s, int n_past) {
    if (n_past < 0 || n_past > s->n_past) {
        tern_set_error("cannot truncate the KV cache to %d positions (it holds %d)", n_past, s->n_past);
        return -1;
    }
    if (s->e->swa && n_past > 0 && (swa_first_key(s->e, n_past) >> s->e->kvw.lbs) < s->w_lo) {
        tern_set_error("cannot truncate the KV cache to %d positions: the sliding-window layers' pool holds positions "
                       "from %d only (the window pool keeps %d past the window of %d; --swa-full keeps every row)",
                       n_past, s->w_lo << s->e->kvw.lbs,
                       s->e->swa_margin, s->e->swa_window);
        return -1;
    }
    s->n_past = n_past;
    if (s->n_hist > n_past) s->n_hist = n_past;
    if (s->pc_n > n_past >> s->e->kv.lbs) s->pc_n = n_past >> s->e->kv.lbs;
    seq_drop_blocks(s, (n_past + s->e->kv.bs - 1) >> s->e->kv.lbs);
    return 0;
}

void tern_seq_set_sampler(tern_seq *s, tern_sampler *smp) {
    if (s) s->smp = smp;
}

/* A free block, the prefix cache's least recently used idle one evicted when none is free; -1 when none. */
static int32_t kv_alloc(tern_engine *e) {
    int32_t b = tern_kv_alloc(&e->kv);
    while (b < 0 && e->pc && tern_pc_evict(e->pc, &e->kv)) b = tern_kv_alloc(&e->kv);
    return b;
}

/* Blocks for positions [0, n_past + k) of s, a shared last block copied before it is written. 0, or -1 (error
 * set; s unchanged but for blocks the caller releases with seq_drop_blocks). */
static int seq_reserve(tern_seq *s, int k) {
    tern_engine *e = s->e;
    const int need = (s->n_past + k + e->kv.bs - 1) >> e->kv.lbs, fill = s->n_past & (e->kv.bs - 1);
    table_reserve(s, need);
    if (k > 0 && fill && s->n_blocks > 0 && e->kv.ref[s->table[s->n_blocks - 1]] > 1) { /* copy on write */
        const int32_t old = s->table[s->n_blocks - 1], nb = kv_alloc(e);
        if (nb < 0) goto full;
        if (e->be->ops->kv_copy(e->be, 0, (int64_t)nb << e->kv.lbs, (int64_t)old << e->kv.lbs, fill) != 0) {
            tern_kv_unref(&e->kv, nb);
            return -1;
        }
        tern_kv_unref(&e->kv, old);
        s->table[s->n_blocks - 1] = nb;
    }
    while (s->n_blocks < need) {
        const int32_t b = kv_alloc(e);
        if (b < 0) goto full;
        s->table[s->n_blocks++] = b;
    }
    return 0;
full:
    tern_set_error("KV cache full: %d of %d blocks in use (%d tokens a block); free sequences or raise the pool",
                   tern_kv_used(&e->kv), e->kv.n_blocks, e->kv.bs);
    return -1;
}

/* ---- the prefix cache's hooks (prefix_cache.h) ---- */

static void pc_reserve(tern_seq *s, int n) {
    if (n <= s->pc_cap) return;
    s->pc_cap = n > 2 * s->pc_cap ? n : 2 * s->pc_cap;
    s->pc_idx = realloc(s->pc_idx, sizeof(int32_t) * (size_t)s->pc_cap);
    s->pc_uid = realloc(s->pc_uid, sizeof(uint64_t) * (size_t)s->pc_cap);
    if (!s->pc_idx || !s->pc_uid) { fprintf(stderr, "tern: out of memory\n"); abort(); }
}

/* Key the blocks of s that have filled since the last call (its history known: the tokens of every position). A
 * block whose prefix is cached already (another sequence wrote the same tokens) stays the sequence's own; the chain
 * continues from the cached entry. */
static void seq_cache_blocks(tern_seq *s) {
    tern_engine *e = s->e;
    const int full = s->n_past >> e->kv.lbs;
    if (s->n_hist != s->n_past || s->pc_n >= full) return;
    pc_reserve(s, full);
    for (int i = s->pc_n; i < full; i++) {
        const uint64_t parent = i ? s->pc_uid[i - 1] : 0;
        if (i && tern_pc_uid(e->pc, s->pc_idx[i - 1]) != parent) break; /* the parent was evicted: no chain on */
        const int32_t *toks = s->hist + ((size_t)i << e->kv.lbs);
        int idx = tern_pc_lookup(e->pc, parent, toks);
        if (idx < 0) {
            if (!tern_pc_insert(e->pc, &e->kv, parent, toks, s->table[i])) break;
            idx = tern_pc_lookup(e->pc, parent, toks);
        }
        s->pc_idx[i] = idx;
        s->pc_uid[i] = tern_pc_uid(e->pc, idx);
        s->pc_n = i + 1;
        /* its window rows, while held, when the entry keys this sequence's own block (both rows of one computation) */
        if (e->swa && i >= s->w_lo && i < s->n_blocks_w && tern_pc_block(e->pc, idx) == s->table[i])
            tern_pc_set_block_w(e->pc, idx, s->table_w[i]);
    }
}

int tern_seq_attach_prefix(tern_seq *s, const int32_t *tokens, int n) {
    if (!s || s->n_past != 0 || s->n_blocks != 0 || n < 0 || (n > 0 && !tokens)) {
        tern_set_error("tern_seq_attach_prefix: needs an empty sequence and tokens");
        return -1;
    }
    tern_engine *e = s->e;
    if (!e->pc || n <= 1) return 0;
    const int max_blocks = (n - 1) >> e->kv.lbs; /* at least one token left to run */
    pc_reserve(s, max_blocks > 0 ? max_blocks : 1);
    table_reserve(s, max_blocks > 0 ? max_blocks : 1);
    int k = 0;
    for (; k < max_blocks; k++) {
        const int idx = tern_pc_lookup(e->pc, k ? s->pc_uid[k - 1] : 0, tokens + ((size_t)k << e->kv.lbs));
        if (idx < 0) break;
        s->table[k] = tern_pc_block(e->pc, idx);
        tern_kv_ref(&e->kv, s->table[k]);
        s->pc_idx[k] = idx;
        s->pc_uid[k] = tern_pc_uid(e->pc, idx);
    }
    if (e->swa) { /* a hit ends where the window rows its next query reads are kept: blocks [lo, k) all hold theirs */
        for (; k > 0; k--) {
            const int lo = swa_first_key(e, k << e->kv.lbs) >> e->kv.lbs;
            int j = lo;
            while (j < k && tern_pc_block_w(e->pc, s->pc_idx[j]) >= 0) j++;
            if (j == k) break;
            tern_kv_unref(&e->kv, s->table[k - 1]);
        }
        const int lo = k ? swa_first_key(e, k << e->kv.lbs) >> e->kv.lbs : 0;
        for (int j = 0; j < k; j++) {
            s->table_w[j] = j < lo ? -1 : tern_pc_block_w(e->pc, s->pc_idx[j]);
            if (j >= lo) tern_kv_ref(&e->kvw, s->table_w[j]);
        }
        s->w_lo = lo;
        s->n_blocks_w = k;
    }
    for (int i = k - 1; i >= 0; i--) tern_pc_touch(e->pc, s->pc_idx[i]); /* the head most recent */
    s->n_blocks = s->pc_n = k;
    s->n_past = s->n_hist = k << e->kv.lbs;
    hist_reserve(s, s->n_past);
    if (s->n_past) memcpy(s->hist, tokens, sizeof(int32_t) * (size_t)s->n_past);
    return s->n_past;
}

/* ---- batches ---- */

tern_batch *tern_batch_new(int n_max) {
    tern_batch *b = tern_xcalloc(1, sizeof *b);
    b->cap = n_max > 0 ? n_max : 512;
    b->r = tern_xmalloc(sizeof(batch_row) * (size_t)b->cap);
    return b;
}

void tern_batch_free(tern_batch *b) {
    if (!b) return;
    free(b->r);
    free(b->logits);
    free(b);
}

void tern_batch_clear(tern_batch *b) { b->n = 0; }
int tern_batch_n(const tern_batch *b) { return b->n; }

static int batch_add_row(tern_batch *b, tern_seq *s, int32_t token, int out, float *dst, const tern_sample_req *req) {
    if (b->n == b->cap) {
        b->cap *= 2;
        b->r = realloc(b->r, sizeof(batch_row) * (size_t)b->cap);
        if (!b->r) { fprintf(stderr, "tern: out of memory\n"); abort(); }
    }
    b->r[b->n] = (batch_row){token, s, out, dst, req, -1, -1, 0, 0};
    return b->n++;
}

int tern_batch_add(tern_batch *b, tern_seq *s, int32_t token, int out) {
    if (!b || !s || out < TERN_BATCH_NONE || out > TERN_BATCH_SAMPLE) {
        tern_set_error("tern_batch_add: NULL batch or sequence, or an unknown output kind %d", out);
        return -1;
    }
    return batch_add_row(b, s, token, out, NULL, NULL);
}

int32_t tern_batch_id(const tern_batch *b, int row) {
    return row >= 0 && row < b->n && (b->r[row].out == TERN_BATCH_ARGMAX || b->r[row].out == TERN_BATCH_SAMPLE)
               ? b->r[row].id
               : -1;
}

const float *tern_batch_logits(const tern_batch *b, int row) {
    if (row < 0 || row >= b->n || b->r[row].out != TERN_BATCH_LOGITS) return NULL;
    if (b->r[row].dst) return b->r[row].dst;
    return b->r[row].logit_row >= 0 ? b->logits + (size_t)b->r[row].logit_row * b->n_vocab : NULL;
}

/* ---- the step ---- */

#define OUT_SAMPLE TERN_BATCH_SAMPLE /* with batch_row.req: the context's request (tern_eval_sample) */

static void grow_i32(int32_t **p, int n) {
    *p = realloc(*p, sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (!*p) { fprintf(stderr, "tern: out of memory\n"); abort(); }
}

static void step_reserve(tern_engine *e, int n_tok, int n_bt) {
    if (n_tok > e->cap_tok) {
        e->cap_tok = n_tok;
        grow_i32(&e->tok, n_tok); grow_i32(&e->pos, n_tok); grow_i32(&e->slot, n_tok); grow_i32(&e->bt_off, n_tok);
        grow_i32(&e->slot_w, n_tok);
        grow_i32(&e->out, n_tok); grow_i32(&e->order, n_tok);
        grow_i32(&e->p_rk, n_tok); grow_i32(&e->p_small, n_tok); grow_i32(&e->p_small_rk, n_tok);
        e->outs = realloc(e->outs, sizeof(tern_out) * (size_t)n_tok);
        e->reqs = realloc(e->reqs, sizeof(tern_sample_req) * (size_t)n_tok);
        if (!e->outs || !e->reqs) { fprintf(stderr, "tern: out of memory\n"); abort(); }
    }
    if (n_bt > e->cap_bt) {
        e->cap_bt = n_bt;
        grow_i32(&e->bt, n_bt);
        grow_i32(&e->bt_w, n_bt);
    }
}

/* One pass over batch rows order[r0 .. r0 + n) (segment-ordered); the sequences' positions advance at the end of
 * the step, so a token's position is its sequence's n_past plus its rank in the sequence's step tokens. */
static int run_pass(tern_engine *e, tern_batch *b, const int32_t *rows, int n, const int32_t *rank) {
    int n_bt = 0, n_seq = 0, max_pos = 0, n_out = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || b->r[rows[i]].seq != b->r[rows[i - 1]].seq) n_bt += b->r[rows[i]].seq->n_blocks;
    step_reserve(e, e->cap_tok, n_bt);
    if (e->swa) /* the window pool's blocks of the pass's tokens, those before every window released */
        for (int i = 0, j; i < n; i = j) {
            tern_seq *s = b->r[rows[i]].seq;
            for (j = i + 1; j < n && b->r[rows[j]].seq == s; j++) {}
            if (seq_window_reserve(s, s->n_past + rank[i], s->n_past + rank[j - 1] + 1) != 0) return -1;
        }
    n_bt = 0;
    int off = 0;
    for (int i = 0; i < n; i++) {
        const batch_row *r = &b->r[rows[i]];
        const tern_seq *s = r->seq;
        if (i == 0 || s != b->r[rows[i - 1]].seq) { /* a sequence's rows are contiguous: its table once */
            off = n_bt;
            memcpy(e->bt + off, s->table, sizeof(int32_t) * (size_t)s->n_blocks);
            if (e->swa) {
                memcpy(e->bt_w + off, s->table_w, sizeof(int32_t) * (size_t)s->n_blocks_w);
                for (int k = s->n_blocks_w; k < s->n_blocks; k++) e->bt_w[off + k] = -1;
            }
            n_bt += s->n_blocks;
            n_seq++;
        }
        const int p = s->n_past + rank[i];
        e->tok[i] = r->tok;
        e->pos[i] = p;
        e->slot[i] = (s->table[p >> e->kv.lbs] << e->kv.lbs) | (p & (e->kv.bs - 1));
        if (e->swa) e->slot_w[i] = (s->table_w[p >> e->kv.lbs] << e->kv.lbs) | (p & (e->kv.bs - 1));
        e->bt_off[i] = off;
        if (p + 1 > max_pos) max_pos = p + 1;
        if (r->out != TERN_BATCH_NONE) {
            tern_out *o = &e->outs[n_out];
            e->out[n_out++] = i;
            o->id = -1;
            o->samp = r->req;
            o->logits = NULL;
            if (r->out == TERN_BATCH_ARGMAX) o->mode = TERN_OUT_ARGMAX;
            else if (r->out == OUT_SAMPLE && r->req && !r->host_sample) o->mode = TERN_OUT_SAMPLE;
            else {
                o->mode = TERN_OUT_LOGITS;
                o->logits = r->dst ? r->dst : b->logits + (size_t)r->logit_row * b->n_vocab;
            }
        }
    }
    const tern_ubatch ub = {n,      e->tok, e->pos,  e->slot, e->bt_off,    e->bt,
                            n_bt,   e->kv.lbs, n_seq, max_pos, n_out,     e->out,
                            e->outs, e->swa ? e->slot_w : NULL, e->swa ? e->bt_w : NULL};
    if (e->be->ops->exec(e->be, e->g, &ub) != 0) return -1;
    for (int o = 0; o < n_out; o++)
        if (e->outs[o].mode != TERN_OUT_LOGITS) b->r[rows[e->out[o]]].id = e->outs[o].id;
    return 0;
}

static int engine_step(tern_engine *e, tern_batch *b) {
    const int n = b->n;
    if (n <= 0) { tern_set_error("tern_engine_decode: an empty batch"); return -1; }
    /* validate, and group rows by sequence in order of first appearance */
    int n_seg = 0, n_logits = 0;
    for (int i = 0; i < n; i++) {
        const batch_row *r = &b->r[i];
        if (!r->seq || r->seq->e != e) {
            tern_set_error("batch row %d: its sequence belongs to another engine", i);
            goto invalid;
        }
        if (r->tok < 0 || r->tok >= e->m->n_vocab) {
            tern_set_error("token id %d is out of range [0, %d)", r->tok, e->m->n_vocab);
            goto invalid;
        }
        if (r->out == TERN_BATCH_SAMPLE && !r->req && !r->seq->smp) {
            tern_set_error("batch row %d asks for a sample but its sequence has no sampler (tern_seq_set_sampler)", i);
            goto invalid;
        }
        if (r->seq->step_k == 0) {
            r->seq->step_seg = n_seg;
            e->segs[n_seg++] = r->seq;
        }
        b->r[i].rank = r->seq->step_k++;
        b->r[i].host_sample = 0;
    }
    for (int s = 0; s < n_seg; s++) {
        const tern_seq *q = e->segs[s];
        if (q->n_past + q->step_k > e->n_ctx) {
            tern_set_error("context full: %d tokens in the cache + %d new exceed the context of %d", q->n_past,
                           q->step_k, e->n_ctx);
            goto invalid;
        }
    }
    step_reserve(e, n, 0);
    /* rows in segment order: order[] */
    int32_t *order = e->order;
    {
        int at = 0;
        for (int s = 0; s < n_seg; s++) {
            e->seg_start[s] = at;
            e->seg_len[s] = 0;
            at += e->segs[s]->step_k;
        }
        for (int i = 0; i < n; i++) {
            const int s = b->r[i].seq->step_seg;
            order[e->seg_start[s] + e->seg_len[s]++] = i;
        }
    }
    /* KV blocks for every sequence, all or nothing */
    int reserved = 0;
    for (; reserved < n_seg; reserved++)
        if (seq_reserve(e->segs[reserved], e->segs[reserved]->step_k) != 0) break;
    if (reserved < n_seg) {
        for (int s = 0; s <= reserved && s < n_seg; s++)
            seq_drop_blocks(e->segs[s], (e->segs[s]->n_past + e->kv.bs - 1) >> e->kv.lbs);
        goto invalid;
    }
    /* the history (the repeat penalty's) grows by the step's tokens, kept only if the step succeeds */
    for (int s = 0; s < n_seg; s++) hist_reserve(e->segs[s], e->segs[s]->n_past + e->segs[s]->step_k);
    for (int i = 0; i < n; i++) {
        tern_seq *q = b->r[i].seq;
        if (q->n_hist == q->n_past) q->hist[q->n_past + b->r[i].rank] = b->r[i].tok;
    }
    /* TERN_BATCH_SAMPLE rows: the sequence's sampler, on the device where its parameters allow (one uniform draw of
     * its RNG each, in row order), else on the host from the row's logits after the passes */
    {
        int n_pen = 0;
        for (int i = 0; i < n; i++)
            if (b->r[i].out == TERN_BATCH_SAMPLE && !b->r[i].req) n_pen += b->r[i].seq->n_past + b->r[i].rank + 1;
        if (n_pen > e->pen_cap) {
            e->pen_cap = n_pen;
            grow_i32(&e->pen, n_pen);
        }
        int at = 0, k = 0;
        for (int i = 0; i < n; i++) {
            batch_row *r = &b->r[i];
            if (r->out != TERN_BATCH_SAMPLE || r->req) continue;
            tern_seq *q = r->seq;
            const tern_sampler_params *sp = tern_sampler_get_params(q->smp);
            const int nh = q->n_past + r->rank + 1;
            if (!(e->be->device_sample && sp->temp > 0.0f && sp->top_k > 0 && sp->top_k < e->m->n_vocab &&
                  sp->top_k <= TERN_CUDA_SAMPLE_KMAX)) {
                r->host_sample = 1;
                continue;
            }
            tern_sample_req *rq = &e->reqs[k++];
            rq->pen_ids = e->pen + at;
            rq->n_pen = tern_sampler_penalty_ids(q->smp, q->hist, nh, e->pen + at);
            rq->penalty = sp->repeat_penalty;
            rq->top_p = sp->top_p;
            rq->min_p = sp->min_p;
            rq->temp = sp->temp;
            rq->top_k = sp->top_k;
            rq->u = tern_sampler_draw_uniform(q->smp);
            r->req = rq;
            at += nh;
        }
    }
    for (int i = 0; i < n; i++)
        if ((b->r[i].out == TERN_BATCH_LOGITS && !b->r[i].dst) || b->r[i].host_sample) n_logits++;
    /* logits storage of the batch's own rows */
    if (n_logits > b->logits_cap || b->n_vocab != e->m->n_vocab) {
        free(b->logits);
        b->n_vocab = e->m->n_vocab;
        b->logits = malloc(sizeof(float) * (size_t)b->n_vocab * (size_t)n_logits);
        b->logits_cap = b->logits ? n_logits : 0;
        if (!b->logits && n_logits) { tern_set_error("out of memory (logits of %d rows)", n_logits); goto failed; }
    }
    for (int i = 0, k = 0; i < n; i++) {
        b->r[i].logit_row = (b->r[i].out == TERN_BATCH_LOGITS && !b->r[i].dst) || b->r[i].host_sample ? k++ : -1;
        b->r[i].id = -1;
    }
    /* passes: runs of up to exact_rows tokens of any sequences; a longer sequence run alone, in max_rows chunks */
    {
        const int cap_small = e->be->exact_rows < e->be->max_rows ? e->be->exact_rows : e->be->max_rows;
        int32_t *rk = e->p_rk, *small = e->p_small, *small_rk = e->p_small_rk;
        int n_small = 0, rc = 0;
        for (int s = 0; s < n_seg && rc == 0; s++) {
            const int k = e->seg_len[s], *rows = order + e->seg_start[s];
            if (k <= e->be->exact_rows) {
                for (int j = 0; j < k && rc == 0; j++) {
                    small[n_small] = rows[j];
                    small_rk[n_small++] = j;
                    if (n_small == cap_small) {
                        rc = run_pass(e, b, small, n_small, small_rk);
                        n_small = 0;
                    }
                }
            } else {
                for (int j0 = 0; j0 < k && rc == 0; j0 += e->be->max_rows) {
                    const int nb = k - j0 < e->be->max_rows ? k - j0 : e->be->max_rows;
                    for (int j = 0; j < nb; j++) rk[j] = j0 + j;
                    rc = run_pass(e, b, rows + j0, nb, rk);
                }
            }
        }
        if (rc == 0 && n_small) rc = run_pass(e, b, small, n_small, small_rk);
        if (rc != 0) goto failed;
    }
    for (int i = 0; i < n; i++) { /* host draws, in row order */
        batch_row *r = &b->r[i];
        if (!r->host_sample) continue;
        r->id = tern_sampler_sample(r->seq->smp, b->logits + (size_t)r->logit_row * b->n_vocab, r->seq->hist,
                                    r->seq->n_past + r->rank + 1);
        if (r->id < 0) goto failed;
    }
    for (int i = 0; i < n; i++) /* the device requests the engine made belong to this step */
        if (b->r[i].out == TERN_BATCH_SAMPLE && b->r[i].req >= e->reqs && b->r[i].req < e->reqs + e->cap_tok) b->r[i].req = NULL;
    for (int s = 0; s < n_seg; s++) {
        tern_seq *q = e->segs[s];
        if (q->n_hist == q->n_past) q->n_hist += q->step_k;
        q->n_past += q->step_k;
        q->step_k = 0;
        if (e->pc) seq_cache_blocks(q);
        if (e->swa) seq_window_reserve(q, q->n_past, q->n_past); /* releases only: cannot fail after a pass ran */
    }
    return 0;
failed: /* positions stay; blocks past them go back */
    for (int s = 0; s < n_seg; s++)
        seq_drop_blocks(e->segs[s], (e->segs[s]->n_past + e->kv.bs - 1) >> e->kv.lbs);
invalid:
    for (int i = 0; i < n; i++) {
        if (b->r[i].seq && b->r[i].seq->e == e) b->r[i].seq->step_k = 0;
        if (b->r[i].out == TERN_BATCH_SAMPLE && b->r[i].req >= e->reqs && b->r[i].req < e->reqs + e->cap_tok) b->r[i].req = NULL;
    }
    return -1;
}

int tern_engine_decode(tern_engine *e, tern_batch *b) {
    if (!e || !b) { tern_set_error("tern_engine_decode: NULL engine or batch"); return -1; }
    return engine_step(e, b);
}

/* ---- tern_context: an engine with one sequence ---- */

struct tern_context {
    tern_engine *e;
    tern_seq *s;
    tern_batch *b;
    float *row_logits;       /* (n_vocab) for host sampling */
    int32_t *pen;            /* (pen_cap) penalty ids for device sampling */
    int pen_cap;
    tern_perf perf;
};

tern_context *tern_context_new(tern_model *m, int n_ctx, int n_threads) {
    tern_context_params p = tern_context_default_params();
    p.n_ctx = n_ctx;
    p.n_threads = n_threads;
    return tern_context_new_ex(m, &p);
}

tern_context *tern_context_new_ex(tern_model *m, const tern_context_params *p) {
    tern_engine_params ep = tern_engine_default_params();
    ep.ctx = *p;
    tern_engine *e = tern_engine_new(m, &ep);
    if (!e) return NULL;
    tern_context *c = tern_xcalloc(1, sizeof *c);
    c->e = e;
    c->s = tern_seq_new(e);
    c->b = tern_batch_new(0);
    return c;
}

void tern_context_free(tern_context *c) {
    if (!c) return;
    tern_batch_free(c->b);
    tern_engine_free(c->e); /* frees the sequence */
    free(c->row_logits);
    free(c->pen);
    free(c);
}

const char *tern_context_device(const tern_context *c) { return tern_engine_device(c->e); }
int tern_context_n_ctx(const tern_context *c) { return c->e->n_ctx; }
tern_model *tern_context_model(const tern_context *c) { return c->e->m; }
int tern_context_n_past(const tern_context *c) { return c->s->n_past; }
tern_perf tern_context_perf(const tern_context *c) { return c->perf; }
int tern_context_truncate(tern_context *c, int n_past) { return tern_seq_truncate(c->s, n_past); }

int tern_context_prepare_verify(tern_context *c, int max_rows, double *ms) {
    if (ms) *ms = 0.0;
    if (!c) { tern_set_error("tern_context_prepare_verify: NULL context"); return -1; }
    const double t0 = tern_time_s();
    const int k = c->e->be->ops->prepare(c->e->be, c->e->g, max_rows);
    if (ms) *ms = 1e3 * (tern_time_s() - t0);
    return k;
}

/* tokens[0..n) into the context's sequence with output `out` for the last row (or every row when all), LOGITS
 * rows into logits (n_vocab apart), results in ids. */
static int ctx_eval(tern_context *c, const int32_t *tokens, int n, int out, int all, float *logits,
                    const tern_sample_req *req, int32_t *ids) {
    if (n <= 0) { tern_set_error("tern_eval: no tokens"); return -1; }
    if (!tokens) { tern_set_error("tern_eval: NULL tokens"); return -1; }
    const size_t V = (size_t)c->e->m->n_vocab;
    tern_batch_clear(c->b);
    for (int i = 0; i < n; i++) {
        const int o = all || i == n - 1 ? out : TERN_BATCH_NONE;
        batch_add_row(c->b, c->s, tokens[i], o, logits && o == TERN_BATCH_LOGITS ? logits + (all ? (size_t)i * V : 0) : NULL,
                      req);
    }
    const double t0 = tern_time_s();
    if (engine_step(c->e, c->b) != 0) return -1;
    const double dt = tern_time_s() - t0;
    if (n > 1) { c->perf.t_prefill_s += dt; c->perf.n_prefill_tokens += n; }
    else { c->perf.t_decode_s += dt; c->perf.n_decode_tokens += 1; }
    if (ids) {
        if (all)
            for (int i = 0; i < n; i++) ids[i] = c->b->r[i].id;
        else ids[0] = c->b->r[n - 1].id;
    }
    return 0;
}

int tern_eval(tern_context *c, const int32_t *tokens, int n, float *logits, int all_logits) {
    return ctx_eval(c, tokens, n, logits ? TERN_BATCH_LOGITS : TERN_BATCH_NONE, all_logits && logits, logits, NULL, NULL);
}

int tern_eval_greedy(tern_context *c, const int32_t *tokens, int n, int32_t *next) {
    return ctx_eval(c, tokens, n, next ? TERN_BATCH_ARGMAX : TERN_BATCH_NONE, 0, NULL, NULL, next);
}

int tern_eval_argmax(tern_context *c, const int32_t *tokens, int n, int32_t *ids) {
    if (!ids) { tern_set_error("tern_eval_argmax: NULL output"); return -1; }
    return ctx_eval(c, tokens, n, TERN_BATCH_ARGMAX, 1, NULL, NULL, ids);
}

int tern_eval_sample(tern_context *c, const int32_t *tokens, int n, tern_sampler *s, const int32_t *history,
                     int n_hist, int32_t *next) {
    if (!s || !next) { tern_set_error("tern_eval_sample: NULL sampler or output"); return -1; }
    const tern_sampler_params *p = tern_sampler_get_params(s);
    const int nv = c->e->m->n_vocab;
    if (!(c->e->be->device_sample && p->temp > 0.0f && p->top_k > 0 && p->top_k < nv && p->top_k <= TERN_CUDA_SAMPLE_KMAX)) {
        if (!c->row_logits) c->row_logits = tern_xmalloc(sizeof(float) * (size_t)nv);
        if (ctx_eval(c, tokens, n, TERN_BATCH_LOGITS, 0, c->row_logits, NULL, NULL) != 0) return -1;
        const int32_t id = tern_sampler_sample(s, c->row_logits, history, n_hist);
        if (id < 0) return -1;
        *next = id;
        return 0;
    }
    if (n_hist > c->pen_cap) {
        free(c->pen);
        c->pen_cap = n_hist;
        c->pen = tern_xmalloc(sizeof(int32_t) * (size_t)c->pen_cap);
    }
    tern_sample_req req;
    req.pen_ids = c->pen;
    req.n_pen = c->pen ? tern_sampler_penalty_ids(s, history, n_hist, c->pen) : 0;
    req.penalty = p->repeat_penalty;
    req.top_p = p->top_p;
    req.min_p = p->min_p;
    req.temp = p->temp;
    req.top_k = p->top_k;
    if (n <= 0 || !tokens) { tern_set_error("tern_eval: no tokens"); return -1; }
    req.u = tern_sampler_draw_uniform(s);
    if (ctx_eval(c, tokens, n, OUT_SAMPLE, 0, NULL, &req, next) != 0) return -1;
    if (*next < 0) { tern_set_error("sampler: all logits are NaN"); return -1; }
    return 0;
}
