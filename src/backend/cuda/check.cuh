/* check.cuh: every kernel launch checked in debug builds (STYLE.md 10). Build with -DTERN_CUDA_DEBUG (e.g. `make CUDA=1
 * NVFLAGS="-O3 -lineinfo -DTERN_CUDA_DEBUG"`): TCU_CHECK_LAUNCH(st) after a <<<...>>> or cudaLaunchKernelEx takes the
 * launch's error (cudaGetLastError) and, unless st is being captured into a CUDA graph (where a synchronisation would
 * invalidate the capture), waits for the device (cudaDeviceSynchronize) so a fault in the kernel is reported at its
 * launch; either error prints file:line and aborts. PDL_LAUNCH (pdl.cuh) does it for every launch it makes. Without
 * the flag the macro is empty: release launches are asynchronous and their errors surface at the caller's next
 * check (tcu.h). */
#ifndef TERN_CUDA_CHECK_CUH
#define TERN_CUDA_CHECK_CUH
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef TERN_CUDA_DEBUG
static inline void tcu_check_launch(cudaStream_t st, const char *file, int line) {
    cudaError_t e = cudaGetLastError();
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (e == cudaSuccess && cudaStreamIsCapturing(st, &cs) == cudaSuccess && cs == cudaStreamCaptureStatusNone)
        e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "tern: CUDA kernel launch at %s:%d failed: %s (%s)\n", file, line, cudaGetErrorName(e),
                cudaGetErrorString(e));
        abort();
    }
}
#define TCU_CHECK_LAUNCH(st) tcu_check_launch((st), __FILE__, __LINE__)
#else
#define TCU_CHECK_LAUNCH(st) ((void)0)
#endif

#endif
