#!/usr/bin/env bash
# session 28, call e: the streamed form deleted; arms 6, 7 = four warpgroups a CTA (WG4, NS4, BAT 0 / 1): gpu_hmma
# (memcmp of every arm), the sweep; end to end at B = 32, 64 (f16 order), tree vs varA (m > 24 and the down shape -> 6)
# vs varB (m > 24 -> 6), two rounds interleaved
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/cuda/bin
P=$PWD/.box/sys
export LD_LIBRARY_PATH=$P/lib
S=/tmp/tern_synth; mkdir -p $S
t0=$(date +%s)
for v in varA varB; do rm -rf /tmp/$v && mkdir -p /tmp/$v && cp -r Makefile src include cli /tmp/$v/; done
sed -i 's/return n_out >= 8192 || nb \* 32 >= 8192 ? 1 : 0;/return n_out < 8192 \&\& nb * 32 >= 8192 ? 6 : n_out >= 8192 || nb * 32 >= 8192 ? 1 : 0;/' /tmp/varA/src/backend/cuda/gemm_hmma.cu
sed -i 's/return n_out >= 8192 || nb \* 32 >= 8192 ? 1 : 0;/return 6;/' /tmp/varB/src/backend/cuda/gemm_hmma.cu
grep -h -A2 'static int hm_pick' /tmp/varA/src/backend/cuda/gemm_hmma.cu /tmp/varB/src/backend/cuda/gemm_hmma.cu | grep return
for v in varA varB; do (cd /tmp/$v && make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j5 tern >$OUT/build-$v.log 2>&1; echo "$v build rc $? $(( $(date +%s) - t0 )) s") & done
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j8 tern build-cuda/gpu/gpu_hmma >$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s; C7513: $(grep -c C7513 $OUT/build.log)"
for k in '_Z9gemm_hw_kILi8ELi4ELi4ELi0EEvPKhmiiPK6__halfi6hm_outPf' '_Z9gemm_hw_kILi8ELi2ELi4ELi0EEvPKhmiiPK6__halfi6hm_outPf'; do
  echo "$k: $(cuobjdump -res-usage -fun "$k" build-cuda/backend/cuda/gemm_hmma.o 2>&1 | grep -o 'REG:[0-9]*\|STACK:[0-9]*\|LOCAL:[0-9]*' | tr '\n' ' ')"
done
[ -s $S/l8q4_0.gguf ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $S/l8q4_0.gguf >$OUT/synth8.log 2>&1
timeout 300 build-cuda/gpu/gpu_hmma >$OUT/hmma.log 2>&1; rc=$?; echo "hmma rc $rc $(tail -1 $OUT/hmma.log) $(( $(date +%s) - t0 )) s"
grep -iE "fail|mismatch" $OUT/hmma.log | head -8
timeout 240 build-cuda/gpu/gpu_hmma --sweep-only >$OUT/hmma-sweep.txt 2>&1; echo "sweep rc $? $(( $(date +%s) - t0 )) s"
grep -E "^sweep|m=(24|32|48|64)" $OUT/hmma-sweep.txt | cut -c1-175
wait
if [ $rc = 0 ] && [ -x /tmp/varA/tern ] && [ -x /tmp/varB/tern ]; then
for r in 1 2; do for b in tree varA varB; do
  bin=./tern; [ $b != tree ] && bin=/tmp/$b/tern
  TERN_GEMV_CHUNK=2 timeout 200 $bin bench -m $S/l8q4_0.gguf --device cuda --parallel 32,64 -p 512 -n 128 -r 1 --receipt $OUT/par-f16-$b-r$r.json >$OUT/par-f16-$b-r$r.txt 2>&1
  echo "r$r f16 $b: $(grep -E '^\|   512' $OUT/par-f16-$b-r$r.txt | awk -F'|' '{printf "B=%s %s  ", $4, $9}') $(( $(date +%s) - t0 )) s"
done; done
else echo "skipped end to end (hmma rc $rc)"; tail -5 $OUT/build-varA.log; fi
cd $OUT && tar czf s28e.tgz *.txt *.log $(ls *.json 2>/dev/null) && find . -type f ! -name s28e.tgz -delete
