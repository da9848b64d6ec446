# box (1 GPU): after the refactor (capture_forward, multi_dot): gpu_multi (m columns == 1 column bit for
# bit), gpu_model on a 2-layer synth model (step and chunk graphs), the verify curve once (timing unchanged?)
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b28; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r28; mkdir -p $R
cd $B
timeout 100 ./gpu_multi > $R/multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/multi.log)"
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
timeout 100 ./gpu_model /tmp/s2.gguf > $R/model.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/model.log)"
timeout 60 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 32 -v 2,4,8 -r 2 --receipt $R/vr.json > $R/vr.md 2>&1
echo "$(grep tg32 $R/vr.md | cut -d'|' -f8) $(grep 'ms a verify' $R/vr.md | awk '{printf "%s %s ", $1, $2}')"
cd /; tar czf $OUT/r28.tgz -C $OUT r28; rm -rf $R
