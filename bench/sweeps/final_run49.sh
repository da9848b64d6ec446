# box (1 GPU): after the review: the whole gpu_attention with the added Q8_0-cache cases (QH 2, G = 5, the
# 16-split grid straddling split steps, empty splits with TERN_CUDA_ATT_ADAPT's rule off, v5's launch count
# checked per call), gpu_model on a 2-layer q4_0 synth, and the trace of Q8_0-cache runs (attention_q8w now
# counts v5's launches as issued): default and TERN_CUDA_ATT_Q8W=0.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b49; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r49; mkdir -p $R
cd $B
timeout 300 ./gpu_attention > $R/attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attention.log)"
grep -E "FAIL" $R/attention.log | head -8
grep -E "^q8 decode pos (32767|8191)" $R/attention.log
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
timeout 120 ./gpu_model /tmp/s2.gguf > $R/model-q4_0.log 2>&1; echo "gpu_model q4_0 rc=$? $(tail -1 $R/model-q4_0.log)"
TERN_TRACE=1 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 8 -r 1 -ctk q8_0 -ctv q8_0 > $R/trace.md 2> $R/trace.err; grep "trace: cuda" $R/trace.err
TERN_CUDA_ATT_Q8W=0 TERN_TRACE=1 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 8 -r 1 -ctk q8_0 -ctv q8_0 > $R/trace-v2.md 2> $R/trace-v2.err; grep "trace: cuda" $R/trace-v2.err
cd /; tar czf $OUT/r49.tgz -C $OUT r49; rm -rf $R
