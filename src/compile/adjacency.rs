//! Lists of neighbours of nodes `0..n` in one array (compressed rows): the
//! predecessors of DFA states, the dependents of a fixpoint's nodes.

use crate::error::Result;
use crate::limits::{Deadline, Meter};

/// The lists of `0..n`: those of `x` are `to[start[x]..start[x + 1]]`.
pub(crate) struct Adjacency {
    start: Vec<u32>,
    to: Vec<u32>,
}

impl Adjacency {
    /// From `(from, to)` pairs, each list in the pairs' order. The pairs
    /// are read twice (counted, then placed), so no list of them is built.
    pub(crate) fn new(n: usize, links: impl Iterator<Item = (u32, u32)> + Clone) -> Adjacency {
        Self::new_metered(n, links, &mut Deadline::none().meter()).expect("no deadline")
    }

    /// [`Adjacency::new`], counting each pair read with `meter` (an error
    /// once its deadline passes).
    pub(crate) fn new_metered(
        n: usize,
        links: impl Iterator<Item = (u32, u32)> + Clone,
        meter: &mut Meter,
    ) -> Result<Adjacency> {
        let mut start = vec![0u32; n + 1];
        for (f, _) in links.clone() {
            meter.step(1)?;
            start[f as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut to = vec![0u32; start[n] as usize];
        for (f, t) in links {
            meter.step(1)?;
            to[fill[f as usize] as usize] = t;
            fill[f as usize] += 1;
        }
        Ok(Adjacency { start, to })
    }

    /// The lists of `0..n` inverted from rows given as compressed rows
    /// (row `r` is `items[start[r]..start[r + 1]]`): the list of `x` holds
    /// every row that lists `x`, rows in order. Plain loops rather than an
    /// iterator of pairs read twice: Horn clauses (see `horn`) invert the
    /// edges of every compiled grammar this way, and the iterator cost
    /// them a third more instructions.
    pub(crate) fn inverse(n: usize, start: &[u32], items: &[u32]) -> Adjacency {
        Self::inverse_by(n, start, items, |&x| x)
    }

    /// [`Adjacency::inverse`] of rows of any items, `node` naming the node
    /// each item lists.
    pub(crate) fn inverse_by<T>(
        n: usize,
        start: &[u32],
        items: &[T],
        node: impl Fn(&T) -> u32,
    ) -> Adjacency {
        let mut first = vec![0u32; n + 1];
        for x in items {
            first[node(x) as usize + 1] += 1;
        }
        for i in 0..n {
            first[i + 1] += first[i];
        }
        let mut fill = first.clone();
        let mut to = vec![0u32; items.len()];
        for (r, row) in start.windows(2).enumerate() {
            for x in &items[row[0] as usize..row[1] as usize] {
                let slot = &mut fill[node(x) as usize];
                to[*slot as usize] = r as u32;
                *slot += 1;
            }
        }
        Adjacency { start: first, to }
    }

    /// The list of `x`.
    pub(crate) fn of(&self, x: usize) -> &[u32] {
        &self.to[self.start[x] as usize..self.start[x + 1] as usize]
    }
}
