# box (1 GPU): the dp4a pipe GEMV in CTAs of S sub-CTAs of 128 threads (TERN_CUDA_DP4A_SUB, an arm): gpu_multi
# with S = 4 and 2 (multi-column == single-column bits; the single-column calls take the arm), gpu_model on a
# 2-layer synthetic Q4_0 with S = 4, the trace's count, interleaved tg128: Q4_0 2 rounds default / S4 / S2,
# Q8_0 and Q4_K 1 round default / S4
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b85; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_d.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w s4 "TERN_CUDA_DP4A_SUB=4"; w s2 "TERN_CUDA_DP4A_SUB=2"
R=$OUT/r85; mkdir -p $R
REPO=$PWD
for s in 4 2; do
  TERN_CUDA_DP4A_SUB=$s timeout 200 $B/gpu_multi > $R/gpu_multi-s$s.log 2>&1; echo "gpu_multi S=$s rc=$? $(tail -1 $R/gpu_multi-s$s.log)"; grep FAIL $R/gpu_multi-s$s.log | head -3
done
$B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2-q4_0.gguf > /dev/null 2>&1
TERN_CUDA_DP4A_SUB=4 timeout 150 $B/gpu_model /tmp/s2-q4_0.gguf > $R/gpu_model-q4_0-s4.log 2>&1; echo "gpu_model q4_0 S=4 rc=$? $(tail -1 $R/gpu_model-q4_0-s4.log)"; grep FAIL $R/gpu_model-q4_0-s4.log | head -3
TERN_CUDA_DP4A_SUB=4 TERN_TRACE=1 $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 16 -r 1 2>&1 | grep -o "gemv_dp4a_sub=[0-9]*" | head -1
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-s4 $B/tern-s2 > $R/ab-q40.md
TYPES="q8_0 q4_k" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q8k bash $REPO/bench/bins_ab.sh $B/tern $B/tern-s4 > $R/ab-q8k.md
cat $R/ab-q40.md $R/ab-q8k.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r85.tgz -C $OUT r85; rm -rf $R
