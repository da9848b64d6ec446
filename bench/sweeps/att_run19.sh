# box (1 GPU), call 1 of 2: the decode attention's combine computed once a CTA, against 846bf14 (tern_old):
# gpu_attention, the interleaved A/B, then the README table (bench/perf_table.sh) with the new binary
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b19; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r19; mkdir -p $R
S=$PWD
cd $B
timeout 150 ./gpu_attention > $R/attn.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attn.log)"
cd $S
OUT=$R/ab TYPES=q4_0 ROUNDS=2 ARGS="-p 0 -n 128 -r 2" bash bench/bins_ab.sh $B/tern_old $B/tern | tee $R/ab.md
OUT=$R/abd TYPES=q4_0 ROUNDS=2 ARGS="-p 0 -n 64 -d 8192 -r 2" bash bench/bins_ab.sh $B/tern_old $B/tern | tee $R/abd.md
cp $B/tern ./tern
OUT=$R/perf REPS=3 timeout 200 bash bench/perf_table.sh > $R/perf.md 2> $R/perf.err; echo "perf rc=$?"; cat $R/perf.md
cd /; tar czf $OUT/r19.tgz -C $OUT r19; rm -rf $R
