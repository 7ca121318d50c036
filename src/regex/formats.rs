//! JSON Schema `format`s as exact regular languages.
//!
//! Each supported format is the set of strings the JSON Schema Test Suite
//! (`optional/format/*.json`, drafts 7 and 2020-12) and the RFCs it cites
//! accept; where Python's `jsonschema` (4.26, with its optional format
//! libraries) disagrees with the suite, the suite wins, and the difference
//! is noted. Formats not listed here are annotations: [`format_expr`]
//! returns `None` and the string is not constrained. The rules:
//!
//! | format | rule |
//! |---|---|
//! | `date` | RFC 3339 `full-date`: `YYYY-MM-DD`, ASCII digits, year 0000-9999 (RFC 3339's `date-fullyear` is any 4 digits; Python's `datetime` rejects 0000), month 01-12, day within the month, 29 February only in leap years (divisible by 4, centuries only when divisible by 400, decided on the digits: 0000 is a leap year). |
//! | `time` | RFC 3339 `full-time`: `HH:MM:SS`, optional `.` and one or more digits, then `Z`/`z` or `+HH:MM`/`-HH:MM` (hours 00-23, minutes 00-59). Leap seconds per [`LeapSeconds`]: by default RFC 3339's rule (section 5.7, and the suite's): second `60` when the time in UTC is 23:59, `15:59:60-08:00` included ([`LeapSeconds::Exact`], an [`Expr::Rfc3339`] leaf whose automaton of about 11,000 states, 66,000 over JSON spellings, is built directly); [`LeapSeconds::Utc`] takes them only at `23:59` with a zero offset; Python rejects every leap second ([`LeapSeconds::Reject`]). |
//! | `date-time` | `date`, `T` or `t`, `time`. |
//! | `duration` | RFC 3339 Appendix A (ISO 8601): `P` then `nY[nM[nD]]`, `nM[nD]` or `nD`, optionally followed by `T` and `nH[nM[nS]]`, `nM[nS]` or `nS`; or `PT...` alone; or `PnW`. Integers only, uppercase designators. |
//! | `email` | RFC 5321 `Mailbox`: a dot-string of `atext` atoms or a quoted string (`qtextSMTP`, `\` pairs), `@`, then a domain (labels of letters, digits and inner hyphens, separated by dots) or an address literal `[IPv4]` / `[IPv6:addr]` (`IPv6` in any case). The ABNF only: no length limits, no general address literals. Python accepts any string containing `@`. |
//! | `hostname` | RFC 1123: dot-separated labels of 1-63 ASCII letters, digits and hyphens, not starting or ending with a hyphen, no trailing dot; the limit of 253 characters in all only with [`FormatOptions::hostname_total_length`] (it multiplies the automaton by about 400). `xn--` labels are checked as such labels only: whether they decode to valid IDNA (the suite's Punycode cases) is not a property a finite automaton of any practical size checks. Hence the JSON Schema front end refuses `hostname` (exact or nothing); this language serves the regex front end's callers. |
//! | `ipv4` | Four decimal octets 0-255 without leading zeros. |
//! | `ipv6` | RFC 4291 text forms (RFC 3986 `IPv6address`): 1-4 hex digits per group, at most one `::`, an optional dotted IPv4 tail; no zone index, no brackets. |
//! | `uri` | RFC 3986 `URI` (scheme, `:`, hierarchical part, query, fragment; percent-escapes; IP literals with strict IPv4 octets). ASCII only. |
//! | `uri-reference` | RFC 3986 `URI-reference` (a URI or a relative reference). |
//! | `iri` | RFC 3987 `IRI`: the `uri` rule with `ucschar` allowed where unreserved characters are, and `iprivate` in queries. |
//! | `iri-reference` | RFC 3987 `IRI-reference`. |
//! | `uuid` | `8-4-4-4-12` hexadecimal digits in any case, nothing else (Python's `UUID()` also takes braces and `urn:uuid:`, which the suite rejects). |
//! | `json-pointer` | RFC 6901: empty, or `/`-prefixed reference tokens where `~` is only in `~0` and `~1`. |
//! | `relative-json-pointer` | A non-negative integer without leading zeros, then `#` or a JSON pointer (draft-handrews-relative-json-pointer-01, as Python checks it: no index manipulation). |
//! | `uri-template` | RFC 6570 level 4 syntax: literals (with the errata's `'`), percent-escapes, and `{op? varspec,...}` expressions with `:1`-`:9999` prefixes and `*` explode. |
//!
//! Not supported (`None`): `regex` (the language of valid patterns is not
//! regular), `idn-hostname` and `idn-email` (IDNA 2008's Unicode tables
//! and contextual rules), and every non-standard name (`int32`, `url`,
//! `topic`, ...), which validators treat as annotations.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::{to_expr, Anchoring};
use crate::ir::{Expr, Rfc3339, TextForm};
use crate::util::sync::CacheMutex;

/// The regular expression of [`LeapSeconds::Exact`]'s `date-time` (or
/// `time`), with its intersections: what an [`Expr::Rfc3339`] of code
/// points stands for, for matchers that work on expressions.
#[cfg(test)]
pub(crate) fn rfc3339_regex(date: bool) -> Expr {
    static CACHE: OnceLock<[Expr; 2]> = OnceLock::new();
    let both = CACHE.get_or_init(|| {
        [false, true].map(|date| {
            let format = if date { "date-time" } else { "time" };
            let pattern = pattern_with(format, &FormatOptions::exact()).unwrap_or_default();
            to_expr(&pattern, Anchoring::Full).unwrap_or_else(|err| {
                panic!("format '{format}': built-in pattern does not translate: {err}")
            })
        })
    });
    both[usize::from(date)].clone()
}

/// The format names [`format_expr`] checks.
pub const SUPPORTED: &[&str] = &[
    "date",
    "time",
    "date-time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "json-pointer",
    "relative-json-pointer",
    "uri-template",
];

/// Which leap seconds (`:60`) `time` and `date-time` accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LeapSeconds {
    /// Exactly RFC 3339's rule (and the JSON Schema Test Suite's): second
    /// 60 when the time in UTC is 23:59, whatever the offset
    /// (`15:59:60-08:00`). The DFA must remember the hour and minute until
    /// it reads the offset: about 11,000 states over characters, about
    /// 66,000 over the JSON spellings of a string. [`format_expr_with`]
    /// gives an [`Expr::Rfc3339`] leaf, whose DFA the lexeme builder makes
    /// directly (about 15 ms, once per process) instead of from the
    /// intersections of [`pattern_with`] (0.2-0.4 s per lexeme).
    #[default]
    Exact,
    /// Second 60 only at 23:59 with offset `Z`, `z`, `+00:00` or `-00:00`
    /// (a subset of `Exact`: no invalid time is accepted; a leap second
    /// written with a non-zero offset is refused). A plain regular
    /// expression; the JSON Schema compiler uses it when a length bound
    /// would count the fraction of an exact automaton.
    Utc,
    /// No leap seconds, as Python's `jsonschema` (rfc3339-validator) does.
    Reject,
}

/// Options of [`format_expr_with`]. The default is exact for every format
/// but `hostname`'s total length; [`FormatOptions::exact`] also has that,
/// at the cost of an automaton with tens of thousands of states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FormatOptions {
    pub leap_seconds: LeapSeconds,
    /// `hostname`: also enforce the 253-character limit on the whole name
    /// (labels are always limited to 63). Counting both lengths at once
    /// takes an automaton of about 57,000 states (instead of about 130).
    pub hostname_total_length: bool,
}

impl FormatOptions {
    /// The exact rules, whatever the automaton size.
    pub fn exact() -> FormatOptions {
        FormatOptions {
            leap_seconds: LeapSeconds::Exact,
            hostname_total_length: true,
        }
    }
}

/// The strings `format` accepts, `None` when it is not checked.
pub fn format_expr(format: &str) -> Option<Expr> {
    format_expr_with(format, &FormatOptions::default())
}

/// [`format_expr`] with options.
pub fn format_expr_with(format: &str, options: &FormatOptions) -> Option<Expr> {
    type Cache = HashMap<(String, FormatOptions), Expr>;
    static CACHE: OnceLock<CacheMutex<Cache>> = OnceLock::new();
    if !SUPPORTED.contains(&format) {
        return None;
    }
    let cache = CACHE.get_or_init(|| CacheMutex::new("regex formats", HashMap::new()));
    let key = (format.to_string(), *options);
    if let Some(e) = cache.lock().get(&key) {
        return Some(e.clone());
    }
    if options.leap_seconds == LeapSeconds::Exact && matches!(format, "time" | "date-time") {
        return Some(Expr::Rfc3339(Rfc3339 {
            date: format == "date-time",
            form: TextForm::Chars,
        }));
    }
    let pattern = pattern_with(format, options)?;
    let e = to_expr(&pattern, Anchoring::Full).unwrap_or_else(|err| {
        panic!("format '{format}': built-in pattern does not translate: {err}")
    });
    cache.lock().insert(key, e.clone());
    Some(e)
}

/// The ECMA-262 pattern (full match) of a supported format.
pub fn pattern(format: &str) -> Option<String> {
    pattern_with(format, &FormatOptions::default())
}

/// [`pattern`] with options.
pub fn pattern_with(format: &str, options: &FormatOptions) -> Option<String> {
    let time = || time(options.leap_seconds);
    Some(match format {
        "date" => date(),
        "time" => time(),
        "date-time" => format!("{}[Tt]{}", date(), time()),
        "duration" => duration(),
        "email" => email(),
        "hostname" => hostname(options.hostname_total_length),
        "ipv4" => IPV4.to_string(),
        "ipv6" => ipv6(),
        "uri" => uri(false, false),
        "uri-reference" => uri(true, false),
        "iri" => uri(false, true),
        "iri-reference" => uri(true, true),
        "uuid" => "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
            .to_string(),
        "json-pointer" => JSON_POINTER.to_string(),
        "relative-json-pointer" => format!("(?:0|[1-9][0-9]*)(?:#|{JSON_POINTER})"),
        "uri-template" => uri_template(),
        _ => return None,
    })
}

/// Years 0000-9999 (RFC 3339 `date-fullyear = 4DIGIT`).
const YEAR: &str = "[0-9]{4}";
/// Leap years among them: `YY` (the last two digits) a non-zero multiple
/// of 4, or `YY` = 00 and `CC` (the first two) a multiple of 4 (0000 is
/// one: the proleptic Gregorian year 0 is divisible by 400).
const LEAP_YEAR: &str =
    "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[048]|[2468][048]|[13579][26])00)";
/// Month and day in every year (29 February aside).
const MONTH_DAY: &str = "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))";

fn date() -> String {
    format!("(?:{YEAR}-{MONTH_DAY}|{LEAP_YEAR}-02-29)")
}

const FRAC: &str = "(?:\\.[0-9]+)?";
const HOUR: &str = "(?:[01][0-9]|2[0-3])";
const MINUTE: &str = "[0-5][0-9]";

/// RFC 3339 `full-time`. A leap second is valid when the local time minus
/// the offset is 23:59 UTC. Spelled out, that is one alternative per
/// local time (1,440, each with its two offsets): an expression so large
/// that the JSON string around it could not be a lexeme. Written as
/// intersections instead, the hours and the minutes are related
/// separately: with offset `-hh':mm'`, `hh' = 23 - hh` and `mm' = 59 - mm`
/// (no borrow); with `+hh':mm'`, `hh' = hh` and `mm' = mm + 1`, or for
/// minute 59 the next hour at minute 00. The automaton is the same
/// (about 11,000 states: it must remember the local time until the
/// offset), built from about 250 alternatives.
fn time(leap: LeapSeconds) -> String {
    let offset = format!("(?:[Zz]|[+-]{HOUR}:{MINUTE})");
    let normal = format!("{HOUR}:{MINUTE}:[0-5][0-9]{FRAC}{offset}");
    match leap {
        LeapSeconds::Reject => return normal,
        LeapSeconds::Utc => return format!("(?:{normal}|23:59:60{FRAC}(?:[Zz]|[+-]00:00))"),
        LeapSeconds::Exact => {}
    }
    let alts = |range: std::ops::Range<u32>, f: &dyn Fn(u32) -> String| -> String {
        format!("(?:{})", range.map(f).collect::<Vec<_>>().join("|"))
    };
    // Offset -hh':mm' = 23:59 - local.
    let minus_minutes = alts(0..60, &|m| {
        format!("{m:02}:60{FRAC}-[0-9]{{2}}:{:02}", 59 - m)
    });
    let minus_hours = alts(0..24, &|h| {
        format!("{h:02}:{MINUTE}:60{FRAC}-{:02}:{MINUTE}", 23 - h)
    });
    let minus = format!("(?=[0-9]{{2}}:{minus_minutes}$){minus_hours}");
    // Offset +hh':mm' = local - 23:59 = local + 1 minute.
    let plus_minutes = alts(0..59, &|m| {
        format!("{m:02}:60{FRAC}\\+[0-9]{{2}}:{:02}", m + 1)
    });
    let plus_hours = alts(0..24, &|h| {
        format!("{h:02}:{MINUTE}:60{FRAC}\\+{h:02}:{MINUTE}")
    });
    let plus = format!("(?=[0-9]{{2}}:{plus_minutes}$){plus_hours}");
    let plus_next_hour = alts(0..24, &|h| {
        format!("{h:02}:59:60{FRAC}\\+{:02}:00", (h + 1) % 24)
    });
    format!("(?:{normal}|{minus}|{plus}|{plus_next_hour}|23:59:60{FRAC}[Zz])")
}

fn duration() -> String {
    let time = "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)";
    let date = "(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)";
    format!("P(?:{date}(?:{time})?|{time}|[0-9]+W)")
}

const IPV4: &str = "(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])";

/// RFC 3986 `IPv6address`.
fn ipv6() -> String {
    let h16 = "[0-9A-Fa-f]{1,4}";
    let ls32 = format!("(?:{h16}:{h16}|{IPV4})");
    // [ *n( h16 ":" ) h16 ]
    let head = |n: u32| {
        if n == 0 {
            format!("(?:{h16})?")
        } else {
            format!("(?:(?:{h16}:){{0,{n}}}{h16})?")
        }
    };
    let alts = [
        format!("(?:{h16}:){{6}}{ls32}"),
        format!("::(?:{h16}:){{5}}{ls32}"),
        format!("{}::(?:{h16}:){{4}}{ls32}", head(0)),
        format!("{}::(?:{h16}:){{3}}{ls32}", head(1)),
        format!("{}::(?:{h16}:){{2}}{ls32}", head(2)),
        format!("{}::{h16}:{ls32}", head(3)),
        format!("{}::{ls32}", head(4)),
        format!("{}::{h16}", head(5)),
        format!("{}::", head(6)),
    ];
    format!("(?:{})", alts.join("|"))
}

/// An LDH label of 1-63 characters.
const LABEL: &str = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";

fn hostname(total_length: bool) -> String {
    let name = format!("{LABEL}(?:\\.{LABEL})*");
    if total_length {
        // The 253-character limit as a lookahead: an intersection.
        format!("(?=.{{1,253}}$){name}")
    } else {
        name
    }
}

fn email() -> String {
    let atext = "[A-Za-z0-9!#$%&'*+\\-/=?^_`{|}~]";
    let dot_string = format!("{atext}+(?:\\.{atext}+)*");
    let quoted = "\"(?:[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\x20-\\x7E])*\"";
    let sub_domain = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?";
    let domain = format!("{sub_domain}(?:\\.{sub_domain})*");
    let literal = format!("\\[(?:{IPV4}|[Ii][Pp][Vv]6:{})\\]", ipv6());
    format!("(?:{dot_string}|{quoted})@(?:{domain}|{literal})")
}

/// RFC 3986 `URI` / `URI-reference`, or with `iri` RFC 3987's `IRI` /
/// `IRI-reference`.
fn uri(reference: bool, iri: bool) -> String {
    // ucschar and iprivate (RFC 3987), as class contents.
    let ucschar = "\\u{A0}-\\u{D7FF}\\u{F900}-\\u{FDCF}\\u{FDF0}-\\u{FFEF}\\u{10000}-\\u{1FFFD}\\u{20000}-\\u{2FFFD}\\u{30000}-\\u{3FFFD}\\u{40000}-\\u{4FFFD}\\u{50000}-\\u{5FFFD}\\u{60000}-\\u{6FFFD}\\u{70000}-\\u{7FFFD}\\u{80000}-\\u{8FFFD}\\u{90000}-\\u{9FFFD}\\u{A0000}-\\u{AFFFD}\\u{B0000}-\\u{BFFFD}\\u{C0000}-\\u{CFFFD}\\u{D0000}-\\u{DFFFD}\\u{E1000}-\\u{EFFFD}";
    let iprivate = "\\u{E000}-\\u{F8FF}\\u{F0000}-\\u{FFFFD}\\u{100000}-\\u{10FFFD}";
    let ucs = if iri { ucschar } else { "" };
    let unreserved = format!("A-Za-z0-9\\-._~{ucs}");
    let sub_delims = "!$&'()*+,;=";
    let pct = "%[0-9A-Fa-f]{2}";
    let pchar = format!("(?:[{unreserved}{sub_delims}:@]|{pct})");
    let segment = format!("{pchar}*");
    let segment_nz = format!("{pchar}+");
    let segment_nz_nc = format!("(?:[{unreserved}{sub_delims}@]|{pct})+");
    let query = if iri {
        format!("(?:[{unreserved}{sub_delims}:@/?{iprivate}]|{pct})*")
    } else {
        format!("(?:[{unreserved}{sub_delims}:@/?]|{pct})*")
    };
    let fragment = format!("(?:[{unreserved}{sub_delims}:@/?]|{pct})*");
    let userinfo = format!("(?:[{unreserved}{sub_delims}:]|{pct})*");
    // IPvFuture has no ucschar, even in IRIs.
    let ipvfuture = format!("[Vv][0-9A-Fa-f]+\\.[A-Za-z0-9\\-._~{sub_delims}:]+");
    let ip_literal = format!("\\[(?:{}|{ipvfuture})\\]", ipv6());
    // reg-name covers IPv4address.
    let reg_name = format!("(?:[{unreserved}{sub_delims}]|{pct})*");
    let authority = format!("(?:{userinfo}@)?(?:{ip_literal}|{reg_name})(?::[0-9]*)?");
    let path_abempty = format!("(?:/{segment})*");
    let path_absolute = format!("/(?:{segment_nz}(?:/{segment})*)?");
    let path_rootless = format!("{segment_nz}(?:/{segment})*");
    let path_noscheme = format!("{segment_nz_nc}(?:/{segment})*");
    let scheme = "[A-Za-z][A-Za-z0-9+\\-.]*";
    let tail = format!("(?:\\?{query})?(?:#{fragment})?");
    let hier = format!("(?://{authority}{path_abempty}|{path_absolute}|{path_rootless})?");
    let absolute = format!("{scheme}:{hier}{tail}");
    if !reference {
        return absolute;
    }
    let relative =
        format!("(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme})?{tail}");
    format!("(?:{absolute}|{relative})")
}

const JSON_POINTER: &str = "(?:/(?:[^~/]|~[01])*)*";

fn uri_template() -> String {
    let ucschar = "\\u{A0}-\\u{D7FF}\\u{F900}-\\u{FDCF}\\u{FDF0}-\\u{FFEF}\\u{10000}-\\u{1FFFD}\\u{20000}-\\u{2FFFD}\\u{30000}-\\u{3FFFD}\\u{40000}-\\u{4FFFD}\\u{50000}-\\u{5FFFD}\\u{60000}-\\u{6FFFD}\\u{70000}-\\u{7FFFD}\\u{80000}-\\u{8FFFD}\\u{90000}-\\u{9FFFD}\\u{A0000}-\\u{AFFFD}\\u{B0000}-\\u{BFFFD}\\u{C0000}-\\u{CFFFD}\\u{D0000}-\\u{DFFFD}\\u{E1000}-\\u{EFFFD}";
    let iprivate = "\\u{E000}-\\u{F8FF}\\u{F0000}-\\u{FFFFD}\\u{100000}-\\u{10FFFD}";
    let pct = "%[0-9A-Fa-f]{2}";
    // %x21 / %x23-24 / %x26-27 (errata 6937) / %x28-3B / %x3D / %x3F-5B /
    // %x5D / %x5F / %x61-7A / %x7E
    let literals = format!(
        "(?:[\\x21\\x23\\x24\\x26\\x27\\x28-\\x3B\\x3D\\x3F-\\x5B\\x5D\\x5F\\x61-\\x7A\\x7E{ucschar}{iprivate}]|{pct})"
    );
    let varchar = format!("(?:[A-Za-z0-9_]|{pct})");
    let varname = format!("{varchar}(?:\\.?{varchar})*");
    let modifier = "(?::[1-9][0-9]{0,3}|\\*)?";
    let varspec = format!("{varname}{modifier}");
    let expression = format!("\\{{[+#./;?&=,!@|]?{varspec}(?:,{varspec})*\\}}");
    format!("(?:{literals}|{expression})*")
}

/// Leap seconds against RFC 3339's rule, for tests: every local time
/// `hh:mm:60` with the offsets that make it 23:59 UTC, and offsets one
/// minute, one hour or a sign away from them, as (local minute of the
/// day, `hh:mm:60`, offset, valid).
#[cfg(test)]
pub(crate) fn leap_second_cases() -> Vec<(u32, String, String, bool)> {
    let offset = |sign: char, total: u32| format!("{sign}{:02}:{:02}", total / 60, total % 60);
    let mut cases = Vec::new();
    for local in 0..1440u32 {
        let hm = format!("{:02}:{:02}:60", local / 60, local % 60);
        let plus = (local + 1) % 1440;
        let minus = (1439 + 1440 - local) % 1440;
        for (off, ok) in [
            (offset('+', plus), true),
            (offset('-', minus), true),
            (offset('+', (plus + 1) % 1440), false),
            (offset('+', (plus + 60) % 1440), false),
            (offset('-', (minus + 1) % 1440), false),
            (offset('-', (minus + 1380) % 1440), false),
            (offset('-', plus), plus == minus),
            ("Z".to_string(), local == 1439),
        ] {
            cases.push((local, hm.clone(), off, ok));
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regex::expr::matches;
    use crate::regex::has_boolean;

    #[test]
    fn every_format_translates() {
        for f in SUPPORTED {
            assert!(format_expr(f).is_some(), "{f}");
        }
        for f in SUPPORTED {
            // Plain regular expressions, so that the compiler may split
            // them, but `time` and `date-time` (a leaf whose DFA is built
            // directly); the exact options intersect (hostname lengths).
            let boolean = has_boolean(&format_expr(f).unwrap());
            assert_eq!(boolean, matches!(*f, "time" | "date-time"), "{f}");
            let exact = format_expr_with(f, &FormatOptions::exact()).unwrap();
            let boolean = has_boolean(&exact);
            assert_eq!(
                boolean,
                matches!(*f, "time" | "date-time" | "hostname"),
                "{f}"
            );
        }
        let utc = FormatOptions {
            leap_seconds: LeapSeconds::Utc,
            ..FormatOptions::default()
        };
        assert!(!has_boolean(&format_expr_with("date-time", &utc).unwrap()));
        assert!(format_expr("int32").is_none());
        assert!(format_expr("regex").is_none());
    }

    /// The exact options against the suite's time, date-time and hostname
    /// cases, with the derivative matcher (the compiler would need seconds
    /// for these automata in a debug build).
    #[test]
    fn exact_options_pass_the_suite() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/regex/formats.json");
        let cases: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let exact = FormatOptions::exact();
        let mut n = 0;
        for c in &cases {
            let f = c["format"].as_str().unwrap();
            let data = c["data"].as_str().unwrap();
            if !["time", "date-time", "hostname"].contains(&f)
                || !c["src"].as_str().unwrap().starts_with("suite")
                || data.to_ascii_lowercase().contains("xn--")
            {
                continue;
            }
            let e = format_expr_with(f, &exact).unwrap();
            assert_eq!(
                matches(&e, data),
                c["valid"].as_bool().unwrap(),
                "{f} {data:?}"
            );
            n += 1;
        }
        assert!(n > 80, "{n} cases");
    }

    #[test]
    fn dates_and_times() {
        let d = format_expr("date").unwrap();
        for (s, ok) in [
            ("2020-02-29", true),
            ("2021-02-29", false),
            ("2000-02-29", true),
            ("1900-02-29", false),
            ("0400-02-29", true),
            ("0000-01-01", true),
            ("0000-02-29", true),
            ("0100-02-29", false),
            ("2020-04-31", false),
            ("2020-12-31", true),
        ] {
            assert_eq!(matches(&d, s), ok, "date {s}");
        }
        let t = format_expr_with("time", &FormatOptions::exact()).unwrap();
        for (s, ok) in [
            ("23:59:60Z", true),
            ("15:59:60-08:00", true),
            ("01:29:60+01:30", true),
            ("00:29:60-23:30", true),
            ("23:59:60+01:00", false),
            ("22:59:60Z", false),
            ("12:00:00.5+05:30", true),
            ("12:00:00", false),
        ] {
            assert_eq!(matches(&t, s), ok, "time {s}");
        }
        // Every local time with the offsets that make it 23:59 UTC, and
        // offsets one minute, one hour or a sign away from them.
        let t = format_expr_with("time", &FormatOptions::exact()).unwrap();
        for (local, hm, off, ok) in leap_second_cases() {
            let text = format!("{hm}{off}");
            assert_eq!(matches(&t, &text), ok, "time {text}");
            if local % 8 == 0 {
                let text = format!("{hm}.25{off}");
                assert_eq!(matches(&t, &text), ok, "time {text}");
            }
        }
        let utc = FormatOptions {
            leap_seconds: LeapSeconds::Utc,
            ..FormatOptions::default()
        };
        let t = format_expr_with("time", &utc).unwrap();
        for (s, ok) in [
            ("23:59:60Z", true),
            ("23:59:60.5-00:00", true),
            ("15:59:60-08:00", false),
            ("23:58:60Z", false),
        ] {
            assert_eq!(matches(&t, s), ok, "time {s}");
        }
    }
}
