//! The schema document: subschema locations, base URIs, `$id`s and
//! anchors, and `$ref` resolution within the document.
//!
//! Every subschema is identified by its JSON pointer in the document (the
//! place a keyword "sits" for error messages). Base URIs follow RFC 3986
//! resolution of `$id` (`id` in draft 4); `$anchor`, `$dynamicAnchor` and
//! draft-6/7 plain-name `$id`s (`"#foo"`) name subschemas. A `$ref` is
//! resolved against the base URI of the schema holding it; references to
//! anything outside the document (other files, remote URLs) are refused.

use std::collections::HashMap;

use serde_json::Value;

/// Base URI of a document without `$id`.
const DEFAULT_BASE: &str = "cgram:///schema.json";

/// Which specification the document follows (from its `$schema`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Draft {
    D4,
    D6,
    D7,
    D2019,
    D2020,
}

impl Draft {
    /// Whether `kw` is a keyword of this draft. Only the keywords that
    /// drafts added after draft 4 are listed: an older draft ignores them,
    /// as its validators do.
    pub fn has_keyword(self, kw: &str) -> bool {
        match kw {
            "const" | "contains" | "propertyNames" => self >= Draft::D6,
            "if" | "then" | "else" => self >= Draft::D7,
            _ => true,
        }
    }
}

pub struct Entry<'a> {
    pub value: &'a Value,
    /// JSON pointer from the document root.
    pub ptr: String,
    /// Absolute base URI (no fragment).
    pub base: String,
}

pub struct Doc<'a> {
    pub root: &'a Value,
    pub draft: Draft,
    pub entries: Vec<Entry<'a>>,
    by_ptr: HashMap<String, u32>,
    /// Resource URIs (no fragment) and anchors (`uri#name`).
    uris: HashMap<String, u32>,
}

pub fn escape_segment(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

impl<'a> Doc<'a> {
    pub fn new(root: &'a Value) -> Doc<'a> {
        let draft = match root.get("$schema").and_then(|v| v.as_str()) {
            Some(s) if s.contains("draft-04") || s.contains("draft-03") => Draft::D4,
            Some(s) if s.contains("draft-06") => Draft::D6,
            Some(s) if s.contains("draft-07") => Draft::D7,
            Some(s) if s.contains("2019-09") => Draft::D2019,
            _ => Draft::D2020,
        };
        let mut d = Doc {
            root,
            draft,
            entries: Vec::new(),
            by_ptr: HashMap::new(),
            uris: HashMap::new(),
        };
        d.walk(root, String::new(), DEFAULT_BASE.to_string());
        d.uris.entry(DEFAULT_BASE.to_string()).or_insert(0);
        d
    }

    fn id_keyword(&self) -> &'static str {
        if self.draft == Draft::D4 {
            "id"
        } else {
            "$id"
        }
    }

    /// Registers one schema (its `$id` and anchors) and returns its id.
    fn register(&mut self, v: &'a Value, ptr: String, parent_base: String) -> u32 {
        let mut base = parent_base;
        if let Value::Object(m) = v {
            let ref_hides_id = self.draft <= Draft::D7 && m.contains_key("$ref");
            if let Some(Value::String(id)) = m.get(self.id_keyword()) {
                if !ref_hides_id {
                    let resolved = resolve(&base, id);
                    let (doc, frag) = split_fragment(&resolved);
                    if id.starts_with('#') {
                        // A plain-name fragment (drafts 6/7): an anchor.
                        if !frag.is_empty() {
                            let key = format!("{base}#{frag}");
                            let n = self.entries.len() as u32;
                            self.uris.entry(key).or_insert(n);
                        }
                    } else {
                        base = doc.to_string();
                        let n = self.entries.len() as u32;
                        self.uris.entry(base.clone()).or_insert(n);
                        if !frag.is_empty() && !frag.starts_with('/') {
                            self.uris.entry(format!("{base}#{frag}")).or_insert(n);
                        }
                    }
                }
            }
            for key in ["$anchor", "$dynamicAnchor"] {
                if let Some(Value::String(a)) = m.get(key) {
                    let n = self.entries.len() as u32;
                    self.uris.entry(format!("{base}#{a}")).or_insert(n);
                }
            }
        }
        let id = self.entries.len() as u32;
        self.by_ptr.insert(ptr.clone(), id);
        self.entries.push(Entry {
            value: v,
            ptr,
            base,
        });
        id
    }

    fn walk(&mut self, v: &'a Value, ptr: String, parent_base: String) {
        let id = self.register(v, ptr.clone(), parent_base);
        let base = self.entries[id as usize].base.clone();
        let Value::Object(m) = v else { return };
        for (k, sub) in m {
            let kp = format!("{ptr}/{}", escape_segment(k));
            match k.as_str() {
                "properties" | "patternProperties" | "definitions" | "$defs"
                | "dependentSchemas" | "dependencies" => {
                    if let Value::Object(mm) = sub {
                        for (name, s) in mm {
                            if s.is_object() || s.is_boolean() {
                                self.walk(
                                    s,
                                    format!("{kp}/{}", escape_segment(name)),
                                    base.clone(),
                                );
                            }
                        }
                    }
                }
                "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" => match sub {
                    Value::Array(a) => {
                        for (i, s) in a.iter().enumerate() {
                            self.walk(s, format!("{kp}/{i}"), base.clone());
                        }
                    }
                    s => self.walk(s, kp, base.clone()),
                },
                "additionalProperties"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames"
                | "additionalItems"
                | "unevaluatedProperties"
                | "unevaluatedItems"
                | "contentSchema" => self.walk(sub, kp, base.clone()),
                _ => {}
            }
        }
    }

    /// The schema at a JSON pointer (registering it on first use: a
    /// `$ref` may point anywhere, e.g. into an unknown keyword).
    pub fn at_pointer(&mut self, ptr: &str) -> Option<u32> {
        if let Some(&id) = self.by_ptr.get(ptr) {
            return Some(id);
        }
        let (parent, _) = ptr.rsplit_once('/')?;
        let parent_id = self.at_pointer(parent)?;
        let value: &'a Value = self.root.pointer(ptr)?;
        let base = self.entries[parent_id as usize].base.clone();
        Some(self.register(value, ptr.to_string(), base))
    }

    /// A child schema: `ptr` of `id` followed by the segments.
    pub fn child(&mut self, id: u32, segments: &[&str]) -> Option<u32> {
        let mut p = self.entries[id as usize].ptr.clone();
        for s in segments {
            p.push('/');
            p.push_str(&escape_segment(s));
        }
        self.at_pointer(&p)
    }

    pub fn value(&self, id: u32) -> &'a Value {
        self.entries[id as usize].value
    }

    pub fn ptr(&self, id: u32) -> &str {
        &self.entries[id as usize].ptr
    }

    /// Resolves a `$ref` found in schema `id`.
    pub fn resolve_ref(&mut self, id: u32, reference: &str) -> Result<u32, String> {
        let base = self.entries[id as usize].base.clone();
        let target = resolve(&base, reference);
        let (doc, frag) = split_fragment(&target);
        let frag = percent_decode(frag);
        let Some(&root) = self.uris.get(doc) else {
            return Err(format!(
                "reference '{reference}' points outside the document ({doc}); \
                 remote references are not supported"
            ));
        };
        if frag.is_empty() {
            return Ok(root);
        }
        if frag.starts_with('/') {
            let p = format!("{}{}", self.entries[root as usize].ptr, frag);
            return self
                .at_pointer(&p)
                .ok_or_else(|| format!("reference '{reference}': nothing at {p}"));
        }
        self.uris
            .get(&format!("{doc}#{frag}"))
            .copied()
            .ok_or_else(|| format!("reference '{reference}': no anchor '{frag}'"))
    }

    /// The root of the schema resource holding `id` (the schema whose
    /// `$id` set its base URI; the document root when none did).
    pub fn resource_of(&self, id: u32) -> u32 {
        let base = &self.entries[id as usize].base;
        self.uris.get(base).copied().unwrap_or(0)
    }

    /// The dynamic anchors a dynamic context may bind, as (resource root,
    /// name, schema): `$dynamicAnchor`s (2020-12) whose name some
    /// `$dynamicRef` fragment uses, and (2019-09) resource roots with
    /// `$recursiveAnchor: true` under the name "" when some
    /// `$recursiveRef` exists.
    /// Also returns the names used ("" for `$recursiveRef`).
    #[allow(clippy::type_complexity)]
    pub fn dynamic_anchors(&self) -> (Vec<(u32, String, u32)>, std::collections::BTreeSet<String>) {
        let mut used = std::collections::BTreeSet::new();
        let mut recursive = false;
        for e in &self.entries {
            let Value::Object(m) = e.value else { continue };
            if self.draft == Draft::D2020 {
                if let Some(Value::String(r)) = m.get("$dynamicRef") {
                    if let Some((_, f)) = r.rsplit_once('#') {
                        if !f.is_empty() && !f.starts_with('/') {
                            used.insert(f.to_string());
                        }
                    }
                }
            }
            recursive |= self.draft == Draft::D2019 && m.contains_key("$recursiveRef");
        }
        let mut out = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            let Value::Object(m) = e.value else { continue };
            let id = i as u32;
            if let Some(Value::String(a)) = m.get("$dynamicAnchor") {
                if used.contains(a) {
                    out.push((self.resource_of(id), a.clone(), id));
                }
            }
            if recursive
                && m.get("$recursiveAnchor") == Some(&Value::Bool(true))
                && self.resource_of(id) == id
            {
                out.push((id, String::new(), id));
            }
        }
        if recursive {
            used.insert(String::new());
        }
        (out, used)
    }
}

fn split_fragment(u: &str) -> (&str, &str) {
    match u.split_once('#') {
        Some((a, b)) => (a, b),
        None => (u, ""),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
        {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

struct Parts<'s> {
    scheme: Option<&'s str>,
    authority: Option<&'s str>,
    path: &'s str,
    query: Option<&'s str>,
    fragment: Option<&'s str>,
}

fn parse(u: &str) -> Parts<'_> {
    let (rest, fragment) = match u.split_once('#') {
        Some((a, b)) => (a, Some(b)),
        None => (u, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((a, b)) => (a, Some(b)),
        None => (rest, None),
    };
    let mut scheme = None;
    let mut rest = rest;
    if let Some(i) = rest.find(':') {
        let s = &rest[..i];
        if !s.is_empty()
            && s.chars().next().unwrap().is_ascii_alphabetic()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
        {
            scheme = Some(s);
            rest = &rest[i + 1..];
        }
    }
    let mut authority = None;
    if let Some(r) = rest.strip_prefix("//") {
        let end = r.find('/').unwrap_or(r.len());
        authority = Some(&r[..end]);
        rest = &r[end..];
    }
    Parts {
        scheme,
        authority,
        path: rest,
        query,
        fragment,
    }
}

fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segs: Vec<&str> = path.split('/').collect();
    let n = segs.len();
    for (i, s) in segs.iter().enumerate() {
        match *s {
            "." => {
                if i == n - 1 {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 || (out.len() == 1 && !absolute) {
                    out.pop();
                }
                if i == n - 1 {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let mut r = out.join("/");
    if absolute && !r.starts_with('/') {
        r.insert(0, '/');
    }
    r
}

/// RFC 3986 reference resolution.
pub fn resolve(base: &str, reference: &str) -> String {
    let r = parse(reference);
    let b = parse(base);
    let (scheme, authority, path, query);
    if r.scheme.is_some() {
        scheme = r.scheme;
        authority = r.authority;
        path = remove_dot_segments(r.path);
        query = r.query;
    } else {
        scheme = b.scheme;
        if r.authority.is_some() {
            authority = r.authority;
            path = remove_dot_segments(r.path);
            query = r.query;
        } else {
            authority = b.authority;
            if r.path.is_empty() {
                path = b.path.to_string();
                query = r.query.or(b.query);
            } else {
                if r.path.starts_with('/') {
                    path = remove_dot_segments(r.path);
                } else {
                    let merged = if b.authority.is_some() && b.path.is_empty() {
                        format!("/{}", r.path)
                    } else {
                        match b.path.rfind('/') {
                            Some(i) => format!("{}{}", &b.path[..=i], r.path),
                            None => r.path.to_string(),
                        }
                    };
                    path = remove_dot_segments(&merged);
                }
                query = r.query;
            }
        }
    }
    let mut out = String::new();
    if let Some(s) = scheme {
        out.push_str(s);
        out.push(':');
    }
    if let Some(a) = authority {
        out.push_str("//");
        out.push_str(a);
    }
    out.push_str(&path);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = r.fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3986_examples() {
        let b = "http://a/b/c/d;p?q";
        assert_eq!(resolve(b, "g"), "http://a/b/c/g");
        assert_eq!(resolve(b, "./g"), "http://a/b/c/g");
        assert_eq!(resolve(b, "g/"), "http://a/b/c/g/");
        assert_eq!(resolve(b, "/g"), "http://a/g");
        assert_eq!(resolve(b, "//g"), "http://g");
        assert_eq!(resolve(b, "#s"), "http://a/b/c/d;p?q#s");
        assert_eq!(resolve(b, "../g"), "http://a/b/g");
        assert_eq!(resolve(b, "../../g"), "http://a/g");
        assert_eq!(resolve(b, ""), "http://a/b/c/d;p?q");
        assert_eq!(
            resolve(DEFAULT_BASE, "#/definitions/a"),
            "cgram:///schema.json#/definitions/a"
        );
    }

    #[test]
    fn refs_and_anchors() {
        let v: Value = serde_json::from_str(
            r##"{"$id": "http://x/root.json", "$defs": {"a": {"$anchor": "A"},
                "b": {"$id": "b.json", "$defs": {"c": {"type": "string"}}}}}"##,
        )
        .unwrap();
        let mut d = Doc::new(&v);
        let a = d.resolve_ref(0, "#A").unwrap();
        assert_eq!(d.ptr(a), "/$defs/a");
        let c = d.resolve_ref(0, "b.json#/$defs/c").unwrap();
        assert_eq!(d.ptr(c), "/$defs/b/$defs/c");
        assert!(d.resolve_ref(0, "http://other/x.json").is_err());
        let a2 = d.resolve_ref(0, "#/$defs/a").unwrap();
        assert_eq!(d.ptr(a2), "/$defs/a");
    }
}
