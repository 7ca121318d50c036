//! From nodes to IR rules ([`Compiler::rule_for`]): strings (plain,
//! counted), numbers, arrays (plain, counted, unique items) and
//! objects (members in any order, needs, ordered), with the whitespace
//! the options ask for.

use super::{
    all_needs, at, class_length, counted_length, finite_values, holds_rfc3339, json_equal,
    pure_length, without_implied_lengths, Compiler, MemberCount, MemberKey, NeedsMet,
    ANY_ORDER_EXACT_MAX, COUNTED_FROM, LENGTH_COUNTED_FROM, MAX_COUNT_STATES, MAX_NEEDS, MAX_RULES,
    MAX_UNIQUE_DOMAIN, MAX_UNIQUE_STATES, REQUIRED_SET_MAX_ALTS,
};
use crate::error::{Error, Result};
use crate::ir::{CharClass, Expr, LexemeHint, RuleId};
use crate::json_schema::node::{ArrShape, Node, ObjShape, Term};
use crate::json_schema::strings::{canonical_json, encode_lang, StrLang};
use crate::util::hash::FastMap;
use serde_json::Value;

/// Objects among other object shapes (the variants of an `anyOf`) and of
/// at least this many states (sets of members written, times counts) put
/// the separator before a member in a rule of its own per member (see
/// `continuations` in [`Compiler::object_body`]). Where one object's
/// states are alive at a time, or they are few, the mask path walks the
/// members of each state once anyway, in one walk per state rather than
/// one per member, and the added items would cost every token between two
/// members.
const LED_MEMBERS_FROM: usize = 8;

impl Compiler<'_> {
    pub(super) fn new_rule(&mut self, name: String) -> Result<RuleId> {
        self.frequent_checks.check()?;
        if self.b.len() >= MAX_RULES {
            return Err(Error::limit(format!(
                "the schema needs more than {MAX_RULES} grammar rules"
            )));
        }
        Ok(self.b.add_rule(name))
    }

    pub fn ws(&mut self) -> Expr {
        if self.opts.compact || self.opts.max_whitespace == Some(0) || self.opts.layout.is_some() {
            return Expr::Empty;
        }
        if let Some(r) = self.ws {
            return Expr::Ref(r);
        }
        let r = self.b.add_rule("ws");
        let class = Expr::Class(CharClass::from_ranges([
            (0x20, 0x20),
            (0x09, 0x0A),
            (0x0D, 0x0D),
        ]));
        self.b
            .set_body(r, Expr::repeat(class, 0, self.opts.max_whitespace));
        self.b.set_lexeme_hint(r, LexemeHint::Always);
        self.ws = Some(r);
        Expr::Ref(r)
    }

    pub(super) fn lexeme(&mut self, body: Expr, name: &str) -> Result<RuleId> {
        if let Some(&r) = self.lexemes.get(&body) {
            return Ok(r);
        }
        let r = self.new_rule(format!("{name}#{}", self.b.len()))?;
        self.b.set_body(r, body.clone());
        self.b.set_lexeme_hint(r, LexemeHint::Always);
        self.lexemes.insert(body, r);
        Ok(r)
    }

    /// The rule of a term's JSON texts.
    pub fn rule_for(&mut self, t: &Term) -> Result<RuleId> {
        if let Some(&r) = self.rule_of_term.get(t) {
            return Ok(r);
        }
        let name = match t {
            Term::Loc(id, _) => format!("schema:{}", at(self.doc.ptr(*id))),
            _ => format!("combo#{}", self.b.len()),
        };
        let r = self.new_rule(name)?;
        self.rule_of_term.insert(t.clone(), r);
        let node = self.eval(t)?;
        let outer = self.emitting_begin(t);
        let emitted = self.emit_node(&node);
        self.emitting = outer;
        let (body, hint) = emitted?;
        self.b.set_body(r, body);
        self.b.set_lexeme_hint(r, hint);
        Ok(r)
    }

    /// The JSON text of the strings of `l` ([`encode_lang`]), spelled once
    /// per schema: many properties share a format or pattern, and each
    /// spelling builds every escape of every character class.
    pub(super) fn encoded(&mut self, l: &StrLang) -> Expr {
        if let Some(e) = self.encoded.get(l) {
            return e.clone();
        }
        let e = encode_lang(l);
        self.encoded.insert(l.clone(), e.clone());
        e
    }

    /// The lexeme rule of the strings of `l`, one per language: every
    /// node with these strings references it rather than copying the
    /// spelling (tens of IR nodes for any string, every escape spelled)
    /// for `minimize` to merge again.
    fn string_rule(&mut self, l: &StrLang) -> Result<RuleId> {
        if let Some(&r) = self.string_rules.get(l) {
            return Ok(r);
        }
        let e = self.encoded(l);
        let r = self.lexeme(e, "string")?;
        self.string_rules.insert(l.clone(), r);
        Ok(r)
    }

    pub fn emit_node(&mut self, n: &Node) -> Result<(Expr, LexemeHint)> {
        let n = &n.hardened();
        let mut scalars = Vec::new();
        if n.null {
            scalars.push(Expr::literal("null"));
        }
        if n.bools & 2 != 0 {
            scalars.push(Expr::literal("true"));
        }
        if n.bools & 1 != 0 {
            scalars.push(Expr::literal("false"));
        }
        if !n.num.is_empty() {
            scalars.push(Expr::Ref(self.number_rule(&n.num)?));
        }
        let mut composite = Vec::new();
        if !n.str.is_empty() {
            let fewer_bounds = without_implied_lengths(&n.str);
            let str_lang = fewer_bounds.as_ref().unwrap_or(&n.str);
            match pure_length(str_lang) {
                Some((lo, hi))
                    if hi.is_none_or(|h| h >= lo)
                        && (lo >= LENGTH_COUNTED_FROM || hi >= Some(LENGTH_COUNTED_FROM)) =>
                {
                    composite.push(Expr::Ref(self.counted_string(&StrLang::any(), lo, hi)?));
                }
                _ => match counted_length(str_lang).or_else(|| class_length(str_lang)) {
                    Some((rest, lo, hi))
                        if lo >= COUNTED_FROM
                            || hi.is_some_and(|h| h >= COUNTED_FROM)
                            || holds_rfc3339(&rest) =>
                    {
                        composite.push(Expr::Ref(self.counted_string(&rest, lo, hi)?));
                    }
                    _ => scalars.push(Expr::Ref(self.string_rule(str_lang)?)),
                },
            }
        }
        for s in &n.arr {
            composite.push(Expr::Ref(self.array_rule(s)?));
        }
        for s in &n.obj {
            composite.push(Expr::Ref(self.object_rule(s, n.obj.len() > 1)?));
        }
        if composite.is_empty() {
            return Ok((Expr::alt(scalars), LexemeHint::Always));
        }
        if !scalars.is_empty() {
            let r = self.lexeme(Expr::alt(scalars), "scalar")?;
            composite.insert(0, Expr::Ref(r));
        }
        Ok((Expr::alt(composite), LexemeHint::Never))
    }

    /// The strings of `rest` with `lo..=hi` code points, as a lexeme that
    /// counts code points next to `rest`'s automaton (see
    /// [`LexemeHint::Counted`]), behind a parser rule that keeps the
    /// compiler from merging it into a larger lexeme (which could repeat
    /// it, and a count belongs to one string).
    pub(super) fn counted_string(
        &mut self,
        rest: &StrLang,
        lo: u32,
        hi: Option<u32>,
    ) -> Result<RuleId> {
        let body = Expr::And(vec![self.encoded(rest), crate::ir::quoted_length(lo, hi)]);
        let key = Expr::Seq(vec![Expr::literal("counted-rule"), body.clone()]);
        if let Some(&r) = self.lexemes.get(&key) {
            return Ok(r);
        }
        let lexeme = self.new_rule(format!("counted#{}", self.b.len()))?;
        self.b.set_body(lexeme, body);
        self.b.set_lexeme_hint(
            lexeme,
            LexemeHint::Counted {
                min: lo,
                max: hi.unwrap_or(u32::MAX),
            },
        );
        let r = self.new_rule("counted".into())?;
        self.b.set_body(r, Expr::Ref(lexeme));
        self.b.set_lexeme_hint(r, LexemeHint::Never);
        self.lexemes.insert(key, r);
        Ok(r)
    }

    pub(super) fn array_rule(&mut self, s: &ArrShape) -> Result<RuleId> {
        if let Some(&r) = self.arr_rules.get(s) {
            return Ok(r);
        }
        let r = self.new_rule(format!("array#{}", self.b.len()))?;
        self.arr_rules.insert(s.clone(), r);
        self.b.set_lexeme_hint(r, LexemeHint::Never);
        self.enter_container();
        let body = self.array_body(s);
        self.leave_container();
        self.b.set_body(r, body?);
        Ok(r)
    }

    /// An array of the shape (its items one level deeper).
    pub(super) fn array_body(&mut self, s: &ArrShape) -> Result<Expr> {
        let ws = self.ws();
        let empty_ok = s.min == 0 && s.contains.iter().all(|c| c.min == 0);
        if self.too_deep() {
            return Ok(if empty_ok {
                Expr::literal("[]")
            } else {
                Expr::Nothing
            });
        }
        let (open, close) = (self.open_ws(), self.close_ws());
        let items = if s.unique {
            self.unique_or_plain(s)?
        } else if !s.contains.is_empty() {
            self.counted_items(s)?
        } else {
            self.plain_items(s)?
        };
        let mut alts = Vec::new();
        if empty_ok {
            alts.push(Expr::seq(vec![
                Expr::literal("["),
                ws.clone(),
                Expr::literal("]"),
            ]));
        }
        if items != Expr::Nothing {
            alts.push(Expr::seq(vec![
                Expr::literal("["),
                open,
                items,
                close,
                Expr::literal("]"),
            ]));
        }
        Ok(Expr::alt(alts))
    }

    pub(super) fn sep(&mut self) -> Expr {
        self.item_sep()
    }

    /// Items of an array without `contains` or `uniqueItems`: a non-empty
    /// sequence (`Nothing` when there can be none).
    pub(super) fn plain_items(&mut self, s: &ArrShape) -> Result<Expr> {
        let sep = self.sep();
        let mut t = s.prefix.len().max(s.min as usize);
        if let Some(m) = s.max {
            t = t.min(m as usize);
        }
        if t > MAX_COUNT_STATES {
            return Err(Error::limit(format!(
                "an array needs more than {MAX_COUNT_STATES} item positions"
            )));
        }
        // Items from index t on, all of the `rest` schema.
        let more = match s.max {
            Some(m) if m as usize <= t => Expr::Nothing,
            _ if s.rest == Term::False => Expr::Nothing,
            max => {
                let v = Expr::Ref(self.rule_for(&s.rest)?);
                let extra_max = max.map(|m| m - t as u32 - 1);
                let mut next = Expr::seq(vec![sep.clone(), v.clone()]);
                if extra_max.is_some_and(|m| m > 1) {
                    // A bounded repetition of a regular item would become
                    // one lexeme with a copy per position: keep the count
                    // in the parser.
                    let r = self.new_rule(format!("item#{}", self.b.len()))?;
                    self.b.set_body(r, next);
                    self.b.set_lexeme_hint(r, LexemeHint::Never);
                    next = Expr::Ref(r);
                }
                Expr::seq(vec![v, Expr::repeat(next, 0, extra_max)])
            }
        };
        let mut e = more;
        // Required items past the prefix all have the `rest` schema: one
        // repetition, not an expression nested once per item (5,000 deep
        // for `minItems: 5000`). Every item before the last of the `t` is
        // required here; the array may end after it when `t` reaches
        // `minItems` (it may not when `maxItems` is smaller).
        let p = s.prefix.len();
        if t > p + 1 && s.min as usize >= t {
            let v = Expr::Ref(self.rule_for(&s.rest)?);
            let mut cont = Vec::new();
            if t >= s.min as usize {
                cont.push(Expr::Empty);
            }
            if e != Expr::Nothing {
                cont.push(Expr::seq(vec![sep.clone(), e]));
            }
            let k = (t - 1 - p) as u32;
            let mut parts = Vec::with_capacity(2 * p + 3);
            for i in 0..p {
                parts.push(Expr::Ref(self.rule_for(&s.at(i).clone())?));
                parts.push(sep.clone());
            }
            parts.push(v.clone());
            parts.push(Expr::repeat(Expr::seq(vec![sep.clone(), v]), k, Some(k)));
            parts.push(Expr::alt(cont));
            return Ok(Expr::seq(parts));
        }
        for i in (0..t).rev() {
            let v = Expr::Ref(self.rule_for(&s.at(i).clone())?);
            let mut cont = Vec::new();
            if i + 1 >= s.min as usize {
                cont.push(Expr::Empty);
            }
            if e != Expr::Nothing {
                cont.push(Expr::seq(vec![sep.clone(), e]));
            }
            e = Expr::seq(vec![v, Expr::alt(cont)]);
        }
        Ok(e)
    }

    /// Items with `contains` constraints: states (position, count per
    /// constraint). An item either matches a constraint (counted) or not;
    /// "not" is asserted only for constraints with a `maxContains`, where
    /// counting a match is mandatory.
    pub(super) fn counted_items(&mut self, s: &ArrShape) -> Result<Expr> {
        const MAX_CONTAINS: usize = 6;
        let cs = &s.contains;
        if cs.len() > MAX_CONTAINS {
            return Err(Error::limit(format!(
                "contains: more than {MAX_CONTAINS} contains constraints on one array"
            )));
        }
        let sep = self.sep();
        let from_max = cs.iter().map(|c| c.from as usize).max().unwrap_or(0);
        let mut t = s.prefix.len().max(s.min as usize).max(from_max);
        if let Some(m) = s.max {
            t = t.min(m as usize);
        }
        // Counts saturate at the bound that matters.
        let cap: Vec<usize> = cs.iter().map(|c| c.max.unwrap_or(c.min) as usize).collect();
        let states = cap
            .iter()
            .try_fold(t + 1, |acc, &k| acc.checked_mul(k + 1))
            .filter(|&n| n <= MAX_COUNT_STATES);
        if states.is_none() {
            return Err(Error::limit(format!(
                "contains: the array needs more than {MAX_COUNT_STATES} counting states"
            )));
        }
        // Per item position: the (term, which constraints it counts) options.
        let options_at = |i: usize| -> Vec<(Term, Vec<bool>)> {
            let active: Vec<usize> = (0..cs.len())
                .filter(|&j| i >= cs[j].from as usize)
                .collect();
            let mut out = Vec::new();
            for subset in 0u32..1 << active.len() {
                let mut term = s.at(i).clone();
                let mut counts = vec![false; cs.len()];
                for (bit, &j) in active.iter().enumerate() {
                    if subset >> bit & 1 == 1 {
                        term = Term::and(term, cs[j].term.clone());
                        counts[j] = true;
                    } else if cs[j].max.is_some() {
                        term = Term::and(term, Term::not(cs[j].term.clone()));
                    }
                }
                if term != Term::False {
                    out.push((term, counts));
                }
            }
            out
        };
        type Key = (usize, Vec<usize>);
        // Rules E(i, n): items from index i on (non-empty), n counted so far.
        let mut rules: FastMap<Key, RuleId> = FastMap::default();
        let mut todo: Vec<Key> = Vec::new();
        let id_of = |rules: &mut FastMap<Key, RuleId>,
                     todo: &mut Vec<Key>,
                     this: &mut Self,
                     key: Key|
         -> Result<RuleId> {
            if let Some(&r) = rules.get(&key) {
                return Ok(r);
            }
            let r = this.new_rule(format!("items#{}", this.b.len()))?;
            this.b.set_lexeme_hint(r, LexemeHint::Never);
            rules.insert(key.clone(), r);
            todo.push(key);
            Ok(r)
        };
        let start = id_of(&mut rules, &mut todo, self, (0, vec![0; cs.len()]))?;
        while let Some(key) = todo.pop() {
            let (i, n) = key.clone();
            let r = rules[&key];
            let mut alts = Vec::new();
            'option: for (term, counted) in options_at(i) {
                let mut n2 = n.clone();
                for j in 0..cs.len() {
                    if !counted[j] {
                        continue;
                    }
                    match cs[j].max {
                        Some(m) if n[j] >= m as usize => continue 'option,
                        Some(_) => n2[j] += 1,
                        None => n2[j] = (n[j] + 1).min(cap[j]),
                    }
                }
                let v = Expr::Ref(self.rule_for(&term)?);
                let mut cont = Vec::new();
                let mins_met = cs.iter().zip(&n2).all(|(c, &k)| k >= c.min as usize);
                if i + 1 >= s.min as usize && mins_met {
                    cont.push(Expr::Empty);
                }
                if s.max.is_none_or(|m| i + 1 < m as usize) {
                    let nr = id_of(&mut rules, &mut todo, self, ((i + 1).min(t), n2))?;
                    cont.push(Expr::seq(vec![sep.clone(), Expr::Ref(nr)]));
                }
                alts.push(Expr::seq(vec![v, Expr::alt(cont)]));
            }
            self.b.set_body(r, Expr::alt(alts));
        }
        Ok(Expr::Ref(start))
    }

    /// Items of a `uniqueItems` array over a small finite domain: the
    /// states are the sets of values used so far.
    pub(super) fn unique_items(&mut self, s: &ArrShape) -> Result<Expr> {
        if !s.contains.is_empty() {
            return Err(Error::unsupported(
                "uniqueItems: together with contains is not supported",
            ));
        }
        // The domain: every value any position admits, which must be a
        // small finite set.
        let mut terms: Vec<Term> = s.prefix.clone();
        terms.push(s.rest.clone());
        let mut domain: Vec<Value> = Vec::new();
        for t in &terms {
            let n = self.eval(t)?;
            let vals = finite_values(&n).ok_or_else(|| {
                Error::unsupported(
                    "uniqueItems: items are not a small finite set (only enumerations of \
                     scalars, booleans and null are supported)",
                )
            })?;
            for v in vals {
                if !domain.iter().any(|x| json_equal(x, &v)) {
                    domain.push(v);
                }
            }
            if domain.len() > MAX_UNIQUE_DOMAIN {
                return Err(Error::unsupported(format!(
                    "uniqueItems: items are not a small finite set (more than \
                     {MAX_UNIQUE_DOMAIN} values)"
                )));
            }
        }
        // The value v is allowed at position i when at(i) admits it.
        let d = domain.len();
        let mut allowed: Vec<Vec<bool>> = Vec::new();
        for i in 0..=s.prefix.len() {
            let n = self.eval(&s.at(i).clone())?;
            let vals = finite_values(&n).unwrap_or_default();
            allowed.push(
                domain
                    .iter()
                    .map(|v| vals.iter().any(|x| json_equal(x, v)))
                    .collect(),
            );
        }
        let max = s.max.map_or(d, |m| (m as usize).min(d));
        let sep = self.sep();
        let val_rules: Vec<RuleId> = domain
            .iter()
            .map(|v| {
                let t = self.val(v);
                self.rule_for(&t)
            })
            .collect::<Result<_>>()?;
        let mut rules: FastMap<u32, RuleId> = FastMap::default();
        let mut todo: Vec<u32> = Vec::new();
        // Rule U(set): items after the values in `set` were used (non-empty).
        fn get(
            this: &mut Compiler,
            rules: &mut FastMap<u32, RuleId>,
            set: u32,
            todo: &mut Vec<u32>,
        ) -> Result<RuleId> {
            if let Some(&r) = rules.get(&set) {
                return Ok(r);
            }
            if rules.len() >= MAX_UNIQUE_STATES {
                return Err(Error::limit(format!(
                    "uniqueItems: more than {MAX_UNIQUE_STATES} states"
                )));
            }
            let r = this.new_rule(format!("unique#{}", this.b.len()))?;
            this.b.set_lexeme_hint(r, LexemeHint::Never);
            rules.insert(set, r);
            todo.push(set);
            Ok(r)
        }
        let start = get(self, &mut rules, 0, &mut todo)?;
        while let Some(set) = todo.pop() {
            let i = set.count_ones() as usize;
            let row = &allowed[i.min(s.prefix.len())];
            let mut alts = Vec::new();
            for v in 0..d {
                if set & (1 << v) != 0 || !row[v] {
                    continue;
                }
                let next = set | (1 << v);
                let used = i + 1;
                let mut cont = Vec::new();
                if used >= s.min as usize {
                    cont.push(Expr::Empty);
                }
                if used < max {
                    let nr = get(self, &mut rules, next, &mut todo)?;
                    cont.push(Expr::seq(vec![sep.clone(), Expr::Ref(nr)]));
                }
                alts.push(Expr::seq(vec![Expr::Ref(val_rules[v]), Expr::alt(cont)]));
            }
            let r = rules[&set];
            self.b.set_body(r, Expr::alt(alts));
        }
        Ok(Expr::Ref(start))
    }

    /// The rule of an object of shape `s`; `among_variants`: other object
    /// shapes are alternatives to it (see [`Compiler::object_body`]). Made
    /// once per shape, as its first use asks.
    pub(super) fn object_rule(&mut self, s: &ObjShape, among_variants: bool) -> Result<RuleId> {
        if let Some(&r) = self.obj_rules.get(s) {
            return Ok(r);
        }
        let r = self.new_rule(format!("object#{}", self.b.len()))?;
        self.obj_rules.insert(s.clone(), r);
        self.b.set_lexeme_hint(r, LexemeHint::Never);
        self.enter_container();
        let body = if self.too_deep() {
            let empty_ok = s.required.is_empty() && s.min == 0 && s.need.is_empty();
            Ok(if empty_ok {
                Expr::literal("{}")
            } else {
                Expr::Nothing
            })
        } else {
            self.object_body(s, among_variants)
        };
        self.leave_container();
        self.b.set_body(r, body?);
        Ok(r)
    }

    /// The members of an object shape: per listed property its variants
    /// (member text, the set of the shape's `need`s it meets, bit `i` for
    /// `need[i]`) and whether it is required; the variants of unlisted
    /// members. `None` when a required property can have no value.
    #[allow(clippy::type_complexity)]
    pub(super) fn object_members(
        &mut self,
        s: &ObjShape,
    ) -> Result<Option<(Vec<(Vec<(Expr, NeedsMet)>, bool)>, Vec<(Expr, NeedsMet)>)>> {
        let colon = self.key_sep();
        let reduced = s.needs_reduced();
        let needs = if reduced.len() > MAX_NEEDS {
            let e = Error::unsupported(format!(
                "not: more than {MAX_NEEDS} negated additionalProperties / \
                 patternProperties on one object are not supported"
            ));
            // Lenient: only the first ones are enforced.
            let ptr = self.emitting_pointer();
            self.leave_out(e, "not", &ptr)?;
            &reduced[..MAX_NEEDS]
        } else {
            &reduced[..]
        };
        // The non-empty sets of needs one member may meet at once: a
        // variant per set whose names and values intersect.
        let need_sets: Vec<(NeedsMet, StrLang, Term)> = (1..1u32 << needs.len())
            .filter_map(|mask| {
                let mut names = StrLang::any();
                let mut value = Term::True;
                for (i, (l, t)) in needs.iter().enumerate() {
                    if mask & (1 << i) != 0 {
                        names = names.and(l);
                        value = Term::and(value, t.clone());
                    }
                }
                (!names.is_empty() && value != Term::False).then_some((mask, names, value))
            })
            .collect();
        // Each member is a parser rule of its own: the object's states (up
        // to 2^6 of them, one per set of members written) each refer to it
        // instead of copying its key, so the key's states and their token
        // sets exist once per member.
        let member = |this: &mut Self, key: MemberKey, t: &Term| -> Result<Expr> {
            let v = this.rule_for(t)?;
            this.member_rule(key, v, &colon)
        };
        let mut members = Vec::new();
        for (k, t) in &s.props {
            let req = s.required.contains(k);
            if *t == Term::False {
                if req {
                    return Ok(None);
                }
                continue;
            }
            let key = MemberKey::Name(canonical_json(k));
            let mut alts = vec![(member(self, key.clone(), t)?, 0)];
            for (mask, nl, nt) in &need_sets {
                if nl.contains(k) {
                    let both = Term::and(t.clone(), nt.clone());
                    if both != Term::False {
                        alts.push((member(self, key.clone(), &both)?, *mask));
                    }
                }
            }
            members.push((alts, req));
        }
        let listed = StrLang::Lits(s.props.iter().map(|(k, _)| k.clone()).collect());
        let mut extras = Vec::new();
        for (l, t) in &s.extra {
            // No member can have it (`additionalProperties: false`): no key
            // lexeme, no alternative to drop later.
            if *t == Term::False || self.term_empty(t, 0)? {
                continue;
            }
            let keys = if s.props.is_empty() {
                l.clone()
            } else {
                l.and(&listed.not())
            };
            if keys.is_empty() {
                continue;
            }
            let kr = self.lexeme(encode_lang(&keys), "key")?;
            extras.push((member(self, MemberKey::Lexeme(kr), t)?, 0));
            for (mask, nl, nt) in &need_sets {
                let keys2 = keys.and(nl);
                let both = Term::and(t.clone(), nt.clone());
                if !keys2.is_empty() && both != Term::False {
                    let kr = self.lexeme(encode_lang(&keys2), "key")?;
                    extras.push((member(self, MemberKey::Lexeme(kr), &both)?, *mask));
                }
            }
        }
        Ok(Some((members, extras)))
    }

    /// The rule of a member (its key, `colon`, value rule `value`), made
    /// once: objects that share a property (the variants of a `oneOf`)
    /// share its rule, and with it the token sets of its states. `colon`
    /// is the same throughout a compile (`Compiler::key_sep`).
    fn member_rule(&mut self, key: MemberKey, value: RuleId, colon: &Expr) -> Result<Expr> {
        if let Some(&r) = self.member_rules.get(&(key.clone(), value)) {
            return Ok(Expr::Ref(r));
        }
        let key_expr = match &key {
            MemberKey::Name(json) => Expr::literal(json),
            &MemberKey::Lexeme(r) => Expr::Ref(r),
        };
        let r = self.new_rule(format!("member#{}", self.b.len()))?;
        self.b.set_body(
            r,
            Expr::seq(vec![key_expr, colon.clone(), Expr::Ref(value)]),
        );
        self.b.set_lexeme_hint(r, LexemeHint::Never);
        self.member_rules.insert((key, value), r);
        Ok(Expr::Ref(r))
    }

    /// The rule of separator `sep` and then member (or choice of members)
    /// rule `member`, made once per member and separator.
    fn led_member_rule(&mut self, member: RuleId, sep: &Expr) -> Result<Expr> {
        let key = (member, sep.clone());
        if let Some(&r) = self.led_member_rules.get(&key) {
            return Ok(Expr::Ref(r));
        }
        let r = self.new_rule(format!("led-member#{}", self.b.len()))?;
        self.b
            .set_body(r, Expr::seq(vec![sep.clone(), Expr::Ref(member)]));
        self.b.set_lexeme_hint(r, LexemeHint::Never);
        self.led_member_rules.insert(key, r);
        Ok(Expr::Ref(r))
    }

    /// An object of the shape. Members come in any order (JSON Schema does
    /// not constrain it). What the states track depends on the size:
    /// - at most [`ANY_ORDER_EXACT_MAX`] listed properties: the set of
    ///   listed properties written, so each comes at most once (exact);
    /// - else, when the required ones are few enough
    ///   ([`REQUIRED_SET_MAX_ALTS`]): the set of required properties
    ///   written, each at most once; optional listed ones may repeat;
    /// - else the number of required properties written.
    ///
    /// The last two accept texts that repeat a key (as additional
    /// properties always may): JSON Schema leaves duplicate keys undefined,
    /// and every text without one is accepted exactly when its object is
    /// valid. Counts for min/maxProperties and a `need` flag are added to
    /// the state when they can bind. `among_variants`: other object
    /// shapes are alternatives to this one, so that the states of several
    /// objects are alive at once ([`LED_MEMBERS_FROM`]).
    pub(super) fn object_body(&mut self, s: &ObjShape, among_variants: bool) -> Result<Expr> {
        if self.opts.ordered_properties {
            return self.ordered_object_body(s);
        }
        let ws = self.ws();
        let sep = self.sep();
        let Some((members, extras)) = self.object_members(s)? else {
            return Ok(Expr::Nothing);
        };
        let n = members.len();
        let nreq = members.iter().filter(|m| m.1).count();
        let count = MemberCount::new(s, n, nreq, !extras.is_empty());
        let (min, k) = (count.min, count.k);
        // Which listed members the state tracks as a set (bit i = member
        // i written); the other required ones are counted.
        let tracked: Vec<bool> = if n <= ANY_ORDER_EXACT_MAX {
            vec![true; n]
        } else if (1usize << nreq.min(31)) * (n + extras.len()) <= REQUIRED_SET_MAX_ALTS {
            members.iter().map(|m| m.1).collect()
        } else {
            vec![false; n]
        };
        let ntracked = tracked.iter().filter(|&&t| t).count();
        let counted_req = members
            .iter()
            .zip(&tracked)
            .filter(|(m, &t)| m.1 && !t)
            .count();
        let positions = (1usize << ntracked) * (counted_req + 1);
        if positions * (k + 1) * 2 > MAX_COUNT_STATES {
            return Err(Error::limit(format!(
                "minProperties/maxProperties: the object needs more than \
                 {MAX_COUNT_STATES} counting states"
            )));
        }
        let led_members = among_variants && positions * (k + 1) >= LED_MEMBERS_FROM;
        let (can_add, inc) = (|c| count.can_add(c), |c| count.inc(c));
        let all_needs = all_needs(s);
        let mut bit = vec![0u64; n];
        let mut next_bit = 0;
        for (i, &t) in tracked.iter().enumerate() {
            if t {
                bit[i] = 1 << next_bit;
                next_bit += 1;
            }
        }
        let req_mask: u64 = (0..n).filter(|&i| members[i].1).map(|i| bit[i]).sum();
        // State: (set written, required counted, members written, needs
        // met).
        type Key = (u64, usize, usize, NeedsMet);
        // After writing member j in state (set, creq): the next (set,
        // creq), or None when j was already written and is tracked.
        let after = |j: usize, set: u64, creq: usize| -> Option<(u64, usize)> {
            if tracked[j] {
                (set & bit[j] == 0).then_some((set | bit[j], creq))
            } else if members[j].1 {
                Some((set, (creq + 1).min(counted_req)))
            } else {
                Some((set, creq))
            }
        };
        let mut rules: FastMap<Key, RuleId> = FastMap::default();
        let mut todo: Vec<Key> = Vec::new();
        fn get(
            this: &mut Compiler,
            rules: &mut FastMap<Key, RuleId>,
            todo: &mut Vec<Key>,
            key: Key,
        ) -> Result<Expr> {
            if let Some(&r) = rules.get(&key) {
                return Ok(Expr::Ref(r));
            }
            let r = this.new_rule(format!("members#{}", this.b.len()))?;
            this.b.set_lexeme_hint(r, LexemeHint::Never);
            rules.insert(key, r);
            todo.push(key);
            Ok(Expr::Ref(r))
        }
        // The members that may follow state (set, creq, c, f), each with
        // the state after it; `lead` goes before each (the separator).
        let mut groups: FastMap<Vec<(usize, usize)>, RuleId> = FastMap::default();
        let mut continuations = |this: &mut Compiler,
                                 rules: &mut FastMap<Key, RuleId>,
                                 todo: &mut Vec<Key>,
                                 (set, creq, c, f): Key,
                                 lead: Option<&Expr>|
         -> Result<Vec<Expr>> {
            let mut alts = Vec::new();
            if !can_add(c) {
                return Ok(alts);
            }
            // Members that lead to the same state form one alternation,
            // a rule shared by every state that offers the same group:
            // counted members lead every state to the next count, and
            // spelled out per state they made n states of n alternatives
            // each (quadratic in required properties).
            let mut by_next: Vec<(Key, Vec<(usize, usize)>)> = Vec::new();
            let mut offer = |next: Key, member: (usize, usize)| match by_next
                .iter_mut()
                .find(|(k, _)| *k == next)
            {
                Some((_, v)) => v.push(member),
                None => by_next.push((next, vec![member])),
            };
            for (x, (_, sets)) in extras.iter().enumerate() {
                offer((set, creq, inc(c), f | *sets), (usize::MAX, x));
            }
            for (j, m) in members.iter().enumerate() {
                let Some((set2, creq2)) = after(j, set, creq) else {
                    continue;
                };
                for (x, (_, sets)) in m.0.iter().enumerate() {
                    offer((set2, creq2, inc(c), f | *sets), (j, x));
                }
            }
            let expr_of = |(j, x): (usize, usize)| -> &Expr {
                if j == usize::MAX {
                    &extras[x].0
                } else {
                    &members[j].0[x].0
                }
            };
            for (next_key, group) in by_next {
                let e = if group.len() == 1 {
                    expr_of(group[0]).clone()
                } else if let Some(&r) = groups.get(&group) {
                    Expr::Ref(r)
                } else {
                    let r = this.new_rule(format!("members-any#{}", this.b.len()))?;
                    this.b.set_lexeme_hint(r, LexemeHint::Never);
                    this.b.set_body(
                        r,
                        Expr::alt(group.iter().map(|&m| expr_of(m).clone()).collect()),
                    );
                    groups.insert(group, r);
                    Expr::Ref(r)
                };
                // Among variants, the separator goes with the member (or
                // group) it leads to, in a rule of their own: the
                // positions around `,` are then that rule's, whatever the
                // object and its state, and so are their token sets. In
                // the object's state instead, every state alive (one per
                // set of members written, per object of an `anyOf`) walked
                // the same keys around `,` for its first mask there.
                let e = match (lead, e) {
                    (Some(sep), Expr::Ref(r)) if led_members => this.led_member_rule(r, sep)?,
                    (Some(sep), e) if led_members => Expr::seq(vec![sep.clone(), e]),
                    (_, e) => e,
                };
                let next = get(this, rules, todo, next_key)?;
                alts.push(Expr::seq(vec![e, next]));
            }
            // Elsewhere the separator comes once, before the members that
            // may follow it: the parser then has one item between two
            // members rather than one per member.
            Ok(match lead {
                Some(sep) if !led_members && !alts.is_empty() => {
                    vec![Expr::seq(vec![sep.clone(), Expr::alt(alts)])]
                }
                _ => alts,
            })
        };
        // The start: nothing written yet (a non-empty continuation).
        let first = continuations(self, &mut rules, &mut todo, (0, 0, 0, 0), None)?;
        while let Some(key) = todo.pop() {
            let (set, creq, c, f) = key;
            let r = rules[&key];
            let mut alts = Vec::new();
            if c >= min && set & req_mask == req_mask && creq == counted_req && f == all_needs {
                alts.push(Expr::Empty);
            }
            alts.extend(continuations(self, &mut rules, &mut todo, key, Some(&sep))?);
            self.b.set_body(r, Expr::alt(alts));
        }
        let mut alts = Vec::new();
        if nreq == 0 && min == 0 && all_needs == 0 {
            alts.push(Expr::seq(vec![
                Expr::literal("{"),
                ws.clone(),
                Expr::literal("}"),
            ]));
        }
        let f = Expr::alt(first);
        if f != Expr::Nothing {
            let (open, close) = (self.open_ws(), self.close_ws());
            alts.push(Expr::seq(vec![
                Expr::literal("{"),
                open,
                f,
                close,
                Expr::literal("}"),
            ]));
        }
        Ok(Expr::alt(alts))
    }
}
