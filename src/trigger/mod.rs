//! Triggers of lazy grammars: what llama.cpp's lazy grammar sampler
//! (`llama_sampler_init_grammar_lazy_patterns`) waits for before it
//! constrains the output.
//!
//! A lazy grammar lets the model write freely until a *trigger* fires, then
//! constrains the rest (tool calls: free text until `<tool_call>`). A
//! trigger is one of:
//!
//! - a **token** id: the grammar starts with that token (it is fed to the
//!   grammar as the first token);
//! - a **pattern** in the ECMAScript dialect of C++'s `std::regex`
//!   (llama.cpp's; parsed by [`crate::regex::parse_std_regex`]), searched in
//!   the whole output so far after every token, or matched against the whole
//!   output first when the pattern starts with `^` and ends with `$`
//!   (llama.cpp's `llama_grammar_trigger_pattern::find`); the grammar starts
//!   at the pattern's first capturing group that matched a non-empty text,
//!   or at the match's start;
//! - a **word**: the pattern that escapes the word's special characters
//!   (llama.cpp's `regex_escape`).
//!
//! Token triggers are checked before patterns, and patterns in their order;
//! the first that fires wins.
//!
//! # Cost
//!
//! Each pattern's "somewhere in the output" language is one DFA over UTF-8
//! bytes (built by the regex front end, lookaheads and anchors included), so
//! deciding whether a token fires costs a DFA step per byte of the token,
//! whatever the length of the output (llama.cpp runs `std::regex_search`
//! over the whole output after every token). Where the match starts is
//! found once, when a trigger fires, by [`backtrack`] over the output.
//!
//! # Text
//!
//! Patterns see the output as characters: the bytes are decoded as UTF-8
//! (an invalid sequence reads as U+FFFD), and a character still incomplete
//! at the end of a token is not seen until a later token completes it.
//! `std::regex` on `char` reads bytes instead; the two differ only for
//! patterns that split or count the bytes of a multi-byte character.

pub mod backtrack;

use std::sync::Arc;

use crate::compile::lexeme::{DfaLimits, Table, DEAD};
use crate::error::{Error, Result};
use crate::tokensets::Engine;
use crate::util::hash::FastMap;
use crate::util::sync::{CacheMutex, Recover};
use backtrack::Program;

/// The largest DFA one trigger pattern may have, in bytes of table.
const MAX_TRIGGER_DFA_BYTES: usize = 8 << 20;

/// Most fire sets (see [`Triggers::fire_set`]) kept per trigger list, and
/// most token ids in all of them (16 MiB); the cache is emptied when
/// either is reached.
const MAX_FIRE_SETS: usize = 256;
const MAX_FIRE_SET_IDS: usize = 4 << 20;

/// One trigger as the host gives it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TriggerSpec {
    /// A `std::regex` ECMAScript pattern.
    Pattern(String),
    /// Literal text: the pattern with `.^$|()*+?[]{}\` escaped.
    Word(String),
    /// A token id.
    Token(u32),
}

/// llama.cpp's `regex_escape`: a backslash before each of `.^$|()*+?[]{}\`.
pub fn escape_word(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 8);
    for c in word.chars() {
        if ".^$|()*+?[]{}\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `(pattern, DFA state, decoder state)`: what a fire set depends on.
type FireKey = (u32, u32, u64);

/// Fire sets by what they depend on.
type FireSets = FastMap<FireKey, Arc<[u32]>>;

/// A compiled text trigger.
struct TextTrigger {
    /// Its index in the host's list.
    index: usize,
    source: String,
    /// Final exactly in the states reached by a text with a match.
    dfa: Arc<Table>,
    program: Program,
    /// The most characters a match examines ([`Program::max_span`]).
    span: Option<usize>,
    /// Per DFA state, the fewest characters to a match ([`char_distances`]).
    char_dist: Vec<u32>,
    /// `^...$`: `std::regex_match` on the whole text is tried first.
    whole_first: bool,
}

/// Triggers compiled for one vocabulary: immutable (but for the fire-set
/// cache behind a lock); shared by every lazy matcher that uses them.
pub struct Triggers {
    engine: Arc<Engine>,
    texts: Vec<TextTrigger>,
    /// `(token, index in the host's list)`, sorted.
    tokens: Vec<(u32, usize)>,
    /// The special tokens that do not end the sequence: their text is
    /// output that patterns read, but the token trie leaves them out.
    specials: Vec<u32>,
    /// Tokens whose text makes a pattern fire from a detector state, keyed
    /// by `(pattern, DFA state, decoder state)`, and how many ids they
    /// hold in all.
    fire_sets: CacheMutex<FireSetCache>,
}

/// [`Triggers::fire_set`]'s cache: the sets, and how many ids they hold.
#[derive(Default)]
struct FireSetCache {
    sets: FireSets,
    ids: usize,
}

impl Recover for FireSetCache {
    fn recover(&mut self) {
        *self = FireSetCache::default();
    }
}

impl std::fmt::Debug for Triggers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Triggers")
            .field(
                "patterns",
                &self.texts.iter().map(|t| &t.source).collect::<Vec<_>>(),
            )
            .field("tokens", &self.tokens)
            .finish()
    }
}

/// What fired: the trigger's index in the host's list, and the byte offset
/// in the output where the grammar starts (a trigger token's own offset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fired {
    pub index: usize,
    pub start: usize,
}

impl Triggers {
    /// Compiles the triggers for `engine`'s vocabulary. Errors: a token id out of range
    /// (invalid argument), a pattern `std::regex` rejects (parse), one
    /// cgram cannot decide with an automaton (backreferences: unsupported),
    /// limits.
    pub fn new(engine: &Arc<Engine>, specs: &[TriggerSpec]) -> Result<Triggers> {
        crate::limits::on_compile_stack(|| Triggers::compile(engine, specs))
    }

    fn compile(engine: &Arc<Engine>, specs: &[TriggerSpec]) -> Result<Triggers> {
        let mut texts = Vec::new();
        let mut tokens = Vec::new();
        for (index, spec) in specs.iter().enumerate() {
            // Triggers take no options: each pattern has a fixed time.
            let limits = DfaLimits {
                max_bytes: MAX_TRIGGER_DFA_BYTES,
                deadline: crate::limits::Deadline::named(
                    crate::limits::TRIGGER_MAX_COMPILE_MS,
                    "the time limit of a trigger pattern",
                ),
                ..DfaLimits::default()
            };
            let pattern = match spec {
                TriggerSpec::Token(t) => {
                    if *t as usize >= engine.vocab().len() {
                        return Err(Error::invalid(format!(
                            "trigger {index}: token {t} is out of range (vocabulary of {} tokens)",
                            engine.vocab().len()
                        )));
                    }
                    tokens.push((*t, index));
                    continue;
                }
                TriggerSpec::Word(w) => {
                    if w.is_empty() {
                        return Err(Error::invalid(format!(
                            "trigger {index}: the word is empty"
                        )));
                    }
                    escape_word(w)
                }
                TriggerSpec::Pattern(p) => p.clone(),
            };
            let at = |e: Error| e.context(format!("trigger {index} ({pattern:?})"));
            let node = crate::regex::parse_std_regex(&pattern).map_err(at)?;
            let language = crate::regex::search_language(&node, &limits.deadline).map_err(at)?;
            let dfa = crate::compile::lexeme::table(&language, &limits, &**engine).map_err(at)?;
            let program = Program::new(&node).map_err(at)?;
            let whole_first = pattern.starts_with('^') && pattern.ends_with('$');
            let char_dist = char_distances(&dfa);
            texts.push(TextTrigger {
                index,
                source: pattern,
                dfa,
                span: program.max_span(),
                char_dist,
                program,
                whole_first,
            });
        }
        tokens.sort_unstable();
        let specials = (0..engine.vocab().len() as u32)
            .filter(|&id| engine.vocab().is_special(id) && !engine.vocab().is_eos(id))
            .collect();
        Ok(Triggers {
            engine: engine.clone(),
            texts,
            tokens,
            specials,
            fire_sets: CacheMutex::new("trigger fire sets", FireSetCache::default()),
        })
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Approximate heap bytes of the automata (fire sets come on top, at
    /// most [`MAX_FIRE_SET_IDS`] token ids).
    pub fn memory(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .texts
                .iter()
                .map(|t| {
                    std::mem::size_of::<TextTrigger>()
                        + t.source.len()
                        + t.dfa.trans.len() * 4
                        + t.dfa.is_final.len()
                        + t.program.memory()
                })
                .sum::<usize>()
            + self.tokens.len() * 16
            + self.specials.len() * 4
    }

    /// The host's index of the trigger token `token`, if it is one.
    pub fn token_trigger(&self, token: u32) -> Option<usize> {
        let k = self.tokens.partition_point(|&(t, _)| t < token);
        self.tokens
            .get(k)
            .filter(|&&(t, _)| t == token)
            .map(|&(_, i)| i)
    }

    /// The trigger tokens.
    pub fn trigger_tokens(&self) -> impl Iterator<Item = u32> + '_ {
        self.tokens.iter().map(|&(t, _)| t)
    }

    /// The detector at the start of the output.
    pub fn detector(&self) -> Detector {
        Detector {
            states: vec![0; self.texts.len()],
            decoder: Utf8Decoder::default(),
        }
    }

    /// Reads `bytes`, which start at offset `base` of the output, into the
    /// detector; `emit` gets each completed character and the offset in
    /// the output where it starts (before `base` for a character that
    /// earlier bytes began).
    pub fn feed(
        &self,
        d: &mut Detector,
        bytes: &[u8],
        base: usize,
        mut emit: impl FnMut(u32, usize),
    ) {
        for (k, &b) in bytes.iter().enumerate() {
            let (out, n) = d.decoder.push(b, base + k);
            for &(c, at) in &out[..n] {
                self.step_char(&mut d.states, c);
                emit(c, at);
            }
        }
    }

    fn step_char(&self, states: &mut [u32], c: u32) {
        for (t, s) in self.texts.iter().zip(states.iter_mut()) {
            *s = t.step(*s, c);
        }
    }

    /// The first pattern (in the host's order) whose match is in the text
    /// the detector has read: its position among the patterns.
    pub fn fired_pattern(&self, d: &Detector) -> Option<usize> {
        self.texts
            .iter()
            .zip(&d.states)
            .position(|(t, &s)| s != DEAD && t.dfa.is_final[s as usize])
    }

    /// The host's index of pattern `k`.
    pub fn pattern_index(&self, k: usize) -> usize {
        self.texts[k].index
    }

    /// The source of pattern `k` (a word's escaped form).
    pub fn pattern_source(&self, k: usize) -> &str {
        &self.texts[k].source
    }

    /// Where the grammar starts in `text` (characters) for pattern `k`,
    /// which the detector says matches it: a character position. The text
    /// before `known` (a character count) held no match: only matches that
    /// reach past it are looked for, from as far back as the pattern can
    /// reach (the whole text for patterns of unbounded length).
    pub fn grammar_start(&self, k: usize, text: &[u32], known: usize) -> Result<usize> {
        let t = &self.texts[k];
        let from = match t.span {
            Some(span) => known.saturating_sub(span),
            None => 0,
        };
        let mut found = None;
        // A match of the whole text: impossible once the text is longer
        // than any match.
        if t.whole_first && t.span.is_none_or(|span| text.len() <= span) {
            found = t.program.find(text, true)?;
        }
        if found.is_none() {
            found = t.program.find_from(text, from, false)?;
        }
        found.map(|f| f.grammar_start()).ok_or_else(|| {
            Error::new(
                crate::error::ErrorKind::Internal,
                format!(
                    "trigger pattern {:?}: the automaton found a match the search does not",
                    t.source
                ),
            )
        })
    }

    /// What the search for pattern `k`'s start may cost, in (instruction,
    /// position) pairs, for a text of `len` characters of which the first
    /// `known` held no match.
    pub fn search_cost(&self, k: usize, len: usize, known: usize) -> usize {
        let t = &self.texts[k];
        let window = match t.span {
            Some(span) => len - known.saturating_sub(span),
            None => len,
        };
        window.saturating_mul(t.program.size())
    }

    /// Number of patterns.
    pub fn num_patterns(&self) -> usize {
        self.texts.len()
    }

    /// The tokens (end-of-sequence ones excepted) whose text makes
    /// pattern `k` match when read by a detector in this state: a
    /// superset of the tokens that fire a trigger from there. Computed
    /// once per state and kept.
    pub fn fire_set(&self, k: usize, d: &Detector) -> Arc<[u32]> {
        let key = (k as u32, d.states[k], d.decoder.key());
        if let Some(s) = self.fire_sets.lock().sets.get(&key) {
            return s.clone();
        }
        let mut out = Vec::new();
        if d.states[k] != DEAD {
            if d.decoder.at_boundary() {
                self.fire_walk(k, d.states[k], &mut out);
            } else {
                let engine = &self.engine;
                let all = (0..engine.vocab().len() as u32).filter(|&id| !engine.vocab().is_eos(id));
                self.fire_scan(k, d, all, &mut out);
            }
        }
        let set: Arc<[u32]> = out.into();
        let mut cache = self.fire_sets.lock();
        if cache.sets.len() >= MAX_FIRE_SETS || cache.ids + set.len() > MAX_FIRE_SET_IDS {
            cache.recover();
        }
        cache.ids += set.len();
        cache.sets.insert(key, set.clone());
        set
    }
}

impl Triggers {
    /// [`Self::fire_set`] token by token: each token read from the
    /// detector's state.
    fn fire_scan(
        &self,
        k: usize,
        d: &Detector,
        ids: impl Iterator<Item = u32>,
        out: &mut Vec<u32>,
    ) {
        let t = &self.texts[k];
        for id in ids {
            let mut s = d.states[k];
            let mut dec = d.decoder;
            for &b in self.engine.vocab().token_bytes(id) {
                let (chars, n) = dec.push(b, 0);
                for &(c, _) in &chars[..n] {
                    s = t.step(s, c);
                }
                if s == DEAD {
                    break;
                }
            }
            if s != DEAD && t.dfa.is_final[s as usize] {
                out.push(id);
            }
        }
    }

    /// [`Self::fire_set`] from a character boundary, over the token trie:
    /// shared prefixes are read once, and a subtree is skipped when its
    /// pattern can no longer match within its longest token (most of the
    /// vocabulary, for a trigger word). Special tokens, which the trie
    /// leaves out but whose text llama.cpp reads, are scanned one by one.
    fn fire_walk(&self, k: usize, start: u32, out: &mut Vec<u32>) {
        let t = &self.texts[k];
        let trie = self.engine.vocab().trie();
        let nodes = trie.nodes();
        let ids = trie.token_ids();
        let mut stack: Vec<(u32, u32, Utf8Decoder)> = Vec::new();
        let mut child = 0;
        while child < trie.root_end() {
            stack.push((child, start, Utf8Decoder::default()));
            child = nodes[child as usize].subtree_end;
        }
        while let Some((i, parent, mut dec)) = stack.pop() {
            let mut s = parent;
            let (chars, n) = dec.push(nodes[i as usize].byte, 0);
            for &(c, _) in &chars[..n] {
                s = t.step(s, c);
            }
            if s == DEAD {
                continue;
            }
            if t.dfa.is_final[s as usize] {
                let r = trie.tokens_at(i);
                out.extend_from_slice(&ids[r.start as usize..r.end as usize]);
            }
            // Characters still to come below: at most one per byte, plus
            // the one pending.
            let below = trie.height_below(i) as u32 + u32::from(!dec.at_boundary());
            if t.char_dist[s as usize] > below {
                continue;
            }
            let end = nodes[i as usize].subtree_end;
            let mut c = i + 1;
            while c < end {
                stack.push((c, s, dec));
                c = nodes[c as usize].subtree_end;
            }
        }
        let mut d = Detector {
            states: vec![DEAD; self.texts.len()],
            decoder: Utf8Decoder::default(),
        };
        d.states[k] = start;
        self.fire_scan(k, &d, self.specials.iter().copied(), out);
    }
}

impl TextTrigger {
    /// The DFA state after character `c` (U+FFFD for a broken sequence).
    fn step(&self, mut s: u32, c: u32) -> u32 {
        let mut buf = [0u8; 4];
        let ch = char::from_u32(c).unwrap_or('\u{FFFD}');
        for &b in ch.encode_utf8(&mut buf).as_bytes() {
            if s == DEAD {
                break;
            }
            s = self.dfa.next(s, b);
        }
        s
    }
}

/// Per DFA state, the fewest characters that lead to a final state
/// (`u32::MAX`: none): a breadth-first search backwards from the final
/// states in which only a character's first byte counts.
fn char_distances(t: &Table) -> Vec<u32> {
    let n = t.num_states();
    let mut back: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
    for s in 0..n as u32 {
        for b in t.class_reps() {
            let to = t.next(s, b);
            if to != DEAD {
                let cost = u32::from(!(0x80..0xC0).contains(&b));
                back[to as usize].push((s, cost));
            }
        }
    }
    let mut dist = vec![u32::MAX; n];
    let mut queue = std::collections::VecDeque::new();
    for (s, d) in dist.iter_mut().enumerate() {
        if t.is_final[s] {
            *d = 0;
            queue.push_back(s as u32);
        }
    }
    // 0-1 breadth-first search: free steps go to the front.
    while let Some(s) = queue.pop_front() {
        for &(p, cost) in &back[s as usize] {
            let d = dist[s as usize] + cost;
            if d < dist[p as usize] {
                dist[p as usize] = d;
                if cost == 0 {
                    queue.push_front(p);
                } else {
                    queue.push_back(p);
                }
            }
        }
    }
    dist
}

/// Where a detector is in the output: each pattern's DFA state and the
/// UTF-8 decoder's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detector {
    states: Vec<u32>,
    decoder: Utf8Decoder,
}

impl Detector {
    /// The same states (where the text so far starts does not matter).
    pub fn same_state(&self, other: &Detector) -> bool {
        self.states == other.states && self.decoder.key() == other.decoder.key()
    }
}

/// An incremental UTF-8 decoder that reads an invalid sequence as U+FFFD
/// (one per maximal invalid subpart, as `String::from_utf8_lossy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Utf8Decoder {
    /// Continuation bytes still needed.
    need: u8,
    /// Bytes read of the current sequence.
    seen: u8,
    /// Bounds of the next continuation byte.
    lo: u8,
    hi: u8,
    acc: u32,
    /// Offset of the sequence's first byte.
    start: usize,
}

impl Utf8Decoder {
    /// A key for caches: the whole state but the offset.
    fn key(&self) -> u64 {
        (self.need as u64)
            | (self.seen as u64) << 8
            | (self.lo as u64) << 16
            | (self.hi as u64) << 24
            | (self.acc as u64) << 32
    }

    /// Nothing pending (the last byte ended a character).
    pub fn at_boundary(&self) -> bool {
        self.need == 0
    }

    /// Reads byte `b` at offset `at`; returns the characters it completes
    /// (at most two: U+FFFD for a broken sequence, then `b` itself) with
    /// the offsets where they start.
    pub fn push(&mut self, b: u8, at: usize) -> ([(u32, usize); 2], usize) {
        let mut out = [(0, 0); 2];
        let mut n = 0;
        if self.need > 0 {
            if (self.lo..=self.hi).contains(&b) {
                self.acc = self.acc << 6 | (b & 0x3F) as u32;
                self.need -= 1;
                self.seen += 1;
                self.lo = 0x80;
                self.hi = 0xBF;
                if self.need == 0 {
                    out[0] = (self.acc, self.start);
                    return (out, 1);
                }
                return (out, 0);
            }
            out[0] = (0xFFFD, self.start);
            n = 1;
            self.need = 0;
        }
        let (need, lo, hi, acc) = match b {
            0x00..=0x7F => {
                out[n] = (b as u32, at);
                return (out, n + 1);
            }
            0xC2..=0xDF => (1, 0x80, 0xBF, (b & 0x1F) as u32),
            0xE0 => (2, 0xA0, 0xBF, 0),
            0xE1..=0xEC | 0xEE..=0xEF => (2, 0x80, 0xBF, (b & 0x0F) as u32),
            0xED => (2, 0x80, 0x9F, 0x0D),
            0xF0 => (3, 0x90, 0xBF, 0),
            0xF1..=0xF3 => (3, 0x80, 0xBF, (b & 0x07) as u32),
            0xF4 => (3, 0x80, 0x8F, 4),
            _ => {
                out[n] = (0xFFFD, at);
                return (out, n + 1);
            }
        };
        *self = Utf8Decoder {
            need,
            seen: 1,
            lo,
            hi,
            acc,
            start: at,
        };
        (out, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Vec<(u32, usize)> {
        let mut d = Utf8Decoder::default();
        let mut out = Vec::new();
        for (k, &b) in bytes.iter().enumerate() {
            let (c, n) = d.push(b, k);
            out.extend_from_slice(&c[..n]);
        }
        out
    }

    #[test]
    fn decoder_is_lossy_like_std() {
        let cases: &[&[u8]] = &[
            b"abc",
            "é😀x".as_bytes(),
            b"\xE2\x82",
            b"\xE2\x82x",
            b"\xFFa\xC0\x80",
            b"\xED\xA0\x80",
            b"\xF4\x90\x80\x80",
            b"\xF0\x9F\x98",
        ];
        for bytes in cases {
            let got: String = decode(bytes)
                .iter()
                .map(|&(c, _)| char::from_u32(c).unwrap())
                .collect();
            let mut want = String::from_utf8_lossy(bytes).into_owned();
            // A sequence still incomplete at the end is not a character yet.
            if bytes.ends_with(b"\xE2\x82") || bytes.ends_with(b"\xF0\x9F\x98") {
                want.pop();
            }
            assert_eq!(got, want, "{bytes:?}");
        }
        assert_eq!(decode("aé".as_bytes()), vec![(0x61, 0), (0xE9, 1)]);
    }

    #[test]
    fn words_are_escaped_as_llama_cpp_does() {
        assert_eq!(escape_word("<tool_call>"), "<tool_call>");
        assert_eq!(escape_word("[TOOL_CALLS]"), "\\[TOOL_CALLS\\]");
        assert_eq!(
            escape_word("{\"type\": \"function\","),
            "\\{\"type\": \"function\","
        );
        assert_eq!(escape_word("a.b|c\\"), "a\\.b\\|c\\\\");
    }
}
