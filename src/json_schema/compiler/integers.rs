//! `strict_integers`: a number that can only have an integer value is
//! written as a plain integer (`-?(0|[1-9][0-9]*)`), never `12.0` or
//! `1.2e1` (which JSON Schema counts as integers too).

use super::Compiler;
use crate::error::{Error, Result};
use crate::ir::{CharClass, Expr, RuleId};
use crate::json_schema::number::{set_expr, NumAtom};

/// `-?(0|[1-9][0-9]*)`.
fn plain_integer() -> Expr {
    let digits = |lo: char| Expr::Class(CharClass::from_ranges([(lo as u32, '9' as u32)]));
    Expr::seq(vec![
        Expr::optional(Expr::literal("-")),
        Expr::alt(vec![
            Expr::literal("0"),
            Expr::seq(vec![digits('1'), Expr::star(digits('0'))]),
        ]),
    ])
}

/// Whether every number of the atom is an integer: `type: integer`, an
/// integer value (`const`, `enum`), or a multiple of an integer.
fn integral(a: &NumAtom) -> bool {
    a.int == Some(true)
        || a.value.as_ref().is_some_and(|v| v.is_integer())
        || a.mult.iter().any(|m| m.is_integer())
}

impl Compiler<'_> {
    /// The lexeme rule of a set of numbers' JSON texts, honouring
    /// `strict_integers`: one rule per set, referenced by every node that
    /// has it. An `int64` bound alone spells some 600 IR nodes, and a
    /// schema with a hundred integer properties copied them a hundred
    /// times for `minimize` to merge again.
    pub(super) fn number_rule(&mut self, atoms: &[NumAtom]) -> Result<RuleId> {
        if let Some(&r) = self.numbers.get(atoms) {
            return Ok(r);
        }
        let e = self.number_expr(atoms)?;
        let r = self.lexeme(e, "number")?;
        self.numbers.insert(atoms.to_vec(), r);
        Ok(r)
    }

    fn number_expr(&self, atoms: &[NumAtom]) -> Result<Expr> {
        if !self.opts.strict_integers || !atoms.iter().any(integral) {
            return set_expr(atoms).map_err(Error::unsupported);
        }
        let mut alts = Vec::with_capacity(atoms.len());
        for a in atoms {
            let e = a.to_expr().map_err(Error::unsupported)?;
            alts.push(if integral(a) {
                Expr::and(vec![e, plain_integer()])
            } else {
                e
            });
        }
        Ok(Expr::alt(alts))
    }
}
