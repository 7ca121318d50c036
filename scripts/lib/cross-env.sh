# Sourced by the cross-build scripts (scripts/install.sh --target,
# scripts/cross.sh): puts the cross tools that scripts/lib/cross-deps.sh
# installed on PATH and says where the LLVM tools are.
#
#   CGRAM_CROSS_TOOLS  where the tools live (default
#                      ${XDG_CACHE_HOME:-$HOME/.cache}/cgram/cross-tools):
#                      a Python venv with ziglang and cargo-zigbuild from
#                      PyPI, kept between runs so CI does not fetch them again.

CGRAM_CROSS_TOOLS="${CGRAM_CROSS_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/cgram/cross-tools}"
export CGRAM_CROSS_TOOLS
if [ -d "$CGRAM_CROSS_TOOLS/venv/bin" ]; then
  case ":$PATH:" in
    *":$CGRAM_CROSS_TOOLS/venv/bin:"*) ;;
    *) PATH="$CGRAM_CROSS_TOOLS/venv/bin:$PATH" ;;
  esac
  export PATH
fi

# zig, as the ziglang package installs it (python -m ziglang); a `zig` of
# the system's is not used, so every machine links with the same version.
zig() {
  "$CGRAM_CROSS_TOOLS/venv/bin/python" -m ziglang "$@"
}

# An LLVM tool (llvm-objdump, llvm-dlltool, llvm-otool, llvm-nm): Debian
# installs some under /usr/bin and all under /usr/lib/llvm-N/bin.
llvm_tool() {
  local name="$1" dir
  if command -v "$name" >/dev/null 2>&1; then
    command -v "$name"
    return 0
  fi
  for dir in /usr/lib/llvm-*/bin; do
    if [ -x "$dir/$name" ]; then
      echo "$dir/$name"
      return 0
    fi
  done
  echo "cross-env.sh: $name not found (scripts/lib/cross-deps.sh installs Debian's llvm)" >&2
  return 1
}
