/* sampler.h: token sampling from logits: greedy, temperature, top-k, top-p, min-p, repeat penalty,
 * with a seeded RNG so the same seed gives the same tokens on every machine.
 * Order of the chain (as llama.cpp's default CLI chain): repeat penalty -> top-k -> top-p -> min-p
 * -> temperature -> sample. temp <= 0 means greedy (argmax, lowest id on ties). */
#ifndef TERN_SAMPLER_H
#define TERN_SAMPLER_H
#include <stdint.h>

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

typedef struct tern_sampler tern_sampler;
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

#endif
