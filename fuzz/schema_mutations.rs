//! Structure-aware mutations of JSON Schemas for the fuzz target
//! `json_schema_deadline` (see `fuzz/harness.rs`).
//!
//! libFuzzer mutates bytes, and a byte flip in a schema's text almost never
//! turns it into the shapes that make a schema compiler work hard: a
//! `oneOf` of twenty objects that share constrained properties, a `not`
//! around an `anyOf`, `patternProperties` under negations. So an input is a
//! schema followed by a recipe, and the recipe is a list of schema-level
//! edits: libFuzzer's byte mutations then change which edits are made, to
//! which subschemas and with what constants, and every mutated input is
//! still a schema.
//!
//! Input: `SCHEMA` or `SCHEMA \0 RECIPE`. The recipe's first byte picks the
//! compile flags; then each edit is three bytes `(op, a, b)`: `a` picks the
//! subschema to edit, `b` the second subschema or a constant. Edits stop
//! once the schema's text passes [`MAX_MUTATED_BYTES`].

use serde_json::{json, Map, Value};

/// Most edits one recipe makes.
pub const MAX_EDITS: usize = 24;

/// A schema grown past this many bytes of JSON text takes no more edits.
pub const MAX_MUTATED_BYTES: usize = 96 * 1024;

/// Keywords whose value is a schema.
const SCHEMA_VALUED: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "items",
    "additionalItems",
    "additionalProperties",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: &[&str] = &["oneOf", "anyOf", "allOf", "prefixItems", "items"];

/// Keywords whose value maps names to schemas.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "definitions",
    "$defs",
    "dependentSchemas",
];

/// Property names the generated objects share, so that their branches
/// overlap and must be told apart by values.
const SHARED_NAMES: &[&str] = &["size", "mode", "level", "width", "rate", "name"];

/// Splits an input into the schema text and the recipe.
pub fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// The schema of `text` edited by `recipe` (`None` when `text` is not
/// JSON), and the recipe's flag byte (0 when it has none).
pub fn mutate(text: &[u8], recipe: &[u8]) -> Option<(Value, u8)> {
    let mut schema: Value = serde_json::from_slice(text).ok()?;
    let Some((&flags, edits)) = recipe.split_first() else {
        return Some((schema, 0));
    };
    for edit in edits.chunks_exact(3).take(MAX_EDITS) {
        if serde_json::to_vec(&schema).map_or(0, |v| v.len()) > MAX_MUTATED_BYTES {
            break;
        }
        apply(&mut schema, edit[0], edit[1], edit[2]);
    }
    Some((schema, flags))
}

/// JSON pointers of the subschemas of `v` (pre-order, the root first).
fn subschemas(v: &Value) -> Vec<String> {
    fn walk(v: &Value, at: &str, out: &mut Vec<String>) {
        let Value::Object(m) = v else {
            return;
        };
        out.push(at.to_string());
        for (k, x) in m {
            let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
            if SCHEMA_VALUED.contains(&k.as_str()) && x.is_object() {
                walk(x, &here, out);
            }
            if SCHEMA_LISTS.contains(&k.as_str()) {
                if let Value::Array(xs) = x {
                    for (i, y) in xs.iter().enumerate() {
                        walk(y, &format!("{here}/{i}"), out);
                    }
                }
            }
            if SCHEMA_MAPS.contains(&k.as_str()) {
                if let Value::Object(ys) = x {
                    for (name, y) in ys {
                        let name = name.replace('~', "~0").replace('/', "~1");
                        walk(y, &format!("{here}/{name}"), out);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out
}

/// A copy of `s` with its numbers moved by `b` and its strings suffixed:
/// a sibling that overlaps `s` without being equal to it.
fn perturbed(s: &Value, b: u8) -> Value {
    match s {
        Value::Number(n) => match n.as_i64() {
            Some(i) => json!(i + i64::from(b % 7) - 3),
            None => json!(n.as_f64().unwrap_or(0.0) + f64::from(b % 5) * 0.25),
        },
        Value::String(x) if b & 8 != 0 => json!(format!("{x}{}", b % 3)),
        Value::Array(xs) => Value::Array(xs.iter().map(|x| perturbed(x, b)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    // Keywords and names stay; their values move.
                    (k.clone(), perturbed(x, b.wrapping_add(1)))
                })
                .collect(),
        ),
        x => x.clone(),
    }
}

/// A number constant from a byte: small integers, negatives, fractions.
fn constant(b: u8) -> Value {
    match b % 4 {
        0 => json!(i64::from(b / 4)),
        1 => json!(-i64::from(b / 8)),
        2 => json!(f64::from(b) / 8.0),
        _ => json!(i64::from(b) * 1000),
    }
}

/// A value of some JSON type, for enums and constants.
fn value(i: usize, b: u8) -> Value {
    match (i + b as usize) % 6 {
        0 => json!(format!("v{i}")),
        1 => json!(i as i64 - 2),
        2 => json!(i as f64 / 2.0),
        3 => Value::Null,
        4 => json!(i.is_multiple_of(2)),
        _ => json!(SHARED_NAMES[i % SHARED_NAMES.len()]),
    }
}

/// A constraint on a shared property: the family of real configuration
/// schemas whose object types give the same names different ranges and
/// enumerations.
fn shared_constraint(i: usize, j: usize, b: u8) -> Value {
    let lo = ((i * 7 + j * 3 + b as usize) % 40) as i64;
    match (i + j + b as usize) % 5 {
        0 => json!({"type": "integer", "minimum": lo, "maximum": lo + 10 + (i as i64 % 5)}),
        1 => json!({"type": "number", "minimum": lo as f64 / 4.0, "exclusiveMaximum": lo + 20}),
        2 => json!({"enum": [value(i, b), value(i + j, b), value(j, b)]}),
        3 => json!({"type": "integer", "multipleOf": 1 + (i + j) % 4, "maximum": lo * 3}),
        _ => json!({"type": "string", "maxLength": 1 + (i + j) % 8}),
    }
}

/// A `oneOf` of `k` object types sharing property names.
fn shared_objects(k: usize, b: u8, member: &Value) -> Value {
    let branches: Vec<Value> = (0..k)
        .map(|i| {
            let mut props = Map::new();
            for (j, name) in SHARED_NAMES.iter().enumerate() {
                if !(i + j + b as usize).is_multiple_of(3) {
                    props.insert((*name).into(), shared_constraint(i, j, b));
                }
            }
            if i % 4 == 0 {
                props.insert("extra".into(), member.clone());
            }
            let required: Vec<&String> = props.keys().take(1 + i % 2).collect();
            let mut o = json!({"type": "object", "properties": props, "required": required});
            if (i + b as usize).is_multiple_of(2) {
                o["additionalProperties"] = json!(false);
            }
            o
        })
        .collect();
    json!({ "oneOf": branches })
}

/// Edit `op` at the subschema picked by `a`, with `b` picking the second
/// subschema or a constant.
fn apply(schema: &mut Value, op: u8, a: u8, b: u8) {
    let at = subschemas(schema);
    if at.is_empty() {
        return;
    }
    let other = schema
        .pointer(&at[b as usize % at.len()])
        .cloned()
        .unwrap_or(json!({}));
    let Some(s) = schema.pointer_mut(&at[a as usize % at.len()]) else {
        return;
    };
    let old = s.take();
    *s = match op % 12 {
        0 => json!({"oneOf": [old.clone(), perturbed(&old, b)]}),
        1 => json!({"allOf": [old, {"not": other}]}),
        2 => json!({"anyOf": [old, other]}),
        3 => json!({"oneOf": [old, other]}),
        4 => json!({"if": other, "then": old.clone(), "else": perturbed(&old, b)}),
        5 => {
            let mut o = old;
            let key = [
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
            ][b as usize % 5];
            if let Value::Object(m) = &mut o {
                let c = if key == "multipleOf" {
                    json!(f64::from(1 + b % 9) / [1.0, 4.0, 10.0][b as usize % 3])
                } else {
                    constant(b / 5)
                };
                m.insert(key.into(), c);
            }
            o
        }
        6 => {
            let mut o = old;
            if let Value::Object(m) = &mut o {
                let n = 1 + (b as usize % 40) * (1 + b as usize / 128 * 50);
                m.insert("enum".into(), (0..n).map(|i| value(i, b)).collect());
            }
            o
        }
        7 => json!({
            "type": "object",
            "patternProperties": {"^p[0-9]+$": other.clone(), "^x": {"not": other}},
            "not": {"patternProperties": {"^p1": old}, "required": ["p1"]}
        }),
        8 => shared_objects(2 + b as usize % 24, b, &old),
        9 => {
            if b.is_multiple_of(2) {
                json!({"type": "object", "properties": {"p": old, "q": other}, "required": ["p"]})
            } else {
                json!({"type": "array", "items": old, "minItems": b % 3})
            }
        }
        10 => {
            let mut o = old;
            if let Value::Object(m) = &mut o {
                let name = SHARED_NAMES[b as usize % SHARED_NAMES.len()];
                let props = m.entry("properties").or_insert_with(|| json!({}));
                if let Value::Object(p) = props {
                    p.insert(name.into(), other);
                }
                let req = m.entry("required").or_insert_with(|| json!([]));
                if let Value::Array(r) = req {
                    if !r.contains(&json!(name)) {
                        r.push(json!(name));
                    }
                }
            }
            o
        }
        _ => json!({"not": {"anyOf": [other, {"not": old}]}}),
    };
}
