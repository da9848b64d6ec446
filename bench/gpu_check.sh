#!/usr/bin/env bash
# bench/gpu_check.sh: everything the CUDA backend must pass on a GPU box, in one call, with a short
# table last (issue "CUDA backend"). Not run by CI (no GPU there).
#
#   bench/gpu_check.sh [STEP...]      steps: build ops fused attn multi mma hmma sample batch model recipes presets hf synth
#                                     bench roofline tp
#                                     tpbench ab perf sdpa serve mixed ppl peer (default: all but tpbench, ab, perf, sdpa,
#                                     serve, mixed, ppl, peer)
#   peer: bench/presets_peer.sh (issue 25's table: the families' presets against llama-bench, two rounds) with its receipts
#   and table under $OUT/peer; PEER_PRESETS (ARCH:TYPE ..., default the script's four Q4_0 presets), DEPTH, ROUNDS, REPS
#   batch: tests/gpu/gpu_batch (the engine's batch invariance at 64 sequences, GPU vs CPU on a batch, fork) on a
#   synthetic 4-layer Llama-3.2-1B (its orders, the gemma3 fixture, and tern quantize's Q4_K_M and Q4_0 mixes of it:
#   Q6_K tensors on slices of the twins in the chunk order, as Q6_KT tiles in the f16 order); recipes:
#   tests/gpu/gpu_recipes (the qwen2, qwen3, phi3, YaRN, LongRoPE and sliding-window gemma3 fixtures on CUDA against
#   llama.cpp's logits); presets: gpu_model (GPU vs CPU) on each family's synthetic preset at a few layers; stepprof
#   (not in the default list): ncu's kernel times of un-captured decode steps of STEPPROF_PRESETS (default gemma3-4b:q4_0:34 qwen2.5-7b:q4_0:28) by bench/ncu_step_sum.py (STEPPROF_PARALLEL=64:
#   steps of 64 sequences, by kernel and grid; with TERN_GEMV_CHUNK=1 for v2's passes); ab: bench/bins_ab.sh of $BASE_BIN (an older commit's tern) against ./tern,
#   AB_TYPES (default q4_0 q8_0 q4_k), pp512, pp2048, tg128, two rounds interleaved (the no-regression A/B);
#   parallel: issue 26's receipt, bench/parallel_peer.sh: tern bench --parallel 1,4,16,64 -p 512 -n 128 and
#   llama-batched-bench (where $LCPP_BIN has it) on the synthetic Llama-3-8B files of TYPES (q4_0 q8_0 q4_k), two rounds
#   interleaved, one table with each one's share of the decode floor ($OUT/parallel_peer.{md,json}); about 4 minutes on
#   the H200 once the files exist. A CPU trial: DEVICE=cpu THREADS=2 ARCH=llama3.2-1b LAYERS=2 NPP=32 NTG=8 NPL=1,4 CTX=1024
#   mmaprof (not in the default list): ncu of one v2 launch (gpu_mma --one) for each MMAPROF case (TYPE:N_IN:N_OUT:M:ARM,
#   default q4_0 4096x14336 at m = 4, 8, 16, 64 with the chooser's arm): speed of light, occupancy, warp states,
#   memory, compute; $OUT/mmaprof-*.txt and one line a case of time, DRAM throughput, occupancy, warps a scheduler,
#   issue slots busy and cycles an issued instruction (the stall reasons are in the .txt)
#   timeline (not in the default list): TERN_TIMELINE's kernel records of a B = TIMELINE_B (4) decode run, TIMELINE_ENV
#   (e.g. TERN_GEMV_CHUNK=2), summed by bench/timeline.py into $OUT/timeline.md (overlaps under PDL; ncu serialises)
#   hmab (not in the default list): the f16 order against the chunk order for Q8_0, Q4_K and the Q4_K_M and Q4_0 mixes
#   (Q6_K): gpu_hmma --sweep-only --q8 / --q4k / --q6k, then tern bench --parallel 1,4,16,64 on the synthetic
#   Llama-3-8B of each of HMAB_TYPES (q8_0 q4_k q4_k_m q4_0h), two rounds interleaved ($OUT/hmab.md)
#   sass (not in the default list): bench/sass_loops.py's loops (instruction counts, opcode histograms) of the functions
#   of SASS_OBJ (default gemm_hmma.o) matching SASS_KERNEL (default gemm_hb_kILi1ELi2E), $OUT/sass.{md,txt}
#   envab (not in the default list): environment arms A/B'd by tern bench --parallel ENVAB_B on the synthetic Llama-3-8B
#   of ENVAB_TYPES, ENVAB_ARMS (default "TERN_GEMV_CHUNK=2 TERN_GEMV_CHUNK=1": the f16 order against the chunk order),
#   ENVAB_ROUNDS rounds interleaved, ENVAB_ARGS added ($OUT/envab.md)
#   attprof (not in the default list): where the decode attention's warps wait: ncu's source counters of one
#   attention_split_kernel launch in a B = ATTPROF_B ("64 1") step of the synthetic Llama-3-8B Q4_0 (ATTPROF_ENV added),
#   bench/ncu_src_top.py's instructions and opcodes by warp-stall samples ($OUT/attprof.md)
#   hmprof (not in the default list): the same for the f16 order, gpu_hmma --one, each HMPROF case (N_IN:N_OUT:M:ARM, arm
#   -2 the one-column dp4a GEMV; default 4096x14336: the GEMV and arm 4 at m = 1, arm 4 at 16, arm 1 at 64); $OUT/hmprof.md
#   pdl (not in the default list): the PDL crossing of ledger 2026-12-03, TERN_PDL_MAX=PDL_ARMS (default "48 64"; 0 is
#   the rule, exec.c's window included) at tern bench --parallel PDL_B (48,56,64) -p 512 -n 128, in the order PDL_ORDER
#   (TERN_GEMV_CHUNK: 1, the chunk order, by default; 2 the f16 order), two rounds interleaved ($OUT/pdl.md)
#   gap (not in the default list): a B = GAP_B (64) step's wall time, device time (TERN_CUDA_TIMING) and ncu kernel sum at
#   base clocks, nvidia-smi dmon beside the bench (the 2.9 ms question of docs/ledger.md 2026-12-02)
#   realmodel (not in the default list): tests/test_model_gemma3 and test_model_qwen2 with TERN_TEST_DEVICE=cuda (their
#   float64-reference logits and llama.cpp's greedy continuations under the near-tie rule, on the GPU) for each of
#   models/gemma-3-270m-q4_k_m.gguf and qwen2.5-coder-1.5b-instruct-q4_k_m.gguf the box has (bench/box_pieces.sh)
#   perf: bench/perf_table.sh (the performance table in docs/gpu.md); sdpa: bench/sdpa_bench.py (torch's
#   attention backends on the shapes gpu_attention times: the prefill attention's peer)
#   serve: issue 27's receipts, bench/serve_receipt.py on the synthetic Llama-3-8B Q4_0 (32 layers): one stream through
#   `tern serve` vs `tern bench` at the same depth (bar: within 5%; an 8-token prompt vs tg128, a 512-token one vs tg128
#   at depth 512), N_STREAMS (64) streams of prompt 512 / 128 generated (aggregate
#   tok/s, TTFT and ITL p50/p99) beside llama-batched-bench's 4,481 tok/s (recorded; live too when $LCPP_BIN has it), a
#   2nd chat turn's TTFT with the prefix cache on vs off; about 2 minutes on the H200. A CPU trial: DEVICE=cpu THREADS=2
#   N_STREAMS=4 PROMPT_TOKENS=64 GEN_TOKENS=16 PREFIX_IDS=200 SERVE_MODEL=FILE (SERVE_ROUNDS, SERVE_ARGS too)
#   mixed: issue 26's mixed-step table, bench/mixed_itl.py on the synthetic Llama-3-8B Q4_0 (32 layers): for each chunk
#   budget (MIXED_BUDGETS, default 256,512,1024,2048,4096; a fresh `tern serve --batch-tokens B --parallel S+1 -c 33024`
#   each), MIXED_STREAMS (16) streams decode, then one LONG_TOKENS (32768)-token prompt prefills: the streams' ITL
#   p50/p99/max during it and before (BASE_TOKENS, 64 a stream), its TTFT, and alone, decode tok/s during; MIXED_ROUNDS
#   (2) rounds, the second in reverse budget order; MIXED_ARGS more server options (e.g. '-ub 4096'); MIXED_TIMEOUT (180 s)
#   bounds each wait and request. About 3-4 minutes on the H200 (the synthetic file made once). A CPU trial:
#   DEVICE=cpu THREADS=2 MIXED_STREAMS=4 LONG_TOKENS=2000 MIXED_BUDGETS=32,128,512 BASE_TOKENS=16 SERVE_MODEL=FILE
#   ppl: issue 28's receipt, bench/ppl_receipt.py: tern perplexity --device cuda and cpu and llama-perplexity (-ngl 99,
#   and on the CPU alone) on one file over Genesis 1-8 (tests/fixtures/perplexity/genesis.txt), -c PPL_CTX (512; every
#   chunk, or PPL_CHUNKS); the file is the default model when the box has it (then also against the committed
#   llama-perplexity value, ref.tsv), else a synthetic SmolLM2 with the default model's tokenizer (tern synth
#   --vocab-from tests/fixtures/perplexity/smollm2-tokenizer.gguf.gz); PPL_MODEL overrides; bar: tern cuda within 0.5%
#   of llama-perplexity (PPL_DEVICES, default cuda,cpu; cpu alone when DEVICE=cpu)
#
# Environment: MODEL (default models/SmolLM2-135M-Instruct.Q4_1.gguf, else a synthetic SmolLM2 where the box has
# no copy), OUT (logs and receipts; the device tool's $OUT, else /tmp/gpu_check), SYNTH_DIR (synthetic models,
# default /tmp/tern_synth), BENCH_REPS (default 3), PCRE (a folder with include/pcre2.h and lib/libpcre2-8.so*
# for a box without PCRE2's headers; bench/box_sys.sh makes one under .box/sys with the server's libraries too), BASE_BIN, LCPP_BIN (the llama.cpp peer's binaries, default /tmp/lcpp/build/bin:
# shared/peers/README.md; the serve and ppl steps skip the peer where it is absent). Each step's log is $OUT/<step>.log;
# receipts are $OUT/*.json. PACK=NAME.tgz: at the end, everything under $OUT (logs, receipts, summary.txt) moved into
# $OUT/NAME.tgz (the device tool brings back only a few files a call).
set -u
cd "$(dirname "$0")/.."
MODEL=${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
OUT=${OUT:-/tmp/gpu_check}
SYNTH_DIR=${SYNTH_DIR:-/tmp/tern_synth}
REPS=${BENCH_REPS:-3}
LCPP_BIN=${LCPP_BIN:-/tmp/lcpp/build/bin}
mkdir -p "$OUT" "$SYNTH_DIR"
steps=${*:-build ops fused attn multi mma hmma sample batch model recipes presets hf synth bench roofline tp}
PCRE_FLAGS=""
if [ -n "${PCRE:-}" ]; then
  PCRE_FLAGS="-I$PCRE/include -L$PCRE/lib"
  export LD_LIBRARY_PATH="$PCRE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
summary=()
note() { summary+=("$(printf '%-10s | %-4s | %s' "$1" "$2" "$3")"); }
counts() { grep -E ': [0-9]+ passed, [0-9]+ failed' "$1" | tail -1; }
status_of() { local l; l=$(counts "$1"); [ -n "$l" ] && echo "$l" | grep -q ', 0 failed' && echo PASS || echo FAIL; }
note_last() { # note STEP from LOG's last line "PASS|FAIL|DONE summary" (a receipt script's); anything else is a FAIL
    local line st; line=$(tail -1 "$2"); st=${line%% *}
    case $st in PASS|FAIL|DONE) note "$1" "$st" "${line#* }" ;; *) note "$1" FAIL "see $2: ${line:0:120}" ;; esac
}

synth() { # synth ARCH TYPE LAYERS -> path
    local f="$SYNTH_DIR/$1-$2-L$3.gguf"
    [ -s "$f" ] || ./tern synth --arch "$1" --type "$2" --layers "$3" -o "$f" >"$OUT/synth-$1-$2-$3.log" 2>&1
    echo "$f"
}
mix() { # mix ARCH LAYERS MIX -> path: llama-quantize's tensor mix MIX (Q4_K_M, Q4_0: a Q6_K head) from a Q8_0 synth
    local f="$SYNTH_DIR/$1-mix-$3-L$2.gguf" q
    q=$(synth "$1" q8_0 "$2")
    [ -s "$f" ] || ./tern quantize "$q" "$f" "$3" --allow-requantize --threads 16 >"$OUT/quantize-$1-$3-$2.log" 2>&1
    echo "$f"
}

times=()
for s in $steps; do
  ts=$(date +%s)
  case $s in
  build)
    t0=$(date +%s)
    # a library compiled on the dev machine (bench/box_bins.sh pack, carried as .box/binx) when it matches the tree:
    # only the link here; else the whole build
    if PCRE="${PCRE:-}" bash bench/box_bins.sh unpack >"$OUT/build.log" 2>&1; then
      note build PASS "$(tail -1 "$OUT/build.log" | cut -c1-60)... in $(( $(date +%s) - t0 )) s"
    elif make CUDA=1 CUDA_ARCHS="${CUDA_ARCHS:--arch=sm_90}" CFLAGS="$PCRE_FLAGS" -j"$(nproc)" all >>"$OUT/build.log" 2>&1; then
      note build PASS "make CUDA=1 in $(( $(date +%s) - t0 )) s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
    else
      tail -30 "$OUT/build.log"; note build FAIL "see build.log"; break
    fi ;;
  ops)
    build-cuda/gpu/gpu_ops >"$OUT/ops.log" 2>&1
    note ops "$(status_of "$OUT/ops.log")" "$(counts "$OUT/ops.log")" ;;
  fused)
    build-cuda/gpu/gpu_fused >"$OUT/fused.log" 2>&1
    note fused "$(status_of "$OUT/fused.log")" "$(counts "$OUT/fused.log")" ;;
  attn)
    build-cuda/gpu/gpu_attention >"$OUT/attn.log" 2>&1
    note attn "$(status_of "$OUT/attn.log")" "$(counts "$OUT/attn.log")" ;;
  multi) # the GEMV twins against their one-row calls, every type and family
    build-cuda/gpu/gpu_multi >"$OUT/multi.log" 2>&1
    note multi "$(status_of "$OUT/multi.log")" "$(counts "$OUT/multi.log")" ;;
  mma) # the small-M MMA GEMM against the one-column GEMV, every type and family; MMA_SWEEP=1 adds the sweep
    build-cuda/gpu/gpu_mma ${MMA_SWEEP:+--sweep} >"$OUT/mma.log" 2>&1
    note mma "$(status_of "$OUT/mma.log")" "$(counts "$OUT/mma.log")" ;;
  hmma) # the f16 order's GEMM (gemm_hmma.cu): values against float64, every arm's columns against the one-column call;
    # HMMA_SWEEP=1 adds the sweep against v2 and the one-column GEMV
    # (bounded: a kernel waiting on a barrier that never completes would hang, not fail)
    timeout "${HMMA_TIMEOUT:-600}" build-cuda/gpu/gpu_hmma ${HMMA_SWEEP:+--sweep} >"$OUT/hmma.log" 2>&1 ||
      echo "gpu_hmma: exit $? (124: timed out after ${HMMA_TIMEOUT:-600} s)" >>"$OUT/hmma.log"
    note hmma "$(status_of "$OUT/hmma.log")" "$(counts "$OUT/hmma.log")" ;;
  batch) # a synthetic Llama, then the gemma3 fixture (an 8-key sliding window over paged, shared KV blocks)
    f=$(synth llama3.2-1b q4_0 4)
    build-cuda/gpu/gpu_batch "$f" >"$OUT/batch.log" 2>&1
    note batch "$(status_of "$OUT/batch.log")" "$(grep -E '^8 sequences' "$OUT/batch.log" | cut -c1-150)"
    build-cuda/gpu/gpu_batch tests/fixtures/recipes/gemma3.gguf >"$OUT/batch-gemma3.log" 2>&1
    note "batch gemma3" "$(status_of "$OUT/batch-gemma3.log")" "$(grep -E '^8 sequences' "$OUT/batch-gemma3.log" | cut -c1-150)"
    # the chunk-major order (TERN_GEMV_CHUNK's arm): the 64 sequences' steps as passes of up to 64 tokens through
    # gemm_mma v2; a PASS needs the checks and a trace line showing v2 ran
    build-cuda/gpu/gpu_batch "$f" chunk >"$OUT/batch-chunk.log" 2>&1
    st=$(status_of "$OUT/batch-chunk.log"); grep -q 'gemm_mma_v2=[1-9]' "$OUT/batch-chunk.log" || st=FAIL
    note "batch chunk" "$st" "$(grep -E '^8 sequences' "$OUT/batch-chunk.log" | cut -c1-90) v2 calls: $(grep -o 'gemm_mma_v2=[0-9]*' "$OUT/batch-chunk.log" | sort -t= -k2 -n | tail -1)"
    # the same on a 6-layer synthetic Gemma 3 4B in Q4_0 (its post-norms folded into 64-token passes)
    fg=$(synth gemma3-4b q4_0 6)
    build-cuda/gpu/gpu_batch "$fg" chunk >"$OUT/batch-chunk-gemma3.log" 2>&1
    st=$(status_of "$OUT/batch-chunk-gemma3.log"); grep -q 'gemm_mma_v2=[1-9]' "$OUT/batch-chunk-gemma3.log" || st=FAIL
    note "batch chunk gemma3" "$st" "$(grep -E '^8 sequences' "$OUT/batch-chunk-gemma3.log" | cut -c1-90)"
    # the f16 order (TERN_GEMV_CHUNK=2): every pass of 1..64 tokens through gemm_hmma.cu, on both models, a Q8_0 and a
    # Q4_K one
    for mf in "$f" "$fg" "$(synth llama3.2-1b q8_0 4)" "$(synth llama3.2-1b q4_k 4)"; do
      lg="$OUT/batch-f16-$(basename "$mf" .gguf).log"
      build-cuda/gpu/gpu_batch "$mf" f16 >"$lg" 2>&1
      st=$(status_of "$lg"); grep -q 'gemm_hm_tiled=[1-9]' "$lg" || st=FAIL
      note "batch f16 $(basename "$mf" .gguf)" "$st" "$(grep -E '^8 sequences' "$lg" | cut -c1-90) hm calls (tiled): $(grep -o 'gemm_hm_tiled=[0-9]*' "$lg" | sort -t= -k2 -n | tail -1)"
    done
    # a pass's decode attention over the splits its tokens use (exec.c att_need, graph_slot) in engines of 1024
    # positions at 32 keys a split: 16 splits deep, passes launching 1..4
    build-cuda/gpu/gpu_batch "$f" f16 fit >"$OUT/batch-f16-fit.log" 2>&1
    note "batch f16 fit" "$(status_of "$OUT/batch-f16-fit.log")" "$(grep -E '^8 sequences' "$OUT/batch-f16-fit.log" | cut -c1-90)"
    # the same with the decode attention's MS arm (TERN_ATT_MS) in the batched passes only: invariance against engines
    # of one sequence on the rule; a PASS needs the trace's attention_ms= (MS ran)
    build-cuda/gpu/gpu_batch "$f" f16 fit ms >"$OUT/batch-f16-fit-ms.log" 2>&1
    st=$(status_of "$OUT/batch-f16-fit-ms.log"); grep -q 'attention_ms=[1-9]' "$OUT/batch-f16-fit-ms.log" || st=FAIL
    note "batch f16 fit ms" "$st" "$(grep -E '^8 sequences' "$OUT/batch-f16-fit-ms.log" | cut -c1-90) MS launches: $(grep -o 'attention_ms=[0-9]*' "$OUT/batch-f16-fit-ms.log" | sort -t= -k2 -n | tail -1)"
    # files of mixed types (tern quantize's mixes of a Q8_0 synth): a Q4_K_M (Q6_K attn_v and ffn_down in some layers,
    # and the head) and a Q4_0 (a Q6_K head). Llama-3.2-1B's head is its embeddings (tied), which stay rows on the dp4a
    # twins, so its mixes run slices of the twins in passes over 16 tokens (a PASS needs the trace's gemv_slices=);
    # a 2-layer Llama-3-8B's head is its own, so there the f16 order converts every Q6_K matrix (Q6_KT) and no slices
    # are left (a PASS needs none). f16k6: gpu_batch's f16 on a model with Q6_K matrices the engine converts; every
    # f16 row needs gemm_hm_tiled=. Rows: MIX MODE ARCH LAYERS SLICES
    for mm in "Q4_K_M chunk llama3.2-1b 4 yes" "Q4_K_M f16k6 llama3.2-1b 4 yes" "Q4_0 f16 llama3.2-1b 4 yes" \
              "Q4_K_M f16k6 llama3-8b 2 no" "Q4_0 f16k6 llama3-8b 2 no"; do
      set -- $mm
      mf=$(mix "$3" "$4" "$1"); lg="$OUT/batch-$2-mix-$1-$3.log"
      TERN_TRACE=1 build-cuda/gpu/gpu_batch "$mf" "$2" >"$lg" 2>&1
      st=$(status_of "$lg")
      if [ "$5" = no ]; then grep -q 'gemv_slices=[1-9]' "$lg" && st=FAIL
      else grep -q 'gemv_slices=[1-9]' "$lg" || st=FAIL; fi
      [ "$2" != chunk ] && ! grep -q 'gemm_hm_tiled=[1-9]' "$lg" && st=FAIL
      note "batch $2 mix $1 $3" "$st" "$(grep -E '^8 sequences' "$lg" | cut -c1-90) slices: $(grep -o 'gemv_slices=[0-9]*' "$lg" | sort -t= -k2 -n | tail -1)"
    done ;;
  hmab) # the f16 order (the many-sequence default) against the chunk order (TERN_GEMV_CHUNK=1) per type: gpu_hmma's
    # sweep of the arms at Llama-3-8B's shapes for each type, then tern bench --parallel 1,4,16,64 -p 512 -n 128 on the
    # synthetic Llama-3-8B, HMAB_ROUNDS (2) rounds interleaved; $OUT/hmab.md (the bench's S_PP / S_TG rows; "sw" the
    # default, "base" the chunk order), receipts beside it. HMAB_TYPES (default "q8_0 q4_k q4_k_m q4_0h"): q4_k_m and
    # q4_0h are tern quantize's Q4_K_M and Q4_0 mixes of the Q8_0 file (Q6_K attn_v and ffn_down in half the layers and
    # the head; a Q6_K head)
    : >"$OUT/hmab.md"
    for ty in ${HMAB_TYPES:-q8_0 q4_k q4_k_m q4_0h}; do
      sw= base=TERN_GEMV_CHUNK=1
      case $ty in
        q8_0) fl=--q8 f=$(synth llama3-8b q8_0 32) ;;
        q4_k) fl=--q4k f=$(synth llama3-8b q4_k 32) ;;
        q4_k_m) fl=--q6k f=$(mix llama3-8b 32 Q4_K_M) ;;
        q4_0h) fl= f=$(mix llama3-8b 32 Q4_0) ;;
        *) continue ;;
      esac
      [ -n "$fl" ] && timeout 300 build-cuda/gpu/gpu_hmma --sweep-only "$fl" >"$OUT/sweep-$ty.txt" 2>&1
      for r in $(seq 1 "${HMAB_ROUNDS:-2}"); do for a in sw base; do
        [ $a = sw ] && ev=$sw || ev=$base
        env $ev ./tern bench -m "$f" --device cuda --parallel 1,4,16,64 -p 512 -n 128 -r 1 \
          --receipt "$OUT/hmab-$ty-$a-r$r.json" 2>"$OUT/hmab-$ty-$a-r$r.err" |
          grep -E '^\|  *512 ' | sed "s/^/r$r $ty $a ($ev) /" >>"$OUT/hmab.md"
      done; done
      # a FAIL unless every run gave its 4 rows and the default's runs ran the f16 order (the receipt's gemv_order 2)
      n=$(grep -c "^r[0-9]* $ty " "$OUT/hmab.md"); want=$(( 8 * ${HMAB_ROUNDS:-2} ))
      nf=$(grep -l '"gemv_order": 2' "$OUT"/hmab-$ty-sw-r*.json 2>/dev/null | wc -l)
      st=DONE; [ "$n" -eq "$want" ] && [ "$nf" -eq "${HMAB_ROUNDS:-2}" ] || st=FAIL
      note "hmab $ty" "$st" "$n of $want rows, $nf of ${HMAB_ROUNDS:-2} default runs in the f16 order: $OUT/hmab.md${fl:+, $OUT/sweep-$ty.txt}"
    done
    cat "$OUT/hmab.md" ;;
  parallel)
    OUT="$OUT" SYNTH_DIR="$SYNTH_DIR" LCPP_BIN="$LCPP_BIN" bench/parallel_peer.sh >"$OUT/parallel.log" 2>"$OUT/parallel.err"
    cat "$OUT/parallel_peer.md" 2>/dev/null
    note_last parallel "$OUT/parallel.log" ;;
  ab)
    OUT="$OUT" TYPES="${AB_TYPES:-q4_0 q8_0 q4_k}" ROUNDS=2 ARGS="-p 512,2048 -n 128 -r 2" bench/bins_ab.sh "$BASE_BIN" ./tern \
      >"$OUT/ab.md" 2>&1
    cat "$OUT/ab.md"
    note ab "$(grep -q FAILED "$OUT/ab.md" && echo FAIL || echo DONE)" "$(wc -l <"$OUT/ab.md") rows: $OUT/ab.md" ;;
  sample)
    build-cuda/gpu/gpu_sample >"$OUT/sample.log" 2>&1
    note sample "$(status_of "$OUT/sample.log")" "$(grep -E 'draws|tcu_sample n=' "$OUT/sample.log" | tr '\n' ' ' | cut -c1-150)" ;;
  perf)
    OUT="$OUT" REPS="$REPS" bench/perf_table.sh >"$OUT/perf.md" 2>"$OUT/perf.err"
    note perf "$( [ -s "$OUT/perf.md" ] && ! grep -q FAILED "$OUT/perf.err" && echo PASS || echo FAIL)" "$(grep -E '^\| Q4_0 (tg128|pp512) ' "$OUT/perf.md" | tr '\n' ' ' | cut -c1-150)" ;;
  sdpa)
    python3 bench/sdpa_bench.py >"$OUT/sdpa.log" 2>/dev/null
    note sdpa "$(grep -q TFLOP "$OUT/sdpa.log" && echo PASS || echo FAIL)" "$(grep 'S=8192 D=128 cudnn' "$OUT/sdpa.log" | cut -c1-150)" ;;
  model)
    [ -s "$MODEL" ] || MODEL=$(synth smollm2-135m q4_1 30)
    build-cuda/gpu/gpu_model "$MODEL" --dump "$OUT/logits.bin" >"$OUT/model.log" 2>&1
    note model "$(status_of "$OUT/model.log")" "$(grep -E '^(logits rel L2, GPU vs CPU ref|greedy)' "$OUT/model.log" | tr '\n' ' ' | cut -c1-150)" ;;
  stepprof) # ncu's kernel times over un-captured decode steps of each preset (bench/ncu_step_sum.py): where a step goes;
    # STEPPROF_PARALLEL=B: steps of B sequences instead (`--parallel B -p 1 -n 64`: one prefill pass, then passes of B
    # tokens up to 64, since a pass is capped at the context), the first 2,600 kernels profiled, by kernel and grid
    for p in ${STEPPROF_PRESETS:-gemma3-4b:q4_0:34 qwen2.5-7b:q4_0:28}; do
      IFS=: read -r a ty nl <<<"$p"
      f=$(synth "$a" "$ty" "$nl")
      if [ -n "${STEPPROF_PARALLEL:-}" ]; then
        TERN_CUDA_GRAPH=0 ncu --clock-control none --launch-count 2600 --metrics gpu__time_duration.sum --csv --page raw \
          ./tern bench -m "$f" --device cuda --parallel "$STEPPROF_PARALLEL" -p 1 -n 64 -r 1 >"$OUT/ncu-$a.csv" 2>"$OUT/ncu-$a.err"
      else
        TERN_CUDA_GRAPH=0 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
          ./tern bench -m "$f" --device cuda -p 0 -n 4 -r 1 >"$OUT/ncu-$a.csv" 2>"$OUT/ncu-$a.err"
      fi
      python3 bench/ncu_step_sum.py ${STEPPROF_PARALLEL:+--grid} "$OUT/ncu-$a.csv" >"$OUT/stepprof-$a.md" 2>&1
      cat "$OUT/stepprof-$a.md"
      note "prof $a" "$([ -s "$OUT/stepprof-$a.md" ] && echo DONE || echo FAIL)" "$(head -1 "$OUT/stepprof-$a.md" | cut -c1-150)"
    done ;;
  gap) # (not in the default list) a B = GAP_B (64) step's wall time against its device time and its kernels' sum:
    # tern bench --parallel with TERN_CUDA_TIMING=1 (events around each pass), nvidia-smi dmon (SM clock, power) beside it,
    # then ncu's kernel sum of the same steps with the clocks at base; chunk order (GAP_ARGS adds environment)
    f=$(synth llama3-8b q4_0 32)
    nvidia-smi dmon -s pc -d 1 >"$OUT/gap-dmon.log" 2>&1 &
    dm=$!
    env ${GAP_ARGS:-} TERN_GEMV_CHUNK=1 TERN_CUDA_TIMING=1 ./tern bench -m "$f" --device cuda --parallel "${GAP_B:-64}" -p 1 -n 64 \
      -r 3 >"$OUT/gap-bench.log" 2>&1
    kill $dm 2>/dev/null
    env ${GAP_ARGS:-} TERN_GEMV_CHUNK=1 TERN_CUDA_GRAPH=0 ncu --clock-control base --launch-count 1600 --metrics \
      gpu__time_duration.sum --csv --page raw ./tern bench -m "$f" --device cuda --parallel "${GAP_B:-64}" -p 1 -n 64 -r 1 \
      >"$OUT/gap-ncu.csv" 2>"$OUT/gap-ncu.err"
    python3 bench/ncu_step_sum.py "$OUT/gap-ncu.csv" >"$OUT/gap-ncu.md" 2>&1
    grep -E "^\|  *1 |cuda timing" "$OUT/gap-bench.log"; head -2 "$OUT/gap-ncu.md"; sort -k2 -n "$OUT/gap-dmon.log" | tail -3
    note gap "$([ -s "$OUT/gap-ncu.md" ] && echo DONE || echo FAIL)" "$(grep -o 'decode [0-9]* passes, [0-9.]* ms/pass' "$OUT/gap-bench.log" | tail -1); ncu base clocks: $(head -2 "$OUT/gap-ncu.md" | tail -1 | cut -c1-60)" ;;
  mmaprof) # (not in the default list) what bounds v2 at small m: ncu's sections of one launch a case
    : >"$OUT/mmaprof.md"
    for c in ${MMAPROF:-q4_0:4096:14336:4:-1 q4_0:4096:14336:8:-1 q4_0:4096:14336:16:-1 q4_0:4096:14336:64:-1}; do
      IFS=: read -r ty ni no mm arm <<<"$c"
      line=$(build-cuda/gpu/gpu_mma --one "$ty" "$ni" "$no" "$mm" "$arm" | grep '^one ')
      ncu -k regex:gemm_mma2_k --launch-skip 20 --launch-count 1 --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
        --section ComputeWorkloadAnalysis \
        build-cuda/gpu/gpu_mma --one "$ty" "$ni" "$no" "$mm" "$arm" >"$OUT/mmaprof-$ty-$ni-$no-m$mm.txt" 2>&1
      f="$OUT/mmaprof-$ty-$ni-$no-m$mm.txt"
      echo "$line | $(grep -E '^ +DRAM Throughput|^ +Achieved Occupancy|^ +Registers Per Thread|^ +Active Warps Per Scheduler|^ +Issue Slots Busy|^ +Warp Cycles Per Issued Instruction' "$f" |
        awk '{$1=$1; print}' | paste -sd ';' -)" >>"$OUT/mmaprof.md"
    done
    cat "$OUT/mmaprof.md"
    note mmaprof "$([ -s "$OUT/mmaprof.md" ] && echo DONE || echo FAIL)" "$(wc -l <"$OUT/mmaprof.md") cases in mmaprof.md" ;;
  timeline) # (not in the default list) a decode step's kernels on the device (TERN_TIMELINE: CUPTI's kernel records, kernels
    # inside graphs too): `tern bench --parallel TIMELINE_B (4) -p 512 -n 16` on the synthetic Llama-3-8B Q4_0 with TIMELINE_ENV
    # (e.g. TERN_GEMV_CHUNK=2), then bench/timeline.py: each pass's span, kernel sum, busy time and overlap, and each
    # kernel's mean duration and gap from the previous one's end ($OUT/timeline.md; the rows in $OUT/timeline.csv); last,
    # the control: TERN_CUDA_TIMING's device ms a pass of the same run without CUPTI
    f=$(synth llama3-8b q4_0 32)
    # libcupti: the toolkit's, else one under /usr or /opt (CUDA 13's first: a pip wheel may hold 12's), unless
    # TERN_CUPTI_LIB says
    [ -n "${TERN_CUPTI_LIB:-}" ] || export TERN_CUPTI_LIB="$(ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* \
      /usr/local/cuda/lib64/libcupti.so* 2>/dev/null | head -1)"
    [ -n "$TERN_CUPTI_LIB" ] || export TERN_CUPTI_LIB="$(find /usr /opt -name 'libcupti.so.13*' 2>/dev/null | head -1)"
    [ -n "$TERN_CUPTI_LIB" ] || export TERN_CUPTI_LIB="$(find /usr /opt -name 'libcupti.so*' 2>/dev/null | head -1)"
    echo "timeline: libcupti ${TERN_CUPTI_LIB:-not found}" >"$OUT/timeline.log"
    env ${TIMELINE_ENV:-} TERN_TIMELINE="$OUT/timeline.csv" ./tern bench -m "$f" --device cuda --parallel "${TIMELINE_B:-4}" \
      -p 512 -n 16 -r 1 >>"$OUT/timeline.log" 2>&1
    python3 bench/timeline.py "$OUT/timeline.csv" >"$OUT/timeline.md" 2>>"$OUT/timeline.log"
    # the control: the same run without CUPTI, its passes' device time by events (CUPTI instruments kernels on Hopper)
    env ${TIMELINE_ENV:-} TERN_CUDA_TIMING=1 ./tern bench -m "$f" --device cuda --parallel "${TIMELINE_B:-4}" -p 512 -n 16 \
      -r 1 2>&1 | grep -E '^cuda timing' | sed 's/^/control (no CUPTI): /' >>"$OUT/timeline.md"
    head -40 "$OUT/timeline.md"; tail -1 "$OUT/timeline.md"
    note timeline "$([ -s "$OUT/timeline.md" ] && echo DONE || echo FAIL)" "$(tail -1 "$OUT/timeline.log" | cut -c1-100)" ;;
  sass) # (not in the default list) a kernel's loops in SASS (this machine has no disassembler): cuobjdump of SASS_OBJ
    # (default build-cuda/backend/cuda/gemm_hmma.o), bench/sass_loops.py on the functions matching SASS_KERNEL (a regex on
    # the mangled name, default the f16 order's one-column kernel) into $OUT/sass.md, their listings into $OUT/sass.txt
    o=${SASS_OBJ:-build-cuda/backend/cuda/gemm_hmma.o}; k=${SASS_KERNEL:-gemm_hb_kILi1ELi2E}
    cuobjdump -sass "$o" >"$OUT/sass-all.txt" 2>&1
    python3 bench/sass_loops.py "$OUT/sass-all.txt" "$k" >"$OUT/sass.md" 2>&1
    awk -v k="$k" '/Function : /{p = ($0 ~ k)} p' "$OUT/sass-all.txt" >"$OUT/sass.txt"; rm -f "$OUT/sass-all.txt"
    cat "$OUT/sass.md"
    note sass "$(grep -q '^## ' "$OUT/sass.md" && echo DONE || echo FAIL)" "$(grep -c '^loop ' "$OUT/sass.md") loops of $k" ;;
  hmprof) # (not in the default list) what bounds the f16 order's GEMM at small m: ncu's sections of one launch a case
    : >"$OUT/hmprof.md"
    for c in ${HMPROF:-4096:14336:1:-2 4096:14336:1:4 4096:14336:16:4 4096:14336:64:1}; do
      IFS=: read -r ni no mm arm <<<"$c"
      line=$(build-cuda/gpu/gpu_hmma --one "$ni" "$no" "$mm" "$arm" | grep '^one ')
      f="$OUT/hmprof-$ni-$no-m$mm-a$arm.txt"
      ncu -k regex:'gemm_h|gemv_' --launch-skip 20 --launch-count 1 --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
        build-cuda/gpu/gpu_hmma --one "$ni" "$no" "$mm" "$arm" >"$f" 2>&1
      echo "$line | $(grep -E '^ +Duration|^ +DRAM Throughput|^ +Achieved Occupancy|^ +Registers Per Thread|^ +Active Warps Per Scheduler|^ +Issue Slots Busy|^ +Warp Cycles Per Issued Instruction' "$f" |
        awk '{$1=$1; print}' | paste -sd ';' -)" >>"$OUT/hmprof.md"
    done
    cat "$OUT/hmprof.md"
    note hmprof "$([ -s "$OUT/hmprof.md" ] && echo DONE || echo FAIL)" "$(wc -l <"$OUT/hmprof.md") cases in hmprof.md" ;;
  attprof) # (not in the default list) where the decode attention's warps wait (v2 at many sequences is neither issue- nor
    # bandwidth-bound: ledger 2026-12-06 "the decode attention on the tensor cores"): ncu's source counters of one
    # attention_split_kernel launch in a B = ATTPROF_B step (default "64 1") of the synthetic Llama-3-8B Q4_0 (f16 order),
    # ATTPROF_ENV added to its environment; bench/ncu_src_top.py's instructions and opcodes by warp-stall samples
    # ($OUT/attprof.md), ncu's details beside ($OUT/attprof-B.txt), the source page gzipped ($OUT/attprof-B-src.csv.gz).
    f=$(synth llama3-8b q4_0 32)
    : >"$OUT/attprof.md"
    for b in ${ATTPROF_B:-64 1}; do
      env ${ATTPROF_ENV:-} ncu --clock-control none -k regex:attention_split --launch-skip 128 --launch-count 1 \
        --section SourceCounters --section WarpStateStats --section SpeedOfLight --section Occupancy \
        --section SchedulerStats -f -o "$OUT/attprof-$b" ./tern bench -m "$f" --device cuda --parallel "$b" -p 512 -n 8 \
        -r 1 >"$OUT/attprof-$b.log" 2>&1
      ncu -i "$OUT/attprof-$b.ncu-rep" --page details >"$OUT/attprof-$b.txt" 2>&1
      ncu -i "$OUT/attprof-$b.ncu-rep" --page source --csv --print-source sass 2>/dev/null | gzip >"$OUT/attprof-$b-src.csv.gz"
      { echo "# B = $b ${ATTPROF_ENV:-}"
        grep -E '^ +(Duration|DRAM Throughput|Achieved Occupancy|Issued Warp Per Scheduler)' "$OUT/attprof-$b.txt"
        python3 bench/ncu_src_top.py "$OUT/attprof-$b-src.csv.gz" 20; } >>"$OUT/attprof.md" 2>&1
      rm -f "$OUT/attprof-$b.ncu-rep"
    done
    cat "$OUT/attprof.md"
    note attprof "$(grep -q 'warp-stall samples' "$OUT/attprof.md" && echo DONE || echo FAIL)" \
      "$(grep -c 'warp-stall samples' "$OUT/attprof.md") kernels in attprof.md" ;;
  envab) # (not in the default list) an A/B of environment arms: tern bench --parallel ENVAB_B (1,4,16,64) -p 512 -n 128
    # (and ENVAB_ARGS, e.g. "-c 4096": serve's context) on the synthetic Llama-3-8B of each of ENVAB_TYPES (q4_0), once
    # under each of ENVAB_ARMS (space-separated, each comma-separated NAME=VALUE pairs; default "TERN_GEMV_CHUNK=2
    # TERN_GEMV_CHUNK=1"), ENVAB_ROUNDS (2) rounds interleaved, the second in reverse arm order; rows of S_PP / S_TG in
    # $OUT/envab.md, receipts $OUT/envab-TYPE-I-rROUND.json (I: the arm's index in ENVAB_ARMS)
    : >"$OUT/envab.md"
    arms=(${ENVAB_ARMS:-TERN_GEMV_CHUNK=2 TERN_GEMV_CHUNK=1})
    for ty in ${ENVAB_TYPES:-q4_0}; do
      f=$(synth llama3-8b "$ty" 32)
      for r in $(seq 1 "${ENVAB_ROUNDS:-2}"); do
        order=$(seq 0 $((${#arms[@]} - 1))); [ $((r % 2)) = 0 ] && order=$(seq $((${#arms[@]} - 1)) -1 0)
        for i in $order; do
          a=${arms[$i]}
          env ${a//,/ } ./tern bench -m "$f" --device cuda --parallel "${ENVAB_B:-1,4,16,64}" -p 512 -n 128 -r 1 ${ENVAB_ARGS:-} \
            --receipt "$OUT/envab-$ty-$i-r$r.json" 2>"$OUT/envab-$ty-$i-r$r.err" | grep -E '^\|  *512 ' |
            sed "s|^|r$r $ty $a |" >>"$OUT/envab.md"
        done
      done
    done
    sort -k2,2 -k3,3 -k1,1 "$OUT/envab.md" | cut -c1-170
    note envab "$([ -s "$OUT/envab.md" ] && echo DONE || echo FAIL)" "$(wc -l <"$OUT/envab.md") rows in envab.md" ;;
  pdl) # (not in the default list) S_TG with PDL up to TERN_PDL_MAX tokens a pass, the arms interleaved
    f=$(synth llama3-8b q4_0 32)
    : >"$OUT/pdl.md"; po=${PDL_ORDER:-1}
    for r in 1 2; do for a in ${PDL_ARMS:-48 64}; do
      TERN_PDL_MAX=$a TERN_GEMV_CHUNK=$po ./tern bench -m "$f" --device cuda --parallel "${PDL_B:-48,56,64}" -p 512 \
        -n 128 -r 1 2>&1 | grep -E '^\|  *512 ' | sed "s/^/round $r order $po TERN_PDL_MAX=$a /" >>"$OUT/pdl.md"
    done; done
    cat "$OUT/pdl.md"
    note pdl "$([ -s "$OUT/pdl.md" ] && echo DONE || echo FAIL)" "$(wc -l <"$OUT/pdl.md") rows in pdl.md" ;;
  recipes)
    build-cuda/gpu/gpu_recipes >"$OUT/recipes.log" 2>&1
    note recipes "$(status_of "$OUT/recipes.log")" "$(counts "$OUT/recipes.log")" ;;
  realmodel) # the real-model tests (greedy vs llama.cpp's fixtures, logits vs float64) on CUDA, for each file the box has
    for t in gemma3:gemma-3-270m-q4_k_m qwen2:qwen2.5-coder-1.5b-instruct-q4_k_m; do
      f=models/${t#*:}.gguf
      if [ ! -s "$f" ]; then note "real ${t%%:*}" SKIP "no $f here (bench/box_pieces.sh carries it in pieces)"; continue; fi
      TERN_TEST_DEVICE=cuda build-cuda/tests/test_model_${t%%:*} >"$OUT/realmodel-${t%%:*}.log" 2>&1
      note "real ${t%%:*}" "$(status_of "$OUT/realmodel-${t%%:*}.log")" \
        "$(grep -E 'greedy: [0-9]+ of' "$OUT/realmodel-${t%%:*}.log" | cut -c13-90); $(counts "$OUT/realmodel-${t%%:*}.log")"
    done ;;
  presets) # each family's synthetic preset (the gemma3 ones at 6 layers: five sliding-window layers and a global one)
    for p in qwen2.5-7b:q4_0:2 qwen3-8b:q4_k:2 gemma3-4b:q4_0:6 gemma3-27b:q8_0:6 phi3-mini:q4_0:2; do
      IFS=: read -r a ty nl <<<"$p"
      f=$(synth "$a" "$ty" "$nl")
      build-cuda/gpu/gpu_model "$f" >"$OUT/preset-$a.log" 2>&1
      note "$a" "$(status_of "$OUT/preset-$a.log")" "$(grep -E '^logits rel L2, GPU vs CPU ref' "$OUT/preset-$a.log" | cut -c1-150)"
    done ;;
  hf)
    if [ -d .whl ]; then python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; fi
    PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} python3 scripts/hf_check.py "$OUT/logits.bin" "$MODEL" >"$OUT/hf.log" 2>&1
    note hf "$(status_of "$OUT/hf.log")" "$(grep -E '^tern gpu' "$OUT/hf.log" | cut -c1-150)" ;;
  synth)
    for ty in q4_0 q8_0 q4_k q6_k f16 bf16 q4_1; do
      f=$(synth llama3-8b $ty 2)
      build-cuda/gpu/gpu_model "$f" >"$OUT/synth-$ty.log" 2>&1
      note "synth $ty" "$(status_of "$OUT/synth-$ty.log")" "$(grep -E '^logits rel L2, GPU vs CPU ref' "$OUT/synth-$ty.log" | cut -c1-150)"
    done ;;
  bench)
    f=$(synth llama3-8b q4_0 32)
    TERN_CUDA_TIMING=1 ./tern bench -m "$f" --device cuda -p 512 -n 128 -r "$REPS" --receipt "$OUT/bench-llama3-8b-q4_0.json" \
      >"$OUT/bench.md" 2>"$OUT/bench.err"
    TERN_CUDA_GRAPH=0 TERN_CUDA_TIMING=1 ./tern bench -m "$f" --device cuda -p 512 -n 128 -r "$REPS" \
      --receipt "$OUT/bench-llama3-8b-q4_0-nograph.json" >"$OUT/bench-nograph.md" 2>"$OUT/bench-nograph.err"
    cat "$OUT/bench.md" "$OUT/bench-nograph.md"; grep -h "cuda timing" "$OUT/bench.err" "$OUT/bench-nograph.err"
    pp=$(grep -E '\| pp512 \|' "$OUT/bench.md" | awk -F'|' '{print $(NF-1)}')
    tg=$(grep -E '\| tg128 \|' "$OUT/bench.md" | awk -F'|' '{print $(NF-1)}')
    tgn=$(grep -E '\| tg128 \|' "$OUT/bench-nograph.md" | awk -F'|' '{print $(NF-1)}')
    note bench "$(awk -v p="${pp%%±*}" -v t="${tg%%±*}" 'BEGIN{print (p+0 >= 5000 && t+0 >= 300) ? "PASS" : "FAIL"}')" \
      "llama3-8b q4_0: pp512 $pp tok/s (bar 5000), tg128 $tg (bar 300); tg128 un-captured $tgn" ;;
  roofline)
    f=$(synth llama3-8b q4_0 32)
    ./tern roofline --device cuda -m "$f" --receipt "$OUT/roofline.json" >"$OUT/roofline.md" 2>"$OUT/roofline.err"
    rc=$?; cat "$OUT/roofline.md"
    note roofline "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "$(grep -iE 'read' "$OUT/roofline.md" | head -1 | cut -c1-120)" ;;
  tp) # llama, then the recipe rows with head norms, post-norms and windows (gemma3), and with q/k norms (qwen3)
    NCCL_NVLS_ENABLE=0 build-cuda/gpu/gpu_tp >"$OUT/tp.log" 2>&1
    note tp "$(status_of "$OUT/tp.log")" "$(grep -E '^tp [0-9]: (decode|64)|SKIP' "$OUT/tp.log" | tr '\n' ' ' | cut -c1-150)"
    for p in gemma3-4b:q4_0:6 qwen3-8b:q4_k:2; do
      IFS=: read -r a ty nl <<<"$p"
      NCCL_NVLS_ENABLE=0 build-cuda/gpu/gpu_tp "$a" "$ty" "$nl" >"$OUT/tp-$a.log" 2>&1
      note "tp $a" "$(status_of "$OUT/tp-$a.log")" "$(grep -E '^tp [0-9]: (decode|64)|SKIP' "$OUT/tp-$a.log" | tr '\n' ' ' | cut -c1-150)"
    done ;;
  tpbench)
    # issue "tensor parallelism": llama3-70b q4_0 tg128 + pp2048 at TP = 1, 2, .. (the GPUs present), then
    # llama3-405b q4_0 (larger than one GPU) at the smallest TP that holds it. Models made in memory.
    ng=$(nvidia-smi -L 2>/dev/null | wc -l)
    for tp in 1 2 4 8; do
      [ "$tp" -le "$ng" ] || break
      NCCL_NVLS_ENABLE=0 timeout 900 ./tern bench --synthetic llama3-70b --tp $tp -p 2048 -n 128 -r "$REPS" \
        --receipt "$OUT/bench-llama3-70b-q4_0-tp$tp.json" >"$OUT/tpbench-70b-$tp.md" 2>"$OUT/tpbench-70b-$tp.err"
      cat "$OUT/tpbench-70b-$tp.md"
      note "70b tp$tp" "$([ -s "$OUT/bench-llama3-70b-q4_0-tp$tp.json" ] && echo DONE || echo FAIL)" \
        "$(grep -E '\| (pp2048|tg128) \|' "$OUT/tpbench-70b-$tp.md" | awk -F'|' '{printf "%s %s ", $(NF-2), $(NF-1)}')"
    done
    for tp in 2 4 8; do
      [ "$tp" -le "$ng" ] || break
      NCCL_NVLS_ENABLE=0 timeout 900 ./tern bench --synthetic llama3-405b --tp $tp -p 512 -n 32 -r 1 \
        --receipt "$OUT/bench-llama3-405b-q4_0-tp$tp.json" >"$OUT/tpbench-405b-$tp.md" 2>"$OUT/tpbench-405b-$tp.err"
      cat "$OUT/tpbench-405b-$tp.md"; tail -3 "$OUT/tpbench-405b-$tp.err"
      note "405b tp$tp" "$([ -s "$OUT/bench-llama3-405b-q4_0-tp$tp.json" ] && echo DONE || echo FAIL)" \
        "$(grep -E '\| (pp512|tg32) \|' "$OUT/tpbench-405b-$tp.md" | awk -F'|' '{printf "%s %s ", $(NF-2), $(NF-1)}')"
      [ -s "$OUT/bench-llama3-405b-q4_0-tp$tp.json" ] && break
    done ;;
  serve)
    f=${SERVE_MODEL:-$(synth llama3-8b q4_0 32)}
    python3 bench/serve_receipt.py -m "$f" --device "${DEVICE:-cuda}" ${THREADS:+-t "$THREADS"} --streams "${N_STREAMS:-64}" \
      --prompt-tokens "${PROMPT_TOKENS:-512}" --gen-tokens "${GEN_TOKENS:-128}" --rounds "${SERVE_ROUNDS:-2}" \
      --prefix-ids "${PREFIX_IDS:-1500}" --server-args "${SERVE_ARGS:-}" --lcpp-bin "$LCPP_BIN" --log-dir "$OUT" \
      --out "$OUT/serve-$(basename "$f" .gguf).json" --md "$OUT/serve.md" >"$OUT/serve.log" 2>&1
    cat "$OUT/serve.md" 2>/dev/null
    note_last serve "$OUT/serve.log" ;;
  mixed)
    f=${SERVE_MODEL:-$(synth llama3-8b q4_0 32)}
    python3 bench/mixed_itl.py -m "$f" --device "${DEVICE:-cuda}" ${THREADS:+-t "$THREADS"} --streams "${MIXED_STREAMS:-16}" \
      --budgets "${MIXED_BUDGETS:-256,512,1024,2048,4096}" --long-tokens "${LONG_TOKENS:-32768}" \
      --baseline-tokens "${BASE_TOKENS:-64}" --rounds "${MIXED_ROUNDS:-2}" --server-args="${MIXED_ARGS:-}" \
      --timeout "${MIXED_TIMEOUT:-180}" --log-dir "$OUT" \
      --out "$OUT/mixed-$(basename "$f" .gguf).json" --md "$OUT/mixed.md" >"$OUT/mixed.log" 2>&1
    cat "$OUT/mixed.md" 2>/dev/null
    note_last mixed "$OUT/mixed.log" ;;
  peer)
    OUT="$OUT/peer" SYNTH_DIR="$SYNTH_DIR" LCPP_BIN="$LCPP_BIN" ROUNDS="${ROUNDS:-2}" REPS="${REPS:-1}" DEPTH="${DEPTH:-}" \
      bash bench/presets_peer.sh ${PEER_PRESETS:-} >"$OUT/peer.log" 2>&1
    cat "$OUT/peer/presets.md" 2>/dev/null
    note peer "$( [ -s "$OUT/peer/presets.md" ] && ! grep -q '| - / - |' "$OUT/peer/presets.md" && echo DONE || echo FAIL)" \
      "$OUT/peer/presets.md" ;;
  ppl)
    pf=${PPL_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}; ref=""; label=$(basename "$pf")
    [ "$pf" = models/SmolLM2-135M-Instruct.Q4_1.gguf ] && ref=tests/fixtures/perplexity/ref.tsv && label="SmolLM2-135M-Instruct Q4_1 (the default model)"
    if [ -z "${PPL_MODEL:-}" ] && [ ! -s "$pf" ]; then # not carried (98 MB): the same shapes and tokenizer, random weights
      gzip -dc tests/fixtures/perplexity/smollm2-tokenizer.gguf.gz >"$SYNTH_DIR/smollm2-tokenizer.gguf"
      pf=$SYNTH_DIR/smollm2-135m-q4_1-L30-vocab.gguf; ref=""; label="synthetic smollm2-135m q4_1 + SmolLM2's tokenizer (no default model here)"
      [ -s "$pf" ] || ./tern synth --arch smollm2-135m --type q4_1 --vocab-from "$SYNTH_DIR/smollm2-tokenizer.gguf" -o "$pf" \
        >"$OUT/synth-ppl.log" 2>&1
    fi
    python3 bench/ppl_receipt.py -m "$pf" -f tests/fixtures/perplexity/genesis.txt -c "${PPL_CTX:-512}" ${PPL_CHUNKS:+--chunks "$PPL_CHUNKS"} \
      ${THREADS:+-t "$THREADS"} --devices "${PPL_DEVICES:-$([ "${DEVICE:-cuda}" = cpu ] && echo cpu || echo cuda,cpu)}" \
      --lcpp-bin "$LCPP_BIN" ${ref:+--ref-tsv "$ref"} --model-label "$label" --log-dir "$OUT" \
      --out "$OUT/ppl.json" --md "$OUT/ppl.md" >"$OUT/ppl.log" 2>&1
    cat "$OUT/ppl.md" 2>/dev/null
    note_last ppl "$OUT/ppl.log" ;;
  *) echo "unknown step $s"; exit 2 ;;
  esac
  times+=("$s $(( $(date +%s) - ts ))s")
done
echo
echo "seconds a step: ${times[*]}" # for planning the device calls (a call ends at 600 s)
echo "step       | ok   | result"
echo "---------- | ---- | ------"
printf '%s\n' "${summary[@]}"
{ printf '%s\n' "${summary[@]}"; echo "seconds a step: ${times[*]}"; } >"$OUT/summary.txt"
if [ -n "${PACK:-}" ]; then # the device tool returns a few files a call: everything under $OUT as one archive
  (cd "$OUT" && tar czf "/tmp/$PACK" --exclude="./$PACK" . && find . -mindepth 1 -maxdepth 1 ! -name "$PACK" -exec rm -rf {} + &&
    mv "/tmp/$PACK" "$PACK") && echo "packed: $OUT/$PACK"
fi
printf '%s\n' "${summary[@]}" | grep -q '| FAIL' && exit 1 || exit 0
