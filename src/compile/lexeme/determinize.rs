//! Subset construction from `regex-automata`'s Thompson NFA to our table.
//!
//! `regex-automata`'s dense determinizer computes every state's successor
//! on every byte class. Lexemes from JSON Schema have many classes (hex
//! digits and letters of `\uXXXX` escapes, property names) and states with
//! few live bytes each, so here each DFA state looks only at the byte
//! ranges its NFA states actually leave on: the cost follows the live
//! transitions, not states x classes.

use regex_automata::nfa::thompson::{State, Transition, NFA};
use regex_automata::util::primitives::StateID;

use super::{DfaLimits, Table, DEAD};
use crate::util::hash::FastMap;

/// Why a determinization stopped.
pub enum Stop {
    /// The table would exceed this many bytes.
    TooLarge,
    /// The NFA has look-around assertions (never made by our lexemes).
    LookAround,
    /// The compilation's deadline passed (the error says so).
    Deadline(crate::error::Error),
}

/// The DFA of `nfa` (anchored at its start), not minimized; state 0 is the
/// start, final states are those whose NFA set contains a match.
///
/// The deadline is checked by the work done ([`crate::limits::Meter`]):
/// a state's cost is its NFA set, the ranges its states leave on and the
/// closures of its successors, which the byte limit alone does not bound
/// (successors that are old states add no bytes).
pub fn determinize(nfa: &NFA, limits: &DfaLimits) -> Result<Table, Stop> {
    let max_bytes = limits.max_bytes;
    let mut meter = limits.deadline.meter();
    let (classes, reps) = class_table(nfa.byte_classes());
    let k = reps.len();
    let mut d = Determinizer {
        nfa,
        seen: vec![0; nfa.states().len()],
        stamp: 0,
        stack: Vec::new(),
    };
    let mut start = Vec::new();
    let work = d.closure(&[nfa.start_anchored()], &mut start)?;
    meter.step(work).map_err(Stop::Deadline)?;
    let mut ids: FastMap<Box<[u32]>, u32> = FastMap::default();
    ids.insert(start.clone().into_boxed_slice(), 0);
    let mut sets: Vec<Box<[u32]>> = vec![start.into_boxed_slice()];
    let mut trans: Vec<u32> = Vec::new();
    let mut is_final: Vec<bool> = Vec::new();
    let mut edges: Vec<Transition> = Vec::new();
    // Per elementary interval, the NFA states its bytes lead to:
    // `targets[first[w]..first[w + 1]]`.
    let mut first: Vec<u32> = Vec::new();
    let mut targets: Vec<StateID> = Vec::new();
    let mut next_set: Vec<u32> = Vec::new();
    // The DFA state of each list of NFA targets met so far (sorted, no
    // duplicates): intervals of many states lead to the same targets, and
    // looking them up costs the targets, not their closure.
    let mut by_targets: FastMap<Box<[u32]>, u32> = FastMap::default();
    let mut key: Vec<u32> = Vec::new();
    // The table and the NFA state sets kept to name DFA states, in u32s.
    let mut words = sets[0].len();
    let mut i = 0;
    while i < sets.len() {
        if (sets.len() * k + words) * 4 > max_bytes {
            return Err(Stop::TooLarge);
        }
        // The byte ranges the set's states leave on.
        edges.clear();
        let mut fin = false;
        for &s in sets[i].iter() {
            match nfa.state(StateID::new_unchecked(s as usize)) {
                State::ByteRange { trans } => edges.push(*trans),
                State::Sparse(sp) => edges.extend_from_slice(&sp.transitions),
                State::Dense(dt) => {
                    for b in 0..=255u8 {
                        let next = dt.transitions[b as usize];
                        if next != StateID::ZERO {
                            edges.push(Transition {
                                start: b,
                                end: b,
                                next,
                            });
                        }
                    }
                }
                State::Match { .. } => fin = true,
                _ => {}
            }
        }
        meter
            .step(sets[i].len() + edges.len() + k)
            .map_err(Stop::Deadline)?;
        is_final.push(fin);
        let row = trans.len();
        trans.resize(row + k, DEAD);
        // Elementary intervals between the ranges' ends (each a union of
        // whole byte classes): bit `b` of `cut` starts an interval at byte
        // `b` (bit 256 ends the last one).
        let mut cut = [0u64; 5];
        for e in &edges {
            for b in [e.start as usize, e.end as usize + 1] {
                cut[b >> 6] |= 1 << (b & 63);
            }
        }
        // The interval of each byte that starts one, by its rank.
        let mut rank = [0u16; 257];
        let mut cuts: Vec<u16> = Vec::with_capacity(64);
        for (w, &word) in cut.iter().enumerate() {
            let mut m = word;
            while m != 0 {
                let b = w * 64 + m.trailing_zeros() as usize;
                m &= m - 1;
                if b <= 256 {
                    rank[b] = cuts.len() as u16;
                    cuts.push(b as u16);
                }
            }
        }
        let intervals = cuts.len().saturating_sub(1);
        // Bucket the edges' targets by the intervals they cover (counted,
        // then placed).
        first.clear();
        first.resize(intervals + 1, 0);
        let mut covered = 0usize;
        for e in &edges {
            let (a, b) = (rank[e.start as usize], rank[e.end as usize + 1]);
            for w in a..b {
                first[w as usize + 1] += 1;
            }
            covered += (b - a) as usize;
        }
        meter.step(covered + intervals).map_err(Stop::Deadline)?;
        for w in 0..intervals {
            first[w + 1] += first[w];
        }
        targets.clear();
        targets.resize(covered, StateID::ZERO);
        let mut fill: Vec<u32> = first[..intervals].to_vec();
        for e in &edges {
            let (a, b) = (rank[e.start as usize], rank[e.end as usize + 1]);
            for w in a..b {
                targets[fill[w as usize] as usize] = e.next;
                fill[w as usize] += 1;
            }
        }
        for w in 0..intervals {
            let (lo, hi) = (cuts[w], cuts[w + 1] - 1);
            let ts = &targets[first[w] as usize..first[w + 1] as usize];
            if ts.is_empty() {
                continue;
            }
            key.clear();
            key.extend(ts.iter().map(|t| t.as_u32()));
            key.sort_unstable();
            key.dedup();
            meter.step(2 * ts.len()).map_err(Stop::Deadline)?;
            let id = match by_targets.get(key.as_slice()) {
                Some(&id) => id,
                None => {
                    let work = d.closure(ts, &mut next_set)?;
                    meter
                        .step(work + 2 * next_set.len())
                        .map_err(Stop::Deadline)?;
                    let id = if next_set.is_empty() {
                        DEAD
                    } else {
                        match ids.get(next_set.as_slice()) {
                            Some(&id) => id,
                            None => {
                                let id = sets.len() as u32;
                                let set: Box<[u32]> = next_set.clone().into_boxed_slice();
                                words += 2 * set.len();
                                ids.insert(set.clone(), id);
                                sets.push(set);
                                id
                            }
                        }
                    };
                    words += key.len();
                    by_targets.insert(key.as_slice().into(), id);
                    id
                }
            };
            if id == DEAD {
                continue;
            }
            // The classes of the interval's bytes (a class's bytes all
            // lie in the same intervals).
            let mut b = lo;
            while b <= hi {
                let c = classes[b as usize] as usize;
                trans[row + c] = id;
                b += 1;
            }
        }
        i += 1;
    }
    Ok(Table {
        classes,
        num_classes: k,
        trans,
        is_final,
    })
}

struct Determinizer<'a> {
    nfa: &'a NFA,
    /// `seen[s] == stamp`: state `s` is in the closure being built.
    seen: Vec<u32>,
    stamp: u32,
    stack: Vec<StateID>,
}

impl Determinizer<'_> {
    /// The states with byte transitions or a match reachable from `from`
    /// through epsilon transitions, sorted; the work it took (states
    /// visited, and sorted).
    fn closure(&mut self, from: &[StateID], out: &mut Vec<u32>) -> Result<usize, Stop> {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.iter_mut().for_each(|x| *x = 0);
            self.stamp = 1;
        }
        out.clear();
        self.stack.clear();
        self.stack.extend(from.iter().rev());
        let mut work = from.len();
        while let Some(s) = self.stack.pop() {
            work += 1;
            let seen = &mut self.seen[s.as_usize()];
            if *seen == self.stamp {
                continue;
            }
            *seen = self.stamp;
            match self.nfa.state(s) {
                State::ByteRange { .. }
                | State::Sparse(_)
                | State::Dense(_)
                | State::Match { .. } => out.push(s.as_u32()),
                State::Union { alternates } => self.stack.extend(alternates.iter().rev()),
                State::BinaryUnion { alt1, alt2 } => {
                    self.stack.push(*alt2);
                    self.stack.push(*alt1);
                }
                State::Capture { next, .. } => self.stack.push(*next),
                State::Look { .. } => return Err(Stop::LookAround),
                State::Fail => {}
            }
        }
        out.sort_unstable();
        Ok(work + out.len())
    }
}

/// `regex-automata`'s byte classes as a table, with the first byte of each
/// class (in class order).
pub(super) fn class_table(
    bc: &regex_automata::util::alphabet::ByteClasses,
) -> ([u8; 256], Vec<u8>) {
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for b in 0..=255u8 {
        let c = bc.get(b);
        classes[b as usize] = c;
        if c as usize >= reps.len() {
            reps.push(b);
        }
    }
    (classes, reps)
}
