//! Building a lexeme's table from an IR expression: the expression as
//! `regex-syntax` HIR, a Thompson NFA, our subset construction and
//! minimization ([`table_from_hir`]), and the [`LexemeDfa`] made of it.

use super::{determinize, minimize};
use regex_automata::nfa::thompson;
use regex_syntax::hir::{self, Hir};

use super::analysis::ClassBytes;
use super::dfa_table::Table;
use super::{truncate, Computed, DfaLimits, LexemeDfa, StringTrie, DEAD};
use crate::compile::adjacency::Adjacency;
use crate::error::{Error, Result};
use crate::ir::{CharClass, Expr};
use crate::limits::{Deadline, Meter};
use crate::util::byteset::ByteSet;

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
        | Expr::JsonQuoted(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_)
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
pub(crate) fn too_large(hir: &Hir, what: &str, e: &dyn std::fmt::Display) -> Error {
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
pub(crate) fn table_from_hir_within(hir: &Hir, limits: &DfaLimits) -> Result<Option<Table>> {
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
        Self::from_table_by(t.clone(), &Deadline::none()).expect("no deadline")
    }

    /// [`LexemeDfa::from_table`], taking the table (a large one is not
    /// copied), an error once `deadline` passes.
    pub fn from_table_by(t: Table, deadline: &Deadline) -> Result<LexemeDfa> {
        let mut meter = deadline.meter();
        let Table {
            classes,
            num_classes,
            mut trans,
            is_final,
        } = t;
        let n = is_final.len();
        let k = num_classes;
        // One pass over the table: each state's first bytes, and its
        // transitions as a list (rows are mostly dead transitions), which
        // the liveness reads instead of the table.
        let by_class = ClassBytes::new(&classes, k);
        let mut first_bytes = vec![ByteSet::EMPTY; n];
        let mut starts: Vec<u32> = Vec::with_capacity(n + 1);
        let mut targets: Vec<u32> = Vec::new();
        for (s, fb) in first_bytes.iter_mut().enumerate() {
            meter.step(k)?;
            let row = &trans[s * k..(s + 1) * k];
            let row_start = targets.len();
            starts.push(row_start as u32);
            let mut add = |class: usize, t: u32| {
                if t == DEAD {
                    return;
                }
                // Classes side by side often go to one state.
                if targets.len() == row_start || targets[targets.len() - 1] != t {
                    targets.push(t);
                }
                *fb |= by_class.bytes[class];
            };
            // Rows are mostly dead (a JSON string's states after a
            // backslash read a few bytes): four transitions at a time are
            // skipped with one comparison.
            let mut chunks = row.chunks_exact(4);
            for (i, chunk) in chunks.by_ref().enumerate() {
                if *chunk != [DEAD; 4] {
                    for (j, &t) in chunk.iter().enumerate() {
                        add(4 * i + j, t);
                    }
                }
            }
            let tail = k - chunks.remainder().len();
            for (j, &t) in chunks.remainder().iter().enumerate() {
                add(tail + j, t);
            }
        }
        starts.push(targets.len() as u32);
        let live = live_states(&starts, &targets, &is_final, LIVE_PASSES, &mut meter)?;
        // Transitions into dead states removed, and the first bytes of
        // the states that had one counted again.
        for s in 0..n {
            let row = &targets[starts[s] as usize..starts[s + 1] as usize];
            if row.iter().all(|&t| live[t as usize]) {
                continue;
            }
            let row = &mut trans[s * k..(s + 1) * k];
            let fb = &mut first_bytes[s];
            *fb = ByteSet::EMPTY;
            for (t, bytes) in row.iter_mut().zip(&by_class.bytes) {
                if *t == DEAD {
                    continue;
                }
                if !live[*t as usize] {
                    *t = DEAD;
                    continue;
                }
                *fb |= *bytes;
            }
        }
        Ok(LexemeDfa {
            id: next_lexeme_id(),
            classes,
            num_classes,
            trans,
            is_final,
            first_bytes,
            start: if n > 0 && live[0] { 0 } else { DEAD },
            count_span: usize::MAX,
            computed: None,
        })
    }

    /// The automaton of a counted lexeme without its count: its table as
    /// a lexeme of its own, the same states with the same numbers (`None`
    /// for a lexeme without a count). What the count kills (states that
    /// cannot end at all) is dead here too.
    pub fn without_count(&self) -> Option<LexemeDfa> {
        self.counter()?;
        let table = Table {
            classes: self.classes,
            num_classes: self.num_classes,
            trans: self.trans.clone(),
            is_final: self.is_final.clone(),
        };
        Some(Self::from_table_by(table, &Deadline::none()).expect("no deadline"))
    }
}

/// Passes over the rows before the live states are found from
/// predecessor lists instead (a key set's tables settle in about six).
const LIVE_PASSES: usize = 8;

/// Per state: some string leads from it to a final state, given where
/// its transitions lead (row `s` is `targets[starts[s]..starts[s + 1]]`).
/// Passes over the rows, alternately from the last state and from the
/// first, mark each state with a transition into a live one, until a
/// pass marks nothing: transitions mostly lead one way (a trie of names,
/// a subset construction's order), so a few passes settle it. Only where
/// `passes` do not are the predecessor lists built.
fn live_states(
    starts: &[u32],
    targets: &[u32],
    is_final: &[bool],
    passes: usize,
    meter: &mut Meter,
) -> Result<Vec<bool>> {
    let row = |s: usize| &targets[starts[s] as usize..starts[s + 1] as usize];
    let n = is_final.len();
    let mut live = is_final.to_vec();
    for pass in 0..passes {
        let mut changed = false;
        // Alternately backwards and forwards: transitions lead mostly one
        // way or the other.
        let order: Box<dyn Iterator<Item = usize>> = if pass % 2 == 0 {
            Box::new((0..n).rev())
        } else {
            Box::new(0..n)
        };
        for s in order {
            if live[s] {
                continue;
            }
            meter.step(1 + row(s).len())?;
            if row(s).iter().any(|&t| live[t as usize]) {
                live[s] = true;
                changed = true;
            }
        }
        if !changed {
            return Ok(live);
        }
    }
    // Backwards from every state known live.
    meter.step(2 * targets.len())?;
    let preds = Adjacency::inverse(n, starts, targets);
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
    Ok(live)
}

/// A new [`LexemeDfa::id`].
fn next_lexeme_id() -> u64 {
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl LexemeDfa {
    /// The lexeme of a [`StringTrie`]: no table (one dead row), every
    /// state computed.
    pub fn of_string_trie(trie: StringTrie) -> LexemeDfa {
        LexemeDfa {
            id: next_lexeme_id(),
            classes: [0; 256],
            num_classes: 1,
            trans: vec![DEAD],
            is_final: vec![false],
            first_bytes: vec![ByteSet::EMPTY],
            start: trie.start(),
            count_span: 0,
            computed: Some(Box::new(Computed::Strings(trie))),
        }
    }
}

/// The same DFA through `regex-automata`'s own determinizer and minimizer
/// (the reference in tests).
#[cfg(test)]
pub(super) fn table_from_hir_dense(hir: &Hir, limits: &DfaLimits) -> Result<Table> {
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
    let (classes, reps) = super::determinize::class_table(dfa.byte_classes());
    let num_classes = reps.len();

    // Explore from the start state, numbering states densely.
    let mut ids: crate::util::hash::FastMap<regex_automata::util::primitives::StateID, u32> =
        Default::default();
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
    use crate::util::test_rng::TestRng;

    /// `n * k` random transitions, a third of them dead.
    fn random_transitions(rng: &mut TestRng, n: usize, k: usize) -> Vec<u32> {
        (0..n * k)
            .map(|_| match rng.below(3) {
                0 => DEAD,
                _ => rng.below(n) as u32,
            })
            .collect()
    }

    /// Whether a search forwards from `s` finds a final state.
    fn reaches_final(trans: &[u32], k: usize, is_final: &[bool], s: usize) -> bool {
        let mut seen = vec![false; is_final.len()];
        let mut stack = vec![s];
        seen[s] = true;
        while let Some(q) = stack.pop() {
            if is_final[q] {
                return true;
            }
            for &t in &trans[q * k..(q + 1) * k] {
                if t != DEAD && !seen[t as usize] {
                    seen[t as usize] = true;
                    stack.push(t as usize);
                }
            }
        }
        false
    }

    /// Runs read by class runs are the runs read byte by byte, with
    /// classes in byte order or scattered over the bytes.
    #[test]
    fn runs_by_class_equal_runs_by_byte() {
        let mut rng = TestRng::new(0x5EED_C1A5_5E50_0001);
        for round in 0..300 {
            let n = 1 + rng.below(20);
            let k = 1 + rng.below(12);
            let mut classes = [0u8; 256];
            let mut class = 0;
            for c in classes.iter_mut() {
                if round % 2 == 0 {
                    // Scattered.
                    class = rng.below(k);
                } else if rng.below(24) == 0 {
                    // In byte order, long runs.
                    class = (class + 1).min(k - 1);
                }
                *c = class as u8;
            }
            let table = Table {
                classes,
                num_classes: k,
                trans: random_transitions(&mut rng, n, k),
                is_final: vec![false; n],
            };
            let runs = table.class_runs();
            for s in 0..n as u32 {
                let mut by_byte = Vec::new();
                let mut b = 0usize;
                while b < 256 {
                    let target = table.next(s, b as u8);
                    let mut hi = b;
                    while hi + 1 < 256 && table.next(s, (hi + 1) as u8) == target {
                        hi += 1;
                    }
                    if target != DEAD {
                        by_byte.push((b as u8, hi as u8, target));
                    }
                    b = hi + 1;
                }
                let mut by_class = Vec::new();
                table.for_each_run(&runs, s, |lo, hi, t| by_class.push((lo, hi, t)));
                assert_eq!(by_class, by_byte, "round {round} state {s}");
            }
        }
    }

    /// A lexeme of a random table keeps exactly the transitions into
    /// states that reach a final one, and its first bytes are those of
    /// the transitions kept.
    #[test]
    fn lexemes_drop_dead_transitions() {
        let mut rng = TestRng::new(0x0DDB_A11C_0FFE_E123);
        for round in 0..200 {
            let n = 1 + rng.below(40);
            let mut classes = [0u8; 256];
            let k = 1 + rng.below(4);
            for c in classes.iter_mut() {
                *c = rng.below(k) as u8;
            }
            let trans = random_transitions(&mut rng, n, k);
            let is_final: Vec<bool> = (0..n).map(|_| rng.below(6) == 0).collect();
            let table = Table {
                classes,
                num_classes: k,
                trans: trans.clone(),
                is_final: is_final.clone(),
            };
            let d = LexemeDfa::from_table(&table);
            for s in 0..n {
                let mut bytes = ByteSet::EMPTY;
                for b in 0..=255u8 {
                    let before = trans[s * k + classes[b as usize] as usize];
                    let kept =
                        before != DEAD && reaches_final(&trans, k, &is_final, before as usize);
                    let after = d.trans[s * k + classes[b as usize] as usize];
                    assert_eq!(after, if kept { before } else { DEAD }, "round {round}");
                    if kept {
                        bytes.insert(b);
                    }
                }
                assert_eq!(d.first_bytes[s], bytes, "round {round}: state {s}");
            }
        }
    }

    /// The live states of random tables, numbered in every direction
    /// (chains forwards and backwards, loops, unreachable parts), are
    /// those from which a search forwards finds a final state.
    #[test]
    fn live_states_are_those_reaching_a_final_one() {
        let mut rng = TestRng::new(0x5DEE_CE66_D1CE_4E5B);
        for round in 0..300 {
            let n = 1 + rng.below(60);
            let k = 1 + rng.below(4);
            let trans = random_transitions(&mut rng, n, k);
            let is_final: Vec<bool> = (0..n).map(|_| rng.below(9) == 0).collect();
            // Settled by passes, or by the predecessor lists after none or
            // some.
            let passes = [0, 1, LIVE_PASSES][round % 3];
            let mut starts = vec![0u32];
            let mut targets = Vec::new();
            for row in trans.chunks(k) {
                targets.extend(row.iter().filter(|&&t| t != DEAD));
                starts.push(targets.len() as u32);
            }
            let live = live_states(
                &starts,
                &targets,
                &is_final,
                passes,
                &mut Deadline::none().meter(),
            )
            .unwrap();
            for (s, &live) in live.iter().enumerate() {
                let reaches = reaches_final(&trans, k, &is_final, s);
                assert_eq!(live, reaches, "round {round}: state {s} of {n}");
            }
        }
    }
}
