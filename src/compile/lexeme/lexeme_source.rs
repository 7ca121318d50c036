//! Where the compile layer gets lexeme automata ([`LexemeSource`]: built
//! once and shared, or built anew by [`Uncached`](super::Uncached)), and
//! "any string" ([`StringBody`]). Builders that need a lexeme or a regular
//! part of their own (intersections, counted repetitions, counted strings)
//! ask a source; the builders themselves are in `source.rs`, above them.

use std::sync::Arc;

use super::dfa_table::Table;
use super::{DfaLimits, LexemeDfa};
use crate::error::Result;
use crate::ir::Expr;

/// The inside of a JSON string that may go on with any characters: the
/// state after the opening quote of "any string".
///
/// Key sets that admit other names ("any name but these") and patterns
/// that stop constraining after a prefix reach such a state on most first
/// bytes, and walking it reads nearly the whole trie (3-5 ms); every
/// lexeme of the vocabulary shares this one DFA's walks instead.
pub struct StringBody {
    pub dfa: Arc<LexemeDfa>,
    pub state: u32,
}

/// Where the compile layer gets lexeme automata and the regular parts of
/// intersections: built once and shared. The token-set layer's
/// per-vocabulary engine implements it with a cache under a byte budget
/// (`tokensets::Engine`); [`Uncached`](super::Uncached) builds everything
/// anew.
pub trait LexemeSource {
    /// The lexeme of `expr` ([`build_lexeme`](super::build_lexeme)),
    /// shared; `None` when its automaton would pass `limits.max_bytes`.
    fn lexeme(&self, expr: &Expr, limits: &DfaLimits) -> Result<Option<Arc<LexemeDfa>>>;

    /// The lexeme of `expr`, the JSON strings of `pattern` counted to
    /// `min..=max` code points
    /// ([`build_counted_lexeme`](super::build_counted_lexeme)), shared
    /// under `expr`; `None` when `pattern` is not a plain JSON string
    /// language.
    fn counted_lexeme(
        &self,
        expr: &Expr,
        pattern: &Expr,
        min: u32,
        max: Option<u32>,
        limits: &DfaLimits,
    ) -> Result<Option<Arc<LexemeDfa>>>;

    /// The table of a regular part of an intersection or complement, or
    /// of the first two operands of a longer intersection
    /// ([`build_part`](super::build_part)), shared.
    fn part(&self, expr: &Expr, limits: &DfaLimits) -> Result<Arc<Table>>;
}
