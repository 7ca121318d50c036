//! The JSON Schema compiler: from schema keywords to nodes
//! ([`eval_schema`](Compiler::eval_schema): references, combinators,
//! emptiness, here; each keyword group in `keywords`) and from nodes to IR
//! rules ([`rule_for`](Compiler::rule_for), in `emit`). The other child
//! modules are the set differences (`difference`), the options that change
//! what is emitted (`integers`, `layout`, `lenient`, `ordered`) and
//! `unevaluatedProperties`/`unevaluatedItems` (`unevaluated`).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use serde_json::Value;

use super::decimal::Dec;
use super::doc::{Doc, Draft, Keywords};
use super::node::{too_many_numbers, AlgebraError, ArrShape, Node, ObjShape, Term};
use super::number::NumAtom;
use super::strings::StrLang;
use super::JsonOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{Expr, GrammarBuilder, RuleId};
use crate::limits::{Deadline, SampledDeadline};
use crate::util::hash::{FastMap, FastSet};

// The options of `JsonOptions` that change what is emitted, each in its
// own module (they see the compiler's fields).
mod difference;
mod emit;
mod integers;
mod keywords;
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
/// The largest `minLength`/`maxLength` compiled: a length bound is a
/// count beside the string's automaton (see [`LexemeHint::Counted`]),
/// which keeps about 12 bytes per count (liveness and token-set classes)
/// and takes about 10 ns per count to build.
const MAX_LENGTH_BOUND: u32 = 1_280_000;
/// A length bound from which a string with a `pattern` or `format` counts
/// its code points beside the pattern's automaton (see
/// [`LexemeHint::Counted`]) instead of multiplying the two automata.
const COUNTED_FROM: u32 = 64;
/// A length bound from which a string of any characters counts its code
/// points beside "any string"'s automaton (see [`LexemeHint::Counted`]):
/// its token sets are then those of "any string"
/// less the tokens the count left forbids, shared by every bound (see
/// `tokensets::strings::counted_string_info`), where a DFA with a state
/// per position (20 per code point) cost 5 ms to build and 2.5 ms to
/// analyse at a bound of 256.
const LENGTH_COUNTED_FROM: u32 = 16;
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

/// An error of `kind` about keyword `kw` at `ptr`: "`kw` at `ptr`: `reason`".
fn keyword_error(kind: ErrorKind, kw: &str, ptr: &str, reason: impl std::fmt::Display) -> Error {
    Error::new(kind, format!("{kw} at {}: {reason}", at(ptr)))
}

/// A keyword cgram does not support here (`ErrorKind::Unsupported`).
fn unsupported(kw: &str, ptr: &str, reason: impl std::fmt::Display) -> Error {
    keyword_error(ErrorKind::Unsupported, kw, ptr, reason)
}

/// A keyword whose value is malformed (`ErrorKind::Parse`).
fn parse_error(kw: &str, ptr: &str, reason: impl std::fmt::Display) -> Error {
    keyword_error(ErrorKind::Parse, kw, ptr, reason)
}

/// `oneOf` of branches that are finite sets of scalars (`const`s and
/// `enum`s of strings, numbers, booleans, `null`): the values in exactly
/// one branch, counted in one pass instead of excluding every pair of
/// branches (a `oneOf` of 60,000 `const`s is 3.6 billion pairs). `None`
/// when some branch holds anything else.
fn exactly_one_value(branches: &[Node]) -> Option<Node> {
    let plain_value = |a: &NumAtom| {
        a.value.is_some()
            && *a
                == NumAtom {
                    value: a.value.clone(),
                    ..NumAtom::any()
                }
    };
    let mut strings: FastMap<&str, usize> = FastMap::default();
    // (value, branch): equal values may be spelled differently (`1`, `1.0`).
    let mut numbers: Vec<(&Dec, usize)> = Vec::new();
    let (mut nulls, mut falses, mut trues) = (0, 0, 0);
    for (i, b) in branches.iter().enumerate() {
        let StrLang::Lits(lits) = &b.str else {
            return None;
        };
        if !b.arr.is_empty() || !b.obj.is_empty() || !b.num.iter().all(plain_value) {
            return None;
        }
        for s in lits {
            *strings.entry(s.as_str()).or_default() += 1;
        }
        numbers.extend(
            b.num
                .iter()
                .filter_map(|a| a.value.as_ref())
                .map(|v| (v, i)),
        );
        nulls += usize::from(b.null);
        falses += usize::from(b.bools & 1 != 0);
        trues += usize::from(b.bools & 2 != 0);
    }
    numbers.sort_by(|a, b| a.0.cmp_value(b.0).then(a.1.cmp(&b.1)));
    let mut num = Vec::new();
    for run in numbers.chunk_by(|a, b| a.0.cmp_value(b.0).is_eq()) {
        // Branches holding the value (a branch may list it twice).
        if run.iter().all(|x| x.1 == run[0].1) {
            num.push(NumAtom::value(run[0].0.clone()));
        }
    }
    let once: BTreeSet<String> = strings
        .into_iter()
        .filter(|&(_, n)| n == 1)
        .map(|(s, _)| s.to_string())
        .collect();
    Some(Node {
        null: nulls == 1,
        bools: u8::from(falses == 1) | (u8::from(trues == 1) << 1),
        num,
        str: StrLang::Lits(once),
        arr: Vec::new(),
        obj: Vec::new(),
    })
}

/// Errors from the node algebra (limits or inexpressible negations).
fn algebra(kw: &str, ptr: &str, e: AlgebraError) -> Error {
    keyword_error(e.kind(), kw, ptr, e)
}

/// What a member rule's key is: one listed name (as JSON text) or a key
/// lexeme rule (names other than the listed ones, pattern properties).
#[derive(Clone, PartialEq, Eq, Hash)]
enum MemberKey {
    Name(String),
    Lexeme(RuleId),
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
    /// `,` and `:` between optional whitespace (see `Compiler::spaced`).
    separators: FastMap<&'static str, RuleId>,
    /// Member rules by key and value rule (see `Compiler::member_rule`).
    member_rules: FastMap<(MemberKey, RuleId), RuleId>,
    /// Rules of a separator and a member, by the member's rule and the
    /// separator (see `Compiler::led_member_rule`).
    led_member_rules: FastMap<(RuleId, Expr), RuleId>,
    /// JSON texts of string languages already spelled (see
    /// [`Compiler::encoded`]).
    encoded: FastMap<StrLang, Expr>,
    /// Lexeme rules of string languages (see [`Compiler::string_rule`]).
    string_rules: FastMap<StrLang, RuleId>,
    /// Lexeme rules of number sets already written (see
    /// [`Compiler::number_rule`]).
    numbers: FastMap<Vec<NumAtom>, RuleId>,
    arr_rules: FastMap<ArrShape, RuleId>,
    obj_rules: FastMap<ObjShape, RuleId>,
    ws: Option<RuleId>,
    deadline: Deadline,
    /// The deadline as checked on every rule made and subschema evaluated.
    frequent_checks: SampledDeadline,
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
            separators: FastMap::default(),
            member_rules: FastMap::default(),
            led_member_rules: FastMap::default(),
            encoded: FastMap::default(),
            string_rules: FastMap::default(),
            numbers: FastMap::default(),
            arr_rules: FastMap::default(),
            obj_rules: FastMap::default(),
            ws: None,
            deadline,
            frequent_checks: SampledDeadline::new(deadline),
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
                    && t.keyword("$recursiveAnchor") == Some(&Value::Bool(true)) =>
            {
                ""
            }
            ("$dynamicRef", Draft::D2020) => {
                let Some((_, f)) = r.as_str().and_then(|x| x.rsplit_once('#')) else {
                    return Ok(initial);
                };
                if f.is_empty() || t.keyword("$dynamicAnchor").and_then(|a| a.as_str()) != Some(f) {
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
        self.frequent_checks.check()?;
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
            if let Some(r) = m.keyword("$ref") {
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
        let known = |kw: &str| draft.has_keyword(kw) && m.has(kw);
        if let Some(c) = m.keyword("const").filter(|_| known("const")) {
            let n = self.value_node(c)?;
            self.meet(&mut node, &n, "const", &ptr)?;
        }
        if let Some(e) = m.keyword("enum") {
            let Value::Array(vals) = e else {
                return Err(parse_error("enum", &ptr, "not an array"));
            };
            let n = self.values_node(vals)?;
            self.meet(&mut node, &n, "enum", &ptr)?;
        }
        if let Some(t) = m.keyword("type") {
            let n = type_node(t, draft).map_err(|e| parse_error("type", &ptr, e))?;
            self.meet(&mut node, &n, "type", &ptr)?;
        }
        // Type-specific keywords.
        if let Some(s) = self.string_keywords(m, &ptr)? {
            if !node.str.is_empty() {
                node.str = node.str.and(&s);
            }
        }
        if let Some(a) = self.number_keywords(m, &ptr)? {
            node.num = super::number::set_and(&node.num, &[a])
                .ok_or_else(|| algebra("type", &ptr, too_many_numbers()))?;
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
            let Some(Value::Object(deps)) = m.keyword(kw).filter(|_| draft.has_keyword(kw)) else {
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
                                return Err(parse_error(
                                    kw,
                                    &ptr,
                                    "dependency names must be strings",
                                ));
                            };
                            req.push(s.clone());
                        }
                        self.dependency_node(name, &req, None)
                    }
                    Value::Object(_) | Value::Bool(_) => {
                        let sub = self
                            .doc
                            .child(id, &[kw, name])
                            .ok_or_else(|| parse_error(kw, &ptr, "missing subschema"))?;
                        let s = self.eval(&self.loc(sub))?;
                        self.dependency_node(name, std::slice::from_ref(name), Some(&s))
                    }
                    _ => {
                        return Err(parse_error(
                            kw,
                            &ptr,
                            "a dependency must be an array or a schema",
                        ))
                    }
                }
                .map_err(|e| algebra(kw, &ptr, e))?;
                self.meet(&mut node, &n, kw, &ptr)?;
            }
        }
        // Applicators.
        if draft >= Draft::D2019 {
            if let Some(r) = m.keyword("$ref") {
                if let Some(target) = self.ref_or_leave(id, "$ref", r, &ptr)? {
                    let n = self.eval(&self.loc(target))?;
                    self.meet(&mut node, &n, "$ref", &ptr)?;
                }
            }
            for kw in ["$recursiveRef", "$dynamicRef"] {
                let Some(r) = m.keyword(kw) else { continue };
                if let Some(target) = self.ref_or_leave(id, kw, r, &ptr)? {
                    let target = match self.dynamic_target(kw, r, id, target) {
                        Ok(t) => t,
                        Err(e) => {
                            self.leave_out(unsupported(kw, &ptr, e.message()), kw, &ptr)?;
                            continue;
                        }
                    };
                    let n = self.eval(&self.loc(target))?;
                    self.meet(&mut node, &n, kw, &ptr)?;
                }
            }
        }
        if let Some(v) = m.keyword("allOf") {
            for sub in self.subschemas(id, "allOf", v, &ptr)? {
                let n = self.eval(&self.loc(sub))?;
                self.meet(&mut node, &n, "allOf", &ptr)?;
            }
        }
        if let Some(v) = m.keyword("anyOf") {
            let mut branches = Vec::new();
            for (i, sub) in self
                .subschemas(id, "anyOf", v, &ptr)?
                .into_iter()
                .enumerate()
            {
                if i % 1024 == 1023 {
                    self.check_time()?;
                }
                branches.push(self.eval(&self.loc(sub))?);
            }
            let acc = Node::union_all(branches.iter().map(|n| &**n))
                .map_err(|e| algebra("anyOf", &ptr, e))?;
            self.meet(&mut node, &acc, "anyOf", &ptr)?;
        }
        if let Some(v) = m.keyword("oneOf") {
            let subs = self.subschemas(id, "oneOf", v, &ptr)?;
            let n = self.one_of(&subs, &node, &ptr)?;
            self.meet(&mut node, &n, "oneOf", &ptr)?;
        }
        if let Some(Value::Object(_) | Value::Bool(_)) = m.keyword("not") {
            let sub = self.doc.child(id, &["not"]).unwrap();
            let n = self.eval(&self.loc(sub))?;
            if self.is_widened(&self.loc(sub)) {
                let e = unsupported("not", &ptr, "a keyword inside it was left out");
                self.leave_out(e, "not", &ptr)?;
            } else {
                match self.minus(&node, &n)? {
                    Ok(rest) => node = rest,
                    Err(e) => self.leave_out(
                        keyword_error(e.refusal_kind(), "not", &ptr, e),
                        "not",
                        &ptr,
                    )?,
                }
            }
        }
        if known("if") && (m.has("then") || m.has("else")) {
            let get = |c: &mut Self, k: &str| -> Result<Rc<Node>> {
                match c.doc.child(id, &[k]) {
                    Some(sub) if m.has(k) => c.eval(&c.loc(sub)),
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
                let e = unsupported("if", &ptr, "a keyword inside it was left out");
                self.leave_out(e, "if", &ptr)?;
                with_else
            } else {
                match self.minus(&with_else, &i)? {
                    Ok(n) => n,
                    Err(e) => {
                        self.leave_out(keyword_error(e.refusal_kind(), "if", &ptr, e), "if", &ptr)?;
                        with_else
                    }
                }
            };
            node = yes.or(&no).map_err(err)?;
        }
        for kw in ["unevaluatedProperties", "unevaluatedItems"] {
            match m.keyword(kw) {
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
            return Err(parse_error(kw, ptr, "not a string"));
        };
        self.doc
            .resolve_ref(id, s)
            .map_err(|e| unsupported(kw, ptr, e))
    }

    fn subschemas(&mut self, id: u32, kw: &str, v: &Value, ptr: &str) -> Result<Vec<u32>> {
        let Value::Array(a) = v else {
            return Err(parse_error(kw, ptr, "not an array"));
        };
        if a.is_empty() {
            return Err(parse_error(kw, ptr, "an empty array"));
        }
        (0..a.len())
            .map(|i| {
                self.doc
                    .child(id, &[kw, &i.to_string()])
                    .ok_or_else(|| parse_error(kw, ptr, "missing subschema"))
            })
            .collect()
    }

    /// `oneOf`: exactly one branch. Branch `i` is kept as `A_i ∧ ¬A_j` for
    /// every other branch `j` that may overlap with it within `ctx` (the
    /// sibling keywords); provably disjoint branches need no negation.
    fn one_of(&mut self, subs: &[u32], ctx: &Node, ptr: &str) -> Result<Node> {
        let mut branches = Vec::new();
        for (i, &s) in subs.iter().enumerate() {
            if i % 1024 == 1023 {
                self.check_time()?;
            }
            let n = self.eval(&self.loc(s))?;
            let n = n
                .and(ctx, &self.deadline)
                .map_err(|e| algebra("oneOf", ptr, e))?;
            branches.push(n);
        }
        if !subs.iter().any(|&s| self.is_widened(&self.loc(s))) {
            if let Some(n) = exactly_one_value(&branches) {
                return Ok(n);
            }
        }
        let k = branches.len();
        let mut kept = Vec::with_capacity(k);
        for i in 0..k {
            let mut cur = branches[i].clone();
            for j in 0..k {
                if i == j || cur.is_empty() {
                    continue;
                }
                // k² pairs: each one checks the clock.
                self.check_time()?;
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
                        let e = unsupported(
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
            kept.push(cur);
        }
        Node::union_all(&kept).map_err(|e| algebra("oneOf", ptr, e))
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
        .filter(|p| length_part(p).is_none())
        .cloned()
        .collect();
    if rest.is_empty() || hi.is_some_and(|h| h < lo) {
        return None;
    }
    Some((StrLang::Re(Expr::and(rest)), lo, hi))
}

/// A length bound that the rest of an intersection already keeps, left
/// out: `{"pattern": "^[a-z]+$", "minLength": 1}` is the pattern alone.
/// Kept, the bound makes the lexeme a product of two automata, minimized
/// (a word-count pattern of 14,000 states took twice as long so), or a
/// count beside the pattern. `None` when nothing is left out.
fn without_implied_lengths(l: &StrLang) -> Option<StrLang> {
    let StrLang::Re(Expr::And(parts)) = l else {
        return None;
    };
    let (lengths, rest): (Vec<&Expr>, Vec<&Expr>) =
        parts.iter().partition(|p| length_part(p).is_some());
    if lengths.is_empty() || rest.is_empty() {
        return None;
    }
    let (lo, hi) = rest
        .iter()
        .map(|p| code_point_bounds(p))
        .fold((0, None), intersect_bounds);
    let implied = |p: &Expr| match length_part(p) {
        Some((min, max)) => min <= lo && max.is_none_or(|max| hi.is_some_and(|hi| hi <= max)),
        None => false,
    };
    if !lengths.iter().any(|p| implied(p)) {
        return None;
    }
    let kept = parts.iter().filter(|p| !implied(p)).cloned().collect();
    Some(StrLang::Re(Expr::and(kept)))
}

/// Bounds on the length in code points of the strings of `e` (a decoded
/// string language): at least the first, at most the second (`None`:
/// unbounded, or not known). Sound, not tight: an intersection takes its
/// parts' tightest bounds, a complement none.
fn code_point_bounds(e: &Expr) -> (u32, Option<u32>) {
    match e {
        Expr::Empty => (0, Some(0)),
        Expr::Literal(s) => {
            let n = u32::try_from(s.chars().count()).unwrap_or(u32::MAX);
            (n, Some(n))
        }
        Expr::Class(_) => (1, Some(1)),
        Expr::Seq(v) => v
            .iter()
            .map(code_point_bounds)
            .fold((0, Some(0)), |(a, b), (c, d)| {
                (
                    a.saturating_add(c),
                    b.zip(d).and_then(|(b, d)| b.checked_add(d)),
                )
            }),
        Expr::Alt(v) if !v.is_empty() => {
            let bounds: Vec<_> = v.iter().map(code_point_bounds).collect();
            let lo = bounds.iter().map(|b| b.0).min().unwrap_or(0);
            let hi = bounds.iter().map(|b| b.1).collect::<Option<Vec<u32>>>();
            (lo, hi.and_then(|h| h.into_iter().max()))
        }
        Expr::Repeat { expr, min, max } => {
            let (lo, hi) = code_point_bounds(expr);
            let upper = match (hi, *max) {
                (Some(0), _) => Some(0),
                (Some(h), Some(m)) => h.checked_mul(m),
                _ => None,
            };
            (lo.saturating_mul(*min), upper)
        }
        Expr::And(v) => v
            .iter()
            .map(code_point_bounds)
            .fold((0, None), intersect_bounds),
        // Complements, `time`/`date-time`, and what is not a decoded
        // string: nothing known.
        _ => (0, None),
    }
}

/// Bounds on the lengths of an intersection's strings, from its parts'.
fn intersect_bounds(a: (u32, Option<u32>), b: (u32, Option<u32>)) -> (u32, Option<u32>) {
    let hi = match (a.1, b.1) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    (a.0.max(b.0), hi)
}

/// The length bounds among the parts of an intersection (the largest
/// minimum, the smallest maximum), `None` when no part is one.
fn length_bounds(e: &Expr) -> Option<(u32, Option<u32>)> {
    let Expr::And(parts) = e else {
        return None;
    };
    parts
        .iter()
        .filter_map(length_part)
        .reduce(intersect_bounds)
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

/// A repetition of one class of characters (`[^\n]{1,256}`) as the
/// class's strings and the length bounds.
fn class_length(l: &StrLang) -> Option<(StrLang, u32, Option<u32>)> {
    match l {
        StrLang::Re(Expr::Repeat { expr, min, max }) if max.is_none_or(|h| h >= *min) => {
            match &**expr {
                Expr::Class(_) => Some((StrLang::Re(Expr::star((**expr).clone())), *min, *max)),
                _ => None,
            }
        }
        _ => None,
    }
}

fn pure_length(l: &StrLang) -> Option<(u32, Option<u32>)> {
    match l {
        StrLang::Re(e) => length_part(e),
        _ => None,
    }
}

/// The bounds of a length bound (any code point, repeated).
fn length_part(e: &Expr) -> Option<(u32, Option<u32>)> {
    match e {
        Expr::Repeat { expr, min, max } => match &**expr {
            Expr::Class(c) if c.is_any() => Some((*min, *max)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(p: &str) -> Expr {
        crate::regex::to_expr_with(
            p,
            crate::regex::Anchoring::Search,
            crate::regex::RegexOptions::default(),
        )
        .unwrap()
    }

    fn length(min: u32, max: Option<u32>) -> Expr {
        Expr::Repeat {
            expr: Box::new(Expr::Class(crate::ir::CharClass::any())),
            min,
            max,
        }
    }

    /// Which bounds go: those every string of the pattern meets.
    #[test]
    fn implied_lengths_are_left_out() {
        let cases: &[(&str, u32, Option<u32>, bool)] = &[
            ("^[a-z]+$", 1, None, true),
            ("^[a-z]+$", 2, None, false),
            ("a", 1, None, true),
            ("a", 0, Some(3), false),
            ("^[a-z]{2,3}$", 2, Some(3), true),
            ("^[a-z]{2,5}$", 0, Some(3), false),
            ("^(?:\\S+\\s+){0,99}\\S+$", 1, None, true),
            ("^(?:\\S+\\s+){0,99}\\S+$", 0, Some(300), false),
            ("^$|^a$", 1, None, false),
            ("^(ab|c)$", 1, Some(2), true),
            ("^(ab|c)$", 2, Some(2), false),
        ];
        for &(p, min, max, dropped) in cases {
            let l = StrLang::Re(Expr::And(vec![pattern(p), length(min, max)]));
            assert_eq!(
                without_implied_lengths(&l).is_some(),
                dropped,
                "{p} {min} {max:?}"
            );
        }
    }
}
