#!/usr/bin/env bash
# bench/cpu.sh: tern vs llama.cpp (llama-cpp-python==0.3.36's bundled build) on the CPU, same GGUF,
# same thread count, same 128-token prompt (bench/prompt128.txt), 128 greedy tokens with EOS ignored,
# interleaved A B A B ..., ROUNDS rounds (default 3). Writes a JSON receipt (default bench/cpu_receipt.json)
# with every sample, the medians, the ratios and whether the generated tokens matched.
# Usage: bench/cpu.sh [-m MODEL] [-t THREADS] [-r ROUNDS] [-o RECEIPT]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
THREADS=$(nproc)
ROUNDS=3
OUTF=bench/cpu_receipt.json
while [ $# -gt 0 ]; do
  case $1 in
    -m) MODEL=$2; shift 2 ;; -t) THREADS=$2; shift 2 ;; -r) ROUNDS=$2; shift 2 ;; -o) OUTF=$2; shift 2 ;;
    *) echo "bench/cpu.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
N_GEN=128
PROMPT=bench/prompt128.txt
make -s deps tern >/dev/null
[ -f "$MODEL" ] || make -s model
python3 -c 'import llama_cpp, numpy' 2>/dev/null || python3 -m pip install -q numpy llama-cpp-python==0.3.36
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  ./tern run -m "$MODEL" -f "$PROMPT" -n $N_GEN --temp 0 --ignore-eos -t "$THREADS" >"$T/tern_out_$r" 2>"$T/tern_err_$r"
  python3 bench/llama_cpp_arm.py "$MODEL" "$PROMPT" $N_GEN "$THREADS" >"$T/llama_$r.json"
  echo "round $r: tern $(tail -n 1 "$T/tern_err_$r")" >&2
  echo "round $r: llama.cpp $(cut -c1-120 "$T/llama_$r.json")" >&2
done
python3 - "$T" "$ROUNDS" "$MODEL" "$THREADS" "$OUTF" "$PROMPT" <<'PY'
import hashlib, json, os, platform, re, statistics, subprocess, sys, datetime
T, R, model, threads, outf, prompt = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
rx = re.compile(r"prefill: (\d+) tokens in ([\d.]+) s, ([\d.]+) tok/s \| decode: (\d+) tokens in ([\d.]+) s, ([\d.]+) tok/s")
rounds = []
for r in range(1, R + 1):
    m = rx.search(open(f"{T}/tern_err_{r}").read())
    ll = json.loads(open(f"{T}/llama_{r}.json").read())
    tern_text = open(f"{T}/tern_out_{r}", "rb").read()
    rounds.append({"tern": {"pp_tokens": int(m[1]), "pp_tok_s": float(m[3]), "tg_tokens": int(m[4]), "tg_tok_s": float(m[6]),
                            "text_sha256": hashlib.sha256(tern_text).hexdigest()},
                   "llama_cpp": {k: ll[k] for k in ("pp_tokens", "pp_tok_s", "tg_tokens", "tg_tok_s")},
                   "llama_cpp_gen_ids_sha256": hashlib.sha256(json.dumps(ll["gen_ids"]).encode()).hexdigest()})
med = lambda arm, k: statistics.median(x[arm][k] for x in rounds)
res = {k: {"tern": med("tern", k), "llama_cpp": med("llama_cpp", k)} for k in ("pp_tok_s", "tg_tok_s")}
for k in res:
    res[k]["ratio_tern_over_llama_cpp"] = res[k]["tern"] / res[k]["llama_cpp"]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
# "AMD EPYC" names every host this VM lands on: the family and model tell Zen 4 (25/17) from Zen 5 (26/...)
fam = {l.split(":", 1)[0].strip(): l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if ":" in l}
cpu += f" (family {fam.get('cpu family', '?')}, model {fam.get('model', '?')})"
commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip())
receipt = {"bench": "bench/cpu.sh", "date": datetime.datetime.utcnow().isoformat() + "Z", "git_commit": commit, "git_dirty": dirty,
           "cpu": cpu, "n_cores": os.cpu_count(), "threads": threads, "model": os.path.basename(model),
           "prompt_file": prompt, "n_prompt": rounds[0]["tern"]["pp_tokens"], "n_gen": 128, "rounds": rounds, "median": res,
           "method": "interleaved tern/llama.cpp per round; tern tok/s from its stderr line (decode includes sampling), "
                     "llama.cpp tok/s from llama_perf_context (eval only); llama.cpp via llama-cpp-python==0.3.36"}
json.dump(receipt, open(outf, "w"), indent=1)
print(f"pp{receipt['n_prompt']}: tern {res['pp_tok_s']['tern']:.1f} tok/s, llama.cpp {res['pp_tok_s']['llama_cpp']:.1f} tok/s, ratio {res['pp_tok_s']['ratio_tern_over_llama_cpp']:.2f}")
print(f"tg128: tern {res['tg_tok_s']['tern']:.1f} tok/s, llama.cpp {res['tg_tok_s']['llama_cpp']:.1f} tok/s, ratio {res['tg_tok_s']['ratio_tern_over_llama_cpp']:.2f}")
print("receipt:", outf)
PY
