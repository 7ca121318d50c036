#!/usr/bin/env bash
# Tool calls in an unmodified llama-server: llama.cpp's own grammar sampler
# against cgram (the drop-in), same binary, same requests, for catalogs of
# 1, 30 and 300 tools (demo/server/tools.json: BFCL and Glaive schemas).
#
#   scripts/llama-server-bench.sh [--tools "1 30 300"] [--requests 3] [--rounds 1]
#
# For each round, catalog size and engine (llama.cpp first, then cgram) it
# starts llama-server (Gemma 3 270M, 2 threads, one slot, 64k context: a
# 300-tool prompt is ~48k tokens, past the model's 32k, so
# --override-kv gemma3.context_length=int:65536 lifts the cap for timing),
# runs demo/server/bench.py and stops it. Every grammar sampler is timed
# inside the drop-in (CGRAM_LLAMA_STATS=1; with CGRAM_LLAMA=off it wraps
# llama.cpp's own sampler in the same timer). Results go to
# build/llama-server-bench/results.jsonl and a table to
# build/llama-server-bench/table.md (demo/server/bench_table.py).
# Takes about 20 minutes for the default sizes (the 48k-token prompt is
# processed once per server, ~5 minutes on 2 cores).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
sizes="1 30 300"
requests=3
rounds=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tools) sizes="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    *) echo "usage: scripts/llama-server-bench.sh [--tools \"1 30 300\"] [--requests N] [--rounds N]" >&2; exit 2 ;;
  esac
done
build="${CGRAM_BUILD:-$root/build}"
work="$build/llama-server-bench"
mkdir -p "$work"
scripts/lib/llama-build.sh >/dev/null
llama_prefix="$(scripts/lib/llama-build.sh --print prefix)"
llama_bin="$(scripts/lib/llama-build.sh --print bin)"
llama_src="$(scripts/lib/llama-build.sh --print src)"
model="$(scripts/lib/llama-model.sh | tail -n 1)"
scripts/install-llama-dropin.sh "$llama_prefix" "$build/llama-dropin" >/dev/null
launcher="$build/llama-dropin/bin/cgram-llama"
template="$llama_src/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
results="$work/results.jsonl"
rm -f "$results"

for round in $(seq 1 "$rounds"); do
  for n in $sizes; do
    for engine in llama.cpp cgram; do
      port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
      log="$work/server-$engine-$n-$round.log"
      off=on; [ "$engine" = llama.cpp ] && off=off
      echo "==> round $round, $n tools, $engine (log $log)"
      CGRAM_LLAMA="$off" CGRAM_LLAMA_STATS=1 "$launcher" "$llama_bin/llama-server" -m "$model" \
        --host 127.0.0.1 --port "$port" -t 2 -np 1 -c 65536 \
        --override-kv gemma3.context_length=int:65536 \
        --jinja --chat-template-file "$template" --log-verbosity 4 >"$log" 2>&1 &
      server=$!
      for _ in $(seq 1 120); do
        scripts/lib/llama-server-healthy.py "$port" && break
        sleep 1
      done
      python3 demo/server/bench.py --base-url "http://127.0.0.1:$port" --log "$log" \
        --engine "$engine" --tools "$n" --requests "$requests" --out "$results" || true
      kill "$server"; wait "$server" 2>/dev/null || true
    done
  done
done
python3 demo/server/bench_table.py "$results" | tee "$work/table.md"
