//! Lexemes: the regular parts of a grammar as byte-level DFAs, interned per
//! vocabulary so that every grammar with the same lexeme shares its
//! automaton and its per-state token sets.

use std::collections::HashMap;
use std::sync::Mutex;

/// Per-vocabulary cache of lexeme automata, keyed by their regular
/// expression.
#[derive(Default)]
pub struct LexemeCache {
    pub(crate) map: Mutex<HashMap<String, ()>>,
}
