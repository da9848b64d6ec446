# box (1 GPU): the prefill chunks' gate|up as one GEMM (TERN_CUDA_PREFILL_GU=1, an arm) vs two (the default):
# gpu_fused (tcu_swiglu_rows == tcu_swiglu on the halves), gpu_model on a 2-layer synth Q4_0 (the arm's logits vs
# two GEMMs), the trace's GEMM count (the arm ran), interleaved pp512/pp2048 at the default chunk (2048): Q4_0 2
# rounds, Q8_0 1; pp2048 at -ub 512 1 round
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b90; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_g.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w gu "TERN_CUDA_PREFILL_GU=1"
R=$OUT/r90; mkdir -p $R
REPO=$PWD
timeout 200 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -3
$B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2-q4_0.gguf > /dev/null 2>&1
timeout 200 $B/gpu_model /tmp/s2-q4_0.gguf > $R/gpu_model-q4_0.log 2>&1; echo "gpu_model q4_0 rc=$? $(tail -1 $R/gpu_model-q4_0.log)"; grep -E "FAIL|fused gate" $R/gpu_model-q4_0.log | head -3
for a in "" "TERN_CUDA_PREFILL_GU=1"; do env $a TERN_TRACE=1 $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 2048 -n 0 -r 1 2>&1 | grep -o "gemm=[0-9]*" | head -1; done
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 512,2048 -n 0 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-gu > $R/ab-q40.md
TYPES="q8_0" ROUNDS=1 ARGS="-p 512,2048 -n 0 -r 2" OUT=$R/ab-q80 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-gu > $R/ab-q80.md
TYPES="q4_0" ROUNDS=1 ARGS="-p 2048 -n 0 -r 2 -ub 512" OUT=$R/ab-ub512 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-gu > $R/ab-ub512.md
cat $R/ab-q40.md $R/ab-q80.md $R/ab-ub512.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r90.tgz -C $OUT r90; rm -rf $R
