# box (1 GPU): gpu_fused and the README table (bench/perf_table.sh) after the split RMSNorm was limited to
# decode-sized calls (perf_run25.sh found prefill 19% slower with it on every call)
export LD_LIBRARY_PATH=$PWD/.carry/lib
tar xJf .carry/bin.txz -C .
R=$OUT/r26; mkdir -p $R
timeout 100 ./gpu_fused > $R/fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/fused.log)"
OUT=$R/perf REPS=3 timeout 300 bash bench/perf_table.sh > $R/perf.md 2> $R/perf.err; echo "perf rc=$?"; cat $R/perf.md
cd /; tar czf $OUT/r26.tgz -C $OUT r26; rm -rf $R
