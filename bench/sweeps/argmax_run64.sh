# box (1 GPU): the argmax keys per context (tcu_argmax's keys buffer instead of a device-wide word): gpu_ops
# (every argmax case, 1..16 rows, and two streams with their own buffers in flight together) and gpu_model on
# a 2-layer synth (a chunk of 8 == 8 steps, tern_eval_argmax).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b64; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_a.txz -C $B
R=$OUT/r64; mkdir -p $R
timeout 240 $B/gpu_ops > $R/gpu_ops.log 2>&1; echo "gpu_ops rc=$? $(tail -1 $R/gpu_ops.log)"; grep FAIL $R/gpu_ops.log | head -5
$B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
timeout 120 $B/gpu_model /tmp/s2.gguf > $R/gpu_model.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/gpu_model.log)"; grep -E "FAIL|batch of" $R/gpu_model.log | head -4
$B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 128 -r 2 2>/dev/null | grep tg128
cd /; tar czf $OUT/r64.tgz -C $OUT r64; rm -rf $R
