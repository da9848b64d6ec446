/* quantize.h: weight quantizers, f32 rows into the GGUF block formats of quant.h (`tern quantize`).
 *
 * Each follows llama.cpp's reference quantizer for the type as llama-quantize runs it without an importance matrix
 * (ggml/src/ggml-quants.c of the llama.cpp vendored in llama-cpp-python 0.3.36, MIT): quantize_row_q4_0_ref ..
 * q8_0_ref, q2_K_ref .. q6_K_ref, and quantize_iq4_nl (quantize_row_iq4_nl_impl with ntry 7). The arithmetic is
 * the same float operations in the same order (tern builds with -ffp-contract=off; ggml-base is built without
 * FMA), so the bytes are the same: tests/t_quantize.sh compares them with llama-quantize's.
 */
#ifndef TERN_QUANTIZE_H
#define TERN_QUANTIZE_H
#include <stddef.h>
#include <stdint.h>

#include "quant.h"

/* 1 if tern can write type t: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL. */
int tern_quantize_supported(enum tern_type t);

/* Quantize x (n floats, one or more rows laid end to end; n a multiple of t's block size) into y, which has
 * room for tern_type_row_size(t, n) bytes. Returns the bytes written (0 for an unsupported type or a bad n). */
size_t tern_quantize_row(enum tern_type t, const float *x, void *y, int64_t n);

#endif
