# box (1 GPU): ncu on the decode step's latency-bound kernels at a short context (tg at positions ~48, the
# regime of tg128): the decode attention (f16 cache), the RMSNorm, RoPE + KV write, and the O GEMV (4096 x
# 4096 Q4_0, cta family); one launch each, isolated (ncu serializes; --cache-control none keeps L2 warm).
# What costs the ~8 us a layer the skip arm priced the attention at?
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b61; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_t.txz -C $B
R=$OUT/r61; mkdir -p $R
for k in attention_split_kernel rmsnorm_k rope_kv_k gemv_q8_pipe_k; do
  timeout 120 ncu --clock-control none --cache-control none --kernel-name regex:$k --launch-skip 40 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis \
    $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 64 -r 1 > $R/ncu-$k.txt 2>&1
  echo "== $k rc=$?"; grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Compute \(SM\) Throughput|Issued Warp|No Eligible|Registers Per|Achieved Occupancy|Block Size|Grid Size|Warp Cycles Per Issued|Theoretical Occupancy" $R/ncu-$k.txt | head -16
  grep -E "^ +(OPT|WRN)" $R/ncu-$k.txt | cut -c1-200 | head -4
done
cd /; tar czf $OUT/r61.tgz -C $OUT r61; rm -rf $R
