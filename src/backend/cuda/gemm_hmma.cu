/* gemm_hmma.cu: the f16 order of batched decode (issue 26; tern_config.gemv_chunk = 2, an arm under measurement):
 * y (m, n_out) = W · x_c for 1..TCU_PASS_MAX columns, the weights dequantized to f16 in registers (each value
 * f16(d·(q - 8)), rounded once: the bits tcu_dequant_f16 gives the prefill GEMM) and multiplied with the f16
 * activations on the tensor cores (mma.sync m16n8k16, f32 accumulator). No per-block float work is left to the
 * ALUs: the tensor core's accumulator is the sum. v2 (gemm_mma.cu) keeps an exact int32 dot a block and adds
 * dw·dx·isum in f32 by the ALUs, 5-6 instructions an output and block (docs/ledger.md 2026-12-02); here it is none.
 *
 * Batch invariance: every output (row r, column c) is one chain of MMAs over K in a fixed order (steps of 4 blocks,
 * in each step the 8 MMAs u = 0..7), from +0, in K segments fixed by the matrix's shape alone (hm_splits: n_in and
 * the rows of the launch, a fused matrix's total), the segments' sums added in segment order. Nothing in that depends
 * on m, on the column's place in its tile, on the tiling (the arm) or on the other columns: an MMA's output element reads only its row of A and its column of B. So column c of an
 * m-column call has the bits of the one-column call on x_c, for every arm; tests/gpu/gpu_hmma.c checks it (memcmp)
 * and checks the values against a float64 sum of the same f16 products.
 *
 * The K order inside a step: lane quad t (lane % 4) owns block 4s + t of the step. MMA u takes elements 4u..4u+3 of
 * each quad lane's block (A's k slots 2t, 2t+1 <- elements 4u, 4u+1 and 2t+8, 2t+9 <- 4u+2, 4u+3; B's the same), so
 * a lane's A is one 16-byte load of its block's quants (Q4_0R: byte i holds element i low, i + 16 high) and its B one
 * 16-byte shared-memory load for two MMAs.
 *
 * Types: the repacked Q4_0R (tcu.h). Activations: f16 (m, n_in) row-major, each value f16(v) of the f32 activation,
 * written by its producer (exec.c f16_pass: the norms, the GLU, the attention output's conversion). tcu_x16_to_f16
 * (f16(d·q) of the x16 format) makes the tests' inputs; until 2026-12-04 the engine converted every matrix's x16
 * input with it (129 launches a Llama-3-8B step). */
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda/check.cuh"
#include "cuda/dequant.cuh"
#include "cuda/pdl.cuh"
#include "cuda/tcu.h"
#include "cuda/x16.cuh"

#define HM_CNT 8192 /* ints at the workspace's head: the split's tickets, one a row tile (kept zero between calls) */

/* ---- activations: x16 -> f16 ---- */
__global__ void x16_to_f16_k(const int8_t *__restrict__ xh, const int8_t *__restrict__ xl, const int2 *__restrict__ ds,
                             int64_t n, __half *__restrict__ out) {
    pdl_trigger();
    pdl_wait();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float d = __int_as_float(__ldg(&ds[i >> 5]).x);
    const int q = 256 * (int)xh[i] + (int)xl[i];
    out[i] = __float2half_rn(__fmul_rn(d, (float)q));
}

extern "C" void tcu_x16_to_f16(const void *xq, int m, int64_t n_in, uint16_t *out, cudaStream_t st) {
    const int64_t n = (int64_t)m * n_in;
    const size_t plane = x16_plane_bytes(m, n_in);
    const int8_t *h = (const int8_t *)xq, *l = h + plane;
    const int2 *ds = (const int2 *)((const char *)xq + 2 * plane);
    PDL_LAUNCH(x16_to_f16_k, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, st, h, l, ds, n, (__half *)out);
}

/* ---- the GEMM ---- */

/* d += a (16x16 f16, row) · b (16x8 f16, col); PTX ISA "mma.m16n8k16" fragments. */
static __device__ __forceinline__ void hm_mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

static __device__ __forceinline__ uint32_t hm_h2u(__half2 h) { return *reinterpret_cast<uint32_t *>(&h); }
static __device__ __forceinline__ __half2 hm_u2h(uint32_t u) { return *reinterpret_cast<__half2 *>(&u); }

/* Two weights f16(d·(n - 8)) from p = bytes [b0, 0, b1, 0]: the low nibbles (hi = 0) or the high ones (hi = 1).
 * 0x6400 | n is 1024 + n in f16, 0x6400 | 16n is 1024 + 16n: n - 8 exactly, then one rounding by the multiply. */
static __device__ __forceinline__ uint32_t hm_w2(uint32_t p, int hi, __half2 d) {
    if (!hi) return hm_h2u(__hmul2(__hsub2(hm_u2h((p & 0x000F000Fu) | 0x64006400u), __float2half2_rn(1032.0f)), d));
    return hm_h2u(__hmul2(__hfma2(hm_u2h((p & 0x00F000F0u) | 0x64006400u), __float2half2_rn(0.0625f),
                                  __float2half2_rn(-72.0f)),
                          d));
}

/* MMA u's A fragment of one row tile from its rows' words: qa (row g) and qb (row g + 8), each the lane's block. */
static __device__ __forceinline__ void hm_afrag(const uint4 &qa, const uint4 &qb, __half2 da, __half2 db, int u,
                                                uint32_t (&a)[4]) {
    const int wi = u & 3, hi = u >> 2;
    const uint32_t wa = wi == 0 ? qa.x : wi == 1 ? qa.y : wi == 2 ? qa.z : qa.w;
    const uint32_t wb = wi == 0 ? qb.x : wi == 1 ? qb.y : wi == 2 ? qb.z : qb.w;
    a[0] = hm_w2(__byte_perm(wa, 0u, 0x4140), hi, da); /* row g, elements 4u, 4u+1 */
    a[1] = hm_w2(__byte_perm(wb, 0u, 0x4140), hi, db); /* row g+8 */
    a[2] = hm_w2(__byte_perm(wa, 0u, 0x4342), hi, da); /* row g, elements 4u+2, 4u+3 */
    a[3] = hm_w2(__byte_perm(wb, 0u, 0x4342), hi, db);
}

static __device__ __forceinline__ unsigned hm_smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

/* A column's 16 pieces of 16 bytes a 4-block step (piece c = block c/4, elements 8(c%4)..+7) sit at c ^ sw(c, col):
 * the 8 lanes of a shared-memory phase (2 columns x 4 blocks, one piece index) then hit 8 different bank groups. */
static __device__ __forceinline__ int hm_swz(int c, int col) { return c ^ (((c >> 3) & 1) << 1) ^ (col & 1); }

/* The K split: S segments of K fixed by the launch's shape alone (every output's bits depend on it, not on m or the
 * arm): enough warps (16 rows each) for ~12 an SM of 132, S a power of two up to 8, segments of at least 8 steps.
 * Llama-3-8B: q|k|v (6144 rows) and o 4 segments, down (4096 rows of 14336) 8, gate|up and the head 1. The first rule
 * (4 at 14336 inputs, else 1) left q|k|v and o at 2-3 warps an SM: 2x the one-column GEMV's time at m = 1
 * (bench/gpu/s24-hmma/hmma-sweep.txt). */
static int hm_splits(int nb, int64_t n_out) {
    const int64_t warps = (n_out + 15) / 16;
    const int nst = (nb + 3) / 4;
    int s = 1;
    while (s < 8 && warps * s < 1536 && nst >= 16 * s) s *= 2;
    return s;
}

typedef struct {
    float *y[3];
    int r1, r2;
} hm_out;

static __device__ __forceinline__ void hm_store(const hm_out &o, int n_out, int r, int c, float v) {
    if (r < o.r1) o.y[0][(size_t)c * o.r1 + r] = v;
    else if (r < o.r2) o.y[1][(size_t)c * (o.r2 - o.r1) + (r - o.r1)] = v;
    else o.y[2][(size_t)c * (n_out - o.r2) + (r - o.r2)] = v;
}

/* A lane's weights of one step: for each row tile, rows g and g + 8, block 4s + t (zero past nb). */
template <int RT> struct hm_wregs {
    uint4 qa[RT], qb[RT];
    uint16_t da[RT], db[RT];
};

template <int RT>
static __device__ __forceinline__ void hm_wload(hm_wregs<RT> &r, const uint8_t *const (&ra)[RT],
                                                const uint8_t *const (&rb)[RT], int b, int nb) {
#pragma unroll
    for (int i = 0; i < RT; i++) {
        if (b < nb) {
            const size_t go = (size_t)(b >> 3) * RQ40_GROUP;
            r.qa[i] = __ldg((const uint4 *)(ra[i] + go + 16 + 16 * (b & 7)));
            r.qb[i] = __ldg((const uint4 *)(rb[i] + go + 16 + 16 * (b & 7)));
            r.da[i] = __ldg((const unsigned short *)(ra[i] + go + 2 * (b & 7)));
            r.db[i] = __ldg((const unsigned short *)(rb[i] + go + 2 * (b & 7)));
        } else {
            r.qa[i] = r.qb[i] = make_uint4(0, 0, 0, 0);
            r.da[i] = r.db[i] = 0;
        }
    }
}

/* CTA: W warps, each RT row tiles of 16 rows and all NT column tiles of 8; KB 4-block steps a pipeline stage. Grid
 * (row tiles, S). x: f16 (m, n_in). The stage's x is copied to shared memory by cp.async one stage ahead; the weights
 * go to registers one stage ahead. */
template <int NT, int RT, int W, int KB>
__global__ void __launch_bounds__(32 * W, 1)
gemm_hm_k(const uint8_t *__restrict__ w, size_t stride, int nb, int n_out, const __half *__restrict__ x, int m,
          const hm_out yo, float *__restrict__ ws) {
    constexpr int NC = NT * 8, PCS = KB * NC * 16; /* columns; 16-byte pieces of x a stage */
    extern __shared__ __align__(16) uint4 hm_sm[];
    uint4(*xs)[KB][NC][16] = reinterpret_cast<uint4(*)[KB][NC][16]>(hm_sm); /* [2][KB][NC][16] */
    const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int r0 = (int)blockIdx.x * (16 * RT * W) + warp * 16 * RT;
    const int S = (int)gridDim.y, nst = (nb + 3) / 4, per = (nst + S - 1) / S;
    const int sb = (int)blockIdx.y * per, se = min(nst, sb + per); /* this CTA's 4-block steps [sb, se) */
    const uint8_t *ra[RT], *rb[RT];
#pragma unroll
    for (int i = 0; i < RT; i++) {
        ra[i] = w + (size_t)min(r0 + 16 * i + g, n_out - 1) * stride;
        rb[i] = w + (size_t)min(r0 + 16 * i + g + 8, n_out - 1) * stride;
    }
    float acc[RT][NT][4];
#pragma unroll
    for (int i = 0; i < RT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

    pdl_wait();
    /* stage s (KB steps from sb + KB·s): x pieces into xs[s & 1] */
    auto xcopy = [&](int st) {
        const int s0 = sb + KB * st;
#pragma unroll
        for (int k = 0; k < PCS / (32 * W) + (PCS % (32 * W) ? 1 : 0); k++) {
            const int i = (int)threadIdx.x + k * 32 * W;
            if (PCS % (32 * W) && i >= PCS) break;
            const int sub = i / (NC * 16), col = (i / 16) % NC, c = i % 16;
            const int blk = 4 * (s0 + sub) + (c >> 2);
            const int ok = col < m && blk < nb && s0 + sub < se;
            const __half *src = x + (ok ? (size_t)col * (size_t)nb * 32 + (size_t)blk * 32 + 8 * (c & 3) : 0);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(hm_smem(&xs[st & 1][sub][col][hm_swz(c, col)])),
                         "l"(src), "r"(ok ? 16 : 0)
                         : "memory");
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    const int nsg = (se - sb + KB - 1) / KB; /* stages */
    hm_wregs<RT> cur[KB], nxt[KB];
    if (nsg > 0) {
        xcopy(0);
#pragma unroll
        for (int k = 0; k < KB; k++) hm_wload<RT>(cur[k], ra, rb, sb + k < se ? 4 * (sb + k) + t : nb, nb);
    }
    for (int st = 0; st < nsg; st++) {
        const int s0 = sb + KB * st;
        if (st + 1 < nsg) {
            xcopy(st + 1);
#pragma unroll
            for (int k = 0; k < KB; k++) hm_wload<RT>(nxt[k], ra, rb, s0 + KB + k < se ? 4 * (s0 + KB + k) + t : nb, nb);
            asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::: "memory");
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < KB; k++) {
            if (s0 + k >= se) break; /* uniform: the segment's last stage may hold one step */
            __half2 da[RT], db[RT];
#pragma unroll
            for (int i = 0; i < RT; i++) {
                da[i] = __half2half2(__ushort_as_half(cur[k].da[i]));
                db[i] = __half2half2(__ushort_as_half(cur[k].db[i]));
            }
#pragma unroll
            for (int p = 0; p < 4; p++) {
                uint4 bx[NT];
#pragma unroll
                for (int j = 0; j < NT; j++) bx[j] = xs[st & 1][k][8 * j + g][hm_swz(4 * t + p, 8 * j + g)];
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int u = 2 * p + h;
#pragma unroll
                    for (int i = 0; i < RT; i++) {
                        uint32_t a[4];
                        hm_afrag(cur[k].qa[i], cur[k].qb[i], da[i], db[i], u, a);
#pragma unroll
                        for (int j = 0; j < NT; j++) hm_mma(acc[i][j], a, h ? bx[j].z : bx[j].x, h ? bx[j].w : bx[j].y);
                    }
                }
            }
        }
        __syncthreads(); /* xs[st & 1] is refilled at stage st + 2 */
#pragma unroll
        for (int k = 0; k < KB; k++) cur[k] = nxt[k];
    }
    pdl_trigger();

    const int S1 = S > 1;
    float *part = S1 ? ws + HM_CNT + (size_t)blockIdx.y * (size_t)m * (size_t)n_out : nullptr;
#pragma unroll
    for (int i = 0; i < RT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = r0 + 16 * i + g + 8 * (e >> 1), c = 8 * j + 2 * t + (e & 1);
                if (r >= n_out || c >= m) continue;
                if (S1) part[(size_t)c * n_out + r] = acc[i][j][e];
                else hm_store(yo, n_out, r, c, acc[i][j][e]);
            }
    if (!S1) return;
    /* the split: the last CTA of a row tile to finish adds the S partial sums in segment order */
    __shared__ int last;
    __threadfence();
    __syncthreads();
    int *cnt = (int *)ws;
    if (threadIdx.x == 0) last = atomicAdd(&cnt[blockIdx.x], 1) == S - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const float *p0 = ws + HM_CNT;
    const size_t ps = (size_t)m * (size_t)n_out;
#pragma unroll
    for (int i = 0; i < RT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = r0 + 16 * i + g + 8 * (e >> 1), c = 8 * j + 2 * t + (e & 1);
                if (r >= n_out || c >= m) continue;
                const size_t o = (size_t)c * n_out + r;
                float v = __ldcg(p0 + o);
                for (int q = 1; q < S; q++) v = v + __ldcg(p0 + (size_t)q * ps + o);
                hm_store(yo, n_out, r, c, v);
            }
    if (threadIdx.x == 0) cnt[blockIdx.x] = 0;
}

/* Arms: (RT, W, KB). Every arm the same bits. */
#define HM_ARMS 6
static const int hm_arm_cfg[HM_ARMS][3] = {{1, 4, 1}, {1, 4, 2}, {2, 4, 1}, {2, 4, 2}, {1, 2, 2}, {1, 4, 4}};

template <int NT, int RT, int W, int KB>
static void hm_launch(const uint8_t *w, size_t stride, int nb, int n_out, const __half *x, int m, const hm_out &o,
                      float *ws, cudaStream_t st) {
    const int rows = 16 * RT * W;
    const int smem = 2 * KB * NT * 8 * 16 * 16;
    static int set = 0; /* above 48 KiB a kernel must ask for its dynamic shared memory (once a process) */
    if (!set) {
        cudaFuncSetAttribute(gemm_hm_k<NT, RT, W, KB>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        set = 1;
    }
    const dim3 grid((unsigned)((n_out + rows - 1) / rows), (unsigned)hm_splits(nb, n_out));
    PDL_LAUNCH((gemm_hm_k<NT, RT, W, KB>), grid, dim3(32 * W), smem, st, w, stride, nb, n_out, x, m, o, ws);
}

template <int NT>
static void hm_arm(int arm, const uint8_t *w, size_t stride, int nb, int n_out, const __half *x, int m, const hm_out &o,
                   float *ws, cudaStream_t st) {
    switch (arm) {
    case 0: hm_launch<NT, 1, 4, 1>(w, stride, nb, n_out, x, m, o, ws, st); break;
    case 1: hm_launch<NT, 1, 4, 2>(w, stride, nb, n_out, x, m, o, ws, st); break;
    case 2: hm_launch<NT, 2, 4, 1>(w, stride, nb, n_out, x, m, o, ws, st); break;
    case 3: hm_launch<NT, 2, 4, 2>(w, stride, nb, n_out, x, m, o, ws, st); break;
    case 4: hm_launch<NT, 1, 2, 2>(w, stride, nb, n_out, x, m, o, ws, st); break;
    default: hm_launch<NT, 1, 4, 4>(w, stride, nb, n_out, x, m, o, ws, st); break;
    }
}

/* The chooser, from the first sweep (bench/gpu/s24-hmma/hmma-sweep.txt, H200, Q4_0, m = 1..64): arm 1 (16 rows a
 * warp, 4 warps, 8 blocks a stage) fastest at every m on 4096, 6144 and (4096 inputs) 14336 rows up to m = 16, arm 3
 * (32 rows a warp) on 28672 rows and on 14336 past m = 16. */
static int hm_pick(int nb, int n_out, int m) {
    (void)nb;
    if (n_out <= 8192) return 1;
    return n_out > 16384 || m > 16 ? 3 : 1;
}

extern "C" int tcu_gemm_hm_supported(int t) { return t == TCU_TYPE_Q4_0R; }

extern "C" size_t tcu_gemm_hm_ws_floats(int64_t n_in, int64_t n_out, int m_max) {
    if (n_in < 32 || n_out < 1 || m_max < 1) return 0;
    const int S = hm_splits((int)(n_in / 32), n_out);
    return S > 1 ? (size_t)HM_CNT + (size_t)S * (size_t)m_max * (size_t)n_out : 0;
}

extern "C" int tcu_gemm_hm(int arm, int t, const void *w, size_t row_bytes, int64_t n_in, const int64_t rows[3],
                           const uint16_t *x, int m, float *const y[3], float *ws, size_t ws_floats, cudaStream_t st) {
    const int64_t n_out = rows[0] + rows[1] + rows[2];
    if (t != TCU_TYPE_Q4_0R || m < 1 || m > TCU_PASS_MAX || n_in < 32 || n_in % 32 || rows[0] < 1 || rows[1] < 0 ||
        rows[2] < 0 || n_out > INT32_MAX || arm < -1 || arm >= HM_ARMS)
        return 0;
    const int nb = (int)(n_in / 32);
    if (arm < 0) arm = hm_pick(nb, (int)n_out, m);
    const int tile = 16 * hm_arm_cfg[arm][0] * hm_arm_cfg[arm][1];
    if (hm_splits(nb, n_out) > 1 && ((n_out + tile - 1) / tile > HM_CNT || !ws || ws_floats < tcu_gemm_hm_ws_floats(n_in, n_out, m)))
        return 0;
    const hm_out o = {{y[0], y[1], y[2]}, (int)rows[0], (int)(rows[0] + rows[1])};
    const uint8_t *wb = (const uint8_t *)w;
    const __half *xh = (const __half *)x;
    switch ((m + 7) / 8) {
    case 1: hm_arm<1>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, st); break;
    case 2: hm_arm<2>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, st); break;
    case 3: hm_arm<3>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, st); break;
    case 4: hm_arm<4>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, st); break;
    case 5: hm_arm<5>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, st); break;
    case 6: hm_arm<6>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, st); break;
    case 7: hm_arm<7>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, st); break;
    default: hm_arm<8>(arm, wb, row_bytes, nb, (int)n_out, xh, m, o, ws, st); break;
    }
    return 1;
}
