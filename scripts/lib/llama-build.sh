#!/usr/bin/env bash
# Builds real llama.cpp for cgram's llama.cpp adapter, demo and tests, from
# the copy that PyPI's source distribution of llama-cpp-python vendors (the
# only way to get llama.cpp's source from a package registry), and installs
# it into a private prefix. Cached outside the checkout: a rerun with
# everything in place takes a second.
#
#   scripts/lib/llama-build.sh            # idempotent; prints the prefix
#   scripts/lib/llama-build.sh --force    # rebuild from scratch
#   scripts/lib/llama-build.sh --print prefix|src|bin   # print a directory, build nothing
#   scripts/lib/llama-build.sh --source   # fetch and unpack the sources only, print src
#                                     # (headers for cross builds of the drop-in)
#   CGRAM_LLAMA_CACHE=/dir            # cache here (default: $CGRAM_CACHE if set,
#                                     # else ~/.cache/cgram: outside the checkout)
#   CGRAM_LLAMA_JOBS=N                # parallel build jobs (default: nproc)
#   CGRAM_LLAMA_CPP_PYTHON=V          # another llama-cpp-python sdist (the llama.cpp
#                                     # it vendors), one of SDISTS below: the
#                                     # drop-in's version matrix
#                                     # (scripts/llama-matrix.sh)
#
# Leaves, under <cache>/llama.cpp-<version>/ (0.3.36 unless told otherwise):
#
#   llama_cpp_python-0.3.36.tar.gz  the sdist, unchanged
#   src/                            its vendor/llama.cpp/: sources, grammars/,
#                                   models/ggml-vocab-*.gguf (vocab-only GGUFs:
#                                   llama-bpe = Llama 3, qwen2, gpt-2, ...)
#   build/                          the CMake build tree: targets llama,
#                                   llama-server, llama-cli and llama-completion
#                                   (the plain text one; the targets a
#                                   version has), all with shared
#                                   libraries (llama.cpp's default), so that
#                                   build/bin/ holds the programs next to
#                                   libllama.so and libllama-common.so (the
#                                   cgram drop-in's test bed)
#   prefix/                         `cmake --install` of the libraries:
#                                   include/llama.h, lib/libllama.so +
#                                   libggml*.so (which find each other:
#                                   RUNPATH $ORIGIN), lib/cmake/llama/
#                                   (find_package(llama))
#   .complete                       stamp: what was built, from which sdist
#
# llama.cpp is configured without tests, examples, the app, the web UI and
# OpenSSL. About 7 minutes on 2 idle cores (libllama 2, the server and the
# CLI 4-5); longer on a busy machine.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION="${CGRAM_LLAMA_CPP_PYTHON:-0.3.36}"
# The sdists known here, with their sha256 as PyPI serves them (and the
# llama.cpp each vendors): 0.3.36 is the one everything is built and tested
# against; the others are the drop-in's version matrix.
case "$LLAMA_CPP_PYTHON_VERSION" in
  0.3.36) SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e ;; # 2026-10
  0.3.35) SDIST_SHA256=1139dbb54509074b70893fab8554e3b079aa9f4d312058ce4018ef0019e3de12 ;; # 2026-08
  0.3.24) SDIST_SHA256=f610476c5c737366859dad2315ed7948b1580202f5d139bd0b3437718d6d7092 ;; # 2026-06
  0.3.16) SDIST_SHA256=34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6 ;; # 2025-08
  0.3.9) SDIST_SHA256=a3a985f558385e2f5de5b663f4e9b0817506d6af98122450142cd98e79216370 ;; # 2025-05
  *)
    echo "llama-build.sh: no sha256 known for llama-cpp-python $LLAMA_CPP_PYTHON_VERSION" >&2
    exit 2 ;;
esac
# Bump when the configuration changes, so that old caches are rebuilt.
STAMP_VERSION=4

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Outside the checkout by default, so that fresh clones (CI) reuse it.
cache="${CGRAM_LLAMA_CACHE:-${CGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cgram}}"
dir="$cache/llama.cpp-$LLAMA_CPP_PYTHON_VERSION"
sdist="$dir/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
src="$dir/src"
build="$dir/build"
prefix="$dir/prefix"
stamp="$dir/.complete"
jobs="${CGRAM_LLAMA_JOBS:-$(nproc 2>/dev/null || echo 2)}"
force=0
source_only=0
case "${1:-}" in
  --force) force=1 ;;
  --print)
    case "${2:-}" in
      prefix) echo "$prefix" ;;
      src) echo "$src" ;;
      bin) echo "$build/bin" ;;
      *) echo "usage: llama-build.sh --print prefix|src|bin" >&2; exit 2 ;;
    esac
    exit 0 ;;
  --source) source_only=1 ;;
  "") ;;
  *) echo "usage: llama-build.sh [--force | --source | --print prefix|src|bin]" >&2; exit 2 ;;
esac

stamp_text="v$STAMP_VERSION llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"

# The programs built besides libllama: those of the version's targets
# (older llama.cpp has no llama-completion, and links its common library
# into the programs).
programs=(llama-server llama-cli llama-completion)

complete() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ] &&
    [ -f "$prefix/include/llama.h" ] && [ -f "$prefix/lib/cmake/llama/llama-config.cmake" ] &&
    [ -f "$src/models/ggml-vocab-llama-bpe.gguf" ] &&
    ls "$prefix"/lib/libllama.* >/dev/null 2>&1 &&
    [ -x "$build/bin/llama-server" ] && [ -x "$build/bin/llama-cli" ] || return 1
  # The latest version: everything the demo and the end-to-end runs use.
  if [ "$LLAMA_CPP_PYTHON_VERSION" = 0.3.36 ]; then
    [ -x "$build/bin/llama-completion" ] && ls "$build"/bin/libllama-common.* >/dev/null 2>&1
  fi
}

if [ "$force" = 0 ] && complete; then
  if [ "$source_only" = 1 ]; then echo "$src"; else
    echo "llama.cpp (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION) is built: $prefix"; fi
  exit 0
fi

command -v python3 >/dev/null || { echo "llama-build.sh: python3 is needed" >&2; exit 1; }
mkdir -p "$dir"
if [ "$source_only" = 0 ]; then
  "$here/install-deps.sh"
  command -v c++ >/dev/null || command -v g++ >/dev/null || {
    echo "llama-build.sh: a C++ compiler is needed (Debian: apt-get install g++)" >&2
    exit 1
  }
  rm -f "$stamp"
fi

if [ ! -s "$sdist" ] || [ "$force" = 1 ]; then
  echo "==> fetching the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION source distribution from PyPI"
  tmp="$(mktemp -d "$dir/download.XXXXXX")"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    -d "$tmp" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  mv "$tmp"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION".tar.gz "$sdist"
  rm -rf "$tmp"
fi
if [ -n "$SDIST_SHA256" ]; then
  echo "$SDIST_SHA256  $sdist" | sha256sum --check --quiet
fi

if [ ! -f "$src/include/llama.h" ] || [ "$force" = 1 ]; then
  echo "==> unpacking vendor/llama.cpp"
  rm -rf "$src" "$dir/unpack"
  mkdir -p "$dir/unpack"
  tar -xzf "$sdist" -C "$dir/unpack" "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
  mv "$dir/unpack/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp" "$src"
  rm -rf "$dir/unpack"
fi

if [ "$source_only" = 1 ]; then
  echo "$src"
  exit 0
fi

[ "$force" = 1 ] && rm -rf "$build" "$prefix"
# A build tree configured for another source directory (the cache moved).
if [ -f "$build/CMakeCache.txt" ] && ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi

echo "==> configuring llama.cpp"
cmake -S "$src" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_INSTALL_RPATH="\$ORIGIN" \
  -DBUILD_SHARED_LIBS=ON \
  -DLLAMA_BUILD_COMMON=ON \
  -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_UI=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_TOOLS_INSTALL=OFF \
  -DLLAMA_OPENSSL=OFF \
  -DLLAMA_CURL=OFF \
  >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; exit 1; }

targets=(llama)
known="$(cmake --build "$build" --target help 2>/dev/null)"
for t in "${programs[@]}"; do
  # (Make lists "... name", Ninja "name: phony".)
  grep -qE -- "(^|[ .])$t(:|\$| )" <<<"$known" && targets+=("$t")
done
echo "==> building ${targets[*]} with $jobs jobs (minutes; log: $dir/build.log)"
start=$SECONDS
cmake --build "$build" --target "${targets[@]}" --parallel "$jobs" >"$dir/build.log" 2>&1 ||
  { tail -n 60 "$dir/build.log" >&2; exit 1; }
echo "    built in $((SECONDS - start)) s"

echo "==> installing the libraries into $prefix"
rm -rf "$prefix"
# Older llama.cpp (before LLAMA_TOOLS_INSTALL) installs every tool, built
# or not, and stops at the first one missing: the libraries and headers
# are all that is wanted from the install.
if ! grep -q LLAMA_TOOLS_INSTALL "$src/CMakeLists.txt" && [ -f "$build/tools/cmake_install.cmake" ]; then
  : >"$build/tools/cmake_install.cmake"
fi
cmake --install "$build" >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
# The programs run from $build/bin, next to every library they need (with
# LLAMA_TOOLS_INSTALL off, an installed llama-server would miss its
# libllama-server-impl.so).
rm -rf "$prefix/bin"

echo "$stamp_text" >"$stamp"
complete || { echo "llama-build.sh: the install is incomplete in $prefix" >&2; exit 1; }
echo "llama.cpp (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION) is built: $prefix"
