#!/usr/bin/env bash
# session 45 call A: card, build (tern; the peer too on an H200), the synthetic Llama-3-8B Q4_0, timelines of B = 1, 4
# in the f16 order (PDL rule and none) and B = 1 in the chunk order
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
O=${OUT:-/tmp/o}; mkdir -p $O
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "card: $card" | tee $O/card.txt
t0=$(date +%s)
if echo "$card" | grep -q H200 && [ ! -x /tmp/lcpp/build/bin/llama-batched-bench ]; then
  (bash .peer/build_llamacpp_box.sh .peer/lcpp.tgz llama-batched-bench llama-bench >/tmp/peer.log 2>&1; echo "peer rc=$? $(( $(date +%s) - t0 )) s" >>/tmp/peer.log) &
fi
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$PWD/.box/sys/include -L$PWD/.box/sys/lib" -j16 tern >$O/build.log 2>&1 || { tail -20 $O/build.log; exit 1; }
echo "tern built $(( $(date +%s) - t0 )) s"
mkdir -p /tmp/tern_synth; f=/tmp/tern_synth/llama3-8b-q4_0-L32.gguf
[ -s $f ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $f >$O/synth.log 2>&1
echo "synth $(( $(date +%s) - t0 )) s"
export TERN_CUPTI_LIB="$(ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* 2>/dev/null | head -1)"
[ -n "$TERN_CUPTI_LIB" ] || export TERN_CUPTI_LIB="$(find /usr /opt -name 'libcupti.so*' 2>/dev/null | head -1)"
tl() { # name B env...
  local n=$1 b=$2; shift 2
  env "$@" TERN_TIMELINE=/tmp/tl-$n.csv ./tern bench -m $f --device cuda --parallel $b -p 512 -n 16 -r 1 >$O/tl-$n.log 2>&1
  python3 bench/timeline.py /tmp/tl-$n.csv >$O/tl-$n.md 2>>$O/tl-$n.log
  env "$@" TERN_CUDA_TIMING=1 ./tern bench -m $f --device cuda --parallel $b -p 512 -n 16 -r 1 2>&1 | grep -E '^cuda timing|S_TG|^\|' | tail -3 | sed 's/^/control: /' >>$O/tl-$n.md
  echo "$n done $(( $(date +%s) - t0 )) s"
}
tl f16-1 1 TERN_GEMV_CHUNK=2
tl f16-1-nopdl 1 TERN_GEMV_CHUNK=2 TERN_PDL_MAX=-1
tl f16-4 4 TERN_GEMV_CHUNK=2
tl f16-4-nopdl 4 TERN_GEMV_CHUNK=2 TERN_PDL_MAX=-1
tl chunk-1 1 TERN_GEMV_CHUNK=1
tl f16-16-nopdl 16 TERN_GEMV_CHUNK=2 TERN_PDL_MAX=-1
wait
cat /tmp/peer.log 2>/dev/null | tail -3
cd $O && tar czf /tmp/s45a.tgz . && mv /tmp/s45a.tgz $O/
