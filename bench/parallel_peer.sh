#!/usr/bin/env bash
# bench/parallel_peer.sh: issue 26's receipt in one command: `tern bench --parallel` and the same-box llama.cpp peer's
# llama-batched-bench (shared/peers/README.md) on the same synthetic files, interleaved, ROUNDS rounds, one table.
#
#   bench/parallel_peer.sh [TYPE...]      default: $TYPES, else q4_0 q8_0 q4_k
#
# Once a type: `tern synth --arch $ARCH --type T --layers $LAYERS -o $SYNTH_DIR/$ARCH-T-L$LAYERS.gguf` (gpu_check.sh's
# name, so its steps and this share the file; kept and reused; Llama-3-8B: 4.2 / 7.9 / 4.2 GiB for Q4_0 / Q8_0 / Q4_K).
# Each round, each type, in this order:
#   tern bench -m F --device $DEVICE --parallel $NPL -p $NPP -n $NTG -r $REPS [-t $THREADS] --receipt ...
#   llama-batched-bench -m F -ngl 99 -fa 1 -c $CTX -b 2048 -ub 512 -npp $NPP -ntg $NTG -npl $NPL --output-format jsonl
#     (-ngl 0 when DEVICE=cpu; the peer is skipped, and the table says so, where $LCPP_BIN has no llama-batched-bench)
#     -npl gets B = 1 once more at its end, a sentinel whose row is dropped: this llama.cpp prints through a
#     logging thread it never joins (common/log.cpp common_log_main: "logs may be lost if not flushed before the
#     program exits"): the last row was lost in 2 of 12 CPU runs here (B = 4 once, the sentinel once); a row lost
#     anyway shows as "-" and is named in the last line
# The table: per type (and the GEMV order tern's CUDA engine ran it in, its receipt's gemv_order: f16 where every
# matrix has the f16 order, else chunk) and B, S_TG and S_PP (llama-batched-bench's names: aggregate tok/s of the
# decode steps and of the prefill step) of both rounds for both, the ratios, and the share of the decode floor each reached (the floor
# from tern's receipt, cli/bench.c par_floor: max(bytes / READ_BW, FLOPs / MATRIX_PEAK) a step, summed over the TG
# steps). It is rewritten after every run, so a run cut short still leaves the rounds it finished.
#
# Env: OUT (default /tmp/parallel_peer): parallel_peer.md (the table) and parallel_peer.json (every tern receipt whole,
# every llama-batched-bench record, the commands, failures with their stderr's tail): two files, as the device
# tool returns 8 a call; the per-run files (receipts, jsonl, stderr, synth logs) go to RAW (default
# /tmp/parallel_peer_raw). SYNTH_DIR (/tmp/tern_synth), ARCH (llama3-8b), LAYERS (32), DEVICE (cuda), THREADS (-t for
# both; default theirs), ROUNDS (2), REPS (tern's -r, 1: llama-batched-bench runs each B once after its warm-up, as
# tern does after its own), NPP (512), NTG (128), NPL (1,4,16,64), CTX (the peer's -c, 50000), READ_BW (4.15e12 B/s),
# MATRIX_PEAK (989e12 FLOP/s; cli/bench.c says why FP16's), LCPP_BIN (/tmp/lcpp/build/bin).
# Last line: "DONE <the first type's largest B>" or "FAIL <what>" (the form gpu_check.sh's note_last reads).
# A CPU trial (minutes): DEVICE=cpu THREADS=2 ARCH=llama3.2-1b LAYERS=2 NPP=32 NTG=8 NPL=1,4 CTX=1024
#   LCPP_BIN=<a CPU build> bench/parallel_peer.sh q4_0
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/parallel_peer}; RAW=${RAW:-/tmp/parallel_peer_raw}; SYNTH_DIR=${SYNTH_DIR:-/tmp/tern_synth}
ARCH=${ARCH:-llama3-8b}; LAYERS=${LAYERS:-32}; DEVICE=${DEVICE:-cuda}; THREADS=${THREADS:-}
ROUNDS=${ROUNDS:-2}; REPS=${REPS:-1}; NPP=${NPP:-512}; NTG=${NTG:-128}; NPL=${NPL:-1,4,16,64}; CTX=${CTX:-50000}
READ_BW=${READ_BW:-4.15e12}; MATRIX_PEAK=${MATRIX_PEAK:-989e12}; LCPP_BIN=${LCPP_BIN:-/tmp/lcpp/build/bin}
types=${*:-${TYPES:-q4_0 q8_0 q4_k}}
mkdir -p "$OUT" "$RAW" "$SYNTH_DIR"
LBB=$LCPP_BIN/llama-batched-bench
NGL=99; [ "$DEVICE" = cpu ] && NGL=0
[ -x ./tern ] || { echo "FAIL no ./tern (build it first)"; exit 1; }
[ -x "$LBB" ] && "$LBB" --version >"$RAW/lcpp-version.txt" 2>&1
: >"$RAW/commands.txt"

file_of() { echo "$SYNTH_DIR/$ARCH-$1-L$LAYERS.gguf"; }
logcmd() { echo "$*" >>"$RAW/commands.txt"; echo "\$ $*" >&2; }

summarize() { # the table and the combined receipt from whatever RAW holds now
  python3 - "$OUT" "$RAW" "$ROUNDS" "$LBB" "$ARCH" "$LAYERS" "$NPP" "$NTG" "$NPL" $types <<'PY'
import json, os, sys
out, raw, rounds, lbb, arch, layers, npp, ntg, npl = sys.argv[1:10]
rounds, layers, npp, ntg, types = int(rounds), int(layers), int(npp), int(ntg), sys.argv[10:]
npl = [int(x) for x in npl.split(",")]

def tail(p, n=600):
    return open(p, errors="replace").read()[-n:] if os.path.exists(p) else ""

def tern(ty, r):
    p = os.path.join(raw, "tern-%s-r%d.json" % (ty, r))
    if os.path.exists(p):
        try:
            return json.load(open(p))
        except ValueError as e:
            return {"error": "unreadable receipt: %s" % e}
    err = os.path.join(raw, "tern-%s-r%d.err" % (ty, r))
    return {"error": tail(err)} if os.path.exists(err) else None

def lcpp(ty, r):
    p = os.path.join(raw, "lcpp-%s-r%d.jsonl" % (ty, r))
    if not os.path.exists(p):
        return None
    rows = []
    for line in open(p, errors="replace"):
        line = line[line.find("{"):] if "{" in line else ""
        try:
            j = json.loads(line)
        except ValueError:
            continue
        # the first row of each B asked for: not the sentinel
        if "speed_tg" in j and j["pl"] in npl and not any(x["pl"] == j["pl"] for x in rows):
            rows.append(j)
    failed = os.path.join(raw, "lcpp-%s-r%d.failed" % (ty, r))
    if rows and not os.path.exists(failed):
        return {"rows": rows}
    return {"error": (tail(failed) + " " + tail(os.path.join(raw, "lcpp-%s-r%d.err" % (ty, r)))).strip(), "rows": rows}

peer_present = os.access(lbb, os.X_OK)
rec = {"tool": "bench/parallel_peer.sh", "issue": 26, "rounds": rounds, "types": types,
       "commands": open(os.path.join(raw, "commands.txt")).read().splitlines()
       if os.path.exists(os.path.join(raw, "commands.txt")) else [],
       "peer": {"binary": lbb, "present": peer_present, "version": tail(os.path.join(raw, "lcpp-version.txt")).strip(),
                "source": "shared/peers/README.md (llama.cpp of 2026-10-01, ggml 0.25.3)"},
       "runs": []}
for ty in types:
    for r in range(1, rounds + 1):
        t, l = tern(ty, r), lcpp(ty, r)
        if t is not None or l is not None:
            rec["runs"].append({"type": ty, "round": r, "tern": t, "llama.cpp": l})
json.dump(rec, open(os.path.join(out, "parallel_peer.json"), "w"), indent=1)

def by_b(x, key):  # {B: record} of one run
    if not x or "error" in x and not x.get("rows"):
        return {}
    return {j["pl"]: j for j in x["rows"]} if key == "lcpp" else {j["B"]: j for j in x["results"]}

f0 = lambda v, nd=1: "-" if v is None else "{:,.{}f}".format(v, nd)
rr = lambda vs, nd=1: " / ".join(f0(v, nd) for v in vs)
goal = {1: "≥ 532", 4: "≥ 1,800", 16: "≥ 5,000", 64: "≥ 10,000"}  # issue 26's S_TG goals (Q4_0, pp 512, tg 128)
show_goal = arch == "llama3-8b" and layers == 32 and (npp, ntg) == (512, 128)
first = next((x["tern"] for x in rec["runs"] if x["tern"] and "error" not in x["tern"]), None)
dev = first["device"]["name"] if first else "?"
L = ["# tern bench --parallel vs llama-batched-bench (issue 26): %s %d layers (synthetic), %s" % (arch, layers, dev), ""]
if first:
    fl = first["floor"]
    L += ["tern commit %s%s (binary %s); prompt %d and %d generated tokens a sequence; rounds %s, each type tern then "
          "llama.cpp. S_TG, S_PP: llama-batched-bench's aggregate tok/s of the decode steps and of the prefill step. "
          "Decode floor: max(bytes / %.3g B/s, FLOPs / %.3g FLOP/s) a step, summed over the %d steps (cli/bench.c "
          "par_floor); %% floor = S_TG / S_TG floor. Issue 26's bars: S_TG as the goal column, S_PP ≥ 2x llama.cpp."
          % (first["commit"][:12], " (dirty)" if first.get("dirty") else "", first.get("build_commit", "?"), npp, ntg,
             " / ".join("r%d" % i for i in range(1, rounds + 1)), fl["read_bw"], fl["matrix_peak"], ntg)]
L += ["llama.cpp: %s" % (rec["peer"]["version"].splitlines()[0] if peer_present and rec["peer"]["version"]
                         else "skipped (no llama-batched-bench in %s)" % os.path.dirname(lbb)), ""]
L += ["| type | order | B | tern S_TG | llama.cpp S_TG | tern / llama.cpp | tern S_PP | llama.cpp S_PP | tern / llama.cpp | "
      "S_TG floor | tern % floor | llama.cpp % floor | tern % PP floor |" + (" goal S_TG |" if show_goal else ""),
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if show_goal else "")]
# the GEMV order tern's engine ran (its receipt's device.gemv_order: 2 the f16 order, 1 the chunk order, 0 one sequence's;
# null on the CPU, where there is one order)
order_name = {0: "one-seq", 1: "chunk", 2: "f16", None: "-"}
fails, missing, headline = [], [], None
for ty in types:
    runs = [x for x in rec["runs"] if x["type"] == ty]
    for x in runs:
        for side in ("tern", "llama.cpp"):
            if x[side] and "error" in x[side]:
                last = [l for l in x[side]["error"].splitlines() if l.strip()][-1:] or [""]
                fails.append("%s %s r%d (%s)" % (side, ty, x["round"], last[0][:120]))
        got = [j["pl"] for j in (x["llama.cpp"] or {}).get("rows", [])]
        if x["llama.cpp"] and "error" not in x["llama.cpp"] and any(B not in got for B in npl):
            missing.append("%s r%d B=%s" % (ty, x["round"], ",".join(str(B) for B in npl if B not in got)))
    T = [by_b(next((x["tern"] for x in runs if x["round"] == r), None), "tern") for r in range(1, rounds + 1)]
    ords = sorted({order_name.get(x["tern"]["device"].get("gemv_order"), "?") for x in runs
                   if x["tern"] and "error" not in x["tern"]})
    ordc = "/".join(ords) or "-"
    P = [by_b(next((x["llama.cpp"] for x in runs if x["round"] == r), None), "lcpp") for r in range(1, rounds + 1)]
    for B in sorted(set().union(*T, *P)):
        tg = [t.get(B, {}).get("S_TG") for t in T]
        lg = [p.get(B, {}).get("speed_tg") for p in P]
        tp = [t.get(B, {}).get("S_PP") for t in T]
        lp = [p.get(B, {}).get("speed_pp") for p in P]
        floor = next((t[B]["S_TG_floor"] for t in T if B in t), None)
        ppsh = [t.get(B, {}).get("PP_share") for t in T]
        ratio = lambda a, b: [x / y if x and y else None for x, y in zip(a, b)]
        share = lambda v: [100 * x / floor if x and floor else None for x in v]
        L.append("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%s" % (
            ty.upper(), ordc, B, rr(tg), rr(lg), rr(ratio(tg, lg), 2), rr(tp), rr(lp), rr(ratio(tp, lp), 2), f0(floor, 0),
            rr(share(tg)), rr(share(lg)), rr([100 * x if x is not None else None for x in ppsh]),
            (" %s |" % (goal.get(B, "-") if ty == "q4_0" else "-")) if show_goal else ""))
        if ty == types[0]:
            headline = "%s B=%d: tern S_TG %s vs llama.cpp %s (%s), %s%% of the decode floor %s" % (
                ty.upper(), B, rr(tg, 0), rr(lg, 0), rr(ratio(tg, lg), 2), rr(share(tg)), f0(floor, 0))
md = "\n".join(L) + "\n"
open(os.path.join(out, "parallel_peer.md"), "w").write(md)
print(md)
if fails:
    print("FAIL %s%s; see %s" % (", ".join(fails), "; llama.cpp rows lost: " + ", ".join(missing) if missing else "",
                                 os.path.join(out, "parallel_peer.json")))
else:
    print("DONE %s%s; %s" % (headline or "no rows", "; llama.cpp rows lost: " + ", ".join(missing) if missing else "",
                             os.path.join(out, "parallel_peer.md")))
PY
}

for ty in $types; do
  f=$(file_of "$ty")
  if [ ! -s "$f" ]; then
    logcmd ./tern synth --arch "$ARCH" --type "$ty" --layers "$LAYERS" -o "$f"
    ./tern synth --arch "$ARCH" --type "$ty" --layers "$LAYERS" -o "$f.tmp" >"$RAW/synth-$ty.log" 2>&1 && mv "$f.tmp" "$f" ||
      { rm -f "$f.tmp"; echo "FAIL tern synth $ARCH $ty: $(tail -c 300 "$RAW/synth-$ty.log")"; exit 1; }
  fi
done
rm -f "$RAW"/tern-*-r*.* "$RAW"/lcpp-*-r*.*
for r in $(seq 1 "$ROUNDS"); do
  for ty in $types; do
    f=$(file_of "$ty")
    cmd=(./tern bench -m "$f" --device "$DEVICE" --parallel "$NPL" -p "$NPP" -n "$NTG" -r "$REPS" ${THREADS:+-t "$THREADS"}
         --read-bw "$READ_BW" --matrix-peak "$MATRIX_PEAK" --receipt "$RAW/tern-$ty-r$r.json")
    logcmd "${cmd[@]}"
    "${cmd[@]}" >"$RAW/tern-$ty-r$r.md" 2>"$RAW/tern-$ty-r$r.err" || { rm -f "$RAW/tern-$ty-r$r.json"; echo "tern $ty r$r FAILED" >&2; }
    cat "$RAW/tern-$ty-r$r.md" >&2
    if [ -x "$LBB" ]; then
      cmd=("$LBB" -m "$f" -ngl "$NGL" -fa 1 -c "$CTX" -b 2048 -ub 512 -npp "$NPP" -ntg "$NTG" -npl "$NPL,1" ${THREADS:+-t "$THREADS"}
           --output-format jsonl)
      logcmd "${cmd[@]}"
      "${cmd[@]}" >"$RAW/lcpp-$ty-r$r.jsonl" 2>"$RAW/lcpp-$ty-r$r.err" ||
        { echo "exit status $?" >"$RAW/lcpp-$ty-r$r.failed"; echo "llama-batched-bench $ty r$r FAILED" >&2; }
      cat "$RAW/lcpp-$ty-r$r.jsonl" >&2
    fi
    summarize >/dev/null
  done
done
summarize
