#!/usr/bin/env bash
# bench/sweeps/dp4a_sweep.sh: decode tok/s of the dp4a GEMV arms on the synthetic Llama-3-8B (GPU box), one
# `tern bench --synthetic llama3-8b -p 0 -n 128` per arm, the arms interleaved over ROUNDS rounds, one
# table row per (round, arm). An arm is a set of environment switches (src/cuda/gemv_dp4a.cu,
# src/backend_cuda.c): TERN_CUDA_DP4A_KERNEL=cta|warp|async (the kernel family), TERN_CUDA_REPACK=0 (GGUF block
# layout on the device), TERN_CUDA_DP4A_WCFG=RU (rows a warp x blocks a lane in flight).
# Env: TYPES (default "q4_0 q8_0"), ARMS (';'-separated, "-" = defaults), ROUNDS (2), REPS (2), OUT (receipts).
# The dp4a kernel defaults name this sweep; re-derive them by running it.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/dp4a_sweep}; ROUNDS=${ROUNDS:-2}; REPS=${REPS:-2}; TYPES=${TYPES:-"q4_0 q8_0"}
ARMS=${ARMS:-"TERN_CUDA_DP4A_KERNEL=cta TERN_CUDA_REPACK=0;TERN_CUDA_DP4A_KERNEL=cta;TERN_CUDA_DP4A_KERNEL=warp;TERN_CUDA_DP4A_KERNEL=async;-"}
mkdir -p "$OUT"
IFS=';' read -r -a arms <<<"$ARMS"
printf '| type | round | arm | tg128 tok/s | ms a token |\n|---|---|---|---:|---:|\n'
for ty in $TYPES; do for r in $(seq 1 "$ROUNDS"); do for a in "${arms[@]}"; do
  tag=$(echo "$a" | tr ' =' '_-'); envs=(); [ "$a" != "-" ] && read -r -a envs <<<"$a"
  rc="$OUT/dp4a-$ty-$tag-r$r.json"
  env "${envs[@]}" ./tern bench --synthetic llama3-8b --synthetic-type "$ty" --device cuda -p 0 -n 128 -r "$REPS" \
    --receipt "$rc" >/dev/null 2>"$OUT/dp4a-$ty-$tag-r$r.err"
  python3 - "$rc" "$ty" "$r" "$a" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))["results"][0]["median_tok_s"]
    print("| %s | %s | %s | %.2f | %.3f |" % (sys.argv[2], sys.argv[3], sys.argv[4], t, 1e3 / t))
except Exception as e:
    print("| %s | %s | %s | FAILED (%s) | |" % (sys.argv[2], sys.argv[3], sys.argv[4], e))
PY
done; done; done
