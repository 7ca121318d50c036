//! Where a state's token sets are looked up and, on first use, computed
//! and kept ([`info_for`]): per grammar for parser-rule states, per
//! vocabulary for lexeme states.

use std::sync::Arc;

use super::engine::Engine;
use super::info::TokenInfo;
use super::lexeme::Lexeme;
use super::lexeme_walk::{lexeme_ending_info, lexeme_info};
use super::parser_walk::parser_state_info;
use super::strings::{
    counted_string_info, string_body_info, string_tail_info, uncounted_string_info,
};
use crate::tokensets::CompiledGrammar;

/// The cached token sets of any state (computed on first use). A parser
/// state's sets computed when the mask's work budget ran out are partial:
/// returned, never cached (see [`super::work`]).
pub fn info_for(g: &CompiledGrammar, state: u32) -> Arc<TokenInfo> {
    if g.is_parser_state(state) {
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
