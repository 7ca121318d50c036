#!/usr/bin/env python3
"""End to end: an unmodified llama-server with cgram's drop-in, driven by
the `openai` client as any OpenAI-compatible application would.

scripts/llama-server-e2e.sh builds and starts the server (127.0.0.1,
`--jinja` with the Qwen 2.5 chat template, whose tool calls are wrapped in
<tool_call>...</tool_call>, 4 slots) and runs this:

    python3 demo/server/e2e.py --base-url http://127.0.0.1:PORT --log SERVER.LOG [--quick]

Every output is validated: JSON against its schema with `jsonschema`
(formats checked), tool-call arguments against the tool's parameters, raw
grammar outputs by an equivalent Python regular expression. It checks:

  1. response_format json_schema for the demo schemas (demo/llama/schemas)
     and real tool schemas (demo/server/tools.json, from MaskBench's BFCL
     and Glaive files);
  2. a raw GBNF `grammar` on /v1/completions;
  3. tools with tool_choice "required" and "auto": "auto" is llama.cpp's
     lazy grammar (free text until the <tool_call> trigger); a few-shot
     history makes Gemma 3 270M (a base model that calls no tool on its
     own) write the trigger itself, and the server log must show cgram's
     line that the trigger fired; lazy grammars with triggers of each kind
     (pattern with a group, word) on /completion too;
  4. concurrent requests over the server's slots, and streaming;
  5. a bad grammar, a bad schema and a bad trigger pattern: an error
     response each, and the server still answers afterwards.

Prints one line per check and a summary; exit status 0 when all passed.
"""
import argparse
import concurrent.futures
import json
import os
import re
import sys
import time
import urllib.request

import jsonschema
from openai import BadRequestError, OpenAI

HERE = os.path.dirname(os.path.abspath(__file__))
# A 270M model loops inside strings ("S.S.S.S...") at temperature 0; these
# penalties let every JSON request here end within its max_tokens.
PENALTIES = dict(frequency_penalty=1.5, presence_penalty=0.5)
ROOT = os.path.dirname(os.path.dirname(HERE))

passed, failed = 0, 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(f"{'ok  ' if ok else 'FAIL'}: {what}{(' -- ' + detail) if detail and not ok else ''}", flush=True)
    return ok


# What llama.cpp's JSON Schema to GBNF conversion (common/json-schema-to-
# grammar.cpp, which llama-server runs before any grammar engine sees the
# schema) does not enforce: validating against these would test llama.cpp's
# converter, not the engine. Formats it does enforce are kept.
CONVERTED_FORMATS = {"date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"}


def as_llama_converts(schema):
    """`schema` without the keywords llama.cpp's converter drops."""
    if isinstance(schema, list):
        return [as_llama_converts(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k in ("uniqueItems", "multipleOf"):
            continue
        if k == "format" and v not in CONVERTED_FORMATS:
            continue
        if k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") and schema.get("type") == "number":
            continue
        out[k] = as_llama_converts(v)
    return out


def validate(schema, value):
    """None when `value` is valid for `schema` as llama-server converts it
    (formats checked), else why."""
    schema = as_llama_converts(schema)
    cls = jsonschema.validators.validator_for(schema)
    v = cls(schema, format_checker=cls.FORMAT_CHECKER)
    errors = sorted(v.iter_errors(value), key=lambda e: e.path)
    return "; ".join(e.message for e in errors[:3]) or None


def load_tools(path, n):
    with open(path, encoding="utf-8") as f:
        return json.load(f)[:n]


def demo_schemas():
    d = os.path.join(ROOT, "demo", "llama", "schemas")
    out = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".schema.json"):
            with open(os.path.join(d, name), encoding="utf-8") as f:
                out.append((name[: -len(".schema.json")], json.load(f)))
    return out


def json_request(client, name, schema, stream=False, max_tokens=400):
    """A response_format request; returns (finish_reason, content)."""
    messages = [
        {"role": "system", "content": "You answer with one JSON object and nothing else."},
        {"role": "user", "content": f"Give an example of {name} as JSON."},
    ]
    kw = dict(
        model="any",
        messages=messages,
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}},
        max_tokens=max_tokens,
        temperature=0,
        **PENALTIES,
    )
    if not stream:
        r = client.chat.completions.create(**kw)
        return r.choices[0].finish_reason, r.choices[0].message.content
    text, finish = "", None
    for chunk in client.chat.completions.create(stream=True, **kw):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    return finish, text


def check_json(label, schema, finish, content):
    if finish != "stop":
        return check(False, label, f"finish_reason {finish}: {content[:200]!r}")
    try:
        value = json.loads(content)
    except json.JSONDecodeError as e:
        return check(False, label, f"not JSON ({e}): {content[:200]!r}")
    why = validate(schema, value)
    return check(why is None, label, f"{why}: {content[:200]!r}")


def few_shot(tool):
    """A history in which the assistant called `tool` three times."""
    name = tool["function"]["name"]
    params = tool["function"]["parameters"]
    example = example_arguments(params)
    msgs = [{"role": "system", "content": "You are an assistant that calls tools."}]
    for k in range(3):
        call_id = f"call{k}"
        msgs += [
            {"role": "user", "content": f"Please run {name} (request {k + 1})."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function",
                     "function": {"name": name, "arguments": json.dumps(example)}}
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "done"},
            {"role": "assistant", "content": "Done."},
        ]
    msgs.append({"role": "user", "content": f"Please run {name} (request 4)."})
    return msgs


def example_arguments(params):
    """Simple valid arguments for a parameters schema (required ones)."""
    props = params.get("properties", {})
    out = {}
    for key in params.get("required", []):
        out[key] = example_value(props.get(key, {}))
    return out


def example_value(s):
    if not isinstance(s, dict):
        return "x"
    if "enum" in s and s["enum"]:
        return s["enum"][0]
    t = s.get("type")
    if isinstance(t, list):
        t = t[0]
    if t == "integer":
        return max(1, int(s.get("minimum", 1)))
    if t == "number":
        return max(1.5, float(s.get("minimum", 1.5)))
    if t == "boolean":
        return True
    if t == "array":
        return [example_value(s.get("items", {}))] if s.get("minItems", 0) > 0 else []
    if t == "object":
        return example_arguments(s)
    if s.get("format") == "date":
        return "2024-05-01"
    if s.get("format") == "date-time":
        return "2024-05-01T10:00:00Z"
    if s.get("format") == "email":
        return "a@example.com"
    if t == "string" or t is None:
        return "example"
    return None


def tool_request(client, tools, messages, choice, stream=False, max_tokens=300):
    # No penalties here: they would steer the model away from the
    # "<tool_call>" its history is full of.
    kw = dict(model="any", messages=messages, tools=tools, tool_choice=choice,
              parallel_tool_calls=False, max_tokens=max_tokens, temperature=0)
    if not stream:
        r = client.chat.completions.create(**kw)
        m = r.choices[0].message
        calls = [(c.function.name, c.function.arguments) for c in (m.tool_calls or [])]
        return r.choices[0].finish_reason, m.content, calls
    content, calls, finish = "", {}, None
    for chunk in client.chat.completions.create(stream=True, **kw):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            cur = calls.setdefault(tc.index, ["", ""])
            if tc.function and tc.function.name:
                cur[0] += tc.function.name
            if tc.function and tc.function.arguments:
                cur[1] += tc.function.arguments
        finish = chunk.choices[0].finish_reason or finish
    return finish, content, [tuple(calls[k]) for k in sorted(calls)]


def check_calls(label, tools, finish, content, calls, need_call):
    """Every call names a tool and has valid arguments; when the output ran
    out of tokens (the grammar allows call after call), the last call may be
    cut short and is not judged."""
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    if finish == "length" and calls:
        calls = calls[:-1]
        if need_call and not calls:
            return check(False, label, "the only call was cut short by max_tokens")
    if need_call and not calls:
        return check(False, label, f"no tool call (finish {finish}): {str(content)[:200]!r}")
    for name, args in calls:
        if name not in by_name:
            return check(False, label, f"unknown tool {name!r}")
        try:
            value = json.loads(args)
        except json.JSONDecodeError as e:
            return check(False, label, f"arguments are not JSON ({e}): {args[:200]!r}")
        why = validate(by_name[name], value)
        if why:
            return check(False, label, f"{name}: {why}: {args[:200]!r}")
    return check(True, label + (f" ({len(calls)} calls)" if calls else " (no call)"))


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def healthy(base):
    try:
        with urllib.request.urlopen(base + "/health", timeout=30) as r:
            return r.status == 200
    except Exception:
        return False


def log_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--log", required=True, help="the server's log file")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    base = args.base_url.rstrip("/")
    client = OpenAI(base_url=base + "/v1", api_key="none", timeout=600)
    catalog = load_tools(os.path.join(HERE, "tools.json"), 300)
    t0 = time.time()

    print("== response_format json_schema")
    n_tools = 12 if args.quick else 24
    cases = demo_schemas() + [(t["function"]["name"], t["function"]["parameters"]) for t in catalog[:n_tools]]
    for name, schema in cases:
        finish, content = json_request(client, name, schema)
        check_json(f"response_format {name}", schema, finish, content)

    print("== raw grammar on /v1/completions")
    gbnf = 'root ::= "[" item ("," item)* "]"\nitem ::= [a-z]{1,8}'
    r = client.completions.create(model="any", prompt="A list of fruits: ", max_tokens=60,
                                  temperature=0, extra_body={"grammar": gbnf})
    out = r.choices[0].text
    check(r.choices[0].finish_reason == "stop" and re.fullmatch(r"\[[a-z]{1,8}(,[a-z]{1,8})*\]", out) is not None,
          "grammar: a bracketed list", repr(out))

    print("== tools")
    tool = catalog[1]  # a Glaive tool with required string parameters
    for choice in ["required", "auto"]:
        finish, content, calls = tool_request(client, [tool], few_shot(tool), choice)
        check_calls(f"tool_choice {choice}: {tool['function']['name']}", [tool], finish, content, calls, True)
    several = catalog[: 6 if args.quick else 12]
    for t in several[:3] if args.quick else several[:6]:
        finish, content, calls = tool_request(client, several, few_shot(t), "auto")
        check_calls(f"tool_choice auto among {len(several)} tools: {t['function']['name']}",
                    several, finish, content, calls, True)
    log = log_text(args.log)
    fired = len(re.findall(r"cgram: lazy grammar triggered", log))
    check(fired >= 1, f"the server log shows lazy grammars that fired ({fired})",
          "no 'lazy grammar triggered' line in the log")

    print("== lazy grammars on /completion, with each kind of trigger")
    prompt = ("Q: weather in Berlin?\nA: <call>{\"city\": \"Berlin\"}</call>\n"
              "Q: weather in Tokyo?\nA: <call>{\"city\": \"Tokyo\"}</call>\n"
              "Q: weather in Paris?\nA:")
    grammar = 'root ::= "<call>{\\"city\\": \\"" [A-Za-z ]+ "\\"}</call>"'
    for kind, trigger in [("word", {"type": 1, "value": "<call>"}),
                          ("pattern with a group", {"type": 2, "value": "[\\s\\S]*?(<call>)"}),
                          ("full pattern", {"type": 3, "value": "[\\s\\S]*?(<call>)[\\s\\S]*"})]:
        status, body = post(base, "/completion", {
            "prompt": prompt, "n_predict": 40, "temperature": 0, "grammar": grammar,
            "grammar_lazy": True, "grammar_triggers": [trigger], "stop": ["\nQ:"]})
        text = body.get("content", "")
        m = re.search(r"<call>", text)
        ok = status == 200 and m is not None and re.fullmatch(
            r'<call>\{"city": "[A-Za-z ]+"\}</call>', text[m.start():].rstrip()) is not None
        check(ok, f"lazy {kind}: free text, then the grammar from the trigger", f"{status} {text!r}")

    print("== concurrent requests and streaming")
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for k in range(8):
            if k % 2 == 0:
                name, schema = cases[k % len(cases)]
                jobs.append(("json", name, schema, pool.submit(json_request, client, name, schema, k % 4 == 0)))
            else:
                t = catalog[k]
                jobs.append(("tool", t, None, pool.submit(tool_request, client, [t], few_shot(t), "required", k % 4 == 1)))
        for kind, a, b, fut in jobs:
            if kind == "json":
                finish, content = fut.result()
                check_json(f"concurrent response_format {a}", b, finish, content)
            else:
                finish, content, calls = fut.result()
                check_calls(f"concurrent tool call {a['function']['name']}", [a], finish, content, calls, True)
    finish, content, calls = tool_request(client, [tool], few_shot(tool), "auto", stream=True)
    check_calls("streamed tool call (auto: the lazy grammar)", [tool], finish, content, calls, True)

    print("== bad input gives errors, not crashes")
    status, body = post(base, "/completion", {"prompt": "x", "n_predict": 4, "grammar": "root ::= (\"a\""})
    check(status == 400, "a GBNF syntax error: 400", f"{status} {body}")
    try:
        client.chat.completions.create(model="any", messages=[{"role": "user", "content": "x"}], max_tokens=4,
                                       response_format={"type": "json_schema",
                                                        "json_schema": {"name": "x", "schema": {"type": 12}}})
        check(False, "an invalid JSON Schema: an error")
    except BadRequestError as e:
        check(True, f"an invalid JSON Schema: an error ({e.status_code})")
    except Exception as e:
        check(False, "an invalid JSON Schema: a 400 error", repr(e))
    status, body = post(base, "/completion", {
        "prompt": "x", "n_predict": 4, "grammar": "root ::= \"a\"", "grammar_lazy": True,
        "grammar_triggers": [{"type": 2, "value": "(unclosed"}]})
    check(status >= 400, "a trigger pattern std::regex rejects: an error", f"{status} {body}")
    check(healthy(base), "the server still answers")

    log = log_text(args.log)
    check("llama.cpp grammar samplers run on cgram" in log, "the log says cgram is active")
    fallbacks = re.findall(r"cgram: .*this grammar goes to llama.cpp's own sampler", log)
    check(not fallbacks, "no grammar fell back to llama.cpp's sampler", "; ".join(fallbacks[:3]))
    print(f"\n{passed} passed, {failed} failed in {time.time() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
