#!/usr/bin/env bash
# Builds cgram in release mode and installs it under PREFIX (default
# /usr/local):
#   PREFIX/include/cgram.h
#   PREFIX/lib/libcgram.so (.dylib on macOS) and libcgram.a
#   PREFIX/lib/cmake/cgram/cgramConfig.cmake, cgramConfigVersion.cmake
#   PREFIX/lib/pkgconfig/cgram.pc
# Then a CMake project does find_package(cgram REQUIRED) (with
# -DCMAKE_PREFIX_PATH=PREFIX unless PREFIX is a standard one) and
# target_link_libraries(app PRIVATE cgram::cgram); others use
# pkg-config --cflags --libs cgram.
#
# Arguments after PREFIX go to `cargo build`: scripts/sanitize.sh installs
# a build with the system allocator (`--no-default-features`, so that
# valgrind sees the library's heap) with CARGO_TARGET_DIR set apart.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${1:-/usr/local}"
shift || true
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
cd "$root"

echo "==> cargo build --release --lib $*"
cargo build --release --lib "$@"

# Where cargo put the libraries, and the version, from cargo itself.
read -r target_dir version < <(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
m = json.load(sys.stdin)
pkg = next(p for p in m["packages"] if p["name"] == "cgram")
print(m["target_directory"], pkg["version"])')
out="$target_dir/release"

# The system libraries a static link of Rust code needs (pkg-config --static).
case "$(uname -s)" in
  Darwin) shared=libcgram.dylib; libs_private="-liconv -lm" ;;
  MINGW*|MSYS*|CYGWIN*) shared=cgram.dll; libs_private="-lws2_32 -luserenv -lntdll -lbcrypt" ;;
  *) shared=libcgram.so; libs_private="-lpthread -ldl -lm -lrt" ;;
esac
for f in "$shared" libcgram.a; do
  [ -f "$out/$f" ] || { echo "install.sh: $out/$f was not built" >&2; exit 1; }
done

echo "==> installing cgram $version into $prefix"
install -d "$prefix/include" "$prefix/lib/cmake/cgram" "$prefix/lib/pkgconfig"
install -m 644 include/cgram.h "$prefix/include/cgram.h"
install -m 755 "$out/$shared" "$prefix/lib/$shared"
install -m 644 "$out/libcgram.a" "$prefix/lib/libcgram.a"
if [ "$(uname -s)" = Darwin ]; then
  # Let programs find the library where it is installed.
  install_name_tool -id "$prefix/lib/$shared" "$prefix/lib/$shared"
fi

install -m 644 cmake/cgramConfig.cmake "$prefix/lib/cmake/cgram/cgramConfig.cmake"
sizeof_void_p="$(getconf LONG_BIT 2>/dev/null || echo 64)"
sed -e "s|@CGRAM_VERSION@|$version|g" \
    -e "s|@CGRAM_SIZEOF_VOID_P@|$((sizeof_void_p / 8))|g" \
    cmake/cgramConfigVersion.cmake.in > "$prefix/lib/cmake/cgram/cgramConfigVersion.cmake"
sed -e "s|@PREFIX@|$prefix|g" -e "s|@CGRAM_VERSION@|$version|g" -e "s|@LIBS_PRIVATE@|$libs_private|g" \
    cmake/cgram.pc.in > "$prefix/lib/pkgconfig/cgram.pc"

echo "==> installed:"
for f in include/cgram.h "lib/$shared" lib/libcgram.a lib/cmake/cgram/cgramConfig.cmake \
         lib/cmake/cgram/cgramConfigVersion.cmake lib/pkgconfig/cgram.pc; do
  echo "    $prefix/$f"
done
