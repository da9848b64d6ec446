#!/usr/bin/env bash
# session 36 call d: round 2 of s36c's A/B (the warm box's build-o and files), reversed order; binaries in /tmp
set -u
R=$OUT; P=$PWD/.box/sys; d=/tmp/tern_synth; export LD_LIBRARY_PATH=$P/lib
[ -s build-o/libtern.a ] && [ -s $d/l8-Q4_0.gguf ] || { echo "cold box: nothing to do"; exit 3; }
cp tern /tmp/tern_n
cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc/core -Isrc/format -Isrc/model -Isrc/runtime -Isrc/backend -Isrc/backend/cpu \
  -Isrc/backend/cuda -Isrc/text -Isrc/server -DTERN_CUDA -I/usr/local/cuda/include -I$P/include -Icli \
  -DTERN_BUILD_COMMIT='"old"' cli/*.c -o /tmp/tern_o build-o/libtern.a -L$P/lib -Wl,--as-needed -lpcre2-8 -lmicrohttpd \
  -lcjson -ledit -lpthread -lm -L/usr/local/cuda/lib64 -lcublasLt -lcudart_static -ldl -lrt -lstdc++ \
  -Wl,-rpath,/usr/local/cuda/lib64 2>&1 | tail -3
for t in Q4_0 Q4_K_M; do for a in n o; do
  /tmp/tern_$a bench -m $d/l8-$t.gguf --device cuda --parallel 1,16,64 -p 512 -n 128 -r 1 --receipt $R/$t-$a-2.json \
    2>/dev/null | grep -E '^\|  *512 ' | cut -c1-100 | sed "s/^/r2 $t $a /" | tee -a $R/ab.md
done; done
