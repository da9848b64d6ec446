#!/usr/bin/env bash
# t_quantize: `tern quantize` against llama-quantize (tests/fixtures/quantize/ref.tsv, made by
# tests/gen_quantize_fixture.py ref): for every type, from an F32 and an F16 input, each tensor's chosen type and
# data bytes (sha256) equal llama-quantize's; the quantized file loads; bad input gives one line and status 2.
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL t_quantize: $*"; }
expect_err() {
  local name=$1 want=$2; shift 3
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$want" "$T/err"; then ok
  else bad "$name: rc=$rc stderr: $(head -c 300 "$T/err")"; fi
}
PY=${PYTHON:-python3}
for src in f32 f16 bf16; do
  $PY tests/gen_quantize_fixture.py input "$T/in-$src.gguf" $src || bad "cannot make the $src input"
done
out=$($PY - "$T" <<'PY'
import hashlib, subprocess, sys
sys.path.insert(0, "tests")
import gen_quantize_fixture as g
T = sys.argv[1]
ref = {}
for l in open("tests/fixtures/quantize/ref.tsv"):
    if l.startswith("#"):
        continue
    src, t, name, ty, h = l.rstrip("\n").split("\t")
    ref.setdefault((src, t), []).append((name, ty, h))
for (src, t), want in sorted(ref.items()):
    out = f"{T}/out-{src}-{t}.gguf"
    r = subprocess.run(["./tern", "quantize", f"{T}/in-{src}.gguf", out, t, "--threads", "2"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {src} {t}: tern quantize rc={r.returncode} {r.stderr[-300:]}")
        continue
    got = {x[0]: x for x in g.tensor_hashes(out)}  # llama-quantize writes them in another order
    diff = [(w, got.get(w[0])) for w in want if got.get(w[0]) != w]
    if len(got) != len(want) or diff:
        print(f"FAIL {src} {t}: {len(diff)} of {len(want)} tensors differ, first: want {diff[0][0] if diff else None} got {diff[0][1] if diff else None}")
    else:
        print(f"ok {src} {t}")
PY
)
printf '%s\n' "$out" | grep '^FAIL' | sed 's/^FAIL /FAIL t_quantize: /'
pass=$((pass + $(printf '%s\n' "$out" | grep -c '^ok '))); fail=$((fail + $(printf '%s\n' "$out" | grep -c '^FAIL')))
# a BF16 input: the same values rounded to bf16, so compare with quantizing what it holds: bf16 -> Q8_0 equals
# f32 -> Q8_0 of the bf16 values (tern quantize the bf16 file, dequantize to F32 first with F32, then Q8_0)
./tern quantize "$T/in-bf16.gguf" "$T/bf16-f32.gguf" F32 >/dev/null 2>&1 && ./tern quantize "$T/bf16-f32.gguf" "$T/a.gguf" Q8_0 >/dev/null 2>&1 &&
  ./tern quantize "$T/in-bf16.gguf" "$T/b.gguf" Q8_0 >/dev/null 2>&1 &&
  [ "$($PY tests/gen_quantize_fixture.py hashes "$T/a.gguf")" = "$($PY tests/gen_quantize_fixture.py hashes "$T/b.gguf")" ] && ok || bad "bf16 input"
# the output loads and runs (no vocabulary: bench feeds ids)
./tern bench -m "$T/out-f32-Q4_K_M.gguf" -p 8 -n 2 -r 1 -t 2 >"$T/bench" 2>&1 && grep -q 'llama .* Q4_K' "$T/bench" && ok || bad "Q4_K_M output does not run: $(tail -c 300 "$T/bench")"
expect_err "unknown type" "unknown quantization type" -- ./tern quantize "$T/in-f32.gguf" "$T/x.gguf" Q9_9
expect_err "missing input" "cannot open" -- ./tern quantize /nonexistent.gguf "$T/x.gguf" Q4_0
expect_err "requantize" "allow-requantize" -- ./tern quantize "$T/out-f32-Q4_0.gguf" "$T/x.gguf" Q8_0
expect_err "Q2_K_S needs an imatrix" "importance matrix" -- ./tern quantize "$T/in-f32.gguf" "$T/x.gguf" Q2_K_S
expect_err "too few arguments" "usage" -- ./tern quantize "$T/in-f32.gguf"
# OUT naming the input (itself, or a link to it) is refused and the input is left whole; OUT is written beside itself
# and renamed once whole, so a write that fails (a read-only directory: skipped as root) leaves no file at OUT
h0=$(sha256sum <"$T/in-f32.gguf")
expect_err "OUT is IN" "is the input file" -- ./tern quantize "$T/in-f32.gguf" "$T/in-f32.gguf" Q4_0
ln -s "$T/in-f32.gguf" "$T/link.gguf"
expect_err "OUT links to IN" "is the input file" -- ./tern quantize "$T/in-f32.gguf" "$T/link.gguf" Q4_0
[ "$(sha256sum <"$T/in-f32.gguf")" = "$h0" ] && ok || bad "the input changed under OUT = IN"
expect_err "OUT is a directory" "is a directory" -- ./tern quantize "$T/in-f32.gguf" "$T" Q4_0
mkdir "$T/ro" && chmod 555 "$T/ro"
if [ "$(id -u)" != 0 ]; then
  expect_err "unwritable OUT" "cannot write" -- ./tern quantize "$T/in-f32.gguf" "$T/ro/x.gguf" Q4_0
  [ ! -e "$T/ro/x.gguf" ] && ok || bad "a failed write left $T/ro/x.gguf"
fi
# a device OUT is written in place (never renamed over): /dev/full's write error, and /dev/full still the device
if [ -c /dev/full ]; then
  expect_err "OUT is /dev/full" "writing '/dev/full'" -- ./tern quantize "$T/in-f32.gguf" /dev/full Q4_0
  [ -c /dev/full ] && ok || bad "/dev/full is no longer a device"
fi
# OUT in a missing directory: an error and nothing made; a finished run leaves OUT alone (no temporary file beside it)
./tern quantize "$T/in-f32.gguf" "$T/q/x.gguf" Q4_0 >/dev/null 2>&1; [ ! -e "$T/q" ] && ok || bad "OUT in a missing directory"
mkdir "$T/q" && ./tern quantize "$T/in-f32.gguf" "$T/q/x.gguf" Q4_0 >/dev/null 2>&1 && [ "$(ls "$T/q")" = x.gguf ] && ok ||
  bad "quantize left: $(ls "$T/q")"
echo "t_quantize: $pass passed, $fail failed"
