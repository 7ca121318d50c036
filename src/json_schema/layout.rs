//! Fixed formatting of JSON output: one whitespace layout only, given by
//! an indent and the item and key separators, as Python's
//! `json.dumps(indent=..., separators=...)` writes. The model's output is
//! then reproducible and cannot loop on whitespace.
//!
//! - `indent` `None`: everything on one line; `Some(n)`: a newline and
//!   `n` spaces per nesting level before each item or member and before the
//!   closing bracket of a non-empty array or object.
//! - The item separator (`","` with optional whitespace around it; default
//!   `", "` on one line, `","` with an indent) goes between items and
//!   members, before the newline of an indent.
//! - The key separator (`":"` with optional whitespace; default `": "`)
//!   goes between a member's name and its value.
//! - Empty arrays and objects are `[]` and `{}`; nothing comes before or
//!   after the whole value.
//!
//! Indentation grows with depth, which no context-free grammar can count
//! without bound: with an indent, arrays and objects nested deeper than
//! [`MAX_INDENT_DEPTH`] levels can only be empty.

use crate::error::{Error, Result};

/// Most spaces per indentation level.
pub const MAX_INDENT: u32 = 16;
/// Deepest nesting of non-empty arrays and objects under an indent.
pub const MAX_INDENT_DEPTH: u32 = 32;
/// Longest separator, in bytes.
pub const MAX_SEPARATOR: usize = 16;

/// One fixed whitespace layout (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixedLayout {
    /// Spaces per nesting level after a newline; `None`: one line.
    pub indent: Option<u32>,
    pub item_separator: String,
    pub key_separator: String,
}

impl FixedLayout {
    /// A layout from its parts; `None` separators take Python's defaults.
    /// Errors name the offending part.
    pub fn new(indent: Option<u32>, item: Option<&str>, key: Option<&str>) -> Result<FixedLayout> {
        if let Some(n) = indent {
            if n > MAX_INDENT {
                return Err(Error::invalid(format!(
                    "json_indent {n} is more than {MAX_INDENT} spaces"
                )));
            }
        }
        let item = item.unwrap_or(if indent.is_some() { "," } else { ", " });
        let key = key.unwrap_or(": ");
        check_separator("json_item_separator", item, ',')?;
        check_separator("json_key_separator", key, ':')?;
        Ok(FixedLayout {
            indent,
            item_separator: item.to_string(),
            key_separator: key.to_string(),
        })
    }

    /// The newline and indentation before a value at `depth` (empty on one
    /// line).
    pub fn newline(&self, depth: u32) -> String {
        match self.indent {
            Some(n) => format!("\n{}", " ".repeat((n * depth) as usize)),
            None => String::new(),
        }
    }
}

/// A separator is its punctuation with JSON whitespace around it.
fn check_separator(what: &str, s: &str, punct: char) -> Result<()> {
    let is_ws = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    let ok = s.len() <= MAX_SEPARATOR
        && s.matches(punct).count() == 1
        && s.chars().all(|c| c == punct || is_ws(c));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{what} {s:?} is not '{punct}' with JSON whitespace (space, tab, newline, \
             carriage return) around it, at most {MAX_SEPARATOR} bytes"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_checks() {
        let l = FixedLayout::new(None, None, None).unwrap();
        assert_eq!(
            (l.item_separator.as_str(), l.key_separator.as_str()),
            (", ", ": ")
        );
        let l = FixedLayout::new(Some(2), None, Some(":")).unwrap();
        assert_eq!(
            (l.item_separator.as_str(), l.key_separator.as_str()),
            (",", ":")
        );
        assert_eq!(l.newline(2), "\n    ");
        assert!(FixedLayout::new(None, Some(";"), None).is_err());
        assert!(FixedLayout::new(None, Some(",,"), None).is_err());
        assert!(FixedLayout::new(None, Some(" , x"), None).is_err());
        assert!(FixedLayout::new(None, None, Some("=")).is_err());
        assert!(FixedLayout::new(Some(17), None, None).is_err());
        assert!(FixedLayout::new(None, Some("\t,\n"), Some(" : ")).is_ok());
    }
}
