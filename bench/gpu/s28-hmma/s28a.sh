#!/usr/bin/env bash
# session 28, call a: the streamed form (arms 6, 7) first run: gpu_hmma (memcmp of every arm) under timeout, the sweep;
# then end to end: tree (hm_pick 4 / 1 / 0) against var (m<=24 -> 6, else -> 7), TERN_GEMV_CHUNK=2, two rounds interleaved
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/cuda/bin
P=$PWD/.box/sys
export LD_LIBRARY_PATH=$P/lib
S=/tmp/tern_synth; mkdir -p $S
t0=$(date +%s)
rm -rf /tmp/var && mkdir -p /tmp/var && cp -r Makefile src include cli /tmp/var/
sed -i 's/    if (m <= 24) return 4;/    if (m <= 24) return 6;/; s/return n_out >= 8192 || nb \* 32 >= 8192 ? 1 : 0;/return 7;/' /tmp/var/src/backend/cuda/gemm_hmma.cu
grep -A3 'static int hm_pick' /tmp/var/src/backend/cuda/gemm_hmma.cu
(cd /tmp/var && make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j6 tern >$OUT/build-var.log 2>&1; echo "var build rc $? $(( $(date +%s) - t0 )) s") &
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j10 tern build-cuda/gpu/gpu_hmma >$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
(./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $S/l8q4_0.gguf >$OUT/synth8.log 2>&1) &
timeout 300 build-cuda/gpu/gpu_hmma >$OUT/hmma.log 2>&1; rc=$?; echo "hmma rc $rc $(tail -1 $OUT/hmma.log) $(( $(date +%s) - t0 )) s"
grep -iE "fail|mismatch" $OUT/hmma.log | head -8
timeout 240 build-cuda/gpu/gpu_hmma --sweep-only >$OUT/hmma-sweep.txt 2>&1; echo "sweep rc $? $(( $(date +%s) - t0 )) s"
cut -c1-175 $OUT/hmma-sweep.txt
wait
if [ $rc = 0 ] && [ -x /tmp/var/tern ]; then
for r in 1 2; do for b in tree var; do
  bin=./tern; [ $b = var ] && bin=/tmp/var/tern
  TERN_GEMV_CHUNK=2 timeout 200 $bin bench -m $S/l8q4_0.gguf --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 --receipt $OUT/par-f16-$b-r$r.json >$OUT/par-f16-$b-r$r.txt 2>&1
  echo "r$r f16 $b: $(grep -E '^\|   512' $OUT/par-f16-$b-r$r.txt | awk -F'|' '{printf "B=%s %s  ", $4, $9}') $(( $(date +%s) - t0 )) s"
done; done
else echo "skipped end to end (hmma rc $rc)"; tail -5 $OUT/build-var.log; fi
cd $OUT && tar czf s28a.tgz *.txt *.log $(ls *.json 2>/dev/null) && find . -type f ! -name s28a.tgz -delete
