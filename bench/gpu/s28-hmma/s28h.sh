#!/usr/bin/env bash
# session 28, call h: the K split rule re-derived for the wgmma form: gpu_hmma --sweep-only with the split forced to
# 16 / 8 / 4 / 2 / 1 segments (fewer where a segment would have < 4 steps) and the rule; then the checks under 16
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/cuda/bin
P=$PWD/.box/sys
export LD_LIBRARY_PATH=$P/lib
t0=$(date +%s)
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 build-cuda/gpu/gpu_hmma >$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
for sp in 0 16 8 4 2 1; do
  echo "=== splits $sp" >>$OUT/splits-sweep.txt
  if [ $sp = 0 ]; then timeout 60 build-cuda/gpu/gpu_hmma --sweep-only >>$OUT/splits-sweep.txt 2>&1
  else timeout 60 build-cuda/gpu/gpu_hmma --sweep-only --splits $sp >>$OUT/splits-sweep.txt 2>&1; fi
  echo "splits $sp rc $? $(( $(date +%s) - t0 )) s"
done
grep -E "^===|^sweep|m=( 1| 4|16|24|64) " $OUT/splits-sweep.txt | cut -c1-120
timeout 110 build-cuda/gpu/gpu_hmma --sweep --splits 16 >$OUT/hmma-s16.log 2>&1; echo "checks under 16: rc $? $(grep -E 'passed' $OUT/hmma-s16.log | tail -1) $(( $(date +%s) - t0 )) s"
grep -iE "fail|mismatch" $OUT/hmma-s16.log | head -5
