# box (1 GPU), call 2 of 2 (right after att_run19.sh; tern in /tmp/b19): gpu_multi; gpu_model on 2-layer
# synth models, its --dump logits of the new and the 846bf14 binaries compared byte for byte (same bits)
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b19; tar xJf .carry/bin2.txz -C $B
R=$OUT/r20; mkdir -p $R
cd $B
timeout 150 ./gpu_multi > $R/multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/multi.log)"
for ty in q4_0 q8_0; do
  ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 120 ./gpu_model /tmp/s2-$ty.gguf --dump $R/logits-$ty.bin > $R/model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/model-$ty.log)"
  timeout 120 ./gpu_model_old /tmp/s2-$ty.gguf --dump $R/logits-$ty-old.bin > $R/model-$ty-old.log 2>&1
  cmp $R/logits-$ty.bin $R/logits-$ty-old.bin && echo "logits $ty: identical to 846bf14"
done
grep FAIL $R/model-q4_0.log | head -3
rm -f $R/*.bin
cd /; tar czf $OUT/r20.tgz -C $OUT r20; rm -rf $R
