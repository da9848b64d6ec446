# box (1 GPU): the decode RMSNorm over a thread-block cluster (rmsnorm_cl_k, default) vs the 8-CTA kernel
# (TERN_CUDA_RMS_CLUSTER=0): gpu_fused (the cluster cases against the host reference, its x16/y16, rows alone,
# in place), gpu_model on 2-layer synthetic Q4_0 and Q8_0 (a chunk of 8 == 8 steps, GPU vs CPU), the trace's
# launch count, ncu of one launch of each kernel, interleaved tg128 Q4_0 (2 rounds) and Q8_0 (1 round).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b74; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_rc.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w nocl "TERN_CUDA_RMS_CLUSTER=0"
R=$OUT/r74; mkdir -p $R
REPO=$PWD
timeout 200 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -5
for ty in q4_0 q8_0; do
  $B/tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 150 $B/gpu_model /tmp/s2-$ty.gguf > $R/gpu_model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/gpu_model-$ty.log)"
  grep -E "FAIL" $R/gpu_model-$ty.log | head -3
done
TERN_TRACE=1 $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 16 -r 1 2>&1 | grep -o "rmsnorm_cluster=[0-9]*" | head -2
for k in rmsnorm_cl_k rmsnorm_k; do
  e=""; [ $k = rmsnorm_k ] && e="TERN_CUDA_RMS_CLUSTER=0"
  env $e timeout 100 ncu --clock-control none --cache-control none --kernel-name $k --launch-skip 40 --launch-count 1 \
    --section SpeedOfLight $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 64 -r 1 > $R/ncu-$k.txt 2>&1
  echo "ncu $k: $(grep -E '^ +Duration' $R/ncu-$k.txt | head -1)"
done
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-nocl > $R/ab-q40.md
TYPES="q8_0" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q80 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-nocl > $R/ab-q80.md
cat $R/ab-q40.md $R/ab-q80.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r74.tgz -C $OUT r74; rm -rf $R
