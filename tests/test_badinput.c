/* test_badinput: hostile model files through the whole loader (tern_model_load), and out-of-range
 * requests through the API. Every case must fail with a one-line message naming the problem; none may
 * crash (CI runs this under ASan/UBSan). Corrupted files are copies of the default model written to /tmp. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gguf.h"
#include "tern.h"

static const char *MODEL = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
static char tmp_path[64];

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*n);
    if (fread(p, 1, *n, f) != *n) { free(p); p = NULL; }
    fclose(f);
    return p;
}

static const char *write_tmp(const uint8_t *p, size_t n) {
    FILE *f = fopen(tmp_path, "wb");
    if (!f) { perror(tmp_path); exit(1); }
    if (n) fwrite(p, 1, n, f);
    fclose(f);
    return tmp_path;
}

/* Load must fail with a one-line message containing want (if non-NULL). */
static void expect_load_fail(const uint8_t *p, size_t n, const char *want, const char *what) {
    tern_model *m = tern_model_load(write_tmp(p, n), 0);
    const char *e = tern_last_error();
    CHECK(m == NULL && e[0] && !strchr(e, '\n') && (!want || strstr(e, want)), "%s: got %s, error '%s'", what,
          m ? "a model" : "NULL", e);
    if (m) tern_model_free(m);
}

int main(void) {
    snprintf(tmp_path, sizeof tmp_path, "/tmp/tern_badinput_%d.gguf", (int)getpid());
    size_t n;
    uint8_t *orig = slurp(MODEL, &n);
    CHECK(orig != NULL, "default model missing at %s (run make model)", MODEL);
    if (!orig) return check_summary("test_badinput");
    uint8_t *c = malloc(n);

    /* missing file */
    tern_model *m = tern_model_load("/nonexistent/model.gguf", 0);
    CHECK(!m && strstr(tern_last_error(), "cannot open"), "missing file: %s", tern_last_error());
    /* wrong magic */
    memcpy(c, orig, n);
    memcpy(c, "GGML", 4);
    expect_load_fail(c, n, "not a GGUF file", "wrong magic");
    /* truncations: inside the header, the metadata, the tensor directory, the data, the last byte */
    gguf_file *g = gguf_open(MODEL);
    CHECK(g != NULL, "open: %s", tern_last_error());
    size_t cuts[] = {3, 10, 1000, 500000, g->data_offset - 100, g->data_offset + 5000, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu bytes", cuts[i]);
        /* inside the header/metadata: "truncated"; once the directory is complete: "past the end";
         * the cut just before the data section may land on either side of the last tensor info */
        const char *want = cuts[i] < 4 ? "not a GGUF" : cuts[i] > g->data_offset ? "past the end"
                         : cuts[i] <= 500000 ? "truncated" : NULL;
        expect_load_fail(orig, cuts[i], want, what);
    }
    /* tensor data past the end: offset of the last tensor pushed beyond the file */
    const gguf_tensor *t0 = &g->tensors[0];
    size_t type_off = (size_t)((const uint8_t *)t0->name.ptr - g->base) + t0->name.len + 4 + 8 * t0->n_dims;
    memcpy(c, orig, n);
    uint64_t far = (uint64_t)n;
    memcpy(c + type_off + 4, &far, 8);
    expect_load_fail(c, n, "past the end", "tensor offset past EOF");
    /* unknown tensor type */
    memcpy(c, orig, n);
    uint32_t bad_type = 77;
    memcpy(c + type_off, &bad_type, 4);
    expect_load_fail(c, n, "unsupported tensor type", "unknown tensor type");
    /* unsupported architecture: general.architecture "llama" -> "mamba" (same length) */
    memcpy(c, orig, n);
    uint8_t *a = memmem(c, g->data_offset, "general.architecture", 20);
    CHECK(a != NULL, "architecture key present");
    if (a) {
        memcpy(a + 20 + 4 + 8, "mamba", 5); /* key, u32 type, u64 len, value */
        expect_load_fail(c, n, "unsupported architecture 'mamba'", "unsupported architecture");
    }
    /* a required tensor renamed away */
    memcpy(c, orig, n);
    uint8_t *nm = memmem(c, g->data_offset, "output_norm.weight", 18);
    if (nm) {
        nm[0] = 'X';
        expect_load_fail(c, n, "output_norm.weight", "missing tensor");
    }
    /* wrong values for known keys (patched in place: key, u32 type, value) */
    memcpy(c, orig, n);
    uint8_t *bc = memmem(c, g->data_offset, "llama.block_count", 17);
    if (bc) {
        uint32_t v = 29;
        memcpy(bc + 17 + 4, &v, 4);
        expect_load_fail(c, n, "block_count = 29 but the file's tensors hold 30 layers",
                         "block_count lower than the layers in the file");
        v = 1u << 24; /* refused against the tensor directory before a per-layer array is allocated */
        memcpy(bc + 17 + 4, &v, 4);
        expect_load_fail(c, n, "block_count = 16777216 but the file's tensors hold 30 layers", "block_count 2^24");
    }
    /* head_count x key_length beyond int: refused in checked 64-bit arithmetic (UBSan found the int product) */
    memcpy(c, orig, n);
    uint8_t *hcp = memmem(c, g->data_offset, "llama.attention.head_count", 26);
    if (hcp && hcp[26] != '_') {
        uint32_t v = 1u << 30;
        memcpy(hcp + 26 + 4, &v, 4);
        expect_load_fail(c, n, "attention", "head_count 2^30");
    }
    memcpy(c, orig, n);
    uint8_t *ep = memmem(c, g->data_offset, "llama.attention.layer_norm_rms_epsilon", 38);
    if (ep) {
        float v = NAN;
        memcpy(ep + 38 + 4, &v, 4);
        expect_load_fail(c, n, "out of range", "rms epsilon NaN");
    }
    memcpy(c, orig, n);
    uint8_t *fb = memmem(c, g->data_offset, "llama.rope.freq_base", 20);
    if (fb) {
        float v = -1.0f;
        memcpy(fb + 20 + 4, &v, 4);
        expect_load_fail(c, n, "out of range", "negative rope base");
        uint32_t tb = GGUF_VT_STRING;
        memcpy(c, orig, n);
        memcpy(fb + 20, &tb, 4); /* a string of length read from the float's bytes: the reader must cope */
        tern_model *mm = tern_model_load(write_tmp(c, n), 0);
        CHECK(mm == NULL && tern_last_error()[0], "freq_base retyped as a string: %s", tern_last_error());
        if (mm) tern_model_free(mm);
    }
    memcpy(c, orig, n);
    uint8_t *hc = memmem(c, g->data_offset, "llama.embedding_length", 22);
    if (hc) {
        uint32_t tb = GGUF_VT_F32;
        memcpy(hc + 22, &tb, 4);
        expect_load_fail(c, n, "must be a non-negative integer", "embedding_length as f32");
    }
    gguf_close(g);

    /* out-of-range requests on a valid model */
    m = tern_model_load(MODEL, 0);
    CHECK(m != NULL, "load: %s", tern_last_error());
    if (m) {
        tern_context *ctx = tern_context_new(m, 16, 1);
        int32_t toks[20] = {0};
        for (int i = 0; i < 20; i++) toks[i] = 100 + i;
        CHECK(tern_eval(ctx, toks, 17, NULL, 0) == -1 && strstr(tern_last_error(), "context"),
              "prompt longer than the context: %s", tern_last_error());
        int32_t bad = tern_model_n_vocab(m);
        CHECK(tern_eval(ctx, &bad, 1, NULL, 0) == -1 && strstr(tern_last_error(), "out of range"),
              "token id out of range: %s", tern_last_error());
        CHECK(tern_context_n_past(ctx) == 0, "failed evals leave the cache empty");
        CHECK(tern_context_truncate(ctx, 1) == -1, "truncate beyond n_past");
        tern_context_free(ctx);
        tern_model_free(m);
    }
    unlink(tmp_path);
    free(c);
    free(orig);
    return check_summary("test_badinput");
}
