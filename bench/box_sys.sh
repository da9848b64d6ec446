#!/usr/bin/env bash
# bench/box_sys.sh: the headers and shared libraries the GPU box lacks (PCRE2, libmicrohttpd with gnutls, cJSON,
# libedit), copied from this machine's Debian packages into .box/sys/ (git-ignored, ~8 MB) to carry to the box:
#
#   bench/box_sys.sh                      (needs a build of ./tern here: its ldd closure but CUDA's is what is copied)
#   device: carry [".box/sys"], then on the box
#     PCRE=$PWD/.box/sys bash bench/gpu_check.sh ...     (gpu_check.sh adds -I/-L and LD_LIBRARY_PATH from PCRE)
#
# Plain files only (the device tool does not carry links): each library under its soname and its link name.
set -eu
cd "$(dirname "$0")/.."
[ -x ./tern ] || { echo "box_sys: build ./tern here first (make tern)" >&2; exit 2; }
out=.box/sys
rm -rf "$out" && mkdir -p "$out/include" "$out/lib"
for h in pcre2.h microhttpd.h cjson editline; do
  [ -e "/usr/include/$h" ] || { echo "box_sys: /usr/include/$h missing (make deps installs the -dev packages)" >&2; exit 2; }
  cp -r "/usr/include/$h" "$out/include/"
done
# every shared library ./tern needs but libc and libm (the box has those), under its soname
ldd ./tern | awk '/=> \//{print $1, $3}' | while read -r so path; do
  case $so in libc.so.*|libm.so.*|ld-linux*|linux-vdso*) continue ;; esac
  case $so in libcu*|libnv*|libstdc++*|libgcc_s*) continue ;; esac # a CUDA build's: the box has its own CUDA and C++ runtime
  cp -L "$path" "$out/lib/$so"
done
# the link-time names the Makefile's -l flags look for
for n in pcre2-8 microhttpd cjson edit; do
  f=$(ls "$out/lib/lib$n.so."* 2>/dev/null | head -1)
  [ -n "$f" ] || { echo "box_sys: lib$n not in ./tern's closure" >&2; exit 2; }
  cp "$f" "$out/lib/lib$n.so"
done
echo "box_sys: $(du -sh "$out" | cut -f1) in $out ($(ls "$out/lib" | wc -l) libraries)"
