/* dev/cuda/rms_probe.cu: the decode RMSNorm in the cluster's order (elementwise.cu rmsnorm_cl_k<0>; rms_cs: rmsnorm_cs_k, deleted 2026-12-07) at
 * 1..64 rows of 4096, against the same order with fewer threads a CTA: rms_cl<EPT> runs rmsnorm_cl_k's cluster of C = 8
 * CTAs a row, but each CTA has 512 / EPT threads and thread (w, lane) holds the elements of rmsnorm_cl_k's warps
 * w, w + 16 / EPT, ... (EPT of them): each original warp's xor butterfly, then warp 0's butterfly over the 16 warp sums,
 * operation for operation, so the same bits (checked below: xo and y16 memcmp'd against EPT = 1).
 * Question (issue 26): a B = 64 step's 65 RMSNorms take 6.04 us each against ~3 at B = 1..4 (bench/gpu/s48-pdl64
 * tl-q40-64.md, no PDL). 64 rows x 8 CTAs of 512 threads need 64 clusters of 8 resident at once for one wave; is the
 * B = 64 kernel two waves of clusters (cudaOccupancyMaxActiveClusters, printed) and do 256- or 128-thread CTAs (more
 * clusters resident, the same bits) take it back to ~3 us?
 *
 * Answer (H100, 2026-12-07, bench/gpu/s49-small/rms_probe.md): 62 clusters of 8 x 512 threads resident, 124 of 256 or
 * 128; every variant the same bytes; 64 rows 4.88 us (512) -> 3.56 (256) -> 3.27 (128); taken as elementwise.cu's
 * RMS_CL_EPT from 17 rows (docs/ledger.md 2026-12-07 "the decode pass's small kernels at the same bits").
 *
 * Standalone: nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o /tmp/rms_probe dev/cuda/rms_probe.cu
 * Run: /tmp/rms_probe (a table: variant, rows, us a launch in a captured graph of 65 launches, clusters resident).
 * NOT BUILT by the Makefile. Random inputs (never time on zeros). */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                            \
    do {                                                                                                 \
        cudaError_t e_ = (x);                                                                            \
        if (e_ != cudaSuccess) {                                                                         \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                   \
            exit(1);                                                                                     \
        }                                                                                                \
    } while (0)

#define C_MAX 8
#define DIM 4096

/* rmsnorm_cl_k<0>'s order with 512 / EPT threads a CTA (EPT = 1: rmsnorm_cl_k<0> itself, with y16 at the plain index) */
template <int EPT>
__global__ void __launch_bounds__(1024) rms_cl(const float *x, float *xo, const float *__restrict__ r,
                                              const float *__restrict__ g, float eps, int dim, uint16_t *__restrict__ y16) {
    __shared__ double red[32];
    __shared__ double part[C_MAX];
    const int t = (int)blockIdx.y, C = (int)gridDim.x, k = (int)blockIdx.x;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, NW = (int)(blockDim.x >> 5); /* NW = 16 / EPT warps here */
    const int T0 = (int)blockDim.x * EPT; /* rmsnorm_cl_k's threads a CTA (dim / C) */
    float gv[EPT], v[EPT];
    size_t idx[EPT];
#pragma unroll
    for (int j = 0; j < EPT; j++) {
        const int e = k * T0 + (w + j * NW) * 32 + lane; /* original warp w + j NW, the same lane */
        idx[j] = (size_t)t * dim + (size_t)e;
        gv[j] = g[e];
    }
    __cluster_barrier_arrive_relaxed();
#pragma unroll
    for (int j = 0; j < EPT; j++) v[j] = x[idx[j]];
#pragma unroll
    for (int j = 0; j < EPT; j++) {
        v[j] = __fadd_rn(v[j], r[idx[j]]);
        xo[idx[j]] = v[j];
    }
#pragma unroll
    for (int j = 0; j < EPT; j++) {
        double ss = (double)v[j] * (double)v[j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (lane == 0) red[w + j * NW] = ss;
    }
    __syncthreads();
    __cluster_barrier_wait();
    const int nw0 = T0 >> 5; /* the original warp count */
    if (w == 0) {
        double s = lane < nw0 ? red[lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane < C) *(double *)__cluster_map_shared_rank(&part[k], (unsigned)lane) = s;
    }
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
    double S = 0.0;
    for (int j = 0; j < C; j++) S += part[j];
    const float sc = (float)(1.0 / sqrt(S / dim + (double)eps));
#pragma unroll
    for (int j = 0; j < EPT; j++) {
        const float y = __fmul_rn(__fmul_rn(v[j], sc), gv[j]);
        y16[idx[j]] = __half_as_ushort(__float2half_rn(y));
    }
}

/* rmsnorm_cs_k (a CTA a row, T = dim / C threads, C slices a thread), y16 at the plain index */
__global__ void __launch_bounds__(1024) rms_cs(const float *x, float *xo, const float *__restrict__ r,
                                              const float *__restrict__ g, float eps, int dim, int C,
                                              uint16_t *__restrict__ y16) {
    __shared__ double red[C_MAX][32];
    __shared__ double part[C_MAX];
    const int T = (int)blockDim.x, tid = (int)threadIdx.x, lane = tid & 31, w = tid >> 5, nw = T >> 5;
    float gv[C_MAX], v[C_MAX];
#pragma unroll
    for (int k = 0; k < C_MAX; k++) gv[k] = k < C ? g[k * T + tid] : 0.0f;
    const size_t row = (size_t)blockIdx.x * dim + (size_t)tid;
#pragma unroll
    for (int k = 0; k < C_MAX; k++) v[k] = k < C ? x[row + (size_t)k * T] : 0.0f;
    float rv[C_MAX];
#pragma unroll
    for (int k = 0; k < C_MAX; k++) rv[k] = k < C ? r[row + (size_t)k * T] : 0.0f;
#pragma unroll
    for (int k = 0; k < C_MAX; k++)
        if (k < C) {
            v[k] = __fadd_rn(v[k], rv[k]);
            xo[row + (size_t)k * T] = v[k];
        }
#pragma unroll
    for (int k = 0; k < C_MAX; k++) {
        if (k >= C) break;
        double ss = (double)v[k] * (double)v[k];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (lane == 0) red[k][w] = ss;
    }
    __syncthreads();
    for (int k = w; k < C; k += nw) {
        double s = lane < nw ? red[k][lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) part[k] = s;
    }
    __syncthreads();
    double S = 0.0;
    for (int j = 0; j < C; j++) S += part[j];
    const float sc = (float)(1.0 / sqrt(S / dim + (double)eps));
#pragma unroll
    for (int k = 0; k < C_MAX; k++) {
        if (k >= C) break;
        const size_t i = row + (size_t)k * T;
        const float y = __fmul_rn(__fmul_rn(v[k], sc), gv[k]);
        y16[i] = __half_as_ushort(__float2half_rn(y));
    }
}

/* rmsnorm_cs_k's order with TPB = 512 or 1024 threads (thread tid: element i = tid % 512 of the slices k = tid / 512,
 * + TPB / 512, ...) and SPLIT = 1 or 2 CTAs a row (each reduces the whole row, CTA h writes slices [h C / 2, (h + 1)
 * C / 2)): the same per-slice butterflies and the same slice-order sum, so the same bits; y16 at the plain index */
template <int TPB, int SPLIT>
__global__ void __launch_bounds__(TPB) rms_cs2(const float *x, float *xo, const float *__restrict__ r,
                                              const float *__restrict__ g, float eps, int dim, uint16_t *__restrict__ y16) {
    constexpr int T0 = 512, G = TPB / T0, KS = C_MAX / G; /* slices a thread */
    __shared__ double red[C_MAX][32];
    __shared__ double part[C_MAX];
    const int tid = (int)threadIdx.x, i = tid % T0, k0 = tid / T0, lane = tid & 31, w = tid >> 5, wi = i >> 5;
    const int h = SPLIT > 1 ? (int)blockIdx.x : 0, t = (int)blockIdx.y;
    const size_t row = (size_t)t * dim + (size_t)i;
    float v[KS];
#pragma unroll
    for (int j = 0; j < KS; j++) v[j] = x[row + (size_t)(k0 + j * G) * T0];
#pragma unroll
    for (int j = 0; j < KS; j++) {
        const int k = k0 + j * G;
        v[j] = __fadd_rn(v[j], r[row + (size_t)k * T0]);
        if (SPLIT == 1 || k / (C_MAX / SPLIT) == h) xo[row + (size_t)k * T0] = v[j];
    }
#pragma unroll
    for (int j = 0; j < KS; j++) {
        double ss = (double)v[j] * (double)v[j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (lane == 0) red[k0 + j * G][wi] = ss;
    }
    __syncthreads();
    constexpr int NW = TPB / 32;
    for (int k = w; k < C_MAX; k += NW) {
        double s = lane < T0 / 32 ? red[k][lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) part[k] = s;
    }
    __syncthreads();
    double S = 0.0;
    for (int j = 0; j < C_MAX; j++) S += part[j];
    const float sc = (float)(1.0 / sqrt(S / dim + (double)eps));
#pragma unroll
    for (int j = 0; j < KS; j++) {
        const int k = k0 + j * G;
        if (SPLIT > 1 && k / (C_MAX / SPLIT) != h) continue;
        const size_t e = row + (size_t)k * T0;
        y16[e] = __half_as_ushort(__float2half_rn(__fmul_rn(__fmul_rn(v[j], sc), g[k * T0 + i])));
    }
}

typedef void (*cl_fn)(const float *, float *, const float *, const float *, float, int, uint16_t *);

static void launch_cl(cl_fn f, int ept, int n, const float *x, float *xo, const float *r, const float *g,
                      uint16_t *y16, cudaStream_t st) {
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = C_MAX;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(C_MAX, (unsigned)n);
    cfg.blockDim = dim3(DIM / C_MAX / ept);
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, f, x, xo, r, g, 1e-5f, DIM, y16));
}

static int clusters_resident(cl_fn f, int ept) {
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = C_MAX;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(C_MAX, 64);
    cfg.blockDim = dim3(DIM / C_MAX / ept);
    cfg.attrs = at;
    cfg.numAttrs = 1;
    int nc = -1;
    if (cudaOccupancyMaxActiveClusters(&nc, (void *)f, &cfg) != cudaSuccess) { (void)cudaGetLastError(); return -1; }
    return nc;
}

#define NVAR 8
static const char *vname[NVAR] = {"rms_cl<1> (rmsnorm_cl_k)", "rms_cl<2>", "rms_cl<4>", "rms_cs (rmsnorm_cs_k)",
                                  "rms_cs2<1024,1>", "rms_cs2<512,2>", "rms_cs2<1024,2>", "rms_cs2<512,1>"};
static void launch_v(int v, int n, const float *x, float *xo, const float *r, const float *g, uint16_t *y16,
                     cudaStream_t st) {
    switch (v) {
    case 0: launch_cl(rms_cl<1>, 1, n, x, xo, r, g, y16, st); break;
    case 1: launch_cl(rms_cl<2>, 2, n, x, xo, r, g, y16, st); break;
    case 2: launch_cl(rms_cl<4>, 4, n, x, xo, r, g, y16, st); break;
    case 3: rms_cs<<<n, DIM / C_MAX, 0, st>>>(x, xo, r, g, 1e-5f, DIM, C_MAX, y16); break;
    case 4: rms_cs2<1024, 1><<<dim3(1, n), 1024, 0, st>>>(x, xo, r, g, 1e-5f, DIM, y16); break;
    case 5: rms_cs2<512, 2><<<dim3(2, n), 512, 0, st>>>(x, xo, r, g, 1e-5f, DIM, y16); break;
    case 6: rms_cs2<1024, 2><<<dim3(2, n), 1024, 0, st>>>(x, xo, r, g, 1e-5f, DIM, y16); break;
    case 7: rms_cs2<512, 1><<<dim3(1, n), 512, 0, st>>>(x, xo, r, g, 1e-5f, DIM, y16); break;
    }
    CK(cudaGetLastError());
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* ~N(0, 1) by the sum of 4 uniforms */
    float s = 0.0f;
    for (int i = 0; i < 4; i++) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        s += (float)((rng >> 40) & 0xffffff) / 16777216.0f - 0.5f;
    }
    return s * 1.7320508f;
}

int main(void) {
    const int NMAX = 64, REP = 65, GR = 20;
    const size_t ne = (size_t)NMAX * DIM;
    float *hx = (float *)malloc(ne * 4), *hr = (float *)malloc(ne * 4), *hg = (float *)malloc(DIM * 4);
    for (size_t i = 0; i < ne; i++) { hx[i] = frand(); hr[i] = 0.25f * frand(); }
    for (int i = 0; i < DIM; i++) hg[i] = 1.0f + 0.1f * frand();
    float *x, *r, *g, *xo;
    uint16_t *y16;
    CK(cudaMalloc(&x, ne * 4)); CK(cudaMalloc(&r, ne * 4)); CK(cudaMalloc(&g, DIM * 4));
    CK(cudaMalloc(&xo, ne * 4)); CK(cudaMalloc(&y16, ne * 2));
    CK(cudaMemcpy(x, hx, ne * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r, hr, ne * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g, hg, DIM * 4, cudaMemcpyHostToDevice));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device %s, %d SMs\n", p.name, p.multiProcessorCount);
    const cl_fn fns[3] = {rms_cl<1>, rms_cl<2>, rms_cl<4>};
    const int epts[3] = {1, 2, 4};
    for (int v = 0; v < 3; v++)
        printf("rms_cl<%d> (%d threads a CTA): clusters of 8 resident at once %d\n", epts[v], 512 / epts[v],
               clusters_resident(fns[v], epts[v]));
    /* the bits: every variant's xo and y16 at n = 64 against rms_cl<1> */
    uint16_t *ref16 = (uint16_t *)malloc(ne * 2), *got16 = (uint16_t *)malloc(ne * 2);
    float *refo = (float *)malloc(ne * 4), *goto_ = (float *)malloc(ne * 4);
    int bad = 0;
    for (int v = 0; v < NVAR; v++) {
        CK(cudaMemset(y16, 0xff, ne * 2));
        CK(cudaMemset(xo, 0xff, ne * 4));
        launch_v(v, NMAX, x, xo, r, g, y16, 0);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(v ? got16 : ref16, y16, ne * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(v ? goto_ : refo, xo, ne * 4, cudaMemcpyDeviceToHost));
        if (v) {
            const int same = !memcmp(got16, ref16, ne * 2) && !memcmp(goto_, refo, ne * 4);
            printf("bits %s vs rms_cl<1>: %s\n", vname[v], same ? "same" : "DIFFER");
            bad += !same;
        }
    }
    { /* a value check of rms_cl<1> against double on the host: row 0..63, every element */
        double worst = 0.0;
        for (int t = 0; t < NMAX; t++) {
            double s = 0.0;
            for (int i = 0; i < DIM; i++) { const double a = (double)hx[t * DIM + i] + (double)hr[t * DIM + i]; s += a * a; }
            const double sc = 1.0 / sqrt(s / DIM + 1e-5);
            for (int i = 0; i < DIM; i++) {
                const double y = ((double)hx[t * DIM + i] + (double)hr[t * DIM + i]) * sc * hg[i];
                __half h; memcpy(&h, &ref16[t * DIM + i], 2);
                const double d = fabs((double)__half2float(h) - y) / (fabs(y) + 1e-3);
                if (d > worst) worst = d;
            }
        }
        printf("rms_cl<1> against float64: worst rel %.3e (f16 output)\n", worst);
        if (worst > 2e-3) bad++;
    }
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    printf("| variant | rows | us a launch (graph of %d) |\n|---|---:|---:|\n", REP);
    const int rows[5] = {1, 4, 16, 32, 64};
    for (int ri = 0; ri < 5; ri++)
        for (int v = 0; v < NVAR; v++) {
            const int n = rows[ri];
            cudaGraph_t gph;
            cudaGraphExec_t ex;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
            for (int i = 0; i < REP; i++) launch_v(v, n, x, xo, r, g, y16, st);
            CK(cudaStreamEndCapture(st, &gph));
            CK(cudaGraphInstantiate(&ex, gph, 0));
            CK(cudaGraphLaunch(ex, st));
            CK(cudaStreamSynchronize(st));
            float best = 1e30f;
            for (int k = 0; k < GR; k++) {
                CK(cudaEventRecord(e0, st));
                CK(cudaGraphLaunch(ex, st));
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (ms < best) best = ms;
            }
            printf("| %s | %d | %.2f |\n", vname[v], n, 1000.0f * best / REP);
            CK(cudaGraphExecDestroy(ex));
            CK(cudaGraphDestroy(gph));
        }
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
