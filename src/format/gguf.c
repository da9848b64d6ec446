/* gguf.c: GGUF v2/v3 reader. Format: GGUF spec (ggml/docs/gguf.md), see gguf.h.
 * The parser is a bounds-checked cursor over the mmapped file: every read first checks that the bytes
 * exist, so a truncated or corrupted file gives an error naming the problem, never a read past the end. */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant.h"
#include "util.h"

/* Limits that keep a hostile file from asking for absurd allocations before bounds checks bite. */
#define GGUF_MAX_NESTING 8

/* A simple arena: a linked list of allocations freed together in gguf_close. */
typedef struct arena_blk { struct arena_blk *next; } arena_blk;

static void *arena_alloc(gguf_file *f, size_t n) {
    arena_blk *b = malloc(sizeof(arena_blk) + n);
    if (!b) return NULL;
    b->next = f->arena_;
    f->arena_ = b;
    return b + 1;
}

typedef struct {
    const uint8_t *p, *end;
    gguf_file *f;
    const char *what;  /* what is being parsed, for error messages */
} cursor;

static int need(cursor *c, uint64_t n) {
    if ((uint64_t)(c->end - c->p) < n) {
        tern_set_error("truncated GGUF file: %s needs %llu bytes at offset %zu, file is %zu bytes", c->what,
                       (unsigned long long)n, (size_t)(c->p - c->f->base), c->f->size);
        return -1;
    }
    return 0;
}

#define RD(c, T, out)                              \
    do {                                           \
        if (need(c, sizeof(T))) return -1;         \
        memcpy((out), (c)->p, sizeof(T));          \
        (c)->p += sizeof(T);                       \
    } while (0)

static int rd_str(cursor *c, gguf_str *s) {
    uint64_t len;
    RD(c, uint64_t, &len);
    if (need(c, len)) return -1;
    s->len = len;
    s->ptr = (const char *)c->p;
    c->p += len;
    return 0;
}

static size_t vtype_size(enum gguf_vtype t) {
    switch (t) {
    case GGUF_VT_U8: case GGUF_VT_I8: case GGUF_VT_BOOL: return 1;
    case GGUF_VT_U16: case GGUF_VT_I16: return 2;
    case GGUF_VT_U32: case GGUF_VT_I32: case GGUF_VT_F32: return 4;
    case GGUF_VT_U64: case GGUF_VT_I64: case GGUF_VT_F64: return 8;
    default: return 0;
    }
}

static int rd_scalar(cursor *c, enum gguf_vtype t, gguf_value *v) {
    switch (t) {
    case GGUF_VT_U8: { uint8_t x; RD(c, uint8_t, &x); v->v.u = x; break; }
    case GGUF_VT_I8: { int8_t x; RD(c, int8_t, &x); v->v.i = x; break; }
    case GGUF_VT_U16: { uint16_t x; RD(c, uint16_t, &x); v->v.u = x; break; }
    case GGUF_VT_I16: { int16_t x; RD(c, int16_t, &x); v->v.i = x; break; }
    case GGUF_VT_U32: { uint32_t x; RD(c, uint32_t, &x); v->v.u = x; break; }
    case GGUF_VT_I32: { int32_t x; RD(c, int32_t, &x); v->v.i = x; break; }
    case GGUF_VT_U64: { uint64_t x; RD(c, uint64_t, &x); v->v.u = x; break; }
    case GGUF_VT_I64: { int64_t x; RD(c, int64_t, &x); v->v.i = x; break; }
    case GGUF_VT_F32: { float x; RD(c, float, &x); v->v.f = x; break; }
    case GGUF_VT_F64: { double x; RD(c, double, &x); v->v.f = x; break; }
    case GGUF_VT_BOOL: {
        uint8_t x;
        RD(c, uint8_t, &x);
        if (x > 1) { tern_set_error("bad GGUF file: %s: bool value %u", c->what, x); return -1; }
        v->v.b = x;
        break;
    }
    default: tern_set_error("bad GGUF file: %s: unknown value type %d", c->what, (int)t); return -1;
    }
    return 0;
}

static int rd_value(cursor *c, enum gguf_vtype t, gguf_value *v, int depth) {
    memset(v, 0, sizeof *v);
    v->type = t;
    if (t == GGUF_VT_STRING) return rd_str(c, &v->v.s);
    if (t != GGUF_VT_ARRAY) return rd_scalar(c, t, v);
    if (depth >= GGUF_MAX_NESTING) { tern_set_error("bad GGUF file: %s: arrays nested too deep", c->what); return -1; }
    uint32_t et;
    uint64_t n;
    RD(c, uint32_t, &et);
    RD(c, uint64_t, &n);
    if (et >= GGUF_VT_COUNT) { tern_set_error("bad GGUF file: %s: unknown array element type %u", c->what, et); return -1; }
    v->elem_type = (enum gguf_vtype)et;
    v->count = n;
    size_t es = vtype_size(v->elem_type);
    if (es) {
        if (n > UINT64_MAX / es || need(c, n * es)) {
            if (n > UINT64_MAX / es) tern_set_error("bad GGUF file: %s: array of %llu elements", c->what, (unsigned long long)n);
            return -1;
        }
        if (v->elem_type == GGUF_VT_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (c->p[i] > 1) { tern_set_error("bad GGUF file: %s: bool value %u", c->what, c->p[i]); return -1; }
        v->data = c->p;
        c->p += n * es;
        return 0;
    }
    /* Strings take >= 8 bytes each and arrays >= 12, so a count larger than the rest of the file is a lie. */
    uint64_t min_each = v->elem_type == GGUF_VT_STRING ? 8 : 12;
    if (n > (uint64_t)(c->end - c->p) / min_each) {
        tern_set_error("truncated GGUF file: %s: array of %llu elements does not fit", c->what, (unsigned long long)n);
        return -1;
    }
    if (v->elem_type == GGUF_VT_STRING) {
        v->strs = arena_alloc(c->f, (n ? n : 1) * sizeof(gguf_str));
        if (!v->strs) { tern_set_error("out of memory reading %s", c->what); return -1; }
        for (uint64_t i = 0; i < n; i++)
            if (rd_str(c, &v->strs[i])) return -1;
    } else {
        v->vals = arena_alloc(c->f, (n ? n : 1) * sizeof(gguf_value));
        if (!v->vals) { tern_set_error("out of memory reading %s", c->what); return -1; }
        for (uint64_t i = 0; i < n; i++)
            if (rd_value(c, GGUF_VT_ARRAY, &v->vals[i], depth + 1)) return -1;
    }
    return 0;
}

static uint64_t str_hash(const char *p, uint64_t n) { /* FNV-1a */
    uint64_t h = 1469598103934665603ULL;
    for (uint64_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 1099511628211ULL;
    return h;
}

static int str_same(gguf_str a, gguf_str b) { return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0; }

/* Insert strs[0..n) (at stride bytes) into a fresh open-addressing table of cap slots (power of two,
 * >= 2n); returns the index of a duplicate, or -1. table holds index + 1, 0 = empty. */
static int64_t hash_build(const void *base, size_t stride, uint64_t n, uint64_t *table, uint64_t cap) {
    memset(table, 0, cap * sizeof *table);
    for (uint64_t i = 0; i < n; i++) {
        gguf_str s = *(const gguf_str *)((const char *)base + i * stride);
        uint64_t h = str_hash(s.ptr, s.len) & (cap - 1);
        while (table[h]) {
            gguf_str o = *(const gguf_str *)((const char *)base + (table[h] - 1) * stride);
            if (str_same(o, s)) return (int64_t)i;
            h = (h + 1) & (cap - 1);
        }
        table[h] = i + 1;
    }
    return -1;
}

static uint64_t pow2_at_least(uint64_t n) {
    uint64_t c = 16;
    while (c < n) c <<= 1;
    return c;
}

static int cmp_extent(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

int gguf_str_eq(gguf_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    arena_blk *b = f->arena_;
    while (b) {
        arena_blk *n = b->next;
        free(b);
        b = n;
    }
    if (f->release_) f->release_(f->release_ud_);
    if (f->base && f->base_malloced_) free((void *)f->base);
    else if (f->base) munmap((void *)f->base, f->size);
    free(f);
}

static gguf_file *fail(gguf_file *f) {
    gguf_close(f);
    return NULL;
}

static gguf_file *parse(gguf_file *f, const char *path, const void *const *data);

gguf_file *gguf_open(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { tern_set_error("cannot open model file '%s': %s", path, strerror(errno)); return NULL; }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        tern_set_error("'%s' is not a regular file", path);
        close(fd);
        return NULL;
    }
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) { close(fd); tern_set_error("out of memory"); return NULL; }
    f->size = (size_t)st.st_size;
    if (f->size < 4) {
        close(fd);
        tern_set_error("'%s' is not a GGUF file (%zu bytes, too short for the magic)", path, f->size);
        return fail(f);
    }
    void *map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) { tern_set_error("cannot mmap '%s': %s", path, strerror(errno)); return fail(f); }
    f->base = map;
    return parse(f, path, NULL);
}

gguf_file *gguf_open_header(void *hdr, size_t len, const void *const *data, void (*release)(void *), void *ud) {
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) {
        free(hdr);
        if (release) release(ud);
        tern_set_error("out of memory");
        return NULL;
    }
    f->base = hdr;
    f->size = len;
    f->base_malloced_ = 1;
    f->release_ = release;
    f->release_ud_ = ud;
    if (len < 4) { tern_set_error("GGUF header image of %zu bytes", len); return fail(f); }
    return parse(f, "(header image)", data);
}

/* The header of f's image (f->base, f->size): metadata, tensor directory, checks. data == NULL: the tensor data
 * follow in the image (a file); else data[i] is tensor i's, elsewhere (gguf_open_header). */
static gguf_file *parse(gguf_file *f, const char *path, const void *const *data) {
    cursor c = {f->base, f->base + f->size, f, "header"};
    if (memcmp(f->base, "GGUF", 4) != 0) {
        tern_set_error("'%s' is not a GGUF file (bad magic %02x %02x %02x %02x)", path, f->base[0], f->base[1],
                       f->base[2], f->base[3]);
        return fail(f);
    }
    c.p += 4;
    if (need(&c, 4)) return fail(f);
    memcpy(&f->version, c.p, 4);
    c.p += 4;
    if (f->version != 2 && f->version != 3) {
        tern_set_error("'%s': unsupported GGUF version %u (tern reads v2 and v3)", path, f->version);
        return fail(f);
    }
    if (need(&c, 16)) return fail(f);
    memcpy(&f->n_tensors, c.p, 8);
    memcpy(&f->n_kv, c.p + 8, 8);
    c.p += 16;
    /* Each kv takes >= 8+1+4 bytes, each tensor info >= 8+4+8+4+8. */
    if (f->n_kv > f->size / 13 || f->n_tensors > f->size / 32) {
        tern_set_error("truncated or bad GGUF file '%s': header claims %llu kv pairs and %llu tensors for a %zu-byte file", path,
                       (unsigned long long)f->n_kv, (unsigned long long)f->n_tensors, f->size);
        return fail(f);
    }
    f->kv = arena_alloc(f, (f->n_kv ? f->n_kv : 1) * sizeof(gguf_kv));
    f->tensors = arena_alloc(f, (f->n_tensors ? f->n_tensors : 1) * sizeof(gguf_tensor));
    if (!f->kv || !f->tensors) { tern_set_error("out of memory"); return fail(f); }

    char what[160];
    for (uint64_t i = 0; i < f->n_kv; i++) {
        snprintf(what, sizeof what, "metadata entry %llu", (unsigned long long)i);
        c.what = what;
        gguf_kv *kv = &f->kv[i];
        uint32_t t;
        if (rd_str(&c, &kv->key)) return fail(f);
        snprintf(what, sizeof what, "metadata '%.*s'", (int)(kv->key.len > 100 ? 100 : kv->key.len), kv->key.ptr);
        if (need(&c, 4)) return fail(f);
        memcpy(&t, c.p, 4);
        c.p += 4;
        if (t >= GGUF_VT_COUNT) {
            tern_set_error("bad GGUF file: %s: unknown value type %u", what, t);
            return fail(f);
        }
        if (rd_value(&c, (enum gguf_vtype)t, &kv->val, 0)) return fail(f);
    }

    {
        uint64_t cap = pow2_at_least(2 * f->n_kv);
        uint64_t *tab = malloc(cap * sizeof *tab);
        if (!tab) { tern_set_error("out of memory"); return fail(f); }
        int64_t dup = hash_build(&f->kv[0].key, sizeof(gguf_kv), f->n_kv, tab, cap);
        free(tab);
        if (dup >= 0) {
            gguf_str k = f->kv[dup].key;
            tern_set_error("bad GGUF file: duplicate metadata key '%.*s'", (int)(k.len > 100 ? 100 : k.len), k.ptr);
            return fail(f);
        }
    }
    f->alignment = 32;
    const gguf_value *al = gguf_get(f, "general.alignment");
    if (al) {
        if (al->type != GGUF_VT_U32 || al->v.u < 8 || (al->v.u & (al->v.u - 1))) {
            tern_set_error("bad GGUF file: general.alignment must be a u32 power of two >= 8 (GGUF spec)");
            return fail(f);
        }
        f->alignment = al->v.u;
    }

    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        snprintf(what, sizeof what, "tensor info %llu", (unsigned long long)i);
        c.what = what;
        if (rd_str(&c, &t->name)) return fail(f);
        snprintf(what, sizeof what, "tensor '%.*s'", (int)(t->name.len > 100 ? 100 : t->name.len), t->name.ptr);
        if (need(&c, 4)) return fail(f);
        memcpy(&t->n_dims, c.p, 4);
        c.p += 4;
        if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS) {
            tern_set_error("bad GGUF file: %s has %u dimensions", what, t->n_dims);
            return fail(f);
        }
        for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            uint64_t ne;
            if (need(&c, 8)) return fail(f);
            memcpy(&ne, c.p, 8);
            c.p += 8;
            if (ne == 0 || ne > ((uint64_t)1 << 40)) {
                tern_set_error("bad GGUF file: %s dimension %u is %llu", what, d, (unsigned long long)ne);
                return fail(f);
            }
            t->ne[d] = (int64_t)ne;
        }
        uint32_t type;
        if (need(&c, 12)) return fail(f);
        memcpy(&type, c.p, 4);
        memcpy(&t->offset, c.p + 4, 8);
        c.p += 12;
        t->type = (int)type;
        if (!tern_type_supported((int)type)) {
            tern_set_error("unsupported tensor type %u (%s) in %s", type, tern_type_name((int)type), what);
            return fail(f);
        }
        int64_t bs = tern_type_block_size((enum tern_type)type);
        if (t->ne[0] % bs != 0) {
            tern_set_error("bad GGUF file: %s row of %lld elements is not a multiple of the %s block size %lld", what,
                           (long long)t->ne[0], tern_type_name(t->type), (long long)bs);
            return fail(f);
        }
        /* Overflow-safe size: each factor <= 2^40 but their product may not be. */
        uint64_t rows = 1;
        for (int d = 1; d < GGUF_MAX_DIMS; d++) {
            if (rows > (UINT64_MAX >> 1) / (uint64_t)t->ne[d]) { tern_set_error("bad GGUF file: %s is too large", what); return fail(f); }
            rows *= (uint64_t)t->ne[d];
        }
        uint64_t row_bytes = tern_type_row_size((enum tern_type)type, t->ne[0]);
        if (!data && rows > f->size / (row_bytes ? row_bytes : 1) + 1) {
            tern_set_error("bad GGUF file: %s extends past the end of the file", what);
            return fail(f);
        }
        t->nbytes = (size_t)(rows * row_bytes);
        if (t->offset % f->alignment) {
            tern_set_error("bad GGUF file: %s offset %llu is not aligned to %llu", what, (unsigned long long)t->offset,
                           (unsigned long long)f->alignment);
            return fail(f);
        }
    }
    size_t hdr = (size_t)(c.p - f->base);
    f->data_offset = (hdr + f->alignment - 1) / f->alignment * f->alignment;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        if (data) { /* elsewhere: the caller vouches for nbytes at data[i] */
            if (!data[i]) { tern_set_error("tensor %llu has no data", (unsigned long long)i); return fail(f); }
            t->data = data[i];
            continue;
        }
        if (f->data_offset > f->size || t->offset > f->size - f->data_offset ||
            t->nbytes > f->size - f->data_offset - t->offset) {
            tern_set_error("bad GGUF file: tensor '%.*s' data (offset %llu, %zu bytes) lies past the end of the file "
                           "(%zu bytes)", (int)(t->name.len > 100 ? 100 : t->name.len), t->name.ptr,
                           (unsigned long long)t->offset, t->nbytes, f->size);
            return fail(f);
        }
        t->data = f->base + f->data_offset + t->offset;
    }
    /* tensor name index (lookups are O(1): a file of many layers must not load in quadratic time) */
    f->tensor_index_cap_ = pow2_at_least(2 * f->n_tensors);
    f->tensor_index_ = arena_alloc(f, f->tensor_index_cap_ * sizeof(uint64_t));
    if (!f->tensor_index_) { tern_set_error("out of memory"); return fail(f); }
    int64_t dup = hash_build(&f->tensors[0].name, sizeof(gguf_tensor), f->n_tensors, f->tensor_index_,
                             f->tensor_index_cap_);
    if (dup >= 0) {
        gguf_str n = f->tensors[dup].name;
        tern_set_error("bad GGUF file: duplicate tensor name '%.*s'", (int)(n.len > 100 ? 100 : n.len), n.ptr);
        return fail(f);
    }
    /* tensor data must not overlap (each tensor's bytes belong to it alone) */
    if (f->n_tensors > 1) {
        uint64_t *ext = malloc(2 * f->n_tensors * sizeof *ext);
        if (!ext) { tern_set_error("out of memory"); return fail(f); }
        for (uint64_t i = 0; i < f->n_tensors; i++) {
            ext[2 * i] = f->tensors[i].offset;
            ext[2 * i + 1] = f->tensors[i].nbytes;
        }
        qsort(ext, f->n_tensors, 2 * sizeof *ext, cmp_extent);
        int overlap = 0;
        for (uint64_t i = 0; i + 1 < f->n_tensors && !overlap; i++)
            overlap = ext[2 * i] + ext[2 * i + 1] > ext[2 * i + 2];
        free(ext);
        if (overlap) { tern_set_error("bad GGUF file: tensor data regions overlap"); return fail(f); }
    }
    return f;
}

const gguf_value *gguf_get(const gguf_file *f, const char *key) {
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (gguf_str_eq(f->kv[i].key, key)) return &f->kv[i].val;
    return NULL;
}

static int is_int(enum gguf_vtype t) {
    return t == GGUF_VT_U8 || t == GGUF_VT_I8 || t == GGUF_VT_U16 || t == GGUF_VT_I16 || t == GGUF_VT_U32 ||
           t == GGUF_VT_I32 || t == GGUF_VT_U64 || t == GGUF_VT_I64;
}
static int is_signed(enum gguf_vtype t) {
    return t == GGUF_VT_I8 || t == GGUF_VT_I16 || t == GGUF_VT_I32 || t == GGUF_VT_I64;
}

int gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out) {
    const gguf_value *v = gguf_get(f, key);
    if (!v) return -1;
    if (is_int(v->type)) {
        if (is_signed(v->type) && v->v.i < 0) return -1;
        *out = is_signed(v->type) ? (uint64_t)v->v.i : v->v.u;
        return 0;
    }
    if (v->type == GGUF_VT_BOOL) { *out = (uint64_t)v->v.b; return 0; }
    return -1;
}

int gguf_get_f64(const gguf_file *f, const char *key, double *out) {
    const gguf_value *v = gguf_get(f, key);
    if (!v) return -1;
    if (v->type == GGUF_VT_F32 || v->type == GGUF_VT_F64) *out = v->v.f;
    else if (is_int(v->type)) *out = is_signed(v->type) ? (double)v->v.i : (double)v->v.u;
    else if (v->type == GGUF_VT_BOOL) *out = v->v.b;
    else return -1;
    return 0;
}

int gguf_get_bool(const gguf_file *f, const char *key, int *out) {
    const gguf_value *v = gguf_get(f, key);
    if (!v) return -1;
    if (v->type == GGUF_VT_BOOL) *out = v->v.b;
    else if (is_int(v->type)) *out = v->v.u != 0;
    else return -1;
    return 0;
}

const char *gguf_get_cstr(const gguf_file *f, const char *key) {
    const gguf_value *v = gguf_get(f, key);
    if (!v || v->type != GGUF_VT_STRING || memchr(v->v.s.ptr, 0, v->v.s.len)) return NULL;
    /* Copy into the arena (the const cast is for the cache only; the mapping is never written). */
    char *s = arena_alloc((gguf_file *)f, v->v.s.len + 1);
    if (!s) return NULL;
    memcpy(s, v->v.s.ptr, v->v.s.len);
    s[v->v.s.len] = 0;
    return s;
}

const gguf_value *gguf_get_arr(const gguf_file *f, const char *key, enum gguf_vtype elem_type) {
    const gguf_value *v = gguf_get(f, key);
    if (!v || v->type != GGUF_VT_ARRAY) return NULL;
    if (elem_type != GGUF_VT_COUNT && v->elem_type != elem_type) return NULL;
    return v;
}

int64_t gguf_arr_i64(const gguf_value *a, uint64_t i) {
    const uint8_t *p = (const uint8_t *)a->data + i * vtype_size(a->elem_type);
    switch (a->elem_type) {
    case GGUF_VT_U8: case GGUF_VT_BOOL: return *p;
    case GGUF_VT_I8: return (int8_t)*p;
    case GGUF_VT_U16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case GGUF_VT_I16: { int16_t x; memcpy(&x, p, 2); return x; }
    case GGUF_VT_U32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case GGUF_VT_I32: { int32_t x; memcpy(&x, p, 4); return x; }
    case GGUF_VT_U64: { uint64_t x; memcpy(&x, p, 8); return (int64_t)x; }
    case GGUF_VT_I64: { int64_t x; memcpy(&x, p, 8); return x; }
    case GGUF_VT_F32: { float x; memcpy(&x, p, 4); return (int64_t)x; }
    case GGUF_VT_F64: { double x; memcpy(&x, p, 8); return (int64_t)x; }
    default: return 0;
    }
}

double gguf_arr_f64(const gguf_value *a, uint64_t i) {
    const uint8_t *p = (const uint8_t *)a->data + i * vtype_size(a->elem_type);
    if (a->elem_type == GGUF_VT_F32) { float x; memcpy(&x, p, 4); return x; }
    if (a->elem_type == GGUF_VT_F64) { double x; memcpy(&x, p, 8); return x; }
    if (a->elem_type == GGUF_VT_U64) { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    return (double)gguf_arr_i64(a, i);
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    if (!f->tensor_index_) return NULL;
    const uint64_t cap = f->tensor_index_cap_;
    uint64_t h = str_hash(name, strlen(name)) & (cap - 1);
    while (f->tensor_index_[h]) {
        const gguf_tensor *t = &f->tensors[f->tensor_index_[h] - 1];
        if (gguf_str_eq(t->name, name)) return t;
        h = (h + 1) & (cap - 1);
    }
    return NULL;
}

int64_t gguf_tensor_nelements(const gguf_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) n *= t->ne[d];
    return n;
}
