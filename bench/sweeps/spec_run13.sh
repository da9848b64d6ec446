# box (1 GPU), right after skip_run12.sh (model part 1 in /tmp): the default model; speculative decoding
# receipts (tern ab, prompt lookup vs plain, traces on) and the verify curve on it; t_spec.sh on CUDA
export LD_LIBRARY_PATH=$PWD/.carry/lib
cat /tmp/m.aa .carry/model.part.ab > /tmp/model.gguf; md5sum /tmp/model.gguf
mkdir -p models && cp /tmp/model.gguf models/SmolLM2-135M-Instruct.Q4_1.gguf
tar xJf /tmp/bin13.txz -C .
R=$OUT/r13; mkdir -p $R
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
for p in code_edit:256 prose:128 summary:256 repeat:256; do
  n=${p#*:}; p=${p%:*}
  timeout 100 ./tern ab -m $M --a "TERN_TRACE=1 --device cuda" --b "TERN_TRACE=1 --device cuda --spec-lookup --draft-max 8" -r 3 -p bench/spec/${p}_prompt.txt -n $n --receipt $R/ab-lookup-$p.json > $R/ab-lookup-$p.txt 2>&1
  echo "$p rc=$?"; tail -4 $R/ab-lookup-$p.txt
done
timeout 60 ./tern bench -m $M --device cuda -p 0 -n 32 -v 1,2,4,8,16 -r 3 --receipt $R/vr-default.json > $R/vr-default.md 2>&1; grep -E "tg32|ms a verify" $R/vr-default.md
DEVICE=cuda timeout 200 bash tests/t_spec.sh > $R/t_spec_cuda.log 2>&1; echo "t_spec cuda rc=$? $(tail -1 $R/t_spec_cuda.log)"
tar czf $OUT/r13.tgz -C $OUT r13; rm -rf $R
