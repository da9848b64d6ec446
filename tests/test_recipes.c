/* test_recipes: the qwen2, qwen3 and phi3 recipe rows on the CPU against llama.cpp on tiny random GGUFs
 * (tests/fixtures/recipes/, made by tests/gen_recipe_fixtures.py with llama-cpp-python 0.3.36: 2 layers, F32 weights,
 * qwen2 with q/k/v biases, qwen3 with per-head q/k RMSNorm, phi3 with fused attn_qkv and gate|up ffn_up; all NEOX
 * RoPE). For each: the recipe as loaded, then
 * every position's logits of 40 fixed ids (prefill in chunks of 16, so the cache is read across chunks) within
 * REL_MAX relative L2 of llama.cpp's and with its argmax at every position; and the same ids with the row's RoPE
 * pairing flipped to llama's (a recipe mistake) must miss by far (the test can fail).
 * Per layer (STYLE.md item 7: a golden failure says which op of which layer broke): the residual stream after every
 * layer's attention add and FFN add (cpu_set_probe) against scripts/ref_numpy.py's float64 forward pass over the same
 * weights (ARCH.layers, ARCH.f64: `ref_numpy.py ARCH.gguf --tokens IDS --out ARCH.f64 --dump ARCH.layers`), each
 * point within LAYER_MAX; with the flipped RoPE the first point out of bounds must be layer 0's attention.
 * YaRN on the qwen2 row (qwen2-yarn.gguf) and LongRoPE on the phi3 row (phi3-longrope.gguf) against llama.cpp; the
 * gemma3 row with an 8-key sliding window (gemma3.gguf) and the mistral3 row (mistral3.gguf: YaRN with the file's betas
 * and log multiplier, the attention temperature). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "check.h"
#include "model.h"
#include "tern.h"

#define FIX "tests/fixtures/recipes/"
#define N_IDS 40
#define LAYER_MAX 1e-3 /* measured 1.0e-4..1.7e-4 (F32 weights, f16 KV); a wrong RoPE pairing must cross it first at layer 0 */
#define REL_MAX 2e-3 /* F32 weights on both sides, f16 KV on both: measured 2.3e-4 (qwen2), 2.7e-4 (qwen3), 2.5e-4 (phi3) */

/* The probe's store: the residual stream after each (layer, add) at each position, (2 n_layer, N_IDS, width). */
typedef struct {
    float *x;
    int width;
} probe_buf;

static void probe(void *ud, int layer, int which, const int32_t *pos, const float *x, int rows, int width) {
    probe_buf *b = ud;
    if (width != b->width || layer < 0) return;
    for (int r = 0; r < rows; r++)
        if (pos[r] >= 0 && pos[r] < N_IDS)
            memcpy(b->x + ((size_t)(2 * layer + which) * N_IDS + (size_t)pos[r]) * width, x + (size_t)r * width,
                   sizeof(float) * (size_t)width);
}

/* Each point's relative L2 distance from the reference; returns the first point over LAYER_MAX (-1: none), the
 * worst in *worst. */
static int first_broken(const float *got, const float *want, int n_points, int width, double *worst, double *errs) {
    int first = -1;
    *worst = 0;
    for (int k = 0; k < n_points; k++) {
        double num = 0, den = 0;
        for (size_t i = 0; i < (size_t)N_IDS * width; i++) {
            const double d = (double)got[(size_t)k * N_IDS * width + i] - want[(size_t)k * N_IDS * width + i];
            num += d * d;
            den += (double)want[(size_t)k * N_IDS * width + i] * want[(size_t)k * N_IDS * width + i];
        }
        errs[k] = den > 0 ? sqrt(num / den) : INFINITY;
        if (!(errs[k] <= *worst)) *worst = errs[k];
        if (first < 0 && !(errs[k] < LAYER_MAX)) first = k;
    }
    return first;
}

static int eval_all(tern_model *m, const int32_t *ids, int n, float *out) {
    tern_context_params p = tern_context_default_params();
    p.n_ctx = 64;
    p.n_threads = 2;
    p.device = TERN_DEVICE_CPU;
    p.ubatch = 16;
    tern_context *c = tern_context_new_ex(m, &p);
    const int rc = c ? tern_eval(c, ids, n, out, 1) : -1;
    tern_context_free(c);
    return rc;
}

/* The per-layer check: the residual stream after each add vs float64, then the flipped-RoPE recipe's first broken
 * point. */
static void check_layers(tern_model *m, const char *arch, const int32_t *ids) {
    const int E = m->n_embd, np = 2 * m->n_layer, V = tern_model_n_vocab(m);
    char path[256];
    snprintf(path, sizeof path, FIX "%s.layers", arch);
    const size_t nf = (size_t)np * N_IDS * E;
    float *want = malloc(sizeof(float) * nf), *got = calloc(nf, sizeof(float)), *lg = malloc(sizeof(float) * N_IDS * V);
    double *errs = malloc(sizeof(double) * (size_t)np);
    const size_t nr = check_read_f32(path, want, nf);
    CHECK(nr == nf, "%s: %zu floats, want %zu", path, nr, nf);
    probe_buf pb = {got, E};
    if (nr == nf) {
        cpu_set_probe(probe, &pb);
        const int rc = eval_all(m, ids, N_IDS, lg);
        cpu_set_probe(NULL, NULL);
        CHECK(rc == 0, "%s: eval with the probe", arch);
        double worst;
        const int first = first_broken(got, want, np, E, &worst, errs);
        CHECK(first < 0, "%s: residual stream vs float64: layer %d's %s add is the first point over %.0e (%.3e)", arch,
              first / 2, first % 2 ? "FFN" : "attention", LAYER_MAX, first >= 0 ? errs[first] : 0.0);
        printf("test_recipes: %s: residual stream after each of %d adds within %.3e of float64 (", arch, np, worst);
        for (int k = 0; k < np; k++) printf("%s%.1e", k ? " " : "", errs[k]);
        printf(")\n");
        /* a recipe mistake: the first point out of bounds names layer 0's attention */
        tern_recipe wrong = *m->recipe;
        wrong.rope = TERN_ROPE_NORM;
        const tern_recipe *keep = m->recipe;
        m->recipe = &wrong;
        cpu_set_probe(probe, &pb);
        eval_all(m, ids, N_IDS, lg);
        cpu_set_probe(NULL, NULL);
        m->recipe = keep;
        const int fw = first_broken(got, want, np, E, &worst, errs);
        CHECK(fw == 0, "%s: with llama's RoPE pairing the first broken point is %d (want 0: layer 0's attention)", arch,
              fw);
    }
    /* the logits against float64 too (independent of llama.cpp) */
    snprintf(path, sizeof path, FIX "%s.f64", arch);
    float *ref = malloc(sizeof(float) * N_IDS * V);
    const size_t nl = check_read_f32(path, ref, (size_t)N_IDS * V);
    CHECK(nl == (size_t)N_IDS * V, "%s: %zu floats", path, nl);
    if (nl == (size_t)N_IDS * V && eval_all(m, ids, N_IDS, lg) == 0) {
        int bad = 0;
        const double e = check_rows_rel(lg, ref, N_IDS, V, &bad);
        CHECK(e < REL_MAX && bad == 0, "%s: logits vs float64: worst row %.3e, %d argmax differ", arch, e, bad);
        printf("test_recipes: %s: logits vs float64 worst row rel L2 %.3e\n", arch, e);
    }
    free(want); free(got); free(lg); free(errs); free(ref);
}

static void check_arch(const char *arch) {
    char path[256];
    snprintf(path, sizeof path, FIX "%s.gguf", arch);
    tern_model *m = tern_model_load(path, 0);
    CHECK(m != NULL, "load %s: %s", path, tern_last_error());
    if (!m) return;
    const int V = tern_model_n_vocab(m);
    const int qwen2 = !strcmp(arch, "qwen2"), phi3 = !strcmp(arch, "phi3");
    const tern_layer *l0 = &m->layers[0];
    CHECK(!strcmp(m->arch, arch) && m->recipe && m->recipe->rope == TERN_ROPE_NEOX && m->recipe->act == TERN_ACT_SILU,
          "%s: recipe as loaded", arch);
    CHECK(qwen2 ? (l0->bq && m->layers[1].bv && !l0->q_norm)
          : phi3 ? (!l0->bq && !l0->q_norm && (const char *)l0->wk.data == (const char *)l0->wq.data + l0->wq.n_out * l0->wq.row_bytes &&
                    (const char *)l0->w_up.data == (const char *)l0->w_gate.data + l0->w_gate.n_out * l0->w_gate.row_bytes)
                 : (!l0->bq && l0->q_norm && m->layers[1].k_norm),
          "%s: biases / q-k norms / fused views bound as the row says", arch);
    int32_t ids[N_IDS];
    snprintf(path, sizeof path, FIX "%s.ids", arch);
    const int n = check_read_ids(path, ids, N_IDS);
    CHECK(n == N_IDS, "%s: %d ids", path, n);
    float *want = malloc(sizeof(float) * (size_t)N_IDS * V), *got = malloc(sizeof(float) * (size_t)N_IDS * V);
    snprintf(path, sizeof path, FIX "%s.logits", arch);
    const size_t nr = check_read_f32(path, want, (size_t)N_IDS * V);
    CHECK(nr == (size_t)N_IDS * V, "%s: %zu floats", path, nr);
    if (n == N_IDS && nr == (size_t)N_IDS * V) {
        CHECK(eval_all(m, ids, n, got) == 0, "%s: eval: %s", arch, tern_last_error());
        int bad = 0;
        const double e = check_rows_rel(got, want, n, V, &bad);
        CHECK(e < REL_MAX, "%s: logits vs llama.cpp: worst row rel L2 %.3e >= %.0e", arch, e, REL_MAX);
        CHECK(bad == 0, "%s: %d of %d positions' argmax differ from llama.cpp's", arch, bad, n);
        printf("test_recipes: %s: %d positions, worst rel L2 vs llama.cpp %.3e, argmax equal at %d of %d\n", arch, n,
               e, n - bad, n);
        /* the same with llama's RoPE pairing: a recipe mistake the comparison must see */
        tern_recipe wrong = *m->recipe;
        wrong.rope = TERN_ROPE_NORM;
        const tern_recipe *keep = m->recipe;
        m->recipe = &wrong;
        CHECK(eval_all(m, ids, n, got) == 0, "%s: eval (wrong RoPE)", arch);
        m->recipe = keep;
        const double ew = check_rows_rel(got, want, n, V, &bad);
        CHECK(ew > 20 * REL_MAX, "%s: llama's RoPE pairing gives rel L2 %.3e: the check would not see it", arch, ew);
        check_layers(m, arch, ids);
    }
    free(want);
    free(got);
    tern_model_free(m);
}

/* RoPE scaling against llama.cpp on its file (40 positions, REL_MAX, argmax everywhere), then the same weights with
 * the scaling switched off (plain RoPE, or the short factor set) must miss by far.
 * qwen2-yarn.gguf: YaRN, factor 4 over an original context of 16. phi3-longrope.gguf: LongRoPE (Phi-3 128k), attention
 * factor 1.2, original context 16: a context of 64 takes the long factors. */
static void check_scaled(const char *name) {
    char path[256];
    snprintf(path, sizeof path, FIX "%s.gguf", name);
    tern_model *m = tern_model_load(path, 0);
    CHECK(m != NULL, "load %s: %s", name, tern_last_error());
    if (!m) return;
    const int yarn = !strcmp(name, "qwen2-yarn");
    if (yarn)
        CHECK(m->rope_yarn == 4.0 && m->rope_yarn_ctx == 16 && fabsf(m->rope_mscale - (float)(1 + 0.1 * log(4.0))) < 1e-6f &&
                  m->rope_scale == 1.0,
              "yarn as loaded: factor %g, original context %d, mscale %g, linear scale %g", m->rope_yarn, m->rope_yarn_ctx,
              (double)m->rope_mscale, m->rope_scale);
    else
        CHECK(m->rope_long && m->rope_short && m->rope_yarn_ctx == 16 && fabsf(m->rope_mscale - 1.2f) < 1e-6f,
              "LongRoPE as loaded: factors %p %p, original context %d, mscale %g", (void *)m->rope_long,
              (void *)m->rope_short, m->rope_yarn_ctx, (double)m->rope_mscale);
    const int V = tern_model_n_vocab(m);
    int32_t ids[N_IDS];
    snprintf(path, sizeof path, FIX "%s.ids", name);
    const int n = check_read_ids(path, ids, N_IDS);
    float *want = malloc(sizeof(float) * (size_t)N_IDS * V), *got = malloc(sizeof(float) * (size_t)N_IDS * V);
    snprintf(path, sizeof path, FIX "%s.logits", name);
    const size_t nr = check_read_f32(path, want, (size_t)N_IDS * V);
    CHECK(n == N_IDS && nr == (size_t)N_IDS * V, "%s fixtures: %d ids, %zu floats", name, n, nr);
    if (n == N_IDS && nr == (size_t)N_IDS * V) {
        int bad = 0;
        CHECK(eval_all(m, ids, n, got) == 0, "%s: eval: %s", name, tern_last_error());
        const double e = check_rows_rel(got, want, n, V, &bad);
        CHECK(e < REL_MAX && bad == 0, "%s: logits vs llama.cpp: worst row %.3e, %d argmax differ", name, e, bad);
        printf("test_recipes: %s: %d positions, worst rel L2 vs llama.cpp %.3e, argmax equal at %d of %d\n", name, n, e,
               n - bad, n);
        if (yarn) { /* plain RoPE on the same weights */
            m->rope_yarn = 0, m->rope_mscale = 1.0f;
        } else { /* the short factors (what a context within 16 would take) */
            float *t = m->rope_long;
            m->rope_long = m->rope_short, m->rope_short = t;
        }
        CHECK(eval_all(m, ids, n, got) == 0, "%s: eval without the scaling", name);
        const double ew = check_rows_rel(got, want, n, V, &bad);
        CHECK(ew > 20 * REL_MAX, "%s: without the scaling the logits are %.3e from llama.cpp's: the check would not see it",
              name, ew);
    }
    free(want);
    free(got);
    tern_model_free(m);
}

/* gemma3.gguf: the gemma3 row at 6 layers with a sliding window of 8 (layers 0-4; 5 global), head_dim 64, against
 * llama.cpp over 40 positions (most windows cut); the same weights with every window removed must miss by far, and so
 * must a window one key wider (llama.cpp's bound: a key at distance >= 8 is masked). */
static void check_gemma3_window(void) {
    tern_model *m = tern_model_load(FIX "gemma3.gguf", 0);
    CHECK(m != NULL, "load gemma3: %s", tern_last_error());
    if (!m) return;
    CHECK(m->n_layer == 6 && m->layers[0].window == 8 && m->layers[4].window == 8 && m->layers[5].window == 0 &&
              m->layers[0].rope_table == 1 && m->layers[5].rope_table == 0 && m->layers[0].q_norm && m->layers[0].ffn_post_norm,
          "gemma3 as loaded: windows %d %d %d", m->layers[0].window, m->layers[4].window, m->layers[5].window);
    const int V = tern_model_n_vocab(m);
    int32_t ids[N_IDS];
    const int n = check_read_ids(FIX "gemma3.ids", ids, N_IDS);
    float *want = malloc(sizeof(float) * (size_t)N_IDS * V), *got = malloc(sizeof(float) * (size_t)N_IDS * V);
    const size_t nr = check_read_f32(FIX "gemma3.logits", want, (size_t)N_IDS * V);
    CHECK(n == N_IDS && nr == (size_t)N_IDS * V, "gemma3 fixtures: %d ids, %zu floats", n, nr);
    if (n == N_IDS && nr == (size_t)N_IDS * V) {
        int bad = 0;
        CHECK(eval_all(m, ids, n, got) == 0, "gemma3: eval: %s", tern_last_error());
        const double e = check_rows_rel(got, want, n, V, &bad);
        CHECK(e < REL_MAX && bad == 0, "gemma3: logits vs llama.cpp: worst row %.3e, %d argmax differ", e, bad);
        printf("test_recipes: gemma3 (window 8): %d positions, worst rel L2 vs llama.cpp %.3e, argmax equal at %d of %d\n",
               n, e, n - bad, n);
        for (int mut = 0; mut < 2; mut++) { /* no window; a window of 9 */
            for (int il = 0; il < 5; il++) m->layers[il].window = mut ? 9 : 0;
            CHECK(eval_all(m, ids, n, got) == 0, "gemma3: eval (mutation %d)", mut);
            const double ew = check_rows_rel(got, want, n, V, &bad);
            CHECK(ew > 10 * REL_MAX, "gemma3: with window %d the logits are %.3e from llama.cpp's: the check would not see it",
                  mut ? 9 : 0, ew);
            for (int il = 0; il < 5; il++) m->layers[il].window = 8;
        }
    }
    free(want);
    free(got);
    tern_model_free(m);
}

/* mistral3.gguf: the mistral3 row (llama block) with YaRN at beta_fast 8 / beta_slow 2 and yarn_log_multiplier 1 (the
 * cos/sin factor 1) and the attention temperature 0.1 over a floor scale of 16, against llama.cpp over 40 positions;
 * each of the three features removed in turn (no temperature, llama.cpp's default betas, the factor without the log
 * multiplier) must miss by far. */
static void check_mistral3(void) {
    tern_model *m = tern_model_load(FIX "mistral3.gguf", 0);
    CHECK(m != NULL, "load mistral3: %s", tern_last_error());
    if (!m) return;
    CHECK(m->recipe->rope == TERN_ROPE_NORM && m->rope_yarn == 4.0 && m->rope_yarn_beta_fast == 8.0f &&
              m->rope_yarn_beta_slow == 2.0f && fabsf(m->rope_mscale - 1.0f) < 1e-6f && m->attn_temp == 0.1f &&
              m->attn_temp_floor == 16,
          "mistral3 as loaded: yarn %g betas %g %g mscale %g temp %g floor %d", m->rope_yarn, (double)m->rope_yarn_beta_fast,
          (double)m->rope_yarn_beta_slow, (double)m->rope_mscale, (double)m->attn_temp, m->attn_temp_floor);
    const int V = tern_model_n_vocab(m);
    int32_t ids[N_IDS];
    const int n = check_read_ids(FIX "mistral3.ids", ids, N_IDS);
    float *want = malloc(sizeof(float) * (size_t)N_IDS * V), *got = malloc(sizeof(float) * (size_t)N_IDS * V);
    const size_t nr = check_read_f32(FIX "mistral3.logits", want, (size_t)N_IDS * V);
    CHECK(n == N_IDS && nr == (size_t)N_IDS * V, "mistral3 fixtures: %d ids, %zu floats", n, nr);
    if (n == N_IDS && nr == (size_t)N_IDS * V) {
        int bad = 0;
        CHECK(eval_all(m, ids, n, got) == 0, "mistral3: eval: %s", tern_last_error());
        const double e = check_rows_rel(got, want, n, V, &bad);
        CHECK(e < REL_MAX && bad == 0, "mistral3: logits vs llama.cpp: worst row %.3e, %d argmax differ", e, bad);
        printf("test_recipes: mistral3 (YaRN betas 8/2, log mul 1, temperature 0.1): %d positions, worst rel L2 vs "
               "llama.cpp %.3e, argmax equal at %d of %d\n", n, e, n - bad, n);
        static const char *what[3] = {"no temperature", "default betas", "no log multiplier"};
        for (int mut = 0; mut < 3; mut++) {
            const float t0 = m->attn_temp, bf = m->rope_yarn_beta_fast, bs = m->rope_yarn_beta_slow, ms = m->rope_mscale;
            if (mut == 0) m->attn_temp = 0.0f;
            if (mut == 1) m->rope_yarn_beta_fast = 32.0f, m->rope_yarn_beta_slow = 1.0f;
            if (mut == 2) m->rope_mscale = (float)(0.1 * log(4.0) + 1.0);
            CHECK(eval_all(m, ids, n, got) == 0, "mistral3: eval (%s)", what[mut]);
            const double ew = check_rows_rel(got, want, n, V, &bad);
            CHECK(ew > 10 * REL_MAX, "mistral3 with %s: the logits are %.3e from llama.cpp's: the check would not see it",
                  what[mut], ew);
            m->attn_temp = t0, m->rope_yarn_beta_fast = bf, m->rope_yarn_beta_slow = bs, m->rope_mscale = ms;
        }
    }
    free(want);
    free(got);
    tern_model_free(m);
}

int main(void) {
    check_mistral3();
    check_gemma3_window();
    check_arch("qwen2");
    check_arch("qwen3");
    check_arch("phi3");
    check_scaled("qwen2-yarn");
    check_scaled("phi3-longrope");
    return check_summary("test_recipes");
}
