//! cargo fuzz target `gguf_vocab`: see `fuzz/harness.rs`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(
    init: harness::warm_up(),
    |data: &[u8]| harness::gguf_vocab(data)
);
