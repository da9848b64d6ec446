# box (1 GPU), right after run30 on the same box: gpu_multi (m columns == 1 column bit for bit) on the
# binary of the RoPE epilogue's second version (the plain kernels gained an unused argument)
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b31; rm -rf $B; mkdir -p $B; tar xJf .carry/bin2.txz -C $B
R=$OUT/r31; mkdir -p $R
timeout 200 $B/gpu_multi > $R/multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/multi.log)"
TERN_CUDA_TMA_MIN_MB=1 timeout 200 $B/gpu_multi > $R/multi-tmarule.log 2>&1; echo "gpu_multi tma-rule rc=$? $(tail -1 $R/multi-tmarule.log)"
cd /; tar czf $OUT/r31.tgz -C $OUT r31; rm -rf $R
