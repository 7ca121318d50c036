//! `cgram-bench`: measures mask times (TBM) and time to first mask (TTFM).
//!
//! ```text
//! cgram-bench gbnf --tokenizer tokenizer.json --grammar json.gbnf [--batch-threads N]
//!             [--trigger-word W]... [--trigger-pattern P]... TEXT_FILE...
//! cgram-bench maskbench --tokenizer tokenizer.json [--limit N] [--every K] [--filter PREFIX]
//!             [--compact] [--strict] [--verbose] [--per-file OUT.tsv] [--cpu-clock] [--top N] DIR
//! cgram-bench replay --tokenizer tokenizer.json [--test I] [--token N] [--repeat R] [--cpu-clock] FILE
//! cgram-bench soak --tokenizer tokenizer.json [--schemas DIR] [--pool N] [--gbnf G]... [--gbnf-json G]...
//!             [--tokens N] [--seed S] [--max-output N] [--rows N] [--warmup-percent P]
//!             [--tolerance-mb M] [--tolerance-percent P] [--cache-budget BYTES]
//!             [--lexeme-budget BYTES]
//!             [--vocab-every N] [--dump OUT.jsonl]
//! cgram-bench memory --tokenizer tokenizer.json --schemas DIR [--count N] [--budget BYTES]
//!             [--every N] [--steps N]
//! ```
//!
//! `maskbench` runs a MaskBench-format directory (see [`maskbench`]);
//! `replay` times one file's compile and masks again and again with empty
//! vocabulary caches (see [`replay`]); `soak` is a long run through the C
//! API over many grammars with resident memory sampled (see [`soak`]);
//! `memory` compiles many distinct schemas under a cache budget and prints
//! the resident-memory curve (see [`memory`]);
//! `--batch-threads N` also times `cg_fill_masks` over a batch of matchers
//! with 1 and with N threads (see [`batch`]). With `--trigger-word` or
//! `--trigger-pattern`, the matchers are lazy (llama.cpp's tool-call
//! grammars): free text until a trigger, then the grammar; the triggers
//! are compiled once, as a server's cache keeps them. `--cpu-clock` times
//! MaskBench with the thread's CPU time (as the harness in `../shared/tools`
//! does) instead of wall time.
//!
//! Each text file is tokenized with the `tokenizers` crate and walked token
//! by token: before each token the mask is filled (one TBM sample) and the
//! token must be allowed. TTFM = compile + new matcher + first mask, with a
//! fresh vocabulary cache each time (`--cold`) or the warm one. Prints
//! percentiles in microseconds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cgram::matcher::{AnyMatcher, LazyMatcher};
use cgram::trigger::{TriggerSpec, Triggers};
use cgram::{CompileOptions, Engine, Kind, Matcher, Vocab};

mod batch;
mod heap;
mod maskbench;
mod memory;
mod pyjson;
mod replay;
mod soak;

/// The `.json` files of `dir`, sorted by name; exits with a message when
/// `dir` cannot be read.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| {
            eprintln!("reading {}: {e}", dir.display());
            std::process::exit(1)
        })
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn usage() -> ! {
    eprintln!(
        "usage: cgram-bench gbnf --tokenizer T.json --grammar G.gbnf [--root NAME] [--repeat N] [--batch-threads N] [--trigger-word W]... [--trigger-pattern P]... TEXT_FILE...\n       cgram-bench maskbench --tokenizer T.json [--limit N] [--every K] [--filter PREFIX] [--compact] [--strict] [--verbose] [--per-file OUT.tsv] [--cpu-clock] [--top N] [--max-mask-steps N] [--lexeme-budget BYTES] DIR\n       cgram-bench replay --tokenizer T.json [--test I] [--token N] [--repeat R] [--cpu-clock] FILE\n       cgram-bench soak --tokenizer T.json [--schemas DIR] [--pool N] [--gbnf G]... [--gbnf-json G]... [--tokens N] [--seed S] [--max-output N] [--rows N] [--warmup-percent P] [--tolerance-mb M] [--tolerance-percent P] [--cache-budget BYTES] [--lexeme-budget BYTES] [--vocab-every N] [--dump OUT.jsonl]\n       cgram-bench memory --tokenizer T.json --schemas DIR [--count N] [--budget BYTES] [--every N] [--steps N]"
    );
    std::process::exit(2)
}

/// The number that follows option `args[i]` (usage and exit when missing
/// or not a number).
fn number_after<T: std::str::FromStr>(args: &[String], i: usize) -> T {
    text_after(args, i).parse().unwrap_or_else(|_| usage())
}

/// The text that follows option `args[i]` (usage and exit when missing).
fn text_after(args: &[String], i: usize) -> String {
    args.get(i + 1).cloned().unwrap_or_else(|| usage())
}

fn maskbench_main(args: &[String]) {
    let mut opts = maskbench::Options {
        dir: PathBuf::new(),
        tokenizer: PathBuf::new(),
        limit: None,
        every: 1,
        filter: Vec::new(),
        compact: false,
        flags: 0,
        verbose: false,
        per_file: None,
        cpu_clock: false,
        top: 20,
        max_mask_steps: None,
        lexeme_budget: None,
    };
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--tokenizer" => {
                opts.tokenizer = text_after(args, i).into();
                i += 1;
            }
            "--lexeme-budget" => {
                opts.lexeme_budget = Some(number_after(args, i));
                i += 1;
            }
            "--limit" => {
                opts.limit = Some(number_after(args, i));
                i += 1;
            }
            "--every" => {
                opts.every = number_after(args, i);
                i += 1;
            }
            "--filter" => {
                opts.filter.push(text_after(args, i));
                i += 1;
            }
            "--compact" => opts.compact = true,
            "--strict" => opts.flags |= cgram::source::FLAG_JSON_NO_EXTRA_PROPERTIES,
            "--verbose" => opts.verbose = true,
            "--cpu-clock" => opts.cpu_clock = true,
            "--per-file" => {
                opts.per_file = Some(text_after(args, i).into());
                i += 1;
            }
            "--top" => {
                opts.top = number_after(args, i);
                i += 1;
            }
            "--max-mask-steps" => {
                opts.max_mask_steps = Some(number_after::<u64>(args, i));
                i += 1;
            }
            a if a.starts_with("--") => usage(),
            a => opts.dir = a.into(),
        }
        i += 1;
    }
    if opts.dir.as_os_str().is_empty() || opts.tokenizer.as_os_str().is_empty() {
        usage();
    }
    maskbench::run(&opts);
}

fn replay_main(args: &[String]) {
    let mut opts = replay::Options {
        tokenizer: PathBuf::new(),
        file: PathBuf::new(),
        test: 0,
        token: None,
        repeat: 5,
        cpu_clock: false,
    };
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--tokenizer" => {
                opts.tokenizer = text_after(args, i).into();
                i += 1;
            }
            "--test" => {
                opts.test = number_after(args, i);
                i += 1;
            }
            "--token" => {
                opts.token = Some(number_after(args, i));
                i += 1;
            }
            "--repeat" => {
                opts.repeat = number_after(args, i);
                i += 1;
            }
            "--cpu-clock" => opts.cpu_clock = true,
            a if a.starts_with("--") => usage(),
            a => opts.file = a.into(),
        }
        i += 1;
    }
    if opts.file.as_os_str().is_empty() || opts.tokenizer.as_os_str().is_empty() {
        usage();
    }
    replay::run(&opts);
}

fn soak_main(args: &[String]) {
    let mut opts = soak::Options::default();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--tokenizer" => opts.tokenizer = text_after(args, i).into(),
            "--schemas" => opts.schemas = Some(text_after(args, i).into()),
            "--pool" => opts.pool = number_after(args, i),
            "--gbnf" => opts.gbnf.push(text_after(args, i).into()),
            "--gbnf-json" => opts.gbnf_json.push(text_after(args, i).into()),
            "--tokens" => opts.tokens = number_after(args, i),
            "--seed" => opts.seed = number_after(args, i),
            "--max-output" => opts.max_output = number_after(args, i),
            "--rows" => opts.rows = number_after(args, i),
            "--warmup-percent" => opts.warmup_percent = number_after(args, i),
            "--tolerance-mb" => opts.tolerance_mb = number_after(args, i),
            "--tolerance-percent" => opts.tolerance_percent = number_after(args, i),
            "--cache-budget" => opts.cache_budget = number_after(args, i),
            "--lexeme-budget" => opts.lexeme_budget = Some(number_after(args, i)),
            "--vocab-every" => opts.vocab_every = number_after(args, i),
            "--dump" => opts.dump = Some(text_after(args, i).into()),
            _ => usage(),
        }
        i += 2;
    }
    if opts.tokenizer.as_os_str().is_empty() || opts.max_output == 0 {
        usage();
    }
    std::process::exit(soak::run(&opts));
}

fn memory_main(args: &[String]) {
    let mut opts = memory::Options {
        tokenizer: PathBuf::new(),
        schemas: PathBuf::new(),
        count: 20_000,
        budget: 256 << 20,
        every: 500,
        steps: 8,
    };
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--tokenizer" => opts.tokenizer = text_after(args, i).into(),
            "--schemas" => opts.schemas = text_after(args, i).into(),
            "--count" => opts.count = number_after(args, i),
            "--budget" => opts.budget = number_after(args, i),
            "--every" => opts.every = number_after::<usize>(args, i).max(1),
            "--steps" => opts.steps = number_after(args, i),
            _ => usage(),
        }
        i += 2;
    }
    if opts.tokenizer.as_os_str().is_empty() || opts.schemas.as_os_str().is_empty() {
        usage();
    }
    memory::run(&opts);
}

/// Microseconds on a clock: the thread's CPU time with `cpu` (what a
/// shared, noisy machine does not inflate by preempting the thread; each
/// reading is a system call), else monotonic wall time.
pub fn clock_us(cpu: bool) -> f64 {
    if cpu {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 * 1e6 + ts.tv_nsec as f64 / 1e3
    } else {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_secs_f64()
            * 1e6
    }
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * p / 100.0) as usize).min(sorted.len() - 1);
    sorted[i]
}

pub fn print_stats(name: &str, mut v: Vec<f64>) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{name:<9} n={:<7} p50={:>9.2} p90={:>9.2} p99={:>9.2} p99.9={:>9.2} max={:>9.2} (us) sum={:.0} ms",
        v.len(),
        percentile(&v, 50.0),
        percentile(&v, 90.0),
        percentile(&v, 99.0),
        percentile(&v, 99.9),
        v.last().copied().unwrap_or(f64::NAN),
        v.iter().sum::<f64>() / 1e3
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gbnf") => {}
        Some("maskbench") => return maskbench_main(&args[1..]),
        Some("replay") => return replay_main(&args[1..]),
        Some("soak") => return soak_main(&args[1..]),
        Some("memory") => return memory_main(&args[1..]),
        _ => usage(),
    }
    let mut tokenizer = None;
    let mut grammar = None;
    let mut root = None;
    let mut repeat = 1usize;
    let mut batch_threads = 0u32;
    let mut triggers: Vec<TriggerSpec> = Vec::new();
    let mut texts: Vec<PathBuf> = Vec::new();
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--tokenizer" => {
                tokenizer = args.get(i + 1).cloned();
                i += 1;
            }
            "--grammar" => {
                grammar = args.get(i + 1).cloned();
                i += 1;
            }
            "--root" => {
                root = args.get(i + 1).cloned();
                i += 1;
            }
            "--repeat" => {
                repeat = number_after(&args, i);
                i += 1;
            }
            "--batch-threads" => {
                batch_threads = number_after(&args, i);
                i += 1;
            }
            "--trigger-word" => {
                triggers.push(TriggerSpec::Word(text_after(&args, i)));
                i += 1;
            }
            "--trigger-pattern" => {
                triggers.push(TriggerSpec::Pattern(text_after(&args, i)));
                i += 1;
            }
            a if a.starts_with("--") => usage(),
            a => texts.push(a.into()),
        }
        i += 1;
    }
    let (Some(tokenizer), Some(grammar)) = (tokenizer, grammar) else {
        usage()
    };
    let t0 = Instant::now();
    let engine = Engine::new(
        Vocab::from_tokenizer_json(tokenizer.as_ref()).unwrap_or_else(|e| {
            eprintln!("loading {tokenizer}: {e}");
            std::process::exit(1)
        }),
    );
    println!(
        "vocab: {} tokens, loaded in {:.1} ms",
        engine.vocab().len(),
        t0.elapsed().as_secs_f64() * 1000.0
    );
    let tok = tokenizers::Tokenizer::from_file(&tokenizer).unwrap_or_else(|e| {
        eprintln!("tokenizers: {e}");
        std::process::exit(1)
    });
    let source = std::fs::read(&grammar).unwrap_or_else(|e| {
        eprintln!("reading {grammar}: {e}");
        std::process::exit(1)
    });
    let options = CompileOptions {
        kind: Kind::Gbnf,
        root,
        ..Default::default()
    };
    let encoded: Vec<(PathBuf, Vec<u32>)> = texts
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_else(|e| {
                eprintln!("reading {}: {e}", p.display());
                std::process::exit(1)
            });
            let ids = tok.encode(text, false).unwrap().get_ids().to_vec();
            (p.clone(), ids)
        })
        .collect();
    let triggers = (!triggers.is_empty()).then(|| {
        Arc::new(Triggers::new(&engine, &triggers).unwrap_or_else(|e| {
            eprintln!("triggers: {e}");
            std::process::exit(1)
        }))
    });
    let matcher = |g: &Arc<cgram::CompiledGrammar>| match &triggers {
        None => AnyMatcher::Eager(Matcher::new(g.clone())),
        Some(t) => AnyMatcher::Lazy(Box::new(LazyMatcher::new(g.clone(), t.clone()).unwrap())),
    };
    let mut ttfm = Vec::new();
    let mut tbm = Vec::new();
    // (microseconds, text index, token index) of every mask of the first round.
    let mut slow: Vec<(f64, usize, usize)> = Vec::new();
    let mut mask = vec![0u32; engine.vocab().mask_words()];
    for round in 0..repeat {
        let t = Instant::now();
        let g = cgram::compile(&engine, &source, &options).unwrap_or_else(|e| {
            eprintln!("compiling {grammar}: {e}");
            std::process::exit(1)
        });
        let mut m = matcher(&g);
        m.fill_mask(&mut mask).unwrap();
        ttfm.push(t.elapsed().as_secs_f64() * 1e6);
        if round == 0 {
            println!(
                "grammar: {} states, {} bytes",
                g.automaton().num_states(),
                g.memory()
            );
        }
        for (ti, (path, ids)) in encoded.iter().enumerate() {
            let mut m = matcher(&g);
            for (k, &id) in ids.iter().enumerate() {
                let t = Instant::now();
                m.fill_mask(&mut mask).unwrap();
                let us = t.elapsed().as_secs_f64() * 1e6;
                tbm.push(us);
                if round == 0 {
                    slow.push((us, ti, k));
                }
                if mask[(id / 32) as usize] >> (id % 32) & 1 == 0 {
                    eprintln!("{}: token {k} ({id}) not in the mask", path.display());
                    std::process::exit(1);
                }
                m.accept(id).unwrap();
            }
            if !m.is_accepting() {
                eprintln!("{}: not accepting at the end", path.display());
                std::process::exit(1);
            }
        }
    }
    println!(
        "texts: {}, tokens per round: {}",
        encoded.len(),
        encoded.iter().map(|e| e.1.len()).sum::<usize>()
    );
    print_stats("TTFM", ttfm);
    print_stats("TBM", tbm);
    slow.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    println!("slowest masks of the first round:");
    for &(us, ti, k) in slow.iter().take(8) {
        let (path, ids) = &encoded[ti];
        let before = tok
            .decode(&ids[k.saturating_sub(6)..k], false)
            .unwrap_or_default();
        println!(
            "  {us:>9.1} us  {} token {k} after {before:?}",
            path.display()
        );
    }
    if batch_threads > 0 {
        let ids: Vec<&[u32]> = encoded.iter().map(|e| e.1.as_slice()).collect();
        batch::run(&tokenizer, &source, &ids, batch_threads);
    }
}
