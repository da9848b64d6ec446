#!/usr/bin/env bash
# t_cli: the tern CLI on bad input (one-line error, exit 2, no crash) and on the default model
# (greedy run writes text and tok/s; the same output at -t 1 and -t 2 and on the scalar SIMD path).
set -u
cd "$(dirname "$0")/.."
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL t_cli: $*"; }

# expect_err NAME SUBSTRING -- command...: exit status 2, exactly one line on stderr containing SUBSTRING
expect_err() {
  local name=$1 want=$2; shift 3
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  local lines; lines=$(wc -l <"$T/err")
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "$want" "$T/err"; then ok
  else bad "$name: rc=$rc lines=$lines stderr: $(head -c 300 "$T/err")"; fi
}

expect_err "missing file" "cannot open" -- ./tern run -m /nonexistent.gguf -p hi
# --device: a bad name, and cuda where the build or the machine has none (one line either way)
expect_err "bad device" "expects cpu, cuda or auto" -- ./tern run -m "$MODEL" -p hi --device gpu
expect_err "bad TERN_DEVICE" "TERN_DEVICE=bogus" -- env TERN_DEVICE=bogus ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_TRACE" "TERN_TRACE=yes" -- env TERN_TRACE=yes ./tern run -m "$MODEL" -p hi
if ! command -v nvidia-smi >/dev/null 2>&1; then
  expect_err "cuda without a GPU" "CUDA" -- ./tern run -m "$MODEL" -p hi -n 2 --device cuda
  expect_err "bench cuda without a GPU" "CUDA" -- ./tern bench -m "$MODEL" -p 8 -n 2 -r 1 --device cuda
fi
expect_err "bad TERN_DEVICE" "TERN_DEVICE" -- env TERN_DEVICE=tpu ./tern run -m "$MODEL" -p hi -n 2
printf 'GGML\0\0\0\0' >"$T/magic.gguf"
expect_err "wrong magic" "not a GGUF file" -- ./tern run -m "$T/magic.gguf" -p hi
head -c 2000000 "$MODEL" >"$T/trunc.gguf"
expect_err "truncated file" "past the end" -- ./tern run -m "$T/trunc.gguf" -p hi
head -c 1000 "$MODEL" >"$T/trunc2.gguf"
expect_err "truncated header" "truncated" -- ./tern run -m "$T/trunc2.gguf" -p hi
python3 - "$MODEL" "$T" <<'PY'
import sys
src, out = sys.argv[1], sys.argv[2]
b = bytearray(open(src, "rb").read())
i = b.find(b"general.architecture") + 20 + 4 + 8
b[i:i + 5] = b"qwen3"
open(out + "/arch.gguf", "wb").write(b)
PY
expect_err "unsupported architecture" "unsupported architecture 'qwen3'" -- ./tern run -m "$T/arch.gguf" -p hi
expect_err "prompt longer than context" "exceeds the context" -- ./tern run -m "$MODEL" -c 16 -n 8 -p "$(printf 'word %.0s' $(seq 1 40))"
expect_err "unknown option" "unknown option" -- ./tern run -m "$MODEL" --bogus
expect_err "bad number" "expects" -- ./tern run -m "$MODEL" -p hi -n abc
expect_err "unknown command" "unknown command" -- ./tern frobnicate
expect_err "unknown chat template" "unknown --chat-template" -- ./tern chat -m "$MODEL" --chat-template nope

expect_err "-p and -f together" "not both" -- ./tern run -m "$MODEL" -p hi -f /dev/null
expect_err "run option given to chat" "not of 'tern chat'" -- ./tern chat -m "$MODEL" -p hi
expect_err "top-p out of range" "--top-p must be in" -- ./tern run -m "$MODEL" -p hi --top-p 2
# KV cache types: a bad name, a Q8_0 cache on the CPU, K and V of different types
expect_err "bad cache type" "expects f16 or q8_0" -- ./tern run -m "$MODEL" -p hi -ctk q4_0
expect_err "q8_0 cache on the cpu" "needs the CUDA backend" -- ./tern run -m "$MODEL" -p hi -n 2 --device cpu -ctk q8_0 -ctv q8_0
expect_err "q8_0 K only on the cpu" "needs the CUDA backend" -- ./tern run -m "$MODEL" -p hi -n 2 --device cpu --cache-type-k q8_0
expect_err "verify fast on the cpu" "needs the CUDA backend" -- ./tern run -m "$MODEL" -p hi -n 2 --device cpu --spec-lookup --verify fast
expect_err "bench bad cache type" "expects f16 or q8_0" -- ./tern bench -m "$MODEL" -p 8 -n 2 -r 1 -ctv f32

# generation cut by -n inside a multi-byte character never leaves half a character on stdout
for n in 47 48 50; do
  ./tern run -m "$MODEL" -p "Écris une phrase en français sur le café ☕:" -n $n --temp 0 >"$T/u8" 2>/dev/null
  python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$T/u8" 2>/dev/null && ok || bad "-n $n output is not valid UTF-8"
done

# a greedy run: coherent text on stdout, tok/s on stderr, identical at -t 1 / -t 2 / scalar SIMD
./tern run -m "$MODEL" -p "Once upon a time" -n 32 --temp 0 -t 1 >"$T/a" 2>"$T/ae"; rc=$?
[ $rc -eq 0 ] && grep -q "decode:.*tok/s" "$T/ae" && [ "$(wc -w <"$T/a")" -ge 20 ] && ok || bad "greedy run rc=$rc $(cat "$T/ae")"
./tern run -m "$MODEL" -p "Once upon a time" -n 32 --temp 0 -t 2 >"$T/b" 2>/dev/null
cmp -s "$T/a" "$T/b" && ok || bad "-t 1 and -t 2 differ"
TERN_SIMD=scalar ./tern run -m "$MODEL" -p "Once upon a time" -n 32 --temp 0 -t 2 >"$T/c" 2>/dev/null
cmp -s "$T/a" "$T/c" && ok || bad "scalar and SIMD paths differ"
# seeded sampling is reproducible
./tern run -m "$MODEL" -p "The weather" -n 16 --temp 0.9 --seed 7 >"$T/s1" 2>/dev/null
./tern run -m "$MODEL" -p "The weather" -n 16 --temp 0.9 --seed 7 -t 1 >"$T/s2" 2>/dev/null
cmp -s "$T/s1" "$T/s2" && ok || bad "same seed gave different text"
# chat: two turns through the template, EOF ends it
printf 'Hi!\nWhat is the capital of France?\n' | ./tern chat -m "$MODEL" --temp 0 -n 24 >"$T/chat" 2>"$T/chate"; rc=$?
[ $rc -eq 0 ] && grep -qi paris "$T/chat" && ok || bad "chat rc=$rc: $(head -c 300 "$T/chat") $(cat "$T/chate")"
# ---- llama.cpp habits (issue 28) ----
# tern -m M -p P is tern run; --opt=value; --version
./tern run -m "$MODEL" -p "Once upon a time" -n 12 --temp 0 >"$T/r1" 2>/dev/null
./tern -m "$MODEL" -p "Once upon a time" -n 12 --temp 0 >"$T/r2" 2>/dev/null
cmp -s "$T/r1" "$T/r2" && ok || bad "tern -m -p is not tern run"
./tern run --model="$MODEL" --prompt="Once upon a time" --n-predict=12 --temp=0 >"$T/r3" 2>/dev/null
cmp -s "$T/r1" "$T/r3" && ok || bad "--opt=value forms differ from --opt value"
expect_err "flag with a value" "takes no value" -- ./tern run -m "$MODEL" -p hi --special=1
./tern --version | grep -Eq '^tern [0-9a-f]{7,}' && ok || bad "--version: $(./tern --version 2>&1)"
# the prompt from standard input: a pipe without -p, and -f -
printf 'Once upon a time' | ./tern run -m "$MODEL" -n 12 --temp 0 >"$T/r4" 2>/dev/null
cmp -s "$T/r1" "$T/r4" && ok || bad "piped prompt differs from -p"
printf 'Once upon a time\n' | ./tern run -m "$MODEL" -f - -n 12 --temp 0 >"$T/r5" 2>/dev/null
cmp -s "$T/r1" "$T/r5" && ok || bad "-f - differs from -p"
# --seed -1: a random seed, printed; giving it back repeats the text
./tern run -m "$MODEL" -p "The weather" -n 12 --seed -1 >"$T/s3" 2>"$T/s3e"
seed=$(sed -n 's/^tern: seed \([0-9]*\)$/\1/p' "$T/s3e")
[ -n "$seed" ] && ./tern run -m "$MODEL" -p "The weather" -n 12 --seed "$seed" >"$T/s4" 2>/dev/null && cmp -s "$T/s3" "$T/s4" \
  && ok || bad "--seed -1: seed '$seed' not printed or not repeatable"
# absurd sampling parameters are refused (a 1e-30 repeat penalty made logits of 1e31: issue 28's fuzzing)
expect_err "absurd repeat penalty" "--repeat-penalty must be in" -- ./tern run -m "$MODEL" -p hi --top-k 0 --repeat-penalty 1e-30
# bytes the vocabulary cannot encode: one warning; invalid UTF-8 in the prompt: a warning, and stdout stays valid UTF-8
./tern run -m "$MODEL" -p "$(printf 'a\x04b\x06c \xff\xfe end')" -n 4 --temp 0 >"$T/u9" 2>"$T/u9e"
[ "$(grep -c 'dropped' "$T/u9e")" -eq 1 ] && grep -q "2 bytes of the prompt" "$T/u9e" && ok || bad "dropped bytes warning: $(cat "$T/u9e")"
grep -q "not valid UTF-8 (byte 0xFF at offset 6)" "$T/u9e" && ok || bad "invalid UTF-8 warning: $(cat "$T/u9e")"
python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$T/u9" 2>/dev/null && ok || bad "stdout not valid UTF-8"
# --logprobs N: one line per token, its log-probability among the N best, ordered, all <= 0; greedy picks the first
./tern run -m "$MODEL" -p "The capital of France is" -n 4 --temp 0 --logprobs 3 >"$T/lp" 2>/dev/null
python3 - "$T/lp" <<'PY' && ok || bad "--logprobs: $(head -c 300 "$T/lp")"
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
assert len(lines) == 4, lines
for l in lines:
    m = re.match(r'^(".*")\tid (\d+)\tlogprob (-?[\d.]+)\ttop: (.*)$', l)
    assert m, l
    top = re.findall(r'(".*?") (-?[\d.]+)', m.group(4))
    assert len(top) == 3, top
    lps = [float(x[1]) for x in top]
    assert lps == sorted(lps, reverse=True) and all(x <= 0 for x in lps), lps
    assert top[0][0] == m.group(1) and abs(float(m.group(3)) - lps[0]) < 1e-9, l  # greedy = the most likely
assert lines[0].startswith('" Paris"'), lines[0]
PY
# chat: -n cutting a reply leaves a marker; tok/s with --verbose
printf 'Tell me a long story.\n' | ./tern chat -m "$MODEL" --temp 0 -n 5 --verbose >"$T/c5" 2>"$T/c5e"
grep -q '^\[reply cut at -n 5 tokens\]' "$T/c5e" && grep -q 'tok/s' "$T/c5e" && ok || bad "chat -n marker: $(cat "$T/c5e")"
# chat through a pseudo-terminal: line editing, Ctrl-C stops a reply, history, Ctrl-C at the prompt quits (every
# reply runs long, so each Ctrl-C lands where it is meant to; tests/chat_pty.py says why)
timeout 300 python3 tests/chat_pty.py ./tern "$MODEL" >"$T/pty" 2>&1
for c in prompt edit "ctrl-c first" ctrl-c history quit; do
  grep -q "^ok $c\$" "$T/pty" && ok || bad "chat pty $c: $(grep "$c" "$T/pty" | head -c 400)"
done
# tokenize / detokenize against the llama.cpp fixture (tests/gen_tokenizer_fixtures.py: ids with special=0 and no
# BOS, with special=1 and add_special=1; detok of the special=1 ids without and with control tokens shown)
python3 - "$MODEL" tests/fixtures/tokenizer/smollm2.tsv <<'PY' >"$T/tok" 2>&1 && ok || bad "tokenize vs fixture: $(tail -c 600 "$T/tok")"
import subprocess, sys
model, tsv = sys.argv[1], sys.argv[2]
rows = [l.rstrip("\n").split("\t") for l in open(tsv, encoding="utf-8") if l.startswith("tok\t")]
picked = [r for r in rows if r[1]][::29][:11]
def tern(*args, data):
    return subprocess.run(["./tern", *args, "-m", model], input=data, capture_output=True, check=True).stdout
for r in picked:
    text = bytes.fromhex(r[1])
    for flags, want in ((["--no-special", "--no-bos"], r[2]), ([], r[4])):
        got = tern("tokenize", "--ids", *flags, data=text).decode().strip()
        assert got == "[" + want.replace(" ", ", ") + "]", (text, flags, got, want)
    for flags, want in (([], r[6]), (["--special"], r[7])):
        got = tern("detokenize", *flags, data=r[3].encode())
        want_b = bytes.fromhex(want).decode("utf-8", "replace").encode()
        assert got == want_b + b"\n", (r[3], flags, got, want_b)
print(len(picked), "strings")
PY
expect_err "detokenize out of range" "out of range" -- ./tern detokenize -m "$MODEL" -p "1 2 999999"
expect_err "tokenize unknown option" "unknown option" -- ./tern tokenize -m "$MODEL" -p hi --bogus
# bytes SmolLM2's vocabulary cannot encode: the same ids as llama.cpp's (tests/fixtures/tokenizer/dropped.tsv, made by
# tests/gen_dropped_fixture.sh with llama-tokenize), and a warning
python3 - "$MODEL" <<'PY' >"$T/drop" 2>&1 && ok || bad "dropped bytes vs llama.cpp: $(tail -c 600 "$T/drop")"
import subprocess, sys
for l in open("tests/fixtures/tokenizer/dropped.tsv"):
    if l.startswith("#"):
        continue
    hx, want = l.rstrip("\n").split("\t")
    r = subprocess.run(["./tern", "tokenize", "-m", sys.argv[1], "--ids", "--no-bos", "--no-special"],
                       input=bytes.fromhex(hx), capture_output=True, check=True)
    assert r.stdout.decode().strip() == want, (hx, r.stdout, want)
    assert b"dropped" in r.stderr, (hx, r.stderr)
PY
echo "t_cli: $pass passed, $fail failed"
