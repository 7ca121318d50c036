//! Right-linear recursion as regular expressions.
//!
//! Grammars written for llama.cpp spell many regular languages as rules
//! that call each other, or themselves, as the last thing they read:
//! llama.cpp's "text until `<tool_call>`" rules (one rule per character of
//! the stop word, each going on to the next or back to the first), loops
//! written `list ::= item list | item`. A group of mutually recursive rules
//! in which every reference to the group comes last (right-linear) is a
//! regular language. Left as parser rules, such loops run the Earley
//! parser over the token trie at every step (tens of milliseconds per mask
//! on a 128k vocabulary); as lexemes their token sets are computed once.
//!
//! [`solve`] finds those groups (strongly connected components of the
//! reference graph) and solves each as a system of equations
//! `R_i = X_i | C_i1 R_1 | ... | C_ik R_k` by elimination: Arden's lemma
//! turns `R_i = C_ii R_i | rest` into `R_i = C_ii* rest`, and each solved
//! rule is substituted into the others. Every rule of the group gets a body
//! without recursion and the hint to be a lexeme (one DFA whatever its
//! size, as the loop it is). A group whose solution grows past
//! [`MAX_SOLVED_SIZE`] nodes is left as it was.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::analyze::{collect_refs, has_token, tarjan};
use crate::ir::{Expr, Grammar, LexemeHint, RuleId};
use crate::util::hash::FastMap;

/// Largest total size (expression nodes) of one group's solved bodies.
pub const MAX_SOLVED_SIZE: usize = 20_000;

/// One rule's body as alternatives: `prefix` then a group rule (its index
/// in the group) or nothing.
type Terms = Vec<(Vec<Expr>, Option<usize>)>;

/// The grammar with every right-linear recursive group solved (borrowed
/// when there is none), given each rule's references
/// ([`super::analyze::rule_refs`]).
pub fn solve<'g>(g: &'g Grammar, refs: &[Vec<RuleId>]) -> Cow<'g, Grammar> {
    let mut out: Option<Grammar> = None;
    for comp in tarjan(refs).iter() {
        let cyclic = comp.len() > 1 || refs[comp[0] as usize].contains(&comp[0]);
        if !cyclic {
            continue;
        }
        if let Some(bodies) = solve_group(g, comp) {
            let out = out.get_or_insert_with(|| g.clone());
            for (&r, body) in comp.iter().zip(bodies) {
                let rule = &mut out.rules[r as usize];
                rule.body = body;
                // A loop written as rules: one DFA, whatever its size.
                rule.lexeme = LexemeHint::Always;
            }
        }
    }
    match out {
        Some(g) => Cow::Owned(g),
        None => Cow::Borrowed(g),
    }
}

/// The solved bodies of the group's rules, in `comp`'s order, or `None`
/// when the group is not right-linear (or its solution too large).
fn solve_group(g: &Grammar, comp: &[RuleId]) -> Option<Vec<Expr>> {
    let index: FastMap<RuleId, usize> = comp.iter().enumerate().map(|(i, &r)| (r, i)).collect();
    let mut eqs = Vec::with_capacity(comp.len());
    for &r in comp {
        let rule = &g.rules[r as usize];
        if rule.lexeme == LexemeHint::Never || has_token(&rule.body) {
            return None;
        }
        eqs.push(Equation::new(terms(&rule.body, &index)?));
    }
    let k = eqs.len();
    let mut size = eqs.iter().map(Equation::size).sum::<usize>();
    let check = |eq: &Equation, old: usize, size: &mut usize| -> Option<()> {
        *size = *size - old + eq.size();
        (*size <= MAX_SOLVED_SIZE).then_some(())
    };
    // Forward: equation i loses its own rule, then is substituted into the
    // later ones; afterwards equation i refers only to rules after it.
    for i in 0..k {
        let old = eqs[i].size();
        eqs[i].arden(i);
        check(&eqs[i], old, &mut size)?;
        let (done, later) = eqs.split_at_mut(i + 1);
        for eq in later {
            let old = eq.size();
            eq.substitute(i, &done[i]);
            check(eq, old, &mut size)?;
        }
    }
    // Backward: the last is closed; each earlier one takes the closed
    // solutions of the rules after it.
    for i in (0..k).rev() {
        let (head, closed) = eqs.split_at_mut(i + 1);
        for (j, c) in closed.iter().enumerate() {
            let old = head[i].size();
            head[i].substitute(i + 1 + j, c);
            check(&head[i], old, &mut size)?;
        }
    }
    Some(eqs.into_iter().map(Equation::into_expr).collect())
}

/// `R = x | c[0] R_0 | ... | c[k-1] R_{k-1}` (each part an alternation).
/// `c` holds only the rules mentioned (in rule order, as alternatives are
/// built): a group of thousands of rules, each naming a few, would
/// otherwise be a matrix of millions of empty parts.
struct Equation {
    x: Vec<Expr>,
    c: BTreeMap<usize, Vec<Expr>>,
}

impl Equation {
    fn new(terms: Terms) -> Equation {
        let mut eq = Equation {
            x: Vec::new(),
            c: BTreeMap::new(),
        };
        for (prefix, r) in terms {
            let p = Expr::seq(prefix);
            match r {
                Some(j) => eq.c.entry(j).or_default().push(p),
                None => eq.x.push(p),
            }
        }
        eq
    }

    fn size(&self) -> usize {
        self.x
            .iter()
            .chain(self.c.values().flatten())
            .map(Expr::size)
            .sum()
    }

    /// Arden's lemma on rule `i`: `R = C R | rest` is `R = C* rest`.
    fn arden(&mut self, i: usize) {
        let Some(own) = self.c.remove(&i) else {
            return;
        };
        let star = Expr::star(Expr::alt(own));
        let prefix = |e: Expr| Expr::seq(vec![star.clone(), e]);
        if !self.x.is_empty() {
            self.x = vec![prefix(Expr::alt(std::mem::take(&mut self.x)))];
        }
        for c in self.c.values_mut() {
            *c = vec![prefix(Expr::alt(std::mem::take(c)))];
        }
    }

    /// Replaces rule `j` by its equation `by` (which does not mention it).
    fn substitute(&mut self, j: usize, by: &Equation) {
        let Some(via) = self.c.remove(&j) else {
            return;
        };
        let via = Expr::alt(via);
        let then = |e: &[Expr]| Expr::seq(vec![via.clone(), Expr::alt(e.to_vec())]);
        if !by.x.is_empty() {
            self.x.push(then(&by.x));
        }
        for (&m, c) in &by.c {
            self.c.entry(m).or_default().push(then(c));
        }
    }

    /// The body once closed (no rule of the group left).
    fn into_expr(self) -> Expr {
        debug_assert!(self.c.is_empty());
        Expr::alt(self.x)
    }
}

/// `e` as right-linear alternatives, or `None` when a group rule is read
/// anywhere but last, or when the alternatives' prefixes hold more than
/// [`MAX_SOLVED_SIZE`] parts in all (the solution would be refused as too
/// large anyway). The bound is checked at every level: a sequence copies
/// its head into every alternative of its tail, so nesting
/// `("a" ("b" | ... root?))` 4,000 deep made prefixes of cubic total
/// cost (9 s) before the size check after them.
fn terms(e: &Expr, group: &FastMap<RuleId, usize>) -> Option<Terms> {
    let out = terms_unchecked(e, group)?;
    let parts = out.iter().map(|(p, _)| p.len()).sum::<usize>();
    (parts <= MAX_SOLVED_SIZE).then_some(out)
}

fn terms_unchecked(e: &Expr, group: &FastMap<RuleId, usize>) -> Option<Terms> {
    let mentions = |e: &Expr| collect_refs(e).iter().any(|r| group.contains_key(r));
    match e {
        Expr::Ref(r) if group.contains_key(r) => Some(vec![(Vec::new(), Some(group[r]))]),
        // Nested alternations opened up in place: each level collecting
        // the terms of the one inside it copied them again (quadratic).
        Expr::Alt(v) => {
            let mut out = Vec::new();
            let mut stack = vec![v.iter()];
            while let Some(top) = stack.last_mut() {
                match top.next() {
                    None => {
                        stack.pop();
                    }
                    Some(Expr::Alt(inner)) => stack.push(inner.iter()),
                    Some(x) => out.extend(terms(x, group)?),
                }
            }
            Some(out)
        }
        Expr::Seq(v) if !v.is_empty() => {
            let (last, init) = v.split_last().expect("non-empty");
            if init.iter().any(mentions) {
                return None;
            }
            let mut out = terms(last, group)?;
            for (prefix, _) in &mut out {
                let mut p = init.to_vec();
                p.append(prefix);
                *prefix = p;
            }
            Some(out)
        }
        // `x?` at the end: `x | empty`.
        Expr::Repeat {
            expr,
            min: 0,
            max: Some(1),
        } if mentions(expr) => {
            let mut out = terms(expr, group)?;
            out.push((Vec::new(), None));
            Some(out)
        }
        _ if mentions(e) => None,
        _ => Some(vec![(vec![e.clone()], None)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::CharClass;

    fn solve_all(g: &Grammar) -> Cow<'_, Grammar> {
        solve(g, &crate::compile::analyze::rule_refs(g).unwrap())
    }

    fn grammar(rules: Vec<(&str, Expr)>) -> Grammar {
        Grammar {
            rules: rules
                .into_iter()
                .map(|(n, b)| crate::ir::Rule::new(n, b))
                .collect(),
            start: 0,
        }
    }

    fn lit(s: &str) -> Expr {
        Expr::literal(s)
    }

    fn has_recursion(g: &Grammar) -> bool {
        let refs: Vec<Vec<RuleId>> = g.rules.iter().map(|r| collect_refs(&r.body)).collect();
        tarjan(&refs)
            .iter()
            .any(|c| c.len() > 1 || refs[c[0] as usize].contains(&c[0]))
    }

    #[test]
    fn self_and_mutual_tail_recursion_are_solved() {
        // a ::= "x" a | "y" ; b ::= "<" c | [^<] b | ; c ::= "!" | "<" c | [^<!] b
        let not_lt = Expr::Class(CharClass::single('<' as u32).negate());
        let g = grammar(vec![
            (
                "a",
                Expr::alt(vec![Expr::seq(vec![lit("x"), Expr::Ref(0)]), lit("y")]),
            ),
            (
                "b",
                Expr::alt(vec![
                    Expr::seq(vec![lit("<"), Expr::Ref(2)]),
                    Expr::seq(vec![not_lt, Expr::Ref(1)]),
                    Expr::Empty,
                ]),
            ),
            (
                "c",
                Expr::alt(vec![
                    lit("!"),
                    Expr::seq(vec![lit("<"), Expr::Ref(2)]),
                    Expr::seq(vec![
                        Expr::Class(
                            CharClass::from_ranges([
                                ('<' as u32, '<' as u32),
                                ('!' as u32, '!' as u32),
                            ])
                            .negate(),
                        ),
                        Expr::Ref(1),
                    ]),
                ]),
            ),
        ]);
        let solved = solve_all(&g);
        assert!(matches!(solved, Cow::Owned(_)));
        assert!(!has_recursion(&solved), "{:?}", solved.rules);
        let m = |r: usize, s: &str| crate::regex::expr_matches(&solved.rules[r].body, s);
        assert!(m(0, "y") && m(0, "xxxy") && !m(0, "x") && !m(0, "yx"));
        for s in ["", "ab", "a<b", "<<!", "a<!", "<x<<!"] {
            assert!(m(1, s), "b should match {s:?}");
        }
        for s in ["<", "a<", "<<"] {
            assert!(!m(1, s), "b should not match {s:?}");
        }
    }

    #[test]
    fn groups_that_are_not_right_linear_stay() {
        // p ::= "(" p ")" | "" : the reference is not last.
        let g = grammar(vec![(
            "p",
            Expr::alt(vec![
                Expr::seq(vec![lit("("), Expr::Ref(0), lit(")")]),
                Expr::Empty,
            ]),
        )]);
        assert!(matches!(solve_all(&g), Cow::Borrowed(_)));
        // A reference inside a loop is not last either.
        let g = grammar(vec![(
            "q",
            Expr::alt(vec![
                Expr::star(Expr::seq(vec![lit("a"), Expr::Ref(0)])),
                lit("b"),
            ]),
        )]);
        assert!(matches!(solve_all(&g), Cow::Borrowed(_)));
    }
}
