#!/usr/bin/env bash
# session 36 call e: the f16 order with a head it lacks (Q6_K on the dp4a twins): gpu_batch f16 on a small Q4_0 mix,
# then a synthetic Llama-3-8B in llama-quantize's Q4_0 mix: f16 order (default) vs chunk order vs pure Q4_0, 2 rounds
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s36e; mkdir -p $L
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
OUT=$L/chk PCRE=$P bash bench/gpu_check.sh build >/dev/null 2>&1; tail -n 1 $L/chk/summary.txt | tee -a $R/log.txt; el build
export LD_LIBRARY_PATH=$P/lib; d=/tmp/tern_synth; mkdir -p $d
./tern synth --arch llama3.2-1b --type q8_0 --layers 4 -o $d/s1.gguf >/dev/null
./tern quantize $d/s1.gguf $d/s1-q40.gguf Q4_0 --allow-requantize --threads 16 >$L/qs.log 2>&1; grep -i 'q6_k' $L/qs.log | cut -c1-90 | tee -a $R/log.txt
TERN_TRACE=1 build-cuda/gpu/gpu_batch $d/s1-q40.gguf f16 >$L/batch-f16.log 2>&1; echo "gpu_batch Q4_0-mix f16 rc $?: $(grep -E 'FAIL|not ok' $L/batch-f16.log | head -3)" | tee -a $R/log.txt
grep -o 'gemm_hm_tiled=[0-9]*\|gemv_slices=[0-9]*\|gemv_dp4a_rows=[0-9]*\|rows <= [0-9]*' $L/batch-f16.log | sort | uniq -c | sort -rn | head -8 | tee -a $R/log.txt
tail -n 2 $L/batch-f16.log | tee -a $R/log.txt; cp $L/batch-f16.log $R/; el batch
./tern synth --arch llama3-8b --type q8_0 --layers 32 -o $d/l8-q8_0.gguf >/dev/null
./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $d/p.gguf >/dev/null
./tern quantize $d/l8-q8_0.gguf $d/l8-Q4_0.gguf Q4_0 --allow-requantize --threads 16 >$L/q.log 2>&1; el "files"
for r in 1 2; do
  for a in mix-f16 mix-chunk pure-f16; do
    f=$d/l8-Q4_0.gguf; [ $a = pure-f16 ] && f=$d/p.gguf; c=2; [ $a = mix-chunk ] && c=1
    TERN_TRACE=1 TERN_GEMV_CHUNK=$c ./tern bench -m $f --device cuda --parallel 1,16,64 -p 512 -n 128 -r 1 --receipt $R/$a-$r.json \
      >$L/$a.md 2>$L/$a.err; grep -E '^\|  *512 ' $L/$a.md | cut -c1-100 | sed "s/^/r$r $a /" | tee -a $R/ab.md
    [ $r = 1 ] && { grep -o 'gemv_slices=[0-9]*\|gemm_hm_tiled=[0-9]*\|rows <= [0-9]*' $L/$a.err | sort -u | tr '\n' ' ' | sed "s/^/$a trace: /"; echo; } | tee -a $R/log.txt
    grep -o '"gemv_order": [0-9a-z]*' $R/$a-$r.json | head -1 | sed "s/^/r$r $a /" | tee -a $R/log.txt
  done
done; el bench
