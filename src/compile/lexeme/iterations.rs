//! Counted iterations: the JSON strings of a pattern with one large
//! bounded repetition, run as the automaton of the pattern with the
//! repetition unbounded and a count of its iterations next to it.
//!
//! A word limit, `^(?:\S+\s+){0,99}\S+$`, spelled out as one DFA holds a
//! copy of the loop's automaton per iteration: 71 states per word once
//! every character may be escaped, 7,102 states for 99 words, 14,202 for
//! 199, 8-17 ms to build and as long again to analyse for the token sets.
//! Here the loop is built once (about 100 states for any bound), and
//! [`Counter`] keeps the number of iterations, as it keeps the code points
//! of a length bound: the states are numbered `count * m + state`, and the
//! closing quote is read only with a count within the bounds.
//!
//! The count must be a function of the text read so far. The automaton is
//! a subset construction over an NFA whose edge into each iteration is
//! marked; each NFA state of a subset carries whether its path took a mark
//! not yet counted. While the paths disagree (after `a b` the `b` may
//! start the next word or not, until a space or the quote tells), the
//! flags stay in the subset; once every path has taken the mark, the step
//! counts one (its target is a *tick* state, the [`Counter`]'s
//! `boundary`) and the flags clear. Where that cannot be decided (a path
//! two marks ahead of another, the string ending with a mark undecided:
//! `(a|aa){0,20}` is ambiguous), the construction gives up and the lexeme
//! is built the usual way.
//!
//! The repetition must sit where every path counts it the same way: on
//! the pattern's spine (sequences), or under an alternative or an
//! optional part when its minimum is 0 (a path around it counts 0).
//!
//! One class repeated as the whole pattern (`^.{1,256}$`, a common
//! property-name pattern: 7,171 states spelled out) counts code points:
//! it becomes the length bound beside the class's automaton that string
//! values with a `maxLength` already get.

use std::sync::Arc;

use super::json_string::quoted_table;
use super::{Counter, DfaLimits, LexemeDfa, LexemeSource, Table, DEAD};
use crate::error::{ErrorKind, Result};
use crate::ir::Expr;
use crate::limits::Meter;
use crate::util::hash::FastMap;

/// Repetitions whose bound (the maximum, or the minimum when unbounded)
/// is at least this may be counted rather than spelled out.
pub const ITERATIONS_COUNTED_FROM: u32 = 8;

/// A repetition is counted only when spelling it out would take at least
/// this many states (its bound times the states of its body's JSON
/// strings): below, the spelled-out DFA costs less to build and analyse
/// (about 1 ms) than the token sets of its counts cost the masks, each
/// count near a bound walked on the trie on its own (with every
/// repetition of 8 or more counted, 48 masks of `maskbench-dev` took 2 ms
/// or more instead of 6). One class repeated as the whole pattern is
/// counted whatever its bound: its counts share the class's walks (see
/// `tokensets::strings::uncounted_string_info`).
pub const ITERATIONS_COUNTED_STATES: usize = 2048;

/// Most states of the counted automaton (the loop's automaton, quotes
/// included); past it the lexeme is built the usual way.
const MAX_STATES: usize = 20_000;

/// How a pattern's large repetition is counted (see the module doc).
pub enum Counted {
    /// Its iterations, beside the automaton of the pattern with the
    /// repetition built once.
    Iterations(Box<CountedLoop>),
    /// One class repeated as the whole pattern: its code points.
    ClassLength(ClassLength),
}

/// The automaton of a pattern with its large repetition built once, and
/// the steps that start an iteration: what [`CountedLoop::into_lexeme`]
/// counts alone, and `super::length_and_iterations` beside a length bound.
pub struct CountedLoop {
    /// Quoted JSON strings: state 0 reads the opening quote, the last
    /// state is after the closing one, every other state is inside.
    pub table: Table,
    /// Per state: a step into it starts an iteration.
    pub ticks: Vec<bool>,
    /// The repetition's bounds.
    pub min: u32,
    pub max: Option<u32>,
}

impl CountedLoop {
    /// The lexeme counting the iterations; `None` past the (state, count)
    /// pairs a count may have (the caller builds it the usual way).
    pub fn into_lexeme(self, limits: &DfaLimits) -> Result<Option<LexemeDfa>> {
        let n = self.table.num_states();
        let mut built = LexemeDfa::from_table_by(self.table, &limits.deadline)?;
        let inside: Vec<bool> = (0..n).map(|s| s != 0 && s != n - 1).collect();
        let mut meter = limits.deadline.meter();
        let counter = match Counter::new(&built, inside, self.ticks, self.min, self.max, &mut meter)
        {
            Ok(counter) => counter.of_iterations(),
            // Past the pairs a count may have: spelled out, or parser rules.
            Err(e) if e.kind() == ErrorKind::Limit => {
                limits.deadline.check()?;
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        built.computed = Some(Box::new(super::Computed::Counted(counter)));
        Ok(Some(built))
    }
}

/// A pattern of one class repeated, as the length bound the caller builds
/// beside the class's automaton (`source::build_counted_lexeme`).
pub struct ClassLength {
    /// The JSON strings of the class repeated without a bound.
    pub pattern: Expr,
    pub min: u32,
    pub max: Option<u32>,
}

/// How the large repetition of `expr` is counted (see the module doc):
/// the automaton counting its iterations, or the length bound of a pattern
/// of one class. `None` when `expr` is not the JSON strings of a plain
/// pattern with one such repetition where every path counts it alike,
/// when spelling it out takes fewer than `spelled_states` states (but for
/// a class that is the whole pattern), or when the count is not a
/// function of the text: the caller builds the lexeme the usual way.
pub fn counted_repetition(
    expr: &Expr,
    spelled_states: usize,
    limits: &DfaLimits,
    parts: &dyn LexemeSource,
) -> Result<Option<Counted>> {
    let Expr::JsonQuoted(chars) = expr else {
        return Ok(None);
    };
    if super::has_boolean(chars) {
        return Ok(None);
    }
    let mut best: Option<(&Expr, u32)> = None;
    find_loop(chars, false, &mut best);
    let Some((counted, _)) = best else {
        return Ok(None);
    };
    let Expr::Repeat {
        expr: body,
        min,
        max,
    } = counted
    else {
        unreachable!("find_loop finds repetitions");
    };
    // A nullable body has no definite count.
    if body.nullable() {
        return Ok(None);
    }
    if let Expr::Class(_) = **body {
        // One class repeated counts code points. As the whole pattern
        // (`^.{1,256}$` for property names, `^[a-z0-9]{1,32}$`), that is
        // a length bound beside the class's automaton (see
        // [`ClassLength`]), whatever the bound: every count shares the
        // class's token sets, filtered by the code points left, where
        // spelled out each count near the maximum walked the trie on its
        // own. Inside a longer pattern it is spelled out, a few states
        // per count.
        return Ok(std::ptr::eq(counted, &**chars).then(|| {
            Counted::ClassLength(ClassLength {
                pattern: Expr::JsonQuoted(Arc::new(Expr::star((**body).clone()))),
                min: *min,
                max: *max,
            })
        }));
    }
    let body_states = quoted_table(&*parts.part(body, limits)?, limits)?.num_states();
    if (max.unwrap_or(*min) as usize).saturating_mul(body_states) < spelled_states {
        return Ok(None);
    }
    let mut nfa = Nfa {
        states: Vec::new(),
        meter: limits.deadline.meter(),
    };
    let start = nfa.add();
    let Some(end) = nfa.build(chars, counted, start, limits, parts)? else {
        return Ok(None);
    };
    let Some((table, ticks)) = nfa.determinize(start, end)? else {
        return Ok(None);
    };
    Ok(Some(Counted::Iterations(Box::new(CountedLoop {
        table,
        ticks,
        min: *min,
        max: *max,
    }))))
}

/// The bound of a repetition worth counting (see
/// [`ITERATIONS_COUNTED_FROM`]).
fn bound(e: &Expr) -> Option<u32> {
    match e {
        Expr::Repeat { min, max, .. } => {
            let b = max.unwrap_or(*min);
            (b >= ITERATIONS_COUNTED_FROM && max.is_none_or(|m| m >= *min)).then_some(b)
        }
        _ => None,
    }
}

/// The repetition with the largest bound among those every path counts
/// alike: reached through sequences only, or also through alternatives
/// and optional parts (`beside`) when its minimum is 0.
fn find_loop<'a>(e: &'a Expr, beside: bool, best: &mut Option<(&'a Expr, u32)>) {
    if let (Some(b), Expr::Repeat { min, .. }) = (bound(e), e) {
        if (*min == 0 || !beside) && best.is_none_or(|(_, x)| b > x) {
            *best = Some((e, b));
        }
        return;
    }
    match e {
        Expr::Seq(v) => v.iter().for_each(|x| find_loop(x, beside, best)),
        Expr::Alt(v) => v.iter().for_each(|x| find_loop(x, true, best)),
        Expr::Repeat {
            expr,
            min: 0 | 1,
            max: Some(1),
        } => find_loop(expr, true, best),
        _ => {}
    }
}

#[derive(Default)]
struct NState {
    /// `(target, marked)`: a marked move enters an iteration.
    eps: Vec<(u32, bool)>,
    /// `(lo, hi, target)`.
    edges: Vec<(u8, u8, u32)>,
}

/// A Thompson NFA over JSON string contents (no quotes).
struct Nfa {
    states: Vec<NState>,
    meter: Meter,
}

/// No edge on a class, in [`Nfa::determinize`]'s table.
const NO_EDGE: u32 = u32::MAX;

/// An NFA state with its flag "took a mark not yet counted" (bit 0).
type Flagged = u32;

impl Nfa {
    fn add(&mut self) -> u32 {
        self.states.push(NState::default());
        (self.states.len() - 1) as u32
    }

    fn eps(&mut self, from: u32, to: u32, marked: bool) {
        self.states[from as usize].eps.push((to, marked));
    }

    /// Builds `e` from `from`, `counted` as a loop with marked entries;
    /// returns the end state (`None`: too many states).
    fn build(
        &mut self,
        e: &Expr,
        counted: &Expr,
        from: u32,
        limits: &DfaLimits,
        parts: &dyn LexemeSource,
    ) -> Result<Option<u32>> {
        self.meter.step(1)?;
        if self.states.len() > MAX_STATES {
            return Ok(None);
        }
        if std::ptr::eq(e, counted) {
            let Expr::Repeat { expr, .. } = e else {
                unreachable!("the counted part is a repetition");
            };
            let head = self.add();
            self.eps(from, head, false);
            let entry = self.add();
            self.eps(head, entry, true);
            let Some(done) = self.build(expr, counted, entry, limits, parts)? else {
                return Ok(None);
            };
            self.eps(done, head, false);
            let end = self.add();
            self.eps(head, end, false);
            return Ok(Some(end));
        }
        if !contains(e, counted) {
            let chars = parts.part(e, limits)?;
            let quoted = quoted_table(&chars, limits)?;
            return Ok(Some(self.embed_contents(&quoted, from)?));
        }
        match e {
            Expr::Seq(v) => {
                let mut cur = from;
                for x in v {
                    let Some(next) = self.build(x, counted, cur, limits, parts)? else {
                        return Ok(None);
                    };
                    cur = next;
                }
                Ok(Some(cur))
            }
            Expr::Alt(v) => {
                let end = self.add();
                for x in v {
                    let s = self.add();
                    self.eps(from, s, false);
                    let Some(t) = self.build(x, counted, s, limits, parts)? else {
                        return Ok(None);
                    };
                    self.eps(t, end, false);
                }
                Ok(Some(end))
            }
            Expr::Repeat { expr, min, .. } => {
                // An optional part (`find_loop` goes through no other).
                let s = self.add();
                self.eps(from, s, false);
                let Some(t) = self.build(expr, counted, s, limits, parts)? else {
                    return Ok(None);
                };
                if *min == 0 {
                    self.eps(from, t, false);
                }
                Ok(Some(t))
            }
            _ => unreachable!("find_loop goes through sequences, alternatives and options"),
        }
    }

    /// Copies in the contents of a quoted table (without its quotes: the
    /// opening quote's target is the entry, and states that can read the
    /// closing quote lead to the returned end state).
    fn embed_contents(&mut self, quoted: &Table, from: u32) -> Result<u32> {
        let base = self.states.len() as u32;
        for _ in 0..quoted.num_states() {
            self.add();
        }
        let end = self.add();
        let entry = quoted.next(0, b'"');
        if entry != DEAD {
            self.eps(from, base + entry, false);
        }
        let runs = quoted.class_runs();
        for s in 0..quoted.num_states() as u32 {
            self.meter.step(runs.len())?;
            // Inside a JSON string a raw quote only closes it (its target
            // is the end, no other byte's, so it is a run of its own); an
            // escaped one is a character.
            let edges = &mut self.states[(base + s) as usize].edges;
            quoted.for_each_run(&runs, s, |lo, hi, target| {
                if lo != b'"' || !quoted.is_final[target as usize] {
                    edges.push((lo, hi, base + target));
                }
            });
            let close = quoted.next(s, b'"');
            if s != 0 && close != DEAD && quoted.is_final[close as usize] {
                self.eps(base + s, end, false);
            }
        }
        Ok(end)
    }

    /// `set` with what its states reach by epsilon moves (a marked move
    /// flags its target), sorted; `None` when a state is reached both
    /// flagged and not, or a flagged path takes a second mark: the count
    /// would depend on more than the text.
    fn closure(&mut self, set: &mut Vec<Flagged>) -> Result<Option<()>> {
        let mut i = 0;
        while i < set.len() {
            let (s, flagged) = (set[i] >> 1, set[i] & 1 == 1);
            self.meter.step(1 + self.states[s as usize].eps.len())?;
            for k in 0..self.states[s as usize].eps.len() {
                let (t, marked) = self.states[s as usize].eps[k];
                if marked && flagged {
                    return Ok(None);
                }
                let x = t << 1 | (flagged || marked) as u32;
                if !set.contains(&x) {
                    set.push(x);
                }
            }
            i += 1;
        }
        Ok(settle(set))
    }

    /// The subset construction, quotes around: state 0 reads the opening
    /// quote, the last state is after the closing one. Also per state:
    /// the step into it counts an iteration. `None` when the count is not
    /// a function of the text, or past [`MAX_STATES`].
    fn determinize(&mut self, start: u32, end: u32) -> Result<Option<(Table, Vec<bool>)>> {
        // The quotes, added around the contents, are a class of their own.
        let edges = self.states.iter().flat_map(|st| &st.edges);
        let ranges = edges.map(|&(lo, hi, _)| (lo, hi));
        let (classes, reps) = Table::classes_of_ranges(ranges.chain([(b'"', b'"')]));
        let k = reps.len();
        // Each state's edges are the runs of one state of an embedded DFA,
        // so a class leads it to one state at most: as a table, a step of
        // a subset reads one entry per state instead of scanning edges.
        // (Classes are intervals in byte order, so a run is a run of them.)
        let mut by_class = vec![NO_EDGE; self.states.len() * k];
        for (s, st) in self.states.iter().enumerate() {
            self.meter.step(1 + st.edges.len())?;
            for &(lo, hi, t) in &st.edges {
                let row = &mut by_class[s * k..(s + 1) * k];
                for slot in &mut row[classes[lo as usize] as usize..=classes[hi as usize] as usize]
                {
                    debug_assert_eq!(*slot, NO_EDGE, "an embedded DFA's runs are disjoint");
                    *slot = t;
                }
            }
        }
        let mut first = vec![start << 1];
        if self.closure(&mut first)?.is_none() {
            return Ok(None);
        }
        // Content states are numbered from 1; 0 is the start.
        let mut ids: FastMap<(Vec<Flagged>, bool), u32> = FastMap::default();
        ids.insert((first.clone(), false), 1);
        let mut order = vec![(first, false)];
        let mut rows: Vec<u32> = Vec::new();
        let mut finals = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let set = order[i].0.clone();
            match set.iter().find(|&&x| x >> 1 == end) {
                Some(&x) if x & 1 == 1 => return Ok(None),
                found => finals.push(found.is_some()),
            }
            self.meter.step(k * set.len())?;
            for c in 0..k {
                // A quote here is escaped (the closing one is added below).
                let mut next: Vec<Flagged> = Vec::new();
                for &x in &set {
                    let t = by_class[(x >> 1) as usize * k + c];
                    if t != NO_EDGE {
                        next.push(t << 1 | (x & 1));
                    }
                }
                if next.is_empty() {
                    rows.push(DEAD);
                    continue;
                }
                if settle(&mut next).is_none() {
                    return Ok(None);
                }
                // Every path took the mark: this step counts it.
                let tick = next.iter().all(|&x| x & 1 == 1);
                if tick {
                    next.iter_mut().for_each(|x| *x &= !1);
                }
                if self.closure(&mut next)?.is_none() {
                    return Ok(None);
                }
                let key = (next, tick);
                let id = match ids.get(&key) {
                    Some(&id) => id,
                    None => {
                        if order.len() >= MAX_STATES {
                            return Ok(None);
                        }
                        let id = order.len() as u32 + 1;
                        ids.insert(key.clone(), id);
                        order.push(key);
                        id
                    }
                };
                rows.push(id);
            }
            i += 1;
        }
        let n = order.len() + 2;
        let after = n as u32 - 1;
        let quote = classes[b'"' as usize] as usize;
        let mut trans = vec![DEAD; n * k];
        trans[quote] = 1;
        trans[k..k + rows.len()].copy_from_slice(&rows);
        let mut is_final = vec![false; n];
        is_final[n - 1] = true;
        for (s, &f) in finals.iter().enumerate() {
            if f {
                // Where the string may end, no path is within an escape.
                if trans[(s + 1) * k + quote] != DEAD {
                    return Ok(None);
                }
                trans[(s + 1) * k + quote] = after;
            }
        }
        let mut ticks = vec![false; n];
        for (s, (_, tick)) in order.iter().enumerate() {
            ticks[s + 1] = *tick;
        }
        Ok(Some((
            Table {
                classes,
                num_classes: k,
                trans,
                is_final,
            },
            ticks,
        )))
    }
}

/// Sorts `set` without duplicates; `None` when a state is in it both
/// flagged and not.
fn settle(set: &mut Vec<Flagged>) -> Option<()> {
    set.sort_unstable();
    set.dedup();
    set.windows(2).all(|w| w[0] >> 1 != w[1] >> 1).then_some(())
}

/// Whether `part` is `e` or inside it (by address).
fn contains(e: &Expr, part: &Expr) -> bool {
    if std::ptr::eq(e, part) {
        return true;
    }
    let mut found = false;
    e.for_each_child(|c| found = found || contains(c, part));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::lexeme::{boolean, build_counted_lexeme, string_body, Uncached};
    use crate::regex::{to_expr, Anchoring};

    fn quoted(pattern: &str) -> Expr {
        let anchoring = if pattern.starts_with('^') {
            Anchoring::Full
        } else {
            Anchoring::Search
        };
        Expr::JsonQuoted(Arc::new(to_expr(pattern, anchoring).unwrap()))
    }

    /// The counted lexeme of `e`, as `build_lexeme` makes it.
    fn counted(e: &Expr) -> Option<LexemeDfa> {
        let limits = DfaLimits::default();
        match counted_repetition(e, ITERATIONS_COUNTED_STATES, &limits, &Uncached).unwrap()? {
            Counted::Iterations(d) => d.into_lexeme(&limits).unwrap(),
            Counted::ClassLength(c) => {
                let any = string_body(&Uncached).unwrap();
                build_counted_lexeme(&c.pattern, c.min, c.max, &limits, &any, &Uncached).unwrap()
            }
        }
    }

    /// The same pattern spelled out as one DFA, every iteration copied.
    fn spelled_out(e: &Expr) -> LexemeDfa {
        let t = boolean::table_of(e, &DfaLimits::default(), &Uncached).unwrap();
        LexemeDfa::from_table(&t)
    }

    /// Per byte of `text`: whether the prefix up to it can still be
    /// completed; then whether the whole is accepted.
    fn run(d: &LexemeDfa, text: &[u8]) -> (Vec<bool>, bool) {
        let mut s = d.start;
        let mut live = Vec::new();
        for &b in text {
            if s != DEAD {
                s = d.next(s, b);
            }
            live.push(s != DEAD);
        }
        (live, s != DEAD && d.is_final_state(s))
    }

    /// Random JSON strings of words: raw and escaped letters, spaces and
    /// escaped whitespace, a multi-byte letter, commas; some unclosed.
    fn texts(seed: u64, count: usize) -> Vec<Vec<u8>> {
        const PIECES: [&str; 13] = [
            "a", "b", "c", "ab", " ", "  ", "\\n", "\\u0041", "é", "\\u00e9", ",", "\\t", "\\\"",
        ];
        let mut x = seed;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        (0..count)
            .map(|_| {
                // Long ones pass the larger bounds.
                let longest = if next(2) == 0 { 160 } else { 1200 };
                let len = next(longest) as usize;
                let mut s = b"\"".to_vec();
                for _ in 0..len {
                    s.extend_from_slice(PIECES[next(PIECES.len() as u64) as usize].as_bytes());
                }
                if next(8) != 0 {
                    s.push(b'"');
                }
                s
            })
            .collect()
    }

    #[test]
    fn counted_loops_match_the_spelled_out_automaton() {
        for pattern in [
            r"^(?:\S+\s+){0,40}\S+$",
            r"^$|(^(?:\S+\s+){0,40}\S+$)",
            r"^(?:\S+\s+){3,40}\S+$",
            r"^(?:\S+\s+){40,}\S*$",
            r"^(?:[a-c]+,){0,300}[a-c]*$",
            r"^x?(?:(?:ab|c)\s){5,200}$",
            // One class: a length bound beside the class's automaton.
            r"^.{1,256}$",
            r"^[^,]{100,}$",
        ] {
            let e = quoted(pattern);
            let fast = counted(&e).unwrap_or_else(|| panic!("{pattern} is counted"));
            let slow = spelled_out(&e);
            assert!(fast.num_states() < 400, "{pattern}: {}", fast.num_states());
            for text in texts(0x9E37_79B9_7F4A_7C15, 3000) {
                assert_eq!(
                    run(&fast, &text),
                    run(&slow, &text),
                    "{pattern} on {}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }

    /// Random loops (bodies of letters, spaces, classes, options and
    /// alternatives, a prefix and a suffix) against the spelled-out
    /// automaton, wherever the loop is counted.
    #[test]
    fn random_counted_loops_match_the_spelled_out_automaton() {
        const ATOMS: [&str; 9] = ["a", "b", " ", "é", "[ab]", r"\s", r"\S", "[^a]", "."];
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        fn part(next: &mut dyn FnMut(u64) -> u64, depth: u32) -> String {
            let atom = ATOMS[next(ATOMS.len() as u64) as usize];
            match if depth == 0 { 0 } else { next(6) } {
                0 => atom.to_string(),
                1 => format!("{atom}+"),
                2 => format!("{atom}*"),
                3 => format!("(?:{}|{})", part(next, depth - 1), part(next, depth - 1)),
                4 => format!("{}{}", part(next, depth - 1), part(next, depth - 1)),
                _ => format!("(?:{})?", part(next, depth - 1)),
            }
        }
        let mut counted_patterns = 0;
        for _ in 0..400 {
            let body = format!("{}{}", part(&mut next, 2), part(&mut next, 2));
            let min = [0, 1, 3][next(3) as usize];
            let max = 60 + next(100);
            let prefix = if next(2) == 0 {
                part(&mut next, 1)
            } else {
                String::new()
            };
            let suffix = if next(2) == 0 {
                part(&mut next, 2)
            } else {
                String::new()
            };
            let pattern = format!("^{prefix}(?:{body}){{{min},{max}}}{suffix}$");
            let e = quoted(&pattern);
            let Some(fast) = counted(&e) else {
                continue;
            };
            counted_patterns += 1;
            let slow = spelled_out(&e);
            for text in texts(next(u64::MAX) | 1, 200) {
                assert_eq!(
                    run(&fast, &text),
                    run(&slow, &text),
                    "{pattern} on {}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
        assert!(
            counted_patterns >= 40,
            "{counted_patterns} patterns counted"
        );
    }

    #[test]
    fn counts_that_the_text_does_not_decide_are_spelled_out() {
        for pattern in [
            // Either `a` or `aa` per iteration.
            r"^(?:a|aa){0,300}$",
            // Unanchored: the search's `.*` takes any number of words.
            r"(?:\S+\s+){0,300}",
            // Inside a repetition: iterations of both add up.
            r"^(?:(?:\S+\s+){0,40}\.){2}$",
            // Under an alternative with a minimum: the other way counts 0.
            r"^-|(?:\S+\s+){2,40}$",
            // Small: spelled out.
            r"^(?:\S+\s+){0,9}\S+$",
            // One class inside a longer pattern: spelled out.
            r"^x.{1,256}$",
        ] {
            assert!(counted(&quoted(pattern)).is_none(), "{pattern}");
        }
    }
}
