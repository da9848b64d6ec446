# box (2 GPUs): gpu_tp with the per-weight family, then 70B Q4_0 tg64 at TP = 1 and 2
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TERN_NCCL_LIB=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
B=/tmp/b9; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r9; mkdir -p $R
cd $B
timeout 240 ./gpu_tp > $R/tp.log 2>&1; echo "tp rc=$? $(tail -1 $R/tp.log)"; grep -E '^tp [0-9]: (decode|64)|SKIP' $R/tp.log | head -6
for tp in 1 2; do
  timeout 150 ./tern bench --synthetic llama3-70b --tp $tp -p 0 -n 64 -r 1 --receipt $R/tp70b-tp$tp.json > $R/tp70b-tp$tp.md 2> $R/tp70b-tp$tp.err
  echo "tp$tp rc=$? $(grep tg64 $R/tp70b-tp$tp.md | cut -d'|' -f7-9)"
done
tar czf $OUT/r9.tgz -C $OUT r9; rm -rf $R
