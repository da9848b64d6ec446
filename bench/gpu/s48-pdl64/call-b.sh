#!/usr/bin/env bash
# session 48 call B: where a B = 64 and a B = 32 step go today (Q4_0, f16 order, the rule), TERN_TIMELINE
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
export TERN_CUPTI_LIB="$(ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* 2>/dev/null | head -1)"
[ -n "$TERN_CUPTI_LIB" ] || export TERN_CUPTI_LIB="$(find /usr /opt -name 'libcupti.so*' 2>/dev/null | head -1)"
f=$(syn q4_0)
tl() { local n=$1 b=$2; shift 2
  env "$@" TERN_TIMELINE=/tmp/tl-$n.csv ./tern bench -m $f --device cuda --parallel $b -p 512 -n 16 -r 1 >$O/tl-$n.log 2>&1
  python3 bench/timeline.py /tmp/tl-$n.csv >$O/tl-$n.md 2>>$O/tl-$n.log
  env "$@" TERN_CUDA_TIMING=1 ./tern bench -m $f --device cuda --parallel $b -p 512 -n 16 -r 1 2>&1 | grep -E '^cuda timing|^\|  *512' | tail -2 | sed 's/^/control: /' >>$O/tl-$n.md
  echo "$n done $(( $(date +%s) - t0 )) s"; }
tl q40-64 64 TERN_PDL_MAX=0
tl q40-32 32 TERN_PDL_MAX=0

sed -n 13,32p $O/tl-q40-64.md
