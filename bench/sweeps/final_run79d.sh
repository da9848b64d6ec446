# box (1 GPU): the README's performance table on the final binary (bench/perf_table.sh)
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp /tmp/b79/tern ./tern
R=$OUT/r79d; mkdir -p $R
OUT=$R bash bench/perf_table.sh 2>&1 | tail -25
cd /; tar czf $OUT/r79d.tgz -C $OUT r79d; rm -rf $R
