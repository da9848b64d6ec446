# box (1 GPU): v6b at head dim 256 (64-key blocks): gpu_attention's prefill cases vs float64 at hd 64/128/256 and
# its causal table (`gpu_attention wg`, now with D=256 rows: v3 and v6b's modes), torch SDPA on the same shapes in
# the same run
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b88; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_w.txz -C $B
R=$OUT/r88; mkdir -p $R
timeout 400 $B/gpu_attention wg > $R/attention_wg.log 2>&1; rc=$?
echo "gpu_attention wg rc=$rc $(tail -1 $R/attention_wg.log)"
grep "FAIL" $R/attention_wg.log | head -8
grep "worst" $R/attention_wg.log
grep "causal" $R/attention_wg.log | grep -E "v3 w4|pp\+iw " | grep -v order | head -24
if [ $rc = 0 ]; then timeout 240 python3 bench/sdpa_bench.py 2048 8192 32768 > $R/sdpa.log 2>&1; grep "cudnn" $R/sdpa.log | head -12; fi
cd /; tar czf $OUT/r88.tgz -C $OUT r88; rm -rf $R
