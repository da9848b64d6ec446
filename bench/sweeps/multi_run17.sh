# box, call C of 3: the default model (parts joined); speculative receipts with the R-row twins (tern ab,
# prompt lookup vs plain, traces on); the verify curve on it, R = 1 vs 2; t_spec.sh on CUDA
export LD_LIBRARY_PATH=$PWD/.carry/lib
cat /tmp/m.aa .carry/model.part.ab > /tmp/model.gguf; md5sum /tmp/model.gguf
mkdir -p models && cp /tmp/model.gguf models/SmolLM2-135M-Instruct.Q4_1.gguf && cp /tmp/b15/tern ./tern
R=$OUT/r17; mkdir -p $R
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
for r in 1 2; do
  TERN_CUDA_MULTI_ROWS=$r timeout 60 ./tern bench -m $M --device cuda -p 0 -n 32 -v 1,2,4,8,16 -r 3 --receipt $R/vr-default-R$r.json > $R/vr-default-R$r.md 2>&1
  echo "default R$r: $(grep -E 'tg32' $R/vr-default-R$r.md | cut -d'|' -f8) $(grep 'ms a verify' $R/vr-default-R$r.md | awk '{printf "%s %s ", $1, $2}')"
done
for p in code_edit:256 prose:128 summary:256 repeat:256; do
  n=${p#*:}; p=${p%:*}
  timeout 100 ./tern ab -m $M --a "TERN_TRACE=1 --device cuda" --b "TERN_TRACE=1 --device cuda --spec-lookup --draft-max 8" -r 3 -p bench/spec/${p}_prompt.txt -n $n --receipt $R/ab-lookup-$p.json > $R/ab-lookup-$p.txt 2>&1
  echo "$p rc=$? $(grep -E 'decode   B/A|tokens' $R/ab-lookup-$p.txt | tr '\n' ' ')"
done
DEVICE=cuda timeout 200 bash tests/t_spec.sh > $R/t_spec_cuda.log 2>&1; echo "t_spec cuda rc=$? $(tail -1 $R/t_spec_cuda.log)"
tar czf $OUT/r17.tgz -C $OUT r17; rm -rf $R
