//! A panic inside any lock of the library costs one call, never the
//! vocabulary: through the C API, with Llama 3's tokens, each named
//! [`CacheMutex`](crate::util::sync::CacheMutex) is made to panic while
//! held (the test hook of `util::sync`), the call fails with
//! `CG_ERR_INTERNAL`, and the same work run again on the same vocabulary
//! and grammar cache gives exactly the masks of an undisturbed run.

use std::ffi::CString;
use std::path::PathBuf;

use super::error::CG_ERR_INTERNAL;
use super::grammar::{
    cg_compile_options, cg_compile_options_init, cg_free, cg_grammar, cg_mask_words,
    CG_KIND_ANY_JSON, CG_KIND_GBNF, CG_KIND_JSON_SCHEMA, CG_KIND_REGEX,
};
use super::grammar_cache::{
    cg_grammar_cache, cg_grammar_cache_compile, cg_grammar_cache_free, cg_grammar_cache_new,
    cg_grammar_cache_triggers,
};
use super::handle::Handle;
use super::matcher::{
    cg_accept, cg_accept_bytes, cg_fill_mask, cg_is_terminated, cg_matcher_free, cg_matcher_new,
};
use super::triggers::{cg_matcher_new_lazy, cg_trigger, cg_triggers_free, CG_TRIGGER_WORD};
use super::vocab::{cg_vocab, cg_vocab_free, cg_vocab_from_tokenizer_json, cg_vocab_token_bytes};
use crate::util::sync::test_hook;
use crate::util::test_rng::TestRng;

/// Every lock of the library, by name: the test fails if a run enters
/// one not listed, or misses one listed.
const LOCKS: &[&str] = &[
    "engine counted-string sets",
    "engine free exits",
    "engine lexemes",
    "engine walked sets",
    "grammar cache",
    "grammar contexts",
    "grammar covers",
    "lexeme computed sets",
    "lexeme ending sets",
    "lexeme subtree walks",
    "regex formats",
    "trigger fire sets",
];

/// Grammars whose masks go through every cache (counted, formatted and
/// pattern-keyed strings, parser rules around lexemes, a regex, any JSON,
/// a lazy GBNF grammar behind a trigger word), each with an output the
/// walk follows.
const GRAMMARS: &[(u32, &str, &str)] = &[
    (
        CG_KIND_JSON_SCHEMA,
        r#"{"type":"object","properties":{
            "name":{"type":"string","minLength":2,"maxLength":12},
            "when":{"type":"string","format":"date-time"},
            "tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"},"maxItems":3},
            "size":{"type":"integer","minimum":-5,"maximum":900},
            "kind":{"enum":["alpha","beta","gamma delta"]},
            "code":{"type":"string","pattern":"^[a-z0-9]+$","minLength":3,"maxLength":40}},
          "patternProperties":{"q":{"type":"integer"},"^x_":{"type":"string"}},
          "required":["name","when","tags","size","kind","code"],"additionalProperties":false}"#,
        r#"{"name": "Ada Lovelace", "when": "2024-02-29T12:30:00Z", "tags": ["math", "engines"], "x_note": "first program", "size": 42, "kind": "gamma delta", "qty": 7, "code": "b7x90"}"#,
    ),
    (
        CG_KIND_GBNF,
        r#"root ::= "call(" args ")" ws
args ::= arg ("," ws arg)*
arg ::= ident "=" (number | string)
ident ::= [a-z_] [a-z0-9_]*
number ::= "-"? [0-9]+ ("." [0-9]+)?
string ::= "\"" [^"\\]* "\""
ws ::= [ \n]*"#,
        r#"call(city="Paris", days=3, unit_of_measure="celsius", ratio=-0.25)"#,
    ),
    (
        CG_KIND_REGEX,
        r"[A-Z][a-z]{2,8}( [A-Z][a-z]{2,8}){0,3}\.",
        "Grace Brewster Hopper.",
    ),
    (
        CG_KIND_ANY_JSON,
        "",
        r#"{"a": [1, 2.5e3, true, null, {"b": "text with \"quotes\""}]}"#,
    ),
];

fn llama3_tokenizer() -> PathBuf {
    let cache = match std::env::var_os("CGRAM_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache"),
    };
    let path = cache.join("tokenizers/llama3/tokenizer.json");
    assert!(
        path.is_file(),
        "{} missing: run scripts/fetch-tokenizers.sh",
        path.display()
    );
    path
}

/// Compiles every grammar through `cache` and walks each for a few
/// tokens, chosen at random (seeded) among those its masks allow; returns
/// the masks, or the first call's error code.
unsafe fn run(
    vocab: *const cg_vocab,
    cache: *const cg_grammar_cache,
) -> Result<Vec<Vec<u32>>, i32> {
    let mut masks = Vec::new();
    let word = CString::new("call(").unwrap();
    let trigger = cg_trigger {
        kind: CG_TRIGGER_WORD,
        text: word.as_ptr(),
        token: 0,
    };
    for &(kind, source, output) in GRAMMARS {
        let mut options: cg_compile_options = std::mem::zeroed();
        cg_compile_options_init(&mut options);
        options.kind = kind;
        let grammar =
            cg_grammar_cache_compile(cache, vocab, source.as_ptr().cast(), source.len(), &options);
        if grammar.is_null() {
            return Err(super::error::cg_last_error_code());
        }
        let walked = walk(vocab, grammar, None, output, &mut masks);
        let lazy = if kind == CG_KIND_GBNF && walked.is_ok() {
            let triggers = cg_grammar_cache_triggers(cache, vocab, &trigger, 1);
            let lazy = if triggers.is_null() {
                Err(super::error::cg_last_error_code())
            } else {
                walk(vocab, grammar, Some(triggers), output, &mut masks)
            };
            cg_triggers_free(triggers);
            lazy
        } else {
            Ok(())
        };
        cg_free(grammar);
        walked?;
        lazy?;
    }
    Ok(masks)
}

unsafe fn walk(
    vocab: *const cg_vocab,
    grammar: *const cg_grammar,
    triggers: Option<*const super::triggers::cg_triggers>,
    output: &str,
    masks: &mut Vec<Vec<u32>>,
) -> Result<(), i32> {
    let matcher = match triggers {
        Some(t) => cg_matcher_new_lazy(grammar, t),
        None => cg_matcher_new(grammar),
    };
    if matcher.is_null() {
        return Err(super::error::cg_last_error_code());
    }
    let result = follow(vocab, grammar, matcher, triggers.is_some(), output, masks);
    cg_matcher_free(matcher);
    result
}

/// Walks `matcher` along `output`: at each step the longest allowed token
/// that spells the text next, then a few random allowed tokens past it
/// (seeded: the same masks give the same walk).
unsafe fn follow(
    vocab: *const cg_vocab,
    grammar: *const cg_grammar,
    matcher: *mut super::matcher::cg_matcher,
    lazy: bool,
    output: &str,
    masks: &mut Vec<Vec<u32>>,
) -> Result<(), i32> {
    let mut mask = vec![0u32; cg_mask_words(grammar)];
    let fill = |mask: &mut Vec<u32>, masks: &mut Vec<Vec<u32>>| {
        let rc = cg_fill_mask(matcher, mask.as_mut_ptr(), mask.len());
        masks.push(mask.clone());
        if rc < 0 {
            Err(rc)
        } else {
            Ok(())
        }
    };
    if lazy {
        // A mask before the trigger, then text with the trigger's word:
        // from the word on, the output is the grammar's.
        fill(&mut mask, masks)?;
        let text = b"Sure. ";
        ok(cg_accept_bytes(matcher, text.as_ptr(), text.len()))?;
    }
    let bytes = |t: usize| {
        let mut len = 0usize;
        let p = cg_vocab_token_bytes(vocab, t as i32, &mut len);
        std::slice::from_raw_parts(p, len)
    };
    let mut rest = output.as_bytes();
    let mut rng = TestRng::new(output.len() as u64 + 1);
    let mut random_steps = 8;
    while random_steps > 0 && cg_is_terminated(matcher) != 1 {
        fill(&mut mask, masks)?;
        let allowed: Vec<usize> = (0..mask.len() * 32)
            .filter(|&t| mask[t / 32] >> (t % 32) & 1 == 1)
            .collect();
        let along = allowed
            .iter()
            .copied()
            .filter(|&t| !bytes(t).is_empty() && rest.starts_with(bytes(t)))
            .max_by_key(|&t| (bytes(t).len(), std::cmp::Reverse(t)));
        let token = match along {
            Some(t) => {
                rest = &rest[bytes(t).len()..];
                t
            }
            None if allowed.is_empty() => break,
            None => {
                rest = &[];
                random_steps -= 1;
                allowed[rng.below(allowed.len())]
            }
        };
        ok(cg_accept(matcher, token as i32))?;
    }
    Ok(())
}

fn ok(rc: i32) -> Result<(), i32> {
    if rc < 0 {
        Err(rc)
    } else {
        Ok(())
    }
}

/// A fresh vocabulary and grammar cache.
/// A vocabulary with the tokens of `base` and nothing cached (cheaper
/// than reading the tokenizer file again), and a grammar cache.
unsafe fn fresh(base: *const cg_vocab) -> (*mut cg_vocab, *mut cg_grammar_cache) {
    let base = cg_vocab::arg(base).unwrap();
    let eos = base.vocab().eos_tokens().to_vec();
    let engine = base.with_eos(eos).unwrap();
    (
        Handle::into_raw(cg_vocab { inner: engine }),
        cg_grammar_cache_new(64 << 20),
    )
}

#[test]
fn a_panic_in_any_lock_leaves_later_masks_unchanged() {
    let path = CString::new(llama3_tokenizer().to_str().unwrap()).unwrap();
    unsafe {
        let base = cg_vocab_from_tokenizer_json(path.as_ptr());
        assert!(!base.is_null());
        let (vocab, cache) = fresh(base);
        test_hook::take_entered();
        let reference = run(vocab, cache).expect("the undisturbed run");
        let entered = test_hook::take_entered();
        cg_grammar_cache_free(cache);
        cg_vocab_free(vocab);
        let names: Vec<&str> = entered.keys().copied().collect();
        assert_eq!(
            names, LOCKS,
            "the locks a run enters (update LOCKS and the grammars)"
        );

        for &name in LOCKS {
            let (vocab, cache) = fresh(base);
            // Midway through the run's entries, so that the cache holds
            // something when it is poisoned.
            let nth = entered[name].div_ceil(2);
            test_hook::panic_at(Some((name, nth)));
            let failed = run(vocab, cache);
            assert!(!test_hook::pending(), "no panic in `{name}`");
            test_hook::panic_at(None);
            // The call that panicked failed, unless it returns nothing
            // (freeing a grammar).
            if let Err(code) = failed {
                assert_eq!(code, CG_ERR_INTERNAL, "the panic in `{name}`");
            }
            let again = run(vocab, cache)
                .unwrap_or_else(|e| panic!("after a panic in `{name}`: error {e}"));
            assert!(again == reference, "after a panic in `{name}`, other masks");
            cg_grammar_cache_free(cache);
            cg_vocab_free(vocab);
        }
        cg_vocab_free(base);
    }
}
