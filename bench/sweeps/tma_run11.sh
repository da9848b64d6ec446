# box (2 GPUs), binaries 49fc920: the trace counter; gpu_tp after the per-device opt-in fix (ae204cf);
# 70B Q4_0 TP = 1 / 2 (pp2048, tg128); NCCL protocol/algorithm arms on an 8B TP = 2 decode
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TERN_NCCL_LIB=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
B=/tmp/b11; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r11; mkdir -p $R
cd $B
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > $R/smi.txt 2>&1
TERN_TRACE=1 timeout 60 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 8 -r 1 > $R/trace.md 2> $R/trace.err
echo "trace rc=$?"; grep -i trace $R/trace.err | tail -2
s=$(date +%s); timeout 200 ./gpu_tp > $R/tp.log 2>&1; echo "gpu_tp rc=$? $(( $(date +%s)-s ))s $(tail -1 $R/tp.log)"
grep -E 'FAIL|SKIP' $R/tp.log | head -5
for tp in 1 2; do
  s=$(date +%s)
  timeout 170 ./tern bench --synthetic llama3-70b --tp $tp -p 2048 -n 128 -r 2 --receipt $R/70b-tp$tp.json > $R/70b-tp$tp.md 2> $R/70b-tp$tp.err
  echo "70b tp$tp rc=$? $(( $(date +%s)-s ))s"; grep -E 'pp2048|tg128' $R/70b-tp$tp.md | cut -d'|' -f2-9
done
for arm in base LL LL128 RING TREE NOCOMM; do
  case $arm in base) E=;; LL) E="NCCL_PROTO=LL";; LL128) E="NCCL_PROTO=LL128";; RING) E="NCCL_ALGO=Ring";; TREE) E="NCCL_ALGO=Tree";; NOCOMM) E="TERN_TP_NO_COMM=1";; esac
  env $E timeout 60 ./tern bench --synthetic llama3-8b --tp 2 -p 0 -n 128 -r 2 --receipt $R/8b-tp2-$arm.json > $R/8b-tp2-$arm.md 2> $R/8b-tp2-$arm.err
  echo "8b tp2 $arm rc=$? $(grep tg128 $R/8b-tp2-$arm.md | cut -d'|' -f2-9)"
done
