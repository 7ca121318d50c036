//! A short soak: `cgram-bench soak` (bench/src/soak.rs) for
//! 20,000 tokens with the real Llama 3 tokenizer over any JSON, llama.cpp's
//! json.gbnf and list.gbnf, the soak's regexes and lazy tool-call grammar,
//! and 4 MaskBench schemas when the shared data is next to the checkout
//! (or in /work/shared).
//! The run must exit 0 (no broken invariant, every completed output
//! checked, resident memory within the tolerance after the warm-up) and
//! must have completed and checked outputs of every kind. The long runs
//! are `scripts/soak.sh`.

use std::process::Command;

/// What this test needs of the library's `tests/common`, for the
/// repository root rather than this crate's folder.
mod common {
    use std::path::PathBuf;

    pub fn manifest_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("bench/ sits in the repository")
            .to_path_buf()
    }

    /// `${CGRAM_CACHE:-<repo>/.cache}/tokenizers/NAME/tokenizer.json`.
    pub fn tokenizer_path(name: &str) -> PathBuf {
        let cache = match std::env::var_os("CGRAM_CACHE") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => manifest_dir().join(".cache"),
        };
        let p = cache.join("tokenizers").join(name).join("tokenizer.json");
        assert!(
            p.is_file(),
            "tokenizer '{name}' not found at {}: run scripts/fetch-tokenizers.sh",
            p.display()
        );
        p
    }
}

/// The number before `label` in `line` (`"12 parsed as JSON"`).
fn count_before(line: &str, label: &str) -> u64 {
    let at = line
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {line:?}"));
    line[..at]
        .split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count before {label:?} in {line:?}"))
}

#[test]
fn short_soak_passes_and_checks_every_kind() {
    let gbnf = common::manifest_dir().join("tests/data/llamacpp-grammar/gbnf");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cgram-bench"));
    cmd.arg("soak")
        .arg("--tokenizer")
        .arg(common::tokenizer_path("llama3"))
        .arg("--gbnf-json")
        .arg(gbnf.join("json.gbnf"))
        .arg("--gbnf")
        .arg(gbnf.join("list.gbnf"))
        .args(["--tokens", "20000", "--rows", "4", "--warmup-percent", "25"]);
    let maskbench = [
        common::manifest_dir().join("../shared/data/maskbench-dev"),
        std::path::PathBuf::from("/work/shared/data/maskbench-dev"),
    ]
    .into_iter()
    .find(|d| d.is_dir());
    if let Some(maskbench) = maskbench {
        cmd.arg("--schemas").arg(&maskbench).args(["--pool", "4"]);
    }
    let out = cmd.output().expect("running cgram-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "soak failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |prefix: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line in\n{stdout}"))
            .to_string()
    };
    let tokens = line("tokens: ");
    assert_eq!(count_before(&tokens, " in "), 20000, "{tokens}");
    let outputs = line("outputs: ");
    assert!(count_before(&outputs, "completed") >= 50, "{outputs}");
    let checks = line("checks: ");
    for label in [
        "re-accepted",
        "parsed as JSON",
        "full regex matches",
        "tool calls parsed",
    ] {
        assert!(count_before(&checks, label) > 0, "{label}: {checks}");
    }
    assert!(stdout.contains("verdict: PASS"), "{stdout}");
}
