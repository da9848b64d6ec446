#!/usr/bin/env bash
# Run every test binary in build/tests (and the shell tests in tests/*.sh), then print the total
# as "N passed, N failed". Exit status non-zero if any check failed or a binary crashed.
# TEST_JOBS of them (default: the CPU count) run at once, each with private temporary files; their summaries print
# in the serial order whatever finishes first. t_fuzz*.sh both make build-fuzz/, so they run one after the other as
# one job of the pool, started first with the other long ones (t_server, t_bench). TEST_ONLY="name ..." (test_x, t_y) runs
# only those.
set -u
cd "$(dirname "$0")/.."
# the tests' Python is the checkout's virtual environment (scripts/deps.sh test makes it: numpy, gguf, safetensors,
# the openai SDK), not the system's
[ -x .venv/bin/python3 ] && export PATH="$PWD/.venv/bin:$PATH"
J=${TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$J" -ge 1 ] 2>/dev/null || J=1
R=$(mktemp -d); trap 'rm -rf "$R"' EXIT
want() { [ -z "${TEST_ONLY:-}" ] && return 0; local b; b=$(basename "$1"); [[ " $TEST_ONLY " == *" ${b%.sh} "* ]]; }
all=()
for t in "${BUILD:-build}"/tests/test_*; do [ -x "$t" ] && want "$t" && all+=("$t"); done
for s in tests/t_*.sh; do [ -f "$s" ] && want "$s" && all+=("$s"); done
# one test: its output in $R/i.out, its exit status in $R/i.rc, its seconds in $R/i.s
one() {
  local t0=$SECONDS
  if [[ ${all[$1]} == *.sh ]]; then bash "${all[$1]}" >"$R/$1.out" 2>&1; else "${all[$1]}" >"$R/$1.out" 2>&1; fi
  echo $? >"$R/$1.rc"; echo $((SECONDS - t0)) >"$R/$1.s"
}
first=(); rest=(); fz=()
for i in "${!all[@]}"; do
  case "${all[$i]}" in tests/t_fuzz*) fz+=("$i") ;; tests/t_server.sh | tests/t_bench.sh) first+=("$i") ;; *) rest+=("$i") ;; esac
done
chain() { for i in "$@"; do one "$i"; done; }
slot() { while [ "$(jobs -rp | wc -l)" -ge "$J" ]; do wait -n; done; }
[ ${#fz[@]} -gt 0 ] && { slot; chain "${fz[@]}" & }
for i in "${first[@]}" "${rest[@]}"; do slot; one "$i" & done
wait
pass=0; fail=0
for w in ${TEST_ONLY:-}; do # a name that matches no test is a failure, not a quietly smaller run
  printf '%s\n' "${all[@]}" | grep -qE "/$w(\.sh)?\$" || { echo "FAIL run.sh: TEST_ONLY names '$w', which is no test here"; fail=$((fail + 1)); }
done
for i in "${!all[@]}"; do
  t=${all[$i]}; out=$(cat "$R/$i.out" 2>/dev/null); rc=$(cat "$R/$i.rc" 2>/dev/null || echo 255)
  line=$(printf '%s\n' "$out" | grep -E ': [0-9]+ passed, [0-9]+ failed' | tail -n 1)
  if [[ $t == *.sh ]]; then
    printf '%s\n' "$out" | grep -E '^FAIL' | tail -n 20
    if [ -z "$line" ]; then echo "$t: printed no summary (rc=$rc)"; fail=$((fail + 1)); continue; fi
    echo "$line"
  else
    printf '%s\n' "$out" | grep -E '^(FAIL|[A-Za-z0-9_.-]+: [0-9]+ passed)' | tail -n 40
    if [ -z "$line" ]; then
      echo "$t: crashed or printed no summary (rc=$rc)"; printf '%s\n' "$out" | tail -n 5; fail=$((fail + 1)); continue
    fi
  fi
  p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/')
  f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/')
  pass=$((pass + p)); fail=$((fail + f))
  [[ $t != *.sh ]] && [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && { echo "$t: exit $rc"; fail=$((fail + 1)); }
done
echo "slowest (s): $(for i in "${!all[@]}"; do echo "$(cat "$R/$i.s" 2>/dev/null || echo 0) $(basename "${all[$i]}")"; done |
  sort -rn | head -n 6 | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
