//! The parser automaton's semantics: Earley items and charts, and the
//! steps over them (scan a byte or a token, complete, predict).
//!
//! An item is `(state, origin)`: a position inside one compiled rule and the
//! input position where that rule started. The chart keeps one item set per
//! byte position (rules can be completed long after they started, so old
//! sets stay reachable through origins). Nullable rules are handled when
//! they are predicted (Aycock and Horspool), so completion never has to
//! look at the set being built.
//!
//! This is the automaton alone, immutable data: the matcher runs it on its
//! chart, and the token-set layer's walker (`tokensets::earley`) runs it on
//! scratch sets stacked on top of one.

use super::lexeme::{LexemeDfa, DEAD};
use super::{Automaton, RuleKind};
use crate::util::byteset::ByteSet;

/// Origin of the synthetic start item: its completion feeds nothing.
pub const NO_ORIGIN: u32 = u32::MAX;
/// Origin used by context-free walks: completing this item leaves the walked
/// rule, whose caller is unknown.
pub const CTX_ORIGIN: u32 = u32::MAX - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Item {
    pub state: u32,
    pub origin: u32,
}

impl Item {
    #[inline]
    fn key(self) -> u64 {
        ((self.state as u64) << 32) | self.origin as u64
    }
}

pub type IntSet = crate::util::hash::FastSet<u64>;

/// Item sets by position.
#[derive(Clone, Debug)]
pub struct Chart {
    items: Vec<Item>,
    /// `starts[k]` = index of set k's first item; one more entry than sets.
    starts: Vec<u32>,
}

impl Default for Chart {
    fn default() -> Chart {
        Chart::new()
    }
}

impl Chart {
    pub fn new() -> Chart {
        Chart {
            items: Vec::new(),
            starts: vec![0],
        }
    }

    pub fn num_sets(&self) -> usize {
        self.starts.len() - 1
    }

    #[inline]
    pub fn set(&self, k: usize) -> &[Item] {
        &self.items[self.starts[k] as usize..self.starts[k + 1] as usize]
    }

    pub fn last(&self) -> &[Item] {
        self.set(self.num_sets() - 1)
    }

    /// Appends a set.
    pub fn push_set(&mut self, items: &[Item]) {
        self.items.extend_from_slice(items);
        self.starts.push(self.items.len() as u32);
    }

    /// Keeps the first `n` sets.
    pub fn truncate(&mut self, n: usize) {
        self.starts.truncate(n + 1);
        self.items.truncate(*self.starts.last().unwrap() as usize);
    }

    pub fn memory(&self) -> usize {
        self.items.capacity() * 8 + self.starts.capacity() * 4
    }
}

/// Reusable buffers for closures.
#[derive(Default)]
pub struct Scratch {
    pub seen: IntSet,
    pub kernel: Vec<Item>,
}

/// What a [`Automaton::closure`] found and cost.
pub struct Closure {
    /// An item with [`CTX_ORIGIN`] was completed: the walked rule can end
    /// here.
    pub exited: bool,
    /// Parent items read and items offered, repeats included: what a mask
    /// charges to its work budget.
    pub work: usize,
}

impl Automaton {
    /// A lexeme state's DFA, and its state in it.
    #[inline(always)]
    pub fn dfa_state(&self, state: u32) -> (&LexemeDfa, u32) {
        match &self.rules[self.rule_of(state) as usize].kind {
            RuleKind::Lexeme { dfa, base } => (dfa, state - base),
            RuleKind::Parser { .. } => unreachable!("not a lexeme state"),
        }
    }

    #[inline]
    pub fn is_parser_state(&self, state: u32) -> bool {
        (state as usize) < self.parser_states.len()
    }

    #[inline]
    pub fn is_final(&self, state: u32) -> bool {
        if self.is_parser_state(state) {
            self.parser_states[state as usize].is_final
        } else {
            let (dfa, s) = self.dfa_state(state);
            dfa.is_final_state(s)
        }
    }

    /// Start state of a compiled rule.
    #[inline]
    pub fn rule_start(&self, rule: u32) -> u32 {
        match &self.rules[rule as usize].kind {
            RuleKind::Parser { start } => *start,
            RuleKind::Lexeme { dfa, base } => base + dfa.start,
        }
    }

    /// Bytes the state itself can read next (not through predictions).
    pub fn direct_first(&self, state: u32) -> ByteSet {
        if self.is_parser_state(state) {
            self.parser_states[state as usize].direct_first
        } else {
            let (dfa, s) = self.dfa_state(state);
            dfa.first_bytes_of(s)
        }
    }

    /// The state reads something next (a byte or a token).
    pub fn can_scan(&self, state: u32) -> bool {
        if self.is_parser_state(state) {
            !self.byte_edges(state).is_empty() || !self.token_edges(state).is_empty()
        } else {
            !self.direct_first(state).is_empty()
        }
    }

    /// Items reached from `set` by reading `byte`, appended to `out`.
    #[inline(always)]
    pub fn scan_byte(&self, set: &[Item], byte: u8, out: &mut Vec<Item>) {
        for it in set {
            if self.is_parser_state(it.state) {
                for &(lo, hi, t) in self.byte_edges(it.state) {
                    if lo <= byte && byte <= hi {
                        out.push(Item {
                            state: t,
                            origin: it.origin,
                        });
                    }
                }
            } else {
                let (dfa, s) = self.dfa_state(it.state);
                let t = dfa.next(s, byte);
                if t != DEAD {
                    out.push(Item {
                        state: it.state - s + t,
                        origin: it.origin,
                    });
                }
            }
        }
    }

    /// The callers in `set` of compiled rule `rule`, advanced past the
    /// call (what comes after the rule finishes), appended to `out`.
    pub fn advance_callers(&self, set: &[Item], rule: u32, out: &mut Vec<Item>) {
        for parent in set {
            if !self.is_parser_state(parent.state) {
                continue;
            }
            for &(_, t) in self.call_edges_to(parent.state, rule) {
                out.push(Item {
                    state: t,
                    origin: parent.origin,
                });
            }
        }
    }

    /// Items reached from `set` by reading the whole token `token` through
    /// token elements, appended to `out`.
    pub fn scan_token(&self, set: &[Item], token: u32, out: &mut Vec<Item>) {
        for it in set {
            if self.is_parser_state(it.state) {
                for &(ts, t) in self.token_edges(it.state) {
                    if self.token_sets[ts as usize].contains(token) {
                        out.push(Item {
                            state: t,
                            origin: it.origin,
                        });
                    }
                }
            }
        }
    }

    /// Completes and predicts: turns `items` (the kernel of the set at
    /// position `pos`) into a closed item set. `older(o)` gives the set at
    /// an earlier position `o`.
    pub fn closure<'s>(
        &self,
        items: &mut Vec<Item>,
        pos: u32,
        older: impl Fn(u32) -> &'s [Item],
        scratch: &mut IntSet,
    ) -> Closure {
        let mut dedup = Dedup::new(scratch);
        // Deduplicate the kernel.
        let kernel = std::mem::take(items);
        for it in &kernel {
            dedup.add(items, *it);
        }
        let mut exited = false;
        let mut parents_read = 0;
        let mut k = 0;
        while k < items.len() {
            let it = items[k];
            k += 1;
            if self.is_final(it.state) {
                match it.origin {
                    NO_ORIGIN => {}
                    CTX_ORIGIN => exited = true,
                    o if o == pos => {}
                    o => {
                        let rule = self.rule_of(it.state);
                        let parents = older(o);
                        parents_read += parents.len();
                        for parent in parents {
                            if !self.is_parser_state(parent.state) {
                                continue;
                            }
                            for &(_, t) in self.call_edges_to(parent.state, rule) {
                                dedup.add(
                                    items,
                                    Item {
                                        state: t,
                                        origin: parent.origin,
                                    },
                                );
                            }
                        }
                    }
                }
            }
            if self.is_parser_state(it.state) {
                for &(r, t) in self.call_edges(it.state) {
                    dedup.add(
                        items,
                        Item {
                            state: self.rule_start(r),
                            origin: pos,
                        },
                    );
                    if self.rules[r as usize].nullable {
                        dedup.add(
                            items,
                            Item {
                                state: t,
                                origin: it.origin,
                            },
                        );
                    }
                }
            }
        }
        Closure {
            exited,
            work: parents_read + dedup.offered,
        }
    }
}

/// Set membership for items being collected: a linear scan while the set
/// is small (the common case), a hash set once it grows.
struct Dedup<'a> {
    seen: &'a mut IntSet,
    hashed: bool,
    /// Items offered, repeats included: the closure's work.
    offered: usize,
}

impl<'a> Dedup<'a> {
    const LINEAR_MAX: usize = 24;

    pub fn new(seen: &'a mut IntSet) -> Self {
        Dedup {
            seen,
            hashed: false,
            offered: 0,
        }
    }

    #[inline]
    fn add(&mut self, items: &mut Vec<Item>, it: Item) {
        self.offered += 1;
        if !self.hashed {
            if items.contains(&it) {
                return;
            }
            items.push(it);
            if items.len() > Self::LINEAR_MAX {
                self.seen.clear();
                self.seen.extend(items.iter().map(|x| x.key()));
                self.hashed = true;
            }
        } else if self.seen.insert(it.key()) {
            items.push(it);
        }
    }
}
