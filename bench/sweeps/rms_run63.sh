# box (1 GPU): the decode RMSNorm's CTA size (TERN_CUDA_RMS_T 1024 default / 512 / 256; 16 elements a thread
# below 1024), re-derived now that 8 CTAs a row share its outputs (the 256-thread loss in the ledger was a
# single CTA doing all of it): gpu_fused (the arm's C 8 == C 1 bits, within 1e-6 of 1024), gpu_model on a
# 2-layer synth with 256 (a chunk of 8 == 8 steps), ncu of one launch each, interleaved tg128 Q4_0 (2 rounds)
# and Q8_0 (1 round) incl. 256 threads with 16 CTAs a row.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b63; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_r.txz -C $B
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w t512 "TERN_CUDA_RMS_T=512"; w t256 "TERN_CUDA_RMS_T=256"; w t256c16 "TERN_CUDA_RMS_T=256 TERN_CUDA_RMS_SPLIT=16"
R=$OUT/r63; mkdir -p $R
REPO=$PWD
timeout 200 $B/gpu_fused > $R/gpu_fused.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $R/gpu_fused.log)"; grep FAIL $R/gpu_fused.log | head -5
$B/tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
TERN_CUDA_RMS_T=256 timeout 120 $B/gpu_model /tmp/s2.gguf > $R/gpu_model-t256.log 2>&1; echo "gpu_model t256 rc=$? $(tail -1 $R/gpu_model-t256.log)"
grep -E "FAIL" $R/gpu_model-t256.log | head -3
for t in 1024 512 256; do
  TERN_CUDA_RMS_T=$t timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:rmsnorm_k --launch-skip 40 --launch-count 1 \
    --section SpeedOfLight $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 64 -r 1 > $R/ncu-rms-t$t.txt 2>&1
  echo "ncu t$t: $(grep -E '^ +Duration' $R/ncu-rms-t$t.txt | head -1)"
done
cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q40 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-t512 $B/tern-t256 $B/tern-t256c16 > $R/ab-q40.md
TYPES="q8_0" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-q80 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-t512 $B/tern-t256 > $R/ab-q80.md
cat $R/ab-q40.md $R/ab-q80.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd /; tar czf $OUT/r63.tgz -C $OUT r63; rm -rf $R
