//! What cgram's fuzz targets do with an input, in one place: the targets
//! under `fuzz/fuzz_targets/` (cargo fuzz, libFuzzer) and the replay test
//! `tests/fuzz_regressions.rs` (stable `cargo test`) both include this file
//! with `#[path]`, so a reproducer runs the same code in both.
//!
//! Everything goes through the C API (`cgram::ffi::cg_*`), as a C host
//! calls it. A finding is a panic here: any `CG_ERR_INTERNAL` (a panic
//! caught inside cgram), an error code the header does not give for that
//! call, or a broken invariant of the masks:
//!
//! - a token is in the mask iff `cg_accept` takes it (checked on clones,
//!   for a sample of tokens in and out of the mask; all of them on small
//!   vocabularies); a lazy matcher still awaiting its trigger may allow a
//!   token it then refuses (its checks stop after a time budget, as the
//!   header says), so there only "not in the mask => refused" is checked;
//! - no bit past the vocabulary in the last word, nothing written past
//!   `cg_mask_words`; EOS in the mask iff `cg_is_accepting`; a terminated
//!   matcher allows EOS at most;
//! - after a token taken from a non-empty mask, the next mask is not empty
//!   (the token was allowed because a continuation exists, and every byte
//!   is a token of the harness vocabularies);
//! - a refused `cg_accept` / `cg_accept_bytes` changes nothing;
//! - `cg_rollback` restores the exact state of before (mask, accepting,
//!   terminated, triggered), `cg_reset` the initial one, a clone is
//!   identical and independent, `cg_fill_masks` equals `cg_fill_mask`;
//! - forced tokens are the single token of the mask, and are accepted in
//!   order.
//!
//! Compilation uses small limits (`MAX_COMPILE_MS`, `MAX_STATES`) so that
//! no input can legitimately run long: libFuzzer's `-timeout=1` then flags
//! any input over a second.
#![allow(dead_code)]

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use cgram::ffi::*;

#[path = "schema_mutations.rs"]
mod schema_mutations;

/// `cg_compile_options.max_compile_ms` for fuzz inputs.
pub const MAX_COMPILE_MS: u64 = 300;
/// `cg_compile_options.max_states` for fuzz inputs: room for a
/// `date-time` (66,000 states over JSON spellings, for RFC 3339's leap
/// seconds) and a `time` beside it.
pub const MAX_STATES: u64 = 150_000;

/// What a fuzz target does with an input (panics on a finding).
pub type Target = fn(&[u8]);

/// The targets by name, as `fuzz/fuzz_targets/<name>.rs` and the corpus and
/// regression folders name them.
pub const TARGETS: &[(&str, Target)] = &[
    ("gbnf_compile", gbnf_compile),
    ("json_schema_compile", json_schema_compile),
    ("regex_compile", regex_compile),
    ("tokenizer_json", tokenizer_json),
    ("matcher_drive", matcher_drive),
    ("json_schema_deadline", json_schema_deadline),
    ("gguf_vocab", gguf_vocab),
];

// ---------------------------------------------------------------------------
// Results of C calls.

fn last_error() -> String {
    unsafe { CStr::from_ptr(cg_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Checks an `int` result of `func`: a negative code must be one of
/// `allowed` and come with a message from `func`; `CG_ERR_INTERNAL` never.
#[track_caller]
fn rc(func: &str, code: c_int, allowed: &[c_int]) -> c_int {
    if code >= 0 {
        return code;
    }
    let msg = last_error();
    assert_ne!(code, CG_ERR_INTERNAL, "{func}: CG_ERR_INTERNAL: {msg}");
    assert!(
        allowed.contains(&code),
        "{func} returned {code}, not one of {allowed:?}: {msg}"
    );
    assert!(
        msg.starts_with(&format!("{func}: ")),
        "{func} returned {code} with the message {msg:?}"
    );
    assert_eq!(cg_last_error_code(), code, "{func}: cg_last_error_code");
    code
}

/// Checks a pointer result of `func`: NULL must come with one of `allowed`
/// as `cg_last_error_code` and a message from `func`.
#[track_caller]
fn ptr<T>(func: &str, p: *mut T, allowed: &[c_int]) -> Option<*mut T> {
    if !p.is_null() {
        return Some(p);
    }
    let code = cg_last_error_code();
    rc(func, code, allowed);
    None
}

// ---------------------------------------------------------------------------
// Input reading and a seeded generator (deterministic: a reproducer replays
// the same way everywhere).

/// Reads operands from the fuzz input; zeros once it is exhausted.
struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    fn new(data: &'a [u8]) -> Self {
        Input { data, pos: 0 }
    }
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos = start + n;
        &self.data[start..end]
    }
}

/// xorshift64*, seeded from the input.
struct Rng(u64);

impl Rng {
    fn new(data: &[u8]) -> Self {
        // FNV-1a of the input, never 0.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in data {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        Rng(h | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

// ---------------------------------------------------------------------------
// Vocabularies, grammars, triggers.

/// A vocabulary handle with what the checks need to know about it.
pub struct Vocab {
    ptr: *mut cg_vocab,
    /// Vocabulary size.
    n: u32,
    /// End-of-sequence ids, increasing.
    eos: Vec<i32>,
    /// Ids always worth checking: special and empty tokens.
    odd: Vec<i32>,
    /// Every byte is a token and there is an EOS token: any continuation
    /// of the output can be spelt, so a mask after an allowed token is
    /// never empty.
    complete: bool,
}

// The C API: a vocabulary is immutable and may be shared by threads.
unsafe impl Send for Vocab {}
unsafe impl Sync for Vocab {}

impl Drop for Vocab {
    fn drop(&mut self) {
        unsafe { cg_vocab_free(self.ptr) };
    }
}

impl Vocab {
    /// `cg_vocab_new` from `(bytes, flags)` and EOS ids; panics on failure
    /// (the harness vocabularies are valid).
    fn new(tokens: &[(Vec<u8>, u32)], eos: &[i32]) -> Vocab {
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
        assert!(!v.is_null(), "cg_vocab_new: {}", last_error());
        let odd = tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| t.1 & CG_TOKEN_SPECIAL != 0 || t.0.is_empty())
            .map(|(i, _)| i as i32)
            .collect();
        let mut v = Vocab::wrap(v, odd);
        v.complete = !v.eos.is_empty() && (0..=255u8).all(|b| tokens.iter().any(|t| t.0 == [b]));
        v
    }

    /// Takes ownership of `ptr`, checking what the C API says about it.
    fn wrap(ptr: *mut cg_vocab, odd: Vec<i32>) -> Vocab {
        let n = unsafe { cg_vocab_size(ptr) };
        assert!(n > 0, "a vocabulary of 0 tokens");
        let count = rc(
            "cg_vocab_eos_tokens",
            unsafe { cg_vocab_eos_tokens(ptr, null_mut(), 0) },
            &[],
        );
        let mut eos = vec![-1i32; count as usize + 1];
        let again = rc(
            "cg_vocab_eos_tokens",
            unsafe { cg_vocab_eos_tokens(ptr, eos.as_mut_ptr(), count as usize) },
            &[],
        );
        assert_eq!(again, count);
        assert_eq!(
            eos[count as usize], -1,
            "cg_vocab_eos_tokens wrote past cap"
        );
        eos.truncate(count as usize);
        assert!(
            eos.windows(2).all(|w| w[0] < w[1]),
            "EOS ids not increasing: {eos:?}"
        );
        assert!(
            eos.iter().all(|&e| e >= 0 && (e as u32) < n),
            "EOS ids out of range: {eos:?} (size {n})"
        );
        Vocab {
            ptr,
            n,
            eos,
            odd,
            complete: false,
        }
    }

    /// The vocabulary of the compile targets: the 256 single bytes, EOS
    /// `<|eos|>` (256, special), `<s>` (257, special), an empty token (258),
    /// and a few multi-byte tokens, some ending inside a UTF-8 character.
    pub fn bytes() -> Vocab {
        let mut tokens: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], 0)).collect();
        tokens.push((b"<|eos|>".to_vec(), CG_TOKEN_SPECIAL));
        tokens.push((b"<s>".to_vec(), CG_TOKEN_SPECIAL));
        tokens.push((Vec::new(), 0));
        for t in [
            &b"ab"[..],
            b"abc",
            b"root",
            b"::=",
            b" ",
            b"  ",
            b"\n",
            b"\"",
            b"{\"",
            b"\":",
            b"\",",
            b"\": \"",
            b"true",
            b"null",
            b"12",
            b"0.",
            b"a\n",
            "é".as_bytes(),
            "€".as_bytes(),
            b"\xe2\x82",
            "😀".as_bytes(),
            b"\xf0\x9f",
            b"<s>",
            b"<tool_call>",
        ] {
            tokens.push((t.to_vec(), 0));
        }
        Vocab::new(&tokens, &[256])
    }

    /// The vocabulary of `matcher_drive`: `fuzz/data/vocab.txt`, 2,119
    /// tokens cut from Llama 3 (see `fuzz/tools/make_seeds.py`).
    pub fn llama3_small() -> Vocab {
        let mut tokens = Vec::new();
        let mut eos = Vec::new();
        for line in include_str!("data/vocab.txt").lines() {
            let (kind, hex) = line.split_once(' ').expect("vocab.txt: kind hex");
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("vocab.txt: hex"))
                .collect();
            let flags = match kind {
                "n" => 0,
                "s" => CG_TOKEN_SPECIAL,
                "e" => {
                    eos.push(tokens.len() as i32);
                    CG_TOKEN_SPECIAL
                }
                _ => panic!("vocab.txt: kind {kind}"),
            };
            tokens.push((bytes, flags));
        }
        Vocab::new(&tokens, &eos)
    }

    fn is_eos(&self, t: i32) -> bool {
        self.eos.binary_search(&t).is_ok()
    }

    /// The id of the token whose bytes are `bytes` (the first one).
    fn id(&self, bytes: &[u8]) -> i32 {
        (0..self.n as i32)
            .find(|&t| {
                let mut len = 0usize;
                let p = unsafe { cg_vocab_token_bytes(self.ptr, t, &mut len) };
                !p.is_null() && unsafe { std::slice::from_raw_parts(p, len) } == bytes
            })
            .unwrap_or_else(|| panic!("no token {:?}", String::from_utf8_lossy(bytes)))
    }
}

/// A compiled grammar (shared, immutable).
pub struct Grammar(*mut cg_grammar);

unsafe impl Send for Grammar {}
unsafe impl Sync for Grammar {}

impl Drop for Grammar {
    fn drop(&mut self) {
        unsafe { cg_free(self.0) };
    }
}

/// Compile options with the fuzzing limits.
fn options(kind: u32, flags: u32, json_max_whitespace: u32) -> cg_compile_options {
    let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
    unsafe {
        cg_compile_options_init_size(o.as_mut_ptr(), std::mem::size_of::<cg_compile_options>())
    };
    let mut o = unsafe { o.assume_init() };
    o.kind = kind;
    o.flags = flags;
    o.json_max_whitespace = json_max_whitespace;
    o.max_compile_ms = compile_limits((MAX_COMPILE_MS, COMPILE_SLACK_MS)).0;
    o.max_states = MAX_STATES;
    o
}

/// The CPU time of the calling thread (not wall time: a loaded machine
/// does not make it grow).
pub fn thread_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0, "clock_gettime");
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// How far past `max_compile_ms` a compilation may go (in the calling
/// thread's CPU time, which cannot exceed the wall time cgram's deadline
/// is measured in): the time between two deadline checks, in the
/// instrumented fuzz build. 200 ms was too tight on a loaded 2-core
/// machine: gbnf_compile/timeout-literal-400-chars-repeat-2-1000 takes
/// 360-410 ms alone and 501 ms under load. With 400 ms, a compile still
/// ends well inside libFuzzer's 1 s timeout, the issue's bar.
pub const COMPILE_SLACK_MS: u64 = 400;

thread_local! {
    /// `(max_compile_ms, slack)` for the compilations of fuzz inputs on
    /// this thread, when [`with_compile_limits`] sets them; otherwise each
    /// target's own ([`MAX_COMPILE_MS`] and [`COMPILE_SLACK_MS`] but for
    /// `json_schema_deadline`).
    static COMPILE_LIMITS: std::cell::Cell<Option<(u64, u64)>> =
        const { std::cell::Cell::new(None) };
}

/// Runs `f` with other compile limits on this thread: the regression test
/// replays reproducers in an uninstrumented build, several times faster,
/// with a tighter deadline and slack so that a deadline that is not
/// checked still shows.
pub fn with_compile_limits<T>(max_compile_ms: u64, slack_ms: u64, f: impl FnOnce() -> T) -> T {
    let old = COMPILE_LIMITS.with(|c| c.replace(Some((max_compile_ms, slack_ms))));
    let r = f();
    COMPILE_LIMITS.with(|c| c.set(old));
    r
}

/// The compile limits on this thread: those of [`with_compile_limits`],
/// else `default`.
fn compile_limits(default: (u64, u64)) -> (u64, u64) {
    COMPILE_LIMITS.with(|c| c.get()).unwrap_or(default)
}

/// `cg_compile`; `None` for the errors the header gives (anything but
/// `CG_ERR_INTERNAL`). A compilation that runs past `max_compile_ms` (plus
/// the slack, [`COMPILE_SLACK_MS`] by default) is a finding, failed or not.
fn compile(vocab: &Vocab, source: &[u8], o: &cg_compile_options) -> Option<Grammar> {
    compile_with_slack(
        vocab,
        source,
        o,
        compile_limits((MAX_COMPILE_MS, COMPILE_SLACK_MS)).1,
    )
}

/// [`compile`], with `slack` past `max_compile_ms` allowed.
fn compile_with_slack(
    vocab: &Vocab,
    source: &[u8],
    o: &cg_compile_options,
    slack: u64,
) -> Option<Grammar> {
    let start = thread_cpu_time();
    let g = unsafe { cg_compile(vocab.ptr, source.as_ptr().cast(), source.len(), o) };
    let took = thread_cpu_time() - start;
    if o.max_compile_ms > 0 {
        assert!(
            took.as_millis() as u64 <= o.max_compile_ms + slack,
            "cg_compile ran {took:?} (thread CPU time) with max_compile_ms = {} ({})",
            o.max_compile_ms,
            if g.is_null() {
                last_error()
            } else {
                "it compiled".to_string()
            }
        );
    }
    let g = ptr(
        "cg_compile",
        g,
        &[
            CG_ERR_INVALID_ARGUMENT,
            CG_ERR_PARSE,
            CG_ERR_UNSUPPORTED,
            CG_ERR_LIMIT,
        ],
    );
    // A source that is not UTF-8 is refused as such, and only such a source
    // (cgram also gives CG_ERR_INVALID_ARGUMENT for a grammar that matches
    // no string at all, or whose start rule does not exist).
    let says_utf8 = g.is_none() && last_error().contains("is not valid UTF-8");
    if std::str::from_utf8(source).is_err() {
        assert!(
            g.is_none() && cg_last_error_code() == CG_ERR_INVALID_ARGUMENT && says_utf8,
            "cg_compile on a source that is not UTF-8: {}",
            last_error()
        );
    } else if g.is_none() && cg_last_error_code() == CG_ERR_INVALID_ARGUMENT {
        assert!(
            !says_utf8,
            "cg_compile: a UTF-8 source refused as not UTF-8: {}",
            last_error()
        );
    }
    let g = Grammar(g?);
    assert_eq!(unsafe { cg_grammar_vocab_size(g.0) }, vocab.n);
    assert_eq!(unsafe { cg_mask_words(g.0) }, vocab.n.div_ceil(32) as usize);
    Some(g)
}

/// One trigger of a lazy grammar, owned.
enum Trigger {
    Pattern(CString),
    Word(CString),
    Token(i32),
}

/// Compiled triggers (shared, immutable).
pub struct Triggers(*mut cg_triggers);

unsafe impl Send for Triggers {}
unsafe impl Sync for Triggers {}

impl Drop for Triggers {
    fn drop(&mut self) {
        unsafe { cg_triggers_free(self.0) };
    }
}

fn triggers(vocab: &Vocab, list: &[Trigger]) -> Option<Triggers> {
    let raw: Vec<cg_trigger> = list
        .iter()
        .map(|t| match t {
            Trigger::Pattern(s) => cg_trigger {
                kind: CG_TRIGGER_PATTERN,
                text: s.as_ptr(),
                token: 0,
            },
            Trigger::Word(s) => cg_trigger {
                kind: CG_TRIGGER_WORD,
                text: s.as_ptr(),
                token: 0,
            },
            Trigger::Token(t) => cg_trigger {
                kind: CG_TRIGGER_TOKEN,
                text: null::<c_char>(),
                token: *t,
            },
        })
        .collect();
    let t = unsafe { cg_triggers_new(vocab.ptr, raw.as_ptr(), raw.len()) };
    ptr(
        "cg_triggers_new",
        t,
        &[
            CG_ERR_INVALID_ARGUMENT,
            CG_ERR_PARSE,
            CG_ERR_UNSUPPORTED,
            CG_ERR_LIMIT,
        ],
    )
    .map(Triggers)
}

// ---------------------------------------------------------------------------
// A matcher under test.

/// What a matcher shows of its state through the C API.
#[derive(Clone, PartialEq, Eq, Debug)]
struct State {
    mask: Vec<u32>,
    accepting: bool,
    terminated: bool,
    /// `cg_is_triggered`: fired, index, start.
    triggered: (bool, i32, usize),
}

/// One step the driver took, for rollback.
enum Step {
    /// A token, and the state before it.
    Token(State),
    /// Text through `cg_accept_bytes` (not rolled back over: the header
    /// says not to).
    Bytes,
}

/// The driver gave up on this input (a limit reported by a mask).
struct Stop;

type Go<T> = Result<T, Stop>;

/// A matcher freed on drop.
struct Owned(*mut cg_matcher);

impl Drop for Owned {
    fn drop(&mut self) {
        unsafe { cg_matcher_free(self.0) };
    }
}

/// A matcher and what the driver knows of its history.
struct Driver<'a> {
    m: *mut cg_matcher,
    vocab: &'a Vocab,
    words: usize,
    lazy: bool,
    steps: Vec<Step>,
    initial: State,
    /// EOS was accepted (the matcher takes nothing more).
    ended: bool,
    /// The last step took a token from a non-empty mask: the next mask
    /// must not be empty.
    expect_more: bool,
    rng: Rng,
    /// Tokens in / out of the mask checked against `cg_accept` per mask
    /// (0 = all of the vocabulary).
    sample: usize,
    /// Steps left before the driver stops (bounds the work of an input).
    budget: usize,
}

impl Drop for Driver<'_> {
    fn drop(&mut self) {
        unsafe { cg_matcher_free(self.m) };
    }
}

const ACCEPT_CODES: &[c_int] = &[CG_ERR_TOKEN_REJECTED, CG_ERR_TERMINATED];

impl<'a> Driver<'a> {
    /// A driver of `m` (owned from now on); `None` if its first mask hits a
    /// limit.
    fn new(
        m: *mut cg_matcher,
        vocab: &'a Vocab,
        lazy: bool,
        rng: Rng,
        sample: usize,
        budget: usize,
    ) -> Option<Driver<'a>> {
        let mut d = Driver {
            m,
            vocab,
            words: vocab.n.div_ceil(32) as usize,
            lazy,
            steps: Vec::new(),
            initial: State {
                mask: Vec::new(),
                accepting: false,
                terminated: false,
                triggered: (false, 0, 0),
            },
            ended: false,
            expect_more: false,
            rng,
            sample,
            budget,
        };
        d.initial = d.state().ok()?;
        Some(d)
    }

    fn eager(g: &Grammar, vocab: &'a Vocab, rng: Rng, sample: usize) -> Option<Driver<'a>> {
        let m = unsafe { cg_matcher_new(g.0) };
        let m = ptr("cg_matcher_new", m, &[]).unwrap();
        Driver::new(m, vocab, false, rng, sample, 64)
    }

    fn lazy(
        g: &Grammar,
        t: &Triggers,
        vocab: &'a Vocab,
        rng: Rng,
        sample: usize,
    ) -> Option<Driver<'a>> {
        let m = unsafe { cg_matcher_new_lazy(g.0, t.0) };
        let m = ptr("cg_matcher_new_lazy", m, &[]).unwrap();
        Driver::new(m, vocab, true, rng, sample, 64)
    }

    /// `cg_fill_mask` of `m` with the checks that need no other call.
    fn fill_of(&self, m: *mut cg_matcher) -> Go<Vec<u32>> {
        const CANARY: u32 = 0xA5A5_5A5A;
        let mut buf = vec![CANARY; self.words + 1];
        let code = unsafe { cg_fill_mask(m, buf.as_mut_ptr(), buf.len()) };
        // A limit on the work of one mask may exist; nothing else may fail.
        let code = rc("cg_fill_mask", code, &[CG_ERR_LIMIT]);
        assert_eq!(buf[self.words], CANARY, "cg_fill_mask wrote past its words");
        buf.truncate(self.words);
        if code == CG_ERR_LIMIT {
            assert!(buf.iter().all(|&w| w == 0), "failed mask not zeroed");
            return Err(Stop);
        }
        let n = self.vocab.n as usize;
        if !n.is_multiple_of(32) {
            let last = buf[self.words - 1];
            assert_eq!(
                last >> (n % 32),
                0,
                "bits past the vocabulary of {n} tokens: last word {last:#x}"
            );
        }
        Ok(buf)
    }

    fn state_of(&self, m: *mut cg_matcher) -> Go<State> {
        let mask = self.fill_of(m)?;
        let accepting = rc("cg_is_accepting", unsafe { cg_is_accepting(m) }, &[]);
        let terminated = rc("cg_is_terminated", unsafe { cg_is_terminated(m) }, &[]);
        assert!(accepting <= 1 && terminated <= 1);
        let (mut index, mut start) = (-2i32, usize::MAX);
        let fired = rc(
            "cg_is_triggered",
            unsafe { cg_is_triggered(m, &mut index, &mut start) },
            &[],
        );
        assert!(fired <= 1);
        let triggered = if fired == 1 {
            (true, index, start)
        } else {
            (false, 0, 0)
        };
        if !self.lazy {
            assert_eq!(
                triggered,
                (true, -1, 0),
                "an eager matcher's cg_is_triggered"
            );
        }
        let s = State {
            mask,
            accepting: accepting == 1,
            terminated: terminated == 1,
            triggered,
        };
        for &e in &self.vocab.eos {
            assert_eq!(
                bit(&s.mask, e),
                s.accepting,
                "EOS {e} in the mask: {}, cg_is_accepting: {}",
                bit(&s.mask, e),
                s.accepting
            );
        }
        if s.terminated {
            let eos_allowed = self.vocab.eos.iter().filter(|&&e| bit(&s.mask, e)).count();
            assert_eq!(
                count(&s.mask),
                eos_allowed,
                "a terminated matcher allows a non-EOS token"
            );
        }
        Ok(s)
    }

    fn state(&mut self) -> Go<State> {
        let s = self.state_of(self.m)?;
        if self.ended {
            assert!(
                s.terminated && !s.accepting && s.mask.iter().all(|&w| w == 0),
                "after EOS: {s:?}"
            );
        }
        if self.expect_more {
            assert!(
                s.mask.iter().any(|&w| w != 0),
                "empty mask after a token the previous mask allowed"
            );
            self.expect_more = false;
        }
        Ok(s)
    }

    fn clone_matcher(&self) -> Owned {
        let c = unsafe { cg_matcher_clone(self.m) };
        Owned(ptr("cg_matcher_clone", c, &[]).unwrap())
    }

    /// Whether `cg_accept(t)` on a clone succeeds (the matcher itself does
    /// not move).
    fn takes(&self, t: i32) -> bool {
        let c = self.clone_matcher();
        let code = rc("cg_accept", unsafe { cg_accept(c.0, t) }, ACCEPT_CODES);
        if self.ended {
            assert_eq!(code, CG_ERR_TERMINATED, "accept after EOS");
        }
        code == CG_OK
    }

    /// Checks the mask of `s` against `cg_accept` on clones.
    fn check_mask(&mut self, s: &State) {
        let n = self.vocab.n as usize;
        let awaiting = self.lazy && !s.triggered.0;
        let check = |d: &mut Self, t: i32| {
            let allowed = bit(&s.mask, t);
            if awaiting && allowed {
                return;
            }
            let took = d.takes(t);
            assert_eq!(
                allowed, took,
                "token {t}: in the mask {allowed}, cg_accept took it {took} (lazy {}, triggered {})",
                d.lazy, s.triggered.0
            );
        };
        if self.sample == 0 {
            for t in 0..n as i32 {
                check(self, t);
            }
            return;
        }
        let allowed = count(&s.mask);
        for _ in 0..self.sample.min(allowed) {
            let t = nth(&s.mask, self.rng.below(allowed));
            check(self, t);
        }
        let mut out = 0;
        for _ in 0..4 * self.sample {
            if out == self.sample || allowed == n {
                break;
            }
            let t = self.rng.below(n) as i32;
            if !bit(&s.mask, t) {
                check(self, t);
                out += 1;
            }
        }
        let odd = self.vocab.odd.clone();
        for t in odd.into_iter().chain(self.vocab.eos.clone()) {
            check(self, t);
        }
    }

    /// The current state, its mask checked.
    fn look(&mut self) -> Go<State> {
        let s = self.state()?;
        self.check_mask(&s);
        Ok(s)
    }

    /// `cg_accept(t)`, expecting `ok`; records the step.
    fn accept(&mut self, t: i32, before: State, nonempty: bool) {
        let awaiting = self.lazy && !before.triggered.0;
        let code = rc("cg_accept", unsafe { cg_accept(self.m, t) }, ACCEPT_CODES);
        let allowed = bit(&before.mask, t);
        if code != CG_OK {
            assert!(
                !allowed || awaiting,
                "cg_accept({t}) refused a token of the mask: {}",
                last_error()
            );
            return;
        }
        assert!(allowed, "cg_accept({t}) took a token not in the mask");
        if self.vocab.is_eos(t) {
            self.ended = true;
        } else if nonempty && self.vocab.complete {
            self.expect_more = true;
        }
        self.steps.push(Step::Token(before));
    }

    /// A token of the mask (`k`-th, wrapping); `None` if the mask is empty.
    fn pick(&mut self, s: &State, k: usize, prefer_text: bool) -> Option<i32> {
        let c = count(&s.mask);
        if c == 0 {
            return None;
        }
        let t = nth(&s.mask, k % c);
        if prefer_text {
            // The next ones (wrapping) until a token that is not EOS.
            for i in 0..=self.vocab.eos.len().min(c - 1) {
                let t = nth(&s.mask, (k + i) % c);
                if !self.vocab.is_eos(t) {
                    return Some(t);
                }
            }
        }
        Some(t)
    }

    /// Up to `n` tokens of the mask, chosen at random, each mask checked.
    fn walk(&mut self, n: usize) -> Go<()> {
        for _ in 0..n {
            if self.budget == 0 {
                return Err(Stop);
            }
            self.budget -= 1;
            let s = self.look()?;
            let k = self.rng.next() as usize;
            // EOS now and then, so outputs end.
            let prefer_text = self.rng.below(8) != 0;
            let Some(t) = self.pick(&s, k, prefer_text) else {
                return Ok(());
            };
            self.accept(t, s, true);
            if self.ended {
                return Ok(());
            }
        }
        Ok(())
    }

    /// `cg_rollback` of `n` token steps: the state of before them.
    fn rollback(&mut self, n: usize) -> Go<()> {
        let tail = self
            .steps
            .iter()
            .rev()
            .take_while(|s| matches!(s, Step::Token(_)))
            .count();
        let n = n % (tail + 1);
        let code = unsafe { cg_rollback(self.m, n as u32) };
        rc("cg_rollback", code, &[]);
        if n == 0 {
            return Ok(());
        }
        let at = self.steps.len() - n;
        let Step::Token(before) = &self.steps[at] else {
            unreachable!("only token steps are rolled back")
        };
        let before = before.clone();
        self.steps.truncate(at);
        self.ended = false;
        self.expect_more = false;
        let now = self.state()?;
        assert_eq!(now, before, "cg_rollback({n}) did not restore the state");
        Ok(())
    }

    /// Rolling back more than was accepted fails and changes nothing.
    fn rollback_too_far(&mut self) -> Go<()> {
        let before = self.state()?;
        let n = self.steps.len() as u32 + 1;
        let code = unsafe { cg_rollback(self.m, n) };
        assert_eq!(
            rc("cg_rollback", code, &[CG_ERR_INVALID_ARGUMENT]),
            CG_ERR_INVALID_ARGUMENT,
            "cg_rollback past the history"
        );
        assert_eq!(
            self.state()?,
            before,
            "a failed cg_rollback changed the state"
        );
        Ok(())
    }

    fn reset(&mut self) -> Go<()> {
        unsafe { cg_reset(self.m) };
        self.steps.clear();
        self.ended = false;
        self.expect_more = false;
        let s = self.state()?;
        assert_eq!(s, self.initial, "cg_reset: not the initial state");
        Ok(())
    }

    /// A clone is identical; advancing it leaves the original alone; with
    /// `swap` the driver goes on with the clone.
    fn clone_check(&mut self, advance: bool, swap: bool) -> Go<()> {
        let before = self.state()?;
        let mut c = self.clone_matcher();
        let cs = self.state_of(c.0)?;
        assert_eq!(cs, before, "a clone differs from its original");
        if advance && count(&cs.mask) > 0 {
            let t = nth(&cs.mask, 0);
            let code = unsafe { cg_accept(c.0, t) };
            rc("cg_accept", code, ACCEPT_CODES);
            let after = self.state()?;
            assert_eq!(after, before, "accepting on a clone changed the original");
        }
        if swap && !advance {
            // Go on with the clone; the original goes with `c`.
            std::mem::swap(&mut self.m, &mut c.0);
        }
        Ok(())
    }

    /// `cg_fill_masks` over the matcher and a clone equals their masks.
    fn batch(&mut self, threads: u32) -> Go<()> {
        let before = self.state()?;
        let c = self.clone_matcher();
        let ms = [self.m, c.0];
        let mut masks = vec![0xFFFF_FFFFu32; 2 * self.words];
        let code =
            unsafe { cg_fill_masks(ms.as_ptr(), 2, masks.as_mut_ptr(), self.words, threads) };
        drop(c);
        if rc("cg_fill_masks", code, &[CG_ERR_LIMIT]) == CG_ERR_LIMIT {
            return Err(Stop);
        }
        assert_eq!(masks[..self.words], before.mask[..], "cg_fill_masks[0]");
        assert_eq!(masks[self.words..], before.mask[..], "cg_fill_masks[1]");
        Ok(())
    }

    /// Forced tokens: the single token of the mask, accepted in order.
    fn forced(&mut self, cap: usize) -> Go<()> {
        let s = self.state()?;
        let mut out = vec![i32::MIN; cap + 1];
        let code = unsafe { cg_forced_tokens(self.m, out.as_mut_ptr(), cap) };
        let n = rc("cg_forced_tokens", code, &[CG_ERR_LIMIT]);
        if n == CG_ERR_LIMIT {
            return Err(Stop);
        }
        let n = n as usize;
        assert!(n <= cap, "{n} forced tokens for cap {cap}");
        assert_eq!(out[cap], i32::MIN, "cg_forced_tokens wrote past cap");
        assert_eq!(self.state()?, s, "cg_forced_tokens moved the matcher");
        if n == 0 {
            return Ok(());
        }
        assert!(!self.lazy || s.triggered.0, "forced tokens while awaiting");
        assert!(!s.accepting, "forced tokens while accepting");
        assert!(
            count(&s.mask) == 1 && bit(&s.mask, out[0]),
            "forced token {} is not the mask's only token",
            out[0]
        );
        let c = self.clone_matcher();
        for &t in &out[..n] {
            let code = unsafe { cg_accept(c.0, t) };
            assert_eq!(code, CG_OK, "forced token {t} refused: {}", last_error());
        }
        Ok(())
    }

    /// `cg_accept_bytes`: a refusal changes nothing.
    fn accept_bytes(&mut self, bytes: &[u8]) -> Go<()> {
        let before = self.state()?;
        let code = unsafe { cg_accept_bytes(self.m, bytes.as_ptr(), bytes.len()) };
        if rc("cg_accept_bytes", code, ACCEPT_CODES) == CG_OK {
            assert!(!self.ended, "cg_accept_bytes after EOS");
            self.steps.push(Step::Bytes);
        } else {
            assert_eq!(
                self.state()?,
                before,
                "a refused cg_accept_bytes changed the state"
            );
        }
        Ok(())
    }

    /// Each EOS token is taken exactly when the matcher is accepting.
    fn eos(&mut self) -> Go<()> {
        let s = self.state()?;
        for e in self.vocab.eos.clone() {
            assert_eq!(self.takes(e), s.accepting, "EOS {e} vs cg_is_accepting");
        }
        Ok(())
    }

    /// Runs the operations of `input` (see [`matcher_drive`]).
    fn run(&mut self, input: &mut Input) -> Go<()> {
        let mut ops = 0;
        while !input.done() && ops < 64 {
            ops += 1;
            match input.u8() % 12 {
                0 => {
                    self.look()?;
                }
                1 => {
                    let k = input.u16() as usize;
                    let s = self.look()?;
                    if let Some(t) = self.pick(&s, k, false) {
                        self.accept(t, s, true);
                    }
                }
                2 => {
                    let t = (input.u16() as u32 % self.vocab.n) as i32;
                    let s = self.state()?;
                    let nonempty = s.mask.iter().any(|&w| w != 0);
                    self.accept(t, s, nonempty);
                }
                3 => {
                    let n = input.u8() as usize % 16;
                    let bytes = input.bytes(n).to_vec();
                    self.accept_bytes(&bytes)?;
                }
                4 => {
                    let n = input.u8() as usize;
                    self.rollback(n)?;
                }
                5 => {
                    let b = input.u8();
                    self.clone_check(b & 1 != 0, b & 2 != 0)?;
                }
                6 => self.reset()?,
                7 => {
                    let cap = input.u8() as usize % 8 + 1;
                    self.forced(cap)?;
                }
                8 => {
                    let threads = input.u8() as u32 % 3;
                    self.batch(threads)?;
                }
                9 => self.eos()?,
                10 => {
                    let n = input.u8() as usize % 32;
                    self.walk(n)?;
                }
                _ => self.rollback_too_far()?,
            }
        }
        Ok(())
    }
}

fn bit(mask: &[u32], t: i32) -> bool {
    mask[t as usize / 32] >> (t % 32) & 1 == 1
}

/// How many tokens the mask allows.
fn count(mask: &[u32]) -> usize {
    mask.iter().map(|w| w.count_ones() as usize).sum()
}

/// The `k`-th token the mask allows (`k` < [`count`]).
fn nth(mask: &[u32], mut k: usize) -> i32 {
    for (w, &bits) in mask.iter().enumerate() {
        let c = bits.count_ones() as usize;
        if k < c {
            let mut b = bits;
            for _ in 0..k {
                b &= b - 1;
            }
            return (w * 32) as i32 + b.trailing_zeros() as i32;
        }
        k -= c;
    }
    panic!("nth past the mask");
}

/// What the compile targets do with a grammar that compiled: the first
/// mask checked against every token, a short random walk with sampled
/// checks, forced tokens, rollback to the start and a reset.
fn exercise(g: &Grammar, vocab: &Vocab, data: &[u8]) {
    let Some(mut d) = Driver::eager(g, vocab, Rng::new(data), 0) else {
        return;
    };
    let _ = exercise_driver(&mut d);
}

fn exercise_driver(d: &mut Driver) -> Go<()> {
    d.look()?;
    d.sample = 4;
    d.walk(6)?;
    d.forced(4)?;
    d.rollback(3)?;
    d.clone_check(true, false)?;
    d.reset()
}

// ---------------------------------------------------------------------------
// The targets.

/// Pays once per process what the first compilations pay (Unicode tables,
/// format automata, lazily built statics), so that the first input's time
/// is its own: the fuzz targets' init, and the replay test before timing.
pub fn warm_up() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let vocab = Vocab::bytes();
        let schema = br#"{"type": "object", "properties": {
            "a": {"type": "string", "format": "email"},
            "b": {"type": "string", "pattern": "^\\p{L}+[0-9]{2,4}$", "minLength": 3},
            "c": {"type": "number", "minimum": 0.5, "multipleOf": 0.25},
            "d": {"enum": ["x", "y", 1, null]},
            "e": {"type": "string", "format": "date-time"}},
            "required": ["a"]}"#;
        let sources: [(&[u8], u32); 4] = [
            (schema, CG_KIND_JSON_SCHEMA),
            (
                br#"root ::= [a-z]+ ("," [0-9]{1,3})* [\u00e0-\U0001F600]?"#,
                CG_KIND_GBNF,
            ),
            (br"\p{L}{2,5}(\s\w+)*", CG_KIND_REGEX),
            (b"", CG_KIND_ANY_JSON),
        ];
        for (src, kind) in sources {
            let mut o = options(kind, 0, 0);
            o.max_compile_ms = 0;
            compile(&vocab, src, &o).unwrap_or_else(|| panic!("warm-up grammar: {}", last_error()));
        }
    });
}

/// `gbnf_compile`: the input is GBNF text (start rule `root`), compiled on
/// [`Vocab::bytes`]; an odd-length input also allows left recursion (the
/// options come from the length so that inputs stay plain grammar files).
pub fn gbnf_compile(data: &[u8]) {
    let vocab = Vocab::bytes();
    let flags = if data.len() % 2 == 1 {
        CG_GBNF_ALLOW_LEFT_RECURSION
    } else {
        0
    };
    let o = options(CG_KIND_GBNF, flags, 0);
    if let Some(g) = compile(&vocab, data, &o) {
        exercise(&g, &vocab, data);
    }
}

/// `json_schema_compile`: the input is a JSON Schema, compiled on
/// [`Vocab::bytes`]; the input's length modulo 128 picks the options:
/// bit 0 `CG_JSON_COMPACT`, bit 1 `CG_JSON_NO_EXTRA_PROPERTIES`, bit 2
/// `json_max_whitespace` = 2, bit 3 `CG_JSON_ORDERED_PROPERTIES`, bit 4
/// `CG_JSON_STRICT_INTEGERS`, bit 5 `CG_JSON_LENIENT`, bit 6 `json_indent`
/// = 2 (without bits 0 and 2, which it excludes).
pub fn json_schema_compile(data: &[u8]) {
    let vocab = Vocab::bytes();
    let k = data.len() % 128;
    let mut flags = 0;
    for (bit, flag) in [
        (1, CG_JSON_COMPACT),
        (2, CG_JSON_NO_EXTRA_PROPERTIES),
        (8, CG_JSON_ORDERED_PROPERTIES),
        (16, CG_JSON_STRICT_INTEGERS),
        (32, CG_JSON_LENIENT),
    ] {
        if k & bit != 0 {
            flags |= flag;
        }
    }
    let ws = if k & 4 != 0 { 2 } else { 0 };
    let mut o = options(CG_KIND_JSON_SCHEMA, flags, ws);
    if k & 64 != 0 && k & 5 == 0 {
        o.json_indent = 2;
    }
    if let Some(g) = compile(&vocab, data, &o) {
        exercise(&g, &vocab, data);
    }
}

/// `json_schema_deadline`: a schema edited by a recipe of structure-aware
/// mutations (`fuzz/schema_mutations.rs`), compiled on [`Vocab::bytes`]
/// with the library's default options (its 10 s deadline, its state
/// limit), lenient when the recipe's flag byte says so. A compile that
/// takes more than 1.5 times its deadline, failed or not, is a finding:
/// some loop of the front end does not check it, or grows without a bound.
pub fn json_schema_deadline(data: &[u8]) {
    let Some((source, flag_byte)) = mutated_schema(data) else {
        return;
    };
    let vocab = Vocab::bytes();
    let default_ms = cgram::limits::DEFAULT_MAX_COMPILE_MS;
    let (max_ms, slack) = compile_limits((default_ms, default_ms / 2));
    let mut o = options(CG_KIND_JSON_SCHEMA, 0, 0);
    o.max_compile_ms = max_ms;
    o.max_states = cgram::limits::DEFAULT_MAX_STATES as u64;
    if flag_byte & 1 != 0 {
        o.flags |= CG_JSON_LENIENT;
    }
    if flag_byte & 2 != 0 {
        o.flags |= CG_JSON_STRICT_INTEGERS;
    }
    drop(compile_with_slack(&vocab, source.as_bytes(), &o, slack));
}

/// The schema a `json_schema_deadline` input compiles, and its recipe's
/// flag byte (`None` when the input's schema is not JSON).
pub fn mutated_schema(data: &[u8]) -> Option<(String, u8)> {
    let (text, recipe) = schema_mutations::split(data);
    let (schema, flag_byte) = schema_mutations::mutate(text, recipe)?;
    Some((schema.to_string(), flag_byte))
}

/// `regex_compile`: the input is an ECMA-262 pattern, compiled as
/// `CG_KIND_REGEX` on [`Vocab::bytes`]; the same text is also compiled as a
/// lazy trigger pattern (`std::regex` dialect), and when it compiles a lazy
/// matcher of "any text" with it is walked.
pub fn regex_compile(data: &[u8]) {
    let vocab = Vocab::bytes();
    let o = options(CG_KIND_REGEX, 0, 0);
    if let Some(g) = compile(&vocab, data, &o) {
        exercise(&g, &vocab, data);
    }
    let Ok(text) = CString::new(data) else {
        return;
    };
    let Some(t) = triggers(&vocab, &[Trigger::Pattern(text)]) else {
        return;
    };
    let any = b"root ::= [^\\x00]*";
    let g = compile(&vocab, any, &options(CG_KIND_GBNF, 0, 0)).expect("any-text grammar");
    let Some(mut d) = Driver::lazy(&g, &t, &vocab, Rng::new(data), 0) else {
        return;
    };
    let _ = (|| -> Go<()> {
        d.look()?;
        d.sample = 4;
        d.walk(12)?;
        d.rollback(6)?;
        d.reset()
    })();
}

/// Removes the `cgram-fuzz-PID-N` folders of processes that are gone:
/// each fuzzing process (and libFuzzer starts many) writes its inputs to
/// its own folder, which nothing else removes.
fn remove_folders_of_dead_processes(tmp: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("cgram-fuzz-")) else {
            continue;
        };
        let Some(pid) = rest.split('-').next() else {
            continue;
        };
        if !std::path::Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A private folder per fuzzing thread for the files a target writes.
fn private_dir() -> PathBuf {
    thread_local! {
        static DIR: PathBuf = {
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = std::env::temp_dir();
            remove_folders_of_dead_processes(&tmp);
            let d = tmp.join(format!("cgram-fuzz-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&d).expect("temp dir");
            d
        };
    }
    DIR.with(|d| d.clone())
}

/// `tokenizer_json`: the input is a tokenizer file, then optionally a NUL
/// and a `tokenizer_config.json`, then optionally a NUL and a
/// `generation_config.json`, written to a private folder and loaded with
/// `cg_vocab_from_tokenizer_json`. A vocabulary that loads is checked
/// (token bytes, EOS ids) and a small grammar compiled and walked on it.
pub fn tokenizer_json(data: &[u8]) {
    let dir = private_dir();
    let mut parts = data.splitn(3, |&b| b == 0);
    let names = [
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
    ];
    for name in names {
        let path = dir.join(name);
        match parts.next() {
            Some(p) => std::fs::write(&path, p).expect("write temp file"),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    let path = CString::new(dir.join(names[0]).into_os_string().into_encoded_bytes())
        .expect("temp path without NUL");
    let v = unsafe { cg_vocab_from_tokenizer_json(path.as_ptr()) };
    check_loaded_vocab("cg_vocab_from_tokenizer_json", v, data);
}

/// `gguf_vocab`: the input is a GGUF file, written to a private folder and
/// loaded with `cg_vocab_from_gguf`: refused with an I/O, unsupported or
/// limit error, or a vocabulary checked as `tokenizer_json`'s. libFuzzer's
/// memory limit catches an allocation that follows a count in the file
/// rather than its size.
pub fn gguf_vocab(data: &[u8]) {
    let path = private_dir().join("model.gguf");
    std::fs::write(&path, data).expect("write temp file");
    let path =
        CString::new(path.into_os_string().into_encoded_bytes()).expect("temp path without NUL");
    let v = unsafe { cg_vocab_from_gguf(path.as_ptr()) };
    check_loaded_vocab("cg_vocab_from_gguf", v, data);
}

/// A vocabulary `func` loaded from a file (or NULL with an allowed error):
/// its token bytes are in bounds, and a small grammar compiles and is
/// walked on it (the walk's choices from `data`).
fn check_loaded_vocab(func: &str, v: *mut cg_vocab, data: &[u8]) {
    let allowed = [CG_ERR_IO, CG_ERR_UNSUPPORTED, CG_ERR_LIMIT];
    let Some(v) = ptr(func, v, &allowed) else {
        return;
    };
    let vocab = Vocab::wrap(v, Vec::new());
    let n = vocab.n as usize;
    for t in (0..n).step_by(n.div_ceil(65_536)) {
        let mut len = usize::MAX;
        let p = unsafe { cg_vocab_token_bytes(vocab.ptr, t as i32, &mut len) };
        assert!(!p.is_null() && len <= 65_536, "token {t}: {p:?} {len}");
    }
    let mut len = 7usize;
    let p = unsafe { cg_vocab_token_bytes(vocab.ptr, n as i32, &mut len) };
    assert!(p.is_null() && len == 0, "token bytes past the vocabulary");
    let g = compile(
        &vocab,
        b"root ::= [a-z ]+ (\",\" [0-9]+)?",
        &options(CG_KIND_GBNF, 0, 0),
    );
    if let Some(g) = g {
        let d = Driver::eager(&g, &vocab, Rng::new(data), 4);
        if let Some(mut d) = d {
            let _ = d.walk(4);
        }
    }
}

/// One grammar of the `matcher_drive` corpus.
struct Entry {
    name: String,
    grammar: Grammar,
    triggers: Option<Triggers>,
}

struct Corpus {
    vocab: Vocab,
    entries: Vec<Entry>,
}

/// The `matcher_drive` corpus, compiled once per process (with the default
/// limits: these are fixed inputs).
fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(build_corpus)
}

/// Compiles the `matcher_drive` corpus now (the fuzz target's init, so
/// that the first input does not pay for it under the timeout).
pub fn init_matcher_corpus() {
    corpus();
}

fn build_corpus() -> Corpus {
    let vocab = Vocab::llama3_small();
    let mut entries = Vec::new();
    let mut add = |name: &str, kind: u32, flags: u32, ws: u32, src: &str, trig: Vec<Trigger>| {
        let mut o = options(kind, flags, ws);
        o.max_compile_ms = 0;
        o.max_states = 0;
        let g = compile(&vocab, src.as_bytes(), &o)
            .unwrap_or_else(|| panic!("corpus grammar {name}: {}", last_error()));
        let triggers = if trig.is_empty() {
            None
        } else {
            Some(
                triggers(&vocab, &trig)
                    .unwrap_or_else(|| panic!("corpus triggers {name}: {}", last_error())),
            )
        };
        entries.push(Entry {
            name: name.to_string(),
            grammar: g,
            triggers,
        });
    };
    macro_rules! gbnf_file {
        ($name:literal) => {
            include_str!(concat!(
                "../tests/data/llamacpp-grammar/gbnf/",
                $name,
                ".gbnf"
            ))
        };
    }
    for (name, src) in [
        ("arithmetic", gbnf_file!("arithmetic")),
        ("c", gbnf_file!("c")),
        ("chess", gbnf_file!("chess")),
        ("english", gbnf_file!("english")),
        ("japanese", gbnf_file!("japanese")),
        ("json", gbnf_file!("json")),
        ("json_arr", gbnf_file!("json_arr")),
        ("list", gbnf_file!("list")),
    ] {
        add(name, CG_KIND_GBNF, 0, 0, src, vec![]);
    }
    let g = CG_KIND_GBNF;
    add(
        "tokens",
        g,
        0,
        0,
        "root ::= <|reserved_special_token_0|> \"{\" [a-z]* \"}\" | \"text\" [ a-z]* | <[1000]> [0-9]+",
        vec![],
    );
    add(
        "left-recursive",
        g,
        CG_GBNF_ALLOW_LEFT_RECURSION,
        0,
        "root ::= root \"+\" term | term\nterm ::= [0-9]+ | \"(\" root \")\"",
        vec![],
    );
    add(
        "utf8",
        g,
        0,
        0,
        "root ::= ([一-龯ぁ-ん]{1,4} \"、\"?){1,6} \"。\" [\\u00e0-\\u00ff]?",
        vec![],
    );
    add(
        "ambiguous",
        g,
        0,
        0,
        "root ::= a a\na ::= \"x\"* | \"xy\"* | \"\"",
        vec![],
    );
    for (name, src) in [
        ("schema-tool", include_str!("data/schemas/tool.json")),
        ("schema-record", include_str!("data/schemas/record.json")),
        ("schema-ref", include_str!("data/schemas/ref.json")),
        ("schema-strings", include_str!("data/schemas/strings.json")),
    ] {
        add(name, CG_KIND_JSON_SCHEMA, 0, 0, src, vec![]);
    }
    add(
        "regex-email",
        CG_KIND_REGEX,
        0,
        0,
        "[a-z]{1,8}(\\.[a-z]{1,8})*@[a-z]+\\.(com|org)",
        vec![],
    );
    add(
        "regex-phone",
        CG_KIND_REGEX,
        0,
        0,
        "(\\d{3}-){2}\\d{4}",
        vec![],
    );
    add(
        "regex-unicode",
        CG_KIND_REGEX,
        0,
        0,
        "\\p{L}{2,5}( \\p{L}{2,5}){0,3}[.!?]",
        vec![],
    );
    add("any-json", CG_KIND_ANY_JSON, 0, 0, "", vec![]);
    add(
        "any-json-compact",
        CG_KIND_ANY_JSON,
        CG_JSON_COMPACT,
        0,
        "",
        vec![],
    );
    add("any-json-ws2", CG_KIND_ANY_JSON, 0, 2, "", vec![]);
    let c = |s: &str| CString::new(s).unwrap();
    add(
        "lazy-word",
        g,
        0,
        0,
        "root ::= \"<tool_call>\\n{\\\"name\\\": \\\"\" [a-z_]{1,16} \"\\\", \\\"arguments\\\": {\" ( \"\\\"\" [a-z]+ \"\\\": \" [0-9]+ )? \"}}\\n</tool_call>\"",
        vec![Trigger::Word(c("<tool_call>"))],
    );
    add(
        "lazy-pattern",
        g,
        0,
        0,
        "root ::= \"{\\\"name\\\": \\\"\" [a-z]+ \"\\\"}\"",
        vec![Trigger::Pattern(c("[\\s\\S]*?(\\{\"name\")[\\s\\S]*"))],
    );
    add(
        "lazy-token",
        g,
        0,
        0,
        "root ::= <|reserved_special_token_0|> \"{\" [a-z]* \"}\"",
        vec![Trigger::Token(vocab.id(b"<|reserved_special_token_0|>"))],
    );
    add(
        "lazy-mixed",
        g,
        0,
        0,
        "root ::= \"CALL \" [a-z]+ \"(\" [0-9,]* \")\" | \"[\" [0-9]+ (\",\" [0-9]+)* \"]\"",
        vec![
            Trigger::Word(c("CALL ")),
            Trigger::Pattern(c("TOOL:\\s*(\\[)")),
        ],
    );
    Corpus { vocab, entries }
}

/// `matcher_drive`: the first byte picks a grammar of the corpus (GBNF
/// examples and hand-written grammars, JSON Schemas, regexes, any JSON,
/// lazy grammars with triggers) on [`Vocab::llama3_small`]; the rest is a
/// sequence of operations, each an opcode byte (modulo 12) and operands:
///
/// | op | operands | what |
/// |---|---|---|
/// | 0 | | fill the mask and check it |
/// | 1 | u16 k | accept the k-th token of the mask |
/// | 2 | u16 t | accept token t (mod vocabulary): taken iff in the mask |
/// | 3 | u8 n, n%16 bytes | `cg_accept_bytes` |
/// | 4 | u8 n | roll back n (mod the token steps since the last text) |
/// | 5 | u8 b | clone: bit 0 advance the clone, bit 1 go on with it |
/// | 6 | | reset |
/// | 7 | u8 cap | forced tokens (cap%8+1) |
/// | 8 | u8 t | `cg_fill_masks` with a clone, t%3 threads |
/// | 9 | | every EOS taken iff accepting |
/// | 10 | u8 n | random walk of n%32 tokens |
/// | 11 | | roll back past the history: refused, nothing changes |
pub fn matcher_drive(data: &[u8]) {
    let c = corpus();
    let mut input = Input::new(data);
    let e = &c.entries[input.u8() as usize % c.entries.len()];
    let rng = Rng::new(data);
    let d = match &e.triggers {
        Some(t) => Driver::lazy(&e.grammar, t, &c.vocab, rng, 4),
        None => Driver::eager(&e.grammar, &c.vocab, rng, 4),
    };
    let Some(mut d) = d else {
        return;
    };
    d.budget = 128;
    let _ = d.run(&mut input);
}

/// The name of the corpus grammar a `matcher_drive` input drives.
pub fn matcher_drive_grammar(data: &[u8]) -> &'static str {
    let c = corpus();
    let k = data.first().copied().unwrap_or(0) as usize;
    &c.entries[k % c.entries.len()].name
}
