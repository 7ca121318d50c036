//! Counted iterations under a length bound: the JSON strings of a pattern
//! with one large bounded repetition and a `maxLength`, run as the
//! automaton of the pattern with the repetition built once and two counts
//! beside it, of iterations and of code points.
//!
//! A word limit with a length limit,
//! `{"pattern": "^(?:\\S+\\s+){0,49}\\S+$", "maxLength": 500}`, is common
//! in schemas written for models. One count alone does not do: counting
//! the code points over the spelled-out word limit (71 states per word
//! once every character may be escaped) took 9 ms to build and analyse
//! for 49 words and 33 ms for 199. Here the automaton is the loop's
//! ([`CountedLoop`], about 100 states for any bound), paired with "any
//! string"'s to tell where code points end, and a state is the triple
//! (table state, iterations, code points), numbered by bit fields:
//! the code points above the iterations above the table state (see below
//! for the table).
//!
//! Liveness. The length has a maximum only: a minimum that every string
//! of the pattern meets anyway is dropped, and any other is left to the
//! one-count construction. A state `s` with `i` iterations and `c` code
//! points is live when some completion ends within both bounds, that is
//! when `c + left(s, i) <= max`, where `left(s, i)` is the fewest code
//! points from `s` to a closing quote read with the iterations within
//! their bounds. `left` is a shortest-path table over (state, iterations)
//! pairs, computed once backwards from the closing quote (a breadth-first
//! search with two queues: a step adds zero or one code point).
//!
//! The table: what the token-set layer learns of a lexeme's table (the
//! trie subtrees each state reads whole) holds for a counted state only
//! where the count cannot stop a string the table reads. The loop's
//! automaton alone knows nothing of the iteration bound, and within a
//! token's length a word limit is always near (a subtree of 20 bytes may
//! hold 10 words), so its analyses would serve almost no state and every
//! mask near the end would walk byte by byte (4 ms instead of 0.7). The
//! table is therefore the paired automaton in [`EXACT_BUDGETS`] copies by
//! iterations left (more where a state needs more iterations to end):
//! the last copies have exactly 2, 1, 0 left (a step that starts an
//! iteration leads to the next copy, none from the last), and the first
//! stands for that many or more. A state's copy follows its
//! count (from the first copy an iteration stays in it while enough are
//! left). Then the table never reads more than the count allows, and
//! where the code points are far from their maximum, what the table
//! reads from a state, the counted state reads: the first copy only
//! reads fewer iterations than the count has left, so tokens of many
//! words are walked rather than read whole, and few tokens hold many.
//!
//! Token classes, for the token-set caches: within `horizon` bytes (the
//! longest token) the code points grow by at most `horizon`. Far enough
//! below the maximum (`c + horizon + most_left <= max`) the code point
//! count can never fail a step, and all such counts share a class; the
//! iterations are grouped by the windows of `left`'s columns (with the
//! table copy) they see, as [`Counter`](super::Counter) groups its
//! counts.

use std::collections::VecDeque;
use std::sync::OnceLock;

use super::counted::{pair_with_any_string, window_classes, ClassSets};
use super::iterations::CountedLoop;
use super::{DfaLimits, LexemeDfa, StringBody, DEAD};
use crate::error::Result;
use crate::limits::Meter;
use crate::util::byteset::ByteSet;
use crate::util::hash::FastMap;

/// Most state numbers of one lexeme (its table states and iterations
/// each rounded up to a power of two, times its code points): past it the
/// lexeme is built with one count.
pub const MAX_TRIPLES: u64 = 1 << 28;

/// Beside a length bound, a repetition is counted from this many states
/// spelled out (its bound times its body's states), half as many as
/// without one ([`super::iterations::ITERATIONS_COUNTED_STATES`]): spelled
/// out, the automaton carries the code point count too and is analysed
/// at compile. On `maskbench-dev` (Llama 3) 1,024 took the first compile
/// of `o62065` from 8.0 to 5.0 ms and of `o21136` from 10.9 to 8.1; 512
/// counted loops of 9 words too, whose masks near the bounds then cost
/// those schemas 10% more in all (11% at p99.9), against 4% here.
pub const LENGTH_AND_ITERATIONS_COUNTED_STATES: usize = 1024;

/// No completion: see [`LengthAndIterations::left`].
const NEVER: u32 = u32::MAX;

/// The two counts of a lexeme: see the module documentation.
pub struct LengthAndIterations {
    /// States of the paired automaton.
    m: u32,
    /// States of the table: `budgets` copies of the paired automaton.
    table_states: u32,
    /// Per table state: its paired state.
    paired_of: Vec<u32>,
    /// Bits of a lexeme state holding the table state, and above them
    /// those holding the iterations (the code points above both): shifts
    /// and masks, where divisions were a fifth of a walk near the bounds.
    state_bits: u32,
    iteration_bits: u32,
    /// Copies in the table: the first for `budgets - 1` iterations left
    /// or more, then one for each fewer.
    budgets: u32,
    /// Iterations allowed at the end: `imin..=imax`.
    imin: u32,
    imax: u32,
    /// Most code points.
    cmax: u32,
    /// Per paired state: inside the string (after the opening quote,
    /// before the closing one).
    inside: Vec<bool>,
    /// Per paired state: a step into it inside the string ends a code
    /// point.
    char_end: Vec<bool>,
    /// Per paired state: a step into it inside the string starts an
    /// iteration.
    tick: Vec<bool>,
    /// `left[i * m + s]`: the fewest code points from paired state `s`
    /// with `i` iterations to a closing quote read with the iterations
    /// within their bounds (`NEVER`: none).
    left: Vec<u32>,
    /// Per paired state: the fewest iterations it takes to the closing
    /// quote, bounds aside (`NEVER`: none). The table's copy with `b`
    /// iterations left keeps the states that need at most `b`.
    fewest_ticks: Vec<u32>,
    /// The largest `left` but `NEVER`.
    most_left: u32,
    class_sets: ClassSets,
    /// See [`LengthAndIterations::columns`].
    columns: OnceLock<(Vec<u32>, Vec<bool>)>,
    classes: OnceLock<IterationClasses>,
}

/// The iteration counts grouped by what `horizon` more bytes can tell
/// apart (see [`window_classes`]).
struct IterationClasses {
    class_of: Vec<u32>,
    /// Per class: its smallest count.
    rep: Vec<u32>,
}

/// Copies of the paired automaton with exactly so many iterations left
/// (and one more with at least as many): a token of more iterations than
/// that from the first copy is walked rather than read by the table's
/// analyses, which few tokens are (a word limit starts an iteration per
/// word).
const EXACT_BUDGETS: u32 = 4;

/// The most iterations a state may need to the closing quote (a table
/// copy each): past it the one-count lexeme is built.
const MAX_TICKS_TO_END: u32 = 16;

/// The lexeme of `counted`'s JSON strings with `min..=max` code points,
/// counting both; `None` when two counts do not fit (a minimum that some
/// string of the pattern is shorter than, too many triples, a pattern
/// "any string" does not read): the caller counts the code points alone.
pub fn build(
    counted: &CountedLoop,
    min: u32,
    max: u32,
    body: &StringBody,
    limits: &DfaLimits,
) -> Result<Option<LexemeDfa>> {
    let Some(imax) = counted.max else {
        return Ok(None);
    };
    if imax < counted.min {
        return Ok(None);
    }
    let Some(paired) = pair_with_any_string(&counted.table, body, &limits.deadline)? else {
        return Ok(None);
    };
    let m = paired.table.num_states();
    let k = paired.table.num_classes;
    let trans = &paired.table.trans;
    let inside = paired.inside;
    let tick: Vec<bool> = paired
        .pattern_state
        .iter()
        .map(|&d| counted.ticks[d as usize])
        .collect();
    let mut meter = limits.deadline.meter();
    // Predecessors inside the string, with what the step counts.
    let mut preds: Vec<Vec<(u32, bool, bool)>> = vec![Vec::new(); m];
    let mut exits: Vec<u32> = Vec::new();
    for p in 0..m {
        if !inside[p] {
            continue;
        }
        meter.step(k)?;
        for &t in &trans[p * k..(p + 1) * k] {
            if t == DEAD {
                continue;
            }
            let t = t as usize;
            if inside[t] {
                preds[t].push((p as u32, tick[t], paired.boundary[t]));
            } else if paired.table.is_final[t] {
                exits.push(p as u32);
            }
        }
    }
    for list in &mut preds {
        list.sort_unstable();
        list.dedup();
    }
    exits.sort_unstable();
    exits.dedup();
    let width = imax as usize + 1;
    let left = fewest_left(&preds, &exits, m, counted.min, imax, &mut meter)?;
    // The fewest iterations from each state to the closing quote.
    let fewest_ticks = fewest_left(&relabel_ticks(&preds), &exits, m, 0, 0, &mut meter)?;
    // The shortest string: a larger minimum needs the one-count lexeme.
    let shortest = (0..k)
        .map(|c| trans[c])
        .filter(|&t| t != DEAD && inside[t as usize])
        .map(|t| left[t as usize])
        .min()
        .unwrap_or(NEVER);
    if shortest == NEVER || shortest > max || min > shortest {
        return Ok(None);
    }
    // The table: copies of the paired automaton by iterations left, the
    // last `budgets - 1` exactly and more in the first (see the module
    // doc). The first has at least one more than any state needs, so the
    // next copy, where the table's step from it leads, drops no state the
    // count keeps.
    let most_ticks = fewest_ticks.iter().copied().filter(|&d| d != NEVER).max();
    let Some(budgets) = most_ticks
        .filter(|&d| d <= MAX_TICKS_TO_END)
        .map(|d| (d + 2).max(EXACT_BUDGETS).min(imax + 1) as usize)
    else {
        return Ok(None);
    };
    let table_states = budgets * m;
    let state_bits = bits_for(table_states);
    let iteration_bits = bits_for(width);
    let triples = (1u64 << (state_bits + iteration_bits)) * (u64::from(max) + 1);
    if triples > MAX_TRIPLES {
        return Ok(None);
    }
    let mut copies = Vec::with_capacity(table_states * k);
    for copy in 0..budgets {
        meter.step(m * k)?;
        // Iterations left in this copy (in the first, at least that many).
        let budget = budgets - 1 - copy;
        for p in 0..m {
            for &t in &trans[p * k..(p + 1) * k] {
                copies.push(if t == DEAD {
                    DEAD
                } else if inside[p] && tick[t as usize] {
                    if budget == 0 {
                        DEAD
                    } else {
                        ((copy + 1) * m) as u32 + t
                    }
                } else {
                    (copy * m) as u32 + t
                });
            }
        }
    }
    let is_final = paired.table.is_final.repeat(budgets);
    let mut built = LexemeDfa::from_table_by(
        super::Table {
            classes: paired.table.classes,
            num_classes: k,
            trans: copies,
            is_final,
        },
        &limits.deadline,
    )?;
    let most_left = left
        .iter()
        .copied()
        .filter(|&d| d != NEVER)
        .max()
        .unwrap_or(0);
    let class_sets = ClassSets::new(&built);
    built.computed = Some(Box::new(super::Computed::LengthAndIterations(
        LengthAndIterations {
            m: m as u32,
            table_states: table_states as u32,
            paired_of: (0..table_states).map(|s| (s % m) as u32).collect(),
            state_bits,
            iteration_bits,
            budgets: budgets as u32,
            imin: counted.min,
            imax,
            cmax: max,
            inside,
            char_end: paired.boundary,
            tick,
            left,
            fewest_ticks,
            most_left,
            class_sets,
            columns: OnceLock::new(),
            classes: OnceLock::new(),
        },
    )));
    Ok(Some(built))
}

/// The bits that number `0..n`.
fn bits_for(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// The same predecessor lists with each step costing its tick instead of
/// its code point.
fn relabel_ticks(preds: &[Vec<(u32, bool, bool)>]) -> Vec<Vec<(u32, bool, bool)>> {
    preds
        .iter()
        .map(|list| list.iter().map(|&(p, tick, _)| (p, false, tick)).collect())
        .collect()
}

/// Per (iterations `i` in `0..=imax`, state `s`), at `i * m + s`: the
/// fewest steps that cost (the third flag of a predecessor) from `s` with
/// `i` iterations to an exit with the iterations within `imin..=imax`
/// (an iteration starts on a step with the second flag), or `NEVER`.
/// Nearest first, a step of no cost to the front of the queue.
fn fewest_left(
    preds: &[Vec<(u32, bool, bool)>],
    exits: &[u32],
    m: usize,
    imin: u32,
    imax: u32,
    meter: &mut Meter,
) -> Result<Vec<u32>> {
    let mut left = vec![NEVER; m * (imax as usize + 1)];
    let mut queue: VecDeque<(u32, u32)> = VecDeque::new();
    for &p in exits {
        for i in imin..=imax {
            left[i as usize * m + p as usize] = 0;
            queue.push_back((p, i));
        }
    }
    while let Some((t, i2)) = queue.pop_front() {
        let d = left[i2 as usize * m + t as usize];
        meter.step(1 + preds[t as usize].len())?;
        for &(p, ticks, costs) in &preds[t as usize] {
            if ticks && i2 == 0 {
                continue;
            }
            let i = i2 - ticks as u32;
            let nd = d + costs as u32;
            let slot = &mut left[i as usize * m + p as usize];
            if nd < *slot {
                *slot = nd;
                if costs {
                    queue.push_back((p, i));
                } else {
                    queue.push_front((p, i));
                }
            }
        }
    }
    Ok(left)
}

impl LengthAndIterations {
    fn width(&self) -> usize {
        self.imax as usize + 1
    }

    /// States of the lexeme: every (table state, iterations, code points)
    /// triple.
    pub fn num_states(&self) -> usize {
        (1usize << (self.state_bits + self.iteration_bits)) * (self.cmax as usize + 1)
    }

    /// The table state, the iterations and the code points of `v`.
    #[inline]
    fn split(&self, v: u32) -> (u32, u32, u32) {
        let state = v & ((1 << self.state_bits) - 1);
        let iterations = (v >> self.state_bits) & ((1 << self.iteration_bits) - 1);
        (
            state,
            iterations,
            v >> (self.state_bits + self.iteration_bits),
        )
    }

    #[inline]
    fn join(&self, state: u32, iterations: u32, chars: u32) -> u32 {
        (chars << (self.state_bits + self.iteration_bits)) | (iterations << self.state_bits) | state
    }

    /// The table's copy for `i` iterations: the one with `imax - i` left,
    /// or the first.
    #[inline]
    fn copy_of(&self, i: u32) -> u32 {
        (self.budgets - 1).saturating_sub(self.imax - i)
    }

    /// The state after `byte` from state `v` (see the module doc).
    #[inline]
    pub fn next(&self, dfa: &LexemeDfa, v: u32, byte: u8) -> u32 {
        let (state, i, c) = self.split(v);
        let mut t =
            dfa.trans[state as usize * dfa.num_classes + dfa.classes[byte as usize] as usize];
        if t == DEAD {
            return DEAD;
        }
        let (p, tp) = (self.paired_of[state as usize], self.paired_of[t as usize]);
        if !self.inside[tp as usize] {
            // The closing quote (the start state has no way in); the
            // code points are within the maximum in every live state.
            return if !self.inside[p as usize] || i >= self.imin {
                t
            } else {
                DEAD
            };
        }
        let (mut i2, mut c2) = (i, c);
        if self.inside[p as usize] {
            if self.tick[tp as usize] {
                i2 += 1;
                if i2 > self.imax {
                    return DEAD;
                }
                // The table led to the next copy; from the first, with at
                // least as many iterations left, the count stays there.
                if state < self.m && self.copy_of(i2) == 0 {
                    t -= self.m;
                }
            }
            c2 += self.char_end[tp as usize] as u32;
            if c2 > self.cmax {
                return DEAD;
            }
        }
        let left = self.left[i2 as usize * self.m as usize + tp as usize];
        if left == NEVER || c2 + left > self.cmax {
            return DEAD;
        }
        self.join(t, i2, c2)
    }

    pub fn is_final(&self, dfa: &LexemeDfa, v: u32) -> bool {
        v < self.table_states && dfa.is_final[v as usize]
    }

    /// The bytes with a transition from `v`.
    pub fn first_bytes(&self, dfa: &LexemeDfa, v: u32) -> ByteSet {
        let (state, _, _) = self.split(v);
        self.class_sets
            .first_bytes(dfa, state, |b| self.next(dfa, v, b) != DEAD)
    }

    /// Whether `height` more bytes from `chars` code points can never
    /// meet the maximum.
    #[inline]
    fn chars_free(&self, chars: u32, height: usize) -> bool {
        chars as u64 + height as u64 + u64::from(self.most_left) <= u64::from(self.cmax)
    }

    /// The table state of `v`, when what the table's analyses say of it
    /// holds for `v` on strings of up to `height` bytes: when no such
    /// string can meet the maximum of code points, and the iterations are
    /// at least the minimum. Then every state the table keeps is live
    /// with the iterations it counts, and the table's copy never has more
    /// iterations left than the count, so what the table reads `v` reads.
    pub fn free_state(&self, v: u32, height: usize, _horizon: usize) -> Option<u32> {
        let (state, i, c) = self.split(v);
        (self.chars_free(c, height) && self.iterations_free(i)).then_some(state)
    }

    /// From `i` iterations on, the states live with the count are those
    /// the table's copy keeps.
    fn iterations_free(&self, i: u32) -> bool {
        self.columns().1[i as usize]
    }

    /// The smallest state equivalent to `v` on every string of up to
    /// `horizon` bytes.
    pub fn token_class(&self, v: u32, horizon: usize) -> u32 {
        let (state, i, c) = self.split(v);
        if !self.inside[self.paired_of[state as usize] as usize] {
            return v;
        }
        let classes = self.classes(horizon);
        let i = classes.rep[classes.class_of[i as usize] as usize];
        let c = if self.chars_free(c, horizon) { 0 } else { c };
        self.join(state, i, c)
    }

    /// Computes the iteration classes for `horizon` now (at compile time)
    /// rather than in the first mask.
    pub fn prepare(&self, horizon: usize) {
        // (The columns with them.)
        self.classes(horizon);
    }

    /// Per count, a column id (`left`'s column, whether the count is
    /// within the bounds, its table copy) and whether it is free (see
    /// [`Self::iterations_free`]).
    fn columns(&self) -> &(Vec<u32>, Vec<bool>) {
        self.columns.get_or_init(|| {
            let (m, width) = (self.m as usize, self.width());
            let mut ids: FastMap<(&[u32], bool, u32), u32> = FastMap::default();
            let column_of: Vec<u32> = (0..width)
                .map(|i| {
                    let key = (
                        &self.left[i * m..(i + 1) * m],
                        i as u32 >= self.imin,
                        self.copy_of(i as u32),
                    );
                    let n = ids.len() as u32;
                    *ids.entry(key).or_insert(n)
                })
                .collect();
            // Free: from the minimum on, a state is live with the count
            // exactly when it needs at most the iterations left; the
            // table's copy, which never has more left, keeps a subset.
            let mut free = vec![false; width + 1];
            free[width] = true;
            for i in (0..width).rev() {
                let budget = self.imax - i as u32;
                let kept = |s: usize| self.fewest_ticks[s] <= budget;
                free[i] = free[i + 1]
                    && i as u32 >= self.imin
                    && (0..m)
                        .filter(|&s| self.inside[s])
                        .all(|s| (self.left[i * m + s] != NEVER) == kept(s));
            }
            (column_of, free)
        })
    }

    /// Groups the iteration counts by their columns (see
    /// [`Self::columns`]) over the next `horizon + 1` counts,
    /// computed once (the horizon is the vocabulary's).
    fn classes(&self, horizon: usize) -> &IterationClasses {
        self.classes.get_or_init(|| {
            let column_of = &self.columns().0;
            // Past the maximum nothing is live: a column of its own.
            let dead = column_of.iter().copied().max().map_or(0, |x| x + 1);
            let column_at = |i: usize| column_of.get(i).copied().unwrap_or(dead);
            let (class_of, rep) = window_classes(self.width(), horizon, column_at);
            IterationClasses { class_of, rep }
        })
    }

    /// Approximate heap bytes.
    pub fn memory(&self) -> usize {
        (self.left.len() + self.fewest_ticks.len() + self.paired_of.len()) * 4
            + self.inside.len() * 3
            + self.class_sets.memory()
            + self.width() * 5
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::lexeme::iterations::{
        counted_repetition, Counted, ITERATIONS_COUNTED_STATES,
    };
    use crate::compile::lexeme::source::{count_code_points, string_body, Uncached};
    use crate::compile::lexeme::Computed;
    use crate::ir::Expr;
    use crate::regex::{to_expr, Anchoring};
    use std::sync::Arc;

    fn quoted(pattern: &str) -> Expr {
        Expr::JsonQuoted(Arc::new(to_expr(pattern, Anchoring::Full).unwrap()))
    }

    /// A word limit.
    fn words(min: u32, max: u32) -> Expr {
        quoted(&format!(r"^(?:\S+\s+){{{min},{max}}}\S+$"))
    }

    /// Pieces of one or two characters between others.
    fn pieces(min: u32, max: u32) -> Expr {
        quoted(&format!("^x(?:ab|c){{{min},{max}}}y?$"))
    }

    /// Random strings, mostly along live bytes, step the two-count lexeme
    /// exactly as the one-count lexeme over the spelled-out repetition:
    /// the same bytes die, the same prefixes end, the same first bytes,
    /// near both bounds and far from them.
    #[test]
    fn two_counts_step_as_the_spelled_out_repetition() {
        let limits = DfaLimits::default();
        let body = string_body(&Uncached).unwrap();
        let bytes = [
            b'"', b'a', b'b', b'c', b'x', b'y', b' ', b' ', b'\\', b'u', b'0', b'e', b'9', 0xC3,
            0xA9, b'\t', b'n', b'/',
        ];
        let mut rng = crate::util::test_rng::TestRng::new(0x9E37_79B9_7F4A_7C15);
        let mut next = |n: usize| rng.below(n);
        let cases = [
            (words(0, 30), 0, 70),
            (words(0, 30), 1, 40),
            (words(5, 30), 0, 90),
            (words(0, 40), 1, 200),
            (pieces(0, 300), 0, 50),
            (pieces(4, 300), 3, 400),
        ];
        for (case, (pattern, min, max)) in cases.into_iter().enumerate() {
            let Some(Counted::Iterations(counted)) =
                counted_repetition(&pattern, ITERATIONS_COUNTED_STATES, &limits, &Uncached)
                    .unwrap()
            else {
                panic!("case {case}: no counted repetition");
            };
            let two = build(&counted, min, max, &body, &limits).unwrap().unwrap();
            assert!(matches!(
                two.computed.as_deref(),
                Some(Computed::LengthAndIterations(_))
            ));
            let one = count_code_points(&pattern, min, Some(max), &limits, &body, &Uncached)
                .unwrap()
                .unwrap();
            let (mut ends, mut deaths) = (0, 0);
            for walk in 0..400 {
                let (mut s1, mut s2) = (one.start, two.start);
                let mut text = Vec::new();
                for step in 0..200 {
                    assert_eq!(
                        one.first_bytes_of(s1),
                        two.first_bytes_of(s2),
                        "case {case} walk {walk} step {step} after {:?}",
                        String::from_utf8_lossy(&text)
                    );
                    let live: Vec<u8> = bytes
                        .iter()
                        .copied()
                        .filter(|&b| one.next(s1, b) != DEAD)
                        .collect();
                    // Now and then the quote, where it may close.
                    let b = if live.contains(&b'"') && next(12) == 0 {
                        b'"'
                    } else if !live.is_empty() && next(30) != 0 {
                        live[next(live.len())]
                    } else {
                        bytes[next(bytes.len())]
                    };
                    text.push(b);
                    let (n1, n2) = (one.next(s1, b), two.next(s2, b));
                    assert_eq!(
                        n1 == DEAD,
                        n2 == DEAD,
                        "case {case} walk {walk} step {step} after {:?}",
                        String::from_utf8_lossy(&text)
                    );
                    if n1 == DEAD {
                        deaths += 1;
                        break;
                    }
                    assert_eq!(one.is_final_state(n1), two.is_final_state(n2));
                    ends += one.is_final_state(n1) as usize;
                    (s1, s2) = (n1, n2);
                }
            }
            assert!(
                ends >= 5 && deaths >= 100,
                "case {case}: {ends} ends, {deaths} deaths"
            );
        }
    }

    /// A minimum that some string of the pattern is below is left to the
    /// one-count lexeme.
    #[test]
    fn minimums_below_the_shortest_string_only() {
        let limits = DfaLimits::default();
        let body = string_body(&Uncached).unwrap();
        for (min, counts_two) in [(0, true), (1, true), (2, false)] {
            let Some(Counted::Iterations(counted)) =
                counted_repetition(&words(0, 30), ITERATIONS_COUNTED_STATES, &limits, &Uncached)
                    .unwrap()
            else {
                panic!("no counted repetition");
            };
            let built = build(&counted, min, 80, &body, &limits).unwrap();
            assert_eq!(built.is_some(), counts_two, "minimum {min}");
        }
    }
}
