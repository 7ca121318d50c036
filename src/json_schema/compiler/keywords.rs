//! From the keywords of one schema object to its node: the string,
//! number, object and array keywords, each group checked and combined
//! into the node's shapes ([`Compiler::eval_schema`] calls them).

use super::{
    as_count, empty_atom, keyword_error, parse_error, unsupported, Compiler, MAX_LENGTH_BOUND,
    MAX_PATTERN_CLASSES,
};
use crate::error::{ErrorKind, Result};
use crate::ir::Expr;
use crate::json_schema::decimal::Dec;
use crate::json_schema::doc::{Draft, Keywords};
use crate::json_schema::node::{ArrShape, Contains, ObjShape, Term};
use crate::json_schema::number::{multiple_of, NumAtom};
use crate::json_schema::strings::{self, length, StrLang};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

impl Compiler<'_> {
    pub(super) fn string_keywords(
        &mut self,
        m: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Option<StrLang>> {
        let mut parts: Vec<Expr> = Vec::new();
        let min = match m.keyword("minLength") {
            Some(v) => {
                Some(as_count(v).ok_or_else(|| parse_error("minLength", ptr, "not a count"))?)
            }
            None => None,
        };
        let max = match m.keyword("maxLength") {
            Some(v) => {
                Some(as_count(v).ok_or_else(|| parse_error("maxLength", ptr, "not a count"))?)
            }
            None => None,
        };
        if min.unwrap_or(0) > 0 || max.is_some() {
            if let (Some(a), Some(b)) = (min, max) {
                if a > b {
                    return Ok(Some(StrLang::none()));
                }
            }
            let bound = max.unwrap_or(0).max(min.unwrap_or(0));
            if bound > MAX_LENGTH_BOUND {
                let kw = if max.is_some() {
                    "maxLength"
                } else {
                    "minLength"
                };
                return Err(keyword_error(
                    ErrorKind::Limit,
                    kw,
                    ptr,
                    format!("a length bound above {MAX_LENGTH_BOUND} is not supported"),
                ));
            }
            parts.push(length(min.unwrap_or(0), max));
        }
        if let Some(p) = m.keyword("pattern") {
            let Value::String(p) = p else {
                return Err(parse_error("pattern", ptr, "not a string"));
            };
            match self.pattern_expr(p) {
                Ok(e) => parts.push(e),
                // A construct no automaton matches (lenient: left out).
                Err(e) if e.kind() == ErrorKind::Unsupported => {
                    let e = keyword_error(e.kind(), "pattern", ptr, e.message());
                    self.leave_out(e, "pattern", ptr)?;
                }
                Err(e) => return Err(keyword_error(e.kind(), "pattern", ptr, e.message())),
            }
        }
        if let Some(Value::String(f)) = m.keyword("format") {
            if f == "hostname" {
                let e = unsupported(
                    "format",
                    ptr,
                    "'hostname' cannot be checked exactly by a finite automaton: an IDNA \
                     A-label (xn--...) is valid only when it decodes (Punycode) to a valid \
                     U-label (RFC 5890/5891), and the name is limited to 253 octets",
                );
                self.leave_out(e, "format", ptr)?;
                // Lenient: the labels' letters, digits and hyphens, a
                // superset (A-labels not decoded, no total length).
                parts.extend(crate::regex::format_expr(f));
            } else {
                match crate::regex::format_expr(f) {
                    Some(e) => parts.push(e),
                    // Standard formats whose language is not regular (or not
                    // built): asserting them exactly is impossible here.
                    None if matches!(f.as_str(), "regex" | "idn-email" | "idn-hostname") => {
                        let e = unsupported(
                            "format",
                            ptr,
                            format!("'{f}' cannot be checked by a finite automaton"),
                        );
                        self.leave_out(e, "format", ptr)?;
                    }
                    None => {}
                }
            }
        }
        if parts.is_empty() {
            return Ok(None);
        }
        Ok(Some(StrLang::from_expr(Expr::and(parts))))
    }

    pub(super) fn number_keywords(
        &mut self,
        m: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Option<NumAtom>> {
        let num = |kw: &str| -> Result<Option<Dec>> {
            match m.keyword(kw) {
                None => Ok(None),
                Some(Value::Number(n)) => Ok(Some(
                    Dec::from_json(n).ok_or_else(|| parse_error(kw, ptr, "bad number"))?,
                )),
                Some(Value::Bool(_)) if kw.starts_with("exclusive") => Ok(None),
                Some(_) => Err(parse_error(kw, ptr, "not a number")),
            }
        };
        let mut a = NumAtom::any();
        let flag = |kw: &str| m.keyword(kw) == Some(&Value::Bool(true));
        if let Some(d) = num("minimum")? {
            a.lo = Some((d, flag("exclusiveMinimum")));
        }
        if let Some(d) = num("maximum")? {
            a.hi = Some((d, flag("exclusiveMaximum")));
        }
        if let Some(d) = num("exclusiveMinimum")? {
            let x = NumAtom {
                lo: Some((d, true)),
                ..NumAtom::any()
            };
            a = a.and(&x).unwrap_or_else(empty_atom);
        }
        if let Some(d) = num("exclusiveMaximum")? {
            let x = NumAtom {
                hi: Some((d, true)),
                ..NumAtom::any()
            };
            a = a.and(&x).unwrap_or_else(empty_atom);
        }
        if let Some(d) = num("multipleOf")? {
            if d.neg || d.is_zero() {
                return Err(parse_error("multipleOf", ptr, "must be greater than 0"));
            }
            // Check now that the language can be built, for a precise error
            // (lenient: leave the keyword out).
            match multiple_of(&d) {
                Ok(_) => a.mult.push(d),
                Err(e) => self.leave_out(unsupported("multipleOf", ptr, e), "multipleOf", ptr)?,
            }
        }
        if a.is_any() {
            return Ok(None);
        }
        if !a.normalize() {
            return Ok(Some(empty_atom()));
        }
        Ok(Some(a))
    }

    pub(super) fn object_keywords(
        &mut self,
        id: u32,
        m: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Option<ObjShape>> {
        let draft = self.doc.draft(id);
        let has = |k: &str| draft.has_keyword(k) && m.has(k);
        if !(has("properties")
            || has("patternProperties")
            || has("additionalProperties")
            || has("required")
            || has("propertyNames")
            || has("minProperties")
            || has("maxProperties"))
        {
            return Ok(None);
        }
        // patternProperties.
        let mut patterns: Vec<(Expr, Term)> = Vec::new();
        if let Some(pp) = m.keyword("patternProperties") {
            let Value::Object(pp) = pp else {
                return Err(parse_error("patternProperties", ptr, "not an object"));
            };
            for (p, _) in pp {
                let e = self.pattern_expr(p).map_err(|e| {
                    keyword_error(
                        e.kind(),
                        "patternProperties",
                        ptr,
                        format!("{p:?}: {}", e.message()),
                    )
                })?;
                let sub = self.doc.child(id, &["patternProperties", p]).unwrap();
                patterns.push((e, self.loc(sub)));
            }
        }
        let additional = match m.keyword("additionalProperties") {
            Some(_) => {
                let sub = self.doc.child(id, &["additionalProperties"]).unwrap();
                self.loc(sub)
            }
            // The flag closes only schemas that list names themselves
            // (wrappers of `$ref`/`anyOf` stay open), and softly: see
            // `Term::Unlisted`.
            None if self.opts.no_extra_properties
                && (has("properties") || has("patternProperties")) =>
            {
                Term::Unlisted
            }
            None => Term::True,
        };
        let unlisted = |k: &str| -> Term {
            let matching: Vec<Term> = patterns
                .iter()
                .filter(|(e, _)| strings::matches(e, k))
                .map(|(_, t)| t.clone())
                .collect();
            if matching.is_empty() {
                additional.clone()
            } else {
                Term::and_all(matching)
            }
        };
        let mut props: Vec<(String, Term)> = Vec::new();
        if let Some(p) = m.keyword("properties") {
            let Value::Object(p) = p else {
                return Err(parse_error("properties", ptr, "not an object"));
            };
            for (k, _) in p {
                let sub = self.doc.child(id, &["properties", k]).unwrap();
                let mut parts = vec![self.loc(sub)];
                for (e, t) in &patterns {
                    if strings::matches(e, k) {
                        parts.push(t.clone());
                    }
                }
                props.push((k.clone(), Term::and_all(parts)));
            }
        }
        let mut required = BTreeSet::new();
        let mut weak = BTreeSet::new();
        if let Some(r) = m.keyword("required") {
            let Value::Array(r) = r else {
                return Err(parse_error("required", ptr, "not an array"));
            };
            for x in r {
                let Value::String(k) = x else {
                    return Err(parse_error("required", ptr, "names must be strings"));
                };
                if !props.iter().any(|(n, _)| n == k) {
                    props.push((k.clone(), unlisted(k)));
                    weak.insert(k.clone());
                }
                required.insert(k.clone());
            }
        }
        // Classes of unlisted names: the combinations of matched patterns,
        // split one pattern at a time, dropping provably empty parts.
        let mut classes: Vec<(StrLang, Vec<usize>)> = vec![(StrLang::any(), Vec::new())];
        for (i, (e, _)) in patterns.iter().enumerate() {
            let p = StrLang::from_expr(e.clone());
            let not_p = p.not();
            let mut next = Vec::new();
            for (l, ms) in classes {
                // Empty when the patterns' leading texts differ (see
                // `StrLang::and`).
                let yes = l.and(&p);
                if !yes.is_empty() {
                    let mut m2 = ms.clone();
                    m2.push(i);
                    next.push((yes, m2));
                }
                let no = l.and(&not_p);
                if !no.is_empty() {
                    next.push((no, ms));
                }
            }
            classes = next;
            if classes.len() > MAX_PATTERN_CLASSES {
                return Err(keyword_error(
                    ErrorKind::Limit,
                    "patternProperties",
                    ptr,
                    format!("the patterns overlap in more than {MAX_PATTERN_CLASSES} ways"),
                ));
            }
        }
        let mut extra: Vec<(StrLang, Term)> = Vec::new();
        for (l, ms) in classes {
            let term = if ms.is_empty() {
                additional.clone()
            } else {
                Term::and_all(ms.iter().map(|&i| patterns[i].1.clone()).collect())
            };
            if term != Term::False {
                extra.push((l, term));
            }
        }
        // Merge classes with the same value schema.
        let mut merged: Vec<(StrLang, Term)> = Vec::new();
        for (l, t) in extra {
            match merged.iter_mut().find(|(_, x)| *x == t) {
                Some(e) => e.0 = e.0.or(&l),
                None => merged.push((l, t)),
            }
        }
        let mut shape = ObjShape {
            props,
            required,
            extra: merged,
            min: 0,
            max: None,
            weak,
            need: Vec::new(),
        };
        if has("propertyNames") {
            let sub = self.doc.child(id, &["propertyNames"]).unwrap();
            let n = self.eval(&self.loc(sub))?;
            let names = n.str.clone();
            for (k, t) in shape.props.iter_mut() {
                if !names.contains(k) {
                    *t = Term::False;
                }
            }
            for (l, _) in shape.extra.iter_mut() {
                *l = l.and(&names);
            }
        }
        if let Some(v) = m.keyword("minProperties") {
            shape.min =
                as_count(v).ok_or_else(|| parse_error("minProperties", ptr, "not a count"))?;
        }
        if let Some(v) = m.keyword("maxProperties") {
            shape.max =
                Some(as_count(v).ok_or_else(|| parse_error("maxProperties", ptr, "not a count"))?);
        }
        Ok(Some(shape))
    }

    pub(super) fn array_keywords(
        &mut self,
        id: u32,
        m: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Option<ArrShape>> {
        let mut shape = ArrShape::any();
        let mut any = false;
        let child = |c: &mut Self, segs: &[&str]| -> Term {
            let sub = c.doc.child(id, segs).expect("walked subschema");
            c.loc(sub)
        };
        match m.keyword("items") {
            Some(Value::Array(a)) => {
                any = true;
                for i in 0..a.len() {
                    let t = child(self, &["items", &i.to_string()]);
                    shape.prefix.push(t);
                }
                if m.has("additionalItems") {
                    shape.rest = child(self, &["additionalItems"]);
                }
            }
            Some(_) => {
                any = true;
                shape.rest = child(self, &["items"]);
            }
            None => {}
        }
        let prefix_items = m
            .keyword("prefixItems")
            .filter(|_| self.doc.draft(id).has_keyword("prefixItems"));
        if let Some(Value::Array(a)) = prefix_items {
            any = true;
            shape.prefix.clear();
            for i in 0..a.len() {
                let t = child(self, &["prefixItems", &i.to_string()]);
                shape.prefix.push(t);
            }
            if !matches!(m.keyword("items"), Some(Value::Object(_) | Value::Bool(_))) {
                shape.rest = Term::True;
            }
        }
        if let Some(v) = m.keyword("minItems") {
            any = true;
            shape.min = as_count(v).ok_or_else(|| parse_error("minItems", ptr, "not a count"))?;
        }
        if let Some(v) = m.keyword("maxItems") {
            any = true;
            shape.max =
                Some(as_count(v).ok_or_else(|| parse_error("maxItems", ptr, "not a count"))?);
        }
        if self.doc.draft(id).has_keyword("contains") && m.has("contains") {
            any = true;
            let min = match m.keyword("minContains") {
                Some(v) if self.doc.draft(id) >= Draft::D2019 => {
                    as_count(v).ok_or_else(|| parse_error("minContains", ptr, "not a count"))?
                }
                _ => 1,
            };
            let max = match m.keyword("maxContains") {
                Some(v) if self.doc.draft(id) >= Draft::D2019 => Some(
                    as_count(v).ok_or_else(|| parse_error("maxContains", ptr, "not a count"))?,
                ),
                _ => None,
            };
            let t = child(self, &["contains"]);
            shape.contains.push(Contains {
                term: t,
                min,
                max,
                from: 0,
            });
        }
        if m.keyword("uniqueItems") == Some(&Value::Bool(true)) {
            any = true;
            shape.unique = true;
            self.note_unique(&shape, ptr);
        }
        Ok(any.then_some(shape))
    }

    // ---------------------------------------------------------------
    // Emission: nodes to IR rules.
}
