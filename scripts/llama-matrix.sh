#!/usr/bin/env bash
# One cgram drop-in binary under several llama.cpp versions: the quick
# llama-server end-to-end run (scripts/llama-server-e2e.sh --quick
# --server-only: response_format with real schemas, a raw grammar, tool
# calls with tool_choice required and auto, lazy triggers, bad grammars)
# against the llama-server of each llama-cpp-python sdist below, all with
# the drop-in built once against the newest llama.h.
#
#   scripts/llama-matrix.sh              # the older versions below
#   scripts/llama-matrix.sh 0.3.36 ...   # these versions
#
# The checks were written against the newest llama.cpp, and older ones
# differ before any grammar engine runs (a GBNF syntax error answered 200,
# a schema converter that does not know `format: ipv4`, an uncaught
# std::regex_error that ends the server). So each version runs twice: with
# llama.cpp's own samplers (CGRAM_LLAMA=off), then with cgram; a version
# passes when every check that passed with llama.cpp's own samplers passes
# with cgram, and the server log shows cgram running every grammar. The two runs' logs: build/llama-matrix/<version>.{own,cgram}.log.
#
# First, the drop-in's run-time check of the sampler interface under a
# stand-in libllama that lays it out another way (it must stay off).
#
# Each llama.cpp is built once and cached (scripts/lib/llama-build.sh with
# CGRAM_LLAMA_CPP_PYTHON; 2-7 minutes each on 2 cores), so a rerun costs
# the runs alone. Exit status 0 when every version passed.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# The drop-in is built against the newest, 0.3.36 (llama.cpp of 2026-10,
# sampler interface with backend_reset and copy_state; CI's llama-server
# stage runs it there), and run here under 0.3.35 (llama.cpp 4df29be of
# mid-August 2026, days from b10488, the one ollama 0.30 pins), 0.3.24
# (2026-06, the first backend members) and 0.3.16 (2025-08, the six
# original members; no llama_log_get).
versions=(0.3.35 0.3.24 0.3.16)
[ $# -gt 0 ] && versions=("$@")
build="${CGRAM_BUILD:-$root/build}"
out="$build/llama-matrix"
mkdir -p "$out"

newest="$(scripts/lib/llama-build.sh >/dev/null && scripts/lib/llama-build.sh --print prefix)"
echo "==> the drop-in, built once against $newest"
scripts/install-llama-dropin.sh "$newest" "$build/llama-matrix/dropin" >/dev/null
launcher="$build/llama-matrix/dropin/bin/cgram-llama"
failed=()

# A llama.cpp it does not know: the drop-in checks the sampler interface at
# run time (check_interface in cgram_llama_dropin.c) and stays off, with
# one log line, under a libllama that reads it another way. A stand-in
# libllama (tests/c/fake_llama.c) as llama.cpp lays the interface out, then
# with a member put in front of the six.
echo "==> the interface check under a stand-in libllama (known layout, then shifted)"
for variant in known shifted; do
  dir="$out/fake-$variant"
  mkdir -p "$dir"
  flags=()
  [ "$variant" = shifted ] && flags=(-DFAKE_SHIFTED)
  cc -std=gnu11 -O2 -Wall -Wextra -fPIC -shared "${flags[@]}" tests/c/fake_llama.c -o "$dir/libllama.so"
  cc -std=gnu11 -O2 -Wall -Wextra tests/c/dropin_interface_check.c -o "$dir/check" \
    -L"$dir" -lllama -Wl,-rpath,"$dir"
  if LD_PRELOAD="$build/llama-matrix/dropin/lib/libcgram-llama.so" "$dir/check" "$variant" \
    >"$dir/check.log" 2>&1; then
    sed 's/^/    /' "$dir/check.log"
  else
    echo "    FAILED ($variant):"
    sed 's/^/      /' "$dir/check.log"
    failed+=("interface-$variant")
  fi
done

# The checks of an e2e log: "ok  : name" or "FAIL: name -- detail", the
# name without its counts ("(4 calls)", "(400)").
checks() {
  sed -n -e 's/^ok  : /ok\t/p' -e 's/^FAIL: /FAIL\t/p' "$1" |
    sed -e 's/ -- .*//' -e 's/ ([^()]*)$//' | sort -u
}

for v in "${versions[@]}"; do
  echo "==> llama-cpp-python $v"
  if ! CGRAM_LLAMA_CPP_PYTHON="$v" scripts/lib/llama-build.sh >"$out/$v.build.log" 2>&1; then
    echo "    FAILED to build (log: $out/$v.build.log)"
    tail -n 20 "$out/$v.build.log"
    failed+=("$v")
    continue
  fi
  for engine in own cgram; do
    mode=on
    [ "$engine" = own ] && mode=off
    CGRAM_LLAMA="$mode" CGRAM_LLAMA_CPP_PYTHON="$v" CGRAM_LLAMA_LAUNCHER="$launcher" \
      scripts/llama-server-e2e.sh --quick --server-only >"$out/$v.$engine.log" 2>&1 || true
    cp "$build/llama-server/server.log" "$out/$v.$engine.server.log" 2>/dev/null || true
  done
  checks "$out/$v.own.log" >"$out/$v.own.checks"
  checks "$out/$v.cgram.log" >"$out/$v.cgram.checks"
  n_ok="$(grep -c '^ok' "$out/$v.cgram.checks" || true)"
  # Worse with cgram: a check that passed with llama.cpp's own samplers and
  # did not with cgram (failed, or never ran), or one about cgram that
  # failed.
  worse="$( { grep '^ok' "$out/$v.own.checks" | cut -f2 | while IFS= read -r name; do
      grep -qxF "ok	$name" "$out/$v.cgram.checks" || echo "$name"
    done
    grep '^FAIL' "$out/$v.cgram.checks" | cut -f2 | grep cgram || true; } | sort -u)"
  # The server's own log, whether or not the client got to its last
  # checks (an older llama-server may end on a request, as without cgram):
  # cgram ran the grammars, and none went to llama.cpp's sampler.
  slog="$out/$v.cgram.server.log"
  grep -q "llama.cpp grammar samplers run on cgram" "$slog" 2>/dev/null ||
    worse+=$'\n''the server log says cgram is active'
  ! grep -q "this grammar goes to llama.cpp's own sampler" "$slog" 2>/dev/null ||
    worse+=$'\n''a grammar fell back to llama.cpp'"'"'s own sampler'
  worse="$(sed '/^$/d' <<<"$worse")"
  excused="$(grep '^FAIL' "$out/$v.cgram.checks" | cut -f2 | grep -vxF -- "$worse" || true)"
  if [ -z "$worse" ] && [ "$n_ok" -gt 0 ]; then
    echo "    passed: $n_ok checks with cgram; not passing with llama.cpp's own samplers either:"
    printf '%s\n' "$excused" | sed -e '/^$/d' -e 's/^/      /'
  else
    echo "    FAILED: with cgram only (logs: $out/$v.{own,cgram}.log):"
    printf '%s\n' "${worse:-no check passed}" | sed 's/^/      /'
    failed+=("$v")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "llama-matrix.sh: failed on ${failed[*]}" >&2
  exit 1
fi
echo "llama-matrix.sh: the drop-in passed on ${versions[*]}"
