/* gguf.h: read-only GGUF v2/v3 reader over an mmapped file.
 *
 * Format source: the GGUF spec (ggml/docs/gguf.md): magic "GGUF", u32 version, u64 tensor_count,
 * u64 kv_count, kv pairs (string key, u32 value type, value), tensor infos (string name, u32 n_dims,
 * u64 ne[n_dims], u32 ggml_type, u64 offset), padding to general.alignment (default 32), tensor data.
 * Strings are u64 length + bytes (not NUL-terminated). Arrays are u32 element type + u64 count + elements
 * and may nest.
 *
 * Every length, count, offset and tensor extent is checked against the file size; a bad file gives a
 * NULL handle and tern_last_error() names the problem. Nothing is read past the mapping. Also rejected,
 * as ggml's reader does: duplicate keys, duplicate tensor names, overlapping tensor data, and a
 * general.alignment that is not a power of two multiple of 8.
 */
#ifndef TERN_GGUF_H
#define TERN_GGUF_H
#include <stddef.h>
#include <stdint.h>

enum gguf_vtype {
    GGUF_VT_U8 = 0, GGUF_VT_I8 = 1, GGUF_VT_U16 = 2, GGUF_VT_I16 = 3, GGUF_VT_U32 = 4, GGUF_VT_I32 = 5,
    GGUF_VT_F32 = 6, GGUF_VT_BOOL = 7, GGUF_VT_STRING = 8, GGUF_VT_ARRAY = 9, GGUF_VT_U64 = 10,
    GGUF_VT_I64 = 11, GGUF_VT_F64 = 12, GGUF_VT_COUNT
};

/* A string inside the mapping: len bytes at ptr, not NUL-terminated. */
typedef struct { uint64_t len; const char *ptr; } gguf_str;

/* One metadata value. Scalars are decoded; arrays keep their element type and count and:
 *  - for fixed-size scalar elements: `data` points at the packed little-endian elements in the mapping;
 *  - for strings: `strs` holds `count` gguf_str;
 *  - for nested arrays: `vals` holds `count` gguf_value. */
typedef struct gguf_value {
    enum gguf_vtype type;
    union { uint64_t u; int64_t i; double f; int b; gguf_str s; } v;  /* scalars (ints widened) */
    enum gguf_vtype elem_type;  /* arrays only */
    uint64_t count;             /* arrays only */
    const void *data;           /* arrays of fixed-size scalars */
    gguf_str *strs;             /* arrays of strings */
    struct gguf_value *vals;    /* arrays of arrays */
} gguf_value;

typedef struct { gguf_str key; gguf_value val; } gguf_kv;

#define GGUF_MAX_DIMS 4
typedef struct {
    gguf_str name;
    uint32_t n_dims;
    int64_t ne[GGUF_MAX_DIMS];  /* ne[0] is the innermost (contiguous) dimension, ggml order */
    int type;                   /* ggml type id (enum tern_type) */
    uint64_t offset;            /* relative to the start of the data section */
    const void *data;           /* pointer into the mapping */
    size_t nbytes;
} gguf_tensor;

typedef struct gguf_file {
    uint32_t version;
    uint64_t n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    uint64_t alignment;
    const uint8_t *base;  /* mapping */
    size_t size;          /* file size in bytes */
    size_t data_offset;   /* start of the tensor data section in the file */
    uint64_t *tensor_index_; /* internal: open-addressing hash of tensor names (index + 1, 0 = empty) */
    uint64_t tensor_index_cap_;
    void *arena_;         /* internal allocations */
    int base_malloced_;   /* internal: base is a malloc'd header image (gguf_open_header), not a mapping */
    void (*release_)(void *); /* internal: gguf_open_header's release callback and its argument */
    void *release_ud_;
} gguf_file;

/* Open and validate a GGUF file (v2 or v3). Returns NULL on error (tern_last_error names it).
 * If `progress` is non-zero, touching of tensor pages is not done here; the mapping is lazy. */
gguf_file *gguf_open(const char *path);
void gguf_close(gguf_file *f);
/* A gguf_file over a GGUF header image (hdr, len bytes: header, metadata, tensor directory, padded to the data
 * section, as gguf_writer_write_header writes it) whose tensor data live elsewhere: data[i] holds tensor i's bytes
 * (directory order), kept valid until release(ud) runs at gguf_close. Takes hdr (malloc'd) in every case; on error
 * release(ud) has run too. The format-level seam of the HF safetensors reader (safetensors.h): the model loader
 * binds its tensors as from a file. */
gguf_file *gguf_open_header(void *hdr, size_t len, const void *const *data, void (*release)(void *), void *ud);

/* Metadata lookup by key; NULL if absent. */
const gguf_value *gguf_get(const gguf_file *f, const char *key);
/* Typed getters: return 0 and store the value if the key exists and is numeric (any int/float/bool
 * type is converted); return -1 if absent or of the wrong type (then *out is untouched). */
int gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out);
int gguf_get_f64(const gguf_file *f, const char *key, double *out);
int gguf_get_bool(const gguf_file *f, const char *key, int *out);
/* String value: returns a NUL-terminated copy owned by the file (valid until gguf_close), or NULL
 * (absent, not a string, or containing a NUL byte). */
const char *gguf_get_cstr(const gguf_file *f, const char *key);
/* Array value with the given element type (GGUF_VT_COUNT = any); NULL if absent or mismatched. */
const gguf_value *gguf_get_arr(const gguf_file *f, const char *key, enum gguf_vtype elem_type);
/* Numeric array element i as double / int64 (any scalar element type). */
double gguf_arr_f64(const gguf_value *arr, uint64_t i);
int64_t gguf_arr_i64(const gguf_value *arr, uint64_t i);

/* Tensor lookup by name; NULL if absent. */
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);
/* Number of elements of a tensor. */
int64_t gguf_tensor_nelements(const gguf_tensor *t);
/* Compare a gguf_str to a C string. */
int gguf_str_eq(gguf_str s, const char *c);

#endif
