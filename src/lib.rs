//! cgram: grammar-constrained decoding for local LLM runtimes.
//!
//! Front ends ([`gbnf`], [`json_schema`], [`regex`]) produce the grammar
//! [`ir`]; [`source`] picks the front end for a source kind; the
//! [`mod@compile`] layer turns IR into lexeme DFAs and parser rules for a
//! [`vocab::Vocab`]; [`tokensets`] computes and caches the tokens each
//! automaton state allows; a [`matcher::Matcher`] walks the automaton one
//! token at a time and fills token masks. The C API lives in [`ffi`].
//! ARCHITECTURE.md draws the layers and lists every cache.

pub mod compile;
pub mod error;
pub mod ffi;
pub mod gbnf;
pub mod grammar_cache;
pub mod ir;
pub mod json_schema;
pub mod limits;
pub mod matcher;
pub mod regex;
pub mod source;
pub mod tokensets;
pub mod trigger;
pub mod util;
pub mod vocab;

pub use source::{compile, CompileOptions, Kind};
pub use tokensets::{CompiledGrammar, Engine};

/// See the `mimalloc` feature in `Cargo.toml`.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use error::{Error, ErrorKind, Result};
pub use matcher::Matcher;
pub use vocab::{Vocab, TOKEN_SPECIAL};
