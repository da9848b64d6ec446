#!/usr/bin/env bash
# t_roofline: `tern roofline --device cpu` (the ceilings table with positive finite GB/s and GFLOP/s, the
# JSON receipt, kernel rows at the model's shapes with % of floor in (0, 150]) and bad input (one
# "tern: error:" line, exit 2). --quick keeps it to a few seconds on a 2-core box.
set -u
cd "$(dirname "$0")/.."
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL t_roofline: $*"; }

# expect_err NAME -- command...: exit status 2, exactly one stderr line starting "tern: error:"
expect_err() {
  local name=$1; shift 2
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  local lines; lines=$(wc -l <"$T/err")
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -q '^tern: error:' "$T/err"; then ok
  else bad "$name: rc=$rc lines=$lines stderr: $(head -c 300 "$T/err")"; fi
}

# markdown: the ceilings table, read/copy in GB/s, fma in GFLOP/s and int8 in Gop/s, positive and finite
./tern roofline --device cpu -t 2 --quick >"$T/r.md" 2>"$T/r.err"; rc=$?
if [ $rc -eq 0 ] && grep -q '^### ceilings' "$T/r.md" && ! grep -q '^### kernels' "$T/r.md" &&
   python3 - "$T/r.md" <<'PY'
import math, sys
rows = {}
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) == 4 and c[0] in ("read", "copy", "fma", "int8"):
        rows[c[0]] = (float(c[1]), c[2])
assert set(rows) == {"read", "copy", "fma", "int8"}, rows
assert rows["read"][1] == "GB/s" and rows["copy"][1] == "GB/s" and rows["fma"][1] == "GFLOP/s", rows
assert rows["int8"][1] == "Gop/s", rows
for k, (v, u) in rows.items():
    assert math.isfinite(v) and v > 0, (k, v)
PY
then ok; else bad "md rc=$rc: $(head -c 600 "$T/r.md") $(head -c 300 "$T/r.err")"; fi

# -o json with a model: parses; ceilings and one kernel row per (shape, n) with % of floor in (0, 150];
# --receipt writes the same JSON
./tern roofline --device cpu -t 2 --quick -m "$MODEL" -o json --receipt "$T/rc.json" >"$T/r.json" 2>"$T/r.err"; rc=$?
if [ $rc -eq 0 ] && python3 - "$T/r.json" "$T/rc.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
rc = json.load(open(sys.argv[2]))
assert rc["ceilings"][0]["name"] == "read" and rc["tool"] == "tern roofline"
for k in ("commit", "build", "device", "threads", "ceilings", "kernels", "model"):
    assert k in d, k
assert d["threads"] == 2 and d["device"]["backend"] == "cpu" and d["device"]["name"]
c = {x["name"]: x for x in d["ceilings"]}
assert c["read"]["unit"] == "GB/s" and c["fma"]["unit"] == "GFLOP/s" and c["int8"]["unit"] == "Gop/s", c
for x in d["ceilings"]:
    assert isinstance(x["value"], (int, float)) and math.isfinite(x["value"]) and x["value"] > 0, x
ks = d["kernels"]
# SmolLM2-135M: wq,wo / wk,wv / w_gate,w_up / w_down / output, each at n=1 and n=64
assert len(ks) == 10, [k["weights"] for k in ks]
assert {k["n"] for k in ks} == {1, 64}
assert any(k["weights"] == "wq,wo" for k in ks) and any(k["weights"] == "output" for k in ks)
for k in ks:
    assert k["time_us"] > 0 and k["floor_us"] > 0, k
    assert 0 < k["pct_of_floor"] <= 150, k
    assert k["floor_kind"] == ("bw" if k["n"] == 1 else k["floor_kind"]) and k["floor_kind"] in ("bw", "flops"), k
    assert k["bytes"] > 0 and k["flops"] == 2 * k["n"] * k["n_in"] * k["n_out"], k
PY
then ok; else bad "json -m rc=$rc: $(head -c 400 "$T/r.json") $(head -c 300 "$T/r.err")"; fi

# markdown with a model: the kernels section after the ceilings
./tern roofline --device cpu -t 2 --quick -m "$MODEL" >"$T/m.md" 2>"$T/m.err"; rc=$?
if [ $rc -eq 0 ] && grep -q '^### kernels' "$T/m.md" && grep -q '^| cpu_matmul n=1 | wq,wo | q4_1 | 1x576x576 |' "$T/m.md" &&
   grep -q '^| cpu_matmul n=64 | ' "$T/m.md"; then ok
else bad "md -m rc=$rc: $(tail -c 600 "$T/m.md") $(head -c 300 "$T/m.err")"; fi

# bad input
expect_err "missing model" -- ./tern roofline --device cpu -m /nonexistent.gguf
expect_err "not a model" -- ./tern roofline --device cpu --quick -m tests/t_roofline.sh
expect_err "unknown option" -- ./tern roofline --bogus
expect_err "bad device" -- ./tern roofline --device tpu
expect_err "bad -o" -- ./tern roofline --device cpu -o xml
expect_err "bad -t" -- ./tern roofline --device cpu -t 0
expect_err "-m without value" -- ./tern roofline --device cpu -m
expect_err "--prefill-n too small" -- ./tern roofline --device cpu --prefill-n 8
expect_err "--prefill-n not a number" -- ./tern roofline --device cpu --prefill-n lots
expect_err "--prefill-n without value" -- ./tern roofline --device cpu --prefill-n
expect_err "unwritable receipt" -- ./tern roofline --device cpu --quick --receipt /nonexistent-dir/r.json
# a CPU-only build refuses --device cuda in one line
if ! nm ./tern 2>/dev/null | grep -q ' tcu_read_stream$'; then
  expect_err "cuda in a cpu build" -- ./tern roofline --device cuda
  grep -q 'this build has no CUDA backend (make CUDA=1)' "$T/err" && ok || bad "cuda in a cpu build: $(cat "$T/err")"
fi
echo "t_roofline: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
