#!/usr/bin/env bash
# Builds llama.cpp for Windows x86-64 from Linux (MinGW-w64), the test bed
# of cgram's Windows drop-in (a proxy llama.dll: see
# scripts/install-llama-dropin-windows.sh). Same pinned source as
# scripts/lib/llama-build.sh (the llama.cpp that PyPI's llama-cpp-python
# 0.3.36 vendors), shared libraries (llama.dll, ggml*.dll, as llama.cpp's
# Windows releases ship them), CPU backend only, no CURL or OpenSSL.
# Cached outside the checkout; a rerun with everything in place takes a
# second.
#
#   scripts/lib/llama-build-windows.sh            # idempotent; prints the bin dir
#   scripts/lib/llama-build-windows.sh --force    # rebuild from scratch
#   scripts/lib/llama-build-windows.sh --print bin|prefix|src
#   CGRAM_LLAMA_CACHE, CGRAM_LLAMA_JOBS       # as for scripts/lib/llama-build.sh
#
# Leaves, under <cache>/llama.cpp-0.3.36/windows-x86_64/:
#
#   build/bin/   llama.dll, ggml.dll, ggml-base.dll, ggml-cpu.dll,
#                llama-common.dll, mtmd.dll, llama-server-impl.dll,
#                llama-server.exe and the MinGW runtime DLLs they need
#                (libstdc++-6.dll, libgcc_s_seh-1.dll, libwinpthread-1.dll):
#                a folder as a Windows user has it. Never modified by the
#                tests: they copy it.
#   prefix/      `cmake --install` without bin/: include/llama.h,
#                lib/libllama.dll.a, lib/cmake/llama (find_package(llama)
#                for a CMake build of the drop-in)
#   .complete    stamp
#
# Built with Debian's MinGW-w64 gcc 12 in its posix thread model
# (tests/windows/mingw-w64-x86_64-posix.cmake: the win32 one has no
# std::thread; DLLs named as llama.cpp's releases name them, llama.dll
# rather than MinGW's libllama.dll), without OpenMP (ggml's own thread pool), for baseline
# x86-64 (cross builds turn GGML_NATIVE off; SSE2 only: slower, runs
# anywhere), with tests/windows/mingw-w64-compat.h forced into the C files
# (a struct Debian's MinGW-w64 10 headers lack). Targets: llama and
# llama-server (with llama-common and mtmd).
# About 4-5 minutes on 2 idle cores (258 s measured for both targets).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# Bump when the configuration changes, so that old caches are rebuilt.
STAMP_VERSION=1

src="$("$here/llama-build.sh" --print src)"
dir="$(dirname "$src")/windows-x86_64"
build="$dir/build"
prefix="$dir/prefix"
stamp="$dir/.complete"
jobs="${CGRAM_LLAMA_JOBS:-$(nproc 2>/dev/null || echo 2)}"
toolchain="$root/tests/windows/mingw-w64-x86_64-posix.cmake"
force=0
case "${1:-}" in
  --force) force=1 ;;
  --print)
    case "${2:-}" in
      bin) echo "$build/bin" ;;
      prefix) echo "$prefix" ;;
      src) echo "$src" ;;
      *) echo "usage: llama-build-windows.sh --print bin|prefix|src" >&2; exit 2 ;;
    esac
    exit 0 ;;
  "") ;;
  *) echo "usage: llama-build-windows.sh [--force | --print bin|prefix|src]" >&2; exit 2 ;;
esac

stamp_text="v$STAMP_VERSION windows-x86_64 $(basename "$(dirname "$src")")"
runtime_dlls=(libstdc++-6.dll libgcc_s_seh-1.dll libwinpthread-1.dll)

complete() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ] &&
    [ -f "$build/bin/llama.dll" ] && [ -f "$build/bin/llama-server.exe" ] &&
    [ -f "$prefix/include/llama.h" ] && [ -f "$prefix/lib/cmake/llama/llama-config.cmake" ] &&
    for d in "${runtime_dlls[@]}"; do [ -f "$build/bin/$d" ] || return 1; done
}

if [ "$force" = 0 ] && complete; then
  echo "$build/bin"
  exit 0
fi

for t in x86_64-w64-mingw32-gcc-posix x86_64-w64-mingw32-g++-posix cmake; do
  command -v "$t" >/dev/null || {
    echo "llama-build-windows.sh: $t is needed (Debian: apt-get install g++-mingw-w64-x86-64-posix cmake; scripts/lib/cross-deps.sh)" >&2
    exit 1
  }
done
# The sources (the sdist, fetched and checked by llama-build.sh).
"$here/llama-build.sh" --source >/dev/null
mkdir -p "$dir"
rm -f "$stamp"
[ "$force" = 1 ] && rm -rf "$build" "$prefix"
if [ -f "$build/CMakeCache.txt" ] && ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi

echo "==> configuring llama.cpp for Windows x86-64 (MinGW-w64, posix threads)" >&2
cmake -S "$src" -B "$build" \
  -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_C_FLAGS="-include $root/tests/windows/mingw-w64-compat.h" \
  -DBUILD_SHARED_LIBS=ON \
  -DGGML_OPENMP=OFF \
  -DGGML_CCACHE=OFF \
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
  >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; exit 1; }

# Only this build's DLLs in bin/ (relinked if they were there: seconds), so
# that it is the folder a Windows user has, nothing more.
rm -f "$build"/bin/*.dll "$build"/bin/*.exe
echo "==> building llama and llama-server with $jobs jobs (minutes; log: $dir/build.log)" >&2
start=$SECONDS
cmake --build "$build" --target llama llama-server --parallel "$jobs" >"$dir/build.log" 2>&1 ||
  { tail -n 60 "$dir/build.log" >&2; exit 1; }
echo "    built in $((SECONDS - start)) s" >&2

# The MinGW runtime beside the DLLs, as a Windows folder of llama.cpp has it.
for d in "${runtime_dlls[@]}"; do
  f="$(x86_64-w64-mingw32-g++-posix -print-file-name="$d")"
  [ -f "$f" ] || f="/usr/x86_64-w64-mingw32/lib/$d"
  [ -f "$f" ] || { echo "llama-build-windows.sh: no $d in the MinGW installation" >&2; exit 1; }
  cp "$f" "$build/bin/"
done

rm -rf "$prefix"
cmake --install "$build" >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
# The programs run from build/bin, next to every DLL they need (with
# LLAMA_TOOLS_INSTALL off, an installed llama-server.exe would miss its
# llama-server-impl.dll), as with scripts/lib/llama-build.sh.
rm -rf "$prefix/bin"

echo "$stamp_text" >"$stamp"
complete || { echo "llama-build-windows.sh: the build is incomplete in $dir" >&2; exit 1; }
echo "$build/bin"
