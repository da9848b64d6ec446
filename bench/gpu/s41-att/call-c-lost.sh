#!/usr/bin/env bash
# session 41 call c: build; ncu of v7 (TERN_ATT_TC=1) in a B = 64 step (where its warps wait); v7 x TERN_ATT_RPS=1024 at
# B = 1, 64 (is a CTA's time its chain of dependent loads?); TERN_HM_WARPS=0|1 on the synthetic Llama-3-8B Q8_0 and
# tern quantize's Q4_K_M mix of it at --parallel 1,2,4,8, two rounds interleaved
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s41c; mkdir -p $L; S=/tmp/tern_synth; mkdir -p $S
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L/log.txt; }
export LD_LIBRARY_PATH=$P/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > $L/log.txt
( sleep ${WATCH:-520}; cd $L && tar czf $R/r.tgz . 2>/dev/null ) &
OUT=$L PCRE=$P bash bench/gpu_check.sh build > $L/gpu_check.log 2>&1; el "built: $(head -1 $L/summary.txt)"
f4=$S/llama3-8b-q4_0-L32.gguf; f8=$S/llama3-8b-q8_0-L32.gguf; fm=$S/llama3-8b-mix-Q4_K_M-L32.gguf
( [ -s $f4 ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $f4 > /dev/null 2>&1 ) &
( [ -s $f8 ] || ./tern synth --arch llama3-8b --type q8_0 --layers 32 -o $f8 > /dev/null 2>&1
  [ -s $fm ] || ./tern quantize $f8 $fm Q4_K_M --allow-requantize --threads 16 > $L/quantize.log 2>&1 ) &
wait; el "files: $(ls -la $S | wc -l)"
TERN_ATT_TC=1 ncu -k regex:'attention_tc|attention_combine' --launch-skip 128 --launch-count 2 --section SpeedOfLight \
  --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --section MemoryWorkloadAnalysis --section SourceCounters \
  ./tern bench -m $f4 --device cuda --parallel 64 -p 512 -n 8 -r 1 > $L/ncu-tc-64.txt 2>&1; el "ncu tc 64"
for a in 0 1; do
  TERN_ATT_TC=$a TERN_ATT_RPS=1024 ./tern bench -m $f4 --device cuda --parallel 1,64 -p 512 -n 128 -r 1 \
    2>/dev/null | grep -E '^\|  *512 ' | sed "s/^/rps1024 TERN_ATT_TC=$a /" >> $L/rps.md
done; el rps
for f in $f8 $fm; do ty=$(basename $f .gguf)
  for r in 1 2; do for a in 0 1; do
    TERN_HM_WARPS=$a ./tern bench -m $f --device cuda --parallel 1,2,4,8 -p 512 -n 128 -r 1 --receipt $L/hw-$ty-$a-r$r.json \
      2>$L/hw-$ty-$a-r$r.err | grep -E '^\|  *512 ' | sed "s/^/r$r $ty TERN_HM_WARPS=$a /" >> $L/hw.md
  done; done; el "hw $ty"
done
cat $L/log.txt; grep -E '^  [a-z_]+.*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Eligible Warps|Issued Warp' $L/ncu-tc-64.txt | cut -c1-140
cut -c1-150 $L/rps.md $L/hw.md
cd $L && tar czf $R/r.tgz . 2>/dev/null
