#!/usr/bin/env python3
"""Validates the schema outputs of `cgram-bench soak --dump FILE` against
their schemas with the `jsonschema` package (the draft each schema names,
its default otherwise; formats checked where jsonschema has a checker for
them).

    scripts/lib/soak_validate.py OUT.jsonl

Each line of OUT.jsonl is {"source", "schema_file", "flags", "output"}:
the schema is the "schema" member of the MaskBench file. Two kinds of
outputs are counted apart, not validated:
- outputs that repeat a key in an object: JSON Schema leaves duplicate
  keys undefined, and cgram's grammars let a repeated key stand for
  another (README, "Property order"), while Python keeps the last value;
- outputs with a number that a Python float cannot hold (`1e999` parses
  as inf, `1e-999` as 0), which would be validated as another number
  (integers are exact in Python and are validated).
Draft 3 and 4 schemas take an integral number written with a fraction or
an exponent (`1.0`, `5e2`) as an integer, as cgram does for every draft
(src/json_schema/mod.rs, "Numbers") and as the JSON Schema Test Suite allows (it tests
the other reading only in draft4/optional/zeroTerminatedFloats.json);
outputs valid only that way are counted.
Prints the counts and the first failures; exits 1 if any other output
fails to parse or validate, or if the file holds no output at all.
"""

import decimal
import json
import math
import sys

import jsonschema


def zero_fraction_integers(cls):
    """`cls` with integers as draft 6 defines them (any number with a zero
    fractional part)."""

    def is_integer(checker, instance):
        if isinstance(instance, bool):
            return False
        return isinstance(instance, int) or isinstance(instance, float) and instance.is_integer()

    return jsonschema.validators.extend(cls, type_checker=cls.TYPE_CHECKER.redefine("integer", is_integer))


OLD_DRAFTS = (jsonschema.Draft3Validator, jsonschema.Draft4Validator)


def without_inner_dialects(schema, top=True):
    """`schema` without the `$schema` URIs of its subschemas (each would
    switch the validator back to the stock class of its draft); a property
    named `$schema` (an object) stays."""
    if isinstance(schema, dict):
        return {
            k: without_inner_dialects(v, False)
            for k, v in schema.items()
            if top or k != "$schema" or not isinstance(v, str)
        }
    if isinstance(schema, list):
        return [without_inner_dialects(v, False) for v in schema]
    return schema


class Duplicate(Exception):
    pass


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise Duplicate()
    return dict(pairs)


def floats_hold(value):
    """Whether every number of `value` (parsed with Decimal) survives the
    conversion to a float as the same kind of number: finite, and zero
    exactly when it is zero."""
    if isinstance(value, decimal.Decimal):
        f = float(value)
        return math.isfinite(f) and (f == 0) == (value == 0)
    if isinstance(value, dict):
        return all(floats_hold(v) for v in value.values())
    if isinstance(value, list):
        return all(floats_hold(v) for v in value)
    return True


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # integers of any length are exact
    validators = {}
    n = valid = duplicates = unrepresentable = float_integers = 0
    failures = []
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            n += 1
            path = rec["schema_file"]
            if path not in validators:
                with open(path, encoding="utf-8") as sf:
                    schema = json.load(sf)["schema"]
                cls = jsonschema.validators.validator_for(schema)
                strict = cls(schema, format_checker=cls.FORMAT_CHECKER)
                relaxed = None
                if cls in OLD_DRAFTS:
                    relaxed = zero_fraction_integers(cls)(
                        without_inner_dialects(schema), format_checker=cls.FORMAT_CHECKER
                    )
                validators[path] = (strict, relaxed)
            try:
                exact = json.loads(rec["output"], object_pairs_hook=no_duplicates, parse_float=decimal.Decimal)
                if not floats_hold(exact):
                    unrepresentable += 1
                    continue
                instance = json.loads(rec["output"])
                strict, relaxed = validators[path]
                error = jsonschema.exceptions.best_match(strict.iter_errors(instance))
                if error is not None and relaxed is not None and relaxed.is_valid(instance):
                    float_integers += 1
                    error = None
            except Duplicate:
                duplicates += 1
                continue
            except decimal.InvalidOperation:  # an exponent beyond Decimal's
                unrepresentable += 1
                continue
            except (ValueError, RecursionError) as e:
                error = e
            if error is None:
                valid += 1
            else:
                failures.append((rec["source"], rec["flags"], error, rec["output"]))
    print(
        f"soak_validate: {n} outputs of {len(validators)} schemas: {valid} valid "
        f"({float_integers} of them draft-4 integers written as 1.0 or 5e2), {len(failures)} invalid; "
        f"not validated: {duplicates} with a repeated key, {unrepresentable} with a number beyond floats"
    )
    for source, flags, error, output in failures[:20]:
        message = getattr(error, "message", str(error))
        print(f"  {source} (flags {flags}): {message[:300]}\n    output: {output[:300]!r}")
    return 0 if n > 0 and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
