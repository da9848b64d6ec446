# box (1 GPU), three calls back to back (`bash spec_run60.sh 1|2|3`; the default model in thirds): the final
# code's speculative checks on CUDA: t_spec.sh (speculative == plain byte for byte: gate off at depths 1/4/8,
# the cost gate, the window gate, --draft-min with the cost gate) and tern ab plain vs the cost gate on prose
# and the summary (tokens must MATCH).
export LD_LIBRARY_PATH=$PWD/.carry/lib
for f in .carry/model.part.* .carry/bin_t.txz; do [ -f $f ] && cp $f /tmp/; done
[ "$1" = 3 ] || { ls /tmp/model.part.*; exit 0; }
cat /tmp/model.part.00 /tmp/model.part.01 /tmp/model.part.02 > /tmp/model.gguf; md5sum /tmp/model.gguf
mkdir -p models && cp /tmp/model.gguf models/SmolLM2-135M-Instruct.Q4_1.gguf
tar xJf /tmp/bin_t.txz -C .
R=$OUT/r60; mkdir -p $R
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
DEVICE=cuda timeout 240 bash tests/t_spec.sh > $R/t_spec_cuda.log 2>&1; echo "t_spec cuda rc=$? $(tail -1 $R/t_spec_cuda.log)"
grep FAIL $R/t_spec_cuda.log | head -5
for p in prose:128 summary:256; do
  n=${p#*:}; p=${p%:*}
  timeout 100 ./tern ab -m $M --a "--device cuda" --b "--device cuda --spec-lookup --draft-max 8" -r 3 -p bench/spec/${p}_prompt.txt -n $n --receipt $R/ab-cost-$p.json > $R/ab-cost-$p.txt 2>&1
  echo "$p plain vs cost rc=$? $(grep -E 'decode +[AB]|tokens:' $R/ab-cost-$p.txt | tr '\n' ' ')"
done
cd /; tar czf $OUT/r60.tgz -C $OUT r60; rm -rf $R
