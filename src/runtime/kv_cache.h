/* kv_cache.h: the paged KV cache's bookkeeping (vLLM's PagedAttention, Kwon et al. 2023): a pool of blocks of
 * bs token rows, owned by the engine; each sequence holds a block table (logical block i -> pool block), so its
 * logical position p lives at pool row table[p / bs] * bs + p % bs of every layer. Blocks are reference
 * counted so sequences with a common prefix share them (tern_seq_fork; the server's prefix cache builds on it).
 * The rows themselves (K and V of every layer, f16 or Q8_0) are the backend's memory; this file only hands
 * out block numbers.
 *
 * Allocation returns the lowest free block, so one sequence growing in a fresh pool gets blocks 0, 1, 2, ... and
 * its table is the identity (pool row = position), the contiguous cache of a single-sequence engine. */
#ifndef TERN_KV_CACHE_H
#define TERN_KV_CACHE_H
#include <stdint.h>

typedef struct {
    int bs, lbs;        /* rows a block: bs = 1 << lbs */
    int n_blocks;
    int32_t *ref;       /* (n_blocks) reference counts; 0 = free */
    int32_t *heap;      /* (n_blocks) free blocks, a binary min-heap */
    int n_free;
} tern_kv;

/* A pool of n_blocks blocks of 1 << lbs rows, all free. 0, or -1 (error set) when out of memory or out of range. */
int tern_kv_init(tern_kv *kv, int n_blocks, int lbs);
void tern_kv_free(tern_kv *kv);
/* The lowest free block with its count set to 1, or -1 when none is free. */
int32_t tern_kv_alloc(tern_kv *kv);
/* One more holder of block b. */
void tern_kv_ref(tern_kv *kv, int32_t b);
/* One holder fewer; the block returns to the pool at zero. */
void tern_kv_unref(tern_kv *kv, int32_t b);
/* Blocks in use (count > 0). */
int tern_kv_used(const tern_kv *kv);

#endif
