#!/usr/bin/env bash
# The soak (issue 17, "Long runs"): `cgram-bench soak` through the C API
# with the Llama 3 tokenizer, MaskBench schemas, any JSON, llama.cpp's GBNF
# examples, regexes and a lazy tool-call grammar; then every completed
# schema output is validated with Python's jsonschema
# (scripts/lib/soak_validate.py).
#
#   scripts/soak.sh            # 1,000,000 tokens over 200 schemas (about a minute)
#   scripts/soak.sh --quick    # 100,000 tokens over 12 schemas (CI, ~15 s)
#   scripts/soak.sh [--quick] EXTRA...   # more options for cgram-bench soak
#
# MaskBench: $CGRAM_MASKBENCH (a folder of MaskBench files: the full run
# wants the whole maskbench-dev), else the 12 schemas vendored in
# tests/data/maskbench-subset (the ones --quick took from the whole
# folder). The schema outputs go to $CGRAM_SOAK_DUMP when set (kept). Fails
# if the soak finds a broken invariant, an output that does not parse,
# resident memory that grew past its tolerance after the warm-up, or an
# output that does not validate; or if some kind of output (schemas, JSON,
# regexes, tool calls) was never completed and checked.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# The full run gives the vocabulary's lexeme cache 64 MiB, less than the
# ~120 MB the 200 schemas' lexemes and token sets come to, so that it
# evicts all along (and every mask is checked while it does). Its warm-up
# is 40%: the library's live heap is flat from 10% on (a build with the
# system allocator counts it), but mimalloc keeps the pages it frees and
# reaches its high-water mark once the largest transient compiles
# (Github_ultra---o12652, JsonSchemaStore---aerleon-definitions) have met a
# full cache, about 375k tokens in (docs/benchmark-history.md, "Soak").
args=(--tokens 1000000 --pool 200 --lexeme-budget 67108864 --warmup-percent 40)
if [ "${1:-}" = --quick ]; then
  shift
  args=(--tokens 100000 --pool 12 --warmup-percent 20)
fi

maskbench="${CGRAM_MASKBENCH:-$root/tests/data/maskbench-subset}"
[ -d "$maskbench" ] || { echo "soak.sh: CGRAM_MASKBENCH=$maskbench is not a directory" >&2; exit 1; }
if [ -z "${CGRAM_MASKBENCH:-}" ] && [ "${args[1]}" = 1000000 ]; then
  echo "soak.sh: the full run over the 12 vendored schemas; set CGRAM_MASKBENCH to the whole maskbench-dev for 200"
fi
gbnf="$root/tests/data/llamacpp-grammar/gbnf"
tokenizer="${CGRAM_CACHE:-$root/.cache}/tokenizers/llama3/tokenizer.json"
[ -f "$tokenizer" ] || scripts/fetch-tokenizers.sh

if ! python3 -c "import jsonschema" 2>/dev/null; then
  echo "installing the Python package jsonschema"
  user=--user
  if python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then user=; fi
  python3 -m pip install $user --quiet --disable-pip-version-check jsonschema 2>/dev/null ||
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install $user --quiet --disable-pip-version-check jsonschema
fi

cargo build --release --quiet --bin cgram-bench
dump="${CGRAM_SOAK_DUMP:-}"   # where to keep the outputs; a temporary file by default
out="$(mktemp)"               # the soak's report
if [ -z "$dump" ]; then
  dump="$(mktemp --suffix=.jsonl)"
  trap 'rm -f "$dump" "$out"' EXIT
else
  trap 'rm -f "$out"' EXIT
fi
cmd=("${CARGO_TARGET_DIR:-target}/release/cgram-bench" soak --tokenizer "$tokenizer" --schemas "$maskbench"
  --gbnf "$gbnf/arithmetic.gbnf" --gbnf "$gbnf/list.gbnf" --gbnf "$gbnf/c.gbnf"
  --gbnf-json "$gbnf/json.gbnf" --gbnf-json "$gbnf/json_arr.gbnf"
  "${args[@]}" --dump "$dump" "$@")
echo "${cmd[*]}"
status=0
"${cmd[@]}" | tee "$out" || status=$?

# The number before LABEL on the report's line starting with PREFIX.
count() { sed -n "/^$1/s/.* \([0-9][0-9]*\) $2.*/\1/p" "$out" | head -n 1; }
# Every kind of output was completed and checked, and enough of them.
for label in "re-accepted" "parsed as JSON" "full regex matches" "tool calls parsed" "schema outputs dumped"; do
  n="$(count "checks: " "$label")"
  [ "${n:-0}" -gt 0 ] || { echo "soak.sh: no output checked as \"$label\"" >&2; status=1; }
done
n="$(count "outputs: " "completed")"
[ "${n:-0}" -ge 50 ] || { echo "soak.sh: ${n:-no} outputs completed, fewer than 50" >&2; status=1; }
grep -q '^verdict: PASS' "$out" || { echo "soak.sh: no 'verdict: PASS'" >&2; status=1; }
python3 scripts/lib/soak_validate.py "$dump" || status=1
exit $status
