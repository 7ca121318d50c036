//! Fuzz findings and corpora replayed on stable `cargo test`, through the
//! fuzz targets' own code (`fuzz/harness.rs`, included here as it is in
//! each `fuzz/fuzz_targets/*.rs`).
//!
//! - `regressions`: every file of `fuzz/regressions/<target>/` (a
//!   reproducer of a fixed finding: a crash, a timeout or a broken mask
//!   invariant) must run clean within [`LIMIT`], its compilations within
//!   [`STRICT_COMPILE_MS`] + [`STRICT_SLACK_MS`]. Findings not fixed yet
//!   are listed in `fuzz/regressions/open.txt` and skipped here;
//!   `open_findings` (ignored: it fails while they are open) replays them.
//! - `corpus_<target>`: every input of the committed seed corpus
//!   `fuzz/corpus/<target>/`, the same way but with the fuzzing limits
//!   (`MAX_COMPILE_MS` + `COMPILE_SLACK_MS` of the harness).
//!
//! The fuzz build has debug assertions and overflow checks; this release
//! build has not, so a finding that was an arithmetic overflow only
//! replays its other effects here.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

#[path = "../fuzz/harness.rs"]
mod harness;

/// The CPU time one input may take (its thread's, so that a loaded test
/// machine does not matter): libFuzzer's `-timeout=1` of `scripts/fuzz.sh`.
/// This uninstrumented build is several times faster than the fuzz build,
/// so an input the fuzzer timed out on may pass here; the harness's own
/// bound on `cg_compile` (`max_compile_ms` + `COMPILE_SLACK_MS`, also in
/// CPU time) holds in both.
const LIMIT: Duration = Duration::from_secs(1);

/// Wall time after which an input counts as hung.
const HANG: Duration = Duration::from_secs(30);

/// `max_compile_ms` for the reproducers: small, so that a compilation
/// that does not check its deadline shows in this fast build too.
const STRICT_COMPILE_MS: u64 = 50;

/// How far past [`STRICT_COMPILE_MS`] a compilation may go, in CPU time.
const STRICT_SLACK_MS: u64 = 50;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn target(name: &str) -> harness::Target {
    harness::TARGETS
        .iter()
        .find(|t| t.0 == name)
        .unwrap_or_else(|| panic!("no fuzz target {name}"))
        .1
}

/// The input files of a folder, sorted (none if it does not exist).
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .map(|e| e.expect("read_dir").path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            !name.starts_with('.') && !name.ends_with(".md")
        })
        .collect();
    out.sort();
    out
}

/// Runs `target` on the file at `path` on a thread of its own: the CPU
/// time it took, or what went wrong (a panic of the harness, more than
/// [`LIMIT`] of CPU time, or more than [`HANG`]: such a thread is left
/// running).
fn replay(target_name: &str, path: &Path, strict: bool) -> Result<Duration, String> {
    let f = target(target_name);
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // One-time costs outside the timed part, as in the fuzz targets' init.
    harness::warm_up();
    if target_name == "matcher_drive" {
        harness::init_matcher_corpus();
    }
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(format!("replay {}", path.display()))
        .spawn(move || {
            let start = harness::thread_cpu_time();
            let r = std::panic::catch_unwind(|| {
                if strict {
                    harness::with_compile_limits(STRICT_COMPILE_MS, STRICT_SLACK_MS, || f(&data))
                } else {
                    f(&data)
                }
            });
            let cpu = harness::thread_cpu_time() - start;
            let _ = tx.send(r.map(|()| cpu).map_err(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "(no message)".into())
            }));
        })
        .expect("spawn");
    match rx.recv_timeout(HANG) {
        Ok(Ok(cpu)) if cpu > LIMIT => Err(format!("took {cpu:?} of CPU time")),
        Ok(Ok(cpu)) => Ok(cpu),
        Ok(Err(msg)) => Err(format!("panicked: {msg}")),
        Err(_) => Err(format!("still running after {HANG:?}")),
    }
}

/// `fuzz/regressions/open.txt`: `target/file` of each finding not fixed
/// yet (text after `#` is a comment), and whether the comment says
/// `[fuzz-build]`: the finding shows only in the instrumented fuzz build
/// (an input over 1 s there that this build runs faster).
fn open_findings_list() -> Vec<(String, bool)> {
    let path = fuzz_dir().join("regressions/open.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .map(|l| {
            let (entry, comment) = l.split_once('#').unwrap_or((l, ""));
            (entry.trim().to_string(), comment.contains("[fuzz-build]"))
        })
        .filter(|l| !l.0.is_empty())
        .collect()
}

/// Replays `files` of `target_name`; panics listing every failure.
fn replay_all(target_name: &str, files: &[PathBuf], strict: bool) {
    let mut failures = Vec::new();
    let mut slowest = (Duration::ZERO, PathBuf::new());
    let mut total = Duration::ZERO;
    for path in files {
        match replay(target_name, path, strict) {
            Ok(t) => {
                total += t;
                if t > LIMIT / 4 {
                    eprintln!("  slow ({t:?}, within the limit): {}", path.display());
                }
                if t > slowest.0 {
                    slowest = (t, path.clone());
                }
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    eprintln!(
        "{target_name}: {} inputs, {} failed, CPU time {total:?}, slowest {:?} ({})",
        files.len(),
        failures.len(),
        slowest.0,
        slowest.1.display()
    );
    for f in &failures {
        eprintln!("  FAILED {f}");
    }
    assert!(
        failures.is_empty(),
        "{target_name}: {} of {} inputs failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn regressions() {
    let open: Vec<String> = open_findings_list().into_iter().map(|e| e.0).collect();
    let root = fuzz_dir().join("regressions");
    for entry in &open {
        assert!(
            root.join(entry).is_file(),
            "open.txt lists {entry}, which is not a file of fuzz/regressions"
        );
    }
    for (name, _) in harness::TARGETS {
        let files: Vec<PathBuf> = inputs(&root.join(name))
            .into_iter()
            .filter(|p| {
                let rel = format!("{name}/{}", p.file_name().unwrap().to_string_lossy());
                !open.contains(&rel)
            })
            .collect();
        replay_all(name, &files, true);
    }
    // Every folder is a target's.
    for e in std::fs::read_dir(&root).expect("fuzz/regressions") {
        let p = e.unwrap().path();
        if p.is_dir() {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                harness::TARGETS.iter().any(|t| t.0 == n),
                "fuzz/regressions/{n} is no fuzz target"
            );
        }
    }
}

/// The findings of `open.txt`, replayed: fails while any of them still
/// reproduces (and says which are fixed, to be taken off the list).
#[test]
#[ignore = "the open findings fail until they are fixed"]
fn open_findings() {
    let root = fuzz_dir().join("regressions");
    let mut still = Vec::new();
    for (entry, fuzz_build) in open_findings_list() {
        if fuzz_build {
            eprintln!("not checked here (fuzz build only): {entry}");
            continue;
        }
        let (t, _) = entry.split_once('/').expect("target/file");
        match replay(t, &root.join(&entry), true) {
            Ok(d) => eprintln!("fixed ({d:?}): {entry}: take it off open.txt"),
            Err(e) => still.push(format!("{entry}: {e}")),
        }
    }
    assert!(still.is_empty(), "still open:\n{}", still.join("\n"));
}

/// `CGRAM_FUZZ_REPLAY=TARGET=DIR cargo test --release --test
/// fuzz_regressions -- --ignored replay_dir`: replays every file of DIR
/// (the fuzzer's work corpus, a folder of raw seeds) and lists those that
/// fail; with `CGRAM_FUZZ_STRICT=1`, with the reproducers' compile limits.
#[test]
#[ignore = "needs CGRAM_FUZZ_REPLAY=TARGET=DIR"]
fn replay_dir() {
    let spec = std::env::var("CGRAM_FUZZ_REPLAY").expect("CGRAM_FUZZ_REPLAY=TARGET=DIR");
    let (t, dir) = spec.split_once('=').expect("CGRAM_FUZZ_REPLAY=TARGET=DIR");
    let files = inputs(Path::new(dir));
    assert!(!files.is_empty(), "no files in {dir}");
    replay_all(t, &files, std::env::var_os("CGRAM_FUZZ_STRICT").is_some());
}

macro_rules! corpus_test {
    ($name:ident) => {
        #[test]
        fn $name() {
            let t = &stringify!($name)["corpus_".len()..];
            let files = inputs(&fuzz_dir().join("corpus").join(t));
            assert!(!files.is_empty(), "fuzz/corpus/{t} is empty");
            replay_all(t, &files, false);
        }
    };
}

corpus_test!(corpus_gbnf_compile);
corpus_test!(corpus_json_schema_compile);
corpus_test!(corpus_regex_compile);
corpus_test!(corpus_tokenizer_json);
corpus_test!(corpus_matcher_drive);
corpus_test!(corpus_json_schema_deadline);
corpus_test!(corpus_gguf_vocab);

/// `CGRAM_FUZZ_SHOW=FILE cargo test --test fuzz_regressions -- --ignored
/// show_mutated_schema --nocapture`: prints the schema a
/// `json_schema_deadline` input compiles (its recipe applied) and the
/// recipe's flag byte.
#[test]
#[ignore = "needs CGRAM_FUZZ_SHOW=FILE"]
fn show_mutated_schema() {
    let path = std::env::var("CGRAM_FUZZ_SHOW").expect("CGRAM_FUZZ_SHOW=FILE");
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    match harness::mutated_schema(&data) {
        Some((schema, flags)) => println!("flags {flags}\n{schema}"),
        None => println!("{path}: its schema is not JSON"),
    }
}
