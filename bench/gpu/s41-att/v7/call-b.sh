#!/usr/bin/env bash
# session 41 call b: v7 (the decode attention on the tensor cores, TERN_ATT_TC): build; gpu_attention (v2's checks
# again under the arm, v7's times); gpu_batch f16 tc on the 4-layer Llama-3.2-1B Q4_0 (hd 64); the engine A/B
# TERN_ATT_TC=0|1 tern bench --parallel 1,4,16,64 -p 512 -n 128 on the synthetic Llama-3-8B Q4_0, two rounds interleaved
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s41b; mkdir -p $L; S=/tmp/tern_synth; mkdir -p $S
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L/log.txt; }
export LD_LIBRARY_PATH=$P/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > $L/log.txt
( sleep ${WATCH:-500}; cd $L && tar czf $R/r.tgz . 2>/dev/null ) &
OUT=$L PCRE=$P bash bench/gpu_check.sh build > $L/gpu_check.log 2>&1; el "built: $(cat $L/summary.txt 2>/dev/null | head -3)"
f8=$S/llama3-8b-q4_0-L32.gguf; ( [ -s $f8 ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $f8 > $L/synth8.log 2>&1 ) &
sp=$!
timeout 300 build-cuda/gpu/gpu_attention > $L/attn.log 2>&1; el "attn rc=$?: $(tail -1 $L/attn.log)"
grep -E "^FAIL|v7|decode attention n=|v7's" $L/attn.log | head -40 >> $L/log.txt
f=$S/llama3.2-1b-q4_0-L4.gguf; [ -s $f ] || ./tern synth --arch llama3.2-1b --type q4_0 --layers 4 -o $f > /dev/null 2>&1
timeout 90 build-cuda/gpu/gpu_batch $f f16 tc > $L/batch-f16-tc.log 2>&1; el "batch f16 tc rc=$?: $(grep -c FAIL $L/batch-f16-tc.log) FAIL; $(tail -1 $L/batch-f16-tc.log)"
wait $sp; el synth8
for r in 1 2; do for a in 0 1; do
  TERN_ATT_TC=$a ./tern bench -m $f8 --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 --receipt $L/ab-$a-r$r.json \
    2>$L/ab-$a-r$r.err | grep -E '^\|  *512 ' | sed "s/^/r$r TERN_ATT_TC=$a /" >> $L/ab.md
done; el "ab round $r"; done
cat $L/log.txt; cut -c1-160 $L/ab.md
cd $L && tar czf $R/r.tgz . 2>/dev/null
