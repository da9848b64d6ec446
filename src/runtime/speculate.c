/* speculate.c: speculative decoding with exact verification (Leviathan et al. 2023, "Fast Inference from
 * Transformers via Speculative Decoding"; Chen et al. 2023): greedy (byte-identical output) and, with a
 * sampler, speculative sampling (the output distribution of plain sampling; tern_spec_sample_accept).
 *
 * A pass: the drafter proposes d tokens after the history; the target evaluates [pending, draft...] in
 * one call (tern_eval_argmax), which gives the greedy choice after every prefix; the drafts are accepted
 * while they equal those choices, and the first disagreeing choice (or the bonus token after d accepted
 * drafts) is emitted too. The KV cache is cut back to the accepted prefix (tern_context_truncate).
 * Exactness: tern_eval_argmax computes every row with the bits of a one-token decode step (CPU: any
 * chunk; CUDA: chunks <= 16 tokens use the decode kernels), so the output equals plain greedy decoding
 * byte for byte (tests/t_spec.sh checks it).
 *
 * Drafters: prompt lookup (the continuation of the most recent earlier occurrence of the history's
 * last n tokens, n = ngram_max..1; Saxena 2023, "prompt lookup decoding"), or a model drafter: a context
 * of a draft model with the same vocabulary, or of the target's own first K layers (self-speculative,
 * tern_context_params.n_layer), decoding greedily, with a confidence gate p_min on its top probability;
 * or the caller's own (draft_fn).
 *
 * Gates (what keeps bad drafts from costing): the cost gate (cost_gate) drafts, each pass, the depth that
 * maximises the expected tokens per second from the run's own measurements: the pass time by token count
 * and the drafts' acceptance per drafter key (tern_spec_choose_depth); a one-token time that a longer pass
 * has beaten is re-measured by an undrafted pass (t1_contradicted). The window gate (min_accept, used
 * when the cost gate is off) stops drafting for 8 passes whenever the acceptance of the last >= 16 drafted
 * tokens falls under min_accept (doubling the pause, up to 256, while it keeps failing), and halves the
 * depth after a pass that accepted nothing, doubles it after one that accepted all. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "speculate.h"
#include "tern.h"
#include "util.h"

tern_spec_params tern_spec_default_params(void) {
    tern_spec_params p = {.draft_max = 4, .ngram_max = 3};
    return p;
}

/* The cost gate's estimates (tern.h: tern_spec_params.cost_gate). */
#define COST_PRIOR_SLOPE 0.15 /* an unmeasured extra token's cost, relative to a one-token pass (optimistic:
                               * H200 default model 0.14, synthetic 8B Q4_0 0.24; CPU near 1) */
#define ACC_DECAY 0.95        /* acceptance counts decay per trial: the estimate follows ~20 recent drafts */

static int cost_valid(const tern_spec_stats *st, int k) { return st->n_pass[k] >= 2 && st->t_pass[k] > 0.0; }

static double cost_raw(const tern_spec_stats *st, int k);

double tern_spec_cost(const tern_spec_stats *st, int k) {
    const double c = cost_raw(st, k);
    return c > 1.0 ? c : 1.0; /* a pass of more tokens never counts as cheaper than one token (timing noise) */
}

static double cost_raw(const tern_spec_stats *st, int k) {
    if (k <= 1) return 1.0;
    if (k > TERN_SPEC_MAX_DRAFT + 1) k = TERN_SPEC_MAX_DRAFT + 1;
    if (!st || !cost_valid(st, 1)) return 1.0 + COST_PRIOR_SLOPE * (k - 1);
    const double t1 = st->t_pass[1];
    if (cost_valid(st, k)) return st->t_pass[k] / t1;
    int lo = 1, hi = 0;
    for (int j = k - 1; j > 1; j--)
        if (cost_valid(st, j)) { lo = j; break; }
    for (int j = k + 1; j <= TERN_SPEC_MAX_DRAFT + 1; j++)
        if (cost_valid(st, j)) { hi = j; break; }
    const double clo = lo == 1 ? 1.0 : st->t_pass[lo] / t1;
    if (hi) return clo + (st->t_pass[hi] / t1 - clo) * (k - lo) / (double)(hi - lo);
    /* past the deepest measured pass: its slope from one token, at most the prior's (so a deeper pass stays
     * worth a try until it is measured) */
    double slope = lo == 1 ? COST_PRIOR_SLOPE : (clo - 1.0) / (double)(lo - 1);
    if (slope > COST_PRIOR_SLOPE) slope = COST_PRIOR_SLOPE;
    if (slope < 0.0) slope = 0.0;
    return clo + slope * (k - lo);
}

int tern_spec_choose_depth(const double *cost, double a, int dmin, int dmax) {
    int best = 0;
    double best_g = 1.0 / cost[1], sum = 1.0, pw = 1.0;
    for (int d = 1; d <= dmax; d++) {
        pw *= a;
        sum += pw;
        const double g = sum / cost[d + 1];
        if (d >= dmin && g > best_g) { best_g = g; best = d; }
    }
    return best;
}

static void acc_update(tern_spec_stats *st, int key, int hit) {
    st->acc_hit[key] = ACC_DECAY * st->acc_hit[key] + (hit ? 1.0 : 0.0);
    st->acc_try[key] = ACC_DECAY * st->acc_try[key] + 1.0;
}

/* acceptance estimate of a key: the decayed counts with one hit in two tries as the prior */
static double acc_alpha(const tern_spec_stats *st, int key) { return (st->acc_hit[key] + 1.0) / (st->acc_try[key] + 2.0); }

/* Score the unverified lookup draft against the tokens the history now holds after its base. */
static void shadow_score(tern_spec_stats *st, const int32_t *hist, int n_hist) {
    if (st->shadow_n > 0 && st->shadow_base > n_hist) st->shadow_n = 0; /* the history was cut: drop it */
    while (st->shadow_n > 0 && st->shadow_base + st->shadow_i < n_hist) {
        const int hit = hist[st->shadow_base + st->shadow_i] == st->shadow[st->shadow_i];
        acc_update(st, st->shadow_key, hit);
        if (!hit || ++st->shadow_i == st->shadow_n) st->shadow_n = 0;
    }
}

/* The cost gate's depth for key: 0 or dmin..dmax. */
static int cost_depth(const tern_spec_stats *st, int key, int dmin, int dmax) {
    double cost[TERN_SPEC_MAX_DRAFT + 2];
    for (int k = 1; k <= dmax + 1; k++) cost[k] = tern_spec_cost(st, k);
    return tern_spec_choose_depth(cost, acc_alpha(st, key), dmin, dmax);
}

/* One more pass time of k tokens: the first is dropped (a CUDA graph capture, a cold cache), then a moving
 * average of samples capped at twice the current value (one descheduled pass must not close the gate). */
static void cost_sample(tern_spec_stats *st, int k, double dt) {
    if (++st->n_pass[k] < 2) return;
    if (st->n_pass[k] == 2 || st->t_pass[k] <= 0.0) { st->t_pass[k] = dt; return; }
    if (dt > 2.0 * st->t_pass[k]) dt = 2.0 * st->t_pass[k];
    st->t_pass[k] += 0.25 * (dt - st->t_pass[k]);
}

/* The one-token time is contradicted when a longer pass has timed faster (a k-token pass does the one-token
 * pass's work and more): t_pass[1] then holds a slow sample (a busy host, a descheduled thread). t_pass[1] is
 * sampled on undrafted passes only, so while the gate drafts nothing corrects it, and with the costs at
 * their floor of 1 the gate drafts at any acceptance (seeded 3x too slow on the CPU, an always-wrong
 * drafter drafted every pass: docs/ledger.md 2026-12-01). */
static int t1_contradicted(const tern_spec_stats *st) {
    if (!cost_valid(st, 1)) return 0;
    for (int k = 2; k <= TERN_SPEC_MAX_DRAFT + 1; k++)
        if (cost_valid(st, k) && st->t_pass[k] < st->t_pass[1]) return 1;
    return 0;
}

/* A re-measured one-token time dt: a faster sample replaces t_pass[1] (noise only slows a pass down), a
 * slower one enters the moving average (cost_sample's cap). The next re-measure waits 8 passes after one
 * that found t_pass[1] too slow (dt under 0.9x), else twice the last wait, up to 256: where longer passes
 * really do time faster (a launch-bound model, a different kernel for the batch), re-measures thin out. */
static void t1_remeasured(tern_spec_stats *st, double dt) {
    const double old = st->t_pass[1];
    st->t1_remeasures++;
    if (dt < old) {
        st->n_pass[1]++;
        st->t_pass[1] = dt;
    } else {
        cost_sample(st, 1, dt);
    }
    st->t1_gap = dt < 0.9 * old || st->t1_gap < 8 ? 8 : st->t1_gap < 256 ? 2 * st->t1_gap : 256;
    st->t1_wait = st->t1_gap;
}

/* Speculative sampling's acceptance (tern_spec_step's comment): logits (d + 1, nv) are the target's rows
 * after hist and after each draft prefix; writes the emitted tokens to out and returns their count
 * (1..d+1), or -1. hx: scratch for n_hist + d ids; probs: scratch for nv doubles. */
int tern_spec_sample_accept(tern_sampler *s, const float *logits, int nv, const int32_t *hist, int n_hist,
                            const int32_t *draft, int d, int32_t *hx, double *probs, int32_t *out) {
    memcpy(hx, hist, sizeof(int32_t) * (size_t)n_hist);
    for (int i = 0; i < d; i++) {
        const float *row = logits + (size_t)i * nv;
        if (tern_sampler_probs(s, row, hx, n_hist + i, probs) != 0) return -1;
        const int32_t x = draft[i];
        const double px = x >= 0 && x < nv ? probs[x] : 0.0;
        if (tern_sampler_draw_uniform(s) < px) { /* kept */
            out[i] = x;
            hx[n_hist + i] = x;
            continue;
        }
        /* rejected: a draw from probs without x, renormalised (1 - px > 0 here, else u < px held) */
        const double rest = 1.0 - px, r = tern_sampler_draw_uniform(s) * rest;
        double acc = 0.0;
        int32_t pick = -1, last = -1;
        for (int32_t v = 0; v < nv && pick < 0; v++) {
            if (v == x || probs[v] <= 0.0) continue;
            last = v;
            acc += probs[v];
            if (r < acc) pick = v;
        }
        if (pick < 0) pick = last; /* r past the rounded total */
        if (pick < 0) { tern_set_error("speculative sampling: no token left after a rejection"); return -1; }
        out[i] = pick;
        return i + 1;
    }
    const int32_t bonus = tern_sampler_sample(s, logits + (size_t)d * nv, hx, n_hist + d);
    if (bonus < 0) return -1;
    out[d] = bonus;
    return d + 1;
}

/* Prompt lookup: up to max drafts into out; returns the count and the matched length in *n_used. */
static int draft_lookup(const int32_t *hist, int n_hist, int ngram_max, int max, int32_t *out, int *n_used) {
    for (int n = ngram_max; n >= 1; n--) {
        if (n >= n_hist) continue;
        const int32_t *suf = hist + n_hist - n;
        /* most recent earlier occurrence: start i with i + n <= n_hist - 1 */
        for (int i = n_hist - n - 1; i >= 0; i--) {
            if (memcmp(hist + i, suf, sizeof(int32_t) * (size_t)n) != 0) continue;
            int d = 0;
            while (d < max && i + n + d < n_hist) { out[d] = hist[i + n + d]; d++; }
            if (d > 0) { *n_used = n; return d; }
        }
    }
    *n_used = 0;
    return 0;
}

/* Top probability of logits (n): 1 / Σ exp(l - max). */
static float top_prob(const float *l, int n) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) if (l[i] > mx) mx = l[i];
    double z = 0.0;
    for (int i = 0; i < n; i++) z += exp((double)l[i] - mx);
    return (float)(1.0 / z);
}

/* Model drafter: bring the draft context up to the history, then decode greedily. */
static int draft_model(tern_context *dc, const int32_t *hist, int n_hist, int max, float p_min, int32_t *out) {
    const int past = tern_context_n_past(dc);
    if (past >= n_hist && tern_context_truncate(dc, n_hist - 1) != 0) return -1;
    const int from = tern_context_n_past(dc);
    const int nv = tern_model_n_vocab(tern_context_model(dc));
    float *lg = p_min > 0.0f ? malloc(sizeof(float) * (size_t)nv) : NULL;
    int d = 0, rc = 0;
    int32_t next;
    const int32_t *feed = hist + from;
    int n_feed = n_hist - from;
    while (d < max) {
        if (lg) {
            if ((rc = tern_eval(dc, feed, n_feed, lg, 0)) != 0) break;
            next = tern_argmax(lg, nv);
            if (top_prob(lg, nv) < p_min) break; /* the gate: not confident enough to draft this one */
        } else if ((rc = tern_eval_greedy(dc, feed, n_feed, &next)) != 0) {
            break;
        }
        out[d++] = next;
        feed = &out[d - 1];
        n_feed = 1;
    }
    free(lg);
    return rc != 0 ? -1 : d;
}

/* Speculative sampling's scratch (the verify rows' logits: up to 16 x n_vocab floats), kept per thread and
 * grown, never freed: a pass allocating and first-touching megabytes would cost a fraction of a decode step. */
static _Thread_local struct {
    void *lg, *probs, *hx;
    size_t n_lg, n_probs, n_hx;
} g_scratch;

static void *grow(void **buf, size_t *cap, size_t need) {
    if (need > *cap) {
        void *nb = realloc(*buf, need);
        if (!nb) return NULL;
        *buf = nb;
        *cap = need;
    }
    return *buf;
}

int tern_spec_step(tern_context *c, const tern_spec_params *p, const int32_t *hist, int n_hist, int32_t *out,
                   int max_out, tern_spec_stats *st) {
    if (!c || !p || !hist || n_hist < 1 || !out || max_out < 1) { tern_set_error("tern_spec_step: bad arguments"); return -1; }
    if (tern_context_n_past(c) != n_hist - 1) {
        tern_set_error("tern_spec_step: the cache holds %d tokens, the history %d (all but the last must be cached)",
                       tern_context_n_past(c), n_hist);
        return -1;
    }
    const int cost_gate = st && p->cost_gate;
    const int window_gate = st && !cost_gate && p->min_accept > 0.0f;
    const double t_start = cost_gate ? tern_time_s() : 0.0;
    if (cost_gate) shadow_score(st, hist, n_hist);
    int dmax = p->draft_max < TERN_SPEC_MAX_DRAFT ? p->draft_max : TERN_SPEC_MAX_DRAFT;
    /* adaptive depth (with the window gate): halve after a pass that accepted nothing, double after one that
     * accepted everything, between 1 and draft_max */
    if (window_gate && st->depth > 0 && st->depth < dmax) dmax = st->depth;
    if (dmax > max_out - 1) dmax = max_out - 1;
    const int room = tern_context_n_ctx(c) - tern_context_n_past(c) - 1;
    if (dmax > room) dmax = room;
    int32_t batch[1 + TERN_SPEC_MAX_DRAFT], got[1 + TERN_SPEC_MAX_DRAFT];
    if (window_gate && st->cooldown > 0) { /* the gate: a pass without drafts */
        st->cooldown--;
        st->gated++;
        dmax = 0;
    }
    /* the cost gate's one-token time contradicted: this pass runs undrafted and re-measures it */
    const int remeasure = cost_gate && dmax > 0 && st->t1_wait <= 0 && t1_contradicted(st);
    if (cost_gate && st->t1_wait > 0) st->t1_wait--;
    if (remeasure) {
        st->gated++;
        dmax = 0;
    }
    const int lookup = !p->draft_fn && !p->draft;
    int d = 0, key = 0, probe = 0; /* probe: a model drafter's pass forced by the gate (not timed) */
    if (dmax > 0 && cost_gate && !lookup) {
        /* a model drafter costs its own passes: ask the gate before drafting; while it says no, the counts
         * decay toward the prior, and every 64th refused pass drafts one token (a probe), so a drafter that
         * turns good is noticed (cooldown counts the refusals here) */
        int dc = cost_depth(st, 0, p->draft_min, dmax);
        if (dc == 0) {
            st->acc_hit[0] *= ACC_DECAY;
            st->acc_try[0] *= ACC_DECAY;
            if (++st->cooldown >= 64) {
                dc = p->draft_min > 1 ? p->draft_min : 1;
                if (dc > dmax) dc = dmax;
                probe = 1;
            } else {
                st->gated++;
            }
        }
        if (dc > 0) st->cooldown = 0;
        dmax = dc;
    }
    if (dmax > 0) {
        d = p->draft_fn ? p->draft_fn(p->draft_ud, hist, n_hist, dmax, batch + 1)
            : p->draft  ? draft_model(p->draft, hist, n_hist, dmax, p->p_min, batch + 1)
                        : draft_lookup(hist, n_hist, p->ngram_max > 0 ? p->ngram_max : 3, dmax, batch + 1, &key);
        if (d < 0) { if (!tern_last_error()[0]) tern_set_error("tern_spec_step: the drafter failed"); return -1; }
        if (d > dmax) d = dmax;
        if (key > 3) key = 3;
        if (cost_gate && lookup && d > 0) {
            const int dc = cost_depth(st, key, p->draft_min, d);
            if (dc == 0 && st->shadow_n == 0) { /* not verified: scored against what follows */
                memcpy(st->shadow, batch + 1, sizeof(int32_t) * (size_t)d);
                st->shadow_n = d;
                st->shadow_i = 0;
                st->shadow_key = key;
                st->shadow_base = n_hist;
            }
            if (dc == 0) st->gated++;
            d = dc;
        }
        if (d < p->draft_min) {
            /* too few (a model drafter's p_min stopped it): nothing verified; under the cost gate a decline
             * counts as a miss, so a drafter that keeps declining is gated instead of asked forever */
            if (cost_gate && !lookup && d < dmax) acc_update(st, 0, 0);
            d = 0;
        }
    }
    batch[0] = hist[n_hist - 1];
    const int past = tern_context_n_past(c);
    int a = 0;
    if (p->sampler) { /* speculative sampling (at temp <= 0: greedy on the penalised logits, one-hot P) */
        const int nv = tern_model_n_vocab(tern_context_model(c));
        float *lg = grow(&g_scratch.lg, &g_scratch.n_lg, sizeof(float) * (size_t)nv * (size_t)(1 + d));
        double *probs = grow(&g_scratch.probs, &g_scratch.n_probs, sizeof(double) * (size_t)nv);
        int32_t *hx = grow(&g_scratch.hx, &g_scratch.n_hx, sizeof(int32_t) * (size_t)(n_hist + d));
        int k = -1;
        if (!lg || !probs || !hx) tern_set_error("out of memory");
        else if (tern_eval(c, batch, 1 + d, lg, 1) == 0)
            k = tern_spec_sample_accept(p->sampler, lg, nv, hist, n_hist, batch + 1, d, hx, probs, out);
        if (k < 0) return -1;
        a = k - 1; /* out[0..a) are kept drafts, out[a] the drawn token */
    } else {
        if (tern_eval_argmax(c, batch, 1 + d, got) != 0) return -1;
        while (a < d && got[a] == batch[1 + a]) a++;
        for (int i = 0; i < a; i++) out[i] = batch[1 + i];
        out[a] = got[a];
    }
    if (tern_context_truncate(c, past + 1 + a) != 0) return -1;
    if (cost_gate) {
        if (d > 0) {
            st->shadow_n = 0; /* these positions are verified now */
            for (int i = 0; i < a; i++) acc_update(st, key, 1);
            if (a < d) acc_update(st, key, 0);
        }
        const double dt = tern_time_s() - t_start;
        if (remeasure) {
            t1_remeasured(st, dt);
        } else if (!probe) {
            cost_sample(st, 1 + d, dt); /* a probe's time holds the drafter's catch-up */
        }
    }
    if (st) {
        st->passes++;
        st->drafted += d;
        st->accepted += a;
        st->generated += a + 1;
        if (window_gate && d > 0) {
            const int cur = st->depth > 0 ? st->depth : p->draft_max;
            st->depth = a == 0 ? (cur > 1 ? cur / 2 : 1) : a == d ? (cur * 2 < p->draft_max ? cur * 2 : p->draft_max) : cur;
            st->win_drafted += d;
            st->win_accepted += a;
            if (st->win_drafted >= 16) {
                /* a failed window pauses drafting for 8 passes, doubling (to 256) while windows keep failing */
                if (st->win_accepted < p->min_accept * st->win_drafted) {
                    st->cooldown = 8 << (st->fails < 5 ? st->fails : 5);
                    st->fails++;
                } else {
                    st->fails = 0;
                }
                st->win_drafted = st->win_accepted = 0;
            }
        }
    }
    return a + 1;
}
