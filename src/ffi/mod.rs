//! The C API: the thin boundary between C callers and the safe Rust API.
//!
//! Every entry point checks its arguments (NULL pointers, lengths, token ids,
//! UTF-8), converts them, calls the safe API and converts the result back.
//! Nothing else lives here. No panic crosses the boundary: each call runs
//! under `catch_unwind`, and a panic becomes `CG_ERR_INTERNAL` with the panic
//! message and place in [`cg_last_error`]. Nor does a panic print: the
//! library never writes to its host's stderr (see `error::catch_quietly`).
//!
//! `include/cgram.h` is generated from this file by cbindgen
//! (`scripts/gen-header.sh`), so the doc comments below are the C
//! documentation: they are written for C programmers. The functions are
//! `unsafe` for Rust callers because they take raw pointers; each one's
//! comment states what its pointers must be.
//!
//! One module per C object ([`vocab`], [`grammar`], [`grammar_cache`],
//! [`matcher`], [`triggers`], [`batch`]); [`version`] holds the version
//! and what it promises, [`error`] the error codes and the panic guard,
//! `args` the argument checks and `handle` the one ownership rule of
//! every object (`Handle`). cbindgen reads the
//! modules in that order (`tests/header.rs`), so the header groups its
//! functions by object.

#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

// cbindgen writes the header in the order of these declarations (one C
// object after another, each after what it is made from); the blank lines
// keep rustfmt from sorting them.
pub mod version;

pub mod error;

pub mod vocab;

pub mod grammar;

pub mod grammar_cache;

pub mod matcher;

pub mod batch;

pub mod triggers;

mod args;
mod handle;

pub use batch::*;
pub use error::*;
pub use grammar::*;
pub use grammar_cache::*;
pub use matcher::*;
pub use triggers::*;
pub use version::*;
pub use vocab::*;

use crate::matcher::AnyMatcher;
use crate::tokensets::CompiledGrammar;
use crate::trigger::Triggers;

// What the documented thread-safety rests on: vocabularies and grammars are
// shared across threads, a matcher is moved to a worker by cg_fill_masks.
const _: () = {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    #[allow(dead_code)]
    fn check() {
        send_sync::<crate::tokensets::Engine>();
        send_sync::<CompiledGrammar>();
        send_sync::<Triggers>();
        send::<AnyMatcher>();
    }
};

#[cfg(test)]
mod lock_recovery_tests;
