# box (1 GPU): the default model reassembled (md5 a1231443...) and gpu_model on it with the final binaries
export LD_LIBRARY_PATH=$PWD/.carry/lib
cat /tmp/model.part.00 /tmp/model.part.01 .carry/model.part.02 > /tmp/model.gguf
echo "md5 $(md5sum /tmp/model.gguf | cut -c1-32)"
B=/tmp/b91
R=$OUT/r91c; mkdir -p $R
timeout 240 $B/gpu_model /tmp/model.gguf > $R/gpu_model-default.log 2>&1; echo "gpu_model default rc=$? $(tail -1 $R/gpu_model-default.log)"
grep -E "FAIL|Q8_0 KV|greedy|gate/up" $R/gpu_model-default.log | head -8
cd /; tar czf $OUT/r91c.tgz -C $OUT r91c; rm -rf $R
