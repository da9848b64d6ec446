/* dev/cuda/attention_wgmma_arms.cu: v6's arms, moved out of src/backend/cuda/attention_wgmma.cu (at b07f3a7, switches
 * TERN_CUDA_FLASH_WG=0..6 and TERN_CUDA_FLASH_ORDER=0..2, build arm -DTERN_WG256_BN=80). NOT BUILT; it needs
 * attention_wgmma.cu of b07f3a7. docs/ledger.md "prefill flash attention on Hopper's warpgroup MMA (v6 ...): WON": the
 * modes of v6b (plain, pingpong alone, intra-warpgroup pipelining alone, the softmax scale as its own multiply),
 * the tile orders 0 and 2 (order 1 kept: +15% at S = 2048), and "prefill flash attention at head dim 256 on wgmma":
 * 80-key blocks at hd 256 (within the spread of identical runs: not adopted). The product keeps v6b with pingpong +
 * pipelining at hd 64/128, plain at hd 256, tile order 1, 64-key blocks at hd 256; v6a (cp.async) stays as the
 * kernel for calls without kv_rows and as v6b's fallback; v3 (attention_prefill.cu) below sm_90a. */

/* ---- S = Q K^T with 80-key blocks (hd 256, TERN_WG256_BN=80) ---- */

/* D (64 x 80 f32) = A (64 x 16 f16, smem descriptor da) * B (16 x 80, smem descriptor db, K-major) + (acc ? D : 0)
 * (S = Q K^T at hd 256 with 80-key blocks, the TERN_WG256_BN=80 build arm). */
__device__ __forceinline__ void wg_mma_ss_n80(float (&d)[40], uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n80k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}, %40, %41, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
                 : "l"(da), "l"(db), "r"(acc));
}


/* ---- the tile orders (the ws kernel's prologue) ---- */
}
/* box (64 columns, 1 head, BN rows) of the 3-D tensor map at (c0, c1, c2) into shared memory at dst */
__device__ __forceinline__ void wg_tma3(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

template <int HD> struct wg_ws_cfg {
    static constexpr int NS = HD == 256 ? 2 : HD == 128 ? 3 : 4; /* ring stages: Q + NS * (K + V) <= 227 KiB */
    static constexpr size_t SMEM = wg_cfg<HD>::Q_BYTES + (size_t)NS * 2 * wg_cfg<HD>::KV_BYTES + 1024;
};

/* PP (v6c's pingpong, FlashAttention-3 section 3.1): the two warpgroups take turns issuing their MMAs, by two
 * named barriers (3 + w: "warpgroup w may issue"; 256 threads: the waiter's 128 by bar.sync, the other's by
 * bar.arrive), so one's softmax runs while the other's MMAs do. Every warpgroup passes the same number of
 * turns (skipped blocks included); warpgroup 1 grants the first, warpgroup 0 takes a last one at the end.
 * IW (intra-warpgroup pipelining, section 3.2): block b's S = Q K^T and block b - 1's O += P V are issued
 * together, and block b's softmax runs while that P V does. */
template <int HD, int PP, int IW, int FOLD>
__global__ void __launch_bounds__(WG_T + 128, 1)

/* ---- the modes' dispatcher ---- */
    if (wg_map(&mk, kc, kv_rows, n_head_kv, HD, wg_cfg<HD>::BN) || wg_map(&mv, vc, kv_rows, n_head_kv, HD, wg_cfg<HD>::BN))
        return 0;
    const unsigned nqb = (unsigned)((n + WG_BM - 1) / WG_BM);
    const dim3 grid = order ? dim3(nqb * (unsigned)n_head) : dim3(nqb, (unsigned)n_head);
    flash_wgmma_ws_kernel<HD, PP, IW, FOLD><<<grid, WG_T + 128, wg_ws_cfg<HD>::SMEM, st>>>(
        mk, mv, q, n, pos, n_head, n_head_kv, sl2, out, order);
    return 1;
}

extern "C" int tcu_attention_wg_tma(const float *q, const uint16_t *kc, const uint16_t *vc, int kv_rows, int n,
                                    const int32_t *pos, int n_head, int n_head_kv, int hd, float scale, float *out,
                                    int mode, cudaStream_t st) {
    const int order = mode >> 3; /* mode = version + 8 * order */
    mode &= 7;
    if (n <= 0 || kv_rows <= 0 || mode > 4 || order > 2 || !tcu_attention_wg_ok(n_head, n_head_kv, hd)) return 0;
    if (order && (int64_t)((n + WG_BM - 1) / WG_BM) * n_head > 0x7FFFFFFF) return 0;
    if (!order && n_head > 65535) return 0; /* gridDim.y */
    const float sl2 = scale * 1.4426950408889634f;
#define WG_L(H, P, I, F) wg_tma_launch<H, P, I, F>(kc, vc, kv_rows, q, n, pos, n_head, n_head_kv, sl2, out, order, st)
    if (hd == 256) {
        switch (mode) {
        case 0: return WG_L(256, 0, 0, 1);
        case 1: return WG_L(256, 1, 0, 1);
        case 2: return WG_L(256, 0, 1, 1);
        case 3: return WG_L(256, 1, 1, 1);
        default: return WG_L(256, 1, 1, 0);
        }
    }
    if (hd == 128) {
        switch (mode) {
        case 0: return WG_L(128, 0, 0, 1);
        case 1: return WG_L(128, 1, 0, 1);
        case 2: return WG_L(128, 0, 1, 1);
        case 3: return WG_L(128, 1, 1, 1);
        default: return WG_L(128, 1, 1, 0);
        }
    }
    switch (mode) {
    case 0: return WG_L(64, 0, 0, 1);
    case 1: return WG_L(64, 1, 0, 1);
    case 2: return WG_L(64, 0, 1, 1);
    case 3: return WG_L(64, 1, 1, 1);
    default: return WG_L(64, 1, 1, 0);
    }
#undef WG_L
}
