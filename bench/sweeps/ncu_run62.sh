# box (1 GPU): why the decode RMSNorm (rmsnorm_k, 8 CTAs of 1024 threads a row) takes 4.6 us isolated
# (ncu_run61: 9,163 cycles, ~584 warp instructions a warp): ncu's instruction statistics and source counters
# (SASS per line) on one launch, and its SASS from cuobjdump.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b62; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_t.txz -C $B
R=$OUT/r62; mkdir -p $R
timeout 150 ncu --clock-control none --cache-control none --kernel-name regex:rmsnorm_k --launch-skip 40 --launch-count 1 \
  --section InstructionStats --section SourceCounters --section WarpStateStats --print-details all \
  $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 64 -r 1 > $R/ncu-rms-src.txt 2>&1
echo "ncu rc=$?"; grep -E "Executed Instructions|Issued Instructions|Avg. Executed Instructions Per Scheduler|Branch Instructions|Warp Cycles Per Executed|Stall" $R/ncu-rms-src.txt | head -20
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
echo "cuobjdump: $CUOBJ"
[ -n "$CUOBJ" ] && $CUOBJ --dump-sass --function rmsnorm_k $B/tern > $R/rms.sass 2>&1
wc -l $R/rms.sass 2>/dev/null
[ -f $R/rms.sass ] && grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_]+' $R/rms.sass | awk '{print $NF}' | sort | uniq -c | sort -rn | head -25
cd /; tar czf $OUT/r62.tgz -C $OUT r62; rm -rf $R
