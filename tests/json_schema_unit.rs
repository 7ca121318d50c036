//! Focused tests of the JSON Schema front end, keyword by keyword: each
//! schema is compiled for a byte-level vocabulary and instances are walked
//! byte by byte (`accept_bytes`) and checked for acceptance.

use std::sync::{Arc, OnceLock};

use cgram::source::{compile, CompileOptions, Kind, FLAG_JSON_COMPACT};
use cgram::{CompiledGrammar, Engine, ErrorKind, Matcher, Vocab, TOKEN_SPECIAL};

fn vocab() -> Arc<Engine> {
    static V: OnceLock<Arc<Engine>> = OnceLock::new();
    V.get_or_init(|| {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let mut flags = vec![0u32; 256];
        tokens.push(b"<eos>".to_vec());
        flags.push(TOKEN_SPECIAL);
        Engine::new(Vocab::new(tokens, flags, vec![256]).unwrap())
    })
    .clone()
}

fn compile_with(schema: &str, flags: u32) -> cgram::Result<Arc<CompiledGrammar>> {
    compile(
        &vocab(),
        schema.as_bytes(),
        &CompileOptions {
            kind: Kind::JsonSchema,
            flags,
            ..Default::default()
        },
    )
}

fn grammar(schema: &str) -> Arc<CompiledGrammar> {
    compile_with(schema, 0).unwrap_or_else(|e| panic!("schema {schema} failed: {e}"))
}

fn accepts(g: &Arc<CompiledGrammar>, text: &str) -> bool {
    let mut m = Matcher::new(g.clone());
    m.accept_bytes(text.as_bytes()).is_ok() && m.is_accepting()
}

/// Compiles `schema`, then checks every `yes` text is accepted and every
/// `no` text rejected.
fn check(schema: &str, yes: &[&str], no: &[&str]) {
    let g = grammar(schema);
    for t in yes {
        assert!(accepts(&g, t), "schema {schema}: should accept {t}");
    }
    for t in no {
        assert!(!accepts(&g, t), "schema {schema}: should reject {t}");
    }
}

fn refused(schema: &str, needle: &str) {
    match compile_with(schema, 0) {
        Ok(_) => panic!("schema {schema} should be refused"),
        Err(e) => assert!(
            e.message().contains(needle),
            "schema {schema}: error {e} should mention {needle}"
        ),
    }
}

#[test]
fn types() {
    check(
        r#"{"type": "null"}"#,
        &["null", " null ", "\n\tnull"],
        &["nul", "true", "0", "\"\""],
    );
    check(r#"{"type": "boolean"}"#, &["true", "false"], &["null", "1"]);
    check(
        r#"{"type": ["string", "null"]}"#,
        &["null", "\"a\"", "\"\\u0041\""],
        &["1", "[]"],
    );
    check(
        r#"{"type": "integer"}"#,
        &["0", "-5", "1.0", "12.000", "1e2", "1.5e1", "1E+2", "-0"],
        &["1.5", "1e-1", "01", "1.", ".5", "+1", "1.25e1"],
    );
    check(
        r#"{"type": "number"}"#,
        &["0", "-0.5", "1e-5", "1E+300", "10e5"],
        &["01", "1.", "--1", "NaN"],
    );
    check(r#"true"#, &["1", "{\"a\": [null]}", "\"x\""], &["{", "tru"]);
    check(
        r#"{}"#,
        &["[1, {\"a\": \"b\"}]", "{}", "[]"],
        &["[1,]", "{\"a\"}"],
    );
}

#[test]
fn unsatisfiable_schema_is_refused() {
    assert!(compile_with("false", 0).is_err());
    assert!(compile_with(r#"{"type": "string", "enum": [1]}"#, 0).is_err());
}

#[test]
fn enum_and_const() {
    check(
        r#"{"enum": ["a", 1, null, [1, "x"], {"k": true}]}"#,
        &[
            "\"a\"",
            "1",
            "1.0",
            "1e0",
            "null",
            "[1, \"x\"]",
            "{\"k\": true}",
            "\"\\u0061\"",
        ],
        &["\"b\"", "2", "[1]", "{\"k\": false}", "{}", "true"],
    );
    check(
        r#"{"const": 0.5}"#,
        &["0.5", "5e-1", "0.50"],
        &["0.51", "1"],
    );
    check(r#"{"const": 0}"#, &["0", "-0", "0.0", "0e5"], &["1"]);
}

#[test]
fn objects() {
    let s = r#"{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "required": ["a"]}"#;
    check(
        s,
        &[
            "{\"a\": 1}",
            "{\"a\": 1, \"b\": \"x\"}",
            "{\"a\":1,\"b\":\"x\",\"c\":[]}",
            "{ \"a\" : 1 , \"zz\" : null }",
        ],
        &[
            "{}",
            "{\"b\": \"x\"}",
            "{\"a\": \"1\"}",
            "{\"a\": 1, \"b\": 2}",
            "{\"a\": 1,}",
        ],
    );
    let s = r#"{"properties": {"a": {"type": "integer"}}, "additionalProperties": false}"#;
    check(
        s,
        &["{}", "{\"a\": 2}", "1"],
        &["{\"b\": 2}", "{\"a\": 2, \"b\": 1}"],
    );
    let s = r#"{"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": {"type": "string"}}"#;
    let g = compile_with(s, 0);
    if let Err(e) = &g {
        // The regex front end may not be ready yet.
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    }
    check(
        r#"{"minProperties": 1, "maxProperties": 2}"#,
        &["{\"a\": 1}", "{\"a\": 1, \"b\": 2}", "[]"],
        &["{}", "{\"a\": 1, \"b\": 2, \"c\": 3}"],
    );
    check(
        r#"{"properties": {"a": true, "b": true}, "minProperties": 1, "additionalProperties": false}"#,
        &["{\"a\": 1}", "{\"b\": 1}", "{\"a\": 1, \"b\": 2}"],
        &["{}"],
    );
}

#[test]
fn arrays() {
    check(
        r#"{"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}"#,
        &["[1]", "[1, 2, 3]", "[ 1 ,2 ]"],
        &["[]", "[1, 2, 3, 4]", "[\"a\"]", "[1,]"],
    );
    check(
        r#"{"prefixItems": [{"type": "string"}, {"type": "null"}], "items": false}"#,
        &["[]", "[\"a\"]", "[\"a\", null]"],
        &["[\"a\", null, 1]", "[null]"],
    );
    check(
        r#"{"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}"#,
        &["[\"a\", 1, 2]", "[]"],
        &["[\"a\", \"b\"]"],
    );
    check(
        r#"{"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}"#,
        &["[1, 2]", "[\"a\", 1, \"b\", 2, 3]"],
        &["[1]", "[1, 2, 3, 4]", "[]"],
    );
    check(
        r#"{"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": true}"#,
        &["[]", "[\"a\"]", "[\"c\", \"a\", \"b\"]"],
        &["[\"a\", \"a\"]", "[\"a\", \"b\", \"a\"]"],
    );
    refused(
        r#"{"type": "array", "items": {"type": "string"}, "uniqueItems": true}"#,
        "uniqueItems",
    );
}

#[test]
fn strings() {
    check(
        r#"{"type": "string", "minLength": 2, "maxLength": 3}"#,
        &[
            "\"ab\"",
            "\"abc\"",
            "\"\\u00e9\\u00E9\"",
            "\"\\ud83d\\ude00x\"",
            "\"é😀\"",
        ],
        &["\"a\"", "\"abcd\"", "\"\\ud83d\"", "\"a\\x\""],
    );
    // Bounds the pattern already keeps, and bounds it does not.
    check(
        r#"{"type": "string", "pattern": "^[a-z]+$", "minLength": 1}"#,
        &["\"a\"", "\"abc\""],
        &["\"\"", "\"a1\""],
    );
    check(
        r#"{"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 3}"#,
        &["\"ab\"", "\"abc\""],
        &["\"a\"", "\"abcd\""],
    );
    check(
        r#"{"type": "string", "pattern": "^(ab|c)$", "minLength": 1, "maxLength": 2}"#,
        &["\"ab\"", "\"c\""],
        &["\"\"", "\"abc\""],
    );
    check(
        r#"{"type": "string", "pattern": "^$|^a+$", "minLength": 1}"#,
        &["\"a\"", "\"aa\""],
        &["\"\""],
    );
    check(
        r#"{"enum": ["a\"b", "x/y"]}"#,
        &["\"a\\\"b\"", "\"x/y\"", "\"x\\/y\""],
        &["\"a\"b\"", "\"x\\\\y\""],
    );
}

/// A pattern whose automaton is too large for one DFA (2^21 states for
/// the 21st character from the end) runs as parser rules, as in GBNF.
#[test]
fn pattern_too_large_for_a_dfa() {
    let tail = "ab".repeat(10);
    check(
        r#"{"type": "string", "pattern": "^[ab]*a[ab]{20}$"}"#,
        &[
            &format!("\"a{tail}\""),
            &format!("\"bba{tail}\""),
            &format!("\"\\u0061{tail}\""),
        ],
        &[
            &format!("\"b{tail}\""),
            &format!("\"ab{}\"", "b".repeat(20)),
            &format!("\"a{}\"", "b".repeat(19)),
        ],
    );
}

#[test]
fn long_strings() {
    let s = |n: usize| format!("\"{}\"", "é".repeat(n));
    let g = grammar(r#"{"type": "string", "minLength": 40, "maxLength": 100}"#);
    for n in [40, 63, 64, 65, 99, 100] {
        assert!(accepts(&g, &s(n)), "{n}");
    }
    for n in [0, 39, 101, 200] {
        assert!(!accepts(&g, &s(n)), "{n}");
    }
    let g = grammar(r#"{"type": "string", "minLength": 70}"#);
    assert!(accepts(&g, &s(70)));
    assert!(accepts(&g, &s(300)));
    assert!(!accepts(&g, &s(69)));
    let g = grammar(r#"{"type": "string", "maxLength": 1000}"#);
    assert!(accepts(&g, &s(1000)));
    assert!(accepts(&g, "\"\\u00e9\\n\""));
    assert!(!accepts(&g, &s(1001)));
    // Bounds far past any token, counted like the small ones: the counts
    // far from both bounds share one column of liveness.
    let g = grammar(r#"{"type": "string", "minLength": 300, "maxLength": 70000}"#);
    for n in [300, 301, 5_000, 69_999, 70_000] {
        assert!(accepts(&g, &s(n)), "{n}");
    }
    for n in [0, 299, 70_001] {
        assert!(!accepts(&g, &s(n)), "{n}");
    }
    let g = grammar(r#"{"type": "string", "minLength": 5000}"#);
    assert!(accepts(&g, &s(5000)) && accepts(&g, &s(9000)));
    assert!(!accepts(&g, &s(4999)));
    // Counted bounds: escapes and surrogate pairs of escapes are one code
    // point each, beside another type, and bounds no string meets.
    let g = grammar(r#"{"type": ["string", "null"], "minLength": 16, "maxLength": 18}"#);
    let pair = "\\ud83d\\ude00";
    for ok in [
        "null".to_string(),
        s(16),
        s(18),
        format!("\"{}{pair}\\n\"", "a".repeat(16)),
        format!("\"{}\"", pair.repeat(17)),
    ] {
        assert!(accepts(&g, &ok), "{ok}");
    }
    for bad in [s(15), s(19), format!("\"{}{pair}\\n\"", "a".repeat(17))] {
        assert!(!accepts(&g, &bad), "{bad}");
    }
    let g = grammar(r#"{"type": ["string", "null"], "minLength": 30, "maxLength": 20}"#);
    assert!(accepts(&g, "null"));
    assert!(!accepts(&g, &s(25)));
    // A repetition of one class, counted beside the class.
    let g = grammar(r#"{"type": "string", "pattern": "^[^\\n]{1,100}$"}"#);
    assert!(accepts(&g, &s(100)));
    assert!(accepts(&g, "\"a\\tb\""));
    assert!(!accepts(&g, &s(101)));
    assert!(!accepts(&g, "\"a\\nb\""));
    assert!(!accepts(&g, "\"\""));
}

#[test]
fn numbers() {
    check(
        r#"{"type": "number", "minimum": 1.5, "exclusiveMaximum": 10}"#,
        &["1.5", "1.50", "2", "9.999", "1.5e0", "9.99e+00", "5e-0"],
        &["1.4999", "10", "10.0", "1e1", "-2", "1.5e-1", "0"],
    );
    check(
        r#"{"type": "integer", "minimum": -3, "maximum": 120}"#,
        &["-3", "0", "120", "120.0", "1.2e2", "99"],
        &["-4", "121", "1.21e2", "2.5"],
    );
    check(
        r#"{"type": "number", "exclusiveMinimum": 0}"#,
        &["1e-05", "0.0001", "3"],
        &["0", "-0", "0.0", "-1e-05", "0e5"],
    );
    check(
        r#"{"type": "number", "maximum": 5, "exclusiveMaximum": true}"#,
        &["4.99", "-100"],
        &["5", "5.0", "6"],
    );
    check(
        r#"{"type": "number", "multipleOf": 0.01}"#,
        &["1", "1.5", "1.25", "1.250", "-0.07"],
        &["1.255", "0.001"],
    );
    check(
        r#"{"type": "integer", "multipleOf": 3}"#,
        &["0", "3", "12", "-9", "300"],
        &["1", "10", "13"],
    );
    check(
        r#"{"type": "integer", "multipleOf": 8}"#,
        &["0", "8", "1000", "-16"],
        &["4", "1004"],
    );
    check(
        r#"{"not": {"type": "integer"}}"#,
        &["1.5", "\"a\"", "null"],
        &["1", "1.0", "-3"],
    );
}

#[test]
fn combinators() {
    check(
        r#"{"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 3}]}"#,
        &["\"x\"", "3"],
        &["2", "null"],
    );
    check(
        r#"{"allOf": [{"properties": {"a": {"type": "integer"}}}, {"required": ["a"]}]}"#,
        &["{\"a\": 1}"],
        &["{}", "{\"a\": \"x\"}"],
    );
    check(
        r#"{"oneOf": [{"type": "number"}, {"type": "integer"}]}"#,
        &["1.5"],
        &["1", "2.0"],
    );
    check(
        r#"{"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}"#,
        &["{\"a\": 1}", "{\"b\": 1}"],
        &["{\"a\": 1, \"b\": 2}", "{}"],
    );
    check(
        r#"{"if": {"properties": {"k": {"const": "x"}}}, "then": {"required": ["x"]}, "else": {"required": ["y"]}}"#,
        &[
            "{\"k\": \"x\", \"x\": 1}",
            "{\"k\": \"z\", \"y\": 1}",
            "{\"x\": 1}",
        ],
        &["{\"k\": \"x\"}", "{\"k\": \"z\", \"x\": 1}"],
    );
    check(
        r#"{"dependentRequired": {"a": ["b"]}}"#,
        &["{}", "{\"b\": 1}", "{\"a\": 1, \"b\": 2}"],
        &["{\"a\": 1}"],
    );
    check(
        r#"{"not": {"const": "a"}}"#,
        &["\"b\"", "1", "\"aa\""],
        &["\"a\"", "\"\\u0061\""],
    );
}

#[test]
fn negated_additional_properties() {
    check(
        r#"{"type": "object", "not": {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}}"#,
        &[
            "{\"b\": \"x\"}",
            "{\"a\": 1, \"b\": true}",
            "{\"b\": 1, \"c\": null}",
        ],
        &["{}", "{\"a\": \"x\"}", "{\"b\": 1}", "{\"a\": 1, \"b\": 2}"],
    );
    check(
        r#"{"not": {"additionalProperties": false}}"#,
        &["{\"x\": 1}"],
        &["{}", "1"],
    );
}

#[test]
fn property_order() {
    // Any order.
    check(
        r#"{"properties": {"a": {}, "b": {}}, "required": ["b"]}"#,
        &[
            "{\"a\": 1, \"b\": 2}",
            "{\"b\": 2, \"a\": 1}",
            "{\"z\": 0, \"b\": 2, \"y\": 1}",
        ],
        &[
            "{\"a\": 1}",
            "{\"b\": 1, \"b\": 2}",
            "{\"a\": 1, \"b\": 2, \"a\": 3}",
        ],
    );
    // Up to six listed properties: any order, none repeated.
    check(
        r#"{"properties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}, "f": {}}, "additionalProperties": false}"#,
        &[
            "{\"a\": 1, \"c\": 2, \"f\": 3}",
            "{\"f\": 1, \"a\": 2, \"c\": 3}",
        ],
        &["{\"a\": 1, \"a\": 2}", "{\"g\": 1}"],
    );
    // More: any order; the required ones tracked as a set (each at most
    // once), optional ones may repeat (duplicate keys are undefined in
    // JSON Schema).
    let seven = r#"{"properties": {"a": {"type": "integer"}, "b": {}, "c": {}, "d": {}, "e": {}, "f": {}, "g": {}},
        "required": ["g", "a"], "additionalProperties": false}"#;
    check(
        seven,
        &[
            "{\"g\": 1, \"a\": 2}",
            "{\"c\": 1, \"a\": 2, \"b\": 3, \"g\": 4}",
            "{\"c\": 1, \"a\": 2, \"c\": 3, \"g\": 4}",
        ],
        &[
            "{\"a\": 1, \"b\": 2}",
            "{\"a\": 1, \"a\": 2, \"g\": 4}",
            "{\"a\": \"x\", \"g\": 4}",
            "{\"g\": 1, \"a\": 2, \"h\": 3}",
        ],
    );
    // Many required properties: counted, in any order.
    let names: Vec<String> = (0..16).map(|i| format!("p{i}")).collect();
    let props: Vec<String> = names
        .iter()
        .map(|n| format!("\"{n}\": {{\"type\": \"integer\"}}"))
        .collect();
    let req: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let schema = format!(
        r#"{{"properties": {{{}, "opt": {{}}}}, "required": [{}], "additionalProperties": false}}"#,
        props.join(", "),
        req.join(", ")
    );
    let object = |order: &mut dyn Iterator<Item = &String>| {
        let members: Vec<String> = order.map(|n| format!("\"{n}\": 1")).collect();
        format!("{{{}}}", members.join(", "))
    };
    let forward = object(&mut names.iter());
    let backward = object(&mut names.iter().rev());
    let missing = object(&mut names.iter().skip(1));
    check(&schema, &[&forward, &backward], &[&missing, "{}"]);
}

#[test]
fn references() {
    check(
        r##"{"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
             "next": {"$ref": "#/$defs/node"}}, "required": ["v"], "additionalProperties": false}},
             "$ref": "#/$defs/node"}"##,
        &[
            "{\"v\": 1}",
            "{\"v\": 1, \"next\": {\"v\": 2, \"next\": {\"v\": 3}}}",
        ],
        &["{\"v\": 1, \"next\": {}}", "{}"],
    );
    check(
        r##"{"$id": "http://example.com/root.json", "definitions": {"A": {"$id": "#foo", "type": "integer"}},
             "properties": {"x": {"$ref": "#foo"}}}"##,
        &["{\"x\": 1}"],
        &["{\"x\": \"a\"}"],
    );
    refused(r#"{"$ref": "http://example.com/other.json"}"#, "$ref");
    refused(r##"{"allOf": [{"$ref": "#"}]}"##, "$ref");
}

#[test]
fn whitespace_options() {
    let g = compile_with(r#"{"type": "array"}"#, FLAG_JSON_COMPACT).unwrap();
    assert!(accepts(&g, "[1,2]"));
    assert!(!accepts(&g, "[1, 2]"));
    let g = compile(
        &vocab(),
        br#"{"type": "array"}"#,
        &CompileOptions {
            kind: Kind::JsonSchema,
            json_max_whitespace: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(accepts(&g, "[1,  2]"));
    assert!(!accepts(&g, "[1,   2]"));
}

#[test]
fn any_json() {
    let g = compile(
        &vocab(),
        b"",
        &CompileOptions {
            kind: Kind::AnyJson,
            ..Default::default()
        },
    )
    .unwrap();
    for t in [
        "1",
        "{\"a\": [true, null, \"x\", -1.5e3]}",
        "[]",
        "\"\\u00e9\"",
    ] {
        assert!(accepts(&g, t), "{t}");
    }
    for t in ["{", "[1,]", "'a'", "01"] {
        assert!(!accepts(&g, t), "{t}");
    }
}

#[test]
fn older_drafts_ignore_newer_keywords() {
    // Draft 4 validators do not know `if`/`then`, `const`, `contains` or
    // `propertyNames`; draft 6 does not know `if`.
    let d4 = r#"{"$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"a": {"type": "integer", "const": 1}}, "if": {"required": ["a"]},
        "then": {"required": ["b"]}, "propertyNames": {"maxLength": 1}}"#;
    check(d4, &["{\"a\": 2}", "{\"abc\": 1}"], &["{\"a\": \"x\"}"]);
    let d6 = r#"{"$schema": "http://json-schema.org/draft-06/schema#",
        "properties": {"a": {"const": 1}}, "if": {"required": ["a"]}, "then": {"required": ["b"]}}"#;
    check(d6, &["{\"a\": 1}"], &["{\"a\": 2}"]);
    let d7 = r#"{"$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"a": {"const": 1}}, "if": {"required": ["a"]}, "then": {"required": ["b"]}}"#;
    check(d7, &["{\"a\": 1, \"b\": 0}", "{}"], &["{\"a\": 1}"]);
}

#[test]
fn several_contains() {
    // allOf merges the two `contains` onto one array.
    check(
        r#"{"type": "array", "allOf": [{"contains": {"const": 1}}, {"contains": {"type": "string"}, "maxContains": 2}]}"#,
        &["[1, \"a\"]", "[\"a\", 2, 1, \"b\"]", "[1, \"a\", \"b\"]"],
        &["[1]", "[\"a\"]", "[1, \"a\", \"b\", \"c\"]", "[]"],
    );
}

#[test]
fn negated_negation_of_additional_properties() {
    // `not (additionalProperties: S)` is "some unlisted member is not S";
    // its negation again (through a second `not` or `oneOf`) is "every
    // unlisted member is S".
    check(
        r#"{"not": {"not": {"additionalProperties": {"type": "integer"}}}}"#,
        &[r#"{}"#, r#"{"a": 1, "b": 2}"#],
        &[r#"{"a": "x"}"#, r#"{"a": 1, "b": null}"#],
    );
    check(
        r#"{"type": "object", "properties": {"k": {"type": "string"}},
            "not": {"not": {"properties": {"k": true},
                            "additionalProperties": {"type": "integer"}}}}"#,
        &[r#"{"k": "s", "a": 1}"#, r#"{"a": 2}"#],
        &[r#"{"k": "s", "a": "x"}"#, r#"{"k": 1}"#],
    );
    // oneOf with overlapping branches, one of them a negated
    // additionalProperties: exactly one branch holds.
    check(
        r#"{"oneOf": [{"not": {"additionalProperties": {"type": "integer"}}},
                      {"properties": {"a": {"type": "string"}}}]}"#,
        &[r#"{"a": 1.5}"#, r#"{"b": 1}"#, r#"{}"#],
        &[
            r#"{"a": "s", "b": 1}"#,
            r#"{"a": "s", "b": true}"#,
            r#"{"a": 1}"#,
        ],
    );
}

/// Draft 4 defines `integer` by its spelling ("without a fraction or
/// exponent part"); draft 6 on, and schemas without `$schema`, by value.
#[test]
fn draft4_integers_have_no_fraction_or_exponent() {
    let d4 = r#"{"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}"#;
    check(
        d4,
        &[
            "0",
            "-5",
            "12345",
            "-0",
            "12345678910111213141516171819202122232425262728293031",
        ],
        &["1.0", "12345.0", "1e2", "1.5", "1.2345678910111214e+52"],
    );
    let d3 = r#"{"$schema": "http://json-schema.org/draft-03/schema#", "type": "integer"}"#;
    check(d3, &["7"], &["7.0"]);
    // Bounds and enum keep the spelling rule.
    check(
        r#"{"$schema": "http://json-schema.org/draft-04/schema#",
            "type": "integer", "minimum": 2, "maximum": 2}"#,
        &["2"],
        &["2.0", "2e0", "3"],
    );
    check(
        r#"{"$schema": "http://json-schema.org/draft-04/schema#",
            "type": "integer", "enum": [1, 2.5]}"#,
        &["1"],
        &["1.0", "2.5"],
    );
    // Its negation: numbers with a fraction or exponent, and non-integers.
    check(
        r#"{"$schema": "http://json-schema.org/draft-04/schema#",
            "type": "number", "not": {"type": "integer"}}"#,
        &["1.0", "1e2", "1.5"],
        &["1", "-3"],
    );
    check(
        r#"{"$schema": "http://json-schema.org/draft-04/schema#",
            "properties": {"userId": {"type": "integer"}}}"#,
        &[r#"{"userId": 12345}"#],
        &[r#"{"userId": 12345.0}"#],
    );
    for s in [
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ] {
        let schema = format!(r#"{{"$schema": "{s}", "type": "integer"}}"#);
        check(&schema, &["1", "1.0", "12345.0", "1e2"], &["1.5"]);
    }
    check(r#"{"type": "integer"}"#, &["1.0"], &["1.5"]);
}

/// A length bound beside nested intersections and complements of
/// patterns: the bound is found under the nesting (and counted beside
/// the rest), the language stays the same.
#[test]
fn lengths_beside_nested_negations() {
    let schema = r#"{"type": "string", "pattern": "[aA][12].*[zZ]",
        "minLength": 10, "maxLength": 70,
        "anyOf": [
            {"not": {"allOf": [{"pattern": "^[a-z0-9]*$"}, {"pattern": "\\d\\d"}]}},
            {"not": {"allOf": [{"pattern": "^.{16}$"}, {"pattern": "b1"}]}}
        ]}"#;
    let long = |n: usize| format!("\"a1{}z\"", "x".repeat(n));
    check(
        schema,
        &[
            r#""a1xxxxxxxz""#,
            r#""A2 b12xxxxZ""#,
            r#""a12b1xxxxxxxxxxxz""#,
            r#""a1ééééééééz""#,
            &long(67),
        ],
        &[
            // Lower case and digits with two digits in a row, 16 code
            // points with "b1": both complements fail.
            r#""a12b1xxxxxxxxxxz""#,
            r#""a1xxxxxxz""#,
            r#""bbbbbbbbbbbb""#,
            &long(68),
        ],
    );
}

/// Word limits (`^(?:\S+\s+){0,N}\S+$`) count their words beside one
/// copy of the word's automaton: the limit holds with raw and escaped
/// spaces, and the quote closes the string only within it.
#[test]
fn word_limits_are_counted() {
    let words = |n: usize, space: &str| {
        let w: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
        format!("\"{}\"", w.join(space))
    };
    let schema = r#"{"type": "object", "properties": {
        "summary": {"type": "string", "pattern": "^(?:\\S+\\s+){0,199}\\S+$"},
        "note": {"type": "string", "pattern": "^$|(^(?:\\S+\\s+){0,49}\\S+$)"}},
        "additionalProperties": false}"#;
    let summary = |n: usize, space: &str| format!(r#"{{"summary": {}}}"#, words(n, space));
    let note = |n: usize| format!(r#"{{"note": {}}}"#, words(n, " "));
    check(
        schema,
        &[
            &summary(1, " "),
            &summary(200, " "),
            &summary(200, "\\n \\t"),
            &summary(200, "\\u0020"),
            r#"{"note": ""}"#,
            &note(50),
        ],
        &[
            &summary(201, " "),
            &summary(201, "\\u0020"),
            r#"{"summary": ""}"#,
            r#"{"summary": "a "}"#,
            &note(51),
        ],
    );
}

/// A property-name pattern of one class repeated (`^.{1,256}$`) counts
/// the name's code points: escapes and multi-byte characters count one.
#[test]
fn property_name_lengths_are_counted() {
    let schema = r#"{"type": "object", "additionalProperties": false,
        "patternProperties": {"^.{1,256}$": {"type": "integer"}}}"#;
    let name = |n: usize, c: &str| format!(r#"{{"{}": 1}}"#, c.repeat(n));
    check(
        schema,
        &[
            &name(1, "a"),
            &name(256, "a"),
            &name(256, "\\u00e9"),
            &name(256, "é"),
            &format!(r#"{{"{}": 1, "b": 2}}"#, "a".repeat(200)),
        ],
        &[
            "{\"\": 1}",
            &name(257, "a"),
            &name(257, "\\u00e9"),
            &name(257, "é"),
            &name(3, "\\n"),
        ],
    );
}

/// An array of date-times reads each one with the shared date-time
/// lexeme: the items' repetition does not become a lexeme holding a
/// second copy of its 66,000 states.
#[test]
fn date_time_items_share_one_lexeme() {
    let schema = r#"{"type": "array", "items": {"type": "string", "format": "date-time"}}"#;
    let g = grammar(schema);
    let states = g.automaton().num_states();
    assert!(states < 80_000, "{states} states");
    check(
        schema,
        &[
            r#"[]"#,
            r#"["1998-12-31T23:59:60Z"]"#,
            r#"["2020-02-29T00:00:00Z", "1998-12-31T15:59:60-08:00"]"#,
        ],
        &[
            r#"["2019-02-29T00:00:00Z"]"#,
            r#"["2020-02-29T00:00:00Z", 1]"#,
        ],
    );
}

/// RFC 3339: a leap second whenever the UTC time is 23:59:60, whatever
/// the offset; year 0000 is a date (and a leap year).
#[test]
fn rfc3339_leap_seconds_and_year_zero() {
    // Leap seconds where the time in UTC is 23:59:60, whatever the
    // offset.
    check(
        r#"{"format": "time"}"#,
        &[
            r#""23:59:60Z""#,
            r#""23:59:60.5+00:00""#,
            r#""23:59:60-00:00""#,
            r#""15:59:60-08:00""#,
        ],
        &[
            r#""22:59:60Z""#,
            r#""23:59:60+01:00""#,
            r#""15:59:60-07:00""#,
        ],
    );
    check(
        r#"{"format": "date-time"}"#,
        &[
            r#""1998-12-31T23:59:60Z""#,
            r#""1998-12-31T15:59:60-08:00""#,
        ],
        &[r#""1998-12-31T23:59:60-08:00""#],
    );
    // Beside a length bound, small or large, the rule stays exact: the
    // count is kept next to the automaton.
    for max in [27, 30, 63, 64, 1000] {
        let schema = format!(r#"{{"type":"string","format":"date-time","maxLength":{max}}}"#);
        // 25 code points without a fraction, 26 + n with n digits.
        let fraction = |n: usize| format!("\"1998-12-31T15:59:60.{}-08:00\"", "5".repeat(n));
        let (fits, over) = (fraction(max - 26), fraction(max - 25));
        check(
            &schema,
            &[
                r#""1998-12-31T23:59:60Z""#,
                r#""1998-12-31T15:59:60-08:00""#,
                fits.as_str(),
            ],
            &[r#""1998-12-31T23:59:60-08:00""#, over.as_str()],
        );
    }
    // With a pattern, the product is built over code points and then
    // spelled out: escapes, leap seconds and the pattern all still hold.
    check(
        r#"{"type":"string","format":"date-time","pattern":"\\d\\d:\\d\\dZ"}"#,
        &[
            r#""1998-12-31T23:59:60Z""#,
            r#""1998-12-31T10:11:12Z""#,
            r#""1998-12-31T10:11:\u0031\u0032Z""#,
        ],
        &[
            r#""1998-12-31T10:11:12.5Z""#,
            r#""1998-12-31T23:58:60Z""#,
            r#""1998-12-31T10:11:12+00:00""#,
            r#""1998-12-31T10:11:12.5+01:00""#,
            r#""1998-02-30T10:11:12Z""#,
        ],
    );
    check(
        r#"{"type":"string","format":"time","pattern":"^1"}"#,
        &[r#""15:59:60-08:00""#, r#""\u00310:00:00Z""#],
        &[
            r#""15:58:60-08:00""#,
            r#""05:59:60-08:00""#,
            r#""10:00:00""#,
        ],
    );
    check(
        r#"{"format": "date"}"#,
        &[r#""0000-01-01""#, r#""0000-02-29""#],
        &[r#""0100-02-29""#, r#""0000-13-01""#],
    );
}

/// `hostname` is refused: IDNA A-labels are not checkable by an automaton.
#[test]
fn hostname_format_is_refused() {
    refused(r#"{"format": "hostname"}"#, "'hostname'");
    let Err(e) = compile_with(r#"{"properties": {"h": {"format": "hostname"}}}"#, 0) else {
        panic!("hostname compiled");
    };
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("/properties/h"), "{e}");
    // Lenient: the label rules alone (a superset: A-labels not decoded).
    let g = compile_with(
        r#"{"format": "hostname"}"#,
        cgram::source::FLAG_JSON_LENIENT,
    )
    .unwrap();
    assert_eq!(g.automaton().dropped().len(), 1);
    for (text, ok) in [
        (r#""www.example.com""#, true),
        (r#""xn--X""#, true),
        (r#""-host""#, false),
        (r#""host_name""#, false),
        (r#""example.""#, false),
    ] {
        assert_eq!(accepts(&g, text), ok, "{text}");
    }
}

/// RFC 6570 with its verified erratum 6937: `'` is a literal character.
#[test]
fn uri_template_apostrophe_per_errata() {
    check(
        r#"{"format": "uri-template"}"#,
        &[r#""a'b""#, r#""http://x/{id}""#],
        &[r#""a b""#, r#""{,+var}""#],
    );
}

fn check_closed(schema: &str, yes: &[&str], no: &[&str]) {
    let g = compile_with(schema, cgram::source::FLAG_JSON_NO_EXTRA_PROPERTIES)
        .unwrap_or_else(|e| panic!("schema {schema} failed: {e}"));
    for t in yes {
        assert!(accepts(&g, t), "schema {schema}: should accept {t}");
    }
    for t in no {
        assert!(!accepts(&g, t), "schema {schema}: should reject {t}");
    }
}

/// `FLAG_JSON_NO_EXTRA_PROPERTIES` closes schemas that list properties,
/// on the union of names listed by conjoined schemas; wrappers (`$ref`,
/// `anyOf`) that list none add no restriction.
#[test]
fn no_extra_properties_through_ref_and_any_of() {
    check_closed(
        r#"{"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}]}"#,
        &[r#"{"a": 1}"#, "{}"],
        &[r#"{"a": 1, "b": 2}"#, r#"{"a": "x"}"#],
    );
    check_closed(
        r##"{"properties": {"v": {"$ref": "#/$defs/n"}},
            "$defs": {"n": {"type": "object", "properties": {"a": {"type": "integer"}}}}}"##,
        &[r#"{"v": {"a": 1}}"#, r#"{"v": {}}"#],
        &[r#"{"v": {"a": 1, "b": 1}}"#, r#"{"w": 1}"#],
    );
    // allOf: the union of the listed names.
    check_closed(
        r#"{"allOf": [{"properties": {"a": {"type": "integer"}}},
                      {"properties": {"b": {"type": "string"}}}]}"#,
        &[r#"{"a": 1, "b": "x"}"#, r#"{"a": 1}"#, "{}"],
        &[r#"{"a": 1, "c": 1}"#, r#"{"b": 1}"#],
    );
    // Per anyOf branch, with the names of the enclosing schema.
    check_closed(
        r#"{"properties": {"id": {"type": "integer"}},
            "anyOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]},
                      {"properties": {"b": {"const": 2}}, "required": ["b"]}]}"#,
        &[r#"{"id": 1, "a": 1}"#, r#"{"b": 2}"#],
        &[r#"{"a": 1, "b": 2}"#, r#"{"id": 1, "a": 1, "c": 0}"#],
    );
    // oneOf: closed branches; `{}` matches both, so it is rejected.
    check_closed(
        r#"{"oneOf": [{"properties": {"a": {"type": "integer"}}},
                      {"properties": {"b": {"type": "integer"}}}]}"#,
        &[r#"{"a": 1}"#, r#"{"b": 1}"#],
        &["{}", r#"{"a": 1, "b": 1}"#],
    );
    // Explicit additionalProperties wins; required names need a listing.
    check_closed(
        r#"{"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}"#,
        &[r#"{"a": "x", "z": 1}"#],
        &[r#"{"z": "x"}"#],
    );
    // if/then/else: the condition is a test, not a closed shape.
    check_closed(
        r#"{"properties": {"kind": {}, "x": {}, "y": {}},
            "if": {"properties": {"kind": {"const": "A"}}},
            "then": {"required": ["x"]}, "else": {"required": ["y"]}}"#,
        &[r#"{"kind": "A", "x": 1}"#, r#"{"kind": "B", "y": 1}"#],
        &[
            r#"{"kind": "A", "y": 1}"#,
            r#"{"kind": "A", "x": 1, "z": 1}"#,
        ],
    );
    // A bare object type lists nothing: any names.
    check_closed(r#"{"type": "object"}"#, &[r#"{"q": 1}"#], &[]);
}

/// Pydantic-style schemas: a `$ref` for every nested model, optional ones
/// as `anyOf` with null, lists of models.
#[test]
fn no_extra_properties_pydantic_nesting() {
    let schema = r##"{
        "$defs": {
            "Address": {"type": "object", "title": "Address",
                "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["street"]},
            "Pet": {"type": "object",
                "properties": {"name": {"type": "string"},
                               "owner": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]}},
                "required": ["name"]}
        },
        "type": "object", "title": "Person",
        "properties": {
            "name": {"type": "string"},
            "home": {"$ref": "#/$defs/Address"},
            "pets": {"type": "array", "items": {"$ref": "#/$defs/Pet"}},
            "base": {"allOf": [{"$ref": "#/$defs/Address"}], "description": "x"}
        },
        "required": ["name", "home"]
    }"##;
    check_closed(
        schema,
        &[
            r#"{"name": "n", "home": {"street": "s"}}"#,
            r#"{"name": "n", "home": {"street": "s", "zip": "1"},
                "pets": [{"name": "p", "owner": null}, {"name": "q", "owner": {"street": "t"}}],
                "base": {"street": "b"}}"#,
        ],
        &[
            r#"{"name": "n", "home": {"street": "s"}, "x": 1}"#,
            r#"{"name": "n", "home": {"street": "s", "x": 1}}"#,
            r#"{"name": "n", "home": {"street": "s"}, "pets": [{"name": "p", "x": 1}]}"#,
            r#"{"name": "n", "home": {"street": "s"}, "pets": [{"name": "p", "owner": {"street": "t", "x": 1}}]}"#,
            r#"{"name": "n", "home": {"street": "s"}, "base": {"street": "b", "x": 1}}"#,
        ],
    );
    // Draft 7 style (definitions, $ref without siblings).
    check_closed(
        r##"{"$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"N": {"properties": {"a": {"type": "integer"}}}},
            "properties": {"n": {"$ref": "#/definitions/N"}}}"##,
        &[r#"{"n": {"a": 1}}"#],
        &[r#"{"n": {"a": 1, "b": 1}}"#],
    );
}

/// `unevaluatedProperties` / `unevaluatedItems` where what is evaluated
/// is known statically (the schema, its `allOf` and `$ref`); refused when
/// it depends on which branch validates.
#[test]
fn unevaluated_statically_known() {
    check(
        r#"{"properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}],
            "unevaluatedProperties": false}"#,
        &[r#"{"a": 1, "b": 2}"#, "{}", "[1]"],
        &[r#"{"c": 1}"#, r#"{"a": 1, "c": 1}"#],
    );
    check(
        r##"{"$defs": {"B": {"properties": {"b": {}}, "patternProperties": {"^x-": {}}}},
            "$ref": "#/$defs/B", "properties": {"a": {}}, "unevaluatedProperties": false}"##,
        &[r#"{"a": 1, "b": 2, "x-y": 3}"#],
        &[r#"{"y": 1}"#],
    );
    check(
        r#"{"properties": {"a": {}}, "unevaluatedProperties": {"type": "integer"}}"#,
        &[r#"{"a": "x", "z": 1}"#],
        &[r#"{"z": "x"}"#],
    );
    // A subschema's additionalProperties evaluates every name.
    check(
        r#"{"allOf": [{"additionalProperties": true}], "unevaluatedProperties": false}"#,
        &[r#"{"z": 1}"#],
        &[],
    );
    check(
        r#"{"prefixItems": [{"type": "string"}],
            "allOf": [{"prefixItems": [true, {"type": "integer"}]}],
            "unevaluatedItems": false}"#,
        &[r#"["a", 1]"#, r#"["a"]"#],
        &[r#"["a", 1, 2]"#, r#"["a", "b"]"#],
    );
}

#[test]
fn unevaluated_by_cases() {
    // anyOf: every branch that matches evaluates its names.
    check(
        r#"{"anyOf": [{"properties": {"a": {"type": "integer"}}},
                      {"properties": {"b": {"type": "string"}}, "required": ["b"]}],
            "unevaluatedProperties": false}"#,
        &[
            r#"{"a": 1}"#,
            r#"{"b": "x"}"#,
            r#"{"a": 1, "b": "x"}"#,
            "{}",
            "1",
        ],
        &[
            r#"{"c": 1}"#,
            r#"{"a": 1, "b": 2}"#,
            r#"{"a": "x", "b": "y"}"#,
        ],
    );
    // oneOf: the one branch that matches.
    check(
        r#"{"oneOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]},
                      {"properties": {"b": {"const": 2}}, "required": ["b"]}],
            "unevaluatedProperties": false}"#,
        &[r#"{"a": 1}"#, r#"{"b": 2}"#],
        &[
            r#"{"a": 1, "b": 3}"#,
            r#"{"a": 1, "c": 0}"#,
            r#"{"a": 1, "b": 2}"#,
        ],
    );
    // if/then/else: if and then, or else; if alone still annotates.
    check(
        r#"{"if": {"properties": {"k": {"const": "t"}}, "required": ["k"]},
            "then": {"properties": {"t": {}}}, "else": {"properties": {"e": {}}},
            "unevaluatedProperties": false}"#,
        &[r#"{"k": "t", "t": 1}"#, r#"{"e": 1}"#, "{}"],
        &[
            r#"{"k": "t", "e": 1}"#,
            r#"{"k": "u", "e": 1}"#,
            r#"{"t": 1}"#,
        ],
    );
    check(
        r#"{"if": {"patternProperties": {"^x": {"type": "string"}}},
            "unevaluatedProperties": false}"#,
        &[r#"{"xa": "s"}"#, "{}"],
        &[r#"{"xa": 1}"#, r#"{"y": "s"}"#],
    );
    // dependentSchemas: those of the properties present.
    check(
        r#"{"properties": {"a": {}}, "dependentSchemas": {"a": {"properties": {"b": {}}}},
            "unevaluatedProperties": false}"#,
        &[r#"{"a": 1, "b": 2}"#, r#"{"a": 1}"#],
        &[r#"{"b": 2}"#, r#"{"a": 1, "c": 2}"#],
    );
    // Items: anyOf of prefixes, and contains.
    check(
        r#"{"anyOf": [{"prefixItems": [true, {"const": 1}]}, {"items": {"type": "string"}}],
            "unevaluatedItems": {"type": "boolean"}}"#,
        &["[0, 1]", r#"["a", "b"]"#, "[0, 1, true]"],
        &["[0, 2]", r#"[true, 1, "s"]"#, "[0, 1, 2]", "[true, false]"],
    );
    check(
        r#"{"contains": {"type": "string"}, "unevaluatedItems": {"type": "integer"}}"#,
        &[r#"["a", 1]"#, r#"[1, "b", 2]"#],
        &["[1, 2]", r#"["a", null]"#],
    );
    // Annotations of a failing anyOf branch are dropped, also inside not.
    check(
        r#"{"not": {"anyOf": [true, {"properties": {"f": true}}],
                    "unevaluatedProperties": false}}"#,
        &[r#"{"g": 1}"#, r#"{"f": 1, "g": 1}"#],
        &[r#"{"f": 1}"#, "{}", "1"],
    );
    // Past 64 cases the keyword is refused.
    let branches: Vec<String> = (0..7)
        .map(|i| format!(r#"{{"properties": {{"p{i}": {{}}}}, "required": ["p{i}"]}}"#))
        .collect();
    refused(
        &format!(
            r#"{{"anyOf": [{}], "unevaluatedProperties": false}}"#,
            branches.join(", ")
        ),
        "more than 64 ways",
    );
}

#[test]
fn several_negated_additional_properties_on_one_object() {
    // Each `not additionalProperties` asks for some unlisted member
    // outside its schema; one member may meet both.
    let schema = r#"{"allOf": [
        {"not": {"additionalProperties": {"type": "integer"}}},
        {"not": {"additionalProperties": {"type": ["integer", "boolean"]}}}]}"#;
    check(
        schema,
        &[
            r#"{"a": "x"}"#,
            r#"{"a": true, "b": null}"#,
            r#"{"a": 1, "b": []}"#,
        ],
        &[
            r#"{}"#,
            r#"{"a": 1}"#,
            r#"{"a": true}"#,
            r#"{"a": 1, "b": false}"#,
        ],
    );
    // Three conditions, met by different members or by one.
    let schema = r#"{"properties": {"k": {}}, "allOf": [
        {"not": {"properties": {"k": {}}, "additionalProperties": {"type": "string"}}},
        {"not": {"properties": {"k": {}}, "additionalProperties": {"type": "number"}}},
        {"not": {"properties": {"k": {}}, "additionalProperties": {"type": "null"}}}]}"#;
    check(
        schema,
        &[
            r#"{"a": true}"#,
            r#"{"a": "s", "b": 1}"#,
            r#"{"k": 1, "a": []}"#,
            r#"{"a": null, "b": "s"}"#,
        ],
        &[
            r#"{}"#,
            r#"{"k": true}"#,
            r#"{"a": "s"}"#,
            r#"{"a": 1, "b": 2}"#,
        ],
    );
}

/// `multipleOf` by a residue automaton: divisors past the old limit
/// (1000, or a factor prime to 10 above 13), decimals, negation, and the
/// state limit.
#[test]
fn multiple_of_residues() {
    check(
        r#"{"type": "integer", "multipleOf": 1024}"#,
        &["0", "1024", "-3072", "1024.000", "10240"],
        &["1023", "1536", "1024.5", "1e3"],
    );
    check(
        r#"{"multipleOf": 17}"#,
        &["0", "17", "34.0", "-170", "0e5"],
        &["1", "17.5", "18"],
    );
    check(
        r#"{"multipleOf": 0.25}"#,
        &["0.5", "0.75", "1", "2.250", "-0.25"],
        &["0.2", "0.251", "0.3"],
    );
    check(
        r#"{"multipleOf": 1e-9}"#,
        &["0.000000001", "1.5", "3"],
        &["0.0000000015"],
    );
    check(
        r#"{"type": "number", "not": {"multipleOf": 1024}}"#,
        &["1", "1023", "1024.5"],
        &["1024", "0", "2048.0"],
    );
    check(r#"{"multipleOf": 33333}"#, &["33333", "66666"], &["33334"]);
    refused(r#"{"multipleOf": 33334}"#, "100000 states");
    refused(r#"{"multipleOf": 0.00033334}"#, "100000 states");
}

/// `oneOf` over overlapping branches (no property is required) keeps
/// each branch without the others: an address per country, more than the
/// 256 shapes allowed before (a real schema's).
#[test]
fn one_of_with_hundreds_of_shapes() {
    let schema = r#"{"type":"object","oneOf":[{"properties":{"country":{"type":"string","enum":["CAN"]},"state":{"type":"string","enum":["AB","BC","MB","NB","NF","NT","NV","NU","ON","PE","QC","SK","YT"]},"postalCode":{"type":"string","maxLength":10}}},{"properties":{"country":{"type":"string","enum":["MEX"]},"state":{"type":"string","enum":["aguascalientes","baja-california-norte","baja-california-sur","campeche","chiapas","chihuahua","coahuila","colima","distrito-federal","durango","guanajuato","guerrero","hidalgo","jalisco","mexico","michoacan","morelos","nayarit","nuevo-leon","oaxaca","puebla","queretaro","quintana-roo","san-luis-potosi","sinaloa","sonora","tabasco","tamaulipas","tlaxcala","veracruz","yucatan","zacatecas"]},"postalCode":{"type":"string","maxLength":10}}},{"properties":{"country":{"type":"string","enum":["USA"]},"state":{"type":"string","enum":["AL","AK","AS","AZ","AR","AA","AE","AP","CA","CO","CT","DE","DC","FM","FL","GA","GU","HI","ID","IL","IN","IA","KS","KY","LA","ME","MH","MD","MA","MI","MN","MS","MO","MT","NE","NV","NH","NJ","NM","NY","NC","ND","MP","OH","OK","OR","PW","PA","PR","RI","SC","SD","TN","TX","UT","VT","VI","VA","WA","WV","WI","WY"]},"postalCode":{"type":"string","maxLength":10}}},{"properties":{"country":{"not":{"type":"string","enum":["CAN","MEX","USA"]}},"state":{"type":"string","maxLength":51},"postalCode":{"type":"string","maxLength":51}}}],"properties":{"street":{"type":"string","minLength":1,"maxLength":50},"street2":{"type":"string","minLength":1,"maxLength":50},"city":{"type":"string","minLength":1,"maxLength":51}}}"#;
    check(
        schema,
        &[
            r#"{"country": "CAN", "state": "AB"}"#,
            r#"{"country": "FRA", "state": "IDF", "postalCode": "75001"}"#,
            r#"{"state": "AL", "postalCode": "12345678901"}"#,
            r#"{"country": "USA", "street": "Main"}"#,
        ],
        &[
            r#"{}"#,
            r#"{"street": "Main"}"#,
            r#"{"country": "CAN", "state": "AL"}"#,
            r#"{"country": "USA", "state": "ON"}"#,
            r#"{"state": "AB"}"#,
            r#"{"country": "MEX", "postalCode": "12345678901"}"#,
        ],
    );
}

/// A length bound beside a pattern or format counts code points next to
/// the pattern's automaton: large bounds compile, and every bound is exact
/// (escapes, multi-byte characters and surrogate pairs are one code point
/// each).
#[test]
fn counted_length_beside_a_pattern() {
    let email = r#"{"type":"string","format":"email","maxLength":1024}"#;
    let long_local = format!("\"{}@b.co\"", "a".repeat(1019));
    let too_long = format!("\"{}@b.co\"", "a".repeat(1020));
    check(
        email,
        &["\"a@b.co\"", long_local.as_str()],
        &["\"ab.co\"", too_long.as_str(), "\"a@b.co"],
    );
    // Word counts with a bound: both counters.
    let words =
        r#"{"type":"string","maxLength":70,"minLength":3,"pattern":"^(?:\\S+\\s+){0,9}\\S+$"}"#;
    let ten = format!("\"{}\"", ["abcdef"; 10].join(" "));
    let eleven = format!("\"{}\"", ["ab"; 11].join(" "));
    let long = format!("\"{}\"", ["abcdefg"; 9].join(" "));
    check(
        words,
        &["\"abc\"", "\"a b\"", ten.as_str()],
        &["\"ab\"", eleven.as_str(), long.as_str(), "\"a  \""],
    );
    // Code points, not bytes: escapes and UTF-8 sequences count once.
    let exact = r#"{"type":"string","pattern":"^x","minLength":65,"maxLength":65}"#;
    let ascii = format!("\"x{}\"", "y".repeat(64));
    let escaped = format!("\"x{}\\u0079\"", "y".repeat(63));
    let utf8 = format!("\"x{}é\"", "y".repeat(63));
    let pair = format!("\"x{}\\ud83d\\ude00\"", "y".repeat(63));
    let short = format!("\"x{}\"", "y".repeat(63));
    let long = format!("\"x{}\"", "y".repeat(65));
    check(
        exact,
        &[
            ascii.as_str(),
            escaped.as_str(),
            utf8.as_str(),
            pair.as_str(),
        ],
        &[short.as_str(), long.as_str()],
    );
    // No maximum: the count saturates at the minimum.
    let at_least = r#"{"type":"string","pattern":"^a+$","minLength":100}"#;
    let hundred = format!("\"{}\"", "a".repeat(100));
    let many = format!("\"{}\"", "a".repeat(333));
    let short = format!("\"{}\"", "a".repeat(99));
    check(
        at_least,
        &[hundred.as_str(), many.as_str()],
        &[short.as_str()],
    );
    // A date-time beside a bound: counted, leap seconds by RFC 3339.
    let stamp = r#"{"type":"string","format":"date-time","maxLength":100}"#;
    let fraction = format!("\"2024-06-30T12:00:00.{}Z\"", "1".repeat(79));
    let too_long = format!("\"2024-06-30T12:00:00.{}Z\"", "1".repeat(80));
    check(
        stamp,
        &["\"2016-12-31T23:59:60Z\"", fraction.as_str()],
        &[
            "\"2016-12-31T22:59:60Z\"",
            too_long.as_str(),
            "\"2016-12-31\"",
        ],
    );
    // Beside other types, in arrays and objects.
    let mixed =
        r#"{"type":"array","items":{"type":["string","null"],"format":"uri","maxLength":2000}}"#;
    check(
        mixed,
        &["[]", "[null, \"http://a.b/c\", \"https://x.y\"]"],
        &["[\"not a uri\"]"],
    );
}

#[test]
fn dynamic_ref_follows_the_outermost_anchor_in_scope() {
    // A generic list whose item type the entering resource chooses.
    let generic = r##""list": {"$id": "list", "type": "array", "items": {"$dynamicRef": "#item"},
            "$defs": {"d": {"$dynamicAnchor": "item"}}}"##;
    check(
        &format!(
            r##"{{"$id": "https://x.test/root", "$ref": "list",
                "$defs": {{"s": {{"$dynamicAnchor": "item", "type": "string"}}, {generic}}}}}"##
        ),
        &[r#"["a", "b"]"#, "[]"],
        &[r#"["a", 1]"#, "[[]]"],
    );
    // Two resources reach the same list: each binds its own item type.
    check(
        &format!(
            r##"{{"$id": "https://x.test/root", "type": "object",
                "properties": {{"n": {{"$ref": "nums"}}, "s": {{"$ref": "strs"}}}},
                "$defs": {{{generic},
                  "nums": {{"$id": "nums", "$ref": "list",
                    "$defs": {{"i": {{"$dynamicAnchor": "item", "type": "number"}}}}}},
                  "strs": {{"$id": "strs", "$ref": "list",
                    "$defs": {{"i": {{"$dynamicAnchor": "item", "type": "string"}}}}}}}}}}"##
        ),
        &[r#"{"n": [1, 2], "s": ["a"]}"#],
        &[r#"{"n": ["a"]}"#, r#"{"s": [1]}"#],
    );
    // Without the bookend (no $dynamicAnchor at the initial target) it is
    // a $ref.
    check(
        r##"{"$id": "https://x.test/root", "$ref": "list",
            "$defs": {"s": {"$dynamicAnchor": "item", "type": "string"},
              "list": {"$id": "list", "type": "array", "items": {"$dynamicRef": "#item"},
                "$defs": {"d": {"$anchor": "item", "type": "integer"}}}}}"##,
        &["[1, 2]"],
        &[r#"["a"]"#],
    );
    // Recursion through the dynamic reference terminates.
    check(
        r##"{"$id": "https://x.test/root", "$dynamicAnchor": "node", "$ref": "tree",
            "properties": {"v": {"type": "integer"}},
            "$defs": {"tree": {"$id": "tree", "$dynamicAnchor": "node", "type": "object",
              "properties": {"kids": {"type": "array", "items": {"$dynamicRef": "#node"}}}}}}"##,
        &[r#"{"v": 1, "kids": [{"v": 2, "kids": []}]}"#],
        &[r#"{"v": 1, "kids": [{"v": "x"}]}"#],
    );
}

#[test]
fn recursive_ref_follows_the_outermost_recursive_anchor() {
    let schema = |outer: bool| {
        format!(
            r##"{{"$schema": "https://json-schema.org/draft/2019-09/schema",
                "$id": "https://x.test/root", "$recursiveAnchor": {outer},
                "anyOf": [{{"type": "integer"}}, {{"$ref": "tree"}}],
                "$defs": {{"tree": {{"$id": "tree", "$recursiveAnchor": true,
                  "anyOf": [{{"type": "string"}},
                    {{"type": "object", "additionalProperties": {{"$recursiveRef": "#"}}}}]}}}}}}"##
        )
    };
    check(
        &schema(true),
        &["1", r#"{"a": 1}"#, r#"{"a": {"b": 2}}"#, r#"{"a": "s"}"#],
        &["null", r#"{"a": null}"#],
    );
    check(
        &schema(false),
        &["1", r#"{"a": "s"}"#, r#"{"a": {"b": "s"}}"#],
        &[r#"{"a": 1}"#, r#"{"a": {"b": 2}}"#],
    );
}

#[test]
fn contains_evaluates_items_from_2020_12_only() {
    let schema = |draft: &str| {
        format!(
            r#"{{"$schema": "https://json-schema.org/draft/{draft}/schema",
                "contains": {{"type": "string"}}, "unevaluatedItems": false}}"#
        )
    };
    check(
        &schema("2020-12"),
        &[r#"["a", "b"]"#],
        &[r#"["a", 1]"#, "[]"],
    );
    // 2019-09: contains annotates nothing for unevaluatedItems.
    check(
        &schema("2019-09"),
        &["1"],
        &["[]", r#"["a"]"#, r#"["a", "b"]"#],
    );
}

#[test]
fn dynamic_ref_inside_an_unknown_keyword_is_refused() {
    refused(
        r##"{"$ref": "#/x/y", "x": {"y": {"$dynamicRef": "#a"}},
            "$defs": {"a": {"$dynamicAnchor": "a", "type": "string"}}}"##,
        "dynamic reference outside",
    );
}

#[test]
fn unevaluated_through_shared_references_expands_each_once() {
    // 24 levels, each referring to the next twice: 2^24 paths.
    let n = 24;
    let defs: Vec<String> = (0..n)
        .map(|i| {
            let next = if i + 1 < n {
                format!(
                    r##", "allOf": [{{"$ref": "#/$defs/d{0}"}}, {{"$ref": "#/$defs/d{0}"}}]"##,
                    i + 1
                )
            } else {
                String::new()
            };
            format!(r#""d{i}": {{"properties": {{"p{i}": {{}}}}{next}}}"#)
        })
        .collect();
    let schema = format!(
        r##"{{"$defs": {{{}}}, "$ref": "#/$defs/d0", "unevaluatedProperties": false}}"##,
        defs.join(", ")
    );
    check(&schema, &[r#"{"p0": 1, "p23": 2}"#], &[r#"{"q": 1}"#]);
}

/// Negations of tagged alternatives (`if`/`then` chains, `not` of an
/// `anyOf`) are taken away from their context one alternative at a time:
/// built whole, each doubled or tripled the alternatives (2^14 and 3^12
/// here, past the limit of 1,024).
#[test]
fn tagged_negations_stay_small() {
    let chain: Vec<String> = (0..14)
        .map(|i| {
            format!(
                r#"{{"if":{{"properties":{{"kind":{{"const":"k{i}"}}}}}},
                    "then":{{"properties":{{"a{i}":{{"type":"integer"}}}},"required":["a{i}"]}}}}"#
            )
        })
        .collect();
    let schema = format!(
        r#"{{"type":"object","required":["kind"],"properties":{{"kind":{{"type":"string"}}}},
            "allOf":[{}]}}"#,
        chain.join(",")
    );
    check(
        &schema,
        &[
            r#"{"kind":"k3","a3":1}"#,
            r#"{"kind":"k13","a13":-2,"a5":"x"}"#,
            r#"{"kind":"other"}"#,
        ],
        &[
            r#"{"kind":"k3"}"#,
            r#"{"kind":"k3","a3":"x"}"#,
            r#"{"kind":"k0","a1":1}"#,
            r#"{"a3":1}"#,
        ],
    );

    let branches: Vec<String> = (0..12)
        .map(|i| {
            format!(
                r#"{{"properties":{{"kind":{{"const":"k{i}"}},"x{i}":{{"type":"integer"}}}},
                    "required":["kind","x{i}"]}}"#
            )
        })
        .collect();
    let schema = format!(
        r#"{{"type":"object","required":["kind"],"not":{{"anyOf":[{}]}}}}"#,
        branches.join(",")
    );
    check(
        &schema,
        &[
            r#"{"kind":"k1","x1":"s"}"#,
            r#"{"kind":"k1"}"#,
            r#"{"kind":"z","x1":1}"#,
            r#"{"kind":"k1","x2":1}"#,
        ],
        &[
            r#"{"kind":"k1","x1":1}"#,
            r#"{"kind":"k11","x11":0}"#,
            r#"{}"#,
        ],
    );
}

/// The positions around `,` between members belong to one rule per member
/// (the separator and the member), shared by every state of every variant
/// that offers the member, and each member is one rule: as many of them
/// for 12 variants of an object as for 3. Each variant's states (one per
/// set of members written) read the separator themselves, and the first
/// mask in each of them walked the same keys again.
#[test]
fn members_and_separators_are_shared_across_variants() {
    use cgram::ir::Expr;
    let names = ["a", "b", "c", "d", "n", "x"];
    let pairs: Vec<(usize, usize)> = (0..names.len())
        .flat_map(|i| (i + 1..names.len()).map(move |j| (i, j)))
        .collect();
    // The same properties in every variant; each requires its own two.
    let schema = |variants: usize| -> String {
        let any_of: Vec<String> = pairs[..variants]
            .iter()
            .map(|&(i, j)| {
                format!(
                    r#"{{"type": "object", "required": ["{}", "{}"], "additionalProperties": false,
                        "properties": {{"a": {{"type": "integer"}}, "b": {{"type": "integer"}},
                        "c": {{"type": "integer"}}, "d": {{"type": "integer"}},
                        "n": {{"type": "string"}}, "x": {{"type": "integer"}}}}}}"#,
                    names[i], names[j]
                )
            })
            .collect();
        format!(r#"{{"anyOf": [{}]}}"#, any_of.join(", "))
    };
    fn refers_to(e: &Expr, rule: u32) -> bool {
        let mut found = matches!(e, Expr::Ref(r) if *r == rule);
        e.for_each_child(|c| found |= refers_to(c, rule));
        found
    }
    let shared_rules = |variants: usize| -> (usize, usize) {
        let g = cgram::json_schema::to_grammar(
            &schema(variants),
            &Default::default(),
            &cgram::limits::Deadline::none(),
        )
        .unwrap();
        let sep = g.rule_id("spaced,").expect("a separator rule");
        let reading_sep = g.rules.iter().filter(|r| refers_to(&r.body, sep)).count();
        let members_n = g
            .rules
            .iter()
            .filter(|r| matches!(&r.body, Expr::Seq(v) if v[0] == Expr::literal("\"n\"")))
            .count();
        (reading_sep, members_n)
    };
    let (few, many) = (shared_rules(3), shared_rules(12));
    assert_eq!(
        few, many,
        "(rules reading `,`, rules of member n), 3 and 12 variants"
    );
    assert_eq!(many.1, 1);
    check(
        &schema(12),
        &[
            r#"{"a": 1, "b": 2}"#,
            r#"{"n": "s", "c": 1, "x": 2}"#,
            r#"{"d": 1, "c": 2, "n": "s", "a": 3}"#,
        ],
        &[
            r#"{"n": "s"}"#,
            r#"{"d": 1, "n": "s"}"#,
            r#"{"n": "s", "x": 1}"#,
            r#"{"a": 1, "b": 2, "a": 3}"#,
            r#"{"a": 1, "b": "s"}"#,
        ],
    );
}
