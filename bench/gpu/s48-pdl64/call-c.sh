#!/usr/bin/env bash
# session 48 call C: PDL in the f16 order's passes of 49..64 tokens (never measured: PDL_MAX 48 came from the chunk order):
# TERN_PDL_MAX=64 against the rule (48), B = 48, 56, 64, Q4_0 / Q8_0 / Q4_K, two rounds interleaved
set -u
cd "$(dirname "$0")/../.."
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
O=${OUT:-/tmp/o}; mkdir -p $O
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "card: $card" | tee $O/card.txt
t0=$(date +%s)
[ -x ./tern ] || { xz -dc .box/bin/tern.xz >./tern && chmod +x ./tern; }
mkdir -p /tmp/tern_synth
syn() { local f=/tmp/tern_synth/llama3-8b-$1-L32.gguf; [ -s $f ] || ./tern synth --arch llama3-8b --type $1 --layers 32 -o $f >/dev/null 2>&1; echo $f; }
: >$O/pdl64.md
for r in 1 2; do for ty in q4_0 q8_0 q4_k; do f=$(syn $ty)
  for arm in rule 64; do
    if [ $arm = rule ]; then e=TERN_PDL_MAX=0; else e=TERN_PDL_MAX=64; fi
    env $e ./tern bench -m $f --device cuda --parallel 48,56,64 -p 512 -n 128 -r 1 2>/dev/null | grep -E '^\|  *512 ' | sed "s/^/r$r $ty $arm /" >>$O/pdl64.md
  done; echo "r$r $ty $(( $(date +%s) - t0 )) s"
done; done
awk -F'|' '{print $1, $4, $9}' $O/pdl64.md
