#!/usr/bin/env python3
"""Mask and compile times of two anchorbench result files, over the schemas
both engines pass.

`anchorbench summarize` reports each engine over every schema it compiled,
so an engine that refuses the hard schemas looks faster than one that
compiles them. This prints the same percentiles over the schemas that
both files mark "pass", for a like-for-like comparison:

    scripts/anchorbench_both_pass.py llg.jsonl cgram.jsonl

Percentiles are nearest-rank over every mask (TBM, from `mask_ns`) and over
every schema (TTFM, from `ttfm_us`), in microseconds.
"""

import json
import sys


def load(path):
    with open(path) as f:
        return {row["file"]: row for row in map(json.loads, f)}


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: anchorbench_both_pass.py A.jsonl B.jsonl")
    runs = [load(path) for path in sys.argv[1:]]
    both = [
        name
        for name, row in runs[0].items()
        if row["status"] == "pass"
        and runs[1].get(name, {}).get("status") == "pass"
    ]
    print(f"{len(both)} schemas pass in both files")
    print("| metric | " + " | ".join(sys.argv[1:]) + " |")
    print("|---|" + "---:|" * len(runs))
    masks = [[ns / 1000 for name in both for ns in run[name]["mask_ns"]] for run in runs]
    ttfms = [[run[name]["ttfm_us"] for name in both] for run in runs]
    for label, samples in (("TBM", masks), ("TTFM", ttfms)):
        for q, name in ((0.5, "p50"), (0.99, "p99"), (0.999, "p99.9"), (1.0, "max")):
            cells = [f"{percentile(s, q):,.1f}" for s in samples]
            print(f"| {label} {name} (us) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
