//! The token trie: every text token's bytes, shared prefixes stored once.
//!
//! Nodes are kept in one flat array in depth-first order, so that a walk is
//! a forward scan that can skip a whole subtree with one jump. Tokens are
//! numbered in the same order ("trie order"): the tokens ending at a node
//! and the tokens of a whole subtree are each one contiguous range of
//! [`TokenTrie::token_ids`]. The root is implicit: its children are the
//! nodes of depth 1, the whole array in order.

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

/// Coarse byte groups (each ASCII punctuation character alone, letters,
/// digits, controls, UTF-8 lead and continuation bytes), so that a subtree's
/// bytes fit in one `u64`: see [`TokenTrie::groups_below`].
pub fn byte_group(b: u8) -> u32 {
    match b {
        0x00..=0x1f => 0,
        b' ' => 1,
        b'0'..=b'9' => 2,
        b'A'..=b'Z' => 3,
        b'a'..=b'z' => 4,
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

/// A byte trie over a vocabulary's text tokens.
#[derive(Clone, Debug)]
pub struct TokenTrie {
    /// Depth-first nodes, plus one sentinel at the end (`tok_start` = number
    /// of tokens) so that ranges can always look one node ahead.
    nodes: Vec<TrieNode>,
    /// Token ids in trie order.
    token_ids: Vec<u32>,
    /// Per node: the [`byte_group`]s of every byte strictly below it.
    groups_below: Vec<u64>,
    /// Per node: the most bytes below it on one path (its subtree's height).
    height_below: Vec<u16>,
    max_len: usize,
}

impl TokenTrie {
    /// Builds the trie over `(id, bytes)` pairs; empty byte strings are
    /// skipped. Several ids may share the same bytes.
    pub fn build<'a>(tokens: impl IntoIterator<Item = (u32, &'a [u8])>) -> TokenTrie {
        let mut sorted: Vec<(&[u8], u32)> = tokens
            .into_iter()
            .filter(|(_, b)| !b.is_empty())
            .map(|(id, b)| (b, id))
            .collect();
        sorted.sort_unstable();
        let mut nodes: Vec<TrieNode> = Vec::with_capacity(sorted.len() * 2);
        let mut token_ids = Vec::with_capacity(sorted.len());
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
        let mut groups_below = vec![0u64; n];
        let mut height_below = vec![0u16; n];
        for i in (0..n).rev() {
            let mut g = 0u64;
            let mut h = 0u16;
            let mut c = i + 1;
            while c < nodes[i].subtree_end as usize {
                g |= (1u64 << byte_group(nodes[c].byte)) | groups_below[c];
                h = h.max(1 + height_below[c]);
                c = nodes[c].subtree_end as usize;
            }
            groups_below[i] = g;
            height_below[i] = h;
        }
        let max_len = nodes.iter().map(|n| n.depth as usize).max().unwrap_or(0);
        TokenTrie {
            nodes,
            token_ids,
            groups_below,
            height_below,
            max_len,
        }
    }

    /// The [`byte_group`]s of all bytes below node `i` (a walk whose state
    /// loops on all of them accepts the whole subtree at once).
    #[inline]
    pub fn groups_below(&self, i: u32) -> u64 {
        self.groups_below[i as usize]
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

    /// All nodes; the last one is a sentinel that is not part of the trie.
    pub fn nodes(&self) -> &[TrieNode] {
        &self.nodes
    }

    /// Number of real nodes (without the sentinel): the root's subtree end.
    pub fn root_end(&self) -> u32 {
        (self.nodes.len() - 1) as u32
    }

    /// Token ids in trie order.
    pub fn token_ids(&self) -> &[u32] {
        &self.token_ids
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
    }
}
