# box: the warp-order tma arm: correctness (gpu_multi, gpu_model), a budget x rows sweep (tg32, one round), A/B vs default
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b4; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r4; mkdir -p $R
cd $B
TERN_CUDA_DP4A_KERNEL=tma timeout 120 ./gpu_multi > $R/multi-tma.log 2>&1; echo "multi-tma rc=$? $(tail -1 $R/multi-tma.log)"
grep -A2 "gemv q4_0 repacked 4096x14336\|gemv q4_0 repacked 14336x4096\|gemv q4_0 repacked 4096x6144\|gemv q4_0 repacked 4096x128256\|gemv q8_0 repacked" $R/multi-tma.log | grep -v "m= 2"
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
TERN_CUDA_DP4A_KERNEL=tma timeout 120 ./gpu_model /tmp/s2.gguf > $R/model-tma.log 2>&1; echo "model-tma rc=$? $(tail -1 $R/model-tma.log)"
for kb in 160 220; do for rows in 1 2 4; do for sl in 2 3 4; do
  echo "kb=$kb rows=$rows slots=$sl $(TERN_CUDA_TMA_KB=$kb TERN_CUDA_TMA_ROWS=$rows TERN_CUDA_TMA_SLOTS=$sl TERN_CUDA_DP4A_KERNEL=tma ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 32 -r 1 2>/dev/null | grep tg32 | cut -d'|' -f8,9)"
done; done; done
echo "default $(./tern bench --synthetic llama3-8b --device cuda -p 0 -n 32 -r 1 2>/dev/null | grep tg32 | cut -d'|' -f8,9)"
cd - >/dev/null
OUT=$R/ab TYPES="q4_0 q8_0 q4_k" ROUNDS=2 bench/bins_ab.sh $B/tern $B/tma
tar czf $OUT/r4.tgz -C $OUT r4; rm -rf $R
