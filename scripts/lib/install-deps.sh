#!/usr/bin/env bash
# Installs what a fresh Debian machine with Rust, gcc and Python lacks for
# cgram's scripts: cmake (C examples), pkg-config, and g++ (llama.cpp). Does nothing when they
# are there. Uses sudo only when not root.
#
#   scripts/lib/install-deps.sh [PACKAGE...]
#
# Packages named on the command line (Debian's names, which the caller
# found missing: scripts/lib/cross-deps.sh) are installed with the same
# apt-get run.
set -euo pipefail

missing=("$@")
command -v cmake >/dev/null || missing+=(cmake)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v cc >/dev/null || missing+=(gcc)
# llama.cpp (the demo, the drop-in's test bed) is C++.
command -v c++ >/dev/null || command -v g++ >/dev/null || missing+=(g++)
[ ${#missing[@]} -eq 0 ] && exit 0

command -v apt-get >/dev/null || {
  echo "install-deps.sh: please install: ${missing[*]} (no apt-get here)" >&2
  exit 1
}
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "==> installing ${missing[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
