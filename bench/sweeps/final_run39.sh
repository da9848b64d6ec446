# box (1 GPU): after the review: gpu_fused with the many-groups q|k|v shape, default and TERN_CUDA_DP4A_OCC=1
# (the epilogue's angles of a CTA's / warp's k-th group for k >= 1 and k >= 16), and gpu_attention after the
# ring's opt-in fallback (host code; the H200 takes the ring as before)
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b39; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r39; mkdir -p $R
timeout 200 $B/gpu_fused > $R/fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/fused.log)"
TERN_CUDA_DP4A_OCC=1 timeout 200 $B/gpu_fused > $R/fused-occ1.log 2>&1; echo "gpu_fused occ1 rc=$? $(tail -1 $R/fused-occ1.log)"
timeout 200 $B/gpu_attention > $R/attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attention.log)"
cd /; tar czf $OUT/r39.tgz -C $OUT r39; rm -rf $R
