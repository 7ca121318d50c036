//! Token sets per automaton state, computed once and reused by every mask.
//!
//! For a state `q` of rule `R`, a walk of the token trie from `q` alone,
//! with the caller of `R` unknown, splits the text tokens into:
//! - **inside**: tokens whose bytes can all be read without leaving `R`
//!   (rules called from `R` may be entered and left). They are allowed
//!   whenever an item at `q` is, whatever the context.
//! - **exits**: tokens whose bytes can only be read by finishing `R`
//!   after some prefix and going on in the caller. They are kept as
//!   `(trie node, prefix length)` pairs grouped by the first byte after the
//!   prefix (parser-rule states keep only bytes that can follow `R` in the
//!   grammar; lexeme states keep all, so that grammars share them); the
//!   matcher checks them against the real callers at mask time.
//! - everything else is never allowed at `q`.
//!
//! Lexeme states are walked with the DFA alone, and their results are
//! cached per vocabulary (keyed by the lexeme and the state's token
//! class), so that grammars share them; so are the walks of each first-byte
//! subtree, which many states of a lexeme share. Parser-rule states are
//! walked with the Earley walker and cached per grammar; wherever only
//! lexeme items are left, the walk goes on with their DFAs. Trie subtrees
//! that a DFA state reads entirely (by byte groups, or by characters for
//! multi-byte UTF-8) are taken whole.

use std::sync::Arc;

use super::earley::{Chart, Item, LexemeWalk, Walker, CTX_ORIGIN, MAX_LEXEME_WALK};
use crate::compile::lexeme::{CountedString, LexemeDfa, StringCounts, DEAD};
use crate::compile::CompiledGrammar;
use crate::util::byteset::{byteset_contains, ByteSet};
use crate::util::hash::FastMap;
use crate::vocab::trie::{byte_group, INSIDE_CHAR};
use crate::vocab::{TokenTrie, Vocab};

/// A set of token ids.
pub enum TokenList {
    /// A full mask (one bit per token id).
    Dense(Box<[u32]>),
    /// Token ids.
    Sparse(Box<[u32]>),
}

impl TokenList {
    /// The set of `ids` (in any order, repeats allowed).
    pub fn from_ids(ids: Vec<u32>, vocab: &Vocab) -> TokenList {
        if ids.len() > vocab.len() / 32 {
            let mut words = vec![0u32; vocab.mask_words()];
            for id in ids {
                words[(id >> 5) as usize] |= 1 << (id & 31);
            }
            TokenList::Dense(words.into_boxed_slice())
        } else {
            TokenList::Sparse(ids.into_boxed_slice())
        }
    }

    /// The tokens of trie-order ranges (see [`TokenTrie::token_ids`]).
    pub fn from_trie_ranges(ranges: &[(u32, u32)], vocab: &Vocab) -> TokenList {
        let ids = vocab.trie().token_ids();
        let count: usize = ranges.iter().map(|r| (r.1 - r.0) as usize).sum();
        if count > ids.len() / 2 {
            // Mostly everything: all tokens but the gaps between ranges.
            let mut words = vec![0u32; vocab.mask_words()];
            let all = vocab.trie().all_tokens();
            words[..all.len()].copy_from_slice(all);
            let mut at = 0u32;
            for &(lo, hi) in ranges.iter().chain([(ids.len() as u32, 0)].iter()) {
                for &id in &ids[at as usize..lo as usize] {
                    words[(id >> 5) as usize] &= !(1 << (id & 31));
                }
                at = hi;
            }
            TokenList::Dense(words.into_boxed_slice())
        } else if count > vocab.len() / 32 {
            let mut words = vec![0u32; vocab.mask_words()];
            for &(lo, hi) in ranges {
                for &id in &ids[lo as usize..hi as usize] {
                    words[(id >> 5) as usize] |= 1 << (id & 31);
                }
            }
            TokenList::Dense(words.into_boxed_slice())
        } else {
            let mut list = Vec::with_capacity(count);
            for &(lo, hi) in ranges {
                list.extend_from_slice(&ids[lo as usize..hi as usize]);
            }
            TokenList::Sparse(list.into_boxed_slice())
        }
    }

    /// Sets the tokens' bits in `mask`.
    #[inline]
    pub fn or_into(&self, mask: &mut [u32]) {
        match self {
            TokenList::Dense(w) => {
                for (m, x) in mask.iter_mut().zip(w.iter()) {
                    *m |= *x;
                }
            }
            TokenList::Sparse(ids) => {
                for &id in ids.iter() {
                    mask[(id >> 5) as usize] |= 1 << (id & 31);
                }
            }
        }
    }

    pub fn memory(&self) -> usize {
        match self {
            TokenList::Dense(w) => w.len() * 4,
            TokenList::Sparse(ids) => ids.len() * 4,
        }
    }
}

/// A mask being filled (see `Matcher::fill_mask`), cleared lazily: the
/// first dense token set is copied in rather than OR'ed into zeros, one
/// pass over the mask instead of two. A mask whose sets are cached is a
/// few dense sets, and moving them through memory is most of its cost.
pub struct MaskFill<'m> {
    mask: &'m mut [u32],
    /// Nothing written yet: the words are stale and count as zeros.
    clean: bool,
}

impl<'m> MaskFill<'m> {
    pub fn new(mask: &'m mut [u32]) -> MaskFill<'m> {
        MaskFill { mask, clean: true }
    }

    /// The mask's words, cleared first if nothing was written yet.
    pub fn words(&mut self) -> &mut [u32] {
        if self.clean {
            self.mask.fill(0);
            self.clean = false;
        }
        self.mask
    }

    /// Sets the bits of `list`.
    #[inline]
    pub fn add(&mut self, list: &TokenList) {
        match list {
            TokenList::Dense(w) if self.clean => {
                let (head, tail) = self.mask.split_at_mut(w.len());
                head.copy_from_slice(w);
                tail.fill(0);
                self.clean = false;
            }
            _ => list.or_into(self.words()),
        }
    }
}

/// The exit tokens of a state in one context (see `Matcher::fill_mask`):
/// the part every context with the same lexemes next shares, and the rest.
pub struct ExitTokens {
    pub free: Option<Arc<FreeExits>>,
    pub rest: TokenList,
}

impl ExitTokens {
    /// Sets the tokens' bits in `mask`.
    pub fn or_into(&self, mask: &mut MaskFill) {
        if let Some(f) = &self.free {
            mask.add(&f.tokens);
        }
        mask.add(&self.rest);
    }

    /// Approximate heap bytes of the part not shared.
    pub fn memory(&self) -> usize {
        self.rest.memory()
    }
}

/// Tokens that leave the walked rule after `depth` bytes: the tokens at
/// and below trie node `node` (only those strictly below it when `below`),
/// whose byte `depth` (0-based) is `first` (when `depth` is the node's own
/// depth, `below` is set and the first bytes are those of its children).
///
/// `below` exits come from a lexeme that ends at the node and can read
/// nothing more (a closing quote, a full chunk): every token longer than
/// the node's path leaves it there, and one exit stands for all of them
/// instead of one per child.
#[derive(Clone, Copy, Debug)]
pub struct Exit {
    pub node: u32,
    pub depth: u16,
    pub first: u8,
    pub below: bool,
}

impl Exit {
    /// The exit's first byte after the rule is only known per child.
    fn at_node(&self, trie: &TokenTrie) -> bool {
        self.below && self.depth == trie.nodes()[self.node as usize].depth
    }
}

/// The bytes of `exit`'s tokens read after the rule ended, down to its node
/// (all its tokens share them).
pub fn exit_remainder<'v>(vocab: &'v Vocab, exit: &Exit) -> &'v [u8] {
    &vocab.trie().path(exit.node)[exit.depth as usize..]
}

/// Feeds exit remainders, in sorted order, to a [`Walker`] whose first
/// `base` sets stay: a common beginning with the previous remainder is not
/// read again, and remainders starting with a beginning already known to
/// fail are refused at once.
pub struct PrefixWalk {
    base: usize,
    /// Bytes read above the base, and whether the walked rule can end after
    /// each.
    read: Vec<u8>,
    exited: Vec<bool>,
    /// A beginning that cannot be read.
    dead: Option<Vec<u8>>,
}

impl PrefixWalk {
    pub fn new(base: usize) -> PrefixWalk {
        PrefixWalk {
            base,
            read: Vec::new(),
            exited: Vec::new(),
            dead: None,
        }
    }

    /// Reads `rem`. `Ok(())`: the walker is right after it; `Err(k)`: only
    /// its first `k` bytes can be read.
    pub fn reach(&mut self, walker: &mut Walker, rem: &[u8]) -> Result<(), usize> {
        if let Some(d) = &self.dead {
            if rem.starts_with(d) {
                return Err(d.len() - 1);
            }
        }
        let lcp = self
            .read
            .iter()
            .zip(rem)
            .take_while(|(a, b)| a == b)
            .count();
        walker.truncate(self.base + lcp);
        self.read.truncate(lcp);
        self.exited.truncate(lcp);
        for &b in &rem[lcp..] {
            if !walker.push_byte(b) {
                let mut d = self.read.clone();
                d.push(b);
                self.dead = Some(d);
                return Err(self.read.len());
            }
            self.read.push(b);
            self.exited.push(walker.top_exited());
        }
        Ok(())
    }

    /// Whether the walked rule can end after each of the first bytes read.
    pub fn exited(&self) -> &[bool] {
        &self.exited
    }
}

/// The token sets of one automaton state.
pub struct TokenInfo {
    pub inside: TokenList,
    /// Lexeme token sets whose inside tokens are inside this state too (the
    /// lexemes this parser-rule state can start right away): kept by
    /// reference so that each big set is stored once per vocabulary.
    pub shared: Vec<Arc<TokenInfo>>,
    /// Sorted by `first`, then the exits at their node's depth (see
    /// [`Exit`]), from `at_node`.
    pub exits: Box<[Exit]>,
    /// `(first byte, index of its first exit)`, ascending, before
    /// `at_node`.
    pub exit_runs: Box<[(u8, u32)]>,
    at_node: u32,
}

impl TokenInfo {
    fn new(inside: TokenList, mut exits: Vec<Exit>, vocab: &Vocab) -> TokenInfo {
        // By first byte, then by (the first 8 of) the bytes read after the
        // rule, so that exits with a common beginning are walked together
        // (the order only saves work: any order gives the same tokens);
        // exits at their node, whose first byte is per child, last.
        let trie = vocab.trie();
        exits.sort_by_cached_key(|e| {
            if e.at_node(trie) {
                return (1, 0, e.node as u64);
            }
            let rem = exit_remainder(vocab, e);
            let mut key = [0u8; 8];
            let n = rem.len().min(8);
            key[..n].copy_from_slice(&rem[..n]);
            (0, e.first, u64::from_be_bytes(key))
        });
        let at_node = exits.partition_point(|e| !e.at_node(trie));
        TokenInfo::from_sorted(inside, exits, at_node)
    }

    /// `exits` sorted as [`TokenInfo::new`] sorts them, those at their node
    /// from `at_node`.
    fn from_sorted(inside: TokenList, exits: Vec<Exit>, at_node: usize) -> TokenInfo {
        let mut runs: Vec<(u8, u32)> = Vec::new();
        for (i, e) in exits[..at_node].iter().enumerate() {
            if runs.last().map(|r| r.0) != Some(e.first) {
                runs.push((e.first, i as u32));
            }
        }
        TokenInfo {
            inside,
            shared: Vec::new(),
            exits: exits.into_boxed_slice(),
            exit_runs: runs.into_boxed_slice(),
            at_node: at_node as u32,
        }
    }

    /// The token sets of a state that reads what this one (inside "any
    /// string") reads but between `min` and `max` characters before its
    /// closing quote: the tokens with more characters before it go, and
    /// those with a quote after fewer, inside and exits (an exit's tokens
    /// share their bytes up to its node, where the quote is).
    fn within_chars(&self, vocab: &Vocab, chars: &TokenChars, min: usize, max: usize) -> TokenInfo {
        let mut words = vec![0u32; vocab.mask_words()];
        self.or_inside_into(&mut words);
        chars.clear_outside(&mut words, min, max);
        let trie = vocab.trie();
        let keep = |e: &Exit| {
            let r = trie.subtree_tokens(e.node);
            let id = trie.token_ids()[r.end as usize - 1];
            (min..=max).contains(&(chars.before_quote[id as usize] as usize))
        };
        let exits: Vec<Exit> = self.exits.iter().filter(|e| keep(e)).copied().collect();
        let at_node = self.exits[..self.at_node as usize]
            .iter()
            .filter(|e| keep(e))
            .count();
        TokenInfo::from_sorted(TokenList::Dense(words.into_boxed_slice()), exits, at_node)
    }

    /// The token sets of a state that reads exactly `left` more
    /// characters of a string (no quote) and then ends, from those of
    /// "any string" (`self`): inside are its inside tokens without a
    /// closing quote and with at most `left` characters; every token
    /// longer than `left` whole characters leaves it there, so its exits
    /// are the trie nodes spelling `left` characters (`nodes`), all below.
    fn exactly_chars(
        &self,
        vocab: &Vocab,
        chars: &TokenChars,
        left: usize,
        nodes: &[u32],
    ) -> TokenInfo {
        let mut words = vec![0u32; vocab.mask_words()];
        self.or_inside_into(&mut words);
        for (w, &closed) in words.iter_mut().zip(chars.closed.iter()) {
            *w &= !closed;
        }
        chars.clear_outside(&mut words, 0, left);
        let trie = vocab.trie();
        let exits = nodes
            .iter()
            .map(|&node| Exit {
                node,
                depth: trie.nodes()[node as usize].depth,
                first: 0,
                below: true,
            })
            .collect();
        TokenInfo::from_sorted(TokenList::Dense(words.into_boxed_slice()), exits, 0)
    }

    /// The token sets of a counted string (`self`, see
    /// [`TokenInfo::within_chars`]) in a lexeme that goes on from state
    /// `after_quote` of `dfa` after the closing quote: the tokens that
    /// leave the string at its quote (its exits, all below a quote node)
    /// are read on by the lexeme, a walk below each quote node (few tokens
    /// go on after a quote).
    fn then_reading(self, vocab: &Vocab, dfa: &LexemeDfa, after_quote: u32) -> TokenInfo {
        let trie = vocab.trie();
        let mut words = vec![0u32; vocab.mask_words()];
        self.inside.or_into(&mut words);
        let mut walk = DfaWalk::new(vocab, dfa);
        let mut exits = Vec::new();
        for e in self.exits.iter() {
            debug_assert!(e.at_node(trie), "an exit of a string not at its quote");
            let piece = subtree_walk(&mut walk, e.node as usize, after_quote);
            for &(lo, hi) in piece.ranges.iter() {
                for &id in &trie.token_ids()[lo as usize..hi as usize] {
                    words[id as usize >> 5] |= 1 << (id & 31);
                }
            }
            exits.extend_from_slice(&piece.exits);
        }
        TokenInfo::new(TokenList::Dense(words.into_boxed_slice()), exits, vocab)
    }

    /// The exits whose first byte after the rule is in `allowed`, but for
    /// the exits at their node (see [`TokenInfo::exits_at_node`]).
    pub fn exits_starting_with<'a>(
        &'a self,
        allowed: &'a ByteSet,
    ) -> impl Iterator<Item = &'a Exit> + 'a {
        let at_node = self.at_node as usize;
        self.exit_runs
            .iter()
            .enumerate()
            .filter(move |(_, (b, _))| byteset_contains(allowed, *b))
            .flat_map(move |(k, &(_, start))| {
                let end = self.exit_runs.get(k + 1).map_or(at_node, |r| r.1 as usize);
                self.exits[start as usize..end].iter()
            })
    }

    /// The exits at their node's depth (see [`Exit`]): every child of the
    /// node leaves the rule, whatever its byte.
    pub fn exits_at_node(&self) -> &[Exit] {
        &self.exits[self.at_node as usize..]
    }

    /// Every exit whose first byte after the rule is in `allowed`, those at
    /// their node split into one per child (`(child, depth)`), grouped by
    /// that byte: walks with a parser read the byte after the rule once
    /// for all the exits that share it (see [`PrefixWalk`]).
    pub fn exits_by_child(&self, trie: &TokenTrie, allowed: &ByteSet) -> Vec<Exit> {
        let mut out: Vec<Exit> = self.exits_starting_with(allowed).copied().collect();
        let from = out.len();
        let nodes = trie.nodes();
        for x in self.exits_at_node() {
            let end = nodes[x.node as usize].subtree_end as usize;
            let mut c = x.node as usize + 1;
            while c < end {
                let b = nodes[c].byte;
                if byteset_contains(allowed, b) {
                    out.push(Exit {
                        node: c as u32,
                        depth: x.depth,
                        first: b,
                        below: false,
                    });
                }
                c = nodes[c].subtree_end as usize;
            }
        }
        out[from..].sort_by_key(|e| e.first);
        out
    }

    pub fn memory(&self) -> usize {
        self.inside.memory()
            + self.exits.len() * 8
            + self.exit_runs.len() * 8
            + self.shared.len() * 8
    }

    /// Sets the bits of every inside token (own and shared) in `mask`,
    /// but for the token sets `seen` lists (and lists those it sets).
    pub fn or_inside_once(&self, mask: &mut MaskFill, seen: &mut SeenSets) {
        if seen.insert(self) {
            mask.add(&self.inside);
            for s in &self.shared {
                s.or_inside_once(mask, seen);
            }
        }
    }

    /// Sets the bits of every inside token (own and shared) in `mask`.
    pub fn or_inside_into(&self, mask: &mut [u32]) {
        self.inside.or_into(mask);
        for s in &self.shared {
            s.inside.or_into(mask);
        }
    }
}

/// Token sets (by address) already set in a mask.
#[derive(Default)]
pub struct SeenSets {
    list: Vec<*const TokenInfo>,
    /// Past a few dozen sets (an object's states in one chart set).
    set: crate::util::hash::FastSet<*const TokenInfo>,
}

impl SeenSets {
    /// Whether `info` was not listed yet; lists it.
    fn insert(&mut self, info: &TokenInfo) -> bool {
        let p: *const TokenInfo = info;
        if self.list.len() < 32 {
            if self.list.contains(&p) {
                return false;
            }
            self.list.push(p);
            true
        } else {
            !self.list.contains(&p) && self.set.insert(p)
        }
    }
}

/// Walks the whole trie with `walker` (its one set is the start),
/// collecting inside tokens and exits whose first byte is in `follow`.
pub fn walk_trie(
    trie: &TokenTrie,
    walker: &mut Walker,
    follow: &ByteSet,
    inside: &mut Vec<u32>,
    exits: &mut Vec<Exit>,
) {
    let mut walk = Dfs::new(trie, follow, inside, exits);
    walk.children(walker, None);
}

/// Nodes with subtrees larger than this are entered by their children
/// (see [`Dfs::children`]) rather than one by one.
const FILTER_CHILDREN_ABOVE: usize = 64;

/// One depth-first walk over trie nodes with an Earley [`Walker`], with its
/// bookkeeping. Inside a lexeme that cannot end yet the walk switches to
/// the lexeme's DFA (no parser work per byte).
pub(crate) struct Dfs<'a> {
    pub trie: &'a TokenTrie,
    follow: &'a ByteSet,
    pub inside: &'a mut Vec<u32>,
    exits: &'a mut Vec<Exit>,
    /// Depths (bytes read) after which the walked rule could end, on the
    /// current path.
    pending: Vec<u16>,
    /// `path[d]` = byte at depth `d` of the current path.
    path: Vec<u8>,
    /// The lexemes' DFA states by depth (fast path, see
    /// [`Walker::lexemes_only`]).
    dfa_stack: Vec<[u32; MAX_LEXEME_WALK]>,
}

impl<'a> Dfs<'a> {
    pub fn new(
        trie: &'a TokenTrie,
        follow: &'a ByteSet,
        inside: &'a mut Vec<u32>,
        exits: &'a mut Vec<Exit>,
    ) -> Dfs<'a> {
        Dfs {
            trie,
            follow,
            inside,
            exits,
            pending: Vec::new(),
            path: vec![0; 2],
            dfa_stack: Vec::new(),
        }
    }

    fn set_path(&mut self, depth: usize, byte: u8) {
        if self.path.len() <= depth {
            self.path.resize(depth + 1, 0);
        }
        self.path[depth] = byte;
    }

    fn pop_pending(&mut self, depth: usize) {
        while self.pending.last().is_some_and(|&p| p as usize >= depth) {
            self.pending.pop();
        }
    }

    /// Records the exits of a subtree the walk cannot enter (node `i`; only
    /// the tokens strictly below it when `below`).
    fn pruned(&mut self, i: usize, below: bool) {
        for &pd in &self.pending {
            let first = self.path[pd as usize + 1];
            if byteset_contains(self.follow, first) {
                self.exits.push(Exit {
                    node: i as u32,
                    depth: pd,
                    first,
                    below,
                });
            }
        }
    }

    fn accept_node(&mut self, i: usize) {
        let r = self.trie.tokens_at(i as u32);
        self.inside
            .extend_from_slice(&self.trie.token_ids()[r.start as usize..r.end as usize]);
    }

    /// Adds the tokens ending at node `i`.
    pub fn accept_node_pub(&mut self, i: usize) {
        self.accept_node(i);
    }

    fn accept_subtree(&mut self, i: usize) {
        let r = self.trie.subtree_tokens(i as u32);
        self.inside
            .extend_from_slice(&self.trie.token_ids()[r.start as usize..r.end as usize]);
    }

    /// Walks the subtree below node `c`, the walker being at `c`.
    /// Children whose byte no item of the walker reads are skipped without
    /// a parser step.
    pub fn below(&mut self, walker: &mut Walker, c: usize) {
        let nodes = self.trie.nodes();
        let n = nodes[c];
        if c + 1 >= n.subtree_end as usize {
            return;
        }
        if let Some(lexemes) = walker.lexemes_only() {
            let sets = walker.depth();
            self.dfa_subtree(walker, sets, c, lexemes);
            return;
        }
        self.children(walker, Some(c));
    }

    /// Walks the subtrees of the children of node `parent` (`None`: the
    /// root), the walker being at it. A parser set can hold thousands of
    /// items: children whose byte none of them reads are skipped without
    /// scanning it.
    fn children(&mut self, walker: &mut Walker, parent: Option<usize>) {
        let nodes = self.trie.nodes();
        let (first, end, depth) = match parent {
            Some(p) => (
                p + 1,
                nodes[p].subtree_end as usize,
                nodes[p].depth as usize,
            ),
            None => (0, self.trie.root_end() as usize, 0),
        };
        let readable = walker.top_first();
        let offset = walker.depth() - 1;
        let mut at = WalkerAt { walker, offset };
        // Unless the walked rule could end above, the children no item
        // reads add nothing: many children, few bytes read (a key's quote
        // after whitespace), take those read by index.
        self.pop_pending(depth + 1);
        if self.pending.is_empty() {
            if let Some(read) = self.trie.wide_children(parent.map(|p| p as u32), readable) {
                for child in read {
                    let child = child as usize;
                    self.range(&mut at, child, nodes[child].subtree_end as usize, depth);
                }
                return;
            }
        }
        let mut child = first;
        while child < end {
            let next = nodes[child].subtree_end as usize;
            let byte = nodes[child].byte;
            if byteset_contains(&readable, byte) {
                self.range(&mut at, child, next, depth);
            } else {
                // What `range` does where the byte cannot be read (nothing
                // unless the walked rule could end above).
                let d = depth + 1;
                self.pop_pending(d);
                if !self.pending.is_empty() {
                    self.set_path(d, byte);
                    self.pruned(child, false);
                }
            }
            child = next;
        }
    }

    /// Walks nodes `first..end` (siblings and their subtrees, children of
    /// one node at depth `base`); the walker view is in that node's state.
    pub fn range(&mut self, at: &mut WalkerAt, first: usize, end: usize, base: usize) {
        let nodes = self.trie.nodes();
        let mut i = first;
        while i < end {
            let n = nodes[i];
            let d = n.depth as usize;
            at.truncate(d - base - 1);
            self.pop_pending(d);
            self.set_path(d, n.byte);
            if !at.walker.push_byte(n.byte) {
                self.pruned(i, false);
                i = n.subtree_end as usize;
                continue;
            }
            self.accept_node(i);
            if at.walker.top_exited() {
                self.pending.push(d as u16);
            }
            if i + 1 < n.subtree_end as usize {
                if let Some(lexemes) = at.walker.lexemes_only() {
                    let top = at.walker.depth();
                    self.dfa_subtree(at.walker, top, i, lexemes);
                    i = n.subtree_end as usize;
                    continue;
                }
                if n.subtree_end as usize - i > FILTER_CHILDREN_ABOVE {
                    self.children(at.walker, Some(i));
                    i = n.subtree_end as usize;
                    continue;
                }
            }
            i += 1;
        }
    }

    /// The subtree below node `top` (where the walker has `sets` sets, all
    /// of whose top items are inside the `lexemes`, none able to end), read
    /// with the DFAs until one of the lexemes can end, where the parser
    /// takes over again. A token is inside if some lexeme reads it.
    fn dfa_subtree(&mut self, walker: &mut Walker, sets: usize, top: usize, lexemes: LexemeWalk) {
        let nodes = self.trie.nodes();
        let dtop = nodes[top].depth as usize;
        let end = nodes[top].subtree_end as usize;
        let base_len = self.dfa_stack.len();
        self.dfa_stack.push(lexemes.states);
        let mut j = top + 1;
        while j < end {
            let n = nodes[j];
            let d = n.depth as usize;
            let rel = d - dtop;
            self.dfa_stack.truncate(base_len + rel);
            self.pop_pending(d);
            self.set_path(d, n.byte);
            let step = lexemes.step(&self.dfa_stack[base_len + rel - 1], n.byte);
            let (after, alive, can_end) = (step.states, step.alive, step.can_end);
            if !alive {
                self.pruned(j, false);
                j = n.subtree_end as usize;
                continue;
            }
            if !can_end {
                if lexemes.reads_subtree(self.trie, j as u32, &after) {
                    self.accept_subtree(j);
                    j = n.subtree_end as usize;
                    continue;
                }
                self.accept_node(j);
                self.dfa_stack.push(after);
                j += 1;
                continue;
            }
            // A lexeme can end here: bring the parser to this node and let
            // it walk the subtree.
            self.accept_node(j);
            walker.truncate(sets);
            let mut synced = true;
            for k in dtop + 1..=d {
                if !walker.push_byte(self.path[k]) {
                    synced = false;
                    break;
                }
            }
            debug_assert!(synced, "the DFAs and the parser disagree");
            if synced {
                if walker.top_exited() {
                    self.pending.push(d as u16);
                }
                let offset = walker.depth() - 1;
                let mut at = WalkerAt { walker, offset };
                self.range(&mut at, j + 1, n.subtree_end as usize, d);
            }
            j = n.subtree_end as usize;
        }
        self.dfa_stack.truncate(base_len);
    }
}

/// The part of a lexeme state's exit tokens that does not depend on the
/// context: what the lexemes predicted right after it read before any of
/// them can end (see [`free_exits`]).
pub struct FreeExits {
    /// Tokens allowed in every context with these lexemes next.
    pub tokens: TokenList,
    /// Where a lexeme can end, so that the callers decide: `(node, depth)`:
    /// read the bytes of node `node`'s path from `depth` on with the real
    /// parser, then walk below the node (its own tokens are in `tokens`).
    pub syncs: Box<[(u32, u16)]>,
    /// Exits to check whole with the real parser (a lexeme can end inside
    /// the bytes before their node).
    pub whole: Box<[Exit]>,
}

/// Walks the exits of `info` whose first byte is in `first` with the DFAs of
/// `next` alone (the lexeme items that can read the first byte after the
/// walked lexeme ends, and nothing else can): tokens are collected until
/// one of the lexemes can end; there the walk stops and notes where the
/// parser must take over.
pub fn free_exits(vocab: &Vocab, info: &TokenInfo, first: &ByteSet, next: LexemeWalk) -> FreeExits {
    let trie = vocab.trie();
    let nodes = trie.nodes();
    let step = |from: &[u32; MAX_LEXEME_WALK], b: u8| {
        let s = next.step(from, b);
        (s.states, s.alive, s.can_end)
    };
    let mut tokens: Vec<u32> = Vec::new();
    let mut syncs = Vec::new();
    let mut whole = Vec::new();
    let mut stack: Vec<[u32; MAX_LEXEME_WALK]> = Vec::new();
    let add = |tokens: &mut Vec<u32>, r: std::ops::Range<u32>| {
        tokens.extend_from_slice(&trie.token_ids()[r.start as usize..r.end as usize]);
    };
    let at_node = info.exits_at_node().iter();
    'exits: for exit in info.exits_starting_with(first).chain(at_node) {
        let rem = exit_remainder(vocab, exit);
        let mut states = next.states;
        for (i, &b) in rem.iter().enumerate() {
            let (to, alive, can_end) = step(&states, b);
            if !alive {
                continue 'exits;
            }
            if can_end && i + 1 < rem.len() {
                whole.push(*exit);
                continue 'exits;
            }
            states = to;
        }
        let c = exit.node as usize;
        if !exit.below {
            add(&mut tokens, trie.tokens_at(c as u32));
        }
        // (A lexeme of `next` that can end before reading anything is
        // followed by items of `next` too: nothing for the parser there.)
        let can_end = !rem.is_empty()
            && next
                .dfas
                .iter()
                .zip(&states)
                .any(|(d, &st)| d.is_some_and(|d| st != DEAD && d.is_final_state(st)));
        if can_end {
            // Only the tokens below the node are left to the parser.
            if c + 1 < nodes[c].subtree_end as usize {
                syncs.push((c as u32, exit.depth));
            }
            continue;
        }
        // Below the exit's node, as `Dfs::dfa_subtree` without a parser;
        // all at once where the lexemes read every string there.
        if next.reads_subtree(trie, c as u32, &states) {
            add(
                &mut tokens,
                trie.nodes()[c + 1].tok_start..trie.subtree_tokens(c as u32).end,
            );
            continue;
        }
        let top = nodes[c].depth as usize;
        stack.clear();
        stack.push(states);
        let mut j = c + 1;
        while j < nodes[c].subtree_end as usize {
            let n = nodes[j];
            let rel = n.depth as usize - top;
            stack.truncate(rel);
            let (to, alive, can_end) = step(&stack[rel - 1], n.byte);
            if !alive {
                j = n.subtree_end as usize;
                continue;
            }
            if can_end {
                add(&mut tokens, trie.tokens_at(j as u32));
                if j + 1 < n.subtree_end as usize {
                    syncs.push((j as u32, exit.depth));
                }
                j = n.subtree_end as usize;
                continue;
            }
            if next.reads_subtree(trie, j as u32, &to) {
                add(&mut tokens, trie.subtree_tokens(j as u32));
                j = n.subtree_end as usize;
                continue;
            }
            add(&mut tokens, trie.tokens_at(j as u32));
            stack.push(to);
            j += 1;
        }
    }
    FreeExits {
        tokens: TokenList::from_ids(tokens, vocab),
        syncs: syncs.into_boxed_slice(),
        whole: whole.into_boxed_slice(),
    }
}

/// A [`Walker`] seen from a trie node: its first `offset` sets are below
/// the node, set `offset` is the node's.
pub(crate) struct WalkerAt<'w, 'a> {
    pub walker: &'w mut Walker<'a>,
    pub offset: usize,
}

impl WalkerAt<'_, '_> {
    /// Keeps the state after `depth` bytes below the node.
    fn truncate(&mut self, depth: usize) {
        self.walker.truncate(self.offset + depth + 1);
    }
}

/// One subtree of the trie walked from one DFA state, its node read into
/// that state with nothing to exit above it (a first byte, see
/// [`lexeme_info`]; a node inside "any other string"; a closing quote):
/// its accepted tokens as trie-order ranges, and its exits.
pub struct SubtreeWalk {
    ranges: Box<[(u32, u32)]>,
    exits: Box<[Exit]>,
}

impl SubtreeWalk {
    /// Approximate heap bytes, with its place in [`SubtreeWalks`].
    fn memory(&self) -> usize {
        self.ranges.len() * 8 + self.exits.len() * std::mem::size_of::<Exit>() + 64
    }
}

/// A lexeme's [`SubtreeWalk`]s, keyed by (token class of the state its node
/// is read into, trie node of the subtree).
#[derive(Default)]
pub struct SubtreeWalks {
    map: FastMap<(u32, u32), Arc<SubtreeWalk>>,
    /// Ranges and exits stored so far.
    entries: usize,
}

/// Most ranges and exits one lexeme keeps in [`SubtreeWalks`]; beyond it,
/// new walks are used once and dropped.
const SUBTREE_WALKS_MAX_ENTRIES: usize = 1 << 22;

/// Depth-first walk of trie nodes with a lexeme DFA alone.
struct DfaWalk<'a> {
    trie: &'a TokenTrie,
    dfa: &'a LexemeDfa,
    /// DFA state after the byte at each depth of the current path.
    stack: Vec<u32>,
    /// The byte at each depth of the current path.
    path: Vec<u8>,
    /// Depths of the current path after which the lexeme could end.
    pending: Vec<u16>,
    /// Per depth: the groups (bytes, characters) whose subtrees the nodes
    /// there are read whole with: what their parent's state reads (see
    /// [`SafeGroups`]) up to the height of the parent's subtree, so that a
    /// child's subtree, no taller, is read whole without a step of the DFA
    /// (by characters only where the parent ends a character, else 0).
    child_groups: Vec<(u64, u64)>,
    /// Accepted tokens, trie-order ranges.
    ranges: Vec<(u32, u32)>,
    exits: Vec<Exit>,
    /// Where the DFA is inside "any other string", if it can be.
    body: Option<SharedBody<'a>>,
}

/// The states of a walk's DFA equal to states of the vocabulary's
/// [`StringBody`] (inside "any other string", as a key that leaves every
/// listed name is): below them, the walk takes that DFA's walks (shared by
/// every lexeme).
struct SharedBody<'a> {
    /// Per state of the walk's DFA, the equal state of "any string" (see
    /// [`LexemeDfa::string_body_states`]), or [`DEAD`].
    like: &'a [u32],
    /// A walk of "any string".
    walk: Box<DfaWalk<'a>>,
}

impl SharedBody<'_> {
    /// The state of "any string" equal to `t`, or [`DEAD`].
    #[inline]
    fn like(&self, t: u32) -> u32 {
        self.like[t as usize]
    }
}

impl<'a> DfaWalk<'a> {
    fn new(vocab: &'a Vocab, dfa: &'a LexemeDfa) -> DfaWalk<'a> {
        let max = vocab.max_token_len() + 2;
        let body = vocab.lexemes.string_body().and_then(|b| {
            let like = dfa.string_body_states(b);
            like.iter().any(|&t| t != DEAD).then(|| SharedBody {
                like,
                walk: Box::new(DfaWalk::new(vocab, &b.dfa)),
            })
        });
        DfaWalk {
            trie: vocab.trie(),
            dfa,
            stack: vec![DEAD; max],
            path: vec![0; max],
            pending: Vec::new(),
            child_groups: vec![(0, 0); max + 1],
            ranges: Vec::new(),
            exits: Vec::new(),
            body,
        }
    }

    /// The walk of the subtree of node `i` read into state `t`, shared
    /// with "any string" where `t` is inside it.
    fn piece(&mut self, i: usize, t: u32) -> Arc<SubtreeWalk> {
        match &mut self.body {
            Some(b) if b.like(t) != DEAD => {
                let any = b.like(t);
                subtree_walk(&mut b.walk, i, any)
            }
            _ => subtree_walk(self, i, t),
        }
    }

    fn add_range(&mut self, lo: u32, hi: u32) {
        if lo < hi {
            match self.ranges.last_mut() {
                Some(r) if r.1 == lo => r.1 = hi,
                _ => self.ranges.push((lo, hi)),
            }
        }
    }

    /// Node `i` read into DFA state `t` (not dead): takes its subtree whole
    /// when every string below can be read from `t`, else its own tokens.
    /// Returns whether the walk must go on below `i`.
    #[inline(always)]
    fn enter(&mut self, i: usize, t: u32) -> bool {
        let nodes = self.trie.nodes();
        let n = nodes[i];
        if i + 1 == n.subtree_end as usize {
            // A leaf: its tokens are read, and nothing is below.
            self.add_range(n.tok_start, nodes[i + 1].tok_start);
            return false;
        }
        // What `t` reads at this subtree's heights serves both the
        // whole-subtree test and the children's (see `child_groups`); by
        // characters only where bytes do not tell (a subtree with
        // multi-byte characters).
        let trie = self.trie;
        let bytes = self.dfa.safe_bytes(trie, t, trie.height_below(i as u32));
        let whole =
            |this: &mut Self| this.add_range(n.tok_start, nodes[n.subtree_end as usize].tok_start);
        if trie.groups_below(i as u32) & !bytes == 0 {
            whole(self);
            return false;
        }
        let below = trie.char_groups_below(i as u32);
        let chars = if below & INSIDE_CHAR != 0 {
            0
        } else {
            self.dfa
                .safe_chars(trie, t, trie.char_height_below(i as u32))
                & !INSIDE_CHAR
        };
        if below & INSIDE_CHAR == 0 && below & !chars == 0 {
            whole(self);
            return false;
        }
        if self.pending.is_empty() && self.body.as_ref().is_some_and(|b| b.like(t) != DEAD) {
            // Nothing exits above: the subtree is "any string"'s.
            let piece = self.piece(i, t);
            for &(lo, hi) in piece.ranges.iter() {
                self.add_range(lo, hi);
            }
            self.exits.extend_from_slice(&piece.exits);
            return false;
        }
        self.add_range(n.tok_start, nodes[i + 1].tok_start);
        let d = n.depth as usize;
        if self.dfa.is_final_state(t) && self.dfa.first_bytes_of(t) == [0; 4] {
            // The lexeme ends here and reads nothing more: every token
            // below leaves it, here or where it could end before.
            if i + 1 < n.subtree_end as usize {
                for k in 0..=self.pending.len() {
                    let pd = self.pending.get(k).map_or(d, |&p| p as usize);
                    self.exits.push(Exit {
                        node: i as u32,
                        depth: pd as u16,
                        first: if pd < d { self.path[pd + 1] } else { 0 },
                        below: true,
                    });
                }
            }
            return false;
        }
        self.child_groups[d + 1] = (bytes, chars);
        self.stack[d] = t;
        if self.dfa.is_final_state(t) {
            self.pending.push(d as u16);
        }
        true
    }

    /// Node `i` (at depth `d`) and its subtree are read whole by what its
    /// parent's state reads (see `child_groups`): an ASCII
    /// byte whose group, and the groups below, are all safe.
    #[inline]
    fn read_whole_by_parent(&self, i: usize, d: usize) -> bool {
        let (bytes, chars) = self.child_groups[d];
        let node = self.trie.nodes()[i];
        if node.byte >= 0x80 {
            return false;
        }
        let own = 1u64 << byte_group(node.byte);
        let below = i as u32;
        (own | self.trie.groups_below(below)) & !bytes == 0
            || (own | self.trie.char_groups_below(below)) & !chars == 0
    }

    /// Walks nodes `first..end`, where `stack` holds the states of the path
    /// above `first`.
    fn walk(&mut self, first: usize, end: usize) {
        let nodes = self.trie.nodes();
        let mut i = first;
        while i < end {
            let n = nodes[i];
            let d = n.depth as usize;
            while self.pending.last().is_some_and(|&p| p as usize >= d) {
                self.pending.pop();
            }
            self.path[d] = n.byte;
            if self.read_whole_by_parent(i, d) {
                self.add_range(n.tok_start, nodes[n.subtree_end as usize].tok_start);
                i = n.subtree_end as usize;
                continue;
            }
            let t = self.dfa.next(self.stack[d - 1], n.byte);
            if t != DEAD {
                if self.enter(i, t) {
                    i += 1;
                } else {
                    i = n.subtree_end as usize;
                }
            } else {
                for &pd in &self.pending {
                    self.exits.push(Exit {
                        node: i as u32,
                        depth: pd,
                        first: self.path[pd as usize + 1],
                        below: false,
                    });
                }
                i = n.subtree_end as usize;
            }
        }
    }

    /// The walk of the subtree of node `i`, read into state `t`, where the
    /// lexeme could not end before the node (see [`SubtreeWalk`]).
    fn subtree(&mut self, i: usize, t: u32) -> SubtreeWalk {
        self.ranges.clear();
        self.exits.clear();
        self.pending.clear();
        let n = self.trie.nodes()[i];
        self.path[n.depth as usize] = n.byte;
        if self.enter(i, t) {
            self.walk(i + 1, n.subtree_end as usize);
        }
        SubtreeWalk {
            ranges: std::mem::take(&mut self.ranges).into_boxed_slice(),
            exits: std::mem::take(&mut self.exits).into_boxed_slice(),
        }
    }
}

/// Token sets of DFA state `state` of a lexeme.
///
/// The same walk as [`walk_trie`], specialised to a DFA: a subtree whose
/// strings can all be read is taken whole (see [`SafeGroups`]), and
/// accepted tokens are collected as trie-order ranges. Exits are kept
/// whatever their first byte (users filter them with
/// [`TokenInfo::exits_starting_with`]), so the result depends on the
/// lexeme alone and every grammar of the vocabulary shares it.
///
/// Each first-byte subtree depends only on the state reached on its byte
/// (tokens that start after the lexeme ends are not exits here: the
/// lexeme's callers, in the same chart set, cover them): those walks are
/// kept per lexeme and reused. Many states of a lexeme reach the same few
/// states on most bytes (a key that no listed name continues is read by
/// one "any other string" state), so a new state costs a lookup per first
/// byte instead of a walk of the whole trie.
pub fn lexeme_info(vocab: &Vocab, dfa: &LexemeDfa, state: u32) -> TokenInfo {
    let trie = vocab.trie();
    let nodes = trie.nodes();
    // (Subtrees inside "any other string" take that DFA's walks.)
    let mut walk = DfaWalk::new(vocab, dfa);
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    let mut exits = Vec::new();
    let mut i = 0;
    while i < trie.root_end() as usize {
        let n = nodes[i];
        let t = dfa.next(state, n.byte);
        if t != DEAD {
            let piece = walk.piece(i, t);
            for &(lo, hi) in piece.ranges.iter() {
                match ranges.last_mut() {
                    Some(r) if r.1 == lo => r.1 = hi,
                    _ => ranges.push((lo, hi)),
                }
            }
            exits.extend_from_slice(&piece.exits);
        }
        i = n.subtree_end as usize;
    }
    TokenInfo::new(TokenList::from_trie_ranges(&ranges, vocab), exits, vocab)
}

/// The walk of the subtree of node `i` read into state `t` of `walk`'s
/// DFA (see [`DfaWalk::subtree`]), kept in the DFA's [`SubtreeWalks`].
fn subtree_walk(walk: &mut DfaWalk, i: usize, t: u32) -> Arc<SubtreeWalk> {
    let dfa = walk.dfa;
    let key = (dfa.token_class(t, walk.trie.max_len()), i as u32);
    let known = dfa.pieces.lock().unwrap().map.get(&key).cloned();
    known.unwrap_or_else(|| {
        let p = Arc::new(walk.subtree(i, t));
        let mut pieces = dfa.pieces.lock().unwrap();
        if pieces.entries < SUBTREE_WALKS_MAX_ENTRIES {
            pieces.entries += p.ranges.len() + p.exits.len();
            pieces.map.insert(key, p.clone());
            dfa.note_learned(p.memory());
        }
        p
    })
}

/// Token sets of parser-rule state `state`.
///
/// The lexemes the state can start right away are not walked here: their
/// (per-vocabulary) token sets are included by reference, and only their
/// exits (tokens that finish the lexeme and go on in this rule) are walked,
/// from the set reached after the lexeme.
pub fn structural_info(g: &CompiledGrammar, state: u32) -> TokenInfo {
    let empty = Chart::new();
    let mut walker = Walker::new(g, &empty);
    let started = walker.push_kernel(&[Item {
        state,
        origin: CTX_ORIGIN,
    }]);
    if !started {
        // Only an exhausted work budget stops a one-item kernel: the mask
        // fails, and this (empty, partial) info is not cached.
        return TokenInfo::new(
            TokenList::from_ids(Vec::new(), g.vocab()),
            Vec::new(),
            g.vocab(),
        );
    }
    let set0: Vec<Item> = walker.top().to_vec();
    let (lexemes, rest): (Vec<Item>, Vec<Item>) = set0
        .iter()
        .partition(|it| !g.is_structural(it.state) && it.origin == 0);
    walker.replace_top(&rest);
    let follow = g.rules[g.rule_of(state) as usize].follow;
    let trie = g.vocab().trie();
    let mut inside = Vec::new();
    let mut exits = Vec::new();
    walk_trie(trie, &mut walker, &follow, &mut inside, &mut exits);
    let mut shared = Vec::new();
    for li in &lexemes {
        let info = info_for(g, li.state);
        if !info.exits.is_empty() {
            // The set right after the lexeme ends: its callers in set 0,
            // advanced.
            let rule = g.rule_of(li.state);
            let mut kernel = Vec::new();
            g.advance_callers(&set0, rule, &mut kernel);
            walker.truncate(1);
            walker.replace_top(&set0);
            if walker.push_kernel(&kernel) {
                let mut first: ByteSet = [0; 4];
                for x in walker.top() {
                    let f = g.direct_first(x.state);
                    for k in 0..4 {
                        first[k] |= f[k];
                    }
                }
                let after = walker.top_exited();
                if after {
                    // This rule can end with the lexeme: whatever may follow
                    // the rule may come next.
                    for k in 0..4 {
                        first[k] |= follow[k];
                    }
                }
                let mut dfs = Dfs::new(trie, &follow, &mut inside, &mut exits);
                let mut pw = PrefixWalk::new(2);
                for exit in &info.exits_by_child(trie, &first) {
                    remainder(&mut dfs, g.vocab(), &mut walker, &mut pw, exit, after);
                }
            }
        }
        // Small sets are copied in (one list is faster to apply than
        // several); big ones stay shared.
        match &info.inside {
            TokenList::Sparse(ids) => inside.extend_from_slice(ids),
            TokenList::Dense(_) => shared.push(info.clone()),
        }
        for s in &info.shared {
            shared.push(s.clone());
        }
    }
    let mut info = TokenInfo::new(TokenList::from_ids(inside, g.vocab()), exits, g.vocab());
    info.shared = shared;
    info
}

/// Walks the tokens of a lexeme's `exit` from the set right after the
/// lexeme (the walker's set 1; `exited`: the walked rule can end there),
/// adding what is inside and what exits the walked rule to `dfs`.
fn remainder(
    dfs: &mut Dfs,
    vocab: &Vocab,
    walker: &mut Walker,
    pw: &mut PrefixWalk,
    exit: &Exit,
    exited: bool,
) {
    let trie = dfs.trie;
    let c = exit.node as usize;
    let d = exit.depth as usize;
    let rem = exit_remainder(vocab, exit);
    for (k, &b) in rem.iter().enumerate() {
        dfs.set_path(d + 1 + k, b);
    }
    let reached = pw.reach(walker, rem);
    let readable = match reached {
        Ok(()) => rem.len(),
        Err(k) => k,
    };
    dfs.pending.clear();
    if exited {
        dfs.pending.push(d as u16);
    }
    for (k, &e) in pw.exited()[..readable].iter().enumerate() {
        if e {
            dfs.pending.push((d + 1 + k) as u16);
        }
    }
    if reached.is_err() {
        dfs.pruned(c, exit.below);
        return;
    }
    // Node c itself is read: its tokens are inside (unless the exit is for
    // the tokens below it only).
    if !exit.below {
        let r = trie.tokens_at(c as u32);
        dfs.inside
            .extend_from_slice(&trie.token_ids()[r.start as usize..r.end as usize]);
    }
    dfs.below(walker, c);
}

/// The cached token sets of any state (computed on first use). A parser
/// state's sets computed when the mask's work budget ran out are partial:
/// returned, never cached (see [`super::work`]).
pub fn info_for(g: &CompiledGrammar, state: u32) -> Arc<TokenInfo> {
    if g.is_structural(state) {
        let cell = &g.structural_infos[state as usize];
        if let Some(info) = cell.get() {
            return info.clone();
        }
        let info = Arc::new(structural_info(g, state));
        if super::work::exhausted() {
            return info;
        }
        cell.get_or_init(|| info).clone()
    } else {
        let (dfa, s) = g.lexeme_state(state);
        lexeme_state_info(g.vocab(), dfa, s)
    }
}

/// The cached token sets of state `s` of a lexeme: its own, or those of
/// the vocabulary's shared string DFAs where they agree.
fn lexeme_state_info(vocab: &Vocab, dfa: &LexemeDfa, s: u32) -> Arc<TokenInfo> {
    // States that no token can tell apart share one token set.
    let s = dfa.token_class(s, vocab.max_token_len());
    if let Some(counter) = &dfa.counter {
        if let Some(info) = counter.infos.lock().unwrap().get(&s) {
            return info.clone();
        }
        let info = Arc::new(lexeme_info(vocab, dfa, s));
        let mut infos = counter.infos.lock().unwrap();
        if infos.len() < crate::compile::lexeme::counted::MAX_COUNTED_INFOS {
            dfa.note_learned(info.memory());
            infos.insert(s, info.clone());
        }
        return info;
    }
    dfa.infos[s as usize]
        .get_or_init(|| {
            string_body_info(vocab, dfa, s)
                .or_else(|| string_tail_info(vocab, dfa, s))
                .unwrap_or_else(|| {
                    let info = lexeme_info(vocab, dfa, s);
                    dfa.note_learned(info.memory());
                    Arc::new(info)
                })
        })
        .clone()
}

/// The token sets of a state inside "any other string", shared through the
/// vocabulary's [`StringBody`] (`None` if `state` is not such a state).
fn string_body_info(vocab: &Vocab, dfa: &LexemeDfa, state: u32) -> Option<Arc<TokenInfo>> {
    let body = vocab.lexemes.string_body()?;
    if dfa.string_body_state(body) != state {
        return None;
    }
    any_string_info(vocab).cloned()
}

/// The token sets of [`StringBody`]'s state.
fn any_string_info(vocab: &Vocab) -> Option<&Arc<TokenInfo>> {
    let body = vocab.lexemes.string_body()?;
    let (any, s) = (&body.dfa, body.state);
    Some(any.infos[s as usize].get_or_init(|| Arc::new(lexeme_info(vocab, any, s))))
}

/// The token sets of a counted JSON string's state near its bound (or of
/// a chunk's), shared through the vocabulary's [`StringCounts`] (`None` if
/// `state` is not such a state).
fn string_tail_info(vocab: &Vocab, dfa: &LexemeDfa, state: u32) -> Option<Arc<TokenInfo>> {
    if dfa.counter.is_some() || dfa.is_final[state as usize] {
        return None;
    }
    let counts = vocab.lexemes.string_counts()?;
    let lang = counted_language(vocab, dfa, state)?;
    let after_quote = counts.accepts_counted(dfa, state, lang)?;
    // Where the string ends the lexeme, the token sets are the count's
    // alone, shared by every lexeme.
    let ends = after_quote == DEAD
        || (dfa.is_final[after_quote as usize] && dfa.first_bytes[after_quote as usize] == [0; 4]);
    let key = (lang, (!ends).then_some((dfa.id, after_quote)));
    if let Some(info) = counts.infos.lock().unwrap().get(&key) {
        return Some(info.clone());
    }
    // "Any string" counted: its token sets, less the tokens holding too
    // many (or too few) characters.
    let body = any_string_info(vocab)?;
    let (min, max) = (lang.min as usize, lang.max as usize);
    let info = Arc::new(if !lang.closed {
        body.exactly_chars(vocab, &counts.chars, max, &counts.nodes_by_chars[max])
    } else if ends {
        body.within_chars(vocab, &counts.chars, min, max)
    } else {
        body.within_chars(vocab, &counts.chars, min, max)
            .then_reading(vocab, dfa, after_quote)
    });
    let mut infos = counts.infos.lock().unwrap();
    if infos.len() >= MAX_COUNTED_INFOS {
        infos.clear();
    }
    infos.insert(key, info.clone());
    Some(info)
}

/// Most token sets [`StringCounts`] keeps.
const MAX_COUNTED_INFOS: usize = 1024;

/// Most characters a [`CountedString`] counts: [`TokenChars`] saturate at
/// 255, so every count compared with them stays below.
const MAX_COUNTED_CHARS: usize = 254;

/// The longest count [`StringCounts`] handles: the longest token, or
/// [`MAX_COUNTED_CHARS`].
fn counted_horizon(vocab: &Vocab) -> usize {
    vocab.max_token_len().min(MAX_COUNTED_CHARS)
}

/// The [`CountedString`] that `state` would accept, from the runs of a
/// plain character it reads (unchecked; `None` if its count reaches past
/// [`counted_horizon`]).
fn counted_language(vocab: &Vocab, dfa: &LexemeDfa, state: u32) -> Option<CountedString> {
    let horizon = counted_horizon(vocab);
    let max = dfa.run_length(state, b'a', horizon + 1);
    if max > horizon {
        return None;
    }
    let mut s = state;
    for read in 0..=max {
        // The lexeme can end at the quote (and may read more after it, see
        // `StringCounts::accepts_counted`). Lexemes that must read more
        // (a key and its colon) are not looked at: checking their states
        // cost the typical mask more than it saved.
        let quote = dfa.next(s, b'"');
        if quote != DEAD && dfa.is_final[quote as usize] {
            return Some(CountedString {
                min: read as u16,
                max: max as u16,
                closed: true,
            });
        }
        if read < max {
            s = dfa.next(s, b'a');
        }
    }
    dfa.is_final[s as usize].then_some(CountedString {
        min: max as u16,
        max: max as u16,
        closed: false,
    })
}

/// Builds the vocabulary's token sets and tables that JSON strings share
/// ("any string" and [`StringCounts`]); each takes a walk of the whole
/// trie or of every token.
pub fn prepare_strings(vocab: &Vocab) {
    if any_string_info(vocab).is_none() {
        return;
    }
    vocab.lexemes.prepare_string_counts(|counts| {
        let horizon = counted_horizon(vocab);
        let exact = CountedString {
            min: horizon as u16,
            max: horizon as u16,
            closed: false,
        };
        let nodes = nodes_by_chars(vocab.trie(), counts, exact);
        (TokenChars::new(vocab), nodes)
    });
}

/// Each token's characters as read from a character boundary inside a
/// JSON string: an escape is one character, and so is a character the
/// token only begins.
#[derive(Default)]
pub struct TokenChars {
    /// Characters before the first closing quote (all of them without
    /// one), at most 255 (more count as 255).
    pub before_quote: Box<[u8]>,
    /// One bit per token id (as a mask): the token holds a closing quote.
    pub closed: Box<[u32]>,
}

impl TokenChars {
    fn new(vocab: &Vocab) -> TokenChars {
        let mut closed = vec![0u32; vocab.mask_words()];
        let before_quote = (0..vocab.len() as u32)
            .map(|id| {
                let (n, quote) = chars_before_quote(vocab.token_bytes(id));
                if quote {
                    closed[id as usize >> 5] |= 1 << (id & 31);
                }
                n
            })
            .collect();
        TokenChars {
            before_quote,
            closed: closed.into_boxed_slice(),
        }
    }

    /// Clears in `mask` the tokens with more than `max` characters before
    /// a closing quote, and those with a closing quote after fewer than
    /// `min` (a word at a time, without branches: it runs over the whole
    /// vocabulary).
    fn clear_outside(&self, mask: &mut [u32], min: usize, max: usize) {
        debug_assert!(max <= MAX_COUNTED_CHARS, "counts saturate at 255");
        let (min, max) = (min as u8, max as u8);
        let words = mask.iter_mut().zip(&*self.closed);
        for ((word, &closed), counts) in words.zip(self.before_quote.chunks(32)) {
            let (mut longer, mut shorter) = (0u32, 0u32);
            for (j, &c) in counts.iter().enumerate() {
                longer |= ((c > max) as u32) << j;
                shorter |= ((c < min) as u32) << j;
            }
            *word &= !(longer | (shorter & closed));
        }
    }
}

/// The characters of `token` before its first closing quote (at most 255),
/// and whether it has one.
fn chars_before_quote(token: &[u8]) -> (u8, bool) {
    let (mut n, mut i) = (0u32, 0);
    while i < token.len() && token[i] != b'"' {
        i += match token[i] {
            b'\\' if token.get(i + 1) == Some(&b'u') => 6,
            b'\\' => 2,
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        n += 1;
    }
    (n.min(255) as u8, i < token.len())
}

/// The trie nodes with children whose path is whole characters of a
/// string and no quote, by their number of characters (see
/// [`StringCounts`]): one walk of the trie with `exact`, "exactly `H`
/// characters" (`H` the longest token).
fn nodes_by_chars(
    trie: &TokenTrie,
    counts: &StringCounts,
    exact: CountedString,
) -> Box<[Box<[u32]>]> {
    let horizon = exact.max as usize;
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); horizon + 1];
    let nodes = trie.nodes();
    let mut states = vec![DEAD; trie.max_len() + 1];
    states[0] = StringCounts::START;
    let mut i = 0;
    while i < trie.root_end() as usize {
        let n = nodes[i];
        let d = n.depth as usize;
        let s = counts.next(exact, states[d - 1], n.byte);
        if s == DEAD {
            i = n.subtree_end as usize;
            continue;
        }
        states[d] = s;
        if let Some(r) = counts.chars_read(s) {
            if i + 1 < n.subtree_end as usize {
                out[r].push(i as u32);
            }
        }
        i += 1;
    }
    out.into_iter().map(Vec::into_boxed_slice).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::lexeme::DfaLimits;
    use crate::ir::{CharClass, Expr};

    /// The pieces of `alphabet`, and `n` random strings of 2 to `longest +
    /// 1` of them (xorshift from `seed`), as a vocabulary.
    fn random_vocab(alphabet: &[&str], mut seed: u64, n: usize, longest: usize) -> Vocab {
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut tokens: Vec<Vec<u8>> = alphabet.iter().map(|s| s.as_bytes().to_vec()).collect();
        for _ in 0..n {
            let len = 2 + next(longest);
            let t: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            tokens.push(t.into_bytes());
        }
        tokens.sort();
        tokens.dedup();
        let flags = vec![0; tokens.len()];
        Vocab::new(tokens, flags, Vec::new()).unwrap()
    }

    /// `state`'s cached token sets are brute force over the vocabulary:
    /// inside = the DFA reads the whole token; exits = (token, d) where
    /// the lexeme can end after `d >= 1` bytes and cannot read the token
    /// through.
    fn assert_token_sets_are_brute_force(vocab: &Vocab, dfa: &LexemeDfa, state: u32, what: &str) {
        let info = lexeme_state_info(vocab, dfa, state);
        let mut inside = vec![0u32; vocab.mask_words()];
        info.inside.or_into(&mut inside);
        let mut exits = std::collections::BTreeSet::new();
        for e in info.exits.iter() {
            let trie = vocab.trie();
            let mut r = trie.subtree_tokens(e.node);
            if e.below {
                r.start = trie.nodes()[e.node as usize + 1].tok_start;
            }
            for &t in &trie.token_ids()[r.start as usize..r.end as usize] {
                exits.insert((t, e.depth as usize));
            }
        }
        let mut want_exits = std::collections::BTreeSet::new();
        for t in 0..vocab.len() as u32 {
            let bytes = vocab.token_bytes(t);
            let mut q = state;
            let mut ends = Vec::new();
            for (d, &b) in bytes.iter().enumerate() {
                if d > 0 && dfa.is_final_state(q) {
                    ends.push(d);
                }
                q = dfa.next(q, b);
                if q == DEAD {
                    break;
                }
            }
            let reads = q != DEAD;
            assert_eq!(
                inside[(t / 32) as usize] >> (t % 32) & 1 == 1,
                reads,
                "{what} state {state} token {:?}",
                String::from_utf8_lossy(bytes)
            );
            if !reads {
                want_exits.extend(ends.into_iter().map(|d| (t, d)));
            }
        }
        assert_eq!(exits, want_exits, "{what} state {state}");
    }

    /// Every state's token sets of lexemes whose states read letters into
    /// different states (names and their complement, "contains",
    /// letters-then-digits, a count) equal brute force over a vocabulary
    /// of short strings: inside = the DFA reads the whole token; exits =
    /// (token, d) where the lexeme can end after `d >= 1` bytes and cannot
    /// read the token through.
    #[test]
    fn lexeme_token_sets_match_brute_force() {
        let vocab = random_vocab(
            &["a", "b", "c", "n", "e", "t", "_", "1", "\"", "\\", "u", "é"],
            0x9E37_79B9_7F4A_7C15,
            1500,
            5,
        );
        let letters = Expr::Class(CharClass::from_ranges([(0x61, 0x7a), (0x5f, 0x5f)]));
        let contains = Expr::seq(vec![
            Expr::literal("\""),
            Expr::star(letters.clone()),
            Expr::literal("net_"),
            Expr::star(letters.clone()),
            Expr::literal("\""),
        ]);
        let then_digits = Expr::seq(vec![
            Expr::star(letters.clone()),
            Expr::plus(Expr::Class(CharClass::from_ranges([(0x30, 0x39)]))),
        ]);
        let counted = Expr::repeat(Expr::Class(CharClass::any()), 0, Some(5));
        // Counted strings in lexemes that may read on after the quote:
        // whitespace, a comma.
        let chars =
            |lo, hi| crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), lo, Some(hi)));
        let spaced_string = Expr::seq(vec![
            Expr::literal("\""),
            chars(0, 4),
            Expr::literal("\""),
            Expr::star(Expr::Class(CharClass::from_ranges([
                (0x20, 0x20),
                (0x09, 0x09),
            ]))),
        ]);
        let comma_string = Expr::seq(vec![
            Expr::literal("\""),
            chars(2, 3),
            Expr::literal("\""),
            Expr::optional(Expr::literal(",")),
        ]);
        let counted_string = Expr::seq(vec![
            Expr::literal("\""),
            crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), 1, Some(7))),
            Expr::literal("\""),
        ]);
        // A string of exactly 4 characters.
        let fixed_string = Expr::seq(vec![
            Expr::literal("\""),
            crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), 4, Some(4))),
            Expr::literal("\""),
        ]);
        // A chunk of a long string: exactly 5 characters, no quote.
        let chunk = crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), 5, Some(5)));
        let names = ["net", "nab", "ab_c", "é"].map(String::from);
        let cache = &vocab.lexemes;
        // States that took the shared "any other string", the counted
        // strings' counts, the chunk's and the strings read on after.
        let mut shared = (0, 0, 0, 0);
        for expr in [
            Expr::json_strings(names.clone(), true),
            Expr::json_strings(names, false),
            contains,
            then_digits,
            counted,
            counted_string.clone(),
            fixed_string.clone(),
            chunk.clone(),
            spaced_string.clone(),
            comma_string.clone(),
        ] {
            let dfa = cache.get_or_build(&expr, &DfaLimits::default()).unwrap();
            for state in 0..dfa.num_states() as u32 {
                // Through the vocabulary's shared string DFAs where they
                // agree (any other name, the end of a count).
                let s = dfa.token_class(state, vocab.max_token_len());
                shared.0 += string_body_info(&vocab, &dfa, s).is_some() as usize;
                if string_tail_info(&vocab, &dfa, s).is_some() {
                    match &expr {
                        e if *e == chunk => shared.2 += 1,
                        e if *e == counted_string || *e == fixed_string => shared.1 += 1,
                        e if *e == spaced_string || *e == comma_string => shared.3 += 1,
                        _ => {}
                    }
                }
                assert_token_sets_are_brute_force(&vocab, &dfa, state, &format!("{expr:?}"));
            }
        }
        assert!(
            shared.0 >= 1 && shared.1 >= 12 && shared.2 >= 5 && shared.3 >= 9,
            "{shared:?} states shared token sets"
        );
    }

    /// Counted strings (a pattern's automaton with a count of code points
    /// beside it): every reachable (count, state)'s token sets equal brute
    /// force over a vocabulary of short strings with escapes, multi-byte
    /// characters and quotes, near both bounds and far from them.
    #[test]
    fn counted_token_sets_match_brute_force() {
        let vocab = random_vocab(
            &[
                "a", "b", " ", "\"", "\\", "u", "0", "d", "8", "3", "e", "é", "😀", "\\u00e9", "n",
            ],
            0x2545_F491_4F6C_DD1D,
            1200,
            6,
        );
        let any = Expr::Class(CharClass::any());
        let quoted = |e: Expr| {
            Expr::seq(vec![
                Expr::literal("\""),
                crate::ir::encode(&e),
                Expr::literal("\""),
            ])
        };
        let words = Expr::seq(vec![
            Expr::repeat(
                Expr::seq(vec![
                    Expr::plus(Expr::Class(CharClass::from_ranges([(0x21, 0x10ffff)]))),
                    Expr::plus(Expr::literal(" ")),
                ]),
                0,
                Some(3),
            ),
            Expr::plus(Expr::Class(CharClass::from_ranges([(0x21, 0x10ffff)]))),
        ]);
        let a_then_any = Expr::seq(vec![Expr::literal("a"), Expr::star(any.clone())]);
        let cache = &vocab.lexemes;
        for (pattern, min, max) in [
            (words.clone(), 2, Some(12)),
            (a_then_any.clone(), 0, Some(9)),
            (a_then_any, 6, None),
            (words, 5, Some(5)),
        ] {
            let pattern = quoted(pattern);
            let key = Expr::And(vec![pattern.clone(), crate::ir::quoted_length(min, max)]);
            let dfa = cache
                .try_get_or_build_counted(&key, &pattern, min, max, &DfaLimits::default())
                .unwrap()
                .unwrap();
            assert!(dfa.counter.is_some());
            // Every state reachable within a few tokens.
            let mut states = vec![dfa.start];
            let mut seen: crate::util::hash::FastSet<u32> = states.iter().copied().collect();
            let mut i = 0;
            while i < states.len() && states.len() < 400 {
                let q0 = states[i];
                for t in 0..vocab.len() as u32 {
                    let mut q = q0;
                    for &b in vocab.token_bytes(t) {
                        q = dfa.next(q, b);
                        if q == DEAD {
                            break;
                        }
                        if seen.insert(q) {
                            states.push(q);
                        }
                    }
                }
                i += 1;
            }
            for &state in &states {
                assert_token_sets_are_brute_force(&vocab, &dfa, state, &format!("{min}..{max:?}"));
            }
        }
    }

    /// Tokens longer than the per-token character counts hold (255): a
    /// string counting past them is walked, and its token sets are what
    /// its DFA reads.
    #[test]
    fn counts_past_255_characters() {
        let mut tokens: Vec<Vec<u8>> = vec![b"a".to_vec(), b"\"".to_vec()];
        for n in [200, 260, 300] {
            tokens.push(vec![b'a'; n]);
            let mut closed = vec![b'a'; n];
            closed.push(b'"');
            tokens.push(closed);
        }
        let flags = vec![0; tokens.len()];
        let vocab = Vocab::new(tokens, flags, Vec::new()).unwrap();
        let expr = Expr::seq(vec![
            Expr::literal("\""),
            crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), 0, Some(280))),
            Expr::literal("\""),
        ]);
        let dfa = vocab
            .lexemes
            .get_or_build(&expr, &DfaLimits::default())
            .unwrap();
        let mut state = dfa.next(dfa.start, b'"');
        for _ in 0..40 {
            // 280 characters left, then 279, ... 241 (counted where at
            // most 254): each as its DFA reads.
            let info = lexeme_state_info(&vocab, &dfa, state);
            let mut inside = vec![0u32; vocab.mask_words()];
            info.inside.or_into(&mut inside);
            for t in 0..vocab.len() as u32 {
                let mut q = state;
                for &b in vocab.token_bytes(t) {
                    q = dfa.next(q, b);
                    if q == DEAD {
                        break;
                    }
                }
                assert_eq!(
                    inside[t as usize / 32] >> (t % 32) & 1 == 1,
                    q != DEAD,
                    "token {t}"
                );
            }
            state = dfa.next(state, b'a');
        }
    }

    /// Dense, complemented and sparse sets from trie ranges hold the same
    /// tokens as the ids those ranges name.
    #[test]
    fn token_lists_from_trie_ranges() {
        // 200 text tokens, one special token, one empty one.
        let mut tokens: Vec<Vec<u8>> = (0..200u32).map(|i| format!("t{i}").into_bytes()).collect();
        tokens.push(b"<s>".to_vec());
        tokens.push(Vec::new());
        let mut flags = vec![0; 202];
        flags[200] = crate::vocab::TOKEN_SPECIAL;
        let vocab = Vocab::new(tokens, flags, vec![200]).unwrap();
        let n = vocab.trie().token_ids().len() as u32;
        for ranges in [
            vec![(0, n)],
            vec![(0, 5), (9, n - 3)],
            vec![(3, 40)],
            vec![(7, 9), (100, 101)],
        ] {
            let ids: Vec<u32> = ranges
                .iter()
                .flat_map(|&(lo, hi)| vocab.trie().token_ids()[lo as usize..hi as usize].to_vec())
                .collect();
            let mut want = vec![0u32; vocab.mask_words()];
            TokenList::from_ids(ids, &vocab).or_into(&mut want);
            let mut got = vec![0u32; vocab.mask_words()];
            TokenList::from_trie_ranges(&ranges, &vocab).or_into(&mut got);
            assert_eq!(got, want, "{ranges:?}");
        }
    }
}
