# box (1 GPU): TERN_CUDA_L2PF's second form. Arms (Q4_0 synthetic Llama-3-8B, interleaved tg128, 2 rounds):
# default; the hints in the PDL chain as before but spread (4 KiB a thread, CTAs of 128: 64 CTAs for 32 MB
# where 16 KiB made 16); the hints on a stream forked off the chain after the q|k|v GEMV and joined at the
# pass's end (TERN_CUDA_L2PF_FORK=1, 8 KiB a thread, CTAs of 32) at 16 / 32 / 48 MB. Then Q8_0 and depth
# 8192 one round; the trace of the fork arm; gpu_model on a 2-layer synth with the fork arm on (bits).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b56; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_t.txz -C $B; tar xJf .carry/bin_g.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w chain32s "TERN_CUDA_L2PF=32 TERN_CUDA_L2PF_KB=4"
for mb in 16 32 48; do w fork$mb "TERN_CUDA_L2PF=$mb TERN_CUDA_L2PF_FORK=1 TERN_CUDA_L2PF_KB=8"; done
R=$OUT/r56; mkdir -p $R
REPO=$PWD
TERN_TRACE=1 $B/tern-fork32 bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 16 -r 1 > $R/trace-fork32.md 2> $R/trace-fork32.err
grep trace $R/trace-fork32.err; grep tg16 $R/trace-fork32.md
$B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
TERN_CUDA_L2PF=32 TERN_CUDA_L2PF_FORK=1 TERN_CUDA_L2PF_KB=8 timeout 120 $B/gpu_model /tmp/s2.gguf > $R/gpu_model-fork32.log 2>&1
echo "gpu_model fork32 rc=$? $(tail -1 $R/gpu_model-fork32.log)"; grep -E "FAIL" $R/gpu_model-fork32.log | head -3
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-tg128 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-chain32s $B/tern-fork16 $B/tern-fork32 $B/tern-fork48 > $R/ab-tg128.md
TYPES="q8_0" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q8 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-fork16 $B/tern-fork32 > $R/ab-q8.md
TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 64 -d 8192 -r 1 -ctk q8_0 -ctv q8_0" OUT=$R/ab-d8192 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-fork32 > $R/ab-d8192.md
cat $R/ab-tg128.md $R/ab-q8.md $R/ab-d8192.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r56.tgz -C $OUT r56; rm -rf $R
