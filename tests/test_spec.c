/* test_spec: speculative greedy decoding (src/speculate.c) on the CPU against plain greedy decoding.
 * - A scripted drafter (draft_fn) proposes the true greedy continuation with a wrong token at position j,
 *   for every j < depth 8: each pass must accept exactly j drafts and emit the correction, the KV cache
 *   must be rolled back so the whole output equals plain greedy (40 tokens), and the cache length must
 *   match the history after every pass.
 * - A drafter that is always right: every pass accepts min(depth, what is left); always wrong: 1 token.
 * - Model drafters: the model drafting for itself (a second context; everything accepted) and its first
 *   12 layers: output equal to plain greedy; the draft context is rolled back too.
 * - Prompt lookup on a repetitive prompt: equal output and some drafts accepted.
 * - The acceptance gate pauses drafting after a failed window. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tern.h"

#define MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#define L 40

typedef struct {
    const int32_t *G; /* plain greedy continuation (L) */
    int n_prompt, wrong_at; /* wrong_at < 0: never wrong; >= 100: always wrong at 0 */
    int n_vocab;
} script;

static int scripted(void *ud, const int32_t *hist, int n_hist, int max, int32_t *out) {
    const script *s = ud;
    const int next = n_hist - s->n_prompt; /* index in G of the first draft */
    int d = 0;
    for (; d < max && next + d < L; d++) out[d] = s->G[next + d];
    if (s->wrong_at >= 0 && s->wrong_at < d) out[s->wrong_at] = (out[s->wrong_at] + 1) % s->n_vocab;
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

int main(void) {
    tern_model *m = tern_model_load(MODEL, 0);
    CHECK(m != NULL, "load");
    if (!m) return check_summary("test_spec");
    const int V = tern_model_n_vocab(m);
    const char *text = "<|im_start|>user\nName three fruits and say why each is healthy.<|im_end|>\n<|im_start|>assistant\n";
    int32_t prompt[128], G[L];
    const int np = tern_model_tokenize(m, text, strlen(text), tern_model_add_bos(m), 1, prompt, 128);
    /* plain greedy */
    {
        tern_context *c = cctx(m, 0);
        int32_t next;
        CHECK(tern_eval_greedy(c, prompt, np, &next) == 0, "prefill");
        for (int i = 0; i < L; i++) {
            G[i] = next;
            if (i + 1 < L) CHECK(tern_eval_greedy(c, &G[i], 1, &next) == 0, "decode");
        }
        tern_context_free(c);
    }
    script sc = {G, np, -1, V};
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
    sp.draft_fn = NULL;
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
    tern_model_free(m);
    return check_summary("test_spec");
}
