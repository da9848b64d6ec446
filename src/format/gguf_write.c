/* gguf_write.c: GGUF v3 writer (see gguf_write.h). The header is built in memory (it is small: a few KB
 * of metadata plus ~100 bytes per tensor) and written in one go; tensor data is streamed by the caller. */
#include "gguf_write.h"

#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"
#include "util.h"

typedef struct {
    char *name;
    int n_dims, type;
    int64_t ne[GGUF_MAX_DIMS];
    uint64_t offset; /* relative to the data section */
    size_t nbytes;
} wtensor;

struct gguf_writer {
    uint8_t *kv;       /* serialized kv pairs */
    size_t kv_len, kv_cap;
    uint64_t n_kv;
    wtensor *t;
    int n_t, cap_t;
    uint64_t data_len; /* padded */
};

static size_t pad_to(size_t n) { return (n + GGUF_WRITE_ALIGN - 1) / GGUF_WRITE_ALIGN * GGUF_WRITE_ALIGN; }

static void put(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t n) {
    if (*len + n > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (c < *len + n) c *= 2;
        uint8_t *nb = realloc(*buf, c);
        if (!nb) { fputs("tern: out of memory\n", stderr); abort(); }
        *buf = nb;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
}
/* Little-endian hosts only (x86-64, aarch64), as the reader assumes. */
#define PUTV(w, v) put(&(w)->kv, &(w)->kv_len, &(w)->kv_cap, &(v), sizeof(v))
static void put_str(gguf_writer *w, const char *s) {
    uint64_t n = strlen(s);
    PUTV(w, n);
    put(&w->kv, &w->kv_len, &w->kv_cap, s, n);
}
static void put_key(gguf_writer *w, const char *key, uint32_t vt) {
    put_str(w, key);
    PUTV(w, vt);
    w->n_kv++;
}

gguf_writer *gguf_writer_new(void) { return tern_xcalloc(1, sizeof(gguf_writer)); }

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->t);
    free(w->kv);
    free(w);
}

void gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v) { put_key(w, key, GGUF_VT_U32); PUTV(w, v); }
void gguf_writer_add_f32(gguf_writer *w, const char *key, float v) { put_key(w, key, GGUF_VT_F32); PUTV(w, v); }
void gguf_writer_add_bool(gguf_writer *w, const char *key, int v) {
    uint8_t b = v ? 1 : 0;
    put_key(w, key, GGUF_VT_BOOL);
    PUTV(w, b);
}
void gguf_writer_add_str(gguf_writer *w, const char *key, const char *v) { put_key(w, key, GGUF_VT_STRING); put_str(w, v); }

static void put_arr_head(gguf_writer *w, const char *key, uint32_t et, uint64_t n) {
    put_key(w, key, GGUF_VT_ARRAY);
    PUTV(w, et);
    PUTV(w, n);
}
void gguf_writer_add_arr_u32(gguf_writer *w, const char *key, const uint32_t *v, uint64_t n) {
    put_arr_head(w, key, GGUF_VT_U32, n);
    put(&w->kv, &w->kv_len, &w->kv_cap, v, sizeof(uint32_t) * n);
}
void gguf_writer_add_arr_f32(gguf_writer *w, const char *key, const float *v, uint64_t n) {
    put_arr_head(w, key, GGUF_VT_F32, n);
    put(&w->kv, &w->kv_len, &w->kv_cap, v, sizeof(float) * n);
}
void gguf_writer_add_arr_str(gguf_writer *w, const char *key, const char *const *v, uint64_t n) {
    put_arr_head(w, key, GGUF_VT_STRING, n);
    for (uint64_t i = 0; i < n; i++) put_str(w, v[i]);
}

/* A reader's value re-serialized (any type; arrays of arrays recursively), for copying metadata verbatim. */
static size_t vt_size(uint32_t t) {
    switch (t) {
    case GGUF_VT_U8: case GGUF_VT_I8: case GGUF_VT_BOOL: return 1;
    case GGUF_VT_U16: case GGUF_VT_I16: return 2;
    case GGUF_VT_U32: case GGUF_VT_I32: case GGUF_VT_F32: return 4;
    case GGUF_VT_U64: case GGUF_VT_I64: case GGUF_VT_F64: return 8;
    default: return 0;
    }
}
static void put_gstr(gguf_writer *w, gguf_str s) {
    PUTV(w, s.len);
    put(&w->kv, &w->kv_len, &w->kv_cap, s.ptr, (size_t)s.len);
}
static void put_scalar(gguf_writer *w, const gguf_value *v) {
    uint8_t b[8];
    switch (v->type) {
    case GGUF_VT_U8: case GGUF_VT_I8: b[0] = (uint8_t)v->v.u; break;
    case GGUF_VT_BOOL: b[0] = (uint8_t)(v->v.b != 0); break;
    case GGUF_VT_U16: case GGUF_VT_I16: { uint16_t x = (uint16_t)v->v.u; memcpy(b, &x, 2); break; }
    case GGUF_VT_U32: case GGUF_VT_I32: { uint32_t x = (uint32_t)v->v.u; memcpy(b, &x, 4); break; }
    case GGUF_VT_F32: { float x = (float)v->v.f; memcpy(b, &x, 4); break; }
    case GGUF_VT_U64: case GGUF_VT_I64: memcpy(b, &v->v.u, 8); break;
    case GGUF_VT_F64: memcpy(b, &v->v.f, 8); break;
    default: return;
    }
    put(&w->kv, &w->kv_len, &w->kv_cap, b, vt_size(v->type));
}
static void put_array_body(gguf_writer *w, const gguf_value *v) {
    uint32_t et = v->elem_type;
    PUTV(w, et);
    PUTV(w, v->count);
    if (et == GGUF_VT_STRING) for (uint64_t i = 0; i < v->count; i++) put_gstr(w, v->strs[i]);
    else if (et == GGUF_VT_ARRAY) for (uint64_t i = 0; i < v->count; i++) put_array_body(w, &v->vals[i]);
    else put(&w->kv, &w->kv_len, &w->kv_cap, v->data, vt_size(et) * (size_t)v->count);
}
void gguf_writer_add_value(gguf_writer *w, const char *key, const gguf_value *v) {
    put_key(w, key, (uint32_t)v->type);
    if (v->type == GGUF_VT_STRING) put_gstr(w, v->v.s);
    else if (v->type == GGUF_VT_ARRAY) put_array_body(w, v);
    else put_scalar(w, v);
}

int gguf_writer_add_tensor(gguf_writer *w, const char *name, int n_dims, const int64_t *ne, int type) {
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS) {
        tern_set_error("tensor '%s': %d dimensions (GGUF allows 1..%d)", name, n_dims, GGUF_MAX_DIMS);
        return -1;
    }
    if (!tern_type_supported(type)) {
        tern_set_error("tensor '%s': unsupported type id %d", name, type);
        return -1;
    }
    int64_t n = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 1) { tern_set_error("tensor '%s': dimension %d is %lld", name, d, (long long)ne[d]); return -1; }
        n *= ne[d];
    }
    size_t row = tern_type_row_size((enum tern_type)type, ne[0]);
    if (row == 0) {
        tern_set_error("tensor '%s': row length %lld is not a multiple of %s's block size %lld", name,
                       (long long)ne[0], tern_type_name(type), (long long)tern_type_block_size((enum tern_type)type));
        return -1;
    }
    if (w->n_t == w->cap_t) {
        w->cap_t = w->cap_t ? 2 * w->cap_t : 64;
        wtensor *nt = realloc(w->t, sizeof(wtensor) * (size_t)w->cap_t);
        if (!nt) { fputs("tern: out of memory\n", stderr); abort(); }
        w->t = nt;
    }
    wtensor *t = &w->t[w->n_t++];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    t->n_dims = n_dims;
    t->type = type;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->nbytes = row * (size_t)(n / ne[0]);
    t->offset = w->data_len;
    w->data_len += pad_to(t->nbytes);
    return 0;
}

size_t gguf_writer_tensor_nbytes(const gguf_writer *w, int i) { return i >= 0 && i < w->n_t ? w->t[i].nbytes : 0; }

/* Serialized header + directory, unpadded. */
static size_t header_len(const gguf_writer *w) {
    size_t n = 4 + 4 + 8 + 8 + w->kv_len;
    for (int i = 0; i < w->n_t; i++) n += 8 + strlen(w->t[i].name) + 4 + 8 * (size_t)w->t[i].n_dims + 4 + 8;
    return n;
}

uint64_t gguf_writer_file_size(const gguf_writer *w) { return pad_to(header_len(w)) + w->data_len; }

int gguf_writer_write_header(const gguf_writer *w, FILE *fp) {
    uint8_t *b = NULL;
    size_t len = 0, cap = 0;
    uint32_t version = 3;
    uint64_t nt = (uint64_t)w->n_t;
    put(&b, &len, &cap, "GGUF", 4);
    put(&b, &len, &cap, &version, 4);
    put(&b, &len, &cap, &nt, 8);
    put(&b, &len, &cap, &w->n_kv, 8);
    if (w->kv_len) put(&b, &len, &cap, w->kv, w->kv_len);
    for (int i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        uint64_t sl = strlen(t->name);
        uint32_t nd = (uint32_t)t->n_dims, ty = (uint32_t)t->type;
        put(&b, &len, &cap, &sl, 8);
        put(&b, &len, &cap, t->name, sl);
        put(&b, &len, &cap, &nd, 4);
        for (int d = 0; d < t->n_dims; d++) {
            uint64_t e = (uint64_t)t->ne[d];
            put(&b, &len, &cap, &e, 8);
        }
        put(&b, &len, &cap, &ty, 4);
        put(&b, &len, &cap, &t->offset, 8);
    }
    static const uint8_t zero[GGUF_WRITE_ALIGN];
    put(&b, &len, &cap, zero, pad_to(len) - len);
    int rc = fwrite(b, 1, len, fp) == len ? 0 : -1;
    free(b);
    if (rc) tern_set_error("write error in the GGUF header");
    return rc;
}

int gguf_writer_write_pad(FILE *fp, size_t nbytes) {
    static const uint8_t zero[GGUF_WRITE_ALIGN];
    size_t p = pad_to(nbytes) - nbytes;
    if (p && fwrite(zero, 1, p, fp) != p) {
        tern_set_error("write error (padding)");
        return -1;
    }
    return 0;
}
