#!/usr/bin/env bash
# session 48 call A: today's rule (61b61a1 code) as one binary: Q4_K B = 1,4,5,8, Q4_0 B = 1,4,16; timelines of Q4_K
# B = 6 with PDL (TERN_PDL_MAX=48) and without (the rule); on an H200 the receipt rows B = 1,4,16,64 for three types
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
: >$O/rule.md
for ty in q4_k q4_0; do f=$(syn $ty)
  b=1,4,5,8; [ $ty = q4_0 ] && b=1,4,16
  ./tern bench -m $f --device cuda --parallel $b -p 512 -n 128 -r 1 2>/dev/null | grep -E '^\|  *512 ' | sed "s|^|$ty |" >>$O/rule.md
done
awk -F'|' '{print $1, $4, $9}' $O/rule.md; echo "rule done $(( $(date +%s) - t0 )) s"
export TERN_CUPTI_LIB="$(ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* 2>/dev/null | head -1)"
[ -n "$TERN_CUPTI_LIB" ] || export TERN_CUPTI_LIB="$(find /usr /opt -name 'libcupti.so*' 2>/dev/null | head -1)"
f=$(syn q4_k)
tl() { local n=$1 b=$2; shift 2
  env "$@" TERN_TIMELINE=/tmp/tl-$n.csv ./tern bench -m $f --device cuda --parallel $b -p 512 -n 16 -r 1 >$O/tl-$n.log 2>&1
  python3 bench/timeline.py /tmp/tl-$n.csv >$O/tl-$n.md 2>>$O/tl-$n.log
  echo "$n done $(( $(date +%s) - t0 )) s"; }
tl q4k-6-rule 6 TERN_PDL_MAX=0
tl q4k-6-pdl 6 TERN_PDL_MAX=48
head -14 $O/tl-q4k-6-rule.md | tail -10; head -14 $O/tl-q4k-6-pdl.md | tail -10
if echo "$card" | grep -q H200; then : >$O/h200.md
  for r in 1 2; do for ty in q4_0 q8_0 q4_k; do f=$(syn $ty)
    ./tern bench -m $f --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 2>/dev/null | grep -E '^\|  *512 ' | sed "s|^|r$r $ty |" >>$O/h200.md
  done; done
  awk -F'|' '{print $1, $4, $7, $9}' $O/h200.md; echo "h200 done $(( $(date +%s) - t0 )) s"
fi
