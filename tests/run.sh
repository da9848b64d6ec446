#!/usr/bin/env bash
# Run every test binary in build/tests (and the shell tests in tests/*.sh), then print the total
# as "N passed, N failed". Exit status non-zero if any check failed or a binary crashed.
set -u
cd "$(dirname "$0")/.."
# the tests' Python is the checkout's virtual environment (scripts/deps.sh test makes it: numpy, gguf, safetensors,
# the openai SDK), not the system's
[ -x .venv/bin/python3 ] && export PATH="$PWD/.venv/bin:$PATH"
pass=0; fail=0
for t in "${BUILD:-build}"/tests/test_*; do
  [ -x "$t" ] || continue
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -E '^(FAIL|[A-Za-z0-9_.-]+: [0-9]+ passed)' | tail -n 40
  line=$(printf '%s\n' "$out" | grep -E ': [0-9]+ passed, [0-9]+ failed' | tail -n 1)
  if [ -z "$line" ]; then
    echo "$t: crashed or printed no summary (rc=$rc)"; printf '%s\n' "$out" | tail -n 5; fail=$((fail + 1)); continue
  fi
  p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/')
  f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/')
  pass=$((pass + p)); fail=$((fail + f))
  [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && { echo "$t: exit $rc"; fail=$((fail + 1)); }
done
for s in tests/t_*.sh; do
  [ -f "$s" ] || continue
  out=$(bash "$s" 2>&1); rc=$?
  line=$(printf '%s\n' "$out" | grep -E ': [0-9]+ passed, [0-9]+ failed' | tail -n 1)
  printf '%s\n' "$out" | grep -E '^FAIL' | tail -n 20
  if [ -z "$line" ]; then echo "$s: printed no summary (rc=$rc)"; fail=$((fail + 1)); continue; fi
  echo "$line"
  p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/')
  f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/')
  pass=$((pass + p)); fail=$((fail + f))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
