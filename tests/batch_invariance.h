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

/* Sequence sampling in a batch: sequence 0 draws with its own sampler (TERN_BATCH_SAMPLE: seed 5, temp 0.8, top-k 40,
 * repeat penalty 1.3 over its history) for gen steps beside two greedy sequences; the reference draws with an
 * identically made sampler from the logits of sequence 0 run alone (tern_sampler_sample over the same history). The
 * two token streams must be equal: the same RNG stream, the same logits bits (batch invariance), the same chain (on
 * CUDA the device's, which chooses the host's id on the same logits and draw). */
static void bi_sample_check(tern_model *m, tern_engine_params ep, int gen, const char *what) {
    const int V = tern_model_n_vocab(m);
    tern_sampler_params sp = tern_sampler_default_params();
    sp.seed = 5, sp.repeat_penalty = 1.3f;
    int32_t got[64], want[64], hist[BI_MAX_PROMPT + 64], prompt[BI_MAX_PROMPT];
    ep.block_size = 16;
    ep.n_seq_max = 3;
    tern_engine *e = tern_engine_new(m, &ep);
    tern_sampler *sa = tern_sampler_new(&sp, V), *sb = tern_sampler_new(&sp, V);
    tern_batch *b = tern_batch_new(0);
    CHECK(e && sa && sb, "%s: setup: %s", what, tern_last_error());
    if (!e || !sa || !sb) return;
    tern_seq *s[3];
    int32_t last[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) s[i] = tern_seq_new(e);
    tern_seq_set_sampler(s[0], sa);
    int ok = 1;
    for (int k = 0; k < gen && ok; k++) {
        tern_batch_clear(b);
        int row[3];
        for (int i = 0; i < 3; i++) {
            if (tern_seq_n_past(s[i]) == 0) {
                const int n = bi_prompt(i + 5, V, prompt);
                for (int j = 0; j < n; j++)
                    row[i] = tern_batch_add(b, s[i], prompt[j], j < n - 1 ? TERN_BATCH_NONE : i ? TERN_BATCH_ARGMAX : TERN_BATCH_SAMPLE);
            } else {
                row[i] = tern_batch_add(b, s[i], last[i], i ? TERN_BATCH_ARGMAX : TERN_BATCH_SAMPLE);
            }
        }
        ok = tern_engine_decode(e, b) == 0;
        for (int i = 0; i < 3 && ok; i++) last[i] = tern_batch_id(b, row[i]);
        got[k] = last[0];
    }
    CHECK(ok, "%s: batched sampling: %s", what, tern_last_error());
    /* the reference: sequence 0 alone, its logits, the host chain */
    tern_engine_free(e);
    ep.n_seq_max = 1;
    e = tern_engine_new(m, &ep);
    tern_seq *r = e ? tern_seq_new(e) : NULL;
    int nh = bi_prompt(5, V, hist), rr = -1;
    for (int k = 0; r && k < gen && ok; k++) {
        tern_batch_clear(b);
        if (k == 0)
            for (int j = 0; j < nh; j++) rr = tern_batch_add(b, r, hist[j], j == nh - 1 ? TERN_BATCH_LOGITS : TERN_BATCH_NONE);
        else rr = tern_batch_add(b, r, want[k - 1], TERN_BATCH_LOGITS);
        ok = tern_engine_decode(e, b) == 0;
        if (ok) want[k] = tern_sampler_sample(sb, tern_batch_logits(b, rr), hist, nh);
        hist[nh++] = want[k];
    }
    CHECK(ok && r, "%s: reference sampling: %s", what, tern_last_error());
    if (ok && r) CHECK(!memcmp(got, want, sizeof(int32_t) * (size_t)gen), "%s: sampled in a batch %d %d %d.. vs alone %d %d %d..",
                       what, got[0], got[1], got[2], want[0], want[1], want[2]);
    /* a sample row of a sequence without a sampler is refused, one line */
    tern_seq *q = r ? tern_seq_fork(r) : NULL;
    if (q) {
        tern_batch_clear(b);
        tern_batch_add(b, q, 1, TERN_BATCH_SAMPLE);
        CHECK(tern_engine_decode(e, b) == -1 && strstr(tern_last_error(), "no sampler"), "%s: sample without a sampler: %s",
              what, tern_last_error());
    }
    tern_batch_free(b);
    tern_sampler_free(sa);
    tern_sampler_free(sb);
    tern_engine_free(e);
}

#endif
