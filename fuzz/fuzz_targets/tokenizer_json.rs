//! cargo fuzz target `tokenizer_json`: see `fuzz/harness.rs`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(
    init: harness::warm_up(),
    |data: &[u8]| harness::tokenizer_json(data)
);
