//! Regex front end: ECMA-262 regular expressions (the dialect of JSON
//! Schema's `pattern` and of `CG_KIND_REGEX`) and JSON Schema `format`s,
//! translated into IR expressions over Unicode code points.
//!
//! # Patterns
//!
//! [`to_expr`] gives the exact set of strings a pattern accepts, the way
//! `new RegExp(pattern, 'u').test(s)` decides it ([`Anchoring::Search`]) or
//! the way `^(?:pattern)$` does ([`Anchoring::Full`]). Matching is on code
//! points (the `u` flag), with no flags otherwise: no `i`, no `m` (`^` and
//! `$` are the string's ends), no `s` (`.` excludes `\n \r \u2028 \u2029`).
//!
//! Supported: literals and every escape of the `u` grammar (`\n \r \t \v
//! \f \0 \cX \xHH \uHHHH` with surrogate pairs joined, `\u{H...}`, `\/` and
//! the other syntax characters), `.`, classes with ranges, negation and
//! class escapes, `\d \D \w \W \s \S` with their ECMA-262 definitions (ASCII
//! `\d` and `\w`; `\s` is WhiteSpace + LineTerminator, `\u00a0 \ufeff` and
//! `Zs` included), `\p{...}`/`\P{...}` (General_Category values and aliases,
//! `Script=`/`sc=`, `Script_Extensions=`/`scx=`, and the binary properties
//! of ECMA-262's table, spelled exactly as ECMA-262 requires), groups
//! (capturing, `(?:...)`, `(?<name>...)`), alternation, every quantifier
//! (lazy ones match the same strings), and the assertions `^ $ \b \B`
//! anywhere (inside groups, alternatives and loops) and lookarounds
//! `(?=...) (?!...) (?<=...) (?<!...)` wherever the translation in
//! [`translate`] can express them exactly.
//!
//! Errors: [`crate::ErrorKind::Parse`] for patterns ECMA-262 rejects;
//! [`crate::ErrorKind::Unsupported`] for backreferences (`\1`, `\k<name>`:
//! not regular) and the few lookaround placements described in
//! [`translate`]; [`crate::ErrorKind::Limit`] for patterns longer than
//! 100,000 characters, nested repetition counts whose product exceeds
//! 10,000, nesting deeper than 200, or translations above 200,000
//! expression nodes. Messages name the construct and its offset (in code
//! points from 0).
//!
//! A lone surrogate (`\uD800`, `[\uDC00-\uDFFF]`) matches nothing: text is
//! valid UTF-8, so it never contains one.
//!
//! ## Patterns that need the legacy (non-`u`) grammar
//!
//! Real schemas contain patterns that are syntax errors with the `u` flag
//! but valid without it, such as `\-` or `\_` outside a class, a lone `{`
//! or `]`, or `[\w-.]`. Python's `re` and most validators accept them, so
//! [`to_expr`] retries such a pattern with Annex B's grammar (see
//! [`RegexOptions::legacy_fallback`]): identity escapes of any character,
//! lone `{ } ]` as literals, legacy octal escapes (`\12`), `\c` without a
//! letter as a backslash, class escapes as range bounds (`[\w-.]` is `\w`,
//! `-` and `.`), and quantified lookaheads. Differences from JavaScript
//! without `u` remain in that mode: characters are still code points (a
//! non-`u` JavaScript regex sees an astral character as two UTF-16 units,
//! so `^.$` would not match `😀` there), `\u{...}` is still a code point
//! escape, and `\p{...}` is still a property (both mean letters without
//! `u`). Patterns valid with `u` never reach this mode.
//!
//! # Formats
//!
//! See [`format_expr`] and the [`formats`] module.

pub(crate) mod expr;
pub mod formats;
mod parser;
pub mod translate;
mod unicode;

use crate::error::{ErrorKind, Result};
use crate::ir::Expr;
use crate::limits::Deadline;

pub use parser::{Node, MAX_NESTING, MAX_PATTERN_LEN, MAX_REPEAT_PRODUCT};
pub use translate::MAX_EXPR_SIZE;

/// How a pattern relates to the whole string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchoring {
    /// JSON Schema `pattern`: the string matches if the pattern matches
    /// somewhere in it (`^` and `$` anchor to the string's ends).
    Search,
    /// `CG_KIND_REGEX`: the whole string must match the pattern.
    Full,
}

/// Options of [`to_expr_with`].
#[derive(Clone, Copy, Debug)]
pub struct RegexOptions {
    /// Retry a pattern that the `u` grammar rejects with the legacy (Annex
    /// B) grammar, keeping code point semantics. On by default.
    pub legacy_fallback: bool,
    /// When the translation gives up (the compilation's `max_compile_ms`);
    /// none by default.
    pub deadline: Deadline,
}

impl Default for RegexOptions {
    fn default() -> Self {
        RegexOptions {
            legacy_fallback: true,
            deadline: Deadline::none(),
        }
    }
}

/// The set of strings (of code points, not JSON-encoded) that `pattern`
/// accepts under `anchoring`, as a regular IR expression.
pub fn to_expr(pattern: &str, anchoring: Anchoring) -> Result<Expr> {
    to_expr_with(pattern, anchoring, RegexOptions::default())
}

/// [`to_expr`] with options.
pub fn to_expr_with(pattern: &str, anchoring: Anchoring, options: RegexOptions) -> Result<Expr> {
    let node = match parser::parse(pattern, parser::Syntax::Unicode) {
        Ok(n) => n,
        Err(e) if e.kind() == ErrorKind::Parse && options.legacy_fallback => {
            match parser::parse(pattern, parser::Syntax::Legacy) {
                Ok(n) => n,
                // A construct that is not supported in the legacy reading
                // says more than the `u` syntax error.
                Err(e2) if e2.kind() != ErrorKind::Parse => return Err(e2),
                Err(_) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let (prefix, suffix) = match anchoring {
        Anchoring::Search => (expr::any_star(), expr::any_star()),
        Anchoring::Full => (Expr::Empty, Expr::Empty),
    };
    translate::translate(&node, prefix, suffix, &options.deadline)
}

/// Parses a pattern in the ECMAScript dialect of C++'s `std::regex`
/// (libstdc++), keeping its capturing groups and lazy quantifiers: the
/// dialect of llama.cpp's lazy-grammar trigger patterns (see
/// [`crate::trigger`]).
pub fn parse_std_regex(pattern: &str) -> Result<Node> {
    parser::parse(pattern, parser::Syntax::StdRegex)
}

/// The strings in which `node` matches somewhere (what `std::regex_search`
/// and `RegExp.prototype.test` decide), as a regular IR expression.
/// An error once `deadline` passes.
pub fn search_language(node: &Node, deadline: &Deadline) -> Result<Expr> {
    translate::translate(node, expr::any_star(), expr::any_star(), deadline)
}

/// Whether a regular expression (no references) matches `s`, by
/// derivatives: slow, but independent of the compiler, for tests.
#[cfg(test)]
pub(crate) fn expr_matches(e: &Expr, s: &str) -> bool {
    expr::matches(e, s)
}

/// The strings a JSON Schema `format` accepts, or `None` for formats that
/// are not checked (unknown formats are annotations). See [`formats`] for
/// the list and the rule used for each.
pub fn format_expr(format: &str) -> Option<Expr> {
    formats::format_expr(format)
}

/// Does the expression use intersection or complement? Such expressions
/// must be compiled as one lexeme (the compiler builds `And`/`Not` only as
/// DFA products), which [`regex_grammar`] asks for with
/// [`crate::ir::LexemeHint::Always`]; other front ends embedding these
/// expressions should do the same.
pub fn has_boolean(e: &Expr) -> bool {
    if matches!(e, Expr::And(_) | Expr::Not(_) | Expr::Rfc3339(_)) {
        return true;
    }
    let mut found = false;
    e.for_each_child(|c| found |= has_boolean(c));
    found
}

/// The grammar of `CG_KIND_REGEX`: the whole output matches `pattern`. An
/// error once `deadline` passes.
pub fn regex_grammar(pattern: &str, deadline: &Deadline) -> Result<crate::ir::Grammar> {
    let options = RegexOptions {
        deadline: *deadline,
        ..RegexOptions::default()
    };
    let expr = to_expr_with(pattern, Anchoring::Full, options)?;
    let boolean = has_boolean(&expr);
    let mut b = crate::ir::GrammarBuilder::new();
    let root = b.add_rule("root");
    b.set_body(root, expr);
    if boolean {
        b.set_lexeme_hint(root, crate::ir::LexemeHint::Always);
    }
    Ok(b.finish(root))
}

#[cfg(test)]
mod tests {
    use super::expr::matches;
    use super::*;

    fn check(p: &str, yes: &[&str], no: &[&str]) {
        let e = to_expr(p, Anchoring::Search).unwrap_or_else(|e| panic!("{p}: {e}"));
        for s in yes {
            assert!(matches(&e, s), "{p:?} should match {s:?}; expr {e:?}");
        }
        for s in no {
            assert!(!matches(&e, s), "{p:?} should not match {s:?}; expr {e:?}");
        }
    }

    #[test]
    fn anchors() {
        check("^abc$", &["abc"], &["xabc", "abcx", ""]);
        check("abc", &["abc", "xxabcyy"], &["ab", ""]);
        check("a^b", &[], &["ab", "a^b", ""]);
        check("(^a|b)c", &["ac", "xbc", "bc"], &["xac", "c"]);
        check("^$|^[A-Z][a-z]*$", &["", "Abc"], &["abc", "A1"]);
        check("(^[^5]*$)|7", &["123", "", "575"], &["55"]);
        check(
            "^(\\/?((\\.{2})|([a-z0-9\\-]*))($|\\/))*$",
            &["", "a/b", "/a/..", "a/", "..//"],
            &["A", "a/.b"],
        );
        check("x$|^y", &["ax", "yb"], &["xa", "by"]);
    }

    #[test]
    fn word_boundaries() {
        check(
            "\\bfoo\\b",
            &["foo", "a foo b", "foo."],
            &["foox", "xfoo", "fo"],
        );
        check("\\Bfoo", &["xfoo"], &["foo", " foo"]);
        check("a\\b", &["a", "a b"], &["ab"]);
        check("^\\b$", &[], &[""]);
        check("^\\B$", &[""], &["a"]);
        check("(\\b\\w+\\b ?)+$", &["ab cd", "x"], &[]);
        check("\\b", &["a", " a"], &["", " ", "-"]);
    }

    #[test]
    fn lookarounds() {
        check(
            "^(?=.*\\d)(?=.*[a-z]).{4,}$",
            &["ab12", "1abc"],
            &["abcd", "1234", "a1"],
        );
        check(
            "^((?!mode)(?!Mode).)*$",
            &["", "abc", "mod", "Mod e"],
            &["mode", "xModey"],
        );
        check(
            "^(?!pattern$).*$",
            &["patterns", "", "xpattern"],
            &["pattern"],
        );
        check("foo(?!bar)", &["foo", "foobaz", "foobarfoo"], &["foobar"]);
        check("(?<!x)foo", &["foo", "afoo", "xfoo foo"], &["xfoo"]);
        check("(?<=\\$)\\d+", &["$5"], &["5", "$"]);
        check(
            "^([\\da-z](?:(?!.*--)[\\da-z-]*[\\da-z])?)$",
            &["a", "a-b", "ab"],
            &["a--b", "-a", "a-"],
        );
        check("(?=a)b", &[], &["ab", "b", "a"]);
        check("(?=(a))a", &["a"], &["b"]);
        check(
            "^(?!.*\\/)^(.*[^.]+.*)$",
            &["a.b", "abc"],
            &["a/b", "...", ""],
        );
    }

    #[test]
    fn escapes_and_classes() {
        check("^\\cC$", &["\u{3}"], &["cC"]);
        check("^\\u{1F600}$", &["😀"], &["\u{1F601}"]);
        check("^\\uD83D\\uDE00$", &["😀"], &[]);
        check("^[\\d-]+$", &["1-2"], &["a"]);
        check(
            "^\\s$",
            &["\u{a0}", "\u{feff}", "\u{2029}", "\u{3000}"],
            &["\u{180e}", "a"],
        );
        check("^.$", &["a", "😀"], &["\n", "\u{2028}"]);
        check("^[^]$", &["\n"], &[""]);
        check("^[]$", &[], &["", "a"]);
        check("^\\p{Lu}+$", &["ABÉ"], &["aB"]);
        check("^\\-$", &["-"], &[]);
        check("^[\\w-.]+$", &["a-b.c"], &["a b"]);
        check("a{2}}", &["aa}"], &["a}"]);
    }

    #[test]
    fn errors() {
        use crate::ErrorKind;
        let k = |p: &str| to_expr(p, Anchoring::Search).unwrap_err().kind();
        assert_eq!(k("(a)\\1"), ErrorKind::Unsupported);
        assert_eq!(k("(?<n>a)\\k<n>"), ErrorKind::Unsupported);
        assert_eq!(k("a**"), ErrorKind::Parse);
        assert_eq!(k("(?i)a"), ErrorKind::Parse);
        assert_eq!(k("[z-a]"), ErrorKind::Parse);
        assert_eq!(k("a{3,2}"), ErrorKind::Parse);
        assert_eq!(k("(a{100}){101}"), ErrorKind::Limit);
        assert_eq!(k("\\p{Foo}"), ErrorKind::Parse);
        assert_eq!(k("(?=\\w*x)a+(?<=y\\w*)"), ErrorKind::Unsupported);
        let m = to_expr("ab(c", Anchoring::Search).unwrap_err();
        assert!(m.message().contains("offset 2"), "{m}");
    }
}
