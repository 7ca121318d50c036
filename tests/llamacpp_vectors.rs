//! llama.cpp parity on its own grammar test vectors
//! (`tests/data/llamacpp-grammar`, see its README.md).
//!
//! - `integration_cases.json`: every grammar compiles; every `passing`
//!   string is accepted and ends accepting, every `failing` one is refused
//!   somewhere or ends incomplete. Strings are fed whole, one code point at
//!   a time (as llama.cpp's test does), and as real Llama 3 tokens. The two
//!   cases with token elements are fed as llama.cpp's test feeds them: one
//!   token per code point of text, `{"token": N}` as token N, and their
//!   masks are checked against the reference at every step. The reference
//!   matcher must agree with llama.cpp on every string too (that validates
//!   the reference the oracle relies on).
//! - `parser_cases.json`: what llama.cpp refuses to parse or build, cgram
//!   refuses to compile (left recursion only without
//!   `FLAG_GBNF_ALLOW_LEFT_RECURSION`; with it, the left-recursive grammars
//!   are checked against the reference's Earley recognizer on every short
//!   string over their alphabet), and what it accepts compiles.

mod common;

use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;

use cgram::ir::{Expr, Grammar};
use cgram::source::{compile, CompileOptions, Kind, FLAG_GBNF_ALLOW_LEFT_RECURSION};
use cgram::{Engine, Matcher, Vocab, TOKEN_SPECIAL};
use serde_json::Value;

use common::reference::{Bnf, Earley, StackCursor};
use common::{mask_bit, show};

/// One piece of a test string.
#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Token(u32),
}

fn parts_of(v: &Value) -> Vec<Part> {
    match v {
        Value::String(s) => vec![Part::Text(s.clone())],
        Value::Array(a) => a
            .iter()
            .map(|p| match p {
                Value::String(s) => Part::Text(s.clone()),
                Value::Object(o) => Part::Token(o["token"].as_u64().unwrap() as u32),
                other => panic!("unexpected part {other}"),
            })
            .collect(),
        other => panic!("unexpected test string {other}"),
    }
}

fn show_parts(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(s) => show(s.as_bytes()),
            Part::Token(n) => format!("<[{n}]>"),
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Passed/total counts and what failed.
#[derive(Default)]
struct Tally {
    passed: usize,
    total: usize,
    failures: Vec<String>,
}

impl Tally {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.total += 1;
        if ok {
            self.passed += 1;
        } else {
            self.failures.push(what());
        }
    }

    fn report(&self, label: &str) {
        println!("{label}: {}/{} passed", self.passed, self.total);
        for f in &self.failures {
            println!("  FAILED {f}");
        }
    }
}

fn gbnf_options() -> CompileOptions {
    CompileOptions {
        kind: Kind::Gbnf,
        ..CompileOptions::default()
    }
}

/// The engine on plain text: accepted whole (one `accept_bytes`) and
/// accepting at the end. `None` when it is refused.
fn engine_text_whole(g: &Arc<cgram::CompiledGrammar>, text: &str) -> bool {
    let mut m = Matcher::new(g.clone());
    m.accept_bytes(text.as_bytes()).is_ok() && m.is_accepting()
}

/// The engine on plain text fed one code point at a time.
fn engine_text_chars(g: &Arc<cgram::CompiledGrammar>, text: &str) -> bool {
    let mut m = Matcher::new(g.clone());
    let mut buf = [0u8; 4];
    for c in text.chars() {
        if m.accept_bytes(c.encode_utf8(&mut buf).as_bytes()).is_err() {
            return false;
        }
    }
    m.is_accepting()
}

/// The grammar lowered for the two recognizers of the reference.
struct RefBnf {
    /// Right-recursive loops, for the stack machine.
    right: Rc<Bnf>,
    /// Left-recursive loops, for Earley.
    left: Rc<Bnf>,
}

impl RefBnf {
    fn new(ir: &Grammar) -> RefBnf {
        RefBnf {
            right: Rc::new(Bnf::from_ir(ir)),
            left: Rc::new(Bnf::from_ir_left(ir)),
        }
    }
}

/// The reference (both recognizers, which must agree) on plain text.
fn reference_text(bnf: &RefBnf, text: &str) -> Result<bool, String> {
    let mut e = Earley::new(bnf.left.clone());
    let mut s = StackCursor::new(bnf.right.clone());
    let mut buf = [0u8; 4];
    for c in text.chars() {
        let b = c.encode_utf8(&mut buf).as_bytes();
        let ev = e.feed_bytes(b);
        let sv = s.feed_bytes(b);
        if ev != sv {
            return Err(format!(
                "reference recognizers disagree on viability: Earley {ev}, stack {sv}"
            ));
        }
        if !ev {
            return Ok(false);
        }
    }
    if e.complete() != s.complete() {
        return Err("reference recognizers disagree on completeness".into());
    }
    Ok(e.complete())
}

/// A vocabulary for the token cases: ids `0..64` are the tokens the
/// grammars name (special tokens `<[N]>`, or text tokens with that text),
/// id 64 is end-of-sequence, then one text token per code point used.
fn token_case_vocab(strings: &[Vec<Part>], special: bool) -> (Arc<Engine>, Vec<(char, u32)>) {
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    let mut flags = Vec::new();
    for i in 0..64u32 {
        tokens.push(format!("<[{i}]>").into_bytes());
        flags.push(if special { TOKEN_SPECIAL } else { 0 });
    }
    tokens.push(b"</s>".to_vec());
    flags.push(TOKEN_SPECIAL);
    let mut chars = BTreeSet::new();
    for s in strings {
        for p in s {
            if let Part::Text(t) = p {
                chars.extend(t.chars());
            }
        }
    }
    chars.extend(['x', ' ', '<']);
    let mut map = Vec::new();
    for c in chars {
        map.push((c, tokens.len() as u32));
        tokens.push(c.to_string().into_bytes());
        flags.push(0);
    }
    (
        Engine::new(Vocab::new(tokens, flags, vec![64]).unwrap()),
        map,
    )
}

/// The token ids a test string is fed as (llama.cpp's test: one token per
/// code point of text).
fn token_ids(parts: &[Part], map: &[(char, u32)]) -> Vec<u32> {
    let mut out = Vec::new();
    for p in parts {
        match p {
            Part::Token(n) => out.push(*n),
            Part::Text(s) => {
                for c in s.chars() {
                    out.push(map.iter().find(|(x, _)| *x == c).unwrap().1);
                }
            }
        }
    }
    out
}

/// Feeds a token string to the engine and the reference; at every step
/// the engine's whole mask is compared with the reference (Earley, one run
/// per token id). Returns (engine verdict, reference verdict).
fn run_token_string(
    g: &Arc<cgram::CompiledGrammar>,
    bnf: &RefBnf,
    vocab: &Vocab,
    ids: &[u32],
    mask_tally: &mut Tally,
    label: &str,
) -> (bool, bool) {
    let feed_of = |t: u32| -> (Option<u32>, Vec<u8>) {
        if vocab.is_special(t) {
            (Some(t), Vec::new())
        } else {
            (Some(t), vocab.token_bytes(t).to_vec())
        }
    };
    let mut m = Matcher::new(g.clone());
    let mut e = Earley::new(bnf.left.clone());
    let mut s = StackCursor::new(bnf.right.clone());
    let mut engine_ok = true;
    let mut reference_ok = true;
    let mut mask = vec![0u32; vocab.mask_words()];
    for (k, &t) in ids.iter().enumerate() {
        // The whole mask against the reference.
        m.fill_mask(&mut mask).unwrap();
        let complete = e.complete();
        let mut bad = Vec::new();
        for u in 0..vocab.len() as u32 {
            let want = if vocab.is_eos(u) {
                complete
            } else {
                let (id, bytes) = feed_of(u);
                e.viable_after(id, &bytes)
            };
            if want != mask_bit(&mask, u) {
                bad.push(format!(
                    "token {u} {}: engine {} reference {want}",
                    show(vocab.token_bytes(u)),
                    !want
                ));
            }
        }
        mask_tally.check(bad.is_empty(), || {
            format!(
                "{label}: mask after {k} tokens {:?}: {}",
                &ids[..k],
                bad.join("; ")
            )
        });
        let (id, bytes) = feed_of(t);
        let ev = e.feed(id, &bytes);
        let sv = s.feed(id, &bytes);
        assert_eq!(ev, sv, "{label}: reference recognizers disagree");
        let accepted = m.accept(t).is_ok();
        if accepted != ev {
            mask_tally.check(false, || {
                format!("{label}: accept({t}) after {k} tokens = {accepted}, reference {ev}")
            });
        }
        if !accepted {
            engine_ok = false;
        }
        if !ev {
            reference_ok = false;
        }
        if !accepted || !ev {
            break;
        }
    }
    if engine_ok {
        engine_ok = m.is_accepting();
    }
    if reference_ok {
        assert_eq!(
            e.complete(),
            s.complete(),
            "{label}: reference recognizers disagree"
        );
        reference_ok = e.complete();
    }
    (engine_ok, reference_ok)
}

fn cases_file(name: &str) -> Vec<Value> {
    let v = common::read_json(&common::llamacpp_dir().join(name));
    v.as_array().unwrap().clone()
}

fn case_label(c: &Value) -> String {
    format!(
        "{}:{} {:?}",
        c["kind"].as_str().unwrap_or("parser"),
        c["source_line"],
        c["name"].as_str().unwrap_or("")
    )
}

#[test]
fn integration_cases() {
    let cases = cases_file("integration_cases.json");
    let engine = common::synthetic_engine();
    let mut compiled = Tally::default();
    let mut string_verdicts = Tally::default();
    let mut reference = Tally::default();
    let mut masks = Tally::default();
    for c in &cases {
        let label = case_label(c);
        let text = c["grammar"].as_str().unwrap();
        let passing: Vec<Vec<Part>> = c["passing"]
            .as_array()
            .unwrap()
            .iter()
            .map(parts_of)
            .collect();
        let failing: Vec<Vec<Part>> = c["failing"]
            .as_array()
            .unwrap()
            .iter()
            .map(parts_of)
            .collect();
        let uses_tokens = c["uses_tokens"].as_bool().unwrap_or(false);
        let strings: Vec<(bool, &Vec<Part>)> = passing
            .iter()
            .map(|p| (true, p))
            .chain(failing.iter().map(|f| (false, f)))
            .collect();
        if uses_tokens {
            // Token ids named by the grammar as special tokens, then as
            // text tokens: the verdicts must not change. One vector passes
            // when both runs agree with llama.cpp.
            let all: Vec<Vec<Part>> = passing.iter().chain(failing.iter()).cloned().collect();
            let mut runs = Vec::new();
            let mut errors = Vec::new();
            for special in [true, false] {
                let (tv, map) = token_case_vocab(&all, special);
                match compile(&tv, text.as_bytes(), &gbnf_options()) {
                    Ok(g) => {
                        let ir = cgram::gbnf::parse(text, "root", Some(tv.vocab())).unwrap();
                        runs.push((special, tv, map, g, RefBnf::new(&ir)));
                    }
                    Err(e) => errors.push(format!("{label}: compile failed: {e}")),
                }
            }
            compiled.check(errors.is_empty(), || errors.join("; "));
            if !errors.is_empty() {
                continue;
            }
            for (want, parts) in &strings {
                let mut e_fail = Vec::new();
                let mut r_fail = Vec::new();
                for (special, tv, map, g, bnf) in &runs {
                    let kind = if *special { "special" } else { "text" };
                    let ids = token_ids(parts, map);
                    let l = format!("{label} [{kind} tokens] {}", show_parts(parts));
                    let (e, r) = run_token_string(g, bnf, tv.vocab(), &ids, &mut masks, &l);
                    if e != *want {
                        e_fail.push(format!("{l}: engine says {e}, llama.cpp {want}"));
                    }
                    if r != *want {
                        r_fail.push(format!("{l}: reference says {r}, llama.cpp {want}"));
                    }
                }
                string_verdicts.check(e_fail.is_empty(), || e_fail.join("; "));
                reference.check(r_fail.is_empty(), || r_fail.join("; "));
            }
            continue;
        }
        let g = compile(&engine, text.as_bytes(), &gbnf_options());
        compiled.check(g.is_ok(), || {
            format!("{label}: compile failed: {:?}", g.as_ref().err())
        });
        let Ok(g) = g else { continue };
        let ir = cgram::gbnf::parse(text, "root", Some(engine.vocab())).unwrap();
        let bnf = RefBnf::new(&ir);
        for (want, parts) in &strings {
            let [Part::Text(s)] = parts.as_slice() else {
                panic!("{label}: token parts in a case without tokens");
            };
            let whole = engine_text_whole(&g, s);
            let chars = engine_text_chars(&g, s);
            string_verdicts.check(whole == *want && chars == *want, || {
                format!(
                    "{label} {}: engine says {whole} (whole) / {chars} (per code point), \
                     llama.cpp {want}",
                    show(s.as_bytes())
                )
            });
            match reference_text(&bnf, s) {
                Ok(r) => reference.check(r == *want, || {
                    format!(
                        "{label} {}: reference says {r}, llama.cpp {want}",
                        show(s.as_bytes())
                    )
                }),
                Err(e) => reference.check(false, || format!("{label} {}: {e}", show(s.as_bytes()))),
            }
        }
    }
    compiled.report("llama.cpp vectors integration_cases.json: grammars compiled");
    string_verdicts.report("llama.cpp vectors integration_cases.json: engine strings");
    reference.report("llama.cpp vectors integration_cases.json: reference strings");
    masks.report("llama.cpp vectors integration_cases.json: token-case masks vs reference");
    println!(
        "llama.cpp vectors passed/total (integration_cases.json): {}/{}",
        compiled.passed + string_verdicts.passed,
        compiled.total + string_verdicts.total
    );
    assert!(
        compiled.failures.is_empty()
            && string_verdicts.failures.is_empty()
            && reference.failures.is_empty()
            && masks.failures.is_empty(),
        "integration vectors failed (see above)"
    );
}

/// The integration strings tokenized by the real Llama 3 tokenizer and
/// fed token by token: the verdicts must not depend on tokenization.
#[test]
fn integration_cases_llama3_tokens() {
    let path = common::tokenizer_path("llama3");
    let engine = common::real_engine("llama3");
    let tok = tokenizers::Tokenizer::from_file(&path)
        .unwrap_or_else(|e| panic!("loading {}: {e}", path.display()));
    let mut tally = Tally::default();
    let mut mask = vec![0u32; engine.vocab().mask_words()];
    for c in cases_file("integration_cases.json") {
        if c["uses_tokens"].as_bool().unwrap_or(false) {
            continue;
        }
        let label = case_label(&c);
        let text = c["grammar"].as_str().unwrap();
        let g = compile(&engine, text.as_bytes(), &gbnf_options())
            .unwrap_or_else(|e| panic!("{label}: compile failed: {e}"));
        for (want, s) in c["passing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (true, s))
            .chain(c["failing"].as_array().unwrap().iter().map(|s| (false, s)))
        {
            let s = s.as_str().unwrap();
            let enc = tok.encode(s, false).unwrap();
            let ids = enc.get_ids();
            // The tokens must spell the string exactly.
            let spelled: Vec<u8> = ids
                .iter()
                .flat_map(|&t| engine.vocab().token_bytes(t).to_vec())
                .collect();
            assert_eq!(spelled, s.as_bytes(), "{label}: tokenization of {s:?}");
            let mut m = Matcher::new(g.clone());
            let mut ok = true;
            for &t in ids {
                m.fill_mask(&mut mask).unwrap();
                let bit = mask_bit(&mask, t);
                let acc = m.accept(t).is_ok();
                if bit != acc {
                    tally.check(false, || {
                        format!("{label} {s:?}: token {t} mask bit {bit} but accept {acc}")
                    });
                }
                if !acc {
                    ok = false;
                    break;
                }
            }
            if ok {
                ok = m.is_accepting();
                m.fill_mask(&mut mask).unwrap();
                for &e in engine.vocab().eos_tokens() {
                    if mask_bit(&mask, e) != ok {
                        tally.check(false, || {
                            format!("{label} {s:?}: EOS {e} bit differs from is_accepting")
                        });
                    }
                }
            }
            tally.check(ok == want, || {
                format!("{label} {s:?} as tokens {ids:?}: engine says {ok}, llama.cpp {want}")
            });
        }
    }
    tally.report("llama.cpp vectors integration_cases.json as Llama 3 tokens");
    assert!(tally.failures.is_empty(), "failures (see above)");
}

/// Characters to build test strings from: those of the grammar's literals
/// and class bounds, and one that appears nowhere.
fn alphabet(g: &Grammar) -> Vec<char> {
    fn walk(e: &Expr, out: &mut BTreeSet<char>) {
        match e {
            Expr::Literal(s) => out.extend(s.chars()),
            Expr::Class(c) => {
                for &(lo, hi) in c.ranges().iter().take(3) {
                    for x in [lo, hi] {
                        if let Some(ch) = char::from_u32(x) {
                            if x < 0x80 {
                                out.insert(ch);
                            }
                        }
                    }
                }
            }
            _ => e.for_each_child(|c| walk(c, out)),
        }
    }
    let mut set = BTreeSet::new();
    for r in &g.rules {
        walk(&r.body, &mut set);
    }
    let mut v: Vec<char> = set.into_iter().collect();
    v.truncate(9);
    let outsider = ['~', '%', '@', 'Q'].into_iter().find(|c| !v.contains(c));
    v.extend(outsider);
    v
}

/// Every string over the grammar's alphabet up to `max_len` characters
/// (pruned where the reference says the prefix is dead, after checking the
/// engine refuses it too): the engine's `accept_bytes` and `is_accepting`
/// against the reference's Earley recognizer. Returns strings checked.
fn exhaustive_short_strings(
    label: &str,
    g: &Arc<cgram::CompiledGrammar>,
    ir: &Grammar,
    max_len: usize,
    max_nodes: usize,
    tally: &mut Tally,
) -> usize {
    let bnf = Rc::new(Bnf::from_ir_left(ir));
    let sigma = alphabet(ir);
    let mut nodes = 0;
    let mut bad = Vec::new();
    // (text, engine matcher, reference)
    let mut stack: Vec<(String, Matcher, Earley)> =
        vec![(String::new(), Matcher::new(g.clone()), Earley::new(bnf))];
    while let Some((text, m, e)) = stack.pop() {
        nodes += 1;
        if m.is_accepting() != e.complete() {
            bad.push(format!(
                "{:?}: is_accepting {} reference complete {}",
                text,
                m.is_accepting(),
                e.complete()
            ));
        }
        if text.chars().count() >= max_len || nodes >= max_nodes {
            continue;
        }
        for &c in &sigma {
            let mut m2 = m.clone();
            let mut e2 = e.clone();
            let mut buf = [0u8; 4];
            let b = c.encode_utf8(&mut buf).as_bytes();
            let acc = m2.accept_bytes(b).is_ok();
            let viable = e2.feed_bytes(b);
            let t2 = format!("{text}{c}");
            if acc != viable {
                bad.push(format!(
                    "{t2:?}: engine accepts {acc}, reference viable {viable}"
                ));
            }
            if acc && viable {
                stack.push((t2, m2, e2));
            }
        }
    }
    tally.check(bad.is_empty(), || {
        format!(
            "{label}: {} disagreements on short strings over {sigma:?}, e.g. {}",
            bad.len(),
            bad.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
        )
    });
    nodes
}

#[test]
fn parser_cases() {
    let cases = cases_file("parser_cases.json");
    // Big enough for `<[1001]>`.
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    while tokens.len() < 1100 {
        let n = tokens.len();
        tokens.push(format!("tok{n}").into_bytes());
    }
    tokens.push(b"</s>".to_vec());
    let mut flags = vec![0u32; tokens.len()];
    *flags.last_mut().unwrap() = TOKEN_SPECIAL;
    let eos = (tokens.len() - 1) as u32;
    let engine = Engine::new(Vocab::new(tokens, flags, vec![eos]).unwrap());
    let mut tally = Tally::default();
    let mut strings = Tally::default();
    let mut checked_strings = 0;
    for c in &cases {
        let text = c["grammar"].as_str().unwrap();
        let valid = c["valid"].as_bool().unwrap();
        let root = c["root"].as_str().unwrap_or("root").to_string();
        let stage = c["stage"].as_str().unwrap();
        let reason = c["reason"].as_str().unwrap_or("");
        let label = format!(
            "parser:{} {stage} valid={valid} root={root} {:?}",
            c["source_line"],
            c["name"].as_str().unwrap_or(reason)
        );
        let opts = CompileOptions {
            root: Some(root.clone()),
            ..gbnf_options()
        };
        let res = compile(&engine, text.as_bytes(), &opts);
        tally.check(res.is_ok() == valid, || {
            format!(
                "{label}: compile {} (llama.cpp: {}) grammar {:?}",
                match &res {
                    Ok(_) => "succeeded".to_string(),
                    Err(e) => format!("failed: {e}"),
                },
                if valid { "valid" } else { "invalid" },
                text
            )
        });
        let left_recursive = reason == "left recursion";
        if left_recursive {
            // cgram's extension: compiles with the flag, and then matches
            // exactly what the grammar says (Earley reference).
            let opts = CompileOptions {
                root: Some(root.clone()),
                flags: FLAG_GBNF_ALLOW_LEFT_RECURSION,
                ..gbnf_options()
            };
            let res = compile(&engine, text.as_bytes(), &opts);
            tally.check(res.is_ok(), || {
                format!(
                    "{label}: with FLAG_GBNF_ALLOW_LEFT_RECURSION: {:?}",
                    res.as_ref().err()
                )
            });
            if let Ok(g) = res {
                let ir = cgram::gbnf::parse(text, &root, Some(engine.vocab())).unwrap();
                checked_strings +=
                    exhaustive_short_strings(&label, &g, &ir, 7, 50_000, &mut strings);
            }
        } else if let Ok(g) = res {
            let ir = cgram::gbnf::parse(text, &root, Some(engine.vocab())).unwrap();
            checked_strings += exhaustive_short_strings(&label, &g, &ir, 5, 20_000, &mut strings);
        }
    }
    tally.report("llama.cpp vectors parser_cases.json");
    strings.report(&format!(
        "parser_cases.json grammars: short strings vs the reference ({checked_strings} strings)"
    ));
    println!(
        "llama.cpp vectors passed/total (parser_cases.json): {}/{}",
        tally.passed, tally.total
    );
    assert!(
        tally.failures.is_empty() && strings.failures.is_empty(),
        "parser vectors failed (see above)"
    );
}

/// The integration grammars (no tokens) on every short string over their
/// alphabet, engine against the reference.
#[test]
fn integration_grammars_short_strings() {
    let engine = common::synthetic_engine();
    let mut tally = Tally::default();
    let mut n = 0;
    for c in cases_file("integration_cases.json") {
        if c["uses_tokens"].as_bool().unwrap_or(false) {
            continue;
        }
        let label = case_label(&c);
        let text = c["grammar"].as_str().unwrap();
        let g = compile(&engine, text.as_bytes(), &gbnf_options())
            .unwrap_or_else(|e| panic!("{label}: compile failed: {e}"));
        let ir = cgram::gbnf::parse(text, "root", Some(engine.vocab())).unwrap();
        n += exhaustive_short_strings(&label, &g, &ir, 6, 20_000, &mut tally);
    }
    tally.report(&format!(
        "integration_cases.json grammars: short strings vs the reference ({n} strings)"
    ));
    assert!(tally.failures.is_empty(), "failures (see above)");
}
