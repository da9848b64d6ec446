/* kv_cache.c: block numbers of the paged KV cache (kv_cache.h): reference counts and a min-heap of free blocks. */
#include <stdlib.h>

#include "kv_cache.h"
#include "util.h"

static void heap_push(tern_kv *kv, int32_t b) {
    int i = kv->n_free++;
    while (i > 0) {
        const int p = (i - 1) / 2;
        if (kv->heap[p] <= b) break;
        kv->heap[i] = kv->heap[p];
        i = p;
    }
    kv->heap[i] = b;
}

static int32_t heap_pop(tern_kv *kv) {
    const int32_t top = kv->heap[0], last = kv->heap[--kv->n_free];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= kv->n_free) break;
        if (c + 1 < kv->n_free && kv->heap[c + 1] < kv->heap[c]) c++;
        if (kv->heap[c] >= last) break;
        kv->heap[i] = kv->heap[c];
        i = c;
    }
    if (kv->n_free > 0) kv->heap[i] = last;
    return top;
}

int tern_kv_init(tern_kv *kv, int n_blocks, int lbs) {
    *kv = (tern_kv){0};
    if (n_blocks < 1 || lbs < 0 || lbs > 16) {
        tern_set_error("KV cache: %d blocks of 2^%d rows is out of range", n_blocks, lbs);
        return -1;
    }
    kv->lbs = lbs;
    kv->bs = 1 << lbs;
    kv->n_blocks = n_blocks;
    kv->ref = calloc((size_t)n_blocks, sizeof(int32_t));
    kv->heap = malloc(sizeof(int32_t) * (size_t)n_blocks);
    if (!kv->ref || !kv->heap) {
        tern_kv_free(kv);
        tern_set_error("out of memory (KV cache table of %d blocks)", n_blocks);
        return -1;
    }
    for (int i = 0; i < n_blocks; i++) kv->heap[i] = i; /* sorted: already a min-heap */
    kv->n_free = n_blocks;
    return 0;
}

void tern_kv_free(tern_kv *kv) {
    free(kv->ref);
    free(kv->heap);
    *kv = (tern_kv){0};
}

int32_t tern_kv_alloc(tern_kv *kv) {
    if (kv->n_free == 0) return -1;
    const int32_t b = heap_pop(kv);
    kv->ref[b] = 1;
    return b;
}

void tern_kv_ref(tern_kv *kv, int32_t b) { kv->ref[b]++; }

void tern_kv_unref(tern_kv *kv, int32_t b) {
    if (--kv->ref[b] == 0) heap_push(kv, b);
}

int tern_kv_used(const tern_kv *kv) { return kv->n_blocks - kv->n_free; }
