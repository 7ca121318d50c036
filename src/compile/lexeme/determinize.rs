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
use crate::hash::FastMap;

/// Why a determinization stopped.
pub enum Stop {
    /// The table would exceed this many bytes.
    TooLarge(usize),
    /// The NFA has look-around assertions (never made by our lexemes).
    LookAround,
    /// The compilation's deadline passed (the error says so).
    Deadline(crate::error::Error),
}

/// The DFA of `nfa` (anchored at its start), not minimized; state 0 is the
/// start, final states are those whose NFA set contains a match.
pub fn determinize(nfa: &NFA, limits: &DfaLimits) -> Result<Table, Stop> {
    let max_bytes = limits.max_bytes;
    let (classes, reps) = super::class_table(nfa.byte_classes());
    let k = reps.len();
    let mut d = Determinizer {
        nfa,
        seen: vec![0; nfa.states().len()],
        stamp: 0,
        stack: Vec::new(),
    };
    let mut start = Vec::new();
    d.closure(&[nfa.start_anchored()], &mut start)?;
    let mut ids: FastMap<Box<[u32]>, u32> = FastMap::default();
    ids.insert(start.clone().into_boxed_slice(), 0);
    let mut sets: Vec<Box<[u32]>> = vec![start.into_boxed_slice()];
    let mut trans: Vec<u32> = Vec::new();
    let mut is_final: Vec<bool> = Vec::new();
    let mut edges: Vec<Transition> = Vec::new();
    let mut targets: Vec<StateID> = Vec::new();
    let mut next_set: Vec<u32> = Vec::new();
    let mut cuts: Vec<u16> = Vec::new();
    // The table and the NFA state sets kept to name DFA states, in u32s.
    let mut words = sets[0].len();
    let mut i = 0;
    while i < sets.len() {
        if (sets.len() * k + words) * 4 > max_bytes {
            return Err(Stop::TooLarge(max_bytes));
        }
        if i % 256 == 255 {
            limits.deadline.check().map_err(Stop::Deadline)?;
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
        is_final.push(fin);
        let row = trans.len();
        trans.resize(row + k, DEAD);
        // Elementary intervals between the ranges' ends; each is a union of
        // whole byte classes.
        cuts.clear();
        for e in &edges {
            cuts.push(e.start as u16);
            cuts.push(e.end as u16 + 1);
        }
        cuts.sort_unstable();
        cuts.dedup();
        for w in 0..cuts.len().saturating_sub(1) {
            let (lo, hi) = (cuts[w], cuts[w + 1] - 1);
            targets.clear();
            for e in &edges {
                if e.start as u16 <= lo && hi <= e.end as u16 {
                    targets.push(e.next);
                }
            }
            if targets.is_empty() {
                continue;
            }
            d.closure(&targets, &mut next_set)?;
            if next_set.is_empty() {
                continue;
            }
            let id = match ids.get(next_set.as_slice()) {
                Some(&id) => id,
                None => {
                    let id = sets.len() as u32;
                    let set: Box<[u32]> = next_set.clone().into_boxed_slice();
                    words += 2 * set.len();
                    ids.insert(set.clone(), id);
                    sets.push(set);
                    id
                }
            };
            // The classes of the interval's bytes (a class's bytes all
            // lie in the same intervals, so its first byte decides).
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
    /// through epsilon transitions, sorted.
    fn closure(&mut self, from: &[StateID], out: &mut Vec<u32>) -> Result<(), Stop> {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.iter_mut().for_each(|x| *x = 0);
            self.stamp = 1;
        }
        out.clear();
        self.stack.clear();
        self.stack.extend(from.iter().rev());
        while let Some(s) = self.stack.pop() {
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
        Ok(())
    }
}
