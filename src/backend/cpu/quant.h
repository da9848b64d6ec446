/* quant.h: tensor element types as GGUF stores them (ggml type ids), their block layouts,
 * reference dequantizers, and the CPU dot products used by every matmul.
 *
 * Source of the layouts: ggml's ggml-common.h / gguf-py's quants.py (GGUF spec, "ggml_type").
 * A row of n elements of a block type holds n / block_size(t) blocks, each type_size(t) bytes.
 *
 * Matmul convention: y[r] = dot(W[r, :], x), W row-major (n_rows, n_cols) in type t,
 * x quantized once per matmul into tern_type_vec_dot_type(t) (an activation format internal
 * to tern, not a file format), then tern_vec_dot(t, n, W_row, xq) per row.
 *
 * Determinism: tern_vec_dot gives bit-identical results on the scalar and every SIMD path
 * (integer sums inside a block are exact; the float accumulation across blocks follows one
 * fixed order on every path).
 */
#ifndef TERN_QUANT_H
#define TERN_QUANT_H
#include <stddef.h>
#include <stdint.h>

/* ggml type ids as stored in the GGUF tensor directory (GGUF spec, ggml_type). */
enum tern_type {
    TERN_TYPE_F32 = 0,
    TERN_TYPE_F16 = 1,
    TERN_TYPE_Q4_0 = 2,
    TERN_TYPE_Q4_1 = 3,
    TERN_TYPE_Q5_0 = 6,
    TERN_TYPE_Q5_1 = 7,
    TERN_TYPE_Q8_0 = 8,
    TERN_TYPE_Q8_1 = 9,
    TERN_TYPE_Q2_K = 10,
    TERN_TYPE_Q3_K = 11,
    TERN_TYPE_Q4_K = 12,
    TERN_TYPE_Q5_K = 13,
    TERN_TYPE_Q6_K = 14,
    TERN_TYPE_Q8_K = 15,
    TERN_TYPE_IQ4_NL = 20,
    TERN_TYPE_BF16 = 30,
    TERN_TYPE_COUNT = 40 /* upper bound of ids, not a type */
};

/* 1 if t is a type id tern can store and compute with (weights or activations), else 0. */
int tern_type_supported(int t);
/* Name as ggml spells it ("q4_0", "f16", ...); "unknown" for an unsupported id. */
const char *tern_type_name(int t);
/* Elements per block (1 for f32/f16/bf16, 32 for Q4_0..Q8_0 and IQ4_NL, 256 for K-quants). */
int64_t tern_type_block_size(enum tern_type t);
/* Bytes per block (e.g. 18 for Q4_0, 20 for Q4_1, 34 for Q8_0, 144 for Q4_K). */
size_t tern_type_type_size(enum tern_type t);
/* Bytes of a row of n elements; n must be a multiple of the block size (returns 0 otherwise). */
size_t tern_type_row_size(enum tern_type t, int64_t n);

/* Reference dequantizer: x holds n/block_size blocks of type t; writes n floats to y.
 * n must be a multiple of the block size. Matches gguf-py's numpy dequantizers. */
void tern_dequantize_row(enum tern_type t, const void *x, float *y, int64_t n);

/* The activation format weights of type t are dotted against:
 * f32 for F32/F16/BF16 weights; a Q8 block format for the quantized types. */
/* (quant.c) Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants; TERN_TYPE_COUNT for
 * a type with no dot product (Q8_1, Q8_K, unsupported ids). Q8_0/Q8_1/Q8_K blocks are byte-compatible with
 * ggml's block_q8_0/q8_1/q8_K: Q8_0/Q8_1 take d = fp16(amax/127), q = round-half-even(x * 127/amax) and
 * (Q8_1) s = fp16(d * sum q), llama.cpp's x86 quantize_row_q8_0/_1; Q8_K follows quantize_row_q8_K_ref.
 * NaN/Inf activations give unspecified (but defined) quants. */
enum tern_type tern_type_vec_dot_type(enum tern_type t);

/* Quantize n floats x into the activation format vt (= tern_type_vec_dot_type of some weight type);
 * for vt == F32 this is a copy. n must be a multiple of vt's block size. */
void tern_quantize_activation(enum tern_type vt, const float *x, void *y, int64_t n);

/* dot(W_row, x) for one row of n elements: w holds the row in type t, xq holds x in
 * tern_type_vec_dot_type(t). Returns the f32 result. Bit-identical on every SIMD path. */
float tern_vec_dot(enum tern_type t, int64_t n, const void *w, const void *xq);

/* Multi-column dot for prefill: out[c] = dot(W_row, x_c) for c in [0, ncols), x_c at
 * (const char *)xq + c * xq_stride (each in tern_type_vec_dot_type(t)). Reuses the unpacked weight
 * block across columns. Each out[c] is bit-identical to tern_vec_dot(t, n, w, x_c). */
void tern_vec_dot_multi(enum tern_type t, int64_t n, const void *w, const void *xq, size_t xq_stride,
                        int ncols, float *out);

/* Multi-row dot for decode: out[r] = dot(W_r, x) for r in [0, nrows), W_r at (const char *)w + r * w_stride
 * (each a row of n elements in type t), x in tern_type_vec_dot_type(t). Each out[r] is bit-identical to
 * tern_vec_dot(t, n, W_r, xq); the rows' float accumulation chains are interleaved (4 at a time on the
 * AVX2 path for the 32-element block types), which hides the FMA latency a single row waits on.
 * Errors as tern_vec_dot (out filled with NaN). */
void tern_vec_dot_rows(enum tern_type t, int64_t n, const void *w, size_t w_stride, const void *xq, int nrows,
                       float *out);

/* SIMD path selection: "avx512vnni" (avx512's kernels, AVX2 and AVX-512 alike, summing their byte products with
 * vpdpbusd / vpdpwssd, if the CPU has AVX512_VNNI), "avx512" (the AVX2 kernels, and the multi-column dots of 4 or more columns on AVX-512 F/BW/VL/DQ, if
 * the CPU has it), "avxvnni" (the AVX2 kernels with AVX-VNNI's VEX vpdpbusd / vpdpwssd, if the CPU has AVX-VNNI),
 * "avx2" (AVX2+FMA+F16C) or "scalar"; every path gives the same bits.
 * Default: best available; the env var TERN_SIMD forces one. tern_simd_level: 0 scalar, 1 avx2 or avxvnni,
 * 2 avx512, 3 avx512vnni.
 * tern_simd_set returns 0 on success, -1 if the path is not available on this CPU. */
const char *tern_simd_name(void);
int tern_simd_level(void);
int tern_simd_set(const char *name);

#endif
