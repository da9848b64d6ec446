#!/usr/bin/env bash
# session 28, call b: (1) TERN_ATT_RPS 256 / 128 / 64 (keys a decode-attention split; the engine's bits change, invariance
# kept) at --parallel 1,4,16,64 -p 512 -n 128, chunk order (default) and f16 order, two rounds interleaved; (2) why the
# streamed form lost: ncu --set full + SASS source page of arms 6 / 4 at m = 1 and 7 / 1 at m = 64 (down 14336x4096)
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/cuda/bin
P=$PWD/.box/sys
export LD_LIBRARY_PATH=$P/lib
S=/tmp/tern_synth; mkdir -p $S
t0=$(date +%s)
make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -j16 tern build-cuda/gpu/gpu_hmma >$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
[ -s $S/l8q4_0.gguf ] || ./tern synth --arch llama3-8b --type q4_0 --layers 32 -o $S/l8q4_0.gguf >$OUT/synth8.log 2>&1
for r in 1 2; do for o in 1 2; do for a in 256 128 64; do
  [ $o = 2 ] && [ $a = 64 ] && continue
  TERN_ATT_RPS=$a TERN_GEMV_CHUNK=$o timeout 200 ./tern bench -m $S/l8q4_0.gguf --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 --receipt $OUT/par-o$o-rps$a-r$r.json >$OUT/par-o$o-rps$a-r$r.txt 2>&1
  echo "r$r order$o rps$a: $(grep -E '^\|   512' $OUT/par-o$o-rps$a-r$r.txt | awk -F'|' '{printf "B=%s %s  ", $4, $9}') $(( $(date +%s) - t0 )) s"
done; done; done
for c in 14336:4096:1:6 14336:4096:1:4 14336:4096:64:7 14336:4096:64:1; do
  IFS=: read -r ni no mm arm <<<"$c"
  f="$OUT/prof-$ni-$no-m$mm-a$arm"
  timeout 200 ncu -o $f --set full -k regex:'gemm_h' --launch-skip 20 --launch-count 1 build-cuda/gpu/gpu_hmma --one "$ni" "$no" "$mm" "$arm" > $f.log 2>&1
  ncu -i $f.ncu-rep --page details > $f-details.txt 2>&1
  ncu -i $f.ncu-rep --page source --csv --print-source sass > $f-sass.csv 2>&1
  rm -f $f.ncu-rep
  echo "$c: $(grep -E '^ +Duration|Issue Slots Busy|Achieved Occupancy|Registers Per|DRAM Throughput' $f-details.txt | awk '{$1=$1; print}' | paste -sd ';' -) $(( $(date +%s) - t0 )) s"
done
cd $OUT && tar czf s28b.tgz * && find . -type f ! -name s28b.tgz -delete
