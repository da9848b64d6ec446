#!/usr/bin/env python3
"""ppl_receipt: issue 28's perplexity receipt: `tern perplexity` on each device against llama-perplexity, one file and
one text (bench/gpu_check.sh step ppl).

  python3 bench/ppl_receipt.py -m MODEL -f TEXT [-c 512] [--chunks N] [--devices cuda,cpu]
                               [--lcpp-bin /tmp/lcpp/build/bin] [--ref-tsv tests/fixtures/perplexity/ref.tsv]
                               --out R.json --md R.md

Runs `tern perplexity -m MODEL -f TEXT -c C --device D` for each D, and, when --lcpp-bin holds llama-perplexity, the
peer on the same file and text: with -ngl 99 (its CUDA path, when cuda is among the devices) and on the CPU alone
(-ngl 0 with CUDA_VISIBLE_DEVICES empty, so ggml cannot offload a batch to the GPU either). The reference of tern's D
is the peer's value on D, else the peer's other value, else --ref-tsv's line for this -c and chunk count (the
committed llama-perplexity value of the default model on the CPU: only valid for that file, which the caller
vouches for with --ref-tsv). Writes the receipt (--out, JSON: every value, its +/-, the commands, the seconds) and a
markdown table (--md); the last line printed is a one-line summary (gpu_check's note), starting PASS when tern's
value on the first device is within --tol (0.5%, issue 28's bar) of its reference, FAIL when not or when a tern run
failed, DONE when there is no reference. Standard library only.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def log(*a):
    print(*a, flush=True)


def run_ppl(cmd, env=None, logpath=None):
    log("$ " + " ".join(shlex.quote(x) for x in cmd))
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
        out, rc = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired:
        out, rc = "timed out", -1
    dt = time.time() - t0
    if logpath:
        with open(logpath, "w") as f:
            f.write(out)
    m = re.search(r"Final estimate: PPL = ([\d.]+) \+/- ([\d.]+)", out)
    chunks = len(re.findall(r"\[\d+\][\d.]+,", out))
    res = {"cmd": " ".join(shlex.quote(x) for x in cmd), "rc": rc, "seconds": round(dt, 2), "chunks": chunks}
    if m and rc == 0:
        res.update(ppl=float(m.group(1)), pm=float(m.group(2)))
        log(f"  PPL = {res['ppl']} +/- {res['pm']} ({chunks} chunks, {dt:.1f} s)")
    else:
        res["error"] = out[-600:]
        log(f"  failed (rc {rc}): {out[-300:]}")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tern", default=os.path.join(HERE, "..", "tern"))
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-f", "--text", required=True)
    ap.add_argument("-c", "--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=0)
    ap.add_argument("-t", "--threads", type=int, default=0)
    ap.add_argument("--devices", default="cuda,cpu")
    ap.add_argument("--lcpp-bin", default="/tmp/lcpp/build/bin")
    ap.add_argument("--ref-tsv", help="committed llama-perplexity values of this very file (ctx, chunks, fa, ppl, +/-)")
    ap.add_argument("--model-label", default="", help="what the file is, for the table and the summary")
    ap.add_argument("--tol", type=float, default=0.005)
    ap.add_argument("--log-dir", default="/tmp")
    ap.add_argument("--out", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()
    devices = [d for d in a.devices.split(",") if d]
    common = ["-m", a.model, "-f", a.text, "-c", str(a.ctx)] + (["--chunks", str(a.chunks)] if a.chunks else [])
    thr = ["-t", str(a.threads)] if a.threads else []
    os.makedirs(a.log_dir, exist_ok=True)
    rec = {"tool": "bench/ppl_receipt.py", "model": a.model, "model_label": a.model_label, "text": a.text,
           "ctx": a.ctx, "chunks_arg": a.chunks, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "tern": {},
           "llama.cpp": {}}
    try:
        rec["commit"] = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                       cwd=HERE).stdout.strip()
    except OSError:
        pass
    for d in devices:
        rec["tern"][d] = run_ppl([a.tern, "perplexity"] + common + ["--device", d] + thr,
                                 logpath=os.path.join(a.log_dir, f"ppl-tern-{d}.log"))
    exe = os.path.join(a.lcpp_bin, "llama-perplexity")
    if os.access(exe, os.X_OK):
        if "cuda" in devices:
            rec["llama.cpp"]["cuda"] = run_ppl([exe] + common + ["-ngl", "99"] + thr,
                                               logpath=os.path.join(a.log_dir, "ppl-llama-cuda.log"))
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
        rec["llama.cpp"]["cpu"] = run_ppl([exe] + common + ["-ngl", "0"] + thr, env=env,
                                          logpath=os.path.join(a.log_dir, "ppl-llama-cpu.log"))
    else:
        rec["llama.cpp"]["skipped"] = f"no llama-perplexity in {a.lcpp_bin}"
    fixture = None
    if a.ref_tsv and os.path.exists(a.ref_tsv):
        n = next((r["chunks"] for r in rec["tern"].values() if "ppl" in r), None)
        for ln in open(a.ref_tsv):
            f = ln.rstrip("\n").split("\t")
            if not ln.startswith("#") and len(f) >= 5 and int(f[0]) == a.ctx and int(f[1]) == n and f[2] == "auto":
                fixture = {"ppl": float(f[3]), "pm": float(f[4]), "cmd": f[5] if len(f) > 5 else "",
                           "source": a.ref_tsv}
        rec["llama.cpp"]["fixture"] = fixture

    def ref_of(d):
        lc = rec["llama.cpp"]
        other = "cpu" if d == "cuda" else "cuda"
        for key, label in ((d, f"llama-perplexity {d}"), (other, f"llama-perplexity {other}")):
            if key in lc and "ppl" in lc[key]:
                return lc[key]["ppl"], label
        if fixture:
            return fixture["ppl"], f"llama-perplexity cpu ({os.path.basename(a.ref_tsv)})"
        return None, None

    rows, status, first = [], "DONE", None
    for d in devices:
        r = rec["tern"][d]
        ref, lab = ref_of(d)
        diff = (r["ppl"] / ref - 1) if ref and "ppl" in r else None
        r["ref"], r["ref_label"], r["rel_diff"] = ref, lab, diff
        if first is None:
            first = (d, r, ref, lab, diff)
        rows.append(f"| tern {d} | {r.get('ppl', 'failed')} | {r.get('pm', '-')} | {r['chunks']} | {r['seconds']} | "
                    f"{'-' if diff is None else f'{100 * diff:+.3f}% vs {lab}'} |")
        if "ppl" not in r:
            status = "FAIL"
    for d in ("cuda", "cpu"):
        r = rec["llama.cpp"].get(d)
        if r:
            rows.append(f"| llama-perplexity {d} | {r.get('ppl', 'failed')} | {r.get('pm', '-')} | {r['chunks']} | "
                        f"{r['seconds']} | reference |")
    if fixture:
        rows.append(f"| llama-perplexity cpu, committed | {fixture['ppl']} | {fixture['pm']} | - | - | {a.ref_tsv} |")
    d0, r0, ref0, lab0, diff0 = first
    if status != "FAIL" and diff0 is not None:
        status = "PASS" if abs(diff0) <= a.tol else "FAIL"
    pair = ""
    if "ppl" in rec["tern"].get("cuda", {}) and "ppl" in rec["tern"].get("cpu", {}):
        pair = f"; tern cuda vs cpu {100 * (rec['tern']['cuda']['ppl'] / rec['tern']['cpu']['ppl'] - 1):+.3f}%"
    rec["status"] = status
    L = [f"# perplexity receipt (issue 28): {a.model_label or os.path.basename(a.model)}",
         "", f"File `{a.model}`, text `{a.text}`, -c {a.ctx}{f' --chunks {a.chunks}' if a.chunks else ' (every chunk)'}; "
         f"commit {rec.get('commit') or '?'}. Bar: tern within {100 * a.tol:.1f}% of llama-perplexity.", "",
         "| run | PPL | +/- | chunks | s | vs reference |", "|---|---:|---:|---:|---:|---|"] + rows + [""]
    if "skipped" in rec["llama.cpp"]:
        L.append(f"llama.cpp: {rec['llama.cpp']['skipped']}")
    if pair:
        L.append(pair.lstrip("; ").capitalize() + ".")
    md = "\n".join(L) + "\n"
    with open(a.md, "w") as f:
        f.write(md)
    with open(a.out, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(md)
    vals = ", ".join(f"tern {d} {rec['tern'][d].get('ppl', 'failed')}" for d in devices)
    peer = ", ".join(f"llama-perplexity {d} {rec['llama.cpp'][d].get('ppl', 'failed')}" for d in ("cuda", "cpu")
                     if d in rec["llama.cpp"])
    log(f"{status} {a.model_label or os.path.basename(a.model)} -c {a.ctx}: {vals}; {peer or 'no llama-perplexity'}"
        f"{'; committed ' + str(fixture['ppl']) if fixture else ''}; tern {d0} "
        f"{'-' if diff0 is None else f'{100 * diff0:+.3f}%'} vs {lab0 or 'no reference'}{pair}")
    return 0 if status != "FAIL" else 1


if __name__ == "__main__":
    sys.exit(main())
