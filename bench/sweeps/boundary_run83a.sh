# box (1 GPU): the default model's first third to /tmp; `tern roofline --device cuda` (no model: the ceilings,
# now with the kernel-boundary and grid-barrier rows); the decode step's summed kernel time: ncu's
# gpu__time_duration of every kernel of un-captured decode steps (TERN_CUDA_GRAPH=0; ncu serializes kernels, so
# PDL overlap is gone) against the captured step's wall, synthetic Llama-3-8B Q4_0
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp .carry/model.part.00 /tmp/model.part.00 && ls -la /tmp/model.part.00
B=/tmp/b83; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_b.txz -C $B
R=$OUT/r83a; mkdir -p $R
timeout 120 $B/tern roofline --device cuda -o md > $R/roofline.md 2>$R/roofline.err; echo "roofline rc=$?"
grep -E "boundary|barrier|^\| read" $R/roofline.md
for g in 1 0; do
  TERN_CUDA_GRAPH=$g timeout 100 $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 128 -r 3 --receipt $R/tg-graph$g.json > $R/tg-graph$g.md 2>$R/tg-graph$g.err
  echo "graph=$g rc=$?"; grep tg $R/tg-graph$g.md
done
TERN_CUDA_GRAPH=0 timeout 300 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --page raw \
  --launch-skip 0 --launch-count 4000 \
  $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 12 -r 1 > $R/ncu-step.csv 2>$R/ncu-step.err
echo "ncu rc=$? $(wc -l < $R/ncu-step.csv) lines"
python3 bench/ncu_step_sum.py $R/ncu-step.csv > $R/step-sum.md 2>&1; cat $R/step-sum.md | head -40
cd /; tar czf $OUT/r83a.tgz -C $OUT r83a; rm -rf $R
