/* att.cuh: the pieces of the decode attention that its kernels share (attention.cu v2 and its combine, v5;
 * attention_tc.cu v7): which keys a token sees, how many splits it takes, a warp's weight in its CTA's merge, and the
 * O GEMM's input written beside out. One definition, so every kernel agrees with the combine on a token's splits. */
#ifndef TERN_CUDA_ATT_CUH
#define TERN_CUDA_ATT_CUH
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "cuda/tcu.h"
#include "cuda/x16.cuh"

/* The O GEMM's input, written beside out by the kernel that writes out (element e of (n, n_head * hd)): the dp4a
 * GEMV's x16 format (plane > 0: x16_put, a warp's 32 values one block), or with plane 0 the f16 order's input, f16
 * bits at tcu_hm_pos(e) (tcu_attention_decode_h16: tcu_f32_to_f16's bytes with the layout on). */
static __device__ __forceinline__ void att_put(float v, int lane, int64_t e, void *xq, size_t plane) {
    if (plane) x16_put(v, lane, e / 32, xq, plane);
    else ((uint16_t *)xq)[tcu_hm_pos(e)] = __half_as_ushort(__float2half_rn(v));
}

/* The first key a query at position p attends to: p - win + 1 under a sliding window of win keys (win > 0, the
 * recipe's tern_layer.window, as cpu_attention_paged), else 0. */
static __device__ __forceinline__ int att_first(int p, int win) { return win > 0 && p - win + 1 > 0 ? p - win + 1 : 0; }

/* Splits a token at n_kv keys uses out of the grid's SZ: rps > 0, one per rps keys (at least 1, at most SZ);
 * rps = 0, all SZ. A function of the token's position only, so a token gets the same bits in any call. */
static __device__ __forceinline__ int att_active_splits(int n_kv, int SZ, int rps) {
    if (rps <= 0) return SZ;
    const int s = (n_kv + rps - 1) / rps;
    return s < 1 ? 1 : s > SZ ? SZ : s;
}

/* The factor of a warp's accumulator for a head whose warp max is mg: e^(mg - M), divided by L when the CTA is
 * the token's only split (S = 1: the output itself); 0 for an empty warp. L >= 1 whenever row 0 is visible
 * (pos[t] >= 0); a negative pos gives zeros, not NaN. */
static __device__ __forceinline__ float att_warp_factor(float mg, float M, float L, int S) {
    return mg == -INFINITY || L == 0.0f ? 0.0f : S > 1 ? expf(mg - M) : expf(mg - M) / L;
}

#endif
