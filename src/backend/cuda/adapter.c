/* adapter.c: the CUDA backend behind backend.h while its forward pass is still backend_cuda.c's own (one
 * sequence, a contiguous cache): passes of one sequence whose block table is the identity (pool row =
 * position), mapped onto tern_cuda_eval / _argmax / _sample. A transitional seam: the graph executor over the
 * paged cache replaces it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_cuda.h"
#include "util.h"

/* passes of up to this many tokens run the GEMV twins: every row the bits of its one-token step (tcu.h TCU_MULTI_MAX) */
#define TERN_CUDA_EXACT_ROWS 16

typedef struct {
    tern_backend base;
    tern_cuda *cu;
    const tern_model *m;
} cuda_adapter;

static int ad_exec(tern_backend *be_, const tern_graph *g, const tern_ubatch *ub) {
    (void)g;
    cuda_adapter *be = (cuda_adapter *)be_;
    const int n = ub->n, pos0 = ub->pos[0];
    for (int t = 0; t < n; t++)
        if (ub->pos[t] != pos0 + t || ub->slot[t] != ub->pos[t]) {
            tern_set_error("the CUDA backend runs one sequence at a time in this build (a batch of several "
                           "sequences needs --device cpu)");
            return -1;
        }
    if (ub->n_out == 0) return tern_cuda_eval(be->cu, ub->tok, n, pos0, NULL, 0, NULL);
    tern_out *o = ub->outs;
    const size_t V = (size_t)be->m->n_vocab;
    if (ub->n_out == 1 && ub->out[0] == n - 1) {
        if (o->mode == TERN_OUT_LOGITS) return tern_cuda_eval(be->cu, ub->tok, n, pos0, o->logits, 0, NULL);
        if (o->mode == TERN_OUT_ARGMAX) return tern_cuda_eval(be->cu, ub->tok, n, pos0, NULL, 0, &o->id);
        const tern_sample_req *r = o->samp;
        const tern_cuda_sampling sp = {r->pen_ids, r->n_pen, r->penalty, r->top_p, r->min_p, r->temp, r->top_k, r->u};
        return tern_cuda_eval_sample(be->cu, ub->tok, n, pos0, &sp, &o->id);
    }
    int all_logits = ub->n_out == n, all_argmax = ub->n_out == n;
    for (int i = 0; i < ub->n_out; i++) {
        all_logits = all_logits && o[i].mode == TERN_OUT_LOGITS && o[i].logits == o[0].logits + (size_t)i * V;
        all_argmax = all_argmax && o[i].mode == TERN_OUT_ARGMAX;
    }
    if (all_logits) return tern_cuda_eval(be->cu, ub->tok, n, pos0, o[0].logits, 1, NULL);
    if (all_argmax) {
        int32_t *ids = tern_xmalloc(sizeof(int32_t) * (size_t)n);
        const int rc = tern_cuda_eval_argmax(be->cu, ub->tok, n, pos0, ids);
        for (int i = 0; i < n && rc == 0; i++) o[i].id = ids[i];
        free(ids);
        return rc;
    }
    tern_set_error("the CUDA backend returns the last row's output or every row's in this build");
    return -1;
}

static int ad_kv_copy(tern_backend *be, int64_t dst, int64_t src, int64_t n) {
    (void)be; (void)dst; (void)src; (void)n;
    tern_set_error("the CUDA backend holds one sequence in this build (no shared KV blocks)");
    return -1;
}

static int ad_prepare(tern_backend *be_, const tern_graph *g, int max_rows) {
    (void)g;
    return tern_cuda_prepare_verify(((cuda_adapter *)be_)->cu, max_rows, NULL);
}

static void ad_free(tern_backend *be_) {
    cuda_adapter *be = (cuda_adapter *)be_;
    if (!be) return;
    tern_cuda_free(be->cu);
    free(be);
}

static const tern_backend_ops AD_OPS = {ad_exec, ad_kv_copy, ad_prepare, ad_free};

tern_backend *tern_backend_cuda_new(const tern_model *m, const tern_backend_params *p) {
    tern_cuda *cu = tern_cuda_new(m, p->n_ctx, p->max_rows, p->verbose, p->tp > 1 ? p->tp : 1, p->kv_q8);
    if (!cu) return NULL;
    if (p->n_layer > 0 && p->n_layer < m->n_layer) tern_cuda_set_layers(cu, p->n_layer);
    tern_cuda_set_verify_fast(cu, p->verify_fast);
    cuda_adapter *be = tern_xcalloc(1, sizeof *be);
    be->base = (tern_backend){&AD_OPS, "cuda", p->max_rows, p->verify_fast ? 1 : TERN_CUDA_EXACT_ROWS, 1};
    be->cu = cu;
    be->m = m;
    return &be->base;
}
