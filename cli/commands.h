/* commands.h: the tern subcommands that live in their own files under cli/ (run and chat are in tern.c).
 * Each takes the full argv (argv[1] is the subcommand), returns the process exit status, and reports
 * errors as one line "tern: error: ..." with status 2. */
#ifndef TERN_CLI_COMMANDS_H
#define TERN_CLI_COMMANDS_H

/* tern synth --arch PRESET --type TYPE [--layers N] [--vocab N] [--seed S] -o FILE.gguf (cli/synth.c) */
int cmd_synth(int argc, char **argv);
/* tern bench -m MODEL [-p 512,2048] [-n 128] [-r 5] [-t THREADS] [-o md|json] [--depth D] (cli/bench.c) */
int cmd_bench(int argc, char **argv);
/* tern ab -m MODEL --a "FLAGS" --b "FLAGS" [-r ROUNDS] [-p PROMPTFILE] [-n N] (cli/ab.c) */
int cmd_ab(int argc, char **argv);
/* tern roofline [--device cuda|cpu] [-m MODEL] [-o md|json] [-t THREADS] [--quick] [--receipt FILE]
 * (cli/roofline.c) */
int cmd_roofline(int argc, char **argv);
/* The CPU's ceilings as `tern roofline --device cpu --quick` measures them on n_threads threads: read bandwidth
 * (B/s), FMA peak (FLOP/s), the quantized dots' int8 multiply peak (op/s, 2 a byte product); about a second. */
void roofline_cpu_ceilings(int n_threads, double *read_bps, double *fma_flops, double *int8_ops);
/* tern serve [-m MODEL] [--host ADDR] [--port N] [--parallel N] [-c CTX] [--api-key KEY] ... (cli/serve.c) */
int cmd_serve(int argc, char **argv);

/* tern tokenize -m MODEL [-p TEXT | -f FILE] [--ids] [--no-special] [--no-bos]; tern detokenize -m MODEL
 * [-p IDS | -f FILE] [--special] (cli/text.c) */
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);

/* tern perplexity -m MODEL -f TEXT [-c 512] [-b N] [--chunks N] (cli/perplexity.c) */
int cmd_perplexity(int argc, char **argv);

/* tern quantize IN.gguf OUT.gguf TYPE [--threads N] [--pure] [--allow-requantize] (cli/quantize.c) */
int cmd_quantize(int argc, char **argv);

/* Shared by every subcommand (cli/tern.c): print "tern: error: ..." (one line) and exit with status 2;
 * parse a decimal integer option value in [lo, hi] or die naming the flag. */
void cli_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
long cli_parse_long(const char *flag, const char *s, long lo, long hi);

/* Every subcommand's option walk, so that --opt=value means --opt value everywhere (issue 28: llama.cpp's
 * users type --temp=0, --threads=2). A parser reads
 *     cli_args it = cli_args_begin(argc, argv);
 *     while (cli_args_next(&it)) {
 *         const char *a = it.opt;             // "--threads" for both --threads 2 and --threads=2
 *         if (!strcmp(a, "--threads")) n = cli_parse_long(a, cli_args_value(&it), 1, 1024); ...
 * An argument is split at its first '=' only when it starts with "--" and its name is [a-z0-9-] (a path or a
 * positional argument is left whole). cli_args_value gives the inline value, else the next argument (dies
 * "OPT needs a value" when there is none); an inline value the parser did not take (a flag: --pure=1) dies
 * "OPT takes no value" at the next cli_args_next, as does --help=... at once. Short options (-t 2) take no
 * inline form, as in llama.cpp. */
typedef struct {
    int argc, i;
    char **argv;
    const char *opt;        /* the option: argv[i], or its name before '=' (points into name) */
    const char *inline_val; /* the text after '=' (NULL: none) */
    int used;               /* inline_val was taken by cli_args_value */
    char name[64];
} cli_args;
cli_args cli_args_begin(int argc, char **argv); /* the walk over argv[2..argc) */
int cli_args_next(cli_args *it);                /* 1: it.opt is the next argument; 0: the end */
const char *cli_args_value(cli_args *it);       /* the current option's value, or die */
/* The whole of a text file ("-": standard input) as a NUL-terminated string, or die (a NUL byte inside, over
 * 256 MiB). */
char *cli_read_text(const char *path);
/* --device cpu|cuda|auto -> tern_device, or die (cli/tern.c). */
#include "tern.h"
tern_device cli_parse_device(const char *s);
/* The device when --device is not given: TERN_DEVICE (cpu, cuda, auto; another value dies), else auto. */
tern_device cli_default_device(void);
void cli_batch_order(int n_seq); /* n_seq > 1: the f16 order (else chunk), unless TERN_GEMV_CHUNK is set (tern.c) */

/* Median of v[0..n) (n >= 1; v is not modified), shared by bench and ab (cli/bench.c). */
double cli_median(const double *v, int n);

/* Receipt helpers shared by bench and ab (cli/bench.c). */
#include <stddef.h>
#include <stdio.h>
/* Write s as a JSON string literal (quotes, escapes) to f. */
void bench_json_str(FILE *f, const char *s);
/* The head every receipt shares: {"tool", "timestamp", "commit", "dirty", "build_commit", and the opening
 * of "build" with "compiler" and "simd"; the caller adds its own build fields and closes the object. */
void bench_json_head(FILE *f, const char *tool, const char *stamp, const char *commit, int dirty);
/* The git commit (hex, at most n-1 chars, "unknown" outside a checkout) of the repository the binary
 * lives in, read at run time; *dirty = 1 when tracked files have uncommitted changes. */
void bench_git_info(char *commit, size_t n, int *dirty);

#endif
