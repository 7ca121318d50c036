//! Checks and conversions of C arguments: handles to references, pointer
//! and length pairs to slices, token ids to checked indices. Each returns
//! an error naming the argument rather than trusting the caller.

use std::mem::size_of;
use std::slice;

use crate::error::{Error, Result};

pub(crate) fn null(what: &str) -> Error {
    Error::invalid(format!("{what} is NULL"))
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
