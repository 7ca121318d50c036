//! `cg_matcher`: one sequence's position in a grammar; masks, accepting
//! tokens, rollback.

use std::ffi::c_int;
use std::sync::Arc;

use super::args::{array_mut, bytes_arg, null, token_arg};
use super::error::{catch_quietly, guard, guard_int, guard_ptr, internal_error, CG_OK};
use super::grammar::cg_grammar;
use super::handle::{handle, Handle};
use crate::error::{Error, Result};
use crate::matcher::{AnyMatcher, Matcher};

/// The state of one sequence being generated. Not thread-safe: use one
/// matcher from one thread at a time (different matchers, even of the same
/// grammar, may run on different threads at once).
pub struct cg_matcher {
    pub(crate) inner: AnyMatcher,
}

handle!(cg_matcher, AnyMatcher, "matcher");

/// Fills one mask of exactly the vocabulary's word count; on failure the
/// mask is cleared, so that a caller ignoring the error allows nothing.
pub(crate) fn fill(matcher: &mut AnyMatcher, mask: &mut [u32]) -> Result<()> {
    let result = match catch_quietly(|| matcher.fill_mask(mask)) {
        Ok(result) => result,
        Err(payload) => Err(internal_error(&*payload)),
    };
    if result.is_err() {
        mask.fill(0);
    }
    result
}

/// A new matcher at the start of the grammar, for one sequence. The caller
/// frees it with `cg_matcher_free`; it keeps the grammar alive. Returns NULL
/// on error. Thread-safe (the grammar is only read).
#[no_mangle]
pub unsafe extern "C" fn cg_matcher_new(grammar: *const cg_grammar) -> *mut cg_matcher {
    guard_ptr("cg_matcher_new", || {
        let grammar = cg_grammar::arg(grammar)?;
        Ok(Handle::into_raw(cg_matcher {
            inner: AnyMatcher::Eager(Matcher::new(Arc::clone(grammar))),
        }))
    })
}

/// A copy of a matcher in its current state (cheap; for beam search or for
/// trying tokens). The two then evolve independently. The caller frees the
/// copy with `cg_matcher_free`. Returns NULL on error. The original must not
/// be in use by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn cg_matcher_clone(matcher: *const cg_matcher) -> *mut cg_matcher {
    guard_ptr("cg_matcher_clone", || {
        let m = cg_matcher::arg(matcher)?;
        Ok(Handle::into_raw(cg_matcher { inner: m.clone() }))
    })
}

/// Frees a matcher. NULL is a no-op. Each matcher must be freed exactly
/// once.
#[no_mangle]
pub unsafe extern "C" fn cg_matcher_free(matcher: *mut cg_matcher) {
    cg_matcher::free("cg_matcher_free", matcher)
}

/// Writes the set of tokens allowed next: bit `t % 32` of `mask[t / 32]` is
/// 1 exactly when token `t` may come next, that is when some continuation of
/// the output with it is in the language. EOS tokens are allowed exactly
/// when the matcher is accepting; special tokens only where the grammar
/// names them. Bits past the vocabulary size are 0.
///
/// `mask` must hold `n_words` >= `cg_mask_words(grammar)` words; only the
/// first `cg_mask_words` words are written. Returns `CG_OK`, or a negative
/// `CG_ERR_*`: `CG_ERR_INVALID_ARGUMENT` for a NULL matcher or a NULL or
/// too short mask, which leaves the buffer untouched; `CG_ERR_LIMIT` when
/// the mask needs more work than the grammar's `max_mask_steps`. After any
/// error but the first the mask is all zeros (a caller that ignores it
/// allows nothing). Not thread-safe for one matcher (it updates caches
/// inside the matcher).
#[no_mangle]
pub unsafe extern "C" fn cg_fill_mask(
    matcher: *mut cg_matcher,
    mask: *mut u32,
    n_words: usize,
) -> c_int {
    guard_int("cg_fill_mask", || {
        let m = cg_matcher::arg_mut(matcher)?;
        let need = m.grammar().engine().vocab().mask_words();
        if mask.is_null() {
            return Err(null("mask"));
        }
        if n_words < need {
            return Err(Error::invalid(format!(
                "mask has {n_words} words but the vocabulary of {} tokens needs {need} \
                 (cg_mask_words)",
                m.grammar().engine().vocab().len()
            )));
        }
        let mask = array_mut(mask, need, "mask")?;
        fill(m, mask)?;
        Ok(CG_OK)
    })
}

/// Advances the matcher by one token. Returns `CG_OK`, or a negative
/// `CG_ERR_*` and leaves the matcher unchanged: `CG_ERR_INVALID_ARGUMENT`
/// (NULL matcher, `token` negative or not below the vocabulary size),
/// `CG_ERR_TOKEN_REJECTED` (the grammar does not allow the token here;
/// `cg_last_error` says why), `CG_ERR_TERMINATED` (the matcher already
/// accepted EOS). Accepting an EOS token (allowed when the matcher is
/// accepting) terminates the matcher. Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_accept(matcher: *mut cg_matcher, token: i32) -> c_int {
    guard_int("cg_accept", || {
        let m = cg_matcher::arg_mut(matcher)?;
        let id = token_arg(token, m.grammar().engine().vocab().len(), "token")?;
        m.accept(id)?;
        Ok(CG_OK)
    })
}

/// Advances the matcher on raw text: `len` bytes at `bytes` (NULL only if
/// `len` is 0), matched as if generated by any tokens that spell them (to
/// force a prefix of the output, or to check a finished output with a fresh
/// matcher). Returns `CG_OK`, or a negative `CG_ERR_*` and leaves the
/// matcher unchanged (`CG_ERR_TOKEN_REJECTED` when the text is not a prefix
/// of the language). The whole call is one step of the history: one
/// `cg_rollback` step undoes it, whatever the number of tokens its text
/// spans. Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_accept_bytes(
    matcher: *mut cg_matcher,
    bytes: *const u8,
    len: usize,
) -> c_int {
    guard_int("cg_accept_bytes", || {
        let m = cg_matcher::arg_mut(matcher)?;
        let bytes = bytes_arg(bytes, len, "bytes")?;
        m.accept_bytes(bytes)?;
        Ok(CG_OK)
    })
}

/// Undoes the last `n_tokens` accepted tokens (speculative decoding: drop
/// the draft tokens the model refused). Returns `CG_OK`, or
/// `CG_ERR_INVALID_ARGUMENT` and leaves the matcher unchanged when
/// `n_tokens` is more than the tokens accepted since the start or the last
/// `cg_reset` (a `cg_accept_bytes` call counts as one token here). Rolling
/// back EOS un-terminates the matcher. Not thread-safe
/// for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_rollback(matcher: *mut cg_matcher, n_tokens: u32) -> c_int {
    guard_int("cg_rollback", || {
        let m = cg_matcher::arg_mut(matcher)?;
        let n = n_tokens as usize;
        let have = m.num_tokens();
        if n > have {
            return Err(Error::invalid(format!(
                "cannot roll back {n} tokens: only {have} accepted since the start"
            )));
        }
        m.rollback(n)?;
        Ok(CG_OK)
    })
}

/// 1 when the output so far is complete (a sentence of the language), so
/// that EOS is allowed now; 0 when not; `CG_ERR_INVALID_ARGUMENT` for NULL.
/// Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_is_accepting(matcher: *const cg_matcher) -> c_int {
    guard_int("cg_is_accepting", || {
        Ok(cg_matcher::arg(matcher)?.is_accepting() as c_int)
    })
}

/// 1 when the matcher has terminated: EOS was accepted, or nothing at all
/// can follow (then the only allowed tokens are EOS); 0 when not;
/// `CG_ERR_INVALID_ARGUMENT` for NULL. Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_is_terminated(matcher: *const cg_matcher) -> c_int {
    guard_int("cg_is_terminated", || {
        Ok(cg_matcher::arg(matcher)?.is_terminated() as c_int)
    })
}

/// Jump-forward decoding: writes to `out` up to `cap` tokens whose text the
/// grammar forces next, whatever the model would choose, and returns how
/// many were written (0 when the next text is not forced). `out` may be
/// NULL only when `cap` is 0. The matcher is not advanced: feed the tokens
/// to the model and `cg_accept` them. Returns a negative `CG_ERR_*` on
/// error. Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_forced_tokens(
    matcher: *mut cg_matcher,
    out: *mut i32,
    cap: usize,
) -> c_int {
    guard_int("cg_forced_tokens", || {
        let m = cg_matcher::arg_mut(matcher)?;
        let cap = cap.min(c_int::MAX as usize);
        let out = array_mut(out, cap, "out")?;
        let tokens = m.forced_tokens(cap)?;
        let n = tokens.len().min(cap);
        for (o, &t) in out.iter_mut().zip(&tokens[..n]) {
            *o = t as i32;
        }
        Ok(n as c_int)
    })
}

/// Puts the matcher back at the start of the grammar, as `cg_matcher_new`
/// made it (to reuse it for a new sequence). NULL is a no-op (and sets
/// `cg_last_error`). Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_reset(matcher: *mut cg_matcher) {
    guard(
        "cg_reset",
        |_| (),
        || {
            cg_matcher::arg_mut(matcher)?.reset();
            Ok(())
        },
    )
}
