# box: the per-shape tma rule: correctness (gpu_multi default, rule on every matrix >= 1 MiB; gpu_model), A/B vs the old rule
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b7; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r7; mkdir -p $R
cd $B
timeout 120 ./gpu_multi > $R/multi.log 2>&1; echo "multi rc=$? $(tail -1 $R/multi.log)"
TERN_CUDA_TMA_MIN_MB=1 timeout 120 ./gpu_multi > $R/multi-rule1.log 2>&1; echo "multi rule>=1MiB rc=$? $(tail -1 $R/multi-rule1.log)"
for ty in q4_0 q8_0; do ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
timeout 120 ./gpu_model /tmp/s2-$ty.gguf > $R/model-$ty.log 2>&1; echo "model $ty rc=$? $(tail -1 $R/model-$ty.log)"; done
cd - >/dev/null
OUT=$R/ab TYPES="q4_0 q4_k q8_0 q6_k" ROUNDS=2 bench/bins_ab.sh $B/old $B/tern $B/tma
tar czf $OUT/r7.tgz -C $OUT r7; rm -rf $R
