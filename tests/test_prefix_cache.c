/* test_prefix_cache: the engine's prefix cache (src/runtime/prefix_cache.c) on the CPU, the default model:
 * - a sequence's full blocks stay cached after it is freed (held by the cache alone: evictable);
 * - a new sequence with the same tokens attaches them (whole blocks, at least one token left to run) and its logits
 *   after running the rest are bit-identical to the first sequence's; a prompt sharing only part of the prefix
 *   attaches only the shared whole blocks; a prompt differing in its first block attaches none;
 * - while a sequence runs, its filled blocks are cached already (a concurrent sequence shares them);
 * - a pool with no free block evicts the least recently used idle blocks (the chain's tail before its head), and
 *   a block a live sequence holds is never evicted;
 * - the cache off: attach gives 0; a non-empty sequence: -1. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tern.h"

#define MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"

static tern_engine_params params(int n_seq, int kv_tokens, int cache) {
    tern_engine_params p = tern_engine_default_params();
    p.ctx.n_ctx = 256;
    p.ctx.n_threads = 2;
    p.ctx.device = TERN_DEVICE_CPU;
    p.n_seq_max = n_seq;
    p.kv_tokens = kv_tokens;
    p.block_size = 16;
    p.prefix_cache = cache;
    return p;
}

/* toks[0..n) into s in one step; the last row's logits into out (V floats). 0 or -1. */
static int feed(tern_engine *e, tern_seq *s, const int32_t *toks, int n, float *out, int V) {
    tern_batch *b = tern_batch_new(0);
    int r = -1;
    for (int i = 0; i < n; i++) r = tern_batch_add(b, s, toks[i], i == n - 1 ? TERN_BATCH_LOGITS : TERN_BATCH_NONE);
    const int rc = tern_engine_decode(e, b);
    if (rc == 0 && out) memcpy(out, tern_batch_logits(b, r), sizeof(float) * (size_t)V);
    tern_batch_free(b);
    return rc;
}

int main(void) {
    tern_model *m = tern_model_load(MODEL, 0);
    CHECK(m != NULL, "load: %s", tern_last_error());
    if (!m) return check_summary("test_prefix_cache");
    const int V = tern_model_n_vocab(m);
    float *la = malloc(sizeof(float) * (size_t)V), *lb = malloc(sizeof(float) * (size_t)V);
    int32_t p[120];
    for (int i = 0; i < 120; i++) p[i] = 100 + (i * 7919) % 3000;

    /* pool of 12 blocks (192 rows), 2 sequences */
    tern_engine *e = tern_engine_new(m, &(tern_engine_params){0});
    tern_engine_free(e); /* zero params: defaults, cache off */
    tern_engine_params ep = params(2, 192, 1);
    e = tern_engine_new(m, &ep);
    CHECK(e != NULL, "engine: %s", tern_last_error());
    if (!e) return check_summary("test_prefix_cache");
    tern_kv_stats st;

    tern_seq *a = tern_seq_new(e);
    CHECK(tern_seq_attach_prefix(a, p, 50) == 0, "empty cache: nothing attached");
    CHECK(feed(e, a, p, 50, la, V) == 0, "feed a: %s", tern_last_error());
    tern_engine_kv_stats(e, &st);
    CHECK(st.blocks_used == 4 && st.cached_blocks == 3 && st.cached_idle == 0,
          "a running: used %d cached %d idle %d (want 4 3 0)", st.blocks_used, st.cached_blocks, st.cached_idle);
    /* a concurrent sequence shares a's cached blocks */
    tern_seq *c = tern_seq_new(e);
    CHECK(tern_seq_attach_prefix(c, p, 40) == 32, "concurrent attach of 40 tokens: 2 blocks");
    tern_engine_kv_stats(e, &st);
    CHECK(st.blocks_used == 4, "shared blocks counted once: used %d", st.blocks_used);
    CHECK(tern_seq_attach_prefix(c, p, 40) == -1, "attach on a non-empty sequence: -1");
    tern_seq_free(c);
    tern_seq_free(a);
    tern_engine_kv_stats(e, &st);
    CHECK(st.blocks_used == 3 && st.cached_blocks == 3 && st.cached_idle == 3,
          "a freed: used %d cached %d idle %d (want 3 3 3)", st.blocks_used, st.cached_blocks, st.cached_idle);

    /* the same prompt: 48 positions attached, the logits after the rest bit-identical */
    tern_seq *b = tern_seq_new(e);
    CHECK(tern_seq_attach_prefix(b, p, 50) == 48, "attach 50 tokens: 48 positions");
    CHECK(tern_seq_n_past(b) == 48, "n_past %d", tern_seq_n_past(b));
    CHECK(feed(e, b, p + 48, 2, lb, V) == 0, "feed b: %s", tern_last_error());
    CHECK(!memcmp(la, lb, sizeof(float) * (size_t)V), "logits after a cached prefix differ from the computed ones");
    tern_seq_free(b);
    /* a prompt of exactly 48 tokens: at least one left to run, so 32 */
    b = tern_seq_new(e);
    CHECK(tern_seq_attach_prefix(b, p, 48) == 32, "attach 48 tokens: 32 positions");
    tern_seq_free(b);
    /* shares 40 tokens: 2 blocks; differs in the first block: none */
    int32_t q[60];
    memcpy(q, p, sizeof q);
    q[40] = 7;
    b = tern_seq_new(e);
    CHECK(tern_seq_attach_prefix(b, q, 60) == 32, "partial share: 32 positions");
    tern_seq_free(b);
    q[3] = 7;
    b = tern_seq_new(e);
    CHECK(tern_seq_attach_prefix(b, q, 60) == 0, "first block differs: none");
    tern_seq_free(b);

    /* eviction: a 120-token sequence needs 8 blocks; 9 are free, then a second one evicts the cached tail first */
    tern_seq *d = tern_seq_new(e);
    int32_t r[150];
    for (int i = 0; i < 150; i++) r[i] = 5000 + i;
    CHECK(feed(e, d, r, 120, NULL, V) == 0, "feed d: %s", tern_last_error());
    tern_engine_kv_stats(e, &st);
    CHECK(st.blocks_used == 11 && st.evicted == 0, "d: used %d evicted %lld", st.blocks_used, (long long)st.evicted);
    CHECK(feed(e, d, r + 120, 30, NULL, V) == 0, "d grows into cached blocks: %s", tern_last_error());
    tern_engine_kv_stats(e, &st);
    CHECK(st.evicted == 1 && st.blocks_used == 12, "d grown: evicted %lld used %d", (long long)st.evicted, st.blocks_used);
    b = tern_seq_new(e);
    CHECK(tern_seq_attach_prefix(b, p, 50) == 32, "after evicting the tail block: the head's 2 blocks remain");
    tern_seq_free(b);
    /* d's blocks are its own: a step past the pool fails, nothing of d evicted */
    tern_seq *f = tern_seq_new(e);
    CHECK(feed(e, f, p, 60, NULL, V) != 0, "a step past the pool fails");
    tern_engine_kv_stats(e, &st);
    CHECK(st.blocks_used == 10 && st.evicted == 3 && tern_seq_n_past(d) == 150 && tern_seq_n_past(f) == 0,
          "after the failed step: used %d evicted %lld (want d's 10, the 2 idle cached blocks evicted)", st.blocks_used,
          (long long)st.evicted);
    tern_seq_free(f);
    tern_seq_free(d);
    tern_engine_kv_stats(e, &st);
    CHECK(st.blocks_used == st.cached_idle, "all freed: used %d = idle cached %d", st.blocks_used, st.cached_idle);
    tern_engine_free(e);

    /* the cache off */
    ep = params(1, 0, 0);
    e = tern_engine_new(m, &ep);
    a = tern_seq_new(e);
    CHECK(feed(e, a, p, 50, NULL, V) == 0, "feed: %s", tern_last_error());
    tern_seq_free(a);
    a = tern_seq_new(e);
    CHECK(tern_seq_attach_prefix(a, p, 50) == 0, "cache off: nothing attached");
    tern_engine_kv_stats(e, &st);
    CHECK(st.blocks_used == 0 && st.cached_blocks == 0, "cache off: used %d", st.blocks_used);
    tern_engine_free(e);
    free(la);
    free(lb);
    tern_model_free(m);
    return check_summary("test_prefix_cache");
}
