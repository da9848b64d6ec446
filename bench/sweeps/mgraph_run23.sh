# box, call C of 3: the default model: verify curve with and without the chunk graphs; speculative receipts
# (prompt lookup vs plain, traces on); the same speculative run with and without the graphs (tokens MATCH:
# same bits); t_spec.sh on CUDA
export LD_LIBRARY_PATH=$PWD/.carry/lib
cat /tmp/m.aa .carry/model.part.ab > /tmp/model.gguf; md5sum /tmp/model.gguf
mkdir -p models && cp /tmp/model.gguf models/SmolLM2-135M-Instruct.Q4_1.gguf && cp /tmp/b21/tern ./tern
R=$OUT/r23; mkdir -p $R
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
for gm in 0 1 0 1; do
  TERN_CUDA_GRAPH_MULTI=$gm timeout 60 ./tern bench -m $M --device cuda -p 0 -n 32 -v 1,2,4,8,16 -r 3 --receipt $R/vr-default-gm$gm.json > $R/vr-default-gm$gm.md 2>&1
  echo "default gm$gm: $(grep -E 'tg32' $R/vr-default-gm$gm.md | cut -d'|' -f8) $(grep 'ms a verify' $R/vr-default-gm$gm.md | awk '{printf "%s %s ", $1, $2}')"
done
timeout 100 ./tern ab -m $M --a "TERN_CUDA_GRAPH_MULTI=0 TERN_TRACE=1 --device cuda --spec-lookup --draft-max 8" --b "TERN_TRACE=1 --device cuda --spec-lookup --draft-max 8" -r 3 -p bench/spec/summary_prompt.txt -n 256 --receipt $R/ab-mgraph-summary.json > $R/ab-mgraph-summary.txt 2>&1
echo "mgraph summary rc=$? $(grep -E 'decode   B/A|tokens' $R/ab-mgraph-summary.txt | tr '\n' ' ')"
for p in code_edit:256 prose:128 summary:256 repeat:256; do
  n=${p#*:}; p=${p%:*}
  timeout 100 ./tern ab -m $M --a "TERN_TRACE=1 --device cuda" --b "TERN_TRACE=1 --device cuda --spec-lookup --draft-max 8" -r 3 -p bench/spec/${p}_prompt.txt -n $n --receipt $R/ab-lookup-$p.json > $R/ab-lookup-$p.txt 2>&1
  echo "$p rc=$? $(grep -E 'decode   B/A|tokens' $R/ab-lookup-$p.txt | tr '\n' ' ')"
done
DEVICE=cuda timeout 200 bash tests/t_spec.sh > $R/t_spec_cuda.log 2>&1; echo "t_spec cuda rc=$? $(tail -1 $R/t_spec_cuda.log)"
tar czf $OUT/r23.tgz -C $OUT r23; rm -rf $R
