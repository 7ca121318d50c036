#!/usr/bin/env python3
"""The table of scripts/llama-server-bench.sh from its results.jsonl.

    python3 demo/server/bench_table.py build/llama-server-bench/results.jsonl

Per catalog size, tool_choice and engine (medians over the requests):
grammar time per request (sampler creation + every apply + every accept,
timed in the drop-in: the thread's CPU time, and wall time), the CPU time
as a share of the request's generation time, what of it comes before the
first token (creation and the first apply: the grammar's part of the time
to the first token), and tokens/s with the grammar and of the same request
without one (its twin, run right after it); the ratio is the median of the
rounds' ratios (each pair ran side by side; rounds vary by up to 10%).
Then, per catalog size and tool_choice, llama.cpp's grammar time over
cgram's.
"""
import json
import statistics
import sys
from collections import defaultdict


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def main():
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
    groups = defaultdict(lambda: {"g": [], "n": []})
    for r in rows:
        groups[(r["tools"], r["choice"], r["engine"])]["g" if r["grammar"] else "n"].append(r)
    print("| tools | tool_choice | engine | grammar ms / request (CPU) | (wall) | share of generation | "
          "grammar ms before the first token | tok/s with grammar | tok/s without | ratio | calls made |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    per = {}
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2] != "llama.cpp")):
        tools, choice, engine = key
        g, n = groups[key]["g"], groups[key]["n"]
        gms = med([r.get("grammar_us", 0) / 1e3 for r in g])
        wall = med([r.get("grammar_wall_us", 0) / 1e3 for r in g])
        gen_ms = med([r["timings"].get("predicted_ms") for r in g])
        share = gms / gen_ms if gen_ms else float("nan")
        tps_g = med([r["timings"].get("predicted_per_second") for r in g])
        tps_n = med([r["timings"].get("predicted_per_second") for r in n])
        twin = {r["round"]: r["timings"].get("predicted_per_second") for r in n}
        ratio = med([r["timings"]["predicted_per_second"] / twin[r["round"]] for r in g
                     if r["timings"].get("predicted_per_second") and twin.get(r["round"])])
        first = med([r.get("first_token_us", 0) / 1e3 for r in g])
        calls = sum(1 for r in g if r.get("called"))
        per[key] = gms
        print(f"| {tools} | {choice} | {engine} | {gms:.2f} | {wall:.2f} | {share * 100:.2f}% | {first:.2f} | "
              f"{tps_g:.2f} | {tps_n:.2f} | {ratio:.3f} | {calls}/{len(g)} |")
    print()
    print("| tools | tool_choice | llama.cpp grammar ms | cgram grammar ms | llama.cpp / cgram |")
    print("|---|---|---|---|---|")
    for (tools, choice, engine), gms in sorted(per.items()):
        if engine != "cgram" or (tools, choice, "llama.cpp") not in per:
            continue
        lms = per[(tools, choice, "llama.cpp")]
        print(f"| {tools} | {choice} | {lms:.2f} | {gms:.2f} | {lms / gms:.1f}x |")


if __name__ == "__main__":
    main()
