# box, call B of 3 (right after multi_run15.sh; binaries in /tmp/b15): model part 1 to /tmp; the verify
# curve on synthetic Llama-3-8B Q8_0 (the warp family's twin) and Q4_K, R = 1 vs 2
export LD_LIBRARY_PATH=$PWD/.carry/lib
cp .carry/model.part.aa /tmp/m.aa
R=$OUT/r16; mkdir -p $R
cd /tmp/b15
for ty in q8_0 q4_k; do for r in 1 2; do
  TERN_CUDA_MULTI_ROWS=$r timeout 60 ./tern bench --synthetic llama3-8b --synthetic-type $ty --device cuda -p 0 -n 32 -v 1,2,4,8,16 -r 2 --receipt $R/vr-$ty-R$r.json > $R/vr-$ty-R$r.md 2>&1
  echo "$ty R$r: $(grep -E 'tg32' $R/vr-$ty-R$r.md | cut -d'|' -f8) $(grep 'ms a verify' $R/vr-$ty-R$r.md | awk '{printf "%s %s ", $1, $2}')"
done; done
cd /; tar czf $OUT/r16.tgz -C $OUT r16; rm -rf $R
