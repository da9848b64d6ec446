# box (1 GPU): the FFN RMSNorm inside the tma gate|up GEMV (TERN_CUDA_NORM_PRO, default on): gpu_fused (the
# prologue == cluster RMSNorm + tma GEMV), gpu_model on 2-layer synthetic Q4_0 / Q8_0 / Q4_K (a chunk of 8, the
# two kernels, == 8 steps, the prologue), also with TERN_CUDA_ATT_ROPE=1; the trace; interleaved tg128 Q4_0
# (2 rounds), Q8_0, Q4_K (1 round), tg64 at depth 8192 (1 round).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b78; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_np.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w nopro "TERN_CUDA_NORM_PRO=0"
R=$OUT/r78; mkdir -p $R
REPO=$PWD
timeout 200 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -5
for ty in q4_0 q8_0 q4_k; do
  $B/tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 150 $B/gpu_model /tmp/s2-$ty.gguf > $R/gpu_model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/gpu_model-$ty.log)"
  grep -E "FAIL" $R/gpu_model-$ty.log | head -3
done
TERN_CUDA_ATT_ROPE=1 timeout 150 $B/gpu_model /tmp/s2-q4_0.gguf > $R/gpu_model-q4_0-attrope.log 2>&1; echo "gpu_model q4_0 att_rope rc=$? $(tail -1 $R/gpu_model-q4_0-attrope.log)"
TERN_TRACE=1 $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 16 -r 1 2>&1 | grep -o "rmsnorm_cluster=[0-9]* attention_rope=[0-9]* gemv_norm_prologue=[0-9]*" | head -2
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-nopro > $R/ab-q40.md
TYPES="q8_0 q4_k" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q80 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-nopro > $R/ab-q80.md
TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 64 -d 8192 -r 1" OUT=$R/ab-d8k bash $REPO/bench/bins_ab.sh $B/tern $B/tern-nopro > $R/ab-d8k.md
cat $R/ab-q40.md $R/ab-q80.md $R/ab-d8k.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r78.tgz -C $OUT r78; rm -rf $R
