# box (1 GPU): the default model's second third to /tmp; gpu_model on a 2-layer synthetic Llama-3-8B Q4_K (its
# Q8_0-cache check now against the CPU reference arm over Q8_0-rounded K/V, cpu_kv_q8_reference_set)
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp .carry/model.part.01 /tmp/model.part.01 && ls -la /tmp/model.part.*
B=/tmp/b83
R=$OUT/r83b; mkdir -p $R
timeout 120 $B/tern synth --arch llama3-8b --type q4_k --layers 2 -o /tmp/synth-q4k.gguf > $R/synth.log 2>&1; echo "synth rc=$?"
timeout 300 $B/gpu_model /tmp/synth-q4k.gguf > $R/gpu_model-q4k.log 2>&1; echo "gpu_model q4_k rc=$? $(tail -1 $R/gpu_model-q4k.log)"
grep -E "FAIL|Q8_0 KV" $R/gpu_model-q4k.log | head -5
cd /; tar czf $OUT/r83b.tgz -C $OUT r83b; rm -rf $R
