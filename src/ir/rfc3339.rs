//! What an [`Expr::Rfc3339`](super::Expr::Rfc3339) matches, checked
//! directly on the text: the reference the front ends and the tests use.
//! The compile layer builds the same language as an automaton; a test there
//! holds the two to agreeing.
//!
//! `date-time` is `YYYY-MM-DD` (29 February in leap years only), `T` or
//! `t`, then `time`: `HH:MM:SS`, an optional fraction, and `Z`, `z` or an
//! offset `+HH:MM`/`-HH:MM` (hours 00-23, minutes 00-59). Second 60 is a
//! leap second, valid when the local time minus the offset is 23:59.

use super::{Rfc3339, TextForm};

/// Whether `text` is in `r`'s language: the code points for
/// [`TextForm::Chars`], a JSON spelling of them for the other forms.
pub fn matches(r: &Rfc3339, text: &str) -> bool {
    let chars = match r.form {
        TextForm::Chars => Some(text.to_string()),
        TextForm::Spelled => decode_json(text),
        TextForm::Quoted => text
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .and_then(decode_json),
    };
    chars.is_some_and(|c| {
        let b = c.as_bytes();
        if r.date {
            b.len() > 11 && is_date(&b[..10]) && matches!(b[10], b'T' | b't') && is_time(&b[11..])
        } else {
            is_time(b)
        }
    })
}

/// The characters a JSON string body spells (`None` if it is not one:
/// a bad escape, a lone surrogate, an unescaped quote, backslash or
/// control character).
fn decode_json(body: &str) -> Option<String> {
    let mut out = String::new();
    let mut it = body.chars();
    while let Some(c) = it.next() {
        match c {
            '\\' => out.push(match it.next()? {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'u' => {
                    let hex: String = it.by_ref().take(4).collect();
                    if hex.len() != 4 || !hex.chars().all(|h| h.is_ascii_hexdigit()) {
                        return None;
                    }
                    // A surrogate spells no character alone, and a pair
                    // spells one outside the RFC 3339 alphabet: either way
                    // no match, so pairs need not be joined.
                    char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
                }
                _ => return None,
            }),
            '"' => return None,
            c if (c as u32) < 0x20 => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// The value of the ASCII digits `d` (`None` if any is not one).
fn number(d: &[u8]) -> Option<u32> {
    d.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

/// `YYYY-MM-DD`.
fn is_date(b: &[u8]) -> bool {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (number(&b[..4]), number(&b[5..7]), number(&b[8..10]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `HH:MM` with hours 00-23 and minutes 00-59, as minutes of the day.
fn hours_minutes(b: &[u8]) -> Option<u32> {
    if b.len() != 5 || b[2] != b':' {
        return None;
    }
    let (h, m) = (number(&b[..2])?, number(&b[3..])?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

/// RFC 3339 `full-time`, with the leap-second rule.
fn is_time(b: &[u8]) -> bool {
    if b.len() < 9 || b[5] != b':' {
        return false;
    }
    let (Some(local), Some(second)) = (hours_minutes(&b[..5]), number(&b[6..8])) else {
        return false;
    };
    let mut rest = &b[8..];
    if let Some(frac) = rest.strip_prefix(b".") {
        let digits = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return false;
        }
        rest = &frac[digits..];
    }
    // The offset in minutes east of UTC.
    let offset = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), hm @ ..] => match hours_minutes(hm) {
            Some(m) if *sign == b'+' => m as i64,
            Some(m) => -(m as i64),
            None => return false,
        },
        _ => return false,
    };
    match second {
        0..=59 => true,
        60 => (local as i64 - offset).rem_euclid(24 * 60) == 23 * 60 + 59,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(date: bool, form: TextForm) -> Rfc3339 {
        Rfc3339 { date, form }
    }

    #[test]
    fn dates_times_and_leap_seconds() {
        let dt = r(true, TextForm::Chars);
        for (s, ok) in [
            ("1985-04-12T23:20:50.52Z", true),
            ("1996-12-19T16:39:57-08:00", true),
            ("1990-12-31T23:59:60Z", true),
            ("1990-12-31T15:59:60-08:00", true),
            ("1998-12-31T15:59:60-08:00", true),
            ("1998-12-31T23:59:60+00:00", true),
            ("1998-12-31T00:59:60+01:00", true),
            ("1998-12-31T23:58:60Z", false),
            ("1998-12-31T15:59:60+08:00", false),
            ("2020-02-29T00:00:00z", true),
            ("2021-02-29T00:00:00Z", false),
            ("1900-02-29T00:00:00Z", false),
            ("2000-02-29t00:00:00Z", true),
            ("2020-04-31T00:00:00Z", false),
            ("2020-13-01T00:00:00Z", false),
            ("2020-01-01T24:00:00Z", false),
            ("2020-01-01T00:00:00.Z", false),
            ("2020-01-01T00:00:00+24:00", false),
            ("2020-01-01 00:00:00Z", false),
        ] {
            assert_eq!(matches(&dt, s), ok, "{s}");
        }
        let t = r(false, TextForm::Chars);
        assert!(matches(&t, "23:59:60Z") && !matches(&t, "23:59:61Z"));
        let q = r(true, TextForm::Quoted);
        assert!(matches(&q, "\"2020-01-01T00:00:00\\u005a\""));
        assert!(!matches(&q, "2020-01-01T00:00:00Z"));
        assert!(!matches(&r(false, TextForm::Spelled), "00:00:00\\uD800"));
    }
}
