//! `lenient`: a keyword that no automaton can enforce is left out (and
//! reported) instead of failing the whole schema.
//!
//! Leaving a keyword out widens the schema at that place. That is sound
//! only where the place is read positively: under a negation, a wider
//! schema is a narrower negation. So every evaluation that left something
//! out marks its term (and every term whose node was built from it) as
//! *widened*, and a negation of a widened term is itself left out: `not`
//! becomes true, an `oneOf` branch keeps the overlap with the widened
//! branch, `if` without `then` takes `else` alone. Every other way nodes
//! combine (`allOf`, `anyOf`, properties, items, `uniqueItems`) is
//! monotone, so the result accepts every instance of the schema.
//!
//! Terms are evaluated lazily (an object's property schemas are evaluated
//! when the property is emitted, a negated object negates its property
//! terms), so the widened mark follows terms, not nodes: a negation met
//! later looks its operand up when it is evaluated.

use super::{at, Compiler};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::Dropped;
use crate::ir::Expr;
use crate::json_schema::node::{ArrShape, Node, Term};

impl Compiler<'_> {
    /// Records that `kw` at `ptr` (a JSON pointer) was left out because of
    /// `error`, or returns `error` when not lenient. The evaluation under
    /// way is marked widened.
    pub(super) fn leave_out(&mut self, error: Error, kw: &str, ptr: &str) -> Result<()> {
        // The node algebra reports its deadline as a reason: past the
        // deadline, that is the error.
        self.check_time()?;
        if !self.opts.lenient {
            return Err(error);
        }
        self.saw_widened = true;
        let reason = error.message().to_string();
        let known = self
            .dropped
            .iter()
            .any(|d| d.keyword == kw && d.pointer == ptr && d.reason == reason);
        if !known {
            self.dropped.push(Dropped {
                keyword: kw.to_string(),
                pointer: ptr.to_string(),
                reason,
            });
        }
        Ok(())
    }

    /// The keywords left out so far.
    pub fn take_dropped(&mut self) -> Vec<Dropped> {
        std::mem::take(&mut self.dropped)
    }

    /// Whether the node of `t` left something out (so that negating it
    /// would narrow). Only meaningful once `t` was evaluated.
    pub(super) fn is_widened(&self, t: &Term) -> bool {
        self.opts.lenient && self.widened.contains(t)
    }

    /// Around an evaluation of `t`: starts tracking whether it widens.
    pub(super) fn widen_begin(&mut self) -> bool {
        std::mem::take(&mut self.saw_widened)
    }

    /// After the evaluation of `t` (`outer` from [`widen_begin`]): marks
    /// `t` widened if it or anything it used was, and passes that on.
    pub(super) fn widen_end(&mut self, t: &Term, outer: bool) {
        if self.saw_widened {
            self.widened.insert(t.clone());
        }
        self.saw_widened |= outer;
    }

    /// A cached node of `t` is used: passes its widened mark on.
    pub(super) fn widen_use(&mut self, t: &Term) {
        if self.opts.lenient && self.widened.contains(t) {
            self.saw_widened = true;
        }
    }

    /// A JSON pointer for a term, for reports: its location, or the first
    /// location inside it ("" when it has none, as the root's).
    pub(super) fn term_pointer(&self, t: &Term) -> String {
        match t {
            Term::Loc(id, _) => self.doc.ptr(*id).to_string(),
            Term::Not(x) => self.term_pointer(x),
            Term::And(v) => v
                .iter()
                .map(|x| self.term_pointer(x))
                .find(|p| !p.is_empty())
                .unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// The node of `Not(x)`: the negation of `x`'s node, or (lenient)
    /// any value when that negation cannot be expressed or `x` was
    /// widened.
    pub(super) fn negation(&mut self, x: &Term, n: &Node) -> Result<Node> {
        self.without(Node::any(), x, n)
    }

    /// `acc` without the instances of `x` (whose node is `n`): the node of
    /// `acc ∧ Not(x)`, or (lenient) `acc` when that negation cannot be
    /// expressed or `x` was widened.
    pub(super) fn without(&mut self, acc: Node, x: &Term, n: &Node) -> Result<Node> {
        let ptr = self.term_pointer(x);
        if self.is_widened(x) {
            let e = Error::unsupported(format!(
                "the negation of {} cannot be enforced once a keyword inside it was left out",
                at(&ptr)
            ));
            self.leave_out(e, "not", &ptr)?;
            return Ok(acc);
        }
        match self.minus(&acc, n)? {
            Ok(rest) => Ok(rest),
            Err(e) => {
                let e = Error::unsupported(format!("not of {}: {e}", self.ptr_of(x)));
                self.leave_out(e, "not", &ptr)?;
                Ok(acc)
            }
        }
    }

    /// Before emitting the rule of `t`: notes its location, returning the
    /// one to restore after.
    pub(super) fn emitting_begin(&mut self, t: &Term) -> Option<u32> {
        let outer = self.emitting;
        if let Term::Loc(id, _) = t {
            self.emitting = Some(*id);
        }
        outer
    }

    /// The JSON pointer of the schema whose rule is being emitted ("" when
    /// none: the root, or a combination of schemas).
    pub(super) fn emitting_pointer(&self) -> String {
        self.emitting
            .map(|id| self.doc.ptr(id).to_string())
            .unwrap_or_default()
    }

    /// Remembers where an array shape with `uniqueItems` comes from, for
    /// the report if it has to be left out.
    pub(super) fn note_unique(&mut self, shape: &ArrShape, ptr: &str) {
        if self.opts.lenient && shape.unique {
            if let Some(s) = shape.clone().simplify() {
                self.unique_sites
                    .entry(s)
                    .or_insert_with(|| ptr.to_string());
            }
        }
    }

    /// The items of a `uniqueItems` array, or (lenient) the items without
    /// the uniqueness when no automaton of the allowed size enforces it.
    pub(super) fn unique_or_plain(&mut self, s: &ArrShape) -> Result<Expr> {
        match self.unique_items(s) {
            Ok(e) => Ok(e),
            Err(e)
                if self.opts.lenient
                    && matches!(e.kind(), ErrorKind::Unsupported | ErrorKind::Limit) =>
            {
                let ptr = self
                    .unique_sites
                    .get(s)
                    .cloned()
                    .unwrap_or_else(|| self.emitting_pointer());
                self.leave_out(e, "uniqueItems", &ptr)?;
                let mut plain = s.clone();
                plain.unique = false;
                if plain.contains.is_empty() {
                    self.plain_items(&plain)
                } else {
                    self.counted_items(&plain)
                }
            }
            Err(e) => Err(e),
        }
    }
}

impl Compiler<'_> {
    /// The target of a reference keyword, or (lenient) `None` when it
    /// cannot be followed (outside the document, say): the reference is
    /// left out.
    pub(super) fn ref_or_leave(
        &mut self,
        id: u32,
        kw: &str,
        r: &serde_json::Value,
        ptr: &str,
    ) -> Result<Option<u32>> {
        match self.ref_target(id, kw, r, ptr) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == ErrorKind::Unsupported => {
                self.leave_out(e, kw, ptr)?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}
