//! The reference graph of a grammar's rules.

use super::RuleId;

/// Strongly connected components, callees first: every rule once, in one
/// list, each component a slice of it. Grammars have thousands of rules
/// and nearly as many components; a vector each was an allocation per
/// rule in every pass that asks.
pub(crate) struct Components {
    rules: Vec<RuleId>,
    /// Where each component ends in `rules`.
    ends: Vec<u32>,
}

impl Components {
    /// The components, callees first.
    pub fn iter(&self) -> impl Iterator<Item = &[RuleId]> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let comp = &self.rules[start..end as usize];
            start = end as usize;
            comp
        })
    }
}

/// Strongly connected components of the reference graph, callees first.
pub(crate) fn tarjan(edges: &[Vec<RuleId>]) -> Components {
    let n = edges.len();
    let mut index = vec![u32::MAX; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut out = Components {
        rules: Vec::with_capacity(n),
        ends: Vec::new(),
    };
    let mut next = 0u32;
    // (node, next edge index)
    let mut work: Vec<(u32, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != u32::MAX {
            continue;
        }
        work.push((root as u32, 0));
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root as u32);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut ei)) = work.last_mut() {
            let vu = v as usize;
            if *ei < edges[vu].len() {
                let w = edges[vu][*ei] as usize;
                *ei += 1;
                if index[w] == u32::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w as u32);
                    on_stack[w] = true;
                    work.push((w as u32, 0));
                } else if on_stack[w] {
                    low[vu] = low[vu].min(index[w]);
                }
            } else {
                work.pop();
                if let Some(&(p, _)) = work.last() {
                    low[p as usize] = low[p as usize].min(low[vu]);
                }
                if low[vu] == index[vu] {
                    loop {
                        let w = stack.pop().unwrap();
                        on_stack[w as usize] = false;
                        out.rules.push(w);
                        if w == v {
                            break;
                        }
                    }
                    out.ends.push(out.rules.len() as u32);
                }
            }
        }
    }
    out
}
