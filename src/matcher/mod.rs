//! The matcher runtime: one per sequence.
//!
//! A [`Matcher`] holds the Earley chart of the output so far (one item set
//! per byte), the positions where each accepted token ended (for
//! rollback), and whether end-of-sequence was accepted. Masks are the union
//! of the cached per-state token sets ([`crate::tokensets`]) of the current
//! set's items, plus the tokens that leave a rule mid-token, checked
//! against the real callers: both come from the token-set layer's face
//! ([`crate::tokensets::info_for`], [`crate::tokensets::SequenceExits`]),
//! and the chart's steps from the automaton
//! ([`crate::compile::chart`]).

pub mod lazy;

use std::sync::Arc;

use crate::compile::chart::{Chart, Item, Scratch, NO_ORIGIN};
use crate::tokensets::work;
use crate::tokensets::{
    covered_lexeme_states, ending_info_for, info_for, MaskFill, SeenSets, SequenceExits,
    UnknownExits,
};
pub use lazy::LazyMatcher;

use crate::error::{Error, ErrorKind, Result};
use crate::tokensets::CompiledGrammar;

/// Sets the bits of `tokens` in `mask`.
fn set_bits(mask: &mut [u32], tokens: &[u32]) {
    for &t in tokens {
        mask[(t >> 5) as usize] |= 1 << (t & 31);
    }
}

/// Walks a compiled grammar one token at a time.
pub struct Matcher {
    grammar: Arc<CompiledGrammar>,
    chart: Chart,
    /// What this sequence's masks learned about exits.
    exits: SequenceExits,
    /// Number of chart sets after each accepted step.
    step_ends: Vec<u32>,
    /// End-of-sequence was accepted (at this many steps).
    terminated: bool,
    scratch: Scratch,
}

impl Clone for Matcher {
    fn clone(&self) -> Self {
        Matcher {
            grammar: self.grammar.clone(),
            chart: self.chart.clone(),
            exits: self.exits.clone(),
            step_ends: self.step_ends.clone(),
            terminated: self.terminated,
            scratch: Scratch::default(),
        }
    }
}

impl Matcher {
    pub fn new(grammar: Arc<CompiledGrammar>) -> Matcher {
        let mut m = Matcher {
            grammar,
            chart: Chart::new(),
            exits: SequenceExits::default(),
            step_ends: Vec::new(),
            terminated: false,
            scratch: Scratch::default(),
        };
        m.reset();
        m
    }

    pub fn grammar(&self) -> &Arc<CompiledGrammar> {
        &self.grammar
    }

    /// Back to the start state.
    pub fn reset(&mut self) {
        self.chart = Chart::new();
        self.exits.clear_positions();
        self.step_ends.clear();
        self.terminated = false;
        let g = self.grammar.clone();
        let mut items = vec![Item {
            state: g.automaton().start_state,
            origin: NO_ORIGIN,
        }];
        let chart = &self.chart;
        let closure = g.automaton().closure(
            &mut items,
            0,
            |o| chart.set(o as usize),
            &mut self.scratch.seen,
        );
        work::charge(closure.work);
        self.chart.push_set(&items);
    }

    /// End-of-sequence is allowed now (the output so far is complete).
    pub fn is_accepting(&self) -> bool {
        !self.terminated && self.accepting_now()
    }

    fn accepting_now(&self) -> bool {
        let g = &self.grammar;
        self.chart
            .last()
            .iter()
            .any(|it| it.origin == NO_ORIGIN && g.automaton().is_final(it.state))
    }

    /// EOS was accepted, or nothing at all can follow.
    pub fn is_terminated(&self) -> bool {
        let g = &self.grammar;
        self.terminated
            || !self
                .chart
                .last()
                .iter()
                .any(|it| g.automaton().can_scan(it.state))
    }

    /// Number of steps (`accept` and `accept_bytes` calls that succeeded)
    /// that [`rollback`](Self::rollback) can undo.
    pub fn num_tokens(&self) -> usize {
        self.step_ends.len()
    }

    /// Advances on `token`; on error the state is unchanged.
    pub fn accept(&mut self, token: u32) -> Result<()> {
        let g = self.grammar.clone();
        let vocab = g.engine().vocab();
        if token as usize >= vocab.len() {
            return Err(Error::invalid(format!(
                "token {token} is out of range (vocabulary size {})",
                vocab.len()
            )));
        }
        if self.terminated {
            return Err(Error::new(
                ErrorKind::Terminated,
                "the matcher has accepted end-of-sequence and takes no more tokens",
            ));
        }
        if vocab.is_eos(token) {
            if !self.accepting_now() {
                return Err(Error::new(
                    ErrorKind::TokenRejected,
                    format!(
                        "end-of-sequence token {token} is not allowed: the output is not complete"
                    ),
                ));
            }
            self.terminated = true;
            self.step_ends.push(self.chart.num_sets() as u32);
            return Ok(());
        }
        let bytes: &[u8] = if vocab.is_special(token) {
            &[]
        } else {
            vocab.token_bytes(token)
        };
        let start_sets = self.chart.num_sets();
        let mut token_kernel = Vec::new();
        if g.automaton().has_token_edges {
            g.automaton()
                .scan_token(self.chart.last(), token, &mut token_kernel);
        }
        let ok = if bytes.is_empty() {
            // A special token (or a token with no text) is one position.
            self.push_step(&mut token_kernel)
        } else {
            let mut alive = true;
            for (k, &b) in bytes.iter().enumerate() {
                let mut kernel = std::mem::take(&mut self.scratch.kernel);
                kernel.clear();
                if alive {
                    g.automaton().scan_byte(self.chart.last(), b, &mut kernel);
                }
                if k + 1 == bytes.len() {
                    kernel.extend_from_slice(&token_kernel);
                }
                alive = self.push_step(&mut kernel);
                self.scratch.kernel = kernel;
                if !alive && token_kernel.is_empty() {
                    break;
                }
            }
            alive
        };
        if !ok {
            self.chart.truncate(start_sets);
            return Err(self.rejection(token));
        }
        self.step_ends.push(self.chart.num_sets() as u32);
        Ok(())
    }

    fn rejection(&self, token: u32) -> Error {
        let vocab = self.grammar.engine().vocab();
        Error::new(
            ErrorKind::TokenRejected,
            format!(
                "token {token} ({:?}) is not allowed here",
                String::from_utf8_lossy(vocab.token_bytes(token))
            ),
        )
    }

    /// Closes `kernel` into a new chart set; pushes an empty set and
    /// returns false when it is empty (positions must stay aligned).
    fn push_step(&mut self, kernel: &mut Vec<Item>) -> bool {
        let g = &self.grammar;
        let pos = self.chart.num_sets() as u32;
        let chart = &self.chart;
        if !kernel.is_empty() {
            let closure = g.automaton().closure(
                kernel,
                pos,
                |o| chart.set(o as usize),
                &mut self.scratch.seen,
            );
            work::charge(closure.work);
        }
        self.chart.push_set(kernel);
        !kernel.is_empty()
    }

    /// Advances on raw text bytes (no token identity; counts as one step
    /// for rollback); on error the state is unchanged.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        if self.terminated {
            return Err(Error::new(
                ErrorKind::Terminated,
                "the matcher has accepted end-of-sequence and takes no more text",
            ));
        }
        let g = self.grammar.clone();
        let start_sets = self.chart.num_sets();
        for (k, &b) in bytes.iter().enumerate() {
            let mut kernel = std::mem::take(&mut self.scratch.kernel);
            kernel.clear();
            g.automaton().scan_byte(self.chart.last(), b, &mut kernel);
            let alive = self.push_step(&mut kernel);
            self.scratch.kernel = kernel;
            if !alive {
                self.chart.truncate(start_sets);
                return Err(Error::new(
                    ErrorKind::TokenRejected,
                    format!(
                        "the text is not allowed here: byte {k} ({:?}) cannot follow {:?}",
                        b as char,
                        String::from_utf8_lossy(&bytes[..k])
                    ),
                ));
            }
        }
        self.step_ends.push(self.chart.num_sets() as u32);
        Ok(())
    }

    /// Undoes the last `n` steps (tokens or texts, end-of-sequence
    /// included).
    pub fn rollback(&mut self, n: usize) -> Result<()> {
        if n > self.step_ends.len() {
            return Err(Error::invalid(format!(
                "cannot roll back {n} tokens: only {} were accepted",
                self.step_ends.len()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        let keep = self.step_ends.len() - n;
        self.step_ends.truncate(keep);
        let sets = self.step_ends.last().map_or(1, |&e| e as usize);
        self.chart.truncate(sets);
        self.exits.truncate_positions(sets);
        self.terminated = false;
        Ok(())
    }

    /// Fills `mask` (at least `ceil(vocab/32)` words): bit `t % 32` of word
    /// `t / 32` is set iff token `t` is allowed next. Words past the
    /// vocabulary are cleared too. Fails with a limit error (the mask's
    /// contents then undefined: the C layer clears it) when the grammar's
    /// `max_mask_steps` run out.
    pub fn fill_mask(&mut self, mask: &mut [u32]) -> Result<()> {
        let steps = self.grammar.automaton().max_mask_steps;
        let (result, exhausted) = work::with_budget(steps, || self.fill_mask_within(mask));
        if exhausted {
            return Err(Error::limit(format!(
                "the mask needs more than {steps} parser steps (max_mask_steps)"
            )));
        }
        result
    }

    fn fill_mask_within(&mut self, mask: &mut [u32]) -> Result<()> {
        let accepting = self.accepting_now();
        let Matcher {
            grammar,
            chart,
            exits,
            terminated,
            ..
        } = self;
        let g: &CompiledGrammar = grammar;
        let vocab = g.engine().vocab();
        let words = vocab.mask_words();
        if mask.len() < words {
            return Err(Error::invalid(format!(
                "the mask has {} words, the vocabulary needs {words}",
                mask.len()
            )));
        }
        if *terminated {
            mask.fill(0);
            return Ok(());
        }
        let mut mask = MaskFill::new(mask);
        let automaton = g.automaton();
        let pos = (chart.num_sets() - 1) as u32;
        let set = chart.last();
        // Token sets already in the mask: items of one object in many
        // states share their key lexemes' (large) sets.
        let mut done = SeenSets::default();
        let mut unknown = UnknownExits::default();
        // Lexeme states whose tokens others put in the mask, but where
        // they end: walked only there while their own sets are not known.
        let covered = covered_lexeme_states(
            g,
            set.iter()
                .filter(|it| {
                    it.origin != pos
                        && !automaton.is_parser_state(it.state)
                        && automaton.can_scan(it.state)
                })
                .map(|it| it.state),
        );
        for it in set {
            // Predicted items are covered by the walks of their predictors.
            if it.origin == pos {
                continue;
            }
            if automaton.is_parser_state(it.state) {
                if automaton.byte_edges(it.state).is_empty()
                    && automaton.call_edges(it.state).is_empty()
                {
                    continue;
                }
            } else if !automaton.can_scan(it.state) {
                continue;
            }
            let info = if covered.contains(&it.state) {
                ending_info_for(g, it.state)
            } else {
                info_for(g, it.state)
            };
            info.or_inside_once(&mut mask, &mut done);
            exits.exits_for(g, chart, *it, info, &mut mask, &mut unknown);
        }
        // Items whose exit tokens no cache held: walked after the others.
        exits.add_unknown_exits(g, chart, unknown, &mut mask);
        if automaton.has_token_edges {
            for it in set {
                if automaton.is_parser_state(it.state) {
                    for &(ts, _) in automaton.token_edges(it.state) {
                        mask.add(&g.token_set_lists[ts as usize]);
                    }
                }
            }
        }
        let words = mask.words();
        if accepting {
            set_bits(words, vocab.eos_tokens());
        }
        Ok(())
    }

    /// Tokens whose text the grammar forces next (jump-forward): while
    /// exactly one token is allowed and the output is not complete, that
    /// token; at most `cap`. The matcher itself does not move.
    pub fn forced_tokens(&mut self, cap: usize) -> Result<Vec<u32>> {
        let mut m = self.clone();
        let mut out = Vec::new();
        let mut mask = vec![0u32; self.grammar.engine().vocab().mask_words()];
        while out.len() < cap && !m.is_terminated() && !m.is_accepting() {
            m.fill_mask(&mut mask)?;
            let mut only = None;
            let mut count = 0;
            for (w, &bits) in mask.iter().enumerate() {
                if bits != 0 {
                    count += bits.count_ones();
                    only = Some(w as u32 * 32 + bits.trailing_zeros());
                    if count > 1 {
                        break;
                    }
                }
            }
            match (count, only) {
                (1, Some(t)) => {
                    m.accept(t)?;
                    out.push(t);
                }
                _ => break,
            }
        }
        Ok(out)
    }

    /// Approximate heap bytes of this matcher.
    pub fn memory(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.chart.memory()
            + self.step_ends.capacity() * 4
            + self.exits.memory()
    }
}

/// A matcher as the C API hands them out: constrained from the first token
/// ([`Matcher`]) or lazy ([`LazyMatcher`]). Each method is the one of the
/// matcher inside.
#[derive(Clone)]
pub enum AnyMatcher {
    Eager(Matcher),
    Lazy(Box<LazyMatcher>),
}

macro_rules! each {
    ($self:expr, $m:ident => $body:expr) => {
        match $self {
            AnyMatcher::Eager($m) => $body,
            AnyMatcher::Lazy($m) => $body,
        }
    };
}

impl AnyMatcher {
    pub fn grammar(&self) -> &Arc<CompiledGrammar> {
        each!(self, m => m.grammar())
    }

    pub fn accept(&mut self, token: u32) -> Result<()> {
        each!(self, m => m.accept(token))
    }

    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        each!(self, m => m.accept_bytes(bytes))
    }

    pub fn fill_mask(&mut self, mask: &mut [u32]) -> Result<()> {
        each!(self, m => m.fill_mask(mask))
    }

    pub fn rollback(&mut self, n: usize) -> Result<()> {
        each!(self, m => m.rollback(n))
    }

    pub fn reset(&mut self) {
        each!(self, m => m.reset())
    }

    pub fn num_tokens(&self) -> usize {
        each!(self, m => m.num_tokens())
    }

    pub fn is_accepting(&self) -> bool {
        each!(self, m => m.is_accepting())
    }

    pub fn is_terminated(&self) -> bool {
        each!(self, m => m.is_terminated())
    }

    pub fn forced_tokens(&mut self, cap: usize) -> Result<Vec<u32>> {
        each!(self, m => m.forced_tokens(cap))
    }

    pub fn memory(&self) -> usize {
        each!(self, m => m.memory())
    }
}
