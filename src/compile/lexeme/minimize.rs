//! DFA minimization (Hopcroft's partition refinement) on our own tables.
//!
//! `regex-automata`'s minimizer is quadratic in practice on the DFAs JSON
//! Schema produces (property names spelled with every `\uXXXX` escape,
//! counted strings) and took most of the compile time; this one runs in
//! `O(classes * n log n)` on the compact table and also minimizes the
//! results of products, complements and subset constructions, which
//! `regex-automata` never sees.

use super::{Table, DEAD};

/// The minimal DFA of `t`'s language: states reached from the start,
/// equivalent states merged, states that cannot reach a final state
/// removed (their transitions become [`DEAD`]). The start stays state 0.
pub fn minimize(t: &Table) -> Table {
    let k = t.num_classes;
    // Total automaton: the absent state is a real state `sink` (= n).
    let n = t.num_states() + 1;
    let sink = (n - 1) as u32;
    let next = |s: usize, c: usize| -> u32 {
        if s == sink as usize {
            return sink;
        }
        let x = t.trans[s * k + c];
        if x == DEAD {
            sink
        } else {
            x
        }
    };

    // Inverse transitions per class, as CSR: sources of `(c, target)` are
    // `inv_src[inv_start[c * n + target]..inv_start[c * n + target + 1]]`.
    let mut inv_start = vec![0u32; k * n + 1];
    for s in 0..n {
        for c in 0..k {
            inv_start[c * n + next(s, c) as usize + 1] += 1;
        }
    }
    for i in 1..inv_start.len() {
        inv_start[i] += inv_start[i - 1];
    }
    let mut fill = inv_start.clone();
    let mut inv_src = vec![0u32; k * n];
    for s in 0..n {
        for c in 0..k {
            let slot = &mut fill[c * n + next(s, c) as usize];
            inv_src[*slot as usize] = s as u32;
            *slot += 1;
        }
    }

    // The partition: `elems` holds the states grouped by block; block `b`
    // is `elems[start[b]..end[b]]`; its first `marked[b]` elements are the
    // ones marked in the current split round.
    let mut elems: Vec<u32> = Vec::with_capacity(n);
    let is_final = |s: usize| s != sink as usize && t.is_final[s];
    elems.extend((0..n as u32).filter(|&s| is_final(s as usize)));
    let finals = elems.len();
    elems.extend((0..n as u32).filter(|&s| !is_final(s as usize)));
    let mut pos = vec![0u32; n];
    for (i, &s) in elems.iter().enumerate() {
        pos[s as usize] = i as u32;
    }
    let mut block_of = vec![0u32; n];
    let (mut start, mut end): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    if finals > 0 {
        start.push(0);
        end.push(finals as u32);
    }
    if finals < n {
        start.push(finals as u32);
        end.push(n as u32);
    }
    for b in 0..start.len() {
        for i in start[b]..end[b] {
            block_of[elems[i as usize] as usize] = b as u32;
        }
    }
    let mut marked = vec![0u32; start.len()];
    // Hopcroft: splitting by the smaller of the first two blocks is enough
    // (splits by the other follow from it), and the larger one holds the
    // sink, whose predecessors are every missing transition.
    let mut in_work = vec![false; start.len()];
    let smaller = (0..start.len())
        .min_by_key(|&b| end[b] - start[b])
        .unwrap_or(0);
    let mut work: Vec<u32> = Vec::new();
    if start.len() == 2 {
        in_work[smaller] = true;
        work.push(smaller as u32);
    }
    let mut touched: Vec<u32> = Vec::new();
    let mut splitter: Vec<u32> = Vec::new();

    while let Some(b) = work.pop() {
        in_work[b as usize] = false;
        splitter.clear();
        splitter.extend_from_slice(&elems[start[b as usize] as usize..end[b as usize] as usize]);
        for c in 0..k {
            // Mark the predecessors of the splitter on class `c`.
            for &s in &splitter {
                let lo = inv_start[c * n + s as usize] as usize;
                let hi = inv_start[c * n + s as usize + 1] as usize;
                for &p in &inv_src[lo..hi] {
                    let y = block_of[p as usize] as usize;
                    let slot = start[y] + marked[y];
                    let at = pos[p as usize];
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
                    pos[p as usize] = slot;
                    marked[y] += 1;
                }
            }
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

    // Number the blocks reachable from the start in breadth-first order;
    // the sink's block (states that cannot reach a final state) is DEAD.
    let dead_block = block_of[sink as usize];
    let mut id = vec![DEAD; start.len()];
    let start_block = block_of[0];
    let mut order: Vec<u32> = vec![start_block];
    id[start_block as usize] = 0;
    let mut trans = Vec::new();
    let mut finals_out = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let b = order[i] as usize;
        let rep = elems[start[b] as usize] as usize;
        finals_out.push(is_final(rep));
        for c in 0..k {
            let tb = block_of[next(rep, c) as usize];
            if tb == dead_block {
                trans.push(DEAD);
                continue;
            }
            if id[tb as usize] == DEAD {
                id[tb as usize] = order.len() as u32;
                order.push(tb);
            }
            trans.push(id[tb as usize]);
        }
        i += 1;
    }
    if start_block == dead_block {
        // Empty language: one state, no transitions.
        trans.iter_mut().for_each(|x| *x = DEAD);
    }
    Table {
        classes: t.classes,
        num_classes: k,
        trans,
        is_final: finals_out,
    }
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
        let m = minimize(&t);
        assert_eq!(m.num_states(), 3);
        assert_eq!(m.trans, vec![1, 1, DEAD, DEAD, DEAD, 2, DEAD, DEAD, DEAD]);
        assert_eq!(m.is_final, vec![false, false, true]);
    }

    #[test]
    fn counting_chain_stays_and_empty_language_is_one_state() {
        // a{0,3}: four distinct states.
        let t = table(&[&[1], &[2], &[3], &[DEAD]], &[true, true, true, true]);
        assert_eq!(minimize(&t).num_states(), 4);
        let none = table(&[&[1], &[0]], &[false, false]);
        let m = minimize(&none);
        assert_eq!(m.num_states(), 1);
        assert_eq!(m.trans, vec![DEAD]);
    }
}
