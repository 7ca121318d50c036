//! Token sets against brute force: every lexeme walk and counted string
//! checked token by token on random vocabularies.

use super::cached::*;
use super::engine::Engine;
use super::lexeme::Lexeme;
use super::lexeme_walk::own_walk_is_long;
use super::strings::*;
use super::token_list::*;
use crate::compile::lexeme::DfaLimits;
use crate::compile::lexeme::DEAD;
use crate::ir::{CharClass, Expr};
use crate::vocab::Vocab;
use std::sync::Arc;

/// The pieces of `alphabet`, and `n` random strings of 2 to `longest +
/// 1` of them (xorshift from `seed`), as a vocabulary.
fn random_engine(alphabet: &[&str], seed: u64, n: usize, longest: usize) -> Arc<Engine> {
    let mut rng = crate::util::test_rng::TestRng::new(seed);
    let mut next = |n: usize| rng.below(n);
    let mut tokens: Vec<Vec<u8>> = alphabet.iter().map(|s| s.as_bytes().to_vec()).collect();
    for _ in 0..n {
        let len = 2 + next(longest);
        let t: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
        tokens.push(t.into_bytes());
    }
    tokens.sort();
    tokens.dedup();
    let flags = vec![0; tokens.len()];
    Engine::new(Vocab::new(tokens, flags, Vec::new()).unwrap())
}

/// `state`'s cached token sets are brute force over the vocabulary:
/// inside = the DFA reads the whole token; exits = (token, d) where
/// the lexeme can end after `d >= 1` bytes and cannot read the token
/// through.
fn assert_token_sets_are_brute_force(engine: &Engine, lexeme: &Lexeme, state: u32, what: &str) {
    let info = lexeme_state_info(engine, lexeme, state);
    let mut inside = vec![0u32; engine.vocab().mask_words()];
    info.inside.or_into(&mut inside);
    let mut exits = std::collections::BTreeSet::new();
    for e in info.exits.iter() {
        let trie = engine.vocab().trie();
        let mut r = trie.subtree_tokens(e.node);
        if e.below {
            r.start = trie.nodes()[e.node as usize + 1].tok_start;
        }
        for &t in &trie.token_ids()[r.start as usize..r.end as usize] {
            exits.insert((t, e.depth as usize));
        }
    }
    let mut want_exits = std::collections::BTreeSet::new();
    for t in 0..engine.vocab().len() as u32 {
        let bytes = engine.vocab().token_bytes(t);
        let mut q = state;
        let mut ends = Vec::new();
        for (d, &b) in bytes.iter().enumerate() {
            if d > 0 && lexeme.dfa().is_final_state(q) {
                ends.push(d);
            }
            q = lexeme.dfa().next(q, b);
            if q == DEAD {
                break;
            }
        }
        let reads = q != DEAD;
        assert_eq!(
            inside[(t / 32) as usize] >> (t % 32) & 1 == 1,
            reads,
            "{what} state {state} token {:?}",
            String::from_utf8_lossy(bytes)
        );
        if !reads {
            want_exits.extend(ends.into_iter().map(|d| (t, d)));
        }
    }
    assert_eq!(exits, want_exits, "{what} state {state}");
}

/// The states of `lexeme` that tokens lead to from its start, breadth first,
/// until there are `limit` (every state reachable within a few tokens).
fn reachable_states(engine: &Engine, lexeme: &Lexeme, limit: usize) -> Vec<u32> {
    let mut states = vec![lexeme.dfa().start];
    let mut seen: crate::util::hash::FastSet<u32> = states.iter().copied().collect();
    let mut i = 0;
    while i < states.len() && states.len() < limit {
        let q0 = states[i];
        for t in 0..engine.vocab().len() as u32 {
            let mut q = q0;
            for &b in engine.vocab().token_bytes(t) {
                q = lexeme.dfa().next(q, b);
                if q == DEAD {
                    break;
                }
                if seen.insert(q) {
                    states.push(q);
                }
            }
        }
        i += 1;
    }
    states
}

/// Every state's token sets of lexemes whose states read letters into
/// different states (names and their complement, "contains",
/// letters-then-digits, a count) equal brute force over a vocabulary
/// of short strings: inside = the DFA reads the whole token; exits =
/// (token, d) where the lexeme can end after `d >= 1` bytes and cannot
/// read the token through.
#[test]
fn lexeme_token_sets_match_brute_force() {
    let engine = random_engine(
        &["a", "b", "c", "n", "e", "t", "_", "1", "\"", "\\", "u", "é"],
        0x9E37_79B9_7F4A_7C15,
        1500,
        5,
    );
    let letters = Expr::Class(CharClass::from_ranges([(0x61, 0x7a), (0x5f, 0x5f)]));
    let contains = Expr::seq(vec![
        Expr::literal("\""),
        Expr::star(letters.clone()),
        Expr::literal("net_"),
        Expr::star(letters.clone()),
        Expr::literal("\""),
    ]);
    let then_digits = Expr::seq(vec![
        Expr::star(letters.clone()),
        Expr::plus(Expr::Class(CharClass::from_ranges([(0x30, 0x39)]))),
    ]);
    let counted = Expr::repeat(Expr::Class(CharClass::any()), 0, Some(5));
    // Counted strings in lexemes that may read on after the quote:
    // whitespace, a comma.
    let chars =
        |lo, hi| crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), lo, Some(hi)));
    let spaced_string = Expr::seq(vec![
        Expr::literal("\""),
        chars(0, 4),
        Expr::literal("\""),
        Expr::star(Expr::Class(CharClass::from_ranges([
            (0x20, 0x20),
            (0x09, 0x09),
        ]))),
    ]);
    let comma_string = Expr::seq(vec![
        Expr::literal("\""),
        chars(2, 3),
        Expr::literal("\""),
        Expr::optional(Expr::literal(",")),
    ]);
    let counted_string = Expr::seq(vec![
        Expr::literal("\""),
        crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), 1, Some(7))),
        Expr::literal("\""),
    ]);
    // A string of exactly 4 characters.
    let fixed_string = Expr::seq(vec![
        Expr::literal("\""),
        crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), 4, Some(4))),
        Expr::literal("\""),
    ]);
    // A fixed-length piece of a string: exactly 5 characters, no quote.
    let chunk = crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), 5, Some(5)));
    let names = ["net", "nab", "ab_c", "é"].map(String::from);
    let cache = &*engine;
    // States that took the shared "any other string", the counted
    // strings' counts, the chunk's and the strings read on after.
    let mut shared = (0, 0, 0, 0);
    for expr in [
        Expr::json_strings(names.clone(), true),
        Expr::json_strings(names, false),
        contains,
        then_digits,
        counted,
        counted_string.clone(),
        fixed_string.clone(),
        chunk.clone(),
        spaced_string.clone(),
        comma_string.clone(),
    ] {
        let lexeme = cache.lexeme(&expr, &DfaLimits::default()).unwrap();
        for state in 0..lexeme.dfa().num_states() as u32 {
            // Through the vocabulary's shared string DFAs where they
            // agree (any other name, the end of a count).
            let s = lexeme.token_class(state, engine.vocab().max_token_len());
            shared.0 += string_body_info(&engine, &lexeme, s).is_some() as usize;
            if string_tail_info(&engine, &lexeme, s).is_some() {
                match &expr {
                    e if *e == chunk => shared.2 += 1,
                    e if *e == counted_string || *e == fixed_string => shared.1 += 1,
                    e if *e == spaced_string || *e == comma_string => shared.3 += 1,
                    _ => {}
                }
            }
            assert_token_sets_are_brute_force(&engine, &lexeme, state, &format!("{expr:?}"));
        }
    }
    assert!(
        shared.0 >= 1 && shared.1 >= 12 && shared.2 >= 5 && shared.3 >= 9,
        "{shared:?} states shared token sets"
    );
}

/// A key that is one of the listed names or any name with a prefix
/// (reaching "any string", but reading less than it right after the
/// opening quote), walked without its safe groups (in a mask that
/// computed its share of them, see `work::take_analysis`): every state's
/// token sets still equal brute force, and the walks left the groups
/// uncomputed.
#[test]
fn key_token_sets_without_safe_groups_match_brute_force() {
    // Most tokens start with letters no name starts with, so that a walk
    // of the key's own states is short (see `own_walk_is_long`).
    let mut alphabet = vec!["a", "b", "c", "n", "e", "t", "_", "1", "\"", "\\", "u", "é"];
    alphabet.extend(
        [
            "d", "f", "g", "h", "i", "k", "m", "o", "p", "r", "s", "v", "w", "y",
        ]
        .repeat(10),
    );
    let engine = random_engine(&alphabet, 0x2545_F491_4F6C_DD1D, 3000, 5);
    let names = ["net", "nab", "ab_c", "é", "tu"].map(String::from);
    let prefixed = Expr::seq(vec![
        Expr::literal("\"x-"),
        crate::ir::encode(&Expr::star(Expr::Class(CharClass::any()))),
        Expr::literal("\""),
    ]);
    let key = Expr::alt(vec![Expr::json_strings(names, false), prefixed]);
    let lexeme = engine.lexeme(&key, &DfaLimits::default()).unwrap();
    // The states whose own walks are short first: they go without the
    // groups, which stay uncomputed until a long walk needs them.
    let (short, long): (Vec<u32>, Vec<u32>) = (0..lexeme.dfa().num_states() as u32)
        .partition(|&s| !own_walk_is_long(&engine, &lexeme, s));
    assert!(short.len() >= 20, "{} states with short walks", short.len());
    let ((), _) = super::work::with_budget(u64::MAX, || {
        while super::work::take_analysis() {}
        for &state in &short {
            assert_token_sets_are_brute_force(&engine, &lexeme, state, "names or x-");
        }
        assert!(
            lexeme.safe_groups_pending(),
            "the short walks computed the safe groups"
        );
        for &state in &long {
            assert_token_sets_are_brute_force(&engine, &lexeme, state, "names or x-");
        }
    });
}

/// A key that is none of the listed names reads what "any string" reads
/// but for the closing quote after a name: its walks take "any string"'s
/// safe groups (computing none of their own), refuse the quote where a
/// name ends, and every state's token sets equal brute force over a
/// vocabulary of names, escapes and quotes. A key limited to listed
/// names, or to a prefix, reads less and keeps its own groups.
#[test]
fn any_other_key_shares_the_safe_groups_of_any_string() {
    let engine = random_engine(
        &[
            "ne", "t", "na", "b", "ab", "_c", "\"", "\\", "u00", "6", "é", "x", ",",
        ],
        0x9E37_79B9_7F4A_7C15,
        2500,
        4,
    );
    let body = engine.string_body().map(|b| &b.lexeme);
    // Names that continue other names: their ends are states of their own.
    let names = ["ne", "net", "na", "nab", "ab", "ab_c", "é", "t", "tu"].map(String::from);
    let other = engine
        .lexeme(
            &Expr::json_strings(names.clone(), true),
            &DfaLimits::default(),
        )
        .unwrap();
    other
        .share_body_groups(body, &crate::limits::Deadline::none())
        .unwrap();
    assert!(other.shares_body_groups());
    // States right after a name, where the closing quote is refused
    // (and any other character read).
    let after_name = (0..other.dfa().num_states() as u32)
        .filter(|&s| other.dfa().next(s, b'"') == DEAD && other.dfa().next(s, b'x') != DEAD)
        .count();
    assert!(after_name >= 4, "{after_name} states after a name");
    // The shared groups hold for this key: every string of up to two
    // bytes of a state's groups is read (the quote's group is left out
    // after a name, where "any string" would take it).
    let trie = engine.vocab().trie();
    for state in 0..other.dfa().num_states() as u32 {
        for height in 1..=2u16 {
            let groups = other.safe_bytes(trie, state, height);
            let bytes: Vec<u8> = (0..=255u8)
                .filter(|&b| groups >> crate::vocab::trie::byte_group(b) & 1 == 1)
                .collect();
            for &b in &bytes {
                let t = other.dfa().next(state, b);
                assert_ne!(t, DEAD, "state {state} height {height} byte {b}");
                if height == 2 {
                    for &c in &bytes {
                        assert_ne!(other.dfa().next(t, c), DEAD, "state {state} bytes {b} {c}");
                    }
                }
            }
        }
        assert_token_sets_are_brute_force(&engine, &other, state, "any other key");
    }
    assert!(
        !other.safe_groups_computed(),
        "computed its own safe groups"
    );
    let listed = engine
        .lexeme(&Expr::json_strings(names, false), &DfaLimits::default())
        .unwrap();
    let prefixed = Expr::seq(vec![
        Expr::literal("\"x-"),
        crate::ir::encode(&Expr::star(Expr::Class(CharClass::any()))),
        Expr::literal("\""),
    ]);
    let prefixed = engine.lexeme(&prefixed, &DfaLimits::default()).unwrap();
    for lexeme in [&listed, &prefixed] {
        lexeme
            .share_body_groups(body, &crate::limits::Deadline::none())
            .unwrap();
        assert!(!lexeme.shares_body_groups());
    }
}

/// A date-time over JSON spellings (66,000 states) reads digits, a few
/// separators and its escapes' hex digits: on a vocabulary where those
/// bytes spell few tokens its walks go node by node, the safe groups are
/// not computed even by the compile-time preparation of large lexemes,
/// and the token sets of the states a few bytes in equal brute force.
#[test]
fn narrow_lexeme_walks_without_safe_groups_match_brute_force() {
    use crate::ir::{Rfc3339, TextForm};
    use crate::limits::Deadline;
    let mut alphabet = vec![
        "\"", "2", "0", "1", "9", "-", ":", "T", "Z", ".", "+", "\\", "u", "e", "00",
    ];
    alphabet.extend(["g", "h", "i", "k", "m", "n", "o", "p", "r", "s", "w", "y"].repeat(20));
    let engine = random_engine(&alphabet, 0x9E37_79B9_7F4A_7C15, 4000, 5);
    let date_time = Expr::Rfc3339(Rfc3339 {
        date: true,
        form: TextForm::Quoted,
    });
    let lexeme = engine.lexeme(&date_time, &DfaLimits::default()).unwrap();
    assert!(
        lexeme.dfa().num_states() > 60_000,
        "{} states",
        lexeme.dfa().num_states()
    );
    assert!(lexeme.spells_few_tokens(engine.vocab().trie()));
    let body = engine.string_body().map(|b| &b.lexeme);
    lexeme
        .prepare_walks(engine.vocab().trie(), body, &Deadline::none())
        .unwrap();
    assert!(!lexeme.safe_groups_computed(), "prepared the safe groups");
    // The states up to 24 bytes in, breadth first: a date, its escapes.
    let mut states = vec![lexeme.dfa().start];
    let mut seen = std::collections::HashSet::from([lexeme.dfa().start]);
    let mut layer = vec![lexeme.dfa().start];
    for _ in 0..24 {
        let mut next = Vec::new();
        for &q in &layer {
            for b in 0..=255u8 {
                let t = lexeme.dfa().next(q, b);
                if t != DEAD && seen.insert(t) {
                    next.push(t);
                }
            }
        }
        states.extend(&next);
        layer = next;
    }
    assert!(states.len() > 200, "{} states", states.len());
    for &state in states.iter().take(400) {
        assert_token_sets_are_brute_force(&engine, &lexeme, state, "date-time");
    }
    assert!(
        !lexeme.safe_groups_computed(),
        "the walks computed the safe groups"
    );
}

/// Counted strings (a pattern's automaton with a count of code points
/// beside it): every reachable (count, state)'s token sets equal brute
/// force over a vocabulary of short strings with escapes, multi-byte
/// characters and quotes, near both bounds and far from them.
#[test]
fn counted_token_sets_match_brute_force() {
    let engine = random_engine(
        &[
            "a", "b", " ", "\"", "\\", "u", "0", "d", "8", "3", "e", "é", "😀", "\\u00e9", "n",
        ],
        0x2545_F491_4F6C_DD1D,
        1200,
        6,
    );
    let any = Expr::Class(CharClass::any());
    let quoted = |e: Expr| {
        Expr::seq(vec![
            Expr::literal("\""),
            crate::ir::encode(&e),
            Expr::literal("\""),
        ])
    };
    let words = Expr::seq(vec![
        Expr::repeat(
            Expr::seq(vec![
                Expr::plus(Expr::Class(CharClass::from_ranges([(0x21, 0x10ffff)]))),
                Expr::plus(Expr::literal(" ")),
            ]),
            0,
            Some(3),
        ),
        Expr::plus(Expr::Class(CharClass::from_ranges([(0x21, 0x10ffff)]))),
    ]);
    let a_then_any = Expr::seq(vec![Expr::literal("a"), Expr::star(any.clone())]);
    let any_string = Expr::star(any.clone());
    // Classes repeated: their counts bound code points alone.
    let letters = Expr::star(Expr::Class(CharClass::from_ranges([
        (u32::from('a'), u32::from('e')),
        (0xe9, 0xe9),
    ])));
    let printable = Expr::star(Expr::Class(CharClass::from_ranges([
        (0x20, 0x7e),
        (0x1f600, 0x1f600),
    ])));
    // Few tokens (a sparse list) besides the single characters.
    let digits = Expr::star(Expr::Class(CharClass::from_ranges([(0x30, 0x39)])));
    let cache = &*engine;
    let horizon = engine.vocab().max_token_len() as u32;
    // States of pure length bounds that took "any string"'s token sets,
    // states of classes that took their automaton's, and states past the
    // `a` of `a.*` that did.
    let (mut shared, mut uncounted, mut past_a) = (0, 0, 0);
    let starts_with_a = quoted(a_then_any.clone());
    for (pattern, min, max) in [
        (words.clone(), 2, Some(12)),
        // Minimums a token's length away: below them only the closing
        // quote depends on the count (`Counter::unclosed_state`).
        (words.clone(), horizon + 4, Some(3 * horizon)),
        (a_then_any.clone(), 2 * horizon, None),
        (a_then_any.clone(), 0, Some(9)),
        (a_then_any, 6, None),
        (words, 5, Some(5)),
        // Pure length bounds: near them, and further than a token reaches.
        (any_string.clone(), 0, Some(4)),
        (any_string.clone(), 3, Some(horizon + 9)),
        (any_string.clone(), horizon + 2, Some(2 * horizon + 2)),
        (any_string.clone(), horizon / 2, None),
        (letters.clone(), 1, Some(7)),
        (letters.clone(), 0, Some(horizon + 3)),
        (letters, horizon + 2, Some(2 * horizon + 2)),
        (printable.clone(), 2, Some(horizon)),
        (printable, 3, None),
        (digits.clone(), 1, Some(4)),
        (digits, 2, Some(horizon)),
    ] {
        let pure = pattern == any_string;
        let pattern = quoted(pattern);
        let key = Expr::And(vec![pattern.clone(), crate::ir::quoted_length(min, max)]);
        let lexeme = cache
            .counted_lexeme(&key, &pattern, min, max, &DfaLimits::default())
            .unwrap()
            .unwrap();
        assert!(lexeme.dfa().counter().is_some());
        let states = reachable_states(&engine, &lexeme, 400);
        for &state in &states {
            if pure && counted_string_info(&engine, &lexeme, state).is_some() {
                shared += 1;
            }
            let class = lexeme.token_class(state, engine.vocab().max_token_len());
            let table = |t: &Lexeme, p| lexeme_state_info(&engine, t, p);
            if !pure && uncounted_string_info(&engine, &lexeme, class, table).is_some() {
                uncounted += 1;
                past_a += usize::from(pattern == starts_with_a);
            }
            assert_token_sets_are_brute_force(&engine, &lexeme, state, &format!("{min}..{max:?}"));
        }
    }
    assert!(
        shared >= 100,
        "{shared} states of pure length bounds shared"
    );
    assert!(
        uncounted >= 100 && past_a >= 10,
        "{uncounted} states uncounted, {past_a} of them past an `a`"
    );
}

/// The distinct states that random walks of whole tokens from the start
/// of `lexeme` pass, each walk going on while some token can be read
/// (mostly one that does not end the lexeme).
fn walked_states(engine: &Engine, lexeme: &Lexeme, walks: usize, seed: u64) -> Vec<u32> {
    let mut rng = crate::util::test_rng::TestRng::new(seed);
    let mut seen: crate::util::hash::FastSet<u32> = crate::util::hash::FastSet::default();
    let mut states = Vec::new();
    let read = |mut q: u32, t: u32| {
        for &b in engine.vocab().token_bytes(t) {
            q = lexeme.dfa().next(q, b);
            if q == DEAD {
                break;
            }
        }
        q
    };
    for _ in 0..walks {
        let mut q = lexeme.dfa().start;
        loop {
            if seen.insert(q) {
                states.push(q);
            }
            let mut next: Vec<u32> = (0..engine.vocab().len() as u32)
                .map(|t| read(q, t))
                .filter(|&r| r != DEAD)
                .collect();
            // Mostly on inside the string, toward its bounds.
            let open: Vec<u32> = next
                .iter()
                .copied()
                .filter(|&r| !lexeme.dfa().is_final_state(r))
                .collect();
            if !open.is_empty() && rng.below(16) != 0 {
                next = open;
            }
            if next.is_empty() {
                break;
            }
            q = next[rng.below(next.len())];
        }
    }
    states
}

/// Word limits under a length bound, counting both (see
/// `compile::lexeme::length_and_iterations`): the token sets of the states
/// random token walks pass, up to both bounds, equal brute force.
#[test]
fn word_limit_token_sets_match_brute_force() {
    use crate::compile::lexeme::Computed;
    let engine = random_engine(
        &[
            "a", "b", " ", "  ", "\"", "\\", "u", "0", "é", "\\u00e9", "\\n", "\\\"",
        ],
        0x5DEE_CE66_D1CE_4E5B,
        1200,
        6,
    );
    let cache = &*engine;
    // `^(?:\S+ +){min,max}\S+$`, non-space being every code point past
    // 0x20, and `^x(?:ab|c){min,max}y?$`.
    let word = Expr::plus(Expr::Class(CharClass::from_ranges([(0x21, 0x10ffff)])));
    let words = |min, max| {
        let iteration = Expr::seq(vec![word.clone(), Expr::plus(Expr::literal(" "))]);
        Expr::seq(vec![Expr::repeat(iteration, min, Some(max)), word.clone()])
    };
    let pieces = |min, max| {
        let piece = Expr::alt(vec![Expr::literal("ab"), Expr::literal("c")]);
        Expr::seq(vec![
            Expr::literal("x"),
            Expr::repeat(piece, min, Some(max)),
            Expr::optional(Expr::literal("y")),
        ])
    };
    let mut walked = 0;
    for (pattern, min, max) in [
        (words(0, 60), 0, 45),
        (words(0, 60), 1, 140),
        (words(3, 70), 0, 160),
        (pieces(2, 300), 2, 60),
    ] {
        let pattern = Expr::JsonQuoted(Arc::new(pattern));
        let key = Expr::And(vec![
            pattern.clone(),
            crate::ir::quoted_length(min, Some(max)),
        ]);
        let lexeme = cache
            .counted_lexeme(&key, &pattern, min, Some(max), &DfaLimits::default())
            .unwrap()
            .unwrap();
        assert!(matches!(
            lexeme.dfa().computed.as_deref(),
            Some(Computed::LengthAndIterations(_))
        ));
        let states = walked_states(&engine, &lexeme, 12, u64::from(max));
        walked += states.len();
        for &state in &states {
            assert_token_sets_are_brute_force(&engine, &lexeme, state, &format!("{min}..{max}"));
        }
    }
    assert!(walked >= 300, "{walked} states walked");
}

/// Expressions of one language (alternatives in another order, a class
/// spelled as alternatives) share one lexeme, and so its token sets;
/// another language does not.
#[test]
fn lexemes_of_one_language_are_shared() {
    let engine = random_engine(&["a", "b", "c", "\""], 0x1234_5678_9ABC_DEF1, 200, 4);
    let (a, b) = (Expr::literal("a"), Expr::literal("b"));
    let quoted = |e: Expr| Expr::seq(vec![Expr::literal("\""), e, Expr::literal("\"")]);
    let one = quoted(Expr::star(Expr::alt(vec![a.clone(), b.clone()])));
    let same = quoted(Expr::star(Expr::Class(CharClass::from_ranges([(
        0x61, 0x62,
    )]))));
    let other = quoted(Expr::plus(Expr::alt(vec![b, a])));
    let limits = DfaLimits::default();
    let before = engine.num_lexemes();
    let (x, y, z) = (
        engine.lexeme(&one, &limits).unwrap(),
        engine.lexeme(&same, &limits).unwrap(),
        engine.lexeme(&other, &limits).unwrap(),
    );
    assert!(Arc::ptr_eq(&x, &y));
    assert!(!Arc::ptr_eq(&x, &z));
    assert_eq!(engine.num_lexemes() - before, 3, "three expressions kept");
}

/// A set of strings large enough to be a string trie (states computed,
/// no table): the token sets of every state reachable within a few
/// tokens, escapes and multi-byte characters included, are brute force.
#[test]
fn string_trie_token_sets_match_brute_force() {
    let engine = random_engine(
        &[
            "a",
            "b",
            "e",
            "0",
            "D",
            "\"",
            "\\",
            "u",
            "n",
            "é",
            "\u{1F600}",
            "\u{D7FF}",
            "d8",
        ],
        0xD1B5_4A32_D192_ED03,
        1500,
        5,
    );
    let pool = [
        'a', 'b', 'e', '0', 'D', '"', '\\', '\n', 'é', '😀', '\u{D7FF}',
    ];
    let mut rng = crate::util::test_rng::TestRng::new(0x2545_F491_4F6C_DD1D);
    let mut next = |n: usize| rng.below(n);
    let values: Vec<String> = (0..1500)
        .map(|_| (0..3 + next(8)).map(|_| pool[next(pool.len())]).collect())
        .collect();
    let expr = Expr::json_strings(values, false);
    let lexeme = engine.lexeme(&expr, &DfaLimits::default()).unwrap();
    assert!(matches!(
        lexeme.dfa().computed.as_deref(),
        Some(crate::compile::lexeme::Computed::Strings(_))
    ));
    let states = reachable_states(&engine, &lexeme, 300);
    assert!(states.len() > 100, "{} states reached", states.len());
    for &state in &states {
        assert_token_sets_are_brute_force(&engine, &lexeme, state, "string trie");
    }
}

/// Tokens longer than the per-token character counts hold (255): a
/// string counting past them is walked, and its token sets are what
/// its DFA reads.
#[test]
fn counts_past_255_characters() {
    let mut tokens: Vec<Vec<u8>> = vec![b"a".to_vec(), b"\"".to_vec()];
    for n in [200, 260, 300] {
        tokens.push(vec![b'a'; n]);
        let mut closed = vec![b'a'; n];
        closed.push(b'"');
        tokens.push(closed);
    }
    let flags = vec![0; tokens.len()];
    let engine = Engine::new(Vocab::new(tokens, flags, Vec::new()).unwrap());
    let expr = Expr::seq(vec![
        Expr::literal("\""),
        crate::ir::encode(&Expr::repeat(Expr::Class(CharClass::any()), 0, Some(280))),
        Expr::literal("\""),
    ]);
    let lexeme = engine.lexeme(&expr, &DfaLimits::default()).unwrap();
    let mut state = lexeme.dfa().next(lexeme.dfa().start, b'"');
    for _ in 0..40 {
        // 280 characters left, then 279, ... 241 (counted where at
        // most 254): each as its DFA reads.
        let info = lexeme_state_info(&engine, &lexeme, state);
        let mut inside = vec![0u32; engine.vocab().mask_words()];
        info.inside.or_into(&mut inside);
        for t in 0..engine.vocab().len() as u32 {
            let mut q = state;
            for &b in engine.vocab().token_bytes(t) {
                q = lexeme.dfa().next(q, b);
                if q == DEAD {
                    break;
                }
            }
            assert_eq!(
                inside[t as usize / 32] >> (t % 32) & 1 == 1,
                q != DEAD,
                "token {t}"
            );
        }
        state = lexeme.dfa().next(state, b'a');
    }
}

/// Dense, complemented and sparse sets from trie ranges hold the same
/// tokens as the ids those ranges name.
#[test]
fn token_lists_from_trie_ranges() {
    // 200 text tokens, one special token, one empty one.
    let mut tokens: Vec<Vec<u8>> = (0..200u32).map(|i| format!("t{i}").into_bytes()).collect();
    tokens.push(b"<s>".to_vec());
    tokens.push(Vec::new());
    let mut flags = vec![0; 202];
    flags[200] = crate::vocab::TOKEN_SPECIAL;
    let vocab = Vocab::new(tokens, flags, vec![200]).unwrap();
    let n = vocab.trie().token_ids().len() as u32;
    for ranges in [
        vec![(0, n)],
        vec![(0, 5), (9, n - 3)],
        vec![(3, 40)],
        vec![(7, 9), (100, 101)],
    ] {
        let ids: Vec<u32> = ranges
            .iter()
            .flat_map(|&(lo, hi)| vocab.trie().token_ids()[lo as usize..hi as usize].to_vec())
            .collect();
        let mut want = vec![0u32; vocab.mask_words()];
        TokenList::from_ids(ids, &vocab).or_into(&mut want);
        let mut got = vec![0u32; vocab.mask_words()];
        TokenList::from_trie_ranges(&ranges, &vocab).or_into(&mut got);
        assert_eq!(got, want, "{ranges:?}");
    }
}

/// A state's token sets where its lexeme can end (what a mask walks when
/// other states read its unended strings, see `covered`): the same exits
/// as its full sets, and every inside token of the full sets except those
/// read without ending the lexeme (and, on this vocabulary, some of
/// those are left out: the walk skipped subtrees).
#[test]
fn ending_token_sets_keep_exits_and_ended_tokens() {
    let engine = random_engine(
        &["a", "b", "c", " ", "\"", "\\", "n", "é", ":"],
        0x2545_F491_4F6C_DD1D,
        1500,
        5,
    );
    let not = |bytes: &str| {
        let refused = CharClass::from_ranges(bytes.chars().map(|c| (c as u32, c as u32)));
        Expr::star(Expr::Class(refused.negate()))
    };
    let quote = || Expr::literal("\"");
    let exprs = [
        // "contains a", "no a", "a but no b", a key read on by spaces.
        Expr::seq(vec![
            quote(),
            not("\"a"),
            Expr::literal("a"),
            not("\""),
            quote(),
        ]),
        Expr::seq(vec![quote(), not("\"a"), quote()]),
        Expr::seq(vec![
            quote(),
            not("\"ab"),
            Expr::literal("a"),
            not("\"b"),
            quote(),
        ]),
        Expr::seq(vec![
            quote(),
            not("\"a"),
            quote(),
            Expr::star(Expr::literal(" ")),
        ]),
    ];
    let mut skipped = 0;
    for expr in exprs {
        let lexeme = engine.lexeme(&expr, &DfaLimits::default()).unwrap();
        for state in reachable_states(&engine, &lexeme, 64) {
            let s = lexeme.token_class(state, engine.vocab().max_token_len());
            // Before the full sets: their kept subtree walks would serve.
            let ending = super::lexeme_walk::lexeme_ending_info(&engine, &lexeme, s);
            let full = lexeme_state_info(&engine, &lexeme, s);
            let key = |e: &super::info::Exit| (e.node, e.depth, e.first, e.below);
            let mut want: Vec<_> = full.exits.iter().map(key).collect();
            let mut got: Vec<_> = ending.exits.iter().map(key).collect();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "{expr:?} state {state}: exits");
            let (mut full_inside, mut ending_inside) = (
                vec![0u32; engine.vocab().mask_words()],
                vec![0u32; engine.vocab().mask_words()],
            );
            full.inside.or_into(&mut full_inside);
            ending.inside.or_into(&mut ending_inside);
            for t in 0..engine.vocab().len() as u32 {
                let bit = |m: &[u32]| m[(t / 32) as usize] >> (t % 32) & 1 == 1;
                let (f, e) = (bit(&full_inside), bit(&ending_inside));
                assert!(!e || f, "{expr:?} state {state}: token {t} not inside");
                if f && !e {
                    // Left out: read without ending the lexeme.
                    let mut q = s;
                    for &b in engine.vocab().token_bytes(t) {
                        q = lexeme.dfa().next(q, b);
                        assert!(
                            !lexeme.dfa().is_final_state(q),
                            "{expr:?} state {state}: token {t} ends"
                        );
                    }
                    skipped += 1;
                }
            }
        }
    }
    assert!(skipped > 100, "only {skipped} unended tokens left out");
}

/// Keys that admit any name but their own ("any string but `abc`", "any
/// string but `abx`", ...) read the same tokens right after the opening
/// quote where no token spells a whole name and its quote: their states
/// there share one set (see `Engine::walked_token_sets`), and every state
/// whose sets (kept as a whole mask) equal another's by content shares
/// its set, each equal to brute force.
#[test]
fn lexeme_states_reading_the_same_tokens_share_their_sets() {
    // Tokens of at most three pieces: none holds a name of three letters
    // and a quote.
    let engine = random_engine(
        &["a", "b", "c", "x", "y", "\"", ":", " "],
        0x9E37_79B9_7F4A_7C15,
        400,
        2,
    );
    // (inside mask, exits) -> the sets found with them.
    type Content = (Vec<u32>, Vec<(u32, u16, u8, bool)>);
    let mut by_content: std::collections::HashMap<Content, Vec<_>> = Default::default();
    let mut after_quote = Vec::new();
    for names in [["abc", "cab"], ["abx", "cab"], ["acb", "xyz"]] {
        let expr = Expr::json_strings(names.map(String::from), true);
        let lexeme = engine.lexeme(&expr, &DfaLimits::default()).unwrap();
        for state in reachable_states(&engine, &lexeme, 64) {
            assert_token_sets_are_brute_force(&engine, &lexeme, state, "other names");
            let info = lexeme_state_info(&engine, &lexeme, state);
            let mut inside = vec![0u32; engine.vocab().mask_words()];
            info.inside.or_into(&mut inside);
            let mut exits: Vec<_> = info
                .exits
                .iter()
                .map(|e| (e.node, e.depth, e.first, e.below))
                .collect();
            exits.sort_unstable();
            by_content
                .entry((inside, exits))
                .or_default()
                .push(info.clone());
            if state == lexeme.dfa().next(lexeme.dfa().start, b'"') {
                after_quote.push(info);
            }
        }
    }
    // (Sets small enough to be kept as lists are not shared.)
    for infos in by_content.values() {
        if matches!(infos[0].inside, TokenList::Sparse(_)) {
            continue;
        }
        assert!(
            infos.iter().all(|i| Arc::ptr_eq(i, &infos[0])),
            "equal sets not shared"
        );
    }
    assert_eq!(after_quote.len(), 3);
    assert!(
        after_quote.iter().all(|i| Arc::ptr_eq(i, &after_quote[0])),
        "the keys' sets after the quote are not shared"
    );
}
