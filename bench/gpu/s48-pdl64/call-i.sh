#!/usr/bin/env bash
# session 48 call I: tern built on the box from the tree (58360d3 or later; no binary carried: the tree plus a carried
# binary went over the size limit). On an H200: issue 26's rows (tern alone): Q4_0 B = 1,4,16,64 two rounds, Q8_0 and
# Q4_K one. Elsewhere: timelines of Q4_0 B = 1, 4, 16 under today's rule (where steps go now).
set -u
cd "$(dirname "$0")/../.."
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
O=${OUT:-/tmp/o}; mkdir -p $O
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "card: $card" | tee $O/card.txt
t0=$(date +%s)
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$PWD/.box/sys/include -L$PWD/.box/sys/lib" -j16 tern >$O/build.log 2>&1 || { tail -20 $O/build.log; exit 1; }
./tern --version; echo "built $(( $(date +%s) - t0 )) s"
mkdir -p /tmp/tern_synth
syn() { local f=/tmp/tern_synth/llama3-8b-$1-L32.gguf; [ -s $f ] || ./tern synth --arch llama3-8b --type $1 --layers 32 -o $f >/dev/null 2>&1; echo $f; }
if echo "$card" | grep -q H200; then
  : >$O/rows.md
  for r in 1 2; do for ty in q4_0 q8_0 q4_k; do
    [ $r = 2 ] && [ $ty != q4_0 ] && continue
    f=$(syn $ty)
    ./tern bench -m $f --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 2>/dev/null | grep -E '^\|  *512 ' | sed "s/^/r$r $ty /" >>$O/rows.md
    echo "r$r $ty $(( $(date +%s) - t0 )) s"
  done; done
  awk -F'|' '{print $1, $4, $7, $9}' $O/rows.md
else
  export TERN_CUPTI_LIB="$(ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* 2>/dev/null | head -1)"
  f=$(syn q4_0)
  for b in 1 4 16; do
    TERN_TIMELINE=/tmp/tl-$b.csv ./tern bench -m $f --device cuda --parallel $b -p 512 -n 16 -r 1 >$O/tl-$b.log 2>&1
    python3 bench/timeline.py /tmp/tl-$b.csv >$O/tl-$b.md 2>>$O/tl-$b.log
    TERN_PDL_MAX=-1 TERN_TIMELINE=/tmp/tl-$b-nopdl.csv ./tern bench -m $f --device cuda --parallel $b -p 512 -n 16 -r 1 >>$O/tl-$b.log 2>&1
    python3 bench/timeline.py /tmp/tl-$b-nopdl.csv >$O/tl-$b-nopdl.md 2>>$O/tl-$b.log
    echo "tl $b $(( $(date +%s) - t0 )) s"
  done
  sed -n 13,30p $O/tl-4-nopdl.md
fi
echo "all $(( $(date +%s) - t0 )) s"
