#!/usr/bin/env bash
# Installs the cgram drop-in for unmodified llama.cpp programs: after it,
# llama-server, llama-cli and any other program on a shared libllama use
# cgram for every grammar they create (--grammar, --json-schema,
# response_format, tool calls with their lazy triggers) when started as
#
#   DEST/bin/cgram-llama llama-server -m model.gguf ...
#   (or LD_PRELOAD=DEST/lib/libcgram-llama.so llama-server ...)
#
#   scripts/install-llama-dropin.sh LLAMA_PREFIX [DEST]
#
# LLAMA_PREFIX is where llama.cpp is installed (include/llama.h and
# lib/cmake/llama/): the drop-in is compiled against that llama.h, so it
# must be the llama.cpp the programs run with. DEST defaults to
# LLAMA_PREFIX. cgram is built from this checkout and linked into the
# drop-in statically (one file to preload). Nothing of llama.cpp changes.
# Uninstall: delete DEST/lib/libcgram-llama.so and DEST/bin/cgram-llama.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: scripts/install-llama-dropin.sh LLAMA_PREFIX [DEST]" >&2; exit 2; }
llama_prefix="$(cd "$1" && pwd)"
dest="${2:-$llama_prefix}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
[ -f "$llama_prefix/include/llama.h" ] || { echo "install-llama-dropin.sh: no include/llama.h in $llama_prefix" >&2; exit 1; }
build="${CGRAM_BUILD:-$root/build}"

"$root/scripts/lib/install-deps.sh"
"$root/scripts/install.sh" "$build/prefix" >/dev/null
work="$build/dropin"
rm -f "$work/CMakeCache.txt"
cmake -S "$root/adapters/llama/dropin" -B "$work" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$build/prefix;$llama_prefix" -DCMAKE_INSTALL_PREFIX="$dest" \
  >"$work.cmake.log" 2>&1 || { cat "$work.cmake.log" >&2; exit 1; }
cmake --build "$work" --parallel 2 >"$work.build.log" 2>&1 || { cat "$work.build.log" >&2; exit 1; }
cmake --install "$work" >/dev/null
# The drop-in exports llama.cpp's entry points and the cgram_llama_*
# functions (and the symbols the linker defines in every shared library);
# libcgram, linked in, stays private (docs/ABI.md).
others="$(python3 "$root/scripts/lib/abi.py" exports "$dest/lib/libcgram-llama.so" |
  grep -v -e '^llama_sampler_init_grammar' -e '^llama_model_free$' -e '^cgram_llama_' \
    -e '^_init$' -e '^_fini$' -e '^_edata$' -e '^_end$' -e '^__bss_start$' || true)"
if [ -n "$others" ]; then
  echo "install-llama-dropin.sh: libcgram-llama.so exports more than it should:" >&2
  echo "$others" | head -n 20 >&2
  exit 1
fi
echo "installed $dest/lib/libcgram-llama.so and $dest/bin/cgram-llama"
