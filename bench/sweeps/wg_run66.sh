# box (1 GPU): v6b (wgmma, K/V by TMA from a producer warp) beside v6a and v3: gpu_attention's prefill cases
# (every flash version vs float64; v6b on a NaN-padded cache) and the causal table (`gpu_attention wg`),
# gpu_model on a 2-layer synth (prefill through the backend), then end to end: pp512 / pp2048 interleaved
# TERN_CUDA_FLASH_WG=0 (v3) / 1 (v6a) / default (v6b), Q4_0, 2 rounds; pp32768 once each.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b66; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_wg.txz -C $B
R=$OUT/r66; mkdir -p $R
REPO=$PWD
timeout 300 $B/gpu_attention wg > $R/attention_wg.log 2>&1; rc=$?
echo "gpu_attention wg rc=$rc $(tail -1 $R/attention_wg.log)"
grep "FAIL" $R/attention_wg.log | head -8
grep "causal\|worst\|v6" $R/attention_wg.log | grep -v FAIL | head -24
if [ $rc = 0 ]; then
  $B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
  timeout 120 $B/gpu_model /tmp/s2.gguf > $R/gpu_model.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/gpu_model.log)"; grep FAIL $R/gpu_model.log | head -4
  for v in 0 1; do printf '#!/bin/sh\nTERN_CUDA_FLASH_WG=%s exec %s/tern "$@"\n' $v $B > $B/tern_wg$v; chmod +x $B/tern_wg$v; done
  cd $B
  TYPES="q4_0" ROUNDS=2 ARGS="-p 512,2048 -n 0 -r 2" OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern_wg0 $B/tern_wg1 $B/tern | tee $R/ab.md
  TYPES="q4_0" ROUNDS=1 ARGS="-p 32768 -n 0 -r 1" OUT=$R/ab32k bash $REPO/bench/bins_ab.sh $B/tern_wg0 $B/tern | tee $R/ab32k.md
fi
cd /; tar czf $OUT/r66.tgz -C $OUT r66; rm -rf $R
