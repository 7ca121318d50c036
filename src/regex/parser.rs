//! A parser for ECMA-262 `Pattern` syntax, written from the grammar in the
//! specification (section 22.2.1 and Annex B.1.2).
//!
//! Two syntaxes are recognised:
//! - [`Syntax::Unicode`]: the grammar with the `u` flag (`[+UnicodeMode]`),
//!   which is what JSON Schema intends: strict escapes, `\u{...}`, `\p{...}`,
//!   no lone `{ } ]`.
//! - [`Syntax::Legacy`]: the Annex B grammar used without the `u` flag
//!   (identity escapes of any character, lone `{ } ]`, legacy octal
//!   escapes, `\c` without a letter, quantified lookaheads). Characters still
//!   mean code points (see the module documentation of [`super`]).
//! - [`Syntax::StdRegex`]: the ECMAScript dialect of C++'s `std::regex`
//!   (libstdc++), in which llama.cpp writes its lazy-grammar trigger
//!   patterns: the legacy grammar without lookbehinds, named groups,
//!   `\p{...}` or `\u{...}`, with `.` excluding only `\n` and `\r`, `\s`
//!   ASCII whitespace, POSIX classes such as `[[:alpha:]]` in brackets, and
//!   capturing groups kept as [`Node::Group`] (the trigger start is the first
//!   non-empty group).
//!
//! Offsets in error messages count code points from the start of the
//! pattern, starting at 0.

use super::unicode;
use crate::error::{Error, Result};
use crate::ir::CharClass;

/// Which grammar to parse with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Unicode,
    Legacy,
    StdRegex,
}

/// The parsed pattern. Capturing groups are plain sub-expressions (only
/// their language matters) except in [`Syntax::StdRegex`], which keeps them
/// as [`Node::Group`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Empty,
    /// One code point from the class.
    Char(CharClass),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
        /// `false` for a lazy quantifier (`*?`): the same language, another
        /// match priority (only where a match is found depends on it).
        greedy: bool,
        at: usize,
    },
    /// `^` (no `m` flag: start of the string).
    Start {
        at: usize,
    },
    /// `$` (no `m` flag: end of the string).
    End {
        at: usize,
    },
    /// `\b` (or `\B` when `negated`).
    WordBoundary {
        negated: bool,
        at: usize,
    },
    /// `(?=...)`, `(?!...)`, `(?<=...)`, `(?<!...)`.
    Look {
        behind: bool,
        negated: bool,
        node: Box<Node>,
        at: usize,
    },
    /// Capturing group number `index` (from 1, in the order of the opening
    /// parentheses); only [`Syntax::StdRegex`] makes them.
    Group {
        index: u32,
        node: Box<Node>,
    },
}

impl Node {
    /// Contains a lookahead or lookbehind.
    pub fn has_look(&self) -> bool {
        match self {
            Node::Look { .. } => true,
            Node::Seq(v) | Node::Alt(v) => v.iter().any(Node::has_look),
            Node::Repeat { node, .. } | Node::Group { node, .. } => node.has_look(),
            _ => false,
        }
    }

    /// Contains a capturing group ([`Syntax::StdRegex`] only).
    pub fn has_groups(&self) -> bool {
        match self {
            Node::Group { .. } => true,
            Node::Seq(v) | Node::Alt(v) => v.iter().any(Node::has_groups),
            Node::Repeat { node, .. } | Node::Look { node, .. } => node.has_groups(),
            _ => false,
        }
    }

    /// The same pattern with its capturing groups as plain sub-expressions
    /// (what the language translation expects).
    pub fn without_groups(&self) -> Node {
        match self {
            Node::Group { node, .. } => node.without_groups(),
            Node::Seq(v) => Node::Seq(v.iter().map(Node::without_groups).collect()),
            Node::Alt(v) => Node::Alt(v.iter().map(Node::without_groups).collect()),
            Node::Repeat {
                node,
                min,
                max,
                greedy,
                at,
            } => Node::Repeat {
                node: Box::new(node.without_groups()),
                min: *min,
                max: *max,
                greedy: *greedy,
                at: *at,
            },
            Node::Look {
                behind,
                negated,
                node,
                at,
            } => Node::Look {
                behind: *behind,
                negated: *negated,
                node: Box::new(node.without_groups()),
                at: *at,
            },
            other => other.clone(),
        }
    }
}

/// Deepest nesting of groups and classes accepted (the parser recurses).
pub const MAX_NESTING: usize = 200;
/// Longest pattern accepted, in code points.
pub const MAX_PATTERN_LEN: usize = 100_000;
/// Largest product of nested repetition counts (`(a{100}){100}` is 10,000):
/// the compiler expands counted repetitions, so this bounds its work.
pub const MAX_REPEAT_PRODUCT: u64 = 10_000;

fn syntax_err(at: usize, msg: impl std::fmt::Display) -> Error {
    Error::parse(format!("regex syntax error at offset {at}: {msg}"))
}

fn unsupported(at: usize, msg: impl std::fmt::Display) -> Error {
    Error::unsupported(format!(
        "regex construct not supported at offset {at}: {msg}"
    ))
}

/// Parses `pattern` with the given syntax.
pub fn parse(pattern: &str, syntax: Syntax) -> Result<Node> {
    let chars: Vec<char> = pattern.chars().collect();
    if chars.len() > MAX_PATTERN_LEN {
        return Err(Error::limit(format!(
            "regex pattern of {} characters exceeds the limit of {MAX_PATTERN_LEN}",
            chars.len()
        )));
    }
    let (groups, names) = scan_groups(&chars);
    let mut p = Parser {
        c: chars,
        i: 0,
        unicode: syntax == Syntax::Unicode,
        std_regex: syntax == Syntax::StdRegex,
        groups,
        names,
        next_group: 0,
        depth: 0,
    };
    // Named groups switch Annex B's `\k` to a group reference.
    let mut seen: Vec<&str> = Vec::new();
    for (name, at) in &p.names {
        if seen.contains(&name.as_str()) {
            return Err(syntax_err(*at, format!("duplicate group name '{name}'")));
        }
        seen.push(name);
    }
    let node = p.disjunction()?;
    if p.i < p.c.len() {
        // Only an unmatched ')' stops a top-level disjunction early.
        return Err(syntax_err(p.i, "unmatched ')'"));
    }
    check_repeat_product(&node, 1)?;
    Ok(node)
}

/// Errors when nested counted repetitions multiply past
/// [`MAX_REPEAT_PRODUCT`] (an unbounded repetition counts its minimum).
fn check_repeat_product(node: &Node, outer: u64) -> Result<()> {
    match node {
        Node::Repeat {
            node, min, max, at, ..
        } => {
            let f = outer.saturating_mul(max.unwrap_or(*min).max(1) as u64);
            if f > MAX_REPEAT_PRODUCT {
                return Err(Error::limit(format!(
                    "regex repetition at offset {at}: nested repetition counts multiply to {f}, \
                     above the limit of {MAX_REPEAT_PRODUCT}"
                )));
            }
            check_repeat_product(node, f)
        }
        Node::Seq(v) | Node::Alt(v) => v.iter().try_for_each(|n| check_repeat_product(n, outer)),
        Node::Look { node, .. } | Node::Group { node, .. } => check_repeat_product(node, outer),
        _ => Ok(()),
    }
}

/// Counts capturing groups and collects group names, as the specification
/// does before parsing (`\2` is a reference only when two groups exist
/// anywhere in the pattern).
fn scan_groups(c: &[char]) -> (u32, Vec<(String, usize)>) {
    let mut n = 0u32;
    let mut names = Vec::new();
    let mut i = 0;
    let mut in_class = false;
    while i < c.len() {
        match c[i] {
            '\\' => i += 1,
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class => {
                if c.get(i + 1) != Some(&'?') {
                    n += 1;
                } else if c.get(i + 2) == Some(&'<')
                    && !matches!(c.get(i + 3), Some('=') | Some('!'))
                {
                    n += 1;
                    let start = i + 3;
                    let mut j = start;
                    while j < c.len() && c[j] != '>' {
                        j += 1;
                    }
                    names.push((c[start..j.min(c.len())].iter().collect(), i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    (n, names)
}

/// A class atom: one code point or a set from an escape (`\d`).
enum ClassAtom {
    One(u32),
    Set(CharClass),
}

struct Parser {
    c: Vec<char>,
    i: usize,
    unicode: bool,
    /// [`Syntax::StdRegex`] (implies the legacy grammar).
    std_regex: bool,
    groups: u32,
    /// Capturing groups opened so far ([`Syntax::StdRegex`] numbers them).
    next_group: u32,
    names: Vec<(String, usize)>,
    depth: usize,
}

fn is_syntax_char(c: char) -> bool {
    matches!(
        c,
        '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|'
    )
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<char> {
        self.c.get(self.i + k).copied()
    }

    fn eat(&mut self, ch: char) -> bool {
        if self.peek() == Some(ch) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn looking_at(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(k, ch)| self.peek_at(k) == Some(ch))
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Error::limit(format!(
                "regex nesting deeper than {MAX_NESTING} at offset {}",
                self.i
            )));
        }
        Ok(())
    }

    fn disjunction(&mut self) -> Result<Node> {
        let mut alts = vec![self.alternative()?];
        while self.eat('|') {
            alts.push(self.alternative()?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap()
        } else {
            Node::Alt(alts)
        })
    }

    fn alternative(&mut self) -> Result<Node> {
        let mut items = Vec::new();
        while let Some(ch) = self.peek() {
            if ch == '|' || ch == ')' {
                break;
            }
            items.push(self.term()?);
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap(),
            _ => Node::Seq(items),
        })
    }

    fn term(&mut self) -> Result<Node> {
        let at = self.i;
        // Assertions.
        let assertion = match self.peek() {
            Some('^') => {
                self.i += 1;
                Some(Node::Start { at })
            }
            Some('$') => {
                self.i += 1;
                Some(Node::End { at })
            }
            Some('\\') if matches!(self.peek_at(1), Some('b') | Some('B')) => {
                let negated = self.peek_at(1) == Some('B');
                self.i += 2;
                Some(Node::WordBoundary { negated, at })
            }
            _ => None,
        };
        if let Some(a) = assertion {
            if self.quantifier_ahead() {
                return Err(syntax_err(
                    self.i,
                    "nothing to repeat (a quantifier after an assertion)",
                ));
            }
            return Ok(a);
        }
        let look = if self.looking_at("(?=") {
            Some((false, false, 3))
        } else if self.looking_at("(?!") {
            Some((false, true, 3))
        } else if self.looking_at("(?<=") {
            Some((true, false, 4))
        } else if self.looking_at("(?<!") {
            Some((true, true, 4))
        } else {
            None
        };
        if let Some((behind, negated, len)) = look {
            if behind && self.std_regex {
                return Err(syntax_err(
                    at,
                    "lookbehind '(?<=' / '(?<!' (std::regex's ECMAScript has none)",
                ));
            }
            self.i += len;
            self.enter()?;
            let body = self.disjunction()?;
            self.depth -= 1;
            if !self.eat(')') {
                return Err(syntax_err(at, "unterminated group"));
            }
            let node = Node::Look {
                behind,
                negated,
                node: Box::new(body),
                at,
            };
            // Annex B lets lookaheads (not lookbehinds) take a quantifier.
            if self.quantifier_ahead() {
                if self.unicode || behind {
                    return Err(syntax_err(
                        self.i,
                        "nothing to repeat (a quantifier after a lookaround)",
                    ));
                }
                let (min, _max, _greedy) = self.quantifier()?.expect("quantifier ahead");
                // A zero-width assertion repeated: optional means always true.
                return Ok(if min == 0 { Node::Empty } else { node });
            }
            return Ok(node);
        }
        let atom = self.atom()?;
        Ok(match self.quantifier()? {
            None => atom,
            Some((min, max, greedy)) => Node::Repeat {
                node: Box::new(atom),
                min,
                max,
                greedy,
                at,
            },
        })
    }

    /// Is a quantifier next (`* + ?` or a well-formed `{n}`, `{n,}`, `{n,m}`)?
    fn quantifier_ahead(&self) -> bool {
        match self.peek() {
            Some('*') | Some('+') | Some('?') => true,
            Some('{') => self.brace_quantifier_len().is_some(),
            _ => false,
        }
    }

    /// Length of a well-formed brace quantifier at the cursor.
    fn brace_quantifier_len(&self) -> Option<usize> {
        let mut k = 1;
        let digits = |k: &mut usize| {
            let s = *k;
            while matches!(self.peek_at(*k), Some(c) if c.is_ascii_digit()) {
                *k += 1;
            }
            *k > s
        };
        if !digits(&mut k) {
            return None;
        }
        if self.peek_at(k) == Some(',') {
            k += 1;
            digits(&mut k);
        }
        (self.peek_at(k) == Some('}')).then_some(k + 1)
    }

    fn number(&self, from: usize, to: usize) -> u64 {
        self.c[from..to].iter().fold(0u64, |acc, d| {
            acc.saturating_mul(10)
                .saturating_add(d.to_digit(10).unwrap() as u64)
        })
    }

    /// Parses an optional quantifier: `(min, max, greedy)` (a lazy `?`
    /// does not change the language, only the match priority).
    fn quantifier(&mut self) -> Result<Option<(u32, Option<u32>, bool)>> {
        let at = self.i;
        let q = match self.peek() {
            Some('*') => {
                self.i += 1;
                (0, None)
            }
            Some('+') => {
                self.i += 1;
                (1, None)
            }
            Some('?') => {
                self.i += 1;
                (0, Some(1))
            }
            Some('{') => match self.brace_quantifier_len() {
                None => {
                    if self.unicode {
                        return Err(syntax_err(at, "incomplete quantifier '{'"));
                    }
                    return Ok(None);
                }
                Some(len) => {
                    let body_start = at + 1;
                    let end = at + len - 1;
                    let comma = (body_start..end).find(|&k| self.c[k] == ',');
                    let (min, max) = match comma {
                        None => {
                            let n = self.number(body_start, end);
                            (n, Some(n))
                        }
                        Some(cpos) => {
                            let n = self.number(body_start, cpos);
                            let m = (cpos + 1 < end).then(|| self.number(cpos + 1, end));
                            (n, m)
                        }
                    };
                    if let Some(m) = max {
                        if m < min {
                            return Err(syntax_err(at, "numbers out of order in {} quantifier"));
                        }
                    }
                    self.i += len;
                    let limit = MAX_REPEAT_PRODUCT;
                    if min > limit || max.is_some_and(|m| m > limit) {
                        return Err(Error::limit(format!(
                            "regex repetition count at offset {at} exceeds {limit}"
                        )));
                    }
                    (min as u32, max.map(|m| m as u32))
                }
            },
            _ => return Ok(None),
        };
        let greedy = !self.eat('?');
        Ok(Some((q.0, q.1, greedy)))
    }

    fn atom(&mut self) -> Result<Node> {
        let at = self.i;
        let ch = self.peek().expect("atom at end");
        match ch {
            '.' => {
                self.i += 1;
                Ok(Node::Char(if self.std_regex {
                    // libstdc++: any character but '\n' and '\r'.
                    CharClass::from_ranges([(0x0A, 0x0A), (0x0D, 0x0D)]).negate()
                } else {
                    unicode::dot()
                }))
            }
            '(' => self.group(),
            '[' => {
                self.enter()?;
                let c = self.class()?;
                self.depth -= 1;
                Ok(Node::Char(c))
            }
            '\\' => self.atom_escape(),
            '*' | '+' | '?' => Err(syntax_err(at, "nothing to repeat")),
            '{' => {
                if self.unicode || self.brace_quantifier_len().is_some() {
                    Err(syntax_err(
                        at,
                        if self.unicode {
                            "lone quantifier bracket '{' (escape it as '\\{')"
                        } else {
                            "nothing to repeat"
                        },
                    ))
                } else {
                    self.i += 1;
                    Ok(Node::Char(CharClass::single('{' as u32)))
                }
            }
            '}' | ']' if self.unicode => Err(syntax_err(
                at,
                format!("lone '{ch}' (escape it as '\\{ch}')"),
            )),
            _ => {
                self.i += 1;
                Ok(Node::Char(CharClass::single(ch as u32)))
            }
        }
    }

    fn group(&mut self) -> Result<Node> {
        let at = self.i;
        self.i += 1;
        let mut capture = None;
        if self.eat('?') {
            if self.eat(':') {
                // non-capturing
            } else if self.std_regex {
                return Err(syntax_err(
                    at,
                    "invalid group: std::regex's ECMAScript has only '(?:', '(?=' and '(?!'",
                ));
            } else if self.eat('<') {
                let start = self.i;
                while let Some(c) = self.peek() {
                    if c == '>' {
                        break;
                    }
                    self.i += 1;
                }
                if self.peek() != Some('>') {
                    return Err(syntax_err(at, "unterminated group name"));
                }
                let name: String = self.c[start..self.i].iter().collect();
                check_group_name(&name, start)?;
                self.i += 1;
            } else {
                return Err(syntax_err(
                    at,
                    "invalid group: '(?' must be followed by ':', '=', '!', '<=', '<!' or '<name>' \
                     (inline flags are not ECMA-262)",
                ));
            }
        } else if self.std_regex {
            self.next_group += 1;
            capture = Some(self.next_group);
        }
        self.enter()?;
        let body = self.disjunction()?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(syntax_err(at, "unterminated group"));
        }
        Ok(match capture {
            Some(index) => Node::Group {
                index,
                node: Box::new(body),
            },
            None => body,
        })
    }

    fn atom_escape(&mut self) -> Result<Node> {
        let at = self.i;
        self.i += 1;
        let Some(ch) = self.peek() else {
            return Err(syntax_err(at, "'\\' at end of pattern"));
        };
        match ch {
            '1'..='9' => {
                let start = self.i;
                let mut end = start;
                while matches!(self.c.get(end), Some(c) if c.is_ascii_digit()) {
                    end += 1;
                }
                let n = self.number(start, end);
                if n <= self.groups as u64 {
                    return Err(unsupported(
                        at,
                        format!("backreference '\\{n}' (not a regular language)"),
                    ));
                }
                if self.unicode {
                    return Err(syntax_err(
                        at,
                        format!("invalid escape '\\{n}': no such group"),
                    ));
                }
                Ok(Node::Char(CharClass::single(
                    self.legacy_octal_or_identity(),
                )))
            }
            '0' => {
                if matches!(self.peek_at(1), Some(c) if c.is_ascii_digit()) {
                    if self.unicode {
                        return Err(syntax_err(at, "invalid decimal escape"));
                    }
                    return Ok(Node::Char(CharClass::single(
                        self.legacy_octal_or_identity(),
                    )));
                }
                self.i += 1;
                Ok(Node::Char(CharClass::single(0)))
            }
            'k' if self.unicode || !self.names.is_empty() => {
                self.i += 1;
                if !self.eat('<') {
                    return Err(syntax_err(
                        at,
                        "invalid named reference: '\\k' needs '<name>'",
                    ));
                }
                let start = self.i;
                while matches!(self.peek(), Some(c) if c != '>') {
                    self.i += 1;
                }
                let name: String = self.c[start..self.i].iter().collect();
                if !self.eat('>') || !self.names.iter().any(|(n, _)| *n == name) {
                    return Err(syntax_err(
                        at,
                        format!("invalid named reference '\\k<{name}>'"),
                    ));
                }
                Err(unsupported(
                    at,
                    format!("backreference '\\k<{name}>' (not a regular language)"),
                ))
            }
            _ => match self.class_escape_common(at, false)? {
                ClassAtom::One(c) => Ok(Node::Char(CharClass::single(c))),
                ClassAtom::Set(s) => Ok(Node::Char(s)),
            },
        }
    }

    /// Annex B: `\` followed by digits that are not a group reference:
    /// a legacy octal escape (`\12`, at most `\377`), or `8`/`9` themselves.
    fn legacy_octal_or_identity(&mut self) -> u32 {
        let d = self.peek().unwrap();
        if d == '8' || d == '9' {
            self.i += 1;
            return d as u32;
        }
        let first = d.to_digit(8).unwrap();
        self.i += 1;
        let mut v = first;
        let max_len = if first <= 3 { 3 } else { 2 };
        for _ in 1..max_len {
            match self.peek().and_then(|c| c.to_digit(8)) {
                Some(o) => {
                    v = v * 8 + o;
                    self.i += 1;
                }
                None => break,
            }
        }
        v
    }

    /// Escapes valid both in atoms and in classes, after the backslash
    /// (`at` is the backslash's offset). `\b` and `\-` are handled by the
    /// class parser before this.
    fn class_escape_common(&mut self, at: usize, in_class: bool) -> Result<ClassAtom> {
        let ch = self.peek().unwrap();
        self.i += 1;
        let one = |c: char| Ok(ClassAtom::One(c as u32));
        match ch {
            'd' => Ok(ClassAtom::Set(unicode::digit())),
            'D' => Ok(ClassAtom::Set(unicode::digit().negate())),
            'w' => Ok(ClassAtom::Set(unicode::word())),
            'W' => Ok(ClassAtom::Set(unicode::word().negate())),
            's' | 'S' => {
                // libstdc++ asks the C locale's isspace: ASCII whitespace.
                let space = if self.std_regex {
                    CharClass::from_ranges([(0x09, 0x0D), (0x20, 0x20)])
                } else {
                    unicode::space()
                };
                Ok(ClassAtom::Set(if ch == 'S' {
                    space.negate()
                } else {
                    space
                }))
            }
            // Without `u`, JavaScript reads `\p{L}` as the letters `p{L}`;
            // the legacy fallback keeps the evident intent (a property).
            'p' | 'P' if self.unicode || (self.peek() == Some('{') && !self.std_regex) => {
                if !self.eat('{') {
                    return Err(syntax_err(
                        at,
                        format!("invalid property escape: '\\{ch}' needs '{{...}}'"),
                    ));
                }
                let start = self.i;
                while matches!(self.peek(), Some(c) if c != '}') {
                    self.i += 1;
                }
                if self.peek() != Some('}') {
                    return Err(syntax_err(at, "unterminated property escape"));
                }
                let name: String = self.c[start..self.i].iter().collect();
                self.i += 1;
                let set = unicode::property(&name).map_err(|m| syntax_err(at, m))?;
                Ok(ClassAtom::Set(if ch == 'P' { set.negate() } else { set }))
            }
            'f' => Ok(ClassAtom::One(0x0C)),
            'n' => Ok(ClassAtom::One(0x0A)),
            'r' => Ok(ClassAtom::One(0x0D)),
            't' => Ok(ClassAtom::One(0x09)),
            'v' => Ok(ClassAtom::One(0x0B)),
            'c' => match self.peek() {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.i += 1;
                    Ok(ClassAtom::One(l as u32 % 32))
                }
                // Annex B: in classes, `\c` also takes a digit or `_`.
                Some(l) if !self.unicode && in_class && (l.is_ascii_digit() || l == '_') => {
                    self.i += 1;
                    Ok(ClassAtom::One(l as u32 % 32))
                }
                _ if self.unicode => Err(syntax_err(at, "invalid control escape '\\c'")),
                // Annex B: the backslash is itself, and `c` is read again.
                _ => {
                    self.i -= 1;
                    one('\\')
                }
            },
            'x' => {
                let h = (self.hex_digit(0), self.hex_digit(1));
                match h {
                    (Some(a), Some(b)) => {
                        self.i += 2;
                        Ok(ClassAtom::One(a * 16 + b))
                    }
                    _ if self.unicode || self.std_regex => {
                        Err(syntax_err(at, "invalid escape '\\x': needs two hex digits"))
                    }
                    _ => one('x'),
                }
            }
            'u' if self.std_regex && self.peek() == Some('{') => Err(syntax_err(
                at,
                "invalid escape '\\u{': std::regex needs '\\u' and four hex digits",
            )),
            'u' => match self.unicode_escape_body()? {
                Some(v) => Ok(ClassAtom::One(v)),
                None if self.unicode || self.std_regex => {
                    Err(syntax_err(at, "invalid unicode escape"))
                }
                None => one('u'),
            },
            _ if self.unicode => {
                if is_syntax_char(ch) || ch == '/' || (in_class && ch == '-') {
                    one(ch)
                } else {
                    Err(syntax_err(
                        at,
                        format!("invalid escape '\\{ch}' (only syntax characters and '/' may be escaped with the u flag)"),
                    ))
                }
            }
            _ => one(ch),
        }
    }

    fn hex_digit(&self, k: usize) -> Option<u32> {
        self.peek_at(k).and_then(|c| c.to_digit(16))
    }

    /// After `\u`: `HHHH` (a surrogate pair written as two escapes is one
    /// code point) or, with `u`, `{H...}`. `None` when malformed (the cursor
    /// is then unchanged).
    fn unicode_escape_body(&mut self) -> Result<Option<u32>> {
        if self.peek() == Some('{') {
            let at = self.i;
            let mut k = 1;
            let mut v: u64 = 0;
            while let Some(d) = self.hex_digit(k) {
                v = (v * 16 + d as u64).min(0x11_0000);
                k += 1;
            }
            if k == 1 || self.peek_at(k) != Some('}') || v > 0x10FFFF {
                if !self.unicode {
                    return Ok(None);
                }
                return Err(syntax_err(at, "invalid unicode escape '\\u{...}'"));
            }
            self.i += k + 1;
            return Ok(Some(v as u32));
        }
        let four = |p: &Self, off: usize| -> Option<u32> {
            (0..4).try_fold(0u32, |acc, k| p.hex_digit(off + k).map(|d| acc * 16 + d))
        };
        let Some(v) = four(self, 0) else {
            return Ok(None);
        };
        self.i += 4;
        if (0xD800..0xDC00).contains(&v) && self.looking_at("\\u") {
            if let Some(lo) = four(self, 2) {
                if (0xDC00..0xE000).contains(&lo) {
                    self.i += 6;
                    return Ok(Some(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)));
                }
            }
        }
        Ok(Some(v))
    }

    /// `[...]` at the cursor. A lone surrogate (`[\uD800]`) can never match
    /// text that is valid UTF-8, so it contributes nothing.
    fn class(&mut self) -> Result<CharClass> {
        let at = self.i;
        self.i += 1;
        let negated = self.eat('^');
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        let mut set = CharClass::empty();
        loop {
            let Some(ch) = self.peek() else {
                return Err(syntax_err(at, "unterminated character class"));
            };
            if ch == ']' {
                self.i += 1;
                break;
            }
            let a_at = self.i;
            if self.std_regex && self.peek() == Some('[') {
                if let Some(posix) = self.posix_class()? {
                    set = set.union(&posix);
                    continue;
                }
            }
            let a = self.class_atom()?;
            if self.peek() == Some('-') && self.peek_at(1).is_some() && self.peek_at(1) != Some(']')
            {
                self.i += 1;
                let b = self.class_atom()?;
                match (a, b) {
                    (ClassAtom::One(lo), ClassAtom::One(hi)) => {
                        if lo > hi {
                            return Err(syntax_err(a_at, "range out of order in character class"));
                        }
                        ranges.push((lo, hi));
                    }
                    (a, b) => {
                        if self.unicode {
                            return Err(syntax_err(
                                a_at,
                                "invalid character class range: a class escape (like \\d) cannot be a range bound",
                            ));
                        }
                        // Annex B: both operands and the '-' itself.
                        for x in [a, b] {
                            match x {
                                ClassAtom::One(c) => ranges.push((c, c)),
                                ClassAtom::Set(s) => set = set.union(&s),
                            }
                        }
                        ranges.push(('-' as u32, '-' as u32));
                    }
                }
            } else {
                match a {
                    ClassAtom::One(c) => ranges.push((c, c)),
                    ClassAtom::Set(s) => set = set.union(&s),
                }
            }
        }
        let c = set.union(&CharClass::from_ranges(ranges));
        Ok(if negated { c.negate() } else { c })
    }

    /// std::regex: a POSIX class `[:name:]` inside brackets (the C
    /// locale's ASCII sets); `None` when the `[` starts no such class.
    /// Collating elements and equivalence classes (`[.x.]`, `[=x=]`) are
    /// not supported.
    fn posix_class(&mut self) -> Result<Option<CharClass>> {
        let at = self.i;
        match self.peek_at(1) {
            Some(':') => {}
            Some('.') | Some('=') => {
                return Err(unsupported(
                    at,
                    "collating element or equivalence class in brackets",
                ))
            }
            _ => return Ok(None),
        }
        let start = self.i + 2;
        let mut end = start;
        while matches!(self.c.get(end), Some(c) if c.is_ascii_alphabetic()) {
            end += 1;
        }
        if self.c.get(end) != Some(&':') || self.c.get(end + 1) != Some(&']') {
            return Err(syntax_err(at, "unterminated POSIX class '[:'"));
        }
        let name: String = self.c[start..end].iter().collect();
        let r = |v: &[(u32, u32)]| CharClass::from_ranges(v.iter().copied());
        let class = match name.as_str() {
            "alnum" => r(&[(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)]),
            "alpha" => r(&[(0x41, 0x5A), (0x61, 0x7A)]),
            "blank" => r(&[(0x09, 0x09), (0x20, 0x20)]),
            "cntrl" => r(&[(0x00, 0x1F), (0x7F, 0x7F)]),
            "digit" | "d" => unicode::digit(),
            "graph" => r(&[(0x21, 0x7E)]),
            "lower" => r(&[(0x61, 0x7A)]),
            "print" => r(&[(0x20, 0x7E)]),
            "punct" => r(&[(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)]),
            "space" | "s" => r(&[(0x09, 0x0D), (0x20, 0x20)]),
            "upper" => r(&[(0x41, 0x5A)]),
            "xdigit" => r(&[(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)]),
            "w" => unicode::word(),
            _ => return Err(syntax_err(at, format!("unknown POSIX class '[:{name}:]'"))),
        };
        self.i = end + 2;
        Ok(Some(class))
    }

    fn class_atom(&mut self) -> Result<ClassAtom> {
        let at = self.i;
        let ch = self.peek().unwrap();
        self.i += 1;
        if ch != '\\' {
            return Ok(ClassAtom::One(ch as u32));
        }
        let Some(e) = self.peek() else {
            return Err(syntax_err(at, "'\\' at end of pattern"));
        };
        match e {
            'b' => {
                self.i += 1;
                Ok(ClassAtom::One(0x08))
            }
            '-' => {
                self.i += 1;
                Ok(ClassAtom::One('-' as u32))
            }
            '0' if !matches!(self.peek_at(1), Some(c) if c.is_ascii_digit()) => {
                self.i += 1;
                Ok(ClassAtom::One(0))
            }
            '0'..='9' => {
                if self.unicode {
                    return Err(syntax_err(
                        at,
                        "invalid class escape (decimal escape in a class)",
                    ));
                }
                Ok(ClassAtom::One(self.legacy_octal_or_identity()))
            }
            'B' if self.unicode => Err(syntax_err(at, "invalid class escape '\\B'")),
            'k' if self.unicode => Err(syntax_err(at, "invalid class escape '\\k'")),
            _ => self.class_escape_common(at, true),
        }
    }
}

/// ECMA-262 group names are identifiers: ID_Start, `$` or `_`, then
/// ID_Continue, `$`, ZWNJ or ZWJ. Escapes in names are rare and not parsed.
fn check_group_name(name: &str, at: usize) -> Result<()> {
    if name.contains('\\') {
        return Err(unsupported(at, "escape sequence in a group name"));
    }
    let mut cs = name.chars();
    let ok_start = |c: char| c == '$' || c == '_' || c.is_alphabetic();
    let ok_cont =
        |c: char| c == '$' || c == '_' || c == '\u{200C}' || c == '\u{200D}' || c.is_alphanumeric();
    match cs.next() {
        Some(c) if ok_start(c) && cs.all(ok_cont) => Ok(()),
        _ => Err(syntax_err(at, format!("invalid group name '{name}'"))),
    }
}
