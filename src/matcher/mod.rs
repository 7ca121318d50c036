//! The matcher runtime: one per sequence.

use std::sync::Arc;

use crate::compile::CompiledGrammar;
use crate::error::{Error, Result};

/// Walks a compiled grammar one token at a time. Cheap to clone.
#[derive(Clone)]
pub struct Matcher {
    grammar: Arc<CompiledGrammar>,
}

impl Matcher {
    pub fn new(grammar: Arc<CompiledGrammar>) -> Matcher {
        Matcher { grammar }
    }

    pub fn grammar(&self) -> &Arc<CompiledGrammar> {
        &self.grammar
    }

    /// Fills `mask` (`ceil(vocab/32)` words): bit `t % 32` of word `t / 32`
    /// is set iff token `t` is allowed next.
    pub fn fill_mask(&mut self, mask: &mut [u32]) -> Result<()> {
        let _ = mask;
        Err(Error::unsupported("not written yet"))
    }

    /// Advances on `token`; on error the state is unchanged.
    pub fn accept(&mut self, token: u32) -> Result<()> {
        let _ = token;
        Err(Error::unsupported("not written yet"))
    }

    /// Advances on raw text bytes (no token identity); on error the state is
    /// unchanged.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let _ = bytes;
        Err(Error::unsupported("not written yet"))
    }

    /// Undoes the last `n` accepted tokens.
    pub fn rollback(&mut self, n: usize) -> Result<()> {
        let _ = n;
        Err(Error::unsupported("not written yet"))
    }

    /// Back to the start state.
    pub fn reset(&mut self) {}

    /// End-of-sequence is allowed now (the output so far is complete).
    pub fn is_accepting(&self) -> bool {
        false
    }

    /// EOS was accepted, or nothing at all can follow.
    pub fn is_terminated(&self) -> bool {
        false
    }

    /// Tokens whose text the grammar forces next (jump-forward), at most `cap`.
    pub fn forced_tokens(&mut self, cap: usize) -> Result<Vec<u32>> {
        let _ = cap;
        Err(Error::unsupported("not written yet"))
    }

    /// Number of tokens accepted since the start (what `rollback` can undo).
    pub fn num_tokens(&self) -> usize {
        0
    }
}
