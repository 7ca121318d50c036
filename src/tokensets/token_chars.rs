//! Each token's characters as a JSON string reads them ([`TokenChars`]):
//! what counted strings ("at most 12 characters") check tokens against,
//! computed once per vocabulary.

use crate::vocab::Vocab;

/// Most characters a [`CountedString`](super::string_counts::CountedString) counts: [`TokenChars`] saturate at
/// 255, so every count compared with them stays below.
pub(crate) const MAX_COUNTED_CHARS: usize = 254;

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
    /// The ids of those tokens.
    closed_ids: Box<[u32]>,
}

impl TokenChars {
    pub(crate) fn new(vocab: &Vocab) -> TokenChars {
        let mut closed = vec![0u32; vocab.mask_words()];
        let mut closed_ids = Vec::new();
        let before_quote = (0..vocab.len() as u32)
            .map(|id| {
                let (n, quote) = chars_before_quote(vocab.token_bytes(id));
                if quote {
                    closed[id as usize >> 5] |= 1 << (id & 31);
                    closed_ids.push(id);
                }
                n
            })
            .collect();
        TokenChars {
            before_quote,
            closed: closed.into_boxed_slice(),
            closed_ids: closed_ids.into_boxed_slice(),
        }
    }

    /// Clears in `mask` the tokens with a closing quote after fewer than
    /// `min` characters ([`Self::clear_outside`] without a maximum).
    pub(crate) fn clear_closed_before(&self, mask: &mut [u32], min: usize) {
        for &id in self.closed_ids.iter() {
            if (self.before_quote[id as usize] as usize) < min {
                mask[id as usize >> 5] &= !(1 << (id & 31));
            }
        }
    }

    /// Whether token `id` has at most `max` characters before a closing
    /// quote, and at least `min` if it holds one (see
    /// [`Self::clear_outside`]).
    pub(crate) fn fits(&self, id: u32, min: usize, max: usize) -> bool {
        let c = self.before_quote[id as usize] as usize;
        let closed = self.closed[id as usize >> 5] >> (id & 31) & 1 == 1;
        c <= max && (c >= min || !closed)
    }

    /// Clears in `mask` the tokens with more than `max` characters before
    /// a closing quote, and those with a closing quote after fewer than
    /// `min` (a word at a time, without branches: it runs over the whole
    /// vocabulary).
    pub(crate) fn clear_outside(&self, mask: &mut [u32], min: usize, max: usize) {
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
