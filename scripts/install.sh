#!/usr/bin/env bash
# Builds cgram in release mode and installs it under PREFIX (default
# /usr/local), laid out for the target's system:
#
#   Linux (ELF)  include/cgram.h
#                lib/libcgram.so.X.Y.Z, with the links libcgram.so.X (the
#                SONAME, what programs record) and libcgram.so (for -lcgram)
#                lib/libcgram.a
#   macOS        lib/libcgram.X.dylib (install name @rpath/libcgram.X.dylib;
#                on a Mac the install name becomes its absolute installed
#                path), the link libcgram.dylib, lib/libcgram.a
#   Windows      bin/cgram.dll, lib/libcgram.dll.a (MinGW import library),
#                lib/cgram.lib (MSVC import library) and lib/cgram.def,
#                lib/libcgram.a (static, MinGW)
#   and on each  lib/cmake/cgram/cgramConfig.cmake, cgramConfigVersion.cmake
#                lib/pkgconfig/cgram.pc
#
# Then a CMake project does find_package(cgram REQUIRED) (with
# -DCMAKE_PREFIX_PATH=PREFIX unless PREFIX is a standard one) and
# target_link_libraries(app PRIVATE cgram::cgram); others use
# pkg-config --cflags --libs cgram.
#
#   scripts/install.sh PREFIX [--target TRIPLE] [CARGO ARGS...]
#
# --target builds for another system from this one (scripts/cross.sh does
# it for every supported target; scripts/lib/cross-deps.sh installs the
# toolchains): aarch64-unknown-linux-gnu and x86_64-pc-windows-gnu with
# Debian's cross compilers, aarch64-apple-darwin and x86_64-apple-darwin
# with zig (see "macOS" below). Other arguments go to `cargo build`:
# scripts/sanitize.sh installs a build with the system allocator
# (`--no-default-features`) with CARGO_TARGET_DIR set apart.
#
# macOS: zig links Mach-O files but ignores the list of symbols to export
# that rustc gives the linker, so a dylib it links from Rust exports
# thousands of Rust symbols. The dylib is therefore linked here from the
# static library, whose symbols other than the header's functions are made
# private first (scripts/lib/macho_hide.py), the way ld64 would have.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${1:-/usr/local}"
shift || true
target=""
cargo_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target="$2"; shift 2 ;;
    --target=*) target="${1#--target=}"; shift ;;
    *) cargo_args+=("$1"); shift ;;
  esac
done
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
cd "$root"

host="$(rustc -vV | sed -n 's/^host: //p')"
[ -n "$target" ] || target="$host"
case "$target" in
  *-linux-gnu*) system=linux ;;
  *-apple-darwin) system=macos ;;
  *-pc-windows-gnu) system=windows ;;
  *) echo "install.sh: target $target is not supported (see the README's platform table)" >&2; exit 2 ;;
esac

# Where cargo puts the libraries, and the version, from cargo itself.
read -r target_dir version < <(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
m = json.load(sys.stdin)
pkg = next(p for p in m["packages"] if p["name"] == "cgram")
print(m["target_directory"], pkg["version"])')
major="${version%%.*}"
minor="${version#*.}"
minor="${minor%%.*}"

# A build for the host stays in target/release, shared with `cargo build`.
target_flag=()
out="$target_dir/release"
if [ "$target" != "$host" ]; then
  target_flag=(--target "$target")
  out="$target_dir/$target/release"
fi

if [ "$target" != "$host" ]; then
  # zig and cargo-zigbuild (macOS), the LLVM tools (Windows' import library).
  # shellcheck source=scripts/lib/cross-env.sh
  . "$root/scripts/lib/cross-env.sh"
fi
pointer_bytes=$(($(rustc --print cfg --target "$target" | sed -n 's/^target_pointer_width="\(.*\)"$/\1/p') / 8))

if [ "$system" = macos ]; then
  # The oldest macOS each architecture's Rust standard library supports.
  case "$target" in
    aarch64-*) export MACOSX_DEPLOYMENT_TARGET="${MACOSX_DEPLOYMENT_TARGET:-11.0}" ;;
    *) export MACOSX_DEPLOYMENT_TARGET="${MACOSX_DEPLOYMENT_TARGET:-10.12}" ;;
  esac
  # The static library only: the dylib is linked below (rustc's own link of
  # it would export every Rust symbol).
  echo "==> cargo-zigbuild rustc --release --lib --crate-type staticlib ${target_flag[*]} ${cargo_args[*]:-} (macOS $MACOSX_DEPLOYMENT_TARGET and later)"
  cargo-zigbuild rustc --release --lib --crate-type staticlib "${target_flag[@]}" "${cargo_args[@]}"
else
  echo "==> cargo build --release --lib ${target_flag[*]} ${cargo_args[*]:-}"
  cargo build --release --lib "${target_flag[@]}" "${cargo_args[@]}"
fi

# The system libraries a static link of libcgram.a needs (pkg-config
# --static, CMake's cgram::cgram_static): what `cargo rustc --crate-type
# staticlib -- --print native-static-libs` prints for each system.
case "$system" in
  linux) libs_private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc" ;;
  macos) libs_private="-liconv -lSystem -lc -lm" ;;
  windows) libs_private="-lpsapi -lshell32 -luser32 -ladvapi32 -lbcrypt -lkernel32 -lntdll -luserenv -lws2_32 -ldbghelp" ;;
esac

echo "==> installing cgram $version for $target into $prefix"
install -d "$prefix/include" "$prefix/lib/cmake/cgram" "$prefix/lib/pkgconfig"
install -m 644 include/cgram.h "$prefix/include/cgram.h"
[ -f "$out/libcgram.a" ] || { echo "install.sh: $out/libcgram.a was not built" >&2; exit 1; }
install -m 644 "$out/libcgram.a" "$prefix/lib/libcgram.a"

case "$system" in
  linux)
    [ -f "$out/libcgram.so" ] || { echo "install.sh: $out/libcgram.so was not built" >&2; exit 1; }
    install -m 755 "$out/libcgram.so" "$prefix/lib/libcgram.so.$version"
    ln -sfn "libcgram.so.$version" "$prefix/lib/libcgram.so.$major"
    ln -sfn "libcgram.so.$major" "$prefix/lib/libcgram.so"
    installed=("lib/libcgram.so.$version" "lib/libcgram.so.$major" lib/libcgram.so)
    ;;
  macos)
    dylib="libcgram.$major.dylib"
    work="$out/macos-dylib"
    mkdir -p "$work"
    python3 scripts/lib/macho_hide.py --keep-header include/cgram.h "$out/libcgram.a" "$work/libcgram-exports.a"
    echo "==> zig cc: linking $dylib"
    # -force_load: every object of the archive, then -dead_strip keeps what
    # the exported functions reach.
    zig cc -target "${target%%-*}-macos.$MACOSX_DEPLOYMENT_TARGET" -dynamiclib \
      -o "$work/$dylib" "-Wl,-force_load,$work/libcgram-exports.a" \
      "-Wl,-install_name,@rpath/$dylib" \
      "-Wl,-compatibility_version,$major.$minor.0" "-Wl,-current_version,$version" \
      -Wl,-dead_strip -lSystem
    install -m 755 "$work/$dylib" "$prefix/lib/$dylib"
    ln -sfn "$dylib" "$prefix/lib/libcgram.dylib"
    if [ "$(uname -s)" = Darwin ]; then
      # Installed on this Mac: programs find it where it is.
      install_name_tool -id "$prefix/lib/$dylib" "$prefix/lib/$dylib"
    fi
    installed=("lib/$dylib" lib/libcgram.dylib)
    ;;
  windows)
    for f in cgram.dll libcgram.dll.a; do
      [ -f "$out/$f" ] || { echo "install.sh: $out/$f was not built" >&2; exit 1; }
    done
    install -d "$prefix/bin"
    install -m 755 "$out/cgram.dll" "$prefix/bin/cgram.dll"
    install -m 644 "$out/libcgram.dll.a" "$prefix/lib/libcgram.dll.a"
    # The .def lists the DLL's exports as its export table has them; the
    # MSVC import library is made from it (an MSVC-built host links
    # cgram.lib, as it would a DLL built by MSVC).
    python3 scripts/lib/abi.py exports --format def "$out/cgram.dll" >"$prefix/lib/cgram.def"
    "$(llvm_tool llvm-dlltool)" -m i386:x86-64 -D cgram.dll -d "$prefix/lib/cgram.def" \
      -l "$prefix/lib/cgram.lib"
    installed=(bin/cgram.dll lib/libcgram.dll.a lib/cgram.lib lib/cgram.def)
    ;;
esac

install -m 644 cmake/cgramConfig.cmake "$prefix/lib/cmake/cgram/cgramConfig.cmake"
sed -e "s|@CGRAM_VERSION@|$version|g" -e "s|@CGRAM_SIZEOF_VOID_P@|$pointer_bytes|g" \
    cmake/cgramConfigVersion.cmake.in > "$prefix/lib/cmake/cgram/cgramConfigVersion.cmake"
sed -e "s|@PREFIX@|$prefix|g" -e "s|@CGRAM_VERSION@|$version|g" -e "s|@LIBS_PRIVATE@|$libs_private|g" \
    cmake/cgram.pc.in > "$prefix/lib/pkgconfig/cgram.pc"

echo "==> installed:"
for f in include/cgram.h "${installed[@]}" lib/libcgram.a lib/cmake/cgram/cgramConfig.cmake \
         lib/cmake/cgram/cgramConfigVersion.cmake lib/pkgconfig/cgram.pc; do
  echo "    $prefix/$f"
done
