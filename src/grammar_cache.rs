//! A cache of compiled grammars and triggers, for hosts that compile the
//! same sources again and again (llama-server builds a sampler, and so a
//! grammar, for every request; tool-call grammars repeat request after
//! request).
//!
//! Entries are keyed by everything that decides the result: the vocabulary
//! (its identity: an entry keeps it alive), the source text, the kind,
//! flags, whitespace bound and layout, start rule and JSON Schema
//! documents (`json_documents`) for grammars, the list for
//! triggers, and the mask budget the grammar keeps. Compile limits are
//! not part of the key: a grammar that compiled within one limit is the
//! same grammar under another. Failures are not cached.
//!
//! A hit must cost microseconds even for a 400 KB tool-call grammar, so
//! the key holds a 128-bit XXH3 digest of the source rather than a copy
//! (hashing and copying the text took 100 us), and the entry keeps the
//! source (and the documents) to compare on a hit: XXH3 is not collision-resistant, and a
//! crafted collision must not hand out another request's grammar. A
//! colliding source compiles without being cached.
//!
//! The cache holds at most a byte budget of entries, measured by
//! [`CompiledGrammar::memory`] and [`Triggers::memory`] when they are added
//! (token sets computed later for a grammar are not counted), and evicts
//! the least recently used entries past it. An entry larger than the whole
//! budget is returned without being kept.

use std::sync::Arc;

use crate::error::Result;
use crate::source::{self, CompileOptions, Kind};
use crate::tokensets::CompiledGrammar;
use crate::tokensets::Engine;
use crate::trigger::{TriggerSpec, Triggers};
use crate::util::hash::FastMap;
use crate::util::sync::{CacheMutex, Recover};
#[cfg(test)]
use crate::vocab::Vocab;

/// The default budget: 256 MiB.
pub const DEFAULT_BUDGET: usize = 256 << 20;

#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Grammar {
        /// The engine's address (the entry keeps the engine alive, so no
        /// other engine can take it).
        engine: usize,
        kind: u8,
        flags: u32,
        ws: Option<u32>,
        layout: Option<crate::json_schema::layout::FixedLayout>,
        root: Option<String>,
        /// Kept by the grammar, so part of what it is.
        max_mask_steps: u64,
        source_digest: u128,
        source_len: usize,
        /// Digest and length of `json_documents` (compared on a hit too).
        documents_digest: Option<u128>,
        documents_len: usize,
    },
    Triggers {
        engine: usize,
        specs: Vec<TriggerSpec>,
    },
}

#[derive(Clone)]
enum Value {
    Grammar(Arc<CompiledGrammar>),
    Triggers(Arc<Triggers>),
}

struct Entry {
    value: Value,
    bytes: usize,
    last_used: u64,
    /// A grammar's source (compared on a hit, the key holding only its
    /// digest); empty for triggers, whose key is their whole list.
    source: Box<[u8]>,
    /// A JSON Schema grammar's `json_documents` (compared on a hit).
    documents: Option<Arc<str>>,
}

/// What the cache did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub hits: u64,
    pub misses: u64,
    /// Entries dropped to stay within the budget.
    pub evictions: u64,
    pub entries: usize,
    pub bytes: usize,
    pub budget: usize,
}

struct State {
    map: FastMap<Key, Entry>,
    clock: u64,
    stats: Stats,
}

/// After a panic under the lock: the entries forgotten, the budget and
/// the counts of hits, misses and evictions kept.
impl Recover for State {
    fn recover(&mut self) {
        self.map.clear();
        self.stats.entries = 0;
        self.stats.bytes = 0;
    }
}

/// Compiled grammars and triggers by what they were compiled from.
pub struct GrammarCache {
    state: CacheMutex<State>,
}

impl GrammarCache {
    /// A cache that keeps at most `budget` bytes of entries.
    pub fn new(budget: usize) -> GrammarCache {
        GrammarCache {
            state: CacheMutex::new(
                "grammar cache",
                State {
                    map: FastMap::default(),
                    clock: 0,
                    stats: Stats {
                        budget,
                        ..Stats::default()
                    },
                },
            ),
        }
    }

    /// The grammar of `source` for `engine`'s vocabulary, compiled on a miss.
    pub fn grammar(
        &self,
        engine: &Arc<Engine>,
        source: &[u8],
        options: &CompileOptions,
    ) -> Result<Arc<CompiledGrammar>> {
        let key = Key::Grammar {
            engine: Arc::as_ptr(engine) as usize,
            kind: match options.kind {
                Kind::Gbnf => 0,
                Kind::JsonSchema => 1,
                Kind::Regex => 2,
                Kind::AnyJson => 3,
            },
            flags: options.flags,
            ws: options.json_max_whitespace,
            layout: options.json_layout.clone(),
            root: options.root.clone(),
            max_mask_steps: options.max_mask_steps,
            source_digest: xxhash_rust::xxh3::xxh3_128(source),
            source_len: source.len(),
            documents_digest: options
                .json_documents
                .as_deref()
                .map(|d| xxhash_rust::xxh3::xxh3_128(d.as_bytes())),
            documents_len: options.json_documents.as_deref().map_or(0, str::len),
        };
        let value = self.get_or(key, source, options.json_documents.as_ref(), || {
            let g = source::compile(engine, source, options)?;
            let bytes = g.memory();
            Ok((Value::Grammar(g), bytes))
        })?;
        match value {
            Value::Grammar(g) => Ok(g),
            Value::Triggers(_) => unreachable!("grammar keys hold grammars"),
        }
    }

    /// The triggers of `specs` for `engine`'s vocabulary, compiled on a miss (cached
    /// triggers keep the fire sets their matchers computed).
    pub fn triggers(&self, engine: &Arc<Engine>, specs: &[TriggerSpec]) -> Result<Arc<Triggers>> {
        let key = Key::Triggers {
            engine: Arc::as_ptr(engine) as usize,
            specs: specs.to_vec(),
        };
        let value = self.get_or(key, &[], None, || {
            let t = Triggers::new(engine, specs)?;
            let bytes = t.memory();
            Ok((Value::Triggers(Arc::new(t)), bytes))
        })?;
        match value {
            Value::Triggers(t) => Ok(t),
            Value::Grammar(_) => unreachable!("trigger keys hold triggers"),
        }
    }

    /// The entry of `key` (whose grammar was compiled from `source` and
    /// `documents`), built by `make` on a miss (without the lock held: two
    /// threads missing the same key both build it).
    fn get_or(
        &self,
        key: Key,
        source: &[u8],
        documents: Option<&Arc<str>>,
        make: impl FnOnce() -> Result<(Value, usize)>,
    ) -> Result<Value> {
        let collision = {
            let mut s = self.state.lock();
            s.clock += 1;
            let now = s.clock;
            let found = s.map.get_mut(&key).map(|e| {
                let same =
                    *e.source == *source && e.documents.as_deref() == documents.map(|d| &**d);
                if same {
                    e.last_used = now;
                }
                (same, e.value.clone())
            });
            match found {
                Some((true, v)) => {
                    s.stats.hits += 1;
                    return Ok(v);
                }
                found => {
                    s.stats.misses += 1;
                    found.is_some()
                }
            }
        };
        let (value, bytes) = make()?;
        let mut s = self.state.lock();
        if bytes <= s.stats.budget && !collision {
            s.clock += 1;
            let last_used = s.clock;
            let entry = Entry {
                value: value.clone(),
                bytes,
                last_used,
                source: source.into(),
                documents: documents.cloned(),
            };
            if let Some(old) = s.map.insert(key, entry) {
                s.stats.bytes -= old.bytes;
            }
            s.stats.bytes += bytes;
            let budget = s.stats.budget;
            s.evict_to(budget);
        }
        Ok(value)
    }

    /// Changes the budget, evicting what no longer fits.
    pub fn set_budget(&self, budget: usize) {
        let mut s = self.state.lock();
        s.stats.budget = budget;
        s.evict_to(budget);
    }

    /// Drops every entry (grammars in use stay alive with their users).
    pub fn clear(&self) {
        let mut s = self.state.lock();
        s.map.clear();
        s.stats.bytes = 0;
    }

    /// Drops the entries of one vocabulary.
    pub fn forget_vocab(&self, engine: &Arc<Engine>) {
        let id = Arc::as_ptr(engine) as usize;
        let mut s = self.state.lock();
        let mut freed = 0;
        s.map.retain(|k, e| {
            let v = match k {
                Key::Grammar { engine, .. } | Key::Triggers { engine, .. } => *engine,
            };
            let keep = v != id;
            if !keep {
                freed += e.bytes;
            }
            keep
        });
        s.stats.bytes -= freed;
    }

    pub fn stats(&self) -> Stats {
        let s = self.state.lock();
        Stats {
            entries: s.map.len(),
            ..s.stats
        }
    }
}

impl State {
    /// Evicts least recently used entries until at most `budget` bytes
    /// are kept.
    fn evict_to(&mut self, budget: usize) {
        while self.stats.bytes > budget {
            let oldest = self
                .map
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
                .expect("bytes are counted from entries");
            let e = self.map.remove(&oldest).expect("just found");
            self.stats.bytes -= e.bytes;
            self.stats.evictions += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Arc<Engine> {
        let tokens = ["a", "b", "ab", "c", "</s>"]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
        Engine::new(Vocab::new(tokens, vec![0, 0, 0, 0, 1], vec![4]).unwrap())
    }

    #[test]
    fn hits_misses_and_lru_eviction() {
        let v = vocab();
        let o = CompileOptions::default();
        let cache = GrammarCache::new(DEFAULT_BUDGET);
        let g1 = cache.grammar(&v, b"root ::= \"a\"", &o).unwrap();
        let g2 = cache.grammar(&v, b"root ::= \"a\"", &o).unwrap();
        assert!(Arc::ptr_eq(&g1, &g2));
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
        assert_eq!(s.bytes, g1.memory());
        // Another start rule or source is another entry.
        let mut other = o.clone();
        other.root = Some("x".into());
        let gx = cache
            .grammar(&v, b"root ::= \"a\"\nx ::= \"b\"", &other)
            .unwrap();
        let gb = cache.grammar(&v, b"root ::= \"b\"", &o).unwrap();
        assert_eq!(cache.stats().entries, 3);
        assert_eq!(cache.stats().bytes, g1.memory() + gx.memory() + gb.memory());
        // Room for two: the least recently used goes.
        let _ = cache.grammar(&v, b"root ::= \"a\"", &o).unwrap();
        cache.set_budget(g1.memory() + gb.memory());
        let s = cache.stats();
        assert_eq!((s.entries, s.evictions), (2, 1));
        let g3 = cache.grammar(&v, b"root ::= \"a\"", &o).unwrap();
        assert!(Arc::ptr_eq(&g1, &g3), "the most recently used stayed");
        let gb2 = cache.grammar(&v, b"root ::= \"b\"", &o).unwrap();
        assert!(Arc::ptr_eq(&gb, &gb2));
        // Failures are not cached; a budget of 0 keeps nothing.
        assert!(cache.grammar(&v, b"root ::= (", &o).is_err());
        cache.set_budget(0);
        assert_eq!(cache.stats().entries, 0);
        assert!(cache.grammar(&v, b"root ::= \"a\"", &o).is_ok());
        assert_eq!(cache.stats().entries, 0);
    }

    /// Two sources under one digest (forced here: XXH3 collisions can be
    /// crafted) get their own grammars, and the cached one stays.
    #[test]
    fn a_digest_collision_is_not_a_hit() {
        let v = vocab();
        let o = CompileOptions::default();
        let cache = GrammarCache::new(DEFAULT_BUDGET);
        let ga = cache.grammar(&v, b"root ::= \"a\"", &o).unwrap();
        {
            // Give the entry of "a" the key "b" will look up.
            let mut s = cache.state.lock();
            let (key, entry) = s.map.drain().next().unwrap();
            let Key::Grammar {
                engine,
                kind,
                flags,
                ws,
                layout,
                root,
                max_mask_steps,
                documents_digest,
                documents_len,
                ..
            } = key
            else {
                unreachable!()
            };
            let b = b"root ::= \"b\"";
            let forged = Key::Grammar {
                engine,
                kind,
                flags,
                ws,
                layout,
                root,
                max_mask_steps,
                source_digest: xxhash_rust::xxh3::xxh3_128(b),
                source_len: b.len(),
                documents_digest,
                documents_len,
            };
            s.map.insert(forged, entry);
        }
        let gb = cache.grammar(&v, b"root ::= \"b\"", &o).unwrap();
        assert!(!Arc::ptr_eq(&ga, &gb));
        let mut m = crate::Matcher::new(gb.clone());
        assert!(m.accept_bytes(b"b").is_ok(), "the grammar of b");
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries), (0, 2, 1));
        let gb2 = cache.grammar(&v, b"root ::= \"b\"", &o).unwrap();
        assert!(!Arc::ptr_eq(&gb, &gb2), "a colliding source is not cached");
    }

    /// Two compiles of one schema with different `json_documents` never
    /// share a grammar.
    #[test]
    fn documents_are_part_of_the_key() {
        let v = vocab();
        let cache = GrammarCache::new(DEFAULT_BUDGET);
        let schema = br#"{"$ref": "http://x.test/a.json"}"#;
        let with = |d: Option<&str>| CompileOptions {
            kind: Kind::JsonSchema,
            json_documents: d.map(Arc::from),
            ..Default::default()
        };
        let one = with(Some(r#"{"http://x.test/a.json": {"const": 1}}"#));
        let two = with(Some(r#"{"http://x.test/a.json": {"const": 2}}"#));
        let g1 = cache.grammar(&v, schema, &one).unwrap();
        let g2 = cache.grammar(&v, schema, &two).unwrap();
        assert!(!Arc::ptr_eq(&g1, &g2));
        for (g, yes, no) in [(&g1, b"1", b"2"), (&g2, b"2", b"1")] {
            let mut m = crate::Matcher::new(g.clone());
            assert!(m.accept_bytes(yes).is_ok() && m.is_accepting());
            let mut m = crate::Matcher::new(g.clone());
            assert!(m.accept_bytes(no).is_err());
        }
        assert!(Arc::ptr_eq(&g1, &cache.grammar(&v, schema, &one).unwrap()));
        let e = match cache.grammar(&v, schema, &with(None)) {
            Ok(_) => panic!("compiled without the document"),
            Err(e) => e,
        };
        assert!(e.message().contains("points outside the document"), "{e}");
        assert_eq!(cache.stats().entries, 2);
    }

    #[test]
    fn triggers_are_cached_by_their_list() {
        let v = vocab();
        let cache = GrammarCache::new(DEFAULT_BUDGET);
        let specs = [TriggerSpec::Word("ab".into()), TriggerSpec::Token(3)];
        let t1 = cache.triggers(&v, &specs).unwrap();
        let t2 = cache.triggers(&v, &specs).unwrap();
        assert!(Arc::ptr_eq(&t1, &t2));
        let t3 = cache.triggers(&v, &specs[..1]).unwrap();
        assert!(!Arc::ptr_eq(&t1, &t3));
        cache.forget_vocab(&v);
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.stats().bytes, 0);
    }
}
