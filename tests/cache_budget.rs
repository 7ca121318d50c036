//! The vocabulary's lexeme cache budget (`cg_vocab_set_cache_budget`)
//! changes speed, never a mask.
//!
//! Three handles on the real Llama 3 tokenizer, loaded separately so that
//! each has its own caches: the default budget, a budget of 0 (nothing is
//! kept: every compile builds its lexemes and every mask its token sets
//! anew) and 1 MiB (the cache evicts all the time). The same sources are
//! compiled on all three, twice over (the second round meets caches the
//! first one filled and churned), and walked with the same seeded tokens:
//! every mask must be identical on the three, and every compile must give
//! the same result. The sources are MaskBench schemas (the vendored
//! `tests/data/maskbench-subset`, or 24 spread over `$CGRAM_MASKBENCH`),
//! llama.cpp's example grammars and schemas written here.

mod common;

use std::ffi::{CStr, CString};
use std::ptr::null_mut;

use cgram::ffi::*;

fn last_error() -> String {
    unsafe { CStr::from_ptr(cg_last_error()) }
        .to_string_lossy()
        .into_owned()
}

struct Vocab(*mut cg_vocab);

impl Drop for Vocab {
    fn drop(&mut self) {
        unsafe { cg_vocab_free(self.0) }
    }
}

fn load(budget: Option<usize>) -> Vocab {
    let path = CString::new(common::tokenizer_path("llama3").to_str().unwrap()).unwrap();
    let v = unsafe { cg_vocab_from_tokenizer_json(path.as_ptr()) };
    assert!(!v.is_null(), "loading Llama 3: {}", last_error());
    if let Some(b) = budget {
        assert_eq!(unsafe { cg_vocab_set_cache_budget(v, b) }, CG_OK);
    }
    Vocab(v)
}

struct Compiled {
    grammar: *mut cg_grammar,
    matcher: *mut cg_matcher,
}

impl Drop for Compiled {
    fn drop(&mut self) {
        unsafe {
            cg_matcher_free(self.matcher);
            cg_free(self.grammar);
        }
    }
}

/// Compiles `text`, or the error code it fails with.
fn compile(vocab: &Vocab, kind: u32, text: &str) -> Result<Compiled, (i32, String)> {
    let mut options: cg_compile_options = unsafe { std::mem::zeroed() };
    unsafe {
        cg_compile_options_init_size(&mut options, std::mem::size_of::<cg_compile_options>())
    };
    options.kind = kind;
    let g = unsafe { cg_compile(vocab.0, text.as_ptr().cast(), text.len(), &options) };
    if g.is_null() {
        return Err((cg_last_error_code(), last_error()));
    }
    let m = unsafe { cg_matcher_new(g) };
    assert!(!m.is_null(), "{}", last_error());
    Ok(Compiled {
        grammar: g,
        matcher: m,
    })
}

/// (name, kind, source).
fn sources() -> Vec<(String, u32, String)> {
    let mut out = Vec::new();
    let files = common::maskbench_files();
    let every = (files.len() / 24).max(1);
    for p in files.iter().step_by(every) {
        let doc = common::read_json(p);
        let schema = doc.get("schema").unwrap_or(&doc);
        out.push((
            p.file_name().unwrap().to_string_lossy().into_owned(),
            CG_KIND_JSON_SCHEMA,
            schema.to_string(),
        ));
    }
    for (name, text) in common::example_grammars().into_iter().filter(|(n, _)| {
        ["json.gbnf", "list.gbnf", "c.gbnf", "arithmetic.gbnf"].contains(&n.as_str())
    }) {
        out.push((name, CG_KIND_GBNF, text));
    }
    for schema in [
        r#"{"type":"object","properties":{"name":{"type":"string","maxLength":12},
            "email":{"type":"string","format":"email"},"n":{"type":"integer","minimum":-5}},
            "required":["name","n"]}"#,
        r#"{"type":"array","items":{"type":"string","pattern":"^[a-z]{2,6}-[0-9]+$"},"maxItems":5}"#,
        r#"{"anyOf":[{"type":"string","format":"date-time"},{"type":"number","multipleOf":0.5}]}"#,
    ] {
        out.push(("inline schema".into(), CG_KIND_JSON_SCHEMA, schema.into()));
    }
    out.push((
        "regex".into(),
        CG_KIND_REGEX,
        r"(?:[A-Z][a-z]{1,8} ){1,4}\d{2,5}".into(),
    ));
    out
}

#[test]
fn budget_changes_no_mask() {
    let vocabs = [load(None), load(Some(0)), load(Some(1 << 20))];
    let n_vocab = unsafe { cg_vocab_size(vocabs[0].0) } as usize;
    let sources = sources();
    let mut rng = common::Rng::new(7);
    let mut walked = 0;
    for round in 0..2 {
        for (name, kind, text) in &sources {
            let compiled: Vec<_> = vocabs.iter().map(|v| compile(v, *kind, text)).collect();
            let codes: Vec<i32> = compiled
                .iter()
                .map(|c| c.as_ref().err().map_or(CG_OK, |e| e.0))
                .collect();
            assert!(
                codes.iter().all(|&c| c == codes[0]),
                "{name} (round {round}): compile results differ by budget: {codes:?} {:?}",
                compiled
                    .iter()
                    .filter_map(|c| c.as_ref().err())
                    .collect::<Vec<_>>()
            );
            if codes[0] != CG_OK {
                continue;
            }
            let compiled: Vec<Compiled> = compiled.into_iter().map(Result::unwrap).collect();
            let words = unsafe { cg_mask_words(compiled[0].grammar) };
            let mut masks = vec![vec![0u32; words]; 3];
            for step in 0..48 {
                for (c, mask) in compiled.iter().zip(masks.iter_mut()) {
                    let rc = unsafe { cg_fill_mask(c.matcher, mask.as_mut_ptr(), words) };
                    assert_eq!(rc, CG_OK, "{name}: {}", last_error());
                }
                for (i, m) in masks.iter().enumerate().skip(1) {
                    assert!(
                        *m == masks[0],
                        "{name} (round {round}, step {step}): the mask with budget #{i} differs"
                    );
                }
                let allowed: Vec<i32> = (0..n_vocab as i32)
                    .filter(|&t| common::mask_bit(&masks[0], t as u32))
                    .collect();
                if allowed.is_empty() || unsafe { cg_is_terminated(compiled[0].matcher) } == 1 {
                    break;
                }
                let token = allowed[rng.below(allowed.len())];
                for c in &compiled {
                    assert_eq!(unsafe { cg_accept(c.matcher, token) }, CG_OK, "{name}");
                }
                walked += 1;
            }
        }
    }
    assert!(walked > 500, "only {walked} tokens walked");
    let bytes: Vec<usize> = vocabs
        .iter()
        .map(|v| unsafe { cg_vocab_cache_bytes(v.0) })
        .collect();
    assert!(bytes[0] > 1 << 20, "the default cache kept only {bytes:?}");
    assert_eq!(bytes[1], 0, "a budget of 0 kept something");
    // Bytes are counted at insertions and now and then between: what masks
    // learned since may put the cache a little over.
    assert!(bytes[2] <= 2 << 20, "1 MiB budget: {bytes:?}");
}

#[test]
fn the_budget_outlives_a_change_of_eos() {
    let v = load(Some(0));
    let eos = [128_009i32];
    assert_eq!(
        unsafe { cg_vocab_set_eos(v.0, eos.as_ptr(), eos.len()) },
        CG_OK,
        "{}",
        last_error()
    );
    let c = compile(
        &v,
        CG_KIND_JSON_SCHEMA,
        r#"{"type":"string","format":"email"}"#,
    )
    .unwrap();
    let words = unsafe { cg_mask_words(c.grammar) };
    let mut mask = vec![0u32; words];
    assert_eq!(
        unsafe { cg_fill_mask(c.matcher, mask.as_mut_ptr(), words) },
        CG_OK
    );
    assert_eq!(unsafe { cg_vocab_cache_bytes(v.0) }, 0);
}

#[test]
fn setting_a_budget_on_null_is_an_error() {
    assert_eq!(
        unsafe { cg_vocab_set_cache_budget(null_mut(), 1) },
        CG_ERR_INVALID_ARGUMENT
    );
    assert_eq!(unsafe { cg_vocab_cache_bytes(std::ptr::null()) }, 0);
}
