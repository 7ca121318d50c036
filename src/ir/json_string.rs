//! JSON string literals in the IR: every way JSON lets a string be
//! written, and sets of strings kept as one node.
//!
//! A JSON Schema constrains the *decoded* value of a string; the model
//! writes its JSON text, where each code point may be written raw (unless
//! JSON forbids it raw: `"`, `\`, U+0000..U+001F), as its short escape
//! (`\" \\ \/ \b \f \n \r \t`), or as `\uXXXX` (hex digits in either case;
//! a code point above U+FFFF as a surrogate pair). [`encode`] spells any
//! regular language of decoded strings that way. The encoding substitutes
//! each code point independently, so it commutes with concatenation, union
//! and repetition; for intersection `h(A ∩ B) = h(A) ∩ h(B)` (the
//! substitution is injective on decodings) and for complement
//! `h(¬A) = h(Σ*) ∩ ¬h(A)`.
//!
//! Property names and enumerations are finite sets of values, and "any
//! other property name" is the complement of one. Spelled out, such a set
//! holds every spelling of every character (`\u0061`, `\u0041`, ...) and
//! its expression dwarfs the rest of a schema's grammar; [`JsonStrings`]
//! keeps it as one IR node, which the lexeme builder turns into a DFA
//! directly (`compile::lexeme::json_string`) and everything else can spell
//! out with [`JsonStrings::spelled`].

use super::{CharClass, Expr};

/// JSON string literals, quotes included, in every spelling, whose decoded
/// value is one of `values` (or, when `negated`, any value but those).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JsonStrings {
    values: Vec<String>,
    negated: bool,
}

impl JsonStrings {
    /// The strings whose value is in `values` (or not in it, `negated`).
    pub fn new(values: impl IntoIterator<Item = String>, negated: bool) -> JsonStrings {
        let mut values: Vec<String> = values.into_iter().collect();
        values.sort_unstable();
        values.dedup();
        JsonStrings { values, negated }
    }

    /// The listed values, sorted and distinct.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// The node stands for every value *but* the listed ones.
    pub fn negated(&self) -> bool {
        self.negated
    }

    /// No string at all.
    pub fn is_empty(&self) -> bool {
        !self.negated && self.values.is_empty()
    }

    /// The same language as a plain regular expression (intersection and
    /// complement included): every spelling of every value, between quotes.
    pub fn spelled(&self) -> Expr {
        let quoted = |e: Expr| Expr::seq(vec![Expr::literal("\""), e, Expr::literal("\"")]);
        let listed = Expr::alt(
            self.values
                .iter()
                .map(|v| encode(&Expr::literal(v)))
                .collect(),
        );
        if self.negated {
            Expr::and(vec![
                quoted(valid_content()),
                Expr::complement(quoted(listed)),
            ])
        } else {
            quoted(listed)
        }
    }
}

fn cls(ranges: &[(u32, u32)]) -> Expr {
    Expr::Class(CharClass::from_ranges(ranges.iter().copied()))
}

fn hex_digit_class(lo: u32, hi: u32) -> Expr {
    // Hex digits lo..=hi (0..=15), letters in either case.
    let mut r = Vec::new();
    for v in lo..=hi {
        if v < 10 {
            r.push((b'0' as u32 + v, b'0' as u32 + v));
        } else {
            r.push((b'a' as u32 + v - 10, b'a' as u32 + v - 10));
            r.push((b'A' as u32 + v - 10, b'A' as u32 + v - 10));
        }
    }
    cls(&r)
}

/// Four hex digits (either case) spelling a value in `lo..=hi`.
fn hex4_range(lo: u32, hi: u32) -> Expr {
    hex_range(lo, hi, 4)
}

fn hex_range(lo: u32, hi: u32, width: u32) -> Expr {
    if lo > hi {
        return Expr::Nothing;
    }
    if width == 0 {
        return Expr::Empty;
    }
    let unit = 16u32.pow(width - 1);
    let (lh, ll) = (lo / unit, lo % unit);
    let (hh, hl) = (hi / unit, hi % unit);
    let full_rest = |n: u32| Expr::repeat(hex_digit_class(0, 15), n, Some(n));
    if lh == hh {
        return Expr::seq(vec![hex_digit_class(lh, lh), hex_range(ll, hl, width - 1)]);
    }
    let mut alts = Vec::new();
    let mut first = lh;
    if ll != 0 {
        alts.push(Expr::seq(vec![
            hex_digit_class(lh, lh),
            hex_range(ll, unit - 1, width - 1),
        ]));
        first += 1;
    }
    let mut last = hh;
    let mut tail = None;
    if hl != unit - 1 {
        tail = Some(Expr::seq(vec![
            hex_digit_class(hh, hh),
            hex_range(0, hl, width - 1),
        ]));
        last = last.wrapping_sub(1);
    }
    if first <= last && last != u32::MAX {
        alts.push(Expr::seq(vec![
            hex_digit_class(first, last),
            full_rest(width - 1),
        ]));
    }
    if let Some(t) = tail {
        alts.push(t);
    }
    Expr::alt(alts)
}

/// The ways to write one code point of class `c` inside a JSON string.
pub fn encode_class(c: &CharClass) -> Expr {
    if c.is_empty() {
        return Expr::Nothing;
    }
    let mut alts = Vec::new();
    // Raw: everything but '"', '\\' and control characters.
    let raw =
        c.intersect(&CharClass::from_ranges([(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]).negate());
    if !raw.is_empty() {
        alts.push(Expr::Class(raw));
    }
    let shorts: [(u32, char); 8] = [
        (0x22, '"'),
        (0x5C, '\\'),
        (0x2F, '/'),
        (0x08, 'b'),
        (0x0C, 'f'),
        (0x0A, 'n'),
        (0x0D, 'r'),
        (0x09, 't'),
    ];
    let mut short_chars = Vec::new();
    for (cp, ch) in shorts {
        if c.contains(cp) {
            short_chars.push((ch as u32, ch as u32));
        }
    }
    let mut esc = Vec::new();
    if !short_chars.is_empty() {
        esc.push(cls(&short_chars));
    }
    // \uXXXX for the basic multilingual plane.
    let mut bmp = Vec::new();
    for &(lo, hi) in c.ranges() {
        if lo > 0xFFFF {
            break;
        }
        bmp.push(hex4_range(lo, hi.min(0xFFFF)));
    }
    let mut u_alts = bmp;
    // Surrogate pairs above.
    for &(lo, hi) in c.ranges() {
        if hi < 0x10000 {
            continue;
        }
        let lo = lo.max(0x10000);
        let pair = |h0: u32, h1: u32, l0: u32, l1: u32| {
            Expr::seq(vec![
                hex4_range(h0, h1),
                Expr::literal("\\u"),
                hex4_range(l0, l1),
            ])
        };
        // Runs of high surrogates whose whole block of low surrogates is
        // in the class share one alternative.
        let mut run: Option<(u32, u32)> = None;
        for h in (0xD800 + ((lo - 0x10000) >> 10))..=(0xD800 + ((hi - 0x10000) >> 10)) {
            let bstart = 0x10000 + ((h - 0xD800) << 10);
            let bend = bstart + 0x3FF;
            let (a, b) = (lo.max(bstart), hi.min(bend));
            if a == bstart && b == bend {
                run = Some(match run {
                    Some((s, _)) => (s, h),
                    None => (h, h),
                });
                continue;
            }
            if let Some((s, e)) = run.take() {
                u_alts.push(pair(s, e, 0xDC00, 0xDFFF));
            }
            u_alts.push(pair(h, h, 0xDC00 + (a - bstart), 0xDC00 + (b - bstart)));
        }
        if let Some((s, e)) = run {
            u_alts.push(pair(s, e, 0xDC00, 0xDFFF));
        }
    }
    if !u_alts.is_empty() {
        esc.push(Expr::seq(vec![Expr::literal("u"), Expr::alt(u_alts)]));
    }
    if !esc.is_empty() {
        alts.push(Expr::seq(vec![Expr::literal("\\"), Expr::alt(esc)]));
    }
    Expr::alt(alts)
}

fn encode_char(c: char) -> Expr {
    let cp = c as u32;
    if cp >= 0x20 && c != '"' && c != '\\' && cp < 0x80 && c != '/' {
        // Printable ASCII other than the escapable ones: raw or \u00XX.
        return Expr::alt(vec![
            Expr::literal(&c.to_string()),
            Expr::seq(vec![Expr::literal("\\u"), hex4_range(cp, cp)]),
        ]);
    }
    encode_class(&CharClass::single(cp))
}

/// Every JSON string content (between the quotes) that decodes to a
/// string of `e`.
pub fn encode(e: &Expr) -> Expr {
    match e {
        Expr::Empty => Expr::Empty,
        Expr::Nothing => Expr::Nothing,
        Expr::Literal(s) => Expr::seq(s.chars().map(encode_char).collect()),
        Expr::Class(c) => encode_class(c),
        Expr::Seq(v) => Expr::seq(v.iter().map(encode).collect()),
        Expr::Alt(v) => Expr::alt(v.iter().map(encode).collect()),
        Expr::Repeat { expr, min, max } => Expr::repeat(encode(expr), *min, *max),
        Expr::And(v) => Expr::and(v.iter().map(encode).collect()),
        Expr::Not(x) => Expr::and(vec![valid_content(), Expr::complement(encode(x))]),
        // Already JSON text (only `encode_lang` makes it), or not text;
        // number texts (`DecimalMultiple`) are never string contents.
        Expr::Rfc3339(r) => match r.form {
            super::TextForm::Chars => Expr::Rfc3339(super::Rfc3339 {
                form: super::TextForm::Spelled,
                ..*r
            }),
            _ => Expr::Nothing,
        },
        Expr::Ref(_)
        | Expr::Token(_)
        | Expr::JsonStrings(_)
        | Expr::JsonQuoted(_)
        | Expr::DecimalMultiple(_)
        | Expr::IntegerRange(_) => Expr::Nothing,
    }
}

/// The language of [`Expr::JsonQuoted`]`(e)` as a plain regular
/// expression: every spelling of `e`'s strings, between quotes.
pub fn json_quoted_spelled(e: &Expr) -> Expr {
    Expr::seq(vec![Expr::literal("\""), encode(e), Expr::literal("\"")])
}

/// Every valid JSON string content, between the quotes (built once).
pub fn valid_content() -> Expr {
    static V: std::sync::OnceLock<Expr> = std::sync::OnceLock::new();
    V.get_or_init(|| Expr::star(encode_class(&CharClass::any())))
        .clone()
}

/// The JSON texts (quotes included) of the strings of `min..=max` code
/// points: the length part of a [`crate::ir::LexemeHint::Counted`]
/// lexeme, written the same way by the front end and recognized by the
/// compiler.
pub fn quoted_length(min: u32, max: Option<u32>) -> Expr {
    Expr::seq(vec![
        Expr::literal("\""),
        encode(&Expr::repeat(Expr::Class(CharClass::any()), min, max)),
        Expr::literal("\""),
    ])
}
