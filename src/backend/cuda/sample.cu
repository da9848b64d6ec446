/* sample.cu: greedy argmax on the device, so a decode step copies back one token id, and the sampling chain.
 *
 * Argmax: the order "larger value, then lower index; NaN never; -0 ties with +0" makes the result equal
 * tern_argmax (src/runtime/sampler.c); all-NaN (or n = 0) gives 0. It is a total order, so it is one 64-bit key per
 * element, (order-preserving bits of the value) << 32 | (0xFFFFFFFF - index), and the argmax is the largest
 * key whatever the reduction order: a grid of CTAs reduces strided elements and each CTA atomicMax-es its
 * best key into a word of the caller's keys buffer (one a row), then one thread writes the index and clears
 * the word for the next call (calls with one buffer are in stream order: each context owns its buffer and
 * uses one stream; a device-wide word would race between contexts evaluated at once from two threads). It was one CTA of
 * 1024 threads over the 128,256 logits of Llama 3: 54 us a decode step (ncu). */
#include <math.h>

#include "cuda/check.cuh"
#include "cuda/pdl.cuh"
#include "cuda/tcu.h"

#define ARGMAX_THREADS 256


static __device__ __forceinline__ unsigned long long am_key(float v, int i) {
    if (isnan(v)) return 0ull;
    v = v == 0.0f ? 0.0f : v; /* -0 ties with +0 */
    uint32_t u = __float_as_uint(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* -inf -> 0x007FFFFF > 0 */
    return ((unsigned long long)u << 32) | (unsigned long long)(0xFFFFFFFFu - (uint32_t)i);
}

/* row blockIdx.y of x (rows ld floats apart) into keys[blockIdx.y] (0: no candidate yet; real keys are > 0): each thread
 * the best of its strided elements (four loads in flight an iteration), each warp's best by an xor butterfly, the CTA's
 * by warp 0 over the warps' (shared memory), one atomicMax a CTA. A warp an atomic had put 1,008 atomics on each row's
 * word at 64 rows (126 CTAs a row): 45 us for 64 x 128,256 logits, 0.7 TB/s (bench/gpu/s48-pdl64/tl-q40-64.md). */
__global__ void __launch_bounds__(ARGMAX_THREADS) argmax_k(const float *__restrict__ x, int n, size_t ld,
                                                          unsigned long long *keys) {
    __shared__ unsigned long long wb[ARGMAX_THREADS / 32];
    pdl_trigger();
    pdl_wait();
    x += (size_t)blockIdx.y * ld;
    unsigned long long best = 0ull;
    const int stride = (int)gridDim.x * ARGMAX_THREADS;
    int i = (int)blockIdx.x * ARGMAX_THREADS + (int)threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const float a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
        unsigned long long k = am_key(a, i);
        best = k > best ? k : best;
        k = am_key(b, i + stride);
        best = k > best ? k : best;
        k = am_key(c, i + 2 * stride);
        best = k > best ? k : best;
        k = am_key(d, i + 3 * stride);
        best = k > best ? k : best;
    }
    for (; i < n; i += stride) {
        const unsigned long long k = am_key(x[i], i);
        best = k > best ? k : best;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long k = __shfl_xor_sync(0xffffffffu, best, o);
        best = k > best ? k : best;
    }
    const int lane = (int)threadIdx.x & 31, w = (int)threadIdx.x >> 5;
    if (lane == 0) wb[w] = best;
    __syncthreads();
    if (w == 0) {
        best = lane < ARGMAX_THREADS / 32 ? wb[lane] : 0ull;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const unsigned long long k = __shfl_xor_sync(0xffffffffu, best, o);
            best = k > best ? k : best;
        }
        if (lane == 0 && best) atomicMax(&keys[blockIdx.y], best);
    }
}

__global__ void argmax_done_k(int32_t *out, int rows, unsigned long long *keys) {
    pdl_trigger();
    pdl_wait();
    const int r = threadIdx.x;
    if (r >= rows) return;
    const unsigned long long k = keys[r];
    out[r] = k ? (int32_t)(0xFFFFFFFFu - (uint32_t)(k & 0xFFFFFFFFull)) : 0;
    keys[r] = 0ull;
}

extern "C" void tcu_argmax_rows(const float *x, int n, int rows, size_t ld, int32_t *out, uint64_t *keys,
                                cudaStream_t st) {
    if (rows < 1 || rows > TCU_PASS_MAX || !keys) return;
    unsigned long long *k = (unsigned long long *)keys;
    /* ~4 elements a thread, at most ~1024 CTAs in all (a row of 128,256 logits: 126 CTAs alone, 16 a row at 64 rows) */
    int blocks = (n + ARGMAX_THREADS * 4 - 1) / (ARGMAX_THREADS * 4);
    const int cap = (1024 + rows - 1) / rows;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    PDL_LAUNCH(argmax_k, dim3(blocks, rows), dim3(ARGMAX_THREADS), 0, st, x, n, ld, k);
    PDL_LAUNCH(argmax_done_k, dim3(1), dim3(TCU_PASS_MAX), 0, st, out, rows, k); /* a thread a row */
}

extern "C" void tcu_argmax(const float *x, int n, int32_t *out, uint64_t *keys, cudaStream_t st) {
    tcu_argmax_rows(x, n, 1, (size_t)n, out, keys, st);
}

/* ---- the sampling chain on the device (tcu_sample) -----------------------------------------------
 * One CTA of 1024 threads, for temp > 0 and 0 < top_k <= TCU_SAMPLE_KMAX:
 *  1. copy the logits into scratch and apply the repeat penalty to the given distinct ids
 *     (v > 0 ? v / penalty : v * penalty, as sampler.c);
 *  2. top-k exactly as sampler.c's select_top_k: order = larger logit first, lower id on ties, NaN never:
 *     a radix select over the 32-bit order key finds the k-th key T, the ids with key < T are gathered,
 *     then the lowest ids with key == T fill the rest (a block-wide scan in id order);
 *  3. a bitonic sort of the k candidates by (key, id): the sorted list sampler.c builds;
 *  4. thread 0 runs top-p, min-p, temperature and the draw on that list with the same float/double
 *     operations and order as sampler.c (expf/logf are CUDA's; a 1-ulp difference to the host libm can
 *     only flip a draw that lands exactly on a bucket boundary).
 * u: the uniform draw in [0, 1) the host's sampler RNG produced (one per call, as on the CPU). */
#define SAMPLE_T 1024

static __device__ __forceinline__ uint32_t sample_key(float x) {
    x = x == 0.0f ? 0.0f : x; /* -0 ties with +0 */
    uint32_t u = __float_as_uint(x);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ~u; /* ascending key == descending logit */
}

static __device__ __forceinline__ double sample_w(float x, float mx, float t) {
    if (!isfinite(mx)) return x == mx ? 1.0 : 0.0;
    return (double)expf(__fdiv_rn(__fsub_rn(x, mx), t));
}

__global__ void __launch_bounds__(SAMPLE_T)
sample_k(const float *logits, int n, const int32_t *pen_ids, int n_pen, float penalty, int k, float top_p,
         float min_p, float temp, const double *u, float *scratch, int32_t *out) {
    __shared__ uint32_t hist[256];
    __shared__ uint32_t s_prefix, s_mask, s_need, s_count;
    __shared__ uint32_t ck[TCU_SAMPLE_KMAX];
    __shared__ int32_t cid[TCU_SAMPLE_KMAX];
    __shared__ int32_t wsum[SAMPLE_T / 32];
    const int tid = threadIdx.x;
    /* 1. penalised copy */
    for (int i = tid; i < n; i += SAMPLE_T) scratch[i] = logits[i];
    __syncthreads();
    for (int j = tid; j < n_pen; j += SAMPLE_T) { /* distinct ids: no two threads touch one entry */
        const int32_t t = pen_ids[j];
        if (t >= 0 && t < n) {
            const float v = scratch[t];
            scratch[t] = v > 0.0f ? __fdiv_rn(v, penalty) : __fmul_rn(v, penalty);
        }
    }
    __syncthreads();
    /* 2a. radix select: the k-th smallest key among non-NaN entries */
    if (tid == 0) { s_prefix = 0; s_mask = 0; s_need = (uint32_t)k; }
    __syncthreads();
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = tid; b < 256; b += SAMPLE_T) hist[b] = 0;
        __syncthreads();
        const uint32_t prefix = s_prefix, mask = s_mask;
        for (int i = tid; i < n; i += SAMPLE_T) {
            const float v = scratch[i];
            if (isnan(v)) continue;
            const uint32_t key = sample_key(v);
            if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 0xFF], 1u);
        }
        __syncthreads();
        if (tid == 0) {
            uint32_t need = s_need, acc = 0;
            int b = 0;
            for (; b < 256; b++) {
                if (acc + hist[b] >= need) break;
                acc += hist[b];
            }
            if (b == 256) b = 255; /* fewer than k non-NaN entries: every key is taken below */
            s_need = need - acc;
            s_prefix = prefix | ((uint32_t)b << shift);
            s_mask = mask | (0xFFu << shift);
        }
        __syncthreads();
    }
    const uint32_t T = s_prefix;
    /* 2b. gather key < T (unordered; the sort below orders them) */
    if (tid == 0) s_count = 0;
    __syncthreads();
    for (int i = tid; i < n; i += SAMPLE_T) {
        const float v = scratch[i];
        if (isnan(v)) continue;
        const uint32_t key = sample_key(v);
        if (key < T) {
            const uint32_t slot = atomicAdd(&s_count, 1u);
            if (slot < (uint32_t)k) { ck[slot] = key; cid[slot] = i; }
        }
    }
    __syncthreads();
    /* 2c. ties at T: the lowest ids first, scanning ids in ascending order */
    for (int base = 0; base < n; base += SAMPLE_T) {
        const uint32_t have = s_count;
        if (have >= (uint32_t)k) break; /* uniform: read after the barrier that ended the last round */
        const int i = base + tid;
        const int flag = i < n && !isnan(scratch[i]) && sample_key(scratch[i]) == T;
        const unsigned bal = __ballot_sync(0xffffffffu, flag);
        if ((tid & 31) == 0) wsum[tid >> 5] = __popc(bal);
        __syncthreads();
        if (tid == 0) {
            int run = 0;
            for (int w = 0; w < SAMPLE_T / 32; w++) { const int c = wsum[w]; wsum[w] = run; run += c; }
        }
        __syncthreads();
        if (flag) {
            const uint32_t pos = have + (uint32_t)wsum[tid >> 5] + (uint32_t)__popc(bal & ((1u << (tid & 31)) - 1u));
            if (pos < (uint32_t)k) { ck[pos] = T; cid[pos] = i; }
        }
        __syncthreads();
        if (tid == SAMPLE_T - 1) {
            const uint32_t c = have + (uint32_t)wsum[tid >> 5] + (uint32_t)__popc(bal);
            s_count = c < (uint32_t)k ? c : (uint32_t)k;
        }
        __syncthreads();
    }
    const int m = (int)(s_count < (uint32_t)k ? s_count : (uint32_t)k);
    /* 3. bitonic sort of TCU_SAMPLE_KMAX slots by (key, id); empty slots sort last */
    for (int i = tid; i < TCU_SAMPLE_KMAX; i += SAMPLE_T)
        if (i >= m) { ck[i] = 0xFFFFFFFFu; cid[i] = 0x7FFFFFFF; }
    __syncthreads();
    for (int size = 2; size <= TCU_SAMPLE_KMAX; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = tid; i < TCU_SAMPLE_KMAX; i += SAMPLE_T) {
                const int j = i ^ stride;
                if (j > i) {
                    const int up = (i & size) == 0;
                    const int gt = ck[i] > ck[j] || (ck[i] == ck[j] && cid[i] > cid[j]);
                    if (gt == up) {
                        const uint32_t tk = ck[i]; ck[i] = ck[j]; ck[j] = tk;
                        const int32_t ti = cid[i]; cid[i] = cid[j]; cid[j] = ti;
                    }
                }
            }
            __syncthreads();
        }
    /* 4. the rest of the chain, one thread, sampler.c's order of operations */
    if (tid != 0) return;
    if (m == 0) { out[0] = -1; return; }
    int cnt = m;
    const float mx = scratch[cid[0]];
    if (top_p < 1.0f && cnt > 1) {
        double z = 0.0;
        for (int i = 0; i < cnt; i++) z += sample_w(scratch[cid[i]], mx, 1.0f);
        const double target = (double)top_p * z;
        double acc = 0.0;
        int keep = cnt;
        for (int i = 0; i < cnt; i++) {
            acc += sample_w(scratch[cid[i]], mx, 1.0f);
            if (acc >= target) { keep = i + 1; break; }
        }
        cnt = keep;
    }
    if (min_p > 0.0f && cnt > 1) {
        const float thr = mx + logf(min_p);
        int keep = 1;
        while (keep < cnt && scratch[cid[keep]] >= thr) keep++;
        cnt = keep;
    }
    double z = 0.0;
    for (int i = 0; i < cnt; i++) z += sample_w(scratch[cid[i]], mx, temp);
    const double r = u[0] * z;
    double acc = 0.0;
    int last = 0;
    for (int i = 0; i < cnt; i++) {
        const double w = sample_w(scratch[cid[i]], mx, temp);
        if (w <= 0.0) continue;
        last = i;
        acc += w;
        if (r < acc) { out[0] = cid[i]; return; }
    }
    out[0] = cid[last];
}

extern "C" void tcu_sample(const float *logits, int n, const int32_t *pen_ids, int n_pen, float penalty, int k,
                           float top_p, float min_p, float temp, const double *u, float *scratch, int32_t *out,
                           cudaStream_t st) {
    sample_k<<<1, SAMPLE_T, 0, st>>>(logits, n, pen_ids, n_pen, penalty, k, top_p, min_p, temp, u, scratch, out);
    TCU_CHECK_LAUNCH(st);
}
