# box (1 GPU): v6b at hd 256 with 64-key blocks (the default; the switch's default now runs plain v6b there) vs an
# 80-key build (TERN_WG256_BN=80, m64n80k16; the same source otherwise): `gpu_attention wg` for each (the prefill
# cases vs float64, the dispatcher's choice, the causal table), then torch SDPA on the same shapes
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b89; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_w2.txz -C $B
R=$OUT/r89; mkdir -p $R
for v in gpu_attention gpu_attention80; do
  timeout 280 $B/$v wg > $R/$v-wg.log 2>&1; echo "$v wg rc=$? $(tail -1 $R/$v-wg.log)"
  grep "FAIL" $R/$v-wg.log | head -5
  grep "D=256" $R/$v-wg.log | grep causal
done
grep "causal" $R/gpu_attention-wg.log | grep -E "D=(64|128) v6b pp\+iw  " | head -6
timeout 240 python3 bench/sdpa_bench.py 2048 8192 32768 > $R/sdpa.log 2>&1; grep "cudnn" $R/sdpa.log | head -12
cd /; tar czf $OUT/r89.tgz -C $OUT r89; rm -rf $R
