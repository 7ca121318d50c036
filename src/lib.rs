//! cgram: grammar-constrained decoding for local LLM runtimes.
//!
//! Front ends ([`gbnf`], JSON Schema, regex) produce the grammar [`ir`]; the
//! [`compile`] layer turns it into lexeme DFAs and parser rules specialised
//! to a [`vocab::Vocab`]; a [`matcher::Matcher`] walks it one token at a
//! time and fills token masks. The C API lives in [`ffi`].

pub mod compile;
pub mod error;
pub mod gbnf;
pub mod ir;
pub mod matcher;
pub mod vocab;

pub use compile::{compile, CompileOptions, CompiledGrammar, Kind};
pub use error::{Error, ErrorKind, Result};
pub use vocab::{Vocab, TOKEN_SPECIAL};
pub use matcher::Matcher;
