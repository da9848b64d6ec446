/* config.c: the settings table (config.h). */
#include "config.h"

tern_config tern_config_g = {
    .simd_scalar = 0,
    .matmul_ref = 0,
    /* docs/ledger.md 2026-11-29 "decode prefetch": +9% CPU decode tok/s at 12288 bytes ahead (6 interleaved rounds) */
    .decode_prefetch = 12288,
    /* docs/ledger.md 2026-11-29 "decode chunks": rows / (threads * 4) a work item, +23% CPU decode tok/s */
    .decode_chunk_div = 4,
    .trace = 0,
    .cuda_graph = 1,
    .cuda_timing = 0,
    .gemv_chunk = 0, /* one sequence's order; many sequences ask for 2 (cli_batch_order; docs/ledger.md 2026-12-05) */
    .att_rps = 0,    /* 256 keys a decode-attention split (attention.cu); other values under measurement */
    .att_warps = 0,  /* the rule (attention.cu att_phys_warps); 4, 8, 16 under measurement */
    .att_ms = -1,    /* a token's splits in one CTA by attention.cu att_ms_rule (0 off, N > 0 the arm) */
    .pdl_max = 0,    /* PDL in passes of up to 48 tokens, 64 in the f16 order, outside its windows (exec.c PDL_MAX,
                      * PDL_MAX_F16); 1..64 under measurement */
    .hm_arm_lo = 0, .hm_arm_hi = 0, .hm_arm = 0, /* the f16 order's chooser (gemm_hmma.cu); an arm under measurement */
};

tern_config tern_config_get(void) { return tern_config_g; }

void tern_config_set(const tern_config *c) {
    if (!c) return;
    tern_config_g = *c;
    if (tern_config_g.decode_prefetch < 0) tern_config_g.decode_prefetch = 0;
    if (tern_config_g.decode_chunk_div < 0) tern_config_g.decode_chunk_div = 0;
}
