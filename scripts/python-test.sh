#!/usr/bin/env bash
# The Python package (python/): built as a wheel with the standard tools
# from PyPI (pip, setuptools; setup.py runs cargo), installed into a fresh
# virtual environment, and its tests run (python/tests, pytest).
#
#   scripts/python-test.sh
#
# The environment is build/python-venv; the wheel build/python-wheel/.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${CGRAM_BUILD:-$root/build}"
venv="$build/python-venv"
rm -rf "$venv" "$build/python-wheel"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$build/python-wheel" ./python
wheel="$(ls "$build"/python-wheel/cgram-*.whl)"
echo "built $(basename "$wheel"): $(python3 -c 'import sys, zipfile; print(", ".join(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if "libcgram" in n or "cgram.dll" in n))' "$wheel")"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" pytest
# Run from outside the source tree: the installed package, not python/cgram.
cd "$build"
# test_llama_cpp.py needs llama-cpp-python and a model: scripts/llama-cpp-python-test.sh.
"$venv/bin/python" -m pytest -q "$root/python/tests" --ignore "$root/python/tests/test_llama_cpp.py"
