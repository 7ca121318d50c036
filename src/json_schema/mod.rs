//! JSON Schema front end: a schema to IR that accepts exactly the JSON
//! texts of the instances the schema validates, or a precise error.
//!
//! # Exactness
//!
//! Every schema either compiles to a grammar whose instances are exactly
//! the schema's, or fails with an error naming the keyword and the JSON
//! pointer where it sits (e.g. `uniqueItems at /properties/tags: items are
//! not a small finite set`). "Exactly" is about values; the *spelling* of
//! a value in JSON text follows these documented rules:
//!
//! - **Whitespace**: what JSON allows between tokens (`[ \t\n\r]*`), also
//!   before and after the whole value; [`JsonOptions::compact`] allows
//!   none, [`JsonOptions::max_whitespace`] bounds each run,
//!   [`JsonOptions::layout`] allows exactly one layout ([`layout`]).
//! - **Property order**: any (JSON Schema does not constrain it), unless
//!   [`JsonOptions::ordered_properties`]: then listed properties come in
//!   the order `properties` lists them, each at most once, and unlisted
//!   ones after them. An
//!   object with at most 6 listed properties (`properties`, required
//!   names, names merged in from `allOf`/`$ref` siblings, dependencies)
//!   accepts each at most once (the grammar tracks the set written). A
//!   larger object tracks the set of its required properties written (each
//!   at most once) while 2^required × members stays within 2,048, else the
//!   number of required properties written; its optional listed
//!   properties may then repeat. Additional properties (names not listed:
//!   those matching `patternProperties` get that schema, others
//!   `additionalProperties`) may come anywhere and may repeat. A repeated
//!   name is the only way to get past these rules: JSON Schema leaves
//!   duplicate names undefined ("an object cannot have two properties with
//!   the same key"), and every text without one is accepted exactly when
//!   the object is valid. The names of listed properties are written in
//!   their canonical JSON form (the form `serde_json` and Python's
//!   `json.dumps` write); other names and every string value may use any
//!   escape.
//! - **Numbers**: see [`number`] — an unconstrained `number` is the whole
//!   JSON number syntax; a constrained one (bounds, `integer`,
//!   `multipleOf`, `const`) accepts plain decimals and scientific notation
//!   with a normalized mantissa (`1e-05`, `1.5e+16`, as every float
//!   printer writes), which keeps comparisons exact; `integer` accepts
//!   `1.0` from draft 6 on (integers are values with zero fraction), and
//!   under draft 4 (`$schema` draft-04 or draft-03) only the spelling
//!   without fraction or exponent (draft 4: "a JSON number without a
//!   fraction or exponent part"; `1.0` and `1e2` are not integers there).
//! - **Strings**: the schema constrains the decoded string; every JSON
//!   spelling of it is accepted ([`strings`]). Lengths count code points;
//!   a string with only length bounds of 16 or more is one lexeme that
//!   counts code points beside "any string"'s automaton, and a bound of 64
//!   or more beside a `pattern` or `format` is a count next to the
//!   pattern's automaton (`compile::lexeme::Counter`), not their product
//!   (one automaton with a state per position would be large): up to 2^27
//!   (automaton states x (bound + 1)) pairs. Any bound above 1,280,000 is
//!   refused (limit). `time` and `date-time`
//!   take leap seconds by RFC 3339's rule: `:60` when the time in UTC is
//!   23:59, whatever the offset (`15:59:60-08:00`). The automaton
//!   remembers the local time until the offset (66,000 states over JSON
//!   spellings): it is built directly ([`crate::ir::Expr::Rfc3339`]) once
//!   per process and is a lexeme of its own, shared by every schema. With
//!   a length bound under 1,024 (or a `minLength` above the shortest
//!   time) the length is counted next to that automaton, and the rule
//!   stays exact; this costs 0.1 to 0.6 s to compile the first time per
//!   vocabulary and bound, and about 19 MB of lexeme cache. Past 1,024 a
//!   leap second is taken only at 23:59 with a zero offset: the count
//!   beside 66,000 states would pass the counter's limit.
//! - Numbers in the schema itself are read as IEEE doubles (their shortest
//!   round-trip decimal is the bound).
//!
//! # Keywords
//!
//! Drafts 4, 6, 7, 2019-09 and 2020-12 (from `$schema`; without it,
//! 2020-12 semantics, except that array-valued `items` is read as the
//! older tuple form with `additionalItems`). A keyword a later draft added
//! is ignored under an earlier one, as its validators do (`const`,
//! `contains`, `propertyNames` from draft 6; `if`/`then`/`else` from draft
//! 7; `dependentRequired`, `dependentSchemas` from 2019-09; `prefixItems`
//! from 2020-12). Annotations (`title`,
//! `description`, `default`, `examples`, `$comment`, ...) and unknown
//! keywords (MaskBench disables keywords by prefixing `_`) are ignored.
//!
//! - `type` (lists too), `enum`, `const` (JSON equality: `1 == 1.0`),
//!   boolean schemas.
//! - Objects: `properties`, `required`, `additionalProperties` (default
//!   true; [`JsonOptions::no_extra_properties`] makes it false for
//!   schemas listing `properties`/`patternProperties`, closed on the
//!   union of the names that conjoined schemas list),
//!   `patternProperties` (names are split into the classes of patterns
//!   they match, at most 64 classes per object), `propertyNames`, `minProperties`, `maxProperties`,
//!   `dependentRequired`, `dependentSchemas`, draft-4 `dependencies`.
//! - Arrays: `items`, `prefixItems`, `additionalItems`, `minItems`,
//!   `maxItems`, `contains` with `minContains`/`maxContains` (one per
//!   array), `uniqueItems`: exact when the items are a small finite set of
//!   scalars (at most 12 values: enumerated subsets), otherwise refused.
//! - Strings: `minLength`, `maxLength`, `pattern` (ECMA-262, through
//!   [`crate::regex`]), `format`: asserted in every draft (MaskBench's
//!   validators assert it) with the languages of
//!   [`crate::regex::format_expr`]; the standard formats it cannot express
//!   exactly (`regex`, `idn-email`, `idn-hostname`, and `hostname`, whose
//!   IDNA A-labels must decode to valid U-labels) are refused, unknown
//!   formats are annotations.
//! - Numbers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`
//!   (numbers, or draft-4 booleans), `multipleOf` (plain decimals, by a
//!   residue automaton: a divisor `a × 10^-k` takes `a × (k + 3)` states,
//!   at most [`crate::limits::MAX_MULTIPLE_OF_STATES`]).
//! - Combinators: `allOf` (merged), `anyOf` (union), `not` (the negation
//!   is pushed into each keyword: refused for `uniqueItems` and for
//!   additional/pattern properties), `if`/`then`/`else`
//!   (`(if ∧ then) ∨ (¬if ∧ else)`), `oneOf`: branch `i` becomes
//!   `A_i ∧ ¬A_j` for every other branch that may overlap it; branches
//!   provably disjoint (different types, different `const`/`enum` values
//!   of a required property, ...) need no negation. Exact in all cases,
//!   refused when a needed negation is not expressible.
//! - References: `$ref` (JSON pointers, `$id` base URIs, `$anchor`,
//!   draft-6/7 plain-name ids, recursion through properties and items),
//!   `$defs`/`definitions`; in drafts 4-7 a `$ref` hides its siblings.
//!   Other documents are reached only when the caller gives them
//!   ([`JsonOptions::documents`], [`parse_documents`]): each is indexed
//!   like the schema under its own URI and compiled under its own
//!   `$schema` (the schema's draft without one). References to any other
//!   document (nothing is fetched) are refused, as is dynamic scoping.
//! - `unevaluatedProperties`/`unevaluatedItems`: exact when what is
//!   evaluated is known without the instance: the names (`properties`,
//!   `patternProperties`) and item prefixes listed by the schema and the
//!   schemas applied in place with it through `allOf` and `$ref` (an
//!   `additionalProperties`, `items`, or nested `unevaluated*` there
//!   evaluates everything); refused, with the keyword named, when an
//!   `anyOf`, `oneOf`, `if`, `dependentSchemas`, `contains` or dynamic
//!   reference among them makes it depend on which branch validates.
//!
//! With [`JsonOptions::lenient`], a keyword refused above as impossible
//! to enforce (not a limit) is left out instead and reported
//! ([`ir::Dropped`]); a negation of a schema that left something out is left
//! out too, so the result only ever widens (`compiler`'s `lenient`).
//!
//! Combinatorial schemas hit limits (alternatives per node, rules,
//! evaluations, counting states) and fail with a limit error.

mod compiler;
pub mod decimal;
mod doc;
pub mod layout;
mod minimize;
mod node;
pub mod number;
pub mod strings;

use std::sync::Arc;

use crate::limits::Deadline;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::ir::{self, Expr, LexemeHint};

/// Options of the JSON front ends.
#[derive(Clone, Debug, Default)]
pub struct JsonOptions {
    /// No optional whitespace at all.
    pub compact: bool,
    /// Longest run of whitespace between tokens (`None`: unbounded).
    pub max_whitespace: Option<u32>,
    /// `additionalProperties` is false unless the schema says otherwise,
    /// in schemas that list `properties` or `patternProperties`; names
    /// listed by `allOf`/`$ref`/sibling schemas are let in (see
    /// `node::Term::Unlisted` and `CG_JSON_NO_EXTRA_PROPERTIES`).
    pub no_extra_properties: bool,
    /// Listed properties in the order `properties` lists them
    /// ([`compiler`]'s `ordered` module).
    pub ordered_properties: bool,
    /// Numbers that can only be integers are written as plain integers.
    pub strict_integers: bool,
    /// Keywords no automaton can enforce are left out and reported.
    pub lenient: bool,
    /// One fixed whitespace layout ([`layout`]); `None`: whitespace as
    /// `compact` and `max_whitespace` say.
    pub layout: Option<layout::FixedLayout>,
    /// Extra documents a `$ref` may reach: the text of a JSON object
    /// mapping absolute URIs to schema documents ([`parse_documents`]);
    /// `None`: none (a reference outside the schema is refused).
    pub documents: Option<Arc<str>>,
}

/// Deepest nesting of arrays and objects a schema text may have (the limit
/// of serde_json's reader, which keeps parsing off the end of the stack).
pub const MAX_SCHEMA_NESTING: usize = 128;

/// Compiles a JSON Schema (text) to IR.
/// `deadline` bounds the translation (`max_compile_ms`).
pub fn to_grammar(schema: &str, options: &JsonOptions, deadline: &Deadline) -> Result<ir::Grammar> {
    Ok(to_grammar_reporting(schema, options, deadline)?.0)
}

/// [`to_grammar`], with the keywords left out in lenient mode.
pub fn to_grammar_reporting(
    schema: &str,
    options: &JsonOptions,
    deadline: &Deadline,
) -> Result<(ir::Grammar, Vec<ir::Dropped>)> {
    let value: Value = read_json(schema, "the schema")?;
    let documents = match &options.documents {
        Some(text) => parse_documents(text)?,
        None => Vec::new(),
    };
    compile_value(&value, &documents, options, deadline)
}

/// Reads JSON text (`what`: "the schema", for messages).
fn read_json(text: &str, what: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| {
        // serde_json stops at its fixed nesting limit with a syntax error;
        // the text may well be valid JSON, so say which limit it hit.
        if e.to_string().starts_with("recursion limit exceeded") {
            Error::limit(format!(
                "{what} nests more than {MAX_SCHEMA_NESTING} arrays and objects deep \
                 (line {}, column {})",
                e.line(),
                e.column()
            ))
        } else {
            Error::parse(format!("{what} is not valid JSON: {e}"))
        }
    })
}

/// Reads the extra documents of [`JsonOptions::documents`]: a JSON object
/// whose keys are absolute URIs (with a scheme, without a fragment; an
/// empty fragment `#` is dropped) and whose values are schemas (objects
/// or booleans), e.g. `{"http://example.com/a.json": {"type":
/// "integer"}}`. A document's URI is its base URI; its own `$id`s,
/// anchors, JSON pointers and `$schema` work as in the schema. Invalid
/// JSON is a parse error; anything else malformed an invalid argument,
/// naming the key.
pub fn parse_documents(text: &str) -> Result<Vec<doc::Document>> {
    let value = read_json(text, "json_documents")?;
    let Value::Object(m) = value else {
        return Err(Error::invalid(format!(
            "json_documents must be a JSON object mapping absolute URIs to schema documents, \
             not {}",
            json_kind(&value)
        )));
    };
    let mut docs = Vec::with_capacity(m.len());
    for (key, v) in m {
        let uri = key.strip_suffix('#').unwrap_or(&key);
        if !doc::is_absolute(uri) {
            return Err(Error::invalid(format!(
                "json_documents: the key '{key}' is not an absolute URI (a document is named \
                 by a URI with a scheme, such as 'http://example.com/a.json')"
            )));
        }
        if uri.contains('#') {
            return Err(Error::invalid(format!(
                "json_documents: the key '{key}' has a fragment (a document's URI has none)"
            )));
        }
        if !(v.is_object() || v.is_boolean()) {
            return Err(Error::invalid(format!(
                "json_documents: the document of '{key}' is not a schema (an object or a \
                 boolean) but {}",
                json_kind(&v)
            )));
        }
        docs.push((doc::normalize(uri), v));
    }
    Ok(docs)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The grammar of any JSON value.
pub fn any_json_grammar(options: &JsonOptions) -> Result<ir::Grammar> {
    Ok(compile_value(&Value::Bool(true), &[], options, &Deadline::none())?.0)
}

fn compile_value(
    value: &Value,
    documents: &[doc::Document],
    options: &JsonOptions,
    deadline: &Deadline,
) -> Result<(ir::Grammar, Vec<ir::Dropped>)> {
    let doc = doc::Doc::new(value, documents);
    let mut c = compiler::Compiler::new(doc, options, *deadline);
    let root_term = c.root_term();
    let n = c.eval(&root_term)?;
    if n.hardened().is_empty() {
        return Err(Error::invalid(
            "the schema accepts no JSON value at all (it is unsatisfiable)",
        ));
    }
    let root = c.b.add_rule("root");
    let ws = c.ws();
    let v = c.rule_for(&root_term)?;
    c.b.set_body(root, Expr::seq(vec![ws.clone(), Expr::Ref(v), ws]));
    c.b.set_lexeme_hint(root, LexemeHint::Never);
    let dropped = c.take_dropped();
    let g = c.b.finish(root);
    deadline.check()?;
    Ok((minimize::minimize(g), dropped))
}
