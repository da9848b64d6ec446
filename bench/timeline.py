#!/usr/bin/env python3
"""bench/timeline.py: a step's kernels on the device from a TERN_TIMELINE file (src/backend/cuda/timeline.c).

    TERN_TIMELINE=/tmp/t.csv TERN_GEMV_CHUNK=2 ./tern bench -m FILE --device cuda --parallel 4 -p 512 -n 16
    python3 bench/timeline.py /tmp/t.csv [--min-kernels 50] [--last 8] [--top 25]

A graph launch's kernels share the launch's correlation id (and each runs a graph node once: a repeated node starts
the next group, should CUPTI give launches one id): each group with at least --min-kernels kernels is a pass (a decode
step). For the last --last passes of the most common size (the steady state of the largest B run last,
unless the run had one B), it prints each pass's span (first start to last end), the sum of its kernels' durations, the
time at least one kernel ran (busy) and the overlap (sum - busy: kernels running at once, e.g. under programmatic
dependent launch), then by kernel (in launch order within a pass): launches a pass, mean duration, and mean gap from the
previous kernel's end to its start (negative: it started before the previous one ended). Times in microseconds.
"""
import argparse
import collections
import csv
import re
import sys


def short(name):
    """A kernel's name without its arguments: 'gemm_hb_k<1,2>' from the mangled form (its integer template arguments),
    or the demangled one cut at its argument list."""
    n = re.match(r"_Z(\d+)", name)
    if n:
        ln = int(n.group(1))
        base, rest = name[n.end():n.end() + ln], name[n.end() + ln:]
        t = re.match(r"I((?:Li\d+E)+)E", rest)
        targs = re.findall(r"Li(\d+)E", t.group(1)) if t else []
        return base + ("<" + ",".join(targs) + ">" if targs else "")
    return re.sub(r"\(.*$", "", name).replace("void ", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--min-kernels", type=int, default=50)
    ap.add_argument("--last", type=int, default=8)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()

    groups = collections.defaultdict(list)
    order = []
    seen = {}  # a group's (graph, node) pairs: a repeat starts a new group (one launch runs each node once)
    with open(a.csv, newline="") as f:
        allrows = list(csv.DictReader(f))
    # CUPTI may give a kernel record no timestamps (0) or an end before its start: such a row would move its pass's
    # span and gaps, so it is left out and counted
    rows = sorted((r for r in allrows if int(r["start_ns"]) > 0 and int(r["end_ns"]) > int(r["start_ns"])),
                  key=lambda r: int(r["start_ns"]))
    bad = len(allrows) - len(rows)
    sub = collections.Counter()
    for r in rows:
        c0 = int(r["correlation"])
        node = (r["graph"], r["graph_node"])
        c = (c0, sub[c0])
        if r["graph"] != "0" and node in seen.setdefault(c, set()):
            sub[c0] += 1
            c = (c0, sub[c0])
        seen.setdefault(c, set()).add(node)
        if c not in groups:
            order.append(c)
        groups[c].append((int(r["start_ns"]), int(r["end_ns"]), short(r["name"]), r["grid"], r["block"]))
    passes = [c for c in order if len(groups[c]) >= a.min_kernels]
    if not passes:
        sys.exit(f"timeline: no group of >= {a.min_kernels} kernels in {a.csv} (a graph launch's kernels share one)")
    size = collections.Counter(len(groups[c]) for c in passes).most_common(1)[0][0]
    passes = [c for c in passes if len(groups[c]) == size]
    passes.sort(key=lambda c: min(k[0] for k in groups[c]))
    sel = passes[-a.last:]
    print(f"# {a.csv}: {len(passes)} passes of {size} kernels; the last {len(sel)}"
          + (f"; {bad} records without valid timestamps left out (their passes have fewer kernels)" if bad else "") + "\n")
    print("| pass | span us | kernel sum us | busy us | overlap us | idle us |")
    print("|---:|---:|---:|---:|---:|---:|")
    by = collections.OrderedDict()
    for i, c in enumerate(sel):
        ks = sorted(groups[c])
        t0, t1 = ks[0][0], max(k[1] for k in ks)
        tot = sum(k[1] - k[0] for k in ks)
        busy, cur_s, cur_e = 0, None, None
        for s, e, *_ in ks:
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    busy += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        busy += cur_e - cur_s
        span = t1 - t0
        print(f"| {i} | {span / 1e3:.1f} | {tot / 1e3:.1f} | {busy / 1e3:.1f} | {(tot - busy) / 1e3:.1f} | {(span - busy) / 1e3:.1f} |")
        prev_end = None
        for s, e, name, grid, block in ks:
            key = f"{name} {grid}/{block}"
            d = by.setdefault(key, {"n": 0, "dur": 0, "gap": 0, "gaps": 0})
            d["n"] += 1
            d["dur"] += e - s
            if prev_end is not None:
                d["gap"] += s - prev_end
                d["gaps"] += 1
            prev_end = e if prev_end is None else max(prev_end, e)
    n = len(sel)
    print(f"\n| kernel grid/block | a pass | mean us | total a pass us | mean gap us |")
    print("|---|---:|---:|---:|---:|")
    rows = sorted(by.items(), key=lambda kv: -kv[1]["dur"])
    for key, d in rows[:a.top]:
        gap = f"{d['gap'] / d['gaps'] / 1e3:.2f}" if d["gaps"] else "-"
        print(f"| {key} | {d['n'] / n:.1f} | {d['dur'] / d['n'] / 1e3:.2f} | {d['dur'] / n / 1e3:.1f} | {gap} |")


if __name__ == "__main__":
    main()
