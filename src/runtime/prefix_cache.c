/* prefix_cache.c: full KV blocks keyed by their token prefix (prefix_cache.h): a chained hash table over entry
 * slots, an LRU list through the same slots. */
#include <stdlib.h>
#include <string.h>

#include "prefix_cache.h"
#include "util.h"

typedef struct {
    uint64_t uid;      /* 0: free slot */
    uint64_t parent;   /* uid of the entry of the block before (0: first block) */
    int32_t block;     /* pool block */
    int32_t block_w;   /* its window-pool block, or -1 */
    int32_t next;      /* hash chain (slot index, -1 ends) */
    int32_t prev_lru, next_lru; /* LRU list: head most recent */
    uint64_t hash;
} pc_entry;

struct tern_pcache {
    int bs, cap;
    pc_entry *e;       /* (cap) */
    int32_t *toks;     /* (cap, bs) each entry's tokens */
    int32_t *bucket;   /* (n_bucket) first slot of each chain, -1 */
    uint32_t mask;     /* n_bucket - 1 */
    int32_t free_head; /* free slots, chained through next */
    int32_t lru_head, lru_tail;
    int n;
    uint64_t next_uid;
    int64_t evicted;
    tern_kv *kvw;      /* the window pool, or NULL */
};

static uint64_t key_hash(uint64_t parent, const int32_t *tokens, int bs) {
    uint64_t h = 1469598103934665603ull ^ parent; /* FNV-1a over the parent uid and the tokens' bytes */
    for (int i = 0; i < bs; i++) {
        uint32_t t = (uint32_t)tokens[i];
        for (int k = 0; k < 4; k++, t >>= 8) h = (h ^ (t & 0xff)) * 1099511628211ull;
    }
    return h ^ (h >> 29);
}

tern_pcache *tern_pc_new(int n_blocks, int bs) {
    tern_pcache *pc = tern_xcalloc(1, sizeof *pc);
    pc->bs = bs;
    pc->cap = n_blocks;
    pc->e = tern_xcalloc((size_t)n_blocks, sizeof *pc->e);
    pc->toks = tern_xmalloc(sizeof(int32_t) * (size_t)n_blocks * (size_t)bs);
    uint32_t nb = 16;
    while (nb < (uint32_t)n_blocks && nb < (1u << 30)) nb <<= 1;
    pc->mask = nb - 1;
    pc->bucket = tern_xmalloc(sizeof(int32_t) * nb);
    for (uint32_t i = 0; i < nb; i++) pc->bucket[i] = -1;
    for (int i = 0; i < n_blocks; i++) pc->e[i].next = i + 1 < n_blocks ? i + 1 : -1;
    pc->free_head = n_blocks > 0 ? 0 : -1;
    pc->lru_head = pc->lru_tail = -1;
    pc->next_uid = 1;
    return pc;
}

static void lru_unlink(tern_pcache *pc, int i) {
    pc_entry *x = &pc->e[i];
    if (x->prev_lru >= 0) pc->e[x->prev_lru].next_lru = x->next_lru;
    else pc->lru_head = x->next_lru;
    if (x->next_lru >= 0) pc->e[x->next_lru].prev_lru = x->prev_lru;
    else pc->lru_tail = x->prev_lru;
}

static void lru_push_head(tern_pcache *pc, int i) {
    pc->e[i].prev_lru = -1;
    pc->e[i].next_lru = pc->lru_head;
    if (pc->lru_head >= 0) pc->e[pc->lru_head].prev_lru = i;
    pc->lru_head = i;
    if (pc->lru_tail < 0) pc->lru_tail = i;
}

/* Unlink slot i from the table and the LRU list, drop its block reference, free the slot. */
static void drop(tern_pcache *pc, tern_kv *kv, int i) {
    pc_entry *x = &pc->e[i];
    int32_t *link = &pc->bucket[x->hash & pc->mask];
    while (*link != i) link = &pc->e[*link].next;
    *link = x->next;
    lru_unlink(pc, i);
    tern_kv_unref(kv, x->block);
    if (x->block_w >= 0) tern_kv_unref(pc->kvw, x->block_w);
    x->block_w = -1;
    x->uid = 0;
    x->next = pc->free_head;
    pc->free_head = i;
    pc->n--;
}

void tern_pc_free(tern_pcache *pc, tern_kv *kv) {
    if (!pc) return;
    while (pc->lru_head >= 0) drop(pc, kv, pc->lru_head);
    free(pc->e);
    free(pc->toks);
    free(pc->bucket);
    free(pc);
}

int tern_pc_lookup(const tern_pcache *pc, uint64_t parent, const int32_t *tokens) {
    const uint64_t h = key_hash(parent, tokens, pc->bs);
    for (int32_t i = pc->bucket[h & pc->mask]; i >= 0; i = pc->e[i].next) {
        const pc_entry *x = &pc->e[i];
        if (x->hash == h && x->parent == parent &&
            !memcmp(pc->toks + (size_t)i * pc->bs, tokens, sizeof(int32_t) * (size_t)pc->bs))
            return i;
    }
    return -1;
}

int32_t tern_pc_block(const tern_pcache *pc, int idx) { return pc->e[idx].block; }

void tern_pc_set_window(tern_pcache *pc, tern_kv *kvw) { pc->kvw = kvw; }

void tern_pc_set_block_w(tern_pcache *pc, int idx, int32_t bw) {
    if (!pc->kvw || bw < 0 || pc->e[idx].block_w >= 0) return;
    pc->e[idx].block_w = bw;
    tern_kv_ref(pc->kvw, bw);
}

int32_t tern_pc_block_w(const tern_pcache *pc, int idx) { return pc->e[idx].block_w; }

int tern_pc_evict_w(tern_pcache *pc) {
    if (!pc->kvw) return 0;
    for (int32_t i = pc->lru_tail; i >= 0; i = pc->e[i].prev_lru)
        if (pc->e[i].block_w >= 0 && pc->kvw->ref[pc->e[i].block_w] == 1) {
            tern_kv_unref(pc->kvw, pc->e[i].block_w);
            pc->e[i].block_w = -1;
            return 1;
        }
    return 0;
}
uint64_t tern_pc_uid(const tern_pcache *pc, int idx) { return idx >= 0 && idx < pc->cap ? pc->e[idx].uid : 0; }

void tern_pc_touch(tern_pcache *pc, int idx) {
    lru_unlink(pc, idx);
    lru_push_head(pc, idx);
}

uint64_t tern_pc_insert(tern_pcache *pc, tern_kv *kv, uint64_t parent, const int32_t *tokens, int32_t block) {
    if (pc->free_head < 0 && !tern_pc_evict(pc, kv)) return 0;
    const int i = pc->free_head;
    pc_entry *x = &pc->e[i];
    pc->free_head = x->next;
    x->uid = pc->next_uid++;
    x->parent = parent;
    x->block = block;
    x->block_w = -1;
    x->hash = key_hash(parent, tokens, pc->bs);
    memcpy(pc->toks + (size_t)i * pc->bs, tokens, sizeof(int32_t) * (size_t)pc->bs);
    x->next = pc->bucket[x->hash & pc->mask];
    pc->bucket[x->hash & pc->mask] = i;
    lru_push_head(pc, i);
    tern_kv_ref(kv, block);
    pc->n++;
    return x->uid;
}

int tern_pc_evict(tern_pcache *pc, tern_kv *kv) {
    /* from the least recently used end; an entry a sequence also holds stays (its block would not be freed) */
    for (int32_t i = pc->lru_tail; i >= 0; i = pc->e[i].prev_lru)
        if (kv->ref[pc->e[i].block] == 1) {
            drop(pc, kv, i);
            pc->evicted++;
            return 1;
        }
    return 0;
}

void tern_pc_stats(const tern_pcache *pc, const tern_kv *kv, int *entries, int *idle, int64_t *evicted) {
    int n_idle = 0;
    for (int32_t i = pc->lru_head; i >= 0; i = pc->e[i].next_lru) n_idle += kv->ref[pc->e[i].block] == 1;
    if (entries) *entries = pc->n;
    if (idle) *idle = n_idle;
    if (evicted) *evicted = pc->evicted;
}
