# box (1 GPU): the default model's second third to /tmp; gpu_model on a 2-layer synthetic Q8_0 (the Q8_0-cache
# check's new bar)
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp .carry/model.part.01 /tmp/model.part.01 && ls -la /tmp/model.part.*
B=/tmp/b87
R=$OUT/r87b; mkdir -p $R
$B/tern synth --arch llama3-8b --type q8_0 --layers 2 -o /tmp/s2-q8_0.gguf > /dev/null 2>&1
timeout 200 $B/gpu_model /tmp/s2-q8_0.gguf > $R/gpu_model-q8_0.log 2>&1; echo "gpu_model q8_0 rc=$? $(tail -1 $R/gpu_model-q8_0.log)"; grep -E "FAIL|Q8_0 KV" $R/gpu_model-q8_0.log | head -4
cd /; tar czf $OUT/r87b.tgz -C $OUT r87b; rm -rf $R
