/* speculate.h: internals of src/runtime/speculate.c shared with its tests. */
#ifndef TERN_SPECULATE_H
#define TERN_SPECULATE_H
#include <stdint.h>

#include "tern.h"

/* Speculative sampling's acceptance step (tern_spec_step, tern.h): logits (d + 1, nv) f32 are the target's
 * rows after hist[0..n_hist) and after each prefix of draft[0..d); the drafter's distribution is taken as a
 * point mass on each draft. Writes the emitted tokens (kept drafts, then one drawn token) to out (room for
 * d + 1) and returns their count, or -1 (tern_last_error). Draws from s's RNG. hx: scratch for n_hist + d
 * ids; probs: scratch for nv doubles. Source: Leviathan et al. 2023, Algorithm 1 with q = δ(draft). */
int tern_spec_sample_accept(tern_sampler *s, const float *logits, int nv, const int32_t *hist, int n_hist,
                            const int32_t *draft, int d, int32_t *hx, double *probs, int32_t *out);

#endif
