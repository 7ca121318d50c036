//! Strings: sets of decoded string values, and their JSON encoding.
//!
//! A schema constrains the *decoded* string; the model writes its JSON
//! text. [`encode`] maps a regular language of decoded strings to the
//! exact language of their JSON string contents: each decoded code point
//! may be written raw (unless JSON forbids it raw: `"`, `\`, U+0000..U+001F),
//! as its short escape (`\" \\ \/ \b \f \n \r \t`), or as `\uXXXX` (hex
//! digits in either case; a code point above U+FFFF as a surrogate pair).
//! The encoding substitutes each code point independently, so it commutes
//! with concatenation, union and repetition; for intersection
//! `h(A ∩ B) = h(A) ∩ h(B)` (the substitution is injective on decodings)
//! and for complement `h(¬A) = h(Σ*) ∩ ¬h(A)`.

use std::collections::BTreeSet;

pub use crate::ir::{encode, encode_class};
use crate::ir::{CharClass, Expr, Rfc3339, TextForm};
use crate::regex::expr::is_any_star;

/// A set of decoded strings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StrLang {
    /// Exactly these strings (enum and const values, listed keys).
    Lits(BTreeSet<String>),
    /// A regular language over code points (no `Ref`, no `Token`).
    Re(Expr),
}

pub fn any_string() -> Expr {
    Expr::star(Expr::Class(CharClass::any()))
}

impl StrLang {
    pub fn any() -> StrLang {
        StrLang::Re(any_string())
    }

    pub fn none() -> StrLang {
        StrLang::Lits(BTreeSet::new())
    }

    pub fn lit(s: &str) -> StrLang {
        StrLang::Lits([s.to_string()].into_iter().collect())
    }

    /// The language of a regular expression, as a finite set of strings
    /// when it is one (small enough to enumerate).
    pub fn from_expr(e: Expr) -> StrLang {
        match finite_strings(&e, 256) {
            Some(set) => StrLang::Lits(set),
            None => StrLang::Re(e),
        }
    }

    /// Equal to [`StrLang::any`], checked without building it.
    pub fn is_any(&self) -> bool {
        matches!(self, StrLang::Re(e) if is_any_star(e))
    }

    /// Provably empty (false does not mean non-empty).
    pub fn is_empty(&self) -> bool {
        match self {
            StrLang::Lits(s) => s.is_empty(),
            StrLang::Re(e) => *e == Expr::Nothing,
        }
    }

    pub fn to_expr(&self) -> Expr {
        match self {
            StrLang::Lits(s) => Expr::alt(s.iter().map(|x| Expr::literal(x)).collect()),
            StrLang::Re(e) => e.clone(),
        }
    }

    pub fn and(&self, o: &StrLang) -> StrLang {
        if self.is_any() {
            return o.clone();
        }
        if o.is_any() {
            return self.clone();
        }
        match (self, o) {
            (StrLang::Lits(a), StrLang::Lits(b)) => {
                StrLang::Lits(a.intersection(b).cloned().collect())
            }
            (StrLang::Lits(a), StrLang::Re(e)) | (StrLang::Re(e), StrLang::Lits(a)) => {
                StrLang::Lits(a.iter().filter(|s| matches(e, s)).cloned().collect())
            }
            (StrLang::Re(a), StrLang::Re(b)) => {
                if *a == Expr::Nothing || *b == Expr::Nothing || prefixes_apart(a, b) {
                    StrLang::Re(Expr::Nothing)
                } else if a == b {
                    self.clone()
                } else {
                    StrLang::Re(flat_and(a, b))
                }
            }
        }
    }

    pub fn or(&self, o: &StrLang) -> StrLang {
        if self.is_any() || o.is_empty() {
            return self.clone();
        }
        if o.is_any() || self.is_empty() {
            return o.clone();
        }
        match (self, o) {
            (StrLang::Lits(a), StrLang::Lits(b)) => StrLang::Lits(a.union(b).cloned().collect()),
            _ if self == o => self.clone(),
            _ => StrLang::Re(Expr::alt(vec![self.to_expr(), o.to_expr()])),
        }
    }

    pub fn not(&self) -> StrLang {
        if self.is_any() {
            return StrLang::none();
        }
        if self.is_empty() {
            return StrLang::any();
        }
        match self {
            StrLang::Re(Expr::Not(x)) => StrLang::Re((**x).clone()),
            _ => StrLang::Re(Expr::complement(self.to_expr())),
        }
    }

    /// Provably a subset of `o` (false does not mean it is not).
    pub fn is_subset(&self, o: &StrLang) -> bool {
        if o.is_any() || self.is_empty() || self == o {
            return true;
        }
        match (self, o) {
            (StrLang::Lits(a), _) => a.iter().all(|s| o.contains(s)),
            // ¬X ⊆ ¬Y when Y ⊆ X, for finite X and Y.
            (StrLang::Re(Expr::Not(x)), StrLang::Re(Expr::Not(y))) => {
                match (finite_strings(x, 256), finite_strings(y, 256)) {
                    (Some(x), Some(y)) => y.is_subset(&x),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// Whether `s` is in the set.
    pub fn contains(&self, s: &str) -> bool {
        match self {
            StrLang::Lits(l) => l.contains(s),
            any if any.is_any() => true,
            StrLang::Re(e) => matches(e, s),
        }
    }
}

/// `a ∧ b` as one flat intersection, so that the length parts of nested
/// ones are found (counted beside the rest, or left out when implied),
/// with its complements joined: ¬A ∧ ¬B = ¬(A ∨ B), one complement to
/// build instead of two.
fn flat_and(a: &Expr, b: &Expr) -> Expr {
    let mut parts: Vec<Expr> = Vec::new();
    let mut excluded: Vec<Expr> = Vec::new();
    for e in [a, b] {
        let inner = match e {
            Expr::And(inner) => &inner[..],
            one => std::slice::from_ref(one),
        };
        for p in inner {
            let (list, p) = match p {
                Expr::Not(x) => (&mut excluded, &**x),
                p => (&mut parts, p),
            };
            if !list.contains(p) {
                list.push(p.clone());
            }
        }
    }
    if !parts.is_empty() {
        excluded.retain_mut(|x| keep_excluded(x, &parts));
    }
    if !excluded.is_empty() {
        parts.push(Expr::complement(Expr::alt(excluded)));
    }
    Expr::and(parts)
}

/// The alternatives of `e`, nested alternations opened.
fn alternatives<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Alt(v) => v.iter().for_each(|x| alternatives(x, out)),
        e => out.push(e),
    }
}

/// Strings of one excluded alternative, past this many or past this many
/// characters in all, are not tested one by one (a membership test costs
/// up to the square of a string's length).
const MAX_EXCLUDED_STRINGS_TESTED: usize = 1024;
const MAX_EXCLUDED_CHARS_TESTED: usize = 16 * 1024;

/// Narrows `excluded`, a language taken out of the intersection of
/// `parts`, to the alternatives that can meet every part: the others are
/// out already. Whether anything is left to take out. Pattern keys are
/// made apart from the object's property names and from its other
/// patterns (`^title_..` minus `title`, minus `^description_..`); when
/// those cannot match anyway, the key is its pattern alone, one automaton
/// for every object that has it instead of one per object built at
/// 0.3-1 ms.
fn keep_excluded(excluded: &mut Expr, parts: &[Expr]) -> bool {
    let mut all = Vec::new();
    alternatives(excluded, &mut all);
    let mut kept = Vec::with_capacity(all.len());
    let mut narrowed = false;
    for x in all {
        if parts.iter().any(|p| prefixes_apart(p, x)) {
            narrowed = true;
            continue;
        }
        // Counted before they are listed: most alternatives are patterns
        // with far more strings, and listing them up to the limit (a set
        // of strings per step) was 18% of the compile instructions of
        // every tenth MaskBench schema.
        let testable = (count_at_most(x, MAX_EXCLUDED_STRINGS_TESTED as u64)
            <= MAX_EXCLUDED_STRINGS_TESTED as u64)
            .then(|| finite_strings(x, MAX_EXCLUDED_STRINGS_TESTED))
            .flatten()
            .filter(|strings| {
                strings.iter().map(String::len).sum::<usize>() <= MAX_EXCLUDED_CHARS_TESTED
            });
        match testable {
            Some(strings) => {
                let inside: Vec<&String> = strings
                    .iter()
                    .filter(|s| parts.iter().all(|p| matches(p, s)))
                    .collect();
                if inside.len() < strings.len() {
                    narrowed = true;
                    kept.extend(inside.into_iter().map(|s| Expr::literal(s)));
                } else {
                    kept.push(x.clone());
                }
            }
            None => kept.push(x.clone()),
        }
    }
    if narrowed {
        *excluded = Expr::alt(kept);
    }
    *excluded != Expr::Nothing
}

/// An upper bound on the number of strings of `e` as [`finite_strings`]
/// lists them (repeated strings counted each time), or `cap + 1` when it
/// passes `cap` or `finite_strings` would give up; computed without
/// listing any.
fn count_at_most(e: &Expr, cap: u64) -> u64 {
    let over = cap + 1;
    match e {
        Expr::Empty | Expr::Literal(_) => 1,
        Expr::Nothing => 0,
        Expr::Class(c) => c.count().min(over),
        Expr::Seq(v) => v
            .iter()
            .try_fold(1u64, |acc, x| {
                let n = count_at_most(x, cap);
                (acc == 0 || n == 0 || acc.saturating_mul(n) <= cap)
                    .then(|| acc * n)
                    .ok_or(over)
            })
            .unwrap_or(over),
        Expr::Alt(v) => v
            .iter()
            .try_fold(0u64, |acc, x| {
                let n = acc + count_at_most(x, cap);
                (n <= cap).then_some(n).ok_or(over)
            })
            .unwrap_or(over),
        Expr::Repeat {
            expr,
            min,
            max: Some(max),
        } if *max <= 16 => {
            let part = count_at_most(expr, cap);
            let mut total = 0u64;
            let mut power = 1u64;
            for k in 0..=*max {
                if k >= *min {
                    total = total.saturating_add(power);
                }
                power = power.saturating_mul(part);
                if total > cap || (power > cap && k < *max) {
                    return over;
                }
            }
            total
        }
        _ => over,
    }
    .min(over)
}

/// The strings of `e` when they are at most `cap` (and `e` has no
/// unbounded repetition).
pub fn finite_strings(e: &Expr, cap: usize) -> Option<BTreeSet<String>> {
    let one = |s: String| -> BTreeSet<String> { [s].into_iter().collect() };
    Some(match e {
        Expr::Empty => one(String::new()),
        Expr::Nothing => BTreeSet::new(),
        Expr::Literal(s) => one(s.clone()),
        Expr::Class(c) => {
            if c.count() > cap as u64 {
                return None;
            }
            let mut out = BTreeSet::new();
            for &(lo, hi) in c.ranges() {
                for cp in lo..=hi {
                    out.insert(char::from_u32(cp)?.to_string());
                }
            }
            out
        }
        Expr::Seq(v) => {
            let mut acc = one(String::new());
            for x in v {
                let part = finite_strings(x, cap)?;
                let mut next = BTreeSet::new();
                for a in &acc {
                    for b in &part {
                        next.insert(format!("{a}{b}"));
                        if next.len() > cap {
                            return None;
                        }
                    }
                }
                acc = next;
            }
            acc
        }
        Expr::Alt(v) => {
            let mut acc = BTreeSet::new();
            for x in v {
                acc.extend(finite_strings(x, cap)?);
                if acc.len() > cap {
                    return None;
                }
            }
            acc
        }
        Expr::Repeat { expr, min, max } => {
            let max = (*max)?;
            if max > 16 {
                return None;
            }
            let part = finite_strings(expr, cap)?;
            let mut acc = BTreeSet::new();
            let mut cur = one(String::new());
            for k in 0..=max {
                if k >= *min {
                    acc.extend(cur.iter().cloned());
                }
                if k == max {
                    break;
                }
                let mut next = BTreeSet::new();
                for a in &cur {
                    for b in &part {
                        next.insert(format!("{a}{b}"));
                        if next.len() > cap {
                            return None;
                        }
                    }
                }
                cur = next;
            }
            if acc.len() > cap {
                return None;
            }
            acc
        }
        _ => return None,
    })
}

/// Whether the decoded string `s` is in the language of `e` (a regular
/// expression with intersection and complement), by computing for each
/// sub-expression the set of end positions reachable from a start.
pub fn matches(e: &Expr, s: &str) -> bool {
    let chars: Vec<u32> = s.chars().map(|c| c as u32).collect();
    ends(e, &chars, 0).contains(&chars.len())
}

fn ends(e: &Expr, s: &[u32], start: usize) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    match e {
        Expr::Empty => {
            out.insert(start);
        }
        // (Not a decoded string: JSON text.)
        Expr::Nothing
        | Expr::Ref(_)
        | Expr::Token(_)
        | Expr::JsonStrings(_)
        | Expr::JsonQuoted(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_) => {}
        Expr::Rfc3339(r) if r.form != TextForm::Chars => {}
        Expr::Rfc3339(r) => {
            let text: String = s[start..]
                .iter()
                .filter_map(|&c| char::from_u32(c))
                .collect();
            let cuts = text.char_indices().map(|(i, _)| i).chain([text.len()]);
            for (n, i) in cuts.enumerate() {
                if r.matches(&text[..i]) {
                    out.insert(start + n);
                }
            }
        }
        Expr::Literal(l) => {
            let lc: Vec<u32> = l.chars().map(|c| c as u32).collect();
            if s.len() >= start + lc.len() && s[start..start + lc.len()] == lc[..] {
                out.insert(start + lc.len());
            }
        }
        Expr::Class(c) => {
            if start < s.len() && c.contains(s[start]) {
                out.insert(start + 1);
            }
        }
        Expr::Seq(v) => {
            let mut cur: BTreeSet<usize> = [start].into_iter().collect();
            for x in v {
                let mut next = BTreeSet::new();
                for &p in &cur {
                    next.extend(ends(x, s, p));
                }
                cur = next;
                if cur.is_empty() {
                    break;
                }
            }
            out = cur;
        }
        Expr::Alt(v) => {
            for x in v {
                out.extend(ends(x, s, start));
            }
        }
        Expr::Repeat { expr, min, max } => {
            let mut cur: BTreeSet<usize> = [start].into_iter().collect();
            let mut seen: BTreeSet<usize> = BTreeSet::new();
            let mut n = 0u32;
            if *min == 0 {
                out.insert(start);
            }
            loop {
                if max.is_some_and(|m| n >= m) || cur.is_empty() {
                    break;
                }
                let mut next = BTreeSet::new();
                for &p in &cur {
                    next.extend(ends(expr, s, p));
                }
                n += 1;
                if n >= *min {
                    out.extend(next.iter().copied());
                }
                // Past the minimum, positions already expanded add nothing.
                if n >= *min {
                    next.retain(|p| seen.insert(*p));
                }
                cur = next;
            }
        }
        Expr::And(v) => {
            let mut first = true;
            for x in v {
                let r = ends(x, s, start);
                if first {
                    out = r;
                    first = false;
                } else {
                    out = out.intersection(&r).copied().collect();
                }
            }
        }
        Expr::Not(x) => {
            let r = ends(x, s, start);
            for p in start..=s.len() {
                if !r.contains(&p) {
                    out.insert(p);
                }
            }
        }
    }
    out
}

/// The canonical JSON text of a string (as `serde_json` and Python's
/// `json.dumps(ensure_ascii=False)` write it), quotes included.
pub fn canonical_json(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether `a` and `b` provably share no string: some conjunct of each
/// (nested intersections opened) starts with a text the other's does not
/// (`^table ` against `^view `).
fn prefixes_apart(a: &Expr, b: &Expr) -> bool {
    fn conjuncts(e: &Expr, out: &mut Vec<String>) {
        match e {
            Expr::And(parts) => parts.iter().for_each(|p| conjuncts(p, out)),
            e => out.push(literal_prefix(e)),
        }
    }
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    conjuncts(a, &mut pa);
    conjuncts(b, &mut pb);
    pa.iter().filter(|x| !x.is_empty()).any(|x| {
        pb.iter()
            .any(|y| !x.starts_with(y.as_str()) && !y.starts_with(x.as_str()))
    })
}

/// A prefix every string of `e` starts with (from its leading literal
/// text; empty when there is none). Patterns anchored at a word
/// (`^table `, `^view `) are told apart by it.
fn literal_prefix(e: &Expr) -> String {
    let mut out = String::new();
    fn walk(e: &Expr, out: &mut String) -> bool {
        match e {
            Expr::Literal(s) => {
                out.push_str(s);
                true
            }
            Expr::Empty => true,
            Expr::Class(c) if c.count() == 1 => match c.ranges().first() {
                Some(&(lo, _)) => match char::from_u32(lo) {
                    Some(ch) => {
                        out.push(ch);
                        true
                    }
                    None => false,
                },
                None => false,
            },
            Expr::Seq(parts) => parts.iter().all(|p| walk(p, out)),
            _ => false,
        }
    }
    walk(e, &mut out);
    out
}

/// The JSON text (quotes included) of every string of the language.
///
/// Finite sets of values and their complements (enumerations, property
/// names, "any other name") become [`Expr::JsonStrings`] nodes, which the
/// lexeme builder makes DFAs of directly, without their spellings.
pub fn encode_lang(l: &StrLang) -> Expr {
    if let StrLang::Re(e @ Expr::And(_)) = l {
        if let Some(e) = rfc3339_within_lengths(e, false) {
            return encode_lang(&StrLang::Re(e));
        }
    }
    if let StrLang::Re(e) = l {
        if let Some(e) = split_negated_literals(e) {
            return encode_lang(&StrLang::Re(e));
        }
    }
    if l.is_any() {
        return Expr::json_strings(Vec::new(), true);
    }
    let body = match l {
        StrLang::Lits(s) => return Expr::json_strings(s.iter().cloned(), false),
        StrLang::Re(Expr::Not(x)) => match literal_values(x) {
            Some(values) => return Expr::json_strings(values, true),
            None if !mentions_rfc3339(x) => return Expr::json_quoted(Expr::Not(x.clone())),
            None => encode(&Expr::Not(x.clone())),
        },
        StrLang::Re(Expr::And(parts)) if parts.iter().any(|p| many_negated_values(p).is_some()) => {
            // Quotes distribute over an intersection of JSON texts; the
            // parts other than excluded values stay one intersection over
            // code points (a product of their spellings costs several
            // times as much).
            let mut quoted = Vec::new();
            let mut rest = Vec::new();
            for p in parts {
                match many_negated_values(p) {
                    Some(values) => quoted.push(Expr::json_strings(values, true)),
                    None => rest.push(p.clone()),
                }
            }
            if !rest.is_empty() {
                quoted.push(encode_lang(&StrLang::Re(Expr::and(rest))));
            }
            return Expr::and(quoted);
        }
        StrLang::Re(e) if !mentions_rfc3339(e) => return Expr::json_quoted(e.clone()),
        // A `time` or `date-time` with a `pattern`: their product is a
        // lexeme of its own anyway. Over code points (11,000 states for
        // the format) it is built and minimized before it is spelled out,
        // instead of a product of spellings (66,000 states times the
        // pattern's: 140,000 states and 90 ms for an unanchored one).
        StrLang::Re(e @ Expr::And(_)) => return Expr::json_quoted(e.clone()),
        StrLang::Re(e) => encode(e),
    };
    // A date-time quoted is a leaf of its own, and the quotes go into
    // alternatives that hold one: the date-time stays a lexeme shared by
    // every schema, not part of a larger DFA.
    fn quoted(e: Expr) -> Expr {
        match e {
            Expr::Rfc3339(r) if r.form == TextForm::Spelled => Expr::Rfc3339(Rfc3339 {
                form: TextForm::Quoted,
                ..r
            }),
            Expr::Alt(v) if v.iter().any(|x| matches!(x, Expr::Rfc3339(_))) => {
                Expr::alt(v.into_iter().map(quoted).collect())
            }
            e => Expr::seq(vec![Expr::literal("\""), e, Expr::literal("\"")]),
        }
    }
    match body {
        // The quotes are fixed, so they distribute over an intersection,
        // and `"` ¬Y `"` within the other (quoted) parts is ¬(`"` Y `"`):
        // the parts become plain regular expressions and complements of
        // them, which the lexeme builder intersects directly instead of
        // running a subset construction around an intersection.
        Expr::And(parts) if parts.iter().any(|p| !matches!(p, Expr::Not(_))) => Expr::and(
            parts
                .into_iter()
                .map(|p| match p {
                    Expr::Not(y) => Expr::complement(quoted(*y)),
                    p => quoted(p),
                })
                .collect(),
        ),
        body => quoted(body),
    }
}

/// `e` holds a `time` or `date-time` leaf ([`Expr::Rfc3339`]): such a
/// language stays spelled out, so that the leaf (66,000 states) remains a
/// lexeme of its own that every schema shares.
fn mentions_rfc3339(e: &Expr) -> bool {
    if matches!(e, Expr::Rfc3339(_)) {
        return true;
    }
    let mut found = false;
    e.for_each_child(|c| found = found || mentions_rfc3339(c));
    found
}

/// A `time` or `date-time` ([`Expr::Rfc3339`]) intersected with length
/// bounds: a lower bound they all meet is dropped. With any other bound,
/// unless `keep_exact` (a count kept beside the automaton, see
/// `LexemeHint::Counted`), the leap seconds are taken at 23:59 UTC only
/// ([`LeapSeconds::Utc`]): a product automaton remembering the local time
/// and the length of a fraction at once takes hundreds of thousands of
/// states. `None` when there is no such pair.
///
/// [`LeapSeconds::Utc`]: crate::regex::formats::LeapSeconds::Utc
pub fn rfc3339_within_lengths(e: &Expr, keep_exact: bool) -> Option<Expr> {
    fn flatten(e: &Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::And(v) => v.iter().for_each(|x| flatten(x, out)),
            x => out.push(x.clone()),
        }
    }
    let mut parts = Vec::new();
    flatten(e, &mut parts);
    let r = parts.iter().find_map(|p| match p {
        Expr::Rfc3339(r) if r.form == TextForm::Chars => Some(*r),
        _ => None,
    })?;
    let is_length = |p: &Expr| matches!(p, Expr::Repeat { expr, .. } if matches!(&**expr, Expr::Class(c) if c.is_any()));
    if !parts.iter().any(is_length) {
        return None;
    }
    // `00:00:00Z`, `0000-01-01T00:00:00Z`.
    let shortest = if r.date { 20 } else { 9 };
    parts.retain(
        |p| !matches!(p, Expr::Repeat { min, max: None, .. } if is_length(p) && *min <= shortest),
    );
    if !keep_exact && parts.iter().any(is_length) {
        let utc = crate::regex::formats::FormatOptions {
            leap_seconds: crate::regex::formats::LeapSeconds::Utc,
            ..Default::default()
        };
        let format = if r.date { "date-time" } else { "time" };
        let rule = crate::regex::formats::format_expr_with(format, &utc)?;
        for p in parts.iter_mut() {
            if *p == Expr::Rfc3339(r) {
                *p = rule.clone();
            }
        }
    }
    Some(Expr::and(parts))
}

/// The strings of an alternation of literals (the form of a listed set).
fn literal_values(e: &Expr) -> Option<Vec<String>> {
    let one = |x: &Expr| match x {
        Expr::Literal(s) => Some(s.clone()),
        Expr::Empty => Some(String::new()),
        _ => None,
    };
    match e {
        Expr::Alt(v) => v.iter().map(one).collect(),
        Expr::Nothing => Some(Vec::new()),
        x => one(x).map(|s| vec![s]),
    }
}

/// `¬(L ∪ R)` as `¬L ∧ ¬R` where `L` are literals and `R` is not (the
/// names an object lists beside its `patternProperties`), in `e` or in
/// the parts of an intersection `e`: `¬L` then becomes a
/// [`Expr::JsonStrings`] node, built directly, instead of every spelling
/// of every listed name going through a subset construction with `R`
/// (3-5 ms per object of `web-types.json`). `None` when there is nothing
/// to split.
fn split_negated_literals(e: &Expr) -> Option<Expr> {
    fn split(e: &Expr) -> Option<[Expr; 2]> {
        let Expr::Not(x) = e else {
            return None;
        };
        let mut all = Vec::new();
        alternatives(x, &mut all);
        let (lits, others): (Vec<&Expr>, Vec<&Expr>) = all
            .into_iter()
            .partition(|x| matches!(x, Expr::Literal(_) | Expr::Empty));
        if lits.is_empty() || others.is_empty() {
            return None;
        }
        let alt = |v: Vec<&Expr>| Expr::alt(v.into_iter().cloned().collect());
        Some([Expr::complement(alt(lits)), Expr::complement(alt(others))])
    }
    match e {
        Expr::And(parts) if parts.iter().any(|p| split(p).is_some()) => Some(Expr::and(
            parts
                .iter()
                .flat_map(|p| match split(p) {
                    Some(two) => two.to_vec(),
                    None => vec![p.clone()],
                })
                .collect(),
        )),
        e => split(e).map(|two| Expr::and(two.to_vec())),
    }
}

/// The values of a complemented listed set.
fn negated_values(e: &Expr) -> Option<Vec<String>> {
    match e {
        Expr::Not(x) => literal_values(x),
        _ => None,
    }
}

/// Excluded values (the names an object lists beside its
/// `patternProperties`) from which they become an automaton of their own
/// in an intersection, built directly from their trie
/// ([`Expr::JsonStrings`]). Fewer join the intersection of the other parts
/// over code points, where a few dozen names cost little, instead of a
/// product of two spelled automata (60 objects of `Github_ultra---o12344`
/// with about 12 names each: compile 84 -> 76 ms).
const EXCLUDED_APART_FROM: usize = 64;

/// The values `¬(v1 | v2 | ...)` excludes, when they are many (see
/// [`EXCLUDED_APART_FROM`]).
fn many_negated_values(e: &Expr) -> Option<Vec<String>> {
    negated_values(e).filter(|v| v.len() >= EXCLUDED_APART_FROM)
}

/// Strings of `min..=max` code points.
pub fn length(min: u32, max: Option<u32>) -> Expr {
    Expr::repeat(Expr::Class(CharClass::any()), min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Intersections of intersections are one, their complements joined.
    #[test]
    fn intersections_stay_flat() {
        let lit = |s: &str| Expr::literal(s);
        let not = |e: Expr| Expr::complement(e);
        let a_word = Expr::seq(vec![
            lit("a"),
            Expr::star(Expr::Class(CharClass::from_ranges([(97, 122)]))),
        ]);
        let a = StrLang::Re(Expr::And(vec![a_word.clone(), not(lit("ab"))]));
        let b = StrLang::Re(Expr::And(vec![
            length(2, Some(5)),
            not(lit("ac")),
            a_word.clone(),
        ]));
        let StrLang::Re(Expr::And(parts)) = a.and(&b) else {
            panic!("an intersection");
        };
        assert_eq!(
            parts,
            vec![
                a_word,
                length(2, Some(5)),
                not(Expr::alt(vec![lit("ab"), lit("ac")]))
            ]
        );
    }

    #[test]
    fn exclusions_outside_the_intersection_are_left_out() {
        let lit = |s: &str| Expr::literal(s);
        let word = |prefix: &str| {
            Expr::seq(vec![
                lit(prefix),
                Expr::plus(Expr::Class(CharClass::from_ranges([(97, 122)]))),
            ])
        };
        // Property names and other patterns beside a pattern key: only
        // what the pattern can match stays excluded.
        let key = StrLang::Re(word("title_"));
        let others = StrLang::Re(Expr::alt(vec![
            word("description_"),
            lit("title"),
            lit("title_x"),
            Expr::alt(vec![lit("id"), lit("title_y")]),
        ]));
        let StrLang::Re(e) = key.and(&others.not()) else {
            panic!("a pattern");
        };
        assert_eq!(
            e,
            Expr::and(vec![
                word("title_"),
                Expr::complement(Expr::alt(vec![lit("title_x"), lit("title_y")]))
            ])
        );
        assert!(matches(&e, "title_z") && !matches(&e, "title_x") && !matches(&e, "title_y"));
        // Nothing the pattern matches: the pattern alone.
        let names = StrLang::Lits(["title", "id"].iter().map(|s| s.to_string()).collect());
        assert_eq!(key.and(&names.not()), key);
        // Names too long to test one by one stay excluded, all of them.
        let long: BTreeSet<String> = (0..20)
            .map(|i| format!("title_{}", "x".repeat(1000 + i)))
            .collect();
        let StrLang::Re(e) = key.and(&StrLang::Lits(long.clone()).not()) else {
            panic!("a pattern");
        };
        assert!(long.iter().all(|name| !matches(&e, name)) && matches(&e, "title_y"));
    }

    #[test]
    fn strings_are_counted_before_they_are_listed() {
        let class = |lo: u32, hi: u32| Expr::Class(CharClass::from_ranges([(lo, hi)]));
        let cap = 1024;
        // Counted as listed: each count bounds the set that is listed.
        for e in [
            Expr::repeat(class(97, 99), 1, Some(3)),
            Expr::seq(vec![
                Expr::alt(vec![Expr::literal("ab"), Expr::literal("cd")]),
                class(48, 57),
            ]),
            Expr::alt(vec![Expr::literal("a"), Expr::literal("a"), Expr::Empty]),
            Expr::seq(vec![Expr::literal("x"), Expr::Nothing]),
            Expr::repeat(class(48, 57), 3, Some(3)),
        ] {
            let listed = finite_strings(&e, cap).expect("finite").len() as u64;
            let counted = count_at_most(&e, cap as u64);
            assert!(counted >= listed && counted <= cap as u64, "{e:?}");
        }
        assert_eq!(
            count_at_most(&Expr::repeat(class(97, 99), 1, Some(3)), 1024),
            39
        );
        // Past the cap, or not finite: the cap plus one, nothing listed.
        for e in [
            Expr::repeat(class(97, 122), 1, Some(16)),
            Expr::repeat(class(48, 57), 4, Some(4)),
            Expr::star(class(97, 97)),
            Expr::repeat(Expr::literal("a"), 0, Some(17)),
            class(0, 0x10FFFF),
        ] {
            assert_eq!(count_at_most(&e, cap as u64), cap as u64 + 1, "{e:?}");
        }
    }

    #[test]
    fn membership() {
        let e = Expr::seq(vec![
            Expr::literal("a"),
            Expr::star(Expr::Class(CharClass::from_ranges([(98, 99)]))),
        ]);
        assert!(matches(&e, "abcb"));
        assert!(!matches(&e, "abd"));
        let n = Expr::complement(e.clone());
        assert!(matches(&n, "abd"));
        assert!(!matches(&n, "ab"));
        let both = Expr::and(vec![e, length(0, Some(2))]);
        assert!(matches(&both, "ab"));
        assert!(!matches(&both, "abc"));
    }

    #[test]
    fn canonical() {
        assert_eq!(
            canonical_json("a\"b\\\n\u{1}é"),
            "\"a\\\"b\\\\\\n\\u0001é\""
        );
    }
}
