# box (2 GPUs): gpu_tp with the per-weight family, then 70B Q4_0 tg64 at TP = 1 and 2
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TERN_NCCL_LIB=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
B=/tmp/b10; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r10; mkdir -p $R
cd $B
timeout 170 ./gpu_tp > $R/tp.log 2>&1; echo "tp rc=$? $(tail -1 $R/tp.log)"; grep -E '^tp [0-9]: (decode|64)|SKIP' $R/tp.log | head -6
tar czf $OUT/r10.tgz -C $OUT r10; rm -rf $R
