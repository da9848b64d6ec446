#!/usr/bin/env bash
# session 50 call B (prepared in session 49; any card): (1) the f16 order's RMSNorm at 8..16 rows: base (the tree,
# eba263d or later) / f (.box/calls/s50f.diff: rmsnorm_cs_k with C at compile time, the same bits; dev/cuda/rms_probe.cu
# had that form 0.8 us a launch faster in isolation) / fg (+ s50g.diff: no rmsnorm_cs_k, the cluster kernel on 256
# threads from 8 rows), bench/bins_ab.sh --parallel 1,8,12,16,64 two rounds, gpu_fused + gpu_batch f16 on fg;
# (2) TERN_HM_ARM=1-8:9 against the chooser at B = 1,2,4,8 on Q4_0 and Q4_K (envab, two rounds); (3) the head's shape
# (4096 x 128256) at m = 16, 32, 64 for the tiled arms (gpu_hmma --one). Stops at ~560 s with what it has.
set -u
cd "$(dirname "$0")/../.."
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
P=$PWD/.box/sys; O=${OUT:-/tmp/o}; mkdir -p $O; L=/tmp/s50b; mkdir -p $L
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $L/log.txt; }
( sleep ${WD:-560}; cp $L/log.txt $O/ 2>/dev/null ) &
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee -a $L/log.txt
mk() { make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 "$@"; }
mk tern build-cuda/gpu/gpu_hmma >$L/build.log 2>&1 || { tail -20 $L/build.log; exit 1; }
cp tern /tmp/tern.base; el "base built"
mkdir -p /tmp/tern_synth; f=/tmp/tern_synth/llama3-8b-q4_0-L32.gguf; fb=/tmp/tern_synth/llama3.2-1b-q4_0-L4.gguf
cp tern /tmp/tern.synth
sp=""; [ -s $f ] || { /tmp/tern.synth synth --arch llama3-8b --type q4_0 --layers 32 -o $f >/dev/null 2>&1 & sp="$sp $!"; }
fk=/tmp/tern_synth/llama3-8b-q4_k-L32.gguf
[ -s $fk ] || { /tmp/tern.synth synth --arch llama3-8b --type q4_k --layers 32 -o $fk >/dev/null 2>&1 & sp="$sp $!"; }
patch -p1 -s <.box/calls/s50f.diff && mk tern >$L/b2.log 2>&1 && cp tern /tmp/tern.f || { tail $L/b2.log; exit 1; }
patch -p1 -s <.box/calls/s50g.diff && mk tern build-cuda/gpu/gpu_fused build-cuda/gpu/gpu_batch >$L/b3.log 2>&1 && cp tern /tmp/tern.fg || { tail $L/b3.log; exit 1; }
el "f, fg built"; [ -n "$sp" ] && wait $sp
[ -s $fb ] || ./tern synth --arch llama3.2-1b --type q4_0 --layers 4 -o $fb >/dev/null 2>&1
( cp build-cuda/gpu/gpu_hmma /tmp/gpu_hmma.base; /tmp/gpu_hmma.base >$L/gh.log 2>&1; echo "gpu_hmma (base: the 20-row RMSNorm layout check of 2026-12-07) rc=$? $(tail -1 $L/gh.log)"
  build-cuda/gpu/gpu_fused >$L/gf.log 2>&1; echo "gpu_fused (fg) rc=$? $(tail -1 $L/gf.log)"
  build-cuda/gpu/gpu_batch $fb f16 >$L/gb.log 2>&1; echo "gpu_batch f16 (fg) rc=$? $(grep -E 'passed' $L/gb.log | tail -1)" ) | tee $O/tests.txt
el tests
OUT=/tmp/ab TYPES=q4_0 ROUNDS=2 ARGS="--parallel 1,8,12,16,64 -p 512 -n 128 -r 1" MODEL=/tmp/tern_synth/llama3-8b-%s-L32.gguf \
  bash bench/bins_ab.sh /tmp/tern.base /tmp/tern.f /tmp/tern.fg | tee $O/ab-rms.md
el "rms A/B"
patch -R -p1 -s <.box/calls/s50g.diff; patch -R -p1 -s <.box/calls/s50f.diff; cp /tmp/tern.base tern
OUT=/tmp/envab ENVAB_TYPES="q4_0 q4_k" ENVAB_B=1,2,4,8 ENVAB_ARMS="TERN_HM_ARM=0 TERN_HM_ARM=1-8:9" \
  PCRE=$P bash bench/gpu_check.sh envab >/tmp/envab.log 2>&1
cp /tmp/envab/envab.md $O/envab-hmarm9.md; awk -F'|' '{print $1, $4, $9}' $O/envab-hmarm9.md; el envab
: >$O/head-arms.md
for m in 16 32 64; do for a in -3 6 7 8 9 10; do build-cuda/gpu/gpu_hmma --one 4096 128256 $m $a >>$O/head-arms.md 2>&1; done; done
cat $O/head-arms.md; el done; cp $L/log.txt $O/
