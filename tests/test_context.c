/* test_context: context parameters and the greedy entry point on the CPU (any build; on a machine with
 * no GPU a CUDA build takes the same path).
 * - tern_context_new_ex(device CPU) runs on "cpu"; the library ignores TERN_DEVICE (the CLI's); TERN_DEVICE_CUDA fails
 *   with a one-line message when the build or the machine has no GPU (skipped where a GPU is present);
 * - tensor parallelism: tern_tp_check splits SmolLM2 (9 heads, 3 KV heads) over 1 and 3 GPUs and refuses 2
 *   (KV heads), 9 (over TERN_TP_MAX); a 4-layer copy whose O rows are Q6_K refuses 3 (192 columns are not
 *   whole 256-blocks); --tp on a CPU context is refused;
 * - ubatch: a prompt evaluated in chunks of 7 gives bit-identical logits to one chunk (every token's
 *   row is computed with one fixed order whatever the chunking, see backend_cpu.h);
 * - tern_eval_greedy returns the argmax of tern_eval's logits, step by step, for 24 decode steps;
 * - tern_eval_sample draws what tern_sampler_sample draws from tern_eval's logits (same seed, penalty on). */
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "check.h"
#include "model.h"
#include "tern.h"

#define MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"

static tern_context *cpu_ctx(tern_model *m, int ubatch) {
    tern_context_params p = tern_context_default_params();
    p.n_ctx = 128;
    p.n_threads = 2;
    p.device = TERN_DEVICE_CPU;
    p.ubatch = ubatch;
    return tern_context_new_ex(m, &p);
}

int main(void) {
    tern_model *m = tern_model_load(MODEL, 0);
    CHECK(m != NULL, "load: %s", tern_last_error());
    if (!m) return check_summary("test_context");
    const int V = tern_model_n_vocab(m);
    const char *text = "The quick brown fox jumps over the lazy dog, and then";
    int32_t ids[64];
    const int n = tern_model_tokenize(m, text, strlen(text), tern_model_add_bos(m), 1, ids, 64);
    CHECK(n > 8 && n < 64, "tokens %d", n);

    /* device selection */
    tern_context *c = cpu_ctx(m, 0);
    CHECK(c && !strcmp(tern_context_device(c), "cpu"), "cpu context");
    tern_context_free(c);
    /* the library reads no environment: TERN_DEVICE is the CLI's (t_cli.sh); an AUTO context here is the CPU */
    setenv("TERN_DEVICE", "bogus", 1);
    c = tern_context_new(m, 64, 1);
    CHECK(c && !strcmp(tern_context_device(c), tern_cuda_name()[0] ? "cuda" : "cpu"), "TERN_DEVICE ignored by the library");
    tern_context_free(c);
    unsetenv("TERN_DEVICE");
    if (!tern_cuda_name()[0]) {
        tern_context_params p = tern_context_default_params();
        p.n_ctx = 64;
        p.device = TERN_DEVICE_CUDA;
        c = tern_context_new_ex(m, &p);
        CHECK(c == NULL && strstr(tern_last_error(), "CUDA") && !strchr(tern_last_error(), '\n'),
              "cuda without a GPU: %s", tern_last_error());
        tern_context_free(c);
    }

    /* chunked prefill is bit-identical */
    float *a = malloc(sizeof(float) * (size_t)V * n), *b = malloc(sizeof(float) * (size_t)V * n);
    tern_context *c1 = cpu_ctx(m, 0), *c7 = cpu_ctx(m, 7);
    CHECK(tern_eval(c1, ids, n, a, 1) == 0 && tern_eval(c7, ids, n, b, 1) == 0, "eval");
    CHECK(memcmp(a, b, sizeof(float) * (size_t)V * n) == 0, "ubatch 7 changed the logits");
    CHECK(tern_context_n_past(c7) == n, "n_past %d", tern_context_n_past(c7));

    /* tern_eval_greedy == argmax of tern_eval */
    tern_context *g = cpu_ctx(m, 0);
    int32_t next = -1, want = tern_argmax(a + (size_t)(n - 1) * V, V);
    CHECK(tern_eval_greedy(g, ids, n, &next) == 0 && next == want, "prefill greedy %d vs %d", next, want);
    int same = 1;
    for (int i = 0; i < 24 && same; i++) {
        int32_t tok = want;
        CHECK(tern_eval(c1, &tok, 1, a, 0) == 0, "decode");
        want = tern_argmax(a, V);
        same = tern_eval_greedy(g, &tok, 1, &next) == 0 && next == want;
    }
    CHECK(same, "greedy step differs: %d vs %d", next, want);
    int32_t bad = V;
    CHECK(tern_eval_greedy(g, &bad, 1, &next) == -1, "out-of-range token accepted");

    /* tern_eval_sample == tern_sampler_sample on tern_eval's logits, same seed, penalty on */
    {
        tern_sampler_params sp = tern_sampler_default_params();
        sp.seed = 42;
        sp.repeat_penalty = 1.3f;
        tern_sampler *s1 = tern_sampler_new(&sp, V), *s2 = tern_sampler_new(&sp, V);
        tern_context *e1 = cpu_ctx(m, 0), *e2 = cpu_ctx(m, 0);
        int32_t hist[128];
        int nh = n;
        memcpy(hist, ids, sizeof(int32_t) * (size_t)n);
        CHECK(tern_eval(e1, ids, n, a, 0) == 0, "eval");
        int32_t want_id = tern_sampler_sample(s1, a, hist, nh), got_id = -1;
        CHECK(tern_eval_sample(e2, ids, n, s2, hist, nh, &got_id) == 0 && got_id == want_id, "prefill sample %d vs %d",
              got_id, want_id);
        int same_s = 1;
        for (int i = 0; i < 24 && same_s && nh < 128; i++) {
            const int32_t tok = want_id;
            hist[nh++] = tok;
            CHECK(tern_eval(e1, &tok, 1, a, 0) == 0, "decode");
            want_id = tern_sampler_sample(s1, a, hist, nh);
            same_s = tern_eval_sample(e2, &tok, 1, s2, hist, nh, &got_id) == 0 && got_id == want_id;
        }
        CHECK(same_s, "sampled step differs: %d vs %d", got_id, want_id);
        CHECK(tern_eval_sample(e2, &bad, 1, s2, hist, nh, &got_id) == -1, "out-of-range token accepted by sample");
        tern_context_free(e1);
        tern_context_free(e2);
        tern_sampler_free(s1);
        tern_sampler_free(s2);
    }
    tern_context_free(g);
    tern_context_free(c1);
    tern_context_free(c7);
    free(a);
    free(b);
    /* tensor parallelism: what splits, what is refused (no GPU needed) */
    char why[512];
    CHECK(tern_tp_check(m, 1, why, sizeof why) == 0 && tern_tp_check(m, 3, why, sizeof why) == 0, "tp 1, 3: %s", why);
    CHECK(tern_tp_check(m, 2, why, sizeof why) == -1 && strstr(why, "3 KV heads"), "tp 2 refused: %s", why);
    CHECK(tern_tp_check(m, 9, why, sizeof why) == -1 && strstr(why, "1..8"), "tp 9 refused: %s", why);
    const enum tern_type wo_type = m->layers[1].wo.type;
    m->layers[1].wo.type = TERN_TYPE_Q6_K; /* only the check reads it */
    CHECK(tern_tp_check(m, 3, why, sizeof why) == -1 && strstr(why, "layer 1") && strstr(why, "whole blocks"),
          "tp 3 with Q6_K O rows refused: %s", why);
    m->layers[1].wo.type = wo_type;
    tern_context_params tp = tern_context_default_params();
    tp.device = TERN_DEVICE_CPU;
    tp.n_ctx = 16;
    tp.tp = 3;
    c = tern_context_new_ex(m, &tp);
    CHECK(c == NULL && strstr(tern_last_error(), "CUDA GPUs only"), "tp on the CPU refused: %s", tern_last_error());
    tern_context_free(c);

    tern_model_free(m);
    return check_summary("test_context");
}
