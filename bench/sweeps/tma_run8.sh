# box: the per-weight family: correctness (gpu_multi default and rule >= 1 MiB, gpu_model q4_0/q4_k/q8_0), A/B vs TERN_CUDA_TMA_MIN_MB=0, perf table
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b8; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r8; mkdir -p $R
cd $B
timeout 120 ./gpu_multi > $R/multi.log 2>&1; echo "multi rc=$? $(tail -1 $R/multi.log)"
TERN_CUDA_TMA_MIN_MB=1 timeout 120 ./gpu_multi > $R/multi-rule1.log 2>&1; echo "multi rule>=1MiB rc=$? $(tail -1 $R/multi-rule1.log)"
for ty in q4_0 q4_k q8_0; do ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
timeout 120 ./gpu_model /tmp/s2-$ty.gguf > $R/model-$ty.log 2>&1; echo "model $ty rc=$? $(tail -1 $R/model-$ty.log)"; done
cd - >/dev/null
OUT=$R/ab TYPES="q4_0 q4_k q6_k q8_0" ROUNDS=2 bench/bins_ab.sh $B/old $B/tern
cp $B/tern ./tern; OUT=$R/perf REPS=3 bench/perf_table.sh > $R/perf.md 2> $R/perf.err; cat $R/perf.md | cut -c1-120
tar czf $OUT/r8.tgz -C $OUT r8; rm -rf $R
