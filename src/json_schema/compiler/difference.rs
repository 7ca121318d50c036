//! `a ∧ ¬b` without building `¬b` whole.
//!
//! The complement of a union of `k` shapes is the product of their
//! complements: up to `m^k` shapes when each has `m`, which is where large
//! `oneOf`s, `not: {anyOf: [...]}` and negated `if`s used to pass
//! [`MAX_SHAPES`]. But a negation almost always sits beside schemas that
//! already narrow the instance (a `oneOf` branch beside its siblings, a
//! `not` beside `type` and `properties`), and most shapes of the negated
//! schema cannot overlap that context at all: a branch tagged
//! `"kind": "a"` never meets one tagged `"kind": "b"`. So the difference is
//! taken one shape of `b` at a time, against the shapes of `a` so far: a
//! shape of `a` that cannot meet it stays whole, one that may is split by
//! that shape's complement, and pieces that cannot hold an instance are
//! dropped. The result is the same set of instances as `a ∧ ¬b`; only the
//! number of shapes it takes differs.
//!
//! A union whose shapes are told apart by one property (`"kind"` required
//! with a different constant in each) has a complement that is a product
//! in that form: "`kind` is not `a` or `x` is missing" for every tag. So
//! before such a union is taken away, the context is first split by that
//! property's value (one piece per tag, one for the other values, one for
//! the property absent): each piece then meets one alternative at most.
//!
//! Emptiness is tested on the widest form of a shape (unlisted names
//! allowed, see `Term::Unlisted`), so a piece dropped as empty stays empty
//! whatever it is later intersected with.

use std::collections::BTreeSet;
use std::rc::Rc;

use super::{algebra, Compiler};
use crate::error::{ErrorKind, Result};
use crate::json_schema::node::{
    too_many, too_many_numbers, AlgebraError, Node, ObjShape, Shape, Term, MAX_SHAPES,
};
use crate::json_schema::number::{set_and, set_not};
use crate::json_schema::strings::StrLang;
use crate::util::hash::FastSet;

/// How deep into member schemas a shape is looked at to see that it holds
/// no instance (as for `oneOf` overlaps).
const EMPTINESS_DEPTH: u32 = 3;

/// Most shapes one compilation looks into to see that they are empty:
/// each test may evaluate member schemas (and their differences), so past
/// this many, shapes are dropped only when empty on their face.
const MAX_EMPTINESS_TESTS: usize = 20_000;

/// Most pairs of shapes one difference meets: a meet copies the shapes'
/// member languages, which grow as differences nest, so this bounds a
/// difference to about a second at worst.
const MAX_PAIRS: usize = 4096;

/// Most tags a union is split by (see the module doc).
const MAX_TAGS: usize = 1024;

/// Most pairs of shapes an intersection evaluated for an emptiness test
/// may meet (see `Compiler::cheap_to_eval`).
const MAX_TEST_PAIRS: usize = 64;

impl Compiler<'_> {
    /// `node ∧= other` for keyword `kw` of the schema at `ptr`, without
    /// the shapes that provably hold no instance: intersecting unions
    /// multiplies them, and tagged alternatives (`"kind": "a"` against
    /// `"kind": "b"`) mostly meet in empty shapes.
    pub(super) fn meet(
        &mut self,
        node: &mut Node,
        other: &Node,
        kw: &str,
        ptr: &str,
    ) -> Result<()> {
        let n = node
            .and(other, &self.deadline)
            .map_err(|e| algebra(kw, ptr, e))?;
        *node = self.prune_empty(n)?;
        Ok(())
    }

    /// `n` without its provably empty shapes, looked for only where there
    /// are two or more of a type (a lone shape multiplies nothing, and
    /// each test costs evaluations).
    pub(super) fn prune_empty(&mut self, mut n: Node) -> Result<Node> {
        n.obj = self.shapes_that_may_hold(std::mem::take(&mut n.obj))?;
        n.arr = self.shapes_that_may_hold(std::mem::take(&mut n.arr))?;
        Ok(n)
    }

    /// The shapes of `xs` that may hold an instance (all of them when
    /// there is one).
    fn shapes_that_may_hold<S: Shape>(&mut self, xs: Vec<S>) -> Result<Vec<S>> {
        if xs.len() < 2 {
            return Ok(xs);
        }
        let mut kept = Vec::with_capacity(xs.len());
        for s in xs {
            if self.may_hold(Some(s.clone()))? {
                kept.push(s);
            }
        }
        Ok(kept)
    }

    /// The instances of `a` that `b` rejects. The inner error is the node
    /// algebra's reason when they cannot be expressed (a negation with no
    /// shape, or a limit); the outer one is a failure of the compile (the
    /// deadline).
    pub(super) fn minus(
        &mut self,
        a: &Node,
        b: &Node,
    ) -> Result<std::result::Result<Node, AlgebraError>> {
        self.check_time()?;
        let Some(num) = set_not(&b.num).and_then(|not_b| set_and(&a.num, &not_b)) else {
            return Ok(Err(too_many_numbers()));
        };
        // Shapes met, against MAX_PAIRS: emptiness tests evaluate
        // member schemas, which may take differences of their own, so each
        // difference is bounded by itself.
        let mut pairs = 0;
        let mut out = Node {
            null: a.null && !b.null,
            bools: a.bools & !b.bools,
            num,
            str: a.str.and(&b.str.not()),
            arr: a.arr.clone(),
            obj: a.obj.clone(),
        };
        for y in &b.arr {
            out.arr = match self.shapes_minus(std::mem::take(&mut out.arr), y, &mut pairs)? {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
        }
        if b.obj.len() > 1 && !out.obj.is_empty() {
            if let Some((name, tags)) = self.tag_property(&b.obj)? {
                let split = self.split_by_tag(&out.obj, &name, &tags, &mut pairs)?;
                if split.len() <= MAX_SHAPES {
                    out.obj = split;
                }
            }
        }
        for y in &b.obj {
            out.obj = match self.shapes_minus(std::mem::take(&mut out.obj), y, &mut pairs)? {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
        }
        Ok(Ok(out))
    }

    /// The shapes of `xs` minus the instances of `y`.
    fn shapes_minus<S: Shape>(
        &mut self,
        xs: Vec<S>,
        y: &S,
        pairs: &mut usize,
    ) -> Result<std::result::Result<Vec<S>, AlgebraError>> {
        let mut complement: Option<Vec<S>> = None;
        let mut out = Vec::new();
        let mut seen: FastSet<S> = FastSet::default();
        for p in xs {
            self.check_time()?;
            *pairs += 1;
            if !self.may_hold(p.meet(y))? {
                if seen.insert(p.clone()) {
                    out.push(p);
                }
                continue;
            }
            if complement.is_none() {
                match y.complement() {
                    Ok(c) => complement = Some(c),
                    Err(e) => return Ok(Err(e)),
                }
            }
            let complement = complement.as_ref().unwrap();
            *pairs += complement.len();
            if *pairs > MAX_PAIRS {
                return Ok(Err(too_many()));
            }
            for q in complement {
                let piece = p.meet(q);
                if !self.may_hold(piece.clone())? {
                    continue;
                }
                let piece = piece.unwrap();
                if seen.insert(piece.clone()) {
                    out.push(piece);
                }
                if out.len() > MAX_SHAPES {
                    return Ok(Err(too_many()));
                }
            }
        }
        Ok(Ok(out))
    }

    /// A property that tells the shapes of a union apart: required by at
    /// least two of them with values that exclude each other. Returns the
    /// name and those values.
    fn tag_property(&mut self, ys: &[ObjShape]) -> Result<Option<(String, Vec<Term>)>> {
        let mut names: Vec<(usize, &String)> = Vec::new();
        let all: BTreeSet<&String> = ys.iter().flat_map(|y| y.required.iter()).collect();
        for name in all {
            let n = ys.iter().filter(|y| y.required.contains(name)).count();
            if n > 1 {
                names.push((n, name));
            }
        }
        // The most widely required first; the first few candidates only.
        names.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        for (_, name) in names.into_iter().take(4) {
            let mut tags: Vec<Term> = Vec::new();
            for y in ys.iter().filter(|y| y.required.contains(name)) {
                let t = y.value_for(name);
                if !tags.contains(&t) {
                    tags.push(t);
                }
            }
            if tags.len() > 1 && tags.len() <= MAX_TAGS && self.exclusive(&tags)? {
                return Ok(Some((name.clone(), tags)));
            }
        }
        Ok(None)
    }

    /// Whether no value matches two of `tags`, each a set of strings,
    /// booleans and `null` (what `const` and `enum` tags are); false for
    /// any other tag.
    fn exclusive(&mut self, tags: &[Term]) -> Result<bool> {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let (mut null, mut bools) = (false, 0u8);
        for t in tags {
            // A name left unlisted (`Term::Unlisted`) changes meaning as
            // it is intersected: no tag.
            if matches!(t, Term::Unlisted)
                || matches!(t, Term::And(v) if v.contains(&Term::Unlisted))
            {
                return Ok(false);
            }
            let Some(n) = self.eval_if_expressible(t)? else {
                return Ok(false);
            };
            let StrLang::Lits(strs) = &n.str else {
                return Ok(false);
            };
            if !n.num.is_empty() || !n.arr.is_empty() || !n.obj.is_empty() {
                return Ok(false);
            }
            if (n.null && null) || n.bools & bools != 0 || strs.iter().any(|x| seen.contains(x)) {
                return Ok(false);
            }
            null |= n.null;
            bools |= n.bools;
            seen.extend(strs.iter().cloned());
        }
        Ok(true)
    }

    /// Each shape of `xs` split by the value of property `name`: one piece
    /// per tag, one for the other values, one for the name absent (the
    /// empty pieces dropped).
    fn split_by_tag(
        &mut self,
        xs: &[ObjShape],
        name: &str,
        tags: &[Term],
        pairs: &mut usize,
    ) -> Result<Vec<ObjShape>> {
        let with_value = |t: Term| ObjShape {
            props: vec![(name.to_string(), t)],
            required: [name.to_string()].into_iter().collect(),
            weak: [name.to_string()].into_iter().collect(),
            ..ObjShape::any()
        };
        let mut cells: Vec<ObjShape> = tags.iter().cloned().map(with_value).collect();
        cells.push(with_value(Term::and_all(
            tags.iter().cloned().map(Term::not).collect(),
        )));
        cells.push(ObjShape {
            props: vec![(name.to_string(), Term::False)],
            weak: [name.to_string()].into_iter().collect(),
            ..ObjShape::any()
        });
        let mut out = Vec::new();
        for p in xs {
            self.check_time()?;
            *pairs += cells.len();
            if *pairs > MAX_PAIRS {
                // Not split: the difference goes on without it.
                return Ok(xs.to_vec());
            }
            for c in &cells {
                let piece = p.meet(c);
                if self.may_hold(piece.clone())? {
                    out.push(piece.unwrap());
                }
            }
        }
        Ok(out)
    }

    /// Whether `t` can be evaluated for an emptiness test at little cost:
    /// a schema location or value is (those are evaluated anyway), an
    /// intersection is when its parts meet few pairs of shapes, a lone
    /// negation is not.
    pub(super) fn cheap_to_eval(&mut self, t: &Term) -> Result<bool> {
        let Term::And(parts) = t else {
            return Ok(!matches!(t, Term::Not(_)));
        };
        let (mut objs, mut arrs) = (1usize, 1usize);
        for part in parts {
            let x = match part {
                Term::Not(x) => x,
                x => x,
            };
            if !matches!(x, Term::Loc(..) | Term::Val(_)) && !self.nodes.contains_key(x) {
                return Ok(false);
            }
            let Some(n) = self.eval_if_expressible(x)? else {
                return Ok(false);
            };
            objs = objs.saturating_mul(n.obj.len().max(1));
            arrs = arrs.saturating_mul(n.arr.len().max(1));
        }
        Ok(objs <= MAX_TEST_PAIRS && arrs <= MAX_TEST_PAIRS)
    }

    /// The node of `t`, or `None` when the algebra cannot express it (an
    /// inexpressible negation, a limit); the deadline stays an error.
    fn eval_if_expressible(&mut self, t: &Term) -> Result<Option<Rc<Node>>> {
        match self.eval(t) {
            Ok(n) => Ok(Some(n)),
            Err(e) if matches!(e.kind(), ErrorKind::Unsupported | ErrorKind::Limit) => {
                self.check_time()?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether a shape may hold an instance, now or once intersected with
    /// more schemas (false only when provably empty).
    fn may_hold<S: Shape>(&mut self, s: Option<S>) -> Result<bool> {
        let Some(widest) = s.and_then(|s| s.widest()) else {
            return Ok(false);
        };
        if self.emptiness_tests >= MAX_EMPTINESS_TESTS {
            return Ok(true);
        }
        self.emptiness_tests += 1;
        let outer = std::mem::replace(&mut self.frugal, true);
        let r = self.is_empty_deep(&widest.alone(), EMPTINESS_DEPTH);
        self.frugal = outer;
        match r {
            Ok(empty) => Ok(!empty),
            // A member schema that cannot be evaluated (an inexpressible
            // negation, a limit): unsure, so it may hold. The deadline is
            // still the deadline.
            Err(e) if matches!(e.kind(), ErrorKind::Unsupported | ErrorKind::Limit) => {
                self.check_time()?;
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }
}
