//! Lazy matchers: free text until a trigger fires, then the grammar.
//!
//! This is llama.cpp's lazy grammar sampler as a cgram matcher (see
//! [`crate::trigger`] for what fires and where the grammar starts). While
//! *awaiting*, every token is allowed and its text is kept; a token
//! trigger starts the grammar with that token, a pattern trigger replays
//! the text from the grammar's start through the grammar: the token that
//! straddles the start gives only its tail bytes, the tokens after it are
//! fed as tokens. From then on the matcher is the grammar's.
//!
//! Differences from llama.cpp, all where llama.cpp throws an exception
//! from `accept` (which takes llama-server down) or aborts:
//!
//! - A token that would fire a trigger into text the grammar refuses is not
//!   in the mask while awaiting (llama.cpp allows it and then throws), nor is
//!   a trigger token the grammar cannot start with. Given to
//!   [`LazyMatcher::accept`] anyway, it is rejected and nothing changes.
//!   Checking costs a search over the end of the output per token that
//!   could fire (over all of it for patterns of unbounded length); when
//!   the checks of one mask need more than [`MAX_FIRE_CHECK_WORK`] search
//!   steps, none is made: every token that could fire a pattern is
//!   allowed (llama.cpp's behaviour; `accept` still rejects a refused
//!   one). All or none, so that a mask depends on the state alone, the
//!   same after a rollback or in a clone (the work is a function of the
//!   state; which tokens a partial check reached was not).
//! - End-of-sequence while awaiting ends the sequence (llama.cpp reads its
//!   text as output that could fire a trigger).
//!
//! Every accepted token (or text) is one step for [`LazyMatcher::rollback`],
//! the trigger step included: rolling it back returns to awaiting, with the
//! output as it was before that token.

use std::sync::Arc;

use super::Matcher;
use crate::error::{Error, ErrorKind, Result};
use crate::tokensets::CompiledGrammar;
use crate::trigger::{Detector, Fired, Triggers};

/// Most work (steps of the search for where a trigger's match starts,
/// see [`Triggers::search_cost`]) spent checking the tokens that could
/// fire, for one awaiting mask: about a millisecond. Past it no token is
/// checked; a detector state whose checks went past it is remembered, and
/// later masks in the same state, with at least as long an output, skip
/// them at once.
pub const MAX_FIRE_CHECK_WORK: usize = 1 << 18;

/// A token id that stands for raw text given to `accept_bytes`.
const TEXT: u32 = u32::MAX;

/// The output while awaiting, as far as one step goes.
#[derive(Clone, Copy, Debug)]
struct Mark {
    bytes: u32,
    chars: u32,
    pieces: u32,
}

#[derive(Clone, Debug)]
enum Step {
    /// A token read while awaiting: what was there before it.
    Free(Mark, Detector),
    /// The token that fired a trigger: what was there before it.
    Fire(Mark, Detector),
    /// A step of the grammar's.
    Grammar,
    /// End-of-sequence while awaiting.
    End,
}

/// A matcher that waits for a trigger before it constrains.
#[derive(Clone)]
pub struct LazyMatcher {
    grammar: Matcher,
    triggers: Arc<Triggers>,
    detector: Detector,
    /// What fired, once something did.
    fired: Option<Fired>,
    /// End-of-sequence was accepted while awaiting.
    ended: bool,
    /// The output while awaiting (and the token that fired).
    bytes: Vec<u8>,
    /// Its characters as the patterns read them, and where each starts.
    chars: Vec<u32>,
    char_starts: Vec<u32>,
    /// `(token or TEXT, end offset in bytes)` of each piece of output.
    pieces: Vec<(u32, u32)>,
    steps: Vec<Step>,
    /// A detector state whose checks went past [`MAX_FIRE_CHECK_WORK`],
    /// and the output's length in characters then. The checks of a state
    /// only cost more as the output grows, so they go past it again in the
    /// same state with at least as long an output (and not always with a
    /// shorter one: after a rollback).
    unchecked: Option<(Detector, usize)>,
}

impl LazyMatcher {
    /// A lazy matcher for `grammar`, awaiting `triggers` (compiled for the
    /// grammar's vocabulary).
    pub fn new(grammar: Arc<CompiledGrammar>, triggers: Arc<Triggers>) -> Result<LazyMatcher> {
        if !Arc::ptr_eq(grammar.engine(), triggers.engine()) {
            return Err(Error::invalid(
                "the triggers were compiled for another vocabulary than the grammar",
            ));
        }
        let detector = triggers.detector();
        Ok(LazyMatcher {
            grammar: Matcher::new(grammar),
            triggers,
            detector,
            fired: None,
            ended: false,
            bytes: Vec::new(),
            chars: Vec::new(),
            char_starts: Vec::new(),
            pieces: Vec::new(),
            steps: Vec::new(),
            unchecked: None,
        })
    }

    pub fn grammar(&self) -> &Arc<CompiledGrammar> {
        self.grammar.grammar()
    }

    /// What fired, or `None` while awaiting.
    pub fn fired(&self) -> Option<Fired> {
        self.fired
    }

    fn mark(&self) -> Mark {
        Mark {
            bytes: self.bytes.len() as u32,
            chars: self.chars.len() as u32,
            pieces: self.pieces.len() as u32,
        }
    }

    fn restore(&mut self, mark: Mark, detector: Detector) {
        self.bytes.truncate(mark.bytes as usize);
        self.chars.truncate(mark.chars as usize);
        self.char_starts.truncate(mark.chars as usize);
        self.pieces.truncate(mark.pieces as usize);
        self.detector = detector;
    }

    /// Back to the start: awaiting, nothing read.
    pub fn reset(&mut self) {
        self.grammar.reset();
        self.detector = self.triggers.detector();
        self.fired = None;
        self.ended = false;
        self.bytes.clear();
        self.chars.clear();
        self.char_starts.clear();
        self.pieces.clear();
        self.steps.clear();
        self.unchecked = None;
    }

    /// End-of-sequence is allowed now: always while awaiting, else when the
    /// grammar's output is complete.
    pub fn is_accepting(&self) -> bool {
        match self.fired {
            None => !self.ended,
            Some(_) => self.grammar.is_accepting(),
        }
    }

    pub fn is_terminated(&self) -> bool {
        match self.fired {
            None => self.ended,
            Some(_) => self.grammar.is_terminated(),
        }
    }

    /// Steps that [`Self::rollback`] can undo.
    pub fn num_tokens(&self) -> usize {
        self.steps.len()
    }

    /// Advances on `token`; on error nothing changes.
    pub fn accept(&mut self, token: u32) -> Result<()> {
        let engine = self.triggers.engine().clone();
        if token as usize >= engine.vocab().len() {
            return Err(Error::invalid(format!(
                "token {token} is out of range (vocabulary size {})",
                engine.vocab().len()
            )));
        }
        if self.fired.is_some() {
            self.grammar.accept(token)?;
            self.steps.push(Step::Grammar);
            return Ok(());
        }
        if self.ended {
            return Err(Error::new(
                ErrorKind::Terminated,
                "the matcher has accepted end-of-sequence and takes no more tokens",
            ));
        }
        if engine.vocab().is_eos(token) {
            self.ended = true;
            self.steps.push(Step::End);
            return Ok(());
        }
        if let Some(index) = self.triggers.token_trigger(token) {
            let (mark, detector) = (self.mark(), self.detector.clone());
            self.grammar.accept(token).map_err(|e| {
                Error::new(
                    ErrorKind::TokenRejected,
                    format!(
                        "token {token} is trigger {index}, but the grammar cannot start with it: {}",
                        e.message()
                    ),
                )
            })?;
            self.fired = Some(Fired {
                index,
                start: self.bytes.len(),
            });
            self.steps.push(Step::Fire(mark, detector));
            return Ok(());
        }
        self.read(token, engine.vocab().token_bytes(token))
    }

    /// Advances on raw text (one step, fed to the grammar as bytes once
    /// triggered); on error nothing changes.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        if self.fired.is_some() {
            self.grammar.accept_bytes(bytes)?;
            self.steps.push(Step::Grammar);
            return Ok(());
        }
        if self.ended {
            return Err(Error::new(
                ErrorKind::Terminated,
                "the matcher has accepted end-of-sequence and takes no more text",
            ));
        }
        self.read(TEXT, bytes)
    }

    /// Appends a piece of free output and fires a pattern if one matches.
    fn read(&mut self, token: u32, text: &[u8]) -> Result<()> {
        let (mark, before) = (self.mark(), self.detector.clone());
        self.append(token, text);
        let Some(k) = self.triggers.fired_pattern(&self.detector) else {
            self.steps.push(Step::Free(mark, before));
            return Ok(());
        };
        let mut grammar = self.grammar.clone();
        match self.replay(k, mark.chars as usize, &mut grammar) {
            Ok(fired) => {
                self.grammar = grammar;
                self.fired = Some(fired);
                self.steps.push(Step::Fire(mark, before));
                Ok(())
            }
            Err(e) => {
                self.restore(mark, before);
                Err(e)
            }
        }
    }

    fn append(&mut self, token: u32, text: &[u8]) {
        let base = self.bytes.len();
        self.bytes.extend_from_slice(text);
        let (chars, starts) = (&mut self.chars, &mut self.char_starts);
        self.triggers.feed(&mut self.detector, text, base, |c, at| {
            chars.push(c);
            starts.push(at as u32);
        });
        self.pieces.push((token, self.bytes.len() as u32));
    }

    /// Pattern `k` matches the output, whose first `known` characters held
    /// no match: feeds `grammar` (at its start) the output from where the
    /// grammar starts.
    fn replay(&self, k: usize, known: usize, grammar: &mut Matcher) -> Result<Fired> {
        let at_char = self.triggers.grammar_start(k, &self.chars, known)?;
        let start = self
            .char_starts
            .get(at_char)
            .map_or(self.bytes.len(), |&s| s as usize);
        let index = self.triggers.pattern_index(k);
        let mut piece_start = 0usize;
        for &(token, end) in &self.pieces {
            let (from, end) = (piece_start, end as usize);
            piece_start = end;
            if end <= start {
                continue;
            }
            let fed = if from < start || token == TEXT {
                grammar.accept_bytes(&self.bytes[from.max(start)..end])
            } else {
                grammar.accept(token)
            };
            fed.map_err(|e| {
                Error::new(
                    ErrorKind::TokenRejected,
                    format!(
                        "trigger {index} ({:?}) fires, but the grammar does not accept the text \
                         from byte {start} of the output, {:?}: {}",
                        self.triggers.pattern_source(k),
                        String::from_utf8_lossy(&self.bytes[start..]),
                        e.message()
                    ),
                )
            })?;
        }
        Ok(Fired { index, start })
    }

    /// Undoes the last `n` steps.
    pub fn rollback(&mut self, n: usize) -> Result<()> {
        if n > self.steps.len() {
            return Err(Error::invalid(format!(
                "cannot roll back {n} tokens: only {} were accepted",
                self.steps.len()
            )));
        }
        let mut grammar_steps = 0;
        for _ in 0..n {
            match self.steps.pop().expect("counted") {
                Step::Grammar => grammar_steps += 1,
                Step::End => self.ended = false,
                Step::Free(mark, detector) => self.restore(mark, detector),
                Step::Fire(mark, detector) => {
                    grammar_steps = 0;
                    self.grammar.reset();
                    self.fired = None;
                    self.restore(mark, detector);
                }
            }
        }
        if grammar_steps > 0 {
            self.grammar.rollback(grammar_steps)?;
        }
        Ok(())
    }

    /// The allowed next tokens (see [`Matcher::fill_mask`]). While
    /// awaiting: every token but those that would fire a trigger the
    /// grammar then refuses.
    pub fn fill_mask(&mut self, mask: &mut [u32]) -> Result<()> {
        if self.fired.is_some() {
            return self.grammar.fill_mask(mask);
        }
        let engine = self.triggers.engine().clone();
        let words = engine.vocab().mask_words();
        if mask.len() < words {
            return Err(Error::invalid(format!(
                "the mask has {} words, the vocabulary needs {words}",
                mask.len()
            )));
        }
        let mask = &mut mask[..words];
        if self.ended {
            mask.fill(0);
            return Ok(());
        }
        mask.fill(u32::MAX);
        let n = engine.vocab().len();
        if !n.is_multiple_of(32) {
            mask[words - 1] = (1u32 << (n % 32)) - 1;
        }
        let mut refused = Vec::new();
        for t in self.triggers.trigger_tokens() {
            let mut g = self.grammar.clone();
            if g.accept(t).is_err() {
                refused.push(t);
            }
        }
        let skip = self
            .unchecked
            .as_ref()
            .is_some_and(|(d, len)| d.same_state(&self.detector) && self.chars.len() >= *len);
        let mut candidates: Vec<u32> = Vec::new();
        if !skip {
            for k in 0..self.triggers.num_patterns() {
                candidates.extend_from_slice(&self.triggers.fire_set(k, &self.detector));
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut work = 0usize;
        let mut fire_refused = Vec::new();
        for t in candidates {
            if self.triggers.token_trigger(t).is_some() {
                continue;
            }
            match self.would_fire_refused(t, &mut work) {
                Some(true) => fire_refused.push(t),
                Some(false) => {}
                None => {
                    // Over the budget: no token is checked (see the
                    // module docs), not just those after this one.
                    self.unchecked = Some((self.detector.clone(), self.chars.len()));
                    fire_refused.clear();
                    break;
                }
            }
        }
        refused.extend(fire_refused);
        for t in refused {
            mask[(t >> 5) as usize] &= !(1 << (t & 31));
        }
        Ok(())
    }

    /// Whether reading token `t` now would fire a trigger whose replay the
    /// grammar refuses; `None` once `work` is past the budget.
    fn would_fire_refused(&mut self, t: u32, work: &mut usize) -> Option<bool> {
        let engine = self.triggers.engine().clone();
        let (mark, before) = (self.mark(), self.detector.clone());
        self.append(t, engine.vocab().token_bytes(t));
        let verdict = match self.triggers.fired_pattern(&self.detector) {
            None => Some(false),
            Some(k) => {
                let known = mark.chars as usize;
                *work += self.triggers.search_cost(k, self.chars.len(), known);
                if *work > MAX_FIRE_CHECK_WORK {
                    None
                } else {
                    let mut grammar = self.grammar.clone();
                    Some(self.replay(k, known, &mut grammar).is_err())
                }
            }
        };
        self.restore(mark, before);
        verdict
    }

    /// Tokens the grammar forces next (none while awaiting).
    pub fn forced_tokens(&mut self, cap: usize) -> Result<Vec<u32>> {
        match self.fired {
            None => Ok(Vec::new()),
            Some(_) => self.grammar.forced_tokens(cap),
        }
    }

    /// Approximate heap bytes.
    pub fn memory(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.grammar.memory()
            + self.bytes.capacity()
            + self.chars.capacity() * 4
            + self.char_starts.capacity() * 4
            + self.pieces.capacity() * 8
            + self.steps.capacity() * std::mem::size_of::<Step>()
    }
}
