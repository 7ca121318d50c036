//! From a parsed pattern to the exact set of strings it accepts.
//!
//! Without assertions a pattern is a plain regular expression. Assertions
//! are zero-width conditions on the *whole* string around a position, and
//! are handled in two layers:
//!
//! 1. **Local assertions** (`^ $ \b \B`) depend only on the characters next
//!    to the position (or on there being none). A sub-pattern without
//!    lookarounds is translated into a *context matrix*: for every kind of
//!    left context of the match (start of string, after a word character,
//!    after another character) and every kind of right context, the strings
//!    the sub-pattern matches there. Concatenation, alternation and
//!    repetition are matrix operations (repetition is a Kleene closure over
//!    the few boundary contexts), so anchors inside groups and loops
//!    (`(^a|b)c`, `(x($|/))*`, `a^b`) come out exact.
//! 2. **Lookarounds** and the context conditions left at the edges of such
//!    sub-patterns become conditions on the prefix before a position
//!    (`Conditioned::Lookbehind`: `^`, lookbehind, the left half of `\b`)
//!    or on the suffix after it (`Conditioned::Lookahead`: `$`, lookahead,
//!    the right half of `\b`). A sequence is split
//!    at a point with only prefix conditions to its left and only suffix
//!    conditions to its right; the left part is built forwards, threading
//!    the language of "everything before" (`P·v1 ∩ Q`), the right part
//!    backwards, threading "everything after" (`v2·K ∩ S`), and the two
//!    halves are concatenated. Intersection and complement (`Expr::And`,
//!    `Expr::Not`) express the conditions exactly.
//!
//! What cannot be expressed this way is reported as unsupported with the
//! offset of the assertion: a suffix condition that must hold before a
//! prefix condition in the same sequence (`(?=\w*x)a+(?<=y\w*)`), a lookbehind
//! inside a lookahead after characters the lookahead consumed (and the
//! mirror case), prefix and suffix conditions together inside an unbounded
//! (or over 16) repetition, and lookarounds inside an unbounded repetition
//! unless each step reads one character of some class `C` and what follows
//! the loop cannot start with a `C` character (for lookaheads; the mirror
//! for lookbehinds), as in the "tempered" loops `^((?!ab).)*$` and
//! `((?!ab)[a-z])*\.json`. Zero-width loop bodies (`(?:\b)*`) are exact:
//! ECMA-262 refuses their empty iterations past the minimum.

use super::expr::{
    alt, and, any_plus, any_star, edge_chars, is_any_star, nonempty, not, repeat, restrict_first,
    restrict_last, seq,
};
use super::parser::Node;
use super::unicode;
use crate::error::{Error, Result};
use crate::ir::{CharClass, Expr};
use crate::limits::Deadline;

/// Largest expression (in IR nodes) a translation may build.
pub const MAX_EXPR_SIZE: usize = 200_000;

fn unsupported(at: usize, msg: impl std::fmt::Display) -> Error {
    Error::unsupported(format!(
        "regex construct not supported at offset {at}: {msg}"
    ))
}

fn too_large() -> Error {
    Error::limit(format!(
        "regex translation exceeds {MAX_EXPR_SIZE} expression nodes (assertions inside \
         repetitions multiply the expression)"
    ))
}

/// What building (copying) `e` costs: its nodes and the ranges of its
/// classes (a `\p{L}` class is one node of hundreds of ranges). Bounds
/// the work of steps that copy their operands several times
/// ([`compose`], [`kleene`]): past [`MAX_WORK`] they stop with the size
/// error rather than copy on.
fn weight(e: &Expr) -> usize {
    let mut w = 1;
    if let Expr::Class(c) = e {
        w += c.ranges().len();
    }
    e.for_each_child(|c| w += weight(c));
    w
}

/// Most [`weight`] one composition or closure step may build.
const MAX_WORK: usize = 2 * MAX_EXPR_SIZE;

/// Most [`weight`] the boundary matrices of one closure may have (they
/// copy the body once per pair of contexts; most of the copies go to
/// boundary states that are then pruned, so the bound is looser).
const MAX_BOUNDARY_WORK: usize = 8 * MAX_EXPR_SIZE;

fn check_size(e: &Expr) -> Result<()> {
    if e.size() > MAX_EXPR_SIZE {
        Err(too_large())
    } else {
        Ok(())
    }
}

/// The language of a whole parsed pattern: `prefix` and `suffix` are the
/// languages around the match (`Σ*` for a search, `ε` for a full match).
/// Capturing groups ([`Node::Group`]) are read as their contents.
pub(crate) fn translate(node: &Node, prefix: Expr, suffix: Expr, d: &Deadline) -> Result<Expr> {
    let stripped;
    let node = if node.has_groups() {
        stripped = node.without_groups();
        &stripped
    } else {
        node
    };
    let p = lower(node, d)?;
    let e = in_context(&p, prefix, suffix, d)?;
    check_size(&e)?;
    Ok(e)
}

// ---------------------------------------------------------------------------
// Layer 1: local assertions through context matrices.

/// Which local assertions a sub-pattern contains; they decide which
/// contexts need telling apart.
#[derive(Clone, Copy, Debug, Default)]
struct Dims {
    start: bool,
    end: bool,
    word: bool,
}

/// A kind of context on one side of a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    /// The start (left side) of the string.
    Start,
    /// The end (right side) of the string.
    End,
    /// A word character (`[A-Za-z0-9_]`).
    Word,
    /// Another character; also the string's edge when no `^`/`$` needs it
    /// told apart (for `\b` the edges count as non-word).
    NonWord,
    /// Any character (only `^`/`$` matter, not word-ness).
    Other,
    /// Anything, edge included (nothing on this side matters).
    Any,
}

fn dims_of(n: &Node, d: &mut Dims) {
    match n {
        Node::Start { .. } => d.start = true,
        Node::End { .. } => d.end = true,
        Node::WordBoundary { .. } => d.word = true,
        Node::Seq(v) | Node::Alt(v) => v.iter().for_each(|x| dims_of(x, d)),
        Node::Repeat { node, .. } | Node::Look { node, .. } => dims_of(node, d),
        Node::Empty | Node::Char(_) => {}
        Node::Group { .. } => unreachable!("translate() strips groups"),
    }
}

fn has_assert(n: &Node) -> bool {
    match n {
        Node::Start { .. } | Node::End { .. } | Node::WordBoundary { .. } | Node::Look { .. } => {
            true
        }
        Node::Seq(v) | Node::Alt(v) => v.iter().any(has_assert),
        Node::Repeat { node, .. } => has_assert(node),
        Node::Empty | Node::Char(_) => false,
        Node::Group { .. } => unreachable!("translate() strips groups"),
    }
}

/// The expression of an assertion-free node.
fn plain(n: &Node) -> Expr {
    match n {
        Node::Empty => Expr::Empty,
        Node::Char(c) => seq(vec![Expr::Class(c.clone())]),
        Node::Seq(v) => seq(v.iter().map(plain).collect()),
        Node::Alt(v) => alt(v.iter().map(plain).collect()),
        Node::Repeat { node, min, max, .. } => repeat(plain(node), *min, *max),
        _ => unreachable!("plain() on an assertion"),
    }
}

struct Local {
    d: Dims,
    /// Left-context kinds (rows).
    left_kinds: Vec<Ctx>,
    /// Right-context kinds (columns).
    right_kinds: Vec<Ctx>,
    /// Rows that a consumed character produces (its kind as a left
    /// context for what follows).
    left_after_char: Vec<usize>,
    /// Columns a consumed character produces.
    right_after_char: Vec<usize>,
}

impl Local {
    fn new(d: Dims) -> Local {
        let (left_kinds, left_after_char) = if d.word {
            if d.start {
                (vec![Ctx::Start, Ctx::Word, Ctx::NonWord], vec![1, 2])
            } else {
                (vec![Ctx::Word, Ctx::NonWord], vec![0, 1])
            }
        } else if d.start {
            (vec![Ctx::Start, Ctx::Other], vec![1])
        } else {
            (vec![Ctx::Any], vec![0])
        };
        let (right_kinds, right_after_char) = if d.word {
            if d.end {
                (vec![Ctx::End, Ctx::Word, Ctx::NonWord], vec![1, 2])
            } else {
                (vec![Ctx::Word, Ctx::NonWord], vec![0, 1])
            }
        } else if d.end {
            (vec![Ctx::End, Ctx::Other], vec![1])
        } else {
            (vec![Ctx::Any], vec![0])
        };
        Local {
            d,
            left_kinds,
            right_kinds,
            left_after_char,
            right_after_char,
        }
    }

    fn class(&self, c: Ctx) -> CharClass {
        match c {
            Ctx::Word => unicode::word(),
            Ctx::NonWord => unicode::word().negate(),
            Ctx::Other | Ctx::Any => CharClass::any(),
            Ctx::Start | Ctx::End => CharClass::empty(),
        }
    }

    fn is_word(c: Ctx) -> bool {
        c == Ctx::Word
    }

    /// The prefixes that leave left context `c`, and the same as a local
    /// condition (class of the previous character, or the string start).
    fn prefixes(&self, c: Ctx) -> (Expr, (CharClass, bool)) {
        match c {
            Ctx::Start => (Expr::Empty, (CharClass::empty(), true)),
            Ctx::Word => (
                seq(vec![any_star(), Expr::Class(unicode::word())]),
                (unicode::word(), false),
            ),
            Ctx::NonWord => {
                let e = seq(vec![any_star(), Expr::Class(unicode::word().negate())]);
                if self.d.start {
                    (e, (unicode::word().negate(), false))
                } else {
                    (alt(vec![Expr::Empty, e]), (unicode::word().negate(), true))
                }
            }
            Ctx::Other => (any_plus(), (CharClass::any(), false)),
            Ctx::Any | Ctx::End => (any_star(), (CharClass::any(), true)),
        }
    }

    /// The suffixes that give right context `c`.
    fn suffixes(&self, c: Ctx) -> (Expr, (CharClass, bool)) {
        match c {
            Ctx::End => (Expr::Empty, (CharClass::empty(), true)),
            Ctx::Word => (
                seq(vec![Expr::Class(unicode::word()), any_star()]),
                (unicode::word(), false),
            ),
            Ctx::NonWord => {
                let e = seq(vec![Expr::Class(unicode::word().negate()), any_star()]);
                if self.d.end {
                    (e, (unicode::word().negate(), false))
                } else {
                    (alt(vec![Expr::Empty, e]), (unicode::word().negate(), true))
                }
            }
            Ctx::Other => (any_plus(), (CharClass::any(), false)),
            Ctx::Any | Ctx::Start => (any_star(), (CharClass::any(), true)),
        }
    }

    /// Only one character kind on the left, and it is any character.
    fn left_is_any_char(&self) -> bool {
        self.left_after_char.len() == 1
            && self
                .class(self.left_kinds[self.left_after_char[0]])
                .is_any()
    }

    fn right_is_any_char(&self) -> bool {
        self.right_after_char.len() == 1
            && self
                .class(self.right_kinds[self.right_after_char[0]])
                .is_any()
    }
}

/// A sub-pattern's strings per (left context, right context), or the same
/// strings in every context.
#[derive(Clone, Debug)]
enum Lang {
    Uniform(Expr),
    PerContext(Vec<Expr>),
}

impl Lang {
    fn get(&self, l: &Local, a: usize, b: usize) -> &Expr {
        match self {
            Lang::Uniform(e) => e,
            Lang::PerContext(v) => &v[a * l.right_kinds.len() + b],
        }
    }
}

fn size_of(l: &Lang) -> usize {
    match l {
        Lang::Uniform(e) => e.size(),
        Lang::PerContext(v) => v.iter().map(Expr::size).sum(),
    }
}

fn matrix(n: &Node, l: &Local, d: &Deadline) -> Result<Lang> {
    d.check()?;
    if !has_assert(n) {
        return Ok(Lang::Uniform(plain(n)));
    }
    let (row_count, col_count) = (l.left_kinds.len(), l.right_kinds.len());
    let from_pred = |f: &dyn Fn(Ctx, Ctx) -> bool| {
        let mut v = Vec::with_capacity(row_count * col_count);
        for a in 0..row_count {
            for b in 0..col_count {
                v.push(if f(l.left_kinds[a], l.right_kinds[b]) {
                    Expr::Empty
                } else {
                    Expr::Nothing
                });
            }
        }
        Lang::PerContext(v)
    };
    let out = match n {
        Node::Start { .. } => from_pred(&|p, _| p == Ctx::Start),
        Node::End { .. } => from_pred(&|_, q| q == Ctx::End),
        Node::WordBoundary { negated, .. } => {
            let neg = *negated;
            from_pred(&move |p, q| (Local::is_word(p) != Local::is_word(q)) != neg)
        }
        Node::Seq(items) => {
            let parts = match seq_parts(items) {
                Some(p) => p,
                None => return Ok(Lang::Uniform(Expr::Nothing)),
            };
            let mut acc: Option<Lang> = None;
            for part in parts {
                let m = match part {
                    Part::Plain(e) => Lang::Uniform(e),
                    Part::Node(n) => matrix(n, l, d)?,
                };
                acc = Some(match acc.take() {
                    None => m,
                    Some(a) => compose(&a, &m, l, d)?,
                });
            }
            acc.unwrap_or(Lang::Uniform(Expr::Empty))
        }
        Node::Alt(v) => {
            let ms: Vec<Lang> = v.iter().map(|x| matrix(x, l, d)).collect::<Result<_>>()?;
            let mut out = Vec::with_capacity(row_count * col_count);
            for a in 0..row_count {
                for b in 0..col_count {
                    out.push(alt(ms.iter().map(|m| m.get(l, a, b).clone()).collect()));
                }
            }
            Lang::PerContext(out)
        }
        Node::Repeat {
            node, min, max, at, ..
        } => {
            let body = matrix(node, l, d)?;
            closure(&body, *min, *max, *at, l, d)?
        }
        Node::Look { .. } | Node::Empty | Node::Char(_) | Node::Group { .. } => unreachable!(),
    };
    if size_of(&out) > MAX_EXPR_SIZE {
        return Err(too_large());
    }
    Ok(out)
}

/// An item of a sequence: a run of assertion-free items, or an item with
/// assertions.
enum Part<'a> {
    Plain(Expr),
    Node(&'a Node),
}

/// A sequence as parts, with the assertions that sit between two
/// non-empty plain runs decided on the spot: `^` after characters or `$`
/// before them fail, and `\b`/`\B` between runs whose adjacent characters
/// are all word (or all non-word) characters on one side restrict the
/// other side. Without this, every assertion would multiply the size of
/// the context matrices. `None` when the sequence can match nothing.
fn seq_parts(items: &[Node]) -> Option<Vec<Part<'_>>> {
    let mut parts: Vec<Part> = Vec::new();
    for it in items {
        if has_assert(it) {
            parts.push(Part::Node(it));
        } else {
            let e = plain(it);
            match parts.last_mut() {
                Some(Part::Plain(prev)) => *prev = seq(vec![prev.clone(), e]),
                _ => parts.push(Part::Plain(e)),
            }
        }
    }
    let solid = |p: Option<&Part>| match p {
        Some(Part::Plain(e)) if !e.nullable() => Some(e.clone()),
        _ => None,
    };
    let word = unicode::word();
    let kind = |c: &CharClass| {
        if c.intersect(&word) == *c {
            Some(true)
        } else if c.intersect(&word).is_empty() {
            Some(false)
        } else {
            None
        }
    };
    let mut i = 0;
    while i < parts.len() {
        let (before, after) = (
            if i > 0 { solid(parts.get(i - 1)) } else { None },
            solid(parts.get(i + 1)),
        );
        let resolved = match parts[i] {
            Part::Node(Node::Start { .. }) if before.is_some() => return None,
            Part::Node(Node::End { .. }) if after.is_some() => return None,
            Part::Node(&Node::WordBoundary { negated, .. }) => match (before, after) {
                (Some(x), Some(y)) => {
                    let kx = kind(&edge_chars(&x, true));
                    let ky = kind(&edge_chars(&y, false));
                    // Which word-ness the other side must have.
                    let need = |k: bool| if negated { k } else { !k };
                    match (kx, ky) {
                        (Some(a), Some(b)) => {
                            if (a != b) == negated {
                                return None;
                            }
                            Some((x, y))
                        }
                        (Some(a), None) => {
                            let c = if need(a) { word.clone() } else { word.negate() };
                            Some((x, restrict_first(&y, &c)))
                        }
                        (None, Some(b)) => {
                            let c = if need(b) { word.clone() } else { word.negate() };
                            Some((restrict_last(&x, &c), y))
                        }
                        (None, None) => None,
                    }
                }
                _ => None,
            },
            _ => None,
        };
        match resolved {
            Some((x, y)) => {
                // Replace `x, assertion, y` by the plain `x·y`.
                let joined = seq(vec![x, y]);
                if joined == Expr::Nothing {
                    return None;
                }
                parts.splice(i - 1..=i + 1, [Part::Plain(joined)]);
                i -= 1;
            }
            None => i += 1,
        }
    }
    Some(parts)
}

/// Concatenation of context matrices. For a match `v = v1·v2` split at
/// `m`, the context at `m` is read off `v1`'s last character (or the outer
/// left context when `v1` is empty) and `v2`'s first character (or the
/// outer right context when `v2` is empty).
fn compose(x: &Lang, y: &Lang, l: &Local, d: &Deadline) -> Result<Lang> {
    if let (Lang::Uniform(a), Lang::Uniform(b)) = (x, y) {
        return Ok(Lang::Uniform(seq(vec![a.clone(), b.clone()])));
    }
    let (row_count, col_count) = (l.left_kinds.len(), l.right_kinds.len());
    let left_any = l.left_is_any_char();
    let right_any = l.right_is_any_char();
    let mut out = Vec::with_capacity(row_count * col_count);
    // The weight of the terms built so far: one composition of large
    // operands builds many copies of them, so it stops at [`MAX_WORK`]
    // rather than after building them all (the size check after it).
    let mut built = 0usize;
    let mut add = |terms: &mut Vec<Expr>, e: Expr| -> Result<()> {
        built += weight(&e);
        if built > MAX_WORK {
            return Err(too_large());
        }
        terms.push(e);
        d.check()
    };
    for a in 0..row_count {
        for b in 0..col_count {
            let x_here = x.get(l, a, b);
            let y_here = y.get(l, a, b);
            let mut terms: Vec<Expr> = Vec::new();
            let mut took_whole_y = false;
            let mut took_whole_x = false;
            // When only one kind of character exists on a side, the cases
            // "v1 empty" (or "v2 empty") and "both empty" merge into the
            // whole of Y (or X), sparing a split into empty and non-empty
            // parts. Prefer the merge that leaves nothing else behind.
            let whole_y_fits =
                right_any && x_here.nullable() && x.get(l, a, l.right_after_char[0]).nullable();
            let whole_x_fits =
                left_any && y_here.nullable() && y.get(l, l.left_after_char[0], b).nullable();
            if whole_y_fits && !(whole_x_fits && *y_here == Expr::Empty) {
                // v1 = ε with either context after it: all of Y.
                add(&mut terms, y_here.clone())?;
                took_whole_y = true;
            } else if whole_x_fits {
                add(&mut terms, x_here.clone())?;
                took_whole_x = true;
            }
            if !took_whole_y && !took_whole_x && x_here.nullable() && y_here.nullable() {
                terms.push(Expr::Empty);
            }
            if !took_whole_y {
                for &q in &l.right_after_char {
                    if x.get(l, a, q).nullable() {
                        add(
                            &mut terms,
                            restrict_first(y_here, &l.class(l.right_kinds[q])),
                        )?;
                    }
                }
            }
            if !took_whole_x {
                for &p in &l.left_after_char {
                    if y.get(l, p, b).nullable() {
                        add(&mut terms, restrict_last(x_here, &l.class(l.left_kinds[p])))?;
                    }
                }
            }
            for &p in &l.left_after_char {
                for &q in &l.right_after_char {
                    let left = x.get(l, a, q);
                    let right = y.get(l, p, b);
                    if matches!(left, Expr::Nothing) || matches!(right, Expr::Nothing) {
                        continue;
                    }
                    add(
                        &mut terms,
                        seq(vec![
                            restrict_last(left, &l.class(l.left_kinds[p])),
                            restrict_first(right, &l.class(l.right_kinds[q])),
                        ]),
                    )?;
                }
            }
            out.push(alt(terms));
        }
    }
    let m = Lang::PerContext(out);
    if size_of(&m) > MAX_EXPR_SIZE {
        return Err(too_large());
    }
    Ok(m)
}

/// The identity of [`compose`]: the empty match, in any context.
fn identity(l: &Local) -> Lang {
    Lang::PerContext(vec![Expr::Empty; l.left_kinds.len() * l.right_kinds.len()])
}

/// `X{min,max}` on context matrices. Empty iterations after the minimum,
/// which ECMA-262 refuses, never change the set of strings matched, so
/// the closure is over non-empty iterations only; between two of them the
/// context is a pair (kind of the last character, kind of the next one).
fn closure(
    x: &Lang,
    min: u32,
    max: Option<u32>,
    at: usize,
    l: &Local,
    d: &Deadline,
) -> Result<Lang> {
    if let Lang::Uniform(e) = x {
        return Ok(Lang::Uniform(repeat(e.clone(), min, max)));
    }
    let mut mandatory = identity(l);
    for _ in 0..min {
        mandatory = compose(&mandatory, x, l, d)?;
    }
    if max == Some(min) {
        return Ok(mandatory);
    }
    let (row_count, col_count) = (l.left_kinds.len(), l.right_kinds.len());
    // The boundary matrices (and the paths through them at the end) copy
    // the body's entries once per pair of contexts: each copy is a step
    // (the deadline is checked), and past [`MAX_BOUNDARY_WORK`] of them
    // the closure cannot fit.
    let mut built = 0usize;
    let mut made = |e: Expr| -> Result<Expr> {
        built += weight(&e);
        if built > MAX_BOUNDARY_WORK {
            return Err(too_large());
        }
        d.check()?;
        Ok(e)
    };
    let xp: Vec<Expr> = (0..row_count * col_count)
        .map(|i| made(nonempty(x.get(l, i / col_count, i % col_count))))
        .collect::<Result<_>>()?;
    let xg = |a: usize, b: usize| &xp[a * col_count + b];
    // Boundary states between two non-empty iterations.
    let states: Vec<(usize, usize)> = l
        .left_after_char
        .iter()
        .flat_map(|&p| l.right_after_char.iter().map(move |&q| (p, q)))
        .collect();
    let ns = states.len();
    // First iteration: from the outer left context to a boundary.
    let first: Vec<Vec<Expr>> = (0..row_count)
        .map(|a| {
            states
                .iter()
                .map(|&(p, q)| made(restrict_last(xg(a, q), &l.class(l.left_kinds[p]))))
                .collect::<Result<_>>()
        })
        .collect::<Result<_>>()?;
    // Middle iterations: boundary to boundary.
    let step: Vec<Vec<Expr>> = states
        .iter()
        .map(|&(p, q)| {
            states
                .iter()
                .map(|&(p2, q2)| {
                    made(restrict_first(
                        &restrict_last(xg(p, q2), &l.class(l.left_kinds[p2])),
                        &l.class(l.right_kinds[q]),
                    ))
                })
                .collect::<Result<_>>()
        })
        .collect::<Result<_>>()?;
    // Last iteration: boundary to the outer right context.
    let last: Vec<Vec<Expr>> = states
        .iter()
        .map(|&(p, q)| {
            (0..col_count)
                .map(|b| made(restrict_first(xg(p, b), &l.class(l.right_kinds[q]))))
                .collect::<Result<_>>()
        })
        .collect::<Result<_>>()?;
    // Only boundary states that some path from the first iteration to the
    // last one goes through matter; pruning the others often leaves one,
    // which keeps bounded repetitions compact.
    let nothing = |e: &Expr| matches!(e, Expr::Nothing);
    let mut reach: Vec<bool> = (0..ns)
        .map(|s| first.iter().any(|row| !nothing(&row[s])))
        .collect();
    let mut coreach: Vec<bool> = (0..ns)
        .map(|s| last[s].iter().any(|e| !nothing(e)))
        .collect();
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..ns {
            for j in 0..ns {
                if nothing(&step[i][j]) {
                    continue;
                }
                if reach[i] && !reach[j] {
                    reach[j] = true;
                    changed = true;
                }
                if coreach[j] && !coreach[i] {
                    coreach[i] = true;
                    changed = true;
                }
            }
        }
    }
    let live: Vec<usize> = (0..ns).filter(|&s| reach[s] && coreach[s]).collect();
    let nl = live.len();
    let mut step = step;
    let sub: Vec<Vec<Expr>> = live
        .iter()
        .map(|&i| {
            live.iter()
                .map(|&j| std::mem::replace(&mut step[i][j], Expr::Nothing))
                .collect()
        })
        .collect();
    // Paths through any number (or at most k) of middle iterations.
    let sub_mids: Vec<Vec<Expr>> = match max {
        None => kleene(&sub, d)?,
        Some(m) => {
            let k = m - min;
            if k < 2 {
                vec![vec![Expr::Nothing; nl]; nl]
            } else if nl == 1 {
                vec![vec![repeat(sub[0][0].clone(), 0, Some(k - 2))]]
            } else {
                // Horner: I^0 + I(I^0 + I(...)).
                let id: Vec<Vec<Expr>> = (0..nl)
                    .map(|i| {
                        (0..nl)
                            .map(|j| if i == j { Expr::Empty } else { Expr::Nothing })
                            .collect()
                    })
                    .collect();
                let mut r = id.clone();
                for _ in 0..k - 2 {
                    d.check()?;
                    let mut nr = id.clone();
                    for i in 0..nl {
                        for j in 0..nl {
                            let mut terms = vec![nr[i][j].clone()];
                            for (u, row) in r.iter().enumerate() {
                                terms.push(seq(vec![sub[i][u].clone(), row[j].clone()]));
                            }
                            nr[i][j] = alt(terms);
                        }
                    }
                    r = nr;
                    if r.iter().flatten().map(Expr::size).sum::<usize>() > MAX_EXPR_SIZE {
                        return Err(unsupported(
                            at,
                            "a word boundary inside a repetition with a large count",
                        ));
                    }
                }
                r
            }
        }
    };
    let mut mids = vec![vec![Expr::Nothing; ns]; ns];
    for (i, &si) in live.iter().enumerate() {
        for (j, &sj) in live.iter().enumerate() {
            mids[si][sj] = sub_mids[i][j].clone();
        }
    }
    let two_or_more = max.is_none_or(|m| m - min >= 2);
    let last_at = |s: usize, b: usize| &last[s][b];
    let mut tail = Vec::with_capacity(row_count * col_count);
    for (a, first_a) in first.iter().enumerate() {
        for b in 0..col_count {
            d.check()?;
            let mut terms = vec![Expr::Empty, xg(a, b).clone()];
            if two_or_more {
                for (s, mid_s) in mids.iter().enumerate() {
                    for (s2, mid) in mid_s.iter().enumerate() {
                        if matches!(mid, Expr::Nothing) {
                            continue;
                        }
                        terms.push(made(seq(vec![
                            first_a[s].clone(),
                            mid.clone(),
                            last_at(s2, b).clone(),
                        ]))?);
                    }
                }
            }
            tail.push(alt(terms));
        }
    }
    compose(&mandatory, &Lang::PerContext(tail), l, d)
}

/// Kleene closure `A*` of a square matrix of expressions.
fn kleene(a: &[Vec<Expr>], d: &Deadline) -> Result<Vec<Vec<Expr>>> {
    let n = a.len();
    let mut r: Vec<Vec<Expr>> = a.to_vec();
    for k in 0..n {
        let s = repeat(r[k][k].clone(), 0, None);
        // Row and column `k` as they were before this round (the only
        // entries the round reads besides the one it replaces).
        let row: Vec<Expr> = r[k].clone();
        let col: Vec<Expr> = r.iter().map(|ri| ri[k].clone()).collect();
        let mut built = 0usize;
        for i in 0..n {
            for j in 0..n {
                if matches!(col[i], Expr::Nothing) || matches!(row[j], Expr::Nothing) {
                    continue;
                }
                d.check()?;
                let e = alt(vec![
                    std::mem::replace(&mut r[i][j], Expr::Nothing),
                    seq(vec![col[i].clone(), s.clone(), row[j].clone()]),
                ]);
                built += weight(&e);
                if built > MAX_WORK {
                    return Err(too_large());
                }
                r[i][j] = e;
            }
        }
        if r.iter().flatten().map(Expr::size).sum::<usize>() > MAX_EXPR_SIZE {
            return Err(too_large());
        }
    }
    for (i, row) in r.iter_mut().enumerate() {
        row[i] = alt(vec![Expr::Empty, row[i].clone()]);
    }
    Ok(r)
}

/// Alternatives of an expression (its operands if a union).
fn alternatives(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::Alt(v) => v.clone(),
        Expr::Nothing => Vec::new(),
        e => vec![e.clone()],
    }
}

/// A context matrix as conditions at the edges: alternatives common to
/// every context stay plain, the rest is guarded by prefix and suffix
/// conditions describing the contexts.
fn to_p(lang: Lang, l: &Local, at: usize, d: &Deadline) -> Result<Conditioned> {
    let v = match lang {
        Lang::Uniform(e) => return Ok(Conditioned::Plain(e)),
        Lang::PerContext(v) => v,
    };
    let (row_count, col_count) = (l.left_kinds.len(), l.right_kinds.len());
    let alts: Vec<Vec<Expr>> = v.iter().map(alternatives).collect();
    let mut common: Vec<Expr> = Vec::new();
    for e in &alts[0] {
        d.check()?;
        if alts.iter().all(|a| a.contains(e)) {
            common.push(e.clone());
        }
    }
    let mut residual: Vec<Expr> = Vec::with_capacity(alts.len());
    for a in &alts {
        d.check()?;
        residual.push(alt(a
            .iter()
            .filter(|e| !common.contains(e))
            .cloned()
            .collect()));
    }
    let mut out: Vec<Conditioned> = Vec::new();
    if !common.is_empty() {
        out.push(Conditioned::Plain(alt(common)));
    }
    // Group contexts by residual.
    let mut groups: Vec<(Expr, Vec<(usize, usize)>)> = Vec::new();
    for a in 0..row_count {
        for b in 0..col_count {
            d.check()?;
            let r = &residual[a * col_count + b];
            if matches!(r, Expr::Nothing) {
                continue;
            }
            match groups.iter_mut().find(|g| g.0 == *r) {
                Some(g) => g.1.push((a, b)),
                None => groups.push((r.clone(), vec![(a, b)])),
            }
        }
    }
    let lb = |rows: &[usize]| -> Option<Conditioned> {
        if rows.len() == row_count {
            return None;
        }
        let parts: Vec<(Expr, (CharClass, bool))> =
            rows.iter().map(|&a| l.prefixes(l.left_kinds[a])).collect();
        Some(Conditioned::Lookbehind(cond_union(parts, at)))
    };
    let la = |cols: &[usize]| -> Option<Conditioned> {
        if cols.len() == col_count {
            return None;
        }
        let parts: Vec<(Expr, (CharClass, bool))> =
            cols.iter().map(|&b| l.suffixes(l.right_kinds[b])).collect();
        Some(Conditioned::Lookahead(cond_union(parts, at)))
    };
    for (r, pairs) in groups {
        let mut rows: Vec<usize> = pairs.iter().map(|p| p.0).collect();
        rows.dedup();
        let mut cols: Vec<usize> = pairs.iter().map(|p| p.1).collect();
        cols.sort_unstable();
        cols.dedup();
        let product = pairs.len() == rows.len() * cols.len();
        if product {
            let mut items = Vec::new();
            items.extend(lb(&rows));
            items.push(Conditioned::Plain(r));
            items.extend(la(&cols));
            out.push(Conditioned::Seq(items));
        } else {
            for &a in &rows {
                let cs: Vec<usize> = pairs.iter().filter(|p| p.0 == a).map(|p| p.1).collect();
                let mut items = Vec::new();
                items.extend(lb(&[a]));
                items.push(Conditioned::Plain(r.clone()));
                items.extend(la(&cs));
                out.push(Conditioned::Seq(items));
            }
        }
    }
    Ok(match out.len() {
        0 => Conditioned::Plain(Expr::Nothing),
        1 => out.pop().unwrap(),
        _ => Conditioned::Alt(out),
    })
}

fn cond_union(parts: Vec<(Expr, (CharClass, bool))>, at: usize) -> Cond {
    let mut class = CharClass::empty();
    let mut edge = false;
    let mut langs = Vec::new();
    for (e, (c, b)) in parts {
        langs.push(e);
        class = class.union(&c);
        edge |= b;
    }
    Cond {
        lang: alt(langs),
        local: Some((class, edge)),
        at,
    }
}

// ---------------------------------------------------------------------------
// Layer 2: prefix and suffix conditions.

/// A condition on the text before (`Lookbehind`) or after (`Lookahead`)
/// a position.
#[derive(Clone, Debug)]
struct Cond {
    /// The prefixes (for `Lookbehind`) or suffixes (for `Lookahead`) that satisfy it.
    lang: Expr,
    /// When the condition only looks at the adjacent character: the
    /// classes it allows there, and whether the string's edge is allowed.
    local: Option<(CharClass, bool)>,
    /// Offset of the assertion in the pattern (for messages).
    at: usize,
}

impl Cond {
    fn negate(&self) -> Cond {
        Cond {
            lang: not(self.lang.clone()),
            local: self.local.as_ref().map(|(c, b)| (c.negate(), !b)),
            at: self.at,
        }
    }

    fn and(conds: &[Cond]) -> Cond {
        let local = conds
            .iter()
            .try_fold((CharClass::any(), true), |(c, b), x| {
                x.local.as_ref().map(|(xc, xb)| (c.intersect(xc), b && *xb))
            });
        Cond {
            lang: and(conds.iter().map(|c| c.lang.clone()).collect()),
            local,
            at: conds.first().map_or(0, |c| c.at),
        }
    }
}

/// A pattern with its assertions turned into prefix and suffix conditions.
#[derive(Clone, Debug)]
enum Conditioned {
    Plain(Expr),
    Lookbehind(Cond),
    Lookahead(Cond),
    Seq(Vec<Conditioned>),
    Alt(Vec<Conditioned>),
    Repeat {
        body: Box<Conditioned>,
        min: u32,
        max: Option<u32>,
        at: usize,
    },
}

/// (has prefix conditions, has suffix conditions)
fn kinds(p: &Conditioned) -> (bool, bool) {
    match p {
        Conditioned::Plain(_) => (false, false),
        Conditioned::Lookbehind(_) => (true, false),
        Conditioned::Lookahead(_) => (false, true),
        Conditioned::Seq(v) | Conditioned::Alt(v) => v.iter().fold((false, false), |(a, b), x| {
            let (c, d) = kinds(x);
            (a || c, b || d)
        }),
        Conditioned::Repeat { body, .. } => kinds(body),
    }
}

fn has_lb(p: &Conditioned) -> bool {
    kinds(p).0
}

fn has_la(p: &Conditioned) -> bool {
    kinds(p).1
}

/// Reads no characters.
fn zero_width(p: &Conditioned) -> bool {
    match p {
        Conditioned::Plain(e) => *e == Expr::Empty,
        Conditioned::Lookbehind(_) | Conditioned::Lookahead(_) => true,
        Conditioned::Seq(v) | Conditioned::Alt(v) => v.iter().all(zero_width),
        Conditioned::Repeat { body, .. } => zero_width(body),
    }
}

fn to_plain(p: &Conditioned) -> Option<Expr> {
    match p {
        Conditioned::Plain(e) => Some(e.clone()),
        Conditioned::Lookbehind(_) | Conditioned::Lookahead(_) => None,
        Conditioned::Seq(v) => Some(seq(v.iter().map(to_plain).collect::<Option<_>>()?)),
        Conditioned::Alt(v) => Some(alt(v.iter().map(to_plain).collect::<Option<_>>()?)),
        Conditioned::Repeat { body, min, max, .. } => Some(repeat(to_plain(body)?, *min, *max)),
    }
}

fn first_at(p: &Conditioned) -> usize {
    match p {
        Conditioned::Lookbehind(c) | Conditioned::Lookahead(c) => c.at,
        Conditioned::Seq(v) | Conditioned::Alt(v) => v
            .iter()
            .map(first_at)
            .find(|&a| a != usize::MAX)
            .unwrap_or(usize::MAX),
        Conditioned::Repeat { at, .. } => *at,
        Conditioned::Plain(_) => usize::MAX,
    }
}

fn flatten_seq(items: Vec<Conditioned>) -> Vec<Conditioned> {
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Conditioned::Seq(v) => out.extend(flatten_seq(v)),
            Conditioned::Plain(Expr::Empty) => {}
            other => out.push(other),
        }
    }
    out
}

fn lower(n: &Node, d: &Deadline) -> Result<Conditioned> {
    d.check()?;
    if !n.has_look() {
        let mut dims = Dims::default();
        dims_of(n, &mut dims);
        let l = Local::new(dims);
        let m = matrix(n, &l, d)?;
        return to_p(m, &l, first_assert_at(n), d);
    }
    Ok(match n {
        Node::Seq(items) => {
            let mut out = Vec::new();
            let mut run: Vec<Node> = Vec::new();
            for it in items {
                if it.has_look() {
                    if !run.is_empty() {
                        out.push(lower(&Node::Seq(std::mem::take(&mut run)), d)?);
                    }
                    out.push(lower(it, d)?);
                } else {
                    run.push(it.clone());
                }
            }
            if !run.is_empty() {
                out.push(lower(&Node::Seq(run), d)?);
            }
            Conditioned::Seq(out)
        }
        Node::Alt(v) => Conditioned::Alt(v.iter().map(|x| lower(x, d)).collect::<Result<_>>()?),
        // Iterations of a body that reads nothing all test the same
        // position: ECMA-262 refuses empty iterations past the minimum, so
        // the loop is the body once (or nothing when the minimum is 0).
        Node::Repeat { node, min, .. } if zero_width_node(node) => {
            if *min == 0 {
                Conditioned::Plain(Expr::Empty)
            } else {
                lower(node, d)?
            }
        }
        Node::Repeat {
            node, min, max, at, ..
        } => Conditioned::Repeat {
            body: Box::new(lower(node, d)?),
            min: *min,
            max: *max,
            at: *at,
        },
        Node::Look {
            behind,
            negated,
            node,
            at,
        } => lower_look(*behind, *negated, node, *at, d)?,
        _ => unreachable!("nodes without lookarounds are handled above"),
    })
}

/// Can only match the empty string (reads no character on any path).
fn zero_width_node(n: &Node) -> bool {
    match n {
        Node::Char(_) => false,
        Node::Empty
        | Node::Start { .. }
        | Node::End { .. }
        | Node::WordBoundary { .. }
        | Node::Look { .. } => true,
        Node::Seq(v) | Node::Alt(v) => v.iter().all(zero_width_node),
        Node::Repeat { node, .. } => zero_width_node(node),
        Node::Group { .. } => unreachable!("translate() strips groups"),
    }
}

fn first_assert_at(n: &Node) -> usize {
    match n {
        Node::Start { at }
        | Node::End { at }
        | Node::WordBoundary { at, .. }
        | Node::Look { at, .. } => *at,
        Node::Seq(v) | Node::Alt(v) => v.iter().map(first_assert_at).min().unwrap_or(usize::MAX),
        Node::Repeat { node, .. } => first_assert_at(node),
        _ => usize::MAX,
    }
}

/// A lookaround as conditions. The body's own prefix conditions at its
/// start (for a lookahead) hold at the lookahead's position, so they are
/// hoisted out; the rest of the body becomes the suffix language.
fn lower_look(
    behind: bool,
    negated: bool,
    body: &Node,
    at: usize,
    d: &Deadline,
) -> Result<Conditioned> {
    let pb = lower(body, d)?;
    // Branches: (conditions on the other side, the rest).
    let branches = if behind {
        split_edge(pb, false, at)?
    } else {
        split_edge(pb, true, at)?
    };
    let mut langs: Vec<(Option<Cond>, Cond)> = Vec::new();
    for (hoisted, rest) in branches {
        let h = (!hoisted.is_empty()).then(|| Cond::and(&hoisted));
        let lang = if behind {
            append_all(&flatten_seq(vec![rest.clone()]), any_star(), d)?
        } else {
            prepend_all(&flatten_seq(vec![rest.clone()]), any_star(), d)?
        };
        // A lookaround of one character class only looks next door.
        let local = match to_plain(&rest) {
            Some(Expr::Class(c)) => Some((c, false)),
            Some(Expr::Literal(s)) if s.chars().count() == 1 => {
                Some((CharClass::single(s.chars().next().unwrap() as u32), false))
            }
            _ => None,
        };
        langs.push((h, Cond { lang, local, at }));
    }
    let wrap = |c: Cond| {
        if behind {
            Conditioned::Lookbehind(c)
        } else {
            Conditioned::Lookahead(c)
        }
    };
    let wrap_other = |c: Cond| {
        if behind {
            Conditioned::Lookahead(c)
        } else {
            Conditioned::Lookbehind(c)
        }
    };
    if !negated {
        let alts: Vec<Conditioned> = langs
            .into_iter()
            .map(|(h, c)| {
                let mut items: Vec<Conditioned> = h.into_iter().map(wrap_other).collect();
                items.push(wrap(c));
                Conditioned::Seq(items)
            })
            .collect();
        return Ok(if alts.len() == 1 {
            alts.into_iter().next().unwrap()
        } else {
            Conditioned::Alt(alts)
        });
    }
    // not (H1 and C1 or H2 and C2 ...) = (not H1 or not C1) and ...
    let mut items: Vec<Conditioned> = Vec::new();
    let mut plain_conds: Vec<Cond> = Vec::new();
    for (h, c) in langs {
        match h {
            None => plain_conds.push(c),
            Some(h) => items.push(Conditioned::Alt(vec![
                wrap_other(h.negate()),
                wrap(c.negate()),
            ])),
        }
    }
    if !plain_conds.is_empty() {
        let c = if plain_conds.len() == 1 {
            plain_conds.pop().unwrap()
        } else {
            let local = plain_conds
                .iter()
                .try_fold((CharClass::empty(), false), |(c, b), x| {
                    x.local.as_ref().map(|(xc, xb)| (c.union(xc), b || *xb))
                });
            Cond {
                lang: alt(plain_conds.into_iter().map(|c| c.lang).collect()),
                local,
                at,
            }
        };
        items.insert(0, wrap(c.negate()));
    }
    Ok(if items.len() == 1 {
        items.pop().unwrap()
    } else {
        Conditioned::Seq(items)
    })
}

/// Splits `p` into branches of (conditions of the opposite kind found at
/// the edge, rest without such conditions). `front`: a lookahead body,
/// whose prefix conditions must sit at its start; otherwise a lookbehind
/// body, whose suffix conditions must sit at its end.
fn split_edge(p: Conditioned, front: bool, at: usize) -> Result<Vec<(Vec<Cond>, Conditioned)>> {
    let bad = |p: &Conditioned| if front { has_lb(p) } else { has_la(p) };
    if !bad(&p) {
        return Ok(vec![(Vec::new(), p)]);
    }
    match p {
        Conditioned::Lookbehind(c) if front => Ok(vec![(vec![c], Conditioned::Plain(Expr::Empty))]),
        Conditioned::Lookahead(c) if !front => Ok(vec![(vec![c], Conditioned::Plain(Expr::Empty))]),
        Conditioned::Alt(v) => {
            let mut out = Vec::new();
            for x in v {
                out.extend(split_edge(x, front, at)?);
            }
            Ok(out)
        }
        Conditioned::Seq(items) => {
            let mut items = flatten_seq(items);
            if !front {
                items.reverse();
            }
            let mut branches: Vec<(Vec<Cond>, Vec<Conditioned>)> = vec![(Vec::new(), Vec::new())];
            let mut i = 0;
            while i < items.len() && items[i..].iter().any(bad) {
                let it = items[i].clone();
                if !zero_width(&it) {
                    let pos = items[i..]
                        .iter()
                        .filter(|x| bad(x))
                        .map(first_at)
                        .min()
                        .unwrap_or(at);
                    return Err(unsupported(
                        pos,
                        if front {
                            "an anchor or lookbehind (^, \\b, (?<=...)) inside a lookahead, after characters the lookahead reads"
                        } else {
                            "an anchor or lookahead ($, \\b, (?=...)) inside a lookbehind, before characters the lookbehind reads"
                        },
                    ));
                }
                let parts = split_edge(it, front, at)?;
                let mut nb = Vec::new();
                for (c0, r0) in &branches {
                    for (c1, r1) in &parts {
                        let mut c = c0.clone();
                        c.extend(c1.iter().cloned());
                        let mut r = r0.clone();
                        r.push(r1.clone());
                        nb.push((c, r));
                    }
                }
                branches = nb;
                if branches.len() > 64 {
                    return Err(too_large());
                }
                i += 1;
            }
            let rest: Vec<Conditioned> = items[i..].to_vec();
            Ok(branches
                .into_iter()
                .map(|(c, mut r)| {
                    r.extend(rest.iter().cloned());
                    if !front {
                        r.reverse();
                    }
                    (c, Conditioned::Seq(r))
                })
                .collect())
        }
        other => Err(unsupported(
            first_at(&other),
            "an anchor or lookaround inside a repetition inside a lookaround",
        )),
    }
}

/// The strings of a whole pattern `p` with `pfx` before it and `sfx`
/// after it.
fn in_context(p: &Conditioned, pfx: Expr, sfx: Expr, d: &Deadline) -> Result<Expr> {
    d.check()?;
    match p {
        Conditioned::Plain(e) => Ok(seq(vec![pfx, e.clone(), sfx])),
        Conditioned::Seq(v) => in_context_seq(flatten_seq(v.clone()), pfx, sfx, d),
        Conditioned::Alt(v) => {
            let mut plains = Vec::new();
            let mut out = Vec::new();
            for x in v {
                match to_plain(x) {
                    Some(e) => plains.push(e),
                    None => out.push(in_context(x, pfx.clone(), sfx.clone(), d)?),
                }
            }
            if !plains.is_empty() {
                out.push(seq(vec![pfx, alt(plains), sfx]));
            }
            let e = alt(out);
            check_size(&e)?;
            Ok(e)
        }
        other => in_context_seq(vec![other.clone()], pfx, sfx, d),
    }
}

/// Merges one-character conditions into the neighbouring plain item:
/// `(?=[a-z])\w+` is `[a-z]\w*`, and the `\b` in `\bfoo` only asks about
/// the character before.
fn resolve_local(items: Vec<Conditioned>) -> Vec<Conditioned> {
    let mut items = items;
    let mut changed = true;
    while changed {
        changed = false;
        let mut i = 0;
        while i + 1 < items.len() {
            let merged = match (&items[i], &items[i + 1]) {
                (Conditioned::Lookahead(c), Conditioned::Plain(e))
                    if !e.nullable() && c.local.is_some() =>
                {
                    let (cls, _) = c.local.as_ref().unwrap();
                    Some(Conditioned::Plain(restrict_first(e, cls)))
                }
                (Conditioned::Plain(e), Conditioned::Lookbehind(c))
                    if !e.nullable() && c.local.is_some() =>
                {
                    let (cls, _) = c.local.as_ref().unwrap();
                    Some(Conditioned::Plain(restrict_last(e, cls)))
                }
                _ => None,
            };
            if let Some(m) = merged {
                items[i] = m;
                items.remove(i + 1);
                changed = true;
            } else {
                i += 1;
            }
        }
    }
    items
}

fn in_context_seq(items: Vec<Conditioned>, pfx: Expr, sfx: Expr, d: &Deadline) -> Result<Expr> {
    d.check()?;
    let mut items = resolve_local(flatten_seq(items));
    // Zero-width conditions at the same position commute: move prefix
    // conditions before suffix conditions (`(?!x)^` is `^(?!x)`).
    let mut swapped = true;
    while swapped {
        swapped = false;
        for i in 0..items.len().saturating_sub(1) {
            let (a, b) = (&items[i], &items[i + 1]);
            if zero_width(a)
                && zero_width(b)
                && kinds(a) == (false, true)
                && kinds(b) == (true, false)
            {
                items.swap(i, i + 1);
                swapped = true;
            }
        }
    }
    let ks: Vec<(bool, bool)> = items.iter().map(kinds).collect();
    // Distribute over the first item that has both kinds of conditions.
    if let Some(i) = ks.iter().position(|&(a, b)| a && b) {
        return distribute(&items, i, pfx, sfx, d);
    }
    let last_lb = ks.iter().rposition(|k| k.0);
    let first_la = ks.iter().position(|k| k.1);
    match (last_lb, first_la) {
        (None, _) => Ok(seq(vec![pfx, prepend_all(&items, sfx, d)?])),
        (Some(_), None) => Ok(seq(vec![append_all(&items, pfx, d)?, sfx])),
        (Some(l), Some(f)) if l < f => {
            let left = append_all(&items[..=l], pfx, d)?;
            let right = prepend_all(&items[l + 1..], sfx, d)?;
            let e = seq(vec![left, right]);
            check_size(&e)?;
            Ok(e)
        }
        (Some(l), Some(f)) => {
            // A suffix condition before a prefix condition: try splitting
            // an alternation between them into separate sequences.
            if let Some(i) = (f..=l).find(|&i| matches!(items[i], Conditioned::Alt(_))) {
                return distribute(&items, i, pfx, sfx, d);
            }
            Err(unsupported(
                first_at(&items[f]),
                format!(
                    "a lookahead-type assertion ($, \\b, (?=...)) followed, in the same sequence, \
                     by a lookbehind-type assertion (^, \\b, (?<=...)) at offset {}",
                    first_at(&items[l])
                ),
            ))
        }
    }
}

/// `items` with item `i` (an alternation, or a bounded repetition written
/// out as one) replaced by each of its branches in turn.
fn distribute(items: &[Conditioned], i: usize, pfx: Expr, sfx: Expr, d: &Deadline) -> Result<Expr> {
    let branches: Vec<Conditioned> = match &items[i] {
        Conditioned::Alt(v) => v.clone(),
        Conditioned::Repeat {
            body,
            min,
            max: Some(max),
            ..
        } if *max <= 16 => (*min..=*max)
            .map(|n| Conditioned::Seq(vec![(**body).clone(); n as usize]))
            .collect(),
        other => {
            return Err(unsupported(
                first_at(other),
                "lookahead-type and lookbehind-type assertions (or a word boundary) together \
                 inside an unbounded or large repetition",
            ))
        }
    };
    let mut out = Vec::new();
    for b in branches {
        d.check()?;
        let mut v: Vec<Conditioned> = items[..i].to_vec();
        v.push(b);
        v.extend(items[i + 1..].iter().cloned());
        out.push(in_context_seq(v, pfx.clone(), sfx.clone(), d)?);
        check_size(out.last().unwrap())?;
    }
    let e = alt(out);
    check_size(&e)?;
    Ok(e)
}

/// `acc` (the language of everything before) followed by `items`, whose
/// prefix conditions constrain what came before them.
fn append_all(items: &[Conditioned], acc: Expr, d: &Deadline) -> Result<Expr> {
    let mut acc = acc;
    for it in items {
        acc = append(it, acc, d)?;
    }
    Ok(acc)
}

/// `acc` followed by one item (see [`append_all`]).
fn append(p: &Conditioned, acc: Expr, d: &Deadline) -> Result<Expr> {
    d.check()?;
    Ok(match p {
        Conditioned::Plain(e) => seq(vec![acc, e.clone()]),
        Conditioned::Lookbehind(c) => and(vec![acc, c.lang.clone()]),
        Conditioned::Lookahead(c) => {
            return Err(Error::new(
                crate::error::ErrorKind::Internal,
                format!("regex: misplaced suffix condition at offset {}", c.at),
            ))
        }
        Conditioned::Seq(v) => append_all(&flatten_seq(v.clone()), acc, d)?,
        Conditioned::Alt(v) => {
            let mut plains = Vec::new();
            let mut out = Vec::new();
            for x in v {
                match to_plain(x) {
                    Some(e) => plains.push(e),
                    None => out.push(append(x, acc.clone(), d)?),
                }
            }
            if !plains.is_empty() {
                out.push(seq(vec![acc, alt(plains)]));
            }
            alt(out)
        }
        Conditioned::Repeat { body, min, max, at } => {
            if let Some(e) = to_plain(body) {
                return Ok(seq(vec![acc, repeat(e, *min, *max)]));
            }
            // Iterations are interchangeable: the open-ended part first,
            // where `acc` is still simple.
            let mut acc = acc;
            match max {
                None => acc = append_star(body, acc, *at)?,
                Some(m) => {
                    for _ in 0..m - min {
                        acc = alt(vec![acc.clone(), append(body, acc, d)?]);
                        check_size(&acc)?;
                    }
                }
            }
            for _ in 0..*min {
                acc = append(body, acc, d)?;
                check_size(&acc)?;
            }
            acc
        }
    })
}

/// `items` followed by `acc` (the language of everything after), whose
/// suffix conditions constrain what comes after them.
fn prepend_all(items: &[Conditioned], acc: Expr, d: &Deadline) -> Result<Expr> {
    let mut acc = acc;
    for it in items.iter().rev() {
        acc = prepend(it, acc, d)?;
    }
    Ok(acc)
}

/// One item followed by `acc` (see [`prepend_all`]).
fn prepend(p: &Conditioned, acc: Expr, d: &Deadline) -> Result<Expr> {
    d.check()?;
    Ok(match p {
        Conditioned::Plain(e) => seq(vec![e.clone(), acc]),
        Conditioned::Lookahead(c) => and(vec![acc, c.lang.clone()]),
        Conditioned::Lookbehind(c) => {
            return Err(Error::new(
                crate::error::ErrorKind::Internal,
                format!("regex: misplaced prefix condition at offset {}", c.at),
            ))
        }
        Conditioned::Seq(v) => prepend_all(&flatten_seq(v.clone()), acc, d)?,
        Conditioned::Alt(v) => {
            let mut plains = Vec::new();
            let mut out = Vec::new();
            for x in v {
                match to_plain(x) {
                    Some(e) => plains.push(e),
                    None => out.push(prepend(x, acc.clone(), d)?),
                }
            }
            if !plains.is_empty() {
                out.push(seq(vec![alt(plains), acc]));
            }
            alt(out)
        }
        Conditioned::Repeat { body, min, max, at } => {
            if let Some(e) = to_plain(body) {
                return Ok(seq(vec![repeat(e, *min, *max), acc]));
            }
            let mut acc = acc;
            match max {
                None => acc = prepend_star(body, acc, *at)?,
                Some(m) => {
                    for _ in 0..m - min {
                        acc = alt(vec![acc.clone(), prepend(body, acc, d)?]);
                        check_size(&acc)?;
                    }
                }
            }
            for _ in 0..*min {
                acc = prepend(body, acc, d)?;
                check_size(&acc)?;
            }
            acc
        }
    })
}

/// A loop body that reads exactly one character: (conditions before,
/// the character class, conditions after).
fn single_step(body: &Conditioned) -> Option<(Vec<Cond>, CharClass, Vec<Cond>)> {
    let items = resolve_local(flatten_seq(vec![body.clone()]));
    let pos = items.iter().position(|x| !zero_width(x))?;
    let class = match &items[pos] {
        Conditioned::Plain(Expr::Class(c)) => c.clone(),
        Conditioned::Plain(Expr::Literal(s)) if s.chars().count() == 1 => {
            CharClass::single(s.chars().next().unwrap() as u32)
        }
        _ => return None,
    };
    let conds = |v: &[Conditioned]| -> Option<Vec<Cond>> {
        v.iter()
            .map(|x| match x {
                Conditioned::Lookbehind(c) | Conditioned::Lookahead(c) => Some(vec![c.clone()]),
                Conditioned::Seq(s) if s.is_empty() => Some(Vec::new()),
                _ => None,
            })
            .collect::<Option<Vec<Vec<Cond>>>>()
            .map(|v| v.into_iter().flatten().collect())
    };
    Some((conds(&items[..pos])?, class, conds(&items[pos + 1..])?))
}

fn star_error(at: usize, front: bool) -> Error {
    unsupported(
        at,
        if front {
            "a lookbehind inside an unbounded repetition; supported only when each step \
             reads one character of a class that cannot end what comes before the \
             repetition (like ^((?<!a).)* or ,((?<!a)[^,])*)"
        } else {
            "a lookahead inside an unbounded repetition; supported only when each step \
             reads one character of a class that cannot start what follows the \
             repetition (like ((?!ab).)*$ or ((?!ab)[^,])*,)"
        },
    )
}

/// `acc · body*` where `body` has prefix conditions, for a body that
/// reads one character of class `C` per step. When no string of `acc` ends
/// with a `C` character, the steps are exactly the longest suffix of `C`
/// characters, so "every step's condition holds" is a condition on the
/// whole string: no prefix that fails a condition is followed by steps
/// only.
fn append_star(body: &Conditioned, acc: Expr, at: usize) -> Result<Expr> {
    if is_any_star(&acc) {
        // Zero iterations already give every string.
        return Ok(acc);
    }
    let (before, class, after) = single_step(body).ok_or_else(|| star_error(at, true))?;
    if !edge_chars(&acc, true).intersect(&class).is_empty() {
        return Err(star_error(at, true));
    }
    let cs = Expr::Class(class);
    // Checked before reading each character, and after it.
    let bad1 = not(Cond::and(&before).lang);
    let bad2 = not(Cond::and(&after).lang);
    Ok(and(vec![
        seq(vec![acc, repeat(cs.clone(), 0, None)]),
        not(seq(vec![bad1, repeat(cs.clone(), 1, None)])),
        not(seq(vec![
            and(vec![bad2, seq(vec![any_star(), cs.clone()])]),
            repeat(cs, 0, None),
        ])),
    ]))
}

/// `body* · acc` where `body` has suffix conditions: the mirror of
/// [`append_star`] (no string of `acc` may start with a `C` character).
fn prepend_star(body: &Conditioned, acc: Expr, at: usize) -> Result<Expr> {
    if is_any_star(&acc) {
        return Ok(acc);
    }
    let (before, class, after) = single_step(body).ok_or_else(|| star_error(at, false))?;
    if !edge_chars(&acc, false).intersect(&class).is_empty() {
        return Err(star_error(at, false));
    }
    let cs = Expr::Class(class);
    let bad1 = not(Cond::and(&before).lang);
    let bad2 = not(Cond::and(&after).lang);
    Ok(and(vec![
        seq(vec![repeat(cs.clone(), 0, None), acc]),
        not(seq(vec![
            repeat(cs.clone(), 0, None),
            and(vec![bad1, seq(vec![cs.clone(), any_star()])]),
        ])),
        not(seq(vec![repeat(cs, 1, None), bad2])),
    ]))
}
