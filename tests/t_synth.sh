#!/usr/bin/env bash
# t_synth: `tern synth` on the command line: bad arguments give one-line errors with exit 2 (unknown
# preset/type list the valid ones; a K-quant on smollm2's 576-wide rows is refused), --layers/--vocab
# override the preset, the same seed gives the same bytes and another seed different ones, no partial
# file is left on error; each preset's metadata and tensor directory (--dry-run) as its family's converter writes
# them (qwen2 biases, qwen3/gemma3 q/k norms and key_length, gemma3 post-norms, window, RoPE bases and linear
# scaling, phi3's fused tensors); a gemma3 file runs through `tern bench` on the CPU. Loading every preset, forward
# passes, the in-memory model and the logits against llama.cpp are in tests/test_synth.c.
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/tern_t_synth.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL t_synth: $*"; }

expect_err() {
  local name=$1 want=$2; shift 3
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  local lines; lines=$(wc -l <"$T/err")
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "$want" "$T/err" && grep -q '^tern: error: ' "$T/err"; then ok
  else bad "$name: rc=$rc lines=$lines stderr: $(head -c 300 "$T/err")"; fi
}

expect_err "unknown preset" "presets: smollm2-135m, llama3.2-1b, llama3-8b, llama3-70b, llama3-405b, mistral-7b, qwen2.5-7b, qwen3-8b, gemma3-4b, gemma3-27b, phi3-mini" -- \
  ./tern synth --arch llama9 --type q4_0 -o "$T/a.gguf"
expect_err "unknown type" "types: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl" -- \
  ./tern synth --arch smollm2-135m --type q7_0 -o "$T/a.gguf"
expect_err "k-quant on 576 rows" "multiple of 256 elements, but smollm2-135m has n_embd = 576" -- \
  ./tern synth --arch smollm2-135m --type q4_k -o "$T/a.gguf"
expect_err "missing -o" "-o FILE.gguf is required" -- ./tern synth --arch smollm2-135m --type q4_0
expect_err "bad layers" "--layers expects" -- ./tern synth --arch smollm2-135m --type q4_0 --layers 0 -o "$T/a.gguf"
expect_err "bad vocab" "--vocab expects" -- ./tern synth --arch smollm2-135m --type q4_0 --vocab x -o "$T/a.gguf"
expect_err "unknown option" "unknown option" -- ./tern synth --arch smollm2-135m --type q4_0 --bogus 1 -o "$T/a.gguf"
expect_err "unwritable" "cannot create" -- ./tern synth --arch smollm2-135m --type q4_0 --layers 1 --vocab 64 -o /nonexistent/a.gguf
[ ! -e "$T/a.gguf" ] && ok || bad "a file was left behind after an error"

# overrides and size: smollm2 q8_0, 1 layer, vocab 256: header + (256 + 9*64*... ) computed exactly below
if ./tern synth --arch smollm2-135m --type q8_0 --layers 1 --vocab 256 --seed 3 -o "$T/a.gguf" >"$T/out" 2>&1; then ok
else bad "synth smollm2 q8_0: $(cat "$T/out")"; fi
grep -q "1 layers, vocab 256, 11 tensors" "$T/out" && ok || bad "summary line: $(cat "$T/out")"
# data bytes: q8_0 rows are n/32*34; token_embd 256x576, q 576x576, k/v 192x576, o 576x576, gate/up 1536x576,
# down 576x1536; norms 3x576 f32. Each tensor is padded to 32 bytes (all of these are multiples already).
want=$(( (256*576 + 576*576 + 2*192*576 + 576*576 + 2*1536*576 + 576*1536) / 32 * 34 + 3*576*4 ))
size=$(stat -c %s "$T/a.gguf")
[ "$size" -gt "$want" ] && [ "$size" -lt $((want + 8192)) ] && ok || bad "file size $size, want data $want + header"
./tern synth --arch smollm2-135m --type q8_0 --layers 1 --vocab 256 --seed 3 -o "$T/b.gguf" >/dev/null 2>&1
cmp -s "$T/a.gguf" "$T/b.gguf" && ok || bad "same seed gave different bytes"
./tern synth --arch smollm2-135m --type q8_0 --layers 1 --vocab 256 --seed 4 -o "$T/c.gguf" >/dev/null 2>&1
cmp -s "$T/a.gguf" "$T/c.gguf" && bad "different seeds gave the same bytes" || ok
# metadata as the preset says (strings are in the header: check the keys' presence and the name)
for k in general.architecture general.file_type llama.context_length llama.embedding_length llama.block_count \
         llama.feed_forward_length llama.attention.head_count llama.attention.head_count_kv llama.rope.freq_base \
         llama.attention.layer_norm_rms_epsilon llama.rope.dimension_count llama.vocab_size no_vocab; do
  head -c 4096 "$T/a.gguf" | grep -aq "$k" && ok || bad "metadata $k missing"
done
# untied presets carry output.weight, tied ones do not ("blk.N.attn_output.weight" also contains the name)
n_out() { head -c 4096 "$1" | grep -aoF "output.weight" | wc -l; }
n_attn() { head -c 4096 "$1" | grep -aoF "attn_output.weight" | wc -l; }
./tern synth --arch llama3-8b --type q4_0 --layers 1 --vocab 64 -o "$T/d.gguf" >/dev/null 2>&1
[ $(( $(n_out "$T/d.gguf") - $(n_attn "$T/d.gguf") )) -eq 1 ] && ok || bad "llama3-8b has no output.weight"
[ $(( $(n_out "$T/a.gguf") - $(n_attn "$T/a.gguf") )) -eq 0 ] && ok || bad "smollm2 (tied) has output.weight"
# the preset table (--dry-run writes nothing): arch embd layers ff heads kv vocab ctx rope_base tied head_dim eps
# tensors-a-layer; the keys are {arch}.*
while read -r preset arch e l ff h kv v ctx base tied hd eps per; do
  ./tern synth --arch "$preset" --type q8_0 --dry-run >"$T/dry" 2>&1 || { bad "$preset --dry-run failed"; continue; }
  grep -q "^general.architecture = $arch$" "$T/dry" && ok || bad "$preset general.architecture"
  got=$(awk -F' = ' -v a="$arch" '{k[$1]=$2}
    END {print k[a".embedding_length"], k[a".block_count"], k[a".feed_forward_length"], k[a".attention.head_count"],
         k[a".attention.head_count_kv"], k[a".vocab_size"], k[a".context_length"], k[a".rope.freq_base"]}' "$T/dry")
  [ "$got" = "$e $l $ff $h $kv $v $ctx $base" ] && ok || bad "$preset metadata: got '$got'"
  grep -q "^$arch.attention.layer_norm_rms_epsilon = $eps$" "$T/dry" && ok || bad "$preset rms eps"
  n_t=$(grep -c '^tensor ' "$T/dry"); want_t=$(( 2 + (1 - tied) + per * l ))
  [ "$n_t" -eq "$want_t" ] && ok || bad "$preset: $n_t tensors, want $want_t"
  if [ "$arch" = phi3 ]; then  # q|k|v rows in one tensor, gate|up rows in ffn_up
    grep -q "^tensor blk.0.attn_qkv.weight q8_0 $e $(( (h + 2 * kv) * hd ))$" "$T/dry" && \
      grep -q "^tensor blk.0.ffn_up.weight q8_0 $e $((2 * ff))$" "$T/dry" && ! grep -q "ffn_gate" "$T/dry" && ok || \
      bad "$preset fused attn_qkv / ffn_up"
  else
    grep -q "^tensor blk.0.attn_k.weight q8_0 $e $((kv * hd))$" "$T/dry" && \
      grep -q "^tensor blk.0.attn_q.weight q8_0 $e $((h * hd))$" "$T/dry" && ok || bad "$preset attn_q/attn_k shape"
  fi
  grep -q "^tensor blk.$((l - 1)).ffn_down.weight q8_0 $ff $e$" "$T/dry" && ok || bad "$preset ffn_down shape"
  if [ "$tied" -eq 1 ]; then grep -q "^tensor output.weight" "$T/dry" && bad "$preset: tied but has output.weight" || ok
  else grep -q "^tensor output.weight q8_0 $e $v$" "$T/dry" && ok || bad "$preset output.weight"; fi
  # head_dim: stated as key_length/value_length where the model's config.json has head_dim (qwen3, gemma3), else
  # n_embd / n_head; rope.dimension_count as the llama and phi3 converters write it
  case $arch in
    qwen3|gemma3) grep -q "^$arch.attention.key_length = $hd$" "$T/dry" && grep -q "^$arch.attention.value_length = $hd$" "$T/dry" \
                    && ok || bad "$preset key_length" ;;
    *) [ "$hd" -eq $((e / h)) ] && ! grep -q "key_length" "$T/dry" && ok || bad "$preset: head_dim $hd, key_length written" ;;
  esac
  case $arch in
    llama|phi3) grep -q "^$arch.rope.dimension_count = $hd$" "$T/dry" && ok || bad "$preset rope dims" ;;
    *) grep -q "rope.dimension_count" "$T/dry" && bad "$preset: rope.dimension_count written" || ok ;;
  esac
  # the family's extra tensors, per layer
  n_bias=$(grep -c '^tensor blk.0.attn_[qkv].bias f32' "$T/dry"); n_qkn=$(grep -c '^tensor blk.0.attn_[qk]_norm.weight f32 '"$hd"' 1$' "$T/dry")
  n_post=$(grep -c '^tensor blk.0.post_\(attention\|ffw\)_norm.weight f32 '"$e"' 1$' "$T/dry")
  case $arch in qwen2) want="3 0 0" ;; qwen3) want="0 2 0" ;; gemma3) want="0 2 2" ;; *) want="0 0 0" ;; esac
  [ "$n_bias $n_qkn $n_post" = "$want" ] && ok || bad "$preset biases/qk-norms/post-norms: $n_bias $n_qkn $n_post, want $want"
done <<'TAB'
smollm2-135m llama 576 30 1536 9 3 49152 8192 100000 1 64 1e-05 9
llama3.2-1b llama 2048 16 8192 32 8 128256 131072 500000 1 64 1e-05 9
llama3-8b llama 4096 32 14336 32 8 128256 8192 500000 0 128 1e-05 9
llama3-70b llama 8192 80 28672 64 8 128256 8192 500000 0 128 1e-05 9
llama3-405b llama 16384 126 53248 128 8 128256 131072 500000 0 128 1e-05 9
mistral-7b llama 4096 32 14336 32 8 32000 32768 10000 0 128 1e-05 9
qwen2.5-7b qwen2 3584 28 18944 28 4 152064 131072 1e+06 0 128 1e-06 12
qwen3-8b qwen3 4096 36 12288 32 8 151936 40960 1e+06 0 128 1e-06 11
gemma3-4b gemma3 2560 34 10240 8 4 262144 131072 1e+06 1 256 1e-06 13
gemma3-27b gemma3 5376 62 21504 32 16 262144 131072 1e+06 1 128 1e-06 13
phi3-mini phi3 3072 32 8192 32 32 32064 4096 10000 0 96 1e-05 6
TAB
# gemma3: the sliding window, the local layers' RoPE base and the global layers' linear scaling (HF text_config's
# sliding_window, rope_local_base_freq, rope_scaling); phi3: its window (written, unused) and original context
for preset in gemma3-4b gemma3-27b; do
  ./tern synth --arch $preset --type q4_0 --dry-run >"$T/dry" 2>&1
  for kv in "gemma3.attention.sliding_window = 1024" "gemma3.rope.freq_base_swa = 10000" "gemma3.rope.scaling.type = linear" \
            "gemma3.rope.scaling.factor = 8"; do
    grep -qx "$kv" "$T/dry" && ok || bad "$preset: no '$kv'"
  done
done
./tern synth --arch phi3-mini --type q4_0 --dry-run >"$T/dry" 2>&1
grep -qx "phi3.attention.sliding_window = 2047" "$T/dry" && grep -qx "phi3.rope.scaling.original_context_length = 4096" "$T/dry" \
  && ok || bad "phi3-mini: sliding_window / original_context_length"
./tern synth --arch qwen3-8b --type q4_0 --dry-run >"$T/dry" 2>&1
grep -q "sliding_window\|freq_base_swa\|rope.scaling" "$T/dry" && bad "qwen3-8b has window or scaling keys" || ok
# a gemma3 file through the CLI: tern bench loads it on the CPU and runs prefill and decode on token ids
if ./tern synth --arch gemma3-4b --type q4_0 --layers 2 --vocab 64 -o "$T/g.gguf" >/dev/null 2>&1 && \
   ./tern bench -m "$T/g.gguf" -p 8 -n 2 -r 1 -t 2 -o csv >"$T/bench" 2>&1; then
  [ "$(grep -cE ',"(pp8|tg2)",.*,[0-9]*[1-9][0-9]*\.[0-9]+,' "$T/bench")" -eq 2 ] && ok || bad "bench gemma3-4b: $(head -c 300 "$T/bench")"
else bad "synth/bench gemma3-4b: $(head -c 300 "$T/bench" 2>/dev/null)"; fi
rm -f "$T/g.gguf"
./tern synth --arch llama3-70b --type q4_0 --layers 3 --vocab 100 --dry-run >"$T/dry" 2>&1
grep -q "^llama.block_count = 3$" "$T/dry" && grep -q "^llama.vocab_size = 100$" "$T/dry" && \
  grep -q "^tensor token_embd.weight q4_0 8192 100$" "$T/dry" && [ "$(grep -c '^tensor ' "$T/dry")" -eq 30 ] && ok || \
  bad "--layers/--vocab with --dry-run"
# --vocab-from: the default model's tokenizer (tests/fixtures/perplexity/smollm2-tokenizer.gguf.gz, its tokenizer.* keys)
# in a synthetic smollm2: the same ids and text as the real model, n_vocab its token count, no vocab_size / no_vocab;
# it excludes --vocab; a file without a tokenizer is refused
gzip -dc tests/fixtures/perplexity/smollm2-tokenizer.gguf.gz >"$T/tok.gguf"
./tern synth --arch smollm2-135m --type q8_0 --layers 1 --vocab-from "$T/tok.gguf" --dry-run >"$T/dry" 2>&1
grep -qx "tokenizer.ggml.tokens = (copied)" "$T/dry" && grep -qx "tokenizer.chat_template = (copied)" "$T/dry" && \
  grep -q "^tensor token_embd.weight q8_0 576 49152$" "$T/dry" && ! grep -q "vocab_size\|no_vocab" "$T/dry" && ok || \
  bad "--vocab-from --dry-run: $(grep -c copied "$T/dry") keys copied"
if ./tern synth --arch smollm2-135m --type q8_0 --layers 1 --vocab-from "$T/tok.gguf" -o "$T/v.gguf" >"$T/out" 2>&1; then
  grep -q "vocab 49152" "$T/out" && ok || bad "--vocab-from summary: $(cat "$T/out")"
  s='In the beginning God created the heaven and the earth. 123 ÅÉ'
  if [ -s models/SmolLM2-135M-Instruct.Q4_1.gguf ]; then
    [ "$(./tern tokenize -m "$T/v.gguf" -p "$s" --ids 2>&1)" = "$(./tern tokenize -m models/SmolLM2-135M-Instruct.Q4_1.gguf -p "$s" --ids 2>&1)" ] \
      && ok || bad "--vocab-from: ids differ from the default model's"
  fi
  ids=$(./tern tokenize -m "$T/v.gguf" -p "$s" --ids 2>&1)
  [ "$(./tern detokenize -m "$T/v.gguf" -p "$ids" 2>&1)" = "$s" ] && ok || bad "--vocab-from: detokenize of $ids gave '$(./tern detokenize -m "$T/v.gguf" -p "$ids" 2>&1)'"
else bad "--vocab-from: $(cat "$T/out")"; fi
expect_err "vocab and vocab-from" "exclude each other" -- ./tern synth --arch smollm2-135m --type q8_0 --vocab 64 --vocab-from "$T/tok.gguf" -o "$T/a2.gguf"
expect_err "vocab-from without a tokenizer" "has no tokenizer" -- ./tern synth --arch smollm2-135m --type q8_0 --vocab-from "$T/a.gguf" -o "$T/a2.gguf"
expect_err "vocab-from missing" "vocab-from '/nonexistent.gguf'" -- ./tern synth --arch smollm2-135m --type q8_0 --vocab-from /nonexistent.gguf -o "$T/a2.gguf"
echo "t_synth: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
