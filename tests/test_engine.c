/* test_engine: the engine's batch API on the CPU (the default model):
 * - batch invariance (tests/batch_invariance.h): 8 sequences of 3..93 prompt tokens, 12 greedy tokens each, joining
 *   at steps 0..3 of one engine, give the tokens and the logits bits each gives alone (also over the tiny gemma3
 *   fixture, whose 8-key sliding window cuts most sequences); a sequence sampling with its
 *   own sampler beside greedy ones draws what the host chain draws from its logits alone;
 * - the graph: one op list for the llama recipe (embed, 30 x 16 ops, gather, norm, head);
 * - a forked sequence shares its parent's blocks (pool usage) and, continued with other tokens than the parent,
 *   gives the logits bits of a fresh sequence fed the same tokens (the shared partial block copied on write);
 * - truncation returns blocks; a step that does not fit the pool fails with "KV cache full" and changes nothing;
 * - bad input: a token id out of range, a sequence past the engine's n_ctx, a sequence of another engine, an unknown
 *   output kind, a block size that is not a power of two: a one-line error, the sequences unchanged. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "batch_invariance.h"
#include "graph.h"
#include "model.h"
#include "tern.h"

#define MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"

static tern_engine_params cpu_params(int n_ctx, int n_seq, int kv_tokens) {
    tern_engine_params p = tern_engine_default_params();
    p.ctx.n_ctx = n_ctx;
    p.ctx.n_threads = 2;
    p.ctx.device = TERN_DEVICE_CPU;
    p.n_seq_max = n_seq;
    p.kv_tokens = kv_tokens;
    p.block_size = 16;
    return p;
}

/* Feed toks[0..n) to s in one step; the logits of the last row into out. 0 or -1. */
static int feed(tern_engine *e, tern_batch *b, tern_seq *s, const int32_t *toks, int n, float *out, int V) {
    tern_batch_clear(b);
    int r = -1;
    for (int i = 0; i < n; i++) r = tern_batch_add(b, s, toks[i], i == n - 1 ? TERN_BATCH_LOGITS : TERN_BATCH_NONE);
    if (tern_engine_decode(e, b) != 0) return -1;
    memcpy(out, tern_batch_logits(b, r), sizeof(float) * (size_t)V);
    return 0;
}

int main(void) {
    tern_model *m = tern_model_load(MODEL, 0);
    CHECK(m != NULL, "load: %s", tern_last_error());
    if (!m) return check_summary("test_engine");
    const int V = tern_model_n_vocab(m);

    /* the graph of the llama recipe */
    tern_graph *g = tern_graph_build(m, 0);
    CHECK(g->n_nodes == 1 + 16 * m->n_layer + 3, "llama graph: %d nodes", g->n_nodes);
    CHECK(g->nodes[0].op == TG_EMBED && g->nodes[g->n_nodes - 1].op == TG_MATMUL && g->nodes[g->n_nodes - 1].role == TW_OUT,
          "llama graph ends");
    tern_graph_free(g);
    g = tern_graph_build(m, 4);
    CHECK(g->n_layer == 4 && g->n_nodes == 1 + 16 * 4 + 3, "4-layer graph: %d nodes", g->n_nodes);
    tern_graph_free(g);

    /* batch invariance: 8 sequences on the CPU; a sequence's sampler in a batch */
    bi_check(m, cpu_params(256, 8, 0), 8, 12, "cpu, 8 sequences");
    bi_sample_check(m, cpu_params(256, 3, 0), 16, "cpu");
    { /* the same over a recipe with a sliding window (the gemma3 fixture: 8 keys, paged blocks of 16 shared in a pass) */
        tern_model *g3 = tern_model_load("tests/fixtures/recipes/gemma3.gguf", 0);
        CHECK(g3 != NULL, "load the gemma3 fixture: %s", tern_last_error());
        if (g3) bi_check(g3, cpu_params(256, 8, 0), 8, 12, "cpu, 8 sequences, gemma3 (window 8)");
        tern_model_free(g3);
    }

    /* fork: shared blocks, copy on write */
    tern_engine_params ep = cpu_params(128, 4, 0);
    tern_engine *e = tern_engine_new(m, &ep);
    CHECK(e != NULL, "engine: %s", tern_last_error());
    tern_batch *b = tern_batch_new(4);
    float *la = malloc(sizeof(float) * V), *lb = malloc(sizeof(float) * V), *lr = malloc(sizeof(float) * V);
    int32_t p[40];
    for (int i = 0; i < 40; i++) p[i] = 100 + 7 * i;
    tern_seq *a = tern_seq_new(e);
    CHECK(feed(e, b, a, p, 20, la, V) == 0, "prompt: %s", tern_last_error());
    int used = 0, total = 0, bs = 0;
    tern_engine_kv_usage(e, &used, &total, &bs);
    CHECK(used == 2 && bs == 16 && total == 4 * 128 / 16, "20 tokens in blocks of 16: %d of %d used", used, total);
    tern_seq *f = tern_seq_fork(a);
    tern_engine_kv_usage(e, &used, NULL, NULL);
    CHECK(f && tern_seq_n_past(f) == 20 && used == 2, "fork shares: n_past %d, %d blocks", f ? tern_seq_n_past(f) : -1, used);
    CHECK(feed(e, b, a, p + 20, 5, la, V) == 0 && feed(e, b, f, p + 30, 5, lb, V) == 0, "continue: %s", tern_last_error());
    tern_engine_kv_usage(e, &used, NULL, NULL);
    CHECK(used == 3, "the shared partial block copied once written: %d blocks", used);
    tern_seq *r = tern_seq_new(e);
    int32_t q[25];
    memcpy(q, p, sizeof(int32_t) * 20);
    memcpy(q + 20, p + 20, sizeof(int32_t) * 5);
    CHECK(feed(e, b, r, q, 25, lr, V) == 0 && !memcmp(lr, la, sizeof(float) * V), "parent after the fork = fresh run");
    tern_seq_free(r);
    r = tern_seq_new(e);
    memcpy(q + 20, p + 30, sizeof(int32_t) * 5);
    CHECK(feed(e, b, r, q, 25, lr, V) == 0 && !memcmp(lr, lb, sizeof(float) * V), "fork = fresh run");
    tern_seq_free(r);
    /* truncation returns blocks */
    CHECK(tern_seq_truncate(f, 3) == 0 && tern_seq_n_past(f) == 3, "truncate");
    tern_engine_kv_usage(e, &used, NULL, NULL);
    CHECK(used == 2, "the truncated fork keeps its first block, shared with a: %d in use", used);
    CHECK(tern_seq_truncate(f, 4) == -1, "truncate beyond n_past refused");
    tern_seq_free(f);
    tern_seq_free(a);
    tern_engine_kv_usage(e, &used, NULL, NULL);
    CHECK(used == 0, "every block back: %d", used);

    /* bad input */
    a = tern_seq_new(e);
    tern_batch_clear(b);
    tern_batch_add(b, a, V, TERN_BATCH_LOGITS);
    CHECK(tern_engine_decode(e, b) == -1 && strstr(tern_last_error(), "out of range") && tern_seq_n_past(a) == 0,
          "token out of range: %s", tern_last_error());
    CHECK(tern_batch_add(b, a, 1, 7) == -1 && tern_batch_add(b, NULL, 1, 0) == -1, "bad batch rows");
    tern_batch_clear(b);
    for (int i = 0; i < 129; i++) tern_batch_add(b, a, 5, TERN_BATCH_NONE);
    CHECK(tern_engine_decode(e, b) == -1 && strstr(tern_last_error(), "context") && tern_seq_n_past(a) == 0,
          "past n_ctx: %s", tern_last_error());
    ep = cpu_params(64, 1, 0);
    tern_engine *e2 = tern_engine_new(m, &ep);
    tern_seq *o = e2 ? tern_seq_new(e2) : NULL;
    tern_batch_clear(b);
    tern_batch_add(b, a, 5, TERN_BATCH_NONE);
    tern_batch_add(b, o, 5, TERN_BATCH_NONE);
    CHECK(tern_engine_decode(e, b) == -1 && strstr(tern_last_error(), "another engine") && tern_seq_n_past(a) == 0,
          "a sequence of another engine: %s", tern_last_error());
    tern_engine_free(e2);
    tern_engine_params bp = cpu_params(64, 1, 0);
    bp.block_size = 24;
    CHECK(tern_engine_new(m, &bp) == NULL && strstr(tern_last_error(), "power of two"), "block size 24: %s",
          tern_last_error());
    tern_seq_free(a);
    tern_engine_free(e);

    /* a pool of 2 blocks: the second sequence's step does not fit, and nothing changes */
    ep = cpu_params(64, 2, 32);
    e = tern_engine_new(m, &ep);
    a = tern_seq_new(e);
    tern_seq *c = tern_seq_new(e);
    CHECK(feed(e, b, a, p, 20, la, V) == 0, "20 tokens fit: %s", tern_last_error());
    tern_batch_clear(b);
    tern_batch_add(b, a, 9, TERN_BATCH_LOGITS);
    for (int i = 0; i < 20; i++) tern_batch_add(b, c, p[i], TERN_BATCH_NONE);
    CHECK(tern_engine_decode(e, b) == -1 && strstr(tern_last_error(), "KV cache full"), "pool full: %s", tern_last_error());
    tern_engine_kv_usage(e, &used, NULL, NULL);
    CHECK(tern_seq_n_past(a) == 20 && tern_seq_n_past(c) == 0 && used == 2, "nothing changed: %d %d %d",
          tern_seq_n_past(a), tern_seq_n_past(c), used);
    CHECK(feed(e, b, a, p + 20, 1, lb, V) == 0, "the engine still runs: %s", tern_last_error());
    tern_engine_free(e);

    tern_batch_free(b);
    free(la); free(lb); free(lr);
    tern_model_free(m);
    return check_summary("test_engine");
}
