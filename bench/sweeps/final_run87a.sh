# box (1 GPU): the default model's first third to /tmp; gpu_multi on this session's final binaries with the
# default S = 1 pipe GEMV (its source took the sub-CTA arm's tid / grid arguments)
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp .carry/model.part.00 /tmp/model.part.00 && ls -la /tmp/model.part.00
B=/tmp/b87; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_d.txz -C $B
R=$OUT/r87a; mkdir -p $R
timeout 240 $B/gpu_multi > $R/gpu_multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/gpu_multi.log)"; grep FAIL $R/gpu_multi.log | head -3
cd /; tar czf $OUT/r87a.tgz -C $OUT r87a; rm -rf $R
