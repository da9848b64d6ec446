# box (1 GPU), call A of 3: multi-column GEMV twins with R rows (TERN_CUDA_MULTI_ROWS 1 = the old kernels'
# shape, 2 default, 4): correctness (gpu_multi: m columns == 1 column bit for bit; gpu_model on a 2-layer
# synth model: a chunk of 8 == 8 decode steps) and the verify-pass cost curve on synthetic Llama-3-8B Q4_0
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b15; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r15; mkdir -p $R
cd $B
s=$(date +%s); timeout 200 ./gpu_multi > $R/multi.log 2>&1; echo "gpu_multi rc=$? $(( $(date +%s)-s ))s $(tail -1 $R/multi.log)"
TERN_CUDA_MULTI_ROWS=4 timeout 200 ./gpu_multi > $R/multi-r4.log 2>&1; echo "gpu_multi R4 rc=$? $(tail -1 $R/multi-r4.log)"
grep -E "FAIL" $R/multi.log | head -3
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
timeout 120 ./gpu_model /tmp/s2.gguf > $R/model.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/model.log)"
for round in 1 2; do for r in 1 2 4; do
  TERN_CUDA_MULTI_ROWS=$r timeout 60 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 32 -v 1,2,3,4,6,8,12,16 -r 2 --receipt $R/vr-q4_0-R$r-round$round.json > $R/vr-q4_0-R$r-round$round.md 2>&1
  echo "R$r round$round: $(grep -E 'tg32' $R/vr-q4_0-R$r-round$round.md | cut -d'|' -f8) $(grep 'ms a verify' $R/vr-q4_0-R$r-round$round.md | awk '{printf "%s %s ", $1, $2}')"
done; done
cd /; tar czf $OUT/r15.tgz -C $OUT r15; rm -rf $R
