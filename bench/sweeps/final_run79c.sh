# box (1 GPU): the default model reassembled (md5 a1231443...) and gpu_model on it (GPU vs CPU logits, greedy
# tokens: the cluster RMSNorm at dim 576 takes C 6 CTAs of 96, and the RoPE table); the decode step's kernel
# classes priced again by leaving them out (TERN_CUDA_SKIP, outputs wrong: a timing arm), tg128 Q4_0, one run each
export LD_LIBRARY_PATH=$PWD/.carry/lib
cat /tmp/model.part.00 /tmp/model.part.01 .carry/model.part.02 > /tmp/model.gguf
echo "md5 $(md5sum /tmp/model.gguf | cut -c1-32)"
B=/tmp/b79
R=$OUT/r79c; mkdir -p $R
REPO=$PWD
timeout 200 $B/gpu_model /tmp/model.gguf > $R/gpu_model-default.log 2>&1; echo "gpu_model default rc=$? $(tail -1 $R/gpu_model-default.log)"; grep FAIL $R/gpu_model-default.log | head -3
w() { printf '#!/bin/sh\n%s exec %s/tern "$@"\n' "$2" $B > $B/tern-$1; chmod +x $B/tern-$1; }
w sk-norm "TERN_CUDA_SKIP=norm"; w sk-rope "TERN_CUDA_SKIP=rope"; w sk-att "TERN_CUDA_SKIP=att"
w sk-small "TERN_CUDA_SKIP=norm,rope,att,swiglu"; w sk-down "TERN_CUDA_SKIP=down"; w sk-gu "TERN_CUDA_SKIP=gu"; w sk-qkv "TERN_CUDA_SKIP=qkv"
cd $B
TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 128 -r 2" OUT=$R/skip bash $REPO/bench/bins_ab.sh $B/tern $B/tern-sk-norm $B/tern-sk-rope $B/tern-sk-att $B/tern-sk-small $B/tern-sk-down $B/tern-sk-gu $B/tern-sk-qkv $B/tern > $R/skip.md
grep -v "^|---" $R/skip.md | awk -F'|' '{print $4, $6}'
cd /; tar czf $OUT/r79c.tgz -C $OUT r79c; rm -rf $R
