//! Numbers: sets of JSON numbers as exact regular languages over their
//! text.
//!
//! A number constraint ([`NumAtom`]: integer or not, bounds, `multipleOf`,
//! a `const` value and exclusions) becomes a regular expression over the
//! number's JSON text, built digit by digit from the bounds' decimal
//! expansions (no floating point anywhere), so that e.g. `minimum: 0.1`
//! accepts `0.1`, `0.10`, `1e-1` and rejects `0.0999...9` however long.
//!
//! Text forms. Plain numbers with no constraint accept the whole JSON
//! number syntax. A constrained number accepts the *canonical domain*
//! where value comparisons stay regular:
//! - plain decimals `-?(0|[1-9][0-9]*)(\.[0-9]+)?`,
//! - scientific notation with a normalized mantissa
//!   `-?[1-9](\.[0-9]+)?[eE][+-]?[0-9]+` (what Python, JavaScript, Rust and
//!   C printers write, e.g. `1e-05`, `1.5e+16`),
//! - zero with any exponent `-?0(\.0+)?[eE][+-]?[0-9]+`.
//!
//! Other spellings (`10e5`, `0.5e1`) are never accepted for a constrained
//! number (comparing such a number with a bound needs to compare an
//! unbounded digit count with the exponent, which no finite automaton can
//! do). Further restrictions of the domain, where exactness needs them:
//! - integers (`type: integer`, a JSON Schema integer is any number with a
//!   zero fraction, e.g. `1.0`): in scientific notation the mantissa has
//!   at most [`INT_SCI_FRAC_MAX`] fraction digits (`1.2345e+20` is
//!   accepted, as every float printer writes it);
//! - `multipleOf`: plain decimals only (and zero in any form).
//!
//! The complement of a constraint (`not`) is taken within the domain where
//! the constraint is exact, so it never admits a number of the wrong value.

use super::decimal::{digits_to_u128, Dec};
use crate::ir::{CharClass, Expr, IntegerRange};
use crate::util::hash::FastSet;

/// Most fraction digits of a mantissa in an integer's scientific notation.
pub const INT_SCI_FRAC_MAX: u32 = crate::ir::INTEGER_SCI_FRACTION_DIGITS as u32;
/// Most states of a `multipleOf` residue automaton (divisor `a × 10^-k`:
/// `a × (k + 3)` states); see [`multiple_of`] and `crate::limits`.
pub const MAX_MULTIPLE_STATES: usize = crate::limits::MAX_MULTIPLE_OF_STATES;

/// One conjunction of number constraints.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NumAtom {
    /// `Some(true)`: an integer; `Some(false)`: not an integer.
    pub int: Option<bool>,
    /// The *spelling*, for draft 4's `integer` ("a JSON number without a
    /// fraction or exponent part": `1.0` is a number, not an integer):
    /// `Some(true)`: written `-?(0|[1-9][0-9]*)`; `Some(false)`: written
    /// with a fraction or an exponent (its complement).
    pub plain: Option<bool>,
    /// Lower bound and whether it is exclusive.
    pub lo: Option<(Dec, bool)>,
    pub hi: Option<(Dec, bool)>,
    pub mult: Vec<Dec>,
    pub not_mult: Vec<Dec>,
    pub value: Option<Dec>,
    pub not_values: Vec<Dec>,
}

impl NumAtom {
    pub fn any() -> NumAtom {
        NumAtom::default()
    }

    pub fn integer() -> NumAtom {
        NumAtom {
            int: Some(true),
            ..NumAtom::default()
        }
    }

    /// Draft 4's `integer`: an integer value written without a fraction
    /// or exponent.
    pub fn plain_integer() -> NumAtom {
        NumAtom {
            int: Some(true),
            plain: Some(true),
            ..NumAtom::default()
        }
    }

    pub fn value(v: Dec) -> NumAtom {
        NumAtom {
            value: Some(v),
            ..NumAtom::default()
        }
    }

    pub fn is_any(&self) -> bool {
        *self == NumAtom::default()
    }

    /// The conjunction, or `None` when it is provably empty.
    pub fn and(&self, o: &NumAtom) -> Option<NumAtom> {
        let int = match (self.int, o.int) {
            (Some(a), Some(b)) if a != b => return None,
            (a, b) => a.or(b),
        };
        let plain = match (self.plain, o.plain) {
            (Some(a), Some(b)) if a != b => return None,
            (a, b) => a.or(b),
        };
        let lo = tighter(&self.lo, &o.lo, true);
        let hi = tighter(&self.hi, &o.hi, false);
        let value = match (&self.value, &o.value) {
            (Some(a), Some(b)) => {
                if a.cmp_value(b).is_ne() {
                    return None;
                }
                Some(a.clone())
            }
            (a, b) => a.clone().or(b.clone()),
        };
        let mut r = NumAtom {
            int,
            plain,
            lo,
            hi,
            mult: union(&self.mult, &o.mult),
            not_mult: union(&self.not_mult, &o.not_mult),
            value,
            not_values: union(&self.not_values, &o.not_values),
        };
        r.normalize().then_some(r)
    }

    /// Tightens and checks the atom; false when it is provably empty.
    pub fn normalize(&mut self) -> bool {
        // A plain spelling is an integer's.
        if self.plain == Some(true) {
            if self.int == Some(false) {
                return false;
            }
            self.int = Some(true);
        }
        if let Some(v) = self.value.clone() {
            if !self.admits(&v) {
                return false;
            }
            *self = self.only(v);
            return true;
        }
        if let (Some((lo, ls)), Some((hi, hs))) = (&self.lo, &self.hi) {
            match lo.cmp_value(hi) {
                std::cmp::Ordering::Greater => return false,
                std::cmp::Ordering::Equal => {
                    if *ls || *hs {
                        return false;
                    }
                    let v = lo.clone();
                    let mut c = self.clone();
                    c.lo = None;
                    c.hi = None;
                    if !c.admits(&v) {
                        return false;
                    }
                    *self = self.only(v);
                    return true;
                }
                _ => {}
            }
        }
        if self.int == Some(true) {
            // Some integer must lie within the bounds.
            let (l, h) = self.integer_bounds();
            if let (Some(l), Some(h)) = (&l, &h) {
                if l.cmp_value(h).is_gt() {
                    return false;
                }
                if l.cmp_value(h).is_eq() {
                    let mut c = self.clone();
                    c.lo = None;
                    c.hi = None;
                    if !c.admits(l) {
                        return false;
                    }
                    *self = self.only(l.clone());
                    return true;
                }
            }
            // Integer multiples of 1 are all integers.
            let one = Dec::parse("1").unwrap();
            self.mult.retain(|m| m.cmp_value(&one).is_ne());
        }
        true
    }

    /// The least and the greatest integer within the bounds.
    fn integer_bounds(&self) -> (Option<Dec>, Option<Dec>) {
        let least = self.lo.as_ref().map(|(d, exclusive)| {
            if *exclusive && d.is_integer() {
                d.add_int(1)
            } else {
                d.ceil()
            }
        });
        let greatest = self.hi.as_ref().map(|(d, exclusive)| {
            if *exclusive && d.is_integer() {
                d.add_int(-1)
            } else {
                d.floor()
            }
        });
        (least, greatest)
    }

    /// The single value `v`, keeping the spelling constraint (the only
    /// one a value does not decide).
    fn only(&self, v: Dec) -> NumAtom {
        NumAtom {
            plain: self.plain,
            ..NumAtom::value(v)
        }
    }

    /// Whether the value `v` satisfies every constraint but `value` (and
    /// the spelling).
    pub fn admits(&self, v: &Dec) -> bool {
        if let Some(i) = self.int {
            if v.is_integer() != i {
                return false;
            }
        }
        if let Some((lo, s)) = &self.lo {
            let c = v.cmp_value(lo);
            if c.is_lt() || (*s && c.is_eq()) {
                return false;
            }
        }
        if let Some((hi, s)) = &self.hi {
            let c = v.cmp_value(hi);
            if c.is_gt() || (*s && c.is_eq()) {
                return false;
            }
        }
        for m in &self.mult {
            if v.is_multiple_of(m) == Some(false) {
                return false;
            }
        }
        for m in &self.not_mult {
            if v.is_multiple_of(m) == Some(true) {
                return false;
            }
        }
        if self.not_values.iter().any(|x| x.cmp_value(v).is_eq()) {
            return false;
        }
        true
    }

    /// The numbers this atom rejects, as a union of disjoint atoms.
    ///
    /// With constraints `c1 ∧ … ∧ ck`, the pieces are `¬c1`, `c1 ∧ ¬c2`,
    /// …, `c1 ∧ … ∧ ck-1 ∧ ¬ck`. Disjoint pieces keep the complement of a
    /// union small: intersecting two disjoint unions gives a disjoint
    /// union whose pieces are cells of the bounds' arrangement, while
    /// overlapping pieces (`¬c1 ∨ ¬c2 ∨ …`) multiply with every atom
    /// negated, and the same numbers are then written out again and
    /// again (`set_not` of twenty ranges took minutes). Bounds come first:
    /// the pieces below and above a range then stay whole.
    pub fn negate(&self) -> Vec<NumAtom> {
        // Each constraint alone, as (it holds, it fails).
        let mut constraints: Vec<(NumAtom, NumAtom)> = Vec::new();
        let any = NumAtom::any;
        if let Some((d, s)) = &self.lo {
            let holds = NumAtom {
                lo: Some((d.clone(), *s)),
                ..any()
            };
            let fails = NumAtom {
                hi: Some((d.clone(), !*s)),
                ..any()
            };
            constraints.push((holds, fails));
        }
        if let Some((d, s)) = &self.hi {
            let holds = NumAtom {
                hi: Some((d.clone(), *s)),
                ..any()
            };
            let fails = NumAtom {
                lo: Some((d.clone(), !*s)),
                ..any()
            };
            constraints.push((holds, fails));
        }
        if let Some(i) = self.int {
            constraints.push((
                NumAtom {
                    int: Some(i),
                    ..any()
                },
                NumAtom {
                    int: Some(!i),
                    ..any()
                },
            ));
        }
        if let Some(p) = self.plain {
            constraints.push((
                NumAtom {
                    plain: Some(p),
                    ..any()
                },
                NumAtom {
                    plain: Some(!p),
                    ..any()
                },
            ));
        }
        let multiple = |m: &Dec| NumAtom {
            mult: vec![m.clone()],
            ..any()
        };
        let not_multiple = |m: &Dec| NumAtom {
            not_mult: vec![m.clone()],
            ..any()
        };
        constraints.extend(self.mult.iter().map(|m| (multiple(m), not_multiple(m))));
        constraints.extend(self.not_mult.iter().map(|m| (not_multiple(m), multiple(m))));
        let not_value = |v: &Dec| NumAtom {
            not_values: vec![v.clone()],
            ..any()
        };
        if let Some(v) = &self.value {
            constraints.push((NumAtom::value(v.clone()), not_value(v)));
        }
        constraints.extend(
            self.not_values
                .iter()
                .map(|v| (not_value(v), NumAtom::value(v.clone()))),
        );
        let mut out = Vec::new();
        // The constraints before the current one, all holding.
        let mut before = NumAtom::any();
        for (yes, no) in constraints {
            if let Some(piece) = before.and(&no) {
                out.push(piece);
            }
            match before.and(&yes) {
                Some(b) => before = b,
                None => break,
            }
        }
        out
    }

    /// The JSON texts of the numbers in this atom (see the module doc for
    /// which spellings).
    pub fn to_expr(&self) -> Result<Expr, String> {
        let spelling = self.plain.map(|p| {
            if p {
                seq(vec![Expr::optional(lit("-")), uint()])
            } else {
                Expr::and(vec![
                    json_number(),
                    Expr::complement(seq(vec![Expr::optional(lit("-")), uint()])),
                ])
            }
        });
        if let Some(v) = &self.value {
            return Ok(match spelling {
                Some(s) => Expr::and(vec![equal_to(v), s]),
                None => equal_to(v),
            });
        }
        let mut parts = Vec::new();
        let mut positive = false;
        if let Some(s) = spelling {
            parts.push(s);
            positive = true;
        }
        // The bounds of an integer, when they fit an `i128`, are part of
        // one automaton built directly (see `Expr::IntegerRange`); an
        // unbounded integer stays a regular expression, which larger
        // lexemes can take in.
        let mut bounds = (self.lo.as_ref(), self.hi.as_ref());
        match self.int {
            Some(true) => {
                let (least, greatest) = self.integer_bounds();
                let least = least.map(|d| d.to_i128());
                let greatest = greatest.map(|d| d.to_i128());
                let bounded = least.is_some() || greatest.is_some();
                let fit = least.is_none_or(|l| l.is_some()) && greatest.is_none_or(|g| g.is_some());
                if bounded && fit {
                    parts.push(Expr::IntegerRange(Box::new(IntegerRange {
                        min: least.flatten(),
                        max: greatest.flatten(),
                    })));
                    bounds = (None, None);
                } else {
                    parts.push(integer());
                }
                positive = true;
            }
            Some(false) => {
                parts.push(Expr::and(vec![
                    integer_domain(),
                    Expr::complement(integer()),
                ]));
                positive = true;
            }
            None => {}
        }
        if let Some((d, s)) = bounds.0 {
            parts.push(cmp(d, if *s { Op::Gt } else { Op::Ge }));
            positive = true;
        }
        if let Some((d, s)) = bounds.1 {
            parts.push(cmp(d, if *s { Op::Lt } else { Op::Le }));
            positive = true;
        }
        for m in &self.mult {
            parts.push(multiple_of(m)?);
            positive = true;
        }
        for m in &self.not_mult {
            parts.push(Expr::and(vec![
                multiple_domain(),
                Expr::complement(multiple_of(m)?),
            ]));
            positive = true;
        }
        for v in &self.not_values {
            parts.push(Expr::complement(equal_to(v)));
        }
        if parts.is_empty() {
            return Ok(json_number());
        }
        if !positive {
            parts.push(domain());
        }
        Ok(Expr::and(parts))
    }
}

fn tighter(a: &Option<(Dec, bool)>, b: &Option<(Dec, bool)>, lower: bool) -> Option<(Dec, bool)> {
    match (a, b) {
        (Some(x), Some(y)) => {
            let c = x.0.cmp_value(&y.0);
            let pick_x = match c {
                std::cmp::Ordering::Equal => x.1 || !y.1,
                std::cmp::Ordering::Greater => lower,
                std::cmp::Ordering::Less => !lower,
            };
            Some(if pick_x { x.clone() } else { y.clone() })
        }
        (x, y) => x.clone().or(y.clone()),
    }
}

fn union(a: &[Dec], b: &[Dec]) -> Vec<Dec> {
    let mut v: Vec<Dec> = a.to_vec();
    for x in b {
        if !v.iter().any(|y| y.cmp_value(x).is_eq()) {
            v.push(x.clone());
        }
    }
    v.sort();
    v
}

/// Most atoms in one union of number constraints.
pub const MAX_NUM_ATOMS: usize = 1024;

/// Most pairs of atoms one intersection of unions meets: each is a merge
/// of two atoms, so this keeps one operation to milliseconds.
pub const MAX_NUM_PAIRS: usize = 1 << 16;

/// Most pairs of atoms one complement ([`set_not`]) meets over all its
/// intersections: a few milliseconds, however many atoms it negates.
pub const MAX_NOT_PAIRS: usize = 4 * MAX_NUM_PAIRS;

/// Union of atoms: the conjunction of two unions (distributed). `None`
/// past [`MAX_NUM_PAIRS`] pairs met, or when it makes more than
/// [`MAX_NUM_ATOMS`] atoms and more than either side had (an `enum` of
/// thousands of numbers stays that many under `type: number`).
pub fn set_and(a: &[NumAtom], b: &[NumAtom]) -> Option<Vec<NumAtom>> {
    if a.len().saturating_mul(b.len()) > MAX_NUM_PAIRS {
        return None;
    }
    let most = MAX_NUM_ATOMS.max(a.len()).max(b.len());
    let mut out: Vec<NumAtom> = Vec::new();
    let mut seen: FastSet<NumAtom> = FastSet::default();
    for x in a {
        for y in b {
            if let Some(z) = x.and(y) {
                if seen.insert(z.clone()) {
                    out.push(z);
                    if out.len() > most {
                        return None;
                    }
                }
            }
        }
    }
    Some(simplify_set(out))
}

/// The complement of a union of atoms: `None` past the bounds of
/// [`set_and`] at any step, or past [`MAX_NOT_PAIRS`] pairs in all.
pub fn set_not(a: &[NumAtom]) -> Option<Vec<NumAtom>> {
    let mut acc = vec![NumAtom::any()];
    let mut pairs = 0usize;
    for x in a {
        let negated = x.negate();
        pairs += acc.len() * negated.len();
        if pairs > MAX_NOT_PAIRS {
            return None;
        }
        acc = set_and(&acc, &negated)?;
        if acc.is_empty() {
            break;
        }
    }
    Some(acc)
}

/// The union of unions of atoms, without repeats (a union adds no more
/// atoms than its parts have, so it needs no bound of its own).
pub fn set_union<'a>(parts: impl IntoIterator<Item = &'a [NumAtom]>) -> Vec<NumAtom> {
    let mut out = Vec::new();
    let mut seen: FastSet<&NumAtom> = FastSet::default();
    for part in parts {
        for x in part {
            if seen.insert(x) {
                out.push(x.clone());
            }
        }
    }
    simplify_set(out)
}

fn simplify_set(v: Vec<NumAtom>) -> Vec<NumAtom> {
    if v.iter().any(|a| a.is_any()) {
        return vec![NumAtom::any()];
    }
    v
}

pub fn set_expr(a: &[NumAtom]) -> Result<Expr, String> {
    Ok(Expr::alt(
        a.iter().map(|x| x.to_expr()).collect::<Result<_, _>>()?,
    ))
}

// ---- regular-expression building blocks over number text ----

fn lit(s: &str) -> Expr {
    Expr::literal(s)
}

fn seq(v: Vec<Expr>) -> Expr {
    if v.contains(&Expr::Nothing) {
        return Expr::Nothing;
    }
    Expr::seq(v.into_iter().filter(|e| *e != Expr::Empty).collect())
}

fn alt(v: Vec<Expr>) -> Expr {
    Expr::alt(v.into_iter().filter(|e| *e != Expr::Nothing).collect())
}

fn drange(lo: u8, hi: u8) -> Expr {
    if lo > hi {
        Expr::Nothing
    } else {
        Expr::Class(CharClass::from_ranges([(
            (b'0' + lo) as u32,
            (b'0' + hi) as u32,
        )]))
    }
}

/// One decimal digit, `[0-9]`.
fn digit() -> Expr {
    drange(0, 9)
}

/// One decimal digit but zero, `[1-9]`.
fn nonzero_digit() -> Expr {
    drange(1, 9)
}

fn e_mark() -> Expr {
    Expr::Class(CharClass::from_ranges([
        ('e' as u32, 'e' as u32),
        ('E' as u32, 'E' as u32),
    ]))
}

fn uint() -> Expr {
    alt(vec![
        lit("0"),
        seq(vec![nonzero_digit(), Expr::star(digit())]),
    ])
}

fn frac_any() -> Expr {
    Expr::optional(seq(vec![lit("."), Expr::plus(digit())]))
}

fn zero_frac() -> Expr {
    Expr::optional(seq(vec![lit("."), Expr::plus(lit("0"))]))
}

fn exp_any() -> Expr {
    seq(vec![
        e_mark(),
        Expr::optional(Expr::Class(CharClass::from_ranges([
            ('+' as u32, '+' as u32),
            ('-' as u32, '-' as u32),
        ]))),
        Expr::plus(digit()),
    ])
}

/// The whole JSON number syntax.
pub fn json_number() -> Expr {
    seq(vec![
        Expr::optional(lit("-")),
        uint(),
        frac_any(),
        Expr::optional(exp_any()),
    ])
}

fn sci_u() -> Expr {
    seq(vec![nonzero_digit(), frac_any(), exp_any()])
}

fn zsci_u() -> Expr {
    seq(vec![lit("0"), zero_frac(), exp_any()])
}

fn u_all() -> Expr {
    alt(vec![seq(vec![uint(), frac_any()]), sci_u(), zsci_u()])
}

/// The canonical domain (see the module doc).
pub fn domain() -> Expr {
    seq(vec![Expr::optional(lit("-")), u_all()])
}

fn digit_str(s: &str, i: usize) -> u8 {
    s.as_bytes()[i] - b'0'
}

/// Digit strings of the same length as `s` that compare greater (or
/// less) lexicographically; the first digit is at least `first_min`.
fn same_len(s: &str, greater: bool, first_min: u8) -> Expr {
    let n = s.len();
    let mut alts = Vec::new();
    for i in 0..n {
        let c = digit_str(s, i);
        let lo_bound = if i == 0 { first_min } else { 0 };
        let class = if greater {
            drange((c + 1).max(lo_bound), 9)
        } else if c == 0 {
            Expr::Nothing
        } else {
            drange(lo_bound, c - 1)
        };
        alts.push(seq(vec![
            lit(&s[..i]),
            class,
            Expr::repeat(digit(), (n - i - 1) as u32, Some((n - i - 1) as u32)),
        ]));
    }
    alt(alts)
}

/// Canonical unsigned integers (`0|[1-9][0-9]*`) greater than `s`.
fn uint_gt(s: &str) -> Expr {
    if s == "0" {
        return seq(vec![nonzero_digit(), Expr::star(digit())]);
    }
    alt(vec![
        seq(vec![
            nonzero_digit(),
            Expr::repeat(digit(), s.len() as u32, None),
        ]),
        same_len(s, true, 1),
    ])
}

/// Canonical unsigned integers less than `s`.
fn uint_lt(s: &str) -> Expr {
    if s == "0" {
        return Expr::Nothing;
    }
    let mut alts = vec![lit("0")];
    if s.len() >= 2 {
        alts.push(seq(vec![
            nonzero_digit(),
            Expr::repeat(digit(), 0, Some(s.len() as u32 - 2)),
        ]));
    }
    alts.push(same_len(s, false, 1));
    alt(alts)
}

/// Fractions (absent, or `.` and digits) comparing with `0.F`.
fn frac_cmp(f: &str, op: Op) -> Expr {
    let n = f.len();
    let prefix_less = |greater: bool| -> Vec<Expr> {
        (0..n)
            .map(|i| {
                let c = digit_str(f, i);
                let class = if greater {
                    drange(c + 1, 9)
                } else if c == 0 {
                    Expr::Nothing
                } else {
                    drange(0, c - 1)
                };
                seq(vec![lit(&f[..i]), class, Expr::star(digit())])
            })
            .collect()
    };
    let dot = |body: Vec<Expr>| seq(vec![lit("."), alt(body)]);
    match op {
        Op::Ge => {
            if n == 0 {
                return frac_any();
            }
            let mut v = prefix_less(true);
            v.push(seq(vec![lit(f), Expr::star(digit())]));
            dot(v)
        }
        Op::Gt => {
            let mut v = prefix_less(true);
            v.push(seq(vec![
                lit(f),
                Expr::star(lit("0")),
                nonzero_digit(),
                Expr::star(digit()),
            ]));
            dot(v)
        }
        Op::Le => {
            if n == 0 {
                return zero_frac();
            }
            let mut v = prefix_less(false);
            for i in 1..n {
                v.push(lit(&f[..i]));
            }
            v.push(seq(vec![lit(f), Expr::star(lit("0"))]));
            alt(vec![Expr::Empty, dot(v)])
        }
        Op::Lt => {
            if n == 0 {
                return Expr::Nothing;
            }
            let mut v = prefix_less(false);
            for i in 1..n {
                v.push(lit(&f[..i]));
            }
            alt(vec![Expr::Empty, dot(v)])
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
}

/// Exponent texts (`[+-]?[0-9]+`, leading zeros allowed) comparing with `k`.
fn exp_cmp(k: i64, op: Op) -> Expr {
    let pos = |m: Expr| seq(vec![Expr::optional(lit("+")), Expr::star(lit("0")), m]);
    let neg = |m: Expr| seq(vec![lit("-"), Expr::star(lit("0")), m]);
    let ks = k.unsigned_abs().to_string();
    let eq = if k > 0 {
        pos(lit(&ks))
    } else if k == 0 {
        alt(vec![pos(lit("0")), neg(lit("0"))])
    } else {
        neg(lit(&ks))
    };
    let gt = if k >= 0 {
        pos(uint_gt(&ks))
    } else {
        alt(vec![pos(uint()), neg(uint_lt(&ks))])
    };
    let lt = if k > 0 {
        alt(vec![pos(uint_lt(&ks)), neg(uint())])
    } else if k == 0 {
        neg(uint_gt("0"))
    } else {
        neg(uint_gt(&ks))
    };
    let body = match op {
        Op::Gt => gt,
        Op::Ge => alt(vec![gt, eq]),
        Op::Lt => lt,
        Op::Le => alt(vec![lt, eq]),
    };
    seq(vec![e_mark(), body])
}

/// Unsigned number texts of the canonical domain whose value compares
/// with `b >= 0` (given as its magnitude).
fn u_cmp(b: &Dec, op: Op) -> Expr {
    let i = b.int_part();
    let f = b.frac_part();
    let plain = match op {
        Op::Gt | Op::Ge => alt(vec![
            seq(vec![uint_gt(&i), frac_any()]),
            seq(vec![lit(&i), frac_cmp(&f, op)]),
        ]),
        Op::Lt | Op::Le => alt(vec![
            seq(vec![uint_lt(&i), frac_any()]),
            seq(vec![lit(&i), frac_cmp(&f, op)]),
        ]),
    };
    let sci = if b.is_zero() {
        match op {
            Op::Gt | Op::Ge => sci_u(),
            _ => Expr::Nothing,
        }
    } else {
        let eb = b.exp - 1;
        let m0 = b.digits[0];
        let r: String = b.digits[1..].iter().map(|x| (b'0' + x) as char).collect();
        match op {
            Op::Gt | Op::Ge => alt(vec![
                seq(vec![nonzero_digit(), frac_any(), exp_cmp(eb, Op::Gt)]),
                seq(vec![
                    alt(vec![
                        seq(vec![drange(m0 + 1, 9), frac_any()]),
                        seq(vec![lit(&m0.to_string()), frac_cmp(&r, op)]),
                    ]),
                    exp_eq(eb),
                ]),
            ]),
            Op::Lt | Op::Le => alt(vec![
                seq(vec![nonzero_digit(), frac_any(), exp_cmp(eb, Op::Lt)]),
                seq(vec![
                    alt(vec![
                        seq(vec![drange(1, m0.saturating_sub(1)), frac_any()]),
                        seq(vec![lit(&m0.to_string()), frac_cmp(&r, op)]),
                    ]),
                    exp_eq(eb),
                ]),
            ]),
        }
    };
    let zero_ok = match op {
        Op::Ge => b.is_zero(),
        Op::Gt => false,
        Op::Le => true,
        Op::Lt => !b.is_zero(),
    };
    let zsci = if zero_ok { zsci_u() } else { Expr::Nothing };
    alt(vec![plain, sci, zsci])
}

fn exp_eq(k: i64) -> Expr {
    // `exp_cmp` with equality only.
    let pos = |m: Expr| seq(vec![Expr::optional(lit("+")), Expr::star(lit("0")), m]);
    let neg = |m: Expr| seq(vec![lit("-"), Expr::star(lit("0")), m]);
    let ks = k.unsigned_abs().to_string();
    let body = if k > 0 {
        pos(lit(&ks))
    } else if k == 0 {
        alt(vec![pos(lit("0")), neg(lit("0"))])
    } else {
        neg(lit(&ks))
    };
    seq(vec![e_mark(), body])
}

/// Signed number texts (canonical domain) whose value compares with `b`.
pub fn cmp(b: &Dec, op: Op) -> Expr {
    let m = b.abs();
    let minus = |e: Expr| seq(vec![lit("-"), e]);
    match op {
        Op::Ge => {
            if !b.neg {
                if b.is_zero() {
                    alt(vec![u_all(), minus(u_cmp(&m, Op::Le))])
                } else {
                    u_cmp(&m, Op::Ge)
                }
            } else {
                alt(vec![u_all(), minus(u_cmp(&m, Op::Le))])
            }
        }
        Op::Gt => {
            if !b.neg {
                u_cmp(&m, Op::Gt)
            } else {
                alt(vec![u_all(), minus(u_cmp(&m, Op::Lt))])
            }
        }
        Op::Le => {
            if b.neg {
                minus(u_cmp(&m, Op::Ge))
            } else {
                alt(vec![u_cmp(&m, Op::Le), minus(u_all())])
            }
        }
        Op::Lt => {
            if b.neg || b.is_zero() {
                minus(u_cmp(&m, Op::Gt))
            } else {
                alt(vec![u_cmp(&m, Op::Lt), minus(u_all())])
            }
        }
    }
}

/// Every text (canonical domain) of exactly the value `v`.
fn equal_to(v: &Dec) -> Expr {
    if v.is_zero() {
        return seq(vec![
            Expr::optional(lit("-")),
            lit("0"),
            zero_frac(),
            Expr::optional(exp_any()),
        ]);
    }
    let i = v.int_part();
    let f = v.frac_part();
    let frac = |f: &str| {
        if f.is_empty() {
            zero_frac()
        } else {
            seq(vec![lit("."), lit(f), Expr::star(lit("0"))])
        }
    };
    let r: String = v.digits[1..].iter().map(|x| (b'0' + x) as char).collect();
    let body = alt(vec![
        seq(vec![lit(&i), frac(&f)]),
        seq(vec![
            lit(&v.digits[0].to_string()),
            frac(&r),
            exp_eq(v.exp - 1),
        ]),
    ]);
    if v.neg {
        seq(vec![lit("-"), body])
    } else {
        body
    }
}

/// Integers (see the module doc for the spellings). Every integer
/// constraint holds it, so it is built once per thread and copied.
pub fn integer() -> Expr {
    thread_local! {
        static INTEGER: Expr = integer_uncached();
    }
    INTEGER.with(Expr::clone)
}

fn integer_uncached() -> Expr {
    let j = INT_SCI_FRAC_MAX;
    let mut sci = vec![seq(vec![
        nonzero_digit(),
        Expr::optional(seq(vec![lit("."), Expr::repeat(lit("0"), 1, Some(j))])),
        exp_cmp(0, Op::Ge),
    ])];
    for k in 1..=j {
        sci.push(seq(vec![
            nonzero_digit(),
            lit("."),
            Expr::repeat(digit(), k - 1, Some(k - 1)),
            nonzero_digit(),
            Expr::repeat(lit("0"), 0, Some(j - k)),
            exp_cmp(k as i64, Op::Ge),
        ]));
    }
    seq(vec![
        Expr::optional(lit("-")),
        alt(vec![seq(vec![uint(), zero_frac()]), zsci_u(), alt(sci)]),
    ])
}

/// The domain within which [`integer`] is exact.
fn integer_domain() -> Expr {
    seq(vec![
        Expr::optional(lit("-")),
        alt(vec![
            seq(vec![uint(), frac_any()]),
            zsci_u(),
            seq(vec![
                nonzero_digit(),
                Expr::optional(seq(vec![
                    lit("."),
                    Expr::repeat(digit(), 1, Some(INT_SCI_FRAC_MAX)),
                ])),
                exp_any(),
            ]),
        ]),
    ])
}

/// The domain within which [`multiple_of`] is exact.
fn multiple_domain() -> Expr {
    seq(vec![
        Expr::optional(lit("-")),
        alt(vec![seq(vec![uint(), frac_any()]), zsci_u()]),
    ])
}

/// Plain decimals that are integer multiples of `m > 0` (and zero in any
/// spelling): a residue automaton of about `a × (k + 3)` states for
/// `m = a × 10^-k` ([`Expr::DecimalMultiple`]), at most
/// [`MAX_MULTIPLE_STATES`].
pub fn multiple_of(m: &Dec) -> Result<Expr, String> {
    let (a_digits, k) = m.as_scaled_int();
    let a = digits_to_u128(&a_digits)
        .filter(|&a| a * (k as u128 + 3) <= MAX_MULTIPLE_STATES as u128)
        .ok_or_else(|| {
            format!(
                "divisor {} needs a residue automaton of more than {MAX_MULTIPLE_STATES} \
                 states (its digits times the number of decimals plus 3)",
                m.to_text()
            )
        })?;
    Ok(alt(vec![
        Expr::DecimalMultiple(crate::ir::DecimalMultiple {
            divisor: a as u32,
            scale: k,
        }),
        seq(vec![Expr::optional(lit("-")), zsci_u()]),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoms_negate_and_intersect() {
        let mut a = NumAtom::integer();
        a.lo = Some((Dec::parse("1.5").unwrap(), false));
        a.hi = Some((Dec::parse("1.9").unwrap(), false));
        assert!(!a.normalize());
        let mut b = NumAtom::integer();
        b.lo = Some((Dec::parse("1").unwrap(), true));
        b.hi = Some((Dec::parse("3").unwrap(), true));
        assert!(b.normalize());
        assert_eq!(b.value, Some(Dec::parse("2").unwrap()));
        assert_eq!(set_not(&[NumAtom::any()]), Some(vec![]));
    }

    /// Whether a union of atoms holds the value `v` (its spelling aside).
    fn holds(set: &[NumAtom], v: &Dec) -> bool {
        set.iter()
            .any(|a| a.admits(v) && a.value.as_ref().is_none_or(|x| x.cmp_value(v).is_eq()))
    }

    /// A small deterministic generator (no dependency for one test).
    fn next(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn complements_of_many_ranges_stay_small_and_exact() {
        // Twenty integer ranges with mixed bounds: the overlapping form
        // of the complement had up to 3^20 atoms.
        let mut seed = 7;
        let mut atoms = Vec::new();
        for i in 0..20 {
            let lo = (next(&mut seed) % 60) as i64;
            let hi = lo + 2 + (next(&mut seed) % 40) as i64;
            let mut a = if i % 3 == 0 {
                NumAtom::any()
            } else {
                NumAtom::integer()
            };
            a.lo = Some((Dec::parse(&lo.to_string()).unwrap(), i % 2 == 0));
            a.hi = Some((Dec::parse(&hi.to_string()).unwrap(), false));
            if i % 5 == 0 {
                a.not_values = vec![Dec::parse(&(lo + 1).to_string()).unwrap()];
            }
            assert!(a.normalize());
            atoms.push(a);
        }
        let not = set_not(&atoms).expect("within the bounds");
        assert!(not.len() < 200, "{} atoms", not.len());
        let back = set_not(&not).expect("within the bounds");
        for tenths in -20i64..1200 {
            let sign = if tenths < 0 { "-" } else { "" };
            let (whole, frac) = (tenths.abs() / 10, tenths.abs() % 10);
            let v = Dec::parse(&format!("{sign}{whole}.{frac}")).unwrap();
            let inside = holds(&atoms, &v);
            assert_eq!(holds(&not, &v), !inside, "{}", v.to_text());
            assert_eq!(holds(&back, &v), inside, "{}", v.to_text());
        }
    }

    #[test]
    fn products_past_the_bound_are_refused() {
        let many: Vec<NumAtom> = (0..2000)
            .map(|i| NumAtom::value(Dec::parse(&i.to_string()).unwrap()))
            .collect();
        assert_eq!(set_and(&many[..300], &many[..300]), None);
        // Narrowing a long union is not growing it.
        assert_eq!(
            set_and(&many, &[NumAtom::integer()]).map(|v| v.len()),
            Some(2000)
        );
    }

    /// An integer with bounds is one automaton built directly
    /// (`Expr::IntegerRange`): the same language as every integer
    /// intersected with the two comparisons, on bounds of either sign,
    /// inclusive or not, whole or not, around powers of ten and past
    /// 10^17, where a mantissa's fraction digits no longer reach.
    #[test]
    fn integer_ranges_are_integers_within_the_comparisons() {
        use crate::compile::lexeme::{minimize, table, DfaLimits, Uncached};
        let limits = DfaLimits::default();
        let deadline = crate::limits::Deadline::none();
        let dfa = |e: &Expr| minimize(&table(e, &limits, &Uncached).unwrap(), &deadline).unwrap();
        let values = [
            "-1000",
            "-100.5",
            "-10",
            "-1",
            "-0.5",
            "0",
            "1",
            "9",
            "10",
            "15",
            "100",
            "664",
            "65535",
            "1e17",
            "123456789012345678901",
        ];
        let bounds: Vec<Option<(Dec, bool)>> = std::iter::once(None)
            .chain(values.iter().flat_map(|v| {
                let d = Dec::parse(v).unwrap();
                [Some((d.clone(), false)), Some((d, true))]
            }))
            .collect();
        let mut compared = 0;
        for lo in &bounds {
            for hi in &bounds {
                let mut atom = NumAtom {
                    lo: lo.clone(),
                    hi: hi.clone(),
                    ..NumAtom::integer()
                };
                if !atom.normalize() || atom.value.is_some() {
                    continue;
                }
                let direct = atom.to_expr().unwrap();
                let mut general = vec![integer()];
                if let Some((d, exclusive)) = lo {
                    general.push(cmp(d, if *exclusive { Op::Gt } else { Op::Ge }));
                }
                if let Some((d, exclusive)) = hi {
                    general.push(cmp(d, if *exclusive { Op::Lt } else { Op::Le }));
                }
                let general = Expr::and(general);
                assert!(
                    dfa(&direct).same_language(&dfa(&general)),
                    "{lo:?} {hi:?}: {direct:?}"
                );
                compared += 1;
            }
        }
        assert!(compared > 400, "{compared}");
    }
}
