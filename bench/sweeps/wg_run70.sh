# box (1 GPU): v6b's tile orders (TERN_CUDA_FLASH_ORDER 0 per head, 1 longest first over all heads, 2 the
# default: by KV head, longest first within one) in gpu_attention's cases and causal table, pp512 / pp2048 (2
# rounds) and pp32768 (1 round) end to end for each (Q4_0); then the README's table (`bench/perf_table.sh`) at
# this binary.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b70; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_wg.txz -C $B
R=$OUT/r70; mkdir -p $R
REPO=$PWD
timeout 300 $B/gpu_attention wg > $R/attention_wg.log 2>&1; rc=$?
echo "gpu_attention wg rc=$rc $(tail -1 $R/attention_wg.log)"
grep "FAIL" $R/attention_wg.log | head -8
grep "causal" $R/attention_wg.log | grep "pp+iw  \|pp+iw order\|v3" | head -30
if [ $rc = 0 ]; then
  for o in 0 1; do printf '#!/bin/sh\nTERN_CUDA_FLASH_ORDER=%s exec %s/tern "$@"\n' $o $B > $B/tern_o$o; chmod +x $B/tern_o$o; done
  cd $B
  TYPES="q4_0" ROUNDS=2 ARGS="-p 512,2048 -n 0 -r 2" OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern_o0 $B/tern_o1 $B/tern | tee $R/ab.md
  TYPES="q4_0" ROUNDS=1 ARGS="-p 32768 -n 0 -r 1" OUT=$R/ab32k bash $REPO/bench/bins_ab.sh $B/tern_o0 $B/tern_o1 $B/tern | tee $R/ab32k.md
  cd $REPO; cp $B/tern ./tern
  mkdir -p $R/perf; OUT=$R/perf bash bench/perf_table.sh > $R/perf/table.md 2> $R/perf/table.err; echo "perf rc=$?"
  cat $R/perf/table.md
fi
cd /; tar czf $OUT/r70.tgz -C $OUT r70; rm -rf $R
