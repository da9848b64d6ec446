/* util.h: error reporting, timing, small helpers shared by every tern source file. */
#ifndef TERN_UTIL_H
#define TERN_UTIL_H
#include <stddef.h>
#include <stdint.h>

/* Record the last error for this thread (printf-style, one line, no trailing newline).
 * Every fallible tern function returns a non-zero status (or NULL) and sets this. */
void tern_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last error message set on this thread ("" if none). */
const char *tern_last_error(void);

/* Monotonic wall-clock time in seconds. */
double tern_time_s(void);

/* malloc/calloc that abort with a message on OOM (only for small host-side bookkeeping). */
void *tern_xmalloc(size_t n);
void *tern_xcalloc(size_t n, size_t sz);

/* IEEE half / bfloat16 <-> float (round-to-nearest-even on the way in). */
float tern_fp16_to_fp32(uint16_t h);
uint16_t tern_fp32_to_fp16(float f);
float tern_bf16_to_fp32(uint16_t h);
uint16_t tern_fp32_to_bf16(float f);

#endif
