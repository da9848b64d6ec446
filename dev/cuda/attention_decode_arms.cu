/* dev/cuda/attention_decode_arms.cu: the decode attention's arms, moved out of src/backend/cuda/attention.cu (at b07f3a7).
 * NOT BUILT, and not compilable on its own: it needs attention.cu's helpers of b07f3a7 (att_raw, att_transpose_sum,
 * att_pf, att_cta_ml / att_cta_out, att_q8w, att_launch_s, ...); to re-run an arm, check out b07f3a7 and set its switch.
 * The arms (docs/ledger.md keeps their numbers):
 *   - attention_split_kernel's TR = 0 body, an xor tree per score (TERN_CUDA_ATT_TR=0): "decode attention: one
 *     transposing reduction for a batch's scores (WON: +33% at depth 32768)";
 *   - RP = 1, one token's RoPE + KV-cache write inside the kernel (tcu_attention_decode_x16_rope, TERN_CUDA_ATT_ROPE=1):
 *     "one token's RoPE + KV-cache write inside the decode attention kernel: neutral ..., off";
 *   - PF = 1 over the f16 cache (TERN_CUDA_ATT_PF=2): "decode attention: K/V prefetch ring ... off for f16";
 *   - query heads a CTA (TERN_CUDA_ATT_QH) and 8-warp CTAs (TERN_CUDA_ATT_WARPS=8): "decode attention: query heads a
 *     CTA (QH 1, 2 vs 4) and 8-warp CTAs at tg128: measured, not adopted", "decode attention CTA shape: 8 warps ...
 *     LOST";
 *   - every split of the grid whatever the depth (TERN_CUDA_ATT_ADAPT=0): "the split count follows the token's depth
 *     (WON ...)"; TERN_CUDA_ATT_SPLITS (the grid's count forced): "decode attention splits at depth 32768: 16 stays";
 *   - v5's arms: 12 and 16 warps (TERN_CUDA_ATT_Q8W_WARPS), 16-row batches (TERN_CUDA_ATT_Q8W_B=4), q.k on a quantized
 *     q (QQ_, TERN_CUDA_ATT_Q8W_QQ=1: "+8% at depth 32768, -2..-5% at tg128; kept as an arm"), and v2 over the Q8_0
 *     cache as the A/B arm of v5 (TERN_CUDA_ATT_Q8W=0; v2 stays in the product as v5's fallback where a device
 *     refuses v5's shared memory). */

/* ---- attention_split_kernel with every arm (TR, PF on f16, RP) ---- */
}

/* RP = 1 (tcu_attention_decode_x16_rope, one token over an f16 cache): q is the q|k|v GEMV's un-rotated q,
 * and the token's own K/V row (position pos[0]) is taken from k and v (un-rotated k, v: (n_head_kv, hd) f32),
 * rotated and rounded to f16 in registers, instead of being read from the cache; the split holding that row
 * (the last, query-head chunk 0) also stores it into the cache (kc, vc: the caches being read, at row pos[0]).
 * The same operations as rope_kv_k (rope.cuh) followed by the cache read: the same bits as tcu_rope_kv then
 * the RP = 0 kernel, which is also why a verify chunk (n > 1) may keep the two kernels. */
typedef struct {
    const float *k, *v, *freq;
    const float2 *cs; /* NULL, or tcu_rope_table's (cos, sin) of the token's position */
    int n_rot;
    uint16_t *kc, *vc;
} att_rope;

template <int EPL, int QH, int Q8, int TR, int PF = 0, int RP = 0>
__global__ void __launch_bounds__(ATT_MAX_WARPS * 32)
attention_split_kernel(const float *__restrict__ q, const void *__restrict__ kc, const void *__restrict__ vc,
                       const uint16_t *__restrict__ ks, const uint16_t *__restrict__ vs,
                       int n, const int32_t *__restrict__ pos, int n_head, int n_head_kv, float scale,
                       float *__restrict__ out, int n_chunk, float *__restrict__ ws, void *__restrict__ xq,
                       size_t plane, int rps, att_rope rp) {
    constexpr int HD = EPL * 32, U = Q8 && EPL == 4 ? TERN_ATT_Q8_U : att_batch<EPL>::U;
    static_assert(!RP || (!Q8 && !PF && EPL % 2 == 0), "RP: the f16 register path, whole pairs a lane");
    __shared__ float sm_m[ATT_MAX_WARPS][QH], sm_l[ATT_MAX_WARPS][QH], sm_ML[2][QH];
    __shared__ float red[ATT_RED_SLOTS][QH][HD];
    pdl_trigger();
    pdl_wait();

    const int t = n - 1 - (int)blockIdx.x; /* longest rows first */
    const int hk = (int)blockIdx.y / n_chunk, c = (int)blockIdx.y % n_chunk;
    const int G = n_head / n_head_kv;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, NW = blockDim.x >> 5;
    /* SZ: the grid's splits (the workspace's stride); S: this token's (att_active_splits). A CTA past S has
     * no rows (CTA-uniform exit, after its PDL wait) */
    const int n_kv = pos[t] + 1, SZ = (int)gridDim.z, S = att_active_splits(n_kv, SZ, rps), z = (int)blockIdx.z;
    if (z >= S) return;
    /* this CTA's rows (v2 split z of S; the whole range when S = 1) */
    const int r0 = (int)((int64_t)n_kv * z / S), r1 = (int)((int64_t)n_kv * (z + 1) / S);
    const size_t stride = (size_t)n_head_kv * HD; /* elements between cache rows */
    const uint16_t *kb = (const uint16_t *)kc + (size_t)hk * HD + lane * EPL;
    const uint16_t *vb = (const uint16_t *)vc + (size_t)hk * HD + lane * EPL;
    /* Q8: int8 rows of the same element stride, and the lane's block scale (stride / 32 scales a row) */
    const int8_t *kb8 = (const int8_t *)kc + (size_t)hk * HD + lane * EPL;
    const int8_t *vb8 = (const int8_t *)vc + (size_t)hk * HD + lane * EPL;
    const size_t sstride = stride / 32, soff = ((size_t)hk * HD + lane * EPL) / 32;

    float qr[QH][EPL], acc[QH][EPL], m[QH], l[QH];
#pragma unroll
    for (int g = 0; g < QH; g++) {
        const int gi = c * QH + g; /* index within the group */
        const float *qp = q + ((size_t)t * n_head + (size_t)hk * G + gi) * HD + lane * EPL;
#pragma unroll
        for (int e = 0; e < EPL; e++) {
            qr[g][e] = gi < G ? qp[e] : 0.0f;
            acc[g][e] = 0.0f;
        }
        m[g] = -INFINITY;
        l[g] = 0.0f;
    }
    /* RP: the lane's pairs (d, d + 1), d = lane * EPL + 2i, rotated by the angle pos[t] * freq[d / 2] (rope_kv_k's
     * operations), in q and in the token's K row; that row and its V row rounded to f16 as the cache holds them */
    const int pnew = RP ? pos[t] : -1;
    att_raw<RP ? EPL : 2> kn, vn;
    if constexpr (RP) {
        const float *kp = rp.k + ((size_t)t * n_head_kv + hk) * HD + lane * EPL;
        const float *vp = rp.v + ((size_t)t * n_head_kv + hk) * HD + lane * EPL;
#pragma unroll
        for (int e = 0; e < EPL; e += 2) {
            const int i = (lane * EPL + e) >> 1;
            float co = 1.0f, sn = 0.0f;
            const int rot = i < rp.n_rot / 2;
            if (rot) {
                if (rp.cs) {
                    const float2 cv = rp.cs[(size_t)t * (rp.n_rot / 2) + i];
                    co = cv.x;
                    sn = cv.y;
                } else {
                    rope_cs(pnew, rp.freq[i], &co, &sn);
                }
            }
            if (rot) {
#pragma unroll
                for (int g = 0; g < QH; g++) {
                    const float qa = rope_first(qr[g][e], qr[g][e + 1], co, sn);
                    const float qb = rope_second(qr[g][e], qr[g][e + 1], co, sn);
                    qr[g][e] = qa;
                    qr[g][e + 1] = qb;
                }
            }
            kn.w[e / 2] = vn.w[e / 2] = 0u;
            if (z == S - 1) { /* the split holding row pnew (the others never read it) */
                float a = kp[e], b = kp[e + 1];
                if (rot) {
                    const float a2 = rope_first(a, b, co, sn), b2 = rope_second(a, b, co, sn);
                    a = a2;
                    b = b2;
                }
                kn.w[e / 2] = (uint32_t)__half_as_ushort(__float2half_rn(a)) |
                              ((uint32_t)__half_as_ushort(__float2half_rn(b)) << 16);
                vn.w[e / 2] = (uint32_t)__half_as_ushort(__float2half_rn(vp[e])) |
                              ((uint32_t)__half_as_ushort(__float2half_rn(vp[e + 1])) << 16);
            }
        }
        /* the cache row: stored by one CTA of the (token, KV head), the split holding the row (the last). kc / vc
         * are read through const __restrict__ pointers while rp.kc / rp.vc write the same buffers: safe because no
         * CTA of this launch reads row pnew from the cache (the split holding it uses kn / vn), which any change
         * to the row loads must keep */
        if (c == 0 && z == S - 1 && w == 0) {
            uint32_t *kd = (uint32_t *)(rp.kc + (size_t)pnew * stride + (size_t)hk * HD + lane * EPL);
            uint32_t *vd = (uint32_t *)(rp.vc + (size_t)pnew * stride + (size_t)hk * HD + lane * EPL);
#pragma unroll
            for (int i = 0; i < EPL / 2; i++) {
                kd[i] = kn.w[i];
                vd[i] = vn.w[i];
            }
        }
    }
    (void)kn; (void)vn; (void)pnew;

    /* TR = 1: the scores of a batch (QHP heads x U rows, padded to a power of two) are summed by one
     * transposing reduction, after which lane l holds score (head g_l, row u_l) and computes that score's
     * exp alone; per-lane running max mL (of its head) and partial sum lL (of its slot) */
    constexpr int QHP = att_pow2<QH>::v, P = QHP * U, LP = att_log2<P>::v, REP = 32 / P;
    static_assert(!TR || P <= 32, "the transposing reduction takes at most 32 scores a batch (QHP * U)");
    const int slot = lane >> (5 - LP), gl = slot / U, ul = slot % U;
    float mL = -INFINITY, lL = 0.0f;
    (void)mL; (void)lL; (void)gl; (void)ul;

    /* PF: stage st of this warp's ring: K [U][32][KB], V [U][32][KB], then (Q8) K and V scale words [U][32] */
    extern __shared__ __align__(16) uint8_t att_sm[];
    constexpr int KB = att_pf<EPL, Q8>::KB;
    uint8_t *ring = att_sm + (size_t)w * att_pf<EPL, Q8>::WARP;
    auto pfs = [&](int st, int part, int u, int bytes) -> uint8_t * { /* part 0 K, 1 V, 2 K scale, 3 V scale */
        uint8_t *base = ring + (size_t)st * U * 32 * att_pf<EPL, Q8>::ROW;
        return base + (part < 2 ? part * U * 32 * KB + (u * 32 + lane) * bytes
                                : 2 * U * 32 * KB + (part - 2) * U * 32 * 4 + (u * 32 + lane) * 4);
    };
    auto issue = [&](int jb, int st) {
        if constexpr (PF) {
#pragma unroll
            for (int u = 0; u < U; u++)
                if (jb + u < r1) {
                    const size_t row = (size_t)(jb + u);
                    if constexpr (Q8) {
                        att_cp<KB>(pfs(st, 0, u, KB), kb8 + row * stride);
                        att_cp<KB>(pfs(st, 1, u, KB), vb8 + row * stride);
                        att_cp<4>(pfs(st, 2, u, 4), (const void *)((uintptr_t)(ks + row * sstride + soff) & ~(uintptr_t)3));
                        att_cp<4>(pfs(st, 3, u, 4), (const void *)((uintptr_t)(vs + row * sstride + soff) & ~(uintptr_t)3));
                    } else {
                        att_cp<KB>(pfs(st, 0, u, KB), kb + row * stride);
                        att_cp<KB>(pfs(st, 1, u, KB), vb + row * stride);
                    }
                }
            att_commit();
        }
    };
    int st = 0;
    if constexpr (PF) {
        if (r0 + w * U < r1) issue(r0 + w * U, 0);
    }
    for (int j0 = r0 + w * U; j0 < r1; j0 += NW * U, st ^= 1) { /* warp-uniform: row j0 is visible */
        typename att_kv<EPL, Q8>::raw kr[U], vr[U];
        if constexpr (PF) {
            if (j0 + NW * U < r1) {
                issue(j0 + NW * U, st ^ 1);
                att_wait<1>();
            } else {
                att_wait<0>();
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (PF && j0 + u < r1) {
                if constexpr (PF) att_sload<EPL>(kr[u], vr[u], pfs(st, 0, u, KB), pfs(st, 1, u, KB), pfs(st, 2, u, 4),
                                                 pfs(st, 3, u, 4), (int)(((size_t)(j0 + u) * sstride + soff) & 1));
            } else if (j0 + u < r1) {
                if constexpr (Q8) {
                    att_load<EPL>(kr[u], kb8 + (size_t)(j0 + u) * stride, ks + (size_t)(j0 + u) * sstride + soff);
                    att_load<EPL>(vr[u], vb8 + (size_t)(j0 + u) * stride, vs + (size_t)(j0 + u) * sstride + soff);
                } else if (RP && j0 + u == pnew) { /* warp-uniform */
                    if constexpr (RP) {
                        kr[u] = kn;
                        vr[u] = vn;
                    }
                } else {
                    att_load<EPL>(kr[u], kb + (size_t)(j0 + u) * stride);
                    att_load<EPL>(vr[u], vb + (size_t)(j0 + u) * stride);
                }
            } else {
                att_zero<EPL>(kr[u]);
                att_zero<EPL>(vr[u]);
            }
        }
        if constexpr (TR) {
            float pv[P];
#pragma unroll
            for (int g = 0; g < QHP; g++)
#pragma unroll
                for (int u = 0; u < U; u++) {
                    float d = 0.0f;
                    if (g < QH) {
#pragma unroll
                        for (int e = 0; e < EPL; e++) d = fmaf(qr[g < QH ? g : 0][e], att_elem_u<EPL>(kr[u], e), d);
                    }
                    pv[g * U + u] = att_row_scale<EPL>(kr[u], d); /* Q8_0: the lane's block scale, once */
                }
            const float dsum = att_transpose_sum<P>(pv, lane);
            const float sc = gl < QH && j0 + ul < r1 ? dsum * scale : -INFINITY;
            float mx = sc;
#pragma unroll
            for (int o = REP; o < U * REP; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            mx = fmaxf(mL, mx);
            /* mx is finite for a real head (row j0 is visible); the guard keeps exp(-inf - -inf) away */
            const float corr = mL == -INFINITY || mx == -INFINITY ? 0.0f : expf(mL - mx);
            const float p = sc == -INFINITY ? 0.0f : expf(sc - mx);
            lL = lL * corr + p;
            mL = mx;
#pragma unroll
            for (int g = 0; g < QH; g++) {
                const float cg = __shfl_sync(0xffffffffu, corr, g * U * REP);
#pragma unroll
                for (int e = 0; e < EPL; e++) acc[g][e] *= cg;
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const float pg = att_row_scale<EPL>(vr[u], __shfl_sync(0xffffffffu, p, (g * U + u) * REP));
#pragma unroll
                    for (int e = 0; e < EPL; e++) acc[g][e] = fmaf(pg, att_elem_u<EPL>(vr[u], e), acc[g][e]);
                }
            }
        } else {
            float s[QH][U];
#pragma unroll
            for (int u = 0; u < U; u++) {
#pragma unroll
                for (int g = 0; g < QH; g++) {
                    float d = 0.0f;
#pragma unroll
                    for (int e = 0; e < EPL; e++) d = fmaf(qr[g][e], att_elem<EPL>(kr[u], e), d);
                    d = att_warp_sum(d) * scale;
                    s[g][u] = j0 + u < r1 ? d : -INFINITY;
                }
            }
#pragma unroll
            for (int g = 0; g < QH; g++) {
                float mx = m[g];
#pragma unroll
                for (int u = 0; u < U; u++) mx = fmaxf(mx, s[g][u]);
                /* mx >= s[g][0], finite; the guard keeps exp(-inf - -inf) impossible even for inf inputs */
                const float corr = m[g] == -INFINITY || mx == -INFINITY ? 0.0f : expf(m[g] - mx);
                l[g] *= corr;
#pragma unroll
                for (int e = 0; e < EPL; e++) acc[g][e] *= corr;
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const float p = s[g][u] == -INFINITY ? 0.0f : expf(s[g][u] - mx);
                    l[g] += p;
#pragma unroll
                    for (int e = 0; e < EPL; e++) acc[g][e] = fmaf(p, att_elem<EPL>(vr[u], e), acc[g][e]);
                }
                m[g] = mx;
            }
        }
    }

    if constexpr (TR) { /* each head's (m, l) from its lanes: l summed over its U distinct slots */
        float ls = lL;
#pragma unroll
        for (int o = REP; o < U * REP; o <<= 1) ls += __shfl_xor_sync(0xffffffffu, ls, o);
#pragma unroll
        for (int g = 0; g < QH; g++) {
            m[g] = __shfl_sync(0xffffffffu, mL, g * U * REP);
            l[g] = __shfl_sync(0xffffffffu, ls, g * U * REP);
        }
    }
    /* combine the warps' (m, l, acc) in a fixed order */
    const int h0 = hk * G + c * QH, n_real = G - c * QH < QH ? G - c * QH : QH; /* the CTA's first head, real heads */
    att_cta_ml<QH, ATT_MAX_WARPS>(sm_m, sm_l, sm_ML, m, l, NW, w, lane, ws, n, n_head, SZ, HD, t, h0, n_real, S, z);
#pragma unroll
    for (int g = 0; g < QH; g++) {
        const float f = att_warp_factor(m[g], sm_ML[0][g], sm_ML[1][g], S);
#pragma unroll
        for (int e = 0; e < EPL; e++) acc[g][e] *= f;
    }
    /* fold warps [8r, 8r+8) into warps [0, 8), highest r first */
    for (int r = NW / ATT_RED_SLOTS - 1; r >= 1; r--) {
        if (w >= r * ATT_RED_SLOTS && w < (r + 1) * ATT_RED_SLOTS) {
#pragma unroll
            for (int g = 0; g < QH; g++)
#pragma unroll
                for (int e = 0; e < EPL; e++) red[w - r * ATT_RED_SLOTS][g][lane * EPL + e] = acc[g][e];
        }
        __syncthreads();
        if (w < ATT_RED_SLOTS) {
#pragma unroll
            for (int g = 0; g < QH; g++)
#pragma unroll
                for (int e = 0; e < EPL; e++) acc[g][e] += red[w][g][lane * EPL + e];
        }
        __syncthreads();
    }
    if (w < ATT_RED_SLOTS) {
#pragma unroll
        for (int g = 0; g < QH; g++)
#pragma unroll
            for (int e = 0; e < EPL; e++) red[w][g][lane * EPL + e] = acc[g][e];
    }
    __syncthreads();
    att_cta_out<ATT_RED_SLOTS, QH, HD>(red, out, ws, xq, plane, n_head, SZ, t, h0, n_real, S, z, lane);
}

/* ---- v5 with its warp, batch and quantized-q arms ---- */
/* ---- v5: the Q8_0-cache decode kernel with 16-byte lane slices ------------------------------------
 * v2's transposing kernel over a Q8_0 cache gives a lane EPL = hd/32 int8 of every row (4 bytes at hd 128),
 * so a row costs a lane 4 memory instructions (K, V, two scale words; 8 with the ring) for 8 bytes, and ncu
 * put that kernel at 75% of L1/TEX throughput with DRAM at 20% (docs/ledger.md, 2026-11-30). Here a lane
 * owns 16 consecutive int8 of one row (lane = r * SL + s: slice s of SL = hd/16 a row, row r of the RW =
 * 32/SL rows one warp-wide load covers), so one 16-byte copy a lane moves RW rows of K for the warp, and the
 * lane's 16 elements lie in one 32-element block: one scale a lane a row. A batch is B such loads (BR = B*RW
 * rows), B = SL / QHP (at most 4), so the SL lanes of a row hold B x QHP partial dots that one transposing
 * butterfly over those SL lanes turns into one score a lane (REP lanes a score when B x QHP < SL): lane
 * (r, s) ends with the score of row j0 + b*RW + r and head g, b*QHP + g = s / REP. Softmax as v2's TR path
 * (per-lane running max of its head over the warp, its slot's partial sum), p and the max's correction
 * reach the V FMAs by broadcast shuffles; the correction multiply is skipped when every real head's factor
 * is exactly 1 (x * 1.0f == x: the same bits as always doing it). int8 -> f32 by PRMT + FADD (exact:
 * 2^23 + (b + 128) as a float, minus 2^23 + 128). K/V and the scale words reach shared memory through a
 * per-warp NS-stage cp.async ring (rows past the CTA's last are zero-filled), each lane reading back only
 * what it copied (no barrier). At the end the RW row groups of a warp are summed by xor shuffles (lanes of
 * one orbit get the same bits: IEEE addition commutes), then the NW warps in order w = 0..NW-1. 8 warps a
 * CTA: q and the accumulators take 2 x QH x 16 registers a lane (128 at QH 4), so __launch_bounds__(256, 1)
 * lets a lane have up to 255. The same splits, workspace and combine as v2: a token's bits do not depend on
 * the call (the verify property). TERN_CUDA_ATT_Q8W=0 runs v2 instead (the A/B arm; other bits).
 * Measured (H200, Llama-3-8B shape 32/8 heads hd 128, bench/gpu/att-q8w-a7ea0ef/): one launch at pos 32767 with
 * 16 splits 50.3 us against v2's 85.6 in gpu_attention's harness (ncu: 41.0 us against 76.3), pos 8191 24.2 vs
 * 35.0; end to end tg64 at depth 32768 228.2 -> 309.5 tok/s, 8192 359.2 -> 413.1, tg128 490.5 -> 504.1 (Q4_0
 * weights, Q8_0 cache, interleaved). Now issue-bound, not L1-bound: ncu 0.60 warps issued a cycle a scheduler
 * (2 warps a scheduler), DRAM 37%, ~656 SASS instructions an 8-row batch of which ~360 on the FP32 pipe (the
 * q.k and p.v FMAs for 4 heads, the int8 conversions) (bench/gpu/att-q8w-ncu-1a79245/). The next lever is the
 * tensor cores (q.k as an int8 mma on a quantized q, p.v as an f16 mma), not more bytes in flight. */
/* Ring stages a warp. 2..8 measured the same kernel time at depth 32768 and 8192 (48-51 us, 23-25 us in
 * gpu_attention's harness) and 6, 8 lost 1-4% end to end (bench/gpu/att-q8w-ns-e18ab91/; binaries of e18ab91
 * had the switch TERN_CUDA_ATT_Q8W_NS; rebuild with -DTERN_ATT_Q8W_NS=N to re-run): not bytes-in-flight-bound. */
#ifndef TERN_ATT_Q8W_NS
#define TERN_ATT_Q8W_NS 3
#endif
#define ATT_Q8W_WARPS 8

template <int HD, int QH, int NS_ = TERN_ATT_Q8W_NS, int NW_ = ATT_Q8W_WARPS, int B_ = 0> struct att_q8w {
    static constexpr int SL = HD / 16, RW = 32 / SL, QHP = att_pow2<QH>::v;
    /* warp-wide loads a batch: B_, else SL / QHP (at most 4), so the butterfly leaves one score a lane */
    static constexpr int B = B_ ? B_ : SL / QHP > 4 ? 4 : SL / QHP < 1 ? 1 : SL / QHP;
    /* P scores a row group; a lane ends with NV of them (P > SL), or one held by REP lanes (P < SL) */
    static constexpr int P = B * QHP, NV = P > SL ? P / SL : 1, REP = P < SL ? SL / P : 1, BR = B * RW, NS = NS_;
    static constexpr int O0 = REP * QHP / NV; /* xor offsets O0 .. 16 join the lanes holding one head's scores */
    static constexpr int KOFF = 0, VOFF = B * 32 * 16, SOFF = 2 * B * 32 * 16; /* a stage: K, V, scale words */
    static constexpr int STAGE = B * 32 * 40;
    static constexpr size_t WARP = (size_t)NS * STAGE, SMEM = (size_t)NW_ * WARP;
    static_assert(SL * RW == 32 && QHP % NV == 0, "a lane's NV scores are distinct heads of one warp-wide load");
};

/* cp.async of N bytes with zero fill when !ok (src-size 0: nothing is read; src must still be a valid address). */
template <int N> __device__ __forceinline__ void att_cpz(void *dst, const void *src, bool ok) {
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    if constexpr (N == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(N), "r"(ok ? N : 0)
                     : "memory");
}

/* int8 byte e of w as f32, exactly, without I2F: PRMT puts (byte ^ 0x80) = value + 128 under the exponent of
 * 2^23, one FADD takes 2^23 + 128 away. (float)(int8_t)byte for every byte value. */
__device__ __forceinline__ float att_i8f(uint32_t wx, int e) { /* wx = w ^ 0x80808080 */
    return __fsub_rn(__uint_as_float(__byte_perm(wx, 0x4Bu, 0x4650u | (uint32_t)e)), 8388736.0f);
}
__device__ __forceinline__ void att_i8f16(const uint4 &x, float (&f)[16]) {
    const uint32_t w[4] = {x.x ^ 0x80808080u, x.y ^ 0x80808080u, x.z ^ 0x80808080u, x.w ^ 0x80808080u};
#pragma unroll
    for (int e = 0; e < 16; e++) f[e] = att_i8f(w[e / 4], e % 4);
}

/* The transposing sum of att_transpose_sum within aligned groups of SL lanes: P <= SL values a lane leave in
 * v[0], in every lane, the group's sum of value index (lane % SL) / (SL / P); P > SL leave NV = P / SL sums
 * in v[0..NV-1], of value indices (lane % SL) * NV + k. */
template <int P, int SL> __device__ __forceinline__ void att_tsum_group(float (&v)[P], int lane) {
    att_tlevel<P, SL / 2>::run(v, lane);
#pragma unroll
    for (int o = SL / P / 2; o > 0; o >>= 1) v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
}

template <int HD, int QH, int NS_, int NW_, int B_, int QQ_>
__global__ void __launch_bounds__(NW_ * 32, 1)
attention_q8w_kernel(const float *__restrict__ q, const void *__restrict__ kc, const void *__restrict__ vc,
                     const uint16_t *__restrict__ ks, const uint16_t *__restrict__ vs, int n,
                     const int32_t *__restrict__ pos, int n_head, int n_head_kv, float scale, float *__restrict__ out,
                     int n_chunk, float *__restrict__ ws, void *__restrict__ xq, size_t plane, int rps, att_rope rp) {
    (void)rp; /* att_kernel_fn's shape; no RoPE form of v5 */
    typedef att_q8w<HD, QH, NS_, NW_, B_> C;
    constexpr int SL = C::SL, RW = C::RW, QHP = C::QHP, B = C::B, P = C::P, REP = C::REP, BR = C::BR, NS = C::NS;
    constexpr int NV = C::NV, O0 = C::O0;
    constexpr int NW = NW_;
    __shared__ float sm_m[NW][QH], sm_l[NW][QH], sm_ML[2][QH];
    __shared__ __align__(16) float red[NW][QH][HD];
    extern __shared__ __align__(16) uint8_t att_sm[];
    pdl_trigger();
    pdl_wait();

    const int t = n - 1 - (int)blockIdx.x; /* longest rows first */
    const int hk = (int)blockIdx.y / n_chunk, c = (int)blockIdx.y % n_chunk;
    const int G = n_head / n_head_kv;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, r = lane / SL, s = lane % SL;
    const int n_kv = pos[t] + 1, SZ = (int)gridDim.z, S = att_active_splits(n_kv, SZ, rps), z = (int)blockIdx.z;
    if (z >= S) return;
    const int r0 = (int)((int64_t)n_kv * z / S), r1 = (int)((int64_t)n_kv * (z + 1) / S);
    const size_t stride = (size_t)n_head_kv * HD, sstride = stride / 32; /* sstride is even (HD >= 64) */
    const int8_t *kb = (const int8_t *)kc + (size_t)hk * HD + s * 16;
    const int8_t *vb = (const int8_t *)vc + (size_t)hk * HD + s * 16;
    const size_t soff = (size_t)hk * (HD / 32) + s / 2; /* the lane's block in a scale row */
    const int hs = (int)(soff & 1);                     /* its half of the aligned scale word */
    const uint16_t *ksw = ks + (soff & ~(size_t)1), *vsw = vs + (soff & ~(size_t)1);

    /* q: f32 (qr), or QQ_ (an arm) int8 per lane slice and head, qi * qd (qd = amax/127, round half to even) */
    float qr[QQ_ ? 1 : QH][16], acc[QH][16], qd[QQ_ ? QH : 1];
    int qi[QQ_ ? QH : 1][4];
#pragma unroll
    for (int g = 0; g < QH; g++) {
        const int gi = c * QH + g;
        const float4 *qp = (const float4 *)(q + ((size_t)t * n_head + (size_t)hk * G + gi) * HD + s * 16);
        if constexpr (QQ_) {
            float qf[16];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float4 x = gi < G ? qp[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                qf[4 * i] = x.x; qf[4 * i + 1] = x.y; qf[4 * i + 2] = x.z; qf[4 * i + 3] = x.w;
            }
            float a = 0.0f;
#pragma unroll
            for (int e = 0; e < 16; e++) a = fmaxf(a, fabsf(qf[e]));
            const float id = a != 0.0f ? __fdiv_rn(127.0f, a) : 0.0f;
            qd[g] = __fdiv_rn(a, 127.0f);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                uint32_t wq = 0;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int v = (int)fminf(fmaxf(rintf(__fmul_rn(qf[4 * i + j], id)), -127.0f), 127.0f);
                    wq |= (uint32_t)(v & 0xff) << (8 * j);
                }
                qi[g][i] = (int)wq;
            }
        } else {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float4 x = gi < G ? qp[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                qr[g][4 * i] = x.x; qr[g][4 * i + 1] = x.y; qr[g][4 * i + 2] = x.z; qr[g][4 * i + 3] = x.w;
            }
        }
#pragma unroll
        for (int e = 0; e < 16; e++) acc[g][e] = 0.0f;
    }
    /* this lane's scores after the butterfly: index (s / REP) * NV + k, i.e. warp-load bl, head gl + k, row
     * j0 + bl*RW + r (QHP % NV == 0: the NV are heads of one load) */
    const int il = (s / REP) * NV, bl = il / QHP, gl = il % QHP;
    float mL[NV], lL[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) mL[k] = -INFINITY, lL[k] = 0.0f;

    uint8_t *ring = att_sm + (size_t)w * C::WARP;
    auto issue = [&](int jb, int st) { /* batch at row jb (< r1) into stage st, as one commit group */
        uint8_t *sb = ring + (size_t)st * C::STAGE;
#pragma unroll
        for (int b = 0; b < B; b++) {
            const int j = jb + b * RW + r;
            const bool ok = j < r1;
            const size_t jr = (size_t)(ok ? j : jb);
            att_cpz<16>(sb + C::KOFF + (b * 32 + lane) * 16, kb + jr * stride, ok);
            att_cpz<16>(sb + C::VOFF + (b * 32 + lane) * 16, vb + jr * stride, ok);
            att_cpz<4>(sb + C::SOFF + (b * 32 + lane) * 8, ksw + jr * sstride, ok);
            att_cpz<4>(sb + C::SOFF + (b * 32 + lane) * 8 + 4, vsw + jr * sstride, ok);
        }
        att_commit();
    };
#pragma unroll
    for (int i = 0; i < NS - 1; i++) { /* the prologue: NS - 1 batches in flight (empty groups past the end) */
        const int jb = r0 + (w + i * NW) * BR;
        if (jb < r1) issue(jb, i);
        else att_commit();
    }
    int st = 0;
    for (int j0 = r0 + w * BR; j0 < r1; j0 += NW * BR) { /* warp-uniform: row j0 is visible */
        {
            const int jn = j0 + (NS - 1) * NW * BR;
            const int sn = st == 0 ? NS - 1 : st - 1; /* (st + NS - 1) % NS: the stage read last iteration */
            if (jn < r1) issue(jn, sn);
            else att_commit();
        }
        att_wait<NS - 1>();
        const uint8_t *sb = ring + (size_t)st * C::STAGE;
        st = st + 1 == NS ? 0 : st + 1;
        float pv[P], dv[B];
#pragma unroll
        for (int b = 0; b < B; b++) {
            const uint4 kw = *(const uint4 *)(sb + C::KOFF + (b * 32 + lane) * 16);
            const uint2 sw = *(const uint2 *)(sb + C::SOFF + (b * 32 + lane) * 8);
            const float dk = __half2float(__ushort_as_half((unsigned short)(sw.x >> (16 * hs))));
            dv[b] = __half2float(__ushort_as_half((unsigned short)(sw.y >> (16 * hs))));
            if constexpr (QQ_) { /* an exact int32 dot of 16 int8 pairs, then the two scales */
                const int kx[4] = {(int)kw.x, (int)kw.y, (int)kw.z, (int)kw.w};
#pragma unroll
                for (int g = 0; g < QHP; g++) {
                    float d = 0.0f;
                    if (g < QH) {
                        int di = 0;
#pragma unroll
                        for (int i = 0; i < 4; i++) di = __dp4a(qi[g < QH ? g : 0][i], kx[i], di);
                        d = __fmul_rn((float)di, qd[g < QH ? g : 0]);
                    }
                    pv[b * QHP + g] = d * dk;
                }
            } else {
                float kf[16];
                att_i8f16(kw, kf);
#pragma unroll
                for (int g = 0; g < QHP; g++) {
                    float d = 0.0f;
                    if (g < QH) {
#pragma unroll
                        for (int e = 0; e < 16; e++) d = fmaf(qr[g < QH ? g : 0][e], kf[e], d);
                    }
                    pv[b * QHP + g] = d * dk; /* the block scale once a row a lane */
                }
            }
        }
        att_tsum_group<P, SL>(pv, lane);
        float p[NV], corr[NV];
        bool any = false;
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const float sc = gl + k < QH && j0 + bl * RW + r < r1 ? pv[k] * scale : -INFINITY;
            float mx = sc;
#pragma unroll
            for (int o = O0; o < 32; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            mx = fmaxf(mL[k], mx);
            /* mx is finite for a real head (row j0 is visible); the guard keeps exp(-inf - -inf) away */
            corr[k] = mL[k] == -INFINITY || mx == -INFINITY ? 0.0f : expf(mL[k] - mx);
            p[k] = sc == -INFINITY ? 0.0f : expf(sc - mx);
            lL[k] = lL[k] * corr[k] + p[k];
            mL[k] = mx;
            any |= gl + k < QH && corr[k] != 1.0f;
        }
        if (__any_sync(0xffffffffu, any)) {
#pragma unroll
            for (int g = 0; g < QH; g++) {
                const float cg = __shfl_sync(0xffffffffu, corr[g % NV], (g / NV) * REP);
#pragma unroll
                for (int e = 0; e < 16; e++) acc[g][e] *= cg;
            }
        }
#pragma unroll
        for (int b = 0; b < B; b++) {
            const uint4 vw = *(const uint4 *)(sb + C::VOFF + (b * 32 + lane) * 16);
            float vf[16];
            att_i8f16(vw, vf);
#pragma unroll
            for (int g = 0; g < QH; g++) {
                const float pg = __shfl_sync(0xffffffffu, p[g % NV], r * SL + ((b * QHP + g) / NV) * REP) * dv[b];
#pragma unroll
                for (int e = 0; e < 16; e++) acc[g][e] = fmaf(pg, vf[e], acc[g][e]);
            }
        }
    }
    att_wait<0>();

    /* each head's (m, l) from its lanes (l over its distinct slots), and the warp's rows summed */
    float m[QH], l[QH];
    {
        float ls[NV];
#pragma unroll
        for (int k = 0; k < NV; k++) {
            ls[k] = lL[k];
#pragma unroll
            for (int o = O0; o < 32; o <<= 1) ls[k] += __shfl_xor_sync(0xffffffffu, ls[k], o);
        }
#pragma unroll
        for (int g = 0; g < QH; g++) {
            m[g] = __shfl_sync(0xffffffffu, mL[g % NV], (g / NV) * REP);
            l[g] = __shfl_sync(0xffffffffu, ls[g % NV], (g / NV) * REP);
        }
    }
#pragma unroll
    for (int o = SL; o < 32; o <<= 1)
#pragma unroll
        for (int g = 0; g < QH; g++)
#pragma unroll
            for (int e = 0; e < 16; e++) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], o);
    const int h0 = hk * G + c * QH, n_real = G - c * QH < QH ? G - c * QH : QH; /* the CTA's first head, real heads */
    att_cta_ml<QH, NW>(sm_m, sm_l, sm_ML, m, l, NW, w, lane, ws, n, n_head, SZ, HD, t, h0, n_real, S, z);
#pragma unroll
    for (int g = 0; g < QH; g++) {
        const float f = att_warp_factor(m[g], sm_ML[0][g], sm_ML[1][g], S);
        if (r == 0) {
            float4 *dst = (float4 *)&red[w][g][s * 16];
#pragma unroll
            for (int i = 0; i < 4; i++)
                dst[i] = make_float4(acc[g][4 * i] * f, acc[g][4 * i + 1] * f, acc[g][4 * i + 2] * f, acc[g][4 * i + 3] * f);
        }
    }
    __syncthreads();
    att_cta_out<NW, QH, HD>(red, out, ws, xq, plane, n_head, SZ, t, h0, n_real, S, z, lane);
}

/* v2's merge: block per (token, head), thread per element; partials in split order. SZ: the grid's splits

/* ---- the launchers' switches ---- */
/* ---- the chooser and the public launcher ---------------------------------------------------------- */

/* Query heads per CTA for v1 (0: not supported, use ref). Chunks of a group are balanced
 * (G = 5 -> 3 + 2, G = 8 -> 4 + 4). Unmeasured: one chunk per KV head when G <= 4 reads K/V once. */
/* Query heads a decode CTA: tcu_attention_set_qh's (1..4, a sweep arm: another grid and score-reduction
 * tree, so other bits) or 0, the rule: as many of the group as fit ATT_MAX_QH, in equal chunks. */
static int g_att_qh = 0;
extern "C" void tcu_attention_set_qh(int qh) { g_att_qh = qh >= 1 && qh <= ATT_MAX_QH ? qh : 0; }
static int att_choose_qh(int n_head, int n_head_kv, int hd) {
    if (n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv) return 0;
    if (hd <= 0 || hd % 32 || hd > 256) return 0;
    const int G = n_head / n_head_kv, cap = g_att_qh ? g_att_qh : ATT_MAX_QH, n_chunk = (G + cap - 1) / cap;
    return (G + n_chunk - 1) / n_chunk;
}

/* Keys a split of the decode attention (att_active_splits): 256 by default, 0 = every split the grid has
 * (the A/B arm: the split count fixed by the context, not the depth). */
static int g_att_rps = 256;
extern "C" void tcu_attention_set_rows_per_split(int rps) { g_att_rps = rps > 0 ? rps : 0; }
/* Warps of a decode CTA: ATT_DECODE_WARPS (16) by default, 8 as a sweep arm (a multiple of ATT_RED_SLOTS;
 * changes the warps' combine and so the bits, the same for every n <= TCU_MULTI_MAX). */
static int g_att_dec_warps = ATT_DECODE_WARPS;
extern "C" void tcu_attention_set_decode_warps(int nw) { g_att_dec_warps = nw == 8 ? 8 : ATT_DECODE_WARPS; }

typedef void (*att_kernel_fn)(const float *, const void *, const void *, const uint16_t *, const uint16_t *, int,
                              const int32_t *, int, int, float, float *, int, float *, void *, size_t, int, att_rope);
/* rp: the RP = 1 kernels' argument (tcu_attention_decode_x16_rope); NULL: none (unused by RP = 0) */
static void att_launch_s(att_kernel_fn kf, size_t smem, dim3 grid, dim3 block, cudaStream_t st, const float *q,
                         const void *kc, const void *vc, const uint16_t *ks, const uint16_t *vs, int n,
                         const int32_t *pos, int n_head, int n_head_kv, float scale, float *out, int n_chunk, float *ws,
                         void *xq, size_t plane, const att_rope *rp = NULL) {
    att_rope r0 = {NULL, NULL, NULL, NULL, 0, NULL, NULL};
    PDL_LAUNCH(kf, grid, block, smem, st, q, kc, vc, ks, vs, n, pos, n_head, n_head_kv, scale, out, n_chunk, ws, xq,
               plane, g_att_rps, rp ? *rp : r0);
}
static void att_launch(att_kernel_fn kf, dim3 grid, dim3 block, cudaStream_t st, const float *q, const void *kc,
                       const void *vc, const uint16_t *ks, const uint16_t *vs, int n, const int32_t *pos, int n_head,
                       int n_head_kv, float scale, float *out, int n_chunk, float *ws, void *xq, size_t plane) {
    att_launch_s(kf, 0, grid, block, st, q, kc, vc, ks, vs, n, pos, n_head, n_head_kv, scale, out, n_chunk, ws, xq, plane);
}

/* v1/v2's score reduction: 1 = transposing (att_transpose_sum, the default), 0 = an xor tree per score,
 * every lane computing every exp (the A/B arm). Changes bits (the dot products' summation order), not
 * the contract: every token of a call of <= TCU_MULTI_MAX still gets its own decode step's bits. */
static int g_att_tr = 1;
extern "C" void tcu_attention_set_transpose(int on) { g_att_tr = on != 0; }

/* The > 48 KiB dynamic shared-memory opt-in of kernel kf for `bytes`, asked once per device (bit d of *ok_dev or
 * *no_dev, the caller's statics for kf): 1 when the current device granted it. */
static int att_smem_optin(att_kernel_fn kf, size_t bytes, unsigned *ok_dev, unsigned *no_dev) {
    int dev = 0;
    cudaGetDevice(&dev);
    if (dev < 0 || dev >= 32) return 0;
    if (!((__atomic_load_n(ok_dev, __ATOMIC_RELAXED) | __atomic_load_n(no_dev, __ATOMIC_RELAXED)) >> dev & 1u)) {
        if (cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) == cudaSuccess)
            __atomic_fetch_or(ok_dev, 1u << dev, __ATOMIC_RELAXED);
        else {
            (void)cudaGetLastError(); /* no error left pending for the caller's check */
            __atomic_fetch_or(no_dev, 1u << dev, __ATOMIC_RELAXED);
        }
    }
    return (int)(__atomic_load_n(ok_dev, __ATOMIC_RELAXED) >> dev & 1u);
}

/* v5 (attention_q8w_kernel) for Q8_0-cache decode calls: 1 (default) where it applies, 0 v2 (the arm).
 * TERN_CUDA_ATT_Q8W through the backend. */
static int g_att_q8w = 1;
extern "C" void tcu_attention_set_q8_wide(int on) { g_att_q8w = on != 0; }

/* Warps of a v5 CTA at hd 128 with 4 query heads a CTA (Llama-3's shape): 8 (default) or 12 (a sweep arm:
 * __launch_bounds__ caps a lane at 168 registers, 167 used, no spills; 16 would cap it at 128 and spill 376
 * bytes; other bits: another warp combine). Measured (bench/gpu/att-q8w-ncu-1a79245/, att-q8w-b4-ffd41e2/,
 * interleaved, Q4_0 weights, Q8_0 cache, 4 rounds): tg64 at depth 32768 +1.3..+3.2%, at 8192 -1.8..+1.0%,
 * tg128 -2.2..-3.3%: not adopted (the grid and block are fixed per graph, so a depth rule needs two graphs). */
static int g_att_q8w_nw = ATT_Q8W_WARPS;
extern "C" void tcu_attention_set_q8_wide_warps(int nw) { g_att_q8w_nw = nw == 12 || nw == 16 ? nw : ATT_Q8W_WARPS; }
/* q.k on a quantized q at that shape (an arm, other numerics): q rounded to int8 per lane slice (16 elements)
 * and head, d = amax/127, the dot an exact int32 by dp4a on the raw int8 K, times both scales: no K
 * conversion, 64 FFMA + 48 conversion ops an 8-row batch a lane fewer, and q's 64 registers down to 20
 * (so 12 and 16 warps, TERN_CUDA_ATT_Q8W_WARPS, fit; 16 only with it). llama.cpp's vec kernels quantize Q the
 * same way for a quantized K (ggml fattn-vec: Q_q8_1 = type_K != F16). TERN_CUDA_ATT_Q8W_QQ=1. Measured
 * (bench/gpu/att-q8w-qq-c331888/): worst rel L2 vs float64 3.6e-3; ncu 33.3 us at depth 32768 with 16 warps
 * (default 41.0); tg64 there +4.5 / +7.6 / +8.0% at 8 / 12 / 16 warps, depth 8192 0 / 0 / -1.4%, tg128 -2.4 /
 * -4.0 / -5.1%: not the default (docs/ledger.md). */
static int g_att_q8w_qq = 0;
extern "C" void tcu_attention_set_q8_wide_qq(int on) { g_att_q8w_qq = on != 0; }
/* Warp-wide loads a v5 batch at that shape: 2 (default: 8 rows, one score a lane) or 4 (a sweep arm: 16 rows,
 * two scores a lane, the batch's fixed cost spread over twice the rows; 229 registers; other bits: another
 * butterfly). Measured (bench/gpu/att-q8w-b4-ffd41e2/): ncu 38.05 us against 41.02 at depth 32768 (predicted
 * ~-20%: the softmax part doubles with the two scores); tg64 at depth 32768 +0.2 / +2.4%, 8192 -1.0 / +0.5%,
 * tg128 -1.6 / -1.0%: not adopted. */
static int g_att_q8w_b = 2;
extern "C" void tcu_attention_set_q8_wide_batch(int b) { g_att_q8w_b = b == 4 ? 4 : 2; }

/* v5 launches issued by this host thread (tcu_attention_q8w_count: the trace counts what ran, per GPU thread). */
static thread_local uint64_t g_att_q8w_launches;
extern "C" uint64_t tcu_attention_q8w_count(void) { return g_att_q8w_launches; }

/* v5 for (hd, qh, stages) over a Q8_0 cache, with the ring's opt-in granted on this device: 1 if it launched. */
template <int HD, int QH, int NS, int NW = ATT_Q8W_WARPS, int BW = 0, int QQ = 0>
static int att_launch_q8w_ns(dim3 grid, cudaStream_t st, const float *q, const void *kc, const void *vc,
                             const uint16_t *ks, const uint16_t *vs, int n, const int32_t *pos, int n_head,
                             int n_head_kv, float scale, float *out, int n_chunk, float *ws, void *xq, size_t plane) {
    static unsigned ok_dev, no_dev;
    att_kernel_fn kf = attention_q8w_kernel<HD, QH, NS, NW, BW, QQ>;
    if (!att_smem_optin(kf, att_q8w<HD, QH, NS, NW, BW>::SMEM, &ok_dev, &no_dev)) return 0; /* v2 runs */
    att_launch_s(kf, att_q8w<HD, QH, NS, NW, BW>::SMEM, grid, dim3(NW * 32), st, q, kc, vc, ks, vs, n, pos, n_head,
                 n_head_kv, scale, out, n_chunk, ws, xq, plane);
    g_att_q8w_launches++;
    return 1;
}
#define ATT_Q8W_ARGS grid, st, q, kc, vc, ks, vs, n, pos, n_head, n_head_kv, scale, out, n_chunk, ws, xq, plane
template <int HD, int QH>
static int att_launch_q8w_t(dim3 grid, cudaStream_t st, const float *q, const void *kc, const void *vc,
                            const uint16_t *ks, const uint16_t *vs, int n, const int32_t *pos, int n_head,
                            int n_head_kv, float scale, float *out, int n_chunk, float *ws, void *xq, size_t plane) {
    if constexpr (HD == 128 && QH == 4) {
        if (g_att_q8w_qq) {
            if (g_att_q8w_nw == 12) return att_launch_q8w_ns<HD, QH, TERN_ATT_Q8W_NS, 12, 0, 1>(ATT_Q8W_ARGS);
            if (g_att_q8w_nw == 16) return att_launch_q8w_ns<HD, QH, TERN_ATT_Q8W_NS, 16, 0, 1>(ATT_Q8W_ARGS);
            return att_launch_q8w_ns<HD, QH, TERN_ATT_Q8W_NS, ATT_Q8W_WARPS, 0, 1>(ATT_Q8W_ARGS);
        }
        if (g_att_q8w_nw == 12) return att_launch_q8w_ns<HD, QH, TERN_ATT_Q8W_NS, 12>(ATT_Q8W_ARGS);
        if (g_att_q8w_b == 4) return att_launch_q8w_ns<HD, QH, TERN_ATT_Q8W_NS, ATT_Q8W_WARPS, 4>(ATT_Q8W_ARGS);
    }
    return att_launch_q8w_ns<HD, QH, TERN_ATT_Q8W_NS>(ATT_Q8W_ARGS);
}
#define ATT_Q8W_QH(HD)                                                                                      \
    switch (qh) {                                                                                           \
    case 1: return att_launch_q8w_t<HD, 1>(ATT_Q8W_ARGS);                                                   \
    case 2: return att_launch_q8w_t<HD, 2>(ATT_Q8W_ARGS);                                                   \
    case 3: return att_launch_q8w_t<HD, 3>(ATT_Q8W_ARGS);                                                   \
    default: return att_launch_q8w_t<HD, 4>(ATT_Q8W_ARGS);                                                  \
    }
static int att_launch_q8w(int hd, int qh, dim3 grid, cudaStream_t st, const float *q, const void *kc, const void *vc,
                          const uint16_t *ks, const uint16_t *vs, int n, const int32_t *pos, int n_head, int n_head_kv,
                          float scale, float *out, int n_chunk, float *ws, void *xq, size_t plane) {
    switch (hd) {
    case 64: ATT_Q8W_QH(64)
    case 128: ATT_Q8W_QH(128)
    case 256: ATT_Q8W_QH(256)
    }
    return 0;
}

/* The chooser's rule for the Q8_0 cache: v5 when switched on, with the transposing reduction (TERN_CUDA_ATT_TR=0
 * keeps v2's xor-tree arm), for the shapes v2 takes over a Q8_0 cache (hd 64/128/256, a supported head ratio). */
static int att_q8w_rule(int n_head, int n_head_kv, int hd) {
    return g_att_q8w && g_att_tr && (hd == 64 || hd == 128 || hd == 256) && att_choose_qh(n_head, n_head_kv, hd) > 0;
}
extern "C" int tcu_attention_q8_wide(int n_head, int n_head_kv, int hd) { return att_q8w_rule(n_head, n_head_kv, hd); }

/* The K/V prefetch ring (PF) of the transposing kernel where att_pf::ok: 1 (default) over a Q8_0 cache only,
 * 2 also over an f16 cache, 0 never (TERN_CUDA_ATT_PF); the same bits. Interleaved tg64 (docs/ledger.md):
 * Q8_0 cache +3.7% at depth 32768, +0.5% at 8192; f16 -0.8% / -1.1% (that kernel streams at ~2.75 TB/s
 * there, bound by bytes, and the ring adds shared-memory traffic). */
static int g_att_pf = 1;
extern "C" void tcu_attention_set_prefetch(int mode) { g_att_pf = mode >= 0 && mode <= 2 ? mode : 1; }

/* The transposing kernel (TR = 1) for (E, QH, Q8), with the ring when it applies. */
template <int E, int QH, int Q8>
static void att_launch_tr(dim3 grid, dim3 block, cudaStream_t st, const float *q, const void *kc, const void *vc,
                          const uint16_t *ks, const uint16_t *vs, int n, const int32_t *pos, int n_head, int n_head_kv,
                          float scale, float *out, int n_chunk, float *ws, void *xq, size_t plane) {
    if constexpr (att_pf<E, Q8>::ok) {
        if (g_att_pf == 2 || (g_att_pf == 1 && Q8)) {
            att_kernel_fn kf = attention_split_kernel<E, QH, Q8, 1, 1>;
            /* a device that refuses the opt-in (99 KiB a block on sm_86/sm_89) runs the plain loads, whose
             * bits are the same */
            static unsigned ok_dev, no_dev;
            if (att_smem_optin(kf, ATT_MAX_WARPS * att_pf<E, Q8>::WARP, &ok_dev, &no_dev)) {
                att_launch_s(kf, (size_t)(block.x / 32) * att_pf<E, Q8>::WARP, grid, block, st, q, kc, vc, ks, vs, n,
                             pos, n_head, n_head_kv, scale, out, n_chunk, ws, xq, plane);
                return;
            }
        }
    }
    att_launch(attention_split_kernel<E, QH, Q8, 1, 0>, grid, block, st, q, kc, vc, ks, vs, n, pos, n_head, n_head_kv,
               scale, out, n_chunk, ws, xq, plane);
}

#define ATT_ARGS grid, block, st, q, kc, vc, ks, vs, n, pos, n_head, n_head_kv, scale, out, n_chunk, ws, xq, plane
#define ATT_CASE_QH(E, Q8)                                                                                  \
    case E:                                                                                                 \
        switch (qh * 2 + g_att_tr) {                                                                        \
        case 2: att_launch(attention_split_kernel<E, 1, Q8, 0>, ATT_ARGS); break;                           \
        case 3: att_launch_tr<E, 1, Q8>(ATT_ARGS); break;                                               \
        case 4: att_launch(attention_split_kernel<E, 2, Q8, 0>, ATT_ARGS); break;                           \
        case 5: att_launch_tr<E, 2, Q8>(ATT_ARGS); break;                                               \
        case 6: att_launch(attention_split_kernel<E, 3, Q8, 0>, ATT_ARGS); break;                           \
        case 7: att_launch_tr<E, 3, Q8>(ATT_ARGS); break;                                               \
        case 8: att_launch(attention_split_kernel<E, 4, Q8, 0>, ATT_ARGS); break;                           \
        default: att_launch_tr<E, 4, Q8>(ATT_ARGS); break;                                                  \
        }                                                                                                   \
        break;

/* Prefill chunks (n > TCU_MULTI_MAX) go to the tensor-core kernel (attention_prefill.cu, v3) unless switched
 * off (TERN_CUDA_FLASH=0 through the backend: v1 for every n, the A/B arm). */
static int g_att_flash = 1;
extern "C" void tcu_attention_set_flash(int on) { g_att_flash = on != 0; }

extern "C" size_t tcu_attention_ws_bytes(int n, int n_head, int hd, int splits) {
    return splits > 1 ? sizeof(float) * (size_t)n * n_head * splits * (hd + 2) : 0;
}

/* tcu.h: causal GQA attention, q (n, n_head, hd) f32, kc/vc (n_ctx, n_head_kv, hd) f16, pos (n) on the
 * device, out (n, n_head, hd) f32; online softmax in f32 (Milakov & Gimelshein 2018). The grid depends on
 * n and the head shape only, never on pos (graph capture). v1 for hd a multiple of 32 up to 256 and
 * n_head a multiple of n_head_kv, else the ref kernel. */
/* v1 / v2 for an f16 (ks = NULL) or Q8_0 cache; S splits when ws and n <= TCU_MULTI_MAX. qh != 0. xq != NULL:
 * out is also written in the x16 format of (n, n_head * hd) by the kernel that writes out. */
static void att_split_launch(const float *q, const void *kc, const void *vc, const uint16_t *ks, const uint16_t *vs,
                             int n, const int32_t *pos, int n_head, int n_head_kv, int hd, float scale, float *out,
                             float *ws, int splits, int qh, void *xq, cudaStream_t st) {
    const size_t plane = x16_plane_bytes(n, (int64_t)n_head * hd);
    const int G = n_head / n_head_kv, n_chunk = (G + qh - 1) / qh;
    const int S = ws && splits > 1 && n <= TCU_MULTI_MAX ? (splits < ATT_MAX_SPLITS ? splits : ATT_MAX_SPLITS) : 1;
    const dim3 grid((unsigned)n, (unsigned)(n_head_kv * n_chunk), (unsigned)S);
    /* up to TCU_MULTI_MAX tokens take the decode configuration: a token's keys are split over the same
     * warps and combined in the same order as in a one-token call, so a speculative verify of k tokens
     * gives each token the bits of its own decode step */
    const dim3 block(32 * (n <= TCU_MULTI_MAX ? g_att_dec_warps : ATT_PREFILL_WARPS));
    if (ks && n <= TCU_MULTI_MAX && att_q8w_rule(n_head, n_head_kv, hd) &&
        att_launch_q8w(hd, qh, grid, st, q, kc, vc, ks, vs, n, pos, n_head, n_head_kv, scale, out, n_chunk, ws, xq,
                       plane)) {
    } else if (ks) {
        switch (hd / 32) {
            ATT_CASE_QH(2, 1)
            ATT_CASE_QH(4, 1)
            ATT_CASE_QH(8, 1)
        }
    } else {
        switch (hd / 32) {
            ATT_CASE_QH(1, 0)
            ATT_CASE_QH(2, 0)
            ATT_CASE_QH(3, 0)
            ATT_CASE_QH(4, 0)
            ATT_CASE_QH(5, 0)
            ATT_CASE_QH(6, 0)
            ATT_CASE_QH(7, 0)
            ATT_CASE_QH(8, 0)
        }
    }
    if (S > 1)
        PDL_LAUNCH(attention_combine_kernel, dim3((unsigned)(n * n_head)), dim3(hd < 256 ? hd : 256), 0, st,
                   (const float *)ws, n, n_head, hd, S, out, xq, plane, pos, g_att_rps);
}

/* tcu.h: causal GQA attention, q (n, n_head, hd) f32, kc/vc (n_ctx, n_head_kv, hd) f16, pos (n) on the
 * device, out (n, n_head, hd) f32; online softmax in f32 (Milakov & Gimelshein 2018). The grid depends on
 * n and the head shape only, never on pos (graph capture). v1 for hd a multiple of 32 up to 256 and
 * n_head a multiple of n_head_kv, else the ref kernel. */
extern "C" void tcu_attention_split(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                                    int n_head, int n_head_kv, int hd, float scale, float *out, float *ws,
                                    int splits, cudaStream_t st) {
    if (n <= 0 || n_head <= 0) return;
    if (n > TCU_MULTI_MAX && g_att_flash && tcu_attention_flash_ok(n_head, n_head_kv, hd)) {
        tcu_attention_flash(q, kc, vc, n, pos, n_head, n_head_kv, hd, scale, out, st);
        return;
    }
    const int qh = att_choose_qh(n_head, n_head_kv, hd);
    if (!qh) {
        tcu_attention_ref(q, kc, vc, n, pos, n_head, n_head_kv, hd, scale, out, st);
        return;
    }
    att_split_launch(q, kc, vc, NULL, NULL, n, pos, n_head, n_head_kv, hd, scale, out, ws, splits, qh, NULL, st);
}

/* tcu.h: tcu_attention_split over a Q8_0 cache (int8 planes kq, vq as the f16 layout; f16 scales ks, vs,
 * (n_ctx, n_head_kv * hd / 32)): n <= TCU_MULTI_MAX, hd 64, 128 or 256 (else nothing is launched). */
extern "C" void tcu_attention_split_q8(const float *q, const int8_t *kq, const int8_t *vq, const uint16_t *ks,
                                       const uint16_t *vs, int n, const int32_t *pos, int n_head, int n_head_kv, int hd,
                                       float scale, float *out, float *ws, int splits, cudaStream_t st) {
    if (n <= 0 || n > TCU_MULTI_MAX || n_head <= 0 || (hd != 64 && hd != 128 && hd != 256)) return;
    const int qh = att_choose_qh(n_head, n_head_kv, hd);
    if (!qh) return;
    att_split_launch(q, kq, vq, ks, vs, n, pos, n_head, n_head_kv, hd, scale, out, ws, splits, qh, NULL, st);
}

/* tcu.h: the decode attention (tcu_attention_split, or tcu_attention_split_q8 when ks != NULL) for n <=
 * TCU_MULTI_MAX tokens, with out also written as the dp4a GEMV's x16 activations xq of (n, n_head * hd) by
 * the kernel that writes out (tcu_quantize_x16's bytes: x16_put on the same f32 values). Shapes the fused
 * kernels do not take (the ref kernel's) run the plain call and tcu_quantize_x16. */
extern "C" void tcu_attention_decode_x16(const float *q, const void *kc, const void *vc, const uint16_t *ks,
                                         const uint16_t *vs, int n, const int32_t *pos, int n_head, int n_head_kv,
                                         int hd, float scale, float *out, float *ws, int splits, void *xq,
                                         cudaStream_t st) {
    if (n <= 0 || n > TCU_MULTI_MAX || n_head <= 0) return;
    const int qh = att_choose_qh(n_head, n_head_kv, hd);
    if (ks && (hd != 64 && hd != 128 && hd != 256)) return; /* as tcu_attention_split_q8 */
    if (!qh) {
        if (ks) return;
        tcu_attention_split(q, (const uint16_t *)kc, (const uint16_t *)vc, n, pos, n_head, n_head_kv, hd, scale, out,
                            ws, splits, st);
        tcu_quantize_x16(out, n, (int64_t)n_head * hd, xq, st);
        return;
    }
    att_split_launch(q, kc, vc, ks, vs, n, pos, n_head, n_head_kv, hd, scale, out, ws, splits, qh, xq, st);
}

/* TERN_CUDA_ATT_ROPE=1: tcu_attention_decode_x16_rope runs; 0 (default) it declines and the backend runs
 * tcu_rope_kv and tcu_attention_decode_x16 (the same bits). Off: +0.6% tg128, -0.6..-1.0% tg64 at depth 8192
 * (docs/ledger.md) */
static int g_att_rope = 0;
extern "C" void tcu_attention_set_rope(int on) { g_att_rope = on != 0; }

/* tcu.h: one token's decode attention over an f16 cache with its RoPE and KV-cache write (RP = 1 above). */
extern "C" int tcu_attention_decode_x16_rope(const float *q, const float *k, const float *v, const float *freq,
                                             const float *cs, int n_rot, uint16_t *kc, uint16_t *vc, const int32_t *pos, int n_head,
                                             int n_head_kv, int hd, float scale, float *out, float *ws, int splits,
                                             void *xq, cudaStream_t st) {
    if (!g_att_rope || !g_att_tr || g_att_pf == 2 || !xq || (hd != 64 && hd != 128) || n_rot < 0 || n_rot > hd ||
        n_rot % 2)
        return 0;
    const int qh = att_choose_qh(n_head, n_head_kv, hd);
    if (!qh) return 0;
    const int n = 1, G = n_head / n_head_kv, n_chunk = (G + qh - 1) / qh;
    const size_t plane = x16_plane_bytes(n, (int64_t)n_head * hd);
    const int S = ws && splits > 1 ? (splits < ATT_MAX_SPLITS ? splits : ATT_MAX_SPLITS) : 1;
    const dim3 grid(1u, (unsigned)(n_head_kv * n_chunk), (unsigned)S), block(32 * g_att_dec_warps);
    const att_rope rp = {k, v, freq, (const float2 *)cs, n_rot, kc, vc};
    att_kernel_fn kf = NULL;
    switch ((hd / 32) * 10 + qh) {
    case 21: kf = attention_split_kernel<2, 1, 0, 1, 0, 1>; break;
    case 22: kf = attention_split_kernel<2, 2, 0, 1, 0, 1>; break;
    case 23: kf = attention_split_kernel<2, 3, 0, 1, 0, 1>; break;
    case 24: kf = attention_split_kernel<2, 4, 0, 1, 0, 1>; break;
    case 41: kf = attention_split_kernel<4, 1, 0, 1, 0, 1>; break;
    case 42: kf = attention_split_kernel<4, 2, 0, 1, 0, 1>; break;
    case 43: kf = attention_split_kernel<4, 3, 0, 1, 0, 1>; break;
    case 44: kf = attention_split_kernel<4, 4, 0, 1, 0, 1>; break;
    default: return 0;
    }
    att_launch_s(kf, 0, grid, block, st, q, kc, vc, NULL, NULL, n, pos, n_head, n_head_kv, scale, out, n_chunk, ws, xq,
                 plane, &rp);
    if (S > 1)
        PDL_LAUNCH(attention_combine_kernel, dim3((unsigned)(n * n_head)), dim3(hd < 256 ? hd : 256), 0, st,
                   (const float *)ws, n, n_head, hd, S, out, xq, plane, pos, g_att_rps);
    return 1;
}

extern "C" void tcu_attention(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                              int n_head, int n_head_kv, int hd, float scale, float *out, cudaStream_t st) {
    tcu_attention_split(q, kc, vc, n, pos, n_head, n_head_kv, hd, scale, out, NULL, 1, st);
}
