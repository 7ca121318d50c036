//! The meaning of a schema in normal form, and its boolean algebra.
//!
//! A [`Node`] is the set of instances a schema accepts, split by JSON
//! type: whether `null` is accepted, which booleans, a union of number
//! constraints ([`NumAtom`]), a set of decoded strings ([`StrLang`]), and
//! unions of array and object *shapes*. A shape is one conjunction of the
//! structural keywords (`properties`, `required`, `items`, bounds, ...)
//! whose member schemas are [`Term`]s: references to subschemas, combined
//! lazily with and/or/not. Intersection (`allOf`, sibling keywords) merges
//! shapes pairwise; union (`anyOf`) concatenates them; complement (`not`,
//! `oneOf`, `if`) pushes the negation into each keyword (`not required a`
//! is "`a` absent", `not minItems n` is `maxItems n-1`, ...), giving a
//! union of shapes again. Keywords whose negation has no shape (e.g. `not
//! uniqueItems`) are refused with a message.

use std::collections::BTreeSet;

use crate::error::ErrorKind;
use crate::ir::Expr;
use crate::limits::Deadline;
use crate::util::hash::FastSet;

use super::number::{set_and, set_not, set_union, NumAtom};
use super::strings::StrLang;

/// Most shapes (alternatives) of one type in a node.
pub const MAX_SHAPES: usize = 1024;
/// Most pairwise intersections of shapes one boolean operation on nodes
/// computes (a negation intersects with each shape's negation in turn).
/// Each is a merge of two shapes; the bound keeps an operation to tens of
/// milliseconds, as unions are allowed to grow past what pairs of the
/// largest ones could be intersected.
const MAX_SHAPE_PAIRS: usize = 16_384;

/// Most nodes of the expression of one string language that combining
/// subschemas builds (patterns and formats intersected, complemented and
/// joined). An expression is copied whole into each combination, so
/// `allOf`/`not` nested k deep around one `format` made 2^k copies: ten
/// levels (a 99 KB schema) took 2.6 GB within the compile deadline. The
/// largest on `maskbench-dev` has 1,031 nodes; 250,000 leaves room for an
/// `enum` of as many strings beside a pattern.
pub const MAX_STRING_NODES: usize = 250_000;

/// A schema-valued expression, evaluated lazily into a [`Node`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Term {
    True,
    False,
    /// The schema at a document location, in a dynamic context (which
    /// `$dynamicAnchor`/`$recursiveAnchor` bindings the path from the root
    /// entered: 0 when none; see `Compiler::enter`).
    Loc(u32, u32),
    /// Exactly one JSON value (from `const` / `enum`).
    Val(u32),
    Not(Box<Term>),
    And(Vec<Term>),
    /// A name left unlisted by a schema that lists `properties` or
    /// `patternProperties` under [`super::JsonOptions::no_extra_properties`]:
    /// rejected, unless an intersection (`allOf`, `$ref`, sibling keywords)
    /// with a schema that lists the name lets it in. So the flag closes
    /// each alternative of an object on the union of the names its
    /// conjoined schemas list. Shapes are [`hardened`](Term::hardened)
    /// before emission.
    Unlisted,
}

impl Term {
    pub fn and(a: Term, b: Term) -> Term {
        Term::and_all(vec![a, b])
    }

    pub fn and_all(v: Vec<Term>) -> Term {
        let mut parts = Vec::new();
        for t in v {
            match t {
                Term::True => {}
                Term::False => return Term::False,
                Term::And(x) => parts.extend(x),
                t => parts.push(t),
            }
        }
        // A part from a listing (a subschema or a value) lets an unlisted
        // name in; negations and `true` do not.
        if parts
            .iter()
            .any(|t| matches!(t, Term::Loc(..) | Term::Val(_)))
        {
            parts.retain(|t| *t != Term::Unlisted);
        }
        parts.sort();
        parts.dedup();
        if parts.iter().any(|t| match t {
            Term::Not(x) => parts.binary_search(x).is_ok(),
            _ => false,
        }) {
            return Term::False;
        }
        match parts.len() {
            0 => Term::True,
            1 => parts.pop().unwrap(),
            _ => Term::And(parts),
        }
    }

    /// The term with unlisted names rejected (for emission).
    pub fn hardened(&self) -> Term {
        match self {
            Term::Unlisted => Term::False,
            Term::And(v) if v.contains(&Term::Unlisted) => Term::False,
            t => t.clone(),
        }
    }

    /// The term with unlisted names allowed (the flag does not apply to
    /// the schemas of `not` and `if`: they are tests, not shapes).
    pub fn opened(&self) -> Term {
        match self {
            Term::Unlisted => Term::True,
            Term::And(v) if v.contains(&Term::Unlisted) => Term::and_all(
                v.iter()
                    .filter(|t| **t != Term::Unlisted)
                    .cloned()
                    .collect(),
            ),
            t => t.clone(),
        }
    }

    #[allow(clippy::should_implement_trait)]
    pub fn not(t: Term) -> Term {
        match t {
            Term::True => Term::False,
            Term::False => Term::True,
            Term::Not(x) => *x,
            t => Term::Not(Box::new(t)),
        }
    }
}

/// At least `min` (at most `max`) items from index `from` on match `term`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Contains {
    pub term: Term,
    pub min: u32,
    pub max: Option<u32>,
    pub from: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrShape {
    /// Schemas of the first items.
    pub prefix: Vec<Term>,
    /// Schema of the items after the prefix.
    pub rest: Term,
    pub min: u32,
    pub max: Option<u32>,
    pub contains: Vec<Contains>,
    pub unique: bool,
}

impl ArrShape {
    pub fn any() -> ArrShape {
        ArrShape {
            prefix: Vec::new(),
            rest: Term::True,
            min: 0,
            max: None,
            contains: Vec::new(),
            unique: false,
        }
    }

    /// Equal to [`ArrShape::any`].
    pub fn is_any(&self) -> bool {
        self.prefix.is_empty()
            && self.rest == Term::True
            && self.min == 0
            && self.max.is_none()
            && self.contains.is_empty()
            && !self.unique
    }

    pub fn at(&self, i: usize) -> &Term {
        self.prefix.get(i).unwrap_or(&self.rest)
    }

    pub fn and(&self, o: &ArrShape) -> Option<ArrShape> {
        let n = self.prefix.len().max(o.prefix.len());
        let prefix = (0..n)
            .map(|i| Term::and(self.at(i).clone(), o.at(i).clone()))
            .collect();
        let mut contains = self.contains.clone();
        for c in &o.contains {
            if !contains.contains(c) {
                contains.push(c.clone());
            }
        }
        ArrShape {
            prefix,
            rest: Term::and(self.rest.clone(), o.rest.clone()),
            min: self.min.max(o.min),
            max: match (self.max, o.max) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            contains,
            unique: self.unique || o.unique,
        }
        .simplify()
    }

    /// Normal form; `None` when provably empty.
    pub fn simplify(mut self) -> Option<ArrShape> {
        // Contains over every item is a length bound.
        let mut keep = Vec::new();
        for c in std::mem::take(&mut self.contains) {
            if c.min == 0 && c.max.is_none() {
                continue;
            }
            if c.term == Term::True {
                self.min = self.min.max(c.from + c.min);
                if let Some(m) = c.max {
                    let cap = c.from + m;
                    self.max = Some(self.max.map_or(cap, |x| x.min(cap)));
                }
                continue;
            }
            if c.term == Term::False {
                if c.min > 0 {
                    return None;
                }
                continue;
            }
            keep.push(c);
        }
        self.contains = keep;
        if self.rest == Term::False {
            let p = self.prefix.len() as u32;
            self.max = Some(self.max.map_or(p, |m| m.min(p)));
        }
        if let Some(m) = self.max {
            if self.prefix.len() > m as usize {
                self.prefix.truncate(m as usize);
            }
            if self.min > m {
                return None;
            }
        }
        while self.prefix.last() == Some(&self.rest) {
            self.prefix.pop();
        }
        for i in 0..self.min as usize {
            if *self.at(i) == Term::False {
                return None;
            }
            if i > self.prefix.len() {
                break;
            }
        }
        if self.max.is_some_and(|m| m <= 1) {
            self.unique = false;
        }
        Some(self)
    }

    /// The arrays this shape rejects, as a union of shapes.
    pub fn negate(&self) -> Result<Vec<ArrShape>, AlgebraError> {
        if self.unique {
            return Err(AlgebraError::Inexpressible(
                "the negation of uniqueItems (an array with a duplicate) cannot be expressed"
                    .into(),
            ));
        }
        let mut out = Vec::new();
        let base = ArrShape::any;
        if self.min > 0 {
            out.push(ArrShape {
                max: Some(self.min - 1),
                ..base()
            });
        }
        if let Some(m) = self.max {
            out.push(ArrShape {
                min: m + 1,
                ..base()
            });
        }
        for (i, t) in self.prefix.iter().enumerate() {
            if *t == Term::True {
                continue;
            }
            let mut prefix = vec![Term::True; i];
            prefix.push(Term::not(t.clone()));
            out.push(ArrShape {
                prefix,
                min: i as u32 + 1,
                ..base()
            });
        }
        if self.rest != Term::True {
            out.push(ArrShape {
                contains: vec![Contains {
                    term: Term::not(self.rest.clone()),
                    min: 1,
                    max: None,
                    from: self.prefix.len() as u32,
                }],
                ..base()
            });
        }
        for c in &self.contains {
            if c.min > 0 {
                out.push(ArrShape {
                    contains: vec![Contains {
                        term: c.term.clone(),
                        min: 0,
                        max: Some(c.min - 1),
                        from: c.from,
                    }],
                    ..base()
                });
            }
            if let Some(m) = c.max {
                out.push(ArrShape {
                    contains: vec![Contains {
                        term: c.term.clone(),
                        min: m + 1,
                        max: None,
                        from: c.from,
                    }],
                    ..base()
                });
            }
        }
        Ok(out.into_iter().filter_map(|s| s.simplify()).collect())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjShape {
    /// Listed properties, in order, with the schema of their value (which
    /// includes the `patternProperties` matching the name).
    pub props: Vec<(String, Term)>,
    /// Required names (always listed).
    pub required: BTreeSet<String>,
    /// Disjoint classes of unlisted names with the schema of their value;
    /// an unlisted name in no class is not allowed.
    pub extra: Vec<(StrLang, Term)>,
    pub min: u32,
    pub max: Option<u32>,
    /// Listed names without a place of their own in `properties` (from
    /// `required`, dependencies, negations): when shapes merge, their
    /// position yields to names listed by `properties`.
    pub weak: BTreeSet<String>,
    /// At least one member (listed or not) has a name in the language and
    /// a value matching the term (from negating `additionalProperties`,
    /// `patternProperties`, `propertyNames`).
    pub need: Vec<(StrLang, Term)>,
}

impl ObjShape {
    pub fn any() -> ObjShape {
        ObjShape {
            props: Vec::new(),
            required: BTreeSet::new(),
            extra: vec![(StrLang::any(), Term::True)],
            min: 0,
            max: None,
            weak: BTreeSet::new(),
            need: Vec::new(),
        }
    }

    /// Equal to [`ObjShape::any`].
    pub fn is_any(&self) -> bool {
        self.props.is_empty()
            && self.required.is_empty()
            && matches!(&self.extra[..], [(l, Term::True)] if l.is_any())
            && self.min == 0
            && self.max.is_none()
            && self.weak.is_empty()
            && self.need.is_empty()
    }

    /// The schema a property named `k` must satisfy.
    pub fn value_for(&self, k: &str) -> Term {
        if let Some((_, t)) = self.props.iter().find(|(n, _)| n == k) {
            return t.clone();
        }
        for (l, t) in &self.extra {
            if l.contains(k) {
                return t.clone();
            }
        }
        Term::False
    }

    pub fn and(&self, o: &ObjShape) -> Option<ObjShape> {
        // Names listed by `properties` first, in order of first mention;
        // names listed only weakly after them.
        let mut props: Vec<(String, Term)> = Vec::new();
        let mut weak = BTreeSet::new();
        for pass in 0..2 {
            for (k, _) in self.props.iter().chain(o.props.iter()) {
                let is_weak = (self.weak.contains(k) || !self.props.iter().any(|(n, _)| n == k))
                    && (o.weak.contains(k) || !o.props.iter().any(|(n, _)| n == k));
                if (pass == 0) == is_weak || props.iter().any(|(n, _)| n == k) {
                    continue;
                }
                if is_weak {
                    weak.insert(k.clone());
                }
                props.push((k.clone(), Term::and(self.value_for(k), o.value_for(k))));
            }
        }
        let mut extra = Vec::new();
        for (la, ta) in &self.extra {
            for (lb, tb) in &o.extra {
                let l = la.and(lb);
                let t = Term::and(ta.clone(), tb.clone());
                if l.is_empty() || t == Term::False {
                    continue;
                }
                extra.push((l, t));
            }
        }
        let mut need = self.need.clone();
        for x in &o.need {
            if !need.contains(x) {
                need.push(x.clone());
            }
        }
        ObjShape {
            props,
            weak,
            need,
            required: self.required.union(&o.required).cloned().collect(),
            extra,
            min: self.min.max(o.min),
            max: match (self.max, o.max) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
        .simplify()
    }

    /// Normal form; `None` when provably empty.
    pub fn simplify(mut self) -> Option<ObjShape> {
        for r in &self.required {
            match self.props.iter().find(|(n, _)| n == r) {
                Some((_, Term::False)) | None => return None,
                _ => {}
            }
        }
        if let Some(m) = self.max {
            if self.min > m || self.required.len() as u32 > m {
                return None;
            }
        }
        self.extra
            .retain(|(l, t)| !l.is_empty() && *t != Term::False);
        if self
            .need
            .iter()
            .any(|(l, t)| l.is_empty() || *t == Term::False)
        {
            return None;
        }
        // A need no member may meet: no listed name and no class of
        // unlisted names in its language.
        let can_meet = |l: &StrLang| {
            self.props
                .iter()
                .any(|(k, t)| *t != Term::False && l.contains(k))
                || self
                    .extra
                    .iter()
                    .any(|(le, t)| *t != Term::False && !le.and(l).is_empty())
        };
        if !self.need.iter().all(|(l, _)| can_meet(l)) {
            return None;
        }

        // Listed optional names that may not appear and no class would take
        // anyway need no listing.
        let extra = &self.extra;
        let required = &self.required;
        self.props.retain(|(n, t)| {
            !(*t == Term::False
                && !required.contains(n)
                && !extra.iter().any(|(l, _)| l.contains(n)))
        });
        if self.min <= self.required.len() as u32 {
            self.min = 0;
        }
        Some(self)
    }

    fn map_terms(&self, f: impl Fn(&Term) -> Term) -> Option<ObjShape> {
        let mut s = self.clone();
        for (_, t) in s.props.iter_mut() {
            *t = f(t);
        }
        for (_, t) in s.extra.iter_mut() {
            *t = f(t);
        }
        s.simplify()
    }

    /// The shape with unlisted names rejected (see [`Term::Unlisted`]).
    pub fn hardened(&self) -> Option<ObjShape> {
        self.map_terms(Term::hardened)
    }

    /// The shape with unlisted names allowed: the widest it can become
    /// once intersected with schemas that list more names.
    pub fn opened(&self) -> Option<ObjShape> {
        self.map_terms(Term::opened)
    }

    /// Whether a member schema is [`Term::Unlisted`] or holds it (only
    /// under [`super::JsonOptions::no_extra_properties`]): otherwise the
    /// shape is its own hardened and opened form.
    pub fn has_unlisted(&self) -> bool {
        let unlisted = |t: &Term| match t {
            Term::Unlisted => true,
            Term::And(v) => v.contains(&Term::Unlisted),
            _ => false,
        };
        self.props.iter().any(|(_, t)| unlisted(t)) || self.extra.iter().any(|(_, t)| unlisted(t))
    }

    /// The needs without those met whenever another one is: (L, T)
    /// follows from (L', T') when L' ⊆ L and T' ⊆ T.
    pub fn needs_reduced(&self) -> Vec<(StrLang, Term)> {
        let follows = |a: &(StrLang, Term), b: &(StrLang, Term)| {
            b.0.is_subset(&a.0) && (a.1 == Term::True || a.1 == b.1)
        };
        let mut kept: Vec<(StrLang, Term)> = Vec::new();
        for n in &self.need {
            if kept.iter().any(|k| follows(n, k)) {
                continue;
            }
            kept.retain(|k| !follows(k, n));
            kept.push(n.clone());
        }
        kept
    }

    fn all_extra_allowed(&self) -> bool {
        self.extra.len() == 1 && self.extra[0].0.is_any() && self.extra[0].1 == Term::True
    }

    /// The objects this shape rejects, as a union of shapes (unlisted
    /// names allowed in `self`: see [`Term::opened`]).
    pub fn negate(&self) -> Result<Vec<ObjShape>, AlgebraError> {
        let Some(opened) = self.map_terms(Term::opened) else {
            return Ok(vec![ObjShape::any()]);
        };
        let s = &opened;
        let mut out = Vec::new();
        let base = ObjShape::any;
        for r in &s.required {
            out.push(ObjShape {
                props: vec![(r.clone(), Term::False)],
                weak: [r.clone()].into_iter().collect(),
                ..base()
            });
        }
        for (k, t) in &s.props {
            if *t == Term::True {
                continue;
            }
            out.push(ObjShape {
                props: vec![(k.clone(), Term::not(t.clone()))],
                required: [k.clone()].into_iter().collect(),
                weak: [k.clone()].into_iter().collect(),
                ..base()
            });
        }
        // "Some member with a name in `l` has a value in `t`" fails when
        // every member named in `l` has a value outside `t`: a shape
        // whose unlisted names split into `l` (values `not t`) and the rest.
        for (l, t) in &s.need {
            out.push(ObjShape {
                extra: vec![(l.clone(), Term::not(t.clone())), (l.not(), Term::True)],
                ..base()
            });
        }
        if !s.all_extra_allowed() {
            // Some unlisted member violates its class, or has a name in no
            // class.
            let listed = StrLang::Lits(s.props.iter().map(|(k, _)| k.clone()).collect());
            let unlisted = listed.not();
            let mut covered = StrLang::none();
            for (l, t) in &s.extra {
                covered = covered.or(l);
                if *t != Term::True {
                    out.push(ObjShape {
                        need: vec![(l.and(&unlisted), Term::not(t.clone()))],
                        ..base()
                    });
                }
            }
            let stray = covered.not().and(&unlisted);
            if !stray.is_empty() {
                out.push(ObjShape {
                    need: vec![(stray, Term::True)],
                    ..base()
                });
            }
        }
        if s.min > 0 {
            out.push(ObjShape {
                max: Some(s.min - 1),
                ..base()
            });
        }
        if let Some(m) = s.max {
            out.push(ObjShape {
                min: m + 1,
                ..base()
            });
        }
        Ok(out.into_iter().filter_map(|s| s.simplify()).collect())
    }
}

/// What the difference of two unions of shapes needs from a shape type
/// (see `Compiler::minus`).
pub trait Shape: Clone + Eq + std::hash::Hash {
    /// The intersection; `None` when provably empty.
    fn meet(&self, o: &Self) -> Option<Self>;
    /// The values of this type the shape rejects, as a union of shapes.
    fn complement(&self) -> Result<Vec<Self>, AlgebraError>;
    /// The widest this shape can become in later intersections, for
    /// emptiness tests that must stay true (see [`Term::Unlisted`]).
    fn widest(self) -> Option<Self>;
    /// A node holding this shape alone.
    fn alone(self) -> Node;
}

impl Shape for ArrShape {
    fn meet(&self, o: &Self) -> Option<Self> {
        self.and(o)
    }
    fn complement(&self) -> Result<Vec<Self>, AlgebraError> {
        self.negate()
    }
    fn widest(self) -> Option<Self> {
        Some(self)
    }
    fn alone(self) -> Node {
        Node {
            arr: vec![self],
            ..Node::none()
        }
    }
}

impl Shape for ObjShape {
    fn meet(&self, o: &Self) -> Option<Self> {
        self.and(o)
    }
    fn complement(&self) -> Result<Vec<Self>, AlgebraError> {
        self.negate()
    }
    fn widest(self) -> Option<Self> {
        if self.has_unlisted() {
            self.opened()
        } else {
            Some(self)
        }
    }
    fn alone(self) -> Node {
        Node {
            obj: vec![self],
            ..Node::none()
        }
    }
}

/// The instances of a schema, by JSON type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    pub null: bool,
    /// Bit 0: `false` accepted; bit 1: `true` accepted.
    pub bools: u8,
    /// Union of number constraints (empty: no number).
    pub num: Vec<NumAtom>,
    pub str: StrLang,
    pub arr: Vec<ArrShape>,
    pub obj: Vec<ObjShape>,
}

/// The number algebra past its bounds ([`super::number::MAX_NUM_ATOMS`],
/// [`super::number::MAX_NUM_PAIRS`], [`super::number::MAX_NOT_PAIRS`]).
pub fn too_many_numbers() -> AlgebraError {
    AlgebraError::Limit(format!(
        "more than {} number constraints in one union, or {} pairs of them in one \
         intersection ({} in one complement), after combining subschemas",
        super::number::MAX_NUM_ATOMS,
        super::number::MAX_NUM_PAIRS,
        super::number::MAX_NOT_PAIRS
    ))
}

/// `s`, or an error when its expression passes [`MAX_STRING_NODES`].
fn bounded_string(s: StrLang) -> Result<StrLang, AlgebraError> {
    /// Whether `e` has more nodes than `*left`, counting no further.
    fn exceeds(e: &Expr, left: &mut usize) -> bool {
        if *left == 0 {
            return true;
        }
        *left -= 1;
        let mut over = false;
        e.for_each_child(|c| over = over || exceeds(c, left));
        over
    }
    let mut left = MAX_STRING_NODES;
    match &s {
        StrLang::Re(e) if exceeds(e, &mut left) => Err(AlgebraError::Limit(format!(
            "a string language of more than {MAX_STRING_NODES} expression nodes \
                 after combining subschemas (patterns or formats under allOf, anyOf \
                 and not)"
        ))),
        _ => Ok(s),
    }
}

pub fn too_many() -> AlgebraError {
    AlgebraError::Limit(format!(
        "more than {MAX_SHAPES} alternatives of one type after combining subschemas"
    ))
}

/// Why the shape algebra could not combine schemas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlgebraError {
    /// A limit: too many alternatives.
    Limit(String),
    /// The compile deadline passed.
    Deadline(String),
    /// A negation no union of shapes can express.
    Inexpressible(String),
}

impl AlgebraError {
    /// The error kind the compiler reports it with.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AlgebraError::Limit(_) | AlgebraError::Deadline(_) => ErrorKind::Limit,
            AlgebraError::Inexpressible(_) => ErrorKind::Unsupported,
        }
    }

    /// The kind of a keyword refused (or left out) for this error: any
    /// failure to express it is unsupported, but a deadline stays a limit.
    pub fn refusal_kind(&self) -> ErrorKind {
        match self {
            AlgebraError::Deadline(_) => ErrorKind::Limit,
            _ => ErrorKind::Unsupported,
        }
    }
}

impl From<AlgebraError> for crate::error::Error {
    fn from(e: AlgebraError) -> Self {
        crate::error::Error::new(e.kind(), e.to_string())
    }
}

impl std::fmt::Display for AlgebraError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AlgebraError::Limit(m) | AlgebraError::Deadline(m) | AlgebraError::Inexpressible(m) => {
                f.write_str(m)
            }
        }
    }
}

/// The pairwise intersections of two unions of shapes, without repeats
/// (at most [`MAX_SHAPES`]); `pairs` counts the intersections computed
/// against [`MAX_SHAPE_PAIRS`].
fn product<S: Eq + std::hash::Hash + Clone>(
    xs: &[S],
    ys: &[S],
    and: impl Fn(&S, &S) -> Option<S>,
    pairs: &mut usize,
    deadline: &Deadline,
) -> Result<Vec<S>, AlgebraError> {
    *pairs += xs.len() * ys.len();
    if *pairs > MAX_SHAPE_PAIRS {
        return Err(too_many());
    }
    let mut out = Vec::new();
    let mut seen: FastSet<S> = FastSet::default();
    for a in xs {
        deadline
            .check()
            .map_err(|e| AlgebraError::Deadline(e.message().to_string()))?;
        for b in ys {
            if let Some(s) = and(a, b) {
                if seen.insert(s.clone()) {
                    out.push(s);
                }
            }
            if out.len() > MAX_SHAPES {
                return Err(too_many());
            }
        }
    }
    Ok(out)
}

impl Node {
    pub fn any() -> Node {
        Node {
            null: true,
            bools: 3,
            num: vec![NumAtom::any()],
            str: StrLang::any(),
            arr: vec![ArrShape::any()],
            obj: vec![ObjShape::any()],
        }
    }

    pub fn none() -> Node {
        Node {
            null: false,
            bools: 0,
            num: Vec::new(),
            str: StrLang::none(),
            arr: Vec::new(),
            obj: Vec::new(),
        }
    }

    /// Equal to [`Node::any`], checked without building it (the
    /// intersections ask at every step).
    pub fn is_any(&self) -> bool {
        self.null
            && self.bools == 3
            && matches!(&self.num[..], [n] if *n == NumAtom::any())
            && self.str.is_any()
            && matches!(&self.arr[..], [a] if a.is_any())
            && matches!(&self.obj[..], [o] if o.is_any())
    }

    /// Provably accepts nothing (shallow: member schemas not looked at).
    pub fn is_empty(&self) -> bool {
        !self.null
            && self.bools == 0
            && self.num.is_empty()
            && self.str.is_empty()
            && self.arr.is_empty()
            && self.obj.is_empty()
    }

    /// The intersection; the pairs of shapes it merges check `deadline`.
    pub fn and(&self, o: &Node, deadline: &Deadline) -> Result<Node, AlgebraError> {
        if self.is_any() {
            return Ok(o.clone());
        }
        if o.is_any() {
            return Ok(self.clone());
        }
        let mut pairs = 0;
        let arr = product(&self.arr, &o.arr, ArrShape::and, &mut pairs, deadline)?;
        let obj = product(&self.obj, &o.obj, ObjShape::and, &mut pairs, deadline)?;
        let num = set_and(&self.num, &o.num).ok_or_else(too_many_numbers)?;
        Ok(Node {
            null: self.null && o.null,
            bools: self.bools & o.bools,
            num,
            str: bounded_string(self.str.and(&o.str))?,
            arr,
            obj,
        })
    }

    pub fn or(&self, o: &Node) -> Result<Node, AlgebraError> {
        Node::union_all([self, o])
    }

    /// The union of `nodes`, in one pass: folding [`Node::or`] over an
    /// `anyOf` of 60,000 `const`s copied the strings so far at each step.
    pub fn union_all<'a>(nodes: impl IntoIterator<Item = &'a Node>) -> Result<Node, AlgebraError> {
        let mut out = Node::none();
        let mut lits: BTreeSet<String> = BTreeSet::new();
        let mut res: Vec<&Expr> = Vec::new();
        let mut nums: Vec<&[NumAtom]> = Vec::new();
        let (mut arr_seen, mut obj_seen) = (FastSet::default(), FastSet::default());
        let mut any_str = false;
        for n in nodes {
            out.null |= n.null;
            out.bools |= n.bools;
            nums.push(&n.num);
            match &n.str {
                StrLang::Lits(l) => lits.extend(l.iter().cloned()),
                s if s.is_any() => any_str = true,
                StrLang::Re(e) => {
                    if *e != Expr::Nothing && !res.contains(&e) {
                        res.push(e);
                    }
                }
            }
            for s in &n.arr {
                if arr_seen.insert(s) {
                    out.arr.push(s.clone());
                }
            }
            for s in &n.obj {
                if obj_seen.insert(s) {
                    out.obj.push(s.clone());
                }
            }
        }
        out.num = set_union(nums);
        // One alternation of every language (folding `StrLang::or` would
        // nest and copy it once per branch).
        out.str = if any_str {
            StrLang::any()
        } else if res.is_empty() {
            StrLang::Lits(lits)
        } else {
            let listed = (!lits.is_empty()).then(|| StrLang::Lits(lits).to_expr());
            bounded_string(StrLang::Re(Expr::alt(
                listed.into_iter().chain(res.into_iter().cloned()).collect(),
            )))?
        };
        // A union with "any" of a type is "any" of that type.
        if out.arr.iter().any(ArrShape::is_any) {
            out.arr = vec![ArrShape::any()];
        }
        if out.obj.iter().any(ObjShape::is_any) {
            out.obj = vec![ObjShape::any()];
        }
        if out.arr.len() > MAX_SHAPES || out.obj.len() > MAX_SHAPES {
            return Err(too_many());
        }
        Ok(out)
    }

    /// The node with unlisted names rejected (see [`Term::Unlisted`]).
    pub fn hardened(&self) -> Node {
        let mut n = self.clone();
        n.obj = self.obj.iter().filter_map(ObjShape::hardened).collect();
        n.obj.dedup();
        n
    }

    /// The complement; the pairs of shapes it merges check `deadline`.
    pub fn not(&self, deadline: &Deadline) -> Result<Node, AlgebraError> {
        let mut pairs = 0;
        let mut arr = vec![ArrShape::any()];
        for s in &self.arr {
            arr = product(&arr, &s.negate()?, ArrShape::and, &mut pairs, deadline)?;
        }
        let mut obj = vec![ObjShape::any()];
        for s in &self.obj {
            obj = product(&obj, &s.negate()?, ObjShape::and, &mut pairs, deadline)?;
        }
        let num = set_not(&self.num).ok_or_else(too_many_numbers)?;
        Ok(Node {
            null: !self.null,
            bools: !self.bools & 3,
            num,
            str: bounded_string(self.str.not())?,
            arr,
            obj,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negation_round_trip_shapes() {
        let mut s = ObjShape::any();
        s.props.push(("a".into(), Term::Loc(1, 0)));
        s.required.insert("a".into());
        let n = s.negate().unwrap();
        assert_eq!(n.len(), 2);
        let a = ArrShape {
            min: 2,
            ..ArrShape::any()
        };
        let n = a.negate().unwrap();
        assert_eq!(n[0].max, Some(1));
        let any = Node::any();
        assert!(any.not(&Deadline::none()).unwrap().is_empty());
        assert!(Node::none().not(&Deadline::none()).unwrap().is_any());
    }

    /// `is_any` (checked field by field) agrees with equality to `any()`.
    #[test]
    fn is_any_is_equality_to_any() {
        assert!(Node::any().is_any() && ObjShape::any().is_any() && ArrShape::any().is_any());
        let mut nodes = vec![Node::none()];
        let mut n = Node::any();
        n.null = false;
        nodes.push(n);
        let mut n = Node::any();
        n.bools = 2;
        nodes.push(n);
        let mut n = Node::any();
        n.num = vec![NumAtom::integer()];
        nodes.push(n);
        let mut n = Node::any();
        n.str = StrLang::lit("a");
        nodes.push(n);
        let mut n = Node::any();
        n.arr[0].unique = true;
        nodes.push(n);
        let mut n = Node::any();
        n.obj[0].min = 1;
        nodes.push(n);
        let mut n = Node::any();
        n.obj[0].extra[0].1 = Term::False;
        nodes.push(n);
        for n in nodes {
            assert!(!n.is_any());
            assert_eq!(n.is_any(), n == Node::any());
        }
    }
}
