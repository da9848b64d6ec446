#!/usr/bin/env bash
# t_server: `tern serve` through the official openai SDK and raw HTTP (tests/server/test_server.py: the SDK's calls,
# greedy = tern run alone and beside 16 streams, /health while loading, 64 concurrent streams with and without
# disconnects, the prefix cache and its LRU eviction on a 16-block pool, a disconnect freed within one step, every
# error as a 4xx, SIGTERM and SIGINT). The SDK lives in .venv (scripts/deps.sh test makes it). Ends "t_server: N
# passed, N failed"; about 2 minutes on 2 cores.
set -u
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if ! "$PY" -c 'import openai' 2>/dev/null; then
  echo "FAIL t_server: the openai SDK is missing from .venv (run scripts/deps.sh test)"
  echo "t_server: 0 passed, 1 failed"
  exit 1
fi
[ -x ./tern ] || { echo "FAIL t_server: ./tern is not built"; echo "t_server: 0 passed, 1 failed"; exit 1; }
exec timeout 900 "$PY" tests/server/test_server.py
