//! Parser rules as automata: each becomes an epsilon-free NFA whose
//! edges read a byte range, call another rule (a lexeme or a parser
//! rule), or read one whole token from a token set. Together they form a
//! recursive transition network that the Earley matcher runs.

use regex_syntax::utf8::Utf8Sequences;

use crate::error::{Error, Result};
use crate::ir::{CharClass, Expr, TokenSet};
use crate::limits::{Meter, EDGES_PER_STATE, WORK_PER_CHECK};
use crate::util::byteset::ByteSet;

/// An epsilon-free automaton state of a parser rule. Its edges are
/// ranges of the grammar's [`Edges`].
#[derive(Clone, Debug, Default)]
pub struct ParserState {
    /// Compiled rule this state belongs to.
    pub rule: u32,
    pub is_final: bool,
    bytes: (u32, u32),
    calls: (u32, u32),
    tokens: (u32, u32),
    /// Bytes on this state's own byte edges.
    pub direct_first: ByteSet,
}

/// The edges of every parser-rule state of a grammar, in three arrays; a
/// state's edges of one kind are one range, sorted. (Per-state vectors
/// were most of the cost of building parser rules: a state per byte of
/// every literal, each with its own allocations.)
#[derive(Clone, Debug, Default)]
pub struct Edges {
    /// `(lo, hi, target)`: read one byte in `lo..=hi`.
    bytes: Vec<(u8, u8, u32)>,
    /// `(rule, target)`: a whole match of the compiled rule.
    calls: Vec<(u32, u32)>,
    /// `(token set index, target)`: one whole token.
    tokens: Vec<(u32, u32)>,
}

impl ParserState {
    /// How many call edges it has (read from its range, not the list).
    pub fn num_calls(&self) -> usize {
        (self.calls.1 - self.calls.0) as usize
    }
}

impl Edges {
    #[inline]
    pub fn bytes(&self, s: &ParserState) -> &[(u8, u8, u32)] {
        &self.bytes[s.bytes.0 as usize..s.bytes.1 as usize]
    }

    #[inline]
    pub fn calls(&self, s: &ParserState) -> &[(u32, u32)] {
        &self.calls[s.calls.0 as usize..s.calls.1 as usize]
    }

    #[inline]
    pub fn tokens(&self, s: &ParserState) -> &[(u32, u32)] {
        &self.tokens[s.tokens.0 as usize..s.tokens.1 as usize]
    }

    /// The edges of `states` whose target passes `keep` (and, for calls,
    /// whose rule passes `keep_call`), the states' ranges updated.
    pub fn retain(
        &mut self,
        states: &mut [ParserState],
        keep: impl Fn(u32) -> bool,
        keep_call: impl Fn(u32) -> bool,
    ) {
        // At most as many as now: one allocation each, not a doubling
        // chain copied and faulted in at each step.
        let mut out = Edges {
            bytes: Vec::with_capacity(self.bytes.len()),
            calls: Vec::with_capacity(self.calls.len()),
            tokens: Vec::with_capacity(self.tokens.len()),
        };
        for s in states.iter_mut() {
            let from = out.bytes.len() as u32;
            out.bytes
                .extend(self.bytes(s).iter().copied().filter(|e| keep(e.2)));
            s.bytes = (from, out.bytes.len() as u32);
            let from = out.calls.len() as u32;
            out.calls.extend(
                self.calls(s)
                    .iter()
                    .copied()
                    .filter(|e| keep_call(e.0) && keep(e.1)),
            );
            s.calls = (from, out.calls.len() as u32);
            let from = out.tokens.len() as u32;
            out.tokens
                .extend(self.tokens(s).iter().copied().filter(|e| keep(e.1)));
            s.tokens = (from, out.tokens.len() as u32);
        }
        *self = out;
    }

    /// How many edges the states `states` have together, `states` being
    /// consecutive states of the grammar: each state's edges follow the
    /// previous state's in every list (states are built, and retained, in
    /// order), so this reads two states, not every one.
    pub fn count_of(states: &[ParserState]) -> usize {
        match (states.first(), states.last()) {
            (Some(a), Some(z)) => {
                (z.bytes.1 - a.bytes.0 + z.calls.1 - a.calls.0 + z.tokens.1 - a.tokens.0) as usize
            }
            _ => 0,
        }
    }

    /// How many edges there are, of every kind.
    pub fn total(&self) -> usize {
        self.bytes.len() + self.calls.len() + self.tokens.len()
    }

    /// How many byte, call and token edges there are.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.bytes.len(), self.calls.len(), self.tokens.len())
    }

    /// Approximate heap bytes.
    pub fn memory(&self) -> usize {
        self.bytes.capacity() * 12 + self.calls.capacity() * 8 + self.tokens.capacity() * 8
    }
}

/// Sorts and deduplicates `v[from..]`; returns its range.
fn sort_dedup<T: Ord + Copy>(v: &mut Vec<T>, from: usize) -> (u32, u32) {
    v[from..].sort_unstable();
    let mut w = from;
    for r in from..v.len() {
        if r == from || v[r] != v[w - 1] {
            v[w] = v[r];
            w += 1;
        }
    }
    v.truncate(w);
    (from as u32, w as u32)
}

/// The error of a grammar over `max_edges` automaton edges.
fn too_many_edges(max_edges: usize) -> Error {
    Error::limit(format!(
        "the grammar needs more than {max_edges} automaton edges ({EDGES_PER_STATE} per state of \
         max_states): a repeated group with optional parts gives each state the edges of every \
         state it can skip to"
    ))
}

/// States made between two counts of the deadline's [`Meter`].
const STATES_PER_STEP: u32 = 1024;

/// An edge of the Thompson automaton under construction.
#[derive(Clone, Copy)]
enum Edge {
    Eps(u32),
    /// `(lo, hi, target)`.
    Byte(u8, u8, u32),
    /// `(rule, target)`.
    Call(u32, u32),
    /// `(token set index, target)`.
    Token(u32, u32),
}

/// Builds the automaton of one rule body (whose `Ref`s are compiled rule
/// indices) with Thompson's construction, then removes epsilon edges.
///
/// States are numbers and edges one flat list of `(source, edge)`: a rule
/// body has a state per byte of its literals (every property name of an
/// object), and four vectors per state cost more in allocation than the
/// construction itself.
/// Buffers each rule's construction takes over from the previous rule's:
/// a grammar has thousands of rules, and each allocated its own.
#[derive(Default)]
pub struct RtnScratch {
    edges: Vec<(u32, Edge)>,
    first: Vec<u32>,
    new_id: Vec<u32>,
    order: Vec<u32>,
    closure: Vec<u32>,
    mark: Vec<u32>,
}

pub struct RtnBuilder<'a> {
    num_states: u32,
    scratch: &'a mut RtnScratch,
    token_sets: &'a mut Vec<TokenSet>,
    /// States of the grammar built before this rule.
    used: usize,
    max_states: usize,
    /// The compilation's deadline, by the states and edges made.
    meter: &'a mut Meter,
}

impl<'a> RtnBuilder<'a> {
    /// A builder for one rule, `used` states of `max_states` (the whole
    /// grammar's) being taken by the rules built before it.
    pub fn new(
        token_sets: &'a mut Vec<TokenSet>,
        scratch: &'a mut RtnScratch,
        used: usize,
        max_states: usize,
        meter: &'a mut Meter,
    ) -> Self {
        scratch.edges.clear();
        RtnBuilder {
            num_states: 0,
            scratch,
            token_sets,
            used,
            max_states,
            meter,
        }
    }

    fn fresh(&mut self) -> Result<u32> {
        if self.used + self.num_states as usize >= self.max_states {
            return Err(Error::limit(format!(
                "the grammar needs more than {} automaton states (max_states)",
                self.max_states
            )));
        }
        // The clock is read per thousands of states: a state costs a few
        // instructions here.
        if self.num_states.is_multiple_of(STATES_PER_STEP) {
            self.meter.step(STATES_PER_STEP as usize)?;
        }
        self.num_states += 1;
        Ok(self.num_states - 1)
    }

    fn edge(&mut self, from: u32, e: Edge) {
        self.scratch.edges.push((from, e));
    }

    /// Appends the epsilon-free states of `body` to `out` (the first is the
    /// start, numbered `base`), their edges to `edges` with targets
    /// numbered from `base`; `rule` is stored in each.
    pub fn build(
        mut self,
        body: &Expr,
        rule: u32,
        base: u32,
        edges: &mut Edges,
        out: &mut Vec<ParserState>,
    ) -> Result<()> {
        let start = self.fresh()?;
        let end = self.expr(body, start, None)?;
        self.eliminate_epsilons(start, end, rule, base, edges, out)
    }

    /// The automaton of `e` from state `from`; returns its end state.
    /// `to`: a state the caller would link the end to by an epsilon edge
    /// and nothing else, which an alternation takes as its own end. Nested
    /// groups (`("a" | ("b" | ...))`) then share one end instead of a
    /// chain of epsilon edges that the closure of every alternative walked
    /// up to the top (quadratic: 2.3 s at 20,000 levels).
    fn expr(&mut self, e: &Expr, from: u32, to: Option<u32>) -> Result<u32> {
        Ok(match e {
            Expr::Empty => from,
            Expr::Nothing => self.fresh()?,
            Expr::Literal(s) => {
                let mut cur = from;
                for &b in s.as_bytes() {
                    let next = self.fresh()?;
                    self.edge(cur, Edge::Byte(b, b, next));
                    cur = next;
                }
                cur
            }
            Expr::Class(c) => self.class(c, from)?,
            Expr::Seq(v) => {
                let mut cur = from;
                for (i, x) in v.iter().enumerate() {
                    cur = self.expr(x, cur, if i + 1 == v.len() { to } else { None })?;
                }
                cur
            }
            Expr::Alt(v) => {
                let end = match to {
                    Some(t) => t,
                    None => self.fresh()?,
                };
                for x in v {
                    let s = self.fresh()?;
                    self.edge(from, Edge::Eps(s));
                    let e = self.expr(x, s, Some(end))?;
                    if e != end {
                        self.edge(e, Edge::Eps(end));
                    }
                }
                end
            }
            Expr::Repeat {
                max: Some(max),
                min,
                ..
            } if max < min => self.fresh()?,
            Expr::Repeat { expr, min, max } => {
                let mut cur = from;
                for _ in 0..*min {
                    let s = self.fresh()?;
                    self.edge(cur, Edge::Eps(s));
                    cur = self.expr(expr, s, None)?;
                }
                match max {
                    None => {
                        let head = self.fresh()?;
                        self.edge(cur, Edge::Eps(head));
                        let e = self.expr(expr, head, None)?;
                        self.edge(e, Edge::Eps(head));
                        head
                    }
                    Some(max) => {
                        let end = self.fresh()?;
                        self.edge(cur, Edge::Eps(end));
                        for _ in *min..*max {
                            let s = self.fresh()?;
                            self.edge(cur, Edge::Eps(s));
                            cur = self.expr(expr, s, None)?;
                            self.edge(cur, Edge::Eps(end));
                        }
                        end
                    }
                }
            }
            Expr::Ref(r) => {
                let next = self.fresh()?;
                self.edge(from, Edge::Call(*r, next));
                next
            }
            Expr::JsonStrings(js) if !js.negated() => self.expr(&js.spelled(), from, to)?,
            Expr::And(_)
            | Expr::Not(_)
            | Expr::JsonStrings(_)
            | Expr::JsonQuoted(_)
            | Expr::DecimalMultiple(_)
            | Expr::IntegerRange(_)
            | Expr::Rfc3339(_) => {
                return Err(Error::unsupported(
                    "intersection and complement are only supported on regular parts",
                ))
            }
            Expr::Token(ts) => {
                let idx = match self.token_sets.iter().position(|t| t == ts) {
                    Some(i) => i,
                    None => {
                        self.token_sets.push(ts.clone());
                        self.token_sets.len() - 1
                    }
                } as u32;
                let next = self.fresh()?;
                self.edge(from, Edge::Token(idx, next));
                next
            }
        })
    }

    /// One code point of the class, as UTF-8 byte-range sequences.
    fn class(&mut self, c: &CharClass, from: u32) -> Result<u32> {
        let end = self.fresh()?;
        for &(lo, hi) in c.ranges() {
            let (lo, hi) = (char::from_u32(lo).unwrap(), char::from_u32(hi).unwrap());
            for seq in Utf8Sequences::new(lo, hi) {
                let ranges = seq.as_slice();
                let mut cur = from;
                for (i, r) in ranges.iter().enumerate() {
                    let next = if i + 1 == ranges.len() {
                        end
                    } else {
                        self.fresh()?
                    };
                    self.edge(cur, Edge::Byte(r.start, r.end, next));
                    cur = next;
                }
            }
        }
        Ok(end)
    }

    /// Appends the rule's states to `out`: an error once the deadline
    /// passes or the grammar's edges pass [`EDGES_PER_STATE`] per state of
    /// `max_states` (each state gets the edges of its epsilon closure).
    fn eliminate_epsilons(
        self,
        start: u32,
        end: u32,
        rule: u32,
        base: u32,
        out_edges: &mut Edges,
        out: &mut Vec<ParserState>,
    ) -> Result<()> {
        let n = self.num_states as usize;
        let max_edges = self.max_states.saturating_mul(EDGES_PER_STATE);
        let meter = self.meter;
        let RtnScratch {
            edges,
            first,
            new_id,
            order,
            closure,
            mark,
        } = self.scratch;
        // Edges grouped by source state (stable: construction order kept).
        edges.sort_by_key(|e| e.0);
        first.clear();
        first.resize(n + 1, 0);
        for &(s, _) in edges.iter() {
            first[s as usize + 1] += 1;
        }
        for s in 0..n {
            first[s + 1] += first[s];
        }
        let (edges, first) = (&*edges, &*first);
        let out_of = |s: u32| &edges[first[s as usize] as usize..first[s as usize + 1] as usize];
        // Renumber the states reachable through non-epsilon edges.
        new_id.clear();
        new_id.resize(n, u32::MAX);
        order.clear();
        order.push(start);
        new_id[start as usize] = 0;
        // The epsilon closure of the state being built, and a mark per
        // state of the closure it was last put in.
        closure.clear();
        mark.clear();
        mark.resize(n, u32::MAX);
        let mut uncounted = 0;
        let mut i = 0;
        while i < order.len() {
            let s = order[i];
            closure.clear();
            closure.push(s);
            mark[s as usize] = i as u32;
            let mut k = 0;
            while k < closure.len() {
                for &(_, e) in out_of(closure[k]) {
                    if let Edge::Eps(t) = e {
                        if mark[t as usize] != i as u32 {
                            mark[t as usize] = i as u32;
                            closure.push(t);
                        }
                    }
                }
                k += 1;
            }
            let is_final = mark[end as usize] == i as u32;
            let mut map = |t: u32| -> u32 {
                if new_id[t as usize] == u32::MAX {
                    new_id[t as usize] = order.len() as u32;
                    order.push(t);
                }
                base + new_id[t as usize]
            };
            let (b0, c0, t0) = (
                out_edges.bytes.len(),
                out_edges.calls.len(),
                out_edges.tokens.len(),
            );
            for &c in closure.iter() {
                for &(_, e) in out_of(c) {
                    match e {
                        Edge::Eps(_) => {}
                        Edge::Byte(lo, hi, t) => out_edges.bytes.push((lo, hi, map(t))),
                        Edge::Call(r, t) => out_edges.calls.push((r, map(t))),
                        Edge::Token(ts, t) => out_edges.tokens.push((ts, map(t))),
                    }
                }
            }
            let edges_made = out_edges.bytes.len() - b0 + out_edges.calls.len() - c0
                + out_edges.tokens.len()
                - t0;
            // Counted here, then by the meter past a threshold (counted by
            // the meter per state, it took 4% of building parser rules).
            // Sorting costs a few steps per edge.
            uncounted += closure.len() + 4 * edges_made;
            if uncounted >= WORK_PER_CHECK {
                meter.step(std::mem::take(&mut uncounted))?;
                if out_edges.total() > max_edges {
                    return Err(too_many_edges(max_edges));
                }
            }
            let mut st = ParserState {
                rule,
                is_final,
                bytes: sort_dedup(&mut out_edges.bytes, b0),
                calls: sort_dedup(&mut out_edges.calls, c0),
                tokens: sort_dedup(&mut out_edges.tokens, t0),
                ..Default::default()
            };
            for &(lo, hi, _) in out_edges.bytes(&st) {
                st.direct_first.insert_range(lo, hi);
            }
            out.push(st);
            i += 1;
        }
        if out_edges.total() > max_edges {
            return Err(too_many_edges(max_edges));
        }
        Ok(())
    }
}
