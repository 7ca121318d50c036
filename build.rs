//! Names the shared library for loaders, so that a program records which
//! ABI it was linked against (docs/ABI.md): on Linux and the other ELF
//! systems the SONAME `libcgram.so.MAJOR`; on macOS the install name
//! `@rpath/libcgram.MAJOR.dylib` with a compatibility version that grows
//! with each minor version (dyld refuses a library older than the one a
//! program was linked with) and the current version. Windows has neither:
//! the DLL is `cgram.dll`, and `cg_version_number()` tells its version.
//!
//! Only the cdylib gets these arguments; the static library and the
//! tests are untouched.

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let major = env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets the version");
    let minor = env::var("CARGO_PKG_VERSION_MINOR").expect("cargo sets the version");
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets the version");
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let link_arg = |arg: String| println!("cargo:rustc-cdylib-link-arg={arg}");
    match os.as_str() {
        "macos" | "ios" => {
            link_arg(format!("-Wl,-install_name,@rpath/libcgram.{major}.dylib"));
            link_arg(format!("-Wl,-compatibility_version,{major}.{minor}.0"));
            link_arg(format!("-Wl,-current_version,{version}"));
        }
        "windows" => {}
        // ELF systems (Linux, Android, the BSDs).
        _ => link_arg(format!("-Wl,-soname,libcgram.so.{major}")),
    }
}
