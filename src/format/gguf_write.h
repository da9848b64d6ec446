/* gguf_write.h: a small GGUF v3 writer (the counterpart of gguf.h's reader).
 *
 * Format source: the GGUF spec (ggml/docs/gguf.md), as in gguf.h. Everything little-endian; strings are
 * u64 length + bytes; tensor data offsets are relative to the data section and aligned to 32 bytes
 * (GGUF_WRITE_ALIGN, the spec's default; general.alignment is not written).
 *
 * Use: gguf_writer_new, add metadata (gguf_writer_add_*) and tensor descriptions (gguf_writer_add_tensor)
 * in file order, then gguf_writer_write_header(w, fp) writes the header, the tensor directory and the
 * padding up to the data section; the caller then writes each tensor's gguf_writer_tensor_nbytes bytes
 * in the order they were added, each followed by gguf_writer_write_pad(fp, nbytes).
 * Errors: functions returning int give 0 on success and -1 with tern_last_error() set.
 */
#ifndef TERN_GGUF_WRITE_H
#define TERN_GGUF_WRITE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GGUF_WRITE_ALIGN 32

typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);

/* Metadata key/value pairs (key: NUL-terminated). */
void gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v);
void gguf_writer_add_f32(gguf_writer *w, const char *key, float v);
void gguf_writer_add_bool(gguf_writer *w, const char *key, int v);
void gguf_writer_add_str(gguf_writer *w, const char *key, const char *v);
/* Arrays of n scalars (u32 / f32) or n strings. */
void gguf_writer_add_arr_u32(gguf_writer *w, const char *key, const uint32_t *v, uint64_t n);
void gguf_writer_add_arr_f32(gguf_writer *w, const char *key, const float *v, uint64_t n);
void gguf_writer_add_arr_str(gguf_writer *w, const char *key, const char *const *v, uint64_t n);

/* Any metadata value as a reader gave it (gguf.h's gguf_value: scalars of every type, strings, arrays, arrays
 * of arrays), serialized as it was read: copies a file's metadata verbatim (`tern quantize`). */
struct gguf_value;
void gguf_writer_add_value(gguf_writer *w, const char *key, const struct gguf_value *v);

/* Describe a tensor: ne[0] is the innermost (contiguous) dimension, ggml order; type an enum tern_type.
 * Returns 0, or -1 if n_dims is not 1..4, a dimension is < 1, or ne[0] is not a multiple of the type's
 * block size. */
int gguf_writer_add_tensor(gguf_writer *w, const char *name, int n_dims, const int64_t *ne, int type);
/* Bytes of tensor i's data (0 if out of range). */
size_t gguf_writer_tensor_nbytes(const gguf_writer *w, int i);
/* Total file size the writer will produce (header + directory + padded data), in bytes. */
uint64_t gguf_writer_file_size(const gguf_writer *w);

/* Write header, kv pairs, tensor directory and padding to the data section. -1 on a write error. */
int gguf_writer_write_header(const gguf_writer *w, FILE *fp);
/* Write the zero padding that follows a tensor of nbytes bytes. -1 on a write error. */
int gguf_writer_write_pad(FILE *fp, size_t nbytes);

#endif
