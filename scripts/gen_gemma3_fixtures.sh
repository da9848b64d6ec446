#!/usr/bin/env bash
# tests/fixtures/gemma3/: the float64 reference logits (scripts/ref_numpy.py, last token) of two prompts of Gemma 3
# 270M Q4_K_M (scripts/fetch_model.sh gemma3). The ids are tern's tokenization (its gemma3 tokenizer matches llama.cpp's
# ids: tests/fixtures/tokenizer/gemma3.tsv): short.ids "The capital of France is Paris, and the capital of Germany is"
# with BOS; long.ids the first 600 tokens of bench/prompt128.txt six times over (past the 512-key sliding window).
set -euo pipefail
cd "$(dirname "$0")/.."
M=models/gemma-3-270m-q4_k_m.gguf
for k in short long; do
  python3 scripts/ref_numpy.py "$M" --tokens "$(cat tests/fixtures/gemma3/$k.ids)" --out tests/fixtures/gemma3/$k.ref.bin --last
done
