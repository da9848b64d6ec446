# box (1 GPU), call 1 of 2: after factoring the decode CTAs' end into att_cta_ml / att_cta_out (v2 and v5; the
# same float operations in the same order, v5 168 registers instead of 189): the whole gpu_attention, gpu_model
# on a 2-layer, 8192-vocab q4_0 synth with --dump (call 2 runs the previous binary's gpu_model on the same
# model and compares the dumps byte for byte), tg64 at depth 32768 and tg128 with the Q8_0 cache (one round).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b51; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r51; mkdir -p $R
cd $B
timeout 300 ./gpu_attention > $R/attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attention.log)"
grep -E "FAIL" $R/attention.log | head -5
./tern synth --arch llama3-8b --type q4_0 --layers 2 --vocab 8192 -o /tmp/s2v.gguf > /dev/null 2>&1
timeout 120 ./gpu_model /tmp/s2v.gguf --dump $OUT/dump-new.bin > $R/model-q4_0.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/model-q4_0.log)"
grep -E "Q8_0 KV cache|logits rel L2" $R/model-q4_0.log
md5sum $OUT/dump-new.bin
for a in "-p 0 -n 64 -d 32768 -r 1" "-p 0 -n 128 -r 2"; do
  ./tern bench --synthetic llama3-8b --device cuda $a -ctk q8_0 -ctv q8_0 2>/dev/null | grep -E "tg(64|128)"
done
cd /; tar czf $OUT/r51.tgz -C $OUT r51; rm -rf $R
