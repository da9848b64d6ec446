# box (1 GPU): the Q8_0-cache decode attention v5 (16 int8 of one row a lane; attention.cu attention_q8w_kernel)
# against v2 (TERN_CUDA_ATT_Q8W=0, the same binary through a wrapper): gpu_attention q8 (v5 and v2 vs float64,
# 1 and S splits, verify property; kernel times at pos 32767 / 8191 / 127), gpu_model on a 2-layer synthetic
# Llama-3-8B Q4_0 (Q8_0 cache vs f16, a chunk of 8 == 8 steps), then interleaved tg64 at depth 32768 and 8192
# and tg128 with the Q8_0 cache (bench/bins_ab.sh, 2 rounds; TERN_TRACE=1 so each .err holds the trace line).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b44; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
printf '#!/bin/sh\nTERN_CUDA_ATT_Q8W=0 exec %s/tern "$@"\n' $B > $B/tern-v2; chmod +x $B/tern-v2
R=$OUT/r44; mkdir -p $R
REPO=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $R/gpu.txt
timeout 240 $B/gpu_attention q8 > $R/attention-q8.log 2>&1; echo "gpu_attention q8 rc=$? $(tail -1 $R/attention-q8.log)"
grep -E "FAIL" $R/attention-q8.log | head -5
grep -E "^q8 decode" $R/attention-q8.log
$B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/l2.gguf > /dev/null 2>&1
timeout 240 $B/gpu_model /tmp/l2.gguf > $R/model-q4_0.log 2>&1; echo "gpu_model q4_0 rc=$? $(tail -1 $R/model-q4_0.log)"
grep -E "FAIL|q8_0 cache" $R/model-q4_0.log | head -8
export TERN_TRACE=1
cd $B
for d in 32768 8192; do
  TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 64 -d $d -r 1 -ctk q8_0 -ctv q8_0" OUT=$R/ab$d-q8 bash $REPO/bench/bins_ab.sh $B/tern-v2 $B/tern | tee $R/ab$d-q8.md
done
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2 -ctk q8_0 -ctv q8_0" OUT=$R/ab0-q8 bash $REPO/bench/bins_ab.sh $B/tern-v2 $B/tern | tee $R/ab0-q8.md
grep -h "trace:" $R/ab32768-q8/*.err | sort | uniq -c | cut -c1-260
cd /; tar czf $OUT/r44.tgz -C $OUT r44; rm -rf $R
