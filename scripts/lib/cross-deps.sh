#!/usr/bin/env bash
# Installs what scripts/cross.sh needs to build cgram for every supported
# target from a Debian x86-64 machine, and to run what can run here. Does
# nothing for what is already there, so a second run takes a second.
#
#   Debian packages  gcc-aarch64-linux-gnu (linker and C compiler for Linux
#                    ARM, with its C library for qemu) and
#                    libc6-dev-arm64-cross (that library's headers), qemu-user
#                    (qemu-aarch64), gcc-mingw-w64-x86-64 (Windows) and
#                    g++-mingw-w64-x86-64-posix (llama.cpp for Windows), wine64
#                    and wine (runs the Windows build), llvm (llvm-objdump,
#                    llvm-otool, llvm-nm to inspect PE and Mach-O files,
#                    llvm-dlltool for the MSVC import library), cmake.
#   Rust targets     aarch64-unknown-linux-gnu, x86_64-pc-windows-gnu,
#                    aarch64-apple-darwin, x86_64-apple-darwin (rustup).
#   PyPI             ziglang and cargo-zigbuild, pinned, in a venv under
#                    $CGRAM_CROSS_TOOLS (scripts/lib/cross-env.sh): zig is the
#                    only linker on Linux that links macOS binaries without
#                    Apple's SDK (it carries the system library stubs), and
#                    both come as prebuilt wheels: no compiler to build,
#                    one version on every machine.
#
# Uses sudo for apt-get only when not root.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=scripts/lib/cross-env.sh
. "$root/scripts/lib/cross-env.sh"

ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.1

missing=()
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
# Its C library's headers: only recommended by the compiler's package, so
# a machine that installs without recommends has the compiler alone, and
# mimalloc's C sources fail on <wchar.h>.
[ -f /usr/aarch64-linux-gnu/include/stdio.h ] || missing+=(libc6-dev-arm64-cross)
command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64)
# llama.cpp for Windows (the drop-in's test, scripts/lib/llama-build-windows.sh)
# is C++ with std::thread: the posix-threads variant of MinGW's g++.
command -v x86_64-w64-mingw32-g++-posix >/dev/null || missing+=(g++-mingw-w64-x86-64-posix)
command -v wine >/dev/null || missing+=(wine)
[ -x /usr/lib/wine/wine64 ] || missing+=(wine64)
llvm_tool llvm-dlltool >/dev/null 2>&1 && llvm_tool llvm-otool >/dev/null 2>&1 || missing+=(llvm)
# With cmake, pkg-config and the compilers, if any is missing.
"$root/scripts/lib/install-deps.sh" "${missing[@]}"

targets=(aarch64-unknown-linux-gnu x86_64-pc-windows-gnu aarch64-apple-darwin x86_64-apple-darwin)
installed="$(rustup target list --installed)"
for t in "${targets[@]}"; do
  if ! grep -qx "$t" <<<"$installed"; then
    echo "==> rustup target add $t"
    rustup target add "$t"
  fi
done

venv="$CGRAM_CROSS_TOOLS/venv"
want="ziglang==$ZIGLANG_VERSION cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
if [ "$(cat "$venv/.cgram-installed" 2>/dev/null)" != "$want" ]; then
  echo "==> $want into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
  echo "$want" >"$venv/.cgram-installed"
fi
echo "cross-deps.sh: zig $(zig version), $("$venv/bin/cargo-zigbuild" --version), $(x86_64-w64-mingw32-gcc --version | head -n 1), $(aarch64-linux-gnu-gcc --version | head -n 1), $(qemu-aarch64 --version | head -n 1), $(wine --version 2>/dev/null)"
