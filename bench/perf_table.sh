#!/usr/bin/env bash
# bench/perf_table.sh: the H200 performance table of docs/gpu.md in one command (GPU box). Runs tern bench on
# the synthetic Llama-3-8B (--synthetic llama3-8b, the model tern synth writes, built in memory) for each
# weight type and prints a markdown table: tok/s, llama.cpp's figure from the issues (measured on the same
# box kind, not re-run here), the decode floor (bytes read per token / READ_BW) and tern's share of it.
# Receipts: $OUT/perf-*.json. Env: OUT (default /tmp/perf), REPS (3), READ_BW (bytes/s, default 4.15e12,
# the issue's read-only stream figure; tern roofline measures its own).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/perf}; REPS=${REPS:-3}; READ_BW=${READ_BW:-4.15e12}
mkdir -p "$OUT"
run() { # run NAME TYPE ARGS... -> receipt path
  local name=$1 ty=$2; shift 2
  ./tern bench --synthetic llama3-8b --synthetic-type "$ty" --device cuda -r "$REPS" "$@" \
    --receipt "$OUT/perf-$name.json" >/dev/null 2>"$OUT/perf-$name.err" || echo "FAILED: $name" >&2
}
# tg128 in its own context of 128 positions, as llama-bench sizes a context per test (n_prompt + n_gen):
# in the prefill runs' 2048-position context the decode attention is configured for 8 splits, not 1,
# and tg128 reads ~4% lower (docs/ledger.md)
run q4_0 q4_0 -p 512,2048 -n 0
run q4_0-tg q4_0 -p 0 -n 128
run q8_0 q8_0 -p 512,2048 -n 0
run q8_0-tg q8_0 -p 0 -n 128
run q4_k q4_k -p 512 -n 0
run q4_k-tg q4_k -p 0 -n 128
run q6_k q6_k -p 512 -n 0
run q6_k-tg q6_k -p 0 -n 128
run q4_0-d8192 q4_0 -p 0 -n 64 -d 8192
run q4_0-d32768 q4_0 -p 0 -n 64 -d 32768
run q4_0-d8192-kvq8 q4_0 -p 0 -n 64 -d 8192 -ctk q8_0 -ctv q8_0
run q4_0-d32768-kvq8 q4_0 -p 0 -n 64 -d 32768 -ctk q8_0 -ctv q8_0
REPS=1 run q4_0-pp32768 q4_0 -p 32768 -n 0
python3 - "$OUT" "$READ_BW" <<'PY'
import json, os, sys
out, bw = sys.argv[1], float(sys.argv[2])
bpw = {"q4_0": 0.5625, "q4_k": 0.5625, "q8_0": 1.0625, "q6_k": 0.8203125}
peer = {("q4_0", "tg128"): "238", ("q8_0", "tg128"): "192", ("q4_0", "pp512"): "10,398",
        ("q4_0", "pp2048"): "10,512", ("q8_0", "pp512"): "10,566"}
goal = {("q4_0", "tg128"): ">= 700", ("q8_0", "tg128"): ">= 400", ("q4_k", "tg128"): ">= 600",
        ("q4_0", "pp512"): ">= 25,000", ("q4_0", "pp2048"): ">= 25,000", ("q8_0", "pp512"): ">= 25,000"}
print("| Llama-3-8B (synthetic), H200 | tern tok/s | llama.cpp | goal | floor tok/s | tern / floor | receipt |")
print("|---|---:|---:|---:|---:|---:|---|")
for name in ["q4_0", "q4_0-tg", "q8_0", "q8_0-tg", "q4_k", "q4_k-tg", "q6_k", "q6_k-tg", "q4_0-d8192", "q4_0-d32768", "q4_0-d8192-kvq8", "q4_0-d32768-kvq8",
             "q4_0-pp32768"]:
    p = os.path.join(out, "perf-%s.json" % name)
    if not os.path.exists(p):
        continue
    r = json.load(open(p))
    ty = name.split("-")[0]
    m = r["model"]
    for t in r["results"]:
        test = t["test"]
        floor, share = "", ""
        if t["n_gen"] > 0:  # decode: weights minus token_embd (one row read) plus the K/V read per token
            wbytes = m["size_bytes"] - m["n_vocab"] * 4096 * bpw[ty]
            # layers x positions x (8 KV heads x 128) x K,V x bytes an element (f16 2, Q8_0 34/32)
            eb = 1.0625 if r["device"].get("cache_type_k") == "q8_0" else 2
            kv = 32 * t["depth"] * 1024 * 2 * eb
            f = bw / (wbytes + kv)
            floor, share = "%.0f" % f, "%.0f%%" % (100 * t["median_tok_s"] / f)
        label = "%s %s%s%s" % (ty.upper(), test.split(" @")[0], " at depth %d" % t["depth"] if t["depth"] else "",
                               ", Q8_0 KV" if r["device"].get("cache_type_k") == "q8_0" else "")
        print("| %s | %s | %s | %s | %s | %s | %s |" % (label, "{:,.1f}".format(t["median_tok_s"]),
              peer.get((ty, test), "—"), goal.get((ty, test), "—") if not t["depth"] else "—", floor or "—",
              share or "—", os.path.basename(p)))
PY
