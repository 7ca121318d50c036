//! cargo fuzz target `json_schema_deadline`: see `fuzz/harness.rs` and
//! `fuzz/schema_mutations.rs`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(
    init: harness::warm_up(),
    |data: &[u8]| harness::json_schema_deadline(data)
);
