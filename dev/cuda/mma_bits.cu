/* dev/cuda/mma_bits.cu: does Hopper's mma.sync m16n8k16 (f16 in, f32 accumulator) give wgmma m64n8k16's bits?
 * A standalone probe (built by hand, not by the Makefile):
 *     nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o /tmp/mma_bits dev/cuda/mma_bits.cu && /tmp/mma_bits [CTAS]
 * The question behind it (issue 26, docs/ledger.md 2026-12-06 "does mma.sync give wgmma's bits"): the f16 order fixes
 * each output as one chain of wgmmas over K; a kernel for one to a few columns built on mma.sync (a warp's 16 rows an
 * independent chain, no warpgroup) may join that order only if the two instructions round alike. Each CTA (one
 * warpgroup) draws a 64 x K A and a K x 8 B in f16 and an f32 start C, then runs the same chain of K / 16 MMAs twice:
 * wgmma with A from registers (each warp's m16n8k16 A fragment, as gemm_hmma.cu) and B from shared memory in
 * gemm_hmma.cu's 128-byte-swizzled layout, and mma.sync with the same A registers and B fragments from that shared
 * memory. It prints the count of outputs whose bits differ, per value distribution (0: N(0,1); 1: exponents spread over
 * 2^-12..2^12; 2: products that cancel in pairs; 3: C large against the products), and the worst relative error of
 * each against a float64 sum (a layout mistake shows there as O(1)). */
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K 512 /* 4 steps of 128: 32 chained MMAs */
#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                                 \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static __device__ __forceinline__ uint64_t desc(uint32_t saddr) { /* wgmma.cuh wg_desc(saddr, 16, 1024) */
    return (uint64_t)((saddr & 0x3FFFF) >> 4) | (uint64_t)(16 >> 4) << 16 | (uint64_t)(1024 >> 4) << 32 |
           (uint64_t)1 << 62;
}

/* a: A (64 x K f16 row-major) per CTA; b: B as x columns (8 x K f16, column c's K values contiguous) per CTA; c0: start
 * (64 x 8 f32); outputs dw (wgmma) and dm (mma.sync), 64 x 8 f32 each per CTA */
__global__ void __launch_bounds__(128) probe_k(const __half *a, const __half *b, const float *c0, float *dw, float *dm) {
    __shared__ __align__(1024) uint8_t sm[2 * 8 * 128]; /* one 128-k step of 8 columns: two 64-k atoms */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const __half *A = a + (size_t)blockIdx.x * 64 * K;
    const __half *B = b + (size_t)blockIdx.x * 8 * K;
    const float *C = c0 + (size_t)blockIdx.x * 64 * 8;
    const int ra = 16 * warp + g, rb = ra + 8;
    float accw[4], accm[4];
    accw[0] = accm[0] = C[ra * 8 + 2 * t];
    accw[1] = accm[1] = C[ra * 8 + 2 * t + 1];
    accw[2] = accm[2] = C[rb * 8 + 2 * t];
    accw[3] = accm[3] = C[rb * 8 + 2 * t + 1];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(sm);
    for (int s = 0; s < K / 128; s++) {
        __syncthreads();
        { /* the step's x: thread (c0 = tid >> 4, piece q = tid & 15) as gemm_hw_k's dofs at NT 1 */
            const int q = tid & 15, c = tid >> 4;
            const uint32_t off = (uint32_t)((q >> 3) * (8 * 128) + c * 128 + (((q & 7) ^ (c & 7)) << 4));
            *(uint4 *)(sm + off) = *(const uint4 *)(B + (size_t)c * K + s * 128 + 8 * q);
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        for (int u = 0; u < 8; u++) {
            const int k0 = s * 128 + 16 * u;
            uint32_t af[4];
            __half2 h;
            h = __halves2half2(A[(size_t)ra * K + k0 + 2 * t], A[(size_t)ra * K + k0 + 2 * t + 1]);
            af[0] = *(uint32_t *)&h;
            h = __halves2half2(A[(size_t)rb * K + k0 + 2 * t], A[(size_t)rb * K + k0 + 2 * t + 1]);
            af[1] = *(uint32_t *)&h;
            h = __halves2half2(A[(size_t)ra * K + k0 + 2 * t + 8], A[(size_t)ra * K + k0 + 2 * t + 9]);
            af[2] = *(uint32_t *)&h;
            h = __halves2half2(A[(size_t)rb * K + k0 + 2 * t + 8], A[(size_t)rb * K + k0 + 2 * t + 9]);
            af[3] = *(uint32_t *)&h;
            /* wgmma: slab u at atom u >> 2, 32 (u & 3) bytes in (gemm_hw_k's descriptor offsets at NT 1) */
            const uint64_t db = desc(sbase) + (uint64_t)((((u >> 2) * (8 * 128)) + (u & 3) * 32) >> 4);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                         "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n}\n"
                         : "+f"(accw[0]), "+f"(accw[1]), "+f"(accw[2]), "+f"(accw[3])
                         : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "l"(db), "n"(1));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            for (int i = 0; i < 4; i++) asm volatile("" : "+f"(accw[i])::"memory");
            /* mma.sync: B fragment b0 = (k 2t, 2t+1; n g), b1 = (k 2t+8, 2t+9; n g) read from the same shared memory */
            uint32_t bf[2];
            for (int j = 0; j < 2; j++) {
                const int kk = 16 * (u & 3) + 2 * t + 8 * j;       /* k within the 64-k atom */
                const int chunk = kk >> 3, within = (kk & 7) * 2;   /* 16-byte chunk, byte in it */
                const uint32_t off = (uint32_t)((u >> 2) * (8 * 128) + g * 128 + (((chunk & 7) ^ (g & 7)) << 4) + within);
                bf[j] = *(const uint32_t *)(sm + off);
            }
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                         "{%0, %1, %2, %3};\n"
                         : "+f"(accm[0]), "+f"(accm[1]), "+f"(accm[2]), "+f"(accm[3])
                         : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(bf[0]), "r"(bf[1]));
        }
    }
    float *W = dw + (size_t)blockIdx.x * 64 * 8, *M = dm + (size_t)blockIdx.x * 64 * 8;
    W[ra * 8 + 2 * t] = accw[0];
    W[ra * 8 + 2 * t + 1] = accw[1];
    W[rb * 8 + 2 * t] = accw[2];
    W[rb * 8 + 2 * t + 1] = accw[3];
    M[ra * 8 + 2 * t] = accm[0];
    M[ra * 8 + 2 * t + 1] = accm[1];
    M[rb * 8 + 2 * t] = accm[2];
    M[rb * 8 + 2 * t + 1] = accm[3];
}

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static double urand(void) { /* xorshift64*, [0, 1) */
    rs ^= rs >> 12;
    rs ^= rs << 25;
    rs ^= rs >> 27;
    return (double)((rs * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}
static double nrand(void) { return sqrt(-2.0 * log(1.0 - urand())) * cos(6.283185307179586 * urand()); }

int main(int argc, char **argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 4096; /* CTAs a distribution */
    const size_t na = (size_t)n * 64 * K, nb = (size_t)n * 8 * K, nc = (size_t)n * 64 * 8;
    __half *ha = (__half *)malloc(na * 2), *hb = (__half *)malloc(nb * 2);
    float *hc = (float *)malloc(nc * 4), *hw = (float *)malloc(nc * 4), *hm = (float *)malloc(nc * 4);
    __half *da, *db;
    float *dc, *dw, *dm;
    CK(cudaMalloc((void **)&da, na * 2));
    CK(cudaMalloc((void **)&db, nb * 2));
    CK(cudaMalloc((void **)&dc, nc * 4));
    CK(cudaMalloc((void **)&dw, nc * 4));
    CK(cudaMalloc((void **)&dm, nc * 4));
    int bad_all = 0;
    for (int dist = 0; dist < 4; dist++) {
        for (size_t i = 0; i < na; i++) {
            double v = nrand();
            if (dist == 1) v = (urand() < 0.5 ? -1 : 1) * ldexp(1.0 + urand(), (int)(urand() * 25) - 12);
            if (dist == 2) { /* pairs k, k + 1 of a row: the same magnitude, the B side makes them cancel */
                v = (i & 1) ? __half2float(ha[i - 1]) : ldexp(1.0 + urand(), (int)(urand() * 9) - 4);
            }
            ha[i] = __float2half_rn((float)v);
        }
        for (size_t i = 0; i < nb; i++) {
            double v = nrand();
            if (dist == 1) v = (urand() < 0.5 ? -1 : 1) * ldexp(1.0 + urand(), (int)(urand() * 25) - 12);
            if (dist == 2) v = (i & 1) ? -__half2float(hb[i - 1]) * (1.0 + ldexp(urand(), -8)) : nrand();
            hb[i] = __float2half_rn((float)v);
        }
        for (size_t i = 0; i < nc; i++) hc[i] = dist == 3 ? (float)(nrand() * 4096.0) : (float)(0.01 * nrand());
        CK(cudaMemcpy(da, ha, na * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db, hb, nb * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dc, hc, nc * 4, cudaMemcpyHostToDevice));
        probe_k<<<n, 128>>>(da, db, dc, dw, dm);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(hw, dw, nc * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hm, dm, nc * 4, cudaMemcpyDeviceToHost));
        long bad = 0;
        double worst_w = 0, worst_m = 0;
        for (int cta = 0; cta < n; cta++)
            for (int r = 0; r < 64; r++)
                for (int c = 0; c < 8; c++) {
                    const size_t o = (size_t)cta * 512 + r * 8 + c;
                    if (memcmp(&hw[o], &hm[o], 4)) bad++;
                    if (cta >= 64) continue; /* the float64 check on the first 64 CTAs */
                    double ref = hc[o], mag = fabs(hc[o]);
                    for (int k = 0; k < K; k++) {
                        const double p = (double)__half2float(ha[(size_t)cta * 64 * K + (size_t)r * K + k]) *
                                         (double)__half2float(hb[(size_t)cta * 8 * K + (size_t)c * K + k]);
                        ref += p;
                        mag += fabs(p);
                    }
                    worst_w = fmax(worst_w, fabs(hw[o] - ref) / mag);
                    worst_m = fmax(worst_m, fabs(hm[o] - ref) / mag);
                }
        printf("dist %d: %ld of %zu outputs differ in bits (wgmma vs mma.sync); worst |err| / sum|terms| against "
               "float64: wgmma %.3g, mma.sync %.3g\n",
               dist, bad, nc, worst_w, worst_m);
        bad_all += bad != 0;
    }
    printf("%s\n", bad_all ? "DIFFER" : "SAME BITS");
    return 0;
}
