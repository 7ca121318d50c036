//! Lexemes: the regular parts of a grammar as byte-level DFAs
//! ([`LexemeDfa`], plain immutable data). The compile layer gets them from
//! a [`LexemeSource`]; the token-set layer's engine is one, which interns
//! them per vocabulary so that every grammar with the same lexeme shares
//! its automaton and what masks learned about it.
//!
//! The files, bottom-up (each imports only files on its line or above;
//! `tests/layers.rs` keeps them so, its `FLOORS`):
//!
//! - `dfa_table`, [`analysis`]: [`Table`], the plain automaton every
//!   construction builds; what states share (byte classes, safe groups,
//!   state pairings).
//! - `lexeme_source`: [`LexemeSource`], where builders get the lexemes and
//!   parts they need, and [`StringBody`] ("any string"); `determinize`,
//!   `minimize`; `json_string`, `multiple`, `integer_range`, `rfc3339`
//!   (DFAs built directly).
//! - [`string_trie`]: a large set of strings stepped on its trie, no table.
//! - [`table`]: an expression to a table, and the [`LexemeDfa`] made of
//!   one; `boolean`: intersection and complement.
//! - [`counted`]: a count of code points beside an automaton.
//! - [`iterations`]: a large repetition counted by that count.
//! - `length_and_iterations`: both counts beside one automaton.
//! - [`source`]: the builders a source calls on a miss, and [`Uncached`].
//!
//! A lexeme is built from an IR expression (no rule references, no token
//! elements) through `regex-syntax`'s HIR and `regex-automata`'s Thompson
//! NFA, determinized by our own subset construction ([`determinize`]: each
//! state looks only at the byte ranges its NFA states leave on, all
//! matches kept) into a compact table with one row per state and a final
//! flag per state, so that the matcher never deals with delayed matches,
//! and minimized there ([`minimize`]). `regex-automata`'s dense DFA serves
//! only as the reference of tests (`table::table_from_hir_dense`).

use super::adjacency::Adjacency;
use crate::error::Result;
use crate::ir::Expr;
use crate::limits::{Deadline, Meter};
use crate::util::byteset::ByteSet;
use crate::util::hash::FastMap;
use crate::vocab::TokenTrie;
use analysis::STATE_LIKE_MAX_WORK;

pub mod analysis;
mod boolean;
pub mod counted;
mod determinize;
mod dfa_table;
mod integer_range;
pub mod iterations;
mod json_string;
mod length_and_iterations;
mod lexeme_source;
mod minimize;
mod multiple;
mod rfc3339;
pub mod source;
pub mod string_trie;
pub mod table;

pub use analysis::SafeGroups;
pub(crate) use analysis::{
    class_pair_reps, readable_equivalents, table_equivalents, ContentStates, Pairing,
};
pub use counted::Counter;
pub use dfa_table::Table;
pub use length_and_iterations::LengthAndIterations;
pub use lexeme_source::{LexemeSource, StringBody};
pub use minimize::minimize;
pub use source::{
    any_string_expr, build_counted_lexeme, build_lexeme, build_part, string_body, table,
    too_large_error, Uncached,
};
pub use string_trie::StringTrie;
pub use table::{table_from_hir, to_hir};

/// No transition.
pub const DEAD: u32 = u32::MAX;

/// A lexeme's DFA in a compact table.
pub struct LexemeDfa {
    /// Byte -> equivalence class.
    pub classes: [u8; 256],
    pub num_classes: usize,
    /// `state * num_classes + class` -> next state or [`DEAD`].
    pub trans: Vec<u32>,
    /// The input so far is a complete lexeme.
    pub is_final: Vec<bool>,
    /// Bytes with a transition out of each state.
    pub first_bytes: Vec<ByteSet>,
    pub start: u32,
    /// Unique among the lexemes of the process (keys caches shared by
    /// several lexemes, see `tokensets::context::SharedFreeExits`).
    pub id: u64,
    /// How far the expression's counts reach, in bytes (see
    /// [`count_span`]): only past the longest token can states of the
    /// minimal DFA look alike to every token (see
    /// [`LexemeDfa::token_classes`]). `usize::MAX` when not known.
    pub count_span: usize,
    /// States computed rather than stored in the table (see
    /// [`Computed`]): then [`Self::next`], [`Self::is_final_state`] and
    /// [`Self::first_bytes_of`] are the only way to read them.
    pub computed: Option<Box<Computed>>,
}

/// A lexeme whose states are numbered and stepped by code, not rows of
/// its table.
pub enum Computed {
    /// A count of code points or iterations next to the table's automaton
    /// (see [`Counter`]): states are `count * table states + table state`.
    Counted(Counter),
    /// Counts of iterations and of code points next to the table's
    /// automaton (see [`LengthAndIterations`]).
    LengthAndIterations(LengthAndIterations),
    /// A large set of JSON strings, stepped on its trie (see
    /// [`StringTrie`]); the table is empty.
    Strings(StringTrie),
}

/// DFAs with fewer states are not worth the refinement (minimization
/// already merged their equivalent states).
const TOKEN_CLASS_MIN_STATES: usize = 32;
/// Most work (states x classes, for the first round and for every state
/// re-signed after it) spent on the refinement: beyond
/// it, each state keeps its own token sets (correct, and walks of counting
/// states are cheap, see [`SafeGroups`]), so that no single mask pays for
/// a long refinement.
const TOKEN_CLASS_MAX_WORK: usize = 4_000_000;

impl LexemeDfa {
    /// Per state, a representative of its token class: states that
    /// accept and reject the same strings of up to `horizon` bytes (the
    /// longest token) have the same token sets. Counting DFAs (`.{0,500}`,
    /// `maxLength`) have hundreds of states that differ only far beyond any
    /// token; they all share one token-set walk. `None` when the DFA does
    /// not count or is too small to gain from it (every state its own
    /// class).
    ///
    /// Moore's partition refinement, stopped after `horizon` rounds; `None`
    /// past [`TOKEN_CLASS_MAX_WORK`]; an error once `meter`'s deadline
    /// passes.
    ///
    /// Each round re-signs only the predecessors of states whose class
    /// changed in the round before, and a class that splits keeps its id
    /// for its largest part: a counting automaton changes one layer of
    /// states per round, so the refinement costs about its size, not its
    /// size times the horizon.
    pub fn token_classes(&self, horizon: usize, meter: &mut Meter) -> Result<Option<Vec<u32>>> {
        if self.count_span <= horizon || self.num_states() < TOKEN_CLASS_MIN_STATES {
            return Ok(None);
        }
        self.refine(horizon, meter)
    }

    /// The refinement of [`Self::token_classes`], on any DFA.
    fn refine(&self, horizon: usize, meter: &mut Meter) -> Result<Option<Vec<u32>>> {
        let n = self.num_states();
        let k = self.num_classes;
        let mut work = n * k;
        if work > TOKEN_CLASS_MAX_WORK {
            return Ok(None);
        }
        meter.step(2 * work)?;
        const DEAD_CLASS: u32 = u32::MAX;
        let preds = predecessors(&self.trans, n, k, meter)?;
        let mut class: Vec<u32> = self.is_final.iter().map(|&f| f as u32).collect();
        let mut size = vec![0u32; 2];
        for &c in &class {
            size[c as usize] += 1;
        }
        // Per state: its successors' classes as of its last signing.
        let mut rows = vec![DEAD_CLASS - 1; n * k];
        let mut row = vec![0u32; k];
        let mut candidates: Vec<u32> = (0..n as u32).collect();
        let mut marked = vec![false; n];
        for _ in 0..horizon {
            // Sign the candidates with the classes of the round before.
            let mut changed: Vec<u32> = Vec::new();
            for &s in &candidates {
                let s = s as usize;
                for (c, slot) in row.iter_mut().enumerate() {
                    let t = self.trans[s * k + c];
                    *slot = if t == DEAD {
                        DEAD_CLASS
                    } else {
                        class[t as usize]
                    };
                }
                if rows[s * k..(s + 1) * k] != row[..] {
                    rows[s * k..(s + 1) * k].copy_from_slice(&row);
                    changed.push(s as u32);
                }
            }
            work += candidates.len() * k;
            meter.step(candidates.len() * k)?;
            if work > TOKEN_CLASS_MAX_WORK {
                return Ok(None);
            }
            // Members of a class whose row did not change keep it; the
            // others split off by their new rows.
            let mut parts: FastMap<(u32, &[u32]), Vec<u32>> = FastMap::default();
            for &s in &changed {
                let s = s as usize;
                parts
                    .entry((class[s], &rows[s * k..(s + 1) * k]))
                    .or_default()
                    .push(s as u32);
            }
            let mut by_class: FastMap<u32, Vec<Vec<u32>>> = FastMap::default();
            for ((c, _), members) in parts {
                by_class.entry(c).or_default().push(members);
            }
            let mut moved: Vec<u32> = Vec::new();
            for (c, mut groups) in by_class {
                let total: usize = groups.iter().map(|g| g.len()).sum();
                if total == size[c as usize] as usize {
                    // Every member changed: the largest part keeps the id.
                    let largest = (0..groups.len())
                        .max_by_key(|&g| (groups[g].len(), std::cmp::Reverse(groups[g][0])))
                        .unwrap();
                    groups.swap_remove(largest);
                }
                for members in groups {
                    let id = size.len() as u32;
                    size.push(members.len() as u32);
                    size[c as usize] -= members.len() as u32;
                    for &s in &members {
                        class[s as usize] = id;
                    }
                    moved.extend(members);
                }
            }
            if moved.is_empty() {
                break;
            }
            candidates.clear();
            for &t in &moved {
                let t = t as usize;
                for &p in preds.of(t) {
                    if !marked[p as usize] {
                        marked[p as usize] = true;
                        candidates.push(p);
                    }
                }
            }
            work += candidates.len();
            meter.step(changed.len() + moved.len() + candidates.len())?;
            for &p in &candidates {
                marked[p as usize] = false;
            }
        }
        // Name each class by its smallest state.
        let mut first: FastMap<u32, u32> = FastMap::default();
        Ok(Some(
            (0..n as u32)
                .map(|s| *first.entry(class[s as usize]).or_insert(s))
                .collect(),
        ))
    }

    #[inline(always)]
    pub fn next(&self, state: u32, byte: u8) -> u32 {
        // The table's step stays a few instructions, inlined in every trie
        // walk; a computed lexeme's is out of line.
        if self.computed.is_none() {
            self.trans[state as usize * self.num_classes + self.classes[byte as usize] as usize]
        } else {
            self.next_computed(state, byte)
        }
    }

    /// [`Self::next`] of a lexeme without [`Computed`] states (not checked):
    /// the table's step alone, for the shared string automata's walks.
    #[inline(always)]
    pub fn table_next(&self, state: u32, byte: u8) -> u32 {
        self.trans[state as usize * self.num_classes + self.classes[byte as usize] as usize]
    }

    #[inline(never)]
    fn next_computed(&self, state: u32, byte: u8) -> u32 {
        match self.computed.as_deref() {
            Some(Computed::Counted(c)) => c.next(self, state, byte),
            Some(Computed::LengthAndIterations(c)) => c.next(self, state, byte),
            Some(Computed::Strings(s)) => s.next(state, byte),
            None => DEAD,
        }
    }

    /// The [`Counter`] beside the table, if the lexeme counts.
    pub fn counter(&self) -> Option<&Counter> {
        match self.computed.as_deref() {
            Some(Computed::Counted(c)) => Some(c),
            _ => None,
        }
    }

    /// Whether the lexeme can end in `state`.
    #[inline(always)]
    pub fn is_final_state(&self, state: u32) -> bool {
        match self.computed.as_deref() {
            None => self.is_final[state as usize],
            Some(Computed::Counted(c)) => c.is_final(self, state),
            Some(Computed::LengthAndIterations(c)) => c.is_final(self, state),
            Some(Computed::Strings(s)) => s.is_final(state),
        }
    }

    /// The bytes with a transition out of `state`.
    #[inline(always)]
    pub fn first_bytes_of(&self, state: u32) -> ByteSet {
        match self.computed.as_deref() {
            None => self.first_bytes[state as usize],
            Some(c) => self.first_bytes_computed(c, state),
        }
    }

    #[inline(never)]
    fn first_bytes_computed(&self, c: &Computed, state: u32) -> ByteSet {
        match c {
            Computed::Counted(c) => c.first_bytes(self, state),
            Computed::LengthAndIterations(c) => c.first_bytes(self, state),
            Computed::Strings(s) => s.first_bytes(state),
        }
    }

    /// States of the table (a counted lexeme has more, see
    /// [`Self::num_lexeme_states`]).
    pub fn num_states(&self) -> usize {
        self.is_final.len()
    }

    /// States a grammar numbers for this lexeme: the table's, or with a
    /// [`Counter`] every (count, state) pair (with two counts every
    /// triple), or a [`StringTrie`]'s.
    pub fn num_lexeme_states(&self) -> usize {
        match self.computed.as_deref() {
            None => self.num_states(),
            Some(Computed::Counted(c)) => c.num_states(),
            Some(Computed::LengthAndIterations(c)) => c.num_states(),
            Some(Computed::Strings(s)) => s.num_states(),
        }
    }

    /// The table state whose analyses hold for `state` on strings of up
    /// to `height` bytes: itself, or for a counted lexeme the state
    /// without its count where no such string can reach a bound (else
    /// `None`: no shortcut, as for a [`StringTrie`], which has no table).
    #[inline(always)]
    pub fn table_state_for_walks(&self, trie: &TokenTrie, state: u32, height: u16) -> Option<u32> {
        match self.computed.as_deref() {
            None => Some(state),
            Some(c) => Self::free_state_computed(c, trie, state, height),
        }
    }

    /// [`Self::table_state_for_walks`] for strings without a closing
    /// quote: a counted lexeme's state below its minimum, where the
    /// count only forbids the quote (see [`Counter::unclosed_state`]).
    #[inline]
    pub fn table_state_for_unclosed_walks(
        &self,
        trie: &TokenTrie,
        state: u32,
        height: u16,
    ) -> Option<u32> {
        match self.computed.as_deref() {
            Some(Computed::Counted(c)) => c.unclosed_state(state, height as usize, trie.max_len()),
            _ => None,
        }
    }

    #[inline(never)]
    fn free_state_computed(c: &Computed, trie: &TokenTrie, state: u32, height: u16) -> Option<u32> {
        match c {
            Computed::Counted(c) => c.free_state(state, height as usize, trie.max_len()),
            Computed::LengthAndIterations(c) => {
                c.free_state(state, height as usize, trie.max_len())
            }
            Computed::Strings(_) => None,
        }
    }

    /// How many times `state` reads `byte` before it cannot (at most
    /// `cap`).
    pub fn run_length(&self, mut state: u32, byte: u8, cap: usize) -> usize {
        let mut n = 0;
        while n < cap {
            state = self.next(state, byte);
            if state == DEAD {
                break;
            }
            n += 1;
        }
        n
    }

    /// A hash of the language the table accepts from its start, the same
    /// for every minimal, trimmed DFA of that language whatever its state
    /// numbering and byte classes: the number of states and, as a
    /// multiset, each state's finality and first bytes (which an
    /// isomorphism keeps). Lexemes built from different expressions
    /// (`a ∧ ¬b` and `¬b ∧ a`) then share one automaton and everything
    /// masks learn about it, once [`Self::same_language`] confirms it.
    /// `None` for computed states.
    pub fn language_key(&self) -> Option<u64> {
        if self.computed.is_some() || self.start == DEAD {
            return None;
        }
        let states = (0..self.num_states()).fold(0u64, |acc, s| acc.wrapping_add(self.sign(s)));
        Some(mix(mix(self.num_states() as u64) ^ states) ^ self.sign(self.start as usize))
    }

    /// A finer hash of the language than [`Self::language_key`], for
    /// tables whose keys collide. Automata that read "any string" between
    /// a few excluded ones (sets of names that admit any other name, their
    /// products with patterns) have the same first bytes in nearly every
    /// state, so their keys collide by the state count alone, and a
    /// server's cache holds hundreds of them: each new one was walked in
    /// pairs against every kept one of its size (5.6 ms of one compile
    /// after 2,500 others, before sets of strings skipped the lookup).
    /// Here each state's signature is refined, `REFINE_ROUNDS` times,
    /// by where its bytes lead: the sum, over the bytes, of a fixed weight
    /// per byte times the signature of the byte's target. A sum over
    /// bytes is the same however the bytes are split into classes, so the
    /// hash still depends only on the language. Costs a pass over the
    /// table per round, paid only where keys collide.
    pub fn refined_language_key(&self) -> Option<u64> {
        if self.computed.is_some() || self.start == DEAD {
            return None;
        }
        let (n, k) = (self.num_states(), self.num_classes);
        let mut class_weight = vec![0u64; k];
        for (b, &c) in self.classes.iter().enumerate() {
            let w = &mut class_weight[c as usize];
            *w = w.wrapping_add(mix(b as u64 + 1));
        }
        let mut sig: Vec<u64> = (0..n).map(|s| self.sign(s)).collect();
        for _ in 0..REFINE_ROUNDS {
            sig = (0..n)
                .map(|s| {
                    let row = &self.trans[s * k..(s + 1) * k];
                    let successors = row.iter().zip(&class_weight).fold(0u64, |acc, (&t, &w)| {
                        if t == DEAD {
                            acc
                        } else {
                            acc.wrapping_add(w.wrapping_mul(sig[t as usize]))
                        }
                    });
                    mix(sig[s] ^ mix(successors))
                })
                .collect();
        }
        let states = sig.iter().fold(0u64, |acc, &h| acc.wrapping_add(h));
        Some(mix(mix(n as u64) ^ states) ^ sig[self.start as usize])
    }

    /// A state's finality and first bytes, hashed.
    fn sign(&self, s: usize) -> u64 {
        let mut h = mix(self.is_final[s] as u64);
        for w in self.first_bytes[s].words() {
            h = mix(h ^ w);
        }
        h
    }

    /// Whether this table and `other` accept the same strings from their
    /// starts (a walk of the pairs of states the same strings reach).
    /// `false` also for computed states, and where the walk visits more
    /// pairs than the two have states: equal minimal DFAs pair each state
    /// once, and tables whose keys collide must not cost a product.
    pub fn same_language(&self, other: &LexemeDfa) -> bool {
        if self.computed.is_some() || other.computed.is_some() {
            return false;
        }
        if self.start == DEAD || other.start == DEAD {
            return self.start == other.start;
        }
        let mut pairing = Pairing::new(self, other);
        let budget = (self.num_states() + other.num_states()) * pairing.reps.len();
        pairing.same(self, self.start, other, other.start, budget) == Some(true)
    }

    /// The state of this DFA (if any, and the first by number) that accepts
    /// the same strings as state `theirs` of `other`, with the pairs of
    /// states that the same strings lead the two to from there (all of them
    /// equivalent); [`DEAD`] also when finding out would take more than
    /// [`STATE_LIKE_MAX_WORK`] transitions.
    pub fn state_like(&self, other: &LexemeDfa, theirs: u32) -> (u32, Vec<(u32, u32)>) {
        let (first, fin) = (
            other.first_bytes[theirs as usize],
            other.is_final[theirs as usize],
        );
        let mut pairing = Pairing::new(self, other);
        let mut budget = STATE_LIKE_MAX_WORK;
        for s in 0..self.num_states() as u32 {
            if self.first_bytes[s as usize] != first || self.is_final[s as usize] != fin {
                continue;
            }
            match pairing.same(self, s, other, theirs, budget) {
                Some(true) => return (s, pairing.reached()),
                Some(false) => budget -= pairing.steps,
                None => break,
            }
        }
        (DEAD, Vec::new())
    }

    /// Approximate heap bytes of the automaton (what the mask path
    /// learns about it is counted by the token-set layer).
    pub fn memory(&self) -> usize {
        let computed = match self.computed.as_deref() {
            None => 0,
            Some(Computed::Counted(c)) => c.memory(),
            Some(Computed::LengthAndIterations(c)) => c.memory(),
            Some(Computed::Strings(s)) => s.memory(),
        };
        computed + self.trans.len() * 4 + self.is_final.len() * (1 + 32) + 256
    }
}

/// Rounds of [`LexemeDfa::refined_language_key`]: one tells apart sets
/// of names that differ in a character, wherever it is.
const REFINE_ROUNDS: usize = 1;

/// A 64-bit mixer (splitmix64's finalizer).
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Size and time limits for building one lexeme DFA.
#[derive(Clone, Copy, Debug)]
pub struct DfaLimits {
    pub max_bytes: usize,
    /// The compilation's deadline, checked while states are built.
    pub deadline: Deadline,
    /// The grammar's `max_states`: an automaton built state by state
    /// without a byte bound of its own (a set of JSON strings) stops as
    /// soon as it alone has more.
    pub max_states: usize,
}

impl Default for DfaLimits {
    fn default() -> Self {
        DfaLimits {
            max_bytes: 32 << 20,
            deadline: Deadline::none(),
            max_states: usize::MAX,
        }
    }
}

/// The predecessors of each state of a transition table (`n` states, `k`
/// classes) as compressed rows: those of `t` are
/// `preds.of(t)` (once per transition). An error once `meter`'s deadline
/// passes.
pub(crate) fn predecessors(
    trans: &[u32],
    n: usize,
    k: usize,
    meter: &mut Meter,
) -> Result<Adjacency> {
    let links = trans
        .iter()
        .enumerate()
        .filter(|&(_, &t)| t != DEAD)
        .map(|(i, &t)| (t, (i / k) as u32));
    Adjacency::new_metered(n, links, meter)
}

/// How far, in bytes, the expression's bounded repetitions reach: for
/// each one counting more than four times (`\uXXXX` and dates count to
/// four, in small automata), its bound times the bytes of its shortest
/// iteration; the largest of them, 0 without such a count, `usize::MAX`
/// when an iteration's length is not known.
///
/// A count copies its states once per iteration, and two copies differ
/// on the strings that run past the bound from one and not the other:
/// about that many bytes. Only when they reach beyond the longest token
/// can states of the minimal DFA look alike to every token (see
/// [`LexemeDfa::token_classes`]); below it they tell apart on short
/// strings, as a trie of names or a loop does, and refining them finds
/// nothing to merge (a 9,584-state set of property names spent 7 ms
/// finding so, a BCP 47 language tag's `[A-Za-z]{5,8}` in 60 property
/// patterns 13 ms).
pub(crate) fn count_span(e: &Expr) -> usize {
    count_span_in(e, false)
}

fn count_span_in(e: &Expr, quoted: bool) -> usize {
    let own = match e {
        Expr::Repeat { expr, min, max } if max.unwrap_or(*min) > 4 => {
            let bound = max.unwrap_or(*min) as usize;
            // An iteration that may be empty does not bound the copies'
            // distance: take it as unknown.
            match shortest_bytes(expr, quoted) {
                Some(l) if l > 0 => bound.saturating_mul(l),
                _ => usize::MAX,
            }
        }
        Expr::JsonQuoted(chars) => return count_span_in(chars, true),
        _ => 0,
    };
    let mut span = own;
    e.for_each_child(|c| span = span.max(count_span_in(c, quoted)));
    span
}

/// The length in bytes of one of the shortest strings of `e` (spelled as
/// JSON string content when `quoted`), or `None` where it is not worked
/// out (references, intersections, complements, leaves built as DFAs).
/// Never below the true shortest, so that [`count_span`] never claims a
/// count shorter than it is.
fn shortest_bytes(e: &Expr, quoted: bool) -> Option<usize> {
    // In JSON, `"`, `\` and five control characters have two-byte
    // escapes (`\n`), the other controls six (`\u0001`).
    const SHORT_ESCAPES: [u32; 7] = [0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x22, 0x5C];
    let char_bytes = |cp: u32| -> usize {
        if quoted && SHORT_ESCAPES.contains(&cp) {
            2
        } else if quoted && cp < 0x20 {
            6
        } else {
            char::from_u32(cp).map_or(4, char::len_utf8)
        }
    };
    match e {
        Expr::Empty => Some(0),
        Expr::Literal(text) => Some(text.chars().map(|c| char_bytes(c as u32)).sum()),
        Expr::Class(class) => class
            .ranges()
            .iter()
            .map(|&(lo, hi)| {
                // Within a range the bytes grow with the code point but
                // for the escaped ones: the range's first, a short escape,
                // or the first unescaped ASCII.
                [lo, 0x20, 0x23, 0x5D]
                    .into_iter()
                    .chain(SHORT_ESCAPES)
                    .filter(|&cp| lo <= cp && cp <= hi)
                    .map(char_bytes)
                    .min()
                    .unwrap_or(4)
            })
            .min(),
        Expr::Seq(parts) => parts.iter().try_fold(0usize, |sum, p| {
            Some(sum.saturating_add(shortest_bytes(p, quoted)?))
        }),
        // Any alternative worked out bounds the shortest from above.
        Expr::Alt(alts) => alts.iter().filter_map(|a| shortest_bytes(a, quoted)).min(),
        Expr::Repeat { min: 0, .. } => Some(0),
        Expr::Repeat { expr, min, .. } => {
            Some(shortest_bytes(expr, quoted)?.saturating_mul(*min as usize))
        }
        Expr::JsonQuoted(chars) => Some(shortest_bytes(chars, true)?.saturating_add(2)),
        _ => None,
    }
}

/// The expression uses intersection or complement somewhere, or JSON
/// strings (built by their own construction, see [`json_string`]).
pub fn has_boolean(e: &Expr) -> bool {
    if matches!(
        e,
        Expr::And(_)
            | Expr::Not(_)
            | Expr::JsonStrings(_)
            | Expr::JsonQuoted(_)
            | Expr::DecimalMultiple(_)
            | Expr::IntegerRange(_)
            | Expr::Rfc3339(_)
    ) {
        return true;
    }
    let mut found = false;
    e.for_each_child(|c| found |= has_boolean(c));
    found
}

pub(crate) fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        s.to_string()
    } else {
        let mut end = n;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::table::table_from_hir_dense;
    use super::*;
    use crate::ir::CharClass;
    use std::collections::HashMap;
    use std::sync::Arc;

    fn run(d: &LexemeDfa, s: &[u8]) -> Option<bool> {
        let mut st = d.start;
        for &b in s {
            if st == DEAD {
                return None;
            }
            st = d.next(st, b);
        }
        (st != DEAD).then(|| d.is_final[st as usize])
    }

    /// How far counts reach, in bytes: the bound times the shortest
    /// iteration, spelled in UTF-8 or in JSON.
    #[test]
    fn count_spans() {
        let re = |p: &str| crate::regex::to_expr(p, crate::regex::Anchoring::Full).unwrap();
        let quoted = |p: &str| Expr::json_quoted(re(p));
        // A BCP 47 tag's counts stay far below any token.
        assert_eq!(
            count_span(&re("[A-Za-z]{2,3}(-[A-Za-z]{3}){0,2}|[A-Za-z]{5,8}")),
            8
        );
        assert_eq!(count_span(&re("a{4}")), 0);
        assert_eq!(count_span(&re("[a-z]*")), 0);
        assert_eq!(count_span(&re(".{0,300}")), 300);
        assert_eq!(count_span(&re("(?:\\S+\\s+){0,50}\\S+")), 100);
        assert_eq!(count_span(&re("(?:ab|c){7}")), 7);
        // Non-ASCII characters take two bytes or more; a quote or a
        // control character two in JSON (`\"`, `\n`).
        assert_eq!(count_span(&re("[é-ü]{10}")), 20);
        assert_eq!(count_span(&quoted("[\"x]{10}")), 10);
        assert_eq!(count_span(&quoted("[\"\n]{10}")), 20);
        assert_eq!(count_span(&quoted("[\\x00-\\x07]{10}")), 60);
        assert_eq!(count_span(&quoted("[\\x00-\\x09]{10}")), 20);
        // An iteration that may be empty: unknown, taken as far.
        assert_eq!(count_span(&re("(?:a?){10}")), usize::MAX);
    }

    /// Sets of names that admit any other name have the same first
    /// bytes in nearly every state: their language keys collide by the
    /// state count, and the refined keys tell them apart. One language
    /// built two ways, its bytes split into classes differently, keeps
    /// both keys.
    #[test]
    fn refined_language_keys_tell_colliding_name_sets_apart() {
        let limits = DfaLimits::default();
        let build = |e: &Expr| build_lexeme(e, &limits, &Uncached).unwrap().unwrap();
        let names = |v: &[&str]| Expr::json_strings(v.iter().map(|s| s.to_string()), true);
        let (x, y) = (
            build(&names(&["kind", "size"])),
            build(&names(&["kind", "sizf"])),
        );
        assert_eq!(x.num_states(), y.num_states());
        assert_eq!(x.language_key(), y.language_key(), "keys collide");
        assert_ne!(x.refined_language_key(), y.refined_language_key());
        assert_eq!(
            x.refined_language_key(),
            build(&names(&["size", "kind"])).refined_language_key()
        );
        // `[a-m]x`, and the product of `[a-z]x` and `[a-m][w-z]`, whose
        // classes split where either operand's do.
        let re = |p: &str| crate::regex::to_expr(p, crate::regex::Anchoring::Full).unwrap();
        let plain = build(&re("[a-m]x"));
        let product = build(&Expr::and(vec![re("[a-z]x"), re("[a-m][w-z]")]));
        assert_ne!(plain.num_classes, product.num_classes);
        assert_eq!(plain.language_key(), product.language_key());
        assert_eq!(plain.refined_language_key(), product.refined_language_key());
        assert_ne!(
            plain.refined_language_key(),
            build(&re("[a-l]x")).refined_language_key()
        );
    }

    #[test]
    fn own_construction_matches_regex_automata() {
        let limits = DfaLimits::default();
        for pattern in [
            r#""(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*""#,
            r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?",
            r"(?:name|n\\u0061me|nickname|\w{2,5})",
            r"[\p{L}\p{N}]{0,20}x",
            r"(?:ab|a)*(?:b|)[^a]",
            r"",
            r"[^\x00-\x{10FFFF}]",
            r"[a-c]{3,40}",
        ] {
            let hir = regex_syntax::parse(pattern).unwrap();
            let ours = table_from_hir(&hir, &limits).unwrap();
            let theirs = table_from_hir_dense(&hir, &limits).unwrap();
            assert!(ours.same_language(&theirs), "{pattern}");
            // Minimal: never more states than regex-automata's minimal DFA
            // (which keeps a dead state).
            assert!(ours.num_states() <= theirs.num_states(), "{pattern}");
        }
    }

    /// Literals before a shared rest are a trie before the rest's table
    /// (see `build_part`): the same language as the whole determinized,
    /// minimal, whether or not the literals qualify.
    #[test]
    fn prefixes_before_one_rest_keep_the_language() {
        let limits = DfaLimits::default();
        let re = |p: &str| crate::regex::to_expr(p, crate::regex::Anchoring::Full).unwrap();
        let tag = "([A-Za-z]{2,3}(-[A-Za-z]{3}){0,2}|[A-Za-z]{5,8})(-[A-Za-z]{4})?";
        for pattern in [
            (format!("title_{tag}"), true),
            (
                format!("title_({tag})|description_({tag})|name_({tag})"),
                true,
            ),
            // A prefix of another: determinized whole.
            (format!("a_({tag})|a_b_({tag})"), false),
            // Different rests: determinized whole.
            (format!("a_({tag})|b_[0-9]+"), false),
            // Prefixes that share bytes, non-ASCII, and a rest that
            // reads what a prefix reads.
            ("ab(ab)*|ac(ab)*|é(ab)*".to_string(), true),
            ("x[0-9]*|y[0-9]*|z[0-9]*".to_string(), true),
            ("ab*".to_string(), true),
            // `x` is a prefix of `xz`.
            ("x[0-9]*|y[0-9]*|xz[0-9]*".to_string(), false),
        ] {
            let (pattern, factored) = pattern;
            let expr = re(&pattern);
            assert_eq!(
                source::prefixes_before_one_rest(&expr).is_some(),
                factored,
                "{pattern}"
            );
            let direct = table_from_hir(&table::to_hir(&expr), &limits).unwrap();
            let composed = build_part(&expr, &limits, &Uncached).unwrap();
            assert!(direct.same_language(&composed), "{pattern}");
            assert_eq!(direct.num_states(), composed.num_states(), "{pattern}");
        }
    }

    #[test]
    fn safe_groups_follow_the_count_left() {
        use crate::vocab::trie::byte_group;
        // "[a-z]{0,5}" then a quote: from the start, letter strings of up
        // to 5 bytes are read whole; 6 letters are not. A loop ([a-z]*)
        // reads letter strings of any height.
        let letters = 1u64 << byte_group(b'a');
        let quote = 1u64 << byte_group(b'"');
        let counted = Expr::seq(vec![
            Expr::repeat(Expr::Class(CharClass::from_ranges([(97, 122)])), 0, Some(5)),
            Expr::literal("\""),
        ]);
        let d = LexemeDfa::from_table(
            &table_from_hir(&to_hir(&counted), &DfaLimits::default()).unwrap(),
        );
        // Tokens of up to 16 bytes.
        let trie = TokenTrie::build([(0u32, &[b'a'; 16][..])]);
        let safe = SafeGroups::compute(&d, &trie, false, &mut Deadline::none().meter()).unwrap();
        assert_eq!(safe.groups(d.start, 5) & letters, letters);
        assert_eq!(safe.groups(d.start, 6) & letters, 0);
        let none_left = b"abcde".iter().fold(d.start, |s, &b| d.next(s, b));
        assert_eq!(safe.groups(none_left, 1), quote);
        assert_eq!(safe.groups(none_left, 2), 0);
        let looped = Expr::star(Expr::Class(CharClass::from_ranges([(97, 122)])));
        let d = LexemeDfa::from_table(
            &table_from_hir(&to_hir(&looped), &DfaLimits::default()).unwrap(),
        );
        let safe = SafeGroups::compute(&d, &trie, false, &mut Deadline::none().meter()).unwrap();
        assert_eq!(safe.groups(d.start, 16) & letters, letters);
    }

    /// Moore's refinement as written in the books: every state re-signed
    /// in every round.
    fn naive_token_classes(d: &LexemeDfa, horizon: usize) -> Vec<u32> {
        let (n, k) = (d.num_states(), d.num_classes);
        let mut class: Vec<u32> = d.is_final.iter().map(|&f| f as u32).collect();
        for _ in 0..horizon {
            let mut ids: HashMap<Vec<u32>, u32> = HashMap::new();
            let next: Vec<u32> = (0..n)
                .map(|s| {
                    let mut sig = vec![class[s]];
                    sig.extend((0..k).map(|c| match d.trans[s * k + c] {
                        DEAD => u32::MAX,
                        t => class[t as usize],
                    }));
                    let fresh = ids.len() as u32;
                    *ids.entry(sig).or_insert(fresh)
                })
                .collect();
            class = next;
        }
        let mut first: HashMap<u32, u32> = HashMap::new();
        (0..n as u32)
            .map(|s| *first.entry(class[s as usize]).or_insert(s))
            .collect()
    }

    #[test]
    fn subtrees_of_multibyte_characters_are_read_whole_up_to_the_count() {
        let toks: Vec<(u32, &[u8])> = vec![(0, "xé€😀".as_bytes()), (1, "xa".as_bytes())];
        let trie = TokenTrie::build(toks);
        let x = 0; // the root's only child
        assert_eq!(trie.nodes()[x].byte, b'x');
        for (max, whole) in [(4, true), (3, false)] {
            let e = Expr::repeat(Expr::Class(CharClass::any()), 0, Some(max));
            let d =
                LexemeDfa::from_table(&table_from_hir(&to_hir(&e), &DfaLimits::default()).unwrap());
            let after_x = d.next(d.start, b'x');
            let l = crate::tokensets::Lexeme::new(Arc::new(d));
            assert_eq!(l.reads_subtree(&trie, x as u32, after_x), whole, "{max}");
        }
    }

    #[test]
    fn incremental_refinement_matches_moore() {
        let exprs = [
            // Counting, with multi-byte characters and escapes.
            crate::json_schema::strings::encode(&Expr::repeat(
                Expr::Class(CharClass::any()),
                3,
                Some(60),
            )),
            // A finite set of words beside "anything else".
            crate::regex::to_expr(
                "(alpha|alphabet|beta|gamma|delta|[a-z]{2,30})x?",
                crate::regex::Anchoring::Full,
            )
            .unwrap(),
            crate::regex::to_expr(
                "([0-9]{1,3}\\.){3}[0-9]{1,3}",
                crate::regex::Anchoring::Full,
            )
            .unwrap(),
        ];
        for e in &exprs {
            let d =
                LexemeDfa::from_table(&table_from_hir(&to_hir(e), &DfaLimits::default()).unwrap());
            for horizon in [1, 2, 5, 17, 200] {
                assert_eq!(
                    d.refine(horizon, &mut Deadline::none().meter())
                        .unwrap()
                        .unwrap(),
                    naive_token_classes(&d, horizon),
                    "horizon {horizon}"
                );
            }
        }
    }

    #[test]
    fn token_classes_merge_states_far_from_the_bound() {
        let e = Expr::repeat(Expr::Class(CharClass::from_ranges([(97, 98)])), 0, Some(40));
        let d = LexemeDfa::from_table(&table_from_hir(&to_hir(&e), &DfaLimits::default()).unwrap());
        let d = crate::tokensets::Lexeme::new(Arc::new(d));
        let mut path = vec![d.dfa().start];
        for _ in 0..40 {
            path.push(d.dfa().next(*path.last().unwrap(), b'a'));
        }
        // With tokens of at most 3 bytes, states with 3 or more letters left
        // look alike; the last ones differ.
        assert_eq!(d.token_class(path[0], 3), d.token_class(path[30], 3));
        assert_eq!(d.token_class(path[0], 3), d.token_class(path[37], 3));
        assert_ne!(d.token_class(path[37], 3), d.token_class(path[38], 3));
        assert_ne!(d.token_class(path[38], 3), d.token_class(path[39], 3));
        assert_ne!(d.token_class(path[39], 3), d.token_class(path[40], 3));
    }

    #[test]
    fn dfa_keeps_all_matches_and_utf8() {
        let build = |e: &Expr| {
            LexemeDfa::from_table(&table_from_hir(&to_hir(e), &DfaLimits::default()).unwrap())
        };
        let e = Expr::alt(vec![Expr::literal("a"), Expr::literal("ab")]);
        let d = build(&e);
        assert_eq!(run(&d, b"a"), Some(true));
        assert_eq!(run(&d, b"ab"), Some(true));
        assert_eq!(run(&d, b"abc"), None);
        let e = Expr::star(Expr::Class(CharClass::any()));
        let d = build(&e);
        assert_eq!(run(&d, "é".as_bytes()), Some(true));
        assert_eq!(run(&d, &"é".as_bytes()[..1]), Some(false));
        assert_eq!(run(&d, b"\xff"), None);
        assert_eq!(run(&d, b"\xed\xa0\x80"), None, "surrogates are not text");
    }

    #[test]
    fn exponential_dfa_is_refused_with_a_limit() {
        let hir = regex_syntax::parse("[ab]*a[ab]{24}").unwrap();
        let err = table_from_hir(&hir, &DfaLimits::default()).unwrap_err();
        assert!(
            err.message().contains("lexeme automaton too large"),
            "{}",
            err.message()
        );
    }
}
