# box (1 GPU): RoPE's (cos, sin) table once a pass (TERN_CUDA_ROPE_TABLE, default on) x RoPE inside the decode
# attention (TERN_CUDA_ATT_ROPE, default on): gpu_fused, gpu_model on 2-layer synthetic Q4_0 and Q8_0, the
# trace counts, interleaved tg128 Q4_0 (2 rounds) over 4 arms, tg64 at depth 8192 (1 round, 4 arms), Q8_0
# tg128 (1 round, 2 arms).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b76; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_rt.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w notab "TERN_CUDA_ROPE_TABLE=0"; w norope "TERN_CUDA_ATT_ROPE=0"; w base "TERN_CUDA_ATT_ROPE=0 TERN_CUDA_ROPE_TABLE=0"
R=$OUT/r76; mkdir -p $R
REPO=$PWD
timeout 200 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -5
for ty in q4_0 q8_0; do
  $B/tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 150 $B/gpu_model /tmp/s2-$ty.gguf > $R/gpu_model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/gpu_model-$ty.log)"
  grep -E "FAIL" $R/gpu_model-$ty.log | head -3
done
TERN_TRACE=1 $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 16 -r 1 2>&1 | grep -o "rmsnorm_cluster=[0-9]* attention_rope=[0-9]*" | head -2
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-notab $B/tern-norope $B/tern-base > $R/ab-q40.md
TYPES="q8_0" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q80 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-base > $R/ab-q80.md
TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 64 -d 8192 -r 1" OUT=$R/ab-d8k bash $REPO/bench/bins_ab.sh $B/tern $B/tern-notab $B/tern-norope $B/tern-base > $R/ab-d8k.md
cat $R/ab-q40.md $R/ab-q80.md $R/ab-d8k.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r76.tgz -C $OUT r76; rm -rf $R
