# box (1 GPU): the session's final binary (d224626): gpu_attention (Q8_0 ring == plain loads, f16 ring arm ==
# plain), gpu_model on 2-layer q4_0 and q8_0 synths (chunk of 8 == 8 steps; Q8_0-cache decode), the trace
# line of a tg run (rope_epi 0: the epilogue is off by default). gpu_fused and gpu_multi: run38.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b37; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r37; mkdir -p $R
cd $B
timeout 200 ./gpu_attention > $R/attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attention.log)"
for ty in q4_0 q8_0; do
  ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 100 ./gpu_model /tmp/s2-$ty.gguf > $R/model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/model-$ty.log)"
done
TERN_TRACE=1 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 8 -r 1 > $R/trace.md 2> $R/trace.err; grep "trace: cuda" $R/trace.err
cd /; tar czf $OUT/r37.tgz -C $OUT r37; rm -rf $R
