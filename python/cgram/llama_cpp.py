"""llama-cpp-python on cgram: one call makes its grammar samplers cgram's.

::

    import cgram.llama_cpp
    cgram.llama_cpp.install()
    llm = llama_cpp.Llama("model.gguf")
    llm.create_chat_completion(messages, response_format={"type": "json_object",
                                                          "schema": schema})

After :func:`install`, every grammar llama-cpp-python hands to llama.cpp
(``LlamaGrammar.from_string`` / ``from_json_schema`` / ``from_file``, the
``grammar`` argument of ``create_completion`` and ``create_chat_completion``,
``response_format`` with a schema, the function-calling chat formats, lazy
grammars with trigger patterns) is constrained by cgram instead of
llama.cpp's grammar sampler. The grammar is the same GBNF text
llama-cpp-python would have given llama.cpp (its schema converter is
unchanged), so the output language is the same; what changes is the cost of
each token: llama-cpp-python places the grammar before top-k, where
llama.cpp's own grammar checks every one of the vocabulary's tokens at every
step.

How: llama-cpp-python calls its ``libllama`` through ctypes, so no preload
reaches it. :func:`install` replaces the two methods that create grammar
samplers (``llama_cpp._internals.LlamaSampler.add_grammar`` and
``add_grammar_lazy_patterns``) with ones that create cgram's llama.cpp
sampler (the adapter, ``libcgram_llama`` in this package) on the same
``libllama``: the adapter's ``llama_*`` calls are resolved in that library,
which :func:`install` makes globally visible first.

Grammars llama.cpp refuses too (a GBNF syntax error) raise
:class:`cgram.CgramError` instead of giving llama.cpp a NULL sampler. A
grammar cgram cannot take but llama.cpp may (a limit, an unsupported
construct) goes to llama.cpp's own sampler, with a warning on the ``cgram``
logger: installing cgram never makes a working request fail.

Versions: llama-cpp-python 0.3.16 to 0.3.x (tested: :data:`TESTED`). Another
version is refused with a :class:`RuntimeError` saying so, unless
``install(force=True)``; a ``libllama`` that lacks a function the adapter
calls is refused even then.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_void_p
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import ERR_INVALID_ARGUMENT, ERR_PARSE, CgramError, _declare, _lib, _Options

__all__ = ["install", "uninstall", "installed", "TESTED", "SUPPORTED"]

#: llama-cpp-python versions this module was run with, end to end
#: (scripts/llama-cpp-python-test.sh).
TESTED: Tuple[str, ...] = ("0.3.36",)
#: The versions install() accepts without force=True: [first, end).
SUPPORTED: Tuple[Tuple[int, int, int], Tuple[int, int, int]] = ((0, 3, 16), (0, 4, 0))

# cgram_llama.h: control tokens match grammar text by their text, as
# llama.cpp's own grammar sampler matches them.
_SPECIAL_AS_TEXT = 2

# The libllama functions the adapter calls (cgram_llama_abi.h), and the
# grammar sampler constructors llama-cpp-python's methods call.
_NEEDED = (
    "llama_sampler_init",
    "llama_token_to_piece",
    "llama_vocab_eos",
    "llama_vocab_eot",
    "llama_vocab_get_attr",
    "llama_vocab_get_text",
    "llama_vocab_is_eog",
    "llama_vocab_n_tokens",
    "llama_sampler_init_grammar",
    "llama_sampler_init_grammar_lazy_patterns",
)

_log = logging.getLogger("cgram")

_state: Dict[str, Any] = {}


def _adapter_path() -> Path:
    name = "libcgram_llama.dylib" if sys.platform == "darwin" else "libcgram_llama.so"
    return Path(__file__).resolve().parent / name


def _version_tuple(text: str) -> Tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _load_adapter(libllama: ctypes.CDLL) -> ctypes.CDLL:
    if sys.platform == "win32":
        raise RuntimeError(
            "cgram.llama_cpp is not supported on Windows yet: the adapter would need an import "
            "library of llama-cpp-python's llama.dll"
        )
    path = _adapter_path()
    if not path.exists():
        raise RuntimeError(
            f"this cgram package has no llama.cpp adapter ({path.name}): it was built without "
            "a C compiler; reinstall it with one (cc) on the PATH"
        )
    # The adapter's llama_* functions are resolved, when it is loaded, in
    # the global scope: make llama-cpp-python's libllama part of it (it
    # loaded it RTLD_LOCAL). RTLD_NOLOAD: the very library it loaded, never
    # a second copy.
    ctypes.CDLL(libllama._name, mode=os.RTLD_GLOBAL | os.RTLD_NOLOAD)
    lib = ctypes.CDLL(str(path))
    sigs = {
        "cgram_llama_sampler_init_lazy_ext": (
            [c_void_p, c_char_p, c_char_p, POINTER(c_char_p), c_size_t, c_int,
             POINTER(c_int32), c_size_t, c_uint32],
            c_void_p,
        ),
        "cgram_llama_sampler_init_ext": (
            [c_void_p, c_char_p, c_size_t, POINTER(_Options), c_void_p, c_size_t, c_uint32],
            c_void_p,
        ),
        "cgram_llama_last_error": ([], c_char_p),
        "cgram_llama_last_error_code": ([], c_int),
        "cgram_llama_last_error_in_triggers": ([], c_int),
        "cgram_llama_vocab_forget": ([c_void_p], None),
    }
    return _declare(lib, sigs)


def _cgram_sampler(
    adapter: ctypes.CDLL,
    vocab: int,
    grammar: Any,
    patterns: List[str],
    tokens: List[int],
    lazy: bool,
) -> Optional[int]:
    """A cgram sampler, None when cgram cannot take this grammar (then
    llama.cpp's own is used), CgramError when llama.cpp refuses it too."""
    source = grammar._grammar.encode("utf-8")
    root = grammar._root.encode("utf-8")
    if lazy:
        texts = (c_char_p * max(1, len(patterns)))(*[p.encode("utf-8") for p in patterns])
        ids = (c_int32 * max(1, len(tokens)))(*tokens)
        sampler = adapter.cgram_llama_sampler_init_lazy_ext(
            vocab, source, root, texts, len(patterns), 0, ids, len(tokens), _SPECIAL_AS_TEXT
        )
    else:
        options = _Options()
        _lib.cg_compile_options_init_size(byref(options), ctypes.sizeof(options))
        options.root = root
        sampler = adapter.cgram_llama_sampler_init_ext(
            vocab, source, len(source), byref(options), None, 0, _SPECIAL_AS_TEXT
        )
    if sampler:
        return sampler
    code = adapter.cgram_llama_last_error_code()
    message = adapter.cgram_llama_last_error().decode("utf-8", "replace")
    in_triggers = adapter.cgram_llama_last_error_in_triggers()
    if not in_triggers and code in (ERR_PARSE, ERR_INVALID_ARGUMENT):
        raise CgramError(code, message)
    _log.warning("%s; llama.cpp's own sampler gets this grammar instead", message)
    return None


def installed() -> bool:
    """True when install() has replaced llama-cpp-python's grammar samplers."""
    return bool(_state)


def install(*, force: bool = False) -> None:
    """Make llama-cpp-python's grammar samplers cgram's, from now on, in
    this process (models loaded before included). Calling it again does
    nothing. Raises RuntimeError for a llama-cpp-python version outside
    :data:`SUPPORTED` (unless force) or a libllama without a function the
    adapter needs."""
    if _state:
        return
    import llama_cpp
    from llama_cpp import _internals

    version = getattr(llama_cpp, "__version__", "unknown")
    first, end = SUPPORTED
    if not force and not (first <= _version_tuple(version) < end):
        raise RuntimeError(
            f"cgram.llama_cpp: llama-cpp-python {version} is not a version cgram knows "
            f"({'.'.join(map(str, first))} up to {'.'.join(map(str, end))}, tested "
            f"{', '.join(TESTED)}); install(force=True) tries anyway"
        )
    libllama = llama_cpp.llama_cpp._lib
    missing = [name for name in _NEEDED if not hasattr(libllama, name)]
    sampler_class = getattr(_internals, "LlamaSampler", None)
    if missing or sampler_class is None or not hasattr(sampler_class, "add_grammar"):
        what = ", ".join(missing) if missing else "llama_cpp._internals.LlamaSampler.add_grammar"
        raise RuntimeError(
            f"cgram.llama_cpp: llama-cpp-python {version} lacks {what}: another interface "
            "than the one cgram's adapter uses"
        )
    adapter = _load_adapter(libllama)
    chain_add = llama_cpp.llama_sampler_chain_add
    sampler_p = llama_cpp.llama_sampler_p_ctypes
    original_add = sampler_class.add_grammar
    original_lazy = getattr(sampler_class, "add_grammar_lazy_patterns", None)

    def vocab_of(model: Any) -> int:
        vocab = getattr(model, "vocab", None)
        return vocab if vocab is not None else llama_cpp.llama_model_get_vocab(model.model)

    def add(self: Any, sampler: int) -> None:
        chain_add(self.sampler, ctypes.cast(c_void_p(sampler), sampler_p))

    def add_grammar(self: Any, model: Any, grammar: Any) -> None:
        sampler = _cgram_sampler(adapter, vocab_of(model), grammar, [], [], False)
        if sampler is None:
            return original_add(self, model, grammar)
        add(self, sampler)

    def add_grammar_lazy_patterns(
        self: Any, model: Any, grammar: Any, trigger_patterns: List[str], trigger_tokens: List[int]
    ) -> None:
        sampler = _cgram_sampler(
            adapter, vocab_of(model), grammar, list(trigger_patterns), list(trigger_tokens), True
        )
        if sampler is None:
            return original_lazy(self, model, grammar, trigger_patterns, trigger_tokens)
        add(self, sampler)

    # The adapter keeps each model's cgram vocabulary for the life of the
    # process, keyed by the llama vocabulary's address: drop it when
    # llama-cpp-python frees the model, as the drop-in does in
    # llama_model_free. Once per process, and kept after uninstall() (a
    # model made while installed may be closed after).
    model_class = getattr(_internals, "LlamaModel", None)
    original_close = getattr(model_class, "close", None)
    if original_close is not None and not getattr(original_close, "_cgram_forgets", False):

        def close(self: Any) -> None:
            vocab = getattr(self, "vocab", None)
            if vocab:
                adapter.cgram_llama_vocab_forget(vocab)
            original_close(self)

        close._cgram_forgets = True  # type: ignore[attr-defined]
        close.__doc__ = original_close.__doc__
        model_class.close = close

    add_grammar.__doc__ = "cgram's grammar sampler (cgram.llama_cpp.install)."
    add_grammar_lazy_patterns.__doc__ = add_grammar.__doc__
    sampler_class.add_grammar = add_grammar
    if original_lazy is not None:
        sampler_class.add_grammar_lazy_patterns = add_grammar_lazy_patterns
    _state.update(
        sampler_class=sampler_class,
        add_grammar=original_add,
        add_grammar_lazy_patterns=original_lazy,
        adapter=adapter,
        version=version,
    )


def uninstall() -> None:
    """llama.cpp's own grammar samplers again, for samplers made from now on."""
    if not _state:
        return
    sampler_class = _state["sampler_class"]
    sampler_class.add_grammar = _state["add_grammar"]
    if _state["add_grammar_lazy_patterns"] is not None:
        sampler_class.add_grammar_lazy_patterns = _state["add_grammar_lazy_patterns"]
    _state.clear()
