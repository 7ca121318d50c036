//! The exit tokens of an item at mask time: the tokens that leave its
//! rule mid-token, checked against the item's real callers in the chart
//! (walks of the trie from the callers' states), and the position-free
//! context ids those results are cached under (see [`super::context`]).

use std::sync::Arc;

use super::context::{NO_CTX, ROOT_CTX};
use super::earley::{self, LexemeWalk, Walker};
use super::grammar::CompiledGrammar;
use super::token_list::TokenList;
use crate::compile::chart::{Chart, Item, NO_ORIGIN};
use crate::util::byteset::ByteSet;

/// Context ids (see [`super::context`]) of `(origin, rule)`: the callers in chart
/// set `origin` of a rule started there. They depend only on sets up to
/// `origin`, which never change while the output grows; rollback drops the
/// entries it invalidates.
pub(crate) type ContextMemo = crate::util::hash::FastMap<(u32, u32), u32>;

/// The exit tokens of items `items` (see [`super::info`]), all with token
/// sets `info`, that their real callers can read to the end: of one item,
/// or of several lexeme items at once (a walk from all their callers
/// together reads what a walk from any one of them reads, and an Earley
/// set shares what they predict alike).
pub(crate) fn exit_tokens(
    g: &CompiledGrammar,
    chart: &Chart,
    items: &[Item],
    info: &Arc<crate::tokensets::TokenInfo>,
) -> crate::tokensets::ExitTokens {
    debug_assert!(
        items.len() == 1
            || items
                .iter()
                .all(|it| !g.automaton().is_parser_state(it.state))
    );
    let mut out = Vec::new();
    let mut shared = None;
    // The rules of the items finish mid-token: go on in their real callers.
    let mut kernel = Vec::new();
    for it in items {
        g.automaton().advance_callers(
            chart.set(it.origin as usize),
            g.automaton().rule_of(it.state),
            &mut kernel,
        );
    }
    let it = items[0];
    let mut walker = Walker::new(g, chart);
    if !walker.push_kernel(&kernel) {
        return crate::tokensets::ExitTokens {
            free: None,
            rest: TokenList::from_ids(out, g.engine().vocab()),
        };
    }
    let mut first = ByteSet::EMPTY;
    for x in walker.top() {
        let f = g.automaton().direct_first(x.state);
        first |= f;
    }
    let mut pw = crate::tokensets::PrefixWalk::new(1);
    match lexemes_next(g, walker.top()) {
        Some((next, states)) => {
            // Only lexemes read next: what they read before one of them can
            // end is the same in every context; only the rest is walked here.
            // (`first` is what they read.) After a lexeme, the same for
            // every grammar of the vocabulary.
            let compute = || crate::tokensets::free_exits(g.engine(), info, &first, next);
            let free = if g.automaton().is_parser_state(it.state) {
                g.contexts.free_exits(it.state, &states, compute)
            } else {
                let mut next: Vec<(u64, u32)> = next
                    .lexemes
                    .iter()
                    .zip(&next.states)
                    .filter_map(|(d, &s)| d.map(|d| (d.dfa().id, s)))
                    .collect();
                next.sort_unstable();
                g.engine().free_exits.get(info, &next, compute)
            };
            for exit in free.whole.iter() {
                check_exit(g, &mut walker, &mut pw, exit, &mut out);
            }
            for &(node, depth) in free.syncs.iter() {
                walk_below_sync(g, &mut walker, node, depth, &mut out);
            }
            shared = Some(free);
        }
        None => {
            for exit in &info.exits_by_child(g.engine().vocab().trie(), &first) {
                check_exit(g, &mut walker, &mut pw, exit, &mut out);
            }
        }
    }
    crate::tokensets::ExitTokens {
        free: shared,
        rest: TokenList::from_ids(out, g.engine().vocab()),
    }
}

/// When every item of `set` that reads bytes is inside a lexeme (at most
/// [`earley::MAX_LEXEME_WALK`]): those lexemes, and their item states
/// sorted (a key for what they read).
pub(crate) fn lexemes_next<'g>(
    g: &'g CompiledGrammar,
    set: &[Item],
) -> Option<(LexemeWalk<'g>, Vec<u32>)> {
    let mut states = Vec::new();
    for it in set {
        if !g.automaton().can_scan(it.state) || states.contains(&it.state) {
            continue;
        }
        if g.automaton().is_parser_state(it.state) || states.len() == earley::MAX_LEXEME_WALK {
            return None;
        }
        states.push(it.state);
    }
    if states.is_empty() {
        return None;
    }
    states.sort_unstable();
    let mut walk = LexemeWalk {
        lexemes: [None; earley::MAX_LEXEME_WALK],
        states: [crate::compile::lexeme::DEAD; earley::MAX_LEXEME_WALK],
    };
    for (k, &st) in states.iter().enumerate() {
        let (lexeme, s) = g.walked_lexeme_state(st);
        walk.lexemes[k] = Some(lexeme);
        walk.states[k] = s;
    }
    Some((walk, states))
}

/// Where a lexeme read after an exit can end (see [`crate::tokensets::FreeExits`]):
/// the real parser reads the bytes of node `node`'s path from `depth` on
/// (from the walker's first set) and walks the tokens below the node.
pub(crate) fn walk_below_sync(
    g: &CompiledGrammar,
    walker: &mut Walker,
    node: u32,
    depth: u16,
    out: &mut Vec<u32>,
) {
    let trie = g.engine().vocab().trie();
    walker.truncate(1);
    for &b in &trie.path(node)[depth as usize..] {
        if !walker.push_byte(b) {
            return;
        }
    }
    let none = ByteSet::EMPTY;
    let mut exits = Vec::new();
    let mut dfs = crate::tokensets::Dfs::new(trie, &none, out, &mut exits);
    dfs.below(walker, node as usize);
}

/// The context id of rule `rule` started at chart set `origin` (see
/// [`super::context`]), memoized; computed bottom-up without recursion.
pub(crate) fn context_of(
    g: &CompiledGrammar,
    chart: &Chart,
    memo: &mut ContextMemo,
    origin: u32,
    rule: u32,
) -> u32 {
    if origin == NO_ORIGIN {
        return ROOT_CTX;
    }
    if let Some(&c) = memo.get(&(origin, rule)) {
        return c;
    }
    let mut stack: Vec<(u32, u32)> = vec![(origin, rule)];
    while let Some(&(o, r)) = stack.last() {
        if memo.contains_key(&(o, r)) {
            stack.pop();
            continue;
        }
        let mut callers = Vec::new();
        let mut missing = None;
        let mut uncached = false;
        'parents: for parent in chart.set(o as usize) {
            if !g.automaton().is_parser_state(parent.state) {
                continue;
            }
            for &(cr, t) in g.automaton().call_edges(parent.state) {
                if cr != r {
                    continue;
                }
                let pc = if parent.origin == NO_ORIGIN {
                    ROOT_CTX
                } else {
                    let key = (parent.origin, g.automaton().rule_of(parent.state));
                    match memo.get(&key) {
                        Some(&c) => c,
                        None if stack.contains(&key) => {
                            // A cycle (left recursion at one position).
                            uncached = true;
                            break 'parents;
                        }
                        None => {
                            missing = Some(key);
                            break 'parents;
                        }
                    }
                };
                uncached |= pc == NO_CTX;
                callers.push((t, pc));
            }
        }
        if let Some(m) = missing {
            stack.push(m);
            continue;
        }
        let id = if uncached {
            NO_CTX
        } else {
            g.contexts.intern(callers)
        };
        memo.insert((o, r), id);
        stack.pop();
    }
    memo[&(origin, rule)]
}

/// Collects the tokens of `exit` that the walker (holding the set right
/// after the rule finished) can read to the end.
pub(crate) fn check_exit(
    g: &CompiledGrammar,
    walker: &mut Walker,
    pw: &mut crate::tokensets::PrefixWalk,
    exit: &crate::tokensets::Exit,
    out: &mut Vec<u32>,
) {
    let rem = crate::tokensets::exit_remainder(g.engine().vocab(), exit);
    if pw.reach(walker, rem).is_err() {
        return;
    }
    // No item here has an unknown caller, so nothing exits: no follow set.
    let none = ByteSet::EMPTY;
    let mut exits = Vec::new();
    let mut dfs = crate::tokensets::Dfs::new(g.engine().vocab().trie(), &none, out, &mut exits);
    if !exit.below {
        dfs.accept_node(exit.node as usize);
    }
    dfs.below(walker, exit.node as usize);
}
