//! The token-set layer: what the mask path learns about automata for one
//! vocabulary. Token sets per automaton state, computed once and reused by
//! every mask.
//!
//! For a state `q` of rule `R`, a walk of the token trie from `q` alone,
//! with the caller of `R` unknown, splits the text tokens into:
//! - **inside**: tokens whose bytes can all be read without leaving `R`
//!   (rules called from `R` may be entered and left). They are allowed
//!   whenever an item at `q` is, whatever the context.
//! - **exits**: tokens whose bytes can only be read by finishing `R`
//!   after some prefix and going on in the caller. They are kept as
//!   `(trie node, prefix length)` pairs grouped by the first byte after the
//!   prefix (parser-rule states keep only bytes that can follow `R` in the
//!   grammar; lexeme states keep all, so that grammars share them); the
//!   matcher checks them against the real callers at mask time.
//! - everything else is never allowed at `q`.
//!
//! Lexeme states are walked with the DFA alone, and their results are
//! cached per vocabulary (keyed by the lexeme and the state's token
//! class), so that grammars share them; so are the walks of each first-byte
//! subtree, which many states of a lexeme share. Parser-rule states are
//! walked with the Earley walker and cached per grammar; wherever only
//! lexeme items are left, the walk goes on with their DFAs. Trie subtrees
//! that a DFA state reads entirely (by byte groups, or by characters for
//! multi-byte UTF-8) are taken whole. A mask that meets, beside a lexeme
//! state, another that reads every string it reads before it ends, walks
//! the first only below subtrees where it can end ([`covered`]).
//!
//! The layer's files, bottom-up (a file imports only files on its floor
//! or below; `tests/layers.rs` checks it, ARCHITECTURE.md has the map):
//! [`work`] (the mask's work budget), [`cleared`] (tables cleared when
//! full), [`token_list`] (sets of ids, masks), [`token_chars`] (each
//! token's characters in a JSON string); [`info`] (a state's token sets);
//! [`lexeme`] (an automaton with what masks learned about it), [`context`]
//! (exits by caller context), [`string_counts`] (counted-string tables);
//! [`engine`] (a vocabulary with the caches its grammars share, under one
//! byte budget); [`grammar`] (a compiled grammar with its own caches);
//! [`earley`] (the parser's walker), [`lexeme_walk`] (walks with
//! a DFA alone); [`strings`] (JSON string shortcuts, and `Engine::new`),
//! [`trie_walk`] (the parser's walk of the trie), [`mod@free_exits`];
//! [`parser_walk`] (parser-rule states), [`exits`] (exits checked against
//! the real callers); [`cached`] (where each state's sets and each item's
//! exits are kept);
//! [`covered`] (states a mask walks only where they end, as others read
//! the rest).
//!
//! # The cache register
//!
//! Every cache of the library, with its scope and bound (ARCHITECTURE.md
//! has the same table with the key of each). Clearing any of them changes
//! speed, never a mask. The engine's budget (`cg_vocab_set_cache_budget`,
//! [`DEFAULT_CACHE_BUDGET`]) covers every per-vocabulary cache: 3/4 for
//! the lexemes, 1/8 for each shared table.
//!
//! | cache | where | scope | bound, eviction |
//! |---|---|---|---|
//! | lexemes and regular parts | [`Engine`] store | vocabulary | 3/4 of the budget, each lexeme counted with what it learned; least recently used dropped |
//! | token sets of lexeme states | [`Lexeme`] `infos`, `computed_infos` | vocabulary | the automaton's states; 4,096 computed states, counted or string-trie (new ones used once) |
//! | token sets where a lexeme state can end | [`Lexeme`] `ending_infos` | vocabulary | the automaton's states |
//! | subtree walks, walk analyses | [`Lexeme`] `pieces`, `safe`, `char_safe`, `token_classes`, `body_states` | vocabulary | 4 Mi walk entries; one analysis each |
//! | free exits of lexeme states | [`context::SharedFreeExits`] | vocabulary | 1/8 of the budget; cleared when full |
//! | counted-string token sets | [`string_counts::StringCounts`] `infos` | vocabulary | 1/8 of the budget; cleared when full |
//! | parser-state token sets, token-set lists | [`CompiledGrammar`] | grammar | the grammar's states and sets |
//! | pairs of lexeme states, one reading the other's unended strings | [`CompiledGrammar`] `covers` | grammar | 65,536 answers; cleared when full |
//! | contexts and their exits | [`context::Contexts`] | grammar | 1 Mi contexts, 16 MiB of exits, 16 MiB of free parts; cleared when full |
//! | exits used | [`SequenceExits`] `used` | matcher | 4,096 entries; cleared when full |
//! | closures | [`earley`] walker buffers, kept per thread between walks | one walk | 1,024 closures, cleared when full and when a walk starts; buffers past 1 MiB freed |
//! | count classes | `compile::lexeme::Counter` `classes` | vocabulary (with its lexeme) | one per counted lexeme |
//! | trigger fire sets | `trigger::Triggers` | triggers | 256 sets, 4 Mi ids; cleared when full |
//! | compiled grammars | `grammar_cache::GrammarCache` | process | its byte budget; least recently used |
//! | format expressions, RFC 3339 automata | `regex::formats`, `compile::lexeme::rfc3339` | process | fixed lists |

pub mod cached;
pub mod cleared;
pub mod context;
pub mod covered;
pub mod earley;
pub mod engine;
pub mod exits;
pub mod free_exits;
pub mod grammar;
pub mod info;
pub mod lexeme;
pub mod lexeme_walk;
pub mod parser_walk;
pub mod string_counts;
pub mod strings;
pub mod token_chars;
pub mod token_list;
pub mod trie_walk;
pub mod work;

pub use cached::{ending_info_for, info_for, SequenceExits, UnknownExits};
pub use covered::covered_lexeme_states;
pub use engine::{CacheStats, Engine, DEFAULT_CACHE_BUDGET};
pub use free_exits::free_exits;
pub use grammar::{compile_ir, CompiledGrammar};
pub use info::{exit_remainder, Exit, ExitTokens, FreeExits, SeenSets, TokenInfo};
pub use lexeme::Lexeme;
pub use lexeme::{SubtreeWalk, SubtreeWalks};
pub use token_chars::TokenChars;
pub use token_list::{MaskFill, TokenList};
pub(crate) use trie_walk::{Dfs, PrefixWalk};

#[cfg(test)]
mod tests;
