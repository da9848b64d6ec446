# box (1 GPU): v6b's pingpong and intra-warpgroup-pipelining arms (TERN_CUDA_FLASH_WG 2 plain, 3 pingpong, 4
# pipelined, 5 both): gpu_attention's prefill cases (each vs float64, the dispatcher == the direct call) and
# the causal table (`gpu_attention wg`), gpu_model on a 2-layer synth, then pp2048 (2 rounds) and pp32768
# (1 round) end to end for each arm, Q4_0.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b67; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_wg.txz -C $B
R=$OUT/r67; mkdir -p $R
REPO=$PWD
timeout 300 $B/gpu_attention wg > $R/attention_wg.log 2>&1; rc=$?
echo "gpu_attention wg rc=$rc $(tail -1 $R/attention_wg.log)"
grep "FAIL" $R/attention_wg.log | head -8
grep "causal\|worst\|v6" $R/attention_wg.log | grep -v FAIL | grep -v "v3 w4\|v6a" | head -30
if [ $rc = 0 ]; then
  $B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
  timeout 120 $B/gpu_model /tmp/s2.gguf > $R/gpu_model.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/gpu_model.log)"; grep FAIL $R/gpu_model.log | head -4
  for v in 2 3 4 5; do printf '#!/bin/sh\nTERN_CUDA_FLASH_WG=%s exec %s/tern "$@"\n' $v $B > $B/tern_wg$v; chmod +x $B/tern_wg$v; done
  cd $B
  TYPES="q4_0" ROUNDS=2 ARGS="-p 2048 -n 0 -r 2" OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern_wg2 $B/tern_wg3 $B/tern_wg4 $B/tern_wg5 | tee $R/ab.md
  TYPES="q4_0" ROUNDS=1 ARGS="-p 32768 -n 0 -r 1" OUT=$R/ab32k bash $REPO/bench/bins_ab.sh $B/tern_wg2 $B/tern_wg3 $B/tern_wg4 $B/tern_wg5 | tee $R/ab32k.md
fi
cd /; tar czf $OUT/r67.tgz -C $OUT r67; rm -rf $R
