/* wgmma.cuh: Hopper's warpgroup MMA (wgmma.mma_async) and mbarrier helpers shared by the sm_90a-only files
 * (attention_wgmma.cu, gemm_hmma.cu; both built with the Makefile's WG_ARCHS): the shared-memory matrix descriptor,
 * the fences and group waits, the accumulator's compiler barrier, and the mbarrier operations (PTX ISA 9.7.15,
 * "Asynchronous Warpgroup Level Matrix Multiply-Accumulate", and 9.7.13.15, "mbarrier"). */
#ifndef TERN_CUDA_WGMMA_CUH
#define TERN_CUDA_WGMMA_CUH
#include <stdint.h>

/* Shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2.2): start address, leading and stride byte offsets
 * (each >> 4), 128-byte swizzle (mode 1 in bits 62-63); the swizzle pattern starts at a 1024-byte boundary
 * (base offset 0: the callers' regions are 1024-aligned and a k-step's offset stays inside a 128-byte row). */
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((saddr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}

/* shared-memory writes of the generic proxy (st.shared, cp.async) made visible to wgmma's async proxy */
__device__ __forceinline__ void wg_fence_proxy(void) { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wg_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit_mma(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait_mma(void) { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
/* the compiler must not move reads or writes of an accumulator across the asynchronous MMA's issue/wait */
template <int N> __device__ __forceinline__ void wg_touch(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N> __device__ __forceinline__ void wg_wait_mma_n(void) {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void wg_mbar_init(uint32_t b, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(b), "r"(count) : "memory");
}
__device__ __forceinline__ void wg_mbar_expect_tx(uint32_t b, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wg_mbar_arrive(uint32_t b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(b) : "memory");
}
__device__ __forceinline__ void wg_mbar_wait(uint32_t b, uint32_t parity) {
    uint32_t ok;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}\n"
                     : "=r"(ok)
                     : "r"(b), "r"(parity)
                     : "memory");
    } while (!ok);
}

#endif
