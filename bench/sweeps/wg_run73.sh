# box (1 GPU): after v6a and v6b were made to share their pieces (3943348): gpu_attention's prefill cases and the
# causal table (`gpu_attention wg`), gpu_model on 2-layer synthetic Q4_0 / Q8_0, pp2048 / pp32768 once.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b73; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_wg.txz -C $B
R=$OUT/r73; mkdir -p $R
timeout 300 $B/gpu_attention wg > $R/attention_wg.log 2>&1; echo "gpu_attention wg rc=$? $(tail -1 $R/attention_wg.log)"
grep "FAIL" $R/attention_wg.log | head -8
grep "worst\|causal S=.* D=128 \(v6b pp+iw\|v6a\|v3\)" $R/attention_wg.log | grep -v "order\|nofold" | head -20
for ty in q4_0 q8_0; do
  $B/tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s-$ty.gguf > /dev/null 2>&1
  timeout 120 $B/gpu_model /tmp/s-$ty.gguf > $R/synth-$ty.log 2>&1; echo "synth $ty rc=$? $(tail -1 $R/synth-$ty.log)"
done
$B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 2048,32768 -n 0 -r 1 --receipt $R/pp.json 2>/dev/null | grep pp
cd /; tar czf $OUT/r73.tgz -C $OUT r73; rm -rf $R
