/* dev/cuda/attention_prefill_v4.cu: "v4" of the prefill flash attention, two m-tiles a warp (FlashAttention-2's
 * layout), moved out of src/backend/cuda/attention_prefill.cu (at b07f3a7, switch TERN_CUDA_FLASH_MT=2; the v3 kernel's
 * 8-warp arm TERN_CUDA_FLASH_WARPS=8 went with it). NOT BUILT; it needs attention_prefill.cu's fa_* helpers and
 * fa_cfg of b07f3a7. docs/ledger.md "prefill flash attention with two m-tiles a warp (v4 ...): LOST, kept as an arm":
 * the same bits as v3 (4 warps); kernel TFLOP/s at D = 128, S 2048 / 8192 / 32768: 113.3 / 185.1 / 216.1 vs v3's
 * 148.0 / 197.0 / 212.7; pp512 -3.9%, pp2048 -1.9%. The 8-warp v3: "prefill attention on the tensor cores": pp2048
 * within the spread, kept 4. */

    }
}

/* "v4": as flash_prefill_kernel with two m-tiles a warp (FlashAttention-2's layout: a CTA of 4 warps takes
 * BM = 128 query tokens, warp w tokens [32w, 32w + 32) as m-tiles [32w, 32w + 16) and [32w + 16, 32w + 32)),
 * so every K fragment (ldmatrix) feeds 4 mma instead of 2, and every V fragment 4 instead of 2: in v3 an
 * ldmatrix.x4 (512 bytes of shared memory, 4 cycles of its 128 bytes a cycle) fed 2 m16n8k16 mma. Q is
 * staged in shared memory as f16 (the same rounding as v3's fragments) and read by ldmatrix per k-step
 * (v3 held it in registers: 2 m-tiles of it and the doubled O and S accumulators would not fit). The
 * per-tile operations and their order are v3's (the k-steps of S ascending, the keys of P V ascending, the
 * same online softmax, the same block skip per m-tile; a block wholly in the future of one m-tile but not
 * the other is skipped for that m-tile, where v3's warp skipped it or multiplied by 1 and added 0), so each
 * output equals v3's bit for bit. hd 64 and 128 (hd 256's accumulators would not fit). */
template <int HD>
__global__ void __launch_bounds__(128, 1)
flash_prefill_mt2_kernel(const float *__restrict__ q, const uint16_t *__restrict__ kc, const uint16_t *__restrict__ vc,
                         int n, const int32_t *__restrict__ pos, int n_head, int n_head_kv, float scale_log2,
                         float *__restrict__ out) {
    constexpr int NW = 4, MT = 2, BM = 16 * MT * NW, BN = fa_cfg<HD>::BN, LD = fa_cfg<HD>::LD;
    constexpr int KT = HD / 16, NT = BN / 8, DT = HD / 8;
    extern __shared__ __align__(16) uint16_t fa_sm[];
    __shared__ int sm_max[NW];

    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int qb = (int)gridDim.x - 1 - (int)blockIdx.x; /* the longest (latest) query blocks first */
    const int h = (int)blockIdx.y, hk = h / (n_head / n_head_kv);
    int t0[MT], t1[MT], p0[MT], p1[MT], tmax[MT], tmin[MT];
    int wmax = -1;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        t0[mt] = qb * BM + w * 16 * MT + mt * 16 + g;
        t1[mt] = t0[mt] + 8;
        p0[mt] = t0[mt] < n ? pos[t0[mt]] : -1;
        p1[mt] = t1[mt] < n ? pos[t1[mt]] : -1;
        int mx = max(p0[mt], p1[mt]), mn = min(t0[mt] < n ? p0[mt] : INT_MAX, t1[mt] < n ? p1[mt] : INT_MAX);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            mn = min(mn, __shfl_xor_sync(0xffffffffu, mn, o));
        }
        tmax[mt] = mx;
        tmin[mt] = mn;
        wmax = max(wmax, mx);
    }
    if (lane == 0) sm_max[w] = wmax;

    /* Q (BM x HD) into shared memory as f16, rows past n zero; K/V stages after it */
    uint16_t *sq = fa_sm;
    constexpr int QSZ = BM * LD; /* halves */
    for (int c = threadIdx.x; c < BM * (HD / 2); c += NW * 32) {
        const int r = c / (HD / 2), col = (c % (HD / 2)) * 2, t = qb * BM + r;
        const float2 x = t < n ? *(const float2 *)(q + ((size_t)t * n_head + h) * HD + col) : make_float2(0.f, 0.f);
        *(uint32_t *)(sq + r * LD + col) = fa_pack(x.x, x.y);
    }
    __syncthreads();
    int cmax = -1;
#pragma unroll
    for (int i = 0; i < NW; i++) cmax = max(cmax, sm_max[i]);
    const int n_kv = cmax + 1, n_blk = (n_kv + BN - 1) / BN;

    const uint32_t sqa = (uint32_t)__cvta_generic_to_shared(sq), sbase = sqa + (uint32_t)(QSZ * 2);
    const size_t kv_stride = (size_t)n_head_kv * HD;
    const uint16_t *kb = kc + (size_t)hk * HD, *vb = vc + (size_t)hk * HD;
    float o[MT][DT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int d = 0; d < DT; d++) o[mt][d][0] = o[mt][d][1] = o[mt][d][2] = o[mt][d][3] = 0.0f;
    float m0[MT], m1[MT], l0[MT], l1[MT];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) { m0[mt] = m1[mt] = -INFINITY; l0[mt] = l1[mt] = 0.0f; }
    const int mi = lane >> 3, mr = lane & 7;

    if (n_blk > 0) fa_load_block<HD, NW>(sbase, kb, vb, kv_stride, n_kv, 0, 0);
    for (int b = 0; b < n_blk; b++) {
        if (b + 1 < n_blk) {
            fa_load_block<HD, NW>(sbase, kb, vb, kv_stride, n_kv, b + 1, (b + 1) & 1);
            fa_wait<1>();
        } else {
            fa_wait<0>();
        }
        __syncthreads();
        const int j0 = b * BN;
        bool act[MT];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) act[mt] = j0 <= tmax[mt]; /* warp-uniform */
        if (act[0] || act[1]) {
            const uint32_t sk = sbase + (uint32_t)((b & 1) * 2 * BN * LD * 2), sv = sk + (uint32_t)(BN * LD * 2);
            float s[MT][NT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
            /* S = Q K^T, k-steps in order for every n-tile (v3's accumulation order) */
#pragma unroll
            for (int kt = 0; kt < KT; kt++) {
                uint32_t qa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) /* A fragment: lane supplies row lane & 15, column block lane >> 4 */
                    if (act[mt])
                        fa_ldsm4(qa[mt], sqa + (uint32_t)(((w * 16 * MT + mt * 16 + (lane & 15)) * LD + kt * 16 +
                                                           (lane >> 4) * 8) * 2));
#pragma unroll
                for (int np = 0; np < NT / 2; np++) {
                    uint32_t r[4];
                    const int key = np * 16 + (mi >> 1) * 8 + mr, col = kt * 16 + (mi & 1) * 8;
                    fa_ldsm4(r, sk + (uint32_t)((key * LD + col) * 2));
#pragma unroll
                    for (int mt = 0; mt < MT; mt++)
                        if (act[mt]) {
                            fa_mma(s[mt][2 * np], qa[mt], r[0], r[1]);
                            fa_mma(s[mt][2 * np + 1], qa[mt], r[2], r[3]);
                        }
                }
            }
            float c0[MT], c1[MT];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                c0[mt] = c1[mt] = 1.0f;
                if (!act[mt]) continue;
                const bool full = j0 + BN - 1 <= tmin[mt];
                float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int j = j0 + nt * 8 + 2 * tq + e;
                        float a = s[mt][nt][e] * scale_log2, c = s[mt][nt][2 + e] * scale_log2;
                        if (!full) {
                            if (j > p0[mt]) a = -INFINITY;
                            if (j > p1[mt]) c = -INFINITY;
                        }
                        s[mt][nt][e] = a;
                        s[mt][nt][2 + e] = c;
                        mx0 = fmaxf(mx0, a);
                        mx1 = fmaxf(mx1, c);
                    }
                }
                mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
                mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
                mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
                mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
                const float n0 = fmaxf(m0[mt], mx0), n1 = fmaxf(m1[mt], mx1);
                const float u0 = n0 == -INFINITY ? 0.0f : n0, u1 = n1 == -INFINITY ? 0.0f : n1;
                c0[mt] = exp2f(m0[mt] - u0);
                c1[mt] = exp2f(m1[mt] - u1);
                m0[mt] = n0;
                m1[mt] = n1;
                float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        s[mt][nt][e] = exp2f(s[mt][nt][e] - u0);
                        s[mt][nt][2 + e] = exp2f(s[mt][nt][2 + e] - u1);
                        rs0 += s[mt][nt][e];
                        rs1 += s[mt][nt][2 + e];
                    }
                }
                l0[mt] = l0[mt] * c0[mt] + rs0;
                l1[mt] = l1[mt] * c1[mt] + rs1;
#pragma unroll
                for (int d = 0; d < DT; d++) {
                    o[mt][d][0] *= c0[mt]; o[mt][d][1] *= c0[mt];
                    o[mt][d][2] *= c1[mt]; o[mt][d][3] *= c1[mt];
                }
            }
            /* O += P V, keys in order */
#pragma unroll
            for (int kt2 = 0; kt2 < BN / 16; kt2++) {
                uint32_t a[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    a[mt][0] = fa_pack(s[mt][2 * kt2][0], s[mt][2 * kt2][1]);
                    a[mt][1] = fa_pack(s[mt][2 * kt2][2], s[mt][2 * kt2][3]);
                    a[mt][2] = fa_pack(s[mt][2 * kt2 + 1][0], s[mt][2 * kt2 + 1][1]);
                    a[mt][3] = fa_pack(s[mt][2 * kt2 + 1][2], s[mt][2 * kt2 + 1][3]);
                }
#pragma unroll
                for (int dp = 0; dp < DT / 2; dp++) {
                    uint32_t r[4];
                    const int key = kt2 * 16 + (mi & 1) * 8 + mr, col = dp * 16 + (mi >> 1) * 8;
                    fa_ldsm4_t(r, sv + (uint32_t)((key * LD + col) * 2));
#pragma unroll
                    for (int mt = 0; mt < MT; mt++)
                        if (act[mt]) {
                            fa_mma(o[mt][2 * dp], a[mt], r[0], r[1]);
                            fa_mma(o[mt][2 * dp + 1], a[mt], r[2], r[3]);
                        }
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        float L0 = l0[mt], L1 = l1[mt];
        L0 += __shfl_xor_sync(0xffffffffu, L0, 1);
        L0 += __shfl_xor_sync(0xffffffffu, L0, 2);
        L1 += __shfl_xor_sync(0xffffffffu, L1, 1);
        L1 += __shfl_xor_sync(0xffffffffu, L1, 2);
        const float i0 = L0 > 0.0f ? 1.0f / L0 : 0.0f, i1 = L1 > 0.0f ? 1.0f / L1 : 0.0f;
        float *o0 = out + ((size_t)t0[mt] * n_head + h) * HD + 2 * tq, *o1 = out + ((size_t)t1[mt] * n_head + h) * HD + 2 * tq;
#pragma unroll
        for (int d = 0; d < DT; d++) {
            if (t0[mt] < n) *(float2 *)(o0 + d * 8) = make_float2(o[mt][d][0] * i0, o[mt][d][1] * i0);
            if (t1[mt] < n) *(float2 *)(o1 + d * 8) = make_float2(o[mt][d][2] * i1, o[mt][d][3] * i1);
        }
    }
    }
}

template <int HD>
static void flash_mt2_launch(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                             int n_head, int n_head_kv, float scale, float *out, cudaStream_t st) {
    constexpr size_t smem = fa_cfg<HD>::SMEM + sizeof(uint16_t) * 128 * fa_cfg<HD>::LD;
    static unsigned attr_set; /* per device, as flash_launch */
    int dev = 0;
    cudaGetDevice(&dev);
    if (dev >= 32 || !(attr_set >> dev & 1u)) {
        if (cudaFuncSetAttribute(flash_prefill_mt2_kernel<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)smem) == cudaSuccess && dev < 32)
            attr_set |= 1u << dev;
    }
    const dim3 grid((unsigned)((n + 127) / 128), (unsigned)n_head);
    flash_prefill_mt2_kernel<HD><<<grid, 128, smem, st>>>(q, kc, vc, n, pos, n_head, n_head_kv,
                                                          scale * 1.4426950408889634f, out);
}
