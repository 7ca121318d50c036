//! `unevaluatedProperties` / `unevaluatedItems`, by cases.
//!
//! What an instance's evaluation annotates depends on the instance when
//! an in-place applicator chooses (`anyOf`, `oneOf`, `if`,
//! `dependentSchemas`, `contains`): annotations of a failing subschema
//! are dropped. A schema's annotations are expanded into *cases*, pairs
//! (condition, evaluated set), such that for every instance the schema
//! accepts:
//!
//! - (a) some case whose condition holds has exactly the evaluated set of
//!   the instance, and
//! - (b) every case whose condition holds has a subset of it.
//!
//! "Every unevaluated member matches U" only weakens as the evaluated set
//! grows, so the keyword holds exactly when some case's condition holds
//! and its set, closed with U, does: the node is the schema's node and
//! the union over cases of (condition ∧ closed set). Conditions are
//! positive (a branch matches, a property is present) except `else`,
//! which needs the negation of `if`. Sets combine: `allOf` and references
//! by products; `anyOf` and `dependentSchemas` by every subset of
//! branches; `oneOf` by one branch; `if` by its two sides. Cases whose set
//! is in another unconditional case's, or is empty, need no condition of
//! their own (they are implied), which keeps the expansion small; past
//! [`MAX_CASES`] it is refused.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{at, keyword_error, Compiler};
use crate::error::{Error, ErrorKind, Result};
use crate::json_schema::doc::{Draft, Keywords};
use crate::json_schema::node::{ArrShape, Node, ObjShape, Term};
use crate::json_schema::strings::StrLang;
use crate::util::hash::FastMap;

/// Most cases one `unevaluated*` keyword is expanded into.
const MAX_CASES: usize = 64;

/// Properties or items an evaluation annotates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Evaluated {
    names: BTreeSet<String>,
    patterns: BTreeSet<String>,
    prefix: usize,
    all: bool,
    /// Items (past `prefix`) matching one of these (from `contains`).
    contains: BTreeSet<Term>,
}

impl Evaluated {
    fn normalize(&mut self) {
        if self.all {
            *self = Evaluated {
                all: true,
                ..Evaluated::default()
            };
        }
    }

    fn is_empty(&self) -> bool {
        !self.all
            && self.names.is_empty()
            && self.patterns.is_empty()
            && self.prefix == 0
            && self.contains.is_empty()
    }

    fn union(&self, o: &Evaluated) -> Evaluated {
        let mut e = Evaluated {
            names: self.names.union(&o.names).cloned().collect(),
            patterns: self.patterns.union(&o.patterns).cloned().collect(),
            prefix: self.prefix.max(o.prefix),
            all: self.all || o.all,
            contains: self.contains.union(&o.contains).cloned().collect(),
        };
        e.normalize();
        e
    }

    /// Surely a subset of `o` (false when unsure).
    fn within(&self, o: &Evaluated) -> bool {
        o.all
            || (!self.all
                && self.names.is_subset(&o.names)
                && self.patterns.is_subset(&o.patterns)
                && self.prefix <= o.prefix
                && self.contains.is_subset(&o.contains))
    }
}

/// A case: when `cond` holds (`None`: always), at least `ev` is evaluated.
#[derive(Clone)]
struct Case {
    cond: Option<Node>,
    ev: Evaluated,
}

impl Case {
    fn nothing() -> Case {
        Case {
            cond: None,
            ev: Evaluated::default(),
        }
    }
}

/// One expansion's walk: the schemas under way (an in-place cycle is
/// refused) and the cases of those done (a schema reached along several
/// paths is expanded once).
#[derive(Default)]
struct Walk {
    stack: Vec<Term>,
    done: FastMap<Term, Vec<Case>>,
}

impl Compiler<'_> {
    /// `node` (of the schema at `id`, being evaluated) with its
    /// `unevaluatedProperties` (`props`) or `unevaluatedItems`, `None`
    /// when that adds nothing. Errors are the keyword's: a lenient caller
    /// leaves it out.
    pub(super) fn unevaluated(
        &mut self,
        id: u32,
        props: bool,
        ptr: &str,
        node: &Node,
    ) -> Result<Option<Node>> {
        let kw = if props {
            "unevaluatedProperties"
        } else {
            "unevaluatedItems"
        };
        let wrap = |e: Error| keyword_error(e.kind(), kw, ptr, e.message());
        let mut walk = Walk::default();
        let cases = self.cases(id, props, true, &mut walk).map_err(wrap)?;
        if cases.iter().any(|c| c.cond.is_none() && c.ev.all) {
            return Ok(None);
        }
        let u_id = self
            .doc
            .child(id, &[kw])
            .ok_or_else(|| Error::parse(format!("{kw} at {}: missing subschema", at(ptr))))?;
        let u = self.loc(u_id);
        let mut acc = Node::none();
        for c in cases {
            let closed = self.closed(props, &c.ev, &u).map_err(wrap)?;
            let n = match c.cond {
                Some(cond) => cond
                    .and(&closed, &self.deadline)
                    .map_err(|e| wrap(e.into()))?,
                None => closed,
            };
            acc = acc.or(&n).map_err(|e| wrap(e.into()))?;
        }
        let n = node.and(&acc, &self.deadline).map_err(|e| wrap(e.into()))?;
        Ok(Some(n))
    }

    /// The values whose members (or items) outside `ev` match `u`.
    fn closed(&mut self, props: bool, ev: &Evaluated, u: &Term) -> Result<Node> {
        let mut n = Node::any();
        if ev.all {
            return Ok(n);
        }
        if props {
            let mut rest = StrLang::Lits(ev.names.clone()).not();
            for p in &ev.patterns {
                let e = self.pattern_expr(p)?;
                rest = rest.and(&StrLang::from_expr(e).not());
            }
            let done = rest.not();
            n.obj = ObjShape {
                extra: vec![(rest, u.clone()), (done, Term::True)],
                ..ObjShape::any()
            }
            .simplify()
            .into_iter()
            .collect();
        } else {
            let rest = if ev.contains.is_empty() {
                u.clone()
            } else {
                // An item past the prefix matches U or a `contains`.
                let mut parts = vec![Term::not(u.clone())];
                parts.extend(ev.contains.iter().map(|c| Term::not(c.clone())));
                let none = Term::and_all(parts);
                let rest = Term::not(none.clone());
                // Built now so that a negation that cannot be expressed
                // refuses the keyword; lenient mode could only widen the
                // inner negations, which would narrow `rest`.
                let mut terms = vec![u.clone()];
                terms.extend(ev.contains.iter().cloned());
                terms.extend(ev.contains.iter().map(|c| Term::not(c.clone())));
                terms.push(Term::not(u.clone()));
                terms.push(none);
                terms.push(rest.clone());
                for t in &terms {
                    self.eval(t)?;
                    if self.is_widened(t) {
                        return Err(Error::unsupported(
                            "the items a contains evaluates cannot be told apart once a \
                             keyword inside it was left out",
                        ));
                    }
                }
                rest
            };
            n.arr = ArrShape {
                prefix: vec![Term::True; ev.prefix],
                rest,
                ..ArrShape::any()
            }
            .simplify()
            .into_iter()
            .collect();
        }
        Ok(n)
    }

    /// The cases of what the schema at `id` (in the current dynamic
    /// context) and the schemas applied in place with it evaluate. `top`:
    /// the schema holding the keyword (its own `unevaluated*` is the one
    /// being built).
    fn cases(&mut self, id: u32, props: bool, top: bool, w: &mut Walk) -> Result<Vec<Case>> {
        self.check_time()?;
        let me = Term::Loc(id, self.ctx);
        if !top {
            if let Some(c) = w.done.get(&me) {
                return Ok(c.clone());
            }
        }
        if w.stack.contains(&me) {
            return Err(Error::unsupported(format!(
                "what is evaluated at {} depends on itself (an in-place reference cycle)",
                at(self.doc.ptr(id))
            )));
        }
        let Value::Object(m) = self.doc.value(id) else {
            return Ok(vec![Case::nothing()]);
        };
        w.stack.push(me.clone());
        let r = self.cases_of(id, m, props, top, w);
        w.stack.pop();
        if let (Ok(c), false) = (&r, top) {
            w.done.insert(me, c.clone());
        }
        r
    }

    /// [`cases`](Self::cases) of a subschema or reference target `sub`,
    /// entered from the schema being looked at.
    fn cases_in(&mut self, sub: u32, props: bool, w: &mut Walk) -> Result<Vec<Case>> {
        let ctx = self.enter(self.ctx, sub);
        let outer = std::mem::replace(&mut self.ctx, ctx);
        let r = self.cases(sub, props, false, w);
        self.ctx = outer;
        r
    }

    fn cases_of(
        &mut self,
        id: u32,
        m: &Map<String, Value>,
        props: bool,
        top: bool,
        w: &mut Walk,
    ) -> Result<Vec<Case>> {
        let draft = self.doc.draft(id);
        let ptr = self.doc.ptr(id).to_string();
        let child = |c: &mut Self, segs: &[&str]| -> Result<u32> {
            c.doc.child(id, segs).ok_or_else(|| {
                Error::parse(format!("{} at {}: missing subschema", segs[0], at(&ptr)))
            })
        };
        let mut own = Evaluated::default();
        if props {
            if let Some(Value::Object(p)) = m.keyword("properties") {
                own.names.extend(p.keys().cloned());
            }
            if let Some(Value::Object(p)) = m.keyword("patternProperties") {
                own.patterns.extend(p.keys().cloned());
            }
            if m.has("additionalProperties") || (!top && m.has("unevaluatedProperties")) {
                own.all = true;
            }
        } else {
            let prefix_items = m.keyword("prefixItems").filter(|_| draft >= Draft::D2020);
            match (prefix_items, m.keyword("items")) {
                (Some(Value::Array(a)), None) => own.prefix = own.prefix.max(a.len()),
                (_, Some(Value::Array(a))) => {
                    own.prefix = own.prefix.max(a.len());
                    if m.has("additionalItems") {
                        own.all = true;
                    }
                }
                (_, Some(_)) => own.all = true,
                _ => {}
            }
            if !top && m.has("unevaluatedItems") {
                own.all = true;
            }
            // 2020-12 made contains annotate the items it matches.
            if draft >= Draft::D2020 && m.has("contains") {
                let sub = child(self, &["contains"])?;
                own.contains.insert(self.loc(sub));
            }
        }
        own.normalize();
        let mut acc = vec![Case {
            cond: None,
            ev: own,
        }];
        // In-place conjuncts: every one applies.
        let mut parts: Vec<Vec<Case>> = Vec::new();
        if let Some(Value::Array(a)) = m.keyword("allOf") {
            for i in 0..a.len() {
                let sub = child(self, &["allOf", &i.to_string()])?;
                parts.push(self.cases_in(sub, props, w)?);
            }
        }
        if draft >= Draft::D2019 {
            if let Some(r) = m.keyword("$ref") {
                let target = self.ref_target(id, "$ref", r, &ptr)?;
                parts.push(self.cases_in(target, props, w)?);
            }
            for kw in ["$recursiveRef", "$dynamicRef"] {
                if let Some(r) = m.keyword(kw) {
                    let target = self.ref_target(id, kw, r, &ptr)?;
                    let target = self.dynamic_target(kw, r, id, target)?;
                    parts.push(self.cases_in(target, props, w)?);
                }
            }
        }
        // anyOf: the branches that match, any subset of them.
        if let Some(Value::Array(a)) = m.keyword("anyOf") {
            let mut contrib = vec![Case::nothing()];
            for i in 0..a.len() {
                let sub = child(self, &["anyOf", &i.to_string()])?;
                let Some(opts) = self.branch(sub, None, props, w)? else {
                    continue;
                };
                let more = self.product(&contrib, &opts)?;
                contrib.extend(more);
                contrib = self.prune(contrib)?;
            }
            parts.push(contrib);
        }
        // oneOf: the one branch that matches.
        if let Some(Value::Array(a)) = m.keyword("oneOf") {
            let mut contrib = Vec::new();
            for i in 0..a.len() {
                let sub = child(self, &["oneOf", &i.to_string()])?;
                match self.branch(sub, None, props, w)? {
                    Some(opts) => contrib.extend(opts),
                    None => contrib.push(Case::nothing()),
                }
            }
            parts.push(self.prune(contrib)?);
        }
        // if: `if` and `then` when it matches, `else` when not.
        if draft.has_keyword("if") && m.has("if") {
            let if_id = child(self, &["if"])?;
            let l_if = self.cases_in(if_id, props, w)?;
            let l_then = match m.has("then") {
                true => {
                    let sub = child(self, &["then"])?;
                    self.cases_in(sub, props, w)?
                }
                false => vec![Case::nothing()],
            };
            let yes = self.product(&l_if, &l_then)?;
            let l_else = match m.has("else") {
                true => {
                    let sub = child(self, &["else"])?;
                    self.cases_in(sub, props, w)?
                }
                false => vec![Case::nothing()],
            };
            let if_term = self.loc(if_id);
            let mut contrib = Vec::new();
            if yes.iter().any(|c| !c.ev.is_empty()) {
                let i = self.eval(&if_term)?;
                contrib.extend(self.conditioned(yes, &i)?);
            } else {
                contrib.push(Case::nothing());
            }
            if l_else.iter().any(|c| !c.ev.is_empty()) {
                let i = self.eval(&if_term)?;
                if self.is_widened(&if_term) {
                    return Err(Error::unsupported(format!(
                        "what else evaluates at {} needs the negation of if, and a keyword \
                         inside if was left out",
                        at(&ptr)
                    )));
                }
                let not_i = i.not(&self.deadline).map_err(|e| {
                    Error::new(
                        e.kind(),
                        format!(
                            "what else evaluates at {} needs the negation of if: {e}",
                            at(&ptr)
                        ),
                    )
                })?;
                contrib.extend(self.conditioned(l_else, &not_i)?);
            } else {
                contrib.push(Case::nothing());
            }
            parts.push(self.prune(contrib)?);
        }
        // dependentSchemas: those of the present properties.
        if props {
            for kw in ["dependentSchemas", "dependencies"] {
                let Some(Value::Object(deps)) = m.keyword(kw) else {
                    continue;
                };
                let mut contrib = vec![Case::nothing()];
                for (name, dep) in deps {
                    if !matches!(dep, Value::Object(_) | Value::Bool(_)) {
                        continue;
                    }
                    let sub = child(self, &[kw, name])?;
                    let mut present = Node::any();
                    present.obj = ObjShape {
                        props: vec![(name.clone(), Term::True)],
                        required: [name.clone()].into_iter().collect(),
                        weak: [name.clone()].into_iter().collect(),
                        ..ObjShape::any()
                    }
                    .simplify()
                    .into_iter()
                    .collect();
                    let Some(opts) = self.branch(sub, Some(present), props, w)? else {
                        continue;
                    };
                    let more = self.product(&contrib, &opts)?;
                    contrib.extend(more);
                    contrib = self.prune(contrib)?;
                }
                parts.push(contrib);
            }
        }
        for p in parts {
            acc = self.product(&acc, &p)?;
            acc = self.prune(acc)?;
        }
        Ok(acc)
    }

    /// The cases of a branch `sub` conditioned on it applying: on `when`
    /// if given (an accepted instance then matches the branch), else on
    /// the branch matching. `None` when it evaluates nothing in any case.
    fn branch(
        &mut self,
        sub: u32,
        when: Option<Node>,
        props: bool,
        w: &mut Walk,
    ) -> Result<Option<Vec<Case>>> {
        let cases = self.cases_in(sub, props, w)?;
        if cases.iter().all(|c| c.ev.is_empty()) {
            return Ok(None);
        }
        let cond = match when {
            Some(w) => w,
            None => {
                let t = self.loc(sub);
                (*self.eval(&t)?).clone()
            }
        };
        Ok(Some(self.conditioned(cases, &cond)?))
    }

    /// The cases with `cond` added to their conditions.
    fn conditioned(&mut self, cases: Vec<Case>, cond: &Node) -> Result<Vec<Case>> {
        let mut out = Vec::new();
        for c in cases {
            let n = match c.cond {
                Some(x) => x.and(cond, &self.deadline).map_err(Error::from)?,
                None => cond.clone(),
            };
            if !n.is_empty() {
                out.push(Case {
                    cond: Some(n),
                    ev: c.ev,
                });
            }
        }
        Ok(out)
    }

    /// Every pair of cases, both holding.
    fn product(&mut self, a: &[Case], b: &[Case]) -> Result<Vec<Case>> {
        let mut out = Vec::new();
        for x in a {
            self.check_time()?;
            for y in b {
                let cond = match (&x.cond, &y.cond) {
                    (None, None) => None,
                    (Some(c), None) | (None, Some(c)) => Some(c.clone()),
                    (Some(c), Some(d)) => Some(c.and(d, &self.deadline).map_err(Error::from)?),
                };
                if cond.as_ref().is_some_and(|c| c.is_empty()) {
                    continue;
                }
                out.push(Case {
                    cond,
                    ev: x.ev.union(&y.ev),
                });
                if out.len() > MAX_CASES * MAX_CASES {
                    return Err(too_many());
                }
            }
        }
        self.prune(out)
    }

    /// Fewer cases, the same disjunction: an empty set needs no condition,
    /// cases with one set merge their conditions, and a case whose set is
    /// within that of an unconditional one is implied by it.
    fn prune(&mut self, cases: Vec<Case>) -> Result<Vec<Case>> {
        let mut out: Vec<Case> = Vec::new();
        for mut c in cases {
            c.ev.normalize();
            if c.ev.is_empty() {
                c.cond = None;
            }
            if let Some(x) = out.iter_mut().find(|x| x.ev == c.ev) {
                x.cond = match (x.cond.take(), c.cond) {
                    (Some(a), Some(b)) => Some(a.or(&b).map_err(Error::from)?),
                    _ => None,
                };
                continue;
            }
            out.push(c);
        }
        let keep: Vec<bool> = (0..out.len())
            .map(|i| {
                !(0..out.len())
                    .any(|j| j != i && out[j].cond.is_none() && out[i].ev.within(&out[j].ev))
            })
            .collect();
        let out: Vec<Case> = out
            .into_iter()
            .zip(keep)
            .filter_map(|(c, k)| k.then_some(c))
            .collect();
        if out.len() > MAX_CASES {
            return Err(too_many());
        }
        Ok(out)
    }
}

fn too_many() -> Error {
    Error::new(
        ErrorKind::Limit,
        format!(
            "what is evaluated depends on the instance in more than {MAX_CASES} ways \
             (combinations of anyOf/oneOf/if/dependentSchemas branches)"
        ),
    )
}
