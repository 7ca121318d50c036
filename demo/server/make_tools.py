#!/usr/bin/env python3
"""Builds demo/server/tools.json: a catalog of real tool (function) schemas
for the llama-server end-to-end test and benchmark, from a MaskBench
directory (JSONSchemaBench's function-calling sets: BFCL_* and
Glaiveai2K---*).

    python3 demo/server/make_tools.py "$CGRAM_MASKBENCH" > demo/server/tools.json

Each entry is an OpenAI tool: {"type": "function", "function": {"name",
"description", "parameters"}}. BFCL files wrap the parameters in an object
whose one property is the function's name; Glaive files are the parameters
themselves, the function named by the file. Names are made unique and
limited to [A-Za-z0-9_-] (OpenAI's rule). The order is deterministic:
BFCL and Glaive alternate, each sorted by file name, so that the first N
tools mix both sources. Schemas with $ref are left out (tool parameters
are self-contained in practice).
"""
import json
import os
import re
import sys


def clean(name):
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


def tools(directory):
    bfcl, glaive = [], []
    for f in sorted(os.listdir(directory)):
        if not f.endswith(".json"):
            continue
        if not (f.startswith("BFCL_") or f.startswith("Glaiveai2K---")):
            continue
        with open(os.path.join(directory, f), encoding="utf-8") as fh:
            schema = json.load(fh)["schema"]
        if "$ref" in json.dumps(schema):
            continue
        if f.startswith("BFCL_"):
            props = schema.get("properties", {})
            if schema.get("type") != "object" or len(props) != 1:
                continue
            (name, params), = props.items()
            if not isinstance(params, dict) or params.get("type") != "object":
                continue
            bfcl.append((name, params, f))
        else:
            if not isinstance(schema, dict) or "properties" not in schema:
                continue
            name = f[len("Glaiveai2K---"):-len(".json")].rsplit("_", 1)[0]
            glaive.append((name, schema, f))
    out, seen = [], set()
    for pair in zip(bfcl, glaive):
        for name, params, f in pair:
            base = clean(name)
            n, k = base, 2
            while n in seen:
                n, k = f"{base}_{k}", k + 1
            seen.add(n)
            out.append({
                "type": "function",
                "function": {
                    "name": n,
                    "description": params.get("description") or f"{name} (from MaskBench {f})",
                    "parameters": params,
                },
            })
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_tools.py MASKBENCH_DIR > tools.json")
    catalog = tools(sys.argv[1])[:300]
    json.dump(catalog, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
