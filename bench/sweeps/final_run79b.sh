# box (1 GPU): the default model's second third to /tmp; the whole gpu_attention (the attention kernels' launch
# signature grew the RoPE argument) and gpu_ops (the RoPE kernels' table argument) on the final binaries
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp .carry/model.part.01 /tmp/model.part.01 && ls -la /tmp/model.part.*
B=/tmp/b79
R=$OUT/r79b; mkdir -p $R
timeout 300 $B/gpu_attention > $R/gpu_attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/gpu_attention.log)"; grep FAIL $R/gpu_attention.log | head -3
timeout 200 $B/gpu_ops > $R/gpu_ops.log 2>&1; echo "gpu_ops rc=$? $(tail -1 $R/gpu_ops.log)"; grep FAIL $R/gpu_ops.log | head -3
cd /; tar czf $OUT/r79b.tgz -C $OUT r79b; rm -rf $R
