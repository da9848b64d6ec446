/* backend_cuda.h: what the rest of tern asks of the CUDA backend besides backend.h's interface (the backend
 * itself: tern_backend_cuda_new, backend_cuda.c and exec.c over the kernels of src/backend/cuda/, tcu.h). In a
 * build without CUDA (make without CUDA=1) these are stubs: tern_cuda_available() is 0 and the backend refuses with
 * "built without CUDA".
 *
 * Numerics (recorded in docs/ledger.md): residual stream, norms, RoPE, attention and softmax in f32; passes of up
 * to 16 tokens run the GEMV (Q4_0/Q4_1/Q8_0/Q4_K/Q6_K weights: activations in 16-bit block fixed point, exact
 * integer dots per block by dp4a, f32 accumulation; the other types f32), every token's bits those of its own
 * one-token pass; longer passes (a sequence's prefill chunk) f16 GEMMs on weight tiles dequantized per chunk with
 * f32 accumulation (cuBLASLt); KV cache f16 or Q8_0 in pool rows reached through block tables. */
#ifndef TERN_BACKEND_CUDA_H
#define TERN_BACKEND_CUDA_H
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "tern.h"

/* 1 if the CUDA runtime finds a usable device (driver present, >= 1 GPU); the answer is cached. Loads
 * the driver lazily (the CUDA runtime is linked statically and opens libcuda on first use), so a
 * CUDA build starts and runs on a machine with no driver: then 0. Always 0 in a CPU build. */
int tern_cuda_available(void);
/* Number of CUDA devices (0 when none or a CPU build). */
int tern_cuda_device_count(void);
/* Name of device 0 ("NVIDIA H200"), or "" when none. */
const char *tern_cuda_device_name(void);
/* The GEMVs' float order of the last CUDA engine made in this process (0 today's, 1 the chunk order, 2 the f16 order);
 * 0 before one and in a CPU build. */
int tern_cuda_gemv_order(void);

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

/* Tests: 0 keeps an f16-order engine's matrices in rows instead of converting them to the tiled layout (wrank_tile in
 * backend_cuda.c), for a model none of whose engines converted it yet; read when an engine is made. */
void cuda_hm_tiling_set(int on);
/* TERN_TIMELINE (timeline.c): 1 while recording; the kernel records CUPTI holds, written now (an engine's free calls it
 * after synchronising its devices); no-op when off. */
int cuda_timeline_on(void);
void cuda_timeline_flush(void);

/* Tests: 1 when an f16-order engine converted (some of) m's matrices to the tiled layout. */
int cuda_model_tiled(const tern_model *m);

/* The device sampler's top_k limit (src/backend/cuda/sample.cu): temp > 0 and 0 < top_k <= this (top_k < n_vocab)
 * run the whole chain on the device and copy back one id. */
#define TERN_CUDA_SAMPLE_KMAX 1024

#endif
