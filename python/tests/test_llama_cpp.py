"""cgram.llama_cpp under real llama-cpp-python and a real model.

Needs llama-cpp-python and a GGUF model (CGRAM_TEST_GGUF_MODEL: Gemma 3
270M in CI). scripts/llama-cpp-python-test.sh installs both and sets
CGRAM_REQUIRE_LLAMA_CPP=1, which makes their absence a failure instead of a
skip.
"""

import ctypes
import json
import os
import re

import pytest

import cgram

REQUIRED = os.environ.get("CGRAM_REQUIRE_LLAMA_CPP") == "1"
MODEL = os.environ.get("CGRAM_TEST_GGUF_MODEL", "")


def _skip_or_fail(why):
    if REQUIRED:
        pytest.fail(why)
    pytest.skip(why)


try:
    import llama_cpp
    from llama_cpp import _internals
except ImportError:  # pragma: no cover - depends on the environment
    llama_cpp = None

import cgram.llama_cpp as cgram_llama_cpp

PEOPLE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 4},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}

# Shapes the schema converter of llama-cpp-python turns into different
# GBNF: an enum, nested objects, numbers, a pattern, optional properties.
SCHEMAS = [
    PEOPLE,
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "enum": ["Paris", "Lyon", "Nice"]},
            "population": {"type": "number"},
            "mayor": {
                "type": "object",
                "properties": {
                    "first": {"type": "string", "maxLength": 20},
                    "last": {"type": "string", "maxLength": 20},
                },
                "required": ["first", "last"],
            },
        },
        "required": ["city", "population", "mayor"],
    },
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                "qty": {"type": "integer", "minimum": 1, "maximum": 99},
                "gift": {"type": "boolean"},
            },
            "required": ["sku", "qty"],
        },
        "minItems": 1,
        "maxItems": 3,
    },
]

LIST_GBNF = r"""
root ::= "(" num ("," ws num){0,4} ")"
num  ::= [1-9] [0-9]{0,3}
ws   ::= " "?
"""
LIST_RE = re.compile(r"\((?:[1-9][0-9]{0,3})(?:, ?[1-9][0-9]{0,3}){0,4}\)")


@pytest.fixture(scope="module")
def llm():
    if llama_cpp is None:
        _skip_or_fail("llama-cpp-python is not installed")
    if not MODEL or not os.path.exists(MODEL):
        _skip_or_fail("no model: set CGRAM_TEST_GGUF_MODEL to a GGUF file")
    model = llama_cpp.Llama(MODEL, n_ctx=2048, verbose=False, seed=7)
    yield model
    cgram_llama_cpp.uninstall()
    model.close()


@pytest.fixture
def on_cgram(llm):
    cgram_llama_cpp.install()
    yield
    cgram_llama_cpp.uninstall()


def _sampler_names(model, grammar):
    """The names of the samplers llama-cpp-python chains for a grammar."""
    chain = model._init_sampler(grammar=grammar)
    n = llama_cpp.llama_sampler_chain_n(chain.sampler)
    names = [llama_cpp.llama_sampler_name(llama_cpp.llama_sampler_chain_get(chain.sampler, i)) for i in range(n)]
    chain.close()
    return [name.decode() for name in names]


def _validate(instance, schema):
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - depends on the environment
        _skip_or_fail("jsonschema is not installed")
    jsonschema.validate(instance, schema)


def test_install_puts_cgram_in_the_chain(llm):
    grammar = llama_cpp.LlamaGrammar.from_string(LIST_GBNF)
    assert "grammar" in _sampler_names(llm, grammar)
    cgram_llama_cpp.install()
    try:
        assert cgram_llama_cpp.installed()
        names = _sampler_names(llm, grammar)
        assert "cgram" in names and "grammar" not in names
    finally:
        cgram_llama_cpp.uninstall()
    assert not cgram_llama_cpp.installed()
    assert "grammar" in _sampler_names(llm, grammar)


@pytest.mark.parametrize("schema", SCHEMAS, ids=["person", "city", "order"])
def test_response_format_schema_output_is_valid(llm, on_cgram, schema):
    out = llm.create_chat_completion(
        [{"role": "user", "content": "Write one example as JSON, following the schema: " + json.dumps(schema)}],
        response_format={"type": "json_object", "schema": schema},
        max_tokens=300,
        temperature=0.8,
    )
    choice = out["choices"][0]
    assert choice["finish_reason"] == "stop", choice
    _validate(json.loads(choice["message"]["content"]), schema)


def test_json_object_without_schema(llm):
    """Any JSON (llama-cpp-python's JSON grammar): the text llama.cpp's own
    sampler gives at temperature 0, and JSON when the model stops."""
    messages = [{"role": "user", "content": "Give me a small JSON object about a cat."}]
    kwargs = dict(response_format={"type": "json_object"}, max_tokens=120, temperature=0)
    own = llm.create_chat_completion(messages, **kwargs)["choices"][0]
    cgram_llama_cpp.install()
    try:
        ours = llm.create_chat_completion(messages, **kwargs)["choices"][0]
    finally:
        cgram_llama_cpp.uninstall()
    assert ours["message"]["content"] == own["message"]["content"]
    assert ours["finish_reason"] == own["finish_reason"]
    if ours["finish_reason"] == "stop":
        json.loads(ours["message"]["content"])


def test_gbnf_grammar_argument(llm, on_cgram):
    grammar = llama_cpp.LlamaGrammar.from_string(LIST_GBNF)
    for seed in range(3):
        out = llm.create_completion(
            "A list of numbers in parentheses:", grammar=grammar, max_tokens=60, temperature=1.0, seed=seed
        )
        choice = out["choices"][0]
        assert choice["finish_reason"] == "stop", choice
        assert LIST_RE.fullmatch(choice["text"]), choice["text"]


def test_same_greedy_output_as_llama_cpp_grammar(llm):
    """Exact masks: at temperature 0 the output is llama.cpp's own."""
    grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(PEOPLE))
    prompt = "A person, as JSON:\n"
    own = llm.create_completion(prompt, grammar=grammar, max_tokens=80, temperature=0)
    cgram_llama_cpp.install()
    try:
        ours = llm.create_completion(prompt, grammar=grammar, max_tokens=80, temperature=0)
    finally:
        cgram_llama_cpp.uninstall()
    assert ours["choices"][0]["text"] == own["choices"][0]["text"]


def test_bad_grammar_raises(llm, on_cgram):
    with pytest.raises(cgram.CgramError) as err:
        llm.create_completion("x", grammar=llama_cpp.LlamaGrammar.from_string("root ::= ("), max_tokens=4)
    assert err.value.code == cgram.ERR_PARSE


def test_lazy_patterns_run_on_cgram(llm, on_cgram):
    """llama.cpp's lazy grammar: free text until a trigger pattern matches,
    the grammar from the pattern's first group on."""
    grammar = llama_cpp.LlamaGrammar.from_string('root ::= "LIST: " list\n' + LIST_GBNF.replace("root", "list"))
    chain = _internals.LlamaSampler()
    chain.add_grammar_lazy_patterns(llm._model, grammar, [r"[\s\S]*?(LIST: )[\s\S]*"], [])
    chain.add_greedy()
    sampler = llama_cpp.llama_sampler_chain_get(chain.sampler, 0)
    assert llama_cpp.llama_sampler_name(sampler) == b"cgram"
    # Free text, then the trigger: from there on only the grammar.
    prompt = llm.tokenize(b"Some numbers. LIST: ")
    for token in prompt[1:]:
        llama_cpp.llama_sampler_accept(chain.sampler, token)
    llm.reset()
    llm.eval(prompt)
    text = b""
    for _ in range(40):
        token = chain.sample(llm._ctx, -1)
        if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
            break
        text += llm.detokenize([token])
        llm.eval([token])
    chain.close()
    assert LIST_RE.fullmatch(text.decode()), text


def test_unknown_version_is_refused(llm, monkeypatch):
    monkeypatch.setattr(llama_cpp, "__version__", "0.2.90")
    with pytest.raises(RuntimeError, match="not a version cgram knows"):
        cgram_llama_cpp.install()
    assert not cgram_llama_cpp.installed()
    cgram_llama_cpp.install(force=True)
    assert cgram_llama_cpp.installed()
    cgram_llama_cpp.uninstall()


def test_closing_a_model_forgets_its_vocabulary(llm):
    """The adapter's vocabulary cache drops a model llama-cpp-python
    closes (no entry per model load kept for the life of the process)."""
    cgram_llama_cpp.install()
    try:
        adapter = cgram_llama_cpp._state["adapter"]
        count = adapter.cgram_llama_vocab_cache_count
        count.restype, count.argtypes = ctypes.c_size_t, []
        grammar = llama_cpp.LlamaGrammar.from_string(LIST_GBNF)
        llm.create_completion("(", grammar=grammar, max_tokens=2)
        before = count()
        other = llama_cpp.Llama(MODEL, n_ctx=256, verbose=False)
        other.create_completion("(", grammar=grammar, max_tokens=2)
        assert count() == before + 1
        other.close()
        assert count() == before
    finally:
        cgram_llama_cpp.uninstall()
