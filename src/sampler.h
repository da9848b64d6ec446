/* sampler.h: token sampling from logits: greedy, temperature, top-k, top-p, min-p, repeat penalty,
 * with a seeded RNG so the same seed gives the same tokens on every machine.
 * Order of the chain (as llama.cpp's default CLI chain): repeat penalty -> top-k -> top-p -> min-p
 * -> temperature -> sample. temp <= 0 means greedy (argmax, lowest id on ties). */
#ifndef TERN_SAMPLER_H
#define TERN_SAMPLER_H
/* The sampler API is public: it lives in include/tern.h. */
#include "tern.h"
#endif
