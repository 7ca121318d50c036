//! Position-independent names for parser contexts, and the grammar-wide
//! cache of exit tokens keyed by them.
//!
//! An Earley item `(state, origin)` leaves its rule into the callers found
//! in chart set `origin`; what can follow is fully described by those
//! callers' return states and, recursively, their own callers. Interning
//! that structure gives every distinct context a small id, equal for equal
//! contexts wherever and in whichever matcher they occur, so the tokens
//! that finish a rule mid-token can be cached per `(state, context)` for
//! the whole grammar: a new matcher on the same schema reuses them.

use std::collections::HashMap;
use std::sync::Arc;

use super::cleared::ClearedWhenFull;
use crate::tokensets::{ExitTokens, FreeExits, TokenInfo};
use crate::util::sync::{CacheMutex, Recover};

/// The context of the start rule: the end of the output.
pub const ROOT_CTX: u32 = u32::MAX - 1;
/// A context that is not interned (cyclic, or the table is full): results
/// for it are not cached.
pub const NO_CTX: u32 = u32::MAX;

/// Most contexts interned per grammar.
const MAX_CONTEXTS: usize = 1 << 20;
/// Most bytes of exit token sets kept per grammar, and of their
/// context-free parts (each cleared past this).
const MAX_EXIT_BYTES: usize = 16 << 20;

type Map<K, V> = crate::util::hash::FastMap<K, V>;

struct Inner {
    /// Sorted `(return state, caller context)` lists -> id.
    ids: HashMap<Box<[(u32, u32)]>, u32>,
    /// `(state, context)` -> exit tokens allowed there.
    exits: Map<(u32, u32), Arc<ExitTokens>>,
    /// Sorted `(state, context)` lists of lexeme items with the same token
    /// sets -> the exit tokens allowed in one of them at least (see
    /// `Matcher::fill_mask`).
    group_exits: Map<Box<[(u32, u32)]>, Arc<ExitTokens>>,
    /// Bytes of the exit tokens kept in both (the free parts not counted).
    exit_bytes: usize,
    /// `(state, lexeme items that read next)` -> the context-free part of
    /// the exit tokens (see `super::free_exits`), for parser-rule states.
    free: FreeMap<(u32, Box<[u32]>)>,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            ids: HashMap::default(),
            exits: Map::default(),
            group_exits: Map::default(),
            exit_bytes: 0,
            free: FreeMap::new(MAX_EXIT_BYTES),
        }
    }
}

/// After a panic under the lock: the exits forgotten, the context ids
/// kept (matchers hold them; an interning is one insertion, never half
/// done).
impl Recover for Inner {
    fn recover(&mut self) {
        self.exits.clear();
        self.group_exits.clear();
        self.exit_bytes = 0;
        self.free.recover();
    }
}

impl Inner {
    /// Counts `bytes` more of exit tokens, clearing them all first if
    /// they would pass [`MAX_EXIT_BYTES`].
    fn make_room(&mut self, bytes: usize) {
        if self.exit_bytes + bytes > MAX_EXIT_BYTES {
            self.exits.clear();
            self.group_exits.clear();
            self.exit_bytes = 0;
        }
        self.exit_bytes += bytes;
    }
}

/// Context-free exit tokens by key.
type FreeMap<K> = ClearedWhenFull<K, Arc<FreeExits>>;

/// The bytes a free-exit entry holds.
fn free_bytes(f: &FreeExits) -> usize {
    f.tokens.memory() + 8 * f.syncs.len() + 8 * f.whole.len()
}

/// The grammar-wide table (behind a lock: grammars are shared by threads).
pub struct Contexts {
    inner: CacheMutex<Inner>,
}

impl Default for Contexts {
    fn default() -> Self {
        Contexts {
            inner: CacheMutex::new("grammar contexts", Inner::default()),
        }
    }
}

impl Contexts {
    /// The id of the context made of these callers.
    pub fn intern(&self, mut callers: Vec<(u32, u32)>) -> u32 {
        callers.sort_unstable();
        callers.dedup();
        let mut inner = self.inner.lock();
        if let Some(&id) = inner.ids.get(callers.as_slice()) {
            return id;
        }
        if inner.ids.len() >= MAX_CONTEXTS {
            return NO_CTX;
        }
        let id = inner.ids.len() as u32;
        inner.ids.insert(callers.into_boxed_slice(), id);
        id
    }

    pub fn exits(&self, state: u32, ctx: u32) -> Option<Arc<ExitTokens>> {
        self.inner.lock().exits.get(&(state, ctx)).cloned()
    }

    pub fn store_exits(&self, state: u32, ctx: u32, tokens: Arc<ExitTokens>) {
        let mut inner = self.inner.lock();
        inner.make_room(tokens.memory());
        inner.exits.insert((state, ctx), tokens);
    }

    /// The exit tokens of the lexeme items `(state, context)` of `group`
    /// (sorted) together, if kept.
    pub fn group_exits(&self, group: &[(u32, u32)]) -> Option<Arc<ExitTokens>> {
        self.inner.lock().group_exits.get(group).cloned()
    }

    pub fn store_group_exits(&self, group: Box<[(u32, u32)]>, tokens: Arc<ExitTokens>) {
        let mut inner = self.inner.lock();
        inner.make_room(tokens.memory() + group.len() * 8);
        inner.group_exits.insert(group, tokens);
    }

    /// The context-free exit tokens of `state` with lexeme items `next`
    /// reading next (sorted states), computed by `compute` on first use.
    pub fn free_exits(
        &self,
        state: u32,
        next: &[u32],
        compute: impl FnOnce() -> FreeExits,
    ) -> Arc<FreeExits> {
        let key = (state, next.to_vec().into_boxed_slice());
        if let Some(f) = self.inner.lock().free.get(&key) {
            return f.clone();
        }
        let f = Arc::new(compute());
        self.inner
            .lock()
            .free
            .insert(key, f.clone(), free_bytes(&f));
        f
    }

    /// Approximate heap bytes.
    pub fn memory(&self) -> usize {
        let inner = self.inner.lock();
        let ids: usize = inner.ids.keys().map(|k| k.len() * 8 + 32).sum();
        ids + (inner.exits.len() + inner.group_exits.len()) * 40
            + inner.exit_bytes
            + inner.free.bytes()
    }
}

/// The context-free exit tokens of lexeme states (see
/// `super::free_exits`), per vocabulary: they depend only on the state's
/// token sets and on the lexemes that read next, which grammars share.
pub struct SharedFreeExits {
    /// Keyed by the token sets and the `(lexeme id, state)` pairs that
    /// read next; a key keeps its token sets alive, so they count too.
    inner: CacheMutex<FreeMap<SharedKey>>,
}

impl SharedFreeExits {
    /// At most `limit` bytes.
    pub fn new(limit: usize) -> SharedFreeExits {
        SharedFreeExits {
            inner: CacheMutex::new("engine free exits", FreeMap::new(limit)),
        }
    }

    /// Sets the byte limit.
    pub fn set_limit(&self, limit: usize) {
        self.inner.lock().set_limit(limit);
    }

    /// The bytes kept.
    pub fn bytes(&self) -> usize {
        self.inner.lock().bytes()
    }
}

/// A lexeme state's token sets, and the lexemes (ids and states) after it.
type SharedKey = (ByAddress, Box<[(u64, u32)]>);

/// Token sets compared by address (kept alive by the key, so that no other
/// sets can take their address).
struct ByAddress(Arc<TokenInfo>);

impl PartialEq for ByAddress {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ByAddress {}

impl std::hash::Hash for ByAddress {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.0).hash(state)
    }
}

impl SharedFreeExits {
    /// The free exits of the state with token sets `info`, lexemes `next`
    /// reading after it, computed by `compute` on first use.
    pub fn get(
        &self,
        info: &Arc<TokenInfo>,
        next: &[(u64, u32)],
        compute: impl FnOnce() -> FreeExits,
    ) -> Arc<FreeExits> {
        let key = (ByAddress(info.clone()), next.to_vec().into_boxed_slice());
        if let Some(f) = self.inner.lock().get(&key) {
            return f.clone();
        }
        let f = Arc::new(compute());
        let bytes = free_bytes(&f) + info.memory();
        self.inner.lock().insert(key, f.clone(), bytes);
        f
    }
}
