/* prefix_cache.h: the KV prefix cache (vLLM's automatic prefix caching, Kwon et al. 2023; SGLang's radix cache
 * keeps the same idea as a tree). A full KV block is keyed by its whole token prefix: (the key of the block before
 * it, the block's own bs tokens). The key of the block before is its entry's uid, a number never reused, so two
 * blocks match only when every token of their prefixes is equal (no hash collision can alias two prefixes: the
 * hash only picks the bucket, the uid and the tokens are compared).
 *
 * The cache holds one reference on each block it keys (kv_cache.h), so a block outlives the sequence that wrote
 * it; a sequence starting with the same tokens takes the blocks instead of computing them (tern_seq_attach_prefix).
 * When the pool has no free block, the least recently used entry whose block nobody else holds is dropped
 * (tern_pc_evict). Entries of a chain are touched deepest first, so a chain's tail goes before its head. An entry
 * whose parent was evicted can never match again; it ages out the same way.
 *
 * Only full blocks are cached: a partial block is still being written by its sequence.
 *
 * With the window pool (the engine's swa_compact), an entry may also hold its block's window-pool block (block_w,
 * one reference), set while its sequence still held it; a hit can end only where the window rows its next query
 * reads are held (tern_seq_attach_prefix). Those references are the first to go when the window pool runs out
 * (tern_pc_evict_w), and go with their entry. */
#ifndef TERN_PREFIX_CACHE_H
#define TERN_PREFIX_CACHE_H
#include <stdint.h>

#include "kv_cache.h"

typedef struct tern_pcache tern_pcache;

/* A cache for a pool of n_blocks blocks of bs rows (at most n_blocks entries: each holds a block). */
tern_pcache *tern_pc_new(int n_blocks, int bs);
/* The window pool whose blocks entries may hold (tern_pc_set_block_w); NULL: none. */
void tern_pc_set_window(tern_pcache *pc, tern_kv *kvw);
/* Entry idx holds window block bw too (a reference taken), if it holds none yet. */
void tern_pc_set_block_w(tern_pcache *pc, int idx, int32_t bw);
/* Entry idx's window block, or -1. */
int32_t tern_pc_block_w(const tern_pcache *pc, int idx);
/* Release the window block of the least recently used entry whose window block only the cache holds: 1, or 0 when
 * none is. */
int tern_pc_evict_w(tern_pcache *pc);
/* Drop every entry (its block reference into kv), free the cache. */
void tern_pc_free(tern_pcache *pc, tern_kv *kv);
/* The entry of the block holding tokens[0..bs) after the prefix whose last block's entry has uid parent (0: the
 * block at position 0): its index, or -1. */
int tern_pc_lookup(const tern_pcache *pc, uint64_t parent, const int32_t *tokens);
int32_t tern_pc_block(const tern_pcache *pc, int idx);
/* The uid of entry idx (0: a free slot). An entry index kept by a caller is still the same entry while its uid is. */
uint64_t tern_pc_uid(const tern_pcache *pc, int idx);
/* Most recently used now. */
void tern_pc_touch(tern_pcache *pc, int idx);
/* Key block (tokens[0..bs) after parent) in the cache, which takes a reference on it. Its uid, or 0 when every entry
 * is in use by a sequence (nothing evictable). The caller looked it up first (no entry has this key). */
uint64_t tern_pc_insert(tern_pcache *pc, tern_kv *kv, uint64_t parent, const int32_t *tokens, int32_t block);
/* Drop the least recently used entry whose block only the cache holds, returning the block to the pool: 1, or 0 when
 * none is. */
int tern_pc_evict(tern_pcache *pc, tern_kv *kv);
/* Entries, and those whose block only the cache holds (evictable); evictions so far. */
void tern_pc_stats(const tern_pcache *pc, const tern_kv *kv, int *entries, int *idle, int64_t *evicted);

#endif
