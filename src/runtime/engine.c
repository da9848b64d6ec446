/* forward.c: the llama forward pass as a sequence of backend ops, for a chunk of tokens (prefill) or
 * one token (decode), over an f16 KV cache. Ops live in backend_cpu.c; no kernel code here.
 *
 * Per layer (Touvron et al. 2023, "LLaMA"):
 *   h = x + Wo · attn(rope(Wq·rmsnorm(x)), rope(Wk·rmsnorm(x)), Wv·rmsnorm(x))
 *   x = h + Wdown · (silu(Wgate·rmsnorm(h)) * Wup·rmsnorm(h))
 * then logits = Wout · rmsnorm(x).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "model.h"
#include "sampler.h"
#include "tern.h"
#include "util.h"

#define TERN_MAX_CHUNK 256 /* tokens per prefill chunk: bounds the activation scratch */

struct tern_context {
    tern_model *m;
    tern_cuda *cu;           /* non-NULL: the context runs on the GPU (backend_cuda.c); the fields below stay empty */
    float *greedy_logits;    /* (n_vocab) for tern_eval_greedy on the CPU, allocated on first use */
    float *rows_logits;      /* (rows_cap, n_vocab) for tern_eval_argmax on the CPU, grown on demand */
    int rows_cap;
    int32_t *pen;            /* (pen_cap) penalty ids for tern_eval_sample on CUDA, grown on demand */
    int pen_cap;
    tern_pool *pool;
    int n_ctx, n_past, chunk;
    int n_layer;             /* layers run (tern_context_params.n_layer): m->n_layer unless a drafter */
    uint16_t *kc, *vc;       /* (n_layer, n_ctx, n_head_kv*head_dim) f16 */
    /* scratch for one chunk of up to `chunk` tokens */
    float *x, *xn;           /* (chunk, n_embd) */
    float *q, *att;          /* (chunk, n_head*head_dim) */
    float *k, *v;            /* (chunk, n_head_kv*head_dim) */
    float *g, *u;            /* (chunk, n_ff) */
    float *tmp;              /* (chunk, n_embd) */
    float *att_scratch;      /* (n_threads, n_ctx) */
    void *xq;                /* quantized activations, max over the weights */
    float *rope_freq;        /* (n_rot/2) */
    int32_t *pos;            /* (chunk) */
    tern_perf perf;
};

static size_t max_scratch(const tern_model *m, int chunk) {
    size_t s = 0;
    const tern_layer *l = &m->layers[0];
    for (int i = 0; i < m->n_layer; i++) {
        l = &m->layers[i];
        const tern_weight *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (size_t j = 0; j < sizeof ws / sizeof ws[0]; j++) {
            size_t b = cpu_matmul_scratch(ws[j]->type, ws[j]->n_in, chunk);
            if (b > s) s = b;
        }
    }
    size_t b = cpu_matmul_scratch(m->output.type, m->output.n_in, chunk);
    /* cpu_matmul_n may hold one quantized copy per weight of a group (q/k/v of mixed types) */
    return 3 * (b > s ? b : s);
}

tern_context_params tern_context_default_params(void) {
    tern_context_params p = {0, 0, TERN_DEVICE_AUTO, 0, 0, 0, 1, 0, TERN_CACHE_F16, TERN_CACHE_F16};
    return p;
}

const char *tern_cuda_name(void) { return tern_cuda_device_name(); }

const char *tern_context_device(const tern_context *c) { return c->cu ? "cuda" : "cpu"; }

tern_context *tern_context_new(tern_model *m, int n_ctx, int n_threads) {
    tern_context_params p = tern_context_default_params();
    p.n_ctx = n_ctx;
    p.n_threads = n_threads;
    return tern_context_new_ex(m, &p);
}

tern_context *tern_context_new_ex(tern_model *m, const tern_context_params *p) {
    int n_ctx = p->n_ctx, n_threads = p->n_threads;
    if (n_ctx <= 0) n_ctx = m->n_ctx_train < 4096 ? m->n_ctx_train : 4096;
    if (n_threads <= 0) n_threads = tern_n_cores();
    const int nl = p->n_layer > 0 && p->n_layer < m->n_layer ? p->n_layer : m->n_layer;
    tern_device dev = p->device;
    if (dev == TERN_DEVICE_AUTO) {
        const char *e = getenv("TERN_DEVICE");
        if (e && *e) {
            if (!strcmp(e, "cpu")) dev = TERN_DEVICE_CPU;
            else if (!strcmp(e, "cuda")) dev = TERN_DEVICE_CUDA;
            else if (!strcmp(e, "auto")) dev = tern_cuda_available() ? TERN_DEVICE_CUDA : TERN_DEVICE_CPU;
            else { tern_set_error("TERN_DEVICE=%s: expected cpu, cuda or auto", e); return NULL; }
        } else {
            dev = tern_cuda_available() ? TERN_DEVICE_CUDA : TERN_DEVICE_CPU;
        }
    }
    if ((p->cache_type_k != TERN_CACHE_F16 && p->cache_type_k != TERN_CACHE_Q8_0) ||
        (p->cache_type_v != TERN_CACHE_F16 && p->cache_type_v != TERN_CACHE_Q8_0)) {
        tern_set_error("unknown KV cache type (expected f16 or q8_0)");
        return NULL;
    }
    const int kv_q8 = p->cache_type_k == TERN_CACHE_Q8_0 || p->cache_type_v == TERN_CACHE_Q8_0;
    if (kv_q8 && dev != TERN_DEVICE_CUDA) {
        tern_set_error("-ctk/-ctv q8_0 (--cache-type-k/v) needs the CUDA backend (the CPU KV cache is f16)");
        return NULL;
    }
    if (p->verify_fast && dev != TERN_DEVICE_CUDA) {
        tern_set_error("--verify fast needs the CUDA backend (the CPU verify is always exact)");
        return NULL;
    }
    if (p->cache_type_k != p->cache_type_v) {
        tern_set_error("-ctk and -ctv (--cache-type-k/v) must name the same type (give both: -ctk q8_0 -ctv q8_0)");
        return NULL;
    }
    if (dev == TERN_DEVICE_CUDA) {
        /* default chunk 2048 tokens: bench/sweeps/ubatch.md (H200, Llama-3-8B Q4_0: pp2048 23.4k tok/s at 512,
         * 32.0k at 2048; scratch 1.37 -> 2.44 GiB) */
        const int ub = p->ubatch > 0 ? (p->ubatch < n_ctx ? p->ubatch : n_ctx) : (n_ctx < 2048 ? n_ctx : 2048);
        tern_cuda *cu = tern_cuda_new(m, n_ctx, ub, p->verbose, p->tp > 1 ? p->tp : 1, kv_q8);
        if (!cu) return NULL;
        tern_cuda_set_layers(cu, nl);
        tern_cuda_set_verify_fast(cu, p->verify_fast);
        tern_context *c = calloc(1, sizeof *c);
        if (!c) { tern_cuda_free(cu); tern_set_error("out of memory"); return NULL; }
        c->m = m;
        c->cu = cu;
        c->n_layer = nl;
        c->n_ctx = n_ctx;
        c->chunk = ub;
        return c;
    }
    if (p->tp > 1) {
        tern_set_error("--tp %d runs on CUDA GPUs only (this context is on the CPU)", p->tp);
        return NULL;
    }
    if (m->gen_rows) {
        tern_set_error("an in-memory synthetic model runs on --device cuda only (tern synth writes a file for the CPU)");
        return NULL;
    }
    const size_t kv_row = (size_t)m->n_head_kv * m->head_dim;
    const size_t kv_bytes = 2 * sizeof(uint16_t) * (size_t)m->n_layer * (size_t)n_ctx * kv_row;
    tern_context *c = calloc(1, sizeof *c);
    if (!c) { tern_set_error("out of memory"); return NULL; }
    c->m = m;
    c->n_layer = nl;
    c->n_ctx = n_ctx;
    c->chunk = n_ctx < TERN_MAX_CHUNK ? n_ctx : TERN_MAX_CHUNK;
    if (p->ubatch > 0 && p->ubatch < c->chunk) c->chunk = p->ubatch;
    c->kc = malloc(kv_bytes / 2);
    c->vc = malloc(kv_bytes / 2);
    if (!c->kc || !c->vc) {
        tern_set_error("cannot allocate the KV cache: %d positions need %.1f MiB", n_ctx, kv_bytes / 1048576.0);
        tern_context_free(c);
        return NULL;
    }
    const int B = c->chunk, E = m->n_embd, Hq = m->n_head * m->head_dim, Hkv = (int)kv_row;
    c->x = tern_xmalloc(sizeof(float) * B * E);
    c->xn = tern_xmalloc(sizeof(float) * B * E);
    c->tmp = tern_xmalloc(sizeof(float) * B * E);
    c->q = tern_xmalloc(sizeof(float) * B * Hq);
    c->att = tern_xmalloc(sizeof(float) * B * Hq);
    c->k = tern_xmalloc(sizeof(float) * B * Hkv);
    c->v = tern_xmalloc(sizeof(float) * B * Hkv);
    c->g = tern_xmalloc(sizeof(float) * B * (size_t)m->n_ff);
    c->u = tern_xmalloc(sizeof(float) * B * (size_t)m->n_ff);
    c->xq = tern_xmalloc(max_scratch(m, B));
    c->pos = tern_xmalloc(sizeof(int32_t) * B);
    c->rope_freq = tern_xmalloc(sizeof(float) * (size_t)(m->n_rot / 2 + 1));
    cpu_rope_freqs(c->rope_freq, m->n_rot, m->rope_base, m->rope_scale, m->rope_factors);
    c->pool = tern_pool_new(n_threads);
    c->att_scratch = tern_xmalloc(sizeof(float) * (size_t)tern_pool_size(c->pool) * (size_t)n_ctx);
    return c;
}

void tern_context_free(tern_context *c) {
    if (!c) return;
    if (c->cu) tern_cuda_free(c->cu);
    free(c->greedy_logits);
    free(c->rows_logits);
    free(c->pen);
    if (c->pool) tern_pool_free(c->pool);
    free(c->kc); free(c->vc);
    free(c->x); free(c->xn); free(c->tmp); free(c->q); free(c->att); free(c->k); free(c->v);
    free(c->g); free(c->u); free(c->xq); free(c->pos); free(c->rope_freq); free(c->att_scratch);
    free(c);
}

int tern_context_n_ctx(const tern_context *c) { return c->n_ctx; }
tern_model *tern_context_model(const tern_context *c) { return c->m; }
int tern_context_n_past(const tern_context *c) { return c->n_past; }
tern_perf tern_context_perf(const tern_context *c) { return c->perf; }

int tern_context_truncate(tern_context *c, int n_past) {
    if (n_past < 0 || n_past > c->n_past) {
        tern_set_error("cannot truncate the KV cache to %d positions (it holds %d)", n_past, c->n_past);
        return -1;
    }
    c->n_past = n_past;
    return 0;
}

static void add_bias(float *y, const float *b, int n, int dim) {
    if (!b) return;
    for (int t = 0; t < n; t++) cpu_add(y + (size_t)t * dim, b, dim);
}

/* One chunk of n <= c->chunk tokens at positions n_past.. ; logits for the last row or all rows. */
static void forward_chunk(tern_context *c, const int32_t *tokens, int n, float *logits, int all_logits) {
    const tern_model *m = c->m;
    const int E = m->n_embd, hd = m->head_dim, Hq = m->n_head * hd, Hkv = m->n_head_kv * hd;
    const int pos0 = c->n_past;
    tern_pool *p = c->pool;
    for (int t = 0; t < n; t++) c->pos[t] = pos0 + t;

    cpu_get_rows(&m->tok_embd, tokens, n, c->x);
    for (int il = 0; il < c->n_layer; il++) {
        const tern_layer *l = &m->layers[il];
        uint16_t *kc = c->kc + (size_t)il * c->n_ctx * Hkv, *vc = c->vc + (size_t)il * c->n_ctx * Hkv;
        cpu_rmsnorm(c->x, l->attn_norm, m->rms_eps, n, E, c->xn);
        const tern_weight *wqkv[3] = {&l->wq, &l->wk, &l->wv};
        float *yqkv[3] = {c->q, c->k, c->v};
        cpu_matmul_n(p, 3, wqkv, c->xn, n, yqkv, c->xq);
        add_bias(c->q, l->bq, n, Hq);
        add_bias(c->k, l->bk, n, Hkv);
        add_bias(c->v, l->bv, n, Hkv);
        cpu_rope(c->q, n, m->n_head, hd, m->n_rot, c->pos, c->rope_freq);
        cpu_rope(c->k, n, m->n_head_kv, hd, m->n_rot, c->pos, c->rope_freq);
        if (cpu_kv_q8_reference()) { /* the Q8_0 cache's values (a test arm; Hkv is a multiple of 32) */
            cpu_round_q8_0(c->k, (int64_t)n * Hkv);
            cpu_round_q8_0(c->v, (int64_t)n * Hkv);
        }
        cpu_f32_to_f16(c->k, kc + (size_t)pos0 * Hkv, (int64_t)n * Hkv);
        cpu_f32_to_f16(c->v, vc + (size_t)pos0 * Hkv, (int64_t)n * Hkv);
        cpu_attention(p, c->q, kc, vc, n, pos0, m->n_head, m->n_head_kv, hd, 1.0f / sqrtf((float)hd), c->att,
                      c->att_scratch);
        cpu_matmul(p, &l->wo, c->att, n, c->tmp, c->xq);
        add_bias(c->tmp, l->bo, n, E);
        cpu_add(c->x, c->tmp, (int64_t)n * E);

        cpu_rmsnorm(c->x, l->ffn_norm, m->rms_eps, n, E, c->xn);
        const tern_weight *wgu[2] = {&l->w_gate, &l->w_up};
        float *ygu[2] = {c->g, c->u};
        cpu_matmul_n(p, 2, wgu, c->xn, n, ygu, c->xq);
        cpu_swiglu(c->g, c->u, (int64_t)n * m->n_ff);
        cpu_matmul(p, &l->w_down, c->g, n, c->tmp, c->xq);
        cpu_add(c->x, c->tmp, (int64_t)n * E);
    }
    if (!logits) return;
    if (all_logits) {
        cpu_rmsnorm(c->x, m->output_norm, m->rms_eps, n, E, c->xn);
        cpu_matmul(p, &m->output, c->xn, n, logits, c->xq);
    } else {
        cpu_rmsnorm(c->x + (size_t)(n - 1) * E, m->output_norm, m->rms_eps, 1, E, c->xn);
        cpu_matmul(p, &m->output, c->xn, 1, logits, c->xq);
    }
}

/* The checks every eval entry makes: tokens[0..n) fit the context and are valid ids. 0 or -1. */
static int check_tokens(const tern_context *c, const int32_t *tokens, int n) {
    if (n <= 0) { tern_set_error("tern_eval: no tokens"); return -1; }
    if (n > c->n_ctx - c->n_past) {
        tern_set_error("context full: %d tokens in the cache + %d new exceed the context of %d", c->n_past, n, c->n_ctx);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->m->n_vocab) {
            tern_set_error("token id %d is out of range [0, %d)", tokens[i], c->m->n_vocab);
            return -1;
        }
    return 0;
}

static int eval(tern_context *c, const int32_t *tokens, int n, float *logits, int all_logits, int32_t *next) {
    if (check_tokens(c, tokens, n) != 0) return -1;
    double t0 = tern_time_s();
    for (int i = 0; i < n; i += c->chunk) {
        int nb = n - i < c->chunk ? n - i : c->chunk;
        int last = i + nb == n;
        float *lg = NULL;
        if (logits && all_logits) lg = logits + (size_t)i * c->m->n_vocab;
        else if (logits && last) lg = logits;
        if (c->cu) {
            if (tern_cuda_eval(c->cu, tokens + i, nb, c->n_past, lg, all_logits, last ? next : NULL) != 0) return -1;
        } else {
            if (next && last && !lg) {
                if (!c->greedy_logits) c->greedy_logits = tern_xmalloc(sizeof(float) * (size_t)c->m->n_vocab);
                lg = c->greedy_logits;
            }
            forward_chunk(c, tokens + i, nb, lg, all_logits && !(next && !logits));
            if (next && last) *next = tern_argmax(lg + (all_logits && logits ? (size_t)(nb - 1) * c->m->n_vocab : 0), c->m->n_vocab);
        }
        c->n_past += nb;
    }
    double dt = tern_time_s() - t0;
    if (n > 1) { c->perf.t_prefill_s += dt; c->perf.n_prefill_tokens += n; }
    else { c->perf.t_decode_s += dt; c->perf.n_decode_tokens += 1; }
    return 0;
}

int tern_eval(tern_context *c, const int32_t *tokens, int n, float *logits, int all_logits) {
    return eval(c, tokens, n, logits, all_logits, NULL);
}

int tern_eval_greedy(tern_context *c, const int32_t *tokens, int n, int32_t *next) {
    return eval(c, tokens, n, NULL, 0, next);
}

int tern_eval_sample(tern_context *c, const int32_t *tokens, int n, tern_sampler *s, const int32_t *history,
                     int n_hist, int32_t *next) {
    if (!s || !next) { tern_set_error("tern_eval_sample: NULL sampler or output"); return -1; }
    const tern_sampler_params *p = tern_sampler_get_params(s);
    const int nv = c->m->n_vocab;
    if (!(c->cu && p->temp > 0.0f && p->top_k > 0 && p->top_k < nv && p->top_k <= TERN_CUDA_SAMPLE_KMAX)) {
        if (!c->greedy_logits) c->greedy_logits = tern_xmalloc(sizeof(float) * (size_t)nv);
        if (eval(c, tokens, n, c->greedy_logits, 0, NULL) != 0) return -1;
        const int32_t id = tern_sampler_sample(s, c->greedy_logits, history, n_hist);
        if (id < 0) return -1;
        *next = id;
        return 0;
    }
    if (n <= 0) { tern_set_error("tern_eval: no tokens"); return -1; }
    /* every chunk but the last through eval; the last one samples on the device */
    const int rest = (n - 1) % c->chunk + 1, head = n - rest;
    if (head > 0 && eval(c, tokens, head, NULL, 0, NULL) != 0) return -1;
    if (check_tokens(c, tokens + head, rest) != 0) return -1;
    if (n_hist > c->pen_cap) {
        free(c->pen);
        c->pen_cap = n_hist;
        c->pen = tern_xmalloc(sizeof(int32_t) * (size_t)c->pen_cap);
    }
    tern_cuda_sampling sp;
    sp.pen_ids = c->pen;
    sp.n_pen = c->pen ? tern_sampler_penalty_ids(s, history, n_hist, c->pen) : 0;
    sp.penalty = p->repeat_penalty;
    sp.top_p = p->top_p;
    sp.min_p = p->min_p;
    sp.temp = p->temp;
    sp.top_k = p->top_k;
    sp.u = tern_sampler_draw_uniform(s);
    const double t0 = tern_time_s();
    const int rc = tern_cuda_eval_sample(c->cu, tokens + head, rest, c->n_past, &sp, next);
    if (rc != 0) return -1;
    c->n_past += rest;
    const double dt = tern_time_s() - t0;
    if (rest > 1) { c->perf.t_prefill_s += dt; c->perf.n_prefill_tokens += rest; }
    else { c->perf.t_decode_s += dt; c->perf.n_decode_tokens += 1; }
    return 0;
}

int tern_eval_argmax(tern_context *c, const int32_t *tokens, int n, int32_t *ids) {
    if (!ids) { tern_set_error("tern_eval_argmax: NULL output"); return -1; }
    const int nv = c->m->n_vocab;
    if (!c->cu) {
        if (n > c->rows_cap) { /* grown once to the largest batch (a speculative pass: <= 16 rows) */
            free(c->rows_logits);
            c->rows_cap = n;
            c->rows_logits = malloc(sizeof(float) * (size_t)nv * (size_t)n);
            if (!c->rows_logits) { c->rows_cap = 0; tern_set_error("out of memory"); return -1; }
        }
        float *lg = c->rows_logits;
        const int rc = eval(c, tokens, n, lg, 1, NULL);
        if (rc == 0)
            for (int i = 0; i < n; i++) ids[i] = tern_argmax(lg + (size_t)i * nv, nv);
        return rc;
    }
    if (check_tokens(c, tokens, n) != 0) return -1;
    const double t0 = tern_time_s();
    for (int i = 0; i < n; i += c->chunk) {
        const int nb = n - i < c->chunk ? n - i : c->chunk;
        if (tern_cuda_eval_argmax(c->cu, tokens + i, nb, c->n_past, ids + i) != 0) return -1;
        c->n_past += nb;
    }
    const double dt = tern_time_s() - t0;
    if (n > 1) { c->perf.t_prefill_s += dt; c->perf.n_prefill_tokens += n; }
    else { c->perf.t_decode_s += dt; c->perf.n_decode_tokens += 1; }
    return 0;
}

int tern_context_prepare_verify(tern_context *c, int max_rows, double *ms) {
    if (ms) *ms = 0.0;
    if (!c) { tern_set_error("tern_context_prepare_verify: NULL context"); return -1; }
    return c->cu ? tern_cuda_prepare_verify(c->cu, max_rows, ms) : 0;
}

int tern_cache_type_parse(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "f16")) return TERN_CACHE_F16;
    if (!strcmp(s, "q8_0")) return TERN_CACHE_Q8_0;
    return -1;
}
