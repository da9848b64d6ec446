#!/usr/bin/env python3
"""bench/ncu_src_top.py: where a kernel's warps wait, from ncu's source page.

    python3 bench/ncu_src_top.py FILE.csv[.gz] [TOP]

FILE: `ncu -i REPORT.ncu-rep --page source --csv --print-source sass` (one block a kernel: a "Kernel Name" line, a
header with "Address", "Source", "Warp Stall Sampling (All Samples)", ..., then a row an SASS instruction). For each
kernel: its warp-stall samples, the TOP (default 15) instructions by samples (offset from the kernel's first address,
the SASS, samples, share, executions), the TOP opcodes by samples (the SASS's first word after a predicate) and
the rest, and the ten largest stall reasons (ncu's stall_* columns). Used by bench/gpu_check.sh attprof; the method of bench/gpu/s37-hb1 (docs/ledger.md 2026-12-05 "what bounds the
f16 order at one column").
"""
import csv
import gzip
import sys
from collections import defaultdict


def blocks(rows):
    """(kernel name, header, instruction rows) for each kernel in the file."""
    name, head, body = None, None, []
    for r in rows:
        if not r:
            continue
        if r[0] == "Kernel Name":
            if name is not None and head:
                yield name, head, body
            name, head, body = r[1] if len(r) > 1 else "?", None, []
        elif r[0] == "Address":
            head = r
        elif head is not None:
            body.append(r)
    if name is not None and head:
        yield name, head, body


def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(src):
    w = src.split()
    if w and w[0].startswith("@"):
        w = w[1:]
    return w[0].split(".")[0] if w else "?"


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: ncu_src_top.py FILE.csv[.gz] [TOP]")
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 15
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    found = False
    for name, head, body in blocks(rows):
        found = True
        try:
            ia, isrc = head.index("Address"), head.index("Source")
            iss = head.index("Warp Stall Sampling (All Samples)")
        except ValueError:
            print(f"## {name}\n\nno warp-stall column in the header\n")
            continue
        iex = head.index("Instructions Executed") if "Instructions Executed" in head else None
        base = None
        ins = []
        for r in body:
            if len(r) <= max(ia, isrc, iss):
                continue
            try:
                addr = int(r[ia], 16)
            except ValueError:
                continue
            base = addr if base is None else min(base, addr)
            ins.append((addr, r[isrc].strip(), num(r[iss]), num(r[iex]) if iex is not None and len(r) > iex else 0.0))
        total = sum(s for _, _, s, _ in ins)
        print(f"## {name}\n")
        print(f"{len(ins)} SASS instructions, {total:.0f} warp-stall samples\n")
        if not total:
            continue
        print("| offset | SASS | samples | share | executed |\n|---:|---|---:|---:|---:|")
        for addr, src, s, ex in sorted(ins, key=lambda x: -x[2])[:top]:
            print(f"| {addr - base:#x} | `{src}` | {s:.0f} | {100 * s / total:.1f}% | {ex:.0f} |")
        byop = defaultdict(float)
        for _, src, s, _ in ins:
            byop[opcode(src)] += s
        print("\n| opcode | samples | share |\n|---|---:|---:|")
        ranked = sorted(byop.items(), key=lambda x: -x[1])
        for o, s in ranked[:top]:
            if s:
                print(f"| {o} | {s:.0f} | {100 * s / total:.1f}% |")
        rest = sum(s for _, s in ranked[top:])
        if rest:
            print(f"| the other {len(ranked) - top} | {rest:.0f} | {100 * rest / total:.1f}% |")
        # the samples by stall reason (ncu's stall_* columns, all samples), summed over the kernel's instructions
        cols = [(i, h[len("stall_"):]) for i, h in enumerate(head) if h.startswith("stall_") and "(Not Issued)" not in h]
        if cols:
            why = defaultdict(float)
            for r in body:
                for i, h in cols:
                    if len(r) > i:
                        why[h] += num(r[i])
            print("\n| stall reason | samples | share |\n|---|---:|---:|")
            for h, s in sorted(why.items(), key=lambda x: -x[1])[:10]:
                if s:
                    print(f"| {h} | {s:.0f} | {100 * s / total:.1f}% |")
        print()
    if not found:
        sys.exit(f"ncu_src_top: no kernel block in {path}")


if __name__ == "__main__":
    main()
