/* pdl.cuh: programmatic dependent launch (Hopper, CUDA 11.8+; CUDA C Programming Guide, "Programmatic
 * Dependent Launch and Synchronization") for the decode step's kernels.
 *
 * A kernel launched by PDL_LAUNCH while g_tcu_pdl is set may start before the previous kernel in its stream
 * has finished: its CTAs are scheduled once every CTA of the previous kernel has executed pdl_trigger()
 * (or exited). Contract for every kernel launched this way: it calls pdl_wait() before it reads anything
 * an earlier kernel wrote and before it writes anything (griddepcontrol.wait returns when the previous grid
 * has completed and its memory is visible; since that grid waited too, every earlier kernel is complete).
 * Only constant data (weights) may be touched before pdl_wait(): the GEMV prefetches its first rows into L2
 * there, so the weight stream starts while the previous kernel drains. Kernels launched the plain way are
 * unaffected (pdl_wait/pdl_trigger are no-ops without the launch attribute, and below sm_90). */
#ifndef TERN_CUDA_PDL_CUH
#define TERN_CUDA_PDL_CUH
#include <cuda_runtime.h>

#include "cuda/check.cuh"

extern int g_tcu_pdl; /* elementwise.cu; tcu_set_pdl */

static __device__ __forceinline__ void pdl_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
static __device__ __forceinline__ void pdl_trigger(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
/* L2 prefetch of the 128-byte line at p (no register result, no fault on a valid address). */
static __device__ __forceinline__ void pdl_prefetch_l2(const void *p) {
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
}

/* kernel<<<grid, block, smem, st>>>(args...), with the programmatic-serialization attribute when
 * g_tcu_pdl is set; checked in debug builds (TCU_CHECK_LAUNCH, check.cuh). */
#define PDL_LAUNCH(kernel, grid, block, smem, st, ...)                                                      \
    do {                                                                                                    \
        if (g_tcu_pdl) {                                                                                    \
            cudaLaunchAttribute at_[1];                                                                     \
            at_[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;                                 \
            at_[0].val.programmaticStreamSerializationAllowed = 1;                                          \
            cudaLaunchConfig_t cfg_ = {};                                                                   \
            cfg_.gridDim = (grid);                                                                          \
            cfg_.blockDim = (block);                                                                        \
            cfg_.dynamicSmemBytes = (smem);                                                                 \
            cfg_.stream = (st);                                                                             \
            cfg_.attrs = at_;                                                                               \
            cfg_.numAttrs = 1;                                                                              \
            cudaLaunchKernelEx(&cfg_, kernel, __VA_ARGS__);                                                 \
        } else {                                                                                            \
            kernel<<<(grid), (block), (smem), (st)>>>(__VA_ARGS__);                                         \
        }                                                                                                   \
        TCU_CHECK_LAUNCH(st);                                                                               \
    } while (0)

#endif
