//! Every grammar kind through the C API with the real Llama 3 tokenizer:
//! texts are tokenized with the `tokenizers` crate (as a host would) and
//! walked token by token with `cg_fill_mask` / `cg_accept`, as a sampler
//! does. A valid text must pass every mask and end accepting; an invalid
//! one must be refused by a mask or fail to end.
//!
//! The tokenizer comes from `scripts/fetch-tokenizers.sh` (in
//! `$CGRAM_CACHE/tokenizers`, default `<repo>/.cache/tokenizers`); a
//! missing file fails the test.

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

struct Setup {
    vocab: *mut cg_vocab,
    tok: tokenizers::Tokenizer,
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

    fn compile(&self, kind: u32, flags: u32, source: &str) -> Result<*mut cg_grammar, String> {
        let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
        unsafe {
            cg_compile_options_init_size(o.as_mut_ptr(), std::mem::size_of::<cg_compile_options>())
        };
        let mut o = unsafe { o.assume_init() };
        o.kind = kind;
        o.flags = flags;
        let g = unsafe { cg_compile(self.vocab, source.as_ptr().cast(), source.len(), &o) };
        if g.is_null() {
            Err(last_error())
        } else {
            Ok(g)
        }
    }

    /// Walks `text` through a new matcher of `g`: true when every token is
    /// allowed by its mask and the matcher accepts at the end.
    fn walk(&self, g: *mut cg_grammar, text: &str) -> bool {
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

    fn check(&self, kind: u32, flags: u32, source: &str, yes: &[&str], no: &[&str]) {
        let g = self
            .compile(kind, flags, source)
            .unwrap_or_else(|e| panic!("{source}: {e}"));
        for t in yes {
            assert!(self.walk(g, t), "{source}: should accept {t:?}");
        }
        for t in no {
            assert!(!self.walk(g, t), "{source}: should refuse {t:?}");
        }
        unsafe { cg_free(g) };
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        unsafe { cg_vocab_free(self.vocab) };
    }
}

#[test]
fn regex_kind_is_anchored_ecma262() {
    let s = Setup::new();
    s.check(
        CG_KIND_REGEX,
        0,
        r"\d{3}-[A-Z]{2}(x|yz)?",
        &["123-AB", "007-QQyz", "999-ZZx"],
        &["12-AB", "123-ab", "123-ABq", " 123-AB", "123-ABxyz"],
    );
    // Unicode classes and escapes, counted in code points.
    s.check(
        CG_KIND_REGEX,
        0,
        r"\p{L}{2,3}\u00e9",
        &["abé", "жжжé"],
        &["aé", "abcdé", "12é"],
    );
    // A pattern the regex front end refuses gets a clear error.
    let e = s.compile(CG_KIND_REGEX, 0, r"(a)\1").unwrap_err();
    assert!(e.contains("backreference"), "{e}");
}

#[test]
fn any_json_kind_accepts_every_json_value() {
    let s = Setup::new();
    s.check(
        CG_KIND_ANY_JSON,
        0,
        "",
        &[
            "{\"a\": [1, 2.5e-3, true, null], \"b\": {\"c\": \"\\u00e9\\n\"}}",
            "[]",
            "\"text\"",
            "-0.5",
            "{\n  \"pretty\": [\n    1\n  ]\n}",
        ],
        &[
            "{\"a\": }",
            "[1, 2,]",
            "01",
            "{'a': 1}",
            "\"unterminated",
            "nul",
        ],
    );
    // CG_JSON_COMPACT: no whitespace between tokens.
    s.check(
        CG_KIND_ANY_JSON,
        CG_JSON_COMPACT,
        "",
        &["{\"a\":[1,2]}"],
        &["{\"a\": [1, 2]}"],
    );
}

#[test]
fn json_schema_kind_walks_real_tokens() {
    let s = Setup::new();
    let schema = r#"{
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 2},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "email": {"type": "string", "format": "email"},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}
        },
        "required": ["name", "age"],
        "additionalProperties": false
    }"#;
    s.check(
        CG_KIND_JSON_SCHEMA,
        0,
        schema,
        &[
            "{\"name\": \"Ann\", \"age\": 42}",
            "{\"age\": 7, \"tags\": [\"b\"], \"name\": \"Bo\", \"email\": \"bo@example.com\"}",
        ],
        &[
            "{\"name\": \"A\", \"age\": 42}",
            "{\"name\": \"Ann\", \"age\": 151}",
            "{\"name\": \"Ann\"}",
            "{\"name\": \"Ann\", \"age\": 1, \"tags\": [\"a\", \"b\", \"a\"]}",
            "{\"name\": \"Ann\", \"age\": 1, \"x\": 0}",
            "{\"name\": \"Ann\", \"age\": 1, \"email\": \"not an email\"}",
        ],
    );
    // An unsupported keyword is refused with its keyword and location.
    let e = s
        .compile(
            CG_KIND_JSON_SCHEMA,
            0,
            r#"{"type": "array", "items": {"type": "string"}, "uniqueItems": true}"#,
        )
        .unwrap_err();
    assert!(e.contains("uniqueItems"), "{e}");
}

/// Issue 18's last pieces through the C API on Llama 3 tokens: a
/// `date-time` under a length bound keeps RFC 3339's leap seconds (an
/// offset one included), and a `not` of 12 tagged objects (3^12
/// alternatives when its complement was built whole) compiles.
#[test]
fn bounded_date_time_and_tagged_negation() {
    let s = Setup::new();
    s.check(
        CG_KIND_JSON_SCHEMA,
        0,
        r#"{"type":"object","properties":{"at":{"type":"string","format":"date-time","maxLength":30}},"required":["at"]}"#,
        &[
            r#"{"at": "1998-12-31T15:59:60-08:00"}"#,
            r#"{"at": "2024-06-30T12:00:00.1234Z"}"#,
        ],
        &[
            r#"{"at": "1998-12-31T23:59:60-08:00"}"#,
            r#"{"at": "1998-12-31T15:59:60.12345-08:00"}"#,
        ],
    );
    let branches: Vec<String> = (0..12)
        .map(|i| {
            format!(
                r#"{{"properties":{{"kind":{{"const":"k{i}"}},"x{i}":{{"type":"integer"}}}},"required":["kind","x{i}"]}}"#
            )
        })
        .collect();
    let schema = format!(
        r#"{{"type":"object","required":["kind"],"not":{{"anyOf":[{}]}}}}"#,
        branches.join(",")
    );
    s.check(
        CG_KIND_JSON_SCHEMA,
        0,
        &schema,
        &[r#"{"kind": "k3", "x3": "s"}"#, r#"{"kind": "z", "x1": 1}"#],
        &[r#"{"kind": "k3", "x3": 4}"#, r#"{}"#],
    );
}
