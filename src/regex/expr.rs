//! Simplifying constructors for IR expressions, and the language
//! operations the translation needs (nullability, removing the empty
//! string, restricting the first or last character).
//!
//! The translation builds many expressions of the form `Σ*·X·Σ*` or
//! `X ∩ Σ*`; simplifying them as they are built keeps the expressions (and
//! the automata the compiler builds from them) small, and keeps
//! intersection and complement out of the common cases, where the compiler
//! would otherwise take its slower product-construction path.

use crate::ir::{CharClass, Expr};

/// `Σ`: any code point.
pub fn any() -> Expr {
    Expr::Class(CharClass::any())
}

/// `Σ*`: every string.
pub fn any_star() -> Expr {
    Expr::star(any())
}

/// `Σ+`: every non-empty string.
pub fn any_plus() -> Expr {
    Expr::plus(any())
}

pub fn is_any_star(e: &Expr) -> bool {
    matches!(e, Expr::Repeat { expr, min: 0, max: None } if matches!(&**expr, Expr::Class(c) if c.is_any()))
}

fn class_of_single(e: &Expr) -> Option<CharClass> {
    match e {
        Expr::Class(c) => Some(c.clone()),
        Expr::Literal(s) if s.chars().count() == 1 => {
            Some(CharClass::single(s.chars().next().unwrap() as u32))
        }
        _ => None,
    }
}

/// The one code point a class holds, if it holds exactly one.
fn single_char(c: &CharClass) -> Option<char> {
    match c.ranges() {
        [(lo, hi)] if lo == hi => char::from_u32(*lo),
        _ => None,
    }
}

/// Concatenation, simplified: nested sequences flattened, `ε` dropped,
/// `∅` absorbing, adjacent literals merged, and nullable parts next to a
/// `Σ*` dropped (`Σ*·X = Σ*` when `X` contains `ε`).
pub fn seq(parts: Vec<Expr>) -> Expr {
    let mut flat: Vec<Expr> = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Expr::Nothing => return Expr::Nothing,
            Expr::Empty => {}
            Expr::Seq(v) => flat.extend(v),
            Expr::Class(ref c) if c.is_empty() => return Expr::Nothing,
            other => flat.push(other),
        }
    }
    // `Σ*` absorbs its nullable neighbours.
    if flat.iter().any(is_any_star) {
        let mut changed = true;
        while changed {
            changed = false;
            let mut i = 0;
            while i < flat.len() {
                if is_any_star(&flat[i]) {
                    if i + 1 < flat.len() && flat[i + 1].nullable() {
                        flat.remove(i + 1);
                        changed = true;
                        continue;
                    }
                    if i > 0 && flat[i - 1].nullable() {
                        flat.remove(i - 1);
                        changed = true;
                        continue;
                    }
                }
                i += 1;
            }
        }
    }
    // Merge runs of single characters and literals into one literal.
    let mut out: Vec<Expr> = Vec::with_capacity(flat.len());
    for p in flat {
        let text = match &p {
            Expr::Literal(s) => Some(s.clone()),
            Expr::Class(c) => single_char(c).map(|ch| ch.to_string()),
            _ => None,
        };
        match (text, out.last_mut()) {
            (Some(t), Some(Expr::Literal(prev))) => prev.push_str(&t),
            (Some(t), _) => out.push(Expr::Literal(t)),
            (None, _) => out.push(p),
        }
    }
    Expr::seq(out)
}

/// Union, simplified: nested unions flattened, `∅` dropped, duplicates
/// removed, single characters merged into one class, `Σ*` absorbing.
pub fn alt(alts: Vec<Expr>) -> Expr {
    let mut flat: Vec<Expr> = Vec::with_capacity(alts.len());
    let mut chars = CharClass::empty();
    let mut has_chars = false;
    let mut stack: Vec<Expr> = alts.into_iter().rev().collect();
    while let Some(a) = stack.pop() {
        match a {
            Expr::Nothing => {}
            Expr::Alt(v) => stack.extend(v.into_iter().rev()),
            e if is_any_star(&e) => return any_star(),
            e => {
                if let Some(c) = class_of_single(&e) {
                    chars = chars.union(&c);
                    has_chars = true;
                } else if !flat.contains(&e) {
                    flat.push(e);
                }
            }
        }
    }
    if has_chars && !chars.is_empty() {
        let c = match single_char(&chars) {
            Some(ch) => Expr::Literal(ch.to_string()),
            None => Expr::Class(chars),
        };
        flat.insert(0, c);
    }
    // `ε | X+` is `X*`.
    if flat.len() == 2 && flat[0] == Expr::Empty {
        if let Expr::Repeat { expr, min: 1, max } = &flat[1] {
            return repeat((**expr).clone(), 0, *max);
        }
    }
    Expr::alt(flat)
}

/// Intersection, simplified: `Σ*` operands dropped, `∅` absorbing, `ε`
/// decided by nullability.
pub fn and(parts: Vec<Expr>) -> Expr {
    let mut flat: Vec<Expr> = Vec::new();
    let mut stack: Vec<Expr> = parts;
    while let Some(p) = stack.pop() {
        match p {
            Expr::Nothing => return Expr::Nothing,
            Expr::And(v) => stack.extend(v),
            e if is_any_star(&e) => {}
            e => {
                if !flat.contains(&e) {
                    flat.push(e);
                }
            }
        }
    }
    if flat.contains(&Expr::Empty) {
        return if flat.iter().all(Expr::nullable) {
            Expr::Empty
        } else {
            Expr::Nothing
        };
    }
    // Two plain classes intersect directly.
    if flat.len() == 2 {
        if let (Expr::Class(a), Expr::Class(b)) = (&flat[0], &flat[1]) {
            return Expr::Class(a.intersect(b));
        }
    }
    match flat.len() {
        0 => any_star(),
        1 => flat.pop().unwrap(),
        _ => {
            // Deterministic order for identical results from equal inputs.
            flat.reverse();
            Expr::And(flat)
        }
    }
}

/// Complement, simplified.
pub fn not(e: Expr) -> Expr {
    match e {
        Expr::Not(x) => *x,
        Expr::Nothing => any_star(),
        e if is_any_star(&e) => Expr::Nothing,
        e => Expr::Not(Box::new(e)),
    }
}

/// Repetition, simplified.
pub fn repeat(e: Expr, min: u32, max: Option<u32>) -> Expr {
    if max == Some(0) {
        return Expr::Empty;
    }
    match e {
        Expr::Empty => Expr::Empty,
        Expr::Nothing => {
            if min == 0 {
                Expr::Empty
            } else {
                Expr::Nothing
            }
        }
        e if min == 1 && max == Some(1) => e,
        // (x*)* = x*, (x*)+ = x*.
        Expr::Repeat {
            expr,
            min: 0,
            max: None,
        } if max.is_none() => Expr::Repeat {
            expr,
            min: 0,
            max: None,
        },
        e => Expr::repeat(e, min, max),
    }
}

/// The language without the empty string (`X ∩ Σ+`).
pub fn nonempty(e: &Expr) -> Expr {
    if !e.nullable() {
        return e.clone();
    }
    match e {
        Expr::Empty => Expr::Nothing,
        Expr::Alt(v) => alt(v.iter().map(nonempty).collect()),
        Expr::Repeat { expr, min, max } if !expr.nullable() => {
            debug_assert_eq!(*min, 0);
            repeat((**expr).clone(), 1, *max)
        }
        Expr::Repeat {
            expr, max: None, ..
        } => {
            // (x)* without ε is (x without ε)+.
            repeat(nonempty(expr), 1, None)
        }
        // (A·B)⁺ = A⁺·B | B⁺ when both are nullable: plain, which keeps the
        // compiler on its fast path, as long as the copies stay small.
        Expr::Seq(v) if e.size() <= 400 => {
            let rest = seq(v[1..].to_vec());
            alt(vec![
                seq(vec![nonempty(&v[0]), rest.clone()]),
                nonempty(&rest),
            ])
        }
        _ => and(vec![e.clone(), any_plus()]),
    }
}

/// A superset of the characters that start a non-empty string of `e`
/// (with `last`: that end one).
pub fn edge_chars(e: &Expr, last: bool) -> CharClass {
    match e {
        Expr::Empty
        | Expr::Nothing
        | Expr::Ref(_)
        | Expr::Token(_)
        | Expr::JsonStrings(_)
        | Expr::JsonQuoted(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_) => CharClass::empty(),
        // Digits first; digits, `Z` or `z` last.
        Expr::Rfc3339(r) if r.form == crate::ir::TextForm::Chars => {
            CharClass::from_ranges([(0x30, 0x39), (0x5A, 0x5A), (0x7A, 0x7A)])
        }
        Expr::Rfc3339(_) => CharClass::empty(),
        Expr::Literal(s) => {
            let c = if last {
                s.chars().last()
            } else {
                s.chars().next()
            };
            c.map_or(CharClass::empty(), |c| CharClass::single(c as u32))
        }
        Expr::Class(c) => c.clone(),
        Expr::Seq(v) => {
            let mut out = CharClass::empty();
            let mut parts: Vec<&Expr> = v.iter().collect();
            if last {
                parts.reverse();
            }
            for p in parts {
                out = out.union(&edge_chars(p, last));
                if !p.nullable() {
                    break;
                }
            }
            out
        }
        Expr::Alt(v) => v
            .iter()
            .fold(CharClass::empty(), |acc, x| acc.union(&edge_chars(x, last))),
        Expr::Repeat { expr, .. } => edge_chars(expr, last),
        Expr::And(v) => v.iter().fold(CharClass::any(), |acc, x| {
            acc.intersect(&edge_chars(x, last))
        }),
        Expr::Not(_) => CharClass::any(),
    }
}

/// The strings of `e` whose first character is in `c` (the empty string
/// is dropped).
pub fn restrict_first(e: &Expr, c: &CharClass) -> Expr {
    if c.is_any() {
        return nonempty(e);
    }
    // Decided by the possible first characters alone.
    let edge = edge_chars(e, false);
    if edge.intersect(c).is_empty() {
        return Expr::Nothing;
    }
    if edge.intersect(c) == edge {
        return nonempty(e);
    }
    match e {
        Expr::Empty | Expr::Nothing => Expr::Nothing,
        Expr::Literal(s) => match s.chars().next() {
            Some(ch) if c.contains(ch as u32) => e.clone(),
            _ => Expr::Nothing,
        },
        Expr::Class(k) => Expr::Class(k.intersect(c)),
        Expr::Alt(v) => alt(v.iter().map(|x| restrict_first(x, c)).collect()),
        Expr::Seq(v) if !v.is_empty() && !v[0].nullable() => {
            let mut parts = vec![restrict_first(&v[0], c)];
            parts.extend(v[1..].iter().cloned());
            seq(parts)
        }
        // A·B with A nullable: A⁺ restricted, then B; or B restricted.
        Expr::Seq(v) if v.len() >= 2 && e.size() <= 400 => {
            let rest = seq(v[1..].to_vec());
            alt(vec![
                seq(vec![restrict_first(&v[0], c), rest.clone()]),
                restrict_first(&rest, c),
            ])
        }
        Expr::Repeat { max: Some(0), .. } => Expr::Nothing,
        Expr::Repeat { expr, min, max } if !expr.nullable() => {
            let rest_max = max.map(|m| m - 1);
            seq(vec![
                restrict_first(expr, c),
                repeat((**expr).clone(), min.saturating_sub(1), rest_max),
            ])
        }
        _ => and(vec![
            e.clone(),
            seq(vec![Expr::Class(c.clone()), any_star()]),
        ]),
    }
}

/// The strings of `e` whose last character is in `c` (the empty string
/// is dropped).
pub fn restrict_last(e: &Expr, c: &CharClass) -> Expr {
    if c.is_any() {
        return nonempty(e);
    }
    let edge = edge_chars(e, true);
    if edge.intersect(c).is_empty() {
        return Expr::Nothing;
    }
    if edge.intersect(c) == edge {
        return nonempty(e);
    }
    match e {
        Expr::Empty | Expr::Nothing => Expr::Nothing,
        Expr::Literal(s) => match s.chars().last() {
            Some(ch) if c.contains(ch as u32) => e.clone(),
            _ => Expr::Nothing,
        },
        Expr::Class(k) => Expr::Class(k.intersect(c)),
        Expr::Alt(v) => alt(v.iter().map(|x| restrict_last(x, c)).collect()),
        Expr::Seq(v) if !v.is_empty() && !v[v.len() - 1].nullable() => {
            let n = v.len();
            let mut parts: Vec<Expr> = v[..n - 1].to_vec();
            parts.push(restrict_last(&v[n - 1], c));
            seq(parts)
        }
        Expr::Seq(v) if v.len() >= 2 && e.size() <= 400 => {
            let n = v.len();
            let init = seq(v[..n - 1].to_vec());
            alt(vec![
                seq(vec![init.clone(), restrict_last(&v[n - 1], c)]),
                restrict_last(&init, c),
            ])
        }
        Expr::Repeat { max: Some(0), .. } => Expr::Nothing,
        Expr::Repeat { expr, min, max } if !expr.nullable() => {
            let rest_max = max.map(|m| m - 1);
            seq(vec![
                repeat((**expr).clone(), min.saturating_sub(1), rest_max),
                restrict_last(expr, c),
            ])
        }
        _ => and(vec![
            e.clone(),
            seq(vec![any_star(), Expr::Class(c.clone())]),
        ]),
    }
}

/// Whether `e` matches `s`, by Brzozowski derivatives: slow, but
/// independent of the compiler, for tests.
#[cfg(test)]
pub fn matches(e: &Expr, s: &str) -> bool {
    let mut e = e.clone();
    for ch in s.chars() {
        e = derive(&e, ch as u32);
        if e == Expr::Nothing {
            return false;
        }
    }
    e.nullable()
}

#[cfg(test)]
fn derive(e: &Expr, c: u32) -> Expr {
    match e {
        Expr::Empty
        | Expr::Nothing
        | Expr::Ref(_)
        | Expr::Token(_)
        | Expr::JsonStrings(_)
        | Expr::JsonQuoted(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_) => Expr::Nothing,
        Expr::Rfc3339(r) if r.form == crate::ir::TextForm::Chars => {
            derive(&super::formats::rfc3339_regex(r.date), c)
        }
        Expr::Rfc3339(_) => Expr::Nothing,
        Expr::Literal(s) => {
            let mut it = s.chars();
            match it.next() {
                Some(ch) if ch as u32 == c => seq(vec![Expr::literal(it.as_str())]),
                _ => Expr::Nothing,
            }
        }
        Expr::Class(k) => {
            if k.contains(c) {
                Expr::Empty
            } else {
                Expr::Nothing
            }
        }
        Expr::Seq(v) => {
            if v.is_empty() {
                return Expr::Nothing;
            }
            let rest = seq(v[1..].to_vec());
            let first = seq(vec![derive(&v[0], c), rest.clone()]);
            if v[0].nullable() {
                alt(vec![first, derive(&rest, c)])
            } else {
                first
            }
        }
        Expr::Alt(v) => alt(v.iter().map(|x| derive(x, c)).collect()),
        Expr::Repeat { expr, min, max } => {
            if *max == Some(0) {
                return Expr::Nothing;
            }
            let min = if expr.nullable() {
                0
            } else {
                min.saturating_sub(1)
            };
            seq(vec![
                derive(expr, c),
                repeat((**expr).clone(), min, max.map(|m| m - 1)),
            ])
        }
        Expr::And(v) => and(v.iter().map(|x| derive(x, c)).collect()),
        Expr::Not(x) => not(derive(x, c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplifications() {
        let a = Expr::literal("a");
        assert_eq!(
            seq(vec![any_star(), Expr::star(a.clone()), any_star()]),
            any_star()
        );
        assert_eq!(
            seq(vec![a.clone(), Expr::literal("b")]),
            Expr::literal("ab")
        );
        assert_eq!(and(vec![any_star(), a.clone()]), a);
        assert_eq!(and(vec![Expr::Empty, Expr::star(a.clone())]), Expr::Empty);
        assert_eq!(and(vec![Expr::Empty, a.clone()]), Expr::Nothing);
        assert_eq!(not(not(a.clone())), a);
        assert_eq!(nonempty(&Expr::star(a.clone())), Expr::plus(a.clone()));
        assert_eq!(
            alt(vec![Expr::literal("a"), Expr::literal("b")]),
            Expr::Class(CharClass::from_ranges([(97, 98)]))
        );
    }
}
