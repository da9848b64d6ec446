# box (1 GPU): the default model's first third to /tmp (it travels in three calls); gpu_multi on the final
# binaries (blk_dot's load path became a template argument: every dp4a family, multi-column == single bits)
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp .carry/model.part.00 /tmp/model.part.00 && ls -la /tmp/model.part.00
B=/tmp/b79; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_z.txz -C $B
R=$OUT/r79a; mkdir -p $R
timeout 240 $B/gpu_multi > $R/gpu_multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/gpu_multi.log)"; grep FAIL $R/gpu_multi.log | head -3
cd /; tar czf $OUT/r79a.tgz -C $OUT r79a; rm -rf $R
