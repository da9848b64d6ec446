# box (1 GPU): the attention's RoPE path with the K/V row made only in its split (TERN_CUDA_ATT_ROPE arm) and the
# TMA GEMV's threshold / ring size (TERN_CUDA_TMA_MIN_MB 30: down joins gate|up; TERN_CUDA_TMA_KB 96: two TMA
# kernels' rings fit an SM together): gpu_fused, gpu_model Q4_0, interleaved tg128 Q4_0 (2 rounds, 5 arms),
# tg64 at depth 8192 (1 round, 2 arms).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b77; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_rz.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w norope "TERN_CUDA_ATT_ROPE=0"; w tma30 "TERN_CUDA_TMA_MIN_MB=30"; w tma30kb96 "TERN_CUDA_TMA_MIN_MB=30 TERN_CUDA_TMA_KB=96"; w kb96 "TERN_CUDA_TMA_KB=96"
R=$OUT/r77; mkdir -p $R
REPO=$PWD
timeout 200 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -5
$B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2-q4_0.gguf > /dev/null 2>&1
timeout 150 $B/gpu_model /tmp/s2-q4_0.gguf > $R/gpu_model-q4_0.log 2>&1; echo "gpu_model q4_0 rc=$? $(tail -1 $R/gpu_model-q4_0.log)"
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-norope $B/tern-tma30 $B/tern-tma30kb96 $B/tern-kb96 > $R/ab-q40.md
TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 64 -d 8192 -r 1" OUT=$R/ab-d8k bash $REPO/bench/bins_ab.sh $B/tern $B/tern-norope > $R/ab-d8k.md
cat $R/ab-q40.md $R/ab-d8k.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r77.tgz -C $OUT r77; rm -rf $R
