# box (1 GPU): the session's last binary: gpu_fused (with the xo-untouched check), gpu_model on a 2-layer
# synth model, TERN_CUDA_SKIP's error and no-op cases
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b27; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r27; mkdir -p $R
cd $B
timeout 100 ./gpu_fused > $R/fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/fused.log)"; grep FAIL $R/fused.log | head -3
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
timeout 100 ./gpu_model /tmp/s2.gguf > $R/model.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/model.log)"
TERN_CUDA_SKIP=bogus ./tern bench -m /tmp/s2.gguf --device cuda -p 0 -n 4 -r 1 > $R/skip-bogus.txt 2>&1; echo "skip bogus rc=$? $(tail -1 $R/skip-bogus.txt)"
TERN_CUDA_SKIP=, ./tern bench -m /tmp/s2.gguf --device cuda -p 0 -n 4 -r 1 > $R/skip-empty.txt 2>&1; echo "skip ',' rc=$? warning lines: $(grep -c WRONG $R/skip-empty.txt)"
cd /; tar czf $OUT/r27.tgz -C $OUT r27; rm -rf $R
