//! Counted strings: a JSON string lexeme whose decoded length is bounded,
//! run as the pattern's automaton with a count of code points next to it.
//!
//! `{"format": "email", "maxLength": 1024}` is the JSON strings of the
//! format's language with at most 1,024 code points. As one DFA that is
//! the product of the format's automaton with a counter: a state per
//! (pattern state, count), hundreds of thousands of states, and a word
//! count pattern `(\S+\s+){0,49}\S+` beside a `maxLength` multiplies two
//! counters. Here the lexeme keeps the pattern's automaton only (paired
//! with "any string"'s, which tells where a code point ends: a raw UTF-8
//! sequence, an escape, a surrogate pair of escapes), and its states are
//! numbered `count * m + state` for `m` automaton states; the count is
//! computed, not stored:
//!
//! - a transition into a character boundary inside the string adds one;
//! - a state is live with count `c` when some completion of the string
//!   from it, of `L` more code points, ends within the bounds
//!   (`min <= c + L <= max`): the sets of such `L` per state are computed
//!   once, backwards from the closing quote ([`Counter::new`]);
//! - the closing quote is read only within the bounds.
//!
//! The same count serves a pattern's large repetition (a word limit),
//! counting its iterations instead of code points: see
//! [`super::iterations`].
//!
//! Without a maximum, counts saturate at the minimum (every count past it
//! behaves alike). Token sets are cached per state and *count class*:
//! counts whose liveness agrees over the next `horizon` code points (the
//! longest token) cannot be told apart by any token; counts far from both
//! bounds all fall in one class, where the walk behaves exactly like the
//! pattern's automaton alone and may use its analyses (see
//! [`Counter::free_state`]). Below a minimum the count forbids only the
//! closing quote wherever liveness is the automaton's, and the analyses
//! hold for strings without one ([`Counter::unclosed_state`]).

use std::sync::OnceLock;

use super::{LexemeDfa, DEAD};
use crate::error::{Error, Result};
use crate::limits::Meter;
use crate::util::byteset::ByteSet;
use crate::util::hash::{FastMap, FastSet};

/// Most (states x counts) pairs of one counted lexeme: the liveness table
/// holds a bit per pair.
pub const MAX_COUNTED_PAIRS: usize = 1 << 27;

/// The count of a counted lexeme: see the module documentation.
pub struct Counter {
    /// States of the automaton.
    m: u32,
    min: u32,
    /// `None`: no maximum (counts saturate at `min`).
    max: Option<u32>,
    /// The largest count kept: `max`, or `min` without a maximum.
    cap: u32,
    /// Per state: inside the string (after the opening quote, before the
    /// closing one).
    inside: Vec<bool>,
    /// Per state: a step into it inside the string counts one (a
    /// character boundary, or the start of an iteration).
    boundary: Vec<bool>,
    /// What it counts: code points (else iterations of a repetition,
    /// see [`Counter::of_iterations`]).
    counts_code_points: bool,
    /// Per count: the id of its column in `columns`.
    column_of: Vec<u32>,
    /// The distinct columns of liveness, `words` words each: bit `p` of
    /// column `column_of[c]` says that state `p` with count `c` can still
    /// end. Far fewer columns than counts: liveness repeats once the
    /// count is far from both bounds.
    columns: Vec<u64>,
    /// Per state: can end, whatever the count.
    base_live: Vec<bool>,
    class_sets: ClassSets,
    classes: OnceLock<CountClasses>,
}

/// Counts grouped by what the next `horizon` code points can tell apart.
struct CountClasses {
    class_of: Vec<u32>,
    /// Per class: its smallest count.
    rep: Vec<u32>,
    /// Per count: how many counts from it on (at most `u16::MAX`) every
    /// state is live exactly where it is without a count.
    free_run: Vec<u16>,
    /// The same where the closing quote may not be read (below a
    /// minimum), liveness alone: see [`Counter::unclosed_state`].
    open_run: Vec<u16>,
}

impl Counter {
    /// The count of `dfa` (the pattern's automaton paired with "any
    /// string"'s, `inside` and `boundary` per state, see the module doc)
    /// for lengths `min..=max`; an error when the liveness table would
    /// pass [`MAX_COUNTED_PAIRS`] or the deadline passes.
    pub fn new(
        dfa: &LexemeDfa,
        inside: Vec<bool>,
        boundary: Vec<bool>,
        min: u32,
        max: Option<u32>,
        meter: &mut Meter,
    ) -> Result<Counter> {
        let m = dfa.is_final.len();
        let cap = max.unwrap_or(min);
        let width = cap as usize + 1;
        if m.saturating_mul(width) > MAX_COUNTED_PAIRS {
            return Err(Error::limit(format!(
                "a length bound of {cap} beside an automaton of {m} states needs more than \
                 {MAX_COUNTED_PAIRS} (state, count) pairs"
            )));
        }
        let k = dfa.num_classes;
        // Predecessors inside the string, with whether the step counts.
        let mut preds: Vec<Vec<(u32, bool)>> = vec![Vec::new(); m];
        let mut exits: Vec<u32> = Vec::new();
        for p in 0..m {
            if !inside[p] {
                continue;
            }
            meter.step(k)?;
            for &t in &dfa.trans[p * k..(p + 1) * k] {
                if t == DEAD {
                    continue;
                }
                if inside[t as usize] {
                    preds[t as usize].push((p as u32, boundary[t as usize]));
                } else if dfa.is_final[t as usize] {
                    exits.push(p as u32);
                }
            }
        }
        for list in &mut preds {
            list.sort_unstable();
            list.dedup();
        }
        // States that can end at all, whatever the count.
        let mut base_live = vec![false; m];
        let mut stack = exits.clone();
        for &p in &exits {
            base_live[p as usize] = true;
        }
        while let Some(p) = stack.pop() {
            meter.step(1 + preds[p as usize].len())?;
            for &(q, _) in &preds[p as usize] {
                if !base_live[q as usize] {
                    base_live[q as usize] = true;
                    stack.push(q);
                }
            }
        }
        let layers = Layers::new(&preds, &exits, cap, max.is_none(), meter)?;
        let (columns, column_of) = live_columns(&layers, min, max, meter)?;
        Ok(Counter {
            m: m as u32,
            min,
            max,
            cap,
            inside,
            boundary,
            columns,
            column_of,
            base_live,
            class_sets: ClassSets::new(dfa),
            counts_code_points: true,
            classes: OnceLock::new(),
        })
    }

    /// The same count, of the iterations that `boundary` marks rather
    /// than of code points (see [`super::iterations`]).
    pub fn of_iterations(mut self) -> Counter {
        self.counts_code_points = false;
        self
    }

    /// Whether it counts code points (a length bound), not iterations.
    pub fn counts_code_points(&self) -> bool {
        self.counts_code_points
    }

    fn width(&self) -> usize {
        self.cap as usize + 1
    }

    /// States of the counted lexeme: `(cap + 1) * m`.
    pub fn num_states(&self) -> usize {
        self.width() * self.m as usize
    }

    #[inline]
    fn split(&self, v: u32) -> (u32, u32) {
        (v % self.m, v / self.m)
    }

    #[inline]
    fn is_live(&self, p: u32, c: u32) -> bool {
        let words = (self.m as usize).div_ceil(64);
        let col = self.column_of[c as usize] as usize * words;
        self.columns[col + p as usize / 64] & (1u64 << (p % 64)) != 0
    }

    /// The automaton's state of `v` and its count.
    #[inline]
    pub fn state_and_count(&self, v: u32) -> (u32, u32) {
        self.split(v)
    }

    /// Whether the automaton's state `p` is inside the string (between
    /// the quotes).
    #[inline]
    pub fn is_inside(&self, p: u32) -> bool {
        self.inside[p as usize]
    }

    /// The length bounds: `min..=max` code points (`None`: no maximum).
    pub fn bounds(&self) -> (u32, Option<u32>) {
        (self.min, self.max)
    }

    /// The closing quote may be read with count `c`.
    #[inline]
    fn in_bounds(&self, c: u32) -> bool {
        c >= self.min && self.max.is_none_or(|x| c <= x)
    }

    /// The state after `byte` from state `v` (see the module doc).
    #[inline]
    pub fn next(&self, dfa: &LexemeDfa, v: u32, byte: u8) -> u32 {
        let (p, c) = self.split(v);
        let t = dfa.trans[p as usize * dfa.num_classes + dfa.classes[byte as usize] as usize];
        if t == DEAD {
            return DEAD;
        }
        if !self.inside[t as usize] {
            // The closing quote (the start state has no way in).
            return if !self.inside[p as usize] || self.in_bounds(c) {
                t
            } else {
                DEAD
            };
        }
        let mut c2 = c;
        if self.inside[p as usize] && self.boundary[t as usize] {
            c2 += 1;
            if c2 > self.cap {
                if self.max.is_some() {
                    return DEAD;
                }
                c2 = self.cap;
            }
        }
        if !self.is_live(t, c2) {
            return DEAD;
        }
        c2 * self.m + t
    }

    pub fn is_final(&self, dfa: &LexemeDfa, v: u32) -> bool {
        v < self.m && dfa.is_final[v as usize]
    }

    /// The bytes with a transition from `v`.
    pub fn first_bytes(&self, dfa: &LexemeDfa, v: u32) -> ByteSet {
        let (p, _) = self.split(v);
        self.class_sets
            .first_bytes(dfa, p, |b| self.next(dfa, v, b) != DEAD)
    }

    /// The automaton's state of `v`, when no string of up to `height`
    /// bytes from `v` depends on the count (the next `height + 1` counts
    /// are live wherever the automaton is): then what the automaton's
    /// analyses say of that state for such strings (safe groups) holds for
    /// `v`. `horizon` is the vocabulary's (see [`Self::token_class`]).
    pub fn free_state(&self, v: u32, height: usize, horizon: usize) -> Option<u32> {
        let (p, c) = self.split(v);
        let classes = self.classes(horizon);
        (height < classes.free_run[c as usize] as usize).then_some(p)
    }

    /// The automaton's state of `v` when no string of up to `height`
    /// bytes from `v` depends on the count except through the closing
    /// quote (below a minimum, where it may not be read yet): what the
    /// automaton's analyses say of that state for such strings holds for
    /// `v` on those without a quote. A string with a minimum and a
    /// `pattern` is in that case from its first code point to its
    /// minimum; without this, the first masks in it walked every token
    /// through the count.
    pub fn unclosed_state(&self, v: u32, height: usize, horizon: usize) -> Option<u32> {
        let (p, c) = self.split(v);
        let classes = self.classes(horizon);
        (height < classes.open_run[c as usize] as usize).then_some(p)
    }

    /// The smallest state equivalent to `v` on every string of up to
    /// `horizon` bytes.
    pub fn token_class(&self, v: u32, horizon: usize) -> u32 {
        let (p, c) = self.split(v);
        if !self.inside[p as usize] {
            return v;
        }
        let classes = self.classes(horizon);
        classes.rep[classes.class_of[c as usize] as usize] * self.m + p
    }

    /// Computes the count classes for `horizon` now (at compile time)
    /// rather than in the first mask.
    pub fn prepare(&self, horizon: usize) {
        self.classes(horizon);
    }

    /// Groups the counts by the liveness of every state over the next
    /// `horizon + 1` counts (a token of `horizon` bytes ends at most that
    /// many code points), computed once (the horizon is the vocabulary's).
    fn classes(&self, horizon: usize) -> &CountClasses {
        self.classes.get_or_init(|| {
            let width = self.width();
            let m = self.m as usize;
            // Columns: per count, the live states and whether the count is
            // within the bounds; equal columns share an id.
            let mut column_ids: FastMap<(u32, bool), u32> = FastMap::default();
            let mut column_of = Vec::with_capacity(width);
            let words = m.div_ceil(64);
            let mut base = vec![0u64; words];
            for p in 0..m {
                if self.base_live[p] {
                    base[p / 64] |= 1 << (p % 64);
                }
            }
            // Runs of counts share a key (every count far from the bounds
            // has one column): only where it changes is it looked up.
            let mut last: Option<((u32, bool), u32)> = None;
            for c in 0..width as u32 {
                let key = (self.column_of[c as usize], self.in_bounds(c));
                let id = match last {
                    Some((k, id)) if k == key => id,
                    _ => {
                        let n = column_ids.len() as u32;
                        *column_ids.entry(key).or_insert(n)
                    }
                };
                last = Some((key, id));
                column_of.push(id);
            }
            // The column where every state that can end at all is live,
            // within the bounds.
            let base_live_column = self
                .columns
                .chunks_exact(words.max(1))
                .position(|col| col == &base[..])
                .map(|i| i as u32);
            let base_id = base_live_column.and_then(|i| column_ids.get(&(i, true)).copied());
            // Past the maximum nothing is live: a column of its own.
            let dead_column = column_ids.len() as u32;
            let column_at = |c: usize| -> u32 {
                if c < width {
                    column_of[c]
                } else if self.max.is_none() {
                    column_of[width - 1]
                } else {
                    dead_column
                }
            };
            let (class_of, rep) = window_classes(width, horizon, column_at);
            let free_run = runs_from(width, |c| base_id == Some(column_at(c)));
            // Liveness alone, the bounds aside.
            let open_run = runs_from(width, |c| {
                base_live_column.is_some_and(|base| match c {
                    c if c < width => self.column_of[c] == base,
                    _ => self.max.is_none() && self.column_of[width - 1] == base,
                })
            });
            CountClasses {
                class_of,
                rep,
                free_run,
                open_run,
            }
        })
    }

    /// Per state of the automaton (`dfa`, this count's): inside the string
    /// at a character boundary, where nothing of a code point is read yet
    /// (a step into it counts one, or it follows the opening quote).
    pub fn char_boundaries(&self, dfa: &LexemeDfa) -> Vec<bool> {
        let k = dfa.num_classes;
        let mut at = self.boundary.clone();
        for (p, &inside) in self.inside.iter().enumerate() {
            if inside {
                continue;
            }
            for &t in &dfa.trans[p * k..(p + 1) * k] {
                if t != DEAD && self.inside[t as usize] {
                    at[t as usize] = true;
                }
            }
        }
        for (a, &inside) in at.iter_mut().zip(&self.inside) {
            *a &= inside;
        }
        at
    }

    /// Per state of the automaton (`dfa`, this count's): inside the string,
    /// and from it on the count bounds code points and nothing else. That
    /// is, every state it leads to inside the string (itself included)
    /// that can end at all is live with count `c` exactly when `c`, plus
    /// one for a code point begun and not finished (off `at_boundary`, see
    /// [`Self::char_boundaries`]), is within the maximum. A class repeated
    /// (`^[a-z]{1,32}$`), "any string", `^\S+$` past its first code
    /// point are such; a pattern that must read on somewhere (`^a+(-a+)*$`
    /// before a hyphen) is not. From such a state at a boundary with count
    /// `c`, a token is read exactly when the automaton reads it and its
    /// code points (one begun counted whole) fit in what the bounds leave:
    /// along a token, the count plus the code point begun only grows. All
    /// `false` for a count of iterations.
    pub fn code_points_alone(&self, dfa: &LexemeDfa, at_boundary: &[bool]) -> Vec<bool> {
        let m = self.m as usize;
        if !self.counts_code_points {
            return vec![false; m];
        }
        let mut alone = self.inside.clone();
        let words = m.div_ceil(64);
        let mut checked: FastSet<u32> = FastSet::default();
        let mut last = u32::MAX;
        for c in 0..=self.cap {
            let column = self.column_of[c as usize];
            // Columns repeat: each with each room left is checked once.
            let room = |extra: u32| self.max.is_none_or(|x| c + extra <= x);
            let key = column * 4 + room(0) as u32 * 2 + room(1) as u32;
            if key == last || !checked.insert(key) {
                continue;
            }
            last = key;
            let bits = &self.columns[column as usize * words..][..words];
            for (q, ok) in alone.iter_mut().enumerate() {
                let live = bits[q / 64] & (1u64 << (q % 64)) != 0;
                *ok &= live == (self.base_live[q] && room(u32::from(!at_boundary[q])));
            }
        }
        // A state leading to one where the count does more is not alone.
        let k = dfa.num_classes;
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); m];
        for p in (0..m).filter(|&p| self.inside[p]) {
            for &t in &dfa.trans[p * k..(p + 1) * k] {
                if t != DEAD && self.inside[t as usize] {
                    preds[t as usize].push(p as u32);
                }
            }
        }
        let mut todo: Vec<usize> = (0..m).filter(|&q| self.inside[q] && !alone[q]).collect();
        while let Some(q) = todo.pop() {
            for &p in &preds[q] {
                if std::mem::replace(&mut alone[p as usize], false) {
                    todo.push(p as usize);
                }
            }
        }
        alone
    }

    /// Approximate heap bytes, the count classes included once computed
    /// (per count: a column, a class and two runs, 12 bytes).
    pub fn memory(&self) -> usize {
        let classes = self.classes.get().map_or(0, |c| {
            c.class_of.len() * 4 + c.rep.len() * 4 + (c.free_run.len() + c.open_run.len()) * 2
        });
        self.columns.len() * 8
            + self.column_of.len() * 4
            + self.inside.len() * 3
            + self.class_sets.memory()
            + classes
    }
}

/// A DFA's byte classes as sets of bytes, with one byte of each: what a
/// counted lexeme tries, class by class, for its first bytes.
pub(super) struct ClassSets {
    bytes: Vec<ByteSet>,
    reps: Vec<u8>,
}

impl ClassSets {
    pub(super) fn new(dfa: &LexemeDfa) -> ClassSets {
        let k = dfa.num_classes;
        let mut bytes = vec![ByteSet::EMPTY; k];
        let mut reps = vec![0u8; k];
        for b in (0..=255u8).rev() {
            let c = dfa.classes[b as usize] as usize;
            bytes[c].insert(b);
            reps[c] = b;
        }
        ClassSets { bytes, reps }
    }

    /// The bytes of the classes with a transition from table state
    /// `state` whose representative byte `steps` takes.
    pub(super) fn first_bytes(
        &self,
        dfa: &LexemeDfa,
        state: u32,
        steps: impl Fn(u8) -> bool,
    ) -> ByteSet {
        let k = dfa.num_classes;
        let mut set = ByteSet::EMPTY;
        for (class, &t) in dfa.trans[state as usize * k..(state as usize + 1) * k]
            .iter()
            .enumerate()
        {
            if t != DEAD && steps(self.reps[class]) {
                set.union_with(self.bytes[class]);
            }
        }
        set
    }

    pub(super) fn memory(&self) -> usize {
        self.bytes.len() * 33
    }
}

/// Per count `0..=width`, how many consecutive counts from it on satisfy
/// `at` (at most `u16::MAX`); `at(width)` stands for every count past
/// `width` as well.
fn runs_from(width: usize, at: impl Fn(usize) -> bool) -> Vec<u16> {
    let mut run = vec![0u16; width + 1];
    run[width] = if at(width) { u16::MAX } else { 0 };
    for c in (0..width).rev() {
        run[c] = if at(c) {
            run[c + 1].saturating_add(1)
        } else {
            0
        };
    }
    run
}

/// Groups the counts `0..width` by their *window*, the columns of counts
/// `c..=c + horizon` (`column_at`, defined past `width` too): per count its
/// class, and per class its smallest count. Two counts with one window
/// cannot be told apart by `horizon` more counting steps.
pub(super) fn window_classes(
    width: usize,
    horizon: usize,
    column_at: impl Fn(usize) -> u32,
) -> (Vec<u32>, Vec<u32>) {
    // A window is keyed by its first column and where (relative to its
    // start) and to what it changes: columns change only near the bounds,
    // so a window far from them is one entry rather than `horizon + 1` (a
    // `maxLength` of 65,536 took 12 ms).
    let mut changes = Vec::new();
    let mut previous = column_at(0);
    for p in 1..width + horizon {
        let column = column_at(p);
        if column != previous {
            changes.push(p);
            previous = column;
        }
    }
    let mut window_ids: FastMap<Vec<(u32, u32)>, u32> = FastMap::default();
    let mut class_of = Vec::with_capacity(width);
    let mut rep = Vec::new();
    let mut first_change = 0;
    // The last window's column and id when it held no change: the counts
    // after it up to the next change's window have that window too, and
    // are filled in at once (most counts of a large bound).
    let mut window = Vec::new();
    let mut last_quiet: Option<(u32, u32)> = None;
    let mut c = 0;
    while c < width {
        while first_change < changes.len() && changes[first_change] <= c {
            first_change += 1;
        }
        let column = column_at(c);
        let next_change = changes.get(first_change).copied().unwrap_or(usize::MAX);
        let quiet = next_change > c + horizon;
        if let Some((_, id)) = last_quiet.filter(|&(col, _)| quiet && col == column) {
            let end = width.min(next_change - horizon);
            class_of.resize(end, id);
            c = end;
            continue;
        }
        window.clear();
        window.push((0, column));
        window.extend(
            changes[first_change..]
                .iter()
                .take_while(|&&p| p <= c + horizon)
                .map(|&p| ((p - c) as u32, column_at(p))),
        );
        let n = window_ids.len() as u32;
        let id = *window_ids.entry(window.clone()).or_insert_with(|| {
            rep.push(c as u32);
            n
        });
        last_quiet = quiet.then_some((column, id));
        class_of.push(id);
        c += 1;
    }
    (class_of, rep)
}

/// For each length `L`, the states from which the closing quote is `L`
/// code points away (on some path): layer `L`.
///
/// Layer `L + 1` is a function of layer `L` alone (the predecessors over
/// a counting step, closed over the steps that do not count), so the
/// layers repeat with some period once one repeats: they are computed
/// until then (or up to the cap), and no more. A `maxLength` of 65,536 on
/// an automaton of 1,149 states took 75 million (state, length) pairs
/// visited one by one, over half a second; its layers repeat after a few.
struct Layers {
    /// Words of one layer (a bit per state).
    words: usize,
    /// The distinct layers, `words` words each, in order of appearance.
    sets: Vec<u64>,
    /// Layers `0..sets.len()` are `sets` in order; `Some((t, period))`
    /// once layer `sets.len()` repeated layer `t`: then layer `L >= t` is
    /// layer `t + (L - t) % period`.
    cycle: Option<(usize, usize)>,
    /// Without a maximum: the states some length `>= cap` away.
    at_least_cap: Vec<u64>,
}

impl Layers {
    /// The layers up to `cap` (and, when `saturate`, the union of those
    /// from `cap` on) of the predecessor lists `preds` (with whether each
    /// step counts) and the states `exits` before the closing quote.
    fn new(
        preds: &[Vec<(u32, bool)>],
        exits: &[u32],
        cap: u32,
        saturate: bool,
        meter: &mut Meter,
    ) -> Result<Layers> {
        let m = preds.len();
        let words = m.div_ceil(64);
        let has = |set: &[u64], p: usize| set[p / 64] & (1u64 << (p % 64)) != 0;
        // Adds to `set` every state reaching one of `todo` by steps that
        // do not count, except those in `skip`.
        let close =
            |set: &mut Vec<u64>, mut todo: Vec<u32>, skip: Option<&[u64]>, meter: &mut Meter| {
                while let Some(p) = todo.pop() {
                    meter.step(1 + preds[p as usize].len())?;
                    for &(q, counts) in &preds[p as usize] {
                        let q = q as usize;
                        if !counts && !has(set, q) && !skip.is_some_and(|s| has(s, q)) {
                            set[q / 64] |= 1 << (q % 64);
                            todo.push(q as u32);
                        }
                    }
                }
                Ok::<(), Error>(())
            };
        // The layer after `set` (none of `skip` in it).
        let step = |set: &[u64], skip: Option<&[u64]>, meter: &mut Meter| -> Result<Vec<u64>> {
            let mut next = vec![0u64; words];
            let mut todo = Vec::new();
            for p in ones(set) {
                meter.step(1 + preds[p].len())?;
                for &(q, counts) in &preds[p] {
                    let q = q as usize;
                    if counts && !has(&next, q) && !skip.is_some_and(|s| has(s, q)) {
                        next[q / 64] |= 1 << (q % 64);
                        todo.push(q as u32);
                    }
                }
            }
            close(&mut next, todo, skip, meter)?;
            Ok(next)
        };
        let mut first = vec![0u64; words];
        for &p in exits {
            first[p as usize / 64] |= 1 << (p % 64);
        }
        close(&mut first, exits.to_vec(), None, meter)?;
        let mut seen: FastMap<Vec<u64>, usize> = FastMap::default();
        let mut sets = Vec::new();
        let mut cycle = None;
        let mut layer = first;
        loop {
            let n = seen.len();
            if let Some(&t) = seen.get(&layer) {
                cycle = Some((t, n - t));
                break;
            }
            sets.extend_from_slice(&layer);
            seen.insert(layer.clone(), n);
            if n as u64 >= cap as u64 {
                break;
            }
            layer = step(&layer, None, meter)?;
        }
        let mut layers = Layers {
            words,
            sets,
            cycle,
            at_least_cap: Vec::new(),
        };
        if saturate {
            // The union of the layers from `cap` on: layer `cap` and what
            // steps back from it reach, each state added once.
            let mut all = layers.get(cap as usize).to_vec();
            let mut frontier = all.clone();
            while frontier.iter().any(|&w| w != 0) {
                let new = step(&frontier, Some(&all), meter)?;
                for (a, n) in all.iter_mut().zip(&new) {
                    *a |= n;
                }
                frontier = new;
            }
            layers.at_least_cap = all;
        }
        Ok(layers)
    }

    /// The number of distinct layers (all of them, with a cycle).
    fn distinct(&self) -> usize {
        self.sets.len() / self.words.max(1)
    }

    /// Whether layers `0..=h` hold every layer there is, so that a union
    /// from layer 0 stops growing at `h`.
    fn all_merged_by(&self, h: usize) -> bool {
        self.cycle.is_some() && h + 1 >= self.distinct()
    }

    /// Merges layers `from..=to` into `acc`. Past the start of the cycle
    /// one period holds every layer, so at most [`Self::distinct`] layers
    /// are read however wide the range (a `maxLength` of 100,000 read
    /// each of its counts).
    fn merge_range(&self, from: usize, to: usize, acc: &mut [u64]) {
        let to = match self.cycle {
            Some((start, period)) => to.min(from.max(start) + period - 1),
            None => to,
        };
        for l in from..=to {
            or(acc, self.get(l));
        }
    }

    /// Layer `l`.
    fn get(&self, l: usize) -> &[u64] {
        let stored = self.sets.len() / self.words;
        let i = match self.cycle {
            Some((t, period)) if l >= stored => t + (l - t) % period,
            // Past the cap, without a cycle: never asked.
            _ => l.min(stored - 1),
        };
        &self.sets[i * self.words..(i + 1) * self.words]
    }
}

/// The positions of the set bits of `set`.
fn ones(set: &[u64]) -> impl Iterator<Item = usize> + '_ {
    set.iter().enumerate().flat_map(|(i, &w)| {
        let mut w = w;
        std::iter::from_fn(move || {
            (w != 0).then(|| {
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                i * 64 + b
            })
        })
    })
}

/// The liveness of every count (`0..=cap`): the states from which a
/// length within the bounds is left, i.e. the union of the layers `L`
/// with `min <= c + L <= max`. Returns the distinct columns (`words` words
/// each) and each count's column.
fn live_columns(
    layers: &Layers,
    min: u32,
    max: Option<u32>,
    meter: &mut Meter,
) -> Result<(Vec<u64>, Vec<u32>)> {
    let words = layers.words;
    let cap = max.unwrap_or(min) as usize;
    let mut ids: FastMap<Vec<u64>, u32> = FastMap::default();
    let mut columns = Vec::new();
    let mut column_of = vec![0u32; cap + 1];
    // The last column added and its id: consecutive counts mostly share
    // their column (all of them far from the bounds), which a comparison
    // finds faster than a hash.
    let mut last: Option<(Vec<u64>, u32)> = None;
    let mut id_of = |col: &[u64]| -> u32 {
        if let Some((prev, id)) = &last {
            if prev[..] == col[..] {
                return *id;
            }
        }
        let n = ids.len() as u32;
        let id = *ids.entry(col.to_vec()).or_insert_with(|| {
            columns.extend_from_slice(col);
            n
        });
        last = Some((col.to_vec(), id));
        id
    };
    let Some(max) = max.map(|x| x as usize) else {
        // Count `c` needs a length of at least `min - c`: the union of the
        // layers from `cap - c` on, built from the last.
        let mut acc = layers.at_least_cap.clone();
        column_of[0] = id_of(&acc);
        for (c, column) in column_of.iter_mut().enumerate().skip(1) {
            meter.step(words)?;
            or(&mut acc, layers.get(cap - c));
            *column = id_of(&acc);
        }
        return Ok((columns, column_of));
    };
    let min = min as usize;
    if max < min {
        // No length is within the bounds: nothing is live.
        column_of.fill(id_of(&vec![0u64; words]));
        return Ok((columns, column_of));
    }
    // From `min` on a count needs a length of at most `max - c`: the
    // union of the first layers, which stops growing once every distinct
    // layer is in it (the counts below share its column).
    let mut acc = vec![0u64; words];
    for h in 0..=max - min {
        meter.step(words)?;
        or(&mut acc, layers.get(h));
        column_of[max - h] = id_of(&acc);
        if layers.all_merged_by(h) {
            let id = column_of[max - h];
            column_of[min..max - h].fill(id);
            break;
        }
    }
    // Below `min`: lengths `min - c ..= max - c`, a window of `w` layers
    // starting at `a = min - c` (1 to `min`). In blocks of `w` layers, a
    // window is the end of one block (`ends`, unions from each start to
    // the block's end) and the beginning of the next (unions from the
    // next block's start), so each layer is merged twice at most.
    let w = max - min + 1;
    // (No count is below a minimum of 0.)
    let mut block = if min == 0 { 1 } else { 1 / w * w };
    while block <= min {
        let first = block.max(1);
        let last = (block + w - 1).min(min);
        // Unions from each start in `first..=last` to the block's end.
        let mut ends = vec![0u64; (last - first + 1) * words];
        let mut acc = vec![0u64; words];
        meter.step(words * layers.distinct())?;
        layers.merge_range(last + 1, block + w - 1, &mut acc);
        for l in (first..=last).rev() {
            meter.step(words)?;
            or(&mut acc, layers.get(l));
            ends[(l - first) * words..(l - first + 1) * words].copy_from_slice(&acc);
        }
        // The next block's unions from its start, merged as they grow.
        let mut head = vec![0u64; words];
        let mut col = vec![0u64; words];
        for a in first..=last {
            let end = &ends[(a - first) * words..(a - first + 1) * words];
            if a > block {
                meter.step(2 * words)?;
                or(&mut head, layers.get(a + w - 1));
            }
            col.copy_from_slice(end);
            or(&mut col, &head);
            column_of[min - a] = id_of(&col);
        }
        block += w;
    }
    Ok((columns, column_of))
}

/// `acc |= x`, word by word.
fn or(acc: &mut [u64], x: &[u64]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a |= b;
    }
}

/// A pattern's automaton paired with "any string"'s: see
/// [`pair_with_any_string`].
pub(super) struct PairedString {
    /// Start state 0.
    pub table: super::Table,
    /// Per state: inside the string.
    pub inside: Vec<bool>,
    /// Per state: at a character boundary (where a step into it inside
    /// the string ends a code point).
    pub boundary: Vec<bool>,
    /// Per state: the pattern's state.
    pub pattern_state: Vec<u32>,
}

/// The product of `pattern` (a table of quoted JSON strings, start state
/// 0) with "any string" (`body`), which tells for each state whether it
/// is inside the string and at a character boundary there. `None` when
/// `pattern` reads anything "any string" does not (then it is not a plain
/// JSON string language and cannot be counted this way).
pub(super) fn pair_with_any_string(
    pattern: &super::Table,
    body: &super::StringBody,
    deadline: &crate::limits::Deadline,
) -> Result<Option<PairedString>> {
    let any = &*body.dfa;
    let content = super::ContentStates::new(any, body.state);
    let mut meter = deadline.meter();
    let (classes, reps) = super::boolean::joint_classes(
        (&pattern.classes, pattern.num_classes),
        (&any.classes, any.num_classes),
    );
    let k = reps.len();
    if pattern.num_states() == 0 || any.start == DEAD {
        return Ok(None);
    }
    let mut ids: FastMap<(u32, u32), u32> = FastMap::default();
    let mut pairs: Vec<(u32, u32)> = vec![(0, any.start)];
    ids.insert((0, any.start), 0);
    let mut trans: Vec<u32> = Vec::new();
    let mut is_final = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        meter.step(k)?;
        let (d, a) = pairs[i];
        is_final.push(pattern.is_final[d as usize]);
        for &b in &reps {
            let d2 = pattern.next(d, b);
            if d2 == DEAD {
                trans.push(DEAD);
                continue;
            }
            let a2 = any.next(a, b);
            if a2 == DEAD {
                return Ok(None);
            }
            let n = pairs.len() as u32;
            let id = *ids.entry((d2, a2)).or_insert_with(|| {
                pairs.push((d2, a2));
                n
            });
            trans.push(id);
        }
        i += 1;
        if pairs.len() > MAX_COUNTED_PAIRS {
            return Err(Error::limit("a counted string's automaton is too large"));
        }
    }
    let inside: Vec<bool> = pairs
        .iter()
        .map(|&(_, a)| content.index[a as usize] != u32::MAX)
        .collect();
    let boundary: Vec<bool> = pairs
        .iter()
        .map(|&(_, a)| content.index[a as usize] == 0)
        .collect();
    // After the closing quote the lexeme must end: nothing but the
    // string is counted.
    for (s, &(_, a)) in pairs.iter().enumerate() {
        let outside_after = !inside[s] && s != 0;
        if outside_after
            && (!any.is_final[a as usize] || trans[s * k..(s + 1) * k].iter().any(|&t| t != DEAD))
        {
            return Ok(None);
        }
    }
    // The start reads only the opening quote.
    if trans[..k].iter().any(|&t| t != DEAD && !inside[t as usize]) {
        return Ok(None);
    }
    Ok(Some(PairedString {
        table: super::Table {
            classes,
            num_classes: k,
            trans,
            is_final,
        },
        inside,
        boundary,
        pattern_state: pairs.iter().map(|&(d, _)| d).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Deadline;

    /// Liveness the direct way: every (state, length) pair, lengths past
    /// the cap dropped (or, without a maximum, kept at the cap).
    fn reference(
        preds: &[Vec<(u32, bool)>],
        exits: &[u32],
        min: u32,
        max: Option<u32>,
    ) -> Vec<Vec<bool>> {
        let m = preds.len();
        let cap = max.unwrap_or(min) as usize;
        let mut lens = vec![vec![false; cap + 1]; m];
        let mut todo: Vec<(usize, usize)> = Vec::new();
        for &p in exits {
            if !lens[p as usize][0] {
                lens[p as usize][0] = true;
                todo.push((p as usize, 0));
            }
        }
        while let Some((p, l)) = todo.pop() {
            for &(q, counts) in &preds[p] {
                let mut l2 = l + counts as usize;
                if l2 > cap {
                    if max.is_some() {
                        continue;
                    }
                    l2 = cap;
                }
                if !lens[q as usize][l2] {
                    lens[q as usize][l2] = true;
                    todo.push((q as usize, l2));
                }
            }
        }
        (0..=cap)
            .map(|c| {
                (0..m)
                    .map(|p| {
                        let lo = (min as usize).saturating_sub(c);
                        let hi = max.map_or(cap, |x| x as usize - c);
                        (lo..=hi.min(cap)).any(|l| lens[p][l])
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn layered_liveness_equals_the_direct_one() {
        let mut seed = 1u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for round in 0..400 {
            let m = 1 + next(70) as usize;
            let mut preds: Vec<Vec<(u32, bool)>> = vec![Vec::new(); m];
            for _ in 0..next(3 * m as u64 + 1) {
                let (p, q) = (next(m as u64) as usize, next(m as u64) as u32);
                // Mostly counting steps, as code points are.
                preds[p].push((q, next(5) != 0));
            }
            if round % 4 == 3 {
                // A ring of counting steps: layers repeat with a period of
                // `m`, so a union over a window depends on every layer.
                for (p, list) in preds.iter_mut().enumerate() {
                    list.push((((p + 1) % m) as u32, true));
                }
            }
            for list in &mut preds {
                list.sort_unstable();
                list.dedup();
            }
            let exits: Vec<u32> = (0..1 + next(3)).map(|_| next(m as u64) as u32).collect();
            let min = match round {
                _ if round % 7 == 0 => 0,
                // Bounds wide enough that unions skip repeated layers.
                _ if round % 5 == 1 => next(200) as u32,
                _ => next(12) as u32,
            };
            let max = match round % 3 {
                0 => None,
                // Below the minimum: nothing is live.
                _ if round % 11 == 0 => Some(min.saturating_sub(1 + next(3) as u32)),
                _ if round % 5 == 1 => Some(min + next(150) as u32),
                _ => Some(min + next(if round % 2 == 0 { 5 } else { 90 }) as u32),
            };
            let mut meter = Deadline::none().meter();
            let layers = Layers::new(
                &preds,
                &exits,
                max.unwrap_or(min),
                max.is_none(),
                &mut meter,
            )
            .unwrap();
            let (columns, column_of) = live_columns(&layers, min, max, &mut meter).unwrap();
            let words = m.div_ceil(64);
            let want = reference(&preds, &exits, min, max);
            for (c, want) in want.iter().enumerate() {
                let col = &columns[column_of[c] as usize * words..][..words];
                for (p, &w) in want.iter().enumerate() {
                    let got = col[p / 64] & (1u64 << (p % 64)) != 0;
                    assert_eq!(
                        got, w,
                        "round {round}: m {m} min {min} max {max:?} count {c} state {p}"
                    );
                }
            }
        }
    }
    /// Window classes the direct way: each count's window built and
    /// numbered in order of first appearance.
    fn windows_directly(
        width: usize,
        horizon: usize,
        column_at: impl Fn(usize) -> u32,
    ) -> (Vec<u32>, Vec<u32>) {
        let mut ids: FastMap<Vec<(u32, u32)>, u32> = FastMap::default();
        let (mut class_of, mut rep) = (Vec::new(), Vec::new());
        for c in 0..width {
            let mut window = vec![(0, column_at(c))];
            for p in c + 1..=c + horizon {
                if column_at(p) != column_at(p - 1) {
                    window.push(((p - c) as u32, column_at(p)));
                }
            }
            let n = ids.len() as u32;
            class_of.push(*ids.entry(window).or_insert_with(|| {
                rep.push(c as u32);
                n
            }));
        }
        (class_of, rep)
    }

    #[test]
    fn window_classes_equal_the_direct_ones() {
        let mut rng = crate::util::test_rng::TestRng::new(0x3A1D_0C0F_F5E7_0007);
        for round in 0..300 {
            let width = 1 + rng.below(if round % 4 == 0 { 3_000 } else { 60 });
            let horizon = rng.below(20);
            // Long runs of one column, as counts far from the bounds have,
            // with changes and returns to earlier columns between them.
            let mut columns = Vec::new();
            while columns.len() < width + horizon {
                let long = rng.below(2) == 0;
                let run = 1 + rng.below(if long { 400 } else { 4 });
                let column = rng.below(4) as u32;
                columns.extend(std::iter::repeat_n(column, run));
            }
            let column_at = |c: usize| columns[c];
            assert_eq!(
                window_classes(width, horizon, column_at),
                windows_directly(width, horizon, column_at),
                "round {round}: width {width} horizon {horizon}"
            );
        }
    }
}
