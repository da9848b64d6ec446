#!/usr/bin/env bash
# session 43 call e (fresh box): build; at -c 4096, TERN_ATT_FIT=0 | FIT=1 | FIT=1 + TERN_ATT_ONE=1024 at depth 896-1024
# (-p 896 -n 128: ONE's longest one-split chain) and 2048-2112 (-p 2048 -n 64: 8-9 of 16 splits), --parallel 1,4,16,64,
# two rounds interleaved (the second reversed)
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s43e; mkdir -p $L
export LD_LIBRARY_PATH=$P/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > $L/smi.txt
( sleep ${WATCH:-320}; cd $L && tar czf $R/r.tgz . 2>/dev/null ) &
OUT=$L PCRE=$P bash bench/gpu_check.sh build > $L/build.out 2>&1
F=/tmp/tern_synth/llama3-8b-q4_0-L32.gguf; mkdir -p /tmp/tern_synth
[ -s $F ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $F > $L/synth.log 2>&1
f1=/tmp/tern_synth/llama3.2-1b-q4_0-L4.gguf
[ -s $f1 ] || ./tern synth --arch llama3.2-1b --type q4_0 --layers 4 -o $f1 > $L/synth1.log 2>&1
build-cuda/gpu/gpu_batch $f1 f16 fit > $L/batch-f16-fit.log 2>&1; echo "batch fit rc=$? $(tail -1 $L/batch-f16-fit.log)" >> $L/smi.txt
echo "[$(( $(date +%s) - T0 )) s] batch fit" >> $L/smi.txt
arms=("TERN_ATT_FIT=0" "TERN_ATT_FIT=1" "TERN_ATT_FIT=1 TERN_ATT_ONE=1024")
for pn in "896 128 1,4,16,64" "2048 32 1,16,64"; do set -- $pn
  for r in 1 2; do
    order="0 1 2"; [ $r = 2 ] && order="2 1 0"
    for i in $order; do
      env ${arms[$i]} ./tern bench -m $F --device cuda --parallel $3 -p $1 -n $2 -r 1 -c 4096 \
        --receipt $L/d$1-$i-r$r.json 2>$L/d$1-$i-r$r.err | grep -E "^\|  *$1 " | sed "s|^|r$r d$1 a$i |" >> $L/rows.md
    done
  done
  echo "[$(( $(date +%s) - T0 )) s] d$1" >> $L/smi.txt
done
cat $L/smi.txt $L/summary.txt; sort -k2,2 -k3,3 -k1,1 $L/rows.md | cut -c1-120
cd $L && tar czf $R/r.tgz . 2>/dev/null
