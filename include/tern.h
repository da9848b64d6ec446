/* tern.h: the public C API of tern (CPU engine).
 *
 * Conventions: innermost dimension last in every shape written here, e.g. logits: (n_tokens, n_vocab)
 * f32 means n_vocab contiguous floats per token. Functions that can fail return NULL or a negative
 * value and leave a one-line message in tern_last_error(). Handles are opaque.
 */
#ifndef TERN_H
#define TERN_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tern_model tern_model;
typedef struct tern_context tern_context;
typedef struct tern_sampler tern_sampler;

/* Run-time settings, one table for the process (src/core/config.c gives each default and the measurement behind
 * it). The library never reads the environment; the tern CLI maps TERN_SIMD, TERN_MATMUL_REF, TERN_TRACE,
 * TERN_CUDA_GRAPH, TERN_CUDA_TIMING, TERN_GEMV_CHUNK, TERN_ATT_RPS, TERN_ATT_WARPS and
 * TERN_PDL_MAX onto this table (docs/measuring.md). Set it before creating engines. */
typedef struct {
    int simd_scalar;      /* 1: the scalar CPU kernels (bit-identical to AVX2; the arm that checks it) */
    int matmul_ref;       /* 1: the CPU reference matmul (f32 activations, double dots) for float64 comparisons */
    int decode_prefetch;  /* CPU decode: weight bytes software-prefetched ahead of the row being dotted (0: off) */
    int decode_chunk_div; /* CPU decode: work items of rows / (threads * D) rows (0: prefill's 16-row items) */
    int trace;            /* 1: count kernel dispatches per path, print them at exit (CPU) / engine free (CUDA) */
    int cuda_graph;       /* 1: passes of up to 16 tokens replay captured CUDA graphs; 0: launched each time */
    int cuda_timing;      /* 1: device time of each pass from events, printed at engine free */
    int gemv_chunk;       /* 1: the CUDA dp4a GEMVs in the chunk-major order, with passes of up to 64 tokens through the
                           * int8 MMA GEMM (issue 26); 2: the f16 order where every layer matrix has it (gemm_hmma.cu:
                           * Q4_0, Q8_0, Q4_K, and Q6_K as tiles on one GPU; every pass of 1..64 tokens through the f16
                           * MMA GEMM; a head tied to Q6_K embeddings on the dp4a twins; else as 1). Default 0 (one
                           * sequence); the CLI asks for 2 for engines of many sequences (cli_batch_order) */
    int att_rps;          /* CUDA decode attention: keys a split (and the grid's splits: n_ctx / att_rps, at most 16);
                           * 0: 256, other values clamped to 16..4096. An arm under measurement (short contexts run
                           * one split on 8 CTAs); process-wide, set before making engines: an engine made under
                           * another value makes the earlier engines' passes fail (their bits would change) */
    int att_warps;        /* CUDA decode attention: physical warps a CTA, 4, 8 or 16 (0: the rule by the grid); the
                           * bits do not depend on it (16 virtual warps). An arm under measurement */
    int att_ms;           /* CUDA decode attention over an f16 cache at hd 64 / 128: a token's splits (2..4) in one CTA.
                           * -1 (default): MS's rule (2..3 splits, its grid 0.7..1 wave; attention.cu att_ms_rule);
                           * 0: never; N > 0 (an arm): where the rule's grid has at least N CTAs. The bits do not
                           * depend on it */
    int pdl_max;          /* CUDA (sm_90+): programmatic dependent launch in GEMV-path passes of up to this many tokens,
                           * 1..64 (0: the rule, 48 and 64 in the f16 order, with its windows; prefill passes keep it;
                           * -1: none). No bit depends on it. An arm under measurement; process-wide, read when an
                           * engine is made */
    int hm_arm_lo, hm_arm_hi, hm_arm; /* CUDA f16 order: passes of hm_arm_lo..hm_arm_hi tokens run gemm_hmma.cu's arm
                           * hm_arm (0..11; the rows' arms below 6 on a rows matrix, the tiled ones from 6 on a tiled
                           * one, else the chooser) on every matrix; hm_arm_hi 0: the chooser everywhere. No bit depends
                           * on the arm. An arm under measurement (TERN_HM_ARM=LO-HI:ARM); process-wide */
} tern_config;
tern_config tern_config_get(void);
void tern_config_set(const tern_config *c);

/* Last error message of the calling thread ("" if none). */
const char *tern_last_error(void);

/* Load a GGUF model (mmapped, read-only). progress: print a loading progress line to stderr.
 * Errors: missing/unreadable file, bad GGUF, unsupported architecture or tensor type, missing or
 * mis-shaped tensors. */
tern_model *tern_model_load(const char *path, int progress);
void tern_model_free(tern_model *m);

/* Hyperparameters. */
int tern_model_n_vocab(const tern_model *m);
int tern_model_n_ctx_train(const tern_model *m);
int tern_model_n_embd(const tern_model *m);
int tern_model_n_layer(const tern_model *m);
/* Human-readable one-line description: arch, name, size, type counts. */
const char *tern_model_desc(const tern_model *m);
/* general.architecture as the recipe row names it ("llama", "qwen2", ...). */
const char *tern_model_arch(const tern_model *m);
/* The stored type of most of the matrices' bytes, upper case as llama-bench prints it ("Q4_0", "Q4_K", "F16"). */
const char *tern_model_weight_type(const tern_model *m);
/* The file's general.file_type by llama.cpp's name for it (llama_model_ftype_name: "Q4_K - Medium", "Q4_0", ...), as
 * llama-bench's model column shows it; NULL when the file has none (HF directories) or a value without a name here. */
const char *tern_model_file_type(const tern_model *m);
/* Number of parameters and bytes of tensor data. */
uint64_t tern_model_n_params(const tern_model *m);
uint64_t tern_model_size_bytes(const tern_model *m);
/* tokenizer.chat_template or NULL. */
const char *tern_model_chat_template(const tern_model *m);

/* Tokenizer (see src/text/tokenizer.h for the algorithms). Returns the number of ids (may exceed max),
 * or -1 on error. add_bos: prepend BOS when the vocab has one; special: parse control-token texts. */
int tern_model_tokenize(const tern_model *m, const char *text, size_t len, int add_bos, int special,
                        int32_t *out, int max);
/* As tern_model_tokenize; *n_dropped (may be NULL) gets the number of input bytes the vocabulary cannot encode
 * (dropped by a byte-level BPE vocabulary that lacks their byte tokens, as llama.cpp drops them; UNK under
 * SentencePiece without byte fallback). */
int tern_model_tokenize_ex(const tern_model *m, const char *text, size_t len, int add_bos, int special,
                           int32_t *out, int max, size_t *n_dropped);
/* tokenizer.ggml.add_bos_token as the model says (llama.cpp default when absent). */
int tern_model_add_bos(const tern_model *m);
/* Bytes of a token for display (control tokens -> "" unless show_special). Returns byte count. */
int tern_model_token_to_piece(const tern_model *m, int32_t id, char *buf, int buflen, int show_special);
/* 1 if the token ends generation (EOS/EOT/<|im_end|>...). */
int tern_model_is_eog(const tern_model *m, int32_t id);

/* A context: KV cache of n_ctx positions (f16; Q8_0 on CUDA via tern_context_params) and scratch buffers; n_threads workers for matmuls
 * (<= 0: number of cores). n_ctx <= 0 means min(n_ctx_train, 4096). Runs on the default device
 * (TERN_DEVICE_AUTO below). */
tern_context *tern_context_new(tern_model *m, int n_ctx, int n_threads);

/* Where a context runs. AUTO: CUDA when the build has it and a GPU is present, else the CPU (the tern CLI maps
 * TERN_DEVICE onto its --device default). */
typedef enum { TERN_DEVICE_AUTO = 0, TERN_DEVICE_CPU = 1, TERN_DEVICE_CUDA = 2 } tern_device;
typedef struct {
    int n_ctx;         /* <= 0: min(n_ctx_train, 4096) */
    int n_threads;     /* CPU workers; <= 0: number of cores */
    tern_device device;
    int ubatch;        /* tokens per prefill chunk; <= 0: 256 on the CPU, 2048 on CUDA (bench/sweeps/ubatch.md) */
    int verbose;       /* print the device memory plan to stderr */
    int n_layer;       /* run only the first n_layer layers, then the output norm and head (the self-
                        * speculative drafter); <= 0 or >= the model's: all */
    int tp;            /* CUDA tensor parallelism over GPUs 0..tp-1 (NCCL); <= 1: one GPU. Needs the CUDA device;
                        * the model must split (heads, KV heads divisible by tp; see backend_cuda.h) */
    int verify_fast;   /* CUDA: chunks of 2..16 tokens (speculative verify) through the tensor-core GEMM instead
                        * of the bit-exact multi-row GEMV: faster, not bit-identical to decode steps (0: exact);
                        * a CPU context refuses it */
    int cache_type_k;  /* KV cache element type (tern_cache_type): TERN_CACHE_F16 (0, default) or TERN_CACHE_Q8_0 */
    int cache_type_v;  /* (CUDA only, K and V the same type; llama.cpp's --cache-type-k/--cache-type-v) */
    int swa_compact;   /* 1: a model's sliding-window layers keep their KV rows in a second, smaller pool that holds
                        * only the last window + swa_margin positions of each sequence (llama.cpp's SWA cache): the
                        * same logits, less memory; tern_context_truncate further back than that fails, and a prefix
                        * cache hit ends where the window rows it needs are still held (tern_seq_attach_prefix).
                        * 0 (the library's default; the CLI's run, chat and serve set 1 unless --swa-full): one pool
                        * for every layer. No effect on a
                        * model without windowed layers. CPU and CUDA. */
    int swa_margin;    /* positions kept past the window for rollback (speculation, truncate); <= 0: 64 */
} tern_context_params;
/* KV cache element types. Q8_0: blocks of 32 values, an f16 scale and 32 int8 (GGUF block_q8_0). */
typedef enum { TERN_CACHE_F16 = 0, TERN_CACHE_Q8_0 = 1 } tern_cache_type;
/* "f16" -> TERN_CACHE_F16, "q8_0" -> TERN_CACHE_Q8_0, else -1. */
int tern_cache_type_parse(const char *s);
tern_context_params tern_context_default_params(void);
/* As tern_context_new with explicit parameters. Errors: TERN_DEVICE_CUDA without a CUDA build or GPU, a
 * device memory plan that does not fit (the message gives the numbers). */
tern_context *tern_context_new_ex(tern_model *m, const tern_context_params *p);
/* "cpu" or "cuda": the device the context runs on. */
const char *tern_context_device(const tern_context *c);
/* Name of the CUDA device (e.g. "NVIDIA H200"), or "" if none is usable or the build has no CUDA. */
const char *tern_cuda_name(void);
/* The float order the last CUDA engine of this process runs its GEMV-path passes in: 0 today's (one sequence), 1 the
 * chunk order, 2 the f16 order (tern_config.gemv_chunk asks for one; an engine takes 2 only where every layer matrix has the
 * f16 GEMM and the head it or the dp4a twins, else 1). 0 before any CUDA engine and in a CPU build. */
int tern_cuda_order(void);
/* A measurement instrument (TERN_TIMELINE): from now to the process's exit, every kernel's device start and end (CUDA
 * graphs' kernels too; ns of CUPTI's clock) as CSV rows in path (columns: src/backend/cuda/timeline.c), through CUPTI
 * opened at run time from lib (a path; NULL or "": libcupti.so.13 and the toolkit's folders). 0, or -1 with the reason
 * (no CUDA build, no CUPTI, an unwritable path). */
int tern_cuda_timeline(const char *path, const char *lib);
void tern_context_free(tern_context *c);
int tern_context_n_ctx(const tern_context *c);
/* Tokens already in the KV cache. */
int tern_context_n_past(const tern_context *c);
/* Forget KV entries at positions >= n_past (n_past <= current). Returns 0, or -1 if out of range. */
int tern_context_truncate(tern_context *c, int n_past);

/* Run tokens[0..n) at positions n_past..n_past+n-1 (prefill when n > 1, decode when n == 1),
 * append them to the KV cache, and write logits:
 *   all_logits == 0: logits of the last token, (n_vocab) f32;
 *   all_logits != 0: logits of every token, (n, n_vocab) f32.
 * logits may be NULL. Returns 0, or -1 if n_past + n > n_ctx or a token id is out of range. */
int tern_eval(tern_context *c, const int32_t *tokens, int n, float *logits, int all_logits);
/* As tern_eval, but returns in *next the greedy choice (argmax, lowest id on ties) after the last token
 * instead of its logits. On CUDA the argmax runs on the device and only the id is copied back; the
 * decode step (n == 1) replays a captured CUDA graph. Returns 0 or -1 as tern_eval. */
int tern_eval_greedy(tern_context *c, const int32_t *tokens, int n, int32_t *next);

/* As tern_eval with every row's logits, returning only each row's argmax in ids (n), lowest id on ties:
 * ids[i] is the greedy choice after tokens[0..i]. On CUDA the argmaxes run on the device; chunks of up to
 * 16 tokens use the decode kernels, so every row has the bits of a one-token decode step (the exact
 * verify of speculative decoding); on the CPU every chunk size has that property. Returns 0 or -1. */
int tern_eval_argmax(tern_context *c, const int32_t *tokens, int n, int32_t *ids);

/* ---- engine, sequences, batches --------------------------------------------------------------
 * An engine runs one model on one device for many sequences at once: it owns the paged KV cache (a pool of
 * blocks; each sequence holds a block table) and runs a batch of tokens of several sequences, prefill chunks and
 * decode tokens mixed, as one step. A sequence's tokens do not depend on what else is in its batch (batch
 * invariance). tern_context (below) is an engine with one sequence. */
typedef struct tern_engine tern_engine;
typedef struct tern_seq tern_seq;
typedef struct tern_batch tern_batch;
typedef struct {
    tern_context_params ctx; /* device, threads, ubatch, KV cache type, n_layer, tp, verify_fast, verbose; ctx.n_ctx:
                              * positions a sequence at most (<= 0: min(n_ctx_train, 4096)) */
    int n_seq_max;           /* sequences alive at once (<= 0: 1); the pool holds n_seq_max * n_ctx rows unless kv_tokens */
    int kv_tokens;           /* KV pool rows (<= 0: n_seq_max * n_ctx), rounded up to whole blocks */
    int block_size;          /* rows a KV block: a power of two, 16..256 (<= 0: the backend's default) */
    int prefix_cache;        /* 1: keep full KV blocks keyed by their token prefix after their sequences, shared by
                              * reference count, the least recently used dropped when the pool runs out
                              * (tern_seq_attach_prefix; src/runtime/prefix_cache.h); 0: off */
} tern_engine_params;
tern_engine_params tern_engine_default_params(void);
/* Errors: as tern_context_new_ex; a block size that is not a power of two in 16..256. */
tern_engine *tern_engine_new(tern_model *m, const tern_engine_params *p);
void tern_engine_free(tern_engine *e);
/* "cpu" or "cuda". */
const char *tern_engine_device(const tern_engine *e);
int tern_engine_n_ctx(const tern_engine *e);
/* KV pool: blocks in use and in all, rows a block. */
void tern_engine_kv_usage(const tern_engine *e, int *used, int *total, int *block_size);

/* The KV pool in detail: blocks in use (by sequences or the prefix cache) and in all, rows a block; prefix-cache
 * entries, those held by the cache alone (free to evict), blocks evicted so far. */
typedef struct {
    int blocks_used, blocks_total, block_size;
    int cached_blocks, cached_idle;
    int64_t evicted;
    int swa_blocks_used, swa_blocks_total; /* the window pool's blocks (swa_compact; 0 without it) */
} tern_kv_stats;
void tern_engine_kv_stats(const tern_engine *e, tern_kv_stats *st);

/* A new empty sequence (position 0), or NULL when n_seq_max are alive. */
tern_seq *tern_seq_new(tern_engine *e);
/* A new sequence holding src's tokens: it shares src's KV blocks by reference count (a block is copied when
 * either sequence writes into a shared one). NULL when n_seq_max are alive. */
tern_seq *tern_seq_fork(tern_seq *src);
/* Free the sequence and return its blocks to the pool. */
void tern_seq_free(tern_seq *s);
/* Tokens in the sequence's KV cache (its next position). */
int tern_seq_n_past(const tern_seq *s);
/* The sampler TERN_BATCH_SAMPLE rows of s draw with (the caller's; NULL: none). A sequence's sampler state (RNG,
 * parameters) is its own; its history is the sequence's tokens. A fork starts without one. */
void tern_seq_set_sampler(tern_seq *s, tern_sampler *smp);
/* Forget positions >= n_past (<= the current count). 0, or -1 if out of range. */
int tern_seq_truncate(tern_seq *s, int n_past);
/* Prefix cache (tern_engine_params.prefix_cache): give the empty sequence s the cached KV blocks of the longest
 * prefix of tokens[0..n) in whole blocks, leaving at least one token to run (its logits are wanted); with
 * swa_compact, the longest such prefix whose last window of rows the cache still holds in the window pool. s then holds
 * that many positions (their tokens its history), as if it had run them. Returns the positions attached: a multiple
 * of the block size in [0, n - 1]; 0 with the cache off; -1 if s is not empty or tokens is NULL with n > 0. */
int tern_seq_attach_prefix(tern_seq *s, const int32_t *tokens, int n);

/* What a batch row asks for after the step: nothing, its logits, its greedy id, or a draw of its sequence's sampler
 * (tern_seq_set_sampler: the chain over the sequence's own history, repeat penalty included; on CUDA run on the
 * device where the sampler's parameters allow, one uniform draw of its RNG, the same id the host chain would give). */
enum { TERN_BATCH_NONE = 0, TERN_BATCH_LOGITS = 1, TERN_BATCH_ARGMAX = 2, TERN_BATCH_SAMPLE = 3 };
/* A batch of up to n_max tokens (grows on demand; n_max <= 0: 512). */
tern_batch *tern_batch_new(int n_max);
void tern_batch_free(tern_batch *b);
void tern_batch_clear(tern_batch *b);
/* Append token to s at s's next position (its n_past plus the tokens of s already in the batch); out:
 * TERN_BATCH_NONE, _LOGITS (the row's logits, tern_batch_logits), _ARGMAX or _SAMPLE (the id, tern_batch_id).
 * Returns the row, or -1 if out is unknown or s is NULL. */
int tern_batch_add(tern_batch *b, tern_seq *s, int32_t token, int out);
int tern_batch_n(const tern_batch *b);
/* Run every token of b in one step: each sequence's tokens are appended to its KV cache; each asked row gets its
 * output. Returns 0, or -1 (nothing changed) if a token id is out of range, a sequence would pass the
 * engine's n_ctx, a sequence belongs to another engine, or the KV pool has no free block. */
int tern_engine_decode(tern_engine *e, tern_batch *b);
/* After tern_engine_decode: row's greedy or sampled id (_ARGMAX, _SAMPLE), or its logits, (n_vocab) f32 valid until
 * the next decode of b (_LOGITS); -1 / NULL for a row that did not ask. A _SAMPLE row's sequence must have a
 * sampler (else the step fails, one line). */
int32_t tern_batch_id(const tern_batch *b, int row);
const float *tern_batch_logits(const tern_batch *b, int row);

typedef struct tern_sampler tern_sampler;
/* As tern_eval, then draw the next id after the last token with s: the same chain, RNG stream and
 * choice as tern_sampler_sample(s, logits of the last token, history, n_hist). On CUDA with temp > 0 and
 * 0 < top_k <= 1024 (top_k < n_vocab) the whole chain runs on the device and one id is copied back
 * (src/backend/cuda/sample.cu); otherwise the logits come back and the host samples. Returns 0 or -1. */
int tern_eval_sample(tern_context *c, const int32_t *tokens, int n, tern_sampler *s, const int32_t *history,
                     int n_hist, int32_t *next);

/* ---- sampling -------------------------------------------------------------------------------
 * Token sampling from logits (src/runtime/sampler.c): greedy, temperature, top-k, top-p, min-p, repeat
 * penalty, with a seeded RNG so the same seed gives the same tokens on every machine. Order of the
 * chain (as llama.cpp's default CLI chain): repeat penalty -> top-k -> top-p -> min-p -> temperature
 * -> sample. temp <= 0 means greedy (argmax, lowest id on ties). */
typedef struct {
    float temp;            /* <= 0: greedy */
    int top_k;             /* <= 0: off */
    float top_p;           /* >= 1: off */
    float min_p;           /* <= 0: off */
    float repeat_penalty;  /* 1: off */
    int repeat_last_n;     /* how many recent tokens the penalty looks at */
    uint64_t seed;
} tern_sampler_params;

/* Defaults: temp 0.8, top_k 40, top_p 0.95, min_p 0.05, repeat_penalty 1.0, repeat_last_n 64, seed 0. */
tern_sampler_params tern_sampler_default_params(void);

/* NULL (with tern_last_error) if a parameter is out of range: n_vocab <= 0, temp not finite,
 * top_p <= 0 or NaN, min_p NaN or > 1, repeat_penalty <= 0 or not finite, repeat_last_n < -1.
 * Allocates about 17 bytes per vocab entry once (candidate, weight, penalty and mark arrays). */
tern_sampler *tern_sampler_new(const tern_sampler_params *p, int n_vocab);
void tern_sampler_free(tern_sampler *s);
/* Restart the RNG stream as if the sampler had been created with this seed (xoshiro256** state
 * filled by splitmix64(seed); the stream is identical on every machine). */
void tern_sampler_set_seed(tern_sampler *s, uint64_t seed);
/* Sample one id from logits (n_vocab floats; not modified). history: the last n_hist token ids
 * (prompt and generated) for the repeat penalty; ids outside [0, n_vocab) are ignored; NULL/0: none.
 * repeat_last_n -1 means the whole history. NaN logits are never sampled. Each call advances the RNG
 * by one draw (none at temp <= 0). Returns -1 (with tern_last_error) if logits is NULL or all NaN.
 * No allocation; cost O(n_vocab) plus a sort of the top-p nucleus candidates when top_k is off. */
int32_t tern_sampler_sample(tern_sampler *s, const float *logits, const int32_t *history, int n_hist);
/* Step 1 of the chain alone, in place on logits (n_vocab floats): the repeat penalty with s's
 * repeat_penalty and repeat_last_n. Exposed for tests and for callers that inspect the logits. */
void tern_sampler_penalize(tern_sampler *s, float *logits, const int32_t *history, int n_hist);
/* Index of the largest logit, lowest index on ties; NaN is never chosen unless all are NaN. */
int32_t tern_argmax(const float *logits, int n);


/* ---- speculative decoding (src/runtime/speculate.c) -----------------------------------------------------
 * Greedy speculative decoding with exact verification: the output equals plain greedy decoding byte for
 * byte (the target verifies every draft with the bits of its own decode step). */
#define TERN_SPEC_MAX_DRAFT 15 /* drafts per pass: the verify batch is <= 16 tokens */
typedef struct {
    int draft_max;       /* tokens proposed per pass, 0..15 (default 4) */
    int draft_min;       /* fewer proposals than this: a plain one-token step instead (default 0) */
    int ngram_max;       /* prompt lookup: longest history suffix matched (default 3) */
    tern_context *draft; /* model drafter: a draft model's context (same vocabulary) or the target's first K
                          * layers (tern_context_params.n_layer); NULL: prompt lookup */
    float p_min;         /* model drafter: stop drafting when its top probability falls under p_min (0: off) */
    float min_accept;    /* gate: when under this fraction of the last >= 16 drafted tokens were accepted,
                          * draft nothing for the next 8 passes, 16, 32 .. 256 while it keeps failing (0: off) */
    /* custom drafter (used when set, before `draft` and prompt lookup): write up to max tokens that may
     * follow hist[0..n_hist) into out, return the count (0..max) or -1 on error */
    int (*draft_fn)(void *ud, const int32_t *hist, int n_hist, int max, int32_t *out);
    void *draft_ud;
    /* speculative sampling: with a sampler the drafts are accepted by the rule that keeps the output
     * distributed exactly as plain sampling with this sampler (see tern_spec_step; at temp <= 0 that is
     * greedy on the penalised logits); NULL: greedy through tern_eval_argmax, byte-identical to plain greedy */
    tern_sampler *sampler;
    /* cost gate (1; 0: off, the CLI's default is on): each pass drafts the d (0..draft_max) that maximises the
     * expected tokens per second, (1 + a + a^2 + .. + a^d) / c(d + 1), where a is the drafts' measured
     * acceptance (per drafter key: prompt lookup's match length 1..3, or the model drafter) and c(k) the
     * measured wall time of a k-token pass over a one-token pass (tern_spec_cost). Prompt lookup's drafts
     * are scored against the emitted tokens on passes that do not verify them, so the estimate keeps up
     * while the gate holds drafting off. Replaces min_accept and the adaptive depth when set. The pass
     * structure then depends on timing; greedy output stays byte-identical, sampling keeps its
     * distribution (the sampled tokens may differ between runs of one seed). */
    int cost_gate;
} tern_spec_params;
tern_spec_params tern_spec_default_params(void);
typedef struct {
    int64_t passes, drafted, accepted, generated; /* target passes, draft tokens proposed / accepted, tokens out */
    int64_t gated;                                /* passes a gate (min_accept or cost) kept from drafting */
    int win_drafted, win_accepted, cooldown, fails; /* the gate's window (state carried between steps) */
    int depth;                                    /* adaptive depth (0: start at draft_max) */
    /* cost gate state: t_pass[k] the pass time (s, moving average; the first sample of each k is dropped,
     * it holds a CUDA graph capture) of k = 1..16 tokens, n_pass[k] the samples seen; acc_hit/acc_try the
     * decayed accepted / tried draft counts per drafter key (0: model drafter, 1..3: lookup match length);
     * shadow: a lookup draft not verified (base = the history position of its first token), scored
     * against the tokens that follow; cost_gated: passes run as one token although a draft was ready;
     * t1_wait / t1_gap: passes until the one-token time may be re-measured, and the wait after that (a
     * re-measure, an undrafted pass counted in gated, runs when a longer pass has timed faster than
     * t_pass[1]: src/runtime/speculate.c t1_contradicted); t1_remeasures: how many ran */
    double t_pass[TERN_SPEC_MAX_DRAFT + 2];
    int n_pass[TERN_SPEC_MAX_DRAFT + 2];
    double acc_hit[4], acc_try[4];
    int32_t shadow[TERN_SPEC_MAX_DRAFT];
    int shadow_n, shadow_i, shadow_key, shadow_base;
    int64_t cost_gated;
    int t1_wait, t1_gap, t1_remeasures;
} tern_spec_stats;
/* Cost gate: the measured cost of a k-token pass (k = 1..16) relative to a one-token pass, from st's
 * samples: measured k directly, else linear between the measured neighbours, past the deepest measured k
 * its slope from one token capped at 0.15 a token, with nothing measured 1 + 0.15 (k - 1) (an optimistic
 * prior, so that an unmeasured depth is tried and measured); never under 1. */
double tern_spec_cost(const tern_spec_stats *st, int k);
/* Cost gate: the d in {0} and dmin..dmax maximising (1 + a + .. + a^d) / cost[d + 1] (cost[1] = 1; cost
 * indexed by the pass's token count), the smaller d on ties. a: the probability that a draft is accepted
 * given its predecessors were (Leviathan et al. 2023, sec. 3.1: expected tokens per pass (1 - a^(d+1)) /
 * (1 - a)). dmin: draft_min (a depth under it is not a choice). */
int tern_spec_choose_depth(const double *cost, double a, int dmin, int dmax);
/* One pass. hist (n_hist >= 1): prompt and output so far; c's KV cache holds hist[0..n_hist-1) (all but
 * the last token). With p->sampler (speculative sampling; Leviathan et al. 2023, Alg. 1, with
 * the drafter's distribution a point mass on its proposal, as prompt lookup and greedy drafters are): draft
 * x_i is kept with probability P_i(x_i), P_i the sampler's distribution (tern_sampler_probs: its whole
 * chain, the repeat penalty over hist + the kept drafts) on the target's logits after x_1..x_{i-1}; the
 * first rejected one is replaced by a draw from P_i without x_i, renormalised; after d kept drafts one more
 * token is drawn from P_d. Each emitted token is then distributed exactly as plain sampling's (tests/
 * test_spec.c: chi-square over seeded runs); the draws come from the sampler's RNG, so the token stream
 * differs from plain sampling's with the same seed. Writes 1..draft_max+1 new tokens to out (room for max_out) and returns their count;
 * afterwards the cache holds hist plus all new tokens but the last, so the caller appends them and calls
 * again. st (may be NULL; zero it before the first pass) accumulates counters and carries the gate's
 * state. Returns -1 on error (tern_last_error). */
int tern_spec_step(tern_context *c, const tern_spec_params *p, const int32_t *hist, int n_hist, int32_t *out,
                   int max_out, tern_spec_stats *st);
/* The model a context runs. */
tern_model *tern_context_model(const tern_context *c);
/* Speculative decoding's set-up: on CUDA, capture now the graphs of verify passes of 2..max_rows tokens
 * (tern_eval_argmax; each would otherwise be captured by the first pass of its size, inside the decode),
 * as vLLM captures its decode graphs at start-up. Returns how many were captured (0 on the CPU, with
 * multi-token graphs off, or when all exist) and the time in *ms (may be NULL); -1 on error. */
int tern_context_prepare_verify(tern_context *c, int max_rows, double *ms);

/* Cumulative wall time (s) and token counts of this context's tern_eval calls: calls with n > 1
 * count as prefill, n == 1 as decode. */
typedef struct {
    double t_prefill_s, t_decode_s;
    int64_t n_prefill_tokens, n_decode_tokens;
} tern_perf;
tern_perf tern_context_perf(const tern_context *c);

#ifdef __cplusplus
}
#endif
#endif
