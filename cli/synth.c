/* cli/synth.c: `tern synth` (issue 3): write a GGUF with exactly the architecture, tensor names, shapes, metadata
 * and quant types of a real model (llama, qwen2, qwen3, gemma3 and phi3 presets), filled with random blocks at
 * realistic scales, so loading, memory and speed can be measured on models nobody has downloaded.
 *
 *   tern synth --arch PRESET --type TYPE [--layers N] [--vocab N | --vocab-from F.gguf] [--seed S] -o FILE.gguf
 *   tern synth --arch PRESET --type TYPE [--layers N] [--vocab N | --vocab-from F.gguf] --dry-run   (prints metadata + directory)
 *
 * --vocab-from: the tokenizer.* keys of F (a model, or a tokenizer-only GGUF as scripts/extract_tokenizer.py makes)
 * copied verbatim, n_vocab its token count: a synthetic model that tokenizes text as F's model does, so text tools
 * (tern perplexity, chat) and llama.cpp's run on it (bench/gpu_check.sh step ppl, where the real file is too large
 * to carry). Without it the file has no tokenizer (token ids only).
 *
 * The presets, types, tensor list and the way blocks are made are in src/model/synth.c (shared with tern bench
 * --synthetic, which holds the same model in memory).
 * Errors (one line "tern: error: ...", exit 2): unknown preset or type (the message lists the valid ones),
 * a row length not a multiple of the type's block size, bad numbers, I/O errors (the partial file is removed).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "commands.h"
#include "gguf.h"
#include "gguf_write.h"
#include "quant.h"
#include "synth.h"
#include "util.h"

static int synth_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int synth_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tern: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}


/* Generate n_rows rows and write them to fp, in chunks of about 64 MiB split across n_threads.
 * buf: at least chunk_rows * row_bytes bytes. Returns 0 or -1 on a write error.
 * Tried and dropped: double buffering (a thread fwrites chunk k while chunk k + 1 is generated). On the 2-core
 * dev box a 1.5 GB prefix went 5.1 s -> 3.8-4.5 s, but full llama3-8b q4_0 files (4.5 GB, past the page
 * cache's dirty limit) took 6.6-8.1 s against 5.8-6.0 s serial: writeback, not generation (870 MiB/s on 2
 * cores to /dev/null), is the bound there, and the extra thread and 64 MiB only compete with it. */
static int write_tensor(FILE *fp, const synth_fill_spec *fs, int64_t n_rows, uint8_t *buf, size_t buf_bytes,
                        int n_threads) {
    int64_t chunk = (int64_t)(buf_bytes / fs->row_bytes);
    if (chunk < 1) chunk = 1;
    for (int64_t c0 = 0; c0 < n_rows; c0 += chunk) {
        int64_t c1 = c0 + chunk < n_rows ? c0 + chunk : n_rows;
        synth_fill_rows(fs, c0, c1 - c0, buf, n_threads);
        size_t nbytes = (size_t)(c1 - c0) * fs->row_bytes;
        if (fwrite(buf, 1, nbytes, fp) != nbytes) return -1;
    }
    return 0;
}


/* ---- the command ---- */

static int parse_int(const char *opt, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    (void)opt;
    *out = v;
    return 0;
}


int cmd_synth(int argc, char **argv) {
    const char *arch = NULL, *type = NULL, *out = NULL, *vocab_from = NULL;
    long long layers = -1, vocab = -1, seed = 0;
    int dry = 0;
    cli_args it = cli_args_begin(argc, argv);
    while (cli_args_next(&it)) {
        const char *a = it.opt;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            char p[256], t[256];
            synth_list_presets(p, sizeof p);
            synth_list_types(t, sizeof t);
            printf("usage: tern synth --arch PRESET --type TYPE [--layers N] [--vocab N | --vocab-from F.gguf] [--seed S] -o FILE.gguf\n"
                   "       tern synth --arch PRESET --type TYPE [--layers N] [--vocab N | --vocab-from F.gguf] --dry-run\n"
                   "  write a GGUF with a real model's architecture, tensor shapes and metadata, and random weights\n"
                   "  presets: %s\n  types:   %s (every matrix; norms and biases are f32)\n"
                   "  --vocab-from F.gguf: F's tokenizer (every tokenizer.* key), n_vocab its token count (default: no\n"
                   "  tokenizer, token ids only)\n"
                   "  --dry-run prints the metadata and tensor directory (name type ne0 ne1) and writes nothing\n",
                   p, t);
            return 0;
        }
        if (!strcmp(a, "--dry-run")) { dry = 1; continue; }
        if (!it.inline_val && it.i + 1 >= argc) return synth_fail("synth: option %s needs a value (or unknown option)", a);
        const char *v = cli_args_value(&it);
        if (!strcmp(a, "--arch")) arch = v;
        else if (!strcmp(a, "--type")) type = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) out = v;
        else if (!strcmp(a, "--vocab-from")) vocab_from = v;
        else if (!strcmp(a, "--layers")) {
            if (parse_int(a, v, 1, 1000, &layers)) return synth_fail("synth: --layers expects an integer in 1..1000, got '%s'", v);
        } else if (!strcmp(a, "--vocab")) {
            if (parse_int(a, v, 1, 1 << 24, &vocab)) return synth_fail("synth: --vocab expects an integer in 1..16777216, got '%s'", v);
        } else if (!strcmp(a, "--seed")) {
            if (parse_int(a, v, 0, 0x7fffffffffffffffll, &seed)) return synth_fail("synth: --seed expects a non-negative integer, got '%s'", v);
        } else
            return synth_fail("synth: unknown option '%s' (see tern synth --help)", a);
    }
    char plist[256], tlist[256];
    synth_list_presets(plist, sizeof plist);
    synth_list_types(tlist, sizeof tlist);
    if (!arch) return synth_fail("synth: --arch PRESET is required (presets: %s)", plist);
    if (!type) return synth_fail("synth: --type TYPE is required (types: %s)", tlist);
    if (!out && !dry) return synth_fail("synth: -o FILE.gguf is required");
    const synth_preset *P = NULL;
    const synth_type *T = NULL;
    char why[512];
    if (synth_resolve(arch, type, &P, &T, why, sizeof why)) return synth_fail("synth: %s", why);
    const int n_layer = layers > 0 ? (int)layers : P->n_layer;
    int64_t n_vocab = vocab > 0 ? vocab : P->n_vocab;
    gguf_file *vf = NULL;
    if (vocab_from) {
        if (vocab > 0) return synth_fail("synth: --vocab and --vocab-from exclude each other (the vocabulary's size is its token count)");
        if (!(vf = gguf_open(vocab_from))) return synth_fail("synth: --vocab-from '%s': %s", vocab_from, tern_last_error());
        if ((n_vocab = synth_vocab_size(vf)) < 0) {
            int rc = synth_fail("synth: --vocab-from '%s': %s", vocab_from, tern_last_error());
            gguf_close(vf);
            return rc;
        }
    }

    synth_tensor *ts = NULL;
    char **names = NULL;
    const int n_t = synth_tensor_list(P, n_layer, n_vocab, &ts, &names);
    gguf_writer *w = synth_writer_new(P, T, n_layer, n_vocab, seed, ts, n_t, vf, dry ? stdout : NULL);
    if (vf) gguf_close(vf); /* the writer holds copies of the values */
    if (!w) {
        synth_tensor_list_free(ts, names, n_t);
        return synth_fail("synth: %s", tern_last_error());
    }
    int rc = 0;
    if (dry) {
        printf("file size %llu bytes\n", (unsigned long long)gguf_writer_file_size(w));
        synth_tensor_list_free(ts, names, n_t);
        gguf_writer_free(w);
        return 0;
    }

    FILE *fp = NULL;
    double t0 = tern_time_s();
    const int n_threads = tern_n_cores() < 64 ? tern_n_cores() : 64;
    const size_t buf_bytes = (size_t)64 << 20;
    uint8_t *buf = NULL;
    if (!rc && !(fp = fopen(out, "wb"))) rc = synth_fail("synth: cannot create '%s': %s", out, strerror(errno));
    if (!rc && gguf_writer_write_header(w, fp)) rc = synth_fail("synth: writing '%s': %s", out, strerror(errno));
    if (!rc) buf = tern_xmalloc(buf_bytes + (size_t)P->n_embd * 4 * 8); /* room for one row of any type at least */
    const float dq_unit = synth_calibrate(T);
    for (int i = 0; i < n_t && !rc; i++) {
        const synth_tensor *t = &ts[i];
        const synth_fill_spec fs = synth_tensor_spec(t, i, T, dq_unit, seed);
        size_t nbytes = gguf_writer_tensor_nbytes(w, i);
        size_t room = buf_bytes > fs.row_bytes ? buf_bytes : fs.row_bytes;
        if (write_tensor(fp, &fs, t->n_out, buf, room, n_threads) || gguf_writer_write_pad(fp, nbytes))
            rc = synth_fail("synth: writing '%s': %s", out, strerror(errno));
    }
    if (fp && fclose(fp) != 0 && !rc) rc = synth_fail("synth: writing '%s': %s", out, strerror(errno));
    if (rc && fp) remove(out);
    if (!rc) {
        double dt = tern_time_s() - t0, mib = (double)gguf_writer_file_size(w) / (1024.0 * 1024.0);
        printf("wrote %s: %s %s, %d layers, vocab %lld, %d tensors, %.1f MiB in %.2f s (%.0f MiB/s, %d threads)\n",
               out, P->name, T->name, n_layer, (long long)n_vocab, n_t, mib, dt, mib / (dt > 0 ? dt : 1e-9), n_threads);
    }
    free(buf);
    synth_tensor_list_free(ts, names, n_t);
    gguf_writer_free(w);
    return rc;
}

