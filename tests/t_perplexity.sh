#!/usr/bin/env bash
# t_perplexity: `tern perplexity` against llama-perplexity (tests/fixtures/perplexity/ref.tsv, made by
# tests/gen_perplexity_fixture.py from llama-cpp-python 0.3.36's llama.cpp) on the default model and Genesis 1-8 of
# the KJV (Debian's bible-kjv-text): -c 128 --chunks 6, PPL within 0.5% of llama-perplexity's (default flash
# attention), its +/- within 5%, llama-perplexity's output shape ([i]ppl, per chunk, then the final line); bad input
# gives one line and status 2.
set -u
cd "$(dirname "$0")/.."
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
TEXT=tests/fixtures/perplexity/genesis.txt
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL t_perplexity: $*"; }
./tern perplexity -m "$MODEL" -f "$TEXT" -c 128 --chunks 6 -t 2 >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 0 ] && ok || bad "rc=$rc: $(tail -c 300 "$T/err")"
ref=$(awk -F'\t' '$1 == 128 && $2 == 6 && $3 == "auto" {print $4, $5}' tests/fixtures/perplexity/ref.tsv)
python3 - "$T/out" $ref <<'PY' && ok || bad "PPL vs llama-perplexity ($ref): $(cat "$T/out")"
import re, sys
out = open(sys.argv[1]).read()
want, want_pm = float(sys.argv[2]), float(sys.argv[3])
chunks = re.findall(r"\[(\d+)\]([\d.]+),", out)
assert [int(c) for c, _ in chunks] == list(range(1, 7)), chunks
m = re.search(r"^Final estimate: PPL = ([\d.]+) \+/- ([\d.]+)$", out, re.M)
ppl, pm = float(m.group(1)), float(m.group(2))
assert abs(float(chunks[-1][1]) - ppl) < 1e-3, (chunks[-1], ppl)
assert abs(ppl / want - 1) <= 0.005, f"PPL {ppl} vs {want}: {100 * (ppl / want - 1):+.3f}%"
assert abs(pm / want_pm - 1) <= 0.05, f"+/- {pm} vs {want_pm}"
print(f"PPL {ppl} vs llama-perplexity {want} ({100 * (ppl / want - 1):+.3f}%)")
PY
printf 'too short' >"$T/short.txt"
./tern perplexity -m "$MODEL" -f "$T/short.txt" -c 128 >"$T/o2" 2>"$T/e2"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$T/e2")" -eq 1 ] && grep -q "needs at least 256" "$T/e2" && ok || bad "short text: rc=$rc $(cat "$T/e2")"
./tern perplexity -m "$MODEL" -f /nonexistent.txt >"$T/o3" 2>"$T/e3"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$T/e3")" -eq 1 ] && ok || bad "missing text: rc=$rc $(cat "$T/e3")"
echo "t_perplexity: $pass passed, $fail failed"
