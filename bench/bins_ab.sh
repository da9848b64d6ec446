#!/usr/bin/env bash
# bench/bins_ab.sh BIN... : decode (and optionally prefill) tok/s of several tern binaries, interleaved per
# round on the same GPU box: `BIN bench --synthetic llama3-8b --synthetic-type T --device cuda $ARGS`, one
# table row per (type, round, binary); receipts $OUT/binab-<type>-<binary>-r<round>.json. For A/Bs that a
# switch cannot express: build-time arms (e.g. make CUDA=1 NVFLAGS="-O3 -lineinfo -DTERN_DP4A_MINB=9",
# the binary copied aside), or this session's binary against an older commit's.
# Env: TYPES (default "q4_0 q8_0 q4_k q6_k"), ROUNDS (2), ARGS ("-p 0 -n 128 -r 2"), OUT (/tmp/bins_ab).
set -u
OUT=${OUT:-/tmp/bins_ab}; ROUNDS=${ROUNDS:-2}; TYPES=${TYPES:-"q4_0 q8_0 q4_k q6_k"}; ARGS=${ARGS:-"-p 0 -n 128 -r 2"}
[ $# -ge 1 ] || { echo "usage: bench/bins_ab.sh BIN..." >&2; exit 2; }
mkdir -p "$OUT"
printf '| type | round | binary | build_commit | tok/s (each test) |\n|---|---|---|---|---|\n'
for ty in $TYPES; do for r in $(seq 1 "$ROUNDS"); do for b in "$@"; do
  rc="$OUT/binab-$ty-$(basename "$b")-r$r.json"
  # shellcheck disable=SC2086
  "$b" bench --synthetic llama3-8b --synthetic-type "$ty" --device cuda $ARGS --receipt "$rc" >/dev/null 2>"${rc%.json}.err"
  python3 - "$rc" "$ty" "$r" "$b" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
    t = ", ".join("%s %.2f" % (x["test"], x["median_tok_s"]) for x in j["results"])
    print("| %s | %s | %s | %s | %s |" % (sys.argv[2], sys.argv[3], sys.argv[4], j.get("build_commit", "?"), t))
except Exception as e:
    print("| %s | %s | %s | | FAILED (%s) |" % (sys.argv[2], sys.argv[3], sys.argv[4], e))
PY
done; done; done
