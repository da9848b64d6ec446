/* cli/ab.c: `tern ab` (issue 3): an interleaved A/B comparison of two configurations end to end.
 *
 *   tern ab -m MODEL --a "FLAGS" --b "FLAGS" [-r ROUNDS] [-p PROMPTFILE] [-n N] [-t T] [--receipt PATH]
 *
 * FLAGS: space-separated words; NAME=value words are environment assignments for that arm, the others
 * are extra arguments of `tern run` (e.g. --a "TERN_SIMD=scalar" --b "" or --a "-t 1" --b "-t 2").
 * Each arm is a subprocess `tern run -m MODEL -f PROMPT -n N --temp 0 --ignore-eos [-t T] EXTRA...` of
 * this same binary (/proc/self/exe) with TERN_TRACE=1, run in the order A B A B ... (shared/MEASURE.md
 * "A/B, never A then B"), after one untimed run of A that warms the page cache. From each run: the
 * stderr stats line (prefill and decode tok/s), the kernel-path trace line (proof the arm ran), and an
 * FNV-1a 64 hash of stdout (prompt echo + generated text; both arms echo the same prompt, so equal
 * hashes mean equal generated text). Report: per-round tok/s, medians, B/A, tokens MATCH or DIFFER;
 * --receipt PATH also writes all of it as JSON, with the commit and both arms' trace lines.
 * Exit 0 with a report (DIFFER included: an arm may change numerics on purpose), 2 on an error. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend_cpu.h"
#include "commands.h"
#include "tern.h"
#include "util.h"


#define AB_MAX_WORDS 32
#define AB_DEFAULT_PROMPT_FILE "bench/prompt128.txt"
#define AB_FALLBACK_PROMPT                                                                                   \
    "The history of the lighthouse begins in the ancient world, where fires were lit on hilltops to guide " \
    "ships safely into harbour."



typedef struct {
    const char *label;   /* "A" / "B" */
    const char *flags;   /* as given */
    char *buf;           /* flags split in place */
    char *env[AB_MAX_WORDS];
    int n_env;
    char *args[AB_MAX_WORDS];
    int n_args;
    double *pf, *dc;     /* (rounds) prefill / decode tok/s */
    uint64_t *hash;      /* (rounds) */
    char trace[256];     /* the last run's trace line */
    int trace_varies;    /* the trace line differed between rounds */
} ab_arm;

static int is_env_word(const char *w) {
    const char *eq = strchr(w, '=');
    if (!eq || eq == w) return 0;
    for (const char *p = w; p < eq; p++)
        if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (p > w && *p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

static void arm_parse(ab_arm *a) {
    a->buf = strdup(a->flags);
    for (char *save = NULL, *w = strtok_r(a->buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
        if (a->n_env + a->n_args >= AB_MAX_WORDS) cli_die("--%c: more than %d words", a->label[0] + 32, AB_MAX_WORDS);
        if (is_env_word(w)) a->env[a->n_env++] = w;
        else a->args[a->n_args++] = w;
    }
}

/* Whole contents of an open file from its start. */
static char *slurp(FILE *f) {
    rewind(f);
    size_t cap = 4096, n = 0;
    char *s = tern_xmalloc(cap);
    size_t k;
    while ((k = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (cap - n - 1 == 0) {
            cap *= 2;
            s = realloc(s, cap);
            if (!s) cli_die("out of memory");
        }
    }
    s[n] = 0;
    return s;
}

static uint64_t fnv1a64(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* The line of text starting with `prefix` (at a line start), copied into buf; 0 if none. */
static int find_line(const char *text, const char *prefix, char *buf, size_t n) {
    size_t pl = strlen(prefix);
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, prefix, pl)) {
            size_t l = strcspn(p, "\n");
            snprintf(buf, n, "%.*s", (int)l, p);
            return 1;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return 0;
}

/* The last non-empty line of text (for error messages). */
static void last_line(const char *text, char *buf, size_t n) {
    buf[0] = 0;
    for (const char *p = text; *p;) {
        size_t l = strcspn(p, "\n");
        if (l) snprintf(buf, n, "%.*s", (int)l, p);
        p += l;
        if (*p) p++;
    }
}

typedef struct {
    const char *model, *prompt_file, *prompt_text;
    int n, threads;
} ab_opts;

/* One run of arm a; fills pf/dc/hash[r] when r >= 0 (r < 0: warm-up, results dropped). */
static void arm_run(ab_arm *a, const ab_opts *o, int r) {
    char *argv[AB_MAX_WORDS + 16];
    int k = 0;
    char nbuf[32], tbuf[32];
    snprintf(nbuf, sizeof nbuf, "%d", o->n);
    snprintf(tbuf, sizeof tbuf, "%d", o->threads);
    argv[k++] = "tern";
    argv[k++] = "run";
    argv[k++] = "-m";
    argv[k++] = (char *)o->model;
    if (o->prompt_file) {
        argv[k++] = "-f";
        argv[k++] = (char *)o->prompt_file;
    } else {
        argv[k++] = "-p";
        argv[k++] = (char *)o->prompt_text;
    }
    argv[k++] = "-n";
    argv[k++] = nbuf;
    argv[k++] = "--temp";
    argv[k++] = "0";
    argv[k++] = "--ignore-eos";
    if (o->threads > 0) {
        argv[k++] = "-t";
        argv[k++] = tbuf;
    }
    for (int i = 0; i < a->n_args; i++) argv[k++] = a->args[i];
    argv[k] = NULL;

    FILE *out = tmpfile(), *err = tmpfile();
    if (!out || !err) cli_die("cannot create temporary files: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) cli_die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fileno(out), 1);
        dup2(fileno(err), 2);
        setenv("TERN_TRACE", "1", 1);
        for (int i = 0; i < a->n_env; i++) putenv(a->env[i]);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "tern: error: exec /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) cli_die("waitpid: %s", strerror(errno));
    char *so = slurp(out), *se = slurp(err);
    fclose(out);
    fclose(err);
    const char *what = r < 0 ? "warm-up run" : "round";
    char line[1024];
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        last_line(se, line, sizeof line);
        cli_die("arm %s (%s) %s %d failed (%s %d): %s", a->label, a->flags, what, r < 0 ? 0 : r + 1,
               WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), line);
    }
    int np, nd;
    double tp, td, pf, dc;
    if (!find_line(se, "prefill: ", line, sizeof line) ||
        sscanf(line, "prefill: %d tokens in %lf s, %lf tok/s | decode: %d tokens in %lf s, %lf tok/s", &np, &tp, &pf,
               &nd, &td, &dc) != 6)
        cli_die("arm %s %s %d: no stats line on stderr of tern run", a->label, what, r + 1);
    if (r >= 0) {
        a->pf[r] = pf;
        a->dc[r] = dc;
        a->hash[r] = fnv1a64(so);
        char tr[256] = "trace: (none printed)";
        find_line(se, "trace: ", tr, sizeof tr);
        if (r > 0 && strcmp(tr, a->trace)) a->trace_varies = 1;
        snprintf(a->trace, sizeof a->trace, "%s", tr);
    }
    free(so);
    free(se);
}

static void print_rounds(const char *what, const ab_arm *a, const double *v, int rounds) {
    printf("%-8s %s:", what, a->label);
    for (int r = 0; r < rounds; r++) printf("%s%.2f", r ? " / " : " ", v[r]);
    printf("  median %.2f tok/s\n", cli_median(v, rounds));
}

static void write_receipt(const char *path, const ab_opts *o, const ab_arm *arms, int rounds, int match) {
    FILE *f = fopen(path, "w");
    if (!f) cli_die("cannot write receipt '%s': %s", path, strerror(errno));
    char commit[512], stamp[32];
    int dirty;
    bench_git_info(commit, sizeof commit, &dirty);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "{\n  \"tool\": \"tern ab\",\n  \"timestamp\": \"%s\",\n  \"commit\": ", stamp);
    bench_json_str(f, commit);
    fprintf(f, ",\n  \"dirty\": %s,\n  \"model\": ", dirty < 0 ? "null" : dirty ? "true" : "false");
    bench_json_str(f, o->model);
    fputs(",\n  \"prompt\": ", f);
    bench_json_str(f, o->prompt_file ? o->prompt_file : "(built-in text)");
    fprintf(f, ",\n  \"n_predict\": %d,\n  \"threads\": %d,\n  \"cores\": %d,\n  \"rounds\": %d,\n", o->n, o->threads,
            tern_n_cores(), rounds);
    fputs("  \"order\": \"warm-up A, then A B per round\",\n  \"arms\": [\n", f);
    for (int k = 0; k < 2; k++) {
        const ab_arm *a = &arms[k];
        fprintf(f, "    {\"arm\": \"%s\", \"flags\": ", a->label);
        bench_json_str(f, a->flags);
        fprintf(f, ", \"median_prefill_tok_s\": %.3f, \"median_decode_tok_s\": %.3f,\n     \"prefill_tok_s\": [",
                cli_median(a->pf, rounds), cli_median(a->dc, rounds));
        for (int r = 0; r < rounds; r++) fprintf(f, "%s%.3f", r ? ", " : "", a->pf[r]);
        fputs("], \"decode_tok_s\": [", f);
        for (int r = 0; r < rounds; r++) fprintf(f, "%s%.3f", r ? ", " : "", a->dc[r]);
        fputs("],\n     \"hashes\": [", f);
        for (int r = 0; r < rounds; r++) fprintf(f, "%s\"%016llx\"", r ? ", " : "", (unsigned long long)a->hash[r]);
        fputs("], \"trace\": ", f);
        bench_json_str(f, a->trace);
        fprintf(f, "}%s\n", k ? "" : ",");
    }
    const double pa = cli_median(arms[0].pf, rounds), da = cli_median(arms[0].dc, rounds);
    fprintf(f, "  ],\n  \"prefill_ratio_b_a\": %.4f,\n  \"decode_ratio_b_a\": %.4f,\n  \"tokens_match\": %s\n}\n",
            pa > 0 ? cli_median(arms[1].pf, rounds) / pa : 0.0, da > 0 ? cli_median(arms[1].dc, rounds) / da : 0.0,
            match ? "true" : "false");
    if (fclose(f) != 0) cli_die("cannot write receipt '%s'", path);
    fprintf(stderr, "ab: receipt %s\n", path);
}

int cmd_ab(int argc, char **argv) {
    ab_opts o = {.n = 64};
    const char *receipt = NULL;
    ab_arm arms[2] = {{.label = "A"}, {.label = "B"}};
    int rounds = 3;
    cli_args it = cli_args_begin(argc, argv);
    while (cli_args_next(&it)) {
        const char *a = it.opt;
#define ARG() cli_args_value(&it)
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o.model = ARG();
        else if (!strcmp(a, "--a")) arms[0].flags = ARG();
        else if (!strcmp(a, "--b")) arms[1].flags = ARG();
        else if (!strcmp(a, "-r") || !strcmp(a, "--rounds")) rounds = (int)cli_parse_long(a, ARG(), 1, 1000);
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt-file")) o.prompt_file = ARG();
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) o.n = (int)cli_parse_long(a, ARG(), 1, 1 << 20);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) o.threads = (int)cli_parse_long(a, ARG(), 1, 1024);
        else if (!strcmp(a, "--receipt")) receipt = ARG();
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: tern ab -m MODEL --a \"FLAGS\" --b \"FLAGS\" [-r ROUNDS] [-p PROMPTFILE] [-n N] [-t T]\n"
                 "              [--receipt PATH]\n"
                 "  FLAGS: NAME=value environment assignments and/or extra `tern run` arguments, space-separated;\n"
                 "  arms run interleaved A B A B ... (default 3 rounds, -n 64, prompt " AB_DEFAULT_PROMPT_FILE ")");
            return 0;
        } else cli_die("unknown option '%s' for ab (see tern ab --help)", a);
#undef ARG
    }
    if (!o.model) o.model = getenv("TERN_MODEL");
    if (!o.model) cli_die("ab needs a model: -m MODEL");
    if (access(o.model, R_OK) != 0) cli_die("cannot read model '%s': %s", o.model, strerror(errno));
    if (!arms[0].flags || !arms[1].flags) cli_die("ab needs both arms: --a \"FLAGS\" --b \"FLAGS\" (\"\" = defaults)");
    if (o.prompt_file) {
        if (access(o.prompt_file, R_OK) != 0) cli_die("cannot read prompt file '%s': %s", o.prompt_file, strerror(errno));
    } else if (access(AB_DEFAULT_PROMPT_FILE, R_OK) == 0) o.prompt_file = AB_DEFAULT_PROMPT_FILE;
    else o.prompt_text = AB_FALLBACK_PROMPT;
    for (int k = 0; k < 2; k++) {
        arm_parse(&arms[k]);
        arms[k].pf = tern_xcalloc((size_t)rounds, sizeof(double));
        arms[k].dc = tern_xcalloc((size_t)rounds, sizeof(double));
        arms[k].hash = tern_xcalloc((size_t)rounds, sizeof(uint64_t));
    }

    char th[32];
    if (o.threads > 0) snprintf(th, sizeof th, "%d", o.threads);
    else snprintf(th, sizeof th, "default (%d cores)", tern_n_cores());
    printf("ab: %s, prompt %s, n %d, threads %s, %d rounds interleaved A B after 1 warm-up of A\n", o.model,
           o.prompt_file ? o.prompt_file : "(built-in text)", o.n, th, rounds);
    printf("A: %s\nB: %s\n", arms[0].flags[0] ? arms[0].flags : "(defaults)",
           arms[1].flags[0] ? arms[1].flags : "(defaults)");
    fflush(stdout);
    arm_run(&arms[0], &o, -1); /* warm-up: page cache of the model file */
    for (int r = 0; r < rounds; r++) {
        arm_run(&arms[0], &o, r);
        arm_run(&arms[1], &o, r);
        fprintf(stderr, "ab: round %d/%d done\n", r + 1, rounds);
    }

    print_rounds("prefill", &arms[0], arms[0].pf, rounds);
    print_rounds("prefill", &arms[1], arms[1].pf, rounds);
    const double pa = cli_median(arms[0].pf, rounds), pb = cli_median(arms[1].pf, rounds);
    printf("prefill  B/A: %.3f\n", pa > 0 ? pb / pa : 0.0);
    print_rounds("decode", &arms[0], arms[0].dc, rounds);
    print_rounds("decode", &arms[1], arms[1].dc, rounds);
    const double da = cli_median(arms[0].dc, rounds), db = cli_median(arms[1].dc, rounds);
    printf("decode   B/A: %.3f\n", da > 0 ? db / da : 0.0);
    for (int k = 0; k < 2; k++)
        printf("%s %s%s\n", arms[k].label, arms[k].trace, arms[k].trace_varies ? " (varied between rounds)" : "");

    /* tokens: every run of both arms must give one hash */
    int same = 1, stable[2] = {1, 1};
    for (int k = 0; k < 2; k++)
        for (int r = 1; r < rounds; r++)
            if (arms[k].hash[r] != arms[k].hash[0]) stable[k] = 0;
    same = stable[0] && stable[1] && arms[0].hash[0] == arms[1].hash[0];
    if (same) printf("tokens: MATCH (hash %016llx)\n", (unsigned long long)arms[0].hash[0]);
    else
        printf("tokens: DIFFER (hash A %016llx%s, hash B %016llx%s)\n", (unsigned long long)arms[0].hash[0],
               stable[0] ? "" : " varied between rounds", (unsigned long long)arms[1].hash[0],
               stable[1] ? "" : " varied between rounds");
    fflush(stdout);
    if (receipt) write_receipt(receipt, &o, arms, rounds, same);
    for (int k = 0; k < 2; k++) {
        free(arms[k].buf);
        free(arms[k].pf);
        free(arms[k].dc);
        free(arms[k].hash);
    }
    return 0;
}
