# box: tma arm (unit counters): correctness, ncu of every kernel of layer 2 (tma and cta arms), PDL off, A/B tg128
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b5; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r5; mkdir -p $R
cd $B
TERN_CUDA_DP4A_KERNEL=tma timeout 120 ./gpu_multi > $R/multi-tma.log 2>&1; echo "multi-tma rc=$? $(tail -1 $R/multi-tma.log)"
grep -A1 "^gemv q4_0 repacked" $R/multi-tma.log | grep "m= 1"
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
TERN_CUDA_DP4A_KERNEL=tma timeout 120 ./gpu_model /tmp/s2.gguf > $R/model-tma.log 2>&1; echo "model-tma rc=$? $(tail -1 $R/model-tma.log)"
for arm in tma cta; do
TERN_CUDA_GRAPH=0 TERN_CUDA_DP4A_KERNEL=$arm timeout 300 /usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight \
  --launch-skip 9 --launch-count 12 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 2 -r 1 > $R/ncu-all-$arm.txt 2>&1
echo "== $arm"; grep -E "^  [a-z_ ]+.*\(|Duration" $R/ncu-all-$arm.txt | sed 's/(.*)\s*(\([0-9]*\), 1, 1)x(\([0-9]*\).*/ grid \1 x \2/' | paste - - | awk '{$1=$1; print}' | cut -c1-150
done
for pdl in 1 0; do for arm in tma cta; do
  echo "pdl=$pdl $arm $(TERN_CUDA_PDL=$pdl TERN_CUDA_DP4A_KERNEL=$arm ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 32 -r 1 2>/dev/null | grep tg32 | cut -d'|' -f8,9)"
done; done
cd - >/dev/null
OUT=$R/ab TYPES="q4_0 q4_k" ROUNDS=2 bench/bins_ab.sh $B/tern $B/tma
tar czf $OUT/r5.tgz -C $OUT r5; rm -rf $R
