#!/usr/bin/env bash
# session 48 call G: gpu_batch of 630fdae under its rule (bench/gpu_check.sh batch); ./tern and build-cuda/gpu from call F
set -u
cd "$(dirname "$0")/../.."
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
O=${OUT:-/tmp/o}; mkdir -p $O
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "card: $card" | tee $O/card.txt
t0=$(date +%s)
if [ ! -x build-cuda/gpu/gpu_batch ] || [ ! -x ./tern ]; then
  mkdir -p /tmp/pk && xz -dc .box/pk48/pk.tar.xz | tar xf - -C /tmp/pk && cp /tmp/pk/tern_new ./tern && mkdir -p build-cuda/gpu && cp /tmp/pk/gpu_ops /tmp/pk/gpu_batch build-cuda/gpu/
fi
./tern --version
OUT=$O PCRE=$PWD/.box/sys bash bench/gpu_check.sh batch 2>&1 | tail -20
for l in $O/batch*.log; do echo "$(basename $l): $(grep -E ': [0-9]+ passed, [0-9]+ failed' $l | tail -1)"; done | tee $O/batch.md
echo "batch $(( $(date +%s) - t0 )) s"
