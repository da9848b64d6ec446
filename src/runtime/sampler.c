/* sampler.c: the sampling chain of sampler.h.
 *
 * Semantics follow llama.cpp's default CLI chain (penalties -> top-k -> top-p -> min-p -> temp -> dist),
 * re-derived here, not copied:
 *   - repeat penalty: every distinct id among the last repeat_last_n history entries gets
 *     logit > 0 ? logit / penalty : logit * penalty (applied once per id however often it occurs).
 *   - top-k: keep the k largest logits. Ties are broken towards the lower id so the result does not
 *     depend on the sort implementation (llama.cpp leaves tie order to std::partial_sort).
 *   - top-p: softmax at temperature 1 over the survivors, keep the shortest highest-first prefix whose
 *     cumulative probability is >= top_p.
 *   - min-p: keep ids with logit >= max_logit + ln(min_p), i.e. p_i >= min_p * p_max (temperature 1).
 *   - temperature: divide the survivors' logits by temp, softmax, draw one id.
 * Top-p and min-p therefore see untempered probabilities, as in llama.cpp's default chain.
 * At temp <= 0 the penalty is applied and then argmax is taken (the filters cannot remove the argmax,
 * so they are skipped).
 *
 * Portability: the RNG is xoshiro256** seeded by splitmix64 (Blackman & Vigna,
 * https://prng.di.unimi.it/), so the uniform stream is bit-identical everywhere. The probabilities use
 * libm expf() (sums in double); two libms that differ by an ulp could in principle flip a draw that lands
 * exactly on a bucket boundary (probability ~1e-16 per draw).
 *
 * Cost: no allocation per call. With top_k small the survivors are selected with a size-k heap
 * (O(n_vocab log k), almost all ids rejected by one compare against the heap root). Top-p without
 * top-k histograms the full vocabulary by logit distance from the max, so only the ids that can be in
 * the nucleus are (radix-)sorted. */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct {
    int32_t id;
    float logit;
} tern_cand;

struct tern_sampler {
    tern_sampler_params p;
    int n_vocab;
    uint64_t rng[4];  /* xoshiro256** state, never all zero */
    float *pen;       /* (n_vocab) logits after the repeat penalty; used only when the penalty is on */
    tern_cand *cand;  /* (n_vocab) surviving candidates of the current call */
    tern_cand *tmp;   /* (n_vocab) radix-sort scratch */
    double *w;        /* (n_vocab) unnormalised softmax weights, parallel to cand */
    uint8_t *seen;    /* (n_vocab) dedup marks for the penalty; all zero between calls */
};

/* ---- RNG ---------------------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4]) {
    const uint64_t r = rotl64(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return r;
}

/* Uniform double in [0, 1) with 53 random bits. */
static double rng_uniform(uint64_t s[4]) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

void tern_sampler_set_seed(tern_sampler *s, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    /* splitmix64 is a bijection of a counter, so four consecutive outputs are never all zero. */
}

/* ---- params ------------------------------------------------------------------------------------- */

tern_sampler_params tern_sampler_default_params(void) {
    tern_sampler_params p = {
        .temp = 0.8f,
        .top_k = 40,
        .top_p = 0.95f,
        .min_p = 0.05f,
        .repeat_penalty = 1.0f,
        .repeat_last_n = 64,
        .seed = 0,
    };
    return p;
}

static int params_check(const tern_sampler_params *p, int n_vocab) {
    if (!p) { tern_set_error("sampler: NULL params"); return -1; }
    if (n_vocab <= 0) { tern_set_error("sampler: n_vocab %d <= 0", n_vocab); return -1; }
    if (!isfinite(p->temp)) { tern_set_error("sampler: temp %g is not finite", (double)p->temp); return -1; }
    if (!(p->top_p > 0.0f)) { tern_set_error("sampler: top_p %g must be > 0 (>= 1: off)", (double)p->top_p); return -1; }
    if (isnan(p->min_p) || p->min_p > 1.0f) {
        tern_set_error("sampler: min_p %g must be <= 1 (<= 0: off)", (double)p->min_p);
        return -1;
    }
    if (!isfinite(p->repeat_penalty) || !(p->repeat_penalty > 0.0f)) {
        tern_set_error("sampler: repeat_penalty %g must be finite and > 0 (1: off)", (double)p->repeat_penalty);
        return -1;
    }
    if (p->repeat_last_n < -1) {
        tern_set_error("sampler: repeat_last_n %d must be >= -1 (-1: whole history, 0: off)", p->repeat_last_n);
        return -1;
    }
    return 0;
}

tern_sampler *tern_sampler_new(const tern_sampler_params *p, int n_vocab) {
    if (params_check(p, n_vocab)) return NULL;
    tern_sampler *s = tern_xcalloc(1, sizeof *s);
    s->p = *p;
    s->n_vocab = n_vocab;
    s->pen = tern_xmalloc((size_t)n_vocab * sizeof *s->pen);
    s->cand = tern_xmalloc((size_t)n_vocab * sizeof *s->cand);
    s->tmp = tern_xmalloc((size_t)n_vocab * sizeof *s->tmp);
    s->w = tern_xmalloc((size_t)n_vocab * sizeof *s->w);
    s->seen = tern_xcalloc((size_t)n_vocab, 1);
    tern_sampler_set_seed(s, p->seed);
    return s;
}

void tern_sampler_free(tern_sampler *s) {
    if (!s) return;
    free(s->pen);
    free(s->cand);
    free(s->tmp);
    free(s->w);
    free(s->seen);
    free(s);
}

/* ---- helpers ------------------------------------------------------------------------------------ */

int32_t tern_argmax(const float *logits, int n) {
    if (!logits || n <= 0) return -1;
    int32_t best = -1;
    float bv = 0.0f;
    for (int i = 0; i < n; i++) {
        float v = logits[i];
        if (isnan(v)) continue;
        if (best < 0 || v > bv) { best = i; bv = v; }  /* strict >: the lowest id wins ties */
    }
    return best < 0 ? 0 : best;
}

/* Total order used everywhere a rank is needed: larger logit first, lower id on ties. */
static inline int cand_better(tern_cand a, tern_cand b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

/* Radix key whose ascending order is cand_better order: descending logit, with -0 folded into +0
 * so that the two zeros tie as they do under ==. */
static inline uint32_t cand_key(float x) {
    uint32_t u;
    x = x == 0.0f ? 0.0f : x;
    memcpy(&u, &x, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  /* ascending u == ascending float */
    return ~u;
}

/* Sort c (n) best-first by cand_better. LSD radix sort, 4 passes of 8 bits, stable, so ids that
 * tie keep their input order: c must come in ascending id order. tmp: (n) scratch. Replaced qsort:
 * top-p 0.95 alone at n_vocab 256k (uniform logits, ~40k-id nucleus) went from 13.7 to 4.0 ms per
 * sample (2-core EPYC dev VM, test_sampler's report_speed). */
static void sort_cands(tern_cand *c, tern_cand *tmp, int n) {
    tern_cand *src = c, *dst = tmp;
    for (int shift = 0; shift < 32; shift += 8) {
        int count[257] = {0};
        for (int i = 0; i < n; i++) count[((cand_key(src[i].logit) >> shift) & 0xff) + 1]++;
        if (count[((cand_key(src[0].logit) >> shift) & 0xff) + 1] == n) continue;  /* byte all equal */
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (int i = 0; i < n; i++) dst[count[(cand_key(src[i].logit) >> shift) & 0xff]++] = src[i];
        tern_cand *t = src; src = dst; dst = t;
    }
    if (src != c) memcpy(c, src, (size_t)n * sizeof *c);
}

/* Sift the min-heap (root = worst candidate) down from i. h: (n). */
static void heap_sift_down(tern_cand *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, worst = i;
        if (l < n && cand_better(h[worst], h[l])) worst = l;
        if (r < n && cand_better(h[worst], h[r])) worst = r;
        if (worst == i) return;
        tern_cand t = h[i]; h[i] = h[worst]; h[worst] = t;
        i = worst;
    }
}

static void heap_sift_up(tern_cand *h, int i) {
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!cand_better(h[parent], h[i])) return;
        tern_cand t = h[i]; h[i] = h[parent]; h[parent] = t;
        i = parent;
    }
}

/* The k best non-NaN entries of l (n) into out, sorted best-first. Returns how many (<= k). */
static int select_top_k(const float *l, int n, int k, tern_cand *out) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        float v = l[i];
        if (isnan(v)) continue;
        tern_cand c = {i, v};
        if (m < k) {
            out[m] = c;
            heap_sift_up(out, m++);
        } else if (v >= out[0].logit && cand_better(c, out[0])) {
            out[0] = c;
            heap_sift_down(out, m, 0);
        }
    }
    /* Heap sort: move the worst to the back each step, leaving the array best-first. */
    for (int end = m - 1; end > 0; end--) {
        tern_cand t = out[0]; out[0] = out[end]; out[end] = t;
        heap_sift_down(out, end, 0);
    }
    return m;
}

/* Unnormalised softmax weight of logit x at temperature t given the survivors' max mx, in [0, 1].
 * Single-precision expf: ~1.6x the throughput of exp (1.7 vs 2.7 ms per 256k ids, same VM) and
 * its ~1e-7 relative error is far below anything a draw can resolve; sums are kept in double.
 * An infinite max degenerates to a uniform choice among the ids that share it. */
static inline double soft_w(float x, float mx, float t) {
    if (!isfinite(mx)) return x == mx ? 1.0 : 0.0;
    return (double)expf((x - mx) / t);
}

static float cand_max(const tern_cand *c, int n, int sorted) {
    if (sorted) return c[0].logit;
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) if (c[i].logit > mx) mx = c[i].logit;
    return mx;
}

/* Top-p on c (n). Returns the new count; c is sorted best-first afterwards. s->w is scratch. */
static int apply_top_p(tern_sampler *s, tern_cand *c, int n, int sorted, float top_p) {
    float mx = cand_max(c, n, sorted);
    double z = 0.0;
    for (int i = 0; i < n; i++) z += (s->w[i] = soft_w(c[i].logit, mx, 1.0f));
    double target = (double)top_p * z;

    if (!sorted) {
        /* Pre-filter: histogram the weights by distance below the max in buckets of 0.5 nats. The
         * nucleus is a best-first prefix, so if the ids within distance d already hold >= top_p of the
         * mass, no id further away can be in it. One bucket of slack covers the difference between
         * this summation order and the sorted one below. */
        enum { NB = 64 };
        const double width = 0.5;
        if (isfinite(mx)) {
            double mass[NB] = {0};
            for (int i = 0; i < n; i++) {
                double d = ((double)mx - (double)c[i].logit) / width;  /* >= 0; +inf for -inf logits */
                if (d < NB) mass[(int)d] += s->w[i];
            }
            double acc = 0.0;
            int b = 0;
            while (b < NB && (acc += mass[b]) < target) b++;
            if (b + 1 < NB) {  /* else the distribution is too flat to prune: sort everything */
                /* keep buckets 0..b+1, by the same distance d the histogram used: a cut-off logit
                 * mx - (b + 2) * width rounds to mx once |mx| >~ 1e16 (double's ulp there is 2) and
                 * dropped every candidate, the max included (issue 28, found by fuzzing) */
                int m = 0;
                for (int i = 0; i < n; i++)
                    if (((double)mx - (double)c[i].logit) / width < (double)(b + 2)) c[m++] = c[i];
                n = m;
            }
        }
        sort_cands(c, s->tmp, n);
    }

    double acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += soft_w(c[i].logit, mx, 1.0f);
        if (acc >= target) return i + 1;
    }
    return n;  /* rounding left the target unreached: keep everything that survived */
}

/* Min-p on c (n): keep logit >= max + ln(min_p). Order is preserved. Returns the new count. */
static int apply_min_p(tern_cand *c, int n, int sorted, float min_p) {
    float mx = cand_max(c, n, sorted);
    float thr = mx + logf(min_p);
    if (sorted) {
        int m = 1;  /* c[0] is the max and always survives */
        while (m < n && c[m].logit >= thr) m++;
        return m;
    }
    int m = 0;
    for (int i = 0; i < n; i++) if (c[i].logit >= thr || c[i].logit == mx) c[m++] = c[i];
    return m;
}

static int penalty_active(const tern_sampler_params *p, const int32_t *history, int n_hist) {
    return p->repeat_penalty != 1.0f && p->repeat_last_n != 0 && history && n_hist > 0;
}

/* Penalise l (n_vocab) in place: each distinct in-range id among the last repeat_last_n entries of
 * history once. s->seen is left all zero again. */
static void penalize(tern_sampler *s, float *l, const int32_t *history, int n_hist) {
    const tern_sampler_params *p = &s->p;
    const int nv = s->n_vocab;
    int win = p->repeat_last_n < 0 || p->repeat_last_n > n_hist ? n_hist : p->repeat_last_n;
    const int32_t *h = history + (n_hist - win);
    for (int i = 0; i < win; i++) {
        int32_t t = h[i];
        if (t < 0 || t >= nv || s->seen[t]) continue;
        s->seen[t] = 1;
        l[t] = l[t] > 0.0f ? l[t] / p->repeat_penalty : l[t] * p->repeat_penalty;
    }
    for (int i = 0; i < win; i++) if (h[i] >= 0 && h[i] < nv) s->seen[h[i]] = 0;
}

void tern_sampler_penalize(tern_sampler *s, float *logits, const int32_t *history, int n_hist) {
    if (s && logits && penalty_active(&s->p, history, n_hist)) penalize(s, logits, history, n_hist);
}

/* ---- the chain ---------------------------------------------------------------------------------- */

/* Steps 1-4 and the tempered weights of step 5 (temp > 0): the survivors in s->cand[0..*n) with their
 * unnormalised weights in s->w, total *z. Returns 0, or -1 when every logit is NaN. */
static int chain(tern_sampler *s, const float *logits, const int32_t *history, int n_hist, int *n_out, double *z_out) {
    const tern_sampler_params *p = &s->p;
    const int nv = s->n_vocab;
    const float *l = logits;
    /* 1. repeat penalty, on a copy so the caller's logits stay untouched. */
    if (penalty_active(p, history, n_hist)) {
        memcpy(s->pen, logits, (size_t)nv * sizeof *s->pen);
        penalize(s, s->pen, history, n_hist);
        l = s->pen;
    }
    /* 2. top-k (or collect every non-NaN id, unsorted). */
    tern_cand *c = s->cand;
    int n, sorted;
    if (p->top_k > 0 && p->top_k < nv) {
        n = select_top_k(l, nv, p->top_k, c);
        sorted = 1;
    } else {
        n = 0;
        for (int i = 0; i < nv; i++) if (!isnan(l[i])) c[n++] = (tern_cand){i, l[i]};
        sorted = 0;
    }
    if (n == 0) { tern_set_error("sampler: all logits are NaN"); return -1; }
    /* 3. top-p, 4. min-p (both at temperature 1). */
    if (p->top_p < 1.0f && n > 1) {
        n = apply_top_p(s, c, n, sorted, p->top_p);
        sorted = 1;
    }
    if (p->min_p > 0.0f && n > 1) n = apply_min_p(c, n, sorted, p->min_p);
    /* every filter keeps the max; a chain that kept nothing would draw a stale candidate */
    if (n < 1) { tern_set_error("sampler: internal error: no candidate survived the filters"); return -1; }
    /* 5. temperature: the weights */
    float mx = cand_max(c, n, sorted);
    double z = 0.0;
    for (int i = 0; i < n; i++) z += (s->w[i] = soft_w(c[i].logit, mx, p->temp));
    *n_out = n;
    *z_out = z;
    return 0;
}

/* The penalised logits' argmax (the temp <= 0 choice), or -1 when all are NaN. */
static int32_t greedy_id(tern_sampler *s, const float *logits, const int32_t *history, int n_hist) {
    const float *l = logits;
    if (penalty_active(&s->p, history, n_hist)) {
        memcpy(s->pen, logits, (size_t)s->n_vocab * sizeof *s->pen);
        penalize(s, s->pen, history, n_hist);
        l = s->pen;
    }
    int32_t id = tern_argmax(l, s->n_vocab);
    if (isnan(l[id])) { tern_set_error("sampler: all logits are NaN"); return -1; }
    return id;
}

int32_t tern_sampler_sample(tern_sampler *s, const float *logits, const int32_t *history, int n_hist) {
    if (!s || !logits) { tern_set_error("sampler: NULL sampler or logits"); return -1; }
    if (s->p.temp <= 0.0f) return greedy_id(s, logits, history, n_hist);
    int n;
    double z;
    if (chain(s, logits, history, n_hist, &n, &z) != 0) return -1;
    const tern_cand *c = s->cand;
    double r = rng_uniform(s->rng) * z;
    double acc = 0.0;
    int last = 0;
    for (int i = 0; i < n; i++) {
        if (s->w[i] <= 0.0) continue;
        last = i;
        acc += s->w[i];
        if (r < acc) return c[i].id;
    }
    return c[last].id;  /* r landed past the rounded total: the last id with weight */
}

int tern_sampler_probs(tern_sampler *s, const float *logits, const int32_t *history, int n_hist, double *probs) {
    if (!s || !logits || !probs) { tern_set_error("sampler: NULL argument"); return -1; }
    memset(probs, 0, sizeof *probs * (size_t)s->n_vocab);
    if (s->p.temp <= 0.0f) {
        const int32_t id = greedy_id(s, logits, history, n_hist);
        if (id < 0) return -1;
        probs[id] = 1.0;
        return 0;
    }
    int n;
    double z;
    if (chain(s, logits, history, n_hist, &n, &z) != 0) return -1;
    for (int i = 0; i < n; i++) probs[s->cand[i].id] = s->w[i] / z;
    return 0;
}

/* ---- for device samplers (sampler.h) ------------------------------------------------------------- */

const tern_sampler_params *tern_sampler_get_params(const tern_sampler *s) { return &s->p; }

double tern_sampler_draw_uniform(tern_sampler *s) { return rng_uniform(s->rng); }

int tern_sampler_penalty_ids(tern_sampler *s, const int32_t *history, int n_hist, int32_t *out) {
    const tern_sampler_params *p = &s->p;
    if (!penalty_active(p, history, n_hist)) return 0;
    const int nv = s->n_vocab;
    int win = p->repeat_last_n < 0 || p->repeat_last_n > n_hist ? n_hist : p->repeat_last_n;
    const int32_t *h = history + (n_hist - win);
    int m = 0;
    for (int i = 0; i < win; i++) {
        int32_t t = h[i];
        if (t < 0 || t >= nv || s->seen[t]) continue;
        s->seen[t] = 1;
        out[m++] = t;
    }
    for (int i = 0; i < m; i++) s->seen[out[i]] = 0;
    return m;
}
