/* test_synth: `tern synth` files (cli/synth.c, src/format/gguf_write.c) load in tern and run a forward pass with
 * finite, non-constant logits, for every preset x a few types (2 layers, vocab 512; all 14 types appear);
 * tensor names, shapes and types match the preset; a dequantized row's std is within 30% of 1/sqrt(n_in);
 * gguf_write round-trips every value kind through gguf_open. (CLI errors, seeds and the full preset table:
 * tests/t_synth.sh.) Runs ./tern from the repo root (tests/run.sh cds there); temp files in /tmp, deleted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "check.h"
#include "gguf.h"
#include "gguf_write.h"
#include "model.h"
#include "quant.h"
#include "synth.h"
#include "tern.h"

static char path[256];

static int synth(const char *arch, const char *type, int layers, int vocab, int seed) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "./tern synth --arch %s --type %s --layers %d --vocab %d --seed %d -o %s >/dev/null",
             arch, type, layers, vocab, seed, path);
    return system(cmd);
}

/* std of row r of tensor t (dequantized) */
static double row_std(const gguf_tensor *t, int64_t r) {
    int64_t n = t->ne[0];
    float *y = malloc(sizeof(float) * (size_t)n);
    tern_dequantize_row((enum tern_type)t->type, (const char *)t->data + r * tern_type_row_size(t->type, n), y, n);
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) { s += y[i]; ss += (double)y[i] * y[i]; }
    free(y);
    double m = s / (double)n;
    return sqrt(ss / (double)n - m * m);
}

static void check_file(const char *arch, const char *type, int n_embd, int n_ff, int tied) {
    gguf_file *f = gguf_open(path);
    CHECK(f != NULL, "%s %s: gguf_open: %s", arch, type, tern_last_error());
    if (!f) return;
    CHECK(f->n_tensors == (uint64_t)(2 + !tied + 9 * 2), "%s: %llu tensors", arch, (unsigned long long)f->n_tensors);
    const gguf_tensor *o = gguf_find_tensor(f, "output.weight");
    CHECK(tied ? o == NULL : (o && o->ne[0] == n_embd && o->ne[1] == 512), "%s: output.weight (tied %d)", arch, tied);
    const gguf_tensor *d = gguf_find_tensor(f, "blk.1.ffn_down.weight");
    CHECK(d && d->ne[0] == n_ff && d->ne[1] == n_embd && !strcasecmp(tern_type_name(d->type), type), "%s %s: ffn_down", arch, type);
    const gguf_tensor *nw = gguf_find_tensor(f, "blk.0.attn_norm.weight");
    CHECK(nw && nw->type == TERN_TYPE_F32 && nw->n_dims == 1, "%s: attn_norm f32", arch);
    const char *tm = gguf_get_cstr(f, "tokenizer.ggml.model");
    CHECK(tm && !strcmp(tm, "no_vocab"), "%s: tokenizer.ggml.model", arch);
    uint64_t v = 0;
    CHECK(gguf_get_u64(f, "llama.embedding_length", &v) == 0 && v == (uint64_t)n_embd, "%s: embedding_length", arch);
    const char *mats[] = {"blk.0.attn_q.weight", "blk.1.ffn_down.weight", "token_embd.weight"};
    for (int i = 0; i < 3; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, mats[i]);
        if (!t) continue;
        double want = 1.0 / sqrt((double)t->ne[0]), got = 0;
        for (int r = 0; r < 8; r++) got += row_std(t, r * 7) / 8;
        CHECK(fabs(got - want) <= 0.3 * want, "%s %s %s: row std %g, want %g", arch, type, mats[i], got, want);
    }
    gguf_close(f);
}

static void check_forward(const char *arch, const char *type) {
    tern_model *m = tern_model_load(path, 0);
    CHECK(m != NULL, "%s %s: load: %s", arch, type, tern_last_error());
    if (!m) return;
    tern_context *c = tern_context_new(m, 64, 2);
    int nv = tern_model_n_vocab(m);
    float *lg = malloc(sizeof(float) * (size_t)nv * 4);
    int32_t toks[4] = {1, 17, 300, 511};
    int r = tern_eval(c, toks, 4, lg, 1);
    CHECK(r == 0, "%s %s: eval: %s", arch, type, tern_last_error());
    int finite = 1;
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < nv * 4; i++) {
        if (!isfinite(lg[i])) finite = 0;
        lo = fminf(lo, lg[i]);
        hi = fmaxf(hi, lg[i]);
    }
    CHECK(r == 0 && finite && hi > lo, "%s %s: logits finite %d, range [%g, %g]", arch, type, finite, lo, hi);
    free(lg);
    tern_context_free(c);
    tern_model_free(m);
}

/* gguf_write round trip through gguf_open: every value kind the writer has, and tensor offsets/alignment. */
static void check_writer(void) {
    gguf_writer *w = gguf_writer_new();
    const uint32_t au[3] = {1, 2, 4000000000u};
    const float af[2] = {0.5f, -3.25f};
    const char *as[3] = {"a", "", "xyz"};
    gguf_writer_add_u32(w, "k.u32", 123456789u);
    gguf_writer_add_f32(w, "k.f32", 1.5e-5f);
    gguf_writer_add_bool(w, "k.bool", 1);
    gguf_writer_add_str(w, "k.str", "hello");
    gguf_writer_add_arr_u32(w, "k.au", au, 3);
    gguf_writer_add_arr_f32(w, "k.af", af, 2);
    gguf_writer_add_arr_str(w, "k.as", as, 3);
    const int64_t ne0[1] = {3}, ne1[2] = {32, 2};
    CHECK(gguf_writer_add_tensor(w, "t0", 1, ne0, TERN_TYPE_F32) == 0, "add t0");
    CHECK(gguf_writer_add_tensor(w, "t1", 2, ne1, TERN_TYPE_Q8_0) == 0, "add t1");
    const int64_t bad[2] = {48, 2};
    CHECK(gguf_writer_add_tensor(w, "bad", 2, bad, TERN_TYPE_Q4_0) == -1, "48-wide q4_0 rows accepted");
    FILE *fp = fopen(path, "wb");
    CHECK(fp && gguf_writer_write_header(w, fp) == 0, "write header");
    if (fp) {
        const float t0[3] = {1, 2, 3};
        uint8_t t1[68];
        memset(t1, 0, sizeof t1);
        t1[0] = 0x00; t1[1] = 0x3c; /* d = 1.0 (fp16) */
        t1[2] = 5;
        fwrite(t0, 1, sizeof t0, fp);
        gguf_writer_write_pad(fp, sizeof t0);
        fwrite(t1, 1, sizeof t1, fp);
        gguf_writer_write_pad(fp, sizeof t1);
        fclose(fp);
    }
    gguf_file *f = gguf_open(path);
    CHECK(f != NULL, "gguf_open writer file: %s", tern_last_error());
    if (f) {
        uint64_t u = 0;
        double d = 0;
        int b = 0;
        CHECK(f->version == 3 && f->n_kv == 7 && f->n_tensors == 2, "header");
        CHECK(gguf_get_u64(f, "k.u32", &u) == 0 && u == 123456789u, "u32");
        CHECK(gguf_get_f64(f, "k.f32", &d) == 0 && (float)d == 1.5e-5f, "f32");
        CHECK(gguf_get_bool(f, "k.bool", &b) == 0 && b == 1, "bool");
        const char *str = gguf_get_cstr(f, "k.str");
        CHECK(str && !strcmp(str, "hello"), "str");
        const gguf_value *a = gguf_get_arr(f, "k.au", GGUF_VT_U32);
        CHECK(a && a->count == 3 && gguf_arr_i64(a, 2) == 4000000000ll, "arr u32");
        a = gguf_get_arr(f, "k.af", GGUF_VT_F32);
        CHECK(a && a->count == 2 && gguf_arr_f64(a, 1) == -3.25, "arr f32");
        a = gguf_get_arr(f, "k.as", GGUF_VT_STRING);
        CHECK(a && a->count == 3 && a->strs[1].len == 0 && gguf_str_eq(a->strs[2], "xyz"), "arr str");
        const gguf_tensor *t0 = gguf_find_tensor(f, "t0"), *t1 = gguf_find_tensor(f, "t1");
        CHECK(t0 && t0->offset == 0 && ((const float *)t0->data)[2] == 3.0f, "t0");
        CHECK(t1 && t1->offset == 32 && t1->ne[0] == 32 && t1->ne[1] == 2 && t1->nbytes == 68 &&
              ((const uint8_t *)t1->data)[2] == 5 && f->data_offset % 32 == 0, "t1");
        gguf_close(f);
    }
    gguf_writer_free(w);
}

/* tern_synth_model_new (tern bench --synthetic) makes the file's bytes: for every matrix, rows 0, the middle
 * and the last (token_embd/output: of the file's 512-row vocabulary, rows past it are the same streams) equal
 * the file written with the same preset, type, layers and seed; norms equal; the CPU refuses the model. */
static void check_memory(const char *arch, const char *type, int seed) {
    tern_model *m = tern_synth_model_new(arch, type, 2, seed);
    CHECK(m != NULL, "%s %s: tern_synth_model_new: %s", arch, type, tern_last_error());
    gguf_file *f = gguf_open(path);
    CHECK(f != NULL, "gguf_open");
    if (!m || !f) { tern_model_free(m); gguf_close(f); return; }
    static const char *lnames[7] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    int n_cmp = 0, n_bad = 0;
    for (int t = -2; t < 7 * m->n_layer; t++) {
        const tern_weight *w;
        char name[64];
        if (t == -2) { w = &m->tok_embd; snprintf(name, sizeof name, "token_embd.weight"); }
        else if (t == -1) {
            w = &m->output;
            snprintf(name, sizeof name, "%s", gguf_find_tensor(f, "output.weight") ? "output.weight" : "token_embd.weight");
        } else {
            const tern_layer *l = &m->layers[t / 7];
            const tern_weight *ws[7] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
            w = ws[t % 7];
            snprintf(name, sizeof name, "blk.%d.%s.weight", t / 7, lnames[t % 7]);
        }
        const gguf_tensor *ft = gguf_find_tensor(f, name);
        CHECK(ft && w->data == NULL && (int64_t)ft->ne[0] == w->n_in, "%s: %s in the file and in memory", arch, name);
        if (!ft) continue;
        const int64_t rows = (int64_t)ft->ne[1], pick[3] = {0, rows / 2, rows - 1};
        uint8_t *buf = malloc(w->row_bytes);
        for (int k = 0; k < 3; k++) {
            CHECK(m->gen_rows(m, w, pick[k], 1, buf) == 0, "gen_rows");
            n_cmp++;
            if (memcmp(buf, (const char *)ft->data + (size_t)pick[k] * w->row_bytes, w->row_bytes)) n_bad++;
        }
        free(buf);
    }
    CHECK(n_bad == 0 && n_cmp >= 3 * (2 + 14), "%s %s: %d of %d rows differ from the file", arch, type, n_bad, n_cmp);
    const gguf_tensor *nt = gguf_find_tensor(f, "blk.1.ffn_norm.weight");
    CHECK(nt && !memcmp(nt->data, m->layers[1].ffn_norm, sizeof(float) * (size_t)m->n_embd), "%s: ffn_norm", arch);
    tern_context_params p = tern_context_default_params();
    p.device = TERN_DEVICE_CPU;
    p.n_ctx = 16;
    tern_context *c = tern_context_new_ex(m, &p);
    CHECK(c == NULL && strstr(tern_last_error(), "cuda only"), "the CPU refuses an in-memory model: %s", tern_last_error());
    tern_context_free(c);
    gguf_close(f);
    tern_model_free(m);
}

int main(void) {
    snprintf(path, sizeof path, "/tmp/tern_test_synth_%d.gguf", (int)getpid());
    check_writer();
    static const struct { const char *arch, *types; int n_embd, n_ff, tied; } cases[] = {
        {"smollm2-135m", "q8_0 iq4_nl q5_1 f16 bf16 q4_0", 576, 1536, 1},
        {"llama3.2-1b", "q8_0 q4_k q6_k q2_k q3_k q5_k q4_1 q5_0 f32", 2048, 8192, 1},
        {"mistral-7b", "q4_k", 4096, 14336, 0},
        {"llama3-8b", "q6_k", 4096, 14336, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char types[128];
        snprintf(types, sizeof types, "%s", cases[i].types);
        for (char *t = strtok(types, " "); t; t = strtok(NULL, " ")) {
            int rc = synth(cases[i].arch, t, 2, 512, 7);
            CHECK(rc == 0, "%s %s: tern synth exit %d", cases[i].arch, t, rc);
            if (rc) continue;
            check_file(cases[i].arch, t, cases[i].n_embd, cases[i].n_ff, cases[i].tied);
            check_forward(cases[i].arch, t);
        }
    }
    /* in memory == file (tied and untied presets, two block types) */
    CHECK(synth("smollm2-135m", "q8_0", 2, 512, 7) == 0, "synth");
    check_memory("smollm2-135m", "q8_0", 7);
    CHECK(synth("llama3-8b", "q6_k", 2, 512, 3) == 0, "synth");
    check_memory("llama3-8b", "q6_k", 3);
    unlink(path);
    return check_summary("test_synth");
}
