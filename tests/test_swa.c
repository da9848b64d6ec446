/* test_swa: the sliding-window layers' own KV pool (tern_context_params.swa_compact) on the CPU, over the gemma3
 * fixture (6 layers, window 8: 5 windowed, 1 global) and, when present, gemma-3-270m:
 * - the logits of every row of a 200-token sequence (25 windows; 640 tokens of the 270m's 512) are bit-identical with the pool on and off, fed in one
 *   step (passes of 16: windows released between passes), in chunks of 7 and token by token;
 * - batch invariance with the pool on (tests/batch_invariance.h), and the batched logits the bits of the pool off;
 * - the window pool's blocks in use stay bounded (window + margin + a pass, in blocks) while the main pool grows;
 * - truncation within the margin continues with the bits of the pool off; further back it fails with one line, and
 *   truncation to 0 works; a step refused (past n_ctx) changes nothing;
 * - a fork shares the window blocks and, continued apart, gives the bits of the pool off (copy on write of the
 *   shared partial window block);
 * - the prefix cache with the pool on: a 64-token prompt's blocks keep their window rows (keyed at the step's end,
 *   before its release), so a new sequence attaches 48 of them and continues with the bits of a fresh run; a
 *   200-token prompt run in passes of 16 released its early window rows before they were keyed, so a prompt sharing
 *   its first 100 tokens attaches nothing; a model without windowed layers gets no window pool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "batch_invariance.h"
#include "tern.h"


static tern_engine_params params(int swa, int n_ctx, int n_seq, int ubatch) {
    tern_engine_params p = tern_engine_default_params();
    p.ctx.n_ctx = n_ctx;
    p.ctx.n_threads = 2;
    p.ctx.device = TERN_DEVICE_CPU;
    p.ctx.ubatch = ubatch;
    p.ctx.swa_compact = swa;
    p.ctx.swa_margin = 4;
    p.n_seq_max = n_seq;
    p.block_size = 16;
    return p;
}

static void make_tokens(int32_t *t, int n, int V, uint64_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = 1 + (int32_t)((seed >> 33) % (uint64_t)(V - 1));
    }
}

/* Feed toks[0..n) to s in steps of `chunk` tokens, the FNV-1a of every row's logits bits into out (n). 0 or -1. */
static int feed_all(tern_engine *e, tern_seq *s, const int32_t *toks, int n, int chunk, uint64_t *out, int V) {
    tern_batch *b = tern_batch_new(0);
    int rc = 0;
    for (int i0 = 0; i0 < n && rc == 0; i0 += chunk) {
        const int k = n - i0 < chunk ? n - i0 : chunk;
        tern_batch_clear(b);
        for (int i = 0; i < k; i++) tern_batch_add(b, s, toks[i0 + i], TERN_BATCH_LOGITS);
        rc = tern_engine_decode(e, b);
        for (int i = 0; i < k && rc == 0; i++)
            out[i0 + i] = bi_fnv(tern_batch_logits(b, i), sizeof(float) * (size_t)V, 1469598103934665603ull);
    }
    tern_batch_free(b);
    return rc;
}

/* Logits of every row of toks fed in `chunk`s, with the pool on or off. */
static int run_seq(tern_model *m, int swa, int n_ctx, const int32_t *toks, int n, int chunk, uint64_t *out) {
    tern_engine_params ep = params(swa, n_ctx, 1, 16);
    tern_engine *e = tern_engine_new(m, &ep);
    if (!e) return -1;
    const int rc = feed_all(e, tern_seq_new(e), toks, n, chunk, out, tern_model_n_vocab(m));
    tern_engine_free(e);
    return rc;
}

/* The checks over N_TOK tokens of model m (its windowed layers' window: `window` keys) in engines of n_ctx. */
static void check_model(tern_model *m, const char *name, int N_TOK, int n_ctx, int window) {
    const int V = tern_model_n_vocab(m);
    int32_t *toks = malloc(sizeof(int32_t) * N_TOK), *alt = malloc(sizeof(int32_t) * N_TOK);
    make_tokens(toks, N_TOK, V, 7);
    make_tokens(alt, N_TOK, V, 11);
    uint64_t *ref = malloc(sizeof(uint64_t) * N_TOK), *got = malloc(sizeof(uint64_t) * N_TOK);
    const size_t bytes = sizeof(uint64_t) * N_TOK;

    /* bits: on vs off, one step, chunks of 7, token by token */
    CHECK(run_seq(m, 0, n_ctx, toks, N_TOK, N_TOK, ref) == 0, "%s: off: %s", name, tern_last_error());
    const int chunks[3] = {N_TOK, 7, 1};
    for (int c = 0; c < 3; c++) {
        memset(got, 0, bytes);
        CHECK(run_seq(m, 1, n_ctx, toks, N_TOK, chunks[c], got) == 0, "%s: on, chunks of %d: %s", name, chunks[c], tern_last_error());
        CHECK(!memcmp(ref, got, bytes), "%s: the logits differ with the window pool, chunks of %d", name, chunks[c]);
    }

    /* the window pool bounded while the main pool grows; truncation */
    tern_engine_params ep = params(1, n_ctx, 2, 16);
    tern_engine *e = tern_engine_new(m, &ep), *eo = NULL;
    CHECK(e != NULL, "%s: engine: %s", name, tern_last_error());
    if (!e) goto done;
    tern_kv_stats st;
    tern_engine_kv_stats(e, &st);
    printf("%s: window pool %d blocks, main pool %d blocks of %d rows\n", name, st.swa_blocks_total, st.blocks_total,
           st.block_size);
    CHECK(st.swa_blocks_total > 0 && st.swa_blocks_total < st.blocks_total, "%s: window pool %d of %d blocks", name,
          st.swa_blocks_total, st.blocks_total);
    tern_seq *s = tern_seq_new(e);
    int max_w = 0;
    tern_batch *b = tern_batch_new(0);
    for (int i = 0; i < N_TOK; i++) {
        tern_batch_clear(b);
        tern_batch_add(b, s, toks[i], TERN_BATCH_NONE);
        if (tern_engine_decode(e, b) != 0) break;
        tern_engine_kv_stats(e, &st);
        if (st.swa_blocks_used > max_w) max_w = st.swa_blocks_used;
    }
    tern_engine_kv_stats(e, &st);
    printf("%s: after %d tokens: main pool %d blocks in use, window pool %d (at most %d)\n", name, tern_seq_n_past(s),
           st.blocks_used, st.swa_blocks_used, max_w);
    CHECK(tern_seq_n_past(s) == N_TOK && st.blocks_used == (N_TOK + 15) / 16, "%s: main pool %d blocks", name,
          st.blocks_used);
    /* the window, the margin (4) and the token itself span at most this many blocks of 16 (the fixture: 2) */
    const int bound = (window + 4 + 1 + 15) / 16 + 1;
    CHECK(max_w <= bound, "%s: the window pool held %d blocks (bound %d)", name, max_w, bound);

    /* truncate within the margin, continue with other tokens: the bits of the pool off */
    tern_engine_params epo = params(0, n_ctx, 2, 16);
    eo = tern_engine_new(m, &epo);
    tern_seq *so = eo ? tern_seq_new(eo) : NULL;
    CHECK(so && feed_all(eo, so, toks, N_TOK, N_TOK, ref, V) == 0, "%s: off arm: %s", name, tern_last_error());
    CHECK(tern_seq_truncate(s, N_TOK - 4) == 0, "%s: truncate by the margin: %s", name, tern_last_error());
    CHECK(so && tern_seq_truncate(so, N_TOK - 4) == 0, "%s: off truncate", name);
    memset(got, 0, bytes);
    CHECK(feed_all(e, s, alt, 10, 10, got, V) == 0 && feed_all(eo, so, alt, 10, 10, ref, V) == 0, "%s: continue: %s",
          name, tern_last_error());
    CHECK(!memcmp(ref, got, sizeof(uint64_t) * 10), "%s: logits after a truncate differ with the window pool", name);
    /* further back: one line; 0: fine, and the sequence starts over with the bits of the pool off */
    const int np = tern_seq_n_past(s);
    CHECK(tern_seq_truncate(s, np - 24) == -1 && strstr(tern_last_error(), "sliding-window") &&
              !strchr(tern_last_error(), '\n') && tern_seq_n_past(s) == np,
          "%s: truncate past the window pool: %s", name, tern_last_error());
    CHECK(tern_seq_truncate(s, 0) == 0, "%s: truncate to 0: %s", name, tern_last_error());
    tern_engine_kv_stats(e, &st);
    CHECK(st.blocks_used == 0 && st.swa_blocks_used == 0, "%s: blocks after truncate to 0: %d, %d", name, st.blocks_used,
          st.swa_blocks_used);

    /* fork 100 tokens before the end (a partial block), each continued with other tokens */
    const int at = N_TOK - 100; /* past the window */
    CHECK(feed_all(e, s, toks, at, at, got, V) == 0, "%s: refeed: %s", name, tern_last_error());
    tern_engine_kv_stats(e, &st);
    const int w_before = st.swa_blocks_used;
    tern_seq *f = tern_seq_fork(s);
    tern_engine_kv_stats(e, &st);
    CHECK(f && st.swa_blocks_used == w_before, "%s: a fork shares its window blocks (%d vs %d)", name, st.swa_blocks_used,
          w_before);
    uint64_t gf[20], rf[20];
    CHECK(tern_seq_truncate(so, 0) == 0 && feed_all(eo, so, toks, at, at, ref, V) == 0, "%s: off refeed", name);
    tern_seq *fo = so ? tern_seq_fork(so) : NULL;
    CHECK(f && fo && feed_all(e, f, alt, 20, 20, gf, V) == 0 && feed_all(eo, fo, alt, 20, 20, rf, V) == 0,
          "%s: fork continues: %s", name, tern_last_error());
    CHECK(!memcmp(gf, rf, sizeof gf), "%s: a fork's logits differ with the window pool", name);
    CHECK(feed_all(e, s, alt + 50, 20, 1, gf, V) == 0 && feed_all(eo, so, alt + 50, 20, 1, rf, V) == 0,
          "%s: parent continues: %s", name, tern_last_error());
    CHECK(!memcmp(gf, rf, sizeof gf), "%s: the parent's logits after a fork differ with the window pool",
          name);
    tern_batch_free(b);

done:
    tern_engine_free(e);
    tern_engine_free(eo);
    free(ref);
    free(got);
    free(toks);
    free(alt);
}

int main(void) {
    (void)bi_sample_check;
    tern_model *m = tern_model_load("tests/fixtures/recipes/gemma3.gguf", 0);
    CHECK(m != NULL, "load the gemma3 fixture: %s", tern_last_error());
    if (!m) return check_summary("test_swa");
    check_model(m, "gemma3 fixture", 200, 256, 8);

    /* batch invariance with the pool on; batched, the bits of the pool off */
    {
        tern_engine_params on = params(1, 256, 8, 0), off = params(0, 256, 8, 0);
        bi_check(m, on, 8, 12, "cpu, 8 sequences, gemma3, window pool");
        int32_t ta[8 * 12], tb[8 * 12];
        uint64_t ha[8], hb[8];
        CHECK(bi_run(m, on, 8, 12, 1, ta, ha) == 0 && bi_run(m, off, 8, 12, 1, tb, hb) == 0, "bi_run: %s", tern_last_error());
        CHECK(!memcmp(ha, hb, sizeof ha) && !memcmp(ta, tb, sizeof ta), "batched logits differ with the window pool");
    }

    /* the prefix cache with the pool on */
    {
        const int V = tern_model_n_vocab(m);
        tern_engine_params ep = params(1, 256, 2, 0);
        ep.prefix_cache = 1;
        tern_engine *e = tern_engine_new(m, &ep);
        int32_t t[64];
        make_tokens(t, 64, V, 3);
        uint64_t la[64], lc[64];
        tern_seq *a = e ? tern_seq_new(e) : NULL;
        CHECK(a && feed_all(e, a, t, 64, 64, la, V) == 0, "prefix: %s", tern_last_error());
        tern_seq_free(a);
        tern_seq *c = e ? tern_seq_new(e) : NULL;
        const int got = c ? tern_seq_attach_prefix(c, t, 64) : -1;
        CHECK(got == 48, "a 64-token prefix with its window rows held: %d attached", got);
        CHECK(got == 48 && feed_all(e, c, t + 48, 16, 16, lc, V) == 0 && !memcmp(lc, la + 48, sizeof(uint64_t) * 16),
              "after a prefix hit with the window pool: the bits of a fresh run (%s)", tern_last_error());
        tern_engine_free(e);

        /* a 200-token prompt in passes of 16: its early window rows went before they were keyed */
        ep = params(1, 256, 2, 16);
        ep.prefix_cache = 1;
        e = tern_engine_new(m, &ep);
        int32_t u[200], v[150];
        make_tokens(u, 200, V, 13);
        memcpy(v, u, sizeof(int32_t) * 100);
        make_tokens(v + 100, 50, V, 17);
        uint64_t hu[200], hv[150], hr[150];
        a = e ? tern_seq_new(e) : NULL;
        CHECK(a && feed_all(e, a, u, 200, 200, hu, V) == 0, "prefix 200: %s", tern_last_error());
        tern_seq_free(a);
        c = e ? tern_seq_new(e) : NULL;
        CHECK(c && tern_seq_attach_prefix(c, v, 150) == 0, "a prefix whose window rows are gone attaches nothing");
        CHECK(c && feed_all(e, c, v, 150, 150, hv, V) == 0 && run_seq(m, 0, 256, v, 150, 150, hr) == 0 &&
                  !memcmp(hv, hr, sizeof hv), "after a refused prefix: the bits of one pool");
        tern_engine_free(e);

        /* the cache's window blocks give way when the window pool runs out: 8 prompts through a pool of 4 */
        ep = params(1, 256, 1, 16);
        ep.prefix_cache = 1;
        e = tern_engine_new(m, &ep);
        tern_kv_stats st = {0};
        int ok = e != NULL;
        for (int k = 0; k < 8 && ok; k++) {
            int32_t w[40];
            uint64_t hw[40];
            make_tokens(w, 40, V, 100 + k);
            tern_seq *q = tern_seq_new(e);
            ok = q && feed_all(e, q, w, 40, 40, hw, V) == 0;
            tern_seq_free(q);
        }
        if (e) tern_engine_kv_stats(e, &st);
        printf("prefix cache with the window pool: %d entries, window pool %d of %d blocks in use\n", st.cached_blocks,
               st.swa_blocks_used, st.swa_blocks_total);
        CHECK(ok && st.swa_blocks_total == 4 && st.cached_blocks > 0 && st.swa_blocks_used <= 4,
              "8 prompts through a window pool of %d: %s",
              st.swa_blocks_total, tern_last_error());
        tern_engine_free(e);
    }

    /* a step refused before it runs (past n_ctx) releases nothing: the sequence goes on */
    {
        tern_engine_params ep = params(1, 64, 1, 16);
        tern_engine *e = tern_engine_new(m, &ep);
        tern_seq *s = e ? tern_seq_new(e) : NULL;
        int32_t t[80];
        make_tokens(t, 80, tern_model_n_vocab(m), 5);
        tern_batch *b = tern_batch_new(0);
        for (int i = 0; i < 40; i++) tern_batch_add(b, s, t[i], TERN_BATCH_NONE);
        CHECK(s && tern_engine_decode(e, b) == 0, "40 tokens: %s", tern_last_error());
        tern_batch_clear(b);
        for (int i = 0; i < 40; i++) tern_batch_add(b, s, t[40 + i], TERN_BATCH_NONE); /* past n_ctx 64: refused whole */
        CHECK(s && tern_engine_decode(e, b) == -1 && tern_seq_n_past(s) == 40, "past n_ctx: %s", tern_last_error());
        tern_batch_clear(b);
        tern_batch_add(b, s, t[40], TERN_BATCH_NONE);
        CHECK(s && tern_engine_decode(e, b) == 0, "a refused step changes nothing: %s", tern_last_error());
        tern_batch_free(b);
        tern_engine_free(e);
    }

    /* no windowed layers: no window pool */
    tern_model *l = tern_model_load("models/SmolLM2-135M-Instruct.Q4_1.gguf", 0);
    if (l) {
        tern_engine_params ep = params(1, 64, 1, 0);
        tern_engine *e = tern_engine_new(l, &ep);
        tern_kv_stats st;
        if (e) tern_engine_kv_stats(e, &st);
        CHECK(e && st.swa_blocks_total == 0, "a model without windows has no window pool");
        tern_engine_free(e);
        tern_model_free(l);
    }
    tern_model_free(m);

    tern_model *r = tern_model_load("models/gemma-3-270m-q4_k_m.gguf", 0);
    if (r) {
        check_model(r, "gemma-3-270m", 640, 704, 512); /* 128 tokens past its window of 512 */
        tern_model_free(r);
    } else {
        printf("test_swa: models/gemma-3-270m-q4_k_m.gguf not present: the real model's checks skipped\n");
    }
    return check_summary("test_swa");
}
