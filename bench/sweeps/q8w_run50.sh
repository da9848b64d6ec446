# box (1 GPU): v5's quantized-q arm (TERN_CUDA_ATT_Q8W_QQ=1: q rounded to int8 per 16-element lane slice and
# head, q.k by dp4a on the raw K; 155 registers at 8 warps, 128 at 16) with 8 / 12 / 16 warps against the
# default: gpu_attention q8 (its checks incl. the arm's error vs float64, kernel times), ncu of qq at 16 warps
# at depth 32768, interleaved tg64 at depth 32768 / 8192 and tg128 over the Q8_0 cache, 2 rounds.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b50; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
for w in 8 12 16; do printf '#!/bin/sh\nTERN_CUDA_ATT_Q8W_QQ=1 TERN_CUDA_ATT_Q8W_WARPS=%s exec %s/tern "$@"\n' $w $B > $B/tern-qq$w; chmod +x $B/tern-qq$w; done
R=$OUT/r50; mkdir -p $R
REPO=$PWD
timeout 240 $B/gpu_attention q8 > $R/attention-q8.log 2>&1; echo "gpu_attention q8 rc=$? $(tail -1 $R/attention-q8.log)"
grep -E "FAIL" $R/attention-q8.log | head -5
grep -E "^q8 decode pos (32767|8191)|quantized-q arm worst" $R/attention-q8.log
timeout 200 ncu --clock-control none --kernel-name regex:attention_q8w_kernel --launch-skip 64 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  --section LaunchStats --section Occupancy --section InstructionStats \
  env TERN_CUDA_ATT_Q8W_QQ=1 TERN_CUDA_ATT_Q8W_WARPS=16 $B/tern bench --synthetic llama3-8b --device cuda -p 0 -n 4 -d 32768 -ctk q8_0 -ctv q8_0 -r 1 > $R/ncu-v5-qq16.txt 2>&1
echo "ncu rc=$?"; grep -E "Duration|DRAM Throughput|L1/TEX Cache|Compute \(SM\)|Issued Warp|No Eligible|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Executed Ipc" $R/ncu-v5-qq16.txt | head -14
grep -E "^ +(OPT|WRN).*stall|cycles being stalled" $R/ncu-v5-qq16.txt | head -6
cd $B
for d in 32768 8192; do
  TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 64 -d $d -r 1 -ctk q8_0 -ctv q8_0" OUT=$R/ab$d-q8 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-qq8 $B/tern-qq12 $B/tern-qq16 > $R/ab$d-q8.md
done
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2 -ctk q8_0 -ctv q8_0" OUT=$R/ab0-q8 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-qq8 $B/tern-qq12 $B/tern-qq16 > $R/ab0-q8.md
cat $R/ab32768-q8.md $R/ab8192-q8.md $R/ab0-q8.md | grep -v "^|---" | awk -F'|' '{print $3, $4, $6}'
cd /; tar czf $OUT/r50.tgz -C $OUT r50; rm -rf $R
