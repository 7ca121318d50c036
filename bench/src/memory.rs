//! `cgram-bench memory`: the resident memory of one process that compiles
//! many distinct schemas on one vocabulary, as a server that never sees
//! the same schema twice does, under a cache budget.
//!
//! The schemas are a MaskBench directory's, cycled: round `r` (0 first)
//! takes every schema with its constants changed by `r` (property names
//! and string `const`/`enum` values get a suffix, `maxLength`,
//! `minLength`, `maxItems`, `minItems`, `maximum` and `minimum` grow by
//! `r`), so that each round's grammars and most of their lexemes are new.
//! Each schema is compiled, a matcher made and walked a few tokens (each
//! step fills a mask and accepts its lowest allowed token), so that the
//! token-set caches learn as they do in use; then everything is dropped.
//!
//! Every `--every` schemas a row prints the resident size, the heap bytes
//! in use (a build without the `mimalloc` feature counts them), the
//! engine's cache and its evictions. Resident memory must stay under the
//! budget plus a constant: the vocabulary, the allocator's reserve and
//! the largest single compile.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cgram::{CompileOptions, Engine, Kind, Matcher, Vocab};
use serde_json::Value;

pub struct Options {
    pub tokenizer: PathBuf,
    pub schemas: PathBuf,
    /// Schemas to compile in all.
    pub count: usize,
    /// The engine's cache budget in bytes.
    pub budget: usize,
    /// A row every this many schemas.
    pub every: usize,
    /// Tokens walked per schema.
    pub steps: usize,
}

const MB: f64 = 1024.0 * 1024.0;

/// The schema `v` with its constants changed by `round` (unchanged for
/// round 0).
fn varied(v: &Value, round: usize) -> Value {
    if round == 0 {
        return v.clone();
    }
    let suffix = format!("_{round}");
    match v {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, x) in m {
                let x = match k.as_str() {
                    "properties" | "patternProperties" => match x {
                        Value::Object(props) => Value::Object(
                            props
                                .iter()
                                .map(|(name, s)| {
                                    let name = if k == "properties" {
                                        format!("{name}{suffix}")
                                    } else {
                                        name.clone()
                                    };
                                    (name, varied(s, round))
                                })
                                .collect(),
                        ),
                        other => varied(other, round),
                    },
                    "required" | "const" | "enum" => with_suffix(x, &suffix),
                    "maxLength" | "minLength" | "maxItems" | "minItems" | "maximum" | "minimum" => {
                        match x.as_u64() {
                            Some(n) => Value::from(n + round as u64),
                            None => x.clone(),
                        }
                    }
                    _ => varied(x, round),
                };
                out.insert(k.clone(), x);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|x| varied(x, round)).collect()),
        other => other.clone(),
    }
}

/// String constants (and required names) with `suffix` appended, inside
/// arrays too.
fn with_suffix(v: &Value, suffix: &str) -> Value {
    match v {
        Value::String(s) => Value::String(format!("{s}{suffix}")),
        Value::Array(items) => Value::Array(items.iter().map(|x| with_suffix(x, suffix)).collect()),
        other => other.clone(),
    }
}

/// The `schema` of every readable MaskBench file of `dir` as JSON text,
/// sorted by name (text, not parsed values: the pool stays small beside
/// what is measured).
fn schemas(dir: &Path) -> Vec<String> {
    crate::json_files(dir)
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).ok()?;
            let file: Value = serde_json::from_str(&text).ok()?;
            file.get("schema").map(Value::to_string)
        })
        .collect()
}

pub fn run(opts: &Options) {
    let engine = Engine::new(
        Vocab::from_tokenizer_json(&opts.tokenizer).unwrap_or_else(|e| {
            eprintln!("loading {}: {e}", opts.tokenizer.display());
            std::process::exit(1)
        }),
    );
    engine.set_cache_budget(opts.budget);
    let pool = schemas(&opts.schemas);
    if pool.is_empty() {
        eprintln!("no MaskBench files in {}", opts.schemas.display());
        std::process::exit(1);
    }
    let options = CompileOptions {
        kind: Kind::JsonSchema,
        ..CompileOptions::default()
    };
    println!(
        "budget {:.0} MiB, {} schemas ({} files, {} rounds), {} tokens walked each",
        opts.budget as f64 / MB,
        opts.count,
        pool.len(),
        opts.count.div_ceil(pool.len()),
        opts.steps
    );
    println!(
        "schemas\tcompiled\trss_mb\tpeak_rss_mb\theap_mb\tcache_mb\tlexemes\tevictions\tseconds"
    );
    let start = Instant::now();
    let mut mask = vec![0u32; engine.vocab().mask_words()];
    let mut compiled = 0usize;
    let mut peak = 0f64;
    let row = |done: usize, compiled: usize, peak: &mut f64| {
        let rss = crate::soak::rss_bytes() as f64 / MB;
        *peak = peak.max(rss);
        let heap =
            crate::heap::live_bytes().map_or("-".to_string(), |b| format!("{:.1}", b as f64 / MB));
        let c = engine.cache_stats();
        println!(
            "{}\t{}\t{:.1}\t{:.1}\t{}\t{:.1}\t{}\t{}\t{:.0}",
            done,
            compiled,
            rss,
            crate::soak::peak_rss_bytes() as f64 / MB,
            heap,
            c.bytes as f64 / MB,
            c.lexemes,
            c.evictions,
            start.elapsed().as_secs_f64()
        );
    };
    // Before any schema: the vocabulary, its string tables and the pool.
    row(0, 0, &mut peak);
    for i in 0..opts.count {
        let round = i / pool.len();
        let text = if round == 0 {
            pool[i % pool.len()].clone()
        } else {
            let schema: Value =
                serde_json::from_str(&pool[i % pool.len()]).expect("the pool holds JSON");
            varied(&schema, round).to_string()
        };
        if let Ok(g) = cgram::compile(&engine, text.as_bytes(), &options) {
            compiled += 1;
            let mut m = Matcher::new(g);
            for _ in 0..opts.steps {
                if m.fill_mask(&mut mask).is_err() {
                    break;
                }
                let Some(t) = lowest_allowed(&mask, engine.vocab().len()) else {
                    break;
                };
                if m.accept(t).is_err() || m.is_terminated() {
                    break;
                }
            }
        }
        if (i + 1) % opts.every == 0 || i + 1 == opts.count {
            row(i + 1, compiled, &mut peak);
        }
    }
    println!("largest resident size sampled: {peak:.1} MiB");
}

/// The lowest token id the mask allows.
fn lowest_allowed(mask: &[u32], n: usize) -> Option<u32> {
    mask.iter().enumerate().find_map(|(w, &bits)| {
        (bits != 0)
            .then(|| (w * 32) as u32 + bits.trailing_zeros())
            .filter(|&t| (t as usize) < n)
    })
}
