#!/usr/bin/env bash
# All the tests: formatting, lints, the Rust test suite (release), the
# quick soak (scripts/soak.sh --quick: 100,000 tokens through the C API,
# outputs validated, resident memory flat), then the C examples built with
# CMake from the installed package (scripts/demo.sh), a pkg-config build,
# cgram in real llama.cpp (scripts/llama-demo.sh) and an unmodified
# llama-server with cgram's drop-in, driven by the openai client
# (scripts/llama-server-e2e.sh), the same drop-in under the llama.cpp of
# older llama-cpp-python releases (scripts/llama-matrix.sh), the Python
# package built as a wheel and tested (scripts/python-test.sh),
# llama-cpp-python on cgram with a real model (scripts/llama-cpp-python-test.sh),
# the other platforms (scripts/cross.sh:
# Windows under wine, Linux ARM under qemu, macOS built and link-checked,
# the ABI against abi/cgram.abi on each), then the reliability checks of
# RELIABILITY.md:
# sanitizers, leak checking, threads and the bad-input matrix in C
# (scripts/sanitize.sh) and a short run of every fuzz target
# (scripts/fuzz.sh, 30 s each). Installs cmake / pkg-config when missing and
# fetches the real tokenizers first. Every stage runs even if an earlier one
# failed; the exit status is non-zero if any failed. A table of the stages'
# times ends the output (tests/README.md keeps the last measured ones).
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
failed=()
passed=()
times=()

stage() {
  local name="$1"
  shift
  printf '\n======== %s: %s\n' "$name" "$*"
  local start=$SECONDS
  local verdict=passed
  if "$@"; then
    passed+=("$name")
  else
    failed+=("$name")
    verdict=FAILED
  fi
  printf -- '-------- %s %s (%ss)\n' "$name" "$verdict" $((SECONDS - start))
  times+=("$(printf '%-18s %6ss  %s' "$name" $((SECONDS - start)) "$verdict")")
}

pkg_config_build() {
  # A C program built with the flags of the installed cgram.pc.
  local prefix="${CGRAM_BUILD:-$root/build}/prefix" out="${CGRAM_BUILD:-$root/build}/pkgconfig-walk"
  local flags
  flags="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs cgram)" || return 1
  # shellcheck disable=SC2086
  cc -std=c11 -Wall -Wextra -Werror -o "$out" c-examples/walk.c $flags -Wl,-rpath,"$prefix/lib" &&
    { "$out" 2>&1 || true; } | grep -q usage
}

stage deps scripts/lib/install-deps.sh
stage tokenizers scripts/fetch-tokenizers.sh
stage fmt cargo fmt --check
stage clippy cargo clippy --all-targets -- -D warnings
stage cargo-test cargo test --release
stage soak scripts/soak.sh --quick
stage c-examples scripts/demo.sh
stage pkg-config pkg_config_build
stage llama scripts/llama-demo.sh --quick
stage llama-server scripts/llama-server-e2e.sh --quick
stage llama-matrix scripts/llama-matrix.sh
stage python scripts/python-test.sh
stage llama-cpp-python scripts/llama-cpp-python-test.sh
stage platforms scripts/cross.sh
stage sanitize scripts/sanitize.sh
stage fuzz scripts/fuzz.sh --time 30

echo
echo "test.sh: stage times ($(git rev-parse --short HEAD 2>/dev/null), $(nproc) cores):"
printf '  %s\n' "${times[@]}"
printf '  %-18s %6ss\n' total "$SECONDS"
echo "test.sh: ${#passed[@]} stages passed (${passed[*]:-}), ${#failed[@]} failed (${failed[*]:-})"
[ ${#failed[@]} -eq 0 ]
