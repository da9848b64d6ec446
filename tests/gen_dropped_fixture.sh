#!/usr/bin/env bash
# gen_dropped_fixture.sh LLAMA_TOKENIZE: llama.cpp's ids for texts holding bytes SmolLM2's vocabulary cannot encode
# (0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, the lead bytes F1/F2) -> tests/fixtures/tokenizer/dropped.tsv (hex(text), ids).
# llama-tokenize of llama-cpp-python 0.3.36's llama.cpp (cmake --build build --target llama-tokenize), no BOS, no
# special-token parsing. tests/t_cli.sh checks `tern tokenize --ids --no-bos --no-special` against it.
set -euo pipefail
exe=${1:?usage: gen_dropped_fixture.sh LLAMA_TOKENIZE}
cd "$(dirname "$0")/.."
out=tests/fixtures/tokenizer/dropped.tsv
echo "# hex(text)	llama.cpp ids (llama-tokenize --ids --no-bos --no-parse-special, SmolLM2-135M-Instruct)" >"$out"
for s in 'a\x04b' '\x04\x06\x13\x14\x16\x1d' 'x\xf1\x80\x80\x80y' 'Hi\x04 there\x1d!' '\xf2\x90\x80\x80 end' \
         'tab\x13\x14\x16 mix \xe2\x82\xac'; do
  t=$(printf "$s")
  ids=$("$exe" -m models/SmolLM2-135M-Instruct.Q4_1.gguf -p "$t" --ids --no-bos --no-parse-special --log-disable 2>/dev/null | tail -1)
  printf '%s\t%s\n' "$(printf '%s' "$t" | od -An -tx1 | tr -d ' \n')" "$ids" >>"$out"
done
cat "$out"
