//! The checked-in C header must be exactly what cbindgen makes of
//! `src/ffi/`, and it must compile as C and C++ without a warning.
//!
//! `CGRAM_BLESS=1 cargo test --test header` (what `scripts/gen-header.sh`
//! runs) rewrites `include/cgram.h` instead of failing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn generate() -> String {
    let root = root();
    let config =
        cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("reading cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        // cbindgen follows the `mod` declarations, in their order.
        .with_src(root.join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen failed on src/ffi/");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("cbindgen wrote UTF-8")
}

#[test]
fn header_is_up_to_date() {
    let path = root().join("include/cgram.h");
    let fresh = generate();
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current == fresh {
        return;
    }
    if std::env::var_os("CGRAM_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &fresh).unwrap();
        eprintln!("rewrote {}", path.display());
        return;
    }
    let first_diff = current
        .lines()
        .zip(fresh.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| current.lines().count().min(fresh.lines().count()));
    panic!(
        "include/cgram.h is stale: it differs from what cbindgen generates from src/ffi/ \
         (first difference at line {}).\nRun `scripts/gen-header.sh` and commit the result.",
        first_diff + 1
    );
}

/// Compiles a file including the header with `compiler`, warnings as
/// errors; skipped when the compiler is not installed.
fn compile_with(compiler: &str, ext: &str, flags: &[&str]) {
    if Command::new(compiler).arg("--version").output().is_err() {
        eprintln!("{compiler} not found: skipping");
        return;
    }
    let dir = std::env::temp_dir().join(format!("cgram-header-{}-{ext}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("use.{ext}"));
    // Uses every type so that a broken declaration shows.
    std::fs::write(
        &src,
        "#include \"cgram.h\"\n\
         int use(void);\n\
         int use(void) {\n\
             cg_compile_options o;\n\
             cg_compile_options_init(&o);\n\
             o.kind = CG_KIND_GBNF;\n\
             cg_vocab *v = cg_vocab_new(0, 0, 0, 0, 0, 0);\n\
             cg_grammar *g = cg_compile(v, \"\", 0, &o);\n\
             cg_matcher *m = cg_matcher_new(g);\n\
             int rc = cg_accept(m, 0) == CG_OK ? 0 : 1;\n\
             cg_trigger t = {CG_TRIGGER_WORD, \"<tool_call>\", 0};\n\
             cg_triggers *ts = cg_triggers_new(v, &t, 1);\n\
             cg_matcher *lazy = cg_matcher_new_lazy(g, ts);\n\
             int32_t index; size_t start;\n\
             rc += cg_is_triggered(lazy, &index, &start);\n\
             cg_grammar_cache *cache = cg_grammar_cache_new(0);\n\
             cg_grammar_cache_stats st;\n\
             st.struct_size = sizeof st;\n\
             rc += cg_grammar_cache_get_stats(cache, &st) + (int)st.hits;\n\
             cg_grammar_cache_free(cache);\n\
             cg_matcher_free(lazy);\n\
             cg_triggers_free(ts);\n\
             cg_matcher_free(m);\n\
             cg_free(g);\n\
             cg_vocab_free(v);\n\
             rc += (cg_version_number() < CGRAM_VERSION_NUMBER) + (CGRAM_VERSION[0] == 0);\n\
             return rc + (cg_last_error()[0] != 0) + (cg_version()[0] != 0);\n\
         }\n",
    )
    .unwrap();
    let include: &Path = &root().join("include");
    let out = Command::new(compiler)
        .args(flags)
        .arg("-I")
        .arg(include)
        .args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg(&src)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{compiler} rejects include/cgram.h:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn header_compiles_as_c99() {
    compile_with("cc", "c", &["-std=c99"]);
}

/// With MinGW's compiler the header takes its Windows form (CGRAM_API is
/// `__declspec(dllimport)`); scripts/cross.sh builds every C program with
/// it, this catches a broken declaration sooner.
#[test]
fn header_compiles_for_windows() {
    compile_with("x86_64-w64-mingw32-gcc", "c", &["-std=c99"]);
}

#[test]
fn header_compiles_as_cxx() {
    compile_with("c++", "cpp", &["-std=c++11"]);
}

/// The names DESIGN.md fixes (and outside tools bind to) stay in the header.
#[test]
fn header_has_the_contract() {
    let header = std::fs::read_to_string(root().join("include/cgram.h")).unwrap();
    let functions = [
        "cg_version(void)",
        "cg_last_error(void)",
        "cg_vocab_from_tokenizer_json(const char *path)",
        "cg_vocab_from_gguf(const char *path)",
        "cg_vocab_new(uint32_t n_tokens",
        "cg_vocab_size(const struct cg_vocab *vocab)",
        "cg_vocab_free(struct cg_vocab *vocab)",
        "cg_compile_options_init(struct cg_compile_options *options)",
        "cg_compile_options_init_size(struct cg_compile_options *options,",
        "cg_version_number(void)",
        "cg_compile(const struct cg_vocab *vocab",
        "cg_free(struct cg_grammar *grammar)",
        "cg_matcher_new(const struct cg_grammar *grammar)",
        "cg_matcher_clone(const struct cg_matcher *matcher)",
        "cg_matcher_free(struct cg_matcher *matcher)",
        "cg_mask_words(const struct cg_grammar *grammar)",
        "cg_fill_mask(struct cg_matcher *matcher, uint32_t *mask, size_t n_words)",
        "cg_accept(struct cg_matcher *matcher, int32_t token)",
        "cg_rollback(struct cg_matcher *matcher, uint32_t n_tokens)",
        "cg_is_accepting(const struct cg_matcher *matcher)",
        "cg_is_terminated(const struct cg_matcher *matcher)",
        "cg_forced_tokens(struct cg_matcher *matcher, int32_t *out, size_t cap)",
        "cg_reset(struct cg_matcher *matcher)",
        "cg_fill_masks(struct cg_matcher *const *matchers",
    ];
    for f in functions {
        assert!(header.contains(f), "include/cgram.h lost `{f}`");
    }
    for define in [
        "#define CG_OK 0",
        "#define CG_KIND_GBNF 0",
        "#define CG_KIND_JSON_SCHEMA 1",
        "#define CG_KIND_REGEX 2",
        "#define CG_KIND_ANY_JSON 3",
        "#define CG_TOKEN_SPECIAL 1",
        "typedef struct cg_vocab cg_vocab;",
        "typedef struct cg_grammar cg_grammar;",
        "typedef struct cg_matcher cg_matcher;",
        "typedef struct cg_compile_options {\n    uint32_t struct_size;\n    uint32_t kind;\n    const char *root;",
    ] {
        let found = header.contains(define)
            || (define.starts_with("typedef struct cg_compile_options")
                && strip_comments(&header).contains(define));
        assert!(found, "include/cgram.h lost `{define}`");
    }
}

/// The header without its `/** ... */` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        match rest[start..].find("*/") {
            Some(end) => rest = &rest[start + end + 2..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    // Drop the lines the comments leave empty.
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}
