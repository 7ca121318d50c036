//! DFA minimization (Hopcroft's partition refinement) on our own tables.
//!
//! `regex-automata`'s minimizer is quadratic in practice on the DFAs JSON
//! Schema produces (property names spelled with every `\uXXXX` escape,
//! counted strings) and took most of the compile time. This one works on
//! the partial automaton: missing transitions are not edges to a sink
//! state, so a splitter costs the transitions that really enter it, not
//! `classes x states` (tries of property names have dozens of classes and
//! one or two live transitions per state). `O(m log n)` for `m` live
//! transitions.

use super::{Table, DEAD};
use crate::compile::adjacency::Adjacency;
use crate::error::Result;
use crate::limits::{Deadline, Meter};

/// The minimal DFA of `t`'s language: states reached from the start,
/// equivalent states merged, states that cannot reach a final state
/// removed (their transitions become [`DEAD`]). The start stays state 0.
/// An error once `deadline` passes.
pub fn minimize(t: &Table, deadline: &Deadline) -> Result<Table> {
    let mut meter = deadline.meter();
    let k = t.num_classes;
    let (row, edges) = live_edges(t, &mut meter)?;
    let out = |s: usize| &edges[row[s] as usize..row[s + 1] as usize];
    let useful = useful_states(t, &row, &edges, &mut meter)?;
    // Dense numbering of the useful states (the start is 0 when useful).
    let mut id = vec![DEAD; t.num_states()];
    let mut states: Vec<u32> = Vec::new();
    for (s, &u) in useful.iter().enumerate() {
        if u {
            id[s] = states.len() as u32;
            states.push(s as u32);
        }
    }
    let n = states.len();
    if n == 0 || id[0] != 0 {
        // Empty language: one state, no transitions.
        return Ok(Table {
            classes: t.classes,
            num_classes: k,
            trans: vec![DEAD; k],
            is_final: vec![false],
        });
    }

    // Inverse transitions between useful states as compressed rows: the
    // entries of target `q` are `inv[inv_start[q]..inv_start[q + 1]]`,
    // each `class << 32 | source`.
    let mut inv_start = vec![0u32; n + 1];
    for &s in &states {
        meter.step(1 + out(s as usize).len())?;
        for &(_, q) in out(s as usize) {
            if id[q as usize] != DEAD {
                inv_start[id[q as usize] as usize + 1] += 1;
            }
        }
    }
    for q in 0..n {
        inv_start[q + 1] += inv_start[q];
    }
    let mut fill = inv_start.clone();
    let mut inv = vec![0u64; inv_start[n] as usize];
    for (i, &s) in states.iter().enumerate() {
        meter.step(1 + out(s as usize).len())?;
        for &(c, q) in out(s as usize) {
            let q = id[q as usize];
            if q != DEAD {
                inv[fill[q as usize] as usize] = (c as u64) << 32 | i as u64;
                fill[q as usize] += 1;
            }
        }
    }

    // The partition: `elems` holds the states grouped by block; block `b`
    // is `elems[start[b]..end[b]]`; its first `marked[b]` elements are the
    // ones marked in the current split round.
    let is_final = |s: usize| t.is_final[states[s] as usize];
    let mut elems: Vec<u32> = Vec::with_capacity(n);
    elems.extend((0..n as u32).filter(|&s| is_final(s as usize)));
    let finals = elems.len();
    elems.extend((0..n as u32).filter(|&s| !is_final(s as usize)));
    let mut pos = vec![0u32; n];
    for (i, &s) in elems.iter().enumerate() {
        pos[s as usize] = i as u32;
    }
    let mut block_of = vec![0u32; n];
    let (mut start, mut end): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    for (lo, hi) in [(0, finals), (finals, n)] {
        if lo < hi {
            for &s in &elems[lo..hi] {
                block_of[s as usize] = start.len() as u32;
            }
            start.push(lo as u32);
            end.push(hi as u32);
        }
    }
    let mut marked = vec![0u32; start.len()];
    // With missing transitions, "enters the finals" does not follow from
    // "does not enter the non-finals", so both first blocks are splitters.
    // After that, splitting by the smaller half of a split block is enough.
    let mut in_work = vec![true; start.len()];
    let mut work: Vec<u32> = (0..start.len() as u32).collect();
    let mut touched: Vec<u32> = Vec::new();
    let mut entering: Vec<u64> = Vec::new();
    let mut grouped: Vec<u64> = Vec::new();
    let mut per_class: Vec<u32> = Vec::new();

    while let Some(b) = work.pop() {
        in_work[b as usize] = false;
        // Every transition into the splitter, grouped by class.
        entering.clear();
        for &q in &elems[start[b as usize] as usize..end[b as usize] as usize] {
            let row = &inv[inv_start[q as usize] as usize..inv_start[q as usize + 1] as usize];
            meter.step(1 + row.len())?;
            entering.extend_from_slice(row);
        }
        group_by_class(&mut entering, &mut grouped, &mut per_class, k);
        meter.step(2 * entering.len())?;
        let mut i = 0;
        while i < entering.len() {
            let class = entering[i] >> 32;
            let from = i;
            // Mark the sources entering on this class.
            while i < entering.len() && entering[i] >> 32 == class {
                let p = (entering[i] & 0xffff_ffff) as usize;
                i += 1;
                let y = block_of[p] as usize;
                let slot = start[y] + marked[y];
                let at = pos[p];
                if at < slot {
                    continue; // already marked
                }
                if marked[y] == 0 {
                    touched.push(y as u32);
                }
                // Swap p into the marked prefix.
                let other = elems[slot as usize];
                elems.swap(slot as usize, at as usize);
                pos[other as usize] = at;
                pos[p] = slot;
                marked[y] += 1;
            }
            meter.step(i - from + touched.len())?;
            // Split the blocks that were partly marked.
            for &y in &touched {
                let y = y as usize;
                let m = marked[y];
                marked[y] = 0;
                if m == end[y] - start[y] {
                    continue;
                }
                let nb = start.len() as u32;
                start.push(start[y]);
                end.push(start[y] + m);
                start[y] += m;
                marked.push(0);
                for i in start[nb as usize]..end[nb as usize] {
                    block_of[elems[i as usize] as usize] = nb;
                }
                let new_size = m;
                let old_size = end[y] - start[y];
                if in_work[y] || new_size <= old_size {
                    in_work.push(true);
                    work.push(nb);
                } else {
                    in_work.push(false);
                    in_work[y] = true;
                    work.push(y as u32);
                }
            }
            touched.clear();
        }
    }

    // Number the blocks reachable from the start in breadth-first order.
    let mut block_id = vec![DEAD; start.len()];
    let start_block = block_of[0];
    let mut order: Vec<u32> = vec![start_block];
    block_id[start_block as usize] = 0;
    let mut trans = Vec::new();
    let mut finals_out = Vec::new();
    let mut i = 0;
    while i < order.len() {
        meter.step(k)?;
        let b = order[i] as usize;
        let rep = elems[start[b] as usize] as usize;
        finals_out.push(is_final(rep));
        let base = trans.len();
        trans.resize(base + k, DEAD);
        for &(c, q) in out(states[rep] as usize) {
            let q = id[q as usize];
            if q == DEAD {
                continue;
            }
            let tb = block_of[q as usize];
            if block_id[tb as usize] == DEAD {
                block_id[tb as usize] = order.len() as u32;
                order.push(tb);
            }
            trans[base + c as usize] = block_id[tb as usize];
        }
        i += 1;
    }
    Ok(Table {
        classes: t.classes,
        num_classes: k,
        trans,
        is_final: finals_out,
    })
}

/// Reorders `entries` (`class << 32 | source`) so that those of a class
/// are together: a sort when they are few, else a counting sort by class
/// (linear: the first splitters of a large DFA take all of its
/// transitions, and one sort of millions of them ran for a long stretch
/// without a look at the deadline). `scratch` and `counts` are buffers.
fn group_by_class(entries: &mut Vec<u64>, scratch: &mut Vec<u64>, counts: &mut Vec<u32>, k: usize) {
    if entries.len() <= 4 * k + 16 {
        entries.sort_unstable();
        return;
    }
    counts.clear();
    counts.resize(k + 1, 0);
    for &e in entries.iter() {
        counts[(e >> 32) as usize + 1] += 1;
    }
    for c in 0..k {
        counts[c + 1] += counts[c];
    }
    scratch.clear();
    scratch.resize(entries.len(), 0);
    for &e in entries.iter() {
        let slot = &mut counts[(e >> 32) as usize];
        scratch[*slot as usize] = e;
        *slot += 1;
    }
    std::mem::swap(entries, scratch);
}

/// Rows of live transitions: those of state `s` are
/// `edges[row[s]..row[s + 1]]`, each `(class, target)`.
type LiveEdges = (Vec<u32>, Vec<(u32, u32)>);

/// The live transitions of a table (see [`LiveEdges`]), in one pass over
/// it.
fn live_edges(t: &Table, meter: &mut Meter) -> Result<LiveEdges> {
    let k = t.num_classes;
    let mut row = Vec::with_capacity(t.num_states() + 1);
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for s in 0..t.num_states() {
        meter.step(k)?;
        row.push(edges.len() as u32);
        for (c, &q) in t.trans[s * k..(s + 1) * k].iter().enumerate() {
            if q != DEAD {
                edges.push((c as u32, q));
            }
        }
    }
    row.push(edges.len() as u32);
    Ok((row, edges))
}

/// The states reached from the start that can reach a final state, given
/// the live transitions as rows (see [`minimize`]).
fn useful_states(
    t: &Table,
    row: &[u32],
    edges: &[(u32, u32)],
    meter: &mut Meter,
) -> Result<Vec<bool>> {
    let n = t.num_states();
    let mut reached = vec![false; n];
    if n == 0 {
        return Ok(reached);
    }
    reached[0] = true;
    let mut todo = vec![0usize];
    while let Some(s) = todo.pop() {
        let out = &edges[row[s] as usize..row[s + 1] as usize];
        meter.step(1 + out.len())?;
        for &(_, q) in out {
            if !reached[q as usize] {
                reached[q as usize] = true;
                todo.push(q as usize);
            }
        }
    }
    // Backwards from the reached finals, over reversed edges.
    let preds = Adjacency::new_metered(
        n,
        (0..n).flat_map(|s| {
            edges[row[s] as usize..row[s + 1] as usize]
                .iter()
                .map(move |&(_, q)| (q, s as u32))
        }),
        meter,
    )?;
    let mut live: Vec<bool> = (0..n).map(|s| reached[s] && t.is_final[s]).collect();
    let mut todo: Vec<usize> = (0..n).filter(|&s| live[s]).collect();
    while let Some(q) = todo.pop() {
        meter.step(1 + preds.of(q).len())?;
        for &p in preds.of(q) {
            if reached[p as usize] && !live[p as usize] {
                live[p as usize] = true;
                todo.push(p as usize);
            }
        }
    }
    Ok(live)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table over one class per byte value used.
    fn table(trans: &[&[u32]], finals: &[bool]) -> Table {
        let k = trans[0].len();
        let mut classes = [0u8; 256];
        for (b, c) in classes.iter_mut().enumerate() {
            *c = (b % k) as u8;
        }
        Table {
            classes,
            num_classes: k,
            trans: trans.iter().flat_map(|r| r.iter().copied()).collect(),
            is_final: finals.to_vec(),
        }
    }

    #[test]
    fn merges_equivalent_states_and_drops_dead_ones() {
        // (a|b) then c, with the two middle states equivalent, plus a
        // state (4) that loops forever without reaching a final state.
        let t = table(
            &[
                &[1, 2, 4],
                &[DEAD, DEAD, 3],
                &[DEAD, DEAD, 3],
                &[DEAD, DEAD, DEAD],
                &[4, 4, 4],
            ],
            &[false, false, false, true, false],
        );
        let m = minimize(&t, &Deadline::none()).unwrap();
        assert_eq!(m.num_states(), 3);
        assert_eq!(m.trans, vec![1, 1, DEAD, DEAD, DEAD, 2, DEAD, DEAD, DEAD]);
        assert_eq!(m.is_final, vec![false, false, true]);
    }

    #[test]
    fn counting_chain_stays_and_empty_language_is_one_state() {
        // a{0,3}: four distinct states.
        let t = table(&[&[1], &[2], &[3], &[DEAD]], &[true, true, true, true]);
        assert_eq!(minimize(&t, &Deadline::none()).unwrap().num_states(), 4);
        let none = table(&[&[1], &[0]], &[false, false]);
        let m = minimize(&none, &Deadline::none()).unwrap();
        assert_eq!(m.num_states(), 1);
        assert_eq!(m.trans, vec![DEAD]);
    }

    /// Moore's refinement as in the books, over the useful states: the
    /// number of states of the minimal DFA.
    fn naive_size(t: &Table) -> usize {
        let (row, edges) = live_edges(t, &mut Deadline::none().meter()).unwrap();
        let useful = useful_states(t, &row, &edges, &mut Deadline::none().meter()).unwrap();
        let k = t.num_classes;
        let n = t.num_states();
        let mut class: Vec<u32> = (0..n).map(|s| t.is_final[s] as u32).collect();
        let mut count = 0;
        loop {
            let mut ids: std::collections::HashMap<Vec<u32>, u32> = Default::default();
            let next: Vec<u32> = (0..n)
                .map(|s| {
                    let mut sig = vec![class[s]];
                    sig.extend((0..k).map(|c| match t.trans[s * k + c] {
                        q if q != DEAD && useful[q as usize] => class[q as usize],
                        _ => u32::MAX,
                    }));
                    let fresh = ids.len() as u32;
                    *ids.entry(sig).or_insert(fresh)
                })
                .collect();
            let distinct: std::collections::HashSet<u32> =
                (0..n).filter(|&s| useful[s]).map(|s| next[s]).collect();
            class = next;
            if distinct.len() == count {
                return count.max(1);
            }
            count = distinct.len();
        }
    }

    #[test]
    fn random_tables_match_the_textbook_refinement() {
        let mut rng = crate::util::test_rng::TestRng::new(0x2545_f491_4f6c_dd1d);
        let mut rand = |m: u64| rng.below(m as usize) as u64;
        for _ in 0..2000 {
            let n = 1 + rand(12) as usize;
            let k = 1 + rand(4) as usize;
            let rows: Vec<Vec<u32>> = (0..n)
                .map(|_| {
                    (0..k)
                        .map(|_| match rand(3) {
                            0 => DEAD,
                            _ => rand(n as u64) as u32,
                        })
                        .collect()
                })
                .collect();
            let finals: Vec<bool> = (0..n).map(|_| rand(3) == 0).collect();
            let refs: Vec<&[u32]> = rows.iter().map(|r| r.as_slice()).collect();
            let t = table(&refs, &finals);
            let m = minimize(&t, &Deadline::none()).unwrap();
            assert_eq!(m.num_states(), naive_size(&t), "{rows:?} {finals:?}");
            // Same language: walk both together from the starts.
            let (row, edges) = live_edges(&t, &mut Deadline::none().meter()).unwrap();
            let useful = useful_states(&t, &row, &edges, &mut Deadline::none().meter()).unwrap();
            let mut seen = std::collections::HashSet::new();
            let mut todo = vec![(0u32, 0u32)];
            while let Some((a, b)) = todo.pop() {
                let a_live = a != DEAD && useful[a as usize];
                // An empty language minimizes to one state without edges.
                let b_live = b != DEAD && useful[0];
                assert_eq!(a_live, b_live);
                if !a_live || !seen.insert((a, b)) {
                    continue;
                }
                assert_eq!(t.is_final[a as usize], m.is_final[b as usize]);
                for c in 0..k {
                    todo.push((t.trans[a as usize * k + c], m.trans[b as usize * k + c]));
                }
            }
        }
    }
}
