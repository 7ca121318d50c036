#!/usr/bin/env python3
"""Builds the raw seed inputs of cgram's fuzz targets and the matcher_drive
vocabulary, from the project's test data and MaskBench.

    python3 fuzz/tools/make_seeds.py OUT_DIR [--maskbench DIR] [--tokenizers DIR]

Writes OUT_DIR/<target>/<name> for every target (raw seeds: thousands of
files, not committed; `scripts/fuzz.sh --seed` minimizes them into
fuzz/corpus/<target>/ with `cargo fuzz cmin`), and with --vocab-out FILE
the vocabulary file `fuzz/data/vocab.txt` (committed).

Sources:
- gbnf_compile: tests/data/llamacpp-grammar (the example .gbnf files, the
  grammars of parser_cases.json, integration_cases.json and the expected
  grammars of schema_to_grammar_cases.json).
- json_schema_compile: the `schema` of every MaskBench file under
  --maskbench (default $CGRAM_MASKBENCH, else the vendored
  tests/data/maskbench-subset) whose JSON text is at most 16 KiB, and every
  schema of the JSON Schema Test Suite (tests/data/json-schema-test-suite/tests).
- regex_compile: the patterns of tests/data/regex/maskbench_patterns.json and
  cases.json.
- tokenizer_json: small tokenizer files cut from the real ones (--tokenizers,
  default <repo>/.cache/tokenizers from scripts/fetch-tokenizers.sh): Llama 3
  byte-level BPE, SentencePiece BPE with byte fallback, Mistral tekken, plus
  hand-written Unigram / WordPiece / broken ones. An input is the file, then
  optionally NUL + tokenizer_config.json, then NUL + generation_config.json
  (see fuzz/harness.rs).
- gguf_vocab: llama.cpp's vocabulary files (--llama-models), cut to their
  first 200 tokens.
- matcher_drive: byte strings (a grammar selector then operations).
- vocab.txt: the matcher_drive vocabulary: the Llama 3 tokens of ids
  0..2047 (the 256 bytes and the most frequent merges), 64 later tokens
  holding non-ASCII bytes (CJK, accents, partial UTF-8), then special
  tokens. One token a line: `n` (normal), `s` (special) or `e` (special and
  end-of-sequence), a space, the token's bytes in hex.
"""

import argparse
import base64
import glob
import hashlib
import json
import os
import random
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_SCHEMA = 16384


def bytes_to_unicode():
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\u00a1"), ord("\u00ac") + 1))
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def write(out, target, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def gbnf_seeds(out):
    base = os.path.join(REPO, "tests/data/llamacpp-grammar")
    for p in sorted(glob.glob(os.path.join(base, "gbnf/*.gbnf"))):
        write(out, "gbnf_compile", open(p, "rb").read())
    for c in json.load(open(os.path.join(base, "parser_cases.json"))):
        write(out, "gbnf_compile", c["grammar"])
    for c in json.load(open(os.path.join(base, "integration_cases.json"))):
        write(out, "gbnf_compile", c["grammar"])
    for c in json.load(open(os.path.join(base, "schema_to_grammar_cases.json"))):
        if c.get("expected_grammar"):
            write(out, "gbnf_compile", c["expected_grammar"])
    # Token references, which the examples do not use (the byte-level
    # vocabulary of the harness has specials 256 "<|eos|>" and 257 "<s>").
    for g in [
        'root ::= <s> "a"+ <[256]>',
        'root ::= "x" !<[97]>* "y"',
        'root ::= ( <[98]> | "c" )* <|eos|>',
        'root ::= root "a" | "b"',
        'root ::= [^\\x00-\\x7f]{1,3} "." [\\u00e9-\\U0001F600]?',
    ]:
        write(out, "gbnf_compile", g)


def schema_seeds(out, maskbench):
    n = 0
    for p in sorted(glob.glob(os.path.join(maskbench, "*.json"))):
        try:
            d = json.load(open(p))
        except ValueError:
            continue
        s = json.dumps(d["schema"], ensure_ascii=False)
        if len(s.encode()) <= MAX_SCHEMA:
            write(out, "json_schema_compile", s)
            n += 1
    suite = os.path.join(REPO, "tests/data/json-schema-test-suite/tests")
    for p in sorted(glob.glob(os.path.join(suite, "**/*.json"), recursive=True)):
        try:
            groups = json.load(open(p))
        except ValueError:
            continue
        if not isinstance(groups, list):
            continue
        for g in groups:
            if isinstance(g, dict) and "schema" in g:
                write(out, "json_schema_compile", json.dumps(g["schema"], ensure_ascii=False))
                n += 1
    print(f"json_schema_compile: {n} schemas", file=sys.stderr)


def regex_seeds(out):
    base = os.path.join(REPO, "tests/data/regex")
    for c in json.load(open(os.path.join(base, "maskbench_patterns.json"))):
        write(out, "regex_compile", c["pattern"])
    for c in json.load(open(os.path.join(base, "cases.json"))):
        write(out, "regex_compile", c["p"])


def mini_bpe(path, keep, n_added):
    """A tokenizer.json with the first `keep` ids of `path`'s BPE model,
    the merges among them, and `n_added` of its added tokens renumbered
    after them."""
    d = json.load(open(path))
    m = d["model"]
    vocab = {t: i for t, i in m["vocab"].items() if i < keep}
    merges = []
    for mg in m["merges"]:
        a, b = mg.split(" ", 1) if isinstance(mg, str) else mg
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(mg)
        if len(merges) >= 200:
            break
    m["vocab"] = vocab
    m["merges"] = merges
    added = []
    for k, t in enumerate(d["added_tokens"][:n_added]):
        t = dict(t)
        t["id"] = t["id"] if t["id"] < keep else keep + k
        added.append(t)
    d["added_tokens"] = added
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def tokenizer_seeds(out, tokdir):
    t = "tokenizer_json"
    llama3 = os.path.join(tokdir, "llama3/tokenizer.json")
    spm = os.path.join(tokdir, "spm/tokenizer.json")
    tekken = os.path.join(tokdir, "tekken/tekken.json")
    if os.path.exists(llama3):
        small = mini_bpe(llama3, 300, 12)
        write(out, t, small)
        write(out, t, small + '\0{"eos_token": "<|eot_id|>"}')
        write(out, t, small + '\0{"eos_token": {"content": "<|end_of_text|>"}}\0{"eos_token_id": [301, 9]}')
        write(out, t, small + '\0\0{"eos_token_id": 300}')
        write(out, t, mini_bpe(llama3, 40, 2))
    if os.path.exists(spm):
        write(out, t, mini_bpe(spm, 300, 3))
        write(out, t, mini_bpe(spm, 300, 3) + '\0{"eos_token": "</s>", "bos_token": "<s>"}')
    if os.path.exists(tekken):
        d = json.load(open(tekken))
        d["vocab"] = d["vocab"][:300]
        d["config"]["default_vocab_size"] = 330
        d["config"]["default_num_special_tokens"] = 20
        d["config"]["num_vocab_tokens"] = 300
        write(out, t, json.dumps(d, ensure_ascii=False, separators=(",", ":")))
        d["special_tokens"] = [
            {"rank": 0, "token_str": "<unk>", "is_control": True},
            {"rank": 1, "token_str": "<s>", "is_control": True},
            {"rank": 2, "token_str": "</s>", "is_control": True},
        ]
        write(out, t, json.dumps(d, ensure_ascii=False, separators=(",", ":")))
    # Hand-written ones: other models and decoders, holes, bad shapes.
    unigram = {
        "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": True,
                  "vocab": [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0], ["<0x41>", -1.0],
                            ["\u2581a", -2.0], ["b", -3.0], ["\u2581\u2581", -4.0], ["\u00e9", -5.0]]},
        "added_tokens": [{"id": 2, "content": "</s>", "special": True}],
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
    }
    write(out, t, json.dumps(unigram, ensure_ascii=False))
    wordpiece = {"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1, "##b": 2}},
                 "decoder": {"type": "WordPiece", "prefix": "##"}}
    write(out, t, json.dumps(wordpiece))
    holes = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 7, "ab": 3}, "merges": ["a b"]},
             "added_tokens": [{"id": 9, "content": "<|endoftext|>", "special": True}],
             "pre_tokenizer": {"type": "ByteLevel"}}
    write(out, t, json.dumps(holes))
    write(out, t, '{"config": {"default_vocab_size": 4, "default_num_special_tokens": 2}, '
                  '"vocab": [{"rank": 0, "token_bytes": "YQ==", "token_str": "a"}, '
                  '{"rank": 1, "token_bytes": "Yg==", "token_str": "b"}]}')
    write(out, t, '{"model": {"type": "BPE", "vocab": {}, "merges": []}}')
    write(out, t, "{")


# GGUF value types (see src/vocab/gguf.rs).
GGUF_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gguf_cut(path, keep):
    """The metadata of the GGUF file `path` with every array cut to its
    first `keep` elements and the tensors left out: a small file that
    reads as the real one's vocabulary does, or None if it is not GGUF."""
    import struct

    with open(path, "rb") as f:
        data = f.read(64 << 20)
    if data[:4] != b"GGUF":
        return None
    pos = 24
    (n_keys,) = struct.unpack_from("<Q", data, 16)
    out = bytearray(data[:8]) + struct.pack("<QQ", 0, n_keys)

    def string(p):
        (n,) = struct.unpack_from("<Q", data, p)
        return p + 8 + n

    def value(p, t):
        if t == 8:
            return string(p)
        if t == 9:
            (et, n) = struct.unpack_from("<IQ", data, p)
            p += 12
            for _ in range(n):
                p = value(p, et)
            return p
        return p + GGUF_FIXED[t]

    for _ in range(n_keys):
        key_end = string(pos)
        (t,) = struct.unpack_from("<I", data, key_end)
        vstart = key_end + 4
        vend = value(vstart, t)
        out += data[pos:vstart]
        if t == 9:
            (et, n) = struct.unpack_from("<IQ", data, vstart)
            p = vstart + 12
            items = []
            for _ in range(min(n, keep)):
                q = value(p, et)
                items.append(data[p:q])
                p = q
            out += struct.pack("<IQ", et, len(items)) + b"".join(items)
        else:
            out += data[vstart:vend]
        pos = vend
    return bytes(out)


def gguf_seeds(out, models):
    """gguf_vocab: the vocabulary files llama.cpp ships (models/ggml-vocab-*.gguf
    of the llama.cpp scripts/lib/llama-build.sh unpacks), cut to their first
    200 tokens and merges, plus their headers cut shorter."""
    for path in sorted(glob.glob(os.path.join(models, "ggml-vocab-*.gguf"))):
        small = gguf_cut(path, 200)
        if small is None:
            continue
        write(out, "gguf_vocab", small)
        write(out, "gguf_vocab", small[: len(small) // 3])


def matcher_seeds(out, n_grammars):
    rng = random.Random(17)
    for g in range(n_grammars):
        for _ in range(4):
            n = rng.randrange(4, 64)
            write(out, "matcher_drive", bytes([g]) + bytes(rng.randrange(256) for _ in range(n)))


def vocab_file(path, tokdir):
    d = json.load(open(os.path.join(tokdir, "llama3/tokenizer.json")))
    u2b = bytes_to_unicode()
    by_id = {}
    for tok, i in d["model"]["vocab"].items():
        by_id[i] = bytes(u2b[c] for c in tok)
    lines = []
    for i in range(2048):
        lines.append("n " + by_id[i].hex())
    # Non-ASCII tokens spread over the id range, and tokens that end inside
    # a UTF-8 character (their last byte a lead byte).
    non_ascii = [i for i in sorted(by_id) if i >= 2048 and any(b >= 0x80 for b in by_id[i])]
    partial = [i for i in non_ascii if by_id[i][-1] >= 0xC0]
    picked = sorted(set(non_ascii[:: max(1, len(non_ascii) // 48)][:48] + partial[:16]))
    for i in picked:
        lines.append("n " + by_id[i].hex())
    extra = len(picked)
    specials = {t["content"]: t for t in d["added_tokens"]}
    for name, kind in [("<|begin_of_text|>", "s"), ("<|end_of_text|>", "e"),
                       ("<|start_header_id|>", "s"), ("<|end_header_id|>", "s"),
                       ("<|eot_id|>", "e"), ("<|reserved_special_token_0|>", "s")]:
        assert name in specials, name
        lines.append(kind + " " + name.encode().hex())
    lines.append("n ")  # an empty token: never matches text
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(lines)} tokens ({extra} extra non-ASCII)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument(
        "--maskbench",
        default=os.environ.get("CGRAM_MASKBENCH")
        or os.path.join(REPO, "tests/data/maskbench-subset"),
        help="a MaskBench folder (default $CGRAM_MASKBENCH, else tests/data/maskbench-subset)",
    )
    ap.add_argument("--tokenizers", default=os.path.join(REPO, ".cache/tokenizers"))
    ap.add_argument("--vocab-out")
    ap.add_argument(
        "--llama-models",
        default=os.path.expanduser("~/.cache/cgram/llama.cpp-0.3.36/src/models"),
        help="llama.cpp's models/ folder (scripts/lib/llama-build.sh --print src)",
    )
    ap.add_argument("--matcher-grammars", type=int, default=24)
    a = ap.parse_args()
    gbnf_seeds(a.out)
    schema_seeds(a.out, a.maskbench)
    regex_seeds(a.out)
    tokenizer_seeds(a.out, a.tokenizers)
    matcher_seeds(a.out, a.matcher_grammars)
    gguf_seeds(a.out, a.llama_models)
    if a.vocab_out:
        vocab_file(a.vocab_out, a.tokenizers)
    for t in sorted(os.listdir(a.out)):
        print(f"{t}: {len(os.listdir(os.path.join(a.out, t)))} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
