#!/usr/bin/env bash
# Installs the cgram drop-in into a Windows llama.cpp folder, from Linux
# (MinGW-w64): afterwards llama-server.exe, llama-cli.exe and every other
# unmodified program of that folder use cgram for every grammar they
# create (--grammar, --json-schema, response_format, tool calls with their
# lazy triggers), with nothing to preload and nothing else to change.
#
#   scripts/install-llama-dropin-windows.sh [options] LLAMA_DIR
#
#   LLAMA_DIR          the folder with llama.cpp's llama.dll (libllama.dll
#                      for a MinGW build) and its programs
#   --include DIR      where llama.h and ggml.h are, for that llama.cpp
#                      version (repeatable; default LLAMA_DIR/../include, as
#                      `cmake --install` lays a prefix out)
#   --source DIR       a llama.cpp source tree: --include DIR/include
#                      --include DIR/ggml/include
#   --cgram PREFIX     the Windows cgram package (scripts/install.sh PREFIX
#                      --target x86_64-pc-windows-gnu); default: the one
#                      scripts/cross.sh installs, else one built into
#                      build/windows-cgram (cargo and the Windows target)
#   --work DIR         where the build goes (default build/dropin-windows)
#   --uninstall        put llama.cpp's own DLL back
#
# How it works. Windows has no preload: a program loads llama.dll by name,
# from its own folder first. So the drop-in is a proxy DLL with
# llama.cpp's name, and llama.cpp's own DLL is renamed
# llama-cgram-original.dll beside it:
#
#   llama.dll                 the proxy: exports every name the original
#                             exports. All but four are forwarders
#                             ("llama_decode = llama-cgram-original.llama_decode"):
#                             the loader binds a program's import straight
#                             to the original, at no cost per call. The
#                             four grammar entry points
#                             (llama_sampler_init_grammar, _lazy,
#                             _lazy_patterns, llama_model_free) are
#                             adapters/llama/cgram_llama_dropin.c's, and
#                             the cgram_llama_* functions are exported too
#                             (cgram_llama_sampler_is_cgram says whether a
#                             sampler is cgram's). cgram is linked in
#                             statically: nothing else to install.
#   llama-cgram-original.dll  llama.cpp's DLL, unchanged; the proxy imports
#                             the functions its adapter calls from it
#                             (an import library made from its exports).
#
# The export list is read from the DLL being replaced (llama.cpp's exports
# change between versions; a MinGW build also exports its C++ symbols,
# which other llama.cpp DLLs import), and the proxy is compiled against
# the llama.h of that version: the sampler interface grows between
# versions. A function the adapter calls that this llama.dll lacks is a
# link error here, not a failure at run time.
#
# The original's name: it says who put it there; it has no dot before
# ".dll", as forwarders name a module and a function separated by a dot;
# it does not start with "ggml-", the names ggml's backend loader scans a
# folder for; it is the same whether llama.cpp's DLL is llama.dll (MSVC
# releases) or libllama.dll (MinGW), so that the proxy needs no
# configuration at run time.
#
# Rerunning it rebuilds the proxy from the original (a new cgram). A
# llama.cpp upgrade that overwrote the proxy with a new llama.dll is
# noticed: the new DLL becomes the original. Uninstall: --uninstall, or by
# hand, delete llama.dll and rename llama-cgram-original.dll back.
#
# Is it active? The first grammar a program creates logs "cgram <version>:
# llama.cpp grammar samplers run on cgram" through llama.cpp's log, as on
# Linux; CGRAM_LLAMA=off gives llama.cpp's own samplers.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
original_name=llama-cgram-original.dll
header="$root/adapters/llama/cgram_llama.h"

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//; /^set -euo/d' >&2
  exit 2
}

includes=()
cgram=""
work="${CGRAM_BUILD:-$root/build}/dropin-windows"
uninstall=0
llama_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --include) includes+=("$2"); shift 2 ;;
    --source) includes+=("$2/include" "$2/ggml/include"); shift 2 ;;
    --cgram) cgram="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --uninstall) uninstall=1; shift ;;
    -h | --help) usage ;;
    -*) echo "install-llama-dropin-windows.sh: unknown option $1" >&2; exit 2 ;;
    *) [ -z "$llama_dir" ] || usage; llama_dir="$1"; shift ;;
  esac
done
[ -n "$llama_dir" ] || usage
llama_dir="$(cd "$llama_dir" && pwd)"
die() { echo "install-llama-dropin-windows.sh: $*" >&2; exit 1; }

# llama.cpp's DLL: llama.dll (MSVC, llama.cpp's releases) or libllama.dll
# (MinGW builds).
dll=""
for n in llama.dll libllama.dll; do
  if [ -f "$llama_dir/$n" ]; then
    [ -z "$dll" ] || die "$llama_dir has both llama.dll and libllama.dll: which one do the programs load?"
    dll="$n"
  fi
done
original="$llama_dir/$original_name"
is_proxy() { python3 "$root/scripts/lib/llama_proxy.py" is-proxy "$1"; }

if [ "$uninstall" = 1 ]; then
  [ -f "$original" ] || die "no $original_name in $llama_dir: the drop-in is not installed"
  if [ -n "$dll" ] && ! is_proxy "$llama_dir/$dll"; then
    die "$llama_dir/$dll is not cgram's proxy (llama.cpp was upgraded over it?): delete $original_name by hand"
  fi
  name="${dll:-llama.dll}"
  mv -f "$original" "$llama_dir/$name"
  echo "uninstalled: $llama_dir/$name is llama.cpp's own again"
  exit 0
fi

[ -n "$dll" ] || die "no llama.dll (or libllama.dll) in $llama_dir"
# Which file is llama.cpp's DLL now.
if [ -f "$original" ] && is_proxy "$llama_dir/$dll"; then
  source_dll="$original" # reinstall: rebuild the proxy from the original
else
  source_dll="$llama_dir/$dll" # first install, or llama.cpp upgraded over the proxy
fi

[ ${#includes[@]} -gt 0 ] || includes=("$llama_dir/../include")
header_dirs=()
for d in "${includes[@]}"; do
  [ -d "$d" ] || die "no directory $d (--include)"
  header_dirs+=(-I"$(cd "$d" && pwd)")
done
found_llama_h=0
for d in "${includes[@]}"; do [ -f "$d/llama.h" ] && found_llama_h=1; done
[ "$found_llama_h" = 1 ] || die "no llama.h in ${includes[*]}: give the headers of this llama.cpp version (--include DIR or --source DIR)"

# Tools: MinGW-w64's C compiler and dlltool (Debian: gcc-mingw-w64-x86-64,
# which scripts/lib/cross-deps.sh installs).
cc="${CGRAM_MINGW_CC:-x86_64-w64-mingw32-gcc}"
dlltool="${CGRAM_MINGW_DLLTOOL:-x86_64-w64-mingw32-dlltool}"
objdump="${CGRAM_MINGW_OBJDUMP:-x86_64-w64-mingw32-objdump}"
command -v "$cc" >/dev/null || die "$cc is needed (Debian: apt-get install gcc-mingw-w64-x86-64)"
command -v "$dlltool" >/dev/null || die "$dlltool is needed (Debian: apt-get install binutils-mingw-w64-x86-64)"

# cgram for Windows, linked in statically.
if [ -z "$cgram" ]; then
  cgram="${CGRAM_BUILD:-$root/build}/cross/x86_64-pc-windows-gnu/prefix"
  if [ ! -f "$cgram/lib/libcgram.a" ]; then
    cgram="${CGRAM_BUILD:-$root/build}/windows-cgram"
    "$root/scripts/install.sh" "$cgram" --target x86_64-pc-windows-gnu >"$cgram.log" 2>&1 ||
      { cat "$cgram.log" >&2; exit 1; }
  fi
fi
[ -f "$cgram/lib/libcgram.a" ] && [ -f "$cgram/include/cgram.h" ] ||
  die "no lib/libcgram.a and include/cgram.h in $cgram (scripts/install.sh PREFIX --target x86_64-pc-windows-gnu)"

rm -rf "$work"
mkdir -p "$work"
base="${original_name%.dll}"

# The .def files from llama.cpp's DLL (scripts/lib/llama_proxy.py): the
# proxy's (each export forwarded to the original, but the four entry
# points the drop-in replaces; the adapter's cgram_llama_* functions), and
# the original's C API (llama_*: all the adapter calls), for its import
# library.
python3 "$root/scripts/lib/llama_proxy.py" defs "$source_dll" --proxy-name "$dll" \
  --original-name "$original_name" --header "$header" \
  --proxy-def "$work/proxy.def" --original-def "$work/$base.def" >"$work/defs.txt"
"$dlltool" -m i386:x86-64 -D "$original_name" -d "$work/$base.def" -l "$work/lib$base.dll.a"

# The adapter and the drop-in, against this llama.cpp's llama.h and
# cgram.h (CGRAM_STATIC: no dllimport), without LLAMA_SHARED (the proxy
# defines llama.dll's entry points itself; its calls to llama.cpp go
# through the import library). -fexceptions: a C++ exception thrown by
# llama.cpp's own sampler (a trigger pattern std::regex refuses) unwinds
# through the drop-in to the program, as it would without cgram.
cflags=(-std=c11 -O2 -Wall -Wextra -Werror -fexceptions -DCGRAM_STATIC
  "-DCGRAM_LLAMA_ORIGINAL_DLL=\"$original_name\"" -I"$root/adapters/llama" -I"$cgram/include"
  "${header_dirs[@]}")
for f in cgram_llama cgram_llama_dropin; do
  "$cc" "${cflags[@]}" -c "$root/adapters/llama/$f.c" -o "$work/$f.o"
done

# One DLL: the adapter, the drop-in and libcgram.a (its symbols stay
# inside: only the .def's names are exported), the C runtime's
# libgcc statically, and the system libraries Rust's standard library
# needs (cgram.pc's Libs.private).
"$cc" -shared -O2 -o "$work/$dll" "$work/cgram_llama.o" "$work/cgram_llama_dropin.o" \
  "$work/proxy.def" "$cgram/lib/libcgram.a" "$work/lib$base.dll.a" \
  -static-libgcc -Wl,--exclude-all-symbols \
  -lpsapi -lshell32 -luser32 -ladvapi32 -lbcrypt -lkernel32 -lntdll -luserenv -lws2_32 -ldbghelp

# Exactly llama.cpp's names plus the adapter's (nothing of libcgram's),
# every one of llama.cpp's forwarded to the original but the replaced.
python3 "$root/scripts/lib/llama_proxy.py" check "$work/$dll" "$source_dll" \
  --original-name "$original_name" --header "$header" >"$work/check.txt" ||
  die "the proxy's exports are wrong"
# The DLLs the proxy loads: the original and Windows' own.
"$objdump" -p "$work/$dll" | sed -n 's/^\tDLL Name: //p' >"$work/imports.txt"
grep -qxF "$original_name" "$work/imports.txt" || die "the proxy does not import $original_name"

# Install: llama.cpp's DLL becomes the original (unless it already is),
# the proxy takes its name.
if [ "$source_dll" != "$original" ]; then
  mv -f "$llama_dir/$dll" "$original"
fi
cp "$work/$dll" "$llama_dir/$dll"
echo "installed cgram's proxy as $llama_dir/$dll, llama.cpp's DLL as $original"
echo "    $(cat "$work/check.txt")"
echo "    the proxy loads: $(tr '\n' ' ' <"$work/imports.txt")"
