# box: the tma arm's ncu (second layer's four GEMVs) and a budget x rows sweep of tg32 (one round each)
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b1; [ -x $B/tern ] || { mkdir -p $B; tar xJf .carry/bin.txz -C $B; }
R=$OUT/r2; mkdir -p $R
cd $B
TERN_CUDA_GRAPH=0 TERN_CUDA_DP4A_KERNEL=tma timeout 300 /usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight \
  --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats -k regex:gemv_q8 \
  --launch-skip 4 --launch-count 4 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 2 -r 1 > $R/ncu-tma.txt 2>&1
echo "ncu rc=$?"
TERN_CUDA_GRAPH=0 timeout 300 /usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight \
  --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats -k regex:gemv_q8 \
  --launch-skip 4 --launch-count 4 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 2 -r 1 > $R/ncu-cta.txt 2>&1
for kb in 48 100 200; do for rows in 2 4; do
  echo "kb=$kb rows=$rows $(TERN_CUDA_TMA_KB=$kb TERN_CUDA_DP4A_ROWS=$rows TERN_CUDA_DP4A_KERNEL=tma ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 32 -r 1 2>/dev/null | grep tg32)"
done; done
echo "cta $(./tern bench --synthetic llama3-8b --device cuda -p 0 -n 32 -r 1 2>/dev/null | grep tg32)"
cd - >/dev/null
tar czf $OUT/r2.tgz -C $OUT r2; rm -rf $R
