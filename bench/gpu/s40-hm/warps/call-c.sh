#!/usr/bin/env bash
# session 40 call c: arms 11, 12 (the f16 order by warps on mma.sync): build; gpu_hmma's checks (every arm memcmp);
# sweeps (Q4_0, Q4_K); the engine A/B TERN_HM_WARPS=0/1 at --parallel 1,2,4,8 on the synthetic Llama-3-8B
# Q4_0 and Q4_K, two rounds interleaved
set -u
# (as run; its A/B loop lacked: export LD_LIBRARY_PATH=$PWD/.box/sys/lib:${LD_LIBRARY_PATH:-})
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s40c; mkdir -p $L; S=/tmp/tern_synth; mkdir -p $S
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L/log.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > $L/log.txt
( sleep ${WATCH:-380}; cd $L && tar czf $R/r.tgz . 2>/dev/null ) &
OUT=$L PCRE=$P HMMA_TIMEOUT=240 bash bench/gpu_check.sh build hmma > $L/gpu_check.log 2>&1; el checks
cat $L/summary.txt
grep -q "hmma *| PASS" $L/summary.txt || { grep -E "FAIL|differ|arm 1[12]" $L/hmma.log | head -20; cd $L && tar czf $R/r.tgz .; exit 1; }
for q in "" --q4k; do timeout 120 build-cuda/gpu/gpu_hmma --sweep-only $q > $L/sweep${q:-q4_0}.txt 2>&1; el "sweep $q"; done
for ty in q4_0 q4_k; do
  f=$S/llama3-8b-$ty-L32.gguf; [ -s $f ] || ./tern synth --arch llama3-8b --type $ty --layers 32 -o $f > /dev/null 2>&1
  for r in 1 2; do for a in 0 1; do
    TERN_HM_WARPS=$a ./tern bench -m $f --device cuda --parallel 1,2,4,8 -p 512 -n 128 -r 1 --receipt $L/ab-$ty-$a-r$r.json \
      2>$L/ab-$ty-$a-r$r.err | grep -E '^\|  *512 ' | sed "s/^/r$r $ty TERN_HM_WARPS=$a /" >> $L/ab.md
  done; done; el "ab $ty"
done
cut -c1-140 $L/ab.md; grep -h "m= 1\|m= 2\|m= 4\|m= 8\|^sweep" $L/sweep*.txt | cut -c1-250
cd $L && tar czf $R/r.tgz . 2>/dev/null
