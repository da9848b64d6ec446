#!/usr/bin/env bash
# session 43 call a: build; gpu_attention (TERN_ATT_FIT's arm 4: bytes equal to the whole grid); batch (incl. "batch f16 fit")
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s43a; mkdir -p $L
export LD_LIBRARY_PATH=$P/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > $L/smi.txt
( sleep ${WATCH:-560}; cd $L && tar czf $R/r.tgz . 2>/dev/null ) &
OUT=$L PCRE=$P bash bench/gpu_check.sh build attn batch > $L/gpu_check.log 2>&1
echo "[$(( $(date +%s) - T0 )) s] done" >> $L/smi.txt
cat $L/smi.txt $L/summary.txt; grep -E 'fit|FIT|arm 4|FAIL' $L/attn.log | cut -c1-220 | head -30
grep -E 'fit|FAIL' $L/batch*.log 2>/dev/null | head -20
cd $L && tar czf $R/r.tgz . 2>/dev/null
