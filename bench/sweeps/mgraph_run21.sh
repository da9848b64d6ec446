# box (1 GPU), call A of 3: CUDA graphs for chunks of 2..16 tokens (TERN_CUDA_GRAPH_MULTI=0: the arm without):
# gpu_model on 2-layer synth models (a chunk of 8 == 8 decode steps, now a graph replay), the verify curve
# on synthetic Llama-3-8B Q4_0 both ways, interleaved
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b21; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r21; mkdir -p $R
cd $B
for ty in q4_0 q8_0; do
  ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s2-$ty.gguf > /dev/null 2>&1
  timeout 120 ./gpu_model /tmp/s2-$ty.gguf > $R/model-$ty.log 2>&1; echo "gpu_model $ty rc=$? $(tail -1 $R/model-$ty.log)"
done
grep FAIL $R/model-q4_0.log | head -3
for round in 1 2; do for gm in 0 1; do
  TERN_CUDA_GRAPH_MULTI=$gm timeout 60 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 0 -v 1,2,4,8,16 -r 2 --receipt $R/vr-q4_0-gm$gm-round$round.json > $R/vr-q4_0-gm$gm-round$round.md 2>&1
  echo "gm$gm round$round: $(grep 'ms a verify' $R/vr-q4_0-gm$gm-round$round.md | awk '{printf "%s %s ", $1, $2}')"
done; done
cd /; tar czf $OUT/r21.tgz -C $OUT r21; rm -rf $R
