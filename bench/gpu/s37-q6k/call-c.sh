#!/usr/bin/env bash
# session 37 call c: (1) build + gpu_multi (the Q6_K twin's 16-dp4a plane sums: same bits) + gpu_hmma checks;
# (2) the f16 order's K split re-swept under the CTA-private merge: gpu_hmma --sweep-only at the rule, --splits 8, 2;
# (3) ncu source counters of gemm_hb_k at m = 1 (gate|up, o): where its warps stall;
# (4) the Q6_K change as a twin A/B on a Q4_0 file with a Q6_K head (f16 order) and Q4_K_M (chunk order), 1/16/64.
set -u
R=$OUT; P=$PWD/.box/sys; T0=$(date +%s); L=/tmp/s37c; mkdir -p $L
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a $R/log.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee -a $R/log.txt
OUT=$L/chk PCRE=$P HMMA_TIMEOUT=200 bash bench/gpu_check.sh build multi hmma >/dev/null 2>&1; cat $L/chk/summary.txt | tee -a $R/log.txt; el build+checks
export LD_LIBRARY_PATH=$P/lib
for sp in 0 8 2; do
  a=""; [ $sp = 0 ] || a="--splits $sp"
  timeout 120 build-cuda/gpu/gpu_hmma --sweep-only $a > $R/sweep-s$sp.txt 2>&1; el "sweep splits $sp"
done
for c in 4096:28672 4096:4096; do
  IFS=: read -r ni no <<<"$c"
  timeout 120 ncu --clock-control none -k regex:gemm_hb_k --launch-skip 20 --launch-count 1 --section SourceCounters \
    --section WarpStateStats --section SpeedOfLight --section Occupancy -o $L/hb-$no -f build-cuda/gpu/gpu_hmma --one $ni $no 1 10 > $R/ncu-hb-$no.log 2>&1
  ncu -i $L/hb-$no.ncu-rep --page details > $R/ncu-hb-$no-details.txt 2>&1
  ncu -i $L/hb-$no.ncu-rep --page source --csv --print-source sass > $R/ncu-hb-$no-src.csv 2>&1
  el "ncu $no"
done
d=/tmp/tern_synth; mkdir -p $d
INC="-Iinclude -Isrc/core -Isrc/format -Isrc/model -Isrc/runtime -Isrc/backend -Isrc/backend/cpu -Isrc/backend/cuda -Isrc/text -Isrc/server"
cp tern /tmp/tern_n; rm -rf build-o; cp -a build-cuda build-o
nvcc -O3 -lineinfo -arch=sm_90 -std=c++17 $INC -c .box/calls/gemv_dp4a_old.cu -o build-o/backend/cuda/gemv_dp4a.o
rm -f build-o/libtern.a; make CUDA=1 BUILD=build-o BUILD_STAMP=build-o/.stamp CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 tern >$L/build-o.log 2>&1
cp tern /tmp/tern_o; cp /tmp/tern_n tern; cmp -s /tmp/tern_o /tmp/tern_n && echo "TWIN SAME BINARY" | tee -a $R/log.txt; el twin
./tern synth --arch llama3-8b --type q8_0 --layers 32 -o $d/l8-q8_0.gguf >/dev/null
./tern quantize $d/l8-q8_0.gguf $d/l8-Q4_0.gguf Q4_0 --allow-requantize --threads 16 >/dev/null 2>&1; el files
for r in 1 2; do for a in o n; do
  /tmp/tern_$a bench -m $d/l8-Q4_0.gguf --device cuda --parallel 1,16,64 -p 512 -n 128 -r 1 --receipt $R/Q4_0-$a-$r.json \
    2>/dev/null | grep -E '^\|  *512 ' | cut -c1-100 | sed "s/^/r$r Q4_0 $a /" | tee -a $R/ab.md
done; done; el "bench Q4_0 mix"
./tern quantize $d/l8-q8_0.gguf $d/l8-Q4_K_M.gguf Q4_K_M --allow-requantize --threads 16 >/dev/null 2>&1; el files2
for r in 1 2; do for a in o n; do
  /tmp/tern_$a bench -m $d/l8-Q4_K_M.gguf --device cuda --parallel 1,16,64 -p 512 -n 128 -r 1 --receipt $R/Q4_K_M-$a-$r.json \
    2>/dev/null | grep -E '^\|  *512 ' | cut -c1-100 | sed "s/^/r$r Q4_K_M $a /" | tee -a $R/ab.md
done; done; el "bench Q4_K_M"
