/* test_spec: speculative greedy decoding (src/runtime/speculate.c) on the CPU against plain greedy decoding.
 * - A scripted drafter (draft_fn) proposes the true greedy continuation with a wrong token at position j,
 *   for every j < depth 8: each pass must accept exactly j drafts and emit the correction, the KV cache
 *   must be rolled back so the whole output equals plain greedy (40 tokens), and the cache length must
 *   match the history after every pass.
 * - A drafter that is always right: every pass accepts min(depth, what is left); always wrong: 1 token.
 * - Model drafters: the model drafting for itself (a second context; everything accepted) and its first
 *   12 layers: output equal to plain greedy; the draft context is rolled back too.
 * - Prompt lookup on a repetitive prompt: equal output and some drafts accepted.
 * - The acceptance gate pauses drafting after a failed window.
 * - The cost gate: tern_spec_choose_depth and tern_spec_cost on hand-computed cases; on the model, an
 *   always-wrong drafter is gated, an always-right one keeps drafting, output equal to plain greedy. The
 *   always-wrong drafter sleeps two one-token passes (timed here) per draft, so its drafted passes cost
 *   well over the gate's break-even (1 + its acceptance estimate, never under 1/22) even when the gate's
 *   one-token time holds a slow sample, and the check does not rest on how this CPU's batched pass scales.
 *   Without the sleep CI once saw the gate keep drafting (80 drafts, 2 gated in 39 passes; by its rule its
 *   costs of 2-3 token passes were then <= ~1.05, where this machine measures 1.5-2.4). A one-token sample
 *   too slow does that (seeded 3x here on the old code: 95 drafts, 0 gated); whether it did on CI was not
 *   measured. The gate now re-measures a one-token time that a longer pass has beaten: checked with a
 *   seed 10x too slow and the sleeping drafter (4ef1e01's gate fails it: 119 drafts, 0 gated).
 * - Speculative sampling (tern_spec_sample_accept): over 40,000 seeded trials with 3 drafts on fixed
 *   random logits (50 ids; penalty, top-p, min-p, temperature on), the first emitted token's frequencies
 *   match the sampler's distribution P_0 (tern_sampler_probs), and the second token's, given the first
 *   draft was kept, match P_1 (history + that draft): chi-square under the p = 0.001 critical value; the
 *   same statistic against a different distribution (temperature 1.6) exceeds it (the test has power).
 *   Plain tern_sampler_sample draws match P_0 the same way (tern_sampler_probs is what sampling uses).
 *   tern_spec_step with the sampler on the model runs 32 tokens with the cache in step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "sampler.h"
#include "speculate.h"
#include "tern.h"
#include "util.h"

#define MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#define L 40

typedef struct {
    const int32_t *G; /* plain greedy continuation (L) */
    int n_prompt, wrong_at; /* wrong_at < 0: never wrong; >= 100: always wrong at 0 */
    int n_vocab;
    double sleep_s; /* per draft token: a drafter's own cost (0: none) */
} script;

static int scripted(void *ud, const int32_t *hist, int n_hist, int max, int32_t *out) {
    const script *s = ud;
    const int next = n_hist - s->n_prompt; /* index in G of the first draft */
    int d = 0;
    for (; d < max && next + d < L; d++) out[d] = s->G[next + d];
    if (s->wrong_at >= 0 && s->wrong_at < d) out[s->wrong_at] = (out[s->wrong_at] + 1) % s->n_vocab;
    if (s->sleep_s > 0.0 && d > 0) {
        const double t = s->sleep_s * d;
        struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
        while (nanosleep(&ts, &ts) != 0) {}
    }
    return d;
}

static tern_context *cctx(tern_model *m, int n_layer) {
    tern_context_params p = tern_context_default_params();
    p.n_ctx = 256;
    p.n_threads = 2;
    p.device = TERN_DEVICE_CPU;
    p.n_layer = n_layer;
    return tern_context_new_ex(m, &p);
}

/* spec_run's starting cost-gate state: a one-token pass time (s) as if already sampled (0: none) */
static double g_seed_t1;

/* Generate L tokens speculatively after the prompt; returns 1 if equal to G. *per_pass_ok: every pass
 * returned want_k(pass) tokens (when want_k >= 0). */
static int spec_run(tern_model *m, const int32_t *prompt, int np, const int32_t *G, tern_spec_params *sp,
                    int want_each, tern_spec_stats *ss, int *pass_ok) {
    tern_context *c = cctx(m, 0);
    int32_t hist[256], out[16];
    memcpy(hist, prompt, sizeof(int32_t) * (size_t)np);
    int32_t first;
    if (tern_eval_greedy(c, prompt, np, &first) != 0) { tern_context_free(c); return 0; }
    int nh = np;
    hist[nh++] = first;
    memset(ss, 0, sizeof *ss);
    if (g_seed_t1 > 0.0) {
        ss->n_pass[1] = 2;
        ss->t_pass[1] = g_seed_t1;
    }
    *pass_ok = 1;
    while (nh - np < L) {
        const int k = tern_spec_step(c, sp, hist, nh, out, 16, ss);
        if (k < 1) { *pass_ok = 0; break; }
        const int left = L - (nh - np);
        if (want_each > 0 && left > want_each && k != want_each) *pass_ok = 0;
        for (int i = 0; i < k && nh - np < L; i++) hist[nh++] = out[i];
        if (tern_context_n_past(c) != nh - 1 && nh - np < L) *pass_ok = 0;
    }
    tern_context_free(c);
    return memcmp(hist + np, G, sizeof(int32_t) * L) == 0;
}


/* Pearson chi-square of counts (n ids, total N) against probabilities p: ids with expected count >= 5
 * as their own bins, the rest pooled; *df = bins - 1. */
static double chi2(const long *cnt, const double *p, int n, long N, int *df) {
    double x = 0, pe = 0;
    long pc = 0;
    int bins = 0;
    for (int i = 0; i < n; i++) {
        const double e = p[i] * (double)N;
        if (e >= 5.0) { x += (cnt[i] - e) * (cnt[i] - e) / e; bins++; }
        else { pe += e; pc += cnt[i]; }
    }
    if (pe >= 5.0) { x += (pc - pe) * (pc - pe) / pe; bins++; }
    else if (pc > 0) x += 1e9; /* draws where (almost) no mass is: fail */
    *df = bins - 1;
    return x;
}

/* Chi-square critical value at p = 0.001 (Wilson-Hilferty: df (1 - 2/(9df) + z sqrt(2/(9df)))^3, z = 3.0902). */
static double chi2_crit(int df) {
    const double a = 2.0 / (9.0 * df);
    const double t = 1.0 - a + 3.0902 * sqrt(a);
    return df * t * t * t;
}

static void spec_sampling_stats(void) {
    enum { NV = 50, D = 3, NT = 40000 };
    float logits[(D + 1) * NV];
    uint64_t r = 12345;
    for (int i = 0; i < (D + 1) * NV; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        logits[i] = (float)((r >> 40) % 1000) / 250.0f; /* 0..4 */
    }
    tern_sampler_params sp = tern_sampler_default_params();
    sp.temp = 0.8f;
    sp.top_k = 0;
    sp.top_p = 0.97f;
    sp.min_p = 0.02f;
    sp.repeat_penalty = 1.3f;
    sp.repeat_last_n = 64;
    tern_sampler *s = tern_sampler_new(&sp, NV);
    tern_sampler_set_seed(s, 7);
    const int32_t hist[4] = {3, 17, 3, 41};
    double p0[NV], p1[NV], probs[NV], wrong[NV];
    CHECK(tern_sampler_probs(s, logits, hist, 4, p0) == 0, "probs");
    /* drafts: the most likely id first (kept often), then two arbitrary ones */
    int32_t draft[D] = {0, 5, 9};
    for (int i = 1; i < NV; i++) if (p0[i] > p0[draft[0]]) draft[0] = i;
    int32_t h1[5] = {3, 17, 3, 41, draft[0]};
    CHECK(tern_sampler_probs(s, logits + NV, h1, 5, p1) == 0, "probs row 1");
    long c0[NV] = {0}, c1[NV] = {0}, cp[NV] = {0}, n1 = 0;
    int32_t hx[4 + D], out[D + 1];
    int bad = 0;
    for (int t = 0; t < NT; t++) {
        const int k = tern_spec_sample_accept(s, logits, NV, hist, 4, draft, D, hx, probs, out);
        if (k < 1 || k > D + 1) { bad++; continue; }
        c0[out[0]]++;
        if (k >= 2) { c1[out[1]]++; n1++; } /* out[0] was the kept draft */
        cp[tern_sampler_sample(s, logits, hist, 4)]++;
    }
    CHECK(bad == 0, "%d trials failed", bad);
    int df0, df1, dfp, dfw;
    const double x0 = chi2(c0, p0, NV, NT, &df0), x1 = chi2(c1, p1, NV, n1, &df1), xp = chi2(cp, p0, NV, NT, &dfp);
    tern_sampler_params wp = sp;
    wp.temp = 1.6f;
    tern_sampler *ws = tern_sampler_new(&wp, NV);
    CHECK(tern_sampler_probs(ws, logits, hist, 4, wrong) == 0, "probs (wrong)");
    const double xw = chi2(c0, wrong, NV, NT, &dfw);
    CHECK(df0 > 3 && x0 < chi2_crit(df0), "first token: chi2 %.1f, df %d, critical %.1f", x0, df0, chi2_crit(df0));
    CHECK(df1 > 3 && n1 > 2000 && x1 < chi2_crit(df1), "second token given a kept draft: chi2 %.1f, df %d (n %ld), critical %.1f",
          x1, df1, n1, chi2_crit(df1));
    CHECK(xp < chi2_crit(dfp), "plain sampling vs tern_sampler_probs: chi2 %.1f, df %d", xp, dfp);
    CHECK(xw > chi2_crit(dfw), "power: against temperature 1.6 chi2 %.1f should exceed %.1f", xw, chi2_crit(dfw));
    printf("speculative sampling: chi2 first token %.1f (df %d, crit %.1f), second %.1f (df %d, n %ld), plain %.1f, "
           "wrong distribution %.1f\n", x0, df0, chi2_crit(df0), x1, df1, n1, xp, xw);
    tern_sampler_free(s);
    tern_sampler_free(ws);
}

/* tern_spec_choose_depth and tern_spec_cost on hand-computed cases. */
static void cost_gate_rules(void) {
    double lin[17], free_[17], half[17];
    for (int k = 0; k <= 16; k++) { lin[k] = k; free_[k] = 1.0; half[k] = 1.0 + 0.5 * (k - 1); }
    /* cost k: (1 + .. + a^d) / (d + 1) <= 1 for a <= 1, equal only at a = 1: never draft (ties go to 0) */
    CHECK(tern_spec_choose_depth(lin, 0.9, 0, 8) == 0 && tern_spec_choose_depth(lin, 1.0, 0, 8) == 0, "linear cost drafts");
    /* free passes: as deep as allowed for any a > 0; a = 0 ties everywhere: 0 */
    CHECK(tern_spec_choose_depth(free_, 0.05, 0, 8) == 8 && tern_spec_choose_depth(free_, 0.0, 0, 8) == 0, "free passes");
    /* 1 + (k - 1) / 2: a 0.4 -> G(1) 1.4 / 1.5 < 1: 0; a 0.6 -> G(1) 1.0667, G(2) 0.98: 1;
     * a 0.8 -> G(1) 1.2, G(2) 2.44 / 2 = 1.22, G(3) 2.952 / 2.5 = 1.181: 2 */
    CHECK(tern_spec_choose_depth(half, 0.4, 0, 8) == 0, "half cost, a 0.4: %d", tern_spec_choose_depth(half, 0.4, 0, 8));
    CHECK(tern_spec_choose_depth(half, 0.6, 0, 8) == 1, "half cost, a 0.6: %d", tern_spec_choose_depth(half, 0.6, 0, 8));
    CHECK(tern_spec_choose_depth(half, 0.8, 0, 8) == 2, "half cost, a 0.8: %d", tern_spec_choose_depth(half, 0.8, 0, 8));
    CHECK(tern_spec_choose_depth(half, 0.8, 0, 1) == 1, "half cost, a 0.8, at most 1");
    /* dmin (draft_min): a depth under it is no choice. a 0.6: the best allowed at dmin 2 is G(2) 0.98 < 1: 0;
     * a 0.8 at dmin 3: G(3) 1.181 > 1: 3 */
    CHECK(tern_spec_choose_depth(half, 0.6, 2, 8) == 0, "half cost, a 0.6, dmin 2: %d", tern_spec_choose_depth(half, 0.6, 2, 8));
    CHECK(tern_spec_choose_depth(half, 0.8, 3, 8) == 3, "half cost, a 0.8, dmin 3: %d", tern_spec_choose_depth(half, 0.8, 3, 8));
    {   /* a measured cost under one token's (noise) counts as 1; the extrapolation never goes below it */
        tern_spec_stats sn;
        memset(&sn, 0, sizeof sn);
        sn.n_pass[1] = 3; sn.t_pass[1] = 1.0;
        sn.n_pass[2] = 3; sn.t_pass[2] = 0.8;
        CHECK(tern_spec_cost(&sn, 2) == 1.0 && tern_spec_cost(&sn, 6) >= 1.0 && tern_spec_cost(&sn, 16) >= 1.0,
              "costs under 1: %g %g %g", tern_spec_cost(&sn, 2), tern_spec_cost(&sn, 6), tern_spec_cost(&sn, 16));
    }
    tern_spec_stats st;
    memset(&st, 0, sizeof st);
    /* nothing measured: the prior 1 + 0.15 (k - 1) */
    CHECK(fabs(tern_spec_cost(&st, 1) - 1.0) < 1e-12 && fabs(tern_spec_cost(&st, 5) - 1.6) < 1e-12, "cost prior");
    st.n_pass[1] = 3; st.t_pass[1] = 0.010;
    st.n_pass[3] = 2; st.t_pass[3] = 0.020;
    st.n_pass[9] = 4; st.t_pass[9] = 0.040;
    st.n_pass[6] = 1; st.t_pass[6] = 1.0; /* one sample: the dropped first one, not a measurement */
    const double want[][2] = {{3, 2.0}, {9, 4.0}, {2, 1.5}, {5, 2.0 + 2.0 * 2.0 / 6.0}, {6, 3.0},
                              /* past 9: slope (4 - 1) / 8 capped at the prior's 0.15 */
                              {12, 4.0 + 0.15 * 3}, {16, 4.0 + 0.15 * 7}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const double c = tern_spec_cost(&st, (int)want[i][0]);
        CHECK(fabs(c - want[i][1]) < 1e-9, "cost(%d) = %.6f, want %.6f", (int)want[i][0], c, want[i][1]);
    }
}

/* Prompt lookup under a cost gate that never drafts (pass costs preset 100x a token each): nothing is
 * verified, yet the unverified drafts are scored against the tokens that follow (the shadow). */
static void cost_gate_shadow(tern_model *m) {
    const char *text = "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. The quick";
    int32_t hist[256];
    const int np = tern_model_tokenize(m, text, strlen(text), tern_model_add_bos(m), 1, hist, 128);
    tern_context *c = cctx(m, 0);
    int n = np, ok = np > 0 && tern_eval(c, hist, np - 1, NULL, 0) == 0;
    tern_spec_params sp = tern_spec_default_params();
    sp.draft_max = 8;
    sp.cost_gate = 1;
    tern_spec_stats st;
    memset(&st, 0, sizeof st);
    st.n_pass[1] = 5;
    st.t_pass[1] = 1.0;
    for (int k = 2; k <= TERN_SPEC_MAX_DRAFT + 1; k++) { st.n_pass[k] = 5; st.t_pass[k] = 100.0 * k; }
    while (ok && n < np + 24) {
        int32_t out[16];
        const int k = tern_spec_step(c, &sp, hist, n, out, 16, &st);
        ok = k == 1;
        if (ok) hist[n++] = out[0];
    }
    double hit = 0, tries = 0;
    for (int key = 1; key <= 3; key++) { hit += st.acc_hit[key]; tries += st.acc_try[key]; }
    CHECK(ok && st.drafted == 0 && st.gated > 0, "shadow run: ok %d, drafted %lld, gated %lld", ok, (long long)st.drafted,
          (long long)st.gated);
    /* the model copies "brown fox" after "The quick" (hits), then departs from the text (misses) */
    CHECK(tries >= 4 && hit >= 1, "shadow: lookup drafts scored %.2f tries, %.2f hits", tries, hit);
    tern_context_free(c);
}

int main(void) {
    cost_gate_rules();
    tern_model *m = tern_model_load(MODEL, 0);
    CHECK(m != NULL, "load");
    if (!m) return check_summary("test_spec");
    const int V = tern_model_n_vocab(m);
    const char *text = "<|im_start|>user\nName three fruits and say why each is healthy.<|im_end|>\n<|im_start|>assistant\n";
    int32_t prompt[128], G[L];
    double t_decode = 0.0; /* one-token pass, seconds (the mean of L - 1) */
    const int np = tern_model_tokenize(m, text, strlen(text), tern_model_add_bos(m), 1, prompt, 128);
    /* plain greedy */
    {
        tern_context *c = cctx(m, 0);
        int32_t next;
        CHECK(tern_eval_greedy(c, prompt, np, &next) == 0, "prefill");
        const double t0 = tern_time_s();
        for (int i = 0; i < L; i++) {
            G[i] = next;
            if (i + 1 < L) CHECK(tern_eval_greedy(c, &G[i], 1, &next) == 0, "decode");
        }
        t_decode = (tern_time_s() - t0) / (L - 1);
        tern_context_free(c);
    }
    script sc = {G, np, -1, V, 0.0};
    tern_spec_params sp = tern_spec_default_params();
    sp.draft_fn = scripted;
    sp.draft_ud = &sc;
    sp.draft_max = 8;
    tern_spec_stats ss;
    int pass_ok;
    /* rejection at every position */
    for (int j = 0; j < 8; j++) {
        sc.wrong_at = j;
        const int same = spec_run(m, prompt, np, G, &sp, j + 1, &ss, &pass_ok);
        CHECK(same, "wrong draft at %d: output differs from plain greedy", j);
        CHECK(pass_ok, "wrong draft at %d: a pass did not accept exactly %d drafts (or the cache length is off)", j, j);
        CHECK(ss.accepted == (int64_t)j * (ss.passes - 1) || ss.accepted <= (int64_t)j * ss.passes,
              "wrong at %d: %lld accepted in %lld passes", j, (long long)ss.accepted, (long long)ss.passes);
    }
    /* always right / always wrong */
    sc.wrong_at = -1;
    CHECK(spec_run(m, prompt, np, G, &sp, 9, &ss, &pass_ok) && pass_ok, "always-right drafter");
    CHECK(ss.accepted == ss.drafted && ss.passes <= (L + 8) / 9 + 1, "always right: %lld of %lld accepted in %lld passes",
          (long long)ss.accepted, (long long)ss.drafted, (long long)ss.passes);
    sc.wrong_at = 0;
    CHECK(spec_run(m, prompt, np, G, &sp, 1, &ss, &pass_ok) && pass_ok && ss.accepted == 0, "always-wrong drafter");
    /* the gate: always wrong with min_accept pauses drafting */
    sp.min_accept = 0.25f;
    CHECK(spec_run(m, prompt, np, G, &sp, 1, &ss, &pass_ok) && ss.gated > 0, "gate never paused (gated %lld)",
          (long long)ss.gated);
    sp.min_accept = 0.0f;
    /* the cost gate on the model (measured pass times): always wrong drafts stop, always right ones go on */
    sp.cost_gate = 1;
    sc.wrong_at = 0;
    sc.sleep_s = 2.0 * t_decode;
    CHECK(spec_run(m, prompt, np, G, &sp, -1, &ss, &pass_ok) && pass_ok, "cost gate, always wrong: output differs");
    sc.sleep_s = 0.0;
    printf("cost gate, always wrong: one-token pass %.2f ms (plain %.2f ms); cost of 2 / 3 tokens %.2f / %.2f; "
           "%lld drafted, %lld gated in %lld passes\n", ss.t_pass[1] * 1e3, t_decode * 1e3, tern_spec_cost(&ss, 2),
           tern_spec_cost(&ss, 3), (long long)ss.drafted, (long long)ss.gated, (long long)ss.passes);
    CHECK(ss.accepted == 0 && ss.gated > 0 && ss.drafted < ss.passes,
          "cost gate, always wrong: %lld drafted, %lld accepted, %lld gated in %lld passes", (long long)ss.drafted,
          (long long)ss.accepted, (long long)ss.gated, (long long)ss.passes);
    CHECK(ss.n_pass[1] >= 2 && ss.t_pass[1] > 0.0, "cost gate: one-token passes not timed (%d)", ss.n_pass[1]);
    /* a one-token time 10x too slow (a sample taken while the host was busy): the drafted passes time
     * faster than it, so the gate re-measures it and stops drafting (the old code drafted every pass) */
    g_seed_t1 = 10.0 * t_decode;
    sc.wrong_at = 0;
    sc.sleep_s = 2.0 * t_decode;
    CHECK(spec_run(m, prompt, np, G, &sp, -1, &ss, &pass_ok) && pass_ok, "cost gate, slow one-token seed: output differs");
    sc.sleep_s = 0.0;
    g_seed_t1 = 0.0;
    printf("cost gate, one-token time seeded at %.2f ms: now %.2f ms (%d samples, %d re-measures), cost of 2 / 3 tokens "
           "%.2f / %.2f; %lld drafted, %lld gated in %lld passes\n", 10e3 * t_decode, ss.t_pass[1] * 1e3, ss.n_pass[1],
           ss.t1_remeasures, tern_spec_cost(&ss, 2), tern_spec_cost(&ss, 3), (long long)ss.drafted,
           (long long)ss.gated, (long long)ss.passes);
    /* "re-measured": off the seed (10x) by a margin a loaded host still keeps (a CI trial sharing 2 cores with two
     * compilers re-measured 25.2 ms against a 4.47 ms plain step: 5.6x, which the old bound of 5x failed) */
    CHECK(ss.t1_remeasures >= 1 && ss.t_pass[1] < 7.5 * t_decode && ss.n_pass[1] > 2 && ss.accepted == 0 &&
              2 * ss.gated >= ss.passes && ss.drafted < ss.passes,
          "cost gate, one-token time seeded 10x: not re-measured (%.2f ms, plain %.2f) or kept drafting (%lld drafted, "
          "%lld gated in %lld passes)", ss.t_pass[1] * 1e3, t_decode * 1e3, (long long)ss.drafted, (long long)ss.gated,
          (long long)ss.passes);
    sc.wrong_at = -1;
    CHECK(spec_run(m, prompt, np, G, &sp, -1, &ss, &pass_ok) && pass_ok, "cost gate, always right: output differs");
    CHECK(ss.drafted > 0 && ss.accepted == ss.drafted && ss.passes < L,
          "cost gate, always right: %lld of %lld accepted in %lld passes", (long long)ss.accepted,
          (long long)ss.drafted, (long long)ss.passes);
    sp.cost_gate = 0;
    sp.draft_fn = NULL;
    cost_gate_shadow(m);
    /* model drafters: itself (all accepted) and its first 12 layers */
    for (int k = 0; k < 2; k++) {
        tern_context *dc = cctx(m, k ? 12 : 0);
        sp.draft = dc;
        sp.draft_max = 4;
        const int same = spec_run(m, prompt, np, G, &sp, k ? -1 : 5, &ss, &pass_ok);
        CHECK(same, "%s drafter: output differs", k ? "first-layers" : "self");
        if (!k) CHECK(pass_ok && ss.accepted == ss.drafted, "self drafter: %lld of %lld accepted", (long long)ss.accepted,
                      (long long)ss.drafted);
        tern_context_free(dc);
    }
    sp.draft = NULL;
    /* speculative sampling: statistics, then tern_spec_step with a sampler on the model */
    spec_sampling_stats();
    {
        tern_sampler_params smp_p = tern_sampler_default_params();
        smp_p.temp = 0.7f;
        tern_sampler *smp = tern_sampler_new(&smp_p, V);
        tern_sampler_set_seed(smp, 11);
        sc.wrong_at = 2;
        sp.draft_fn = scripted;
        sp.draft_ud = &sc;
        sp.draft_max = 4;
        sp.sampler = smp;
        tern_context *c = cctx(m, 0);
        int32_t hist[128 + L + 8];
        memcpy(hist, prompt, sizeof(int32_t) * (size_t)np);
        int n_hist = np, ok = tern_eval(c, prompt, np - 1, NULL, 0) == 0;
        tern_spec_stats st;
        memset(&st, 0, sizeof st);
        while (ok && n_hist < np + 32) {
            int32_t out[8];
            const int k = tern_spec_step(c, &sp, hist, n_hist, out, 8, &st);
            ok = k >= 1 && k <= 5;
            for (int i = 0; ok && i < k; i++) ok = out[i] >= 0 && out[i] < V;
            if (ok) { memcpy(hist + n_hist, out, sizeof(int32_t) * (size_t)k); n_hist += k; }
            ok = ok && tern_context_n_past(c) == n_hist - 1;
        }
        CHECK(ok, "tern_spec_step with a sampler: %s", tern_last_error());
        CHECK(st.passes > 0 && st.drafted > 0, "sampling passes %lld, drafted %lld", (long long)st.passes, (long long)st.drafted);
        tern_context_free(c);
        tern_sampler_free(smp);
        sp.sampler = NULL;
        sp.draft_fn = NULL;
    }
    tern_model_free(m);
    return check_summary("test_spec");
}
