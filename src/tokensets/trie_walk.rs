//! Walking the token trie with the Earley [`Walker`]: the depth-first
//! walk (`Dfs`) that sorts every token into inside, exit or never, for
//! parser-rule states and wherever lexeme items are left.

use super::earley::{LexemeWalk, Walker, MAX_LEXEME_WALK};
use super::info::Exit;
use crate::util::byteset::ByteSet;
use crate::vocab::TokenTrie;

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
    pub(crate) pending: Vec<u16>,
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

    pub(crate) fn set_path(&mut self, depth: usize, byte: u8) {
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
    pub(crate) fn pruned(&mut self, i: usize, below: bool) {
        for &pd in &self.pending {
            let first = self.path[pd as usize + 1];
            if self.follow.contains(first) {
                self.exits.push(Exit {
                    node: i as u32,
                    depth: pd,
                    first,
                    below,
                });
            }
        }
    }

    /// Adds the tokens ending at node `i`.
    pub(crate) fn accept_node(&mut self, i: usize) {
        let r = self.trie.tokens_at(i as u32);
        self.inside
            .extend_from_slice(&self.trie.token_ids()[r.start as usize..r.end as usize]);
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
            if readable.contains(byte) {
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
