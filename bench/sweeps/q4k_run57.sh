# box (1 GPU): the Q4_K header unpacked in registers (no local-memory byte array): gpu_multi (every dp4a
# family on Q4_K / Q4_KR against the CPU reference, multi == single bit for bit), then interleaved tg128 of
# the Q4_K synthetic Llama-3-8B, the binary before (c258fea) vs after, 3 rounds; Q4_0 one round (a control:
# its code did not change).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b57; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_q.txz -C $B
R=$OUT/r57; mkdir -p $R
REPO=$PWD
timeout 300 $B/gpu_multi > $R/gpu_multi.log 2>&1; echo "gpu_multi rc=$? $(tail -1 $R/gpu_multi.log)"; grep FAIL $R/gpu_multi.log | head -5
TERN_CUDA_TMA_MIN_MB=1 timeout 300 $B/gpu_multi > $R/gpu_multi-tma.log 2>&1; echo "gpu_multi (tma on every matrix) rc=$? $(tail -1 $R/gpu_multi-tma.log)"
cd $B
TYPES="q4_k" ROUNDS=3 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q4k bash $REPO/bench/bins_ab.sh $B/tern-old $B/tern > $R/ab-q4k.md
TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern-old $B/tern > $R/ab-q40.md
cat $R/ab-q4k.md $R/ab-q40.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $5, $6}'
cd /; tar czf $OUT/r57.tgz -C $OUT r57; rm -rf $R
