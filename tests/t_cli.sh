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
# output lost on the way to standard output (a full device) is an error, never status 0
if [ -c /dev/full ]; then
  expect_err "stdout full: --version" "writing standard output" -- sh -c './tern --version >/dev/full'
  expect_err "stdout full: tokenize" "writing standard output" -- sh -c './tern tokenize -m "$1" -p hello >/dev/full' sh "$MODEL"
  ./tern run -m "$MODEL" -p hi -n 2 --temp 0 >/dev/full 2>"$T/err"; rc=$? # run's stderr has its timing line too
  [ "$rc" -eq 2 ] && tail -1 "$T/err" | grep -q "writing standard output" && ok || bad "stdout full: run: rc=$rc $(tail -c 200 "$T/err")"
fi
# --device: a bad name, and cuda where the build or the machine has none (one line either way)
expect_err "bad device" "expects cpu, cuda or auto" -- ./tern run -m "$MODEL" -p hi --device gpu
expect_err "bad TERN_DEVICE" "TERN_DEVICE=bogus" -- env TERN_DEVICE=bogus ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_TRACE" "TERN_TRACE=yes" -- env TERN_TRACE=yes ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_CUDA_GRAPH" "TERN_CUDA_GRAPH=2: expected 0 or 1" -- env TERN_CUDA_GRAPH=2 ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_PDL_MAX" "TERN_PDL_MAX expects an integer in .-1, 64., got .65." -- env TERN_PDL_MAX=65 ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_ATT_MS" "TERN_ATT_MS expects an integer in .-1, 1048576., got .-2." -- env TERN_ATT_MS=-2 ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_HM_ARM" "TERN_HM_ARM=9-4:10: expected LO-HI:ARM" -- env TERN_HM_ARM=9-4:10 ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_HM_ARM arm" "TERN_HM_ARM=1-8:12: expected" -- env TERN_HM_ARM=1-8:12 ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_HM_ARM form" "TERN_HM_ARM=1-8: expected" -- env TERN_HM_ARM=1-8 ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_HM_ARM sign" "TERN_HM_ARM=+1-8:3: expected" -- env TERN_HM_ARM=+1-8:3 ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_HM_ARM overflow" "TERN_HM_ARM=1-8:4294967299: expected" -- env TERN_HM_ARM=1-8:4294967299 ./tern run -m "$MODEL" -p hi
expect_err "bad TERN_GEMV_CHUNK" "TERN_GEMV_CHUNK expects an integer in .0, 2., got .3." -- env TERN_GEMV_CHUNK=3 ./tern run -m "$MODEL" -p hi
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
b[i:i + 5] = b"mamba"
open(out + "/arch.gguf", "wb").write(b)
PY
expect_err "unsupported architecture" "unsupported architecture 'mamba'" -- ./tern run -m "$T/arch.gguf" -p hi
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
# --opt=value in every other subcommand too (one walk, cli_args in cli/tern.c): each value takes effect (it shows in
# the output, or a bad one is refused naming the option); a flag given a value, and --help=..., are errors
./tern bench --model="$MODEL" --n-prompt=8 --n-gen=2 --repetitions=1 --threads=1 --output=csv >"$T/eqb" 2>/dev/null
head -1 "$T/eqb" | grep -q '^model,size_bytes,' && grep -q '^"llama 135M Q4_1",.*,1,"pp8",8,0,0,' "$T/eqb" \
  && grep -q '^"llama 135M Q4_1",.*,1,"tg2",0,2,0,' "$T/eqb" && [ "$(wc -l <"$T/eqb")" -eq 3 ] \
  && ok || bad "bench --opt=value: $(head -c 400 "$T/eqb")"
expect_err "bench --n-gen=bad" "--n-gen expects a comma-separated list" -- ./tern bench -m "$MODEL" --n-gen=x
expect_err "bench --help=1" "--help takes no value" -- ./tern bench --help=1
eq_tok=$(./tern tokenize --model="$MODEL" --prompt="hi there" --ids --no-bos 2>/dev/null)
[ "$eq_tok" = "[6004, 665]" ] && [ "$eq_tok" = "$(./tern tokenize -m "$MODEL" -p "hi there" --ids --no-bos 2>/dev/null)" ] \
  && ok || bad "tokenize --opt=value: '$eq_tok'"
printf 'hi there' >"$T/eqt.txt"
[ "$(./tern tokenize --model="$MODEL" --file="$T/eqt.txt" --ids 2>/dev/null)" = "[6004, 665]" ] && ok || bad "tokenize --file="
expect_err "tokenize --ids=1" "--ids takes no value" -- ./tern tokenize -m "$MODEL" -p hi --ids=1
[ "$(./tern detokenize --model="$MODEL" --prompt="6004 665" 2>/dev/null)" = "hi there" ] && ok || bad "detokenize --prompt="
expect_err "detokenize --special=1" "--special takes no value" -- ./tern detokenize -m "$MODEL" -p "1 2" --special=1
PPL_TEXT=tests/fixtures/perplexity/genesis.txt
./tern perplexity --model="$MODEL" --file="$PPL_TEXT" --ctx-size=128 --chunks=2 --threads=2 >"$T/eqp" 2>"$T/eqpe"
./tern perplexity -m "$MODEL" -f "$PPL_TEXT" -c 128 --chunks 2 -t 2 >"$T/eqp2" 2>/dev/null
grep -q 'over 2 chunks, n_ctx=128' "$T/eqpe" && grep -q '^Final estimate: PPL = ' "$T/eqp" && cmp -s "$T/eqp" "$T/eqp2" \
  && ok || bad "perplexity --opt=value: $(cat "$T/eqp") $(grep chunks "$T/eqpe")"
expect_err "perplexity --chunks=bad" "--chunks expects an integer" -- ./tern perplexity -m "$MODEL" -f "$PPL_TEXT" --chunks=many
./tern synth --arch=smollm2-135m --type=f32 --layers=2 --vocab=512 --dry-run >"$T/eqs" 2>&1
grep -qx 'llama.block_count = 2' "$T/eqs" && grep -qx 'llama.vocab_size = 512' "$T/eqs" && grep -q '^tensor blk.1.ffn_down.weight f32 ' "$T/eqs" \
  && ok || bad "synth --opt=value: $(head -c 300 "$T/eqs")"
expect_err "synth --dry-run=1" "--dry-run takes no value" -- ./tern synth --arch smollm2-135m --type f32 --dry-run=1
./tern synth --arch=smollm2-135m --type=f32 --layers=1 --vocab=512 --output="$T/eqf32.gguf" >/dev/null 2>&1
./tern quantize "$T/eqf32.gguf" "$T/eqq1.gguf" Q4_K_M --threads=1 --pure >"$T/eqq" 2>&1
./tern quantize "$T/eqf32.gguf" "$T/eqq2.gguf" Q4_K_M -t 1 --pure >/dev/null 2>&1
grep -q 'f32 -> q4_K' "$T/eqq" && ! grep -q 'f32 -> q6_K' "$T/eqq" && cmp -s "$T/eqq1.gguf" "$T/eqq2.gguf" \
  && ok || bad "quantize --threads=1: $(tail -c 300 "$T/eqq")"
expect_err "quantize --threads=0" "--threads expects an integer in \[1, 1024\], got '0'" -- ./tern quantize "$T/eqf32.gguf" "$T/eqq3.gguf" Q8_0 --threads=0
expect_err "quantize --pure=1" "--pure takes no value" -- ./tern quantize "$T/eqf32.gguf" "$T/eqq3.gguf" Q8_0 --pure=1
./tern roofline --device=cpu --quick --output=json --threads=1 >"$T/eqr" 2>/dev/null
python3 - "$T/eqr" <<'PY' 2>"$T/eqre" && ok || bad "roofline --opt=value: $(head -c 300 "$T/eqr") $(tail -c 300 "$T/eqre")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["threads"] == 1 and r["quick"] is True and r["device"]["backend"] == "cpu", (r["threads"], r["quick"], r["device"])
PY
expect_err "roofline --prefill-n=8" "--prefill-n expects an integer in \[16, 8192\]" -- ./tern roofline --device cpu --prefill-n=8
expect_err "roofline --quick=1" "--quick takes no value" -- ./tern roofline --device cpu --quick=1
printf 'Once upon a time' >"$T/eqab.txt"
./tern ab --model="$MODEL" --a= --b=TERN_SIMD=scalar --rounds=1 --n-predict=2 --threads=1 --prompt-file="$T/eqab.txt" >"$T/eqa" 2>/dev/null
grep -q "^ab: $MODEL, prompt $T/eqab.txt, n 2, threads 1, 1 rounds " "$T/eqa" && grep -q '^B trace: simd=scalar ' "$T/eqa" \
  && grep -q '^A trace: simd=avx2 \|^A trace: simd=avx512 \|^A trace: simd=avx512vnni \|^A trace: simd=scalar ' "$T/eqa" && grep -q '^tokens: MATCH' "$T/eqa" \
  && ok || bad "ab --opt=value: $(head -c 400 "$T/eqa")"
expect_err "ab --rounds=0" "--rounds expects an integer in \[1, 1000\], got '0'" -- ./tern ab -m "$MODEL" --a "" --b "" --rounds=0
# serve: the values in its start-up line and on /v1/models; a flag with a value and a bad port refused before it listens
timeout 60 python3 - ./tern "$MODEL" >"$T/eqsv" 2>&1 <<'PY' && ok || bad "serve --opt=value: $(tail -c 400 "$T/eqsv")"
import json, re, signal, subprocess, sys, time, urllib.request
p = subprocess.Popen([sys.argv[1], "serve", f"--model={sys.argv[2]}", "--port=0", "--parallel=3", "--ctx-size=512",
                      "--alias=eq-test", "--no-prefix-cache", "--threads=1"], stderr=subprocess.PIPE, text=True)
try:
    lines, port = [], None
    while port is None:
        l = p.stderr.readline()
        assert l, ("serve ended", lines)
        lines.append(l)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)$", l.strip())
        port = int(m.group(1)) if m else None
    assert any("3 parallel x 512 positions" in l and "prefix cache off" in l for l in lines), lines
    ids = [d["id"] for d in json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=20))["data"]]
    assert ids == ["eq-test"], ids
finally:
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
assert p.returncode == 0, p.returncode
PY
expect_err "serve --no-prefix-cache=1" "--no-prefix-cache takes no value" -- ./tern serve -m "$MODEL" --port 0 --no-prefix-cache=1
expect_err "serve --port=99999" "--port expects an integer in \[0, 65535\], got '99999'" -- ./tern serve -m "$MODEL" --port=99999
# chat: --n-predict=3 cuts the reply at 3 tokens (the marker names it); --verbose=1 is refused
printf 'Tell me a long story.\n' | ./tern chat --model="$MODEL" --temp=0 --n-predict=3 >/dev/null 2>"$T/eqc"
grep -q '^\[reply cut at -n 3 tokens\]' "$T/eqc" && ok || bad "chat --n-predict=3: $(cat "$T/eqc")"
expect_err "chat --verbose=1" "--verbose takes no value" -- ./tern chat -m "$MODEL" --verbose=1 </dev/null
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
# chat through a pseudo-terminal: line editing, Ctrl-C stops a reply, its tok/s line (stderr a terminal), history,
# Ctrl-C at the prompt quits (every reply runs long, so each Ctrl-C lands where it is meant to; tests/chat_pty.py
# says why)
timeout 300 python3 tests/chat_pty.py ./tern "$MODEL" >"$T/pty" 2>&1
for c in prompt edit "ctrl-c first" rate ctrl-c history quit; do
  grep -q "^ok $c\$" "$T/pty" && ok || bad "chat pty $c: $(grep "$c" "$T/pty" | head -c 400)"
done
# chat: Ctrl-C during a long message's prefill (its bar showing) stops the prefill, says [interrupted], gives the prompt
# back and forgets the message: the next question gets a fresh piped chat's reply (tests/chat_prefill_pty.py)
timeout 300 python3 tests/chat_prefill_pty.py ./tern "$MODEL" >"$T/ptyp" 2>&1
for c in "prefill bar" "prefill stopped" forgotten; do
  grep -q "^ok $c\$" "$T/ptyp" && ok || bad "chat pty $c: $(grep "$c" "$T/ptyp" | head -c 600) $(tail -c 300 "$T/ptyp")"
done
# progress bars on stderr, on a terminal only: the load line and the prefill bar of a 2,957-token prompt at -t 1 through
# a pseudo-terminal, none through a pipe (tests/progress_pty.py; each run stopped once it has shown what it needs)
timeout 300 python3 tests/progress_pty.py ./tern "$MODEL" >"$T/prog" 2>&1
for c in "tty load" "tty bar" "tty advance" "pipe quiet"; do
  grep -q "^ok $c\$" "$T/prog" && ok || bad "progress $c: $(grep "$c" "$T/prog" | head -c 400) $(tail -c 300 "$T/prog")"
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
expect_err "detokenize: a word among the ids" "'abc 30' is not a token id" -- ./tern detokenize -m "$MODEL" -p "28,abc 30"
expect_err "detokenize: 1e3 is not 1, 3" "'e3' is not a token id" -- ./tern detokenize -m "$MODEL" -p "28 1e3"
printf 'say: a\000b\n' | ./tern chat -m "$MODEL" -n 2 -t 1 >/dev/null 2>"$T/err"; rc=$? # chat's banner line first
[ "$rc" -eq 2 ] && tail -1 "$T/err" | grep -q "NUL byte" && ok || bad "chat: a NUL in a line: rc=$rc $(tail -c 200 "$T/err")"
expect_err "perplexity --chunks 0" "scores nothing" -- ./tern perplexity -m "$MODEL" -f tests/fixtures/perplexity/genesis.txt --chunks 0
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
