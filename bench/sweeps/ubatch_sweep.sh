#!/usr/bin/env bash
# bench/sweeps/ubatch_sweep.sh [TYPE]: prefill tok/s by chunk size (--ubatch) on the synthetic Llama-3-8B
# (tern bench --synthetic llama3-8b --synthetic-type TYPE, CUDA), pp512 / pp2048 / pp8192, with the scratch
# memory the memory plan counts for that chunk size. One line per ubatch; the CUDA default ubatch
# (cli/tern.c, cli/bench.c: tern_context_params.ubatch = 0) names this sweep. Run on the GPU box.
set -u
T=${1:-q4_0}; REPS=${REPS:-2}; PP=${PP:-512,2048,8192}
cols=$(echo "$PP" | sed 's/\([0-9]\+\)/pp\1 tok\/s/g; s/,/ | /g')
printf '| ubatch | %s | scratch (memory plan) |\n|---|%s---|\n' "$cols" "$(echo "$PP" | sed 's/[0-9]\+/---|/g; s/,//g')"
for ub in ${UBS:-128 256 512 1024 2048 4096}; do
  out=$(./tern bench --synthetic llama3-8b --synthetic-type "$T" --device cuda -p "$PP" -n 0 -r "$REPS" -ub "$ub" -o json 2>/tmp/ub.err)
  tps=$(echo "$out" | python3 -c 'import json,sys; print(" | ".join("%.0f" % r["median_tok_s"] for r in json.load(sys.stdin)["results"]))')
  sc=$(grep -o 'scratch [0-9.]* GiB' /tmp/ub.err | head -1)
  printf '| %s | %s | %s |\n' "$ub" "$tps" "$sc"
done
