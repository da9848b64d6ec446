#!/usr/bin/env bash
# session 28, call f: the final tree (streamed form deleted): gpu_check build hmma batch model; f16 order and chunk
# order --parallel 1,4,16,64 against base 2e5ae43, one round each (expected level: gemm_hw_k unchanged)
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/cuda/bin
P=$PWD/.box/sys
export LD_LIBRARY_PATH=$P/lib
S=/tmp/tern_synth; mkdir -p $S
t0=$(date +%s)
rm -rf /tmp/base && mkdir -p /tmp/base && tar xzf .box/base-2e5ae43.tgz -C /tmp/base
(cd /tmp/base && make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j6 tern >$OUT/build-base.log 2>&1; echo "base build rc $? $(( $(date +%s) - t0 )) s") &
PCRE=$P OUT=$OUT/chk bash bench/gpu_check.sh build hmma batch model >$OUT/checks.log 2>&1; echo "checks rc $? $(( $(date +%s) - t0 )) s"
tail -16 $OUT/checks.log
[ -s $S/l8q4_0.gguf ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $S/l8q4_0.gguf >$OUT/synth8.log 2>&1
wait
for o in 2 1; do for b in tree base; do
  bin=./tern; [ $b != tree ] && bin=/tmp/$b/tern
  TERN_GEMV_CHUNK=$o timeout 200 $bin bench -m $S/l8q4_0.gguf --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 --receipt $OUT/par-o$o-$b-r1.json >$OUT/par-o$o-$b-r1.txt 2>&1
  echo "order$o $b: $(grep -E '^\|   512' $OUT/par-o$o-$b-r1.txt | awk -F'|' '{printf "B=%s %s  ", $4, $9}') $(( $(date +%s) - t0 )) s"
done; done
cd $OUT && tar czf s28f.tgz $(find . -type f \( -name '*.txt' -o -name '*.log' -o -name '*.json' -o -name '*.md' \) | grep -v '\.tgz') && find . -type f ! -name s28f.tgz -delete
