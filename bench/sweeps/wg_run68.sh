# box (1 GPU): v6b with the softmax scale folded into the exponent's FFMA (TERN_CUDA_FLASH_WG=5, the default)
# against the unfolded arm (6) and the other modes: gpu_attention's prefill cases and causal table (`gpu_attention
# wg`), gpu_model on a 2-layer synth, then pp2048 (2 rounds) and pp32768 (1 round) end to end for 5 and 6, Q4_0;
# pp512 too, and v3 (TERN_CUDA_FLASH_WG=0) beside them; torch SDPA on the table's shapes in the same run.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b68; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_wg.txz -C $B
R=$OUT/r68; mkdir -p $R
REPO=$PWD
timeout 300 $B/gpu_attention wg > $R/attention_wg.log 2>&1; rc=$?
echo "gpu_attention wg rc=$rc $(tail -1 $R/attention_wg.log)"
grep "FAIL" $R/attention_wg.log | head -8
grep "causal\|worst\|v6" $R/attention_wg.log | grep -v FAIL | grep -v "v6a\|v6b pp \|v6b iw" | head -34
if [ $rc = 0 ]; then
  timeout 240 python3 bench/sdpa_bench.py 2048 8192 32768 > $R/sdpa.log 2>&1; grep "cudnn" $R/sdpa.log | head -12
  $B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
  timeout 120 $B/gpu_model /tmp/s2.gguf > $R/gpu_model.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/gpu_model.log)"; grep FAIL $R/gpu_model.log | head -4
  for v in 0 5 6; do printf '#!/bin/sh\nTERN_CUDA_FLASH_WG=%s exec %s/tern "$@"\n' $v $B > $B/tern_wg$v; chmod +x $B/tern_wg$v; done
  cd $B
  TYPES="q4_0" ROUNDS=2 ARGS="-p 512,2048 -n 0 -r 2" OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern_wg0 $B/tern_wg6 $B/tern_wg5 | tee $R/ab.md
  TYPES="q4_0" ROUNDS=1 ARGS="-p 32768 -n 0 -r 1" OUT=$R/ab32k bash $REPO/bench/bins_ab.sh $B/tern_wg0 $B/tern_wg6 $B/tern_wg5 | tee $R/ab32k.md
fi
cd /; tar czf $OUT/r68.tgz -C $OUT r68; rm -rf $R
