#!/usr/bin/env bash
# session 51 call A (prepared in session 50): on an H200, issue 26's receipt under eba263d's defaults: bench/gpu_check.sh parallel
# batch (tern bench --parallel 1,4,16,64 interleaved with llama-batched-bench, q4_0 q8_0 q4_k, two rounds; gpu_batch).
# The peer: llama.cpp of 2026-10-01 built on the dev machine (shared/peers' cmake line + -DBUILD_SHARED_LIBS=OFF,
# CMAKE_CUDA_ARCHITECTURES=90-real), llama-batched-bench stripped, carried xz'd (.box/lcpb/lbb.xz).
# On an H100: .box/calls/s51b.sh instead.
set -u
cd "$(dirname "$0")/../.."
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
O=${OUT:-/tmp/o}; mkdir -p $O
if ! echo "$card" | grep -q H200; then echo "card: $card -> s51b"; exec bash .box/calls/s51b.sh; fi
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s51a; mkdir -p $L /tmp/lcpp/build/bin
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $L/log.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee -a $L/log.txt
sha256sum .box/lcpb/lbb.xz | tee -a $L/log.txt
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('.box/lcpb/lbb.xz'), open('/tmp/lcpp/build/bin/llama-batched-bench','wb'))"
chmod +x /tmp/lcpp/build/bin/llama-batched-bench
/tmp/lcpp/build/bin/llama-batched-bench --version 2>&1 | tail -3 | tee -a $L/log.txt
git log -1 --format='tree of %h' 2>/dev/null | tee -a $L/log.txt
el peer
( sleep ${WD:-565}; cp $L/parallel_peer.md $L/parallel_peer.json $L/summary.txt $L/log.txt $R/ 2>/dev/null ) &
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 tern build-cuda/gpu/gpu_batch >$L/build.log 2>&1 || { tail -20 $L/build.log; exit 1; }
el built
OUT=$L PCRE=$P bash bench/gpu_check.sh parallel batch >$L/gpu_check.log 2>&1
el done; cat $L/summary.txt
cat $L/parallel_peer.md
cp $L/parallel_peer.md $L/parallel_peer.json $L/summary.txt $L/log.txt $R/
