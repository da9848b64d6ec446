#!/usr/bin/env bash
# t_synth: `tern synth` on the command line: bad arguments give one-line errors with exit 2 (unknown
# preset/type list the valid ones; a K-quant on smollm2's 576-wide rows is refused), --layers/--vocab
# override the preset, the same seed gives the same bytes and another seed different ones, no partial
# file is left on error. Loading and forward passes are in tests/test_synth.c.
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

expect_err "unknown preset" "presets: smollm2-135m, llama3.2-1b, llama3-8b, llama3-70b, llama3-405b, mistral-7b" -- \
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
# the preset table (--dry-run writes nothing): embd layers ff heads kv vocab ctx rope_base tied rope_dims
while read -r arch e l ff h kv v ctx base tied rd; do
  ./tern synth --arch "$arch" --type q8_0 --dry-run >"$T/dry" 2>&1 || { bad "$arch --dry-run failed"; continue; }
  got=$(awk -F' = ' '/^llama\.(embedding_length|block_count|feed_forward_length|attention\.head_count|attention\.head_count_kv|vocab_size|context_length|rope\.freq_base|rope\.dimension_count) =/ {k[$1]=$2}
    END {print k["llama.embedding_length"], k["llama.block_count"], k["llama.feed_forward_length"], k["llama.attention.head_count"],
         k["llama.attention.head_count_kv"], k["llama.vocab_size"], k["llama.context_length"], k["llama.rope.freq_base"]}' "$T/dry")
  [ "$got" = "$e $l $ff $h $kv $v $ctx $base" ] && ok || bad "$arch metadata: got '$got'"
  grep -q "^llama.rope.dimension_count = $rd$" "$T/dry" && ok || bad "$arch rope dims"
  grep -q "^llama.attention.layer_norm_rms_epsilon = 1e-05$" "$T/dry" && ok || bad "$arch rms eps"
  n_t=$(grep -c '^tensor ' "$T/dry"); want_t=$(( 2 + (1 - tied) + 9 * l ))
  [ "$n_t" -eq "$want_t" ] && ok || bad "$arch: $n_t tensors, want $want_t"
  grep -q "^tensor blk.0.attn_k.weight q8_0 $e $((kv * rd))$" "$T/dry" && ok || bad "$arch attn_k shape"
  grep -q "^tensor blk.$((l - 1)).ffn_down.weight q8_0 $ff $e$" "$T/dry" && ok || bad "$arch ffn_down shape"
  if [ "$tied" -eq 1 ]; then grep -q "^tensor output.weight" "$T/dry" && bad "$arch: tied but has output.weight" || ok
  else grep -q "^tensor output.weight q8_0 $e $v$" "$T/dry" && ok || bad "$arch output.weight"; fi
done <<'TAB'
smollm2-135m 576 30 1536 9 3 49152 8192 100000 1 64
llama3.2-1b 2048 16 8192 32 8 128256 131072 500000 1 64
llama3-8b 4096 32 14336 32 8 128256 8192 500000 0 128
llama3-70b 8192 80 28672 64 8 128256 8192 500000 0 128
llama3-405b 16384 126 53248 128 8 128256 131072 500000 0 128
mistral-7b 4096 32 14336 32 8 32000 32768 10000 0 128
TAB
./tern synth --arch llama3-70b --type q4_0 --layers 3 --vocab 100 --dry-run >"$T/dry" 2>&1
grep -q "^llama.block_count = 3$" "$T/dry" && grep -q "^llama.vocab_size = 100$" "$T/dry" && \
  grep -q "^tensor token_embd.weight q4_0 8192 100$" "$T/dry" && [ "$(grep -c '^tensor ' "$T/dry")" -eq 30 ] && ok || \
  bad "--layers/--vocab with --dry-run"
echo "t_synth: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
