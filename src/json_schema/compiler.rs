//! From schema keywords to nodes ([`eval_schema`](Compiler::eval_schema))
//! and from nodes to IR rules ([`rule_for`](Compiler::rule_for)).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::decimal::Dec;
use super::doc::{Doc, Draft};
use super::node::{AlgebraError, ArrShape, Contains, Node, ObjShape, Term};
use super::number::{multiple_of, NumAtom};
use super::strings::{canonical_json, encode, encode_lang, is_full, length, StrLang};
use super::JsonOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{CharClass, Expr, GrammarBuilder, LexemeHint, RuleId};
use crate::limits::Deadline;
use crate::util::hash::{FastMap, FastSet};

// The options of `JsonOptions` that change what is emitted, each in its
// own module (they see the compiler's fields).
mod difference;
mod integers;
mod layout;
mod lenient;
mod ordered;
mod unevaluated;

/// Most IR rules one schema may produce.
const MAX_RULES: usize = 100_000;
/// Most node evaluations (guards against combinatorial schemas).
const MAX_EVALS: usize = 200_000;
/// Most dynamic contexts (combinations of `$dynamicAnchor` bindings) one
/// schema may be evaluated in.
const MAX_CONTEXTS: usize = 4_096;
/// Most classes of property names that `patternProperties` split names
/// into (combinations of matched patterns).
const MAX_PATTERN_CLASSES: usize = 64;
/// Most states of an array or object counting automaton.
const MAX_COUNT_STATES: usize = 20_000;
/// Objects with at most this many listed properties track the set written
/// (2^n states), so no listed property can repeat; see `object_body`.
const ANY_ORDER_EXACT_MAX: usize = 6;
/// Larger objects track the set of required properties written while
/// (2^required × members) stays within this many alternatives.
const REQUIRED_SET_MAX_ALTS: usize = 2_048;
/// Code points per chunk of a long string (see `chunked_string`).
const CHUNK: u32 = 32;
/// Strings of at most this many code points are one lexeme (a counting
/// DFA, read by whole trie subtrees up to the count left); longer ones are
/// chunked. A chunked string ends a lexeme after every code point of its
/// remainder, so each of its states has exits at every depth.
const CHUNK_ABOVE: u32 = 256;
/// Most chunks of a long string.
const MAX_CHUNKS: u32 = 40_000;
/// A length bound from which a string with a `pattern` or `format` counts
/// its code points beside the pattern's automaton (see
/// [`LexemeHint::Counted`]) instead of multiplying the two automata.
const COUNTED_FROM: u32 = 64;
/// Length bounds below which a `time`/`date-time` keeps the exact
/// leap-second rule (counted beside its 66,000-state automaton: at most
/// about 68 million (state, count) pairs, under the counter's 2^27).
const EXACT_RFC3339_BELOW: u32 = 1024;
/// Most "some member with a name in L has a value in T" conditions (from
/// negated `additionalProperties` / `patternProperties`) on one object:
/// its states track which are met, and a member may meet several at once
/// (a variant per set).
const MAX_NEEDS: usize = 6;
/// Which of an object shape's `need`s are met: bit `i` for `need[i]`.
type NeedsMet = u32;

/// What an object's states count of its members: nothing unless the
/// shape's `minProperties`/`maxProperties` can bind (a minimum above the
/// required members, a maximum below what may be written), and then up to
/// `k`, past which the count stops changing.
struct MemberCount {
    /// Members needed (0: the required ones suffice).
    min: usize,
    /// Members allowed, when it can bind.
    max: Option<usize>,
    /// The highest count a state tells apart.
    k: usize,
}

impl MemberCount {
    /// `n` listed members, `nreq` of them required; `has_extra`: unlisted
    /// members may be written too.
    fn new(s: &ObjShape, n: usize, nreq: usize, has_extra: bool) -> MemberCount {
        let min = if s.min as usize > nreq {
            s.min as usize
        } else {
            0
        };
        let max = match s.max {
            Some(m) if has_extra || (m as usize) < n => Some(m as usize),
            _ => None,
        };
        MemberCount {
            min,
            max,
            k: max.unwrap_or(min),
        }
    }

    /// Another member may follow `c` written.
    fn can_add(&self, c: usize) -> bool {
        self.max.is_none_or(|m| c < m)
    }

    /// The count after one more member.
    fn inc(&self, c: usize) -> usize {
        if self.max.is_none() {
            (c + 1).min(self.k)
        } else {
            c + 1
        }
    }
}

/// The needs an object of the shape must meet in the end (past
/// [`MAX_NEEDS`], lenient mode enforces the first ones only).
fn all_needs(s: &ObjShape) -> NeedsMet {
    (1 << s.needs_reduced().len().min(MAX_NEEDS)) - 1
}
/// Most distinct values of a `uniqueItems` domain.
const MAX_UNIQUE_DOMAIN: usize = 12;
/// Most subsets a `uniqueItems` automaton may track.
const MAX_UNIQUE_STATES: usize = 5_000;

pub fn at(ptr: &str) -> String {
    if ptr.is_empty() {
        "the root".to_string()
    } else {
        ptr.to_string()
    }
}

fn kw_err(kind: ErrorKind, kw: &str, ptr: &str, reason: impl std::fmt::Display) -> Error {
    Error::new(kind, format!("{kw} at {}: {reason}", at(ptr)))
}

fn unsup(kw: &str, ptr: &str, reason: impl std::fmt::Display) -> Error {
    kw_err(ErrorKind::Unsupported, kw, ptr, reason)
}

fn bad(kw: &str, ptr: &str, reason: impl std::fmt::Display) -> Error {
    kw_err(ErrorKind::Parse, kw, ptr, reason)
}

/// Errors from the node algebra (limits or inexpressible negations).
fn algebra(kw: &str, ptr: &str, e: AlgebraError) -> Error {
    kw_err(e.kind(), kw, ptr, e)
}

pub struct Compiler<'a> {
    pub doc: Doc<'a>,
    opts: JsonOptions,
    vals: Vec<Value>,
    val_ids: FastMap<String, u32>,
    nodes: FastMap<Term, Rc<Node>>,
    /// Terms whose evaluation failed, with the error: emptiness tests ask
    /// for them again and again, and a failure (a negation past the
    /// limits) can be as slow as a success.
    failed: FastMap<Term, Error>,
    /// Whether the evaluation under way met a term already in progress:
    /// its failure then depends on where the evaluation started, and is
    /// not remembered in `failed`.
    met_cycle: bool,
    /// Shapes looked into by `difference::may_hold`, against its budget.
    emptiness_tests: usize,
    /// Set while `difference::may_hold` looks into a shape: member schemas
    /// that would take costly intersections are then not evaluated (see
    /// `Compiler::cheap_to_eval`); evaluations it does start are not
    /// affected.
    frugal: bool,
    in_progress: FastSet<Term>,
    evals: usize,
    pub b: GrammarBuilder,
    rule_of_term: FastMap<Term, RuleId>,
    lexemes: FastMap<Expr, RuleId>,
    /// JSON texts of string languages already spelled (see
    /// [`Compiler::encoded`]).
    encoded: FastMap<StrLang, Expr>,
    arr_rules: FastMap<ArrShape, RuleId>,
    obj_rules: FastMap<ObjShape, RuleId>,
    ws: Option<RuleId>,
    deadline: Deadline,
    layout: layout::LayoutState,
    /// Lenient mode: the keywords left out, the terms whose node left
    /// something out, whether the evaluation under way did, and where
    /// `uniqueItems` shapes come from (see `lenient`).
    dropped: Vec<crate::ir::Dropped>,
    widened: FastSet<Term>,
    saw_widened: bool,
    unique_sites: FastMap<ArrShape, String>,
    /// The schema location whose rule is being emitted (for reports).
    emitting: Option<u32>,
    /// The dynamic context of the schema being evaluated, and all of them.
    ctx: u32,
    scopes: RefCell<Scopes>,
}

/// Dynamic scopes, statically: the target of a `$dynamicRef` (or
/// `$recursiveRef`) depends only on which schema resources the path from
/// the root entered, and there the outermost one declaring the anchor
/// wins. A context keeps, per anchor name, that first binding; entering a
/// resource binds the names it declares that are still unbound. Each
/// subschema is evaluated once per context it is reached in (its
/// [`Term::Loc`]), so recursion still ends: contexts are finitely many.
struct Scopes {
    /// Per resource root: the (name, schema) anchors it declares.
    anchors: FastMap<u32, Vec<(String, u32)>>,
    /// Interned contexts, sorted bindings; 0 is the empty one.
    ctxs: Vec<Vec<(String, u32)>>,
    ids: FastMap<Vec<(String, u32)>, u32>,
    /// (context, resource root) to the context after entering it.
    entered: FastMap<(u32, u32), u32>,
    /// The anchor names dynamic references in the document use ("" for
    /// `$recursiveRef`): only these are bound.
    names: BTreeSet<String>,
}

fn as_count(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => {
            let d = Dec::from_json(n)?;
            if d.neg || !d.is_integer() {
                return None;
            }
            let s = d.int_part();
            Some(s.parse::<u64>().unwrap_or(u64::MAX).min(u32::MAX as u64) as u32)
        }
        _ => None,
    }
}

impl<'a> Compiler<'a> {
    pub fn new(doc: Doc<'a>, opts: &JsonOptions, deadline: Deadline) -> Compiler<'a> {
        let mut scopes = Scopes {
            anchors: FastMap::default(),
            ctxs: vec![Vec::new()],
            ids: FastMap::default(),
            entered: FastMap::default(),
            names: BTreeSet::new(),
        };
        scopes.ids.insert(Vec::new(), 0);
        let (anchors, names) = doc.dynamic_anchors();
        scopes.names = names;
        for (res, name, id) in anchors {
            scopes.anchors.entry(res).or_default().push((name, id));
        }
        Compiler {
            doc,
            opts: opts.clone(),
            vals: Vec::new(),
            val_ids: FastMap::default(),
            nodes: FastMap::default(),
            failed: FastMap::default(),
            met_cycle: false,
            emptiness_tests: 0,
            frugal: false,
            in_progress: FastSet::default(),
            evals: 0,
            b: GrammarBuilder::new(),
            rule_of_term: FastMap::default(),
            lexemes: FastMap::default(),
            encoded: FastMap::default(),
            arr_rules: FastMap::default(),
            obj_rules: FastMap::default(),
            ws: None,
            deadline,
            layout: layout::LayoutState::default(),
            dropped: Vec::new(),
            widened: FastSet::default(),
            saw_widened: false,
            unique_sites: FastMap::default(),
            emitting: None,
            ctx: 0,
            scopes: RefCell::new(scopes),
        }
    }

    /// The term of the document root.
    pub fn root_term(&self) -> Term {
        self.loc(0)
    }

    /// The term of the schema at `id` reached from the schema being
    /// evaluated (as a subschema or a reference target): in the current
    /// dynamic context, with the resource of `id` entered.
    fn loc(&self, id: u32) -> Term {
        // Boolean schemas as constants, so that the algebra sees through
        // them: the negation of `additionalProperties: false` is `true`.
        // (Under `no_extra_properties`, `true` and `{}` stay locations: a
        // location lets a listed name in, `Term::True` does not.)
        match self.doc.value(id) {
            Value::Bool(false) => Term::False,
            Value::Bool(true) if !self.opts.no_extra_properties => Term::True,
            Value::Object(m) if m.is_empty() && !self.opts.no_extra_properties => Term::True,
            _ => Term::Loc(id, self.enter(self.ctx, id)),
        }
    }

    /// The context `ctx` after entering the resource holding `id`.
    fn enter(&self, ctx: u32, id: u32) -> u32 {
        let mut guard = self.scopes.borrow_mut();
        let s = &mut *guard;
        if s.anchors.is_empty() {
            return 0;
        }
        let res = self.doc.resource_of(id);
        if let Some(&c) = s.entered.get(&(ctx, res)) {
            return c;
        }
        let mut binding = s.ctxs[ctx as usize].clone();
        if let Some(list) = s.anchors.get(&res) {
            for (name, e) in list {
                if !binding.iter().any(|(n, _)| n == name) {
                    binding.push((name.clone(), *e));
                }
            }
        }
        binding.sort();
        let next = s.ctxs.len() as u32;
        let c = *s.ids.entry(binding.clone()).or_insert(next);
        if c == next {
            s.ctxs.push(binding);
        }
        s.entered.insert((ctx, res), c);
        c
    }

    /// Where a `$recursiveRef` (2019-09) or `$dynamicRef` (2020-12) of
    /// schema `from`, whose static target is `initial`, leads in the
    /// current context. A
    /// `$recursiveRef` to a resource with `$recursiveAnchor: true`, or a
    /// `$dynamicRef` whose fragment names a `$dynamicAnchor` of its
    /// initial target (the "bookend"), goes to the outermost resource in
    /// the dynamic scope declaring the same anchor; otherwise it is a
    /// `$ref`.
    fn dynamic_target(&self, kw: &str, r: &Value, from: u32, initial: u32) -> Result<u32> {
        let Value::Object(t) = self.doc.value(initial) else {
            return Ok(initial);
        };
        let name = match (kw, self.doc.draft(from)) {
            ("$recursiveRef", Draft::D2019)
                if r.as_str() == Some("#")
                    && t.get("$recursiveAnchor") == Some(&Value::Bool(true)) =>
            {
                ""
            }
            ("$dynamicRef", Draft::D2020) => {
                let Some((_, f)) = r.as_str().and_then(|x| x.rsplit_once('#')) else {
                    return Ok(initial);
                };
                if f.is_empty() || t.get("$dynamicAnchor").and_then(|a| a.as_str()) != Some(f) {
                    return Ok(initial);
                }
                f
            }
            _ => return Ok(initial),
        };
        let s = self.scopes.borrow();
        if !s.names.contains(name) {
            // A reference outside the subschemas the document walk found
            // (inside an unknown keyword): its anchors were not bound.
            return Err(Error::unsupported(format!(
                "{kw} '{}': a dynamic reference outside the known subschema keywords \
                 is not supported",
                r.as_str().unwrap_or_default()
            )));
        }
        Ok(s.ctxs[self.ctx as usize]
            .iter()
            .find(|(n, _)| n == name)
            .map_or(initial, |(_, e)| *e))
    }

    fn val(&mut self, v: &Value) -> Term {
        let key = serde_json::to_string(v).unwrap_or_default();
        if let Some(&id) = self.val_ids.get(&key) {
            return Term::Val(id);
        }
        let id = self.vals.len() as u32;
        self.vals.push(v.clone());
        self.val_ids.insert(key, id);
        Term::Val(id)
    }

    fn ptr_of(&self, t: &Term) -> String {
        match t {
            Term::Loc(id, _) => at(self.doc.ptr(*id)),
            Term::Not(x) => format!("not({})", self.ptr_of(x)),
            Term::And(v) => v
                .iter()
                .map(|x| self.ptr_of(x))
                .collect::<Vec<_>>()
                .join(" & "),
            Term::Val(_) => "a const value".into(),
            Term::True => "true".into(),
            Term::False => "false".into(),
            Term::Unlisted => "an unlisted property".into(),
        }
    }

    // ---------------------------------------------------------------
    // Evaluation: terms to nodes.

    pub fn eval(&mut self, t: &Term) -> Result<Rc<Node>> {
        if let Some(n) = self.nodes.get(t) {
            let n = n.clone();
            self.widen_use(t);
            return Ok(n);
        }
        if let Some(e) = self.failed.get(t) {
            return Err(e.clone());
        }
        self.evals += 1;
        self.check_time()?;
        if self.evals > MAX_EVALS {
            return Err(Error::limit(format!(
                "the schema needs more than {MAX_EVALS} subschema combinations"
            )));
        }
        if self.scopes.borrow().ctxs.len() > MAX_CONTEXTS {
            return Err(Error::limit(format!(
                "dynamic references need more than {MAX_CONTEXTS} dynamic scopes"
            )));
        }
        if !self.in_progress.insert(t.clone()) {
            self.met_cycle = true;
            return Err(Error::unsupported(format!(
                "$ref: the schema at {} refers to itself without an intervening \
                 property or item (an infinite loop)",
                self.ptr_of(t)
            )));
        }
        let outer = self.widen_begin();
        let outer_cycle = std::mem::take(&mut self.met_cycle);
        // An evaluation is thorough whoever asks: the node cached for `t`
        // does not depend on where it was first needed.
        let outer_frugal = std::mem::take(&mut self.frugal);
        let r = self.eval_uncached(t);
        self.frugal = outer_frugal;
        self.widen_end(t, outer);
        self.in_progress.remove(t);
        if let Err(e) = &r {
            // Neither the deadline nor a cycle through a term in progress
            // is a property of the term.
            if !self.met_cycle && self.check_time().is_ok() {
                self.failed.insert(t.clone(), e.clone());
            }
        }
        self.met_cycle |= outer_cycle;
        let n = Rc::new(r?);
        self.nodes.insert(t.clone(), n.clone());
        Ok(n)
    }

    fn eval_uncached(&mut self, t: &Term) -> Result<Node> {
        Ok(match t {
            Term::True => Node::any(),
            Term::False | Term::Unlisted => Node::none(),
            Term::Loc(id, ctx) => {
                let outer = std::mem::replace(&mut self.ctx, *ctx);
                let r = self.eval_schema(*id);
                self.ctx = outer;
                r?
            }
            Term::Val(v) => {
                let v = self.vals[*v as usize].clone();
                self.value_node(&v)?
            }
            Term::Not(x) => {
                let n = self.eval(x)?;
                self.negation(x, &n)?
            }
            Term::And(v) => {
                // The negated parts last: each is taken away from what the
                // others leave (see `difference`), never built whole.
                let mut acc = Node::any();
                for x in v.iter().filter(|x| !matches!(x, Term::Not(_))) {
                    let n = self.eval(x)?;
                    acc = acc
                        .and(&n, &self.deadline)
                        .map_err(|e| Error::limit(format!("combining {}: {e}", self.ptr_of(t))))?;
                }
                for x in v {
                    if let Term::Not(x) = x {
                        if acc.is_empty() {
                            break;
                        }
                        let n = self.eval(x)?;
                        acc = self.without(acc, x, &n)?;
                    }
                }
                acc
            }
        })
    }

    /// The node of one JSON value (`const`).
    fn value_node(&mut self, v: &Value) -> Result<Node> {
        let mut n = Node::none();
        match v {
            Value::Null => n.null = true,
            Value::Bool(b) => n.bools = if *b { 2 } else { 1 },
            Value::Number(x) => {
                let d = Dec::from_json(x)
                    .ok_or_else(|| Error::parse(format!("bad number {x} in a const")))?;
                n.num = vec![NumAtom::value(d)];
            }
            Value::String(s) => n.str = StrLang::lit(s),
            Value::Array(a) => {
                let prefix: Vec<Term> = a.iter().map(|x| self.val(x)).collect();
                let len = prefix.len() as u32;
                n.arr = ArrShape {
                    prefix,
                    rest: Term::False,
                    min: len,
                    max: Some(len),
                    contains: Vec::new(),
                    unique: false,
                }
                .simplify()
                .into_iter()
                .collect();
            }
            Value::Object(m) => {
                let props: Vec<(String, Term)> =
                    m.iter().map(|(k, x)| (k.clone(), self.val(x))).collect();
                n.obj = ObjShape {
                    required: props.iter().map(|(k, _)| k.clone()).collect(),
                    props,
                    extra: Vec::new(),
                    min: 0,
                    max: None,
                    weak: BTreeSet::new(),
                    need: Vec::new(),
                }
                .simplify()
                .into_iter()
                .collect();
            }
        }
        Ok(n)
    }

    fn values_node(&mut self, vals: &[Value]) -> Result<Node> {
        // Strings and numbers are gathered in one pass: merged into the
        // node one value at a time, each merge copied the set so far (an
        // enum of 100,000 strings ran for minutes).
        let mut strings = BTreeSet::new();
        let mut numbers = BTreeSet::new();
        let mut n = Node::none();
        for (i, v) in vals.iter().enumerate() {
            if i % 1024 == 1023 {
                self.check_time()?;
            }
            match v {
                Value::String(s) => {
                    strings.insert(s.clone());
                }
                Value::Number(x) => {
                    let d = Dec::from_json(x)
                        .ok_or_else(|| Error::parse(format!("bad number {x} in an enum")))?;
                    numbers.insert(NumAtom::value(d));
                }
                _ => {
                    let x = self.value_node(v)?;
                    n = n.or(&x)?;
                }
            }
        }
        if !strings.is_empty() {
            n.str = n.str.or(&StrLang::Lits(strings));
        }
        if !numbers.is_empty() {
            // Other values set no number: nothing to merge with.
            n.num = numbers.into_iter().collect();
        }
        Ok(n)
    }

    /// The node of the schema at document entry `id`.
    fn eval_schema(&mut self, id: u32) -> Result<Node> {
        let value = self.doc.value(id);
        let ptr = self.doc.ptr(id).to_string();
        let m = match value {
            Value::Bool(true) => return Ok(Node::any()),
            Value::Bool(false) => return Ok(Node::none()),
            Value::Object(m) => m,
            _ => {
                return Err(Error::parse(format!(
                    "the schema at {} is neither an object nor a boolean",
                    at(&ptr)
                )))
            }
        };
        let draft = self.doc.draft(id);
        // Drafts 4 to 7: a $ref replaces every sibling keyword.
        if draft <= Draft::D7 {
            if let Some(r) = m.get("$ref") {
                let Some(target) = self.ref_or_leave(id, "$ref", r, &ptr)? else {
                    return Ok(Node::any());
                };
                let n = self.eval(&self.loc(target))?;
                return Ok((*n).clone());
            }
        }
        let mut node = Node::any();

        // const / enum first: their key order is the most likely order of
        // an instance's properties.
        let known = |kw: &str| draft.has_keyword(kw) && m.contains_key(kw);
        if let Some(c) = m.get("const").filter(|_| known("const")) {
            let n = self.value_node(c)?;
            self.meet(&mut node, &n, "const", &ptr)?;
        }
        if let Some(e) = m.get("enum") {
            let Value::Array(vals) = e else {
                return Err(bad("enum", &ptr, "not an array"));
            };
            let n = self.values_node(vals)?;
            self.meet(&mut node, &n, "enum", &ptr)?;
        }
        if let Some(t) = m.get("type") {
            let n = type_node(t, draft).map_err(|e| bad("type", &ptr, e))?;
            self.meet(&mut node, &n, "type", &ptr)?;
        }
        // Type-specific keywords.
        if let Some(s) = self.string_keywords(m, &ptr)? {
            if !node.str.is_empty() {
                node.str = node.str.and(&s);
            }
        }
        if let Some(a) = self.number_keywords(m, &ptr)? {
            node.num = super::number::set_and(&node.num, &[a]);
        }
        if !node.obj.is_empty() {
            if let Some(shape) = self.object_keywords(id, m, &ptr)? {
                let mut n = Node::any();
                n.obj = shape.simplify().into_iter().collect();
                self.meet(&mut node, &n, "properties", &ptr)?;
            }
        }
        if !node.arr.is_empty() {
            if let Some(shape) = self.array_keywords(id, m, &ptr)? {
                let mut n = Node::any();
                n.arr = shape.simplify().into_iter().collect();
                self.meet(&mut node, &n, "items", &ptr)?;
            }
        }
        // Dependencies (objects only).
        for kw in ["dependentRequired", "dependentSchemas", "dependencies"] {
            let Some(Value::Object(deps)) = m.get(kw).filter(|_| draft.has_keyword(kw)) else {
                continue;
            };
            if node.obj.is_empty() {
                break;
            }
            for (name, dep) in deps {
                let n = match dep {
                    Value::Array(names) => {
                        let mut req = vec![name.clone()];
                        for x in names {
                            let Value::String(s) = x else {
                                return Err(bad(kw, &ptr, "dependency names must be strings"));
                            };
                            req.push(s.clone());
                        }
                        self.dependency_node(name, &req, None)
                    }
                    Value::Object(_) | Value::Bool(_) => {
                        let sub = self
                            .doc
                            .child(id, &[kw, name])
                            .ok_or_else(|| bad(kw, &ptr, "missing subschema"))?;
                        let s = self.eval(&self.loc(sub))?;
                        self.dependency_node(name, std::slice::from_ref(name), Some(&s))
                    }
                    _ => return Err(bad(kw, &ptr, "a dependency must be an array or a schema")),
                }
                .map_err(|e| algebra(kw, &ptr, e))?;
                self.meet(&mut node, &n, kw, &ptr)?;
            }
        }
        // Applicators.
        if draft >= Draft::D2019 {
            if let Some(r) = m.get("$ref") {
                if let Some(target) = self.ref_or_leave(id, "$ref", r, &ptr)? {
                    let n = self.eval(&self.loc(target))?;
                    self.meet(&mut node, &n, "$ref", &ptr)?;
                }
            }
            for kw in ["$recursiveRef", "$dynamicRef"] {
                let Some(r) = m.get(kw) else { continue };
                if let Some(target) = self.ref_or_leave(id, kw, r, &ptr)? {
                    let target = match self.dynamic_target(kw, r, id, target) {
                        Ok(t) => t,
                        Err(e) => {
                            self.leave_out(unsup(kw, &ptr, e.message()), kw, &ptr)?;
                            continue;
                        }
                    };
                    let n = self.eval(&self.loc(target))?;
                    self.meet(&mut node, &n, kw, &ptr)?;
                }
            }
        }
        if let Some(v) = m.get("allOf") {
            for sub in self.subschemas(id, "allOf", v, &ptr)? {
                let n = self.eval(&self.loc(sub))?;
                self.meet(&mut node, &n, "allOf", &ptr)?;
            }
        }
        if let Some(v) = m.get("anyOf") {
            let mut acc = Node::none();
            for sub in self.subschemas(id, "anyOf", v, &ptr)? {
                let n = self.eval(&self.loc(sub))?;
                acc = acc.or(&n).map_err(|e| algebra("anyOf", &ptr, e))?;
            }
            self.meet(&mut node, &acc, "anyOf", &ptr)?;
        }
        if let Some(v) = m.get("oneOf") {
            let subs = self.subschemas(id, "oneOf", v, &ptr)?;
            let n = self.one_of(&subs, &node, &ptr)?;
            self.meet(&mut node, &n, "oneOf", &ptr)?;
        }
        if let Some(Value::Object(_) | Value::Bool(_)) = m.get("not") {
            let sub = self.doc.child(id, &["not"]).unwrap();
            let n = self.eval(&self.loc(sub))?;
            if self.is_widened(&self.loc(sub)) {
                let e = unsup("not", &ptr, "a keyword inside it was left out");
                self.leave_out(e, "not", &ptr)?;
            } else {
                match self.minus(&node, &n)? {
                    Ok(rest) => node = rest,
                    Err(e) => {
                        self.leave_out(kw_err(e.refusal_kind(), "not", &ptr, e), "not", &ptr)?
                    }
                }
            }
        }
        if known("if") && (m.contains_key("then") || m.contains_key("else")) {
            let get = |c: &mut Self, k: &str| -> Result<Rc<Node>> {
                match c.doc.child(id, &[k]) {
                    Some(sub) if m.contains_key(k) => c.eval(&c.loc(sub)),
                    _ => Ok(Rc::new(Node::any())),
                }
            };
            let i = get(self, "if")?;
            let t = get(self, "then")?;
            let e = get(self, "else")?;
            let err = |e: AlgebraError| algebra("if", &ptr, e);
            let yes = node
                .and(&i, &self.deadline)
                .and_then(|n| n.and(&t, &self.deadline))
                .map_err(err)?;
            let yes = self.prune_empty(yes)?;
            let with_else = node.and(&e, &self.deadline).map_err(err)?;
            let if_term = self.doc.child(id, &["if"]).map(|x| self.loc(x));
            let no = if if_term.is_some_and(|x| self.is_widened(&x)) {
                let e = unsup("if", &ptr, "a keyword inside it was left out");
                self.leave_out(e, "if", &ptr)?;
                with_else
            } else {
                match self.minus(&with_else, &i)? {
                    Ok(n) => n,
                    Err(e) => {
                        self.leave_out(kw_err(e.refusal_kind(), "if", &ptr, e), "if", &ptr)?;
                        with_else
                    }
                }
            };
            node = yes.or(&no).map_err(err)?;
        }
        for kw in ["unevaluatedProperties", "unevaluatedItems"] {
            match m.get(kw) {
                None | Some(Value::Bool(true)) => {}
                Some(Value::Object(o)) if o.is_empty() => {}
                Some(_) => {
                    let props = kw == "unevaluatedProperties";
                    let vacuous = if props {
                        node.obj.is_empty()
                    } else {
                        node.arr.is_empty()
                    };
                    if vacuous {
                        continue;
                    }
                    match self.unevaluated(id, props, &ptr, &node) {
                        Ok(Some(n)) => node = n,
                        Ok(None) => {}
                        // Lenient: the keyword is left out.
                        Err(e) if matches!(e.kind(), ErrorKind::Unsupported | ErrorKind::Limit) => {
                            self.check_time()?;
                            self.leave_out(e, kw, &ptr)?;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(node)
    }

    fn ref_target(&mut self, id: u32, kw: &str, r: &Value, ptr: &str) -> Result<u32> {
        let Value::String(s) = r else {
            return Err(bad(kw, ptr, "not a string"));
        };
        self.doc.resolve_ref(id, s).map_err(|e| unsup(kw, ptr, e))
    }

    fn subschemas(&mut self, id: u32, kw: &str, v: &Value, ptr: &str) -> Result<Vec<u32>> {
        let Value::Array(a) = v else {
            return Err(bad(kw, ptr, "not an array"));
        };
        if a.is_empty() {
            return Err(bad(kw, ptr, "an empty array"));
        }
        (0..a.len())
            .map(|i| {
                self.doc
                    .child(id, &[kw, &i.to_string()])
                    .ok_or_else(|| bad(kw, ptr, "missing subschema"))
            })
            .collect()
    }

    /// `oneOf`: exactly one branch. Branch `i` is kept as `A_i ∧ ¬A_j` for
    /// every other branch `j` that may overlap with it within `ctx` (the
    /// sibling keywords); provably disjoint branches need no negation.
    fn one_of(&mut self, subs: &[u32], ctx: &Node, ptr: &str) -> Result<Node> {
        let mut branches = Vec::new();
        for &s in subs {
            let n = self.eval(&self.loc(s))?;
            let n = n
                .and(ctx, &self.deadline)
                .map_err(|e| algebra("oneOf", ptr, e))?;
            branches.push(n);
        }
        let k = branches.len();
        let mut acc = Node::none();
        for i in 0..k {
            let mut cur = branches[i].clone();
            for j in 0..k {
                if i == j || cur.is_empty() {
                    continue;
                }
                let both = cur
                    .and(&branches[j], &self.deadline)
                    .map_err(|e| algebra("oneOf", ptr, e))?;
                if self.is_empty_deep(&both, 3)? {
                    continue;
                }
                // Each branch is excluded as its objects are emitted:
                // closed where the flag closes them.
                let rest = if self.is_widened(&self.loc(subs[j])) {
                    Err(AlgebraError::Inexpressible(
                        "a keyword inside it was left out".to_string(),
                    ))
                } else {
                    self.minus(&cur, &branches[j].hardened())?
                };
                match rest {
                    Ok(rest) => cur = rest,
                    Err(e) => {
                        let e = unsup(
                            "oneOf",
                            ptr,
                            format!(
                                "branches {i} and {j} may overlap, and excluding branch {j} \
                                 needs its negation: {e}"
                            ),
                        );
                        // Lenient: branch i keeps its overlap with j.
                        self.leave_out(e, "oneOf", ptr)?;
                    }
                }
            }
            acc = acc.or(&cur).map_err(|e| algebra("oneOf", ptr, e))?;
        }
        Ok(acc)
    }

    /// Whether a node accepts nothing, looking `depth` levels into member
    /// schemas (false when unsure).
    fn is_empty_deep(&mut self, n: &Node, depth: u32) -> Result<bool> {
        if n.null || n.bools != 0 || !n.num.is_empty() || !n.str.is_empty() {
            return Ok(false);
        }
        // As emitted: unlisted names closed.
        fn hardened(s: &ObjShape) -> Option<std::borrow::Cow<'_, ObjShape>> {
            if s.has_unlisted() {
                s.hardened().map(std::borrow::Cow::Owned)
            } else {
                Some(std::borrow::Cow::Borrowed(s))
            }
        }
        if depth == 0 {
            return Ok(n.arr.is_empty() && !n.obj.iter().any(|s| hardened(s).is_some()));
        }
        for s in &n.obj {
            let Some(s) = hardened(s) else {
                continue;
            };
            let mut empty = false;
            for r in &s.required {
                let t = s.value_for(r);
                if self.term_empty(&t, depth - 1)? {
                    empty = true;
                    break;
                }
            }
            if !empty {
                return Ok(false);
            }
        }
        for s in &n.arr {
            let mut empty = false;
            for i in 0..(s.min as usize).min(s.prefix.len() + 1) {
                if self.term_empty(&s.at(i).clone(), depth - 1)? {
                    empty = true;
                    break;
                }
            }
            if !empty {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn term_empty(&mut self, t: &Term, depth: u32) -> Result<bool> {
        if self.in_progress.contains(t) {
            return Ok(false);
        }
        if self.frugal && !self.nodes.contains_key(t) && !self.cheap_to_eval(t)? {
            return Ok(false);
        }
        match self.eval(t) {
            Ok(n) => self.is_empty_deep(&n.clone(), depth),
            // Unsure (e.g. a negation that cannot be expressed): not empty.
            Err(e) if e.kind() == ErrorKind::Unsupported => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `name` absent, or present with `required` present (and `schema`).
    fn dependency_node(
        &mut self,
        name: &str,
        required: &[String],
        schema: Option<&Node>,
    ) -> std::result::Result<Node, AlgebraError> {
        let mut absent = Node::any();
        absent.obj = ObjShape {
            props: vec![(name.to_string(), Term::False)],
            weak: [name.to_string()].into_iter().collect(),
            ..ObjShape::any()
        }
        .simplify()
        .into_iter()
        .collect();
        let mut present = Node::none();
        let mut req = BTreeSet::new();
        let mut props = Vec::new();
        for r in required {
            if req.insert(r.clone()) {
                props.push((r.clone(), Term::True));
            }
        }
        present.obj = ObjShape {
            props,
            weak: req.clone(),
            required: req,
            ..ObjShape::any()
        }
        .simplify()
        .into_iter()
        .collect();
        if let Some(s) = schema {
            present = present.and(s, &self.deadline)?;
        }
        absent.or(&present)
    }

    fn string_keywords(&mut self, m: &Map<String, Value>, ptr: &str) -> Result<Option<StrLang>> {
        let mut parts: Vec<Expr> = Vec::new();
        let min = match m.get("minLength") {
            Some(v) => Some(as_count(v).ok_or_else(|| bad("minLength", ptr, "not a count"))?),
            None => None,
        };
        let max = match m.get("maxLength") {
            Some(v) => Some(as_count(v).ok_or_else(|| bad("maxLength", ptr, "not a count"))?),
            None => None,
        };
        if min.unwrap_or(0) > 0 || max.is_some() {
            if let (Some(a), Some(b)) = (min, max) {
                if a > b {
                    return Ok(Some(StrLang::none()));
                }
            }
            let bound = max.unwrap_or(0).max(min.unwrap_or(0));
            if bound / CHUNK > MAX_CHUNKS {
                let kw = if max.is_some() {
                    "maxLength"
                } else {
                    "minLength"
                };
                return Err(kw_err(
                    ErrorKind::Limit,
                    kw,
                    ptr,
                    format!(
                        "a length bound above {} is not supported",
                        CHUNK * MAX_CHUNKS
                    ),
                ));
            }
            parts.push(length(min.unwrap_or(0), max));
        }
        if let Some(p) = m.get("pattern") {
            let Value::String(p) = p else {
                return Err(bad("pattern", ptr, "not a string"));
            };
            match self.pattern_expr(p) {
                Ok(e) => parts.push(e),
                // A construct no automaton matches (lenient: left out).
                Err(e) if e.kind() == ErrorKind::Unsupported => {
                    let e = kw_err(e.kind(), "pattern", ptr, e.message());
                    self.leave_out(e, "pattern", ptr)?;
                }
                Err(e) => return Err(kw_err(e.kind(), "pattern", ptr, e.message())),
            }
        }
        if let Some(Value::String(f)) = m.get("format") {
            if f == "hostname" {
                let e = unsup(
                    "format",
                    ptr,
                    "'hostname' cannot be checked exactly by a finite automaton: an IDNA \
                     A-label (xn--...) is valid only when it decodes (Punycode) to a valid \
                     U-label (RFC 5890/5891), and the name is limited to 253 octets",
                );
                self.leave_out(e, "format", ptr)?;
                // Lenient: the labels' letters, digits and hyphens, a
                // superset (A-labels not decoded, no total length).
                parts.extend(crate::regex::format_expr(f));
            } else {
                match crate::regex::format_expr(f) {
                    Some(e) => parts.push(e),
                    // Standard formats whose language is not regular (or not
                    // built): asserting them exactly is impossible here.
                    None if matches!(f.as_str(), "regex" | "idn-email" | "idn-hostname") => {
                        let e = unsup(
                            "format",
                            ptr,
                            format!("'{f}' cannot be checked by a finite automaton"),
                        );
                        self.leave_out(e, "format", ptr)?;
                    }
                    None => {}
                }
            }
        }
        if parts.is_empty() {
            return Ok(None);
        }
        Ok(Some(StrLang::from_expr(Expr::and(parts))))
    }

    fn number_keywords(&mut self, m: &Map<String, Value>, ptr: &str) -> Result<Option<NumAtom>> {
        let num = |kw: &str| -> Result<Option<Dec>> {
            match m.get(kw) {
                None => Ok(None),
                Some(Value::Number(n)) => Ok(Some(
                    Dec::from_json(n).ok_or_else(|| bad(kw, ptr, "bad number"))?,
                )),
                Some(Value::Bool(_)) if kw.starts_with("exclusive") => Ok(None),
                Some(_) => Err(bad(kw, ptr, "not a number")),
            }
        };
        let mut a = NumAtom::any();
        let flag = |kw: &str| m.get(kw) == Some(&Value::Bool(true));
        if let Some(d) = num("minimum")? {
            a.lo = Some((d, flag("exclusiveMinimum")));
        }
        if let Some(d) = num("maximum")? {
            a.hi = Some((d, flag("exclusiveMaximum")));
        }
        if let Some(d) = num("exclusiveMinimum")? {
            let x = NumAtom {
                lo: Some((d, true)),
                ..NumAtom::any()
            };
            a = a.and(&x).unwrap_or_else(empty_atom);
        }
        if let Some(d) = num("exclusiveMaximum")? {
            let x = NumAtom {
                hi: Some((d, true)),
                ..NumAtom::any()
            };
            a = a.and(&x).unwrap_or_else(empty_atom);
        }
        if let Some(d) = num("multipleOf")? {
            if d.neg || d.is_zero() {
                return Err(bad("multipleOf", ptr, "must be greater than 0"));
            }
            // Check now that the language can be built, for a precise error
            // (lenient: leave the keyword out).
            match multiple_of(&d) {
                Ok(_) => a.mult.push(d),
                Err(e) => self.leave_out(unsup("multipleOf", ptr, e), "multipleOf", ptr)?,
            }
        }
        if a.is_any() {
            return Ok(None);
        }
        if !a.normalize() {
            return Ok(Some(empty_atom()));
        }
        Ok(Some(a))
    }

    fn object_keywords(
        &mut self,
        id: u32,
        m: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Option<ObjShape>> {
        let draft = self.doc.draft(id);
        let has = |k: &str| draft.has_keyword(k) && m.contains_key(k);
        if !(has("properties")
            || has("patternProperties")
            || has("additionalProperties")
            || has("required")
            || has("propertyNames")
            || has("minProperties")
            || has("maxProperties"))
        {
            return Ok(None);
        }
        // patternProperties.
        let mut patterns: Vec<(Expr, Term)> = Vec::new();
        if let Some(pp) = m.get("patternProperties") {
            let Value::Object(pp) = pp else {
                return Err(bad("patternProperties", ptr, "not an object"));
            };
            for (p, _) in pp {
                let e = self.pattern_expr(p).map_err(|e| {
                    kw_err(
                        e.kind(),
                        "patternProperties",
                        ptr,
                        format!("{p:?}: {}", e.message()),
                    )
                })?;
                let sub = self.doc.child(id, &["patternProperties", p]).unwrap();
                patterns.push((e, self.loc(sub)));
            }
        }
        let additional = match m.get("additionalProperties") {
            Some(_) => {
                let sub = self.doc.child(id, &["additionalProperties"]).unwrap();
                self.loc(sub)
            }
            // The flag closes only schemas that list names themselves
            // (wrappers of `$ref`/`anyOf` stay open), and softly: see
            // `Term::Unlisted`.
            None if self.opts.no_extra_properties
                && (has("properties") || has("patternProperties")) =>
            {
                Term::Unlisted
            }
            None => Term::True,
        };
        let unlisted = |k: &str| -> Term {
            let matching: Vec<Term> = patterns
                .iter()
                .filter(|(e, _)| super::strings::matches(e, k))
                .map(|(_, t)| t.clone())
                .collect();
            if matching.is_empty() {
                additional.clone()
            } else {
                Term::and_all(matching)
            }
        };
        let mut props: Vec<(String, Term)> = Vec::new();
        if let Some(p) = m.get("properties") {
            let Value::Object(p) = p else {
                return Err(bad("properties", ptr, "not an object"));
            };
            for (k, _) in p {
                let sub = self.doc.child(id, &["properties", k]).unwrap();
                let mut parts = vec![self.loc(sub)];
                for (e, t) in &patterns {
                    if super::strings::matches(e, k) {
                        parts.push(t.clone());
                    }
                }
                props.push((k.clone(), Term::and_all(parts)));
            }
        }
        let mut required = BTreeSet::new();
        let mut weak = BTreeSet::new();
        if let Some(r) = m.get("required") {
            let Value::Array(r) = r else {
                return Err(bad("required", ptr, "not an array"));
            };
            for x in r {
                let Value::String(k) = x else {
                    return Err(bad("required", ptr, "names must be strings"));
                };
                if !props.iter().any(|(n, _)| n == k) {
                    props.push((k.clone(), unlisted(k)));
                    weak.insert(k.clone());
                }
                required.insert(k.clone());
            }
        }
        // Classes of unlisted names: the combinations of matched patterns,
        // split one pattern at a time, dropping provably empty parts.
        let mut classes: Vec<(StrLang, Vec<usize>)> = vec![(StrLang::any(), Vec::new())];
        for (i, (e, _)) in patterns.iter().enumerate() {
            let p = StrLang::from_expr(e.clone());
            let not_p = p.not();
            let mut next = Vec::new();
            for (l, ms) in classes {
                // Empty when the patterns' leading texts differ (see
                // `StrLang::and`).
                let yes = l.and(&p);
                if !yes.is_empty() {
                    let mut m2 = ms.clone();
                    m2.push(i);
                    next.push((yes, m2));
                }
                let no = l.and(&not_p);
                if !no.is_empty() {
                    next.push((no, ms));
                }
            }
            classes = next;
            if classes.len() > MAX_PATTERN_CLASSES {
                return Err(kw_err(
                    ErrorKind::Limit,
                    "patternProperties",
                    ptr,
                    format!("the patterns overlap in more than {MAX_PATTERN_CLASSES} ways"),
                ));
            }
        }
        let mut extra: Vec<(StrLang, Term)> = Vec::new();
        for (l, ms) in classes {
            let term = if ms.is_empty() {
                additional.clone()
            } else {
                Term::and_all(ms.iter().map(|&i| patterns[i].1.clone()).collect())
            };
            if term != Term::False {
                extra.push((l, term));
            }
        }
        // Merge classes with the same value schema.
        let mut merged: Vec<(StrLang, Term)> = Vec::new();
        for (l, t) in extra {
            match merged.iter_mut().find(|(_, x)| *x == t) {
                Some(e) => e.0 = e.0.or(&l),
                None => merged.push((l, t)),
            }
        }
        let mut shape = ObjShape {
            props,
            required,
            extra: merged,
            min: 0,
            max: None,
            weak,
            need: Vec::new(),
        };
        if has("propertyNames") {
            let sub = self.doc.child(id, &["propertyNames"]).unwrap();
            let n = self.eval(&self.loc(sub))?;
            let names = n.str.clone();
            for (k, t) in shape.props.iter_mut() {
                if !names.contains(k) {
                    *t = Term::False;
                }
            }
            for (l, _) in shape.extra.iter_mut() {
                *l = l.and(&names);
            }
        }
        if let Some(v) = m.get("minProperties") {
            shape.min = as_count(v).ok_or_else(|| bad("minProperties", ptr, "not a count"))?;
        }
        if let Some(v) = m.get("maxProperties") {
            shape.max = Some(as_count(v).ok_or_else(|| bad("maxProperties", ptr, "not a count"))?);
        }
        Ok(Some(shape))
    }

    fn array_keywords(
        &mut self,
        id: u32,
        m: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Option<ArrShape>> {
        let mut shape = ArrShape::any();
        let mut any = false;
        let child = |c: &mut Self, segs: &[&str]| -> Term {
            let sub = c.doc.child(id, segs).expect("walked subschema");
            c.loc(sub)
        };
        match m.get("items") {
            Some(Value::Array(a)) => {
                any = true;
                for i in 0..a.len() {
                    let t = child(self, &["items", &i.to_string()]);
                    shape.prefix.push(t);
                }
                if m.contains_key("additionalItems") {
                    shape.rest = child(self, &["additionalItems"]);
                }
            }
            Some(_) => {
                any = true;
                shape.rest = child(self, &["items"]);
            }
            None => {}
        }
        let prefix_items = m
            .get("prefixItems")
            .filter(|_| self.doc.draft(id).has_keyword("prefixItems"));
        if let Some(Value::Array(a)) = prefix_items {
            any = true;
            shape.prefix.clear();
            for i in 0..a.len() {
                let t = child(self, &["prefixItems", &i.to_string()]);
                shape.prefix.push(t);
            }
            if !matches!(m.get("items"), Some(Value::Object(_) | Value::Bool(_))) {
                shape.rest = Term::True;
            }
        }
        if let Some(v) = m.get("minItems") {
            any = true;
            shape.min = as_count(v).ok_or_else(|| bad("minItems", ptr, "not a count"))?;
        }
        if let Some(v) = m.get("maxItems") {
            any = true;
            shape.max = Some(as_count(v).ok_or_else(|| bad("maxItems", ptr, "not a count"))?);
        }
        if self.doc.draft(id).has_keyword("contains") && m.contains_key("contains") {
            any = true;
            let min = match m.get("minContains") {
                Some(v) if self.doc.draft(id) >= Draft::D2019 => {
                    as_count(v).ok_or_else(|| bad("minContains", ptr, "not a count"))?
                }
                _ => 1,
            };
            let max = match m.get("maxContains") {
                Some(v) if self.doc.draft(id) >= Draft::D2019 => {
                    Some(as_count(v).ok_or_else(|| bad("maxContains", ptr, "not a count"))?)
                }
                _ => None,
            };
            let t = child(self, &["contains"]);
            shape.contains.push(Contains {
                term: t,
                min,
                max,
                from: 0,
            });
        }
        if m.get("uniqueItems") == Some(&Value::Bool(true)) {
            any = true;
            shape.unique = true;
            self.note_unique(&shape, ptr);
        }
        Ok(any.then_some(shape))
    }

    // ---------------------------------------------------------------
    // Emission: nodes to IR rules.

    fn check_time(&self) -> Result<()> {
        self.deadline.check()
    }

    /// The strings a `pattern` matches somewhere in (translated within the
    /// compilation's deadline).
    fn pattern_expr(&self, pattern: &str) -> Result<Expr> {
        let options = crate::regex::RegexOptions {
            deadline: self.deadline,
            ..crate::regex::RegexOptions::default()
        };
        crate::regex::to_expr_with(pattern, crate::regex::Anchoring::Search, options)
    }

    fn new_rule(&mut self, name: String) -> Result<RuleId> {
        self.check_time()?;
        if self.b.len() >= MAX_RULES {
            return Err(Error::limit(format!(
                "the schema needs more than {MAX_RULES} grammar rules"
            )));
        }
        Ok(self.b.add_rule(name))
    }

    pub fn ws(&mut self) -> Expr {
        if self.opts.compact || self.opts.max_whitespace == Some(0) || self.opts.layout.is_some() {
            return Expr::Empty;
        }
        if let Some(r) = self.ws {
            return Expr::Ref(r);
        }
        let r = self.b.add_rule("ws");
        let class = Expr::Class(CharClass::from_ranges([
            (0x20, 0x20),
            (0x09, 0x0A),
            (0x0D, 0x0D),
        ]));
        self.b
            .set_body(r, Expr::repeat(class, 0, self.opts.max_whitespace));
        self.b.set_lexeme_hint(r, LexemeHint::Always);
        self.ws = Some(r);
        Expr::Ref(r)
    }

    fn lexeme(&mut self, body: Expr, name: &str) -> Result<RuleId> {
        if let Some(&r) = self.lexemes.get(&body) {
            return Ok(r);
        }
        let r = self.new_rule(format!("{name}#{}", self.b.len()))?;
        self.b.set_body(r, body.clone());
        self.b.set_lexeme_hint(r, LexemeHint::Always);
        self.lexemes.insert(body, r);
        Ok(r)
    }

    /// The rule of a term's JSON texts.
    pub fn rule_for(&mut self, t: &Term) -> Result<RuleId> {
        if let Some(&r) = self.rule_of_term.get(t) {
            return Ok(r);
        }
        let name = match t {
            Term::Loc(id, _) => format!("schema:{}", at(self.doc.ptr(*id))),
            _ => format!("combo#{}", self.b.len()),
        };
        let r = self.new_rule(name)?;
        self.rule_of_term.insert(t.clone(), r);
        let node = self.eval(t)?;
        let outer = self.emitting_begin(t);
        let emitted = self.emit_node(&node);
        self.emitting = outer;
        let (body, hint) = emitted?;
        self.b.set_body(r, body);
        self.b.set_lexeme_hint(r, hint);
        Ok(r)
    }

    /// The JSON text of the strings of `l` ([`encode_lang`]), spelled once
    /// per schema: many properties share a format or pattern, and each
    /// spelling builds every escape of every character class.
    fn encoded(&mut self, l: &StrLang) -> Expr {
        if let Some(e) = self.encoded.get(l) {
            return e.clone();
        }
        let e = encode_lang(l);
        self.encoded.insert(l.clone(), e.clone());
        e
    }

    pub fn emit_node(&mut self, n: &Node) -> Result<(Expr, LexemeHint)> {
        let n = &n.hardened();
        let mut scalars = Vec::new();
        if n.null {
            scalars.push(Expr::literal("null"));
        }
        if n.bools & 2 != 0 {
            scalars.push(Expr::literal("true"));
        }
        if n.bools & 1 != 0 {
            scalars.push(Expr::literal("false"));
        }
        if !n.num.is_empty() {
            scalars.push(self.number_expr(&n.num)?);
        }
        let mut composite = Vec::new();
        if !n.str.is_empty() {
            match pure_length(&n.str) {
                Some((lo, hi)) if lo > CHUNK_ABOVE || hi.is_some_and(|h| h > CHUNK_ABOVE) => {
                    composite.push(Expr::Ref(self.chunked_string(lo, hi)?));
                }
                _ => match counted_length(&n.str) {
                    Some((rest, lo, hi))
                        if lo >= COUNTED_FROM
                            || hi.is_some_and(|h| h >= COUNTED_FROM)
                            || holds_rfc3339(&rest) =>
                    {
                        composite.push(Expr::Ref(self.counted_string(&rest, lo, hi)?));
                    }
                    _ => scalars.push(self.encoded(&n.str)),
                },
            }
        }
        for s in &n.arr {
            composite.push(Expr::Ref(self.array_rule(s)?));
        }
        for s in &n.obj {
            composite.push(Expr::Ref(self.object_rule(s)?));
        }
        if composite.is_empty() {
            return Ok((Expr::alt(scalars), LexemeHint::Always));
        }
        if !scalars.is_empty() {
            let r = self.lexeme(Expr::alt(scalars), "scalar")?;
            composite.insert(0, Expr::Ref(r));
        }
        Ok((Expr::alt(composite), LexemeHint::Never))
    }

    /// The strings of `rest` with `lo..=hi` code points, as a lexeme that
    /// counts code points next to `rest`'s automaton (see
    /// [`LexemeHint::Counted`]), behind a parser rule that keeps the
    /// compiler from merging it into a larger lexeme (which could repeat
    /// it, and a count belongs to one string).
    fn counted_string(&mut self, rest: &StrLang, lo: u32, hi: Option<u32>) -> Result<RuleId> {
        let body = Expr::And(vec![self.encoded(rest), crate::ir::quoted_length(lo, hi)]);
        let key = Expr::Seq(vec![Expr::literal("counted-rule"), body.clone()]);
        if let Some(&r) = self.lexemes.get(&key) {
            return Ok(r);
        }
        let lexeme = self.new_rule(format!("counted#{}", self.b.len()))?;
        self.b.set_body(lexeme, body);
        self.b.set_lexeme_hint(
            lexeme,
            LexemeHint::Counted {
                min: lo,
                max: hi.unwrap_or(u32::MAX),
            },
        );
        let r = self.new_rule("counted".into())?;
        self.b.set_body(r, Expr::Ref(lexeme));
        self.b.set_lexeme_hint(r, LexemeHint::Never);
        self.lexemes.insert(key, r);
        Ok(r)
    }

    /// Strings of `lo..=hi` code points as a parser rule counting chunks
    /// of [`CHUNK`] code points (each chunk a small shared lexeme): one DFA
    /// for the whole count would have a state per position and take long
    /// to build. Lengths `K·c + r` (`r < K`) decompose uniquely, so the
    /// rule is unambiguous.
    fn chunked_string(&mut self, lo: u32, hi: Option<u32>) -> Result<RuleId> {
        let key = Expr::Seq(vec![Expr::literal("chunked"), length(lo, hi)]);
        if let Some(&r) = self.lexemes.get(&key) {
            return Ok(r);
        }
        let k = CHUNK;
        let chunk_lexeme = self.lexeme(encode(&length(k, Some(k))), "chunk")?;
        // A parser rule around the chunk: a repetition of a lexeme would be
        // merged back into one large lexeme by the compiler.
        let chunk = match self
            .lexemes
            .get(&Expr::Seq(vec![Expr::literal("chunk-rule")]))
        {
            Some(&r) => r,
            None => {
                let r = self.new_rule("chunk".into())?;
                self.b.set_body(r, Expr::Ref(chunk_lexeme));
                self.b.set_lexeme_hint(r, LexemeHint::Never);
                self.lexemes
                    .insert(Expr::Seq(vec![Expr::literal("chunk-rule")]), r);
                r
            }
        };
        // The remainder carries the closing quote: a lexeme that could end
        // after any code point would have exits at every depth of every
        // token (each checked against the parser at mask time).
        let rem = |this: &mut Self, a: u32, b: u32| -> Result<Expr> {
            let quoted = Expr::seq(vec![encode(&length(a, Some(b))), Expr::literal("\"")]);
            Ok(Expr::Ref(this.lexeme(quoted, "chunk")?))
        };
        let c_min = lo / k;
        let mut alts = Vec::new();
        match hi {
            None => {
                let r = rem(self, lo % k, k - 1)?;
                alts.push(Expr::seq(vec![
                    Expr::repeat(Expr::Ref(chunk), c_min, Some(c_min)),
                    r,
                ]));
                let r = rem(self, 0, k - 1)?;
                alts.push(Expr::seq(vec![
                    Expr::repeat(Expr::Ref(chunk), c_min + 1, None),
                    r,
                ]));
            }
            Some(n) => {
                let c_max = n / k;
                // c == c_min
                let r = rem(self, lo % k, (k - 1).min(n - k * c_min))?;
                alts.push(Expr::seq(vec![
                    Expr::repeat(Expr::Ref(chunk), c_min, Some(c_min)),
                    r,
                ]));
                // c_min < c < c_max: any remainder
                if c_max > c_min + 1 {
                    let r = rem(self, 0, k - 1)?;
                    alts.push(Expr::seq(vec![
                        Expr::repeat(Expr::Ref(chunk), c_min + 1, Some(c_max - 1)),
                        r,
                    ]));
                }
                // c == c_max
                if c_max > c_min {
                    let r = rem(self, 0, n % k)?;
                    alts.push(Expr::seq(vec![
                        Expr::repeat(Expr::Ref(chunk), c_max, Some(c_max)),
                        r,
                    ]));
                }
            }
        }
        let r = self.new_rule(format!("string#{}", self.b.len()))?;
        self.b
            .set_body(r, Expr::seq(vec![Expr::literal("\""), Expr::alt(alts)]));
        self.b.set_lexeme_hint(r, LexemeHint::Never);
        self.lexemes.insert(key, r);
        Ok(r)
    }

    fn array_rule(&mut self, s: &ArrShape) -> Result<RuleId> {
        if let Some(&r) = self.arr_rules.get(s) {
            return Ok(r);
        }
        let r = self.new_rule(format!("array#{}", self.b.len()))?;
        self.arr_rules.insert(s.clone(), r);
        self.b.set_lexeme_hint(r, LexemeHint::Never);
        self.enter_container();
        let body = self.array_body(s);
        self.leave_container();
        self.b.set_body(r, body?);
        Ok(r)
    }

    /// An array of the shape (its items one level deeper).
    fn array_body(&mut self, s: &ArrShape) -> Result<Expr> {
        let ws = self.ws();
        let empty_ok = s.min == 0 && s.contains.iter().all(|c| c.min == 0);
        if self.too_deep() {
            return Ok(if empty_ok {
                Expr::literal("[]")
            } else {
                Expr::Nothing
            });
        }
        let (open, close) = (self.open_ws(), self.close_ws());
        let items = if s.unique {
            self.unique_or_plain(s)?
        } else if !s.contains.is_empty() {
            self.counted_items(s)?
        } else {
            self.plain_items(s)?
        };
        let mut alts = Vec::new();
        if empty_ok {
            alts.push(Expr::seq(vec![
                Expr::literal("["),
                ws.clone(),
                Expr::literal("]"),
            ]));
        }
        if items != Expr::Nothing {
            alts.push(Expr::seq(vec![
                Expr::literal("["),
                open,
                items,
                close,
                Expr::literal("]"),
            ]));
        }
        Ok(Expr::alt(alts))
    }

    fn sep(&mut self) -> Expr {
        self.item_sep()
    }

    /// Items of an array without `contains` or `uniqueItems`: a non-empty
    /// sequence (`Nothing` when there can be none).
    fn plain_items(&mut self, s: &ArrShape) -> Result<Expr> {
        let sep = self.sep();
        let mut t = s.prefix.len().max(s.min as usize);
        if let Some(m) = s.max {
            t = t.min(m as usize);
        }
        if t > MAX_COUNT_STATES {
            return Err(Error::limit(format!(
                "an array needs more than {MAX_COUNT_STATES} item positions"
            )));
        }
        // Items from index t on, all of the `rest` schema.
        let more = match s.max {
            Some(m) if m as usize <= t => Expr::Nothing,
            _ if s.rest == Term::False => Expr::Nothing,
            max => {
                let v = Expr::Ref(self.rule_for(&s.rest)?);
                let extra_max = max.map(|m| m - t as u32 - 1);
                let mut next = Expr::seq(vec![sep.clone(), v.clone()]);
                if extra_max.is_some_and(|m| m > 1) {
                    // A bounded repetition of a regular item would become
                    // one lexeme with a copy per position: keep the count
                    // in the parser.
                    let r = self.new_rule(format!("item#{}", self.b.len()))?;
                    self.b.set_body(r, next);
                    self.b.set_lexeme_hint(r, LexemeHint::Never);
                    next = Expr::Ref(r);
                }
                Expr::seq(vec![v, Expr::repeat(next, 0, extra_max)])
            }
        };
        let mut e = more;
        // Required items past the prefix all have the `rest` schema: one
        // repetition, not an expression nested once per item (5,000 deep
        // for `minItems: 5000`). Every item before the last of the `t` is
        // required here; the array may end after it when `t` reaches
        // `minItems` (it may not when `maxItems` is smaller).
        let p = s.prefix.len();
        if t > p + 1 && s.min as usize >= t {
            let v = Expr::Ref(self.rule_for(&s.rest)?);
            let mut cont = Vec::new();
            if t >= s.min as usize {
                cont.push(Expr::Empty);
            }
            if e != Expr::Nothing {
                cont.push(Expr::seq(vec![sep.clone(), e]));
            }
            let k = (t - 1 - p) as u32;
            let mut parts = Vec::with_capacity(2 * p + 3);
            for i in 0..p {
                parts.push(Expr::Ref(self.rule_for(&s.at(i).clone())?));
                parts.push(sep.clone());
            }
            parts.push(v.clone());
            parts.push(Expr::repeat(Expr::seq(vec![sep.clone(), v]), k, Some(k)));
            parts.push(Expr::alt(cont));
            return Ok(Expr::seq(parts));
        }
        for i in (0..t).rev() {
            let v = Expr::Ref(self.rule_for(&s.at(i).clone())?);
            let mut cont = Vec::new();
            if i + 1 >= s.min as usize {
                cont.push(Expr::Empty);
            }
            if e != Expr::Nothing {
                cont.push(Expr::seq(vec![sep.clone(), e]));
            }
            e = Expr::seq(vec![v, Expr::alt(cont)]);
        }
        Ok(e)
    }

    /// Items with `contains` constraints: states (position, count per
    /// constraint). An item either matches a constraint (counted) or not;
    /// "not" is asserted only for constraints with a `maxContains`, where
    /// counting a match is mandatory.
    fn counted_items(&mut self, s: &ArrShape) -> Result<Expr> {
        const MAX_CONTAINS: usize = 6;
        let cs = &s.contains;
        if cs.len() > MAX_CONTAINS {
            return Err(Error::limit(format!(
                "contains: more than {MAX_CONTAINS} contains constraints on one array"
            )));
        }
        let sep = self.sep();
        let from_max = cs.iter().map(|c| c.from as usize).max().unwrap_or(0);
        let mut t = s.prefix.len().max(s.min as usize).max(from_max);
        if let Some(m) = s.max {
            t = t.min(m as usize);
        }
        // Counts saturate at the bound that matters.
        let cap: Vec<usize> = cs.iter().map(|c| c.max.unwrap_or(c.min) as usize).collect();
        let states = cap
            .iter()
            .try_fold(t + 1, |acc, &k| acc.checked_mul(k + 1))
            .filter(|&n| n <= MAX_COUNT_STATES);
        if states.is_none() {
            return Err(Error::limit(format!(
                "contains: the array needs more than {MAX_COUNT_STATES} counting states"
            )));
        }
        // Per item position: the (term, which constraints it counts) options.
        let options_at = |i: usize| -> Vec<(Term, Vec<bool>)> {
            let active: Vec<usize> = (0..cs.len())
                .filter(|&j| i >= cs[j].from as usize)
                .collect();
            let mut out = Vec::new();
            for subset in 0u32..1 << active.len() {
                let mut term = s.at(i).clone();
                let mut counts = vec![false; cs.len()];
                for (bit, &j) in active.iter().enumerate() {
                    if subset >> bit & 1 == 1 {
                        term = Term::and(term, cs[j].term.clone());
                        counts[j] = true;
                    } else if cs[j].max.is_some() {
                        term = Term::and(term, Term::not(cs[j].term.clone()));
                    }
                }
                if term != Term::False {
                    out.push((term, counts));
                }
            }
            out
        };
        type Key = (usize, Vec<usize>);
        // Rules E(i, n): items from index i on (non-empty), n counted so far.
        let mut rules: FastMap<Key, RuleId> = FastMap::default();
        let mut todo: Vec<Key> = Vec::new();
        let id_of = |rules: &mut FastMap<Key, RuleId>,
                     todo: &mut Vec<Key>,
                     this: &mut Self,
                     key: Key|
         -> Result<RuleId> {
            if let Some(&r) = rules.get(&key) {
                return Ok(r);
            }
            let r = this.new_rule(format!("items#{}", this.b.len()))?;
            this.b.set_lexeme_hint(r, LexemeHint::Never);
            rules.insert(key.clone(), r);
            todo.push(key);
            Ok(r)
        };
        let start = id_of(&mut rules, &mut todo, self, (0, vec![0; cs.len()]))?;
        while let Some(key) = todo.pop() {
            let (i, n) = key.clone();
            let r = rules[&key];
            let mut alts = Vec::new();
            'option: for (term, counted) in options_at(i) {
                let mut n2 = n.clone();
                for j in 0..cs.len() {
                    if !counted[j] {
                        continue;
                    }
                    match cs[j].max {
                        Some(m) if n[j] >= m as usize => continue 'option,
                        Some(_) => n2[j] += 1,
                        None => n2[j] = (n[j] + 1).min(cap[j]),
                    }
                }
                let v = Expr::Ref(self.rule_for(&term)?);
                let mut cont = Vec::new();
                let mins_met = cs.iter().zip(&n2).all(|(c, &k)| k >= c.min as usize);
                if i + 1 >= s.min as usize && mins_met {
                    cont.push(Expr::Empty);
                }
                if s.max.is_none_or(|m| i + 1 < m as usize) {
                    let nr = id_of(&mut rules, &mut todo, self, ((i + 1).min(t), n2))?;
                    cont.push(Expr::seq(vec![sep.clone(), Expr::Ref(nr)]));
                }
                alts.push(Expr::seq(vec![v, Expr::alt(cont)]));
            }
            self.b.set_body(r, Expr::alt(alts));
        }
        Ok(Expr::Ref(start))
    }

    /// Items of a `uniqueItems` array over a small finite domain: the
    /// states are the sets of values used so far.
    fn unique_items(&mut self, s: &ArrShape) -> Result<Expr> {
        if !s.contains.is_empty() {
            return Err(Error::unsupported(
                "uniqueItems: together with contains is not supported",
            ));
        }
        // The domain: every value any position admits, which must be a
        // small finite set.
        let mut terms: Vec<Term> = s.prefix.clone();
        terms.push(s.rest.clone());
        let mut domain: Vec<Value> = Vec::new();
        for t in &terms {
            let n = self.eval(t)?;
            let vals = finite_values(&n).ok_or_else(|| {
                Error::unsupported(
                    "uniqueItems: items are not a small finite set (only enumerations of \
                     scalars, booleans and null are supported)",
                )
            })?;
            for v in vals {
                if !domain.iter().any(|x| json_equal(x, &v)) {
                    domain.push(v);
                }
            }
            if domain.len() > MAX_UNIQUE_DOMAIN {
                return Err(Error::unsupported(format!(
                    "uniqueItems: items are not a small finite set (more than \
                     {MAX_UNIQUE_DOMAIN} values)"
                )));
            }
        }
        // The value v is allowed at position i when at(i) admits it.
        let d = domain.len();
        let mut allowed: Vec<Vec<bool>> = Vec::new();
        for i in 0..=s.prefix.len() {
            let n = self.eval(&s.at(i).clone())?;
            let vals = finite_values(&n).unwrap_or_default();
            allowed.push(
                domain
                    .iter()
                    .map(|v| vals.iter().any(|x| json_equal(x, v)))
                    .collect(),
            );
        }
        let max = s.max.map_or(d, |m| (m as usize).min(d));
        let sep = self.sep();
        let val_rules: Vec<RuleId> = domain
            .iter()
            .map(|v| {
                let t = self.val(v);
                self.rule_for(&t)
            })
            .collect::<Result<_>>()?;
        let mut rules: FastMap<u32, RuleId> = FastMap::default();
        let mut todo: Vec<u32> = Vec::new();
        // Rule U(set): items after the values in `set` were used (non-empty).
        fn get(
            this: &mut Compiler,
            rules: &mut FastMap<u32, RuleId>,
            set: u32,
            todo: &mut Vec<u32>,
        ) -> Result<RuleId> {
            if let Some(&r) = rules.get(&set) {
                return Ok(r);
            }
            if rules.len() >= MAX_UNIQUE_STATES {
                return Err(Error::limit(format!(
                    "uniqueItems: more than {MAX_UNIQUE_STATES} states"
                )));
            }
            let r = this.new_rule(format!("unique#{}", this.b.len()))?;
            this.b.set_lexeme_hint(r, LexemeHint::Never);
            rules.insert(set, r);
            todo.push(set);
            Ok(r)
        }
        let start = get(self, &mut rules, 0, &mut todo)?;
        while let Some(set) = todo.pop() {
            let i = set.count_ones() as usize;
            let row = &allowed[i.min(s.prefix.len())];
            let mut alts = Vec::new();
            for v in 0..d {
                if set & (1 << v) != 0 || !row[v] {
                    continue;
                }
                let next = set | (1 << v);
                let used = i + 1;
                let mut cont = Vec::new();
                if used >= s.min as usize {
                    cont.push(Expr::Empty);
                }
                if used < max {
                    let nr = get(self, &mut rules, next, &mut todo)?;
                    cont.push(Expr::seq(vec![sep.clone(), Expr::Ref(nr)]));
                }
                alts.push(Expr::seq(vec![Expr::Ref(val_rules[v]), Expr::alt(cont)]));
            }
            let r = rules[&set];
            self.b.set_body(r, Expr::alt(alts));
        }
        Ok(Expr::Ref(start))
    }

    fn object_rule(&mut self, s: &ObjShape) -> Result<RuleId> {
        if let Some(&r) = self.obj_rules.get(s) {
            return Ok(r);
        }
        let r = self.new_rule(format!("object#{}", self.b.len()))?;
        self.obj_rules.insert(s.clone(), r);
        self.b.set_lexeme_hint(r, LexemeHint::Never);
        self.enter_container();
        let body = if self.too_deep() {
            let empty_ok = s.required.is_empty() && s.min == 0 && s.need.is_empty();
            Ok(if empty_ok {
                Expr::literal("{}")
            } else {
                Expr::Nothing
            })
        } else {
            self.object_body(s)
        };
        self.leave_container();
        self.b.set_body(r, body?);
        Ok(r)
    }

    /// The members of an object shape: per listed property its variants
    /// (member text, the set of the shape's `need`s it meets, bit `i` for
    /// `need[i]`) and whether it is required; the variants of unlisted
    /// members. `None` when a required property can have no value.
    #[allow(clippy::type_complexity)]
    fn object_members(
        &mut self,
        s: &ObjShape,
    ) -> Result<Option<(Vec<(Vec<(Expr, NeedsMet)>, bool)>, Vec<(Expr, NeedsMet)>)>> {
        let colon = self.key_sep();
        let reduced = s.needs_reduced();
        let needs = if reduced.len() > MAX_NEEDS {
            let e = Error::unsupported(format!(
                "not: more than {MAX_NEEDS} negated additionalProperties / \
                 patternProperties on one object are not supported"
            ));
            // Lenient: only the first ones are enforced.
            let ptr = self.emitting_pointer();
            self.leave_out(e, "not", &ptr)?;
            &reduced[..MAX_NEEDS]
        } else {
            &reduced[..]
        };
        // The non-empty sets of needs one member may meet at once: a
        // variant per set whose names and values intersect.
        let need_sets: Vec<(NeedsMet, StrLang, Term)> = (1..1u32 << needs.len())
            .filter_map(|mask| {
                let mut names = StrLang::any();
                let mut value = Term::True;
                for (i, (l, t)) in needs.iter().enumerate() {
                    if mask & (1 << i) != 0 {
                        names = names.and(l);
                        value = Term::and(value, t.clone());
                    }
                }
                (!names.is_empty() && value != Term::False).then_some((mask, names, value))
            })
            .collect();
        // Each member is a parser rule of its own: the object's states (up
        // to 2^6 of them, one per set of members written) each refer to it
        // instead of copying its key, so the key's states and their token
        // sets exist once per member.
        let member = |this: &mut Self, key: Expr, t: &Term| -> Result<Expr> {
            let v = this.rule_for(t)?;
            let body = Expr::seq(vec![key, colon.clone(), Expr::Ref(v)]);
            let r = this.new_rule(format!("member#{}", this.b.len()))?;
            this.b.set_body(r, body);
            this.b.set_lexeme_hint(r, LexemeHint::Never);
            Ok(Expr::Ref(r))
        };
        let mut members = Vec::new();
        for (k, t) in &s.props {
            let req = s.required.contains(k);
            if *t == Term::False {
                if req {
                    return Ok(None);
                }
                continue;
            }
            let key = Expr::literal(&canonical_json(k));
            let mut alts = vec![(member(self, key.clone(), t)?, 0)];
            for (mask, nl, nt) in &need_sets {
                if nl.contains(k) {
                    let both = Term::and(t.clone(), nt.clone());
                    if both != Term::False {
                        alts.push((member(self, key.clone(), &both)?, *mask));
                    }
                }
            }
            members.push((alts, req));
        }
        let listed = StrLang::Lits(s.props.iter().map(|(k, _)| k.clone()).collect());
        let mut extras = Vec::new();
        for (l, t) in &s.extra {
            // No member can have it (`additionalProperties: false`): no key
            // lexeme, no alternative to drop later.
            if *t == Term::False || self.term_empty(t, 0)? {
                continue;
            }
            let keys = if s.props.is_empty() {
                l.clone()
            } else {
                l.and(&listed.not())
            };
            if keys.is_empty() {
                continue;
            }
            let kr = self.lexeme(encode_lang(&keys), "key")?;
            extras.push((member(self, Expr::Ref(kr), t)?, 0));
            for (mask, nl, nt) in &need_sets {
                let keys2 = keys.and(nl);
                let both = Term::and(t.clone(), nt.clone());
                if !keys2.is_empty() && both != Term::False {
                    let kr = self.lexeme(encode_lang(&keys2), "key")?;
                    extras.push((member(self, Expr::Ref(kr), &both)?, *mask));
                }
            }
        }
        Ok(Some((members, extras)))
    }

    /// An object of the shape. Members come in any order (JSON Schema does
    /// not constrain it). What the states track depends on the size:
    /// - at most [`ANY_ORDER_EXACT_MAX`] listed properties: the set of
    ///   listed properties written, so each comes at most once (exact);
    /// - else, when the required ones are few enough
    ///   ([`REQUIRED_SET_MAX_ALTS`]): the set of required properties
    ///   written, each at most once; optional listed ones may repeat;
    /// - else the number of required properties written.
    ///
    /// The last two accept texts that repeat a key (as additional
    /// properties always may): JSON Schema leaves duplicate keys undefined,
    /// and every text without one is accepted exactly when its object is
    /// valid. Counts for min/maxProperties and a `need` flag are added to
    /// the state when they can bind.
    fn object_body(&mut self, s: &ObjShape) -> Result<Expr> {
        if self.opts.ordered_properties {
            return self.ordered_object_body(s);
        }
        let ws = self.ws();
        let sep = self.sep();
        let Some((members, extras)) = self.object_members(s)? else {
            return Ok(Expr::Nothing);
        };
        let n = members.len();
        let nreq = members.iter().filter(|m| m.1).count();
        let count = MemberCount::new(s, n, nreq, !extras.is_empty());
        let (min, k) = (count.min, count.k);
        // Which listed members the state tracks as a set (bit i = member
        // i written); the other required ones are counted.
        let tracked: Vec<bool> = if n <= ANY_ORDER_EXACT_MAX {
            vec![true; n]
        } else if (1usize << nreq.min(31)) * (n + extras.len()) <= REQUIRED_SET_MAX_ALTS {
            members.iter().map(|m| m.1).collect()
        } else {
            vec![false; n]
        };
        let ntracked = tracked.iter().filter(|&&t| t).count();
        let counted_req = members
            .iter()
            .zip(&tracked)
            .filter(|(m, &t)| m.1 && !t)
            .count();
        let positions = (1usize << ntracked) * (counted_req + 1);
        if positions * (k + 1) * 2 > MAX_COUNT_STATES {
            return Err(Error::limit(format!(
                "minProperties/maxProperties: the object needs more than \
                 {MAX_COUNT_STATES} counting states"
            )));
        }
        let (can_add, inc) = (|c| count.can_add(c), |c| count.inc(c));
        let all_needs = all_needs(s);
        let mut bit = vec![0u64; n];
        let mut next_bit = 0;
        for (i, &t) in tracked.iter().enumerate() {
            if t {
                bit[i] = 1 << next_bit;
                next_bit += 1;
            }
        }
        let req_mask: u64 = (0..n).filter(|&i| members[i].1).map(|i| bit[i]).sum();
        // State: (set written, required counted, members written, needs
        // met).
        type Key = (u64, usize, usize, NeedsMet);
        // After writing member j in state (set, creq): the next (set,
        // creq), or None when j was already written and is tracked.
        let after = |j: usize, set: u64, creq: usize| -> Option<(u64, usize)> {
            if tracked[j] {
                (set & bit[j] == 0).then_some((set | bit[j], creq))
            } else if members[j].1 {
                Some((set, (creq + 1).min(counted_req)))
            } else {
                Some((set, creq))
            }
        };
        let mut rules: FastMap<Key, RuleId> = FastMap::default();
        let mut todo: Vec<Key> = Vec::new();
        fn get(
            this: &mut Compiler,
            rules: &mut FastMap<Key, RuleId>,
            todo: &mut Vec<Key>,
            key: Key,
        ) -> Result<Expr> {
            if let Some(&r) = rules.get(&key) {
                return Ok(Expr::Ref(r));
            }
            let r = this.new_rule(format!("members#{}", this.b.len()))?;
            this.b.set_lexeme_hint(r, LexemeHint::Never);
            rules.insert(key, r);
            todo.push(key);
            Ok(Expr::Ref(r))
        }
        // The members that may follow state (set, creq, c, f), each with
        // the state after it; `lead` goes before each (the separator).
        let mut groups: FastMap<Vec<(usize, usize)>, RuleId> = FastMap::default();
        let mut continuations = |this: &mut Compiler,
                                 rules: &mut FastMap<Key, RuleId>,
                                 todo: &mut Vec<Key>,
                                 (set, creq, c, f): Key,
                                 lead: Option<&Expr>|
         -> Result<Vec<Expr>> {
            let mut alts = Vec::new();
            if !can_add(c) {
                return Ok(alts);
            }
            // Members that lead to the same state form one alternation,
            // a rule shared by every state that offers the same group:
            // counted members lead every state to the next count, and
            // spelled out per state they made n states of n alternatives
            // each (quadratic in required properties).
            let mut by_next: Vec<(Key, Vec<(usize, usize)>)> = Vec::new();
            let mut offer = |next: Key, member: (usize, usize)| match by_next
                .iter_mut()
                .find(|(k, _)| *k == next)
            {
                Some((_, v)) => v.push(member),
                None => by_next.push((next, vec![member])),
            };
            for (x, (_, sets)) in extras.iter().enumerate() {
                offer((set, creq, inc(c), f | *sets), (usize::MAX, x));
            }
            for (j, m) in members.iter().enumerate() {
                let Some((set2, creq2)) = after(j, set, creq) else {
                    continue;
                };
                for (x, (_, sets)) in m.0.iter().enumerate() {
                    offer((set2, creq2, inc(c), f | *sets), (j, x));
                }
            }
            let expr_of = |(j, x): (usize, usize)| -> &Expr {
                if j == usize::MAX {
                    &extras[x].0
                } else {
                    &members[j].0[x].0
                }
            };
            for (next_key, group) in by_next {
                let e = if group.len() == 1 {
                    expr_of(group[0]).clone()
                } else if let Some(&r) = groups.get(&group) {
                    Expr::Ref(r)
                } else {
                    let r = this.new_rule(format!("members-any#{}", this.b.len()))?;
                    this.b.set_lexeme_hint(r, LexemeHint::Never);
                    this.b.set_body(
                        r,
                        Expr::alt(group.iter().map(|&m| expr_of(m).clone()).collect()),
                    );
                    groups.insert(group, r);
                    Expr::Ref(r)
                };
                let next = get(this, rules, todo, next_key)?;
                let mut seq = Vec::with_capacity(3);
                seq.extend(lead.cloned());
                seq.push(e);
                seq.push(next);
                alts.push(Expr::seq(seq));
            }
            Ok(alts)
        };
        // The start: nothing written yet (a non-empty continuation).
        let first = continuations(self, &mut rules, &mut todo, (0, 0, 0, 0), None)?;
        while let Some(key) = todo.pop() {
            let (set, creq, c, f) = key;
            let r = rules[&key];
            let mut alts = Vec::new();
            if c >= min && set & req_mask == req_mask && creq == counted_req && f == all_needs {
                alts.push(Expr::Empty);
            }
            alts.extend(continuations(self, &mut rules, &mut todo, key, Some(&sep))?);
            self.b.set_body(r, Expr::alt(alts));
        }
        let mut alts = Vec::new();
        if nreq == 0 && min == 0 && all_needs == 0 {
            alts.push(Expr::seq(vec![
                Expr::literal("{"),
                ws.clone(),
                Expr::literal("}"),
            ]));
        }
        let f = Expr::alt(first);
        if f != Expr::Nothing {
            let (open, close) = (self.open_ws(), self.close_ws());
            alts.push(Expr::seq(vec![
                Expr::literal("{"),
                open,
                f,
                close,
                Expr::literal("}"),
            ]));
        }
        Ok(Expr::alt(alts))
    }
}

fn empty_atom() -> NumAtom {
    // An atom no number satisfies (lower bound above upper bound is
    // normalized away by callers; here: an impossible exact value).
    NumAtom {
        int: Some(true),
        value: Some(Dec::parse("0.5").unwrap()),
        ..NumAtom::any()
    }
}

/// `Some((min, max))` when the language is only a length bound.
/// A language that is a length bound and something else: the something
/// else and the bound (the intersection of every length part).
fn counted_length(l: &StrLang) -> Option<(StrLang, u32, Option<u32>)> {
    let StrLang::Re(e @ Expr::And(_)) = l else {
        return None;
    };
    // A `time`/`date-time` beside a bound stays exact when counted (its
    // lower bounds all strings meet dropped); past EXACT_RFC3339_BELOW
    // the count beside its 66,000 states would pass the counter's limit,
    // and it takes the UTC-only leap-second rule.
    let exact = match length_bounds(e) {
        Some((lo, hi)) => hi.unwrap_or(lo) < EXACT_RFC3339_BELOW,
        None => true,
    };
    let e = super::strings::rfc3339_within_lengths(e, exact).unwrap_or_else(|| e.clone());
    let (lo, hi) = length_bounds(&e)?;
    let Expr::And(parts) = &e else {
        return None;
    };
    let rest: Vec<Expr> = parts
        .iter()
        .filter(|p| pure_length(&StrLang::Re((*p).clone())).is_none())
        .cloned()
        .collect();
    if rest.is_empty() || hi.is_some_and(|h| h < lo) {
        return None;
    }
    Some((StrLang::Re(Expr::and(rest)), lo, hi))
}

/// The length bounds among the parts of an intersection (the largest
/// minimum, the smallest maximum), `None` when no part is one.
fn length_bounds(e: &Expr) -> Option<(u32, Option<u32>)> {
    let Expr::And(parts) = e else {
        return None;
    };
    let mut bounds = None;
    for p in parts {
        if let Some((a, b)) = pure_length(&StrLang::Re(p.clone())) {
            let (lo, hi): (u32, Option<u32>) = bounds.unwrap_or((0, None));
            bounds = Some((
                lo.max(a),
                match (hi, b) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                },
            ));
        }
    }
    bounds
}

/// Whether a string language holds an exact `time`/`date-time` leaf,
/// which is counted beside its automaton whatever the bound (its product
/// with a length would be too large).
fn holds_rfc3339(l: &StrLang) -> bool {
    let StrLang::Re(e) = l else {
        return false;
    };
    match e {
        Expr::Rfc3339(_) => true,
        Expr::And(parts) => parts.iter().any(|p| matches!(p, Expr::Rfc3339(_))),
        _ => false,
    }
}

fn pure_length(l: &StrLang) -> Option<(u32, Option<u32>)> {
    match l {
        StrLang::Re(Expr::Repeat { expr, min, max }) => match &**expr {
            Expr::Class(c) if is_full(c) => Some((*min, *max)),
            _ => None,
        },
        _ => None,
    }
}

/// The node of `type`. Draft 4 defines `integer` by its spelling ("a JSON
/// number without a fraction or exponent part"); later drafts by its value
/// (`1.0` is an integer). Without `$schema`, the later rule.
fn type_node(t: &Value, draft: Draft) -> std::result::Result<Node, String> {
    let names: Vec<&str> = match t {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().ok_or("type names must be strings"))
            .collect::<std::result::Result<_, _>>()?,
        _ => return Err("not a string or an array".into()),
    };
    let mut n = Node::none();
    for name in names {
        match name {
            "null" => n.null = true,
            "boolean" => n.bools = 3,
            "integer" => {
                if !n.num.contains(&NumAtom::any()) {
                    n.num.push(if draft == Draft::D4 {
                        NumAtom::plain_integer()
                    } else {
                        NumAtom::integer()
                    });
                }
            }
            "number" => n.num = vec![NumAtom::any()],
            "string" => n.str = StrLang::any(),
            "array" => n.arr = vec![ArrShape::any()],
            "object" => n.obj = vec![ObjShape::any()],
            other => return Err(format!("unknown type '{other}'")),
        }
    }
    Ok(n)
}

/// The values of a node that is a small finite set of scalars.
fn finite_values(n: &Node) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    if !n.arr.is_empty() || !n.obj.is_empty() {
        return None;
    }
    if n.null {
        out.push(Value::Null);
    }
    if n.bools & 1 != 0 {
        out.push(Value::Bool(false));
    }
    if n.bools & 2 != 0 {
        out.push(Value::Bool(true));
    }
    for a in &n.num {
        // A value with a spelling constraint is not just the value.
        if a.plain.is_some() {
            return None;
        }
        let v = a.value.as_ref()?;
        out.push(serde_json::from_str(&v.to_text()).ok()?);
    }
    match &n.str {
        StrLang::Lits(l) => out.extend(l.iter().map(|s| Value::String(s.clone()))),
        StrLang::Re(_) => return None,
    }
    Some(out)
}

fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (Dec::from_json(x), Dec::from_json(y)) {
            (Some(p), Some(q)) => p.cmp_value(&q).is_eq(),
            _ => x == y,
        },
        _ => a == b,
    }
}
