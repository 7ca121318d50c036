//! The token trie: every text token's bytes, shared prefixes stored once.
//!
//! Nodes are kept in one flat array in depth-first order, so that a walk is
//! a forward scan that can skip a whole subtree with one jump. Tokens are
//! numbered in the same order ("trie order"): the tokens ending at a node
//! and the tokens of a whole subtree are each one contiguous range of
//! [`TokenTrie::token_ids`]. The root is implicit: its children are the
//! nodes of depth 1, the whole array in order.

use crate::util::byteset::ByteSet;

/// One trie node (one byte of one or more tokens).
#[derive(Clone, Copy, Debug)]
pub struct TrieNode {
    /// The byte this node adds to its parent's prefix.
    pub byte: u8,
    /// Depth: length of the prefix this node spells (>= 1).
    pub depth: u16,
    /// Index just past the last node of this node's subtree (the next
    /// sibling, or an ancestor's next sibling).
    pub subtree_end: u32,
    /// Trie-order index of the first token at or below this node. The
    /// tokens ending exactly here are `tok_start .. nodes[i + 1].tok_start`,
    /// the whole subtree's `tok_start .. nodes[subtree_end].tok_start`.
    pub tok_start: u32,
}

/// Coarse byte groups (each ASCII punctuation character alone, most
/// lowercase letters alone, capitals, digits, controls, UTF-8 lead and
/// continuation bytes), so that a subtree's bytes fit in one `u64`: see
/// [`TokenTrie::groups_below`]. Lowercase letters have groups of their own
/// so that a state that refuses one letter ("contains no `b`") still takes
/// whole the subtrees without it; the five rarest in text (`j k q x z`)
/// share one, as the 64 bits hold no more.
#[inline]
pub fn byte_group(b: u8) -> u32 {
    BYTE_GROUPS[b as usize] as u32
}

/// [`byte_group`] of every byte.
static BYTE_GROUPS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = group_of(b as u8) as u8;
        b += 1;
    }
    t
};

const fn group_of(b: u8) -> u32 {
    match b {
        0x00..=0x1f => 0,
        b' ' => 1,
        b'0'..=b'9' => 2,
        b'A'..=b'Z' => 3,
        b'j' | b'k' | b'q' | b'x' | b'z' => 4,
        b'a'..=b'z' => 42 + own_letter_index(b),
        0x7f => 5,
        0x80..=0xbf => 6,
        0xc0..=0xdf => 7,
        0xe0..=0xef => 8,
        0xf0..=0xff => 9,
        // The 32 ASCII punctuation characters, one group each.
        b'!'..=b'/' => 10 + (b - b'!') as u32,
        b':'..=b'@' => 25 + (b - b':') as u32,
        b'['..=b'`' => 32 + (b - b'[') as u32,
        b'{'..=b'~' => 38 + (b - b'{') as u32,
    }
}

/// The place of lowercase letter `b` among those with a group of their
/// own (not `j k q x z`): 0 to 20, groups 42 to 62 (bit 63 is
/// [`INSIDE_CHAR`]).
const fn own_letter_index(b: u8) -> u32 {
    let mut i = 0;
    let mut c = b'a';
    while c < b {
        if !matches!(c, b'j' | b'k' | b'q' | b'x' | b'z') {
            i += 1;
        }
        c += 1;
    }
    i
}

/// Character groups (see [`TokenTrie::char_groups_below`]): ASCII
/// characters keep their [`byte_group`]; a valid UTF-8 sequence of two,
/// three or four bytes (or its beginning, at the end of a token) is one
/// character of group [`CHAR_2`], [`CHAR_3`] or [`CHAR_4`]; bytes that do
/// not form valid UTF-8 are [`CHAR_INVALID`]. These reuse the numbers of
/// the byte groups of non-ASCII bytes, which never occur alone here.
pub const CHAR_2: u32 = 6;
pub const CHAR_3: u32 = 7;
pub const CHAR_4: u32 = 8;
pub const CHAR_INVALID: u32 = 9;
/// The group of the quote `"` (by bytes and by characters alike), the
/// only byte that ends a JSON string.
pub const QUOTE_GROUP: u64 = 1 << group_of(b'"');
/// Set in [`TokenTrie::char_groups_below`] for a node inside a character
/// (its subtree does not start at a character boundary).
pub const INSIDE_CHAR: u64 = 1 << 63;

/// Where a path stands in UTF-8: at a character boundary, or expecting
/// `left` more continuation bytes, the next one within `lo..=hi`.
#[derive(Clone, Copy)]
enum Utf8At {
    Boundary,
    Inside { left: u8, lo: u8, hi: u8 },
}

/// Reads byte `b` at `at`: the new position, the character group the byte
/// starts (if it starts one, or breaks UTF-8).
fn utf8_step(at: Utf8At, b: u8) -> (Utf8At, Option<u32>) {
    if let Utf8At::Inside { left, lo, hi } = at {
        if (lo..=hi).contains(&b) {
            let next = if left == 1 {
                Utf8At::Boundary
            } else {
                Utf8At::Inside {
                    left: left - 1,
                    lo: 0x80,
                    hi: 0xbf,
                }
            };
            return (next, None);
        }
        // A broken sequence: the byte is read afresh, and the group marks
        // the break.
        let (next, _) = utf8_step(Utf8At::Boundary, b);
        return (next, Some(CHAR_INVALID));
    }
    let inside = |left, lo, hi| Utf8At::Inside { left, lo, hi };
    match b {
        0x00..=0x7f => (Utf8At::Boundary, Some(byte_group(b))),
        0xc2..=0xdf => (inside(1, 0x80, 0xbf), Some(CHAR_2)),
        0xe0 => (inside(2, 0xa0, 0xbf), Some(CHAR_3)),
        0xed => (inside(2, 0x80, 0x9f), Some(CHAR_3)),
        0xe1..=0xef => (inside(2, 0x80, 0xbf), Some(CHAR_3)),
        0xf0 => (inside(3, 0x90, 0xbf), Some(CHAR_4)),
        0xf4 => (inside(3, 0x80, 0x8f), Some(CHAR_4)),
        0xf1..=0xf3 => (inside(3, 0x80, 0xbf), Some(CHAR_4)),
        _ => (Utf8At::Boundary, Some(CHAR_INVALID)),
    }
}

/// A byte trie over a vocabulary's text tokens.
#[derive(Clone, Debug)]
pub struct TokenTrie {
    /// Depth-first nodes, plus one sentinel at the end (`tok_start` = number
    /// of tokens) so that ranges can always look one node ahead.
    nodes: Vec<TrieNode>,
    /// Token ids in trie order.
    token_ids: Vec<u32>,
    /// The tokens' bytes in trie order (`path_bytes[path_offsets[k]..]` for
    /// the `k`-th token): walks read the paths of nodes they visit in trie
    /// order, and the vocabulary's own copy, in id order, would be read
    /// at random.
    path_bytes: Vec<u8>,
    path_offsets: Vec<u32>,
    /// Per node: the [`byte_group`]s of every byte strictly below it.
    groups_below: Vec<u64>,
    /// Per node: the most bytes below it on one path (its subtree's height).
    height_below: Vec<u16>,
    /// Per node: the character groups of the strings below it, read from
    /// the node's position (see [`TokenTrie::char_groups_below`]).
    char_groups_below: Vec<u64>,
    /// Per node: the most characters below it on one path.
    char_height_below: Vec<u16>,
    /// Bit `t % 32` of word `t / 32` is set for each token `t` of the trie.
    all_tokens: Vec<u32>,
    /// Per byte group: how many nodes have a byte of it; per character
    /// group: how many characters of it start at a node. What a subtree
    /// of the group is worth to a walk (see `compile::lexeme::SafeGroups`).
    group_weights: [u32; 64],
    char_group_weights: [u32; 64],
    max_len: usize,
    /// The children of wide nodes by byte (see [`TokenTrie::wide_children`]).
    wide: WideChildren,
}

/// Nodes with at least this many children are indexed by child byte.
const WIDE_CHILDREN: usize = 16;

/// The children of the root and of wide nodes, by byte.
#[derive(Clone, Debug)]
struct WideChildren {
    /// Per node (the root last): where its entry is in `bytes`, or
    /// `u32::MAX`.
    entry: Vec<u32>,
    /// Per entry: the children's bytes, and where their nodes start in
    /// `children` (in byte order).
    bytes: Vec<(ByteSet, u32)>,
    children: Vec<u32>,
}

impl WideChildren {
    fn new(nodes: &[TrieNode], root_end: usize) -> WideChildren {
        let mut w = WideChildren {
            entry: vec![u32::MAX; root_end + 1],
            bytes: Vec::new(),
            children: Vec::new(),
        };
        let add = |w: &mut WideChildren, parent: usize, first: usize, end: usize| {
            let mut kids = Vec::new();
            let mut c = first;
            while c < end {
                kids.push(c as u32);
                c = nodes[c].subtree_end as usize;
            }
            if kids.len() >= WIDE_CHILDREN {
                let set: ByteSet = kids.iter().map(|&k| nodes[k as usize].byte).collect();
                w.entry[parent] = w.bytes.len() as u32;
                w.bytes.push((set, w.children.len() as u32));
                w.children.extend(kids);
            }
        };
        add(&mut w, root_end, 0, root_end);
        for (i, node) in nodes[..root_end].iter().enumerate() {
            let end = node.subtree_end as usize;
            if end - i > WIDE_CHILDREN {
                add(&mut w, i, i + 1, end);
            }
        }
        w
    }
}

/// Bottom-up over depth-first trie nodes: per node, the union of what its
/// descendants add and the most they add up on one path, where descendant
/// `c` adds `step(c)` = (groups, count).
fn fold_below(nodes: &[TrieNode], step: impl Fn(usize) -> (u64, u16)) -> (Vec<u64>, Vec<u16>) {
    let n = nodes.len();
    let mut below = vec![0u64; n];
    let mut height = vec![0u16; n];
    for i in (0..n).rev() {
        let (mut g, mut h) = (0u64, 0u16);
        let mut c = i + 1;
        while c < nodes[i].subtree_end as usize {
            let (own, count) = step(c);
            g |= own | below[c];
            h = h.max(count + height[c]);
            c = nodes[c].subtree_end as usize;
        }
        below[i] = g;
        height[i] = h;
    }
    (below, height)
}

/// Per node of a depth-first trie: [`TokenTrie::char_groups_below`] and
/// [`TokenTrie::char_height_below`]; per character group, how many
/// characters of it start at a node.
fn char_groups(nodes: &[TrieNode]) -> (Vec<u64>, Vec<u16>, [u32; 64]) {
    let n = nodes.len();
    // Top-down: each node's UTF-8 position and the group its byte starts.
    let mut at = vec![Utf8At::Boundary; n];
    let mut starts: Vec<Option<u32>> = vec![None; n];
    let mut above: Vec<usize> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let d = node.depth as usize;
        above.truncate(d - 1);
        let parent = above.last().map_or(Utf8At::Boundary, |&p| at[p]);
        (at[i], starts[i]) = utf8_step(parent, node.byte);
        above.push(i);
    }
    let (mut below, height) = fold_below(nodes, |c| starts[c].map_or((0, 0), |k| (1u64 << k, 1)));
    for (i, g) in below.iter_mut().enumerate() {
        if matches!(at[i], Utf8At::Inside { .. }) {
            *g |= INSIDE_CHAR;
        }
    }
    let mut weights = [0u32; 64];
    for k in starts.iter().flatten() {
        weights[*k as usize] += 1;
    }
    (below, height, weights)
}

impl TokenTrie {
    /// Builds the trie over `(id, bytes)` pairs; empty byte strings are
    /// skipped. Several ids may share the same bytes.
    pub fn build<'a>(tokens: impl IntoIterator<Item = (u32, &'a [u8])>) -> TokenTrie {
        // Sorted by bytes, then id. Most comparisons are settled by the
        // first eight bytes, compared as one number (zero-padded, which
        // orders as the bytes do: a shorter token is a prefix there), so
        // sorting 262,144 tokens does not call `memcmp` 4.7 million times.
        let mut keyed: Vec<(u64, &[u8], u32)> = tokens
            .into_iter()
            .filter(|(_, b)| !b.is_empty())
            .map(|(id, b)| {
                let mut head = [0u8; 8];
                let n = b.len().min(8);
                head[..n].copy_from_slice(&b[..n]);
                (u64::from_be_bytes(head), b, id)
            })
            .collect();
        keyed.sort_unstable_by(|x, y| x.0.cmp(&y.0).then_with(|| x.1.cmp(y.1)).then(x.2.cmp(&y.2)));
        let sorted: Vec<(&[u8], u32)> = keyed.into_iter().map(|(_, b, id)| (b, id)).collect();
        let mut nodes: Vec<TrieNode> = Vec::with_capacity(sorted.len() * 2);
        let mut token_ids = Vec::with_capacity(sorted.len());
        let mut path_bytes = Vec::with_capacity(sorted.iter().map(|t| t.0.len()).sum());
        let mut path_offsets = Vec::with_capacity(sorted.len() + 1);
        // Nodes on the path of the previous token, by depth - 1.
        let mut path: Vec<usize> = Vec::new();
        let mut prev: &[u8] = &[];
        for (bytes, id) in sorted {
            let common = prev
                .iter()
                .zip(bytes.iter())
                .take_while(|(a, b)| a == b)
                .count();
            // Close the nodes of the previous path below the common prefix.
            while path.len() > common {
                let idx = path.pop().unwrap();
                nodes[idx].subtree_end = nodes.len() as u32;
            }
            for (d, &b) in bytes.iter().enumerate().skip(common) {
                path.push(nodes.len());
                nodes.push(TrieNode {
                    byte: b,
                    depth: (d + 1).min(u16::MAX as usize) as u16,
                    subtree_end: 0,
                    tok_start: token_ids.len() as u32,
                });
            }
            token_ids.push(id);
            path_offsets.push(path_bytes.len() as u32);
            path_bytes.extend_from_slice(bytes);
            prev = bytes;
        }
        while let Some(idx) = path.pop() {
            nodes[idx].subtree_end = nodes.len() as u32;
        }
        nodes.push(TrieNode {
            byte: 0,
            depth: 0,
            subtree_end: nodes.len() as u32 + 1,
            tok_start: token_ids.len() as u32,
        });
        // Bottom-up: a node's groups are its children's bytes and theirs.
        let n = nodes.len() - 1;
        let (groups_below, height_below) =
            fold_below(&nodes[..n], |c| (1u64 << byte_group(nodes[c].byte), 1));
        let (char_groups_below, char_height_below, char_group_weights) = char_groups(&nodes[..n]);
        let mut group_weights = [0u32; 64];
        for node in &nodes[..n] {
            group_weights[byte_group(node.byte) as usize] += 1;
        }
        let max_len = nodes.iter().map(|n| n.depth as usize).max().unwrap_or(0);
        let words = token_ids.iter().max().map_or(0, |&m| m as usize / 32 + 1);
        let mut all_tokens = vec![0u32; words];
        for &id in &token_ids {
            all_tokens[(id / 32) as usize] |= 1 << (id % 32);
        }
        let wide = WideChildren::new(&nodes, n);
        path_offsets.push(path_bytes.len() as u32);
        TokenTrie {
            wide,
            all_tokens,
            nodes,
            token_ids,
            path_bytes,
            path_offsets,
            groups_below,
            height_below,
            char_groups_below,
            char_height_below,
            max_len,
            group_weights,
            char_group_weights,
        }
    }

    /// Per byte group, how many nodes have a byte of it.
    pub fn group_weights(&self) -> &[u32; 64] {
        &self.group_weights
    }

    /// Per character group, how many characters of it start at a node.
    pub fn char_group_weights(&self) -> &[u32; 64] {
        &self.char_group_weights
    }

    /// The [`byte_group`]s of all bytes below node `i` (a walk whose state
    /// loops on all of them accepts the whole subtree at once).
    #[inline]
    pub fn groups_below(&self, i: u32) -> u64 {
        self.groups_below[i as usize]
    }

    /// The character groups (see [`CHAR_2`]) of all strings below node `i`,
    /// read as characters from the node on, or [`INSIDE_CHAR`] when the
    /// node's path ends inside a character. A walk from a state that reads
    /// every string of these groups (up to [`TokenTrie::char_height_below`]
    /// characters) accepts the whole subtree at once; unlike
    /// [`TokenTrie::groups_below`] this sees through multi-byte characters,
    /// whose bytes lead through different states.
    #[inline]
    pub fn char_groups_below(&self, i: u32) -> u64 {
        self.char_groups_below[i as usize]
    }

    /// The most characters (started) below node `i` on one path.
    #[inline]
    pub fn char_height_below(&self, i: u32) -> u16 {
        self.char_height_below[i as usize]
    }

    /// The longest token, in bytes.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The most bytes below node `i` on one path.
    #[inline]
    pub fn height_below(&self, i: u32) -> u16 {
        self.height_below[i as usize]
    }

    /// The children of node `parent` (`None`: the root) whose byte is in
    /// `bytes`, in byte order, if the node has many children (else `None`:
    /// visiting them all costs no more).
    pub fn wide_children(
        &self,
        parent: Option<u32>,
        bytes: ByteSet,
    ) -> Option<impl Iterator<Item = u32> + '_> {
        let at = parent.unwrap_or(self.root_end()) as usize;
        let entry = *self.wide.entry.get(at)?;
        if entry == u32::MAX {
            return None;
        }
        let (set, start) = self.wide.bytes[entry as usize];
        let (set, bytes) = (set.words(), bytes.words());
        let children = &self.wide.children[start as usize..];
        Some((0..4).flat_map(move |w| {
            let mut bits = set[w] & bytes[w];
            // Rank of the first byte of this word among the children.
            let before: u32 = set[..w].iter().map(|x| x.count_ones()).sum();
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                let rank = before + (set[w] & ((1u64 << b) - 1)).count_ones();
                Some(children[rank as usize])
            })
        }))
    }

    /// All nodes; the last one is a sentinel that is not part of the trie.
    pub fn nodes(&self) -> &[TrieNode] {
        &self.nodes
    }

    /// Number of real nodes (without the sentinel): the root's subtree end.
    pub fn root_end(&self) -> u32 {
        (self.nodes.len() - 1) as u32
    }

    /// The trie's tokens as a bit set (bit `t % 32` of word `t / 32`; as
    /// many words as the largest id needs).
    pub fn all_tokens(&self) -> &[u32] {
        &self.all_tokens
    }

    /// Token ids in trie order.
    pub fn token_ids(&self) -> &[u32] {
        &self.token_ids
    }

    /// The bytes from the root to node `i` (a prefix of every token at or
    /// below it).
    #[inline]
    pub fn path(&self, i: u32) -> &[u8] {
        let n = &self.nodes[i as usize];
        let k = n.tok_start as usize;
        let (start, end) = (
            self.path_offsets[k] as usize,
            self.path_offsets[k + 1] as usize,
        );
        &self.path_bytes[start..end.min(start + n.depth as usize)]
    }

    /// Trie-order range of the tokens ending exactly at node `i`.
    #[inline]
    pub fn tokens_at(&self, i: u32) -> std::ops::Range<u32> {
        self.nodes[i as usize].tok_start..self.nodes[i as usize + 1].tok_start
    }

    /// Trie-order range of all tokens at or below node `i`.
    #[inline]
    pub fn subtree_tokens(&self, i: u32) -> std::ops::Range<u32> {
        let n = &self.nodes[i as usize];
        n.tok_start..self.nodes[n.subtree_end as usize].tok_start
    }

    /// Number of text tokens in the trie.
    pub fn num_tokens(&self) -> usize {
        self.token_ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The node reached by `path` (each step a child's byte).
    fn node(t: &TokenTrie, path: &[u8]) -> u32 {
        let nodes = t.nodes();
        let (mut lo, mut hi) = (0usize, t.root_end() as usize);
        let mut at = None;
        for &b in path {
            let mut i = lo;
            while nodes[i].byte != b {
                i = nodes[i].subtree_end as usize;
                assert!(i < hi, "no child {b:#x}");
            }
            at = Some(i);
            (lo, hi) = (i + 1, nodes[i].subtree_end as usize);
        }
        at.unwrap() as u32
    }

    /// Every group is below [`INSIDE_CHAR`]'s bit; each punctuation
    /// character and each common lowercase letter has a group of its own.
    #[test]
    fn byte_groups_fit_in_63_bits() {
        assert!((0..=255u8).all(|b| byte_group(b) < 63));
        let alone: Vec<u8> = (b'!'..=b'~')
            .filter(|b| !b.is_ascii_alphanumeric())
            .chain((b'a'..=b'z').filter(|b| !b"jkqxz".contains(b)))
            .collect();
        for &b in &alone {
            let same = (0..=255u8)
                .filter(|&c| byte_group(c) == byte_group(b))
                .count();
            assert_eq!(same, 1, "{:?}", b as char);
        }
        assert_eq!(byte_group(b'j'), byte_group(b'z'));
        assert_ne!(byte_group(b'j'), byte_group(b'A'));
    }

    #[test]
    fn character_groups_see_through_utf8() {
        let toks: Vec<(u32, &[u8])> = vec![
            (0, "xé€😀".as_bytes()),
            (1, b"x\xe2\x82"),
            (2, b"y\xc3a"),
            (3, b"z\xe0\x80\x80"),
            (4, "wé".as_bytes()),
        ];
        let t = TokenTrie::build(toks);
        let bit = |g: u32| 1u64 << g;
        // Below "x": a 2-, a 3- and a 4-byte character, and the beginning
        // of a 3-byte one.
        let x = node(&t, b"x");
        assert_eq!(
            t.char_groups_below(x),
            bit(CHAR_2) | bit(CHAR_3) | bit(CHAR_4)
        );
        assert_eq!(t.char_height_below(x), 3);
        assert_eq!(t.height_below(x), 9);
        // Inside a character: no shortcut.
        assert_ne!(t.char_groups_below(node(&t, b"x\xc3")) & INSIDE_CHAR, 0);
        assert_eq!(
            t.char_groups_below(node(&t, "xé".as_bytes())) & INSIDE_CHAR,
            0
        );
        // A lead byte followed by ASCII, and an overlong encoding, break UTF-8.
        assert_ne!(t.char_groups_below(node(&t, b"y")) & bit(CHAR_INVALID), 0);
        assert_ne!(t.char_groups_below(node(&t, b"z")) & bit(CHAR_INVALID), 0);
        assert_eq!(t.char_groups_below(node(&t, b"w")), bit(CHAR_2));
    }

    #[test]
    fn builds_depth_first_with_ranges() {
        let toks: Vec<(u32, &[u8])> = vec![
            (0, b"ab"),
            (1, b"a"),
            (2, b"b"),
            (3, b"abc"),
            (4, b""),
            (5, b"a"),
        ];
        let t = TokenTrie::build(toks);
        let n = t.nodes();
        // a, ab, abc, b + sentinel
        assert_eq!(n.len(), 5);
        assert_eq!(n[0].byte, b'a');
        assert_eq!(n[0].subtree_end, 3);
        assert_eq!(n[1].byte, b'b');
        assert_eq!(n[2].byte, b'c');
        assert_eq!(n[3].byte, b'b');
        assert_eq!(n[3].depth, 1);
        let at_a: Vec<u32> = t.tokens_at(0).map(|k| t.token_ids()[k as usize]).collect();
        assert_eq!(at_a, vec![1, 5]);
        let under_a: Vec<u32> = t
            .subtree_tokens(0)
            .map(|k| t.token_ids()[k as usize])
            .collect();
        assert_eq!(under_a, vec![1, 5, 0, 3]);
        assert_eq!(t.num_tokens(), 5);
        let paths: Vec<&[u8]> = (0..4).map(|i| t.path(i)).collect();
        assert_eq!(paths, [&b"a"[..], b"ab", b"abc", b"b"]);
    }

    /// The children found by byte are those a scan of the siblings finds,
    /// at the root and below a wide node, for several byte sets.
    #[test]
    fn wide_children_by_byte() {
        let mut tokens: Vec<Vec<u8>> = Vec::new();
        for b in (0u8..=255).step_by(3) {
            tokens.push(vec![b]);
            tokens.push(vec![b'x', b, b'y']);
        }
        tokens.push(b"ab".to_vec());
        let t = TokenTrie::build(
            tokens
                .iter()
                .enumerate()
                .map(|(i, b)| (i as u32, b.as_slice())),
        );
        let nodes = t.nodes();
        let x = node(&t, b"x");
        let ab = node(&t, b"a");
        for bytes in [
            ByteSet::ALL,
            ByteSet::EMPTY,
            ByteSet::from_words([0x5555_0000_ffff_0001, 0, 1 << 63, 0x8000_0000]),
        ] {
            for (parent, first, end) in [
                (None, 0, t.root_end() as usize),
                (
                    Some(x),
                    x as usize + 1,
                    nodes[x as usize].subtree_end as usize,
                ),
            ] {
                let mut want = Vec::new();
                let mut c = first;
                while c < end {
                    let b = nodes[c].byte;
                    if bytes.contains(b) {
                        want.push(c as u32);
                    }
                    c = nodes[c].subtree_end as usize;
                }
                let got: Vec<u32> = t.wide_children(parent, bytes).unwrap().collect();
                assert_eq!(got, want, "{parent:?} {bytes:?}");
            }
            // A node with one child is not indexed.
            assert!(t.wide_children(Some(ab), bytes).is_none());
        }
    }
}
