# box (1 GPU): the README's table at the session's final code (`bench/perf_table.sh`), receipts to $OUT.
export LD_LIBRARY_PATH=$PWD/.carry/lib
tar xJf .carry/bin_p.txz -C .
mkdir -p $OUT/perf; OUT=$OUT/perf bash bench/perf_table.sh > $OUT/perf/table.md 2> $OUT/perf/table.err; echo "rc=$?"
cat $OUT/perf/table.md
cd $OUT && tar czf perf.tgz perf && rm -rf perf
