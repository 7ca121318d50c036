//! The schema document and the extra documents its references may reach:
//! subschema locations, base URIs, `$id`s and anchors, and `$ref`
//! resolution.
//!
//! Every subschema is identified by its document and its JSON pointer in
//! it (the place a keyword "sits" for error messages). Base URIs follow
//! RFC 3986 resolution of `$id` (`id` in draft 4); `$anchor`,
//! `$dynamicAnchor` and draft-6/7 plain-name `$id`s (`"#foo"`) name
//! subschemas. A `$ref` is resolved against the base URI of the schema
//! holding it. Extra documents ([`super::JsonOptions::documents`]) are
//! schema resources whose base URI is the URI they were given under; each
//! follows its own `$schema` (the schema's draft when it has none), and is
//! indexed the same way when a reference first reaches it (the documents
//! reachable from the schema are indexed before compiling, so that the
//! dynamic anchors among them are known). References to anything else
//! (other files, remote URLs, metaschemas not given) are refused.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::util::hash::FastMap;

/// Keyword lookup in a schema object. serde_json's ordered map hashes every
/// key it is asked for with SipHash, and evaluating one subschema asks for
/// some thirty keyword names, most of them absent: a scan of the object's
/// few keys answers for less (3% of compiling a Kubernetes schema went to
/// the hashing). Large objects (`properties`, `$defs`) still use the hash.
pub trait Keywords {
    /// The value of keyword `kw`, if the object has it.
    fn keyword(&self, kw: &str) -> Option<&Value>;

    /// Whether the object has keyword `kw`.
    fn has(&self, kw: &str) -> bool {
        self.keyword(kw).is_some()
    }
}

/// Objects up to this many keys are scanned rather than hashed.
const SCANNED_KEYS: usize = 16;

impl Keywords for Map<String, Value> {
    fn keyword(&self, kw: &str) -> Option<&Value> {
        if self.len() <= SCANNED_KEYS {
            self.iter().find_map(|(k, v)| (k == kw).then_some(v))
        } else {
            self.get(kw)
        }
    }
}

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
    /// The draft a `$schema` names; `None` without one. Unknown
    /// metaschemas get 2020-12 semantics.
    pub fn of_schema(root: &Value) -> Option<Draft> {
        let s = root.get("$schema")?.as_str()?;
        Some(if s.contains("draft-04") || s.contains("draft-03") {
            Draft::D4
        } else if s.contains("draft-06") {
            Draft::D6
        } else if s.contains("draft-07") {
            Draft::D7
        } else if s.contains("2019-09") {
            Draft::D2019
        } else {
            Draft::D2020
        })
    }

    /// Whether `kw` is a keyword of this draft. Only the keywords that
    /// drafts added after draft 4 are listed: an older draft ignores them,
    /// as its validators do.
    pub fn has_keyword(self, kw: &str) -> bool {
        match kw {
            "const" | "contains" | "propertyNames" => self >= Draft::D6,
            "if" | "then" | "else" => self >= Draft::D7,
            "dependentRequired" | "dependentSchemas" => self >= Draft::D2019,
            "prefixItems" => self >= Draft::D2020,
            _ => true,
        }
    }
}

pub struct Entry<'a> {
    pub value: &'a Value,
    /// JSON pointer from the root of its document.
    pub ptr: String,
    /// Where it is in an extra document, for messages: `uri#ptr` (in the
    /// schema, `ptr` says it).
    loc: Option<Box<str>>,
    /// Absolute base URI (no fragment), shared with the schemas under it
    /// (every schema has one, most the same as their parent's).
    pub base: Rc<str>,
    /// Its document: 0 the schema, `i + 1` extra document `i`.
    pub doc: u32,
}

/// One extra document: the absolute URI it is given under, and its
/// value (an object or a boolean).
pub type Document = (String, Value);

pub struct Doc<'a> {
    /// The root of each document (0: the schema).
    roots: Vec<&'a Value>,
    /// The draft of each document.
    drafts: Vec<Draft>,
    /// Retrieval URI of each extra document (index `doc - 1`).
    extra_uris: Vec<&'a str>,
    /// Whether each document is indexed (the schema always is).
    loaded: Vec<bool>,
    pub entries: Vec<Entry<'a>>,
    /// Entry of each JSON pointer, per document.
    by_ptr: Vec<FastMap<String, u32>>,
    /// Resource URIs (no fragment) and anchors (`uri#name`).
    uris: HashMap<String, u32>,
    /// The resource URIs each extra document declares with `$id`s, by
    /// document (made on the first reference that no retrieval URI
    /// matches).
    declared: Option<HashMap<String, u32>>,
}

/// `s` as a JSON pointer segment (`~` and `/` escaped).
pub fn escape_segment(s: &str) -> Cow<'_, str> {
    if s.contains(['~', '/']) {
        Cow::Owned(s.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(s)
    }
}

impl<'a> Doc<'a> {
    /// The schema `root`, with `extra` documents its references may reach.
    pub fn new(root: &'a Value, extra: &'a [Document]) -> Doc<'a> {
        let mut d = Doc::unindexed(root, extra);
        d.walk(0, root, String::new(), Rc::from(DEFAULT_BASE));
        d.uris.entry(DEFAULT_BASE.to_string()).or_insert(0);
        d.load_reachable();
        d
    }

    /// Every document known, none indexed.
    fn unindexed(root: &'a Value, extra: &'a [Document]) -> Doc<'a> {
        let draft = Draft::of_schema(root).unwrap_or(Draft::D2020);
        let mut roots = vec![root];
        let mut drafts = vec![draft];
        for (_, v) in extra {
            roots.push(v);
            drafts.push(Draft::of_schema(v).unwrap_or(draft));
        }
        let n = roots.len();
        Doc {
            roots,
            drafts,
            extra_uris: extra.iter().map(|(u, _)| u.as_str()).collect(),
            loaded: (0..n).map(|i| i == 0).collect(),
            entries: Vec::new(),
            by_ptr: vec![FastMap::default(); n],
            uris: HashMap::new(),
            declared: None,
        }
    }

    /// The draft of the schema `id` (that of its document).
    pub fn draft(&self, id: u32) -> Draft {
        self.drafts[self.entries[id as usize].doc as usize]
    }

    /// Indexes every extra document a reference of an indexed schema
    /// reaches, until none is left.
    fn load_reachable(&mut self) {
        if self.extra_uris.is_empty() {
            return;
        }
        let mut i = 0;
        while i < self.entries.len() {
            if let Value::Object(m) = self.entries[i].value {
                for kw in ["$ref", "$recursiveRef", "$dynamicRef"] {
                    if let Some(Value::String(r)) = m.keyword(kw) {
                        let target = resolve(&self.entries[i].base, r);
                        let (doc, _) = split_fragment(&target);
                        if !self.uris.contains_key(doc) {
                            let doc = doc.to_string();
                            self.load(&doc);
                        }
                    }
                }
            }
            i += 1;
        }
    }

    /// Indexes the extra document that `uri` names: the one given under
    /// that URI, else one declaring it as an `$id` inside. Returns whether
    /// one was found.
    fn load(&mut self, uri: &str) -> bool {
        let n = self.extra_uris.len();
        if let Some(i) = (0..n).find(|&i| !self.loaded[i + 1] && self.extra_uris[i] == uri) {
            self.load_doc(i + 1);
            return true;
        }
        let declared = self.declared.get_or_insert_with(|| {
            // Every document indexed once, apart, to see what it declares.
            let mut probe = Doc {
                roots: self.roots.clone(),
                drafts: self.drafts.clone(),
                extra_uris: self.extra_uris.clone(),
                loaded: vec![false; n + 1],
                entries: Vec::new(),
                by_ptr: vec![FastMap::default(); n + 1],
                uris: HashMap::new(),
                declared: None,
            };
            for d in 1..=n {
                probe.load_doc(d);
            }
            probe
                .uris
                .iter()
                .filter(|(u, _)| !u.contains('#'))
                .map(|(u, &id)| (u.clone(), probe.entries[id as usize].doc))
                .collect()
        });
        match declared.get(uri) {
            Some(&d) if !self.loaded[d as usize] => {
                self.load_doc(d as usize);
                true
            }
            _ => false,
        }
    }

    fn load_doc(&mut self, doc: usize) {
        self.loaded[doc] = true;
        let uri = self.extra_uris[doc - 1];
        let first = self.entries.len() as u32;
        self.walk(doc as u32, self.roots[doc], String::new(), Rc::from(uri));
        self.uris.entry(uri.to_string()).or_insert(first);
    }

    /// Registers one schema (its `$id` and anchors) and returns its id.
    fn register(&mut self, doc: u32, v: &'a Value, ptr: String, parent_base: Rc<str>) -> u32 {
        let draft = self.drafts[doc as usize];
        let mut base = parent_base;
        if let Value::Object(m) = v {
            let ref_hides_id = draft <= Draft::D7 && m.has("$ref");
            let id_keyword = if draft == Draft::D4 { "id" } else { "$id" };
            if let Some(Value::String(id)) = m.keyword(id_keyword) {
                if !ref_hides_id {
                    let resolved = resolve(&base, id);
                    let (res, frag) = split_fragment(&resolved);
                    if id.starts_with('#') {
                        // A plain-name fragment (drafts 6/7): an anchor.
                        if !frag.is_empty() {
                            let key = format!("{base}#{frag}");
                            let n = self.entries.len() as u32;
                            self.uris.entry(key).or_insert(n);
                        }
                    } else {
                        base = Rc::from(res);
                        let n = self.entries.len() as u32;
                        self.uris.entry(base.to_string()).or_insert(n);
                        if !frag.is_empty() && !frag.starts_with('/') {
                            self.uris.entry(format!("{base}#{frag}")).or_insert(n);
                        }
                    }
                }
            }
            for key in ["$anchor", "$dynamicAnchor"] {
                if let Some(Value::String(a)) = m.keyword(key) {
                    let n = self.entries.len() as u32;
                    self.uris.entry(format!("{base}#{a}")).or_insert(n);
                }
            }
        }
        let id = self.entries.len() as u32;
        self.by_ptr[doc as usize].insert(ptr.clone(), id);
        let loc = (doc != 0)
            .then(|| format!("{}#{ptr}", self.extra_uris[doc as usize - 1]).into_boxed_str());
        self.entries.push(Entry {
            value: v,
            ptr,
            loc,
            base,
            doc,
        });
        id
    }

    fn walk(&mut self, doc: u32, v: &'a Value, ptr: String, parent_base: Rc<str>) {
        let id = self.register(doc, v, ptr.clone(), parent_base);
        let base = self.entries[id as usize].base.clone();
        let Value::Object(m) = v else { return };
        for (k, sub) in m {
            // Formatted only for the keywords that hold schemas: most keys
            // of a schema (`type`, `description`, ...) do not.
            let kp = || format!("{ptr}/{}", escape_segment(k));
            match k.as_str() {
                "properties" | "patternProperties" | "definitions" | "$defs"
                | "dependentSchemas" | "dependencies" => {
                    if let Value::Object(mm) = sub {
                        let kp = kp();
                        for (name, s) in mm {
                            if s.is_object() || s.is_boolean() {
                                self.walk(
                                    doc,
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
                        let kp = kp();
                        for (i, s) in a.iter().enumerate() {
                            self.walk(doc, s, format!("{kp}/{i}"), base.clone());
                        }
                    }
                    s => self.walk(doc, s, kp(), base.clone()),
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
                | "contentSchema" => self.walk(doc, sub, kp(), base.clone()),
                _ => {}
            }
        }
    }

    /// The schema at a JSON pointer of document `doc` (registering it on
    /// first use: a `$ref` may point anywhere, e.g. into an unknown
    /// keyword).
    fn at_pointer(&mut self, doc: u32, ptr: &str) -> Option<u32> {
        if let Some(&id) = self.by_ptr[doc as usize].get(ptr) {
            return Some(id);
        }
        let (parent, _) = ptr.rsplit_once('/')?;
        let parent_id = self.at_pointer(doc, parent)?;
        let value: &'a Value = self.roots[doc as usize].pointer(ptr)?;
        let base = self.entries[parent_id as usize].base.clone();
        Some(self.register(doc, value, ptr.to_string(), base))
    }

    /// A child schema: `ptr` of `id` followed by the segments.
    pub fn child(&mut self, id: u32, segments: &[&str]) -> Option<u32> {
        let e = &self.entries[id as usize];
        let doc = e.doc;
        let mut p = e.ptr.clone();
        for s in segments {
            p.push('/');
            p.push_str(&escape_segment(s));
        }
        self.at_pointer(doc, &p)
    }

    pub fn value(&self, id: u32) -> &'a Value {
        self.entries[id as usize].value
    }

    /// Where schema `id` is, for messages: its JSON pointer, preceded by
    /// `uri#` in an extra document.
    pub fn ptr(&self, id: u32) -> &str {
        let e = &self.entries[id as usize];
        e.loc.as_deref().unwrap_or(&e.ptr)
    }

    /// Resolves a `$ref` found in schema `id`.
    pub fn resolve_ref(&mut self, id: u32, reference: &str) -> Result<u32, String> {
        let base = self.entries[id as usize].base.clone();
        let target = resolve(&base, reference);
        let (doc, frag) = split_fragment(&target);
        let frag = percent_decode(frag);
        if !self.uris.contains_key(doc) {
            self.load(doc);
        }
        let Some(&root) = self.uris.get(doc) else {
            return Err(format!(
                "reference '{reference}' points outside the document ({doc}); \
                 remote references are not supported (no document of that URI was \
                 given in json_documents)"
            ));
        };
        if frag.is_empty() {
            return Ok(root);
        }
        if frag.starts_with('/') {
            let e = &self.entries[root as usize];
            let (d, p) = (e.doc, format!("{}{}", e.ptr, frag));
            return self.at_pointer(d, &p).ok_or_else(|| {
                let shown = if d == 0 {
                    p.clone()
                } else {
                    format!("{doc}#{p}")
                };
                format!("reference '{reference}': nothing at {shown}")
            });
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
        self.uris.get(&**base).copied().unwrap_or(0)
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
        for (i, e) in self.entries.iter().enumerate() {
            let Value::Object(m) = e.value else { continue };
            let draft = self.draft(i as u32);
            if draft == Draft::D2020 {
                if let Some(Value::String(r)) = m.keyword("$dynamicRef") {
                    if let Some((_, f)) = r.rsplit_once('#') {
                        if !f.is_empty() && !f.starts_with('/') {
                            used.insert(f.to_string());
                        }
                    }
                }
            }
            recursive |= draft == Draft::D2019 && m.has("$recursiveRef");
        }
        let mut out = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            let Value::Object(m) = e.value else { continue };
            let id = i as u32;
            if let Some(Value::String(a)) = m.keyword("$dynamicAnchor") {
                if used.contains(a) {
                    out.push((self.resource_of(id), a.clone(), id));
                }
            }
            if recursive
                && m.keyword("$recursiveAnchor") == Some(&Value::Bool(true))
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

/// Whether `u` is an absolute URI: it starts with a scheme.
pub fn is_absolute(u: &str) -> bool {
    parse(u).scheme.is_some()
}

/// `u` with its dot segments removed (RFC 3986, 5.2.4).
pub fn normalize(u: &str) -> String {
    resolve("", u)
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
        let mut d = Doc::new(&v, &[]);
        let a = d.resolve_ref(0, "#A").unwrap();
        assert_eq!(d.ptr(a), "/$defs/a");
        let c = d.resolve_ref(0, "b.json#/$defs/c").unwrap();
        assert_eq!(d.ptr(c), "/$defs/b/$defs/c");
        assert!(d.resolve_ref(0, "http://other/x.json").is_err());
        let a2 = d.resolve_ref(0, "#/$defs/a").unwrap();
        assert_eq!(d.ptr(a2), "/$defs/a");
    }

    /// The indexed schemas with `$recursiveAnchor: true`.
    fn recursive_anchors(d: &Doc) -> usize {
        d.entries
            .iter()
            .filter(|e| {
                matches!(e.value, Value::Object(m)
                    if m.keyword("$recursiveAnchor") == Some(&Value::Bool(true)))
            })
            .count()
    }

    #[test]
    fn extra_documents() {
        let v: Value = serde_json::from_str(
            r##"{"$schema": "https://json-schema.org/draft/2019-09/schema",
                "$ref": "http://h/dir/a.json"}"##,
        )
        .unwrap();
        let docs: Vec<Document> = serde_json::from_str::<Vec<(String, Value)>>(
            r##"[["http://h/dir/a.json", {"$schema": "http://json-schema.org/draft-07/schema#",
                    "definitions": {"b": {"$ref": "sub/b.json"}}}],
                ["http://h/dir/sub/b.json", {"$id": "http://h/real.json",
                    "$defs": {"c": {"$anchor": "C"}}, "$ref": "dir/a.json"}],
                ["http://h/unused.json", {"$recursiveAnchor": true}],
                ["http://h/hidden.json", {"$id": "http://h/alias.json",
                    "$defs": {"s": {"type": "string"}}}]]"##,
        )
        .unwrap();
        let mut d = Doc::new(&v, &docs);
        // Reachable documents are indexed up front, the unused one not.
        assert_eq!(recursive_anchors(&d), 0);
        let a = d.resolve_ref(0, "http://h/dir/a.json").unwrap();
        assert_eq!(d.ptr(a), "http://h/dir/a.json#");
        assert_eq!((d.draft(0), d.draft(a)), (Draft::D2019, Draft::D7));
        let b = d.resolve_ref(a, "#/definitions/b").unwrap();
        assert_eq!(d.ptr(b), "http://h/dir/a.json#/definitions/b");
        // Relative to the retrieval URI; inside, the $id is the base.
        let broot = d.resolve_ref(b, "sub/b.json").unwrap();
        assert_eq!(d.ptr(broot), "http://h/dir/sub/b.json#");
        assert_eq!(d.draft(broot), Draft::D2019, "no $schema: the schema's");
        assert_eq!(d.resolve_ref(0, "http://h/real.json").unwrap(), broot);
        let c = d.resolve_ref(broot, "#C").unwrap();
        assert_eq!(d.ptr(c), "http://h/dir/sub/b.json#/$defs/c");
        assert_eq!(d.resolve_ref(broot, "dir/a.json").unwrap(), a);
        assert!(d
            .resolve_ref(0, "http://h/other.json")
            .unwrap_err()
            .contains("points outside the document"));
        // A document found by an $id inside it.
        let s = d.resolve_ref(0, "http://h/alias.json#/$defs/s").unwrap();
        assert_eq!(d.ptr(s), "http://h/hidden.json#/$defs/s");
        assert_eq!(recursive_anchors(&d), 0);
        // Reached only now.
        d.resolve_ref(0, "http://h/unused.json").unwrap();
        assert_eq!(recursive_anchors(&d), 1);
    }
}
