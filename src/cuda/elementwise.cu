/* elementwise.cu: RMSNorm, RoPE, KV-cache write, SwiGLU, residual add, bias add, f32->f16, position step.
 * Each matches its CPU reference in backend_cpu.c operation for operation where that is cheap (explicit
 * _rn intrinsics, so nvcc contracts nothing into an FMA): RMSNorm sums squares in double like
 * cpu_rmsnorm, RoPE evaluates its angle and cos/sin in double like cpu_rope. Checked by tests/gpu/gpu_ops.c. */
#include <cuda_fp16.h>

#include "cuda/tcu.h"

/* One CTA per row; sum of squares in double, fixed order (thread-strided partials, then a tree). */
__global__ void rmsnorm_k(const float *x, const float *g, float eps, int dim, float *y32, uint16_t *y16) {
    __shared__ double red[256];
    const int t = blockIdx.x;
    const float *xr = x + (size_t)t * dim;
    double ss = 0.0;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += (double)xr[i] * (double)xr[i];
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float sc = (float)(1.0 / sqrt(red[0] / dim + (double)eps));
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        const float v = __fmul_rn(__fmul_rn(xr[i], sc), g[i]);
        if (y32) y32[(size_t)t * dim + i] = v;
        if (y16) y16[(size_t)t * dim + i] = __half_as_ushort(__float2half_rn(v));
    }
}

extern "C" void tcu_rmsnorm(const float *x, const float *g, float eps, int n, int dim, float *y32, uint16_t *y16,
                            cudaStream_t st) {
    rmsnorm_k<<<n, 256, 0, st>>>(x, g, eps, dim, y32, y16);
}

/* Thread per (token, pair i): one angle, applied to every head. */
__global__ void rope_k(float *x, int n, int n_heads, int hd, int n_rot, const int32_t *pos, const float *freq) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rot / 2) return;
    for (int t = blockIdx.y; t < n; t += gridDim.y) { /* grid.y <= 65535 < the largest ubatch (65536) */
        const double th = (double)pos[t] * (double)freq[i];
        const float c = (float)cos(th), s = (float)sin(th);
        for (int h = 0; h < n_heads; h++) {
            float *v = x + ((size_t)t * n_heads + h) * hd + 2 * i;
            const float a = v[0], b = v[1];
            v[0] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
            v[1] = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
        }
    }
}

extern "C" void tcu_rope(float *x, int n, int n_heads, int hd, int n_rot, const int32_t *pos, const float *freq,
                         cudaStream_t st) {
    if (n <= 0 || n_rot < 2) return;
    dim3 grid((unsigned)((n_rot / 2 + 63) / 64), (unsigned)(n < 65535 ? n : 65535));
    rope_k<<<grid, 64, 0, st>>>(x, n, n_heads, hd, n_rot, pos, freq);
}

__global__ void kv_write_k(const float *k, const float *v, uint16_t *kc, uint16_t *vc, int n, int row,
                           const int32_t *pos) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= row) return;
    for (int t = blockIdx.y; t < n; t += gridDim.y) { /* grid.y <= 65535 < the largest ubatch (65536) */
        const size_t dst = (size_t)pos[t] * row + j, src = (size_t)t * row + j;
        kc[dst] = __half_as_ushort(__float2half_rn(k[src]));
        vc[dst] = __half_as_ushort(__float2half_rn(v[src]));
    }
}

extern "C" void tcu_kv_write(const float *k, const float *v, uint16_t *kc, uint16_t *vc, int n, int row,
                             const int32_t *pos, cudaStream_t st) {
    if (n <= 0) return;
    dim3 grid((unsigned)((row + 255) / 256), (unsigned)(n < 65535 ? n : 65535));
    kv_write_k<<<grid, 256, 0, st>>>(k, v, kc, vc, n, row, pos);
}

__global__ void swiglu_k(float *g, const float *u, int64_t n, uint16_t *g16) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float a = g[i];
        const float v = __fmul_rn(__fdiv_rn(a, __fadd_rn(1.0f, expf(-a))), u[i]);
        g[i] = v;
        if (g16) g16[i] = __half_as_ushort(__float2half_rn(v));
    }
}

static unsigned ew_grid(int64_t n) {
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

extern "C" void tcu_swiglu(float *g, const float *u, int64_t n, uint16_t *g16, cudaStream_t st) {
    swiglu_k<<<ew_grid(n), 256, 0, st>>>(g, u, n, g16);
}

__global__ void add_k(float *y, const float *x, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fadd_rn(y[i], x[i]);
}

extern "C" void tcu_add(float *y, const float *x, int64_t n, cudaStream_t st) {
    add_k<<<ew_grid(n), 256, 0, st>>>(y, x, n);
}

__global__ void add_bias_k(float *y, const float *b, int n, int dim) {
    const int64_t tot = (int64_t)n * dim;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < tot; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fadd_rn(y[i], b[i % dim]);
}

extern "C" void tcu_add_bias(float *y, const float *b, int n, int dim, cudaStream_t st) {
    add_bias_k<<<ew_grid((int64_t)n * dim), 256, 0, st>>>(y, b, n, dim);
}

__global__ void f32_to_f16_k(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __half_as_ushort(__float2half_rn(x[i]));
}

extern "C" void tcu_f32_to_f16(const float *x, uint16_t *y, int64_t n, cudaStream_t st) {
    f32_to_f16_k<<<ew_grid(n), 256, 0, st>>>(x, y, n);
}

__global__ void pos_add_k(int32_t *pos, int n, int delta) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) pos[i] += delta;
}

extern "C" void tcu_pos_add(int32_t *pos, int n, int delta, cudaStream_t st) {
    pos_add_k<<<(n + 255) / 256, 256, 0, st>>>(pos, n, delta);
}
