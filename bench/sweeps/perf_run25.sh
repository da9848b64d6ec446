# box (1 GPU): the README table (bench/perf_table.sh) with the session's last binary (7139085)
export LD_LIBRARY_PATH=$PWD/.carry/lib
tar xJf .carry/bin.txz -C .
R=$OUT/r25; mkdir -p $R
OUT=$R/perf REPS=3 timeout 300 bash bench/perf_table.sh > $R/perf.md 2> $R/perf.err; echo "perf rc=$?"; cat $R/perf.md
cd /; tar czf $OUT/r25.tgz -C $OUT r25; rm -rf $R
