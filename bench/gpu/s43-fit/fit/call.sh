#!/usr/bin/env bash
# session 43 call c (fresh box): build; envab TERN_ATT_FIT=0|1 at serve's -c 4096, then FIT=0 at the receipts' default
# context, --parallel 1,2,4,8,16,64, two rounds each
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s43c; mkdir -p $L/c4096 $L/c0
export LD_LIBRARY_PATH=$P/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > $L/smi.txt
( sleep ${WATCH:-560}; cd $L && tar czf $R/r.tgz . 2>/dev/null ) &
OUT=$L PCRE=$P bash bench/gpu_check.sh build > $L/build.out 2>&1
ENVAB_ARGS="-c 4096" ENVAB_ARMS="TERN_ATT_FIT=0 TERN_ATT_FIT=1" ENVAB_B=1,2,4,8,16,64 OUT=$L/c4096 PCRE=$P bash bench/gpu_check.sh envab > $L/c4096.log 2>&1
echo "[$(( $(date +%s) - T0 )) s] c4096" >> $L/smi.txt
ENVAB_ARMS="TERN_ATT_FIT=0" ENVAB_B=1,2,4,8,16,64 OUT=$L/c0 PCRE=$P bash bench/gpu_check.sh envab > $L/c0.log 2>&1
echo "[$(( $(date +%s) - T0 )) s] done" >> $L/smi.txt
cat $L/smi.txt $L/summary.txt; for d in c4096 c0; do echo "== $d"; sort -k2,2 -k3,3 -k1,1 $L/$d/envab.md | cut -c1-150; done
cd $L && tar czf $R/r.tgz . 2>/dev/null
