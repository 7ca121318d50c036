//! Source text of any kind to a compiled grammar: the one place that knows
//! every front end. It checks the source (size, UTF-8, flags for its
//! kind), runs the front end the [`Kind`] names ([`crate::gbnf`],
//! [`crate::json_schema`], [`crate::regex`]) to get grammar IR, and hands
//! that to [`crate::compile::compile_ir`]. The compile layer below never
//! sees a source text, so a new front end is a new [`Kind`] here and
//! nothing below.

use std::sync::Arc;

use crate::compile::{compile_ir, IrOptions};
use crate::error::{Error, Result};
use crate::limits::{self, Deadline};
use crate::tokensets::{CompiledGrammar, Engine};

/// What kind of source text is being compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gbnf,
    JsonSchema,
    Regex,
    AnyJson,
}

/// JSON: no optional whitespace at all (compact output).
pub const FLAG_JSON_COMPACT: u32 = 1;
/// JSON Schema: objects allow only the names their schemas list (what
/// most other engines do); see `CG_JSON_NO_EXTRA_PROPERTIES` in
/// [`crate::ffi`] for how schemas combine.
pub const FLAG_JSON_NO_EXTRA_PROPERTIES: u32 = 2;
/// GBNF: accept left-recursive grammars (llama.cpp rejects them; cgram's
/// parser handles them).
pub const FLAG_GBNF_ALLOW_LEFT_RECURSION: u32 = 4;
/// JSON Schema: listed properties come in the order `properties` lists
/// them (optional ones may be left out), unlisted ones after them.
pub const FLAG_JSON_ORDERED_PROPERTIES: u32 = 8;
/// JSON Schema: numbers that can only be integers are written as plain
/// integers (`12`, never `12.0` or `1.2e1`).
pub const FLAG_JSON_STRICT_INTEGERS: u32 = 16;
/// JSON Schema: keywords no automaton can enforce are left out (and
/// reported) instead of refusing the schema.
pub const FLAG_JSON_LENIENT: u32 = 32;
/// The flags that apply to JSON Schema sources.
const JSON_SCHEMA_FLAGS: u32 = FLAG_JSON_COMPACT
    | FLAG_JSON_NO_EXTRA_PROPERTIES
    | FLAG_JSON_ORDERED_PROPERTIES
    | FLAG_JSON_STRICT_INTEGERS
    | FLAG_JSON_LENIENT;

/// Options for [`compile`].
#[derive(Clone, Debug)]
pub struct CompileOptions {
    pub kind: Kind,
    /// GBNF start rule (`root` when `None`).
    pub root: Option<String>,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// JSON: the longest run of whitespace allowed between tokens (`None`:
    /// unbounded). Small models can loop on newlines.
    pub json_max_whitespace: Option<u32>,
    /// JSON: exactly one whitespace layout (an indent and separators);
    /// `None`: whitespace as `FLAG_JSON_COMPACT` and `json_max_whitespace`
    /// say. Excludes both.
    pub json_layout: Option<crate::json_schema::layout::FixedLayout>,
    /// Compilation fails with a limit error past this many milliseconds.
    pub max_compile_ms: u64,
    /// Compilation fails with a limit error past this many automaton states.
    pub max_states: usize,
    /// A mask fails with a limit error past this many parser steps
    /// (`u64::MAX`: no limit; see [`crate::tokensets::work`]).
    pub max_mask_steps: u64,
    /// JSON Schema: extra documents that `$ref`s may reach, the text of a
    /// JSON object mapping absolute URIs to schema documents (see
    /// [`crate::json_schema::parse_documents`]); `None`: none. Counted
    /// with the source against [`limits::MAX_SOURCE_BYTES`].
    pub json_documents: Option<std::sync::Arc<str>>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            kind: Kind::Gbnf,
            root: None,
            flags: 0,
            json_max_whitespace: None,
            json_layout: None,
            max_compile_ms: limits::DEFAULT_MAX_COMPILE_MS,
            max_states: limits::DEFAULT_MAX_STATES,
            max_mask_steps: limits::DEFAULT_MAX_MASK_STEPS,
            json_documents: None,
        }
    }
}

/// Parses and compiles `source` according to `options.kind`.
pub fn compile(
    engine: &Arc<Engine>,
    source: &[u8],
    options: &CompileOptions,
) -> Result<Arc<CompiledGrammar>> {
    // The clock starts before the front end: `max_compile_ms` bounds the
    // whole compilation.
    let deadline = Deadline::after_ms(options.max_compile_ms);
    if source.len() > limits::MAX_SOURCE_BYTES {
        return Err(Error::limit(format!(
            "the source is {} bytes, more than the limit of {} bytes",
            source.len(),
            limits::MAX_SOURCE_BYTES
        )));
    }
    let documents_len = options.json_documents.as_deref().map_or(0, str::len);
    if source.len() + documents_len > limits::MAX_SOURCE_BYTES {
        return Err(Error::limit(format!(
            "the source ({} bytes) and json_documents ({documents_len} bytes) are more than \
             the limit of {} bytes together",
            source.len(),
            limits::MAX_SOURCE_BYTES
        )));
    }
    let text = std::str::from_utf8(source).map_err(|e| {
        Error::invalid(format!(
            "the source is not valid UTF-8 (byte offset {})",
            e.valid_up_to()
        ))
    })?;
    check_flags(options)?;
    limits::on_compile_stack(|| {
        let mut dropped = Vec::new();
        let grammar = match options.kind {
            Kind::Gbnf => crate::gbnf::parse_within(
                text,
                options.root.as_deref().unwrap_or("root"),
                Some(engine.vocab()),
                &crate::gbnf::ParseOptions {
                    reject_left_recursion: options.flags & FLAG_GBNF_ALLOW_LEFT_RECURSION == 0,
                },
                &deadline,
            )?,
            Kind::JsonSchema => {
                let (g, d) = crate::json_schema::to_grammar_reporting(
                    text,
                    &json_options(options),
                    &deadline,
                )?;
                dropped = d;
                g
            }
            Kind::AnyJson => crate::json_schema::any_json_grammar(&json_options(options))?,
            Kind::Regex => crate::regex::regex_grammar(text, &deadline)?,
        };
        deadline.check()?;
        let ir_options = IrOptions {
            deadline,
            max_states: state_budget(options, source.len()),
            max_mask_steps: options.max_mask_steps,
        };
        let mut automaton = compile_ir(&**engine, engine.vocab(), &grammar, &ir_options)?;
        automaton.dropped = dropped;
        CompiledGrammar::new(engine, automaton, &deadline)
    })
}

/// The automaton states a compilation may make: `max_states`, plus for
/// GBNF one per byte of the source. A GBNF literal is a chain of a state
/// per byte, so a 1 MB literal alone passed the default 1,000,000 that
/// llama.cpp has no counterpart of (it stores the literal's characters
/// and accepts it). States that the text pays for byte by byte are
/// bounded by the source size limit ([`limits::MAX_SOURCE_BYTES`]); what
/// `max_states` keeps in check are the states that multiply beyond the
/// text (repetitions copied out, DFAs): memory in proportion to the
/// source is what any compiler takes, memory that multiplies beyond it is
/// what a hostile text could use. A 1 MB literal peaks at 230-330 MB
/// resident while it compiles (0.3-1.6 s), llama.cpp's parser at 85 MB.
fn state_budget(options: &CompileOptions, source_len: usize) -> usize {
    match options.kind {
        Kind::Gbnf => options.max_states.saturating_add(source_len),
        _ => options.max_states,
    }
}

/// Every flag applies to the source's kind: a flag for another kind is an
/// error rather than silently ignored (as an unknown bit is).
fn check_flags(o: &CompileOptions) -> Result<()> {
    let (applies, kind) = match o.kind {
        Kind::Gbnf => (FLAG_GBNF_ALLOW_LEFT_RECURSION, "GBNF"),
        Kind::JsonSchema => (JSON_SCHEMA_FLAGS, "JSON Schema"),
        Kind::AnyJson => (FLAG_JSON_COMPACT, "any-JSON"),
        Kind::Regex => (0, "regex"),
    };
    let other = o.flags & !applies;
    if other != 0 {
        return Err(Error::invalid(format!(
            "flags {other:#x} do not apply to {kind} sources"
        )));
    }
    if o.json_documents.is_some() && o.kind != Kind::JsonSchema {
        return Err(Error::invalid(format!(
            "json_documents does not apply to {kind} sources"
        )));
    }
    if o.json_layout.is_some() {
        if !matches!(o.kind, Kind::JsonSchema | Kind::AnyJson) {
            return Err(Error::invalid(format!(
                "json_indent and the JSON separators do not apply to {kind} sources"
            )));
        }
        if o.flags & FLAG_JSON_COMPACT != 0 || o.json_max_whitespace.is_some() {
            return Err(Error::invalid(
                "json_indent and the JSON separators fix the whitespace: they exclude \
                 CG_JSON_COMPACT and json_max_whitespace",
            ));
        }
    }
    Ok(())
}

fn json_options(o: &CompileOptions) -> crate::json_schema::JsonOptions {
    crate::json_schema::JsonOptions {
        compact: o.flags & FLAG_JSON_COMPACT != 0,
        max_whitespace: o.json_max_whitespace,
        no_extra_properties: o.flags & FLAG_JSON_NO_EXTRA_PROPERTIES != 0,
        ordered_properties: o.flags & FLAG_JSON_ORDERED_PROPERTIES != 0,
        strict_integers: o.flags & FLAG_JSON_STRICT_INTEGERS != 0,
        lenient: o.flags & FLAG_JSON_LENIENT != 0,
        layout: o.json_layout.clone(),
        documents: o.json_documents.clone(),
    }
}
