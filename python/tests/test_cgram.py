"""The Python package against the library it bundles: vocabularies, every
grammar kind, masks written into numpy arrays, accept / rollback / clone,
and errors as exceptions."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

import cgram

ROOT = Path(__file__).resolve().parents[2]
LLAMA3 = ROOT / ".cache" / "tokenizers" / "llama3" / "tokenizer.json"
GEMMA = Path(os.environ.get("CGRAM_CACHE", Path.home() / ".cache" / "cgram")) / "models" / "gemma-3-270m-q4_k_m.gguf"


def byte_vocab():
    """Every byte a token, then "<eos>" (id 256): text spells its tokens."""
    return cgram.Vocab.from_tokens([bytes([b]) for b in range(256)] + [b"<eos>"], eos_tokens=[256], special_tokens=[256])


def allowed(bitmask, row=0):
    bits = np.unpackbits(bitmask[row].view(np.uint8), bitorder="little")
    return set(np.flatnonzero(bits).tolist())


def walk(matcher, text):
    """Feeds `text` byte by byte (byte tokens), checking each mask allows it."""
    mask = cgram.allocate_token_bitmask(1, 257)
    for b in text.encode():
        matcher.fill_next_token_bitmask(mask)
        assert b in allowed(mask), f"{chr(b)!r} not allowed"
        assert matcher.accept_token(b)


def test_version_and_vocab():
    assert cgram.version().startswith("0.")
    v = byte_vocab()
    assert v.size == 257 and len(v) == 257
    assert v.token_bytes(65) == b"A"
    assert v.token_bytes(256) == b"<eos>"
    assert v.eos_tokens == [256]
    with pytest.raises(cgram.CgramError):
        v.token_bytes(257)


def test_json_schema_walk_and_end():
    v = byte_vocab()
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}},
              "required": ["n"], "additionalProperties": False}
    g = cgram.Grammar.json_schema(v, schema, flags=cgram.JSON_COMPACT)
    m = cgram.Matcher(g)
    walk(m, '{"n":7}')
    assert m.is_accepting()
    mask = cgram.allocate_token_bitmask(1, v.size)
    m.fill_next_token_bitmask(mask)
    assert allowed(mask) == {256}
    assert m.accept_token(256) and m.is_terminated()


def test_refusals_rollback_clone_reset():
    v = byte_vocab()
    m = cgram.GrammarMatcher(cgram.Grammar.gbnf(v, 'root ::= "yes" | "no"'))
    assert not m.accept_token(ord("x"))
    assert m.accept_token(ord("y")) and m.accept_token(ord("e"))
    c = m.clone()
    m.rollback(1)  # back to "y"
    assert m.accept_token(ord("e")) and m.accept_token(ord("s")) and m.is_accepting()
    assert c.accept_token(ord("s")) and c.is_accepting()
    m.reset()
    assert not m.is_accepting()
    assert m.accept_bytes("no") and m.is_accepting()


def test_regex_any_json_and_forced():
    v = byte_vocab()
    m = cgram.Matcher(cgram.Grammar.regex(v, "[0-9]{3}-x"))
    walk(m, "123")
    assert m.forced_tokens() == [ord("-"), ord("x")]
    a = cgram.Matcher(cgram.Grammar.any_json(v))
    walk(a, json.dumps({"a": [1, 2.5, None, "z"]}))
    assert a.is_accepting()


def test_batch_rows_and_dtypes():
    v = byte_vocab()
    g = cgram.Grammar.gbnf(v, 'root ::= [ab]')
    masks = cgram.allocate_token_bitmask(3, v.size)
    cgram.Matcher(g).fill_next_token_bitmask(masks, index=1)
    assert allowed(masks, 1) == {ord("a"), ord("b")}
    assert len(allowed(masks, 0)) == 32 * masks.shape[1]  # untouched rows
    with pytest.raises(cgram.CgramError):
        cgram.Matcher(g).fill_next_token_bitmask(np.zeros(9, dtype=np.int64))


def test_errors_carry_code_and_message():
    v = byte_vocab()
    with pytest.raises(cgram.CgramError) as e:
        cgram.Grammar.gbnf(v, 'root ::= ("a"')
    assert e.value.code == cgram.ERR_PARSE and "cg_compile" in str(e.value)
    with pytest.raises(cgram.CgramError) as e:
        cgram.Grammar.json_schema(v, '{"type": 12}')
    assert e.value.code < 0
    with pytest.raises(cgram.CgramError) as e:
        cgram.Vocab.from_gguf("/nonexistent/model.gguf")
    assert e.value.code == cgram.ERR_IO


@pytest.mark.skipif(not LLAMA3.exists(), reason="scripts/fetch-tokenizers.sh not run")
def test_llama3_tokenizer_json():
    v = cgram.Vocab.from_tokenizer_json(LLAMA3)
    assert v.size == 128256
    m = cgram.Matcher(cgram.Grammar.gbnf(v, 'root ::= "hello"'))
    mask = cgram.allocate_token_bitmask(1, v.size)
    m.fill_next_token_bitmask(mask)
    ids = allowed(mask)
    assert all(b"hello".startswith(v.token_bytes(t)) for t in ids) and ids


@pytest.mark.skipif(not GEMMA.exists(), reason="scripts/lib/llama-model.sh not run")
def test_gemma_gguf():
    v = cgram.Vocab.from_gguf(GEMMA)
    assert v.size == 262144 and 106 in v.eos_tokens


def test_logits_processor_generates_only_what_the_grammar_allows():
    """A greedy generation loop as llama-cpp-python runs it (1-D ids with
    the prompt, 1-D scores), on random scores: the output follows the
    schema whatever the scores say."""
    v = byte_vocab()
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}},
              "required": ["ok", "n"], "additionalProperties": False}
    rng = np.random.default_rng(7)
    for _ in range(5):
        flags = cgram.JSON_COMPACT | cgram.JSON_STRICT_INTEGERS  # "7", never "7.0"
        proc = cgram.LogitsProcessor(cgram.Grammar.json_schema(v, schema, flags=flags))
        ids = list(b"prompt: ")
        out = b""
        for _ in range(200):
            scores = rng.standard_normal(v.size + 7).astype(np.float32)  # a model's padded vocabulary
            scores = proc(np.array(ids, dtype=np.intc), scores)
            assert np.isinf(scores[v.size:]).all()
            t = int(np.argmax(scores))
            if t == 256:
                break
            ids.append(t)
            out += bytes([t])
        doc = json.loads(out)
        assert set(doc) == {"ok", "n"} and isinstance(doc["ok"], bool) and isinstance(doc["n"], int)


def test_logits_processor_batch_rows():
    """Hugging Face's shape with numpy arrays: 2-D ids and scores."""
    v = byte_vocab()
    proc = cgram.LogitsProcessor(cgram.Grammar.gbnf(v, 'root ::= "ab" | "ac"'))
    ids = np.array([[1, 2], [1, 2]])
    scores = np.zeros((2, v.size), dtype=np.float32)
    proc(ids, scores)
    assert (np.flatnonzero(np.isfinite(scores[0])) == [ord("a")]).all()
    ids = np.array([[1, 2, ord("a")], [1, 2, ord("a")]])
    scores = np.zeros((2, v.size), dtype=np.float32)
    proc(ids, scores)
    assert set(np.flatnonzero(np.isfinite(scores[1])).tolist()) == {ord("b"), ord("c")}


def test_lazy_matcher_with_triggers():
    """llama.cpp's lazy grammars: free text until a trigger, then the grammar
    from the trigger pattern's group on."""
    v = byte_vocab()
    g = cgram.Grammar.gbnf(v, 'root ::= "<call>" [0-9]+ "</call>"')
    t = cgram.Triggers(v, patterns=[r"[\s\S]*?(<call>)[\s\S]*"], words=["CALL:"], tokens=[7])
    m = cgram.Matcher(g, t)
    mask = cgram.allocate_token_bitmask(1, v.size)
    assert m.triggered() is None
    for b in b"Sure, here it is: ":
        m.fill_next_token_bitmask(mask)
        assert b in allowed(mask)
        assert m.accept_token(b)
    assert m.triggered() is None
    copy = m.clone()
    walk(m, "<call>12")
    assert m.triggered() == (0, len("Sure, here it is: "))
    m.fill_next_token_bitmask(mask)
    assert allowed(mask) == set(b"0123456789<")
    assert not m.accept_token(ord("x"))
    # The clone still awaits; rolling back past the trigger awaits again.
    assert copy.triggered() is None
    m.rollback(3)
    assert m.triggered() is None
    # The trigger token (index 2 in the order patterns, words, tokens).
    other = cgram.Matcher(g, t)
    assert cgram.Matcher(g).triggered() == (-1, 0)
    with pytest.raises(cgram.CgramError) as err:
        cgram.Triggers(v, patterns=["(a"])
    assert err.value.code == cgram.ERR_PARSE
    del other


def test_grammar_cache():
    v = byte_vocab()
    cache = cgram.GrammarCache(budget_bytes=1 << 20)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    g1 = cache.compile(v, schema, flags=cgram.JSON_COMPACT)
    g2 = cache.compile(v, json.dumps(schema), cgram.KIND_JSON_SCHEMA, flags=cgram.JSON_COMPACT)
    stats = cache.stats()
    assert (stats["misses"], stats["hits"], stats["entries"]) == (1, 1, 1)
    assert stats["budget"] == 1 << 20 and stats["bytes"] > 0
    walk(cgram.Matcher(g2), '{"a":12}')
    cache.compile(v, schema)  # other flags: another grammar
    assert cache.stats()["misses"] == 2
    t1 = cache.triggers(v, words=["CALL:"])
    t2 = cache.triggers(v, words=["CALL:"])
    assert cache.stats()["hits"] == 2
    cgram.Matcher(g1, t1)
    cgram.Matcher(g1, t2)
    with pytest.raises(cgram.CgramError):
        cache.compile(v, 'root ::= ("a"')
    cache.set_budget(0)
    assert cache.stats()["budget"] == 256 << 20
    cache.forget_vocab(v)
    assert cache.stats()["entries"] == 0
    cache.compile(v, schema)
    cache.clear()
    assert cache.stats()["entries"] == 0
    # Grammars from the cache outlive it.
    del cache
    walk(cgram.Matcher(g1), '{"a":3}')
