#!/usr/bin/env bash
# cgram's Windows drop-in (a proxy llama.dll), built and run from Linux:
# llama.cpp cross-compiled with MinGW-w64, everything run under wine.
#
#   scripts/llama-dropin-windows-test.sh [--server] [--cgram PREFIX]
#
#   --cgram PREFIX  the Windows cgram package (scripts/install.sh PREFIX
#                   --target x86_64-pc-windows-gnu); default: the one
#                   scripts/cross.sh installs (build/cross/x86_64-pc-windows-gnu/prefix),
#                   else one built into build/windows-cgram
#   --server        also llama-server.exe with Gemma 3 270M
#                   (scripts/lib/llama-model.sh) and a few requests
#
# Steps (work in build/llama-windows/, CGRAM_BUILD moves build/):
#   1. llama.cpp for Windows (scripts/lib/llama-build-windows.sh: cached; the
#      first build takes 4-5 minutes on 2 cores);
#   2. two copies of its folder: proxy/ gets the drop-in from
#      scripts/install-llama-dropin-windows.sh, plain/ stays llama.cpp's;
#      cmake/ gets it from the CMake build (adapters/llama/dropin/windows,
#      cross with the MinGW toolchain file, `cmake --install`);
#   3. tests/windows/llama_dropin_test.c, built as any llama.cpp program
#      (against llama.h and llama.cpp's import library: it imports
#      "llama.dll"), run under wine in proxy/ (cgram serves the grammars),
#      proxy/ with CGRAM_LLAMA=off, plain/ (llama.cpp's own) and cmake/;
#   4. demo/llama/adapter_test.c, the adapter compiled into the program
#      (the other way of using cgram on Windows), against plain/'s
#      llama.dll and cgram.dll;
#   5. with --server: llama-server.exe from proxy/ on 127.0.0.1, a
#      /completion with a json_schema (the output parsed and checked
#      against the schema), one with a GBNF grammar, a bad grammar (400),
#      a lazy grammar with a trigger pattern, a trigger pattern that
#      std::regex rejects (llama.cpp's exception unwinds through the
#      proxy: an error, the server stays up), and the server's log must
#      say cgram is on.
# About 20 s once llama.cpp and the model are cached (the server: 10 s
# more). Prints "N passed, N failed"; exit status 0 when nothing failed.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
server=0
cgram=""
while [ $# -gt 0 ]; do
  case "$1" in
    --server) server=1; shift ;;
    --cgram) cgram="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed 's/^# \{0,1\}//; /^set -uo/d'; exit 0 ;;
    *) echo "usage: scripts/llama-dropin-windows-test.sh [--server] [--cgram PREFIX]" >&2; exit 2 ;;
  esac
done

say() { printf '==> %s\n' "$*"; }
die() { echo "llama-dropin-windows-test.sh: $*" >&2; exit 1; }
n_passed=0
n_failed=0
result() { # status what
  if [ "$1" = 0 ]; then
    n_passed=$((n_passed + 1))
    echo "ok  : $2"
  else
    n_failed=$((n_failed + 1))
    echo "FAIL: $2"
  fi
}

# Tools: MinGW-w64 (C, and C++ in the posix thread model for llama.cpp),
# wine, cmake.
scripts/lib/cross-deps.sh >/dev/null || die "scripts/lib/cross-deps.sh failed"
if ! command -v x86_64-w64-mingw32-g++-posix >/dev/null || ! command -v cmake >/dev/null; then
  say "installing g++-mingw-w64-x86-64-posix and cmake with apt-get"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends g++-mingw-w64-x86-64-posix cmake >/dev/null ||
    die "please install g++-mingw-w64-x86-64-posix and cmake"
fi
# shellcheck source=scripts/lib/cross-env.sh
. scripts/lib/cross-env.sh

if [ -z "$cgram" ]; then
  cgram="${CGRAM_BUILD:-$root/build}/cross/x86_64-pc-windows-gnu/prefix"
  if [ ! -f "$cgram/lib/libcgram.a" ]; then
    cgram="${CGRAM_BUILD:-$root/build}/windows-cgram"
    say "cgram for Windows into $cgram"
    scripts/install.sh "$cgram" --target x86_64-pc-windows-gnu >"$cgram.log" 2>&1 ||
      { tail -n 30 "$cgram.log" >&2; die "scripts/install.sh --target x86_64-pc-windows-gnu failed"; }
  fi
fi
cgram="$(cd "$cgram" && pwd)"
[ -f "$cgram/lib/libcgram.a" ] && [ -f "$cgram/bin/cgram.dll" ] || die "no Windows cgram package in $cgram"

say "llama.cpp for Windows (scripts/lib/llama-build-windows.sh)"
llama_bin="$(scripts/lib/llama-build-windows.sh | tail -n 1)" || die "the Windows llama.cpp build failed"
llama_prefix="$(scripts/lib/llama-build-windows.sh --print prefix)"
llama_src="$(scripts/lib/llama-build-windows.sh --print src)"
vocab="$llama_src/models/ggml-vocab-llama-bpe.gguf"

work="${CGRAM_BUILD:-$root/build}/llama-windows"
rm -rf "$work"
mkdir -p "$work"
for d in proxy plain cmake; do cp -r "$llama_bin" "$work/$d"; done

say "the proxy: scripts/install-llama-dropin-windows.sh"
scripts/install-llama-dropin-windows.sh --cgram "$cgram" --include "$llama_prefix/include" \
  --work "$work/dropin" "$work/proxy" >"$work/install.log" 2>&1
result $? "scripts/install-llama-dropin-windows.sh: $(head -n 1 "$work/install.log")"

say "the proxy: CMake (adapters/llama/dropin/windows, MinGW toolchain file)"
{
  cmake -S adapters/llama/dropin/windows -B "$work/cmake-build" \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/mingw-w64-x86_64.cmake" \
    -DLLAMA_DLL="$work/cmake/llama.dll" -DCMAKE_PREFIX_PATH="$cgram;$llama_prefix" &&
    cmake --build "$work/cmake-build" && cmake --install "$work/cmake-build"
} >"$work/cmake.log" 2>&1
result $? "the CMake build and install of the proxy"
[ -f "$work/cmake/llama-cgram-original.dll" ] || cat "$work/cmake.log"

say "the test programs"
cflags=(-std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -DLLAMA_SHARED -I"$llama_prefix/include")
x86_64-w64-mingw32-gcc "${cflags[@]}" tests/windows/llama_dropin_test.c \
  "$llama_prefix/lib/libllama.dll.a" -static-libgcc -o "$work/llama_dropin_test.exe"
result $? "llama_dropin_test.exe builds against llama.cpp's llama.h and import library"
x86_64-w64-mingw32-gcc "${cflags[@]}" -Iadapters/llama -Idemo/llama -I"$cgram/include" \
  demo/llama/adapter_test.c adapters/llama/cgram_llama.c "$llama_prefix/lib/libllama.dll.a" \
  "$cgram/lib/libcgram.dll.a" -static-libgcc -o "$work/adapter_test.exe"
result $? "adapter_test.exe (the adapter compiled into the program) builds with -Werror"
for d in proxy plain cmake; do cp "$work/llama_dropin_test.exe" "$work/$d/"; done
cp "$work/adapter_test.exe" "$cgram/bin/cgram.dll" "$work/plain/"

# Wine as scripts/cross.sh sets it up: its prefix under the cross tools,
# and the bcryptprimitives.dll stand-in (wine 8 lacks the DLL that Rust's
# standard library imports; tests/windows/bcryptprimitives.c).
support="$work/wine-support"
mkdir -p "$support"
x86_64-w64-mingw32-gcc -shared -O2 -o "$support/bcryptprimitives.dll" \
  tests/windows/bcryptprimitives.c tests/windows/bcryptprimitives.def -ladvapi32 ||
  die "the bcryptprimitives stand-in does not build"
export WINEPREFIX="$CGRAM_CROSS_TOOLS/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
winepath_of() { printf 'Z:%s' "${1//\//\\}"; }
WINEPATH="$(winepath_of "$support")"
export WINEPATH
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  say "creating the wine prefix $WINEPREFIX (once)"
  wineboot --init >/dev/null 2>&1 || true
fi
# One wineserver for all the runs: started by each program and left to
# exit after it, it can be on its way out as the next program connects
# ("wine client error: recvmsg: Connection reset by peer", seen in CI).
# It stays up until 60 s after the last program.
wineserver -p60

run_test() { # folder mode what
  local log="$work/test-$1${2:+-${2#--}}.log"
  wine "$work/$1/llama_dropin_test.exe" "$(winepath_of "$vocab")" ${2:+"$2"} >"$log" 2>&1
  local rc=$?
  grep -E '^(FAIL|\[llama.cpp log\] cgram)' "$log" | sed 's/^/    /'
  result $rc "$3: $(tail -n 1 "$log")"
}
say "under wine: tests/windows/llama_dropin_test.c"
run_test proxy "" "the proxy serves llama.cpp's grammar entry points with cgram"
run_test proxy --off "the proxy with CGRAM_LLAMA=off: llama.cpp's own samplers"
run_test plain --plain "llama.cpp's own llama.dll (no proxy): the same masks"
run_test cmake "" "the proxy built and installed by CMake"
say "under wine: demo/llama/adapter_test.c (the adapter in the program)"
wine "$work/plain/adapter_test.exe" "$(winepath_of "$vocab")" >"$work/adapter_test.log" 2>&1
result $? "adapter_test: $(tail -n 1 "$work/adapter_test.log")"

if [ "$server" = 1 ]; then
  say "llama-server.exe under wine with the proxy"
  model="$(scripts/lib/llama-model.sh | tail -n 1)" || die "scripts/lib/llama-model.sh failed"
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  log="$work/llama-server.log"
  CGRAM_LLAMA_VERBOSE=1 wine "$work/proxy/llama-server.exe" -m "$(winepath_of "$model")" \
    --host 127.0.0.1 --port "$port" -t 2 -np 1 -c 2048 >"$log" 2>&1 &
  pid=$!
  trap 'kill "$pid" 2>/dev/null' EXIT
  up=1
  for _ in $(seq 1 120); do
    python3 scripts/lib/llama-server-healthy.py "$port" >/dev/null 2>&1 && { up=0; break; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  result $up "llama-server.exe is up (log: $log)"
  if [ $up = 0 ]; then
    python3 - "$port" >"$work/requests.log" 2>&1 <<'EOF'
import json, re, sys, urllib.error, urllib.request

port = sys.argv[1]
failed = 0


def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.load(e)
        except ValueError:
            return e.code, {}


def check(ok, what):
    global failed
    print(("ok  : " if ok else "FAIL: ") + what)
    failed += not ok


schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
          "population": {"type": "integer", "minimum": 0}},
          "required": ["city", "population"], "additionalProperties": False}
status, r = post({"prompt": "The largest city of Japan and its population, as JSON: ",
                  "n_predict": 80, "temperature": 0, "json_schema": schema})
print("    json_schema output:", repr(r.get("content")))
try:
    v = json.loads(r["content"])
    ok = (set(v) == {"city", "population"} and isinstance(v["city"], str) and len(v["city"]) <= 20
          and isinstance(v["population"], int) and v["population"] >= 0)
except (KeyError, ValueError):
    ok = False
check(status == 200 and ok and r.get("stop_type") == "eos", "a json_schema /completion: JSON of the schema, ended by the model")
status, r = post({"prompt": "Answer yes or no: is water wet? ", "n_predict": 10, "temperature": 0,
                  "grammar": 'root ::= ("yes" | "no") "."'})
print("    grammar output:", repr(r.get("content")))
check(status == 200 and r.get("content") in ("yes.", "no."), "a GBNF grammar /completion")
status, r = post({"prompt": "x", "n_predict": 5, "grammar": 'root ::= "a'})
check(status == 400, f"a bad grammar: HTTP {status}, {r.get('error', {}).get('message')}")
# A lazy grammar (the path of tool calls), triggered by a pattern.
prompt = ('Q: weather in Berlin?\nA: <call>{"city": "Berlin"}</call>\n'
          'Q: weather in Tokyo?\nA: <call>{"city": "Tokyo"}</call>\nQ: weather in Paris?\nA:')
status, r = post({"prompt": prompt, "n_predict": 40, "temperature": 0, "stop": ["\nQ:"],
                  "grammar": 'root ::= "<call>{\\"city\\": \\"" [A-Za-z ]+ "\\"}</call>"',
                  "grammar_lazy": True, "grammar_triggers": [{"type": 2, "value": "[\\s\\S]*?(<call>)"}]})
text = r.get("content", "")
print("    lazy output:", repr(text))
at = text.find("<call>")
check(status == 200 and at >= 0 and re.fullmatch(r'<call>\{"city": "[A-Za-z ]+"\}</call>', text[at:].rstrip()),
      "a lazy grammar with a trigger pattern: free text, then the grammar")
# A trigger pattern cgram refuses goes to llama.cpp's own sampler, whose
# std::regex throws: the C++ exception unwinds through the proxy's C
# frames to the server, which answers with an error and lives on.
status, r = post({"prompt": "x", "n_predict": 4, "grammar": 'root ::= "a"', "grammar_lazy": True,
                  "grammar_triggers": [{"type": 2, "value": "(unclosed"}]})
check(status >= 400, f"a trigger pattern std::regex rejects: HTTP {status} (an exception through the proxy)")
status, r = post({"prompt": "Answer yes or no: is fire cold? ", "n_predict": 10, "temperature": 0,
                  "grammar": 'root ::= ("yes" | "no") "."'})
check(status == 200 and r.get("content") in ("yes.", "no."), "the server still answers grammars")
sys.exit(1 if failed else 0)
EOF
    rc=$?
    sed 's/^/    /' "$work/requests.log"
    result $rc "llama-server.exe requests"
    grep -q 'llama.cpp grammar samplers run on cgram' "$log"
    result $? "the server's log: $(grep -m 1 -o 'cgram [0-9.]*: llama.cpp grammar samplers run on cgram' "$log")"
    kill -0 "$pid" 2>/dev/null
    result $? "the server is still up"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  trap - EXIT
fi

echo "$n_passed passed, $n_failed failed"
[ "$n_failed" = 0 ]
