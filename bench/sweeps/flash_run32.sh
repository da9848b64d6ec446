# box (1 GPU): prefill flash attention v4 (two m-tiles a warp) vs v3: gpu_attention (v4 == v3 bit for bit,
# both vs float64, then its timing table with v4 and v3 rows), torch SDPA on the same shapes in the same
# run (bench/sdpa_bench.py), and end to end: pp512/pp2048 interleaved TERN_CUDA_FLASH_MT=1 vs default
# (Q4_0, 2 rounds), pp32768 once each.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b32; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r32; mkdir -p $R
REPO=$PWD
timeout 240 $B/gpu_attention > $R/attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attention.log)"
grep "causal\|worst\|FAIL" $R/attention.log | head -40
timeout 200 python3 bench/sdpa_bench.py > $R/sdpa.log 2>&1; grep "D=128\|D=64" $R/sdpa.log | head -12
printf '#!/bin/sh\nTERN_CUDA_FLASH_MT=1 exec %s/tern "$@"\n' $B > $B/tern_v3; chmod +x $B/tern_v3
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 512,2048 -n 0 -r 2" OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern_v3 $B/tern | tee $R/ab.md
TYPES="q4_0" ROUNDS=1 ARGS="-p 32768 -n 0 -r 1" OUT=$R/ab32k bash $REPO/bench/bins_ab.sh $B/tern_v3 $B/tern | tee $R/ab32k.md
cd /; tar czf $OUT/r32.tgz -C $OUT r32; rm -rf $R
