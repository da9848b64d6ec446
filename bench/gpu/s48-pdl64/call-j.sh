#!/usr/bin/env bash
# session 48 call J: dev/cuda/hm_step.cu (built on the dev machine): the one-column step's pieces, cycles a step
set -u
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/o}; mkdir -p $O
nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tee $O/card.txt
chmod +x .box/hm/hm_step && .box/hm/hm_step | tee $O/hm_step.md
