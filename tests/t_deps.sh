#!/usr/bin/env bash
# t_deps: scripts/deps.sh's apt_get waits while another apt-get holds the lock, goes on once it is released, gives up
# with one line after TERN_APT_WAIT s, and does not wait on a failure with no lock held (issue 28: "the install script
# waits for the apt lock (bounded) instead of failing"). Needs neither root nor apt's real locks: apt_get is sourced
# with TERN_APT_LOCKS naming a file of the test's own, held by a background process (fuser sees it as deps.sh sees
# apt's), and a fake apt-get first on PATH that fails as apt-get does while that file is held (and a fake sudo, for a
# run as a user). apt_get polls every 5 s, so this takes about 15 s. Ends "t_deps: N passed, N failed".
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d)
holder=""
trap '[ -n "$holder" ] && kill "$holder" 2>/dev/null; rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL t_deps: $*"; }
if ! command -v fuser >/dev/null; then
  bad "fuser (psmisc) is missing: deps.sh cannot tell a held lock from any other failure, and so never waits"
  echo "t_deps: $pass passed, $fail failed"; exit 1
fi

mkdir "$T/bin"
L="$T/lock"; : >"$L"
cat >"$T/bin/apt-get" <<'SH'
#!/bin/sh
# apt-get as it behaves beside another apt-get: fails while a process holds the lock (or always, with FAKE_APT_FAIL);
# logs its arguments
echo "$*" >>"$FAKE_APT_LOG"
if fuser "$TERN_APT_LOCKS" >/dev/null 2>&1; then
  echo "E: Could not get lock $TERN_APT_LOCKS. It is held by process 1 (apt-get)" >&2; exit 100
fi
[ -z "${FAKE_APT_FAIL:-}" ] || { echo "E: Unable to locate package nope" >&2; exit 100; }
exit 0
SH
printf '#!/bin/sh\nexec "$@"\n' >"$T/bin/sudo"
chmod +x "$T/bin/apt-get" "$T/bin/sudo"
export PATH="$T/bin:$PATH" TERN_APT_LOCKS="$L" FAKE_APT_LOG="$T/log"

# hold SECONDS: a background process holds the lock file open (as apt-get holds its lock) for that long
hold() { ( exec 9>>"$L"; exec sleep "$1" ) & holder=$!; }
release() { kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null; holder=""; }
# run_apt WAIT [ENV...]: apt_get update in the background from the sourced deps.sh; its pid in apt_pid
run_apt() {
  local w=$1; shift
  : >"$T/log"
  env TERN_APT_WAIT="$w" "$@" bash -c 'source scripts/deps.sh; apt_get update -qq' >"$T/out" 2>"$T/err" &
  apt_pid=$!
}
# finish LIMIT: wait for apt_get at most LIMIT s; its status in rc (124 if it was still running: killed)
finish() {
  local end=$((SECONDS + $1))
  while kill -0 "$apt_pid" 2>/dev/null && [ $SECONDS -lt "$end" ]; do sleep 0.2; done
  if kill -0 "$apt_pid" 2>/dev/null; then kill "$apt_pid"; wait "$apt_pid" 2>/dev/null; rc=124
  else wait "$apt_pid"; rc=$?; fi
}
calls() { wc -l <"$T/log"; }

# 1. held, then released: apt_get keeps waiting while the lock is held, and succeeds soon after it is released
hold 120
t0=$SECONDS
run_apt 60
sleep 3
if kill -0 "$apt_pid" 2>/dev/null && grep -q "another apt-get holds the lock; waiting" "$T/err"; then ok
else bad "held: apt_get did not wait: $(head -c 300 "$T/err")"; fi
sleep 4  # a second try (after 5 s) finds the lock still held
release
finish 30; dt=$((SECONDS - t0))
n=$(calls)
if [ $rc -eq 0 ] && [ "$n" -ge 3 ] && [ $dt -ge 7 ] && [ $dt -le 20 ]; then ok
else bad "released: rc $rc after $dt s, $n apt-get calls (want 0, 7-20 s, 3 or more): $(tail -c 300 "$T/err")"; fi
# each try passes apt-get what is left of the bound for dpkg's own lock wait: 60 s first, less later
first=$(sed -n '1s/.*DPkg::Lock::Timeout=\([0-9]*\).*/\1/p' "$T/log"); last=$(tail -n 1 "$T/log" | sed 's/.*DPkg::Lock::Timeout=\([0-9]*\).*/\1/')
if [ "$first" = 60 ] && [ -n "$last" ] && [ "$last" -lt 60 ] && [ "$last" -gt 30 ]; then ok
else bad "lock timeouts passed: first '$first' last '$last' (want 60, then 31-59): $(cat "$T/log")"; fi

# 2. held past TERN_APT_WAIT: apt_get gives up with one line of its own, within the bound and one poll
hold 120
t0=$SECONDS
run_apt 3
finish 30; dt=$((SECONDS - t0))
release
giveup=$(grep -c "giving up" "$T/err")
if [ $rc -eq 1 ] && [ "$giveup" -eq 1 ] && [ $dt -ge 3 ] && [ $dt -le 15 ] &&
   tail -n 1 "$T/err" | grep -qx "deps: another apt-get still holds the lock after 3 s (TERN_APT_WAIT); giving up"; then ok
else bad "give up: rc $rc after $dt s, $giveup 'giving up' lines (want 1, 1, 3-15 s): $(tail -c 400 "$T/err")"; fi

# 3. a failure with no lock held (a missing package): no wait, apt-get's error and status at once
t0=$SECONDS
run_apt 60 FAKE_APT_FAIL=1
finish 30; dt=$((SECONDS - t0))
if [ $rc -eq 1 ] && [ $dt -le 2 ] && [ "$(calls)" -eq 1 ] && ! grep -q waiting "$T/err" && grep -q "Unable to locate" "$T/err"; then ok
else bad "no lock: rc $rc after $dt s, $(calls) calls: $(head -c 300 "$T/err")"; fi

# 4. nothing held: one call, success
run_apt 60
finish 30
if [ $rc -eq 0 ] && [ "$(calls)" -eq 1 ] && [ ! -s "$T/err" ]; then ok
else bad "free: rc $rc, $(calls) calls: $(head -c 300 "$T/err")"; fi

echo "t_deps: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
