//! The token sets of one automaton state ([`TokenInfo`]): the tokens it
//! allows whatever the context (inside), and those that leave its rule
//! after a prefix (exits), checked against the real callers at mask time;
//! the exits of a state in one context ([`ExitTokens`], [`FreeExits`]).
//! Data only: the walks that fill them sit above.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::token_chars::TokenChars;
use super::token_list::{MaskFill, TokenList};
use crate::util::byteset::ByteSet;
use crate::vocab::{TokenTrie, Vocab};

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

/// Tokens that leave the walked rule after `depth` bytes: the tokens at
/// and below trie node `node` (only those strictly below it when `below`),
/// whose byte `depth` (0-based) is `first` (when `depth` is the node's own
/// depth, `below` is set and the first bytes are those of its children).
///
/// `below` exits come from a lexeme that ends at the node and can read
/// nothing more (a closing quote, a full chunk): every token longer than
/// the node's path leaves it there, and one exit stands for all of them
/// instead of one per child.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Exit {
    pub node: u32,
    pub depth: u16,
    pub first: u8,
    pub below: bool,
}

impl Exit {
    /// The exit's first byte after the rule is only known per child.
    pub(crate) fn at_node(&self, trie: &TokenTrie) -> bool {
        self.below && self.depth == trie.nodes()[self.node as usize].depth
    }
}

/// The bytes of `exit`'s tokens read after the rule ended, down to its node
/// (all its tokens share them).
pub fn exit_remainder<'v>(vocab: &'v Vocab, exit: &Exit) -> &'v [u8] {
    &vocab.trie().path(exit.node)[exit.depth as usize..]
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
    /// Unique in the process: what [`SeenSets`] lists. An address would
    /// not do: a set that no cache keeps (another thread kept its own
    /// for the same state, a cache full) is freed within the mask, and a
    /// set computed after it may take its address.
    id: u64,
}

/// The next [`TokenInfo::id`].
static NEXT_INFO_ID: AtomicU64 = AtomicU64::new(0);

impl TokenInfo {
    pub(crate) fn new(inside: TokenList, mut exits: Vec<Exit>, vocab: &Vocab) -> TokenInfo {
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
            id: NEXT_INFO_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The token sets of a state that reads what this one (inside "any
    /// string") reads but between `min` and `max` characters before its
    /// closing quote: the tokens with more characters before it go, and
    /// those with a quote after fewer, inside and exits (an exit's tokens
    /// share their bytes up to its node, where the quote is).
    pub(crate) fn within_chars(
        &self,
        vocab: &Vocab,
        chars: &TokenChars,
        min: usize,
        max: usize,
    ) -> TokenInfo {
        let inside = match (&self.inside, self.shared.is_empty()) {
            // A few tokens (a class of digits) are filtered one by one:
            // the whole mask would cost more than a walk of them.
            (TokenList::Sparse(ids), true) => {
                let kept = ids.iter().copied().filter(|&t| chars.fits(t, min, max));
                TokenList::Sparse(kept.collect())
            }
            _ => {
                let mut words = vec![0u32; vocab.mask_words()];
                self.or_inside_into(&mut words);
                if max >= vocab.max_token_len() {
                    // No token is too long: only those closing too early
                    // go, a few of them.
                    chars.clear_closed_before(&mut words, min);
                } else {
                    chars.clear_outside(&mut words, min, max);
                }
                TokenList::Dense(words.into_boxed_slice())
            }
        };
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
        TokenInfo::from_sorted(inside, exits, at_node)
    }

    /// The token sets of a state that reads exactly `left` more
    /// characters of a string (no quote) and then ends, from those of
    /// "any string" (`self`): inside are its inside tokens without a
    /// closing quote and with at most `left` characters; every token
    /// longer than `left` whole characters leaves it there, so its exits
    /// are the trie nodes spelling `left` characters (`nodes`), all below.
    pub(crate) fn exactly_chars(
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
            .filter(move |(_, (b, _))| allowed.contains(*b))
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
                if allowed.contains(b) {
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

    /// See [`SeenSets`].
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Sets the bits of every inside token (own and shared) in `mask`.
    pub fn or_inside_into(&self, mask: &mut [u32]) {
        self.inside.or_into(mask);
        for s in &self.shared {
            s.inside.or_into(mask);
        }
    }
}

/// Token sets (by [`TokenInfo::id`]) already set in a mask.
#[derive(Default)]
pub struct SeenSets {
    list: Vec<u64>,
    /// Past a few dozen sets (an object's states in one chart set).
    set: crate::util::hash::FastSet<u64>,
}

impl SeenSets {
    /// Whether `info` was not listed yet; lists it.
    fn insert(&mut self, info: &TokenInfo) -> bool {
        let p = info.id;
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
