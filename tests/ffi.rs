//! The C API driven from Rust through its `extern "C"` functions, as a C
//! program would: argument checks, error codes and messages, ownership.
//!
//! Tests named `engine_*` need a working compiler and matcher; the others
//! only exercise the boundary itself.

use std::ffi::{c_char, CStr};
use std::ptr::{null, null_mut};

use cgram::ffi::*;
use cgram::limits::{DEFAULT_MAX_COMPILE_MS, DEFAULT_MAX_STATES};
use cgram::ErrorKind;

fn last_error() -> String {
    unsafe { CStr::from_ptr(cg_last_error()) }
        .to_str()
        .expect("cg_last_error is UTF-8")
        .to_string()
}

/// Asserts that the last error on this thread came from `func` and
/// mentions every one of `words`.
#[track_caller]
fn assert_error(func: &str, words: &[&str]) {
    let msg = last_error();
    assert!(
        msg.starts_with(&format!("{func}: ")),
        "expected an error from {func}, got {msg:?}"
    );
    for w in words {
        assert!(msg.contains(w), "error {msg:?} does not mention {w:?}");
    }
}

/// A vocabulary from `(bytes, flags)` pairs and EOS ids.
fn vocab(tokens: &[(&[u8], u32)], eos: &[i32]) -> *mut cg_vocab {
    let ptrs: Vec<*const u8> = tokens.iter().map(|t| t.0.as_ptr()).collect();
    let lens: Vec<u32> = tokens.iter().map(|t| t.0.len() as u32).collect();
    let flags: Vec<u32> = tokens.iter().map(|t| t.1).collect();
    let v = unsafe {
        cg_vocab_new(
            tokens.len() as u32,
            ptrs.as_ptr(),
            lens.as_ptr(),
            flags.as_ptr(),
            eos.as_ptr(),
            eos.len() as u32,
        )
    };
    assert!(!v.is_null(), "cg_vocab_new failed: {}", last_error());
    v
}

/// Token ids of [`tiny`].
const A: i32 = 0;
const B: i32 = 1;
const AB: i32 = 2;
const C: i32 = 3;
const EOS: i32 = 4;
const BOS: i32 = 5;
const EMPTY: i32 = 6;

/// A small vocabulary: "a" "b" "ab" "c", EOS "</s>", BOS "<s>" (special),
/// and an empty token.
fn tiny() -> *mut cg_vocab {
    vocab(
        &[
            (b"a", 0),
            (b"b", 0),
            (b"ab", 0),
            (b"c", 0),
            (b"</s>", CG_TOKEN_SPECIAL),
            (b"<s>", CG_TOKEN_SPECIAL),
            (b"", 0),
        ],
        &[EOS],
    )
}

fn token_bytes(v: *const cg_vocab, t: i32) -> Option<Vec<u8>> {
    let mut len = 12345usize;
    let p = unsafe { cg_vocab_token_bytes(v, t, &mut len) };
    if p.is_null() {
        assert_eq!(len, 0);
        return None;
    }
    Some(unsafe { std::slice::from_raw_parts(p, len) }.to_vec())
}

// ---------------------------------------------------------------------------
// Library and constants.

#[test]
fn version_and_empty_error() {
    let v = unsafe { CStr::from_ptr(cg_version()) };
    assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    // A fresh thread has no error yet, and the message is never NULL.
    std::thread::spawn(|| {
        assert!(!cg_last_error().is_null());
        assert_eq!(last_error(), "");
    })
    .join()
    .unwrap();
}

#[test]
fn constants_match_the_rust_api() {
    assert_eq!(CG_OK, 0);
    let kinds = [
        (CG_ERR_INVALID_ARGUMENT, ErrorKind::InvalidArgument),
        (CG_ERR_PARSE, ErrorKind::Parse),
        (CG_ERR_UNSUPPORTED, ErrorKind::Unsupported),
        (CG_ERR_LIMIT, ErrorKind::Limit),
        (CG_ERR_IO, ErrorKind::Io),
        (CG_ERR_TOKEN_REJECTED, ErrorKind::TokenRejected),
        (CG_ERR_TERMINATED, ErrorKind::Terminated),
        (CG_ERR_INTERNAL, ErrorKind::Internal),
    ];
    for (code, kind) in kinds {
        assert_eq!(code, kind.code(), "{kind:?}");
    }
    assert_eq!(
        [
            CG_KIND_GBNF,
            CG_KIND_JSON_SCHEMA,
            CG_KIND_REGEX,
            CG_KIND_ANY_JSON
        ],
        [0, 1, 2, 3]
    );
    assert_eq!(CG_TOKEN_SPECIAL, cgram::TOKEN_SPECIAL);
    assert_eq!(CG_JSON_COMPACT, cgram::source::FLAG_JSON_COMPACT);
    assert_eq!(
        CG_JSON_NO_EXTRA_PROPERTIES,
        cgram::source::FLAG_JSON_NO_EXTRA_PROPERTIES
    );
    assert_eq!(
        CG_GBNF_ALLOW_LEFT_RECURSION,
        cgram::source::FLAG_GBNF_ALLOW_LEFT_RECURSION
    );
}

#[test]
fn options_layout_and_defaults() {
    // The fields that never move (outside tools bind to them).
    assert_eq!(std::mem::offset_of!(cg_compile_options, struct_size), 0);
    assert_eq!(std::mem::offset_of!(cg_compile_options, kind), 4);
    assert_eq!(std::mem::offset_of!(cg_compile_options, root), 8);
    let size = std::mem::size_of::<cg_compile_options>();
    let check_defaults = |o: &cg_compile_options| {
        assert_eq!(o.kind, CG_KIND_GBNF);
        assert!(o.root.is_null());
        assert_eq!(o.flags, 0);
        assert_eq!(o.json_max_whitespace, 0);
        assert_eq!(o.max_compile_ms, DEFAULT_MAX_COMPILE_MS);
        assert_eq!(o.max_states, DEFAULT_MAX_STATES as u64);
    };
    // The exact bytes a caller with a large buffer gets (what anchorbench
    // does): init writes the struct and nothing past it.
    let mut buf = [0xEEu8; 256];
    unsafe { cg_compile_options_init_size(buf.as_mut_ptr().cast(), size) };
    assert!(buf[size..].iter().all(|&b| b == 0xEE));
    let o = unsafe { &*(buf.as_ptr() as *const cg_compile_options) };
    assert_eq!(o.struct_size as usize, size);
    check_defaults(o);
    assert_eq!(o.max_mask_steps, cgram::limits::DEFAULT_MAX_MASK_STEPS);

    // The first struct's size (a program built against the first header,
    // which ended at `max_states`): only those bytes are written.
    let first = std::mem::offset_of!(cg_compile_options, max_states) + 8;
    let mut buf = [0xEEu8; 256];
    unsafe { cg_compile_options_init_size(buf.as_mut_ptr().cast(), first) };
    assert!(buf[first..].iter().all(|&b| b == 0xEE));
    let o = unsafe { &*(buf.as_ptr() as *const cg_compile_options) };
    assert_eq!(o.struct_size as usize, first);
    check_defaults(o);
    // The symbol such a program calls, with no size, writes that much too.
    let mut buf = [0xEEu8; 256];
    unsafe { cg_compile_options_init(buf.as_mut_ptr().cast()) };
    assert!(buf[first..].iter().all(|&b| b == 0xEE));
    let o = unsafe { &*(buf.as_ptr() as *const cg_compile_options) };
    assert_eq!(o.struct_size as usize, first);
    check_defaults(o);

    // A newer header's larger struct: this library's defaults, then zeros
    // (the default of every later field) up to its size, nothing past it.
    let mut buf = [0xEEu8; 256];
    unsafe { cg_compile_options_init_size(buf.as_mut_ptr().cast(), size + 24) };
    assert!(buf[size..size + 24].iter().all(|&b| b == 0));
    assert!(buf[size + 24..].iter().all(|&b| b == 0xEE));
    let o = unsafe { &*(buf.as_ptr() as *const cg_compile_options) };
    assert_eq!(o.struct_size as usize, size + 24);
    check_defaults(o);

    // Sizes that cannot be a cg_compile_options, and NULL: nothing written.
    for bad in [0, 15, 4097, usize::MAX] {
        let mut buf = [0xEEu8; 256];
        unsafe { cg_compile_options_init_size(buf.as_mut_ptr().cast(), bad) };
        assert!(buf.iter().all(|&b| b == 0xEE), "size {bad}");
        assert_error(
            "cg_compile_options_init_size",
            &["options_size", &bad.to_string()],
        );
    }
    unsafe { cg_compile_options_init_size(null_mut(), size) };
    assert_error("cg_compile_options_init_size", &["options is NULL"]);
    unsafe { cg_compile_options_init(null_mut()) };
    assert_error("cg_compile_options_init", &["options is NULL"]);
}

// ---------------------------------------------------------------------------
// Vocabularies.

#[test]
fn vocab_new_tiny() {
    let v = tiny();
    unsafe {
        assert_eq!(cg_vocab_size(v), 7);
        assert_eq!(token_bytes(v, A).unwrap(), b"a");
        assert_eq!(token_bytes(v, AB).unwrap(), b"ab");
        assert_eq!(token_bytes(v, EOS).unwrap(), b"</s>");
        assert_eq!(token_bytes(v, EMPTY).unwrap(), b"");
        let mut eos = [-1i32; 4];
        assert_eq!(cg_vocab_eos_tokens(v, eos.as_mut_ptr(), eos.len()), 1);
        assert_eq!(eos, [EOS, -1, -1, -1]);
        cg_vocab_free(v);
    }
}

#[test]
fn vocab_new_single_token_and_no_flags() {
    let bytes = [b"x".as_ptr()];
    let lens = [1u32];
    let v = unsafe { cg_vocab_new(1, bytes.as_ptr(), lens.as_ptr(), null(), null(), 0) };
    assert!(!v.is_null(), "{}", last_error());
    unsafe {
        assert_eq!(cg_vocab_size(v), 1);
        assert_eq!(cg_vocab_eos_tokens(v, null_mut(), 0), 0);
        cg_vocab_free(v);
    }
}

#[test]
fn vocab_new_rejects_bad_arguments() {
    let bytes: [*const u8; 2] = [b"x".as_ptr(), null()];
    let lens = [1u32, 0];
    let eos_bad = [2i32];
    let eos_neg = [-1i32];
    unsafe {
        assert!(cg_vocab_new(0, bytes.as_ptr(), lens.as_ptr(), null(), null(), 0).is_null());
        assert_error("cg_vocab_new", &["n_tokens is 0"]);
        assert!(cg_vocab_new(2, null(), lens.as_ptr(), null(), null(), 0).is_null());
        assert_error("cg_vocab_new", &["token_bytes is NULL"]);
        assert!(cg_vocab_new(2, bytes.as_ptr(), null(), null(), null(), 0).is_null());
        assert_error("cg_vocab_new", &["token_lens is NULL"]);
        assert!(cg_vocab_new(2, bytes.as_ptr(), lens.as_ptr(), null(), null(), 1).is_null());
        assert_error("cg_vocab_new", &["eos_tokens is NULL"]);
        assert!(cg_vocab_new(
            2,
            bytes.as_ptr(),
            lens.as_ptr(),
            null(),
            eos_bad.as_ptr(),
            1
        )
        .is_null());
        assert_error("cg_vocab_new", &["end-of-sequence token 2 is out of range"]);
        assert!(cg_vocab_new(
            2,
            bytes.as_ptr(),
            lens.as_ptr(),
            null(),
            eos_neg.as_ptr(),
            1
        )
        .is_null());
        assert_error("cg_vocab_new", &["-1", "out of range"]);
        // A NULL token with a length is refused; with length 0 it is empty.
        let lens_bad = [1u32, 3];
        assert!(cg_vocab_new(2, bytes.as_ptr(), lens_bad.as_ptr(), null(), null(), 0).is_null());
        assert_error("cg_vocab_new", &["token 1", "NULL"]);
        let v = cg_vocab_new(2, bytes.as_ptr(), lens.as_ptr(), null(), null(), 0);
        assert!(!v.is_null(), "{}", last_error());
        cg_vocab_free(v);
        // Unknown flag bits are refused, as unknown option bits are.
        let flags_bad = [CG_TOKEN_SPECIAL, 2];
        assert!(cg_vocab_new(
            2,
            bytes.as_ptr(),
            lens.as_ptr(),
            flags_bad.as_ptr(),
            null(),
            0
        )
        .is_null());
        assert_error("cg_vocab_new", &["token_flags[1]", "unknown bits 0x2"]);
        // Too many tokens is refused before any array is read.
        assert!(cg_vocab_new(u32::MAX, bytes.as_ptr(), lens.as_ptr(), null(), null(), 0).is_null());
        assert_error("cg_vocab_new", &["limit"]);
    }
}

#[test]
fn vocab_accessors_check_arguments() {
    let v = tiny();
    let mut len = 99usize;
    unsafe {
        assert_eq!(cg_vocab_size(null()), 0);
        assert_error("cg_vocab_size", &["vocab is NULL"]);
        assert!(cg_vocab_token_bytes(null(), 0, &mut len).is_null());
        assert_eq!(len, 0);
        assert_error("cg_vocab_token_bytes", &["vocab is NULL"]);
        assert!(cg_vocab_token_bytes(v, 0, null_mut()).is_null());
        assert_error("cg_vocab_token_bytes", &["len is NULL"]);
        for bad in [-1, 7, i32::MAX, i32::MIN] {
            assert_eq!(token_bytes(v, bad), None);
            assert_error(
                "cg_vocab_token_bytes",
                &[&bad.to_string(), "out of range", "7 tokens"],
            );
        }
        assert_eq!(
            cg_vocab_eos_tokens(null(), null_mut(), 0),
            CG_ERR_INVALID_ARGUMENT
        );
        // The count is returned even when the buffer is smaller (or absent).
        assert_eq!(cg_vocab_eos_tokens(v, null_mut(), 0), 1);
        assert_eq!(
            cg_vocab_eos_tokens(v, null_mut(), 1),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_vocab_eos_tokens", &["out is NULL"]);
        cg_vocab_free(v);
    }
}

#[test]
fn vocab_set_eos_without_grammars() {
    let v = tiny();
    unsafe {
        let new = [C, BOS];
        assert_eq!(
            cg_vocab_set_eos(v, new.as_ptr(), 2),
            CG_OK,
            "{}",
            last_error()
        );
        let mut out = [0i32; 3];
        assert_eq!(cg_vocab_eos_tokens(v, out.as_mut_ptr(), 3), 2);
        assert_eq!(&out[..2], &[C, BOS]);
        assert_eq!(token_bytes(v, C).unwrap(), b"c");
        // An empty list is allowed.
        assert_eq!(cg_vocab_set_eos(v, null(), 0), CG_OK);
        assert_eq!(cg_vocab_eos_tokens(v, null_mut(), 0), 0);
        let bad = [7i32];
        assert_eq!(
            cg_vocab_set_eos(v, bad.as_ptr(), 1),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_vocab_set_eos", &["7", "out of range"]);
        assert_eq!(cg_vocab_set_eos(v, null(), 1), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_vocab_set_eos", &["eos_tokens is NULL"]);
        assert_eq!(
            cg_vocab_set_eos(null_mut(), null(), 0),
            CG_ERR_INVALID_ARGUMENT
        );
        // A failed call left the last good list.
        assert_eq!(cg_vocab_eos_tokens(v, null_mut(), 0), 0);
        cg_vocab_free(v);
    }
}

#[test]
fn vocab_from_tokenizer_json_checks_arguments() {
    unsafe {
        assert!(cg_vocab_from_tokenizer_json(null()).is_null());
        assert_error("cg_vocab_from_tokenizer_json", &["path is NULL"]);
        assert!(cg_vocab_from_tokenizer_json(c"/nonexistent/tokenizer.json".as_ptr()).is_null());
        assert_error("cg_vocab_from_tokenizer_json", &[]);
    }
}

/// Every failure names its cause with the header's code: the file's
/// content is `CG_ERR_IO` (even where the loader calls it an invalid
/// argument: the path is the only argument), a model cgram cannot read is
/// `CG_ERR_UNSUPPORTED`, too many tokens `CG_ERR_LIMIT`.
#[test]
fn vocab_from_tokenizer_json_error_codes() {
    let dir = std::env::temp_dir().join(format!("cgram-ffi-codes-{}", std::process::id()));
    let bpe = |vocab: &str| {
        format!(
            r#"{{"model": {{"type": "BPE", "vocab": {vocab}, "merges": []}}, "decoder": {{"type": "ByteLevel"}}}}"#
        )
    };
    let cases: Vec<(&str, String, Option<&str>, i32, &str)> = vec![
        (
            "not_json",
            "{".into(),
            None,
            CG_ERR_IO,
            "not a tokenizer.json",
        ),
        ("no_tokens", bpe("{}"), None, CG_ERR_IO, "no tokens"),
        (
            "eos_name",
            bpe(r#"{"a": 0}"#),
            Some(r#"{"eos_token": "<nope>"}"#),
            CG_ERR_IO,
            "<nope>",
        ),
        (
            "wordpiece",
            r#"{"model": {"type": "WordPiece", "vocab": {"a": 0}}}"#.into(),
            None,
            CG_ERR_UNSUPPORTED,
            "WordPiece",
        ),
        (
            "huge_id",
            bpe(r#"{"a": 0, "b": 4294967295}"#),
            None,
            CG_ERR_LIMIT,
            "4294967295",
        ),
        ("good", bpe(r#"{"a": 0, "b": 1}"#), None, CG_OK, ""),
    ];
    for (name, text, side, code, words) in cases {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).unwrap();
        if let Some(side) = side {
            std::fs::write(sub.join("tokenizer_config.json"), side).unwrap();
        }
        let path = sub.join("tokenizer.json");
        std::fs::write(&path, text).unwrap();
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        let v = unsafe { cg_vocab_from_tokenizer_json(c.as_ptr()) };
        if code == CG_OK {
            assert!(!v.is_null(), "{name}: {}", last_error());
            assert_eq!(unsafe { cg_vocab_size(v) }, 2);
            unsafe { cg_vocab_free(v) };
            continue;
        }
        assert!(v.is_null(), "{name} loaded");
        assert_eq!(cg_last_error_code(), code, "{name}: {}", last_error());
        assert_error("cg_vocab_from_tokenizer_json", &[name, words]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    unsafe {
        assert!(cg_vocab_from_tokenizer_json(null()).is_null());
        assert_eq!(cg_last_error_code(), CG_ERR_INVALID_ARGUMENT);
    }
}

#[test]
fn free_null_is_a_no_op() {
    unsafe {
        cg_vocab_free(null_mut());
        cg_free(null_mut());
        cg_matcher_free(null_mut());
    }
}

// ---------------------------------------------------------------------------
// Compiling: argument checks that come before the compiler.

#[test]
fn compile_checks_arguments() {
    let v = tiny();
    let src = "root ::= \"a\"";
    let s = src.as_ptr() as *const c_char;
    let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
    unsafe {
        cg_compile_options_init_size(o.as_mut_ptr(), std::mem::size_of::<cg_compile_options>());
        let mut o = o.assume_init();

        assert!(cg_compile(null(), s, src.len(), &o).is_null());
        assert_error("cg_compile", &["vocab is NULL"]);
        assert!(cg_compile(v, null(), 5, &o).is_null());
        assert_error("cg_compile", &["source is NULL"]);

        let bad_utf8 = b"root ::= \"\xff\"";
        assert!(cg_compile(v, bad_utf8.as_ptr().cast(), bad_utf8.len(), &o).is_null());
        assert_error("cg_compile", &["UTF-8", "byte offset 10"]);
        let truncated = "root ::= \"é\"".as_bytes();
        assert!(cg_compile(v, truncated.as_ptr().cast(), 11, &o).is_null());
        assert_error("cg_compile", &["UTF-8", "incomplete", "10"]);

        for size in [0u32, 1, 4, 15] {
            o.struct_size = size;
            assert!(cg_compile(v, s, src.len(), &o).is_null());
            assert_error(
                "cg_compile",
                &["struct_size", &size.to_string(), "cg_compile_options_init"],
            );
        }
        cg_compile_options_init_size(&mut o, std::mem::size_of::<cg_compile_options>());
        o.kind = 4;
        assert!(cg_compile(v, s, src.len(), &o).is_null());
        assert_error("cg_compile", &["kind 4"]);
        o.kind = CG_KIND_GBNF;
        o.flags = 1 << 31;
        assert!(cg_compile(v, s, src.len(), &o).is_null());
        assert_error("cg_compile", &["flags", "0x80000000"]);
        // A flag of another kind is refused, not ignored.
        for (kind, flags, name) in [
            (CG_KIND_GBNF, CG_JSON_COMPACT, "GBNF"),
            (CG_KIND_REGEX, CG_GBNF_ALLOW_LEFT_RECURSION, "regex"),
            (CG_KIND_ANY_JSON, CG_JSON_NO_EXTRA_PROPERTIES, "any-JSON"),
        ] {
            o.kind = kind;
            o.flags = flags;
            assert!(cg_compile(v, s, src.len(), &o).is_null());
            assert_eq!(cg_last_error_code(), CG_ERR_INVALID_ARGUMENT);
            assert_error("cg_compile", &["do not apply", name]);
        }
        o.kind = CG_KIND_GBNF;
        o.flags = 0;
        o.root = c"r\xC3".as_ptr();
        assert!(cg_compile(v, s, src.len(), &o).is_null());
        assert_error("cg_compile", &["root", "UTF-8"]);
        cg_vocab_free(v);
    }
}

// ---------------------------------------------------------------------------
// Matchers and grammars: NULL handles.

#[test]
fn null_handles_are_errors() {
    let mut mask = [0u32; 4];
    let mut out = [0i32; 4];
    unsafe {
        assert_eq!(cg_grammar_vocab_size(null()), 0);
        assert_error("cg_grammar_vocab_size", &["grammar is NULL"]);
        assert_eq!(cg_mask_words(null()), 0);
        assert_error("cg_mask_words", &["grammar is NULL"]);
        assert!(cg_matcher_new(null()).is_null());
        assert_error("cg_matcher_new", &["grammar is NULL"]);
        assert!(cg_matcher_clone(null()).is_null());
        assert_error("cg_matcher_clone", &["matcher is NULL"]);
        assert_eq!(
            cg_fill_mask(null_mut(), mask.as_mut_ptr(), 4),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_fill_mask", &["matcher is NULL"]);
        assert_eq!(cg_accept(null_mut(), 0), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_accept", &["matcher is NULL"]);
        assert_eq!(
            cg_accept_bytes(null_mut(), b"a".as_ptr(), 1),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_accept_bytes", &["matcher is NULL"]);
        assert_eq!(cg_rollback(null_mut(), 1), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_rollback", &["matcher is NULL"]);
        assert_eq!(cg_is_accepting(null()), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_is_accepting", &["matcher is NULL"]);
        assert_eq!(cg_is_terminated(null()), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_is_terminated", &["matcher is NULL"]);
        assert_eq!(
            cg_forced_tokens(null_mut(), out.as_mut_ptr(), 4),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_forced_tokens", &["matcher is NULL"]);
        cg_reset(null_mut());
        assert_error("cg_reset", &["matcher is NULL"]);

        // Batches: nothing to do is fine; NULL arrays and entries are not.
        assert_eq!(cg_fill_masks(null(), 0, null_mut(), 0, 1), CG_OK);
        assert_eq!(
            cg_fill_masks(null(), 2, mask.as_mut_ptr(), 2, 1),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_fill_masks", &["matchers is NULL"]);
        let ms: [*mut cg_matcher; 2] = [null_mut(), null_mut()];
        assert_eq!(
            cg_fill_masks(ms.as_ptr(), 2, mask.as_mut_ptr(), 2, 1),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_fill_masks", &["matchers[0] is NULL"]);
    }
}

// ---------------------------------------------------------------------------
// With the engine: a grammar over the tiny vocabulary.

/// Compiles `gbnf` for `v` with the default options (panics on failure).
fn compile(v: *const cg_vocab, gbnf: &str) -> *mut cg_grammar {
    let g = unsafe { cg_compile(v, gbnf.as_ptr().cast(), gbnf.len(), null()) };
    assert!(!g.is_null(), "cg_compile failed: {}", last_error());
    g
}

/// The allowed token ids of a matcher's mask.
fn allowed(m: *mut cg_matcher) -> Vec<i32> {
    let mut mask = [0u32; 1];
    let rc = unsafe { cg_fill_mask(m, mask.as_mut_ptr(), 1) };
    assert_eq!(rc, CG_OK, "cg_fill_mask: {}", last_error());
    (0..32).filter(|t| mask[0] >> t & 1 == 1).collect()
}

/// `root ::= "a"+ "b"?` over [`tiny`]: "a", "ab", "aab", ...
const A_PLUS_B: &str = "root ::= \"a\"+ \"b\"?";

#[test]
fn engine_grammar_basics() {
    let v = tiny();
    let g = compile(v, A_PLUS_B);
    unsafe {
        assert_eq!(cg_grammar_vocab_size(g), 7);
        assert_eq!(cg_mask_words(g), 1);
        let m = cg_matcher_new(g);
        assert!(!m.is_null());
        assert_eq!(cg_is_accepting(m), 0);
        assert_eq!(cg_is_terminated(m), 0);
        assert_eq!(allowed(m), vec![A, AB]);
        assert_eq!(cg_accept(m, A), CG_OK);
        assert_eq!(cg_is_accepting(m), 1);
        assert_eq!(allowed(m), vec![A, B, AB, EOS]);
        assert_eq!(cg_accept(m, B), CG_OK);
        assert_eq!(allowed(m), vec![EOS]);
        assert_eq!(cg_accept(m, EOS), CG_OK);
        assert_eq!(cg_is_terminated(m), 1);
        assert_eq!(cg_accept(m, A), CG_ERR_TERMINATED);
        assert_error("cg_accept", &[]);
        cg_reset(m);
        assert_eq!(cg_is_terminated(m), 0);
        assert_eq!(allowed(m), vec![A, AB]);
        cg_matcher_free(m);
        cg_free(g);
        cg_vocab_free(v);
    }
}

#[test]
fn engine_accept_checks_tokens_and_keeps_state() {
    let v = tiny();
    let g = compile(v, A_PLUS_B);
    unsafe {
        let m = cg_matcher_new(g);
        for bad in [-1, 7, 1000, i32::MAX, i32::MIN] {
            assert_eq!(cg_accept(m, bad), CG_ERR_INVALID_ARGUMENT);
            assert_error("cg_accept", &[&bad.to_string(), "out of range"]);
        }
        for rejected in [B, C, EOS, BOS] {
            assert_eq!(
                cg_accept(m, rejected),
                CG_ERR_TOKEN_REJECTED,
                "token {rejected}"
            );
            assert_error("cg_accept", &[]);
            assert_eq!(
                allowed(m),
                vec![A, AB],
                "state changed after rejecting {rejected}"
            );
        }
        cg_matcher_free(m);
        cg_free(g);
        cg_vocab_free(v);
    }
}

#[test]
fn engine_fill_mask_checks_the_buffer() {
    let v = tiny();
    let g = compile(v, A_PLUS_B);
    unsafe {
        let m = cg_matcher_new(g);
        let mut mask = [0xFFFF_FFFFu32; 3];
        assert_eq!(
            cg_fill_mask(m, mask.as_mut_ptr(), 0),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_fill_mask", &["0 words", "needs 1"]);
        assert_eq!(mask, [0xFFFF_FFFF; 3], "a refused call writes nothing");
        assert_eq!(cg_fill_mask(m, null_mut(), 1), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_fill_mask", &["mask is NULL"]);
        // Nor does a NULL matcher (the header: the buffer is untouched).
        assert_eq!(
            cg_fill_mask(null_mut(), mask.as_mut_ptr(), 3),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_eq!(mask, [0xFFFF_FFFF; 3], "a NULL matcher wrote the mask");
        // A longer buffer is fine; only cg_mask_words words are written.
        assert_eq!(cg_fill_mask(m, mask.as_mut_ptr(), 3), CG_OK);
        assert_eq!(mask, [1 << A | 1 << AB, 0xFFFF_FFFF, 0xFFFF_FFFF]);
        cg_matcher_free(m);
        cg_free(g);
        cg_vocab_free(v);
    }
}

#[test]
fn engine_clone_rollback_and_bytes() {
    let v = tiny();
    let g = compile(v, A_PLUS_B);
    unsafe {
        let m = cg_matcher_new(g);
        assert_eq!(cg_accept(m, A), CG_OK);
        let c = cg_matcher_clone(m);
        assert!(!c.is_null());
        assert_eq!(cg_accept(c, B), CG_OK);
        assert_eq!(allowed(c), vec![EOS]);
        assert_eq!(allowed(m), vec![A, B, AB, EOS], "the clone is independent");

        // The clone has the original's history: "a" then its own "b".
        assert_eq!(cg_rollback(c, 3), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_rollback", &["roll back 3", "only 2"]);
        assert_eq!(allowed(c), vec![EOS], "a refused rollback changes nothing");
        assert_eq!(cg_rollback(c, 1), CG_OK, "{}", last_error());
        assert_eq!(allowed(c), vec![A, B, AB, EOS]);
        assert_eq!(cg_rollback(c, 1), CG_OK);
        assert_eq!(allowed(c), vec![A, AB]);
        assert_eq!(cg_rollback(c, 1), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_rollback", &["roll back 1"]);
        assert_eq!(cg_rollback(c, 0), CG_OK);

        // Raw text.
        let fresh = cg_matcher_new(g);
        assert_eq!(
            cg_accept_bytes(fresh, b"aaab".as_ptr(), 4),
            CG_OK,
            "{}",
            last_error()
        );
        assert_eq!(cg_is_accepting(fresh), 1);
        assert_eq!(
            cg_accept_bytes(fresh, b"c".as_ptr(), 1),
            CG_ERR_TOKEN_REJECTED
        );
        assert_eq!(cg_accept_bytes(fresh, null(), 0), CG_OK);
        assert_eq!(cg_accept_bytes(fresh, null(), 1), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_accept_bytes", &["bytes is NULL"]);
        assert_eq!(allowed(fresh), vec![EOS]);

        // Handles may be freed in any order: the matcher keeps the grammar
        // and the grammar the vocabulary alive.
        cg_vocab_free(v);
        cg_free(g);
        assert_eq!(cg_accept(m, A), CG_OK);
        cg_matcher_free(m);
        cg_matcher_free(c);
        cg_matcher_free(fresh);
    }
}

#[test]
fn engine_forced_tokens() {
    let v = tiny();
    let g = compile(v, "root ::= \"c\"");
    unsafe {
        let m = cg_matcher_new(g);
        let mut out = [-1i32; 4];
        assert_eq!(
            cg_forced_tokens(m, out.as_mut_ptr(), 4),
            1,
            "{}",
            last_error()
        );
        assert_eq!(out[0], C);
        assert_eq!(cg_forced_tokens(m, null_mut(), 0), 0);
        assert_eq!(cg_forced_tokens(m, null_mut(), 1), CG_ERR_INVALID_ARGUMENT);
        assert_error("cg_forced_tokens", &["out is NULL"]);
        // Not advanced.
        assert_eq!(allowed(m), vec![C]);
        cg_matcher_free(m);
        cg_free(g);
        cg_vocab_free(v);
    }
}

#[test]
fn engine_compile_errors_and_options() {
    let v = tiny();
    unsafe {
        let bad = "root ::= (";
        assert!(cg_compile(v, bad.as_ptr().cast(), bad.len(), null()).is_null());
        assert_error("cg_compile", &[]);
        let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
        cg_compile_options_init_size(o.as_mut_ptr(), std::mem::size_of::<cg_compile_options>());
        let mut o = o.assume_init();
        o.root = c"start".as_ptr();
        let src = "start ::= \"c\"";
        let g = cg_compile(v, src.as_ptr().cast(), src.len(), &o);
        assert!(!g.is_null(), "{}", last_error());
        cg_free(g);
        // An older caller's struct (only the fields that never move), and
        // "no limit" for the limits.
        o.struct_size = (std::mem::offset_of!(cg_compile_options, root) + 8) as u32;
        let g = cg_compile(v, src.as_ptr().cast(), src.len(), &o);
        assert!(!g.is_null(), "{}", last_error());
        cg_free(g);
        cg_compile_options_init_size(&mut o, std::mem::size_of::<cg_compile_options>());
        o.max_compile_ms = 0;
        o.max_states = 0;
        let g = cg_compile(v, A_PLUS_B.as_ptr().cast(), A_PLUS_B.len(), &o);
        assert!(!g.is_null(), "{}", last_error());
        cg_free(g);
        // A missing start rule.
        o.root = c"nope".as_ptr();
        assert!(cg_compile(v, A_PLUS_B.as_ptr().cast(), A_PLUS_B.len(), &o).is_null());
        assert_error("cg_compile", &["nope"]);
        cg_vocab_free(v);
    }
}

#[test]
fn engine_set_eos_refused_while_grammars_live() {
    let v = tiny();
    let g = compile(v, A_PLUS_B);
    unsafe {
        let m = cg_matcher_new(g);
        let new = [C];
        assert_eq!(
            cg_vocab_set_eos(v, new.as_ptr(), 1),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_vocab_set_eos", &["1 grammar", "still alive"]);
        cg_free(g);
        // The matcher still holds the grammar.
        assert_eq!(
            cg_vocab_set_eos(v, new.as_ptr(), 1),
            CG_ERR_INVALID_ARGUMENT
        );
        cg_matcher_free(m);
        assert_eq!(
            cg_vocab_set_eos(v, new.as_ptr(), 1),
            CG_OK,
            "{}",
            last_error()
        );
        // The new EOS is used by grammars compiled afterwards.
        let g = compile(v, A_PLUS_B);
        let m = cg_matcher_new(g);
        assert_eq!(cg_accept(m, A), CG_OK);
        assert_eq!(allowed(m), vec![A, B, AB, C]);
        cg_matcher_free(m);
        cg_free(g);
        cg_vocab_free(v);
    }
}

#[test]
fn engine_fill_masks_batches() {
    let v = tiny();
    let g = compile(v, A_PLUS_B);
    unsafe {
        let n = 9;
        let ms: Vec<*mut cg_matcher> = (0..n).map(|_| cg_matcher_new(g)).collect();
        // Put matcher i after i "a"s, so that the masks differ.
        for (i, &m) in ms.iter().enumerate() {
            for _ in 0..i % 3 {
                assert_eq!(cg_accept(m, A), CG_OK);
            }
        }
        let expected: Vec<Vec<i32>> = ms.iter().map(|&m| allowed(m)).collect();
        let words = 2; // more than needed: extra words are left alone
        for threads in [0, 1, 2, 3, 64] {
            let mut masks = vec![0xDEAD_BEEFu32; n * words];
            let rc = cg_fill_masks(ms.as_ptr(), n, masks.as_mut_ptr(), words, threads);
            assert_eq!(rc, CG_OK, "{threads} threads: {}", last_error());
            for i in 0..n {
                let got: Vec<i32> = (0..32).filter(|t| masks[i * words] >> t & 1 == 1).collect();
                assert_eq!(got, expected[i], "matcher {i}, {threads} threads");
                assert_eq!(masks[i * words + 1], 0xDEAD_BEEF);
            }
        }
        let mut masks = vec![0xDEAD_BEEFu32; n];
        let mut dup = ms.clone();
        dup[7] = dup[2];
        assert_eq!(
            cg_fill_masks(dup.as_ptr(), n, masks.as_mut_ptr(), 1, 2),
            CG_ERR_INVALID_ARGUMENT
        );
        // Refused before any mask is written (the header says so).
        assert!(masks.iter().all(|&w| w == 0xDEAD_BEEF));
        assert_error(
            "cg_fill_masks",
            &["matchers[2] and matchers[7]", "same matcher"],
        );
        assert_eq!(
            cg_fill_masks(ms.as_ptr(), n, masks.as_mut_ptr(), 0, 2),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_fill_masks", &["n_words is 0", "needs 1"]);
        assert_eq!(
            cg_fill_masks(ms.as_ptr(), n, null_mut(), 1, 2),
            CG_ERR_INVALID_ARGUMENT
        );
        assert_error("cg_fill_masks", &["masks is NULL"]);
        for m in ms {
            cg_matcher_free(m);
        }
        cg_free(g);
        cg_vocab_free(v);
    }
}

/// The real Llama 3 tokenizer, when `scripts/fetch-tokenizers.sh` has
/// fetched it (skipped otherwise).
#[test]
fn engine_llama3_tokenizer_json() {
    let root = std::env::var("CGRAM_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache"));
    let path = root.join("tokenizers/llama3/tokenizer.json");
    if !path.exists() {
        eprintln!(
            "{} is missing: run scripts/fetch-tokenizers.sh; skipping",
            path.display()
        );
        return;
    }
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    unsafe {
        let v = cg_vocab_from_tokenizer_json(c.as_ptr());
        assert!(!v.is_null(), "{}", last_error());
        assert_eq!(cg_vocab_size(v), 128_256);
        assert!(cg_vocab_eos_tokens(v, null_mut(), 0) >= 1);
        cg_vocab_free(v);
    }
}

#[test]
fn engine_grammar_cache() {
    let v = tiny();
    unsafe {
        let cache = cg_grammar_cache_new(0);
        assert!(!cache.is_null());
        let stats = |c: *const cg_grammar_cache| {
            let mut s: cg_grammar_cache_stats = std::mem::zeroed();
            s.struct_size = std::mem::size_of::<cg_grammar_cache_stats>() as u32;
            assert_eq!(cg_grammar_cache_get_stats(c, &mut s), CG_OK);
            s
        };
        assert_eq!(stats(cache).budget, 256 << 20);
        let src = A_PLUS_B;
        let g1 = cg_grammar_cache_compile(cache, v, src.as_ptr().cast(), src.len(), null());
        let g2 = cg_grammar_cache_compile(cache, v, src.as_ptr().cast(), src.len(), null());
        assert!(!g1.is_null() && !g2.is_null());
        let s = stats(cache);
        assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
        assert!(s.bytes > 0);
        // Each handle is the caller's; the cached grammar works through both.
        cg_free(g1);
        let m = cg_matcher_new(g2);
        assert_eq!(allowed(m), vec![A, AB]);
        cg_matcher_free(m);
        cg_free(g2);
        // Another kind of the same text is another entry; errors are those
        // of cg_compile and are not cached.
        let mut o = std::mem::zeroed::<cg_compile_options>();
        cg_compile_options_init_size(&mut o, std::mem::size_of::<cg_compile_options>());
        o.kind = CG_KIND_REGEX;
        let re = "a+b?";
        let g3 = cg_grammar_cache_compile(cache, v, re.as_ptr().cast(), re.len(), &o);
        assert!(!g3.is_null(), "{}", last_error());
        cg_free(g3);
        let bad = "root ::= (";
        let g4 = cg_grammar_cache_compile(cache, v, bad.as_ptr().cast(), bad.len(), null());
        assert!(g4.is_null());
        assert_eq!(cg_last_error_code(), CG_ERR_PARSE);
        assert_error("cg_grammar_cache_compile", &[]);
        assert_eq!(stats(cache).entries, 2);
        // Triggers too.
        let word = c"ab";
        let list = [cg_trigger {
            kind: CG_TRIGGER_WORD,
            text: word.as_ptr(),
            token: 0,
        }];
        let t1 = cg_grammar_cache_triggers(cache, v, list.as_ptr(), 1);
        let t2 = cg_grammar_cache_triggers(cache, v, list.as_ptr(), 1);
        assert!(!t1.is_null() && !t2.is_null());
        assert_eq!(stats(cache).entries, 3);
        cg_triggers_free(t1);
        cg_triggers_free(t2);
        // A budget of one byte keeps nothing.
        cg_grammar_cache_set_budget(cache, 1);
        let s = stats(cache);
        assert_eq!((s.entries, s.bytes, s.evictions), (0, 0, 3));
        // An older caller's smaller struct gets only its fields.
        let mut small = [0u64; 2];
        small[0] = 16; // struct_size = 16: struct_size and hits
        assert_eq!(
            cg_grammar_cache_get_stats(cache, small.as_mut_ptr().cast()),
            CG_OK
        );
        assert_eq!(small[1], 2);
        // A newer caller's larger struct: the fields this library does not
        // know read 0; nothing past its struct_size is written.
        let known = std::mem::size_of::<cg_grammar_cache_stats>();
        let mut large = [0xEEu64; 16];
        large[0] = (known + 16) as u64;
        assert_eq!(
            cg_grammar_cache_get_stats(cache, large.as_mut_ptr().cast()),
            CG_OK
        );
        assert_eq!(large[1], 2);
        assert_eq!(&large[known / 8..known / 8 + 2], &[0, 0]);
        assert!(large[known / 8 + 2..].iter().all(|&w| w == 0xEE));
        large[0] = 4097;
        assert_eq!(
            cg_grammar_cache_get_stats(cache, large.as_mut_ptr().cast()),
            CG_ERR_INVALID_ARGUMENT
        );
        let mut zero: cg_grammar_cache_stats = std::mem::zeroed();
        assert_eq!(
            cg_grammar_cache_get_stats(cache, &mut zero),
            CG_ERR_INVALID_ARGUMENT
        );
        cg_grammar_cache_clear(cache);
        cg_grammar_cache_free(cache);
        cg_vocab_free(v);
    }
}

/// Token ids name tokens of the vocabulary or none: llama.cpp takes
/// `<[id]>` for any 32-bit id, and an id past the vocabulary (or an
/// end-of-sequence id, which ends the output) simply never matches. No bit
/// past the vocabulary is ever set, and a grammar left with nothing to
/// match is refused as such.
#[test]
fn engine_token_ids_no_token_can_match() {
    let v = tiny();
    unsafe {
        for dead in ["<[7]>", "<[4294967295]>", "<[4]>", "( <[7]> | <[4]> )+"] {
            for gbnf in [format!("root ::= {dead}"), format!("root ::= \"a\" {dead}")] {
                let g = cg_compile(v, gbnf.as_ptr().cast(), gbnf.len(), null());
                assert!(g.is_null(), "{gbnf} compiled");
                assert_eq!(cg_last_error_code(), CG_ERR_INVALID_ARGUMENT);
                assert_error("cg_compile", &["matches no string"]);
            }
            let gbnf = format!("root ::= \"a\" | {dead} \"b\"");
            let g = compile(v, &gbnf);
            let m = cg_matcher_new(g);
            assert_eq!(allowed(m), vec![A], "{gbnf}");
            assert_eq!(cg_accept(m, 7), CG_ERR_INVALID_ARGUMENT);
            cg_matcher_free(m);
            cg_free(g);
        }
        // A negated id past the vocabulary excludes nothing.
        let g = compile(v, "root ::= !<[7]> !<[1000000]>");
        let m = cg_matcher_new(g);
        assert_eq!(allowed(m), vec![A, B, AB, C, BOS, EMPTY]);
        cg_matcher_free(m);
        cg_free(g);
        // Past 32 bits the id is a parse error, as in llama.cpp.
        let gbnf = "root ::= <[4294967296]>";
        assert!(cg_compile(v, gbnf.as_ptr().cast(), gbnf.len(), null()).is_null());
        assert_eq!(cg_last_error_code(), CG_ERR_PARSE);
        cg_vocab_free(v);
    }
}

/// A schema deeper than the JSON reader goes is a limit, named as such,
/// not "not valid JSON".
#[test]
fn engine_deep_schema_is_a_limit() {
    let v = tiny();
    let depth = 200;
    let schema = format!(
        "{}{{\"type\": \"integer\"}}{}",
        "{\"type\": \"array\", \"items\": ".repeat(depth),
        "}".repeat(depth)
    );
    let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
    unsafe {
        cg_compile_options_init_size(o.as_mut_ptr(), std::mem::size_of::<cg_compile_options>());
        let mut o = o.assume_init();
        o.kind = CG_KIND_JSON_SCHEMA;
        let g = cg_compile(v, schema.as_ptr().cast(), schema.len(), &o);
        assert!(g.is_null());
        assert_eq!(cg_last_error_code(), CG_ERR_LIMIT);
        assert_error("cg_compile", &["nests more than 128"]);
        cg_vocab_free(v);
    }
}
