#!/usr/bin/env bash
# bench/bins_ab.sh BIN... : decode (and optionally prefill) tok/s of several tern binaries, interleaved per
# round on the same GPU box: `BIN bench --synthetic llama3-8b --synthetic-type T --device cuda $ARGS`, one
# table row per (type, round, binary); receipts $OUT/binab-<type>-<binary>-r<round>.json. For A/Bs that a
# switch cannot express: build-time arms (e.g. make CUDA=1 NVFLAGS="-O3 -lineinfo -DTERN_DP4A_MINB=9",
# the binary copied aside), or this session's binary against an older commit's.
# ARGS with --parallel B,...: each row is S_TG (and S_PP) a B from llama-batched-bench's table (issue 26's A/Bs).
# An older commit's binary on a box without git: here `git archive -o .box/base.tgz COMMIT Makefile src include cli`,
# there `mkdir /tmp/base && tar xzf .box/base.tgz -C /tmp/base && make -C /tmp/base CUDA=1 ... tern`.
# Env: TYPES (default "q4_0 q8_0 q4_k q6_k"), ROUNDS (2), ARGS ("-p 0 -n 128 -r 2"), OUT (/tmp/bins_ab), DEVICE (cuda),
# MODEL (a file path with %s for the type, e.g. /tmp/tern_synth/l8%s.gguf: -m instead of --synthetic llama3-8b; the
# CPU runs files only).
set -u
OUT=${OUT:-/tmp/bins_ab}; ROUNDS=${ROUNDS:-2}; TYPES=${TYPES:-"q4_0 q8_0 q4_k q6_k"}; ARGS=${ARGS:-"-p 0 -n 128 -r 2"}
DEVICE=${DEVICE:-cuda}; MODEL=${MODEL:-}
[ $# -ge 1 ] || { echo "usage: bench/bins_ab.sh BIN..." >&2; exit 2; }
mkdir -p "$OUT"
printf '| type | round | binary | build_commit | tok/s (each test) |\n|---|---|---|---|---|\n'
for ty in $TYPES; do for r in $(seq 1 "$ROUNDS"); do for b in "$@"; do
  rc="$OUT/binab-$ty-$(basename "$b")-r$r.json"
  # shellcheck disable=SC2086
  if [ -n "$MODEL" ]; then src=(-m "$(printf "$MODEL" "$ty")"); else src=(--synthetic llama3-8b --synthetic-type "$ty"); fi
  "$b" bench "${src[@]}" --device "$DEVICE" $ARGS --receipt "$rc" >/dev/null 2>"${rc%.json}.err"
  python3 - "$rc" "$ty" "$r" "$b" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
    rs = j["results"]
    if rs and "S_TG" in rs[0]:  # bench --parallel: S_TG (S_PP) a B
        t = ", ".join("B=%d S_TG %.2f (S_PP %.1f)" % (x["B"], x["S_TG"], x["S_PP"]) for x in rs)
    else:
        t = ", ".join("%s %.2f" % (x["test"], x["median_tok_s"]) for x in rs)
    print("| %s | %s | %s | %s | %s |" % (sys.argv[2], sys.argv[3], sys.argv[4], j.get("build_commit", "?"), t))
except Exception as e:
    print("| %s | %s | %s | | FAILED (%s) |" % (sys.argv[2], sys.argv[3], sys.argv[4], e))
PY
done; done; done
