# box (1 GPU), call 2 of 2: the previous binaries (c331888, before the att_cta_ml / att_cta_out factoring) make the
# same synth (tern synth is deterministic) and run gpu_model --dump on it; the dump is compared byte for byte
# with call 1's (bench/sweeps/final_run51.sh, carried as .carry/old/dump-new.bin).
export LD_LIBRARY_PATH=$PWD/.carry/lib
T=$PWD/.carry/old; B=/tmp/b52; rm -rf $B; mkdir -p $B; cp $T/tern $T/gpu_model $B/; chmod +x $B/*
cd $B
./tern synth --arch llama3-8b --type q4_0 --layers 2 --vocab 8192 -o /tmp/s2v.gguf > /dev/null 2>&1
timeout 120 ./gpu_model /tmp/s2v.gguf --dump /tmp/dump-old.bin > $OUT/model-old.log 2>&1; echo "gpu_model (old) rc=$? $(tail -1 $OUT/model-old.log)"
grep -E "Q8_0 KV cache|logits rel L2, GPU vs CPU reference" $OUT/model-old.log
md5sum /tmp/dump-old.bin $T/dump-new.bin
cmp /tmp/dump-old.bin $T/dump-new.bin && echo "dumps: byte-identical"
