# box (1 GPU), three calls back to back (the default model in three thirds, split -n 3 -d, with the test
# binaries and tern; one call's carry limit): `bash spec_run55.sh 1|2|3`.
# 1: gpu_ops (tcu_argmax_rows among its cases); 2: stash; 3: the model reassembled; gpu_model on a 2-layer
# q4_0 synth (a chunk of 8 == 8 steps, tern_eval_argmax); t_spec.sh on CUDA; tern ab plain vs the cost gate
# with verify graphs captured at set-up, and TERN_SPEC_PREPARE=0 vs 1, four prompts (tokens must MATCH).
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b55; mkdir -p $B
for f in .carry/model.part.* .carry/bin_*.txz; do [ -f $f ] && cp $f /tmp/; done
case $1 in
1) tar xJf /tmp/bin_g.txz -C $B; timeout 240 $B/gpu_ops > /tmp/gpu_ops.log 2>&1; echo "gpu_ops rc=$? $(tail -1 /tmp/gpu_ops.log)"
   grep -E "FAIL" /tmp/gpu_ops.log | head -5; exit 0;;
2) ls -la /tmp/model.part.* /tmp/bin_*.txz; exit 0;;
esac
cat /tmp/model.part.00 /tmp/model.part.01 /tmp/model.part.02 > /tmp/model.gguf; md5sum /tmp/model.gguf
mkdir -p models && cp /tmp/model.gguf models/SmolLM2-135M-Instruct.Q4_1.gguf
tar xJf /tmp/bin_t.txz -C $B; cp $B/tern ./tern
R=$OUT/r55; mkdir -p $R; cp /tmp/gpu_ops.log $R/
./tern synth --arch llama3-8b --type q4_0 --layers 2 -o /tmp/s2.gguf > /dev/null 2>&1
timeout 120 $B/gpu_model /tmp/s2.gguf > $R/gpu_model-q4_0.log 2>&1; echo "gpu_model rc=$? $(tail -1 $R/gpu_model-q4_0.log)"
grep -E "FAIL|batch of" $R/gpu_model-q4_0.log | head -5
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
for p in prose:128 code_edit:256 summary:256 repeat:256; do
  n=${p#*:}; p=${p%:*}
  timeout 100 ./tern ab -m $M --a "--device cuda" --b "--device cuda --spec-lookup --draft-max 8" -r 3 -p bench/spec/${p}_prompt.txt -n $n --receipt $R/ab-cost-$p.json > $R/ab-cost-$p.txt 2>&1
  echo "$p plain vs cost rc=$? $(grep -E 'decode +[AB]|tokens:' $R/ab-cost-$p.txt | tr '\n' ' ')"
  ./tern run -m $M -f bench/spec/${p}_prompt.txt -n $n --temp 0 --ignore-eos --device cuda --spec-lookup --draft-max 8 2>&1 >/dev/null | grep -E '^spec|decode|captured' > $R/spec-cost-$p.txt
  echo "  $(cat $R/spec-cost-$p.txt | tr '\n' ' ' | cut -c1-500)"
done
timeout 100 ./tern ab -m $M --a "TERN_SPEC_PREPARE=0 --device cuda --spec-lookup --draft-max 8" --b "--device cuda --spec-lookup --draft-max 8" -r 3 -p bench/spec/prose_prompt.txt -n 128 --receipt $R/ab-prepare-prose.json > $R/ab-prepare-prose.txt 2>&1
echo "prose prepare 0 vs 1 rc=$? $(grep -E 'decode +[AB]|tokens:' $R/ab-prepare-prose.txt | tr '\n' ' ')"
DEVICE=cuda timeout 200 bash tests/t_spec.sh > $R/t_spec_cuda.log 2>&1; echo "t_spec cuda rc=$? $(tail -1 $R/t_spec_cuda.log)"
grep FAIL $R/t_spec_cuda.log | head -5
cd /; tar czf $OUT/r55.tgz -C $OUT r55; rm -rf $R
