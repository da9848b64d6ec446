#!/usr/bin/env bash
# session 49 call C (any card): dev/cuda/rms_probe.cu (the RMSNorm in the cluster's order at 1..64 rows: the same bits
# on fewer threads a CTA, or without the cluster); the tree = 5026aed + s49c.diff (the combine's loads at once, the f16
# SwiGLU four elements a thread, their tests) + s49d.diff (rmsnorm_cl_k on 256 threads, two elements each): all the
# same bits. Built on the box as "full"; gpu_ops, gpu_hmma, gpu_fused, gpu_attention, gpu_batch run on it while
# "mid" (s49d reversed) and "base" (both reversed: 5026aed's src) are rebuilt; then bench/bins_ab.sh base mid full,
# tern bench --parallel 1,4,16,64 -p 512 -n 128 -r 1 on the synthetic Llama-3-8B Q4_0, two rounds interleaved.
set -u
cd "$(dirname "$0")/../.."
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
P=$PWD/.box/sys
O=${OUT:-/tmp/o}; mkdir -p $O; L=/tmp/s49c; mkdir -p $L
( sleep 570; cp $L/log.txt $O/ 2>/dev/null ) &
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $L/log.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee -a $L/log.txt
[ -x /tmp/rms_probe ] || nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o /tmp/rms_probe dev/cuda/rms_probe.cu
[ -s $O/rms_probe.md ] || /tmp/rms_probe >$O/rms_probe.md 2>&1; cat $O/rms_probe.md; el probe
# the changes on the tree (a call may come with them stashed: then applied here)
for d in c d; do
  if patch -R -p1 --dry-run -s <.box/calls/s49$d.diff >/dev/null 2>&1; then el "tree has s49$d"
  else patch -p1 -s <.box/calls/s49$d.diff || { echo "FAIL: s49$d.diff applies neither way"; exit 1; }; el "s49$d applied"; fi
done
mk() { make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 "$@"; }
mk tern build-cuda/gpu/gpu_ops build-cuda/gpu/gpu_hmma build-cuda/gpu/gpu_fused build-cuda/gpu/gpu_attention \
  build-cuda/gpu/gpu_batch >$L/build.log 2>&1 || { tail -20 $L/build.log; exit 1; }
cp tern /tmp/tern.full; mkdir -p /tmp/gt; cp build-cuda/gpu/gpu_{ops,hmma,fused,attention,batch} /tmp/gt/; el built
mkdir -p /tmp/tern_synth; f=/tmp/tern_synth/llama3-8b-q4_0-L32.gguf; fb=/tmp/tern_synth/llama3.2-1b-q4_0-L4.gguf
[ -s $fb ] || ./tern synth --arch llama3.2-1b --type q4_0 --layers 4 -o $fb >/dev/null 2>&1
sp=0; [ -s $f ] || { ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $f >/dev/null 2>&1 & sp=$!; }
( for t in gpu_ops gpu_hmma gpu_fused gpu_attention; do /tmp/gt/$t >$L/$t.log 2>&1; echo "$t rc=$? $(tail -1 $L/$t.log | cut -c1-120)"; done
  /tmp/gt/gpu_batch $fb f16 >$L/gpu_batch.log 2>&1; echo "gpu_batch f16 rc=$? $(grep -E '^8 sequences' $L/gpu_batch.log | cut -c1-100)"
  grep -h -m3 FAIL $L/gpu_*.log | cut -c1-200 ) >$O/tests.txt 2>&1 &
tp=$!
# lean (device time): base = both diffs reversed; no "mid" binary (the RMSNorm's part is read from the probe)
patch -R -p1 -s <.box/calls/s49d.diff && patch -R -p1 -s <.box/calls/s49c.diff && mk tern >$L/build3.log 2>&1 && cp tern /tmp/tern.base || { tail $L/build3.log; exit 1; }
patch -p1 -s <.box/calls/s49c.diff; patch -p1 -s <.box/calls/s49d.diff; el "base built"
[ $sp != 0 ] && wait $sp; wait $tp; cat $O/tests.txt; el tests
OUT=/tmp/ab TYPES=q4_0 ROUNDS=2 ARGS="--parallel 1,16,64 -p 512 -n 128 -r 1" MODEL=/tmp/tern_synth/llama3-8b-%s-L32.gguf \
  bash bench/bins_ab.sh /tmp/tern.base /tmp/tern.full | tee $O/ab.md
el done
cp $L/log.txt $O/
