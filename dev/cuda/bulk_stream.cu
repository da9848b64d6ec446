/* dev/cuda/bulk_stream.cu: what the f16 order's weight stream (gemm_hmma.cu arm 10, gemm_hb_k) can reach with no
 * dequantization and no MMA: the same skeleton (a 128-thread CTA a 64-row tile, thread 0 bulk-copying a step's chunk
 * into one of NW shared-memory stages, completion on the stage's mbarrier, a CTA barrier a step, the stage refilled NW
 * steps ahead) with each step's work replaced by a spin of DELAY clock cycles and one 16-byte LDS a thread (xor'd into
 * a sink so the data is used). Swept: the chunk (bytes a copy), the stages, the CTAs (the K split's segments) and the
 * spin, at gate|up's bytes (Llama-3-8B Q4_0: 448 tiles x 32 steps x 4608 bytes, 66 MB), against an LDG read stream
 * (tern roofline's read_stream_kernel form) over the same bytes. Question (issue 26): is arm 10's ~2.3 TB/s at one
 * column its copies' pattern, or the step's work between them?
 *
 * Standalone: nvcc -O3 -Isrc/backend -gencode=arch=compute_90a,code=sm_90a -o /tmp/bulk_stream dev/cuda/bulk_stream.cu
 * (the mbarrier helpers are arm 10's own, cuda/wgmma.cuh)
 * Run: /tmp/bulk_stream (a table, one row a case: us a launch, TB/s). Buffers rotate over 16 copies (1 GB) so no
 * launch finds its bytes in L2; the bytes are random (never time on zeros). NOT BUILT by the Makefile. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/wgmma.cuh"

#define CK(x)                                                                                            \
    do {                                                                                                 \
        cudaError_t e_ = (x);                                                                            \
        if (e_ != cudaSuccess) {                                                                         \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                   \
            exit(1);                                                                                     \
        }                                                                                                \
    } while (0)

static __device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* grid (tiles, segments): CTA (b, z) streams steps [z*per, (z+1)*per) of tile b's chunks, tile b's bytes contiguous */
template <int NW>
__global__ void __launch_bounds__(128) bulk_k(const uint8_t *__restrict__ w, int nst, int cb, int delay,
                                              uint32_t *sink) {
    extern __shared__ __align__(128) uint8_t sm[];
    __shared__ __align__(8) uint64_t bar[NW];
    const int tid = (int)threadIdx.x;
    const int S = (int)gridDim.y, per = (nst + S - 1) / S, sb = (int)blockIdx.y * per;
    const int se = nst < sb + per ? nst : sb + per;
    const uint8_t *tb = w + (size_t)blockIdx.x * (size_t)nst * cb;
    const uint32_t base = (smem_u32(sm) + 127u) & ~127u;
    const uint8_t *gsm = sm + (base - smem_u32(sm));
    if (tid == 0) {
        for (int k = 0; k < NW; k++) wg_mbar_init(smem_u32(&bar[k]), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    auto issue = [&](int s, int k) {
        const uint32_t b = smem_u32(&bar[k]);
        wg_mbar_expect_tx(b, (uint32_t)cb);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                         base + (uint32_t)(k * cb)),
                     "l"(tb + (size_t)s * cb), "r"(cb), "r"(b)
                     : "memory");
    };
    if (tid == 0)
        for (int i = 0; i < NW && sb + i < se; i++) issue(sb + i, i);
    uint32_t acc = 0, ph = 0;
    int wk = 0;
    for (int s = sb; s < se; s++) {
        __syncthreads(); /* every thread past step s - 1's reads: its stage may be refilled */
        if (tid == 0 && s > sb && s - 1 + NW < se) issue(s - 1 + NW, wk == 0 ? NW - 1 : wk - 1);
        wg_mbar_wait(smem_u32(&bar[wk]), ph);
        const uint4 v = *(const uint4 *)(gsm + wk * cb + (16 * tid) % cb);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
        if (delay) {
            const long long t0 = clock64();
            while (clock64() - t0 < delay) {
            }
        }
        if (++wk == NW) { wk = 0; ph ^= 1u; }
    }
    if (acc == 0x9e3779b9u) sink[0] = acc; /* practically never; keeps the loads */
}

__global__ void ldg_k(const uint4 *__restrict__ p, size_t n, uint32_t *sink) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    uint32_t acc = 0;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 7 * stride < n; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = __ldcs(p + i + k * stride);
#pragma unroll
        for (int k = 0; k < 8; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    for (; i < n; i += stride) {
        const uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;
}

__global__ void fill_k(uint64_t *p, size_t n, uint64_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        p[i] = (z ^ (z >> 31)) | 0x0101010101010101ull;
    }
}

#define NBUF 16
static uint8_t *g_buf[NBUF];
static uint32_t *g_sink;

typedef void (*launch_fn)(int i, cudaStream_t st);
static int c_tiles, c_seg, c_nst, c_cb, c_delay, c_nw;
static size_t c_bytes;

static void run_bulk(int i, cudaStream_t st) {
    const dim3 grid((unsigned)c_tiles, (unsigned)c_seg);
    const size_t smem = (size_t)c_nw * c_cb + 128;
    switch (c_nw) {
    case 2: bulk_k<2><<<grid, 128, smem, st>>>(g_buf[i % NBUF], c_nst, c_cb, c_delay, g_sink); break;
    case 4: bulk_k<4><<<grid, 128, smem, st>>>(g_buf[i % NBUF], c_nst, c_cb, c_delay, g_sink); break;
    case 8: bulk_k<8><<<grid, 128, smem, st>>>(g_buf[i % NBUF], c_nst, c_cb, c_delay, g_sink); break;
    }
}
static int g_sms = 132;
static void run_ldg(int i, cudaStream_t st) {
    ldg_k<<<g_sms * 8, 256, 0, st>>>((const uint4 *)g_buf[i % NBUF], c_bytes / 16, g_sink);
}

static double time_us(launch_fn f, cudaStream_t st) {
    const int warm = 8, reps = 64;
    for (int i = 0; i < warm; i++) f(i, st);
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a, st));
    for (int i = 0; i < reps; i++) f(i, st);
    CK(cudaEventRecord(b, st));
    CK(cudaEventSynchronize(b));
    CK(cudaGetLastError());
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return 1000.0 * ms / reps;
}

int main(int argc, char **argv) {
    /* the matrix: ROWS x K of Q4_0 (default gate|up 28672 x 4096): 64-row tiles, 128-K steps of 4608 bytes */
    const int rows = argc > 1 ? atoi(argv[1]) : 28672, k = argc > 2 ? atoi(argv[2]) : 4096;
    const int tiles = rows / 64, steps = k / 128, step_b = 64 * 4 * 18;
    c_bytes = (size_t)tiles * steps * step_b;
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, 0));
    g_sms = pr.multiProcessorCount;
    printf("# %s, %d SMs; matrix %d x %d Q4_0: %d tiles x %d steps x %d bytes = %.1f MB\n", pr.name,
           pr.multiProcessorCount, rows, k, tiles, steps, step_b, c_bytes / 1e6);
    for (int i = 0; i < NBUF; i++) {
        CK(cudaMalloc(&g_buf[i], c_bytes + 4096));
        fill_k<<<1024, 256>>>((uint64_t *)g_buf[i], (c_bytes + 4096) / 8, 1234 + i);
    }
    CK(cudaMalloc(&g_sink, 64));
    CK(cudaFuncSetAttribute(bulk_k<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    CK(cudaFuncSetAttribute(bulk_k<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    CK(cudaFuncSetAttribute(bulk_k<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    CK(cudaDeviceSynchronize());
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    const double tl = time_us(run_ldg, st);
    printf("| form | chunk B | steps a tile | stages | segments | CTAs | spin cycles | us | TB/s |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    printf("| ldg stream (8 x %d CTAs of 256) | - | - | - | - | - | - | %.2f | %.3f |\n", pr.multiProcessorCount, tl,
           c_bytes / tl / 1e6);
    const int spins[] = {0, 400, 900, 1400};
    const int chunks[] = {1, 2, 4, 8}; /* steps a copy */
    const int nws[] = {2, 4, 8};
    const int segs[] = {1, 2, 4, 8};
    for (int ci = 0; ci < 4; ci++)
        for (int ni = 0; ni < 3; ni++)
            for (int gi = 0; gi < 4; gi++)
                for (int si = 0; si < 4; si++) {
                    c_cb = step_b * chunks[ci];
                    c_nst = steps / chunks[ci];
                    c_nw = nws[ni];
                    c_seg = segs[gi];
                    c_tiles = tiles;
                    if ((size_t)c_nw * c_cb + 128 > 200 * 1024 || c_nst / c_seg < 2) continue;
                    if (chunks[ci] > 1 && si != 0 && si != 2) continue;
                    /* the spin is a step's work: a copy of c steps carries c steps' spin */
                    c_delay = spins[si] * chunks[ci];
                    const double t = time_us(run_bulk, st);
                    printf("| bulk | %d | %d | %d | %d | %d | %d | %.2f | %.3f |\n", c_cb, c_nst, c_nw, c_seg,
                           c_tiles * c_seg, spins[si], t, c_bytes / t / 1e6);
                    fflush(stdout);
                }
    return 0;
}
