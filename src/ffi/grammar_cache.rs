//! `cg_grammar_cache`: compiled grammars and triggers kept by source, for
//! servers that see the same schema again.

use std::ffi::{c_char, c_int};
use std::mem::{offset_of, size_of};
use std::ptr;

use super::args::{bytes_arg, null, struct_size_arg};
use super::error::{guard, guard_int, guard_ptr, CG_OK};
use super::grammar::{cg_compile_options, cg_grammar, read_options};
use super::handle::{handle, Handle};
use super::triggers::{cg_trigger, cg_triggers, trigger_specs};
use super::vocab::cg_vocab;
use crate::grammar_cache::{self, GrammarCache};

/// A cache of compiled grammars and triggers, for hosts that compile the
/// same sources again and again (a server that builds a sampler for every
/// request). Thread-safe: share one across threads.
pub struct cg_grammar_cache {
    pub(crate) inner: GrammarCache,
}

handle!(cg_grammar_cache, GrammarCache, "cache");

/// What a grammar cache did so far (`cg_grammar_cache_get_stats`).
#[repr(C)]
pub struct cg_grammar_cache_stats {
    /// `sizeof(cg_grammar_cache_stats)` as the caller knows it: set it
    /// before the call; only the fields that fit are written.
    pub struct_size: u32,
    /// Lookups that found their grammar or triggers.
    pub hits: u64,
    /// Lookups that compiled.
    pub misses: u64,
    /// Entries dropped to stay within the budget.
    pub evictions: u64,
    /// Entries kept now.
    pub entries: u64,
    /// Their approximate size in bytes.
    pub bytes: u64,
    /// The budget in bytes.
    pub budget: u64,
}

/// A new grammar cache that keeps at most `budget_bytes` bytes of compiled
/// grammars and triggers (0: the default, 256 MiB), evicting the least
/// recently used past it. An entry's size is measured when it is added.
/// Free it with `cg_grammar_cache_free`. Thread-safe.
#[no_mangle]
pub extern "C" fn cg_grammar_cache_new(budget_bytes: usize) -> *mut cg_grammar_cache {
    guard_ptr("cg_grammar_cache_new", || {
        let budget = if budget_bytes == 0 {
            grammar_cache::DEFAULT_BUDGET
        } else {
            budget_bytes
        };
        Ok(Handle::into_raw(cg_grammar_cache {
            inner: GrammarCache::new(budget),
        }))
    })
}

/// `cg_compile` through the cache: the grammar compiled earlier from the
/// same vocabulary, source, kind, flags, `json_max_whitespace`, fixed
/// formatting (`json_indent`, separators), `json_documents` and root,
/// or a new one (kept in the cache if it fits its budget). Limits in
/// `options` apply to a compilation, not to a lookup. Returns a new
/// reference that the caller frees with `cg_free` (the cache keeps its
/// own), or NULL on error as `cg_compile` (failures are not cached).
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_cache_compile(
    cache: *const cg_grammar_cache,
    vocab: *const cg_vocab,
    source: *const c_char,
    source_len: usize,
    options: *const cg_compile_options,
) -> *mut cg_grammar {
    guard_ptr("cg_grammar_cache_compile", || {
        let cache = cg_grammar_cache::arg(cache)?;
        let engine = cg_vocab::arg(vocab)?;
        // A hit has the bytes of a source that compiled; a miss checks
        // UTF-8 in `compile`, so the text is not read twice here.
        let options = read_options(options)?;
        let source = bytes_arg(source.cast(), source_len, "source")?;
        let grammar = cache.grammar(engine, source, &options)?;
        Ok(Handle::into_raw(cg_grammar::new(grammar)))
    })
}

/// `cg_triggers_new` through the cache: the triggers compiled earlier from
/// the same vocabulary and list, or new ones. Cached triggers also keep
/// what their matchers learnt (which tokens can fire from where). Returns
/// a new reference that the caller frees with `cg_triggers_free`, or NULL
/// on error as `cg_triggers_new`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_cache_triggers(
    cache: *const cg_grammar_cache,
    vocab: *const cg_vocab,
    triggers: *const cg_trigger,
    n: usize,
) -> *mut cg_triggers {
    guard_ptr("cg_grammar_cache_triggers", || {
        let cache = cg_grammar_cache::arg(cache)?;
        let engine = cg_vocab::arg(vocab)?;
        let specs = trigger_specs(engine, triggers, n)?;
        Ok(Handle::into_raw(cg_triggers {
            inner: cache.triggers(engine, &specs)?,
        }))
    })
}

/// Changes the cache's budget (0: the default), evicting what no longer
/// fits. NULL is a no-op (and sets `cg_last_error`). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_cache_set_budget(
    cache: *const cg_grammar_cache,
    budget_bytes: usize,
) {
    guard(
        "cg_grammar_cache_set_budget",
        |_| (),
        || {
            let budget = if budget_bytes == 0 {
                grammar_cache::DEFAULT_BUDGET
            } else {
                budget_bytes
            };
            cg_grammar_cache::arg(cache)?.set_budget(budget);
            Ok(())
        },
    )
}

/// Fills `*stats` (whose `struct_size` the caller sets to
/// `sizeof(cg_grammar_cache_stats)`) with the cache's counters. Only the
/// fields that fit in `struct_size` bytes are written; in a larger struct
/// (a program built against a newer header) the fields this library does
/// not know are set to 0. Returns `CG_OK`, or `CG_ERR_INVALID_ARGUMENT`
/// for NULL pointers or a `struct_size` smaller than its first field or
/// larger than 4096 (nothing is written then). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_cache_get_stats(
    cache: *const cg_grammar_cache,
    stats: *mut cg_grammar_cache_stats,
) -> c_int {
    guard_int("cg_grammar_cache_get_stats", || {
        let s = cg_grammar_cache::arg(cache)?.stats();
        if stats.is_null() {
            return Err(null("stats"));
        }
        let size = ptr::read_unaligned(stats.cast::<u32>()) as usize;
        let size = struct_size_arg(
            size,
            size_of::<u32>(),
            "stats->struct_size",
            "set it to sizeof(cg_grammar_cache_stats)",
        )?;
        // Only the fields that fit in the caller's struct are written; the
        // fields of a newer header that this library does not know read 0.
        let known = size_of::<cg_grammar_cache_stats>();
        if size > known {
            ptr::write_bytes(stats.cast::<u8>().add(known), 0, size - known);
        }
        let fields = [
            (offset_of!(cg_grammar_cache_stats, hits), s.hits),
            (offset_of!(cg_grammar_cache_stats, misses), s.misses),
            (offset_of!(cg_grammar_cache_stats, evictions), s.evictions),
            (
                offset_of!(cg_grammar_cache_stats, entries),
                s.entries as u64,
            ),
            (offset_of!(cg_grammar_cache_stats, bytes), s.bytes as u64),
            (offset_of!(cg_grammar_cache_stats, budget), s.budget as u64),
        ];
        for (off, value) in fields {
            if off + size_of::<u64>() <= size {
                stats
                    .cast::<u8>()
                    .add(off)
                    .cast::<u64>()
                    .write_unaligned(value);
            }
        }
        Ok(CG_OK)
    })
}

/// Drops the cache's entries compiled for `vocab` (hosts call it when
/// they are done with a model, so that the cache does not keep its
/// vocabulary alive). NULL pointers are a no-op (and set `cg_last_error`).
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_cache_forget_vocab(
    cache: *const cg_grammar_cache,
    vocab: *const cg_vocab,
) {
    guard(
        "cg_grammar_cache_forget_vocab",
        |_| (),
        || {
            cg_grammar_cache::arg(cache)?.forget_vocab(cg_vocab::arg(vocab)?);
            Ok(())
        },
    )
}

/// Drops every entry of the cache (grammars and triggers in use stay alive
/// with their users). NULL is a no-op. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_cache_clear(cache: *const cg_grammar_cache) {
    guard(
        "cg_grammar_cache_clear",
        |_| (),
        || {
            cg_grammar_cache::arg(cache)?.clear();
            Ok(())
        },
    )
}

/// Frees a grammar cache (grammars and triggers in use stay alive with
/// their users). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_cache_free(cache: *mut cg_grammar_cache) {
    cg_grammar_cache::free("cg_grammar_cache_free", cache)
}
