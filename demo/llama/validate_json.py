#!/usr/bin/env python3
"""Validates a generated JSON text against its JSON Schema with the Python
`jsonschema` package (formats checked too: the schemas' date, email, ipv4
and uuid formats must all be checkable, or the check fails).

    validate_json.py SCHEMA.json OUTPUT.json

Prints the verdict; exit status 0 when the output is valid.
"""
import json
import sys

import jsonschema


def main() -> int:
    schema_path, output_path = sys.argv[1:3]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    with open(output_path, encoding="utf-8") as f:
        text = f.read()
    try:
        instance = json.loads(text)
    except json.JSONDecodeError as e:
        print(f"{output_path}: not JSON: {e}")
        return 1

    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    checker = cls.FORMAT_CHECKER
    used = set()

    def collect(node):
        if isinstance(node, dict):
            if isinstance(node.get("format"), str):
                used.add(node["format"])
            for v in node.values():
                collect(v)
        elif isinstance(node, list):
            for v in node:
                collect(v)

    collect(schema)
    unchecked = sorted(f for f in used if f not in checker.checkers)
    if unchecked:
        print(f"{schema_path}: jsonschema cannot check the formats {unchecked}")
        return 1

    errors = sorted(cls(schema, format_checker=checker).iter_errors(instance), key=str)
    if errors:
        print(f"{output_path}: INVALID against {schema_path}:")
        for e in errors:
            print(f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message}")
        return 1
    formats = f", formats checked: {', '.join(sorted(used))}" if used else ""
    print(f"{output_path}: valid against {schema_path} ({cls.__name__}{formats})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
