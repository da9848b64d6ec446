# box (1 GPU): the q|k|v GEMV's RoPE + KV epilogue (TERN_CUDA_ROPE_EPI=1, an arm that lost with computed angles)
# now reading the pass's (cos, sin) table: gpu_fused, gpu_model Q4_0 with the arm (a chunk of 8 == 8 steps),
# interleaved tg128 Q4_0 (2 rounds) and Q8_0 (1 round), default vs the arm
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b82; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_e.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w epi "TERN_CUDA_ROPE_EPI=1"
R=$OUT/r82; mkdir -p $R
REPO=$PWD
timeout 200 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -5
$B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2-q4_0.gguf > /dev/null 2>&1
TERN_CUDA_ROPE_EPI=1 timeout 150 $B/gpu_model /tmp/s2-q4_0.gguf > $R/gpu_model-q4_0-epi.log 2>&1; echo "gpu_model q4_0 epi rc=$? $(tail -1 $R/gpu_model-q4_0-epi.log)"
TERN_CUDA_ROPE_EPI=1 TERN_TRACE=1 $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 16 -r 1 2>&1 | grep -o "rope_epi=[0-9]*" | head -1
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-epi > $R/ab-q40.md
TYPES="q8_0" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q80 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-epi > $R/ab-q80.md
cat $R/ab-q40.md $R/ab-q80.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r82.tgz -C $OUT r82; rm -rf $R
