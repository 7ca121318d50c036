//! Tests of the GBNF front end: llama.cpp's own test vectors (copied into
//! `tests/data/llamacpp-grammar/`), the wording and position of every error
//! message, and the dialect's corner cases.
//!
//! A tiny reference matcher over the IR (set-of-end-positions, memoized per
//! rule and position) checks that the parsed grammars accept exactly
//! llama.cpp's passing strings; it exists only here, to validate the parser
//! before the real engine is ready, and knows nothing of tokenization: like
//! llama.cpp's test, it reads each text character as a token of id 0.

use std::collections::{BTreeSet, HashMap};

use cgram::gbnf::{
    check_left_recursion, parse, parse_rules, parse_with, select_start, ParseOptions,
};
use cgram::ir::{CharClass, Expr, Grammar, TokenSet};
use cgram::{ErrorKind, Vocab, TOKEN_SPECIAL};
use serde_json::Value;

// ---------------------------------------------------------------- helpers

fn data_path(rel: &str) -> String {
    format!(
        "{}/tests/data/llamacpp-grammar/{rel}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn load_json(rel: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(data_path(rel)).expect("test data present");
    match serde_json::from_str(&text).expect("valid JSON") {
        Value::Array(v) => v,
        _ => panic!("{rel}: expected a JSON array"),
    }
}

/// The error message of a parse that must fail.
fn err(text: &str) -> String {
    match parse(text, "root", None) {
        Ok(g) => panic!("expected an error for {text:?}, got {g:?}"),
        Err(e) => e.message().to_string(),
    }
}

fn body(text: &str) -> Expr {
    let g = parse(text, "root", None).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    g.rules[g.start as usize].body.clone()
}

fn lit(s: &str) -> Expr {
    Expr::Literal(s.to_string())
}

fn class(ranges: &[(char, char)]) -> Expr {
    Expr::Class(CharClass::from_ranges(
        ranges.iter().map(|&(a, b)| (a as u32, b as u32)),
    ))
}

fn vocab() -> Vocab {
    Vocab::new(
        vec![
            b"a".to_vec(),
            b"<|eot|>".to_vec(),
            b"<think>".to_vec(),
            b"b".to_vec(),
            b"<b>".to_vec(),
        ],
        vec![0, TOKEN_SPECIAL, TOKEN_SPECIAL, 0, 0],
        vec![1],
    )
    .unwrap()
}

// ------------------------------------------------------ reference matcher

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sym {
    Char(u32),
    Tok(u32),
}

struct RefMatcher<'g> {
    g: &'g Grammar,
    input: Vec<Sym>,
    memo: HashMap<(u32, usize), BTreeSet<usize>>,
}

impl RefMatcher<'_> {
    /// Every `j` such that `e` matches `input[i..j]`.
    fn ends(&mut self, e: &Expr, i: usize) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        match e {
            Expr::Empty => {
                out.insert(i);
            }
            Expr::Nothing => {}
            Expr::Literal(s) => {
                let cs: Vec<Sym> = s.chars().map(|c| Sym::Char(c as u32)).collect();
                if self.input.get(i..i + cs.len()) == Some(&cs[..]) {
                    out.insert(i + cs.len());
                }
            }
            Expr::Class(c) => {
                if let Some(Sym::Char(x)) = self.input.get(i) {
                    if c.contains(*x) {
                        out.insert(i + 1);
                    }
                }
            }
            Expr::Token(t) => {
                // llama.cpp's test feeds each text character as a token
                // with id 0 (and that character as its text).
                let id = match self.input.get(i) {
                    Some(Sym::Tok(x)) => Some(*x),
                    Some(Sym::Char(_)) => Some(0),
                    None => None,
                };
                if id.is_some_and(|x| t.contains(x)) {
                    out.insert(i + 1);
                }
            }
            Expr::Seq(parts) => {
                let mut cur = BTreeSet::from([i]);
                for p in parts {
                    let mut next = BTreeSet::new();
                    for &k in &cur {
                        next.extend(self.ends(p, k));
                    }
                    cur = next;
                }
                out = cur;
            }
            Expr::Alt(alts) => {
                for a in alts {
                    out.extend(self.ends(a, i));
                }
            }
            Expr::Repeat { expr, min, max } => {
                // cur: ends after exactly k copies (below min), then the
                // not-yet-seen ends (from min on, where only the union counts).
                let mut cur = BTreeSet::from([i]);
                if *min == 0 {
                    out.insert(i);
                }
                let mut k = 0u32;
                while !cur.is_empty() && max.is_none_or(|m| k < m) {
                    k += 1;
                    let mut next = BTreeSet::new();
                    for &p in &cur {
                        next.extend(self.ends(expr, p));
                    }
                    if k >= *min {
                        next.retain(|p| !out.contains(p));
                        out.extend(next.iter().copied());
                    }
                    cur = next;
                }
            }
            // GBNF never produces these; other front ends' IR might.
            Expr::And(parts) => {
                let mut sets = parts.iter().map(|p| self.ends(p, i)).collect::<Vec<_>>();
                if let Some(first) = sets.pop() {
                    out = first
                        .into_iter()
                        .filter(|j| sets.iter().all(|s| s.contains(j)))
                        .collect();
                }
            }
            Expr::JsonStrings(js) => out = self.ends(&js.spelled(), i),
            Expr::JsonQuoted(chars) => out = self.ends(&cgram::ir::json_quoted_spelled(chars), i),
            Expr::Rfc3339(r) => {
                for j in i..=self.input.len() {
                    let text: Option<String> = self.input[i..j]
                        .iter()
                        .map(|s| match s {
                            Sym::Char(c) => char::from_u32(*c),
                            _ => None,
                        })
                        .collect();
                    if text.is_some_and(|t| r.matches(&t)) {
                        out.insert(j);
                    }
                }
            }
            Expr::DecimalMultiple(_) | Expr::IntegerRange(_) => {
                for j in i..=self.input.len() {
                    let text: Option<Vec<u8>> = self.input[i..j]
                        .iter()
                        .map(|s| match s {
                            Sym::Char(c) if *c < 128 => Some(*c as u8),
                            _ => None,
                        })
                        .collect();
                    let matches = |t: &[u8]| match e {
                        Expr::DecimalMultiple(m) => m.matches(t),
                        Expr::IntegerRange(r) => r.matches(t),
                        _ => unreachable!("a number text leaf"),
                    };
                    if text.is_some_and(|t| matches(&t)) {
                        out.insert(j);
                    }
                }
            }
            Expr::Not(inner) => {
                let hit = self.ends(inner, i);
                out = (i..=self.input.len())
                    .filter(|j| !hit.contains(j))
                    .collect();
            }
            Expr::Ref(r) => {
                if let Some(s) = self.memo.get(&(*r, i)) {
                    return s.clone();
                }
                // Guards against left recursion (none in the test grammars).
                self.memo.insert((*r, i), BTreeSet::new());
                let body = &self.g.rules[*r as usize].body;
                out = self.ends(body, i);
                self.memo.insert((*r, i), out.clone());
            }
        }
        out
    }
}

fn accepts(g: &Grammar, input: Vec<Sym>) -> bool {
    let n = input.len();
    let mut m = RefMatcher {
        g,
        input,
        memo: HashMap::new(),
    };
    m.ends(&Expr::Ref(g.start), 0).contains(&n)
}

/// A test string: plain text, or a list of text parts and `{"token": N}`.
fn symbols(v: &Value) -> Vec<Sym> {
    match v {
        Value::String(s) => s.chars().map(|c| Sym::Char(c as u32)).collect(),
        Value::Array(parts) => parts.iter().flat_map(symbols).collect(),
        Value::Object(o) => vec![Sym::Tok(o["token"].as_u64().unwrap() as u32)],
        other => panic!("unexpected test string {other}"),
    }
}

// ------------------------------------------------- llama.cpp's test vectors

#[test]
fn parser_cases_match_llamacpp() {
    let cases = load_json("parser_cases.json");
    let (mut parse_ok, mut build_ok) = (0, 0);
    let mut failures = Vec::new();
    for c in &cases {
        let text = c["grammar"].as_str().unwrap();
        let valid = c["valid"].as_bool().unwrap();
        let root = c["root"].as_str().unwrap();
        let line = &c["source_line"];
        match c["stage"].as_str().unwrap() {
            "parse" => {
                let got = parse_rules(text, None);
                if got.is_ok() == valid {
                    parse_ok += 1;
                } else {
                    failures.push(format!("parse case line {line}: {text:?} gave {got:?}"));
                }
            }
            "build" => {
                // The text parses; llama.cpp's exact left-recursion verdict,
                // the IR check and the start rule give the outcome.
                let Ok(rules) = parse_rules(text, None) else {
                    failures.push(format!("build case line {line}: {text:?} does not parse"));
                    continue;
                };
                let exact = rules.check_left_recursion();
                let built = rules.into_grammar(root).and_then(|g| {
                    exact.clone()?;
                    check_left_recursion(&g)
                });
                let strict = ParseOptions {
                    reject_left_recursion: true,
                };
                if built.is_ok() == valid && parse_with(text, root, None, &strict).is_ok() == valid
                {
                    build_ok += 1;
                } else {
                    failures.push(format!("build case line {line}: {text:?} gave {built:?}"));
                }
            }
            s => panic!("unknown stage {s}"),
        }
    }
    eprintln!(
        "parser_cases.json: {parse_ok} parse + {build_ok} build cases of {} passed",
        cases.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(parse_ok + build_ok, cases.len());
}

#[test]
fn example_grammars_parse() {
    let names = [
        "arithmetic",
        "c",
        "chess",
        "english",
        "japanese",
        "json",
        "json_arr",
        "list",
    ];
    for name in names {
        let text = std::fs::read_to_string(data_path(&format!("gbnf/{name}.gbnf"))).unwrap();
        let g = parse(&text, "root", None).unwrap_or_else(|e| panic!("{name}.gbnf: {e}"));
        check_left_recursion(&g).unwrap_or_else(|e| panic!("{name}.gbnf: {e}"));
    }
    eprintln!(
        "gbnf/*.gbnf: {} of {} example grammars parsed",
        names.len(),
        names.len()
    );
}

#[test]
fn example_grammars_match_what_they_should() {
    let json = std::fs::read_to_string(data_path("gbnf/json.gbnf")).unwrap();
    let g = parse(&json, "root", None).unwrap();
    let ok = |s: &str| accepts(&g, symbols(&Value::String(s.into())));
    assert!(ok(r#"{"a": [1, 2.5, "x\u00e9"], "b": {"c": null}}"#));
    assert!(ok("{\n  \"k\": true\n}"));
    assert!(!ok("[1]")); // root must be an object
    assert!(!ok(r#"{"a": 1e10}"#)); // json.gbnf's exponent quirk
    assert!(ok(r#"{"a": 1e05}"#));

    let ja = std::fs::read_to_string(data_path("gbnf/japanese.gbnf")).unwrap();
    let g = parse(&ja, "root", None).unwrap();
    assert!(accepts(
        &g,
        symbols(&Value::String("こんにちは 世界".into()))
    ));
    assert!(!accepts(&g, symbols(&Value::String("hello".into()))));

    let list = std::fs::read_to_string(data_path("gbnf/list.gbnf")).unwrap();
    let g = parse(&list, "root", None).unwrap();
    assert!(accepts(
        &g,
        symbols(&Value::String("- one\n- two\n".into()))
    ));
    assert!(!accepts(
        &g,
        symbols(&Value::String("- o\u{2028}ne\n".into()))
    ));
}

#[test]
fn integration_cases_parse_and_match() {
    let cases = load_json("integration_cases.json");
    let (mut grammars, mut passing, mut failing) = (0, 0, 0);
    let mut problems = Vec::new();
    for c in &cases {
        let text = c["grammar"].as_str().unwrap();
        let line = &c["source_line"];
        // Token cases use only `<[N]>` ids, which need no vocabulary.
        let g = match parse(text, "root", None) {
            Ok(g) => g,
            Err(e) => {
                problems.push(format!("line {line}: {e}\n{text}"));
                continue;
            }
        };
        check_left_recursion(&g).unwrap();
        grammars += 1;
        for s in c["passing"].as_array().unwrap() {
            if accepts(&g, symbols(s)) {
                passing += 1;
            } else {
                problems.push(format!("line {line}: should accept {s}"));
            }
        }
        for s in c["failing"].as_array().unwrap() {
            if !accepts(&g, symbols(s)) {
                failing += 1;
            } else {
                problems.push(format!("line {line}: should reject {s}"));
            }
        }
    }
    eprintln!(
        "integration_cases.json: {grammars} of {} grammars parsed; reference matcher agreed on \
         {passing} passing and {failing} failing strings",
        cases.len()
    );
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(grammars, 47);
    assert_eq!((passing, failing), (196, 191));
}

#[test]
fn schema_to_grammar_outputs_parse() {
    let cases = load_json("schema_to_grammar_cases.json");
    let mut parsed = 0;
    let mut expected = 0;
    for c in &cases {
        if !c["expect_success"].as_bool().unwrap() {
            continue;
        }
        expected += 1;
        let text = c["expected_grammar"].as_str().unwrap();
        let g = parse(text, "root", None).unwrap_or_else(|e| panic!("{}: {e}\n{text}", c["name"]));
        check_left_recursion(&g).unwrap_or_else(|e| panic!("{}: {e}", c["name"]));
        parsed += 1;
    }
    eprintln!("schema_to_grammar_cases.json: {parsed} of {expected} expected grammars parsed");
    assert_eq!(parsed, 78);
}

// ------------------------------------------------------- error messages

#[test]
fn error_rule_name_expected() {
    assert_eq!(
        err("root ::= \"a\"\n  | \"b\""),
        "2:3: expected a rule name (letters, digits and '-'), found '|' (a rule continues on \
         the next line only when its line ends with '|'; a line may not start with '|')"
    );
    assert_eq!(
        err("\n\n  \"a\""),
        "3:3: expected a rule name (letters, digits and '-'), found '\"'"
    );
}

#[test]
fn error_assign_expected() {
    assert_eq!(
        err("root ::= foo\nfoo = \"a\""),
        "2:5: expected '::=' after rule name \"foo\", found '='"
    );
    assert_eq!(
        err("my_rule ::= \"a\""),
        "1:3: expected '::=' after rule name \"my\", found '_' (rule names may not contain '_')"
    );
    assert_eq!(
        err("root\n::= \"a\""),
        "1:5: expected '::=' after rule name \"root\", found a line break"
    );
    assert_eq!(
        err("root"),
        "1:5: expected '::=' after rule name \"root\", found the end of the input"
    );
}

#[test]
fn error_end_of_rule_expected() {
    assert_eq!(
        err("root ::= \"a\" |\nfoo ::= \"b\""),
        "2:5: expected an element, '|' or the end of the line in rule \"root\", found '::='; a \
         '|' or '::=' at the end of the previous line made the next line part of this rule"
    );
    assert_eq!(
        err("root ::= \"a\")"),
        "1:13: expected an element, '|' or the end of the line in rule \"root\", found ')'; \
         this ')' has no matching '('"
    );
    assert_eq!(
        err("root ::= 'a'"),
        "1:10: expected an element, '|' or the end of the line in rule \"root\", found '\\''; \
         GBNF literals are written in double quotes"
    );
    assert_eq!(
        err("root ::= \"a\" ; x"),
        "1:14: expected an element, '|' or the end of the line in rule \"root\", found ';'"
    );
}

#[test]
fn error_group() {
    assert_eq!(
        err("root ::= (\"a\"\n  \"b\""),
        "2:6: expected ')' to close the '(' at 1:10, found the end of the input"
    );
    assert_eq!(
        err("root ::= (\"a\" ]"),
        "1:15: expected ')' to close the '(' at 1:10, found ']'"
    );
    // Deeper than llama.cpp goes before its stack overflows (~18,700 on
    // an 8 MiB stack): a limit error, not a crash.
    let deep = format!("root ::= {}\"a\"{}", "(".repeat(20_001), ")".repeat(20_001));
    let e = parse(&deep, "root", None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert_eq!(e.message(), "1:20010: groups nested more than 20000 deep");
    let ok = format!("root ::= {}\"a\"{}", "(".repeat(20_000), ")".repeat(20_000));
    assert_eq!(body(&ok), lit("a"));
}

#[test]
fn error_repetition_braces() {
    assert_eq!(
        err("root ::= \"a\"{,10}"),
        "1:14: expected a number after '{', found ',' (write {0,n} for \"at most n\")"
    );
    assert_eq!(
        err("root ::= \"a\"{,}"),
        "1:14: expected a number after '{', found ',' (write {0,n} for \"at most n\")"
    );
    assert_eq!(
        err("root ::= \"a\"{x}"),
        "1:14: expected a number after '{', found 'x'"
    );
    assert_eq!(
        err("root ::= \"a\"{2,3"),
        "1:17: expected '}' to close the repetition, found the end of the input"
    );
    assert_eq!(
        err("root ::= \"a\"{2 3}"),
        "1:16: expected ',' or '}' after the repetition count, found '3'"
    );
    assert_eq!(
        err("root ::= \"a\"{5000}"),
        "1:13: repetition minimum 5000 exceeds the limit of 2000"
    );
    assert_eq!(
        err("root ::= \"a\"{5,3}"),
        "1:13: repetition maximum 3 is less than the minimum 5"
    );
    assert_eq!(
        err("root ::= \"a\"{0,99999999999999999999}"),
        "1:16: number 99999999999999999999 is too large"
    );
}

#[test]
fn error_nothing_to_repeat() {
    assert_eq!(
        err("root ::= *"),
        "1:10: expected an item before '*' to repeat"
    );
    assert_eq!(
        err("root ::= \"\"*"),
        "1:12: expected an item before '*' to repeat (the previous item matches only the \
         empty string)"
    );
    assert_eq!(
        err("root ::= []+"),
        "1:12: expected an item before '+' to repeat (the previous item matches only the \
         empty string)"
    );
    assert_eq!(
        err("root ::= [^]?"),
        "1:13: expected an item before '?' to repeat (the previous item matches only the \
         empty string)"
    );
    assert_eq!(
        err("root ::= \"a\"{0}{2}"),
        "1:16: expected an item before '{...}' to repeat (the previous item matches only the \
         empty string)"
    );
    assert_eq!(
        err("root ::= \"a\" | +"),
        "1:16: expected an item before '+' to repeat"
    );
}

#[test]
fn error_repetition_product() {
    let e = err("root ::= \"a\"{50}{50}");
    assert!(
        e.starts_with(
            "1:17: this repetition expands to 2500 rules, more than llama.cpp's limit of 2000"
        ),
        "{e}"
    );
    let e = err("root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}");
    assert!(
        e.starts_with("1:29: this repetition expands to 10098 rules"),
        "{e}"
    );
}

#[test]
fn error_literals_and_escapes() {
    assert_eq!(
        err("root ::= \"abc\n"),
        "2:1: expected '\"' to close the literal at 1:10, found the end of the input"
    );
    assert_eq!(
        err("root ::= \"a\\q\""),
        "1:12: unknown escape '\\q' (expected one of \\xHH \\uHHHH \\UHHHHHHHH \\t \\r \\n \\\\ \
         \\\" \\[ \\] \\-)"
    );
    for bad in ["\\0", "\\/", "\\b", "\\f", "\\'", "\\^"] {
        let e = err(&format!("root ::= \"{bad}\""));
        assert!(e.starts_with("1:11: unknown escape"), "{bad}: {e}");
    }
    assert_eq!(
        err("root ::= \"\\x4\""),
        "1:14: expected 2 hex digits after '\\x', found '\"'"
    );
    assert_eq!(
        err("root ::= \"\\u12g4\""),
        "1:15: expected 4 hex digits after '\\u', found 'g'"
    );
    assert_eq!(
        err("root ::= \"\\U0001F60\""),
        "1:20: expected 8 hex digits after '\\U', found '\"'"
    );
    assert_eq!(
        err("root ::= \"\\"),
        "1:11: expected an escape after '\\', found the end of the input"
    );
    assert_eq!(
        err("root ::= \"a\0\""),
        "1:12: NUL character in the grammar text (llama.cpp would silently stop reading here)"
    );
}

#[test]
fn error_classes() {
    assert_eq!(
        err("root ::= [abc"),
        "1:14: expected ']' to close the character class at 1:10, found the end of the input"
    );
    assert_eq!(
        err("root ::= [a-"),
        "1:13: expected ']' to close the character class at 1:10, found the end of the input"
    );
    assert_eq!(
        err("root ::= [\\d]"),
        "1:11: unknown escape '\\d' (expected one of \\xHH \\uHHHH \\UHHHHHHHH \\t \\r \\n \\\\ \
         \\\" \\[ \\] \\-)"
    );
}

#[test]
fn error_tokens() {
    assert_eq!(
        err("root ::= ! <[1]>"),
        "1:11: expected '<' after '!', found ' '"
    );
    assert_eq!(
        err("root ::= <[x]>"),
        "1:12: expected a token id after '<[', found 'x'"
    );
    assert_eq!(
        err("root ::= <[4294967296]>"),
        "1:12: token id 4294967296 is too large (at most 4294967295)"
    );
    assert_eq!(
        err("root ::= <[1>"),
        "1:13: expected ']' to close the token id, found '>'"
    );
    assert_eq!(
        err("root ::= <[1]"),
        "1:14: expected '>' to close the token id, found the end of the input"
    );
    assert_eq!(
        err("root ::= <think>"),
        "1:10: a token given by its text (<...>) needs a vocabulary; without one only token \
         ids (<[123]>) can be used"
    );
    let v = vocab();
    assert_eq!(
        parse("root ::= <nope>", "root", Some(&v))
            .unwrap_err()
            .message(),
        "1:10: token \"<nope>\" is not exactly one token of the vocabulary"
    );
    assert_eq!(
        parse("root ::= \"x\" !<think", "root", Some(&v))
            .unwrap_err()
            .message(),
        "1:21: expected '>' to close the token at 1:15, found the end of the input"
    );
}

#[test]
fn error_undefined_rule() {
    assert_eq!(
        err("root ::= expr\nexpr ::= term (\"+\" term)*\nterm ::= numero\nnumber ::= [0-9]+"),
        "3:10: undefined rule \"numero\" (referenced in rule \"term\")"
    );
    // Also in a rule nobody uses.
    assert_eq!(
        err("root ::= \"a\"\nunused ::= (\"x\" | missing)"),
        "2:19: undefined rule \"missing\" (referenced in rule \"unused\")"
    );
}

#[test]
fn error_empty_grammar() {
    assert_eq!(
        err(""),
        "1:1: empty grammar: expected at least one rule such as `root ::= \"text\"`"
    );
    assert_eq!(
        err("# only a comment\n\n   \n"),
        "4:1: empty grammar: expected at least one rule such as `root ::= \"text\"`"
    );
}

#[test]
fn error_missing_start_rule() {
    let text = "rot ::= expr\nexpr ::= [0-9]+";
    let rules = parse_rules(text, None).unwrap().rules;
    assert_eq!(
        select_start(rules, "root").unwrap_err().message(),
        "the grammar has no rule named \"root\" to start from (it defines: rot, expr)"
    );
    assert_eq!(parse(text, "rot", None).unwrap().start, 0);
    assert_eq!(parse(text, "expr", None).unwrap().start, 1);
    // llama.cpp's generated names are not rules.
    assert!(parse("root ::= \"a\"*", "root_1", None).is_err());
}

#[test]
fn error_left_recursion() {
    let lr = |text: &str| {
        let g = parse(text, "root", None).unwrap();
        check_left_recursion(&g).unwrap_err().message().to_string()
    };
    assert_eq!(
        lr("root ::= \"a\" | root \"a\""),
        "left recursion: rule \"root\" can reach itself before matching any input (root -> \
         root); llama.cpp rejects left-recursive grammars"
    );
    assert_eq!(
        lr(
            "root ::= asdf\nasdf ::= \"a\" | foo \"b\"\nfoo ::= \"c\" | empty asdf \"d\" | \"e\"\n\
            empty ::= \"blah\" | "
        ),
        "left recursion: rule \"asdf\" can reach itself before matching any input (asdf -> \
         foo -> asdf); llama.cpp rejects left-recursive grammars"
    );
}

// ----------------------------------------------------------- corner cases

#[test]
fn newlines_end_rules_except_after_assign_bar_and_in_groups() {
    let g = parse(
        "root ::=\n  \"a\" |\n\n  # comment\n  \"b\"\nx ::= (\n \"c\"\n |\n \"d\"\n)\n",
        "root",
        None,
    )
    .unwrap();
    assert_eq!(g.rules[0].body, Expr::Alt(vec![lit("a"), lit("b")]));
    assert_eq!(g.rules[1].body, Expr::Alt(vec![lit("c"), lit("d")]));
    // A trailing '|' at the very end: an empty alternative.
    assert_eq!(
        body("root ::= \"a\" |"),
        Expr::Alt(vec![lit("a"), Expr::Empty])
    );
    assert_eq!(
        body("root ::= | \" \""),
        Expr::Alt(vec![Expr::Empty, lit(" ")])
    );
    // An empty body.
    assert_eq!(body("root ::="), Expr::Empty);
    assert_eq!(body("root ::=\n"), Expr::Empty);
    // Items on the next line without '|' are a new (bad) rule.
    assert!(err("root ::= \"a\"\n \"b\"").starts_with("2:2: expected a rule name"));
    // Line breaks inside repetition braces only inside groups.
    assert_eq!(
        body("root ::= (\"a\"{\n2,\n3\n})"),
        Expr::repeat(lit("a"), 2, Some(3))
    );
    assert!(parse("root ::= \"a\"{\n2}", "root", None).is_err());
}

#[test]
fn line_ends_crlf_and_cr() {
    let g = parse(
        "root ::= a\r\na ::= \"x\" |\r\n  \"y\"\r\n\r\n",
        "root",
        None,
    )
    .unwrap();
    assert_eq!(g.rules[1].body, Expr::Alt(vec![lit("x"), lit("y")]));
    let g = parse("root ::= a\ra ::= \"x\"\r", "root", None).unwrap();
    assert_eq!(g.rules[1].body, lit("x"));
    assert_eq!(
        err("root ::= a\r\na ::= \"x\"\r\nb ::= %"),
        "3:7: expected an element, '|' or the end of the line in rule \"b\", found '%'"
    );
    assert_eq!(
        err("root ::= a\ra ::= \"x\"\rb ::= %"),
        "3:7: expected an element, '|' or the end of the line in rule \"b\", found '%'"
    );
}

#[test]
fn comments_everywhere() {
    let g = parse(
        "# head\nroot ::= a # tail\n# between\na ::= # after assign\n  \"x\" # after item\n",
        "root",
        None,
    )
    .unwrap();
    assert_eq!(g.rules[1].body, lit("x"));
    assert_eq!(
        body("root ::= (\"a\" # inside\n \"b\")"),
        Expr::Seq(vec![lit("a"), lit("b")])
    );
    // '#' inside literals and classes is text.
    assert_eq!(
        body("root ::= \"#\" [#]"),
        Expr::Seq(vec![lit("#"), class(&[('#', '#')])])
    );
    // A comment between the name and '::=' may not hide a line break.
    assert!(parse("root # c\n::= \"a\"", "root", None).is_err());
}

#[test]
fn empty_literal_and_class_are_epsilon() {
    assert_eq!(body("root ::= \"\""), Expr::Empty);
    assert_eq!(body("root ::= []"), Expr::Empty);
    assert_eq!(body("root ::= [^]"), Expr::Empty);
    assert_eq!(
        body("root ::= \"a\" [] \"b\""),
        Expr::Seq(vec![lit("a"), lit("b")])
    );
    // {0} removes the item; "a"?{0} is fine since '?' left an item.
    assert_eq!(body("root ::= \"a\"{0}"), Expr::Empty);
    assert_eq!(body("root ::= \"a\"{0,0} \"b\""), lit("b"));
    assert_eq!(body("root ::= \"a\"?{0}"), Expr::Empty);
    // An empty group can be repeated (llama.cpp emits a rule reference).
    assert_eq!(body("root ::= ()*"), Expr::Empty);
    assert_eq!(body("root ::= (\"\")+"), Expr::Empty);
}

#[test]
fn last_definition_wins() {
    let g = parse("root ::= \"a\"\nx ::= \"1\"\nroot ::= \"b\"", "root", None).unwrap();
    assert_eq!(g.rules.len(), 2);
    assert_eq!(g.rules[0].name, "root");
    assert_eq!(g.rules[0].body, lit("b"));
    assert_eq!(g.start, 0);
}

#[test]
fn undefined_reference_in_overridden_definition_follows_llamacpp() {
    // The old body's reference is dropped and no rule slot above it exists:
    // llama.cpp accepts.
    assert_eq!(body("root ::= foo\nroot ::= \"a\""), lit("a"));
    // A later rule makes llama.cpp's table cover foo's slot: rejected.
    assert_eq!(
        err("root ::= foo\nroot ::= \"a\"\nbar ::= \"b\""),
        "1:10: undefined rule \"foo\" (referenced in rule \"root\")"
    );
    // Inside a group the reference lives on in a generated rule: rejected.
    assert_eq!(
        err("root ::= (\"x\" foo)\nroot ::= \"a\""),
        "1:15: undefined rule \"foo\" (referenced in rule \"root\")"
    );
    // Repeated zero times, it never reaches a rule.
    assert_eq!(body("root ::= \"a\" foo{0}"), lit("a"));
    // ... but '?' keeps it in a generated rule.
    assert!(parse("root ::= \"a\" foo?{0}", "root", None).is_err());
}

#[test]
fn names() {
    let g = parse(
        "root ::= Upper-case 9lives\nUpper-case ::= \"A\"\n9lives ::= \"9\"",
        "root",
        None,
    )
    .unwrap();
    assert_eq!(g.rules[1].name, "Upper-case");
    assert_eq!(g.rules[2].name, "9lives");
    assert_eq!(g.rules[0].body, Expr::Seq(vec![Expr::Ref(1), Expr::Ref(2)]));
    // A name right before '(' (c.gbnf writes `factor((...))`).
    let g = parse("root ::= a(\"x\")\na ::= \"y\"", "root", None).unwrap();
    assert_eq!(g.rules[0].body, Expr::Seq(vec![Expr::Ref(1), lit("x")]));
}

#[test]
fn classes_ranges_and_dashes() {
    assert_eq!(
        body("root ::= [a-z0-9_]"),
        class(&[('a', 'z'), ('0', '9'), ('_', '_')])
    );
    assert_eq!(body("root ::= [-a]"), class(&[('-', '-'), ('a', 'a')]));
    assert_eq!(body("root ::= [a-]"), class(&[('-', '-'), ('a', 'a')]));
    assert_eq!(
        body("root ::= [a\\-z]"),
        class(&[('-', '-'), ('a', 'a'), ('z', 'z')])
    );
    assert_eq!(body("root ::= [+--]"), class(&[('+', '-')]));
    assert_eq!(
        body("root ::= [a-z-0]"),
        class(&[('a', 'z'), ('-', '-'), ('0', '0')])
    );
    assert_eq!(body("root ::= [[\\]]"), class(&[('[', '['), (']', ']')]));
    assert_eq!(body("root ::= [a^]"), class(&[('^', '^'), ('a', 'a')]));
    assert_eq!(
        body("root ::= [^^]"),
        Expr::Class(CharClass::single('^' as u32).negate())
    );
    assert_eq!(
        body("root ::= [^1-3]"),
        Expr::Class(CharClass::from_ranges([(0x31, 0x33)]).negate())
    );
    // Reversed ranges match nothing.
    assert_eq!(body("root ::= [z-a]"), Expr::Nothing);
    assert_eq!(body("root ::= [z-ab]"), class(&[('b', 'b')]));
    // A raw line break is a member.
    assert_eq!(body("root ::= [\n]"), class(&[('\n', '\n')]));
    // english.gbnf's punctuation class, with `,-.` a range.
    assert_eq!(
        body("root ::= [!\"#$%&'()*+,-./:;<=>?@[\\\\\\]^_`{|}~]"),
        class(&[('!', '/'), (':', '@'), ('[', '`'), ('{', '~')])
    );
    assert_eq!(body("root ::= ."), Expr::Class(CharClass::any()));
}

#[test]
fn literals_escapes_and_utf8() {
    assert_eq!(body("root ::= \"こんにちは\""), lit("こんにちは"));
    assert_eq!(body("root ::= [ぁ-ゟ]"), class(&[('ぁ', 'ゟ')]));
    assert_eq!(
        body("root ::= \"\\x41\\u00e9\\U0001F600\\t\\r\\n\\\\\\\"\\[\\]\\-\""),
        lit("Aé😀\t\r\n\\\"[]-")
    );
    // \xHH is a code point, not a byte.
    assert_eq!(body("root ::= \"\\xe9\""), lit("é"));
    assert_eq!(body("root ::= \"\\x00\""), lit("\0"));
    // Raw line breaks inside a literal.
    assert_eq!(body("root ::= \"a\nb\""), lit("a\nb"));
    // Surrogates and values past U+10FFFF match nothing.
    assert_eq!(body("root ::= \"a\\uD800\""), Expr::Nothing);
    assert_eq!(body("root ::= \"\\U00110000\""), Expr::Nothing);
    assert_eq!(body("root ::= [\\uD800-\\uDFFF]"), Expr::Nothing);
    assert_eq!(body("root ::= [^\\uD800]"), Expr::Class(CharClass::any()));
    assert_eq!(body("root ::= [a\\uD800]"), class(&[('a', 'a')]));
    // ... but they are items, so they can be repeated.
    assert_eq!(body("root ::= \"\\uD800\"*"), Expr::Empty);
    assert_eq!(body("root ::= \"\\uD800\"+"), Expr::Nothing);
}

#[test]
fn repetition_operators() {
    let a = lit("a");
    assert_eq!(body("root ::= \"a\"*"), Expr::star(a.clone()));
    assert_eq!(body("root ::= \"a\"+"), Expr::plus(a.clone()));
    assert_eq!(body("root ::= \"a\"?"), Expr::optional(a.clone()));
    assert_eq!(
        body("root ::= \"a\"{2}"),
        Expr::repeat(a.clone(), 2, Some(2))
    );
    assert_eq!(body("root ::= \"a\"{2,}"), Expr::repeat(a.clone(), 2, None));
    assert_eq!(
        body("root ::= \"a\"{ 4}"),
        Expr::repeat(a.clone(), 4, Some(4))
    );
    assert_eq!(
        body("root ::= \"a\"{ 2 , 4 }"),
        Expr::repeat(a.clone(), 2, Some(4))
    );
    assert_eq!(body("root ::= \"a\"{1}"), a.clone());
    // The whole literal is repeated.
    assert_eq!(body("root ::= \"ab\"*"), Expr::star(lit("ab")));
    // Maxima above 2000 mean "unbounded"; 2000 itself is kept.
    assert_eq!(body("root ::= \"a\"{0,5000}"), Expr::star(a.clone()));
    assert_eq!(
        body("root ::= \"a\"{3,5000}"),
        Expr::repeat(a.clone(), 3, None)
    );
    assert_eq!(
        body("root ::= \"a\"{0,2000}"),
        Expr::repeat(a.clone(), 0, Some(2000))
    );
    assert_eq!(
        body("root ::= \"a\"{2000}"),
        Expr::repeat(a.clone(), 2000, Some(2000))
    );
    // Stacked operators.
    assert_eq!(body("root ::= \"a\"+?"), Expr::star(a.clone()));
    assert_eq!(body("root ::= \"a\"???"), Expr::optional(a.clone()));
    assert_eq!(
        body("root ::= \"a\"{2}{3}"),
        Expr::repeat(a.clone(), 6, Some(6))
    );
    assert_eq!(
        body("root ::= \"a\"{2,3}+"),
        Expr::repeat(a.clone(), 2, None)
    );
    assert_eq!(
        body("root ::= \"a\"{2}?"),
        Expr::optional(Expr::repeat(a.clone(), 2, Some(2)))
    );
    assert_eq!(
        body("root ::= \"a\"{3}{2,3}"),
        Expr::repeat(Expr::repeat(a.clone(), 3, Some(3)), 2, Some(3))
    );
    assert_eq!(
        body(&format!("root ::= \"a\"{}", "?".repeat(10_000))),
        Expr::optional(a)
    );
    // Groups, tokens, classes, '.' and references repeat as a whole.
    assert_eq!(
        body("root ::= (\"a\" \"b\")*"),
        Expr::star(Expr::Seq(vec![lit("a"), lit("b")]))
    );
    assert_eq!(
        body("root ::= .+"),
        Expr::plus(Expr::Class(CharClass::any()))
    );
}

#[test]
fn repetition_product_counts_symbols_like_llamacpp() {
    // 40 x 50 = 2000 is allowed, one more is not.
    assert!(parse("root ::= \"a\"{40}{50}", "root", None).is_ok());
    assert!(parse("root ::= \"a\"{40}{51}", "root", None).is_err());
    // A group counts every rule created inside it, its own included: here
    // the group and the two new names b, c (defined later).
    let later = "root ::= (b c){667}\nb ::= \"b\"\nc ::= \"c\"";
    assert!(
        err(later).contains("expands to 2001 rules"),
        "{}",
        err(later)
    );
    let earlier = "b ::= \"b\"\nc ::= \"c\"\nroot ::= (b c){667}";
    assert!(parse(earlier, "root", None).is_ok());
    // `?` inside the group adds its generated rule.
    assert!(parse("root ::= (\"x\"?){1000}", "root", None).is_ok());
    assert!(parse("root ::= (\"x\"?){1001}", "root", None).is_err());
    // Each alternative and each item starts afresh.
    assert!(parse(
        "root ::= \"a\"{2000} \"b\"{2000} | \"c\"{2000}",
        "root",
        None
    )
    .is_ok());
    // A maximum above 2000 is unbounded and counts its minimum.
    assert!(parse("root ::= \"a\"{2,5000}{1000}", "root", None).is_ok());
    assert!(parse("root ::= \"a\"{3,5000}{1000}", "root", None).is_err());
}

#[test]
fn tokens() {
    let tok = |ids: &[u32], negated: bool| {
        Expr::Token(TokenSet {
            ids: ids.to_vec(),
            negated,
        })
    };
    assert_eq!(
        body("root ::= <[1000]> !<[1001]> <[1001]>"),
        Expr::Seq(vec![
            tok(&[1000], false),
            tok(&[1001], true),
            tok(&[1001], false)
        ])
    );
    assert_eq!(body("root ::= (!<[11]>)*"), Expr::star(tok(&[11], true)));
    assert_eq!(body("root ::= <[4294967295]>"), tok(&[u32::MAX], false));
    let v = vocab();
    let g = parse("root ::= <think> !<|eot|> <b> <[3]>", "root", Some(&v)).unwrap();
    assert_eq!(
        g.rules[0].body,
        Expr::Seq(vec![
            tok(&[2], false),
            tok(&[1], true),
            tok(&[4], false),
            tok(&[3], false)
        ])
    );
    // The text form ends at the first '>'.
    assert!(parse("root ::= <a>b>", "root", Some(&v)).is_err());
}

#[test]
fn left_recursion_as_llamacpp_judges_it() {
    // Verdicts of llama.cpp's llama_grammar_init_impl (checked against the
    // library): its check runs on its desugaring, where `x*` is
    // `x' ::= x x' |` and only a syntactically empty alternative makes a
    // rule "possibly empty".
    let llama = |text: &str| {
        parse_rules(text, None)
            .unwrap()
            .check_left_recursion()
            .is_ok()
    };
    let ir = |text: &str| check_left_recursion(&parse(text, "root", None).unwrap()).is_ok();
    for (text, llama_ok, ir_ok) in [
        ("root ::= \"a\" | root \"a\"", false, false),
        ("root ::= b root | \"y\"\nb ::= | \"x\"", false, false),
        ("root ::= \"x\"* root | \"y\"", false, false),
        // llama.cpp refuses a loop over an item that may be empty ...
        ("root ::= b*\nb ::= | \"x\"", false, true),
        ("root ::= (\"\")*", false, true),
        ("root ::= \"a\"?*", false, true),
        ("root ::= \"a\"**", false, true),
        // ... unless a group hides it, since a group's rule has no empty
        // alternative of its own.
        ("root ::= (\"a\"?)*", true, true),
        ("root ::= (\"a\"?)+", true, true),
        ("root ::= \"a\"?{2,3}", true, true),
        ("root ::= ( [x]* )*", true, true),
        // Rules generated for an overridden definition are still checked.
        ("root ::= \"a\"?*\nroot ::= \"b\"", false, true),
        // llama.cpp's shallow nullability misses these; the IR check not.
        (
            "root ::= b root | \"y\"\nb ::= c\nc ::= | \"x\"",
            true,
            false,
        ),
        ("root ::= (\"x\"?) root | \"y\"", true, false),
    ] {
        assert_eq!(llama(text), llama_ok, "llama.cpp verdict on {text:?}");
        assert_eq!(ir(text), ir_ok, "IR verdict on {text:?}");
    }
    assert_eq!(
        parse_rules("root ::= \"a\"?*", None)
            .unwrap()
            .check_left_recursion()
            .unwrap_err()
            .message(),
        "left recursion: (repetition in root) (a rule llama.cpp generates) can reach itself \
         before matching any input ((repetition in root) -> (repetition in root)); llama.cpp \
         rejects left-recursive grammars; llama.cpp expands `x*` to `x' ::= x x' |`, which is \
         left-recursive when x is a rule with an empty alternative (such as another `?` or `*`)"
    );
    assert_eq!(
        parse_rules(
            "root ::= asdf\nasdf ::= \"a\" | foo \"b\"\nfoo ::= \"c\" | asdf \"d\"",
            None
        )
        .unwrap()
        .check_left_recursion()
        .unwrap_err()
        .message(),
        "left recursion: rule \"asdf\" can reach itself before matching any input (asdf -> \
         foo -> asdf); llama.cpp rejects left-recursive grammars"
    );
    // parse accepts left recursion; parse_with can refuse it.
    let strict = ParseOptions {
        reject_left_recursion: true,
    };
    assert!(parse("root ::= root \"a\" | \"b\"", "root", None).is_ok());
    assert!(parse_with("root ::= root \"a\" | \"b\"", "root", None, &strict).is_err());
    // A missing start rule is reported before left recursion, as in llama.cpp.
    assert!(parse_with("a ::= a", "root", None, &strict)
        .unwrap_err()
        .message()
        .contains("no rule named \"root\""));
}

#[test]
fn left_recursion_cases() {
    let check = |text: &str| check_left_recursion(&parse(text, "root", None).unwrap()).is_ok();
    assert!(check("root ::= \"a\" root | \"b\""));
    assert!(check("root ::= a\na ::= \"x\"+ a | \"y\""));
    assert!(!check("root ::= b root | \"y\"\nb ::= | \"x\""));
    assert!(!check("root ::= \"x\"* root | \"y\""));
    assert!(!check("root ::= (\"x\"?) root | \"y\""));
    assert!(!check("root ::= [] root | \"y\""));
    // Nullability through a chain of rules (llama.cpp's own check misses
    // this one; cgram rejects it).
    assert!(!check("root ::= b root | \"y\"\nb ::= c\nc ::= | \"x\""));
    // An unused rule counts too.
    assert!(!check("root ::= \"a\"\nu ::= u \"b\""));
    // A non-nullable prefix stops it, even one that matches nothing.
    assert!(check("root ::= \"\\uD800\" root | \"y\""));
    // Zero copies of a reference are no reference.
    assert!(check("root ::= root{0} \"a\""));
}

#[test]
fn rule_order_and_ids() {
    let g = parse("b ::= \"b\"\nroot ::= b a\na ::= \"a\"", "root", None).unwrap();
    let names: Vec<&str> = g.rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["b", "root", "a"]);
    assert_eq!(g.start, 1);
    assert_eq!(g.rules[1].body, Expr::Seq(vec![Expr::Ref(0), Expr::Ref(2)]));
}
