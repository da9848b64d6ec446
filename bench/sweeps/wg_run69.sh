# box (1 GPU): v6b's tile order (TERN_CUDA_FLASH_ORDER 1, the default: every head's latest query block first over
# a 1-D grid; 0: per head) in gpu_attention's cases and causal table (`gpu_attention wg`), pp2048 / pp32768 end
# to end for both orders (Q4_0), and ncu on one v6b launch late in a pp32768 (a 2048-token chunk over ~28k keys):
# tensor-pipe use, issue and stall reasons.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b69; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_wg.txz -C $B
R=$OUT/r69; mkdir -p $R
REPO=$PWD
timeout 300 $B/gpu_attention wg > $R/attention_wg.log 2>&1; rc=$?
echo "gpu_attention wg rc=$rc $(tail -1 $R/attention_wg.log)"
grep "FAIL" $R/attention_wg.log | head -8
grep "causal" $R/attention_wg.log | grep "pp+iw \|pp+iw order0\|v3" | head -20
if [ $rc = 0 ]; then
  printf '#!/bin/sh\nTERN_CUDA_FLASH_ORDER=0 exec %s/tern "$@"\n' $B > $B/tern_o0; chmod +x $B/tern_o0
  cd $B
  TYPES="q4_0" ROUNDS=2 ARGS="-p 2048 -n 0 -r 2" OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern_o0 $B/tern | tee $R/ab.md
  TYPES="q4_0" ROUNDS=1 ARGS="-p 32768 -n 0 -r 1" OUT=$R/ab32k bash $REPO/bench/bins_ab.sh $B/tern_o0 $B/tern | tee $R/ab32k.md
  timeout 200 ncu --clock-control none --kernel-name regex:flash_wgmma_ws --launch-skip 440 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats \
    $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 32768 -n 0 -r 1 > $R/ncu-v6b.txt 2>&1
  echo "== ncu rc=$?"; grep -E "Duration|Compute \(SM\) Throughput|Issued Warp|No Eligible|Registers Per|Achieved Occupancy|Block Size|Grid Size|Warp Cycles Per Issued|Executed Ipc|Tensor|Stall|stall" $R/ncu-v6b.txt | head -24
  grep -E "^ +(OPT|WRN)" $R/ncu-v6b.txt | cut -c1-240 | head -8
fi
cd /; tar czf $OUT/r69.tgz -C $OUT r69; rm -rf $R
