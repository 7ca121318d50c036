//! Issue 17's findings, each replayed through the C API on the real Llama 3
//! vocabulary: inputs a hostile (or merely large) request can send, and
//! what cgram must do with them: compile them in about linear time, or
//! stop at a documented limit with `CG_ERR_LIMIT` and a message naming
//! the limit and its value, never crash, hang or grow without bound.
//!
//! No test here measures speed (that is `cgram-bench`'s job); where a
//! limit is on time, the test checks that the call *returns* long before
//! it would without the limit, with a wide margin for loaded machines.

use std::ffi::{CStr, CString};
use std::ptr::null;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cgram::ffi::*;

fn last_error() -> String {
    unsafe { CStr::from_ptr(cg_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// The Llama 3 vocabulary, loaded once (shared by the tests, as a server
/// shares one per model). `scripts/fetch-tokenizers.sh` fetches it.
fn llama3() -> *const cg_vocab {
    struct Shared(*mut cg_vocab);
    // SAFETY: a vocabulary is immutable and thread-safe once built.
    unsafe impl Send for Shared {}
    unsafe impl Sync for Shared {}
    static VOCAB: OnceLock<Shared> = OnceLock::new();
    VOCAB
        .get_or_init(|| {
            let root = std::env::var("CGRAM_CACHE")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|_| {
                    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache")
                });
            let path = root.join("tokenizers/llama3/tokenizer.json");
            assert!(
                path.exists(),
                "{} is missing: run scripts/fetch-tokenizers.sh",
                path.display()
            );
            let c = CString::new(path.to_str().unwrap()).unwrap();
            let v = unsafe { cg_vocab_from_tokenizer_json(c.as_ptr()) };
            assert!(!v.is_null(), "{}", last_error());
            Shared(v)
        })
        .0
}

fn options(kind: u32) -> cg_compile_options {
    let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
    unsafe {
        cg_compile_options_init_size(o.as_mut_ptr(), std::mem::size_of::<cg_compile_options>());
        let mut o = o.assume_init();
        o.kind = kind;
        o
    }
}

/// Compiles `source`; `Err((code, message))` on failure.
fn try_compile(source: &str, o: &cg_compile_options) -> Result<Grammar, (i32, String)> {
    let g = unsafe { cg_compile(llama3(), source.as_ptr().cast(), source.len(), o) };
    if g.is_null() {
        Err((cg_last_error_code(), last_error()))
    } else {
        Ok(Grammar(g))
    }
}

#[track_caller]
fn compile(source: &str, kind: u32) -> Grammar {
    match try_compile(source, &options(kind)) {
        Ok(g) => g,
        Err((code, msg)) => panic!("compile failed ({code}): {msg}"),
    }
}

/// Asserts a `CG_ERR_LIMIT` whose message names every one of `words`.
#[track_caller]
fn assert_limit(result: Result<Grammar, (i32, String)>, words: &[&str]) {
    match result {
        Ok(_) => panic!("compiled; expected CG_ERR_LIMIT naming {words:?}"),
        Err((code, msg)) => {
            assert_eq!(code, CG_ERR_LIMIT, "{msg}");
            for w in words {
                assert!(msg.contains(w), "{msg:?} does not name {w:?}");
            }
        }
    }
}

struct Grammar(*mut cg_grammar);

impl Drop for Grammar {
    fn drop(&mut self) {
        unsafe { cg_free(self.0) }
    }
}

struct Matcher(*mut cg_matcher);

impl Drop for Matcher {
    fn drop(&mut self) {
        unsafe { cg_matcher_free(self.0) }
    }
}

impl Matcher {
    fn new(g: &Grammar) -> Matcher {
        let m = unsafe { cg_matcher_new(g.0) };
        assert!(!m.is_null(), "{}", last_error());
        Matcher(m)
    }

    /// The mask and `cg_fill_mask`'s return code.
    fn mask(&self) -> (Vec<u32>, i32) {
        let mut mask = vec![u32::MAX; mask_words()];
        let rc = unsafe { cg_fill_mask(self.0, mask.as_mut_ptr(), mask.len()) };
        (mask, rc)
    }

    #[track_caller]
    fn allowed(&self) -> Vec<u32> {
        let (mask, rc) = self.mask();
        assert_eq!(rc, CG_OK, "{}", last_error());
        let n = vocab_size();
        for t in n..mask.len() as u32 * 32 {
            assert_eq!(
                mask[t as usize / 32] >> (t % 32) & 1,
                0,
                "bit {t} past the vocabulary"
            );
        }
        (0..n)
            .filter(|&t| mask[t as usize / 32] >> (t % 32) & 1 == 1)
            .collect()
    }

    #[track_caller]
    fn feed(&self, text: &str) {
        let rc = unsafe { cg_accept_bytes(self.0, text.as_ptr().cast(), text.len()) };
        assert_eq!(rc, CG_OK, "{text:?}: {}", last_error());
    }

    fn try_feed(&self, text: &str) -> i32 {
        unsafe { cg_accept_bytes(self.0, text.as_ptr().cast(), text.len()) }
    }

    fn accepting(&self) -> bool {
        unsafe { cg_is_accepting(self.0) == 1 }
    }
}

fn vocab_size() -> u32 {
    unsafe { cg_vocab_size(llama3()) }
}

fn mask_words() -> usize {
    (vocab_size() as usize).div_ceil(32)
}

/// The id of the token spelled `text`.
fn token(text: &str) -> i32 {
    (0..vocab_size() as i32)
        .find(|&t| {
            let mut len = 0usize;
            let p = unsafe { cg_vocab_token_bytes(llama3(), t, &mut len) };
            !p.is_null() && unsafe { std::slice::from_raw_parts(p, len) } == text.as_bytes()
        })
        .unwrap_or_else(|| panic!("no token {text:?}"))
}

/// Runs `f` on a thread with `stack` bytes of stack, as a host thread
/// may have: compilation must not depend on the caller's stack.
fn on_small_stack<T: Send + 'static>(stack: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(f)
        .unwrap()
        .join()
        .expect("the thread crashed")
}

// ---------------------------------------------------------------------------
// 1. Token ids no token has.

/// `<[id]>` past the vocabulary never matches: the mask holds only real
/// tokens (no bit in the padding), and the other branch works.
#[test]
fn token_id_past_the_vocabulary_never_matches() {
    for id in [vocab_size(), 128_300, u32::MAX] {
        let g = compile(&format!("root ::= \"a\" | <[{id}]>"), CG_KIND_GBNF);
        let m = Matcher::new(&g);
        let allowed = m.allowed();
        assert!(allowed.contains(&(token("a") as u32)));
        assert!(allowed.iter().all(|&t| t < vocab_size()));
        assert_eq!(
            unsafe { cg_accept(m.0, id as i32) },
            CG_ERR_INVALID_ARGUMENT
        );
        m.feed("a");
        assert!(m.accepting());
    }
}

// ---------------------------------------------------------------------------
// 2 and 5. Compile time about linear in enum size, required properties and
// alternatives: these compile on the default limits.

#[test]
fn enum_of_100k_strings_compiles() {
    let values: Vec<String> = (0..100_000).map(|i| format!("\"v{i}\"")).collect();
    let schema = format!("{{\"enum\": [{}]}}", values.join(","));
    let g = compile(&schema, CG_KIND_JSON_SCHEMA);
    let m = Matcher::new(&g);
    assert!(!m.allowed().is_empty());
    m.feed("\"v99999\"");
    assert!(m.accepting());
    let m = Matcher::new(&g);
    assert_ne!(m.try_feed("\"v100000\""), CG_OK);
}

/// 100,000 random 12-letter names share few prefixes: a trie of about a
/// million nodes, which as a table would be millions of states (it was
/// refused for `max_states`). Any spelling of a listed name is one.
#[test]
fn enum_of_100k_random_names_compiles() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let letters = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let names: Vec<String> = (0..100_000)
        .map(|_| {
            (0..12)
                .map(|_| letters[next(52) as usize] as char)
                .collect()
        })
        .collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let g = compile(
        &format!("{{\"enum\": [{}]}}", quoted.join(",")),
        CG_KIND_JSON_SCHEMA,
    );
    let name = &names[31_337];
    let m = Matcher::new(&g);
    m.feed("\"");
    assert!(!m.allowed().is_empty());
    m.feed(&format!("{name}\""));
    assert!(m.accepting());
    // The first letter escaped, as `\u00XX`.
    let m = Matcher::new(&g);
    m.feed(&format!("\"\\u{:04X}{}\"", name.as_bytes()[0], &name[1..]));
    assert!(m.accepting());
    // A listed name cut short, or one letter longer.
    for text in [format!("\"{}\"", &name[..11]), format!("\"{name}a\"")] {
        let m = Matcher::new(&g);
        let ok = m.try_feed(&text) == CG_OK && m.accepting();
        assert!(!ok, "{text}");
    }
}

/// 60,000 values of one character each (CJK and past U+FFFF): one trie
/// node with 60,000 children, once a quadratic search while the trie was
/// built (0.5 s here, minutes for all of Unicode).
#[test]
fn enum_of_60k_single_characters_compiles() {
    let values: Vec<char> = (0x4E00..0x4E00 + 20_000)
        .chain(0x20000..0x20000 + 40_000)
        .filter_map(char::from_u32)
        .collect();
    let quoted: Vec<String> = values.iter().map(|c| format!("\"{c}\"")).collect();
    let g = compile(
        &format!("{{\"enum\": [{}]}}", quoted.join(",")),
        CG_KIND_JSON_SCHEMA,
    );
    for (text, listed) in [
        ("\"\u{4E00}\"", true),
        ("\"\u{29000}\"", true),
        // U+29000 as a surrogate pair.
        ("\"\\ud864\\uDC00\"", true),
        ("\"\u{3000}\"", false),
        ("\"\u{4E00}\u{4E00}\"", false),
    ] {
        let m = Matcher::new(&g);
        let ok = m.try_feed(text) == CG_OK && m.accepting();
        assert_eq!(ok, listed, "{text}");
    }
}

/// `anyOf` and `oneOf` of 60,000 `const`s: unions and exclusions of
/// that many branches once took a step per pair of branches (past the
/// deadline, or for minutes). The meaning is checked: `oneOf` drops a
/// value two branches share, whatever its spelling.
#[test]
fn const_alternatives_60k_compile() {
    let mut branches: Vec<String> = (0..60_000)
        .map(|i| format!("{{\"const\": \"value-{}-{}\"}}", i / 100, i % 100))
        .collect();
    branches.push(r#"{"const": "value-7-7"}"#.to_string());
    branches.push(r#"{"enum": [1, 2.5, null]}"#.to_string());
    branches.push(r#"{"const": 1.0}"#.to_string());
    for kw in ["anyOf", "oneOf"] {
        let schema = format!("{{\"{kw}\": [{}]}}", branches.join(","));
        let g = compile(&schema, CG_KIND_JSON_SCHEMA);
        for (text, any_of, one_of) in [
            ("\"value-599-99\"", true, true),
            ("\"value-7-7\"", true, false),
            ("\"value-600-0\"", false, false),
            ("2.5", true, true),
            ("null", true, true),
            ("1", true, false),
        ] {
            let m = Matcher::new(&g);
            let ok = m.try_feed(text) == CG_OK && m.accepting();
            assert_eq!(
                ok,
                if kw == "anyOf" { any_of } else { one_of },
                "{kw}: {text}"
            );
        }
    }
}

#[test]
fn object_with_1000_required_properties_compiles() {
    let n = 1000;
    let props: Vec<String> = (0..n)
        .map(|i| format!("\"p{i}\": {{\"type\": \"integer\"}}"))
        .collect();
    let names: Vec<String> = (0..n).map(|i| format!("\"p{i}\"")).collect();
    let schema = format!(
        "{{\"type\": \"object\", \"properties\": {{{}}}, \"required\": [{}], \
         \"additionalProperties\": false}}",
        props.join(","),
        names.join(",")
    );
    let g = compile(&schema, CG_KIND_JSON_SCHEMA);
    let instance: Vec<String> = (0..n).map(|i| format!("\"p{i}\":{i}")).collect();
    let m = Matcher::new(&g);
    m.feed(&format!("{{{}}}", instance.join(",")));
    assert!(m.accepting());
    // One required property missing: the object cannot close.
    let m = Matcher::new(&g);
    m.feed(&format!("{{{}", instance[1..].join(",")));
    assert_ne!(m.try_feed("}"), CG_OK);
}

/// 100,000 literal alternatives: compiled and first mask (it took seconds,
/// superlinear, before they became one lexeme).
#[test]
fn gbnf_with_100k_alternatives_masks() {
    let alts: Vec<String> = (0..100_000).map(|i| format!("\"w{i}\"")).collect();
    let g = compile(&format!("root ::= {}", alts.join(" | ")), CG_KIND_GBNF);
    let m = Matcher::new(&g);
    assert!(m.allowed().contains(&(token("w") as u32)));
    m.feed("w77777");
    assert!(m.accepting());
}

/// `root ::= r0 | ... | r{n-1}`, `rI ::= "wI" root?`: a choice of rules
/// that call back into it, so that they stay parser rules and every mask
/// walks them.
fn recursive_choice(n: usize) -> String {
    let mut gbnf = format!(
        "root ::= {}\n",
        (0..n)
            .map(|i| format!("r{i}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    for i in 0..n {
        gbnf += &format!("r{i} ::= \"w{i}\" root?\n");
    }
    gbnf
}

/// Thousands of alternatives that call back into the rule: they stay
/// parser rules, so every mask walks them. This once took 2.4 GB to
/// compile (a dense matrix per group of rules) and 8 s for the first mask
/// (all items of a closure hashed into one bucket group).
#[test]
fn recursive_alternatives_compile_and_mask() {
    let gbnf = recursive_choice(10_000);
    let g = compile(&gbnf, CG_KIND_GBNF);
    let m = Matcher::new(&g);
    m.feed("w1");
    let allowed = m.allowed();
    assert!(allowed.contains(&(token("w") as u32)));
    m.feed("w9999w0");
    assert!(m.accepting());
}

// ---------------------------------------------------------------------------
// 3. The work of one mask is bounded.

/// Past `max_mask_steps` a mask fails with `CG_ERR_LIMIT`, allows
/// nothing, keeps nothing partial (the next call fails the same way), and
/// leaves the matcher usable; the same grammar with the default budget
/// gives the full mask.
#[test]
fn mask_work_budget() {
    let gbnf = recursive_choice(3000);
    let mut o = options(CG_KIND_GBNF);
    o.max_mask_steps = 1000;
    let small = try_compile(&gbnf, &o).unwrap_or_else(|e| panic!("{e:?}"));
    let m = Matcher::new(&small);
    m.feed("w12");
    for _ in 0..2 {
        let (mask, rc) = m.mask();
        assert_eq!(rc, CG_ERR_LIMIT, "{}", last_error());
        let msg = last_error();
        assert!(
            msg.contains("1000") && msg.contains("max_mask_steps"),
            "{msg}"
        );
        assert!(mask.iter().all(|&w| w == 0), "a failed mask allows tokens");
    }
    // The matcher still accepts text and fails its masks the same way.
    m.feed("3w4");
    assert_eq!(m.mask().1, CG_ERR_LIMIT);

    let full = compile(&gbnf, CG_KIND_GBNF);
    let m2 = Matcher::new(&full);
    m2.feed("w12");
    let allowed = m2.allowed();
    assert!(allowed.contains(&(token("w") as u32)));
    assert!(allowed.contains(&(token("3") as u32)));
    // 0 means no limit.
    o.max_mask_steps = 0;
    let unbounded = try_compile(&gbnf, &o).unwrap_or_else(|e| panic!("{e:?}"));
    let m3 = Matcher::new(&unbounded);
    m3.feed("w12");
    assert_eq!(m3.allowed(), allowed);
}

// ---------------------------------------------------------------------------
// 2. max_compile_ms holds inside the front ends and the compiler.

/// Inputs that take a while to compile, stopped by a 1 ms budget: the call
/// fails with the limit named, and returns long before the work would
/// have finished (seconds of margin: this is not a speed test).
#[test]
fn compile_deadline_is_checked_everywhere() {
    let enum_values: Vec<String> = (0..100_000).map(|i| format!("\"v{i}\"")).collect();
    let required: Vec<String> = (0..1000).map(|i| format!("\"p{i}\"")).collect();
    let cases: Vec<(u32, String)> = vec![
        (
            CG_KIND_JSON_SCHEMA,
            format!("{{\"enum\": [{}]}}", enum_values.join(",")),
        ),
        (
            CG_KIND_JSON_SCHEMA,
            format!(
                "{{\"type\": \"object\", \"required\": [{}], \"properties\": {{{}}}}}",
                required.join(","),
                required
                    .iter()
                    .map(|p| format!("{p}: {{\"type\": \"string\", \"maxLength\": 20}}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        (
            CG_KIND_GBNF,
            format!(
                "root ::= {}",
                (0..100_000)
                    .map(|i| format!("\"w{i}\""))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
        ),
        // Hundreds of thousands of rules: the GBNF parser checks the clock.
        (
            CG_KIND_GBNF,
            (0..300_000)
                .map(|i| format!("r{i} ::= \"x\" r{}\n", i + 1))
                .collect::<String>()
                + "r300000 ::= \"y\"\nroot ::= r0\n",
        ),
        // A DFA that grows exponentially with the count.
        (CG_KIND_REGEX, "[ab]*a[ab]{16}".to_string()),
        // Parser rules whose states each get the edges of thousands of
        // states they can skip to.
        (CG_KIND_REGEX, "(a|b?){3000}c".to_string()),
        (
            CG_KIND_GBNF,
            format!("root ::= {}\n", "(\"a\" | \"b\"?) ".repeat(3000)),
        ),
        // oneOf: every pair of 3,000 overlapping objects is compared.
        (
            CG_KIND_JSON_SCHEMA,
            format!(
                "{{\"oneOf\": [{}]}}",
                (0..3000)
                    .map(|i| format!(
                        "{{\"properties\": {{\"n\": {{\"minimum\": {i}}}}}, \"required\": [\"n\"]}}"
                    ))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
    ];
    for (kind, source) in cases {
        let mut o = options(kind);
        o.max_compile_ms = 1;
        let start = Instant::now();
        let result = try_compile(&source, &o);
        let took = start.elapsed();
        assert_limit(result, &["1 ms", "max_compile_ms"]);
        assert!(
            took < Duration::from_secs(5),
            "{took:?} with max_compile_ms = 1"
        );
    }
}

#[test]
fn automaton_size_is_a_limit() {
    let mut o = options(CG_KIND_REGEX);
    o.max_states = 1000;
    assert_limit(try_compile("[ab]*a[ab]{12}", &o), &["1000", "max_states"]);
}

/// Removing a rule's epsilon edges gives each state the edges of every
/// state it can skip to: a repeated group with an optional part has edges
/// in the square of its states (millions for `(a|b?){3000}`), bounded
/// by `max_states`.
#[test]
fn automaton_edges_are_a_limit() {
    let mut o = options(CG_KIND_REGEX);
    o.max_states = 100_000;
    assert_limit(
        try_compile("(a|b?){3000}c", &o),
        &["1600000 automaton edges", "max_states"],
    );
    let mut o = options(CG_KIND_GBNF);
    o.max_states = 100_000;
    assert_limit(
        try_compile(
            &format!("root ::= {}\n", "(\"a\" | \"b\"?) ".repeat(3000)),
            &o,
        ),
        // GBNF adds a state per byte of its source to max_states.
        &["automaton edges", "per state of max_states"],
    );
}

/// A 1 MB literal (llama.cpp accepts it) compiles on the default
/// `max_states`: its state per byte is paid for by the text. The states
/// a text multiplies beyond its size still count.
#[test]
fn large_literal_compiles_on_default_limits() {
    let text: String = (0..1_000_000u32)
        .map(|i| (b'a' + (i.wrapping_mul(2_654_435_761) >> 28) as u8 % 26) as char)
        .collect();
    let g = compile(&format!("root ::= \"{text}\" [0-9]"), CG_KIND_GBNF);
    let m = Matcher::new(&g);
    m.feed(&text[..999_000]);
    assert!(!m.accepting());
    m.feed(&text[999_000..]);
    m.feed("7");
    assert!(m.accepting());
    let mut o = options(CG_KIND_GBNF);
    o.max_states = 1000;
    assert_limit(
        try_compile("root ::= \"abcdefghij\"{200}", &o),
        &["max_states"],
    );
}

#[test]
fn source_size_is_a_limit() {
    let source = format!("root ::= \"{}\"", "a".repeat(64 << 20));
    assert_limit(try_compile(&source, &options(CG_KIND_GBNF)), &["bytes"]);
}

/// A string language is copied whole into each combination of
/// subschemas: `allOf` or `anyOf` with a `not`, nested k deep around one
/// `format`, holds 2^k copies (ten levels took 2.6 GB within the deadline
/// before the bound). Refused by its size, strict or lenient; a few levels
/// still compile.
#[test]
fn string_language_size_is_a_limit() {
    fn nested(combine: &str, k: u32) -> String {
        if k == 0 {
            return r#"{"type": "string", "format": "iri-reference"}"#.to_string();
        }
        let x = nested(combine, k - 1);
        format!(r#"{{"{combine}": [{x}, {{"not": {x}}}]}}"#)
    }
    drop(compile(&nested("anyOf", 3), CG_KIND_JSON_SCHEMA));
    let mut lenient = options(CG_KIND_JSON_SCHEMA);
    lenient.flags |= CG_JSON_LENIENT;
    for combine in ["allOf", "anyOf"] {
        for o in [&options(CG_KIND_JSON_SCHEMA), &lenient] {
            assert_limit(
                try_compile(&nested(combine, 10), o),
                &["string language", "expression nodes", combine],
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 4. A repeated group of many rules: llama.cpp's verdict and a message
// that says why.

/// llama.cpp (checked at 0c1e570) counts a group as the rule names it
/// mentions for the first time against its 2,000-rule repetition limit:
/// with the rules defined first the grammar is accepted, with them defined
/// after it is refused, by both; cgram's message says how to fix it.
#[test]
fn repeated_group_of_2000_rules() {
    let n = 2000;
    let group = format!(
        "root ::= ({})*\n",
        (0..n)
            .map(|i| format!("r{i}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let rules: String = (0..n).map(|i| format!("r{i} ::= \"w{i}\"\n")).collect();
    let g = compile(&format!("{rules}{group}"), CG_KIND_GBNF);
    let m = Matcher::new(&g);
    assert!(m.accepting());
    m.feed("w5w17w1999");
    assert!(m.accepting());
    assert_ne!(m.try_feed("w2000"), CG_OK);

    match try_compile(&format!("{group}{rules}"), &options(CG_KIND_GBNF)) {
        Ok(_) => panic!("compiled where llama.cpp refuses"),
        Err((code, msg)) => {
            assert_eq!(code, CG_ERR_PARSE, "{msg}");
            assert!(
                msg.contains("limit of 2000") && msg.contains("define the rules"),
                "{msg}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 7. Messages that name what happened.

#[test]
fn min_items_5000_compiles() {
    let g = compile(
        "{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"minItems\": 5000}",
        CG_KIND_JSON_SCHEMA,
    );
    let items = vec!["1"; 5000];
    let m = Matcher::new(&g);
    m.feed(&format!("[{}", items[1..].join(",")));
    assert_ne!(m.try_feed("]"), CG_OK, "4999 items closed");
    m.feed(",1]");
    assert!(m.accepting());
}

#[test]
fn huge_exclusive_minimum() {
    let g = compile(
        "{\"type\": \"integer\", \"exclusiveMinimum\": 1e300}",
        CG_KIND_JSON_SCHEMA,
    );
    let m = Matcher::new(&g);
    m.feed(&format!("1{}", "0".repeat(300)));
    assert!(!m.accepting(), "1e300 itself is not above 1e300");
    m.feed("0");
    assert!(m.accepting());
    let m = Matcher::new(&g);
    assert_ne!(m.try_feed("-5"), CG_OK);
}

/// Deep nesting in every front end, from a thread with a 256 KiB stack:
/// compiled, or refused with a limit naming the nesting; never a crash.
#[test]
fn deep_nesting_on_a_small_stack() {
    let cases: Vec<(u32, String, bool)> = vec![
        // (kind, source, compiles)
        (
            CG_KIND_GBNF,
            format!("root ::= {}\"x\"{}", "(".repeat(200), ")".repeat(200)),
            true,
        ),
        // As deep as llama.cpp goes (it overflows an 8 MiB stack from
        // about 18,700 groups on), in shapes that once were quadratic.
        (
            CG_KIND_GBNF,
            format!(
                "root ::= {}\"x\"{}",
                "(\"a\" | ".repeat(20_000),
                ")".repeat(20_000)
            ),
            true,
        ),
        (
            CG_KIND_GBNF,
            format!(
                "root ::= {}\"x\"+ root?{}",
                "(\"a\" (\"b\" | ".repeat(10_000),
                "))".repeat(10_000)
            ),
            true,
        ),
        (
            CG_KIND_GBNF,
            format!(
                "root ::= {}\"x\"{}",
                "(".repeat(100_000),
                ")".repeat(100_000)
            ),
            false,
        ),
        (
            CG_KIND_REGEX,
            format!("{}x{}", "(".repeat(40_000), ")".repeat(40_000)),
            false,
        ),
        (
            CG_KIND_JSON_SCHEMA,
            format!(
                "{}{{\"type\": \"integer\"}}{}",
                "{\"type\": \"array\", \"items\": ".repeat(60),
                "}".repeat(60)
            ),
            true,
        ),
        (
            CG_KIND_JSON_SCHEMA,
            format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)),
            false,
        ),
    ];
    for (kind, source, compiles) in cases {
        let v = llama3() as usize;
        let (rc, msg) = on_small_stack(256 << 10, move || {
            let o = options(kind);
            let g = unsafe {
                cg_compile(
                    v as *const cg_vocab,
                    source.as_ptr().cast(),
                    source.len(),
                    &o,
                )
            };
            let rc = if g.is_null() {
                cg_last_error_code()
            } else {
                CG_OK
            };
            unsafe { cg_free(g) };
            (rc, last_error())
        });
        if compiles {
            assert_eq!(rc, CG_OK, "{msg}");
        } else {
            assert!(
                rc == CG_ERR_LIMIT || rc == CG_ERR_PARSE,
                "kind {kind}: {rc} {msg}"
            );
            assert!(msg.contains("nest") || msg.contains("deep"), "{msg}");
        }
    }
}

// ---------------------------------------------------------------------------
// 8. Rollback over cg_accept_bytes, and the EOS token in a grammar.

/// `cg_accept_bytes` is one step of the history, however many tokens its
/// text spans: rolling it back restores the exact mask before it.
#[test]
fn rollback_undoes_accept_bytes_as_one_step() {
    let g = compile(
        "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}}}",
        CG_KIND_JSON_SCHEMA,
    );
    let m = Matcher::new(&g);
    m.feed("{\"na");
    let before = m.allowed();
    m.feed("me\": \"a long value with several tokens");
    assert_ne!(m.allowed(), before);
    assert_eq!(unsafe { cg_rollback(m.0, 1) }, CG_OK, "{}", last_error());
    assert_eq!(m.allowed(), before);
    m.feed("me\": \"x\"}");
    assert!(m.accepting());
}

/// A grammar naming an end-of-sequence token: EOS ends the output rather
/// than being matched (as in llama.cpp, where it never reaches the
/// grammar), so the branch through it is dropped and EOS is allowed only
/// where the output may end.
#[test]
fn eos_token_in_a_grammar_ends_the_output() {
    let mut eos = vec![0i32; 8];
    let n = unsafe { cg_vocab_eos_tokens(llama3(), eos.as_mut_ptr(), eos.len()) };
    assert!(n >= 1);
    let e = eos[0];
    let g = compile(
        &format!("root ::= \"a\" <[{e}]> \"b\" | \"c\""),
        CG_KIND_GBNF,
    );
    let m = Matcher::new(&g);
    let allowed = m.allowed();
    assert!(allowed.contains(&(token("c") as u32)));
    assert!(
        !allowed.contains(&(token("a") as u32)),
        "a branch that can never finish"
    );
    assert!(!allowed.contains(&(e as u32)));
    m.feed("c");
    assert!(m.allowed().contains(&(e as u32)));
}

/// Unknown token flag bits are refused, not ignored.
#[test]
fn unknown_token_flags_are_refused() {
    let tokens: [&[u8]; 2] = [b"a", b"b"];
    let ptrs: Vec<*const u8> = tokens.iter().map(|t| t.as_ptr()).collect();
    let lens: Vec<u32> = tokens.iter().map(|t| t.len() as u32).collect();
    let flags = [0u32, 1 << 7];
    let v = unsafe { cg_vocab_new(2, ptrs.as_ptr(), lens.as_ptr(), flags.as_ptr(), null(), 0) };
    assert!(v.is_null());
    assert_eq!(cg_last_error_code(), CG_ERR_INVALID_ARGUMENT);
    assert!(last_error().contains("flag"), "{}", last_error());
}
