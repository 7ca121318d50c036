//! GBNF front end: llama.cpp's grammar dialect to IR.
//!
//! The dialect is exactly what llama.cpp's own parser accepts (see
//! `docs/GBNF-DIALECT.md`): the same texts are accepted and
//! rejected, with the same limits on repetitions. Repetitions stay
//! [`ir::Expr::Repeat`] (llama.cpp desugars them into generated rules; the
//! compiler handles loops natively), groups become nested expressions, and
//! `.` becomes [`ir::CharClass::any`].
//!
//! Entry points:
//! - [`parse`]: text to a [`ir::Grammar`] with a chosen start rule;
//! - [`parse_with`]: the same, optionally refusing left recursion exactly as
//!   llama.cpp does (cgram's engine copes with left recursion; llama.cpp
//!   refuses it, so parity is the caller's choice);
//! - [`parse_rules`] + [`GbnfRules::into_grammar`]: parsing in two steps
//!   (llama.cpp reports a missing start rule when it *builds* the grammar,
//!   not when it parses the text, and tests need to tell the two apart);
//! - [`check_left_recursion`]: a left-recursion check on any IR grammar,
//!   with exact nullability. It is not llama.cpp's verdict: llama.cpp judges
//!   its own desugared rules with a shallow notion of "may be empty", so it
//!   refuses `"a"?*` and `x*` when `x ::= | "y"` (its generated loop rule
//!   starts with a rule that has an empty alternative) but accepts
//!   `("a"?)*`, and misses `a ::= b a | "z"`, `b ::= c`, `c ::= | "x"`.
//!   [`GbnfRules::check_left_recursion`] gives llama.cpp's exact verdict.
//!
//! Where cgram deliberately differs from llama.cpp:
//! - A code point that is a UTF-16 surrogate (`\uD800`) or above U+10FFFF
//!   (`\U00110000`) matches nothing in cgram: such a literal becomes
//!   [`ir::Expr::Nothing`] and such class members are dropped. Text is always
//!   valid UTF-8 for cgram, so no output can contain them (llama.cpp decodes
//!   ill-formed bytes such as `ED A0 80` leniently and could match them).
//! - A NUL character in the grammar text is an error (llama.cpp reads a C
//!   string and silently stops there).
//! - `{m,n}` with `n < m` is an error at once (llama.cpp tries to generate
//!   about 2^64 rules and fails only when memory runs out).
//! - Groups nested deeper than [`MAX_NESTING`] (20,000) are a limit error.
//!   llama.cpp recurses without a bound: on a thread with the usual 8 MiB
//!   stack the pinned build accepts 18,671 nested groups and crashes with
//!   a stack overflow from about 18,700 on. The parser recurses too, on
//!   the compile stack ([`crate::limits::on_compile_stack`]), which holds
//!   far more than this bound needs.
//! - A start rule that is only referenced, never defined (possible when the
//!   only reference sits in an overridden definition) is an error (llama.cpp
//!   reads out of bounds), and llama.cpp's generated rule names (`root_1`)
//!   are not start rules.
//! - An empty grammar (no rule at all) is reported by [`parse_rules`], with
//!   a position; llama.cpp reports it when building the grammar.
//!
//! Everything else was compared with llama.cpp's own parser and
//! `llama_grammar_init_impl` on random grammars: same acceptance, same
//! stage. (Where llama.cpp's left-recursion check misses a left recursion,
//! it then hangs building the grammar; cgram's engine copes.)

mod left_recursion;
mod parser;

use crate::error::{Error, Result};
use crate::ir;
use crate::limits::Deadline;
use crate::vocab::Vocab;

pub use left_recursion::check_left_recursion;
pub use parser::{MAX_NESTING, MAX_REPETITION_THRESHOLD};

/// Parses GBNF text into IR with `root` as the start rule. `vocab` resolves
/// `<text>` token elements; `<[id]>` elements need no vocabulary. Left
/// recursion is accepted (see [`parse_with`]).
///
/// Every syntax error message starts with the `line:column` (1-based) where
/// the problem is and says what was expected there.
pub fn parse(text: &str, root: &str, vocab: Option<&Vocab>) -> Result<ir::Grammar> {
    parse_with(text, root, vocab, &ParseOptions::default())
}

/// Options of [`parse_with`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Refuse the grammars llama.cpp refuses as left-recursive, judged as
    /// llama.cpp judges them (see [`GbnfRules::check_left_recursion`]).
    pub reject_left_recursion: bool,
}

/// [`parse`] with options: with `reject_left_recursion`, the same texts are
/// accepted and refused as by llama.cpp's `llama_grammar_init_impl`.
pub fn parse_with(
    text: &str,
    root: &str,
    vocab: Option<&Vocab>,
    options: &ParseOptions,
) -> Result<ir::Grammar> {
    parse_within(text, root, vocab, options, &Deadline::none())
}

/// [`parse_with`] that gives up with a limit error at `deadline`
/// (checked as rules are read: a 64 MiB text holds millions of rules).
pub fn parse_within(
    text: &str,
    root: &str,
    vocab: Option<&Vocab>,
    options: &ParseOptions,
    deadline: &Deadline,
) -> Result<ir::Grammar> {
    let parsed = crate::limits::on_compile_stack(|| parser::parse_rules(text, vocab, deadline))?;
    let rules = GbnfRules {
        rules: parsed.rules,
        left_recursion: parsed.left_recursion,
    };
    deadline.check()?;
    let left_recursion = rules.check_left_recursion();
    deadline.check()?;
    let grammar = rules.into_grammar(root)?;
    if options.reject_left_recursion {
        left_recursion?;
    }
    Ok(grammar)
}

/// Parsed GBNF rules before a start rule is chosen.
#[derive(Clone, Debug)]
pub struct GbnfRules {
    /// In the order of their first definition; a rule defined again has
    /// the body of its last definition (as in llama.cpp).
    pub rules: Vec<ir::Rule>,
    left_recursion: Option<String>,
}

impl GbnfRules {
    /// llama.cpp's left-recursion verdict, exactly: its check runs on its
    /// own desugaring (a rule per group and per repetition, `x*` as
    /// `x' ::= x x' |`, rules of overridden definitions kept) and counts a
    /// rule as possibly empty only when one of its alternatives is empty.
    /// The error names the rules on the cycle.
    pub fn check_left_recursion(&self) -> Result<()> {
        match &self.left_recursion {
            None => Ok(()),
            Some(message) => Err(Error::parse(message.clone())),
        }
    }

    /// The grammar starting at `root` (see [`select_start`]).
    pub fn into_grammar(self, root: &str) -> Result<ir::Grammar> {
        select_start(self.rules, root)
    }
}

/// Parses GBNF text into its rules, without choosing a start rule: what
/// llama.cpp's parser checks (syntax, limits, undefined rules), and that
/// there is at least one rule.
pub fn parse_rules(text: &str, vocab: Option<&Vocab>) -> Result<GbnfRules> {
    let parsed =
        crate::limits::on_compile_stack(|| parser::parse_rules(text, vocab, &Deadline::none()))?;
    Ok(GbnfRules {
        rules: parsed.rules,
        left_recursion: parsed.left_recursion,
    })
}

/// Makes a grammar of parsed rules, starting at the rule named `root`: the
/// check llama.cpp does when it builds a grammar.
pub fn select_start(rules: Vec<ir::Rule>, root: &str) -> Result<ir::Grammar> {
    let Some(start) = rules.iter().position(|r| r.name == root) else {
        const SHOWN: usize = 8;
        let mut names: Vec<&str> = rules.iter().take(SHOWN).map(|r| r.name.as_str()).collect();
        if rules.len() > SHOWN {
            names.push("...");
        }
        return Err(Error::parse(format!(
            "the grammar has no rule named \"{root}\" to start from (it defines: {})",
            names.join(", ")
        )));
    };
    Ok(ir::Grammar {
        rules,
        start: start as ir::RuleId,
    })
}
