//! The token sets of parser-rule states ([`parser_state_info`]), walked
//! with the Earley walker; once only lexeme items are left, their DFAs go
//! on alone.

use std::sync::Arc;

use super::earley::Walker;
use super::engine::Engine;
use super::info::{exit_remainder, Exit, TokenInfo};
use super::token_list::TokenList;
use super::trie_walk::{walk_trie, Dfs, PrefixWalk};
use crate::compile::chart::{Chart, Item, CTX_ORIGIN};
use crate::tokensets::CompiledGrammar;
use crate::util::byteset::ByteSet;

/// Token sets of parser-rule state `state`.
///
/// The rules the state calls right away (before reading anything) are not
/// walked here: their token sets, cached by their start states and shared
/// by every state that calls them, are included by reference, and only
/// their exits (tokens that finish the rule and go on in this one) are
/// walked, from the set reached after the rule. An object whose members
/// were compiled into hundreds of states (one per branch and member seen)
/// thus walks its members' keys once, not once per state.
///
/// `sets_of` gives the called rules' token sets: the cache's lookup
/// ([`info_for`](super::cached::info_for)), which calls this walk back for
/// a parser-rule state it does not hold yet. Passed in, so that the walk
/// sits below the cache.
pub fn parser_state_info(
    g: &CompiledGrammar,
    state: u32,
    sets_of: &dyn Fn(u32) -> Arc<TokenInfo>,
) -> TokenInfo {
    let _depth = LookupDepth::enter();
    let empty = Chart::new();
    let mut walker = Walker::new(g, &empty);
    let started = walker.push_kernel(&[Item {
        state,
        origin: CTX_ORIGIN,
    }]);
    if !started {
        // Only an exhausted work budget stops a one-item kernel: the mask
        // fails, and this (empty, partial) info is not cached.
        return TokenInfo::new(
            TokenList::from_ids(Vec::new(), g.engine().vocab()),
            Vec::new(),
            g.engine().vocab(),
        );
    }
    let set0: Vec<Item> = walker.top().to_vec();
    let (called, rest) = called_rules(g, &set0);
    walker.replace_top(&rest);
    let automaton = g.automaton();
    let follow = automaton.rules[automaton.rule_of(state) as usize].follow;
    let trie = g.engine().vocab().trie();
    let mut inside = Vec::new();
    let mut exits = Vec::new();
    walk_trie(trie, &mut walker, &follow, &mut inside, &mut exits);
    let mut shared = Vec::new();
    for li in &called {
        let info = sets_of(li.state);
        if !info.exits.is_empty() {
            // The set right after the rule ends: its callers in set 0,
            // advanced.
            let rule = automaton.rule_of(li.state);
            let mut kernel = Vec::new();
            g.automaton().advance_callers(&set0, rule, &mut kernel);
            walker.truncate(1);
            walker.replace_top(&set0);
            if walker.push_kernel(&kernel) {
                let mut first = ByteSet::EMPTY;
                for x in walker.top() {
                    let f = g.automaton().direct_first(x.state);
                    first |= f;
                }
                let after = walker.top_exited();
                if after {
                    // This rule can end with the lexeme: whatever may follow
                    // the rule may come next.
                    first |= follow;
                }
                let mut dfs = Dfs::new(trie, &follow, &mut inside, &mut exits);
                let mut pw = PrefixWalk::new(2);
                for exit in &info.exits_by_child(trie, &first) {
                    remainder(&mut dfs, g.engine(), &mut walker, &mut pw, exit, after);
                }
            }
        }
        // Small sets are copied in, big ones shared (see COPIED_SET_MAX).
        match &info.inside {
            TokenList::Sparse(ids) if ids.len() <= COPIED_SET_MAX => inside.extend_from_slice(ids),
            _ => shared.push(info.clone()),
        }
        for s in &info.shared {
            shared.push(s.clone());
        }
    }
    let mut info = TokenInfo::new(
        TokenList::from_ids(inside, g.engine().vocab()),
        exits,
        g.engine().vocab(),
    );
    info.shared = shared;
    info
}

/// Token sets of called rules up to this many tokens are copied into the
/// caller's (one list applies faster than several); larger ones are
/// shared, so that a mask whose items call the same rule (the whitespace
/// before a key, in every member state of an object) applies its set once
/// rather than once per item (see `SeenSets`).
const COPIED_SET_MAX: usize = 64;

/// Parser rules called from fewer states are walked where they are
/// called: looking a rule's set up and walking its exits again costs more
/// than walking it in place, unless many states share the set.
const SHARED_RULE_CALL_SITES: u32 = 8;

/// Most sets of rule starts looked up within one another: past it, rules
/// are walked in place, so that a chain of rules each called first by the
/// next cannot overflow the host thread's stack.
const MAX_LOOKUP_DEPTH: u32 = 8;

thread_local! {
    static LOOKUP_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// One [`parser_state_info`] on this thread's stack, for as long as it lives.
struct LookupDepth;

impl LookupDepth {
    fn enter() -> LookupDepth {
        LOOKUP_DEPTH.with(|d| d.set(d.get() + 1));
        LookupDepth
    }

    fn too_deep() -> bool {
        LOOKUP_DEPTH.with(|d| d.get() > MAX_LOOKUP_DEPTH)
    }
}

impl Drop for LookupDepth {
    fn drop(&mut self) {
        LOOKUP_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// The items of `set0` (the closed start set of a walk from one parser
/// state) whose token sets are looked up rather than walked, and the rest.
///
/// Items predicted in set 0 (origin 0) come from calls of the walked
/// state's own items, directly or through other predicted items. The start
/// items of the rules called directly are looked up; the items they
/// predict in turn are part of those rules' sets and are left out.
/// Lexemes are always looked up (they cannot call). Parser rules are all
/// walked in place, with every predicted item, when one of them is
/// left-recursive (its set would wait for itself), has few callers, or
/// lookups are already [`MAX_LOOKUP_DEPTH`] deep.
fn called_rules(g: &CompiledGrammar, set0: &[Item]) -> (Vec<Item>, Vec<Item>) {
    let automaton = g.automaton();
    let mut called_here: Vec<u32> = set0
        .iter()
        .filter(|it| it.origin != 0 && g.automaton().is_parser_state(it.state))
        .flat_map(|it| automaton.call_edges(it.state).iter().map(|&(rule, _)| rule))
        .collect();
    called_here.sort_unstable();
    called_here.dedup();
    let starts_called_rule = |it: &&Item| {
        let rule = automaton.rule_of(it.state);
        it.origin == 0
            && it.state == g.automaton().rule_start(rule)
            && called_here.binary_search(&rule).is_ok()
    };
    let walked_in_place = LookupDepth::too_deep()
        || set0.iter().filter(starts_called_rule).any(|it| {
            let rule = &automaton.rules[automaton.rule_of(it.state) as usize];
            g.automaton().is_parser_state(it.state)
                && (rule.left_recursive || rule.call_sites < SHARED_RULE_CALL_SITES)
        });
    if walked_in_place {
        return set0
            .iter()
            .partition(|it| !g.automaton().is_parser_state(it.state) && it.origin == 0);
    }
    let called = set0.iter().filter(starts_called_rule).copied().collect();
    let rest = set0.iter().filter(|it| it.origin != 0).copied().collect();
    (called, rest)
}

/// Walks the tokens of a rule's `exit` from the set right after the
/// rule (the walker's set 1; `exited`: the walked rule can end there),
/// adding what is inside and what exits the walked rule to `dfs`.
fn remainder(
    dfs: &mut Dfs,
    engine: &Engine,
    walker: &mut Walker,
    pw: &mut PrefixWalk,
    exit: &Exit,
    exited: bool,
) {
    let trie = dfs.trie;
    let c = exit.node as usize;
    let d = exit.depth as usize;
    let rem = exit_remainder(engine.vocab(), exit);
    for (k, &b) in rem.iter().enumerate() {
        dfs.set_path(d + 1 + k, b);
    }
    let reached = pw.reach(walker, rem);
    let readable = match reached {
        Ok(()) => rem.len(),
        Err(k) => k,
    };
    dfs.pending.clear();
    if exited {
        dfs.pending.push(d as u16);
    }
    for (k, &e) in pw.exited()[..readable].iter().enumerate() {
        if e {
            dfs.pending.push((d + 1 + k) as u16);
        }
    }
    if reached.is_err() {
        dfs.pruned(c, exit.below);
        return;
    }
    // Node c itself is read: its tokens are inside (unless the exit is for
    // the tokens below it only).
    if !exit.below {
        let r = trie.tokens_at(c as u32);
        dfs.inside
            .extend_from_slice(&trie.token_ids()[r.start as usize..r.end as usize]);
    }
    dfs.below(walker, c);
}
