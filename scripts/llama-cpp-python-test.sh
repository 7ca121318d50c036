#!/usr/bin/env bash
# llama-cpp-python on cgram, end to end: llama-cpp-python built from its
# PyPI sdist (the one scripts/lib/llama-build.sh verifies; the wheel is cached),
# the cgram wheel (python/), both installed into a fresh virtual
# environment, and python/tests/test_llama_cpp.py run with Gemma 3 270M
# (scripts/lib/llama-model.sh): response_format schemas validated with
# jsonschema, GBNF through the grammar argument, the same greedy text as
# llama.cpp's own grammar sampler, lazy trigger patterns, refusals.
#
#   scripts/llama-cpp-python-test.sh           # the tests
#   scripts/llama-cpp-python-test.sh --bench   # and the tokens/s table of BENCHMARKS.md
#                                              # (scripts/lib/llama-cpp-python-bench.py)
#   CGRAM_LLAMA_CPP_PYTHON=V                   # another sdist llama-build.sh knows
#
# The wheel is built once per version (about 6 minutes on 2 cores, for the
# CPU) into <cache>/wheels/; the environment is build/llama-cpp-python-venv.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bench=0
[ "${1:-}" = "--bench" ] && bench=1
version="${CGRAM_LLAMA_CPP_PYTHON:-0.3.36}"
cache="${CGRAM_LLAMA_CACHE:-${CGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cgram}}"
build="${CGRAM_BUILD:-$root/build}"
venv="$build/llama-cpp-python-venv"
wheels="$cache/wheels"
pip() { "$venv/bin/python" -m pip --disable-pip-version-check "$@"; }

model="$(scripts/lib/llama-model.sh | tail -n 1)"
rm -rf "$venv"
python3 -m venv "$venv"
pip install --quiet --upgrade pip

wheel="$(ls "$wheels"/llama_cpp_python-"$version"-*.whl 2>/dev/null | head -n 1 || true)"
if [ -z "$wheel" ]; then
  src="$(CGRAM_LLAMA_CPP_PYTHON="$version" scripts/lib/llama-build.sh --source | tail -n 1)"
  sdist="$(dirname "$src")/llama_cpp_python-$version.tar.gz"
  echo "==> building llama-cpp-python $version from $sdist (once; cached in $wheels)"
  mkdir -p "$wheels"
  # A CPU build for this machine, without the HTTP client llama.cpp's
  # tools would fetch models with (no OpenSSL/curl needed).
  CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_CURL=OFF}" \
    CMAKE_BUILD_PARALLEL_LEVEL="${CGRAM_LLAMA_JOBS:-$(nproc 2>/dev/null || echo 2)}" \
    pip wheel --quiet --no-deps -w "$wheels.tmp" "$sdist"
  mv "$wheels.tmp"/llama_cpp_python-"$version"-*.whl "$wheels"/
  rm -rf "$wheels.tmp"
  wheel="$(ls "$wheels"/llama_cpp_python-"$version"-*.whl | head -n 1)"
fi

rm -rf "$build/llama-cpp-python-wheel"
pip wheel --quiet --no-deps -w "$build/llama-cpp-python-wheel" ./python
pip install --quiet "$wheel" "$build"/llama-cpp-python-wheel/cgram-*.whl pytest jsonschema
echo "llama-cpp-python $version ($(basename "$wheel")), model $model"

cd "$build"
CGRAM_REQUIRE_LLAMA_CPP=1 CGRAM_TEST_GGUF_MODEL="$model" \
  "$venv/bin/python" -m pytest -q "$root/python/tests/test_llama_cpp.py"
if [ "$bench" = 1 ]; then
  "$venv/bin/python" "$root/scripts/lib/llama-cpp-python-bench.py" "$model" \
    --threads "$(nproc 2>/dev/null || echo 2)"
fi
