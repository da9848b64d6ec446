#!/usr/bin/env bash
# t_spec: speculative greedy output == plain greedy output, byte for byte (issue "Speculative decoding").
# Default (CI): 5 prompts x 64 tokens, prompt lookup at depths 1, 4, 8 with the gate off (every pass with
# a draft verifies it) and at depth 8 with the default cost gate, the self-speculative drafter (first 12
# layers) and a draft model (the model itself: any same-vocabulary model tests exactness) at depth 4;
# bad flag combinations. FULL=1: 20 prompts x 256 tokens x every drafter x depths 1..8.
# DEVICE=cuda runs the same on the GPU.
set -u
cd "$(dirname "$0")/.."
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
DEV=${DEVICE:-cpu}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL t_spec: $*"; }

prompts=(
  "Once upon a time"
  "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n\ndef fibonacci(n):"
  "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. The quick"
  "<|im_start|>user\nSummarise: The cat sat on the mat. The mat was red. The cat was black.<|im_end|>\n<|im_start|>assistant\n"
  "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,"
)
if [ "${FULL:-0}" = 1 ]; then
  prompts+=(
    "The capital of France is" "In 1969, the first humans" "List three colors:\n1." "Water boils at a temperature of"
    "int main(void) {\n    int x = 0;\n    for (int i = 0; i < 10; i++) {\n        x += i;\n    }\n    int y = 0;\n    for (int i = 0; i < 10; i++) {"
    "Q: What is 2+2?\nA: 4\nQ: What is 3+3?\nA: 6\nQ: What is 4+4?\nA:" "Roses are red, violets are blue,"
    "<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>assistant\n"
    "The mitochondria is the powerhouse of the cell. The mitochondria" "import numpy as np\nimport numpy as np\nimport"
    "Monday, Tuesday, Wednesday," "A B C D E F G H I J K" "To be, or not to be, that is the question:"
    "The weather today is sunny. The weather tomorrow is" "for i in range(10):\n    print(i)\nfor i in range(10):"
  )
  N=256; DEPTHS="1 2 3 4 5 6 7 8"; MODEL_DEPTHS="1 2 3 4 5 6 7 8"
else
  N=64; DEPTHS="1 4 8"; MODEL_DEPTHS="4"
fi

run() { ./tern run -m "$MODEL" -p "$1" -n "$N" --temp 0 -t 2 --ignore-eos --device "$DEV" "${@:2}"; }

i=0
for p in "${prompts[@]}"; do
  i=$((i + 1))
  run "$p" >"$T/plain" 2>"$T/plain.err" || { bad "prompt $i plain: $(tail -1 "$T/plain.err")"; continue; }
  for d in $DEPTHS cost8; do
    if [ "$d" = cost8 ]; then run "$p" --spec-lookup --draft-max 8 >"$T/spec" 2>"$T/spec.err"; rc=$?
    else run "$p" --spec-lookup --draft-max "$d" --draft-gate off >"$T/spec" 2>"$T/spec.err"; rc=$?; fi
    if [ $rc -eq 0 ] && cmp -s "$T/plain" "$T/spec" && grep -q '^spec: prompt lookup' "$T/spec.err"; then ok
    else bad "prompt $i lookup depth $d: rc=$rc $(cmp "$T/plain" "$T/spec" 2>&1 | head -1) $(tail -1 "$T/spec.err")"; fi
  done
  [ "$d" = cost8 ] && grep -q 'cost gate, pass time vs 1 token' "$T/spec.err" && ok || bad "prompt $i: no cost gate line"

  if [ "${FULL:-0}" = 1 ] || [ $i -le 2 ]; then
    for d in $MODEL_DEPTHS; do
      run "$p" --draft-layers 12 --draft-max "$d" --draft-gate off >"$T/spec" 2>"$T/spec.err"; rc=$?
      [ $rc -eq 0 ] && cmp -s "$T/plain" "$T/spec" && grep -q '^spec: first layers' "$T/spec.err" && ok \
        || bad "prompt $i layers depth $d: rc=$rc $(tail -1 "$T/spec.err")"
      run "$p" --draft-model "$MODEL" --draft-max "$d" --draft-p-min 0.3 --draft-gate window >"$T/spec" 2>"$T/spec.err"; rc=$?
      [ $rc -eq 0 ] && cmp -s "$T/plain" "$T/spec" && grep -q '^spec: draft model' "$T/spec.err" && ok \
        || bad "prompt $i draft model depth $d: rc=$rc $(tail -1 "$T/spec.err")"
    done
  fi
done
# the draft model drafting for itself is accepted almost always (a sanity check that drafts are used)
run "${prompts[0]}" --draft-model "$MODEL" --draft-max 4 >"$T/spec" 2>"$T/spec.err"
acc=$(sed -nE 's/.*accepted \(([0-9.]+)%\).*/\1/p' "$T/spec.err")
awk -v a="${acc:-0}" 'BEGIN { exit !(a > 90) }' && ok || bad "self-drafting acceptance ${acc:-?}% (expected > 90%)"

# greedy with a repeat penalty goes through the speculative-sampling path (one-hot distributions): it must
# still equal plain decoding byte for byte; sampling at temp > 0 runs and emits its tokens
for d in 1 4 8; do
  ./tern run -m "$MODEL" -p "${prompts[1]}" -n 48 --temp 0 --repeat-penalty 1.3 --ignore-eos -t 2 --device "$DEV" \
    >"$T/pp" 2>/dev/null
  ./tern run -m "$MODEL" -p "${prompts[1]}" -n 48 --temp 0 --repeat-penalty 1.3 --ignore-eos -t 2 --device "$DEV" \
    --spec-lookup --draft-max $d >"$T/ps" 2>/dev/null
  cmp -s "$T/pp" "$T/ps" && ok || bad "greedy + repeat penalty, depth $d: speculative output differs"
done
./tern run -m "$MODEL" -p "${prompts[1]}" -n 32 --temp 0.8 --seed 5 --ignore-eos -t 2 --device "$DEV" --spec-lookup \
  >"$T/samp" 2>"$T/samp.err" &&
  grep -qE "passes for 3[12] tokens" "$T/samp.err" && ok || bad "speculative sampling run: $(tail -2 "$T/samp.err")"

# (the first token comes from the prefill; the counter covers the 31 after it, or 32 when the last pass
# emitted one more than was printed)
# bad combinations: one-line error, exit 2
expect_err() {
  local name=$1 want=$2; shift 2
  "$@" >"$T/out" 2>"$T/err.all"; local rc=$?
  grep -v '^tern: cuda memory plan' "$T/err.all" >"$T/err" # DEVICE=cuda prints the plan before a late error
  if [ $rc -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$want" "$T/err"; then ok
  else bad "$name: rc=$rc $(head -c 300 "$T/err")"; fi
}
expect_err "draft-max without drafter" "need a drafter" ./tern run -m "$MODEL" -p hi --temp 0 --draft-max 4
expect_err "two drafters" "choose one drafter" ./tern run -m "$MODEL" -p hi --temp 0 --spec-lookup --draft-layers 2
expect_err "too many layers" "drafter must be shallower" ./tern run -m "$MODEL" -p hi --temp 0 --draft-layers 99
expect_err "depth range" "expects an integer" ./tern run -m "$MODEL" -p hi --temp 0 --spec-lookup --draft-max 16
expect_err "gate name" "expects cost, window or off" ./tern run -m "$MODEL" -p hi --temp 0 --spec-lookup --draft-gate fast
expect_err "window setting with the cost gate" "window gate's setting" ./tern run -m "$MODEL" -p hi --temp 0 --spec-lookup \
  --draft-gate cost --draft-accept-min 0.3
expect_err "gate without drafter" "need a drafter" ./tern run -m "$MODEL" -p hi --temp 0 --draft-gate off
expect_err "negative window setting" "must be in \[0, 1\]" ./tern run -m "$MODEL" -p hi --temp 0 --spec-lookup --draft-accept-min -0.5
# --draft-min with the cost gate: the gate chooses among 0 and draft-min..draft-max (it once picked 2 under a
# minimum of 3, dropped the drafts, learned nothing and never drafted again); a repetitive prompt must draft
run "${prompts[2]}" --spec-lookup --draft-max 8 --draft-min 3 >"$T/spec" 2>"$T/spec.err"
dr=$(sed -nE 's/.*tokens \([0-9.]+ passes\/token\), ([0-9]+) drafted.*/\1/p' "$T/spec.err")
cmp -s "$T/spec" <(run "${prompts[2]}" 2>/dev/null) && [ "${dr:-0}" -gt 0 ] && ok \
  || bad "draft-min 3 with the cost gate: drafted ${dr:-?} ($(head -1 "$T/spec.err" | cut -c1-160))"
./tern synth --arch smollm2-135m --type q8_0 --layers 1 --vocab 1000 -o "$T/small.gguf" >/dev/null 2>&1
expect_err "vocab mismatch" "share the vocabulary" ./tern run -m "$MODEL" -p hi --temp 0 --draft-model "$T/small.gguf"
echo "t_spec: $pass passed, $fail failed"
