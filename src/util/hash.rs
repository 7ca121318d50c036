//! The hasher of the engine's own maps (rule ids, item keys, IR
//! expressions, sets of automaton states). The keys never come from an
//! adversary that sees the hashes, so SipHash's flood protection is not
//! needed, and its cost showed up in compile profiles.
//!
//! rustc-hash's `FxHasher` (2.x: a multiply-add per integer, the product's
//! high bits rotated down in `finish` for hashbrown's low-bit buckets, and
//! a folded 128-bit multiply per 16 bytes of a byte string), chosen by
//! measurement over foldhash's `FixedState` and the hand-written
//! multiply-rotate hasher it replaced. Instructions on 200 MaskBench
//! schemas in one process (BENCHMARKS.md, "The engine's hasher"):
//! compiles 2,255M against 2,320M (foldhash) and 2,258M (by hand), masks
//! 3,345M against 3,426M and 3,357M. No random seed: the hashes, and so
//! the maps' orders, are the same in every run.

use std::collections::{HashMap, HashSet};

pub type FastHasher = rustc_hash::FxHasher;
pub type FastBuild = rustc_hash::FxBuildHasher;
pub type FastMap<K, V> = HashMap<K, V, FastBuild>;
pub type FastSet<K> = HashSet<K, FastBuild>;
