#!/usr/bin/env bash
# session 36 call c: gpu_hmma (the one-LOP3 bits); the Q6_K slices (exec.c matmul, pass_limit): gpu_batch chunk on a
# small Q4_K_M, then a synthetic Llama-3-8B in Q4_K_M and in llama-quantize's Q4_0 mix (Q6_K head), new vs a twin
# with HEAD's backend_cuda.c (pass_limit: 16-token passes), tern bench --parallel 1,16,64
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s36c; mkdir -p $L
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
[ -x build-cuda/gpu/gpu_hmma ] || { OUT=$L/chk PCRE=$P bash bench/gpu_check.sh build >/dev/null 2>&1; tail -n 1 $L/chk/summary.txt | tee -a $R/log.txt; }
el build
export LD_LIBRARY_PATH=$P/lib
timeout 120 build-cuda/gpu/gpu_hmma >$L/hmma.log 2>&1; echo "gpu_hmma rc $?: $(tail -n 2 $L/hmma.log | tr '\n' ' ')" | tee -a $R/log.txt; el hmma
cp tern tern_n; rm -rf build-o; cp -a build-cuda build-o; cp src/backend/cuda/backend_cuda.c /tmp/bc_new.c
cp .box/calls/backend_cuda_old.c src/backend/cuda/backend_cuda.c; touch src/backend/cuda/backend_cuda.c
make CUDA=1 BUILD=build-o BUILD_STAMP=build-o/.stamp CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 tern >$L/build-o.log 2>&1
cp tern tern_o; cp /tmp/bc_new.c src/backend/cuda/backend_cuda.c; cp tern_n tern; el "twin (rc of cmp: $(cmp -s tern_n tern_o; echo $?))"
d=/tmp/tern_synth; mkdir -p $d
./tern synth --arch llama3.2-1b --type q8_0 --layers 4 -o $d/s1.gguf >/dev/null
./tern quantize $d/s1.gguf $d/s1-km.gguf Q4_K_M --allow-requantize --threads 16 >$L/qs.log 2>&1 || tail -2 $L/qs.log | tee -a $R/log.txt
TERN_TRACE=1 build-cuda/gpu/gpu_batch $d/s1-km.gguf chunk >$L/batch-km.log 2>&1; echo "gpu_batch Q4_K_M chunk rc $?: $(grep -cE '^ok|PASS' $L/batch-km.log) ok lines; $(grep -E 'FAIL|not ok' $L/batch-km.log | head -3)" | tee -a $R/log.txt
grep -o 'gemv_slices=[0-9]*\|rows <= [0-9]*' $L/batch-km.log | sort | uniq -c | tail -6 | tee -a $R/log.txt
tail -n 3 $L/batch-km.log | tee -a $R/log.txt; cp $L/batch-km.log $R/; el batch
./tern synth --arch llama3-8b --type q8_0 --layers 32 -o $d/l8-q8_0.gguf >/dev/null; el synth
for t in Q4_K_M Q4_0; do
  ./tern quantize $d/l8-q8_0.gguf $d/l8-$t.gguf $t --allow-requantize --threads 16 >$L/q-$t.log 2>&1; el "quantize $t rc $?"
  grep -ciE 'q6_k' $L/q-$t.log | sed "s/^/$t q6_k lines: /" | tee -a $R/log.txt
  for a in o n; do
    TERN_TRACE=1 ./tern_$a bench -m $d/l8-$t.gguf --device cuda --parallel 1,16,64 -p 512 -n 128 -r 1 --receipt $R/$t-$a.json \
      >$L/$t-$a.md 2>$L/$t-$a.err; grep -E '^\|  *512 ' $L/$t-$a.md | cut -c1-100 | sed "s/^/$t $a /" | tee -a $R/ab.md
    grep -o 'gemv_slices=[0-9]*\|rows <= [0-9]*' $L/$t-$a.err | sort -u | tr '\n' ' ' | sed "s/^/$t $a trace: /" | tee -a $R/log.txt; echo >> $R/log.txt
  done; el "bench $t"
done
