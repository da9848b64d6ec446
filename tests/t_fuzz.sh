#!/usr/bin/env bash
# t_fuzz: libFuzzer over the server's request path (tests/fuzz/fuzz_request.c against the instrumented
# build-fuzz/libtern.a, `make fuzz`) for a bounded time (TERN_FUZZ_SECONDS, default 60) from the seed corpus
# tests/fuzz/corpus_request: no crash, no leak, no UB. Runs on the CPU
# build only (the request path has no device code; the CUDA step of CI skips it). Ends "t_fuzz: N passed, N failed".
set -u
cd "$(dirname "$0")/.."
if [ "${BUILD:-build}" != build ]; then
  echo "t_fuzz: skipped under BUILD=$BUILD (the CPU build runs it)"
  echo "t_fuzz: 0 passed, 0 failed"
  exit 0
fi
command -v "${FUZZ_CC:-clang}" >/dev/null || { echo "FAIL t_fuzz: clang is missing (scripts/deps.sh test)"; echo "t_fuzz: 0 passed, 1 failed"; exit 1; }
if ! make -s build-fuzz/fuzz/fuzz_request >/tmp/t_fuzz_build.$$ 2>&1; then
  echo "FAIL t_fuzz: the harness does not build:"; tail -5 /tmp/t_fuzz_build.$$; rm -f /tmp/t_fuzz_build.$$
  echo "t_fuzz: 0 passed, 1 failed"; exit 1
fi
rm -f /tmp/t_fuzz_build.$$
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp tests/fuzz/corpus_request/* "$T/"
secs=${TERN_FUZZ_SECONDS:-60}
export TERN_MODEL="${TERN_MODEL:-$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
( cd "$T" && timeout $((secs + 60)) "$OLDPWD/build-fuzz/fuzz/fuzz_request" -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=4096 -print_final_stats=1 "$T" >"$T.log" 2>&1 )
rc=$?
runs=$(grep -o 'Done [0-9]* runs' "$T.log" | grep -o '[0-9]*' || echo 0)
if [ "$rc" -eq 0 ] && [ "${runs:-0}" -gt 0 ]; then
  echo "t_fuzz: $runs inputs in ${secs} s, no crash, leak or undefined behaviour"
  echo "t_fuzz: 1 passed, 0 failed"
  rm -f "$T.log"
else
  echo "FAIL t_fuzz: rc=$rc after ${runs:-0} inputs:"; grep -E 'ERROR|SUMMARY|==[0-9]+==|runtime error' "$T.log" | head -10
  ls "$T"/crash-* "$T"/leak-* 2>/dev/null | head -3
  echo "t_fuzz: 0 passed, 1 failed"
  rm -f "$T.log"
  exit 1
fi
