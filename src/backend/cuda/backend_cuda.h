/* backend_cuda.h: the llama forward pass on an NVIDIA GPU (src/backend/cuda/backend_cuda.c over the kernels of
 * src/backend/cuda/, declared in src/backend/cuda/tcu.h). In a build without CUDA (make without CUDA=1) these are stubs:
 * tern_cuda_available() is 0 and tern_cuda_new() fails with "built without CUDA".
 *
 * Device state: weights uploaded once in their stored block format (each row padded to 16 bytes), an f16
 * KV cache (n_layer, n_ctx, n_head_kv*head_dim), and scratch for one chunk of up to `ubatch` tokens.
 * Numerics (recorded in docs/ledger.md): residual stream, norms, RoPE, attention and softmax in f32;
 * decode GEMV reads f32 activations and accumulates in f32 (Q4_0/Q8_0 weights: activations in 16-bit block
 * fixed point, exact integer dots per block by dp4a, f32 accumulation; Q4_1, Q4_K, Q6_K too; TERN_CUDA_DP4A=0: the f32 GEMV); prefill GEMMs take f16 activations and f16
 * weight tiles (dequantized per chunk) with f32 accumulation (cuBLASLt); KV cache f16 or Q8_0 (kv_q8).
 */
#ifndef TERN_BACKEND_CUDA_H
#define TERN_BACKEND_CUDA_H
#include <stdint.h>

#include "model.h"
#include "tern.h"

typedef struct tern_cuda tern_cuda;

/* 1 if the CUDA runtime finds a usable device (driver present, >= 1 GPU); the answer is cached. Loads
 * the driver lazily (the CUDA runtime is linked statically and opens libcuda on first use), so a
 * CUDA build starts and runs on a machine with no driver: then 0. Always 0 in a CPU build. */
int tern_cuda_available(void);
/* Number of CUDA devices (0 when none or a CPU build). */
int tern_cuda_device_count(void);
/* Name of device 0 ("NVIDIA H200"), or "" when none. */
const char *tern_cuda_device_name(void);

/* Tensor parallelism (Megatron-LM's split, Shoeybi et al. 2019, sec. 3): GPU r of n holds attention heads
 * [r*H/n, (r+1)*H/n) and their KV heads (Q/K/V rows, O columns, the KV cache), FFN columns
 * [r*F/n, (r+1)*F/n) (gate/up rows, down columns) and output-head rows [r*ceil(V/n), ...); the token
 * embedding is replicated (a row lookup; splitting it would add an all-reduce per step). NCCL all-reduces
 * (sum, f32) the attention-output and FFN-down partial sums and all-gathers the logits. */
#define TERN_TP_MAX 8
/* 0 if m splits over n GPUs (1 <= n <= TERN_TP_MAX): heads and KV heads divisible by n, each GPU's slice of
 * the O and down rows whole blocks of their weight type, every GPU at least one vocabulary row; else -1
 * with a one-line reason in why. Pure (no GPU needed; also in a CPU build). */
int tern_tp_check(const tern_model *m, int n, char *why, size_t nwhy);

/* Upload m's weights, allocate the KV cache of n_ctx positions and scratch for ubatch tokens on devices
 * 0..n_tp-1 (n_tp = 1: device 0, no NCCL). Before allocating, prints the memory plan of every GPU
 * (weights, KV cache, scratch against its free memory) to stderr when verbose, and refuses (NULL,
 * tern_last_error) if a GPU's share does not fit. n_tp > 1 loads NCCL (libnccl.so.2) at run time and keeps
 * NVLink multicast off (NCCL_NVLS_ENABLE=0). Errors: no device, fewer than n_tp devices, a model that does
 * not split (tern_tp_check), NCCL missing, a weight type without a GPU kernel, n_in not a multiple of 8,
 * out of device memory. Models with m->gen_rows (in-memory synthetic) are generated chunk by chunk into
 * a pinned staging buffer and uploaded. kv_q8: the KV cache in Q8_0 blocks (GGUF block_q8_0 values, 1.0625
 * bytes an element instead of 2; head dim 64, 128 or 256) instead of f16. */
tern_cuda *tern_cuda_new(const tern_model *m, int n_ctx, int ubatch, int verbose, int n_tp, int kv_q8);
void tern_cuda_free(tern_cuda *g);

/* Run tokens[0..n) (n <= ubatch) at positions pos0.. and append them to the KV cache.
 * logits: NULL, the last row (n_vocab f32) or, with all_logits, every row (n, n_vocab) f32, copied to
 * the host. next: if not NULL, receives the argmax of the last row (computed on the device, lowest id on
 * ties). A single-token call (decode) replays a CUDA graph captured on the first such call, unless
 * TERN_CUDA_GRAPH=0. TERN_CUDA_TIMING=1 measures each call's device time with events (printed at free).
 * Returns 0 or -1 (tern_last_error). */
int tern_cuda_eval(tern_cuda *g, const int32_t *tokens, int n, int pos0, float *logits, int all_logits, int32_t *next);

/* The sampling chain on the device (src/backend/cuda/sample.cu) for temp > 0 and 0 < top_k <= TERN_CUDA_SAMPLE_KMAX
 * (top_k < n_vocab): the decode step copies back one id. pen_ids: the distinct ids the repeat penalty
 * touches (tern_sampler_penalty_ids); u: the host sampler's uniform draw for this call. */
#define TERN_CUDA_SAMPLE_KMAX 1024
typedef struct {
    const int32_t *pen_ids;
    int n_pen;
    float penalty, top_p, min_p, temp;
    int top_k;
    double u;
} tern_cuda_sampling;
/* As tern_cuda_eval, then sample the last row on the device into *next (bit-for-bit the choice of
 * tern_sampler_sample on the same logits and draw, up to CUDA's expf/logf vs the host libm's). */
int tern_cuda_eval_sample(tern_cuda *g, const int32_t *tokens, int n, int pos0, const tern_cuda_sampling *sp,
                          int32_t *next);

/* As tern_cuda_eval with every row's logits computed, returning only each row's argmax: ids (n), lowest
 * id on ties. For n <= 16 every row is bit-identical to a one-token decode step at its position. */
int tern_cuda_eval_argmax(tern_cuda *g, const int32_t *tokens, int n, int pos0, int32_t *ids);

/* Capture now the CUDA graphs of verify passes (tern_cuda_eval_argmax / all-logits evals) of 2..max_n
 * tokens that a first pass of each size would capture (speculative decoding: so the decode phase does
 * not pay for captures; vLLM captures its decode graphs at start-up the same way). One GPU, the GEMV path
 * (not --verify fast); after tern_cuda_set_layers / tern_cuda_set_verify_fast. Returns the number
 * captured (0 where nothing applies) and the time taken in *ms (may be NULL), -1 on a CUDA error. */
int tern_cuda_prepare_verify(tern_cuda *g, int max_n, double *ms);

/* Run only the first n_layer layers (then the output head): the self-speculative drafter. Before the
 * first eval only (the decode graph is captured with it). */
void tern_cuda_set_layers(tern_cuda *g, int n_layer);

/* Fast verify (tern run --verify fast): chunks of 2..16 tokens go through the GEMM path (f16 tensor-core
 * GEMMs) instead of the multi-row GEMV twin, so their rows are no longer bit-identical to one-token decode
 * steps. Before the first eval only. TERN_TRACE=1 prints the dispatch counts (GEMV 1-row / multi-row by
 * kernel, GEMM, attention) at free. */
void tern_cuda_set_verify_fast(tern_cuda *g, int on);

/* Bytes the plan counted on GPU 0: weights, KV cache, scratch (for reports). */
void tern_cuda_plan(const tern_cuda *g, uint64_t *weights, uint64_t *kv, uint64_t *scratch);

#endif
