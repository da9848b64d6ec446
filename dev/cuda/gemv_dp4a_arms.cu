/* dev/cuda/gemv_dp4a_arms.cu: the dp4a GEMV's lost arms, moved out of src/backend/cuda/gemv_dp4a.cu (at b07f3a7, where
 * each ran behind an environment switch). NOT BUILT by the product Makefile, and it does not compile on its own:
 * it needs the helpers of src/backend/cuda/gemv_dp4a.cu at b07f3a7 (load_blk, blk_dot, pipe_load, cta_sum_out,
 * multi_dot, the TMA ring of gemv_q8_tma_k, ...); to re-run an arm, check out b07f3a7 and set its switch.
 * Every arm here is a docs/ledger.md entry (the ledger keeps both rounds of its numbers):
 *   - gemv_q8_k: the cta family without software pipelining (TERN_CUDA_DP4A_PIPE=0), "software-pipelined dp4a
 *     GEMV: small win (+1.6%)";
 *   - gemv_q8_pipe_k's sub-CTA form S > 1 (TERN_CUDA_DP4A_SUB=2/4, cta_sum_sub): "the dp4a pipe GEMV in a quarter
 *     of the CTAs ... LOST (-0.6% Q4_0, -5.7% Q4_K)";
 *   - the q|k|v GEMV's RoPE + KV-cache epilogue (EPI = 1, tcu_gemv_dp4a_rope, TERN_CUDA_ROPE_EPI=1): "RoPE +
 *     KV-cache write in the q|k|v GEMV's epilogue: LOST" and "... reading the (cos, sin) table: still LOST";
 *   - the tma kernel's RMSNorm prologue (NM = 1, tcu_gemv_dp4a_norm, TERN_CUDA_NORM_PRO=1): "the FFN RMSNorm as
 *     the prologue of the tma gate|up GEMV: LOST (-6% tg128)";
 *   - gemv_q8_smem_k (TERN_CUDA_DP4A_SMEM=1): "decode on the H200: integer GEMV (dp4a)", shared-memory staging LOST;
 *   - gemv_q8_async_k (TERN_CUDA_DP4A_KERNEL=async): "decode GEMV, round 3", cp.async staging LOST;
 *   - prefetch_head (TERN_CUDA_DP4A_PF=n): the same entry, L2 head prefetch neutral, off;
 *   - the sweep switches of the launchers (TERN_CUDA_DP4A_KERNEL/_ROWS/_WCFG/_STAGES/_OCC, TERN_CUDA_MULTI_ROWS,
 *     TERN_CUDA_TMA_KB/_MIN_MB/_SLOTS/_ROWS) and the build arms -DTERN_DP4A_MINB (occupancy floor, LOST: "session 4")
 *     and -DTERN_DP4A_PLAIN_LD (plain loads, the evict-first loads WON): the winners are constants in gemv_dp4a.cu now. */

/* ---- prefetch_head (TERN_CUDA_DP4A_PF) ---- */

/* L2 prefetch of the first pf bytes of the matrix (rows in order: the rows the grid's first passes read),
 * spread over the grid's threads; before pdl_wait (weights are constant), so the stream continues across
 * the kernel boundary while the previous kernel drains (TERN_CUDA_DP4A_PF). */
static __device__ __forceinline__ void prefetch_head(const uint8_t *w, size_t bytes, size_t pf) {
    const size_t n = pf < bytes ? pf : bytes, step = (size_t)gridDim.x * blockDim.x * 128;
    for (size_t o = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 128; o < n; o += step) pdl_prefetch_l2(w + o);
}


/* ---- the RoPE + KV-cache epilogue (EPI) ---- */
/* ---- the q|k|v GEMV's RoPE + KV-cache epilogue (tcu_gemv_dp4a_rope; the kernels' EPI = 1) ----
 * The angles are computed before the first dot products, not in the epilogue (where the loads of pos and
 * freq and the double cos/sin sat on the critical path of every row group: -0.9% Q4_0 tg128, -2.0% Q8_0,
 * docs/ledger.md): lane l of the warp that writes the outputs takes slot (k = l / R, j = l % R), row j of
 * its (or its CTA's) k-th row group; freq is loaded before the PDL wait (constant), pos and cos/sin after
 * it; the epilogue of group k takes its rows' (cos, sin) from those lanes by shuffle (k >= 32 / R: computed
 * there). */

/* The pair index i of an output row that rotates (a q or k row with i < n_rot / 2), else -1. */
static __device__ __forceinline__ int epi_rot_i(const tcu_rope_epi &e, int row) {
    if (row < 0 || row >= e.nq + e.nkv) return -1;
    const int hr = row < e.nq ? row : row - e.nq, i = (hr % e.hd) >> 1;
    return i < e.n_rot / 2 ? i : -1;
}
/* A lane's slot: its row's pair index, freq, the token's position and the (cos, sin) of its angle. */
typedef struct { int ri; float fq, c, s; int32_t p; } epi_lane;
/* Before the PDL wait: the slot of row `row` (< 0: none). */
static __device__ __forceinline__ void epi_pre(const tcu_rope_epi &e, int row, epi_lane &L) {
    L.ri = epi_rot_i(e, row);
    L.fq = L.ri >= 0 ? e.freq[L.ri] : 0.0f;
}
/* After the PDL wait. */
static __device__ __forceinline__ void epi_post(const tcu_rope_epi &e, epi_lane &L) {
    L.p = e.pos[0];
    L.c = 1.0f;
    L.s = 0.0f;
    if (L.ri >= 0) {
        if (e.cs) { /* the pass's table (tcu_rope_table, row 0: one token): rope_cs's values */
            L.c = e.cs[2 * L.ri];
            L.s = e.cs[2 * L.ri + 1];
        } else {
            rope_cs(L.p, L.fq, &L.c, &L.s);
        }
    }
}
/* (cos, sin) of row r (at index row) of the warp's k-th group; every lane of the warp calls it. */
template <int R>
static __device__ __forceinline__ void epi_get(const tcu_rope_epi &e, const epi_lane &L, int k, int r, int row, float &c,
                                               float &s) {
    c = __shfl_sync(0xffffffffu, L.c, (k * R + r) & 31);
    s = __shfl_sync(0xffffffffu, L.s, (k * R + r) & 31);
    if (k >= 32 / R) {
        const int ri = epi_rot_i(e, row);
        c = 1.0f;
        s = 0.0f;
        if (ri >= 0) {
            if (e.cs) {
                c = e.cs[2 * ri];
                s = e.cs[2 * ri + 1];
            } else {
                rope_cs(L.p, e.freq[ri], &c, &s);
            }
        }
    }
}
/* Output row `row` with sum v and its pair partner's (row ^ 1) sum o, (c, s) its angle's: returns y's value
 * (q and k rows rotated as rope_kv_k rotates them, rope.cuh) and stores a k or v row's element in the f16
 * cache at row p (rope_kv_k's conversion): the same bits as the plain GEMV followed by tcu_rope_kv. */
static __device__ __forceinline__ float rope_epi_out(const tcu_rope_epi &e, int32_t p, int row, float v, float o,
                                                     float c, float s) {
    if (row >= e.nq + e.nkv) {
        e.vc[(size_t)p * e.nkv + (row - e.nq - e.nkv)] = __half_as_ushort(__float2half_rn(v));
        return v;
    }
    const int hr = row < e.nq ? row : row - e.nq;
    if (epi_rot_i(e, row) >= 0) v = row & 1 ? rope_second(o, v, c, s) : rope_first(v, o, c, s);
    if (row >= e.nq) e.kc[(size_t)p * e.nkv + hr] = __half_as_ushort(__float2half_rn(v));
    return v;
}

/* cta_sum_out of rows r0 .. r0 + nout - 1 (the CTA's k-th group) into y + r0 through the epilogue (N and r0
 * even: a pair's rows are lanes j, j ^ 1 of warp 0, which holds the slots). The sums are cta_sum_out's, in
 * its order. */
template <int W, int N>
static __device__ __forceinline__ void cta_sum_epi(const float (&acc)[N], float (*part)[N], int nout, float *y, int r0,
                                                   const tcu_rope_epi &e, const epi_lane &L, int k) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int j = 0; j < N; j++) {
        float s = acc[j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) part[warp][j] = s;
    }
    __syncthreads();
    if (warp == 0) {
        float s = 0.0f;
        if (lane < nout) {
            s = part[0][lane];
#pragma unroll

/* ---- gemv_q8_k (the PIPE=0 arm) ---- */
        }
        const float o = __shfl_xor_sync(0xffffffffu, s, 1);
        const int r = lane < N ? lane : 0; /* N <= 32 */
        float c, sn;
        epi_get<N>(e, L, k, r, r0 + r, c, sn);
        if (lane < nout) y[r0 + lane] = rope_epi_out(e, L.p, r0 + lane, s, o, c, sn);
    }
    __syncthreads();
}

/* Single column: a CTA of 4 warps owns R rows at a time (persistent over row groups); thread t takes
 * blocks t, t+128, ... of each row; the activation block is loaded once for the R rows. */
template <int T, int R>
__global__ void __launch_bounds__(Q8_T)
gemv_q8_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
          const int8_t *__restrict__ xl, const int2 *__restrict__ xds, float *__restrict__ y, size_t pf,
          tcu_rope_epi epi) {
    __shared__ float part[Q8_WARPS][R];
    { /* weights are constant: start this CTA's first R rows towards L2 before waiting for the input */
        const int r0 = blockIdx.x * R, nr = n_out - r0 < R ? n_out - r0 : R;
        if (nr > 0) {
            const uint8_t *base = w + (size_t)r0 * stride;
            for (size_t o = (size_t)threadIdx.x * 128; o < (size_t)nr * stride; o += (size_t)Q8_T * 128)
                pdl_prefetch_l2(base + o);
        }
    }
    (void)pf; /* not applied in the cta kernels (gemv_q8_pipe_k) */
    (void)epi; /* no epilogue here (tcu_gemv_dp4a_rope takes gemv_q8_pipe_k) */
    pdl_trigger();
    pdl_wait();
    for (int r0 = blockIdx.x * R; r0 < n_out; r0 += gridDim.x * R) {
        const uint8_t *rows[R];
#pragma unroll
        for (int r = 0; r < R; r++) rows[r] = w + (size_t)(r0 + r < n_out ? r0 + r : n_out - 1) * stride;
        float acc[R];
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = 0.0f;
        for (int b = threadIdx.x; b < nb; b += Q8_T) {

/* ---- gemv_q8_pipe_k with EPI and sub-CTAs (S) ---- */
            int wq[R][8];
            float dw[R], mw[R];
#pragma unroll
            for (int r = 0; r < R; r++) load_blk<T>(rows[r], b, wq[r], &dw[r], &mw[r]);
#pragma unroll
            for (int r = 0; r < R; r++)
                acc[r] = blk_dot<T>(wq[r], dw[r], mw[r], xh + (size_t)b * 32, xl + (size_t)b * 32, ds, acc[r]);
        }
        cta_sum_out<Q8_WARPS, R>(acc, part, n_out - r0 < R ? n_out - r0 : R, y + r0, 1);
    }
}

/* gemv_q8_pipe_k: gemv_q8_k software-pipelined. The CTA walks (row group, block step k) pairs in order and
 * issues the loads of the next pair before the dot products of the current one, so each thread has two
 * blocks per row in flight and the CTA reduction of a finished group overlaps the next group's loads.
 * Motive: at n_in = 4096 each thread owns one block per row, so gemv_q8_k waits one memory latency per row
 * group and the CTA reduction sits between them (Little's law: ~41 KB in flight an SM at 9 CTAs an SM,
 * 2.06 TB/s on Q4_0 4096x14336). Every thread takes ceil(nb / 128) steps per group (loads and dots
 * predicated on b < nb) so all threads reach each reduction together. Same per-thread order and the same
 * reduction as gemv_q8_k: the same bits. */
template <int T, int R>
static __device__ __forceinline__ void pipe_load(const uint8_t *__restrict__ w, size_t stride, int n_out, int g, int b,
                                                 int nb, int (&wq)[R][8], float (&dw)[R], float (&mw)[R]) {
    if (b >= nb) return;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int row = g * R + r < n_out ? g * R + r : n_out - 1;
        load_blk<T>(w + (size_t)row * stride, b, wq[r], &dw[r], &mw[r]);
    }
}

/* One step: dots of (g, k) from cur (issuing (g', k') into nxt first), the group's reduction when k is its
 * last step. Returns 0 when (g', k') is past the last group. */
template <int T, int R, int EPI, int S>
static __device__ __forceinline__ int pipe_step(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, int K,
                                                int G, const int8_t *__restrict__ xh, const int8_t *__restrict__ xl,
                                                const int2 *__restrict__ xds, float *__restrict__ y, int &g, int &k,
                                                int (&wc)[R][8], float (&dc)[R], float (&mc)[R], int (&wn)[R][8],
                                                float (&dn)[R], float (&mn)[R], float (&acc)[R],
                                                float (*part)[R], const tcu_rope_epi &epi, const epi_lane &L, int tid,
                                                int vg, int sub) {
    int gn = g, kn = k + 1;
    if (kn == K) { kn = 0; gn = g + vg; }
    const int more = gn < G;
    if (more) pipe_load<T, R>(w, stride, n_out, gn, tid + kn * Q8_T, nb, wn, dn, mn);
    const int b = tid + k * Q8_T;
    if (b < nb) {
        const int2 ds = __ldg(xds + b);
#pragma unroll
        for (int r = 0; r < R; r++)
            acc[r] = blk_dot<T>(wc[r], dc[r], mc[r], xh + (size_t)b * 32, xl + (size_t)b * 32, ds, acc[r]);
    }
    if (kn == 0) {
        const int r0 = g * R;
        if constexpr (EPI) /* the CTA's ((g - blockIdx.x) / gridDim.x)-th group (S = 1) */
            cta_sum_epi<Q8_WARPS, R>(acc, part, n_out - r0 < R ? n_out - r0 : R, y, r0, epi, L,
                                     (g - (int)blockIdx.x) / (int)gridDim.x);
        else if constexpr (S > 1)
            cta_sum_sub<Q8_WARPS, R>(acc, part, n_out - r0 < R ? n_out - r0 : R, y + r0, tid, 1 + sub);
        else
            cta_sum_out<Q8_WARPS, R>(acc, part, n_out - r0 < R ? n_out - r0 : R, y + r0, 1);
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = 0.0f;
    }
    g = gn;
    k = kn;
    return more;
}

/* TERN_DP4A_MINB (build-time, default 0): minimum CTAs an SM for gemv_q8_pipe_k's register budget
 * (__launch_bounds__), the occupancy A/B arm. */
#ifndef TERN_DP4A_MINB
#define TERN_DP4A_MINB 0
#endif
/* EPI = 1: the RoPE + KV-cache epilogue (tcu_gemv_dp4a_rope; R even); 0: plain, epi unused. The epilogue's
 * variant is held to the plain kernel's 8 CTAs an SM (64 registers at R = 2; 71 unbounded).
 * S > 1 (EPI = 0; TERN_CUDA_DP4A_SUB): a CTA of S x 128 threads is S independent sub-CTAs of 128, sub-CTA s
 * of CTA b being the S = 1 kernel's CTA b*S + s of a grid S times larger (its own scratch, a named barrier
 * 1 + s): the same rows, the same per-thread order and reduction, so the same bits, in S times fewer CTAs.
 * Motive: a dependent kernel's boundary costs 1.49 us at 1056 CTAs of 128 and 0.87 at 264 of 512 (tern
 * roofline's boundary rows, bench/gpu/boundary-*). Bounded to 64 registers, the S = 1 kernel's at R <= 2 for the
 * non-K types (Q4_K uses 68, R >= 4 more): the launcher takes it at R <= 2 only. A lost arm (docs/ledger.md). */
template <int T, int R, int EPI, int S = 1>
__global__ void __launch_bounds__(Q8_T * S, EPI ? 8 : S > 1 ? 8 / S : TERN_DP4A_MINB)
gemv_q8_pipe_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
               const int8_t *__restrict__ xl, const int2 *__restrict__ xds, float *__restrict__ y, size_t pf,
               tcu_rope_epi epi) {
    static_assert(S == 1 || (!EPI && S <= 8), "sub-CTAs: the plain kernel, at most 8 (named barriers 1..8)");
    __shared__ float part_s[S][Q8_WARPS][R];
    const int sub = S > 1 ? (int)threadIdx.x / Q8_T : 0, tid = S > 1 ? (int)threadIdx.x % Q8_T : (int)threadIdx.x;
    const int vg = (int)gridDim.x * S;
    float(*part)[R] = part_s[sub];
    const int G = (n_out + R - 1) / R, K = (nb + Q8_T - 1) / Q8_T;
    int g = (int)blockIdx.x * S + sub, k = 0;
    if (g >= G) { /* sub-CTA-uniform; reached only by the last CTA's spare sub-CTAs (S > 1). Waits first: a grid whose CTAs all waited is
                   * what lets the next kernel's pdl_wait stand for every earlier kernel (pdl.cuh) */
        pdl_trigger();
        pdl_wait();
        return;
    }
    int wa[R][8], wb[R][8];
    float da[R], db[R], ma[R], mb[R], acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    /* the first pair's weights are constant: loaded before waiting for the previous kernel (pdl.cuh) */
    pipe_load<T, R>(w, stride, n_out, g, tid, nb, wa, da, ma);
    (void)pf; /* TERN_CUDA_DP4A_PF is not applied here: its loop took Q6_K's kernel from 64 to 66 registers,
               * 7 CTAs an SM instead of 8, -2.6% tg128 (docs/ledger.md) */
    epi_lane L = {};
    if constexpr (EPI) { /* warp 0's lanes: slot (k, j) = row j of the CTA's k-th group */
        const int gk = g + ((int)threadIdx.x & 31) / R * (int)gridDim.x;
        if (threadIdx.x < 32) epi_pre(epi, gk < G ? gk * R + ((int)threadIdx.x & 31) % R : -1, L);
    }
    pdl_trigger();
    pdl_wait();
    if constexpr (EPI) {
        if (threadIdx.x < 32) epi_post(epi, L);
    }
    for (;;) {
        if (!pipe_step<T, R, EPI, S>(w, stride, nb, n_out, K, G, xh, xl, xds, y, g, k, wa, da, ma, wb, db, mb, acc, part, epi,
                                     L, tid, vg, sub))
            break;
        if (!pipe_step<T, R, EPI, S>(w, stride, nb, n_out, K, G, xh, xl, xds, y, g, k, wb, db, mb, wa, da, ma, acc, part, epi,
                                     L, tid, vg, sub))

/* ---- gemv_q8_smem_k ---- */
    }
}

/* As gemv_q8_k with the CTA's R rows (R*stride contiguous bytes) first staged in shared memory by 16-byte
 * loads (eight in flight per thread, evict-first). Motive: the block-by-block word loads of gemv_q8_k
 * touch ~5 cache lines per warp instruction (lanes 18 or 34 bytes apart). It lost (TERN_CUDA_DP4A_SMEM=1,
 * numbers at q8_smem): the load-then-compute phases of a CTA do not overlap. Same bits as gemv_q8_k. */
template <int T, int R>
__global__ void __launch_bounds__(Q8_T)
gemv_q8_smem_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
               const int8_t *__restrict__ xl, const int2 *__restrict__ xds, float *__restrict__ y) {
    extern __shared__ uint4 sm[];
    __shared__ float part[Q8_WARPS][R];
    const uint8_t *smb = (const uint8_t *)sm;
    for (int r0 = blockIdx.x * R; r0 < n_out; r0 += gridDim.x * R) {
        const int nrow = n_out - r0 < R ? n_out - r0 : R;
        const int n16 = (int)((size_t)nrow * stride / 16);
        const uint4 *src = (const uint4 *)(w + (size_t)r0 * stride);
        int i = threadIdx.x;
        for (; i + 7 * Q8_T < n16; i += 8 * Q8_T) {
            uint4 v[8];
#pragma unroll
            for (int k = 0; k < 8; k++) v[k] = __ldcs(src + i + k * Q8_T);
#pragma unroll
            for (int k = 0; k < 8; k++) sm[i + k * Q8_T] = v[k];
        }
        for (; i < n16; i += Q8_T) sm[i] = __ldcs(src + i);
        __syncthreads();
        float acc[R];
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = 0.0f;
        for (int b = threadIdx.x; b < nb; b += Q8_T) {
            const int2 ds = __ldg(xds + b);
#pragma unroll
            for (int r = 0; r < R; r++)
                if (r < nrow) {
                    int wq[8];
                    float dw, mw;
                    load_blk<T>(smb + (size_t)r * stride, b, wq, &dw, &mw);
                    acc[r] = blk_dot<T>(wq, dw, mw, xh + (size_t)b * 32, xl + (size_t)b * 32, ds, acc[r]);
                }
        }
        cta_sum_out<Q8_WARPS, R>(acc, part, nrow, y + r0, 1); /* part[] is rewritten by the next group */
    }
}

/* ---- launcher knobs ---- */
/* TERN_CUDA_DP4A_PF=n: each warp/async single-column GEMV first prefetches n MiB of its matrix into L2
 * before its PDL wait (0, the default: only its first loads; n = 8 was neutral, docs/ledger.md). TERN_CUDA_DP4A_OCC=k: at most k CTAs an SM
 * (leaves room for the next kernels' CTAs to become resident and start their prefetch early). */
static size_t q8_pf(void) {
    static long v = -1;
    if (v < 0) { const char *e = getenv("TERN_CUDA_DP4A_PF"); v = e && atol(e) > 0 ? atol(e) : 0; }
    return (size_t)v << 20;
}
static int q8_occ(int per_sm) {
    static int v = -1;
    if (v < 0) { const char *e = getenv("TERN_CUDA_DP4A_OCC"); v = e && atoi(e) > 0 ? atoi(e) : 0; }
    return v && v < per_sm ? v : per_sm;
}

/* A warp's R reduced rows (every lane holds every sum) out: lane r writes row r0 + r (r < nr), through the
 * RoPE + KV-cache epilogue with EPI (R and r0 even: the pair partner is sum r ^ 1; the warp's k-th group). */
template <int R, int EPI>
static __device__ __forceinline__ void warp_out(const float (&v)[R], int nr, float *y, int r0, const tcu_rope_epi &e,
                                                const epi_lane &L, int k) {
    const int lane = (int)threadIdx.x & 31;
#pragma unroll
    for (int r = 0; r < R; r++) {
        float o = v[r];
        if constexpr (EPI && R % 2 == 0) {
            float c, s;
            epi_get<R>(e, L, k, r, r0 + r, c, s);
            if (lane == r && r < nr) o = rope_epi_out(e, L.p, r0 + r, v[r], v[r ^ 1], c, s);
        }
        if (lane == r && r < nr) y[r0 + r] = o;
    }
}

/* ---- the tma kernel with the RMSNorm prologue (NM) and the epilogue ---- */
}

/* The RMSNorm prologue (NM = 1, tcu_gemv_dp4a_norm): the row's x16 (plane = dim) into xs, computed as
 * rmsnorm_cl_k (elementwise.cu) computes it with C CTAs of T = dim / C threads: each 32-element block's sum of
 * squares by the same xor butterfly, slice k's partial (its T / 32 blocks) by warp k's butterfly over them in
 * block order (lanes past the slice 0), the C partials summed in slice order; then the same scale and
 * products. Thread t holds elements t + TM_T * i (dim a multiple of TM_T, at most 16 of them), so warp w's
 * lanes hold block 16 i + w. red: dim / 32 doubles; part: C. Ends with a barrier. */
static __device__ __forceinline__ void norm_prologue(const tcu_norm_pro &np, int dim, int8_t *xs, double *red,
                                                     double *part) {
    const int t = (int)threadIdx.x, lane = t & 31, w = t >> 5, ni = dim / TM_T;
    const int C = np.C, nw = dim / C / 32; /* blocks a slice */
    float v[16], gv[16];
#pragma unroll
    for (int i = 0; i < 16; i++) {
        if (i < ni) {
            const int e = t + TM_T * i;
            v[i] = np.x[e];
            gv[i] = np.g[e];
        }
    }
    if (np.r) {
#pragma unroll
        for (int i = 0; i < 16; i++) {
            if (i < ni) {
                const int e = t + TM_T * i;
                v[i] = __fadd_rn(v[i], np.r[e]);
                if (blockIdx.x == 0) np.xo[e] = v[i];
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 16; i++) {
        if (i < ni) {
            double ss = (double)v[i] * (double)v[i];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
            if (lane == 0) red[16 * i + w] = ss;
        }
    }
    __syncthreads();
    if (w < C) {
        double s = lane < nw ? red[w * nw + lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) part[w] = s;
    }
    __syncthreads();
    double S = 0.0;
    for (int j = 0; j < C; j++) S += part[j];
    const float sc = (float)(1.0 / sqrt(S / dim + (double)np.eps));
#pragma unroll
    for (int i = 0; i < 16; i++) {
        if (i < ni) x16_put(__fmul_rn(__fmul_rn(v[i], sc), gv[i]), lane, 16 * i + w, xs, (size_t)dim);
    }
    __syncthreads();
}

template <int T, int R, int EPI, int NM = 0>
__global__ void __launch_bounds__(TM_T, 1)
gemv_q8_tma_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
              const int8_t *__restrict__ xl, const int2 *__restrict__ xds, float *__restrict__ y, int cb, int cbytes,
              int P, tcu_rope_epi epi, tcu_norm_pro np) {
    extern __shared__ __align__(128) uint8_t tm_sm[];
    __shared__ __align__(8) uint64_t full[TM_MAX_SLOTS];
    __shared__ double nm_red[NM ? 256 : 1], nm_part[NM ? 8 : 1]; /* the prologue's block and slice sums */
    const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31;
    const int G = (n_out + R - 1) / R, C = (nb + cb - 1) / cb;
    const int g0 = (int)((int64_t)blockIdx.x * G / gridDim.x), ng = (int)((int64_t)(blockIdx.x + 1) * G / gridDim.x) - g0;
    const int units = (warp < ng ? (ng - warp + TM_WARPS - 1) / TM_WARPS : 0) * C; /* nb >= 1 (q8_tma_launch) */
    const size_t slot = (size_t)R * (size_t)cbytes;
    uint8_t *ring = tm_sm + (size_t)warp * P * slot;
    uint64_t *bars = full + warp * P;
#if !TM_PTX
    __trap(); /* not launched below sm_90 */
#endif
    if (threadIdx.x == 0) {
        for (int s = 0; s < TM_WARPS * P; s++) mbar_init(&full[s]);
        mbar_init_fence();
    }
    __syncthreads();
    /* this warp's unit k = (its (k / C)-th row group, chunk k % C) goes to its slot k % P */
    auto issue = [&](int k) {
        const int r0 = (g0 + warp + (k / C) * TM_WARPS) * R, nr = n_out - r0 < R ? n_out - r0 : R;
        const size_t off = (size_t)(k % C) * (size_t)cbytes;
        const uint32_t bytes = (uint32_t)(stride - off < (size_t)cbytes ? stride - off : (size_t)cbytes);
        uint64_t *bar = &bars[k % P];
        mbar_expect_tx(bar, bytes * (uint32_t)nr);
        for (int r = 0; r < nr; r++)
            bulk_g2s(ring + (size_t)(k % P) * slot + (size_t)r * cbytes, w + (size_t)(r0 + r) * stride + off, bytes, bar);
    };
    if (lane == 0)
        for (int k = 0; k < units && k < P; k++) issue(k);
    epi_lane L = {};
    if constexpr (EPI) { /* slot (k, j) = row j of the warp's k-th group */
        const int kk = lane / R;
        epi_pre(epi, warp + kk * TM_WARPS < ng ? (g0 + warp + kk * TM_WARPS) * R + lane % R : -1, L);
    }
    pdl_trigger();
    pdl_wait(); /* every thread of every CTA waits (pdl.cuh) */
    if constexpr (EPI) epi_post(epi, L);
    /* NM: the activations are this CTA's own RMSNorm of np's row, in shared memory after the ring */
    const int8_t *ah = xh, *al = xl;
    const int2 *ads = xds;
    if constexpr (NM) {
        int8_t *xs = (int8_t *)(tm_sm + (size_t)TM_WARPS * P * slot);
        norm_prologue(np, nb * 32, xs, nm_red, nm_part);
        ah = xs;
        al = xs + (size_t)nb * 32;
        ads = (const int2 *)(xs + (size_t)nb * 64);
    }
    float acc[R];
    /* unit k = (row group index gi, chunk c), slot k % P = sl on its (k / P)-th use (parity ph), kept as counters */
    int c = 0, sl = 0, gi = 0;
    uint32_t ph = 0;
    for (int k = 0; k < units; k++) {
        if (c == 0) {
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] = 0.0f;
        }
        mbar_wait(&bars[sl], ph);
        const uint8_t *base = ring + (size_t)sl * slot;
        const int r0 = (g0 + warp + gi * TM_WARPS) * R, nr = n_out - r0 < R ? n_out - r0 : R;
        const int b0 = c * cb, b1 = nb - b0 < cb ? nb : b0 + cb;
        for (int b = b0 + lane; b < b1; b += 32) {
            const int2 ds = NM ? ads[b] : __ldg(ads + b);
            int wq[R][8];
            float dw[R], mw[R];
#pragma unroll
            for (int r = 0; r < R; r++)
                sload_blk<T>(base + (size_t)(r < nr ? r : nr - 1) * cbytes, b - b0, wq[r], &dw[r], &mw[r]);
#pragma unroll
            for (int r = 0; r < R; r++)
                acc[r] = blk_dot<T, !NM>(wq[r], dw[r], mw[r], ah + (size_t)b * 32, al + (size_t)b * 32, ds, acc[r]);
        }
        /* every lane is done reading the slot before the next bulk copy into it. No fence.proxy.async between
         * these generic-proxy reads and that async-proxy write: CUTLASS's TMA pipelines omit it too (the copy
         * reads global memory before it writes the slot); strictly, PTX's memory model asks for one
         * (docs/ledger.md, the TMA GEMV entry; a review note, not measured) */
        __syncwarp();
        if (lane == 0 && k + P < units) issue(k + P);
        if (++sl == P) { sl = 0; ph ^= 1u; }
        if (++c == C) {
            c = 0;
            gi++;
#pragma unroll
            for (int r = 0; r < R; r++) {
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
            }
            warp_out<R, EPI>(acc, nr, y, r0, epi, L, gi - 1);
        }
    }
}

/* ---- gemv_q8_warp_k with EPI and the L2 prefetch ---- */
template <int T, int R, int U, int EPI>
__global__ void __launch_bounds__(W_T)
gemv_q8_warp_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
               const int8_t *__restrict__ xl, const int2 *__restrict__ xds, float *__restrict__ y, size_t pf,
               tcu_rope_epi epi) {
    const int lane = (int)threadIdx.x & 31;
    const int G = (n_out + R - 1) / R, step = (int)gridDim.x * W_WARPS;
    int g = (int)blockIdx.x * W_WARPS + ((int)threadIdx.x >> 5);
    int wq[U][R][8];
    float dw[U][R], mw[U][R];
    /* the first batch's weights are constant: loaded before waiting for the previous kernel (pdl.cuh) */
    int pre = g < G;
    if (pre) warp_load<T, R, U>(w, stride, n_out, g, 0, nb, wq, dw, mw);
    if (pf) prefetch_head(w, (size_t)n_out * stride, pf);
    epi_lane L = {};
    if constexpr (EPI) { /* slot (k, j) = row j of the warp's k-th group */
        const int gk = g + lane / R * step;
        epi_pre(epi, gk < G ? gk * R + lane % R : -1, L);
    }
    pdl_trigger();
    pdl_wait(); /* every thread of every CTA waits (pdl.cuh) */
    if constexpr (EPI) epi_post(epi, L);
    for (int kg = 0; g < G; g += step, kg++) {
        float acc[R];
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = 0.0f;
        for (int b0 = 0; b0 < nb; b0 += 32 * U) {
            if (!pre) warp_load<T, R, U>(w, stride, n_out, g, b0, nb, wq, dw, mw);
            pre = 0;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int b = b0 + 32 * u + lane;
                if (b < nb) {
                    const int2 ds = __ldg(xds + b);
#pragma unroll
                    for (int r = 0; r < R; r++)
                        acc[r] = blk_dot<T>(wq[u][r], dw[u][r], mw[u][r], xh + (size_t)b * 32, xl + (size_t)b * 32, ds,
                                            acc[r]);
                }
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
        }
        warp_out<R, EPI>(acc, n_out - g * R < R ? n_out - g * R : R, y, g * R, epi, L, kg);
    }
}

/* The warp family's m-column twin: a warp owns R rows at a time, lane l takes blocks l, l+32, ... of each
 * (U of them loaded for the R rows before their dot products, as gemv_q8_warp_k), and each block is applied
 * to every column; a value ends with the same xor tree. R = 1, U = 1 was the first version (one block load

/* ---- gemv_q8_async_k ---- */
/* ---- warp-per-row with cp.async staging (gemv_q8_async_k) ----
 * ncu on the decode step (gemv_q8_pipe_k, Llama-3-8B Q4_0): 29-58% of DRAM peak, ~60% of the warps' cycles
 * stalled on L1TEX scoreboard (global loads), occupancy register-limited at 30 warps an SM: too few bytes in
 * flight. Here each warp streams its rows through a ring of S shared-memory stages with cp.async (16-byte
 * copies, no registers held while in flight): a stage is one chunk of 32 blocks of each of the warp's R
 * rows; S-1 chunks are in flight while one is computed, across row groups, and the first S-1 are issued
 * before the PDL wait (weights are constant). Lane l takes block l of each chunk: the lane order and
 * reduction of gemv_q8_warp_k, so gemv_q8_warp_multi_k is its multi-column twin (bit-identical).
 * Types whose 32 blocks are a multiple of 16 bytes and start a group/super-block: Q4_0, Q4_1, Q8_0, Q4_K
 * (not Q6_K: 210-byte super-blocks; not the repacked types, see WLD).
 * LOST (TERN_CUDA_DP4A_KERNEL=async, kept as the arm): tg128 Q4_0 367.8 vs cta 430.6 tok/s, Q8_0 300.5 vs
 * warp 337.9, Q4_K 289.6 vs cta 319.0 (measured on the repacked Q4_0/Q8_0 with plain loads). ncu: the down
 * GEMV (4096 rows) gets 512 CTAs, 15 warps an SM, 20.4 vs 15.3 us; gate|up 25.8 vs 24.5 us at 55% of DRAM
 * peak with 63% of issue slots busy (cta: 58%, 40%): more bytes in flight did not raise the DRAM rate. */
template <int T> struct blk_bytes;
template <> struct blk_bytes<TERN_TYPE_Q4_0> { static const int v = 18; };
template <> struct blk_bytes<TCU_TYPE_Q4_0R> { static const int v = 18; };
template <> struct blk_bytes<TERN_TYPE_Q4_1> { static const int v = 20; };
template <> struct blk_bytes<TERN_TYPE_Q8_0> { static const int v = 34; };
template <> struct blk_bytes<TCU_TYPE_Q8_0R> { static const int v = 34; };
template <> struct blk_bytes<TERN_TYPE_Q4_K> { static const int v = 18; }; /* 144 / 8 */
template <> struct blk_bytes<TCU_TYPE_Q4_KR> { static const int v = 18; };
template <> struct blk_bytes<TERN_TYPE_Q6_K> { static const int v = 0; };  /* not staged */

static __device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(gmem));
}
static __device__ __forceinline__ void cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void cp_async_wait(void) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* Issue the copies of item t (row group g0 + (t/K)*gstep, chunk t%K) into its stage; an empty group when t
 * is past the warp's last item (the group count stays uniform). */
template <int T, int R, int S>
static __device__ __forceinline__ void async_issue(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out,
                                                   int K, int G, int g0, int gstep, int t, uint8_t *ring) {
    const int CH = 32 * blk_bytes<T>::v, lane = (int)threadIdx.x & 31;
    const int g = g0 + (t / K) * gstep, k = t % K;
    if (g < G) {
        const int nblk = nb - 32 * k < 32 ? nb - 32 * k : 32;
        const int n16 = (nblk * blk_bytes<T>::v + 15) / 16; /* a partial chunk's copy stays inside the padded row */
        uint8_t *st = ring + (size_t)(t % S) * R * CH;
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int row = g * R + r < n_out ? g * R + r : n_out - 1;
            const uint8_t *src = w + (size_t)row * stride + (size_t)k * CH;
            for (int i = lane; i < n16; i += 32) cp_async16(st + r * CH + 16 * i, src + 16 * i);
        }
    }
    cp_async_commit();
}

template <int T, int R, int S>
__global__ void __launch_bounds__(W_T)
gemv_q8_async_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const int8_t *__restrict__ xh,
                const int8_t *__restrict__ xl, const int2 *__restrict__ xds, float *__restrict__ y, size_t pf) {
    extern __shared__ uint4 smem_async[];
    const int CH = 32 * blk_bytes<T>::v, lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
    uint8_t *ring = (uint8_t *)smem_async + (size_t)warp * S * R * CH;
    const int G = (n_out + R - 1) / R, K = (nb + 31) / 32, gstep = (int)gridDim.x * W_WARPS;
    const int g0 = (int)blockIdx.x * W_WARPS + warp;
    const int nt = g0 < G ? ((G - 1 - g0) / gstep + 1) * K : 0; /* this warp's items */
#pragma unroll
    for (int t = 0; t < S - 1; t++) async_issue<T, R, S>(w, stride, nb, n_out, K, G, g0, gstep, t, ring);
    if (pf) prefetch_head(w, (size_t)n_out * stride, pf);
    pdl_trigger();
    pdl_wait(); /* every thread of every CTA waits (pdl.cuh) */
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    for (int t = 0; t < nt; t++) {
        async_issue<T, R, S>(w, stride, nb, n_out, K, G, g0, gstep, t + S - 1, ring);
        cp_async_wait<S - 1>(); /* this lane's copies of item t have landed */
        __syncwarp();           /* ... and every lane's */
        const int k = t % K, b = 32 * k + lane;
        if (b < nb) {
            const uint8_t *st = ring + (size_t)(t % S) * R * CH;
            const int2 ds = __ldg(xds + b);
#pragma unroll
            for (int r = 0; r < R; r++) {
                int wq[8];
                float dw, mw;
                load_blk<T>(st + r * CH, lane, wq, &dw, &mw);
                acc[r] = blk_dot<T>(wq, dw, mw, xh + (size_t)b * 32, xl + (size_t)b * 32, ds, acc[r]);
            }
        }
        __syncwarp(); /* the stage is free for the copies issued next */
        if (k == K - 1) {
            const int g = g0 + (t / K) * gstep;
#pragma unroll
            for (int r = 0; r < R; r++) {
                float v = acc[r];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
                if (lane == r && g * R + r < n_out) y[g * R + r] = v;
                acc[r] = 0.0f;
            }
        }
    }
    cp_async_wait<0>();
}


/* ---- the launchers with every switch ---- */
/* The single-column kernel family for type T: 0 the CTA-per-row kernels (gemv_q8_pipe_k / gemv_q8_k, multi
 * twin gemv_q8_multi_k), 1 gemv_q8_warp_k, 2 gemv_q8_async_k (multi twin of 1 and 2: gemv_q8_warp_multi_k),
 * 3 gemv_q8_tma_k (multi twin gemv_q8_warp_multi_k, as 1).
 * TERN_CUDA_DP4A_KERNEL=cta|warp|async|tma forces one for every type (the A/B arms); the default per-type
 * rule is below, and q8_family puts large matrices on tma over it. */
/* TERN_CUDA_DP4A_KERNEL names a family (then every matrix uses it; no per-shape rule). */
static int q8_forced(void) {
    static int v = -1;
    if (v < 0) v = getenv("TERN_CUDA_DP4A_KERNEL") && *getenv("TERN_CUDA_DP4A_KERNEL");
    return v;
}

template <int T> static int q8_kernel(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("TERN_CUDA_DP4A_KERNEL");
        v = e && !strcmp(e, "cta") ? 0 : e && !strcmp(e, "warp") ? 1 : e && !strcmp(e, "async") ? 2
          : e && !strcmp(e, "tma") ? 3 : -2;
        /* the rule (bench/sweeps/dp4a.md, tg128 on Llama-3-8B): warp for Q8_0 (339.9 vs cta 329.4 tok/s,
         * repacked; 330.5 vs 301.7 on the GGUF layout), cta for Q4_0 (430.0 vs warp 415.1) and Q4_K (319.0 vs
         * 307.5); Q4_1 and Q6_K unmeasured with warp: cta, as before. async lost on every type. */
        if (v == -2) v = T == TERN_TYPE_Q8_0 || T == TCU_TYPE_Q8_0R ? 1 : 0;
        if (v == 2 && (blk_bytes<T>::v == 0 || T == TCU_TYPE_Q4_0R || T == TCU_TYPE_Q8_0R || T == TCU_TYPE_Q4_KR))
            v = 1; /* Q6_K: not staged; repacked: load_blk streams from global memory only (WLD) */
    }
    return v;
}

/* Stages of gemv_q8_async_k: TERN_CUDA_DP4A_STAGES = 2..6 (default 4). */
static int q8_stages(void) {
    static int v = -1;
    if (v < 0) { const char *e = getenv("TERN_CUDA_DP4A_STAGES"); v = e ? atoi(e) : 4; if (v < 2 || v > 6) v = 4; }
    return v;
}

/* Rows a warp (R) x blocks a lane loaded at once (U) of gemv_q8_warp_k: TERN_CUDA_DP4A_WCFG = 14, 18, 22,
 * 24 or 42 (R then U) for sweeps; default 24. */
static int q8_wcfg(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("TERN_CUDA_DP4A_WCFG");
        const int c = e ? atoi(e) : 0;
        v = c == 14 || c == 18 || c == 22 || c == 24 || c == 42 ? c : 24;
    }
    return v;
}

/* The kernels' epilogue argument: *e, or none (kc NULL). */
static tcu_rope_epi epi_arg(const tcu_rope_epi *e) {
    tcu_rope_epi z;
    memset(&z, 0, sizeof z);
    return e ? *e : z;
}

/* EPI = 1: with the RoPE + KV-cache epilogue *epi (q8_dispatch). */
template <int T, int R, int U, int EPI = 0>
static void q8_warp_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                           const int2 *ds, float *y, const tcu_rope_epi *epi, cudaStream_t st) {
    static int per_sm = 0;
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, float *, size_t,
               tcu_rope_epi) = gemv_q8_warp_k<T, R, U, EPI>;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, W_T, 0) != cudaSuccess) per_sm = 4;
    const int64_t groups = (n_out + R - 1) / R, ctas = (groups + W_WARPS - 1) / W_WARPS;
    const int64_t cap = (int64_t)gemv_sms() * q8_occ(per_sm > 0 ? per_sm : 4);
    PDL_LAUNCH(kf, dim3((unsigned)(ctas < cap ? ctas : cap)), dim3(W_T), 0, st, w, stride, nb, n_out, q, ql, ds, y,
               q8_pf(), epi_arg(epi));
}

template <int T, int R, int S>
static void q8_async_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                            const int2 *ds, float *y, cudaStream_t st) {
    static int per_sm = 0;
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, float *, size_t) =
        gemv_q8_async_k<T, R, S>;
    const size_t smem = (size_t)W_WARPS * S * R * 32 * (blk_bytes<T>::v ? blk_bytes<T>::v : 1);
    if (!per_sm) {
        if (smem > (48u << 10)) cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, W_T, smem) != cudaSuccess || per_sm < 1) per_sm = 2;
    }
    const int64_t groups = (n_out + R - 1) / R, ctas = (groups + W_WARPS - 1) / W_WARPS;
    const int64_t cap = (int64_t)gemv_sms() * q8_occ(per_sm);
    PDL_LAUNCH(kf, dim3((unsigned)(ctas < cap ? ctas : cap)), dim3(W_T), smem, st, w, stride, nb, n_out, q, ql, ds, y,
               q8_pf());
}

/* Rows a multi-column GEMV CTA (cta family) or warp (warp family) owns at a time: TERN_CUDA_MULTI_ROWS
 * (1, 2 or 4; the bits do not depend on it). 4 won on every type (a verify pass of 8 tokens on synthetic
 * Llama-3-8B Q4_0: 11.59 ms at R = 1, 8.79 at 2, 5.97 at 4; Q8_0 12.35 / 15.20 / 7.70; docs/ledger.md). */
static int q8_multi_rows(void) {
    static int v = -1;
    if (v < 0) { const char *e = getenv("TERN_CUDA_MULTI_ROWS"); v = e ? atoi(e) : 4; if (v != 1 && v != 2) v = 4; }
    return v;
}

template <int T, int M, int R, int U>
static void q8_warp_multi_launch_r(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                                   const int2 *ds, int m, float *y, cudaStream_t st) {
    static int per_sm = 0;
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, int, float *) =
        gemv_q8_warp_multi_k<T, M, R, U>;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, W_T, 0) != cudaSuccess) per_sm = 4;
    const int64_t groups = ((int64_t)n_out + R - 1) / R, ctas = (groups + W_WARPS - 1) / W_WARPS;
    const int64_t cap = (int64_t)gemv_sms() * (per_sm > 0 ? per_sm : 4);
    PDL_LAUNCH(kf, dim3((unsigned)(ctas < cap ? ctas : cap)), dim3(W_T), 0, st, w, stride, nb, n_out, q, ql, ds, m, y);
}
template <int T, int M>
static void q8_warp_multi_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                                 const int2 *ds, int m, float *y, cudaStream_t st) {
    switch (q8_multi_rows()) {
    case 1: q8_warp_multi_launch_r<T, M, 1, 1>(w, stride, nb, n_out, q, ql, ds, m, y, st); break;
    case 4: q8_warp_multi_launch_r<T, M, 4, 1>(w, stride, nb, n_out, q, ql, ds, m, y, st); break;
    default: q8_warp_multi_launch_r<T, M, 2, 2>(w, stride, nb, n_out, q, ql, ds, m, y, st); break;
    }
}

/* Rows per CTA: TERN_CUDA_DP4A_ROWS (1, 2, 4, 8) overrides the default for sweeps. */
static int q8_rows(void) {
    static int r = -1;
    if (r < 0) {
        const char *e = getenv("TERN_CUDA_DP4A_ROWS");
        const int v = e ? atoi(e) : 0;
        r = v == 1 || v == 2 || v == 4 || v == 8 ? v : 2; /* R=2 won a 1/2/4/8 sweep: 3.75 ms a Llama-3-8B Q4_0 step vs 3.96 at 4 (ledger) */
    }
    return r;
}

/* TERN_CUDA_DP4A_PIPE=0: gemv_q8_k (one block per row in flight a thread), the arm of gemv_q8_pipe_k. */
static int q8_pipe(void) {
    static int v = -1;
    if (v < 0) v = !(getenv("TERN_CUDA_DP4A_PIPE") && !strcmp(getenv("TERN_CUDA_DP4A_PIPE"), "0"));
    return v;
}

/* sub-CTA launches issued by this host thread (tcu_gemv_sub_count: the trace counts what ran) */
static thread_local uint64_t g_sub_launches;
extern "C" uint64_t tcu_gemv_sub_count(void) { return g_sub_launches; }

/* TERN_CUDA_DP4A_SUB=S (1, 2, 4): gemv_q8_pipe_k's CTAs of S sub-CTAs of 128 threads (1: a CTA each). */
static int q8_sub(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("TERN_CUDA_DP4A_SUB");
        v = e ? atoi(e) : 1;
        if (v != 1 && v != 2 && v != 4) v = 1;
    }
    return v;
}

/* TERN_CUDA_DP4A_SMEM=1: the shared-memory-staged kernel (when its rows fit 48 KB), an A/B arm that lost:
 * Q4_0 4096x14336 23.2 vs 17.9 us, a Llama-3-8B Q4_0 decode step 3.78 vs 3.08 ms (docs/ledger.md). */
static int q8_smem(void) {
    static int v = -1;
    if (v < 0) v = getenv("TERN_CUDA_DP4A_SMEM") && !strcmp(getenv("TERN_CUDA_DP4A_SMEM"), "1");
    return v;
}

template <int T, int R, int EPI = 0>
static void q8_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                      const int2 *ds, float *y, const tcu_rope_epi *epi, cudaStream_t st) {
    const size_t smem = (size_t)R * stride;
    /* not for the repacked types: their load_blk reads global memory only (WLD); no epilogue (q8_dispatch) */
    if (!epi && q8_smem() && T != TCU_TYPE_Q4_0R && T != TCU_TYPE_Q8_0R && T != TCU_TYPE_Q4_KR && smem <= (48u << 10) &&
        stride % 16 == 0 && ((uintptr_t)w & 15) == 0) {
        static size_t seen[16]; /* occupancy depends on the staging size: asked once per size */
        static int occ[16], n_seen = 0;
        int per_sm_s = 0;
        for (int k = 0; k < n_seen && !per_sm_s; k++)
            if (seen[k] == smem) per_sm_s = occ[k];
        if (!per_sm_s) {
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_s, gemv_q8_smem_k<T, R>, Q8_T, smem) != cudaSuccess ||
                per_sm_s < 1)
                per_sm_s = 2;
            if (n_seen < 16) { seen[n_seen] = smem; occ[n_seen++] = per_sm_s; }
        }
        const int64_t groups = (n_out + R - 1) / R, cap = (int64_t)gemv_sms() * (per_sm_s > 0 ? per_sm_s : 2);
        gemv_q8_smem_k<T, R><<<(unsigned)(groups < cap ? groups : cap), Q8_T, smem, st>>>(w, stride, nb, n_out, q, ql,
                                                                                          ds, y);
        return;
    }
    /* nb = 0: the pipe would never end a group; EPI: the pipe (q8_dispatch checks q8_pipe and nb) */
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, float *, size_t,
               tcu_rope_epi) = EPI || (q8_pipe() && nb > 0) ? gemv_q8_pipe_k<T, R, EPI> : gemv_q8_k<T, R>;
    if constexpr (!EPI) {
        const int sub = q8_sub();
        if (sub > 1 && R <= 2 && q8_pipe() && nb > 0) { /* S sub-CTAs a CTA: a virtual grid of the sub-CTAs an SM
                                                          * holds (TERN_CUDA_DP4A_OCC counts sub-CTAs), rounded up */
            constexpr int RS = R <= 2 ? R : 2; /* the S > 1 kernels exist at R <= 2 only (the branch above) */
            void (*ks)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, float *, size_t,
                       tcu_rope_epi) = sub == 4 ? gemv_q8_pipe_k<T, RS, 0, 4> : gemv_q8_pipe_k<T, RS, 0, 2>;
            static int per_sm_sub[5];
            int *ps = &per_sm_sub[sub];
            if (!*ps && cudaOccupancyMaxActiveBlocksPerMultiprocessor(ps, ks, Q8_T * sub, 0) != cudaSuccess) *ps = 8 / sub;
            const int64_t groups = (n_out + R - 1) / R, cap = (int64_t)gemv_sms() * q8_occ(*ps > 0 ? *ps * sub : 8);
            const int64_t v = groups < cap ? groups : cap;
            PDL_LAUNCH(ks, dim3((unsigned)((v + sub - 1) / sub)), dim3(Q8_T * sub), 0, st, w, stride, nb, n_out, q, ql, ds,
                       y, q8_pf(), epi_arg(epi));
            g_sub_launches++;
            return;
        }
    }
    static int per_sm[2];
    int *ps = &per_sm[EPI || (q8_pipe() && nb > 0)];
    if (!*ps && cudaOccupancyMaxActiveBlocksPerMultiprocessor(ps, kf, Q8_T, 0) != cudaSuccess) *ps = 4;
    const int64_t groups = (n_out + R - 1) / R, cap = (int64_t)gemv_sms() * q8_occ(*ps > 0 ? *ps : 4);
    PDL_LAUNCH(kf, dim3((unsigned)(groups < cap ? groups : cap)), dim3(Q8_T), 0, st, w, stride, nb, n_out, q, ql, ds, y,
               q8_pf(), epi_arg(epi));
}

/* Shared-memory ring of gemv_q8_tma_k in KiB: TERN_CUDA_TMA_KB (16..226, default 160). */
static size_t q8_tma_budget(void) {
    static long v = -1;
    if (v < 0) { const char *e = getenv("TERN_CUDA_TMA_KB"); v = e ? atol(e) : 160; if (v < 16 || v > 226) v = 160; }
    return (size_t)v << 10;
}

/* Bytes of 8 consecutive blocks of type T in a row (a repacked group, a K-quant super-block, 8 GGUF blocks). */
template <int T> static int q8_bytes8(void) {
    return T == TCU_TYPE_Q8_0R || T == TERN_TYPE_Q8_0 ? 272 : T == TERN_TYPE_Q6_K ? 210 : T == TERN_TYPE_Q4_1 ? 160 : 144;
}

/* Matrix size from which the default rule takes gemv_q8_tma_k: TERN_CUDA_TMA_MIN_MB (MiB, default 48; 0 = never). */
static size_t q8_tma_min(void) {
    static long v = -1;
    if (v < 0) { const char *e = getenv("TERN_CUDA_TMA_MIN_MB"); v = e ? atol(e) : 48; if (v < 0) v = 48; }
    return v ? (size_t)v << 20 : (size_t)-1;
}

/* Ring slots a warp of gemv_q8_tma_k: TERN_CUDA_TMA_SLOTS (2..8, default 2). */
static int q8_tma_slots(void) {
    static int v = -1;
    if (v < 0) { const char *e = getenv("TERN_CUDA_TMA_SLOTS"); v = e ? atoi(e) : 2; if (v < 2 || v > 8) v = 2; }
    return v;
}

/* gemv_q8_tma_k with R rows a unit: a chunk is 32*U blocks of a row (the largest U of 4, 2, 1 whose
 * TM_WARPS * P slots fit the budget, with 16-byte chunk sizes); returns 0 (nothing launched) when none
 * fits or the layout is not 16-byte aligned. */
/* NM = 1: with the RMSNorm prologue *np (tcu_gemv_dp4a_norm; q, ql, ds unused): the x16 row after the ring. */
template <int T, int R, int EPI = 0, int NM = 0>
static int q8_tma_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                         const int2 *ds, float *y, const tcu_rope_epi *epi, cudaStream_t st,
                         const tcu_norm_pro *np = NULL) {
    const int P = q8_tma_slots();
    int U = 4;
    for (; U >= 1; U >>= 1) {
        const size_t cbytes = (size_t)4 * U * q8_bytes8<T>();
        if (cbytes % 16 == 0 && (size_t)TM_WARPS * P * R * cbytes <= q8_tma_budget()) break;
    }
    if (U < 1 || stride % 16 || ((uintptr_t)w & 15) || n_out < 1 || nb < 1) return 0;
    const int cbytes = 4 * U * q8_bytes8<T>();
    const size_t xsb = NM ? (size_t)nb * 64 + (size_t)nb * 8 : 0; /* the prologue's x16 row (plane nb * 32) */
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, float *, int, int, int,
               tcu_rope_epi, tcu_norm_pro) = gemv_q8_tma_k<T, R, EPI, NM>;
    /* per device (tensor parallelism drives several GPUs): sm_90 or later, and the shared-memory opt-in set;
     * a device without them runs the warp kernel (the caller), whose bits are the same */
    static unsigned long long ok_dev = 0, no_dev = 0;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev > 63) return 0;
    const unsigned long long bit = 1ull << dev;
    if (__atomic_load_n(&no_dev, __ATOMIC_RELAXED) & bit) return 0;
    if (!(__atomic_load_n(&ok_dev, __ATOMIC_RELAXED) & bit)) {
        /* the code the device runs must come from sm_90 PTX or later (a compute_80 PTX build JIT-compiled on
         * Hopper would hold the __trap body); the opt-in covers the budget, which bounds every launch */
        int major = 0;
        cudaFuncAttributes fa;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 9 ||
            cudaFuncGetAttributes(&fa, kf) != cudaSuccess || fa.ptxVersion < 90 ||
            cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)(q8_tma_budget() + (NM ? (size_t)8192 * 2 + 8192 / 32 * 8 : 0))) != cudaSuccess) {
            (void)cudaGetLastError(); /* the fallback ran: no error left pending for the caller's check */
            __atomic_fetch_or(&no_dev, bit, __ATOMIC_RELAXED);
            return 0;
        }
        __atomic_fetch_or(&ok_dev, bit, __ATOMIC_RELAXED);
    }
    const int64_t groups = (n_out + R - 1) / R, sms = gemv_sms();
    tcu_norm_pro nz;
    memset(&nz, 0, sizeof nz);
    PDL_LAUNCH(kf, dim3((unsigned)(groups < sms ? groups : sms)), dim3(TM_T), (size_t)TM_WARPS * P * R * cbytes + xsb,
               st, w, stride, nb, n_out, q, ql, ds, y, 32 * U, cbytes, P, epi_arg(epi), np ? *np : nz);
    return 1;
}

/* Rows a unit of gemv_q8_tma_k: TERN_CUDA_TMA_ROWS (1, 2, 4; default 2), a smaller R when the slots do not
 * fit (the bits do not depend on R). R = 1 for q|k|v alone (whose 3072 row groups of 2 leave some warps 2
 * and others 1) lost: Q4_0 tg128 453.4 vs 468.9 (docs/ledger.md). */
static int q8_tma_rows(void) {
    static int v = -1;
    if (v < 0) { const char *e = getenv("TERN_CUDA_TMA_ROWS"); v = e ? atoi(e) : 2; if (v != 1 && v != 4) v = 2; }
    return v;
}

template <int T, int M, int R>
static void q8_multi_launch_r(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                              const int2 *ds, int m, float *y, cudaStream_t st) {
    static int per_sm = 0;
    void (*kf)(const uint8_t *, size_t, int, int, const int8_t *, const int8_t *, const int2 *, int, float *) =
        gemv_q8_multi_k<T, M, R>;
    if (!per_sm && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, Q8_T, 0) != cudaSuccess) per_sm = 4;
    const int64_t groups = ((int64_t)n_out + R - 1) / R, cap = (int64_t)gemv_sms() * (per_sm > 0 ? per_sm : 4);
    PDL_LAUNCH(kf, dim3((unsigned)(groups < cap ? groups : cap)), dim3(Q8_T), 0, st, w, stride, nb, n_out, q, ql, ds, m, y);
}
template <int T, int M>
static void q8_multi_launch(const uint8_t *w, size_t stride, int nb, int n_out, const int8_t *q, const int8_t *ql,
                            const int2 *ds, int m, float *y, cudaStream_t st) {
    switch (q8_multi_rows()) {
    case 1: q8_multi_launch_r<T, M, 1>(w, stride, nb, n_out, q, ql, ds, m, y, st); break;
    case 4: q8_multi_launch_r<T, M, 4>(w, stride, nb, n_out, q, ql, ds, m, y, st); break;
    default: q8_multi_launch_r<T, M, 2>(w, stride, nb, n_out, q, ql, ds, m, y, st); break;
    }
}

/* The family the rule gives a matrix of type T and this shape: TERN_CUDA_DP4A_KERNEL's when set, else
 * the per-shape rule: >= TERN_CUDA_TMA_MIN_MB (default 48) MiB with n_in <= 8192 take the tma kernel
 * (Llama-3-8B's gate and up, 33 MB each as separate matrices, are decided with their fused gate|up by the
 * caller, tcu_gemv_dp4a_fam), else the per-type default (q8_kernel). */
template <int T> static int q8_family(size_t stride, int64_t n_in, int64_t n_out) {
    if (!q8_forced() && (size_t)n_out * stride >= q8_tma_min() && n_in <= 8192) return 3;
    return q8_kernel<T>();
}

/* Returns 1 when the call ran gemv_q8_tma_k (the trace's count), else 0. With epi (m = 1): the RoPE + KV
 * epilogue in the family's kernel with an even number of rows a CTA or warp (the bits do not depend on
 * it): returns 1 when launched, -1 when the family's configuration has none (nothing launched). */
template <int T>
static int q8_dispatch(int fam, const uint8_t *w, size_t stride, int64_t n_in, int64_t n_out, const void *xq, int m,
                       float *y, const tcu_rope_epi *epi, cudaStream_t st) {
    const int nb = (int)(n_in / 32);
    const size_t pb = plane_bytes(m, n_in);
    const int8_t *q = (const int8_t *)xq, *ql = (const int8_t *)xq + pb;
    const int2 *ds = (const int2 *)((const char *)xq + 2 * pb);
    /* a family a caller fixed for the matrix (its bit pattern, one for its 1- and m-column calls), else the rule */
    const int kern = q8_forced() ? q8_kernel<T>() : fam >= 0 ? fam : q8_family<T>(stride, n_in, n_out);
    if (epi) { /* the defaults' shapes only (instantiated once each): R = 2 rows a CTA or warp */
        if (m != 1 || nb < 1) return -1;
        if (kern == 3) { /* R = 2 whatever TERN_CUDA_TMA_ROWS says: the bits do not depend on R */
            if (q8_tma_launch<T, 2, 1>(w, stride, nb, (int)n_out, q, ql, ds, y, epi, st)) return 1;
            q8_warp_launch<T, 2, 4, 1>(w, stride, nb, (int)n_out, q, ql, ds, y, epi, st); /* the same bits */
            return 1;
        }
        if (kern == 1 && q8_wcfg() == 24) {
            q8_warp_launch<T, 2, 4, 1>(w, stride, nb, (int)n_out, q, ql, ds, y, epi, st);
            return 1;
        }
        if (kern == 0 && q8_pipe() && !q8_smem() && q8_rows() == 2) {
            q8_launch<T, 2, 1>(w, stride, nb, (int)n_out, q, ql, ds, y, epi, st);
            return 1;
        }
        return -1; /* the other configurations (sweep arms), the async family */
    }
    if (kern == 2 && m == 1) {
        if constexpr (blk_bytes<T>::v != 0) { /* Q6_K (never async: q8_kernel) is not instantiated */
            const int rr = q8_wcfg() / 10; /* R of TERN_CUDA_DP4A_WCFG: 1, 2 or 4 */
            switch (rr * 10 + q8_stages()) {
            case 13: q8_async_launch<T, 1, 3>(w, stride, nb, (int)n_out, q, ql, ds, y, st); break;
            case 14: q8_async_launch<T, 1, 4>(w, stride, nb, (int)n_out, q, ql, ds, y, st); break;
            case 16: q8_async_launch<T, 1, 6>(w, stride, nb, (int)n_out, q, ql, ds, y, st); break;
            case 22: q8_async_launch<T, 2, 2>(w, stride, nb, (int)n_out, q, ql, ds, y, st); break;
            case 23: q8_async_launch<T, 2, 3>(w, stride, nb, (int)n_out, q, ql, ds, y, st); break;
            case 26: q8_async_launch<T, 2, 6>(w, stride, nb, (int)n_out, q, ql, ds, y, st); break;
            case 43: q8_async_launch<T, 4, 3>(w, stride, nb, (int)n_out, q, ql, ds, y, st); break;
            default: q8_async_launch<T, 2, 4>(w, stride, nb, (int)n_out, q, ql, ds, y, st); break;
            }
        }
        return 0;
    }
    if (kern == 3 && m == 1) { /* multi-column calls: the warp family's twin (the same bits) */
        const int cap = q8_tma_rows();
        if (cap >= 4 && q8_tma_launch<T, 4>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st)) return 1;
        if (cap >= 2 && q8_tma_launch<T, 2>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st)) return 1;
        if (q8_tma_launch<T, 1>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st)) return 1;
        q8_warp_launch<T, 2, 4>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); /* the same bits */
        return 0;
    }
    if (kern >= 1) {
        if (m == 1) {
            switch (q8_wcfg()) {
            case 14: q8_warp_launch<T, 1, 4>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); break;
            case 18: q8_warp_launch<T, 1, 8>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); break;
            case 22: q8_warp_launch<T, 2, 2>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); break;
            case 42: q8_warp_launch<T, 4, 2>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); break;
            default: q8_warp_launch<T, 2, 4>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); break;
            }
        } else if (m <= 2) q8_warp_multi_launch<T, 2>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
        else if (m <= 4) q8_warp_multi_launch<T, 4>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
        else if (m <= 8) q8_warp_multi_launch<T, 8>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
        else q8_warp_multi_launch<T, 16>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
        return 0;
    }
    if (m == 1) {
        switch (q8_rows()) {
        case 1: q8_launch<T, 1>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); break;
        case 2: q8_launch<T, 2>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); break;
        case 8: q8_launch<T, 8>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); break;
        default: q8_launch<T, 4>(w, stride, nb, (int)n_out, q, ql, ds, y, NULL, st); break;
        }
    } else if (m <= 2) q8_multi_launch<T, 2>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
    else if (m <= 4) q8_multi_launch<T, 4>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
    else if (m <= 8) q8_multi_launch<T, 8>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
    else q8_multi_launch<T, 16>(w, stride, nb, (int)n_out, q, ql, ds, m, y, st);
    return 0;
}

extern "C" int tcu_gemv_dp4a_family(int t, size_t row_bytes, int64_t n_in, int64_t n_out) {
    switch (t) {
    case TERN_TYPE_Q4_0: return q8_family<TERN_TYPE_Q4_0>(row_bytes, n_in, n_out);
    case TERN_TYPE_Q4_1: return q8_family<TERN_TYPE_Q4_1>(row_bytes, n_in, n_out);
    case TERN_TYPE_Q8_0: return q8_family<TERN_TYPE_Q8_0>(row_bytes, n_in, n_out);
    case TERN_TYPE_Q4_K: return q8_family<TERN_TYPE_Q4_K>(row_bytes, n_in, n_out);
    case TERN_TYPE_Q6_K: return q8_family<TERN_TYPE_Q6_K>(row_bytes, n_in, n_out);
    case TCU_TYPE_Q4_0R: return q8_family<TCU_TYPE_Q4_0R>(row_bytes, n_in, n_out);
    case TCU_TYPE_Q8_0R: return q8_family<TCU_TYPE_Q8_0R>(row_bytes, n_in, n_out);
    case TCU_TYPE_Q4_KR: return q8_family<TCU_TYPE_Q4_KR>(row_bytes, n_in, n_out);
    default: return -1;
    }
}

/* q8_dispatch for the weight type t (see there; e NULL: no epilogue). */
static int dp4a_call(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq,
                     int m, float *y, const tcu_rope_epi *e, cudaStream_t st) {
    if (m < 1 || m > TCU_MULTI_MAX) return e ? -1 : 0;
    const uint8_t *wb = (const uint8_t *)w;
    switch (t) {
    case TERN_TYPE_Q4_0: return q8_dispatch<TERN_TYPE_Q4_0>(fam, wb, row_bytes, n_in, n_out, xq, m, y, e, st);
    case TERN_TYPE_Q4_1: return q8_dispatch<TERN_TYPE_Q4_1>(fam, wb, row_bytes, n_in, n_out, xq, m, y, e, st);
    case TERN_TYPE_Q8_0: return q8_dispatch<TERN_TYPE_Q8_0>(fam, wb, row_bytes, n_in, n_out, xq, m, y, e, st);
    case TERN_TYPE_Q4_K: return q8_dispatch<TERN_TYPE_Q4_K>(fam, wb, row_bytes, n_in, n_out, xq, m, y, e, st);
    case TERN_TYPE_Q6_K: return q8_dispatch<TERN_TYPE_Q6_K>(fam, wb, row_bytes, n_in, n_out, xq, m, y, e, st);
    case TCU_TYPE_Q4_0R: return q8_dispatch<TCU_TYPE_Q4_0R>(fam, wb, row_bytes, n_in, n_out, xq, m, y, e, st);
    case TCU_TYPE_Q8_0R: return q8_dispatch<TCU_TYPE_Q8_0R>(fam, wb, row_bytes, n_in, n_out, xq, m, y, e, st);
    case TCU_TYPE_Q4_KR: return q8_dispatch<TCU_TYPE_Q4_KR>(fam, wb, row_bytes, n_in, n_out, xq, m, y, e, st);
    default: return e ? -1 : 0;
    }
}

extern "C" int tcu_gemv_dp4a_fam(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out,
                                 const void *xq, int m, float *y, cudaStream_t st) {
    return dp4a_call(fam, t, w, row_bytes, n_in, n_out, xq, m, y, NULL, st);
}

extern "C" int tcu_gemv_dp4a_rope(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out,
                                  const void *xq, float *y, const tcu_rope_epi *e, cudaStream_t st) {
    if (!e || !e->kc || !e->vc || e->hd < 2 || e->hd % 2 || e->nq % e->hd || e->nkv % e->hd || e->nkv < 1 ||
        n_out != (int64_t)e->nq + 2 * (int64_t)e->nkv)
        return 0;
    return dp4a_call(fam, t, w, row_bytes, n_in, n_out, xq, 1, y, e, st) == 1;
}

/* tcu.h: the tma kernel with the RMSNorm prologue (R = 2, as q8_dispatch's tma rows by default: the bits do
 * not depend on R). */
template <int T>
static int q8_norm_launch(int fam, const uint8_t *w, size_t stride, int nb, int n_out, const tcu_norm_pro *np, float *y,
                          cudaStream_t st) {
    /* the family q8_dispatch would take for this matrix: only the tma kernel has the prologue */
    const int kern = q8_forced() ? q8_kernel<T>() : fam >= 0 ? fam : q8_family<T>(stride, (int64_t)nb * 32, n_out);
    if (kern != 3) return 0;
    return q8_tma_launch<T, 2, 0, 1>(w, stride, nb, n_out, NULL, NULL, NULL, y, NULL, st, np);
}
extern "C" int tcu_gemv_dp4a_norm(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out,
                                  const tcu_norm_pro *np, float *y, cudaStream_t st) {
    if (!np || !np->x || !np->g || (np->r && !np->xo) || n_in % TM_T || n_in > 8192 || n_out < 1 || np->C < 1 ||
        np->C > 8 || np->C != tcu_rms_cluster_ctas((int)n_in))
        return 0;
    /* CTA 0 writes xo while every CTA reads x: they must not overlap (in place is the cluster kernel's only) */
    if (np->r && np->xo < np->x + n_in && np->x < np->xo + n_in) return 0;
    const uint8_t *wb = (const uint8_t *)w;
    const int nb = (int)(n_in / 32), no = (int)n_out;
    switch (t) {
    case TERN_TYPE_Q4_0: return q8_norm_launch<TERN_TYPE_Q4_0>(fam, wb, row_bytes, nb, no, np, y, st);
    case TERN_TYPE_Q4_1: return q8_norm_launch<TERN_TYPE_Q4_1>(fam, wb, row_bytes, nb, no, np, y, st);
    case TERN_TYPE_Q8_0: return q8_norm_launch<TERN_TYPE_Q8_0>(fam, wb, row_bytes, nb, no, np, y, st);
    case TERN_TYPE_Q4_K: return q8_norm_launch<TERN_TYPE_Q4_K>(fam, wb, row_bytes, nb, no, np, y, st);
    case TERN_TYPE_Q6_K: return q8_norm_launch<TERN_TYPE_Q6_K>(fam, wb, row_bytes, nb, no, np, y, st);
    case TCU_TYPE_Q4_0R: return q8_norm_launch<TCU_TYPE_Q4_0R>(fam, wb, row_bytes, nb, no, np, y, st);
    case TCU_TYPE_Q8_0R: return q8_norm_launch<TCU_TYPE_Q8_0R>(fam, wb, row_bytes, nb, no, np, y, st);
    case TCU_TYPE_Q4_KR: return q8_norm_launch<TCU_TYPE_Q4_KR>(fam, wb, row_bytes, nb, no, np, y, st);
    default: return 0;
    }
}

extern "C" void tcu_gemv_dp4a(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq, int m,
                            float *y, cudaStream_t st) {
    tcu_gemv_dp4a_fam(-1, t, w, row_bytes, n_in, n_out, xq, m, y, st);
}
