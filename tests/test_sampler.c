/* test_sampler.c: the sampling chain of src/runtime/sampler.h against hand-computed distributions.
 * Statistical checks use fixed seeds, so they are deterministic; their tolerances (a few sigma) are
 * what a correct sampler passes for almost every seed, so a failure after an RNG change means a real
 * mismatch, not bad luck, unless it is marginal. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sampler.h"
#include "util.h"

/* Test-local generator for logits (independent of the sampler's RNG). */
static uint64_t t_state = 12345;
static double t_uniform(void) {
    t_state = t_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(t_state >> 11) * 0x1.0p-53;
}
static void fill_random(float *l, int n, float scale) {
    for (int i = 0; i < n; i++) l[i] = (float)((t_uniform() * 2.0 - 1.0) * scale);
}

static tern_sampler_params plain_params(float temp, uint64_t seed) {
    tern_sampler_params p = tern_sampler_default_params();
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.seed = seed;
    return p;
}

/* Draw n_draws ids from logits (n) with p and count them into counts (n). Returns the number of
 * draws that returned an out-of-range id. */
static int draw_counts(const tern_sampler_params *p, const float *logits, int n, int n_draws, long *counts) {
    tern_sampler *s = tern_sampler_new(p, n);
    if (!s) return n_draws;
    int bad = 0;
    memset(counts, 0, (size_t)n * sizeof *counts);
    for (int i = 0; i < n_draws; i++) {
        int32_t id = tern_sampler_sample(s, logits, NULL, 0);
        if (id < 0 || id >= n) bad++; else counts[id]++;
    }
    tern_sampler_free(s);
    return bad;
}

/* Expected probabilities in double: softmax(logits / temp) restricted to keep[i] != 0. */
static void softmax_ref(const float *l, const int *keep, int n, double temp, double *out) {
    double mx = -INFINITY, z = 0.0;
    for (int i = 0; i < n; i++) if (keep[i] && l[i] > mx) mx = l[i];
    for (int i = 0; i < n; i++) z += (out[i] = keep[i] ? exp((l[i] - mx) / temp) : 0.0);
    for (int i = 0; i < n; i++) out[i] /= z;
}

/* Each count within 4.5 sigma (binomial) of n_draws * prob, and zero where prob is zero. */
static void check_freqs(const char *what, const long *counts, const double *prob, int n, int n_draws) {
    for (int i = 0; i < n; i++) {
        double mean = n_draws * prob[i];
        double sd = sqrt(n_draws * prob[i] * (1.0 - prob[i]));
        if (prob[i] == 0.0)
            CHECK(counts[i] == 0, "%s: id %d excluded but drawn %ld times", what, i, counts[i]);
        else
            CHECK(fabs((double)counts[i] - mean) <= 4.5 * sd + 1.0, "%s: id %d drawn %ld times, expected %.1f +- %.1f",
                  what, i, counts[i], mean, sd);
    }
}

static void test_argmax(void) {
    float a[] = {1.0f, 3.0f, -2.0f, 3.0f, 2.9f};
    CHECK(tern_argmax(a, 5) == 1, "argmax with tie -> lowest id, got %d", tern_argmax(a, 5));
    float b[] = {NAN, -1.0f, NAN, -0.5f};
    CHECK(tern_argmax(b, 4) == 3, "NaN skipped, got %d", tern_argmax(b, 4));
    float c[] = {NAN, NAN};
    CHECK(tern_argmax(c, 2) == 0, "all NaN -> 0, got %d", tern_argmax(c, 2));
    float d[] = {-INFINITY, -INFINITY, -5.0f};
    CHECK(tern_argmax(d, 3) == 2, "-inf loses, got %d", tern_argmax(d, 3));
    float e[] = {INFINITY, 1.0f, INFINITY};
    CHECK(tern_argmax(e, 3) == 0, "+inf tie -> lowest, got %d", tern_argmax(e, 3));
}

static void test_greedy(void) {
    enum { N = 5000 };
    static float l[N];
    fill_random(l, N, 5.0f);
    l[1234] = 7.0f;
    l[4000] = 7.0f;  /* tie: 1234 must win */
    l[10] = NAN;
    float temps[] = {0.0f, -1.0f};
    for (int t = 0; t < 2; t++) {
        tern_sampler_params p = tern_sampler_default_params();
        p.temp = temps[t];
        tern_sampler *s = tern_sampler_new(&p, N);
        CHECK(s != NULL, "greedy sampler: %s", tern_last_error());
        if (!s) continue;
        for (int i = 0; i < 3; i++) {
            int32_t id = tern_sampler_sample(s, l, NULL, 0);
            CHECK(id == 1234, "greedy temp %g picks the max (lowest id on tie), got %d", (double)temps[t], id);
        }
        float allnan[3] = {NAN, NAN, NAN};
        tern_sampler *s3 = tern_sampler_new(&p, 3);
        CHECK(tern_sampler_sample(s3, allnan, NULL, 0) == -1, "all-NaN logits -> -1");
        tern_sampler_free(s3);
        tern_sampler_free(s);
    }
    /* NaN at the front must not be picked. */
    float f[] = {NAN, 0.5f, 0.25f};
    tern_sampler_params p = plain_params(0.0f, 0);
    tern_sampler *s = tern_sampler_new(&p, 3);
    CHECK(tern_sampler_sample(s, f, NULL, 0) == 1, "greedy skips NaN");
    tern_sampler_free(s);
}

static void test_top_k1_is_greedy(void) {
    enum { N = 3000 };
    static float l[N];
    float temps[] = {0.1f, 1.0f, 5.0f, 100.0f};
    for (int rep = 0; rep < 20; rep++) {
        fill_random(l, N, 3.0f);
        int32_t want = tern_argmax(l, N);
        for (int t = 0; t < 4; t++) {
            tern_sampler_params p = tern_sampler_default_params();
            p.temp = temps[t];
            p.top_k = 1;
            p.seed = (uint64_t)rep * 7 + (uint64_t)t;
            tern_sampler *s = tern_sampler_new(&p, N);
            int32_t got = tern_sampler_sample(s, l, NULL, 0);
            CHECK(got == want, "top_k=1 temp %g: got %d want argmax %d", (double)temps[t], got, want);
            tern_sampler_free(s);
        }
    }
}

static void test_seed(void) {
    enum { N = 32000, T = 300 };
    static float l[N];
    static int32_t a[T], b[T], c[T], d[T];
    fill_random(l, N, 4.0f);
    tern_sampler_params p = tern_sampler_default_params();  /* temp 0.8, top-k 40, top-p .95, min-p .05 */
    p.top_k = 0;
    p.min_p = 0.0f;
    p.top_p = 0.99f;  /* a wide nucleus so different seeds have room to differ */
    p.seed = 42;
    tern_sampler *s1 = tern_sampler_new(&p, N), *s2 = tern_sampler_new(&p, N);
    p.seed = 43;
    tern_sampler *s3 = tern_sampler_new(&p, N);
    for (int i = 0; i < T; i++) {
        a[i] = tern_sampler_sample(s1, l, NULL, 0);
        b[i] = tern_sampler_sample(s2, l, NULL, 0);
        c[i] = tern_sampler_sample(s3, l, NULL, 0);
    }
    tern_sampler_set_seed(s1, 42);
    for (int i = 0; i < T; i++) d[i] = tern_sampler_sample(s1, l, NULL, 0);
    CHECK(memcmp(a, b, sizeof a) == 0, "same seed -> same sequence");
    CHECK(memcmp(a, d, sizeof a) == 0, "set_seed(42) replays the sequence");
    int same = 0;
    for (int i = 0; i < T; i++) same += a[i] == c[i];
    CHECK(same < T / 2, "seeds 42 and 43 agree on %d of %d draws", same, T);
    tern_sampler_free(s1);
    tern_sampler_free(s2);
    tern_sampler_free(s3);

    /* Portability golden: with 1000 equal logits every weight is exactly 1.0, so the id is
     * floor(u * 1000) and depends only on the RNG (xoshiro256** seeded by splitmix64(7)), not on
     * libm. The ids agree with an independent Python transcription of splitmix64/xoshiro256**
     * (https://prng.di.unimi.it/); any machine must reproduce them. */
    static float flat[1000];
    tern_sampler_params q = plain_params(1.0f, 7);
    tern_sampler *s = tern_sampler_new(&q, 1000);
    static const int32_t golden[8] = {700, 278, 839, 981, 990, 872, 60, 104};
    int32_t got[8];
    for (int i = 0; i < 8; i++) got[i] = tern_sampler_sample(s, flat, NULL, 0);
    CHECK(memcmp(got, golden, sizeof got) == 0, "RNG golden: got %d %d %d %d %d %d %d %d", got[0], got[1], got[2],
          got[3], got[4], got[5], got[6], got[7]);
    tern_sampler_free(s);
}

static void test_frequencies(void) {
    enum { N = 4, D = 20000 };
    const float l[N] = {1.0f, 2.0f, 0.5f, -1.0f};
    const int all[N] = {1, 1, 1, 1};
    long counts[N];
    double prob[N];

    tern_sampler_params p = plain_params(1.0f, 1);
    CHECK(draw_counts(&p, l, N, D, counts) == 0, "temp 1: ids in range");
    softmax_ref(l, all, N, 1.0, prob);
    check_freqs("temp 1", counts, prob, N, D);

    p = plain_params(0.6f, 2);
    CHECK(draw_counts(&p, l, N, D, counts) == 0, "temp 0.6: ids in range");
    softmax_ref(l, all, N, 0.6, prob);
    check_freqs("temp 0.6", counts, prob, N, D);

    p = plain_params(1.5f, 3);
    p.top_k = 2;  /* keeps ids 1 and 0, renormalised at temp 1.5 */
    const int top2[N] = {1, 1, 0, 0};
    CHECK(draw_counts(&p, l, N, D, counts) == 0, "top-k 2: ids in range");
    softmax_ref(l, top2, N, 1.5, prob);
    check_freqs("top-k 2, temp 1.5", counts, prob, N, D);
}

/* Probabilities 0.5, 0.25, 0.15, 0.07, 0.03 placed at shuffled ids. */
static const int HP_ID[5] = {3, 0, 4, 1, 2};
static const double HP_P[5] = {0.5, 0.25, 0.15, 0.07, 0.03};
static void hand_logits(float *l) {
    for (int r = 0; r < 5; r++) l[HP_ID[r]] = (float)log(HP_P[r]) + 1.7f;  /* shift: softmax-invariant */
}

static void test_top_p_min_p_hand(void) {
    enum { N = 5, D = 20000 };
    float l[N];
    hand_logits(l);
    long counts[N];
    double prob[N];
    struct {
        const char *what;
        float top_p, min_p;
        int top_k;
        int n_keep;  /* the n_keep most likely ranks survive */
    } cases[] = {
        /* top-p: cumulative 0.5, 0.75, 0.90, 0.97, 1.0 -> shortest prefix reaching top_p */
        {"top_p 0.4", 0.40f, 0.0f, 0, 1},
        {"top_p 0.7", 0.70f, 0.0f, 0, 2},
        {"top_p 0.8", 0.80f, 0.0f, 0, 3},
        {"top_p 0.95", 0.95f, 0.0f, 0, 4},
        {"top_p 0.8 after top_k 4", 0.80f, 0.0f, 4, 3},
        /* top-p over the top-k survivors renormalised: 0.5/0.97, 0.75/0.97 = 0.773 -> 2 kept at 0.76 */
        {"top_p 0.76 after top_k 4", 0.76f, 0.0f, 4, 2},
        /* min-p: keep p >= min_p * 0.5 */
        {"min_p 0.2", 1.0f, 0.20f, 0, 3},   /* >= 0.10 */
        {"min_p 0.4", 1.0f, 0.40f, 0, 2},   /* >= 0.20 */
        {"min_p 0.1", 1.0f, 0.10f, 0, 4},   /* >= 0.05 */
        {"min_p 0.1 after top_k 3", 1.0f, 0.10f, 3, 3},
        {"min_p 0.9", 1.0f, 0.90f, 0, 1},
        /* both: top_p 0.95 keeps 4, then min_p 0.2 keeps p >= 0.1 of those -> 3 */
        {"top_p 0.95 + min_p 0.2", 0.95f, 0.20f, 0, 3},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tern_sampler_params p = plain_params(1.0f, 100 + c);
        p.top_p = cases[c].top_p;
        p.min_p = cases[c].min_p;
        p.top_k = cases[c].top_k;
        int keep[N] = {0};
        for (int r = 0; r < cases[c].n_keep; r++) keep[HP_ID[r]] = 1;
        CHECK(draw_counts(&p, l, N, D, counts) == 0, "%s: ids in range", cases[c].what);
        softmax_ref(l, keep, N, 1.0, prob);
        check_freqs(cases[c].what, counts, prob, N, D);
        for (int i = 0; i < N; i++)
            if (keep[i]) CHECK(counts[i] > 0, "%s: kept id %d never drawn", cases[c].what, i);
    }

    /* Temperature comes after top-p/min-p: a hot temperature flattens the survivors but cannot bring
     * back what top-p removed. */
    tern_sampler_params p = plain_params(50.0f, 9);
    p.top_p = 0.7f;
    int keep[N] = {0};
    keep[HP_ID[0]] = keep[HP_ID[1]] = 1;
    draw_counts(&p, l, N, D, counts);
    softmax_ref(l, keep, N, 50.0, prob);
    check_freqs("top_p 0.7 then temp 50", counts, prob, N, D);
}

/* Top-p on a large vocabulary: the histogram pre-filter + radix sort path (top_k off) must give
 * exactly the same draws as the heap path. To give both the same survivors and the same softmax
 * denominator, the vocabulary gets one extra id at -inf (weight 0) and the heap path uses
 * top_k = n_vocab - 1, which drops exactly that id. Every draw must lie in the nucleus computed here
 * by a full sort in double. */
static int cmp_desc_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

static void test_top_p_large(void) {
    enum { N = 50000, T = 400 };
    static float l[N + 1], sorted[N];
    float scales[] = {1.0f, 8.0f, 40.0f};
    float tops[] = {0.5f, 0.9f, 0.99f};
    for (int sc = 0; sc < 3; sc++) {
        fill_random(l, N, scales[sc]);
        l[N] = -INFINITY;
        for (int tp = 0; tp < 3; tp++) {
            /* nucleus threshold: the logit of the last id kept by a full sort */
            memcpy(sorted, l, sizeof sorted);
            qsort(sorted, N, sizeof(float), cmp_desc_f);
            double z = 0.0, acc = 0.0;
            for (int i = 0; i < N; i++) z += exp((double)sorted[i] - sorted[0]);
            float thr = sorted[N - 1];
            int n_nuc = N;
            for (int i = 0; i < N; i++) {
                acc += exp((double)sorted[i] - sorted[0]);
                if (acc >= tops[tp] * z) { thr = sorted[i]; n_nuc = i + 1; break; }
            }
            tern_sampler_params p = plain_params(1.0f, 5);
            p.top_p = tops[tp];
            tern_sampler *a = tern_sampler_new(&p, N + 1);
            p.top_k = N;
            tern_sampler *b = tern_sampler_new(&p, N + 1);
            int differ = 0, outside = 0;
            for (int i = 0; i < T; i++) {
                int32_t x = tern_sampler_sample(a, l, NULL, 0), y = tern_sampler_sample(b, l, NULL, 0);
                differ += x != y;
                outside += x < 0 || l[x] < thr;
            }
            CHECK(differ == 0, "scale %g top_p %g: pre-filter and heap paths differ on %d draws", (double)scales[sc],
                  (double)tops[tp], differ);
            CHECK(outside == 0, "scale %g top_p %g: %d draws outside the %d-id nucleus", (double)scales[sc],
                  (double)tops[tp], outside, n_nuc);
            tern_sampler_free(a);
            tern_sampler_free(b);
        }
    }
}

static void test_repeat_penalty(void) {
    enum { N = 10 };
    const float base[N] = {2.0f, -1.0f, 0.0f, 3.0f, -4.0f, 1.5f, 0.5f, -0.5f, 6.0f, 1.0f};
    tern_sampler_params p = plain_params(0.0f, 0);
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 6;
    tern_sampler *s = tern_sampler_new(&p, N);
    /* window = last 6: {3, 3, 1, 2, 99, 5}; 8 and 0 fall before it; 99 and -1 are out of range. */
    const int32_t hist[] = {8, 0, -1, 3, 3, 1, 2, 99, 5};
    float l[N];
    memcpy(l, base, sizeof l);
    tern_sampler_penalize(s, l, hist, 9);
    float want[N];
    memcpy(want, base, sizeof want);
    want[3] = 3.0f / 2.0f;   /* positive: divided, once although it occurs twice */
    want[1] = -1.0f * 2.0f;  /* negative: multiplied */
    want[2] = 0.0f;          /* zero: 0 * 2 */
    want[5] = 1.5f / 2.0f;
    for (int i = 0; i < N; i++) CHECK(l[i] == want[i], "penalty id %d: %g want %g", i, (double)l[i], (double)want[i]);

    /* Penalty 1 / last_n 0 leave the logits untouched. */
    p.repeat_last_n = 0;
    tern_sampler *s0 = tern_sampler_new(&p, N);
    memcpy(l, base, sizeof l);
    tern_sampler_penalize(s0, l, hist, 9);
    CHECK(memcmp(l, base, sizeof l) == 0, "repeat_last_n 0 is off");
    tern_sampler_free(s0);

    /* -1: the whole history, so 8 is penalised too (6 -> 3) but still the max; 0 (2 -> 1). */
    p.repeat_last_n = -1;
    tern_sampler *sa = tern_sampler_new(&p, N);
    memcpy(l, base, sizeof l);
    tern_sampler_penalize(sa, l, hist, 9);
    CHECK(l[8] == 3.0f && l[0] == 1.0f && l[3] == 1.5f, "repeat_last_n -1 covers the whole history");
    tern_sampler_free(sa);

    /* Through the sampler: greedy on penalised logits, input not modified. 8 is the max (6); a
     * penalty of 5 with 8 in the window makes 3 (3.0) the max. */
    p.repeat_penalty = 5.0f;
    p.repeat_last_n = 4;
    tern_sampler *sg = tern_sampler_new(&p, N);
    const int32_t h2[] = {8, 1};
    memcpy(l, base, sizeof l);
    CHECK(tern_sampler_sample(sg, l, h2, 2) == 3, "penalised max loses the argmax");
    CHECK(memcmp(l, base, sizeof l) == 0, "sample does not modify logits");
    CHECK(tern_sampler_sample(sg, l, NULL, 0) == 8, "no history: no penalty");
    tern_sampler_free(sg);
    tern_sampler_free(s);

    /* The seen marks are cleared between calls: penalising twice in a row applies twice. */
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 64;
    tern_sampler *st = tern_sampler_new(&p, N);
    const int32_t h3[] = {3, 3};
    memcpy(l, base, sizeof l);
    tern_sampler_penalize(st, l, h3, 2);
    tern_sampler_penalize(st, l, h3, 2);
    CHECK(l[3] == 0.75f, "two calls -> two penalties (%g)", (double)l[3]);
    tern_sampler_free(st);
}

static void test_nan_logits(void) {
    enum { N = 64, D = 4000 };
    float l[N];
    for (int i = 0; i < N; i++) l[i] = (i % 3 == 0) ? NAN : 0.0f;
    long counts[N];
    tern_sampler_params p = plain_params(1.0f, 11);
    CHECK(draw_counts(&p, l, N, D, counts) == 0, "NaN logits: ids in range");
    long nan_draws = 0;
    for (int i = 0; i < N; i += 3) nan_draws += counts[i];
    CHECK(nan_draws == 0, "NaN ids drawn %ld times", nan_draws);
    p.top_k = 5;
    CHECK(draw_counts(&p, l, N, D, counts) == 0, "NaN with top-k: ids in range");
    nan_draws = 0;
    for (int i = 0; i < N; i += 3) nan_draws += counts[i];
    CHECK(nan_draws == 0, "NaN ids drawn %ld times under top-k", nan_draws);
    /* -inf ids are never drawn while a finite one exists */
    float m[4] = {-INFINITY, 0.0f, -INFINITY, 1.0f};
    p = plain_params(1.0f, 12);
    draw_counts(&p, m, 4, D, counts);
    CHECK(counts[0] == 0 && counts[2] == 0, "-inf drawn");
}

/* Issue 28 (fuzzing): top-p with top-k off and a largest logit of ~1e16 or more. The nucleus cut-off
 * max - 1 rounded to max in double and dropped every candidate (the chain kept 0 ids, all weights zero,
 * id 0 returned). Whatever the scale, the draw must come from the kept set: here only the max survives
 * top-p 0.95 (its probability is 1), so every draw is the argmax. */
static void test_huge_logits(void) {
    static const float scales[] = {1e6f, 1e15f, 1e16f, 1e20f, 3e38f};
    for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
        float l[3] = {-1.0f, 0.5f, scales[k]};
        for (int top_k = 0; top_k <= 2; top_k += 2) {
            tern_sampler_params p = plain_params(0.8f, 5);
            p.top_k = top_k;
            p.top_p = 0.95f;
            tern_sampler *s = tern_sampler_new(&p, 3);
            int bad = 0;
            for (int i = 0; i < 50; i++) bad += tern_sampler_sample(s, l, NULL, 0) != 2;
            CHECK(bad == 0, "max logit %g, top_k %d, top_p 0.95: %d of 50 draws not the argmax", (double)scales[k],
                  top_k, bad);
            double pr[3];
            CHECK(tern_sampler_probs(s, l, NULL, 0, pr) == 0 && pr[2] == 1.0, "probs of the max %g at %g",
                  pr[2], (double)scales[k]);
            tern_sampler_free(s);
        }
    }
    /* the CLI's route to it: a tiny repeat penalty turns a penalised positive logit into ~1e31; the
     * penalised id (the only one in the history) must be the one drawn, never a stale candidate */
    float l[4] = {0.2f, 3.0f, 1.0f, -2.0f};
    tern_sampler_params p = plain_params(0.8f, 9);
    p.top_k = 0;
    p.top_p = 0.95f;
    p.repeat_penalty = 1e-30f;
    tern_sampler *s = tern_sampler_new(&p, 4);
    const int32_t hist[1] = {2};
    int bad = 0;
    for (int i = 0; i < 50; i++) bad += tern_sampler_sample(s, l, hist, 1) != 2;
    CHECK(bad == 0, "repeat penalty 1e-30: %d of 50 draws not the boosted id", bad);
    tern_sampler_free(s);
}

static void test_bad_params(void) {
    enum { TEMP, TOP_P, MIN_P, PEN, LAST_N };
    struct {
        int field;
        float v;
        int ok;
    } cases[] = {
        {TOP_P, 0.0f, 0},     {TOP_P, -0.5f, 0},   {TOP_P, NAN, 0},      {TOP_P, 1.0f, 1},  {TOP_P, 1.5f, 1},
        {TEMP, NAN, 0},       {TEMP, INFINITY, 0}, {TEMP, -INFINITY, 0}, {TEMP, -1.0f, 1},  {TEMP, 0.0f, 1},
        {MIN_P, NAN, 0},      {MIN_P, 1.5f, 0},    {MIN_P, 1.0f, 1},     {MIN_P, -1.0f, 1}, {PEN, 0.0f, 0},
        {PEN, -1.0f, 0},      {PEN, NAN, 0},       {PEN, INFINITY, 0},   {PEN, 1.3f, 1},    {LAST_N, -2.0f, 0},
        {LAST_N, -1.0f, 1},
    };
    static const char *names[] = {"temp", "top_p", "min_p", "repeat_penalty", "repeat_last_n"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tern_sampler_params p = tern_sampler_default_params();
        switch (cases[c].field) {
        case TEMP: p.temp = cases[c].v; break;
        case TOP_P: p.top_p = cases[c].v; break;
        case MIN_P: p.min_p = cases[c].v; break;
        case PEN: p.repeat_penalty = cases[c].v; break;
        case LAST_N: p.repeat_last_n = (int)cases[c].v; break;
        }
        tern_set_error("%s", "");
        tern_sampler *s = tern_sampler_new(&p, 100);
        if (cases[c].ok) {
            CHECK(s != NULL, "%s = %g should be accepted: %s", names[cases[c].field], (double)cases[c].v,
                  tern_last_error());
        } else {
            CHECK(s == NULL, "%s = %g should be rejected", names[cases[c].field], (double)cases[c].v);
            CHECK(tern_last_error()[0] != '\0', "%s = %g: no error message", names[cases[c].field], (double)cases[c].v);
        }
        tern_sampler_free(s);
    }
    tern_sampler_params p = tern_sampler_default_params();
    CHECK(tern_sampler_new(&p, 0) == NULL, "n_vocab 0 rejected");
    CHECK(tern_sampler_new(NULL, 10) == NULL, "NULL params rejected");
    tern_sampler *s = tern_sampler_new(&p, 10);
    CHECK(tern_sampler_sample(s, NULL, NULL, 0) == -1, "NULL logits -> -1");
    tern_sampler_free(s);
}

/* Not a benchmark harness, just a guard that the chain is not accidentally O(n log n) per token for
 * the default parameters: prints microseconds per sample at a 256k vocabulary. */
static void report_speed(void) {
    enum { N = 256000, T = 50 };
    float *l = tern_xmalloc(N * sizeof *l);
    fill_random(l, N, 10.0f);
    struct {
        const char *what;
        int top_k;
        float top_p, min_p;
    } cfg[] = {
        {"defaults (top-k 40, top-p .95, min-p .05)", 40, 0.95f, 0.05f},
        {"top-p .95 only", 0, 0.95f, 0.0f},
        {"temp only", 0, 1.0f, 0.0f},
    };
    for (int c = 0; c < 3; c++) {
        tern_sampler_params p = plain_params(0.8f, 1);
        p.top_k = cfg[c].top_k;
        p.top_p = cfg[c].top_p;
        p.min_p = cfg[c].min_p;
        tern_sampler *s = tern_sampler_new(&p, N);
        double t0 = tern_time_s();
        int32_t sum = 0;
        for (int i = 0; i < T; i++) sum += tern_sampler_sample(s, l, NULL, 0);
        double us = (tern_time_s() - t0) / T * 1e6;
        printf("sampler n_vocab %d, %s: %.0f us/sample (checksum %d)\n", N, cfg[c].what, us, (int)sum);
        tern_sampler_free(s);
    }
    free(l);
}

int main(void) {
    test_argmax();
    test_greedy();
    test_top_k1_is_greedy();
    test_seed();
    test_frequencies();
    test_top_p_min_p_hand();
    test_top_p_large();
    test_repeat_penalty();
    test_nan_logits();
    test_bad_params();
    test_huge_logits();
    report_speed();
    return check_summary("test_sampler");
}
