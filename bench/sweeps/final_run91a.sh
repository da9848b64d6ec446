# box (1 GPU): the default model's first third to /tmp; the README's performance table on the final binary
# (bench/perf_table.sh; prefill now with gate|up as one GEMM)
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp .carry/model.part.00 /tmp/model.part.00 && ls -la /tmp/model.part.00
B=/tmp/b91; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_f2.txz -C $B
cp $B/tern ./tern
R=$OUT/r91a; mkdir -p $R
OUT=$R bash bench/perf_table.sh 2>&1 | tail -25
cd /; tar czf $OUT/r91a.tgz -C $OUT r91a; rm -rf $R
