//! Whole-grammar analysis on the IR: which rules can match anything, which
//! are regular, and how each rule is compiled (lexeme DFA, inlined, or
//! parser rule).

use std::borrow::Cow;

use crate::error::{Error, Result};
pub(crate) use crate::ir::graph::tarjan;
use crate::ir::{Expr, Grammar, LexemeHint, RuleId};

/// Expressions up to this size (after inlining) with no loop are copied
/// into their callers instead of becoming lexemes of their own.
pub const INLINE_MAX_SIZE: usize = 48;
/// Regular rules larger than this (after inlining) stay parser rules.
pub const LEXEME_MAX_SIZE: usize = 50_000;
/// Rules that only choose among literal strings (an enumeration: `"w0" |
/// "w1" | ...`) are lexemes up to this size whatever the hint: their DFA is
/// at most their trie, built in time linear in their size, while as a
/// parser rule every alternative is an item of every mask (100,000 of
/// them made a first mask of seconds).
pub const LITERAL_SET_MAX_SIZE: usize = 8 << 20;
/// Without a hint, regular rules larger than this stay parser rules (their
/// loops still become lexemes). A large rule as one DFA gives every position
/// its own token sets instead of sharing them, and makes a DFA per rule
/// where the parser would reuse the small lexemes every rule shares: on
/// llama.cpp's GBNF for 300 tool schemas (one regular rule per object),
/// 300 costs 55 ms to compile and 100 costs 35 ms, masks alike.
pub const AUTO_LEXEME_MAX_SIZE: usize = 100;

/// How a rule is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleClass {
    /// Copied into every caller.
    Inline,
    /// A DFA of its own, called like a rule.
    Lexeme,
    /// A parser rule (recursive, has token elements, or too large).
    Parser,
}

pub struct Analysis {
    pub productive: Vec<bool>,
    /// Regular and allowed inside a lexeme (no recursion, no token element,
    /// not hinted `Never`, and the same for every rule it refers to).
    pub regular: Vec<bool>,
    pub class: Vec<RuleClass>,
    /// Expanded size of each regular rule (`usize::MAX` for the others).
    pub expanded_size: Vec<usize>,
    /// The regular rule loops (or needs a DFA: intersection, complement).
    pub looping: Vec<bool>,
    /// The regular rule matches the empty string.
    pub nullable: Vec<bool>,
}

impl Analysis {
    /// What a regular part of a parser rule (unexpanded) weighs in a run
    /// that [`RunSize::fits`] decides on, without expanding it.
    pub fn run_part(&self, part: &Expr, g: &Grammar) -> RunSize {
        RunSize {
            total: expanded_size(part, &self.expanded_size),
            lexemes: self.lexeme_refs_size(part, g),
        }
    }

    /// Whether an expression over regular rules (unexpanded) is small
    /// enough to be one lexeme (see [`LEXEME_MAX_SIZE`]): not when it holds
    /// a date-time, which stays a lexeme of its own.
    pub fn fits_lexeme(&self, e: &Expr) -> bool {
        expanded_size(e, &self.expanded_size) <= LEXEME_MAX_SIZE
    }

    /// Whether an expression over regular rules (unexpanded) loops.
    pub fn loops(&self, e: &Expr) -> bool {
        has_loop(e, &self.looping)
    }

    /// Expanded size of the references to lexeme rules in `e`.
    fn lexeme_refs_size(&self, e: &Expr, g: &Grammar) -> usize {
        match e {
            Expr::Ref(r) => match self.class[*r as usize] {
                RuleClass::Lexeme => self.expanded_size[*r as usize],
                // Inline bodies are small (at most `INLINE_MAX_SIZE`).
                RuleClass::Inline => self.lexeme_refs_size(&g.rules[*r as usize].body, g),
                RuleClass::Parser => 0,
            },
            _ => {
                let mut n = 0usize;
                e.for_each_child(|c| n = n.saturating_add(self.lexeme_refs_size(c, g)));
                n
            }
        }
    }
}

/// The size of a run of regular parts that may become one lexeme.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunSize {
    /// Expanded size of the whole run.
    total: usize,
    /// The part of `total` that references to lexeme rules bring in.
    lexemes: usize,
}

impl RunSize {
    pub fn plus(self, other: RunSize) -> RunSize {
        RunSize {
            total: self.total.saturating_add(other.total),
            lexemes: self.lexemes.saturating_add(other.lexemes),
        }
    }

    /// The run may be one lexeme: what it adds to the lexemes it contains
    /// anyway is within the automatic lexeme size, so that `space until-N?`
    /// merges (the `until` rule is a lexeme whatever its size) but a whole
    /// tool's arguments, which an automatic lexeme would not take either,
    /// do not.
    pub fn fits(self) -> bool {
        self.total <= LEXEME_MAX_SIZE
            && self.total.saturating_sub(self.lexemes) <= AUTO_LEXEME_MAX_SIZE
    }
}

/// A repetition that makes a loop worth a lexeme of its own.
pub fn is_loopish(min: u32, max: Option<u32>) -> bool {
    match max {
        None => true,
        Some(max) => max > min + 1,
    }
}

/// Each rule's references, sorted and deduplicated, checked to name rules
/// of the grammar (an error names the first rule that does not).
pub fn rule_refs(g: &Grammar) -> Result<Vec<Vec<RuleId>>> {
    let n = g.rules.len();
    let refs: Vec<Vec<RuleId>> = g.rules.iter().map(|r| collect_refs(&r.body)).collect();
    for (i, rs) in refs.iter().enumerate() {
        if let Some(&r) = rs.last().filter(|&&r| r as usize >= n) {
            return Err(
                Error::invalid(format!("reference to rule {r} out of range"))
                    .context(format!("rule {} ({})", g.rules[i].name, i)),
            );
        }
    }
    Ok(refs)
}

pub fn analyze(g: &Grammar) -> Result<Analysis> {
    analyze_with_refs(g, rule_refs(g)?)
}

/// [`analyze`], given the grammar's [`rule_refs`] (compiling collects them
/// once for several passes: each collection walks every body).
pub fn analyze_with_refs(g: &Grammar, refs: Vec<Vec<RuleId>>) -> Result<Analysis> {
    let n = g.rules.len();
    // Productive: the rule matches at least one string. Components of
    // the reference graph are decided callees first, each rule looked at
    // once unless it is recursive: within a component a rule is looked at
    // again when a rule of it that it refers to became productive. (From
    // the start rule down, a rule was looked at again for each callee
    // that became productive: quadratic in a large alternation.)
    let callers = super::adjacency::Adjacency::new(
        n,
        refs.iter()
            .enumerate()
            .flat_map(|(r, rs)| rs.iter().map(move |&c| (c, r as u32))),
    );
    let sccs = tarjan(&refs);
    let mut component = vec![0u32; n];
    for (i, comp) in sccs.iter().enumerate() {
        for &r in comp {
            component[r as usize] = i as u32;
        }
    }
    let mut productive = vec![false; n];
    for (i, comp) in sccs.iter().enumerate() {
        let mut work: Vec<u32> = comp.to_vec();
        while let Some(r) = work.pop() {
            let r = r as usize;
            if !productive[r] && is_productive(&g.rules[r].body, &productive) {
                productive[r] = true;
                work.extend(
                    callers
                        .of(r)
                        .iter()
                        .filter(|&&c| component[c as usize] == i as u32 && !productive[c as usize]),
                );
            }
        }
    }
    // Regular: no recursion through the rule and no token elements,
    // computed over strongly connected components in reverse topological
    // order (Tarjan emits callees first).
    let mut regular = vec![false; n];
    for comp in sccs.iter() {
        let cyclic = comp.len() > 1 || refs[comp[0] as usize].contains(&comp[0]);
        for &r in comp {
            let r = r as usize;
            regular[r] = !cyclic
                && g.rules[r].lexeme != LexemeHint::Never
                && !has_token(&g.rules[r].body)
                && refs[r].iter().all(|&c| regular[c as usize]);
        }
    }
    // Expanded sizes and loops of regular rules (callees first).
    let mut exp_size = vec![usize::MAX; n];
    let mut looping = vec![false; n];
    let mut boolean = vec![false; n];
    let mut nullable = vec![false; n];
    let mut literal_set = vec![false; n];
    for comp in sccs.iter() {
        for &r in comp {
            let r = r as usize;
            if regular[r] {
                literal_set[r] = is_literal_set(&g.rules[r].body, &literal_set);
                exp_size[r] = expanded_size(&g.rules[r].body, &exp_size);
                looping[r] = has_loop(&g.rules[r].body, &looping);
                boolean[r] = has_boolean(&g.rules[r].body, &boolean);
                nullable[r] = g.rules[r].body.nullable_given(&nullable);
            }
        }
    }
    let class = (0..n)
        .map(|r| {
            let hint = g.rules[r].lexeme;
            // Intersection and complement only exist on DFAs: such rules
            // are lexemes whatever their size.
            let big_literal_set = literal_set[r]
                && exp_size[r] > INLINE_MAX_SIZE
                && exp_size[r] <= LITERAL_SET_MAX_SIZE
                && hint != LexemeHint::Never;
            let counted = matches!(hint, LexemeHint::Counted { .. }) && regular[r];
            let rfc3339 = matches!(g.rules[r].body, Expr::Rfc3339(_));
            if (boolean[r] && exp_size[r] <= LEXEME_MAX_SIZE)
                || big_literal_set
                || counted
                || rfc3339
            {
                RuleClass::Lexeme
            } else if !regular[r]
                || exp_size[r] > LEXEME_MAX_SIZE
                || (hint == LexemeHint::Auto && exp_size[r] > AUTO_LEXEME_MAX_SIZE)
            {
                RuleClass::Parser
            } else if hint == LexemeHint::Inline && exp_size[r] <= INLINE_MAX_SIZE {
                RuleClass::Inline
            } else if hint == LexemeHint::Always || looping[r] || exp_size[r] > INLINE_MAX_SIZE {
                RuleClass::Lexeme
            } else {
                RuleClass::Inline
            }
        })
        .collect();
    Ok(Analysis {
        productive,
        regular,
        class,
        expanded_size: exp_size,
        looping,
        nullable,
    })
}

fn is_productive(e: &Expr, productive: &[bool]) -> bool {
    match e {
        Expr::Empty | Expr::Literal(_) | Expr::Token(_) => true,
        Expr::Nothing => false,
        Expr::Class(c) => !c.is_empty(),
        Expr::Seq(v) => v.iter().all(|x| is_productive(x, productive)),
        Expr::Alt(v) => v.iter().any(|x| is_productive(x, productive)),
        Expr::Repeat {
            max: Some(max),
            min,
            ..
        } if max < min => false,
        Expr::Repeat { expr, min, .. } => *min == 0 || is_productive(expr, productive),
        Expr::Ref(r) => productive[*r as usize],
        // Decided exactly once the lexeme DFA is built (empty ones are
        // trimmed then).
        Expr::And(_)
        | Expr::Not(_)
        | Expr::JsonStrings(_)
        | Expr::JsonQuoted(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_)
        | Expr::Rfc3339(_) => true,
    }
}

/// `e` with unproductive parts removed (`Nothing` only remains when the
/// whole expression matches nothing).
pub fn simplify(e: &Expr, productive: &[bool]) -> Expr {
    simplified(e, productive).into_owned()
}

/// [`simplify`], borrowing `e` when nothing changes (most rule bodies of a
/// grammar whose rules are all productive: no copy of them is made).
pub fn simplified<'e>(e: &'e Expr, productive: &[bool]) -> Cow<'e, Expr> {
    // The simplified children, or None when every one is unchanged (no
    // vector is made until one changes).
    let children = |v: &'e [Expr]| -> Option<Vec<Expr>> {
        let mut out: Option<Vec<Expr>> = None;
        for (i, x) in v.iter().enumerate() {
            match (simplified(x, productive), &mut out) {
                (Cow::Borrowed(_), None) => {}
                (Cow::Borrowed(x), Some(out)) => out.push(x.clone()),
                (Cow::Owned(x), Some(out)) => out.push(x),
                (Cow::Owned(x), None) => {
                    let mut o = Vec::with_capacity(v.len());
                    o.extend_from_slice(&v[..i]);
                    o.push(x);
                    out = Some(o);
                }
            }
        }
        out
    };
    match e {
        Expr::Class(c) if c.is_empty() => Cow::Owned(Expr::Nothing),
        Expr::Ref(r) if !productive[*r as usize] => Cow::Owned(Expr::Nothing),
        Expr::Seq(v) => {
            let parts = children(v);
            let view = parts.as_deref().unwrap_or(v);
            if parts.is_none()
                && v.len() > 1
                && !view
                    .iter()
                    .any(|x| matches!(x, Expr::Empty | Expr::Nothing))
            {
                return Cow::Borrowed(e);
            }
            let parts: Vec<Expr> = parts
                .unwrap_or_else(|| v.clone())
                .into_iter()
                .filter(|x| *x != Expr::Empty)
                .collect();
            Cow::Owned(if parts.contains(&Expr::Nothing) {
                Expr::Nothing
            } else {
                Expr::seq(parts)
            })
        }
        Expr::Alt(v) => {
            let parts = children(v);
            let view = parts.as_deref().unwrap_or(v);
            if parts.is_none() && v.len() > 1 && !view.contains(&Expr::Nothing) {
                return Cow::Borrowed(e);
            }
            let alts: Vec<Expr> = parts
                .unwrap_or_else(|| v.clone())
                .into_iter()
                .filter(|x| *x != Expr::Nothing)
                .collect();
            Cow::Owned(Expr::alt(alts))
        }
        Expr::Repeat {
            max: Some(max),
            min,
            ..
        } if max < min => Cow::Owned(Expr::Nothing),
        Expr::Repeat { expr, min, max } => {
            let inner = simplified(expr, productive);
            match &*inner {
                Expr::Nothing | Expr::Empty => Cow::Owned(if *min == 0 || *inner == Expr::Empty {
                    Expr::Empty
                } else {
                    Expr::Nothing
                }),
                _ if *max == Some(0) => Cow::Owned(Expr::Empty),
                _ if *min == 1 && *max == Some(1) => Cow::Owned(inner.into_owned()),
                _ => match inner {
                    Cow::Borrowed(_) => Cow::Borrowed(e),
                    Cow::Owned(x) => Cow::Owned(Expr::repeat(x, *min, *max)),
                },
            }
        }
        Expr::And(v) => match children(v) {
            None if v.len() > 1 => Cow::Borrowed(e),
            parts => Cow::Owned(Expr::and(parts.unwrap_or_else(|| v.clone()))),
        },
        Expr::Not(x) => match simplified(x, productive) {
            Cow::Borrowed(_) => Cow::Borrowed(e),
            Cow::Owned(y) => Cow::Owned(Expr::complement(y)),
        },
        _ => Cow::Borrowed(e),
    }
}

pub(crate) fn collect_refs(e: &Expr) -> Vec<RuleId> {
    let mut out = Vec::new();
    fn go(e: &Expr, out: &mut Vec<RuleId>) {
        if let Expr::Ref(r) = e {
            out.push(*r);
        }
        e.for_each_child(|c| go(c, out));
    }
    go(e, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

/// `e` uses intersection or complement, itself or in a rule it refers to
/// (`boolean` holds the answer for rules already seen).
fn has_boolean(e: &Expr, boolean: &[bool]) -> bool {
    match e {
        // Built as DFAs directly (see `lexeme::json_string`).
        Expr::And(_)
        | Expr::Not(_)
        | Expr::JsonStrings(_)
        | Expr::JsonQuoted(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_)
        | Expr::Rfc3339(_) => true,
        Expr::Ref(r) => boolean[*r as usize],
        _ => {
            let mut found = false;
            e.for_each_child(|c| found = found || has_boolean(c, boolean));
            found
        }
    }
}

pub fn has_token(e: &Expr) -> bool {
    if matches!(e, Expr::Token(_)) {
        return true;
    }
    let mut found = false;
    e.for_each_child(|c| found |= has_token(c));
    found
}

/// `e` is a choice among literal strings: alternatives of literals and of
/// rules that are such choices (`literal_set` holds the answer for rules
/// already seen).
fn is_literal_set(e: &Expr, literal_set: &[bool]) -> bool {
    match e {
        Expr::Literal(_) | Expr::Empty => true,
        Expr::Ref(r) => literal_set[*r as usize],
        Expr::Alt(v) => v.iter().all(|x| is_literal_set(x, literal_set)),
        _ => false,
    }
}

fn expanded_size(e: &Expr, sizes: &[usize]) -> usize {
    match e {
        Expr::Ref(r) => sizes[*r as usize],
        Expr::Repeat { expr, min, max } => {
            // A bounded repetition is copied out by the automaton builders.
            let copies = max.unwrap_or(*min).max(1) as usize;
            expanded_size(expr, sizes)
                .saturating_mul(copies)
                .saturating_add(1)
        }
        Expr::Literal(s) => s.len(),
        Expr::JsonStrings(js) => js.values().iter().map(|v| v.len() + 1).sum::<usize>() + 2,
        Expr::JsonQuoted(e) => expanded_size(e, sizes).saturating_add(2),
        // Built directly as a table: its size is not an expression's.
        Expr::DecimalMultiple(_) | Expr::IntegerRange(_) => 32,
        // Never part of a larger lexeme (a run, the scalars of a schema
        // without `type`): a lexeme of its own, so that its DFA (66,000
        // states) and token sets are built once and shared.
        Expr::Rfc3339(_) => LEXEME_MAX_SIZE + 1,
        _ => {
            let mut n = 1usize;
            e.for_each_child(|c| n = n.saturating_add(expanded_size(c, sizes)));
            n
        }
    }
}

fn has_loop(e: &Expr, looping: &[bool]) -> bool {
    match e {
        Expr::Ref(r) => looping[*r as usize],
        Expr::Repeat { expr, min, max } => is_loopish(*min, *max) || has_loop(expr, looping),
        // Boolean operations are only done on DFAs: always a lexeme.
        Expr::And(_) | Expr::Not(_) => true,
        Expr::JsonStrings(js) => js.negated(),
        Expr::JsonQuoted(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_)
        | Expr::Rfc3339(_) => true,
        _ => {
            let mut found = false;
            e.for_each_child(|c| found |= has_loop(c, looping));
            found
        }
    }
}

/// The rule expanded into one regular expression (every reference replaced
/// by the referenced body). Only valid for regular rules.
pub fn expand(e: &Expr, g: &Grammar) -> Expr {
    expanded(e, g).into_owned()
}

/// [`expand`], borrowing `e` when it refers to no rule: a JSON Schema
/// number bound is a lexeme of some 600 nodes and no reference, which
/// every compile copied once more.
pub fn expanded<'e>(e: &'e Expr, g: &Grammar) -> Cow<'e, Expr> {
    fn refers(e: &Expr) -> bool {
        let mut found = matches!(e, Expr::Ref(_));
        e.for_each_child(|c| found = found || refers(c));
        found
    }
    fn copy(e: &Expr, g: &Grammar) -> Expr {
        match e {
            Expr::Ref(r) => copy(&g.rules[*r as usize].body, g),
            Expr::Seq(v) => Expr::Seq(v.iter().map(|x| copy(x, g)).collect()),
            Expr::Alt(v) => Expr::Alt(v.iter().map(|x| copy(x, g)).collect()),
            Expr::Repeat { expr, min, max } => Expr::repeat(copy(expr, g), *min, *max),
            Expr::And(v) => Expr::And(v.iter().map(|x| copy(x, g)).collect()),
            Expr::Not(x) => Expr::complement(copy(x, g)),
            other => other.clone(),
        }
    }
    if refers(e) {
        Cow::Owned(copy(e, g))
    } else {
        Cow::Borrowed(e)
    }
}

/// All references in `e` are to regular rules and there is no token element.
pub fn is_regular_expr(e: &Expr, regular: &[bool]) -> bool {
    match e {
        Expr::Ref(r) => regular[*r as usize],
        Expr::Token(_) => false,
        _ => {
            let mut ok = true;
            e.for_each_child(|c| ok &= is_regular_expr(c, regular));
            ok
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simplification by rebuilding every node (what `simplified` must
    /// equal, borrowing or not).
    fn simplify_rebuilding(e: &Expr, productive: &[bool]) -> Expr {
        let s = |x: &Expr| simplify_rebuilding(x, productive);
        match e {
            Expr::Class(c) if c.is_empty() => Expr::Nothing,
            Expr::Ref(r) if !productive[*r as usize] => Expr::Nothing,
            Expr::Seq(v) => {
                let parts: Vec<Expr> = v.iter().map(s).filter(|x| *x != Expr::Empty).collect();
                if parts.contains(&Expr::Nothing) {
                    Expr::Nothing
                } else {
                    Expr::seq(parts)
                }
            }
            Expr::Alt(v) => Expr::alt(v.iter().map(s).filter(|x| *x != Expr::Nothing).collect()),
            Expr::Repeat {
                max: Some(max),
                min,
                ..
            } if max < min => Expr::Nothing,
            Expr::Repeat { expr, min, max } => {
                let inner = s(expr);
                match inner {
                    Expr::Nothing | Expr::Empty => {
                        if *min == 0 || inner == Expr::Empty {
                            Expr::Empty
                        } else {
                            Expr::Nothing
                        }
                    }
                    _ if *max == Some(0) => Expr::Empty,
                    _ if *min == 1 && *max == Some(1) => inner,
                    _ => Expr::repeat(inner, *min, *max),
                }
            }
            Expr::And(v) => Expr::and(v.iter().map(s).collect()),
            Expr::Not(x) => Expr::complement(s(x)),
            other => other.clone(),
        }
    }

    #[test]
    fn simplified_equals_rebuilding() {
        use crate::ir::CharClass;
        // Rule 1 is unproductive.
        let productive = [true, false, true];
        let leaves = [
            Expr::Empty,
            Expr::Nothing,
            Expr::literal("ab"),
            Expr::Class(CharClass::empty()),
            Expr::Class(CharClass::single(97)),
            Expr::Ref(0),
            Expr::Ref(1),
        ];
        let mut exprs: Vec<Expr> = leaves.to_vec();
        for a in &leaves {
            for b in &leaves {
                exprs.push(Expr::Seq(vec![a.clone(), b.clone()]));
                exprs.push(Expr::Alt(vec![a.clone(), b.clone()]));
                exprs.push(Expr::Seq(vec![a.clone()]));
                exprs.push(Expr::And(vec![a.clone(), b.clone()]));
                exprs.push(Expr::complement(a.clone()));
                for (min, max) in [
                    (0, None),
                    (1, Some(1)),
                    (2, Some(1)),
                    (0, Some(0)),
                    (1, Some(3)),
                ] {
                    exprs.push(Expr::repeat(
                        Expr::Seq(vec![a.clone(), b.clone()]),
                        min,
                        max,
                    ));
                }
            }
        }
        let nested: Vec<Expr> = exprs
            .iter()
            .map(|x| {
                Expr::Alt(vec![
                    x.clone(),
                    Expr::Seq(vec![Expr::literal("c"), x.clone()]),
                ])
            })
            .collect();
        for e in exprs.iter().chain(&nested) {
            assert_eq!(
                simplified(e, &productive).into_owned(),
                simplify_rebuilding(e, &productive),
                "{e:?}"
            );
        }
    }
    use crate::ir::{CharClass, GrammarBuilder, Rule};

    #[test]
    fn classifies_rules() {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let ws = b.add_rule("ws");
        let kw = b.add_rule("kw");
        let dead = b.add_rule("dead");
        b.set_body(
            root,
            Expr::alt(vec![
                Expr::seq(vec![
                    Expr::literal("("),
                    Expr::Ref(root),
                    Expr::literal(")"),
                ]),
                Expr::seq(vec![Expr::Ref(kw), Expr::Ref(ws)]),
                Expr::Ref(dead),
            ]),
        );
        b.set_body(ws, Expr::star(Expr::literal(" ")));
        b.set_body(kw, Expr::literal("true"));
        b.set_body(dead, Expr::seq(vec![Expr::literal("x"), Expr::Ref(dead)]));
        let g = b.finish(root);
        let a = analyze(&g).unwrap();
        assert_eq!(a.class[root as usize], RuleClass::Parser);
        assert_eq!(a.class[ws as usize], RuleClass::Lexeme);
        assert_eq!(a.class[kw as usize], RuleClass::Inline);
        assert!(!a.productive[dead as usize]);
        assert!(a.productive[root as usize]);
        let _ = Rule::new("", Expr::Empty);
    }

    /// A reference past the last rule is an error naming the rule that
    /// holds it, from `rule_refs` as from `analyze`.
    #[test]
    fn references_out_of_range_are_refused() {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let other = b.add_rule("other");
        b.set_body(root, Expr::Ref(other));
        b.set_body(
            other,
            Expr::alt(vec![Expr::literal("x"), Expr::Ref(other + 5)]),
        );
        let g = b.finish(root);
        for err in [rule_refs(&g).err(), analyze(&g).err()] {
            let err = err.expect("an error");
            let msg = err.to_string();
            assert!(msg.contains("reference to rule 6 out of range"), "{msg}");
            assert!(msg.contains("rule other (1)"), "{msg}");
        }
    }

    /// A rule hinted `Inline` is copied into its callers even when it
    /// loops (which would make an `Auto` rule a lexeme), unless it is not
    /// regular or too large to copy.
    #[test]
    fn inline_hint_copies_loops_but_not_recursion() {
        let mut b = GrammarBuilder::new();
        let root = b.add_rule("root");
        let ws = b.add_rule("ws");
        let sep = b.add_rule("sep");
        let nested = b.add_rule("nested");
        b.set_body(ws, Expr::star(Expr::literal(" ")));
        b.set_body(
            sep,
            Expr::seq(vec![Expr::Ref(ws), Expr::literal(","), Expr::Ref(ws)]),
        );
        b.set_lexeme_hint(sep, LexemeHint::Inline);
        b.set_body(
            nested,
            Expr::alt(vec![
                Expr::literal("x"),
                Expr::seq(vec![
                    Expr::literal("("),
                    Expr::Ref(nested),
                    Expr::literal(")"),
                ]),
            ]),
        );
        b.set_lexeme_hint(nested, LexemeHint::Inline);
        // Too large to copy into every caller: a lexeme, as under `Auto`.
        let large = b.add_rule("large");
        let letters: Vec<Expr> = (0..INLINE_MAX_SIZE)
            .map(|_| Expr::Class(CharClass::from_ranges([('a' as u32, 'z' as u32)])))
            .collect();
        b.set_body(large, Expr::seq(letters));
        b.set_lexeme_hint(large, LexemeHint::Inline);
        b.set_body(
            root,
            Expr::seq(vec![
                Expr::Ref(nested),
                Expr::Ref(sep),
                Expr::Ref(nested),
                Expr::Ref(large),
            ]),
        );
        let g = b.finish(root);
        let a = analyze(&g).unwrap();
        assert_eq!(a.class[sep as usize], RuleClass::Inline);
        assert_eq!(a.class[ws as usize], RuleClass::Lexeme);
        assert_eq!(a.class[nested as usize], RuleClass::Parser);
        assert_eq!(a.class[large as usize], RuleClass::Lexeme);
    }

    /// Productivity through recursion: a cycle that leaves through one of
    /// its rules is productive, one that never leaves is not, nor is
    /// what needs it.
    #[test]
    fn productive_through_cycles() {
        let mut b = GrammarBuilder::new();
        let [root, a, c, d, e, f] = ["root", "a", "c", "d", "e", "f"].map(|n| b.add_rule(n));
        // a -> "x" c | d;  c -> a "y" | "z": productive through c.
        b.set_body(root, Expr::alt(vec![Expr::Ref(a), Expr::Ref(e)]));
        b.set_body(
            a,
            Expr::alt(vec![
                Expr::seq(vec![Expr::literal("x"), Expr::Ref(c)]),
                Expr::Ref(d),
            ]),
        );
        b.set_body(
            c,
            Expr::alt(vec![
                Expr::seq(vec![Expr::Ref(a), Expr::literal("y")]),
                Expr::literal("z"),
            ]),
        );
        // d -> d "q": never leaves; e -> f d; f -> e | "w".
        b.set_body(d, Expr::seq(vec![Expr::Ref(d), Expr::literal("q")]));
        b.set_body(e, Expr::seq(vec![Expr::Ref(f), Expr::Ref(d)]));
        b.set_body(f, Expr::alt(vec![Expr::Ref(e), Expr::literal("w")]));
        let g = b.finish(root);
        let p = analyze(&g).unwrap().productive;
        assert_eq!(
            [root, a, c, d, e, f].map(|r| p[r as usize]),
            [true, true, true, false, false, true]
        );
    }

    /// A JSON Schema's rules, all productive, simplify to themselves, and
    /// those without references expand to themselves, without a copy:
    /// number bounds are lexemes of hundreds of nodes, and a rebuilt one
    /// cost a copy at every compile.
    #[test]
    fn number_bounds_are_simplified_and_expanded_in_place() {
        let schema = r#"{"type": "object", "properties": {
            "a": {"type": "integer", "minimum": 2, "maximum": 31},
            "b": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 1e3},
            "c": {"type": "integer", "minimum": -7}}}"#;
        let g = crate::limits::on_compile_stack(|| {
            crate::json_schema::to_grammar(
                schema,
                &Default::default(),
                &crate::limits::Deadline::none(),
            )
        })
        .unwrap();
        let productive = vec![true; g.rules.len()];
        for rule in &g.rules {
            assert!(matches!(
                simplified(&rule.body, &productive),
                Cow::Borrowed(_)
            ));
            // (Expanding a rule that refers to others is only defined for
            // regular rules, which these are not all.)
            if collect_refs(&rule.body).is_empty() {
                assert!(matches!(expanded(&rule.body, &g), Cow::Borrowed(_)));
            }
        }
    }

    #[test]
    fn zero_and_one_repetitions_are_not_repetitions() {
        let a = Expr::literal("a");
        assert_eq!(Expr::repeat(a.clone(), 0, Some(0)), Expr::Empty);
        assert_eq!(Expr::repeat(a.clone(), 1, Some(1)), a);
        assert!(matches!(
            Expr::repeat(a.clone(), 2, Some(1)),
            Expr::Repeat { .. }
        ));
    }
}
