/* dev/cuda/gemv_f32_v1_v3.cu: variants 1 and 3 of the f32 decode GEMV (src/backend/cuda/gemv.cu at b07f3a7, switch
 * TERN_CUDA_GEMV_VARIANT=1|3, with TERN_CUDA_GEMV_ROWS / _UNROLL for R and U). NOT BUILT; it needs gemv.cu's dot8,
 * dequant8 and cta_sum_out of b07f3a7. docs/ledger.md "decode GEMV on the H200: four variants, 157.8 -> 213.0 tok/s":
 * v1 (a warp per R rows) 157.8 tok/s; v3 (rows staged into shared memory) LOST to v2 (1226/1033 vs 1237/1172 GB/s
 * Q4_0, 211.7 vs 215.6 tok/s end to end). v2 with R = 4, U = 2 (the sweep's best of 9) is the product kernel. */

    const int n16 = (int)((size_t)nrow * stride / 16);
    const uint4 *src = (const uint4 *)(w + (size_t)r0 * stride);
    int i = threadIdx.x;
    for (; i + 7 * GEMV_T < n16; i += 8 * GEMV_T) {
        uint4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = __ldcs(src + i + k * GEMV_T); /* read once: evict-first */
#pragma unroll
        for (int k = 0; k < 8; k++) sm[i + k * GEMV_T] = v[k];
    }
    for (; i < n16; i += GEMV_T) sm[i] = __ldcs(src + i);
    __syncthreads();
    const uint8_t *smb = (const uint8_t *)sm;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    for (int e0 = threadIdx.x * 8; e0 < n_in; e0 += GEMV_T * 8) {
        const float4 xa = __ldg((const float4 *)(x + e0)), xb = __ldg((const float4 *)(x + e0 + 4));
        const float xv[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
        for (int r = 0; r < R; r++)
            if (r < nrow) acc[r] = __fadd_rn(acc[r], dot8<T>(smb + (size_t)r * stride, e0, xv));
    }
    cta_sum_out<GEMV_WARPS, R>(acc, part, nrow, y + r0, 1); /* part[] is rewritten by the next group */
    }
}

/* Variant 1, kept for A/B (TERN_CUDA_GEMV_VARIANT=1): a warp per R rows, lanes over 256-element steps. */
template <int T, int R, int U>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_warp_k(const uint8_t *__restrict__ w, size_t stride, int n_in, int n_out, const float *__restrict__ x,
       float *__restrict__ y) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r0 = (blockIdx.x * GEMV_WARPS + warp) * R;
    if (r0 >= n_out) return;
    const uint8_t *rows[R];
#pragma unroll
    for (int r = 0; r < R; r++) rows[r] = w + (size_t)(r0 + r < n_out ? r0 + r : n_out - 1) * stride;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    int e0 = lane * 8;
    /* U steps of 256 elements at once: every load of the U*R row pieces is issued before the first FMA
     * (more bytes in flight per warp); the FMAs still run in element order, so U does not change bits */
    for (; e0 + 256 * (U - 1) < n_in; e0 += 256 * U) {
        float wv[U][R][8], xv[U][8];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const float4 xa = __ldg((const float4 *)(x + e0 + 256 * u)), xb = __ldg((const float4 *)(x + e0 + 256 * u + 4));
            xv[u][0] = xa.x; xv[u][1] = xa.y; xv[u][2] = xa.z; xv[u][3] = xa.w;
            xv[u][4] = xb.x; xv[u][5] = xb.y; xv[u][6] = xb.z; xv[u][7] = xb.w;
#pragma unroll
            for (int r = 0; r < R; r++) dequant8<T>(rows[r], e0 + 256 * u, wv[u][r]);
        }
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int i = 0; i < 8; i++) acc[r] = fmaf(wv[u][r][i], xv[u][i], acc[r]);
    }
    for (; e0 < n_in; e0 += 256) {
        const float4 xa = __ldg((const float4 *)(x + e0)), xb = __ldg((const float4 *)(x + e0 + 4));
        const float xv[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
        for (int r = 0; r < R; r++) {
            float wv[8];
            dequant8<T>(rows[r], e0, wv);
#pragma unroll
            for (int i = 0; i < 8; i++) acc[r] = fmaf(wv[i], xv[i], acc[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        float s = acc[r];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0 && r0 + r < n_out) y[r0 + r] = s;
    }
}

            ((uintptr_t)wb & 15) == 0) {                                                                     \
            const int64_t g3n = (n_out + RR - 1) / RR, g3c = (int64_t)gemv_sms() * 8;                       \
            const unsigned g3 = (unsigned)(g3n < g3c ? g3n : g3c);                                           \
            gemv_smem_k<T, RR><<<g3, GEMV_T, RR * stride, st>>>(wb, stride, (int)n_in, (int)n_out, x, y);    \
            return;                                                                                          \
        }                                                                                                    \
        if (variant == 1) {                                                                                  \
            const unsigned g1 = (unsigned)((n_out + GEMV_WARPS * RR - 1) / (GEMV_WARPS * RR));               \
            gemv_warp_k<T, RR, UU><<<g1, GEMV_T, 0, st>>>(wb, stride, (int)n_in, (int)n_out, x, y);          \
            return;                                                                                          \
        }                                                                                                    \
        static int per_sm = 0;                                                                               \
        if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_k<T, RR, UU>, GEMV_T, 0) != \
                           cudaSuccess)                                                                      \
            per_sm = 4;                                                                                      \
        const int64_t groups = (n_out + RR - 1) / RR, cap = (int64_t)gemv_sms() * (per_sm > 0 ? per_sm : 4); \
        const unsigned grid = (unsigned)(groups < cap ? groups : cap);                                       \
        gemv_k<T, RR, UU><<<grid, GEMV_T, 0, st>>>(wb, stride, (int)n_in, (int)n_out, x, y);                 \
        return;                                                                                              \
    }

template <int T>
static void gemv_launch(const void *w, size_t stride, int64_t n_in, int64_t n_out, const float *x, float *y,
                        cudaStream_t st) {
    int R, U;
    gemv_rule(n_out, &R, &U);
    static int variant = -1;
    if (variant < 0) {
        variant = env_choice("TERN_CUDA_GEMV_VARIANT", 1, 2, 3);
        if (!variant) variant = 2; /* variant 3 lost to 2 (docs/ledger.md) */
    }
    const uint8_t *wb = (const uint8_t *)w;
    GEMV_CASE(1, 1) GEMV_CASE(1, 2) GEMV_CASE(1, 4)
