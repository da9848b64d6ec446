#!/usr/bin/env bash
# session 28, call c: the streamed form without ptxas's wgmma serialisation (one group a step, waited for before the
# stage's release): gpu_hmma (memcmp of every arm), the sweep, SASS check; then end to end, f16 order, two rounds
# interleaved: tree (hm_pick 4 / 1 / 0), var6 (m <= 24 -> 6), var67 (m <= 24 -> 6, else 7)
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/cuda/bin
P=$PWD/.box/sys
export LD_LIBRARY_PATH=$P/lib
S=/tmp/tern_synth; mkdir -p $S
t0=$(date +%s)
for v in var6 var67; do
  rm -rf /tmp/$v && mkdir -p /tmp/$v && cp -r Makefile src include cli /tmp/$v/
done
sed -i 's/    if (m <= 24) return 4;/    if (m <= 24) return 6;/' /tmp/var6/src/backend/cuda/gemm_hmma.cu
sed -i 's/    if (m <= 24) return 4;/    if (m <= 24) return 6;/; s/return n_out >= 8192 || nb \* 32 >= 8192 ? 1 : 0;/return 7;/' /tmp/var67/src/backend/cuda/gemm_hmma.cu
grep -A2 'static int hm_pick' /tmp/var6/src/backend/cuda/gemm_hmma.cu /tmp/var67/src/backend/cuda/gemm_hmma.cu | grep return
for v in var6 var67; do (cd /tmp/$v && make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j5 tern >$OUT/build-$v.log 2>&1; echo "$v build rc $? $(( $(date +%s) - t0 )) s") & done
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j8 tern build-cuda/gpu/gpu_hmma >$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s; C7513: $(grep -c C7513 $OUT/build.log)"
cuobjdump -sass -fun '_Z9gemm_hs_kILi1ELi1ELi6EEvPKhmiiPK6__halfi6hm_outPf' build-cuda/backend/cuda/gemm_hmma.o | grep -E "HGMMA|DEPBAR" | head -12
[ -s $S/l8q4_0.gguf ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $S/l8q4_0.gguf >$OUT/synth8.log 2>&1
timeout 300 build-cuda/gpu/gpu_hmma >$OUT/hmma.log 2>&1; rc=$?; echo "hmma rc $rc $(tail -1 $OUT/hmma.log) $(( $(date +%s) - t0 )) s"
grep -iE "fail|mismatch" $OUT/hmma.log | head -8
timeout 240 build-cuda/gpu/gpu_hmma --sweep-only >$OUT/hmma-sweep.txt 2>&1; echo "sweep rc $? $(( $(date +%s) - t0 )) s"
cut -c1-175 $OUT/hmma-sweep.txt | grep -v "^gpu_hmma"
wait
if [ $rc = 0 ] && [ -x /tmp/var6/tern ] && [ -x /tmp/var67/tern ]; then
for r in 1 2; do for b in tree var6 var67; do
  bin=./tern; [ $b != tree ] && bin=/tmp/$b/tern
  TERN_GEMV_CHUNK=2 timeout 200 $bin bench -m $S/l8q4_0.gguf --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 --receipt $OUT/par-f16-$b-r$r.json >$OUT/par-f16-$b-r$r.txt 2>&1
  echo "r$r f16 $b: $(grep -E '^\|   512' $OUT/par-f16-$b-r$r.txt | awk -F'|' '{printf "B=%s %s  ", $4, $9}') $(( $(date +%s) - t0 )) s"
done; done
else echo "skipped end to end (hmma rc $rc)"; tail -5 $OUT/build-var6.log; fi
cd $OUT && tar czf s28c.tgz *.txt *.log $(ls *.json 2>/dev/null) && find . -type f ! -name s28c.tgz -delete
