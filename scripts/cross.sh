#!/usr/bin/env bash
# Builds cgram for every supported target from this Linux x86-64 machine,
# installs each into its own package, and checks each package as far as
# this machine can run it:
#
#   target                      linked by              run here
#   x86_64-unknown-linux-gnu    the system's cc        natively
#   aarch64-unknown-linux-gnu   Debian's aarch64 gcc   under qemu-aarch64
#   x86_64-pc-windows-gnu       Debian's MinGW-w64     under wine
#   aarch64-apple-darwin        zig                    no: built and link-checked
#   x86_64-apple-darwin         zig                    no: built and link-checked
#
#   scripts/cross.sh [--build-only] [TARGET...]     (default: all five)
#
# Every package gets (scripts/install.sh --target): the library, its
# exports checked against the header (exactly the header's functions,
# scripts/lib/abi.py check-exports) and its loader name (SONAME, install name
# and compatibility version). Where it runs, the same C programs are built
# with the target's compiler against the package and run there:
#   probe        the struct layouts and constants (scripts/lib/abi.py probe),
#                checked against abi/cgram.abi;
#   walk/sample  the C examples (on Windows built by CMake with
#                find_package(cgram) and the MinGW toolchain file, on ARM
#                with the flags of the package's cgram.pc);
#   bad_input    the C bad-input matrix (tests/c/bad_input.c);
#   old_header   a program built against the first and the 0.1.0 headers
#                (tests/c/old_header.c);
#   mask_digest  a digest of every mask over a fixed corpus of grammars,
#                schemas and texts on the Llama 3 tokenizer
#                (tests/c/mask_digest.c): each target's digests must be
#                the Linux x86-64 ones, line for line.
# On Windows the examples are linked a second time against the MSVC import
# library (cgram.lib), to show that it resolves to cgram.dll, and the
# llama.cpp drop-in (a proxy llama.dll) runs an unmodified llama.cpp
# program and llama-server.exe (scripts/llama-dropin-windows-test.sh). The macOS
# dylibs cannot run here: the C programs are linked against them with zig
# (every symbol resolved, the dylib recorded by its install name), and the
# llama.cpp drop-in is built for macOS with its interpose section.
#
# Work goes to build/cross/<target>/ (CGRAM_BUILD moves build/); the
# toolchains are installed by scripts/lib/cross-deps.sh and kept under
# ${XDG_CACHE_HOME:-~/.cache}/cgram, wine's prefix too. Exit status: non-zero
# if any target failed; a summary table ends the output.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${CGRAM_BUILD:-$root/build}/cross"
tokenizer="${CGRAM_CACHE:-$root/.cache}/tokenizers/llama3/tokenizer.json"
gbnf="$root/tests/data/llamacpp-grammar/gbnf"
host="$(rustc -vV | sed -n 's/^host: //p')"
all_targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-pc-windows-gnu
  aarch64-apple-darwin x86_64-apple-darwin)
cflags=(-std=c11 -O2 -Wall -Wextra -Wpedantic -Werror)

build_only=0
targets=()
for a in "$@"; do
  case "$a" in
    --build-only) build_only=1 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed 's/^# \{0,1\}//; /^set -uo/d'; exit 0 ;;
    -*) echo "cross.sh: unknown option $a" >&2; exit 2 ;;
    *) targets+=("$a") ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

say() { printf '==> %s\n' "$*"; }
fail() { echo "cross.sh: $*" >&2; return 1; }

# ---------------------------------------------------------------------------
# Tools.

scripts/lib/cross-deps.sh || exit 1
# shellcheck source=scripts/lib/cross-env.sh
. scripts/lib/cross-env.sh
scripts/fetch-tokenizers.sh >/dev/null || exit 1
[ -f "$tokenizer" ] || { echo "cross.sh: no tokenizer at $tokenizer" >&2; exit 1; }
mkdir -p "$build"

# ---------------------------------------------------------------------------
# The programs every runnable target builds and runs.

# Builds the test programs for one target into $dir/bin with the compiler
# `cc_cmd` (an array name) against `prefix`; extra link flags follow.
build_programs() { # dir prefix exe_suffix cc... -- link flags...
  local dir="$1" prefix="$2" ext="$3"
  shift 3
  local cc=()
  while [ "$1" != -- ]; do cc+=("$1"); shift; done
  shift
  local link=("$@") bin="$dir/bin"
  mkdir -p "$bin"
  python3 scripts/lib/abi.py probe include/cgram.h >"$dir/probe.c" || return 1
  local p
  for p in "$dir/probe.c" tests/c/bad_input.c tests/c/mask_digest.c; do
    local name
    name="$(basename "$p" .c)"
    "${cc[@]}" "${cflags[@]}" -I"$prefix/include" "$p" -o "$bin/$name$ext" "${link[@]}" ||
      fail "$name does not build" || return 1
  done
  # Against the saved older headers, never include/cgram.h.
  local h
  for h in first 0.1.0; do
    "${cc[@]}" "${cflags[@]}" -I"tests/abi/$h" tests/c/old_header.c -o "$bin/old_header-$h$ext" \
      "${link[@]}" || fail "old_header ($h header) does not build" || return 1
  done
}

# Runs the programs through `runner` (an argument list; empty: natively),
# writing their outputs to $dir. `examples` is where walk and sample are.
run_programs() { # dir examples exe_suffix runner...
  local dir="$1" examples="$2" ext="$3"
  shift 3
  local bin="$dir/bin" rc=0
  say "probe: struct layouts and constants against abi/cgram.abi"
  "$@" "$bin/probe$ext" >"$dir/layout.txt" &&
    python3 scripts/lib/abi.py check include/cgram.h "$dir/layout.txt" || rc=1
  say "walk: json.gbnf and arithmetic.gbnf"
  "$@" "$examples/walk$ext" "$tokenizer" "$gbnf/json.gbnf" \
    '{"name": "cgram", "tags": ["c", "rust"], "version": 1, "ok": true, "pi": 3.14}' \
    >"$dir/walk.log" 2>&1 && tail -n 1 "$dir/walk.log" &&
    "$@" "$examples/walk$ext" "$tokenizer" "$gbnf/arithmetic.gbnf" $'a+(b*2)=c\nx1 = 42\n' \
      >>"$dir/walk.log" 2>&1 && tail -n 1 "$dir/walk.log" ||
    { cat "$dir/walk.log"; fail "walk failed"; rc=1; }
  say "sample: record.gbnf (outputs verified by sample itself)"
  "$@" "$examples/sample$ext" "$tokenizer" c-examples/grammars/record.gbnf \
    --n 4 --max-tokens 200 --seed 1 >"$dir/sample.log" 2>&1 && tail -n 1 "$dir/sample.log" ||
    { cat "$dir/sample.log"; fail "sample failed"; rc=1; }
  say "bad_input: the C bad-input matrix"
  "$@" "$bin/bad_input$ext" "$tokenizer" >"$dir/bad_input.log" 2>&1 &&
    tail -n 1 "$dir/bad_input.log" ||
    { tail -n 30 "$dir/bad_input.log"; fail "bad_input failed"; rc=1; }
  local h
  for h in first 0.1.0; do
    say "old_header: built against the $h header"
    "$@" "$bin/old_header-$h$ext" "$tokenizer" || { fail "old_header ($h) failed"; rc=1; }
  done
  say "mask_digest: every mask of the corpus"
  "$@" "$bin/mask_digest$ext" "$tokenizer" tests/data/mask-digest/cases.txt \
    >"$dir/digests.txt" 2>"$dir/mask_digest.log" && tail -n 1 "$dir/digests.txt" ||
    { cat "$dir/mask_digest.log"; fail "mask_digest failed"; rc=1; }
  return $rc
}

# The digests of a target against the host's, line for line.
same_digests() { # dir
  local reference="$build/$host/digests.txt"
  [ -s "$reference" ] || { fail "no Linux x86-64 digests to compare with (run its target too)"; return 1; }
  if diff -u "$reference" "$1/digests.txt" >"$1/digests.diff"; then
    say "mask digests: $(wc -l <"$1/digests.txt") lines, the same as Linux x86-64"
  else
    cat "$1/digests.diff"
    fail "mask digests differ from Linux x86-64's"
  fi
}

soname_of() { readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p'; }

# ---------------------------------------------------------------------------
# The targets.

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
major="${version%%.*}"
minor="${version#*.}"
minor="${minor%%.*}"

target_linux_x86_64() { # dir prefix
  local dir="$1" prefix="$2"
  scripts/install.sh "$prefix" >"$dir/install.log" 2>&1 || { cat "$dir/install.log"; return 1; }
  local lib="$prefix/lib/libcgram.so.$version"
  [ "$(soname_of "$lib")" = "libcgram.so.$major" ] || fail "SONAME of $lib: $(soname_of "$lib")" || return 1
  say "SONAME libcgram.so.$major"
  python3 scripts/lib/abi.py check-exports include/cgram.h "$lib" || return 1
  [ $build_only -eq 1 ] && return 0
  build_programs "$dir" "$prefix" "" cc -- -L"$prefix/lib" -lcgram -Wl,-rpath,"$prefix/lib" -pthread -lm ||
    return 1
  cmake -S c-examples -B "$dir/c-examples" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    >"$dir/cmake.log" 2>&1 && cmake --build "$dir/c-examples" >>"$dir/cmake.log" 2>&1 ||
    { cat "$dir/cmake.log"; fail "the C examples do not build with CMake"; return 1; }
  run_programs "$dir" "$dir/c-examples" ""
}

target_linux_aarch64() { # dir prefix
  local dir="$1" prefix="$2" t=aarch64-unknown-linux-gnu
  scripts/install.sh "$prefix" --target $t >"$dir/install.log" 2>&1 ||
    { cat "$dir/install.log"; return 1; }
  local lib="$prefix/lib/libcgram.so.$version"
  [ "$(soname_of "$lib")" = "libcgram.so.$major" ] || fail "SONAME of $lib: $(soname_of "$lib")" || return 1
  say "SONAME libcgram.so.$major"
  python3 scripts/lib/abi.py check-exports include/cgram.h "$lib" || return 1
  [ $build_only -eq 1 ] && return 0
  # The examples with the package's pkg-config flags, as a Makefile would.
  local pc
  pc="$(PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" pkg-config --cflags --libs cgram)" || return 1
  local link=(-Wl,-rpath,"$prefix/lib" -pthread -lm)
  mkdir -p "$dir/bin"
  local e
  for e in walk sample; do
    # shellcheck disable=SC2086
    aarch64-linux-gnu-gcc "${cflags[@]}" "c-examples/$e.c" -o "$dir/bin/$e" $pc "${link[@]}" ||
      fail "$e does not build with pkg-config's flags" || return 1
  done
  build_programs "$dir" "$prefix" "" aarch64-linux-gnu-gcc -- -L"$prefix/lib" -lcgram "${link[@]}" ||
    return 1
  local rc=0
  run_programs "$dir" "$dir/bin" "" qemu-aarch64 -L /usr/aarch64-linux-gnu || rc=1
  same_digests "$dir" || rc=1
  return $rc
}

target_windows() { # dir prefix
  local dir="$1" prefix="$2" t=x86_64-pc-windows-gnu
  scripts/install.sh "$prefix" --target $t >"$dir/install.log" 2>&1 ||
    { cat "$dir/install.log"; return 1; }
  python3 scripts/lib/abi.py check-exports include/cgram.h "$prefix/bin/cgram.dll" || return 1
  # The MSVC import library names every function (its __imp_ thunks).
  local missing
  missing="$(comm -23 <(python3 scripts/lib/abi.py exports "$prefix/bin/cgram.dll") \
    <("$(llvm_tool llvm-nm)" "$prefix/lib/cgram.lib" | sed -n 's/.* __imp_\(cg_[a-z_0-9]*\)$/\1/p' | sort -u))"
  [ -z "$missing" ] || fail "cgram.lib lacks: $missing" || return 1
  say "cgram.lib: an import for each of cgram.dll's exports"
  [ $build_only -eq 1 ] && return 0

  # Wine 8 (Debian's) lacks bcryptprimitives.dll, which Rust's standard
  # library imports (ProcessPrng); real Windows 10 and later has it. A
  # stand-in, for wine only (tests/windows/bcryptprimitives.c).
  local support="$dir/wine-support"
  mkdir -p "$support"
  x86_64-w64-mingw32-gcc -shared -O2 -o "$support/bcryptprimitives.dll" \
    tests/windows/bcryptprimitives.c tests/windows/bcryptprimitives.def -ladvapi32 ||
    fail "the bcryptprimitives stand-in does not build" || return 1
  export WINEPREFIX="$CGRAM_CROSS_TOOLS/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
  export WINEPATH="$(winepath_of "$prefix/bin");$(winepath_of "$support")"
  if [ ! -f "$WINEPREFIX/system.reg" ]; then
    say "creating the wine prefix $WINEPREFIX (once)"
    wineboot --init >/dev/null 2>&1 || true
  fi
  # One wineserver for all the runs: started by each program and left to
  # exit after it, it can be on its way out as the next program connects
  # ("wine client error: recvmsg: Connection reset by peer", seen in CI).
  # It stays up until 60 s after the last program.
  wineserver -p60

  # The C examples with CMake: find_package(cgram) finds the DLL and its
  # import library (IMPORTED_IMPLIB) through the MinGW toolchain file.
  cmake -S c-examples -B "$dir/c-examples" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/mingw-w64-x86_64.cmake" >"$dir/cmake.log" 2>&1 &&
    cmake --build "$dir/c-examples" >>"$dir/cmake.log" 2>&1 ||
    { cat "$dir/cmake.log"; fail "the C examples do not build with CMake and MinGW"; return 1; }
  cat "$dir"/c-examples/CMakeFiles/walk.dir/link*.{txt,rsp} 2>/dev/null | grep -q 'libcgram\.dll\.a' ||
    fail "walk.exe was not linked through the import library find_package gave" || return 1
  say "CMake: find_package(cgram) gave cgram.dll and libcgram.dll.a (IMPORTED_IMPLIB)"

  # The import library by name: -static (a self-contained .exe, no MinGW
  # runtime DLLs beside it) would make -lcgram pick the static libcgram.a.
  local link=("$prefix/lib/libcgram.dll.a" -static -pthread)
  build_programs "$dir" "$prefix" .exe x86_64-w64-mingw32-gcc -- "${link[@]}" || return 1
  # walk linked against the MSVC import library instead of MinGW's.
  x86_64-w64-mingw32-gcc "${cflags[@]}" -I"$prefix/include" c-examples/walk.c \
    "$prefix/lib/cgram.lib" -o "$dir/bin/walk-msvc-implib.exe" ||
    fail "walk does not link against cgram.lib" || return 1

  # And with the flags of the package's cgram.pc (-lcgram: the import
  # library, without -static).
  local pc
  pc="$(PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" pkg-config --cflags --libs cgram)" || return 1
  # shellcheck disable=SC2086
  x86_64-w64-mingw32-gcc "${cflags[@]}" c-examples/walk.c -o "$dir/bin/walk-pkgconfig.exe" $pc ||
    fail "walk does not build with pkg-config's flags" || return 1

  local rc=0 w
  run_programs "$dir" "$dir/c-examples" .exe wine || rc=1
  for w in walk-msvc-implib walk-pkgconfig; do
    say "$w.exe"
    wine "$dir/bin/$w.exe" "$tokenizer" "$gbnf/json.gbnf" '{"a": [1, 2]}' | tail -n 1 ||
      { fail "$w.exe failed"; rc=1; }
  done
  same_digests "$dir" || rc=1
  # The llama.cpp drop-in for Windows: a proxy llama.dll in front of a
  # llama.cpp cross-built with MinGW (cached), an unmodified llama.cpp
  # program and llama-server.exe with Gemma 3 270M, under wine.
  say "llama.cpp drop-in (proxy llama.dll) under wine"
  scripts/lib/llama-model.sh >/dev/null || { fail "no model for llama-server"; return 1; }
  scripts/llama-dropin-windows-test.sh --cgram "$prefix" --server >"$dir/llama-dropin.log" 2>&1 &&
    tail -n 1 "$dir/llama-dropin.log" ||
    { tail -n 40 "$dir/llama-dropin.log"; fail "the Windows drop-in failed"; rc=1; }
  return $rc
}

# A Unix path as wine sees it (its Z: drive is the Unix root).
winepath_of() { printf 'Z:%s' "${1//\//\\}"; }

target_macos() { # dir prefix target
  local dir="$1" prefix="$2" t="$3" minos
  case "$t" in aarch64-*) minos=11.0 ;; *) minos=10.12 ;; esac
  scripts/install.sh "$prefix" --target "$t" >"$dir/install.log" 2>&1 ||
    { cat "$dir/install.log"; return 1; }
  local lib="$prefix/lib/libcgram.$major.dylib"
  python3 scripts/lib/abi.py dylib-info "$lib" >"$dir/dylib-info.txt"
  grep -v '^bind ' "$dir/dylib-info.txt"
  local want_id="install-name @rpath/libcgram.$major.dylib current $version compatibility $major.$minor.0"
  grep -qxF "$want_id" "$dir/dylib-info.txt" || fail "want: $want_id" || return 1
  grep -q "^platform 1 minos $minos.0 " "$dir/dylib-info.txt" || fail "want macOS $minos" || return 1
  # Only the system library: nothing from the build machine.
  [ "$(grep -c '^loads ' "$dir/dylib-info.txt")" = 1 ] &&
    grep -q '^loads /usr/lib/libSystem.B.dylib ' "$dir/dylib-info.txt" ||
    fail "the dylib loads more than libSystem" || return 1
  python3 scripts/lib/abi.py check-exports include/cgram.h "$lib" || return 1
  [ $build_only -eq 1 ] && return 0

  # Link-check: C programs linked against the dylib with zig and the flags
  # of the package's cgram.pc, every symbol resolved; each records the
  # dylib by its install name.
  local zt="${t%%-*}-macos.$minos" p pc
  pc="$(PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" pkg-config --cflags --libs cgram)" || return 1
  mkdir -p "$dir/bin"
  for p in c-examples/walk.c c-examples/sample.c tests/c/bad_input.c tests/c/mask_digest.c; do
    local name
    name="$(basename "$p" .c)"
    # shellcheck disable=SC2086
    zig cc -target "$zt" "${cflags[@]}" "$p" -o "$dir/bin/$name" $pc \
      -Wl,-rpath,@executable_path/../lib >"$dir/link-$name.log" 2>&1 ||
      { cat "$dir/link-$name.log"; fail "$name does not link against the dylib"; return 1; }
    python3 scripts/lib/abi.py dylib-info "$dir/bin/$name" |
      grep -q "^loads @rpath/libcgram.$major.dylib " || fail "$name does not load libcgram.$major.dylib" ||
      return 1
  done
  say "walk, sample, bad_input and mask_digest link against libcgram.$major.dylib (not run: macOS)"

  # The C examples with CMake: find_package(cgram) finds the dylib. zig
  # is the compiler, through a one-line wrapper (CMake takes one program).
  printf '#!/bin/sh\nexec "%s" -m ziglang cc -target %s "$@"\n' \
    "$CGRAM_CROSS_TOOLS/venv/bin/python" "$zt" >"$dir/zig-cc" && chmod +x "$dir/zig-cc"
  printf 'set(CMAKE_SYSTEM_NAME Darwin)\nset(CMAKE_C_COMPILER "%s")\n%s\n' "$dir/zig-cc" \
    'set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)' >"$dir/toolchain.cmake"
  cmake -S c-examples -B "$dir/c-examples" -DCMAKE_TOOLCHAIN_FILE="$dir/toolchain.cmake" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$dir/cmake.log" 2>&1 &&
    cmake --build "$dir/c-examples" >>"$dir/cmake.log" 2>&1 ||
    { cat "$dir/cmake.log"; fail "the C examples do not build with CMake for macOS"; return 1; }
  python3 scripts/lib/abi.py dylib-info "$dir/c-examples/walk" | grep -q "^loads @rpath/libcgram.$major.dylib " ||
    fail "CMake's walk does not load libcgram.$major.dylib" || return 1
  say "CMake: find_package(cgram) gave libcgram.dylib; walk and sample built (not run: macOS)"
  macos_dropin "$dir" "$prefix" "$zt"
}

# The llama.cpp drop-in for macOS, built against llama.cpp's llama.h (the
# pinned llama-cpp-python sdist's) as scripts/install-llama-dropin.sh
# builds it on Linux, with zig: cgram linked in with every symbol private
# (zig ignores export lists), llama.cpp's functions left to a flat lookup
# at load time, the entry points replaced through __DATA,__interpose.
# Built and checked, not run.
macos_dropin() { # dir prefix zig-target
  local dir="$1" prefix="$2" zt="$3" src out="$1/dropin"
  src="$(scripts/lib/llama-build.sh --source | tail -n 1)" && [ -f "$src/include/llama.h" ] ||
    fail "no llama.cpp source for llama.h" || return 1
  mkdir -p "$out/lib" "$out/bin"
  python3 scripts/lib/macho_hide.py --keep-none "$prefix/lib/libcgram.a" "$out/libcgram-private.a" ||
    return 1
  zig cc -target "$zt" -dynamiclib "${cflags[@]}" -fexceptions -Iadapters/llama -I"$prefix/include" \
    -I"$src/include" -I"$src/ggml/include" adapters/llama/cgram_llama.c adapters/llama/cgram_llama_dropin.c \
    "$out/libcgram-private.a" -Wl,-undefined,dynamic_lookup -Wl,-dead_strip -lSystem \
    -Wl,-install_name,@rpath/libcgram-llama.dylib -o "$out/lib/libcgram-llama.dylib" \
    >"$out/build.log" 2>&1 || { cat "$out/build.log"; fail "the macOS drop-in does not build"; return 1; }
  sed "s|@CGRAM_LLAMA_DROPIN@|$out/lib/libcgram-llama.dylib|" adapters/llama/dropin/cgram-llama.in \
    >"$out/bin/cgram-llama" && chmod +x "$out/bin/cgram-llama"
  local info
  info="$(python3 scripts/lib/abi.py dylib-info "$out/lib/libcgram-llama.dylib")"
  # Four (replacement, replaced) pairs of two pointers.
  grep -qx "section __DATA,__interpose size 64" <<<"$info" ||
    fail "the drop-in has no interpose section of four entries" || return 1
  local f
  for f in llama_sampler_init_grammar llama_sampler_init_grammar_lazy \
    llama_sampler_init_grammar_lazy_patterns llama_model_free; do
    grep -qx "bind _$f flat-lookup" <<<"$info" || fail "$f is not found by a flat lookup" || return 1
  done
  if python3 scripts/lib/abi.py exports "$out/lib/libcgram-llama.dylib" | grep -q '^cg_'; then
    fail "the drop-in exports libcgram's functions"
    return 1
  fi
  say "llama.cpp drop-in: $out/lib/libcgram-llama.dylib, 4 entry points interposed, cgram inside (not run: macOS)"
}

# ---------------------------------------------------------------------------

summary=()
failed=0
for t in "${targets[@]}"; do
  dir="$build/$t"
  rm -rf "$dir"
  mkdir -p "$dir"
  printf '\n======== %s\n' "$t"
  start=$SECONDS
  case "$t" in
    x86_64-unknown-linux-gnu) f=(target_linux_x86_64); how="run natively" ;;
    aarch64-unknown-linux-gnu) f=(target_linux_aarch64); how="run under qemu-aarch64" ;;
    x86_64-pc-windows-gnu) f=(target_windows); how="run under wine" ;;
    *-apple-darwin) f=(target_macos); how="built and link-checked, not run" ;;
    *) echo "cross.sh: unknown target $t (targets: ${all_targets[*]})" >&2; exit 2 ;;
  esac
  [ $build_only -eq 1 ] && how="built"
  if [ "$t" = x86_64-unknown-linux-gnu ] && [ "$host" != "$t" ]; then
    echo "cross.sh: this script runs on Linux x86-64" >&2
    exit 2
  fi
  if ( "${f[@]}" "$dir" "$dir/prefix" "$t" ); then
    summary+=("$(printf '%-28s passed  %-36s %4ss' "$t" "$how" $((SECONDS - start)))")
  else
    summary+=("$(printf '%-28s FAILED  %-36s %4ss' "$t" "$how" $((SECONDS - start)))")
    failed=1
  fi
done

printf '\n======== cross.sh summary (cgram %s)\n' "$version"
printf '%s\n' "${summary[@]}" | tee "$build/summary.txt"
exit $failed
