/* fuzz_gguf: libFuzzer over the GGUF reader and the model loader (issue 28): the input is a file; gguf_open, every
 * metadata getter on every key, the tokenizer built from the metadata (tern_vocab_load), then tern_model_load (the
 * hyperparameters checked against the tensor directory before anything is allocated). A bad file must give an error
 * (NULL and a one-line tern_last_error), never a crash, a leak, undefined behaviour or an allocation past -rss_limit.
 * make fuzz; tests/t_fuzz_core.sh runs it briefly from tests/fuzz/corpus_gguf (seeds: scripts/fuzz_seeds.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gguf.h"
#include "tern.h"
#include "tokenizer.h"

static int check_error(void) {
    const char *e = tern_last_error();
    if (!e[0] || strchr(e, '\n')) {
        fprintf(stderr, "fuzz_gguf: error message is empty or not one line: '%s'\n", e);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    int fd = memfd_create("fuzz.gguf", 0);
    if (fd < 0) return 0;
    if (write(fd, data, n) != (ssize_t)n) { close(fd); return 0; }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    gguf_file *f = gguf_open(path);
    if (!f) {
        check_error();
    } else {
        for (uint64_t i = 0; i < f->n_kv; i++) {
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)(f->kv[i].key.len < 200 ? f->kv[i].key.len : 200), f->kv[i].key.ptr);
            uint64_t u;
            double d;
            int b;
            (void)gguf_get_u64(f, key, &u);
            (void)gguf_get_f64(f, key, &d);
            (void)gguf_get_bool(f, key, &b);
            (void)gguf_get_cstr(f, key);
            const gguf_value *a = gguf_get_arr(f, key, GGUF_VT_COUNT);
            if (a && a->elem_type != GGUF_VT_STRING && a->elem_type != GGUF_VT_ARRAY)
                for (uint64_t k = 0; k < a->count && k < 64; k++) (void)(gguf_arr_f64(a, k) + (double)gguf_arr_i64(a, k));
        }
        for (uint64_t i = 0; i < f->n_tensors; i++) {
            const gguf_tensor *t = &f->tensors[i];
            volatile uint8_t sink = 0;
            if (t->nbytes) sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->nbytes - 1];
            (void)sink;
        }
        tern_vocab *v = tern_vocab_load(f);
        if (v) {
            int32_t ids[64];
            (void)tern_tokenize(v, "Hello world <|im_start|> 123", 28, 1, 1, ids, 64);
            tern_vocab_free(v);
        } else {
            check_error();
        }
        gguf_close(f);
        tern_model *m = tern_model_load(path, 0);
        if (m) tern_model_free(m);
        else check_error();
    }
    close(fd);
    return 0;
}
