#!/usr/bin/env bash
# bench/box_pieces.sh: get a file larger than the device tool's 64 MiB a call (the tree and its carries together) onto
# the GPU box: split it into pieces under .box/pieces/ (git-ignored) that fit beside the tree, and print one device
# command a piece (each appends its piece to the file's place on the box) and a last one that checks the sha256.
#
#   bench/box_pieces.sh FILE [PIECE_MiB]     (default: 64 MiB less the tree's size, less 2 MiB)
#
# Run the printed commands back to back, each carrying its one piece (carry: [".box/pieces/NAME.NN"]): the box keeps
# what a call writes only while it stays warm (about 30 s idle), so a gap between calls loses the pieces so far. The
# file lands where it is here (e.g. models/gemma-3-270m-q4_k_m.gguf, for bench/gpu_check.sh realmodel).
set -eu
cd "$(dirname "$0")/.."
f=${1:?usage: bench/box_pieces.sh FILE [PIECE_MiB]}
[ -s "$f" ] || { echo "box_pieces: no file $f" >&2; exit 2; }
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
untracked=$(git ls-files -z --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -1 | cut -f1)
mib=${2:-$(( (64 * 1048576 - tree - ${untracked:-0}) / 1048576 - 2 ))}
[ "$mib" -ge 4 ] || { echo "box_pieces: the tree leaves no room for pieces ($mib MiB)" >&2; exit 2; }
name=$(basename "$f")
mkdir -p .box/pieces
rm -f ".box/pieces/$name".*
split -b "${mib}M" -d -a 2 "$f" ".box/pieces/$name."
sum=$(sha256sum "$f" | cut -d' ' -f1)
n=$(ls ".box/pieces/$name".* | wc -l)
echo "# $f: $n pieces of <= $mib MiB in .box/pieces/ (tree $((tree / 1048576)) MiB); sha256 $sum"
first=1
for p in .box/pieces/"$name".*; do
  if [ $first = 1 ]; then op=">"; first=0; else op=">>"; fi
  echo "carry [\"$p\"]: mkdir -p $(dirname "$f") && cat $p $op $f.part && ls -l $f.part"
done
echo "last: mv $f.part $f && echo '$sum  $f' | sha256sum -c"
