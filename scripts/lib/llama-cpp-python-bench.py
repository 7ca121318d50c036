#!/usr/bin/env python3
"""Tokens per second of llama-cpp-python generating JSON for a schema: with
cgram (cgram.llama_cpp.install()), with llama.cpp's own grammar sampler, and
with no grammar at all, on the same prompts, interleaved in one process (the
machine's noise hits the three alike).

    python scripts/lib/llama-cpp-python-bench.py MODEL.gguf [--rounds 3] [--max-tokens 128]

Run by scripts/llama-cpp-python-test.sh --bench (inside its environment).
Each generation streams; its rate is (tokens - 1) / (time of the last token
- time of the first), so that neither the prompt nor the grammar's
compilation counts: the steady cost per token. The grammar is the GBNF
llama-cpp-python's schema converter writes (LlamaGrammar.from_json_schema),
the same text for cgram and for llama.cpp. With no grammar, end-of-generation
tokens are banned (logit_bias) so that the model writes max_tokens tokens
as the constrained runs mostly do. Prints a Markdown table of medians, and
the grammar sampler's own cost: apply (over the whole vocabulary, where
llama-cpp-python's chain puts it) and accept per token, replayed alone on
the tokens of a cgram output.
"""

import argparse
import ctypes
import json
import statistics
import sys
import time

import llama_cpp
from llama_cpp import _internals

import cgram.llama_cpp

# Shapes of real structured-output requests: a record with bounded fields,
# nested objects with an enum, an array of objects with a pattern, a tool
# call with a free-text argument.
SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0},
            "email": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "age", "tags"],
    },
    "city": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "enum": ["Paris", "Lyon", "Nice", "Lille"]},
            "population": {"type": "number"},
            "mayor": {
                "type": "object",
                "properties": {"first": {"type": "string"}, "last": {"type": "string"}},
                "required": ["first", "last"],
            },
            "districts": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["city", "population", "mayor", "districts"],
    },
    "order": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                "qty": {"type": "integer", "minimum": 1},
                "note": {"type": "string"},
            },
            "required": ["sku", "qty", "note"],
        },
    },
    "tool_call": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": ["search", "send_email", "create_event"]},
            "arguments": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "to": {"type": "array", "items": {"type": "string"}},
                    "body": {"type": "string"},
                },
                "required": ["query", "body"],
            },
        },
        "required": ["name", "arguments"],
    },
}

MODES = ("none", "cgram", "llama.cpp")


def use(mode):
    if mode == "cgram":
        cgram.llama_cpp.install()
    else:
        cgram.llama_cpp.uninstall()


def rate(llm, prompt, mode, grammar, max_tokens, eog_bias):
    """Tokens/s of one streamed generation, and its text."""
    use(mode)
    kwargs = {"grammar": grammar} if mode != "none" else {"logit_bias": eog_bias}
    stamps, text = [], ""
    for chunk in llm.create_completion(prompt, max_tokens=max_tokens, temperature=0.7, seed=1, stream=True, **kwargs):
        stamps.append(time.perf_counter())
        text += chunk["choices"][0]["text"]
    if len(stamps) < 3:
        return None, len(stamps), text
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), len(stamps), text


def grammar_ms_per_token(llm, mode, grammar, tokens):
    """The grammar sampler alone, as llama-cpp-python's chain runs it
    (before top-k: every token of the vocabulary a candidate): apply and
    accept per token of a finished output, in ms."""
    use(mode)
    chain = _internals.LlamaSampler()
    chain.add_grammar(llm._model, grammar)
    n = llama_cpp.llama_vocab_n_tokens(llm._model.vocab)
    template = (llama_cpp.llama_token_data * n)(*[llama_cpp.llama_token_data(i, 0.0, 0.0) for i in range(n)])
    data = (llama_cpp.llama_token_data * n)()
    cur = llama_cpp.llama_token_data_array()
    spent = 0.0
    for token in tokens:
        ctypes.memmove(data, template, ctypes.sizeof(data))
        cur.data, cur.size, cur.selected, cur.sorted = data, n, -1, False
        t0 = time.perf_counter()
        llama_cpp.llama_sampler_apply(chain.sampler, ctypes.byref(cur))
        llama_cpp.llama_sampler_accept(chain.sampler, token)
        spent += time.perf_counter() - t0
    chain.close()
    use("none")
    return 1000 * spent / max(1, len(tokens))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    llm = llama_cpp.Llama(args.model, n_ctx=2048, verbose=False, seed=1, n_threads=args.threads)
    vocab = llm._model.vocab
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    eog_bias = {t: -1e9 for t in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t)}
    rows = []
    for name, schema in SCHEMAS.items():
        grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(schema))
        prompt = f"A JSON document for this JSON Schema: {json.dumps(schema)}\nJSON:\n"
        rates = {mode: [] for mode in MODES}
        tokens = {mode: [] for mode in MODES}
        output = ""
        for _ in range(args.rounds):
            for mode in MODES:
                r, n, text = rate(llm, prompt, mode, grammar, args.max_tokens, eog_bias)
                if r is not None:
                    rates[mode].append(r)
                tokens[mode].append(n)
                if mode == "cgram":
                    output = text
        med = {mode: statistics.median(rates[mode]) if rates[mode] else float("nan") for mode in MODES}
        # Any tokenization of the output is one both samplers accept.
        ids = llm.tokenize(output.encode(), add_bos=False)
        cost = {mode: grammar_ms_per_token(llm, mode, grammar, ids) for mode in ("cgram", "llama.cpp")}
        rows.append((name, med, {mode: statistics.median(tokens[mode]) for mode in MODES}, cost))
        print(f"# {name}: {json.dumps({m: [round(x, 1) for x in rates[m]] for m in MODES})}", file=sys.stderr)
    cgram.llama_cpp.uninstall()
    print(f"llama-cpp-python {llama_cpp.__version__}, cgram {cgram.version()}, {args.model.rsplit('/', 1)[-1]}, "
          f"{n_vocab} tokens, medians of {args.rounds} rounds, tokens/s")
    print()
    print("| schema | tokens (none / cgram / llama.cpp) | no grammar | cgram | llama.cpp grammar "
          "| cgram / llama.cpp | cgram / no grammar | grammar ms/token: cgram / llama.cpp |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, med, toks, cost in rows:
        print(
            f"| {name} | {toks['none']:.0f} / {toks['cgram']:.0f} / {toks['llama.cpp']:.0f} "
            f"| {med['none']:.1f} | {med['cgram']:.1f} | {med['llama.cpp']:.1f} "
            f"| {med['cgram'] / med['llama.cpp']:.2f}x | {med['cgram'] / med['none']:.3f} "
            f"| {cost['cgram']:.2f} / {cost['llama.cpp']:.1f} ({cost['llama.cpp'] / cost['cgram']:.0f}x) |"
        )


if __name__ == "__main__":
    main()
