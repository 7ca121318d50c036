//! Sets of token ids as the mask path stores and writes them: sparse
//! lists or whole masks ([`TokenList`]), and the mask being filled
//! ([`MaskFill`]).

use crate::vocab::Vocab;

/// A set of token ids.
pub enum TokenList {
    /// A full mask (one bit per token id).
    Dense(Box<[u32]>),
    /// Token ids.
    Sparse(Box<[u32]>),
}

impl TokenList {
    /// Whether a set of `count` tokens is kept as a whole mask: when its
    /// ids would take more room.
    pub fn is_dense(count: usize, vocab: &Vocab) -> bool {
        count > vocab.len() / 32
    }

    /// The set of `ids` (in any order, repeats allowed).
    pub fn from_ids(ids: Vec<u32>, vocab: &Vocab) -> TokenList {
        if TokenList::is_dense(ids.len(), vocab) {
            let mut words = vec![0u32; vocab.mask_words()];
            for id in ids {
                words[(id >> 5) as usize] |= 1 << (id & 31);
            }
            TokenList::Dense(words.into_boxed_slice())
        } else {
            TokenList::Sparse(ids.into_boxed_slice())
        }
    }

    /// The tokens of trie-order ranges (see [`crate::vocab::TokenTrie::token_ids`]).
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
        } else if TokenList::is_dense(count, vocab) {
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
