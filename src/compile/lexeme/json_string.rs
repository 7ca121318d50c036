//! The DFA of JSON strings over a code-point automaton, built directly:
//! a [`JsonStrings`] node's trie, or a pattern's automaton
//! ([`quoted_table`], for [`Expr::JsonQuoted`](crate::ir::Expr)).
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
//!
//! A pattern (`^[a-z]{2,3}(-[A-Z]{2})?$`, a key pattern minus the listed
//! names) goes the same way: determinized over UTF-8 where a class is a
//! few byte ranges, read back as ranges of code points per state
//! ([`CpRanges`]), then spelled out. Spelled out first as an expression,
//! every class would carry every escape of every character, and the
//! subset construction and minimization over that cost 5-20 times as
//! much for the same automaton.

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
}

/// A DFA over code points, as the byte-level builder reads it.
trait CodePoints {
    fn num_states(&self) -> usize;
    fn is_final(&self, q: CpState) -> bool;
    /// Where every code point no transition lists goes: [`CP_DEAD`], or
    /// the state of "some other value" of a negated set.
    fn other(&self) -> CpState;
    /// The transitions of `q`, from code point 0 ([`Targets`]).
    fn transitions(&self, q: CpState) -> Targets;
    /// What each byte does, for [`byte_classes`].
    fn byte_roles(&self) -> ByteRoles;
}

impl CodePoints for CpDfa {
    fn num_states(&self) -> usize {
        self.children.len()
    }

    fn is_final(&self, q: CpState) -> bool {
        self.is_final[q as usize]
    }

    fn other(&self) -> CpState {
        self.other.first().copied().unwrap_or(CP_DEAD)
    }

    fn transitions(&self, q: CpState) -> Targets {
        Targets {
            listed: self.children[q as usize]
                .iter()
                .map(|&(c, t)| (c, c, t))
                .collect(),
            other: self.other[q as usize],
        }
    }

    fn byte_roles(&self) -> ByteRoles {
        // Every character no trie state lists goes to one place: bytes
        // that spell only such characters are alike.
        let mut roles = ByteRoles {
            marked: [false; 256],
            by_interval: false,
        };
        for kids in &self.children {
            for &(c, _) in kids {
                roles.mark(c);
            }
        }
        roles
    }
}

/// A DFA over code points whose transitions are ranges: the code-point
/// view of a UTF-8 automaton (see [`quoted_table`]).
struct CpRanges {
    /// Per state, sorted disjoint inclusive ranges and their targets.
    ranges: Vec<Vec<(u32, u32, CpState)>>,
    is_final: Vec<bool>,
}

impl CodePoints for CpRanges {
    fn num_states(&self) -> usize {
        self.ranges.len()
    }

    fn is_final(&self, q: CpState) -> bool {
        self.is_final[q as usize]
    }

    fn other(&self) -> CpState {
        CP_DEAD
    }

    fn transitions(&self, q: CpState) -> Targets {
        Targets {
            listed: self.ranges[q as usize].iter().copied().collect(),
            other: CP_DEAD,
        }
    }

    fn byte_roles(&self) -> ByteRoles {
        // A byte on neither side of any range's edge, at any position of
        // a character, spells characters of one range wherever it is read;
        // bytes between the same edges are alike.
        let mut roles = ByteRoles {
            marked: [false; 256],
            by_interval: true,
        };
        for ranges in &self.ranges {
            for &(lo, hi, _) in ranges {
                roles.mark(lo);
                if hi < MAX_CP {
                    roles.mark(hi + 1);
                }
            }
        }
        roles
    }
}

/// The last code point.
const MAX_CP: u32 = 0x10FFFF;

/// Bytes that spell an edge of what a [`CodePoints`] automaton tells
/// apart, for [`byte_classes`]: each marked byte is a class of its own
/// (within its role); unmarked bytes are one class (`by_interval` false:
/// every unmarked character goes to one place) or one per run between
/// marked bytes.
struct ByteRoles {
    marked: [bool; 256],
    by_interval: bool,
}

impl ByteRoles {
    /// Marks the bytes of code point `c`'s UTF-8 form (by arithmetic, so
    /// that an edge at a surrogate marks the bytes around it too).
    fn mark(&mut self, c: u32) {
        let bytes: ([u8; 4], usize) = match c {
            0..=0x7F => ([c as u8, 0, 0, 0], 1),
            0x80..=0x7FF => ([0xC0 | (c >> 6) as u8, 0x80 | (c & 0x3F) as u8, 0, 0], 2),
            0x800..=0xFFFF => (
                [
                    0xE0 | (c >> 12) as u8,
                    0x80 | ((c >> 6) & 0x3F) as u8,
                    0x80 | (c & 0x3F) as u8,
                    0,
                ],
                3,
            ),
            _ => (
                [
                    0xF0 | (c >> 18) as u8,
                    0x80 | ((c >> 12) & 0x3F) as u8,
                    0x80 | ((c >> 6) & 0x3F) as u8,
                    0x80 | (c & 0x3F) as u8,
                ],
                4,
            ),
        };
        for &b in &bytes.0[..bytes.1] {
            self.marked[b as usize] = true;
        }
    }

    /// Each byte's identity among the bytes of its role: itself when
    /// marked, else its run between marked bytes (or 0 for every unmarked
    /// byte).
    fn identities(&self) -> [u16; 256] {
        let mut out = [0u16; 256];
        let mut marked_before = 0u16;
        for (b, slot) in out.iter_mut().enumerate() {
            if self.marked[b] {
                *slot = 0x100 | b as u16;
                marked_before += 1;
            } else if self.by_interval {
                *slot = marked_before;
            }
        }
        out
    }
}

/// Where a range of code points goes: `listed` (sorted disjoint
/// inclusive ranges of offsets in the range, and their state),
/// everything else to `other`.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Targets {
    listed: Arc<[(u32, u32, CpState)]>,
    other: CpState,
}

/// The ranges of `listed` within `lo..hi`, cut to it, offsets from
/// `origin` (at most `lo`).
fn clip(
    listed: &[(u32, u32, CpState)],
    origin: u32,
    lo: u32,
    hi: u64,
) -> Arc<[(u32, u32, CpState)]> {
    let a = listed.partition_point(|x| x.1 < lo);
    let b = listed.partition_point(|x| (x.0 as u64) < hi);
    listed[a..b.max(a)]
        .iter()
        .map(|&(x, y, t)| {
            (
                x.max(lo) - origin,
                (y as u64).min(hi - 1) as u32 - origin,
                t,
            )
        })
        .collect()
}

impl Targets {
    fn is_dead(&self) -> bool {
        self.other == CP_DEAD && self.listed.iter().all(|&(_, _, t)| t == CP_DEAD)
    }

    fn at(&self, offset: u32) -> CpState {
        let i = self.listed.partition_point(|x| x.1 < offset);
        match self.listed.get(i) {
            Some(&(lo, _, t)) if lo <= offset => t,
            _ => self.other,
        }
    }

    /// The part `start..start + size`, offsets from `start`.
    fn sub(&self, start: u32, size: u32) -> Targets {
        Targets {
            listed: clip(&self.listed, start, start, start as u64 + size as u64),
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
                .map(|&(lo, hi, t)| (lo + 0xC00, hi + 0xC00, t))
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
    cp: &'a dyn CodePoints,
    /// Where every unlisted code point goes ([`CP_DEAD`] or the state of
    /// "some other value").
    other: CpState,
    ids: FastMap<Key, u32>,
    keys: Vec<Key>,
    /// Per trie state, its `Main` state.
    main_ids: Vec<u32>,
    /// `Partial` states whose characters all go to `other`, by rest.
    uniform: Vec<(Rest, u32)>,
    /// `Partial` states whose characters all lead to one state (by rest,
    /// the span's offsets from its origin, and that state): a pattern's
    /// states mostly read whole blocks of code points alike (`.{0,256}`
    /// is 5,000 such states), and these need neither a slice nor a hash
    /// of one.
    whole: FastMap<(Rest, u32, u32, CpState), u32>,
    /// The lead bytes' row of a state that lists no character past ASCII
    /// (the same in every such state), once one is built.
    unlisted_leads: Option<[u32; LEAD_BYTES]>,
    /// The lead bytes' row of a state that lists some, by where it sends
    /// the characters past ASCII (its listed ranges that reach U+0080),
    /// which is all the row depends on: many states send them alike (all
    /// to one state of a complement, where keys exclude patterns), and a
    /// lead row is 51 partial states to look up.
    leads: FastMap<Box<[CpRange]>, [u32; LEAD_BYTES]>,
}

/// What the spans of one row (one size, one `rest`) already lead to:
/// those listing no code point, and the last ones wholly inside one
/// listed range, by that range's state ([`Builder::spans`]).
#[derive(Default)]
struct SpanMemo {
    empty: Option<u32>,
    whole: Option<(CpState, u32)>,
}

/// Code points `lo..=hi` and the state they lead to.
type CpRange = (u32, u32, CpState);

/// The lead bytes of multi-byte UTF-8 characters, C2-F4.
const LEAD_BYTES: usize = 0xF4 - 0xC2 + 1;

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
        listed: &[(u32, u32, CpState)],
        origin: u32,
        lo: u32,
        hi: u32,
    ) -> u32 {
        let a = listed.partition_point(|x| x.1 < lo);
        let b = listed.partition_point(|x| x.0 < hi).max(a);
        let Some(rest) = rest else {
            return self.main(listed[a..b].first().map_or(self.other, |x| x.2));
        };
        let empty = a == b;
        let whole = (b == a + 1 && listed[a].0 <= lo && listed[a].1 >= hi - 1)
            .then(|| (rest, lo - origin, hi - origin, listed[a].2));
        if let Some(id) = whole.and_then(|w| self.whole.get(&w)) {
            return *id;
        }
        if empty {
            if self.other == CP_DEAD {
                return DEAD;
            }
            if let Some(&(_, id)) = self.uniform.iter().find(|x| x.0 == rest) {
                return id;
            }
        }
        let targets = Targets {
            listed: clip(&listed[a..b], origin, lo, hi as u64),
            other: self.other,
        };
        let id = self.id(Key::Partial { rest, targets });
        if empty {
            self.uniform.push((rest, id));
        }
        if let Some(w) = whole {
            self.whole.insert(w, id);
        }
        id
    }

    /// [`Self::partial`] of consecutive spans of `size` code points from
    /// `base`, one per slot of `out` (each span's offsets from its start).
    /// A row splits its code points so, all spans with the same `rest`:
    /// most list no code point, and most others lie wholly in one listed
    /// range (a pattern's `\S` covers whole blocks). Spans of either kind
    /// that lead alike are one state, looked up once in `memo` rather than
    /// hashed per span; the listed ranges are walked once, in step.
    fn spans(
        &mut self,
        rest: Option<Rest>,
        listed: &[(u32, u32, CpState)],
        base: u32,
        size: u32,
        out: &mut [u32],
        memo: &mut SpanMemo,
    ) {
        let mut i = listed.partition_point(|x| x.1 < base);
        let mut lo = base;
        for slot in out.iter_mut() {
            let hi = lo + size;
            while listed.get(i).is_some_and(|x| x.1 < lo) {
                i += 1;
            }
            *slot = match listed.get(i) {
                Some(&(first, last, t)) if first <= lo && last >= hi - 1 => match memo.whole {
                    Some((known, id)) if known == t => id,
                    _ => {
                        let id = self.partial(rest, listed, lo, lo, hi);
                        memo.whole = Some((t, id));
                        id
                    }
                },
                Some(&(first, _, _)) if first < hi => self.partial(rest, listed, lo, lo, hi),
                _ => *memo
                    .empty
                    .get_or_insert_with(|| self.partial(rest, listed, lo, lo, hi)),
            };
            lo = hi;
        }
    }

    /// The transitions of state `key` on every byte, into `row`.
    fn row(&mut self, key: &Key, row: &mut [u32; 256]) {
        row.fill(DEAD);
        match key {
            Key::Start => row[b'"' as usize] = self.main(0),
            Key::End => {}
            &Key::Main(q) => {
                if self.cp.is_final(q) {
                    row[b'"' as usize] = self.id(Key::End);
                }
                let all = self.cp.transitions(q);
                row[b'\\' as usize] = self.id(Key::Escape(all.clone()));
                let unlisted = self.main(self.other);
                for b in 0x20..0x80u8 {
                    if b != b'"' && b != b'\\' {
                        row[b as usize] = unlisted;
                    }
                }
                for &(lo, hi, t) in all.listed.iter() {
                    for c in lo.max(0x20)..=hi.min(0x7F) {
                        if c != b'"' as u32 && c != b'\\' as u32 {
                            row[c as usize] = self.main(t);
                        }
                    }
                }
                // Where no character past ASCII is listed (most sets of
                // names) and no other value is, no lead byte goes anywhere.
                let ascii_only = all.listed.last().is_none_or(|x| x.1 < 0x80);
                if ascii_only && self.other == CP_DEAD {
                    return;
                }
                // (The ranges as listed: one that starts below U+0080
                // keys apart from one that starts at it, which only
                // shares less.)
                let high = (!ascii_only).then(|| {
                    let first = all.listed.partition_point(|x| x.1 < 0x80);
                    &all.listed[first..]
                });
                let known = match high {
                    None => self.unlisted_leads.as_ref(),
                    Some(high) => self.leads.get(high),
                };
                if let Some(leads) = known {
                    row[0xC2..=0xF4].copy_from_slice(&leads[..]);
                    return;
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
                let mut leads = [DEAD; LEAD_BYTES];
                leads.copy_from_slice(&row[0xC2..=0xF4]);
                match high {
                    None => self.unlisted_leads = Some(leads),
                    Some(high) => _ = self.leads.insert(high.into(), leads),
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
                let mut memo = SpanMemo::default();
                let rest = Some(Rest::Hex { left: 3 });
                let block = 1 << 12;
                self.spans(rest, &all.listed, 0, block, &mut by_digit[..0xD], &mut memo);
                let below = all.sub(0xD000, 0x800);
                let pairs = all.sub(0x10000, 0x100000);
                if !(below.is_dead() && pairs.is_dead()) {
                    by_digit[0xD] = self.id(Key::HexD { below, pairs });
                }
                self.spans(
                    rest,
                    &all.listed,
                    0xE * block,
                    block,
                    &mut by_digit[0xE..],
                    &mut memo,
                );
                for (b, d) in HEX_DIGITS {
                    row[b as usize] = by_digit[d as usize];
                }
            }
            Key::HexD { below, pairs } => {
                let mut by_digit = [DEAD; 16];
                // U+D000..U+D7FF.
                let rest = Some(Rest::Hex { left: 2 });
                let memo = &mut SpanMemo::default();
                self.spans(rest, &below.listed, 0, 1 << 8, &mut by_digit[..8], memo);
                // A high surrogate D800-DBFF: 256 values of it, each a
                // block of 1,024 code points.
                let rest = Rest::Pair { step: 0 };
                let memo = &mut SpanMemo::default();
                let size = rest_size(rest);
                self.spans(
                    Some(rest),
                    &pairs.listed,
                    0,
                    size,
                    &mut by_digit[8..0xC],
                    memo,
                );
                // A low surrogate cannot come first (C-F stay dead).
                for (b, d) in HEX_DIGITS {
                    row[b as usize] = by_digit[d as usize];
                }
            }
            Key::Partial { rest, targets } => {
                let (rest, listed) = (*rest, targets.listed.clone());
                let size = rest_size(rest);
                let mut memo = SpanMemo::default();
                match rest {
                    Rest::Utf8 { left, lo, hi } => {
                        let sub = size / 64;
                        let next = (left > 1).then_some(Rest::Utf8 {
                            left: left - 1,
                            lo: 0x80,
                            hi: 0xBF,
                        });
                        let from = (lo as u32 & 0x3F) * sub;
                        let out = &mut row[lo as usize..=hi as usize];
                        self.spans(next, &listed, from, sub, out, &mut memo);
                    }
                    Rest::Hex { left } => {
                        let sub = size / 16;
                        let next = (left > 1).then_some(Rest::Hex { left: left - 1 });
                        let mut by_digit = [DEAD; 16];
                        self.spans(next, &listed, 0, sub, &mut by_digit, &mut memo);
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
                        let mut by_digit = [DEAD; 16];
                        // Steps 0 and 1: hex digits; step 5: the low
                        // surrogate's C-F; else one byte.
                        let digits = match step {
                            0 | 1 => &mut by_digit[..],
                            5 => &mut by_digit[0xC..],
                            _ => &mut by_digit[..1],
                        };
                        self.spans(next, &listed, 0, sub, digits, &mut memo);
                        match step {
                            2 => row[b'\\' as usize] = by_digit[0],
                            3 => row[b'u' as usize] = by_digit[0],
                            4 => {
                                row[b'd' as usize] = by_digit[0];
                                row[b'D' as usize] = by_digit[0];
                            }
                            _ => {
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
    spell(cp, limits, meter, || {
        format!("the JSON strings of {} listed values", js.values().len())
    })
}

/// The DFA of the JSON strings (quotes included, every spelling) whose
/// decoded values `chars` accepts: `chars` is a DFA over UTF-8 (valid
/// UTF-8 only, as the automaton of an expression over code points is),
/// read as a DFA over code points and spelled out. Minimal when `chars`
/// is (the states are named by what they lead to, as for a trie). An
/// error once `limits`' deadline passes or past `limits.max_states`.
pub fn quoted_table(chars: &Table, limits: &super::DfaLimits) -> Result<Table> {
    let mut meter = limits.deadline.meter();
    let cp = CpRanges::new(chars, &mut meter)?;
    if cp.ranges[0].is_empty() && !cp.is_final[0] {
        // No string at all: the start alone (a minimal table, as spelling
        // it out would leave a state after the opening quote).
        return Ok(Table {
            classes: [0; 256],
            num_classes: 1,
            trans: vec![DEAD],
            is_final: vec![false],
        });
    }
    spell(&cp, limits, &mut meter, || {
        format!(
            "the JSON strings of a pattern of {} automaton states",
            chars.num_states()
        )
    })
}

impl CpRanges {
    /// The code-point view of `chars`: its states between characters
    /// (from the start, renumbered in the order they are found), each
    /// with the ranges of code points its characters lead by.
    fn new(chars: &Table, meter: &mut Meter) -> Result<CpRanges> {
        let mut ids: FastMap<u32, CpState> = FastMap::default();
        let mut order: Vec<u32> = vec![0];
        ids.insert(0, 0);
        let mut tails: Tails = FastMap::default();
        let mut ranges = Vec::new();
        let mut done = 0;
        while done < order.len() {
            let q = order[done];
            done += 1;
            let mut out: Vec<(u32, u32, u32)> = Vec::new();
            for b in 0..0x80u8 {
                push_range(&mut out, b as u32, b as u32, chars.next(q, b));
            }
            for (first, last, bits, left, lo, hi) in LEADS {
                let block = 64u32.pow(left as u32);
                for lead in first..=last {
                    let t = chars.next(q, lead);
                    if t == DEAD {
                        continue;
                    }
                    let base = (lead as u32 & bits) * block;
                    let tail = utf8_tail(chars, t, left, &mut tails, meter)?;
                    // The byte after the lead is limited to `lo..=hi`.
                    let sub = block / 64;
                    let (from, to) = ((lo as u32 & 0x3F) * sub, ((hi as u32 & 0x3F) + 1) * sub);
                    for &(x, y, target) in tail.iter() {
                        let (x, y) = (x.max(from), y.min(to - 1));
                        if x <= y {
                            push_range(&mut out, base + x, base + y, target);
                        }
                    }
                }
            }
            meter.step(128 + out.len())?;
            // Targets become code-point states.
            for r in out.iter_mut() {
                let next = order.len() as CpState;
                let id = *ids.entry(r.2).or_insert(next);
                if id == next {
                    order.push(r.2);
                }
                r.2 = id;
            }
            ranges.push(out);
        }
        let is_final = order.iter().map(|&q| chars.is_final[q as usize]).collect();
        Ok(CpRanges { ranges, is_final })
    }
}

/// Per state of a UTF-8 table inside a character and continuation bytes
/// left, where the rest of the character leads: ranges of offsets within
/// its block, and their state ([`utf8_tail`]).
type Tails = FastMap<(u32, u8), Arc<[(u32, u32, u32)]>>;

/// Appends `lo..=hi` going to `target` (a state of the UTF-8 table) to
/// sorted ranges, merged with the last one when they touch and agree;
/// dead ranges are left out.
fn push_range(out: &mut Vec<(u32, u32, u32)>, lo: u32, hi: u32, target: u32) {
    if target == DEAD {
        return;
    }
    match out.last_mut() {
        Some(last) if last.2 == target && last.1 + 1 == lo => last.1 = hi,
        _ => out.push((lo, hi, target)),
    }
}

/// Where `left` more continuation bytes lead from state `t` of `chars`:
/// ranges of offsets within the block of `64^left` code points they
/// spell (memoized in `tails`: the states inside characters are shared
/// by many leads and states).
fn utf8_tail(
    chars: &Table,
    t: u32,
    left: u8,
    tails: &mut Tails,
    meter: &mut Meter,
) -> Result<Arc<[(u32, u32, u32)]>> {
    if let Some(known) = tails.get(&(t, left)) {
        return Ok(known.clone());
    }
    meter.step(64)?;
    let sub = 64u32.pow(left as u32 - 1);
    let mut out = Vec::new();
    for c in 0x80..=0xBFu8 {
        let next = chars.next(t, c);
        if next == DEAD {
            continue;
        }
        let base = (c as u32 & 0x3F) * sub;
        if left == 1 {
            push_range(&mut out, base, base, next);
        } else {
            let tail = utf8_tail(chars, next, left - 1, tails, meter)?;
            for &(x, y, target) in tail.iter() {
                push_range(&mut out, base + x, base + y, target);
            }
        }
    }
    let out: Arc<[(u32, u32, u32)]> = out.into();
    tails.insert((t, left), out.clone());
    Ok(out)
}

/// The byte-level DFA of the JSON strings of `cp` (see [`Builder`]);
/// `what` names the language in the error past `limits.max_states`.
fn spell(
    cp: &dyn CodePoints,
    limits: &super::DfaLimits,
    meter: &mut Meter,
    what: impl Fn() -> String,
) -> Result<Table> {
    let (classes, reps) = byte_classes(&cp.byte_roles());
    // A set of names spells about six states per trie state (it, after a
    // backslash, after `\u` and after each hex digit of its children's
    // code points): reserved at once, a large table is not copied nor its
    // index rehashed as they double (measured: 3% of compiling a
    // Kubernetes schema).
    let states = (13 * cp.num_states() / 2 + 8).min(limits.max_states.saturating_add(1));
    let mut b = Builder {
        other: cp.other(),
        cp,
        ids: FastMap::with_capacity_and_hasher(states, Default::default()),
        keys: Vec::with_capacity(states),
        main_ids: vec![u32::MAX; cp.num_states()],
        uniform: Vec::new(),
        whole: FastMap::default(),
        unlisted_leads: None,
        leads: FastMap::default(),
    };
    b.id(Key::Start);
    let mut row = [DEAD; 256];
    let mut trans = Vec::with_capacity(states.saturating_mul(reps.len()));
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
                "{} need more than {} automaton states (max_states)",
                what(),
                limits.max_states
            )));
        }
        done += 1;
    }
    let is_final = b.keys.iter().map(|k| *k == Key::End).collect();
    trans.shrink_to_fit();
    Ok(Table {
        classes,
        num_classes: reps.len(),
        trans,
        is_final,
    })
}

/// Byte classes of the DFA of a [`CodePoints`] automaton, from what each
/// byte does rather than from the transition table: in every state a
/// byte acts as a raw character, as what it escapes after a backslash,
/// as a hex digit, as a UTF-8 lead or continuation byte; `roles` says
/// which raw characters the automaton tells apart. Bytes that do all of
/// these alike are alike everywhere. Returns the class of each byte and
/// each class's first byte.
fn byte_classes(roles: &ByteRoles) -> ([u8; 256], Vec<u8>) {
    let identity = roles.identities();
    let signature = |b: u8| -> (u8, u16, u16, u16) {
        match b {
            0x00..=0x1F | 0xC0 | 0xC1 | 0xF5..=0xFF => (0, 0, 0, 0),
            b'"' | b'\\' => (1, b as u16, 0, 0),
            0x20..=0x7F => {
                let escaped = match short_escape(b) {
                    Some(c) => 0x1000 | identity[c as usize],
                    None if b == b'u' => 0x300,
                    None => 0,
                };
                let hex = match b {
                    b'0'..=b'9' => 1 + (b - b'0') as u16,
                    b'a'..=b'f' => 11 + (b - b'a') as u16,
                    b'A'..=b'F' => 11 + (b - b'A') as u16,
                    _ => 0,
                };
                (2, identity[b as usize], escaped, hex)
            }
            0x80..=0xBF => {
                // The ranges a lead byte allows next: 80-8F, 90-9F, A0-BF.
                let part = (b >= 0x90) as u16 + (b >= 0xA0) as u16;
                (3, part, identity[b as usize], 0)
            }
            _ => {
                let group = LEADS
                    .iter()
                    .position(|&(first, last, ..)| (first..=last).contains(&b))
                    .expect("a lead byte") as u16;
                (4, group, identity[b as usize], 0)
            }
        }
    };
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    let mut seen: FastMap<(u8, u16, u16, u16), u8> = FastMap::default();
    for b in 0..=255u8 {
        let next = reps.len() as u8;
        let c = *seen.entry(signature(b)).or_insert(next);
        if c == next {
            reps.push(b);
        }
        classes[b as usize] = c;
    }
    (classes, reps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::lexeme::{
        boolean, has_boolean, minimize, table_from_hir, to_hir, DfaLimits,
    };
    use crate::ir::Expr;

    /// The general construction of the same language: the spelled-out
    /// expression (a product with a complement when negated).
    fn general(js: &JsonStrings) -> Table {
        let cache = crate::compile::lexeme::Uncached;
        let spelled = js.spelled();
        if js.negated() {
            let t = boolean::table_of(&spelled, &DfaLimits::default(), &cache).unwrap();
            minimize(&t, &crate::limits::Deadline::none()).unwrap()
        } else {
            table_from_hir(&to_hir(&spelled), &DfaLimits::default()).unwrap()
        }
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
                let ours = table(&js, &DfaLimits::default()).unwrap();
                let theirs = general(&js);
                assert!(ours.same_language(&theirs), "{values:?} negated {negated}");
                assert_eq!(
                    ours.num_states(),
                    theirs.num_states(),
                    "{values:?} negated {negated}: not minimal"
                );
            }
        }
    }

    /// A code-point expression spelled out by [`quoted_table`] and by the
    /// general construction (its every escape written as an expression):
    /// the same language, and ours minimal.
    fn check_quoted(e: &Expr) {
        let cache = crate::compile::lexeme::Uncached;
        let limits = DfaLimits::default();
        let ours = boolean::table_of(&Expr::json_quoted(e.clone()), &limits, &cache).unwrap();
        let spelled = crate::ir::json_quoted_spelled(e);
        let theirs = if has_boolean(e) {
            let t = boolean::table_of(&spelled, &limits, &cache).unwrap();
            minimize(&t, &crate::limits::Deadline::none()).unwrap()
        } else {
            table_from_hir(&to_hir(&spelled), &limits).unwrap()
        };
        assert!(ours.same_language(&theirs), "{e:?}");
        assert_eq!(ours.num_states(), theirs.num_states(), "{e:?}: not minimal");
    }

    #[test]
    fn patterns_match_the_spelled_construction() {
        let full = crate::regex::Anchoring::Full;
        let search = crate::regex::Anchoring::Search;
        let patterns = [
            (r"[a-z][a-z0-9_]*", full),
            (r"x(-[A-Za-z0-9]{1,8})+", full),
            (r"^[A-Z]{2,3}(-[0-9]{3})?$", search),
            (r"literal", search),
            (r".", full),
            (r"[^a]*", full),
            (r"[^\u0000-\u001f]+", full),
            (r#"["\\/\n\t\u0008\u000c\r]+"#, full),
            (r"[é-ü]+x", full),
            (r"[\u0080-\u07ff][\u0800-\uffff]", full),
            (r"[\ud7ff-\ue000]{2}", full),
            (r"[\u{10000}-\u{10ffff}]|😀|\u{10ffff}", full),
            (r"[\u{ffff}-\u{10001}]", full),
            (r"(a|\u{100}|\u{1000}|\u{10000})*b", full),
        ];
        let other = crate::regex::to_expr(r"[a-f\u00e9\u20ac]{1,3}", full).unwrap();
        for (p, anchoring) in patterns {
            let e = crate::regex::to_expr(p, anchoring).unwrap();
            check_quoted(&e);
            // Complements and intersections, over code points.
            check_quoted(&Expr::complement(e.clone()));
            check_quoted(&Expr::and(vec![e.clone(), Expr::complement(other.clone())]));
            check_quoted(&Expr::and(vec![
                Expr::star(Expr::Class(crate::ir::CharClass::any())),
                e,
                other.clone(),
            ]));
        }
    }

    /// Random expressions over code points where spellings meet (the
    /// classes' edges at escapable ASCII, UTF-8 lengths, the surrogate gap
    /// and the planes), with complements and intersections.
    #[test]
    fn random_patterns_match_the_spelled_construction() {
        use crate::ir::CharClass;
        let edges = [
            0x0, 0x1F, 0x20, 0x22, 0x2F, 0x30, 0x5C, 0x61, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF,
            0xE000, 0xFFFF, 0x10000, 0x10FFFF,
        ];
        let mut rng = crate::util::test_rng::TestRng::new(0x9E37_79B9_7F4A_7C15);
        let mut next = |n: usize| rng.below(n);
        fn build(next: &mut dyn FnMut(usize) -> usize, edges: &[u32], depth: u32) -> Expr {
            let leaf = depth == 0 || next(3) == 0;
            match if leaf { 0 } else { 1 + next(5) } {
                0 => {
                    let (a, b) = (edges[next(edges.len())], edges[next(edges.len())]);
                    Expr::Class(CharClass::from_ranges([(a.min(b), a.max(b))]))
                }
                1 => Expr::seq((0..2).map(|_| build(next, edges, depth - 1)).collect()),
                2 => Expr::alt((0..2).map(|_| build(next, edges, depth - 1)).collect()),
                3 => Expr::repeat(build(next, edges, depth - 1), next(2) as u32, None),
                4 => Expr::complement(build(next, edges, depth - 1)),
                _ => Expr::and((0..2).map(|_| build(next, edges, depth - 1)).collect()),
            }
        }
        for _ in 0..60 {
            check_quoted(&build(&mut next, &edges, 3));
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
        let mut rng = crate::util::test_rng::TestRng::new(0x2545_F491_4F6C_DD1D);
        let mut next = |n: usize| rng.below(n);
        for _ in 0..40 {
            let count = 1 + next(4);
            let values: Vec<String> = (0..count)
                .map(|_| (0..next(4)).map(|_| pool[next(pool.len())]).collect())
                .collect();
            for negated in [false, true] {
                let js = JsonStrings::new(values.clone(), negated);
                let (ours, theirs) = (table(&js, &DfaLimits::default()).unwrap(), general(&js));
                assert!(ours.same_language(&theirs), "{values:?} negated {negated}");
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
        let whole = table(&js, &DfaLimits::default()).unwrap();
        let limits = DfaLimits {
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
        let none = DfaLimits::default();
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
            assert_eq!(t.accepts(text), listed, "{}", String::from_utf8_lossy(text));
            assert_eq!(
                n.accepts(text),
                !listed,
                "{}",
                String::from_utf8_lossy(text)
            );
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
            assert!(!n.accepts(bad), "{}", String::from_utf8_lossy(bad));
            assert!(!t.accepts(bad), "{}", String::from_utf8_lossy(bad));
        }
    }
}
