#!/usr/bin/env bash
# t_page: the chat page of `tern serve` in headless Chromium (tests/server/test_page.py through selenium, Debian's
# chromium + chromium-driver; scripts/deps.sh test installs them). Ends "t_page: N passed, N failed".
set -u
cd "$(dirname "$0")/.."
PY=.venv/bin/python
missing=""
"$PY" -c 'import openai, selenium' 2>/dev/null || missing="the openai and selenium packages in .venv"
command -v chromium >/dev/null && command -v chromedriver >/dev/null || missing="${missing:+$missing, }chromium and chromium-driver"
if [ -n "$missing" ]; then
  echo "FAIL t_page: missing $missing (run scripts/deps.sh test)"
  echo "t_page: 0 passed, 1 failed"
  exit 1
fi
exec timeout 300 "$PY" tests/server/test_page.py
