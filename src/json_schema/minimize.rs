//! Merging identical rules: the front end creates one rule per subschema
//! combination, many of which turn out alike (the same string lexeme, the
//! same object suffix). Rules are merged by partition refinement, as in
//! DFA minimization: two rules are equal when their hints are equal and
//! their bodies are equal up to references to equal rules.

use crate::hash::FastMap;
use crate::ir::{Expr, Grammar, LexemeHint, Rule, RuleId};

fn map_refs(e: &Expr, f: &dyn Fn(RuleId) -> RuleId) -> Expr {
    match e {
        Expr::Ref(r) => Expr::Ref(f(*r)),
        Expr::Seq(v) => Expr::Seq(v.iter().map(|x| map_refs(x, f)).collect()),
        Expr::Alt(v) => Expr::Alt(v.iter().map(|x| map_refs(x, f)).collect()),
        Expr::And(v) => Expr::And(v.iter().map(|x| map_refs(x, f)).collect()),
        Expr::Not(x) => Expr::Not(Box::new(map_refs(x, f))),
        Expr::Repeat { expr, min, max } => Expr::Repeat {
            expr: Box::new(map_refs(expr, f)),
            min: *min,
            max: *max,
        },
        other => other.clone(),
    }
}

fn collect_refs(e: &Expr, out: &mut Vec<RuleId>) {
    if let Expr::Ref(r) = e {
        out.push(*r);
    }
    e.for_each_child(|c| collect_refs(c, out));
}

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
    let start = g.start;
    let resolve = |r: RuleId| if r == start { r } else { target[r as usize] };
    let bodies: Vec<Expr> = g
        .rules
        .iter()
        .map(|r| map_refs(&r.body, &|x| resolve(x)))
        .collect();
    // Partition refinement on integer keys: each body's shape (its
    // references blanked) is interned once, its references listed in
    // order; a round then only looks at the classes of those references.
    let mut shapes: FastMap<(LexemeHint, Expr), u32> = FastMap::default();
    let mut shape_of = Vec::with_capacity(n);
    let mut refs_of: Vec<Vec<RuleId>> = Vec::with_capacity(n);
    for (i, body) in bodies.iter().enumerate() {
        let blank = map_refs(body, &|_| 0);
        let k = shapes.len() as u32;
        shape_of.push(*shapes.entry((g.rules[i].lexeme, blank)).or_insert(k));
        let mut refs = Vec::new();
        collect_refs(body, &mut refs);
        refs_of.push(refs);
    }
    drop(shapes);
    let mut class: Vec<u32> = shape_of.clone();
    let mut count = usize::MAX;
    let mut key: Vec<u32> = Vec::new();
    loop {
        let mut ids: FastMap<Vec<u32>, u32> = FastMap::default();
        let mut next = vec![0u32; n];
        for i in 0..n {
            key.clear();
            key.push(class[i]);
            key.extend(refs_of[i].iter().map(|&r| class[r as usize]));
            let k = ids.len() as u32;
            next[i] = match ids.get(&key) {
                Some(&c) => c,
                None => {
                    ids.insert(key.clone(), k);
                    k
                }
            };
        }
        let new_count = ids.len();
        class = next;
        if new_count == count {
            break;
        }
        count = new_count;
    }
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
        let mut refs = Vec::new();
        collect_refs(&bodies[rep[c as usize].unwrap()], &mut refs);
        for r in refs.into_iter().rev() {
            let rc = class[r as usize];
            if new_id[rc as usize].is_none() {
                stack.push(rc);
            }
        }
    }
    let rules: Vec<Rule> = order
        .iter()
        .map(|&c| {
            let i = rep[c as usize].unwrap();
            Rule {
                name: g.rules[i].name.clone(),
                body: map_refs(&bodies[i], &|x| {
                    new_id[class[x as usize] as usize].expect("reachable")
                }),
                lexeme: g.rules[i].lexeme,
            }
        })
        .collect();
    Grammar { rules, start: 0 }
}
