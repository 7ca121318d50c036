//! A cache that is cleared when full ([`ClearedWhenFull`]): for tables
//! whose entries are cheap to recompute and have no recency worth
//! tracking (the free exits, counted-string token sets), bounded in bytes
//! so that they fit in the engine's budget.

use std::hash::Hash;

use crate::util::hash::FastMap;
use crate::util::sync::Recover;

/// A map of at most `limit` bytes (as its callers count them): an entry
/// that would pass the limit clears the map first.
pub struct ClearedWhenFull<K, V> {
    map: FastMap<K, V>,
    bytes: usize,
    limit: usize,
}

impl<K: Hash + Eq, V> ClearedWhenFull<K, V> {
    pub fn new(limit: usize) -> Self {
        ClearedWhenFull {
            map: FastMap::default(),
            bytes: 0,
            limit,
        }
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// Keeps `value` (of `bytes` bytes) under `key`, clearing the map first
    /// if it would pass the limit; a value larger than the limit alone is
    /// not kept.
    pub fn insert(&mut self, key: K, value: V, bytes: usize) {
        if bytes > self.limit {
            return;
        }
        if self.bytes + bytes > self.limit {
            self.map.clear();
            self.bytes = 0;
        }
        self.bytes += bytes;
        self.map.insert(key, value);
    }

    /// Sets the limit, clearing the map if it holds more.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
        if self.bytes > limit {
            self.map.clear();
            self.bytes = 0;
        }
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.map.clear();
        self.bytes = 0;
    }

    /// The bytes of the entries kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl<K, V> Recover for ClearedWhenFull<K, V> {
    fn recover(&mut self) {
        self.map.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clears_when_full_and_skips_what_never_fits() {
        let mut t = ClearedWhenFull::new(10);
        t.insert(1, "a", 4);
        t.insert(2, "b", 4);
        assert_eq!((t.get(&1), t.bytes()), (Some(&"a"), 8));
        // 8 + 4 > 10: cleared, then kept.
        t.insert(3, "c", 4);
        assert_eq!((t.get(&1), t.get(&3), t.bytes()), (None, Some(&"c"), 4));
        // Larger than the limit alone: not kept, nothing cleared.
        t.insert(4, "d", 11);
        assert_eq!((t.get(&4), t.get(&3)), (None, Some(&"c")));
        t.set_limit(2);
        assert_eq!((t.get(&3), t.bytes()), (None, 0));
    }
}
