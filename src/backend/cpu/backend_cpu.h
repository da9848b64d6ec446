/* backend_cpu.h: the CPU ops the forward pass is made of, and the thread pool they run on.
 *
 * Shapes: innermost dimension last, row-major. A weight W of GGUF shape ne = (n_in, n_out) is
 * (n_out, n_in) here: n_out rows of n_in elements in its stored block type.
 * Determinism: every output element is computed by exactly one thread with a fixed reduction order,
 * so results are bit-identical for any thread count (and any SIMD path, see quant.h).
 */
#ifndef TERN_BACKEND_CPU_H
#define TERN_BACKEND_CPU_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "quant.h"

/* ---- thread pool ---------------------------------------------------------------------------- */

typedef struct tern_pool tern_pool;
/* n_threads >= 1 workers including the caller (n_threads - 1 pthreads are started). NULL on error. */
tern_pool *tern_pool_new(int n_threads);
void tern_pool_free(tern_pool *p);
int tern_pool_size(const tern_pool *p);
/* Run fn(arg, ith, nth) for ith in [0, nth) on the pool (the caller runs ith = 0) and wait for all. */
void tern_pool_run(tern_pool *p, void (*fn)(void *arg, int ith, int nth), void *arg);
/* Number of cores available to this process. */
int tern_n_cores(void);

/* ---- weights -------------------------------------------------------------------------------- */

/* A 2-D weight in its stored format: (n_out, n_in) in `type`, rows of row_bytes bytes. */
typedef struct {
    const void *data;
    enum tern_type type;
    int64_t n_in, n_out;
    size_t row_bytes;
} tern_weight;

/* ---- ops ------------------------------------------------------------------------------------ */

/* Bytes of scratch cpu_matmul needs to quantize n activation rows of n_in for weight type t. */
size_t cpu_matmul_scratch(enum tern_type t, int64_t n_in, int n);

/* y = x · Wᵀ: x (n, n_in) f32, y (n, n_out) f32. scratch: cpu_matmul_scratch bytes (activations are
 * quantized into W's vec-dot format once, then rows of W are split across the pool). */
void cpu_matmul(tern_pool *p, const tern_weight *w, const float *x, int n, float *y, void *scratch);

/* Several matmuls over one input in one dispatch: y[i] = x · w[i]ᵀ for i < n_w (all w[i] with the
 * same n_in). Weights that share a vec-dot format share one quantization of x; the others get their
 * own (scratch must then hold one quantized copy per distinct format: n_w * cpu_matmul_scratch is
 * always enough). Results are bit-identical to n_w separate cpu_matmul calls. */
void cpu_matmul_n(tern_pool *p, int n_w, const tern_weight *const *w, const float *x, int n, float *const *y,
                  void *scratch);

/* Switch every matmul to the reference arm (1) or back (0): each weight row dequantized to f32 and
 * dotted with the unquantized f32 activations in double. Slow; for comparisons with float64 references.
 * tern_config.matmul_ref (the CLI's TERN_MATMUL_REF=1) sets it at start-up. Not thread-safe against matmuls in
 * flight. */
void cpu_matmul_set_reference(int on);

/* A test's probe of the residual stream (per-layer goldens, STYLE.md item 7): after each residual add of a CPU pass,
 * fn(ud, layer, which, pos, x, rows, width) with which 0 after the attention block's add and 1 after the FFN's, pos
 * the rows' positions and x the stream (rows x width). NULL (the default): none. Process-wide; tests only. */
typedef void (*cpu_probe_fn)(void *ud, int layer, int which, const int32_t *pos, const float *x, int rows, int width);
void cpu_set_probe(cpu_probe_fn fn, void *ud);

/* The reference arm of a Q8_0 KV cache (tests/gpu/gpu_model.c): while on (1), forward_chunk rounds each new K
 * and V row through Q8_0 blocks of 32 (tern_quantize_activation's rule, which the CUDA cache's quantizer
 * follows: d = fp16(amax/127), q = round-half-even(x * 127/amax)) before its f16 store, so the CPU attends
 * over the values a Q8_0 cache holds, to f16 rounding. The f16 cache's bytes per element are unchanged (the
 * CPU has no quantized cache). Not thread-safe against a forward pass in flight. */
void cpu_kv_q8_reference_set(int on);
int cpu_kv_q8_reference(void);
/* x (n, a multiple of 32) = dequantize(quantize_q8_0(x)) in place, block by block (the arm above). */
void cpu_round_q8_0(float *x, int64_t n);

/* Kernel-path counters: matmul dispatches (cpu_matmul_n calls) by the path their rows take, and
 * cpu_attention calls; relaxed atomics, one increment per dispatch. With TERN_TRACE=1 in the
 * environment, cpu_trace_print(stderr) runs at exit (registered on the first count), printing
 * "trace: decode_row=N decode_rows4=N prefill_multi=N matmul_ref=N attention=N". */
enum cpu_trace_path {
    CPU_TRACE_DECODE_ROW,     /* n == 1, tern_vec_dot per row (default decode) */
    CPU_TRACE_PREFILL_MULTI,  /* n > 1, tern_vec_dot_multi over up to MM_COLS columns */
    CPU_TRACE_MATMUL_REF,     /* the reference arm (TERN_MATMUL_REF=1), any n */
    CPU_TRACE_ATTENTION,      /* cpu_attention calls */
    CPU_TRACE_N
};
uint64_t cpu_trace_count(enum cpu_trace_path k);
void cpu_trace_print(FILE *f);

/* Embedding lookup: out (n, n_in) f32 = dequantized rows ids[0..n) of w. ids must be < n_out. */
void cpu_get_rows(const tern_weight *w, const int32_t *ids, int n, float *out);

/* RMSNorm (Zhang & Sennrich 2019): y = x / sqrt(mean(x²) + eps) * g. x, y (n, dim); g (dim). */
void cpu_rmsnorm(const float *x, const float *g, float eps, int n, int dim, float *y);

/* RoPE (RoFormer eq. 34) on adjacent pairs (x[2i], x[2i+1]) as llama.cpp's LLAMA rope type:
 * x (n, n_heads, head_dim) f32 in place, rotating the first n_rot dims of each head by
 * angle pos[t] * freq[i], freq (n_rot/2) precomputed by cpu_rope_freqs. */
void cpu_rope(float *x, int n, int n_heads, int head_dim, int n_rot, const int32_t *pos, const float *freq);
/* As cpu_rope; neox != 0 rotates the pairs (x[i], x[i + n_rot/2]) instead (llama.cpp's NEOX type, HF's order). */
void cpu_rope_ex(float *x, int n, int n_heads, int head_dim, int n_rot, const int32_t *pos, const float *freq, int neox);
/* freq[i] = base^(-2i/n_rot) / scale / (factors ? factors[i] : 1), i < n_rot/2, computed in double.
 * scale: linear RoPE scaling factor (1 = none); factors: llama3 rope_freqs.weight or NULL. */
void cpu_rope_freqs(float *freq, int n_rot, double base, double scale, const float *factors);
/* YaRN's table (factor > 1, orig_ctx the context it was trained at; the ramp's beta_fast bf and beta_slow bs,
 * llama.cpp's defaults 32 and 1) and the rotation with its magnitude scale (cos, sin times mscale; cpu_rope_ex is
 * mscale 1). */
void cpu_rope_freqs_yarn(float *freq, int n_rot, double base, double factor, int orig_ctx, float bf, float bs,
                         const float *factors);
/* The attention temperature of a query at position pos (Llama 4, Mistral 3; llama.cpp's inp_attn_scale, its types):
 * 1 + f ln(floor(pos / floor_scale) + 1). */
static inline float cpu_attn_temp(int32_t pos, float f, int floor_scale) {
    return (float)(log((double)floorf((float)pos / (float)floor_scale) + 1.0) * (double)f + 1.0);
}
void cpu_rope_ms(float *x, int n, int n_heads, int head_dim, int n_rot, const int32_t *pos, const float *freq, int neox,
                 float mscale);
/* The model's RoPE frequency table `table` (tern_layer.rope_table: 0 the global layers', with the file's scaling:
 * linear, llama3 factors, YaRN, LongRoPE's long or short factors by whether n_ctx runs past the original context; 1
 * the sliding-window layers', their own base unscaled, as llama.cpp's swa rope) into freq (n_rot / 2), and the cos/sin
 * factor that goes with it (rope_mscale for table 0, else 1): what every backend rotates with. */
struct tern_model;
float cpu_rope_table(const struct tern_model *m, int n_ctx, int table, float *freq);

/* Causal GQA attention over an f16 KV cache.
 * q (n, n_head, hd) f32; kc, vc (n_ctx, n_head_kv, hd) f16 with positions [0, pos0 + n) filled;
 * token t at position pos0 + t attends to positions [0, pos0 + t]. out (n, n_head, hd) f32.
 * scale = 1/sqrt(hd). Query head h uses KV head h / (n_head / n_head_kv). hd <= 512.
 * scratch: pool size * (pos0 + n) floats. Numerics: see backend_cpu.c (llama.cpp's CPU rounding). */
void cpu_attention(tern_pool *p, const float *q, const uint16_t *kc, const uint16_t *vc, int n, int pos0, int n_head,
                   int n_head_kv, int hd, float scale, float *out, float *scratch);
/* cpu_attention for tokens at any positions of a paged cache: token t (position pos[t]) attends to logical rows
 * j in (pos[t] - window, pos[t]] (window <= 0: [0, pos[t]]), row j at pool row bt[bt_off[t] + (j >> lbs)] *
 * 2^lbs + (j mod 2^lbs) of kc, vc (pool rows, n_head_kv, hd) f16; bt NULL: pool row j. scratch: pool size *
 * scratch_len floats, scratch_len >= the most keys a token attends to. The same reduction order as cpu_attention:
 * a token's output does not depend on the other tokens of the call. */
void cpu_attention_paged(tern_pool *p, const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                         const int32_t *bt, const int32_t *bt_off, int lbs, int window, int n_head, int n_head_kv, int hd,
                         float scale, float *out, float *scratch, int scratch_len);
/* f32 -> f16 (round to nearest even), n elements; the KV-cache write. */
void cpu_f32_to_f16(const float *x, uint16_t *y, int64_t n);

/* SwiGLU (Shazeer 2020): g = silu(g) * u elementwise, n elements. */
void cpu_swiglu(float *g, const float *u, int64_t n);
/* GeGLU: g = gelu_tanh(g) * u elementwise, n elements. */
void cpu_geglu(float *g, const float *u, int64_t n);
/* y += x, n elements. */
void cpu_add(float *y, const float *x, int64_t n);

#endif
