# box (1 GPU): the final code's checks. The default model reassembled (md5 a1231443...), then bench/gpu_check.sh's
# attn (the whole gpu_attention: every decode, verify and prefill case, v6 in each, and its timing table), model
# (gpu_model on the default model: GPU vs CPU logits, greedy tokens; SmolLM2's hd 64 prefill now runs v6) and hf
# (those logits vs transformers) steps; gpu_model on 2-layer synthetic Llama-3-8B Q4_0 / Q8_0 / Q4_K; torch SDPA
# on the causal table's shapes in the same run.
export LD_LIBRARY_PATH=$PWD/.carry/lib
cat /tmp/model.part.00 /tmp/model.part.01 .carry/model.part.02 > /tmp/model.gguf
echo "md5 $(md5sum /tmp/model.gguf | cut -c1-32)"
mkdir -p build-cuda/gpu; tar xJf .carry/bin_fin.txz -C .
R=$OUT/r71; mkdir -p $R
MODEL=/tmp/model.gguf OUT=$R bash bench/gpu_check.sh attn model hf 2>&1 | tail -6
grep -E "v6|worst|causal S=(8192|32768) D=128" $R/attn.log | head -16
for ty in q4_0 q8_0 q4_k; do
  ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s-$ty.gguf > /dev/null 2>&1
  timeout 120 build-cuda/gpu/gpu_model /tmp/s-$ty.gguf > $R/synth-$ty.log 2>&1; echo "synth $ty rc=$? $(tail -1 $R/synth-$ty.log)"
done
timeout 200 python3 bench/sdpa_bench.py 2048 8192 32768 > $R/sdpa.log 2>&1; grep cudnn $R/sdpa.log | head -9
cd /; tar czf $OUT/r71.tgz -C $OUT r71; rm -rf $R
