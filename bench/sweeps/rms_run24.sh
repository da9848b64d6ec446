# box (1 GPU): RMSNorm over C CTAs a row (TERN_CUDA_RMS_SPLIT, default 8; tern_c1 = 1, one CTA as before):
# gpu_fused (the split kernel == the one-CTA kernel bit for bit), gpu_model on 2-layer synth models, then
# interleaved tg128 and depth-8192 A/Bs
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b24; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r24; mkdir -p $R
S=$PWD
cd $B
timeout 120 ./gpu_fused > $R/fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/fused.log)"; grep FAIL $R/fused.log | head -3
for ty in q4_0 q8_0; do
  ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 120 ./gpu_model /tmp/s2-$ty.gguf > $R/model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/model-$ty.log)"
done
grep FAIL $R/model-q4_0.log | head -3
cd $S
OUT=$R/ab TYPES="q4_0 q8_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" bash bench/bins_ab.sh $B/tern_c1 $B/tern | tee $R/ab.md
OUT=$R/abd TYPES=q4_0 ROUNDS=1 ARGS="-p 0 -n 64 -d 8192 -r 2" bash bench/bins_ab.sh $B/tern_c1 $B/tern | tee $R/abd.md
cd /; tar czf $OUT/r24.tgz -C $OUT r24; rm -rf $R
