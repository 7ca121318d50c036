//! Where a state's token sets are looked up and, on first use, computed
//! and kept ([`info_for`]): per grammar for parser-rule states, per
//! vocabulary for lexeme states.

use std::sync::Arc;

use super::engine::Engine;
use super::info::TokenInfo;
use super::lexeme::Lexeme;
use super::lexeme_walk::lexeme_info;
use super::parser_walk::structural_info;
use super::strings::{counted_string_info, string_body_info, string_tail_info};
use crate::tokensets::CompiledGrammar;

/// The cached token sets of any state (computed on first use). A parser
/// state's sets computed when the mask's work budget ran out are partial:
/// returned, never cached (see [`super::work`]).
pub fn info_for(g: &CompiledGrammar, state: u32) -> Arc<TokenInfo> {
    if g.is_structural(state) {
        let cell = &g.structural_infos[state as usize];
        if let Some(info) = cell.get() {
            return info.clone();
        }
        let info = Arc::new(structural_info(g, state));
        if super::work::exhausted() {
            return info;
        }
        cell.get_or_init(|| info).clone()
    } else {
        let (dfa, s) = g.lexeme_state(state);
        lexeme_state_info(g.vocab(), dfa, s)
    }
}

/// The cached token sets of state `s` of a lexeme: its own, or those of
/// the vocabulary's shared string DFAs where they agree.
pub(crate) fn lexeme_state_info(vocab: &Engine, dfa: &Lexeme, s: u32) -> Arc<TokenInfo> {
    if dfa.computed.is_some() {
        if let Some(info) = counted_string_info(vocab, dfa, s) {
            return info;
        }
    }
    // States that no token can tell apart share one token set.
    let s = dfa.token_class(s, vocab.max_token_len());
    if dfa.computed.is_some() {
        if let Some(info) = dfa.computed_infos.lock().unwrap().get(&s) {
            return info.clone();
        }
        let info = Arc::new(lexeme_info(vocab, dfa, s));
        let mut infos = dfa.computed_infos.lock().unwrap();
        if infos.len() < super::lexeme::MAX_COMPUTED_INFOS {
            dfa.note_learned(info.memory());
            infos.insert(s, info.clone());
        }
        return info;
    }
    dfa.infos[s as usize]
        .get_or_init(|| {
            string_body_info(vocab, dfa, s)
                .or_else(|| string_tail_info(vocab, dfa, s))
                .unwrap_or_else(|| {
                    let info = lexeme_info(vocab, dfa, s);
                    dfa.note_learned(info.memory());
                    Arc::new(info)
                })
        })
        .clone()
}
