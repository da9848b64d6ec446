#!/usr/bin/env bash
# session 28, call d: gemm_hw_k's L2 prefetch as one bulk request a row for 8 steps (576 B contiguous), 16 steps ahead,
# instead of one 128-byte line a row a step 4 ahead (the DRAM-locality question); gpu_hmma (bits), the sweep; end to
# end f16 order, tree vs base (2e5ae43), two rounds interleaved
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/cuda/bin
P=$PWD/.box/sys
export LD_LIBRARY_PATH=$P/lib
S=/tmp/tern_synth; mkdir -p $S
t0=$(date +%s)
rm -rf /tmp/base && mkdir -p /tmp/base && tar xzf .box/base-2e5ae43.tgz -C /tmp/base
(cd /tmp/base && make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j6 tern >$OUT/build-base.log 2>&1; echo "base build rc $? $(( $(date +%s) - t0 )) s") &
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j10 tern build-cuda/gpu/gpu_hmma >$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s; C7513: $(grep -c C7513 $OUT/build.log)"
[ -s $S/l8q4_0.gguf ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $S/l8q4_0.gguf >$OUT/synth8.log 2>&1
timeout 300 build-cuda/gpu/gpu_hmma >$OUT/hmma.log 2>&1; rc=$?; echo "hmma rc $rc $(tail -1 $OUT/hmma.log) $(( $(date +%s) - t0 )) s"
grep -iE "fail|mismatch" $OUT/hmma.log | head -8
timeout 240 build-cuda/gpu/gpu_hmma --sweep-only >$OUT/hmma-sweep.txt 2>&1; echo "sweep rc $? $(( $(date +%s) - t0 )) s"
cut -c1-175 $OUT/hmma-sweep.txt | grep -v "^gpu_hmma"
wait
if [ $rc = 0 ] && [ -x /tmp/base/tern ]; then
for r in 1 2; do for b in tree base; do
  bin=./tern; [ $b != tree ] && bin=/tmp/$b/tern
  TERN_GEMV_CHUNK=2 timeout 200 $bin bench -m $S/l8q4_0.gguf --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 --receipt $OUT/par-f16-$b-r$r.json >$OUT/par-f16-$b-r$r.txt 2>&1
  echo "r$r f16 $b: $(grep -E '^\|   512' $OUT/par-f16-$b-r$r.txt | awk -F'|' '{printf "B=%s %s  ", $4, $9}') $(( $(date +%s) - t0 )) s"
done; done
else echo "skipped end to end (hmma rc $rc)"; tail -5 $OUT/build-base.log; fi
cd $OUT && tar czf s28d.tgz *.txt *.log $(ls *.json 2>/dev/null) && find . -type f ! -name s28d.tgz -delete
