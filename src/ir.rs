//! The grammar IR: what every front end (GBNF, JSON Schema, regex) produces
//! and what the compiler consumes.
//!
//! A [`Grammar`] is a list of rules, each an [`Expr`] over Unicode code
//! points, references to other rules, and whole-token elements. The IR says
//! nothing about lexing or automata: the compiler decides which parts become
//! lexeme DFAs and which become parser rules.

use std::sync::Arc;

pub(crate) mod graph;
mod json_string;
pub mod rfc3339;

pub use json_string::{
    encode, encode_class, json_quoted_spelled, quoted_length, valid_content, JsonStrings,
};

/// Index of a rule in [`Grammar::rules`].
pub type RuleId = u32;

/// The largest Unicode scalar value.
pub const MAX_CHAR: u32 = 0x10FFFF;

/// A set of Unicode scalar values: sorted, disjoint, non-adjacent ranges
/// (inclusive). Surrogates (U+D800..U+DFFF) are never members: they have no
/// UTF-8 encoding, so no text can contain them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CharClass {
    ranges: Vec<(u32, u32)>,
}

impl CharClass {
    /// The empty set.
    pub fn empty() -> CharClass {
        CharClass { ranges: Vec::new() }
    }

    /// Every scalar value (what GBNF's `.` matches).
    pub fn any() -> CharClass {
        CharClass::from_ranges([(0, MAX_CHAR)])
    }

    /// Equal to [`CharClass::any`].
    pub fn is_any(&self) -> bool {
        self.ranges == [(0, 0xD7FF), (0xE000, MAX_CHAR)]
    }

    /// Exactly one code point.
    pub fn single(c: u32) -> CharClass {
        CharClass::from_ranges([(c, c)])
    }

    /// The union of the given inclusive ranges. Reversed ranges (`z-a`) are
    /// empty, as in llama.cpp; values above U+10FFFF and surrogates dropped.
    pub fn from_ranges(ranges: impl IntoIterator<Item = (u32, u32)>) -> CharClass {
        let mut v: Vec<(u32, u32)> = Vec::new();
        for (lo, hi) in ranges {
            let hi = hi.min(MAX_CHAR);
            if lo > hi {
                continue;
            }
            // Cut out the surrogate block.
            if lo < 0xD800 {
                v.push((lo, hi.min(0xD7FF)));
            }
            if hi > 0xDFFF {
                v.push((lo.max(0xE000), hi));
            }
        }
        v.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(v.len());
        for (lo, hi) in v {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        CharClass { ranges: merged }
    }

    /// The sorted, disjoint ranges.
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn contains(&self, c: u32) -> bool {
        self.ranges
            .binary_search_by(|&(lo, hi)| {
                if hi < c {
                    std::cmp::Ordering::Less
                } else if lo > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    }

    /// Every scalar value not in `self`.
    pub fn negate(&self) -> CharClass {
        let mut out = Vec::new();
        let mut next = 0u32;
        for &(lo, hi) in &self.ranges {
            if lo > next {
                out.push((next, lo - 1));
            }
            next = hi + 1;
        }
        if next <= MAX_CHAR {
            out.push((next, MAX_CHAR));
        }
        CharClass::from_ranges(out)
    }

    pub fn union(&self, other: &CharClass) -> CharClass {
        CharClass::from_ranges(self.ranges.iter().chain(other.ranges.iter()).copied())
    }

    pub fn intersect(&self, other: &CharClass) -> CharClass {
        self.negate().union(&other.negate()).negate()
    }

    /// Number of code points in the set.
    pub fn count(&self) -> u64 {
        self.ranges
            .iter()
            .map(|&(lo, hi)| (hi - lo) as u64 + 1)
            .sum()
    }
}

/// A set of token ids for a token element (`<[12]>`, `!<[12]>`, `<|eot_id|>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenSet {
    /// Sorted, deduplicated ids.
    pub ids: Vec<u32>,
    /// When true the element matches any one token *not* in `ids`
    /// (end-of-sequence tokens excepted: those only ever end the output).
    pub negated: bool,
}

impl TokenSet {
    pub fn contains(&self, token: u32) -> bool {
        self.ids.binary_search(&token).is_ok() != self.negated
    }
}

/// A grammar expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// The empty string.
    Empty,
    /// No string at all (the empty language).
    Nothing,
    /// This exact text (UTF-8).
    Literal(String),
    /// One code point from the class.
    Class(CharClass),
    /// Each part in turn.
    Seq(Vec<Expr>),
    /// Any one of the alternatives.
    Alt(Vec<Expr>),
    /// `expr` repeated `min..=max` times (`max == None`: unbounded).
    Repeat {
        expr: Box<Expr>,
        min: u32,
        max: Option<u32>,
    },
    /// The language of another rule.
    Ref(RuleId),
    /// One whole token whose id is in the set; never matched by text.
    Token(TokenSet),
    /// Strings matched by every operand (intersection). Operands must be
    /// regular: no `Ref` to recursive rules, no `Token`.
    And(Vec<Expr>),
    /// Every string (of Unicode scalar values) the operand does not match
    /// (complement). The operand must be regular.
    Not(Box<Expr>),
    /// JSON string literals (quotes included, every spelling) of a set of
    /// values or of its complement: regular, never empty-string. Shared
    /// (`Arc`) because property-name sets are large and copied often.
    JsonStrings(Arc<JsonStrings>),
    /// JSON string literals (quotes included, every spelling) whose
    /// decoded values the operand matches: a regular expression over code
    /// points (no `Ref`, `Token` or JSON-level leaf). The lexeme builder
    /// determinizes the operand over code points and spells the automaton
    /// out directly (`compile::lexeme::json_string`): spelled out as an
    /// expression first ([`json_quoted_spelled`]), every class carries
    /// every escape of every character, and a subset construction over
    /// that costs several times the result. Shared (`Arc`) because
    /// patterns are large and copied often.
    JsonQuoted(Arc<Expr>),
    /// Plain decimals `-?(0|[1-9][0-9]*)(\.[0-9]+)?` whose value is an
    /// integer multiple of `divisor / 10^scale` (JSON Schema `multipleOf`):
    /// a residue automaton, built directly as a DFA (its regular
    /// expression grows exponentially with the divisor).
    DecimalMultiple(DecimalMultiple),
    /// The JSON texts of the integers in a range (JSON Schema `integer`
    /// with `minimum`/`maximum`), every spelling of [`IntegerRange`]:
    /// built directly as a DFA. As the intersection of "an integer" with
    /// two comparisons it took two products and two minimizations, 0.5 ms
    /// per distinct range. (Boxed: two `i128`s would double the size of
    /// every expression.)
    IntegerRange(Box<IntegerRange>),
    /// RFC 3339 `full-time` or `date-time` with the exact leap-second
    /// rule (see `regex::formats`), as a leaf: as an expression it is
    /// about 2,000 nodes over code points and 32,000 over JSON spellings,
    /// which every schema holding a date-time would copy, hash and spell
    /// again. The lexeme builder makes its DFA directly (once per
    /// process); the reference matchers expand it.
    Rfc3339(Rfc3339),
}

/// See [`Expr::Rfc3339`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rfc3339 {
    /// `date-time` (else `time`).
    pub date: bool,
    pub form: TextForm,
}

impl Rfc3339 {
    /// Whether `text` is in the language (code points for
    /// [`TextForm::Chars`], else JSON text), checked directly (see
    /// [`rfc3339`]).
    pub fn matches(&self, text: &str) -> bool {
        rfc3339::matches(self, text)
    }
}

/// What an [`Expr::Rfc3339`] matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TextForm {
    /// The code points of the string.
    Chars,
    /// Every JSON spelling of them, without quotes (`encode`).
    Spelled,
    /// The same between quotes: a whole JSON string.
    Quoted,
}

/// See [`Expr::DecimalMultiple`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecimalMultiple {
    pub divisor: u32,
    pub scale: u32,
}

impl DecimalMultiple {
    /// Whether `text` is in the language (a direct check, for tests and
    /// reference matchers).
    pub fn matches(&self, text: &[u8]) -> bool {
        let a = u64::from(self.divisor.max(1));
        let t = text.strip_prefix(b"-").unwrap_or(text);
        let (int, frac) = match t.iter().position(|&b| b == b'.') {
            Some(p) => (&t[..p], Some(&t[p + 1..])),
            None => (t, None),
        };
        let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
        if !digits(int) || (int.len() > 1 && int[0] == b'0') {
            return false;
        }
        let frac = frac.unwrap_or(b"");
        if t.len() > int.len() && !digits(frac) {
            return false;
        }
        let k = self.scale as usize;
        if frac.iter().skip(k).any(|&b| b != b'0') {
            return false;
        }
        let mut r = 0u64;
        for i in 0..int.len() + k {
            let d = if i < int.len() {
                int[i]
            } else {
                *frac.get(i - int.len()).unwrap_or(&b'0')
            };
            r = (r * 10 + u64::from(d - b'0')) % a;
        }
        r == 0
    }
}

/// Most fraction digits of the mantissa in an integer's scientific
/// notation (`1.2345e+20` is an integer; so is `1.0e0`).
pub const INTEGER_SCI_FRACTION_DIGITS: usize = 16;

/// See [`Expr::IntegerRange`]: the integers from `min` to `max` (both
/// included; `None`: unbounded), as JSON texts. An integer is written
/// - plainly, `-?(0|[1-9][0-9]*)(\.0+)?`,
/// - zero with an exponent, `-?0(\.0+)?[eE][+-]?[0-9]+`,
/// - or in scientific notation with a normalized mantissa of at most
///   [`INTEGER_SCI_FRACTION_DIGITS`] fraction digits whose exponent makes
///   it whole, `-?[1-9](\.[0-9]+)?[eE][+-]?[0-9]+` (`1.5e1`, `2E+03`).
///
/// (What JSON Schema numbers accept where their comparisons stay
/// regular: see `json_schema::number`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IntegerRange {
    pub min: Option<i128>,
    pub max: Option<i128>,
}

impl IntegerRange {
    /// Whether `text` is in the language (a direct check, for tests and
    /// reference matchers).
    pub fn matches(&self, text: &[u8]) -> bool {
        let (negative, unsigned) = match text.strip_prefix(b"-") {
            Some(t) => (true, t),
            None => (false, text),
        };
        let Some(magnitude) = integer_magnitude(unsigned) else {
            return false;
        };
        // `None`: past every `i128`.
        let value =
            magnitude
                .and_then(|m| i128::try_from(m).ok())
                .map(|m| if negative { -m } else { m });
        let at_least = |bound: i128| value.map_or(!negative, |v| v >= bound);
        let at_most = |bound: i128| value.map_or(negative, |v| v <= bound);
        self.min.is_none_or(at_least) && self.max.is_none_or(at_most)
    }
}

/// The value of an unsigned integer text of [`IntegerRange`]'s forms:
/// `None` for another text, `Some(None)` for a value past `u128`.
fn integer_magnitude(t: &[u8]) -> Option<Option<u128>> {
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let (mantissa, exponent) = match t.iter().position(|&b| b == b'e' || b == b'E') {
        Some(p) => (&t[..p], Some(&t[p + 1..])),
        None => (t, None),
    };
    let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
        Some(p) => (&mantissa[..p], Some(&mantissa[p + 1..])),
        None => (mantissa, None),
    };
    if !digits(int) || frac.is_some_and(|f| !digits(f)) {
        return None;
    }
    let frac = frac.unwrap_or(b"");
    let all_zeros = |s: &[u8]| s.iter().all(|&b| b == b'0');
    let Some(exponent) = exponent else {
        // Plain: a canonical integer part and a zero fraction.
        if (int.len() > 1 && int[0] == b'0') || !all_zeros(frac) {
            return None;
        }
        return Some(parse_u128(int));
    };
    let (exp_negative, exp_digits) = match exponent.first() {
        Some(b'-') => (true, &exponent[1..]),
        Some(b'+') => (false, &exponent[1..]),
        _ => (false, exponent),
    };
    if !digits(exp_digits) {
        return None;
    }
    if int == b"0" {
        // Zero with any exponent.
        return all_zeros(frac).then_some(Some(0));
    }
    if int.len() != 1 || int[0] == b'0' || frac.len() > INTEGER_SCI_FRACTION_DIGITS {
        return None;
    }
    // Whole when the exponent reaches the last nonzero fraction digit.
    let last_nonzero = frac.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1);
    let exp_value = {
        let first = exp_digits.iter().position(|&b| b != b'0');
        let significant = first.map_or(&b""[..], |i| &exp_digits[i..]);
        if significant.len() > 9 {
            u32::MAX as u64
        } else {
            significant
                .iter()
                .fold(0u64, |v, &b| v * 10 + u64::from(b - b'0'))
        }
    };
    if (exp_negative && exp_value > 0) || exp_value < last_nonzero as u64 {
        return None;
    }
    // The value's digits: the mantissa's up to its last nonzero one, then
    // zeros up to the exponent.
    if exp_value >= 40 {
        return Some(None);
    }
    let mut value: Vec<u8> = Vec::with_capacity(exp_value as usize + 1);
    value.push(int[0]);
    value.extend_from_slice(&frac[..last_nonzero]);
    value.resize(exp_value as usize + 1, b'0');
    Some(parse_u128(&value))
}

/// Decimal digits as a `u128`, `None` past it.
fn parse_u128(digits: &[u8]) -> Option<u128> {
    digits.iter().try_fold(0u128, |v, &b| {
        v.checked_mul(10)?.checked_add(u128::from(b - b'0'))
    })
}

impl Expr {
    pub fn literal(s: &str) -> Expr {
        if s.is_empty() {
            Expr::Empty
        } else {
            Expr::Literal(s.to_string())
        }
    }

    pub fn class(c: CharClass) -> Expr {
        Expr::Class(c)
    }

    pub fn seq(parts: Vec<Expr>) -> Expr {
        match parts.len() {
            0 => Expr::Empty,
            1 => parts.into_iter().next().unwrap(),
            _ => Expr::Seq(parts),
        }
    }

    pub fn alt(alts: Vec<Expr>) -> Expr {
        match alts.len() {
            0 => Expr::Nothing,
            1 => alts.into_iter().next().unwrap(),
            _ => Expr::Alt(alts),
        }
    }

    /// `expr{min,max}`; zero repetitions are the empty string and one is
    /// `expr` itself, so that `simplify` finds nothing to rebuild (number
    /// bounds spell many `[0-9]{0,0}` and `[0-9]{1,1}`, and each made
    /// `simplify` copy its whole lexeme).
    pub fn repeat(expr: Expr, min: u32, max: Option<u32>) -> Expr {
        match (min, max) {
            (0, Some(0)) => return Expr::Empty,
            (1, Some(1)) => return expr,
            _ => {}
        }
        Expr::Repeat {
            expr: Box::new(expr),
            min,
            max,
        }
    }

    pub fn optional(expr: Expr) -> Expr {
        Expr::repeat(expr, 0, Some(1))
    }

    pub fn star(expr: Expr) -> Expr {
        Expr::repeat(expr, 0, None)
    }

    pub fn plus(expr: Expr) -> Expr {
        Expr::repeat(expr, 1, None)
    }

    /// Calls `f` on every direct sub-expression.
    pub fn for_each_child(&self, mut f: impl FnMut(&Expr)) {
        match self {
            Expr::Seq(v) | Expr::Alt(v) | Expr::And(v) => v.iter().for_each(f),
            Expr::Repeat { expr, .. } | Expr::Not(expr) => f(expr),
            _ => {}
        }
    }

    /// Intersection of regular expressions.
    pub fn and(parts: Vec<Expr>) -> Expr {
        match parts.len() {
            0 => Expr::Not(Box::new(Expr::Nothing)),
            1 => parts.into_iter().next().unwrap(),
            _ => Expr::And(parts),
        }
    }

    /// The JSON string literals of `values` (of every other value when
    /// `negated`).
    pub fn json_strings(values: impl IntoIterator<Item = String>, negated: bool) -> Expr {
        let js = JsonStrings::new(values, negated);
        if js.is_empty() {
            Expr::Nothing
        } else {
            Expr::JsonStrings(Arc::new(js))
        }
    }

    /// The JSON string literals whose decoded values `e` (over code
    /// points) matches ([`Expr::JsonQuoted`]).
    pub fn json_quoted(e: Expr) -> Expr {
        if e == Expr::Nothing {
            Expr::Nothing
        } else {
            Expr::JsonQuoted(Arc::new(e))
        }
    }

    /// Complement of a regular expression.
    pub fn complement(e: Expr) -> Expr {
        Expr::Not(Box::new(e))
    }

    /// Does the language contain the empty string? A reference counts as
    /// not nullable; [`Expr::nullable_given`] looks rules up.
    pub fn nullable(&self) -> bool {
        self.nullable_given(&[])
    }

    /// Does the language contain the empty string, given which rules do
    /// (`rules[r]`; a rule past the end counts as not nullable)?
    pub fn nullable_given(&self, rules: &[bool]) -> bool {
        match self {
            Expr::Empty => true,
            Expr::Nothing
            | Expr::Class(_)
            | Expr::Token(_)
            | Expr::JsonStrings(_)
            | Expr::JsonQuoted(_)
            | Expr::DecimalMultiple(_)
            | Expr::IntegerRange(_)
            | Expr::Rfc3339(_) => false,
            Expr::Ref(r) => rules.get(*r as usize).copied().unwrap_or(false),
            Expr::Literal(s) => s.is_empty(),
            Expr::Seq(v) | Expr::And(v) => v.iter().all(|c| c.nullable_given(rules)),
            Expr::Alt(v) => v.iter().any(|c| c.nullable_given(rules)),
            Expr::Repeat { expr, min, max } => {
                *min == 0 || *max == Some(0) || expr.nullable_given(rules)
            }
            Expr::Not(x) => !x.nullable_given(rules),
        }
    }

    /// Number of nodes in the expression tree (a size measure for limits).
    pub fn size(&self) -> usize {
        let mut n = 1;
        self.for_each_child(|c| n += c.size());
        n
    }
}

/// Whether a rule should become a lexeme (one DFA, its token sets shared
/// and precomputed) or a parser rule. Front ends that know their grammar's
/// shape say so; `Auto` lets the compiler decide from the rule's form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LexemeHint {
    /// Regular rules with loops become lexemes, up to a size.
    #[default]
    Auto,
    /// A lexeme whenever the rule is regular.
    Always,
    /// Never a lexeme (nor inlined into one): a parser rule whose own
    /// loops may still become lexemes.
    Never,
    /// Copied into every rule that refers to it, whether that is a parser
    /// rule or a lexeme: a small regular rule (a separator between
    /// members) written once in the IR and read where it is used, never a
    /// lexeme or parser rule of its own. A rule that is not regular is
    /// still a parser rule, and one too large to copy a lexeme, as under
    /// `Auto`.
    Inline,
    /// A lexeme whose body is `"`-quoted JSON strings `A` intersected
    /// with the JSON strings of `min..=max` code points (`max` `u32::MAX`:
    /// none): built as `A`'s automaton with a count next to it (see
    /// `compile::lexeme::Counter`) rather than as the product. Whoever
    /// ignores the hint still reads the exact language.
    Counted { min: u32, max: u32 },
}

/// One named rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub name: String,
    pub body: Expr,
    pub lexeme: LexemeHint,
}

impl Rule {
    pub fn new(name: impl Into<String>, body: Expr) -> Rule {
        Rule {
            name: name.into(),
            body,
            lexeme: LexemeHint::Auto,
        }
    }
}

/// A keyword of the source that the grammar leaves out, and why (JSON
/// Schema in lenient mode, see `crate::json_schema::JsonOptions::lenient`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The keyword, e.g. `uniqueItems`.
    pub keyword: String,
    /// The JSON pointer of the schema holding it (`""`: the root); in an
    /// extra document (`crate::json_schema::JsonOptions::documents`), preceded by the
    /// document's URI and `#`.
    pub pointer: String,
    /// Why it could not be enforced.
    pub reason: String,
}

/// A whole grammar: rules and the start rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grammar {
    pub rules: Vec<Rule>,
    pub start: RuleId,
}

impl Grammar {
    /// The id of the rule called `name`, if any.
    pub fn rule_id(&self, name: &str) -> Option<RuleId> {
        self.rules
            .iter()
            .position(|r| r.name == name)
            .map(|i| i as RuleId)
    }
}

/// Builds a [`Grammar`] rule by rule; front ends use it to allocate rule ids
/// before the bodies are known (for forward and recursive references).
#[derive(Default, Debug)]
pub struct GrammarBuilder {
    rules: Vec<Rule>,
}

impl GrammarBuilder {
    pub fn new() -> GrammarBuilder {
        GrammarBuilder::default()
    }

    /// A new rule with an empty-language body, to be set later.
    pub fn add_rule(&mut self, name: impl Into<String>) -> RuleId {
        self.rules.push(Rule::new(name, Expr::Nothing));
        (self.rules.len() - 1) as RuleId
    }

    pub fn set_body(&mut self, id: RuleId, body: Expr) {
        self.rules[id as usize].body = body;
    }

    pub fn set_lexeme_hint(&mut self, id: RuleId, hint: LexemeHint) {
        self.rules[id as usize].lexeme = hint;
    }

    pub fn rule(&self, id: RuleId) -> &Rule {
        &self.rules[id as usize]
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn finish(self, start: RuleId) -> Grammar {
        Grammar {
            rules: self.rules,
            start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_normalizes_and_negates() {
        let c = CharClass::from_ranges([(b'a' as u32, b'c' as u32), (b'b' as u32, b'f' as u32)]);
        assert_eq!(c.ranges(), &[(97, 102)]);
        let n = c.negate();
        assert!(!n.contains(b'a' as u32));
        assert!(n.contains(b'g' as u32));
        assert!(!n.contains(0xD800));
        assert_eq!(n.negate(), c);
        assert!(CharClass::from_ranges([(b'z' as u32, b'a' as u32)]).is_empty());
        assert_eq!(CharClass::any().count(), 0x110000 - 0x800);
    }

    /// Expressions are moved, cloned and hashed by the million while a
    /// schema compiles: a larger variant (two `i128`s unboxed) made
    /// every one of them larger, and compiles up to 2% slower.
    #[test]
    fn expressions_stay_small() {
        assert!(
            std::mem::size_of::<Expr>() <= 32,
            "{}",
            std::mem::size_of::<Expr>()
        );
    }
}
