//! The builders of a lexeme, a counted JSON string and a regular part,
//! which a [`LexemeSource`] calls on a miss; [`Uncached`], the source
//! that keeps nothing; and "any string" ([`StringBody`], [`string_body`]).

use super::boolean;
use super::counted::{self, Counter};
use super::iterations::{counted_repetition, Counted, ITERATIONS_COUNTED_STATES};
use super::json_string::{self, CpDfa};
use super::length_and_iterations::{self, LENGTH_AND_ITERATIONS_COUNTED_STATES};
use super::string_trie::{StringTrie, STRING_TRIE_MIN_NODES};
use std::sync::Arc;

use super::dfa_table::Table;
use super::lexeme_source::{LexemeSource, StringBody};
use super::table::{table_from_hir, table_from_hir_within, to_hir, too_large};
use super::{count_span, has_boolean, minimize, Computed, DfaLimits, LexemeDfa, DEAD};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{Expr, JsonStrings};
use crate::util::hash::FastMap;

/// A [`LexemeSource`] that keeps nothing: every call builds.
pub struct Uncached;

impl LexemeSource for Uncached {
    fn lexeme(&self, expr: &Expr, limits: &DfaLimits) -> Result<Option<Arc<LexemeDfa>>> {
        Ok(build_lexeme(expr, limits, self)?.map(Arc::new))
    }

    fn counted_lexeme(
        &self,
        _expr: &Expr,
        pattern: &Expr,
        min: u32,
        max: Option<u32>,
        limits: &DfaLimits,
    ) -> Result<Option<Arc<LexemeDfa>>> {
        let Some(body) = string_body(self) else {
            return Ok(None);
        };
        Ok(build_counted_lexeme(pattern, min, max, limits, &body, self)?.map(Arc::new))
    }

    fn part(&self, expr: &Expr, limits: &DfaLimits) -> Result<Arc<Table>> {
        Ok(Arc::new(build_part(expr, limits, self)?))
    }
}

/// The lexeme of `expr`; `None` when the automaton of an expression
/// without intersection or complement would pass `limits.max_bytes`: the
/// compiler then matches that part another way (as a parser rule, see
/// `compile_ir`). Where a DFA cannot be had at all (intersections,
/// complements) the size is an error. Regular parts of intersections come
/// from `parts`. A large set of JSON strings is a [`StringTrie`], with no
/// table.
pub fn build_lexeme(
    expr: &Expr,
    limits: &DfaLimits,
    parts: &dyn LexemeSource,
) -> Result<Option<LexemeDfa>> {
    match counted_repetition(expr, ITERATIONS_COUNTED_STATES, limits, parts)? {
        Some(Counted::Iterations(counted)) => {
            if let Some(built) = counted.into_lexeme(limits)? {
                return Ok(Some(built));
            }
        }
        Some(Counted::ClassLength(c)) => {
            if let Some(body) = string_body(parts) {
                return build_counted_lexeme(&c.pattern, c.min, c.max, limits, &body, parts);
            }
        }
        None => {}
    }
    let mut built = if let Expr::JsonStrings(js) = expr {
        strings_lexeme(js, limits)?
    } else {
        let table = if has_boolean(expr) {
            match boolean::table_of(expr, limits, parts) {
                Ok(t) => t,
                // Only the JSON strings of plain patterns make it boolean:
                // too large as one automaton, it becomes parser rules, as
                // any other plain regular expression does (`compile_ir`
                // spells the pattern out there).
                Err(e) if e.kind() == ErrorKind::Limit && booleans_are_plain_patterns(expr) => {
                    limits.deadline.check()?;
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        } else {
            match table_from_hir_within(&to_hir(expr), limits)? {
                Some(t) => Arc::new(t),
                None => return Ok(None),
            }
        };
        LexemeDfa::from_table_by(Arc::unwrap_or_clone(table), &limits.deadline)?
    };
    built.count_span = count_span(expr);
    Ok(Some(built))
}

/// Every node of `expr` that only exists as a DFA is the JSON strings of
/// a pattern without intersection or complement ([`Expr::JsonQuoted`]).
fn booleans_are_plain_patterns(expr: &Expr) -> bool {
    match expr {
        Expr::JsonQuoted(chars) => !has_boolean(chars),
        Expr::And(_)
        | Expr::Not(_)
        | Expr::JsonStrings(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_)
        | Expr::Rfc3339(_) => false,
        _ => {
            let mut plain = true;
            expr.for_each_child(|c| plain = plain && booleans_are_plain_patterns(c));
            plain
        }
    }
}

/// The lexeme of a set of JSON strings: its table, or past
/// [`STRING_TRIE_MIN_NODES`] trie nodes (a set that is not negated) the
/// trie alone.
fn strings_lexeme(js: &JsonStrings, limits: &DfaLimits) -> Result<LexemeDfa> {
    let mut meter = limits.deadline.meter();
    let cp = CpDfa::new(js, &mut meter)?;
    if !js.negated() && cp.children.len() >= STRING_TRIE_MIN_NODES {
        let trie = StringTrie::new(&cp, js.values().len(), limits.max_bytes, &mut meter)?;
        return Ok(LexemeDfa::of_string_trie(trie));
    }
    let table = json_string::table_of(&cp, js, limits, &mut meter)?;
    LexemeDfa::from_table_by(table, &limits.deadline)
}

/// The JSON strings of `pattern` (a quoted JSON string language) whose
/// decoded length is `min..=max` code points; `None` when `pattern` is not
/// a plain JSON string language. `body` is "any string" ([`string_body`]).
///
/// A pattern with a large bounded repetition under a maximum counts both
/// its iterations and the code points ([`length_and_iterations`]); one
/// class repeated is a length bound within both; otherwise the code
/// points are counted beside `pattern`'s automaton ([`count_code_points`]).
pub fn build_counted_lexeme(
    pattern: &Expr,
    min: u32,
    max: Option<u32>,
    limits: &DfaLimits,
    body: &StringBody,
    parts: &dyn LexemeSource,
) -> Result<Option<LexemeDfa>> {
    let spelled_states = if max.is_some() {
        LENGTH_AND_ITERATIONS_COUNTED_STATES
    } else {
        ITERATIONS_COUNTED_STATES
    };
    match counted_repetition(pattern, spelled_states, limits, parts)? {
        Some(Counted::Iterations(counted)) => {
            if let Some(max) = max {
                if let Some(built) = length_and_iterations::build(&counted, min, max, body, limits)?
                {
                    return Ok(Some(built));
                }
            }
        }
        Some(Counted::ClassLength(c)) => {
            let max = match (c.max, max) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            return count_code_points(&c.pattern, min.max(c.min), max, limits, body, parts);
        }
        None => {}
    }
    count_code_points(pattern, min, max, limits, body, parts)
}

/// The JSON strings of `pattern` whose decoded length is `min..=max` code
/// points, built as `pattern`'s automaton with a [`Counter`] next to it;
/// `None` when `pattern` is not a plain JSON string language.
pub fn count_code_points(
    pattern: &Expr,
    min: u32,
    max: Option<u32>,
    limits: &DfaLimits,
    body: &StringBody,
    parts: &dyn LexemeSource,
) -> Result<Option<LexemeDfa>> {
    let table = table(pattern, limits, parts)?;
    let Some(paired) = counted::pair_with_any_string(&table, body, &limits.deadline)? else {
        return Ok(None);
    };
    let mut built = LexemeDfa::from_table_by(paired.table, &limits.deadline)?;
    let mut meter = limits.deadline.meter();
    built.computed = Some(Box::new(Computed::Counted(Counter::new(
        &built,
        paired.inside,
        paired.boundary,
        min,
        max,
        &mut meter,
    )?)));
    Ok(Some(built))
}

/// The expression of "any JSON string" ([`StringBody`]).
pub fn any_string_expr() -> Expr {
    Expr::json_strings(Vec::new(), true)
}

/// "Any string" of `source` and the state after its opening quote; `None`
/// if its DFA passes the limits.
pub fn string_body(source: &dyn LexemeSource) -> Option<StringBody> {
    let dfa = source
        .lexeme(&any_string_expr(), &DfaLimits::default())
        .ok()??;
    let state = dfa.next(dfa.start, b'"');
    (state != DEAD).then_some(StringBody { dfa, state })
}

/// The DFA table of any regular expression, intersections and
/// complements included (their regular parts from `parts`).
pub fn table(expr: &Expr, limits: &DfaLimits, parts: &dyn LexemeSource) -> Result<Arc<Table>> {
    if has_boolean(expr) {
        boolean::table_of(expr, limits, parts)
    } else {
        Ok(Arc::new(build_part(expr, limits, parts)?))
    }
}

/// The table of a part: an expression without intersection or
/// complement, or the first two operands of a longer intersection (then
/// minimized, as it feeds another product: see `boolean::table_of`).
///
/// Literals before a common rest (`prefix` then the rest, or an
/// alternation of such with one rest) are a trie before the table of the
/// rest, which comes from `parts`: patterns that put different prefixes
/// before one long pattern (`^title_(BCP 47 tag)$`,
/// `^description_(BCP 47 tag)$`, and the union of those an object's
/// other keys exclude) determinize that pattern once rather than once
/// per prefix and per union (0.4-0.8 ms each for a BCP 47 tag).
pub fn build_part(expr: &Expr, limits: &DfaLimits, parts: &dyn LexemeSource) -> Result<Table> {
    if has_boolean(expr) {
        // The first two operands of an intersection (see
        // `boolean::table_of`): minimal, as they feed another product.
        return minimize(&*boolean::table_of(expr, limits, parts)?, &limits.deadline);
    }
    if let Some((prefixes, rest)) = prefixes_before_one_rest(expr) {
        let tail = parts.part(&rest, limits)?;
        return minimize(&prefixed(&prefixes, &tail), &limits.deadline);
    }
    table_from_hir(&to_hir(expr), limits)
}

/// `expr` as a set of texts followed by one rest, where no text is a
/// prefix of another (so that a trie's leaves are where the rest starts):
/// a sequence starting with literals, or an alternation of such
/// sequences whose rests are equal.
pub(super) fn prefixes_before_one_rest(expr: &Expr) -> Option<(Vec<Vec<u8>>, Expr)> {
    let split = |e: &Expr| -> Option<(Vec<u8>, Expr)> {
        let Expr::Seq(items) = e else { return None };
        let literals = items
            .iter()
            .take_while(|x| matches!(x, Expr::Literal(_)))
            .count();
        let mut prefix = Vec::new();
        for x in &items[..literals] {
            if let Expr::Literal(text) = x {
                prefix.extend_from_slice(text.as_bytes());
            }
        }
        if prefix.is_empty() || literals == items.len() {
            return None;
        }
        let rest = match &items[literals..] {
            [only] => only.clone(),
            more => Expr::Seq(more.to_vec()),
        };
        Some((prefix, rest))
    };
    let (mut prefixes, rest) = match expr {
        Expr::Alt(options) if options.len() > 1 => {
            let (first, rest) = split(&options[0])?;
            let mut prefixes = vec![first];
            for option in &options[1..] {
                let (prefix, other) = split(option)?;
                if other != rest {
                    return None;
                }
                prefixes.push(prefix);
            }
            (prefixes, rest)
        }
        _ => {
            let (prefix, rest) = split(expr)?;
            (vec![prefix], rest)
        }
    };
    prefixes.sort_unstable();
    prefixes.dedup();
    let prefix_free = prefixes.windows(2).all(|w| !w[1].starts_with(&w[0]));
    prefix_free.then_some((prefixes, rest))
}

/// The table of `prefixes` (none a prefix of another) followed by `t`'s
/// language: a trie whose last bytes lead into `t`'s start. Not minimal
/// where a state of `t` reads what is left of a prefix and then `t`'s
/// language.
fn prefixed(prefixes: &[Vec<u8>], t: &Table) -> Table {
    // A byte's class: its class in `t`, and the byte itself where a
    // prefix reads it.
    let mut in_prefix = [false; 256];
    for &b in prefixes.iter().flatten() {
        in_prefix[b as usize] = true;
    }
    let mut ids: FastMap<(u8, Option<u8>), u8> = FastMap::default();
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for b in 0..=255u8 {
        let key = (t.classes[b as usize], in_prefix[b as usize].then_some(b));
        let next = reps.len() as u8;
        let id = *ids.entry(key).or_insert(next);
        if id == next {
            reps.push(b);
        }
        classes[b as usize] = id;
    }
    let k = reps.len();
    // The trie's inner nodes, the root first; `t`'s states after them.
    let mut edges: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
    let mut leaves: Vec<(u32, u8)> = Vec::new();
    for prefix in prefixes {
        let (last, inner) = prefix.split_last().expect("prefixes are not empty");
        let mut node = 0u32;
        for &b in inner {
            node = match edges[node as usize].iter().find(|e| e.0 == b) {
                Some(&(_, child)) => child,
                None => {
                    let child = edges.len() as u32;
                    edges.push(Vec::new());
                    edges[node as usize].push((b, child));
                    child
                }
            };
        }
        leaves.push((node, *last));
    }
    let inner = edges.len();
    let mut trans = vec![DEAD; (inner + t.num_states()) * k];
    for (node, out) in edges.iter().enumerate() {
        for &(b, child) in out {
            trans[node * k + classes[b as usize] as usize] = child;
        }
    }
    for &(node, b) in &leaves {
        trans[node as usize * k + classes[b as usize] as usize] = inner as u32;
    }
    for s in 0..t.num_states() {
        let row = &mut trans[(inner + s) * k..(inner + s + 1) * k];
        for (slot, &r) in row.iter_mut().zip(&reps) {
            let q = t.next(s as u32, r);
            if q != DEAD {
                *slot = q + inner as u32;
            }
        }
    }
    let mut is_final = vec![false; inner];
    is_final.extend_from_slice(&t.is_final);
    Table {
        classes,
        num_classes: k,
        trans,
        is_final,
    }
}

/// The error of a lexeme over `limits.max_bytes`, for callers that need
/// an automaton where [`build_lexeme`] found none.
pub fn too_large_error(expr: &Expr, limits: &DfaLimits) -> Error {
    too_large(
        &to_hir(expr),
        "DFA",
        &format!("over {} bytes", limits.max_bytes),
    )
}
