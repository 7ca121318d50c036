#!/usr/bin/env python3
"""How compile time and first-mask time grow with the size of large inputs.

    python3 scripts/scaling.py [--lib target/release/libcgram.so]
                               [--tokenizer .cache/tokenizers/llama3/tokenizer.json]

Through the C API (ctypes), on the real Llama 3 vocabulary, for families of
inputs a request can send that once compiled or masked in superlinear time
(issue 17): JSON Schema enums of n strings, objects with n required
properties, GBNF choices of n literals, and GBNF choices of n rules that
call back into the choice. For each size: compile time, first mask time and
both divided by n (flat per-item cost = linear growth). CPU time of the
process, best of 3 (a shared machine adds noise, never removes it).
Prints a Markdown table (RELIABILITY.md keeps one).
"""

import argparse
import ctypes
import json
import time


class Options(ctypes.Structure):
    # The fields of cg_compile_options this script sets, in header order.
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("kind", ctypes.c_uint32),
        ("root", ctypes.c_char_p),
        ("flags", ctypes.c_uint32),
        ("json_max_whitespace", ctypes.c_uint32),
        ("max_compile_ms", ctypes.c_uint64),
        ("max_states", ctypes.c_uint64),
        ("max_mask_steps", ctypes.c_uint64),
    ]


GBNF, JSON_SCHEMA = 0, 1


def enum_schema(n):
    return JSON_SCHEMA, json.dumps({"enum": [f"v{i}" for i in range(n)]})


def required_schema(n):
    props = {f"p{i}": {"type": "integer"} for i in range(n)}
    return JSON_SCHEMA, json.dumps(
        {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
    )


def literal_choice(n):
    return GBNF, "root ::= " + " | ".join(f'"w{i}"' for i in range(n))


def recursive_choice(n):
    head = "root ::= " + " | ".join(f"r{i}" for i in range(n)) + "\n"
    return GBNF, head + "".join(f'r{i} ::= "w{i}" root?\n' for i in range(n))


FAMILIES = [
    ("JSON Schema enum of n strings", enum_schema, [1_000, 10_000, 100_000]),
    ("object with n required properties", required_schema, [100, 1_000, 4_000]),
    ("GBNF choice of n literals", literal_choice, [1_000, 10_000, 100_000]),
    ("GBNF choice of n recursive rules", recursive_choice, [1_000, 10_000, 100_000]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="target/release/libcgram.so")
    ap.add_argument("--tokenizer", default=".cache/tokenizers/llama3/tokenizer.json")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    lib = ctypes.CDLL(args.lib)
    lib.cg_vocab_from_tokenizer_json.restype = ctypes.c_void_p
    lib.cg_vocab_from_tokenizer_json.argtypes = [ctypes.c_char_p]
    lib.cg_vocab_size.argtypes = [ctypes.c_void_p]
    lib.cg_compile_options_init_size.argtypes = [ctypes.POINTER(Options), ctypes.c_size_t]
    lib.cg_compile.restype = ctypes.c_void_p
    lib.cg_compile.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(Options)]
    lib.cg_free.argtypes = [ctypes.c_void_p]
    lib.cg_matcher_new.restype = ctypes.c_void_p
    lib.cg_matcher_new.argtypes = [ctypes.c_void_p]
    lib.cg_matcher_free.argtypes = [ctypes.c_void_p]
    lib.cg_fill_mask.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.cg_last_error.restype = ctypes.c_char_p

    vocab = lib.cg_vocab_from_tokenizer_json(args.tokenizer.encode())
    if not vocab:
        raise SystemExit(f"loading {args.tokenizer}: {lib.cg_last_error().decode()}")
    words = (lib.cg_vocab_size(vocab) + 31) // 32
    mask = (ctypes.c_uint32 * words)()

    print("| input | n | compile ms | first mask ms | compile us / n | first mask us / n |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, make, sizes in FAMILIES:
        for n in sizes:
            kind, source = make(n)
            src = source.encode()
            opts = Options()
            # The size of this script's struct: the library writes no more.
            lib.cg_compile_options_init_size(ctypes.byref(opts), ctypes.sizeof(Options))
            opts.kind = kind
            best_c = best_m = float("inf")
            for _ in range(args.repeat):
                # Every compile starts with the vocabulary's caches as the
                # previous one left them: the first mask of a fresh grammar
                # still walks its own parser states.
                t0 = time.process_time()
                g = lib.cg_compile(vocab, src, len(src), ctypes.byref(opts))
                t1 = time.process_time()
                if not g:
                    raise SystemExit(f"{name}, n = {n}: {lib.cg_last_error().decode()}")
                m = lib.cg_matcher_new(g)
                rc = lib.cg_fill_mask(m, mask, words)
                t2 = time.process_time()
                if rc != 0:
                    raise SystemExit(f"{name}, n = {n}: mask: {lib.cg_last_error().decode()}")
                lib.cg_matcher_free(m)
                lib.cg_free(g)
                best_c, best_m = min(best_c, t1 - t0), min(best_m, t2 - t1)
            print(
                f"| {name} | {n:,} | {best_c * 1e3:.1f} | {best_m * 1e3:.1f} "
                f"| {best_c * 1e6 / n:.2f} | {best_m * 1e6 / n:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
