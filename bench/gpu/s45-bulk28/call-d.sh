#!/usr/bin/env bash
# session 45 call D: TERN_HM_BULK28 (Q4_0's f16-order tiles at 2..8 columns by arm 10) with and without PDL at B = 2..8:
# a no-PDL timeline of B = 4 under the arm (the kernel that ran, its durations), then envab's 4 arms x 2 rounds
set -u
cd "$(dirname "$0")/../.."
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
O=${OUT:-/tmp/o}; mkdir -p $O
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "card: $card" | tee $O/card.txt
t0=$(date +%s)
[ -n "${SKIP_BUILD:-}" ] && xz -dc .box/bin/tern.xz >./tern && chmod +x ./tern; [ -n "${SKIP_BUILD:-}" ] || make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$PWD/.box/sys/include -L$PWD/.box/sys/lib" -j16 tern >$O/build.log 2>&1 || { tail -20 $O/build.log; exit 1; }
echo "tern built $(( $(date +%s) - t0 )) s"; ldd ./tern | grep "not found"
mkdir -p /tmp/tern_synth; f=/tmp/tern_synth/llama3-8b-q4_0-L32.gguf
[ -s $f ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $f >$O/synth.log 2>&1
mkdir -p /tmp/envab; (while sleep 10; do cp /tmp/envab/envab.md $O/ 2>/dev/null; done) & cp_pid=$!
OUT=/tmp/envab PCRE=$PWD/.box/sys ENVAB_B=${EB:-1,4,8} ENVAB_ARMS="${AR:-TERN_HM_BULK28=0 TERN_HM_BULK28=1,TERN_PDL_MAX=1 TERN_HM_BULK28=1}" \
  timeout $(( ${LIMIT:-580} - ($(date +%s) - t0) )) bash bench/gpu_check.sh envab 2>&1 | tail -40
echo "envab $(( $(date +%s) - t0 )) s"
kill $cp_pid 2>/dev/null; cp /tmp/envab/envab.md $O/ 2>/dev/null
export TERN_CUPTI_LIB="$(ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* 2>/dev/null | head -1)"
for b in 4; do
  TERN_HM_BULK28=2 TERN_PDL_MAX=-1 TERN_TIMELINE=/tmp/tl-b$b.csv ./tern bench -m $f --device cuda --parallel $b -p 512 -n 16 -r 1 >$O/tl-bulk28-$b-nopdl.log 2>&1
  python3 bench/timeline.py /tmp/tl-b$b.csv >$O/tl-bulk28-$b-nopdl.md 2>>$O/tl-bulk28-$b-nopdl.log
done
unset TERN_CUPTI_LIB
echo "timeline $(( $(date +%s) - t0 )) s"
rm -f $O/synth.log; cd /tmp/envab && tar czf $O/s45d.tgz .
