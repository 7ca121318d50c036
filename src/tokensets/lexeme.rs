//! A lexeme as the mask path knows it: its automaton (immutable, from the
//! compile layer) and what walks of the vocabulary's trie learned about it
//! (each state's token sets, subtree walks, the analyses that let a walk
//! take whole subtrees at once). One [`Lexeme`] per automaton and
//! vocabulary, shared by every grammar that uses it through the
//! [`Engine`](super::Engine).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::info::{Exit, TokenInfo};
use super::work;
use crate::compile::lexeme::{
    readable_equivalents, table_equivalents, Computed, LexemeDfa, SafeGroups, StringBody, DEAD,
};
use crate::error::Result;
use crate::limits::Deadline;
use crate::util::byteset::ByteSet;
use crate::util::hash::FastMap;
use crate::util::sync::{CacheMutex, Recover};
use crate::vocab::trie::{byte_group, INSIDE_CHAR, QUOTE_GROUP};
use crate::vocab::TokenTrie;

/// One subtree of the trie walked from one DFA state, its node read into
/// that state with nothing to exit above it (a first byte, see
/// `lexeme_walk::lexeme_info`; a node inside "any other string"; a closing quote):
/// its accepted tokens as trie-order ranges, and its exits.
pub struct SubtreeWalk {
    pub(crate) ranges: Box<[(u32, u32)]>,
    pub(crate) exits: Box<[Exit]>,
}

impl SubtreeWalk {
    /// Approximate heap bytes, with its place in [`SubtreeWalks`].
    pub(crate) fn memory(&self) -> usize {
        self.ranges.len() * 8 + self.exits.len() * std::mem::size_of::<Exit>() + 64
    }
}

/// A lexeme's [`SubtreeWalk`]s, keyed by (token class of the state its node
/// is read into, trie node of the subtree).
#[derive(Default)]
pub struct SubtreeWalks {
    map: FastMap<(u32, u32), Arc<SubtreeWalk>>,
    /// Ranges and exits stored so far.
    entries: usize,
}

/// After a panic under the lock: the walks forgotten. The lexeme's count
/// of learned bytes still holds them, so its budget errs towards evicting
/// it sooner.
impl Recover for SubtreeWalks {
    fn recover(&mut self) {
        *self = SubtreeWalks::default();
    }
}

/// Most ranges and exits one lexeme keeps in [`SubtreeWalks`]; beyond it,
/// new walks are used once and dropped.
const SUBTREE_WALKS_MAX_ENTRIES: usize = 1 << 22;

impl SubtreeWalks {
    pub(crate) fn get(&self, key: &(u32, u32)) -> Option<Arc<SubtreeWalk>> {
        self.map.get(key).cloned()
    }

    /// Keeps `walk` under `key` unless the lexeme holds
    /// [`SUBTREE_WALKS_MAX_ENTRIES`] already; whether it was kept.
    pub(crate) fn insert(&mut self, key: (u32, u32), walk: Arc<SubtreeWalk>) -> bool {
        if self.entries >= SUBTREE_WALKS_MAX_ENTRIES {
            return false;
        }
        self.entries += walk.ranges.len() + walk.exits.len();
        self.map.insert(key, walk);
        true
    }
}

/// DFAs with at least this many states get their walk analyses at compile
/// time (see [`Lexeme::prepare_walks`]).
const EAGER_WALK_ANALYSIS_STATES: usize = 512;

/// A large lexeme whose bytes spell so few tokens that finding them all
/// visits at most this share of the trie's nodes walks without safe
/// groups (see [`Lexeme::spells_few_tokens`]). On Llama 3 a thirty-second
/// is 8,578 nodes: a date-time's bytes (digits, separators, hex digits)
/// take 4,943.
const FEW_NODES_SHARE: usize = 32;

/// A lexeme that reads more distinct bytes than this (a quarter of them)
/// is taken to spell many tokens without counting them (a date-time reads
/// 37).
const MAX_FEW_TOKENS_BYTES: u32 = 64;

/// Token sets kept per lexeme with computed states (a counted lexeme's by
/// state and count class, a string trie's by state); past it, new ones
/// are computed for each mask and dropped.
pub const MAX_COMPUTED_INFOS: usize = 4096;

/// The automaton of a counted lexeme without its count, for its states
/// where the count bounds code points alone (see [`Lexeme::uncounted`]).
pub(crate) struct Uncounted {
    /// The automaton as a lexeme of its own, with what walks learn of it.
    pub(crate) lexeme: Lexeme,
    /// Per state: the count bounds code points alone from it on.
    pub(crate) alone: Box<[bool]>,
    /// Per state: `alone`, and at a character boundary (see
    /// [`Counter::char_boundaries`](crate::compile::lexeme::Counter::char_boundaries)).
    pub(crate) at_boundary: Box<[bool]>,
}

/// A lexeme automaton with what the mask path learned about it.
pub struct Lexeme {
    /// The immutable automaton (read through [`Lexeme::dfa`]).
    dfa: Arc<LexemeDfa>,
    /// Token sets per token class (see [`Lexeme::token_class`]), computed
    /// on first use. Indexed by state; read without locks on the mask
    /// path.
    pub(crate) infos: Box<[OnceLock<Arc<TokenInfo>>]>,
    /// Token sets of a lexeme with computed states by canonical state (see
    /// `cached::lexeme_state_info`), bounded by [`MAX_COMPUTED_INFOS`].
    pub(crate) computed_infos: CacheMutex<FastMap<u32, Arc<TokenInfo>>>,
    /// Walks of single first-byte subtrees, shared by the token sets of
    /// every state that reaches the same state on that byte (see
    /// `lexeme_walk::lexeme_info`).
    pub(crate) pieces: CacheMutex<SubtreeWalks>,
    /// Which whole trie subtrees a state reads, by their height (see
    /// [`SafeGroups`]), computed on first use.
    safe: OnceLock<SafeGroups>,
    /// The same by characters.
    char_safe: OnceLock<SafeGroups>,
    /// "Any string"'s safe groups, where this lexeme reads what it reads
    /// (see [`Lexeme::share_body_groups`]); then `safe` and `char_safe`
    /// stay empty.
    body_groups: OnceLock<Option<BodyGroups>>,
    /// Per state: the smallest state equivalent to it on every string of
    /// at most the vocabulary's longest token (see
    /// [`LexemeDfa::token_classes`]).
    token_classes: OnceLock<Option<Vec<u32>>>,
    /// See [`Lexeme::string_body_states`].
    body_states: OnceLock<Box<[u32]>>,
    /// See [`Lexeme::counted_any_string`].
    counted_any: OnceLock<Option<Box<[u32]>>>,
    /// See [`Lexeme::ending_groups`].
    ending_groups: OnceLock<u64>,
    /// See [`Lexeme::reads_only_ascii`].
    only_ascii: OnceLock<bool>,
    /// See [`Lexeme::spells_few_tokens`].
    few_tokens: OnceLock<bool>,
    /// See [`Lexeme::refined_language_key`].
    refined_key: OnceLock<Option<u64>>,
    /// See [`Lexeme::uncounted`].
    uncounted: OnceLock<Option<Box<Uncounted>>>,
    /// The token sets of states in the subtrees where the lexeme can end
    /// (see `cached::ending_info_for`), by token class, for a DFA without
    /// computed states; a state whose full token sets are known uses those.
    pub(crate) ending_infos: CacheMutex<FastMap<u32, Arc<TokenInfo>>>,
    /// Heap bytes of what the mask path learned and keeps here (token
    /// sets, subtree walks): counted by the engine's budget.
    learned_bytes: AtomicUsize,
}

impl Lexeme {
    /// Nothing learned yet about `dfa`.
    pub fn new(dfa: Arc<LexemeDfa>) -> Lexeme {
        let n = dfa.num_states();
        Lexeme {
            dfa,
            infos: (0..n).map(|_| OnceLock::new()).collect(),
            computed_infos: CacheMutex::new("lexeme computed sets", FastMap::default()),
            pieces: CacheMutex::new("lexeme subtree walks", SubtreeWalks::default()),
            safe: OnceLock::new(),
            char_safe: OnceLock::new(),
            body_groups: OnceLock::new(),
            token_classes: OnceLock::new(),
            body_states: OnceLock::new(),
            counted_any: OnceLock::new(),
            ending_groups: OnceLock::new(),
            only_ascii: OnceLock::new(),
            few_tokens: OnceLock::new(),
            refined_key: OnceLock::new(),
            uncounted: OnceLock::new(),
            ending_infos: CacheMutex::new("lexeme ending sets", FastMap::default()),
            learned_bytes: AtomicUsize::new(0),
        }
    }

    /// The immutable automaton; what masks learned about it stays here.
    #[inline(always)]
    pub fn dfa(&self) -> &Arc<LexemeDfa> {
        &self.dfa
    }

    /// A representative of `state`'s token class (see
    /// [`LexemeDfa::token_classes`]), computed on first use.
    pub fn token_class(&self, state: u32, horizon: usize) -> u32 {
        match self.dfa.computed.as_deref() {
            Some(Computed::Counted(c)) => return c.token_class(state, horizon),
            Some(Computed::LengthAndIterations(c)) => return c.token_class(state, horizon),
            // Each state its own class.
            Some(Computed::Strings(_)) => return state,
            None => {}
        }
        let refined = self.token_classes.get_or_init(|| {
            self.dfa
                .token_classes(horizon, &mut Deadline::none().meter())
                .unwrap_or(None)
        });
        match refined {
            Some(classes) => classes[state as usize],
            None => state,
        }
    }

    /// Computes now, for a large DFA, what trie walks of its states need
    /// (safe groups, or "any string"'s shared, see
    /// [`Self::share_body_groups`]; token classes): at compile time
    /// rather than in the first mask that reaches the lexeme, where a DFA
    /// of thousands of states (a `maxLength` with a `pattern`) cost that
    /// mask 10-30 ms.
    /// Small DFAs keep them lazy: they are cheap and many are never walked.
    /// An error once `deadline` passes (what was not computed then is
    /// computed on first use).
    pub fn prepare_walks(
        &self,
        trie: &TokenTrie,
        body: Option<&Arc<Lexeme>>,
        deadline: &Deadline,
    ) -> Result<()> {
        // The count classes read every count once, and so does finding
        // where the count bounds code points alone.
        match self.dfa.computed.as_deref() {
            Some(Computed::Counted(c)) => {
                c.prepare(trie.max_len());
                self.uncounted();
            }
            Some(Computed::LengthAndIterations(c)) => c.prepare(trie.max_len()),
            _ => {}
        }
        if self.dfa.num_states() < EAGER_WALK_ANALYSIS_STATES {
            return Ok(());
        }
        self.share_body_groups(body, deadline)?;
        let mut meter = deadline.meter();
        // (A lexeme whose bytes spell few tokens walks without the groups,
        // one that shares "any string"'s has them.)
        let modes: &[bool] = if self.body_groups().is_some() || self.spells_few_tokens(trie) {
            &[]
        } else {
            &[false, true]
        };
        for &by_char in modes {
            if by_char && self.reads_only_ascii() {
                // No character analysis: see `safe_chars`.
                continue;
            }
            let cell = self.safe_cell(by_char);
            if cell.get().is_none() {
                let _ = cell.set(SafeGroups::compute(&self.dfa, trie, by_char, &mut meter)?);
            }
        }
        if self.token_classes.get().is_none() {
            let _ = self
                .token_classes
                .set(self.dfa.token_classes(trie.max_len(), &mut meter)?);
        }
        Ok(())
    }

    /// Takes "any string"'s safe groups (`body`, the vocabulary's, see
    /// `Engine::string_body`) where this lexeme reads the strings it reads
    /// but for closing quotes (see [`readable_equivalents`]): a key that is
    /// none of the listed names. Such a key's automaton spells every
    /// escape after every prefix of every name, six times the states of
    /// the names' trie; computing its groups took 31M of the 198M
    /// instructions of `appsettings`' compile (15 keys of 550-1,130
    /// states), and small keys left a mask without them after its share
    /// of analyses (see [`work::take_analysis`]). Decided once, before
    /// any walk (by the grammar, or by the walk itself); an error once
    /// `deadline` passes, which decides nothing.
    pub fn share_body_groups(&self, body: Option<&Arc<Lexeme>>, deadline: &Deadline) -> Result<()> {
        if self.body_groups.get().is_some() {
            return Ok(());
        }
        let shared = match body {
            Some(body) if !Arc::ptr_eq(&body.dfa, &self.dfa) => {
                readable_equivalents(&self.dfa, &body.dfa, &mut deadline.meter())?.map(|r| {
                    BodyGroups {
                        body: body.clone(),
                        like: r.like.into_boxed_slice(),
                        quote_refused: r.quote_refused.into_boxed_slice(),
                    }
                })
            }
            _ => None,
        };
        let _ = self.body_groups.set(shared);
        Ok(())
    }

    /// Whether this lexeme took "any string"'s safe groups.
    #[cfg(test)]
    pub(crate) fn shares_body_groups(&self) -> bool {
        self.body_groups().is_some()
    }

    /// Whether [`Self::share_body_groups`] ran.
    #[inline(always)]
    pub fn body_groups_decided(&self) -> bool {
        self.body_groups.get().is_some()
    }

    /// See [`Self::share_body_groups`].
    #[inline(always)]
    fn body_groups(&self) -> Option<&BodyGroups> {
        self.body_groups.get().and_then(Option::as_ref)
    }

    /// Whether a walk should take subtrees whole by the safe groups now.
    /// Not when they are not computed yet, for a small automaton that
    /// reaches "any string" (a key that is not one of the listed names),
    /// and the running mask computed its share of such analyses (see
    /// [`work::take_analysis`]): a walk of such a key reads the names'
    /// prefixes, a few nodes before "any string"'s shared walks take over,
    /// for less than computing the groups costs (see
    /// `lexeme_walk::lexeme_info`).
    pub fn safe_groups_wanted(&self, reaches_string_body: bool) -> bool {
        !(reaches_string_body && self.safe_groups_pending()) || work::take_analysis()
    }

    /// Whether the bytes this automaton reads anywhere spell so few tokens
    /// that a walk of any of its states, node by node, visits fewer nodes
    /// than its safe groups cost to compute: its walks go without them. A
    /// date-time reads digits, a few separators and the hex digits of its
    /// escapes; the groups of its 66,000 states (over JSON spellings) took
    /// 45M instructions, the largest part of the first schema with one,
    /// where a walk visits at most the nodes those bytes spell. The test
    /// walks the trie entering only nodes of those bytes, up to
    /// [`FEW_NODES_SHARE`] of its nodes, for large automata only (at
    /// compile time, see [`Self::prepare_walks`]): a small one's groups
    /// cost less than the test, which in a mask meeting thirty new
    /// lexemes cost it 2M instructions. A lexeme with computed states
    /// keeps its own walks.
    pub fn spells_few_tokens(&self, trie: &TokenTrie) -> bool {
        *self.few_tokens.get_or_init(|| {
            let dfa = &*self.dfa;
            if dfa.computed.is_some() || dfa.num_states() < EAGER_WALK_ANALYSIS_STATES {
                return false;
            }
            let nodes = trie.nodes();
            let end = trie.root_end() as usize;
            let budget = end / FEW_NODES_SHARE;
            let mut alphabet = ByteSet::EMPTY;
            for bytes in &dfa.first_bytes {
                alphabet |= *bytes;
            }
            // Text of any kind (a string with a pattern or a length reads
            // every printable byte): many tokens, without a walk to count.
            if alphabet.len() > MAX_FEW_TOKENS_BYTES {
                return false;
            }
            // The trie's nodes in order, entering those whose byte is in
            // the alphabet and skipping the subtrees of the others.
            let (mut visits, mut i) = (0, 0);
            while i < end {
                visits += 1;
                if visits > budget {
                    return false;
                }
                let b = nodes[i].byte;
                i = if alphabet.contains(b) {
                    i + 1
                } else {
                    nodes[i].subtree_end as usize
                };
            }
            true
        })
    }

    /// Whether the safe groups by bytes or by characters were computed.
    #[cfg(test)]
    pub(crate) fn safe_groups_computed(&self) -> bool {
        self.safe.get().is_some() || self.char_safe.get().is_some()
    }

    /// The safe groups are still to be computed, on first use.
    pub(crate) fn safe_groups_pending(&self) -> bool {
        self.dfa.num_states() < EAGER_WALK_ANALYSIS_STATES
            && self.safe.get().is_none()
            && self.body_groups().is_none()
    }

    /// Whether some state equals a state of "any string" (see
    /// [`Self::string_body_states`]); false while no walk asked.
    fn reaches_string_body(&self) -> bool {
        self.body_states
            .get()
            .is_some_and(|like| like.iter().any(|&t| t != DEAD))
    }

    fn safe_cell(&self, by_char: bool) -> &OnceLock<SafeGroups> {
        if by_char {
            &self.char_safe
        } else {
            &self.safe
        }
    }

    /// The safe groups by bytes or characters, computed on first use
    /// (without a deadline: a mask's work is bounded by its own budget).
    fn safe_groups_of(&self, trie: &TokenTrie, by_char: bool) -> &SafeGroups {
        self.safe_cell(by_char).get_or_init(|| {
            SafeGroups::compute(&self.dfa, trie, by_char, &mut Deadline::none().meter())
                .expect("no deadline")
        })
    }

    /// The byte groups whose strings of up to `height` bytes `state`
    /// reads whole (see [`SafeGroups`]).
    #[inline(always)]
    pub fn safe_bytes(&self, trie: &TokenTrie, state: u32, height: u16) -> u64 {
        if let Some(shared) = self.body_groups() {
            return shared.groups(trie, state, height, false);
        }
        match self.dfa.table_state_for_walks(trie, state, height) {
            Some(s) => self.safe_groups_of(trie, false).groups(s, height),
            None => self.unclosed_safe(trie, state, height, false),
        }
    }

    /// The safe groups of a state whose count only forbids the closing
    /// quote (see [`LexemeDfa::table_state_for_unclosed_walks`]): its
    /// automaton state's, less the quote's group.
    #[inline(never)]
    fn unclosed_safe(&self, trie: &TokenTrie, state: u32, height: u16, by_char: bool) -> u64 {
        match self.dfa.table_state_for_unclosed_walks(trie, state, height) {
            Some(s) => self.safe_groups_of(trie, by_char).groups(s, height) & !QUOTE_GROUP,
            None => 0,
        }
    }

    /// The same by characters. None for an automaton that reads no
    /// multi-byte character: a subtree its bytes do not take whole holds
    /// a byte it cannot read, or an ASCII group its characters would not
    /// take either.
    #[inline(always)]
    pub fn safe_chars(&self, trie: &TokenTrie, state: u32, height: u16) -> u64 {
        if self.reads_only_ascii() {
            return 0;
        }
        if let Some(shared) = self.body_groups() {
            return shared.groups(trie, state, height, true);
        }
        match self.dfa.table_state_for_walks(trie, state, height) {
            Some(s) => self.safe_groups_of(trie, true).groups(s, height),
            None => self.unclosed_safe(trie, state, height, true),
        }
    }

    /// Every string below trie node `i` can be read from `state` (which
    /// then takes the subtree whole).
    #[inline]
    pub fn reads_subtree(&self, trie: &TokenTrie, i: u32, state: u32) -> bool {
        // (Without the groups, the caller reads the subtree byte by byte.)
        if self.spells_few_tokens(trie)
            || self.safe_groups_pending() && !self.safe_groups_wanted(self.reaches_string_body())
        {
            return false;
        }
        if trie.groups_below(i) & !self.safe_bytes(trie, state, trie.height_below(i)) == 0 {
            return true;
        }
        let chars = trie.char_groups_below(i);
        chars & INSIDE_CHAR == 0
            && chars & !self.safe_chars(trie, state, trie.char_height_below(i)) == 0
    }

    /// Per state of this DFA, the state of "any string" (see
    /// [`StringBody`]) that accepts the same strings, found from the state
    /// inside "any other string" (the state of `body`'s own, and those a
    /// string leads both to from there: within a character, an escape, the
    /// closing quote), or [`DEAD`].
    pub fn string_body_states(&self, body: &StringBody) -> &[u32] {
        let dfa = &*self.dfa;
        if dfa.computed.is_some() {
            // A count never ends in "any string", and a set of strings
            // never reaches it.
            return &[];
        }
        self.body_states.get_or_init(|| {
            let mut like = vec![DEAD; dfa.num_states()];
            // A count never ends in "any string" (and pairing its states
            // with it would walk the count).
            if !Arc::ptr_eq(&self.dfa, &body.dfa) && dfa.count_span == 0 {
                for (s, t) in dfa.state_like(&body.dfa, body.state).1 {
                    like[s as usize] = t;
                }
            }
            like.into_boxed_slice()
        })
    }

    /// This DFA's state inside "any other string" (see [`StringBody`]), or
    /// [`DEAD`].
    pub fn string_body_state(&self, body: &StringBody) -> u32 {
        let like = self.string_body_states(body);
        // The first state that is like it (one when the DFA is minimal).
        like.iter()
            .position(|&t| t == body.state)
            .map_or(DEAD, |s| s as u32)
    }

    /// For a counted lexeme whose automaton is "any string" (`body`'s, a
    /// pure length bound): per state of the automaton, the equivalent
    /// state of "any string". Then every state's token sets derive from
    /// "any string"'s by the count alone (see
    /// `strings::counted_string_info`). `None` for other lexemes.
    pub fn counted_any_string(&self, body: &StringBody) -> Option<&[u32]> {
        if !self.dfa.counter()?.counts_code_points() {
            return None;
        }
        self.counted_any
            .get_or_init(|| table_equivalents(&self.dfa, &body.dfa).map(Vec::into_boxed_slice))
            .as_deref()
    }

    /// For a counted lexeme with states where its count bounds code points
    /// and nothing else (see [`Counter::code_points_alone`]), its automaton
    /// without the count: the token sets of such a state at a character
    /// boundary are its automaton's, less the tokens with too many code
    /// points or a closing quote too early (see
    /// `strings::uncounted_string_info`), and every count shares the walk.
    /// `None` for other lexemes, and for an automaton of
    /// [`EAGER_WALK_ANALYSIS_STATES`] or more (a spelled-out word limit).
    /// Computed at compile time with the count classes (see
    /// [`Self::prepare_walks`]): finding it reads every count.
    ///
    /// [`Counter::code_points_alone`]: crate::compile::lexeme::Counter::code_points_alone
    pub(crate) fn uncounted(&self) -> Option<&Uncounted> {
        self.uncounted
            .get_or_init(|| {
                let counter = self.dfa.counter()?;
                if self.dfa.is_final.len() >= EAGER_WALK_ANALYSIS_STATES {
                    // Its analyses, made at compile time, would be made
                    // again for the copy, in a mask.
                    return None;
                }
                let at_boundary = counter.char_boundaries(&self.dfa);
                let alone = counter.code_points_alone(&self.dfa, &at_boundary);
                if !alone.contains(&true) {
                    return None;
                }
                let at_boundary = at_boundary.iter().zip(&alone).map(|(&b, &a)| b && a);
                let at_boundary = at_boundary.collect();
                Some(Box::new(Uncounted {
                    lexeme: Lexeme::new(Arc::new(self.dfa.without_count()?)),
                    alone: alone.into_boxed_slice(),
                    at_boundary,
                }))
            })
            .as_deref()
    }

    /// [`LexemeDfa::refined_language_key`], computed the first time a
    /// new lexeme's language key collides with this one's.
    pub fn refined_language_key(&self) -> Option<u64> {
        *self
            .refined_key
            .get_or_init(|| self.dfa.refined_language_key())
    }

    /// Whether no state of the automaton's table reads a byte of 0x80 or
    /// above (a date, a time, a hex digest): then its character analysis
    /// says nothing its byte analysis does not, and is skipped. The first
    /// compile of the RFC 3339 date-time (66,000 states) takes 28% fewer
    /// instructions without it.
    pub fn reads_only_ascii(&self) -> bool {
        *self.only_ascii.get_or_init(|| {
            let dfa = &*self.dfa;
            if dfa.num_classes == 0 || matches!(dfa.computed.as_deref(), Some(Computed::Strings(_)))
            {
                // A string trie's states are not the table's.
                return false;
            }
            // The table's rows, through their first bytes (a pass over
            // the whole table was 9% of that first compile).
            dfa.first_bytes.iter().all(|bytes| bytes.is_ascii())
        })
    }

    /// The byte groups (see [`byte_group`]) of the bytes that lead some
    /// state into a final state: a trie subtree with none of them below
    /// cannot end the lexeme there (for a JSON string, only the closing
    /// quote does).
    pub fn ending_groups(&self) -> u64 {
        *self.ending_groups.get_or_init(|| {
            let dfa = &*self.dfa;
            if dfa.computed.is_some() {
                // States beside the table (a count, a string trie) end it
                // too: every group may.
                return u64::MAX;
            }
            // One byte per byte class, with the groups of all its bytes.
            let mut reps: Vec<(u8, u64)> = Vec::with_capacity(dfa.num_classes);
            let mut class_rep = vec![usize::MAX; dfa.num_classes];
            for byte in 0..=255u8 {
                let class = dfa.classes[byte as usize] as usize;
                if class_rep[class] == usize::MAX {
                    class_rep[class] = reps.len();
                    reps.push((byte, 0));
                }
                reps[class_rep[class]].1 |= 1 << byte_group(byte);
            }
            let mut groups = 0;
            for s in 0..dfa.num_states() as u32 {
                for &(byte, bits) in &reps {
                    let t = dfa.next(s, byte);
                    if t != DEAD && dfa.is_final_state(t) {
                        groups |= bits;
                    }
                }
            }
            groups
        })
    }

    /// Approximate heap bytes: the automaton and what the mask path
    /// learned so far.
    pub fn memory(&self) -> usize {
        let analyses = [&self.safe, &self.char_safe]
            .iter()
            .filter_map(|c| c.get())
            .map(SafeGroups::memory)
            .sum::<usize>()
            + self
                .token_classes
                .get()
                .and_then(Option::as_ref)
                .map_or(0, |c| c.len() * 4)
            + self.body_states.get().map_or(0, |b| b.len() * 4)
            + self.body_groups().map_or(0, |b| b.like.len() * 5)
            + self
                .counted_any
                .get()
                .and_then(Option::as_ref)
                .map_or(0, |c| c.len() * 4)
            + self
                .uncounted
                .get()
                .and_then(Option::as_ref)
                .map_or(0, |u| u.lexeme.memory() + 2 * u.alone.len());
        self.dfa.memory()
            + self.infos.len() * (2 * 16 + std::mem::size_of::<OnceLock<Arc<TokenInfo>>>())
            + analyses
            + self.learned_bytes.load(Ordering::Relaxed)
    }

    /// Records `bytes` more kept by this lexeme's lazily filled caches (its
    /// state token sets and subtree walks), which the engine counts
    /// against its budget.
    pub(crate) fn note_learned(&self, bytes: usize) {
        self.learned_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// The safe groups of a lexeme that reads what "any string" reads but for
/// closing quotes (see [`Lexeme::share_body_groups`]): "any string"'s at
/// the state that reads the same strings.
struct BodyGroups {
    /// "Any string".
    body: Arc<Lexeme>,
    /// Per state: the state of `body` that reads the same strings.
    like: Box<[u32]>,
    /// Per state: `body` takes the closing quote there, this lexeme not.
    quote_refused: Box<[bool]>,
}

impl BodyGroups {
    /// `body`'s groups (by bytes, or by characters with `by_char`),
    /// without the quote's group where this lexeme refuses the quote, and
    /// for subtrees taller than one byte (nothing is read after a closing
    /// quote: `body`'s groups never hold it there either).
    #[inline]
    fn groups(&self, trie: &TokenTrie, state: u32, height: u16, by_char: bool) -> u64 {
        let t = self.like[state as usize];
        let groups = if by_char {
            self.body.safe_chars(trie, t, height)
        } else {
            self.body.safe_bytes(trie, t, height)
        };
        if height > 1 || self.quote_refused[state as usize] {
            groups & !QUOTE_GROUP
        } else {
            groups
        }
    }
}
