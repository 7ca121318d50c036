//! A large set of JSON strings as an automaton whose states are numbered,
//! not built ([`StringTrie`]).
//!
//! The DFA that `json_string` builds for a set of strings has several
//! states per node of the values' trie: between characters, after a
//! backslash, after `\u`, after each hex digit and each UTF-8 byte of a
//! character that can come next. 100,000 values that share few prefixes
//! (random names) make a trie of a million nodes and a table of millions
//! of rows, seconds to build and past any state budget. Here only the trie
//! is stored (children sorted by code point, equal subtrees shared) and
//! every byte-level state has a number computed from where it is:
//!
//! - 0 before the opening quote, 1 after the closing one;
//! - `2 + q` between characters at trie node `q`;
//! - past those, a block per node with children: after a backslash, after
//!   `\u`, and per child a fixed set of slots for "partway through a
//!   character whose spelling so far is a prefix of this child's" (after
//!   1-3 UTF-8 bytes, after 1-9 positions of a `\u` spelling: 4 hex digits,
//!   or for a code point past U+FFFF the high surrogate's 4, `\`, `u` and 3
//!   of the low surrogate's). The slot used is that of the first child, in
//!   code point order, whose spelling starts with what was read, so the
//!   same text always reaches the same number.
//!
//! A step searches the node's sorted children; nothing is learned or
//! cached here (the token-set layer caches token sets per state as it does
//! for counted lexemes). The numbering is not minimal (an escape state per
//! node, where a table would merge some), which only costs token-set
//! caching, never a wrong mask.

use super::json_string::{short_escape, CpDfa};
use super::DEAD;
use crate::error::{Error, Result};
use crate::limits::Meter;
use crate::util::byteset::ByteSet;

/// Before the opening quote.
const START: u32 = 0;
/// After the closing quote.
const END: u32 = 1;
/// The first state between characters (trie node 0).
const MAIN0: u32 = 2;
/// Slots per child in a node's block: after 1-3 UTF-8 bytes, after 1-9
/// positions of a `\u` spelling.
const SLOTS: u32 = 12;
/// The first slot of the `\u` spellings.
const HEX_SLOT0: u32 = 3;
/// The block of a node with children starts with these two states.
const ESCAPE: u32 = 0;
const HEX_AT: u32 = 1;
/// In a `\u` spelling, the positions of the `\` and `u` between the two
/// halves of a surrogate pair.
const SEP_BACKSLASH: u8 = 16;
const SEP_U: u8 = 17;

/// Trie nodes from which a set of strings (not negated) is a
/// [`StringTrie`] rather than a table. A table has about six states per
/// node and took 4-5 us per node of random names to build (25.8 ms for
/// 300 names, 0.9 ms as a trie); below this it costs a few milliseconds
/// at most, and its states carry the walk analyses (safe groups, "any
/// string" sharing) that keep the masks of small key sets fast: with
/// every set a trie, `maskbench-dev`'s TBM p99.9 went from 250 to 420 us.
pub const STRING_TRIE_MIN_NODES: usize = 512;

/// The code-point trie of a set of JSON strings, read a byte at a time
/// (see the module doc).
pub struct StringTrie {
    /// Per node, its children: `edges[child_start[q]..child_start[q + 1]]`.
    child_start: Vec<u32>,
    /// (code point, child node), sorted by code point within a node.
    edges: Vec<(u32, u32)>,
    /// Per node: a value ends there.
    is_final: Vec<bool>,
    /// Per node, the first of its block of partial states, counted from
    /// [`Self::partial0`] (`num_nodes + 1` entries).
    block_start: Vec<u32>,
}

/// A state partway through a character.
#[derive(Clone, Copy)]
enum Partial {
    /// After a backslash at node `q`.
    Escape { q: u32 },
    /// After `\u` at node `q`.
    HexAt { q: u32 },
    /// `read` bytes of the UTF-8 of child `e`'s code point (an edge index).
    Utf8 { q: u32, e: u32, read: u32 },
    /// `read` positions of child `e`'s `\u` spelling.
    Hex { q: u32, e: u32, read: u32 },
}

impl StringTrie {
    /// The automaton of the `values` strings whose code-point trie is
    /// `cp` (not negated). An error once `meter`'s deadline passes, or when
    /// it takes more than `max_bytes`.
    pub(super) fn new(
        cp: &CpDfa,
        values: usize,
        max_bytes: usize,
        meter: &mut Meter,
    ) -> Result<Self> {
        let n = cp.children.len();
        let e: usize = cp.children.iter().map(Vec::len).sum();
        let bytes = n * (4 + 4 + 1) + e * 8;
        if bytes > max_bytes {
            return Err(Error::limit(format!(
                "the JSON strings of {values} listed values need a trie of {bytes} bytes, \
                 over {max_bytes}"
            )));
        }
        let mut child_start = Vec::with_capacity(n + 1);
        let mut edges = Vec::with_capacity(e);
        let mut block_start = Vec::with_capacity(n + 1);
        let mut block = 0u64;
        for kids in &cp.children {
            meter.step(kids.len() + 1)?;
            child_start.push(edges.len() as u32);
            block_start.push(block as u32);
            edges.extend_from_slice(kids);
            if !kids.is_empty() {
                block += 2 + SLOTS as u64 * kids.len() as u64;
            }
        }
        child_start.push(edges.len() as u32);
        block_start.push(block as u32);
        if MAIN0 as u64 + n as u64 + block >= u32::MAX as u64 / 4 {
            return Err(Error::limit(format!(
                "the JSON strings of {values} listed values need more than {} automaton states",
                u32::MAX / 4
            )));
        }
        Ok(StringTrie {
            child_start,
            edges,
            is_final: cp.is_final.clone(),
            block_start,
        })
    }

    /// The start state (before the opening quote).
    pub fn start(&self) -> u32 {
        START
    }

    /// Every state number (some unreachable): the lexeme's state count.
    pub fn num_states(&self) -> usize {
        self.partial0() as usize + *self.block_start.last().expect("a node") as usize
    }

    fn num_nodes(&self) -> u32 {
        self.is_final.len() as u32
    }

    fn partial0(&self) -> u32 {
        MAIN0 + self.num_nodes()
    }

    /// Approximate heap bytes.
    pub fn memory(&self) -> usize {
        self.child_start.len() * 4
            + self.edges.len() * 8
            + self.is_final.len()
            + self.block_start.len() * 4
    }

    /// Whether the lexeme can end in `state`: only after the closing quote.
    pub fn is_final(&self, state: u32) -> bool {
        state == END
    }

    fn main(q: u32) -> u32 {
        MAIN0 + q
    }

    fn kids(&self, q: u32) -> std::ops::Range<usize> {
        self.child_start[q as usize] as usize..self.child_start[q as usize + 1] as usize
    }

    /// The first child of `q` with a code point in `lo..hi`, as an edge index.
    fn first_in(&self, q: u32, lo: u32, hi: u32) -> Option<u32> {
        let r = self.kids(q);
        let kids = &self.edges[r.clone()];
        let i = kids.partition_point(|x| x.0 < lo);
        (i < kids.len() && kids[i].0 < hi).then_some((r.start + i) as u32)
    }

    /// The state between characters after child `e`.
    fn after(&self, e: u32) -> u32 {
        Self::main(self.edges[e as usize].1)
    }

    fn partial_id(&self, p: Partial) -> u32 {
        let (q, local) = match p {
            Partial::Escape { q } => (q, ESCAPE),
            Partial::HexAt { q } => (q, HEX_AT),
            Partial::Utf8 { q, e, read } => (q, self.slot(q, e, read - 1)),
            Partial::Hex { q, e, read } => (q, self.slot(q, e, HEX_SLOT0 + read - 1)),
        };
        self.partial0() + self.block_start[q as usize] + local
    }

    fn slot(&self, q: u32, e: u32, slot: u32) -> u32 {
        2 + (e - self.child_start[q as usize]) * SLOTS + slot
    }

    fn partial_of(&self, state: u32) -> Partial {
        let off = state - self.partial0();
        // The node whose block holds `off`: the last with a start at or
        // before it (nodes without children have empty blocks).
        let q = (self.block_start.partition_point(|&b| b <= off) - 1) as u32;
        let local = off - self.block_start[q as usize];
        match local {
            ESCAPE => Partial::Escape { q },
            HEX_AT => Partial::HexAt { q },
            _ => {
                let (k, slot) = ((local - 2) / SLOTS, (local - 2) % SLOTS);
                let e = self.child_start[q as usize] + k;
                if slot < HEX_SLOT0 {
                    Partial::Utf8 {
                        q,
                        e,
                        read: slot + 1,
                    }
                } else {
                    Partial::Hex {
                        q,
                        e,
                        read: slot - HEX_SLOT0 + 1,
                    }
                }
            }
        }
    }

    /// The state after `byte` from `state`, or [`DEAD`].
    pub fn next(&self, state: u32, byte: u8) -> u32 {
        match state {
            START => {
                if byte == b'"' {
                    Self::main(0)
                } else {
                    DEAD
                }
            }
            END => DEAD,
            s if s < self.partial0() => self.next_main(s - MAIN0, byte),
            s => match self.partial_of(s) {
                Partial::Escape { q } => match byte {
                    b'u' => self.partial_id(Partial::HexAt { q }),
                    _ => match short_escape(byte) {
                        Some(c) => self.first_in(q, c, c + 1).map_or(DEAD, |e| self.after(e)),
                        None => DEAD,
                    },
                },
                Partial::HexAt { q } => self.hex_step(q, &[], byte),
                Partial::Hex { q, e, read } => {
                    let (spelling, _) = hex_spelling(self.edges[e as usize].0);
                    self.hex_step(q, &spelling[..read as usize], byte)
                }
                Partial::Utf8 { q, e, read } => {
                    let mut buf = [0u8; 4];
                    let c = char::from_u32(self.edges[e as usize].0).expect("a code point");
                    let enc = c.encode_utf8(&mut buf).as_bytes();
                    self.utf8_step(q, &enc[..read as usize], enc.len(), byte)
                }
            },
        }
    }

    fn next_main(&self, q: u32, byte: u8) -> u32 {
        match byte {
            b'"' => {
                if self.is_final[q as usize] {
                    END
                } else {
                    DEAD
                }
            }
            b'\\' => {
                if self.kids(q).is_empty() {
                    DEAD
                } else {
                    self.partial_id(Partial::Escape { q })
                }
            }
            0x20..=0x7F => {
                let c = byte as u32;
                self.first_in(q, c, c + 1).map_or(DEAD, |e| self.after(e))
            }
            0xC2..=0xF4 => {
                let len = if byte < 0xE0 {
                    2
                } else if byte < 0xF0 {
                    3
                } else {
                    4
                };
                self.utf8_step(q, &[], len, byte)
            }
            _ => DEAD,
        }
    }

    /// From node `q` with the UTF-8 bytes `read` of a `len`-byte
    /// character so far, `byte`.
    fn utf8_step(&self, q: u32, read: &[u8], len: usize, byte: u8) -> u32 {
        if !read.is_empty() && !(0x80..=0xBF).contains(&byte) {
            return DEAD;
        }
        let mut lo = [0x80u8; 4];
        let mut hi = [0xBFu8; 4];
        lo[..read.len()].copy_from_slice(read);
        hi[..read.len()].copy_from_slice(read);
        lo[read.len()] = byte;
        hi[read.len()] = byte;
        // The code points of `len` bytes these bytes start (an overlong
        // prefix decodes below the smallest of them).
        let smallest = [0, 0, 0x80, 0x800, 0x10000][len];
        let (a, b) = (decode(&lo[..len]).max(smallest), decode(&hi[..len]) + 1);
        let Some(e) = self.first_in(q, a, b) else {
            return DEAD;
        };
        // Only a child whose own encoding starts with these bytes.
        let mut buf = [0u8; 4];
        let c = char::from_u32(self.edges[e as usize].0).expect("a code point");
        let enc = c.encode_utf8(&mut buf).as_bytes();
        let read_now = read.len() + 1;
        if enc.len() != len || enc[..read_now] != lo[..read_now] {
            return DEAD;
        }
        if read_now == len {
            self.after(e)
        } else {
            self.partial_id(Partial::Utf8 {
                q,
                e,
                read: read_now as u32,
            })
        }
    }

    /// From node `q` with `read` positions of a `\u` spelling so far,
    /// `byte`.
    fn hex_step(&self, q: u32, read: &[u8], byte: u8) -> u32 {
        let position = match (read.len(), byte) {
            (4, b'\\') => SEP_BACKSLASH,
            (5, b'u') => SEP_U,
            (4 | 5, _) => return DEAD,
            (_, b) => match (b as char).to_digit(16) {
                Some(d) => d as u8,
                None => return DEAD,
            },
        };
        let mut spelled = [0u8; 10];
        spelled[..read.len()].copy_from_slice(read);
        spelled[read.len()] = position;
        let spelled = &spelled[..read.len() + 1];
        match self.first_hex_match(q, spelled) {
            Some((e, true)) => self.after(e),
            Some((e, false)) => self.partial_id(Partial::Hex {
                q,
                e,
                read: spelled.len() as u32,
            }),
            None => DEAD,
        }
    }

    /// The first child of `q` whose `\u` spelling starts with `spelled`,
    /// and whether that is its whole spelling.
    fn first_hex_match(&self, q: u32, spelled: &[u8]) -> Option<(u32, bool)> {
        let n = spelled.len();
        if n <= 4 {
            // A code point below U+10000 (never a surrogate).
            let (a, b) = digit_range(spelled, 4);
            if let Some(e) = self.first_in(q, a, b) {
                return Some((e, n == 4));
            }
        }
        // A surrogate pair: high half, `\`, `u`, low half.
        let (h0, h1) = digit_range(&spelled[..n.min(4)], 4);
        let (h0, h1) = (h0.max(0xD800), h1.min(0xDC00));
        if h0 >= h1 {
            return None;
        }
        let plane = |h: u32| 0x10000 + ((h - 0xD800) << 10);
        let (a, b) = if n <= 6 {
            (plane(h0), plane(h1))
        } else {
            let (l0, l1) = digit_range(&spelled[6..], 4);
            let (l0, l1) = (l0.max(0xDC00), l1.min(0xE000));
            if l0 >= l1 {
                return None;
            }
            (plane(h0) + l0 - 0xDC00, plane(h0) + l1 - 0xDC00)
        };
        self.first_in(q, a, b).map(|e| (e, n == 10))
    }

    /// The bytes with a transition out of `state`.
    pub fn first_bytes(&self, state: u32) -> ByteSet {
        let mut set = ByteSet::EMPTY;
        if state >= MAIN0 && state < self.partial0() {
            let q = state - MAIN0;
            if self.is_final[q as usize] {
                set.insert(b'"');
            }
            if !self.kids(q).is_empty() {
                set.insert(b'\\');
            }
            // One child per first byte: past it, a search skips the code
            // points that share its first byte (a node can have a child
            // per code point of Unicode).
            let kids = &self.edges[self.kids(q)];
            let mut i = 0;
            while i < kids.len() {
                let c = kids[i].0;
                let (first, past) = first_byte_span(c);
                let raw = c >= 0x80 || ((0x20..0x80).contains(&c) && c != 0x22 && c != 0x5C);
                if raw {
                    set.insert(first);
                }
                i += kids[i..].partition_point(|x| x.0 < past);
            }
            return set;
        }
        let candidates: &[u8] = match state {
            START => b"\"",
            END => b"",
            _ => match self.partial_of(state) {
                Partial::Escape { .. } => b"\"\\/bfnrtu",
                Partial::HexAt { .. } | Partial::Hex { .. } => b"0123456789abcdefABCDEF\\u",
                Partial::Utf8 { .. } => &CONTINUATION_BYTES,
            },
        };
        for &b in candidates {
            if self.next(state, b) != DEAD {
                set.insert(b);
            }
        }
        set
    }
}

/// The first byte of code point `c`'s UTF-8, and the first code point
/// past those that start with it.
fn first_byte_span(c: u32) -> (u8, u32) {
    let shift = match c {
        0..=0x7F => return (c as u8, c + 1),
        0x80..=0x7FF => 6,
        0x800..=0xFFFF => 12,
        _ => 18,
    };
    let lead: u32 = match shift {
        6 => 0xC0,
        12 => 0xE0,
        _ => 0xF0,
    };
    ((lead | (c >> shift)) as u8, ((c >> shift) + 1) << shift)
}

/// Every UTF-8 continuation byte.
const CONTINUATION_BYTES: [u8; 64] = {
    let mut out = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        out[i] = 0x80 + i as u8;
        i += 1;
    }
    out
};

/// The values of `width` hex digits that start with `digits`: `lo..hi`.
fn digit_range(digits: &[u8], width: usize) -> (u32, u32) {
    let v = digits.iter().fold(0u32, |v, &d| v * 16 + d as u32);
    let shift = 4 * (width - digits.len()) as u32;
    (v << shift, (v + 1) << shift)
}

/// The code point of a UTF-8 sequence (not checked).
fn decode(bytes: &[u8]) -> u32 {
    let lead_bits = match bytes.len() {
        1 => 0x7F,
        2 => 0x1F,
        3 => 0x0F,
        _ => 0x07,
    };
    bytes[1..]
        .iter()
        .fold((bytes[0] & lead_bits) as u32, |v, &b| {
            (v << 6) | (b & 0x3F) as u32
        })
}

/// The `\u` spelling of code point `c` after the `\u`: 4 hex digit values,
/// or for a code point past U+FFFF the high surrogate's 4, the separator
/// positions and the low surrogate's 4; and its length.
fn hex_spelling(c: u32) -> ([u8; 10], usize) {
    let mut out = [0u8; 10];
    let digits = |v: u32, out: &mut [u8]| {
        for (i, d) in out.iter_mut().enumerate().take(4) {
            *d = ((v >> (12 - 4 * i)) & 0xF) as u8;
        }
    };
    if c < 0x10000 {
        digits(c, &mut out[..4]);
        (out, 4)
    } else {
        let v = c - 0x10000;
        digits(0xD800 + (v >> 10), &mut out[..4]);
        out[4] = SEP_BACKSLASH;
        out[5] = SEP_U;
        digits(0xDC00 + (v & 0x3FF), &mut out[6..]);
        (out, 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::lexeme::json_string;
    use crate::compile::lexeme::{Computed, DfaLimits, Table};
    use crate::ir::JsonStrings;
    use crate::limits::Deadline;

    fn trie_of(values: &[String], max_bytes: usize) -> Result<StringTrie> {
        let js = JsonStrings::new(values.iter().cloned(), false);
        let mut meter = Deadline::none().meter();
        let cp = CpDfa::new(&js, &mut meter).unwrap();
        StringTrie::new(&cp, values.len(), max_bytes, &mut meter)
    }

    /// `None` once the text can no longer be a value's spelling, else
    /// whether it is one.
    fn run_trie(t: &StringTrie, s: &[u8]) -> Option<bool> {
        let mut q = t.start();
        for &b in s {
            let fb = t.first_bytes(q);
            for x in 0..=255u8 {
                assert_eq!(
                    fb.contains(x),
                    t.next(q, x) != DEAD,
                    "first bytes and next disagree on {x:#x}"
                );
            }
            q = t.next(q, b);
            if q == DEAD {
                return None;
            }
        }
        Some(t.is_final(q))
    }

    fn run_table(t: &Table, s: &[u8]) -> Option<bool> {
        let mut q = 0u32;
        for &b in s {
            q = t.next(q, b);
            if q == DEAD {
                return None;
            }
        }
        Some(t.is_final[q as usize])
    }

    /// Every spelling worth telling apart of one character.
    fn spellings(c: char) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4];
        out.push(c.encode_utf8(&mut buf).as_bytes().to_vec());
        let mut units = [0u16; 2];
        let hex: Vec<u8> = c
            .encode_utf16(&mut units)
            .iter()
            .flat_map(|u| format!("\\u{u:04x}").into_bytes())
            .collect();
        out.push(hex.clone());
        out.push(
            hex.to_ascii_uppercase()
                .iter()
                .map(|&b| if b == b'U' { b'u' } else { b })
                .collect(),
        );
        if let Some((e, _)) = [
            (b'n', '\n'),
            (b't', '\t'),
            (b'"', '"'),
            (b'\\', '\\'),
            (b'/', '/'),
        ]
        .iter()
        .find(|x| x.1 == c)
        {
            out.push(vec![b'\\', *e]);
        }
        out
    }

    /// The same language as the table `json_string` builds: every
    /// spelling of listed values and their prefixes, and byte strings
    /// mutated from them.
    #[test]
    fn random_sets_match_the_table() {
        let pool: Vec<char> = [
            'a',
            'b',
            'z',
            '0',
            '"',
            '\\',
            '/',
            '\n',
            '\u{1}',
            '\u{7F}',
            '\u{80}',
            'é',
            '\u{7FF}',
            '\u{800}',
            '\u{D7FF}',
            '\u{D000}',
            '\u{E000}',
            '\u{FFFF}',
            '\u{10000}',
            '😀',
            '\u{10FFFF}',
        ]
        .to_vec();
        let mut rng = crate::util::test_rng::TestRng::new(0x9E37_79B9_7F4A_7C15);
        let mut next = |n: usize| rng.below(n);
        for _ in 0..60 {
            let count = 1 + next(6);
            let values: Vec<String> = (0..count)
                .map(|_| (0..next(4)).map(|_| pool[next(pool.len())]).collect())
                .collect();
            let js = JsonStrings::new(values.clone(), false);
            let table = json_string::table(&js, &DfaLimits::default()).unwrap();
            let trie = trie_of(&values, usize::MAX).unwrap();
            let mut texts: Vec<Vec<u8>> = Vec::new();
            for v in &values {
                // A random spelling of each character.
                let mut text = vec![b'"'];
                for c in v.chars() {
                    let s = spellings(c);
                    text.extend_from_slice(&s[next(s.len())]);
                }
                text.push(b'"');
                for cut in 0..=text.len() {
                    texts.push(text[..cut].to_vec());
                }
                for _ in 0..8 {
                    let mut t = text.clone();
                    let i = next(t.len());
                    t[i] = b"\"\\u0dD8cCeE9az\x80\xBF\xC3\xED\xF0\xF4"[next(20)];
                    texts.push(t);
                }
            }
            for t in &texts {
                assert_eq!(
                    run_trie(&trie, t),
                    run_table(&table, t),
                    "{values:?}: {}",
                    String::from_utf8_lossy(t)
                );
            }
        }
    }

    /// Only large sets that are not negated become tries; a trie past
    /// the byte budget is refused, naming it.
    #[test]
    fn large_sets_only() {
        use crate::compile::lexeme::{build_lexeme, Uncached};
        let lexeme = |values: &[String], negated: bool, max_bytes: usize| {
            let e = crate::ir::Expr::json_strings(values.iter().cloned(), negated);
            let limits = DfaLimits {
                max_bytes,
                ..DfaLimits::default()
            };
            build_lexeme(&e, &limits, &Uncached).map(|d| d.unwrap())
        };
        let few = ["a".to_string(), "b".to_string()];
        assert!(lexeme(&few, false, usize::MAX).unwrap().computed.is_none());
        let many: Vec<String> = (0..20_000u64)
            .map(|i| format!("{:08x}", i * 2_654_435_761 % 0xFFFF_FFFF))
            .collect();
        let d = lexeme(&many, false, usize::MAX).unwrap();
        assert!(matches!(d.computed.as_deref(), Some(Computed::Strings(_))));
        let mut q = d.start;
        for &b in format!("\"{}\"", many[777]).as_bytes() {
            q = d.next(q, b);
        }
        assert!(q != DEAD && d.is_final_state(q));
        let err = trie_of(&many, 1 << 16).err().unwrap();
        assert!(err.message().contains("trie"), "{}", err.message());
        assert!(lexeme(&many, true, usize::MAX).unwrap().computed.is_none());
    }
}
