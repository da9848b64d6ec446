# box: tma arm (unit counters): correctness, ncu of every kernel of layer 2 (tma and cta arms), PDL off, A/B tg128
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b6; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r6; mkdir -p $R
cd $B
TERN_CUDA_DP4A_KERNEL=tma timeout 120 ./gpu_multi > $R/multi-tma.log 2>&1; echo "multi-tma rc=$? $(tail -1 $R/multi-tma.log)"
grep -A1 "^gemv q4_0 repacked" $R/multi-tma.log | grep "m= 1"
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
TERN_CUDA_DP4A_KERNEL=tma timeout 120 ./gpu_model /tmp/s2.gguf > $R/model-tma.log 2>&1; echo "model-tma rc=$? $(tail -1 $R/model-tma.log)"
for arm in tma cta; do
TERN_CUDA_GRAPH=0 TERN_CUDA_DP4A_KERNEL=$arm timeout 300 /usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight \
  -k regex:"rms|rope|att|swiglu|gemv|quant|argmax" --launch-skip 10 --launch-count 11 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 2 -r 1 > $R/ncu-all-$arm.txt 2>&1
echo "== $arm"; grep -E "^  [a-z].*\(|Duration" $R/ncu-all-$arm.txt | sed 's/(.*)\s*(\([0-9]*\), 1, 1)x(\([0-9]*\).*/ grid \1 x \2/' | paste - - | awk '{$1=$1; print}' | cut -c1-150
done
cd - >/dev/null
OUT=$R/ab TYPES="q4_0 q4_k q8_0" ROUNDS=2 bench/bins_ab.sh $B/tern $B/tma
tar czf $OUT/r6.tgz -C $OUT r6; rm -rf $R
