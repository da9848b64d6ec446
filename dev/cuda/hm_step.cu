/* dev/cuda/hm_step.cu: what one step of the f16 order's one-column GEMM costs (gemm_hmma.cu arm 10, gemm_hb_k<Q4_0T, 1, 2>),
 * piece by piece, with no weight stream: a 128-thread CTA runs NST steps of any subset of the step's work
 *   MMA  the step's 8 wgmma m64n8k16 (A from registers, x from shared memory) into one accumulator, one commit group,
 *        waited for (wait_group 0) at the next step's top, as arm 10 does;
 *   DEQ  the 8 A fragments dequantized from the step's Q4_0 words (gemm_hmma.cu hm_w2 / hm_afrag, copied below);
 *   LDS  those words and scales read from a shared-memory stage (the bulk copy's destination) at offsets that move with
 *        the step, where without it they come from registers (xor'd with the step, so nothing is hoisted);
 *   BAR  one CTA barrier a step (arm 10's, before its copies are issued);
 * at 1..8 CTAs an SM (grid 132 k). Thread 0 of CTA 0 reads clock64 around the loop: cycles a step of one CTA while k
 * share its SM. Question (issue 26): arm 10's step is ~1,400 cycles at one column of which ~890 outside the mbarrier
 * wait (ncu, docs/ledger.md 2026-12-05 "what bounds the f16 order at one column"), and dev/cuda/bulk_stream.cu's spin of
 * 900 cycles a step reproduces the engine's times (2026-12-07): which of the pieces are the 890, and how do they add up
 * when 3-4 CTAs share an SM (the grid of gate|up at one column: 448 CTAs)?
 *
 * Standalone: nvcc -O3 -std=c++17 -Isrc/backend -gencode=arch=compute_90a,code=sm_90a -o /tmp/hm_step dev/cuda/hm_step.cu
 * (ptxas must print no C7513 for the MMA forms: `-Xptxas -v` shows it). Run: /tmp/hm_step (a table, one row a case).
 * NOT BUILT by the Makefile. The bytes are random (never time on zeros); no weight leaves the SM. */
#include <cuda_fp16.h>
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

enum { M_MMA = 1, M_DEQ = 2, M_LDS = 4, M_BAR = 8 };

static __device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ uint32_t h2u(__half2 h) { return *reinterpret_cast<uint32_t *>(&h); }
static __device__ __forceinline__ __half2 u2h(uint32_t u) { return *reinterpret_cast<__half2 *>(&u); }

/* gemm_hmma.cu's hm_lop_or, hm_w2 and hm_afrag (Q4_0), operation for operation */
template <uint32_t M> static __device__ __forceinline__ uint32_t lop_or(uint32_t p) {
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(p), "n"(M), "n"(0x64006400));
    return r;
}
static __device__ __forceinline__ uint32_t w2(uint32_t p, int hi, __half2 d) {
    if (!hi) return h2u(__hmul2(__hsub2(u2h(lop_or<0x000F000Fu>(p)), __float2half2_rn(1032.0f)), d));
    return h2u(__hmul2(__hfma2(u2h(lop_or<0x00F000F0u>(p)), __float2half2_rn(0.0625f), __float2half2_rn(-72.0f)), d));
}
static __device__ __forceinline__ uint32_t word(const uint4 &q, int wi) {
    return wi == 0 ? q.x : wi == 1 ? q.y : wi == 2 ? q.z : q.w;
}
static __device__ __forceinline__ void afrag(uint4 qa, uint4 qb, __half2 da, __half2 db, int u, uint32_t (&a)[4]) {
    const int wi = u & 3, hi = u >> 2;
    const uint32_t wa = word(qa, wi), wb = word(qb, wi);
    a[0] = w2(wa, hi, da);
    a[1] = w2(wb, hi, db);
    a[2] = w2(wa >> 8, hi, da);
    a[3] = w2(wb >> 8, hi, db);
}
/* gemm_hmma.cu's hw_mma<1> */
static __device__ __forceinline__ void mma8(float (&d)[4], const uint32_t (&a)[4], uint64_t db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}

#define STG 4608 /* a Q4_0 tile step's chunk: 64 rows x 4 blocks x 16 quant bytes, then 64 x 4 f16 scales */
#define NSTG 8   /* stages the LDS form walks through (offsets move with the step; 36 KB) */

template <int MODE>
__global__ void __launch_bounds__(128) step_k(const uint8_t *__restrict__ wsrc, const __half *__restrict__ xsrc, int nst,
                                              float *out, long long *cyc) {
    extern __shared__ __align__(1024) uint8_t sm[];
    const uint32_t sbase = (smem_u32(sm) + 1023u) & ~1023u;
    uint8_t *xs = sm + (sbase - smem_u32(sm)); /* x: 8 columns x 128 k of f16, the 128-byte swizzle's 2 KB */
    uint8_t *ws = xs + 2048;                   /* NSTG weight stages */
    const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    for (int i = tid; i < 2048 / 16; i += 128) ((uint4 *)xs)[i] = ((const uint4 *)xsrc)[i];
    for (int i = tid; i < NSTG * STG / 16; i += 128) ((uint4 *)ws)[i] = ((const uint4 *)wsrc)[(blockIdx.x * 64 + i) % 65536];
    wg_fence_proxy();
    __syncthreads();
    const int rt = warp * 16 + g;
    const uint64_t desc0 = wg_desc(sbase, 16, 1024);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    uint32_t af[8][4];
    /* the register form's words: this thread's first stage's, then xor'd with the step */
    uint4 qa0 = *(const uint4 *)(ws + rt * 64 + 16 * t), qb0 = *(const uint4 *)(ws + (rt + 8) * 64 + 16 * t);
    uint16_t da0 = *(const uint16_t *)(ws + 4096 + rt * 8 + 2 * t), db0 = *(const uint16_t *)(ws + 4096 + (rt + 8) * 8 + 2 * t);
#pragma unroll
    for (int u = 0; u < 8; u++)
#pragma unroll
        for (int j = 0; j < 4; j++) af[u][j] = 0x3c003c00u ^ (uint32_t)(u * 4 + j + tid);
    uint32_t sink = 0;
    long long c0 = 0;
    if (tid == 0) c0 = clock64();
    for (int s = 0; s < nst; s++) {
        if (MODE & M_MMA) {
            wg_wait_mma_n<0>();
        }
        if (MODE & M_BAR) __syncthreads();
        if (MODE & M_DEQ) {
            uint4 qa, qb;
            uint16_t da, db;
            if (MODE & M_LDS) {
                const uint8_t *c = ws + (s % NSTG) * STG;
                qa = *(const uint4 *)(c + rt * 64 + 16 * t);
                qb = *(const uint4 *)(c + (rt + 8) * 64 + 16 * t);
                da = *(const uint16_t *)(c + 4096 + rt * 8 + 2 * t);
                db = *(const uint16_t *)(c + 4096 + (rt + 8) * 8 + 2 * t);
            } else {
                const uint32_t k = (uint32_t)s * 0x9E3779B9u;
                qa = make_uint4(qa0.x ^ k, qa0.y ^ k, qa0.z ^ k, qa0.w ^ k);
                qb = make_uint4(qb0.x ^ k, qb0.y ^ k, qb0.z ^ k, qb0.w ^ k);
                da = da0;
                db = db0 ^ (uint16_t)(s & 1);
            }
            const __half2 dha = __half2half2(__ushort_as_half(da)), dhb = __half2half2(__ushort_as_half(db));
#pragma unroll
            for (int u = 0; u < 8; u++) afrag(qa, qb, dha, dhb, u, af[u]);
        } else if (MODE & M_LDS) {
            const uint8_t *c = ws + (s % NSTG) * STG;
            const uint4 qa = *(const uint4 *)(c + rt * 64 + 16 * t);
            sink ^= qa.x ^ qa.w;
        }
        if (MODE & M_MMA) {
            wg_fence();
#pragma unroll
            for (int u = 0; u < 8; u++) mma8(acc, af[u], desc0 + (uint64_t)((((u >> 2) * 1024) + (u & 3) * 32) >> 4));
            wg_commit_mma();
        } else {
#pragma unroll
            for (int u = 0; u < 8; u++) sink ^= af[u][0] ^ af[u][1] ^ af[u][2] ^ af[u][3];
        }
    }
    if (MODE & M_MMA) {
        wg_wait_mma_n<0>();
        wg_touch(acc);
    }
    if (tid == 0 && blockIdx.x == 0) cyc[0] = clock64() - c0;
    out[blockIdx.x * 128 + tid] = acc[0] + acc[1] + acc[2] + acc[3] + (float)(sink & 1);
}

typedef void (*step_fn)(const uint8_t *, const __half *, int, float *, long long *);

int main(void) {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, 0));
    int clk = 0; /* kHz */
    CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
    const size_t wb = 65536 * 16;
    uint8_t *hw = (uint8_t *)malloc(wb);
    uint64_t z = 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < wb; i++) {
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        hw[i] = (uint8_t)z;
    }
    /* the stages' scale words: finite f16 (0x2000..0x23FF: small positive) so the MMAs see finite values */
    for (size_t i = 0; i + 1 < wb; i += 2)
        if ((i % STG) >= 4096) hw[i + 1] = 0x20 | (hw[i + 1] & 3);
    __half hx[1024];
    for (int i = 0; i < 1024; i++) hx[i] = __float2half((float)((i * 37) % 17 - 8) / 16.0f);
    uint8_t *dw;
    __half *dx;
    float *dout;
    long long *dcyc;
    CK(cudaMalloc(&dw, wb));
    CK(cudaMalloc(&dx, sizeof(hx)));
    CK(cudaMalloc(&dout, (size_t)sms * 8 * 128 * sizeof(float)));
    CK(cudaMalloc(&dcyc, sizeof(long long)));
    CK(cudaMemcpy(dw, hw, wb, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx, hx, sizeof(hx), cudaMemcpyHostToDevice));
    const size_t smem = 1024 + 2048 + NSTG * STG;
    struct { const char *name; int mode; step_fn f; } cs[] = {
        {"MMA", M_MMA, step_k<M_MMA>},
        {"DEQ (registers)", M_DEQ, step_k<M_DEQ>},
        {"LDS", M_LDS, step_k<M_LDS>},
        {"BAR", M_BAR, step_k<M_BAR>},
        {"DEQ+LDS", M_DEQ | M_LDS, step_k<M_DEQ | M_LDS>},
        {"MMA+DEQ", M_MMA | M_DEQ, step_k<M_MMA | M_DEQ>},
        {"MMA+DEQ+LDS", M_MMA | M_DEQ | M_LDS, step_k<M_MMA | M_DEQ | M_LDS>},
        {"MMA+DEQ+LDS+BAR (arm 10's step)", M_MMA | M_DEQ | M_LDS | M_BAR, step_k<M_MMA | M_DEQ | M_LDS | M_BAR>},
        {"MMA+BAR", M_MMA | M_BAR, step_k<M_MMA | M_BAR>},
    };
    const int ks[] = {1, 2, 3, 4, 8};
    const int nst = 512;
    printf("# %s, %d SMs, clock %d MHz; %d steps a CTA; cycles a step of CTA 0 (clock64), us a launch (best of 5)\n",
           pr.name, sms, clk / 1000, nst);
    printf("| step's work | CTAs an SM | cycles a step | us a launch |\n|---|---:|---:|---:|\n");
    for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
        CK(cudaFuncSetAttribute(cs[c].f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++) {
            const int grid = sms * ks[ki];
            float best = 1e30f;
            long long cyc = 0;
            for (int r = 0; r < 5; r++) {
                cudaEvent_t a, b;
                CK(cudaEventCreate(&a));
                CK(cudaEventCreate(&b));
                CK(cudaEventRecord(a));
                cs[c].f<<<grid, 128, smem>>>(dw, dx, nst, dout, dcyc);
                CK(cudaGetLastError());
                CK(cudaEventRecord(b));
                CK(cudaEventSynchronize(b));
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, a, b));
                if (ms < best) {
                    best = ms;
                    CK(cudaMemcpy(&cyc, dcyc, sizeof(cyc), cudaMemcpyDeviceToHost));
                }
                cudaEventDestroy(a);
                cudaEventDestroy(b);
            }
            printf("| %s | %d | %.0f | %.2f |\n", cs[c].name, ks[ki], (double)cyc / nst, best * 1000.0);
        }
    }
    return 0;
}
