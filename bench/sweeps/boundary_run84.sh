# box (1 GPU): `tern roofline --device cuda` ceilings twice (the boundary rows: does a kernel boundary's cost
# follow the CTA count or the thread count? 1056x128 is the dp4a pipe GEMV's grid)
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b84; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_c.txz -C $B
R=$OUT/r84; mkdir -p $R
for i in 1 2; do
  timeout 120 $B/tern roofline --device cuda -o md > $R/roofline-$i.md 2>$R/roofline-$i.err; echo "roofline $i rc=$?"
  grep -E "boundary|barrier" $R/roofline-$i.md | cut -d'|' -f2-3
done
cd /; tar czf $OUT/r84.tgz -C $OUT r84; rm -rf $R
