/* tcu.h: the CUDA backend's kernels, as extern "C" launchers callable from C11 (src/backend/cuda/, one .cu per family).
 *
 * Only the CUDA build (make CUDA=1) compiles or includes this file. Conventions:
 * - every pointer is a device pointer; every launcher is asynchronous on `st` and returns nothing
 *   (launch errors surface at the next cudaGetLastError / synchronisation, checked by the caller);
 * - shapes innermost last, row-major, as backend_cpu.h: a weight W is (n_out, n_in), each row in its
 *   stored GGUF block type (enum tern_type), uploaded unchanged, or Q4_0/Q8_0/Q4_K regrouped
 *   (TCU_TYPE_Q4_0R, TCU_TYPE_Q8_0R, TCU_TYPE_Q4_KR below); `row_bytes` is the stride between rows,
 *   which must be a multiple of 16 with a 16-byte aligned base (the backend pads each row's
 *   tern_type_row_size bytes up to 16); n_in must be a multiple of 8 and of the block size;
 * - f16 values travel as uint16_t (IEEE binary16 bits), bf16 as uint16_t (bfloat16 bits);
 * - positions (`pos`) and KV lengths are read from device memory, so a decode step captured in a CUDA
 *   graph replays correctly at every position;
 * - each kernel family's CPU reference is the matching cpu_* op in backend_cpu.h (or quant.h's
 *   dequantizer), which tests/gpu/gpu_ops.c runs on the same random inputs.
 */
#ifndef TERN_TCU_H
#define TERN_TCU_H
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- weights: formats with a GPU kernel -------------------------------------------------------- */

/* 1 if tcu_gemv / tcu_dequant_f16 / tcu_get_rows handle weight type t (enum tern_type): F32, F16, BF16,
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K. */
int tcu_type_supported(int t);

/* ---- repacked device layouts (src/backend/cuda/dequant.cu) ----------------------------------------------
 * Q4_0 and Q8_0 blocks (GGUF spec: f16 d, then 16 or 32 quant bytes; 18 and 34 bytes, so a block's quants
 * start 2 bytes off a word) are regrouped per row at upload so that a warp's 16-byte loads are aligned and
 * contiguous: every 8 blocks of a row become one group of a 16-byte header (the 8 f16 scales, block j's at
 * byte 2j) followed by the 8 blocks' quant bytes in order (16 or 32 each, the GGUF order inside a block).
 * Groups are 144 bytes (Q4_0) or 272 (Q8_0), the same bytes per block as the file; a row's last partial
 * group of k blocks is 16 + 16k (or 32k) bytes, its unused scale slots zero. Values are unchanged: every
 * kernel reading a repacked weight gives the bits it gives on the GGUF layout. tern-internal type ids (not
 * GGUF ids), accepted by tcu_get_rows, tcu_dequant_f16 and tcu_gemv_dp4a; not by tcu_gemv / tcu_gemv_multi
 * (which write nothing for them; tcu_type_supported says 0). */
#define TCU_TYPE_Q4_0R 1002
#define TCU_TYPE_Q8_0R 1008
/* Q4_K (GGUF spec: 144-byte super-blocks of 256 = f16 d, f16 dmin, 12 scale bytes, then 4 groups of 32
 * bytes, byte i of group g holding element 64g+i in its low nibble and 64g+32+i in its high): the same
 * header, then sub-block j's 32 elements in bytes 16j..16j+15 of the nibble area, Q4_0's order (byte i:
 * element i low, element i+16 high), so a 32-block is one 16-byte load. Same bytes a super-block. */
#define TCU_TYPE_Q4_KR 1012
/* The repacked id of GGUF type t (Q4_0, Q8_0, Q4_K), or t itself when it has no repacked layout. */
int tcu_repack_type(int t);
/* Bytes of a row of n_in elements (a multiple of 32) in repacked type t; 0 when t is not a repacked id. */
size_t tcu_repack_row_bytes(int t, int64_t n_in);
/* dst (n_rows rows, dst_stride bytes apart, tcu_repack_row_bytes(tcu_repack_type(t), n_in) used of each) = the
 * n_rows GGUF rows of type t at src (src_stride bytes apart), both on the device; bytes of dst outside the
 * used part of a row and the unused scale slots are not written (the caller zeroes them). t must have a
 * repacked layout; n_in a multiple of its block (32; 256 for Q4_K). */
void tcu_repack(int t, const void *src, size_t src_stride, void *dst, size_t dst_stride, int64_t n_in, int64_t n_rows,
                cudaStream_t st);

/* ---- embedding (src/backend/cuda/dequant.cu) ----------------------------------------------------------- */

/* out (n, n_in) f32 = dequantized rows ids[0..n) of W (n_out, n_in) in type t. ids: (n) int32 on the
 * device, each < n_out (the caller checks). CPU reference: cpu_get_rows. */
void tcu_get_rows(int t, const void *w, size_t row_bytes, int64_t n_in, const int32_t *ids, int n, float *out,
                  cudaStream_t st);

/* out (n_out, n_in) f16 = W dequantized (the prefill GEMM's weight tile source). Values are computed in
 * f32 exactly as tern_dequantize_row, then rounded to f16 (round to nearest even). */
void tcu_dequant_f16(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, uint16_t *out,
                     cudaStream_t st);

/* ---- GEMV, decode (src/backend/cuda/gemv.cu) ---------------------------------------------------------- */

/* y (n_out) f32 = W · x, x (n_in) f32, f32 accumulation. n_in must be a multiple of the block size.
 * Every y[r] is computed by one CTA in a fixed order (no atomics): the same inputs give the same bits.
 * CPU reference: dequantize row (tern_dequantize_row) and dot in double. */
void tcu_gemv(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const float *x, float *y,
              cudaStream_t st);

/* Multi-column twin of tcu_gemv for 2..TCU_MULTI_MAX tokens (speculative verify, short chunks):
 * y (m, n_out) f32, row c = W · x_c for x (m, n_in) f32; one pass over W. Each y row is bit-identical to
 * tcu_gemv on that x row (same per-element float operations and reduction order). m > TCU_MULTI_MAX is
 * not supported (the caller uses the GEMM); m == 1 calls tcu_gemv. */
#define TCU_MULTI_MAX 16
/* The longest pass the GEMV path (exec.c: every token the bits of its one-token pass) can take: the decode
 * configuration of the norms, RoPE tables, attention (tcu_attention_decode) and argmaxes handles up to this many
 * tokens; the matmuls of more than TCU_MULTI_MAX columns run v2 (tcu_gemm_mma_v2_split; the chunk order only), the f16
 * order's GEMM, or the twins on slices (tcu_gemv_dp4a_cols). The backend's pass limit (crank.gemv_max) is
 * TCU_MULTI_MAX unless the chunk or f16 order is on and every matrix has one of them (backend_cuda.c pass_limit). */
#define TCU_PASS_MAX 64
void tcu_gemv_multi(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const float *x, int m,
                    float *y, cudaStream_t st);

/* ---- integer GEMV for Q4_0 / Q4_1 / Q8_0 / Q4_K / Q6_K (src/backend/cuda/gemv_dp4a.cu) -----------------------
 * Activations in 16-bit block fixed point (per 32 elements: d = amax/32512, q = round(x/d)) as two int8
 * planes, an exact int32 dot per block by __dp4a, f32 accumulation of dw*d*isum in block order. */
/* 1 for the weight types tcu_gemv_dp4a handles (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K and the repacked Q4_0R, Q8_0R, Q4_KR):
 * tcu_gemv_dp4a_family gives them a family. */
int tcu_gemv_dp4a_supported(int t);
/* Bytes of the quantized activations of m columns of n_in (n_in a multiple of 32). */
size_t tcu_x16_bytes(int m, int64_t n_in);
/* xq (tcu_x16_bytes(m, n_in), 16-byte aligned) = x (m, n_in) f32 quantized (layout: gemv_dp4a.cu). */
void tcu_quantize_x16(const float *x, int m, int64_t n_in, void *xq, cudaStream_t st);
/* y (m, n_out) = W · x_c for the m <= TCU_MULTI_MAX quantized columns in xq; row c of the m-column call
 * is bit-identical to the 1-column call on x_c. */
void tcu_gemv_dp4a(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq, int m, float *y,
                   cudaStream_t st);
/* The one chooser (gemv_dp4a.cu q8_family): the kernel family tcu_gemv_dp4a uses for a matrix of type t and this
 * shape, 0 cta, 1 warp, 3 tma (a matrix of >= 48 MiB with n_in <= 8192), -1 for a type without the dp4a path.
 * Families differ in summation order: a caller that runs one weight as parts and as a fused matrix (q|k|v,
 * gate|up) fixes one family for all of them to keep the bits of each row. */
int tcu_gemv_dp4a_family(int t, size_t row_bytes, int64_t n_in, int64_t n_out);
/* tcu_gemv_dp4a with the family fam (0, 1 or 3, e.g. from tcu_gemv_dp4a_family; anything else: the rule on this
 * call's shape). Returns 1 when the call ran the tma kernel (family 3 falls back to the warp kernel, the same
 * bits, where the device or the layout does not allow it, and for m > 1), else 0. */
int tcu_gemv_dp4a_fam(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq,
                      int m, float *y, cudaStream_t st);
/* tcu_gemv_dp4a_fam on columns c0 .. c0 + m - 1 (m <= TCU_MULTI_MAX) of the m_all columns in xq (tcu_x16_bytes(m_all,
 * n_in)), y (m, n_out) their rows: each the bits of the one-column call on its column. Passes of more columns than the
 * twins take run a matrix without v2 (Q6_K, Q4_1) as such slices (exec.c matmul). Returns as tcu_gemv_dp4a_fam, and -1 with
 * nothing launched for a slice out of range (tcu_gemv_dp4a_fam gives 0 there). */
int tcu_gemv_dp4a_cols(int fam, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq,
                       int m_all, int c0, int m, float *y, cudaStream_t st);

/* ---- small-M GEMM of batched decode (src/backend/cuda/gemm_mma.cu): int8 MMA over the x16 activations ---------
 * 1 for the types it takes (the repacked Q4_0R, Q8_0R, Q4_KR), else 0; its calls (tcu_gemm_mma_v2_*, the chunk order)
 * follow the order's switch below. (v1, the same MMAs in today's order, was deleted: docs/ledger.md 2026-12-07.) */
int tcu_gemm_mma_supported(int t);
/* Issue 26 v2: the canonical float order of tcu_gemv_dp4a on the repacked types (reduce.cuh "the chunk-major order"):
 * 0 today's (chains of blocks t, t+C, ..., then an xor tree; the families differ), 1 chunk-major (32-block chunks, a
 * fixed tree each, chunks in order; every family the same bits). Process-wide, 0 until tcu_gemv_order_set (the
 * backend sets it from tern_config.gemv_chunk when an engine is made; tests and sweeps set it). Other types keep
 * today's order. */
int tcu_gemv_order(void);
void tcu_gemv_order_set(int ord);
/* The decode attention's split rule (attention.cu att_active_splits): TCU_ATT_RPS keys a split until
 * tcu_attention_rps_set(r), which the backend calls from tern_config.att_rps when an engine is made (an arm under
 * measurement). Process-wide; each launcher call reads it once for its split kernel and its combine, and an engine
 * made with another value refuses its passes (exec.c), as with the GEMV order. tcu_attention_rps_norm: the value r
 * stands for (keys a split 0 -> TCU_ATT_RPS, clamped to 16..4096). (A one-split bound packed above the keys a split,
 * TERN_ATT_ONE, was measured and deleted: docs/ledger.md 2026-12-06 "the one-split bound under fit".) */
#define TCU_ATT_RPS 256
int tcu_attention_rps_norm(int rps);
void tcu_attention_rps_set(int rps);
int tcu_attention_rps(void);
/* gemm_mma.cu v2: y (m, n_out) for any m >= 1, column c bit-identical to tcu_gemv_dp4a's one-column call on x_c in
 * the chunk order (whatever tcu_gemv_order says: v2 has only that order). Repacked Q4_0R, Q8_0R, Q4_KR; returns 0
 * (nothing launched) otherwise or for an arm out of range, else 1. Arms 0..TCU_MMA_V2_ARMS-1 are tilings (gemm_mma.cu
 * mma2_arm), -1 the chooser's pick by m and rows; every arm the same bits. */
#define TCU_MMA_V2_ARMS 20
/* ws: the split arms' workspace (ws_floats floats, tcu_gemm_mma_v2_ws_floats; NULL / 0: none): a split arm asked for
 * without enough is refused (0), and the chooser then takes the arm it replaced (the same bits). A call owns ws until
 * its kernels end: one stream at a time. */
int tcu_gemm_mma_v2_arm(int arm, int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, const void *xq,
                        int m, float *y, float *ws, size_t ws_floats, cudaStream_t st);
/* v2 over a fused matrix (q|k|v, gate|up: rows[0] + rows[1] + rows[2] rows, the parts in that order; rows[0] >= 1, the
 * others >= 0), part j's outputs into y[j] as (m, rows[j]): each output the bits tcu_gemm_mma_v2_arm gives it (arm as
 * tcu_gemm_mma_v2_arm's; -1 the chooser, which picks by the fused row count). One launch where the parts would take
 * one each. */
int tcu_gemm_mma_v2_split(int arm, int t, const void *w, size_t row_bytes, int64_t n_in, const int64_t rows[3],
                          const void *xq, int m, float *const y[3], float *ws, size_t ws_floats, cudaStream_t st);
/* The workspace floats the chooser's arms need on an n_in x n_out matrix (a fused one's total rows) at up to m_max
 * columns: with it the chooser's pick is the sweeps' fastest at every m. */
size_t tcu_gemm_mma_v2_ws_floats(int64_t n_in, int64_t n_out, int m_max);

/* ---- the f16 order of batched decode (src/backend/cuda/gemm_hmma.cu; tern_config.gemv_chunk = 2, issue 26) --------
 * y (m, n_out) = W · x_c for 1 <= m <= TCU_PASS_MAX columns of f16 activations x (m, n_in), the weights dequantized
 * to f16 (the bits tcu_dequant_f16 gives) and multiplied on Hopper's warpgroup MMA (wgmma) with an f32 accumulator in
 * a K order fixed by the launch's shape: column c has the bits of the one-column call on x_c, for every arm and m.
 * x is in the f16 order's layout: element i of a row at tcu_hm_pos(i) (a permutation inside each 128 elements, so a
 * lane's 16-byte weight load feeds its MMA fragments without byte shuffles; the producers write it so). t: repacked
 * Q4_0R, Q8_0R or Q4_KR (rows, arms below TCU_HM_TILED) or their tiled layouts TCU_TYPE_Q4_0T / Q8_0T / Q4_KT, or
 * Q6_KT (arms from TCU_HM_TILED), n_in a multiple of 128 (of 256 for Q4_K and Q6_K), on an sm_90 device with the sm_90a code (tcu_gemm_hm_supported) only; returns
 * 0 (nothing launched) for another type, a shape it does not take or an arm out of range or of the other layout (arms
 * 0..TCU_HM_ARMS-1; -1 the chooser), else 1. The K order depends on the launch's shape (n_in and its total rows: a
 * fused matrix's outputs have the bits of the fused launch, which is the only form exec.c runs). A call whose K is
 * split (fewer than ~24000 rows; tcu_gemm_hm_ws_floats > 0) needs ws: tcu_gemm_hm_ws_floats floats, zeroed before its
 * first use (the split's tickets live there and are left zero), one stream at a time. rows as
 * tcu_gemm_mma_v2_split's (a fused matrix's parts into their own buffers). */
#define TCU_HM_ARMS 12
/* Arms >= TCU_HM_TILED read the tiled layout (TCU_TYPE_Q4_0T, Q8_0T, Q4_KT, Q6_KT): 6, 7, 8 are otherwise arms 4, 1 and 0, 9 and 10
 * arm 6 with the weights streamed by bulk copies 4 or 2 steps ahead, 11 by warps (mma.sync, each warp's weights 4 steps
 * ahead in registers, 2 for Q8_0 and Q6_K); the same bits. */
#define TCU_HM_TILED 6
/* The f16 order's tiled layouts (tcu_hm_tile: for each 64-row tile and 4-block step one contiguous chunk, tiles in row
 * order, a tile's steps in K order): what an f16-order engine converts its matrices to (backend_cuda.c wrank_tile).
 * Q4_0T: a 4608-byte chunk, the 64 rows' quants [row][64] in Q4_0R's in-block order, then their f16 scales [row][8].
 * Q8_0T: an 8704-byte chunk, the quants [row][128] (block t's bytes 16h..16h+15 at 64 (h ^ (row & 1)) + 16 t: odd rows
 * swap their halves, so a warp's loads from shared memory meet no bank twice), then the scales [row][8] at 8192.
 * Q4_KT: a 4864-byte chunk, the quants [row][64] (Q4_KR's sub-blocks, Q4_0R's in-block order), then [row][12] at 4096:
 * the super-block's f16 d and dmin (4 bytes), then block t's 6-bit scale and min as bytes 4 + 2t, 5 + 2t. Read by
 * Q6_KT: an 8960-byte chunk, each weight's 6-bit q (0..63) as a byte [row][128] in Q8_0T's places, then [row][12] at
 * 8192: the super-block's f16 d, two zero bytes, then the int8 scales of the step's 8 sub-blocks of 16 (block t's at
 * 4 + 2t, 5 + 2t); Q6_K has no rows form in the f16 order (its GGUF rows, 210-byte super-blocks, are what the tiles are
 * made from). Read by tcu_gemm_hm and tcu_dequant_f16 (the same values as the rows they were made from; Q6_KT's zero
 * weights are +0 where the rows' are -0 under a negative scale, which no sum can show); no other kernel takes them. */
#define TCU_TYPE_Q4_0T 1003
#define TCU_TYPE_Q8_0T 1009
#define TCU_TYPE_Q4_KT 1013
#define TCU_TYPE_Q6_KT 1014
#define TCU_HM_TCH 4608  /* bytes of a Q4_0T tile's step: 64 rows x (64 quant + 8 scale bytes) */
#define TCU_HM_TCH8 8704 /* Q8_0T's: 64 rows x (128 + 8) */
#define TCU_HM_TCHK 4864 /* Q4_KT's: 64 rows x (64 + 12) */
#define TCU_HM_TCH6 8960 /* Q6_KT's: 64 rows x (128 + 12) */
/* The tiled type of rows type t (Q4_0R -> Q4_0T, Q8_0R -> Q8_0T, Q4_KR -> Q4_KT, the GGUF Q6_K -> Q6_KT), 0 for another
 * type. */
int tcu_hm_tiled_type(int t);
/* The tiled copy's bytes for a matrix of type t (Q4_0R, Q8_0R, Q4_KR or Q6_K, or their tiled ids) of n_out rows of n_in (a
 * multiple of 128): ceil(n_out / 64) tiles x n_in / 128 steps x the type's chunk; 0 for another type. tcu_hm_tile writes it
 * on st from the rows w of type t (Q4_0R, Q8_0R or Q4_KR in tcu_repack's layout, Q6_K as GGUF's; row_bytes apart): tile
 * rows past n_out copy the last row; a shape the f16 order does not take (n_in not a positive multiple of 128, of 256 for
 * Q4_K and Q6_K: 0 bytes) or another type writes nothing. Layout: gemm_hmma.cu hm_ty, hm_qoff. */
size_t tcu_hm_tile_bytes(int t, int64_t n_in, int64_t n_out);
void tcu_hm_tile(int t, const void *w, size_t row_bytes, int64_t n_in, int64_t n_out, void *dst, cudaStream_t st);
#ifdef __CUDACC__
#define TCU_HD __host__ __device__
#else
#define TCU_HD
#endif
/* Where element i of an activation row sits in the f16 order's layout (rows of a multiple of 128 elements): in each
 * 128 elements (4 blocks of 32, t = 0..3), element E of block t goes to slab u (16 positions) and slot
 * 8 (j & 1) + 2 t + (j >> 1), where u = (E % 16) / 4 + 4 (E / 16) and j = E % 4: slab u is what MMA u of the 4-block
 * step multiplies, slot the MMA's k (gemm_hmma.cu: lane quad t holds block t's quant bytes, byte 4w + j). */
static inline TCU_HD int64_t tcu_hm_pos(int64_t i) {
    const int e = (int)(i & 127), t = e >> 5, E = e & 31, j = E & 3;
    const int u = ((E & 15) >> 2) + 4 * (E >> 4);
    return (i & ~(int64_t)127) + 16 * u + 8 * (j & 1) + 2 * t + (j >> 1);
}
/* The splits a decode-attention token at n_kv keys takes of the engine's SZ under the split rule `rule` (the keys a
 * split, tcu_attention_rps_norm's; rule <= 0: all SZ): one per `rule` keys, at least 1, at most SZ. A function of the
 * token's position alone, so of its bits; attention.cu's kernels (att_active_splits) and exec.c's att_need (the splits
 * a pass launches) both take it from here. */
static inline TCU_HD int tcu_att_splits(int n_kv, int SZ, int rule) {
    if (rule <= 0) return SZ;
    const int s = (n_kv + rule - 1) / rule;
    return s < 1 ? 1 : s > SZ ? SZ : s;
}
/* 1 when tcu_gemm_hm takes type t (Q4_0R, Q8_0R, Q4_KR and their tiles; Q6_K as Q6_KT only) at n_in on this device. */
int tcu_gemm_hm_supported(int t, int64_t n_in);
size_t tcu_gemm_hm_ws_floats(int64_t n_in, int64_t n_out, int m_max);
/* The K split's segment count for every shape (1..16; 0 the rule hm_splits): a measurement for gpu_hmma's sweep (a
 * count changes every output's bits), set before any call and any workspace sizing; the engine never sets it. */
void tcu_gemm_hm_splits_set(int s);
/* The chooser's arm replaced by arm (0..TCU_HM_ARMS-1) in calls of lo..hi columns where the arm reads the matrix's
 * layout (TERN_HM_ARM, an arm under measurement; no bit depends on the arm); hi 0: the chooser. Process-wide. */
void tcu_gemm_hm_arm_set(int lo, int hi, int arm);
int tcu_gemm_hm(int arm, int t, const void *w, size_t row_bytes, int64_t n_in, const int64_t rows[3], const uint16_t *x,
                int m, float *const y[3], float *ws, size_t ws_floats, cudaStream_t st);
/* The producers' f16 outputs (the norms' y16, the GLU's g16, tcu_f32_to_f16) in the f16 order's layout (on) or
 * row-major (off, the prefill GEMM's input): set by exec.c for each pass, read by those launchers (like tcu_set_pdl). */
void tcu_set_hm_layout(int on);
/* out (m, n_in) f16 = the x16 activations xq (tcu_quantize_x16's layout) as f16(d·q), row-major (tests/gpu/gpu_hmma.c's
 * inputs). */
void tcu_x16_to_f16(const void *xq, int m, int64_t n_in, uint16_t *out, cudaStream_t st);

/* ---- GEMM, prefill (src/backend/cuda/gemm.cu): cuBLASLt on f16 tiles ------------------------------------ */

typedef struct tcu_blas tcu_blas;
/* A cuBLASLt handle plus a workspace of ws_bytes. NULL (message in *err, 256 bytes) on failure. */
tcu_blas *tcu_blas_new(size_t ws_bytes, char *err);
void tcu_blas_free(tcu_blas *b);
/* Y (n, n_out) f32 = X (n, n_in) f16 · Wᵀ, W (n_out, n_in) f16; f32 accumulation (CUBLAS_COMPUTE_32F).
 * Returns 0, or -1 if cuBLASLt refuses the shape. */
int tcu_gemm_f16(tcu_blas *b, const uint16_t *w, const uint16_t *x, float *y, int n, int64_t n_in, int64_t n_out,
                 cudaStream_t st);
/* The same with bf16 operands (for tern roofline's matrix peak). */
int tcu_gemm_bf16(tcu_blas *b, const uint16_t *w, const uint16_t *x, float *y, int n, int64_t n_in, int64_t n_out,
                  cudaStream_t st);

/* ---- norms, RoPE, elementwise (src/backend/cuda/elementwise.cu) --------------------------------------- */

/* RMSNorm: y = x / sqrt(mean(x²) + eps) * g, x (n, dim) f32, g (dim) f32. y32 (n, dim) f32 and/or
 * y16 (n, dim) f16 (either may be NULL). CPU reference: cpu_rmsnorm. */
void tcu_rmsnorm(const float *x, const float *g, float eps, int n, int dim, float *y32, uint16_t *y16,
                 cudaStream_t st);
/* As tcu_rmsnorm with the residual add first (x += r, written back; r NULL: none) and, with xq (dim a
 * multiple of 32), the output also in the dp4a GEMV's x16 format (tcu_quantize_x16's bytes). */
void tcu_add_rmsnorm(float *x, const float *r, const float *g, float eps, int n, int dim, float *y32, uint16_t *y16,
                     void *xq, cudaStream_t st);
/* As tcu_add_rmsnorm, out of place: xo = x + r (r NULL: xo is not written; x is read only), normalised from
 * xo. For n <= TCU_MULTI_MAX on sm_90 and later: a thread-block cluster of C <= 8 CTAs a row, each reducing only
 * its slice and sharing the partial sums through distributed shared memory (C the largest with dim % (32 C) == 0
 * and dim / C <= 1024: tcu_rms_cluster_ctas; another summation order than one CTA's, the same for every such n;
 * elementwise.cu rmsnorm_cl_k). Elsewhere (rows that fit no such C, other devices): 8 CTAs a row for n <=
 * TCU_MULTI_MAX (1 above), each reducing the whole row (the same bits as one CTA) and writing a slice (C lowered to
 * 1 for rows wider than 8192 and to a divisor whose slices are whole 32-element blocks). x and xo must not overlap
 * when more than one CTA a row writes and r != NULL (with r NULL xo is never written). */
void tcu_add_rmsnorm_to(const float *x, float *xo, const float *r, const float *g, float eps, int n, int dim,
                        float *y32, uint16_t *y16, void *xq, cudaStream_t st);
/* tcu_add_rmsnorm_to with the configuration chosen by the caller: dec = 1 the decode one above (a GEMV-path pass of up
 * to TCU_PASS_MAX rows: every row the bits of its one-row call), dec = 0 one CTA a row (prefill chunks).
 * tcu_add_rmsnorm_to is dec = (n <= TCU_MULTI_MAX). */
void tcu_add_rmsnorm_dec_to(const float *x, float *xo, const float *r, const float *g, float eps, int n, int dim,
                            float *y32, uint16_t *y16, void *xq, int dec, cudaStream_t st);
/* Gemma's post-norm folded into the next norm: xo = x + rmsnorm(r) * pg (eps peps), then y = rmsnorm(xo) * g as
 * tcu_add_rmsnorm_to, in one cluster launch (elementwise.cu rmsnorm_cl_k<1>); r is scratch (normalised in place only
 * on the fallback path). tcu_rms_post_fused(n, dim): 1 where that launch runs (the cluster kernel's rows, n <=
 * TCU_PASS_MAX, a GEMV-path pass); elsewhere the caller runs tcu_rmsnorm_rows then tcu_add_rmsnorm_to. */
int tcu_rms_post_fused(int n, int dim);
void tcu_add_rmsnorm_post_to(const float *x, float *xo, float *r, const float *pg, float peps, const float *g, float eps,
                             int n, int dim, float *y32, uint16_t *y16, void *xq, cudaStream_t st);
/* launches of rmsnorm_cl_k issued by the calling host thread so far (a count, for the trace and the tests) */
uint64_t tcu_rms_cluster_count(void);
/* C, the CTAs a row tcu_add_rmsnorm_to's cluster kernel takes for rows of dim on this device now (n <=
 * TCU_MULTI_MAX), or 0 when that call would run the C-CTA kernel instead (no C fits, not sm_90). */
int tcu_rms_cluster_ctas(int dim);
/* RoPE on adjacent pairs (neox: pairs (x[i], x[i + n_rot/2])), x (n, n_heads, hd) f32 in place; token t at position
 * pos[t]; angle pos[t] * freq[i] evaluated in double as cpu_rope does, cos and sin times mscale (1: none). freq
 * (n_rot/2) f32. CPU reference: cpu_rope_ms. */
void tcu_rope(float *x, int n, int n_heads, int hd, int n_rot, int neox, float mscale, const int32_t *pos,
              const float *freq, cudaStream_t st);
/* ---- the paged KV cache (src/backend/cuda/kv.cuh) ------------------------------------------------------------
 * A layer's cache is a pool of n_rows = n_blocks * bs rows, bs = 1 << lbs a power of two (16..256): f16 K and V
 * (n_rows, n_head_kv * hd) each, or Q8_0 (an int8 plane (n_rows, n_head_kv * hd), then f16 scales (n_rows,
 * n_head_kv * hd / 32)). A sequence's block table bt (int32, device) maps its logical row j (a position) to physical
 * row bt[j >> lbs] * bs + (j & (bs - 1)); bt NULL is the identity (row j: one sequence's contiguous cache). Writes
 * take each token's physical row (slot); reads take tables. A kernel reads the same values in the same order whatever
 * the mapping, so the bits of a token depend on its position and its sequence's contents only. Pool rows past a
 * sequence's length may hold other sequences' (finite) values: the kernels mask them (the engine zeroes the pool at
 * allocation, so no row is ever NaN). */

/* KV-cache write: kc/vc (n_rows, row) f16; k, v (n, row) f32 stored at rows slot[t] (slot (n) int32, device). */
void tcu_kv_write(const float *k, const float *v, uint16_t *kc, uint16_t *vc, int n, int row, const int32_t *slot,
                  cudaStream_t st);
/* tcu_rope on q (n, nh*hd) and on k (n, nkv*hd) (angles of pos[t]), then tcu_kv_write of k and v at rows slot[t], in
 * one kernel: the same bits. cs: NULL, or tcu_rope_table's (cos, sin) of these n positions (then read instead of
 * computed; the same values). neox: GGML's NEOX pairing (x[i], x[i + n_rot/2]) instead of adjacent pairs (hd <= 256);
 * mscale: cos and sin times it (YaRN / LongRoPE attention factor; 1 none) where cs is NULL (cs carries its own).
 * qn, kn (hd floats each) or NULL: the per-head RMSNorm (eps) of q and k first, in the same kernel (Qwen3, Gemma 3;
 * where tcu_rope_kv_norm_ok(hd): 64, 128, 256). CPU reference: cpu_rmsnorm per head, then cpu_rope_ms. */
int tcu_rope_kv_norm_ok(int hd);
void tcu_rope_kv(float *q, float *k, const float *v, int n, int nh, int nkv, int hd, int n_rot, int neox, float mscale,
                 const int32_t *pos, const int32_t *slot, const float *freq, const float *cs, const float *qn,
                 const float *kn, float eps, uint16_t *kc, uint16_t *vc, cudaStream_t st);
/* cs (n, n_rot / 2) float pairs = (cos, sin) of the angle pos[t] * freq[i] as the RoPE kernels compute it
 * (rope.cuh rope_cs: double angle and cos/sin, rounded to f32), for tcu_rope_kv and tcu_rope_kv_q8, which then
 * read the pair instead of computing it: one table a pass, where each layer evaluated the same double-precision
 * cos and sin again on its critical path (+1.5% Q4_0 tg128, docs/ledger.md). */
void tcu_rope_table(const int32_t *pos, const float *freq, int n, int n_rot, float mscale, float *cs, cudaStream_t st);
/* g = act(g) * u, n elements (f32), act 0 SiLU (SwiGLU), 1 GELU tanh form (GeGLU); optionally also g16 = f16(g)
 * (NULL: skip). CPU reference: cpu_swiglu, cpu_geglu. */
void tcu_glu(int act, float *g, const float *u, int64_t n, uint16_t *g16, cudaStream_t st);
/* As tcu_glu with the f16 output g16 alone (g is read, not written; g16 non-NULL): the f16 order's decode passes, whose
 * down GEMM reads only g16 (the same g16 bits as tcu_glu's). */
void tcu_glu_f16(int act, const float *g, const float *u, int64_t n, uint16_t *g16, cudaStream_t st);
/* As tcu_glu on rows x dim (dim a multiple of 32), writing the output also in the x16 format into xq. */
void tcu_glu_x16(int act, float *g, const float *u, int rows, int dim, void *xq, cudaStream_t st);
/* g16 (rows, dim) f16 = act(gate) * up from gu (rows, 2 * dim) f32 whose row t is [gate_t | up_t] (a fused gate|up
 * GEMM's output, the prefill path): the same f16 bits as tcu_glu's g16 on the halves. */
void tcu_glu_rows(int act, const float *gu, int rows, int dim, uint16_t *g16, cudaStream_t st);
/* x (rows, dim) in place = RMSNorm of each row times w (dim), eps (a CTA a row; the per-head q/k norm with rows =
 * tokens x heads and dim = head_dim; Gemma's post-norms). A row's bits do not depend on rows. CPU: cpu_rmsnorm. */
void tcu_rmsnorm_rows(float *x, const float *w, float eps, int rows, int dim, cudaStream_t st);
/* q (n, dim) f32 in place: row t times 1 + f ln(floor(pos[t] / floor_scale) + 1) (the attention temperature of Llama 4
 * and Mistral 3; pos on the device). CPU reference: cpu_attn_temp. */
void tcu_attn_temp(float *q, int n, int dim, const int32_t *pos, float f, int floor_scale, cudaStream_t st);
/* x *= f (n elements); x = f * tanh(x / f) (logit soft-capping). */
void tcu_scale(float *x, int64_t n, float f, cudaStream_t st);
void tcu_softcap(float *x, int64_t n, float f, cudaStream_t st);
/* y += x, n elements f32. */
void tcu_add(float *y, const float *x, int64_t n, cudaStream_t st);
/* tcu_rope_kv writing a Q8_0 cache (tcu_attention_split_q8's layout) at rows slot[t]: each 32-element block of a KV
 * row gets tern's Q8_0 rule (quant.c: d = amax/127 stored f16, q = round-half-even(x * 127/amax)), the bytes
 * tern_quantize_activation(TERN_TYPE_Q8_0) gives for the same f32 values. hd 64, 128 or 256. */
void tcu_rope_kv_q8(float *q, float *k, const float *v, int n, int nh, int nkv, int hd, int n_rot, int neox,
                    float mscale, const int32_t *pos, const int32_t *slot, const float *freq, const float *cs,
                    const float *qn, const float *kn, float eps, int8_t *kq, uint16_t *ks, int8_t *vq, uint16_t *vs,
                    cudaStream_t st);
/* out (rows, row) f16, contiguous = a sequence's logical Q8_0 cache rows [0, rows) (q: the int8 plane (n_rows, row),
 * s: its f16 scales (n_rows, row / 32); logical row j read from physical row bt[j >> lbs] * bs + (j & (bs - 1)), bt
 * NULL: row j), each element q * f32(scale) rounded to f16 (row a multiple of 32): the prefill attention's input (then
 * tcu_attention_flash_rows with bt NULL). */
void tcu_kv_dequant_q8(const int8_t *q, const uint16_t *s, const int32_t *bt, int lbs, int rows, int row, uint16_t *out,
                       cudaStream_t st);
/* y (n, dim) += b (dim) per row. */
void tcu_add_bias(float *y, const float *b, int n, int dim, cudaStream_t st);
/* y = f16(x), n elements, value i at i or, under tcu_set_hm_layout(1), at tcu_hm_pos(i); _layout: hm given. */
void tcu_f32_to_f16(const float *x, uint16_t *y, int64_t n, cudaStream_t st);
void tcu_f32_to_f16_layout(const float *x, uint16_t *y, int64_t n, int hm, cudaStream_t st);
/* pos[i] = pos[i] + delta for i < n (advances the device-side position of a captured decode step). */
void tcu_pos_add(int32_t *pos, int n, int delta, cudaStream_t st);
/* Programmatic dependent launch (src/backend/cuda/pdl.cuh) for the decode kernels (RMSNorm, RoPE+KV, attention,
 * SwiGLU, x16 quantize, dp4a GEMV, argmax): each may start while the previous kernel drains, and waits for
 * it on the device before touching its data. on: 1 on sm_90 and later but in GEMV-path passes of over 16 tokens
 * (the backend sets it before each pass, exec.c PDL_MAX; a process-wide setting read at each launch and at a graph's
 * capture, not an A/B switch; no bit depends on it). */
void tcu_set_pdl(int on);

/* ---- attention (src/backend/cuda/attention.cu, attention_prefill.cu, attention_wgmma.cu) ---------------- */

/* Causal GQA attention over an f16 KV cache (the layout of cpu_attention, paged as above):
 * q (n, n_head, hd) f32; kc, vc (n_rows, n_head_kv, hd) f16; pos (n), bt_off (n) int32 and bt on the device. Token t
 * belongs to the sequence whose block table is bt + bt_off[t] (bt_off NULL: bt for every token; bt NULL: the
 * identity) and attends to its logical rows [0, pos[t]] (already written). out (n, n_head, hd) f32. Query head h
 * uses KV head h / (n_head / n_head_kv). hd in {64, 128, 256} or any multiple of 32 up to 256. f32 softmax and
 * accumulation (online softmax, Milakov & Gimelshein 2018); n > TCU_MULTI_MAX with bt_off NULL (one sequence) and
 * tcu_attention_flash_ok runs tcu_attention_flash (f16 Q and P on the tensor cores). The grid does not depend on pos
 * or the tables, so the call can be captured in a graph. win > 0: a sliding window, token t attends to rows
 * [max(0, pos[t] - win + 1), pos[t]] only (tern_layer.window; such prefill chunks run flash v3, which takes the window).
 * CPU reference: cpu_attention_paged. */
void tcu_attention(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos, const int32_t *bt,
                   const int32_t *bt_off, int lbs, int win, int n_head, int n_head_kv, int hd, float scale, float *out,
                   cudaStream_t st);
/* As tcu_attention with the decode configuration (n <= TCU_MULTI_MAX) split over `splits` CTAs per head
 * ("flash-decoding", attention.cu v2) through ws (tcu_attention_ws_bytes(n, n_head, hd, splits) bytes);
 * splits <= 1 or ws NULL: tcu_attention. A token at position p uses min(splits, ceil((p + 1) / 256)) of the
 * grid's splits (a function of its position only), so every token gets the same bits in any call of n <= 16,
 * whichever sequences the other tokens belong to. */
void tcu_attention_split(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                         const int32_t *bt, const int32_t *bt_off, int lbs, int win, int n_head, int n_head_kv, int hd,
                         float scale, float *out, float *ws, int splits, cudaStream_t st);
size_t tcu_attention_ws_bytes(int n, int n_head, int hd, int splits);
/* splits for a launch that carries only the first sl of the engine's splits (1 <= sl < splits; else all): the
 * workspace's stride and each token's split count stay the engine's (no bit changes), CTAs no token of the pass can
 * use are not launched, and the physical warps follow the CTAs launched (exec.c att_need; ledger 2026-12-06,
 * "the splits its tokens use") */
#define TCU_ATT_FIT_BIT (1 << 30)
#define TCU_ATT_FIT(splits, sl) ((sl) > 0 ? (splits) | (sl) << 8 | TCU_ATT_FIT_BIT : (splits))
/* The decode attention's physical warps a CTA, process-wide: 4, 8 or 16 for every call, 0 the rule (by the grid's
 * CTAs). No bit depends on it: the 16 virtual warps fix which rows each sums and the order of their merge. */
void tcu_attention_warps_set(int warps);
/* The decode attention's MS, process-wide: over an f16 cache at hd 64 or 128, a pass whose splits (the launch's,
 * TCU_ATT_FIT) are 2..4 runs a token's splits in one CTA and merges them there, with no combine kernel (attention.cu
 * att_ms_merge): min_ctas -1 (the default) where att_ms_rule takes it (2..3 splits, MS's grid 0.7..1 wave), 0 never,
 * N > 0 where the rule grid (tokens x KV heads x head chunks x splits) has at least N CTAs. No bit depends on it. tcu_attention_ms_count: the MS launches this host thread has issued. */
void tcu_attention_ms_set(int min_ctas);
uint64_t tcu_attention_ms_count(void);
/* tcu_attention_split over a Q8_0 KV cache (--cache-type-k/v q8_0): kq, vq (n_rows, n_head_kv, hd) int8 and
 * ks, vs (n_rows, n_head_kv * hd / 32) f16 scales (Q8_0 blocks of 32 along a row, split into planes: GGUF
 * spec's block_q8_0, d then qs). n <= TCU_MULTI_MAX (decode, verify), hd 64, 128 or 256; the same bits for a
 * token in any chunk of <= 16. The kernel: v5, 16 int8 of one row a lane (attention_q8w_kernel), where
 * tcu_attention_q8_wide says so, else v2's transposing kernel (another summation order). Longer chunks:
 * dequantize with tcu_kv_dequant_q8 and call tcu_attention_flash_rows. v5 reads q as float4 and K/V rows as
 * 16-byte copies: q, kq and vq 16-byte aligned (rows are, as hd is a multiple of 64), ks and vs 4-byte. */
void tcu_attention_split_q8(const float *q, const int8_t *kq, const int8_t *vq, const uint16_t *ks, const uint16_t *vs,
                            int n, const int32_t *pos, const int32_t *bt, const int32_t *bt_off, int lbs, int win,
                            int n_head, int n_head_kv, int hd, float scale, float *out, float *ws, int splits,
                            cudaStream_t st);
/* 1 when a Q8_0-cache call of <= TCU_MULTI_MAX tokens with this head shape runs v5 on the current device: the
 * launcher's own chooser (a supported shape, and the device grants v5's shared memory: up to ~150 KiB a CTA at
 * hd 256; sm_86/sm_89 grant 99 KiB). tcu_attention_q8w_count: the v5 launches this host thread has issued. */
int tcu_attention_q8_wide(int n_head, int n_head_kv, int hd);
uint64_t tcu_attention_q8w_count(void);
/* The decode attention (n <= TCU_PASS_MAX: tcu_attention_decode's configuration, f16 or with kc, vc the
 * int8 planes and ks, vs their scales; ks NULL: the f16 cache) with its output also written as the dp4a
 * GEMV's x16 activations xq (tcu_x16_bytes(n, n_head * hd) bytes; tcu_quantize_x16's bytes of out), by the
 * kernel that writes out: one launch fewer a layer than the pair. */
void tcu_attention_decode_x16(const float *q, const void *kc, const void *vc, const uint16_t *ks, const uint16_t *vs,
                              int n, const int32_t *pos, const int32_t *bt, const int32_t *bt_off, int lbs, int win,
                              int n_head, int n_head_kv, int hd, float scale, float *out, float *ws, int splits, void *xq,
                              cudaStream_t st);
/* The same with out also written as f16 bits in the f16 order's layout into h16 (n x n_head * hd halves at
 * tcu_hm_pos; n_head * hd a multiple of 128): tcu_f32_to_f16_layout(out, h16, n * n_head * hd, 1)'s bytes, by the
 * kernel that writes out (the f16 order's O GEMM input without a conversion launch). */
void tcu_attention_decode_h16(const float *q, const void *kc, const void *vc, const uint16_t *ks, const uint16_t *vs,
                              int n, const int32_t *pos, const int32_t *bt, const int32_t *bt_off, int lbs, int win,
                              int n_head, int n_head_kv, int hd, float scale, float *out, float *ws, int splits,
                              uint16_t *h16, cudaStream_t st);
/* The decode configuration for a pass of n <= TCU_PASS_MAX tokens of any sequences (ks NULL: the f16 cache; else kc,
 * vc the Q8_0 planes, hd 64/128/256), each token the bits of its one-token call: tcu_attention_split's and
 * tcu_attention_split_q8's kernels at n <= TCU_MULTI_MAX, the same configuration above it (tcu_attention_split would
 * take a longer chunk of one sequence to the prefill kernels). ws: tcu_attention_ws_bytes(n, ...). */
void tcu_attention_decode(const float *q, const void *kc, const void *vc, const uint16_t *ks, const uint16_t *vs, int n,
                          const int32_t *pos, const int32_t *bt, const int32_t *bt_off, int lbs, int win, int n_head,
                          int n_head_kv, int hd, float scale, float *out, float *ws, int splits, cudaStream_t st);
/* Causal GQA flash attention on the tensor cores for prefill chunks (FlashAttention-2, Dao 2023): the
 * tcu_attention contract for hd in {64, 96, 128, 256} (96: v3 only) and n_head a multiple of n_head_kv, any pos, no
 * window (v3 takes one: tcu_attention_flash_v3's win, as tcu_attention's; tcu_attention sends windowed chunks there): Q and P rounded
 * to f16, f32 scores, softmax and accumulation (relative error ~3e-4 vs float64, not the bits of v1).
 * The one chooser, tcu_attention_flash_variant (tcu_attention_flash_ok is it != 0 for kv_rows 0):
 *   TCU_FLASH_V6B  attention_wgmma.cu v6b, wgmma with K/V by TMA from a producer warpgroup (sm_90a, its sm_90a
 *                  code loaded, the driver's tensor-map encoder), when the caller gives kv_rows > 0: pingpong +
 *                  intra-warpgroup pipelining at hd 64 and 128 (FlashAttention-3, Shah et al. 2024, section 3),
 *                  plain at hd 256;
 *   TCU_FLASH_V6A  v6a, wgmma with K/V by cp.async (sm_90a; hd 64 and 128);
 *   TCU_FLASH_V3   attention_prefill.cu v3, mma.sync (sm_80 and later);
 *   0              not a flash shape.
 * Each version sums in another order (other bits). tcu_attention_flash_rows(kv_rows) runs the chooser's variant (a
 * v6 launcher that still declines falls to the next); tcu_attention_flash is it with kv_rows 0. The n tokens are one
 * sequence (a prefill chunk): bt its block table (NULL: the identity), lbs log2 of the page rows (16..256 for v6b;
 * any power of two for v6a and v3, which map a row at a time); a 64- or 128-row K/V tile spanning several pages is
 * loaded in pieces of a page. kv_rows, in logical rows: rows [0, kv_rows) are readable and hold finite values (a
 * row past a token's pos gets weight 0, and 0 * NaN is not 0); v6b reads rows past it as zeros (paged: a page that
 * reaches past it reads the pool's finite rows there, masked); kv_rows >= every pos + 1. */
enum { TCU_FLASH_V3 = 3, TCU_FLASH_V6A = 6, TCU_FLASH_V6B = 7 };
int tcu_attention_flash_variant(int n_head, int n_head_kv, int hd, int kv_rows);
int tcu_attention_flash_ok(int n_head, int n_head_kv, int hd);
void tcu_attention_flash(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                         const int32_t *bt, int lbs, int n_head, int n_head_kv, int hd, float scale, float *out,
                         cudaStream_t st);
void tcu_attention_flash_rows(const float *q, const uint16_t *kc, const uint16_t *vc, int kv_rows, int n,
                              const int32_t *pos, const int32_t *bt, int lbs, int n_head, int n_head_kv, int hd,
                              float scale, float *out, cudaStream_t st);
/* The launchers of the versions themselves (tests): tcu_attention_flash_v3 (v3, any device from sm_80; win > 0 a
 * sliding window as tcu_attention's; returns 0 for a shape that is not a flash shape); the v6 ones: q (n, n_head, hd) f32, kc/vc (rows, n_head_kv, hd) f16 bits (16-byte
 * aligned), pos (n) int32 on the device, out (n, n_head, hd) f32. tcu_attention_wg (v6a, hd 64 and 128) and
 * tcu_attention_wg_tma (v6b, hd 64, 128, 256; kv_rows as above) launch and return 1, or return 0 (nothing
 * launched) where the shape or the device does not allow it; tcu_attention_wg_ok / tcu_attention_wg_tma_ok: 1 when
 * they would launch (the shape, and this device: compute capability 9.0, the sm_90a code, the shared-memory opt-in;
 * v6b also the driver's tensor-map encoder). */
int tcu_attention_flash_v3(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos,
                           const int32_t *bt, int lbs, int win, int n_head, int n_head_kv, int hd, float scale, float *out,
                           cudaStream_t st);
int tcu_attention_wg(const float *q, const uint16_t *kc, const uint16_t *vc, int n, const int32_t *pos, const int32_t *bt,
                     int lbs, int n_head, int n_head_kv, int hd, float scale, float *out, cudaStream_t st);
int tcu_attention_wg_tma(const float *q, const uint16_t *kc, const uint16_t *vc, int kv_rows, int n, const int32_t *pos,
                         const int32_t *bt, int lbs, int n_head, int n_head_kv, int hd, float scale, float *out,
                         cudaStream_t st);
int tcu_attention_wg_ok(int n_head, int n_head_kv, int hd);
int tcu_attention_wg_tma_ok(int n_head, int n_head_kv, int hd);

/* ---- sampling (src/backend/cuda/sample.cu) ------------------------------------------------------------ */

/* out[0] = index of the largest of x[0..n) (lowest index on ties; NaN never chosen unless all NaN),
 * as tern_argmax. */
void tcu_argmax(const float *x, int n, int32_t *out, uint64_t *keys, cudaStream_t st);
/* out[r] = tcu_argmax of row r of x (rows 1..TCU_PASS_MAX, ld floats apart), all rows in one grid (two
 * launches in all, where a loop of tcu_argmax makes two a row); other row counts: nothing is launched.
 * keys (both): the caller's device scratch of TCU_PASS_MAX 64-bit words, zero before the first call (each
 * call leaves it zero); calls sharing one buffer must be in one stream's order. */
void tcu_argmax_rows(const float *x, int n, int rows, size_t ld, int32_t *out, uint64_t *keys, cudaStream_t st);

/* The sampling chain of src/runtime/sampler.c on the device, for temp > 0 and 0 < k < n, k <= TCU_SAMPLE_KMAX:
 * repeat penalty on the distinct ids pen_ids[0..n_pen) (v > 0 ? v / penalty : v * penalty), top-k (larger
 * logit first, lower id on ties, NaN never), top-p and min-p at temperature 1, then temperature and the
 * draw with the host's uniform u[0] in [0, 1), all in sampler.c's order of float/double operations.
 * logits (n) f32 are not modified; scratch: n floats. out[0] = the sampled id, or -1 if every logit is
 * NaN. One CTA (graph-capturable; its time is tens of microseconds at n = 128k). CPU reference:
 * tern_sampler_sample with top_k = k. */
#define TCU_SAMPLE_KMAX 1024
void tcu_sample(const float *logits, int n, const int32_t *pen_ids, int n_pen, float penalty, int k, float top_p,
                float min_p, float temp, const double *u, float *scratch, int32_t *out, cudaStream_t st);

/* ---- roofline probes (src/backend/cuda/roofline.cu) --------------------------------------------------- */

/* Read every byte of buf (bytes, a multiple of 16) with coalesced 16-byte loads; the xor of all words is
 * written to sink[0] (keeps the loads alive). */
void tcu_read_stream(const void *buf, size_t bytes, uint32_t *sink, cudaStream_t st);
/* dst = src, bytes (a multiple of 16), 16-byte loads and stores. */
void tcu_copy_stream(void *dst, const void *src, size_t bytes, cudaStream_t st);
/* Fill n bytes with a reproducible pseudo-random pattern (never zeros) from seed. */
void tcu_fill_random(void *buf, size_t bytes, uint64_t seed, cudaStream_t st);
/* x (n) = reproducible pseudo-random values uniform in [-1, 1) from seed, finite, stored as kind
 * (TCU_FILL_F32 float, TCU_FILL_F16 / TCU_FILL_BF16 uint16_t bits, round to nearest even): matmul
 * operands to time on (tcu_fill_random's bit patterns can be NaN/Inf as f16/bf16/f32). */
enum { TCU_FILL_F32 = 0, TCU_FILL_F16 = 1, TCU_FILL_BF16 = 2 };
void tcu_fill_uniform(void *x, size_t n, int kind, uint64_t seed, cudaStream_t st);
/* A chain of k dependent kernels of grid x threads (the latency floor of a kernel boundary): step i reads the
 * words step i-1 wrote (a, b: grid words each, used in turn; zero both first) and writes them + 1, so afterwards
 * every word of b (k odd) or a (k even) holds k. pdl != 0 launches each with programmatic dependent launch
 * (cudaLaunchAttributeProgrammaticStreamSerialization; the kernel triggers at entry and waits before its read).
 * Capturable in a CUDA graph. Returns 0, or -1 when a launch failed. */
int tcu_boundary_chain(unsigned *a, unsigned *b, int k, int grid, int threads, int pdl, cudaStream_t st);
/* The same k steps inside one kernel of grid CTAs with a grid barrier between steps (ctr: one device word,
 * zeroed by this call; all CTAs must be resident). Returns 0, -2 when grid exceeds the resident CTAs, -1 on a
 * CUDA error. */
int tcu_barrier_chain(unsigned *a, unsigned *b, unsigned *ctr, int k, int grid, int threads, cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif
