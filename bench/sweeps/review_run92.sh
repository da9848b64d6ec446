# box (1 GPU): after the review's fixes (one reduction body for cta_sum_out / cta_sum_sub, the sub-CTA arm at R <= 2,
# the fused prefill gate|up only when every layer fuses, the Q8_0-cache check's lower bound): gpu_multi (default
# and TERN_CUDA_DP4A_SUB=4), gpu_fused, gpu_model on 2-layer synth Q4_0 and Q4_K, tg128 / pp512 Q4_0 once
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b92; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_r.txz -C $B
R=$OUT/r92; mkdir -p $R
timeout 150 $B/gpu_multi > $R/gpu_multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/gpu_multi.log)"; grep FAIL $R/gpu_multi.log | head -3
TERN_CUDA_DP4A_SUB=4 timeout 150 $B/gpu_multi > $R/gpu_multi-s4.log 2>&1; echo "gpu_multi S=4 rc=$? $(tail -1 $R/gpu_multi-s4.log)"; grep FAIL $R/gpu_multi-s4.log | head -3
timeout 100 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -3
for ty in q4_0 q4_k; do
  $B/tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 150 $B/gpu_model /tmp/s2-$ty.gguf > $R/gpu_model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/gpu_model-$ty.log)"; grep -E "FAIL|Q8_0 KV cache \(|gate/up" $R/gpu_model-$ty.log | head -3
done
$B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 512 -n 128 -r 2 2>&1 | grep -E "pp512|tg128"
cd /; tar czf $OUT/r92.tgz -C $OUT r92; rm -rf $R
