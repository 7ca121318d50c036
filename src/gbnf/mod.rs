//! GBNF front end: llama.cpp's grammar dialect to IR.

use crate::error::{Error, Result};
use crate::ir;
use crate::vocab::Vocab;

/// Parses GBNF text into IR with `root` as the start rule. `vocab` resolves
/// `<text>` token elements.
pub fn parse(text: &str, root: &str, vocab: Option<&Vocab>) -> Result<ir::Grammar> {
    let _ = (text, root, vocab);
    Err(Error::unsupported("GBNF parser not written yet"))
}
