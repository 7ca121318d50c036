//! The layers of `src/` import one way: each top-level module may use only
//! the layers [`LAYERS`] lets it, so that no arrow runs against the flow
//!
//! ```text
//! front ends -> IR -> compile -> token sets -> matcher -> ffi
//! ```
//!
//! with the vocabulary and the floor (`util`, `error`, `limits`) below
//! everything. ARCHITECTURE.md draws the same map.
//!
//! The test reads code, not comments: doc links may point anywhere (a
//! limit's table naming the front end that enforces it is documentation,
//! not a dependency). `#[cfg(test)]` items are left out too: a unit test
//! may build its input with a higher layer (a lexeme test that writes its
//! expression as a regex), the way an integration test would.
//!
//! A `use` against the table fails the test with the file and the path.
//! [`KNOWN`] lists arrows allowed to run the wrong way for a while (none
//! now); it may only shrink (an entry that no longer occurs fails the
//! test too, so that it is removed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `(layer, top-level modules in it, layers it may import)`, from the
/// bottom up. A layer may always import itself.
const LAYERS: &[(&str, &[&str], &[&str])] = &[
    ("floor", &["util", "error", "limits"], &[]),
    ("vocab", &["vocab"], &["floor"]),
    ("ir", &["ir"], &["floor"]),
    (
        "front ends",
        &["gbnf", "json_schema", "regex"],
        &["floor", "vocab", "ir"],
    ),
    ("compile", &["compile"], &["floor", "vocab", "ir"]),
    (
        "token sets",
        &["tokensets"],
        &["floor", "vocab", "ir", "compile"],
    ),
    (
        "source",
        &["source"],
        &[
            "floor",
            "vocab",
            "ir",
            "front ends",
            "compile",
            "token sets",
        ],
    ),
    (
        "triggers",
        &["trigger"],
        &[
            "floor",
            "vocab",
            "ir",
            "front ends",
            "compile",
            "token sets",
        ],
    ),
    (
        "matcher",
        &["matcher"],
        &["floor", "vocab", "ir", "compile", "token sets", "triggers"],
    ),
    (
        "grammar cache",
        &["grammar_cache"],
        &[
            "floor",
            "vocab",
            "ir",
            "front ends",
            "compile",
            "token sets",
            "source",
            "triggers",
        ],
    ),
    (
        "ffi",
        &["ffi"],
        &[
            "floor",
            "vocab",
            "ir",
            "front ends",
            "compile",
            "token sets",
            "source",
            "triggers",
            "matcher",
            "grammar cache",
        ],
    ),
];

/// Imports that still run against the flow: `(file, module imported)`,
/// each with the work that removes it. Empty: keep it so.
const KNOWN: &[(&str, &str)] = &[];

fn src_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every library source file (the benchmark tool is a crate of its own,
/// `bench/`, on the public API).
fn library_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading src/") {
        let path = entry.expect("reading src/").path();
        if path.is_dir() {
            library_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text with comments, string and character literals blanked out
/// (newlines kept, so that offsets still name lines).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, from: &[char]| {
        for &x in from {
            out.push(if x == '\n' { '\n' } else { ' ' });
        }
    };
    let ident = |x: char| x.is_alphanumeric() || x == '_';
    let mut i = 0;
    while i < c.len() {
        let rest = &c[i..];
        let prev_ident = i > 0 && ident(c[i - 1]);
        if rest.starts_with(&['/', '/']) {
            let end = rest.iter().position(|&x| x == '\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(&['/', '*']) {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0, 0);
            while j < rest.len() {
                if rest[j..].starts_with(&['/', '*']) {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(&['*', '/']) {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if !prev_ident && (rest[0] == 'r' || rest.starts_with(&['b', 'r'])) && {
            let k = if rest[0] == 'b' { 2 } else { 1 };
            let hashes = rest[k..].iter().take_while(|&&x| x == '#').count();
            rest.get(k + hashes) == Some(&'"')
        } {
            let k = if rest[0] == 'b' { 2 } else { 1 };
            let hashes = rest[k..].iter().take_while(|&&x| x == '#').count();
            let open = k + hashes + 1;
            let mut j = open;
            while j < rest.len() {
                if rest[j] == '"'
                    && rest[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&x| x == '#')
                        .count()
                        == hashes
                {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest[0] == '"' || (!prev_ident && rest.starts_with(&['b', '"'])) {
            let mut j = if rest[0] == 'b' { 2 } else { 1 };
            while j < rest.len() && rest[j] != '"' {
                j += if rest[j] == '\\' { 2 } else { 1 };
            }
            j = (j + 1).min(rest.len());
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest[0] == '\'' {
            // A character literal (`'x'`, `'\n'`, `'{'`) or a lifetime.
            let len = if rest.get(1) == Some(&'\\') {
                rest.iter().skip(2).position(|&x| x == '\'').map(|p| p + 3)
            } else if rest.get(2) == Some(&'\'') {
                Some(3)
            } else {
                None
            };
            match len {
                Some(n) => {
                    blank(&mut out, &rest[..n]);
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    out
}

/// The code with every `#[cfg(test)]` item blanked out (a `mod tests`
/// block, a test-only `use` or function).
fn without_test_items(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + marker.len() <= out.len() {
        if out[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        // The item ends at its first `;` outside braces, or where the
        // first brace it opens closes.
        let mut j = i + marker.len();
        let mut depth = 0usize;
        while j < out.len() {
            match out[j] {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let end = j.min(out.len());
        for x in &mut out[i..end] {
            if *x != '\n' {
                *x = ' ';
            }
        }
        i = j;
    }
    out.into_iter().collect()
}

/// The module path of a file: `src/compile/lexeme/mod.rs` is
/// `[compile, lexeme]`.
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src_dir()).expect("a file under src/");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text inside the braces that open `text` (`{` already taken off),
/// up to the brace that closes them.
fn group_body(group: &str) -> &str {
    let mut depth = 1;
    let end = group
        .char_indices()
        .find(|&(_, c)| {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            depth == 0
        })
        .map_or(group.len(), |(i, _)| i);
    &group[..end]
}

/// The items of a `{...}` group's body, split at its own commas.
fn group_items(group: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut item = String::new();
    for ch in group.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(ch);
    }
    items.push(item);
    items
}

/// The first segments of the paths a `{...}` group of a `use` names.
fn group_heads(group: &str) -> Vec<String> {
    let heads = group_items(group);
    heads
        .iter()
        .filter_map(|h| {
            let h = h.trim();
            let end = h
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(h.len());
            (end > 0).then(|| h[..end].to_string())
        })
        .collect()
}

/// Where `crate::` and `super::` paths start in `code`: the offset of
/// each, the `super::` levels it climbs (`None` for `crate::`), and the
/// text after its prefix.
fn path_starts(code: &str) -> Vec<(usize, Option<usize>, &str)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let is_start = at == 0
            || !(bytes[at - 1].is_ascii_alphanumeric()
                || bytes[at - 1] == b'_'
                || bytes[at - 1] == b':');
        let (climb, skip) = if is_start && rest.starts_with("crate::") {
            (None, "crate::".len())
        } else if is_start && rest.starts_with("super::") {
            let mut levels = 0;
            let mut s = rest;
            while let Some(r) = s.strip_prefix("super::") {
                levels += 1;
                s = r.trim_start();
            }
            (Some(levels), rest.len() - s.len())
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        out.push((at, climb, &rest[skip..]));
        at += skip;
    }
    out
}

/// The top-level modules a file's code reaches through `crate::` and
/// `super::` paths, with the line of each. Names the crate root
/// re-exports (`crate::Error`) are resolved through `reexports`.
fn reached(file: &Path, code: &str, reexports: &BTreeMap<String, String>) -> Vec<(String, usize)> {
    let own = module_path(file);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let resolve = |head: &str| -> Option<String> {
        if head == "self" {
            return None;
        }
        // A module's own name wins over a root re-export of the same
        // name (`crate::compile::` is the module, not `source::compile`).
        if layer_of(head).is_some() {
            return Some(head.to_string());
        }
        Some(
            reexports
                .get(head)
                .cloned()
                .unwrap_or_else(|| head.to_string()),
        )
    };
    let mut out = Vec::new();
    for (at, climb, after) in path_starts(code) {
        // `super::` only leaves the top-level module when it climbs to
        // the crate root.
        if let Some(levels) = climb {
            if levels < own.len() {
                continue;
            }
        }
        let heads = if let Some(group) = after.strip_prefix('{') {
            group_heads(group_body(group))
        } else {
            group_heads(
                after
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or(""),
            )
        };
        for head in heads {
            if let Some(m) = resolve(&head) {
                out.push((m, line_of(at)));
            }
        }
    }
    out
}

/// Root re-exports of `src/lib.rs`: `pub use error::{Error, Result}` maps
/// `Error` and `Result` to `error`.
fn root_reexports() -> BTreeMap<String, String> {
    let lib = code_only(&std::fs::read_to_string(src_dir().join("lib.rs")).unwrap());
    let mut map = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let (module, rest) = path.split_once("::").expect("a re-export names its module");
        let names = match rest.trim().strip_prefix('{') {
            Some(g) => group_heads(g.trim_end_matches('}')),
            None => vec![rest.rsplit("::").next().unwrap().trim().to_string()],
        };
        for name in names {
            map.insert(name, module.trim().to_string());
        }
    }
    map
}

fn layer_of(module: &str) -> Option<&'static str> {
    LAYERS
        .iter()
        .find(|(_, modules, _)| modules.contains(&module))
        .map(|(layer, _, _)| *layer)
}

fn may_import(from: &str, to: &str) -> bool {
    from == to
        || LAYERS
            .iter()
            .any(|(layer, _, allowed)| *layer == from && allowed.contains(&to))
}

/// Every import against [`LAYERS`]: `(file, module, line)`.
fn violations() -> Vec<(String, String, usize)> {
    let reexports = root_reexports();
    let mut files = Vec::new();
    library_files(&src_dir(), &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let own = module_path(&file);
        let Some(top) = own.first() else {
            continue; // lib.rs declares the modules.
        };
        let from =
            layer_of(top).unwrap_or_else(|| panic!("src/{top} is in no layer: add it to LAYERS"));
        let code = without_test_items(&code_only(&std::fs::read_to_string(&file).unwrap()));
        let name = format!("src/{}", file.strip_prefix(src_dir()).unwrap().display());
        for (module, line) in reached(&file, &code, &reexports) {
            let Some(to) = layer_of(&module) else {
                continue; // an item of the crate root itself
            };
            if !may_import(from, to) {
                out.push((name.clone(), module, line));
            }
        }
    }
    out
}

#[test]
fn imports_follow_the_layers() {
    let found = violations();
    let known: BTreeSet<(&str, &str)> = KNOWN.iter().copied().collect();
    let mut new = Vec::new();
    let mut seen = BTreeSet::new();
    for (file, module, line) in &found {
        if known.contains(&(file.as_str(), module.as_str())) {
            seen.insert((file.clone(), module.clone()));
        } else {
            new.push(format!("{file}:{line} imports {module}"));
        }
    }
    assert!(
        new.is_empty(),
        "imports against the layers (see LAYERS in tests/layers.rs):\n{}",
        new.join("\n")
    );
    let gone: Vec<_> = KNOWN
        .iter()
        .filter(|(f, m)| !seen.contains(&(f.to_string(), m.to_string())))
        .collect();
    assert!(
        gone.is_empty(),
        "these KNOWN entries no longer occur: remove them from tests/layers.rs: {gone:?}"
    );
}

#[test]
fn every_module_is_in_a_layer() {
    let mut dirs = BTreeSet::new();
    for entry in std::fs::read_dir(src_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if name != "lib" {
            dirs.insert(name);
        }
    }
    for name in dirs {
        assert!(layer_of(&name).is_some(), "src/{name} is in no layer");
    }
}

/// The allowed imports form no cycle, so that the code cannot either.
#[test]
fn the_layer_table_has_no_cycle() {
    let order: Vec<&str> = LAYERS.iter().map(|(l, _, _)| *l).collect();
    for (i, (layer, _, allowed)) in LAYERS.iter().enumerate() {
        for a in *allowed {
            let j = order.iter().position(|l| l == a).expect("a known layer");
            assert!(j < i, "{layer} may import {a}, which is not below it");
        }
    }
}

/// The checker itself finds what it must and nothing in comments,
/// strings or test modules.
#[test]
fn the_checker_sees_code_only() {
    let file = src_dir().join("compile/lexeme/mod.rs");
    let reexports = root_reexports();
    let modules = |text: &str| -> Vec<String> {
        let code = without_test_items(&code_only(text));
        reached(&file, &code, &reexports)
            .into_iter()
            .map(|(m, _)| m)
            .collect()
    };
    assert_eq!(modules("use crate::ffi::cg_grammar;"), ["ffi"]);
    assert_eq!(
        modules("use crate::{ir::Expr, matcher::{self, Matcher}};"),
        ["ir", "matcher"]
    );
    assert_eq!(
        modules("fn f() -> crate::Result<()> { todo!() }"),
        ["error"]
    );
    assert_eq!(modules("use super::super::ffi;"), ["ffi"]);
    assert!(modules("use super::adjacency::Adjacency;").is_empty());
    assert!(modules("/// see [`crate::ffi`]\n// crate::matcher\nfn f() {}").is_empty());
    assert!(
        modules("const S: &str = \"crate::ffi\"; const R: &str = r#\"crate::ffi\"#;").is_empty()
    );
    assert!(modules("#[cfg(test)]\nmod tests {\n    use crate::ffi;\n}\n").is_empty());
    assert_eq!(
        modules("#[cfg(test)]\nuse crate::regex;\nuse crate::matcher::x;"),
        ["matcher"]
    );
    assert_eq!(
        modules("fn f<'a>(x: &'a u8) -> char { let _ = '{'; crate::ffi::g() }"),
        ["ffi"]
    );
    assert!(!may_import("compile", "matcher") && !may_import("compile", "front ends"));
    assert!(may_import("matcher", "compile"));
}

/// Inside a folder the files import one way too. `FLOORS` orders the
/// files of folders read bottom-up (a file may import files on its own
/// floor or below); every other folder must simply hold no import circle.
/// `src/tokensets/` is the folder the mask path learns in, where circles
/// grew before: its floors are ARCHITECTURE.md's file map. The floors of
/// `src/compile/lexeme/` are its module doc's list of files.
const FLOORS: &[(&str, &[&[&str]])] = &[
    (
        "tokensets",
        &[
            &["work", "cleared", "token_list", "token_chars"],
            &["info"],
            &["lexeme", "context", "string_counts"],
            &["engine"],
            &["grammar"],
            &["earley", "lexeme_walk"],
            &["strings", "trie_walk", "free_exits"],
            &["parser_walk", "exits"],
            &["cached"],
            &["covered"],
        ],
    ),
    (
        "compile/lexeme",
        &[
            &["dfa_table", "analysis"],
            &[
                "lexeme_source",
                "determinize",
                "minimize",
                "json_string",
                "multiple",
                "integer_range",
                "rfc3339",
            ],
            &["string_trie"],
            &["table", "boolean"],
            &["counted"],
            &["iterations"],
            &["length_and_iterations"],
            &["source"],
        ],
    ),
];

/// Folders whose files still import in a circle: `(folder, files in
/// the circle)`, each with the work that removes it. Empty: it may only
/// stay so.
const KNOWN_CIRCLES: &[(&str, &[&str])] = &[];

/// The module paths a `crate::` or `super::` path names, its `{...}`
/// groups expanded: `a::{b, c::d}` is `[a, b]` and `[a, c, d]`.
fn expand_paths(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut prefix = Vec::new();
    let mut rest = text.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let items = group_items(group_body(group));
            for item in items {
                for tail in expand_paths(&item) {
                    let mut p = prefix.clone();
                    p.extend(tail);
                    out.push(p);
                }
            }
            return out;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        prefix.push(rest[..end].to_string());
        match rest[end..].trim_start().strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => break,
        }
    }
    if !prefix.is_empty() {
        out.push(prefix);
    }
    out
}

/// The items a folder's `mod.rs` re-exports, by the file they come from.
fn folder_reexports(folder: &Path) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(folder.join("mod.rs")) else {
        return map;
    };
    let code = without_test_items(&code_only(&text));
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let Some(path) = ["pub use ", "pub(crate) use "]
            .iter()
            .find_map(|p| stmt.strip_prefix(p))
        else {
            continue;
        };
        for p in expand_paths(path) {
            if p.len() >= 2 {
                map.insert(p.last().unwrap().clone(), p[0].clone());
            }
        }
    }
    map
}

/// Imports between the files of each folder of `src/`: folder (as a
/// module path) -> file -> the sibling files it imports, with a line.
type FolderGraphs = BTreeMap<Vec<String>, BTreeMap<String, BTreeMap<String, usize>>>;

fn folder_graphs() -> FolderGraphs {
    let mut files = Vec::new();
    library_files(&src_dir(), &mut files);
    let mut graphs = FolderGraphs::new();
    for file in &files {
        let own = module_path(file);
        let is_folder_face = file.ends_with("mod.rs") || file.ends_with("lib.rs");
        if own.is_empty() || is_folder_face || is_test_module(file) {
            continue;
        }
        let parent = own[..own.len() - 1].to_vec();
        let name = own.last().unwrap().clone();
        let dir = file.parent().unwrap();
        let siblings: BTreeSet<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
            .filter(|s| s != "mod")
            .collect();
        let reexports = folder_reexports(dir);
        let code = without_test_items(&code_only(&std::fs::read_to_string(file).unwrap()));
        let graph = graphs.entry(parent.clone()).or_default();
        let edges = graph.entry(name.clone()).or_default();
        let line_of = |at: usize| code[..at].matches('\n').count() + 1;
        for (at, climb, after) in path_starts(&code) {
            let base = match climb {
                None => Vec::new(),
                Some(levels) => own[..own.len().saturating_sub(levels)].to_vec(),
            };
            for tail in expand_paths(after) {
                let mut full = base.clone();
                full.extend(tail);
                if full.len() <= parent.len() || full[..parent.len()] != parent[..] {
                    continue;
                }
                let head = &full[parent.len()];
                let target = if siblings.contains(head) {
                    head.clone()
                } else if let Some(from) = reexports.get(head) {
                    from.clone()
                } else {
                    continue;
                };
                if target != name {
                    edges.entry(target).or_insert(line_of(at));
                }
            }
        }
    }
    graphs
}

/// Whether the module declaring `file` declares it `#[cfg(test)]` (unit
/// tests in a file of their own): test code, which may import anything.
fn is_test_module(file: &Path) -> bool {
    let dir = file.parent().unwrap();
    let name = file.file_stem().unwrap().to_string_lossy();
    let parent = if dir == src_dir() {
        dir.join("lib.rs")
    } else {
        dir.join("mod.rs")
    };
    let Ok(text) = std::fs::read_to_string(parent) else {
        return false;
    };
    let code = code_only(&text);
    let flat: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    ["mod", "pub mod", "pub(crate) mod"]
        .iter()
        .any(|m| flat.contains(&format!("#[cfg(test)] {m} {name};")))
}

/// The circles of a graph (its strongly connected parts of more than one
/// file), each sorted.
fn circles(graph: &BTreeMap<String, BTreeMap<String, usize>>) -> Vec<Vec<String>> {
    // Files reachable both ways are one part.
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(f) = stack.pop() {
            for to in graph.get(&f).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(to.clone()) {
                    stack.push(to.clone());
                }
            }
        }
        seen
    };
    let mut parts: BTreeSet<Vec<String>> = BTreeSet::new();
    for f in graph.keys() {
        let ahead = reach(f);
        let mut part: Vec<String> = ahead
            .iter()
            .filter(|g| *g == f || reach(g).contains(f))
            .cloned()
            .collect();
        if !part.contains(f) {
            continue;
        }
        part.sort();
        if part.len() > 1 {
            parts.insert(part);
        }
    }
    parts.into_iter().collect()
}

#[test]
fn no_folder_imports_in_a_circle() {
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for (folder, graph) in folder_graphs() {
        let name = folder.join("/");
        for circle in circles(&graph) {
            let known = KNOWN_CIRCLES
                .iter()
                .position(|(f, files)| *f == name && files.iter().eq(circle.iter()));
            match known {
                Some(i) => {
                    seen.insert(i);
                }
                None => found.push(format!("src/{name}: {}", circle.join(", "))),
            }
        }
    }
    assert!(
        found.is_empty(),
        "files importing in a circle:\n{}",
        found.join("\n")
    );
    let gone: Vec<_> = (0..KNOWN_CIRCLES.len())
        .filter(|i| !seen.contains(i))
        .map(|i| KNOWN_CIRCLES[i])
        .collect();
    assert!(
        gone.is_empty(),
        "these KNOWN_CIRCLES no longer occur as listed: update tests/layers.rs: {gone:?}"
    );
}

#[test]
fn floors_import_downward() {
    let graphs = folder_graphs();
    let mut wrong = Vec::new();
    for (folder, floors) in FLOORS {
        let path: Vec<String> = folder.split('/').map(String::from).collect();
        let graph = &graphs[&path];
        let floor_of = |f: &str| floors.iter().position(|fl| fl.contains(&f));
        for file in graph.keys() {
            assert!(
                floor_of(file).is_some(),
                "src/{folder}/{file}.rs is on no floor: add it to FLOORS in tests/layers.rs"
            );
        }
        for fl in floors.iter().flat_map(|f| f.iter()) {
            assert!(
                graph.contains_key(*fl),
                "FLOORS names src/{folder}/{fl}.rs, which is gone"
            );
        }
        for (file, edges) in graph {
            for (to, line) in edges {
                if floor_of(to) > floor_of(file) {
                    wrong.push(format!(
                        "src/{folder}/{file}.rs:{line} imports {to}, a floor up"
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports running up (see FLOORS):\n{}",
        wrong.join("\n")
    );
}

/// The folder checker finds sibling imports through every path form.
#[test]
fn the_folder_checker_reads_paths() {
    assert_eq!(
        expand_paths("a::{b, c::{d, e}}::x"),
        [vec!["a", "b"], vec!["a", "c", "d"], vec!["a", "c", "e"]]
    );
    assert_eq!(
        expand_paths("tokensets::Engine;"),
        [vec!["tokensets", "Engine"]]
    );
    let graphs = folder_graphs();
    let tokensets = &graphs[&vec!["tokensets".to_string()]];
    // `use super::engine::Engine`, and `crate::tokensets::CompiledGrammar`
    // through mod.rs's re-export.
    assert!(tokensets["cached"].contains_key("engine"));
    assert!(tokensets["cached"].contains_key("grammar"));
    let mut circle = BTreeMap::new();
    circle.insert("a".to_string(), BTreeMap::from([("b".to_string(), 1)]));
    circle.insert("b".to_string(), BTreeMap::from([("a".to_string(), 1)]));
    circle.insert("c".to_string(), BTreeMap::from([("a".to_string(), 1)]));
    assert_eq!(circles(&circle), [vec!["a".to_string(), "b".to_string()]]);
}
