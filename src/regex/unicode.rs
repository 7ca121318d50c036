//! The character sets of ECMA-262 regular expressions: `.`, `\d \w \s`
//! and Unicode property escapes `\p{...}`.
//!
//! Property data comes from `regex-syntax`'s Unicode tables (Unicode 16.0;
//! Node.js 20 ships 15.1, so the two differ only on code points assigned in
//! 16.0). `regex-syntax` matches names loosely (case, spaces and underscores
//! ignored) while ECMA-262 accepts only the exact spellings listed in its
//! tables, so names are checked here against those lists first: a name that
//! ECMA-262 rejects is a syntax error even when `regex-syntax` knows it.

use crate::ir::CharClass;

/// `\d`: ASCII digits only (ECMA-262 has no Unicode `\d`, even with `u`).
pub fn digit() -> CharClass {
    CharClass::from_ranges([(0x30, 0x39)])
}

/// `\w` without the `i` flag: `[A-Za-z0-9_]`.
pub fn word() -> CharClass {
    CharClass::from_ranges([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
}

/// `\s`: ECMA-262 WhiteSpace (TAB, VT, FF, SP, NBSP, ZWNBSP and every
/// `Zs` character) plus LineTerminator (LF, CR, LS, PS). The `Zs` list is
/// stable since Unicode 4.
pub fn space() -> CharClass {
    CharClass::from_ranges([
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ])
}

/// The line terminators, which `.` does not match: LF, CR, U+2028, U+2029.
pub fn line_terminators() -> CharClass {
    CharClass::from_ranges([(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)])
}

/// `.` without the `s` flag.
pub fn dot() -> CharClass {
    line_terminators().negate()
}

/// General_Category values and aliases as ECMA-262 lists them (table
/// "Value aliases and canonical values for the Unicode property
/// General_Category"), each with the canonical name `regex-syntax` knows.
const GENERAL_CATEGORIES: &[(&str, &[&str])] = &[
    ("Cased_Letter", &["LC"]),
    ("Close_Punctuation", &["Pe"]),
    ("Connector_Punctuation", &["Pc"]),
    ("Control", &["Cc", "cntrl"]),
    ("Currency_Symbol", &["Sc"]),
    ("Dash_Punctuation", &["Pd"]),
    ("Decimal_Number", &["Nd", "digit"]),
    ("Enclosing_Mark", &["Me"]),
    ("Final_Punctuation", &["Pf"]),
    ("Format", &["Cf"]),
    ("Initial_Punctuation", &["Pi"]),
    ("Letter", &["L"]),
    ("Letter_Number", &["Nl"]),
    ("Line_Separator", &["Zl"]),
    ("Lowercase_Letter", &["Ll"]),
    ("Mark", &["M", "Combining_Mark"]),
    ("Math_Symbol", &["Sm"]),
    ("Modifier_Letter", &["Lm"]),
    ("Modifier_Symbol", &["Sk"]),
    ("Nonspacing_Mark", &["Mn"]),
    ("Number", &["N"]),
    ("Open_Punctuation", &["Ps"]),
    ("Other", &["C"]),
    ("Other_Letter", &["Lo"]),
    ("Other_Number", &["No"]),
    ("Other_Punctuation", &["Po"]),
    ("Other_Symbol", &["So"]),
    ("Paragraph_Separator", &["Zp"]),
    ("Private_Use", &["Co"]),
    ("Punctuation", &["P", "punct"]),
    ("Separator", &["Z"]),
    ("Space_Separator", &["Zs"]),
    ("Spacing_Mark", &["Mc"]),
    ("Surrogate", &["Cs"]),
    ("Symbol", &["S"]),
    ("Titlecase_Letter", &["Lt"]),
    ("Unassigned", &["Cn"]),
    ("Uppercase_Letter", &["Lu"]),
];

/// Binary properties ECMA-262 allows in `\p{...}` (table "Binary Unicode
/// property aliases and their canonical property names"), with aliases.
const BINARY_PROPERTIES: &[(&str, &[&str])] = &[
    ("ASCII", &[]),
    ("ASCII_Hex_Digit", &["AHex"]),
    ("Alphabetic", &["Alpha"]),
    ("Any", &[]),
    ("Assigned", &[]),
    ("Bidi_Control", &["Bidi_C"]),
    ("Bidi_Mirrored", &["Bidi_M"]),
    ("Case_Ignorable", &["CI"]),
    ("Cased", &[]),
    ("Changes_When_Casefolded", &["CWCF"]),
    ("Changes_When_Casemapped", &["CWCM"]),
    ("Changes_When_Lowercased", &["CWL"]),
    ("Changes_When_NFKC_Casefolded", &["CWKCF"]),
    ("Changes_When_Titlecased", &["CWT"]),
    ("Changes_When_Uppercased", &["CWU"]),
    ("Dash", &[]),
    ("Default_Ignorable_Code_Point", &["DI"]),
    ("Deprecated", &["Dep"]),
    ("Diacritic", &["Dia"]),
    ("Emoji", &[]),
    ("Emoji_Component", &["EComp"]),
    ("Emoji_Modifier", &["EMod"]),
    ("Emoji_Modifier_Base", &["EBase"]),
    ("Emoji_Presentation", &["EPres"]),
    ("Extended_Pictographic", &["ExtPict"]),
    ("Extender", &["Ext"]),
    ("Grapheme_Base", &["Gr_Base"]),
    ("Grapheme_Extend", &["Gr_Ext"]),
    ("Hex_Digit", &["Hex"]),
    ("IDS_Binary_Operator", &["IDSB"]),
    ("IDS_Trinary_Operator", &["IDST"]),
    ("ID_Continue", &["IDC"]),
    ("ID_Start", &["IDS"]),
    ("Ideographic", &["Ideo"]),
    ("Join_Control", &["Join_C"]),
    ("Logical_Order_Exception", &["LOE"]),
    ("Lowercase", &["Lower"]),
    ("Math", &[]),
    ("Noncharacter_Code_Point", &["NChar"]),
    ("Pattern_Syntax", &["Pat_Syn"]),
    ("Pattern_White_Space", &["Pat_WS"]),
    ("Quotation_Mark", &["QMark"]),
    ("Radical", &[]),
    ("Regional_Indicator", &["RI"]),
    ("Sentence_Terminal", &["STerm"]),
    ("Soft_Dotted", &["SD"]),
    ("Terminal_Punctuation", &["Term"]),
    ("Unified_Ideograph", &["UIdeo"]),
    ("Uppercase", &["Upper"]),
    ("Variation_Selector", &["VS"]),
    ("White_Space", &["space"]),
    ("XID_Continue", &["XIDC"]),
    ("XID_Start", &["XIDS"]),
];

fn lookup(
    table: &'static [(&'static str, &'static [&'static str])],
    name: &str,
) -> Option<&'static str> {
    table
        .iter()
        .find(|(canon, aliases)| *canon == name || aliases.contains(&name))
        .map(|(canon, _)| *canon)
}

/// Script values are spelled as in PropertyValueAliases.txt: a four-letter
/// ISO 15924 code (`Grek`) or a long name whose words start with a capital
/// letter (`Old_Italic`, `SignWriting`, `Nko`). `regex-syntax` checks that
/// the script exists; this check rejects the loose spellings (`greek`,
/// `old italic`) that ECMA-262 refuses.
fn plausible_script_spelling(v: &str) -> bool {
    !v.is_empty()
        && v.split('_').all(|w| {
            let mut cs = w.chars();
            matches!(cs.next(), Some(c) if c.is_ascii_uppercase())
                && cs.all(|c| c.is_ascii_alphanumeric())
        })
}

/// The code points of a `\p{...}` body (`name` is what is between the
/// braces), or a message saying why ECMA-262 rejects it.
pub fn property(name: &str) -> Result<CharClass, String> {
    let query = if let Some((prop, value)) = name.split_once('=') {
        match prop {
            "General_Category" | "gc" => match lookup(GENERAL_CATEGORIES, value) {
                Some(c) => format!("gc={c}"),
                None => return Err(format!("unknown General_Category value '{value}'")),
            },
            "Script" | "sc" | "Script_Extensions" | "scx" => {
                if !plausible_script_spelling(value) {
                    return Err(format!("unknown script '{value}'"));
                }
                let p = if prop.starts_with("Script_") || prop == "scx" {
                    "scx"
                } else {
                    "sc"
                };
                format!("{p}={value}")
            }
            _ => return Err(format!("unknown Unicode property '{prop}'")),
        }
    } else if let Some(c) = lookup(GENERAL_CATEGORIES, name) {
        format!("gc={c}")
    } else if let Some(b) = lookup(BINARY_PROPERTIES, name) {
        b.to_string()
    } else {
        return Err(format!("unknown Unicode property '{name}'"));
    };
    let mut parser = regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(true)
        .build();
    let hir = parser
        .parse(&format!("\\p{{{query}}}"))
        .map_err(|_| format!("unknown Unicode property value '{name}'"))?;
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(c)) => {
            Ok(CharClass::from_ranges(
                c.ranges()
                    .iter()
                    .map(|r| (r.start() as u32, r.end() as u32)),
            ))
        }
        // `\p{Any}` and friends may come back as other HIR shapes.
        _ => Err(format!(
            "Unicode property '{name}' is not a set of code points"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_use_exact_ecma_names() {
        assert!(property("L").unwrap().contains('é' as u32));
        assert!(property("Letter").unwrap().contains('é' as u32));
        assert!(property("letter").is_err());
        assert!(property("digit").unwrap().contains(0x09EA));
        assert!(property("Script=Greek").unwrap().contains(0x3B1));
        assert!(property("sc=Grek").unwrap().contains(0x3B1));
        assert!(property("Script=greek").is_err());
        assert!(property("scx=Latn").unwrap().contains('a' as u32));
        assert!(property("Any").unwrap().contains(0x10FFFF));
        assert!(property("ASCII").unwrap().contains(0x7F));
        assert!(!property("ASCII").unwrap().contains(0x80));
        assert!(property("Assigned").unwrap().contains('a' as u32));
        assert!(property("Greek").is_err());
        assert!(property("White_Space").unwrap().contains(0x3000));
        assert!(property("Cn").unwrap().contains(0x378));
    }
}
