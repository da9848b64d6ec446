# box (2 GPUs): TP = 2 on the session's final code (binaries of 1db7a24: the same code as HEAD): gpu_tp
# (TP = 2 vs TP = 1 logits and 64 greedy tokens), then 70B Q4_0 tg128 at TP = 1 and 2 (one run each).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TERN_NCCL_LIB=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
B=/tmp/b41; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r41; mkdir -p $R
cd $B
s=$(date +%s); timeout 150 ./gpu_tp > $R/tp.log 2>&1; echo "gpu_tp rc=$? $(( $(date +%s)-s ))s $(tail -1 $R/tp.log)"
grep -E 'FAIL|SKIP' $R/tp.log | head -5
for tp in 2 1; do
  s=$(date +%s)
  timeout 90 ./tern bench --synthetic llama3-70b --tp $tp -p 0 -n 128 -r 1 --receipt $R/70b-tp$tp.json > $R/70b-tp$tp.md 2> $R/70b-tp$tp.err
  echo "70b tp$tp rc=$? $(( $(date +%s)-s ))s $(grep tg128 $R/70b-tp$tp.md | cut -d'|' -f2-9)"
done
cd /; tar czf $OUT/r41.tgz -C $OUT r41; rm -rf $R
