#!/usr/bin/env bash
# cgram inside an unmodified llama-server, end to end, from a fresh machine:
#
#   scripts/llama-server-e2e.sh            # everything
#   scripts/llama-server-e2e.sh --quick    # fewer schemas and tools (CI)
#
#  1. builds llama.cpp (llama-server, llama-cli, shared libraries) from the
#     llama-cpp-python 0.3.36 sdist (scripts/lib/llama-build.sh; cached) and
#     fetches Gemma 3 270M (scripts/lib/llama-model.sh; cached)
#  2. installs the cgram drop-in for that llama.cpp
#     (scripts/install-llama-dropin.sh: libcgram-llama.so and the
#     cgram-llama launcher, into build/llama-dropin)
#  3. starts llama-server under cgram-llama on 127.0.0.1 with the Qwen 2.5
#     chat template (tool calls in <tool_call>...</tool_call>), 4 slots
#  4. drives it with the `openai` Python client (demo/server/e2e.py):
#     response_format for real schemas, a raw grammar, tool calls with
#     tool_choice required and auto (the lazy grammar triggered by text the
#     model writes), lazy grammars with each kind of trigger, concurrent and
#     streamed requests, bad grammars, schemas and patterns; every output
#     validated; the server log must show cgram active and triggers fired
#  5. runs llama-cli with --grammar and llama-completion with --json-schema
#     under cgram-llama and checks their output
#  6. stops the server
#
# Exit status 0 when every check passed. Logs in build/llama-server/.
# Environment: CGRAM_BUILD, CGRAM_LLAMA_CACHE (see llama-demo.sh);
# CGRAM_LLAMA_CPP_PYTHON=V runs another llama.cpp (scripts/lib/llama-build.sh)
# and CGRAM_LLAMA_LAUNCHER=PATH a cgram-llama launcher already installed
# (one drop-in binary on several llama.cpp versions: scripts/llama-matrix.sh);
# --server-only leaves out step 5 (llama-cli's options change across
# versions).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
quick=()
server_only=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=(--quick) ;;
    --server-only) server_only=1 ;;
    *) echo "usage: scripts/llama-server-e2e.sh [--quick] [--server-only]" >&2; exit 2 ;;
  esac
done
build="${CGRAM_BUILD:-$root/build}"
work="$build/llama-server"
mkdir -p "$work"
step() { printf '\n==> %s\n' "$*"; }
start=$SECONDS

step "tools, Python packages"
scripts/lib/install-deps.sh
for pkg in openai jsonschema; do
  python3 -c "import $pkg" 2>/dev/null && continue
  echo "installing the Python package $pkg"
  user=--user
  if python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then user=; fi
  python3 -m pip install $user --quiet --disable-pip-version-check "$pkg" 2>/dev/null ||
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install $user --quiet --disable-pip-version-check "$pkg"
done

step "llama.cpp and the model"
scripts/lib/llama-build.sh
llama_prefix="$(scripts/lib/llama-build.sh --print prefix)"
llama_bin="$(scripts/lib/llama-build.sh --print bin)"
llama_src="$(scripts/lib/llama-build.sh --print src)"
model="$(scripts/lib/llama-model.sh | tail -n 1)"

if [ -n "${CGRAM_LLAMA_LAUNCHER:-}" ]; then
  launcher="$CGRAM_LLAMA_LAUNCHER"
  step "the drop-in installed before: $launcher"
else
  step "install the drop-in into $build/llama-dropin"
  scripts/install-llama-dropin.sh "$llama_prefix" "$build/llama-dropin"
  launcher="$build/llama-dropin/bin/cgram-llama"
fi

# A free port on 127.0.0.1.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$work/server.log"
template="$llama_src/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"

step "llama-server on 127.0.0.1:$port with cgram (log: $log)"
CGRAM_LLAMA_VERBOSE=1 CGRAM_LLAMA_STATS=1 "$launcher" "$llama_bin/llama-server" \
  -m "$model" --host 127.0.0.1 --port "$port" -t 2 -np 4 -c 16384 \
  --jinja --chat-template-file "$template" --log-verbosity 4 >"$log" 2>&1 &
server=$!
stop_server() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
trap stop_server EXIT
for _ in $(seq 1 120); do
  if scripts/lib/llama-server-healthy.py "$port"; then break; fi
  if ! kill -0 "$server" 2>/dev/null; then
    tail -n 40 "$log" >&2
    echo "llama-server-e2e.sh: the server exited" >&2
    exit 1
  fi
  sleep 1
done
scripts/lib/llama-server-healthy.py "$port" || { tail -n 40 "$log" >&2; exit 1; }

step "the openai client against the server (demo/server/e2e.py)"
status=0
python3 demo/server/e2e.py --base-url "http://127.0.0.1:$port" --log "$log" "${quick[@]}" || status=1
kill -0 "$server" 2>/dev/null || { echo "llama-server-e2e.sh: the server died" >&2; status=1; }
stop_server
trap - EXIT

if [ "$server_only" = 1 ]; then
  step "llama-server end to end done in $((SECONDS - start)) s: $([ $status = 0 ] && echo passed || echo FAILED)"
  exit $status
fi

step "llama-cli --grammar and llama-completion --json-schema under cgram-llama"
# llama-cli is chat-only: one turn (-st) with the same template; it shows
# warnings (cgram's line) from --log-verbosity 3 on. The reply is the text
# between the "> prompt" line and the "[ Prompt: ... ]" statistics.
cli() {
  "$launcher" "$llama_bin/llama-cli" -m "$model" -t 2 -st --chat-template-file "$template" \
    --temp 0 -n 48 --log-verbosity 3 "$@" </dev/null 2>"$work/cli.log" |
    python3 -c 'import sys
t = sys.stdin.read()
t = t[t.index("\n> ") + 3:]
print(t[t.index("\n") + 1:t.index("[ Prompt:")].strip())'
}
out="$(cli -p "What are the three primary colors?" \
  --grammar 'root ::= "Red, blue and yellow." | "Red, green and blue."' || true)"
echo "reply: $out"
if grep -q "grammar samplers run on cgram" "$work/cli.log" &&
  { [ "$out" = "Red, blue and yellow." ] || [ "$out" = "Red, green and blue." ]; }; then
  echo "ok  : llama-cli --grammar ran on cgram"
else
  echo "FAIL: llama-cli --grammar (log: $work/cli.log)"; status=1
fi
# --json-schema on llama-completion (plain text): llama-cli feeds the chat
# template's generation prompt to an output-format grammar first, which
# llama.cpp 0c1e570's own sampler refuses ("Failed to initialize samplers").
schema='{"type": "object", "properties": {"color": {"type": "string", "enum": ["red", "green", "blue"]}}, "required": ["color"], "additionalProperties": false}'
out="$("$launcher" "$llama_bin/llama-completion" -m "$model" -t 2 -no-cnv --temp 0 -n 48 \
  --log-verbosity 3 -p "My favourite color, as JSON:" --json-schema "$schema" </dev/null \
  2>"$work/completion.log" | sed -e 's/^My favourite color, as JSON://' -e 's/ \[end of text\]$//' | head -n 1 || true)"
echo "output: $out"
if grep -q "grammar samplers run on cgram" "$work/completion.log" &&
  python3 -c 'import json, sys, jsonschema; jsonschema.validate(json.loads(sys.argv[2]), json.loads(sys.argv[1]))' \
    "$schema" "$out"; then
  echo "ok  : llama-completion --json-schema ran on cgram, the output is valid"
else
  echo "FAIL: llama-completion --json-schema (log: $work/completion.log)"; status=1
fi

step "llama-server end to end done in $((SECONDS - start)) s: $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
