//! Intersection and complement of regular expressions, done on DFAs.
//!
//! `regex-automata` builds DFAs for plain regular expressions; JSON Schema
//! needs more (a string with both a `pattern` and a `maxLength`, property
//! names that match none of the listed ones, `not`). Such expressions are
//! built bottom-up: plain parts by `regex-automata`, `And` as a product of
//! DFAs, `Not` as the complement within valid UTF-8 text, and sequences,
//! alternations and repetitions around them by subset construction over an
//! NFA that embeds the sub-DFAs.

use std::sync::Arc;

use super::{has_boolean, minimize, DfaLimits, LexemeSource, Table, DEAD};
use crate::error::{Error, Result};
use crate::ir::{CharClass, Expr};
use crate::limits::Meter;
use crate::util::hash::{FastMap, FastSet};

/// Most DFA states a boolean construction may create.
const MAX_STATES: usize = 200_000;

fn too_large() -> Error {
    Error::limit(format!(
        "a regular expression with intersection or complement needs more than {MAX_STATES} DFA states"
    ))
}

/// The DFA of any regular expression, boolean operators included; the
/// regular parts come from (and go to) `cache`.
pub fn table_of(e: &Expr, limits: &DfaLimits, cache: &dyn LexemeSource) -> Result<Arc<Table>> {
    if let Expr::JsonStrings(js) = e {
        return Ok(Arc::new(super::json_string::table(js, limits)?));
    }
    if let Expr::Rfc3339(r) = e {
        return Ok(super::rfc3339::table(r));
    }
    if let Expr::JsonQuoted(chars) = e {
        // Determinized over code points (UTF-8), where a class is a few
        // byte ranges rather than every escape of every character, then
        // spelled out in JSON.
        let mut t = table_of(chars, limits, cache)?;
        if has_boolean(chars) {
            t = Arc::new(minimize(&t, &limits.deadline)?);
        }
        return Ok(Arc::new(super::json_string::quoted_table(&t, limits)?));
    }
    if let Expr::DecimalMultiple(m) = e {
        return Ok(Arc::new(minimize(
            &super::multiple::table(m),
            &limits.deadline,
        )?));
    }
    if let Expr::IntegerRange(r) = e {
        return Ok(Arc::new(minimize(
            &super::integer_range::table(r),
            &limits.deadline,
        )?));
    }
    if !has_boolean(e) {
        return cache.part(e, limits);
    }
    let built = match e {
        Expr::And(v) => {
            // Positive operands first: once one is in, a complement needs
            // no intersection with "any valid text" of its own.
            let (negated, positive): (Vec<&Expr>, Vec<&Expr>) =
                v.iter().partition(|x| matches!(x, Expr::Not(_)));
            let ordered: Vec<&Expr> = positive.into_iter().chain(negated).collect();
            fn operand(x: &Expr) -> (&Expr, bool) {
                match x {
                    Expr::Not(inner) => (&**inner, true),
                    other => (other, false),
                }
            }
            // With more than two operands the first two are one part,
            // minimized and shared: schemas repeat them (an integer with
            // one `minimum` and many `maximum`s built and minimized the
            // same product for each, 0.1-0.2 ms apiece). Only the first
            // two: a longer head as a key would hash and clone a list of
            // operands per operand.
            let (mut acc, rest) = match ordered.as_slice() {
                [] => return Err(Error::invalid("an intersection of nothing")),
                [only] => return table_of(only, limits, cache),
                [first, second, rest @ ..] if !rest.is_empty() => {
                    let head = Expr::And(vec![(*first).clone(), (*second).clone()]);
                    (cache.part(&head, limits)?, rest)
                }
                [first, rest @ ..] => (table_of(first, limits, cache)?, rest),
            };
            // A product of minimal DFAs is close to minimal (the product
            // of "any string" and "not one of these keys" loses one state
            // of hundreds), and minimizing it cost more than building it.
            // Only a product that feeds another one is minimized, to keep
            // the next product small.
            for (i, x) in rest.iter().enumerate() {
                let (x, negate) = operand(x);
                let t = table_of(x, limits, cache)?;
                // Excluding what the rest cannot match changes nothing: a
                // pattern property `^title_...$` beside "none of the
                // listed names" (60 such keys took 1.1 ms each).
                if negate && disjoint(&acc, &t, limits)? {
                    continue;
                }
                let p = if negate {
                    product(&acc, &complement(&t), limits)?
                } else {
                    product(&acc, &t, limits)?
                };
                acc = Arc::new(if i + 1 < rest.len() {
                    minimize(&p, &limits.deadline)?
                } else {
                    p
                });
            }
            return Ok(acc);
        }
        // A date-time among small alternatives (the scalars of a schema
        // with a `format` and no `type`): the union of the DFAs, without
        // a subset construction over the date-time's 66,000 states.
        Expr::Alt(v) if v.iter().any(|x| matches!(x, Expr::Rfc3339(_))) => {
            let (leaves, rest): (Vec<&Expr>, Vec<&Expr>) =
                v.iter().partition(|x| matches!(x, Expr::Rfc3339(_)));
            let mut acc = table_of(leaves[0], limits, cache)?;
            for x in leaves.iter().skip(1) {
                let t = table_of(x, limits, cache)?;
                acc = Arc::new(union(&acc, &t, limits)?);
            }
            if !rest.is_empty() {
                let rest = Expr::alt(rest.into_iter().cloned().collect());
                let t = table_of(&rest, limits, cache)?;
                acc = Arc::new(union(&acc, &t, limits)?);
            }
            return Ok(acc);
        }
        Expr::Not(x) => {
            let t = table_of(x, limits, cache)?;
            let any = cache.part(&Expr::star(Expr::Class(CharClass::any())), limits)?;
            minimize(&product(&complement(&t), &any, limits)?, &limits.deadline)?
        }
        _ => {
            let mut nfa = Nfa::new(limits.deadline.meter());
            let start = nfa.add();
            let end = nfa.build(e, start, limits, cache)?;
            minimize(&nfa.determinize(start, end)?, &limits.deadline)?
        }
    };
    Ok(Arc::new(built))
}

/// Same language, complemented over all byte strings (a total DFA with the
/// final flags flipped).
fn complement(t: &Table) -> Table {
    let n = t.num_states();
    let sink = n as u32;
    let mut trans: Vec<u32> = t
        .trans
        .iter()
        .map(|&x| if x == DEAD { sink } else { x })
        .collect();
    trans.extend(std::iter::repeat_n(sink, t.num_classes));
    let mut is_final: Vec<bool> = t.is_final.iter().map(|f| !f).collect();
    is_final.push(true);
    Table {
        classes: t.classes,
        num_classes: t.num_classes,
        trans,
        is_final,
    }
}

/// The byte classes of a product of two automata, given as (byte ->
/// class, number of classes): one class per pair of classes some byte
/// has, and one byte of each.
pub(super) fn joint_classes(
    a: (&[u8; 256], usize),
    b: (&[u8; 256], usize),
) -> ([u8; 256], Vec<u8>) {
    // (`u16`: there can be 256 classes, so no `u8` is free for "none yet".)
    let mut pair_class = vec![u16::MAX; a.1 * b.1];
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for byte in 0..=255u8 {
        let key = a.0[byte as usize] as usize * b.1 + b.0[byte as usize] as usize;
        if pair_class[key] == u16::MAX {
            pair_class[key] = reps.len() as u16;
            reps.push(byte);
        }
        classes[byte as usize] = pair_class[key] as u8;
    }
    (classes, reps)
}

/// Intersection: the product automaton, explored from the start pair.
fn product(a: &Table, b: &Table, limits: &DfaLimits) -> Result<Table> {
    let (classes, reps) = joint_classes((&a.classes, a.num_classes), (&b.classes, b.num_classes));
    let num_classes = reps.len();
    // Pair ids: a dense table when the pairs are few, else a map.
    let dense_len = a.num_states() * b.num_states();
    let mut dense: Vec<u32> = if dense_len <= 1 << 20 {
        vec![DEAD; dense_len]
    } else {
        Vec::new()
    };
    let mut sparse: FastMap<(u32, u32), u32> = FastMap::default();
    let mut id_of = |ta: u32, tb: u32, next: u32| -> u32 {
        if dense.is_empty() {
            *sparse.entry((ta, tb)).or_insert(next)
        } else {
            let slot = &mut dense[ta as usize * b.num_states() + tb as usize];
            if *slot == DEAD {
                *slot = next;
            }
            *slot
        }
    };
    id_of(0, 0, 0);
    let mut order = vec![(0u32, 0u32)];
    let mut trans = Vec::new();
    let mut is_final = Vec::new();
    let mut meter = limits.deadline.meter();
    let mut i = 0;
    while i < order.len() {
        meter.step(num_classes)?;
        let (sa, sb) = order[i];
        is_final.push(a.is_final[sa as usize] && b.is_final[sb as usize]);
        for &byte in &reps {
            let (ta, tb) = (a.next(sa, byte), b.next(sb, byte));
            if ta == DEAD || tb == DEAD {
                trans.push(DEAD);
                continue;
            }
            let next = order.len() as u32;
            let id = id_of(ta, tb, next);
            if id == next {
                if order.len() >= MAX_STATES {
                    return Err(too_large());
                }
                order.push((ta, tb));
            }
            trans.push(id);
        }
        i += 1;
    }
    Ok(Table {
        classes,
        num_classes,
        trans,
        is_final,
    })
}

/// Most pairs of states [`disjoint`] visits before it gives up.
const DISJOINT_MAX_PAIRS: usize = 4096;

/// Whether no string is in both languages, found by a search of the pairs
/// of states from the start pair, which ends as soon as a pair is final
/// on both sides; `false` also when the search passes
/// [`DISJOINT_MAX_PAIRS`] (the caller then builds the product anyway).
fn disjoint(a: &Table, b: &Table, limits: &DfaLimits) -> Result<bool> {
    if a.num_states() == 0 || b.num_states() == 0 {
        return Ok(true);
    }
    let (_, reps) = joint_classes((&a.classes, a.num_classes), (&b.classes, b.num_classes));
    let mut seen: FastSet<(u32, u32)> = FastSet::default();
    seen.insert((0, 0));
    let mut stack = vec![(0u32, 0u32)];
    let mut meter = limits.deadline.meter();
    while let Some((sa, sb)) = stack.pop() {
        if a.is_final[sa as usize] && b.is_final[sb as usize] {
            return Ok(false);
        }
        meter.step(reps.len())?;
        for &byte in &reps {
            let (ta, tb) = (a.next(sa, byte), b.next(sb, byte));
            if ta != DEAD && tb != DEAD && seen.insert((ta, tb)) {
                if seen.len() > DISJOINT_MAX_PAIRS {
                    return Ok(false);
                }
                stack.push((ta, tb));
            }
        }
    }
    Ok(true)
}

/// Union: the product automaton where either side may have stopped.
fn union(a: &Table, b: &Table, limits: &DfaLimits) -> Result<Table> {
    let (classes, reps) = joint_classes((&a.classes, a.num_classes), (&b.classes, b.num_classes));
    let num_classes = reps.len();
    let mut ids: FastMap<(u32, u32), u32> = FastMap::default();
    ids.insert((0, 0), 0);
    let mut order = vec![(0u32, 0u32)];
    let mut trans = Vec::new();
    let mut is_final = Vec::new();
    let mut meter = limits.deadline.meter();
    let step = |t: &Table, s: u32, byte: u8| if s == DEAD { DEAD } else { t.next(s, byte) };
    let fin = |t: &Table, s: u32| s != DEAD && t.is_final[s as usize];
    let mut i = 0;
    while i < order.len() {
        meter.step(num_classes)?;
        let (sa, sb) = order[i];
        is_final.push(fin(a, sa) || fin(b, sb));
        for &byte in &reps {
            let (ta, tb) = (step(a, sa, byte), step(b, sb, byte));
            if ta == DEAD && tb == DEAD {
                trans.push(DEAD);
                continue;
            }
            let next = order.len() as u32;
            let id = *ids.entry((ta, tb)).or_insert(next);
            if id == next {
                if order.len() >= MAX_STATES {
                    return Err(too_large());
                }
                order.push((ta, tb));
            }
            trans.push(id);
        }
        i += 1;
    }
    Ok(Table {
        classes,
        num_classes,
        trans,
        is_final,
    })
}

#[derive(Default)]
struct NState {
    eps: Vec<u32>,
    /// `(lo, hi, target)`
    edges: Vec<(u8, u8, u32)>,
}

struct Nfa {
    states: Vec<NState>,
    /// The compilation's deadline, by the work done.
    meter: Meter,
    /// `seen[s] == stamp`: state `s` is in the closure being built.
    seen: Vec<u32>,
    stamp: u32,
}

impl Nfa {
    fn new(meter: Meter) -> Nfa {
        Nfa {
            states: Vec::new(),
            meter,
            seen: Vec::new(),
            stamp: 0,
        }
    }

    fn add(&mut self) -> u32 {
        self.states.push(NState::default());
        (self.states.len() - 1) as u32
    }

    fn check(&self) -> Result<()> {
        if self.states.len() > MAX_STATES {
            Err(too_large())
        } else {
            Ok(())
        }
    }

    /// Thompson construction from `from`; returns the end state.
    fn build(
        &mut self,
        e: &Expr,
        from: u32,
        limits: &DfaLimits,
        cache: &dyn LexemeSource,
    ) -> Result<u32> {
        self.check()?;
        self.meter.step(1)?;
        match e {
            Expr::Seq(v) if has_boolean(e) => {
                let mut cur = from;
                for x in v {
                    cur = self.build(x, cur, limits, cache)?;
                }
                Ok(cur)
            }
            Expr::Alt(v) if has_boolean(e) => {
                let end = self.add();
                for x in v {
                    let s = self.add();
                    self.states[from as usize].eps.push(s);
                    let t = self.build(x, s, limits, cache)?;
                    self.states[t as usize].eps.push(end);
                }
                Ok(end)
            }
            Expr::Repeat {
                max: Some(max),
                min,
                ..
            } if max < min => Ok(self.add()),
            Expr::Repeat { expr, min, max } if has_boolean(e) => {
                let mut cur = from;
                for _ in 0..*min {
                    let s = self.add();
                    self.states[cur as usize].eps.push(s);
                    cur = self.build(expr, s, limits, cache)?;
                }
                match max {
                    None => {
                        let head = self.add();
                        self.states[cur as usize].eps.push(head);
                        let t = self.build(expr, head, limits, cache)?;
                        self.states[t as usize].eps.push(head);
                        Ok(head)
                    }
                    Some(max) => {
                        let end = self.add();
                        self.states[cur as usize].eps.push(end);
                        for _ in *min..*max {
                            let s = self.add();
                            self.states[cur as usize].eps.push(s);
                            cur = self.build(expr, s, limits, cache)?;
                            self.states[cur as usize].eps.push(end);
                        }
                        Ok(end)
                    }
                }
            }
            _ => {
                let t = table_of(e, limits, cache)?;
                self.embed(&t, from)
            }
        }
    }

    /// Copies a DFA in; returns the end state its final states lead to.
    fn embed(&mut self, t: &Table, from: u32) -> Result<u32> {
        let base = self.states.len() as u32;
        for _ in 0..t.num_states() {
            self.add();
        }
        let end = self.add();
        self.check()?;
        self.states[from as usize].eps.push(base);
        let runs = t.class_runs();
        // Each state's edges gathered here, then copied at their size.
        let mut row = Vec::new();
        for s in 0..t.num_states() as u32 {
            self.meter.step(runs.len())?;
            row.clear();
            t.for_each_run(&runs, s, |lo, hi, target| row.push((lo, hi, base + target)));
            self.states[(base + s) as usize].edges = row.clone();
            if t.is_final[s as usize] {
                self.states[(base + s) as usize].eps.push(end);
            }
        }
        Ok(end)
    }

    /// Adds to `set` the states its states reach by epsilon moves, and
    /// sorts it (without duplicates).
    fn closure(&mut self, set: &mut Vec<u32>) -> Result<()> {
        if self.seen.len() < self.states.len() {
            self.seen.resize(self.states.len(), 0);
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.iter_mut().for_each(|x| *x = 0);
            self.stamp = 1;
        }
        let stamp = self.stamp;
        set.retain(|&s| std::mem::replace(&mut self.seen[s as usize], stamp) != stamp);
        let mut i = 0;
        let mut work = 0;
        while i < set.len() {
            let s = set[i] as usize;
            work += 1 + self.states[s].eps.len();
            for &t in &self.states[s].eps {
                if self.seen[t as usize] != stamp {
                    self.seen[t as usize] = stamp;
                    set.push(t);
                }
            }
            i += 1;
        }
        set.sort_unstable();
        self.meter.step(work + set.len())
    }

    /// Subset construction. Each subset's edges are read once, into the
    /// classes they cover (a run of bytes is a run of classes, which are
    /// intervals in byte order), rather than once per class: the subsets
    /// of an embedded DFA are mostly one state with a run per target, and
    /// a set of JSON names has dozens of classes.
    fn determinize(&mut self, start: u32, end: u32) -> Result<Table> {
        let edges = self.states.iter().flat_map(|st| &st.edges);
        let (classes, reps) = Table::classes_of_ranges(edges.map(|&(lo, hi, _)| (lo, hi)));
        let num_classes = reps.len();
        let mut first = vec![start];
        self.closure(&mut first)?;
        let mut ids: FastMap<Vec<u32>, u32> = FastMap::default();
        ids.insert(first.clone(), 0);
        let mut order = vec![first];
        let mut trans = Vec::new();
        let mut is_final = Vec::new();
        // Per class, the targets of the subset being expanded, valid where
        // `filled` holds that subset's index.
        let mut targets: Vec<Vec<u32>> = vec![Vec::new(); num_classes];
        let mut filled: Vec<usize> = vec![usize::MAX; num_classes];
        let mut i = 0;
        while i < order.len() {
            is_final.push(order[i].contains(&end));
            let mut work = 1;
            for &s in &order[i] {
                let edges = &self.states[s as usize].edges;
                work += 1 + edges.len();
                for &(lo, hi, t) in edges {
                    for c in classes[lo as usize] as usize..=classes[hi as usize] as usize {
                        if filled[c] != i {
                            filled[c] = i;
                            targets[c].clear();
                        }
                        targets[c].push(t);
                    }
                }
            }
            self.meter.step(work + num_classes)?;
            for c in 0..num_classes {
                if filled[c] != i {
                    trans.push(DEAD);
                    continue;
                }
                let mut next = std::mem::take(&mut targets[c]);
                self.closure(&mut next)?;
                let id = match ids.get(&next) {
                    Some(&id) => {
                        // Its buffer serves the next subset.
                        targets[c] = next;
                        id
                    }
                    None => {
                        if order.len() >= MAX_STATES {
                            return Err(too_large());
                        }
                        let id = order.len() as u32;
                        ids.insert(next.clone(), id);
                        order.push(next);
                        id
                    }
                };
                trans.push(id);
            }
            i += 1;
        }
        Ok(Table {
            classes,
            num_classes,
            trans,
            is_final,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::lexeme::LexemeDfa;

    fn accepts(d: &LexemeDfa, s: &str) -> bool {
        let mut st = d.start;
        for &b in s.as_bytes() {
            if st == DEAD {
                return false;
            }
            st = d.next(st, b);
        }
        st != DEAD && d.is_final[st as usize]
    }

    fn dfa(e: &Expr) -> LexemeDfa {
        LexemeDfa::from_table(
            &table_of(e, &DfaLimits::default(), &crate::compile::lexeme::Uncached).unwrap(),
        )
    }

    #[test]
    fn intersection_complement_and_sequences() {
        let lower = Expr::star(Expr::Class(CharClass::from_ranges([(97, 122)])));
        let len2to3 = Expr::repeat(Expr::Class(CharClass::any()), 2, Some(3));
        let both = Expr::and(vec![lower.clone(), len2to3]);
        let d = dfa(&both);
        assert!(accepts(&d, "ab") && accepts(&d, "abc"));
        assert!(!accepts(&d, "a") && !accepts(&d, "abcd") && !accepts(&d, "aB"));
        // Quoted, and not one of two names.
        let names = Expr::alt(vec![Expr::literal("id"), Expr::literal("name")]);
        let key = Expr::seq(vec![
            Expr::literal("\""),
            Expr::and(vec![lower, Expr::complement(names)]),
            Expr::literal("\""),
        ]);
        let d = dfa(&key);
        assert!(accepts(&d, "\"x\"") && accepts(&d, "\"ids\"") && accepts(&d, "\"\""));
        assert!(!accepts(&d, "\"id\"") && !accepts(&d, "\"name\""));
        // The complement stays within valid UTF-8.
        let d = dfa(&Expr::complement(Expr::literal("a")));
        assert!(accepts(&d, "é") && accepts(&d, "") && !accepts(&d, "a"));
        let mut st = d.start;
        st = d.next(st, 0xff);
        assert_eq!(st, DEAD);
    }

    /// An excluded set the rest cannot match is left out of the product;
    /// one it can match still excludes, also past the pairs the
    /// disjointness search looks at.
    #[test]
    fn exclusions_of_disjoint_sets() {
        let lower = || Expr::star(Expr::Class(CharClass::from_ranges([(97, 122)])));
        let prefixed = Expr::seq(vec![Expr::literal("title_"), lower()]);
        let names = |v: &[&str]| Expr::alt(v.iter().map(|n| Expr::literal(n)).collect());
        let plain = dfa(&prefixed);
        let apart = dfa(&Expr::and(vec![
            prefixed.clone(),
            Expr::complement(names(&["title", "id", "titles_x"])),
        ]));
        assert_eq!(apart.num_states(), plain.num_states());
        let overlapping = dfa(&Expr::and(vec![
            prefixed.clone(),
            Expr::complement(names(&["title", "title_ab"])),
        ]));
        assert!(accepts(&overlapping, "title_a") && accepts(&overlapping, "title_abc"));
        assert!(!accepts(&overlapping, "title_ab") && !accepts(&overlapping, "title"));
        // A long shared prefix: more pairs than the search visits.
        let long = "x".repeat(5000);
        let deep = dfa(&Expr::and(vec![
            Expr::seq(vec![Expr::literal(&long), lower()]),
            Expr::complement(names(&[&format!("{long}q")])),
        ]));
        assert!(accepts(&deep, &format!("{long}qq")) && !accepts(&deep, &format!("{long}q")));
    }

    /// Intersections of three or more operands that start alike share the
    /// product of their first two, built once by the part cache; the
    /// language is the intersection of all operands either way.
    #[test]
    fn intersections_share_their_first_two_operands() {
        use std::sync::Mutex;
        /// Builds like `Uncached`, and keeps the parts asked for and built.
        #[derive(Default)]
        struct Recording {
            built: Mutex<FastMap<Expr, Arc<Table>>>,
            asked: Mutex<Vec<Expr>>,
        }
        impl LexemeSource for Recording {
            fn lexeme(&self, e: &Expr, l: &DfaLimits) -> Result<Option<Arc<LexemeDfa>>> {
                crate::compile::lexeme::Uncached.lexeme(e, l)
            }
            fn counted_lexeme(
                &self,
                e: &Expr,
                p: &Expr,
                min: u32,
                max: Option<u32>,
                l: &DfaLimits,
            ) -> Result<Option<Arc<LexemeDfa>>> {
                crate::compile::lexeme::Uncached.counted_lexeme(e, p, min, max, l)
            }
            fn part(&self, e: &Expr, l: &DfaLimits) -> Result<Arc<Table>> {
                self.asked.lock().unwrap().push(e.clone());
                if let Some(t) = self.built.lock().unwrap().get(e) {
                    return Ok(t.clone());
                }
                let t = Arc::new(crate::compile::lexeme::source::build_part(e, l, self)?);
                self.built.lock().unwrap().insert(e.clone(), t.clone());
                Ok(t)
            }
        }
        let digits = |lo: char| Expr::Class(CharClass::from_ranges([(lo as u32, '9' as u32)]));
        let number = Expr::seq(vec![digits('1'), Expr::star(digits('0'))]);
        let up_to = |n: u32| Expr::repeat(Expr::Class(CharClass::any()), 1, Some(n));
        let no_zero = Expr::star(digits('1'));
        let source = Recording::default();
        let (limits, mut dfas) = (DfaLimits::default(), Vec::new());
        for n in [2, 3] {
            let e = Expr::And(vec![number.clone(), no_zero.clone(), up_to(n)]);
            dfas.push(LexemeDfa::from_table(
                &table_of(&e, &limits, &source).unwrap(),
            ));
        }
        let head = Expr::And(vec![number.clone(), no_zero.clone()]);
        let asked = source.asked.lock().unwrap();
        assert_eq!(asked.iter().filter(|e| **e == head).count(), 2);
        assert!(source.built.lock().unwrap().contains_key(&head));
        for (d, n) in dfas.iter().zip([2, 3]) {
            assert!(accepts(d, "12") && accepts(d, &"9".repeat(n)));
            assert!(!accepts(d, "10") && !accepts(d, "012") && !accepts(d, &"9".repeat(n + 1)));
        }
    }

    #[test]
    fn union_with_a_date_time() {
        use crate::ir::{Rfc3339, TextForm};
        let dt = Expr::Rfc3339(Rfc3339 {
            date: true,
            form: TextForm::Quoted,
        });
        let e = Expr::alt(vec![Expr::literal("null"), dt, Expr::literal("12")]);
        let d = dfa(&e);
        for ok in ["null", "12", "\"2024-12-31T15:59:60-08:00\""] {
            assert!(accepts(&d, ok), "{ok}");
        }
        for bad in ["nul", "1", "\"2024-12-31T15:59:60-07:00\"", "\"\""] {
            assert!(!accepts(&d, bad), "{bad}");
        }
    }

    #[test]
    fn product_with_a_class_per_byte() {
        // Low and high nibbles: together every byte is its own class.
        let nibbles = |f: fn(usize) -> usize| {
            let mut classes = [0u8; 256];
            for (b, c) in classes.iter_mut().enumerate() {
                *c = f(b) as u8;
            }
            // Accepts one byte whose nibble is 0.
            let mut trans = vec![DEAD; 2 * 16];
            trans[0] = 1;
            Table {
                classes,
                num_classes: 16,
                trans,
                is_final: vec![false, true],
            }
        };
        let p = product(
            &nibbles(|b| b % 16),
            &nibbles(|b| b / 16),
            &DfaLimits::default(),
        )
        .unwrap();
        assert_eq!(p.num_classes, 256);
        let distinct: std::collections::HashSet<u8> = p.classes.iter().copied().collect();
        assert_eq!(distinct.len(), 256);
        assert!(p.is_final[p.next(0, 0x00) as usize]);
        assert_eq!(p.next(0, 0x10), DEAD);
        assert_eq!(p.next(0, 0xff), DEAD);
    }
}
