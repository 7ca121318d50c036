//! A small deterministic generator for randomized tests (xorshift64): the
//! same sequence on every run and platform, so that a failure reproduces
//! from its seed.

/// Pseudo-random indices from a non-zero seed.
pub(crate) struct TestRng(u64);

impl TestRng {
    pub(crate) fn new(seed: u64) -> TestRng {
        TestRng(seed)
    }

    /// The next value in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}
