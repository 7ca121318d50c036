//! The exits of a lexeme state that do not depend on the context
//! ([`FreeExits`]): tokens whose rest the lexemes that read next decide
//! alone, shared by every grammar of the vocabulary.

use super::earley::{LexemeWalk, MAX_LEXEME_WALK};
use super::engine::Engine;
use super::info::{exit_remainder, FreeExits, TokenInfo};
use super::token_list::TokenList;
use crate::compile::lexeme::DEAD;
use crate::util::byteset::ByteSet;

/// Walks the exits of `info` whose first byte is in `first` with the DFAs of
/// `next` alone (the lexeme items that can read the first byte after the
/// walked lexeme ends, and nothing else can): tokens are collected until
/// one of the lexemes can end; there the walk stops and notes where the
/// parser must take over.
pub fn free_exits(
    engine: &Engine,
    info: &TokenInfo,
    first: &ByteSet,
    next: LexemeWalk,
) -> FreeExits {
    let trie = engine.vocab().trie();
    let nodes = trie.nodes();
    let step = |from: &[u32; MAX_LEXEME_WALK], b: u8| {
        let s = next.step(from, b);
        (s.states, s.alive, s.can_end)
    };
    let mut tokens: Vec<u32> = Vec::new();
    let mut syncs = Vec::new();
    let mut whole = Vec::new();
    let mut stack: Vec<[u32; MAX_LEXEME_WALK]> = Vec::new();
    let add = |tokens: &mut Vec<u32>, r: std::ops::Range<u32>| {
        tokens.extend_from_slice(&trie.token_ids()[r.start as usize..r.end as usize]);
    };
    let at_node = info.exits_at_node().iter();
    'exits: for exit in info.exits_starting_with(first).chain(at_node) {
        let rem = exit_remainder(engine.vocab(), exit);
        let mut states = next.states;
        for (i, &b) in rem.iter().enumerate() {
            let (to, alive, can_end) = step(&states, b);
            if !alive {
                continue 'exits;
            }
            if can_end && i + 1 < rem.len() {
                whole.push(*exit);
                continue 'exits;
            }
            states = to;
        }
        let c = exit.node as usize;
        if !exit.below {
            add(&mut tokens, trie.tokens_at(c as u32));
        }
        // (A lexeme of `next` that can end before reading anything is
        // followed by items of `next` too: nothing for the parser there.)
        let can_end = !rem.is_empty()
            && next
                .lexemes
                .iter()
                .zip(&states)
                .any(|(d, &st)| d.is_some_and(|d| st != DEAD && d.dfa().is_final_state(st)));
        if can_end {
            // Only the tokens below the node are left to the parser.
            if c + 1 < nodes[c].subtree_end as usize {
                syncs.push((c as u32, exit.depth));
            }
            continue;
        }
        // Below the exit's node, as `Dfs::dfa_subtree` without a parser;
        // all at once where the lexemes read every string there.
        if next.reads_subtree(trie, c as u32, &states) {
            add(
                &mut tokens,
                trie.nodes()[c + 1].tok_start..trie.subtree_tokens(c as u32).end,
            );
            continue;
        }
        let top = nodes[c].depth as usize;
        stack.clear();
        stack.push(states);
        let mut j = c + 1;
        while j < nodes[c].subtree_end as usize {
            let n = nodes[j];
            let rel = n.depth as usize - top;
            stack.truncate(rel);
            let (to, alive, can_end) = step(&stack[rel - 1], n.byte);
            if !alive {
                j = n.subtree_end as usize;
                continue;
            }
            if can_end {
                add(&mut tokens, trie.tokens_at(j as u32));
                if j + 1 < n.subtree_end as usize {
                    syncs.push((j as u32, exit.depth));
                }
                j = n.subtree_end as usize;
                continue;
            }
            if next.reads_subtree(trie, j as u32, &to) {
                add(&mut tokens, trie.subtree_tokens(j as u32));
                j = n.subtree_end as usize;
                continue;
            }
            add(&mut tokens, trie.tokens_at(j as u32));
            stack.push(to);
            j += 1;
        }
    }
    FreeExits {
        tokens: TokenList::from_ids(tokens, engine.vocab()),
        syncs: syncs.into_boxed_slice(),
        whole: whole.into_boxed_slice(),
    }
}
