//! `CG_JSON_LENIENT` on the JSON Schema Test Suite (drafts 7 and 2020-12,
//! vendored in `tests/data/json-schema-test-suite`), walked token by token
//! with the real Llama 3 tokenizer. Lenient mode only ever widens:
//! - every schema the strict default refuses as unsupported and lenient
//!   mode compiles must accept every valid instance, and report at least
//!   one keyword left out;
//! - a schema the strict default compiles compiles the same way: no
//!   keyword left out, the same verdict on every instance.
//!
//! Prints how many refused schemas lenient mode compiles, per draft.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cgram::source::{compile, CompileOptions, Kind, FLAG_JSON_LENIENT};
use cgram::{CompiledGrammar, ErrorKind, Matcher};
use serde_json::Value;

fn walk(g: &Arc<CompiledGrammar>, ids: &[u32], mask: &mut [u32]) -> bool {
    let mut m = Matcher::new(g.clone());
    for &t in ids {
        m.fill_mask(mask).unwrap();
        let in_mask = mask[(t / 32) as usize] & (1 << (t % 32)) != 0;
        let ok = m.accept(t).is_ok();
        assert_eq!(in_mask, ok, "mask and accept disagree on token {t}");
        if !ok {
            return false;
        }
    }
    m.is_accepting()
}

fn files(draft: &str) -> Vec<PathBuf> {
    let base = common::manifest_dir()
        .join("tests/data/json-schema-test-suite/tests")
        .join(draft);
    let mut files = Vec::new();
    for d in [
        base.clone(),
        base.join("optional"),
        base.join("optional/format"),
    ] {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "json") {
                    files.push(p);
                }
            }
        }
    }
    files.sort();
    assert!(!files.is_empty(), "the vendored suite is missing");
    files
}

fn options(flags: u32) -> CompileOptions {
    CompileOptions {
        kind: Kind::JsonSchema,
        flags,
        max_compile_ms: 20_000,
        ..Default::default()
    }
}

fn run(draft: &str, meta: &str) {
    let engine = common::real_engine("llama3");
    let tok = tokenizers::Tokenizer::from_file(common::tokenizer_path("llama3")).unwrap();
    let mut mask = vec![0u32; engine.vocab().mask_words()];
    let (mut refused, mut rescued, mut rejected_valid) = (0, 0, Vec::new());
    for file in files(draft) {
        let name = file
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
            .unwrap()
            .display()
            .to_string();
        let groups: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for group in groups.as_array().unwrap() {
            let mut schema = group["schema"].clone();
            if let Value::Object(m) = &mut schema {
                m.entry("$schema").or_insert(Value::String(meta.into()));
            }
            let text = serde_json::to_string(&schema).unwrap();
            let strict = compile(&engine, text.as_bytes(), &options(0));
            let lenient = compile(&engine, text.as_bytes(), &options(FLAG_JSON_LENIENT));
            let desc = group["description"].as_str().unwrap_or("");
            if name.ends_with(&format!("{draft}/format.json")) && desc.ends_with(" format") {
                // 2019-09 on, `format` is an annotation there: every
                // string passes. cgram asserts formats in every draft (see
                // `skipped` in tests/json_schema_suite.rs).
                continue;
            }
            let strict = match strict {
                Ok(g) => Some(g),
                Err(e) if e.kind() == ErrorKind::Unsupported => {
                    refused += 1;
                    None
                }
                Err(_) => continue,
            };
            let lenient = match lenient {
                Ok(g) => g,
                Err(e) => {
                    assert!(
                        strict.is_none(),
                        "{name}: {desc}: lenient refuses what strict compiles"
                    );
                    println!("{name}: {desc}: still refused: {}", e.message());
                    continue;
                }
            };
            if strict.is_some() {
                assert!(
                    lenient.automaton().dropped().is_empty(),
                    "{name}: {desc}: strict compiles, yet lenient left out {:?}",
                    lenient.automaton().dropped()
                );
            } else {
                rescued += 1;
                assert!(
                    !lenient.automaton().dropped().is_empty(),
                    "{name}: {desc}: nothing reported left out"
                );
            }
            for case in group["tests"].as_array().unwrap() {
                let valid = case["valid"].as_bool().unwrap();
                let data = serde_json::to_string(&case["data"]).unwrap();
                let ids = tok.encode(data.as_str(), false).unwrap().get_ids().to_vec();
                let got = walk(&lenient, &ids, &mut mask);
                match &strict {
                    Some(g) => {
                        let want = walk(g, &ids, &mut mask);
                        assert_eq!(
                            got, want,
                            "{name}: {desc}: {data}: lenient and strict disagree"
                        );
                    }
                    None if valid && !got => rejected_valid.push(format!(
                        "{name}: {desc}: {data} (left out: {:?})",
                        lenient.automaton().dropped()
                    )),
                    None => {}
                }
            }
        }
    }
    println!(
        "{draft}: {refused} schemas refused as unsupported, {rescued} of them compile leniently"
    );
    assert!(
        rejected_valid.is_empty(),
        "lenient mode rejected valid instances:\n{}",
        rejected_valid.join("\n")
    );
    assert!(rescued > 0);
}

#[test]
fn lenient_draft7() {
    run("draft7", "http://json-schema.org/draft-07/schema#");
}

#[test]
fn lenient_draft2020_12() {
    run(
        "draft2020-12",
        "https://json-schema.org/draft/2020-12/schema",
    );
}

/// MaskBench (`$CGRAM_MASKBENCH`, else `tests/data/maskbench-subset`):
/// every schema the strict default refuses as unsupported is compiled
/// leniently on a byte vocabulary; every valid instance (compact JSON) must
/// be accepted. Prints the counts and the keywords left out. Run with
/// `cargo test --release --test json_schema_lenient -- --ignored`.
#[test]
#[ignore]
fn lenient_maskbench() {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let mut flags = vec![0u32; 256];
    tokens.push(b"<eos>".to_vec());
    flags.push(cgram::TOKEN_SPECIAL);
    let engine = cgram::Engine::new(cgram::Vocab::new(tokens, flags, vec![256]).unwrap());
    let files = common::maskbench_files();
    let (mut refused, mut rescued, mut instances) = (0, 0, 0);
    let mut still: std::collections::BTreeMap<String, usize> = Default::default();
    let mut left_out: std::collections::BTreeMap<String, usize> = Default::default();
    let mut wrong = Vec::new();
    for f in &files {
        let Ok(data) = serde_json::from_str::<Value>(&std::fs::read_to_string(f).unwrap()) else {
            continue;
        };
        let schema = serde_json::to_string(&data["schema"]).unwrap();
        match compile(&engine, schema.as_bytes(), &options(0)) {
            Err(e) if e.kind() == ErrorKind::Unsupported => refused += 1,
            _ => continue,
        }
        let g = match compile(&engine, schema.as_bytes(), &options(FLAG_JSON_LENIENT)) {
            Ok(g) => g,
            Err(e) => {
                let key: String = e.message().chars().take(60).collect();
                *still.entry(key).or_default() += 1;
                continue;
            }
        };
        rescued += 1;
        for d in g.automaton().dropped() {
            *left_out.entry(d.keyword.clone()).or_default() += 1;
        }
        for case in data["tests"].as_array().into_iter().flatten() {
            if case["valid"].as_bool() != Some(true) {
                continue;
            }
            instances += 1;
            let text = serde_json::to_string(&case["data"]).unwrap();
            let mut m = Matcher::new(g.clone());
            if m.accept_bytes(text.as_bytes()).is_err() || !m.is_accepting() {
                wrong.push(format!("{}: {text}", f.display()));
            }
        }
    }
    println!(
        "maskbench: {refused} refused as unsupported, {rescued} compile leniently, \
         {instances} valid instances walked"
    );
    println!("left out: {left_out:?}");
    println!("still refused: {still:#?}");
    assert!(
        wrong.is_empty(),
        "valid instances rejected:\n{}",
        wrong.join("\n")
    );
}
