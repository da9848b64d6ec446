#!/usr/bin/env bash
# session 48 call F: 4c6a9a1 (base: PDL through 64 in the f16 order) against 630fdae (argmax one atomic a CTA, the f16
# order's SwiGLU without its f32 output): gpu_ops of 630fdae, the S_TG A/B (Q4_0 B = 1,4,16,64 two rounds interleaved,
# Q8_0 / Q4_K B = 64 one round each), a B = 64 timeline of 630fdae
set -u
cd "$(dirname "$0")/../.."
[ -d .box/sys ] || tar xJf .box/sysx/sys.tar.xz -C .box
export LD_LIBRARY_PATH=$PWD/.box/sys/lib
O=${OUT:-/tmp/o}; mkdir -p $O
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "card: $card" | tee $O/card.txt
t0=$(date +%s)
mkdir -p /tmp/pk && xz -dc .box/pk48/pk.tar.xz | tar xf - -C /tmp/pk && cp /tmp/pk/tern_new ./tern && mkdir -p build-cuda/gpu && cp /tmp/pk/gpu_ops /tmp/pk/gpu_batch build-cuda/gpu/
/tmp/pk/tern_base --version; /tmp/pk/tern_new --version
build-cuda/gpu/gpu_ops >$O/gpu_ops.log 2>&1; echo "gpu_ops: $(grep -E ': [0-9]+ passed, [0-9]+ failed' $O/gpu_ops.log | tail -1) $(( $(date +%s) - t0 )) s"
grep -E "FAIL" $O/gpu_ops.log | head -5
mkdir -p /tmp/tern_synth
syn() { local f=/tmp/tern_synth/llama3-8b-$1-L32.gguf; [ -s $f ] || ./tern synth --arch llama3-8b --type $1 --layers 32 -o $f >/dev/null 2>&1; echo $f; }
: >$O/ab.md
for r in 1 2; do
  arms="base new"; [ $r = 2 ] && arms="new base"
  for a in $arms; do f=$(syn q4_0)
    /tmp/pk/tern_$a bench -m $f --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 2>/dev/null | grep -E '^\|  *512 ' | sed "s/^/r$r q4_0 $a /" >>$O/ab.md
  done; echo "r$r $(( $(date +%s) - t0 )) s"
done
for ty in q8_0 q4_k; do f=$(syn $ty); for a in base new; do
  /tmp/pk/tern_$a bench -m $f --device cuda --parallel 64 -p 512 -n 128 -r 1 2>/dev/null | grep -E '^\|  *512 ' | sed "s/^/r1 $ty $a /" >>$O/ab.md
done; done
awk -F'|' '{print $1, $4, $9}' $O/ab.md; echo "ab $(( $(date +%s) - t0 )) s"
export TERN_CUPTI_LIB="$(ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* 2>/dev/null | head -1)"
[ -n "$TERN_CUPTI_LIB" ] || export TERN_CUPTI_LIB="$(find /usr /opt -name 'libcupti.so*' 2>/dev/null | head -1)"
f=$(syn q4_0)
TERN_TIMELINE=/tmp/tl-new-64.csv ./tern bench -m $f --device cuda --parallel 64 -p 512 -n 16 -r 1 >$O/tl-new-64.log 2>&1
python3 bench/timeline.py /tmp/tl-new-64.csv >$O/tl-new-64.md 2>>$O/tl-new-64.log
grep -E "argmax|swiglu|^\| [0-3] \|" $O/tl-new-64.md; echo "all $(( $(date +%s) - t0 )) s"
