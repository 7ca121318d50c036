#!/usr/bin/env python3
"""Seeds of the fuzz target json_schema_deadline: schemas with recipes.

    python3 fuzz/tools/recipe_seeds.py OUT_DIR [--from DIR] [--count N] [--seed S]

Takes N schemas of the json_schema_compile seed corpus (--from, default
fuzz/corpus/json_schema_compile), picked by a seeded shuffle, and writes
each as `SCHEMA \\0 RECIPE` with a random recipe of 1 to 8 edits (see
fuzz/schema_mutations.rs: a flag byte, then (op, a, b) triples), plus the
recipes of the family issue 30 names: a `oneOf` of 2 to 25 object types
sharing constrained properties (op 8) inside an array of an object, default
and lenient. `scripts/fuzz.sh` starts from these and what it found before.

The committed corpus (fuzz/corpus/json_schema_deadline) is this output
without the seeds that take over 400 ms in the release replay
(`cargo test --release --test fuzz_regressions corpus_json_schema_deadline
-- --nocapture` lists them as slow): `tests/fuzz_regressions.rs` replays
the corpus within 1 s of CPU time per input, and slow compiles are the
subject of the benchmarks, not of that test.
"""

import argparse
import os
import random

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--from", dest="src", default=os.path.join(REPO, "fuzz/corpus/json_schema_compile"))
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=30)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    names = sorted(os.listdir(args.src))
    rng.shuffle(names)
    os.makedirs(args.out, exist_ok=True)
    written = 0
    for name in names[: args.count]:
        text = open(os.path.join(args.src, name), "rb").read()
        if b"\0" in text:
            continue
        edits = bytes(rng.randrange(256) for _ in range(3 * rng.randint(1, 8)))
        with open(os.path.join(args.out, f"edited-{name[:16]}"), "wb") as f:
            f.write(text + b"\0" + bytes([rng.randrange(4)]) + edits)
        written += 1
    # The family: {"type": "object", "properties": {"list": {"type":
    # "array", "items": X}}} with X replaced by k shared-property objects.
    base = b'{"type": "object", "properties": {"list": {"type": "array", "items": {}}}}'
    for k in (2, 6, 12, 20, 25):
        for flags in (0, 1):
            recipe = bytes([flags, 8, 2, k - 2])
            with open(os.path.join(args.out, f"shared-objects-{k}-flags{flags}"), "wb") as f:
                f.write(base + b"\0" + recipe)
            written += 1
    print(f"{written} seeds in {args.out}")


if __name__ == "__main__":
    main()
