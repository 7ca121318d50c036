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
    unsafe { cg_compile_options_init(o.as_mut_ptr()) };
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
