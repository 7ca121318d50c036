#!/usr/bin/env bash
# Sanitizers and leak checking that see the library's own heap (issue 17).
# cgram allocates through mimalloc by default, which AddressSanitizer,
# LeakSanitizer and valgrind cannot see into; every step here builds it with
# the system allocator (`--no-default-features`), in a target directory of
# its own so that the normal build is left alone.
#
#   scripts/sanitize.sh                 every step, in this order
#   scripts/sanitize.sh asan valgrind   some steps
#
# Steps:
#   deps      valgrind, cmake (apt-get, when missing); the nightly toolchain
#             with rust-src (rustup, when missing); the Llama 3 tokenizer.
#   matrix    the bad-input matrix in C (tests/c/bad_input.c) against the
#             library as shipped (mimalloc), installed into build/prefix.
#   asan      AddressSanitizer + LeakSanitizer (nightly -Zsanitizer=address,
#             release profile): the Rust tests that drive the C API (the
#             library's unit tests of its modules with unsafe code, ffi::
#             and limits::; ffi, ffi_lazy, ffi_kinds, threads, hostile), then
#             the C matrix and the C examples compiled with gcc's
#             -fsanitize=address and linked to the instrumented libcgram.so.
#   tsan      ThreadSanitizer over tests/threads.rs (nightly
#             -Zsanitizer=thread with -Zbuild-std, so that std is
#             instrumented too and its synchronisation is seen).
#   valgrind  memcheck (--leak-check=full, definite leaks and every memory
#             error fail) over the C matrix and the C examples (walk and
#             sample, as scripts/demo.sh runs them, one per core at a
#             time), linked to a release
#             libcgram with the system allocator installed into
#             build/prefix-sysalloc.
#
# Every step runs even if an earlier one failed; each prints its time; the
# exit status is non-zero if any failed. Environment: CGRAM_CACHE (the
# tokenizers, default <repo>/.cache), CGRAM_BUILD (default <repo>/build),
# CARGO_TARGET_DIR (the sanitizer builds go to its asan/, tsan/ and
# sysalloc/ subdirectories; default <repo>/target).
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${CGRAM_BUILD:-$root/build}"
targets="${CARGO_TARGET_DIR:-$root/target}"
tokenizer="${CGRAM_CACHE:-$root/.cache}/tokenizers/llama3/tokenizer.json"
gbnf="$root/tests/data/llamacpp-grammar/gbnf"
triple="$(rustc -vV | sed -n 's/^host: //p')"
cflags=(-std=c11 -g -O1 -Wall -Wextra -Wpedantic -Werror)

failed=()
passed=()
times=()

step() {
  local name="$1"
  shift
  printf '\n======== sanitize %s\n' "$name"
  local start=$SECONDS
  if "$@"; then
    passed+=("$name")
    printf -- '-------- %s passed (%ss)\n' "$name" $((SECONDS - start))
  else
    failed+=("$name")
    printf -- '-------- %s FAILED (%ss)\n' "$name" $((SECONDS - start))
  fi
  times+=("$name $((SECONDS - start))s")
}

say() { printf '==> %s\n' "$*"; }

# ---------------------------------------------------------------------------

deps() {
  scripts/lib/install-deps.sh || return 1
  if ! command -v valgrind >/dev/null; then
    command -v apt-get >/dev/null || { echo "sanitize.sh: please install valgrind" >&2; return 1; }
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    say "installing valgrind with apt-get"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq valgrind >/dev/null || return 1
  fi
  # gcc's AddressSanitizer runtime (libasan) comes with gcc itself.
  local probe
  probe="$(mktemp -d)"
  echo 'int main(void) { return 0; }' >"$probe/p.c"
  if ! cc -fsanitize=address "$probe/p.c" -o "$probe/p"; then
    echo "sanitize.sh: cc -fsanitize=address does not link (gcc's libasan is missing)" >&2
    rm -rf "$probe"
    return 1
  fi
  rm -rf "$probe"
  if ! cargo +nightly --version >/dev/null 2>&1; then
    say "installing the nightly toolchain with rustup"
    rustup toolchain install nightly --profile minimal --component rust-src || return 1
  fi
  if ! rustup +nightly component list --installed 2>/dev/null | grep -q '^rust-src'; then
    say "installing rust-src for nightly (ThreadSanitizer builds std)"
    rustup component add rust-src --toolchain nightly || return 1
  fi
  say "$(cargo +nightly --version), $(valgrind --version), $(cc --version | head -n 1)"
  scripts/fetch-tokenizers.sh >/dev/null || return 1
  [ -f "$tokenizer" ] || { echo "sanitize.sh: no tokenizer at $tokenizer" >&2; return 1; }
  [ -f "$gbnf/json.gbnf" ] || { echo "sanitize.sh: llama.cpp's example grammars are missing" >&2; return 1; }
}

# cc for a C program of this repository against a prefix's header and lib.
build_c() { # prefix source output [extra flags...]
  local prefix="$1" src="$2" out="$3"
  shift 3
  cc "${cflags[@]}" "$@" -I"$prefix/include" "$src" -o "$out" \
    -L"$prefix/lib" -lcgram -Wl,-rpath,"$prefix/lib" -pthread -lm
}

# One of the C examples' runs of scripts/demo.sh, through a runner
# (valgrind, or env with sanitizer options); sample outputs go to $out.
example() { # name bin_dir out runner...
  local name="$1" bin="$2" out="$3"
  shift 3
  case "$name" in
    walk-json) # a JSON object through json.gbnf
      "$@" "$bin/walk" "$tokenizer" "$gbnf/json.gbnf" \
        '{"name": "cgram", "tags": ["c", "rust"], "version": 1, "ok": true, "pi": 3.14}' ;;
    walk-arithmetic) # an equation through arithmetic.gbnf
      "$@" "$bin/walk" "$tokenizer" "$gbnf/arithmetic.gbnf" $'a+(b*2)=c\nx1 = 42\n' ;;
    sample-record)
      "$@" "$bin/sample" "$tokenizer" c-examples/grammars/record.gbnf \
        --n 5 --max-tokens 200 --seed 1 --out "$out/record" ;;
    sample-json)
      "$@" "$bin/sample" "$tokenizer" "$gbnf/json.gbnf" \
        --n 4 --max-tokens 64 --seed 2 --eos-bias 8 --out "$out/json" ;;
    sample-arithmetic)
      "$@" "$bin/sample" "$tokenizer" "$gbnf/arithmetic.gbnf" \
        --n 4 --max-tokens 64 --seed 3 --eos-bias 8 ;;
  esac
}

# The C examples' runs, as many at a time as there are cores (valgrind
# runs a program on one; the slowest starts first), each reported in
# order with its output shown when it failed.
run_examples() { # bin_dir runner...
  local bin="$1"
  shift
  local out="$build/sanitize-samples" lanes status=0 name
  lanes="$(nproc 2>/dev/null || echo 1)"
  rm -rf "$out"
  mkdir -p "$out"
  local names=(sample-json sample-arithmetic sample-record walk-json walk-arithmetic)
  local -A pid_of
  for name in "${names[@]}"; do
    while [ "$(jobs -pr | wc -l)" -ge "$lanes" ]; do wait -n || true; done
    example "$name" "$bin" "$out" "$@" >"$out/$name.log" 2>&1 &
    pid_of[$name]=$!
  done
  for name in "${names[@]}"; do
    if wait "${pid_of[$name]}"; then
      say "$name: passed"
    else
      say "$name: FAILED"
      cat "$out/$name.log"
      status=1
    fi
  done
  [ $status = 0 ] && rm -rf "$out"
  return $status
}

# ---------------------------------------------------------------------------

matrix() {
  scripts/install.sh "$build/prefix" >/dev/null || return 1
  build_c "$build/prefix" tests/c/bad_input.c "$build/bad_input" || return 1
  "$build/bad_input" "$tokenizer"
}

asan() {
  local dir="$targets/asan"
  # LeakSanitizer is part of AddressSanitizer on Linux; said explicitly.
  local opts="detect_leaks=1:detect_stack_use_after_return=1"
  local env=(env CARGO_TARGET_DIR="$dir" RUSTFLAGS="-Zsanitizer=address" ASAN_OPTIONS="$opts")
  local flags=(--release --target "$triple" --no-default-features)
  local tests=(--lib --test ffi --test ffi_lazy --test ffi_kinds --test threads --test hostile)
  # Of the library's unit tests, those of the modules with `unsafe` code:
  # the C API (its lock recovery test drives every cache lock through it)
  # and the compile stack. The rest is safe Rust that the integration tests
  # above run through the C API anyway; under ASan it took 170 s of CI.
  local unit_filters=(ffi:: limits::)
  # One build for both: the tests, and libcgram.so (put in $dir/$triple/release
  # by `cargo build`; a `--lib` build alone would compile the dependencies
  # again, without the features the dev-dependencies add).
  say "build (nightly, -Zsanitizer=address, release, system allocator)"
  "${env[@]}" cargo +nightly build "${flags[@]}" "${tests[@]}" || return 1
  say "Rust tests of the C API under AddressSanitizer + LeakSanitizer"
  "${env[@]}" cargo +nightly test "${flags[@]}" --lib -- "${unit_filters[@]}" || return 1
  "${env[@]}" cargo +nightly test "${flags[@]}" "${tests[@]:1}" || return 1
  say "C programs (gcc -fsanitize=address) on the instrumented libcgram.so"
  local prefix="$build/prefix-asan"
  rm -rf "$prefix"
  mkdir -p "$prefix/include" "$prefix/lib" "$prefix/bin"
  cp include/cgram.h "$prefix/include/"
  # Under its SONAME, which the programs record, and as -lcgram finds it.
  cp "$dir/$triple/release/libcgram.so" "$prefix/lib/libcgram.so.0"
  ln -sfn libcgram.so.0 "$prefix/lib/libcgram.so"
  local san=(-fsanitize=address -fno-omit-frame-pointer)
  build_c "$prefix" tests/c/bad_input.c "$prefix/bin/bad_input" "${san[@]}" || return 1
  build_c "$prefix" c-examples/walk.c "$prefix/bin/walk" "${san[@]}" || return 1
  build_c "$prefix" c-examples/sample.c "$prefix/bin/sample" "${san[@]}" || return 1
  say "bad_input"
  ASAN_OPTIONS="$opts" "$prefix/bin/bad_input" "$tokenizer" || return 1
  run_examples "$prefix/bin" env ASAN_OPTIONS="$opts"
}

tsan() {
  # halt_on_error=0: every race is printed; the exit status is then 66.
  CARGO_TARGET_DIR="$targets/tsan" RUSTFLAGS="-Zsanitizer=thread" \
    TSAN_OPTIONS="halt_on_error=0" \
    cargo +nightly test -Zbuild-std --target "$triple" --no-default-features --test threads
}

valgrind_step() {
  local prefix="$build/prefix-sysalloc"
  say "release libcgram with the system allocator into $prefix"
  CARGO_TARGET_DIR="$targets/sysalloc" scripts/install.sh "$prefix" --no-default-features >/dev/null ||
    return 1
  # The point of this build: no mimalloc inside (it would hide the heap).
  if nm "$prefix/lib/libcgram.so" | grep -qE ' mi_[a-z_]+$'; then
    echo "sanitize.sh: $prefix/lib/libcgram.so still has mimalloc" >&2
    return 1
  fi
  build_c "$prefix" tests/c/bad_input.c "$prefix/bad_input" || return 1
  cmake -S c-examples -B "$build/c-examples-sysalloc" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >/dev/null || return 1
  cmake --build "$build/c-examples-sysalloc" --parallel 2 >/dev/null || return 1
  local vg=(valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite)
  say "bad_input under valgrind"
  "${vg[@]}" "$prefix/bad_input" "$tokenizer" || return 1
  run_examples "$build/c-examples-sysalloc" "${vg[@]}"
}

# ---------------------------------------------------------------------------

all=(deps matrix asan tsan valgrind)
[ $# -gt 0 ] && all=("$@")
for s in "${all[@]}"; do
  case "$s" in
    deps) step deps deps ;;
    matrix) step matrix matrix ;;
    asan) step asan asan ;;
    tsan) step tsan tsan ;;
    valgrind) step valgrind valgrind_step ;;
    *) echo "sanitize.sh: unknown step $s (steps: deps matrix asan tsan valgrind)" >&2; exit 2 ;;
  esac
done

echo
echo "sanitize.sh: times: ${times[*]}"
echo "sanitize.sh: ${#passed[@]} steps passed (${passed[*]:-}), ${#failed[@]} failed (${failed[*]:-})"
[ ${#failed[@]} -eq 0 ]
