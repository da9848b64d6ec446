#!/usr/bin/env bash
# session 40 call a: keep the peer's first part in /tmp; build (gpu_check build: tern + GPU tests), then hmbulk
# (TERN_HM_BULK=1 vs 0 on q8_0 q4_k q4_k_m, --parallel 1,4,8,16,32,64, two rounds)
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s40a; mkdir -p $L
cp .box/lcpa/lbb.xz.aa /tmp/lbb.xz.aa 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > $L/gpu.txt
( sleep ${WATCH:-560}; cd $L && tar czf $R/r.tgz hmbulk.md summary.txt gpu.txt hmbulk-*.json gpu_check.log mma_bits.txt 2>/dev/null ) &
( /usr/local/cuda/bin/nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o /tmp/mma_bits dev/cuda/mma_bits.cu && /tmp/mma_bits 2048 ) > $L/mma_bits.txt 2>&1
echo "[$(( $(date +%s) - T0 )) s] probe"; cat $L/mma_bits.txt
OUT=$L PCRE=$P HMBULK_TYPES="${HMBULK_TYPES:-q8_0 q4_k q4_k_m}" bash bench/gpu_check.sh build hmbulk > $L/gpu_check.log 2>&1
echo "[$(( $(date +%s) - T0 )) s] done" >> $L/gpu_check.log
cat $L/gpu.txt $L/summary.txt; cut -c1-160 $L/hmbulk.md
cd $L && tar czf $R/r.tgz hmbulk.md summary.txt gpu.txt hmbulk-*.json gpu_check.log mma_bits.txt 2>/dev/null
