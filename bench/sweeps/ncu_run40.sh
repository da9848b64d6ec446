# box (1 GPU): ncu on one decode attention launch at depth 32768, Q8_0 cache vs f16 (why the Q8_0 kernel
# costs ~2.5x the f16 one a byte): SpeedOfLight, warp states, scheduler, memory workload. Clocks untouched.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b40; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r40; mkdir -p $R
for kv in q8_0 f16; do
  timeout 250 ncu --clock-control none --kernel-name regex:attention_split_kernel --launch-skip 64 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section LaunchStats --section Occupancy \
    $B/tern bench --synthetic llama3-8b --device cuda -p 0 -n 4 -d 32768 -ctk $kv -ctv $kv -r 1 > $R/ncu-$kv.txt 2>&1
  echo "$kv rc=$?"; grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Issued Warp|No Eligible|Stall|Registers|Achieved Occupancy|Block Size|Grid Size|Function Name|attention_split" $R/ncu-$kv.txt | head -40
done
cd /; tar czf $OUT/r40.tgz -C $OUT r40; rm -rf $R
