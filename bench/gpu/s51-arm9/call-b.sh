#!/usr/bin/env bash
# session 51 call B (prepared in session 50; any card): (1) the GPU checks of 72c427e (rmsnorm_cs_k deleted, gpu_fused's
# RMSNorm checks rewritten: not yet run on a GPU), gpu_batch f16 and plain, gpu_hmma; (2) TERN_HM_ARM=3-8:9 against the
# chooser on Q4_0 at B = 2,3,4,6,8 (envab, two rounds): session 50 had arm 9 at 1..8 +2-6% on Q4_0 at 4 and 8.
set -u
cd "$(dirname "$0")/../.."
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
P=$PWD/.box/sys; O=${OUT:-/tmp/o}; mkdir -p $O; L=/tmp/s51b; mkdir -p $L
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $L/log.txt; }
( sleep ${WD:-560}; cp $L/log.txt $O/ 2>/dev/null ) &
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee -a $L/log.txt
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 tern build-cuda/gpu/gpu_hmma build-cuda/gpu/gpu_fused build-cuda/gpu/gpu_batch >$L/build.log 2>&1 || { tail -20 $L/build.log; exit 1; }
el built
mkdir -p /tmp/tern_synth; fb=/tmp/tern_synth/llama3.2-1b-q4_0-L4.gguf; f=/tmp/tern_synth/llama3-8b-q4_0-L32.gguf
[ -s $f ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $f >/dev/null 2>&1 &
[ -s $fb ] || ./tern synth --arch llama3.2-1b --type q4_0 --layers 4 -o $fb >/dev/null 2>&1
( build-cuda/gpu/gpu_fused >$L/gf.log 2>&1; echo "gpu_fused rc=$? $(tail -1 $L/gf.log)"; grep FAIL $L/gf.log | head -3
  build-cuda/gpu/gpu_batch $fb f16 >$L/gb16.log 2>&1; echo "gpu_batch f16 rc=$? $(grep passed $L/gb16.log | tail -1)"
  build-cuda/gpu/gpu_batch $fb >$L/gb.log 2>&1; echo "gpu_batch rc=$? $(grep passed $L/gb.log | tail -1)"
  build-cuda/gpu/gpu_hmma >$L/gh.log 2>&1; echo "gpu_hmma rc=$? $(tail -1 $L/gh.log)" ) | tee $O/tests.txt
el tests; wait
OUT=/tmp/envab ENVAB_TYPES="q4_0" ENVAB_B=2,3,4,6,8 ENVAB_ARMS="TERN_HM_ARM=0 TERN_HM_ARM=3-8:9" \
  PCRE=$P bash bench/gpu_check.sh envab >/tmp/envab.log 2>&1
cp /tmp/envab/envab.md $O/envab-hmarm9-3-8.md; awk -F'|' '{print $1, $4, $9}' $O/envab-hmarm9-3-8.md; el done; cp $L/log.txt $O/
