//! cargo fuzz target `matcher_drive`: see `fuzz/harness.rs`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(
    init: {
        harness::warm_up();
        harness::init_matcher_corpus();
    },
    |data: &[u8]| harness::matcher_drive(data)
);
