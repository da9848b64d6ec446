# box (1 GPU): Q8_0-cache decode attention with int8 -> f32 by PRMT + FADD (no I2F), binary e1 (this commit)
# vs e8b2f05 (I2F; its default ring covers both caches): the conversion checked exhaustively against
# (float)(int8_t) (bench/sweeps/src/i8f_check.cu, built with nvcc -arch=sm_90), gpu_attention, gpu_model,
# interleaved tg64 at depth 32768 and 8192 with the Q8_0 cache (2 rounds), f16 at 32768 (1 round: the new
# default has no ring over f16), then the README table (bench/perf_table.sh).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b36; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
R=$OUT/r36; mkdir -p $R
REPO=$PWD
cd $B
./i8f | tee $R/i8f.log
timeout 200 ./gpu_attention > $R/attention.log 2>&1; echo "gpu_attention rc=$? $(tail -1 $R/attention.log)"

# gpu_model: in the next call (run37), with gpu_fused and gpu_multi (the carry limit)
for d in 32768 8192; do
  TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 64 -d $d -r 1 -ctk q8_0 -ctv q8_0" OUT=$R/ab$d-q8 bash $REPO/bench/bins_ab.sh $B/tern_old $B/tern | tee $R/ab$d-q8.md
done
TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 64 -d 32768 -r 1" OUT=$R/ab32768 bash $REPO/bench/bins_ab.sh $B/tern_old $B/tern | tee $R/ab32768.md
cp $B/tern $REPO/tern
cd $REPO && OUT=$R/perf bash bench/perf_table.sh > $R/perf.md 2>&1; tail -25 $R/perf.md
cd /; tar czf $OUT/r36.tgz -C $OUT r36; rm -rf $R
