# box (1 GPU): the checks of wg_run71c.sh on the code after review (5d85bf5: kv_rows = the chunk's last position
# + 1, no V zeroing): the default model reassembled from /tmp (parts 00 and 01 by wg_run71a.sh / wg_run71b.sh) and
# checked by md5; bench/gpu_check.sh's attn (the whole gpu_attention) and model (gpu_model on the default model)
# steps; gpu_model on 2-layer synthetic Q4_0 / Q8_0; pp2048 / pp32768 once.
export LD_LIBRARY_PATH=$PWD/.carry/lib
cat /tmp/model.part.00 /tmp/model.part.01 .carry/model.part.02 > /tmp/model.gguf
echo "md5 $(md5sum /tmp/model.gguf | cut -c1-32)"
mkdir -p build-cuda/gpu; tar xJf .carry/bin_fin.txz -C .
R=$OUT/r72; mkdir -p $R
MODEL=/tmp/model.gguf OUT=$R bash bench/gpu_check.sh attn model 2>&1 | tail -5
grep -E "v6|worst|causal S=(8192|32768) D=128" $R/attn.log | head -16
for ty in q4_0 q8_0; do
  ./tern synth --arch llama3-8b --type $ty --layers 2 -o /tmp/s-$ty.gguf > /dev/null 2>&1
  timeout 120 build-cuda/gpu/gpu_model /tmp/s-$ty.gguf > $R/synth-$ty.log 2>&1; echo "synth $ty rc=$? $(tail -1 $R/synth-$ty.log)"
done
./tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 2048,32768 -n 0 -r 1 --receipt $R/pp.json 2>/dev/null | grep pp
cd /; tar czf $OUT/r72.tgz -C $OUT r72; rm -rf $R
