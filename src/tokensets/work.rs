//! The work budget of one mask.
//!
//! Most masks read cached token sets; the work that is not cached is the
//! parser's: walking the token trie with an Earley [`Walker`] from a
//! parser state seen for the first time, or from a context where a rule
//! ends mid-token. That work grows with the grammar (a parser state with
//! 100,000 alternatives walks each of them under every first byte), so a
//! mask counts it in *parser steps* (an item read past a byte, or an item
//! added by a closure) and stops at the grammar's `max_mask_steps`
//! (`cg_compile_options`). Steps are counted, not time, so that the same
//! mask stops at the same point on any machine.
//!
//! When the budget runs out, [`Walker::push_byte`] and
//! [`Walker::push_kernel`] read nothing more, so every walk winds down at
//! once with partial results; those are never cached (the callers check
//! [`exhausted`]), and the mask fails with a limit error.
//!
//! A mask also has a share of optional analyses ([`take_analysis`]):
//! what walks can do without, so that a mask meeting many new lexemes
//! does not compute each one's.
//!
//! The budget is per thread: a mask runs on one thread from start to end
//! (`cg_fill_masks` runs each matcher's mask on one worker).
//!
//! [`Walker`]: super::earley::Walker
//! [`Walker::push_byte`]: super::earley::Walker::push_byte
//! [`Walker::push_kernel`]: super::earley::Walker::push_kernel

use std::cell::Cell;

thread_local! {
    /// Steps left in the mask running on this thread (`u64::MAX` outside
    /// a mask: walks outside masks are not bounded here).
    static LEFT: Cell<u64> = const { Cell::new(u64::MAX) };
    /// Optional analyses left to the mask running on this thread (see
    /// [`take_analysis`]; `u32::MAX` outside a mask).
    static ANALYSES_LEFT: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// Analyses a mask may compute that its walks can do without (a small
/// lexeme's safe groups, see `lexeme_walk::lexeme_info`): a mask that
/// meets more new lexemes than this walks the others without, and later
/// masks compute theirs. A mask that meets a few new lexemes (nearly
/// every mask) computes as before; the one after `{"` in an object of
/// forty `anyOf` branches does not compute forty.
const MASK_ANALYSES: u32 = 4;

/// Whether the mask running on this thread may compute one more optional
/// analysis (counted when it may); always outside a mask.
pub fn take_analysis() -> bool {
    ANALYSES_LEFT.with(|a| match a.get() {
        0 => false,
        u32::MAX => true,
        left => {
            a.set(left - 1);
            true
        }
    })
}

/// Runs `f` with a budget of `steps`; returns its result and whether the
/// budget ran out.
pub fn with_budget<T>(steps: u64, f: impl FnOnce() -> T) -> (T, bool) {
    /// Puts the outer budget back, even when `f` unwinds (a caught panic
    /// must not leave a spent budget behind on the thread).
    struct Restore(u64, u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            LEFT.with(|l| l.set(self.0));
            ANALYSES_LEFT.with(|a| a.set(self.1));
        }
    }
    let restore = Restore(
        LEFT.with(|l| l.replace(steps.max(1))),
        ANALYSES_LEFT.with(|a| a.replace(MASK_ANALYSES)),
    );
    let out = f();
    let exhausted = exhausted();
    drop(restore);
    (out, exhausted)
}

/// Counts `n` steps.
#[inline]
pub fn charge(n: usize) {
    LEFT.with(|l| l.set(l.get().saturating_sub(n as u64)));
}

/// The budget ran out: walks stop, and what they found is partial.
#[inline]
pub fn exhausted() -> bool {
    LEFT.with(|l| l.get() == 0)
}
