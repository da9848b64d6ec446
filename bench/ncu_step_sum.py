#!/usr/bin/env python3
"""Sum ncu's gpu__time_duration over the kernels of each decode step (bench/sweeps/boundary_run83a.sh).

Input: `ncu --metrics gpu__time_duration.sum --csv --page raw` output of an un-captured `tern bench -p 0`
(TERN_CUDA_GRAPH=0). A step ends at its argmax_done_k kernel (the on-device greedy pick). Prints the steps'
summed kernel time (median over the steps after the first two), the kernels a step, and the time by kernel
name of the median step (--full: by the whole name, template arguments and all, cut to 90 characters: which
instantiation of a kernel ran; --grid: by that and the launch's grid too, e.g. a GEMM's matrices by their tile counts). ncu serializes kernels and times each alone, so the sum has no launch gaps and no
PDL overlap."""
import csv
import re
import statistics
import sys

args = [a for a in sys.argv[1:] if a not in ("--full", "--grid")]
grid = "--grid" in sys.argv[1:]
full = grid or "--full" in sys.argv[1:]
rows = list(csv.reader(open(args[0], errors="replace")))
hdr = next(i for i, r in enumerate(rows) if "Kernel Name" in r and "gpu__time_duration.sum" in r)
h = rows[hdr]
ki, mi = h.index("Kernel Name"), h.index("gpu__time_duration.sum")
gi = h.index("Grid Size") if "Grid Size" in h else -1
scale = 1.0
kern = []
for r in rows[hdr + 1:]:
    if len(r) <= mi:
        continue
    v = r[mi].replace(",", "")
    try:
        x = float(v)
    except ValueError:
        u = v.lower()
        scale = 1e3 if "us" in u else 1e6 if "ms" in u else 1.0  # to ns
        continue
    kern.append((r[ki] + (" grid " + r[gi] if grid and gi >= 0 else ""), x * scale))
steps, cur = [], []
for name, ns in kern:
    cur.append((name, ns))
    if name.startswith("argmax_done"):
        steps.append(cur)
        cur = []
steps = steps[2:]  # warm-up steps
if not steps:
    sys.exit("no complete steps (argmax_done_k) in %d kernels" % len(kern))
tot = [sum(ns for _, ns in s) for s in steps]
med = statistics.median(tot)
ms = min(steps, key=lambda s: abs(sum(ns for _, ns in s) - med))
print("steps: %d, kernels a step: %s" % (len(steps), sorted(set(len(s) for s in steps))))
print("summed kernel time a step (us): median %.1f, min %.1f, max %.1f" % (med / 1e3, min(tot) / 1e3, max(tot) / 1e3))
by = {}
for name, ns in ms:
    g = name[name.index(" grid ("):] if " grid (" in name else ""
    k = re.sub(r"^void |\((?:int|unsigned int|bool|long)\)", "", name).split("(")[0].strip()[:90] + g if full else name.split("(")[0].split("<")[0].strip()
    c = by.setdefault(k, [0, 0.0])
    c[0] += 1
    c[1] += ns
print("\n| kernel | launches | us a step | us a launch |\n|---|---:|---:|---:|")
for k, (n, ns) in sorted(by.items(), key=lambda kv: -kv[1][1]):
    print("| %s | %d | %.1f | %.2f |" % (k, n, ns / 1e3, ns / 1e3 / n))
