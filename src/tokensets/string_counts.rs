//! Counted JSON strings near their bounds ([`StringCounts`]): the count
//! of characters read as a walk of "any string"'s states, shared by every
//! lexeme of the vocabulary, so that a string near its `maxLength` takes
//! token sets derived from those of "any string" instead of a walk of the
//! trie.

use std::sync::Arc;

use super::cleared::ClearedWhenFull;
use super::info::TokenInfo;
use super::token_chars::TokenChars;
use crate::compile::lexeme::{class_pair_reps, ContentStates, LexemeDfa, StringBody, DEAD};
use crate::util::sync::CacheMutex;

/// Counted JSON strings near their bounds, whichever schema they come
/// from: a state that accepts "between `min` and `max` more characters,
/// then the closing quote", or "exactly `max` more characters" (a piece of
/// a string that another lexeme goes on with), with `max` at most the
/// longest token (and 254), takes token sets derived from those of "any string" by
/// counting each token's characters once per vocabulary (see
/// `tokensets::strings::string_tail_info`), instead of walking the trie near
/// its bound, where few subtrees are read whole (2-10 ms each).
pub struct StringCounts {
    any: Arc<LexemeDfa>,
    states: ContentStates,
    /// Per token, its characters read inside a string.
    pub chars: TokenChars,
    /// `nodes_by_chars[r]`: the trie nodes with children whose path is `r`
    /// whole characters of a string (no quote).
    pub nodes_by_chars: Box<[Box<[u32]>]>,
    /// Token sets by [`CountedString`] and, for lexemes that read more
    /// after the closing quote, by their id and state there.
    pub infos: CacheMutex<ClearedWhenFull<CountedKey, Arc<TokenInfo>>>,
}

/// A [`CountedString`], and the lexeme (id) and its state after the
/// closing quote where the lexeme reads more there.
pub type CountedKey = (CountedString, Option<(u64, u32)>);

/// A language of [`StringCounts`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CountedString {
    pub min: u16,
    pub max: u16,
    /// Ends with the closing quote (else with the `max`-th character).
    pub closed: bool,
}

impl StringCounts {
    /// The state of every [`CountedString`] right after the opening quote
    /// (see [`StringCounts::next`]).
    pub const START: u32 = 0;
    /// The state after the closing quote.
    const END: u32 = u32::MAX - 1;

    /// The state of `lang` after reading `byte` in state `from`, or
    /// [`DEAD`]: states are computed, not stored, as "any string"'s states
    /// between the quotes times the characters read (`read * m + q`, a
    /// character being read when the walk returns to the state after the
    /// opening quote), and states that cannot end are dead.
    #[inline(always)]
    pub fn next(&self, lang: CountedString, from: u32, byte: u8) -> u32 {
        if from == Self::END {
            return DEAD;
        }
        let (any, content) = (&self.any, &self.states.content);
        let m = content.len() as u32;
        let (read, q) = (from / m, from % m);
        let t = any.table_next(content[q as usize], byte);
        if t == DEAD {
            DEAD
        } else if any.is_final[t as usize] {
            if lang.closed && q == 0 && read >= lang.min as u32 {
                Self::END
            } else {
                DEAD
            }
        } else if read >= lang.max as u32 {
            // A character begun or ended past the count.
            DEAD
        } else {
            match self.states.index[t as usize] {
                0 => (read + 1) * m,
                i => read * m + i,
            }
        }
    }

    /// Whether `lang` can end in `state`.
    pub fn is_final(&self, lang: CountedString, state: u32) -> bool {
        if lang.closed {
            state == Self::END
        } else {
            state == self.after_chars(lang.max as usize)
        }
    }

    /// The whole characters read to reach `state`, if it is at a
    /// character boundary.
    pub fn chars_read(&self, state: u32) -> Option<usize> {
        let m = self.states.content.len() as u32;
        (state != Self::END && state.is_multiple_of(m)).then_some((state / m) as usize)
    }

    /// Whether state `any_state` of "any string" is at a character
    /// boundary between the quotes (where [`StringCounts::START`] is).
    pub fn at_boundary(&self, any_state: u32) -> bool {
        self.states.index.get(any_state as usize) == Some(&0)
    }

    /// The state after `read` whole characters.
    fn after_chars(&self, read: usize) -> u32 {
        (read * self.states.content.len()) as u32
    }

    /// Whether state `state` of `dfa` reads `lang`'s strings up to their
    /// closing quote (a walk of the pairs of states that the same strings
    /// reach) and then goes on in one state, whatever the count: that
    /// state (`Some(DEAD)` for "exactly" languages, which read no quote).
    /// A lexeme may read more after the quote (an array item's whitespace).
    /// `dfa` has no [`Computed`](crate::compile::lexeme::Computed) states (its table is read directly).
    pub fn accepts_counted(&self, dfa: &LexemeDfa, state: u32, lang: CountedString) -> Option<u32> {
        debug_assert!(dfa.computed.is_none());
        let reps = class_pair_reps(dfa, &self.any);
        let mut pairs: crate::util::hash::FastSet<(u32, u32)> = Default::default();
        let mut stack = vec![(state, Self::START)];
        pairs.insert((state, Self::START));
        let mut after_quote = DEAD;
        while let Some((s, t)) = stack.pop() {
            if dfa.is_final[s as usize] != self.is_final(lang, t) {
                return None;
            }
            for &byte in &reps {
                let (s2, t2) = (dfa.table_next(s, byte), self.next(lang, t, byte));
                if (s2 == DEAD) != (t2 == DEAD) {
                    return None;
                }
                if t2 == Self::END {
                    if after_quote != DEAD && after_quote != s2 {
                        return None;
                    }
                    after_quote = s2;
                } else if s2 != DEAD && pairs.insert((s2, t2)) {
                    stack.push((s2, t2));
                }
            }
        }
        Some(after_quote)
    }
}

impl StringCounts {
    /// The tables of "any string" (`body`), with no token counts yet
    /// ([`StringCounts::chars`] and [`StringCounts::nodes_by_chars`] are
    /// filled by the engine), keeping at most `limit` bytes of token sets.
    pub fn new(body: &StringBody, limit: usize) -> StringCounts {
        StringCounts {
            any: body.dfa.clone(),
            states: ContentStates::new(&body.dfa, body.state),
            chars: TokenChars::default(),
            nodes_by_chars: Box::default(),
            infos: CacheMutex::new("engine counted-string sets", ClearedWhenFull::new(limit)),
        }
    }
}
