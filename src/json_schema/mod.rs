//! JSON Schema front end: a schema to IR that accepts exactly the JSON
//! texts of the instances the schema validates.

use crate::error::{Error, Result};
use crate::ir;

/// Options of the JSON front ends.
#[derive(Clone, Debug, Default)]
pub struct JsonOptions {
    /// No optional whitespace at all.
    pub compact: bool,
    /// Longest run of whitespace between tokens (`None`: unbounded).
    pub max_whitespace: Option<u32>,
    /// `additionalProperties` is false unless the schema says otherwise.
    pub no_extra_properties: bool,
}

/// Compiles a JSON Schema (text) to IR.
pub fn to_grammar(schema: &str, options: &JsonOptions) -> Result<ir::Grammar> {
    let _ = (schema, options);
    Err(Error::unsupported("JSON Schema is not supported yet"))
}

/// The grammar of any JSON value.
pub fn any_json_grammar(options: &JsonOptions) -> Result<ir::Grammar> {
    let _ = options;
    Err(Error::unsupported("any-JSON is not supported yet"))
}
