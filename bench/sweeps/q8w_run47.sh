# box (1 GPU): v5 with 16-row batches (TERN_CUDA_ATT_Q8W_B=4: two scores a lane, half the batch's fixed cost a
# row; 229 registers, no spills) against the default (8 rows) and the 12-warp arm: gpu_attention q8 (checks of
# every arm, kernel times), ncu of the b4 arm at depth 32768, interleaved tg64 at depth 32768 / 8192 and tg128
# over the Q8_0 cache, 2 rounds.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b47; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
printf '#!/bin/sh\nTERN_CUDA_ATT_Q8W_WARPS=12 exec %s/tern "$@"\n' $B > $B/tern-w12; chmod +x $B/tern-w12
printf '#!/bin/sh\nTERN_CUDA_ATT_Q8W_B=4 exec %s/tern "$@"\n' $B > $B/tern-b4; chmod +x $B/tern-b4
R=$OUT/r47; mkdir -p $R
REPO=$PWD
timeout 240 $B/gpu_attention q8 > $R/attention-q8.log 2>&1; echo "gpu_attention q8 rc=$? $(tail -1 $R/attention-q8.log)"
grep -E "FAIL" $R/attention-q8.log | head -5
grep -E "^q8 decode pos (32767|8191)" $R/attention-q8.log
timeout 200 ncu --clock-control none --kernel-name regex:attention_q8w_kernel --launch-skip 64 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  --section LaunchStats --section Occupancy --section InstructionStats \
  env TERN_CUDA_ATT_Q8W_B=4 $B/tern bench --synthetic llama3-8b --device cuda -p 0 -n 4 -d 32768 -ctk q8_0 -ctv q8_0 -r 1 > $R/ncu-v5-b4.txt 2>&1
echo "ncu rc=$?"; grep -E "Duration|DRAM Throughput|L1/TEX Cache|Compute \(SM\)|Issued Warp|No Eligible|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Executed Ipc" $R/ncu-v5-b4.txt | head -14
grep -E "^ +(OPT|WRN).*stall|cycles being stalled" $R/ncu-v5-b4.txt | head -6
cd $B
for d in 32768 8192; do
  TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 64 -d $d -r 1 -ctk q8_0 -ctv q8_0" OUT=$R/ab$d-q8 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-b4 $B/tern-w12 > $R/ab$d-q8.md
done
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2 -ctk q8_0 -ctv q8_0" OUT=$R/ab0-q8 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-b4 $B/tern-w12 > $R/ab0-q8.md
cat $R/ab32768-q8.md $R/ab8192-q8.md $R/ab0-q8.md | grep -v "^|---" | awk -F'|' '{print $3, $4, $6}'
cd /; tar czf $OUT/r47.tgz -C $OUT r47; rm -rf $R
