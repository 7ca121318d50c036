//! Regex front end: ECMA-262 regular expressions (the dialect of JSON
//! Schema's `pattern` and of `CG_KIND_REGEX`) and JSON Schema `format`s,
//! translated into IR expressions over Unicode code points.

use crate::error::{Error, Result};
use crate::ir::Expr;

/// How a pattern relates to the whole string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchoring {
    /// JSON Schema `pattern`: the string matches if the pattern matches
    /// somewhere in it (`^` and `$` anchor to the string's ends).
    Search,
    /// `CG_KIND_REGEX`: the whole string must match the pattern.
    Full,
}

/// The set of strings (of code points, not JSON-encoded) that `pattern`
/// accepts under `anchoring`, as a regular IR expression.
pub fn to_expr(pattern: &str, anchoring: Anchoring) -> Result<Expr> {
    let _ = (pattern, anchoring);
    Err(Error::unsupported(
        "the ECMA-262 regex translation is not written yet",
    ))
}

/// The strings a JSON Schema `format` accepts, or `None` for formats that
/// are not checked (unknown formats are annotations).
pub fn format_expr(format: &str) -> Option<Expr> {
    let _ = format;
    None
}

/// The grammar of `CG_KIND_REGEX`: the whole output matches `pattern`.
pub fn regex_grammar(pattern: &str) -> Result<crate::ir::Grammar> {
    let expr = to_expr(pattern, Anchoring::Full)?;
    let mut b = crate::ir::GrammarBuilder::new();
    let root = b.add_rule("root");
    b.set_body(root, expr);
    Ok(b.finish(root))
}
