#!/usr/bin/env bash
# Regenerates include/cgram.h from src/ffi/ with cbindgen (through the
# header test, so no cbindgen binary is needed).
set -euo pipefail
cd "$(dirname "$0")/.."
CGRAM_BLESS=1 cargo test --quiet --test header header_is_up_to_date
echo "include/cgram.h is up to date"
