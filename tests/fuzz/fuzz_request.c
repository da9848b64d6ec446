/* fuzz_request: libFuzzer over the server's request path (src/server/openai.c): a body -> srv_parse (UTF-8 check,
 * cJSON, nesting limit, every field's type and range, the chat template, the tokenizer, the context check) -> on
 * success the response and stream chunks rendered from a made-up generation; and the /tokenize, /detokenize,
 * /apply-template bodies. The first input byte picks the route. Built with clang -fsanitize=fuzzer,address,undefined
 * (make fuzz); tests/t_fuzz.sh runs it for a bounded time. The default model is loaded once ($TERN_MODEL overrides). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

static srv_ctx ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    const char *path = getenv("TERN_MODEL");
    tern_model *m = tern_model_load(path && *path ? path : "models/SmolLM2-135M-Instruct.Q4_1.gguf", 0);
    if (!m) { fprintf(stderr, "fuzz_request: %s\n", tern_last_error()); exit(1); }
    ctx.m = m;
    ctx.chat = tern_chat_detect(tern_model_chat_template(m));
    if (tern_chat_default_system(tern_model_chat_template(m), ctx.default_system, sizeof ctx.default_system) < 0)
        ctx.default_system[0] = 0;
    ctx.sp = tern_sampler_default_params();
    ctx.n_ctx = 512;
    ctx.model_id = "fuzz";
    return 0;
}

static void render(const srv_req *in, const uint8_t *data, size_t n) {
    srv_req r = *in;
    /* a generation: the input's printable bytes as text, its bytes as token ids with log-probabilities */
    char text[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k < sizeof text - 1; i++)
        if (data[i] >= 0x20 && data[i] < 0x7f) text[k++] = (char)data[i];
    text[k] = 0;
    r.text = text;
    r.text_len = k;
    srv_lp lps[4];
    memset(lps, 0, sizeof lps);
    for (int i = 0; i < 4; i++) {
        lps[i].id = (int32_t)(i < (int)n ? data[i] : i) * 97;
        lps[i].lp = -0.5f * (float)i;
        lps[i].n_top = r.top_logprobs < SRV_MAX_TOP_LOGPROBS ? r.top_logprobs : SRV_MAX_TOP_LOGPROBS;
        for (int j = 0; j < lps[i].n_top; j++) { lps[i].top_id[j] = (lps[i].id + j) % tern_model_n_vocab(ctx.m); lps[i].top_lp[j] = -1.0f * (float)j; }
    }
    r.lps = lps;
    r.n_lp = 4;
    r.n_gen = 4;
    r.finish = n & 1 ? "stop" : "length";
    free(srv_render_response(&ctx, &r));
    char *buf = NULL;
    size_t len = 0;
    srv_sse_first(&ctx, &r, &buf, &len);
    srv_sse_delta(&ctx, &r, 0, k / 2, 0, 2, &buf, &len);
    srv_sse_delta(&ctx, &r, k / 2, k, 2, 4, &buf, &len);
    srv_sse_finish(&ctx, &r, &buf, &len);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int route = data[0] % 5;
    const char *body = (const char *)data + 1;
    const size_t n = size - 1;
    srv_error err;
    char *out = NULL;
    if (route <= 1) {
        srv_req r;
        memset(&r, 0, sizeof r);
        if (srv_parse(&ctx, route == 0 ? SRV_CHAT : SRV_COMPLETION, body, n, &r, &err) == 0) {
            render(&r, data, size);
            srv_req_clear(&r);
        } else {
            out = srv_error_json(&err);
        }
    } else if (route == 2) out = srv_tokenize(&ctx, body, n, &err);
    else if (route == 3) out = srv_detokenize(&ctx, body, n, &err);
    else out = srv_apply_template(&ctx, body, n, &err);
    free(out);
    return 0;
}
