/* roofline.cu: the probes `tern roofline` (cli/roofline.c) calibrates the device's ceilings with
 * (shared/MEASURE.md "Before a kernel: the two ceilings"):
 *   read_stream_kernel  read-only stream: every byte read once with 16-byte loads, nothing written but one
 *                       word per warp (the xor that keeps the loads alive);
 *   copy_stream_kernel  dst = src with 16-byte loads and stores (bytes read + written);
 *   fill_random_kernel  splitmix64 bytes, never a zero 32-bit word (timing on zeros flatters compression
 *                       and hides unwritten outputs);
 *   fill_uniform_kernel finite f32/f16/bf16 values in [-1, 1) for the GEMM and GEMV operands (random bit
 *                       patterns can be NaN/Inf, which a matmul must not be timed on);
 *   boundary_kernel     one step of a chain of dependent kernels (tcu_boundary_chain), the latency floor of a
 *                       kernel boundary inside a CUDA graph, with and without programmatic dependent launch;
 *   barrier_kernel      the same steps inside one kernel, a grid barrier between them (tcu_barrier_chain): what a
 *                       persistent kernel pays a step instead.
 * Launch shape: a grid-stride loop over SMs x BLOCKS_PER_SM blocks of 256 threads. The stream kernels
 * keep UNROLL independent 16-byte loads in flight per thread before using any of them: the H200 needs
 * ~4.8 TB/s x ~0.7 us ≈ 3.4 MB in flight, and 132 SMs x 2048 threads x 8 x 16 B = 34 MB is ample even
 * at half occupancy. No CPU reference: the probes' outputs are checked by cli/roofline.c only for the
 * copy (dst == src spot check) — their job is bandwidth, not values. */
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/check.cuh"
#include "cuda/pdl.cuh"
#include "cuda/tcu.h"

#define RL_THREADS 256
#define RL_BLOCKS_PER_SM 8
#define RL_READ_UNROLL 8
#define RL_COPY_UNROLL 4

/* Blocks for a grid-stride launch over n items: enough to fill every SM, never more than the items need. */
static unsigned rl_blocks(size_t n_items) {
    static int sms = 0; /* one device per process in tern; read once */
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
            sms = 132; /* H100/H200 SXM; only the grid size depends on it */
    }
    size_t want = (n_items + RL_THREADS - 1) / RL_THREADS;
    size_t cap = (size_t)sms * RL_BLOCKS_PER_SM;
    if (want > cap) want = cap;
    return want ? (unsigned)want : 1u;
}

/* ---- read-only stream ------------------------------------------------------------------------ */

/* p (n) uint4; sink[0] ^= xor of every 32-bit word (one atomicXor per warp). */
__global__ void read_stream_kernel(const uint4 *__restrict__ p, size_t n, uint32_t *sink) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t acc = 0;
    for (; i + (RL_READ_UNROLL - 1) * stride < n; i += RL_READ_UNROLL * stride) {
        uint4 v[RL_READ_UNROLL];
#pragma unroll
        for (int k = 0; k < RL_READ_UNROLL; k++) v[k] = __ldcs(p + i + k * stride); /* streaming: evict first */
#pragma unroll
        for (int k = 0; k < RL_READ_UNROLL; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    for (; i < n; i += stride) {
        uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicXor(sink, acc);
}

extern "C" void tcu_read_stream(const void *buf, size_t bytes, uint32_t *sink, cudaStream_t st) {
    const size_t n = bytes / 16;
    cudaMemsetAsync(sink, 0, sizeof(uint32_t), st); /* sink = xor of this read only */
    read_stream_kernel<<<rl_blocks(n), RL_THREADS, 0, st>>>((const uint4 *)buf, n, sink);
    TCU_CHECK_LAUNCH(st);
}

/* ---- copy stream ----------------------------------------------------------------------------- */

__global__ void copy_stream_kernel(uint4 *__restrict__ dst, const uint4 *__restrict__ src, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (RL_COPY_UNROLL - 1) * stride < n; i += RL_COPY_UNROLL * stride) {
        uint4 v[RL_COPY_UNROLL];
#pragma unroll
        for (int k = 0; k < RL_COPY_UNROLL; k++) v[k] = __ldcs(src + i + k * stride);
#pragma unroll
        for (int k = 0; k < RL_COPY_UNROLL; k++) __stcs(dst + i + k * stride, v[k]);
    }
    for (; i < n; i += stride) __stcs(dst + i, __ldcs(src + i));
}

extern "C" void tcu_copy_stream(void *dst, const void *src, size_t bytes, cudaStream_t st) {
    const size_t n = bytes / 16;
    copy_stream_kernel<<<rl_blocks(n), RL_THREADS, 0, st>>>((uint4 *)dst, (const uint4 *)src, n);
    TCU_CHECK_LAUNCH(st);
}

/* ---- fills ----------------------------------------------------------------------------------- */

__device__ __forceinline__ uint64_t rl_splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Word i (8 bytes) = splitmix64(seed ^ i·φ); a zero 32-bit half becomes 1. Bytes past the last whole word
 * (tail < 8) take the low bytes of word n_words's value with zero bytes replaced by 0x5a. */
__global__ void fill_random_kernel(uint64_t *w, size_t n_words, unsigned char *tail, int n_tail, uint64_t seed) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const uint64_t key = rl_splitmix64(seed);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_words; i += stride) {
        uint64_t v = rl_splitmix64(key ^ (i * 0x9E3779B97F4A7C15ull));
        if (!(uint32_t)v) v |= 1u;
        if (!(v >> 32)) v |= 1ull << 32;
        w[i] = v;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0 && n_tail > 0) {
        uint64_t v = rl_splitmix64(key ^ (n_words * 0x9E3779B97F4A7C15ull));
        for (int b = 0; b < n_tail; b++) {
            unsigned char c = (unsigned char)(v >> (8 * b));
            tail[b] = c ? c : 0x5a;
        }
    }
}

extern "C" void tcu_fill_random(void *buf, size_t bytes, uint64_t seed, cudaStream_t st) {
    if (!bytes) return;
    if ((uintptr_t)buf % 8) { /* unaligned start (never for cudaMalloc pointers): head bytes by one thread */
        size_t head = 8 - (uintptr_t)buf % 8;
        if (head > bytes) head = bytes;
        fill_random_kernel<<<1, 1, 0, st>>>(NULL, 0, (unsigned char *)buf, (int)head, seed ^ 0x68656164ull);
        TCU_CHECK_LAUNCH(st);
        buf = (unsigned char *)buf + head;
        bytes -= head;
        if (!bytes) return;
    }
    const size_t n_words = bytes / 8;
    const int n_tail = (int)(bytes % 8);
    fill_random_kernel<<<rl_blocks(n_words), RL_THREADS, 0, st>>>((uint64_t *)buf, n_words,
                                                                  (unsigned char *)buf + n_words * 8, n_tail, seed);
    TCU_CHECK_LAUNCH(st);
}

/* x[i] = uniform in [-1, 1) from splitmix64(seed, i), stored as f32 / f16 / bf16 (round to nearest even). */
__global__ void fill_uniform_kernel(void *x, size_t n, int kind, uint64_t seed) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const uint64_t key = rl_splitmix64(seed);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const uint64_t r = rl_splitmix64(key ^ (i * 0x9E3779B97F4A7C15ull));
        const float v = (float)(r >> 40) * (2.0f / 16777216.0f) - 1.0f; /* 24 random bits: exact in f32 */
        if (kind == TCU_FILL_F16) ((uint16_t *)x)[i] = __half_as_ushort(__float2half_rn(v));
        else if (kind == TCU_FILL_BF16) ((uint16_t *)x)[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
        else ((float *)x)[i] = v;
    }
}

extern "C" void tcu_fill_uniform(void *x, size_t n, int kind, uint64_t seed, cudaStream_t st) {
    if (!n) return;
    fill_uniform_kernel<<<rl_blocks(n), RL_THREADS, 0, st>>>(x, n, kind, seed);
    TCU_CHECK_LAUNCH(st);
}

/* ---- kernel boundaries ------------------------------------------------------------------------
 * A step: thread 0 of CTA b writes dst[b] = src[(b + 1) % G] + 1, reading what another CTA wrote the step
 * before (so a step that started early, or a barrier that let a CTA through too soon, leaves a smaller number);
 * src and dst swap every step. Starting from a = b = 0, after k steps every word of the buffer step k-1 wrote
 * (b when k - 1 is even, else a) holds k. */

__global__ void boundary_kernel(const unsigned *__restrict__ src, unsigned *__restrict__ dst) {
    pdl_trigger(); /* as the decode kernels: the next launch may be scheduled at once ... */
    pdl_wait();    /* ... and this one reads only after the previous grid completed */
    if (threadIdx.x == 0) dst[blockIdx.x] = src[(blockIdx.x + 1) % gridDim.x] + 1u;
}

/* Grid barrier for a grid whose CTAs are all resident: arrive by a release add on *ctr, spin on an acquire
 * load until ctr reaches target (= step count x G: the counter is never reset inside the kernel). */
static __device__ __forceinline__ void rl_grid_barrier(unsigned *ctr, unsigned target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(ctr) : "memory");
        unsigned v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(ctr) : "memory");
        } while (v < target);
    }
    __syncthreads();
}

__global__ void barrier_kernel(unsigned *a, unsigned *b, unsigned *ctr, int k) {
    for (int i = 0; i < k; i++) {
        const unsigned *src = i & 1 ? b : a;
        unsigned *dst = i & 1 ? a : b;
        if (threadIdx.x == 0) dst[blockIdx.x] = ((volatile const unsigned *)src)[(blockIdx.x + 1) % gridDim.x] + 1u;
        rl_grid_barrier(ctr, (unsigned)(i + 1) * gridDim.x);
    }
}

extern "C" int tcu_boundary_chain(unsigned *a, unsigned *b, int k, int grid, int threads, int pdl, cudaStream_t st) {
    for (int i = 0; i < k; i++) {
        const unsigned *src = i & 1 ? b : a;
        unsigned *dst = i & 1 ? a : b;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3((unsigned)grid);
        cfg.blockDim = dim3((unsigned)threads);
        cfg.stream = st;
        cfg.attrs = at;
        cfg.numAttrs = pdl ? 1 : 0;
        if (cudaLaunchKernelEx(&cfg, boundary_kernel, src, dst) != cudaSuccess) return -1;
        TCU_CHECK_LAUNCH(st);
    }
    return 0;
}

extern "C" int tcu_barrier_chain(unsigned *a, unsigned *b, unsigned *ctr, int k, int grid, int threads, cudaStream_t st) {
    int dev = 0, sms = 0, occ = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, barrier_kernel, threads, 0) != cudaSuccess)
        return -1;
    if (grid > sms * occ) return -2; /* not all resident: the barrier would never open */
    if (cudaMemsetAsync(ctr, 0, sizeof(unsigned), st) != cudaSuccess) return -1;
    barrier_kernel<<<grid, threads, 0, st>>>(a, b, ctr, k);
    TCU_CHECK_LAUNCH(st);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
