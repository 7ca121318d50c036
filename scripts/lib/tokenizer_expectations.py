#!/usr/bin/env python3
"""Write what the Python `tokenizers` package says about a tokenizer.json,
for tests/vocab_real.rs to check cgram's own loader against.

Usage: tokenizer_expectations.py TOKENIZER_JSON OUT_JSON

The output holds:
  vocab_size   get_vocab_size(with_added_tokens=True)
  added        [id, content, special] of every added token
  prefix_id    a token that decodes to "A" (see `decoded`)
  decoded      for every id, decode([prefix_id, id]) without the leading
               "A" (so that decoders which strip a leading space, as
               SentencePiece-style ones do, leave the token's own text
               whole), or null where that text has U+FFFD in it (a token
               that is not valid UTF-8 on its own)
  samples      texts and the ids `tokenizers` encodes them to (no special
               tokens added)
"""

import json
import sys

import tokenizers

SAMPLES = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.\n\n\tIndented",
    '{"name": "Ada", "age": 36, "tags": ["x", "y"], "ok": true}',
    "Grüße aus Köln, ça va? ¿Qué tal? Ελληνικά, русский, 日本語のテキスト, 中文, 한국어, עברית, हिन्दी",
    "emoji 😀🎉👍🏽👨‍👩‍👧 and symbols ∀x∈ℝ: x² ≥ 0 — “quotes” …",
    "def f(x):\n    return x ** 2  # comment\n",
]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1:]
    tok = tokenizers.Tokenizer.from_file(src)
    n = tok.get_vocab_size(with_added_tokens=True)
    added = sorted(
        [i, t.content, bool(t.special)]
        for i, t in tok.get_added_tokens_decoder().items()
    )
    prefix = None
    for cand in ("A", "<0x41>", "\u2581A"):
        pid = tok.token_to_id(cand)
        if pid is not None and tok.decode([pid]) == "A":
            prefix = pid
            break
    if prefix is None:
        sys.exit(f"{src}: no token decodes to 'A'")
    texts = tok.decode_batch([[prefix, i] for i in range(n)], skip_special_tokens=False)
    decoded = []
    for t in texts:
        if not t.startswith("A") or "\ufffd" in t:
            decoded.append(None)
        else:
            decoded.append(t[1:])
    samples = [
        {"text": s, "ids": tok.encode(s, add_special_tokens=False).ids} for s in SAMPLES
    ]
    data = {
        "tokenizers_version": tokenizers.__version__,
        "vocab_size": n,
        "added": added,
        "prefix_id": prefix,
        "decoded": decoded,
        "samples": samples,
    }
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    import os

    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
