# box (1 GPU): the default model's second third to /tmp; gpu_fused, gpu_multi, gpu_model on a 2-layer synth Q8_0 on
# the final binaries
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp .carry/model.part.01 /tmp/model.part.01 && ls -la /tmp/model.part.*
B=/tmp/b91
R=$OUT/r91b; mkdir -p $R
timeout 100 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -3
timeout 200 $B/gpu_multi > $R/gpu_multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/gpu_multi.log)"; grep FAIL $R/gpu_multi.log | head -3
$B/tern synth --arch llama3-8b --type q8_0 --layers 2 -o /tmp/s2-q8_0.gguf > /dev/null 2>&1
timeout 200 $B/gpu_model /tmp/s2-q8_0.gguf > $R/gpu_model-q8_0.log 2>&1; echo "gpu_model q8_0 rc=$? $(tail -1 $R/gpu_model-q8_0.log)"; grep -E "FAIL|gate/up" $R/gpu_model-q8_0.log | head -3
cd /; tar czf $OUT/r91b.tgz -C $OUT r91b; rm -rf $R
