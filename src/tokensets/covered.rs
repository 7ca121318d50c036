//! Lexeme states whose tokens other states of the same mask allow anyway,
//! except where the lexeme ends ([`covered_lexeme_states`]): while such a
//! state's token sets are not known yet, the mask walks only the trie
//! subtrees where it can end.
//!
//! Keys constrained by patterns are the common case. After `{"`, an object
//! with `patternProperties` (and any `not` or `oneOf` over them) has one
//! key lexeme per combination of patterns: "contains `a`", "no `a`",
//! "contains `a` but no `b`", ... A state that refuses a common letter
//! reads most of the vocabulary but must look below every subtree holding
//! that letter: a walk of 1-2 ms on Llama 3, for tokens that "contains
//! `a`" (which reads any text until the key is closed) already puts in
//! the mask. What only the narrower state allows lies where a key can be
//! closed: its exits (`":`) and the tokens ending in its closing quote, all
//! below the few subtrees holding a quote (see
//! `lexeme_walk::lexeme_ending_info`).
//!
//! A state `x` is covered by a state `y` of the same mask when `y` reads
//! every string `x` reads without ending
//! (`Pairing::reads_unended_within` on their DFAs), `y`'s inside tokens go
//! into the mask whole, and `y` is not itself covered. The answers are
//! kept per grammar. A state whose token sets are already known is never
//! covered: a lookup costs less than the test. Nor is one whose own walk
//! would be short ([`walks_much`]): a key that leaves its listed names
//! after one byte shares "any string"'s walks beyond their first letters,
//! and testing its covers (a product of two DFAs of a hundred states,
//! with their escapes) costs more than walking it.

use super::cached::{ending_info_known, lexeme_info_known};
use super::grammar::CompiledGrammar;
use super::lexeme_walk::own_walk_is_long;
use crate::compile::lexeme::{Pairing, DEAD};

/// Most transitions one test of a pair of states follows; a pair that
/// needs more counts as not covered.
const COVER_TEST_MAX_WORK: usize = 100_000;

/// Most transitions the tests of one mask follow in all; past them, the
/// states left are walked whole (the next masks test on).
const MASK_COVER_MAX_WORK: usize = 2_000_000;

/// Most lexeme states of one mask compared: a mask with more walks each
/// whole (the tests and lookups grow with their square).
const MAX_COVER_CANDIDATES: usize = 256;

/// Most pair answers a grammar keeps; a new one past it clears them.
pub const MAX_COVER_PAIRS: usize = 1 << 16;

/// The lexeme states among `states` (a mask's lexeme items that can read
/// a byte) whose unended strings others among them read, when their own
/// token sets are not known yet; empty, without allocating, when every
/// state's sets are known.
pub fn covered_lexeme_states(
    g: &CompiledGrammar,
    states: impl Iterator<Item = u32> + Clone,
) -> Vec<u32> {
    if states.clone().all(|s| lexeme_info_known(g, s)) {
        return Vec::new();
    }
    let mut all: Vec<u32> = states.collect();
    all.sort_unstable();
    all.dedup();
    if all.len() > MAX_COVER_CANDIDATES {
        return Vec::new();
    }
    let mut work_left = MASK_COVER_MAX_WORK;
    let mut covered: Vec<u32> = Vec::new();
    for &x in &all {
        if lexeme_info_known(g, x) || !walks_much(g, x) {
            continue;
        }
        // A cover read whole by the mask: not `x`, not covered itself
        // (covers chain: what `y` reads, its own cover reads).
        if all
            .iter()
            .any(|&y| y != x && !covered.contains(&y) && reads_within(g, x, y, &mut work_left))
        {
            covered.push(x);
        }
    }
    covered
}

/// Whether a walk of lexeme state `x`'s own would read more than a
/// [`WALKS_MUCH_SHARE`] of the vocabulary; otherwise its full sets cost
/// about what a test of covers would.
fn walks_much(g: &CompiledGrammar, x: u32) -> bool {
    let (lexeme, s) = g.lexeme_state(x);
    let engine = g.engine();
    // Sets kept where it ends: it was found to walk much before (and a
    // mask that meets it again answers with a lookup).
    lexeme.dfa().computed.is_none()
        && (ending_info_known(g, x) || own_walk_is_long(engine, lexeme, s))
}

/// Whether lexeme state `y` reads every string lexeme state `x` reads
/// without ending (both of DFAs without computed states), kept per
/// grammar.
fn reads_within(g: &CompiledGrammar, x: u32, y: u32, work_left: &mut usize) -> bool {
    let (x_lexeme, xs) = g.lexeme_state(x);
    let (y_lexeme, ys) = g.lexeme_state(y);
    if x_lexeme.dfa().computed.is_some() || y_lexeme.dfa().computed.is_some() {
        return false;
    }
    if let Some(&known) = g.covers.lock().get(&(x, y)) {
        return known;
    }
    debug_assert!(xs != DEAD && ys != DEAD);
    if *work_left == 0 {
        return false;
    }
    let budget = COVER_TEST_MAX_WORK.min(*work_left);
    let mut pairing = Pairing::new(x_lexeme.dfa(), y_lexeme.dfa());
    let answer = pairing.reads_unended_within(x_lexeme.dfa(), xs, y_lexeme.dfa(), ys, budget);
    *work_left = work_left.saturating_sub(pairing.steps);
    if answer.is_none() && budget < COVER_TEST_MAX_WORK {
        // The mask's work ran out, not the pair's: ask again later.
        return false;
    }
    let within = answer == Some(true);
    let mut covers = g.covers.lock();
    if covers.len() >= MAX_COVER_PAIRS {
        covers.clear();
    }
    covers.insert((x, y), within);
    within
}
