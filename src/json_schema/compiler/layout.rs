//! The whitespace between JSON tokens: free (`ws`, possibly bounded or
//! none with `compact`) or one fixed layout ([`FixedLayout`]).
//!
//! With an indent, the whitespace depends on the nesting depth, so a
//! value's rules depend on it too: the rule caches (by term, array shape,
//! object shape) are kept per depth. Entering an array or object swaps in
//! the caches of the next depth ([`Compiler::enter_container`]); leaving
//! swaps them back. Without an indent the depth stays 0 and the caches
//! are never swapped.

use super::Compiler;
use crate::ir::{Expr, LexemeHint, RuleId};
use crate::json_schema::layout::{FixedLayout, MAX_INDENT_DEPTH};
use crate::json_schema::node::{ArrShape, ObjShape, Term};
use crate::util::hash::FastMap;

type Caches = (
    FastMap<Term, RuleId>,
    FastMap<ArrShape, RuleId>,
    FastMap<ObjShape, RuleId>,
);

/// The compiler's layout state.
#[derive(Default)]
pub(super) struct LayoutState {
    /// Nesting depth of the values being emitted (0: the root), counted
    /// only under an indent.
    depth: u32,
    /// The caches of the depths not being emitted, by depth.
    stash: Vec<Caches>,
}

impl Compiler<'_> {
    fn fixed(&self) -> Option<&FixedLayout> {
        self.opts.layout.as_ref()
    }

    fn indented(&self) -> bool {
        self.fixed().is_some_and(|l| l.indent.is_some())
    }

    fn swap_caches(&mut self, depth: u32) {
        let d = depth as usize;
        if self.layout.stash.len() <= d {
            self.layout.stash.resize_with(d + 1, Default::default);
        }
        let slot = &mut self.layout.stash[d];
        std::mem::swap(&mut self.rule_of_term, &mut slot.0);
        std::mem::swap(&mut self.arr_rules, &mut slot.1);
        std::mem::swap(&mut self.obj_rules, &mut slot.2);
    }

    /// Before emitting the items or members of an array or object: their
    /// depth is one more. Every call is paired with
    /// [`leave_container`](Self::leave_container), even on errors.
    pub(super) fn enter_container(&mut self) {
        if self.indented() {
            let d = self.layout.depth;
            // Park this depth's caches in its slot, take the next one's.
            self.swap_caches(d);
            self.swap_caches(d + 1);
            self.layout.depth = d + 1;
        }
    }

    pub(super) fn leave_container(&mut self) {
        if self.indented() {
            let d = self.layout.depth;
            self.swap_caches(d);
            self.swap_caches(d - 1);
            self.layout.depth = d - 1;
        }
    }

    /// Inside a container (after `enter_container`): whether it is nested
    /// too deep to be indented, so that it can only be empty.
    pub(super) fn too_deep(&self) -> bool {
        self.indented() && self.layout.depth > MAX_INDENT_DEPTH
    }

    /// Between `[` / `{` and the first item or member.
    pub(super) fn open_ws(&mut self) -> Expr {
        match self.fixed() {
            Some(l) => Expr::literal(&l.newline(self.layout.depth)),
            None => self.ws(),
        }
    }

    /// Between the last item or member and `]` / `}`.
    pub(super) fn close_ws(&mut self) -> Expr {
        match self.fixed() {
            Some(l) => Expr::literal(&l.newline(self.layout.depth.saturating_sub(1))),
            None => self.ws(),
        }
    }

    /// Between two items or members.
    pub(super) fn item_sep(&mut self) -> Expr {
        match self.fixed() {
            Some(l) => Expr::literal(&format!(
                "{}{}",
                l.item_separator,
                l.newline(self.layout.depth)
            )),
            None => self.spaced(","),
        }
    }

    /// Between a member's name and its value.
    pub(super) fn key_sep(&mut self) -> Expr {
        match self.fixed() {
            Some(l) => Expr::literal(&l.key_separator),
            None => self.spaced(":"),
        }
    }

    /// `punct` between optional whitespace, as one rule that items and
    /// members refer to, copied into them only when lowered
    /// ([`LexemeHint::Inline`]). Written out at each use, it was over a
    /// third of a Kubernetes schema's IR (an object has up to 2^6 states),
    /// for every pass before lowering to read. Not a lexeme of its own:
    /// the position right after `,` would then be inside one, and what
    /// follows (the next member's keys) would depend on the callers
    /// instead of being the state's own token set.
    fn spaced(&mut self, punct: &'static str) -> Expr {
        let ws = self.ws();
        if ws == Expr::Empty {
            return Expr::literal(punct);
        }
        if let Some(&r) = self.separators.get(punct) {
            return Expr::Ref(r);
        }
        let r = self.b.add_rule(format!("spaced{punct}"));
        let body = Expr::seq(vec![ws.clone(), Expr::literal(punct), ws]);
        self.b.set_body(r, body);
        self.b.set_lexeme_hint(r, LexemeHint::Inline);
        self.separators.insert(punct, r);
        Expr::Ref(r)
    }
}
