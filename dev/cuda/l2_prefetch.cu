/* dev/cuda/l2_prefetch.cu: weights hinted into L2 while the latency-bound decode kernels run, moved out of
 * src/backend/cuda/elementwise.cu (at b07f3a7; tcu_l2_prefetch, tcu_pf_list in tcu.h; the backend's TERN_CUDA_L2PF=MB,
 * _FORK=1, _KB=n). NOT BUILT; it needs pdl.cuh (PDL_LAUNCH) and the tcu_pf_list struct below. docs/ledger.md
 * "weights hinted into L2 while the latency-bound kernels run (TERN_CUDA_L2PF): LOST in both forms": in the PDL
 * chain -27% Q4_0 tg128 at 16 MB (the chain waited for hints at ~0.65-0.7 TB/s), on a forked stream -17% flat in the
 * size (the branch's own cost). Also gone with it, from the same file: the RMSNorm's 512- and 256-thread CTAs
 * (TERN_CUDA_RMS_T, rmsnorm_k<512, 16> / <256, 16>: "... the RMSNorm's CTA size (TERN_CUDA_RMS_T): LOST"), the
 * C-CTA split's switch (TERN_CUDA_RMS_SPLIT, 8 kept: "RMSNorm over 8 CTAs a row: WON") and the cluster kernel's
 * (TERN_CUDA_RMS_CLUSTER=0: "the decode RMSNorm over a thread-block cluster ...: WON"). */
#include "cuda/pdl.cuh"

/* Up to 4 device ranges (16-byte aligned) for tcu_l2_prefetch. */
typedef struct {
    const void *p[4];
    size_t bytes[4];
    int n;
} tcu_pf_list;

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

/* L2 prefetch of weight ranges by bulk prefetches (cp.async.bulk.prefetch.L2, sm_90): thread i takes the
 * i-th chunk of the concatenated ranges. It waits for the previous kernel first, so the prefetch runs in
 * the latency-bound kernels after it instead of beside the previous kernel's own stream. */
__global__ void l2_prefetch_k(tcu_pf_list L, unsigned L2PF_CHUNK) {
    pdl_trigger();
    pdl_wait();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x; /* the chunk: range r's chunks, then r + 1's */
    for (int r = 0; r < L.n; r++) {
        const size_t nc = (L.bytes[r] + L2PF_CHUNK - 1) / L2PF_CHUNK;
        if (c < nc) {
            const size_t off = c * L2PF_CHUNK, left = L.bytes[r] - off;
            const unsigned sz = (unsigned)(left < L2PF_CHUNK ? left : L2PF_CHUNK) & ~15u;
            if (sz)
                asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"((const char *)L.p[r] + off), "r"(sz)
                             : "memory");
            return;
        }
        c -= nc;
    }
#endif
}

extern "C" void tcu_l2_prefetch(const tcu_pf_list *L, unsigned chunk, int threads, int pdl, cudaStream_t st) {
    if (chunk < 16 || threads < 1 || threads > 1024) return;
    chunk &= ~15u;
    size_t chunks = 0;
    for (int r = 0; r < L->n; r++) chunks += (L->bytes[r] + chunk - 1) / chunk;
    if (!chunks) return;
    const dim3 grid((unsigned)((chunks + threads - 1) / threads));
    if (pdl) PDL_LAUNCH(l2_prefetch_k, grid, dim3(threads), 0, st, *L, chunk);
    else l2_prefetch_k<<<grid, threads, 0, st>>>(*L, chunk);
}
