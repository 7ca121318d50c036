//! The C ABI must be the committed baseline, `abi/cgram.abi`: the functions
//! of `include/cgram.h` with their parameter and return types, its
//! constants, and the size, alignment and field offsets of its structs as
//! this machine's C compiler lays them out (`scripts/lib/abi.py` writes a probe
//! program, which is compiled against the header and run). A change to the
//! ABI must be deliberate: the failure says what changed and what it means
//! for the version (docs/ABI.md), and `CGRAM_BLESS=1 cargo test --test abi`
//! rewrites the baseline.
//!
//! scripts/cross.sh runs the same probe on the other targets (under wine
//! and qemu) against the same baseline, and checks what each built library
//! exports.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn abi_is_the_baseline() {
    let root = root();
    let dir = std::env::temp_dir().join(format!("cgram-abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let header = root.join("include/cgram.h");
    let abi_py = root.join("scripts/lib/abi.py");

    let probe = run(Command::new("python3")
        .arg(&abi_py)
        .arg("probe")
        .arg(&header));
    std::fs::write(dir.join("probe.c"), &probe.stdout).unwrap();
    run(Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(dir.join("probe.c"))
        .arg("-o")
        .arg(dir.join("probe")));
    let layout = run(&mut Command::new(dir.join("probe")));
    std::fs::write(dir.join("layout.txt"), &layout.stdout).unwrap();

    let verb = if std::env::var_os("CGRAM_BLESS").is_some() {
        "bless"
    } else {
        "check"
    };
    let out = Command::new("python3")
        .arg(&abi_py)
        .arg(verb)
        .arg(&header)
        .arg(dir.join("layout.txt"))
        .output()
        .expect("running scripts/lib/abi.py");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
