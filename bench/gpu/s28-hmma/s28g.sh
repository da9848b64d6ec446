#!/usr/bin/env bash
# session 28, call g: the locality test: arms 6, 7 = arms 4, 1 over a tiled weight layout (a 64-row tile's 4-block step
# one contiguous 4608-byte chunk): gpu_hmma (bits: memcmp against the one-column call on the row layout), the sweep;
# ncu of arm 6 vs 4 at m = 1 (down)
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/cuda/bin
P=$PWD/.box/sys
export LD_LIBRARY_PATH=$P/lib
t0=$(date +%s)
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 build-cuda/gpu/gpu_hmma >$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s; C7513: $(grep -c C7513 $OUT/build.log)"
timeout 300 build-cuda/gpu/gpu_hmma >$OUT/hmma.log 2>&1; rc=$?; echo "hmma rc $rc $(tail -1 $OUT/hmma.log) $(( $(date +%s) - t0 )) s"
grep -iE "fail|mismatch" $OUT/hmma.log | head -8
timeout 240 build-cuda/gpu/gpu_hmma --sweep-only >$OUT/hmma-sweep.txt 2>&1; echo "sweep rc $? $(( $(date +%s) - t0 )) s"
grep -v "^gpu_hmma" $OUT/hmma-sweep.txt | cut -c1-175
for c in 14336:4096:1:6 14336:4096:1:4; do
  IFS=: read -r ni no mm arm <<<"$c"
  f="$OUT/prof-$ni-$no-m$mm-a$arm"
  timeout 100 ncu -o $f --set full -k regex:'gemm_h' --launch-skip 20 --launch-count 1 build-cuda/gpu/gpu_hmma --one "$ni" "$no" "$mm" "$arm" > $f.log 2>&1
  ncu -i $f.ncu-rep --page details > $f-details.txt 2>&1
  rm -f $f.ncu-rep
  echo "$c: $(grep -E '^ +Duration|Issue Slots Busy|Achieved Occupancy|DRAM Throughput|L2 Hit Rate' $f-details.txt | awk '{$1=$1; print}' | paste -sd ';' -) $(( $(date +%s) - t0 )) s"
done
cd $OUT && tar czf s28g.tgz *.txt *.log && find . -type f ! -name s28g.tgz -delete
