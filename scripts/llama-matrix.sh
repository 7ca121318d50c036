#!/usr/bin/env bash
# One cgram drop-in binary under several llama.cpp versions: the quick
# llama-server end-to-end run (scripts/llama-server-e2e.sh --quick
# --server-only: response_format with real schemas, a raw grammar, tool
# calls with tool_choice required and auto, lazy triggers, bad grammars)
# against the llama-server of each llama-cpp-python sdist below, all with
# the drop-in built once against the newest llama.h.
#
#   scripts/llama-matrix.sh              # every version below
#   scripts/llama-matrix.sh 0.3.16 ...   # these versions
#
# Each llama.cpp is built once and cached (scripts/llama-build.sh with
# CGRAM_LLAMA_CPP_PYTHON; about 7 minutes each on 2 idle cores), so a
# rerun costs the runs alone. Logs in build/llama-matrix/<version>.log.
# Exit status 0 when every version passed.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# Newest first: the drop-in is built against it. 0.3.36 vendors llama.cpp
# of 2026-10 (sampler interface with backend_reset and copy_state), 0.3.24
# of 2026-06 (the first backend members), 0.3.16 of 2025-08 (the six
# original members; no llama_log_get).
versions=(0.3.36 0.3.24 0.3.16)
[ $# -gt 0 ] && versions=("$@")
build="${CGRAM_BUILD:-$root/build}"
out="$build/llama-matrix"
mkdir -p "$out"

newest="$(scripts/llama-build.sh >/dev/null && scripts/llama-build.sh --print prefix)"
echo "==> the drop-in, built once against $newest"
scripts/install-llama-dropin.sh "$newest" "$build/llama-matrix/dropin" >/dev/null
launcher="$build/llama-matrix/dropin/bin/cgram-llama"

failed=()
for v in "${versions[@]}"; do
  echo "==> llama-cpp-python $v"
  log="$out/$v.log"
  if CGRAM_LLAMA_CPP_PYTHON="$v" scripts/llama-build.sh >"$out/$v.build.log" 2>&1 &&
    CGRAM_LLAMA_CPP_PYTHON="$v" CGRAM_LLAMA_LAUNCHER="$launcher" \
      scripts/llama-server-e2e.sh --quick --server-only >"$log" 2>&1; then
    echo "    passed ($(grep -c '^ok  ' "$log") checks; log: $log)"
  else
    echo "    FAILED (log: $log, build: $out/$v.build.log)"
    tail -n 20 "$log" 2>/dev/null || tail -n 20 "$out/$v.build.log"
    failed+=("$v")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "llama-matrix.sh: failed on ${failed[*]}" >&2
  exit 1
fi
echo "llama-matrix.sh: the drop-in passed on ${versions[*]}"
