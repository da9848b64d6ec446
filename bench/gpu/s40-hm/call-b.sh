#!/usr/bin/env bash
# session 40 call b: issue 26's receipt under today's defaults: bench/gpu_check.sh build parallel batch (tern bench
# --parallel 1,4,16,64 interleaved with llama-batched-bench on q4_0 q8_0 q4_k, two rounds; gpu_batch). The peer:
# llama.cpp of 2026-10-01 built on the dev machine (shared/peers' cmake line + -DBUILD_SHARED_LIBS=OFF,
# CMAKE_CUDA_ARCHITECTURES=90-real), llama-batched-bench only, stripped, xz in two parts (call a left /tmp/lbb.xz.aa).
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s40b; mkdir -p $L /tmp/lcpp/build/bin
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $L/log.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee -a $L/log.txt
cat /tmp/lbb.xz.aa .box/lcpb/lbb.xz.ab > /tmp/lbb.xz; sha256sum /tmp/lbb.xz | tee -a $L/log.txt
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('/tmp/lbb.xz'), open('/tmp/lcpp/build/bin/llama-batched-bench','wb'))"
chmod +x /tmp/lcpp/build/bin/llama-batched-bench
/tmp/lcpp/build/bin/llama-batched-bench --version 2>&1 | tail -3 | tee -a $L/log.txt
el peer
( sleep ${WATCH:-565}; tar czf $R/r.tgz -C /tmp s40b ) &
OUT=$L PCRE=$P bash bench/gpu_check.sh ${STEPS:-build parallel batch} >$L/gpu_check.log 2>&1
el done; cat $L/summary.txt
cat $L/parallel_peer.md
tar czf $R/r.tgz -C /tmp s40b
