//! Shortcuts for JSON strings, the most common lexeme: states of "any
//! other string" share the vocabulary's token sets, counted strings near
//! their bound share them by how many characters are left (and those of
//! other counted strings share their automaton's walks the same way), and
//! [`TokenChars`] knows how many characters each token adds.

use std::sync::Arc;

use super::engine::Engine;
use super::info::TokenInfo;
use super::lexeme::Lexeme;
use super::lexeme_walk::{lexeme_info, subtree_walk, DfaWalk};
use super::string_counts::{CountedKey, CountedString, StringCounts};
use super::token_chars::{TokenChars, MAX_COUNTED_CHARS};
use super::token_list::TokenList;
use crate::compile::lexeme::{Counter, DEAD};
use crate::vocab::{TokenTrie, Vocab};

/// The token sets of a state inside "any other string", shared through the
/// vocabulary's [`StringBody`] (`None` if `state` is not such a state).
pub(crate) fn string_body_info(
    engine: &Engine,
    lexeme: &Lexeme,
    state: u32,
) -> Option<Arc<TokenInfo>> {
    let body = engine.string_body()?;
    if lexeme.string_body_state(&body.body) != state {
        return None;
    }
    any_string_info(engine).cloned()
}

/// The token sets of [`StringBody`]'s state.
fn any_string_info(engine: &Engine) -> Option<&Arc<TokenInfo>> {
    let body = engine.string_body()?;
    any_string_state_info(engine, body.body.state)
}

/// The token sets of state `s` of "any string".
fn any_string_state_info(engine: &Engine, s: u32) -> Option<&Arc<TokenInfo>> {
    let any = &engine.string_body()?.lexeme;
    Some(any.infos[s as usize].get_or_init(|| lexeme_info(engine, any, s)))
}

/// The token sets of a state of a counted lexeme whose automaton is "any
/// string" (a pure length bound, see [`Lexeme::counted_any_string`]):
/// "any string"'s, less the tokens that the count left forbids, shared
/// with every such lexeme and with the tables' strings near their bounds
/// (see [`string_tail_info`]). `None` where the count left is not read
/// off the state alone: within a character, near a bound.
pub(crate) fn counted_string_info(
    engine: &Engine,
    lexeme: &Lexeme,
    state: u32,
) -> Option<Arc<TokenInfo>> {
    let counter = lexeme.dfa().counter()?;
    let any = engine.string_body()?;
    let like = lexeme.counted_any_string(&any.body)?;
    let (p, count) = counter.state_and_count(state);
    if !counter.is_inside(p) {
        return None;
    }
    let any_state = like[p as usize];
    match chars_left(engine, counter, count)? {
        CharsLeft::Any => any_string_state_info(engine, any_state).cloned(),
        CharsLeft::Within { min, max } => {
            let counts = engine.string_counts()?;
            if !counts.at_boundary(any_state) {
                return None;
            }
            let lang = CountedString {
                min: min as u16,
                max: max as u16,
                closed: true,
            };
            shared_counted_info(counts, (lang, None), || {
                let body = any_string_info(engine)?;
                Some(body.within_chars(engine.vocab(), &counts.chars, min, max))
            })
        }
    }
}

/// The token sets of state `state` of a counted lexeme where its count
/// bounds code points alone (see [`Lexeme::uncounted`]), from those of its
/// automaton without the count (`table`, given that lexeme and state):
/// those, less the tokens that the count left forbids. Every count of a
/// state shares one walk, where a walk per count near the maximum read
/// every token of up to that many code points one trie node at a time.
/// `None` for other lexemes, and where the count left is not read off the
/// state alone (within a character, near a bound).
pub(crate) fn uncounted_string_info(
    engine: &Engine,
    lexeme: &Lexeme,
    state: u32,
    table: impl FnOnce(&Lexeme, u32) -> Arc<TokenInfo>,
) -> Option<Arc<TokenInfo>> {
    let counter = lexeme.dfa().counter()?;
    let uncounted = lexeme.uncounted()?;
    let (p, count) = counter.state_and_count(state);
    if !uncounted.alone[p as usize] {
        return None;
    }
    match chars_left(engine, counter, count)? {
        // Far from the bounds the automaton's own: its walks are shared
        // with the counts near them.
        CharsLeft::Any => Some(table(&uncounted.lexeme, p)),
        CharsLeft::Within { min, max } => {
            // Token code points are counted from a character boundary.
            if !uncounted.at_boundary[p as usize] {
                return None;
            }
            let counts = engine.string_counts()?;
            let info = table(&uncounted.lexeme, p);
            Some(Arc::new(info.within_chars(
                engine.vocab(),
                &counts.chars,
                min,
                max,
            )))
        }
    }
}

/// What the count of a counted string leaves of its automaton's token
/// sets (see [`chars_left`]).
enum CharsLeft {
    /// All of them: no token holds enough code points to reach a bound.
    Any,
    /// The tokens with at most `max` code points before a closing quote,
    /// and with at least `min` where they hold one.
    Within { min: usize, max: usize },
}

/// What count `count` of `counter` (of code points) leaves; `None` where
/// a token may hold more code points than [`TokenChars`] count and the
/// maximum is past them.
fn chars_left(engine: &Engine, counter: &Counter, count: u32) -> Option<CharsLeft> {
    let horizon = counted_horizon(engine);
    let (min, max) = counter.bounds();
    let least = min.saturating_sub(count) as usize;
    // A live state's count is within the maximum.
    let most = max.map(|m| m.saturating_sub(count) as usize);
    // No token holds more characters than the count has left.
    let roomy = most.is_none_or(|m| m > horizon) && engine.vocab().max_token_len() <= horizon;
    if roomy && least == 0 {
        return Some(CharsLeft::Any);
    }
    if !roomy && most.is_none_or(|m| m > horizon) {
        return None;
    }
    // Past the horizon, "at least `least`, at most `horizon`" takes the
    // same tokens as "at least `least`, any number": none has more.
    Some(CharsLeft::Within {
        min: least.min(horizon + 1),
        max: most.map_or(horizon, |m| m.min(horizon)),
    })
}

/// The token sets kept in `counts` under `key`, or those `compute` gives,
/// then kept.
fn shared_counted_info(
    counts: &StringCounts,
    key: CountedKey,
    compute: impl FnOnce() -> Option<TokenInfo>,
) -> Option<Arc<TokenInfo>> {
    if let Some(info) = counts.infos.lock().get(&key) {
        return Some(info.clone());
    }
    let info = Arc::new(compute()?);
    counts.infos.lock().insert(key, info.clone(), info.memory());
    Some(info)
}

/// The token sets of a counted JSON string's state near its bound (or of
/// a fixed-length piece of a string), shared through the vocabulary's [`StringCounts`] (`None` if
/// `state` is not such a state).
pub(crate) fn string_tail_info(
    engine: &Engine,
    lexeme: &Lexeme,
    state: u32,
) -> Option<Arc<TokenInfo>> {
    if lexeme.dfa().computed.is_some() || lexeme.dfa().is_final[state as usize] {
        return None;
    }
    let counts = engine.string_counts()?;
    let lang = counted_language(engine, lexeme, state)?;
    let after_quote = counts.accepts_counted(lexeme.dfa(), state, lang)?;
    // Where the string ends the lexeme, the token sets are the count's
    // alone, shared by every lexeme.
    let ends = after_quote == DEAD
        || (lexeme.dfa().is_final[after_quote as usize]
            && lexeme.dfa().first_bytes[after_quote as usize].is_empty());
    let key = (lang, (!ends).then_some((lexeme.dfa().id, after_quote)));
    shared_counted_info(counts, key, || {
        // "Any string" counted: its token sets, less the tokens holding
        // too many (or too few) characters.
        let body = any_string_info(engine)?;
        let (min, max) = (lang.min as usize, lang.max as usize);
        Some(if !lang.closed {
            body.exactly_chars(
                engine.vocab(),
                &counts.chars,
                max,
                &counts.nodes_by_chars[max],
            )
        } else if ends {
            body.within_chars(engine.vocab(), &counts.chars, min, max)
        } else {
            then_reading(
                body.within_chars(engine.vocab(), &counts.chars, min, max),
                engine,
                lexeme,
                after_quote,
            )
        })
    })
}

/// The longest count [`StringCounts`] handles: the longest token, or
/// [`MAX_COUNTED_CHARS`].
fn counted_horizon(engine: &Engine) -> usize {
    engine.vocab().max_token_len().min(MAX_COUNTED_CHARS)
}

/// The [`CountedString`] that `state` would accept, from the runs of a
/// plain character it reads (unchecked; `None` if its count reaches past
/// [`counted_horizon`]).
fn counted_language(engine: &Engine, lexeme: &Lexeme, state: u32) -> Option<CountedString> {
    let horizon = counted_horizon(engine);
    let max = lexeme.dfa().run_length(state, b'a', horizon + 1);
    if max > horizon {
        return None;
    }
    let mut s = state;
    for read in 0..=max {
        // The lexeme can end at the quote (and may read more after it, see
        // `StringCounts::accepts_counted`). Lexemes that must read more
        // (a key and its colon) are not looked at: checking their states
        // cost the typical mask more than it saved.
        let quote = lexeme.dfa().next(s, b'"');
        if quote != DEAD && lexeme.dfa().is_final[quote as usize] {
            return Some(CountedString {
                min: read as u16,
                max: max as u16,
                closed: true,
            });
        }
        if read < max {
            s = lexeme.dfa().next(s, b'a');
        }
    }
    lexeme.dfa().is_final[s as usize].then_some(CountedString {
        min: max as u16,
        max: max as u16,
        closed: false,
    })
}

impl Engine {
    /// An engine for `vocab`, with the tables that JSON strings share
    /// built now rather than by the first mask that needs them (which would
    /// take several milliseconds longer than any other). It lives here, not
    /// in `engine.rs`: building them walks the trie, and the walks sit
    /// above the engine.
    pub fn new(vocab: Vocab) -> Arc<Engine> {
        let engine = Engine::without_string_tables(vocab);
        prepare_strings(&engine);
        engine
    }
}

/// Builds the vocabulary's token sets and tables that JSON strings share
/// ("any string" and [`StringCounts`]); each takes a walk of the whole
/// trie or of every token.
fn prepare_strings(engine: &Engine) {
    if any_string_info(engine).is_none() {
        return;
    }
    engine.prepare_string_counts(|counts| {
        let horizon = counted_horizon(engine);
        let exact = CountedString {
            min: horizon as u16,
            max: horizon as u16,
            closed: false,
        };
        let nodes = nodes_by_chars(engine.vocab().trie(), counts, exact);
        (TokenChars::new(engine.vocab()), nodes)
    });
}

/// The trie nodes with children whose path is whole characters of a
/// string and no quote, by their number of characters (see
/// [`StringCounts`]): one walk of the trie with `exact`, "exactly `H`
/// characters" (`H` the longest token).
fn nodes_by_chars(
    trie: &TokenTrie,
    counts: &StringCounts,
    exact: CountedString,
) -> Box<[Box<[u32]>]> {
    let horizon = exact.max as usize;
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); horizon + 1];
    let nodes = trie.nodes();
    let mut states = vec![DEAD; trie.max_len() + 1];
    states[0] = StringCounts::START;
    let mut i = 0;
    while i < trie.root_end() as usize {
        let n = nodes[i];
        let d = n.depth as usize;
        let s = counts.next(exact, states[d - 1], n.byte);
        if s == DEAD {
            i = n.subtree_end as usize;
            continue;
        }
        states[d] = s;
        if let Some(r) = counts.chars_read(s) {
            if i + 1 < n.subtree_end as usize {
                out[r].push(i as u32);
            }
        }
        i += 1;
    }
    out.into_iter().map(Vec::into_boxed_slice).collect()
}

/// The token sets of a counted string (`info`, see
/// [`TokenInfo::within_chars`]) in a lexeme that goes on from state
/// `after_quote` of `lexeme` after the closing quote: the tokens that
/// leave the string at its quote (its exits, all below a quote node)
/// are read on by the lexeme, a walk below each quote node (few tokens
/// go on after a quote).
fn then_reading(info: TokenInfo, engine: &Engine, lexeme: &Lexeme, after_quote: u32) -> TokenInfo {
    let trie = engine.vocab().trie();
    let mut words = vec![0u32; engine.vocab().mask_words()];
    info.inside.or_into(&mut words);
    let mut walk = DfaWalk::new(engine, lexeme);
    let mut exits = Vec::new();
    for e in info.exits.iter() {
        debug_assert!(e.at_node(trie), "an exit of a string not at its quote");
        let piece = subtree_walk(&mut walk, e.node as usize, after_quote);
        for &(lo, hi) in piece.ranges.iter() {
            for &id in &trie.token_ids()[lo as usize..hi as usize] {
                words[id as usize >> 5] |= 1 << (id & 31);
            }
        }
        exits.extend_from_slice(&piece.exits);
    }
    TokenInfo::new(
        TokenList::Dense(words.into_boxed_slice()),
        exits,
        engine.vocab(),
    )
}
