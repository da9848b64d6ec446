/* elementwise.cu: RMSNorm, RoPE, KV-cache write, SwiGLU, residual add, bias add, f32->f16, position step.
 * Each matches its CPU reference in backend_cpu.c operation for operation where that is cheap (explicit
 * _rn intrinsics, so nvcc contracts nothing into an FMA): RMSNorm sums squares in double like
 * cpu_rmsnorm, RoPE evaluates its angle and cos/sin in double like cpu_rope. Checked by tests/gpu/gpu_ops.c. */
#include <cuda_fp16.h>

#include "cuda/check.cuh"
#include "cuda/kv.cuh"
#include "cuda/pdl.cuh"
#include "cuda/rope.cuh"
#include "cuda/tcu.h"
#include "cuda/x16.cuh"

/* programmatic dependent launch of the decode kernels (pdl.cuh): set by the backend on sm_90 and later (-4% a step
 * without it, docs/ledger.md "programmatic dependent launch + RMSNorm in registers") */
int g_tcu_pdl = 0;
extern "C" void tcu_set_pdl(int on) { g_tcu_pdl = on != 0; }
/* the f16 outputs (y16, g16, tcu_f32_to_f16) in the f16 order's layout (tcu_hm_pos): set by exec.c for each pass */
static int g_tcu_hm = 0;
extern "C" void tcu_set_hm_layout(int on) { g_tcu_hm = on != 0; }
/* where value i of an f16 output goes: row-major, or the f16 order's layout (hm) */
static __device__ __forceinline__ int64_t f16_at(int64_t i, int hm) { return hm ? tcu_hm_pos(i) : i; }

/* One CTA per row; sum of squares in double, fixed order (thread-strided partials, an xor-butterfly in each
 * warp, then the warps' sums by warp 0's butterfly: two barriers, where a shared-memory tree over 1024
 * partials took ten and 8.5 us a call in a decode step, ncu). With r,
 * the residual add x += r comes first (written back to x; the sum is over the new x). With xq (dim a
 * multiple of 32), the output is also written in the dp4a GEMV's x16 format: every warp holds 32
 * consecutive elements, one block, in each pass of the output loop. */
#define RMS_T 1024 /* one CTA per row: a decode step's RMSNorm is one CTA, so it is as wide as a CTA goes (256
                    * threads: 0.1-0.2 ms more per Llama-3-8B step, docs/ledger.md) */
#define RMS_EPT 8 /* elements a thread keeps in registers (dim <= RMS_EPT * RMS_T: every Llama-class width) */
/* Split (gridDim.y = C > 1, the fast path only, dim a multiple of 32 * C): C CTAs a row each compute the whole
 * row's sum of squares (the same loads and order: the same scale) and write only their slice of dim / C
 * elements, so a one-token RMSNorm's outputs are written by C SMs instead of one. x and xo are then distinct
 * buffers (a CTA must not overwrite x another CTA still reads); with C = 1 xo may equal x (in place). */
template <int RT, int EPT>
__global__ void __launch_bounds__(RT)
rmsnorm_k(const float *x, float *xo, /* no __restrict__: xo may be x (C = 1) */
          const float *__restrict__ r, const float *__restrict__ g, float eps,
          int dim, float *__restrict__ y32, uint16_t *__restrict__ y16, void *__restrict__ xq, size_t plane, int hm) {
    __shared__ double red[RT / 32];
    __shared__ float s_sc;
    pdl_trigger();
    pdl_wait();
    const int t = blockIdx.x, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int sw = dim / (int)gridDim.y, s0 = (int)blockIdx.y * sw, s1 = s0 + sw; /* this CTA's slice */
    const float *xr = x + (size_t)t * dim;
    float *xw = xo + (size_t)t * dim;
    const float *rr = r ? r + (size_t)t * dim : NULL;
    /* every load issued before the first use: x, r and g in registers (a loop that loads, adds and stores
     * element by element waits one memory latency per element a thread owns: 8.0 us a call, ncu) */
    const int fast = dim <= EPT * RT;
    float xv[EPT], gv[EPT];
    double ss = 0.0;
    if (fast) {
        float rv[EPT];
#pragma unroll
        for (int k = 0; k < EPT; k++) {
            const int i = threadIdx.x + k * RT;
            xv[k] = i < dim ? xr[i] : 0.0f;
            rv[k] = rr && i < dim ? rr[i] : 0.0f;
            gv[k] = i < dim ? g[i] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < EPT; k++) {
            const int i = threadIdx.x + k * RT;
            if (i < dim) {
                if (rr) {
                    xv[k] = __fadd_rn(xv[k], rv[k]);
                    if (i >= s0 && i < s1) xw[i] = xv[k];
                }
                ss += (double)xv[k] * (double)xv[k];
            }
        }
    } else if (rr) { /* C = 1 (the launcher): the new x goes to xw, read back below */
        for (int i = threadIdx.x; i < dim; i += blockDim.x) {
            const float v = __fadd_rn(xr[i], rr[i]);
            xw[i] = v;
            ss += (double)v * (double)v;
        }
    } else {
        for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += (double)xr[i] * (double)xr[i];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (lane == 0) red[w] = ss;
    __syncthreads();
    if (w == 0) {
        double v = lane < (int)(blockDim.x >> 5) ? red[lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) s_sc = (float)(1.0 / sqrt(v / dim + (double)eps));
    }
    __syncthreads();
    const float sc = s_sc;
    if (fast) {
#pragma unroll
        for (int k = 0; k < EPT; k++) {
            const int i = threadIdx.x + k * RT;
            if (i < dim && i >= s0 && i < s1) { /* warp-uniform when dim is a multiple of 32 (the x16 case) */
                const float v = __fmul_rn(__fmul_rn(xv[k], sc), gv[k]);
                if (y32) y32[(size_t)t * dim + i] = v;
                if (y16) y16[f16_at((int64_t)t * dim + i, hm)] = __half_as_ushort(__float2half_rn(v));
                if (xq) x16_put(v, lane, ((int64_t)t * dim + i) / 32, xq, plane);
            }
        }
        return;
    }
    const float *xn = rr ? (const float *)xw : xr; /* the slow path's x after the add */
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        const float v = __fmul_rn(__fmul_rn(xn[i], sc), g[i]);
        if (y32) y32[(size_t)t * dim + i] = v;
        if (y16) y16[f16_at((int64_t)t * dim + i, hm)] = __half_as_ushort(__float2half_rn(v));
        if (xq) x16_put(v, threadIdx.x & 31, ((int64_t)t * dim + i) / 32, xq, plane);
    }
}

/* ---- the decode RMSNorm over a thread-block cluster (sm_90; tcu_add_rmsnorm_to for n <= TCU_MULTI_MAX) ----
 * grid (C, n), cluster (C, 1, 1), C <= RMS_CL_MAX (8, the portable cluster size): CTA k of row t (its rank in
 * the cluster) has T = dim / C threads (a multiple of 32, <= 1024) and owns elements [k*T, (k+1)*T), one a
 * thread. Each CTA reduces its slice's sum of squares in double (an xor butterfly in each warp, then warp 0's
 * butterfly over the warps' sums); thread 0 stores that partial into slot k of every CTA of the cluster
 * (distributed shared memory), one cluster barrier (arrive.release / wait.acquire) publishes the C slots, and
 * every CTA sums them in slot order, so all C CTAs get the same scale. No CTA reads another's shared memory
 * after the barrier: none has to wait for the others before it exits.
 * Motive: rmsnorm_k's C CTAs each load and reduce the whole row (C x the loads and the double-precision work;
 * ncu 4.64 us a one-token call, 369 warp instructions a warp, docs/ledger.md). The summation order differs
 * from rmsnorm_k's (so does the last bit of the scale at times); it is the same for every row count of a
 * run (decode steps and verify chunks alike). x and xo may be the same buffer (each thread reads then writes
 * its own element). g is constant (a weight): loaded before the PDL wait. */
#define RMS_CL_MAX 8
/* Elements a thread of rmsnorm_cl_k (POST 0) in passes of RMS_CL_EPT_MIN rows or more: CTAs of dim / C / 2 threads (256
 * at dim 4096), each thread standing for two of the order's (the same bits). Why: an H100 holds 62 clusters of 8
 * 512-thread CTAs at once (cudaOccupancyMaxActiveClusters) and 124 of 256-thread ones, so 64 rows ran in two waves:
 * 4.88 -> 3.56 us a launch at 64 rows, 3.33 -> 2.99 at 32 (dev/cuda/rms_probe.cu, graphs of 65 launches), and a B = 64
 * decode step +1.1% (H100, synthetic Llama-3-8B Q4_0; docs/ledger.md 2026-12-07 "the decode pass's small kernels at
 * the same bits"). From 8 rows, where rmsnorm_cs_k (a CTA a row) ran in f16-order passes of 8..16 until 2026-12-07: the
 * 256-thread cluster kernel there instead, the f16 order B = 8 +4.0%, 12 +3.9%, 16 +3.4% (H100, two rounds; docs/ledger.md
 * 2026-12-07 "the cluster RMSNorm at 8..16 rows"). Below RMS_CL_EPT_MIN one element a thread: with two, one sequence's
 * tg128 (the GEMV order) lost 1.2% in one A/B and 0.1% in another, where the probe has one row 2.38 -> 2.32 us (not
 * understood). */
#define RMS_CL_EPT 2
#define RMS_CL_EPT_MIN 8
/* POST (Gemma's post-norms, tcu_add_rmsnorm_post_to): r is first normalised itself, r' = rmsnorm(r) * pg (its own cluster
 * reduction, the same double sum and scale as the second), then v = x + r'. Two reductions, each with its own slot
 * array: a CTA's round-2 stores can reach a peer that is still summing round 1's slots. */
template <int POST, int EPT>
__global__ void __launch_bounds__(1024)
rmsnorm_cl_k(const float *x, float *xo, const float *__restrict__ r, const float *__restrict__ g, float eps,
             int dim, float *__restrict__ y32, uint16_t *__restrict__ y16, void *__restrict__ xq, size_t plane,
             const float *__restrict__ pg, float peps, int hm) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    static_assert(!POST || EPT == 1, "Gemma's post-norms: one element a thread");
    __shared__ double red[32];
    __shared__ double part[RMS_CL_MAX];
    __shared__ double part0[POST ? RMS_CL_MAX : 1];
    const int t = (int)blockIdx.y, C = (int)gridDim.x, k = (int)blockIdx.x; /* gridDim.x == C: rank = blockIdx.x */
    /* EPT > 1: blockDim.x = T / EPT threads, thread (w, lane) standing for the warps w, w + NW, ... (NW = the CTA's
     * warps) of the order's T = dim / C threads: their elements, their butterflies, their slots of red */
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, NW = blockDim.x >> 5, nw = NW * EPT;
    float gv[EPT], pgv[EPT], v[EPT];
    const int e0 = k * nw * 32 + w * 32 + lane; /* this thread's element j of the row: e0 + 32 NW j */
    const size_t i0 = (size_t)t * dim + (size_t)e0;
#define ix(j) (i0 + (size_t)(32 * NW * (j)))
#pragma unroll
    for (int j = 0; j < EPT; j++) {
        gv[j] = g[e0 + 32 * NW * j];
        pgv[j] = POST ? pg[e0 + 32 * NW * j] : 0.0f;
    }
    /* every CTA of the cluster has started before any stores into another's shared memory (the programming
     * guide's rule for distributed shared memory): a relaxed arrive now, its wait before the remote stores */
    __cluster_barrier_arrive_relaxed();
    pdl_trigger();
    pdl_wait();
#pragma unroll
    for (int j = 0; j < EPT; j++) v[j] = x[ix(j)];
    if (POST) { /* r' = rmsnorm(r) * pg: round 1 (the entry arrive's wait is this round's) */
        const float rv = r[ix(0)];
        double s1 = (double)rv * (double)rv;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s1 += __shfl_xor_sync(0xffffffffu, s1, o);
        if (lane == 0) red[w] = s1;
        __syncthreads();
        __cluster_barrier_wait();
        if (w == 0) {
            double s = lane < nw ? red[lane] : 0.0;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane < C) *(double *)__cluster_map_shared_rank(&part0[k], (unsigned)lane) = s;
        }
        __cluster_barrier_arrive();
        __cluster_barrier_wait(); /* every slot of part0 stored; warp 0's reads of red done in every CTA */
        double S1 = 0.0;
        for (int j = 0; j < C; j++) S1 += part0[j];
        const float sc1 = (float)(1.0 / sqrt(S1 / dim + (double)peps));
        v[0] = __fadd_rn(v[0], __fmul_rn(__fmul_rn(rv, sc1), pgv[0]));
        xo[ix(0)] = v[0]; /* round 2 needs no entry barrier: every CTA is running, and warp 0's reads of red came before
                           * its arrive above, so the red stores below follow them (part and part0 are separate slots) */
    } else if (r) {
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            v[j] = __fadd_rn(v[j], r[ix(j)]);
            xo[ix(j)] = v[j];
        }
    }
#pragma unroll
    for (int j = 0; j < EPT; j++) {
        double ss = (double)v[j] * (double)v[j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (lane == 0) red[w + j * NW] = ss;
    }
    __syncthreads();
    if (!POST) __cluster_barrier_wait(); /* the entry arrive's: every CTA of the cluster is running */
    if (w == 0) {
        double s = lane < nw ? red[lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane < C) *(double *)__cluster_map_shared_rank(&part[k], (unsigned)lane) = s; /* slot k of CTA lane */
    }
    __cluster_barrier_arrive(); /* .release: the slot stores above are visible to every CTA after its wait */
    __cluster_barrier_wait();   /* .acquire */
    double S = 0.0;
    for (int j = 0; j < C; j++) S += part[j];
    const float sc = (float)(1.0 / sqrt(S / dim + (double)eps));
#pragma unroll
    for (int j = 0; j < EPT; j++) {
        const float y = __fmul_rn(__fmul_rn(v[j], sc), gv[j]);
        if (y32) y32[ix(j)] = y;
        if (y16) y16[f16_at((int64_t)ix(j), hm)] = __half_as_ushort(__float2half_rn(y));
        if (xq) x16_put(y, lane, (int64_t)(ix(j) / 32), xq, plane);
    }
#undef ix
#else
    (void)x; (void)xo; (void)r; (void)g; (void)eps; (void)dim; (void)y32; (void)y16; (void)xq; (void)plane; (void)pg;
    (void)peps; (void)hm;
    __trap(); /* never launched below sm_90 (rms_cl_ok) */
#endif
}

/* launches of rmsnorm_cl_k issued by this host thread (tcu_rms_cluster_count: the trace and the tests count what ran) */
static thread_local uint64_t g_rms_cl_launches;
extern "C" uint64_t tcu_rms_cluster_count(void) { return g_rms_cl_launches; }

/* CTAs a row of rmsnorm_cl_k for dim: the largest C <= RMS_CL_MAX with dim % (32 C) == 0 and dim / C <= 1024;
 * 0 when none (C = 1 is rmsnorm_k's case). */
static int rms_cl_ctas(int dim) {
    for (int c = RMS_CL_MAX; c >= 2; c--)
        if (dim % (32 * c) == 0 && dim / c <= 1024) return c;
    return 0;
}

/* rmsnorm_cl_k runs on this device: sm_90 or later and code from sm_90 PTX or later (a compute_80 PTX build
 * JIT-compiled on Hopper would hold the __trap body). Asked once per device (tensor parallelism drives several). */
static unsigned long long g_rms_cl_ok_dev = 0, g_rms_cl_no_dev = 0; /* bit d: device d can / cannot */
static int rms_cl_ok(void) {
    unsigned long long &ok_dev = g_rms_cl_ok_dev, &no_dev = g_rms_cl_no_dev;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev > 63) return 0;
    const unsigned long long bit = 1ull << dev;
    if (__atomic_load_n(&no_dev, __ATOMIC_RELAXED) & bit) return 0;
    if (__atomic_load_n(&ok_dev, __ATOMIC_RELAXED) & bit) return 1;
    int major = 0;
    cudaFuncAttributes fa;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 9 ||
        cudaFuncGetAttributes(&fa, rmsnorm_cl_k<0, 1>) != cudaSuccess || fa.ptxVersion < 90) {
        (void)cudaGetLastError();
        __atomic_fetch_or(&no_dev, bit, __ATOMIC_RELAXED);
        return 0;
    }
    __atomic_fetch_or(&ok_dev, bit, __ATOMIC_RELAXED);
    return 1;
}

/* rmsnorm_cl_k for n rows with C CTAs a row (the cluster attribute, and PDL's when g_tcu_pdl): 1 if launched. */
static int rms_cl_launch(const float *x, float *xo, const float *r, const float *g, float eps, int n, int dim, int C,
                         float *y32, uint16_t *y16, void *xq, size_t plane, const float *pg, float peps, cudaStream_t st) {
    cudaLaunchAttribute at[2];
    int na = 0;
    at[na].id = cudaLaunchAttributeClusterDimension;
    at[na].val.clusterDim.x = (unsigned)C;
    at[na].val.clusterDim.y = 1;
    at[na].val.clusterDim.z = 1;
    na++;
    if (g_tcu_pdl) {
        at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[na].val.programmaticStreamSerializationAllowed = 1;
        na++;
    }
    /* the order's dim / C elements a CTA on dim / C / ept threads (RMS_CL_EPT; Gemma's post-norms: one a thread) */
    const int ept = !pg && n >= RMS_CL_EPT_MIN && (dim / C) % (32 * RMS_CL_EPT) == 0 ? RMS_CL_EPT : 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)C, (unsigned)n);
    cfg.blockDim = dim3((unsigned)(dim / C / ept));
    cfg.dynamicSmemBytes = 0;
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = (unsigned)na;
    const cudaError_t le = pg ? cudaLaunchKernelEx(&cfg, rmsnorm_cl_k<1, 1>, x, xo, r, g, eps, dim, y32, y16, xq, plane, pg,
                                                   peps, g_tcu_hm)
                         : ept > 1 ? cudaLaunchKernelEx(&cfg, rmsnorm_cl_k<0, RMS_CL_EPT>, x, xo, r, g, eps, dim, y32, y16, xq,
                                                        plane, (const float *)NULL, 0.0f, g_tcu_hm)
                                   : cudaLaunchKernelEx(&cfg, rmsnorm_cl_k<0, 1>, x, xo, r, g, eps, dim, y32, y16, xq, plane,
                                                        (const float *)NULL, 0.0f, g_tcu_hm);
    if (le == cudaSuccess) TCU_CHECK_LAUNCH(st);
    if (le != cudaSuccess) {
        /* the caller runs rmsnorm_k instead, and so does every later call on this device (tcu_rms_cluster_ctas
         * then says 0): one summation order a device for decode steps and verify chunks alike */
        (void)cudaGetLastError();
        int dev = 0;
        if (cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < 64)
            __atomic_fetch_or(&g_rms_cl_no_dev, 1ull << dev, __ATOMIC_RELAXED);
        return 0;
    }
    g_rms_cl_launches++;
    return 1;
}

typedef void (*rms_fn)(const float *, float *, const float *, const float *, float, int, float *, uint16_t *, void *,
                       size_t, int);

extern "C" void tcu_rmsnorm(const float *x, const float *g, float eps, int n, int dim, float *y32, uint16_t *y16,
                            cudaStream_t st) {
    rms_fn kf = rmsnorm_k<RMS_T, RMS_EPT>;
    PDL_LAUNCH(kf, dim3(n), dim3(RMS_T), 0, st, x, (float *)x, (const float *)NULL, g, eps, dim, y32, y16,
               (void *)NULL, (size_t)0, g_tcu_hm);
}

extern "C" void tcu_add_rmsnorm(float *x, const float *r, const float *g, float eps, int n, int dim, float *y32,
                                uint16_t *y16, void *xq, cudaStream_t st) {
    if (dim % 32) xq = NULL; /* the caller then quantizes (tcu_quantize_x16 needs whole blocks too) */
    rms_fn kf = rmsnorm_k<RMS_T, RMS_EPT>;
    PDL_LAUNCH(kf, dim3(n), dim3(RMS_T), 0, st, (const float *)x, x, r, g, eps, dim, y32, y16, xq,
               x16_plane_bytes(n, dim), g_tcu_hm);
}

/* CTAs a row of rmsnorm_k for n <= TCU_MULTI_MAX where the cluster kernel does not run: 8, each reducing the whole
 * row and writing a slice (+3.4% Q4_0 tg128 over one CTA; 4..32 flat within the spread, docs/ledger.md "RMSNorm over
 * 8 CTAs a row"). 512- and 256-thread CTAs lost ("... the RMSNorm's CTA size (TERN_CUDA_RMS_T): LOST"). */
#define RMS_SPLIT 8

extern "C" int tcu_rms_cluster_ctas(int dim) {
    if (dim % 32) return 0;
    const int C = rms_cl_ctas(dim);
    return C && rms_cl_ok() ? C : 0;
}

extern "C" void tcu_add_rmsnorm_dec_to(const float *x, float *xo, const float *r, const float *g, float eps, int n,
                                       int dim, float *y32, uint16_t *y16, void *xq, int dec, cudaStream_t st) {
    if (dim % 32) xq = NULL;
    /* decode steps and verify chunks only (dec): a prefill chunk already has a CTA a row, and C of them a row would
     * each reload and reduce the whole row (pp512 25,823 -> 20,894 tok/s with C = 8 on every call) */
    const size_t pl = x16_plane_bytes(n, dim);
    if (dec) {
        const int C = rms_cl_ctas(dim);
        if (C && rms_cl_ok()) {
            if (rms_cl_launch(x, xo, r, g, eps, n, dim, C, y32, y16, xq, pl, NULL, 0.0f, st)) return;
        }
    }
    int c = dec ? RMS_SPLIT : 1;
    while (c > 1 && (dim > RMS_EPT * RMS_T || dim % (32 * c))) c >>= 1; /* whole blocks a slice; the fast path */
    rms_fn kf = rmsnorm_k<RMS_T, RMS_EPT>;
    PDL_LAUNCH(kf, dim3(n, c), dim3(RMS_T), 0, st, x, xo, r, g, eps, dim, y32, y16, xq, pl, g_tcu_hm);
}

extern "C" void tcu_add_rmsnorm_to(const float *x, float *xo, const float *r, const float *g, float eps, int n, int dim,
                                   float *y32, uint16_t *y16, void *xq, cudaStream_t st) {
    tcu_add_rmsnorm_dec_to(x, xo, r, g, eps, n, dim, y32, y16, xq, n <= TCU_MULTI_MAX, st);
}

/* tcu_add_rmsnorm_dec_to (dec = 1: a GEMV-path pass) with Gemma's post-norm of r folded in: xo = x + rmsnorm(r) * pg,
 * then the norm of xo, in one cluster launch (rmsnorm_cl_k<1>; the decode steps' two post-norm launches a layer
 * gone). Only where tcu_rms_cluster_ctas(dim) and n <= TCU_PASS_MAX (the caller checks: tcu_rms_post_fused); if the
 * launch fails anyway, r is normalised in place (tcu_rmsnorm_rows) and the unfused norm runs: the same values to
 * rounding. */
extern "C" int tcu_rms_post_fused(int n, int dim) { return n <= TCU_PASS_MAX && tcu_rms_cluster_ctas(dim) > 0; }

extern "C" void tcu_add_rmsnorm_post_to(const float *x, float *xo, float *r, const float *pg, float peps, const float *g,
                                        float eps, int n, int dim, float *y32, uint16_t *y16, void *xq, cudaStream_t st) {
    const int C = tcu_rms_post_fused(n, dim) ? rms_cl_ctas(dim) : 0;
    if (C && rms_cl_launch(x, xo, r, g, eps, n, dim, C, y32, y16, xq, x16_plane_bytes(n, dim), pg, peps, st)) return;
    tcu_rmsnorm_rows(r, pg, peps, n, dim, st);
    tcu_add_rmsnorm_dec_to(x, xo, r, g, eps, n, dim, y32, y16, xq, n <= TCU_PASS_MAX, st);
}

/* Thread per (token, pair i): one angle, applied to every head. neox: the pair (x[i], x[i + n_rot/2]). */
__global__ void rope_k(float *x, int n, int n_heads, int hd, int n_rot, int neox, float mscale, const int32_t *pos,
                       const float *freq) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, hr = n_rot / 2;
    if (i >= hr) return;
    const int e0 = neox ? i : 2 * i, e1 = neox ? i + hr : 2 * i + 1;
    for (int t = blockIdx.y; t < n; t += gridDim.y) { /* grid.y <= 65535 < the largest ubatch (65536) */
        float c, s;
        rope_cs(pos[t], freq[i], &c, &s);
        if (mscale != 1.0f) c = __fmul_rn(c, mscale), s = __fmul_rn(s, mscale);
        for (int h = 0; h < n_heads; h++) {
            float *v = x + ((size_t)t * n_heads + h) * hd;
            const float a = v[e0], b = v[e1];
            v[e0] = rope_first(a, b, c, s);
            v[e1] = rope_second(a, b, c, s);
        }
    }
}

extern "C" void tcu_rope(float *x, int n, int n_heads, int hd, int n_rot, int neox, float mscale, const int32_t *pos,
                         const float *freq, cudaStream_t st) {
    if (n <= 0 || n_rot < 2) return;
    dim3 grid((unsigned)((n_rot / 2 + 63) / 64), (unsigned)(n < 65535 ? n : 65535));
    rope_k<<<grid, 64, 0, st>>>(x, n, n_heads, hd, n_rot, neox, mscale, pos, freq);
    TCU_CHECK_LAUNCH(st);
}

/* RoPE on q and k and the KV-cache write in one kernel: thread per (token, head slot hh < nh + nkv, element
 * pair i < hd/2); slots < nh are query heads, the rest KV heads. Pairs below n_rot/2 rotate (rope_k's
 * operations: the angle and cos/sin in double per thread), the rest are copied; a KV-head thread then writes
 * its k and v pair to the cache (kv_write_k's conversion). Same bits as rope_k twice and kv_write_k. Was
 * thread per (token, pair) looping over the heads: for one token 64 threads in one CTA, 23 us a call (ncu,
 * Llama-3-8B decode step). */
/* Q8_0 of one 32-element block held as pairs by 16 consecutive lanes (lane & 15 = the pair's index in the
 * block), tern's Q8_0 rule (quant.c quantize_q8_32_scalar: d = amax/127 stored f16, q = round-half-even(x *
 * (127/amax)), saturated): q[0..1] and, from the block's first lane, the f16 scale. Called by whole warps. */
static __device__ __forceinline__ int q8_round(float v) {
    const float r = rintf(v);
    return r >= -128.0f && r <= 127.0f ? (int)r : (r > 127.0f ? 127 : -128); /* NaN: -128, as round_ne */
}
static __device__ __forceinline__ void q8_pair_put(float a, float b, int8_t *q, uint16_t *scale, int first) {
    float m = fmaxf(fabsf(a), fabsf(b));
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float d = __fdiv_rn(m, 127.0f), id = m != 0.0f ? __fdiv_rn(127.0f, m) : 0.0f;
    q[0] = (int8_t)q8_round(__fmul_rn(a, id));
    q[1] = (int8_t)q8_round(__fmul_rn(b, id));
    if (first) *scale = __half_as_ushort(__float2half_rn(d));
}

/* kq != NULL: the cache is Q8_0 (tcu.h tcu_rope_kv_q8): int8 planes kq, vq (n_rows, nkv*hd) and f16 scale planes
 * ks, vs (n_rows, nkv*hd/32); kc, vc unused. hd is then 64, 128 or 256, so a warp lies inside one head slot
 * and the KV-head branch is warp-uniform. Token t's K/V row goes to cache row slot[t] (its angle is pos[t]'s). */
/* NEOX = 1 (GGML's NEOX mode, HF's rotate_half: Qwen2/3, Gemma, Phi-3): pair i is (x[i], x[i + n_rot/2]); the
 * elements past n_rot are copied. A KV-head slot's rotated row then goes through shared memory so that each thread
 * writes the cache's adjacent pair (2i, 2i+1) as in the normal mode (the Q8_0 blocks are 32 adjacent elements).
 * mscale != 1 (YaRN's or LongRoPE's attention factor, table-less calls): cos and sin times mscale, as cpu_rope_ms.
 * qn, kn (head_dim each, or NULL): the per-head RMSNorm of q and k (Qwen3, Gemma 3; eps) first, fused: a head slot's
 * sum of squares by the warp's xor tree (offsets 1..16), then its warps' partials in order (hd 64, 128 or 256, so a
 * slot is whole warps; tcu_rope_kv takes norms only there). */
template <int NEOX>
__global__ void rope_kv_k(float *q, float *k, const float *v, int n, int nh, int nkv, int hd, int n_rot,
                          const int32_t *pos, const int32_t *slot, const float *freq, uint16_t *kc, uint16_t *vc,
                          int8_t *kq, uint16_t *ks, int8_t *vq, uint16_t *vs, const float2 *__restrict__ cs, float mscale,
                          const float *__restrict__ qn, const float *__restrict__ kn, float eps) {
    __shared__ float rowbuf[NEOX ? 512 : 1]; /* NEOX: the CTA's rotated rows, hpb * hd <= 2 * blockDim.x <= 512 */
    __shared__ float wss[8];                 /* the norm: each warp's sum of squares (<= 256 threads) */
    pdl_trigger();
    pdl_wait();
    const int half = hd / 2, hpb = blockDim.x / half; /* head slots per CTA */
    const int hh = blockIdx.x * hpb + (int)threadIdx.x / half, i = (int)threadIdx.x % half;
    const int live = (int)threadIdx.x < hpb * half && hh < nh + nkv;
    if (!NEOX && !qn && !live) return; /* NEOX or a norm: every thread reaches the barriers */
    const int row = nkv * hd, hr = n_rot / 2;
    /* the pair's elements: rotated (i, i + hr) or (2i, 2i + 1); copied past n_rot */
    const int e0 = NEOX ? (i < hr ? i : n_rot + 2 * (i - hr)) : 2 * i, e1 = NEOX ? (i < hr ? i + hr : e0 + 1) : 2 * i + 1;
    for (int t = blockIdx.y; t < n; t += gridDim.y) {
        float c = 1.0f, s = 0.0f;
        const int rot = i < hr;
        if (rot && live) {
            if (cs) { /* the pass's table (tcu_rope_table): rope_cs's values (times mscale there) */
                const float2 e = cs[(size_t)t * hr + i];
                c = e.x;
                s = e.y;
            } else {
                rope_cs(pos[t], freq[i], &c, &s);
                if (mscale != 1.0f) c = __fmul_rn(c, mscale), s = __fmul_rn(s, mscale);
            }
        }
        float *p = hh < nh ? q + ((size_t)t * nh + hh) * hd : k + ((size_t)t * nkv + (hh - nh)) * hd;
        float a = 0.0f, b = 0.0f;
        if (live) a = p[e0], b = p[e1];
        if (qn) { /* RMSNorm over the head: warp tree, then the slot's warps in order */
            float ss = __fadd_rn(__fmul_rn(a, a), __fmul_rn(b, b));
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) ss = __fadd_rn(ss, __shfl_xor_sync(0xffffffffu, ss, o));
            __syncthreads(); /* the previous token's reads of wss are done */
            if ((threadIdx.x & 31) == 0) wss[threadIdx.x >> 5] = ss;
            __syncthreads();
            const int w0 = ((int)threadIdx.x / half) * (half / 32);
            ss = wss[w0];
            for (int j = 1; j < half / 32; j++) ss = __fadd_rn(ss, wss[w0 + j]);
            const float sc = __fdiv_rn(1.0f, sqrtf(__fadd_rn(__fdiv_rn(ss, (float)hd), eps)));
            const float *wn = hh < nh ? qn : kn;
            if (live) a = __fmul_rn(__fmul_rn(a, sc), wn[e0]), b = __fmul_rn(__fmul_rn(b, sc), wn[e1]);
        }
        if (live) {
            if (qn) p[e0] = a, p[e1] = b; /* normalised, also where the pair does not rotate */
            if (rot) {
                const float a2 = rope_first(a, b, c, s);
                const float b2 = rope_second(a, b, c, s);
                a = a2;
                b = b2;
                p[e0] = a;
                p[e1] = b;
            }
        }
        if (NEOX) { /* the adjacent pair (2i, 2i + 1) of the rotated row, for the cache */
            float *rb = rowbuf + ((int)threadIdx.x / half) * hd;
            __syncthreads();
            if (live) rb[e0] = a, rb[e1] = b;
            __syncthreads();
            if (live) a = rb[2 * i], b = rb[2 * i + 1];
        }
        if (live && hh >= nh) {
            const int h = hh - nh;
            const size_t dst = (size_t)slot[t] * row + (size_t)h * hd + 2 * i, src = (size_t)t * row + (size_t)h * hd + 2 * i;
            if (kq) {
                const int first = (i & 15) == 0;
                q8_pair_put(a, b, kq + dst, ks + dst / 32, first);
                q8_pair_put(v[src], v[src + 1], vq + dst, vs + dst / 32, first);
                continue; /* NEOX: the next token's first barrier is reached by every thread */
            }
            kc[dst] = __half_as_ushort(__float2half_rn(a));
            kc[dst + 1] = __half_as_ushort(__float2half_rn(b));
            vc[dst] = __half_as_ushort(__float2half_rn(v[src]));
            vc[dst + 1] = __half_as_ushort(__float2half_rn(v[src + 1]));
        }
    }
}
typedef void (*rope_kv_fn)(float *, float *, const float *, int, int, int, int, int, const int32_t *, const int32_t *,
                           const float *, uint16_t *, uint16_t *, int8_t *, uint16_t *, int8_t *, uint16_t *,
                           const float2 *, float, const float *, const float *, float);

/* cs[t * (n_rot / 2) + i] = (cos, sin) of pos[t] * freq[i] as rope_cs rounds them, for n tokens: one thread a pair. */
__global__ void rope_table_k(const int32_t *__restrict__ pos, const float *__restrict__ freq, int n, int half,
                             float2 *__restrict__ cs, float mscale) {
    pdl_trigger();
    pdl_wait();
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n * half; j += gridDim.x * blockDim.x) {
        float c, s;
        rope_cs(pos[j / half], freq[j % half], &c, &s);
        if (mscale != 1.0f) c = __fmul_rn(c, mscale), s = __fmul_rn(s, mscale);
        cs[j] = make_float2(c, s);
    }
}

extern "C" void tcu_rope_table(const int32_t *pos, const float *freq, int n, int n_rot, float mscale, float *cs,
                               cudaStream_t st) {
    const int half = n_rot / 2, tot = n * half;
    if (tot <= 0) return;
    const int T = tot < 256 ? (tot + 31) / 32 * 32 : 256;
    PDL_LAUNCH(rope_table_k, dim3((unsigned)((tot + T - 1) / T)), dim3((unsigned)T), 0, st, pos, freq, n, half,
               (float2 *)cs, mscale);
}

extern "C" int tcu_rope_kv_norm_ok(int hd) { return hd == 64 || hd == 128 || hd == 256; }

extern "C" void tcu_rope_kv(float *q, float *k, const float *v, int n, int nh, int nkv, int hd, int n_rot, int neox,
                            float mscale, const int32_t *pos, const int32_t *slot, const float *freq, const float *cs,
                            const float *qn, const float *kn, float eps, uint16_t *kc, uint16_t *vc, cudaStream_t st) {
    if (n <= 0 || (neox && hd > 256) || (qn && !tcu_rope_kv_norm_ok(hd))) return;
    const int half = hd / 2, hpb = half >= 256 ? 1 : 256 / half; /* ~256 threads a CTA */
    dim3 grid((unsigned)((nh + nkv + hpb - 1) / hpb), (unsigned)(n < 65535 ? n : 65535));
    const rope_kv_fn kf = neox ? rope_kv_k<1> : rope_kv_k<0>;
    PDL_LAUNCH(kf, grid, dim3(hpb * half), 0, st, q, k, v, n, nh, nkv, hd, n_rot, pos, slot, freq, kc, vc,
               (int8_t *)NULL, (uint16_t *)NULL, (int8_t *)NULL, (uint16_t *)NULL, (const float2 *)cs, mscale, qn, kn,
               eps);
}

extern "C" void tcu_rope_kv_q8(float *q, float *k, const float *v, int n, int nh, int nkv, int hd, int n_rot, int neox,
                               float mscale, const int32_t *pos, const int32_t *slot, const float *freq, const float *cs,
                               const float *qn, const float *kn, float eps, int8_t *kq, uint16_t *ks, int8_t *vq,
                               uint16_t *vs, cudaStream_t st) {
    if (n <= 0 || (hd != 64 && hd != 128 && hd != 256)) return;
    const int half = hd / 2, hpb = half >= 256 ? 1 : 256 / half;
    dim3 grid((unsigned)((nh + nkv + hpb - 1) / hpb), (unsigned)(n < 65535 ? n : 65535));
    const rope_kv_fn kf = neox ? rope_kv_k<1> : rope_kv_k<0>;
    PDL_LAUNCH(kf, grid, dim3(hpb * half), 0, st, q, k, v, n, nh, nkv, hd, n_rot, pos, slot, freq, (uint16_t *)NULL,
               (uint16_t *)NULL, kq, ks, vq, vs, (const float2 *)cs, mscale, qn, kn, eps);
}

/* out (rows, row) f16 = a sequence's Q8_0 cache rows dequantized (q * f32(scale), rounded to f16), logical row j
 * read from physical row kv_row(bt, lbs, j): the prefill attention's contiguous input when the cache is Q8_0. */
__global__ void kv_dequant_q8_k(const int8_t *__restrict__ q, const uint16_t *__restrict__ s,
                                const int32_t *__restrict__ bt, int lbs, int rows, int row, uint16_t *__restrict__ out) {
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= row) return;
    for (int j = blockIdx.y; j < rows; j += gridDim.y) { /* grid.y <= 65535 */
        const size_t src = (size_t)kv_row(bt, lbs, j) * row + e;
        out[(size_t)j * row + e] =
            __half_as_ushort(__float2half_rn(__fmul_rn((float)q[src], __half2float(__ushort_as_half(s[src / 32])))));
    }
}

extern "C" void tcu_kv_dequant_q8(const int8_t *q, const uint16_t *s, const int32_t *bt, int lbs, int rows, int row,
                                  uint16_t *out, cudaStream_t st) {
    if (rows <= 0 || row <= 0) return;
    const dim3 grid((unsigned)((row + 255) / 256), (unsigned)(rows < 65535 ? rows : 65535));
    kv_dequant_q8_k<<<grid, 256, 0, st>>>(q, s, bt, lbs, rows, row, out);
    TCU_CHECK_LAUNCH(st);
}

__global__ void kv_write_k(const float *k, const float *v, uint16_t *kc, uint16_t *vc, int n, int row,
                           const int32_t *slot) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= row) return;
    for (int t = blockIdx.y; t < n; t += gridDim.y) { /* grid.y <= 65535 < the largest ubatch (65536) */
        const size_t dst = (size_t)slot[t] * row + j, src = (size_t)t * row + j;
        kc[dst] = __half_as_ushort(__float2half_rn(k[src]));
        vc[dst] = __half_as_ushort(__float2half_rn(v[src]));
    }
}

extern "C" void tcu_kv_write(const float *k, const float *v, uint16_t *kc, uint16_t *vc, int n, int row,
                             const int32_t *slot, cudaStream_t st) {
    if (n <= 0) return;
    dim3 grid((unsigned)((row + 255) / 256), (unsigned)(n < 65535 ? n : 65535));
    kv_write_k<<<grid, 256, 0, st>>>(k, v, kc, vc, n, row, slot);
    TCU_CHECK_LAUNCH(st);
}

/* The gate's activation: ACT 0 SiLU (SwiGLU, Shazeer 2020), 1 GELU in its tanh form (GeGLU; Hendrycks & Gimpel
 * 2016), as cpu_swiglu and cpu_geglu. */
template <int ACT> static __device__ __forceinline__ float glu_act(float a) {
    if (ACT == 0) return __fdiv_rn(a, __fadd_rn(1.0f, expf(-a)));
    const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
    const float in = __fmul_rn(c, __fadd_rn(a, __fmul_rn(__fmul_rn(__fmul_rn(0.044715f, a), a), a)));
    return __fmul_rn(__fmul_rn(0.5f, a), __fadd_rn(1.0f, tanhf(in)));
}

/* With xq (n a multiple of 32, rows of a multiple of 32): the output also in the x16 format (a warp holds
 * one 32-element block in every pass: the stride is a multiple of 32). */
/* W32 0 (tcu_glu_f16): g is input only, the f16 output alone is written. */
template <int ACT, int W32>
__global__ void swiglu_k(float *g, const float *u, int64_t n, uint16_t *g16, void *xq, size_t plane, int hm) {
    pdl_trigger();
    pdl_wait();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float a = g[i];
        const float v = __fmul_rn(glu_act<ACT>(a), u[i]);
        if (W32) g[i] = v;
        if (g16) g16[f16_at(i, hm)] = __half_as_ushort(__float2half_rn(v));
        if (xq) x16_put(v, threadIdx.x & 31, i / 32, xq, plane);
    }
}

static unsigned ew_grid(int64_t n) {
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

typedef void (*glu_fn)(float *, const float *, int64_t, uint16_t *, void *, size_t, int);
extern "C" void tcu_glu(int act, float *g, const float *u, int64_t n, uint16_t *g16, cudaStream_t st) {
    const glu_fn kf = act ? swiglu_k<1, 1> : swiglu_k<0, 1>;
    PDL_LAUNCH(kf, dim3(ew_grid(n)), dim3(256), 0, st, g, u, n, g16, (void *)NULL, (size_t)0, g_tcu_hm);
}

/* tcu_glu_f16's kernel where n, g, u and g16 allow it: four consecutive elements a thread (16-byte loads of g and u),
 * each by swiglu_k's operations (so the same bits), their f16 bits stored as two 32-bit words: elements 4q + j, j =
 * 0..3, share tcu_hm_pos's slab u and block t, so they sit at p, p + 8, p + 1, p + 9 (p = tcu_hm_pos(4q)) under the
 * f16 order's layout and at 4q..4q+3 without it. Motive: swiglu_k took 5.9 us of a B = 64 step's layer for ~9 MB
 * (bench/gpu/s48-pdl64 tl-q40-64.md), one element, two 4-byte loads and a 2-byte store a thread. */
template <int ACT>
__global__ void swiglu_f16v_k(const float *__restrict__ g, const float *__restrict__ u, int64_t n4,
                              uint16_t *__restrict__ g16, int hm) {
    pdl_trigger();
    pdl_wait();
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n4; q += (int64_t)gridDim.x * blockDim.x) {
        const float4 a = ((const float4 *)g)[q], b = ((const float4 *)u)[q];
        const uint32_t h0 = __half_as_ushort(__float2half_rn(__fmul_rn(glu_act<ACT>(a.x), b.x)));
        const uint32_t h1 = __half_as_ushort(__float2half_rn(__fmul_rn(glu_act<ACT>(a.y), b.y)));
        const uint32_t h2 = __half_as_ushort(__float2half_rn(__fmul_rn(glu_act<ACT>(a.z), b.z)));
        const uint32_t h3 = __half_as_ushort(__float2half_rn(__fmul_rn(glu_act<ACT>(a.w), b.w)));
        if (hm) {
            const int64_t p = tcu_hm_pos(4 * q);
            *(uint32_t *)(g16 + p) = h0 | h2 << 16;
            *(uint32_t *)(g16 + p + 8) = h1 | h3 << 16;
        } else {
            *(uint2 *)(g16 + 4 * q) = make_uint2(h0 | h1 << 16, h2 | h3 << 16);
        }
    }
}

extern "C" void tcu_glu_f16(int act, const float *g, const float *u, int64_t n, uint16_t *g16, cudaStream_t st) {
    if (n % 4 == 0 && ((uintptr_t)g | (uintptr_t)u) % 16 == 0 && (uintptr_t)g16 % 8 == 0) {
        const int64_t n4 = n / 4;
        void (*kv)(const float *, const float *, int64_t, uint16_t *, int) = act ? swiglu_f16v_k<1> : swiglu_f16v_k<0>;
        PDL_LAUNCH(kv, dim3(ew_grid(n4)), dim3(256), 0, st, g, u, n4, g16, g_tcu_hm);
        return;
    }
    const glu_fn kf = act ? swiglu_k<1, 0> : swiglu_k<0, 0>;
    PDL_LAUNCH(kf, dim3(ew_grid(n)), dim3(256), 0, st, (float *)g, u, n, g16, (void *)NULL, (size_t)0, g_tcu_hm);
}

extern "C" void tcu_glu_x16(int act, float *g, const float *u, int rows, int dim, void *xq, cudaStream_t st) {
    const int64_t n = (int64_t)rows * dim;
    const glu_fn kf = act ? swiglu_k<1, 1> : swiglu_k<0, 1>;
    PDL_LAUNCH(kf, dim3(ew_grid(n)), dim3(256), 0, st, g, u, n, (uint16_t *)NULL, xq, x16_plane_bytes(rows, dim), 0);
}

/* The fused gate|up GEMM's rows (rows, 2 * dim: gate then up) to g16 (rows, dim) f16: swiglu_k's operations on
 * each pair, the same f16 bits as tcu_swiglu's g16 on the two halves. */
template <int ACT>
__global__ void swiglu_rows_k(const float *__restrict__ gu, int64_t rows, int dim, uint16_t *__restrict__ g16) {
    pdl_trigger();
    pdl_wait();
    const int64_t n = rows * dim;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = i / dim, c = i % dim;
        const float a = gu[t * 2 * dim + c];
        const float v = __fmul_rn(glu_act<ACT>(a), gu[t * 2 * dim + dim + c]);
        g16[i] = __half_as_ushort(__float2half_rn(v));
    }
}

extern "C" void tcu_glu_rows(int act, const float *gu, int rows, int dim, uint16_t *g16, cudaStream_t st) {
    const int64_t n = (int64_t)rows * dim;
    void (*kf)(const float *, int64_t, int, uint16_t *) = act ? swiglu_rows_k<1> : swiglu_rows_k<0>;
    PDL_LAUNCH(kf, dim3(ew_grid(n)), dim3(256), 0, st, gu, (int64_t)rows, dim, g16);
}

/* ---- the recipe rows' small ops (issue "the families people run") ---- */

/* x (rows, dim) in place: RMSNorm of each row times w (dim), eps: a CTA a row (a block's output before its residual
 * add, Gemma's post-norms; the per-head q/k norm of Qwen3 and Gemma 3 with rows = tokens x heads, dim = head_dim).
 * The sum of squares in f32, each thread's strided elements in order, then a fixed tree: the bits do not depend on
 * the number of rows (batch invariance). CPU reference: cpu_rmsnorm (double sum). */
__global__ void rmsnorm_rows_k(float *__restrict__ x, const float *__restrict__ w, float eps, int dim) {
    __shared__ float red[32];
    pdl_trigger();
    pdl_wait();
    float *xr = x + (size_t)blockIdx.x * dim;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) ss = __fmaf_rn(xr[i], xr[i], ss);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) red[0] = v;
    }
    __syncthreads();
    const float s = __fdiv_rn(1.0f, sqrtf(__fadd_rn(__fdiv_rn(red[0], (float)dim), eps)));
    for (int i = threadIdx.x; i < dim; i += blockDim.x) xr[i] = __fmul_rn(__fmul_rn(xr[i], s), w[i]);
}

extern "C" void tcu_rmsnorm_rows(float *x, const float *w, float eps, int rows, int dim, cudaStream_t st) {
    if (rows <= 0 || dim <= 0) return;
    const int T = dim >= 1024 ? 256 : dim >= 256 ? 128 : dim >= 96 ? 64 : 32;
    for (int r0 = 0; r0 < rows; r0 += 65535 * 32) { /* grid.x < 2^31; rows a launch bounded for the int math */
        const int nr = rows - r0 < 65535 * 32 ? rows - r0 : 65535 * 32;
        PDL_LAUNCH(rmsnorm_rows_k, dim3((unsigned)nr), dim3((unsigned)T), 0, st, x + (size_t)r0 * dim, w, eps, dim);
    }
}

/* q (n, dim) row t times 1 + f ln(floor(pos[t] / fl) + 1) (the attention temperature of Llama 4 / Mistral 3, in
 * cpu_attn_temp's types: the floor in f32, the log and the affine map in double, rounded to f32). */
__global__ void attn_temp_k(float *__restrict__ q, int n, int dim, const int32_t *__restrict__ pos, float f, int fl) {
    pdl_trigger();
    pdl_wait();
    for (int t = blockIdx.y; t < n; t += gridDim.y) {
        const float s = (float)__dadd_rn(__dmul_rn(log(__dadd_rn((double)floorf(__fdiv_rn((float)pos[t], (float)fl)), 1.0)),
                                                   (double)f), 1.0); /* no FMA: the CPU's separate multiply and add */
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < dim; i += gridDim.x * blockDim.x)
            q[(size_t)t * dim + i] = __fmul_rn(q[(size_t)t * dim + i], s);
    }
}
extern "C" void tcu_attn_temp(float *q, int n, int dim, const int32_t *pos, float f, int floor_scale, cudaStream_t st) {
    if (n <= 0 || dim <= 0 || floor_scale <= 0) return;
    PDL_LAUNCH(attn_temp_k, dim3((unsigned)((dim + 255) / 256), (unsigned)(n < 65535 ? n : 65535)), dim3(256), 0, st, q, n,
               dim, pos, f, floor_scale);
}

/* x *= f, n elements (the embedding scale of Gemma: sqrt(n_embd)); x = f * tanh(x / f) (final logit soft-capping). */
__global__ void scale_k(float *x, int64_t n, float f) {
    pdl_trigger();
    pdl_wait();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        x[i] = __fmul_rn(x[i], f);
}
__global__ void softcap_k(float *x, int64_t n, float f) {
    pdl_trigger();
    pdl_wait();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        x[i] = __fmul_rn(f, tanhf(__fdiv_rn(x[i], f)));
}
extern "C" void tcu_scale(float *x, int64_t n, float f, cudaStream_t st) {
    if (n <= 0) return;
    PDL_LAUNCH(scale_k, dim3(ew_grid(n)), dim3(256), 0, st, x, n, f);
}
extern "C" void tcu_softcap(float *x, int64_t n, float f, cudaStream_t st) {
    if (n <= 0) return;
    PDL_LAUNCH(softcap_k, dim3(ew_grid(n)), dim3(256), 0, st, x, n, f);
}

__global__ void add_k(float *y, const float *x, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fadd_rn(y[i], x[i]);
}

extern "C" void tcu_add(float *y, const float *x, int64_t n, cudaStream_t st) {
    add_k<<<ew_grid(n), 256, 0, st>>>(y, x, n);
    TCU_CHECK_LAUNCH(st);
}

__global__ void add_bias_k(float *y, const float *b, int n, int dim) {
    const int64_t tot = (int64_t)n * dim;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < tot; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fadd_rn(y[i], b[i % dim]);
}

extern "C" void tcu_add_bias(float *y, const float *b, int n, int dim, cudaStream_t st) {
    add_bias_k<<<ew_grid((int64_t)n * dim), 256, 0, st>>>(y, b, n, dim);
    TCU_CHECK_LAUNCH(st);
}

__global__ void f32_to_f16_k(const float *x, uint16_t *y, int64_t n, int hm) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[f16_at(i, hm)] = __half_as_ushort(__float2half_rn(x[i]));
}

extern "C" void tcu_f32_to_f16_layout(const float *x, uint16_t *y, int64_t n, int hm, cudaStream_t st) {
    f32_to_f16_k<<<ew_grid(n), 256, 0, st>>>(x, y, n, hm != 0);
    TCU_CHECK_LAUNCH(st);
}

extern "C" void tcu_f32_to_f16(const float *x, uint16_t *y, int64_t n, cudaStream_t st) {
    tcu_f32_to_f16_layout(x, y, n, g_tcu_hm, st);
}

__global__ void pos_add_k(int32_t *pos, int n, int delta) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) pos[i] += delta;
}

extern "C" void tcu_pos_add(int32_t *pos, int n, int delta, cudaStream_t st) {
    pos_add_k<<<(n + 255) / 256, 256, 0, st>>>(pos, n, delta);
    TCU_CHECK_LAUNCH(st);
}
