# box (1 GPU): the TMA GEMV's size threshold (TERN_CUDA_TMA_MIN_MB, default 48 MiB) lowered to 30 (Q4_0/Q4_K's
# down, 33 MB, joins gate|up and the head) and 12 (q|k|v, 14 MB, too), interleaved tg128, Q4_0 and Q4_K, 2 rounds
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b43; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r43; mkdir -p $R
REPO=$PWD
for mb in 30 12; do printf '#!/bin/sh\nTERN_CUDA_TMA_MIN_MB=%s exec %s/tern "$@"\n' $mb $B > $B/tern_tma$mb; chmod +x $B/tern_tma$mb; done
cd $B
TYPES="q4_0 q4_k" ROUNDS=2 OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern $B/tern_tma30 $B/tern_tma12 | tee $R/ab.md
cd /; tar czf $OUT/r43.tgz -C $OUT r43; rm -rf $R
