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

use crate::ir::{CharClass, Expr, MAX_CHAR};

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

    pub fn is_any(&self) -> bool {
        matches!(self, StrLang::Re(e) if *e == any_string())
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
            (StrLang::Re(Expr::Not(a)), StrLang::Re(Expr::Not(b))) => {
                // ¬A ∧ ¬B = ¬(A ∨ B): one complement instead of two.
                StrLang::Re(Expr::complement(Expr::alt(vec![
                    (**a).clone(),
                    (**b).clone(),
                ])))
            }
            (StrLang::Re(a), StrLang::Re(b)) => {
                if *a == Expr::Nothing || *b == Expr::Nothing {
                    StrLang::Re(Expr::Nothing)
                } else if a == b {
                    self.clone()
                } else {
                    StrLang::Re(Expr::and(vec![a.clone(), b.clone()]))
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

    /// Whether `s` is in the set.
    pub fn contains(&self, s: &str) -> bool {
        match self {
            StrLang::Lits(l) => l.contains(s),
            StrLang::Re(e) => matches(e, s),
        }
    }
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
        Expr::Nothing | Expr::Ref(_) | Expr::Token(_) => {}
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
        Expr::Ref(_) | Expr::Token(_) => Expr::Nothing,
    }
}

/// Every valid JSON string content (built once).
fn valid_content() -> Expr {
    static V: std::sync::OnceLock<Expr> = std::sync::OnceLock::new();
    V.get_or_init(|| Expr::star(encode_class(&CharClass::any())))
        .clone()
}

/// The JSON text (quotes included) of every string of the language.
pub fn encode_lang(l: &StrLang) -> Expr {
    let body = match l {
        StrLang::Lits(s) => Expr::alt(s.iter().map(|x| encode(&Expr::literal(x))).collect()),
        StrLang::Re(e) => encode(e),
    };
    let quoted = |e: Expr| Expr::seq(vec![Expr::literal("\""), e, Expr::literal("\"")]);
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

/// Strings of `min..=max` code points.
pub fn length(min: u32, max: Option<u32>) -> Expr {
    Expr::repeat(Expr::Class(CharClass::any()), min, max)
}

/// Whether the class holds every code point.
pub fn is_full(c: &CharClass) -> bool {
    c.count() == (MAX_CHAR as u64 + 1) - 0x800
}

#[cfg(test)]
mod tests {
    use super::*;

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
