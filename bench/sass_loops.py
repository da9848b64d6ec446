#!/usr/bin/env python3
"""bench/sass_loops.py: the loops of a kernel's SASS, each with its instruction count and opcode histogram.

    cuobjdump -sass build-cuda/backend/cuda/gemm_hmma.o > hm.sass     (on the GPU box: this machine has no disassembler)
    python3 bench/sass_loops.py hm.sass 'gemm_hb_kILi1ELi2E'          (a regex on the mangled name)

A loop is a backward branch (BRA to a lower address) and the instructions from its target to it; nested loops are
listed each. Counts are static (instructions in the listing), not issued: a branch inside the body still counts its
both sides. The opcode is the mnemonic's first part (LOP3.LUT -> LOP3). bench/gpu_check.sh `sass` runs it on the box.
"""
import re
import sys
from collections import Counter

INS = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*)(\S*)\s*(.*?);")
FUNC = re.compile(r"Function : (\S+)")


def functions(path):
    name, body = None, []
    for line in open(path, errors="replace"):
        m = FUNC.search(line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
            continue
        i = INS.match(line)
        if i and name:
            body.append((int(i.group(1), 16), i.group(2), i.group(3), i.group(4)))
    if name:
        yield name, body


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: sass_loops.py FILE.sass NAME_REGEX")
    pat = re.compile(sys.argv[2])
    found = 0
    for name, body in functions(sys.argv[1]):
        if not pat.search(name):
            continue
        found += 1
        print("## %s: %d instructions" % (name, len(body)))
        addr = [a for a, _, _, _ in body]
        for k, (a, op, suf, args) in enumerate(body):
            m = re.match(r"(?:\S+,\s*)?0x([0-9a-f]+)", args) if op == "BRA" else None
            if not m:
                continue
            t = int(m.group(1), 16)
            if t >= a or t not in addr:
                continue
            j = addr.index(t)
            loop = body[j:k + 1]
            h = Counter(o for _, o, _, _ in loop)
            note = " (spans EXIT: a retry branch, not a loop body)" if h["EXIT"] else ""
            print("loop 0x%04x..0x%04x%s: %d instructions; %s" % (t, a, note, len(loop),
                  ", ".join("%s %d" % (o, c) for o, c in h.most_common())))
    if not found:
        sys.exit("sass_loops: no function matches %s in %s" % (sys.argv[2], sys.argv[1]))


if __name__ == "__main__":
    main()
