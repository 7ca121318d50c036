//! The library's version, at build time (the header's macros) and at run
//! time (`cg_version`, `cg_version_number`), and what a version promises.
//!
//! The numbers are written out as literals because cbindgen copies them
//! into the header as they are; a compile-time check keeps them equal to
//! the version in `Cargo.toml`. The header's string `CGRAM_VERSION` is
//! made of them by the preprocessor (cbindgen.toml's trailer).
//!
//! What the numbers promise (`docs/ABI.md` has the whole policy): within
//! one major version the C ABI only grows, so a program built against an
//! older header of that major version runs on a newer library. The major
//! version is the number in the library's file name for loaders
//! (`libcgram.so.0`, `libcgram.0.dylib`); it changes when a program built
//! against an older header would no longer run. A minor version adds
//! functions, constants or fields at the end of a versioned struct; a
//! patch version changes no declaration.

use std::ffi::c_char;

/// The major version of the header: programs built against a header run
/// on a library of the same major version that is at least as new.
pub const CGRAM_VERSION_MAJOR: u32 = 0;
/// The minor version of the header (new functions, constants and fields).
pub const CGRAM_VERSION_MINOR: u32 = 3;
/// The patch version of the header (no declaration changes).
pub const CGRAM_VERSION_PATCH: u32 = 0;
/// The header's version as one number, MAJOR * 1000000 + MINOR * 1000 +
/// PATCH (0.3.0 is 3000), to compare with `cg_version_number()`:
///
///   if (cg_version_number() / 1000000 != CGRAM_VERSION_MAJOR ||
///       cg_version_number() < CGRAM_VERSION_NUMBER)
///       ... the library is older than the header, or of another major
///       version: functions this header declares may be missing ...
pub const CGRAM_VERSION_NUMBER: u32 =
    CGRAM_VERSION_MAJOR * 1000000 + CGRAM_VERSION_MINOR * 1000 + CGRAM_VERSION_PATCH;

/// Parses a decimal number in a const context (the parts of
/// `CARGO_PKG_VERSION_*`).
const fn parse_decimal(s: &str) -> u32 {
    let bytes = s.as_bytes();
    let mut value = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "a version part is not a number");
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

// The header's numbers are Cargo.toml's: change both together.
const _: () = {
    assert!(CGRAM_VERSION_MAJOR == parse_decimal(env!("CARGO_PKG_VERSION_MAJOR")));
    assert!(CGRAM_VERSION_MINOR == parse_decimal(env!("CARGO_PKG_VERSION_MINOR")));
    assert!(CGRAM_VERSION_PATCH == parse_decimal(env!("CARGO_PKG_VERSION_PATCH")));
    assert!(CGRAM_VERSION_MINOR < 1000 && CGRAM_VERSION_PATCH < 1000);
};

/// The library's version as a string, e.g. "0.3.0": the `CGRAM_VERSION`
/// of the header the library was built with. A static string: do not free it.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn cg_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The library's version as one number, `CGRAM_VERSION_NUMBER` of the
/// header the library was built with (MAJOR * 1000000 + MINOR * 1000 +
/// PATCH). A program checks at run time that the library it loaded is at
/// least as new as the header it was compiled with, and of the same major
/// version (see `CGRAM_VERSION_NUMBER`). Thread-safe.
#[no_mangle]
pub extern "C" fn cg_version_number() -> u32 {
    CGRAM_VERSION_NUMBER
}
