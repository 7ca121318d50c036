//! The exactness oracle: the engine's token masks against brute force.
//!
//! Seeded random walks over grammars (llama.cpp's example grammars, the
//! grammars of llama.cpp's integration tests, hand-built IR) and
//! vocabularies: real tokenizers (Llama 3 and Mistral tekken byte-level
//! BPE, a SentencePiece byte-fallback one; missing ones make the tests fail
//! with a hint to run `scripts/fetch-tokenizers.sh`), a small synthetic one
//! (every byte, partial UTF-8), and per grammar a vocabulary cut from random
//! strings of its own language (tokens spanning grammar elements every way
//! the grammar allows). At every state reached, every token id is checked
//! against the independent reference matcher (`tests/common/reference.rs`):
//! - a text token is allowed iff the text so far plus its bytes is a prefix
//!   of some string of the language;
//! - an end-of-sequence token is allowed iff the text so far is complete;
//! - a special token is allowed only where a token element of the grammar
//!   takes it (most grammars here have none; a few hand-built ones do, and
//!   there a token element may also take a text token whole).
//!
//! `accept` is checked to agree (the chosen token is taken; a few refused
//! ones are rejected and leave the state alone), as are `is_accepting`,
//! `is_terminated` and `rollback`. The reference's stack machine is itself
//! cross-checked against its Earley recognizer along each walk.
//!
//! Knobs (environment): `CGRAM_ORACLE_WALKS` (walks per grammar and
//! tokenizer), `CGRAM_ORACLE_STEPS` (tokens per walk), `CGRAM_ORACLE_SEED`,
//! `CGRAM_ORACLE_THREADS`, `CGRAM_ORACLE_FILTER` (substring of the case
//! names to run).

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cgram::compile::IrOptions;
use cgram::ir::{CharClass, Expr, Grammar, GrammarBuilder};
use cgram::source::{compile, CompileOptions};
use cgram::tokensets::compile_ir;
use cgram::{Engine, Matcher, Vocab};

use common::reference::{
    encode_utf8, utf8_sequences, Bnf, Earley, FxMap, SortedVocab, StackMachine, DEAD,
};
use common::{env_u64, hash_str, mask_bit, show, show_tail, Rng};

/// Walk settings.
#[derive(Clone, Copy, Debug)]
struct Config {
    walks: usize,
    steps: usize,
    seed: u64,
}

impl Config {
    fn from_env(walks: usize, steps: usize) -> Config {
        Config {
            walks: env_u64("CGRAM_ORACLE_WALKS", walks as u64) as usize,
            steps: env_u64("CGRAM_ORACLE_STEPS", steps as u64) as usize,
            seed: env_u64("CGRAM_ORACLE_SEED", 0x0c9a_a11e),
        }
    }
}

/// What one case produced.
#[derive(Default, Debug)]
struct Stats {
    states: u64,
    token_checks: u64,
    rejections_checked: u64,
    rollbacks: u64,
    eos_taken: u64,
    max_text: usize,
    disagreements: u64,
    messages: Vec<String>,
    /// Time in `fill_mask` and in the reference's whole-vocabulary checks.
    engine_time: Duration,
    reference_time: Duration,
}

impl Stats {
    fn fail(&mut self, msg: String) {
        self.disagreements += 1;
        if self.messages.len() < 12 {
            self.messages.push(msg);
        }
    }

    fn add(&mut self, o: &Stats) {
        self.states += o.states;
        self.token_checks += o.token_checks;
        self.rejections_checked += o.rejections_checked;
        self.rollbacks += o.rollbacks;
        self.eos_taken += o.eos_taken;
        self.max_text = self.max_text.max(o.max_text);
        self.disagreements += o.disagreements;
        self.engine_time += o.engine_time;
        self.reference_time += o.reference_time;
    }
}

/// The reference side of a walk: the memoized stack machine (with an Earley
/// recognizer along the path as a cross-check), or Earley alone for
/// grammars the stack machine refuses (left recursion; small vocabularies
/// only, since each token is then checked by a fresh Earley run).
enum Reference {
    Stack {
        machine: Rc<RefCell<StackMachine>>,
        /// Text tokens allowed from each state already walked (states
        /// repeat a lot: inside a string, after each element of a list).
        cache: AllowedCache,
        state: u32,
        earley: Earley,
        history: Vec<(u32, usize)>,
    },
    Earley {
        earley: Earley,
        history: Vec<usize>,
    },
}

/// How the reference reads token `t` of `vocab`: special tokens by id only,
/// text tokens by id and bytes.
fn token_input(vocab: &Vocab, t: u32) -> (Option<u32>, &[u8]) {
    if vocab.is_special(t) {
        (Some(t), &[])
    } else {
        (Some(t), vocab.token_bytes(t))
    }
}

type AllowedCache = Rc<RefCell<FxMap<u32, Rc<Vec<u64>>>>>;

/// Cached states at most (a bitset of the vocabulary each).
const MAX_CACHED_STATES: usize = 4096;

impl Reference {
    /// `machine` for the stack machine (else Earley alone); `left` is the
    /// grammar lowered for Earley.
    fn new(left: Rc<Bnf>, machine: Option<(Rc<RefCell<StackMachine>>, AllowedCache)>) -> Self {
        match machine {
            Some((machine, cache)) => {
                let state = machine.borrow().start();
                Reference::Stack {
                    machine,
                    cache,
                    state,
                    earley: Earley::new(left),
                    history: Vec::new(),
                }
            }
            None => Reference::Earley {
                earley: Earley::new(left),
                history: Vec::new(),
            },
        }
    }

    fn complete(&self) -> bool {
        match self {
            Reference::Stack { machine, state, .. } => machine.borrow().is_complete(*state),
            Reference::Earley { earley, .. } => earley.complete(),
        }
    }

    fn can_read(&self) -> bool {
        match self {
            Reference::Stack { machine, state, .. } => machine.borrow().can_read(*state),
            Reference::Earley { earley, .. } => earley.can_read(),
        }
    }

    /// Marks the allowed tokens (end-of-sequence ids are left false): text
    /// tokens whose bytes can be read, and tokens a token element on top
    /// can read whole.
    fn allowed(&mut self, sv: &SortedVocab, vocab: &Vocab, allowed: &mut [bool]) {
        allowed.fill(false);
        match self {
            Reference::Stack {
                machine,
                cache,
                state,
                ..
            } => {
                let mut m = machine.borrow_mut();
                let hit = cache.borrow().get(state).cloned();
                let bits = match hit {
                    Some(b) => b,
                    None => {
                        sv.allowed_from(&mut m, *state, allowed);
                        let mut b = vec![0u64; allowed.len().div_ceil(64)];
                        for (t, &a) in allowed.iter().enumerate() {
                            if a {
                                b[t / 64] |= 1 << (t % 64);
                            }
                        }
                        let b = Rc::new(b);
                        let mut c = cache.borrow_mut();
                        if c.len() >= MAX_CACHED_STATES {
                            c.clear();
                        }
                        c.insert(*state, b.clone());
                        b
                    }
                };
                for (t, a) in allowed.iter_mut().enumerate() {
                    *a = bits[t / 64] >> (t % 64) & 1 == 1;
                }
                let tops = m.token_tops(*state);
                if !tops.is_empty() {
                    let bnf = m.bnf().clone();
                    for t in 0..vocab.len() as u32 {
                        if !vocab.is_eos(t) && tops.iter().any(|&k| bnf.token_matches(k, t)) {
                            allowed[t as usize] = true;
                        }
                    }
                }
            }
            Reference::Earley { earley, .. } => {
                for t in 0..vocab.len() as u32 {
                    if !vocab.is_eos(t) {
                        let (id, bytes) = token_input(vocab, t);
                        allowed[t as usize] = earley.viable_after(id, bytes);
                    }
                }
            }
        }
    }

    /// Would this token keep the text viable? (Both recognizers when there
    /// are two; they must agree.)
    fn viable_after(&mut self, id: Option<u32>, bytes: &[u8]) -> Result<bool, String> {
        match self {
            Reference::Stack {
                machine,
                state,
                earley,
                ..
            } => {
                let s = machine.borrow_mut().step_token(*state, id, bytes) != DEAD;
                let ev = earley.viable_after(id, bytes);
                if s != ev {
                    return Err(format!(
                        "REFERENCE SELF-CHECK: stack machine says viable={s}, Earley says {ev} \
                         after token {id:?} {}",
                        show(bytes)
                    ));
                }
                Ok(s)
            }
            Reference::Earley { earley, .. } => Ok(earley.viable_after(id, bytes)),
        }
    }

    fn feed(&mut self, id: Option<u32>, bytes: &[u8]) -> Result<(), String> {
        match self {
            Reference::Stack {
                machine,
                state,
                earley,
                history,
                ..
            } => {
                history.push((*state, earley.len()));
                *state = machine.borrow_mut().step_token(*state, id, bytes);
                earley.feed(id, bytes);
                let m = machine.borrow();
                if (*state != DEAD) != earley.viable()
                    || m.is_complete(*state) != earley.complete()
                    || m.can_read(*state) != earley.can_read()
                {
                    return Err(format!(
                        "REFERENCE SELF-CHECK: after token {id:?} {}: stack viable={} \
                         complete={} can_read={}, Earley viable={} complete={} can_read={}",
                        show(bytes),
                        *state != DEAD,
                        m.is_complete(*state),
                        m.can_read(*state),
                        earley.viable(),
                        earley.complete(),
                        earley.can_read()
                    ));
                }
            }
            Reference::Earley { earley, history } => {
                history.push(earley.len());
                earley.feed(id, bytes);
            }
        }
        Ok(())
    }

    fn rollback(&mut self, n: usize) {
        match self {
            Reference::Stack {
                state,
                earley,
                history,
                ..
            } => {
                let k = history.len() - n;
                let (s, e) = history[k];
                history.truncate(k);
                *state = s;
                earley.truncate(e);
            }
            Reference::Earley { earley, history } => {
                let k = history.len() - n;
                let e = history[k];
                history.truncate(k);
                earley.truncate(e);
            }
        }
    }
}

/// How a walk picks among the allowed tokens.
#[derive(Clone, Copy, Debug)]
enum Pick {
    Uniform,
    Short,
    Long,
    Structural,
}

fn pick_token(rng: &mut Rng, mode: Pick, cands: &[u32], vocab: &Vocab) -> u32 {
    let len = |t: u32| vocab.token_bytes(t).len();
    let sample = |rng: &mut Rng, k: usize| -> Vec<u32> {
        (0..k).map(|_| cands[rng.below(cands.len())]).collect()
    };
    // A fifth of the steps are uniform whatever the mode.
    if rng.chance(0.2) {
        return cands[rng.below(cands.len())];
    }
    match mode {
        Pick::Uniform => cands[rng.below(cands.len())],
        Pick::Short => sample(rng, 4).into_iter().min_by_key(|&t| len(t)).unwrap(),
        Pick::Long => sample(rng, 4).into_iter().max_by_key(|&t| len(t)).unwrap(),
        Pick::Structural => {
            // Prefer tokens with punctuation, whitespace or non-ASCII bytes:
            // they move the parser between rules.
            let s = sample(rng, 12);
            let structural: Vec<u32> = s
                .iter()
                .copied()
                .filter(|&t| {
                    vocab
                        .token_bytes(t)
                        .iter()
                        .any(|&b| !b.is_ascii_alphanumeric())
                })
                .collect();
            if structural.is_empty() {
                s[0]
            } else {
                structural[rng.below(structural.len())]
            }
        }
    }
}

/// One case: a grammar (as IR for the reference, compiled by the engine).
struct Case {
    name: String,
    ir: Grammar,
    engine: Arc<cgram::CompiledGrammar>,
    /// Use the memoized stack machine (else Earley per token).
    stack: bool,
}

/// Runs the walks of one case and returns what they found.
fn run_case(case: &Case, engine: &Arc<Engine>, sv: &SortedVocab, cfg: &Config) -> Stats {
    let mut stats = Stats::default();
    let left = Rc::new(Bnf::from_ir_left(&case.ir));
    let machine = if case.stack {
        let bnf = Rc::new(Bnf::from_ir(&case.ir));
        Some((
            Rc::new(RefCell::new(StackMachine::new(bnf))),
            AllowedCache::default(),
        ))
    } else {
        None
    };
    let n = engine.vocab().len();
    let words = engine.vocab().mask_words();
    let m0 = Matcher::new(case.engine.clone());
    let mut mask = vec![0u32; words];
    let mut allowed = vec![false; n];
    let eos: Vec<u32> = engine.vocab().eos_tokens().to_vec();
    let modes = [Pick::Structural, Pick::Uniform, Pick::Long, Pick::Short];
    for w in 0..cfg.walks {
        let mode = modes[w % modes.len()];
        let mut rng = Rng::new(cfg.seed ^ hash_str(&case.name).rotate_left(17) ^ (w as u64));
        let mut m = m0.clone();
        let mut r = Reference::new(left.clone(), machine.clone());
        let mut text: Vec<u8> = Vec::new();
        let mut text_lens: Vec<usize> = Vec::new();
        let ctx = |text: &[u8], step: usize| {
            format!(
                "{} walk {w} ({mode:?}) step {step}, text so far ({} bytes) {}",
                case.name,
                text.len(),
                show_tail(text, 120)
            )
        };
        let mut step = 0;
        while step < cfg.steps {
            step += 1;
            // The engine's mask against the reference, every token id.
            let t0 = Instant::now();
            let filled = m.fill_mask(&mut mask);
            stats.engine_time += t0.elapsed();
            if let Err(e) = filled {
                stats.fail(format!("{}: fill_mask failed: {e}", ctx(&text, step)));
                break;
            }
            let t0 = Instant::now();
            r.allowed(sv, engine.vocab(), &mut allowed);
            stats.reference_time += t0.elapsed();
            let complete = r.complete();
            for &e in &eos {
                allowed[e as usize] = complete;
            }
            stats.states += 1;
            stats.token_checks += n as u64;
            let mut bad = 0;
            for t in 0..n as u32 {
                let want = allowed[t as usize];
                let got = mask_bit(&mask, t);
                if want != got {
                    bad += 1;
                    if bad <= 4 {
                        let kind = if engine.vocab().is_eos(t) {
                            "eos "
                        } else if engine.vocab().is_special(t) {
                            "special "
                        } else {
                            ""
                        };
                        stats.fail(format!(
                            "{}: {kind}token {t} {}: engine mask {got}, reference {want}",
                            ctx(&text, step),
                            show(engine.vocab().token_bytes(t))
                        ));
                    }
                }
            }
            if bad > 4 {
                stats.fail(format!(
                    "{}: ... {} more disagreements in this mask",
                    ctx(&text, step),
                    bad - 4
                ));
            }
            if m.is_accepting() != complete {
                stats.fail(format!(
                    "{}: is_accepting() = {}, reference complete = {complete}",
                    ctx(&text, step),
                    m.is_accepting()
                ));
            }
            let can_read = r.can_read();
            if m.is_terminated() == can_read {
                stats.fail(format!(
                    "{}: is_terminated() = {}, reference says something can follow = {can_read}",
                    ctx(&text, step),
                    m.is_terminated()
                ));
            }
            if bad > 0 {
                break;
            }
            let cands: Vec<u32> = (0..n as u32).filter(|&t| allowed[t as usize]).collect();
            // Refused tokens must be rejected by `accept` and leave the
            // state alone (later masks check that). Prefer near misses: a
            // refused token sharing its first byte with an allowed one.
            for _ in 0..2 {
                let mut pickd = None;
                for _try in 0..64 {
                    let t = rng.below(n) as u32;
                    if allowed[t as usize] || engine.vocab().is_eos(t) {
                        continue;
                    }
                    pickd = Some(t);
                    let first = engine.vocab().token_bytes(t).first().copied();
                    if cands
                        .iter()
                        .take(200)
                        .any(|&c| engine.vocab().token_bytes(c).first().copied() == first)
                    {
                        break;
                    }
                }
                let Some(t) = pickd else { break };
                stats.rejections_checked += 1;
                if m.accept(t).is_ok() {
                    stats.fail(format!(
                        "{}: accept({t} {}) succeeded but the token is not allowed",
                        ctx(&text, step),
                        show(engine.vocab().token_bytes(t))
                    ));
                    return stats;
                }
                {
                    let (id, bytes) = token_input(engine.vocab(), t);
                    match r.viable_after(id, bytes) {
                        Ok(false) => {}
                        Ok(true) => unreachable!("reference disagrees with itself"),
                        Err(e) => {
                            stats.fail(format!("{}: {e}", ctx(&text, step)));
                            return stats;
                        }
                    }
                }
            }
            // Roll back now and then.
            if !text_lens.is_empty() && rng.chance(0.04) {
                let k = 1 + rng.below(text_lens.len().min(3));
                if let Err(e) = m.rollback(k) {
                    stats.fail(format!("{}: rollback({k}) failed: {e}", ctx(&text, step)));
                    break;
                }
                r.rollback(k);
                let keep = text_lens.len() - k;
                text.truncate(text_lens[keep]);
                text_lens.truncate(keep);
                stats.rollbacks += 1;
                continue;
            }
            // End with EOS now and then (or when nothing else is left).
            if complete && (cands.is_empty() || rng.chance(0.03)) {
                let e = eos[rng.below(eos.len())];
                if let Err(err) = m.accept(e) {
                    stats.fail(format!(
                        "{}: accept(eos {e}) failed on a complete text: {err}",
                        ctx(&text, step)
                    ));
                    break;
                }
                stats.eos_taken += 1;
                if !m.is_terminated() || m.is_accepting() {
                    stats.fail(format!(
                        "{}: after EOS: is_terminated {} is_accepting {}",
                        ctx(&text, step),
                        m.is_terminated(),
                        m.is_accepting()
                    ));
                }
                m.fill_mask(&mut mask).unwrap();
                if mask.iter().any(|&x| x != 0) {
                    stats.fail(format!("{}: mask not empty after EOS", ctx(&text, step)));
                }
                // Undo the EOS: the matcher must come back to life.
                m.rollback(1).unwrap();
                if m.is_accepting() != complete {
                    stats.fail(format!(
                        "{}: after rolling back EOS, is_accepting() = {}",
                        ctx(&text, step),
                        m.is_accepting()
                    ));
                }
                if cands.is_empty() {
                    break;
                }
                continue;
            }
            if cands.is_empty() {
                break;
            }
            let t = pick_token(&mut rng, mode, &cands, engine.vocab());
            let (id, bytes) = token_input(engine.vocab(), t);
            if let Err(e) = m.accept(t) {
                stats.fail(format!(
                    "{}: token {t} {} is in the mask but accept refused it: {e}",
                    ctx(&text, step),
                    show(bytes)
                ));
                break;
            }
            if let Err(e) = r.feed(id, bytes) {
                stats.fail(format!("{}: {e}", ctx(&text, step)));
                break;
            }
            text_lens.push(text.len());
            text.extend_from_slice(bytes);
            stats.max_text = stats.max_text.max(text.len());
        }
    }
    stats
}

// ---------------------------------------------------------------------------
// Cases.

fn ir_options() -> IrOptions {
    IrOptions::new(60_000, 1_000_000)
}

/// A case from GBNF text: the IR from `cgram::gbnf::parse` for the
/// reference, `compile` (the full GBNF path) for the engine.
fn gbnf_case(name: &str, text: &str, engine: &Arc<Engine>) -> Result<Case, String> {
    let ir = cgram::gbnf::parse(text, "root", Some(engine.vocab()))
        .map_err(|e| format!("{name}: GBNF parse failed: {e}"))?;
    // Left recursion is allowed: the reference checks such grammars with
    // Earley alone (its stack machine would not end).
    let stack = cgram::gbnf::check_left_recursion(&ir).is_ok();
    let options = CompileOptions {
        flags: cgram::source::FLAG_GBNF_ALLOW_LEFT_RECURSION,
        ..CompileOptions::default()
    };
    let engine = compile(engine, text.as_bytes(), &options)
        .map_err(|e| format!("{name}: compile failed: {e}"))?;
    Ok(Case {
        name: name.to_string(),
        ir,
        engine,
        stack,
    })
}

fn ir_case(name: &str, ir: Grammar, engine: &Arc<Engine>, stack: bool) -> Result<Case, String> {
    let engine = compile_ir(engine, &ir, &ir_options())
        .map_err(|e| format!("{name}: compile failed: {e}"))?;
    Ok(Case {
        name: name.to_string(),
        ir,
        engine,
        stack,
    })
}

fn cls(ranges: &[(u32, u32)]) -> Expr {
    Expr::Class(CharClass::from_ranges(ranges.iter().copied()))
}

fn lit(s: &str) -> Expr {
    Expr::literal(s)
}

fn ch(c: char) -> (u32, u32) {
    (c as u32, c as u32)
}

fn rng_(a: char, b: char) -> (u32, u32) {
    (a as u32, b as u32)
}

/// Hand-built IR grammars covering what GBNF may not produce: empty
/// classes, unproductive rules, nested counted repetition, classes around
/// UTF-8 length and surrogate boundaries, ambiguity, nullable loops, left
/// recursion. `(name, grammar, stack machine usable)`.
fn handmade() -> Vec<(String, Grammar, bool)> {
    let mut out = Vec::new();

    // JSON-like values with recursion, strings with escapes, numbers.
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let value = b.add_rule("value");
        let object = b.add_rule("object");
        let array = b.add_rule("array");
        let string = b.add_rule("string");
        let number = b.add_rule("number");
        let ws = b.add_rule("ws");
        b.set_body(ws, Expr::repeat(cls(&[ch(' '), ch('\n')]), 0, Some(3)));
        b.set_body(
            value,
            Expr::alt(vec![
                Expr::Ref(object),
                Expr::Ref(array),
                Expr::Ref(string),
                Expr::Ref(number),
                lit("true"),
                lit("false"),
                lit("null"),
            ]),
        );
        let member = Expr::seq(vec![
            Expr::Ref(string),
            Expr::Ref(ws),
            lit(":"),
            Expr::Ref(ws),
            Expr::Ref(value),
        ]);
        b.set_body(
            object,
            Expr::seq(vec![
                lit("{"),
                Expr::Ref(ws),
                Expr::optional(Expr::seq(vec![
                    member.clone(),
                    Expr::star(Expr::seq(vec![lit(","), Expr::Ref(ws), member])),
                ])),
                lit("}"),
            ]),
        );
        let elem = Expr::seq(vec![Expr::Ref(value), Expr::Ref(ws)]);
        b.set_body(
            array,
            Expr::seq(vec![
                lit("["),
                Expr::Ref(ws),
                Expr::optional(Expr::seq(vec![
                    elem.clone(),
                    Expr::star(Expr::seq(vec![lit(","), Expr::Ref(ws), elem])),
                ])),
                lit("]"),
            ]),
        );
        let hex = cls(&[rng_('0', '9'), rng_('a', 'f'), rng_('A', 'F')]);
        b.set_body(
            string,
            Expr::seq(vec![
                lit("\""),
                Expr::star(Expr::alt(vec![
                    Expr::Class(CharClass::from_ranges([ch('"'), ch('\\'), (0, 0x1f)]).negate()),
                    Expr::seq(vec![lit("\\"), cls(&[ch('"'), ch('\\'), ch('n'), ch('t')])]),
                    Expr::seq(vec![lit("\\u"), Expr::repeat(hex, 4, Some(4))]),
                ])),
                lit("\""),
            ]),
        );
        b.set_body(
            number,
            Expr::seq(vec![
                Expr::optional(lit("-")),
                Expr::alt(vec![
                    lit("0"),
                    Expr::seq(vec![
                        cls(&[rng_('1', '9')]),
                        Expr::repeat(cls(&[rng_('0', '9')]), 0, Some(5)),
                    ]),
                ]),
                Expr::optional(Expr::seq(vec![
                    lit("."),
                    Expr::plus(cls(&[rng_('0', '9')])),
                ])),
                Expr::optional(Expr::seq(vec![
                    cls(&[ch('e'), ch('E')]),
                    Expr::optional(cls(&[ch('+'), ch('-')])),
                    Expr::plus(cls(&[rng_('0', '9')])),
                ])),
            ]),
        );
        b.set_body(root, Expr::seq(vec![Expr::Ref(ws), Expr::Ref(value)]));
        out.push(("ir:json-like".to_string(), b.finish(root), true));
    }

    // Classes at UTF-8 boundaries (1/2/3/4-byte lengths, surrogates).
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let item = Expr::alt(vec![
            cls(&[(0x7e, 0x81)]),
            cls(&[(0x7ff, 0x801)]),
            cls(&[(0xd7fe, 0xe001)]),
            cls(&[(0xfffe, 0x10001)]),
            cls(&[(0x10fffe, 0x10ffff)]),
            cls(&[rng_('α', 'ω')]),
            cls(&[(0x1f600, 0x1f64f)]),
            cls(&[(0x3040, 0x309f), (0x4e00, 0x4e10)]),
            Expr::Class(CharClass::from_ranges([rng_('a', 'z'), (0, 0x7f)]).negate()),
        ]);
        b.set_body(
            root,
            Expr::seq(vec![
                Expr::repeat(Expr::seq(vec![item, lit(";")]), 1, Some(6)),
                lit("."),
            ]),
        );
        out.push(("ir:utf8-classes".to_string(), b.finish(root), true));
    }

    // Nested counted repetition.
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        b.set_body(
            root,
            Expr::alt(vec![
                Expr::seq(vec![
                    Expr::repeat(
                        Expr::seq(vec![
                            Expr::repeat(cls(&[ch('a'), ch('b')]), 1, Some(3)),
                            lit("-"),
                        ]),
                        0,
                        Some(3),
                    ),
                    lit("!"),
                ]),
                Expr::repeat(lit("ab"), 2, Some(4)),
                Expr::seq(vec![
                    Expr::repeat(cls(&[rng_('0', '9')]), 3, Some(3)),
                    lit("."),
                ]),
                Expr::repeat(lit("x"), 2, None),
                Expr::seq(vec![
                    lit("{"),
                    Expr::repeat(Expr::repeat(lit("12"), 1, Some(2)), 2, Some(3)),
                    lit("}"),
                ]),
            ]),
        );
        out.push(("ir:counted".to_string(), b.finish(root), true));
    }

    // Empty language pieces: Nothing, an empty class, an unproductive rule.
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let unprod = b.add_rule("unproductive");
        b.set_body(unprod, Expr::seq(vec![lit("x"), Expr::Ref(unprod)]));
        b.set_body(
            root,
            Expr::alt(vec![
                Expr::seq(vec![lit("a"), Expr::Nothing]),
                Expr::seq(vec![lit("ab"), Expr::Class(CharClass::empty())]),
                Expr::seq(vec![lit("c"), Expr::Ref(unprod)]),
                Expr::seq(vec![lit("ab"), Expr::optional(lit("c")), lit("d")]),
                Expr::seq(vec![lit("x"), Expr::optional(Expr::Ref(unprod)), lit("y")]),
            ]),
        );
        out.push(("ir:empty-parts".to_string(), b.finish(root), true));
    }

    // A repetition whose range is empty (min > max) matches nothing.
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        b.set_body(
            root,
            Expr::alt(vec![
                Expr::seq(vec![lit("a"), Expr::repeat(lit("z"), 3, Some(2))]),
                lit("b"),
            ]),
        );
        out.push(("ir:repeat-min-gt-max".to_string(), b.finish(root), true));
    }

    // Ambiguity and nullable loops.
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let a = b.add_rule("a");
        let e = b.add_rule("e");
        b.set_body(
            a,
            Expr::alt(vec![Expr::star(Expr::optional(lit("x"))), lit("xy")]),
        );
        b.set_body(
            e,
            Expr::alt(vec![
                lit("true"),
                Expr::seq(vec![lit("tr"), lit("ue")]),
                lit("tru"),
                lit("null"),
                lit("nul"),
                Expr::seq(vec![lit("a"), Expr::Ref(e), lit("b")]),
                Expr::Empty,
            ]),
        );
        b.set_body(
            root,
            Expr::seq(vec![
                Expr::Ref(a),
                Expr::Ref(a),
                Expr::optional(lit("z")),
                Expr::star(Expr::seq(vec![Expr::Ref(e), lit(",")])),
            ]),
        );
        out.push(("ir:ambiguous-nullable".to_string(), b.finish(root), true));
    }

    // UTF-8 literals and a wide loop followed by a literal.
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        b.set_body(
            root,
            Expr::seq(vec![
                Expr::plus(Expr::alt(vec![
                    lit("é"),
                    lit("€"),
                    lit("😀"),
                    Expr::seq(vec![lit("α"), Expr::optional(lit("β"))]),
                    lit("あ"),
                ])),
                lit("\""),
                Expr::star(Expr::Class(CharClass::single('"' as u32).negate())),
                lit("\"}"),
            ]),
        );
        out.push(("ir:utf8-literals".to_string(), b.finish(root), true));
    }

    // Deep nesting.
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let p = b.add_rule("p");
        b.set_body(
            p,
            Expr::alt(vec![
                Expr::seq(vec![lit("("), Expr::Ref(p), lit(")"), Expr::Ref(p)]),
                Expr::seq(vec![lit("["), Expr::Ref(p), lit("]")]),
                Expr::seq(vec![lit("{"), Expr::Ref(p), lit("}")]),
                Expr::Empty,
            ]),
        );
        b.set_body(root, Expr::seq(vec![Expr::Ref(p), lit("\n")]));
        out.push(("ir:nesting".to_string(), b.finish(root), true));
    }

    // Left recursion (Earley reference only).
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let e = b.add_rule("e");
        let t = b.add_rule("t");
        let f = b.add_rule("f");
        b.set_body(
            e,
            Expr::alt(vec![
                Expr::seq(vec![Expr::Ref(e), cls(&[ch('+'), ch('-')]), Expr::Ref(t)]),
                Expr::Ref(t),
            ]),
        );
        b.set_body(
            t,
            Expr::alt(vec![
                Expr::seq(vec![Expr::Ref(t), lit("*"), Expr::Ref(f)]),
                Expr::Ref(f),
            ]),
        );
        b.set_body(
            f,
            Expr::alt(vec![
                Expr::plus(cls(&[rng_('0', '9')])),
                Expr::seq(vec![lit("("), Expr::Ref(e), lit(")")]),
            ]),
        );
        b.set_body(root, Expr::Ref(e));
        out.push(("ir:left-recursive".to_string(), b.finish(root), false));
    }
    out
}

/// Grammars with token elements, for a given vocabulary: its first
/// non-EOS special tokens and a short text token are named by id.
fn token_grammars(vocab: &Vocab) -> Vec<(String, Grammar)> {
    use cgram::ir::TokenSet;
    let specials: Vec<u32> = (0..vocab.len() as u32)
        .filter(|&t| vocab.is_special(t) && !vocab.is_eos(t))
        .take(3)
        .collect();
    assert!(!specials.is_empty(), "the vocabulary has no special token");
    let sp = |i: usize| specials[i.min(specials.len() - 1)];
    let text_id = |want: &[&[u8]]| -> u32 {
        for w in want {
            if let Some(t) = (0..vocab.len() as u32)
                .find(|&t| !vocab.is_special(t) && !vocab.is_eos(t) && vocab.token_bytes(t) == *w)
            {
                return t;
            }
        }
        panic!("no text token among {want:?}");
    };
    let ab = text_id(&[b"ab", b"at", b"a"]);
    let ab_text = std::str::from_utf8(vocab.token_bytes(ab))
        .unwrap()
        .to_string();
    let tok = |ids: Vec<u32>, negated: bool| {
        let mut ids = ids;
        ids.sort_unstable();
        ids.dedup();
        Expr::Token(TokenSet { ids, negated })
    };
    let mut out = Vec::new();
    {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let item = b.add_rule("item");
        b.set_body(
            item,
            Expr::alt(vec![
                Expr::seq(vec![
                    lit("x"),
                    Expr::repeat(cls(&[rng_('0', '9')]), 1, Some(2)),
                ]),
                Expr::seq(vec![tok(vec![ab], false), lit("c")]),
                Expr::seq(vec![tok(vec![sp(1), ab], true), lit(";")]),
                Expr::seq(vec![tok(vec![sp(2)], false), lit("a")]),
            ]),
        );
        b.set_body(
            root,
            Expr::seq(vec![
                tok(vec![sp(0)], false),
                Expr::star(Expr::Ref(item)),
                tok(vec![sp(1)], false),
                Expr::optional(lit("!")),
            ]),
        );
        out.push(("ir:tokens".to_string(), b.finish(root)));
    }
    {
        // A text token matched whole by a token element or by its text.
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        b.set_body(
            root,
            Expr::seq(vec![
                Expr::plus(Expr::alt(vec![
                    tok(vec![ab], false),
                    Expr::seq(vec![lit(&ab_text), lit("c")]),
                    Expr::seq(vec![lit("b"), Expr::optional(lit(&ab_text))]),
                ])),
                Expr::optional(tok(specials.clone(), false)),
            ]),
        );
        out.push(("ir:tokens-overlap".to_string(), b.finish(root)));
    }
    out
}

/// The GBNF grammars: llama.cpp's examples and the integration tests'
/// grammars without token elements (hand-written ones and the GBNF that
/// llama.cpp generated from the JSON schemas).
fn gbnf_sources() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = common::example_grammars()
        .into_iter()
        .map(|(n, t)| (format!("gbnf/{n}"), t))
        .collect();
    let cases = common::read_json(&common::llamacpp_dir().join("integration_cases.json"));
    for c in cases.as_array().unwrap() {
        if c["uses_tokens"].as_bool().unwrap_or(false) {
            continue;
        }
        let kind = c["kind"].as_str().unwrap();
        let line = c["source_line"].as_u64().unwrap();
        let name = format!(
            "integration/{kind}:{line}:{}",
            c["name"].as_str().unwrap_or("")
        );
        out.push((name, c["grammar"].as_str().unwrap().to_string()));
    }
    out
}

fn filter_ok(name: &str) -> bool {
    match std::env::var("CGRAM_ORACLE_FILTER") {
        Ok(f) if !f.is_empty() => name.contains(&f),
        _ => true,
    }
}

/// Runs cases (built lazily per thread: the reference is not `Send`) on a
/// few threads and reports. Panics on any disagreement or build failure.
fn run_all(label: &str, jobs: Vec<Job>, cfg: Config) {
    let threads = env_u64(
        "CGRAM_ORACLE_THREADS",
        std::thread::available_parallelism().map_or(1, |n| n.get().min(2)) as u64,
    )
    .max(1) as usize;
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, String, Stats, Duration)>> = Mutex::new(Vec::new());
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let sorted: Mutex<std::collections::HashMap<String, Arc<SortedVocab>>> =
        Mutex::new(Default::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= jobs.len() {
                    break;
                }
                let job = &jobs[i];
                let t0 = Instant::now();
                let vocab = (job.vocab)();
                let sv = {
                    let mut g = sorted.lock().unwrap();
                    g.entry(job.vocab_name.clone())
                        .or_insert_with(|| Arc::new(common::sorted_vocab(vocab.vocab())))
                        .clone()
                };
                let case = match (job.build)(&vocab) {
                    Ok(c) => c,
                    Err(e) => {
                        errors
                            .lock()
                            .unwrap()
                            .push(format!("[{}] {e}", job.vocab_name));
                        continue;
                    }
                };
                let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_case(&case, &vocab, &sv, &cfg)
                }));
                match res {
                    Ok(st) => results.lock().unwrap().push((
                        i,
                        format!("[{}] {}", job.vocab_name, case.name),
                        st,
                        t0.elapsed(),
                    )),
                    Err(p) => {
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        errors.lock().unwrap().push(format!(
                            "[{}] {}: panicked: {msg}",
                            job.vocab_name, case.name
                        ));
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    let mut total = Stats::default();
    let mut failures = Vec::new();
    for (_, name, st, dt) in &results {
        println!(
            "oracle {label} {name}: {} states, {} token checks, {} rejections, {} rollbacks, \
             {} eos, longest text {} bytes, {} disagreements, {:.2}s (masks {:.2}s, \
             reference {:.2}s)",
            st.states,
            st.token_checks,
            st.rejections_checked,
            st.rollbacks,
            st.eos_taken,
            st.max_text,
            st.disagreements,
            dt.as_secs_f64(),
            st.engine_time.as_secs_f64(),
            st.reference_time.as_secs_f64()
        );
        total.add(st);
        for m in &st.messages {
            failures.push(format!("[{name}] {m}"));
        }
    }
    let errors = errors.into_inner().unwrap();
    println!(
        "oracle {label}: oracle states checked: {} ({} token checks, {} rejections, {} \
         rollbacks, {} cases, {} walks x {} steps, seed {:#x}), {} disagreements, {} errors, \
         {:.1}s",
        total.states,
        total.token_checks,
        total.rejections_checked,
        total.rollbacks,
        results.len(),
        cfg.walks,
        cfg.steps,
        cfg.seed,
        total.disagreements,
        errors.len(),
        started.elapsed().as_secs_f64()
    );
    for e in &errors {
        println!("ERROR {e}");
    }
    for f in &failures {
        println!("DISAGREEMENT {f}");
    }
    assert!(
        errors.is_empty() && total.disagreements == 0,
        "oracle {label}: {} disagreements, {} errors (see the lines above); first: {}",
        total.disagreements,
        errors.len(),
        errors
            .first()
            .or(failures.first())
            .cloned()
            .unwrap_or_default()
    );
    assert!(total.states > 0, "oracle {label}: no state checked");
}

type BuildFn = Box<dyn Fn(&Arc<Engine>) -> Result<Case, String> + Send + Sync>;

struct Job {
    vocab_name: String,
    vocab: Box<dyn Fn() -> Arc<Engine> + Send + Sync>,
    build: BuildFn,
}

/// A vocabulary made for one grammar: every single byte, plus pieces cut
/// at random from random strings of the grammar's language (so that many
/// tokens span several grammar elements and end mid-element), a special
/// token and an end-of-sequence token.
fn derived_vocab(ir: &Grammar, seed: u64, n_tokens: usize) -> Arc<Engine> {
    let bnf = Rc::new(Bnf::from_ir(ir));
    let mut m = StackMachine::new(bnf);
    let mut rng = Rng::new(seed);
    let mut texts: Vec<Vec<u8>> = Vec::new();
    for _ in 0..40 {
        let mut state = m.start();
        let mut text = Vec::new();
        let len = 20 + rng.below(200);
        while text.len() < len {
            // A random byte that keeps the text viable, ASCII preferred.
            let mut next = None;
            for k in 0..512 {
                let b = if k < 48 {
                    rng.below(128) as u8
                } else {
                    (k - 48) as u8
                };
                let t = m.step(state, b);
                if t != DEAD && (k < 48 || rng.chance(0.5) || k == 511) {
                    next = Some((b, t));
                    break;
                }
                if k >= 48 && t != DEAD && next.is_none() {
                    next = Some((b, t));
                }
            }
            let Some((b, t)) = next else { break };
            text.push(b);
            state = t;
        }
        if !text.is_empty() {
            texts.push(text);
        }
    }
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let mut seen: std::collections::HashSet<Vec<u8>> = tokens.iter().cloned().collect();
    let mut tries = 0;
    while tokens.len() < 256 + n_tokens && !texts.is_empty() && tries < n_tokens * 20 {
        tries += 1;
        let t = &texts[rng.below(texts.len())];
        if t.len() < 2 {
            continue;
        }
        let len = 2 + rng.below(7.min(t.len() - 1));
        let start = rng.below(t.len() - len + 1);
        let piece = t[start..start + len].to_vec();
        if seen.insert(piece.clone()) {
            tokens.push(piece);
        }
    }
    let mut flags = vec![0u32; tokens.len()];
    tokens.push(b"<|special|>".to_vec());
    flags.push(cgram::TOKEN_SPECIAL);
    tokens.push(b"</s>".to_vec());
    flags.push(cgram::TOKEN_SPECIAL);
    let eos = (tokens.len() - 1) as u32;
    Engine::new(Vocab::new(tokens, flags, vec![eos]).unwrap())
}

fn real_jobs(tokenizer: &'static str) -> Vec<Job> {
    // Fail loudly (before any work) when the tokenizer is missing.
    common::tokenizer_path(tokenizer);
    let mut jobs = Vec::new();
    for (name, text) in gbnf_sources() {
        if !filter_ok(&name) {
            continue;
        }
        jobs.push(Job {
            vocab_name: tokenizer.to_string(),
            vocab: Box::new(move || common::real_engine(tokenizer)),
            build: Box::new(move |v| gbnf_case(&name, &text, v)),
        });
    }
    for (name, ir, stack) in handmade() {
        if !stack || !filter_ok(&name) {
            continue;
        }
        jobs.push(Job {
            vocab_name: tokenizer.to_string(),
            vocab: Box::new(move || common::real_engine(tokenizer)),
            build: Box::new(move |v| ir_case(&name, ir.clone(), v, true)),
        });
    }
    jobs.extend(token_jobs(tokenizer.to_string(), move || {
        common::real_engine(tokenizer)
    }));
    jobs
}

/// The token-element grammars of [`token_grammars`] on a vocabulary.
fn token_jobs(
    vocab_name: String,
    vocab: impl Fn() -> Arc<Engine> + Send + Sync + Clone + 'static,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    for k in 0..2 {
        let v = vocab.clone();
        jobs.push(Job {
            vocab_name: vocab_name.clone(),
            vocab: Box::new(v),
            build: Box::new(move |v| {
                let (name, ir) = token_grammars(v.vocab()).swap_remove(k);
                ir_case(&name, ir, v, true)
            }),
        });
    }
    jobs.retain(|_| filter_ok("ir:tokens"));
    jobs
}

// ---------------------------------------------------------------------------
// Tests.

/// The reference's own UTF-8 encoding of classes is exact.
#[test]
fn reference_utf8_sequences_exact() {
    let classes: Vec<CharClass> = vec![
        CharClass::any(),
        CharClass::from_ranges([(0x7e, 0x81), (0x7ff, 0x801)]),
        CharClass::from_ranges([(0xd7fe, 0xe001), (0xfffe, 0x10001)]),
        CharClass::from_ranges([(0x10fffe, 0x10ffff), (0x1f600, 0x1f64f)]),
        CharClass::from_ranges([(0x3040, 0x309f), (0x4e00, 0x4e10), (0x41, 0x5a)]),
        CharClass::single('"' as u32).negate(),
        CharClass::from_ranges([(0x80, 0x10ffff)]),
        CharClass::from_ranges([(0x1234, 0x56789)]),
    ];
    for c in classes {
        let mut seqs = Vec::new();
        for &(lo, hi) in c.ranges() {
            utf8_sequences(lo, hi, &mut seqs);
        }
        let matches = |bytes: &[u8]| {
            seqs.iter().any(|s| {
                s.len() == bytes.len()
                    && s.iter()
                        .zip(bytes.iter())
                        .all(|(&(lo, hi), &b)| lo <= b && b <= hi)
            })
        };
        // Every member's encoding matches, no non-member's does.
        for cp in (0..=0x10ffffu32).filter(|c| !(0xd800..=0xdfff).contains(c)) {
            let e = encode_utf8(cp);
            assert_eq!(
                e,
                char::from_u32(cp).unwrap().to_string().into_bytes(),
                "encode {cp:#x}"
            );
            assert_eq!(matches(&e), c.contains(cp), "class {c:?} cp {cp:#x}");
        }
        // And nothing else: the sequences cover exactly count() strings and
        // are pairwise disjoint.
        let total: u64 = seqs
            .iter()
            .map(|s| {
                s.iter()
                    .map(|&(lo, hi)| (hi - lo) as u64 + 1)
                    .product::<u64>()
            })
            .sum();
        assert_eq!(
            total,
            c.count(),
            "class {c:?}: sequences cover extra strings"
        );
    }
}

/// The two recognizers of the reference agree with each other on random
/// byte strings over the hand-built grammars.
#[test]
fn reference_recognizers_agree() {
    let alphabet: Vec<&[u8]> = vec![
        b"a",
        b"b",
        b"x",
        b"y",
        b"z",
        b"t",
        b"r",
        b"u",
        b"e",
        b"n",
        b"l",
        b"(",
        b")",
        b"[",
        b"]",
        b"{",
        b"}",
        b"\"",
        b",",
        b":",
        b" ",
        b"\n",
        b"1",
        b"2",
        b"0",
        b"-",
        b"!",
        b".",
        b";",
        b"\\",
        b"\xc3\xa9",
        b"\xc3",
        b"\xa9",
        b"\xe2\x82\xac",
        b"\xf0\x9f\x98\x80",
        b"\xce\xb1",
        b"\xed\x9f\xbf",
        b"\xee\x80\x80",
        b"\xf4\x8f\xbf\xbf",
        b"\x7f",
        b"\xc2\x80",
        b"ab",
    ];
    let mut checked = 0;
    for (name, g, stack) in handmade() {
        if !stack {
            continue;
        }
        let bnf = Rc::new(Bnf::from_ir(&g));
        let left = Rc::new(Bnf::from_ir_left(&g));
        let machine = Rc::new(RefCell::new(StackMachine::new(bnf.clone())));
        let mut rng = Rng::new(hash_str(&name));
        for _ in 0..300 {
            let mut e = Earley::new(left.clone());
            let mut s = machine.borrow().start();
            let mut text = Vec::new();
            for _ in 0..rng.below(30) {
                let piece = alphabet[rng.below(alphabet.len())];
                text.extend_from_slice(piece);
                for &b in piece {
                    e.feed_bytes(&[b]);
                    s = machine.borrow_mut().step(s, b);
                    let m = machine.borrow();
                    assert_eq!(
                        (e.viable(), e.complete()),
                        (s != DEAD, m.is_complete(s)),
                        "{name}: {}",
                        show(&text)
                    );
                    checked += 1;
                }
                if s == DEAD {
                    break;
                }
            }
        }
    }
    println!("reference self-check: {checked} byte steps agree");
}

/// Hand-built IR on the small synthetic vocabulary, including the
/// left-recursive grammar (Earley reference).
#[test]
fn oracle_handmade_ir_synthetic_vocab() {
    let cfg = Config::from_env(24, 200);
    let mut jobs = Vec::new();
    for (name, ir, stack) in handmade() {
        if !filter_ok(&name) {
            continue;
        }
        jobs.push(Job {
            vocab_name: "synthetic".to_string(),
            vocab: Box::new(common::synthetic_engine),
            build: Box::new(move |v| ir_case(&name, ir.clone(), v, stack)),
        });
    }
    jobs.extend(token_jobs("synthetic".into(), common::synthetic_engine));
    // The token grammars once more with the Earley reference.
    for k in 0..2 {
        jobs.push(Job {
            vocab_name: "synthetic".to_string(),
            vocab: Box::new(common::synthetic_engine),
            build: Box::new(move |v| {
                let (name, ir) = token_grammars(v.vocab()).swap_remove(k);
                ir_case(&format!("{name} (Earley)"), ir, v, false)
            }),
        });
    }
    run_all("synthetic-ir", jobs, cfg);
}

/// llama.cpp's grammars on the small synthetic vocabulary (every byte
/// alone, some multi-byte and partial-UTF-8 tokens): cheap, many states.
#[test]
fn oracle_gbnf_synthetic_vocab() {
    let cfg = Config::from_env(24, 200);
    let mut jobs = Vec::new();
    for (name, text) in gbnf_sources() {
        if !filter_ok(&name) {
            continue;
        }
        jobs.push(Job {
            vocab_name: "synthetic".to_string(),
            vocab: Box::new(common::synthetic_engine),
            build: Box::new(move |v| gbnf_case(&name, &text, v)),
        });
    }
    run_all("synthetic-gbnf", jobs, cfg);
}

/// Every grammar with a vocabulary cut from its own language: tokens that
/// span grammar elements in every way the grammar allows.
#[test]
fn oracle_derived_vocab() {
    let cfg = Config::from_env(16, 200);
    let mut jobs = Vec::new();
    let sources: Vec<(String, Result<String, Grammar>)> = gbnf_sources()
        .into_iter()
        .map(|(n, t)| (n, Ok(t)))
        .chain(
            handmade()
                .into_iter()
                .filter(|h| h.2)
                .map(|(n, g, _)| (n, Err(g))),
        )
        .collect();
    for (name, src) in sources {
        if !filter_ok(&name) {
            continue;
        }
        let ir_of = {
            let src = src.clone();
            move || -> Grammar {
                match &src {
                    Ok(text) => cgram::gbnf::parse(text, "root", None)
                        .unwrap_or_else(|e| panic!("GBNF parse failed: {e}")),
                    Err(g) => g.clone(),
                }
            }
        };
        let seed = hash_str(&name);
        let vocab_ir = ir_of.clone();
        jobs.push(Job {
            vocab_name: format!("derived:{name}"),
            vocab: Box::new(move || derived_vocab(&vocab_ir(), seed, 1500)),
            build: Box::new(move |v| match &src {
                Ok(text) => gbnf_case(&name, text, v),
                Err(_) => ir_case(&name, ir_of(), v, true),
            }),
        });
    }
    run_all("derived", jobs, cfg);
}

/// Llama 3 (byte-level BPE, 128k tokens).
#[test]
fn oracle_llama3() {
    let cfg = Config::from_env(8, 100);
    run_all("llama3", real_jobs("llama3"), cfg);
}

/// SentencePiece with byte fallback (Mistral v1, 32k tokens).
#[test]
fn oracle_spm() {
    let cfg = Config::from_env(8, 100);
    run_all("spm", real_jobs("spm"), cfg);
}

/// Mistral tekken (byte-level BPE, 131k tokens, 1000 control tokens).
#[test]
fn oracle_tekken() {
    let cfg = Config::from_env(8, 100);
    run_all("tekken", real_jobs("tekken"), cfg);
}

/// Regular rules whose DFA would pass the lexeme size limit (2^(n+1)
/// states for `[ab]* "a" [ab]{n}`): compiled as parser rules instead
/// (llama.cpp accepts them), with exact masks, alone, repeated, inside
/// other rules and next to small lexemes. On the synthetic vocabulary and
/// on one cut from each grammar's language.
#[test]
fn oracle_oversized_lexemes() {
    let cfg = Config::from_env(12, 120);
    let sources: Vec<(String, String)> = [
        "root ::= [ab]* \"a\" [ab]{20}",
        "root ::= [ab]* \"a\" [ab]{24} \"z\"",
        "root ::= (\"x\" ([ab]* \"a\" [ab]{21})+ \"y\")* \"z\"",
        "root ::= big (\",\" big)*\nbig ::= [a-c]* \"b\" [a-c]{19} [0-9]+",
        "root ::= \"<\" (big | [ab]+) \">\" root?\nbig ::= ([ab]* \"a\" [ab]{20})?",
    ]
    .iter()
    .enumerate()
    .map(|(i, t)| (format!("oversized/{i}"), t.to_string()))
    .collect();
    let jobs = gbnf_jobs(sources, "synthetic", common::synthetic_engine);
    run_all("oversized", jobs, cfg);
}

/// Jobs for GBNF `sources`: each on the vocabulary `vocab` (named
/// `vocab_name`) and on one derived from its own language.
fn gbnf_jobs(
    sources: Vec<(String, String)>,
    vocab_name: &str,
    vocab: fn() -> Arc<Engine>,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (name, text) in sources {
        if !filter_ok(&name) {
            continue;
        }
        let (n2, t2) = (name.clone(), text.clone());
        jobs.push(Job {
            vocab_name: vocab_name.to_string(),
            vocab: Box::new(vocab),
            build: Box::new(move |v| gbnf_case(&n2, &t2, v)),
        });
        let seed = hash_str(&name);
        let t3 = text.clone();
        jobs.push(Job {
            vocab_name: format!("derived:{name}"),
            vocab: Box::new(move || {
                derived_vocab(&cgram::gbnf::parse(&t3, "root", None).unwrap(), seed, 1500)
            }),
            build: Box::new(move |v| gbnf_case(&name, &text, v)),
        });
    }
    jobs
}

/// Objects whose keys are read by several lexemes at once, one per
/// continuation, as JSON Schema `patternProperties` and `oneOf` make them:
/// "contains `a`", "no `a`", "`a` but no `b`", ... with and without an
/// "any key" among them, with escapes, with lexemes that read on after
/// the quote. A state whose unended strings another state of the mask
/// reads is walked only where it can end (`tokensets::covered`): its
/// masks stay exact, on Llama 3 and on vocabularies cut from each grammar.
#[test]
fn oracle_keys_read_by_several_lexemes() {
    let cfg = Config::from_env(24, 80);
    let member = |keys: &[&str]| -> String {
        let ends = [
            "root",
            "\"[\" root \"]\"",
            "\"(\" root \")\"",
            "\"<\" root \">\"",
            "\"!\" root",
            "\"?\" root",
            "[0-9]",
        ];
        keys.iter()
            .enumerate()
            .map(|(i, _)| format!("k{i} \":\" {}", ends[i % ends.len()]))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let grammar = |keys: &[&str]| -> String {
        let mut g = format!(
            "root ::= \"{{\" (member (\",\" member)*)? \"}}\"\nmember ::= {}\n",
            member(keys)
        );
        for (i, k) in keys.iter().enumerate() {
            g.push_str(&format!("k{i} ::= {k}\n"));
        }
        g
    };
    let plain = [
        r#""\"" [^"a]* "a" [^"]* "\"""#,
        r#""\"" [^"a]* "\"""#,
        r#""\"" [^"ab]* "a" [^"b]* "\"""#,
        r#""\"" [^"b]* "\"""#,
        r#""\"" [^"b]* "b" [^"]* "\"""#,
        r#""\"" [^"ab]* "\"""#,
    ];
    let any = r#""\"" [^"]* "\"""#;
    let escaped = [
        r#""\"" ([^"\\e] | "\\" ["\\nt])* "\"""#,
        r#""\"" ([^"\\] | "\\" ["\\nt])* "e" ([^"\\] | "\\" ["\\nt])* "\"""#,
        r#""\"" ([^"\\] | "\\" ["\\nt])* "\"""#,
    ];
    let read_on = [
        r#""\"" [^"a]* "a" [^"]* "\"" " "*"#,
        r#""\"" [^"a]* "\"" [ ]?"#,
        r#""\"" [a-z]* "\"""#,
        r#""\"" "x" [a-z]* "y" "\"""#,
    ];
    let with_any: Vec<&str> = plain.iter().copied().chain([any]).collect();
    let sources: Vec<(String, String)> = [
        ("partition", grammar(&plain)),
        ("with-any", grammar(&with_any)),
        ("escaped", grammar(&escaped)),
        ("read-on", grammar(&read_on)),
    ]
    .into_iter()
    .map(|(n, g)| (format!("keys/{n}"), g))
    .collect();
    let jobs = gbnf_jobs(sources, "llama3", || common::real_engine("llama3"));
    run_all("keys", jobs, cfg);
}

/// Objects in several variants that each admit any other name than
/// their own ("any key but `ab`" and so on, as `oneOf` branches without
/// `additionalProperties: false` make them): right after `{"` the keys of
/// all variants read the same tokens, share one token set
/// (`Engine::walked_token_sets`) and have their exits (`":`, `":{`, ...)
/// walked from all their callers at once (`Matcher::fill_mask`). Masks
/// stay exact, inside arrays of such objects (where later elements find
/// the walks of the first kept) and on vocabularies cut from the grammar
/// (where tokens such as `ab":` tell the keys apart).
#[test]
fn oracle_object_variants_admitting_other_names() {
    let cfg = Config::from_env(16, 80);
    // A JSON string other than `name` (two letters), as a lexeme.
    let other_than = |name: &str| {
        let (a, b) = (&name[..1], &name[1..]);
        format!(
            "\"\\\"\" ( [^\"{a}] [^\"]* | \"{a}\" ( [^\"{b}] [^\"]* )? | \"{name}\" [^\"]+ )? \"\\\"\""
        )
    };
    let names = ["ab", "ac", "ba", "bc", "ca", "cb"];
    let mut g = String::from(
        "root ::= \"[\" ( o ( \",\" o )* )? \"]\"\n\
         v ::= [0-9]+ | \"\\\"\" [a-z]* \"\\\"\" | \"{\" \"}\" | \"[\" ( v ( \",\" v )* )? \"]\"\n",
    );
    g.push_str(&format!(
        "o ::= {}\n",
        (0..names.len())
            .map(|i| format!("o{i}"))
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    for (i, name) in names.iter().enumerate() {
        g.push_str(&format!(
            "o{i} ::= \"{{\" ( m{i} ( \",\" m{i} )* )? \"}}\"\n\
             m{i} ::= \"\\\"{name}\\\":\" \"true\" | n{i} \":\" v\n\
             n{i} ::= {}\n",
            other_than(name)
        ));
    }
    let sources = vec![("variants/other-names".to_string(), g)];
    let jobs = gbnf_jobs(sources, "llama3", || common::real_engine("llama3"));
    run_all("variants", jobs, cfg);
}

/// Rules called from many parser states, whose token sets those states
/// look up rather than walk (`tokensets::parser_walk`): short rules that
/// tokens read several of, nullable ones between them, objects whose
/// members many states call, rules that call others at their start, and
/// left-recursive rules (walked in place, directly and behind a rule that
/// is not). Masks stay exact on Llama 3 and on vocabularies cut from each
/// grammar.
#[test]
fn oracle_rules_called_from_many_states() {
    let cfg = Config::from_env(16, 60);
    let repeat = |item: &str, sep: &str, n: usize| vec![item; n].join(sep);
    let sources: Vec<(String, String)> = [
        (
            "short",
            format!(
                "root ::= {} (\",\" x)*\nx ::= \"a\" | \"b\" \"c\" | \"cab\"\nn ::= [ ]*\n",
                repeat("x n", " ", 10)
            ),
        ),
        (
            "objects",
            [
                "root ::= o1 | o2 | o3 | o4",
                "o1 ::= \"{\" ws (ka | kb) (\",\" ws (kb | kc))* ws \"}\"",
                "o2 ::= \"{\" ws (kb | kc) (\",\" ws (ka | kc))* ws \"}\"",
                "o3 ::= \"{\" ws (ka | kc) (\",\" ws (ka | kb | kc))* ws \"}\"",
                "o4 ::= \"{\" ws ka \",\" ws kb \",\" ws kc \",\" ws ka ws \"}\"",
                "ka ::= \"\\\"a\\\"\" ws \":\" ws v",
                "kb ::= \"\\\"b\\\"\" ws \":\" ws v",
                "kc ::= \"\\\"\" [a-z]+ \"\\\"\" ws \":\" ws v",
                "v ::= [0-9]+ | \"\\\"\" [a-z ]* \"\\\"\" | \"true\" | \"[\" ws (v (\",\" ws v)*)? \"]\"",
                "ws ::= [ \\n]?",
            ]
            .join("\n"),
        ),
        (
            "nested-starts",
            format!(
                "root ::= {}\nr1 ::= r2 \"!\" | \"?\"\nr2 ::= r3 r3 | \"-\"\nr3 ::= [a-c] | \"(\" r1 \")\"\n",
                repeat("r1", " \";\" ", 9)
            ),
        ),
    ]
    .into_iter()
    .map(|(n, g)| (format!("callers/{n}"), g))
    .collect();
    let mut jobs = gbnf_jobs(sources, "llama3", || common::real_engine("llama3"));
    // Left recursion: the vocabulary cut from the grammar comes from its
    // right-recursive twin (same language), which the reference's stack
    // machine can generate strings of.
    let rules = |e: &str, a: &str| {
        format!(
            "root ::= {}\nw ::= e \"=\"\n{e}\nf ::= [0-9]+ | \"(\" e \")\"\n{a}\nb ::= a \"z\" | \"w\"\n",
            ["e \";\" t \";\" f \";\" w \";\" a \";\" b"; 9].join(" ")
        )
    };
    let left = rules(
        "e ::= e \"+\" t | t\nt ::= t \"*\" f | f",
        "a ::= b \"x\" | \"y\"",
    );
    let right = rules(
        "e ::= t (\"+\" t)*\nt ::= f (\"*\" f)*",
        "a ::= (\"wx\" | \"y\") (\"zx\")*",
    );
    let name = "callers/left-recursive";
    if filter_ok(name) {
        let text = left.clone();
        jobs.push(Job {
            vocab_name: "llama3".to_string(),
            vocab: Box::new(|| common::real_engine("llama3")),
            build: Box::new(move |v| gbnf_case(name, &text, v)),
        });
        let seed = hash_str(name);
        jobs.push(Job {
            vocab_name: format!("derived:{name}"),
            vocab: Box::new(move || {
                derived_vocab(
                    &cgram::gbnf::parse(&right, "root", None).unwrap(),
                    seed,
                    1500,
                )
            }),
            build: Box::new(move |v| gbnf_case(name, &left, v)),
        });
    }
    run_all("callers", jobs, cfg);
}
