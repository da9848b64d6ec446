#!/usr/bin/env bash
# session 49 call B: on an H200, issue 26's receipt under today's defaults (5026aed): bench/gpu_check.sh build parallel
# batch (tern bench --parallel 1,4,16,64 interleaved with llama-batched-bench, q4_0 q8_0 q4_k, two rounds; gpu_batch).
# The peer: llama.cpp of 2026-10-01 built on the dev machine (shared/peers' cmake line + -DBUILD_SHARED_LIBS=OFF,
# CMAKE_CUDA_ARCHITECTURES=90-real), llama-batched-bench stripped, carried xz'd (.box/lcpb/lbb.xz).
# Both: dev/cuda/rms_probe.cu first ($OUT/rms_probe.md). On an H100: session 49 call C instead (.box/calls/s49c.sh).
set -u
cd "$(dirname "$0")/../.."
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
O=${OUT:-/tmp/o}; mkdir -p $O
nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o /tmp/rms_probe dev/cuda/rms_probe.cu && /tmp/rms_probe >$O/rms_probe.md 2>&1; cat $O/rms_probe.md
if ! echo "$card" | grep -q H200; then echo "card: $card -> s49c"; exec bash .box/calls/s49c.sh; fi
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
# the receipt on 5026aed's code: this session's uncommitted diffs reversed where the tree has them
for d in d c; do patch -R -p1 --dry-run -s <.box/calls/s49$d.diff >/dev/null 2>&1 && patch -R -p1 -s <.box/calls/s49$d.diff && echo "s49$d reversed"; done
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s49b; mkdir -p $L /tmp/lcpp/build/bin
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $L/log.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee -a $L/log.txt
sha256sum .box/lcpb/lbb.xz | tee -a $L/log.txt
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('.box/lcpb/lbb.xz'), open('/tmp/lcpp/build/bin/llama-batched-bench','wb'))"
chmod +x /tmp/lcpp/build/bin/llama-batched-bench
/tmp/lcpp/build/bin/llama-batched-bench --version 2>&1 | tail -3 | tee -a $L/log.txt
git log -1 --format='tree of %h' 2>/dev/null | tee -a $L/log.txt
el peer
( sleep 565; cp $L/parallel_peer.md $L/parallel_peer.json $L/summary.txt $L/log.txt $R/ 2>/dev/null ) &
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 tern build-cuda/gpu/gpu_batch >$L/build.log 2>&1 || { tail -20 $L/build.log; exit 1; }
el built
OUT=$L PCRE=$P bash bench/gpu_check.sh parallel batch >$L/gpu_check.log 2>&1
el done; cat $L/summary.txt
cat $L/parallel_peer.md
cp $L/parallel_peer.md $L/parallel_peer.json $L/summary.txt $L/log.txt $R/
