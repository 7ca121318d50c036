//! The JSON options users ask for, through the C API with the real Llama 3
//! tokenizer: texts are tokenized with the `tokenizers` crate (as a host
//! would) and walked token by token with `cg_fill_mask` / `cg_accept`. A
//! text the options allow must pass every mask and end accepting; one they
//! rule out must be refused by a mask or fail to end.
//!
//! The tokenizer comes from `scripts/fetch-tokenizers.sh` (in
//! `$CGRAM_CACHE/tokenizers`, default `<repo>/.cache/tokenizers`).

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};

use cgram::ffi::*;

fn tokenizer_path() -> PathBuf {
    let dir = match std::env::var_os("CGRAM_CACHE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache"),
    };
    let path = dir.join("tokenizers/llama3/tokenizer.json");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/fetch-tokenizers.sh first",
        path.display()
    );
    path
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(cg_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn defaults() -> cg_compile_options {
    let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
    unsafe {
        cg_compile_options_init_size(o.as_mut_ptr(), std::mem::size_of::<cg_compile_options>())
    };
    unsafe { o.assume_init() }
}

struct Setup {
    vocab: *mut cg_vocab,
    tok: tokenizers::Tokenizer,
}

/// A compiled grammar, freed on drop.
struct Grammar(*mut cg_grammar);

impl Drop for Grammar {
    fn drop(&mut self) {
        unsafe { cg_free(self.0) };
    }
}

impl Setup {
    fn new() -> Setup {
        let path = tokenizer_path();
        let c = CString::new(path.to_str().unwrap()).unwrap();
        let vocab = unsafe { cg_vocab_from_tokenizer_json(c.as_ptr()) };
        assert!(!vocab.is_null(), "{}", last_error());
        let tok = tokenizers::Tokenizer::from_file(&path).unwrap();
        Setup { vocab, tok }
    }

    fn compile_with(&self, o: &cg_compile_options, source: &str) -> Result<Grammar, String> {
        let g = unsafe { cg_compile(self.vocab, source.as_ptr().cast(), source.len(), o) };
        if g.is_null() {
            Err(last_error())
        } else {
            Ok(Grammar(g))
        }
    }

    fn compile(&self, flags: u32, source: &str) -> Result<Grammar, String> {
        let mut o = defaults();
        o.kind = CG_KIND_JSON_SCHEMA;
        o.flags = flags;
        self.compile_with(&o, source)
    }

    /// Walks `text` through a new matcher of `g`: true when every token is
    /// allowed by its mask and the matcher accepts at the end.
    fn walk(&self, g: &Grammar, text: &str) -> bool {
        let g = g.0;
        let ids = self.tok.encode(text, false).unwrap().get_ids().to_vec();
        let words = unsafe { cg_mask_words(g) };
        let mut mask = vec![0u32; words];
        let m = unsafe { cg_matcher_new(g) };
        assert!(!m.is_null(), "{}", last_error());
        let mut ok = true;
        for id in ids {
            let rc = unsafe { cg_fill_mask(m, mask.as_mut_ptr(), words) };
            assert_eq!(rc, CG_OK, "{}", last_error());
            if mask[(id / 32) as usize] >> (id % 32) & 1 == 0 {
                ok = false;
                break;
            }
            let rc = unsafe { cg_accept(m, id as i32) };
            assert_eq!(
                rc, CG_OK,
                "the mask allowed token {id} but accept refused it"
            );
        }
        ok = ok && unsafe { cg_is_accepting(m) } == 1;
        unsafe { cg_matcher_free(m) };
        ok
    }

    fn expect(&self, g: &Grammar, what: &str, yes: &[&str], no: &[&str]) {
        for t in yes {
            assert!(self.walk(g, t), "{what}: should accept {t:?}");
        }
        for t in no {
            assert!(!self.walk(g, t), "{what}: should refuse {t:?}");
        }
    }

    fn check(&self, flags: u32, source: &str, yes: &[&str], no: &[&str]) {
        let g = self
            .compile(flags, source)
            .unwrap_or_else(|e| panic!("{source}: {e}"));
        self.expect(&g, source, yes, no);
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        unsafe { cg_vocab_free(self.vocab) };
    }
}

// ---------------------------------------------------------------------------
// CG_JSON_STRICT_INTEGERS

#[test]
fn strict_integers_are_plain_integers() {
    let s = Setup::new();
    let schema = r#"{"type":"object","properties":{
        "n":{"type":"integer","minimum":-5,"maximum":5000},
        "x":{"type":"number"},
        "c":{"const":7},
        "m":{"type":"number","multipleOf":5},
        "e":{"enum":[1,2.5]}}}"#;
    // Without the flag, every JSON spelling of an integer is an integer.
    s.check(
        0,
        schema,
        &[
            r#"{"n":12.0}"#,
            r#"{"n":1.2e1}"#,
            r#"{"c":7.0}"#,
            r#"{"m":10.0}"#,
        ],
        &[r#"{"n":12.5}"#],
    );
    s.check(
        CG_JSON_STRICT_INTEGERS,
        schema,
        &[
            r#"{"n":12}"#,
            r#"{"n":-5}"#,
            r#"{"n":0}"#,
            r#"{"n":5000}"#,
            r#"{"x":12.0}"#,
            r#"{"x":1.5e3}"#,
            r#"{"c":7}"#,
            r#"{"m":10}"#,
            r#"{"e":1}"#,
            r#"{"e":2.5}"#,
            r#"{"e":2.50}"#,
        ],
        &[
            r#"{"n":12.0}"#,
            r#"{"n":12.000}"#,
            r#"{"n":1.2e1}"#,
            r#"{"n":12e0}"#,
            r#"{"n":-5.0}"#,
            r#"{"n":5001}"#,
            r#"{"n":012}"#,
            r#"{"c":7.0}"#,
            r#"{"m":1e1}"#,
            r#"{"m":10.0}"#,
            r#"{"e":1.0}"#,
        ],
    );
    // Bare integers and integer arrays too.
    s.check(
        CG_JSON_STRICT_INTEGERS,
        r#"{"type":"array","items":{"type":"integer"}}"#,
        &["[1, 2, -3]", "[]", "[0]"],
        &["[1.0]", "[1e2]", "[1, 2.00]"],
    );
}

#[test]
fn json_flags_are_refused_on_other_kinds() {
    let s = Setup::new();
    for (kind, source) in [
        (CG_KIND_GBNF, "root ::= \"a\""),
        (CG_KIND_REGEX, "a"),
        (CG_KIND_ANY_JSON, ""),
    ] {
        let mut o = defaults();
        o.kind = kind;
        o.flags = CG_JSON_STRICT_INTEGERS;
        let e = s
            .compile_with(&o, source)
            .err()
            .expect("flag for the wrong kind");
        assert!(e.contains("do not apply"), "{e}");
        assert_eq!(cg_last_error_code(), CG_ERR_INVALID_ARGUMENT);
    }
    let e = s.compile(1 << 30, "{}").err().expect("unknown bit");
    assert!(e.contains("unknown bits"), "{e}");
}

// ---------------------------------------------------------------------------
// CG_JSON_ORDERED_PROPERTIES

#[test]
fn ordered_properties_follow_the_schema() {
    let s = Setup::new();
    let schema = r#"{"type":"object","properties":{
        "b":{"type":"integer"},"a":{"type":"string"},"c":{"type":"boolean"}},
        "required":["a","c"]}"#;
    let in_order = [
        r#"{"b":1,"a":"x","c":true}"#,
        r#"{"a":"x","c":true}"#,
        r#"{"a":"x","c":false,"extra":null}"#,
        r#"{ "b" : 1 , "a" : "x" , "c" : true }"#,
    ];
    let reordered = [
        r#"{"a":"x","b":1,"c":true}"#,
        r#"{"c":true,"a":"x"}"#,
        r#"{"a":"x","extra":null,"c":false}"#,
    ];
    // Any order without the flag.
    s.check(0, schema, &[in_order[0], reordered[0], reordered[1]], &[]);
    s.check(
        CG_JSON_ORDERED_PROPERTIES,
        schema,
        &in_order,
        &[
            reordered[0],
            reordered[1],
            reordered[2],
            // Listed properties at most once, required ones present.
            r#"{"b":1,"b":2,"a":"x","c":true}"#,
            r#"{"b":1,"c":true}"#,
            r#"{}"#,
        ],
    );
    // Optional only: the empty object, any subsequence in order; bounds on
    // the number of properties; additionalProperties false.
    s.check(
        CG_JSON_ORDERED_PROPERTIES,
        r#"{"type":"object","properties":{"x":{},"y":{},"z":{}},
            "additionalProperties":false,"minProperties":1,"maxProperties":2}"#,
        &[
            r#"{"x":1}"#,
            r#"{"z":1}"#,
            r#"{"x":1,"z":2}"#,
            r#"{"y":[],"z":{}}"#,
        ],
        &[
            "{}",
            r#"{"z":1,"x":2}"#,
            r#"{"x":1,"y":2,"z":3}"#,
            r#"{"w":1}"#,
        ],
    );
    // Nested objects through $ref keep their own order; with compact
    // output too.
    s.check(
        CG_JSON_ORDERED_PROPERTIES | CG_JSON_COMPACT,
        r##"{"$defs":{"p":{"type":"object","properties":{"y":{"type":"integer"},
            "x":{"type":"integer"}},"required":["x","y"]}},
            "type":"object","properties":{"to":{"$ref":"#/$defs/p"},
            "from":{"$ref":"#/$defs/p"}},"required":["from","to"]}"##,
        &[r#"{"to":{"y":1,"x":2},"from":{"y":3,"x":4}}"#],
        &[
            r#"{"from":{"y":3,"x":4},"to":{"y":1,"x":2}}"#,
            r#"{"to":{"x":2,"y":1},"from":{"y":3,"x":4}}"#,
            r#"{"to": {"y":1,"x":2},"from":{"y":3,"x":4}}"#,
        ],
    );
    // Larger objects (beyond the any-order set tracking) too.
    let props: Vec<String> = (0..20)
        .map(|i| format!(r#""p{i}":{{"type":"integer"}}"#))
        .collect();
    let schema = format!(
        r#"{{"type":"object","properties":{{{}}},"required":["p3","p17"]}}"#,
        props.join(",")
    );
    s.check(
        CG_JSON_ORDERED_PROPERTIES,
        &schema,
        &[
            r#"{"p0":0,"p3":3,"p9":9,"p17":17,"p19":19}"#,
            r#"{"p3":3,"p17":17}"#,
        ],
        &[
            r#"{"p17":17,"p3":3}"#,
            r#"{"p3":3,"p0":0,"p17":17}"#,
            r#"{"p3":3}"#,
        ],
    );
}

// ---------------------------------------------------------------------------
// Fixed formatting: json_indent, json_item_separator, json_key_separator

fn layout_options(
    kind: u32,
    indent: u32,
    item: Option<&CStr>,
    key: Option<&CStr>,
) -> cg_compile_options {
    let mut o = defaults();
    o.kind = kind;
    o.json_indent = indent;
    o.json_item_separator = item.map_or(std::ptr::null(), |s| s.as_ptr());
    o.json_key_separator = key.map_or(std::ptr::null(), |s| s.as_ptr());
    o
}

/// The texts Python's `json.dumps(value, indent=2)` writes are the only
/// ones allowed.
#[test]
fn indent_allows_exactly_one_layout() {
    let s = Setup::new();
    let schema = r#"{"type":"object","properties":{
        "name":{"type":"string"},
        "tags":{"type":"array","items":{"type":"string"}},
        "pos":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}}},
        "none":{"type":"object"}},"required":["name","tags"]}"#;
    let o = layout_options(CG_KIND_JSON_SCHEMA, 2, None, None);
    let g = s.compile_with(&o, schema).unwrap();
    let dumped = "{\n  \"name\": \"a b\",\n  \"tags\": [\n    \"x\",\n    \"y\"\n  ],\n  \
                  \"pos\": {\n    \"x\": 1,\n    \"y\": 2.5\n  },\n  \"none\": {}\n}";
    s.expect(
        &g,
        "indent 2",
        &[
            dumped,
            "{\n  \"name\": \"\",\n  \"tags\": []\n}",
            "{\n  \"tags\": [\n    \"q\"\n  ],\n  \"name\": \"n\"\n}",
        ],
        &[
            // Compact, or Python's one-line default.
            r#"{"name":"a b","tags":[]}"#,
            r#"{"name": "a b", "tags": []}"#,
            // A wrong indent, a trailing space, a space before the colon,
            // the empty array spread out, whitespace around the value.
            "{\n   \"name\": \"\",\n  \"tags\": []\n}",
            "{\n  \"name\": \"\", \n  \"tags\": []\n}",
            "{\n  \"name\" : \"\",\n  \"tags\": []\n}",
            "{\n  \"name\": \"\",\n  \"tags\": [\n  ]\n}",
            " {\n  \"name\": \"\",\n  \"tags\": []\n}",
            "{\n  \"name\": \"\",\n  \"tags\": []\n}\n",
            // Nested members indented one level only.
            "{\n  \"name\": \"\",\n  \"tags\": [\n  \"x\"\n  ]\n}",
        ],
    );
    drop(g);

    // One line with Python's default separators when only a separator is
    // given; compact separators.
    let o = layout_options(CG_KIND_JSON_SCHEMA, 0, Some(c", "), None);
    let g = s.compile_with(&o, schema).unwrap();
    s.expect(
        &g,
        "one line",
        &[r#"{"name": "a", "tags": ["x", "y"], "pos": {"x": 1}}"#],
        &[
            r#"{"name":"a","tags":["x","y"]}"#,
            r#"{"name": "a",  "tags": []}"#,
            r#"{ "name": "a", "tags": []}"#,
        ],
    );
    drop(g);
    let o = layout_options(CG_KIND_JSON_SCHEMA, 4, Some(c","), Some(c":"));
    let g = s.compile_with(&o, schema).unwrap();
    s.expect(
        &g,
        "indent 4, compact separators",
        &["{\n    \"name\":\"a\",\n    \"tags\":[\n        \"x\"\n    ]\n}"],
        &["{\n    \"name\": \"a\",\n    \"tags\":[]\n}"],
    );
    drop(g);

    // Any JSON, recursive: indentation follows the depth.
    let o = layout_options(CG_KIND_ANY_JSON, 1, None, None);
    let g = s.compile_with(&o, "").unwrap();
    s.expect(
        &g,
        "any JSON, indent 1",
        &[
            "[\n [\n  [\n   {\n    \"a\": null\n   }\n  ]\n ],\n 3\n]",
            "{}",
            "[]",
            "7",
        ],
        &["[\n [\n [\n ]\n ]\n]", "[ ]", "[\n 1,\n  2\n]"],
    );
    drop(g);
}

/// Recursive schemas (a tree through `$ref`) get their indentation per
/// depth, and past the depth limit only empty containers.
#[test]
fn indent_with_a_recursive_schema() {
    let s = Setup::new();
    let schema = r##"{"$defs":{"node":{"type":"object","properties":{
        "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
        "required":["v"]}},"$ref":"#/$defs/node"}"##;
    let o = layout_options(CG_KIND_JSON_SCHEMA, 2, None, None);
    let g = s.compile_with(&o, schema).unwrap();
    let tree =
        "{\n  \"v\": 1,\n  \"kids\": [\n    {\n      \"v\": 2,\n      \"kids\": []\n    },\n    \
                {\n      \"v\": 3\n    }\n  ]\n}";
    s.expect(
        &g,
        "tree",
        &[tree],
        &[&tree.replace("      \"v\": 3", "    \"v\": 3")],
    );
    // 15 levels of kids (31 nested containers) fit; 16 (33) do not.
    let nest = |levels: usize| {
        let mut t = String::from("{\"v\": 0}");
        for _ in 0..levels {
            t = format!("{{\"v\": 0, \"kids\": [{t}]}}");
        }
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        python_dumps(&v, 2, 0)
    };
    s.expect(&g, "deep tree", &[&nest(15)], &[&nest(16)]);
}

/// Python's `json.dumps(v, indent=n)` for the values of these tests
/// (objects keep their order).
fn python_dumps(v: &serde_json::Value, n: usize, depth: usize) -> String {
    let pad = |d: usize| format!("\n{}", " ".repeat(n * d));
    match v {
        serde_json::Value::Array(a) if !a.is_empty() => {
            let items: Vec<String> = a.iter().map(|x| python_dumps(x, n, depth + 1)).collect();
            format!(
                "[{}{}{}]",
                pad(depth + 1),
                items.join(&format!(",{}", pad(depth + 1))),
                pad(depth)
            )
        }
        serde_json::Value::Object(m) if !m.is_empty() => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, x)| {
                    format!(
                        "{}: {}",
                        serde_json::to_string(k).unwrap(),
                        python_dumps(x, n, depth + 1)
                    )
                })
                .collect();
            format!(
                "{{{}{}{}}}",
                pad(depth + 1),
                items.join(&format!(",{}", pad(depth + 1))),
                pad(depth)
            )
        }
        other => other.to_string(),
    }
}

#[test]
fn fixed_formatting_errors() {
    let s = Setup::new();
    let bad = |o: &cg_compile_options, source: &str, want: &str| {
        let e = s.compile_with(o, source).err().expect("must fail");
        assert!(e.contains(want), "{e}");
        assert_eq!(cg_last_error_code(), CG_ERR_INVALID_ARGUMENT);
    };
    bad(
        &layout_options(CG_KIND_JSON_SCHEMA, 17, None, None),
        "{}",
        "json_indent 17",
    );
    bad(
        &layout_options(CG_KIND_JSON_SCHEMA, 0, Some(c";"), None),
        "{}",
        "json_item_separator",
    );
    bad(
        &layout_options(CG_KIND_JSON_SCHEMA, 0, None, Some(c" = ")),
        "{}",
        "json_key_separator",
    );
    bad(
        &layout_options(CG_KIND_JSON_SCHEMA, 0, None, Some(c"::")),
        "{}",
        "json_key_separator",
    );
    bad(
        &layout_options(CG_KIND_GBNF, 2, None, None),
        "root ::= \"a\"",
        "do not apply",
    );
    bad(
        &layout_options(CG_KIND_REGEX, 0, Some(c","), None),
        "a",
        "do not apply",
    );
    let mut o = layout_options(CG_KIND_JSON_SCHEMA, 2, None, None);
    o.flags = CG_JSON_COMPACT;
    bad(&o, "{}", "exclude");
    let mut o = layout_options(CG_KIND_ANY_JSON, 2, None, None);
    o.json_max_whitespace = 4;
    bad(&o, "", "exclude");

    // An older caller (a struct_size without the new fields) gets no fixed
    // formatting, whatever lies past its struct.
    let mut o = layout_options(CG_KIND_JSON_SCHEMA, 2, Some(c";"), None);
    o.struct_size = std::mem::offset_of!(cg_compile_options, json_indent) as u32;
    let g = s.compile_with(&o, r#"{"type":"array"}"#).unwrap();
    s.expect(&g, "old struct", &["[ 1 , 2 ]", "[]"], &[]);
}

// ---------------------------------------------------------------------------
// CG_JSON_LENIENT

/// The (keyword, pointer, reason) triples a grammar reports.
fn dropped(g: &Grammar) -> Vec<(String, String, String)> {
    let n = unsafe { cg_grammar_dropped_count(g.0) };
    assert!(n >= 0, "{}", last_error());
    (0..n as usize)
        .map(|i| {
            let mut pointer = std::ptr::null();
            let mut reason = std::ptr::null();
            let kw = unsafe { cg_grammar_dropped(g.0, i, &mut pointer, &mut reason) };
            assert!(!kw.is_null() && !pointer.is_null() && !reason.is_null());
            let s = |p: *const std::ffi::c_char| {
                unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
            };
            (s(kw), s(pointer), s(reason))
        })
        .collect()
}

fn keywords(g: &Grammar) -> Vec<(String, String)> {
    dropped(g).into_iter().map(|(k, p, _)| (k, p)).collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn lenient_leaves_out_what_no_automaton_enforces() {
    let s = Setup::new();
    let schema = r#"{"type":"object","properties":{
        "tags":{"type":"array","uniqueItems":true,"items":{"type":"string"}},
        "re":{"type":"string","format":"regex"},
        "n":{"type":"integer"}},"required":["n"]}"#;
    // Strict (the default): refused, and the message says where.
    let e = s.compile(0, schema).err().expect("strict refuses");
    assert!(e.contains("uniqueItems") || e.contains("format"), "{e}");
    assert_eq!(cg_last_error_code(), CG_ERR_UNSUPPORTED);

    let g = s.compile(CG_JSON_LENIENT, schema).unwrap();
    let mut got = keywords(&g);
    got.sort();
    assert_eq!(
        got,
        pairs(&[
            ("format", "/properties/re"),
            ("uniqueItems", "/properties/tags")
        ])
    );
    let reasons: Vec<String> = dropped(&g).into_iter().map(|d| d.2).collect();
    assert!(
        reasons.iter().any(|r| r.contains("finite automaton")),
        "{reasons:?}"
    );
    // Widened where the keywords were, exact elsewhere.
    s.expect(
        &g,
        "lenient",
        &[
            r#"{"n":1,"tags":["a","a"],"re":"(unclosed"}"#,
            r#"{"n":1,"tags":["a","b"],"re":"^a+$"}"#,
        ],
        &[
            r#"{"tags":["a"]}"#,
            r#"{"n":1,"tags":[1]}"#,
            r#"{"n":1,"re":2}"#,
        ],
    );
    // Other compiles report nothing.
    let g = s.compile(CG_JSON_LENIENT, r#"{"type":"integer"}"#).unwrap();
    assert_eq!(unsafe { cg_grammar_dropped_count(g.0) }, 0);
    let g = s.compile(0, r#"{"type":"integer"}"#).unwrap();
    assert_eq!(unsafe { cg_grammar_dropped_count(g.0) }, 0);
    assert!(
        unsafe { cg_grammar_dropped(g.0, 0, std::ptr::null_mut(), std::ptr::null_mut()) }.is_null()
    );
    assert!(last_error().contains("out of range"), "{}", last_error());
    assert_eq!(
        unsafe { cg_grammar_dropped_count(std::ptr::null()) },
        CG_ERR_INVALID_ARGUMENT
    );
}

/// Leaving a keyword out under a negation would narrow: the negation is
/// left out instead, so every instance stays allowed.
#[test]
fn lenient_never_narrows_under_a_negation() {
    let s = Setup::new();
    // not(format regex): the valid instances are the strings that are not
    // regexes ("(" among them). Dropping the format inside would make the
    // negation refuse every string.
    let g = s
        .compile(
            CG_JSON_LENIENT,
            r#"{"type":"string","not":{"format":"regex"}}"#,
        )
        .unwrap();
    assert_eq!(keywords(&g), pairs(&[("format", "/not"), ("not", "")]));
    s.expect(&g, "not format", &[r#""(""#, r#""abc""#], &["1"]);

    // A negated uniqueItems cannot be expressed: the `not` goes.
    let g = s
        .compile(
            CG_JSON_LENIENT,
            r#"{"type":"array","not":{"uniqueItems":true}}"#,
        )
        .unwrap();
    assert_eq!(keywords(&g), pairs(&[("not", "")]));
    s.expect(&g, "not unique", &["[1, 1]", "[1, 2]"], &["{}"]);

    // oneOf whose branches overlap where the exclusion is not expressible:
    // both branches' instances stay allowed.
    let g = s
        .compile(
            CG_JSON_LENIENT,
            r#"{"oneOf":[{"type":"array","uniqueItems":true,"items":{"type":"object"}},
                {"type":"array","maxItems":1}]}"#,
        )
        .unwrap();
    let kws: Vec<String> = keywords(&g).into_iter().map(|k| k.0).collect();
    assert!(kws.contains(&"oneOf".to_string()), "{kws:?}");
    s.expect(&g, "oneOf", &["[{}, {}]", "[{}]", "[1]", "[]"], &["[1, 2]"]);

    // Negated properties: a widened property schema under `not` is not
    // negated either (here: not {re: not-a-regex... }).
    let g = s
        .compile(
            CG_JSON_LENIENT,
            r#"{"type":"object","not":{"properties":{"re":{"format":"regex"}},"required":["re"]}}"#,
        )
        .unwrap();
    s.expect(
        &g,
        "not properties",
        &[r#"{"re":"("}"#, r#"{"re":"a"}"#, "{}"],
        &[],
    );
}

#[test]
fn lenient_still_refuses_what_it_must() {
    let s = Setup::new();
    // Unsatisfiable stays an error.
    let e = s
        .compile(
            CG_JSON_LENIENT,
            r#"{"allOf":[{"type":"string"},{"type":"integer"}]}"#,
        )
        .err()
        .expect("unsatisfiable");
    assert!(e.contains("unsatisfiable"), "{e}");
    // A reference outside the document is left out (any value there).
    let g = s
        .compile(
            CG_JSON_LENIENT,
            r#"{"type":"object","properties":{"x":{"$ref":"https://example.com/x.json"}}}"#,
        )
        .unwrap();
    assert_eq!(keywords(&g), pairs(&[("$ref", "/properties/x")]));
    s.expect(&g, "external ref", &[r#"{"x":[1,{"y":null}]}"#], &["[]"]);
    // A multipleOf whose automaton is too large: left out, bounds kept.
    let g = s
        .compile(
            CG_JSON_LENIENT,
            r#"{"type":"number","multipleOf":0.123456789,"minimum":0}"#,
        )
        .unwrap();
    assert_eq!(keywords(&g), pairs(&[("multipleOf", "")]));
    s.expect(&g, "multipleOf", &["0.5", "0.246913578"], &["-1"]);
    // A pattern construct no automaton matches (a backreference).
    let g = s
        .compile(
            CG_JSON_LENIENT,
            r#"{"type":"object","properties":{"w":{"type":"string","pattern":"^(a+)b\\1$"}}}"#,
        )
        .unwrap();
    assert_eq!(keywords(&g), pairs(&[("pattern", "/properties/w")]));
    s.expect(
        &g,
        "pattern",
        &[r#"{"w":"aabaa"}"#, r#"{"w":"x"}"#],
        &[r#"{"w":1}"#],
    );
    // More negated additionalProperties on one object than the states
    // track (6): only the first ones are enforced.
    let schema = r#"{"type":"object","allOf":[
        {"not":{"properties":{"a":{}},"additionalProperties":false}},
        {"not":{"properties":{"b":{}},"additionalProperties":false}},
        {"not":{"properties":{"c":{}},"additionalProperties":false}},
        {"not":{"properties":{"d":{}},"additionalProperties":false}},
        {"not":{"properties":{"e":{}},"additionalProperties":false}},
        {"not":{"properties":{"f":{}},"additionalProperties":false}},
        {"not":{"properties":{"g":{}},"additionalProperties":false}}]}"#;
    assert!(s.compile(0, schema).is_err());
    let g = s.compile(CG_JSON_LENIENT, schema).unwrap();
    assert_eq!(keywords(&g), pairs(&[("not", "")]));
    s.expect(
        &g,
        "seven needs",
        &[r#"{"a":1,"b":2}"#, r#"{"h":1}"#],
        &["{}"],
    );
    // Not for other kinds.
    let mut o = defaults();
    o.kind = CG_KIND_ANY_JSON;
    o.flags = CG_JSON_LENIENT;
    assert!(s.compile_with(&o, "").is_err());
}

// ---------------------------------------------------------------------------
// json_documents

fn documents_options(documents: Option<&CStr>) -> cg_compile_options {
    let mut o = defaults();
    o.kind = CG_KIND_JSON_SCHEMA;
    o.json_documents = documents.map_or(std::ptr::null(), CStr::as_ptr);
    o
}

/// Documents a validator's registry would hold: a draft-7 document with
/// its own definitions and a relative reference to a sibling document, a
/// recursive document under a URN, and one that refers back to the
/// schema.
const DOCUMENTS: &str = r##"{
    "http://example.com/schemas/address.json": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "street": {"type": "string"},
            "zip": {"$ref": "#/definitions/zip"},
            "country": {"$ref": "countries.json#/$defs/code"}
        },
        "required": ["street", "zip"],
        "additionalProperties": false,
        "definitions": {
            "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
            "short": {"$ref": "#/definitions/zip", "maxLength": 2}
        }
    },
    "http://example.com/schemas/countries.json": {
        "$defs": {"code": {"enum": ["FR", "DE"]}}
    },
    "urn:example:tree": {
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#"}}
        },
        "required": ["value"],
        "additionalProperties": false
    },
    "http://example.com/schemas/back.json": {
        "anyOf": [{"type": "null"}, {"$ref": "http://example.com/root.json"}]
    }
}"##;

#[test]
fn documents_are_reached_by_ref() {
    let s = Setup::new();
    let docs = CString::new(DOCUMENTS).unwrap();
    let o = documents_options(Some(&docs));
    let schema = r#"{"type": "object",
        "properties": {
            "home": {"$ref": "http://example.com/schemas/address.json"},
            "tree": {"$ref": "urn:example:tree"},
            "zip": {"$ref": "http://example.com/schemas/address.json#/definitions/short"}
        },
        "additionalProperties": false}"#;
    let g = s.compile_with(&o, schema).unwrap_or_else(|e| panic!("{e}"));
    s.expect(
        &g,
        "documents",
        &[
            r#"{"home": {"street": "Main St", "zip": "12345"}}"#,
            r#"{"home": {"street": "x", "zip": "00000", "country": "FR"}}"#,
            r#"{"tree": {"value": 1, "children": [{"value": 2, "children": []}]}}"#,
            // Draft 7 (the document's $schema): a $ref hides maxLength.
            r#"{"zip": "12345"}"#,
        ],
        &[
            r#"{"home": {"street": "Main St"}}"#,
            r#"{"home": {"street": "x", "zip": "1234"}}"#,
            r#"{"home": {"street": "x", "zip": "12345", "country": "US"}}"#,
            r#"{"home": {"street": "x", "zip": "12345", "extra": 1}}"#,
            r#"{"tree": {"value": 1.5}}"#,
            r#"{"tree": {"value": 1, "children": [{"children": []}]}}"#,
            r#"{"zip": "1"}"#,
        ],
    );

    // A document refers back to the schema (by the schema's $id):
    // recursion across documents.
    let schema = r#"{"$id": "http://example.com/root.json", "type": "object",
        "properties": {"next": {"$ref": "schemas/back.json"}, "n": {"type": "integer"}},
        "required": ["n"], "additionalProperties": false}"#;
    let g = s.compile_with(&o, schema).unwrap_or_else(|e| panic!("{e}"));
    s.expect(
        &g,
        "back",
        &[
            r#"{"n": 1}"#,
            r#"{"n": 1, "next": null}"#,
            r#"{"n": 1, "next": {"n": 2, "next": {"n": 3}}}"#,
        ],
        &[r#"{"n": 1, "next": {}}"#, r#"{"n": 1, "next": {"n": "2"}}"#],
    );
}

#[test]
fn documents_errors() {
    let s = Setup::new();
    let schema = r#"{"$ref": "http://example.com/a.json"}"#;
    let fails = |docs: &CStr, want: &str, code: i32| {
        let e = s
            .compile_with(&documents_options(Some(docs)), schema)
            .err()
            .unwrap_or_else(|| panic!("{docs:?} must fail"));
        assert!(e.contains(want), "{docs:?}: {e}");
        assert!(e.contains("json_documents"), "{docs:?}: {e}");
        assert_eq!(cg_last_error_code(), code, "{docs:?}: {e}");
    };
    fails(
        cr#"{"http://example.com/a.json": "#,
        "not valid JSON",
        CG_ERR_PARSE,
    );
    fails(c"[1, 2]", "must be a JSON object", CG_ERR_INVALID_ARGUMENT);
    fails(
        cr#"{"a.json": {"type": "integer"}}"#,
        "'a.json' is not an absolute URI",
        CG_ERR_INVALID_ARGUMENT,
    );
    fails(
        cr#"{"http://example.com/a.json#/x": {}}"#,
        "has a fragment",
        CG_ERR_INVALID_ARGUMENT,
    );
    fails(
        cr#"{"http://example.com/a.json": 5}"#,
        "is not a schema",
        CG_ERR_INVALID_ARGUMENT,
    );
    fails(c"\xff", "UTF-8", CG_ERR_INVALID_ARGUMENT);

    // A reference to a document not given: today's refusal.
    let other = cr#"{"http://example.com/b.json": {"type": "integer"}}"#;
    let e = s
        .compile_with(&documents_options(Some(other)), schema)
        .err()
        .unwrap();
    assert!(e.contains("points outside the document"), "{e}");
    assert_eq!(cg_last_error_code(), CG_ERR_UNSUPPORTED);
    // Metaschemas are documents like any other: refused unless given.
    let e = s
        .compile_with(
            &documents_options(Some(other)),
            r#"{"$ref": "https://json-schema.org/draft/2020-12/schema"}"#,
        )
        .err()
        .unwrap();
    assert!(e.contains("points outside the document"), "{e}");

    // An error inside a document names where it is.
    let broken =
        cr##"{"http://example.com/a.json": {"$defs": {"x": {"type": 5}}, "$ref": "#/$defs/x"}}"##;
    let e = s
        .compile_with(&documents_options(Some(broken)), schema)
        .err()
        .unwrap();
    assert!(e.contains("http://example.com/a.json#/$defs/x"), "{e}");

    // Only JSON Schema takes documents.
    for (kind, source) in [
        (CG_KIND_GBNF, "root ::= \"a\""),
        (CG_KIND_REGEX, "a"),
        (CG_KIND_ANY_JSON, ""),
    ] {
        let mut o = documents_options(Some(other));
        o.kind = kind;
        let e = s.compile_with(&o, source).err().unwrap();
        assert!(e.contains("json_documents does not apply"), "{e}");
        assert_eq!(cg_last_error_code(), CG_ERR_INVALID_ARGUMENT);
    }

    // The documents count with the source against the source size limit.
    let mut big = String::from(r#"{"http://example.com/a.json": {"type": "integer"}"#);
    big.push_str(&" ".repeat(cgram::limits::MAX_SOURCE_BYTES - big.len()));
    big.push('}');
    let big = CString::new(big).unwrap();
    let e = s
        .compile_with(&documents_options(Some(&big)), schema)
        .err()
        .unwrap();
    assert!(e.contains("json_documents"), "{e}");
    assert_eq!(cg_last_error_code(), CG_ERR_LIMIT);

    // Nothing is left behind: the same options with good documents work,
    // and an older caller (a struct_size without json_documents) has
    // none, whatever lies past its struct.
    let good = cr#"{"http://example.com/a.json": {"type": "integer"}}"#;
    let g = s
        .compile_with(&documents_options(Some(good)), schema)
        .unwrap();
    s.expect(&g, "good", &["12", "-3"], &["1.5", "\"x\""]);
    let mut o = documents_options(Some(good));
    o.struct_size = std::mem::offset_of!(cg_compile_options, json_documents) as u32;
    let e = s.compile_with(&o, schema).err().unwrap();
    assert!(e.contains("points outside the document"), "{e}");
}
