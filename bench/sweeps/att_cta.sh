#!/usr/bin/env bash
# bench/sweeps/att_cta.sh: the decode attention's CTA shape on the GPU box, interleaved: warps a CTA
# (TERN_CUDA_ATT_WARPS 16 or 8) x the context's split grid (TERN_CUDA_ATT_SPLITS, default 16 at these
# depths), synthetic Llama-3-8B Q4_0, `tern bench -p 0 -n 64 -d D -r 2` per depth. One table row per
# (depth, round, arm); receipts $OUT/att-d<D>-<arm>-r<round>.json.
# Env: DEPTHS ("8192 32768"), ROUNDS (2), OUT (/tmp/att_cta), ARMS (';'-separated env settings).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/att_cta}; ROUNDS=${ROUNDS:-2}; DEPTHS=${DEPTHS:-"8192 32768"}
ARMS=${ARMS:-"TERN_CUDA_ATT_WARPS=16;TERN_CUDA_ATT_WARPS=8;TERN_CUDA_ATT_WARPS=8 TERN_CUDA_ATT_SPLITS=32;TERN_CUDA_ATT_WARPS=16 TERN_CUDA_ATT_SPLITS=32"}
mkdir -p "$OUT"
printf '| depth | round | arm | tok/s |\n|---|---|---|---|\n'
IFS=';' read -r -a arms <<<"$ARMS"
for d in $DEPTHS; do for r in $(seq 1 "$ROUNDS"); do for a in "${arms[@]}"; do
  tag=$(echo "$a" | tr -c 'A-Za-z0-9=\n' '_' | sed 's/TERN_CUDA_ATT_//g')
  rc="$OUT/att-d$d-$tag-r$r.json"
  # shellcheck disable=SC2086
  env $a ./tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 64 -d "$d" -r 2 \
    --receipt "$rc" >/dev/null 2>"${rc%.json}.err"
  printf '| %s | %s | %s | %s |\n' "$d" "$r" "$a" \
    "$(python3 -c "import json,sys; print('%.2f' % json.load(open(sys.argv[1]))['results'][0]['median_tok_s'])" "$rc" 2>/dev/null || echo FAILED)"
done; done; done
