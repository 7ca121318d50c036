//! Sets of bytes as four 64-bit words: the first bytes of a state, the
//! bytes that may follow a rule, the bytes a trie node leads with. Shared by
//! the compile layer, the token-set layer and the matcher.

/// Byte set as four 64-bit words.
pub type ByteSet = [u64; 4];

/// Adds `b`.
pub fn byteset_insert(set: &mut ByteSet, b: u8) {
    set[(b >> 6) as usize] |= 1u64 << (b & 63);
}

/// Inserts the bytes `lo..=hi`, a word at a time.
pub fn byteset_insert_range(set: &mut ByteSet, lo: u8, hi: u8) {
    for (w, word) in set.iter_mut().enumerate() {
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

/// Adds `b`'s bytes to `a`; whether `a` grew.
pub fn byteset_union(a: &mut ByteSet, b: &ByteSet) -> bool {
    let old = *a;
    for (x, y) in a.iter_mut().zip(b) {
        *x |= y;
    }
    old != *a
}

/// Whether `b` is in the set.
pub fn byteset_contains(set: &ByteSet, b: u8) -> bool {
    set[(b >> 6) as usize] & (1u64 << (b & 63)) != 0
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
            let (mut a, mut b): (ByteSet, ByteSet) = ([0; 4], [0; 4]);
            byteset_insert_range(&mut a, lo, hi);
            for x in lo..=hi {
                byteset_insert(&mut b, x);
            }
            assert_eq!(a, b, "{lo}..={hi}");
        }
    }
}
