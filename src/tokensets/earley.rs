//! The Earley walker of mask walks: the parser automaton's steps
//! ([`crate::compile::chart`]) on scratch sets, one per byte of a trie
//! path, stacked on top of a read-only chart and popped when the walk
//! backtracks, with the closures it has seen kept per thread.

use super::grammar::CompiledGrammar;
use super::lexeme::Lexeme;
use crate::compile::chart::{Chart, IntSet, Item};
use crate::util::byteset::ByteSet;

/// Most lexeme items [`Walker::lexemes_only`] reads together.
pub const MAX_LEXEME_WALK: usize = 4;

/// Lexeme items read byte by byte with their DFAs alone (see
/// [`Walker::lexemes_only`]): `lexemes[k]` in state `states[k]`, unused slots
/// `None`.
#[derive(Clone, Copy)]
pub struct LexemeWalk<'a> {
    pub lexemes: [Option<&'a Lexeme>; MAX_LEXEME_WALK],
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
    /// Reads `byte` from `from` (states of `self.lexemes`, slot by slot).
    #[inline]
    pub fn step(&self, from: &[u32; MAX_LEXEME_WALK], byte: u8) -> LexemeStep {
        let mut out = LexemeStep {
            states: [crate::compile::lexeme::DEAD; MAX_LEXEME_WALK],
            alive: false,
            can_end: false,
        };
        for (x, lexeme) in self.lexemes.iter().enumerate() {
            let Some(lexeme) = lexeme else { break };
            if from[x] == crate::compile::lexeme::DEAD {
                continue;
            }
            let t = lexeme.dfa().next(from[x], byte);
            out.states[x] = t;
            if t != crate::compile::lexeme::DEAD {
                out.alive = true;
                out.can_end |= lexeme.dfa().is_final_state(t);
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
        self.lexemes.iter().zip(states).any(|(lexeme, &s)| {
            lexeme.is_some_and(|d| s != crate::compile::lexeme::DEAD && d.reads_subtree(trie, i, s))
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
        let closure = self.g.automaton().closure(
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
        super::work::charge(closure.work);
        let exited = closure.exited;
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
        self.g.automaton().scan_byte(set, byte, &mut kernel);
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
            lexemes: [None; MAX_LEXEME_WALK],
            states: [crate::compile::lexeme::DEAD; MAX_LEXEME_WALK],
        };
        for (k, it) in top.iter().enumerate() {
            if self.g.automaton().is_parser_state(it.state) {
                return None;
            }
            let (lexeme, s) = self.g.walked_lexeme_state(it.state);
            if lexeme.dfa().is_final_state(s) {
                return None;
            }
            walk.lexemes[k] = Some(lexeme);
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
            let f = self.g.automaton().direct_first(x.state);
            first |= f;
        }
        first
    }
}
