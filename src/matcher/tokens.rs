//! Token sets per automaton state, computed once and reused by every mask.
//!
//! For a state `q` of rule `R`, a walk of the token trie from `q` alone,
//! with the caller of `R` unknown, splits the text tokens into:
//! - **inside**: tokens whose bytes can all be read without leaving `R`
//!   (rules called from `R` may be entered and left). They are allowed
//!   whenever an item at `q` is, whatever the context.
//! - **exits**: tokens whose bytes can only be read by finishing `R`
//!   after some prefix and going on in the caller. They are kept as
//!   `(trie node, prefix length)` pairs, and only where the first byte after
//!   the prefix can follow `R` somewhere in the grammar; the matcher checks
//!   them against the real callers at mask time.
//! - everything else is never allowed at `q`.
//!
//! Lexeme states are walked with the DFA alone, and their results are
//! cached per vocabulary (keyed by the lexeme, the state and the follow
//! set), so that grammars share them. Parser-rule states are walked with
//! the Earley walker and cached per grammar.

use std::sync::Arc;

use super::earley::{Chart, Item, Walker, CTX_ORIGIN};
use crate::compile::lexeme::{byteset_contains, ByteSet, LexemeDfa, DEAD};
use crate::compile::CompiledGrammar;
use crate::vocab::{TokenTrie, Vocab};

/// A set of token ids.
pub enum TokenList {
    /// A full mask (one bit per token id).
    Dense(Box<[u32]>),
    /// Token ids.
    Sparse(Box<[u32]>),
}

impl TokenList {
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

/// A token that leaves the walked rule after `depth` bytes: the tokens at
/// and below trie node `node`, whose byte `depth` (0-based) is `first`.
#[derive(Clone, Copy, Debug)]
pub struct Exit {
    pub node: u32,
    pub depth: u16,
    pub first: u8,
}

/// The token sets of one automaton state.
pub struct TokenInfo {
    pub inside: TokenList,
    /// Sorted by `first`.
    pub exits: Box<[Exit]>,
    /// `(first byte, index of its first exit)`, ascending.
    pub exit_runs: Box<[(u8, u32)]>,
}

impl TokenInfo {
    fn new(inside: Vec<u32>, mut exits: Vec<Exit>, vocab: &Vocab) -> TokenInfo {
        exits.sort_by_key(|e| e.first);
        let mut runs: Vec<(u8, u32)> = Vec::new();
        for (i, e) in exits.iter().enumerate() {
            if runs.last().map(|r| r.0) != Some(e.first) {
                runs.push((e.first, i as u32));
            }
        }
        TokenInfo {
            inside: TokenList::from_ids(inside, vocab),
            exits: exits.into_boxed_slice(),
            exit_runs: runs.into_boxed_slice(),
        }
    }

    /// The exits whose first byte after the rule is in `allowed`.
    pub fn exits_starting_with<'a>(
        &'a self,
        allowed: &'a ByteSet,
    ) -> impl Iterator<Item = &'a Exit> + 'a {
        self.exit_runs
            .iter()
            .enumerate()
            .filter(move |(_, (b, _))| byteset_contains(allowed, *b))
            .flat_map(move |(k, &(_, start))| {
                let end = self
                    .exit_runs
                    .get(k + 1)
                    .map_or(self.exits.len(), |r| r.1 as usize);
                self.exits[start as usize..end].iter()
            })
    }

    pub fn memory(&self) -> usize {
        self.inside.memory() + self.exits.len() * 8 + self.exit_runs.len() * 8
    }
}

/// Something that reads bytes one at a time and backs off.
pub trait Stepper {
    /// Keeps the state after the first `depth` bytes.
    fn truncate(&mut self, depth: usize);
    /// Reads one more byte; false (state unchanged) if impossible.
    fn push(&mut self, byte: u8) -> bool;
    /// The walked rule can be finished right after the last byte.
    fn exited(&self) -> bool;
}

impl Stepper for Walker<'_> {
    fn truncate(&mut self, depth: usize) {
        Walker::truncate(self, depth + 1);
    }
    fn push(&mut self, byte: u8) -> bool {
        self.push_byte(byte)
    }
    fn exited(&self) -> bool {
        self.top_exited()
    }
}

/// Walks the whole trie with `stepper` (already in its start state),
/// collecting inside tokens and exits whose first byte is in `follow`.
pub fn walk_trie(
    trie: &TokenTrie,
    stepper: &mut impl Stepper,
    follow: &ByteSet,
    inside: &mut Vec<u32>,
    exits: &mut Vec<Exit>,
) {
    let nodes = trie.nodes();
    let ids = trie.token_ids();
    let end = trie.root_end() as usize;
    let mut pending: Vec<u16> = Vec::new();
    let mut path: Vec<u8> = vec![0; 2];
    let mut i = 0usize;
    while i < end {
        let n = nodes[i];
        let d = n.depth as usize;
        stepper.truncate(d - 1);
        while pending.last().is_some_and(|&p| p as usize >= d) {
            pending.pop();
        }
        if path.len() <= d {
            path.resize(d + 1, 0);
        }
        path[d] = n.byte;
        if stepper.push(n.byte) {
            let r = trie.tokens_at(i as u32);
            inside.extend_from_slice(&ids[r.start as usize..r.end as usize]);
            if stepper.exited() {
                pending.push(d as u16);
            }
            i += 1;
        } else {
            for &pd in &pending {
                let first = path[pd as usize + 1];
                if byteset_contains(follow, first) {
                    exits.push(Exit {
                        node: i as u32,
                        depth: pd,
                        first,
                    });
                }
            }
            i = n.subtree_end as usize;
        }
    }
}

/// Token sets of DFA state `state` of a lexeme followed by bytes in `follow`.
///
/// The same walk as [`walk_trie`], specialised to a DFA: a subtree whose
/// bytes all loop back to the current state is taken whole, and accepted
/// tokens are collected as trie-order ranges.
pub fn lexeme_info(vocab: &Vocab, dfa: &LexemeDfa, state: u32, follow: &ByteSet) -> TokenInfo {
    let trie = vocab.trie();
    let nodes = trie.nodes();
    let end = trie.root_end() as usize;
    let max = vocab.max_token_len() + 2;
    let mut stack = vec![DEAD; max];
    let mut path = vec![0u8; max];
    stack[0] = state;
    let mut pending: Vec<u16> = Vec::new();
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    let mut add_range = |lo: u32, hi: u32| {
        if lo < hi {
            match ranges.last_mut() {
                Some(r) if r.1 == lo => r.1 = hi,
                _ => ranges.push((lo, hi)),
            }
        }
    };
    let mut exits = Vec::new();
    let mut i = 0usize;
    while i < end {
        let n = nodes[i];
        let d = n.depth as usize;
        while pending.last().is_some_and(|&p| p as usize >= d) {
            pending.pop();
        }
        path[d] = n.byte;
        let t = dfa.next(stack[d - 1], n.byte);
        if t != DEAD {
            if trie.groups_below(i as u32) & !dfa.loop_groups[t as usize] == 0 {
                // Every byte below loops on `t`: the whole subtree is inside.
                add_range(n.tok_start, nodes[n.subtree_end as usize].tok_start);
                i = n.subtree_end as usize;
                continue;
            }
            add_range(n.tok_start, nodes[i + 1].tok_start);
            stack[d] = t;
            if dfa.is_final[t as usize] {
                pending.push(d as u16);
            }
            i += 1;
        } else {
            for &pd in &pending {
                let first = path[pd as usize + 1];
                if byteset_contains(follow, first) {
                    exits.push(Exit {
                        node: i as u32,
                        depth: pd,
                        first,
                    });
                }
            }
            i = n.subtree_end as usize;
        }
    }
    let ids = trie.token_ids();
    let mut inside = Vec::with_capacity(ranges.iter().map(|r| (r.1 - r.0) as usize).sum());
    for (lo, hi) in ranges {
        inside.extend_from_slice(&ids[lo as usize..hi as usize]);
    }
    TokenInfo::new(inside, exits, vocab)
}

/// Token sets of parser-rule state `state`.
pub fn structural_info(g: &CompiledGrammar, state: u32) -> TokenInfo {
    let empty = Chart::new();
    let mut walker = Walker::new(g, &empty);
    walker.push_kernel(&[Item {
        state,
        origin: CTX_ORIGIN,
    }]);
    let follow = g.rules[g.rule_of(state) as usize].follow;
    let mut inside = Vec::new();
    let mut exits = Vec::new();
    walk_trie(
        g.vocab().trie(),
        &mut walker,
        &follow,
        &mut inside,
        &mut exits,
    );
    TokenInfo::new(inside, exits, g.vocab())
}

/// The cached token sets of any state.
pub fn info_for(g: &CompiledGrammar, state: u32) -> Arc<TokenInfo> {
    if g.is_structural(state) {
        g.structural_infos[state as usize]
            .get_or_init(|| Arc::new(structural_info(g, state)))
            .clone()
    } else {
        let (dfa, s) = g.lexeme_state(state);
        let follow = g.rules[g.rule_of(state) as usize].follow;
        if let Some(info) = dfa.infos.lock().unwrap().get(&(s, follow)) {
            return info.clone();
        }
        let info = Arc::new(lexeme_info(g.vocab(), dfa, s, &follow));
        dfa.infos
            .lock()
            .unwrap()
            .entry((s, follow))
            .or_insert(info)
            .clone()
    }
}
