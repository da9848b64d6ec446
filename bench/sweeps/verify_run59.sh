# box (1 GPU): the verify pass's cost by rows on the synthetic Llama-3-8B Q4_0 (`tern bench -v`), the binary
# before the one-grid argmax (c258fea: two argmax launches a row after each pass) vs 190ac9c, interleaved, 2
# rounds; and Q8_0 pp512 again (the table's row read 24,919), 2 rounds, the same two binaries.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=/tmp/b59; rm -rf $B; mkdir -p $B; tar xJf .carry/bin_v.txz -C $B
R=$OUT/r59; mkdir -p $R
REPO=$PWD; cd $B
TYPES="q4_0" ROUNDS=2 ARGS="-p 0 -n 0 -v 1,2,4,8,16 -r 3" OUT=$R/ab-verify bash $REPO/bench/bins_ab.sh $B/tern-old $B/tern > $R/ab-verify.md
TYPES="q8_0" ROUNDS=2 ARGS="-p 512 -n 0 -r 3" OUT=$R/ab-pp bash $REPO/bench/bins_ab.sh $B/tern-old $B/tern > $R/ab-pp.md
cat $R/ab-verify.md $R/ab-pp.md | grep -v "^|---" | awk -F'|' '{print $2, $3, $4, $5, $6}'
for f in $R/ab-verify/*.json; do python3 -c "
import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], [(r.get('test'), r.get('median_ms', r.get('median_tok_s'))) for r in j['results']])" $f; done
cd /; tar czf $OUT/r59.tgz -C $OUT r59; rm -rf $R
