/* kv.cuh: the paged KV cache's row mapping (vLLM's PagedAttention, Kwon et al. 2023), shared by every kernel that
 * reads or writes cache rows. A layer's cache is a pool of n_rows = n_blocks * bs rows (bs = 1 << lbs, a power of
 * two, 16..256); a sequence's block table bt (int32, device) maps its logical row j to physical row
 * bt[j >> lbs] * bs + (j & (bs - 1)). bt NULL is the identity (row j): the contiguous cache of one sequence. */
#ifndef TERN_CUDA_KV_CUH
#define TERN_CUDA_KV_CUH
#include <stdint.h>

/* The physical row of logical row j through table tb (NULL: j). */
static __device__ __forceinline__ int kv_row(const int32_t *__restrict__ tb, int lbs, int j) {
    return tb ? (tb[j >> lbs] << lbs) | (j & ((1 << lbs) - 1)) : j;
}
/* Token t's table: bt + bt_off[t] (bt_off NULL: every token's is bt; bt NULL: the identity). Read after the PDL wait
 * (pdl.cuh: tables are a call's input, like pos). */
static __device__ __forceinline__ const int32_t *kv_table(const int32_t *bt, const int32_t *__restrict__ bt_off, int t) {
    return bt && bt_off ? bt + bt_off[t] : bt;
}

#endif
