/* timeline.c: TERN_TIMELINE=FILE, a measurement instrument (issue 26): the device's start and end of every kernel tern
 * launches, kernels inside CUDA graphs too, from CUPTI's activity API (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), one CSV
 * row a kernel, so the kernels of a step can be seen overlapping under programmatic dependent launch. ncu times each
 * kernel alone and serialised, and the GPU box has no nsys (docs/ledger.md 2026-12-04: the engine reversed gpu_hmma's
 * sweep at 2..8 columns, and the step's timeline is the missing measurement). bench/timeline.py reads the file.
 *
 * libcupti is opened at run time (dlopen), never linked: the caller's path (TERN_CUPTI_LIB), else libcupti.so.13,
 * libcupti.so and the toolkit's folders. CUPTI hands over records from its own thread in buffers this file allocates; rows are written as
 * buffers complete and when an engine is freed (its devices synchronised, then cuptiActivityFlushAll; the file
 * flushed), else at exit. Records lost (dropped by CUPTI, or a walk ended by an incomplete record) are said on stderr.
 * The row layout is CUpti_ActivityKernel10's (CUDA 13's cupti_activity.h, read at build time; the fields used sit at
 * the same offsets in CUDA 12's Kernel9); a build whose toolkit lacks the header says so when asked. On Hopper CUPTI
 * times kernels by instrumenting them, so gaps include its overhead; under PDL a kernel's span includes its wait.
 *
 * Columns: start_ns,end_ns,stream,correlation,graph,graph_node,grid,block,dyn_smem,regs,name (grid and block as XxYxZ;
 * correlation is the launching API call's, shared by every kernel of one graph launch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "tern.h"
#include "util.h"

#if defined(TERN_CUDA) && defined(__has_include)
#if __has_include(<cupti_activity.h>)
#define TERN_HAVE_CUPTI 1
#endif
#endif

#ifndef TERN_HAVE_CUPTI

int tern_cuda_timeline(const char *path, const char *lib) {
    (void)path, (void)lib;
#ifdef TERN_CUDA
    tern_set_error("TERN_TIMELINE: this tern was built without CUPTI's headers (cupti_activity.h)");
#else
    tern_set_error("TERN_TIMELINE: this tern was built without CUDA (build with make CUDA=1)");
#endif
    return -1;
}
int cuda_timeline_on(void) { return 0; }
void cuda_timeline_flush(void) {}

#else

#include <dlfcn.h>
#include <pthread.h>

#include <cupti_activity.h>

static struct {
    CUptiResult (*reg)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*flush)(uint32_t);
    CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    FILE *f;
    pthread_mutex_t mu;
    unsigned long long rows, lost; /* rows written; records CUPTI dropped (buffers full) or a buffer's walk skipped */
    int flushed;                   /* an engine's free flushed (then the exit does not: CUDA may be torn down by then) */
} tl = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define TL_BUF (8u << 20)

static void CUPTIAPI tl_request(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, TL_BUF);
    *size = *buffer ? TL_BUF : 0;
    *max_records = 0;
}

/* A buffer's records (CUPTI's thread, or a flush's caller). The walk ends at MAX_LIMIT_REACHED; any other status
 * (an incomplete record, which a forced flush without a device synchronisation can hand over) ends it early and is
 * counted and said once, as are the records CUPTI dropped. */
static void CUPTIAPI tl_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)size;
    CUpti_Activity *r = NULL;
    CUptiResult st = CUPTI_ERROR_MAX_LIMIT_REACHED;
    size_t drop = 0;
    pthread_mutex_lock(&tl.mu);
    while (tl.f && valid && (st = tl.next(buffer, valid, &r)) == CUPTI_SUCCESS) {
        if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && r->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
        fprintf(tl.f, "%llu,%llu,%u,%u,%u,%llu,%dx%dx%d,%dx%dx%d,%d,%u,\"%s\"\n", (unsigned long long)k->start,
                (unsigned long long)k->end, k->streamId, k->correlationId, k->graphId, (unsigned long long)k->graphNodeId,
                k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ, k->dynamicSharedMemory,
                (unsigned)k->registersPerThread, k->name ? k->name : "?");
        tl.rows++;
    }
    if (tl.f && valid && st != CUPTI_ERROR_MAX_LIMIT_REACHED) {
        if (!tl.lost) fprintf(stderr, "tern: timeline: a buffer's records ended early (CUPTI status %d)\n", (int)st);
        tl.lost++;
    }
    if (tl.f && tl.dropped(ctx, stream, &drop) == CUPTI_SUCCESS && drop) {
        fprintf(stderr, "tern: timeline: CUPTI dropped %zu records\n", drop);
        tl.lost += drop;
    }
    pthread_mutex_unlock(&tl.mu);
    free(buffer);
}

int cuda_timeline_on(void) { return tl.f != NULL; }

void cuda_timeline_flush(void) {
    if (!tl.f) return;
    tl.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&tl.mu);
    tl.flushed = 1;
    if (tl.f) fflush(tl.f); /* on disk now: the exit's handler may run after CUDA's own teardown */
    pthread_mutex_unlock(&tl.mu);
}

/* At exit: CUDA's and libcuda's handlers, registered after this one, have run by now, so CUPTI is flushed here only
 * when no engine's free did (a process that exits with an engine alive). */
static void tl_close(void) {
    if (!tl.f) return;
    if (!tl.flushed) tl.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&tl.mu);
    fclose(tl.f);
    tl.f = NULL;
    fprintf(stderr, "tern: timeline: %llu kernels written%s\n", tl.rows, tl.lost ? " (some records lost: see above)" : "");
    pthread_mutex_unlock(&tl.mu);
}

int tern_cuda_timeline(const char *path, const char *lib) {
    if (tl.f) return 0;
    const char *names[] = {lib && *lib ? lib : "libcupti.so.13", "libcupti.so.13", "libcupti.so",
                           "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", "/usr/local/cuda/lib64/libcupti.so",
                           "/usr/local/cuda/lib/libcupti.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        tern_set_error("TERN_TIMELINE: libcupti was not found (set TERN_CUPTI_LIB to its path)");
        return -1;
    }
    if (!(*(void **)&tl.reg = dlsym(h, "cuptiActivityRegisterCallbacks")) ||
        !(*(void **)&tl.enable = dlsym(h, "cuptiActivityEnable")) ||
        !(*(void **)&tl.flush = dlsym(h, "cuptiActivityFlushAll")) ||
        !(*(void **)&tl.next = dlsym(h, "cuptiActivityGetNextRecord")) ||
        !(*(void **)&tl.dropped = dlsym(h, "cuptiActivityGetNumDroppedRecords"))) {
        tern_set_error("TERN_TIMELINE: libcupti lacks a symbol tern needs");
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        tern_set_error("TERN_TIMELINE: cannot write %s", path);
        return -1;
    }
    fputs("start_ns,end_ns,stream,correlation,graph,graph_node,grid,block,dyn_smem,regs,name\n", f);
    tl.f = f;
    if (tl.reg(tl_request, tl_complete) != CUPTI_SUCCESS || tl.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        fclose(f);
        tl.f = NULL;
        tern_set_error("TERN_TIMELINE: CUPTI refused the kernel activity records");
        return -1;
    }
    atexit(tl_close);
    return 0;
}

#endif
