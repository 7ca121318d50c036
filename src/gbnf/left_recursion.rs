//! Left-recursion check on IR: a grammar is left-recursive when some rule
//! can reach itself at its leftmost position without consuming input, also
//! through nullable prefixes (`a ::= b a`, `b ::= | "x"`).
//!
//! cgram's engine copes with left recursion, so a check only exists to
//! refuse what llama.cpp refuses; the compiler decides whether to run one.
//!
//! Nullability is computed exactly on the IR (a rule is nullable if its body
//! can match the empty string, through any depth of references). llama.cpp's
//! own check differs: it runs on its desugared rules and counts a rule as
//! nullable only when one of its alternatives is syntactically empty, so it
//! misses `a ::= b a | "y"`, `b ::= c`, `c ::= | "x"` (which it then loops
//! on or happens to survive) and refuses `"a"?*`, whose generated loop rule
//! starts with the possibly-empty rule of `?`. For GBNF parity use
//! [`super::GbnfRules::check_left_recursion`], which models that exactly;
//! the cycle search below serves both.

use crate::error::{Error, Result};
use crate::ir::{Expr, Grammar, RuleId};

/// Fails with the rule names of a left-recursive cycle if the grammar has
/// one. Every rule is checked, used or not (as llama.cpp does).
pub fn check_left_recursion(g: &Grammar) -> Result<()> {
    let nullable = nullable_rules(g);
    let edges: Vec<Vec<RuleId>> = g
        .rules
        .iter()
        .map(|r| {
            let mut v = Vec::new();
            leftmost_refs(&r.body, &nullable, &mut v);
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    match find_cycle(&edges) {
        None => Ok(()),
        Some(cycle) => {
            let path: Vec<&str> = cycle
                .iter()
                .map(|&r| g.rules[r as usize].name.as_str())
                .collect();
            Err(Error::parse(format!(
                "left recursion: rule \"{}\" can reach itself before matching any input \
                 ({}); llama.cpp rejects left-recursive grammars",
                path[0],
                path.join(" -> ")
            )))
        }
    }
}

/// Whether each rule can match the empty string: a least fixpoint, found by
/// re-examining only the rules that refer to a rule just found nullable.
pub(crate) fn nullable_rules(g: &Grammar) -> Vec<bool> {
    let n = g.rules.len();
    let mut users: Vec<Vec<RuleId>> = vec![Vec::new(); n];
    for (i, r) in g.rules.iter().enumerate() {
        let mut refs = Vec::new();
        all_refs(&r.body, &mut refs);
        refs.sort_unstable();
        refs.dedup();
        for t in refs {
            if let Some(u) = users.get_mut(t as usize) {
                u.push(i as RuleId);
            }
        }
    }
    let mut nullable = vec![false; n];
    let mut queue: Vec<RuleId> = (0..n as RuleId).collect();
    while let Some(i) = queue.pop() {
        if nullable[i as usize] || !g.rules[i as usize].body.nullable_given(&nullable) {
            continue;
        }
        nullable[i as usize] = true;
        queue.extend(
            users[i as usize]
                .iter()
                .copied()
                .filter(|&u| !nullable[u as usize]),
        );
    }
    nullable
}

fn all_refs(e: &Expr, out: &mut Vec<RuleId>) {
    match e {
        Expr::Ref(r) => out.push(*r),
        _ => e.for_each_child(|c| all_refs(c, out)),
    }
}

/// Rules that `e` may start with: references reachable before any input is
/// consumed.
fn leftmost_refs(e: &Expr, nullable: &[bool], out: &mut Vec<RuleId>) {
    match e {
        Expr::Ref(r) => out.push(*r),
        Expr::Seq(v) => {
            for c in v {
                leftmost_refs(c, nullable, out);
                if !c.nullable_given(nullable) {
                    break;
                }
            }
        }
        Expr::Alt(v) => v.iter().for_each(|c| leftmost_refs(c, nullable, out)),
        // Zero copies leave nothing to start with; otherwise the first copy
        // starts the match (later copies start it only after nullable earlier
        // ones, and they are the same expression).
        Expr::Repeat { max: Some(0), .. } => {}
        Expr::Repeat { expr, .. } => leftmost_refs(expr, nullable, out),
        // Boolean operators only combine regular parts (never recursive).
        Expr::And(v) => v.iter().for_each(|c| leftmost_refs(c, nullable, out)),
        Expr::Not(c) => leftmost_refs(c, nullable, out),
        Expr::Empty
        | Expr::Nothing
        | Expr::Literal(_)
        | Expr::Class(_)
        | Expr::Token(_)
        | Expr::JsonStrings(_)
        | Expr::JsonQuoted(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_)
        | Expr::Rfc3339(_) => {}
    }
}

/// Some cycle of the graph as a path `[r, ..., r]`, found by an iterative
/// depth-first search (no recursion: grammars can have long rule chains).
pub(super) fn find_cycle(edges: &[Vec<RuleId>]) -> Option<Vec<RuleId>> {
    const WHITE: u8 = 0;
    const GREY: u8 = 1;
    const BLACK: u8 = 2;
    let mut color = vec![WHITE; edges.len()];
    for root in 0..edges.len() {
        if color[root] != WHITE {
            continue;
        }
        // (node, index of the next edge to follow)
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        color[root] = GREY;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let Some(&to) = edges[node].get(*next) else {
                color[node] = BLACK;
                stack.pop();
                continue;
            };
            *next += 1;
            let to = to as usize;
            if to >= edges.len() {
                continue;
            }
            match color[to] {
                WHITE => {
                    color[to] = GREY;
                    stack.push((to, 0));
                }
                GREY => {
                    let start = stack.iter().position(|&(n, _)| n == to).unwrap_or(0);
                    let mut cycle: Vec<RuleId> =
                        stack[start..].iter().map(|&(n, _)| n as RuleId).collect();
                    cycle.push(to as RuleId);
                    return Some(cycle);
                }
                _ => {}
            }
        }
    }
    None
}
