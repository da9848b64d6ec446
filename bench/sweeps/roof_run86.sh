# box (1 GPU): `tern roofline --device cuda -m <synthetic Llama-3-8B Q4_0>` at this commit (issue 5's GEMV rows:
# the FFN matrices and the output head rotated beyond L2), the default rule and TERN_CUDA_TMA_MIN_MB=12 (every
# matrix of >= 12 MiB on the bulk-copy kernel), and the same for Q8_0
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b85; [ -x $B/tern ] || { mkdir -p $B; tar xJf .carry/bin_d.txz -C $B; }
R=$OUT/r86; mkdir -p $R
for ty in q4_0 q8_0; do
  f=/tmp/s32-$ty.gguf
  [ -s $f ] || timeout 200 $B/tern synth --arch llama3-8b --type $ty -o $f > $R/synth-$ty.log 2>&1
  timeout 150 $B/tern roofline --device cuda -m $f -o md --receipt $R/roofline-$ty.json > $R/roofline-$ty.md 2>$R/roofline-$ty.err; echo "roofline $ty rc=$?"
  TERN_CUDA_TMA_MIN_MB=12 timeout 150 $B/tern roofline --device cuda -m $f -o md --receipt $R/roofline-$ty-tma12.json > $R/roofline-$ty-tma12.md 2>$R/roofline-$ty-tma12.err; echo "roofline $ty tma12 rc=$?"
  grep -E "tcu_gemv" $R/roofline-$ty.md $R/roofline-$ty-tma12.md | cut -d'|' -f2-9
  rm -f $f
done
cd /; tar czf $OUT/r86.tgz -C $OUT r86; rm -rf $R
