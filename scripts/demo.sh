#!/usr/bin/env bash
# The main job: build and install cgram into build/prefix, build the C
# examples against the installed package (CMake find_package only), and run
# them on the real Llama 3 tokenizer with llama.cpp's GBNF grammars:
#   walk    follows given texts token by token through a grammar;
#   sample  generates from random logits under a grammar, then verifies
#           every output (and demo.sh checks JSON outputs with Python).
#
# Environment: CGRAM_CACHE (tokenizer cache, default <repo>/.cache),
# CGRAM_TOKENIZER (another tokenizer.json), CGRAM_BUILD (default <repo>/build).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${CGRAM_BUILD:-$root/build}"
prefix="$build/prefix"
examples="$build/c-examples"
step() { printf '\n==> %s\n' "$*"; }

step "tools"
scripts/lib/install-deps.sh

step "tokenizers"
tokenizer="${CGRAM_TOKENIZER:-${CGRAM_CACHE:-$root/.cache}/tokenizers/llama3/tokenizer.json}"
if [ -z "${CGRAM_TOKENIZER:-}" ]; then
  scripts/fetch-tokenizers.sh
fi
[ -f "$tokenizer" ] || { echo "demo.sh: no tokenizer at $tokenizer" >&2; exit 1; }

gbnf="$root/tests/data/llamacpp-grammar/gbnf"
[ -f "$gbnf/json.gbnf" ] || { echo "demo.sh: llama.cpp's example grammars are missing" >&2; exit 1; }

step "build and install cgram into $prefix"
scripts/install.sh "$prefix"

step "build the C examples with find_package(cgram)"
cmake -S c-examples -B "$examples" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$examples" --parallel 2

step "walk: a JSON object through llama.cpp's json.gbnf"
"$examples/walk" "$tokenizer" "$gbnf/json.gbnf" \
  '{"name": "cgram", "tags": ["c", "rust"], "version": 1, "ok": true, "pi": 3.14}'

step "walk: an equation through llama.cpp's arithmetic.gbnf"
"$examples/walk" "$tokenizer" "$gbnf/arithmetic.gbnf" $'a+(b*2)=c\nx1 = 42\n'

samples="$build/samples"
rm -rf "$samples"
mkdir -p "$samples"

step "sample: small JSON records (c-examples/grammars/record.gbnf)"
"$examples/sample" "$tokenizer" c-examples/grammars/record.gbnf \
  --n 5 --max-tokens 200 --seed 1 --out "$samples/record"

step "sample: llama.cpp's json.gbnf (outputs may stop at the length limit)"
"$examples/sample" "$tokenizer" "$gbnf/json.gbnf" \
  --n 4 --max-tokens 64 --seed 2 --eos-bias 8 --out "$samples/json"

step "sample: llama.cpp's arithmetic.gbnf"
"$examples/sample" "$tokenizer" "$gbnf/arithmetic.gbnf" \
  --n 4 --max-tokens 64 --seed 3 --eos-bias 8

step "check the complete JSON outputs with python3 -m json.tool"
n_record=0
n_json=0
for f in "$samples"/record-*.txt "$samples"/json-*.txt; do
  [ -e "$f" ] || continue
  python3 -m json.tool "$f" >/dev/null || { echo "demo.sh: $f is not valid JSON:" >&2; cat "$f" >&2; exit 1; }
  case "$f" in */record-*) n_record=$((n_record + 1)) ;; *) n_json=$((n_json + 1)) ;; esac
done
echo "valid JSON: $n_record record outputs, $n_json json.gbnf outputs"
[ "$n_record" -gt 0 ] || { echo "demo.sh: no complete record output" >&2; exit 1; }

step "demo done"
