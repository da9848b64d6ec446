# box (1 GPU): the decode attention's combine computed once a CTA (same bits, checked: gpu_model --dump of
# the old and new binaries compared byte for byte) against 846bf14 (tern_old); gpu_attention, gpu_multi,
# gpu_model; then the README table (bench/perf_table.sh) with the new binary
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b19; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r19; mkdir -p $R
S=$PWD
cd $B
timeout 150 ./gpu_attention > $R/attn.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attn.log)"
timeout 150 ./gpu_multi > $R/multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/multi.log)"
for ty in q4_0 q8_0; do
  ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 120 ./gpu_model /tmp/s2-$ty.gguf --dump $R/logits-$ty.bin > $R/model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/model-$ty.log)"
  timeout 120 ./gpu_model_old /tmp/s2-$ty.gguf --dump $R/logits-$ty-old.bin > $R/model-$ty-old.log 2>&1
  cmp $R/logits-$ty.bin $R/logits-$ty-old.bin && echo "logits $ty: identical to 846bf14"
done
grep FAIL $R/model-q4_0.log | head -3
rm -f $R/*.bin
cd $S
OUT=$R/ab TYPES=q4_0 ROUNDS=2 ARGS="-p 0 -n 128 -r 2" bash bench/bins_ab.sh $B/tern_old $B/tern | tee $R/ab.md
OUT=$R/abd TYPES=q4_0 ROUNDS=2 ARGS="-p 0 -n 64 -d 8192 -r 2" bash bench/bins_ab.sh $B/tern_old $B/tern | tee $R/abd.md
cp $B/tern ./tern
OUT=$R/perf REPS=3 timeout 200 bash bench/perf_table.sh > $R/perf.md 2> $R/perf.err; echo "perf rc=$?"; cat $R/perf.md
cd /; tar czf $OUT/r19.tgz -C $OUT r19; rm -rf $R
