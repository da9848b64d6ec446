# box (1 GPU), call 3 of 3 (after two calls of l2pf_run53.sh): the default model reassembled; then
# (1) TERN_CUDA_L2PF (O matrix + gate|up head hinted into L2 before RoPE + attention): proof it ran (trace),
#     interleaved tg128 of Q4_0 and Q8_0, arms 0 / 16 / 32 / 48 MB, 2 rounds; one round at depth 8192;
# (2) issue 7's cost gate: tern ab plain vs cost gate and window gate vs cost gate, prompt lookup depth 8,
#     four prompts (tokens must MATCH), and the spec line (counts, measured pass costs) of each;
# (3) t_spec.sh on CUDA (speculative == plain, byte for byte, with the gate off and on).
export LD_LIBRARY_PATH=$PWD/.carry/lib
cat /tmp/model.part.aa /tmp/model.part.ab > /tmp/model.gguf; md5sum /tmp/model.gguf
mkdir -p models && cp /tmp/model.gguf models/SmolLM2-135M-Instruct.Q4_1.gguf
B=/tmp/b54; rm -rf $B; mkdir -p $B; tar xJf .carry/bin.txz -C $B
for mb in 16 32 48; do printf '#!/bin/sh\nTERN_CUDA_L2PF=%s exec %s/tern "$@"\n' $mb $B > $B/tern-pf$mb; chmod +x $B/tern-pf$mb; done
R=$OUT/r54; mkdir -p $R
REPO=$PWD
TERN_TRACE=1 TERN_CUDA_L2PF=32 $B/tern bench --synthetic llama3-8b --synthetic-type q4_0 --device cuda -p 0 -n 16 -r 1 > $R/trace-pf32.md 2> $R/trace-pf32.err
grep trace $R/trace-pf32.err; grep tg16 $R/trace-pf32.md
cd $B
TYPES="q4_0 q8_0" ROUNDS=2 ARGS="-p 0 -n 128 -r 2" OUT=$R/ab-tg128 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-pf16 $B/tern-pf32 $B/tern-pf48 > $R/ab-tg128.md
TYPES="q4_0" ROUNDS=1 ARGS="-p 0 -n 64 -d 8192 -r 1 -ctk q8_0 -ctv q8_0" OUT=$R/ab-d8192 bash $REPO/bench/bins_ab.sh $B/tern $B/tern-pf32 > $R/ab-d8192.md
cat $R/ab-tg128.md $R/ab-d8192.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $6}'
cd $REPO; cp $B/tern ./tern
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
for p in code_edit:256 prose:128 summary:256 repeat:256; do
  n=${p#*:}; p=${p%:*}
  timeout 100 ./tern ab -m $M --a "--device cuda" --b "--device cuda --spec-lookup --draft-max 8" -r 3 -p bench/spec/${p}_prompt.txt -n $n --receipt $R/ab-cost-$p.json > $R/ab-cost-$p.txt 2>&1
  echo "$p plain vs cost rc=$? $(grep -E 'decode +B/A|tokens:' $R/ab-cost-$p.txt | tr '\n' ' ')"
  timeout 100 ./tern ab -m $M --a "--device cuda --spec-lookup --draft-max 8 --draft-gate window" --b "--device cuda --spec-lookup --draft-max 8" -r 3 -p bench/spec/${p}_prompt.txt -n $n --receipt $R/ab-window-cost-$p.json > $R/ab-window-cost-$p.txt 2>&1
  echo "$p window vs cost rc=$? $(grep -E 'decode +B/A|tokens:' $R/ab-window-cost-$p.txt | tr '\n' ' ')"
  for g in cost window; do
    ./tern run -m $M -f bench/spec/${p}_prompt.txt -n $n --temp 0 --ignore-eos --device cuda --spec-lookup --draft-max 8 --draft-gate $g 2>&1 >/dev/null | grep -E '^spec|decode' > $R/spec-$g-$p.txt
    echo "  $g: $(cat $R/spec-$g-$p.txt | tr '\n' ' ' | cut -c1-420)"
  done
done
DEVICE=cuda timeout 200 bash tests/t_spec.sh > $R/t_spec_cuda.log 2>&1; echo "t_spec cuda rc=$? $(tail -1 $R/t_spec_cuda.log)"
grep FAIL $R/t_spec_cuda.log | head -5
cd /; tar czf $OUT/r54.tgz -C $OUT r54; rm -rf $R
