//! The C API: the thin boundary between C callers and the safe Rust API.
//!
//! Every entry point checks its arguments (NULL pointers, lengths, token ids,
//! UTF-8), converts them, calls the safe API and converts the result back.
//! Nothing else lives here. No panic crosses the boundary: each call runs
//! under `catch_unwind`, and a panic becomes `CG_ERR_INTERNAL` with the panic
//! message and place in [`cg_last_error`]. Nor does a panic print: the
//! library never writes to its host's stderr (see [`catch_quietly`]).
//!
//! `include/cgram.h` is generated from this file by cbindgen
//! (`scripts/gen-header.sh`), so the doc comments below are the C
//! documentation: they are written for C programmers. The functions are
//! `unsafe` for Rust callers because they take raw pointers; each one's
//! comment states what its pointers must be.

#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::mem::{offset_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::slice;
use std::sync::{Arc, Once};

use crate::compile::CompiledGrammar;
use crate::error::{Error, ErrorKind, Result};
use crate::grammar_cache::{self, GrammarCache};
use crate::limits::{DEFAULT_MAX_COMPILE_MS, DEFAULT_MAX_STATES};
use crate::matcher::{AnyMatcher, LazyMatcher, Matcher};
use crate::source::{
    self, CompileOptions, Kind, FLAG_GBNF_ALLOW_LEFT_RECURSION, FLAG_JSON_COMPACT,
    FLAG_JSON_LENIENT, FLAG_JSON_NO_EXTRA_PROPERTIES, FLAG_JSON_ORDERED_PROPERTIES,
    FLAG_JSON_STRICT_INTEGERS,
};
use crate::trigger::{TriggerSpec, Triggers};
use crate::vocab::{Vocab, MAX_VOCAB_SIZE};

/// Success. Functions that return `int` return `CG_OK` (or a count, or 1/0
/// for yes/no questions) on success and a negative `CG_ERR_*` code on
/// failure; `cg_last_error()` then says what went wrong.
pub const CG_OK: c_int = 0;
/// A NULL pointer, a buffer too short, a token id out of range, options
/// that make no sense, a source that is not UTF-8.
pub const CG_ERR_INVALID_ARGUMENT: c_int = -1;
/// The grammar, schema or regex text could not be parsed.
pub const CG_ERR_PARSE: c_int = -2;
/// The input is well formed but uses something cgram does not support.
pub const CG_ERR_UNSUPPORTED: c_int = -3;
/// A limit was reached (compile time, automaton size, nesting depth).
pub const CG_ERR_LIMIT: c_int = -4;
/// A file could not be read or does not have the expected format.
pub const CG_ERR_IO: c_int = -5;
/// `cg_accept` / `cg_accept_bytes`: the grammar does not allow this here.
/// The matcher is unchanged.
pub const CG_ERR_TOKEN_REJECTED: c_int = -6;
/// The matcher has terminated (EOS was accepted) and takes no more input.
pub const CG_ERR_TERMINATED: c_int = -7;
/// A bug inside cgram (a caught panic). The object involved may be left in
/// any valid state; please report the message.
pub const CG_ERR_INTERNAL: c_int = -8;

/// `cg_compile_options.kind`: llama.cpp's GBNF; `root` names the start rule.
pub const CG_KIND_GBNF: u32 = 0;
/// `cg_compile_options.kind`: a JSON Schema (the source is its JSON text).
pub const CG_KIND_JSON_SCHEMA: u32 = 1;
/// `cg_compile_options.kind`: a regular expression matched against the whole
/// output.
pub const CG_KIND_REGEX: u32 = 2;
/// `cg_compile_options.kind`: any JSON value (the source is ignored and may
/// be empty).
pub const CG_KIND_ANY_JSON: u32 = 3;

/// Token flag for `cg_vocab_new`: a special/control token (`<|eot_id|>`,
/// `<s>`, ...). Text rules never match it; only a grammar element naming
/// the token does.
pub const CG_TOKEN_SPECIAL: u32 = 1;

/// `cg_compile_options.flags`, JSON kinds: no optional whitespace at all.
pub const CG_JSON_COMPACT: u32 = 1;
/// `cg_compile_options.flags`, JSON Schema: an object allows only the
/// property names that its schemas list, unless `additionalProperties`
/// says otherwise (the specification's default allows any). The flag
/// applies to schemas that list `properties` or `patternProperties`
/// themselves; a schema that lists none (a `$ref` or `anyOf` wrapper, a
/// bare `{"type": "object"}`) adds no restriction. Schemas combined by
/// `allOf`, `$ref` or as siblings allow the union of the names they list
/// (`{"allOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]}`
/// allows `a` and `b`); each `anyOf`/`oneOf` branch is closed on its own
/// names plus those of the schemas it is combined with, and `oneOf`
/// excludes the other branches as closed shapes. The schemas of `not` and
/// `if` are tests: the flag does not close them.
pub const CG_JSON_NO_EXTRA_PROPERTIES: u32 = 2;
/// `cg_compile_options.flags`, GBNF: accept left-recursive rules (an
/// extension: llama.cpp rejects them).
pub const CG_GBNF_ALLOW_LEFT_RECURSION: u32 = 4;
/// `cg_compile_options.flags`, JSON Schema: the properties an object lists
/// come in the order its `properties` keyword lists them, as llama.cpp's
/// json-schema-to-grammar converter writes them: each at most once,
/// optional ones may be left out but never reordered; properties the
/// schema does not list (where `additionalProperties` or
/// `patternProperties` allow them) come after all listed ones. Without the
/// flag, properties may come in any order (JSON Schema does not constrain
/// it).
pub const CG_JSON_ORDERED_PROPERTIES: u32 = 8;
/// `cg_compile_options.flags`, JSON Schema: a number that can only have an
/// integer value (`type: integer`, an integer `const` or `enum` value, a
/// `multipleOf` that is an integer) is written as a plain integer, `12` or
/// `-3`: never `12.0`, `1.2e1` or `12e0`, which JSON Schema counts as
/// integers too. Applies to every draft.
pub const CG_JSON_STRICT_INTEGERS: u32 = 16;
/// `cg_compile_options.flags`, JSON Schema: lenient mode. A keyword that no
/// automaton can enforce (`uniqueItems` on items that are not a small set
/// of values, `format` `regex` / `idn-email` / `idn-hostname` (and
/// `hostname`, kept to its label rules), a `not` or an `oneOf` exclusion or
/// `if` whose negation cannot be expressed, `unevaluatedProperties` /
/// `unevaluatedItems`, dynamic scoping, `$ref` outside the document, a
/// `multipleOf` whose automaton would be too large, a `pattern` construct
/// such as a backreference) is left out instead of failing the compile with
/// `CG_ERR_UNSUPPORTED`. Leaving a keyword out only ever widens: every
/// instance of the schema stays allowed, and some invalid ones are allowed
/// too. Each keyword left out is reported by `cg_grammar_dropped_count` and
/// `cg_grammar_dropped`. Limits and unsatisfiable schemas still fail.
pub const CG_JSON_LENIENT: u32 = 32;

const ALL_FLAGS: u32 = CG_JSON_COMPACT
    | CG_JSON_NO_EXTRA_PROPERTIES
    | CG_GBNF_ALLOW_LEFT_RECURSION
    | CG_JSON_ORDERED_PROPERTIES
    | CG_JSON_STRICT_INTEGERS
    | CG_JSON_LENIENT;

// The C constants must stay equal to the Rust ones they mirror.
const _: () = {
    assert!(CG_TOKEN_SPECIAL == crate::vocab::TOKEN_SPECIAL);
    assert!(CG_JSON_COMPACT == FLAG_JSON_COMPACT);
    assert!(CG_JSON_NO_EXTRA_PROPERTIES == FLAG_JSON_NO_EXTRA_PROPERTIES);
    assert!(CG_GBNF_ALLOW_LEFT_RECURSION == FLAG_GBNF_ALLOW_LEFT_RECURSION);
    assert!(CG_JSON_ORDERED_PROPERTIES == FLAG_JSON_ORDERED_PROPERTIES);
    assert!(CG_JSON_STRICT_INTEGERS == FLAG_JSON_STRICT_INTEGERS);
    assert!(CG_JSON_LENIENT == FLAG_JSON_LENIENT);
};

// What the documented thread-safety rests on: vocabularies and grammars are
// shared across threads, a matcher is moved to a worker by cg_fill_masks.
const _: () = {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    #[allow(dead_code)]
    fn check() {
        send_sync::<Vocab>();
        send_sync::<CompiledGrammar>();
        send_sync::<Triggers>();
        send::<AnyMatcher>();
    }
};

/// A tokenizer's vocabulary: the bytes of every token, which tokens are
/// special, which end the sequence. Immutable once built (except through
/// `cg_vocab_set_eos`): share one across threads and grammars.
pub struct cg_vocab {
    inner: Arc<Vocab>,
}

/// A grammar compiled for one vocabulary. Immutable: share one across
/// threads; every matcher made from it may run on its own thread.
pub struct cg_grammar {
    inner: Arc<CompiledGrammar>,
    /// The keywords left out (`CG_JSON_LENIENT`) as C strings: keyword,
    /// JSON pointer, reason.
    dropped: Vec<[CString; 3]>,
}

impl cg_grammar {
    fn new(inner: Arc<CompiledGrammar>) -> cg_grammar {
        let c = |s: &str| CString::new(s.replace('\0', "\\0")).unwrap_or_default();
        let dropped = inner
            .dropped()
            .iter()
            .map(|d| [c(&d.keyword), c(&d.pointer), c(&d.reason)])
            .collect();
        cg_grammar { inner, dropped }
    }
}

/// The state of one sequence being generated. Not thread-safe: use one
/// matcher from one thread at a time (different matchers, even of the same
/// grammar, may run on different threads at once).
pub struct cg_matcher {
    inner: AnyMatcher,
}

/// The triggers of lazy matchers (`cg_matcher_new_lazy`), compiled for one
/// vocabulary. Immutable: share them across threads and matchers.
pub struct cg_triggers {
    inner: Arc<Triggers>,
}

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

/// Options for `cg_compile`. Initialise with `cg_compile_options_init`, then
/// change the fields you need.
///
/// The struct only ever grows at its end. `struct_size`, `kind` and `root`
/// never move. A program built against an older header passes its smaller
/// `struct_size` and gets the defaults for the fields it does not know; a
/// `struct_size` larger than this library's is accepted and the fields this
/// library does not know are ignored.
#[repr(C)]
pub struct cg_compile_options {
    /// `sizeof(cg_compile_options)` as the caller knows it; set by
    /// `cg_compile_options_init`.
    pub struct_size: u32,
    /// What the source is: `CG_KIND_*`. Default `CG_KIND_GBNF`.
    pub kind: u32,
    /// GBNF: the start rule. NULL (the default) means "root". The string is
    /// only read during `cg_compile`.
    pub root: *const c_char,
    /// `CG_JSON_*` / `CG_GBNF_*` bits; unknown bits, and bits for another
    /// kind (`CG_JSON_COMPACT` on GBNF, say), are an error. Default 0.
    pub flags: u32,
    /// JSON kinds: the longest run of whitespace allowed between tokens;
    /// 0 (the default) means unbounded. Small models can loop on newlines.
    pub json_max_whitespace: u32,
    /// Compilation fails with `CG_ERR_LIMIT` after this many milliseconds;
    /// 0 means no limit. Default 10000.
    pub max_compile_ms: u64,
    /// Compilation fails with `CG_ERR_LIMIT` past this many automaton
    /// states (GBNF: plus one per byte of the source, since a literal is
    /// a state per byte); 0 means no limit. Default 1000000.
    pub max_states: u64,
    /// The work one `cg_fill_mask` may do, in parser steps (an item of the
    /// grammar's parser read past one byte, or added by a closure), for the
    /// part of a mask that is not cached yet: a parser state met for the
    /// first time, a rule that ends inside a token in a new context. Past
    /// it the call stops, fails with `CG_ERR_LIMIT` and allows no token;
    /// nothing it computed is kept, so the next call fails the same way.
    /// Counted in steps, not time, so that a mask stops at the same point
    /// on every machine. 0 means no limit. Default 100000000 (one to a few
    /// seconds of one core; every mask of the MaskBench schemas needs less
    /// than 100000).
    /// Grammars compiled through a `cg_grammar_cache` keep theirs.
    pub max_mask_steps: u64,
    /// JSON kinds, fixed formatting: the output has exactly one whitespace
    /// layout, the one Python's `json.dumps(value, indent=json_indent,
    /// separators=(json_item_separator, json_key_separator))` writes, so
    /// it is reproducible and cannot loop on whitespace. Fixed formatting
    /// is on when `json_indent` is not 0 or a separator is not NULL; it
    /// excludes `CG_JSON_COMPACT` (itself the fixed layout with separators
    /// "," and ":" on one line) and `json_max_whitespace`.
    ///
    /// `json_indent`: 0 (the default) writes everything on one line; 1 to
    /// 16 writes a newline and that many spaces per nesting level before
    /// each item or member and before the closing bracket of a non-empty
    /// array or object. Empty arrays and objects are `[]` and `{}`; no
    /// whitespace comes before or after the whole value. Indentation
    /// grows with depth, which a grammar cannot count without bound: under
    /// an indent, arrays and objects nested more than 32 levels deep can
    /// only be empty.
    pub json_indent: u32,
    /// Fixed formatting: what goes between two items or members, before the
    /// newline of `json_indent`: "," with optional JSON whitespace (space,
    /// tab, newline, carriage return) around it, at most 16 bytes. NULL
    /// (the default) means ", " on one line and "," with an indent. Only
    /// read during `cg_compile`.
    pub json_item_separator: *const c_char,
    /// Fixed formatting: what goes between a member's name and its value:
    /// ":" with optional JSON whitespace around it, at most 16 bytes. NULL
    /// (the default) means ": ". Only read during `cg_compile`.
    pub json_key_separator: *const c_char,
    /// JSON Schema: extra documents that `$ref`s may reach (what a
    /// validator's schema registry holds; cgram never fetches anything),
    /// as NUL-terminated UTF-8 JSON text: an object mapping absolute URIs
    /// to schema documents, e.g. `{"http://example.com/a.json": {"type":
    /// "integer"}}`. NULL (the default) means none. A document's URI is
    /// its base URI (its own `$id`s may change it, as in the schema);
    /// references reach its `$id`s, anchors, `$defs` and JSON pointers,
    /// relative references inside it resolve against it, documents may
    /// refer to each other and to the schema, recursively, and each one
    /// follows its own `$schema` (the schema's draft when it has none),
    /// so a draft-7 document reached from a 2020-12 schema keeps draft-7
    /// semantics. A reference to a URI no document has is refused
    /// (`CG_ERR_UNSUPPORTED`), official metaschemas included unless given
    /// here. The text counts with the source against the source size
    /// limit (`CG_ERR_LIMIT`). Errors: `CG_ERR_PARSE` when it is not valid
    /// JSON; `CG_ERR_INVALID_ARGUMENT` when it is not an object, a key is
    /// not an absolute URI (it needs a scheme) or has a fragment, a value
    /// is not a schema (an object or a boolean), it is not UTF-8, or the
    /// kind is not `CG_KIND_JSON_SCHEMA`. Only read during `cg_compile`;
    /// a grammar cache keys its grammars by it too.
    pub json_documents: *const c_char,
}

/// Bytes of `cg_compile_options` that every caller must provide: the fields
/// that never move (`struct_size`, `kind`, `root`).
const OPTIONS_PREFIX: usize = offset_of!(cg_compile_options, root) + size_of::<*const c_char>();

// ---------------------------------------------------------------------------
// The error slot and the panic guard.

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
    static LAST_ERROR_CODE: std::cell::Cell<c_int> = const { std::cell::Cell::new(CG_OK) };
}

/// Records `message` and `code` as this thread's last error.
fn set_last_error(code: c_int, message: String) {
    let _ = LAST_ERROR_CODE.try_with(|c| c.set(code));
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some(message);
        }
    });
}

thread_local! {
    /// How many [`catch_quietly`] calls this thread is inside.
    static QUIET_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// Where the last quiet panic of this thread happened.
    static PANIC_PLACE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `body` under `catch_unwind` without the panic printing anything.
///
/// Rust's default panic hook writes the message (and, under
/// `RUST_BACKTRACE`, a backtrace) to stderr before unwinding starts, even
/// when the panic is then caught. The first call installs a hook that keeps
/// quiet on threads inside this function (recording where the panic
/// happened, for the error message) and hands every other panic to the hook
/// that was there before, so a Rust program linking cgram keeps its own
/// panic output.
fn catch_quietly<T>(body: impl FnOnce() -> T) -> std::thread::Result<T> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET_DEPTH.try_with(|d| d.get()).unwrap_or(0) == 0 {
                previous(info);
            } else if let Some(place) = info.location() {
                let place = format!("{}:{}", place.file(), place.line());
                let _ = PANIC_PLACE.try_with(|p| p.replace(Some(place)));
            }
        }));
    });
    QUIET_DEPTH.with(|d| d.set(d.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(body));
    QUIET_DEPTH.with(|d| d.set(d.get() - 1));
    result
}

/// The text of a panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

fn internal_error(payload: &(dyn std::any::Any + Send)) -> Error {
    let place = PANIC_PLACE
        .try_with(|p| p.take())
        .ok()
        .flatten()
        .map(|p| format!(" at {p}"))
        .unwrap_or_default();
    Error::new(
        ErrorKind::Internal,
        format!("internal error (panic{place}): {}", panic_message(payload)),
    )
}

/// Runs `body` for the C function `func`: a failure or a panic is recorded
/// in the error slot (prefixed with `func`) and turned into a return value
/// by `fail`, which gets the error code.
fn guard<T>(func: &str, fail: impl FnOnce(c_int) -> T, body: impl FnOnce() -> Result<T>) -> T {
    let error = match catch_quietly(body) {
        Ok(Ok(value)) => return value,
        Ok(Err(error)) => error,
        Err(payload) => internal_error(&*payload),
    };
    // Formatting the message cannot unwind past here either.
    let code = error.kind().code();
    let _ = catch_quietly(|| set_last_error(code, format!("{func}: {}", error.message())));
    fail(code)
}

/// [`guard`] for functions returning `int`: the error code on failure.
fn guard_int(func: &str, body: impl FnOnce() -> Result<c_int>) -> c_int {
    guard(func, |code| code, body)
}

/// [`guard`] for functions returning a pointer: NULL on failure.
fn guard_ptr<T>(func: &str, body: impl FnOnce() -> Result<*mut T>) -> *mut T {
    guard(func, |_| ptr::null_mut(), body)
}

// ---------------------------------------------------------------------------
// Argument checks and conversions.

fn null(what: &str) -> Error {
    Error::invalid(format!("{what} is NULL"))
}

unsafe fn vocab_ref<'a>(p: *const cg_vocab) -> Result<&'a Arc<Vocab>> {
    p.as_ref().map(|v| &v.inner).ok_or_else(|| null("vocab"))
}

unsafe fn grammar_ref<'a>(p: *const cg_grammar) -> Result<&'a Arc<CompiledGrammar>> {
    p.as_ref().map(|g| &g.inner).ok_or_else(|| null("grammar"))
}

unsafe fn cache_ref<'a>(p: *const cg_grammar_cache) -> Result<&'a GrammarCache> {
    p.as_ref().map(|c| &c.inner).ok_or_else(|| null("cache"))
}

unsafe fn matcher_ref<'a>(p: *const cg_matcher) -> Result<&'a AnyMatcher> {
    p.as_ref().map(|m| &m.inner).ok_or_else(|| null("matcher"))
}

unsafe fn matcher_mut<'a>(p: *mut cg_matcher) -> Result<&'a mut AnyMatcher> {
    p.as_mut()
        .map(|m| &mut m.inner)
        .ok_or_else(|| null("matcher"))
}

/// `len` bytes at `p`; NULL is allowed only when `len` is 0.
unsafe fn bytes_arg<'a>(p: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::invalid(format!(
            "{what} is NULL but its length is {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Error::invalid(format!("{what} length {len} is too large")));
    }
    Ok(slice::from_raw_parts(p, len))
}

/// `len` values of `T` at `p` (NULL allowed only when `len` is 0).
unsafe fn array_arg<'a, T>(p: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    check_array(p, len, what)?;
    Ok(slice::from_raw_parts(p, len))
}

/// Like [`array_arg`], writable.
unsafe fn array_mut<'a, T>(p: *mut T, len: usize, what: &str) -> Result<&'a mut [T]> {
    if len == 0 {
        return Ok(&mut []);
    }
    check_array(p, len, what)?;
    Ok(slice::from_raw_parts_mut(p, len))
}

fn check_array<T>(p: *const T, len: usize, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::invalid(format!(
            "{what} is NULL but its length is {len}"
        )));
    }
    if !(p as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(Error::invalid(format!("{what} is not aligned")));
    }
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(Error::invalid(format!("{what} length {len} is too large")));
    }
    Ok(())
}

/// A token id checked against a vocabulary of `n` tokens.
fn token_arg(token: i32, n: usize, what: &str) -> Result<u32> {
    if token < 0 || token as usize >= n {
        return Err(Error::invalid(format!(
            "{what} {token} is out of range (vocabulary of {n} tokens)"
        )));
    }
    Ok(token as u32)
}

/// Where UTF-8 decoding fails, for messages.
fn utf8_error(what: &str, e: std::str::Utf8Error) -> Error {
    let at = e.valid_up_to();
    match e.error_len() {
        Some(_) => Error::invalid(format!(
            "{what} is not valid UTF-8: invalid byte sequence at byte offset {at}"
        )),
        None => Error::invalid(format!(
            "{what} is not valid UTF-8: incomplete character at byte offset {at} (end of input)"
        )),
    }
}

fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Frees a handle made by [`into_handle`]; NULL is a no-op.
unsafe fn free_handle<T>(func: &str, p: *mut T) {
    if !p.is_null() {
        guard(
            func,
            |_| (),
            || {
                drop(Box::from_raw(p));
                Ok(())
            },
        )
    }
}

/// Reads the options a caller passed, honouring its `struct_size`.
unsafe fn read_options(p: *const cg_compile_options) -> Result<CompileOptions> {
    let mut o = CompileOptions::default();
    if p.is_null() {
        return Ok(o);
    }
    let size = ptr::read_unaligned(p.cast::<u32>()) as usize;
    if size < OPTIONS_PREFIX {
        return Err(Error::invalid(format!(
            "options->struct_size is {size}, smaller than the {OPTIONS_PREFIX} bytes every \
             cg_compile_options has; initialise the options with cg_compile_options_init"
        )));
    }
    // Only the fields that fit in the caller's struct are read.
    macro_rules! field {
        ($name:ident: $ty:ty) => {{
            let _: fn(&cg_compile_options) -> $ty = |o| o.$name;
            let off = offset_of!(cg_compile_options, $name);
            if off + size_of::<$ty>() <= size {
                Some(
                    p.cast::<u8>()
                        .wrapping_add(off)
                        .cast::<$ty>()
                        .read_unaligned(),
                )
            } else {
                None
            }
        }};
    }
    let kind = field!(kind: u32).unwrap_or(CG_KIND_GBNF);
    o.kind = match kind {
        CG_KIND_GBNF => Kind::Gbnf,
        CG_KIND_JSON_SCHEMA => Kind::JsonSchema,
        CG_KIND_REGEX => Kind::Regex,
        CG_KIND_ANY_JSON => Kind::AnyJson,
        other => {
            return Err(Error::invalid(format!(
                "options->kind {other} is not a CG_KIND_* value"
            )))
        }
    };
    if let Some(root) = field!(root: *const c_char) {
        if !root.is_null() {
            let root = CStr::from_ptr(root)
                .to_str()
                .map_err(|e| utf8_error("options->root", e))?;
            o.root = Some(root.to_string());
        }
    }
    if let Some(flags) = field!(flags: u32) {
        if flags & !ALL_FLAGS != 0 {
            return Err(Error::invalid(format!(
                "options->flags has unknown bits {:#x}",
                flags & !ALL_FLAGS
            )));
        }
        o.flags = flags;
    }
    if let Some(ws) = field!(json_max_whitespace: u32) {
        o.json_max_whitespace = (ws != 0).then_some(ws);
    }
    if let Some(ms) = field!(max_compile_ms: u64) {
        o.max_compile_ms = if ms == 0 { u64::MAX } else { ms };
    }
    if let Some(states) = field!(max_states: u64) {
        o.max_states = if states == 0 {
            usize::MAX
        } else {
            usize::try_from(states).unwrap_or(usize::MAX)
        };
    }
    if let Some(steps) = field!(max_mask_steps: u64) {
        o.max_mask_steps = if steps == 0 { u64::MAX } else { steps };
    }
    let indent = field!(json_indent: u32).unwrap_or(0);
    let separator = |p: Option<*const c_char>, what: &str| -> Result<Option<String>> {
        match p {
            Some(p) if !p.is_null() => Ok(Some(
                CStr::from_ptr(p)
                    .to_str()
                    .map_err(|e| utf8_error(what, e))?
                    .to_string(),
            )),
            _ => Ok(None),
        }
    };
    let item = separator(
        field!(json_item_separator: *const c_char),
        "options->json_item_separator",
    )?;
    let key = separator(
        field!(json_key_separator: *const c_char),
        "options->json_key_separator",
    )?;
    if let Some(p) = field!(json_documents: *const c_char) {
        if !p.is_null() {
            let text = CStr::from_ptr(p)
                .to_str()
                .map_err(|e| utf8_error("options->json_documents", e))?;
            o.json_documents = Some(text.into());
        }
    }
    if indent != 0 || item.is_some() || key.is_some() {
        o.json_layout = Some(crate::json_schema::layout::FixedLayout::new(
            (indent != 0).then_some(indent),
            item.as_deref(),
            key.as_deref(),
        )?);
    }
    Ok(o)
}

/// Fills one mask of exactly the vocabulary's word count; on failure the
/// mask is cleared, so that a caller ignoring the error allows nothing.
fn fill(matcher: &mut AnyMatcher, mask: &mut [u32]) -> Result<()> {
    let result = match catch_quietly(|| matcher.fill_mask(mask)) {
        Ok(result) => result,
        Err(payload) => Err(internal_error(&*payload)),
    };
    if result.is_err() {
        mask.fill(0);
    }
    result
}

// ---------------------------------------------------------------------------
// Library.

/// The library version, e.g. "0.1.0". A static string: do not free it.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn cg_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the last failed cgram call on the calling thread (the
/// name of the function, then what went wrong), or "" if no call has failed
/// on this thread yet. Never NULL.
///
/// Each thread has its own message. Successful calls do not change it, so
/// check the return value first and read the message only after a failure.
/// The string is owned by cgram and stays valid until the next failing
/// cgram call on the same thread (or until the thread exits): copy it to
/// keep it longer. Do not free it.
#[no_mangle]
pub extern "C" fn cg_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| match slot.try_borrow() {
            Ok(slot) => slot.as_ref().map_or(c"".as_ptr(), |m| m.as_ptr()),
            Err(_) => c"".as_ptr(),
        })
        .unwrap_or(c"".as_ptr())
}

/// The `CG_ERR_*` code of the last failed cgram call on the calling thread
/// (the call `cg_last_error` describes), or `CG_OK` if none has failed on
/// this thread. For functions that return a pointer, this is how the kind
/// of failure is told apart (`CG_ERR_PARSE` from `CG_ERR_LIMIT`, say).
/// Thread-safe.
#[no_mangle]
pub extern "C" fn cg_last_error_code() -> c_int {
    LAST_ERROR_CODE.try_with(|c| c.get()).unwrap_or(CG_OK)
}

// ---------------------------------------------------------------------------
// Vocabularies.

/// Loads a vocabulary from a HuggingFace `tokenizer.json` file (byte-level
/// BPE such as Llama 3, GPT-2 and Qwen; SentencePiece-style with byte
/// fallback) or a Mistral `tekken.json`. The end-of-sequence tokens are
/// taken from the file; override them with `cg_vocab_set_eos`.
///
/// `path` is a NUL-terminated file name. Returns a new vocabulary that the
/// caller frees with `cg_vocab_free`, or NULL on error, with
/// `cg_last_error` saying why: `CG_ERR_IO` (the file, or the
/// `tokenizer_config.json` / `generation_config.json` next to it, cannot be
/// read, is not a tokenizer, or contradicts itself: no tokens, an id twice,
/// an end-of-sequence token that is not in the vocabulary, ids that leave
/// most of the id range without a token: a vocabulary of more than 65536
/// ids must give tokens to at least half of them),
/// `CG_ERR_UNSUPPORTED` (a tokenizer model cgram cannot read, such as
/// WordPiece, or no decoder that tells the bytes of its tokens),
/// `CG_ERR_LIMIT` (more than 16777216 tokens or a token longer than 65536
/// bytes), `CG_ERR_INVALID_ARGUMENT` (`path` is NULL). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_from_tokenizer_json(path: *const c_char) -> *mut cg_vocab {
    guard_ptr("cg_vocab_from_tokenizer_json", || {
        if path.is_null() {
            return Err(null("path"));
        }
        let path = CStr::from_ptr(path);
        #[cfg(unix)]
        let path = {
            use std::os::unix::ffi::OsStrExt;
            std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()))
        };
        #[cfg(not(unix))]
        let path = std::path::Path::new(path.to_str().map_err(|e| utf8_error("path", e))?);
        // The path is the only argument: whatever is wrong with what it
        // names (an end-of-sequence token missing from the vocabulary, say)
        // is the file's fault, not the caller's.
        let vocab = Vocab::from_tokenizer_json(path).map_err(|e| match e.kind() {
            ErrorKind::InvalidArgument => Error::io(e.message()),
            _ => e,
        })?;
        Ok(into_handle(cg_vocab {
            inner: Arc::new(vocab),
        }))
    })
}

/// Builds a vocabulary from what a host such as llama.cpp knows about its
/// tokenizer: for each token id `0 .. n_tokens-1`, its exact bytes
/// (`token_bytes[i]`, `token_lens[i]` bytes long, not NUL-terminated; NULL
/// is allowed for a token of length 0) and its flags (`token_flags[i]`, a
/// combination of `CG_TOKEN_SPECIAL`; `token_flags` may be NULL: no special
/// tokens), plus the `n_eos` end-of-sequence ids in `eos_tokens` (NULL if
/// `n_eos` is 0).
///
/// Special tokens and tokens with no bytes never match grammar text. All
/// arrays are copied: the caller keeps ownership and may free them after
/// the call. Returns a new vocabulary that the caller frees with
/// `cg_vocab_free`, or NULL on error (`CG_ERR_INVALID_ARGUMENT` for NULL
/// arrays, no tokens, unknown flag bits or an EOS id out of range; `CG_ERR_LIMIT` for more than
/// 16777216 tokens or a token longer than 65536 bytes). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_new(
    n_tokens: u32,
    token_bytes: *const *const u8,
    token_lens: *const u32,
    token_flags: *const u32,
    eos_tokens: *const i32,
    n_eos: u32,
) -> *mut cg_vocab {
    guard_ptr("cg_vocab_new", || {
        let n = n_tokens as usize;
        if n == 0 {
            return Err(Error::invalid(
                "n_tokens is 0: a vocabulary needs at least one token",
            ));
        }
        if n > MAX_VOCAB_SIZE {
            return Err(Error::limit(format!(
                "n_tokens {n} exceeds the limit of {MAX_VOCAB_SIZE}"
            )));
        }
        if token_bytes.is_null() {
            return Err(null("token_bytes"));
        }
        if token_lens.is_null() {
            return Err(null("token_lens"));
        }
        let ptrs = array_arg(token_bytes, n, "token_bytes")?;
        let lens = array_arg(token_lens, n, "token_lens")?;
        let flags = if token_flags.is_null() {
            vec![0; n]
        } else {
            array_arg(token_flags, n, "token_flags")?.to_vec()
        };
        if let Some(i) = flags.iter().position(|&f| f & !CG_TOKEN_SPECIAL != 0) {
            return Err(Error::invalid(format!(
                "token_flags[{i}] has unknown bits {:#x}",
                flags[i] & !CG_TOKEN_SPECIAL
            )));
        }
        let mut tokens = Vec::with_capacity(n);
        for (i, (&p, &len)) in ptrs.iter().zip(lens).enumerate() {
            let bytes = bytes_arg(p, len as usize, "token_bytes[i]")
                .map_err(|e| Error::invalid(format!("token {i}: {}", e.message())))?;
            tokens.push(bytes.to_vec());
        }
        let eos = array_arg(eos_tokens, n_eos as usize, "eos_tokens")?
            .iter()
            .map(|&t| token_arg(t, n, "end-of-sequence token"))
            .collect::<Result<Vec<u32>>>()?;
        let vocab = Vocab::new(tokens, flags, eos)?;
        Ok(into_handle(cg_vocab {
            inner: Arc::new(vocab),
        }))
    })
}

/// The number of tokens of the vocabulary (token ids are `0 .. size-1`), or
/// 0 if `vocab` is NULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_size(vocab: *const cg_vocab) -> u32 {
    guard(
        "cg_vocab_size",
        |_| 0,
        || Ok(vocab_ref(vocab)?.len() as u32),
    )
}

/// The exact bytes of token `token`: returns a pointer to `*len` bytes (not
/// NUL-terminated), owned by the vocabulary and valid as long as the
/// vocabulary lives (until `cg_vocab_free` and the last grammar compiled
/// from it are gone, or `cg_vocab_set_eos`). Special tokens have their text
/// (e.g. "<|eot_id|>"). An empty token gives a non-NULL pointer and
/// `*len` = 0.
///
/// Returns NULL and sets `*len` to 0 (when `len` is not NULL) if `vocab` or
/// `len` is NULL or `token` is out of range. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_token_bytes(
    vocab: *const cg_vocab,
    token: i32,
    len: *mut usize,
) -> *const u8 {
    if !len.is_null() {
        *len = 0;
    }
    guard(
        "cg_vocab_token_bytes",
        |_| ptr::null(),
        || {
            let vocab = vocab_ref(vocab)?;
            if len.is_null() {
                return Err(null("len"));
            }
            let id = token_arg(token, vocab.len(), "token")?;
            let bytes = vocab.token_bytes(id);
            *len = bytes.len();
            Ok(bytes.as_ptr())
        },
    )
}

/// The vocabulary's end-of-sequence token ids, in increasing order: writes
/// up to `cap` of them to `out` (which may be NULL when `cap` is 0) and
/// returns how many there are in all, which may be more than `cap` (call
/// once with `cap` = 0 to size the buffer). Returns a negative `CG_ERR_*` on
/// error. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_eos_tokens(
    vocab: *const cg_vocab,
    out: *mut i32,
    cap: usize,
) -> c_int {
    guard_int("cg_vocab_eos_tokens", || {
        let eos = vocab_ref(vocab)?.eos_tokens();
        let out = array_mut(out, cap.min(eos.len()), "out")?;
        for (o, &e) in out.iter_mut().zip(eos) {
            *o = e as i32;
        }
        Ok(eos.len() as c_int)
    })
}

/// Replaces the vocabulary's end-of-sequence tokens with the `n_eos` ids in
/// `eos_tokens` (NULL if `n_eos` is 0; an empty list means no token ends
/// the sequence). Hosts use it when the model's chat template ends turns
/// with another token than the tokenizer's default.
///
/// Only possible before any grammar is compiled from the vocabulary: fails
/// with `CG_ERR_INVALID_ARGUMENT` while a grammar (or a matcher made from
/// one) compiled from it, or another handle from `cg_vocab_clone`, is
/// still alive, since they were built for the old
/// list. Invalidates pointers from `cg_vocab_token_bytes`. Returns `CG_OK`
/// or a negative `CG_ERR_*`. Not thread-safe: no other thread may use this
/// vocabulary during the call.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_set_eos(
    vocab: *mut cg_vocab,
    eos_tokens: *const i32,
    n_eos: usize,
) -> c_int {
    guard_int("cg_vocab_set_eos", || {
        let handle = vocab.as_mut().ok_or_else(|| null("vocab"))?;
        let n = handle.inner.len();
        let eos = array_arg(eos_tokens, n_eos, "eos_tokens")?
            .iter()
            .map(|&t| token_arg(t, n, "end-of-sequence token"))
            .collect::<Result<Vec<u32>>>()?;
        let users = Arc::strong_count(&handle.inner) - 1;
        let Some(slot) = Arc::get_mut(&mut handle.inner) else {
            return Err(Error::invalid(format!(
                "cannot change the end-of-sequence tokens: {users} grammar(s) compiled from this \
                 vocabulary (or other handles from cg_vocab_clone) are still alive; set them \
                 before compiling, or free the grammars and their matchers first"
            )));
        };
        *slot = slot.with_eos(eos)?;
        Ok(CG_OK)
    })
}

/// A new handle to the same vocabulary (nothing is copied): for a host that
/// keeps the vocabulary in two places and frees each handle on its own.
/// Returns NULL on error (`vocab` is NULL). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_clone(vocab: *const cg_vocab) -> *mut cg_vocab {
    guard_ptr("cg_vocab_clone", || {
        Ok(into_handle(cg_vocab {
            inner: Arc::clone(vocab_ref(vocab)?),
        }))
    })
}

/// Sets the byte budget of the vocabulary's lexeme cache (default
/// 192 MiB; 0 keeps nothing, `SIZE_MAX` has no bound) and evicts down to it.
///
/// Every vocabulary keeps the lexeme automata its grammars were built
/// from, with the token sets masks computed for their states, so that the
/// next grammar that needs the same lexeme (a string pattern, a format, a
/// number) gets them ready. Past the budget the least recently used are
/// dropped from the cache; grammars that use them keep them until freed,
/// and a later compile builds them again. The budget changes compile and
/// first-mask times, never a mask. A server that compiles many distinct
/// schemas on one vocabulary sets it to the memory it can spare. The
/// budget is shared by all handles of the vocabulary (`cg_vocab_clone`)
/// and kept by `cg_vocab_set_eos`.
/// Returns `CG_OK`, or `CG_ERR_INVALID_ARGUMENT` if `vocab` is NULL.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_set_cache_budget(
    vocab: *mut cg_vocab,
    budget_bytes: usize,
) -> c_int {
    guard_int("cg_vocab_set_cache_budget", || {
        vocab_ref(vocab)?.set_cache_budget(budget_bytes);
        Ok(CG_OK)
    })
}

/// The approximate bytes held by the vocabulary's lexeme cache now (see
/// `cg_vocab_set_cache_budget`), or 0 if `vocab` is NULL. It can exceed
/// the budget between compiles, by what masks learned since the last
/// one. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_cache_bytes(vocab: *const cg_vocab) -> usize {
    guard(
        "cg_vocab_cache_bytes",
        |_| 0,
        || Ok(vocab_ref(vocab)?.cache_stats().bytes),
    )
}

/// Releases the caller's reference to a vocabulary. Grammars compiled from
/// it keep their own reference, so it may be freed while they live: the
/// memory goes when the last of them is freed. NULL is a no-op. Each
/// vocabulary must be freed exactly once.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_free(vocab: *mut cg_vocab) {
    free_handle("cg_vocab_free", vocab)
}

// ---------------------------------------------------------------------------
// Compiling.

/// Fills `*options` with the defaults: `struct_size` =
/// `sizeof(cg_compile_options)`, `kind` = `CG_KIND_GBNF`, `root` = NULL
/// ("root"), `flags` = 0, `json_max_whitespace` = 0 (unbounded),
/// `max_compile_ms` = 10000, `max_states` = 1000000, `json_indent` = 0,
/// the separators NULL (no fixed formatting) and `json_documents` NULL
/// (no extra documents). It writes the whole
/// struct. NULL is a no-op (and sets `cg_last_error`). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_compile_options_init(options: *mut cg_compile_options) {
    guard(
        "cg_compile_options_init",
        |_| (),
        || {
            if options.is_null() {
                return Err(null("options"));
            }
            options.write_unaligned(cg_compile_options {
                struct_size: size_of::<cg_compile_options>() as u32,
                kind: CG_KIND_GBNF,
                root: ptr::null(),
                flags: 0,
                json_max_whitespace: 0,
                max_compile_ms: DEFAULT_MAX_COMPILE_MS,
                max_states: DEFAULT_MAX_STATES as u64,
                max_mask_steps: crate::limits::DEFAULT_MAX_MASK_STEPS,
                json_indent: 0,
                json_item_separator: ptr::null(),
                json_key_separator: ptr::null(),
                json_documents: ptr::null(),
            });
            Ok(())
        },
    )
}

/// Compiles a grammar for a vocabulary: `source` is `source_len` bytes of
/// UTF-8 text (not necessarily NUL-terminated; NULL only if `source_len` is
/// 0) whose meaning `options->kind` gives: GBNF, JSON Schema, regex, or
/// ignored for `CG_KIND_ANY_JSON`. `options` may be NULL for the defaults
/// (GBNF with start rule "root"); otherwise `options->struct_size` must be
/// at least the size of the fields that never move (use
/// `cg_compile_options_init`).
///
/// A GBNF token reference (`<[id]>`, `<name>`) that no token can match
/// never matches: an id past the vocabulary, or an EOS token (EOS ends the
/// output instead of being read, as in llama.cpp, where an end-of-generation
/// token never reaches the grammar). The branch through it is dropped; a
/// grammar left with nothing to match is an error.
///
/// Returns a new grammar that the caller frees with `cg_free`, or NULL on
/// error with `cg_last_error` saying why: `CG_ERR_INVALID_ARGUMENT` (NULL
/// pointers, bad options, source not UTF-8: the message gives the byte
/// offset; also a source that matches no string at all, such as an
/// unsatisfiable schema), `CG_ERR_PARSE` (with the position),
/// `CG_ERR_UNSUPPORTED`,
/// `CG_ERR_LIMIT` (a limit of `cg_compile_options` or one of the fixed
/// ones the README lists; the message names it and its value). The source,
/// the options and `root` are only read during
/// the call. The grammar keeps the vocabulary alive. Thread-safe: several
/// threads may compile for the same vocabulary at once.
#[no_mangle]
pub unsafe extern "C" fn cg_compile(
    vocab: *const cg_vocab,
    source: *const c_char,
    source_len: usize,
    options: *const cg_compile_options,
) -> *mut cg_grammar {
    guard_ptr("cg_compile", || {
        let vocab = vocab_ref(vocab)?;
        let (source, options) = compile_args(source, source_len, options)?;
        let grammar = source::compile(vocab, source, &options)?;
        Ok(into_handle(cg_grammar::new(grammar)))
    })
}

/// `cg_compile`'s source and options, checked.
unsafe fn compile_args<'a>(
    source: *const c_char,
    source_len: usize,
    options: *const cg_compile_options,
) -> Result<(&'a [u8], CompileOptions)> {
    let options = read_options(options)?;
    let source = bytes_arg(source.cast(), source_len, "source")?;
    std::str::from_utf8(source).map_err(|e| utf8_error("source", e))?;
    Ok((source, options))
}

/// A new reference to the same grammar (no copy is made), to be freed with
/// `cg_free` on its own; NULL if `grammar` is NULL (with `cg_last_error`
/// set). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_clone(grammar: *const cg_grammar) -> *mut cg_grammar {
    guard_ptr("cg_grammar_clone", || {
        let g = grammar.as_ref().ok_or_else(|| null("grammar"))?;
        Ok(into_handle(cg_grammar {
            inner: g.inner.clone(),
            dropped: g.dropped.clone(),
        }))
    })
}

/// How many keywords the compile left out (`CG_JSON_LENIENT`; 0 for every
/// other compile), or `CG_ERR_INVALID_ARGUMENT` if `grammar` is NULL.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_dropped_count(grammar: *const cg_grammar) -> c_int {
    guard_int("cg_grammar_dropped_count", || {
        let g = grammar.as_ref().ok_or_else(|| null("grammar"))?;
        Ok(c_int::try_from(g.dropped.len()).unwrap_or(c_int::MAX))
    })
}

/// The keyword left out at `index` (0 to `cg_grammar_dropped_count - 1`)
/// by a `CG_JSON_LENIENT` compile, e.g. "uniqueItems", "format", "not";
/// NULL (with `cg_last_error` set) if `grammar` is NULL or `index` is out
/// of range. When `pointer` is not NULL, `*pointer` is set to the JSON
/// pointer of the schema that holds the keyword ("" for the root, e.g.
/// "/properties/tags"; in a document of `json_documents`, its URI, "#"
/// and the pointer); when `reason` is not NULL, `*reason` is set to why
/// the keyword cannot be enforced. Each keyword and place is reported
/// once, in the order met. The strings belong to the grammar handle: they
/// stay valid until `cg_free(grammar)`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_dropped(
    grammar: *const cg_grammar,
    index: usize,
    pointer: *mut *const c_char,
    reason: *mut *const c_char,
) -> *const c_char {
    guard(
        "cg_grammar_dropped",
        |_| ptr::null(),
        || {
            let g = grammar.as_ref().ok_or_else(|| null("grammar"))?;
            let d = g.dropped.get(index).ok_or_else(|| {
                Error::invalid(format!(
                    "index {index} is out of range ({} keywords left out)",
                    g.dropped.len()
                ))
            })?;
            if !pointer.is_null() {
                pointer.write_unaligned(d[1].as_ptr());
            }
            if !reason.is_null() {
                reason.write_unaligned(d[2].as_ptr());
            }
            Ok(d[0].as_ptr())
        },
    )
}

/// The size of the vocabulary the grammar was compiled for, or 0 if
/// `grammar` is NULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_vocab_size(grammar: *const cg_grammar) -> u32 {
    guard(
        "cg_grammar_vocab_size",
        |_| 0,
        || Ok(grammar_ref(grammar)?.vocab().len() as u32),
    )
}

/// The number of 32-bit words of a token mask for this grammar:
/// ceil(vocabulary size / 32). Returns 0 if `grammar` is NULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_mask_words(grammar: *const cg_grammar) -> usize {
    guard(
        "cg_mask_words",
        |_| 0,
        || Ok(grammar_ref(grammar)?.vocab().mask_words()),
    )
}

/// Releases the caller's reference to a grammar. Matchers made from it keep
/// their own reference, so it may be freed while they live. NULL is a
/// no-op. Each grammar must be freed exactly once.
#[no_mangle]
pub unsafe extern "C" fn cg_free(grammar: *mut cg_grammar) {
    free_handle("cg_free", grammar)
}

// ---------------------------------------------------------------------------
// The grammar cache.

/// A cache of compiled grammars and triggers, for hosts that compile the
/// same sources again and again (a server that builds a sampler for every
/// request). Thread-safe: share one across threads.
pub struct cg_grammar_cache {
    inner: GrammarCache,
}

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
        Ok(into_handle(cg_grammar_cache {
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
        let cache = cache_ref(cache)?;
        let vocab = vocab_ref(vocab)?;
        // A hit has the bytes of a source that compiled; a miss checks
        // UTF-8 in `compile`, so the text is not read twice here.
        let options = read_options(options)?;
        let source = bytes_arg(source.cast(), source_len, "source")?;
        let grammar = cache.grammar(vocab, source, &options)?;
        Ok(into_handle(cg_grammar::new(grammar)))
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
        let cache = cache_ref(cache)?;
        let vocab = vocab_ref(vocab)?;
        let specs = trigger_specs(vocab, triggers, n)?;
        Ok(into_handle(cg_triggers {
            inner: cache.triggers(vocab, &specs)?,
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
            cache_ref(cache)?.set_budget(budget);
            Ok(())
        },
    )
}

/// Fills `*stats` (whose `struct_size` the caller sets) with the cache's
/// counters. Returns `CG_OK`, or `CG_ERR_INVALID_ARGUMENT` for NULL
/// pointers or a `struct_size` smaller than its first field. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_cache_get_stats(
    cache: *const cg_grammar_cache,
    stats: *mut cg_grammar_cache_stats,
) -> c_int {
    guard_int("cg_grammar_cache_get_stats", || {
        let s = cache_ref(cache)?.stats();
        if stats.is_null() {
            return Err(null("stats"));
        }
        let size = ptr::read_unaligned(stats.cast::<u32>()) as usize;
        if size < size_of::<u32>() {
            return Err(Error::invalid(format!(
                "stats->struct_size is {size}; set it to sizeof(cg_grammar_cache_stats)"
            )));
        }
        // Only the fields that fit in the caller's struct are written.
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
            cache_ref(cache)?.forget_vocab(vocab_ref(vocab)?);
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
            cache_ref(cache)?.clear();
            Ok(())
        },
    )
}

/// Frees a grammar cache (grammars and triggers in use stay alive with
/// their users). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn cg_grammar_cache_free(cache: *mut cg_grammar_cache) {
    free_handle("cg_grammar_cache_free", cache)
}

// ---------------------------------------------------------------------------
// Matchers.

/// A new matcher at the start of the grammar, for one sequence. The caller
/// frees it with `cg_matcher_free`; it keeps the grammar alive. Returns NULL
/// on error. Thread-safe (the grammar is only read).
#[no_mangle]
pub unsafe extern "C" fn cg_matcher_new(grammar: *const cg_grammar) -> *mut cg_matcher {
    guard_ptr("cg_matcher_new", || {
        let grammar = grammar_ref(grammar)?;
        Ok(into_handle(cg_matcher {
            inner: AnyMatcher::Eager(Matcher::new(Arc::clone(grammar))),
        }))
    })
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
        let vocab = vocab_ref(vocab)?;
        let specs = trigger_specs(vocab, triggers, n)?;
        Ok(into_handle(cg_triggers {
            inner: Arc::new(Triggers::new(vocab, &specs)?),
        }))
    })
}

/// The host's trigger list, checked.
unsafe fn trigger_specs(
    vocab: &Vocab,
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
                vocab.len(),
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
    free_handle("cg_triggers_free", triggers)
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
/// mask would take more than about a millisecond, none is made and every
/// such token is allowed unchecked, so that the mask depends on the state
/// alone (it is the same after `cg_rollback` and in a clone).
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
        let grammar = grammar_ref(grammar)?;
        let triggers = triggers
            .as_ref()
            .map(|t| &t.inner)
            .ok_or_else(|| null("triggers"))?;
        let lazy = LazyMatcher::new(Arc::clone(grammar), Arc::clone(triggers))?;
        Ok(into_handle(cg_matcher {
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
        let (fired, at) = match matcher_ref(matcher)? {
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

/// A copy of a matcher in its current state (cheap; for beam search or for
/// trying tokens). The two then evolve independently. The caller frees the
/// copy with `cg_matcher_free`. Returns NULL on error. The original must not
/// be in use by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn cg_matcher_clone(matcher: *const cg_matcher) -> *mut cg_matcher {
    guard_ptr("cg_matcher_clone", || {
        let m = matcher_ref(matcher)?;
        Ok(into_handle(cg_matcher { inner: m.clone() }))
    })
}

/// Frees a matcher. NULL is a no-op. Each matcher must be freed exactly
/// once.
#[no_mangle]
pub unsafe extern "C" fn cg_matcher_free(matcher: *mut cg_matcher) {
    free_handle("cg_matcher_free", matcher)
}

/// Writes the set of tokens allowed next: bit `t % 32` of `mask[t / 32]` is
/// 1 exactly when token `t` may come next, that is when some continuation of
/// the output with it is in the language. EOS tokens are allowed exactly
/// when the matcher is accepting; special tokens only where the grammar
/// names them. Bits past the vocabulary size are 0.
///
/// `mask` must hold `n_words` >= `cg_mask_words(grammar)` words; only the
/// first `cg_mask_words` words are written. Returns `CG_OK`, or a negative
/// `CG_ERR_*`: `CG_ERR_INVALID_ARGUMENT` for a NULL matcher or a NULL or
/// too short mask, which leaves the buffer untouched; `CG_ERR_LIMIT` when
/// the mask needs more work than the grammar's `max_mask_steps`. After any
/// error but the first the mask is all zeros (a caller that ignores it
/// allows nothing). Not thread-safe for one matcher (it updates caches
/// inside the matcher).
#[no_mangle]
pub unsafe extern "C" fn cg_fill_mask(
    matcher: *mut cg_matcher,
    mask: *mut u32,
    n_words: usize,
) -> c_int {
    guard_int("cg_fill_mask", || {
        let m = matcher_mut(matcher)?;
        let need = m.grammar().vocab().mask_words();
        if mask.is_null() {
            return Err(null("mask"));
        }
        if n_words < need {
            return Err(Error::invalid(format!(
                "mask has {n_words} words but the vocabulary of {} tokens needs {need} \
                 (cg_mask_words)",
                m.grammar().vocab().len()
            )));
        }
        let mask = array_mut(mask, need, "mask")?;
        fill(m, mask)?;
        Ok(CG_OK)
    })
}

/// Fills the masks of `n` matchers at once, spread over `n_threads` threads
/// (0: one per CPU; 1: all in the calling thread). `matchers` holds `n`
/// distinct, non-NULL matcher pointers (the same matcher twice is an error);
/// `masks` holds `n * n_words` words, mask `i` starting at
/// `masks + i * n_words`, and `n_words` must be at least `cg_mask_words` of
/// every matcher's grammar.
///
/// Returns `CG_OK` when every mask was filled. Arguments that break these
/// rules are `CG_ERR_INVALID_ARGUMENT` before any mask is written.
/// Otherwise returns the error code of the first matcher that failed (its
/// index is in `cg_last_error`); the other masks are still filled, and
/// each failed one is all zeros. No matcher of the batch may be in use by
/// another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn cg_fill_masks(
    matchers: *const *mut cg_matcher,
    n: usize,
    masks: *mut u32,
    n_words: usize,
    n_threads: u32,
) -> c_int {
    guard_int("cg_fill_masks", || {
        let ptrs = array_arg(matchers, n, "matchers")?;
        if let Some(i) = ptrs.iter().position(|p| p.is_null()) {
            return Err(Error::invalid(format!("matchers[{i}] is NULL")));
        }
        let mut sorted: Vec<(usize, usize)> = ptrs
            .iter()
            .enumerate()
            .map(|(i, &p)| (p as usize, i))
            .collect();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::invalid(format!(
                "matchers[{}] and matchers[{}] are the same matcher; each may appear once",
                w[0].1.min(w[1].1),
                w[0].1.max(w[1].1)
            )));
        }
        // SAFETY of the &mut: the pointers are distinct (checked above) and
        // the caller promises no other thread uses them.
        let mut ms: Vec<&mut AnyMatcher> = ptrs.iter().map(|&p| &mut (*p).inner).collect();
        if let Some((i, m)) = ms
            .iter()
            .enumerate()
            .find(|(_, m)| m.grammar().vocab().mask_words() > n_words)
        {
            return Err(Error::invalid(format!(
                "n_words is {n_words} but matchers[{i}] needs {} (cg_mask_words)",
                m.grammar().vocab().mask_words()
            )));
        }
        let total = n
            .checked_mul(n_words)
            .ok_or_else(|| Error::invalid("n * n_words overflows"))?;
        if n == 0 {
            return Ok(CG_OK);
        }
        if masks.is_null() {
            return Err(null("masks"));
        }
        let masks = array_mut(masks, total, "masks")?;
        let threads = match n_threads {
            0 => std::thread::available_parallelism().map_or(1, |t| t.get()),
            t => t as usize,
        }
        .clamp(1, n);
        let mut results: Vec<Result<()>> = (0..n).map(|_| Ok(())).collect();
        let run = |ms: &mut [&mut AnyMatcher], masks: &mut [u32], results: &mut [Result<()>]| {
            for ((m, mask), r) in ms.iter_mut().zip(masks.chunks_mut(n_words)).zip(results) {
                let need = m.grammar().vocab().mask_words();
                *r = fill(m, &mut mask[..need]);
            }
        };
        if threads == 1 {
            run(&mut ms, masks, &mut results);
        } else {
            let per = n.div_ceil(threads);
            std::thread::scope(|s| {
                let mut handles = Vec::new();
                let mut chunks = ms
                    .chunks_mut(per)
                    .zip(masks.chunks_mut(per * n_words))
                    .zip(results.chunks_mut(per));
                // The calling thread takes the first chunk itself.
                let first = chunks.next();
                for ((ms, masks), results) in chunks {
                    handles.push(s.spawn(move || run(ms, masks, results)));
                }
                if let Some(((ms, masks), results)) = first {
                    run(ms, masks, results);
                }
                for h in handles {
                    // `fill` catches panics, so joining cannot fail.
                    let _ = h.join();
                }
            });
        }
        for (i, r) in results.into_iter().enumerate() {
            r.map_err(|e| e.context(format!("matchers[{i}]")))?;
        }
        Ok(CG_OK)
    })
}

/// Advances the matcher by one token. Returns `CG_OK`, or a negative
/// `CG_ERR_*` and leaves the matcher unchanged: `CG_ERR_INVALID_ARGUMENT`
/// (NULL matcher, `token` negative or not below the vocabulary size),
/// `CG_ERR_TOKEN_REJECTED` (the grammar does not allow the token here;
/// `cg_last_error` says why), `CG_ERR_TERMINATED` (the matcher already
/// accepted EOS). Accepting an EOS token (allowed when the matcher is
/// accepting) terminates the matcher. Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_accept(matcher: *mut cg_matcher, token: i32) -> c_int {
    guard_int("cg_accept", || {
        let m = matcher_mut(matcher)?;
        let id = token_arg(token, m.grammar().vocab().len(), "token")?;
        m.accept(id)?;
        Ok(CG_OK)
    })
}

/// Advances the matcher on raw text: `len` bytes at `bytes` (NULL only if
/// `len` is 0), matched as if generated by any tokens that spell them (to
/// force a prefix of the output, or to check a finished output with a fresh
/// matcher). Returns `CG_OK`, or a negative `CG_ERR_*` and leaves the
/// matcher unchanged (`CG_ERR_TOKEN_REJECTED` when the text is not a prefix
/// of the language). The whole call is one step of the history: one
/// `cg_rollback` step undoes it, whatever the number of tokens its text
/// spans. Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_accept_bytes(
    matcher: *mut cg_matcher,
    bytes: *const u8,
    len: usize,
) -> c_int {
    guard_int("cg_accept_bytes", || {
        let m = matcher_mut(matcher)?;
        let bytes = bytes_arg(bytes, len, "bytes")?;
        m.accept_bytes(bytes)?;
        Ok(CG_OK)
    })
}

/// Undoes the last `n_tokens` accepted tokens (speculative decoding: drop
/// the draft tokens the model refused). Returns `CG_OK`, or
/// `CG_ERR_INVALID_ARGUMENT` and leaves the matcher unchanged when
/// `n_tokens` is more than the tokens accepted since the start or the last
/// `cg_reset` (a `cg_accept_bytes` call counts as one token here). Rolling
/// back EOS un-terminates the matcher. Not thread-safe
/// for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_rollback(matcher: *mut cg_matcher, n_tokens: u32) -> c_int {
    guard_int("cg_rollback", || {
        let m = matcher_mut(matcher)?;
        let n = n_tokens as usize;
        let have = m.num_tokens();
        if n > have {
            return Err(Error::invalid(format!(
                "cannot roll back {n} tokens: only {have} accepted since the start"
            )));
        }
        m.rollback(n)?;
        Ok(CG_OK)
    })
}

/// 1 when the output so far is complete (a sentence of the language), so
/// that EOS is allowed now; 0 when not; `CG_ERR_INVALID_ARGUMENT` for NULL.
/// Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_is_accepting(matcher: *const cg_matcher) -> c_int {
    guard_int("cg_is_accepting", || {
        Ok(matcher_ref(matcher)?.is_accepting() as c_int)
    })
}

/// 1 when the matcher has terminated: EOS was accepted, or nothing at all
/// can follow (then the only allowed tokens are EOS); 0 when not;
/// `CG_ERR_INVALID_ARGUMENT` for NULL. Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_is_terminated(matcher: *const cg_matcher) -> c_int {
    guard_int("cg_is_terminated", || {
        Ok(matcher_ref(matcher)?.is_terminated() as c_int)
    })
}

/// Jump-forward decoding: writes to `out` up to `cap` tokens whose text the
/// grammar forces next, whatever the model would choose, and returns how
/// many were written (0 when the next text is not forced). `out` may be
/// NULL only when `cap` is 0. The matcher is not advanced: feed the tokens
/// to the model and `cg_accept` them. Returns a negative `CG_ERR_*` on
/// error. Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_forced_tokens(
    matcher: *mut cg_matcher,
    out: *mut i32,
    cap: usize,
) -> c_int {
    guard_int("cg_forced_tokens", || {
        let m = matcher_mut(matcher)?;
        let cap = cap.min(c_int::MAX as usize);
        let out = array_mut(out, cap, "out")?;
        let tokens = m.forced_tokens(cap)?;
        let n = tokens.len().min(cap);
        for (o, &t) in out.iter_mut().zip(&tokens[..n]) {
            *o = t as i32;
        }
        Ok(n as c_int)
    })
}

/// Puts the matcher back at the start of the grammar, as `cg_matcher_new`
/// made it (to reuse it for a new sequence). NULL is a no-op (and sets
/// `cg_last_error`). Not thread-safe for one matcher.
#[no_mangle]
pub unsafe extern "C" fn cg_reset(matcher: *mut cg_matcher) {
    guard(
        "cg_reset",
        |_| (),
        || {
            matcher_mut(matcher)?.reset();
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_error() -> String {
        unsafe { CStr::from_ptr(cg_last_error()) }
            .to_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_panic_becomes_an_internal_error() {
        let rc = guard_int("cg_test", || panic!("boom {}", 42));
        assert_eq!(rc, CG_ERR_INTERNAL);
        let msg = last_error();
        assert!(
            msg.starts_with("cg_test: internal error (panic at src/ffi.rs:")
                && msg.ends_with("): boom 42"),
            "{msg}"
        );
        let p: *mut u8 = guard_ptr("cg_test", || panic!("static message"));
        assert!(p.is_null());
        assert!(last_error().contains("static message"));
    }

    /// Set in the child process of [`a_caught_panic_prints_nothing`].
    const PANIC_CHILD: &str = "CGRAM_TEST_PANIC_CHILD";

    /// A panic inside a C call writes nothing to stderr, even with
    /// backtraces on, while a panic elsewhere in the process still reaches
    /// the hook that was there before. Run in a child process: the test
    /// harness captures panic output of its own threads, which would hide
    /// a print.
    #[test]
    fn a_caught_panic_prints_nothing() {
        if std::env::var_os(PANIC_CHILD).is_some() {
            let rc = guard_int("cg_test", || panic!("quiet boom"));
            assert_eq!(rc, CG_ERR_INTERNAL);
            assert!(last_error().contains("quiet boom"));
            // A worker thread (as `cg_fill_masks` starts) is quiet too.
            let worker = std::thread::spawn(|| catch_quietly(|| panic!("quiet worker")).is_err());
            assert!(worker.join().unwrap());
            let outside = std::thread::spawn(|| panic!("loud boom")).join();
            assert!(outside.is_err());
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "ffi::tests::a_caught_panic_prints_nothing"])
            .args(["--nocapture", "--test-threads", "1"])
            .env(PANIC_CHILD, "1")
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed: {stderr}");
        assert!(
            !stderr.contains("quiet"),
            "a caught panic printed: {stderr}"
        );
        assert!(
            stderr.contains("loud boom"),
            "the host's panic was lost: {stderr}"
        );
    }

    #[test]
    fn errors_keep_their_code_and_the_slot_is_per_thread() {
        assert_eq!(last_error(), "");
        let rc = guard_int("cg_x", || Err(Error::limit("too big")));
        assert_eq!(rc, CG_ERR_LIMIT);
        assert_eq!(last_error(), "cg_x: too big");
        std::thread::spawn(|| assert_eq!(last_error(), ""))
            .join()
            .unwrap();
        // A success leaves the message alone.
        assert_eq!(guard_int("cg_y", || Ok(7)), 7);
        assert_eq!(last_error(), "cg_x: too big");
        // A NUL inside a message does not lose it.
        guard_int("cg_z", || Err(Error::invalid("a\0b")));
        assert_eq!(last_error(), "cg_z: a\\0b");
    }

    fn options_bytes(o: &cg_compile_options) -> Vec<u8> {
        let p = o as *const cg_compile_options as *const u8;
        unsafe { slice::from_raw_parts(p, size_of::<cg_compile_options>()) }.to_vec()
    }

    fn defaults() -> cg_compile_options {
        let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
        unsafe {
            cg_compile_options_init(o.as_mut_ptr());
            o.assume_init()
        }
    }

    #[test]
    fn options_honour_struct_size() {
        let mut o = defaults();
        o.kind = CG_KIND_JSON_SCHEMA;
        o.root = c"start".as_ptr();
        o.flags = CG_JSON_COMPACT;
        o.json_max_whitespace = 3;
        o.max_compile_ms = 5;
        o.max_states = 6;
        let full = unsafe { read_options(&o) }.unwrap();
        assert_eq!(full.kind, Kind::JsonSchema);
        assert_eq!(full.root.as_deref(), Some("start"));
        assert_eq!(full.flags, CG_JSON_COMPACT);
        assert_eq!(full.json_max_whitespace, Some(3));
        assert_eq!((full.max_compile_ms, full.max_states), (5, 6));

        // An older caller whose struct ends after `root`: only the prefix is
        // read, from a buffer exactly that long.
        o.struct_size = OPTIONS_PREFIX as u32;
        let bytes = options_bytes(&o)[..OPTIONS_PREFIX].to_vec();
        let old = unsafe { read_options(bytes.as_ptr().cast()) }.unwrap();
        assert_eq!(old.kind, Kind::JsonSchema);
        assert_eq!(old.root.as_deref(), Some("start"));
        assert_eq!(old.flags, 0);
        assert_eq!(old.json_max_whitespace, None);
        assert_eq!(old.max_compile_ms, DEFAULT_MAX_COMPILE_MS);
        assert_eq!(old.max_states, DEFAULT_MAX_STATES);

        // A newer caller with more fields: what this library knows is read.
        let mut bigger = options_bytes(&o);
        bigger.extend_from_slice(&[0xAB; 64]);
        let size = bigger.len() as u32;
        bigger[..4].copy_from_slice(&size.to_ne_bytes());
        let new = unsafe { read_options(bigger.as_ptr().cast()) }.unwrap();
        assert_eq!(new.flags, CG_JSON_COMPACT);
        assert_eq!(new.max_states, 6);

        for size in [0, 4, OPTIONS_PREFIX as u32 - 1] {
            o.struct_size = size;
            let e = unsafe { read_options(&o) }.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains("struct_size"), "{e}");
        }
    }

    #[test]
    fn options_defaults_and_zero_limits() {
        let o = defaults();
        assert_eq!(o.struct_size as usize, size_of::<cg_compile_options>());
        let d = unsafe { read_options(&o) }.unwrap();
        assert_eq!(d.kind, Kind::Gbnf);
        assert_eq!(d.root, None);
        assert_eq!(d.max_compile_ms, DEFAULT_MAX_COMPILE_MS);
        assert_eq!(d.max_states, DEFAULT_MAX_STATES);
        let none = unsafe { read_options(ptr::null()) }.unwrap();
        assert_eq!(none.kind, Kind::Gbnf);

        let mut z = defaults();
        z.max_compile_ms = 0;
        z.max_states = 0;
        let u = unsafe { read_options(&z) }.unwrap();
        assert_eq!((u.max_compile_ms, u.max_states), (u64::MAX, usize::MAX));

        let mut bad = defaults();
        bad.kind = 99;
        assert!(unsafe { read_options(&bad) }
            .unwrap_err()
            .message()
            .contains("kind 99"));
        let mut bad = defaults();
        bad.flags = 0x80;
        assert!(unsafe { read_options(&bad) }
            .unwrap_err()
            .message()
            .contains("0x80"));
        let mut bad = defaults();
        bad.root = c"\xff".as_ptr();
        assert!(unsafe { read_options(&bad) }
            .unwrap_err()
            .message()
            .contains("UTF-8"));
    }
}
