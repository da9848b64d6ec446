#!/usr/bin/env python3
"""Make the perplexity fixtures (tests/fixtures/perplexity/), llama-perplexity as the reference.

usage: python3 tests/gen_perplexity_fixture.py text                  (needs Debian's bible-kjv: apt-get install bible-kjv)
       python3 tests/gen_perplexity_fixture.py ref LLAMA_PERPLEXITY  (needs the default model, `make model`)
       python3 tests/gen_perplexity_fixture.py vocab                 (the default model and the gguf package, .venv)

text: genesis.txt, Genesis 1-8 of the King James Version (public domain), as Debian's bible-kjv-text package ships
      it, read with its `bible` program: a "Genesis N" heading a chapter, one verse a line, verse numbers and the
      program's line wrapping removed.
ref:  ref.tsv, one line a setting: ctx, chunks, flash attention, PPL, its +/-, the llama-perplexity command line. The
      reference is llama-perplexity built from the llama.cpp vendored in the llama-cpp-python 0.3.36 sdist
      (cmake --build build --target llama-perplexity; CPU, -t 2), on models/SmolLM2-135M-Instruct.Q4_1.gguf.
      tests/t_perplexity.sh checks tern's value against it (0.5%).
vocab: smollm2-tokenizer.gguf.gz, the default model's metadata without tensors (scripts/extract_tokenizer.py; gzip
      with mtime 0, so the same bytes each time): `tern synth --arch smollm2-135m --vocab-from` it makes a synthetic
      SmolLM2 that tokenizes genesis.txt as the real model does, for bench/gpu_check.sh's ppl step on a box the 98 MB
      model does not travel to (tern and llama-perplexity on the same synthetic file there)."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "perplexity")
MODEL = os.path.join(HERE, "..", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
# (ctx, chunks, flash attention): the CI test's setting first (small: seconds on 2 cores), then -c 256 and -c 512 over
# the whole text; "auto" is llama-perplexity's default (on, on this CPU). The -fa off rows show llama.cpp's own spread:
# its two attention paths differ by 1.5% at -c 256 --chunks 3 (381 scored tokens of a 4-bit 135M model).
SETTINGS = [(128, 6, "auto"), (128, 6, "off"), (256, 3, "auto"), (256, 3, "off"), (512, -1, "auto")]


def make_text():
    chapters = []
    for c in range(1, 9):
        out = subprocess.run(["bible", f"Genesis {c}:1-99"], capture_output=True, text=True, check=True).stdout
        verses, cur = [], None
        for line in out.splitlines():
            m = re.match(r"^\s+(\d+) (.*)$", line)
            if m:
                cur = [m.group(2)]
                verses.append(cur)
            elif line.strip() and cur is not None and not line.startswith("Genesis"):
                cur.append(line.strip())
        chapters.append(f"Genesis {c}\n\n" + "\n".join(" ".join(v) for v in verses) + "\n")
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "genesis.txt"), "w") as f:
        f.write("\n".join(chapters))


def make_ref(exe):
    rows = []
    for ctx, chunks, fa in SETTINGS:
        cmd = [exe, "-m", MODEL, "-f", os.path.join(OUT, "genesis.txt"), "-c", str(ctx), "-t", "2", "-fa", fa]
        if chunks > 0:
            cmd += ["--chunks", str(chunks)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        m = re.search(r"Final estimate: PPL = ([\d.]+) \+/- ([\d.]+)", r.stdout + r.stderr)
        if not m:
            sys.exit(f"no final estimate from {' '.join(cmd)}:\n{(r.stdout + r.stderr)[-2000:]}")
        n = len(re.findall(r"\[\d+\][\d.]+,", r.stdout + r.stderr))
        rows.append(f"{ctx}\t{n}\t{fa}\t{m.group(1)}\t{m.group(2)}\t"
                    + " ".join(os.path.basename(x) if "/" in x else x for x in cmd) + "\n")
        print(rows[-1], end="")
    with open(os.path.join(OUT, "ref.tsv"), "w") as f:
        f.write("# ctx\tchunks\tflash_attn\tppl\tplus_minus\tcommand (llama-perplexity of llama-cpp-python 0.3.36's llama.cpp)\n")
        f.writelines(rows)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "text":
        make_text()
    elif len(sys.argv) >= 2 and sys.argv[1] == "vocab":
        subprocess.run([sys.executable, os.path.join(HERE, "..", "scripts", "extract_tokenizer.py"), MODEL,
                        os.path.join(OUT, "smollm2-tokenizer.gguf.gz")], check=True)
    elif len(sys.argv) >= 3 and sys.argv[1] == "ref":
        make_ref(sys.argv[2])
    else:
        sys.exit(__doc__)
