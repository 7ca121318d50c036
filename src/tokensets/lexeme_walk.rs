//! The token sets of lexeme states, walked with the DFA alone
//! ([`lexeme_info`]): whole trie subtrees a state reads at once, and the
//! walks of single first-byte subtrees ([`SubtreeWalk`]) that many states
//! of a lexeme share.

use std::sync::Arc;

use super::engine::Engine;
use super::info::{Exit, TokenInfo};
use super::lexeme::{Lexeme, SubtreeWalk};
use crate::compile::lexeme::DEAD;
use crate::vocab::trie::{byte_group, INSIDE_CHAR};
use crate::vocab::TokenTrie;

/// Depth-first walk of trie nodes with a lexeme DFA alone.
pub(crate) struct DfaWalk<'a> {
    trie: &'a TokenTrie,
    lexeme: &'a Lexeme,
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
    /// For a walk of where the lexeme can end alone (see
    /// [`lexeme_ending_info`]), the DFA's [`Lexeme::ending_groups`]: a
    /// subtree with none of them below, entered where the lexeme has not
    /// ended, is skipped.
    ending_only: Option<u64>,
    /// Whether subtrees are taken whole by the DFA's safe groups (see
    /// [`lexeme_info`]); without them every node the DFA's own states
    /// read is walked, which gives the same sets. Never for a lexeme
    /// whose bytes spell few tokens ([`Lexeme::spells_few_tokens`]).
    by_safe_groups: bool,
    /// Trie nodes the walk may still enter, if bounded; past them it
    /// stops, its sets unfinished (see [`lexeme_ending_info`]).
    visits_left: Option<usize>,
}

/// The states of a walk's DFA equal to states of the vocabulary's
/// [`StringBody`] (inside "any other string", as a key that leaves every
/// listed name is): below them, the walk takes that DFA's walks (shared by
/// every lexeme).
struct SharedBody<'a> {
    /// Per state of the walk's DFA, the equal state of "any string" (see
    /// [`Lexeme::string_body_states`]), or [`DEAD`].
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
    pub(crate) fn new(engine: &'a Engine, lexeme: &'a Lexeme) -> DfaWalk<'a> {
        DfaWalk::by_groups(engine, lexeme, true)
    }

    /// A walk that takes subtrees whole by the DFA's safe groups if
    /// `by_groups` (see [`Self::by_safe_groups`]); one that does not
    /// leaves undecided whether the lexeme shares "any string"'s (see
    /// [`Lexeme::share_body_groups`]), an analysis worth its cost only
    /// where walks use the groups.
    fn by_groups(engine: &'a Engine, lexeme: &'a Lexeme, by_groups: bool) -> DfaWalk<'a> {
        let by_safe_groups = by_groups && !lexeme.spells_few_tokens(engine.vocab().trie());
        if by_safe_groups && !lexeme.body_groups_decided() {
            engine.share_body_groups(lexeme);
        }
        let max = engine.vocab().max_token_len() + 2;
        let body = engine.string_body().and_then(|b| {
            let like = lexeme.string_body_states(&b.body);
            like.iter().any(|&t| t != DEAD).then(|| SharedBody {
                like,
                walk: Box::new(DfaWalk::new(engine, &b.lexeme)),
            })
        });
        DfaWalk {
            trie: engine.vocab().trie(),
            lexeme,
            stack: vec![DEAD; max],
            path: vec![0; max],
            pending: Vec::new(),
            child_groups: vec![(0, 0); max + 1],
            ranges: Vec::new(),
            exits: Vec::new(),
            body,
            ending_only: None,
            by_safe_groups,
            visits_left: None,
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
            // A walk of where the lexeme ends is partial: kept walks
            // serve it, its own are not kept.
            _ if self.ending_only.is_some() => {
                known_subtree_walk(self, i, t).unwrap_or_else(|| Arc::new(self.subtree(i, t)))
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
        if let Some(ending) = self.ending_only {
            if self.pending.is_empty()
                && !self.lexeme.dfa().is_final_state(t)
                && self.trie.groups_below(i as u32) & ending == 0
            {
                // The lexeme cannot end in this subtree: its tokens are
                // unended, left to the caller.
                return false;
            }
        }
        // What `t` reads at this subtree's heights serves both the
        // whole-subtree test and the children's (see `child_groups`); by
        // characters only where bytes do not tell (a subtree with
        // multi-byte characters).
        let trie = self.trie;
        let bytes = if self.by_safe_groups {
            self.lexeme.safe_bytes(trie, t, trie.height_below(i as u32))
        } else {
            0
        };
        let whole =
            |this: &mut Self| this.add_range(n.tok_start, nodes[n.subtree_end as usize].tok_start);
        if trie.groups_below(i as u32) & !bytes == 0 {
            whole(self);
            return false;
        }
        let below = trie.char_groups_below(i as u32);
        let chars = if below & INSIDE_CHAR != 0 || !self.by_safe_groups {
            0
        } else {
            self.lexeme
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
        if self.lexeme.dfa().is_final_state(t) && self.lexeme.dfa().first_bytes_of(t).is_empty() {
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
        if self.lexeme.dfa().is_final_state(t) {
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
            if let Some(left) = &mut self.visits_left {
                if *left == 0 {
                    return;
                }
                *left -= 1;
            }
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
            let t = self.lexeme.dfa().next(self.stack[d - 1], n.byte);
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
/// The same walk as [`super::trie_walk::walk_trie`], specialised to a DFA: a
/// subtree whose strings can all be read is taken whole (see
/// [`crate::compile::lexeme::SafeGroups`]), and
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
pub fn lexeme_info(engine: &Engine, lexeme: &Lexeme, state: u32) -> Arc<TokenInfo> {
    // (Subtrees inside "any other string" take that DFA's walks.)
    //
    // A short walk of a lexeme whose safe groups are still to be computed
    // goes without them once its mask has computed its share (see
    // `work::take_analysis`): a mask meeting forty keys of forty objects
    // spent 20M instructions on their groups and 3M on the walks. The
    // groups come with a later walk, as they would have; so does the
    // test whether the lexeme can share "any string"'s groups, which
    // cost that mask 4.2M of its 25M.
    let reaches_body = engine.string_body().is_some_and(|b| {
        lexeme
            .string_body_states(&b.body)
            .iter()
            .any(|&t| t != DEAD)
    });
    let by_groups =
        lexeme.safe_groups_wanted(reaches_body) || own_walk_is_long(engine, lexeme, state);
    walk_from(engine, DfaWalk::by_groups(engine, lexeme, by_groups), state)
        .expect("an unbounded walk")
}

/// The token sets `walk` finds from its DFA's state `state`, first byte
/// by first byte (see [`DfaWalk::piece`]); `None` if it entered more
/// nodes than it may (see [`DfaWalk::visits_left`]).
fn walk_from(engine: &Engine, mut walk: DfaWalk, state: u32) -> Option<Arc<TokenInfo>> {
    let trie = engine.vocab().trie();
    let nodes = trie.nodes();
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    let mut exits = Vec::new();
    let mut i = 0;
    while i < trie.root_end() as usize {
        let n = nodes[i];
        let t = walk.lexeme.dfa().next(state, n.byte);
        if t != DEAD {
            let piece = walk.piece(i, t);
            for &(lo, hi) in piece.ranges.iter() {
                match ranges.last_mut() {
                    Some(r) if r.1 == lo => r.1 = hi,
                    _ => ranges.push((lo, hi)),
                }
            }
            exits.extend_from_slice(&piece.exits);
            if walk.visits_left == Some(0) {
                return None;
            }
        }
        i = n.subtree_end as usize;
    }
    Some(engine.walked_token_sets(ranges, exits))
}

/// A walk whose own part (see [`own_walk_tokens`]) reads fewer than one
/// token in this many of the vocabulary is short.
const SHORT_WALK_SHARE: usize = 16;

/// Whether a walk of DFA state `state` of a lexeme reads more than a
/// [`SHORT_WALK_SHARE`] of the vocabulary itself.
pub fn own_walk_is_long(engine: &Engine, lexeme: &Lexeme, state: u32) -> bool {
    own_walk_tokens(engine, lexeme, state) * SHORT_WALK_SHARE > engine.vocab().trie().num_tokens()
}

/// How many tokens a walk of DFA state `state` of a lexeme would read
/// itself: those of the first-byte subtrees it enters outside "any
/// string" (whose walks every lexeme shares, see [`SharedBody`]). A key
/// that leaves its listed names after one byte walks only the subtrees of
/// their first letters; a state that refuses a letter walks them all.
fn own_walk_tokens(engine: &Engine, lexeme: &Lexeme, state: u32) -> usize {
    let trie = engine.vocab().trie();
    let nodes = trie.nodes();
    let like = engine
        .string_body()
        .map_or(&[][..], |b| lexeme.string_body_states(&b.body));
    let mut tokens = 0;
    let mut i = 0;
    while i < trie.root_end() as usize {
        let n = nodes[i];
        let t = lexeme.dfa().next(state, n.byte);
        if t != DEAD && like.get(t as usize).is_none_or(|&l| l == DEAD) {
            tokens += trie.subtree_tokens(i as u32).len();
        }
        i = n.subtree_end as usize;
    }
    tokens
}

/// The token sets of DFA state `state` of a lexeme in the trie subtrees
/// where the lexeme can end (for a JSON string, those holding a quote):
/// [`lexeme_info`]'s exits, and its inside tokens less those of subtrees
/// read without ending, which are skipped. A small part of a whole walk
/// when the state reads most of the vocabulary; for a state whose unended
/// strings a mask's other states read (see `covered`).
///
/// A lexeme without safe groups yet is walked without them first, up to
/// a [`SHORT_WALK_SHARE`] of the trie's nodes: where it ends only below
/// few of them, that walk costs less than the groups (three keys matching
/// unanchored patterns spent 10M of a mask's 29M instructions on theirs),
/// and a walk that passes the bound goes again with them.
pub fn lexeme_ending_info(engine: &Engine, lexeme: &Lexeme, state: u32) -> Arc<TokenInfo> {
    let ending = Some(lexeme.ending_groups());
    if lexeme.safe_groups_pending() {
        let mut walk = DfaWalk::by_groups(engine, lexeme, false);
        walk.ending_only = ending;
        walk.visits_left = Some(engine.vocab().trie().nodes().len() / SHORT_WALK_SHARE);
        if let Some(info) = walk_from(engine, walk, state) {
            return info;
        }
    }
    let mut walk = DfaWalk::new(engine, lexeme);
    walk.ending_only = ending;
    walk_from(engine, walk, state).expect("an unbounded walk")
}

/// The walk of the subtree of node `i` read into state `t` of `walk`'s
/// DFA, if kept in the DFA's [`SubtreeWalks`].
fn known_subtree_walk(walk: &DfaWalk, i: usize, t: u32) -> Option<Arc<SubtreeWalk>> {
    let key = (walk.lexeme.token_class(t, walk.trie.max_len()), i as u32);
    walk.lexeme.pieces.lock().get(&key)
}

/// The walk of the subtree of node `i` read into state `t` of `walk`'s
/// DFA (see [`DfaWalk::subtree`]), kept in the DFA's [`SubtreeWalks`].
pub(crate) fn subtree_walk(walk: &mut DfaWalk, i: usize, t: u32) -> Arc<SubtreeWalk> {
    let lexeme = walk.lexeme;
    let key = (lexeme.token_class(t, walk.trie.max_len()), i as u32);
    known_subtree_walk(walk, i, t).unwrap_or_else(|| {
        let p = Arc::new(walk.subtree(i, t));
        if lexeme.pieces.lock().insert(key, p.clone()) {
            lexeme.note_learned(p.memory());
        }
        p
    })
}
