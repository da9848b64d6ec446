/* cli/text.c: `tern tokenize` and `tern detokenize` (issue 28), llama-tokenize's habits.
 *   tern tokenize -m MODEL [-p TEXT | -f FILE] [--ids] [--no-special] [--no-bos]
 *       one line a token, "ID -> 'PIECE'" (llama-tokenize's default), or with --ids the ids as a list [1, 2, 3];
 *       -f - (or a piped standard input without -p) reads the text from standard input, as it is (no newline
 *       dropped: the ids are of exactly these bytes); --no-special: control-token texts stay text; --no-bos: no BOS
 *   tern detokenize -m MODEL [-p IDS | -f FILE] [--special]
 *       the ids (separated by spaces, commas or brackets: "1 2 3", "[1, 2, 3]") back to text, as llama.cpp's llama_detokenize gives it;
 *       --special shows control tokens. stdout is valid UTF-8 (a byte sequence no character is made of: U+FFFD). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "model.h"
#include "tern.h"
#include "tokenizer.h"
#include "util.h"

typedef struct {
    const char *model, *prompt, *file;
    int ids, special, bos, show_special;
} text_opts;

static void text_args(int argc, char **argv, text_opts *o, int detok) {
    memset(o, 0, sizeof *o);
    o->special = 1;
    o->bos = 1;
    cli_args it = cli_args_begin(argc, argv);
    while (cli_args_next(&it)) {
        const char *a = it.opt;
#define ARG() cli_args_value(&it)
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = ARG();
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = ARG();
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) o->file = ARG();
        else if (!detok && !strcmp(a, "--ids")) o->ids = 1;
        else if (!detok && (!strcmp(a, "--no-special") || !strcmp(a, "--no-parse-special"))) o->special = 0;
        else if (!detok && !strcmp(a, "--no-bos")) o->bos = 0;
        else if (detok && !strcmp(a, "--special")) o->show_special = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts(detok ? "usage: tern detokenize -m MODEL [-p IDS | -f FILE] [--special]\n"
                         "  ids separated by anything that is not a digit (\"1 2 3\", \"[1, 2, 3]\"); without -p or -f, a piped\n"
                         "  standard input; --special: show control tokens"
                       : "usage: tern tokenize -m MODEL [-p TEXT | -f FILE] [--ids] [--no-special] [--no-bos]\n"
                         "  one token a line (ID -> 'PIECE'), or --ids: [id, ...]; -f - or a piped standard input: the text\n"
                         "  from standard input, every byte (no newline dropped); --no-special: control-token texts are\n"
                         "  plain text; --no-bos: no BOS even when the model adds one");
            exit(0);
        } else cli_die("unknown option '%s' for %s (see tern %s --help)", a, argv[1], argv[1]);
#undef ARG
    }
    if (o->prompt && o->file) cli_die("give the input with -p or -f, not both");
    if (!o->prompt && !o->file) {
        if (isatty(0)) cli_die("%s needs input: -p %s or -f FILE (or a pipe)", argv[1], detok ? "IDS" : "TEXT");
        o->file = "-";
    }
    if (!o->model) o->model = getenv("TERN_MODEL");
    if (!o->model) o->model = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

static tern_model *text_model(const char *path) {
    tern_model *m = tern_model_load(path, 0);
    if (!m) cli_die("%s", tern_last_error());
    if (!m->vocab) cli_die("%s has no tokenizer (tokenizer.ggml.model no_vocab): nothing to tokenize with", path);
    return m;
}

int cmd_tokenize(int argc, char **argv) {
    text_opts o;
    text_args(argc, argv, &o, 0);
    char *text = o.file ? cli_read_text(o.file) : strdup(o.prompt);
    const size_t len = strlen(text);
    tern_model *m = text_model(o.model);
    size_t dropped = 0;
    const int add_bos = o.bos && tern_model_add_bos(m);
    int n = tern_model_tokenize_ex(m, text, len, add_bos, o.special, NULL, 0, &dropped);
    if (n < 0) cli_die("tokenize: %s", tern_last_error());
    int32_t *ids = tern_xmalloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    n = tern_model_tokenize_ex(m, text, len, add_bos, o.special, ids, n, &dropped);
    if (dropped)
        fprintf(stderr, "tern: warning: %zu byte%s of the text ha%s no token in this vocabulary and %s dropped (as "
                        "llama.cpp drops them)\n", dropped, dropped == 1 ? "" : "s", dropped == 1 ? "s" : "ve",
                dropped == 1 ? "was" : "were");
    if (tern_utf8_valid_prefix(text, len) < len) fprintf(stderr, "tern: warning: the text is not valid UTF-8\n");
    if (o.ids) {
        fputc('[', stdout);
        for (int i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
        fputs("]\n", stdout);
    } else {
        char small[256];
        for (int i = 0; i < n; i++) {
            int k = tern_model_token_to_piece(m, ids[i], small, sizeof small, 1);
            char *piece = small;
            if (k > (int)sizeof small) {
                piece = tern_xmalloc((size_t)k);
                tern_model_token_to_piece(m, ids[i], piece, k, 1);
            }
            /* llama-tokenize prints the piece raw between quotes; a piece that is part of a character (byte
             * tokens) would make stdout invalid UTF-8, so those bytes print as \xNN */
            printf("%6d -> '", ids[i]);
            for (int j = 0; j < k;) {
                size_t ok = tern_utf8_valid_prefix(piece + j, (size_t)(k - j));
                if (ok) {
                    fwrite(piece + j, 1, ok, stdout);
                    j += (int)ok;
                } else {
                    printf("\\x%02x", (unsigned char)piece[j]);
                    j++;
                }
            }
            fputs("'\n", stdout);
            if (piece != small) free(piece);
        }
    }
    free(ids);
    free(text);
    tern_model_free(m);
    return 0;
}

int cmd_detokenize(int argc, char **argv) {
    text_opts o;
    text_args(argc, argv, &o, 1);
    char *in = o.file ? cli_read_text(o.file) : strdup(o.prompt);
    tern_model *m = text_model(o.model);
    const int n_vocab = tern_model_n_vocab(m);
    int cap = 256, n = 0;
    int32_t *ids = tern_xmalloc(sizeof(int32_t) * (size_t)cap);
    for (const char *p = in; *p;) {
        if (!isdigit((unsigned char)*p)) {
            if (*p == '-' && isdigit((unsigned char)p[1])) cli_die("token ids are >= 0 (got '-%c...')", p[1]);
            /* separators: white space, commas, the brackets of a list; anything else is not an id (1e3 is not 1, 3) */
            if (!isspace((unsigned char)*p) && *p != ',' && *p != '[' && *p != ']')
                cli_die("'%.12s' is not a token id (ids are separated by spaces, commas or [ ])", p);
            p++;
            continue;
        }
        char *end;
        errno = 0;
        const long v = strtol(p, &end, 10);
        if (errno || v >= n_vocab) cli_die("token id %.*s is out of range (the vocabulary has %d)", (int)(end - p), p, n_vocab);
        if (n == cap) ids = realloc(ids, sizeof(int32_t) * (size_t)(cap *= 2));
        if (!ids) cli_die("out of memory");
        ids[n++] = (int32_t)v;
        p = end;
    }
    const int len = tern_detokenize(m->vocab, ids, n, NULL, 0, o.show_special);
    char *text = tern_xmalloc((size_t)len + 1);
    tern_detokenize(m->vocab, ids, n, text, len + 1, o.show_special);
    /* valid UTF-8 out: an id sequence that ends inside a character, or bytes no character is made of, give U+FFFD */
    tern_utf8_stream us = {{0}, 0};
    char *out = tern_xmalloc(3 * ((size_t)len + 8));
    fwrite(out, 1, (size_t)tern_utf8_stream_push(&us, text, len, out), stdout);
    if (us.n_pending) fputs("\xEF\xBF\xBD", stdout);
    fputc('\n', stdout);
    free(out);
    free(text);
    free(ids);
    free(in);
    tern_model_free(m);
    return 0;
}
