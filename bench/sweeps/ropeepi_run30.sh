# box (1 GPU): the RoPE epilogue, second version (EPI template variants, angles before the first dots):
# gpu_fused, gpu_model on 2-layer synth q4_0 and q8_0 with and without the epilogue, the trace line, then
# the interleaved A/B TERN_CUDA_ROPE_EPI=0 vs 1 (Q4_0, Q8_0, Q4_K; 2 rounds).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b30; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r30; mkdir -p $R
REPO=$PWD
cd $B
timeout 100 ./gpu_fused > $R/fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/fused.log)"
for ty in q4_0 q8_0; do
  ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 100 ./gpu_model /tmp/s2-$ty.gguf > $R/model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/model-$ty.log)"
  TERN_CUDA_ROPE_EPI=0 timeout 100 ./gpu_model /tmp/s2-$ty.gguf > $R/model-$ty-noepi.log 2>&1; echo "gpu_model $ty epi=0 rc=$? $(tail -1 $R/model-$ty-noepi.log)"
done
TERN_TRACE=1 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 8 -r 1 > /dev/null 2> $R/trace.err; grep "trace: cuda" $R/trace.err
printf '#!/bin/sh\nTERN_CUDA_ROPE_EPI=0 exec %s/tern "$@"\n' $B > $B/tern_noepi; chmod +x $B/tern_noepi
TYPES="q4_0 q8_0 q4_k" ROUNDS=2 OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern_noepi $B/tern | tee $R/ab.md
cd /; tar czf $OUT/r30.tgz -C $OUT r30; rm -rf $R
