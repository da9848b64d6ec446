# box (1 GPU), right after run37: gpu_fused and gpu_multi on the session's final binary (d224626)
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b38; rm -rf $B; mkdir -p $B; tar xJf .carry/bin2.txz -C $B
R=$OUT/r38; mkdir -p $R
timeout 200 $B/gpu_fused > $R/fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/fused.log)"
timeout 200 $B/gpu_multi > $R/multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/multi.log)"
cd /; tar czf $OUT/r38.tgz -C $OUT r38; rm -rf $R
