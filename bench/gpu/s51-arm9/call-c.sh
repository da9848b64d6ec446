#!/usr/bin/env bash
# session 51 call C: the tree with hm_pick_tl's arm 9 at 3..8 columns (Q4_0 tiles).
# On an H200: issue 26's receipt (s51a.sh: gpu_check parallel batch with the carried peer) after gpu_hmma.
# On an H100: gpu_hmma, gpu_batch f16 and plain; then the arm ran: envab TERN_HM_ARM=0 (now arm 9 at 3..8) against
# TERN_HM_ARM=3-8:10 (the old rule) on q4_0 at B = 3,4,8, two rounds.
set -u
cd "$(dirname "$0")/../.."
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
P=$PWD/.box/sys; O=${OUT:-/tmp/o}; mkdir -p $O; L=/tmp/s51c; mkdir -p $L
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $L/log.txt; }
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee -a $L/log.txt
if echo "$card" | grep -q H200; then
  ( sleep ${WD:-560}; cp /tmp/s51a/parallel_peer.md /tmp/s51a/summary.txt /tmp/s51a/log.txt $L/log.txt $O/ 2>/dev/null ) &
  make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 build-cuda/gpu/gpu_hmma >$L/b.log 2>&1
  build-cuda/gpu/gpu_hmma >$L/gh.log 2>&1; echo "gpu_hmma rc=$? $(tail -1 $L/gh.log)" | tee $O/tests.txt
  el hmma
  WD=$(( ${WD:-560} - $(date +%s) + T0 - 5 )) bash .box/calls/s51a.sh
  cp $L/log.txt $O/log-c.txt; exit 0
fi
( sleep ${WD:-560}; cp $L/log.txt /tmp/envab/envab.md $O/ 2>/dev/null ) &
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 tern build-cuda/gpu/gpu_hmma build-cuda/gpu/gpu_batch >$L/build.log 2>&1 || { tail -20 $L/build.log; exit 1; }
el built
mkdir -p /tmp/tern_synth; fb=/tmp/tern_synth/llama3.2-1b-q4_0-L4.gguf; f=/tmp/tern_synth/llama3-8b-q4_0-L32.gguf
[ -s $f ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $f >/dev/null 2>&1 &
[ -s $fb ] || ./tern synth --arch llama3.2-1b --type q4_0 --layers 4 -o $fb >/dev/null 2>&1
( build-cuda/gpu/gpu_hmma >$L/gh.log 2>&1; echo "gpu_hmma rc=$? $(tail -1 $L/gh.log)"
  build-cuda/gpu/gpu_batch $fb f16 >$L/gb16.log 2>&1; echo "gpu_batch f16 rc=$? $(grep passed $L/gb16.log | tail -1)"
  build-cuda/gpu/gpu_batch $fb >$L/gb.log 2>&1; echo "gpu_batch rc=$? $(grep passed $L/gb.log | tail -1)" ) | tee $O/tests.txt
el tests; wait
OUT=/tmp/envab ENVAB_TYPES="q4_0" ENVAB_B=3,4,8 ENVAB_ARMS="TERN_HM_ARM=0 TERN_HM_ARM=3-8:10" \
  PCRE=$P bash bench/gpu_check.sh envab >/tmp/envab.log 2>&1
cp /tmp/envab/envab.md $O/envab-arm9-default.md; awk -F'|' '{print $1, $4, $9}' $O/envab-arm9-default.md; el done; cp $L/log.txt $O/
