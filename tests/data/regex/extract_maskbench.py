#!/usr/bin/env python3
"""Collects the regular expressions of the MaskBench schemas (`pattern` and
`patternProperties` keys) with the strings their instances put there, for
gen.js. Usage: extract_maskbench.py [MASKBENCH_DIR] > maskbench_patterns.json
(MASKBENCH_DIR defaults to $CGRAM_MASKBENCH, the full maskbench-dev folder;
maskbench_patterns.json was made from it).

Strings are found by validating every instance with `jsonschema` while a
hook records what reaches each `pattern` / `patternProperties` keyword.
"""
import json
import os
import sys

import jsonschema
from jsonschema import validators

DIR = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CGRAM_MASKBENCH", "")
if not os.path.isdir(DIR):
    sys.exit("extract_maskbench.py: name the MaskBench folder (argument or CGRAM_MASKBENCH)")
MAX_STRINGS = 12
MAX_LEN = 300

seen = {}  # pattern -> list of strings


def note(pattern, s):
    lst = seen.setdefault(pattern, [])
    if isinstance(s, str) and len(s) <= MAX_LEN and s not in lst and len(lst) < MAX_STRINGS:
        lst.append(s)


def walk(schema):
    """Every pattern, even where no instance reaches it."""
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in ("examples", "default", "const", "enum", "example"):
                continue
            if k == "pattern" and isinstance(v, str):
                seen.setdefault(v, [])
            if k == "patternProperties" and isinstance(v, dict):
                for p in v:
                    seen.setdefault(p, [])
            walk(v)
    elif isinstance(schema, list):
        for x in schema:
            walk(x)


def pattern_hook(validator, pattern, instance, schema):
    if isinstance(pattern, str):
        note(pattern, instance)
    return iter(())


def pattern_props_hook(validator, pp, instance, schema):
    if isinstance(pp, dict) and isinstance(instance, dict):
        for p in pp:
            for k in instance:
                note(p, k)
    return iter(())


for name in sorted(os.listdir(DIR)):
    try:
        with open(os.path.join(DIR, name)) as f:
            d = json.load(f)
    except Exception:
        continue
    schema = d.get("schema")
    walk(schema)
    try:
        base = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls = validators.extend(base, {"pattern": pattern_hook, "patternProperties": pattern_props_hook})
        v = cls(schema)
    except Exception:
        continue
    for t in d.get("tests", []):
        try:
            for _ in v.iter_errors(t["data"]):
                pass
        except Exception:
            pass

import random
import re

try:
    from re import _parser as sre_parse
    from re import _constants as sre_c
except ImportError:  # Python < 3.11
    import sre_parse
    import sre_constants as sre_c

CATEGORY_CHARS = {
    sre_c.CATEGORY_DIGIT: "0123456789",
    sre_c.CATEGORY_NOT_DIGIT: "aZ_-. é",
    sre_c.CATEGORY_WORD: "azAZ09_",
    sre_c.CATEGORY_NOT_WORD: " -.@/é",
    sre_c.CATEGORY_SPACE: " \t\n",
    sre_c.CATEGORY_NOT_SPACE: "aZ09-.@",
}


def gen(tree, rng, groups):
    out = []
    for op, av in tree:
        if op is sre_c.LITERAL:
            out.append(chr(av))
        elif op is sre_c.NOT_LITERAL:
            out.append(rng.choice([c for c in "aZ0-. x" if ord(c) != av]))
        elif op is sre_c.ANY:
            out.append(rng.choice("aZ0-. x/"))
        elif op is sre_c.IN:
            out.append(gen_in(av, rng))
        elif op is sre_c.BRANCH:
            out.append(gen(rng.choice(av[1]), rng, groups))
        elif op is sre_c.SUBPATTERN:
            s = gen(av[-1], rng, groups)
            if av[0] is not None:
                groups[av[0]] = s
            out.append(s)
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            hi = lo + 3 if hi is sre_c.MAXREPEAT else min(hi, lo + 3)
            n = rng.randint(lo, max(lo, hi))
            out.append("".join(gen(sub, rng, groups) for _ in range(n)))
        elif op is sre_c.GROUPREF:
            out.append(groups.get(av, ""))
        elif op is sre_c.CATEGORY:
            out.append(rng.choice(CATEGORY_CHARS.get(av, "a")))
        # anchors and lookarounds: ignored (node decides the truth)
    return "".join(out)


def gen_in(items, rng):
    neg = items and items[0][0] is sre_c.NEGATE
    if neg:
        return rng.choice("aZ0-. x/é")
    op, av = rng.choice(items)
    if op is sre_c.LITERAL:
        return chr(av)
    if op is sre_c.RANGE:
        return chr(rng.randint(av[0], av[1]))
    if op is sre_c.CATEGORY:
        return rng.choice(CATEGORY_CHARS.get(av, "a"))
    return "a"


def samples(pattern, n=6):
    p = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    try:
        tree = sre_parse.parse(p)
    except Exception:
        return []
    rng = random.Random(pattern)
    out = []
    for _ in range(n * 3):
        try:
            s = gen(tree, rng, {})
        except Exception:
            return out
        if len(s) <= MAX_LEN and s not in out:
            out.append(s)
        if len(out) >= n:
            break
    return out


for p in list(seen):
    for s in samples(p):
        lst = seen[p]
        if s not in lst:
            lst.append(s)

out = [{"pattern": p, "strings": s} for p, s in sorted(seen.items())]
json.dump(out, sys.stdout, ensure_ascii=False, indent=0)
sys.stdout.write("\n")
