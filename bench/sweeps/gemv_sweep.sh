#!/usr/bin/env bash
# bench/sweeps/gemv_sweep.sh MODEL: decode tok/s (tern bench tg, CUDA graph) for each GEMV variant and
# rows-per-CTA R x steps-in-flight U (src/cuda/gemv.cu's env overrides), one line per configuration.
# The default rule in gemv_rule() names this sweep; re-derive it by running this on the GPU box.
set -u
M=$1; N=${N:-128}; REPS=${REPS:-3}
printf '| variant | R | U | tg%s tok/s |\n|---|---|---|---|\n' "$N"
for v in ${VARIANTS:-1 2 3}; do for r in 1 2 4; do for u in 1 2 4; do
  [ "$v" != 2 ] && [ "$u" != 1 ] && continue  # U is a variant-2 parameter
  t=$(TERN_CUDA_GEMV_VARIANT=$v TERN_CUDA_GEMV_ROWS=$r TERN_CUDA_GEMV_UNROLL=$u ./tern bench -m "$M" --device cuda \
      -p 0 -n "$N" -r "$REPS" -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["median_tok_s"])')
  printf '| %s | %s | %s | %s |\n' "$v" "$r" "$u" "$t"
done; done; done
