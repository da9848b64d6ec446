/* graph.c: the forward pass as a list of ops, read off the recipe (graph.h). Per layer, pre-norm
 * (Touvron et al. 2023, "LLaMA"; Gemma's extra post-norms where the recipe has them):
 *   h = x + [post_norm] Wo · attn([temp] rope([qk_norm] Wq·rmsnorm(x)), rope([qk_norm] Wk·rmsnorm(x)), Wv·rmsnorm(x))
 *   x = h + [post_norm] Wdown · (act(Wgate·rmsnorm(h)) * Wup·rmsnorm(h))
 * then logits = [softcap] Wout · rmsnorm(x) for the rows whose logits are wanted. */
#include <stdio.h>
#include <stdlib.h>

#include "graph.h"
#include "util.h"

typedef struct {
    tern_graph *g;
    int cap;
} builder;

static tg_node *emit(builder *b, tg_op op, tg_buf dst, tg_buf src0, int layer) {
    if (b->g->n_nodes == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->g->nodes = realloc(b->g->nodes, sizeof(tg_node) * (size_t)b->cap);
        if (!b->g->nodes) { fprintf(stderr, "tern: out of memory\n"); abort(); }
    }
    tg_node *n = &b->g->nodes[b->g->n_nodes++];
    *n = (tg_node){op, dst, src0, TB_N, layer, TW_N, NULL, NULL, 0.0f, 0, TERN_ROPE_NORM, 0, 0, TERN_ACT_SILU};
    return n;
}

static void norm(builder *b, tg_buf dst, tg_buf src, const float *w, float eps, int layer) {
    tg_node *n = emit(b, TG_RMSNORM, dst, src, layer);
    n->vec = w;
    n->f = eps;
}

static void matmul(builder *b, tg_buf dst, tg_buf src, const tern_weight *w, const float *bias, tg_role role, int layer) {
    tg_node *n = emit(b, TG_MATMUL, dst, src, layer);
    n->w = w;
    n->vec = bias;
    n->role = role;
}

tern_graph *tern_graph_build(const tern_model *m, int n_layer) {
    builder b = {tern_xcalloc(1, sizeof(tern_graph)), 0};
    tern_graph *g = b.g;
    const int nl = n_layer > 0 && n_layer < m->n_layer ? n_layer : m->n_layer, hd = m->head_dim;
    g->n_layer = nl;
    const int w[TB_N] = {m->n_embd, m->n_embd, m->n_head * hd, m->n_head_kv * hd, m->n_head_kv * hd, m->n_head * hd,
                         m->n_embd, m->n_ff, m->n_ff, m->n_embd, m->n_vocab};
    for (int i = 0; i < TB_N; i++) g->width[i] = w[i];
    const tern_recipe *r = m->recipe;
    const float eps = m->rms_eps;

    emit(&b, TG_EMBED, TB_X, TB_N, -1)->w = &m->tok_embd;
    g->nodes[0].f = m->embd_scale;
    for (int il = 0; il < nl; il++) {
        const tern_layer *l = &m->layers[il];
        norm(&b, TB_XN, TB_X, l->attn_norm, eps, il);
        matmul(&b, TB_Q, TB_XN, &l->wq, l->bq, TW_Q, il);
        matmul(&b, TB_K, TB_XN, &l->wk, l->bk, TW_K, il);
        matmul(&b, TB_V, TB_XN, &l->wv, l->bv, TW_V, il);
        if (l->q_norm) {
            tg_node *n = emit(&b, TG_HEAD_NORM, TB_Q, TB_Q, il);
            n->vec = l->q_norm, n->f = eps, n->heads = m->n_head;
            n = emit(&b, TG_HEAD_NORM, TB_K, TB_K, il);
            n->vec = l->k_norm, n->f = eps, n->heads = m->n_head_kv;
        }
        const tg_buf qk[2] = {TB_Q, TB_K};
        for (int j = 0; j < 2; j++) {
            tg_node *n = emit(&b, TG_ROPE, qk[j], qk[j], il);
            n->heads = j ? m->n_head_kv : m->n_head, n->rope = r->rope, n->table = l->rope_table;
        }
        if (m->attn_temp != 0.0f) { /* Llama 4 / Mistral 3: q scaled by its position's temperature, after RoPE */
            tg_node *n = emit(&b, TG_QTEMP, TB_Q, TB_Q, il);
            n->heads = m->n_head, n->f = m->attn_temp, n->window = m->attn_temp_floor;
        }
        emit(&b, TG_KV_STORE, TB_N, TB_K, il)->src1 = TB_V;
        tg_node *a = emit(&b, TG_ATTN, TB_ATT, TB_Q, il);
        a->f = m->attn_scale, a->window = l->window, a->heads = m->n_head;
        matmul(&b, TB_T, TB_ATT, &l->wo, l->bo, TW_O, il);
        if (l->attn_post_norm) norm(&b, TB_T, TB_T, l->attn_post_norm, eps, il);
        emit(&b, TG_ADD, TB_X, TB_T, il);

        norm(&b, TB_XN, TB_X, l->ffn_norm, eps, il);
        matmul(&b, TB_G, TB_XN, &l->w_gate, NULL, TW_GATE, il);
        matmul(&b, TB_U, TB_XN, &l->w_up, NULL, TW_UP, il);
        tg_node *glu = emit(&b, TG_GLU, TB_G, TB_G, il);
        glu->src1 = TB_U, glu->act = r->act;
        matmul(&b, TB_T, TB_G, &l->w_down, NULL, TW_DOWN, il);
        if (l->ffn_post_norm) norm(&b, TB_T, TB_T, l->ffn_post_norm, eps, il);
        emit(&b, TG_ADD, TB_X, TB_T, il);
    }
    emit(&b, TG_GATHER, TB_XO, TB_X, -1);
    norm(&b, TB_XO, TB_XO, m->output_norm, eps, -1);
    matmul(&b, TB_LOGITS, TB_XO, &m->output, NULL, TW_OUT, -1);
    if (m->logit_softcap > 0.0f) emit(&b, TG_SOFTCAP, TB_LOGITS, TB_LOGITS, -1)->f = m->logit_softcap;
    return g;
}

void tern_graph_free(tern_graph *g) {
    if (!g) return;
    free(g->nodes);
    free(g);
}

void tern_graph_print(const tern_graph *g, FILE *f) {
    static const char *ops[] = {"embed", "rmsnorm", "head_norm", "add", "matmul", "rope", "kv_store", "attn", "glu",
                                "gather", "softcap", "qtemp"};
    static const char *bufs[] = {"x", "xn", "q", "k", "v", "att", "t", "g", "u", "xo", "logits", "-"};
    static const char *roles[] = {"q", "k", "v", "o", "gate", "up", "down", "out", ""};
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = &g->nodes[i];
        fprintf(f, "%3d L%-3d %-9s %s <- %s%s%s %s%s\n", i, n->layer, ops[n->op], bufs[n->dst], bufs[n->src0],
                n->src1 != TB_N ? ", " : "", n->src1 != TB_N ? bufs[n->src1] : "", roles[n->role],
                n->op == TG_MATMUL && n->vec ? " +bias" : "");
    }
}
