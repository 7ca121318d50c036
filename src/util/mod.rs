//! The bottom floor: small primitives every layer may use and that import
//! nothing of cgram above them (the layering test, `tests/layers.rs`, holds
//! them to that).

pub(crate) mod allocator;
pub mod byteset;
pub(crate) mod hash;
pub mod sync;
#[cfg(test)]
pub(crate) mod test_rng;
