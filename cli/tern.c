/* tern: the command-line front end.
 *   tern run  -m MODEL -p PROMPT [-n N] [sampling] [-c CTX] [-t THREADS]
 *   tern chat -m MODEL [--chat-template NAME] [sampling] [-c CTX] [-t THREADS]
 * Errors print one line "tern: error: ..." and exit with status 2. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <editline/readline.h>

#include "backend_cpu.h"
#include "chat.h"
#include "commands.h"
#include "quant.h"
#include "sampler.h"
#include "tern.h"
#include "tokenizer.h"
#include "util.h"

#define DEFAULT_MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#ifndef TERN_BUILD_COMMIT
#define TERN_BUILD_COMMIT "unknown"
#endif

void cli_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tern: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void usage(FILE *o) {
    fprintf(o,
            "usage: tern <command> [options]     (tern -m MODEL -p PROMPT ... is tern run; --opt=value works too)\n"
            "       tern --version\n"
            "commands:\n"
            "  run    generate a continuation of a prompt (streams to stdout, tok/s to stderr)\n"
            "  chat   interactive multi-turn chat using the model's chat template\n"
            "  tokenize    print the token ids of a text (tern tokenize --help); detokenize: ids to text\n"
            "  perplexity  llama-perplexity's measure over a text file (tern perplexity --help)\n"
            "  quantize    convert a GGUF (F32/F16/BF16) or an HF safetensors directory to a quantized GGUF\n"
            "  synth  write a synthetic GGUF with a real architecture's shapes (tern synth --help)\n"
            "  bench  prefill/decode tok/s table and JSON receipt (tern bench --help)\n"
            "  ab     interleaved A/B of two configurations (tern ab --help)\n"
            "  roofline  device ceilings, and kernels as %% of their floor (tern roofline --help)\n"
            "  serve  OpenAI-compatible HTTP server with continuous batching and a chat page (tern serve --help)\n"
            "options of run and chat:\n"
            "  -m, --model PATH        GGUF model (default: $TERN_MODEL or " DEFAULT_MODEL ")\n"
            "  -p, --prompt TEXT       prompt (run; without -p or -f a piped standard input is the prompt)\n"
            "  -f, --file PATH         read the prompt from a file, - for standard input (run; one final newline is\n"
            "                          dropped)\n"
            "  --logprobs N            run: one line per generated token on stdout, its log-probability and the N most\n"
            "                          likely tokens' (log-softmax of the model's logits, before sampling)\n"
            "  --verbose               chat: tok/s after each reply (also printed to stderr when it is a terminal)\n"
            "  -n, --n-predict N       tokens to generate, -1 = until the context is full (default: 128 for run,\n"
            "                          the rest of the context for chat); stops early at end-of-generation\n"
            "  -c, --ctx-size N        context size (default or 0: min(model context, 4096))\n"
            "  -t, --threads N         threads (default: number of cores)\n"
            "  --device cpu|cuda|auto  where to run (default auto: cuda when this build has it and a GPU is present)\n"
            "  -ub, --ubatch N         tokens per prefill chunk (default 256 on cpu, 2048 on cuda)\n"
            "  -ctk, --cache-type-k T  KV cache type for K: f16 (default) or q8_0 (CUDA; K and V the same)\n"
            "  -ctv, --cache-type-v T  KV cache type for V: f16 (default) or q8_0 (CUDA; K and V the same)\n"
            "  --tp N                  tensor parallelism over CUDA GPUs 0..N-1 through NCCL (default 1)\n"
            "  --swa-full              a model's sliding-window layers keep every KV row (default: only their\n"
            "                          window's, + 64 for rollback, in a pool of their own: the same output, less memory;\n"
            "                          --swa-compact, bench's name for that default, is accepted too)\n"
            "speculative decoding (run; greedy output identical to plain greedy, sampling the same distribution):\n"
            "  --spec-lookup           draft by prompt lookup (continuation of the last n-gram's earlier occurrence)\n"
            "  --draft-model PATH      draft with a second model of the same vocabulary\n"
            "  --draft-layers K        draft with the model's own first K layers (self-speculative)\n"
            "  --draft-max N           tokens drafted per pass, 1..15 (default 4)\n"
            "  --verify exact|fast     exact (default): verify rows get the bits of decode steps; fast (CUDA): the\n"
            "                          tensor-core GEMM verifies, faster, greedy output may diverge\n"
            "  --draft-min N           draft nothing when fewer would be drafted (default 0)\n"
            "  --draft-p-min P         model drafters: stop drafting under this top probability (default 0 = off)\n"
            "  --draft-gate G          cost (default): draft the depth with the most expected tokens per second,\n"
            "                          from this run's measured pass times and acceptance; window: pause drafting\n"
            "                          8 passes (doubling to 256) when under R of the last 16+ drafts were accepted\n"
            "                          and halve/double the depth; off: always draft --draft-max\n"
            "  --draft-accept-min R    the window gate's R (default 0.25; 0 = off); selects the window gate\n"
            "  --temp T                temperature (default 0.8; <= 0 = greedy)\n"
            "  --top-k N               top-k (default 40; 0 = off)\n"
            "  --top-p P               top-p (default 0.95; 1 = off)\n"
            "  --min-p P               min-p (default 0.05; 0 = off)\n"
            "  --repeat-penalty R      repeat penalty (default 1.0 = off)\n"
            "  --repeat-last-n N       tokens the repeat penalty looks back (default 64)\n"
            "  -s, --seed S            RNG seed (default 0: the same sampled text every run; -1: random, printed to\n"
            "                          stderr)\n"
            "  --special               print control tokens\n"
            "  --ignore-eos            keep generating past end-of-generation tokens (benchmarks)\n"
            "  --no-special            do not parse control-token texts in the prompt (run)\n"
            "  --chat-template NAME    chatml | llama3 | gemma | mistral | phi3 (chat; default: detect)\n"
            "  --system TEXT           system message (chat; default: the template's own default, if any)\n");
}

typedef struct {
    const char *cmd;
    const char *model, *prompt, *file, *chat_template, *system;
    int n_predict, n_ctx, n_threads, show_special, parse_special, ignore_eos, ubatch, tp, verify_fast;
    int cache_type_k, cache_type_v, swa_compact;
    tern_device device;
    tern_sampler_params sp;
    /* speculative decoding (run): prompt lookup, a draft model, or the first K layers */
    int spec_lookup, draft_max, draft_min, draft_layers;
    const char *draft_model;
    float draft_p_min, draft_accept_min;
    int draft_gate; /* 0 cost, 1 window, 2 off; -1 not given */
    int logprobs;   /* run: top-N candidates per generated token (0: off) */
    int verbose;
    int seed_random; /* --seed -1: the seed came from the system's random source */
} options;

#define PLAIN_GREEDY(o) ((o)->sp.temp <= 0.0f && (o)->sp.repeat_penalty == 1.0f)

tern_device cli_parse_device(const char *s) {
    if (!strcmp(s, "cpu")) return TERN_DEVICE_CPU;
    if (!strcmp(s, "cuda")) return TERN_DEVICE_CUDA;
    if (!strcmp(s, "auto")) return TERN_DEVICE_AUTO;
    cli_die("--device expects cpu, cuda or auto, got '%s'", s);
    return TERN_DEVICE_AUTO;
}

tern_device cli_default_device(void) {
    const char *e = getenv("TERN_DEVICE");
    if (!e || !*e) return TERN_DEVICE_AUTO;
    if (!strcmp(e, "cpu")) return TERN_DEVICE_CPU;
    if (!strcmp(e, "cuda")) return TERN_DEVICE_CUDA;
    if (!strcmp(e, "auto")) return TERN_DEVICE_AUTO;
    cli_die("TERN_DEVICE=%s: expected cpu, cuda or auto", e);
    return TERN_DEVICE_AUTO;
}

/* The environment's settings onto the library's table (tern_config), here and nowhere else: the list is
 * docs/measuring.md's table. A value other than the ones each takes is refused with one line. */
static void cli_config_from_env(void) {
    tern_config c = tern_config_get();
    const char *simd = getenv("TERN_SIMD");
    if (simd && !*simd) simd = NULL; /* empty: unset, as every other TERN_* */
    if (simd && strcmp(simd, "scalar") != 0 && strcmp(simd, "avx2") != 0 && strcmp(simd, "avxvnni") != 0 &&
        strcmp(simd, "avx512") != 0 && strcmp(simd, "avx512vnni") != 0)
        cli_die("TERN_SIMD=%s is not a SIMD path (scalar, avx2, avxvnni, avx512, avx512vnni)", simd);
    if (simd && tern_simd_set(simd) != 0) cli_die("TERN_SIMD=%s is not available on this CPU", simd);
    c.simd_scalar = simd && !strcmp(simd, "scalar");
    static const struct { const char *name; size_t off; } flags[] = {
        {"TERN_MATMUL_REF", offsetof(tern_config, matmul_ref)},
        {"TERN_TRACE", offsetof(tern_config, trace)},
        {"TERN_CUDA_GRAPH", offsetof(tern_config, cuda_graph)},
        {"TERN_CUDA_TIMING", offsetof(tern_config, cuda_timing)}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const char *v = getenv(flags[i].name);
        if (!v || !*v) continue;
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) cli_die("%s=%s: expected 0 or 1", flags[i].name, v);
        *(int *)((char *)&c + flags[i].off) = v[0] == '1';
    }
    const char *gc = getenv("TERN_GEMV_CHUNK"); /* 0 today's order, 1 the chunk order, 2 the f16 order */
    if (gc && *gc) c.gemv_chunk = (int)cli_parse_long("TERN_GEMV_CHUNK", gc, 0, 2);
    const char *rps = getenv("TERN_ATT_RPS");
    if (rps && *rps) c.att_rps = (int)cli_parse_long("TERN_ATT_RPS", rps, 16, 4096);
    const char *aw = getenv("TERN_ATT_WARPS");
    if (aw && *aw) {
        c.att_warps = (int)cli_parse_long("TERN_ATT_WARPS", aw, 0, 16);
        if (c.att_warps && c.att_warps != 4 && c.att_warps != 8 && c.att_warps != 16)
            cli_die("TERN_ATT_WARPS=%s: expected 0 (the rule), 4, 8 or 16", aw);
    }
    const char *ams = getenv("TERN_ATT_MS"); /* a token's splits in one CTA: -1 MS's rule, 0 off, N from N rule CTAs */
    if (ams && *ams) c.att_ms = (int)cli_parse_long("TERN_ATT_MS", ams, -1, 1 << 20);
    const char *tlp = getenv("TERN_TIMELINE"); /* a file: every kernel's device times (CUPTI), bench/timeline.py */
    if (tlp && *tlp && tern_cuda_timeline(tlp, getenv("TERN_CUPTI_LIB")) != 0) cli_die("%s", tern_last_error());
    const char *pm = getenv("TERN_PDL_MAX");
    if (pm && *pm) c.pdl_max = (int)cli_parse_long("TERN_PDL_MAX", pm, -1, 64);
    const char *ha = getenv("TERN_HM_ARM"); /* LO-HI:ARM, the f16 order's arm for passes of LO..HI tokens; 0 the chooser */
    if (ha && *ha && strcmp(ha, "0") != 0) {
        char a[3], b[3], d[3]; /* up to two decimal digits each: no sign, space or overflow gets through */
        int nc = 0;
        const int ok = sscanf(ha, "%2[0-9]-%2[0-9]:%2[0-9]%n", a, b, d, &nc) == 3 && !ha[nc];
        const int lo = ok ? atoi(a) : 0, hi = ok ? atoi(b) : 0, arm = ok ? atoi(d) : -1;
        if (!ok || lo < 1 || hi < lo || hi > 64 || arm > 11)
            cli_die("TERN_HM_ARM=%s: expected LO-HI:ARM (1 <= LO <= HI <= 64, ARM 0..11) or 0", ha);
        c.hm_arm_lo = lo, c.hm_arm_hi = hi, c.hm_arm = arm;
    }
    tern_config_set(&c);
}

/* Many sequences at once (tern serve --parallel N > 1, tern bench --parallel with a B > 1) ask for the f16 order
 * (tern_config.gemv_chunk 2: CUDA passes of up to 64 tokens through the f16 MMA GEMM, each sequence's bits its own at
 * any B), which an engine takes where every layer matrix has it (Q4_0, Q8_0, Q4_K and Q6_K on Hopper) and else runs the
 * chunk order (1), unless
 * TERN_GEMV_CHUNK says otherwise. H200, synthetic Llama-3-8B Q4_0, S_TG against the chunk order (docs/ledger.md
 * 2026-12-05 "many sequences take the f16 order"): B = 4 +23%, 8 +25%, 16 +41%, 64 2.1x, but one sequence in such an
 * engine -19.5% (379 against 471). One sequence (tern run, tern bench without --parallel) keeps today's order. */
void cli_batch_order(int n_seq) {
    const char *v = getenv("TERN_GEMV_CHUNK");
    if (n_seq <= 1 || (v && *v)) return;
    tern_config c = tern_config_get();
    c.gemv_chunk = 2;
    tern_config_set(&c);
}

long cli_parse_long(const char *flag, const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) cli_die("%s expects an integer in [%ld, %ld], got '%s'", flag, lo, hi, s);
    return v;
}

cli_args cli_args_begin(int argc, char **argv) {
    cli_args it;
    memset(&it, 0, sizeof it);
    it.argc = argc;
    it.argv = argv;
    it.i = 1; /* argv[1] is the subcommand */
    return it;
}

/* an inline value nobody took: the option is a flag (checked here, before the next option and at the end) */
static void cli_args_check_used(const cli_args *it) {
    if (it->inline_val && !it->used) cli_die("%s takes no value (got '%s')", it->opt, it->argv[it->i]);
}

int cli_args_next(cli_args *it) {
    cli_args_check_used(it);
    it->opt = it->inline_val = NULL;
    it->used = 0;
    if (++it->i >= it->argc) return 0;
    const char *a = it->argv[it->i], *eq = strchr(a, '=');
    const size_t k = eq ? (size_t)(eq - a) : 0;
    int split = !strncmp(a, "--", 2) && k > 2 && k < sizeof it->name;
    for (size_t c = 2; split && c < k; c++)
        split = (a[c] >= 'a' && a[c] <= 'z') || (a[c] >= '0' && a[c] <= '9') || a[c] == '-';
    if (!split) {
        it->opt = a;
        return 1;
    }
    memcpy(it->name, a, k);
    it->name[k] = 0;
    it->opt = it->name;
    it->inline_val = eq + 1;
    if (!strcmp(it->opt, "--help")) cli_args_check_used(it); /* before the parser prints help and exits 0 */
    return 1;
}

const char *cli_args_value(cli_args *it) {
    if (it->inline_val) {
        it->used = 1;
        return it->inline_val;
    }
    if (it->i + 1 >= it->argc) cli_die("%s needs a value", it->opt);
    return it->argv[++it->i];
}

static float parse_float(const char *flag, const char *s) {
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    /* ERANGE on underflow (1e-45) still gives a usable tiny value; only overflow and junk are errors */
    if ((errno && isinf(v)) || *end || end == s || v != v) cli_die("%s expects a number, got '%s'", flag, s);
    return v;
}

static void parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->device = cli_default_device();
    o->swa_compact = 1; /* llama.cpp's default too (its --swa-full turns it off) */
    o->cmd = argv[1];
    const int is_run = !strcmp(o->cmd, "run"), is_chat = !strcmp(o->cmd, "chat");
    o->n_predict = -2; /* not given: 128 for run, the rest of the context for chat */
    o->draft_accept_min = -1.0f; /* not given */
    o->draft_gate = -1;
    o->parse_special = 1;
    o->sp = tern_sampler_default_params();
    cli_args it = cli_args_begin(argc, argv);
    while (cli_args_next(&it)) {
        const char *a = it.opt;
#define ARG() cli_args_value(&it)
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = ARG();
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = ARG();
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) o->file = ARG();
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) o->n_predict = (int)cli_parse_long(a, ARG(), -1, INT_MAX / 2);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) o->n_ctx = (int)cli_parse_long(a, ARG(), 0, 1 << 24);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) o->n_threads = (int)cli_parse_long(a, ARG(), 1, 1024);
        else if (!strcmp(a, "--device")) o->device = cli_parse_device(ARG());
        else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch")) o->ubatch = (int)cli_parse_long(a, ARG(), 1, 1 << 16);
        else if (!strcmp(a, "--tp")) o->tp = (int)cli_parse_long(a, ARG(), 1, 8);
        else if (!strcmp(a, "--swa-compact")) o->swa_compact = 1;
        else if (!strcmp(a, "--swa-full")) o->swa_compact = 0;
        else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") || !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v")) {
            const char *v = ARG();
            const int t = tern_cache_type_parse(v);
            if (t < 0) cli_die("%s expects f16 or q8_0, got '%s'", a, v);
            if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k")) o->cache_type_k = t;
            else o->cache_type_v = t;
        } else if (!strcmp(a, "--verify")) {
            const char *v = ARG();
            if (!strcmp(v, "fast")) o->verify_fast = 1;
            else if (!strcmp(v, "exact")) o->verify_fast = 0;
            else cli_die("--verify expects exact or fast, got '%s'", v);
        }
        else if (!strcmp(a, "--draft-gate")) {
            const char *v = ARG();
            if (!strcmp(v, "cost")) o->draft_gate = 0;
            else if (!strcmp(v, "window")) o->draft_gate = 1;
            else if (!strcmp(v, "off")) o->draft_gate = 2;
            else cli_die("--draft-gate expects cost, window or off, got '%s'", v);
        }
        else if (!strcmp(a, "--spec-lookup")) o->spec_lookup = 1;
        else if (!strcmp(a, "--draft-max")) o->draft_max = (int)cli_parse_long(a, ARG(), 1, TERN_SPEC_MAX_DRAFT);
        else if (!strcmp(a, "--draft-min")) o->draft_min = (int)cli_parse_long(a, ARG(), 0, TERN_SPEC_MAX_DRAFT);
        else if (!strcmp(a, "--draft-model")) o->draft_model = ARG();
        else if (!strcmp(a, "--draft-layers")) o->draft_layers = (int)cli_parse_long(a, ARG(), 1, 1 << 16);
        else if (!strcmp(a, "--draft-p-min")) o->draft_p_min = parse_float(a, ARG());
        else if (!strcmp(a, "--draft-accept-min")) {
            o->draft_accept_min = parse_float(a, ARG());
            if (!(o->draft_accept_min >= 0.0f && o->draft_accept_min <= 1.0f))
                cli_die("--draft-accept-min must be in [0, 1], got %g", o->draft_accept_min);
        }
        else if (!strcmp(a, "--temp")) o->sp.temp = parse_float(a, ARG());
        else if (!strcmp(a, "--top-k")) o->sp.top_k = (int)cli_parse_long(a, ARG(), 0, INT_MAX);
        else if (!strcmp(a, "--top-p")) o->sp.top_p = parse_float(a, ARG());
        else if (!strcmp(a, "--min-p")) o->sp.min_p = parse_float(a, ARG());
        else if (!strcmp(a, "--repeat-penalty")) o->sp.repeat_penalty = parse_float(a, ARG());
        else if (!strcmp(a, "--repeat-last-n")) o->sp.repeat_last_n = (int)cli_parse_long(a, ARG(), -1, INT_MAX);
        else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
            const long seed = cli_parse_long(a, ARG(), -1, LONG_MAX);
            o->seed_random = seed == -1;
            o->sp.seed = seed == -1 ? 0 : (uint64_t)seed;
        }
        else if (!strcmp(a, "--logprobs")) o->logprobs = (int)cli_parse_long(a, ARG(), 1, 100);
        else if (!strcmp(a, "--verbose")) o->verbose = 1;
        else if (!strcmp(a, "--special")) o->show_special = 1;
        else if (!strcmp(a, "--ignore-eos")) o->ignore_eos = 1;
        else if (!strcmp(a, "--no-special")) o->parse_special = 0;
        else if (!strcmp(a, "--chat-template")) o->chat_template = ARG();
        else if (!strcmp(a, "--system")) o->system = ARG();
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); exit(0); }
        else cli_die("unknown option '%s' (see tern --help)", a);
#undef ARG
        /* options of the other subcommand are an error, not silently ignored */
        if (is_chat && (!strcmp(a, "-p") || !strcmp(a, "--prompt") || !strcmp(a, "-f") || !strcmp(a, "--file") ||
                        !strcmp(a, "--ignore-eos") || !strcmp(a, "--no-special")))
            cli_die("%s is an option of 'tern run', not of 'tern chat'", a);
        if (is_run && (!strcmp(a, "--system") || !strcmp(a, "--chat-template") || !strcmp(a, "--verbose")))
            cli_die("%s is an option of 'tern chat', not of 'tern run'", a);
        if (is_chat && !strcmp(a, "--logprobs")) cli_die("%s is an option of 'tern run', not of 'tern chat'", a);
    }
    if (o->prompt && o->file) cli_die("give the prompt with -p or -f, not both");
    const int spec = o->spec_lookup + (o->draft_model != NULL) + (o->draft_layers > 0);
    if (spec > 1) cli_die("choose one drafter: --spec-lookup, --draft-model or --draft-layers");
    if (!spec && (o->draft_max || o->draft_min || o->draft_p_min != 0.0f || o->draft_accept_min >= 0.0f ||
                  o->draft_gate >= 0))
        cli_die("--draft-max/--draft-min/--draft-p-min/--draft-accept-min/--draft-gate need a drafter (--spec-lookup, "
                "--draft-model, --draft-layers)");
    if (spec && !is_run) cli_die("speculative decoding is an option of 'tern run'");
    if (spec && o->logprobs) cli_die("--logprobs does not go with speculative decoding");
    if (o->seed_random) { /* llama.cpp's --seed -1: a random seed, printed so the run can be repeated */
        uint64_t seed = 0;
        if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
            seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        o->sp.seed = seed & (uint64_t)LONG_MAX; /* so that --seed can take it back */
        fprintf(stderr, "tern: seed %llu\n", (unsigned long long)o->sp.seed);
    }
    if (!(o->draft_p_min >= 0.0f && o->draft_p_min <= 1.0f)) cli_die("--draft-p-min must be in [0, 1], got %g", o->draft_p_min);
    if (spec && !o->draft_max) o->draft_max = 4;
    if (!(o->draft_accept_min <= 1.0f)) cli_die("--draft-accept-min must be in [0, 1], got %g", o->draft_accept_min);
    if (o->draft_accept_min >= 0.0f && o->draft_gate >= 0 && o->draft_gate != 1)
        cli_die("--draft-accept-min is the window gate's setting; it does not go with --draft-gate %s",
                o->draft_gate == 0 ? "cost" : "off");
    if (o->draft_gate < 0) o->draft_gate = o->draft_accept_min >= 0.0f ? 1 : 0;
    if (o->draft_accept_min < 0.0f) o->draft_accept_min = 0.25f; /* not given */
    if (o->draft_gate != 1) o->draft_accept_min = 0.0f;
    if (o->draft_min > o->draft_max) cli_die("--draft-min %d exceeds --draft-max %d", o->draft_min, o->draft_max);
    if (o->n_threads > 4 * tern_n_cores())
        cli_die("-t %d is more than 4x the %d cores available (spinning threads would crawl)", o->n_threads, tern_n_cores());
    /* sampling ranges, named as the options are (temp <= 0 means greedy, as in llama.cpp) */
    if (o->sp.top_p <= 0.0f || o->sp.top_p > 1.0f) cli_die("--top-p must be in (0, 1], got %g", o->sp.top_p);
    if (o->sp.min_p < 0.0f || o->sp.min_p > 1.0f) cli_die("--min-p must be in [0, 1], got %g", o->sp.min_p);
    /* a penalty p divides a repeated token's positive logit by p: 1e-30 made it ~1e31 (issue 28's fuzzing); past
     * [0.01, 100] a penalty only makes the repeated tokens certain or impossible */
    if (!(o->sp.repeat_penalty >= 0.01f && o->sp.repeat_penalty <= 100.0f))
        cli_die("--repeat-penalty must be in [0.01, 100] (1 = off), got %g", o->sp.repeat_penalty);
    if (isinf(o->sp.temp)) cli_die("--temp must be finite");
    if (!o->model) o->model = getenv("TERN_MODEL");
    if (!o->model) {
        /* default model: ./models/... or next to the executable */
        static char path[PATH_MAX];
        if (access(DEFAULT_MODEL, R_OK) == 0) {
            o->model = DEFAULT_MODEL;
        } else {
            ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64 - sizeof DEFAULT_MODEL);
            if (n > 0) {
                path[n] = 0;
                char *slash = strrchr(path, '/');
                if (slash) strcpy(slash + 1, DEFAULT_MODEL);
            }
            o->model = n > 0 && access(path, R_OK) == 0 ? path : DEFAULT_MODEL;
        }
    }
}

#define MAX_PROMPT_BYTES ((size_t)256 << 20) /* 256 MiB: far beyond any context; keeps int math safe */

char *cli_read_text(const char *path) {
    const int is_stdin = !strcmp(path, "-");
    FILE *fp = is_stdin ? stdin : fopen(path, "rb");
    if (is_stdin) path = "(standard input)";
    if (!fp) cli_die("cannot open prompt file '%s': %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = tern_xmalloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, fp)) > 0) {
        n += r;
        if (n > MAX_PROMPT_BYTES) cli_die("prompt file '%s' is larger than %zu MiB", path, MAX_PROMPT_BYTES >> 20);
        if (cap - n - 1 == 0) buf = realloc(buf, cap *= 2);
        if (!buf) cli_die("out of memory reading '%s'", path);
    }
    if (ferror(fp)) cli_die("cannot read prompt file '%s': %s", path, strerror(errno));
    if (!is_stdin) fclose(fp);
    if (memchr(buf, 0, n)) cli_die("prompt file '%s' contains a NUL byte (not text)", path);
    buf[n] = 0;
    return buf;
}

static int32_t *tokenize(const tern_model *m, const char *text, int add_bos, int special, int *n_out) {
    size_t len = strlen(text);
    if (len > MAX_PROMPT_BYTES) cli_die("prompt of %zu bytes is larger than %zu MiB", len, MAX_PROMPT_BYTES >> 20);
    int cap = (int)(len + 8);
    int32_t *ids = tern_xmalloc(sizeof(int32_t) * (size_t)cap);
    size_t dropped = 0;
    int n = tern_model_tokenize_ex(m, text, len, add_bos, special, ids, cap, &dropped);
    if (n < 0) cli_die("tokenize: %s", tern_last_error());
    if (n > cap) {
        ids = realloc(ids, sizeof(int32_t) * (size_t)n);
        if (!ids) cli_die("out of memory");
        n = tern_model_tokenize_ex(m, text, len, add_bos, special, ids, n, &dropped);
    }
    static int warned;
    if (dropped && !warned) { /* once per process: chat tokenizes the conversation every turn */
        warned = 1;
        fprintf(stderr, "tern: warning: %zu byte%s of the prompt ha%s no token in this vocabulary and %s dropped "
                        "(as llama.cpp drops them)\n", dropped, dropped == 1 ? "" : "s", dropped == 1 ? "s" : "ve",
                dropped == 1 ? "was" : "were");
    }
    *n_out = n;
    return ids;
}

/* Warn (once) when the prompt is not valid UTF-8: the tokenizer takes it as bytes, the echo shows U+FFFD. */
static void warn_invalid_utf8(const char *text, size_t n) {
    static int warned;
    const size_t at = tern_utf8_valid_prefix(text, n);
    if (at < n && !warned) {
        warned = 1;
        fprintf(stderr, "tern: warning: the prompt is not valid UTF-8 (byte 0x%02X at offset %ld); it is tokenized "
                        "as bytes\n", (unsigned char)text[at], (long)at);
    }
}

/* Write text to stdout as valid UTF-8 (invalid bytes as U+FFFD). */
static void echo_utf8(const char *text, size_t n) {
    tern_utf8_stream us = {{0}, 0};
    char out[3 * (4096 + 8)];
    for (size_t done = 0; done < n;) {
        const int k = (int)(n - done < 4096 ? n - done : 4096);
        fwrite(out, 1, (size_t)tern_utf8_stream_push(&us, text + done, k, out), stdout);
        done += (size_t)k;
    }
    if (us.n_pending) fputs("\xEF\xBF\xBD", stdout);
}

/* Streams one token's bytes to stdout, never splitting a UTF-8 character. */
static void emit(const tern_model *m, tern_utf8_stream *us, int32_t id, int show_special, char **acc, size_t *acc_len) {
    char small[256], *piece = small;
    int n = tern_model_token_to_piece(m, id, small, sizeof small, show_special);
    if (n > (int)sizeof small) { /* a long token text: fetch it whole */
        piece = tern_xmalloc((size_t)n);
        n = tern_model_token_to_piece(m, id, piece, n, show_special);
    }
    if (n <= 0) { if (piece != small) free(piece); return; }
    /* the stream writes U+FFFD (3 bytes) for each invalid byte: room for 3 * (n + 8) */
    char out_small[3 * (sizeof small + 8)], *out = piece == small ? out_small : tern_xmalloc(3 * ((size_t)n + 8));
    int k = tern_utf8_stream_push(us, piece, n, out);
    fwrite(out, 1, (size_t)k, stdout);
    fflush(stdout);
    if (acc) {
        *acc = realloc(*acc, *acc_len + (size_t)n + 1);
        if (!*acc) cli_die("out of memory");
        memcpy(*acc + *acc_len, piece, (size_t)n);
        *acc_len += (size_t)n;
        (*acc)[*acc_len] = 0;
    }
    if (piece != small) { free(out); free(piece); }
}

typedef struct {
    int n_gen;
    double t_decode;
    int cut;         /* stopped by n_predict (not by an end-of-generation token) */
    int interrupted; /* stopped by Ctrl-C (chat) */
    char spec_line[640]; /* speculative decoding's counts, printed after the text's closing newline ("" if none) */
} gen_stats;

/* Ctrl-C in chat: set by the handler, polled between tokens and prefill chunks (chat only installs it). At the
 * prompt (g_at_prompt) the handler ends the chat itself: a flag would be lost when the signal lands between
 * libedit's prompt and its read(), which then blocks (the chat pty test hit it); so it restores the terminal as it
 * was before libedit, ends the line and exits 0 (write, tcsetattr and _exit are async-signal-safe). */
static volatile sig_atomic_t g_sigint, g_at_prompt;
static struct termios g_tty_saved;
static void on_sigint(int sig) {
    (void)sig;
    g_sigint = 1;
    if (g_at_prompt) {
        tcsetattr(0, TCSANOW, &g_tty_saved);
        if (write(1, "\n", 1) < 0) _exit(0);
        _exit(0);
    }
}

/* A token's text as a quoted string with C escapes for quotes, backslashes, control and invalid UTF-8 bytes. */
static void print_quoted(FILE *f, const char *p, int n) {
    fputc('"', f);
    for (int i = 0; i < n;) {
        const unsigned char c = (unsigned char)p[i];
        const size_t ok = c >= 0x80 ? tern_utf8_valid_prefix(p + i, (size_t)(n - i)) : 0;
        if (c >= 0x80 && ok > 0) { /* whole valid characters pass */
            int L = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            fwrite(p + i, 1, (size_t)L, f);
            i += L;
            continue;
        }
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20 || c >= 0x7F) fprintf(f, "\\x%02x", c);
        else fputc(c, f);
        i++;
    }
    fputc('"', f);
}

/* --logprobs N: one line for the token id drawn from logits (n_vocab): its text, id and log-probability, then the N
 * most likely tokens' (log-softmax of the logits as the model gave them, before penalty, filters and temperature). */
static void print_logprobs(const tern_model *m, const float *logits, int32_t id, int top_n) {
    const int nv = tern_model_n_vocab(m);
    float mx = -INFINITY;
    for (int i = 0; i < nv; i++)
        if (logits[i] > mx) mx = logits[i];
    double z = 0.0;
    for (int i = 0; i < nv; i++) z += exp((double)logits[i] - mx);
    const double lse = mx + log(z);
    int32_t top[100];
    int nt = 0;
    for (int i = 0; i < nv; i++) { /* insertion into the N best, larger logit first, lower id on ties */
        if (nt == top_n && !(logits[i] > logits[top[nt - 1]])) continue;
        int k = nt < top_n ? nt++ : nt - 1;
        while (k > 0 && logits[i] > logits[top[k - 1]]) { top[k] = top[k - 1]; k--; }
        top[k] = i;
    }
    char piece[256];
    int n = tern_model_token_to_piece(m, id, piece, sizeof piece, 1);
    print_quoted(stdout, piece, n < (int)sizeof piece ? n : (int)sizeof piece);
    printf("\tid %d\tlogprob %.4f\ttop:", id, logits[id] - lse);
    for (int k = 0; k < nt; k++) {
        n = tern_model_token_to_piece(m, top[k], piece, sizeof piece, 1);
        fputc(' ', stdout);
        print_quoted(stdout, piece, n < (int)sizeof piece ? n : (int)sizeof piece);
        printf(" %.4f", logits[top[k]] - lse);
    }
    fputc('\n', stdout);
}

/* Sample and feed tokens after the prompt is in the cache; logits hold the last prompt position's.
 * logprobs > 0: a line per token instead of the text (print_logprobs); the logits of every step come back.
 * interruptible: Ctrl-C (g_sigint) stops the reply between tokens. */
static gen_stats generate(tern_context *ctx, const tern_model *m, tern_sampler *smp, float *logits, int32_t **hist,
                          int *n_hist, int *cap_hist, int n_predict, int show_special, int ignore_eos,
                          char **acc, int plain_greedy, int logprobs, int interruptible) {
    gen_stats st = {0};
    /* the first id is sampled from the prefill logits; later ids come with each decode step: from
     * tern_eval_greedy for plain greedy (temp <= 0, no repeat penalty), else from tern_eval_sample, so a
     * GPU decode step copies back one id instead of the logits; with --logprobs, tern_eval's logits and the
     * same sampler over them (tern_eval_sample's documented equivalent) */
    int32_t next = -1;
    tern_utf8_stream us = {{0}, 0};
    size_t acc_len = acc && *acc ? strlen(*acc) : 0;
    double t0 = tern_time_s();
    for (int i = 0; i < n_predict; i++) {
        if (interruptible && g_sigint) { st.interrupted = 1; break; }
        int32_t id = i > 0 && !logprobs ? next : tern_sampler_sample(smp, logits, *hist, *n_hist);
        if (id < 0) cli_die("sampling failed: %s", tern_last_error());
        if (*n_hist == *cap_hist) {
            *hist = realloc(*hist, sizeof(int32_t) * (size_t)(*cap_hist *= 2));
            if (!*hist) cli_die("out of memory");
        }
        (*hist)[(*n_hist)++] = id;
        if (logprobs) print_logprobs(m, logits, id, logprobs);
        if (!ignore_eos && tern_model_is_eog(m, id)) break;
        if (!logprobs) emit(m, &us, id, show_special, acc, &acc_len);
        st.n_gen++;
        if (i + 1 == n_predict) { st.cut = 1; break; }
        /* sampling: the next id comes from tern_eval_sample (on the GPU the chain runs on the device) */
        if (logprobs ? tern_eval(ctx, &id, 1, logits, 0)
                     : plain_greedy ? tern_eval_greedy(ctx, &id, 1, &next)
                                    : tern_eval_sample(ctx, &id, 1, smp, *hist, *n_hist, &next))
            cli_die("%s", tern_last_error());
    }
    st.t_decode = tern_time_s() - t0;
    /* generation stopped inside a multi-byte character (-n reached): show U+FFFD, never half a character */
    if (us.n_pending) fputs("\xEF\xBF\xBD", stdout);
    fflush(stdout);
    return st;
}

/* Evaluate toks[0..n) after what the cache holds, the last token's logits into logits. The prompt goes in chunks
 * of the context's prefill chunk (-ub; the engine cuts a long call into the same passes, so the bits are the same);
 * between chunks a terminal's stderr gets a progress bar once the prefill has run 2 s, and (interruptible) Ctrl-C
 * stops it. Returns 0, or 1 when interrupted (the cache then holds a prefix of toks). Dies on error. */
static int prefill(tern_context *ctx, const options *o, const int32_t *toks, int n, float *logits, int interruptible) {
    const int chunk = o->ubatch > 0 ? o->ubatch : !strcmp(tern_context_device(ctx), "cuda") ? 2048 : 256;
    const int bar = isatty(2);
    const double t0 = tern_time_s();
    int shown = 0;
    for (int done = 0; done < n;) {
        if (interruptible && g_sigint) {
            if (shown) fputs("\r\033[K", stderr);
            return 1;
        }
        const int k = n - done < chunk ? n - done : chunk;
        if (tern_eval(ctx, toks + done, k, done + k == n ? logits : NULL, 0) != 0) cli_die("%s", tern_last_error());
        done += k;
        const double t = tern_time_s() - t0;
        if (bar && done < n && t > 2.0) {
            char hashes[31];
            const int w = (int)(30.0 * done / n);
            memset(hashes, '#', (size_t)w);
            memset(hashes + w, ' ', (size_t)(30 - w));
            hashes[30] = 0;
            fprintf(stderr, "\rprefill [%s] %d/%d tokens, %.0f tok/s, %.0f s left ", hashes, done, n, done / t,
                    (n - done) / (done / t));
            shown = 1;
        }
    }
    if (shown) fputs("\r\033[K", stderr);
    return 0;
}

/* Speculative generation (tern_spec_step) after the prompt is in the cache; logits hold the last prompt
 * position's. Greedy: the same output as generate(); with sampling settings, speculative sampling (the
 * same distribution, not the same tokens). Prints the drafter's counters. */
static gen_stats generate_spec(tern_context *ctx, const tern_model *m, const options *o, tern_context *dctx,
                               tern_sampler *smp, const float *logits, int32_t **hist, int *n_hist, int *cap_hist,
                               int n_predict) {
    gen_stats st = {0};
    tern_utf8_stream us = {{0}, 0};
    size_t acc_len = 0;
    tern_spec_params sp = tern_spec_default_params();
    sp.draft_max = o->draft_max;
    sp.draft_min = o->draft_min;
    sp.draft = dctx;
    sp.p_min = o->draft_p_min;
    sp.min_accept = o->draft_accept_min;
    sp.cost_gate = o->draft_gate == 0;
    sp.sampler = PLAIN_GREEDY(o) ? NULL : smp; /* speculative sampling keeps plain sampling's distribution */
    tern_spec_stats ss;
    memset(&ss, 0, sizeof ss);
    double t0 = tern_time_s();
    int32_t out[TERN_SPEC_MAX_DRAFT + 1];
    int n_out = 1, done = 0;
    out[0] = sp.sampler ? tern_sampler_sample(smp, logits, *hist, *n_hist) : tern_argmax(logits, tern_model_n_vocab(m));
    if (out[0] < 0) cli_die("%s", tern_last_error());
    while (!done) {
        for (int i = 0; i < n_out && !done; i++) {
            const int32_t id = out[i];
            if (*n_hist == *cap_hist) {
                *hist = realloc(*hist, sizeof(int32_t) * (size_t)(*cap_hist *= 2));
                if (!*hist) cli_die("out of memory");
            }
            (*hist)[(*n_hist)++] = id;
            if (!o->ignore_eos && tern_model_is_eog(m, id)) { done = 1; break; }
            emit(m, &us, id, o->show_special, NULL, &acc_len);
            if (++st.n_gen == n_predict) done = 1;
        }
        if (done) break;
        n_out = tern_spec_step(ctx, &sp, *hist, *n_hist, out, n_predict - st.n_gen + 1, &ss);
        if (n_out < 0) cli_die("%s", tern_last_error());
    }
    st.t_decode = tern_time_s() - t0;
    if (us.n_pending) fputs("\xEF\xBF\xBD", stdout);
    fflush(stdout);
    snprintf(st.spec_line, sizeof st.spec_line,
             "spec: %s, %lld passes for %lld tokens (%.3f passes/token), %lld drafted, %lld accepted (%.1f%%), "
             "mean accepted %.2f per pass, %lld passes gated\n",
            o->spec_lookup ? "prompt lookup" : o->draft_model ? "draft model" : "first layers", (long long)ss.passes,
            (long long)ss.generated, ss.generated ? (double)ss.passes / ss.generated : 0.0, (long long)ss.drafted,
            (long long)ss.accepted, ss.drafted ? 100.0 * ss.accepted / ss.drafted : 0.0,
            ss.passes ? (double)ss.accepted / ss.passes : 0.0, (long long)ss.gated);
    if (sp.cost_gate) { /* the cost gate's measured pass cost by token count, relative to one token */
        size_t n = strlen(st.spec_line) - 1; /* over the newline */
        n += (size_t)snprintf(st.spec_line + n, sizeof st.spec_line - n, "; cost gate, pass time vs 1 token:");
        int any = 0;
        for (int k = 2; k <= TERN_SPEC_MAX_DRAFT + 1 && n < sizeof st.spec_line - 16; k++)
            if (ss.n_pass[k] >= 2 && ss.n_pass[1] >= 2) {
                n += (size_t)snprintf(st.spec_line + n, sizeof st.spec_line - n, " %d:%.2f", k, tern_spec_cost(&ss, k));
                any = 1;
            }
        if (!any && n < sizeof st.spec_line - 16) n += (size_t)snprintf(st.spec_line + n, sizeof st.spec_line - n, " none measured");
        if (n < sizeof st.spec_line - 48)
            n += (size_t)snprintf(st.spec_line + n, sizeof st.spec_line - n, "; one-token time re-measured %d",
                                  ss.t1_remeasures);
        if (n < sizeof st.spec_line - 1) { st.spec_line[n] = '\n'; st.spec_line[n + 1] = 0; }
    }
    return st;
}

static tern_model *load(const options *o) {
    tern_model *m = tern_model_load(o->model, 1);
    if (!m) cli_die("%s", tern_last_error());
    return m;
}

static tern_context *new_ctx(tern_model *m, const options *o) {
    if (o->n_threads > tern_n_cores())
        fprintf(stderr, "tern: warning: -t %d exceeds the %d cores available; oversubscribed threads are slow\n",
                o->n_threads, tern_n_cores());
    if (o->n_ctx > tern_model_n_ctx_train(m))
        fprintf(stderr, "tern: warning: -c %d exceeds the model's training context of %d; quality may degrade\n",
                o->n_ctx, tern_model_n_ctx_train(m));
    tern_context_params p = tern_context_default_params();
    p.n_ctx = o->n_ctx;
    p.n_threads = o->n_threads;
    p.device = o->device;
    p.ubatch = o->ubatch;
    p.tp = o->tp;
    p.verify_fast = o->verify_fast;
    p.cache_type_k = o->cache_type_k;
    p.cache_type_v = o->cache_type_v;
    p.swa_compact = o->swa_compact;
    p.verbose = 1;
    tern_context *c = tern_context_new_ex(m, &p);
    if (!c) cli_die("%s", tern_last_error());
    return c;
}

static int cmd_run(const options *o) {
    /* the prompt: -p, -f (- is standard input), or a standard input that is not a terminal */
    const char *file = o->file ? o->file : !o->prompt && !isatty(0) ? "-" : NULL;
    if (!o->prompt && !file) cli_die("run needs a prompt: -p TEXT, -f FILE, or text on standard input");
    char *text = file ? cli_read_text(file) : strdup(o->prompt);
    size_t tl = strlen(text);
    if (file && tl && text[tl - 1] == '\n') text[--tl] = 0; /* a file's final newline, as llama.cpp's -f */
    warn_invalid_utf8(text, tl);
    tern_model *m = load(o);
    int n_prompt;
    int32_t *toks = tokenize(m, text, tern_model_add_bos(m), o->parse_special, &n_prompt);
    if (n_prompt == 0) cli_die("the prompt is empty after tokenization (give a non-empty prompt)");
    int n_ctx = o->n_ctx > 0 ? o->n_ctx : (tern_model_n_ctx_train(m) < 4096 ? tern_model_n_ctx_train(m) : 4096);
    if (n_prompt > n_ctx) cli_die("prompt of %d tokens exceeds the context of %d (use -c)", n_prompt, n_ctx);
    const int n_predict = o->n_predict == -2 ? 128 : o->n_predict == -1 ? n_ctx - n_prompt : o->n_predict;
    if ((long)n_prompt + n_predict > n_ctx)
        cli_die("prompt of %d tokens + %d to generate exceeds the context of %d (use -c or a smaller -n)", n_prompt,
            n_predict, n_ctx);
    tern_context *ctx = new_ctx(m, o);
    tern_sampler *smp = tern_sampler_new(&o->sp, tern_model_n_vocab(m));
    if (!smp) cli_die("%s", tern_last_error());
    float *logits = tern_xmalloc(sizeof(float) * (size_t)tern_model_n_vocab(m));
    if (!o->logprobs) echo_utf8(text, tl); /* --logprobs: stdout holds the per-token lines alone */
    fflush(stdout);
    double t0 = tern_time_s();
    prefill(ctx, o, toks, n_prompt, logits, 0);
    double t_prefill = tern_time_s() - t0;
    int cap = n_prompt + n_predict + 1, n_hist = n_prompt;
    int32_t *hist = tern_xmalloc(sizeof(int32_t) * (size_t)cap);
    memcpy(hist, toks, sizeof(int32_t) * (size_t)n_prompt);
    tern_model *dm = NULL;
    tern_context *dctx = NULL;
    if (o->draft_model || o->draft_layers > 0) {
        if (o->draft_model) {
            dm = tern_model_load(o->draft_model, 0);
            if (!dm) cli_die("draft model: %s", tern_last_error());
            if (tern_model_n_vocab(dm) != tern_model_n_vocab(m))
                cli_die("draft model has %d vocabulary entries, the model %d: they must share the vocabulary",
                        tern_model_n_vocab(dm), tern_model_n_vocab(m));
        }
        if (o->draft_layers > 0 && o->draft_layers >= tern_model_n_layer(m))
            cli_die("--draft-layers %d: the model has %d layers (the drafter must be shallower)", o->draft_layers,
                    tern_model_n_layer(m));
        tern_context_params dp = tern_context_default_params();
        dp.n_ctx = tern_context_n_ctx(ctx);
        dp.n_threads = o->n_threads;
        dp.device = !strcmp(tern_context_device(ctx), "cuda") ? TERN_DEVICE_CUDA : TERN_DEVICE_CPU;
        dp.n_layer = o->draft_layers;
        dctx = tern_context_new_ex(dm ? dm : m, &dp);
        if (!dctx) cli_die("draft context: %s", tern_last_error());
    }
    const int spec = o->spec_lookup || dctx;
    if (spec) { /* verify graphs captured now, not in the first passes (docs/ledger.md 2026-12-01 "speculative decoding: a cost gate, verify graphs captured at set-up") */
        double ms = 0.0;
        const int k = tern_context_prepare_verify(ctx, o->draft_max + 1, &ms);
        if (k < 0) cli_die("%s", tern_last_error());
        if (k > 0) fprintf(stderr, "tern: %d CUDA graphs of verify passes (2..%d tokens) captured in %.1f ms\n", k,
                           o->draft_max + 1, ms);
    }
    gen_stats st = spec ? generate_spec(ctx, m, o, dctx, smp, logits, &hist, &n_hist, &cap, n_predict)
                        : generate(ctx, m, smp, logits, &hist, &n_hist, &cap, n_predict, o->show_special, o->ignore_eos,
                                   NULL, PLAIN_GREEDY(o), o->logprobs, 0);
    tern_context_free(dctx);
    tern_model_free(dm);
    if (!o->logprobs) fputc('\n', stdout);
    fflush(stdout);
    fputs(st.spec_line, stderr);
    /* decode rate counts the tokens that went through a decode step (the first generated token comes
     * from the prefill logits) */
    int n_dec = st.n_gen > 1 ? st.n_gen - 1 : 0;
    char where[300];
    if (!strcmp(tern_context_device(ctx), "cuda")) snprintf(where, sizeof where, "cuda, %s", tern_cuda_name());
    else snprintf(where, sizeof where, "%d threads, %s", o->n_threads > 0 ? o->n_threads : tern_n_cores(), tern_simd_name());
    fprintf(stderr, "prefill: %d tokens in %.3f s, %.2f tok/s | decode: %d tokens in %.3f s, %.2f tok/s | %s\n",
            n_prompt, t_prefill, n_prompt / t_prefill, n_dec, st.t_decode,
            st.t_decode > 0 && n_dec ? n_dec / st.t_decode : 0.0, where);
    free(hist); free(logits); free(toks); free(text);
    tern_sampler_free(smp);
    tern_context_free(ctx);
    tern_model_free(m);
    return 0;
}

static int cmd_chat(const options *o) {
    tern_model *m = load(o);
    enum tern_chat_family fam;
    if (o->chat_template) {
        fam = tern_chat_from_name(o->chat_template);
        if (fam == TERN_CHAT_UNKNOWN) cli_die("unknown --chat-template '%s' (chatml, llama3, gemma, mistral, phi3)", o->chat_template);
    } else {
        fam = tern_chat_detect(tern_model_chat_template(m));
        if (fam == TERN_CHAT_UNKNOWN)
            cli_die("%s chat template of this model; choose one with --chat-template chatml|llama3|gemma|mistral|phi3",
                tern_model_chat_template(m) ? "unrecognised" : "no");
    }
    tern_context *ctx = new_ctx(m, o);
    tern_sampler *smp = tern_sampler_new(&o->sp, tern_model_n_vocab(m));
    if (!smp) cli_die("%s", tern_last_error());
    const int n_vocab = tern_model_n_vocab(m), n_ctx = tern_context_n_ctx(ctx);
    float *logits = tern_xmalloc(sizeof(float) * (size_t)n_vocab);
    int n_msgs = 0, cap_msgs = 16;
    tern_chat_msg *msgs = tern_xmalloc(sizeof(tern_chat_msg) * (size_t)cap_msgs);
    char def_sys[1024];
    if (o->system) msgs[n_msgs++] = (tern_chat_msg){"system", strdup(o->system)};
    else if (tern_chat_default_system(tern_model_chat_template(m), def_sys, sizeof def_sys) > 0)
        msgs[n_msgs++] = (tern_chat_msg){"system", strdup(def_sys)}; /* as the template would insert it */
    int cap_hist = 1024, n_hist = 0; /* tokens in the KV cache */
    int32_t *hist = tern_xmalloc(sizeof(int32_t) * (size_t)cap_hist);
    /* A terminal gets libedit's line editing and history; Ctrl-C stops a reply (or a prefill) and returns to the
     * prompt, Ctrl-C at the prompt ends the chat. The handler only sets a flag: no SA_RESTART, so a read at the
     * prompt returns. */
    const int tty = isatty(0), show_rate = o->verbose || isatty(2);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    if (tty) {
        if (tcgetattr(0, &g_tty_saved)) cli_die("chat: the terminal's settings: %s", strerror(errno));
        rl_readline_name = "tern";
        using_history();
        stifle_history(1000);
    }
    fprintf(stderr, "chat with %s (template %s); empty line or EOF quits%s\n", tern_model_desc(m), tern_chat_name(fam),
            tty ? ", Ctrl-C stops a reply (at the prompt: quits)" : "");
    char *line = NULL;
    size_t line_cap = 0;
    for (;;) {
        g_sigint = 0;
        size_t len;
        if (tty) {
            free(line);
            fflush(stdout);
            g_at_prompt = 1;
            line = readline("> ");
            g_at_prompt = 0;
            if (!line) { /* EOF (Ctrl-C at the prompt exits in on_sigint) */
                if (g_sigint) fputc('\n', stdout);
                break;
            }
            len = strlen(line);
            if (len) add_history(line);
        } else {
            ssize_t got = getline(&line, &line_cap, stdin); /* any length: one line is one message */
            if (got < 0) break;
            len = (size_t)got;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len) break;
        if (memchr(line, 0, len)) cli_die("a line of the input contains a NUL byte (not text)"); /* as run's -f */
        warn_invalid_utf8(line, len);
        if (n_msgs + 2 > cap_msgs) {
            msgs = realloc(msgs, sizeof(tern_chat_msg) * (size_t)(cap_msgs *= 2));
            if (!msgs) cli_die("out of memory");
        }
        msgs[n_msgs++] = (tern_chat_msg){"user", strdup(line)};
        int need = tern_chat_format(fam, msgs, n_msgs, 1, NULL, 0);
        char *conv = tern_xmalloc((size_t)need + 1);
        tern_chat_format(fam, msgs, n_msgs, 1, conv, (size_t)need + 1);
        int n_tok;
        int32_t *toks = tokenize(m, conv, tern_model_add_bos(m), 1, &n_tok);
        free(conv);
        const int n_predict = o->n_predict < 0 ? n_ctx - n_tok : o->n_predict;
        if (n_tok + n_predict > n_ctx || n_predict <= 0) {
            fprintf(stderr, "tern: the conversation (%d tokens) + %d to generate exceeds the context of %d; "
                            "start a new chat or use -c\n", n_tok, n_predict > 0 ? n_predict : 1, n_ctx);
            free(toks);
            free((char *)msgs[--n_msgs].content);
            continue;
        }
        /* reuse the cached prefix of the conversation; evaluate the rest */
        int keep = 0;
        while (keep < n_hist && keep < n_tok - 1 && hist[keep] == toks[keep]) keep++;
        if (tern_context_truncate(ctx, keep) != 0) { /* --swa-compact: keep's window rows are gone; run it all */
            keep = 0;
            tern_context_truncate(ctx, 0);
        }
        const double t0 = tern_time_s();
        if (prefill(ctx, o, toks + keep, n_tok - keep, logits, 1)) { /* Ctrl-C: forget this message */
            if (tern_context_truncate(ctx, keep) != 0) keep = 0, tern_context_truncate(ctx, 0); /* as above */
            n_hist = keep;
            free(toks);
            free((char *)msgs[--n_msgs].content);
            fputs("[interrupted]\n", stderr);
            continue;
        }
        const double t_prefill = tern_time_s() - t0;
        if (n_tok + n_predict + 1 > cap_hist) {
            cap_hist = n_tok + n_predict + 1;
            hist = realloc(hist, sizeof(int32_t) * (size_t)cap_hist);
            if (!hist) cli_die("out of memory");
        }
        memcpy(hist, toks, sizeof(int32_t) * (size_t)n_tok);
        n_hist = n_tok;
        free(toks);
        char *reply = strdup("");
        const gen_stats st = generate(ctx, m, smp, logits, &hist, &n_hist, &cap_hist, n_predict, o->show_special, 0,
                                      &reply, PLAIN_GREEDY(o), 0, 1);
        n_hist = tern_context_n_past(ctx); /* the cache holds every generated token but the last */
        fputc('\n', stdout);
        fflush(stdout);
        /* the reply as far as it went is the assistant's turn; a marker says where it was cut */
        if (st.interrupted) fputs("[interrupted]\n", stderr);
        else if (st.cut) fprintf(stderr, "[reply cut at -n %d tokens]\n", n_predict);
        if (show_rate) {
            const int n_dec = st.n_gen > 1 ? st.n_gen - 1 : 0;
            fprintf(stderr, "[%d tokens, %.1f tok/s; prompt %d new tokens, %.1f tok/s]\n", st.n_gen,
                    st.t_decode > 0 && n_dec ? n_dec / st.t_decode : 0.0, n_tok - keep,
                    t_prefill > 0 ? (n_tok - keep) / t_prefill : 0.0);
        }
        msgs[n_msgs++] = (tern_chat_msg){"assistant", reply};
    }
    for (int i = 0; i < n_msgs; i++) free((char *)msgs[i].content);
    free(line); free(msgs); free(hist); free(logits);
    tern_sampler_free(smp);
    tern_context_free(ctx);
    tern_model_free(m);
    return 0;
}

/* Output that did not reach standard output (a full disk, /dev/full, a closed pipe with SIGPIPE ignored) is an error:
 * one line and status 2 at exit, never status 0 over a lost answer */
static void stdout_check(void) {
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tern: error: writing standard output: %s\n", errno ? strerror(errno) : "write error");
        _exit(2);
    }
}

int main(int argc, char **argv) {
    atexit(stdout_check);
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("tern %s\n", TERN_BUILD_COMMIT);
        return 0;
    }
    if (argv[1][0] == '-') { /* llama-cli's shape, tern -m M -p P ...: the options of run */
        char **av = tern_xmalloc(sizeof(char *) * (size_t)(argc + 2));
        av[0] = argv[0];
        av[1] = "run";
        memcpy(av + 2, argv + 1, sizeof(char *) * (size_t)argc); /* argv[argc] == NULL comes along */
        argv = av;
        argc++;
    }
    cli_config_from_env();
    /* subcommands with their own option parsers, each in its own file under cli/ */
    static const struct { const char *name; int (*fn)(int, char **); } subs[] = {
        {"synth", cmd_synth}, {"bench", cmd_bench}, {"ab", cmd_ab}, {"roofline", cmd_roofline}, {"serve", cmd_serve},
        {"tokenize", cmd_tokenize}, {"detokenize", cmd_detokenize}, {"perplexity", cmd_perplexity},
        {"quantize", cmd_quantize}};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (!strcmp(argv[1], subs[i].name)) return subs[i].fn(argc, argv);
    options o;
    parse_args(argc, argv, &o);
    if (!strcmp(argv[1], "run")) return cmd_run(&o);
    if (!strcmp(argv[1], "chat")) return cmd_chat(&o);
    cli_die("unknown command '%s' (run, chat, serve, tokenize, detokenize, perplexity, quantize, synth, bench, ab, roofline; see tern --help)", argv[1]);
}
