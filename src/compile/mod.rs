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

/// Options for [`compile`].
#[derive(Clone, Debug)]
pub struct CompileOptions {
    pub kind: Kind,
    /// GBNF start rule (`root` when `None`).
    pub root: Option<String>,
    /// `CG_JSON_*` flags.
    pub flags: u32,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            kind: Kind::Gbnf,
            root: None,
            flags: 0,
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
