set -x
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b1; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r; mkdir -p $R
cd $B
TERN_CUDA_DP4A_KERNEL=tma timeout 120 ./gpu_multi > $R/multi-tma.log 2>&1; echo "multi-tma rc=$?"; grep -E "passed|FAIL" $R/multi-tma.log | tail -5
TERN_CUDA_DP4A_KERNEL=cta timeout 120 ./gpu_multi > $R/multi-cta.log 2>&1; echo "multi-cta rc=$?"; tail -3 $R/multi-cta.log
grep -A8 "gemv Q4_0" $R/multi-tma.log | head -12; grep -A8 "gemv Q4_0" $R/multi-cta.log | head -12
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
TERN_CUDA_DP4A_KERNEL=tma timeout 120 ./gpu_model /tmp/s2.gguf > $R/model-tma.log 2>&1; echo "model-tma rc=$?"; tail -2 $R/model-tma.log
cd -
OUT=$R/ab TYPES="q4_0 q4_k q8_0" ROUNDS=2 bench/bins_ab.sh $B/tern $B/tma
tar czf $OUT/r.tgz -C $OUT r; rm -rf $R
