#!/usr/bin/env bash
# session 35 call d: the one-LOP3 dequantization: SASS count first, then build, gpu_hmma (bits), B = 1/4 A/B
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
INC="-Iinclude -Isrc/core -Isrc/format -Isrc/model -Isrc/runtime -Isrc/backend -Isrc/backend/cpu -Isrc/backend/cuda -Isrc/text -Isrc/server"
for v in new old; do
  f=src/backend/cuda/gemm_hmma.cu; [ $v = old ] && f=.box/calls/gemm_hmma_old.cu
  nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -std=c++17 $INC -cubin $f -o /tmp/hm-$v.cubin && cuobjdump -sass /tmp/hm-$v.cubin > /tmp/hm-$v.sass
  awk '/Function : _Z9gemm_hb_kILi1ELi2E/{p=1;next} /Function : /{p=0} p' /tmp/hm-$v.sass > $R/hb12-$v.sass
  echo "$v: hb<1,2> $(grep -c 'LOP3' $R/hb12-$v.sass) LOP3, $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $R/hb12-$v.sass) instructions" | tee -a $R/log.txt
done; el sass
OUT=$R/chk PCRE=$P bash bench/gpu_check.sh build >/dev/null 2>&1; tail -n 1 $R/chk/summary.txt | tee -a $R/log.txt; el build
export LD_LIBRARY_PATH=$P/lib
cp tern tern_n; rm -rf build-o; cp -a build-cuda build-o
nvcc -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -std=c++17 $INC -c .box/calls/gemm_hmma_old.cu -o build-o/backend/cuda/gemm_hmma.o
rm -f build-o/libtern.a; make CUDA=1 BUILD=build-o BUILD_STAMP=build-o/.stamp CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 tern >$R/build-o.log 2>&1; cp tern tern_o; cp tern_n tern; el twin
f=/tmp/tern_synth/llama3-8b-q4_0-L32.gguf; mkdir -p /tmp/tern_synth
[ -s $f ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $f >/dev/null; el synth
for r in 1 2; do for a in o n; do
  ./tern_$a bench -m $f --device cuda --parallel 1,4 -p 512 -n 128 -r 1 --receipt $R/par-$a-$r.json 2>&1 | grep -E '^\|  *512 ' | cut -c1-100 | sed "s/^/r$r $a /" | tee -a $R/ab.md
done; done; el ab
grep -o '"gemv_chunk": [0-9], "gemv_order": [0-9a-z]*' $R/par-n-1.json | tee -a $R/log.txt
HMMA_TIMEOUT=90 OUT=$R/chk2 PCRE=$P bash bench/gpu_check.sh hmma >/dev/null 2>&1; tail -n 1 $R/chk2/summary.txt | tee -a $R/log.txt; el hmma
