/* batch_invariance.h: the batch-invariance check shared by tests/test_engine.c (CPU, CI) and
 * tests/gpu/gpu_batch.c (CUDA, the GPU box): a sequence's greedy tokens and the bits of its logits are the same
 * whether it runs alone or in an engine step with other sequences of other lengths, joining at other steps
 * (prefill chunks mixed with other sequences' decode tokens), its KV blocks interleaved with theirs in the pool.
 * Both arms run the same engine code on the same device; the reference arm gives each sequence an engine of
 * its own. Include check.h first. */
#ifndef TERN_BATCH_INVARIANCE_H
#define TERN_BATCH_INVARIANCE_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tern.h"

#define BI_MAX_SEQ 64
#define BI_MAX_PROMPT 96

static uint64_t bi_fnv(const void *p, size_t n, uint64_t h) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Prompt of sequence i: 3 + (i * 37) % 90 token ids from a fixed LCG over [1, n_vocab), so the sequences have
 * different lengths (1 to 6 blocks of 16 rows) and contents. */
static int bi_prompt(int i, int n_vocab, int32_t *out) {
    const int n = 3 + (i * 37) % (BI_MAX_PROMPT - 6);
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    for (int k = 0; k < n; k++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        out[k] = 1 + (int32_t)((s >> 33) % (uint64_t)(n_vocab - 1));
    }
    return n;
}

/* Sequence i's step: its prompt (logits of the last row) or its last token, into b; the row whose logits it reads. */
static int bi_add(tern_batch *b, tern_seq *s, int i, int n_vocab, int32_t last) {
    int32_t prompt[BI_MAX_PROMPT];
    if (tern_seq_n_past(s) > 0) return tern_batch_add(b, s, last, TERN_BATCH_LOGITS);
    const int n = bi_prompt(i, n_vocab, prompt);
    int row = -1;
    for (int k = 0; k < n; k++) row = tern_batch_add(b, s, prompt[k], k == n - 1 ? TERN_BATCH_LOGITS : TERN_BATCH_NONE);
    return row;
}

/* gen tokens of each of n_seq sequences, greedy by the host argmax of the returned logits; toks[i * gen + k] the
 * k-th token of sequence i, hash[i] the FNV-1a of every logits row it was given. batched: one engine, sequence i
 * joining at step i % 4 (its prompt in the same step as earlier sequences' decode tokens); else an engine of its
 * own for each sequence in turn. Returns 0, or -1 on an engine error (tern_last_error). */
static int bi_run(tern_model *m, tern_engine_params ep, int n_seq, int gen, int batched, int32_t *toks, uint64_t *hash) {
    const int V = tern_model_n_vocab(m);
    tern_seq *seq[BI_MAX_SEQ] = {0};
    int32_t last[BI_MAX_SEQ];
    int row[BI_MAX_SEQ], done[BI_MAX_SEQ] = {0}, rc = 0;
    ep.block_size = 16;
    ep.kv_tokens = 0;
    tern_batch *b = tern_batch_new(0);
    for (int i = 0; i < n_seq; i++) hash[i] = 1469598103934665603ull;
    if (!batched) {
        ep.n_seq_max = 1;
        for (int i = 0; i < n_seq && rc == 0; i++) {
            tern_engine *e = tern_engine_new(m, &ep);
            tern_seq *s = e ? tern_seq_new(e) : NULL;
            for (int k = 0; s && k < gen && rc == 0; k++) {
                tern_batch_clear(b);
                const int r = bi_add(b, s, i, V, last[i]);
                if (tern_engine_decode(e, b) != 0) { rc = -1; break; }
                const float *lg = tern_batch_logits(b, r);
                hash[i] = bi_fnv(lg, sizeof(float) * (size_t)V, hash[i]);
                toks[i * gen + k] = last[i] = tern_argmax(lg, V);
            }
            if (!s) rc = -1;
            tern_engine_free(e);
        }
        tern_batch_free(b);
        return rc;
    }
    ep.n_seq_max = n_seq;
    tern_engine *e = tern_engine_new(m, &ep);
    for (int i = 0; e && i < n_seq; i++)
        if (!(seq[i] = tern_seq_new(e))) rc = -1;
    if (!e) rc = -1;
    for (int step = 0; rc == 0; step++) {
        int any = 0;
        tern_batch_clear(b);
        for (int i = 0; i < n_seq; i++) {
            row[i] = -1;
            if (done[i] >= gen || step < i % 4) continue;
            row[i] = bi_add(b, seq[i], i, V, last[i]);
            any = 1;
        }
        if (!any) break;
        if (tern_engine_decode(e, b) != 0) { rc = -1; break; }
        for (int i = 0; i < n_seq; i++) {
            if (row[i] < 0) continue;
            const float *lg = tern_batch_logits(b, row[i]);
            hash[i] = bi_fnv(lg, sizeof(float) * (size_t)V, hash[i]);
            toks[i * gen + done[i]++] = last[i] = tern_argmax(lg, V);
        }
    }
    tern_batch_free(b);
    tern_engine_free(e);
    return rc;
}

/* The check: n_seq sequences, gen tokens each, batched vs alone. */
static void bi_check(tern_model *m, tern_engine_params ep, int n_seq, int gen, const char *what) {
    int32_t *ta = calloc((size_t)n_seq * gen, sizeof(int32_t)), *tb = calloc((size_t)n_seq * gen, sizeof(int32_t));
    uint64_t ha[BI_MAX_SEQ], hb[BI_MAX_SEQ];
    const int ra = bi_run(m, ep, n_seq, gen, 0, ta, ha);
    CHECK(ra == 0, "%s: alone: %s", what, tern_last_error());
    const int rb = bi_run(m, ep, n_seq, gen, 1, tb, hb);
    CHECK(rb == 0, "%s: batched: %s", what, tern_last_error());
    if (ra == 0 && rb == 0)
        for (int i = 0; i < n_seq; i++) {
            CHECK(!memcmp(ta + i * gen, tb + i * gen, sizeof(int32_t) * (size_t)gen),
                  "%s: sequence %d's greedy tokens differ batched (first %d vs %d)", what, i, ta[i * gen], tb[i * gen]);
            CHECK(ha[i] == hb[i], "%s: sequence %d's logits bits differ batched", what, i);
        }
    free(ta);
    free(tb);
}

#endif
