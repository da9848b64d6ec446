# box (1 GPU), binary of the TERN_CUDA_SKIP commit: what each decode-step kernel class costs inside the
# captured step (synthetic Llama-3-8B Q4_0, tg128), and the verify-pass cost curve (tern bench -v)
export LD_LIBRARY_PATH=$PWD/.carry/lib
[ -f .carry/model.part.aa ] && cp .carry/model.part.aa /tmp/m.aa
B=/tmp/b12; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B; cp .carry/bin.txz /tmp/bin13.txz
R=$OUT/r12; mkdir -p $R
cd $B
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > $R/smi.txt 2>&1
for arm in base norm rope att swiglu qkv o gu down norm,rope,att,swiglu base2; do
  case $arm in base*) E=;; *) E="TERN_CUDA_SKIP=$arm";; esac
  env $E timeout 60 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 128 -r 3 --receipt $R/skip-$arm.json > $R/skip-$arm.md 2> $R/skip-$arm.err
  echo "skip $arm rc=$? $(grep tg128 $R/skip-$arm.md | cut -d'|' -f8)"
done
for d in 0 2048; do
  timeout 90 ./tern bench --synthetic llama3-8b --device cuda -p 0 -n 32 -v 1,2,3,4,5,6,8,10,12,16 -d $d -r 3 --receipt $R/vr-8b-d$d.json > $R/vr-8b-d$d.md 2> $R/vr-8b-d$d.err
  echo "vr d$d rc=$?"; grep -E "tg32|ms a verify" $R/vr-8b-d$d.md
done
tar czf $OUT/r12.tgz -C $OUT r12; rm -rf $R
