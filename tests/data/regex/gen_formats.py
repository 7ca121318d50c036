#!/usr/bin/env python3
"""Test data for cgram's JSON Schema formats (tests/regex_ecma.rs).

Writes formats.json: a list of {format, data, valid, src} for the string
instances of the JSON Schema Test Suite's optional/format tests (drafts 7
and 2020-12), and for the strings MaskBench instances put under a `format`:
- from a valid instance: must be accepted;
- from an invalid instance whose only errors are `format` errors (with
  Python jsonschema's FormatChecker) on this very string: must be rejected.

Usage: gen_formats.py [SUITE_TESTS_DIR] [MASKBENCH_DIR] > formats.json
(defaults: the vendored ../json-schema-test-suite/tests and $CGRAM_MASKBENCH,
the full maskbench-dev folder formats.json was made from).
"""
import json
import os
import sys

import jsonschema
from jsonschema import validators

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "json-schema-test-suite", "tests")
MB = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("CGRAM_MASKBENCH", "")
if not os.path.isdir(MB):
    sys.exit("gen_formats.py: name the MaskBench folder (argument or CGRAM_MASKBENCH)")

FORMATS = {
    "date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6",
    "uri", "uri-reference", "iri", "iri-reference", "uuid", "json-pointer",
    "relative-json-pointer", "uri-template",
}

out = []
seen = set()


def add(fmt, data, valid, src):
    key = (fmt, data, valid)
    if key in seen:
        return
    seen.add(key)
    out.append({"format": fmt, "data": data, "valid": valid, "src": src})


for draft in ("draft7", "draft2020-12"):
    d = os.path.join(SUITE, draft, "optional", "format")
    for name in sorted(os.listdir(d)):
        fmt = name[: -len(".json")]
        if fmt not in FORMATS:
            continue
        for group in json.load(open(os.path.join(d, name))):
            for t in group["tests"]:
                if isinstance(t["data"], str):
                    add(fmt, t["data"], t["valid"], "suite:" + draft)

found = []  # (format, value)


def format_hook(validator, fmt, instance, schema):
    if isinstance(fmt, str) and fmt in FORMATS and isinstance(instance, str):
        found.append((fmt, instance))
    return iter(())


checker = jsonschema.FormatChecker()
for name in sorted(os.listdir(MB)):
    try:
        with open(os.path.join(MB, name)) as f:
            doc = json.load(f)
    except Exception:
        continue
    schema = doc["schema"]
    try:
        base = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        hooked = validators.extend(base, {"format": format_hook})(schema)
        strict = base(schema, format_checker=checker)
    except Exception:
        continue
    for t in doc["tests"]:
        found.clear()
        try:
            for _ in hooked.iter_errors(t["data"]):
                pass
            errors = list(strict.iter_errors(t["data"]))
        except Exception:
            continue
        if t["valid"]:
            for fmt, v in found:
                add(fmt, v, True, "maskbench")
        elif errors and all(e.validator == "format" for e in errors):
            bad = {(e.validator_value, e.instance) for e in errors}
            for fmt, v in found:
                if (fmt, v) in bad:
                    add(fmt, v, False, "maskbench")

json.dump(out, sys.stdout, ensure_ascii=False, indent=0)
sys.stdout.write("\n")
