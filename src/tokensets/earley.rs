//! The Earley parser over the compiled grammar's states.
//!
//! An item is `(state, origin)`: a position inside one compiled rule and the
//! input position where that rule started. The chart keeps one item set per
//! byte position (rules can be completed long after they started, so old
//! sets stay reachable through origins). Nullable rules are handled when
//! they are predicted (Aycock and Horspool), so completion never has to
//! look at the set being built.
//!
//! The same machinery runs mask walks: a [`Walker`] stacks scratch sets on
//! top of a read-only chart, one per byte of a trie path, and pops them when
//! the walk backtracks.

use super::grammar::CompiledGrammar;
use super::lexeme::Lexeme;
use crate::compile::lexeme::DEAD;
use crate::compile::RuleKind;
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

impl CompiledGrammar {
    #[inline]
    pub(crate) fn is_structural(&self, state: u32) -> bool {
        (state as usize) < self.structural.len()
    }

    #[inline]
    pub(crate) fn is_final(&self, state: u32) -> bool {
        if self.is_structural(state) {
            self.structural[state as usize].is_final
        } else {
            let (dfa, s) = self.lexeme_state(state);
            dfa.is_final_state(s)
        }
    }

    /// Start state of a compiled rule.
    #[inline]
    pub(crate) fn rule_start(&self, rule: u32) -> u32 {
        match &self.rules[rule as usize].kind {
            RuleKind::Structural { start } => *start,
            RuleKind::Lexeme { dfa, base } => base + dfa.start,
        }
    }

    /// Bytes the state itself can read next (not through predictions).
    pub(crate) fn direct_first(&self, state: u32) -> ByteSet {
        if self.is_structural(state) {
            self.structural[state as usize].direct_first
        } else {
            let (dfa, s) = self.lexeme_state(state);
            dfa.first_bytes_of(s)
        }
    }

    /// The state reads something next (a byte or a token).
    pub(crate) fn can_scan(&self, state: u32) -> bool {
        if self.is_structural(state) {
            !self.byte_edges(state).is_empty() || !self.token_edges(state).is_empty()
        } else {
            !self.direct_first(state).is_empty()
        }
    }

    /// Items reached from `set` by reading `byte`, appended to `out`.
    #[inline(always)]
    pub(crate) fn scan_byte(&self, set: &[Item], byte: u8, out: &mut Vec<Item>) {
        for it in set {
            if self.is_structural(it.state) {
                for &(lo, hi, t) in self.byte_edges(it.state) {
                    if lo <= byte && byte <= hi {
                        out.push(Item {
                            state: t,
                            origin: it.origin,
                        });
                    }
                }
            } else {
                let (dfa, s) = self.lexeme_state(it.state);
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
    pub(crate) fn advance_callers(&self, set: &[Item], rule: u32, out: &mut Vec<Item>) {
        for parent in set {
            if !self.is_structural(parent.state) {
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
    pub(crate) fn scan_token(&self, set: &[Item], token: u32, out: &mut Vec<Item>) {
        for it in set {
            if self.is_structural(it.state) {
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
    /// an earlier position `o`. Returns whether an item with [`CTX_ORIGIN`]
    /// was completed (the walked rule can end here).
    pub(crate) fn closure<'s>(
        &self,
        items: &mut Vec<Item>,
        pos: u32,
        older: impl Fn(u32) -> &'s [Item],
        scratch: &mut IntSet,
    ) -> bool {
        let mut dedup = Dedup::new(scratch);
        // Deduplicate the kernel.
        let kernel = std::mem::take(items);
        for it in &kernel {
            dedup.add(items, *it);
        }
        let mut exited = false;
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
                        super::work::charge(parents.len());
                        for parent in parents {
                            if !self.is_structural(parent.state) {
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
            if self.is_structural(it.state) {
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
        super::work::charge(dedup.offered);
        exited
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

    pub(crate) fn new(seen: &'a mut IntSet) -> Self {
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

/// Most lexeme items [`Walker::lexemes_only`] reads together.
pub const MAX_LEXEME_WALK: usize = 4;

/// Lexeme items read byte by byte with their DFAs alone (see
/// [`Walker::lexemes_only`]): `dfas[k]` in state `states[k]`, unused slots
/// `None`.
#[derive(Clone, Copy)]
pub struct LexemeWalk<'a> {
    pub dfas: [Option<&'a Lexeme>; MAX_LEXEME_WALK],
    pub states: [u32; MAX_LEXEME_WALK],
}

/// One byte read by every lexeme of a [`LexemeWalk`]: their new states
/// (`DEAD` where one died), whether one is alive, whether one can end.
pub struct LexemeStep {
    pub states: [u32; MAX_LEXEME_WALK],
    pub alive: bool,
    pub can_end: bool,
}

impl LexemeWalk<'_> {
    /// Reads `byte` from `from` (states of `self.dfas`, slot by slot).
    #[inline]
    pub fn step(&self, from: &[u32; MAX_LEXEME_WALK], byte: u8) -> LexemeStep {
        let mut out = LexemeStep {
            states: [crate::compile::lexeme::DEAD; MAX_LEXEME_WALK],
            alive: false,
            can_end: false,
        };
        for (x, dfa) in self.dfas.iter().enumerate() {
            let Some(dfa) = dfa else { break };
            if from[x] == crate::compile::lexeme::DEAD {
                continue;
            }
            let t = dfa.next(from[x], byte);
            out.states[x] = t;
            if t != crate::compile::lexeme::DEAD {
                out.alive = true;
                out.can_end |= dfa.is_final_state(t);
            }
        }
        out
    }

    /// Some lexeme in `states` reads trie node `i`'s whole subtree.
    pub fn reads_subtree(
        &self,
        trie: &crate::vocab::TokenTrie,
        i: u32,
        states: &[u32; MAX_LEXEME_WALK],
    ) -> bool {
        self.dfas.iter().zip(states).any(|(dfa, &s)| {
            dfa.is_some_and(|d| s != crate::compile::lexeme::DEAD && d.reads_subtree(trie, i, s))
        })
    }
}

/// Scratch item sets stacked on a read-only chart, for walks that try
/// bytes and back off.
pub struct Walker<'a> {
    g: &'a CompiledGrammar,
    base: &'a Chart,
    bufs: WalkerBuffers,
}

/// A walker's buffers, kept per thread between walks (see
/// [`Walker::new`]): a mask computes hundreds of parser-state token sets,
/// each with a walker of its own, and growing them afresh each time was a
/// fifth of such masks.
#[derive(Default)]
struct WalkerBuffers {
    /// Sets pushed by the walk; set `k` is at position `base.num_sets() + k`.
    own: Chart,
    /// Per pushed set: an item with [`CTX_ORIGIN`] completed there.
    exited: Vec<bool>,
    seen: IntSet,
    buf: Vec<Item>,
    /// Per pushed set: a number no other version of that set had (see
    /// `closures`).
    epochs: Vec<u64>,
    next_epoch: u64,
    /// Closed sets of small kernels (see [`Walker::push_items`]) by the
    /// kernel and the epoch of the latest set its origins refer to (one
    /// last item holds the epoch, see [`Walker::memo_key`]); the origin of
    /// items predicted in the new set is written [`HERE`].
    closures: crate::util::hash::FastMap<Box<[Item]>, Closed>,
    /// The key of the kernel being pushed (reused: most pushes find their
    /// closure memoized and allocate nothing).
    key: Vec<Item>,
}

thread_local! {
    static SPARE_BUFFERS: std::cell::Cell<Option<WalkerBuffers>> = const { std::cell::Cell::new(None) };
}

/// Buffers that grew past this many bytes are freed, not kept.
const SPARE_BUFFERS_MAX_BYTES: usize = 1 << 20;

impl WalkerBuffers {
    fn memory(&self) -> usize {
        self.own.memory()
            + self.exited.capacity()
            + (self.seen.capacity() + self.buf.capacity() + self.key.capacity()) * 8
            + self.epochs.capacity() * 8
            + self.closures.capacity() * 40
    }
}

impl Drop for Walker<'_> {
    fn drop(&mut self) {
        let bufs = std::mem::take(&mut self.bufs);
        if bufs.memory() <= SPARE_BUFFERS_MAX_BYTES {
            let _ = SPARE_BUFFERS.try_with(|spare| spare.set(Some(bufs)));
        }
    }
}

/// A memoized closure: its items and whether the walked rule ended.
type Closed = (Box<[Item]>, bool);

/// Origin of an item predicted in the set being built, in memoized
/// closures (the set's position replaces it).
const HERE: u32 = u32::MAX - 2;

/// Kernels up to this size are memoized by [`Walker::push_items`].
const MEMO_KERNEL_MAX: usize = 8;
/// Most closures a walker memoizes (cleared past this).
const MEMO_MAX: usize = 1024;

impl<'a> Walker<'a> {
    pub fn new(g: &'a CompiledGrammar, base: &'a Chart) -> Walker<'a> {
        let mut bufs = SPARE_BUFFERS
            .try_with(|spare| spare.take())
            .ok()
            .flatten()
            .unwrap_or_default();
        bufs.own.truncate(0);
        bufs.exited.clear();
        bufs.epochs.clear();
        bufs.closures.clear();
        bufs.next_epoch = 1;
        Walker { g, base, bufs }
    }

    fn base_len(&self) -> u32 {
        self.base.num_sets() as u32
    }

    /// Pushes a set made of `kernel`, closed. Returns false (and pushes
    /// nothing) when it is empty.
    pub fn push_kernel(&mut self, kernel: &[Item]) -> bool {
        let mut items = std::mem::take(&mut self.bufs.buf);
        items.clear();
        items.extend_from_slice(kernel);
        self.push_items(items)
    }

    /// Closes `items` into a new set. A closure reads the sets its items
    /// started in (and through them the sets below), and items predicted
    /// here start here: a kernel closes the same way wherever the walk is,
    /// as long as those sets are the same versions. Small kernels are
    /// memoized by the kernel and the version of the latest set they refer
    /// to, so that walks that leave a rule the same way from many trie
    /// nodes (a closing quote after many different strings) close the set
    /// after it once.
    fn push_items(&mut self, mut items: Vec<Item>) -> bool {
        if items.is_empty() || super::work::exhausted() {
            self.bufs.buf = items;
            return false;
        }
        let bl = self.base_len();
        let pos = bl + self.bufs.own.num_sets() as u32;
        let memo = items.len() <= MEMO_KERNEL_MAX;
        if memo {
            self.memo_key(&items, bl, pos);
        }
        if let Some((closed, exited)) = memo
            .then(|| self.bufs.closures.get(&self.bufs.key[..]))
            .flatten()
        {
            items.clear();
            items.extend(closed.iter().map(|it| Item {
                state: it.state,
                origin: if it.origin == HERE { pos } else { it.origin },
            }));
            super::work::charge(items.len());
            self.bufs.own.push_set(&items);
            self.bufs.exited.push(*exited);
            self.bufs.epochs.push(self.bufs.next_epoch);
            self.bufs.next_epoch += 1;
            self.bufs.buf = items;
            return true;
        }
        let (base, own) = (self.base, &self.bufs.own);
        let exited = self.g.closure(
            &mut items,
            pos,
            |o| {
                if o < bl {
                    base.set(o as usize)
                } else {
                    own.set((o - bl) as usize)
                }
            },
            &mut self.bufs.seen,
        );
        if memo {
            if self.bufs.closures.len() >= MEMO_MAX {
                self.bufs.closures.clear();
            }
            let k = self.bufs.key.as_slice().into();
            let closed = items
                .iter()
                .map(|it| Item {
                    state: it.state,
                    origin: if it.origin == pos { HERE } else { it.origin },
                })
                .collect();
            self.bufs.closures.insert(k, (closed, exited));
        }
        self.bufs.own.push_set(&items);
        self.bufs.exited.push(exited);
        self.bufs.epochs.push(self.bufs.next_epoch);
        self.bufs.next_epoch += 1;
        self.bufs.buf = items;
        true
    }

    /// Sets `self.bufs.key` to the memo key of kernel `items` pushed at `pos`
    /// (`bl` sets below the walk): the kernel sorted and without repeats,
    /// then the epoch of the latest pushed set its origins refer to, as one
    /// more item.
    fn memo_key(&mut self, items: &[Item], bl: u32, pos: u32) {
        let key = &mut self.bufs.key;
        key.clear();
        key.extend_from_slice(items);
        key.sort_unstable();
        key.dedup();
        let latest = key
            .iter()
            .filter(|it| it.origin >= bl && it.origin < pos)
            .map(|it| it.origin)
            .max();
        let epoch = latest.map_or(0, |o| self.bufs.epochs[(o - bl) as usize]);
        key.push(Item {
            state: (epoch >> 32) as u32,
            origin: epoch as u32,
        });
    }

    /// Reads one byte from the top set. Returns false (and pushes nothing)
    /// when no item can read it.
    #[inline]
    pub fn push_byte(&mut self, byte: u8) -> bool {
        let mut kernel = std::mem::take(&mut self.bufs.buf);
        kernel.clear();
        let set = self.bufs.own.last();
        super::work::charge(set.len());
        self.g.scan_byte(set, byte, &mut kernel);
        self.push_items(kernel)
    }

    /// Replaces the items of the top set (already closed) with `items`.
    pub fn replace_top(&mut self, items: &[Item]) {
        let n = self.bufs.own.num_sets();
        let exited = self.bufs.exited[n - 1];
        self.bufs.own.truncate(n - 1);
        self.bufs.own.push_set(items);
        self.bufs.exited.truncate(n - 1);
        self.bufs.exited.push(exited);
        self.bufs.epochs[n - 1] = self.bufs.next_epoch;
        self.bufs.next_epoch += 1;
    }

    /// The top set's items when all of them are inside lexemes (at most
    /// [`MAX_LEXEME_WALK`], none of which can end here): their DFAs and
    /// states. From such a set, bytes can be read with the DFAs alone until
    /// one of the lexemes can end.
    pub fn lexemes_only(&self) -> Option<LexemeWalk<'a>> {
        let top = self.bufs.own.last();
        if top.is_empty() || top.len() > MAX_LEXEME_WALK {
            return None;
        }
        let mut walk = LexemeWalk {
            dfas: [None; MAX_LEXEME_WALK],
            states: [crate::compile::lexeme::DEAD; MAX_LEXEME_WALK],
        };
        for (k, it) in top.iter().enumerate() {
            if self.g.is_structural(it.state) {
                return None;
            }
            let (dfa, s) = self.g.walked_lexeme_state(it.state);
            if dfa.is_final_state(s) {
                return None;
            }
            walk.dfas[k] = Some(dfa);
            walk.states[k] = s;
        }
        Some(walk)
    }

    /// Number of pushed sets.
    pub fn depth(&self) -> usize {
        self.bufs.own.num_sets()
    }

    /// Keeps the first `n` pushed sets.
    pub fn truncate(&mut self, n: usize) {
        self.bufs.own.truncate(n);
        self.bufs.exited.truncate(n);
        self.bufs.epochs.truncate(n);
    }

    pub fn top_exited(&self) -> bool {
        *self.bufs.exited.last().unwrap_or(&false)
    }

    pub fn top(&self) -> &[Item] {
        self.bufs.own.last()
    }

    /// The bytes the top set's items can read.
    pub fn top_first(&self) -> ByteSet {
        let mut first = ByteSet::EMPTY;
        for x in self.top() {
            let f = self.g.direct_first(x.state);
            first |= f;
        }
        first
    }
}
