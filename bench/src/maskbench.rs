//! The MaskBench runner: every schema of a MaskBench-format directory is
//! compiled, every instance serialized as MaskBench does (Python
//! `json.dumps`), tokenized, and walked token by token through
//! `fill_mask` / `accept`; prints correctness counts and TBM/TTFM
//! percentiles.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cgram::{CompileOptions, Engine, Kind, Matcher, Vocab};
use serde_json::value::RawValue;

use crate::{print_stats, pyjson};

pub struct Options {
    pub dir: PathBuf,
    pub tokenizer: PathBuf,
    pub limit: Option<usize>,
    /// Take every `every`-th file (a sample across the directory).
    pub every: usize,
    pub filter: Vec<String>,
    pub compact: bool,
    pub flags: u32,
    pub verbose: bool,
    /// Where to write one line per compiled schema (file, compile us, first
    /// mask us, tokens walked, slowest mask us), tab-separated.
    pub per_file: Option<PathBuf>,
    /// Time with the thread's CPU clock (see [`crate::clock_us`]).
    pub cpu_clock: bool,
    /// How many of the slowest masks and compilations to list.
    pub top: usize,
    /// The grammars' `max_mask_steps` (how much of the budget real
    /// schemas use: masks over it count as errors).
    pub max_mask_steps: Option<u64>,
    /// The vocabulary's lexeme cache budget in bytes (default: the
    /// library's).
    pub lexeme_budget: Option<usize>,
}

#[derive(Default)]
struct Totals {
    schemas: usize,
    compiled: usize,
    passing: usize,
    compile_errors: BTreeMap<String, usize>,
    validation_errors: usize,
    invalidation_errors: usize,
    failed_files: Vec<String>,
    ttfm_us: Vec<f64>,
    /// TTFM's two parts: `compile`, then a new matcher and its first mask.
    compile_us: Vec<f64>,
    first_mask_us: Vec<f64>,
    /// Bytes per compiled grammar (`CompiledGrammar::memory`), and per
    /// matcher at the end of each instance (`Matcher::memory`).
    grammar_bytes: Vec<f64>,
    matcher_bytes: Vec<f64>,
    tbm_us: Vec<f64>,
    tokens: usize,
    /// The slowest masks: (us, file, test, token index).
    slow_masks: Vec<(f64, String, usize, usize)>,
    /// The slowest compilations: (us, file).
    slow_compiles: Vec<(f64, String)>,
    /// Lines of `Options::per_file`.
    per_file: String,
}

/// Keeps the `n` largest entries (by their first field).
fn keep_top<T>(v: &mut Vec<T>, n: usize, key: impl Fn(&T) -> f64) {
    if v.len() > 4 * n {
        v.sort_by(|a, b| key(b).partial_cmp(&key(a)).unwrap());
        v.truncate(n);
    }
}

/// The reason of a compile error without its particulars (names, pointers,
/// numbers), for grouping.
fn reason(msg: &str) -> String {
    let mut out = String::new();
    let mut in_quote = false;
    for c in msg.chars() {
        match c {
            '"' | '\'' | '`' => {
                in_quote = !in_quote;
                if in_quote {
                    out.push('…');
                }
            }
            _ if in_quote => {}
            '0'..='9' => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            _ => out.push(c),
        }
    }
    let mut words: Vec<&str> = out
        .split_whitespace()
        .filter(|w| !w.starts_with('/') && !w.starts_with("#/"))
        .collect();
    words.truncate(14);
    words.join(" ")
}

fn files(opts: &Options) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = crate::json_files(&opts.dir)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            opts.filter.is_empty() || opts.filter.iter().any(|f| name.starts_with(f.as_str()))
        })
        .collect();
    if opts.every > 1 {
        v = v.into_iter().step_by(opts.every).collect();
    }
    if let Some(n) = opts.limit {
        v.truncate(n);
    }
    v
}

pub fn run(opts: &Options) {
    let t0 = Instant::now();
    let engine = Engine::new(
        Vocab::from_tokenizer_json(&opts.tokenizer).unwrap_or_else(|e| {
            eprintln!("loading {}: {e}", opts.tokenizer.display());
            std::process::exit(1)
        }),
    );
    if let Some(b) = opts.lexeme_budget {
        engine.set_cache_budget(b);
    }
    println!(
        "vocab: {} tokens, loaded in {:.1} ms",
        engine.vocab().len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    let tok = tokenizers::Tokenizer::from_file(&opts.tokenizer).unwrap_or_else(|e| {
        eprintln!("tokenizers: {e}");
        std::process::exit(1)
    });
    let mut t = Totals::default();
    let mut mask = vec![0u32; engine.vocab().mask_words()];
    let files = files(opts);
    for (k, path) in files.iter().enumerate() {
        if k % 500 == 0 && k > 0 {
            eprintln!("[{k}/{}]", files.len());
        }
        run_file(path, opts, &engine, &tok, &mut mask, &mut t);
    }
    println!(
        "schemas: {}  compiled: {}  passing: {} ({:.1}%)  compile errors: {}  validation errors: {}  invalidation errors: {}",
        t.schemas,
        t.compiled,
        t.passing,
        100.0 * t.passing as f64 / t.schemas.max(1) as f64,
        t.schemas - t.compiled,
        t.validation_errors,
        t.invalidation_errors
    );
    println!("tokens walked: {}", t.tokens);
    print_stats("TTFM", t.ttfm_us);
    print_stats(" compile", t.compile_us);
    print_stats(" 1st mask", t.first_mask_us);
    print_bytes("grammar", t.grammar_bytes);
    print_bytes("matcher", t.matcher_bytes);
    let over = |ms: f64| t.tbm_us.iter().filter(|&&us| us >= ms * 1000.0).count();
    println!(
        "TBM tail: {} masks >= 1 ms, {} >= 2 ms, {} >= 3 ms, {} >= 5 ms",
        over(1.0),
        over(2.0),
        over(3.0),
        over(5.0)
    );
    print_stats("TBM", t.tbm_us);
    let c = engine.cache_stats();
    println!(
        "lexeme cache: {} lexemes, {} parts, {:.1} of {:.1} MiB, {} evictions",
        c.lexemes,
        c.parts,
        c.bytes as f64 / (1 << 20) as f64,
        c.budget as f64 / (1 << 20) as f64,
        c.evictions
    );
    let mut errs: Vec<(&String, &usize)> = t.compile_errors.iter().collect();
    errs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    println!("compile errors by reason:");
    for (r, n) in errs {
        println!("  {n:>5}  {r}");
    }
    t.slow_compiles
        .sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    println!("slowest compilations (TTFM):");
    for (us, f) in t.slow_compiles.iter().take(opts.top) {
        println!("  {us:>12.0} us  {f}");
    }
    t.slow_masks.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    println!("slowest masks:");
    for (us, f, test, k) in t.slow_masks.iter().take(opts.top) {
        println!("  {us:>12.0} us  {f} test {test} token {k}");
    }
    if let Some(path) = &opts.per_file {
        if let Err(e) = std::fs::write(path, &t.per_file) {
            eprintln!("writing {}: {e}", path.display());
        }
    }
    if !t.failed_files.is_empty() {
        println!("schemas with validation/invalidation errors:");
        for f in &t.failed_files {
            println!("  {f}");
        }
    }
}

/// A MaskBench file: its schema's text and its instances, each serialized
/// (Python `json.dumps`, or compact with `compact`) and tokenized.
pub struct MaskBenchFile {
    pub schema: String,
    /// (valid, token ids) per instance.
    pub instances: Vec<(bool, Vec<u32>)>,
}

/// Reads and tokenizes a MaskBench file (before any timing); an instance
/// that cannot be serialized is left out with a message.
pub fn load_file(
    path: &Path,
    compact: bool,
    tok: &tokenizers::Tokenizer,
) -> Result<MaskBenchFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let top = serde_json::from_str::<HashMap<String, Box<RawValue>>>(&text)
        .map_err(|_| "not a MaskBench file".to_string())?;
    let schema = top.get("schema").ok_or("no schema")?.get().to_string();
    let tests: Vec<HashMap<String, Box<RawValue>>> = top
        .get("tests")
        .and_then(|t| serde_json::from_str(t.get()).ok())
        .unwrap_or_default();
    let mut instances = Vec::new();
    for test in &tests {
        let valid = test.get("valid").is_some_and(|v| v.get() == "true");
        let Some(data) = test.get("data") else {
            continue;
        };
        let rendered = if compact {
            serde_json::from_str::<serde_json::Value>(data.get())
                .map(|v| v.to_string())
                .map_err(|e| e.to_string())
        } else {
            pyjson::dumps(data.get())
        };
        let rendered = match rendered {
            Ok(r) => r,
            Err(e) => {
                // As MaskBench does: the instance is left out, not the file.
                eprintln!("{}: cannot serialize an instance: {e}", path.display());
                continue;
            }
        };
        let ids = tok.encode(rendered, false).unwrap().get_ids().to_vec();
        instances.push((valid, ids));
    }
    Ok(MaskBenchFile { schema, instances })
}

fn run_file(
    path: &Path,
    opts: &Options,
    engine: &Arc<Engine>,
    tok: &tokenizers::Tokenizer,
    mask: &mut [u32],
    t: &mut Totals,
) {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let file = match load_file(path, opts.compact, tok) {
        Ok(f) => f,
        Err(e) => {
            if opts.verbose {
                eprintln!("{name}: {e}");
            }
            return;
        }
    };
    let (schema, instances) = (file.schema, file.instances);
    t.schemas += 1;
    let mut options = CompileOptions {
        kind: Kind::JsonSchema,
        flags: opts.flags,
        ..Default::default()
    };
    if let Some(steps) = opts.max_mask_steps {
        options.max_mask_steps = steps;
    }
    let cpu = opts.cpu_clock;
    let start = crate::clock_us(cpu);
    let grammar = match cgram::compile(engine, schema.as_bytes(), &options) {
        Ok(g) => g,
        Err(e) => {
            if opts.verbose {
                eprintln!("{name}: compile error: {e}");
            }
            *t.compile_errors.entry(reason(e.message())).or_default() += 1;
            return;
        }
    };
    let compiled = crate::clock_us(cpu) - start;
    let mut m = Matcher::new(grammar.clone());
    if let Err(e) = m.fill_mask(mask) {
        *t.compile_errors.entry(reason(e.message())).or_default() += 1;
        return;
    }
    let ttfm = crate::clock_us(cpu) - start;
    t.ttfm_us.push(ttfm);
    t.compile_us.push(compiled);
    t.grammar_bytes.push(grammar.memory() as f64);
    t.first_mask_us.push(ttfm - compiled);
    t.slow_compiles.push((ttfm, name.clone()));
    keep_top(&mut t.slow_compiles, opts.top, |x| x.0);
    t.compiled += 1;
    let mut ok = true;
    let tokens_before = t.tokens;
    let mut slowest_mask = 0f64;
    for (i, (valid, ids)) in instances.iter().enumerate() {
        let mut m = Matcher::new(grammar.clone());
        let mut accepted_all = true;
        let mut stopped_at = ids.len();
        for (k, &id) in ids.iter().enumerate() {
            let s = crate::clock_us(cpu);
            let r = m.fill_mask(mask);
            let us = crate::clock_us(cpu) - s;
            t.tbm_us.push(us);
            slowest_mask = slowest_mask.max(us);
            if us > 100.0 {
                t.slow_masks.push((us, name.clone(), i, k));
                keep_top(&mut t.slow_masks, opts.top, |x| x.0);
            }
            t.tokens += 1;
            if r.is_err() || mask[(id / 32) as usize] >> (id % 32) & 1 == 0 {
                accepted_all = false;
                stopped_at = k;
                break;
            }
            if m.accept(id).is_err() {
                // The mask allowed a token that accept refuses: an engine bug.
                eprintln!("{name}: test {i}: mask allowed token {id} that accept refused");
                accepted_all = false;
                break;
            }
        }
        t.matcher_bytes.push(m.memory() as f64);
        let passed = accepted_all && m.is_accepting();
        if *valid && !passed {
            t.validation_errors += 1;
            ok = false;
            if opts.verbose {
                eprintln!(
                    "{name}: test {i}: valid instance rejected {}",
                    rejection_context(tok, ids, stopped_at)
                );
            }
        } else if !*valid && passed {
            t.invalidation_errors += 1;
            ok = false;
            if opts.verbose {
                eprintln!("{name}: test {i}: invalid instance accepted");
            }
        }
    }
    if opts.per_file.is_some() {
        use std::fmt::Write;
        let _ = writeln!(
            t.per_file,
            "{name}\t{compiled:.0}\t{:.0}\t{}\t{slowest_mask:.0}",
            ttfm - compiled,
            t.tokens - tokens_before
        );
    }
    if ok {
        t.passing += 1;
    } else {
        t.failed_files.push(name);
    }
}

/// Percentiles of a byte count.
fn print_bytes(name: &str, mut v: Vec<f64>) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{name:<9} n={:<7} p50={:>9.0} p90={:>9.0} p99={:>9.0} max={:>9.0} (bytes)",
        v.len(),
        crate::percentile(&v, 50.0),
        crate::percentile(&v, 90.0),
        crate::percentile(&v, 99.0),
        v.last().copied().unwrap_or(f64::NAN)
    );
}

/// Where a walk stopped, for `--verbose`: the text before the refused token
/// (its last 80 characters) and the token, or "at the end".
fn rejection_context(tok: &tokenizers::Tokenizer, ids: &[u32], stopped_at: usize) -> String {
    if stopped_at >= ids.len() {
        return "at the end (not accepting)".to_string();
    }
    let before = tok.decode(&ids[..stopped_at], false).unwrap_or_default();
    let tail: String = {
        let chars: Vec<char> = before.chars().collect();
        chars[chars.len().saturating_sub(80)..].iter().collect()
    };
    let token = tok
        .decode(&ids[stopped_at..=stopped_at], false)
        .unwrap_or_default();
    format!("at token {stopped_at}: ...{tail:?} then {token:?}")
}
