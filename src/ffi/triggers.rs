//! `cg_triggers` and lazy matchers: grammars that start when a trigger
//! word, pattern or token appears (llama-server's tool calls).

use std::ffi::{c_char, c_int, CStr};
use std::sync::Arc;

use super::args::{array_arg, token_arg, utf8_error};
use super::error::{guard_int, guard_ptr};
use super::grammar::cg_grammar;
use super::handle::{handle, Handle};
use super::matcher::cg_matcher;
use super::vocab::cg_vocab;
use crate::error::{Error, Result};
use crate::matcher::{AnyMatcher, LazyMatcher};
use crate::tokensets::Engine;
use crate::trigger::{TriggerSpec, Triggers};

/// The triggers of lazy matchers (`cg_matcher_new_lazy`), compiled for one
/// vocabulary. Immutable: share them across threads and matchers.
pub struct cg_triggers {
    pub(crate) inner: Arc<Triggers>,
}

handle!(cg_triggers, Arc<Triggers>, "triggers");

/// `cg_trigger.kind`: `text` is a pattern in the ECMAScript dialect of C++'s
/// `std::regex`, as llama.cpp's trigger patterns are.
pub const CG_TRIGGER_PATTERN: u32 = 0;
/// `cg_trigger.kind`: `text` is literal text (a pattern with the special
/// characters escaped, as llama.cpp's trigger words are).
pub const CG_TRIGGER_WORD: u32 = 1;
/// `cg_trigger.kind`: the token `token`.
pub const CG_TRIGGER_TOKEN: u32 = 2;

/// One trigger of a lazy grammar, for `cg_triggers_new`.
#[repr(C)]
pub struct cg_trigger {
    /// `CG_TRIGGER_PATTERN`, `CG_TRIGGER_WORD` or `CG_TRIGGER_TOKEN`.
    pub kind: u32,
    /// The pattern or the word: NUL-terminated UTF-8 (ignored for a token).
    pub text: *const c_char,
    /// The token id (for `CG_TRIGGER_TOKEN`; ignored otherwise).
    pub token: i32,
}

/// Compiles the triggers of a lazy grammar for a vocabulary: `n` entries
/// of `triggers` (NULL only if `n` is 0), each a pattern, a word or a token
/// (`cg_trigger`). A lazy matcher fires on the first token that is a
/// trigger token, or after which the output so far contains a match of a
/// pattern or a word (token triggers are checked first, then the patterns
/// and words in their order).
///
/// Patterns are llama.cpp's (`llama_sampler_init_grammar_lazy_patterns`):
/// the ECMAScript dialect of C++'s `std::regex`, searched anywhere in the
/// output (`std::regex_search`; a pattern that starts with `^` and ends
/// with `$` is first matched against the whole output). The grammar starts
/// at the first capturing group that matched a non-empty text, or at the
/// match's start. Words are literal text (llama.cpp escapes them into
/// patterns the same way). Patterns see the output as UTF-8 characters.
///
/// Returns the triggers (free them with `cg_triggers_free`), or NULL with
/// `cg_last_error`: `CG_ERR_INVALID_ARGUMENT` (NULL or non-UTF-8 text, a
/// token out of range, an unknown kind, an empty word), `CG_ERR_PARSE` (a
/// pattern `std::regex` rejects: lookbehinds, named groups, bad escapes),
/// `CG_ERR_UNSUPPORTED` (backreferences), `CG_ERR_LIMIT` (a pattern whose
/// automaton would exceed 8 MiB, or that takes more than 250 ms to
/// compile: triggers take no options, so each pattern or word has this
/// fixed time limit). The arrays and strings are only read during the
/// call. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_triggers_new(
    vocab: *const cg_vocab,
    triggers: *const cg_trigger,
    n: usize,
) -> *mut cg_triggers {
    guard_ptr("cg_triggers_new", || {
        let engine = cg_vocab::arg(vocab)?;
        let specs = trigger_specs(engine, triggers, n)?;
        Ok(Handle::into_raw(cg_triggers {
            inner: Arc::new(Triggers::new(engine, &specs)?),
        }))
    })
}

/// The host's trigger list, checked.
pub(crate) unsafe fn trigger_specs(
    engine: &Engine,
    triggers: *const cg_trigger,
    n: usize,
) -> Result<Vec<TriggerSpec>> {
    let list = array_arg(triggers, n, "triggers")?;
    let mut specs = Vec::with_capacity(n);
    for (i, t) in list.iter().enumerate() {
        let text = || -> Result<String> {
            if t.text.is_null() {
                return Err(Error::invalid(format!("triggers[{i}].text is NULL")));
            }
            let s = CStr::from_ptr(t.text)
                .to_str()
                .map_err(|e| utf8_error(&format!("triggers[{i}].text"), e))?;
            Ok(s.to_string())
        };
        specs.push(match t.kind {
            CG_TRIGGER_PATTERN => TriggerSpec::Pattern(text()?),
            CG_TRIGGER_WORD => TriggerSpec::Word(text()?),
            CG_TRIGGER_TOKEN => TriggerSpec::Token(token_arg(
                t.token,
                engine.vocab().len(),
                &format!("triggers[{i}].token"),
            )?),
            k => {
                return Err(Error::invalid(format!(
                    "triggers[{i}].kind {k} is not a CG_TRIGGER_* value"
                )))
            }
        });
    }
    Ok(specs)
}

/// Releases triggers. Lazy matchers made with them keep their own
/// reference. NULL is a no-op. Each must be freed exactly once.
#[no_mangle]
pub unsafe extern "C" fn cg_triggers_free(triggers: *mut cg_triggers) {
    cg_triggers::free("cg_triggers_free", triggers)
}

/// A lazy matcher: it allows any token until a trigger fires, then
/// constrains the output to the grammar, as llama.cpp's lazy grammar
/// samplers do. `triggers` must be compiled for the grammar's vocabulary;
/// the matcher keeps both alive. Free it with `cg_matcher_free`. Returns
/// NULL on error. Thread-safe.
///
/// Before the trigger: `cg_fill_mask` allows every token (EOS included),
/// except a token that would fire a trigger into text the grammar refuses
/// (which llama.cpp would let through and then fail on) and a trigger
/// token the grammar cannot start with. Checking a token that could fire
/// searches the end of the output for where the grammar would start (all
/// of it for a pattern of unbounded length); when the searches of one
/// mask would take more than a fixed number of steps (about a millisecond
/// of work), none is made and every such token is allowed unchecked, so
/// that the mask depends on the state alone (it is the same after
/// `cg_rollback`, in a clone, and on every machine).
/// `cg_accept` rejects a refused token and leaves the matcher unchanged.
/// `cg_accept` keeps the token's text (special tokens' text included,
/// as llama.cpp does). EOS ends the sequence (`cg_is_terminated`).
/// `cg_is_accepting` is 1; `cg_forced_tokens` gives none.
///
/// The trigger: a trigger token is the grammar's first token. For a pattern
/// or a word, the output from the grammar's start (see `cg_triggers_new`)
/// is fed to the grammar: the token that straddles the start gives its tail
/// bytes only, the tokens after it (the one that completed the match and
/// any text it carries past it included) are fed as tokens.
///
/// After the trigger the matcher is the grammar's, as `cg_matcher_new`
/// makes it. `cg_rollback` counts the trigger token as one step: rolling
/// it back returns to awaiting, with the output as it was before it.
/// `cg_reset` returns to awaiting with no output. `cg_matcher_clone` copies
/// the whole state. `cg_is_triggered` tells which trigger fired.
#[no_mangle]
pub unsafe extern "C" fn cg_matcher_new_lazy(
    grammar: *const cg_grammar,
    triggers: *const cg_triggers,
) -> *mut cg_matcher {
    guard_ptr("cg_matcher_new_lazy", || {
        let grammar = cg_grammar::arg(grammar)?;
        let triggers = cg_triggers::arg(triggers)?;
        let lazy = LazyMatcher::new(Arc::clone(grammar), Arc::clone(triggers))?;
        Ok(Handle::into_raw(cg_matcher {
            inner: AnyMatcher::Lazy(Box::new(lazy)),
        }))
    })
}

/// 1 when the matcher constrains the output (a trigger fired, or the
/// matcher is not lazy), 0 while a lazy matcher awaits its trigger,
/// `CG_ERR_INVALID_ARGUMENT` for a NULL matcher. When it returns 1 and
/// `index` is not NULL, `*index` is the index of the trigger that fired in
/// the list given to `cg_triggers_new` (-1 for a matcher that is not lazy);
/// when `start` is not NULL, `*start` is the byte offset in the output
/// where the grammar started (0 for a matcher that is not lazy). Not
/// thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_is_triggered(
    matcher: *const cg_matcher,
    index: *mut i32,
    start: *mut usize,
) -> c_int {
    guard_int("cg_is_triggered", || {
        let (fired, at) = match cg_matcher::arg(matcher)? {
            AnyMatcher::Eager(_) => (Some(-1), 0),
            AnyMatcher::Lazy(m) => match m.fired() {
                Some(f) => (Some(f.index as i32), f.start),
                None => (None, 0),
            },
        };
        let Some(i) = fired else {
            return Ok(0);
        };
        if let Some(index) = index.as_mut() {
            *index = i;
        }
        if let Some(start) = start.as_mut() {
            *start = at;
        }
        Ok(1)
    })
}
