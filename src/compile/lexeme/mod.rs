//! Lexemes: the regular parts of a grammar as byte-level DFAs, interned per
//! vocabulary so that every grammar with the same lexeme shares its
//! automaton and its per-state token sets.
//!
//! A lexeme is built from an IR expression (no rule references, no token
//! elements) through `regex-syntax`'s HIR and `regex-automata`'s dense DFA
//! (determinized, all matches kept), copied into a compact table of our
//! own with one row per state and a final flag per state, so that the
//! matcher never deals with delayed matches, and minimized there
//! ([`minimize`]).

use crate::limits::{Deadline, Meter};
use std::sync::Arc;

use regex_automata::nfa::thompson;
use regex_syntax::hir::{self, Hir};

use super::adjacency::Adjacency;
use crate::error::{Error, Result};
use crate::ir::{CharClass, Expr};
use crate::util::byteset::{byteset_insert, ByteSet};
use crate::util::hash::FastMap;
use crate::vocab::TokenTrie;

mod boolean;
pub mod counted;
mod determinize;
mod json_string;
mod minimize;
mod multiple;
mod rfc3339;

pub use counted::Counter;
pub use minimize::minimize;

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
    /// The expression counts (a bounded repetition): only then can states
    /// of the minimal DFA look alike to every token (see
    /// [`LexemeDfa::token_classes`]).
    pub counting: bool,
    /// A count of code points next to the automaton (see [`Counter`]):
    /// then states are `count * table states + table state`, and
    /// [`Self::next`], [`Self::is_final_state`] and
    /// [`Self::first_bytes_of`] are the only way to read them.
    pub counter: Option<Box<Counter>>,
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
        if !self.counting || self.num_states() < TOKEN_CLASS_MIN_STATES {
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
        // walk; a counted lexeme's is out of line.
        if self.counter.is_none() {
            self.trans[state as usize * self.num_classes + self.classes[byte as usize] as usize]
        } else {
            self.next_counted(state, byte)
        }
    }

    /// [`Self::next`] of a lexeme without a [`Counter`] (not checked):
    /// the table's step alone, for the shared string automata's walks.
    #[inline(always)]
    pub fn table_next(&self, state: u32, byte: u8) -> u32 {
        self.trans[state as usize * self.num_classes + self.classes[byte as usize] as usize]
    }

    #[inline(never)]
    fn next_counted(&self, state: u32, byte: u8) -> u32 {
        match &self.counter {
            Some(c) => c.next(self, state, byte),
            None => DEAD,
        }
    }

    /// Whether the lexeme can end in `state`.
    #[inline(always)]
    pub fn is_final_state(&self, state: u32) -> bool {
        match &self.counter {
            None => self.is_final[state as usize],
            Some(c) => c.is_final(self, state),
        }
    }

    /// The bytes with a transition out of `state`.
    #[inline(always)]
    pub fn first_bytes_of(&self, state: u32) -> ByteSet {
        match &self.counter {
            None => self.first_bytes[state as usize],
            Some(c) => self.first_bytes_counted(c, state),
        }
    }

    #[inline(never)]
    fn first_bytes_counted(&self, c: &Counter, state: u32) -> ByteSet {
        c.first_bytes(self, state)
    }

    /// States of the table (a counted lexeme has more, see
    /// [`Self::num_lexeme_states`]).
    pub fn num_states(&self) -> usize {
        self.is_final.len()
    }

    /// States a grammar numbers for this lexeme: the table's, or with a
    /// [`Counter`] every (count, state) pair.
    pub fn num_lexeme_states(&self) -> usize {
        match &self.counter {
            None => self.num_states(),
            Some(c) => c.num_states(),
        }
    }

    /// The table state whose analyses hold for `state` on strings of up
    /// to `height` bytes: itself, or for a counted lexeme the state
    /// without its count where no such string can reach a bound (else
    /// `None`: no shortcut).
    #[inline(always)]
    pub fn table_state_for_walks(&self, trie: &TokenTrie, state: u32, height: u16) -> Option<u32> {
        match &self.counter {
            None => Some(state),
            Some(c) => Self::free_state_counted(c, trie, state, height),
        }
    }

    #[inline(never)]
    fn free_state_counted(c: &Counter, trie: &TokenTrie, state: u32, height: u16) -> Option<u32> {
        c.free_state(state, height as usize, trie.max_len())
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
                Some(true) => return (s, pairing.seen.into_iter().collect()),
                Some(false) => budget -= pairing.steps,
                None => break,
            }
        }
        (DEAD, Vec::new())
    }

    /// Approximate heap bytes of the automaton (what the mask path
    /// learns about it is counted by the token-set layer).
    pub fn memory(&self) -> usize {
        self.counter.as_ref().map_or(0, |c| c.memory())
            + self.trans.len() * 4
            + self.is_final.len() * (1 + 32)
            + 256
    }
}

/// "Any string"'s states between the quotes, as [`StringCounts`] counts
/// characters with them: `content[0]` is the state after the opening
/// quote (at a character boundary), the others are within a character;
/// `index` maps every such state to its place (states equivalent to the
/// first, the DFA need not be minimal, to 0), other states to `u32::MAX`.
pub(crate) struct ContentStates {
    pub(crate) content: Vec<u32>,
    pub(crate) index: Vec<u32>,
}

impl ContentStates {
    pub(crate) fn new(any: &LexemeDfa, body: u32) -> ContentStates {
        let k = any.num_classes;
        let mut pairing = Pairing::new(any, any);
        let mut content = vec![body];
        let mut index: FastMap<u32, u32> = FastMap::default();
        index.insert(body, 0);
        let mut i = 0;
        while i < content.len() {
            let s = content[i] as usize;
            for &t in &any.trans[s * k..(s + 1) * k] {
                if t != DEAD && !any.is_final[t as usize] && !index.contains_key(&t) {
                    if pairing.same(any, t, any, body, usize::MAX) == Some(true) {
                        index.insert(t, 0);
                    } else {
                        index.insert(t, content.len() as u32);
                        content.push(t);
                    }
                }
            }
            i += 1;
        }
        let mut dense = vec![u32::MAX; any.num_states()];
        for (s, i) in index {
            dense[s as usize] = i;
        }
        ContentStates {
            content,
            index: dense,
        }
    }
}

/// Most transitions (pairs of states visited times the bytes tried from
/// each) [`LexemeDfa::state_like`] follows: a count of pairs alone let
/// DFAs with many byte classes search for 3 ms.
const STATE_LIKE_MAX_WORK: usize = 200_000;

/// A byte for each pair of classes that two DFAs give bytes (what a walk
/// of their states in pairs must try).
pub(crate) fn class_pair_reps(a: &LexemeDfa, b: &LexemeDfa) -> Vec<u8> {
    let mut reps = Vec::new();
    let mut seen = vec![false; a.num_classes * b.num_classes];
    for byte in 0..=255u8 {
        let k =
            a.classes[byte as usize] as usize * b.num_classes + b.classes[byte as usize] as usize;
        if !seen[k] {
            seen[k] = true;
            reps.push(byte);
        }
    }
    reps
}

/// A walk of the pairs of states of two DFAs that the same strings reach
/// (see [`LexemeDfa::state_like`]), with its buffers.
pub(crate) struct Pairing {
    /// A byte for each pair of classes the two DFAs give bytes.
    reps: Vec<u8>,
    /// Pairs of states reached together.
    seen: crate::util::hash::FastSet<(u32, u32)>,
    stack: Vec<(u32, u32)>,
    /// Transitions followed by the last walk.
    steps: usize,
}

impl Pairing {
    pub(crate) fn new(a: &LexemeDfa, b: &LexemeDfa) -> Pairing {
        Pairing {
            reps: class_pair_reps(a, b),
            seen: Default::default(),
            stack: Vec::new(),
            steps: 0,
        }
    }

    /// Whether `s` of `a` and `t` of `b` accept the same strings: every
    /// pair of states that one string leads them to agrees on ending and
    /// on which bytes can follow. `None` past `budget` transitions.
    pub(crate) fn same(
        &mut self,
        a: &LexemeDfa,
        s: u32,
        b: &LexemeDfa,
        t: u32,
        budget: usize,
    ) -> Option<bool> {
        self.seen.clear();
        self.stack.clear();
        self.steps = 0;
        self.seen.insert((s, t));
        self.stack.push((s, t));
        while let Some((s, t)) = self.stack.pop() {
            self.steps += self.reps.len();
            if self.steps > budget {
                return None;
            }
            if a.is_final[s as usize] != b.is_final[t as usize] {
                return Some(false);
            }
            for &byte in &self.reps {
                let (s2, t2) = (a.next(s, byte), b.next(t, byte));
                if (s2 == DEAD) != (t2 == DEAD) {
                    return Some(false);
                }
                if s2 != DEAD && self.seen.insert((s2, t2)) {
                    self.stack.push((s2, t2));
                }
            }
        }
        Some(true)
    }
}

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
/// (`tokensets::Engine`); [`Uncached`] builds everything anew.
pub trait LexemeSource {
    /// The lexeme of `expr` ([`build_lexeme`]), shared; `None` when its
    /// automaton would pass `limits.max_bytes` (see [`build_lexeme`]).
    fn lexeme(&self, expr: &Expr, limits: &DfaLimits) -> Result<Option<Arc<LexemeDfa>>>;

    /// The lexeme of `expr`, the JSON strings of `pattern` counted to
    /// `min..=max` code points ([`build_counted_lexeme`]), shared under
    /// `expr`; `None` when `pattern` is not a plain JSON string language.
    fn counted_lexeme(
        &self,
        expr: &Expr,
        pattern: &Expr,
        min: u32,
        max: Option<u32>,
        limits: &DfaLimits,
    ) -> Result<Option<Arc<LexemeDfa>>>;

    /// The table of a regular part of an intersection or complement
    /// ([`build_part`]), shared.
    fn part(&self, expr: &Expr, limits: &DfaLimits) -> Result<Arc<Table>>;
}

/// A [`LexemeSource`] that keeps nothing: every call builds.
pub struct Uncached;

impl LexemeSource for Uncached {
    fn lexeme(&self, expr: &Expr, limits: &DfaLimits) -> Result<Option<Arc<LexemeDfa>>> {
        Ok(build_lexeme(expr, limits, self)?.map(Arc::new))
    }

    fn counted_lexeme(
        &self,
        _expr: &Expr,
        pattern: &Expr,
        min: u32,
        max: Option<u32>,
        limits: &DfaLimits,
    ) -> Result<Option<Arc<LexemeDfa>>> {
        let Some(body) = string_body(self) else {
            return Ok(None);
        };
        Ok(build_counted_lexeme(pattern, min, max, limits, &body, self)?.map(Arc::new))
    }

    fn part(&self, expr: &Expr, limits: &DfaLimits) -> Result<Arc<Table>> {
        Ok(Arc::new(build_part(expr, limits)?))
    }
}

/// The lexeme of `expr`; `None` when the automaton of an expression
/// without intersection or complement would pass `limits.max_bytes`: the
/// compiler then matches that part another way (as a parser rule, see
/// `compile_ir`). Where a DFA cannot be had at all (intersections,
/// complements) the size is an error. Regular parts of intersections come
/// from `parts`.
pub fn build_lexeme(
    expr: &Expr,
    limits: &DfaLimits,
    parts: &dyn LexemeSource,
) -> Result<Option<LexemeDfa>> {
    let table = if has_boolean(expr) {
        boolean::table_of(expr, limits, parts)?
    } else {
        match table_from_hir_within(&to_hir(expr), limits)? {
            Some(t) => Arc::new(t),
            None => return Ok(None),
        }
    };
    let mut built = LexemeDfa::from_table_by(&table, &limits.deadline)?;
    built.counting = has_counting(expr);
    Ok(Some(built))
}

/// The JSON strings of `pattern` (a quoted JSON string language) whose
/// decoded length is `min..=max` code points, built as `pattern`'s
/// automaton with a [`Counter`] next to it; `None` when `pattern` is not
/// a plain JSON string language. `body` is "any string" ([`string_body`]).
pub fn build_counted_lexeme(
    pattern: &Expr,
    min: u32,
    max: Option<u32>,
    limits: &DfaLimits,
    body: &StringBody,
    parts: &dyn LexemeSource,
) -> Result<Option<LexemeDfa>> {
    let table = table(pattern, limits, parts)?;
    let Some((product, inside, boundary)) =
        counted::pair_with_any_string(&table, body, &limits.deadline)?
    else {
        return Ok(None);
    };
    let mut built = LexemeDfa::from_table_by(&product, &limits.deadline)?;
    let mut meter = limits.deadline.meter();
    built.counter = Some(Box::new(Counter::new(
        &built, inside, boundary, min, max, &mut meter,
    )?));
    Ok(Some(built))
}

/// The expression of "any JSON string" ([`StringBody`]).
pub fn any_string_expr() -> Expr {
    Expr::json_strings(Vec::new(), true)
}

/// "Any string" of `source` and the state after its opening quote; `None`
/// if its DFA passes the limits.
pub fn string_body(source: &dyn LexemeSource) -> Option<StringBody> {
    let dfa = source
        .lexeme(&any_string_expr(), &DfaLimits::default())
        .ok()??;
    let state = dfa.next(dfa.start, b'"');
    (state != DEAD).then_some(StringBody { dfa, state })
}

/// The DFA table of any regular expression, intersections and
/// complements included (their regular parts from `parts`).
pub fn table(expr: &Expr, limits: &DfaLimits, parts: &dyn LexemeSource) -> Result<Arc<Table>> {
    if has_boolean(expr) {
        boolean::table_of(expr, limits, parts)
    } else {
        Ok(Arc::new(build_part(expr, limits)?))
    }
}

/// The table of an expression without intersection or complement.
pub fn build_part(expr: &Expr, limits: &DfaLimits) -> Result<Table> {
    table_from_hir(&to_hir(expr), limits)
}

/// The error of a lexeme over `limits.max_bytes`, for callers that need
/// an automaton where [`build_lexeme`] found none.
pub fn too_large_error(expr: &Expr, limits: &DfaLimits) -> Error {
    too_large(
        &to_hir(expr),
        "DFA",
        &format!("over {} bytes", limits.max_bytes),
    )
}

/// Size and time limits for building one lexeme DFA.
#[derive(Clone, Copy, Debug)]
pub struct DfaLimits {
    pub max_bytes: usize,
    /// The compilation's deadline, checked while states are built.
    pub deadline: Deadline,
}

impl Default for DfaLimits {
    fn default() -> Self {
        DfaLimits {
            max_bytes: 32 << 20,
            deadline: Deadline::none(),
        }
    }
}

/// Converts a regular IR expression (no `Ref`, no `Token`) to HIR.
pub fn to_hir(expr: &Expr) -> Hir {
    match expr {
        Expr::Empty => Hir::empty(),
        Expr::Nothing => Hir::fail(),
        Expr::Literal(s) => Hir::literal(s.as_bytes()),
        Expr::Class(c) => class_hir(c),
        Expr::Seq(_) => Hir::concat(flattened(expr, |e| match e {
            Expr::Seq(v) => Some(v),
            _ => None,
        })),
        Expr::Alt(_) => Hir::alternation(flattened(expr, |e| match e {
            Expr::Alt(v) => Some(v),
            _ => None,
        })),
        Expr::Repeat {
            max: Some(max),
            min,
            ..
        } if max < min => Hir::fail(),
        Expr::Repeat { expr, min, max } => Hir::repetition(hir::Repetition {
            min: *min,
            max: *max,
            greedy: true,
            sub: Box::new(to_hir(expr)),
        }),
        Expr::Ref(_)
        | Expr::Token(_)
        | Expr::And(_)
        | Expr::Not(_)
        | Expr::JsonStrings(_)
        | Expr::DecimalMultiple(_)
        | Expr::Rfc3339(_) => {
            unreachable!("lexemes are built from expanded regular expressions")
        }
    }
}

/// The HIR of the parts of `expr`, with parts that are themselves of the
/// same kind (`kind` gives their parts) opened up in place, to any depth:
/// `regex-syntax` flattens a nested alternation or concatenation by
/// copying it into its parent, level after level, so `("a" | ("b" | ...))`
/// nested 10,000 deep cost seconds (quadratic); flattened first, it costs
/// its size.
fn flattened(expr: &Expr, kind: impl Fn(&Expr) -> Option<&Vec<Expr>>) -> Vec<Hir> {
    let mut out = Vec::new();
    let mut stack: Vec<std::slice::Iter<'_, Expr>> =
        vec![kind(expr).map_or([].iter(), |v| v.iter())];
    while let Some(top) = stack.last_mut() {
        match top.next() {
            None => {
                stack.pop();
            }
            Some(part) => match kind(part) {
                Some(v) => stack.push(v.iter()),
                None => out.push(to_hir(part)),
            },
        }
    }
    out
}

fn class_hir(c: &CharClass) -> Hir {
    if c.is_empty() {
        return Hir::fail();
    }
    let ranges = c.ranges().iter().map(|&(lo, hi)| {
        hir::ClassUnicodeRange::new(
            char::from_u32(lo).expect("scalar value"),
            char::from_u32(hi).expect("scalar value"),
        )
    });
    Hir::class(hir::Class::Unicode(hir::ClassUnicode::new(ranges)))
}

/// A DFA under construction: byte classes, a dense transition table and
/// final flags. State 0 is the start; [`DEAD`] is the absent state.
#[derive(Clone, Debug)]
pub struct Table {
    pub classes: [u8; 256],
    pub num_classes: usize,
    pub trans: Vec<u32>,
    pub is_final: Vec<bool>,
}

impl Table {
    pub fn num_states(&self) -> usize {
        self.is_final.len()
    }

    #[inline]
    pub fn next(&self, s: u32, b: u8) -> u32 {
        self.trans[s as usize * self.num_classes + self.classes[b as usize] as usize]
    }

    /// One representative byte per class.
    pub fn class_reps(&self) -> Vec<u8> {
        let mut reps: Vec<u8> = Vec::new();
        for b in 0..=255u8 {
            if self.classes[b as usize] as usize >= reps.len() {
                reps.push(b);
            }
        }
        reps
    }
}

/// `regex-automata`'s Thompson NFA of `hir`, without captures; `None`
/// past `limits.max_bytes`.
fn thompson_nfa(hir: &Hir, limits: &DfaLimits) -> Option<thompson::NFA> {
    thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .which_captures(thompson::WhichCaptures::None)
                .nfa_size_limit(Some(limits.max_bytes)),
        )
        .build_from_hir(hir)
        .ok()
}

/// The error of a lexeme automaton over the size limit.
fn too_large(hir: &Hir, what: &str, e: &dyn std::fmt::Display) -> Error {
    Error::limit(format!(
        "lexeme automaton too large ({what}: {e}); the regular expression is {}",
        truncate(&hir.to_string(), 200)
    ))
}

/// A DFA built from HIR: `regex-automata`'s Thompson NFA, then our subset
/// construction ([`determinize`](determinize::determinize)) and
/// minimization.
pub fn table_from_hir(hir: &Hir, limits: &DfaLimits) -> Result<Table> {
    table_from_hir_within(hir, limits)?.ok_or_else(|| {
        too_large(
            hir,
            "automaton",
            &format!("over {} bytes", limits.max_bytes),
        )
    })
}

/// [`table_from_hir`], `None` when the NFA or the DFA would pass
/// `limits.max_bytes`.
fn table_from_hir_within(hir: &Hir, limits: &DfaLimits) -> Result<Option<Table>> {
    let Some(nfa) = thompson_nfa(hir, limits) else {
        return Ok(None);
    };
    limits.deadline.check()?;
    match determinize::determinize(&nfa, limits) {
        Ok(t) => minimize(&t, &limits.deadline).map(Some),
        Err(determinize::Stop::Deadline(e)) => Err(e),
        Err(determinize::Stop::TooLarge) => Ok(None),
        Err(determinize::Stop::LookAround) => Err(Error::unsupported(format!(
            "look-around assertions in a lexeme: {}",
            truncate(&hir.to_string(), 200)
        ))),
    }
}

impl LexemeDfa {
    /// The lexeme of a table: states that cannot reach a final state
    /// become [`DEAD`].
    pub fn from_table(t: &Table) -> LexemeDfa {
        Self::from_table_by(t, &Deadline::none()).expect("no deadline")
    }

    /// [`LexemeDfa::from_table`], an error once `deadline` passes.
    pub fn from_table_by(t: &Table, deadline: &Deadline) -> Result<LexemeDfa> {
        let mut meter = deadline.meter();
        let Table {
            classes,
            num_classes,
            trans,
            is_final,
        } = t;
        let (classes, num_classes, mut trans, is_final) =
            (*classes, *num_classes, trans.clone(), is_final.clone());
        let n = is_final.len();
        let k = num_classes;
        // Live states: those that reach a final one (backwards from them).
        let preds = predecessors(&trans, n, k, &mut meter)?;
        let mut live = is_final.clone();
        let mut todo: Vec<usize> = (0..n).filter(|&s| live[s]).collect();
        while let Some(t) = todo.pop() {
            meter.step(1 + preds.of(t).len())?;
            for &p in preds.of(t) {
                if !live[p as usize] {
                    live[p as usize] = true;
                    todo.push(p as usize);
                }
            }
        }
        for row in trans.chunks_mut(k.max(1)) {
            meter.step(row.len())?;
            for t in row {
                if *t != DEAD && !live[*t as usize] {
                    *t = DEAD;
                }
            }
        }
        let by_class = ClassBytes::new(&classes, k);
        let mut first_bytes = vec![[0u64; 4]; n];
        for (s, fb) in first_bytes.iter_mut().enumerate() {
            meter.step(k)?;
            for (c, bytes) in by_class.bytes.iter().enumerate() {
                if trans[s * k + c] != DEAD {
                    for w in 0..4 {
                        fb[w] |= bytes[w];
                    }
                }
            }
        }
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Ok(LexemeDfa {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            classes,
            num_classes,
            trans,
            is_final,
            first_bytes,
            start: if n > 0 && live[0] { 0 } else { DEAD },
            counting: true,
            counter: None,
        })
    }
}

/// The predecessors of each state of a transition table (`n` states, `k`
/// classes) as compressed rows: those of `t` are
/// `preds.of(t)` (once per transition). An error once `meter`'s deadline
/// passes.
fn predecessors(trans: &[u32], n: usize, k: usize, meter: &mut Meter) -> Result<Adjacency> {
    let links = trans
        .iter()
        .enumerate()
        .filter(|&(_, &t)| t != DEAD)
        .map(|(i, &t)| (t, (i / k) as u32));
    Adjacency::new_metered(n, links, meter)
}

/// A DFA's byte classes seen from the trie's byte and character groups.
struct ClassBytes {
    /// Per class: its bytes.
    bytes: Vec<ByteSet>,
    /// Per class: the byte groups of its bytes.
    class_groups: Vec<u64>,
    /// The groups some byte is in.
    all_groups: u64,
    num_classes: usize,
    /// Per entry of [`MULTI_BYTE`]: the distinct classes of its lead bytes
    /// and of its second bytes.
    multi_byte_classes: Vec<(Vec<u8>, Vec<u8>)>,
    /// The distinct classes of the continuation bytes `80..=bf`.
    continuation_classes: Vec<u8>,
}

/// Valid multi-byte UTF-8 characters by their lead bytes: (character
/// group, first lead, last lead, range of the byte after the lead, number
/// of `80..=bf` bytes after that).
const MULTI_BYTE: [(u32, u8, u8, u8, u8, u8); 8] = {
    use crate::vocab::trie::{CHAR_2, CHAR_3, CHAR_4};
    [
        (CHAR_2, 0xc2, 0xdf, 0x80, 0xbf, 0),
        (CHAR_3, 0xe0, 0xe0, 0xa0, 0xbf, 1),
        (CHAR_3, 0xe1, 0xec, 0x80, 0xbf, 1),
        (CHAR_3, 0xed, 0xed, 0x80, 0x9f, 1),
        (CHAR_3, 0xee, 0xef, 0x80, 0xbf, 1),
        (CHAR_4, 0xf0, 0xf0, 0x90, 0xbf, 2),
        (CHAR_4, 0xf1, 0xf3, 0x80, 0xbf, 2),
        (CHAR_4, 0xf4, 0xf4, 0x80, 0x8f, 2),
    ]
};

impl ClassBytes {
    fn new(classes: &[u8; 256], num_classes: usize) -> ClassBytes {
        use crate::vocab::trie::byte_group;
        let mut bytes = vec![[0u64; 4]; num_classes];
        let mut class_groups = vec![0u64; num_classes];
        for b in 0..=255u8 {
            let c = classes[b as usize];
            byteset_insert(&mut bytes[c as usize], b);
            class_groups[c as usize] |= 1 << byte_group(b);
        }
        let all_groups = class_groups.iter().fold(0, |a, &g| a | g);
        let distinct = |lo: u8, hi: u8| {
            let mut v: Vec<u8> = (lo..=hi).map(|b| classes[b as usize]).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        ClassBytes {
            bytes,
            class_groups,
            all_groups,
            num_classes,
            multi_byte_classes: MULTI_BYTE
                .iter()
                .map(|&(_, lead_lo, lead_hi, lo, hi, _)| {
                    (distinct(lead_lo, lead_hi), distinct(lo, hi))
                })
                .collect(),
            continuation_classes: distinct(0x80, 0xbf),
        }
    }

    /// State `s`'s steps by trie byte group (see `TokenTrie::groups_below`)
    /// or, with `by_char`, by character group (see
    /// `TokenTrie::char_groups_below`: ASCII groups are the byte groups;
    /// the groups of valid multi-byte characters are followed through
    /// their continuation bytes). Appends to `to` the distinct states that
    /// the groups all of whose bytes (characters) are readable lead to,
    /// each with those groups, and returns the readable groups.
    fn group_steps(&self, s: u32, trans: &[u32], by_char: bool, to: &mut Vec<(u32, u64)>) -> u64 {
        use crate::vocab::trie::byte_group;
        let k = self.num_classes;
        let from = to.len();
        let add = |to: &mut Vec<(u32, u64)>, t: u32, g: u64| match to[from..]
            .iter_mut()
            .find(|x| x.0 == t)
        {
            Some(x) => x.1 |= g,
            None => to.push((t, g)),
        };
        let row = &trans[s as usize * k..(s as usize + 1) * k];
        // A group is readable when none of its bytes' classes is dead.
        let mut dead_groups = 0u64;
        for (c, &t) in row.iter().enumerate() {
            if t == DEAD {
                dead_groups |= self.class_groups[c];
            }
        }
        let mut live = self.all_groups & !dead_groups;
        if by_char {
            // Non-ASCII bytes are read by characters below.
            let non_ascii = byte_group(0x80)..=byte_group(0xff);
            live &= !non_ascii.fold(0u64, |m, g| m | 1 << g);
        }
        for (c, &t) in row.iter().enumerate() {
            let g = self.class_groups[c] & live;
            if g != 0 {
                add(to, t, g);
            }
        }
        if !by_char {
            return live;
        }
        // Each character group: every valid character of it, class by class.
        let mut dead = 0u64;
        let mut frontier: Vec<u32> = Vec::new();
        let mut next: Vec<u32> = Vec::new();
        for (&(g, .., more), (leads, seconds)) in MULTI_BYTE.iter().zip(&self.multi_byte_classes) {
            let bit = 1u64 << g;
            if dead & bit != 0 {
                continue;
            }
            frontier.clear();
            frontier.extend(leads.iter().map(|&c| row[c as usize]));
            let steps = std::iter::once(seconds).chain(std::iter::repeat_n(
                &self.continuation_classes,
                more as usize,
            ));
            for classes in steps {
                if frontier.contains(&DEAD) {
                    break;
                }
                next.clear();
                for &q in &frontier {
                    for &c in classes {
                        let t = trans[q as usize * k + c as usize];
                        if !next.contains(&t) {
                            next.push(t);
                        }
                    }
                }
                std::mem::swap(&mut frontier, &mut next);
            }
            if frontier.contains(&DEAD) {
                dead |= bit;
            } else {
                live |= bit;
                for &t in &frontier {
                    add(to, t, bit);
                }
            }
        }
        // A group some of whose characters are unreadable is not readable,
        // even where other lead bytes of it were.
        if dead != 0 {
            live &= !dead;
            for x in to[from..].iter_mut() {
                x.1 &= !dead;
            }
            let mut i = from;
            while i < to.len() {
                if to[i].1 == 0 {
                    to.swap_remove(i);
                } else {
                    i += 1;
                }
            }
        }
        live
    }
}

/// Per state, where its readable groups lead (see
/// [`ClassBytes::group_steps`]): `to[start[s]..start[s + 1]]`.
struct GroupSteps {
    live: Vec<u64>,
    start: Vec<u32>,
    to: Vec<(u32, u64)>,
}

impl GroupSteps {
    fn new(dfa: &LexemeDfa, by_char: bool, meter: &mut Meter) -> Result<GroupSteps> {
        let n = dfa.num_states();
        let by_class = ClassBytes::new(&dfa.classes, dfa.num_classes);
        let mut live = Vec::with_capacity(n);
        let mut start = Vec::with_capacity(n + 1);
        let mut to = Vec::new();
        for s in 0..n {
            meter.step(4 * dfa.num_classes)?;
            start.push(to.len() as u32);
            live.push(by_class.group_steps(s as u32, &dfa.trans, by_char, &mut to));
            // Most groups first: they are the ones worth keeping (see
            // `SafeGroups::solve`).
            to[start[s] as usize..].sort_by_key(|&(t, g)| (std::cmp::Reverse(g.count_ones()), t));
        }
        start.push(to.len() as u32);
        Ok(GroupSteps { live, start, to })
    }
}

/// For each state, byte groups `G` such that every string of at most `h`
/// bytes from `G` can be read from the state, by `h` (a trie subtree of
/// height `h` whose bytes are all in `G` is read whole, without a walk).
///
/// `S_h(s)` is a set `G` of groups readable from `s` (see
/// [`ClassBytes::group_steps`]) such that every state `t` that a byte of
/// `G` leads to has `G ⊆ S_{h-1}(t)`: then by induction every string over
/// `G` of up to `h` bytes is read. Several successors are allowed: in
/// "any name but these" or "contains `abc`", letters lead to different
/// states that all read letters, so a subtree of letters is taken whole
/// wherever it starts. A loop keeps its groups for any height; a counting
/// automaton (`.{0,64}`: each character one state further) keeps them for
/// as many bytes as characters are left, so long strings with a
/// `maxLength` are read by subtrees as a plain string is.
pub struct SafeGroups {
    /// Per state `s`: `steps[start[s]..start[s + 1]]`, pairs `(h, groups)`
    /// with `h` increasing: up to height `h`, these groups.
    steps: Vec<(u16, u64)>,
    start: Vec<u32>,
}

impl SafeGroups {
    /// The safe groups of `dfa` for `trie`'s groups (by bytes, or by
    /// characters with `by_char`) and heights; an error once `meter`'s
    /// deadline passes.
    pub fn compute(
        dfa: &LexemeDfa,
        trie: &TokenTrie,
        by_char: bool,
        meter: &mut Meter,
    ) -> Result<SafeGroups> {
        let weights = if by_char {
            trie.char_group_weights()
        } else {
            trie.group_weights()
        };
        let steps = GroupSteps::new(dfa, by_char, meter)?;
        SafeGroups::new(&steps, trie.max_len(), weights, meter)
    }

    /// Round `h` computes `S_h` from `S_{h-1}`; only the states a changed
    /// state leads to from are computed again (a counting automaton
    /// changes one layer of states per round).
    fn new(
        steps: &GroupSteps,
        horizon: usize,
        weights: &[u32; 64],
        meter: &mut Meter,
    ) -> Result<SafeGroups> {
        let n = steps.live.len();
        meter.step(2 * steps.to.len())?;
        let targets = |s: usize| &steps.to[steps.start[s] as usize..steps.start[s + 1] as usize];
        // Who leads to each state.
        let preds = Adjacency::new(
            n,
            (0..n).flat_map(|s| targets(s).iter().map(move |&(t, _)| (t, s as u32))),
        );
        let mut per_state: Vec<Vec<(u16, u64)>> = vec![Vec::new(); n];
        let mut cur = vec![u64::MAX; n];
        let mut candidates: Vec<u32> = (0..n as u32).collect();
        let mut marked = vec![false; n];
        let mut updates: Vec<(u32, u64)> = Vec::new();
        for h in 1..=horizon.min(u16::MAX as usize - 1) {
            updates.clear();
            for &s in &candidates {
                let s = s as usize;
                meter.step(1 + 2 * targets(s).len())?;
                let g = Self::solve(steps.live[s], targets(s), &cur, weights);
                if g != cur[s] {
                    updates.push((s as u32, g));
                }
            }
            if updates.is_empty() {
                break;
            }
            candidates.clear();
            for &(s, g) in &updates {
                let s = s as usize;
                meter.step(1 + preds.of(s).len())?;
                per_state[s].push(((h - 1) as u16, cur[s]));
                cur[s] = g;
                for &p in preds.of(s) {
                    if !marked[p as usize] {
                        marked[p as usize] = true;
                        candidates.push(p);
                    }
                }
            }
            for &p in &candidates {
                marked[p as usize] = false;
            }
        }
        let mut steps = Vec::new();
        let mut start = Vec::with_capacity(n + 1);
        for (s, v) in per_state.into_iter().enumerate() {
            start.push(steps.len() as u32);
            steps.extend(v);
            steps.push((u16::MAX, cur[s]));
        }
        start.push(steps.len() as u32);
        Ok(SafeGroups { steps, start })
    }

    /// A set `G` within `live` such that `G ⊆ prev[t]` for every `(t, m)`
    /// of `to` with `m ∩ G ≠ ∅` (a state's groups one byte further, `prev`
    /// being one byte shorter). Where a target does not read all of `G`,
    /// either the groups leading there go, or `G` shrinks to what the
    /// target reads, whichever keeps more of the trie (`weights`; on a tie
    /// the groups of the entries first in `to`, the largest, are kept).
    fn solve(live: u64, to: &[(u32, u64)], prev: &[u64], weights: &[u32; 64]) -> u64 {
        let weight = |mut m: u64| {
            let mut w = 0u64;
            while m != 0 {
                w += weights[m.trailing_zeros() as usize] as u64 + 1;
                m &= m - 1;
            }
            w
        };
        let mut g = live;
        // A group that cannot follow itself goes first.
        for &(t, m) in to {
            g &= !(m & !prev[t as usize]);
        }
        loop {
            let mut changed = false;
            for &(t, m) in to {
                let allowed = prev[t as usize];
                if m & g == 0 || g & !allowed == 0 {
                    continue;
                }
                let (restricted, dropped) = (g & allowed, g & !m);
                g = if weight(restricted) > weight(dropped) {
                    restricted
                } else {
                    dropped
                };
                changed = true;
            }
            if !changed {
                return g;
            }
        }
    }

    /// Approximate heap bytes.
    pub fn memory(&self) -> usize {
        self.steps.len() * 16 + self.start.len() * 4
    }

    /// The groups whose strings of up to `height` bytes state `s` reads.
    #[inline]
    pub fn groups(&self, s: u32, height: u16) -> u64 {
        let steps =
            &self.steps[self.start[s as usize] as usize..self.start[s as usize + 1] as usize];
        // Heights increase: the first step reaching `height`. Most states
        // have a step or two, which a scan reads faster than a binary
        // search.
        steps
            .iter()
            .find(|&&(h, _)| h >= height)
            .map_or(0, |&(_, g)| g)
    }
}

/// The expression repeats something a bounded number of times (more than
/// four: `\uXXXX` and dates count to four, in small automata): its DFA
/// copies states per count, and states far from the bound differ only on
/// strings longer than any token. Without such a count, two
/// states of a minimal DFA tell apart on short strings (a trie of names,
/// a loop), and refining them into token classes finds nothing to merge
/// (a 9,584-state set of property names spent 7 ms finding so).
fn has_counting(e: &Expr) -> bool {
    if let Expr::Repeat { min, max, .. } = e {
        if max.unwrap_or(*min) > 4 {
            return true;
        }
    }
    let mut found = false;
    e.for_each_child(|c| found = found || has_counting(c));
    found
}

/// The expression uses intersection or complement somewhere, or JSON
/// strings (built by their own construction, see [`json_string`]).
pub fn has_boolean(e: &Expr) -> bool {
    if matches!(
        e,
        Expr::And(_)
            | Expr::Not(_)
            | Expr::JsonStrings(_)
            | Expr::DecimalMultiple(_)
            | Expr::Rfc3339(_)
    ) {
        return true;
    }
    let mut found = false;
    e.for_each_child(|c| found |= has_boolean(c));
    found
}

fn truncate(s: &str, n: usize) -> String {
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

/// `regex-automata`'s byte classes as a table, with the first byte of each
/// class (in class order).
fn class_table(bc: &regex_automata::util::alphabet::ByteClasses) -> ([u8; 256], Vec<u8>) {
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for b in 0..=255u8 {
        let c = bc.get(b);
        classes[b as usize] = c;
        if c as usize >= reps.len() {
            reps.push(b);
        }
    }
    (classes, reps)
}

/// The same DFA through `regex-automata`'s own determinizer and minimizer
/// (the reference in tests).
#[cfg(test)]
fn table_from_hir_dense(hir: &Hir, limits: &DfaLimits) -> Result<Table> {
    use regex_automata::dfa::{dense, Automaton};
    use regex_automata::util::start;
    use regex_automata::{Anchored, MatchKind};
    let nfa = thompson_nfa(hir, limits).ok_or_else(|| too_large(hir, "NFA", &"size limit"))?;
    let dfa = dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                .start_kind(regex_automata::dfa::StartKind::Anchored)
                .minimize(true)
                .byte_classes(true)
                .dfa_size_limit(Some(limits.max_bytes))
                .determinize_size_limit(Some(limits.max_bytes)),
        )
        .build_from_nfa(&nfa)
        .map_err(|e| too_large(hir, "DFA", &e))?;
    let start = dfa
        .start_state(&start::Config::new().anchored(Anchored::Yes))
        .map_err(|e| Error::unsupported(format!("lexeme start state: {e}")))?;

    // Byte classes: bytes that behave alike in every state.
    let (classes, reps) = class_table(dfa.byte_classes());
    let num_classes = reps.len();

    // Explore from the start state, numbering states densely.
    let mut ids: FastMap<regex_automata::util::primitives::StateID, u32> = FastMap::default();
    let mut order = vec![start];
    ids.insert(start, 0);
    let mut trans: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let s = order[i];
        for &b in &reps {
            let t = dfa.next_state(s, b);
            if dfa.is_dead_state(t) || dfa.is_quit_state(t) {
                trans.push(DEAD);
            } else {
                let next = order.len() as u32;
                let id = *ids.entry(t).or_insert(next);
                if id == next {
                    order.push(t);
                }
                trans.push(id);
            }
        }
        i += 1;
    }
    let is_final = order
        .iter()
        .map(|&s| dfa.is_match_state(dfa.next_eoi_state(s)))
        .collect();
    Ok(Table {
        classes,
        num_classes,
        trans,
        is_final,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

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

    /// Both tables accept the same byte strings (a walk of the product).
    pub(crate) fn same_language(a: &Table, b: &Table) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![(0u32, 0u32)];
        while let Some((x, y)) = stack.pop() {
            if !seen.insert((x, y)) {
                continue;
            }
            let fx = x != DEAD && a.is_final[x as usize];
            let fy = y != DEAD && b.is_final[y as usize];
            if fx != fy {
                return false;
            }
            for byte in 0..=255u8 {
                let nx = if x == DEAD { DEAD } else { a.next(x, byte) };
                let ny = if y == DEAD { DEAD } else { b.next(y, byte) };
                if nx != DEAD || ny != DEAD {
                    stack.push((nx, ny));
                }
            }
        }
        true
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
            assert!(same_language(&ours, &theirs), "{pattern}");
            // Minimal: never more states than regex-automata's minimal DFA
            // (which keeps a dead state).
            assert!(ours.num_states() <= theirs.num_states(), "{pattern}");
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
        let mut path = vec![d.start];
        for _ in 0..40 {
            path.push(d.next(*path.last().unwrap(), b'a'));
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
