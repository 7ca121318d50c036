//! `ordered_properties`: an object's listed properties come in the order
//! its `properties` keyword lists them (what llama.cpp's
//! json-schema-to-grammar converter writes), each at most once; optional
//! ones may be left out but never reordered. Properties the schema does not
//! list (where `additionalProperties` / `patternProperties` allow them)
//! come after every listed one.

use super::{all_needs, Compiler, MemberCount, NeedsMet, MAX_COUNT_STATES};
use crate::error::{Error, Result};
use crate::ir::{Expr, LexemeHint, RuleId};
use crate::util::hash::FastMap;

use crate::json_schema::node::ObjShape;

/// A state of the ordered object: the next listed member that may come,
/// the members written (counted up to the bound that matters), which of the
/// shape's `need`s are met, and whether a member was written (so that the
/// next one needs a separator).
type Key = (usize, usize, NeedsMet, bool);

impl Compiler<'_> {
    /// An object of the shape with its members in the listed order.
    pub(super) fn ordered_object_body(&mut self, s: &ObjShape) -> Result<Expr> {
        let ws = self.ws();
        let sep = self.sep();
        let Some((members, extras)) = self.object_members(s)? else {
            return Ok(Expr::Nothing);
        };
        let n = members.len();
        let nreq = members.iter().filter(|m| m.1).count();
        let count = MemberCount::new(s, n, nreq, !extras.is_empty());
        let (min, k) = (count.min, count.k);
        if (n + 1) * (k + 1) * 4 > MAX_COUNT_STATES {
            return Err(Error::limit(format!(
                "minProperties/maxProperties: the object needs more than \
                 {MAX_COUNT_STATES} counting states"
            )));
        }
        let (can_add, inc) = (|c| count.can_add(c), |c| count.inc(c));
        let all_needs = all_needs(s);
        let mut rules: FastMap<Key, RuleId> = FastMap::default();
        let mut todo: Vec<Key> = Vec::new();
        let mut get = |this: &mut Compiler, todo: &mut Vec<Key>, key: Key| -> Result<Expr> {
            if let Some(&r) = rules.get(&key) {
                return Ok(Expr::Ref(r));
            }
            let r = this.new_rule(format!("ordered#{}", this.b.len()))?;
            this.b.set_lexeme_hint(r, LexemeHint::Never);
            rules.insert(key, r);
            todo.push(key);
            Ok(Expr::Ref(r))
        };
        let start = get(self, &mut todo, (0, 0, 0, false))?;
        let mut bodies = Vec::new();
        while let Some(key) = todo.pop() {
            let (i, c, f, started) = key;
            let lead = |e: &Expr| -> Vec<Expr> {
                if started {
                    vec![sep.clone(), e.clone()]
                } else {
                    vec![e.clone()]
                }
            };
            let mut alts = Vec::new();
            if i < n {
                let (variants, req) = &members[i];
                if !req {
                    alts.push(get(self, &mut todo, (i + 1, c, f, started))?);
                }
                if can_add(c) {
                    for (e, sets) in variants {
                        let next = get(self, &mut todo, (i + 1, inc(c), f | *sets, true))?;
                        let mut seq = lead(e);
                        seq.push(next);
                        alts.push(Expr::seq(seq));
                    }
                }
            } else {
                // Nothing written yet: the empty object is the caller's.
                if started && c >= min && f == all_needs {
                    alts.push(Expr::Empty);
                }
                if can_add(c) {
                    for (e, sets) in &extras {
                        let next = get(self, &mut todo, (n, inc(c), f | *sets, true))?;
                        let mut seq = lead(e);
                        seq.push(next);
                        alts.push(Expr::seq(seq));
                    }
                }
            }
            bodies.push((key, Expr::alt(alts)));
        }
        for (key, body) in bodies {
            self.b.set_body(rules[&key], body);
        }
        let mut alts = Vec::new();
        if nreq == 0 && min == 0 && all_needs == 0 {
            alts.push(Expr::seq(vec![
                Expr::literal("{"),
                ws.clone(),
                Expr::literal("}"),
            ]));
        }
        let (open, close) = (self.open_ws(), self.close_ws());
        alts.push(Expr::seq(vec![
            Expr::literal("{"),
            open,
            start,
            close,
            Expr::literal("}"),
        ]));
        Ok(Expr::alt(alts))
    }
}
