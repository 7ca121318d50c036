//! The per-vocabulary engine: a vocabulary with every cache its grammars
//! share. It interns lexeme automata by expression (so that every grammar
//! with the same lexeme shares its automaton and what masks learned about
//! it), keeps the regular parts of intersections, and holds the shared
//! string tables and free exits. The C handle `cg_vocab` is one.
//!
//! Every cache of the engine fits in one byte budget
//! ([`Engine::set_cache_budget`], default [`DEFAULT_CACHE_BUDGET`]): a
//! server that compiles new schemas without end would otherwise keep every
//! lexeme it ever built. An eighth each goes to the free exits and to the
//! counted-string token sets, tables that are cleared when full, and a
//! sixteenth to the token sets that lexeme states reading the same tokens
//! share (see [`Engine::walked_token_sets`]), cleared when full too; the
//! rest to the lexemes and parts, each counted with what the mask path
//! learned in it since (its states' token sets and subtree walks grow as
//! masks reach them). Past their share the least recently used lexemes
//! and parts are dropped; grammars that hold them keep them, and a later
//! compile builds them again. Eviction changes speed, never a mask: a rebuilt DFA
//! is the same automaton.

use std::sync::{Arc, OnceLock};

use super::cleared::ClearedWhenFull;
use super::context::SharedFreeExits;
use super::info::{Exit, TokenInfo};
use super::lexeme::Lexeme;
use super::string_counts::StringCounts;
use super::token_list::TokenList;
use crate::compile::lexeme::{
    any_string_expr, build_counted_lexeme, build_lexeme, build_part, too_large_error, DfaLimits,
    LexemeDfa, LexemeSource, StringBody, Table, DEAD,
};
use crate::error::Result;
use crate::ir::Expr;
use crate::util::hash::{FastMap, FastSet};
use crate::util::sync::{CacheMutex, Recover};
use crate::vocab::Vocab;

/// The default byte budget of an engine's caches: 256 MiB, of which 176
/// go to the lexemes (see `shares`). The lexemes of 561 MaskBench
/// schemas (every tenth of maskbench-dev), token sets learned included,
/// come to 283 MB on Llama 3; the exact RFC 3339 `time` and `date-time`
/// lexemes take 23 MB of it between them. With 128 MiB for the lexemes
/// their evictions made the slowest masks (p99.9) 8% slower; with 192 MiB
/// the cache holds 170 MB (162 MiB, within the 176 left since the walked
/// sets took a sixteenth) and they are back. The tables cleared when full
/// had caps of their own before they shared the budget (16 MB each).
pub const DEFAULT_CACHE_BUDGET: usize = 256 << 20;

/// What an engine's cache holds and has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub lexemes: usize,
    pub parts: usize,
    /// Bytes of the entries, what masks learned in them included.
    pub bytes: usize,
    pub budget: usize,
    pub evictions: u64,
}

/// "Any JSON string" as a lexeme of this engine, and the state after its
/// opening quote: every lexeme state like it shares its token sets.
pub struct AnyString {
    pub lexeme: Arc<Lexeme>,
    pub body: StringBody,
}

/// A vocabulary and the caches its grammars share. Made by
/// [`Engine::new`], which `strings.rs` defines (it runs a walk).
pub struct Engine {
    vocab: Vocab,
    store: CacheMutex<Store>,
    /// See [`StringCounts`]; built with the engine.
    counts: OnceLock<Option<StringCounts>>,
    /// See [`AnyString`]; built on first use.
    body: OnceLock<Option<AnyString>>,
    /// The context-free exit tokens of lexeme states, which every grammar
    /// of the vocabulary shares.
    pub(crate) free_exits: SharedFreeExits,
    /// See [`Engine::walked_token_sets`].
    walked: CacheMutex<ClearedWhenFull<WalkedKey, Arc<TokenInfo>>>,
}

/// What a walk of a lexeme state found (see
/// `lexeme_walk::lexeme_info`): its accepted tokens as trie-order ranges,
/// and its exits.
type WalkedKey = (Box<[(u32, u32)]>, Box<[Exit]>);

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("vocab", &self.vocab)
            .finish()
    }
}

/// The budget's shares: (lexemes and parts, free exits, counted-string
/// token sets, walked token sets).
fn shares(budget: usize) -> (usize, usize, usize, usize) {
    let (table, walked) = (budget / 8, budget / 16);
    (budget - 2 * table - walked, table, table, walked)
}

impl Engine {
    /// An engine for `vocab` with nothing built yet: [`Engine::new`] (in
    /// `strings.rs`) builds the tables JSON strings share on top.
    pub(crate) fn without_string_tables(vocab: Vocab) -> Arc<Engine> {
        let (_, free_exits, _, walked) = shares(DEFAULT_CACHE_BUDGET);
        Arc::new(Engine {
            vocab,
            store: CacheMutex::new("engine lexemes", Store::new(DEFAULT_CACHE_BUDGET)),
            counts: OnceLock::new(),
            body: OnceLock::new(),
            free_exits: SharedFreeExits::new(free_exits),
            walked: CacheMutex::new("engine walked sets", ClearedWhenFull::new(walked)),
        })
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Vocab {
        &self.vocab
    }

    /// The token sets of a lexeme state whose walk accepted the tokens of
    /// trie-order `ranges` and found `exits`, shared with every other
    /// state (of any lexeme) whose walk found the same. The keys of an
    /// object in forty variants that each admit other names ("any string
    /// but these five") read the same tokens after the quote: one set of
    /// 16 KB instead of forty, and a mask that meets them all writes it
    /// once (see `SeenSets`).
    ///
    /// Only sets kept as whole masks are shared: a table of small ones
    /// held 100,000 entries, and dropping them when it filled took 2 ms
    /// of one mask.
    pub(crate) fn walked_token_sets(
        &self,
        ranges: Vec<(u32, u32)>,
        exits: Vec<Exit>,
    ) -> Arc<TokenInfo> {
        let count: usize = ranges.iter().map(|r| (r.1 - r.0) as usize).sum();
        if !TokenList::is_dense(count, self.vocab()) {
            let inside = TokenList::from_trie_ranges(&ranges, self.vocab());
            return Arc::new(TokenInfo::new(inside, exits, self.vocab()));
        }
        let key = (ranges.into_boxed_slice(), exits.into_boxed_slice());
        if let Some(info) = self.walked.lock().get(&key) {
            return info.clone();
        }
        let inside = TokenList::from_trie_ranges(&key.0, self.vocab());
        let info = Arc::new(TokenInfo::new(inside, key.1.to_vec(), self.vocab()));
        let bytes = info.memory() + key.0.len() * 8 + std::mem::size_of_val(&*key.1);
        self.walked.lock().insert(key, info.clone(), bytes);
        info
    }

    /// The same vocabulary with other end-of-sequence ids, in an engine of
    /// its own with the same budget (nothing cached is shared: the token
    /// sets depend on which tokens end the sequence).
    pub fn with_eos(&self, eos: Vec<u32>) -> Result<Arc<Engine>> {
        let engine = Engine::new(self.vocab.with_eos(eos)?);
        engine.set_cache_budget(self.cache_stats().budget);
        Ok(engine)
    }

    /// Sets the byte budget of the caches (0 keeps nothing) and evicts
    /// down to it. Thread-safe.
    pub fn set_cache_budget(&self, bytes: usize) {
        let (_, free_exits, counted, walked) = shares(bytes);
        {
            let mut store = self.store.lock();
            store.whole_budget = bytes;
            store.evict_over_budget();
        }
        // Called by the host, not inside a compile: nothing waits.
        self.release_evicted();
        self.free_exits.set_limit(free_exits);
        self.walked.lock().set_limit(walked);
        if let Some(counts) = self.string_counts() {
            counts.infos.lock().set_limit(counted);
        }
    }

    /// What the caches hold, their bytes counted now.
    pub fn cache_stats(&self) -> CacheStats {
        let tables = self.free_exits.bytes()
            + self.walked.lock().bytes()
            + self.string_counts().map_or(0, |c| c.infos.lock().bytes());
        let store = self.store.lock();
        CacheStats {
            lexemes: store.lexemes.len(),
            parts: store.parts.len(),
            bytes: store.count_bytes() + tables,
            budget: store.whole_budget,
            evictions: store.evictions,
        }
    }

    /// The lexeme of `expr`, built on first use; an error when its
    /// automaton passes `limits`.
    pub fn lexeme(&self, expr: &Expr, limits: &DfaLimits) -> Result<Arc<Lexeme>> {
        match self.interned(expr, || build_lexeme(expr, limits, self))? {
            Some(l) => Ok(l),
            None => Err(too_large_error(expr, limits)),
        }
    }

    /// The lexeme of a counted JSON string ([`LexemeSource::counted_lexeme`]).
    pub fn counted_lexeme(
        &self,
        expr: &Expr,
        pattern: &Expr,
        min: u32,
        max: Option<u32>,
        limits: &DfaLimits,
    ) -> Result<Option<Arc<Lexeme>>> {
        self.interned(expr, || {
            let Some(any) = self.string_body() else {
                return Ok(None);
            };
            build_counted_lexeme(pattern, min, max, limits, &any.body, self)
        })
    }

    /// The lexeme that `dfa` (handed out by this engine, and perhaps
    /// evicted since) is kept with, or a new one with nothing learned.
    pub fn lexeme_of(&self, dfa: &Arc<LexemeDfa>) -> Arc<Lexeme> {
        let store = self.store.lock();
        match store.by_id.get(&dfa.id) {
            Some(l) if Arc::ptr_eq(l.dfa(), dfa) => l.clone(),
            _ => Arc::new(Lexeme::new(dfa.clone())),
        }
    }

    /// Drops what the cache's last eviction pass took out (see
    /// [`Evicted`]), outside the cache's lock; called as a grammar is
    /// dropped.
    pub(crate) fn release_evicted(&self) {
        let evicted = std::mem::take(&mut self.store.lock().evicted);
        drop(evicted);
    }

    /// The number of distinct lexemes kept.
    pub fn num_lexemes(&self) -> usize {
        self.store.lock().lexemes.len()
    }

    /// Lets `lexeme` share "any string"'s safe groups before its first
    /// walk, if it reads what "any string" reads (see
    /// [`Lexeme::share_body_groups`]); without a deadline, as a mask's
    /// work is bounded by its budget.
    #[cold]
    #[inline(never)]
    pub fn share_body_groups(&self, lexeme: &Lexeme) {
        let body = self.string_body().map(|b| &b.lexeme);
        lexeme
            .share_body_groups(body, &crate::limits::Deadline::none())
            .expect("no deadline");
    }

    /// See [`AnyString`]; `None` if its DFA exceeds the limits.
    pub fn string_body(&self) -> Option<&AnyString> {
        self.body
            .get_or_init(|| {
                let lexeme = self
                    .lexeme(&any_string_expr(), &DfaLimits::default())
                    .ok()?;
                let state = lexeme.dfa().next(lexeme.dfa().start, b'"');
                (state != DEAD).then(|| AnyString {
                    body: StringBody {
                        dfa: lexeme.dfa().clone(),
                        state,
                    },
                    lexeme,
                })
            })
            .as_ref()
    }

    /// See [`StringCounts`]; `None` if "any string" could not be built.
    pub fn string_counts(&self) -> Option<&StringCounts> {
        self.counts.get()?.as_ref()
    }

    /// Builds [`StringCounts`] unless built; `prepare` fills in its
    /// per-token counts and node buckets (walks of the vocabulary, given
    /// the rest).
    pub(crate) fn prepare_string_counts(
        &self,
        prepare: impl FnOnce(&StringCounts) -> (super::token_chars::TokenChars, Box<[Box<[u32]>]>),
    ) {
        self.counts.get_or_init(|| {
            let any = self.string_body()?;
            let (_, _, limit, _) = shares(self.store.lock().whole_budget);
            let mut counts = StringCounts::new(&any.body, limit);
            let (chars, nodes) = prepare(&counts);
            counts.chars = chars;
            counts.nodes_by_chars = nodes;
            Some(counts)
        });
    }

    /// The lexeme interned under `expr`, or the one `build` makes (`None`:
    /// none), interned unless another thread interned one meanwhile.
    fn interned(
        &self,
        expr: &Expr,
        build: impl FnOnce() -> Result<Option<LexemeDfa>>,
    ) -> Result<Option<Arc<Lexeme>>> {
        {
            let store = &mut *self.store.lock();
            if let Some(l) = lookup(&mut store.lexemes, &mut store.clock, expr) {
                store.recount_now_and_then();
                return Ok(Some(l));
            }
        }
        let Some(built) = build()? else {
            return Ok(None);
        };
        // A set of strings is one expression per language (its values
        // sorted, no two spellings of one value): no other set shares its
        // automaton, and a server keeps hundreds whose keys collide.
        let language = match expr {
            Expr::JsonStrings(_) => None,
            _ => built.language_key(),
        };
        let store = &mut *self.store.lock();
        if let Some(l) = lookup(&mut store.lexemes, &mut store.clock, expr) {
            // Built by another thread meanwhile.
            return Ok(Some(l));
        }
        // The same language under another expression: its automaton, and
        // what masks learned about it, serve this one too (counted once
        // per expression that holds it: the budget errs toward evicting).
        let same = language.and_then(|key| store.same_language(key, &built));
        let lexeme = match same {
            Some(l) => l,
            None => Arc::new(Lexeme::new(Arc::new(built))),
        };
        if let Some(entry) = store.admit(expr, &lexeme) {
            store.by_id.insert(lexeme.dfa().id, lexeme.clone());
            if let Some(key) = language {
                let ids = store.by_language.entry(key).or_default();
                if !ids.contains(&lexeme.dfa().id) {
                    ids.push(lexeme.dfa().id);
                }
            }
            let bytes = entry.bytes();
            store.lexemes.insert(expr.clone(), entry);
            store.admitted(bytes);
        }
        Ok(Some(lexeme))
    }
}

impl LexemeSource for Engine {
    fn lexeme(&self, expr: &Expr, limits: &DfaLimits) -> Result<Option<Arc<LexemeDfa>>> {
        Ok(self
            .interned(expr, || build_lexeme(expr, limits, self))?
            .map(|l| l.dfa().clone()))
    }

    fn counted_lexeme(
        &self,
        expr: &Expr,
        pattern: &Expr,
        min: u32,
        max: Option<u32>,
        limits: &DfaLimits,
    ) -> Result<Option<Arc<LexemeDfa>>> {
        Ok(Engine::counted_lexeme(self, expr, pattern, min, max, limits)?.map(|l| l.dfa().clone()))
    }

    /// The table of a regular part of a boolean expression, built once
    /// (while the budget keeps it).
    fn part(&self, expr: &Expr, limits: &DfaLimits) -> Result<Arc<Table>> {
        {
            let store = &mut *self.store.lock();
            if let Some(t) = lookup(&mut store.parts, &mut store.clock, expr) {
                store.recount_now_and_then();
                return Ok(t);
            }
        }
        let t = Arc::new(build_part(expr, limits, self)?);
        let store = &mut *self.store.lock();
        if let Some(entry) = store.admit(expr, &t) {
            let bytes = entry.bytes();
            store.parts.insert(expr.clone(), entry);
            store.admitted(bytes);
        }
        Ok(t)
    }
}

/// The cached lexemes and parts, with their recency.
struct Store {
    lexemes: FastMap<Expr, Cached<Lexeme>>,
    /// The lexemes again by their automaton's id (see
    /// [`Engine::lexeme_of`]); evicted with them.
    by_id: FastMap<u64, Arc<Lexeme>>,
    /// The ids of the kept lexemes by [`LexemeDfa::language_key`]
    /// (several only where keys collide); evicted with them.
    by_language: FastMap<u64, Vec<u64>>,
    /// The regular parts of intersections and complements (the JSON string
    /// body, "any text"), which many lexemes share.
    parts: FastMap<Expr, Cached<Table>>,
    /// Stamps uses: an entry's `last_used` is the clock at its last use.
    clock: u64,
    /// The whole budget; the lexemes and parts get their share of it
    /// ([`Store::budget`]).
    whole_budget: usize,
    evictions: u64,
    /// The bytes of the entries at their last count, plus those admitted
    /// since: an insertion counts every entry again only once this passes
    /// the budget (counting them at every insertion cost time in
    /// proportion to the cache: 3.8% of the lexeme builds of the slowest
    /// compiles).
    counted: usize,
    /// What the last eviction pass took out, dropped when a grammar is
    /// next dropped ([`Engine::release_evicted`]) or at the next pass.
    evicted: Evicted,
}

/// Entries an eviction pass took out of the cache, not dropped yet.
/// Dropping them (mostly what their lexemes learned: token sets, subtree
/// walks) is most of a pass's cost, 0.9-3.3 ms on MaskBench, and a pass
/// runs inside whichever compile crosses the budget: a large one, whose
/// time to first mask it lengthened. Dropping a grammar, the host's
/// clean-up, pays instead. At most one pass's worth (what brought the
/// entries down to seven eighths of the budget) waits, so a host that
/// frees no grammar keeps no more.
#[derive(Default)]
struct Evicted {
    lexemes: Vec<(Expr, Cached<Lexeme>)>,
    by_id: Vec<Arc<Lexeme>>,
    parts: Vec<(Expr, Cached<Table>)>,
}

struct Cached<V> {
    value: Arc<V>,
    /// The key's heap bytes (an expression can be large: an enum).
    key_bytes: usize,
    last_used: u64,
}

/// Heap bytes of a cached value, as its budget counts them.
trait CacheBytes {
    fn cache_bytes(&self) -> usize;
}

impl CacheBytes for Lexeme {
    fn cache_bytes(&self) -> usize {
        self.memory()
    }
}

impl CacheBytes for Table {
    fn cache_bytes(&self) -> usize {
        self.trans.len() * 4 + self.is_final.len() + 256
    }
}

impl<V: CacheBytes> Cached<V> {
    fn bytes(&self) -> usize {
        self.key_bytes + self.value.cache_bytes() + 64
    }
}

/// Looks `key` up in `map`, stamping it as used.
fn lookup<V>(map: &mut FastMap<Expr, Cached<V>>, clock: &mut u64, key: &Expr) -> Option<Arc<V>> {
    let e = map.get_mut(key)?;
    *clock += 1;
    e.last_used = *clock;
    Some(e.value.clone())
}

/// After a panic under the lock: every entry forgotten (grammars keep the
/// lexemes they hold, and [`Engine::lexeme_of`] makes new ones for them);
/// the budget and the counts stay.
impl Recover for Store {
    fn recover(&mut self) {
        *self = Store {
            clock: self.clock,
            evictions: self.evictions,
            ..Store::new(self.whole_budget)
        };
    }
}

impl Store {
    fn new(whole_budget: usize) -> Store {
        Store {
            lexemes: FastMap::default(),
            by_id: FastMap::default(),
            by_language: FastMap::default(),
            parts: FastMap::default(),
            clock: 0,
            whole_budget,
            evictions: 0,
            counted: 0,
            evicted: Evicted::default(),
        }
    }

    /// Bytes of every entry, counted now.
    fn count_bytes(&self) -> usize {
        let lexemes: usize = self.lexemes.values().map(Cached::bytes).sum();
        let parts: usize = self.parts.values().map(Cached::bytes).sum();
        lexemes + parts
    }

    /// A new entry for `value`, unless it alone is over the budget (then
    /// it is used once and not kept).
    fn admit<V: CacheBytes>(&mut self, key: &Expr, value: &Arc<V>) -> Option<Cached<V>> {
        let key_bytes = key.size() * 48;
        if key_bytes + value.cache_bytes() > self.budget() {
            return None;
        }
        self.clock += 1;
        Some(Cached {
            value: value.clone(),
            key_bytes,
            last_used: self.clock,
        })
    }

    /// An entry of `bytes` went in: evicts past the budget when the
    /// entries, counted again, are over it.
    fn admitted(&mut self, bytes: usize) {
        self.counted += bytes;
        if self.counted > self.budget() {
            self.evict_over_budget();
        }
    }

    /// Every so many uses the entries are counted again (what masks
    /// learned in them grows without an insertion) and evicted past the
    /// budget.
    fn recount_now_and_then(&mut self) {
        if self.clock.is_multiple_of(256) {
            self.evict_over_budget();
        }
    }

    /// The lexemes' and parts' share of the budget (see [`shares`]).
    fn budget(&self) -> usize {
        shares(self.whole_budget).0
    }

    /// A kept lexeme whose automaton accepts what `dfa` does (its
    /// language key is `key`). Where keys collide, the refined keys are
    /// compared before the automata are (see
    /// [`LexemeDfa::refined_language_key`]).
    fn same_language(&self, key: u64, dfa: &LexemeDfa) -> Option<Arc<Lexeme>> {
        let ids = self.by_language.get(&key)?;
        let mut refined = None;
        ids.iter()
            .filter_map(|id| self.by_id.get(id))
            .find(|l| {
                let ours = *refined.get_or_insert_with(|| dfa.refined_language_key());
                ours == l.refined_language_key() && l.dfa().same_language(dfa)
            })
            .cloned()
    }

    /// Drops the least recently used entries until the rest fit in seven
    /// eighths of the budget, so that eviction (a pass over every entry)
    /// runs once per many insertions rather than at each.
    fn evict_over_budget(&mut self) {
        let mut bytes = self.count_bytes();
        self.counted = bytes;
        let budget = self.budget();
        if bytes <= budget {
            return;
        }
        let target = budget / 8 * 7;
        let mut by_age: Vec<(u64, usize)> = self
            .lexemes
            .values()
            .map(|e| (e.last_used, e.bytes()))
            .chain(self.parts.values().map(|e| (e.last_used, e.bytes())))
            .collect();
        by_age.sort_unstable();
        // Stamps are unique: evicting every entry stamped up to `cutoff`
        // is evicting exactly the oldest ones counted here.
        let mut cutoff = 0;
        let mut evicted = 0u64;
        for (stamp, entry_bytes) in by_age {
            if bytes <= target {
                break;
            }
            bytes -= entry_bytes;
            cutoff = stamp;
            evicted += 1;
        }
        // The previous pass's entries, if no grammar was dropped since,
        // are dropped here after all.
        let previous = std::mem::take(&mut self.evicted);
        let out = &mut self.evicted;
        out.lexemes
            .extend(self.lexemes.extract_if(|_, e| e.last_used <= cutoff));
        let kept: FastSet<u64> = self.lexemes.values().map(|e| e.value.dfa().id).collect();
        out.by_id.extend(
            self.by_id
                .extract_if(|id, _| !kept.contains(id))
                .map(|(_, lexeme)| lexeme),
        );
        self.by_language.retain(|_, ids| {
            ids.retain(|id| kept.contains(id));
            !ids.is_empty()
        });
        out.parts
            .extend(self.parts.extract_if(|_, e| e.last_used <= cutoff));
        self.evictions += evicted;
        self.counted = bytes;
        drop(previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{compile, CompileOptions, Kind};

    /// An eviction pass, inside the compile that overflows the cache,
    /// sets aside what it takes out: it is dropped when a grammar is next
    /// dropped, or by the next pass, never kept longer.
    #[test]
    fn evicted_lexemes_wait_for_a_grammar_to_be_dropped() {
        let tokens: Vec<Vec<u8>> = ["\"", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
        let flags = vec![0; tokens.len()];
        let engine = Engine::new(Vocab::new(tokens, flags, Vec::new()).unwrap());
        engine.set_cache_budget(64 << 10);
        let limits = DfaLimits::default();
        let mut built = Vec::new();
        // Lexemes until `passes` eviction passes have run.
        let build_until = |passes: usize, built: &mut Vec<std::sync::Weak<Lexeme>>| {
            let mut seen = 0;
            let mut evictions = engine.cache_stats().evictions;
            while seen < passes {
                let expr = Expr::literal(&format!("\"{:06}\"", built.len()));
                built.push(Arc::downgrade(&engine.lexeme(&expr, &limits).unwrap()));
                let now = engine.cache_stats().evictions;
                seen += usize::from(now > evictions);
                evictions = now;
                assert!(built.len() < 100_000, "no eviction");
            }
        };
        let alive = |built: &[std::sync::Weak<Lexeme>]| {
            built.iter().filter(|w| w.strong_count() > 0).count()
        };
        build_until(1, &mut built);
        assert!(built[0].upgrade().is_some(), "set aside, not dropped");
        assert!(alive(&built) > engine.num_lexemes());
        build_until(1, &mut built);
        assert!(built[0].upgrade().is_none(), "dropped by the next pass");
        assert!(alive(&built) > engine.num_lexemes());
        let options = CompileOptions {
            kind: Kind::Gbnf,
            ..Default::default()
        };
        drop(compile(&engine, b"root ::= \"\\\"1\\\"\"", &options).unwrap());
        // Only what the cache keeps is left (besides the grammar's own
        // lexemes, which it keeps too).
        assert!(
            alive(&built) <= engine.num_lexemes(),
            "dropped with the grammar"
        );
    }
}
