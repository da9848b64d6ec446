#!/usr/bin/env bash
# bench/presets_peer.sh: tern against the same-box llama.cpp peer on the families' synthetic presets (issue "the
# families people run": pp512, pp2048 and tg128 of each preset, interleaved rounds, same file; shared/peers/README.md).
# GPU box only. Each round runs, per preset, tern bench (prefill tests in one context, tg128 in its own, as
# perf_table.sh) then llama-bench -ngl 99 -fa 1 on the same file; the table prints both rounds and the ratios.
#
#   bench/presets_peer.sh [ARCH:TYPE ...]     default: qwen2.5-7b:q4_0 qwen3-8b:q4_0 gemma3-4b:q4_0 phi3-mini:q4_0
#
# Env: OUT (receipts and logs, default /tmp/presets), SYNTH_DIR (default /tmp/tern_synth), ROUNDS (2), REPS (2),
# LCPP_BIN (default /tmp/lcpp/build/bin), TESTS_PP (512,2048), DEPTH (tg64 at this depth too, tern and llama.cpp -d;
# empty: none). Receipts: $OUT/tern-ARCH-TYPE-rR-{pp,tg}.json, $OUT/lcpp-ARCH-TYPE-rR.jsonl; table: $OUT/presets.md.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/presets}; SYNTH_DIR=${SYNTH_DIR:-/tmp/tern_synth}; ROUNDS=${ROUNDS:-2}; REPS=${REPS:-2}
LCPP_BIN=${LCPP_BIN:-/tmp/lcpp/build/bin}; PP=${TESTS_PP:-512,2048}; DEPTH=${DEPTH:-}
mkdir -p "$OUT" "$SYNTH_DIR"
presets=${*:-qwen2.5-7b:q4_0 qwen3-8b:q4_0 gemma3-4b:q4_0 phi3-mini:q4_0}
for p in $presets; do
  a=${p%%:*}; ty=${p#*:}; f=$SYNTH_DIR/$a-$ty.gguf
  [ -s "$f" ] || ./tern synth --arch "$a" --type "$ty" -o "$f" >"$OUT/synth-$a-$ty.log" 2>&1 || echo "synth $a $ty FAILED" >&2
done
for r in $(seq 1 "$ROUNDS"); do
  for p in $presets; do
    a=${p%%:*}; ty=${p#*:}; f=$SYNTH_DIR/$a-$ty.gguf; k=$a-$ty-r$r
    ./tern bench -m "$f" --device cuda -p "$PP" -n 0 -r "$REPS" --receipt "$OUT/tern-$k-pp.json" >/dev/null 2>"$OUT/tern-$k-pp.err" ||
      echo "tern $k pp FAILED" >&2
    ./tern bench -m "$f" --device cuda -p 0 -n 128 -r "$REPS" --receipt "$OUT/tern-$k-tg.json" >/dev/null 2>"$OUT/tern-$k-tg.err" ||
      echo "tern $k tg FAILED" >&2
    [ -n "$DEPTH" ] && { ./tern bench -m "$f" --device cuda -p 0 -n 64 -d "$DEPTH" -r "$REPS" --receipt "$OUT/tern-$k-d.json" \
      >/dev/null 2>"$OUT/tern-$k-d.err" || echo "tern $k depth FAILED" >&2; }
    if [ -x "$LCPP_BIN/llama-bench" ]; then
      "$LCPP_BIN/llama-bench" -m "$f" -ngl 99 -fa 1 -p "$PP" -n 128 -r "$REPS" -o jsonl >"$OUT/lcpp-$k.jsonl" 2>"$OUT/lcpp-$k.err" ||
        echo "llama-bench $k FAILED" >&2
      [ -n "$DEPTH" ] && { "$LCPP_BIN/llama-bench" -m "$f" -ngl 99 -fa 1 -p 0 -n 64 -d "$DEPTH" -r "$REPS" -o jsonl \
        >"$OUT/lcpp-$k-d.jsonl" 2>"$OUT/lcpp-$k-d.err" || echo "llama-bench $k depth FAILED" >&2; }
    fi
  done
done
python3 - "$OUT" "$ROUNDS" $presets <<'PY' | tee "$OUT/presets.md"
import glob, json, os, sys
out, rounds, presets = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def tern(path):
    if not os.path.exists(path): return {}
    r = json.load(open(path))
    return {t["test"]: t["median_tok_s"] for t in r["results"]}, r
def lcpp(path):
    res = {}
    if not os.path.exists(path): return res
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"): continue
        j = json.loads(line)
        d = j.get("n_depth", 0)
        name = ("pp%d" % j["n_prompt"]) if j["n_prompt"] else ("tg%d" % j["n_gen"])
        if d: name += " @ d%d" % d
        res[name] = j["avg_ts"]
    return res
kv = []  # (preset, test, bytes a token, bytes without the windows) from tern's depth receipts (kv_bytes_token)
print("| preset | test | tern tok/s (rounds) | llama.cpp tok/s (rounds) | tern / llama.cpp |")
print("|---|---|---:|---:|---:|")
for p in presets:
    a, ty = p.split(":")
    rows = {}
    for r in range(1, rounds + 1):
        k = "%s-%s-r%d" % (a, ty, r)
        t = {}
        for part in ("pp", "tg", "d"):
            x = tern(os.path.join(out, "tern-%s-%s.json" % (k, part)))
            if x: t.update(x[0])
            if x and part == "d" and r == 1:
                kv += [(p, e["test"], e["kv_bytes_token"], e["kv_bytes_token_no_window"]) for e in x[1]["results"]
                       if "kv_bytes_token" in e]
        l = lcpp(os.path.join(out, "lcpp-%s.jsonl" % k)); l.update(lcpp(os.path.join(out, "lcpp-%s-d.jsonl" % k)))
        for test in set(t) | set(l):
            rows.setdefault(test, ([], []))
            rows[test][0].append(t.get(test)); rows[test][1].append(l.get(test))
    for test in sorted(rows, key=lambda s: (s[:2] != "pp", len(s), s)):
        tv, lv = rows[test]
        f = lambda v: " / ".join("%.1f" % x if x else "-" for x in v)
        ratios = [x / y for x, y in zip(tv, lv) if x and y]
        print("| %s %s | %s | %s | %s | %s |" % (a, ty.upper(), test, f(tv), f(lv), " / ".join("%.2f" % x for x in ratios) or "-"))
for p, test, b, nw in kv:
    print("\n%s %s: KV cache read a token %.3f GB (%.3f GB without the sliding windows; tern's receipt, from the shapes)"
          % (p, test, b / 1e9, nw / 1e9))
PY
