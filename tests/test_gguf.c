/* test_gguf: the GGUF reader against (1) the gguf Python package's reading of the default model
 * (fixtures by tests/gen_gguf_fixtures.py) and (2) small files written here covering every value type,
 * nested arrays and a custom alignment, and (3) corrupted files: every truncation, bad magic/version,
 * data past the end, unknown types, absurd counts, random byte flips. Corrupt input must give NULL
 * and a message, never a crash (CI runs this binary under ASan/UBSan too). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gguf.h"
#include "quant.h"
#include "util.h"

/* ---- a tiny GGUF writer ---- */
typedef struct { uint8_t *p; size_t n, cap; } buf;
static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void str(buf *b, const char *s) { u64(b, strlen(s)); put(b, s, strlen(s)); }
static void pad(buf *b, size_t al) { while (b->n % al) { uint8_t z = 0; put(b, &z, 1); } }

/* A file with every value type, a nested array, alignment 64 and two tensors (f32 4x2, q8_0 32x1).
 * Offsets of interesting fields are returned for targeted corruption. */
typedef struct { size_t off_ntensors, off_tensor_type, off_tensor_offset, off_ndims, off_arr_count, data_off; } layout;
static buf make_file(layout *lo) {
    buf b = {0};
    put(&b, "GGUF", 4);
    u32(&b, 3);
    lo->off_ntensors = b.n;
    u64(&b, 2);   /* tensors */
    u64(&b, 16);  /* kv */
    str(&b, "general.architecture"); u32(&b, GGUF_VT_STRING); str(&b, "llama");
    str(&b, "general.alignment"); u32(&b, GGUF_VT_U32); u32(&b, 64);
    uint8_t u8v = 200; str(&b, "t.u8"); u32(&b, GGUF_VT_U8); put(&b, &u8v, 1);
    int8_t i8v = -100; str(&b, "t.i8"); u32(&b, GGUF_VT_I8); put(&b, &i8v, 1);
    uint16_t u16v = 60000; str(&b, "t.u16"); u32(&b, GGUF_VT_U16); put(&b, &u16v, 2);
    int16_t i16v = -30000; str(&b, "t.i16"); u32(&b, GGUF_VT_I16); put(&b, &i16v, 2);
    int32_t i32v = -2000000000; str(&b, "t.i32"); u32(&b, GGUF_VT_I32); put(&b, &i32v, 4);
    float f32v = 1.5f; str(&b, "t.f32"); u32(&b, GGUF_VT_F32); put(&b, &f32v, 4);
    uint8_t bv = 1; str(&b, "t.bool"); u32(&b, GGUF_VT_BOOL); put(&b, &bv, 1);
    str(&b, "t.u64"); u32(&b, GGUF_VT_U64); u64(&b, 0x123456789abcULL);
    int64_t i64v = -5; str(&b, "t.i64"); u32(&b, GGUF_VT_I64); put(&b, &i64v, 8);
    double f64v = -2.25; str(&b, "t.f64"); u32(&b, GGUF_VT_F64); put(&b, &f64v, 8);
    str(&b, "t.arr_i32"); u32(&b, GGUF_VT_ARRAY); u32(&b, GGUF_VT_I32);
    lo->off_arr_count = b.n;
    u64(&b, 3);
    int32_t a3[3] = {7, -8, 9}; put(&b, a3, 12);
    str(&b, "t.arr_str"); u32(&b, GGUF_VT_ARRAY); u32(&b, GGUF_VT_STRING); u64(&b, 2); str(&b, "ab"); str(&b, "");
    /* nested: [[1.0f, 2.0f], ["x"]] */
    str(&b, "t.nested"); u32(&b, GGUF_VT_ARRAY); u32(&b, GGUF_VT_ARRAY); u64(&b, 2);
    u32(&b, GGUF_VT_F32); u64(&b, 2); float fa[2] = {1.0f, 2.0f}; put(&b, fa, 8);
    u32(&b, GGUF_VT_STRING); u64(&b, 1); str(&b, "x");
    str(&b, "t.empty"); u32(&b, GGUF_VT_ARRAY); u32(&b, GGUF_VT_U8); u64(&b, 0);
    /* tensors */
    str(&b, "a.weight");
    lo->off_ndims = b.n;
    u32(&b, 2); u64(&b, 4); u64(&b, 2);
    lo->off_tensor_type = b.n;
    u32(&b, TERN_TYPE_F32);
    lo->off_tensor_offset = b.n;
    u64(&b, 0);
    str(&b, "b.weight"); u32(&b, 1); u64(&b, 32); u32(&b, TERN_TYPE_Q8_0); u64(&b, 64);
    pad(&b, 64);
    lo->data_off = b.n;
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    put(&b, a, sizeof a);
    pad(&b, 64);
    uint8_t q[34];
    uint16_t d = tern_fp32_to_fp16(0.5f);
    memcpy(q, &d, 2);
    for (int i = 0; i < 32; i++) q[2 + i] = (uint8_t)(int8_t)(i - 16);
    put(&b, q, sizeof q);
    return b;
}

static const char *write_tmp(const uint8_t *p, size_t n) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/tern_test_gguf_%d.gguf", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) { perror("fopen"); exit(1); }
    if (n) fwrite(p, 1, n, f);
    fclose(f);
    return path;
}

static gguf_file *open_bytes(const uint8_t *p, size_t n) { return gguf_open(write_tmp(p, n)); }

static int expect_fail(const uint8_t *p, size_t n, const char *want_substr) {
    gguf_file *f = open_bytes(p, n);
    if (f) { gguf_close(f); return 0; }
    const char *e = tern_last_error();
    if (!e[0] || strchr(e, '\n')) return 0;
    return want_substr ? strstr(e, want_substr) != NULL : 1;
}

static void test_synthetic(void) {
    layout lo;
    buf b = make_file(&lo);
    gguf_file *f = open_bytes(b.p, b.n);
    CHECK(f != NULL, "valid synthetic file failed: %s", tern_last_error());
    if (!f) return;
    uint64_t u;
    double d;
    int bo;
    CHECK(f->version == 3 && f->n_kv == 16 && f->n_tensors == 2 && f->alignment == 64, "header");
    CHECK(gguf_get_u64(f, "t.u8", &u) == 0 && u == 200, "u8");
    CHECK(gguf_get_f64(f, "t.i8", &d) == 0 && d == -100, "i8");
    CHECK(gguf_get_u64(f, "t.u16", &u) == 0 && u == 60000, "u16");
    CHECK(gguf_get_f64(f, "t.i16", &d) == 0 && d == -30000, "i16");
    CHECK(gguf_get_f64(f, "t.i32", &d) == 0 && d == -2000000000.0, "i32");
    CHECK(gguf_get_u64(f, "t.i32", &u) == -1, "negative into u64 must fail");
    CHECK(gguf_get_f64(f, "t.f32", &d) == 0 && d == 1.5, "f32");
    CHECK(gguf_get_bool(f, "t.bool", &bo) == 0 && bo == 1, "bool");
    CHECK(gguf_get_u64(f, "t.u64", &u) == 0 && u == 0x123456789abcULL, "u64");
    CHECK(gguf_get_f64(f, "t.i64", &d) == 0 && d == -5, "i64");
    CHECK(gguf_get_f64(f, "t.f64", &d) == 0 && d == -2.25, "f64");
    CHECK(gguf_get_u64(f, "absent", &u) == -1 && gguf_get(f, "absent") == NULL, "absent key");
    const char *s = gguf_get_cstr(f, "general.architecture");
    CHECK(s && !strcmp(s, "llama"), "string");
    CHECK(gguf_get_cstr(f, "t.u8") == NULL, "string getter on a number");
    const gguf_value *a = gguf_get_arr(f, "t.arr_i32", GGUF_VT_I32);
    CHECK(a && a->count == 3 && gguf_arr_i64(a, 0) == 7 && gguf_arr_i64(a, 1) == -8 && gguf_arr_f64(a, 2) == 9.0, "i32 array");
    CHECK(gguf_get_arr(f, "t.arr_i32", GGUF_VT_F32) == NULL, "array elem type mismatch");
    a = gguf_get_arr(f, "t.arr_str", GGUF_VT_STRING);
    CHECK(a && a->count == 2 && gguf_str_eq(a->strs[0], "ab") && gguf_str_eq(a->strs[1], ""), "string array");
    a = gguf_get_arr(f, "t.nested", GGUF_VT_ARRAY);
    CHECK(a && a->count == 2 && a->vals[0].elem_type == GGUF_VT_F32 && a->vals[0].count == 2 &&
              gguf_arr_f64(&a->vals[0], 1) == 2.0 && a->vals[1].elem_type == GGUF_VT_STRING &&
              gguf_str_eq(a->vals[1].strs[0], "x"),
          "nested array");
    a = gguf_get_arr(f, "t.empty", GGUF_VT_COUNT);
    CHECK(a && a->count == 0, "empty array");
    const gguf_tensor *t = gguf_find_tensor(f, "a.weight");
    CHECK(t && t->ne[0] == 4 && t->ne[1] == 2 && t->type == TERN_TYPE_F32 && t->nbytes == 32 &&
              (const uint8_t *)t->data - f->base == (ptrdiff_t)lo.data_off && ((const float *)t->data)[7] == 8.0f,
          "tensor a");
    t = gguf_find_tensor(f, "b.weight");
    float deq[32];
    if (t) tern_dequantize_row(TERN_TYPE_Q8_0, t->data, deq, 32);
    CHECK(t && t->nbytes == 34 && (const uint8_t *)t->data - f->base == (ptrdiff_t)(lo.data_off + 64) &&
              deq[0] == -8.0f && deq[31] == 7.5f,
          "tensor b (aligned to 64)");
    CHECK(gguf_find_tensor(f, "c.weight") == NULL, "absent tensor");
    gguf_close(f);

    /* every truncation fails cleanly (the last tensor ends exactly at the end of the file) */
    int trunc_ok = 1;
    for (size_t n = 0; n < b.n; n++)
        if (!expect_fail(b.p, n, NULL)) { trunc_ok = 0; fprintf(stderr, "truncation to %zu bytes accepted\n", n); break; }
    CHECK(trunc_ok, "all %zu truncations rejected with a one-line error", b.n);

    uint8_t *c = malloc(b.n);
    memcpy(c, b.p, b.n); c[0] = 'X';
    CHECK(expect_fail(c, b.n, "not a GGUF file"), "bad magic: %s", tern_last_error());
    memcpy(c, b.p, b.n); c[4] = 1;
    CHECK(expect_fail(c, b.n, "version"), "version 1: %s", tern_last_error());
    memcpy(c, b.p, b.n); { uint32_t ty = 99; memcpy(c + lo.off_tensor_type, &ty, 4); }
    CHECK(expect_fail(c, b.n, "unsupported tensor type"), "unknown tensor type: %s", tern_last_error());
    memcpy(c, b.p, b.n); { uint64_t off = 1 << 20; memcpy(c + lo.off_tensor_offset, &off, 8); }
    CHECK(expect_fail(c, b.n, "past the end"), "data past EOF: %s", tern_last_error());
    memcpy(c, b.p, b.n); { uint64_t off = 32; memcpy(c + lo.off_tensor_offset, &off, 8); }
    CHECK(expect_fail(c, b.n, "aligned"), "misaligned tensor: %s", tern_last_error());
    memcpy(c, b.p, b.n); { uint32_t nd = 5; memcpy(c + lo.off_ndims, &nd, 4); }
    CHECK(expect_fail(c, b.n, "dimensions"), "5 dims: %s", tern_last_error());
    memcpy(c, b.p, b.n); { uint64_t nt = 1ULL << 60; memcpy(c + lo.off_ntensors, &nt, 8); }
    CHECK(expect_fail(c, b.n, NULL), "huge tensor count: %s", tern_last_error());
    memcpy(c, b.p, b.n); { uint64_t na = 1ULL << 62; memcpy(c + lo.off_arr_count, &na, 8); }
    CHECK(expect_fail(c, b.n, NULL), "huge array count: %s", tern_last_error());
    CHECK(expect_fail((const uint8_t *)"", 0, "not a GGUF"), "empty file: %s", tern_last_error());
    /* what ggml's reader also refuses: duplicate keys and tensor names, overlapping data, alignment < 8 */
    memcpy(c, b.p, b.n); memcpy(memmem(c, b.n, "t.i8", 4), "t.u8", 4);
    CHECK(expect_fail(c, b.n, "duplicate metadata key 't.u8'"), "duplicate key: %s", tern_last_error());
    memcpy(c, b.p, b.n); memcpy(memmem(c, b.n, "b.weight", 8), "a.weight", 8);
    CHECK(expect_fail(c, b.n, "duplicate tensor name 'a.weight'"), "duplicate tensor: %s", tern_last_error());
    memcpy(c, b.p, b.n); { uint64_t off = 0; memcpy(memmem(c, b.n, "b.weight", 8) + 8 + 4 + 8 + 4, &off, 8); }
    CHECK(expect_fail(c, b.n, "overlap"), "overlapping tensors: %s", tern_last_error());
    memcpy(c, b.p, b.n); { uint32_t al = 4; memcpy(memmem(c, b.n, "general.alignment", 17) + 17 + 4, &al, 4); }
    CHECK(expect_fail(c, b.n, "alignment"), "alignment 4: %s", tern_last_error());
    memcpy(c, b.p, b.n); { uint8_t *a = memmem(c, b.n, "llama", 5); a[2] = '\n'; }
    gguf_file *g2 = open_bytes(c, b.n);
    CHECK(g2 && gguf_get_cstr(g2, "general.architecture") && !strcmp(gguf_get_cstr(g2, "general.architecture"), "ll\nma"),
          "a string with a newline is read as is");
    if (g2) gguf_close(g2);
    memcpy(c, b.p, b.n); { uint8_t *a = memmem(c, b.n, "llama", 5); a[2] = 0; }
    g2 = open_bytes(c, b.n);
    CHECK(g2 && gguf_get_cstr(g2, "general.architecture") == NULL, "a string with a NUL byte is not a C string");
    if (g2) gguf_close(g2);
    CHECK(gguf_open("/nonexistent/x.gguf") == NULL && strstr(tern_last_error(), "cannot open"), "missing file");

    /* random byte flips: the reader either accepts the file or rejects it with a message; never crashes */
    uint64_t rng = 12345;
    int n_ok = 0, n_rej = 0, bad_msg = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(c, b.p, b.n);
        int flips = 1 + it % 4;
        for (int k = 0; k < flips; k++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t pos = (size_t)(rng >> 33) % b.n;
            c[pos] ^= (uint8_t)(1u << ((rng >> 20) & 7));
        }
        gguf_file *g = open_bytes(c, b.n);
        if (g) { n_ok++; gguf_close(g); }
        else { n_rej++; if (!tern_last_error()[0]) bad_msg++; }
    }
    CHECK(bad_msg == 0 && n_ok + n_rej == 3000, "fuzz: %d accepted, %d rejected, %d without message", n_ok, n_rej, bad_msg);
    free(c);
    free(b.p);
    unlink(write_tmp(NULL, 0));
}

/* The default model read by tern vs read by gguf-py. */
static void test_model_vs_gguf_py(void) {
    const char *path = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (access(path, R_OK) != 0) { CHECK(0, "default model missing at %s (make model)", path); return; }
    gguf_file *f = gguf_open(path);
    CHECK(f != NULL, "open model: %s", tern_last_error());
    if (!f) return;
    FILE *fp = fopen("tests/fixtures/gguf/smollm2_tensors.tsv", "r");
    CHECK(fp != NULL, "fixture missing");
    if (!fp) { gguf_close(f); return; }
    char name[256];
    int type, n = 0, bad = 0;
    long long ne[4], off, nbytes;
    while (fscanf(fp, "%255s %d %lld %lld %lld %lld %lld %lld", name, &type, &ne[0], &ne[1], &ne[2], &ne[3], &off, &nbytes) == 8) {
        const gguf_tensor *t = gguf_find_tensor(f, name);
        n++;
        if (!t || t->type != type || t->ne[0] != ne[0] || t->ne[1] != ne[1] || t->ne[2] != ne[2] || t->ne[3] != ne[3] ||
            (const uint8_t *)t->data - f->base != off || (long long)t->nbytes != nbytes) {
            if (bad++ < 5) fprintf(stderr, "tensor %s differs from gguf-py\n", name);
        }
    }
    fclose(fp);
    CHECK(n == 272 && (uint64_t)n == f->n_tensors && bad == 0, "%d tensors, %d differ from gguf-py", n, bad);
    fp = fopen("tests/fixtures/gguf/smollm2_meta.tsv", "r");
    char line[1024];
    int nm = 0, badm = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        char *val = tab + 1;
        val[strcspn(val, "\n")] = 0;
        char *hash = strstr(line, "#len");
        nm++;
        if (hash) {
            *hash = 0;
            const gguf_value *a = gguf_get_arr(f, line, GGUF_VT_COUNT);
            if (!a || a->count != strtoull(val, NULL, 10)) { badm++; fprintf(stderr, "array %s\n", line); }
            continue;
        }
        const gguf_value *v = gguf_get(f, line);
        if (!v) { badm++; continue; }
        if (v->type == GGUF_VT_STRING) {
            if (!gguf_str_eq(v->v.s, val)) { badm++; fprintf(stderr, "meta %s\n", line); }
        } else {
            double d;
            if (gguf_get_f64(f, line, &d) != 0 || fabs(d - strtod(val, NULL)) > 1e-6 * fabs(d)) {
                badm++;
                fprintf(stderr, "meta %s: %s\n", line, val);
            }
        }
    }
    if (fp) fclose(fp);
    CHECK(nm >= 30 && badm == 0, "%d metadata values, %d differ from gguf-py", nm, badm);
    gguf_close(f);
}

int main(void) {
    test_synthetic();
    test_model_vs_gguf_py();
    return check_summary("test_gguf");
}
