/* config.h: tern's run-time settings in one table (tern.h's tern_config). Each field's default is the
 * measured winner, named with the ledger entry or sweep that chose it; the library never reads the environment:
 * the CLI maps the few TERN_* variables that stay onto this table at start (cli/tern.c cli_config_from_env; the
 * documented list is docs/measuring.md), and a program embedding tern calls tern_config_set.
 *
 * Process-wide: the CPU kernels' choices (SIMD path, reference matmul, decode work split) are process state; a
 * CUDA engine copies the fields it uses when it is created. */
#ifndef TERN_CONFIG_H
#define TERN_CONFIG_H
#include "tern.h"

/* The current table (defaults until tern_config_set). Inline: the CPU's dot products read it on every call (an
 * out-of-line call there cost 9M instructions in a 4-token run, +1.3%: callgrind, tern run -n 4 -t 1). */
extern tern_config tern_config_g;
static inline const tern_config *tern_cfg(void) { return &tern_config_g; }

#endif
