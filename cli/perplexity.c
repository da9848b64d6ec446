/* cli/perplexity.c: `tern perplexity` (issue 28), llama-perplexity's method and output.
 *   tern perplexity -m MODEL -f TEXT [-c 512] [-b N] [--chunks N] [-t THREADS] [--device cpu|cuda|auto] [-ub N]
 *
 * The method of llama.cpp tools/perplexity/perplexity.cpp (perplexity(), llama-cpp-python 0.3.36's vendored copy):
 * the file (one final newline dropped, as its -f) is tokenized whole with the model's BOS rule and no special-token
 * parsing; it is cut into floor(n_tokens / c) non-overlapping chunks of c tokens; each chunk runs from an empty
 * cache with its first token replaced by BOS (when the vocabulary adds one); the tokens of the second half,
 * positions first = c/2 .. c-2, are scored: -log softmax(logits[pos])[token[pos + 1]], the softmax as its
 * log_softmax (max in float, sum of expf in double). After each chunk "[i]ppl," with ppl = exp(mean nll so far);
 * at the end "Final estimate: PPL = exp(mean) +/- ppl * sqrt((mean(nll^2) - mean^2) / (count - 1))".
 * -b: tokens a tern_eval call (the logits of a call: (b, n_vocab) f32); default min(c, 512). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tern.h"
#include "util.h"

/* llama.cpp's log_softmax(n_vocab, logits, tok): the float max, the double sum of expf(logit - max). */
static double log_softmax_at(const float *logits, int n_vocab, int tok) {
    float mx = logits[0];
    for (int i = 1; i < n_vocab; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n_vocab; i++) sum += expf(logits[i] - mx);
    return logits[tok] - mx - log(sum);
}

int cmd_perplexity(int argc, char **argv) {
    const char *model = NULL, *file = NULL;
    int n_ctx = 512, n_batch = 0, n_chunks = -1, n_threads = 0, ubatch = 0;
    tern_device device = cli_default_device();
    cli_args it = cli_args_begin(argc, argv);
    while (cli_args_next(&it)) {
        const char *a = it.opt;
#define ARG() cli_args_value(&it)
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = ARG();
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) file = ARG();
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) n_ctx = (int)cli_parse_long(a, ARG(), 4, 1 << 20);
        else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) n_batch = (int)cli_parse_long(a, ARG(), 1, 1 << 20);
        else if (!strcmp(a, "--chunks")) {
            n_chunks = (int)cli_parse_long(a, ARG(), -1, 1 << 30);
            if (!n_chunks) cli_die("--chunks 0 scores nothing (-1, the default: every chunk)");
        }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) n_threads = (int)cli_parse_long(a, ARG(), 1, 1024);
        else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch")) ubatch = (int)cli_parse_long(a, ARG(), 1, 1 << 16);
        else if (!strcmp(a, "--device")) device = cli_parse_device(ARG());
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: tern perplexity -m MODEL -f TEXT [-c 512] [-b N] [--chunks N] [-t THREADS] [--device D] [-ub N]\n"
                 "  llama-perplexity's measure: the text in chunks of -c tokens, each from an empty cache starting with\n"
                 "  BOS, the second half of each scored; prints [chunk]ppl as it goes and\n"
                 "  'Final estimate: PPL = x +/- y'. --chunks N: only the first N chunks; -b: tokens a forward call\n"
                 "  (default min(c, 512))");
            return 0;
        } else cli_die("unknown option '%s' for perplexity (see tern perplexity --help)", a);
#undef ARG
    }
    if (!file) cli_die("perplexity needs a text: -f FILE");
    if (!model) model = getenv("TERN_MODEL");
    if (!model) model = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (n_batch <= 0) n_batch = n_ctx < 512 ? n_ctx : 512;
    if (n_batch > n_ctx) n_batch = n_ctx;
    char *text = cli_read_text(file);
    size_t len = strlen(text);
    if (len && text[len - 1] == '\n') text[--len] = 0; /* as llama.cpp's -f */

    tern_model *m = tern_model_load(model, 1);
    if (!m) cli_die("%s", tern_last_error());
    const int n_vocab = tern_model_n_vocab(m), add_bos = tern_model_add_bos(m);
    int32_t bos = -1; /* the BOS id: what an empty text tokenizes to with add_bos */
    if (add_bos && tern_model_tokenize(m, "", 0, 1, 0, &bos, 1) != 1) cli_die("the model adds a BOS it does not have");
    double t0 = tern_time_s();
    size_t dropped = 0;
    int n_tok = tern_model_tokenize_ex(m, text, len, add_bos, 0, NULL, 0, &dropped);
    if (n_tok < 0) cli_die("tokenize: %s", tern_last_error());
    int32_t *toks = tern_xmalloc(sizeof(int32_t) * (size_t)(n_tok > 0 ? n_tok : 1));
    tern_model_tokenize_ex(m, text, len, add_bos, 0, toks, n_tok, &dropped);
    const double t_tok = tern_time_s() - t0;
    if (n_tok < 2 * n_ctx)
        cli_die("%d tokens in '%s': perplexity with a context of %d needs at least %d", n_tok, file, n_ctx, 2 * n_ctx);
    fprintf(stderr, "perplexity: tokenizing the input ..\nperplexity: tokenization took %g ms\n", 1e3 * t_tok);
    if (dropped) fprintf(stderr, "tern: warning: %zu bytes of the text have no token in this vocabulary\n", dropped);
    const int n_chunk_max = n_tok / n_ctx;
    const int n_chunk = n_chunks < 0 ? n_chunk_max : n_chunks < n_chunk_max ? n_chunks : n_chunk_max;

    tern_context_params cp = tern_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = n_threads;
    cp.device = device;
    cp.ubatch = ubatch;
    tern_context *c = tern_context_new_ex(m, &cp);
    if (!c) cli_die("%s", tern_last_error());
    float *logits = tern_xmalloc(sizeof(float) * (size_t)n_batch * (size_t)n_vocab); /* (n_batch, n_vocab) */
    int32_t *chunk = tern_xmalloc(sizeof(int32_t) * (size_t)n_ctx);
    fprintf(stderr, "perplexity: calculating perplexity over %d chunks, n_ctx=%d, batch_size=%d, n_seq=1\n", n_chunk,
            n_ctx, n_batch);
    const int first = n_ctx / 2;
    double nll = 0.0, nll2 = 0.0;
    long count = 0;
    for (int i = 0; i < n_chunk; i++) {
        const double tc = tern_time_s();
        memcpy(chunk, toks + (size_t)i * (size_t)n_ctx, sizeof(int32_t) * (size_t)n_ctx);
        if (add_bos) chunk[0] = bos;
        if (tern_context_truncate(c, 0) != 0) cli_die("%s", tern_last_error());
        for (int b0 = 0; b0 < n_ctx; b0 += n_batch) {
            const int nb = n_ctx - b0 < n_batch ? n_ctx - b0 : n_batch;
            if (tern_eval(c, chunk + b0, nb, logits, 1) != 0) cli_die("%s", tern_last_error());
            /* score the rows at positions first .. n_ctx - 2 (the next token is in the chunk) */
            for (int r = 0; r < nb; r++) {
                const int pos = b0 + r;
                if (pos < first || pos > n_ctx - 2) continue;
                const double v = -log_softmax_at(logits + (size_t)r * (size_t)n_vocab, n_vocab, chunk[pos + 1]);
                nll += v;
                nll2 += v * v;
                count++;
            }
        }
        if (i == 0) {
            const double t = tern_time_s() - tc;
            fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %.2f minutes\n", t, t * n_chunk / 60.0);
        }
        printf("[%d]%.4f,", i + 1, exp(nll / (double)count));
        fflush(stdout);
    }
    printf("\n");
    nll2 /= (double)count;
    nll /= (double)count;
    const double ppl = exp(nll);
    nll2 -= nll * nll;
    if (nll2 > 0) printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, sqrt(nll2 / (double)(count - 1)) * ppl);
    else printf("Final estimate: PPL = %.4f (the spread of log(prob) is not positive: no error estimate)\n", ppl);
    free(chunk);
    free(logits);
    free(toks);
    free(text);
    tern_context_free(c);
    tern_model_free(m);
    return 0;
}
