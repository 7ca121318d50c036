//! Merging identical rules: the front end creates one rule per subschema
//! combination, many of which turn out alike (the same string lexeme, the
//! same object suffix). Rules are merged by partition refinement, as in
//! DFA minimization: two rules are equal when their hints are equal and
//! their bodies are equal up to references to equal rules.
//!
//! Bodies are large (property names spelled every way JSON allows), so
//! they are never copied here: references are rewritten in place and
//! shapes are compared through a view that ignores reference targets.

use std::hash::{Hash, Hasher};

use crate::ir::graph::tarjan;
use crate::ir::{Expr, Grammar, LexemeHint, Rule, RuleId};
use crate::util::hash::{FastHasher, FastMap};

/// Calls `f` on every rule reference in `e`, in order, to rewrite it.
fn for_each_ref_mut(e: &mut Expr, f: &mut impl FnMut(&mut RuleId)) {
    match e {
        Expr::Ref(r) => f(r),
        Expr::Seq(v) | Expr::Alt(v) | Expr::And(v) => {
            v.iter_mut().for_each(|x| for_each_ref_mut(x, f))
        }
        Expr::Not(x) | Expr::Repeat { expr: x, .. } => for_each_ref_mut(x, f),
        _ => {}
    }
}

/// Hashes the shape of `e` (see [`Shape`]) into `h` and lists its
/// references in order, in one walk: bodies are large, and a walk of
/// their nodes is mostly cache misses.
fn hash_shape(e: &Expr, h: &mut FastHasher, refs: &mut Vec<RuleId>) {
    std::mem::discriminant(e).hash(h);
    match e {
        Expr::Ref(r) => refs.push(*r),
        Expr::Empty | Expr::Nothing => {}
        Expr::Literal(s) => s.hash(h),
        Expr::Class(c) => c.hash(h),
        Expr::Token(t) => t.hash(h),
        Expr::JsonStrings(js) => js.hash(h),
        // The operand of a pattern holds no reference.
        Expr::JsonQuoted(x) => hash_shape(x, h, &mut Vec::new()),
        Expr::DecimalMultiple(m) => m.hash(h),
        Expr::IntegerRange(r) => r.hash(h),
        Expr::Rfc3339(r) => r.hash(h),
        Expr::Seq(v) | Expr::Alt(v) | Expr::And(v) => {
            v.len().hash(h);
            v.iter().for_each(|x| hash_shape(x, h, refs));
        }
        Expr::Not(x) => hash_shape(x, h, refs),
        Expr::Repeat { expr, min, max } => {
            (min, max).hash(h);
            hash_shape(expr, h, refs);
        }
    }
}

/// A body seen with its reference targets blanked out: equal shapes
/// differ at most in which rules they reference. Keys a map by the hash
/// [`hash_shape`] computed (with the rule's hint).
struct Shape<'a> {
    hash: u64,
    hint: LexemeHint,
    body: &'a Expr,
}

impl Hash for Shape<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

/// Shapes of equal hashes compared node by node.
fn same_shape(a: &Expr, b: &Expr) -> bool {
    match (a, b) {
        (Expr::Ref(_), Expr::Ref(_)) => true,
        (Expr::Seq(a), Expr::Seq(b))
        | (Expr::Alt(a), Expr::Alt(b))
        | (Expr::And(a), Expr::And(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_shape(x, y))
        }
        (Expr::Not(a), Expr::Not(b)) => same_shape(a, b),
        (
            Expr::Repeat { expr, min, max },
            Expr::Repeat {
                expr: e2,
                min: m2,
                max: x2,
            },
        ) => min == m2 && max == x2 && same_shape(expr, e2),
        (a, b) => a == b,
    }
}

impl PartialEq for Shape<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.hint == other.hint && same_shape(self.body, other.body)
    }
}

impl Eq for Shape<'_> {}

/// The same language with duplicate, alias and unreachable rules removed.
pub fn minimize(g: Grammar) -> Grammar {
    let n = g.rules.len();
    // Aliases: a rule whose body is a single reference.
    let mut target: Vec<RuleId> = (0..n as RuleId).collect();
    for (i, t) in target.iter_mut().enumerate() {
        let mut cur = i as RuleId;
        let mut steps = 0;
        while let Expr::Ref(next) = g.rules[cur as usize].body {
            // An alias with another hint changes how the rule compiles
            // (e.g. a parser rule around a lexeme keeps repetitions of it
            // out of one large lexeme).
            if next == cur || steps > n || g.rules[next as usize].lexeme != g.rules[i].lexeme {
                break;
            }
            cur = next;
            steps += 1;
        }
        if cur != i as RuleId && cur as usize != g.start as usize {
            *t = cur;
        }
    }
    // References are read through the aliases (to the rule an alias
    // chain ends at) rather than rewritten first: one pass over the bodies
    // fewer, and shapes ignore reference targets anyway.
    let start = g.start;
    let resolve = |x: RuleId| if x == start { x } else { target[x as usize] };
    let rules = g.rules;
    // Each body's shape (its references blanked) is interned once, its
    // references listed in order; classes then come from shapes and the
    // classes of references.
    let mut shapes: FastMap<Shape, u32> = FastMap::default();
    let mut shape_of = Vec::with_capacity(n);
    let mut refs_of: Vec<Vec<RuleId>> = Vec::with_capacity(n);
    for r in &rules {
        let mut h = FastHasher::default();
        let mut refs = Vec::new();
        hash_shape(&r.body, &mut h, &mut refs);
        let shape = Shape {
            hash: h.finish(),
            hint: r.lexeme,
            body: &r.body,
        };
        let k = shapes.len() as u32;
        shape_of.push(*shapes.entry(shape).or_insert(k));
        refs.iter_mut().for_each(|x| *x = resolve(*x));
        refs_of.push(refs);
    }
    drop(shapes);
    let (class, count) = refine(&shape_of, &refs_of);
    // Reachable classes from the start, in order of discovery.
    let mut rep: Vec<Option<usize>> = vec![None; count];
    for i in 0..n {
        if rep[class[i] as usize].is_none() {
            rep[class[i] as usize] = Some(i);
        }
    }
    let mut new_id: Vec<Option<RuleId>> = vec![None; count];
    let mut order: Vec<u32> = Vec::new();
    let mut stack = vec![class[start as usize]];
    while let Some(c) = stack.pop() {
        if new_id[c as usize].is_some() {
            continue;
        }
        new_id[c as usize] = Some(order.len() as RuleId);
        order.push(c);
        for &r in refs_of[rep[c as usize].unwrap()].iter().rev() {
            let rc = class[r as usize];
            if new_id[rc as usize].is_none() {
                stack.push(rc);
            }
        }
    }
    let mut old_rules: Vec<Option<Rule>> = rules.into_iter().map(Some).collect();
    let rules: Vec<Rule> = order
        .iter()
        .map(|&c| {
            let mut rule = old_rules[rep[c as usize].unwrap()]
                .take()
                .expect("one representative per class");
            for_each_ref_mut(&mut rule.body, &mut |x| {
                *x = new_id[class[resolve(*x) as usize] as usize].expect("reachable")
            });
            rule
        })
        .collect();
    Grammar { rules, start: 0 }
}

/// The classes of equal rules (and their number), given each rule's shape
/// id and references: rules are equal when their shapes are and their
/// references are to equal rules, position by position.
///
/// Strongly connected components are settled callees first. A rule
/// outside any cycle gets its class in one lookup, its references'
/// classes being final; a cycle is refined in rounds (Moore's algorithm)
/// over its own rules only. Rounds over the whole grammar took one round
/// per link of the longest chain of rules (a schema with a thousand
/// required properties is such a chain): quadratic. Equal cycles in
/// different components stay apart, which costs size, never meaning.
fn refine(shape_of: &[u32], refs_of: &[Vec<RuleId>]) -> (Vec<u32>, usize) {
    let n = shape_of.len();
    const UNSET: u32 = u32::MAX;
    let mut class = vec![UNSET; n];
    let mut ids: FastMap<Vec<u32>, u32> = FastMap::default();
    let mut count = 0u32;
    let mut key: Vec<u32> = Vec::new();
    let mut local: Vec<u32> = vec![UNSET; n];
    for comp in tarjan(refs_of).iter() {
        let cyclic = comp.len() > 1 || refs_of[comp[0] as usize].contains(&comp[0]);
        if !cyclic {
            let r = comp[0] as usize;
            key.clear();
            key.push(shape_of[r]);
            key.extend(refs_of[r].iter().map(|&x| class[x as usize]));
            class[r] = *ids.entry(key.clone()).or_insert_with(|| {
                count += 1;
                count - 1
            });
            continue;
        }
        // Moore rounds inside the component: a reference out of it reads
        // its final class, one into it the rule's class of the last round
        // (tagged apart by the high bit).
        for &r in comp {
            local[r as usize] = shape_of[r as usize];
        }
        let mut local_count = usize::MAX;
        loop {
            let mut round: FastMap<Vec<u32>, u32> = FastMap::default();
            let next: Vec<u32> = comp
                .iter()
                .map(|&r| {
                    key.clear();
                    key.push(local[r as usize]);
                    key.extend(refs_of[r as usize].iter().map(|&x| {
                        let c = class[x as usize];
                        if c == UNSET {
                            local[x as usize] | 1 << 31
                        } else {
                            c
                        }
                    }));
                    let k = round.len() as u32;
                    *round.entry(key.clone()).or_insert(k)
                })
                .collect();
            for (&r, &c) in comp.iter().zip(&next) {
                local[r as usize] = c;
            }
            if round.len() == local_count {
                break;
            }
            local_count = round.len();
        }
        let first = count;
        for &r in comp {
            class[r as usize] = first + local[r as usize];
        }
        count += local_count as u32;
    }
    (class, count as usize)
}
