/* sampler.h: token sampling from logits: greedy, temperature, top-k, top-p, min-p, repeat penalty,
 * with a seeded RNG so the same seed gives the same tokens on every machine.
 * Order of the chain (as llama.cpp's default CLI chain): repeat penalty -> top-k -> top-p -> min-p
 * -> temperature -> sample. temp <= 0 means greedy (argmax, lowest id on ties). */
#ifndef TERN_SAMPLER_H
#define TERN_SAMPLER_H
/* The sampler API is public: it lives in include/tern.h. */
#include "tern.h"

/* Internal, for a device that runs the chain itself (backend_cuda.c through forward.c): */
/* The sampler's parameters. */
const tern_sampler_params *tern_sampler_get_params(const tern_sampler *s);
/* The next uniform draw in [0, 1) of s's RNG: exactly the draw tern_sampler_sample makes at temp > 0. */
double tern_sampler_draw_uniform(tern_sampler *s);
/* The distinct in-range ids the repeat penalty touches for this history (first-occurrence order within
 * the last repeat_last_n entries) into out (room for n_hist ids); 0 when the penalty is off. */
int tern_sampler_penalty_ids(tern_sampler *s, const int32_t *history, int n_hist, int32_t *out);
/* The distribution tern_sampler_sample(s, logits, history, n_hist) draws from, into probs (n_vocab):
 * the survivors' tempered softmax weights over their total, 0 elsewhere; one-hot at temp <= 0. Draws
 * nothing from the RNG. Returns 0, or -1 when every logit is NaN. */
int tern_sampler_probs(tern_sampler *s, const float *logits, const int32_t *history, int n_hist, double *probs);
#endif
