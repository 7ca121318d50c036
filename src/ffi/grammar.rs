//! `cg_grammar` and `cg_compile_options`: compiling a source for a
//! vocabulary, and what a compiled grammar reports.

use std::ffi::{c_char, c_int, CStr, CString};
use std::mem::{offset_of, size_of};
use std::ptr;
use std::sync::Arc;

use super::args::{bytes_arg, null, struct_size_arg, unknown_fields_are_zero, utf8_error};
use super::error::{guard, guard_int, guard_ptr};
use super::handle::{handle, Handle};
use super::vocab::{cg_vocab, CG_TOKEN_SPECIAL};
use crate::error::{Error, Result};
use crate::limits::{DEFAULT_MAX_COMPILE_MS, DEFAULT_MAX_STATES};
use crate::source::{
    self, CompileOptions, Kind, FLAG_GBNF_ALLOW_LEFT_RECURSION, FLAG_JSON_COMPACT,
    FLAG_JSON_LENIENT, FLAG_JSON_NO_EXTRA_PROPERTIES, FLAG_JSON_ORDERED_PROPERTIES,
    FLAG_JSON_STRICT_INTEGERS,
};
use crate::tokensets::CompiledGrammar;

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

/// A grammar compiled for one vocabulary. Immutable: share one across
/// threads; every matcher made from it may run on its own thread.
pub struct cg_grammar {
    pub(crate) inner: Arc<CompiledGrammar>,
    /// The keywords left out (`CG_JSON_LENIENT`) as C strings: keyword,
    /// JSON pointer, reason.
    pub(crate) dropped: Vec<[CString; 3]>,
}

handle!(cg_grammar, Arc<CompiledGrammar>, "grammar");

impl cg_grammar {
    pub(crate) fn new(inner: Arc<CompiledGrammar>) -> cg_grammar {
        let c = |s: &str| CString::new(s.replace('\0', "\\0")).unwrap_or_default();
        let dropped = inner
            .automaton()
            .dropped()
            .iter()
            .map(|d| [c(&d.keyword), c(&d.pointer), c(&d.reason)])
            .collect();
        cg_grammar { inner, dropped }
    }
}

/// Options for `cg_compile`. Initialise with `cg_compile_options_init`, then
/// change the fields you need.
///
/// A versioned struct: it only ever grows at its end, and `struct_size`
/// says how much of it the caller has. `cg_compile_options_init` (a macro
/// passing `sizeof(cg_compile_options)` to `cg_compile_options_init_size`)
/// sets it, so the library never writes past the struct the program was
/// compiled with. A program built against an older header passes its
/// smaller `struct_size` and gets the defaults for the fields it does not
/// know. A program built against a newer header than the library passes a
/// larger one: the fields this library does not know must then hold their
/// defaults (every field added later defaults to 0), or `cg_compile` fails
/// with `CG_ERR_UNSUPPORTED` instead of ignoring them.
#[repr(C)]
pub struct cg_compile_options {
    /// `sizeof(cg_compile_options)` as the caller was compiled with it; set
    /// by `cg_compile_options_init`.
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
pub(crate) const OPTIONS_PREFIX: usize =
    offset_of!(cg_compile_options, root) + size_of::<*const c_char>();

/// Bytes of the first `cg_compile_options` (the first C API's: `struct_size`
/// to `max_states`). `cg_compile_options_init`, the symbol programs built
/// against headers before `cg_compile_options_init_size` call with no size,
/// writes no more than this.
pub(crate) const OPTIONS_FIRST_SIZE: usize =
    offset_of!(cg_compile_options, max_states) + size_of::<u64>();

/// Reads the options a caller passed, honouring its `struct_size`.
pub(crate) unsafe fn read_options(p: *const cg_compile_options) -> Result<CompileOptions> {
    let mut o = CompileOptions::default();
    if p.is_null() {
        return Ok(o);
    }
    let size = ptr::read_unaligned(p.cast::<u32>()) as usize;
    let size = struct_size_arg(
        size,
        OPTIONS_PREFIX,
        "options->struct_size",
        "initialise the options with cg_compile_options_init",
    )?;
    unknown_fields_are_zero(p.cast(), size_of::<cg_compile_options>(), size, "options")?;
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

/// Fills the first `options_size` bytes at `options` with the defaults:
/// `struct_size` = `options_size`, `kind` = `CG_KIND_GBNF`, `root` = NULL
/// ("root"), `flags` = 0, `json_max_whitespace` = 0 (unbounded),
/// `max_compile_ms` = 10000, `max_states` = 1000000, `max_mask_steps` =
/// 100000000, `json_indent` = 0, the separators NULL (no fixed
/// formatting), `json_documents` NULL (no extra documents), and 0 for
/// every byte past the fields this library knows. Nothing past
/// `options_size` bytes is written.
///
/// Call it through the `cg_compile_options_init` macro, which passes the
/// `sizeof(cg_compile_options)` of the header the program is compiled
/// with. `options_size` must cover `struct_size`, `kind` and `root` and be
/// at most 4096; otherwise, or if `options` is NULL, nothing is written
/// and `cg_last_error` says why (`CG_ERR_INVALID_ARGUMENT`). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_compile_options_init_size(
    options: *mut cg_compile_options,
    options_size: usize,
) {
    guard(
        "cg_compile_options_init_size",
        |_| (),
        || {
            if options.is_null() {
                return Err(null("options"));
            }
            let size = struct_size_arg(
                options_size,
                OPTIONS_PREFIX,
                "options_size",
                "pass sizeof(cg_compile_options) (the cg_compile_options_init macro does)",
            )?;
            write_default_options(options.cast(), size);
            Ok(())
        },
    )
}

/// The defaults of the first `cg_compile_options` (`struct_size` to
/// `max_states`, 40 bytes on 64-bit systems), and nothing past them: this
/// is the symbol that programs built against cgram headers older than
/// 0.2.0's `cg_compile_options_init_size` call, with no size. Such a
/// program gets `struct_size` = the size of those first fields, so
/// `cg_compile` reads no further and uses the defaults for the rest.
///
/// The header defines `cg_compile_options_init` as a macro that calls
/// `cg_compile_options_init_size` with the size of the struct it declares;
/// call this function directly (`(cg_compile_options_init)(&options)`,
/// or through a symbol lookup) only for the first fields. NULL is a no-op
/// (and sets `cg_last_error`). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_compile_options_init(options: *mut cg_compile_options) {
    guard(
        "cg_compile_options_init",
        |_| (),
        || {
            if options.is_null() {
                return Err(null("options"));
            }
            write_default_options(options.cast(), OPTIONS_FIRST_SIZE);
            Ok(())
        },
    )
}

/// Writes the default options into the `size` bytes at `p`: every field
/// that fits whole, zeros everywhere else (the default of every field not
/// set below, NULL pointers included, and of the fields a newer header
/// added). Nothing past `size` bytes.
unsafe fn write_default_options(p: *mut u8, size: usize) {
    ptr::write_bytes(p, 0, size);
    let put_u64 = |offset: usize, value: u64| {
        if offset + size_of::<u64>() <= size {
            p.add(offset).cast::<u64>().write_unaligned(value);
        }
    };
    // `size` is at least OPTIONS_PREFIX and at most MAX_STRUCT_SIZE.
    p.cast::<u32>().write_unaligned(size as u32);
    put_u64(
        offset_of!(cg_compile_options, max_compile_ms),
        DEFAULT_MAX_COMPILE_MS,
    );
    put_u64(
        offset_of!(cg_compile_options, max_states),
        DEFAULT_MAX_STATES as u64,
    );
    put_u64(
        offset_of!(cg_compile_options, max_mask_steps),
        crate::limits::DEFAULT_MAX_MASK_STEPS,
    );
    const _: () = assert!(CG_KIND_GBNF == 0);
}

/// Compiles a grammar for a vocabulary: `source` is `source_len` bytes of
/// UTF-8 text (not necessarily NUL-terminated; NULL only if `source_len` is
/// 0) whose meaning `options->kind` gives: GBNF, JSON Schema, regex, or
/// ignored for `CG_KIND_ANY_JSON`. `options` may be NULL for the defaults
/// (GBNF with start rule "root"); otherwise `options->struct_size` must
/// cover the fields that never move (`struct_size`, `kind`, `root`) and be
/// at most 4096 (use `cg_compile_options_init`), and only that many bytes
/// are read.
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
/// `CG_ERR_UNSUPPORTED` (also options with a field this library does not
/// know set: see `cg_compile_options`),
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
        let engine = cg_vocab::arg(vocab)?;
        let (source, options) = compile_args(source, source_len, options)?;
        let grammar = source::compile(engine, source, &options)?;
        Ok(Handle::into_raw(cg_grammar::new(grammar)))
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
        Ok(Handle::into_raw(cg_grammar {
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
        || Ok(cg_grammar::arg(grammar)?.engine().vocab().len() as u32),
    )
}

/// The number of 32-bit words of a token mask for this grammar:
/// ceil(vocabulary size / 32). Returns 0 if `grammar` is NULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_mask_words(grammar: *const cg_grammar) -> usize {
    guard(
        "cg_mask_words",
        |_| 0,
        || Ok(cg_grammar::arg(grammar)?.engine().vocab().mask_words()),
    )
}

/// Releases the caller's reference to a grammar. Matchers made from it keep
/// their own reference, so it may be freed while they live. NULL is a
/// no-op. Each grammar must be freed exactly once. Dropping the last
/// reference to a grammar also frees what the vocabulary's cache evicted
/// since (see `cg_vocab_set_cache_budget`), so that the compile that
/// overflowed the cache did not pay for it.
#[no_mangle]
pub unsafe extern "C" fn cg_free(grammar: *mut cg_grammar) {
    cg_grammar::free("cg_free", grammar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::slice;

    fn options_bytes(o: &cg_compile_options) -> Vec<u8> {
        let p = o as *const cg_compile_options as *const u8;
        unsafe { slice::from_raw_parts(p, size_of::<cg_compile_options>()) }.to_vec()
    }

    fn defaults() -> cg_compile_options {
        let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
        unsafe {
            cg_compile_options_init_size(o.as_mut_ptr(), size_of::<cg_compile_options>());
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

        // A newer caller with more fields at their default (0): what this
        // library knows is read.
        let mut bigger = options_bytes(&o);
        bigger.extend_from_slice(&[0; 64]);
        let size = bigger.len() as u32;
        bigger[..4].copy_from_slice(&size.to_ne_bytes());
        let new = unsafe { read_options(bigger.as_ptr().cast()) }.unwrap();
        assert_eq!(new.flags, CG_JSON_COMPACT);
        assert_eq!(new.max_states, 6);
        // One of those fields set: refused, not ignored.
        let at = bigger.len() - 7;
        bigger[at] = 1;
        let e = unsafe { read_options(bigger.as_ptr().cast()) }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains(&format!("byte {at} of {size}")), "{e}");

        for size in [0, 4, OPTIONS_PREFIX as u32 - 1, 4097, u32::MAX] {
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
