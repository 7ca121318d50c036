//! An independent reference matcher for the grammar IR, written from scratch
//! for the tests: it shares no code with the engine (no lexer DFAs, no
//! regex crates, no token trie of the engine's).
//!
//! The IR is first lowered to a plain BNF ([`Bnf`]) whose terminals are
//! byte ranges (each character class is UTF-8 encoded into sequences of
//! byte ranges here, by hand) and whole-token sets. Repetitions become
//! helper rules (`x{2,4}` = `x x O2`, `O2 ::= x O1 | ε`, `O1 ::= x | ε`),
//! unproductive alternatives are dropped, so that every symbol left can be
//! completed: a prefix is viable iff the recognizer still has something
//! alive after it.
//!
//! Two recognizers run on that BNF:
//! - [`Earley`]: a textbook Earley recognizer over bytes (with the
//!   Aycock-Horspool treatment of nullable symbols); it handles every
//!   context-free grammar, left recursion included.
//! - [`StackMachine`]: llama.cpp's algorithm (a set of stacks of grammar
//!   positions, expanded until every top is a terminal), with the sets
//!   interned and their byte transitions memoized, so that checking a whole
//!   128k vocabulary from one state costs one table lookup per trie node
//!   ([`SortedVocab`] walks the tokens in byte order, sharing prefixes).
//!   It refuses left-recursive grammars (as llama.cpp does).
//!
//! Both take input as *tokens*: a text token (optional id plus its bytes)
//! may be read through its bytes by text terminals, or whole by a token
//! terminal whose set contains its id; a special token has an id and no
//! bytes. Plain text is fed as a token with no id.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use cgram::ir::{CharClass, Expr, Grammar, TokenSet};

// ---------------------------------------------------------------------------
// A small fast hasher (FxHash), so that memo tables stay cheap.

#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;
pub type FxSet<K> = HashSet<K, BuildHasherDefault<Fx>>;

// ---------------------------------------------------------------------------
// UTF-8 encoding of code point ranges into byte-range sequences.

/// The UTF-8 encoding of a scalar value (written out by hand).
pub fn encode_utf8(c: u32) -> Vec<u8> {
    match c {
        0..=0x7F => vec![c as u8],
        0x80..=0x7FF => vec![0xC0 | (c >> 6) as u8, 0x80 | (c & 0x3F) as u8],
        0x800..=0xFFFF => vec![
            0xE0 | (c >> 12) as u8,
            0x80 | ((c >> 6) & 0x3F) as u8,
            0x80 | (c & 0x3F) as u8,
        ],
        _ => vec![
            0xF0 | (c >> 18) as u8,
            0x80 | ((c >> 12) & 0x3F) as u8,
            0x80 | ((c >> 6) & 0x3F) as u8,
            0x80 | (c & 0x3F) as u8,
        ],
    }
}

/// Appends to `out` byte-range sequences whose union is exactly the UTF-8
/// encodings of the scalar values in `lo..=hi` (surrogates skipped).
pub fn utf8_sequences(lo: u32, hi: u32, out: &mut Vec<Vec<(u8, u8)>>) {
    if lo > hi {
        return;
    }
    // Cut out surrogates and split where the encoded length changes.
    for &(a, b) in &[
        (0u32, 0x7Fu32),
        (0x80, 0x7FF),
        (0x800, 0xD7FF),
        (0xE000, 0xFFFF),
        (0x10000, 0x10FFFF),
    ] {
        let l = lo.max(a);
        let h = hi.min(b);
        if l <= h {
            same_length(l, h, out);
        }
    }
}

/// `lo..=hi` all encode with the same number of bytes.
fn same_length(lo: u32, hi: u32, out: &mut Vec<Vec<(u8, u8)>>) {
    let n = encode_utf8(lo).len();
    // Split so that each piece is "fixed leading bytes, then one range, then
    // full continuation ranges": for each continuation suffix size, if lo
    // and hi differ above it, align lo up and hi down to its boundary.
    for i in 1..n {
        let m: u32 = (1 << (6 * i)) - 1;
        if lo & !m != hi & !m {
            if lo & m != 0 {
                same_length(lo, lo | m, out);
                same_length((lo | m) + 1, hi, out);
                return;
            }
            if hi & m != m {
                same_length(lo, (hi & !m) - 1, out);
                same_length(hi & !m, hi, out);
                return;
            }
        }
    }
    let a = encode_utf8(lo);
    let b = encode_utf8(hi);
    out.push(a.iter().zip(b.iter()).map(|(&x, &y)| (x, y)).collect());
}

// ---------------------------------------------------------------------------
// The BNF.

/// A grammar symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sym {
    /// One byte in `lo..=hi`.
    Byte(u8, u8),
    /// One whole token whose id is in `Bnf::token_sets[i]`.
    Tok(u32),
    /// A nonterminal.
    Nt(u32),
}

/// One production `lhs -> rhs`.
#[derive(Clone, Debug)]
pub struct Prod {
    pub lhs: u32,
    pub rhs: Vec<Sym>,
}

/// A plain BNF over bytes and tokens.
#[derive(Clone, Debug)]
pub struct Bnf {
    pub prods: Vec<Prod>,
    /// Productions of each nonterminal.
    pub by_lhs: Vec<Vec<u32>>,
    pub names: Vec<String>,
    pub token_sets: Vec<TokenSet>,
    /// The augmented start symbol `S' -> start` (one production).
    pub start: u32,
    pub nullable: Vec<bool>,
}

/// Largest repetition count the lowering expands (the IR from GBNF stays
/// at or below 2000).
const MAX_REPEAT_EXPANSION: u32 = 100_000;

/// How repetitions become rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loops {
    /// `S -> x S | ε`: tail calls, constant depth for the stack machine.
    Right,
    /// `S -> S x | ε`: constant work per input position for Earley (right
    /// recursion makes every Earley set as large as the loop is long).
    Left,
}

struct Lower<'g> {
    g: &'g Grammar,
    loops: Loops,
    alts: Vec<Vec<Vec<Sym>>>,
    names: Vec<String>,
    classes: HashMap<CharClass, u32>,
    token_sets: Vec<TokenSet>,
    nothing: Option<u32>,
}

impl Lower<'_> {
    fn new_nt(&mut self, name: String) -> u32 {
        self.alts.push(Vec::new());
        self.names.push(name);
        (self.alts.len() - 1) as u32
    }

    fn nothing(&mut self) -> u32 {
        if let Some(n) = self.nothing {
            return n;
        }
        let n = self.new_nt("<nothing>".into());
        self.nothing = Some(n);
        n
    }

    fn class(&mut self, c: &CharClass) -> u32 {
        if let Some(&n) = self.classes.get(c) {
            return n;
        }
        let n = self.new_nt(format!("<class{:?}>", c.ranges()));
        let mut seqs = Vec::new();
        for &(lo, hi) in c.ranges() {
            utf8_sequences(lo, hi, &mut seqs);
        }
        self.alts[n as usize] = seqs
            .into_iter()
            .map(|s| s.into_iter().map(|(a, b)| Sym::Byte(a, b)).collect())
            .collect();
        self.classes.insert(c.clone(), n);
        n
    }

    /// `e` as one symbol (a helper rule unless it already is one).
    fn symbol(&mut self, e: &Expr, ctx: &str) -> Sym {
        let mut v = Vec::new();
        self.seq(e, ctx, &mut v);
        if v.len() == 1 {
            return v[0];
        }
        let n = self.new_nt(format!("{ctx}/group"));
        self.alts[n as usize].push(v);
        Sym::Nt(n)
    }

    /// Appends the symbols of `e` to `out`.
    fn seq(&mut self, e: &Expr, ctx: &str, out: &mut Vec<Sym>) {
        match e {
            Expr::Empty => {}
            Expr::Nothing => {
                let n = self.nothing();
                out.push(Sym::Nt(n));
            }
            Expr::Literal(s) => out.extend(s.bytes().map(|b| Sym::Byte(b, b))),
            Expr::Class(c) => {
                let n = self.class(c);
                out.push(Sym::Nt(n));
            }
            Expr::Seq(v) => {
                for x in v {
                    self.seq(x, ctx, out);
                }
            }
            Expr::Alt(v) => {
                let n = self.new_nt(format!("{ctx}/alt"));
                for x in v {
                    let mut a = Vec::new();
                    self.seq(x, ctx, &mut a);
                    self.alts[n as usize].push(a);
                }
                out.push(Sym::Nt(n));
            }
            Expr::Repeat { expr, min, max } => {
                let min = *min;
                if let Some(max) = *max {
                    if min > max {
                        let n = self.nothing();
                        out.push(Sym::Nt(n));
                        return;
                    }
                    assert!(
                        max <= MAX_REPEAT_EXPANSION,
                        "reference: repetition count {max} too large to expand"
                    );
                }
                assert!(
                    min <= MAX_REPEAT_EXPANSION,
                    "reference: repetition count {min} too large to expand"
                );
                let x = self.symbol(expr, ctx);
                for _ in 0..min {
                    out.push(x);
                }
                match *max {
                    None => {
                        // S -> x S | ε  (or S -> S x | ε)
                        let s = self.new_nt(format!("{ctx}/star"));
                        let a = match self.loops {
                            Loops::Right => vec![x, Sym::Nt(s)],
                            Loops::Left => vec![Sym::Nt(s), x],
                        };
                        self.alts[s as usize].push(a);
                        self.alts[s as usize].push(vec![]);
                        out.push(Sym::Nt(s));
                    }
                    Some(max) if max > min => {
                        // O_k -> x O_{k-1} | ε (or O_{k-1} x | ε), O_1 -> x | ε:
                        // O_k matches 0..=k copies.
                        let mut prev: Option<u32> = None;
                        for k in 1..=(max - min) {
                            let o = self.new_nt(format!("{ctx}/opt{k}"));
                            let mut a = vec![x];
                            if let Some(p) = prev {
                                match self.loops {
                                    Loops::Right => a.push(Sym::Nt(p)),
                                    Loops::Left => a.insert(0, Sym::Nt(p)),
                                }
                            }
                            self.alts[o as usize].push(a);
                            self.alts[o as usize].push(vec![]);
                            prev = Some(o);
                        }
                        out.push(Sym::Nt(prev.unwrap()));
                    }
                    Some(_) => {}
                }
            }
            Expr::Ref(r) => {
                assert!(
                    (*r as usize) < self.g.rules.len(),
                    "reference: reference to rule {r} out of range"
                );
                out.push(Sym::Nt(*r));
            }
            // Its plain spelling (the set itself, not its complement).
            Expr::JsonStrings(js) if !js.negated() => self.seq(&js.spelled(), ctx, out),
            Expr::JsonQuoted(chars) if !cgram::compile::lexeme::has_boolean(chars) => {
                self.seq(&cgram::ir::json_quoted_spelled(chars), ctx, out)
            }
            Expr::And(_)
            | Expr::Not(_)
            | Expr::JsonStrings(_)
            | Expr::JsonQuoted(_)
            | Expr::DecimalMultiple(_)
            | Expr::IntegerRange(_)
            | Expr::Rfc3339(_) => {
                panic!("reference: intersection, complement and residue automata are not supported")
            }
            Expr::Token(ts) => {
                let i = match self.token_sets.iter().position(|t| t == ts) {
                    Some(i) => i,
                    None => {
                        self.token_sets.push(ts.clone());
                        self.token_sets.len() - 1
                    }
                };
                out.push(Sym::Tok(i as u32));
            }
        }
    }
}

impl Bnf {
    /// Lowers an IR grammar with right-recursive loops (for the stack
    /// machine). Panics if the start rule matches nothing.
    pub fn from_ir(g: &Grammar) -> Bnf {
        Bnf::from_ir_with(g, Loops::Right)
    }

    /// Lowers an IR grammar with left-recursive loops (for Earley).
    pub fn from_ir_left(g: &Grammar) -> Bnf {
        Bnf::from_ir_with(g, Loops::Left)
    }

    pub fn from_ir_with(g: &Grammar, loops: Loops) -> Bnf {
        let mut low = Lower {
            g,
            loops,
            alts: vec![Vec::new(); g.rules.len()],
            names: g.rules.iter().map(|r| r.name.clone()).collect(),
            classes: HashMap::new(),
            token_sets: Vec::new(),
            nothing: None,
        };
        for (i, r) in g.rules.iter().enumerate() {
            // A rule body that is an alternation becomes the rule's own
            // alternatives (keeps the BNF close to the source).
            match &r.body {
                Expr::Alt(v) => {
                    for x in v {
                        let mut a = Vec::new();
                        low.seq(x, &r.name, &mut a);
                        low.alts[i].push(a);
                    }
                }
                e => {
                    let mut a = Vec::new();
                    low.seq(e, &r.name, &mut a);
                    low.alts[i].push(a);
                }
            }
        }
        let start = low.new_nt("<start>".into());
        low.alts[start as usize].push(vec![Sym::Nt(g.start)]);

        // Productivity: drop alternatives that can never be completed.
        let n = low.alts.len();
        let token_ok: Vec<bool> = low
            .token_sets
            .iter()
            .map(|t| t.negated || !t.ids.is_empty())
            .collect();
        let mut productive = vec![false; n];
        loop {
            let mut changed = false;
            for nt in 0..n {
                if productive[nt] {
                    continue;
                }
                let ok = low.alts[nt].iter().any(|a| {
                    a.iter().all(|s| match *s {
                        Sym::Byte(lo, hi) => lo <= hi,
                        Sym::Tok(t) => token_ok[t as usize],
                        Sym::Nt(m) => productive[m as usize],
                    })
                });
                if ok {
                    productive[nt] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        assert!(
            productive[start as usize],
            "reference: the start rule matches no string"
        );
        let mut prods = Vec::new();
        let mut by_lhs = vec![Vec::new(); n];
        for (nt, alts) in low.alts.into_iter().enumerate() {
            for a in alts {
                let ok = a.iter().all(|s| match *s {
                    Sym::Byte(lo, hi) => lo <= hi,
                    Sym::Tok(t) => token_ok[t as usize],
                    Sym::Nt(m) => productive[m as usize],
                });
                if ok {
                    by_lhs[nt].push(prods.len() as u32);
                    prods.push(Prod {
                        lhs: nt as u32,
                        rhs: a,
                    });
                }
            }
        }
        // Nullable nonterminals.
        let mut nullable = vec![false; n];
        loop {
            let mut changed = false;
            for p in &prods {
                if !nullable[p.lhs as usize]
                    && p.rhs
                        .iter()
                        .all(|s| matches!(*s, Sym::Nt(m) if nullable[m as usize]))
                {
                    nullable[p.lhs as usize] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Bnf {
            prods,
            by_lhs,
            names: low.names,
            token_sets: low.token_sets,
            start,
            nullable,
        }
    }

    /// Does token set `set` (an index into `token_sets`) contain `id`?
    pub fn token_matches(&self, set: u32, id: u32) -> bool {
        let ts = &self.token_sets[set as usize];
        ts.ids.binary_search(&id).is_ok() != ts.negated
    }
}

// ---------------------------------------------------------------------------
// Earley.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Item {
    prod: u32,
    dot: u32,
    origin: u32,
}

/// A textbook Earley recognizer (one item set per input position).
#[derive(Clone)]
pub struct Earley {
    bnf: Rc<Bnf>,
    sets: Vec<Vec<Item>>,
}

impl Earley {
    pub fn new(bnf: Rc<Bnf>) -> Earley {
        let mut e = Earley {
            bnf,
            sets: Vec::new(),
        };
        let kernel: Vec<Item> = e.bnf.by_lhs[e.bnf.start as usize]
            .iter()
            .map(|&p| Item {
                prod: p,
                dot: 0,
                origin: 0,
            })
            .collect();
        e.push_closed(kernel);
        e
    }

    /// Number of item sets (input positions + 1).
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn truncate(&mut self, sets: usize) {
        self.sets.truncate(sets.max(1));
    }

    fn next_sym(&self, it: &Item) -> Option<Sym> {
        self.bnf.prods[it.prod as usize]
            .rhs
            .get(it.dot as usize)
            .copied()
    }

    /// Closes `kernel` (predict + complete) into a new set.
    fn push_closed(&mut self, kernel: Vec<Item>) {
        let pos = self.sets.len() as u32;
        let bnf = self.bnf.clone();
        let mut set: Vec<Item> = Vec::new();
        let mut seen: FxSet<Item> = FxSet::default();
        let mut work: Vec<Item> = Vec::new();
        for it in kernel {
            if seen.insert(it) {
                work.push(it);
            }
        }
        let add = |it: Item, work: &mut Vec<Item>, seen: &mut FxSet<Item>| {
            if seen.insert(it) {
                work.push(it);
            }
        };
        while let Some(it) = work.pop() {
            set.push(it);
            match self.next_sym(&it) {
                Some(Sym::Nt(b)) => {
                    for &p in &bnf.by_lhs[b as usize] {
                        add(
                            Item {
                                prod: p,
                                dot: 0,
                                origin: pos,
                            },
                            &mut work,
                            &mut seen,
                        );
                    }
                    if bnf.nullable[b as usize] {
                        add(
                            Item {
                                dot: it.dot + 1,
                                ..it
                            },
                            &mut work,
                            &mut seen,
                        );
                    }
                }
                Some(_) => {}
                None => {
                    // Complete: advance the items waiting for this lhs.
                    let lhs = bnf.prods[it.prod as usize].lhs;
                    let parents: &[Item] = if it.origin == pos {
                        &set
                    } else {
                        &self.sets[it.origin as usize]
                    };
                    for &p in parents {
                        if self.next_sym(&p) == Some(Sym::Nt(lhs)) {
                            add(
                                Item {
                                    dot: p.dot + 1,
                                    ..p
                                },
                                &mut work,
                                &mut seen,
                            );
                        }
                    }
                }
            }
        }
        self.sets.push(set);
    }

    fn scan_byte(&self, set: &[Item], b: u8) -> Vec<Item> {
        set.iter()
            .filter(|it| matches!(self.next_sym(it), Some(Sym::Byte(lo, hi)) if lo <= b && b <= hi))
            .map(|it| Item {
                dot: it.dot + 1,
                ..*it
            })
            .collect()
    }

    /// Reads one token: its bytes through text terminals and, when it has an
    /// id, the whole token through token terminals. Returns viability.
    pub fn feed(&mut self, id: Option<u32>, bytes: &[u8]) -> bool {
        let start = self.sets.len() - 1;
        let mut token_kernel = Vec::new();
        if let Some(id) = id {
            for it in &self.sets[start] {
                if let Some(Sym::Tok(t)) = self.next_sym(it) {
                    if self.bnf.token_matches(t, id) {
                        token_kernel.push(Item {
                            dot: it.dot + 1,
                            ..*it
                        });
                    }
                }
            }
        }
        if bytes.is_empty() {
            self.push_closed(token_kernel);
        } else {
            for (k, &b) in bytes.iter().enumerate() {
                let last = self.sets.last().unwrap();
                let mut kernel = self.scan_byte(last, b);
                if k + 1 == bytes.len() {
                    kernel.append(&mut token_kernel);
                }
                self.push_closed(kernel);
            }
        }
        self.viable()
    }

    pub fn feed_bytes(&mut self, bytes: &[u8]) -> bool {
        self.feed(None, bytes)
    }

    /// Would this token keep the input viable? (Reads it, then undoes it:
    /// cheaper than cloning the chart.)
    pub fn viable_after(&mut self, id: Option<u32>, bytes: &[u8]) -> bool {
        let n = self.sets.len();
        let v = self.feed(id, bytes);
        self.sets.truncate(n);
        v
    }

    /// Something can still follow or the input is complete.
    pub fn viable(&self) -> bool {
        !self.sets.last().unwrap().is_empty()
    }

    /// Some terminal can still be read (the text can go on).
    pub fn can_read(&self) -> bool {
        self.sets
            .last()
            .unwrap()
            .iter()
            .any(|it| matches!(self.next_sym(it), Some(Sym::Byte(..)) | Some(Sym::Tok(_))))
    }

    /// The input so far is a complete string of the language.
    pub fn complete(&self) -> bool {
        let start = self.bnf.start;
        self.sets.last().unwrap().iter().any(|it| {
            it.origin == 0
                && self.bnf.prods[it.prod as usize].lhs == start
                && it.dot as usize == self.bnf.prods[it.prod as usize].rhs.len()
        })
    }
}

// ---------------------------------------------------------------------------
// The stack machine (llama.cpp's algorithm), memoized.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    Byte(u8, u8),
    Tok(u32),
    Nt(u32),
    End,
}

/// The empty stack (a complete parse).
const EMPTY: u32 = 0;

/// One interned state: a sorted set of stacks (each stack's top is the
/// position of a terminal; the empty stack means "complete").
struct StateData {
    stacks: Rc<[u32]>,
    complete: bool,
    /// Some stack has a terminal on top (something can still be read).
    can_read: bool,
}

/// The dead state (no stack).
pub const DEAD: u32 = 0;

/// Shared, memoized state space of one grammar. Stacks are persistent
/// lists of grammar positions with shared tails, interned: a stack is one
/// id, pushing and popping are O(1).
pub struct StackMachine {
    bnf: Rc<Bnf>,
    elems: Vec<Elem>,
    prod_pos: Vec<u32>,
    /// Stack nodes: (top position, rest of the stack, depth).
    nodes: Vec<(u32, u32, u32)>,
    node_ids: FxMap<(u32, u32), u32>,
    states: Vec<StateData>,
    intern: FxMap<Rc<[u32]>, u32>,
    trans: FxMap<(u32, u8), u32>,
    start: u32,
}

/// Stacks deeper than this mean the grammar is left-recursive.
const MAX_STACK: u32 = 100_000;

impl StackMachine {
    pub fn new(bnf: Rc<Bnf>) -> StackMachine {
        let mut elems = Vec::new();
        let mut prod_pos = Vec::new();
        for p in &bnf.prods {
            prod_pos.push(elems.len() as u32);
            for s in &p.rhs {
                elems.push(match *s {
                    Sym::Byte(a, b) => Elem::Byte(a, b),
                    Sym::Tok(t) => Elem::Tok(t),
                    Sym::Nt(n) => Elem::Nt(n),
                });
            }
            elems.push(Elem::End);
        }
        let mut m = StackMachine {
            bnf,
            elems,
            prod_pos,
            nodes: vec![(u32::MAX, u32::MAX, 0)],
            node_ids: FxMap::default(),
            states: Vec::new(),
            intern: FxMap::default(),
            trans: FxMap::default(),
            start: DEAD,
        };
        let dead = m.intern_state(Vec::new());
        assert_eq!(dead, DEAD);
        let mut out = Vec::new();
        let sp = m.bnf.by_lhs[m.bnf.start as usize][0];
        let pos = m.prod_pos[sp as usize];
        let s = m.push(EMPTY, pos);
        m.expand(s, &mut out);
        m.start = m.intern_state(out);
        m
    }

    pub fn start(&self) -> u32 {
        self.start
    }

    pub fn num_states(&self) -> usize {
        self.states.len()
    }

    pub fn is_complete(&self, s: u32) -> bool {
        self.states[s as usize].complete
    }

    pub fn can_read(&self, s: u32) -> bool {
        self.states[s as usize].can_read
    }

    pub fn bnf(&self) -> &Rc<Bnf> {
        &self.bnf
    }

    /// The token sets (indices into `Bnf::token_sets`) on top of some
    /// stack of state `s`: a token in one of them can be read whole.
    pub fn token_tops(&self, s: u32) -> Vec<u32> {
        let mut v: Vec<u32> = self.states[s as usize]
            .stacks
            .iter()
            .filter(|&&st| st != EMPTY)
            .filter_map(|&st| match self.elems[self.nodes[st as usize].0 as usize] {
                Elem::Tok(t) => Some(t),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The stack `rest` with `pos` pushed on top.
    fn push(&mut self, rest: u32, pos: u32) -> u32 {
        if let Some(&id) = self.node_ids.get(&(pos, rest)) {
            return id;
        }
        let depth = self.nodes[rest as usize].2 + 1;
        assert!(
            depth < MAX_STACK,
            "reference stack machine: stack depth {depth} (left-recursive grammar? use Earley)"
        );
        let id = self.nodes.len() as u32;
        self.nodes.push((pos, rest, depth));
        self.node_ids.insert((pos, rest), id);
        id
    }

    /// Expands `stack` until every top is a terminal; appends the results.
    fn expand(&mut self, stack: u32, out: &mut Vec<u32>) {
        let mut seen: FxSet<u32> = FxSet::default();
        let mut work = vec![stack];
        while let Some(s) = work.pop() {
            if !seen.insert(s) {
                continue;
            }
            if s == EMPTY {
                out.push(s);
                continue;
            }
            let (pos, rest, _) = self.nodes[s as usize];
            match self.elems[pos as usize] {
                Elem::Byte(..) | Elem::Tok(_) => out.push(s),
                Elem::Nt(n) => {
                    let base = if self.elems[pos as usize + 1] != Elem::End {
                        self.push(rest, pos + 1)
                    } else {
                        rest
                    };
                    for k in 0..self.bnf.by_lhs[n as usize].len() {
                        let p = self.bnf.by_lhs[n as usize][k];
                        let a = self.prod_pos[p as usize];
                        let ns = if self.elems[a as usize] != Elem::End {
                            self.push(base, a)
                        } else {
                            base
                        };
                        work.push(ns);
                    }
                    assert!(
                        seen.len() < 5_000_000,
                        "reference stack machine: expansion blew up (left recursion?)"
                    );
                }
                Elem::End => unreachable!("END on a stack top"),
            }
        }
    }

    fn intern_state(&mut self, mut v: Vec<u32>) -> u32 {
        v.sort_unstable();
        v.dedup();
        if let Some(&id) = self.intern.get(&v[..]) {
            return id;
        }
        let complete = v.contains(&EMPTY);
        let can_read = v.iter().any(|&s| s != EMPTY);
        let rc: Rc<[u32]> = v.into();
        let id = self.states.len() as u32;
        self.states.push(StateData {
            stacks: rc.clone(),
            complete,
            can_read,
        });
        self.intern.insert(rc, id);
        id
    }

    /// Pops the terminal at the top of `s` and expands what follows.
    fn advance(&mut self, s: u32, out: &mut Vec<u32>) {
        let (pos, rest, _) = self.nodes[s as usize];
        let ns = if self.elems[pos as usize + 1] != Elem::End {
            self.push(rest, pos + 1)
        } else {
            rest
        };
        self.expand(ns, out);
    }

    /// The state after reading byte `b` (memoized).
    #[inline]
    pub fn step(&mut self, state: u32, b: u8) -> u32 {
        if state == DEAD {
            return DEAD;
        }
        if let Some(&t) = self.trans.get(&(state, b)) {
            return t;
        }
        let stacks = self.states[state as usize].stacks.clone();
        let mut out = Vec::new();
        for &s in stacks.iter() {
            if s == EMPTY {
                continue;
            }
            if let Elem::Byte(lo, hi) = self.elems[self.nodes[s as usize].0 as usize] {
                if lo <= b && b <= hi {
                    self.advance(s, &mut out);
                }
            }
        }
        let t = self.intern_state(out);
        self.trans.insert((state, b), t);
        t
    }

    pub fn step_bytes(&mut self, mut state: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            state = self.step(state, b);
            if state == DEAD {
                break;
            }
        }
        state
    }

    /// Reads one token (see the module doc).
    pub fn step_token(&mut self, state: u32, id: Option<u32>, bytes: &[u8]) -> u32 {
        let by_text = if bytes.is_empty() {
            DEAD
        } else {
            self.step_bytes(state, bytes)
        };
        let Some(id) = id else {
            return by_text;
        };
        let stacks = self.states[state as usize].stacks.clone();
        let mut out = Vec::new();
        for &s in stacks.iter() {
            if s == EMPTY {
                continue;
            }
            if let Elem::Tok(t) = self.elems[self.nodes[s as usize].0 as usize] {
                if self.bnf.token_matches(t, id) {
                    self.advance(s, &mut out);
                }
            }
        }
        if out.is_empty() {
            return by_text;
        }
        out.extend(self.states[by_text as usize].stacks.iter().copied());
        self.intern_state(out)
    }
}

/// A position in a [`StackMachine`]: cheap to clone.
#[derive(Clone)]
pub struct StackCursor {
    pub machine: Rc<RefCell<StackMachine>>,
    pub state: u32,
}

impl StackCursor {
    pub fn new(bnf: Rc<Bnf>) -> StackCursor {
        let m = StackMachine::new(bnf);
        let state = m.start();
        StackCursor {
            machine: Rc::new(RefCell::new(m)),
            state,
        }
    }

    pub fn feed(&mut self, id: Option<u32>, bytes: &[u8]) -> bool {
        self.state = self.machine.borrow_mut().step_token(self.state, id, bytes);
        self.viable()
    }

    pub fn feed_bytes(&mut self, bytes: &[u8]) -> bool {
        self.feed(None, bytes)
    }

    pub fn viable(&self) -> bool {
        self.state != DEAD
    }

    pub fn complete(&self) -> bool {
        self.machine.borrow().is_complete(self.state)
    }

    pub fn can_read(&self) -> bool {
        self.machine.borrow().can_read(self.state)
    }
}

// ---------------------------------------------------------------------------
// Whole-vocabulary checks.

/// Text tokens of a vocabulary sorted by bytes, with the length of the
/// common prefix of each with the one before.
pub struct SortedVocab {
    pub ids: Vec<u32>,
    pub lcp: Vec<u32>,
    pub bytes: Vec<Vec<u8>>,
}

impl SortedVocab {
    /// `tokens[i]` is `Some(bytes)` for a text token, `None` for tokens that
    /// never match text (special, end-of-sequence).
    pub fn new(tokens: &[Option<&[u8]>]) -> SortedVocab {
        let mut ids: Vec<u32> = (0..tokens.len() as u32)
            .filter(|&i| matches!(tokens[i as usize], Some(b) if !b.is_empty()))
            .collect();
        ids.sort_by(|&a, &b| tokens[a as usize].cmp(&tokens[b as usize]));
        let bytes: Vec<Vec<u8>> = ids
            .iter()
            .map(|&i| tokens[i as usize].unwrap().to_vec())
            .collect();
        let mut lcp = vec![0u32; ids.len()];
        for i in 1..ids.len() {
            let (a, b) = (&bytes[i - 1], &bytes[i]);
            lcp[i] = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count() as u32;
        }
        SortedVocab { ids, lcp, bytes }
    }

    /// Sets `allowed[id]` for every text token whose bytes can be read from
    /// `state` (the rest of `allowed` is left alone). Returns the number of
    /// byte transitions taken.
    pub fn allowed_from(&self, m: &mut StackMachine, state: u32, allowed: &mut [bool]) -> u64 {
        let mut steps = 0u64;
        if state == DEAD {
            return 0;
        }
        let n = self.ids.len();
        // st[d] = state after the first d bytes of the current token.
        let mut st: Vec<u32> = vec![state];
        let mut i = 0;
        while i < n {
            let bytes = &self.bytes[i];
            let l = self.lcp[i] as usize;
            debug_assert!(st.len() > l);
            st.truncate(l + 1);
            let mut dead_at = None;
            for (d, &b) in bytes.iter().enumerate().skip(l) {
                steps += 1;
                let nx = m.step(st[d], b);
                if nx == DEAD {
                    dead_at = Some(d);
                    break;
                }
                st.push(nx);
            }
            match dead_at {
                None => {
                    allowed[self.ids[i] as usize] = true;
                    i += 1;
                }
                Some(d) => {
                    // Every following token sharing bytes[..=d] is dead too.
                    let mut j = i + 1;
                    while j < n && self.lcp[j] as usize > d {
                        j += 1;
                    }
                    i = j;
                }
            }
        }
        steps
    }
}
