# box (1 GPU): the session's final binary: the whole gpu_attention (v5 and v2 over the Q8_0 cache, the f16
# kernels, prefill), gpu_model on 2-layer q4_0 and q8_0 synths (Q8_0 cache vs f16, a chunk of 8 == 8 steps),
# the trace line of a Q8_0-cache tg run (attention_q8w counts v5's launches), then the README table
# (bench/perf_table.sh, receipts under r48/perf).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b48; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r48; mkdir -p $R
REPO=$PWD
cd $B
timeout 240 ./gpu_attention > $R/attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attention.log)"
grep -E "^q8 decode pos (32767|8191)" $R/attention.log
for ty in q4_0 q8_0; do
  ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 120 ./gpu_model /tmp/s2-$ty.gguf > $R/model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/model-$ty.log)"
  grep -E "Q8_0 KV cache" $R/model-$ty.log
done
TERN_TRACE=1 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 8 -r 1 -ctk q8_0 -ctv q8_0 > $R/trace.md 2> $R/trace.err; grep "trace: cuda" $R/trace.err
cp $B/tern $REPO/tern
cd $REPO && OUT=$R/perf bash bench/perf_table.sh > $R/perf.md 2>&1; tail -16 $R/perf.md
cd /; tar czf $OUT/r48.tgz -C $OUT r48; rm -rf $R
