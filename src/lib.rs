//! cgram: grammar-constrained decoding for local LLM runtimes.
//!
//! Front ends ([`gbnf`], JSON Schema, regex) produce the grammar [`ir`]; the
//! [`compile`] layer turns it into lexeme DFAs and parser rules specialised
//! to a [`vocab::Vocab`]; a [`matcher::Matcher`] walks it one token at a
//! time and fills token masks. The C API lives in [`ffi`].

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
pub mod trigger;
pub mod util;
pub mod vocab;

pub use compile::CompiledGrammar;
pub use source::{compile, CompileOptions, Kind};

/// See the `mimalloc` feature in `Cargo.toml`.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use error::{Error, ErrorKind, Result};
pub use matcher::Matcher;
pub use vocab::{Vocab, TOKEN_SPECIAL};
