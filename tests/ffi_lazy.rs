//! Lazy matchers through the C API with real tokenizers (Llama 3 and a
//! SentencePiece vocabulary with byte fallback): free output until a
//! trigger fires, then the grammar, as llama.cpp's lazy grammar samplers.
//!
//! Covers what llama.cpp users report crashes on: a token that completes a
//! trigger and runs on past it, a trigger split over several tokens, a
//! trigger inside text the grammar then refuses; and rollback, clone, reset
//! and the accepting state across the trigger point. The tokenizers come
//! from `scripts/fetch-tokenizers.sh`.

mod common;

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};

use cgram::ffi::*;

fn last_error() -> String {
    unsafe { CStr::from_ptr(cg_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// A vocabulary loaded through the C API, with its tokens by bytes.
struct Vocab {
    v: *mut cg_vocab,
    ids: HashMap<Vec<u8>, i32>,
    tok: tokenizers::Tokenizer,
}

impl Vocab {
    fn load(name: &str) -> Vocab {
        let path = common::tokenizer_path(name);
        let c = CString::new(path.to_str().unwrap()).unwrap();
        let v = unsafe { cg_vocab_from_tokenizer_json(c.as_ptr()) };
        assert!(!v.is_null(), "{}", last_error());
        let mut ids = HashMap::new();
        for t in 0..unsafe { cg_vocab_size(v) } as i32 {
            let mut len = 0usize;
            let p = unsafe { cg_vocab_token_bytes(v, t, &mut len) };
            let bytes = unsafe { std::slice::from_raw_parts(p, len) }.to_vec();
            ids.entry(bytes).or_insert(t);
        }
        let tok = tokenizers::Tokenizer::from_file(&path).unwrap();
        Vocab { v, ids, tok }
    }

    /// The token whose bytes are exactly `s`.
    fn id(&self, s: &str) -> i32 {
        self.id_bytes(s.as_bytes())
    }

    fn id_bytes(&self, b: &[u8]) -> i32 {
        *self
            .ids
            .get(b)
            .unwrap_or_else(|| panic!("no token {:?}", String::from_utf8_lossy(b)))
    }

    fn encode(&self, text: &str) -> Vec<i32> {
        let e = self.tok.encode(text, false).unwrap();
        e.get_ids().iter().map(|&i| i as i32).collect()
    }

    fn bytes(&self, t: i32) -> Vec<u8> {
        let mut len = 0usize;
        let p = unsafe { cg_vocab_token_bytes(self.v, t, &mut len) };
        unsafe { std::slice::from_raw_parts(p, len) }.to_vec()
    }

    fn grammar(&self, gbnf: &str) -> *mut cg_grammar {
        let g = unsafe { cg_compile(self.v, gbnf.as_ptr().cast(), gbnf.len(), null()) };
        assert!(!g.is_null(), "{gbnf}: {}", last_error());
        g
    }

    fn triggers(&self, list: &[Trigger]) -> Result<*mut cg_triggers, (i32, String)> {
        let texts: Vec<Option<CString>> = list
            .iter()
            .map(|t| match t {
                Trigger::Pattern(s) | Trigger::Word(s) => Some(CString::new(*s).unwrap()),
                Trigger::Token(_) => None,
            })
            .collect();
        let raw: Vec<cg_trigger> = list
            .iter()
            .zip(&texts)
            .map(|(t, text)| cg_trigger {
                kind: match t {
                    Trigger::Pattern(_) => CG_TRIGGER_PATTERN,
                    Trigger::Word(_) => CG_TRIGGER_WORD,
                    Trigger::Token(_) => CG_TRIGGER_TOKEN,
                },
                text: text.as_ref().map_or(null(), |c| c.as_ptr()),
                token: match t {
                    Trigger::Token(id) => *id,
                    _ => 0,
                },
            })
            .collect();
        let t = unsafe { cg_triggers_new(self.v, raw.as_ptr(), raw.len()) };
        if t.is_null() {
            Err((cg_last_error_code(), last_error()))
        } else {
            Ok(t)
        }
    }

    /// A lazy matcher of `gbnf` with `list`.
    fn lazy(&self, gbnf: &str, list: &[Trigger]) -> Lazy {
        let g = self.grammar(gbnf);
        let t = self.triggers(list).unwrap_or_else(|e| panic!("{e:?}"));
        let m = unsafe { cg_matcher_new_lazy(g, t) };
        assert!(!m.is_null(), "{}", last_error());
        let words = unsafe { cg_mask_words(g) };
        // The matcher keeps both alive.
        unsafe {
            cg_free(g);
            cg_triggers_free(t);
        }
        Lazy {
            m,
            mask: vec![0; words],
        }
    }
}

impl Drop for Vocab {
    fn drop(&mut self) {
        unsafe { cg_vocab_free(self.v) };
    }
}

enum Trigger<'a> {
    Pattern(&'a str),
    Word(&'a str),
    Token(i32),
}

struct Lazy {
    m: *mut cg_matcher,
    mask: Vec<u32>,
}

impl Lazy {
    fn allowed(&mut self, t: i32) -> bool {
        let rc = unsafe { cg_fill_mask(self.m, self.mask.as_mut_ptr(), self.mask.len()) };
        assert_eq!(rc, CG_OK, "{}", last_error());
        self.mask[(t / 32) as usize] >> (t % 32) & 1 == 1
    }

    /// Checks that the mask allows `t`, then accepts it.
    #[track_caller]
    fn take(&mut self, t: i32) {
        assert!(self.allowed(t), "the mask refuses token {t}");
        let rc = unsafe { cg_accept(self.m, t) };
        assert_eq!(rc, CG_OK, "token {t}: {}", last_error());
    }

    #[track_caller]
    fn take_all(&mut self, ts: &[i32]) {
        for &t in ts {
            self.take(t);
        }
    }

    /// `Some((index, start))` once triggered.
    fn triggered(&self) -> Option<(i32, usize)> {
        let (mut index, mut start) = (-2, usize::MAX);
        match unsafe { cg_is_triggered(self.m, &mut index, &mut start) } {
            0 => None,
            1 => Some((index, start)),
            rc => panic!("cg_is_triggered: {rc} {}", last_error()),
        }
    }

    fn accepting(&self) -> bool {
        unsafe { cg_is_accepting(self.m) == 1 }
    }

    fn count_allowed(&mut self) -> usize {
        unsafe { cg_fill_mask(self.m, self.mask.as_mut_ptr(), self.mask.len()) };
        self.mask.iter().map(|w| w.count_ones() as usize).sum()
    }
}

impl Drop for Lazy {
    fn drop(&mut self) {
        unsafe { cg_matcher_free(self.m) };
    }
}

/// A tool call in Hermes' format: `<tool_call>` then a JSON object with a
/// name and arguments, then `</tool_call>`.
const TOOL_CALL: &str = r#"
root ::= "<tool_call>" [ \n]* "{\"name\": \"" [a-z_]+ "\", \"arguments\": {" [^{}]* "}}" [ \n]* "</tool_call>"
"#;

#[test]
fn free_text_then_the_grammar_after_a_split_trigger() {
    let v = Vocab::load("llama3");
    let mut m = v.lazy(TOOL_CALL, &[Trigger::Word("<tool_call>")]);
    let n_vocab = unsafe { cg_vocab_size(v.v) } as usize;
    // Before the trigger: everything, end-of-sequence included.
    assert_eq!(m.count_allowed(), n_vocab);
    assert!(m.accepting());
    m.take_all(&v.encode("Let me look that up. "));
    assert_eq!(m.triggered(), None);
    // The trigger split over four tokens: "<", "tool", "_call", ">".
    let split = [v.id("<"), v.id("tool"), v.id("_call")];
    m.take_all(&split);
    assert_eq!(m.triggered(), None, "not complete yet");
    m.take(v.id(">"));
    let (index, start) = m.triggered().expect("fired");
    assert_eq!(index, 0);
    assert_eq!(start, "Let me look that up. ".len());
    // Constrained now: free text is refused, the call goes on.
    assert!(!m.allowed(v.id(" Hello")));
    assert!(!m.accepting());
    let rest = v.encode(
        "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    );
    m.take_all(&rest);
    assert!(m.accepting());
    let eot = v.id_bytes(b"<|eot_id|>");
    m.take(eot);
    assert_eq!(unsafe { cg_is_terminated(m.m) }, 1);
}

#[test]
fn a_token_that_completes_the_trigger_and_runs_on_past_it() {
    let v = Vocab::load("llama3");
    let mut m = v.lazy(TOOL_CALL, &[Trigger::Word("<tool_call>")]);
    m.take_all(&[v.id("<"), v.id("tool"), v.id("_call")]);
    // ">\n" completes the trigger and carries "\n" into the grammar.
    let gt_nl = v.id(">\n");
    m.take(gt_nl);
    assert!(m.triggered().is_some());
    // The grammar has read "<tool_call>\n": "{" may come, ">" may not.
    assert!(m.allowed(v.id("{\"")));
    assert!(!m.allowed(v.id(">")));
    m.take_all(&v.encode("{\"name\": \"f\", \"arguments\": {}}</tool_call>"));
    assert!(m.accepting());
}

#[test]
fn a_firing_token_whose_tail_the_grammar_refuses_is_masked_and_rejected() {
    let v = Vocab::load("llama3");
    let mut m = v.lazy(TOOL_CALL, &[Trigger::Word("<tool_call>")]);
    m.take_all(&[v.id("<"), v.id("tool"), v.id("_call")]);
    let bad = v.id(">.");
    let good = v.id(">");
    assert!(
        !m.allowed(bad),
        "'>.' would fire into text the grammar refuses"
    );
    assert!(m.allowed(good));
    assert!(m.allowed(v.id(">{")), "'>{{' fires into valid text");
    // Given anyway: rejected, and nothing changed.
    let rc = unsafe { cg_accept(m.m, bad) };
    assert_eq!(rc, CG_ERR_TOKEN_REJECTED);
    let msg = last_error();
    assert!(msg.contains("does not accept"), "{msg}");
    assert_eq!(m.triggered(), None);
    assert_eq!(unsafe { cg_rollback(m.m, 3) }, CG_OK);
    // Tokens that do not complete the trigger stay free.
    assert!(m.allowed(v.id(">.")));
}

#[test]
fn a_trigger_inside_prose_then_text_the_grammar_refuses() {
    let v = Vocab::load("llama3");
    let mut m = v.lazy(TOOL_CALL, &[Trigger::Word("<tool_call>")]);
    m.take_all(&v.encode("Wrap calls in <tool_call"));
    m.take(v.id(">"));
    assert!(m.triggered().is_some());
    // The prose would go on with " tags": the grammar refuses it.
    let tags = v.id(" tags");
    assert!(!m.allowed(tags));
    assert_eq!(unsafe { cg_accept(m.m, tags) }, CG_ERR_TOKEN_REJECTED);
    // The matcher is unchanged and still usable.
    m.take_all(&v.encode("{\"name\": \"x\", \"arguments\": {}}</tool_call>"));
    assert!(m.accepting());
}

#[test]
fn the_grammar_starts_mid_token_at_the_match() {
    // llama.cpp's OpenAI-wrapper trigger: the word starts inside ' {"'.
    let v = Vocab::load("llama3");
    let gbnf = r#"root ::= "{\"type\": \"function\", \"name\": \"" [a-z]+ "\"}""#;
    let mut m = v.lazy(gbnf, &[Trigger::Word("{\"type\": \"function\",")]);
    let text = "Calling: {\"type\": \"function\", \"name\": \"abc\"}";
    let ids = v.encode(text);
    assert!(
        ids.iter().any(|&t| v.bytes(t) == b" {\""),
        "the text tokenizes with ' {{\"' straddling the start: {ids:?}"
    );
    m.take_all(&ids);
    let (index, start) = m.triggered().expect("fired");
    assert_eq!((index, start), (0, "Calling: ".len()));
    assert!(m.accepting());
}

#[test]
fn patterns_start_at_their_first_non_empty_group() {
    let v = Vocab::load("llama3");
    // The old form of word triggers (llama_sampler_init_grammar_lazy).
    let p = r"[\s\S]*?(<tool_call>|\[TOOL\])[\s\S]*";
    let mut m = v.lazy(TOOL_CALL, &[Trigger::Pattern(p)]);
    m.take_all(&v.encode("First [TOOL no, then <tool_call>"));
    let (_, start) = m.triggered().expect("fired");
    assert_eq!(start, "First [TOOL no, then ".len());
    // gpt-oss's: only the group is the grammar's.
    let gbnf = r#"root ::= " to=functions." [a-z]+"#;
    let p = r"<\|start\|>assistant(\s+to)";
    let mut m = v.lazy(gbnf, &[Trigger::Pattern(p)]);
    m.take_all(&v.encode("<|start|>assistant to=functions.get"));
    let (_, start) = m.triggered().expect("fired");
    assert_eq!(start, "<|start|>assistant".len());
    assert!(m.accepting());
}

#[test]
fn anchored_and_lookahead_patterns() {
    let v = Vocab::load("llama3");
    let gbnf = r#"root ::= " to" [=a-z.]*"#;
    // `^...$`: the whole output must be the match.
    let mut m = v.lazy(gbnf, &[Trigger::Pattern(r"^\s+to$")]);
    m.take(v.id(" to"));
    assert_eq!(m.triggered(), Some((0, 0)));
    let mut m = v.lazy(gbnf, &[Trigger::Pattern(r"^\s+to$")]);
    m.take_all(&v.encode("Go to"));
    assert_eq!(m.triggered(), None, "the output is more than the match");
    // functionary's `>>>(?!all)`: the lookahead sees the end of the output,
    // so '>>>' alone fires (as in llama.cpp), and the tokens that would fire
    // it into text the grammar refuses are masked.
    let gbnf = r#"root ::= ">>>" [a-z_]+ "\n{}""#;
    let mut m = v.lazy(gbnf, &[Trigger::Pattern(">>>(?!all)")]);
    assert!(!m.allowed(v.id(">>>>")));
    m.take(v.id(">>>"));
    assert!(m.triggered().is_some(), "nothing follows '>>>' yet");
    m.take_all(&v.encode("all\n{}"));
    assert!(m.accepting());
    // A negative lookahead blocks what the same token carries on with.
    let gbnf = r#"root ::= "a" [ a-z]*"#;
    let mut m = v.lazy(gbnf, &[Trigger::Pattern("a(?!ll)")]);
    m.take_all(&[v.id("all"), v.id(" is")]);
    assert_eq!(m.triggered(), None);
    m.take(v.id(" a"));
    assert_eq!(m.triggered(), Some((0, "all is ".len())));
    assert!(m.accepting());
}

#[test]
fn token_triggers_start_the_grammar_with_the_token() {
    let v = Vocab::load("llama3");
    let tag = v.id_bytes(b"<|start_header_id|>");
    let gbnf = format!("root ::= <[{tag}]> \"print(\" [0-9]+ \")\"");
    let mut m = v.lazy(&gbnf, &[Trigger::Word("never"), Trigger::Token(tag)]);
    m.take_all(&v.encode("Computing:"));
    m.take(tag);
    assert_eq!(m.triggered(), Some((1, "Computing:".len())));
    m.take_all(&v.encode("print(42)"));
    assert!(m.accepting());
    // A trigger token the grammar cannot start with is not allowed.
    let gbnf = "root ::= \"x\"";
    let mut m = v.lazy(gbnf, &[Trigger::Token(tag)]);
    assert!(!m.allowed(tag));
    assert_eq!(unsafe { cg_accept(m.m, tag) }, CG_ERR_TOKEN_REJECTED);
    assert_eq!(m.triggered(), None);
}

#[test]
fn end_of_sequence_before_the_trigger() {
    let v = Vocab::load("llama3");
    let mut m = v.lazy(TOOL_CALL, &[Trigger::Word("<tool_call>")]);
    m.take_all(&v.encode("No tool needed."));
    let eot = v.id_bytes(b"<|eot_id|>");
    assert!(m.accepting());
    m.take(eot);
    assert_eq!(unsafe { cg_is_terminated(m.m) }, 1);
    assert_eq!(m.count_allowed(), 0);
    assert_eq!(unsafe { cg_accept(m.m, v.id("a")) }, CG_ERR_TERMINATED);
    // Rolled back, the sequence goes on.
    assert_eq!(unsafe { cg_rollback(m.m, 1) }, CG_OK);
    assert_eq!(unsafe { cg_is_terminated(m.m) }, 0);
    m.take(v.id(" Bye"));
}

#[test]
fn rollback_clone_and_reset_across_the_trigger() {
    let v = Vocab::load("llama3");
    let mut m = v.lazy(TOOL_CALL, &[Trigger::Word("<tool_call>")]);
    let before = v.encode("Sure. ");
    m.take_all(&before);
    m.take_all(&[v.id("<"), v.id("tool"), v.id("_call"), v.id(">\n")]);
    assert!(m.triggered().is_some());
    m.take(v.id("{\""));
    // Clone: an independent copy of the whole state.
    let copy = Lazy {
        m: unsafe { cg_matcher_clone(m.m) },
        mask: m.mask.clone(),
    };
    assert!(copy.triggered().is_some());
    // Roll back the trigger token and what followed: awaiting again, with
    // "<tool_call" read, so that ">" fires again.
    assert_eq!(unsafe { cg_rollback(m.m, 2) }, CG_OK);
    assert_eq!(m.triggered(), None);
    assert!(m.allowed(v.id(" Hello")));
    m.take(v.id(">"));
    assert!(m.triggered().is_some());
    // Back over the whole split trigger: "<" alone no longer fires.
    assert_eq!(unsafe { cg_rollback(m.m, 4) }, CG_OK);
    m.take(v.id(">"));
    assert_eq!(m.triggered(), None);
    // The clone did not move.
    let mut copy = copy;
    assert!(copy.allowed(v.id("name")));
    assert!(!copy.allowed(v.id(" Hello")));
    // Reset: awaiting with nothing read.
    unsafe { cg_reset(copy.m) };
    assert_eq!(copy.triggered(), None);
    assert!(copy.allowed(v.id(" Hello")));
    // Too far.
    assert_eq!(unsafe { cg_rollback(m.m, 1000) }, CG_ERR_INVALID_ARGUMENT);
}

#[test]
fn byte_fallback_tokens_fire_once_the_character_is_complete() {
    // SentencePiece with byte fallback: '⟶' is three byte tokens.
    let v = Vocab::load("spm");
    let gbnf = r#"root ::= "⟶call(" [a-z]+ ")""#;
    let mut m = v.lazy(gbnf, &[Trigger::Word("⟶")]);
    let ids = v.encode("go⟶call(x)");
    let arrow: Vec<i32> = (0..3).map(|k| v.id_bytes(&["⟶".as_bytes()[k]])).collect();
    let at = ids
        .windows(3)
        .position(|w| w == arrow.as_slice())
        .unwrap_or_else(|| panic!("'⟶' is three byte tokens: {ids:?}"));
    m.take_all(&ids[..at + 2]);
    assert_eq!(
        m.triggered(),
        None,
        "two bytes of three are no character yet"
    );
    m.take(ids[at + 2]);
    let (_, start) = m.triggered().expect("fired on the third byte");
    assert_eq!(start, decoded_len(&v, &ids[..at]));
    m.take_all(&ids[at + 3..]);
    assert!(m.accepting());
}

/// Bytes of the tokens' text.
fn decoded_len(v: &Vocab, ids: &[i32]) -> usize {
    ids.iter().map(|&t| v.bytes(t).len()).sum()
}

#[test]
fn triggers_a_batch_of_lazy_and_eager_matchers() {
    let v = Vocab::load("llama3");
    let lazy = v.lazy(TOOL_CALL, &[Trigger::Word("<tool_call>")]);
    let g = v.grammar(TOOL_CALL);
    let eager = unsafe { cg_matcher_new(g) };
    let words = unsafe { cg_mask_words(g) };
    let ms = [lazy.m, eager];
    let mut masks = vec![0u32; 2 * words];
    let rc = unsafe { cg_fill_masks(ms.as_ptr(), 2, masks.as_mut_ptr(), words, 2) };
    assert_eq!(rc, CG_OK, "{}", last_error());
    let ones = |m: &[u32]| m.iter().map(|w| w.count_ones()).sum::<u32>();
    assert_eq!(ones(&masks[..words]), unsafe { cg_vocab_size(v.v) });
    let eager_mask = &masks[words..];
    let lt = v.id("<") as usize;
    assert!(
        eager_mask[lt / 32] >> (lt % 32) & 1 == 1,
        "'<' starts the eager grammar"
    );
    assert!(ones(eager_mask) < 10, "few tokens start the eager grammar");
    let mut index = 7;
    assert_eq!(unsafe { cg_is_triggered(eager, &mut index, null_mut()) }, 1);
    assert_eq!(index, -1);
    unsafe {
        cg_matcher_free(eager);
        cg_free(g);
    }
}

#[test]
fn bad_triggers_are_errors() {
    let v = Vocab::load("llama3");
    let cases: &[(&str, i32, &str)] = &[
        ("(?<=a)b", CG_ERR_PARSE, "lookbehind"),
        ("(?<name>a)", CG_ERR_PARSE, "invalid group"),
        ("(a", CG_ERR_PARSE, "unterminated"),
        ("a{2,1}", CG_ERR_PARSE, "out of order"),
        ("\\x4", CG_ERR_PARSE, "hex"),
        ("(a)\\1", CG_ERR_UNSUPPORTED, "backreference"),
    ];
    for &(p, code, words) in cases {
        let (got, msg) = v.triggers(&[Trigger::Pattern(p)]).err().unwrap_or_else(|| {
            panic!("{p:?} compiled");
        });
        assert_eq!(got, code, "{p:?}: {msg}");
        assert!(msg.contains(words), "{p:?}: {msg}");
        assert!(msg.contains("trigger 0"), "{msg}");
    }
    let n = unsafe { cg_vocab_size(v.v) } as i32;
    let e = v.triggers(&[Trigger::Token(n)]).err().unwrap();
    assert!(e.1.contains("out of range"), "{e:?}");
    let e = v.triggers(&[Trigger::Word("")]).err().unwrap();
    assert!(e.1.contains("empty"), "{e:?}");
    // NULL text, bad kind, NULL list.
    let raw = [cg_trigger {
        kind: CG_TRIGGER_PATTERN,
        text: null::<c_char>(),
        token: 0,
    }];
    assert!(unsafe { cg_triggers_new(v.v, raw.as_ptr(), 1) }.is_null());
    assert!(last_error().contains("NULL"), "{}", last_error());
    let raw = [cg_trigger {
        kind: 9,
        text: null::<c_char>(),
        token: 0,
    }];
    assert!(unsafe { cg_triggers_new(v.v, raw.as_ptr(), 1) }.is_null());
    assert!(last_error().contains("kind 9"), "{}", last_error());
    assert!(unsafe { cg_triggers_new(v.v, null(), 1) }.is_null());
    // Triggers of another vocabulary.
    let spm = Vocab::load("spm");
    let g = spm.grammar("root ::= \"a\"");
    let t = v.triggers(&[Trigger::Word("a")]).unwrap();
    assert!(unsafe { cg_matcher_new_lazy(g, t) }.is_null());
    assert!(
        last_error().contains("another vocabulary"),
        "{}",
        last_error()
    );
    assert!(unsafe { cg_matcher_new_lazy(g, null()) }.is_null());
    unsafe {
        cg_triggers_free(t);
        cg_free(g);
    }
}

#[test]
fn hostile_patterns_are_bounded() {
    let v = Vocab::load("llama3");
    let t0 = std::time::Instant::now();
    // Too large an automaton: a limit error at once.
    let (code, msg) = v.triggers(&[Trigger::Pattern("x{10000}")]).unwrap_err();
    assert_eq!(code, CG_ERR_LIMIT, "{msg}");
    // Assertions in a counted loop, searched anywhere: the translation
    // multiplies out for seconds; each pattern has a fixed time limit.
    let t1 = std::time::Instant::now();
    let (code, msg) = v
        .triggers(&[Trigger::Pattern(r"(?:(?=a)|\b|(?!b)|c$|d){1,16}x\b")])
        .unwrap_err();
    assert_eq!(code, CG_ERR_LIMIT, "{msg}");
    assert!(
        msg.contains("250 ms (the time limit of a trigger pattern)"),
        "{msg}"
    );
    assert!(
        t1.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        t1.elapsed()
    );
    // Nested stars compile to a DFA; nothing backtracks while waiting.
    let mut m = v.lazy("root ::= [a-z ]*", &[Trigger::Pattern("(a*)*b")]);
    let a = v.id("a");
    for _ in 0..20_000 {
        m.take(a);
    }
    m.take(v.id("b"));
    assert!(m.triggered().is_some());
    // A lookahead tested at each of 30,000 positions, each scanning to the
    // end of the line: the search for where the match starts gives up
    // with a limit error instead of running for seconds; nothing changes.
    let mut m = v.lazy("root ::= [a-z\\n ]*", &[Trigger::Pattern("a(?=[^\\n]*z)")]);
    for _ in 0..30_000 {
        m.take(a);
    }
    m.take(v.id("\n"));
    m.take(a);
    let rc = unsafe { cg_accept(m.m, v.id(" z")) };
    if rc != CG_OK {
        assert_eq!(rc, CG_ERR_LIMIT, "{}", last_error());
        assert_eq!(m.triggered(), None);
    }
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(20),
        "hostile patterns took {:?}",
        t0.elapsed()
    );
}

#[test]
fn unchecked_fire_checks_depend_on_the_state_alone() {
    // A pattern of unbounded length: checking a token that could fire
    // searches the whole output, so the checks of one mask go past their
    // budget once the output is long, and every such token is then allowed
    // unchecked. The same detector state with a short output (after a
    // rollback) must be checked again, as it was the first time.
    let v = Vocab::load("llama3");
    let mut m = v.lazy(r#"root ::= "x" [a ]* "!q""#, &[Trigger::Pattern("x[a ]*!")]);
    let a = v.id("a");
    m.take(v.id("x"));
    for _ in 0..4 {
        m.take(a);
    }
    let all = m.mask.len() * 32;
    let short = m.count_allowed();
    let short_mask = m.mask.clone();
    assert!(short < all, "no token was checked and refused");
    for _ in 0..6000 {
        assert_eq!(unsafe { cg_accept(m.m, a) }, CG_OK, "{}", last_error());
    }
    let long = m.count_allowed();
    assert!(
        long > short,
        "the long output's checks were made: {long} vs {short}"
    );
    assert_eq!(unsafe { cg_rollback(m.m, 6000) }, CG_OK, "{}", last_error());
    m.count_allowed();
    assert!(m.mask == short_mask, "the mask after the rollback differs");
    // And a matcher that never saw the long output agrees.
    let mut fresh = v.lazy(r#"root ::= "x" [a ]* "!q""#, &[Trigger::Pattern("x[a ]*!")]);
    fresh.take(v.id("x"));
    for _ in 0..4 {
        fresh.take(a);
    }
    fresh.count_allowed();
    assert!(fresh.mask == short_mask);
}
