#!/usr/bin/env python3
"""Mask and compile times of anchorbench result files, over the schemas
every file passes.

`anchorbench summarize` reports each engine over every schema it compiled,
so an engine that refuses the hard schemas looks faster than one that
compiles them. This prints the same percentiles over the schemas that
every file marks "pass", for a like-for-like comparison:

    scripts/anchorbench_both_pass.py llg.jsonl cgram.jsonl

Each column may be several runs of one engine, comma-separated
(`llg1.jsonl,llg2.jsonl,llg3.jsonl`): a schema's TTFM is then its median
over the runs, and each mask's time the median of that mask over the
runs. On a shared machine one run puts a few schemas out of line (another
process took the core), and the 99.9th percentile of 4,671 schemas is the
fifth slowest: medians of three runs keep those out of the comparison.

Percentiles are nearest-rank over every mask (TBM, from `mask_ns`) and over
every schema (TTFM, from `ttfm_us`), in microseconds; `--cpu` reads the
thread CPU times instead (`mask_cpu_ns`, `ttfm_cpu_us`: runs made with
`--cpu-clock`; a schema whose masks anchorbench did not time by CPU keeps
their wall-clock times).
"""

import json
import statistics
import sys


def load(path):
    with open(path) as f:
        return {row["file"]: row for row in map(json.loads, f)}


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    args = sys.argv[1:]
    cpu = "--cpu" in args
    columns = [a for a in args if a != "--cpu"]
    if len(columns) < 2:
        sys.exit("usage: anchorbench_both_pass.py [--cpu] A.jsonl[,A2.jsonl...] B.jsonl[,...]")
    mask_key, ttfm_key = ("mask_cpu_ns", "ttfm_cpu_us") if cpu else ("mask_ns", "ttfm_us")
    runs = [[load(path) for path in column.split(",")] for column in columns]
    every = [run for column in runs for run in column]
    both = [
        name
        for name in every[0]
        if all(run.get(name, {}).get("status") == "pass" for run in every)
    ]
    print(f"{len(both)} schemas pass in every file")
    print("| metric | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(runs))
    masks = [
        [
            statistics.median(times) / 1000
            for name in both
            for times in zip(*(run[name].get(mask_key) or run[name]["mask_ns"] for run in column))
        ]
        for column in runs
    ]
    ttfms = [
        [statistics.median(run[name][ttfm_key] for run in column) for name in both]
        for column in runs
    ]
    for label, samples in (("TBM", masks), ("TTFM", ttfms)):
        for q, name in ((0.5, "p50"), (0.99, "p99"), (0.999, "p99.9"), (1.0, "max")):
            cells = [f"{percentile(s, q):,.1f}" for s in samples]
            print(f"| {label} {name} (us) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
