//! Checks and conversions of C arguments: handles to references, pointer
//! and length pairs to slices, token ids to checked indices. Each returns
//! an error naming the argument rather than trusting the caller.

use std::mem::size_of;
use std::slice;
use std::sync::Arc;

use super::error::guard;
use super::grammar::cg_grammar;
use super::grammar_cache::cg_grammar_cache;
use super::matcher::cg_matcher;
use super::vocab::cg_vocab;
use crate::error::{Error, Result};
use crate::grammar_cache::GrammarCache;
use crate::matcher::AnyMatcher;
use crate::tokensets::CompiledGrammar;
use crate::tokensets::Engine;

pub(crate) fn null(what: &str) -> Error {
    Error::invalid(format!("{what} is NULL"))
}

pub(crate) unsafe fn vocab_ref<'a>(p: *const cg_vocab) -> Result<&'a Arc<Engine>> {
    p.as_ref().map(|v| &v.inner).ok_or_else(|| null("vocab"))
}

pub(crate) unsafe fn grammar_ref<'a>(p: *const cg_grammar) -> Result<&'a Arc<CompiledGrammar>> {
    p.as_ref().map(|g| &g.inner).ok_or_else(|| null("grammar"))
}

pub(crate) unsafe fn cache_ref<'a>(p: *const cg_grammar_cache) -> Result<&'a GrammarCache> {
    p.as_ref().map(|c| &c.inner).ok_or_else(|| null("cache"))
}

pub(crate) unsafe fn matcher_ref<'a>(p: *const cg_matcher) -> Result<&'a AnyMatcher> {
    p.as_ref().map(|m| &m.inner).ok_or_else(|| null("matcher"))
}

pub(crate) unsafe fn matcher_mut<'a>(p: *mut cg_matcher) -> Result<&'a mut AnyMatcher> {
    p.as_mut()
        .map(|m| &mut m.inner)
        .ok_or_else(|| null("matcher"))
}

/// `len` bytes at `p`; NULL is allowed only when `len` is 0.
pub(crate) unsafe fn bytes_arg<'a>(p: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::invalid(format!(
            "{what} is NULL but its length is {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Error::invalid(format!("{what} length {len} is too large")));
    }
    Ok(slice::from_raw_parts(p, len))
}

/// `len` values of `T` at `p` (NULL allowed only when `len` is 0).
pub(crate) unsafe fn array_arg<'a, T>(p: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    check_array(p, len, what)?;
    Ok(slice::from_raw_parts(p, len))
}

/// Like [`array_arg`], writable.
pub(crate) unsafe fn array_mut<'a, T>(p: *mut T, len: usize, what: &str) -> Result<&'a mut [T]> {
    if len == 0 {
        return Ok(&mut []);
    }
    check_array(p, len, what)?;
    Ok(slice::from_raw_parts_mut(p, len))
}

fn check_array<T>(p: *const T, len: usize, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::invalid(format!(
            "{what} is NULL but its length is {len}"
        )));
    }
    if !(p as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(Error::invalid(format!("{what} is not aligned")));
    }
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(Error::invalid(format!("{what} length {len} is too large")));
    }
    Ok(())
}

/// A token id checked against a vocabulary of `n` tokens.
pub(crate) fn token_arg(token: i32, n: usize, what: &str) -> Result<u32> {
    if token < 0 || token as usize >= n {
        return Err(Error::invalid(format!(
            "{what} {token} is out of range (vocabulary of {n} tokens)"
        )));
    }
    Ok(token as u32)
}

/// Where UTF-8 decoding fails, for messages.
pub(crate) fn utf8_error(what: &str, e: std::str::Utf8Error) -> Error {
    let at = e.valid_up_to();
    match e.error_len() {
        Some(_) => Error::invalid(format!(
            "{what} is not valid UTF-8: invalid byte sequence at byte offset {at}"
        )),
        None => Error::invalid(format!(
            "{what} is not valid UTF-8: incomplete character at byte offset {at} (end of input)"
        )),
    }
}

/// The largest `struct_size` a versioned struct (`cg_compile_options`,
/// `cg_grammar_cache_stats`) may claim. Structs grow by a few fields a
/// release; a larger size is a field left uninitialised, and reading or
/// zeroing that far would touch memory the caller does not own.
pub(crate) const MAX_STRUCT_SIZE: usize = 4096;

/// A caller's `struct_size` for a versioned struct: at least `min` bytes
/// (the fields that never move), at most [`MAX_STRUCT_SIZE`]. `what` names
/// the size, `how` says how to set it right.
pub(crate) fn struct_size_arg(size: usize, min: usize, what: &str, how: &str) -> Result<usize> {
    if size < min || size > MAX_STRUCT_SIZE {
        return Err(Error::invalid(format!(
            "{what} is {size}, not {min} to {MAX_STRUCT_SIZE} bytes: {how}"
        )));
    }
    Ok(size)
}

/// For a caller's struct of `size` bytes at `p` that is larger than the
/// `known` bytes of this library's (a program built against a newer
/// header): the bytes this library does not know must be 0, the default
/// of every field added later. A field set to anything else asks for
/// something this library cannot do, and ignoring it would silently do
/// something else.
pub(crate) unsafe fn unknown_fields_are_zero(
    p: *const u8,
    known: usize,
    size: usize,
    what: &str,
) -> Result<()> {
    if size <= known {
        return Ok(());
    }
    let tail = slice::from_raw_parts(p.add(known), size - known);
    match tail.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(at) => Err(Error::unsupported(format!(
            "{what} sets a field this library does not know (byte {} of {size}; cgram {} knows \
             the first {known}): the program was built against a newer cgram.h; upgrade \
             libcgram, or leave the newer fields at their defaults",
            known + at,
            env!("CARGO_PKG_VERSION")
        ))),
    }
}

pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Frees a handle made by [`into_handle`]; NULL is a no-op.
pub(crate) unsafe fn free_handle<T>(func: &str, p: *mut T) {
    if !p.is_null() {
        guard(
            func,
            |_| (),
            || {
                drop(Box::from_raw(p));
                Ok(())
            },
        )
    }
}
