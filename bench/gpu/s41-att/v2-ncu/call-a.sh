#!/usr/bin/env bash
# session 41 call a: build; gpu_batch f16 on the 4-layer Llama-3.2-1B Q4_K and Q4_0 (the final tree's rule: arm 11 for
# Q4_K at 2..4 columns); then ncu of the decode attention (split kernel + combine) in a B = 64 and a B = 16 step of the
# synthetic Llama-3-8B Q4_0 (f16 order, the default of --parallel > 1)
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s41a; mkdir -p $L; S=/tmp/tern_synth; mkdir -p $S
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L/log.txt; }
export LD_LIBRARY_PATH=$P/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader > $L/log.txt
( sleep ${WATCH:-420}; cd $L && tar czf $R/r.tgz . 2>/dev/null ) &
OUT=$L PCRE=$P bash bench/gpu_check.sh build > $L/gpu_check.log 2>&1; el built
f8=$S/llama3-8b-q4_0-L32.gguf; ( [ -s $f8 ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $f8 > $L/synth8.log 2>&1 ) &
sp=$!
for ty in q4_k q4_0; do
  f=$S/llama3.2-1b-$ty-L4.gguf; [ -s $f ] || ./tern synth --arch llama3.2-1b --type $ty --layers 4 -o $f > /dev/null 2>&1
  timeout 90 build-cuda/gpu/gpu_batch $f f16 > $L/batch-f16-$ty.log 2>&1; echo "batch f16 $ty rc=$? $(grep -c FAIL $L/batch-f16-$ty.log) FAIL; $(tail -1 $L/batch-f16-$ty.log)" >> $L/log.txt
done; el batch
wait $sp; el synth8
for B in 64 16; do
  ncu -k regex:'attention_split|attention_combine' --launch-skip 128 --launch-count 2 --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
    --section MemoryWorkloadAnalysis --section SourceCounters \
    ./tern bench -m $f8 --device cuda --parallel $B -p 512 -n 8 -r 1 > $L/ncu-att-$B.txt 2>&1; el "ncu $B"
done
grep -E '^  [a-z_]+.*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps|No Eligible' $L/ncu-att-*.txt | cut -c1-160
cat $L/log.txt
cd $L && tar czf $R/r.tgz . 2>/dev/null
