# box (1 GPU): v6 prefill flash attention (wgmma, sm_90a; attention_wgmma.cu) against float64 on gpu_attention's
# prefill cases (every flash version), then the causal table's v6 and v3 rows (`gpu_attention wg`), then torch
# SDPA on the same shapes in the same run (bench/sdpa_bench.py) when the cases passed.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b65; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_wg.txz -C $B
R=$OUT/r65; mkdir -p $R
timeout 300 $B/gpu_attention wg > $R/attention_wg.log 2>&1; rc=$?
echo "gpu_attention wg rc=$rc $(tail -1 $R/attention_wg.log)"
grep "FAIL" $R/attention_wg.log | head -12
grep "causal\|worst\|v6" $R/attention_wg.log | grep -v FAIL | head -20
if [ $rc = 0 ]; then timeout 240 python3 bench/sdpa_bench.py 2048 8192 32768 > $R/sdpa.log 2>&1; grep "D=128\|D=64" $R/sdpa.log | head -12; fi
cd /; tar czf $OUT/r65.tgz -C $OUT r65; rm -rf $R
