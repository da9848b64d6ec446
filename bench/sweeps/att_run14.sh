# box (1 GPU): decode attention with its first K/V batch before the PDL wait (TERN_CUDA_ATT_PF 1 / 2 / 0)
# against the binary before it (tern_old); correctness (gpu_attention, gpu_model on a 2-layer synth model,
# each arm); ncu of the decode step's small kernels, isolated
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b14; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r14; mkdir -p $R
S=$PWD
cd $B
timeout 150 ./gpu_attention > $R/attn.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attn.log)"
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
for pf in 1 2 0; do
  TERN_CUDA_ATT_PF=$pf timeout 120 ./gpu_model /tmp/s2.gguf > $R/model-pf$pf.log 2>&1; echo "gpu_model pf$pf rc=$? $(tail -1 $R/model-pf$pf.log)"
done
grep -E "FAIL" $R/model-pf1.log | head -3
cd $S
OUT=$R/ab TYPES=q4_0 ROUNDS=2 ARGS="-p 0 -n 128 -r 2" bash bench/bins_ab.sh $B/tern_old $B/tern $B/tern_pf0 $B/tern_pf2 | tee $R/ab.md
OUT=$R/abd TYPES=q4_0 ROUNDS=1 ARGS="-p 0 -n 64 -d 8192 -r 2" bash bench/bins_ab.sh $B/tern_old $B/tern $B/tern_pf0 $B/tern_pf2 | tee $R/abd.md
cd $B
TERN_CUDA_GRAPH=0 timeout 120 /usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight -k regex:"rms|rope|att|swiglu|gemv|argmax" --launch-skip 10 --launch-count 11 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 2 -r 1 > $R/ncu.txt 2>&1
echo "ncu rc=$?"; grep -E "^  [a-z_]+.*\(|Duration" $R/ncu.txt | paste - - | awk '{print $1, $(NF)}' | head -12
cd $S; tar czf $OUT/r14.tgz -C $OUT r14; rm -rf $R
