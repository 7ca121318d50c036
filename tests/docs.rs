//! The docs name what exists.
//!
//! - [`named_paths_exist`]: every repository path the Markdown files and
//!   the module docs of `src/` name exists.
//! - [`readme_map_matches_the_layer_table`]: README's "How it works" map
//!   names every top-level module of the layer table of `tests/layers.rs`
//!   (read from its source, `LAYERS`), and no other.
//! - [`header_preamble_names_every_object`]: the preamble of
//!   `include/cgram.h` (the `header` of `cbindgen.toml`) lists every
//!   opaque C object the header declares, and no other.
//!
//! What counts as a path. The text read is every Markdown file of the
//! repository but vendored data (the JSON Schema Test Suite, llama.cpp's
//! vectors, whose README names llama.cpp's own files), and the `//!`
//! lines of `src/` and `bench/src/`, prose, backticks and code blocks
//! alike. A candidate is a
//! run of the characters `A-Z a-z 0-9 _ . - / *`, trailing dots and a
//! leading `./` removed, that:
//!
//! - contains a `/` and whose first component is an entry of one of the
//!   bases it is read against: the repository's root; `src/` for
//!   ARCHITECTURE.md, docs/DESIGN.md and module docs, which name modules
//!   the way `use` does (`tokensets/`, `matcher/mod.rs`); and the
//!   directory of the file itself (`tests/README.md` names `data/`, a
//!   module doc its siblings). It must exist under one of the bases whose
//!   entry its first component is. A `*` matches within one component
//!   and must match something.
//! - or has no `/` and ends in `.rs`, `.sh` or `.py`: a file of that name
//!   must exist somewhere in the repository (bare names of source files,
//!   such as ARCHITECTURE.md's `engine.rs`, are read in context by
//!   people; here they only have to exist).
//!
//! Not paths, so not checked: runs starting with `/`, `..` or `~` (outside
//! the repository: `../shared/...`, URLs split at `:`), runs whose first
//! component names no entry of a base (`build/prefix`, `target/...`,
//! `.cache/...`: made by scripts; `bin/cgram.dll` inside an install
//! prefix), and runs that do not exist and have a component written in
//! capitals (`schemas/NAME.json`: a placeholder). What a build or test
//! leaves in the tree (`target`, `build`, `.cache`, fuzzing's `work`,
//! caches of Python) is not an entry of any base, so a path naming it is
//! skipped the same on every machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Directory names that builds, tests and tools leave in the tree.
const GENERATED: &[&str] = &[
    ".git",
    ".cache",
    ".pytest_cache",
    "__pycache__",
    "node_modules",
    "target",
    "build",
    "work",
    "artifacts",
    "coverage",
];

/// The repository's files and directories, relative to its root with `/`.
struct Tree {
    files: BTreeSet<String>,
    dirs: BTreeSet<String>,
    basenames: BTreeSet<String>,
}

impl Tree {
    fn read() -> Tree {
        let mut t = Tree {
            files: BTreeSet::new(),
            dirs: BTreeSet::new(),
            basenames: BTreeSet::new(),
        };
        t.walk(&root(), "");
        t
    }

    fn walk(&mut self, dir: &Path, rel: &str) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if GENERATED.contains(&name.as_str()) || name.ends_with(".egg-info") {
                continue;
            }
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                self.dirs.insert(path.clone());
                self.walk(&e.path(), &path);
            } else {
                self.basenames.insert(name);
                self.files.insert(path);
            }
        }
    }

    fn exists(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        if path.contains('*') {
            return self
                .files
                .iter()
                .chain(self.dirs.iter())
                .any(|p| glob_match(path, p));
        }
        path.is_empty() || self.files.contains(path) || self.dirs.contains(path)
    }

    /// The entries directly under `base` ("" for the root).
    fn entries(&self, base: &str) -> BTreeSet<String> {
        let prefix = if base.is_empty() {
            String::new()
        } else {
            format!("{base}/")
        };
        self.files
            .iter()
            .chain(self.dirs.iter())
            .filter_map(|p| p.strip_prefix(&prefix))
            .map(|rest| rest.split('/').next().unwrap().to_string())
            .collect()
    }
}

/// `pattern` with `*` (within one component) against `path`.
fn glob_match(pattern: &str, path: &str) -> bool {
    let (p, t): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == t.len() && p.iter().zip(&t).all(|(p, t)| component_match(p, t))
}

fn component_match(p: &str, t: &str) -> bool {
    match p.split_once('*') {
        None => p == t,
        Some((head, rest)) => {
            let Some(t) = t.strip_prefix(head) else {
                return false;
            };
            (0..=t.len()).any(|i| t.is_char_boundary(i) && component_match(rest, &t[i..]))
        }
    }
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.-/*".contains(c)
}

/// A component written in capitals: a placeholder such as `NAME`.
fn is_placeholder(component: &str) -> bool {
    let stem = component.split('.').next().unwrap_or("");
    stem.chars().any(|c| c.is_ascii_uppercase())
        && stem
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The paths of `text` (named `what` in messages) that do not exist, read
/// against `bases` (see the module doc).
fn missing_paths(tree: &Tree, what: &str, text: &str, bases: &[String]) -> Vec<String> {
    let base_entries: Vec<(&String, BTreeSet<String>)> =
        bases.iter().map(|b| (b, tree.entries(b))).collect();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for run in line.split(|c| !is_path_char(c)) {
            let mut t = run.trim_end_matches('.');
            while let Some(rest) = t.strip_prefix("./") {
                t = rest;
            }
            if t.is_empty() || t.starts_with(['/', '~', '-']) || t.starts_with("..") {
                continue;
            }
            let ok = if t.contains('/') {
                let first = t.split('/').next().unwrap();
                let under: Vec<&String> = base_entries
                    .iter()
                    .filter(|(_, entries)| entries.contains(first))
                    .map(|(b, _)| *b)
                    .collect();
                under.is_empty()
                    || under.iter().any(|b| {
                        tree.exists(&if b.is_empty() {
                            t.to_string()
                        } else {
                            format!("{b}/{t}")
                        })
                    })
                    || t.split('/').any(is_placeholder)
            } else if [".rs", ".sh", ".py"].iter().any(|e| t.ends_with(e))
                && !t.starts_with(['.', '*'])
            {
                tree.basenames.contains(t)
            } else {
                true
            };
            if !ok {
                out.push(format!("{what}:{}: {t}", n + 1));
            }
        }
    }
    out
}

/// The Markdown files read for paths (see the module doc).
fn markdown_files(tree: &Tree) -> Vec<String> {
    let vendored = [
        "tests/data/json-schema-test-suite/",
        "tests/data/llamacpp-grammar/",
    ];
    tree.files
        .iter()
        .filter(|p| p.ends_with(".md") && !vendored.iter().any(|v| p.starts_with(v)))
        .cloned()
        .collect()
}

fn parent(rel: &str) -> String {
    rel.rsplit_once('/')
        .map(|(d, _)| d.to_string())
        .unwrap_or_default()
}

#[test]
fn named_paths_exist() {
    let tree = Tree::read();
    let docs = markdown_files(&tree);
    for needed in [
        "README.md",
        "ARCHITECTURE.md",
        "RELIABILITY.md",
        "BENCHMARKS.md",
        "tests/README.md",
        "scripts/README.md",
        "docs/DESIGN.md",
    ] {
        assert!(docs.iter().any(|d| d == needed), "{needed} is not read");
    }
    let mut missing = Vec::new();
    for doc in &docs {
        let mut bases = vec![String::new()];
        if doc == "ARCHITECTURE.md" || doc == "docs/DESIGN.md" {
            bases.push("src".into());
        }
        if !parent(doc).is_empty() {
            bases.push(parent(doc));
        }
        missing.extend(missing_paths(&tree, doc, &read(doc), &bases));
    }
    let mut module_docs = 0;
    for file in tree
        .files
        .iter()
        .filter(|p| (p.starts_with("src/") || p.starts_with("bench/src/")) && p.ends_with(".rs"))
    {
        // Line numbers stay those of the file: other lines are left empty.
        let text: String = read(file)
            .lines()
            .map(|l| l.trim_start().strip_prefix("//!").unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        module_docs += 1;
        let bases = vec![String::new(), "src".into(), parent(file)];
        missing.extend(missing_paths(&tree, file, &text, &bases));
    }
    assert!(module_docs > 50, "only {module_docs} files of src/ read");
    assert!(
        missing.is_empty(),
        "{} paths named in the docs do not exist (fix the text; see tests/docs.rs for what \
         counts as a path):\n{}",
        missing.len(),
        missing.join("\n")
    );
}

/// The top-level modules of `LAYERS` in `tests/layers.rs`, by layer, read
/// from its source: each entry is `("layer", &["module", ...], &[...])`.
fn layer_table() -> BTreeMap<String, Vec<String>> {
    let text = read("tests/layers.rs");
    let start = text
        .find("const LAYERS")
        .expect("tests/layers.rs has no `const LAYERS`");
    let body = &text[start..];
    let body = &body[body.find("= &[").expect("LAYERS = &[ ... ]") + 4..];
    let strings = |s: &str| -> Vec<String> {
        s.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let mut out = BTreeMap::new();
    let mut depth = 0usize;
    let mut entry = String::new();
    for c in body.chars() {
        match c {
            '(' => {
                depth += 1;
                if depth == 1 {
                    entry.clear();
                    continue;
                }
            }
            ')' => {
                depth -= 1;
                if depth == 0 {
                    // The layer's name, then its first list: its modules.
                    let name = strings(&entry)
                        .into_iter()
                        .next()
                        .expect("a layer without a name");
                    let list = &entry[entry.find("&[").expect("a layer without modules")..];
                    let list = &list[..list.find(']').expect("an unclosed list")];
                    out.insert(name, strings(list));
                    continue;
                }
            }
            ']' if depth == 0 => break,
            _ => {}
        }
        if depth > 0 {
            entry.push(c);
        }
    }
    assert!(
        out.len() >= 8 && out.values().all(|m| !m.is_empty()),
        "could not read LAYERS from tests/layers.rs: {out:?}"
    );
    out
}

/// The code block of README's "How it works".
fn readme_map() -> String {
    let readme = read("README.md");
    let section = &readme[readme
        .find("\n## How it works\n")
        .expect("README.md has no \"How it works\" section")..];
    let block = &section[section.find("```").expect("no map in \"How it works\"")..];
    let block = &block[block.find('\n').unwrap() + 1..];
    block[..block.find("```").expect("the map's block is not closed")].to_string()
}

#[test]
fn readme_map_matches_the_layer_table() {
    let layers = layer_table();
    let in_table: BTreeSet<String> = layers.values().flatten().cloned().collect();
    let map = readme_map();
    let tree = Tree::read();
    let mut in_map = BTreeSet::new();
    let mut bad_names = Vec::new();
    // An entry of the map: a line with a label in its first column and the
    // lines below it that start with a space. Its directory: the first
    // `src/.../` it names.
    let mut entry_dir = String::from("src");
    for line in map.lines() {
        if !line.starts_with(' ') {
            entry_dir = "src".into();
        }
        for run in line.split(|c| !is_path_char(c)) {
            let run = run.trim_end_matches('.');
            if let Some(rest) = run.strip_prefix("src/") {
                let module = rest.split('/').next().unwrap().trim_end_matches(".rs");
                in_map.insert(module.to_string());
                if run.ends_with('/') && entry_dir == "src" && !line.starts_with(' ') {
                    entry_dir = run.trim_end_matches('/').to_string();
                }
            } else if run.ends_with(".rs") && !run.contains('/') {
                // A file the entry names by itself: somewhere in its folder.
                let found = tree.files.iter().any(|f| {
                    f.starts_with(&format!("{entry_dir}/")) && f.ends_with(&format!("/{run}"))
                });
                if !found {
                    bad_names.push(format!("{run} (not under {entry_dir}/)"));
                }
            }
        }
    }
    let only_table: Vec<_> = in_table.difference(&in_map).collect();
    let only_map: Vec<_> = in_map.difference(&in_table).collect();
    assert!(
        only_table.is_empty() && only_map.is_empty() && bad_names.is_empty(),
        "README's \"How it works\" map and the layer table of tests/layers.rs differ:\n\
         modules of the table missing from the map: {only_table:?}\n\
         modules of the map not in the table: {only_map:?}\n\
         files the map names where they are not: {bad_names:?}\n\
         (layers: {layers:?})"
    );
}

#[test]
fn header_preamble_names_every_object() {
    let header = read("include/cgram.h");
    // Opaque objects: `typedef struct cg_x cg_x;`, no body.
    let objects: BTreeSet<String> = header
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("typedef struct ")?.strip_suffix(';')?;
            let (a, b) = rest.split_once(' ')?;
            (a == b && a.starts_with("cg_")).then(|| a.to_string())
        })
        .collect();
    assert!(objects.len() >= 5, "opaque types read: {objects:?}");
    let preamble = &header[..header
        .find("#ifndef CGRAM_H")
        .expect("no include guard in include/cgram.h")];
    // The list after "Objects:": ` *   cg_x   what it is`, continued by
    // lines indented further.
    let mut listed = BTreeSet::new();
    let mut in_list = false;
    for line in preamble.lines() {
        if line.trim_end().ends_with("Objects:") {
            in_list = true;
            continue;
        }
        if !in_list {
            continue;
        }
        let Some(item) = line.strip_prefix(" *   ") else {
            break;
        };
        if let Some(name) = item
            .split_whitespace()
            .next()
            .filter(|_| !item.starts_with(' '))
        {
            listed.insert(name.to_string());
        }
    }
    assert_eq!(
        listed, objects,
        "the \"Objects:\" list of include/cgram.h's preamble (the `header` of cbindgen.toml) \
         against the opaque types the header declares"
    );
}
