# box (1 GPU), call 3 of 3: the cost gate's one-token re-measure (src/speculate.c t1_contradicted) in healthy
# GPU runs on the default model: tests/t_spec.sh with DEVICE=cuda (speculative greedy == plain greedy, byte
# for byte, every drafter), then 256-token greedy runs with the cost gate (prompt lookup at draft-max 8, the
# first 12 layers at draft-max 4) on 3 prompts: the spec line (costs, gated passes, re-measures) and cmp
# against plain greedy
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b93; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_s.txz -C $B
mkdir -p models; cat /tmp/m93.part.00 /tmp/m93.part.01 .carry/m/part.02 > models/SmolLM2-135M-Instruct.Q4_1.gguf
md5sum models/SmolLM2-135M-Instruct.Q4_1.gguf
cp $B/tern ./tern
R=$OUT/r93; mkdir -p $R
DEVICE=cuda timeout 240 bash tests/t_spec.sh > $R/t_spec.log 2>&1; echo "t_spec cuda rc=$? $(tail -1 $R/t_spec.log)"; grep FAIL $R/t_spec.log | head -5
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
P1="<|im_start|>user\nList the days of the week, then the months of the year.<|im_end|>\n<|im_start|>assistant\n"
P2="def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n\ndef fibonacci(n):"
P3="<|im_start|>user\nWrite a short story about a lighthouse keeper.<|im_end|>\n<|im_start|>assistant\n"
for pi in 1 2 3; do
  eval P=\$P$pi
  ./tern run -m $M -p "$P" -n 256 --temp 0 --ignore-eos --device cuda > $R/plain-$pi.txt 2>/dev/null
  for arm in "lookup:--spec-lookup --draft-max 8" "layers:--draft-layers 12 --draft-max 4"; do
    a=${arm%%:*}
    ./tern run -m $M -p "$P" -n 256 --temp 0 --ignore-eos --device cuda ${arm#*:} > $R/$a-$pi.txt 2> $R/$a-$pi.err
    cmp -s $R/plain-$pi.txt $R/$a-$pi.txt && same=same || same=DIFFERS
    echo "p$pi $a $same | $(grep -o 'spec: .*' $R/$a-$pi.err | sed 's/spec: //')"
  done
done
cd /; tar czf $OUT/r93.tgz -C $OUT r93; rm -rf $R
