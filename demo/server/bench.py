#!/usr/bin/env python3
"""Tool calls in llama-server: llama.cpp's own grammar sampler against cgram.

scripts/llama-server-bench.sh starts the same llama-server binary once per
engine (CGRAM_LLAMA=off for llama.cpp's own sampler; both with
CGRAM_LLAMA_STATS=1, so that the drop-in times every grammar sampler, its
creation and every apply and accept, the same way for both) and runs this
against it:

    python3 demo/server/bench.py --base-url URL --log SERVER.LOG --engine NAME \
        --tools N [--requests R] --out results.jsonl

For a catalog of the first N tools of demo/server/tools.json it sends, on
one slot, one warm-up request (which fills the prompt cache: a 300-tool
prompt is ~48k tokens), then R rounds of:

  - tool_choice "required" (a forced call: the grammar from the start),
  - tool_choice "auto" (llama.cpp's lazy grammar: free text until
    <tool_call>, which a few-shot history makes the model write),
  - each one's twin without any grammar: the same request with
    tool_choice "none" (the same prompt, no grammar sampler) and the same
    number of tokens to generate (ignore_eos), for tokens/s without a
    grammar. (A /completion twin left out the chat endpoint's own
    per-token work, 2-5% at 300 tools, and counted it against the
    grammar.)

Requests do not stream: a streamed tool-call request makes the server
parse the partial message after every token, with a parser that grows
with the catalog (2-4% of the generation time at 300 tools, with either
engine, and none in the tool_choice "none" twin), which is the server's
work, not the grammar's. The grammar's part of the first token is
measured in the drop-in (creation and the first apply). Grammar time (the
sampler thread's CPU time, and wall time) comes from the drop-in's
"cgram-stats:" log lines (a sampler's line appears when the slot frees it,
at the next request: lines are matched to requests in order). Appends one
JSON line per request to --out.
"""
import argparse
import json
import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402

STATS = re.compile(r"cgram-stats: engine=(\S+) clone=(\d) init_us=([\d.]+) apply_n=(\d+) "
                   r"apply_us=([\d.]+) accept_n=(\d+) accept_us=([\d.]+) triggered=(-?\d) "
                   r"cpu: init_us=([\d.]+) apply_us=([\d.]+) accept_us=([\d.]+) first_apply_us=([\d.]+)")


def post_timed(base, path, body):
    """A chat request, not streamed; returns (None: no first-token time,
    seconds in all, the timings, the tool calls)."""
    t0 = time.perf_counter()
    r = post(base, path, body)
    total = time.perf_counter() - t0
    calls = [c for ch in r.get("choices", []) for c in (ch.get("message", {}).get("tool_calls") or [])]
    return None, total, r.get("timings", {}), calls


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        return json.loads(r.read())


def stats_lines(log):
    with open(log, encoding="utf-8", errors="replace") as f:
        return [m.groups() for m in STATS.finditer(f.read())]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--engine", required=True)
    ap.add_argument("--tools", type=int, required=True)
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    base = args.base_url.rstrip("/")
    catalog = e2e.load_tools(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools.json"), 300)
    tools = catalog[: args.tools]
    called = [catalog[1], catalog[3], catalog[5]]  # Glaive tools with required strings

    def chat_body(choice, k):
        return {"messages": e2e.few_shot(called[k % len(called)]), "tools": tools, "tool_choice": choice,
                "parallel_tool_calls": False, "max_tokens": args.max_tokens, "temperature": 0}

    # Warm-up: fills the prompt cache for this catalog (and the grammar
    # caches of either engine, as a server in use has them).
    post(base, "/v1/chat/completions", dict(chat_body("required", 0), max_tokens=2))
    records = []
    for k in range(args.requests):
        for choice in ["required", "auto"]:
            body = chat_body(choice, k)
            ttft, total, tim, calls = post_timed(base, "/v1/chat/completions", body)
            rec = {"engine": args.engine, "tools": args.tools, "choice": choice, "round": k,
                   "grammar": True, "ttft_s": ttft, "total_s": total, "timings": tim,
                   "called": bool(calls)}
            records.append(rec)
            # The twin without a grammar: the same request with tool_choice
            # "none" (the same prompt, which /apply-template confirms, and
            # no grammar sampler; the same chat endpoint, so the server's
            # per-token chat work is in both), as many tokens.
            prompt = post(base, "/apply-template", {"messages": body["messages"], "tools": tools,
                                                    "tool_choice": choice})["prompt"]
            twin_prompt = post(base, "/apply-template", {"messages": body["messages"], "tools": tools,
                                                         "tool_choice": "none"})["prompt"]
            if twin_prompt != prompt:
                sys.exit("bench.py: tool_choice none changes the prompt; no twin")
            n = tim.get("predicted_n", args.max_tokens)
            ttft, total, tim2, _ = post_timed(base, "/v1/chat/completions", dict(
                body, tool_choice="none", max_tokens=n, ignore_eos=True))
            records.append({"engine": args.engine, "tools": args.tools, "choice": choice, "round": k,
                            "grammar": False, "ttft_s": ttft, "total_s": total, "timings": tim2})
    # One more request frees the last grammar sampler (its stats line).
    post(base, "/completion", {"prompt": "x", "n_predict": 1})
    lines = [s for s in stats_lines(args.log) if s[1] == "0"]
    grammar_records = [r for r in records if r["grammar"]]
    # The last len(grammar_records) non-clone lines are this run's
    # measured samplers, in order.
    mine = lines[-len(grammar_records):] if len(lines) >= len(grammar_records) else []
    for r, s in zip(grammar_records, mine):
        r["engine_logged"] = s[0]
        r["init_us"] = float(s[2])
        r["apply_n"], r["apply_us"] = int(s[3]), float(s[4])
        r["accept_n"], r["accept_us"] = int(s[5]), float(s[6])
        r["grammar_wall_us"] = r["init_us"] + r["apply_us"] + r["accept_us"]
        r["triggered"] = int(s[7])
        r["init_cpu_us"], r["apply_cpu_us"], r["accept_cpu_us"] = float(s[8]), float(s[9]), float(s[10])
        r["grammar_us"] = r["init_cpu_us"] + r["apply_cpu_us"] + r["accept_cpu_us"]
        # What the grammar adds before the first token: creation and the
        # first apply (the first mask).
        r["first_token_us"] = r["init_cpu_us"] + float(s[11])
    with open(args.out, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    for r in records:
        t = r["timings"]
        print(f"{r['engine']:9} tools={r['tools']:3} {r['choice']:8} grammar={'yes' if r['grammar'] else 'no '} "
              f"ttft={r['ttft_s'] or 0:.3f}s tok/s={t.get('predicted_per_second', 0):6.2f} "
              f"n={t.get('predicted_n', 0):3} "
              + (f"grammar_ms cpu={r.get('grammar_us', 0) / 1e3:8.2f} wall={r.get('grammar_wall_us', 0) / 1e3:8.2f} "
                 f"(cpu: init {r.get('init_cpu_us', 0) / 1e3:.2f}, {r.get('apply_n', 0)} apply "
                 f"{r.get('apply_cpu_us', 0) / 1e3:.2f}, {r.get('accept_n', 0)} accept "
                 f"{r.get('accept_cpu_us', 0) / 1e3:.2f}) triggered={r.get('triggered')}" if r["grammar"] else ""),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
