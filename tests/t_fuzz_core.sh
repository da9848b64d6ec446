#!/usr/bin/env bash
# t_fuzz_core: the core libFuzzer harnesses (issue 28; `make fuzz`): the GGUF reader and model loader, the tokenizer's
# bytes -> ids -> bytes round trip, the chat-template renderer, the sampler's parameters, each for a bounded time
# (TERN_FUZZ_CORE_SECONDS, default 8) from a copy of its committed seed corpus (tests/fuzz/corpus_*, made by
# tests/fuzz/make_seeds.py), under ASan + UBSan with leak detection: no crash, leak, timeout or undefined behaviour.
# scripts/fuzz.sh runs them longer. CPU build only. Ends "t_fuzz_core: N passed, N failed".
set -u
cd "$(dirname "$0")/.."
if [ "${BUILD:-build}" != build ]; then
  echo "t_fuzz_core: skipped under BUILD=$BUILD (the CPU build runs it)"
  echo "t_fuzz_core: 0 passed, 0 failed"
  exit 0
fi
pass=0; fail=0
command -v "${FUZZ_CC:-clang}" >/dev/null || { echo "FAIL t_fuzz_core: clang is missing (scripts/deps.sh test)"; echo "t_fuzz_core: 0 passed, 1 failed"; exit 1; }
H="gguf tokenizer chat sampler"
if ! make -s $(for h in $H; do echo build-fuzz/fuzz/fuzz_$h; done) >/tmp/t_fuzz_core_build.$$ 2>&1; then
  echo "FAIL t_fuzz_core: the harnesses do not build:"; tail -5 /tmp/t_fuzz_core_build.$$; rm -f /tmp/t_fuzz_core_build.$$
  echo "t_fuzz_core: 0 passed, 1 failed"; exit 1
fi
rm -f /tmp/t_fuzz_core_build.$$
secs=${TERN_FUZZ_CORE_SECONDS:-8}
export TERN_MODEL="${TERN_MODEL:-$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
for h in $H; do
  T=$(mktemp -d)
  cp tests/fuzz/corpus_$h/* "$T/"
  timeout $((secs + 60)) build-fuzz/fuzz/fuzz_$h -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$T/" "$T" >"$T.log" 2>&1
  rc=$?
  runs=$(grep -o 'Done [0-9]* runs' "$T.log" | grep -o '[0-9]*' || echo 0)
  if [ "$rc" -eq 0 ] && [ "${runs:-0}" -gt 0 ]; then
    echo "t_fuzz_core: fuzz_$h: $runs inputs in $secs s, no finding"
    pass=$((pass + 1))
  else
    echo "FAIL t_fuzz_core: fuzz_$h rc=$rc after ${runs:-0} inputs:"
    grep -E 'ERROR|SUMMARY|runtime error|fuzz_' "$T.log" | head -8
    echo "  the log's last lines (the log is deleted; an rc=1 in CI went unexplained without them):"
    tail -8 "$T.log" | sed 's/^/  | /'
    ls "$T"/crash-* "$T"/leak-* "$T"/timeout-* "$T"/oom-* 2>/dev/null | head -3
    fail=$((fail + 1))
  fi
  rm -rf "$T" "$T.log"
done
echo "t_fuzz_core: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
