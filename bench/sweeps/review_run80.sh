# box (1 GPU): after the review's fixes (the cluster RMSNorm's entry barrier): gpu_fused, gpu_model on 2-layer
# synthetic Q4_0 / Q8_0, and the cluster RMSNorm vs the 8-CTA arm again (tg128 Q4_0, 2 rounds; Q8_0 1 round)
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b80; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_v.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w nocl "TERN_CUDA_RMS_CLUSTER=0"
R=$OUT/r80; mkdir -p $R
REPO=$PWD
timeout 200 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -5
for ty in q4_0 q8_0; do
  $B/tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 150 $B/gpu_model /tmp/s2-$ty.gguf > $R/gpu_model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/gpu_model-$ty.log)"
done
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-nocl > $R/ab-q40.md
TYPES="q8_0" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q80 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-nocl > $R/ab-q80.md
cat $R/ab-q40.md $R/ab-q80.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r80.tgz -C $OUT r80; rm -rf $R
