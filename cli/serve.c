/* serve.c: `tern serve`, the OpenAI-compatible server (src/server/; docs/serving.md).
 *   tern serve [-m MODEL] [--host 127.0.0.1] [--port 8080] [--parallel N] [-c CTX] [--api-key KEY] [...]
 * It listens first (GET /health answers 503 while the model loads), then loads the model, starts the scheduler and
 * serves until SIGINT or SIGTERM: then it stops accepting connections, lets running requests finish for up to 3 s,
 * cancels the rest and exits (within 5 s). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cpu.h"
#include "commands.h"
#include "server.h"
#include "tern.h"
#include "util.h"

#define SERVE_DEFAULT_MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#define STOP_GRACE_S 3.0 /* running requests may finish for this long after SIGINT/SIGTERM; then cancelled */

static void serve_usage(FILE *o) {
    fprintf(o,
            "usage: tern serve [options]   an OpenAI-compatible HTTP server (docs/serving.md)\n"
            "  -m, --model PATH        GGUF model (default: $TERN_MODEL or " SERVE_DEFAULT_MODEL ")\n"
            "  --host ADDR             address to bind (default 127.0.0.1: this machine only)\n"
            "  --port N                port (default 8080; 0: any free port, printed)\n"
            "  --api-key KEY           require 'Authorization: Bearer KEY' on the API routes (401 otherwise)\n"
            "  --parallel N            requests decoding at once (default 4)\n"
            "  -c, --ctx-size N        positions a request at most, prompt + completion (default min(model's, 4096))\n"
            "  --batch-tokens N        tokens an engine step at most: decode tokens first, prefill chunks in the rest\n"
            "                          (default 128 on cpu, 2048 on cuda; docs/ledger.md)\n"
            "  --queue N               requests waiting for a slot at most; beyond: 503 + Retry-After (default 64)\n"
            "  --max-body BYTES        request body limit; beyond: 413 (default 8388608)\n"
            "  --timeout SECONDS       close a connection idle this long: a request not sent, a kept-alive connection\n"
            "                          between requests (default 60; a request being answered is never idle)\n"
            "  --no-prefix-cache       compute every prompt in full (default: reuse cached KV blocks of a prefix)\n"
            "  --block-size N          KV block rows, a power of two 16..256 (default: the device's)\n"
            "  --swa-full              a model's sliding-window layers keep every KV row (default: only their window's,\n"
            "                          in a pool of their own; a cached prefix is reused where its window rows are held;\n"
            "                          --swa-compact, bench's name for that default, is accepted too)\n"
            "  --chat-template NAME    chatml | llama3 | gemma | mistral | phi3 (default: detect from the model)\n"
            "  --alias NAME            the model id /v1/models lists (default: the file name)\n"
            "  -t, --threads N         CPU threads (default: number of cores)\n"
            "  --device cpu|cuda|auto  where to run (default auto)\n"
            "  -ub, --ubatch N         tokens a forward pass at most (default 256 on cpu, 2048 on cuda)\n"
            "sampling defaults (a request's own fields override them): --temp T (0.8) --top-k N (40) --top-p P (0.95)\n"
            "  --min-p P (0.05) --repeat-penalty R (1.0) --repeat-last-n N (64); a request without a seed draws one\n");
}

static float serve_float(const char *flag, const char *s) {
    char *end;
    errno = 0;
    const float v = strtof(s, &end);
    if (*end || end == s || !isfinite(v)) cli_die("%s expects a number, got '%s'", flag, s);
    return v;
}

/* The default model: $TERN_MODEL, ./models/..., or models/... next to the executable (as tern run). */
static const char *default_model(void) {
    const char *env = getenv("TERN_MODEL");
    if (env && *env) return env;
    if (access(SERVE_DEFAULT_MODEL, R_OK) == 0) return SERVE_DEFAULT_MODEL;
    static char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64 - sizeof SERVE_DEFAULT_MODEL);
    if (n > 0) {
        path[n] = 0;
        char *slash = strrchr(path, '/');
        if (slash) strcpy(slash + 1, SERVE_DEFAULT_MODEL);
        if (access(path, R_OK) == 0) return path;
    }
    return SERVE_DEFAULT_MODEL;
}

int cmd_serve(int argc, char **argv) {
    const char *model = NULL, *host = "127.0.0.1", *api_key = NULL, *tmpl = NULL, *alias = NULL;
    int port = 8080, parallel = 4, n_ctx = 0, batch_tokens = 0, queue = 64, prefix_cache = 1, block_size = 0, swa_compact = 1;
    int n_threads = 0, ubatch = 0;
    long long max_body = 8 << 20, timeout_s = 60;
    tern_device device = cli_default_device();
    tern_sampler_params sp = tern_sampler_default_params();
    cli_args it = cli_args_begin(argc, argv);
    while (cli_args_next(&it)) {
        const char *a = it.opt;
#define ARG() cli_args_value(&it)
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = ARG();
        else if (!strcmp(a, "--host")) host = ARG();
        else if (!strcmp(a, "--port")) port = (int)cli_parse_long(a, ARG(), 0, 65535);
        else if (!strcmp(a, "--api-key")) api_key = ARG();
        else if (!strcmp(a, "--parallel") || !strcmp(a, "-np")) parallel = (int)cli_parse_long(a, ARG(), 1, 1024);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) n_ctx = (int)cli_parse_long(a, ARG(), 0, 1 << 24);
        else if (!strcmp(a, "--batch-tokens")) batch_tokens = (int)cli_parse_long(a, ARG(), 1, 1 << 20);
        else if (!strcmp(a, "--queue")) queue = (int)cli_parse_long(a, ARG(), 0, 1 << 20);
        else if (!strcmp(a, "--max-body")) max_body = cli_parse_long(a, ARG(), 1024, 1L << 30);
        else if (!strcmp(a, "--timeout")) timeout_s = cli_parse_long(a, ARG(), 1, 86400);
        else if (!strcmp(a, "--no-prefix-cache")) prefix_cache = 0;
        else if (!strcmp(a, "--swa-compact")) swa_compact = 1;
        else if (!strcmp(a, "--swa-full")) swa_compact = 0;
        else if (!strcmp(a, "--block-size")) block_size = (int)cli_parse_long(a, ARG(), 16, 256);
        else if (!strcmp(a, "--chat-template")) tmpl = ARG();
        else if (!strcmp(a, "--alias")) alias = ARG();
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) n_threads = (int)cli_parse_long(a, ARG(), 1, 1024);
        else if (!strcmp(a, "--device")) device = cli_parse_device(ARG());
        else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch")) ubatch = (int)cli_parse_long(a, ARG(), 1, 1 << 16);
        else if (!strcmp(a, "--temp")) sp.temp = serve_float(a, ARG());
        else if (!strcmp(a, "--top-k")) sp.top_k = (int)cli_parse_long(a, ARG(), 0, INT_MAX);
        else if (!strcmp(a, "--top-p")) sp.top_p = serve_float(a, ARG());
        else if (!strcmp(a, "--min-p")) sp.min_p = serve_float(a, ARG());
        else if (!strcmp(a, "--repeat-penalty")) sp.repeat_penalty = serve_float(a, ARG());
        else if (!strcmp(a, "--repeat-last-n")) sp.repeat_last_n = (int)cli_parse_long(a, ARG(), -1, INT_MAX);
        else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) sp.seed = (uint64_t)cli_parse_long(a, ARG(), 0, LONG_MAX);
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { serve_usage(stdout); return 0; }
        else cli_die("unknown option '%s' (see tern serve --help)", a);
#undef ARG
    }
    if (sp.top_p <= 0.0f || sp.top_p > 1.0f) cli_die("--top-p must be in (0, 1], got %g", sp.top_p);
    if (sp.min_p < 0.0f || sp.min_p > 1.0f) cli_die("--min-p must be in [0, 1], got %g", sp.min_p);
    if (!(sp.repeat_penalty > 0.0f)) cli_die("--repeat-penalty must be > 0, got %g", sp.repeat_penalty);
    if (api_key && !*api_key) cli_die("--api-key must not be empty");
    enum tern_chat_family fam = TERN_CHAT_UNKNOWN;
    if (tmpl && (fam = tern_chat_from_name(tmpl)) == TERN_CHAT_UNKNOWN)
        cli_die("unknown --chat-template '%s' (chatml, llama3, gemma, mistral, phi3)", tmpl);
    if (!model) model = default_model();
    if (access(model, R_OK) != 0) cli_die("cannot open model '%s': %s", model, strerror(errno));

    /* SIGINT/SIGTERM are taken by sigwait below: blocked here, before any thread starts, so every thread inherits
     * the mask; a write to a closed connection must not kill the process */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    srv_http_params hp = {host, port, api_key, (size_t)max_body, 4 * parallel + queue + 64, (int)timeout_s};
    srv_http *h = srv_http_start(&hp);
    if (!h) cli_die("%s", tern_last_error());
    tern_model *m = tern_model_load(model, 0);
    if (!m) cli_die("%s", tern_last_error());
    tern_engine_params ep = tern_engine_default_params();
    ep.ctx.n_ctx = n_ctx;
    ep.ctx.n_threads = n_threads;
    ep.ctx.device = device;
    ep.ctx.ubatch = ubatch;
    ep.ctx.swa_compact = swa_compact;
    ep.n_seq_max = parallel;
    ep.block_size = block_size;
    ep.prefix_cache = prefix_cache;
    cli_batch_order(parallel);
    tern_engine *e = tern_engine_new(m, &ep);
    if (!e) cli_die("%s", tern_last_error());
    srv_ctx c = {0};
    c.m = m;
    if (fam == TERN_CHAT_UNKNOWN) fam = tern_chat_detect(tern_model_chat_template(m));
    c.chat = fam;
    if (fam == TERN_CHAT_UNKNOWN)
        fprintf(stderr, "tern serve: warning: no chat template recognised; /v1/chat/completions answers 400 "
                        "(choose one with --chat-template)\n");
    if (tern_chat_default_system(tern_model_chat_template(m), c.default_system, sizeof c.default_system) < 0)
        c.default_system[0] = 0;
    c.sp = sp;
    c.n_ctx = tern_engine_n_ctx(e);
    if (!alias) { /* the file name without .gguf */
        const char *slash = strrchr(model, '/');
        static char name[PATH_MAX];
        snprintf(name, sizeof name, "%s", slash ? slash + 1 : model);
        const size_t k = strlen(name);
        if (k > 5 && !strcmp(name + k - 5, ".gguf")) name[k - 5] = 0;
        alias = name;
    }
    c.model_id = srv_utf8_lossy(alias, strlen(alias)); /* a file name may hold any bytes; JSON carries UTF-8 (kept) */
    /* the pool's sizes for the banner, read before the scheduler's thread owns the engine */
    int used, total, bs;
    tern_engine_kv_usage(e, &used, &total, &bs);
    tern_kv_stats kst;
    tern_engine_kv_stats(e, &kst);
    const int cuda = !strcmp(tern_engine_device(e), "cuda");
    srv_sched_params spp = {parallel, queue, batch_tokens > 0 ? batch_tokens : cuda ? 2048 : 128};
    srv_sched *s = srv_sched_new(&c, e, &spp);
    if (!s) cli_die("%s", tern_last_error());
    srv_http_ready(h, &c, s);
    char swa_pool[64] = "";
    if (kst.swa_blocks_total > 0) snprintf(swa_pool, sizeof swa_pool, " (+ %d in the window pool)", kst.swa_blocks_total);
    fprintf(stderr, "tern serve: %s on %s, %d parallel x %d positions, KV pool %d blocks of %d%s, batch %d tokens, prefix "
                    "cache %s, chat template %s%s\n", tern_model_desc(m), tern_engine_device(e), parallel, c.n_ctx, total,
            bs, swa_pool, spp.batch_tokens, prefix_cache ? "on" : "off",
            fam == TERN_CHAT_UNKNOWN ? "none" : tern_chat_name(fam),
            !cuda ? "" : tern_cuda_order() == 2 ? ", f16-order matmuls" : tern_cuda_order() == 1 ? ", chunk-order matmuls" : "");
    fprintf(stderr, "tern serve: listening on http://%s:%d\n", host, srv_http_port(h));
    fflush(stderr);

    int sig = 0;
    sigwait(&sigs, &sig);
    const double t0 = tern_time_s();
    fprintf(stderr, "tern serve: %s: stopping (running requests get %.0f s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
            STOP_GRACE_S);
    srv_http_quiesce(h);
    srv_sched_stop(s, STOP_GRACE_S);
    /* the cancelled streams' error events go out before the connections close (MHD_stop_daemon cut them mid-way:
     * a tester's streams ended with no event and no [DONE]); an idle keep-alive connection costs the whole wait */
    srv_http_drain(h, 1.0);
    srv_http_stop(h);
    srv_sched_free(s);
    tern_engine_free(e);
    tern_model_free(m);
    fprintf(stderr, "tern serve: stopped in %.2f s\n", tern_time_s() - t0);
    return 0;
}
