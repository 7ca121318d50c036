"""cgram from Python: exact token masks for grammar-constrained decoding.

The C API of libcgram (bundled in this package) through ctypes: load a
vocabulary, compile a grammar (GBNF, JSON Schema, regex or any JSON) for it,
then per sequence a matcher fills a token bitmask and advances on the
chosen token::

    import cgram
    vocab = cgram.Vocab.from_gguf("model.gguf")          # or from_tokenizer_json
    grammar = cgram.Grammar.json_schema(vocab, '{"type": "object"}')
    matcher = cgram.Matcher(grammar)
    bitmask = cgram.allocate_token_bitmask(1, vocab.size)
    matcher.fill_next_token_bitmask(bitmask)              # written in place
    matcher.accept_token(token_id)

A bitmask is an int32 numpy array of ``ceil(vocab_size / 32)`` words per
row, bit ``t % 32`` of word ``t // 32`` set when token ``t`` is allowed (the
layout XGrammar and llguidance use). Errors raise :class:`CgramError` with
the library's code and message.
"""

from __future__ import annotations

import ctypes
import json as _json
import os
import sys
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "CgramError",
    "Vocab",
    "Grammar",
    "Matcher",
    "GrammarMatcher",
    "Triggers",
    "GrammarCache",
    "allocate_token_bitmask",
    "LogitsProcessor",
    "version",
]

# Error codes of cgram.h.
OK = 0
ERR_INVALID_ARGUMENT = -1
ERR_PARSE = -2
ERR_UNSUPPORTED = -3
ERR_LIMIT = -4
ERR_IO = -5
ERR_TOKEN_REJECTED = -6
ERR_TERMINATED = -7
ERR_INTERNAL = -8

# Grammar kinds and JSON flags of cgram.h.
KIND_GBNF = 0
KIND_JSON_SCHEMA = 1
KIND_REGEX = 2
KIND_ANY_JSON = 3
JSON_COMPACT = 1
JSON_NO_EXTRA_PROPERTIES = 2
JSON_ORDERED_PROPERTIES = 8
JSON_STRICT_INTEGERS = 16
JSON_LENIENT = 32

TOKEN_SPECIAL = 1


def _library_path() -> Path:
    name = {"win32": "cgram.dll", "darwin": "libcgram.0.dylib"}.get(sys.platform, "libcgram.so.0")
    override = os.environ.get("CGRAM_LIBRARY")
    return Path(override) if override else Path(__file__).resolve().parent / name


class _Options(ctypes.Structure):
    """struct cg_compile_options (a versioned struct: struct_size first)."""

    _fields_ = [
        ("struct_size", c_uint32),
        ("kind", c_uint32),
        ("root", c_char_p),
        ("flags", c_uint32),
        ("json_max_whitespace", c_uint32),
        ("max_compile_ms", c_uint64),
        ("max_states", c_uint64),
        ("max_mask_steps", c_uint64),
        ("json_indent", c_uint32),
        ("json_item_separator", c_char_p),
        ("json_key_separator", c_char_p),
        ("json_documents", c_char_p),
    ]


class _Trigger(ctypes.Structure):
    """struct cg_trigger."""

    _fields_ = [("kind", c_uint32), ("text", c_char_p), ("token", c_int32)]


class _CacheStats(ctypes.Structure):
    """struct cg_grammar_cache_stats (versioned: struct_size first)."""

    _fields_ = [
        ("struct_size", c_uint32),
        ("hits", c_uint64),
        ("misses", c_uint64),
        ("evictions", c_uint64),
        ("entries", c_uint64),
        ("bytes", c_uint64),
        ("budget", c_uint64),
    ]


def _load() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(_library_path()))
    sigs = {
        "cg_version": ([], c_char_p),
        "cg_version_number": ([], c_uint32),
        "cg_last_error": ([], c_char_p),
        "cg_last_error_code": ([], c_int),
        "cg_vocab_from_tokenizer_json": ([c_char_p], c_void_p),
        "cg_vocab_from_gguf": ([c_char_p], c_void_p),
        "cg_vocab_new": (
            [c_uint32, POINTER(c_void_p), POINTER(c_uint32), POINTER(c_uint32), POINTER(c_int32), c_uint32],
            c_void_p,
        ),
        "cg_vocab_size": ([c_void_p], c_uint32),
        "cg_vocab_token_bytes": ([c_void_p, c_int32, POINTER(c_size_t)], c_void_p),
        "cg_vocab_eos_tokens": ([c_void_p, POINTER(c_int32), c_size_t], c_int),
        "cg_vocab_free": ([c_void_p], None),
        "cg_compile_options_init_size": ([POINTER(_Options), c_size_t], None),
        "cg_compile": ([c_void_p, c_char_p, c_size_t, POINTER(_Options)], c_void_p),
        "cg_grammar_vocab_size": ([c_void_p], c_uint32),
        "cg_mask_words": ([c_void_p], c_size_t),
        "cg_free": ([c_void_p], None),
        "cg_matcher_new": ([c_void_p], c_void_p),
        "cg_matcher_clone": ([c_void_p], c_void_p),
        "cg_matcher_free": ([c_void_p], None),
        "cg_fill_mask": ([c_void_p, c_void_p, c_size_t], c_int),
        "cg_accept": ([c_void_p, c_int32], c_int),
        "cg_accept_bytes": ([c_void_p, c_char_p, c_size_t], c_int),
        "cg_rollback": ([c_void_p, c_uint32], c_int),
        "cg_reset": ([c_void_p], None),
        "cg_is_accepting": ([c_void_p], c_int),
        "cg_is_terminated": ([c_void_p], c_int),
        "cg_forced_tokens": ([c_void_p, POINTER(c_int32), c_size_t], c_int),
        "cg_triggers_new": ([c_void_p, POINTER(_Trigger), c_size_t], c_void_p),
        "cg_triggers_free": ([c_void_p], None),
        "cg_matcher_new_lazy": ([c_void_p, c_void_p], c_void_p),
        "cg_is_triggered": ([c_void_p, POINTER(c_int32), POINTER(c_size_t)], c_int),
        "cg_grammar_cache_new": ([c_size_t], c_void_p),
        "cg_grammar_cache_free": ([c_void_p], None),
        "cg_grammar_cache_compile": ([c_void_p, c_void_p, c_char_p, c_size_t, POINTER(_Options)], c_void_p),
        "cg_grammar_cache_triggers": ([c_void_p, c_void_p, POINTER(_Trigger), c_size_t], c_void_p),
        "cg_grammar_cache_set_budget": ([c_void_p, c_size_t], None),
        "cg_grammar_cache_get_stats": ([c_void_p, POINTER(_CacheStats)], c_int),
        "cg_grammar_cache_forget_vocab": ([c_void_p, c_void_p], None),
        "cg_grammar_cache_clear": ([c_void_p], None),
    }
    return _declare(lib, sigs)


def _declare(lib: ctypes.CDLL, sigs: dict) -> ctypes.CDLL:
    """Sets each function's argument and result types: {name: (args, result)}."""
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res
    return lib


_lib = _load()


class CgramError(Exception):
    """A failed cgram call: `code` is the library's error code (negative),
    the message its `cg_last_error`."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _error() -> CgramError:
    return CgramError(_lib.cg_last_error_code(), _lib.cg_last_error().decode("utf-8", "replace"))


def _check(rc: int) -> int:
    if rc < 0:
        raise _error()
    return rc


def version() -> str:
    """The library's version, e.g. "0.3.0"."""
    return _lib.cg_version().decode()


def _path_arg(path: Union[str, os.PathLike]) -> bytes:
    return os.fsencode(os.fspath(path))


class _Owned:
    """An object that owns one handle of the library (`_h`), released once,
    by the function named in `_free`, when the object goes."""

    _free = ""

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            getattr(_lib, self._free)(h)
            self._h = None


class Vocab(_Owned):
    """A tokenizer's vocabulary: each token's bytes, which are special, which
    end the sequence. Immutable and shared by grammars and threads."""

    _free = "cg_vocab_free"

    def __init__(self, handle: int):
        if not handle:
            raise _error()
        self._h = handle

    @classmethod
    def from_tokenizer_json(cls, path: Union[str, os.PathLike]) -> "Vocab":
        """A HuggingFace tokenizer.json (or a Mistral tekken.json)."""
        return cls(_lib.cg_vocab_from_tokenizer_json(_path_arg(path)))

    @classmethod
    def from_gguf(cls, path: Union[str, os.PathLike]) -> "Vocab":
        """The vocabulary of a GGUF model file, as llama.cpp reads it (the
        metadata only, never the tensors)."""
        return cls(_lib.cg_vocab_from_gguf(_path_arg(path)))

    @classmethod
    def from_tokens(
        cls,
        tokens: Sequence[bytes],
        eos_tokens: Iterable[int] = (),
        special_tokens: Iterable[int] = (),
    ) -> "Vocab":
        """A vocabulary from each token's exact bytes (what a host such as
        llama.cpp has), the end-of-sequence ids and the special ids (never
        matched by grammar text)."""
        n = len(tokens)
        bufs = [bytes(t) for t in tokens]
        ptrs = (c_void_p * n)(*[ctypes.cast(c_char_p(b), c_void_p).value for b in bufs])
        lens = (c_uint32 * n)(*[len(b) for b in bufs])
        flags = (c_uint32 * n)()
        for t in special_tokens:
            flags[t] = TOKEN_SPECIAL
        eos = list(eos_tokens)
        eos_arr = (c_int32 * max(1, len(eos)))(*eos)
        h = _lib.cg_vocab_new(n, ptrs, lens, flags, eos_arr if eos else None, len(eos))
        del bufs
        return cls(h)

    @property
    def size(self) -> int:
        return _lib.cg_vocab_size(self._h)

    def __len__(self) -> int:
        return self.size

    def token_bytes(self, token: int) -> bytes:
        """The exact bytes of a token (a special token's text)."""
        if not 0 <= token < self.size:
            raise CgramError(ERR_INVALID_ARGUMENT, f"token {token} is out of range (size {self.size})")
        n = c_size_t()
        p = _lib.cg_vocab_token_bytes(self._h, token, byref(n))
        return ctypes.string_at(p, n.value) if n.value else b""

    @property
    def eos_tokens(self) -> List[int]:
        n = _check(_lib.cg_vocab_eos_tokens(self._h, None, 0))
        out = (c_int32 * max(1, n))()
        _check(_lib.cg_vocab_eos_tokens(self._h, out, n))
        return list(out[:n])


class _CompileArgs:
    """A grammar's source and struct cg_compile_options, with the strings
    the options point to kept alive as long as this object."""

    def __init__(
        self,
        source: Union[str, bytes],
        kind: int = KIND_GBNF,
        *,
        root: Optional[str] = None,
        flags: int = 0,
        max_compile_ms: Optional[int] = None,
        max_states: Optional[int] = None,
        max_mask_steps: Optional[int] = None,
        json_max_whitespace: Optional[int] = None,
        json_indent: Optional[int] = None,
        json_item_separator: Optional[str] = None,
        json_key_separator: Optional[str] = None,
    ):
        self.source = source.encode() if isinstance(source, str) else bytes(source)
        self.options = _Options()
        _lib.cg_compile_options_init_size(byref(self.options), ctypes.sizeof(_Options))
        self.options.kind = kind
        self.options.flags = flags
        self._keep: List[bytes] = []
        if root is not None:
            self.options.root = self._c(root)
        for name, value in [
            ("max_compile_ms", max_compile_ms),
            ("max_states", max_states),
            ("max_mask_steps", max_mask_steps),
            ("json_max_whitespace", json_max_whitespace),
            ("json_indent", json_indent),
        ]:
            if value is not None:
                setattr(self.options, name, value)
        if json_item_separator is not None:
            self.options.json_item_separator = self._c(json_item_separator)
        if json_key_separator is not None:
            self.options.json_key_separator = self._c(json_key_separator)

    def _c(self, s: str) -> bytes:
        b = s.encode()
        self._keep.append(b)
        return b


class Grammar(_Owned):
    """A grammar compiled for one vocabulary: immutable, shared by matchers
    and threads.

    ``Grammar(vocab, source, kind, root=, flags=, max_compile_ms=,
    max_states=, max_mask_steps=, json_max_whitespace=, json_indent=,
    json_item_separator=, json_key_separator=)``: every field of
    ``cg_compile_options``; the class methods are shortcuts per kind."""

    _free = "cg_free"

    def __init__(self, vocab: Vocab, source: Union[str, bytes], kind: int = KIND_GBNF, **options):
        args = _CompileArgs(source, kind, **options)
        self._adopt(_lib.cg_compile(vocab._h, args.source, len(args.source), byref(args.options)), vocab)

    @classmethod
    def _from_handle(cls, handle: Optional[int], vocab: Vocab) -> "Grammar":
        grammar = cls.__new__(cls)
        grammar._adopt(handle, vocab)
        return grammar

    def _adopt(self, handle: Optional[int], vocab: Vocab) -> None:
        if not handle:
            raise _error()
        self._h = handle
        self.vocab = vocab

    @classmethod
    def gbnf(cls, vocab: Vocab, source: str, **options) -> "Grammar":
        return cls(vocab, source, KIND_GBNF, **options)

    @classmethod
    def json_schema(cls, vocab: Vocab, schema: Union[str, dict], **options) -> "Grammar":
        text = schema if isinstance(schema, str) else _json.dumps(schema)
        return cls(vocab, text, KIND_JSON_SCHEMA, **options)

    @classmethod
    def regex(cls, vocab: Vocab, pattern: str, **options) -> "Grammar":
        return cls(vocab, pattern, KIND_REGEX, **options)

    @classmethod
    def any_json(cls, vocab: Vocab, **options) -> "Grammar":
        return cls(vocab, "", KIND_ANY_JSON, **options)

    @property
    def vocab_size(self) -> int:
        return _lib.cg_grammar_vocab_size(self._h)

    @property
    def mask_words(self) -> int:
        return _lib.cg_mask_words(self._h)


TRIGGER_PATTERN = 0
TRIGGER_WORD = 1
TRIGGER_TOKEN = 2


def _trigger_array(patterns: Sequence[str], words: Sequence[str], tokens: Sequence[int]):
    """struct cg_trigger[] in the documented order, and the byte strings it
    points to (to be kept alive through the call)."""
    texts = [p.encode() for p in patterns] + [w.encode() for w in words]
    items = [(TRIGGER_PATTERN, t, 0) for t in texts[: len(patterns)]]
    items += [(TRIGGER_WORD, t, 0) for t in texts[len(patterns) :]]
    items += [(TRIGGER_TOKEN, None, int(t)) for t in tokens]
    array = (_Trigger * max(1, len(items)))(*[_Trigger(k, t, tok) for k, t, tok in items])
    return array, len(items), texts


class Triggers(_Owned):
    """The triggers of lazy grammars, compiled for one vocabulary:
    `patterns` (llama.cpp's trigger patterns: the grammar starts at the
    first capturing group that matched, or at the match), `words` (literal
    text) and `tokens` (ids). Their indices, as Matcher.triggered() gives
    them, run through the patterns, then the words, then the tokens.
    Immutable, shared by lazy matchers."""

    _free = "cg_triggers_free"

    def __init__(
        self,
        vocab: Vocab,
        *,
        patterns: Sequence[str] = (),
        words: Sequence[str] = (),
        tokens: Sequence[int] = (),
        _handle: Optional[int] = None,
    ):
        if _handle is None:
            array, n, _texts = _trigger_array(patterns, words, tokens)
            _handle = _lib.cg_triggers_new(vocab._h, array, n)
        if not _handle:
            raise _error()
        self._h = _handle
        self.vocab = vocab


class GrammarCache(_Owned):
    """Compiled grammars and triggers kept by what they were compiled from,
    within a budget of bytes (0: 256 MiB), the least recently used evicted
    first: a grammar asked for again costs a lookup. Thread-safe."""

    _free = "cg_grammar_cache_free"

    def __init__(self, budget_bytes: int = 0):
        self._h = _lib.cg_grammar_cache_new(budget_bytes)
        if not self._h:
            raise _error()

    def compile(
        self, vocab: Vocab, source: Union[str, bytes, dict], kind: int = KIND_GBNF, **options
    ) -> Grammar:
        """Grammar(vocab, source, kind, **options) through the cache (a dict
        source is a JSON Schema)."""
        if isinstance(source, dict):
            source, kind = _json.dumps(source), KIND_JSON_SCHEMA
        args = _CompileArgs(source, kind, **options)
        handle = _lib.cg_grammar_cache_compile(
            self._h, vocab._h, args.source, len(args.source), byref(args.options)
        )
        return Grammar._from_handle(handle, vocab)

    def triggers(
        self,
        vocab: Vocab,
        *,
        patterns: Sequence[str] = (),
        words: Sequence[str] = (),
        tokens: Sequence[int] = (),
    ) -> Triggers:
        """Triggers(vocab, ...) through the cache (which also keeps what
        their matchers learn)."""
        array, n, _texts = _trigger_array(patterns, words, tokens)
        handle = _lib.cg_grammar_cache_triggers(self._h, vocab._h, array, n)
        return Triggers(vocab, _handle=handle or 0)

    def set_budget(self, budget_bytes: int) -> None:
        _lib.cg_grammar_cache_set_budget(self._h, budget_bytes)

    def stats(self) -> dict:
        """hits, misses, evictions, entries, bytes, budget."""
        st = _CacheStats()
        st.struct_size = ctypes.sizeof(_CacheStats)
        _check(_lib.cg_grammar_cache_get_stats(self._h, byref(st)))
        return {name: getattr(st, name) for name, _ in _CacheStats._fields_[1:]}

    def forget_vocab(self, vocab: Vocab) -> None:
        """Drops the entries compiled for `vocab`."""
        _lib.cg_grammar_cache_forget_vocab(self._h, vocab._h)

    def clear(self) -> None:
        _lib.cg_grammar_cache_clear(self._h)


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A bitmask for `batch_size` sequences: int32, `ceil(vocab_size / 32)`
    words per row, every token allowed."""
    return np.full((batch_size, (vocab_size + 31) // 32), -1, dtype=np.int32)


class Matcher(_Owned):
    """The state of one sequence under a grammar: the allowed next tokens,
    and the tokens taken so far. One thread at a time."""

    _free = "cg_matcher_free"

    def __init__(self, grammar: Grammar, triggers: Optional["Triggers"] = None, _handle: Optional[int] = None):
        """A matcher at the grammar's start; with `triggers`, a lazy one
        (llama.cpp's lazy grammars): any token until a trigger fires, then
        the grammar, from where the trigger says it starts."""
        if _handle is not None:
            h = _handle
        elif triggers is not None:
            h = _lib.cg_matcher_new_lazy(grammar._h, triggers._h)
        else:
            h = _lib.cg_matcher_new(grammar._h)
        if not h:
            raise _error()
        self._h = h
        self.grammar = grammar
        self.triggers = triggers

    def fill_next_token_bitmask(self, bitmask: np.ndarray, index: int = 0) -> None:
        """Writes the allowed next tokens into row `index` of `bitmask`
        (int32 or uint32, C-contiguous, at least `grammar.mask_words`
        words per row), in place: no copy per step."""
        if bitmask.dtype not in (np.int32, np.uint32) or not bitmask.flags.c_contiguous:
            raise CgramError(ERR_INVALID_ARGUMENT, "the bitmask must be a C-contiguous int32 or uint32 array")
        row = bitmask.reshape(-1, bitmask.shape[-1])[index] if bitmask.ndim > 1 else bitmask
        _check(_lib.cg_fill_mask(self._h, row.ctypes.data, row.shape[0]))

    def accept_token(self, token: int) -> bool:
        """Advances on `token`; False (and nothing changes) if the grammar
        does not allow it there."""
        rc = _lib.cg_accept(self._h, token)
        if rc in (ERR_TOKEN_REJECTED, ERR_TERMINATED):
            return False
        _check(rc)
        return True

    def accept_bytes(self, data: Union[str, bytes]) -> bool:
        """Advances on raw text; False if the grammar does not allow it."""
        b = data.encode() if isinstance(data, str) else bytes(data)
        rc = _lib.cg_accept_bytes(self._h, b, len(b))
        if rc in (ERR_TOKEN_REJECTED, ERR_TERMINATED):
            return False
        _check(rc)
        return True

    def rollback(self, num_tokens: int = 1) -> None:
        _check(_lib.cg_rollback(self._h, num_tokens))

    def reset(self) -> None:
        _lib.cg_reset(self._h)

    def is_accepting(self) -> bool:
        """Whether the text so far is complete (end of sequence allowed)."""
        return _lib.cg_is_accepting(self._h) == 1

    def is_terminated(self) -> bool:
        """Whether end of sequence was accepted, or nothing can follow."""
        return _lib.cg_is_terminated(self._h) == 1

    def forced_tokens(self) -> List[int]:
        """The tokens the grammar forces next, in order (jump-forward)."""
        out = (c_int32 * 256)()
        n = _check(_lib.cg_forced_tokens(self._h, out, 256))
        return list(out[: min(n, 256)])

    def triggered(self) -> Optional[Tuple[int, int]]:
        """None while a lazy matcher awaits its trigger; once it constrains,
        (the index of the trigger that fired, in the Triggers' order; the
        byte offset in the output where the grammar started); (-1, 0) for a
        matcher that is not lazy."""
        index, start = c_int32(-1), c_size_t(0)
        if _check(_lib.cg_is_triggered(self._h, byref(index), byref(start))) == 0:
            return None
        return index.value, start.value

    def clone(self) -> "Matcher":
        return Matcher(self.grammar, self.triggers, _handle=_lib.cg_matcher_clone(self._h) or 0)


# The name XGrammar users know.
GrammarMatcher = Matcher


def _allowed(bitmask: np.ndarray, n: int) -> np.ndarray:
    """Per row, a bool per token id below `n`: allowed by the bitmask
    (ids past the vocabulary, a model's padding, are not)."""
    bits = np.unpackbits(bitmask.view(np.uint8), axis=-1, bitorder="little").view(bool)
    if bits.shape[-1] >= n:
        return bits[..., :n]
    pad = np.zeros(bits.shape[:-1] + (n - bits.shape[-1],), dtype=bool)
    return np.concatenate([bits, pad], axis=-1)


class LogitsProcessor:
    """Constrains generation in hosts that take a logits processor: called
    with the token ids so far and the next token's scores, it accepts the
    tokens generated since the last call and sets the scores of the tokens
    the grammar does not allow to -inf, in place, through the bitmask (no
    Python loop over the vocabulary).

    The shapes of both hosts: llama-cpp-python's ``logits_processor``
    (``input_ids`` a 1-D numpy array of the prompt and the output,
    ``scores`` a 1-D float array) and Hugging Face transformers'
    ``LogitsProcessor`` (2-D torch tensors, one row per sequence of the
    batch). The first call fixes where the prompt ends; use one processor
    per generation."""

    def __init__(self, grammar: Grammar):
        self.grammar = grammar
        self._matchers: List[Matcher] = []
        self._prompt = 0
        self._taken: List[int] = []
        self._mask: Optional[np.ndarray] = None

    def __call__(self, input_ids, scores):
        torch_scores = hasattr(scores, "masked_fill_")
        ids = input_ids.detach().cpu().numpy() if hasattr(input_ids, "detach") else np.asarray(input_ids)
        rows = ids.reshape(1, -1) if ids.ndim == 1 else ids
        if not self._matchers:
            self._matchers = [Matcher(self.grammar) for _ in range(rows.shape[0])]
            self._taken = [0] * rows.shape[0]
            self._prompt = rows.shape[1]
            self._mask = allocate_token_bitmask(rows.shape[0], self.grammar.vocab_size)
        for b, matcher in enumerate(self._matchers):
            for token in rows[b, self._prompt + self._taken[b]:]:
                if not matcher.accept_token(int(token)):
                    raise CgramError(ERR_TOKEN_REJECTED, f"token {int(token)} was generated where the grammar refuses it")
                self._taken[b] += 1
            matcher.fill_next_token_bitmask(self._mask, b)
        n = scores.shape[-1]
        allowed = _allowed(self._mask, n)
        if torch_scores:
            import torch

            keep = torch.from_numpy(allowed.reshape(scores.shape)).to(scores.device)
            return scores.masked_fill_(~keep, float("-inf"))
        out = np.asarray(scores)
        out[~allowed.reshape(out.shape)] = -np.inf
        return out
