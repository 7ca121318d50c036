//! Compiling grammar IR into the automaton the matcher walks.
//!
//! Every IR rule is classified ([`analyze`]): small finite regular rules are
//! copied into their callers, regular rules with loops become lexemes (DFAs
//! shared per vocabulary, [`lexeme`]), and everything else (recursive rules,
//! token elements) becomes a parser rule: an epsilon-free automaton whose
//! edges read bytes, call rules, or read whole tokens ([`rtn`]). Loops over
//! regular parts inside parser rules are lifted into anonymous lexemes, so
//! that wide character loops are always DFA states whose token sets are
//! computed once and shared.
//!
//! States of all compiled rules share one id space: parser-rule states
//! first, then one block per lexeme rule (`base + DFA state`).

mod adjacency;
pub mod analyze;
pub mod chart;
mod horn;
pub mod lexeme;
pub mod right_linear;
pub mod rtn;

use std::borrow::Cow;
use std::sync::Arc;

use adjacency::Adjacency;
use analyze::{
    expand, expanded, is_loopish, is_regular_expr, simplified, Analysis, RuleClass, RunSize,
};
use lexeme::{DfaLimits, LexemeDfa, LexemeSource};
use rtn::{Edges, ParserState, RtnBuilder, RtnScratch};

use crate::error::{Error, Result};
use crate::ir::{self, Expr, TokenSet};
use crate::limits::{self, Deadline, Meter, SampledDeadline};
use crate::util::byteset::ByteSet;
use crate::util::hash::FastMap;
use crate::vocab::Vocab;

/// How a compiled rule runs.
pub enum RuleKind {
    /// Parser rule: its states are `parser_states[start..]`.
    Parser { start: u32 },
    /// Lexeme: state `base + s` is DFA state `s`.
    Lexeme { dfa: Arc<LexemeDfa>, base: u32 },
}

/// A compiled rule.
pub struct CompiledRule {
    pub name: String,
    pub kind: RuleKind,
    /// Can match the empty string.
    pub nullable: bool,
    /// Bytes that can come right after a match of this rule, in any context.
    pub follow: ByteSet,
    /// The rule can call itself before reading anything (directly or
    /// through other rules, past nullable calls). Token sets of such a
    /// rule's start are walked where it is called, never looked up there:
    /// the lookup would wait for itself.
    pub left_recursive: bool,
    /// Call edges into the rule, over all parser states.
    pub call_sites: u32,
}

/// A grammar compiled for one vocabulary: plain immutable data, shared
/// across threads. What the mask path learns about it (the tokens each
/// state allows) is kept beside it by the token-set layer
/// (`tokensets::CompiledGrammar`).
pub struct Automaton {
    pub(crate) rules: Vec<CompiledRule>,
    /// The states of every parser rule: global state ids `0..len()`,
    /// lexeme states after them.
    pub(crate) parser_states: Vec<ParserState>,
    /// The edges of the parser-rule states.
    pub(crate) edges: Edges,
    /// `(first global state id, rule)` of each lexeme rule, sorted.
    pub(crate) lexeme_blocks: Vec<(u32, u32)>,
    pub(crate) token_sets: Vec<TokenSet>,
    /// The state the matcher starts in (of the synthetic start rule 0).
    pub(crate) start_state: u32,
    /// Some state has a token edge (else masks skip that step).
    pub(crate) has_token_edges: bool,
    /// The parser steps one mask may take.
    pub(crate) max_mask_steps: u64,
    /// JSON Schema in lenient mode: the keywords left out.
    pub(crate) dropped: Vec<crate::ir::Dropped>,
}

impl Automaton {
    /// The keywords a lenient JSON Schema compile left out (empty
    /// otherwise).
    pub fn dropped(&self) -> &[crate::ir::Dropped] {
        &self.dropped
    }

    /// Number of parser-rule states plus lexeme DFA states.
    pub fn num_states(&self) -> usize {
        self.parser_states.len()
            + self
                .rules
                .iter()
                .map(|r| match &r.kind {
                    RuleKind::Lexeme { dfa, .. } => dfa.num_states(),
                    _ => 0,
                })
                .sum::<usize>()
    }

    /// A parser-rule state's byte edges `(lo, hi, target)`.
    #[inline]
    pub(crate) fn byte_edges(&self, state: u32) -> &[(u8, u8, u32)] {
        self.edges.bytes(&self.parser_states[state as usize])
    }

    /// A parser-rule state's call edges `(rule, target)`.
    #[inline]
    pub(crate) fn call_edges(&self, state: u32) -> &[(u32, u32)] {
        self.edges.calls(&self.parser_states[state as usize])
    }

    /// A parser-rule state's call edges to rule `rule`. Call edges are
    /// sorted by rule (`rtn` builds them so), so that completing a rule
    /// called from a state with thousands of alternatives costs a search,
    /// not a scan.
    #[inline]
    pub(crate) fn call_edges_to(&self, state: u32, rule: u32) -> &[(u32, u32)] {
        let calls = self.call_edges(state);
        debug_assert!(calls.windows(2).all(|w| w[0] <= w[1]));
        let from = calls.partition_point(|&(r, _)| r < rule);
        let to = from + calls[from..].partition_point(|&(r, _)| r == rule);
        &calls[from..to]
    }

    /// A parser-rule state's token edges `(token set, target)`.
    #[inline]
    pub(crate) fn token_edges(&self, state: u32) -> &[(u32, u32)] {
        self.edges.tokens(&self.parser_states[state as usize])
    }

    /// The compiled rule a state belongs to.
    #[inline]
    pub(crate) fn rule_of(&self, state: u32) -> u32 {
        if (state as usize) < self.parser_states.len() {
            self.parser_states[state as usize].rule
        } else {
            let k = self.lexeme_blocks.partition_point(|&(b, _)| b <= state) - 1;
            self.lexeme_blocks[k].1
        }
    }

    /// Approximate heap bytes of the automaton (lexeme DFAs shared with
    /// other grammars are counted in full).
    pub fn memory(&self) -> usize {
        let mut m = std::mem::size_of::<Self>();
        for s in &self.parser_states {
            m += std::mem::size_of_val(s);
        }
        m += self.edges.memory();
        for r in &self.rules {
            m += std::mem::size_of::<CompiledRule>() + r.name.len();
            if let RuleKind::Lexeme { dfa, .. } = &r.kind {
                m += dfa.memory();
            }
        }
        for t in &self.token_sets {
            m += t.ids.len() * 4 + 32;
        }
        m
    }
}

/// Checks the clock and the state budget during compilation.
struct Budget {
    deadline: SampledDeadline,
    max_states: usize,
}

impl Budget {
    /// Checked once per rule: the clock is sampled (see
    /// [`SampledDeadline`]); a lexeme that takes long to build checks the
    /// deadline itself.
    fn check(&self, states: usize) -> Result<()> {
        self.check_states(states)?;
        self.deadline.check()
    }

    /// [`Budget::check`] reading the clock.
    fn check_now(&self, states: usize) -> Result<()> {
        self.check_states(states)?;
        self.deadline.deadline().check()
    }

    fn check_states(&self, states: usize) -> Result<()> {
        if states > self.max_states {
            return Err(Error::limit(format!(
                "the grammar needs more than {} automaton states (max_states)",
                self.max_states
            )));
        }
        Ok(())
    }
}

/// Turns IR rule bodies into compiled rules.
struct Lowering<'g> {
    g: &'g ir::Grammar,
    analysis: Analysis,
    /// IR rule -> compiled rule, for lexeme and parser IR rules.
    compiled_of: Vec<Option<u32>>,
    /// Compiled rules to build: (name, source).
    pending: Vec<(String, Source)>,
    /// Anonymous lexemes by their expanded expression.
    anon: FastMap<Expr, u32>,
    /// The rule being lowered lets runs of regular parts become one lexeme
    /// (see [`Lowering::lower_seq`]).
    merge_runs: bool,
}

enum Source {
    /// The synthetic start rule.
    Start(Expr),
    Rule(u32),
    AnonLexeme(Expr),
}

impl<'g> Lowering<'g> {
    fn compiled_rule(&mut self, r: u32) -> u32 {
        if let Some(c) = self.compiled_of[r as usize] {
            return c;
        }
        let c = self.pending.len() as u32;
        self.compiled_of[r as usize] = Some(c);
        self.pending
            .push((self.g.rules[r as usize].name.clone(), Source::Rule(r)));
        c
    }

    /// The compiled rule of an anonymous lexeme (made once per expression).
    fn anon_lexeme(&mut self, lexeme: Expr) -> u32 {
        let next = self.pending.len() as u32;
        let c = *self.anon.entry(lexeme.clone()).or_insert(next);
        if c == next {
            self.pending
                .push((format!("lexeme#{c}"), Source::AnonLexeme(lexeme)));
        }
        c
    }

    /// A sequence in which runs of two or more nullable regular parts that
    /// loop (`space until-N?` between the parts of llama.cpp's tool-call
    /// grammars) become one lexeme each, as long as [`RunSize::fits`]: a run
    /// that grows too large is cut there and the next starts with the part
    /// that did not fit. Part by part, each of those lexemes could be empty
    /// or end anywhere inside the next token, so the mask had to walk those
    /// tokens through the parser (10 ms for `space until?`); as one DFA,
    /// only the run's own end is such a boundary. Parts that cannot be
    /// empty (`"{" space`) stay apart: they end at a fixed place, and
    /// merging them would only multiply the lexemes to build.
    fn lower_seq(&mut self, v: &[Expr], depth: usize) -> Result<Expr> {
        let mut out = Vec::with_capacity(v.len());
        let mut run: Vec<Expr> = Vec::new();
        let mut run_size = RunSize::default();
        for x in v {
            // Nullability first: it usually answers at the first part,
            // where regularity walks the whole subtree (at every level of
            // a deep nesting: quadratic).
            if !x.nullable_given(&self.analysis.nullable)
                || !is_regular_expr(x, &self.analysis.regular)
            {
                self.flush_run(&mut run, &mut out, depth)?;
                run_size = RunSize::default();
                out.push(self.lower(x, depth + 1)?);
                continue;
            }
            let part = self.analysis.run_part(x, self.g);
            if !run.is_empty() && !run_size.plus(part).fits() {
                self.flush_run(&mut run, &mut out, depth)?;
                run_size = RunSize::default();
            }
            run.push(x.clone());
            run_size = run_size.plus(part);
        }
        self.flush_run(&mut run, &mut out, depth)?;
        Ok(Expr::seq(out))
    }

    /// Emits a run of regular parts: one lexeme when it has two or more
    /// parts and loops, else part by part.
    fn flush_run(&mut self, run: &mut Vec<Expr>, out: &mut Vec<Expr>, depth: usize) -> Result<()> {
        if run.len() >= 2 && self.analysis.loops(&Expr::Seq(run.clone())) {
            let lexeme = expand(&Expr::seq(std::mem::take(run)), self.g);
            out.push(Expr::Ref(self.anon_lexeme(lexeme)));
            return Ok(());
        }
        for x in run.drain(..) {
            out.push(self.lower(&x, depth + 1)?);
        }
        Ok(())
    }

    /// [`Lowering::lower`] of a rule body; with `split`, the body is a
    /// lexeme whose DFA would be too large, and it is lowered without
    /// lifting the whole of it back into that same lexeme: its top node
    /// stays a parser construct and only its parts can become lexemes
    /// (each strictly smaller, so that splitting again ends). With run
    /// merging off (the caller's job), no run can rebuild the whole either.
    fn lower_parts(&mut self, body: &Expr, split: bool) -> Result<Expr> {
        match body {
            Expr::Repeat { expr, min, max } if split => {
                Ok(Expr::repeat(self.lower(expr, 1)?, *min, *max))
            }
            _ => self.lower(body, 0),
        }
    }

    /// A parser-rule body with references turned into compiled-rule calls,
    /// inline rules copied in and regular loops lifted into lexemes.
    fn lower(&mut self, e: &Expr, depth: usize) -> Result<Expr> {
        if depth > 100_000 {
            return Err(Error::limit("grammar nesting too deep"));
        }
        let p = &self.analysis.productive;
        Ok(match e {
            Expr::Ref(r) => match self.analysis.class[*r as usize] {
                RuleClass::Inline => {
                    let g = self.g;
                    let body = simplified(&g.rules[*r as usize].body, p);
                    self.lower(&body, depth + 1)?
                }
                _ => Expr::Ref(self.compiled_rule(*r)),
            },
            Expr::Repeat { expr, min, max }
                if is_loopish(*min, *max)
                    && is_regular_expr(expr, &self.analysis.regular)
                    && self.analysis.fits_lexeme(e) =>
            {
                let lexeme = expand(e, self.g);
                Expr::Ref(self.anon_lexeme(lexeme))
            }
            // The JSON strings of a plain pattern, in a parser rule (one
            // too large to be a lexeme as a whole): spelled out, a plain
            // regular expression like any other.
            Expr::JsonQuoted(chars) if !lexeme::has_boolean(chars) => {
                self.lower(&ir::json_quoted_spelled(chars), depth + 1)?
            }
            // Intersection, complement and sets of JSON strings exist only
            // as DFAs: inside a parser rule (one too large to be a lexeme
            // as a whole) each is a lexeme of its own.
            Expr::And(_)
            | Expr::Not(_)
            | Expr::JsonStrings(_)
            | Expr::JsonQuoted(_)
            | Expr::DecimalMultiple(_)
            | Expr::IntegerRange(_)
            | Expr::Rfc3339(_) => {
                if !is_regular_expr(e, &self.analysis.regular) {
                    return Err(Error::unsupported(
                        "intersection and complement are only supported on regular parts \
                         (this one recurses or reads tokens)",
                    ));
                }
                Expr::Ref(self.anon_lexeme(expand(e, self.g)))
            }
            Expr::Seq(v) if self.merge_runs => self.lower_seq(v, depth)?,
            Expr::Seq(v) => Expr::seq(
                v.iter()
                    .map(|x| self.lower(x, depth + 1))
                    .collect::<Result<_>>()?,
            ),
            Expr::Alt(v) => Expr::alt(
                v.iter()
                    .map(|x| self.lower(x, depth + 1))
                    .collect::<Result<_>>()?,
            ),
            Expr::Repeat { expr, min, max } => {
                Expr::repeat(self.lower(expr, depth + 1)?, *min, *max)
            }
            other => other.clone(),
        })
    }
}

/// Options that shape compilation of IR (limits).
#[derive(Clone, Debug)]
pub struct IrOptions {
    /// When compilation gives up (the front end's time counts too).
    pub deadline: Deadline,
    pub max_states: usize,
    /// The parser steps one mask may take (see [`crate::tokensets::work`]).
    pub max_mask_steps: u64,
}

impl IrOptions {
    /// `max_compile_ms` from now (0: no limit) and `max_states`.
    pub fn new(max_compile_ms: u64, max_states: usize) -> IrOptions {
        IrOptions {
            deadline: Deadline::after_ms(max_compile_ms),
            max_states,
            max_mask_steps: limits::DEFAULT_MAX_MASK_STEPS,
        }
    }
}

/// The grammar with every token id that no token can match dropped: ids
/// past the vocabulary (llama.cpp accepts `<[id]>` for any 32-bit id) and
/// end-of-sequence ids, which end the output instead of being matched (as
/// in llama.cpp, where an end-of-generation token is never fed to the
/// grammar). A set left empty matches nothing, so the analysis sees a
/// branch that can never be taken for what it is.
fn only_matchable_tokens<'g>(g: &'g ir::Grammar, vocab: &Vocab) -> Cow<'g, ir::Grammar> {
    let matchable = |t: u32| (t as usize) < vocab.len() && !vocab.is_eos(t);
    fn has_unmatchable(e: &Expr, matchable: &dyn Fn(u32) -> bool) -> bool {
        if let Expr::Token(ts) = e {
            return ts.ids.iter().any(|&t| !matchable(t));
        }
        let mut found = false;
        e.for_each_child(|c| found = found || has_unmatchable(c, matchable));
        found
    }
    fn clip(e: &Expr, matchable: &dyn Fn(u32) -> bool) -> Expr {
        let all = |v: &[Expr]| v.iter().map(|c| clip(c, matchable)).collect();
        match e {
            Expr::Token(ts) => {
                let ids: Vec<u32> = ts.ids.iter().copied().filter(|&t| matchable(t)).collect();
                if ids.is_empty() && !ts.negated {
                    Expr::Nothing
                } else {
                    Expr::Token(TokenSet {
                        ids,
                        negated: ts.negated,
                    })
                }
            }
            Expr::Seq(v) => Expr::Seq(all(v)),
            Expr::Alt(v) => Expr::Alt(all(v)),
            Expr::And(v) => Expr::And(all(v)),
            Expr::Repeat { expr, min, max } => Expr::Repeat {
                expr: Box::new(clip(expr, matchable)),
                min: *min,
                max: *max,
            },
            Expr::Not(x) => Expr::Not(Box::new(clip(x, matchable))),
            other => other.clone(),
        }
    }
    if !g.rules.iter().any(|r| has_unmatchable(&r.body, &matchable)) {
        return Cow::Borrowed(g);
    }
    let mut out = g.clone();
    for rule in &mut out.rules {
        if has_unmatchable(&rule.body, &matchable) {
            rule.body = clip(&rule.body, &matchable);
        }
    }
    Cow::Owned(out)
}

/// Compiles IR for a vocabulary, its lexemes from `lexemes`.
pub fn compile_ir(
    lexemes: &dyn LexemeSource,
    vocab: &Vocab,
    grammar: &ir::Grammar,
    options: &IrOptions,
) -> Result<Automaton> {
    let budget = Budget {
        deadline: SampledDeadline::new(options.deadline),
        max_states: options.max_states,
    };
    if grammar.start as usize >= grammar.rules.len() {
        return Err(Error::invalid("the start rule does not exist"));
    }
    // Clipping tokens keeps every reference; solving right-linear groups
    // changes the references of the rules it solves, so they are
    // collected again only then.
    let refs = analyze::rule_refs(grammar)?;
    let grammar = &*only_matchable_tokens(grammar, vocab);
    let solved = right_linear::solve(grammar, &refs);
    let refs = match &solved {
        Cow::Borrowed(_) => refs,
        Cow::Owned(g) => analyze::rule_refs(g)?,
    };
    let grammar: &ir::Grammar = &solved;
    let analysis = analyze::analyze_with_refs(grammar, refs)?;
    if !analysis.productive[grammar.start as usize] {
        return Err(Error::invalid(format!(
            "the grammar matches no string at all: rule '{}' can never be completed",
            grammar.rules[grammar.start as usize].name
        )));
    }
    let mut low = Lowering {
        g: grammar,
        analysis,
        compiled_of: vec![None; grammar.rules.len()],
        pending: vec![(
            "<start>".to_string(),
            Source::Start(Expr::Ref(grammar.start)),
        )],
        anon: FastMap::default(),
        merge_runs: false,
    };
    let mut token_sets = Vec::new();
    let mut parser_states: Vec<ParserState> = Vec::new();
    let mut rtn_scratch = RtnScratch::default();
    let mut edges = Edges::default();
    let mut kinds: Vec<(String, RuleKind)> = Vec::new();
    let limits = DfaLimits {
        deadline: options.deadline,
        max_states: options.max_states,
        ..DfaLimits::default()
    };
    let productive = low.analysis.productive.clone();
    // Parser-rule automata and the analyses of the whole automaton count
    // their work: one rule can be most of a compilation.
    let mut meter = options.deadline.meter();
    let mut i = 0;
    while i < low.pending.len() {
        budget.check(parser_states.len())?;
        let name = low.pending[i].0.clone();
        let rule = i as u32;
        let lexeme_expr = match &low.pending[i].1 {
            Source::AnonLexeme(e) => Some(Cow::Borrowed(e)),
            Source::Rule(r) if low.analysis.class[*r as usize] == RuleClass::Lexeme => {
                let body = simplified(&grammar.rules[*r as usize].body, &low.analysis.productive);
                Some(match body {
                    Cow::Borrowed(body) => expanded(body, grammar),
                    Cow::Owned(body) => Cow::Owned(expand(&body, grammar)),
                })
            }
            _ => None,
        };
        let counted = match &low.pending[i].1 {
            Source::Rule(r) => match grammar.rules[*r as usize].lexeme {
                ir::LexemeHint::Counted { min, max } => {
                    Some((min, (max != u32::MAX).then_some(max)))
                }
                _ => None,
            },
            _ => None,
        };
        let dfa = match (lexeme_expr.as_deref(), counted) {
            (Some(e @ Expr::And(parts)), Some((min, max)))
                if parts.len() == 2 && parts[1] == ir::quoted_length(min, max) =>
            {
                match lexemes
                    .counted_lexeme(e, &parts[0], min, max, &limits)
                    .map_err(|err| err.context(format!("rule '{name}'")))?
                {
                    Some(d) => Some(d),
                    None => lexemes
                        .lexeme(e, &limits)
                        .map_err(|err| err.context(format!("rule '{name}'")))?,
                }
            }
            (Some(e), _) => lexemes
                .lexeme(e, &limits)
                .map_err(|err| err.context(format!("rule '{name}'")))?,
            (None, _) => None,
        };
        if let Some(dfa) = dfa {
            kinds.push((name, RuleKind::Lexeme { dfa, base: 0 }));
        } else {
            // A parser rule, or a lexeme whose DFA would be too large
            // (`[ab]* "a" [ab]{20}` has 2^21 states): the parser then runs
            // its parts, which amounts to simulating the NFA, one item per
            // live position (see `Lowering::lower_parts`).
            let too_large = lexeme_expr.is_some();
            let lowered = match &low.pending[i].1 {
                Source::Start(e) => {
                    let e = e.clone();
                    low.merge_runs = false;
                    low.lower(&e, 0)?
                }
                Source::Rule(r) => {
                    let body = simplified(&grammar.rules[*r as usize].body, &productive);
                    low.merge_runs =
                        !too_large && grammar.rules[*r as usize].lexeme == ir::LexemeHint::Auto;
                    low.lower_parts(&body, too_large)?
                }
                Source::AnonLexeme(e) => {
                    let e = e.clone();
                    low.merge_runs = false;
                    low.lower_parts(&e, true)?
                }
            };
            let base = parser_states.len() as u32;
            RtnBuilder::new(
                &mut token_sets,
                &mut rtn_scratch,
                parser_states.len(),
                options.max_states,
                &mut meter,
            )
            .build(&lowered, rule, base, &mut edges, &mut parser_states)
            .map_err(|err| err.context(format!("rule '{name}'")))?;
            kinds.push((name, RuleKind::Parser { start: base }));
        }
        i += 1;
    }
    // Lexeme state blocks after the parser-rule states.
    let mut next = parser_states.len() as u64;
    let mut stored = parser_states.len();
    let mut lexeme_blocks = Vec::new();
    for (name_kind, rule) in kinds.iter_mut().zip(0u32..) {
        if let RuleKind::Lexeme { dfa, base } = &mut name_kind.1 {
            *base = next as u32;
            lexeme_blocks.push((next as u32, rule));
            // A counted lexeme numbers every (count, state) pair but
            // stores only its table.
            next += dfa.num_lexeme_states() as u64;
            stored += dfa.num_states();
        }
    }
    if next >= u32::MAX as u64 / 2 {
        return Err(Error::limit("too many automaton states"));
    }
    budget.check_now(stored)?;
    trim(&kinds, &mut parser_states, &mut edges, &mut meter)?;
    let nullable = compute_nullable(&kinds, &parser_states, &edges, &mut meter)?;
    let follow = compute_follow(&kinds, &parser_states, &edges, &nullable, &mut meter)?;
    let left_recursive =
        compute_left_recursive(&kinds, &parser_states, &edges, &nullable, &mut meter)?;
    let mut call_sites = vec![0u32; kinds.len()];
    for s in &parser_states {
        for &(callee, _) in edges.calls(s) {
            call_sites[callee as usize] += 1;
        }
    }
    let rules: Vec<CompiledRule> = kinds
        .into_iter()
        .enumerate()
        .map(|(i, (name, kind))| CompiledRule {
            name,
            kind,
            nullable: nullable[i],
            follow: follow[i],
            left_recursive: left_recursive[i],
            call_sites: call_sites[i],
        })
        .collect();
    let has_token_edges = parser_states.iter().any(|s| !edges.tokens(s).is_empty());
    Ok(Automaton {
        rules,
        parser_states,
        edges,
        lexeme_blocks,
        token_sets,
        start_state: 0,
        has_token_edges,
        max_mask_steps: options.max_mask_steps,
        dropped: Vec::new(),
    })
}

/// Drops the edges into states that can never finish their rule (a lexeme
/// whose intersection is empty, a rule that only calls such lexemes), so
/// that every reachable item can be completed.
fn trim(
    kinds: &[(String, RuleKind)],
    parser_states: &mut [ParserState],
    edges: &mut Edges,
    meter: &mut Meter,
) -> Result<()> {
    // Atoms: states `0..m` ("can reach the end of its rule"), then rules
    // ("matches some string").
    let m = parser_states.len();
    let mut h = edge_clauses(m + kinds.len(), kinds, edges);
    for (r, (_, k)) in kinds.iter().enumerate() {
        match k {
            RuleKind::Lexeme { dfa, .. } if dfa.start != lexeme::DEAD => h.fact((m + r) as u32),
            RuleKind::Lexeme { .. } => {}
            RuleKind::Parser { start } => h.clause((m + r) as u32, &[*start]),
        }
    }
    for (i, s) in parser_states.iter().enumerate() {
        if i.is_multiple_of(STATES_PER_STEP) {
            meter.step(states_ahead_work(parser_states, i))?;
        }
        let i = i as u32;
        if s.is_final {
            h.fact(i);
        }
        for &(_, _, t) in edges.bytes(s) {
            h.clause(i, &[t]);
        }
        for &(_, t) in edges.tokens(s) {
            h.clause(i, &[t]);
        }
        for &(r, t) in edges.calls(s) {
            h.clause(i, &[m as u32 + r, t]);
        }
    }
    let holds = h.solve(meter)?;
    let (state_ok, rule_ok) = holds.split_at(m);
    if !rule_ok[0] {
        return Err(Error::invalid(
            "the grammar matches no string at all (every way through it needs an impossible part)",
        ));
    }
    edges.retain(
        parser_states,
        |t| state_ok[t as usize],
        |r| rule_ok[r as usize],
    );
    for s in parser_states.iter_mut() {
        s.direct_first = ByteSet::EMPTY;
        for &(lo, hi, _) in edges.bytes(s) {
            s.direct_first.insert_range(lo, hi);
        }
    }
    Ok(())
}

/// Passes over every state count their work with the deadline's [`Meter`]
/// once per this many states.
const STATES_PER_STEP: usize = 256;

/// The work of a pass over the [`STATES_PER_STEP`] states from `from`:
/// each state and each of its edges.
fn states_ahead_work(parser_states: &[ParserState], from: usize) -> usize {
    let chunk = &parser_states[from..(from + STATES_PER_STEP).min(parser_states.len())];
    chunk.len() + Edges::count_of(chunk)
}

/// Horn clauses with room for one per rule and edge.
fn edge_clauses(atoms: usize, kinds: &[(String, RuleKind)], edges: &Edges) -> horn::HornClauses {
    let (bytes, calls, tokens) = edges.counts();
    let clauses = kinds.len() + bytes + calls + tokens;
    horn::HornClauses::with_capacity(atoms, clauses, clauses + calls)
}

/// Which compiled rules match the empty string.
fn compute_nullable(
    kinds: &[(String, RuleKind)],
    parser_states: &[ParserState],
    edges: &Edges,
    meter: &mut Meter,
) -> Result<Vec<bool>> {
    let lexeme_nullable: Vec<bool> = kinds
        .iter()
        .map(|(_, k)| match k {
            RuleKind::Lexeme { dfa, .. } => {
                dfa.start != lexeme::DEAD && dfa.is_final_state(dfa.start)
            }
            RuleKind::Parser { .. } => false,
        })
        .collect();
    // Atoms: states `0..m` ("completes its rule empty": final, or a
    // nullable call leads to one that does), then rules.
    let m = parser_states.len();
    let mut h = edge_clauses(m + kinds.len(), kinds, edges);
    for (r, (_, k)) in kinds.iter().enumerate() {
        match k {
            RuleKind::Lexeme { .. } if lexeme_nullable[r] => h.fact((m + r) as u32),
            RuleKind::Lexeme { .. } => {}
            RuleKind::Parser { start } => h.clause((m + r) as u32, &[*start]),
        }
    }
    for (i, s) in parser_states.iter().enumerate() {
        if i.is_multiple_of(STATES_PER_STEP) {
            meter.step(states_ahead_work(parser_states, i))?;
        }
        if s.is_final {
            h.fact(i as u32);
        }
        for &(r, t) in edges.calls(s) {
            h.clause(i as u32, &[m as u32 + r, t]);
        }
    }
    Ok(h.solve(meter)?[m..].to_vec())
}

/// Which compiled rules can call themselves before reading a byte: the
/// rules on a cycle of the "calls at its start" graph, whose edges go from
/// a parser rule to the rules called by the states its start reaches over
/// nullable calls.
fn compute_left_recursive(
    kinds: &[(String, RuleKind)],
    parser_states: &[ParserState],
    edges: &Edges,
    nullable: &[bool],
    meter: &mut Meter,
) -> Result<Vec<bool>> {
    let mut calls_at_start: Vec<Vec<crate::ir::RuleId>> = vec![Vec::new(); kinds.len()];
    let mut seen = vec![false; parser_states.len()];
    let mut stack = Vec::new();
    for (r, (_, kind)) in kinds.iter().enumerate() {
        let RuleKind::Parser { start } = kind else {
            continue;
        };
        let mut visited = Vec::new();
        stack.push(*start);
        while let Some(state) = stack.pop() {
            if std::mem::replace(&mut seen[state as usize], true) {
                continue;
            }
            visited.push(state);
            meter.step(1 + parser_states[state as usize].num_calls())?;
            for &(callee, next) in edges.calls(&parser_states[state as usize]) {
                calls_at_start[r].push(callee);
                if nullable[callee as usize] {
                    stack.push(next);
                }
            }
        }
        for state in visited {
            seen[state as usize] = false;
        }
        calls_at_start[r].sort_unstable();
        calls_at_start[r].dedup();
    }
    let mut out = vec![false; kinds.len()];
    for component in crate::ir::graph::tarjan(&calls_at_start).iter() {
        if component.len() > 1 {
            for &r in component {
                out[r as usize] = true;
            }
        } else {
            let r = component[0];
            out[r as usize] = calls_at_start[r as usize].binary_search(&r).is_ok();
        }
    }
    Ok(out)
}

/// Per rule: the bytes a lexeme can start with (parser rules: none yet,
/// FIRST computes them).
fn lexeme_first_bytes(kinds: &[(String, RuleKind)]) -> Vec<ByteSet> {
    kinds
        .iter()
        .map(|(_, k)| match k {
            RuleKind::Lexeme { dfa, .. } if dfa.start != lexeme::DEAD => {
                dfa.first_bytes_of(dfa.start)
            }
            _ => ByteSet::EMPTY,
        })
        .collect()
}

/// For each compiled rule, the bytes that can follow one of its matches.
fn compute_follow(
    kinds: &[(String, RuleKind)],
    parser_states: &[ParserState],
    edges: &Edges,
    nullable: &[bool],
    meter: &mut Meter,
) -> Result<Vec<ByteSet>> {
    let n = kinds.len();
    let m = parser_states.len();
    // FIRST of each rule and each parser state (bytes that can be read
    // first), and whether the state can finish its rule without reading:
    // a fixpoint over a worklist of nodes (states `0..m`, rules `m..`), a
    // node computed again when one it depends on changed.
    let mut rule_first = lexeme_first_bytes(kinds);
    let mut state_first: Vec<ByteSet> = parser_states.iter().map(|s| s.direct_first).collect();
    let mut state_empty: Vec<bool> = parser_states.iter().map(|s| s.is_final).collect();
    // Dependents: a rule's callers; a state's predecessors over a nullable
    // call; a rule's start state's rule.
    let mut links: Vec<(u32, u32)> = Vec::new();
    for (i, s) in parser_states.iter().enumerate() {
        for &(r, t) in edges.calls(s) {
            links.push(((m + r as usize) as u32, i as u32));
            if nullable[r as usize] {
                links.push((t, i as u32));
            }
        }
    }
    for (r, (_, k)) in kinds.iter().enumerate() {
        if let RuleKind::Parser { start } = k {
            links.push((*start, (m + r) as u32));
        }
    }
    let dependents = Adjacency::new(m + n, links.iter().copied());
    // Backwards first: states are numbered from their rule's start, so
    // values flowing back from final states settle quickly.
    let mut work: Vec<u32> = (0..(m + n) as u32).collect();
    let mut queued = vec![true; m + n];
    // Work not yet counted by the meter (counted per state, it made this
    // loop 4% slower).
    let mut uncounted = 0;
    while let Some(x) = work.pop() {
        let x = x as usize;
        queued[x] = false;
        let changed = if x < m {
            uncounted += 1 + parser_states[x].num_calls();
            if uncounted >= limits::WORK_PER_CHECK {
                meter.step(std::mem::take(&mut uncounted))?;
            }
            let mut changed = false;
            for &(r, t) in edges.calls(&parser_states[x]) {
                let f = rule_first[r as usize];
                changed |= state_first[x].union_with(f);
                if nullable[r as usize] {
                    let ft = state_first[t as usize];
                    changed |= state_first[x].union_with(ft);
                    if state_empty[t as usize] && !state_empty[x] {
                        state_empty[x] = true;
                        changed = true;
                    }
                }
            }
            changed
        } else {
            match &kinds[x - m].1 {
                RuleKind::Parser { start } => {
                    let f = state_first[*start as usize];
                    rule_first[x - m].union_with(f)
                }
                RuleKind::Lexeme { .. } => false,
            }
        };
        if changed {
            for &d in dependents.of(x) {
                if !queued[d as usize] {
                    queued[d as usize] = true;
                    work.push(d);
                }
            }
        }
    }
    // FOLLOW: what comes after each call, and what follows the calling
    // rule where nothing has to (propagated from rule to rule).
    let mut follow = vec![ByteSet::EMPTY; n];
    links.clear();
    for s in parser_states {
        for &(r, t) in edges.calls(s) {
            let ft = state_first[t as usize];
            follow[r as usize].union_with(ft);
            if state_empty[t as usize] && s.rule != r {
                links.push((s.rule, r));
            }
        }
    }
    let inherits = Adjacency::new(n, links.iter().copied());
    let mut work: Vec<u32> = (0..n as u32).collect();
    let mut queued = vec![true; n];
    while let Some(p) = work.pop() {
        queued[p as usize] = false;
        meter.step(1 + inherits.of(p as usize).len())?;
        let fp = follow[p as usize];
        for &r in inherits.of(p as usize) {
            if follow[r as usize].union_with(fp) && !queued[r as usize] {
                queued[r as usize] = true;
                work.push(r);
            }
        }
    }
    Ok(follow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{compile, CompileOptions, Kind};

    /// FIRST and FOLLOW by passes over everything until nothing changes
    /// (the textbook fixpoint the worklist version must agree with).
    fn follow_by_passes(
        kinds: &[(String, RuleKind)],
        parser_states: &[ParserState],
        edges: &Edges,
        nullable: &[bool],
    ) -> Vec<ByteSet> {
        let mut rule_first = lexeme_first_bytes(kinds);
        let mut first: Vec<ByteSet> = parser_states.iter().map(|s| s.direct_first).collect();
        let mut empty: Vec<bool> = parser_states.iter().map(|s| s.is_final).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..parser_states.len() {
                for &(r, t) in edges.calls(&parser_states[i]) {
                    let f = rule_first[r as usize];
                    changed |= first[i].union_with(f);
                    if nullable[r as usize] {
                        let ft = first[t as usize];
                        changed |= first[i].union_with(ft);
                        if empty[t as usize] && !empty[i] {
                            empty[i] = true;
                            changed = true;
                        }
                    }
                }
            }
            for (r, (_, k)) in kinds.iter().enumerate() {
                if let RuleKind::Parser { start } = k {
                    let f = first[*start as usize];
                    changed |= rule_first[r].union_with(f);
                }
            }
        }
        let mut follow = vec![ByteSet::EMPTY; kinds.len()];
        changed = true;
        while changed {
            changed = false;
            for s in parser_states {
                for &(r, t) in edges.calls(s) {
                    let ft = first[t as usize];
                    changed |= follow[r as usize].union_with(ft);
                    if empty[t as usize] {
                        let fp = follow[s.rule as usize];
                        changed |= follow[r as usize].union_with(fp);
                    }
                }
            }
        }
        follow
    }

    #[test]
    fn follow_sets_agree_with_the_fixpoint_by_passes() {
        let engine = crate::tokensets::Engine::new(
            Vocab::new(
                (0..=255u8).map(|b| vec![b]).collect(),
                vec![0; 256],
                Vec::new(),
            )
            .unwrap(),
        );
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/llamacpp-grammar/gbnf/"
        );
        let mut sources: Vec<(Kind, String)> =
            ["json.gbnf", "c.gbnf", "arithmetic.gbnf", "list.gbnf"]
                .iter()
                .map(|f| {
                    (
                        Kind::Gbnf,
                        std::fs::read_to_string(format!("{dir}{f}")).unwrap(),
                    )
                })
                .collect();
        sources.push((
            Kind::JsonSchema,
            r##"{"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#"}},
                "b":{"anyOf":[{"type":"string"},{"type":"object","additionalProperties":{"type":"integer"}}]}},
                "required":["b"]}"##
                .to_string(),
        ));
        for (kind, text) in sources {
            let g = compile(
                &engine,
                text.as_bytes(),
                &CompileOptions {
                    kind,
                    ..Default::default()
                },
            )
            .unwrap();
            let a = g.automaton();
            let kinds: Vec<(String, RuleKind)> = a
                .rules
                .iter()
                .map(|r| {
                    let k = match &r.kind {
                        RuleKind::Parser { start } => RuleKind::Parser { start: *start },
                        RuleKind::Lexeme { dfa, base } => RuleKind::Lexeme {
                            dfa: dfa.clone(),
                            base: *base,
                        },
                    };
                    (r.name.clone(), k)
                })
                .collect();
            let nullable: Vec<bool> = a.rules.iter().map(|r| r.nullable).collect();
            assert_eq!(
                compute_follow(
                    &kinds,
                    &a.parser_states,
                    &a.edges,
                    &nullable,
                    &mut Deadline::none().meter()
                )
                .unwrap(),
                follow_by_passes(&kinds, &a.parser_states, &a.edges, &nullable)
            );
        }
    }
}
