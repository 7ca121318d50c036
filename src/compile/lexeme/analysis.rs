//! What a lexeme's states share, computed from the automaton alone: byte
//! classes by trie group ([`ClassBytes`]), the trie subtrees a state reads
//! whole ([`SafeGroups`]), and pairs of equivalent states of two DFAs
//! ([`Pairing`], [`ContentStates`]). The token-set layer keeps the results.

use super::{LexemeDfa, DEAD};
use crate::compile::adjacency::Adjacency;
use crate::error::Result;
use crate::limits::Meter;
use crate::util::byteset::ByteSet;
use crate::util::hash::FastMap;
use crate::vocab::TokenTrie;

/// "Any string"'s states between the quotes, as [`StringCounts`] counts
/// characters with them: `content[0]` is the state after the opening
/// quote (at a character boundary), the others are within a character;
/// `index` maps every such state to its place (states equivalent to the
/// first, the DFA need not be minimal, to 0), other states to `u32::MAX`.
pub(crate) struct ContentStates {
    pub(crate) content: Vec<u32>,
    pub(crate) index: Vec<u32>,
}

impl ContentStates {
    pub(crate) fn new(any: &LexemeDfa, body: u32) -> ContentStates {
        let k = any.num_classes;
        let mut pairing = Pairing::new(any, any);
        let mut content = vec![body];
        let mut index: FastMap<u32, u32> = FastMap::default();
        index.insert(body, 0);
        let mut i = 0;
        while i < content.len() {
            let s = content[i] as usize;
            for &t in &any.trans[s * k..(s + 1) * k] {
                if t != DEAD && !any.is_final[t as usize] && !index.contains_key(&t) {
                    if pairing.same(any, t, any, body, usize::MAX) == Some(true) {
                        index.insert(t, 0);
                    } else {
                        index.insert(t, content.len() as u32);
                        content.push(t);
                    }
                }
            }
            i += 1;
        }
        let mut dense = vec![u32::MAX; any.num_states()];
        for (s, i) in index {
            dense[s as usize] = i;
        }
        ContentStates {
            content,
            index: dense,
        }
    }
}

/// Most transitions (pairs of states visited times the bytes tried from
/// each) [`LexemeDfa::state_like`] follows: a count of pairs alone let
/// DFAs with many byte classes search for 3 ms.
pub(crate) const STATE_LIKE_MAX_WORK: usize = 200_000;

/// A byte for each pair of classes that two DFAs give bytes (what a walk
/// of their states in pairs must try).
pub(crate) fn class_pair_reps(a: &LexemeDfa, b: &LexemeDfa) -> Vec<u8> {
    let mut reps = Vec::new();
    let mut seen = vec![false; a.num_classes * b.num_classes];
    for byte in 0..=255u8 {
        let k =
            a.classes[byte as usize] as usize * b.num_classes + b.classes[byte as usize] as usize;
        if !seen[k] {
            seen[k] = true;
            reps.push(byte);
        }
    }
    reps
}

/// What a walk of pairs of states does with one byte of a pair (see
/// [`Pairing::walk`]).
enum Pair {
    /// The two states differ: the walk's answer is no.
    Differ,
    /// Nothing to ask past this byte.
    Skip,
    /// The pair of states the byte leads to, to walk from.
    Follow(u32, u32),
}

/// A walk of the pairs of states of two DFAs that the same strings reach
/// (see [`LexemeDfa::state_like`]), with its buffers.
pub(crate) struct Pairing {
    /// A byte for each pair of classes the two DFAs give bytes.
    pub(crate) reps: Vec<u8>,
    /// Pairs of states reached together.
    seen: PairsSeen,
    pub(crate) stack: Vec<(u32, u32)>,
    /// Transitions followed by the last walk.
    pub(crate) steps: usize,
}

/// The pairs of states a [`Pairing`] walk reached: a bit per pair where
/// the two tables are small enough (a hash set took most of the walks of
/// the few dozen lexemes a mask may meet for the first time), else a
/// hash set.
struct PairsSeen {
    /// States of the second DFA (pair `(s, t)` is bit `s * width + t`).
    width: usize,
    /// Empty past [`PAIR_BITS_MAX`].
    bits: Vec<u64>,
    /// Bits set since the last clearing, cleared one by one (a walk
    /// reaches few of the pairs).
    set_bits: Vec<usize>,
    set: crate::util::hash::FastSet<(u32, u32)>,
}

/// Most pairs a [`PairsSeen`] keeps as bits (128 KiB, zeroed for each
/// pairing: a mask may pair a few dozen lexemes).
const PAIR_BITS_MAX: usize = 1 << 20;

impl PairsSeen {
    fn new(a: usize, b: usize) -> PairsSeen {
        let pairs = a.saturating_mul(b);
        PairsSeen {
            width: b,
            bits: if pairs <= PAIR_BITS_MAX {
                vec![0; pairs.div_ceil(64)]
            } else {
                Vec::new()
            },
            set_bits: Vec::new(),
            set: Default::default(),
        }
    }

    fn clear(&mut self) {
        for &i in &self.set_bits {
            self.bits[i / 64] = 0;
        }
        self.set_bits.clear();
        self.set.clear();
    }

    /// The pairs reached.
    fn pairs(&self) -> Vec<(u32, u32)> {
        if self.bits.is_empty() {
            return self.set.iter().copied().collect();
        }
        let pair = |i: usize| ((i / self.width) as u32, (i % self.width) as u32);
        self.set_bits.iter().map(|&i| pair(i)).collect()
    }

    /// Whether `(s, t)` was not reached yet; marks it reached.
    #[inline]
    fn insert(&mut self, (s, t): (u32, u32)) -> bool {
        if self.bits.is_empty() {
            return self.set.insert((s, t));
        }
        let i = s as usize * self.width + t as usize;
        let (word, bit) = (&mut self.bits[i / 64], 1u64 << (i % 64));
        if *word & bit != 0 {
            return false;
        }
        *word |= bit;
        self.set_bits.push(i);
        true
    }
}

impl Pairing {
    /// The pairs of states the last walk reached.
    pub(crate) fn reached(&self) -> Vec<(u32, u32)> {
        self.seen.pairs()
    }

    pub(crate) fn new(a: &LexemeDfa, b: &LexemeDfa) -> Pairing {
        Pairing {
            reps: class_pair_reps(a, b),
            seen: PairsSeen::new(a.num_lexeme_states(), b.num_lexeme_states()),
            stack: Vec::new(),
            steps: 0,
        }
    }

    /// Whether `s` of `a` and `t` of `b` accept the same strings: every
    /// pair of states that one string leads them to agrees on ending and
    /// on which bytes can follow. `None` past `budget` transitions.
    pub(crate) fn same(
        &mut self,
        a: &LexemeDfa,
        s: u32,
        b: &LexemeDfa,
        t: u32,
        budget: usize,
    ) -> Option<bool> {
        self.walk((s, t), budget, |s, t, byte| {
            if a.is_final[s as usize] != b.is_final[t as usize] {
                return Pair::Differ;
            }
            match (a.next(s, byte), b.next(t, byte)) {
                (DEAD, DEAD) => Pair::Skip,
                (s2, t2) if s2 == DEAD || t2 == DEAD => Pair::Differ,
                (s2, t2) => Pair::Follow(s2, t2),
            }
        })
    }

    /// Whether state `t` of `b` reads every string that state `s` of `a`
    /// reads without ending (a string is read while the state it leads to
    /// is not [`DEAD`]; it ends `a` where it leads `a` to a final state,
    /// past which nothing is asked): every pair of states such a string
    /// leads them to has `b` alive where `a` is. `None` past `budget`
    /// transitions.
    pub(crate) fn reads_unended_within(
        &mut self,
        a: &LexemeDfa,
        s: u32,
        b: &LexemeDfa,
        t: u32,
        budget: usize,
    ) -> Option<bool> {
        self.walk((s, t), budget, |s, t, byte| {
            let s2 = a.next(s, byte);
            if s2 == DEAD || a.is_final[s2 as usize] {
                return Pair::Skip;
            }
            match b.next(t, byte) {
                DEAD => Pair::Differ,
                t2 => Pair::Follow(s2, t2),
            }
        })
    }

    /// Walks the pairs of states reached from `start`, trying each pair's
    /// bytes (one per pair of classes) with `step`: `Some(false)` as soon
    /// as a step says the two differ, `Some(true)` when none does, `None`
    /// past `budget` transitions.
    fn walk(
        &mut self,
        start: (u32, u32),
        budget: usize,
        step: impl Fn(u32, u32, u8) -> Pair,
    ) -> Option<bool> {
        self.seen.clear();
        self.stack.clear();
        self.steps = 0;
        self.seen.insert(start);
        self.stack.push(start);
        while let Some((s, t)) = self.stack.pop() {
            self.steps += self.reps.len();
            if self.steps > budget {
                return None;
            }
            for &byte in &self.reps {
                match step(s, t, byte) {
                    Pair::Differ => return Some(false),
                    Pair::Skip => {}
                    Pair::Follow(s2, t2) => {
                        if self.seen.insert((s2, t2)) {
                            self.stack.push((s2, t2));
                        }
                    }
                }
            }
        }
        Some(true)
    }
}

/// Per state of `a`'s table, the state of `b`'s table that accepts the
/// same strings, when the two tables accept the same language from their
/// start states (a walk of the pairs of states that the same strings
/// reach, on the tables alone: a computed lexeme's states beside its
/// table, such as a count, are not read); [`DEAD`] for states no string
/// reaches. `None` when the languages differ. Each state of `a` is
/// visited once.
pub(crate) fn table_equivalents(a: &LexemeDfa, b: &LexemeDfa) -> Option<Vec<u32>> {
    let reps = class_pair_reps(a, b);
    let mut like = vec![DEAD; a.is_final.len()];
    let mut stack = vec![(a.start, b.start)];
    if a.start == DEAD || b.start == DEAD {
        return (a.start == b.start).then_some(like);
    }
    like[a.start as usize] = b.start;
    while let Some((s, t)) = stack.pop() {
        if a.is_final[s as usize] != b.is_final[t as usize] {
            return None;
        }
        for &byte in &reps {
            let (s2, t2) = (a.table_next(s, byte), b.table_next(t, byte));
            if (s2 == DEAD) != (t2 == DEAD) {
                return None;
            }
            if s2 == DEAD {
                continue;
            }
            match like[s2 as usize] {
                DEAD => {
                    like[s2 as usize] = t2;
                    stack.push((s2, t2));
                }
                // Reached with another state of `b`: equivalent to it only
                // if `b` has two equivalent states, which a minimal `b`
                // (the tables compared here are) does not.
                seen if seen != t2 => return None,
                _ => {}
            }
        }
    }
    Some(like)
}

/// Per state of a lexeme, the state of another that reads the same
/// strings, closing quotes aside (see [`readable_equivalents`]).
pub(crate) struct ReadableLike {
    /// Per state: the other lexeme's state.
    pub(crate) like: Vec<u32>,
    /// Per state: the other lexeme takes a closing quote here and this
    /// one refuses it.
    pub(crate) quote_refused: Vec<bool>,
}

/// Per state of `a`'s table, the state of `b`'s table that reads the same
/// strings (leads them to a state other than [`DEAD`]), when from their
/// start states the two read the same strings but for closing quotes
/// that `a` refuses: a `"` that leads `b` to a final state reading
/// nothing more. A key that is none of the listed names reads what "any
/// string" reads, and refuses the quote right after a listed name. What
/// a state reads is all a trie walk's safe groups depend on (see
/// [`SafeGroups`]), so such a lexeme takes "any string"'s. Finality is
/// not compared. `None` when they read differently, for a computed
/// lexeme, when `b` reads some other byte as it reads `"`, or when a
/// class of `a` holds bytes of two classes of `b` (a key's classes each
/// lie within one of "any string"'s); an error once `meter`'s deadline
/// passes. Each state of `a` is visited once, class by class.
pub(crate) fn readable_equivalents(
    a: &LexemeDfa,
    b: &LexemeDfa,
    meter: &mut Meter,
) -> Result<Option<ReadableLike>> {
    if a.computed.is_some() || b.computed.is_some() || a.start == DEAD || b.start == DEAD {
        return Ok(None);
    }
    // Per class of `a`, the class of `b` of its bytes.
    let mut b_class = vec![u8::MAX; a.num_classes];
    for byte in 0..=255usize {
        let (ca, cb) = (a.classes[byte] as usize, b.classes[byte]);
        if b_class[ca] == u8::MAX {
            b_class[ca] = cb;
        } else if b_class[ca] != cb {
            return Ok(None);
        }
    }
    let quote = a.classes[b'"' as usize] as usize;
    if b.classes.iter().filter(|&&c| c == b_class[quote]).count() != 1 {
        return Ok(None);
    }
    let (ka, kb) = (a.num_classes, b.num_classes);
    let n = a.is_final.len();
    let mut like = vec![DEAD; n];
    let mut quote_refused = vec![false; n];
    let mut stack = vec![(a.start, b.start)];
    like[a.start as usize] = b.start;
    while let Some((s, t)) = stack.pop() {
        meter.step(ka)?;
        let row_b = &b.trans[t as usize * kb..(t as usize + 1) * kb];
        let row_a = &a.trans[s as usize * ka..(s as usize + 1) * ka];
        // Most classes lead to a state the class before led to.
        let mut last = (DEAD, DEAD);
        for (c, (&s2, &cb)) in row_a.iter().zip(&b_class).enumerate() {
            let t2 = row_b[cb as usize];
            if (s2, t2) == last {
                continue;
            }
            if s2 == DEAD {
                if t2 == DEAD {
                    continue;
                }
                let ends = b.is_final[t2 as usize] && b.first_bytes[t2 as usize].is_empty();
                if c != quote || !ends {
                    return Ok(None);
                }
                quote_refused[s as usize] = true;
                continue;
            }
            if t2 == DEAD {
                return Ok(None);
            }
            last = (s2, t2);
            match like[s2 as usize] {
                DEAD => {
                    like[s2 as usize] = t2;
                    stack.push((s2, t2));
                }
                // Reached with two states of `b`: `a`'s state would read
                // what both read, which they need not.
                seen if seen != t2 => return Ok(None),
                _ => {}
            }
        }
    }
    if like.contains(&DEAD) {
        // A state no string reaches (not in a trimmed table).
        return Ok(None);
    }
    Ok(Some(ReadableLike {
        like,
        quote_refused,
    }))
}

/// A DFA's byte classes seen from the trie's byte and character groups.
pub(crate) struct ClassBytes {
    /// Per class: its bytes.
    pub(crate) bytes: Vec<ByteSet>,
    /// Per class: the byte groups of its bytes.
    pub(crate) class_groups: Vec<u64>,
    /// The groups some byte is in.
    pub(crate) all_groups: u64,
    pub(crate) num_classes: usize,
    /// Per entry of [`MULTI_BYTE`]: the distinct classes of its lead bytes
    /// and of its second bytes.
    pub(crate) multi_byte_classes: Vec<(Vec<u8>, Vec<u8>)>,
    /// The distinct classes of the continuation bytes `80..=bf`.
    pub(crate) continuation_classes: Vec<u8>,
}

/// Valid multi-byte UTF-8 characters by their lead bytes: (character
/// group, first lead, last lead, range of the byte after the lead, number
/// of `80..=bf` bytes after that).
const MULTI_BYTE: [(u32, u8, u8, u8, u8, u8); 8] = {
    use crate::vocab::trie::{CHAR_2, CHAR_3, CHAR_4};
    [
        (CHAR_2, 0xc2, 0xdf, 0x80, 0xbf, 0),
        (CHAR_3, 0xe0, 0xe0, 0xa0, 0xbf, 1),
        (CHAR_3, 0xe1, 0xec, 0x80, 0xbf, 1),
        (CHAR_3, 0xed, 0xed, 0x80, 0x9f, 1),
        (CHAR_3, 0xee, 0xef, 0x80, 0xbf, 1),
        (CHAR_4, 0xf0, 0xf0, 0x90, 0xbf, 2),
        (CHAR_4, 0xf1, 0xf3, 0x80, 0xbf, 2),
        (CHAR_4, 0xf4, 0xf4, 0x80, 0x8f, 2),
    ]
};

impl ClassBytes {
    pub(crate) fn new(classes: &[u8; 256], num_classes: usize) -> ClassBytes {
        use crate::vocab::trie::byte_group;
        let mut bytes = vec![ByteSet::EMPTY; num_classes];
        let mut class_groups = vec![0u64; num_classes];
        for b in 0..=255u8 {
            let c = classes[b as usize];
            bytes[c as usize].insert(b);
            class_groups[c as usize] |= 1 << byte_group(b);
        }
        let all_groups = class_groups.iter().fold(0, |a, &g| a | g);
        let distinct = |lo: u8, hi: u8| {
            let mut v: Vec<u8> = (lo..=hi).map(|b| classes[b as usize]).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        ClassBytes {
            bytes,
            class_groups,
            all_groups,
            num_classes,
            multi_byte_classes: MULTI_BYTE
                .iter()
                .map(|&(_, lead_lo, lead_hi, lo, hi, _)| {
                    (distinct(lead_lo, lead_hi), distinct(lo, hi))
                })
                .collect(),
            continuation_classes: distinct(0x80, 0xbf),
        }
    }

    /// State `s`'s steps by trie byte group (see `TokenTrie::groups_below`)
    /// or, with `by_char`, by character group (see
    /// `TokenTrie::char_groups_below`: ASCII groups are the byte groups;
    /// the groups of valid multi-byte characters are followed through
    /// their continuation bytes). Appends to `to` the distinct states that
    /// the groups all of whose bytes (characters) are readable lead to,
    /// each with those groups, and returns the readable groups.
    /// `scratch` holds buffers and the characters' part of the rows seen
    /// so far (kept between calls: this runs for every state).
    fn group_steps(
        &self,
        s: u32,
        trans: &[u32],
        by_char: bool,
        to: &mut Vec<(u32, u64)>,
        scratch: &mut CharScratch,
    ) -> u64 {
        use crate::vocab::trie::byte_group;
        let k = self.num_classes;
        let from = to.len();
        let add = |to: &mut Vec<(u32, u64)>, t: u32, g: u64| match to[from..]
            .iter_mut()
            .find(|x| x.0 == t)
        {
            Some(x) => x.1 |= g,
            None => to.push((t, g)),
        };
        let row = &trans[s as usize * k..(s as usize + 1) * k];
        // A group is readable when none of its bytes' classes is dead
        // (without a branch per class: most states of a large automaton
        // read few classes).
        let dead_groups = row
            .iter()
            .zip(&self.class_groups)
            .fold(0u64, |acc, (&t, &g)| {
                acc | (g & 0u64.wrapping_sub((t == DEAD) as u64))
            });
        let mut live = self.all_groups & !dead_groups;
        if by_char {
            // Non-ASCII bytes are read by characters below.
            let non_ascii = byte_group(0x80)..=byte_group(0xff);
            live &= !non_ascii.fold(0u64, |m, g| m | 1 << g);
        }
        if live != 0 {
            for (&t, &g) in row.iter().zip(&self.class_groups) {
                let g = g & live;
                if g != 0 {
                    add(to, t, g);
                }
            }
        }
        if !by_char {
            return live;
        }
        // The characters' part depends only on where the lead bytes go,
        // and most states of an automaton over text send them to the same
        // few states ("any other character"): computed once per such row.
        let CharScratch {
            frontier,
            next,
            key,
            known,
        } = scratch;
        key.clear();
        for (leads, _) in &self.multi_byte_classes {
            key.extend(leads.iter().map(|&c| row[c as usize]));
        }
        if let Some((chars_live, chars_to)) = known.get(key.as_slice()) {
            for &(t, g) in chars_to {
                add(to, t, g);
            }
            return live | chars_live;
        }
        let (chars_live, chars_to) = self.char_steps(row, trans, frontier, next);
        for &(t, g) in &chars_to {
            add(to, t, g);
        }
        known.insert(key.clone(), (chars_live, chars_to));
        live | chars_live
    }

    /// The character groups (see [`Self::group_steps`]) readable from a
    /// state whose row is `row`, and the states their characters lead
    /// to, each with those groups; `frontier` and `next` are buffers.
    fn char_steps(
        &self,
        row: &[u32],
        trans: &[u32],
        frontier: &mut Vec<u32>,
        next: &mut Vec<u32>,
    ) -> CharSteps {
        let k = self.num_classes;
        let mut to: Vec<(u32, u64)> = Vec::new();
        let (mut live, mut dead) = (0u64, 0u64);
        for (&(g, .., more), (leads, seconds)) in MULTI_BYTE.iter().zip(&self.multi_byte_classes) {
            let bit = 1u64 << g;
            if dead & bit != 0 {
                continue;
            }
            frontier.clear();
            frontier.extend(leads.iter().map(|&c| row[c as usize]));
            let steps = std::iter::once(seconds).chain(std::iter::repeat_n(
                &self.continuation_classes,
                more as usize,
            ));
            for classes in steps {
                if frontier.contains(&DEAD) {
                    break;
                }
                next.clear();
                for &q in frontier.iter() {
                    for &c in classes {
                        let t = trans[q as usize * k + c as usize];
                        if !next.contains(&t) {
                            next.push(t);
                        }
                    }
                }
                std::mem::swap(frontier, next);
            }
            if frontier.contains(&DEAD) {
                dead |= bit;
            } else {
                live |= bit;
                for &t in frontier.iter() {
                    match to.iter_mut().find(|x| x.0 == t) {
                        Some(x) => x.1 |= bit,
                        None => to.push((t, bit)),
                    }
                }
            }
        }
        // A group some of whose characters are unreadable is not readable,
        // even where other lead bytes of it were.
        live &= !dead;
        to.retain_mut(|x| {
            x.1 &= !dead;
            x.1 != 0
        });
        (live, to)
    }
}

/// Buffers of [`ClassBytes::group_steps`], kept between its calls (it
/// runs for every state).
#[derive(Default)]
struct CharScratch {
    /// The sets of states followed through a character's bytes.
    frontier: Vec<u32>,
    next: Vec<u32>,
    /// Where a row's lead bytes go, class by class.
    key: Vec<u32>,
    /// The characters' part of the rows computed so far, by `key`.
    known: FastMap<Vec<u32>, CharSteps>,
}

/// The characters' part of a row: the readable character groups, and the
/// states they lead to, each with its groups.
type CharSteps = (u64, Vec<(u32, u64)>);

/// Per state, where its readable groups lead (see
/// [`ClassBytes::group_steps`]): `to[start[s]..start[s + 1]]`.
struct GroupSteps {
    live: Vec<u64>,
    start: Vec<u32>,
    to: Vec<(u32, u64)>,
}

impl GroupSteps {
    fn new(dfa: &LexemeDfa, by_char: bool, meter: &mut Meter) -> Result<GroupSteps> {
        let n = dfa.num_states();
        let by_class = ClassBytes::new(&dfa.classes, dfa.num_classes);
        let mut live = Vec::with_capacity(n);
        let mut start = Vec::with_capacity(n + 1);
        let mut to = Vec::new();
        let mut scratch = CharScratch::default();
        for s in 0..n {
            meter.step(4 * dfa.num_classes)?;
            start.push(to.len() as u32);
            live.push(by_class.group_steps(s as u32, &dfa.trans, by_char, &mut to, &mut scratch));
            // Most groups first: they are the ones worth keeping (see
            // `SafeGroups::solve`).
            to[start[s] as usize..].sort_by_key(|&(t, g)| (std::cmp::Reverse(g.count_ones()), t));
        }
        start.push(to.len() as u32);
        Ok(GroupSteps { live, start, to })
    }
}

/// For each state, byte groups `G` such that every string of at most `h`
/// bytes from `G` can be read from the state, by `h` (a trie subtree of
/// height `h` whose bytes are all in `G` is read whole, without a walk).
///
/// `S_h(s)` is a set `G` of groups readable from `s` (see
/// [`ClassBytes::group_steps`]) such that every state `t` that a byte of
/// `G` leads to has `G ⊆ S_{h-1}(t)`: then by induction every string over
/// `G` of up to `h` bytes is read. Several successors are allowed: in
/// "any name but these" or "contains `abc`", letters lead to different
/// states that all read letters, so a subtree of letters is taken whole
/// wherever it starts. A loop keeps its groups for any height; a counting
/// automaton (`.{0,64}`: each character one state further) keeps them for
/// as many bytes as characters are left, so long strings with a
/// `maxLength` are read by subtrees as a plain string is.
pub struct SafeGroups {
    /// Per state `s`: `steps[start[s]..start[s + 1]]`, pairs `(h, groups)`
    /// with `h` increasing: up to height `h`, these groups.
    steps: Vec<(u16, u64)>,
    start: Vec<u32>,
}

impl SafeGroups {
    /// The safe groups of `dfa` for `trie`'s groups (by bytes, or by
    /// characters with `by_char`) and heights; an error once `meter`'s
    /// deadline passes.
    pub fn compute(
        dfa: &LexemeDfa,
        trie: &TokenTrie,
        by_char: bool,
        meter: &mut Meter,
    ) -> Result<SafeGroups> {
        let weights = if by_char {
            trie.char_group_weights()
        } else {
            trie.group_weights()
        };
        let steps = GroupSteps::new(dfa, by_char, meter)?;
        SafeGroups::new(&steps, trie.max_len(), weights, meter)
    }

    /// Round `h` computes `S_h` from `S_{h-1}`; only the states a changed
    /// state leads to from are computed again (a counting automaton
    /// changes one layer of states per round).
    fn new(
        steps: &GroupSteps,
        horizon: usize,
        weights: &[u32; 64],
        meter: &mut Meter,
    ) -> Result<SafeGroups> {
        let n = steps.live.len();
        meter.step(2 * steps.to.len())?;
        let targets = |s: usize| &steps.to[steps.start[s] as usize..steps.start[s + 1] as usize];
        // Who leads to each state.
        let preds = Adjacency::inverse_by(n, &steps.start, &steps.to, |&(t, _)| t);
        // The groups each changed state had before its change, in order of
        // height: `(state, height, groups)`.
        let mut history: Vec<(u32, u16, u64)> = Vec::with_capacity(n);
        // Up to height 1 a state reads its readable groups (`solve` with
        // every group allowed one byte further), so the first round is
        // set rather than solved: on a large automaton it was the largest.
        let mut cur = if horizon == 0 {
            vec![u64::MAX; n]
        } else {
            steps.live.clone()
        };
        let mut candidates: Vec<u32> = Vec::new();
        let mut marked = vec![false; n];
        let mut updates: Vec<(u32, u64)> = Vec::new();
        let changed = |s: usize, candidates: &mut Vec<u32>, marked: &mut [bool]| {
            for &p in preds.of(s) {
                if !marked[p as usize] {
                    marked[p as usize] = true;
                    candidates.push(p);
                }
            }
        };
        for (s, &groups) in cur.iter().enumerate() {
            if groups != u64::MAX {
                meter.step(1 + preds.of(s).len())?;
                history.push((s as u32, 0, u64::MAX));
                changed(s, &mut candidates, &mut marked);
            }
        }
        for &p in &candidates {
            marked[p as usize] = false;
        }
        for h in 2..=horizon.min(u16::MAX as usize - 1) {
            if candidates.is_empty() {
                break;
            }
            updates.clear();
            for &s in &candidates {
                let s = s as usize;
                meter.step(1 + 2 * targets(s).len())?;
                let g = Self::solve(steps.live[s], targets(s), &cur, weights);
                if g != cur[s] {
                    updates.push((s as u32, g));
                }
            }
            if updates.is_empty() {
                break;
            }
            candidates.clear();
            for &(s, g) in &updates {
                let s = s as usize;
                meter.step(1 + preds.of(s).len())?;
                history.push((s as u32, (h - 1) as u16, cur[s]));
                cur[s] = g;
                changed(s, &mut candidates, &mut marked);
            }
            for &p in &candidates {
                marked[p as usize] = false;
            }
        }
        // Per state its history, heights increasing, then its final
        // groups for every height: placed by a count of each state's
        // entries.
        let mut start = vec![0u32; n + 1];
        for &(s, ..) in &history {
            start[s as usize + 1] += 1;
        }
        for s in 0..n {
            start[s + 1] += start[s] + 1;
        }
        let mut steps = vec![(0u16, 0u64); start[n] as usize];
        let mut fill = start.clone();
        for &(s, h, g) in &history {
            steps[fill[s as usize] as usize] = (h, g);
            fill[s as usize] += 1;
        }
        for s in 0..n {
            steps[fill[s] as usize] = (u16::MAX, cur[s]);
        }
        Ok(SafeGroups { steps, start })
    }

    /// A set `G` within `live` such that `G ⊆ prev[t]` for every `(t, m)`
    /// of `to` with `m ∩ G ≠ ∅` (a state's groups one byte further, `prev`
    /// being one byte shorter). Where a target does not read all of `G`,
    /// either the groups leading there go, or `G` shrinks to what the
    /// target reads, whichever keeps more of the trie (`weights`; on a tie
    /// the groups of the entries first in `to`, the largest, are kept).
    fn solve(live: u64, to: &[(u32, u64)], prev: &[u64], weights: &[u32; 64]) -> u64 {
        let weight = |mut m: u64| {
            let mut w = 0u64;
            while m != 0 {
                w += weights[m.trailing_zeros() as usize] as u64 + 1;
                m &= m - 1;
            }
            w
        };
        let mut g = live;
        // A group that cannot follow itself goes first.
        for &(t, m) in to {
            g &= !(m & !prev[t as usize]);
        }
        loop {
            let mut changed = false;
            for &(t, m) in to {
                let allowed = prev[t as usize];
                if m & g == 0 || g & !allowed == 0 {
                    continue;
                }
                let (restricted, dropped) = (g & allowed, g & !m);
                g = if weight(restricted) > weight(dropped) {
                    restricted
                } else {
                    dropped
                };
                changed = true;
            }
            if !changed {
                return g;
            }
        }
    }

    /// Approximate heap bytes.
    pub fn memory(&self) -> usize {
        self.steps.len() * 16 + self.start.len() * 4
    }

    /// The groups whose strings of up to `height` bytes state `s` reads.
    #[inline]
    pub fn groups(&self, s: u32, height: u16) -> u64 {
        let steps =
            &self.steps[self.start[s as usize] as usize..self.start[s as usize + 1] as usize];
        // Heights increase: the first step reaching `height`. Most states
        // have a step or two, which a scan reads faster than a binary
        // search.
        steps
            .iter()
            .find(|&&(h, _)| h >= height)
            .map_or(0, |&(_, g)| g)
    }
}
