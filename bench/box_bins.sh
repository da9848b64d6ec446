#!/usr/bin/env bash
# box_bins.sh: compile the CUDA build on the dev machine and carry it to the device box, so that a box call spends its
# device time on the GPU rather than on nvcc (a fresh box's `make CUDA=1 -j16` of tern and three tests took 114 s to
# over 150 s of a session's ~1,800, 2026-12-07). What travels is the library (libtern.a, debug info stripped, xz: ~20
# MB); the box links tern and the tests from it with make (`-o` keeps make from rebuilding the archive's objects), a
# few seconds. Linked binaries would be ~20-33 MB each (every one holds every kernel): over the carry limit together.
#   bench/box_bins.sh pack     (dev machine) make CUDA=1 CUDA_ARCHS=-arch=sm_90 (the wgmma files sm_90a) the library in
#       .box/bb (a build folder of its own: make does not track CUDA_ARCHS), and write .box/binx/libtern.a.xz with
#       .box/binx/stamp, the hash of the sources it was compiled from (srchash below).
#   bench/box_bins.sh unpack [TARGET...]   (box) if the stamp matches this tree's sources: the archive into
#       build-cuda/, then `make CUDA=1 -o build-cuda/libtern.a TARGET...` (default: make all's: tern, the GPU and CPU tests), and a run of
#       ./tern; exit 1 otherwise (the caller builds instead: `bash bench/box_bins.sh unpack || make ...`).
# Carry .box/binx with .box/sysx (PCRE2's headers and libraries for the link; PCRE env as gpu_check.sh's PCRE).
set -euo pipefail
cd "$(dirname "$0")/.."
unxz_to() { # xz -dc, or Python's lzma where the box has no xz
    if command -v xz >/dev/null; then xz -dc "$1" >"$2"; else python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "$1" "$2"; fi
}
D=.box/binx
srchash() { # the sources the CUDA library is compiled from, by content (the same set on the box's copy of the tree)
    find Makefile include src -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name Makefile \) |
        LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
}
case "${1:-}" in
pack)
    B=.box/bb
    make CUDA=1 BUILD=$B CUDA_ARCHS=-arch=sm_90 -j"$(nproc)" $B/libtern.a
    mkdir -p "$D"
    tmp=$(mktemp)
    cp $B/libtern.a "$tmp" && strip -d "$tmp" && xz -T0 -6 -c "$tmp" >"$D/libtern.a.xz"
    rm -f "$tmp"
    srchash >"$D/stamp"
    echo "box_bins: $B/libtern.a -> $D/libtern.a.xz ($(du -h "$D/libtern.a.xz" | cut -f1)), stamp $(cat "$D/stamp")"
    ;;
unpack)
    shift
    [ -s "$D/libtern.a.xz" ] && [ -s "$D/stamp" ] || { echo "box_bins: nothing carried"; exit 1; }
    h=$(srchash)
    [ "$h" = "$(cat "$D/stamp")" ] || { echo "box_bins: compiled from other sources ($(cat "$D/stamp"), tree $h)"; exit 1; }
    mkdir -p build-cuda
    unxz_to "$D/libtern.a.xz" build-cuda/libtern.a
    P=${PCRE:-$PWD/.box/sys}
    T=("$@")
    [ ${#T[@]} -gt 0 ] || T=(tern $(ls tests/gpu/*.c tests/test_*.c |
        sed 's|^tests/gpu/\(.*\)\.c$|build-cuda/gpu/\1|; s|^tests/\(test_.*\)\.c$|build-cuda/tests/\1|'))
    make CUDA=1 CUDA_ARCHS=-arch=sm_90 CFLAGS="-I$P/include -L$P/lib" -o build-cuda/libtern.a -j"$(nproc)" "${T[@]}" >/tmp/box_bins.log 2>&1 ||
        { tail -5 /tmp/box_bins.log; echo "box_bins: the link failed"; exit 1; }
    ./tern --version >/dev/null 2>&1 || { echo "box_bins: ./tern does not run: $(./tern --version 2>&1 | head -1)"; exit 1; }
    echo "box_bins: linked ${T[*]} from the carried library of $h"
    ;;
*)
    echo "usage: bench/box_bins.sh pack | unpack [TARGET...]" >&2
    exit 2
    ;;
esac
