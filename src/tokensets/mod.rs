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
//! multi-byte UTF-8) are taken whole.
//!
//! The layer's files, by job: [`info`] (a state's token sets),
//! [`token_list`] (sets of ids, masks), [`trie_walk`] and [`earley`] (parser
//! walks of the trie), [`lexeme_walk`] (walks with a DFA alone),
//! [`parser_walk`], [`mod@free_exits`], [`context`] (exits by caller
//! context), [`strings`] (JSON string shortcuts), [`cached`] (where each
//! state's sets are kept), [`work`] (the mask's work budget).

pub mod cached;
pub mod context;
pub mod earley;
pub mod engine;
pub mod free_exits;
pub mod grammar;
pub mod info;
pub mod lexeme;
pub mod lexeme_walk;
pub mod parser_walk;
pub mod string_counts;
pub mod strings;
pub mod token_list;
pub mod trie_walk;
pub mod work;

pub use cached::info_for;
pub use engine::{CacheStats, Engine, DEFAULT_CACHE_BUDGET};
pub use free_exits::{free_exits, FreeExits};
pub use grammar::{compile_ir, CompiledGrammar};
pub use info::{exit_remainder, Exit, ExitTokens, PrefixWalk, SeenSets, TokenInfo};
pub use lexeme::Lexeme;
pub use lexeme_walk::SubtreeWalks;
pub use strings::{prepare_strings, TokenChars};
pub use token_list::{MaskFill, TokenList};
pub(crate) use trie_walk::Dfs;

#[cfg(test)]
mod tests;
