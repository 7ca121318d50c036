//! A compiled grammar as matchers use it: the compile layer's immutable
//! [`Automaton`], its lexemes as the engine keeps them (each with what
//! masks learned about it), and the caches of this grammar alone: the
//! token sets of its parser-rule states, the tokens of its token sets, and
//! its parser contexts. The C handle `cg_grammar` is one.

use std::sync::{Arc, OnceLock};

use super::context::Contexts;
use super::engine::Engine;
use super::info::TokenInfo;
use super::lexeme::Lexeme;
use super::token_list::TokenList;
use crate::compile::{Automaton, IrOptions, RuleKind};
use crate::error::Result;
use crate::ir;
use crate::limits::Deadline;
use crate::util::hash::FastMap;
use crate::util::sync::CacheMutex;

/// A grammar compiled for one engine's vocabulary; immutable and shareable
/// across threads (its caches fill lazily behind locks).
pub struct CompiledGrammar {
    automaton: Automaton,
    engine: Arc<Engine>,
    /// Per compiled rule: its lexeme (`None` for parser rules).
    lexemes: Box<[Option<Arc<Lexeme>>]>,
    /// The tokens each token set allows (end-of-sequence ids never).
    pub(crate) token_set_lists: Vec<TokenList>,
    /// Lazily computed token sets of parser-rule states.
    pub(crate) parser_state_infos: Vec<OnceLock<Arc<TokenInfo>>>,
    /// Interned parser contexts and the exit tokens cached by them.
    pub(crate) contexts: Contexts,
    /// Whether one lexeme state reads every string another reads, by the
    /// pair of states (see [`super::covered`]); cleared past
    /// [`super::covered::MAX_COVER_PAIRS`].
    pub(crate) covers: CacheMutex<FastMap<(u32, u32), bool>>,
}

/// Dropping a grammar is where its engine drops what the cache evicted
/// meanwhile (see `Engine::release_evicted`).
impl Drop for CompiledGrammar {
    fn drop(&mut self) {
        self.engine.release_evicted();
    }
}

impl CompiledGrammar {
    /// `automaton` (compiled with `engine` as its lexeme source) bound to
    /// the engine's lexemes. Large lexemes get their walk analyses now
    /// (see [`Lexeme::prepare_walks`]): an error once `deadline` passes.
    pub fn new(
        engine: &Arc<Engine>,
        automaton: Automaton,
        deadline: &Deadline,
    ) -> Result<Arc<CompiledGrammar>> {
        let mut lexemes = Vec::with_capacity(automaton.rules.len());
        for rule in &automaton.rules {
            lexemes.push(match &rule.kind {
                RuleKind::Lexeme { dfa, .. } => {
                    let lexeme = engine.lexeme_of(dfa);
                    let body = engine.string_body().map(|b| &b.lexeme);
                    lexeme
                        .prepare_walks(engine.vocab().trie(), body, deadline)
                        .map_err(|err| err.context(format!("rule '{}'", rule.name)))?;
                    Some(lexeme)
                }
                RuleKind::Parser { .. } => None,
            });
        }
        let token_set_lists = automaton
            .token_sets
            .iter()
            .map(|ts| {
                let ids: Vec<u32> = if ts.negated {
                    (0..engine.vocab().len() as u32)
                        .filter(|&t| !engine.vocab().is_eos(t) && ts.contains(t))
                        .collect()
                } else {
                    // Unmatchable ids are gone (`compile::compile_ir`).
                    ts.ids.clone()
                };
                TokenList::from_ids(ids, engine.vocab())
            })
            .collect();
        let parser_state_infos = (0..automaton.parser_states.len())
            .map(|_| OnceLock::new())
            .collect();
        Ok(Arc::new(CompiledGrammar {
            automaton,
            engine: engine.clone(),
            lexemes: lexemes.into_boxed_slice(),
            token_set_lists,
            parser_state_infos,
            contexts: Contexts::default(),
            covers: CacheMutex::new("grammar covers", FastMap::default()),
        }))
    }

    /// The engine (the vocabulary with its caches) the grammar was
    /// compiled for.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The immutable automaton; this grammar's caches stay here.
    #[inline(always)]
    pub fn automaton(&self) -> &Automaton {
        &self.automaton
    }

    /// The lexeme and local state of a lexeme state.
    #[inline(always)]
    pub(crate) fn lexeme_state(&self, state: u32) -> (&Lexeme, u32) {
        let rule = self.automaton().rule_of(state);
        match (
            &self.lexemes[rule as usize],
            &self.automaton().rules[rule as usize].kind,
        ) {
            (Some(lexeme), RuleKind::Lexeme { base, .. }) => (lexeme, state - base),
            _ => unreachable!("not a lexeme state"),
        }
    }

    /// [`Self::lexeme_state`] for a walk of the trie that takes subtrees
    /// whole by the lexeme's safe groups: a lexeme that reads what "any
    /// string" reads shares its groups from the first walk on (see
    /// [`Lexeme::share_body_groups`]).
    #[inline(always)]
    pub(crate) fn walked_lexeme_state(&self, state: u32) -> (&Lexeme, u32) {
        let (lexeme, s) = self.lexeme_state(state);
        if !lexeme.body_groups_decided() {
            self.engine.share_body_groups(lexeme);
        }
        (lexeme, s)
    }

    /// Approximate heap bytes of the grammar (lexeme DFAs shared with
    /// other grammars are counted in full), not counting lazily computed
    /// token sets.
    pub fn memory(&self) -> usize {
        self.automaton.memory()
            + self.parser_state_infos.len() * std::mem::size_of::<OnceLock<Arc<TokenInfo>>>()
    }
}

/// Compiles IR for an engine's vocabulary.
pub fn compile_ir(
    engine: &Arc<Engine>,
    grammar: &ir::Grammar,
    options: &IrOptions,
) -> Result<Arc<CompiledGrammar>> {
    let automaton = crate::compile::compile_ir(&**engine, engine.vocab(), grammar, options)?;
    CompiledGrammar::new(engine, automaton, &options.deadline)
}
