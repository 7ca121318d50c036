//! The DFA of a [`JsonStrings`] node, built directly.
//!
//! Spelled out as a regular expression, a set of property names holds
//! every spelling of every character (raw, short escape, `\uXXXX` in
//! either case, surrogate pairs); a Thompson NFA, a subset construction
//! and a minimization of that, then a product with "any JSON string" for
//! "any other name", cost hundreds of microseconds per object. Here the
//! values go into a trie over code points (suffixes shared, so it is the
//! minimal automaton of the set), and the byte-level DFA follows the trie
//! while it decodes the JSON text: a state is the trie state between
//! characters, after a backslash, or partway through a character's
//! spelling. A state partway through a character is named by what its
//! possible continuations lead to (which trie states, at which offsets of
//! the code points it can still become), so states that cannot be told
//! apart are one state and the result is minimal without a minimization
//! pass (a test checks it against the general construction).

use std::sync::Arc;

use super::{Table, DEAD};
use crate::error::Result;
use crate::ir::JsonStrings;
use crate::limits::Meter;
use crate::util::hash::FastMap;

/// A trie state, or one of these.
pub(super) type CpState = u32;
/// No value continues this way.
const CP_DEAD: CpState = u32::MAX;
/// Past the last code point (a range from 0 that holds them all).
const ALL: u32 = 0x110000;

/// The values as a minimal DFA over code points: trie states with their
/// children (sorted by code point), where every other code point goes
/// (`other`: the state of "some other value" when negated, else
/// [`CP_DEAD`]) and whether the value read so far is in the language.
/// State 0 is the start.
pub(super) struct CpDfa {
    pub(super) children: Vec<Vec<(u32, CpState)>>,
    pub(super) is_final: Vec<bool>,
    other: Vec<CpState>,
}

impl CpDfa {
    /// An error once `meter`'s deadline passes.
    pub(super) fn new(js: &JsonStrings, meter: &mut Meter) -> Result<CpDfa> {
        // The plain trie; a parent always has a smaller index than its
        // children. The values are sorted (by bytes, which for UTF-8 is by
        // code points), so a child that exists is the last one added and
        // children come in order: linear in the values' length however
        // many children a node has.
        let mut children: Vec<Vec<(u32, u32)>> = vec![Vec::new()];
        let mut ends = vec![false];
        for v in js.values() {
            meter.step(v.len())?;
            let mut q = 0usize;
            for c in v.chars() {
                let c = c as u32;
                q = match children[q].last() {
                    Some(&(last, t)) if last == c => t as usize,
                    _ => {
                        let t = children.len();
                        children.push(Vec::new());
                        ends.push(false);
                        children[q].push((c, t as u32));
                        t
                    }
                };
            }
            ends[q] = true;
        }
        // Equal subtrees become one state (children first), so that the
        // byte-level states built on top are distinct.
        let n = children.len();
        let mut canon = vec![0u32; n];
        let mut ids: FastMap<(bool, Vec<(u32, u32)>), u32> = FastMap::default();
        let mut out_children: Vec<Vec<(u32, u32)>> = Vec::new();
        let mut out_ends: Vec<bool> = Vec::new();
        for q in (0..n).rev() {
            meter.step(children[q].len() + 1)?;
            let mut kids: Vec<(u32, u32)> = children[q]
                .iter()
                .map(|&(c, t)| (c, canon[t as usize]))
                .collect();
            kids.sort_unstable();
            let next = out_children.len() as u32;
            let id = *ids.entry((ends[q], kids.clone())).or_insert(next);
            if id == next {
                out_children.push(kids);
                out_ends.push(ends[q]);
            }
            canon[q] = id;
        }
        let root = canon[0];
        // Renumber so that the root is state 0 (only for readability of
        // the result: every state is reached through `root` below).
        let m = out_children.len();
        let order: Vec<u32> = std::iter::once(root)
            .chain((0..m as u32).filter(|&q| q != root))
            .collect();
        let mut new_id = vec![0u32; m];
        for (i, &q) in order.iter().enumerate() {
            new_id[q as usize] = i as u32;
        }
        let mut children: Vec<Vec<(u32, u32)>> = order
            .iter()
            .map(|&q| {
                out_children[q as usize]
                    .iter()
                    .map(|&(c, t)| (c, new_id[t as usize]))
                    .collect()
            })
            .collect();
        let ends: Vec<bool> = order.iter().map(|&q| out_ends[q as usize]).collect();
        if js.negated() && js.values().is_empty() {
            // Any value at all: the root is "some other value" itself (a
            // state of its own would be a second, equivalent state right
            // after the opening quote).
            Ok(CpDfa {
                children,
                is_final: vec![true],
                other: vec![0],
            })
        } else if js.negated() {
            // "Some other value": a final state that reads anything.
            let out = m as u32;
            children.push(Vec::new());
            let mut is_final: Vec<bool> = ends.iter().map(|&e| !e).collect();
            is_final.push(true);
            Ok(CpDfa {
                children,
                is_final,
                other: vec![out; m + 1],
            })
        } else {
            Ok(CpDfa {
                children,
                is_final: ends,
                other: vec![CP_DEAD; m],
            })
        }
    }

    /// What the code points `base..base + size` lead to from `q`.
    fn restrict(&self, q: CpState, base: u32, size: u32) -> Targets {
        let kids = &self.children[q as usize];
        let lo = kids.partition_point(|x| x.0 < base);
        let hi = kids.partition_point(|x| (x.0 as u64) < base as u64 + size as u64);
        Targets {
            listed: kids[lo..hi].iter().map(|&(c, t)| (c - base, t)).collect(),
            other: self.other[q as usize],
        }
    }
}

/// Where a range of code points goes: `listed` (offset in the range,
/// trie state), everything else to `other`.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Targets {
    listed: Arc<[(u32, CpState)]>,
    other: CpState,
}

impl Targets {
    fn is_dead(&self) -> bool {
        self.other == CP_DEAD && self.listed.iter().all(|&(_, t)| t == CP_DEAD)
    }

    fn at(&self, offset: u32) -> CpState {
        match self.listed.binary_search_by_key(&offset, |x| x.0) {
            Ok(i) => self.listed[i].1,
            Err(_) => self.other,
        }
    }

    /// The part `start..start + size`, offsets from `start`.
    fn sub(&self, start: u32, size: u32) -> Targets {
        let lo = self.listed.partition_point(|x| x.0 < start);
        let hi = self
            .listed
            .partition_point(|x| (x.0 as u64) < start as u64 + size as u64);
        Targets {
            listed: self.listed[lo..hi]
                .iter()
                .map(|&(o, t)| (o - start, t))
                .collect(),
            other: self.other,
        }
    }
}

/// What is left of a character's spelling.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Rest {
    /// `left` UTF-8 continuation bytes, the next one in `lo..=hi` (the
    /// lead byte rules out overlong forms and surrogates).
    Utf8 { left: u8, lo: u8, hi: u8 },
    /// `left` hex digits of a `\u` escape whose value is not a surrogate.
    Hex { left: u8 },
    /// The rest of a surrogate pair, the high surrogate's value known to
    /// its second digit: step `k` of [`PAIR_STEPS`].
    Pair { step: u8 },
}

/// The spelling of a surrogate pair after `\uD` and the high surrogate's
/// second digit (8-B): two hex digits, `\`, `u`, `D` (either case), the low
/// surrogate's second digit (C-F); then two hex digits, as the end of any
/// `\u` escape ([`Rest::Hex`]). Each step's radix: how many ways it splits
/// the code points left.
const PAIR_STEPS: [u32; 6] = [16, 16, 1, 1, 1, 4];

/// Code points a [`Rest`] can still become.
fn rest_size(r: Rest) -> u32 {
    match r {
        Rest::Utf8 { left, .. } => 64u32.pow(left as u32),
        Rest::Hex { left } => 16u32.pow(left as u32),
        Rest::Pair { step } => PAIR_STEPS[step as usize..].iter().product::<u32>() * 256,
    }
}

/// A state of the byte-level DFA.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Start,
    /// After the closing quote.
    End,
    /// Between characters at a trie state.
    Main(CpState),
    /// After a backslash: where each code point leads (the trie state's
    /// transitions; not the state, whose finality no longer matters).
    Escape(Targets),
    /// After `\u`, the same.
    HexAt(Targets),
    /// After `\uD`: `below` for U+D000..U+D7FF, `pairs` for the code points
    /// above U+FFFF (written as surrogate pairs).
    HexD {
        below: Targets,
        pairs: Targets,
    },
    /// Partway through a character.
    Partial {
        rest: Rest,
        targets: Targets,
    },
}

/// The code point of a short escape `\x`.
pub(super) fn short_escape(b: u8) -> Option<u32> {
    Some(match b {
        b'"' => 0x22,
        b'\\' => 0x5C,
        b'/' => 0x2F,
        b'b' => 0x08,
        b'f' => 0x0C,
        b'n' => 0x0A,
        b'r' => 0x0D,
        b't' => 0x09,
        _ => return None,
    })
}

/// When only the listed code points lead anywhere, states that differ in
/// bytes that lead nowhere are one state: the range a lead byte allows the
/// next byte is moot (only listed code points, all within it, are live),
/// and the low surrogate's C-F digit followed by two hex digits reads what
/// three hex digits would read if only C-F were live first.
fn canonical_rest(rest: &mut Rest, targets: &mut Targets) {
    match rest {
        Rest::Utf8 { lo, hi, .. } => (*lo, *hi) = (0x80, 0xBF),
        Rest::Pair { step: 5 } => {
            *rest = Rest::Hex { left: 3 };
            targets.listed = targets
                .listed
                .iter()
                .map(|&(o, t)| (o + 0xC00, t))
                .collect();
        }
        _ => {}
    }
}

/// Lead bytes of multi-byte UTF-8: (first, last, bits of the lead kept,
/// continuation bytes left, the range of the next byte).
const LEADS: [(u8, u8, u32, u8, u8, u8); 8] = [
    (0xC2, 0xDF, 0x1F, 1, 0x80, 0xBF),
    (0xE0, 0xE0, 0x0F, 2, 0xA0, 0xBF),
    (0xE1, 0xEC, 0x0F, 2, 0x80, 0xBF),
    (0xED, 0xED, 0x0F, 2, 0x80, 0x9F),
    (0xEE, 0xEF, 0x0F, 2, 0x80, 0xBF),
    (0xF0, 0xF0, 0x07, 3, 0x90, 0xBF),
    (0xF1, 0xF3, 0x07, 3, 0x80, 0xBF),
    (0xF4, 0xF4, 0x07, 3, 0x80, 0x8F),
];

/// Every hex digit byte with its value.
const HEX_DIGITS: [(u8, u32); 22] = {
    let mut out = [(0u8, 0u32); 22];
    let mut i = 0;
    while i < 10 {
        out[i] = (b'0' + i as u8, i as u32);
        i += 1;
    }
    while i < 16 {
        out[i] = (b'a' + (i - 10) as u8, i as u32);
        out[i + 6] = (b'A' + (i - 10) as u8, i as u32);
        i += 1;
    }
    out
};

/// Interns states. Most transitions go to a few states that need no
/// hashing (trie states, the "other" state partway through a character);
/// only states partway through a listed character are hashed.
struct Builder<'a> {
    cp: &'a CpDfa,
    /// Where every unlisted code point goes ([`CP_DEAD`] or the state of
    /// "some other value").
    other: CpState,
    ids: FastMap<Key, u32>,
    keys: Vec<Key>,
    /// Per trie state, its `Main` state.
    main_ids: Vec<u32>,
    /// `Partial` states whose characters all go to `other`, by rest.
    uniform: Vec<(Rest, u32)>,
}

impl Builder<'_> {
    fn id(&mut self, mut key: Key) -> u32 {
        if let Key::Partial { rest, targets } = &mut key {
            if targets.other == CP_DEAD {
                canonical_rest(rest, targets);
            }
        }
        let dead = match &key {
            Key::Main(q) => *q == CP_DEAD,
            Key::Escape(t) | Key::HexAt(t) => t.is_dead(),
            Key::Partial { targets, .. } => targets.is_dead(),
            _ => false,
        };
        if dead {
            return DEAD;
        }
        let next = self.keys.len() as u32;
        let id = *self.ids.entry(key.clone()).or_insert(next);
        if id == next {
            self.keys.push(key);
        }
        id
    }

    /// The state between characters at trie state `q`.
    fn main(&mut self, q: CpState) -> u32 {
        if q == CP_DEAD {
            return DEAD;
        }
        let slot = self.main_ids[q as usize];
        if slot != u32::MAX {
            return slot;
        }
        let id = self.id(Key::Main(q));
        self.main_ids[q as usize] = id;
        id
    }

    /// The state after part of a character: `rest` left (`None`: the
    /// character is complete), its code points those of `listed` (offsets
    /// from `origin`) within `lo..hi`, any other one going to `other`.
    fn partial(
        &mut self,
        rest: Option<Rest>,
        listed: &[(u32, CpState)],
        origin: u32,
        lo: u32,
        hi: u32,
    ) -> u32 {
        let a = listed.partition_point(|x| x.0 < lo);
        let b = listed.partition_point(|x| x.0 < hi);
        let part = &listed[a..b];
        let Some(rest) = rest else {
            return self.main(part.first().map_or(self.other, |x| x.1));
        };
        if part.is_empty() {
            if self.other == CP_DEAD {
                return DEAD;
            }
            if let Some(&(_, id)) = self.uniform.iter().find(|x| x.0 == rest) {
                return id;
            }
        }
        let targets = Targets {
            listed: part.iter().map(|&(o, t)| (o - origin, t)).collect(),
            other: self.other,
        };
        let id = self.id(Key::Partial { rest, targets });
        if part.is_empty() {
            self.uniform.push((rest, id));
        }
        id
    }

    /// The transitions of state `key` on every byte, into `row`.
    fn row(&mut self, key: &Key, row: &mut [u32; 256]) {
        row.fill(DEAD);
        match key {
            Key::Start => row[b'"' as usize] = self.main(0),
            Key::End => {}
            &Key::Main(q) => {
                if self.cp.is_final[q as usize] {
                    row[b'"' as usize] = self.id(Key::End);
                }
                let all = self.cp.restrict(q, 0, ALL);
                row[b'\\' as usize] = self.id(Key::Escape(all.clone()));
                let unlisted = self.main(self.other);
                for b in 0x20..0x80u8 {
                    if b != b'"' && b != b'\\' {
                        row[b as usize] = unlisted;
                    }
                }
                for &(c, t) in all.listed.iter() {
                    if (0x20..0x80).contains(&c) && c != b'"' as u32 && c != b'\\' as u32 {
                        row[c as usize] = self.main(t);
                    }
                }
                for (first, last, bits, left, lo, hi) in LEADS {
                    let rest = Rest::Utf8 { left, lo, hi };
                    let size = rest_size(rest);
                    let sub = size / 64;
                    for b in first..=last {
                        let base = (b as u32 & bits) * size;
                        // Only the code points the next byte's range allows
                        // (no overlong forms, no surrogates).
                        let (from, to) = (
                            base + (lo as u32 & 0x3F) * sub,
                            base + ((hi as u32 & 0x3F) + 1) * sub,
                        );
                        row[b as usize] = self.partial(Some(rest), &all.listed, base, from, to);
                    }
                }
            }
            Key::Escape(all) => {
                for b in *b"\"\\/bfnrt" {
                    let c = short_escape(b).expect("a short escape");
                    row[b as usize] = self.main(all.at(c));
                }
                row[b'u' as usize] = self.id(Key::HexAt(all.clone()));
            }
            Key::HexAt(all) => {
                let mut by_digit = [DEAD; 16];
                for (d, slot) in by_digit.iter_mut().enumerate() {
                    let d = d as u32;
                    *slot = if d == 0xD {
                        let below = all.sub(0xD000, 0x800);
                        let pairs = all.sub(0x10000, 0x100000);
                        if below.is_dead() && pairs.is_dead() {
                            DEAD
                        } else {
                            self.id(Key::HexD { below, pairs })
                        }
                    } else {
                        let (lo, hi) = (d << 12, (d + 1) << 12);
                        self.partial(Some(Rest::Hex { left: 3 }), &all.listed, lo, lo, hi)
                    };
                }
                for (b, d) in HEX_DIGITS {
                    row[b as usize] = by_digit[d as usize];
                }
            }
            Key::HexD { below, pairs } => {
                let mut by_digit = [DEAD; 16];
                for (d, slot) in by_digit.iter_mut().enumerate().take(0xC) {
                    let d = d as u32;
                    *slot = if d < 8 {
                        // U+D000..U+D7FF.
                        let (lo, hi) = (d << 8, (d + 1) << 8);
                        self.partial(Some(Rest::Hex { left: 2 }), &below.listed, lo, lo, hi)
                    } else {
                        // A high surrogate D800-DBFF: 256 values of it,
                        // each a block of 1,024 code points.
                        let rest = Rest::Pair { step: 0 };
                        let size = rest_size(rest);
                        let lo = (d - 8) * size;
                        self.partial(Some(rest), &pairs.listed, lo, lo, lo + size)
                    };
                }
                // A low surrogate cannot come first (C-F stay dead).
                for (b, d) in HEX_DIGITS {
                    row[b as usize] = by_digit[d as usize];
                }
            }
            Key::Partial { rest, targets } => {
                let (rest, listed) = (*rest, targets.listed.clone());
                let size = rest_size(rest);
                match rest {
                    Rest::Utf8 { left, lo, hi } => {
                        let sub = size / 64;
                        let next = (left > 1).then_some(Rest::Utf8 {
                            left: left - 1,
                            lo: 0x80,
                            hi: 0xBF,
                        });
                        for b in lo..=hi {
                            let from = (b as u32 & 0x3F) * sub;
                            row[b as usize] = self.partial(next, &listed, from, from, from + sub);
                        }
                    }
                    Rest::Hex { left } => {
                        let sub = size / 16;
                        let next = (left > 1).then_some(Rest::Hex { left: left - 1 });
                        let mut by_digit = [DEAD; 16];
                        for (d, slot) in by_digit.iter_mut().enumerate() {
                            let from = d as u32 * sub;
                            *slot = self.partial(next, &listed, from, from, from + sub);
                        }
                        for (b, d) in HEX_DIGITS {
                            row[b as usize] = by_digit[d as usize];
                        }
                    }
                    Rest::Pair { step } => {
                        let radix = PAIR_STEPS[step as usize];
                        let sub = size / radix;
                        let next = Some(if step + 1 < PAIR_STEPS.len() as u8 {
                            Rest::Pair { step: step + 1 }
                        } else {
                            Rest::Hex { left: 2 }
                        });
                        let go = |digit: u32, this: &mut Self| {
                            let from = digit * sub;
                            this.partial(next, &listed, from, from, from + sub)
                        };
                        match step {
                            2 => row[b'\\' as usize] = go(0, self),
                            3 => row[b'u' as usize] = go(0, self),
                            4 => {
                                let t = go(0, self);
                                row[b'd' as usize] = t;
                                row[b'D' as usize] = t;
                            }
                            _ => {
                                // Steps 0 and 1: hex digits; step 5: the
                                // low surrogate's C-F.
                                let first = if step == 5 { 0xC } else { 0 };
                                let mut by_digit = [DEAD; 16];
                                for (d, slot) in by_digit.iter_mut().enumerate().skip(first) {
                                    *slot = go(d as u32 - first as u32, self);
                                }
                                for (b, d) in HEX_DIGITS {
                                    row[b as usize] = by_digit[d as usize];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The DFA of `js` (quotes included): minimal, state 0 the start. An
/// error once `limits`' deadline passes, or as soon as the table has more
/// than `limits.max_states` states (100,000 values that share few
/// prefixes need several states per character, for the escapes: refused
/// when the table passes the grammar's budget, not once it is whole).
pub fn table(js: &JsonStrings, limits: &super::DfaLimits) -> Result<Table> {
    let mut meter = limits.deadline.meter();
    let cp = CpDfa::new(js, &mut meter)?;
    table_of(&cp, js, limits, &mut meter)
}

/// [`table`] from the values' code-point automaton `cp`.
pub(super) fn table_of(
    cp: &CpDfa,
    js: &JsonStrings,
    limits: &super::DfaLimits,
    meter: &mut Meter,
) -> Result<Table> {
    let (classes, reps) = byte_classes(cp);
    let mut b = Builder {
        other: cp.other.first().copied().unwrap_or(CP_DEAD),
        cp,
        ids: FastMap::default(),
        keys: Vec::new(),
        main_ids: vec![u32::MAX; cp.children.len()],
        uniform: Vec::new(),
    };
    b.id(Key::Start);
    let mut row = [DEAD; 256];
    let mut trans = Vec::new();
    let mut done = 0;
    while done < b.keys.len() {
        let key = b.keys[done].clone();
        // A row, and the code points the key lists (cloned, split).
        let listed = match &key {
            Key::Escape(t) | Key::HexAt(t) | Key::Partial { targets: t, .. } => t.listed.len(),
            Key::HexD { below, pairs } => below.listed.len() + pairs.listed.len(),
            Key::Start | Key::End | Key::Main(_) => 0,
        };
        meter.step(256 + reps.len() + 4 * listed)?;
        b.row(&key, &mut row);
        trans.extend(reps.iter().map(|&r| row[r as usize]));
        if b.keys.len() > limits.max_states {
            return Err(crate::error::Error::limit(format!(
                "the JSON strings of {} listed values need more than {} automaton states \
                 (max_states)",
                js.values().len(),
                limits.max_states
            )));
        }
        done += 1;
    }
    let is_final = b.keys.iter().map(|k| *k == Key::End).collect();
    Ok(Table {
        classes,
        num_classes: reps.len(),
        trans,
        is_final,
    })
}

/// Byte classes of the DFA of `cp`, from what each byte does rather than
/// from the transition table: in every state a byte acts as a raw
/// character (the same for every character no trie state lists), as what
/// it escapes after a backslash, as a hex digit, as a UTF-8 lead or
/// continuation byte. Bytes that do all of these alike are alike
/// everywhere. Returns the class of each byte and each class's first byte.
fn byte_classes(cp: &CpDfa) -> ([u8; 256], Vec<u8>) {
    let mut listed_ascii = [false; 128];
    // Lead and continuation bytes of the listed multi-byte characters.
    let mut listed_byte = [false; 256];
    for kids in &cp.children {
        for &(c, _) in kids {
            match char::from_u32(c) {
                Some(ch) if c < 0x80 => listed_ascii[ch as usize] = true,
                Some(ch) => {
                    let mut buf = [0u8; 4];
                    for &b in ch.encode_utf8(&mut buf).as_bytes() {
                        listed_byte[b as usize] = true;
                    }
                }
                None => {}
            }
        }
    }
    let signature = |b: u8| -> (u8, u16, u16, u16) {
        match b {
            0x00..=0x1F | 0xC0 | 0xC1 | 0xF5..=0xFF => (0, 0, 0, 0),
            b'"' | b'\\' => (1, b as u16, 0, 0),
            0x20..=0x7F => {
                // A listed character raw, or any other one.
                let raw = if listed_ascii[b as usize] {
                    b as u16
                } else {
                    0
                };
                let escaped = match short_escape(b) {
                    Some(c) if (c as usize) < 128 && listed_ascii[c as usize] => 0x100 | c as u16,
                    Some(_) => 0x200,
                    None if b == b'u' => 0x300,
                    None => 0,
                };
                let hex = match b {
                    b'0'..=b'9' => 1 + (b - b'0') as u16,
                    b'a'..=b'f' => 11 + (b - b'a') as u16,
                    b'A'..=b'F' => 11 + (b - b'A') as u16,
                    _ => 0,
                };
                (2, raw, escaped, hex)
            }
            0x80..=0xBF => {
                // The ranges a lead byte allows next: 80-8F, 90-9F, A0-BF.
                let part = (b >= 0x90) as u16 + (b >= 0xA0) as u16;
                (
                    3,
                    part,
                    if listed_byte[b as usize] { b as u16 } else { 0 },
                    0,
                )
            }
            _ => {
                let group = LEADS
                    .iter()
                    .position(|&(first, last, ..)| (first..=last).contains(&b))
                    .expect("a lead byte") as u16;
                (
                    4,
                    group,
                    if listed_byte[b as usize] { b as u16 } else { 0 },
                    0,
                )
            }
        }
    };
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    let mut seen: Vec<(u8, u16, u16, u16)> = Vec::new();
    for b in 0..=255u8 {
        let sig = signature(b);
        let c = match seen.iter().position(|s| *s == sig) {
            Some(c) => c,
            None => {
                seen.push(sig);
                reps.push(b);
                seen.len() - 1
            }
        };
        classes[b as usize] = c as u8;
    }
    (classes, reps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::lexeme::{minimize, table_from_hir, to_hir, DfaLimits};

    /// The general construction of the same language: the spelled-out
    /// expression (a product with a complement when negated).
    fn general(js: &JsonStrings) -> Table {
        let cache = crate::compile::lexeme::Uncached;
        let spelled = js.spelled();
        if js.negated() {
            let t =
                super::super::boolean::table_of(&spelled, &DfaLimits::default(), &cache).unwrap();
            minimize(&t, &crate::limits::Deadline::none()).unwrap()
        } else {
            table_from_hir(&to_hir(&spelled), &DfaLimits::default()).unwrap()
        }
    }

    fn run(t: &Table, s: &[u8]) -> bool {
        let mut q = 0u32;
        for &b in s {
            q = t.next(q, b);
            if q == DEAD {
                return false;
            }
        }
        t.is_final[q as usize]
    }

    #[test]
    fn same_language_and_size_as_the_general_construction() {
        let sets: Vec<Vec<&str>> = vec![
            // Negated: any string at all (one state inside the quotes).
            vec![],
            vec!["radius"],
            vec!["width", "height", "shape", "circle", "rectangle"],
            vec!["", "a", "ab", "b"],
            vec!["é", "€uro", "😀", "a\"b\\c/d\n\u{1}"],
            vec![
                "\u{FFFF}",
                "\u{10000}",
                "\u{10FFFF}",
                "\u{D7FF}",
                "\u{E000}",
            ],
        ];
        for values in &sets {
            for negated in [false, true] {
                if values.is_empty() && !negated {
                    // No string at all: never built (`JsonStrings::is_empty`).
                    continue;
                }
                let js = JsonStrings::new(values.iter().map(|s| s.to_string()), negated);
                let ours = table(&js, &super::super::DfaLimits::default()).unwrap();
                let theirs = general(&js);
                assert!(
                    super::super::tests::same_language(&ours, &theirs),
                    "{values:?} negated {negated}"
                );
                assert_eq!(
                    ours.num_states(),
                    theirs.num_states(),
                    "{values:?} negated {negated}: not minimal"
                );
            }
        }
    }

    /// Random sets over code points where spellings meet: escapable ASCII,
    /// the ends of UTF-8 lengths and of the surrogate gap, the planes.
    #[test]
    fn random_sets_match_the_general_construction() {
        let pool: Vec<char> = [
            'a',
            'b',
            'z',
            'A',
            '0',
            '"',
            '\\',
            '/',
            '\n',
            '\u{1}',
            '\u{1F}',
            '\u{7F}',
            '\u{80}',
            'é',
            '\u{7FF}',
            '\u{800}',
            '\u{801}',
            '\u{1801}',
            '\u{D7FF}',
            '\u{E000}',
            '\u{FFFF}',
            '\u{10000}',
            '\u{10001}',
            '😀',
            '\u{10FFFF}',
        ]
        .to_vec();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..40 {
            let count = 1 + next(4);
            let values: Vec<String> = (0..count)
                .map(|_| (0..next(4)).map(|_| pool[next(pool.len())]).collect())
                .collect();
            for negated in [false, true] {
                let js = JsonStrings::new(values.clone(), negated);
                let (ours, theirs) = (
                    table(&js, &super::super::DfaLimits::default()).unwrap(),
                    general(&js),
                );
                assert!(
                    super::super::tests::same_language(&ours, &theirs),
                    "{values:?} negated {negated}"
                );
                assert_eq!(
                    ours.num_states(),
                    theirs.num_states(),
                    "{values:?} {negated}"
                );
            }
        }
    }

    /// A set whose automaton passes `max_states` stops there, naming it.
    #[test]
    fn states_past_the_budget_are_refused() {
        let values: Vec<String> = (0..2000)
            .map(|i| format!("{:x}", i * 7919 + 12345))
            .collect();
        let js = JsonStrings::new(values, false);
        let whole = table(&js, &super::super::DfaLimits::default()).unwrap();
        let limits = super::super::DfaLimits {
            max_states: whole.num_states() / 2,
            ..Default::default()
        };
        let err = table(&js, &limits).unwrap_err();
        assert!(err.message().contains("max_states"), "{}", err.message());
    }

    #[test]
    fn spellings() {
        let names = JsonStrings::new(["ab".to_string(), "é😀".to_string()], false);
        let others = JsonStrings::new(["ab".to_string(), "é😀".to_string()], true);
        let none = super::super::DfaLimits::default();
        let (t, n) = (
            table(&names, &none).unwrap(),
            table(&others, &none).unwrap(),
        );
        for (text, listed) in [
            (&br#""ab""#[..], true),
            (br#""\u0061b""#, true),
            (br#""a\u0062""#, true),
            ("\"é😀\"".as_bytes(), true),
            (br#""\u00e9\ud83d\uDE00""#, true),
            (br#""\u00E9\uD83D\ude00""#, true),
            (br#""a""#, false),
            (br#""abc""#, false),
            (br#""""#, false),
        ] {
            assert_eq!(run(&t, text), listed, "{}", String::from_utf8_lossy(text));
            assert_eq!(run(&n, text), !listed, "{}", String::from_utf8_lossy(text));
        }
        // Not JSON strings of any value.
        for bad in [
            &br#""ab"#[..],
            br#""\ud83d""#,
            br#""\ude00""#,
            br#""\x""#,
            b"\"\x01\"",
            b"\"\xc0\xaf\"",
            b"\"\xed\xa0\x80\"",
        ] {
            assert!(!run(&n, bad), "{}", String::from_utf8_lossy(bad));
            assert!(!run(&t, bad), "{}", String::from_utf8_lossy(bad));
        }
    }
}
