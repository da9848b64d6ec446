# box (1 GPU): the decode attention's K/V prefetch ring (TERN_CUDA_ATT_PF): gpu_attention (ring == plain loads
# bit for bit, f16 and Q8_0 caches; the timing table with no-pf rows), gpu_model (2-layer q4_0 synth: chunk
# of 8 == 8 steps, Q8_0-cache decode), then interleaved A/B TERN_CUDA_ATT_PF=0 vs default: tg128 (2 rounds),
# depth 8192 and 32768 with f16 and Q8_0 KV caches (1 round each).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b34; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r34; mkdir -p $R
REPO=$PWD
cd $B
timeout 200 ./gpu_attention > $R/attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attention.log)"
grep "decode pos\|FAIL" $R/attention.log | head -20
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
timeout 100 ./gpu_model /tmp/s2.gguf > $R/model.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/model.log)"
printf '#!/bin/sh\nTERN_CUDA_ATT_PF=0 exec %s/tern "$@"\n' $B > $B/tern_nopf; chmod +x $B/tern_nopf
TYPES="q4_0" ROUNDS=2 OUT=$R/ab bash $REPO/bench/bins_ab.sh $B/tern_nopf $B/tern | tee $R/ab.md
for d in 8192 32768; do
  TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 64 -d $d -r 1" OUT=$R/ab$d bash $REPO/bench/bins_ab.sh $B/tern_nopf $B/tern | tee $R/ab$d.md
  TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 64 -d $d -r 1 -ctk q8_0 -ctv q8_0" OUT=$R/ab$d-q8 bash $REPO/bench/bins_ab.sh $B/tern_nopf $B/tern | tee $R/ab$d-q8.md
done
cd /; tar czf $OUT/r34.tgz -C $OUT r34; rm -rf $R
