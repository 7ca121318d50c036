//! The GBNF parser: a recursive descent over the text that builds IR
//! expressions directly.
//!
//! The structure follows llama.cpp's grammar reader decision for decision
//! (where newlines may appear, what ends a rule, which item a postfix operator
//! applies to), because the same texts must be accepted and rejected. The
//! parser also keeps a small model of llama.cpp's *symbol table*: llama.cpp
//! gives every rule name and every rule it generates (one per group, one per
//! optional copy of a repeated item) a number, and two of its checks depend
//! on those numbers:
//! - the nested-repetition limit multiplies the repetition count by "the
//!   number of symbols created while parsing the repeated group" (which
//!   counts rule names seen there for the first time, too);
//! - its undefined-rule check looks at every rule slot below the largest
//!   defined symbol and at every reference that survives into a stored rule
//!   (so a reference to an undefined rule inside a definition that a later
//!   one overrides is an error or not depending on symbol order).
//!
//! Neither check needs the generated rules themselves, only counts and which
//! references survive. A third one does: llama.cpp's left-recursion check
//! runs on its desugared rules with its own notion of "may be empty", so the
//! parser also records a compact [`Shadow`] of that rule table (only what
//! the check reads). The IR itself stays free of llama.cpp's desugaring.

use std::collections::HashMap;
use std::fmt;

use crate::error::{Error, Result};
use crate::ir::{CharClass, Expr, Rule, TokenSet};
use crate::limits::Deadline;
use crate::vocab::Vocab;

/// llama.cpp's `MAX_REPETITION_THRESHOLD`: a repetition minimum above it is
/// an error, a maximum above it means "unbounded", and the product of
/// nested repetition expansions may not exceed it.
pub const MAX_REPETITION_THRESHOLD: u64 = 2000;

/// Deepest nesting of parenthesised groups accepted: above what llama.cpp
/// accepts on an 8 MiB stack (the pinned build parses 18,671 nested groups
/// and overflows its stack from about 18,700 on; measured with
/// `llama_sampler_init_grammar` on a program's main thread). This parser
/// and every later pass over the IR recurse as deep as the groups nest,
/// on the compile stack ([`crate::limits::COMPILE_STACK_BYTES`], 256 MiB):
/// 100,000 levels ran there without running out, so the bound leaves
/// a wide margin, and no pass is quadratic in the depth (20,000 levels
/// of every shape tried compile in under 0.1 s with the Llama 3
/// vocabulary).
pub const MAX_NESTING: usize = 20_000;

/// Parses the rules of a GBNF text (see [`super::parse_rules`]).
pub(super) fn parse_rules(
    text: &str,
    vocab: Option<&Vocab>,
    deadline: &Deadline,
) -> Result<Parsed> {
    if let Some(nul) = text.find('\0') {
        return Err(error_at(
            text,
            nul,
            "NUL character in the grammar text (llama.cpp would silently stop reading here)",
        ));
    }
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        vocab,
        names: Vec::new(),
        name_index: HashMap::new(),
        refs: Vec::new(),
        n_symbols: 0,
        max_rule_symbol: None,
        defined_order: Vec::new(),
        depth: 0,
        shadow: Shadow::default(),
    };
    p.skip_space(true);
    let mut rules = 0u32;
    while p.pos < p.bytes.len() {
        p.parse_rule()?;
        rules = rules.wrapping_add(1);
        if rules.is_multiple_of(1024) {
            deadline.check()?;
        }
    }
    p.finish()
}

/// `line:column: message`, both 1-based; the column counts characters.
/// `\r\n`, `\n` and a lone `\r` each end a line, as they do for llama.cpp.
fn error_at(text: &str, offset: usize, message: impl fmt::Display) -> Error {
    let (line, col) = line_col(text, offset);
    Error::parse(format!("{line}:{col}: {message}"))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut col = 1;
    let mut chars = text[..offset.min(text.len())].chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                line += 1;
                col = 1;
            }
            '\n' => {
                line += 1;
                col = 1;
            }
            _ => col += 1,
        }
    }
    (line, col)
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// One rule name: its llama.cpp symbol number and its last definition.
struct Name<'a> {
    text: &'a str,
    symbol: u64,
    /// Its node in [`Shadow`].
    node: u32,
    body: Option<Expr>,
    /// References left in the body of the last definition itself (not in
    /// a group or a repetition's generated rules: those always survive).
    body_refs: Vec<usize>,
}

/// One reference to a rule name in the text.
struct RefSite {
    name: usize,
    offset: usize,
    /// The rule whose definition contains it.
    in_rule: usize,
    /// Whether llama.cpp keeps it in some stored rule, where its undefined-
    /// rule check will see it.
    survives: bool,
}

/// One item of a sequence while it is being parsed.
struct Item {
    expr: Expr,
    /// Whether llama.cpp emitted any element for it. `""`, `[]` and items
    /// repeated `{0}` times emit none, and a postfix operator after such an
    /// item is an error.
    has_elements: bool,
    /// Rule references that sit in this item as part of the enclosing body.
    refs: Vec<usize>,
    /// The item's elements as llama.cpp's left-recursion check sees them.
    elems: Vec<Elem>,
}

impl Item {
    /// A terminal: a literal, class, `.` or token.
    fn terminal(expr: Expr) -> Item {
        Item {
            expr,
            has_elements: true,
            refs: Vec::new(),
            elems: vec![Elem::Term],
        }
    }

    /// An item for which llama.cpp emits no element (`""`, `[]`).
    fn no_elements() -> Item {
        Item {
            expr: Expr::Empty,
            has_elements: false,
            refs: Vec::new(),
            elems: Vec::new(),
        }
    }
}

/// An element of a rule in llama.cpp's rule table, reduced to what its
/// left-recursion check looks at: a reference to another rule (a node of
/// [`Shadow`]) or anything else (a terminal, which stops the check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    Ref(u32),
    Term,
}

/// Appends elements to an alternative. Only the part up to the first
/// terminal matters to the left-recursion check, so the rest is dropped.
fn push_elems(dst: &mut Vec<Elem>, src: &[Elem]) {
    if dst.last() == Some(&Elem::Term) {
        return;
    }
    for &e in src {
        dst.push(e);
        if e == Elem::Term {
            break;
        }
    }
}

/// What a node of the shadow rule table stands for, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeKind {
    Named,
    Group,
    Repetition,
}

/// A model of llama.cpp's rule table after its desugaring, small enough to
/// keep: one node per rule name, per group and per repetition (a bounded
/// repetition's chain of generated rules collapses into one node, which
/// changes no cycle), and per alternative only the leading elements.
/// llama.cpp's left-recursion check runs on it: a rule "may be empty" only
/// if one of its alternatives has no element at all, and the check follows
/// leading references while the referenced rule may be empty.
#[derive(Default)]
struct Shadow {
    alts: Vec<Vec<Vec<Elem>>>,
    kind: Vec<NodeKind>,
    /// The rule name (index) whose definition created the node.
    owner: Vec<usize>,
}

impl Shadow {
    fn add(&mut self, kind: NodeKind, owner: usize) -> u32 {
        self.alts.push(Vec::new());
        self.kind.push(kind);
        self.owner.push(owner);
        (self.alts.len() - 1) as u32
    }

    /// The node path of a left-recursive cycle, if llama.cpp finds one.
    fn left_recursive_cycle(&self) -> Option<Vec<u32>> {
        let may_be_empty: Vec<bool> = self
            .alts
            .iter()
            .map(|alts| alts.iter().any(|a| a.is_empty()))
            .collect();
        let edges: Vec<Vec<u32>> = self
            .alts
            .iter()
            .map(|alts| {
                let mut out = Vec::new();
                for alt in alts {
                    for &e in alt {
                        let Elem::Ref(r) = e else { break };
                        out.push(r);
                        if !may_be_empty[r as usize] {
                            break;
                        }
                    }
                }
                out.sort_unstable();
                out.dedup();
                out
            })
            .collect();
        super::left_recursion::find_cycle(&edges)
    }
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    vocab: Option<&'a Vocab>,
    names: Vec<Name<'a>>,
    name_index: HashMap<&'a str, usize>,
    refs: Vec<RefSite>,
    /// Size of llama.cpp's symbol table (names and generated rules).
    n_symbols: u64,
    /// Largest symbol number that received a rule: llama.cpp's rule table
    /// has this many slots (plus one), all of which must be defined.
    max_rule_symbol: Option<u64>,
    /// Name indices in the order of their first definition (= IR rule ids).
    defined_order: Vec<usize>,
    depth: usize,
    shadow: Shadow,
}

impl<'a> Parser<'a> {
    fn err(&self, offset: usize, message: impl fmt::Display) -> Error {
        error_at(self.text, offset, message)
    }

    /// `line:column` of an offset, for messages that point back.
    fn loc(&self, offset: usize) -> String {
        let (l, c) = line_col(self.text, offset);
        format!("{l}:{c}")
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_at(&self, k: usize) -> Option<u8> {
        self.bytes.get(self.pos + k).copied()
    }

    /// What sits at `offset`, for "found ..." in messages.
    fn describe(&self, offset: usize) -> String {
        let rest = &self.text[offset..];
        match rest.chars().next() {
            None => "the end of the input".to_string(),
            Some('\n') | Some('\r') => "a line break".to_string(),
            Some(_) if rest.starts_with("::=") => "'::='".to_string(),
            Some(c) => format!("{c:?}"),
        }
    }

    /// Skips spaces, tabs and `#` comments, and line breaks where
    /// `newline_ok` (after `::=`, after `|`, inside parentheses, between
    /// rules). A comment ends before the line break.
    fn skip_space(&mut self, newline_ok: bool) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' => self.pos += 1,
                b'\r' | b'\n' if newline_ok => self.pos += 1,
                b'#' => {
                    while let Some(b) = self.peek() {
                        if b == b'\r' || b == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn parse_name(&mut self) -> Option<&'a str> {
        let start = self.pos;
        while self.peek().is_some_and(is_word_byte) {
            self.pos += 1;
        }
        (self.pos > start).then(|| &self.text[start..self.pos])
    }

    /// The index of a rule name; a name seen for the first time takes the
    /// next llama.cpp symbol number.
    fn intern(&mut self, name: &'a str) -> usize {
        if let Some(&i) = self.name_index.get(name) {
            return i;
        }
        let i = self.names.len();
        let node = self.shadow.add(NodeKind::Named, i);
        self.names.push(Name {
            text: name,
            symbol: self.n_symbols,
            node,
            body: None,
            body_refs: Vec::new(),
        });
        self.n_symbols += 1;
        self.name_index.insert(name, i);
        i
    }

    /// Records that llama.cpp stores a rule for `symbol`.
    fn note_rule(&mut self, symbol: u64) {
        self.max_rule_symbol = Some(self.max_rule_symbol.map_or(symbol, |m| m.max(symbol)));
    }

    fn survive(&mut self, refs: &[usize]) {
        for &r in refs {
            self.refs[r].survives = true;
        }
    }

    /// `name ::= alternatives` up to the end of its line (or of the input).
    fn parse_rule(&mut self) -> Result<()> {
        let start = self.pos;
        let Some(name) = self.parse_name() else {
            let hint = if self.peek() == Some(b'|') {
                " (a rule continues on the next line only when its line ends with '|'; \
                 a line may not start with '|')"
            } else {
                ""
            };
            return Err(self.err(
                start,
                format_args!(
                    "expected a rule name (letters, digits and '-'), found {}{hint}",
                    self.describe(start)
                ),
            ));
        };
        self.skip_space(false);
        let rule = self.intern(name);
        if !self.bytes[self.pos..].starts_with(b"::=") {
            let hint = if self.peek() == Some(b'_') {
                " (rule names may not contain '_')"
            } else {
                ""
            };
            return Err(self.err(
                self.pos,
                format_args!(
                    "expected '::=' after rule name \"{name}\", found {}{hint}",
                    self.describe(self.pos)
                ),
            ));
        }
        self.pos += 3;
        self.skip_space(true);
        let (body, refs, alts) = self.parse_alternates(rule, false)?;
        match self.peek() {
            None => {}
            Some(b'\n') => self.pos += 1,
            Some(b'\r') => self.pos += if self.peek_at(1) == Some(b'\n') { 2 } else { 1 },
            Some(b) => {
                let hint = if self.bytes[self.pos..].starts_with(b"::=") {
                    "; a '|' or '::=' at the end of the previous line made the next line \
                     part of this rule"
                } else if b == b')' {
                    "; this ')' has no matching '('"
                } else if b == b'\'' {
                    "; GBNF literals are written in double quotes"
                } else {
                    ""
                };
                return Err(self.err(
                    self.pos,
                    format_args!(
                        "expected an element, '|' or the end of the line in rule \"{name}\", \
                         found {}{hint}",
                        self.describe(self.pos)
                    ),
                ));
            }
        }
        self.define(rule, body, refs, alts);
        self.skip_space(true);
        Ok(())
    }

    fn define(&mut self, rule: usize, body: Expr, refs: Vec<usize>, alts: Vec<Vec<Elem>>) {
        let n = &mut self.names[rule];
        if n.body.is_none() {
            self.defined_order.push(rule);
        }
        n.body = Some(body);
        n.body_refs = refs;
        let (symbol, node) = (n.symbol, n.node);
        self.note_rule(symbol);
        self.shadow.alts[node as usize] = alts;
    }

    /// `sequence ('|' sequence)*`; returns the expression, the rule
    /// references that stay in the enclosing body, and the alternatives'
    /// elements for the shadow rule table.
    #[allow(clippy::type_complexity)]
    fn parse_alternates(
        &mut self,
        rule: usize,
        nested: bool,
    ) -> Result<(Expr, Vec<usize>, Vec<Vec<Elem>>)> {
        let mut alts = Vec::new();
        let mut refs = Vec::new();
        let mut elems = Vec::new();
        loop {
            let (seq, seq_refs, seq_elems) = self.parse_sequence(rule, nested)?;
            alts.push(seq);
            refs.extend(seq_refs);
            elems.push(seq_elems);
            if self.peek() != Some(b'|') {
                break;
            }
            self.pos += 1;
            self.skip_space(true);
        }
        Ok((Expr::alt(alts), refs, elems))
    }

    /// Items and postfix operators until something that is neither (`|`,
    /// `)`, a line break outside parentheses, the end, or an error).
    fn parse_sequence(
        &mut self,
        rule: usize,
        nested: bool,
    ) -> Result<(Expr, Vec<usize>, Vec<Elem>)> {
        let mut items: Vec<Item> = Vec::new();
        // llama.cpp's count of rules the last item stands for; a repetition
        // multiplies it (see `repeat`).
        let mut n_prev: u64 = 1;
        while let Some(b) = self.peek() {
            let start = self.pos;
            match b {
                b'"' => {
                    items.push(self.parse_literal()?);
                    n_prev = 1;
                }
                b'[' => {
                    items.push(self.parse_class()?);
                    n_prev = 1;
                }
                b'<' | b'!' => {
                    items.push(self.parse_token()?);
                    n_prev = 1;
                }
                b'.' => {
                    self.pos += 1;
                    items.push(Item::terminal(Expr::Class(CharClass::any())));
                    n_prev = 1;
                }
                b if is_word_byte(b) => {
                    let name = self.parse_name().unwrap_or_default();
                    let target = self.intern(name);
                    self.refs.push(RefSite {
                        name: target,
                        offset: start,
                        in_rule: rule,
                        survives: false,
                    });
                    items.push(Item {
                        expr: Expr::Ref(target as u32),
                        has_elements: true,
                        refs: vec![self.refs.len() - 1],
                        elems: vec![Elem::Ref(self.names[target].node)],
                    });
                    n_prev = 1;
                }
                b'(' => {
                    if self.depth >= MAX_NESTING {
                        return Err(Error::limit(format!(
                            "{}: groups nested more than {MAX_NESTING} deep",
                            self.loc(start)
                        )));
                    }
                    self.pos += 1;
                    self.skip_space(true);
                    // llama.cpp numbers the group's rule first, then whatever
                    // the group's contents create.
                    let before = self.n_symbols;
                    self.n_symbols += 1;
                    self.depth += 1;
                    let node = self.shadow.add(NodeKind::Group, rule);
                    let (expr, inner_refs, alts) = self.parse_alternates(rule, true)?;
                    self.shadow.alts[node as usize] = alts;
                    self.depth -= 1;
                    // The contents live in the group's generated rule.
                    self.survive(&inner_refs);
                    self.note_rule(before);
                    n_prev = (self.n_symbols - before).max(1);
                    if self.peek() != Some(b')') {
                        return Err(self.err(
                            self.pos,
                            format_args!(
                                "expected ')' to close the '(' at {}, found {}",
                                self.loc(start),
                                self.describe(self.pos)
                            ),
                        ));
                    }
                    self.pos += 1;
                    items.push(Item {
                        expr,
                        has_elements: true,
                        refs: Vec::new(),
                        elems: vec![Elem::Ref(node)],
                    });
                }
                b'*' => {
                    self.pos += 1;
                    self.repeat(&mut items, &mut n_prev, 0, None, start, rule)?;
                }
                b'+' => {
                    self.pos += 1;
                    self.repeat(&mut items, &mut n_prev, 1, None, start, rule)?;
                }
                b'?' => {
                    self.pos += 1;
                    self.repeat(&mut items, &mut n_prev, 0, Some(1), start, rule)?;
                }
                b'{' => {
                    let (min, max) = self.parse_braces(nested)?;
                    self.repeat(&mut items, &mut n_prev, min, max, start, rule)?;
                    continue; // `parse_braces` skipped the space after '}'
                }
                _ => break,
            }
            self.skip_space(nested);
        }
        let mut refs = Vec::new();
        let mut elems = Vec::new();
        let mut parts = Vec::with_capacity(items.len());
        for item in items {
            refs.extend(item.refs);
            push_elems(&mut elems, &item.elems);
            if item.expr != Expr::Empty {
                parts.push(item.expr);
            }
        }
        Ok((Expr::seq(parts), refs, elems))
    }

    /// `{m}`, `{m,}`, `{m,n}` (spaces allowed inside) with llama.cpp's
    /// limits on the counts. Returns the counts, `None` = unbounded.
    fn parse_braces(&mut self, nested: bool) -> Result<(u64, Option<u64>)> {
        let open = self.pos;
        self.pos += 1;
        self.skip_space(nested);
        if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
            let hint = if self.peek() == Some(b',') {
                " (write {0,n} for \"at most n\")"
            } else {
                ""
            };
            return Err(self.err(
                self.pos,
                format_args!(
                    "expected a number after '{{', found {}{hint}",
                    self.describe(self.pos)
                ),
            ));
        }
        let min = self.parse_count()?;
        self.skip_space(nested);
        let max = match self.peek() {
            Some(b'}') => Some(min),
            Some(b',') => {
                self.pos += 1;
                self.skip_space(nested);
                let max = if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    let n = self.parse_count()?;
                    self.skip_space(nested);
                    Some(n)
                } else {
                    None
                };
                if self.peek() != Some(b'}') {
                    return Err(self.err(
                        self.pos,
                        format_args!(
                            "expected '}}' to close the repetition, found {}",
                            self.describe(self.pos)
                        ),
                    ));
                }
                max
            }
            _ => {
                return Err(self.err(
                    self.pos,
                    format_args!(
                        "expected ',' or '}}' after the repetition count, found {}",
                        self.describe(self.pos)
                    ),
                ))
            }
        };
        self.pos += 1; // '}'
        self.skip_space(nested);
        if min > MAX_REPETITION_THRESHOLD {
            return Err(self.err(
                open,
                format_args!(
                    "repetition minimum {min} exceeds the limit of {MAX_REPETITION_THRESHOLD}"
                ),
            ));
        }
        // llama.cpp reads a maximum above the limit as "no maximum".
        let max = max.filter(|&n| n <= MAX_REPETITION_THRESHOLD);
        if let Some(n) = max {
            if n < min {
                return Err(self.err(
                    open,
                    format_args!("repetition maximum {n} is less than the minimum {min}"),
                ));
            }
        }
        Ok((min, max))
    }

    /// A decimal count; one that does not fit 64 bits is an error, as in
    /// llama.cpp (`std::stoull` throws).
    fn parse_count(&mut self) -> Result<u64> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        self.text[start..self.pos].parse::<u64>().map_err(|_| {
            self.err(
                start,
                format_args!("number {} is too large", &self.text[start..self.pos]),
            )
        })
    }

    /// Applies a postfix repetition to the last item, with llama.cpp's
    /// checks: there must be an item that produced elements, and the
    /// product of nested expansions must stay within the threshold.
    fn repeat(
        &mut self,
        items: &mut [Item],
        n_prev: &mut u64,
        min: u64,
        max: Option<u64>,
        op_offset: usize,
        rule: usize,
    ) -> Result<()> {
        let op = &self.text[op_offset..self.pos];
        let op = if op.starts_with('{') { "{...}" } else { op };
        let Some(last) = items.last_mut().filter(|it| it.has_elements) else {
            let why = if items.is_empty() {
                ""
            } else {
                " (the previous item matches only the empty string)"
            };
            return Err(self.err(
                op_offset,
                format_args!("expected an item before '{op}' to repeat{why}"),
            ));
        };
        // llama.cpp's measure of how many rules this repetition produces.
        let total = match max {
            Some(n) if n > 0 => n,
            _ => min.max(1),
        };
        let product = n_prev.saturating_mul(total);
        if product > MAX_REPETITION_THRESHOLD {
            return Err(self.err(
                op_offset,
                format_args!(
                    "this repetition expands to {product} rules, more than llama.cpp's limit \
                     of {MAX_REPETITION_THRESHOLD} (llama.cpp multiplies the counts of nested \
                     repetitions, and counts a group as the rule names it mentions for the \
                     first time: define the rules a large group refers to before it)"
                ),
            ));
        }
        // llama.cpp generates one rule per optional copy (one for an
        // unbounded tail) holding the repeated item.
        let n_opt = match max {
            None => 1,
            Some(n) => n - min,
        };
        if n_opt > 0 {
            let refs = std::mem::take(&mut last.refs);
            for &r in &refs {
                self.refs[r].survives = true;
            }
            self.n_symbols += n_opt;
            let last_symbol = self.n_symbols - 1;
            self.note_rule(last_symbol);
            if min > 0 {
                last.refs = refs;
            }
            // The generated rules are `S' ::= S S' |` (unbounded) or a chain
            // `S'k ::= S S'k-1 |` ending in `S'0 ::= S |`; the chain's links
            // add no cycle, so one node without the self-reference stands
            // for all of them.
            let node = self.shadow.add(NodeKind::Repetition, rule);
            let mut alt = last.elems.clone();
            if max.is_none() {
                push_elems(&mut alt, &[Elem::Ref(node)]);
            }
            self.shadow.alts[node as usize] = vec![alt, Vec::new()];
            // The body keeps the item (if min > 0; one copy leads the same
            // way as several) and then refers to the generated rule.
            if min == 0 {
                last.elems.clear();
            }
            push_elems(&mut last.elems, &[Elem::Ref(node)]);
        } else if min == 0 {
            // `{0}`: the item disappears, references and all.
            last.refs.clear();
            last.elems.clear();
            last.has_elements = false;
        }
        let expr = std::mem::replace(&mut last.expr, Expr::Empty);
        last.expr = make_repeat(expr, min as u32, max.map(|n| n as u32));
        *n_prev = product;
        Ok(())
    }

    /// `"..."`: code points with escapes; raw line breaks are allowed.
    fn parse_literal(&mut self) -> Result<Item> {
        let open = self.pos;
        self.pos += 1;
        let mut text = String::new();
        let mut any = false;
        let mut valid = true;
        loop {
            match self.peek() {
                None => {
                    return Err(self.err(
                        self.pos,
                        format_args!(
                            "expected '\"' to close the literal at {}, found the end of the input",
                            self.loc(open)
                        ),
                    ))
                }
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => {
                    let c = self.parse_char()?;
                    any = true;
                    match char::from_u32(c) {
                        Some(c) => text.push(c),
                        None => valid = false,
                    }
                }
            }
        }
        let expr = if valid {
            Expr::literal(&text)
        } else {
            Expr::Nothing
        };
        Ok(if any {
            Item::terminal(expr)
        } else {
            Item::no_elements()
        })
    }

    /// `[...]` / `[^...]`: chars and ranges; `-` first or last is literal.
    fn parse_class(&mut self) -> Result<Item> {
        let open = self.pos;
        self.pos += 1;
        let negated = self.peek() == Some(b'^');
        if negated {
            self.pos += 1;
        }
        let unterminated = |p: &Self| {
            p.err(
                p.pos,
                format_args!(
                    "expected ']' to close the character class at {}, found the end of the input",
                    p.loc(open)
                ),
            )
        };
        let mut ranges = Vec::new();
        loop {
            match self.peek() {
                None => return Err(unterminated(self)),
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => {}
            }
            let lo = self.parse_char()?;
            let mut hi = lo;
            if self.peek() == Some(b'-') && self.peek_at(1) != Some(b']') {
                if self.peek_at(1).is_none() {
                    self.pos += 1;
                    return Err(unterminated(self));
                }
                self.pos += 1;
                hi = self.parse_char()?;
            }
            ranges.push((lo, hi));
        }
        if ranges.is_empty() {
            // llama.cpp emits no element for `[]` and `[^]`: they match the
            // empty string (and cannot be repeated).
            return Ok(Item::no_elements());
        }
        let mut class = CharClass::from_ranges(ranges);
        if negated {
            class = class.negate();
        }
        let expr = if class.is_empty() {
            Expr::Nothing
        } else {
            Expr::Class(class)
        };
        Ok(Item::terminal(expr))
    }

    /// One code point of a literal or class: a UTF-8 character or an escape.
    fn parse_char(&mut self) -> Result<u32> {
        let start = self.pos;
        let c = self.text[start..].chars().next().unwrap_or('\0');
        if c != '\\' {
            self.pos += c.len_utf8();
            return Ok(c as u32);
        }
        let Some(e) = self.text[start + 1..].chars().next() else {
            return Err(self.err(
                start,
                "expected an escape after '\\', found the end of the input",
            ));
        };
        self.pos += 1 + e.len_utf8();
        let digits = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            't' => return Ok('\t' as u32),
            'r' => return Ok('\r' as u32),
            'n' => return Ok('\n' as u32),
            '\\' | '"' | '[' | ']' | '-' => return Ok(e as u32),
            _ => {
                return Err(self.err(
                    start,
                    format_args!(
                        "unknown escape '\\{e}' (expected one of \\xHH \\uHHHH \\UHHHHHHHH \
                         \\t \\r \\n \\\\ \\\" \\[ \\] \\-)"
                    ),
                ))
            }
        };
        let mut value: u32 = 0;
        for _ in 0..digits {
            let d = self.peek().and_then(|b| (b as char).to_digit(16));
            let Some(d) = d else {
                return Err(self.err(
                    self.pos,
                    format_args!(
                        "expected {digits} hex digits after '\\{e}', found {}",
                        self.describe(self.pos)
                    ),
                ));
            };
            value = (value << 4) | d;
            self.pos += 1;
        }
        Ok(value)
    }

    /// `<[id]>`, `<text>`, and their negations `!<...>`.
    fn parse_token(&mut self) -> Result<Item> {
        let negated = self.peek() == Some(b'!');
        if negated {
            self.pos += 1;
            if self.peek() != Some(b'<') {
                return Err(self.err(
                    self.pos,
                    format_args!("expected '<' after '!', found {}", self.describe(self.pos)),
                ));
            }
        }
        let open = self.pos;
        self.pos += 1;
        let id = if self.peek() == Some(b'[') {
            self.pos += 1;
            let digits = self.pos;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.pos += 1;
            }
            if self.pos == digits {
                return Err(self.err(
                    self.pos,
                    format_args!(
                        "expected a token id after '<[', found {}",
                        self.describe(self.pos)
                    ),
                ));
            }
            let id = self.text[digits..self.pos]
                .parse::<u64>()
                .ok()
                .and_then(|n| u32::try_from(n).ok());
            let Some(id) = id else {
                return Err(self.err(
                    digits,
                    format_args!(
                        "token id {} is too large (at most {})",
                        &self.text[digits..self.pos],
                        u32::MAX
                    ),
                ));
            };
            for close in [b']', b'>'] {
                if self.peek() != Some(close) {
                    return Err(self.err(
                        self.pos,
                        format_args!(
                            "expected '{}' to close the token id, found {}",
                            close as char,
                            self.describe(self.pos)
                        ),
                    ));
                }
                self.pos += 1;
            }
            id
        } else {
            let Some(vocab) = self.vocab else {
                return Err(self.err(
                    open,
                    "a token given by its text (<...>) needs a vocabulary; without one only \
                     token ids (<[123]>) can be used",
                ));
            };
            // The text ends at the first '>' and includes both brackets.
            let Some(len) = self.text[open..].find('>') else {
                return Err(self.err(
                    self.bytes.len(),
                    format_args!(
                        "expected '>' to close the token at {}, found the end of the input",
                        self.loc(open)
                    ),
                ));
            };
            self.pos = open + len + 1;
            let token_text = &self.text[open..self.pos];
            match vocab.token_by_text(token_text.as_bytes()) {
                Some(id) => id,
                None => {
                    return Err(self.err(
                        open,
                        format_args!(
                            "token {token_text:?} is not exactly one token of the vocabulary"
                        ),
                    ))
                }
            }
        };
        Ok(Item::terminal(Expr::Token(TokenSet {
            ids: vec![id],
            negated,
        })))
    }

    /// After the last rule: llama.cpp's validation, then the IR.
    fn finish(mut self) -> Result<Parsed> {
        if self.defined_order.is_empty() {
            return Err(self.err(
                self.pos,
                "empty grammar: expected at least one rule such as `root ::= \"text\"`",
            ));
        }
        // References left in each name's last definition are stored.
        for i in 0..self.names.len() {
            let refs = std::mem::take(&mut self.names[i].body_refs);
            self.survive(&refs);
        }
        // llama.cpp's rule table has a slot for every symbol up to the
        // largest defined one, and each slot must hold a rule; a reference
        // beyond that is checked only when it survives in a stored rule.
        let slots = self.max_rule_symbol.map_or(0, |m| m + 1);
        let mut surviving = vec![false; self.names.len()];
        for r in &self.refs {
            if r.survives {
                surviving[r.name] = true;
            }
        }
        let undefined = self.refs.iter().find(|r| {
            let n = &self.names[r.name];
            n.body.is_none() && (n.symbol < slots || surviving[r.name])
        });
        if let Some(r) = undefined {
            return Err(self.err(
                r.offset,
                format_args!(
                    "undefined rule \"{}\" (referenced in rule \"{}\")",
                    self.names[r.name].text, self.names[r.in_rule].text
                ),
            ));
        }
        let mut ids = vec![u32::MAX; self.names.len()];
        for (id, &name) in self.defined_order.iter().enumerate() {
            ids[name] = id as u32;
        }
        let mut rules = Vec::with_capacity(self.defined_order.len());
        for &name in &self.defined_order {
            let n = &mut self.names[name];
            let mut body = n.body.take().unwrap_or(Expr::Nothing);
            remap_refs(&mut body, &ids)?;
            rules.push(Rule::new(n.text.to_string(), body));
        }
        let left_recursion = self.shadow.left_recursive_cycle().map(|cycle| {
            let label = |node: u32| {
                let owner = self.names[self.shadow.owner[node as usize]].text;
                match self.shadow.kind[node as usize] {
                    NodeKind::Named => owner.to_string(),
                    NodeKind::Group => format!("(group in {owner})"),
                    NodeKind::Repetition => format!("(repetition in {owner})"),
                }
            };
            let head = match self.shadow.kind[cycle[0] as usize] {
                NodeKind::Named => format!("rule \"{}\"", label(cycle[0])),
                _ => format!("{} (a rule llama.cpp generates)", label(cycle[0])),
            };
            let path: Vec<String> = cycle.iter().map(|&n| label(n)).collect();
            let hint = if cycle
                .iter()
                .any(|&n| self.shadow.kind[n as usize] == NodeKind::Repetition)
            {
                "; llama.cpp expands `x*` to `x' ::= x x' |`, which is left-recursive when x \
                 is a rule with an empty alternative (such as another `?` or `*`)"
            } else {
                ""
            };
            format!(
                "left recursion: {head} can reach itself before matching any input ({}); \
                 llama.cpp rejects left-recursive grammars{hint}",
                path.join(" -> ")
            )
        });
        Ok(Parsed {
            rules,
            left_recursion,
        })
    }
}

/// The parser's result: the rules, and llama.cpp's left-recursion verdict
/// on its own desugaring of them (a message naming the cycle).
pub(super) struct Parsed {
    pub rules: Vec<Rule>,
    pub left_recursion: Option<String>,
}

/// Turns name indices in `Ref`s into rule ids.
fn remap_refs(e: &mut Expr, ids: &[u32]) -> Result<()> {
    match e {
        Expr::Ref(r) => {
            let id = ids[*r as usize];
            if id == u32::MAX {
                // Every surviving reference was checked above.
                return Err(Error::new(
                    crate::error::ErrorKind::Internal,
                    "GBNF parser: reference to an undefined rule slipped through",
                ));
            }
            *r = id;
        }
        Expr::Seq(v) | Expr::Alt(v) => {
            for c in v {
                remap_refs(c, ids)?;
            }
        }
        Expr::Repeat { expr, .. } => remap_refs(expr, ids)?,
        _ => {}
    }
    Ok(())
}

/// `expr{min,max}`, simplified where the language allows: stacked
/// operators (`"a"+?`, `x{2}{3}`) merge into one repetition when the counts
/// compose without gaps, which keeps the IR shallow however many operators
/// are stacked.
fn make_repeat(expr: Expr, min: u32, max: Option<u32>) -> Expr {
    if max == Some(0) {
        return Expr::Empty;
    }
    if (min, max) == (1, Some(1)) {
        return expr;
    }
    match expr {
        Expr::Empty => Expr::Empty,
        Expr::Nothing if min == 0 => Expr::Empty,
        Expr::Nothing => Expr::Nothing,
        Expr::Repeat {
            expr: inner,
            min: a,
            max: b,
        } => match merge_counts(a, b, min, max) {
            Some((m, n)) => make_repeat(*inner, m, n),
            None => Expr::repeat(
                Expr::Repeat {
                    expr: inner,
                    min: a,
                    max: b,
                },
                min,
                max,
            ),
        },
        e => Expr::repeat(e, min, max),
    }
}

/// `(e{a,b}){c,d}` as `e{m,n}` when every count in `[m, n]` is reachable,
/// i.e. the ranges `[a·k, b·k]` for `k` in `[c, d]` leave no gaps.
fn merge_counts(a: u32, b: Option<u32>, c: u32, d: Option<u32>) -> Option<(u32, Option<u32>)> {
    let m = a.checked_mul(c)?;
    if d == Some(c) {
        // A single k: [a·c, b·c].
        let n = match b {
            Some(b) => Some(b.checked_mul(c)?),
            None => None,
        };
        return Some((m, n));
    }
    let Some(b) = b else {
        // [a·k, ∞) for k >= c; with c = 0 also {0}, which joins [a, ∞)
        // only when a <= 1.
        return (c > 0 || a <= 1).then_some((m, None));
    };
    if b < a {
        return None;
    }
    // [a·k, b·k] and [a·(k+1), b·(k+1)] touch iff (b - a)·k >= a - 1; the
    // left side grows with k, so checking k = c suffices.
    let gapless = a == 0 || (b - a) as u64 * c as u64 >= a as u64 - 1;
    if !gapless {
        return None;
    }
    let n = match d {
        Some(d) => Some(b.checked_mul(d)?),
        None => None,
    };
    Some((m, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_counts_are_exact() {
        // Compare merge_counts against brute-force enumeration of the
        // reachable repetition counts.
        fn reachable(a: u32, b: Option<u32>, c: u32, d: Option<u32>, cap: u32) -> Vec<bool> {
            let mut r = vec![false; cap as usize + 1];
            let bmax = b.unwrap_or(cap);
            let dmax = d.unwrap_or(cap);
            for k in c..=dmax {
                // Sums of k counts each in [a, bmax].
                let lo = a * k;
                let hi = (bmax * k).min(cap);
                for t in lo..=hi {
                    if t <= cap {
                        r[t as usize] = true;
                    }
                }
            }
            r
        }
        let cap = 60;
        let opts = [None, Some(0), Some(1), Some(2), Some(3), Some(5)];
        for a in 0..4u32 {
            for b in opts {
                if b.is_some_and(|b| b < a || b == 0) {
                    continue;
                }
                for c in 0..4u32 {
                    for d in opts {
                        if d.is_some_and(|d| d < c || d == 0) {
                            continue;
                        }
                        if let Some((m, n)) = merge_counts(a, b, c, d) {
                            let want = reachable(a, b, c, d, cap);
                            let got = reachable(m, n, 1, Some(1), cap);
                            // Only compare below the cap where unbounded
                            // ranges are cut off alike.
                            for t in 0..=cap / 2 {
                                assert_eq!(
                                    want[t as usize], got[t as usize],
                                    "{a},{b:?} then {c},{d:?} -> {m},{n:?} at {t}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn line_col_counts_line_ends_and_chars() {
        let t = "ab\r\ncd\ref\ngh日本x";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 4), (2, 1));
        assert_eq!(line_col(t, 7), (3, 1));
        assert_eq!(line_col(t, t.len() - 1), (4, 5));
    }
}
