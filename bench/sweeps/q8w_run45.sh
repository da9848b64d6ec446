# box (1 GPU): v5's ring depth (TERN_CUDA_ATT_Q8W_NS 2/3/4/6/8 at hd 128, 4 heads a CTA; the same bits):
# gpu_attention q8 (the stage arms memcmp'd against the default, kernel times at pos 32767 / 8191 / 127 for
# each depth and v2), then interleaved tg64 at depth 32768 / 8192 and tg128 with the Q8_0 cache over the
# arms (bench/bins_ab.sh, 2 rounds), then the whole gpu_attention (the f16 ring's opt-in helper changed).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b45; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
for ns in 2 4 6 8; do printf '#!/bin/sh\nTERN_CUDA_ATT_Q8W_NS=%s exec %s/tern "$@"\n' $ns $B > $B/tern-ns$ns; chmod +x $B/tern-ns$ns; done
R=$OUT/r45; mkdir -p $R
REPO=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $R/gpu.txt
timeout 240 $B/gpu_attention q8 > $R/attention-q8.log 2>&1; echo "gpu_attention q8 rc=$? $(tail -1 $R/attention-q8.log)"
grep -E "FAIL" $R/attention-q8.log | head -5
grep -E "^q8 decode" $R/attention-q8.log
export TERN_TRACE=1
cd $B
for d in 32768 8192; do
  TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 64 -d $d -r 1 -ctk q8_0 -ctv q8_0" OUT=$R/ab$d-q8 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-ns2 $B/tern-ns4 $B/tern-ns6 $B/tern-ns8 > $R/ab$d-q8.md
done
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2 -ctk q8_0 -ctv q8_0" OUT=$R/ab0-q8 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-ns2 $B/tern-ns4 $B/tern-ns6 $B/tern-ns8 > $R/ab0-q8.md
unset TERN_TRACE
timeout 280 $B/gpu_attention > $R/attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attention.log)"
cat $R/ab32768-q8.md $R/ab8192-q8.md $R/ab0-q8.md | grep -v "^|---" | awk -F'|' '{print $3, $4, $6}'
cd /; tar czf $OUT/r45.tgz -C $OUT r45; rm -rf $R
