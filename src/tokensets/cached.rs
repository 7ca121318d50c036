//! Where a state's token sets are looked up and, on first use, computed
//! and kept ([`info_for`]): per grammar for parser-rule states, per
//! vocabulary for lexeme states; and where the exits of an item, checked
//! against its real callers, are ([`SequenceExits::exits_for`]): per
//! sequence, per grammar and context, or walked.

use std::sync::Arc;

use super::context::NO_CTX;
use super::engine::Engine;
use super::exits::{context_of, exit_tokens, ContextMemo};
use super::info::{ExitTokens, TokenInfo};
use super::lexeme::Lexeme;
use super::lexeme_walk::{lexeme_ending_info, lexeme_info};
use super::parser_walk::parser_state_info;
use super::strings::{
    counted_string_info, string_body_info, string_tail_info, uncounted_string_info,
};
use super::token_list::MaskFill;
use super::work;
use crate::compile::chart::{Chart, Item, NO_ORIGIN};
use crate::tokensets::CompiledGrammar;

/// The cached token sets of any state (computed on first use). A parser
/// state's sets computed when the mask's work budget ran out are partial:
/// returned, never cached (see [`super::work`]).
pub fn info_for(g: &CompiledGrammar, state: u32) -> Arc<TokenInfo> {
    if g.automaton().is_parser_state(state) {
        let cell = &g.parser_state_infos[state as usize];
        if let Some(info) = cell.get() {
            return info.clone();
        }
        let info = Arc::new(parser_state_info(g, state, &|s| info_for(g, s)));
        if super::work::exhausted() {
            return info;
        }
        cell.get_or_init(|| info).clone()
    } else {
        let (lexeme, s) = g.lexeme_state(state);
        lexeme_state_info(g.engine(), lexeme, s)
    }
}

/// The cached token sets of state `s` of a lexeme: its own, or those of
/// the vocabulary's shared string DFAs where they agree.
pub(crate) fn lexeme_state_info(engine: &Engine, lexeme: &Lexeme, s: u32) -> Arc<TokenInfo> {
    if lexeme.dfa().computed.is_some() {
        if let Some(info) = counted_string_info(engine, lexeme, s) {
            return info;
        }
    }
    // States that no token can tell apart share one token set.
    let s = lexeme.token_class(s, engine.vocab().max_token_len());
    if lexeme.dfa().computed.is_some() {
        if let Some(info) = lexeme.computed_infos.lock().get(&s) {
            return info.clone();
        }
        let info = uncounted_string_info(engine, lexeme, s, |t, p| lexeme_state_info(engine, t, p))
            .unwrap_or_else(|| lexeme_info(engine, lexeme, s));
        let mut infos = lexeme.computed_infos.lock();
        if infos.len() < super::lexeme::MAX_COMPUTED_INFOS {
            lexeme.note_learned(info.memory());
            infos.insert(s, info.clone());
        }
        return info;
    }
    lexeme.infos[s as usize]
        .get_or_init(|| {
            string_body_info(engine, lexeme, s)
                .or_else(|| string_tail_info(engine, lexeme, s))
                .unwrap_or_else(|| {
                    let info = lexeme_info(engine, lexeme, s);
                    lexeme.note_learned(info.memory());
                    info
                })
        })
        .clone()
}

/// The token sets of lexeme state `state` for a mask whose other states
/// read its unended strings (see [`super::covered`]): its full sets if
/// known, else those of the subtrees where it can end (see
/// [`lexeme_ending_info`]), kept beside the full sets.
pub fn ending_info_for(g: &CompiledGrammar, state: u32) -> Arc<TokenInfo> {
    let (lexeme, s) = g.lexeme_state(state);
    let engine = g.engine();
    if lexeme.dfa().computed.is_some() {
        return lexeme_state_info(engine, lexeme, s);
    }
    let s = lexeme.token_class(s, engine.vocab().max_token_len());
    if let Some(info) = lexeme.infos[s as usize].get() {
        return info.clone();
    }
    if let Some(info) = lexeme.ending_infos.lock().get(&s) {
        return info.clone();
    }
    let info = lexeme_ending_info(engine, lexeme, s);
    let mut kept = lexeme.ending_infos.lock();
    // Another thread's sets for the state, if first, stay.
    kept.entry(s)
        .or_insert_with(|| {
            lexeme.note_learned(info.memory());
            info
        })
        .clone()
}

/// Whether the full token sets of lexeme state `state` cost a mask no
/// walk of its own: kept already, or "any string"'s. Computed states
/// (counts, string tries) count as known: their sets are never left to
/// another state's.
pub(crate) fn lexeme_info_known(g: &CompiledGrammar, state: u32) -> bool {
    let (lexeme, s) = g.lexeme_state(state);
    if lexeme.dfa().computed.is_some() {
        return true;
    }
    let engine = g.engine();
    let class = lexeme.token_class(s, engine.vocab().max_token_len());
    lexeme.infos[class as usize].get().is_some()
        || engine.string_body().is_some_and(|b| {
            lexeme.string_body_states(&b.body).get(class as usize) == Some(&b.body.state)
        })
}

/// Whether the token sets where lexeme state `state` can end are kept
/// (see [`ending_info_for`]).
pub(crate) fn ending_info_known(g: &CompiledGrammar, state: u32) -> bool {
    let (lexeme, s) = g.lexeme_state(state);
    let class = lexeme.token_class(s, g.engine().vocab().max_token_len());
    lexeme.ending_infos.lock().contains_key(&class)
}

/// Most `(state, context)` exit lists a sequence keeps for itself.
const SEQUENCE_EXIT_CACHE: usize = 4096;

/// A sequence's own exit tokens by `(state, context)` (see
/// [`SequenceExits`]).
type UsedExits = crate::util::hash::FastMap<(u32, u32), Arc<ExitTokens>>;

/// Keeps `tokens` in a sequence's own exit tokens, which are cleared past
/// [`SEQUENCE_EXIT_CACHE`] entries.
fn keep_exits(exits: &mut UsedExits, key: (u32, u32), tokens: Arc<ExitTokens>) {
    if exits.len() >= SEQUENCE_EXIT_CACHE {
        exits.clear();
    }
    exits.insert(key, tokens);
}

/// What one sequence's masks learn about exits (a matcher owns one): the
/// context of each of its chart's origins, and the exit tokens its masks
/// used. A mask asks [`SequenceExits::exits_for`] for each item's exits
/// after [`info_for`] gave the item's sets: known exits go into the mask
/// at once, read without the grammar-wide lock and without touching
/// shared reference counts, so that matchers on different threads do not
/// contend; the others are walked together at the end
/// ([`SequenceExits::add_unknown_exits`]).
#[derive(Default)]
pub struct SequenceExits {
    /// Contexts by `(origin, rule)`: positions of the chart, dropped with
    /// the sets they name.
    contexts: ContextMemo,
    /// Exit tokens by `(state, context)`. Context ids are position-free,
    /// so entries survive rollbacks and resets.
    used: UsedExits,
}

/// Items of one mask whose exits no cache holds (see
/// [`SequenceExits::exits_for`]): their token sets, the item, its context.
#[derive(Default)]
pub struct UnknownExits(Vec<(Arc<TokenInfo>, Item, u32)>);

impl Clone for SequenceExits {
    fn clone(&self) -> Self {
        SequenceExits {
            contexts: self.contexts.clone(),
            // A cache: a clone (jump-forward probes, samplers cloned by the
            // runtime) starts without it rather than paying for its copy.
            used: Default::default(),
        }
    }
}

impl SequenceExits {
    /// Forgets every chart position (the sequence starts over).
    pub fn clear_positions(&mut self) {
        self.contexts.clear();
    }

    /// Forgets the chart positions from `sets` on (a rollback).
    pub fn truncate_positions(&mut self, sets: usize) {
        self.contexts
            .retain(|&(origin, _), _| (origin as usize) < sets);
    }

    /// Puts into `mask` the exit tokens of item `it` of the chart's last
    /// set, whose token sets are `info`, where a cache holds them; else
    /// adds the item to `unknown`, for [`Self::add_unknown_exits`].
    pub fn exits_for(
        &mut self,
        g: &CompiledGrammar,
        chart: &Chart,
        it: Item,
        info: Arc<TokenInfo>,
        mask: &mut MaskFill,
        unknown: &mut UnknownExits,
    ) {
        if info.exits.is_empty() || it.origin == NO_ORIGIN {
            return;
        }
        let rule = g.automaton().rule_of(it.state);
        let ctx = context_of(g, chart, &mut self.contexts, it.origin, rule);
        if ctx != NO_CTX {
            if let Some(tokens) = self.used.get(&(it.state, ctx)) {
                tokens.or_into(mask);
                return;
            }
            if let Some(tokens) = g.contexts.exits(it.state, ctx) {
                tokens.or_into(mask);
                keep_exits(&mut self.used, (it.state, ctx), tokens);
                return;
            }
        }
        unknown.0.push((info, it, ctx));
    }

    /// Adds to `mask` the exit tokens of `unknown` items (token sets, item,
    /// context) that no cache held, and keeps them: in the grammar's
    /// contexts, and in the sequence's own (`used`).
    ///
    /// Lexeme items with the same token sets are walked together, the union
    /// of their exits kept under the list of their `(state, context)`: an
    /// object in forty variants that each admit other names meets, after
    /// `{"`, forty keys ("any string but these names") that read the same
    /// tokens, and each walked the same exits (`":`, `": {`, ...) into the
    /// same value: 6.8M of that mask's 24M instructions. Parser-rule items,
    /// and lexeme items alone with their sets, are walked alone and kept by
    /// `(state, context)`.
    pub fn add_unknown_exits(
        &mut self,
        g: &CompiledGrammar,
        chart: &Chart,
        unknown: UnknownExits,
        mask: &mut MaskFill,
    ) {
        let mut unknown = unknown.0;
        // Items of one state in one context read the same exits: once.
        unknown.sort_by_key(|(info, it, ctx)| (info.id(), it.state, *ctx));
        unknown.dedup_by(|a, b| a.2 != NO_CTX && (a.1.state, a.2) == (b.1.state, b.2));
        let automaton = g.automaton();
        let together = |a: &(Arc<TokenInfo>, Item, u32), b: &(Arc<TokenInfo>, Item, u32)| {
            a.0.id() == b.0.id()
                && !automaton.is_parser_state(a.1.state)
                && !automaton.is_parser_state(b.1.state)
        };
        for group in unknown.chunk_by(together) {
            let key: Option<Box<[(u32, u32)]>> = match group {
                [_] => None,
                _ if group.iter().any(|u| u.2 == NO_CTX) => None,
                _ => Some(group.iter().map(|u| (u.1.state, u.2)).collect()),
            };
            if let Some(tokens) = key.as_deref().and_then(|k| g.contexts.group_exits(k)) {
                tokens.or_into(mask);
                continue;
            }
            let items: Vec<Item> = group.iter().map(|u| u.1).collect();
            let tokens = exit_tokens(g, chart, &items, &group[0].0);
            if work::exhausted() {
                // Partial: the mask fails, nothing is kept.
                return;
            }
            let tokens = Arc::new(tokens);
            tokens.or_into(mask);
            match (group, key) {
                (_, Some(key)) => g.contexts.store_group_exits(key, tokens),
                ([(_, it, ctx)], None) if *ctx != NO_CTX => {
                    g.contexts.store_exits(it.state, *ctx, tokens.clone());
                    keep_exits(&mut self.used, (it.state, *ctx), tokens);
                }
                _ => {}
            }
        }
    }

    /// Approximate heap bytes.
    pub fn memory(&self) -> usize {
        self.contexts.capacity() * 12 + self.used.capacity() * 24
    }
}
