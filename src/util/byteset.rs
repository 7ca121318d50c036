//! `ByteSet`: a set of bytes as four 64-bit words, copied by value. It
//! answers "which bytes may come next" everywhere that question is asked: the
//! first bytes of a lexeme state or a parser-rule state, the bytes that may
//! follow a rule, the children of a wide trie node, the bytes a walk of the
//! trie may read. Shared by the vocabulary, the compile layer and the
//! token-set layer. Its methods are a few bit operations each and are
//! inlined: a walk asks `contains` once per trie child.

use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign};

/// A set of bytes: bit `b % 64` of word `b / 64` says whether `b` is in it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ByteSet([u64; 4]);

impl ByteSet {
    /// No byte.
    pub const EMPTY: ByteSet = ByteSet([0; 4]);
    /// Every byte.
    pub const ALL: ByteSet = ByteSet([u64::MAX; 4]);

    /// The empty set.
    #[inline]
    pub const fn new() -> ByteSet {
        ByteSet::EMPTY
    }

    /// The set whose bit `b % 64` of word `b / 64` is set for each byte `b`.
    #[inline]
    pub const fn from_words(words: [u64; 4]) -> ByteSet {
        ByteSet(words)
    }

    /// The four words (see [`ByteSet::from_words`]), for code that works a
    /// word at a time.
    #[inline]
    pub const fn words(self) -> [u64; 4] {
        self.0
    }

    /// Adds `b`.
    #[inline]
    pub fn insert(&mut self, b: u8) {
        self.0[(b >> 6) as usize] |= 1u64 << (b & 63);
    }

    /// Adds the bytes `lo..=hi` (none if `lo > hi`), a word at a time.
    #[inline]
    pub fn insert_range(&mut self, lo: u8, hi: u8) {
        for (w, word) in self.0.iter_mut().enumerate() {
            let (wlo, whi) = (w as u32 * 64, w as u32 * 64 + 63);
            let (a, b) = ((lo as u32).max(wlo), (hi as u32).min(whi));
            if a <= b {
                let len = b - a + 1;
                let bits = if len == 64 {
                    u64::MAX
                } else {
                    ((1u64 << len) - 1) << (a - wlo)
                };
                *word |= bits;
            }
        }
    }

    /// Adds `other`'s bytes; whether the set grew.
    #[inline]
    pub fn union_with(&mut self, other: ByteSet) -> bool {
        let old = *self;
        *self |= other;
        old != *self
    }

    /// Whether `b` is in the set.
    #[inline]
    pub const fn contains(self, b: u8) -> bool {
        self.0[(b >> 6) as usize] & (1u64 << (b & 63)) != 0
    }

    /// Whether no byte is in the set.
    #[inline]
    pub const fn is_empty(self) -> bool {
        (self.0[0] | self.0[1] | self.0[2] | self.0[3]) == 0
    }

    /// Whether every byte in the set is below 0x80.
    #[inline]
    pub const fn is_ascii(self) -> bool {
        (self.0[2] | self.0[3]) == 0
    }

    /// Number of bytes in the set.
    #[inline]
    pub const fn len(self) -> u32 {
        self.0[0].count_ones()
            + self.0[1].count_ones()
            + self.0[2].count_ones()
            + self.0[3].count_ones()
    }

    /// The bytes in the set, in increasing order.
    #[inline]
    pub fn iter(self) -> Iter {
        Iter {
            words: self.0,
            word: 0,
        }
    }
}

impl BitOr for ByteSet {
    type Output = ByteSet;
    #[inline]
    fn bitor(mut self, other: ByteSet) -> ByteSet {
        self |= other;
        self
    }
}

impl BitOrAssign for ByteSet {
    #[inline]
    fn bitor_assign(&mut self, other: ByteSet) {
        for (x, y) in self.0.iter_mut().zip(other.0) {
            *x |= y;
        }
    }
}

impl BitAnd for ByteSet {
    type Output = ByteSet;
    #[inline]
    fn bitand(mut self, other: ByteSet) -> ByteSet {
        for (x, y) in self.0.iter_mut().zip(other.0) {
            *x &= y;
        }
        self
    }
}

impl FromIterator<u8> for ByteSet {
    fn from_iter<I: IntoIterator<Item = u8>>(bytes: I) -> ByteSet {
        let mut set = ByteSet::EMPTY;
        for b in bytes {
            set.insert(b);
        }
        set
    }
}

/// The bytes of a [`ByteSet`] in increasing order ([`ByteSet::iter`]).
#[derive(Clone, Debug)]
pub struct Iter {
    /// The bytes not yet returned.
    words: [u64; 4],
    /// The word the next byte is looked for in.
    word: usize,
}

impl Iterator for Iter {
    type Item = u8;
    #[inline]
    fn next(&mut self) -> Option<u8> {
        while self.word < 4 {
            let bits = self.words[self.word];
            if bits != 0 {
                self.words[self.word] = bits & (bits - 1);
                return Some((self.word as u32 * 64 + bits.trailing_zeros()) as u8);
            }
            self.word += 1;
        }
        None
    }
}

/// Shown as its byte ranges: `{0x30-0x39, 0x41}`.
impl fmt::Debug for ByteSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ranges: Vec<(u8, u8)> = Vec::new();
        for b in self.iter() {
            match ranges.last_mut() {
                Some((_, hi)) if *hi as u32 + 1 == b as u32 => *hi = b,
                _ => ranges.push((b, b)),
            }
        }
        f.write_str("{")?;
        for (i, (lo, hi)) in ranges.into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if lo == hi {
                write!(f, "{lo:#04x}")?;
            } else {
                write!(f, "{lo:#04x}-{hi:#04x}")?;
            }
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges_insert_like_bytes() {
        for (lo, hi) in [
            (0u8, 255u8),
            (0, 0),
            (63, 64),
            (5, 200),
            (64, 127),
            (128, 191),
            (255, 255),
            (10, 9),
        ] {
            let mut a = ByteSet::new();
            a.insert_range(lo, hi);
            let b: ByteSet = (lo..=hi).collect();
            assert_eq!(a, b, "{lo}..={hi}");
            assert_eq!(a.len(), (lo..=hi).count() as u32);
            assert_eq!(
                a.iter().collect::<Vec<u8>>(),
                (lo..=hi).collect::<Vec<u8>>()
            );
            assert_eq!(a.is_empty(), lo > hi);
        }
        assert_eq!(ByteSet::ALL.len(), 256);
        assert!(a_to_z().is_ascii() && !ByteSet::ALL.is_ascii());
    }

    fn a_to_z() -> ByteSet {
        (b'a'..=b'z').collect()
    }

    #[test]
    fn set_operations() {
        let a: ByteSet = [0u8, 63, 64, 200, 255].into_iter().collect();
        let b: ByteSet = [1u8, 64, 255].into_iter().collect();
        assert!(a.contains(200) && !a.contains(1));
        assert_eq!((a & b).iter().collect::<Vec<u8>>(), vec![64, 255]);
        assert_eq!((a | b).len(), 6);
        let mut c = a;
        assert!(c.union_with(b));
        assert!(!c.union_with(a));
        assert_eq!(c, a | b);
        assert_eq!(ByteSet::from_words(c.words()), c);
        assert_eq!(ByteSet::default(), ByteSet::EMPTY);
        assert_eq!(format!("{:?}", c), "{0x00-0x01, 0x3f-0x40, 0xc8, 0xff}");
    }
}
