# box (1 GPU): decode attention query heads a CTA (TERN_CUDA_ATT_QH = 1, 2 vs the rule's 4) and 8-warp CTAs
# (TERN_CUDA_ATT_WARPS=8) at tg128, where the attention costs 8.3 us a layer; then at depth 8192 (one round).
# gpu_model on the 2-layer q4_0 synth with QH 1 and 2 first (a chunk of 8 == 8 steps in each arm).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b33; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r33; mkdir -p $R
REPO=$PWD
cd $B
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
for qh in 1 2; do TERN_CUDA_ATT_QH=$qh timeout 100 ./gpu_model /tmp/s2.gguf > $R/model-qh$qh.log 2>&1; echo "gpu_model qh=$qh rc=$? $(tail -1 $R/model-qh$qh.log)"; done
for a in qh1:TERN_CUDA_ATT_QH=1 qh2:TERN_CUDA_ATT_QH=2 w8:TERN_CUDA_ATT_WARPS=8; do
  printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "${a#*:}" $B > $B/tern_${a%%:*}; chmod +x $B/tern_${a%%:*}
done
TYPES="q4_0" ROUNDS=2 OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern $B/tern_qh1 $B/tern_qh2 $B/tern_w8 | tee $R/ab.md
TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 64 -d 8192 -r 1" OUT=$R/ab8k bash $REPO/bench/bins_ab.sh $B/tern $B/tern_qh1 $B/tern_qh2 | tee $R/ab8k.md
cd /; tar czf $OUT/r33.tgz -C $OUT r33; rm -rf $R
