//! The least model of propositional Horn clauses, in time linear in their
//! size.
//!
//! Several analyses of a compiled grammar are "x holds if all of these
//! hold" over states and rules: a state can finish its rule, a rule
//! matches some string, a rule matches the empty string. Solved by passes
//! over everything until nothing changes, they cost a pass per link of the
//! longest chain: quadratic on a schema with a thousand required
//! properties (one rule calling the next). Here each clause counts its
//! premises not yet known to hold, and a fact that becomes true decrements
//! the clauses that wait for it (Dowling and Gallier's algorithm), so
//! every premise is looked at once.

use super::adjacency::Adjacency;
use crate::error::Result;
use crate::limits::{Meter, WORK_PER_CHECK};

/// Clauses over the atoms `0..n`.
pub(crate) struct HornClauses {
    n: usize,
    /// Atoms that hold unconditionally.
    facts: Vec<u32>,
    /// The head of each clause.
    heads: Vec<u32>,
    /// Each clause's premises: `premises[start[c]..start[c + 1]]`.
    start: Vec<u32>,
    premises: Vec<u32>,
}

impl HornClauses {
    /// Room for about `clauses` clauses of `premises` premises in all:
    /// the analyses know their sizes, and a grammar's clauses grown a
    /// doubling at a time were copied and faulted in again at each
    /// (5% of compiling a schema of a hundred object types).
    pub(crate) fn with_capacity(n: usize, clauses: usize, premises: usize) -> HornClauses {
        let mut start = Vec::with_capacity(clauses + 1);
        start.push(0);
        HornClauses {
            n,
            facts: Vec::new(),
            heads: Vec::with_capacity(clauses),
            start,
            premises: Vec::with_capacity(premises),
        }
    }

    /// `atom` holds.
    pub(crate) fn fact(&mut self, atom: u32) {
        self.facts.push(atom);
    }

    /// `head` holds if every one of `premises` holds (a premise listed
    /// twice counts once).
    pub(crate) fn clause(&mut self, head: u32, premises: &[u32]) {
        let from = self.premises.len();
        for &p in premises {
            if !self.premises[from..].contains(&p) {
                self.premises.push(p);
            }
        }
        if self.premises.len() == from {
            self.facts.push(head);
        } else {
            self.heads.push(head);
            self.start.push(self.premises.len() as u32);
        }
    }

    /// Which atoms hold in the least model: an error once `meter`'s
    /// deadline passes.
    pub(crate) fn solve(&self, meter: &mut Meter) -> Result<Vec<bool>> {
        let waiting = Adjacency::inverse(self.n, &self.start, &self.premises);
        let mut missing: Vec<u32> = self.start.windows(2).map(|r| r[1] - r[0]).collect();
        let mut holds = vec![false; self.n];
        let mut work = Vec::new();
        for &f in &self.facts {
            if !holds[f as usize] {
                holds[f as usize] = true;
                work.push(f);
            }
        }
        // Work not yet counted by the meter: counting each atom's work
        // there made solving 10% slower.
        let mut uncounted = 0;
        while let Some(atom) = work.pop() {
            let waiting = waiting.of(atom as usize);
            uncounted += 1 + waiting.len();
            if uncounted >= WORK_PER_CHECK {
                meter.step(std::mem::take(&mut uncounted))?;
            }
            for &c in waiting {
                missing[c as usize] -= 1;
                if missing[c as usize] == 0 {
                    let h = self.heads[c as usize];
                    if !holds[h as usize] {
                        holds[h as usize] = true;
                        work.push(h);
                    }
                }
            }
        }
        Ok(holds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Deadline;

    /// The textbook fixpoint: apply every clause until nothing changes.
    fn by_passes(n: usize, facts: &[u32], clauses: &[(u32, Vec<u32>)]) -> Vec<bool> {
        let mut holds = vec![false; n];
        for &f in facts {
            holds[f as usize] = true;
        }
        let mut changed = true;
        while changed {
            changed = false;
            for (h, ps) in clauses {
                if !holds[*h as usize] && ps.iter().all(|&p| holds[p as usize]) {
                    holds[*h as usize] = true;
                    changed = true;
                }
            }
        }
        holds
    }

    #[test]
    fn agrees_with_passes_on_random_clauses() {
        let mut rng = crate::util::test_rng::TestRng::new(0x2545_f491_4f6c_dd1d);
        let mut next = |m: u64| rng.below(m as usize) as u32;
        for round in 0..300 {
            let n = 1 + (round % 40) as usize;
            let facts: Vec<u32> = (0..next(3)).map(|_| next(n as u64)).collect();
            let clauses: Vec<(u32, Vec<u32>)> = (0..next(3 * n as u64 + 1))
                .map(|_| {
                    let ps = (0..next(4)).map(|_| next(n as u64)).collect();
                    (next(n as u64), ps)
                })
                .collect();
            let mut h = HornClauses::with_capacity(n, 0, 0);
            for &f in &facts {
                h.fact(f);
            }
            for (head, ps) in &clauses {
                h.clause(*head, ps);
            }
            assert_eq!(
                h.solve(&mut Deadline::none().meter()).unwrap(),
                by_passes(n, &facts, &clauses),
                "round {round}"
            );
        }
    }

    #[test]
    fn a_long_chain_is_linear() {
        // x0 holds; x(i+1) if x(i) and x(0): one pass per link by passes
        // when the clauses come in the wrong order.
        let n = 200_000;
        let mut h = HornClauses::with_capacity(n, 0, 0);
        for i in (1..n as u32).rev() {
            h.clause(i, &[i - 1, 0]);
        }
        h.fact(0);
        assert!(h
            .solve(&mut Deadline::none().meter())
            .unwrap()
            .iter()
            .all(|&b| b));
    }
}
