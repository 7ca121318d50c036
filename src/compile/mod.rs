//! Compiling grammar IR into the automaton the matcher walks.

pub mod lexeme;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ir;
use crate::vocab::Vocab;

/// What kind of source text is being compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gbnf,
    JsonSchema,
    Regex,
    AnyJson,
}

/// JSON: no optional whitespace at all (compact output).
pub const FLAG_JSON_COMPACT: u32 = 1;
/// JSON Schema: `additionalProperties` defaults to false instead of the
/// specification's true (what most other engines do).
pub const FLAG_JSON_NO_EXTRA_PROPERTIES: u32 = 2;
/// GBNF: accept left-recursive grammars (llama.cpp rejects them; cgram's
/// parser handles them).
pub const FLAG_GBNF_ALLOW_LEFT_RECURSION: u32 = 4;

/// Options for [`compile`].
#[derive(Clone, Debug)]
pub struct CompileOptions {
    pub kind: Kind,
    /// GBNF start rule (`root` when `None`).
    pub root: Option<String>,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// JSON: the longest run of whitespace allowed between tokens (`None`:
    /// unbounded). Small models can loop on newlines.
    pub json_max_whitespace: Option<u32>,
    /// Compilation fails with a limit error past this many milliseconds.
    pub max_compile_ms: u64,
    /// Compilation fails with a limit error past this many automaton states.
    pub max_states: usize,
}

/// Default for [`CompileOptions::max_compile_ms`].
pub const DEFAULT_MAX_COMPILE_MS: u64 = 10_000;
/// Default for [`CompileOptions::max_states`].
pub const DEFAULT_MAX_STATES: usize = 1_000_000;

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            kind: Kind::Gbnf,
            root: None,
            flags: 0,
            json_max_whitespace: None,
            max_compile_ms: DEFAULT_MAX_COMPILE_MS,
            max_states: DEFAULT_MAX_STATES,
        }
    }
}

/// A grammar compiled for one vocabulary; immutable and shareable.
pub struct CompiledGrammar {
    vocab: Arc<Vocab>,
}

impl CompiledGrammar {
    pub fn vocab(&self) -> &Arc<Vocab> {
        &self.vocab
    }
}

/// Compiles IR for a vocabulary.
pub fn compile_ir(vocab: &Arc<Vocab>, grammar: &ir::Grammar) -> Result<Arc<CompiledGrammar>> {
    let _ = grammar;
    let _ = vocab;
    Err(Error::unsupported("the compiler is not written yet"))
}

/// Parses and compiles `source` according to `options.kind`.
pub fn compile(vocab: &Arc<Vocab>, source: &[u8], options: &CompileOptions) -> Result<Arc<CompiledGrammar>> {
    let text = std::str::from_utf8(source)
        .map_err(|e| Error::invalid(format!("source is not valid UTF-8: {e}")))?;
    let grammar = match options.kind {
        Kind::Gbnf => crate::gbnf::parse(text, options.root.as_deref().unwrap_or("root"), Some(vocab))?,
        other => return Err(Error::unsupported(format!("{other:?} is not supported yet"))),
    };
    compile_ir(vocab, &grammar)
}
