#!/usr/bin/env bash
# fuzz.sh [SECONDS] [HARNESS...]: run the core libFuzzer harnesses (make fuzz; default all four: gguf tokenizer chat
# sampler) one after another for SECONDS each (default 600), each from a copy of its seed corpus, and print
# libFuzzer's final statistics. Findings (crash-*, leak-*, timeout-*, oom-*) are kept in fuzz-out/HARNESS/
# (git-ignored).
set -u
cd "$(dirname "$0")/.."
secs=${1:-600}; shift || true
H=${*:-gguf tokenizer chat sampler}
make -s $(for h in $H; do echo build-fuzz/fuzz/fuzz_$h; done) || exit 2
export TERN_MODEL="${TERN_MODEL:-$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
for h in $H; do
  d=fuzz-out/$h
  rm -rf "$d" && mkdir -p "$d/corpus"
  cp tests/fuzz/corpus_$h/* "$d/corpus/"
  build-fuzz/fuzz/fuzz_$h -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$d/" "$d/corpus" >"$d/log" 2>&1
  rc=$?
  echo "fuzz_$h: rc=$rc $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$d/log") corpus $(ls "$d/corpus" | wc -l) inputs," \
       "findings: $(ls "$d" | grep -cE '^(crash|leak|timeout|oom)-')"
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$d/log" | tr '\n' ' '; echo
done
