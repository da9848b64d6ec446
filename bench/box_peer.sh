#!/usr/bin/env bash
# box_peer.sh: the same-box peer's llama-batched-bench (shared/peers/README.md: llama.cpp of 2026-10-01) compiled on the
# dev machine and carried to the device box, so that issue 26's receipt (gpu_check.sh parallel) spends no device time on
# the peer's ~5-minute build there.
#   bench/box_peer.sh pack     (dev machine) ../shared/peers/fetch_llamacpp.sh into .box/peer, a static CUDA build for
#       sm_90 only (the shared cmake line + -G Ninja -DBUILD_SHARED_LIBS=OFF -DCMAKE_CUDA_ARCHITECTURES=90-real) of
#       llama-batched-bench in $LCPP_SRC (/tmp/lcpp-dev), stripped, xz'd to .box/lcpb/lbb.xz (~21 MB). About 25 minutes
#       on 2 cores (2026-12-07), once a machine.
#   bench/box_peer.sh unpack   (box) .box/lcpb/lbb.xz -> /tmp/lcpp/build/bin/llama-batched-bench (gpu_check.sh's LCPP_BIN).
# The tree (~38 MiB), .box/sysx and .box/lcpb fit one call's 64 MiB; .box/binx does not fit beside them, so link tern on
# the box in an earlier call (box_bins.sh unpack): a warm box keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
unxz_to() { # xz -dc, or Python's lzma where the box has no xz
    if command -v xz >/dev/null; then xz -dc "$1" >"$2"; else python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "$1" "$2"; fi
}
case "${1:-}" in
pack)
    S=${LCPP_SRC:-/tmp/lcpp-dev}
    [ -s .box/peer/lcpp.tgz ] || ../shared/peers/fetch_llamacpp.sh .box/peer
    if [ ! -x "$S/build/bin/llama-batched-bench" ]; then
        rm -rf "$S" && mkdir -p "$S" && tar xzf .box/peer/lcpp.tgz -C "$S" --strip-components=1
        cmake -S "$S" -B "$S/build" -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DBUILD_SHARED_LIBS=OFF \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
            -DCMAKE_BUILD_TYPE=Release >"$S/cmake.log"
        cmake --build "$S/build" -j"$(nproc)" --target llama-batched-bench >"$S/build.log"
    fi
    mkdir -p .box/lcpb
    tmp=$(mktemp)
    cp "$S/build/bin/llama-batched-bench" "$tmp" && strip "$tmp" && xz -T0 -6 -c "$tmp" >.box/lcpb/lbb.xz
    rm -f "$tmp"
    echo "box_peer: .box/lcpb/lbb.xz ($(du -h .box/lcpb/lbb.xz | cut -f1)), sha256 $(sha256sum .box/lcpb/lbb.xz | cut -c1-16)"
    ;;
unpack)
    [ -s .box/lcpb/lbb.xz ] || { echo "box_peer: nothing carried (.box/lcpb/lbb.xz)"; exit 1; }
    mkdir -p /tmp/lcpp/build/bin
    unxz_to .box/lcpb/lbb.xz /tmp/lcpp/build/bin/llama-batched-bench
    chmod +x /tmp/lcpp/build/bin/llama-batched-bench
    /tmp/lcpp/build/bin/llama-batched-bench --version 2>&1 | tail -2
    ;;
*)
    echo "usage: bench/box_peer.sh pack | unpack" >&2; exit 2 ;;
esac
