/* exec.c: the CPU backend (backend.h): the graph's ops over a ubatch, one backend_cpu.c op a node, on a thread
 * pool, with the KV cache in f16 pool rows. Its one fusion: consecutive projections of one input (q, k, v;
 * gate, up) share one quantization of that input (cpu_matmul_n, bit-identical to separate calls).
 *
 * The window pool (backend.h): a windowed layer's rows live in it when the engine made one (kv_rows_w > 0); its KV
 * store writes ub->slot_w and its attention reads through ub->bt_w.
 *
 * Every op computes each row from that row alone in a fixed order (backend_cpu.h), so any pass gives a token
 * the bits of its own one-token pass: exact_rows is unbounded and sequences may share a pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "tern.h"
#include "util.h"

typedef struct {
    tern_backend base;
    const tern_model *m;
    tern_pool *pool;
    int max_rows, n_ctx, n_layer; /* n_layer: the layers the engine's graph runs, which the KV pool holds */
    int64_t kv_rows, kv_rows_w;
    uint16_t *kc, *vc;    /* each layer's pool, (kv_rows or kv_rows_w, n_head_kv * head_dim) f16, at kv_base[layer] */
    size_t *kv_base;      /* (n_layer) elements before the layer's rows */
    uint8_t *kv_win;      /* (n_layer) 1: the layer's rows are in the window pool (kv_rows_w rows) */
    float *buf[TB_N];     /* (max_rows, width) each; TB_LOGITS grown to the output rows a pass asks for */
    int logits_rows;
    void *xq;             /* quantized activations (cpu_matmul_scratch, the largest of the graph's matmuls) */
    size_t xq_bytes;
    float *att_scratch;   /* (threads, n_ctx) */
    float *freq[2];       /* RoPE frequencies (n_rot / 2): global and sliding-window layers (cpu_rope_table) */
    float mscale[2];      /* their cos/sin factors */
} cpu_be;

static void cpu_free(tern_backend *be_) {
    cpu_be *be = (cpu_be *)be_;
    if (!be) return;
    if (be->pool) tern_pool_free(be->pool);
    free(be->kc);
    free(be->vc);
    free(be->kv_base);
    free(be->kv_win);
    for (int i = 0; i < TB_N; i++) free(be->buf[i]);
    free(be->xq);
    free(be->att_scratch);
    free(be->freq[0]);
    free(be->freq[1]);
    free(be);
}

static size_t kv_row_elems(const tern_model *m) { return (size_t)m->n_head_kv * (size_t)m->head_dim; }

static int cpu_kv_copy(tern_backend *be_, int pool, int64_t dst, int64_t src, int64_t n) {
    cpu_be *be = (cpu_be *)be_;
    const size_t row = kv_row_elems(be->m);
    for (int il = 0; il < be->n_layer; il++) {
        if (be->kv_win[il] != pool) continue;
        const size_t base = be->kv_base[il];
        memmove(be->kc + base + (size_t)dst * row, be->kc + base + (size_t)src * row, sizeof(uint16_t) * row * (size_t)n);
        memmove(be->vc + base + (size_t)dst * row, be->vc + base + (size_t)src * row, sizeof(uint16_t) * row * (size_t)n);
    }
    return 0;
}

static int cpu_prepare(tern_backend *be, const tern_graph *g, int max_rows) {
    (void)be; (void)g; (void)max_rows;
    return 0;
}

/* Rows of a buffer in this pass: the output rows for the gathered ones. */
static int rows_of(const tern_ubatch *ub, tg_buf b) { return b == TB_XO || b == TB_LOGITS ? ub->n_out : ub->n; }

static cpu_probe_fn g_probe;
static void *g_probe_ud;
void cpu_set_probe(cpu_probe_fn fn, void *ud) { g_probe = fn, g_probe_ud = ud; }

static int cpu_exec(tern_backend *be_, const tern_graph *g, const tern_ubatch *ub) {
    cpu_be *be = (cpu_be *)be_;
    const tern_model *m = be->m;
    float **B = be->buf;
    const int hd = m->head_dim, Hkv = m->n_head_kv * hd;
    if (be->kv_rows_w > 0 && (!ub->slot_w || !ub->bt_w)) {
        tern_set_error("internal: a pass without the window pool's slots and tables (backend made with one)");
        return -1;
    }
    if (ub->n > be->max_rows || ub->max_pos > be->n_ctx) {
        tern_set_error("internal: a pass of %d tokens up to position %d (backend: %d, %d)", ub->n, ub->max_pos,
                       be->max_rows, be->n_ctx);
        return -1;
    }
    if (ub->n_out > be->logits_rows) { /* grown once to the most output rows a pass asks for */
        free(B[TB_LOGITS]);
        B[TB_LOGITS] = malloc(sizeof(float) * (size_t)m->n_vocab * (size_t)ub->n_out);
        be->logits_rows = B[TB_LOGITS] ? ub->n_out : 0;
        if (!B[TB_LOGITS]) { tern_set_error("out of memory (logits of %d rows)", ub->n_out); return -1; }
    }
    int add_layer = -1, add_k = 0; /* the probe's (layer, which add) */
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *nd = &g->nodes[i];
        const int rows = rows_of(ub, nd->dst == TB_N ? nd->src0 : nd->dst), wd = nd->dst != TB_N ? g->width[nd->dst] : 0;
        float *dst = nd->dst != TB_N ? B[nd->dst] : NULL;
        switch (nd->op) {
        case TG_EMBED:
            cpu_get_rows(nd->w, ub->tok, ub->n, dst);
            if (nd->f != 1.0f)
                for (size_t k = 0; k < (size_t)ub->n * wd; k++) dst[k] *= nd->f;
            break;
        case TG_RMSNORM:
            cpu_rmsnorm(B[nd->src0], nd->vec, nd->f, rows, wd, dst);
            break;
        case TG_HEAD_NORM:
            cpu_rmsnorm(dst, nd->vec, nd->f, rows * nd->heads, wd / nd->heads, dst);
            break;
        case TG_ADD:
            cpu_add(dst, B[nd->src0], (int64_t)rows * wd);
            if (g_probe) {
                add_k = nd->layer == add_layer ? add_k + 1 : 0;
                add_layer = nd->layer;
                g_probe(g_probe_ud, nd->layer, add_k, ub->pos, dst, rows, wd);
            }
            break;
        case TG_MATMUL: { /* this node and the next ones reading the same input: one quantization of it */
            int k = 1;
            while (i + k < g->n_nodes && k < 3 && g->nodes[i + k].op == TG_MATMUL && g->nodes[i + k].src0 == nd->src0 &&
                   g->nodes[i + k].w->n_in == nd->w->n_in)
                k++;
            const tern_weight *ws[3];
            float *ys[3];
            for (int j = 0; j < k; j++) ws[j] = g->nodes[i + j].w, ys[j] = B[g->nodes[i + j].dst];
            cpu_matmul_n(be->pool, k, ws, B[nd->src0], rows, ys, be->xq);
            for (int j = 0; j < k; j++) {
                const tg_node *nj = &g->nodes[i + j];
                if (nj->vec)
                    for (int t = 0; t < rows; t++) cpu_add(B[nj->dst] + (size_t)t * g->width[nj->dst], nj->vec, g->width[nj->dst]);
            }
            i += k - 1;
            break;
        }
        case TG_ROPE:
            cpu_rope_ms(dst, rows, nd->heads, hd, m->n_rot, ub->pos, be->freq[nd->table], nd->rope == TERN_ROPE_NEOX,
                        be->mscale[nd->table]);
            break;
        case TG_KV_STORE: {
            float *k = B[nd->src0], *v = B[nd->src1];
            if (cpu_kv_q8_reference()) { /* the Q8_0 cache's values (a test arm; Hkv is a multiple of 32) */
                cpu_round_q8_0(k, (int64_t)ub->n * Hkv);
                cpu_round_q8_0(v, (int64_t)ub->n * Hkv);
            }
            const size_t base = be->kv_base[nd->layer];
            const int32_t *slot = be->kv_win[nd->layer] ? ub->slot_w : ub->slot;
            for (int t = 0; t < ub->n; t++) {
                cpu_f32_to_f16(k + (size_t)t * Hkv, be->kc + base + (size_t)slot[t] * Hkv, Hkv);
                cpu_f32_to_f16(v + (size_t)t * Hkv, be->vc + base + (size_t)slot[t] * Hkv, Hkv);
            }
            break;
        }
        case TG_ATTN: {
            const size_t base = be->kv_base[nd->layer];
            cpu_attention_paged(be->pool, B[nd->src0], be->kc + base, be->vc + base, ub->n, ub->pos,
                                be->kv_win[nd->layer] ? ub->bt_w : ub->bt, ub->bt_off,
                                ub->lbs, nd->window, m->n_head, m->n_head_kv, hd, nd->f, dst, be->att_scratch, be->n_ctx);
            break;
        }
        case TG_GLU:
            if (dst != B[nd->src0]) memcpy(dst, B[nd->src0], sizeof(float) * (size_t)rows * wd);
            if (nd->act == TERN_ACT_SILU) cpu_swiglu(dst, B[nd->src1], (int64_t)rows * wd);
            else cpu_geglu(dst, B[nd->src1], (int64_t)rows * wd);
            break;
        case TG_GATHER:
            for (int o = 0; o < ub->n_out; o++)
                memcpy(dst + (size_t)o * wd, B[nd->src0] + (size_t)ub->out[o] * wd, sizeof(float) * (size_t)wd);
            break;
        case TG_SOFTCAP:
            for (size_t k = 0; k < (size_t)rows * wd; k++) dst[k] = nd->f * tanhf(dst[k] / nd->f);
            break;
        case TG_QTEMP:
            for (int t = 0; t < rows; t++) {
                const float s = cpu_attn_temp(ub->pos[t], nd->f, nd->window);
                for (int k = 0; k < wd; k++) dst[(size_t)t * wd + k] *= s;
            }
            break;
        }
    }
    const int V = m->n_vocab;
    for (int o = 0; o < ub->n_out; o++) {
        tern_out *out = &ub->outs[o];
        const float *lg = B[TB_LOGITS] + (size_t)o * V;
        if (out->mode == TERN_OUT_LOGITS) memcpy(out->logits, lg, sizeof(float) * (size_t)V);
        else if (out->mode == TERN_OUT_ARGMAX) out->id = tern_argmax(lg, V);
        else { tern_set_error("internal: the CPU backend does not sample (the engine samples its logits)"); return -1; }
    }
    return 0;
}

/* backend_cpu.h */
float cpu_rope_table(const tern_model *m, int n_ctx, int table, float *freq) {
    /* LongRoPE: the long factors when this context runs past the original one (llama.cpp compares its per-sequence
     * context, padded to 256; here the engine's) */
    const float *fac = m->rope_long ? (n_ctx > m->rope_yarn_ctx ? m->rope_long : m->rope_short) : m->rope_factors;
    if (!table && m->rope_yarn > 0)
        cpu_rope_freqs_yarn(freq, m->n_rot, m->rope_base, m->rope_yarn, m->rope_yarn_ctx, m->rope_yarn_beta_fast,
                            m->rope_yarn_beta_slow, fac);
    else
        cpu_rope_freqs(freq, m->n_rot, table ? m->rope_base_local : m->rope_base, table ? 1.0 : m->rope_scale,
                       table ? NULL : fac);
    return table ? 1.0f : m->rope_mscale;
}

static const tern_backend_ops CPU_OPS = {cpu_exec, cpu_kv_copy, cpu_prepare, cpu_free};

tern_backend *tern_backend_cpu_new(const tern_model *m, const tern_backend_params *p) {
    if (m->gen_rows) {
        tern_set_error("an in-memory synthetic model runs on --device cuda only (tern synth writes a file for the CPU)");
        return NULL;
    }
    if (p->kv_q8) {
        tern_set_error("-ctk/-ctv q8_0 (--cache-type-k/v) needs the CUDA backend (the CPU KV cache is f16)");
        return NULL;
    }
    if (p->verify_fast) {
        tern_set_error("--verify fast needs the CUDA backend (the CPU verify is always exact)");
        return NULL;
    }
    if (p->tp > 1) {
        tern_set_error("--tp %d runs on CUDA GPUs only (this context is on the CPU)", p->tp);
        return NULL;
    }
    cpu_be *be = tern_xcalloc(1, sizeof *be);
    be->base = (tern_backend){&CPU_OPS, "cpu", p->max_rows, 1 << 30, 0};
    be->m = m;
    be->max_rows = p->max_rows;
    be->n_ctx = p->n_ctx;
    be->kv_rows = p->kv_rows;
    be->n_layer = p->n_layer > 0 && p->n_layer < m->n_layer ? p->n_layer : m->n_layer;
    /* each layer's rows: the window pool's for a windowed layer when there is one (kv_rows_w > 0) */
    be->kv_rows_w = p->kv_rows_w;
    be->kv_base = tern_xmalloc(sizeof(size_t) * (size_t)be->n_layer);
    be->kv_win = tern_xmalloc((size_t)be->n_layer);
    size_t kv_elems = 0;
    for (int il = 0; il < be->n_layer; il++) {
        be->kv_win[il] = p->kv_rows_w > 0 && m->layers[il].window > 0;
        be->kv_base[il] = kv_elems;
        kv_elems += (size_t)(be->kv_win[il] ? p->kv_rows_w : p->kv_rows) * kv_row_elems(m);
    }
    be->kc = calloc(kv_elems, sizeof(uint16_t));
    be->vc = calloc(kv_elems, sizeof(uint16_t));
    if (!be->kc || !be->vc) {
        tern_set_error("cannot allocate the KV cache: %lld rows (%lld in the window pool) need %.1f MiB",
                       (long long)p->kv_rows, (long long)p->kv_rows_w,
                       2.0 * sizeof(uint16_t) * kv_elems / 1048576.0);
        cpu_free(&be->base);
        return NULL;
    }
    tern_graph *g = tern_graph_build(m, p->n_layer);
    for (int b = 0; b < TB_N; b++)
        if (b != TB_LOGITS) be->buf[b] = tern_xmalloc(sizeof(float) * (size_t)p->max_rows * (size_t)g->width[b]);
    size_t xq = 0; /* cpu_matmul_n may hold one quantized copy per weight of a group (q/k/v of mixed types) */
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == TG_MATMUL) {
            const size_t s = cpu_matmul_scratch(g->nodes[i].w->type, g->nodes[i].w->n_in, p->max_rows);
            if (s > xq) xq = s;
        }
    tern_graph_free(g);
    be->xq = tern_xmalloc(3 * xq + 64);
    for (int t = 0; t < 2; t++) { /* the global and the sliding-window layers' tables (cpu_rope_table) */
        be->freq[t] = tern_xmalloc(sizeof(float) * (size_t)(m->n_rot / 2 + 1));
        be->mscale[t] = cpu_rope_table(m, p->n_ctx, t, be->freq[t]);
    }
    be->pool = tern_pool_new(p->n_threads > 0 ? p->n_threads : tern_n_cores());
    be->att_scratch = tern_xmalloc(sizeof(float) * (size_t)tern_pool_size(be->pool) * (size_t)p->n_ctx);
    return &be->base;
}
