//! `cgram-bench soak`: a long run through the C API (the `extern "C"`
//! functions of `cgram::ffi`, as a C host calls them), with resident memory
//! sampled as it goes.
//!
//! Sessions follow one another until the token budget is spent. Each takes
//! the next source of a seeded shuffle of: a pool of MaskBench schemas
//! (`--pool`, spread evenly over the sorted directory; a quarter each
//! compiled with `CG_JSON_COMPACT`, `CG_JSON_NO_EXTRA_PROPERTIES` or at
//! most 2 whitespace characters in a row), any JSON (plain and compact),
//! the GBNF files given, three regexes and a lazy tool-call grammar with a
//! word trigger. A session compiles its grammar (a quarter of them through
//! a `cg_grammar_cache` with a small budget, so that it evicts), generates
//! one to four outputs with matchers created, reset and freed, then frees
//! everything. Nothing outlives a session but the vocabulary and the
//! grammar cache.
//!
//! Each token is drawn at random from the mask (seeded, reproducible),
//! biased to finish: EOS when allowed, with a probability that rises with
//! the length; else, with rising probability, for JSON a token that ends
//! the string or closes containers and opens nothing, or a separator (a
//! small JSON lexer reads where the output is); for other languages a token
//! with a separator or closing character; else half the time a token whose
//! text occurs in the source (so that required properties get written);
//! else mostly a token that is not all whitespace. Outputs are capped
//! (`--max-output`) and the capped ones counted. Now and then the walk
//! rolls back a few tokens, clones the matcher (and goes on with either
//! copy), resets it, takes the forced tokens (`cg_forced_tokens`), or
//! offers a token the mask refuses.
//!
//! Checked at every step (a failure is reported and counted, the output
//! abandoned, and the run exits with 1): the mask leaves the word past
//! `cg_mask_words` alone and no bit past the vocabulary; some token is
//! allowed; EOS is allowed exactly when `cg_is_accepting`; a terminated
//! matcher allows EOS only; the chosen token (forced ones included) is in
//! the mask and `cg_accept` takes it; a refused token is rejected and
//! leaves the mask as it was; after a rollback or a reset the mask is the
//! one seen at that point before; a clone's mask is its original's.
//! Checked on every completed output (EOS accepted): `cg_is_terminated`;
//! a fresh matcher takes its bytes (`cg_accept_bytes`) and accepts; JSON
//! kinds (schemas, any JSON, `--gbnf-json` grammars) parse (`serde_json`'s
//! syntax check); regex outputs match in full under `regex-automata`; the
//! tool call after the trigger parses as an object with a `name` and
//! `arguments`. No JSON Schema validator is a dependency: `--dump FILE`
//! writes each schema output (JSON lines) for `scripts/lib/soak_validate.py`
//! (Python `jsonschema`, which `scripts/llama-server-e2e.sh` already uses);
//! `scripts/soak.sh` runs both.
//!
//! Resident memory (`/proc/self/statm`) is sampled every `tokens / rows`
//! tokens into a table, with the live heap bytes when the binary is built
//! without mimalloc (see `heap`). The verdict compares the end with the
//! first sample at or past the warm-up (`--warmup-percent` of the tokens,
//! default 10): the growth may be at most `--tolerance-mb` (16) or
//! `--tolerance-percent` (2) of the warm size, whichever is larger. 16 MB is
//! the grammar cache's default budget here, the largest thing that may
//! legitimately change size after the warm-up (it is full by then and its
//! entries keep changing); 2% allows for the allocator's page-level
//! fragmentation on a large heap. Sessions that raise the resident size by
//! 4 MB or more are listed. `--vocab-every N` frees and reloads the
//! vocabulary every N sessions, which empties its caches: growth that
//! stops with it is in those caches.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ffi::{CStr, CString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::ptr::null_mut;
use std::time::Instant;

use cgram::ffi::*;
use regex_automata::dfa::{dense, Automaton};
use regex_automata::Input;
use serde_json::value::RawValue;
use serde_json::Value;

pub struct Options {
    pub tokenizer: PathBuf,
    /// A MaskBench-format directory; `pool` of its schemas are cycled.
    pub schemas: Option<PathBuf>,
    pub pool: usize,
    /// GBNF files whose outputs are only checked by the matcher itself.
    pub gbnf: Vec<PathBuf>,
    /// GBNF files whose outputs must also parse as JSON.
    pub gbnf_json: Vec<PathBuf>,
    pub tokens: u64,
    pub seed: u64,
    /// Tokens per output at most (EOS included).
    pub max_output: usize,
    /// Rows of the memory table (samples after the start).
    pub rows: u64,
    pub warmup_percent: f64,
    pub tolerance_mb: f64,
    pub tolerance_percent: f64,
    pub dump: Option<PathBuf>,
    /// The grammar cache's budget in bytes.
    pub cache_budget: usize,
    /// `cg_vocab_set_cache_budget`, when given.
    pub lexeme_budget: Option<usize>,
    /// Free and reload the vocabulary every this many sessions (0: never).
    pub vocab_every: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tokenizer: PathBuf::new(),
            schemas: None,
            pool: 200,
            gbnf: Vec::new(),
            gbnf_json: Vec::new(),
            tokens: 1_000_000,
            seed: 1,
            max_output: 256,
            rows: 40,
            warmup_percent: 10.0,
            tolerance_mb: 16.0,
            tolerance_percent: 2.0,
            dump: None,
            cache_budget: 16 << 20,
            lexeme_budget: None,
            vocab_every: 0,
        }
    }
}

// ---------------------------------------------------------------------------
// A seeded generator (SplitMix64).

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

// ---------------------------------------------------------------------------
// Handles of the C API, freed on drop.

fn last_error() -> String {
    // SAFETY: cg_last_error never returns NULL.
    unsafe { CStr::from_ptr(cg_last_error()) }
        .to_string_lossy()
        .into_owned()
}

struct Vocab(*mut cg_vocab);
struct Grammar(*mut cg_grammar);
struct Matcher(*mut cg_matcher);
struct Triggers(*mut cg_triggers);
struct Cache(*mut cg_grammar_cache);

impl Drop for Vocab {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { cg_vocab_free(self.0) }
    }
}
impl Drop for Grammar {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { cg_free(self.0) }
    }
}
impl Drop for Matcher {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { cg_matcher_free(self.0) }
    }
}
impl Drop for Triggers {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { cg_triggers_free(self.0) }
    }
}
impl Drop for Cache {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { cg_grammar_cache_free(self.0) }
    }
}

impl Vocab {
    fn set_lexeme_budget(&self, budget: Option<usize>) {
        if let Some(b) = budget {
            // SAFETY: a live vocabulary.
            unsafe { cg_vocab_set_cache_budget(self.0, b) };
        }
    }
}

fn load_vocab(path: &Path) -> Vocab {
    let c = CString::new(path.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    let v = unsafe { cg_vocab_from_tokenizer_json(c.as_ptr()) };
    if v.is_null() {
        eprintln!("loading {}: {}", path.display(), last_error());
        std::process::exit(1);
    }
    Vocab(v)
}

// ---------------------------------------------------------------------------
// Sources.

/// What a completed output is checked against, beyond the matcher.
enum Check {
    /// Must parse as JSON.
    Json,
    /// Must match this (anchored at both ends) in full.
    Regex(Box<dense::DFA<Vec<u32>>>),
    /// `<tool_call>` then a JSON object with `name` and `arguments`.
    ToolCall,
    /// Nothing more (the grammar's own language).
    Language,
}

struct Source {
    name: String,
    kind: u32,
    text: String,
    flags: u32,
    max_ws: u32,
    check: Check,
    lazy: bool,
    /// The MaskBench file of a schema (for `--dump`).
    schema_file: Option<PathBuf>,
    /// The tokens whose text occurs in the source (property names, enum
    /// values, literals), filled in by [`source_tokens`].
    words: Vec<u32>,
}

/// The lazy grammar: a tool call in a fixed shape, arguments nested.
const TOOL_CALL_GBNF: &str = r#"root ::= "<tool_call>" "\n"? "{\"name\": \"" [a-z_]{1,24} "\", \"arguments\": " obj "}"
obj ::= "{" ( pair ( ", " pair ){0,4} )? "}"
pair ::= "\"" [a-z_]{1,12} "\": " val
val ::= "-"? [0-9]{1,6} | "\"" [a-zA-Z0-9 ]{0,24} "\"" | "true" | "false" | "null" | obj"#;

const TRIGGER_WORD: &str = "<tool_call>";

/// Regexes (one dialect-neutral syntax: cgram's and `regex-automata`'s
/// agree on them).
const REGEXES: [&str; 3] = [
    r"[a-z0-9]+(\.[a-z0-9]+)*@[a-z]+\.(com|org|net)",
    r"(\+[0-9]{1,3} )?\([0-9]{3}\) [0-9]{3}-[0-9]{4}",
    r"[A-Z][a-z]{1,12}( [A-Z][a-z]{1,12}){0,2}, [0-9]{1,5} [A-Z][a-z]{1,12} (Street|Road|Avenue)",
];

/// `pool` schemas spread evenly over the sorted MaskBench directory.
fn schema_sources(dir: &Path, pool: usize) -> Vec<Source> {
    let files = crate::json_files(dir);
    let mut out = Vec::new();
    if files.is_empty() || pool == 0 {
        return out;
    }
    let n = pool.min(files.len());
    for i in 0..n {
        let path = &files[i * files.len() / n];
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let Ok(top) = serde_json::from_str::<HashMap<String, Box<RawValue>>>(&text) else {
            continue; // not a MaskBench file
        };
        let Some(schema) = top.get("schema") else {
            continue;
        };
        // A quarter compact, a quarter with no properties beyond those
        // listed, a quarter with at most 2 whitespace characters in a
        // row: other lexemes, other grammars.
        let (flags, max_ws) = match out.len() % 4 {
            1 => (CG_JSON_COMPACT, 0),
            2 => (CG_JSON_NO_EXTRA_PROPERTIES, 0),
            3 => (0, 2),
            _ => (0, 0),
        };
        out.push(Source {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            kind: CG_KIND_JSON_SCHEMA,
            text: schema.get().to_string(),
            flags,
            max_ws,
            check: Check::Json,
            lazy: false,
            schema_file: Some(path.clone()),
            words: Vec::new(),
        });
    }
    out
}

fn sources(opts: &Options) -> Vec<Source> {
    let mut out = match &opts.schemas {
        Some(dir) => schema_sources(dir, opts.pool),
        None => Vec::new(),
    };
    for (name, flags) in [("any-json", 0), ("any-json-compact", CG_JSON_COMPACT)] {
        out.push(Source {
            name: name.into(),
            kind: CG_KIND_ANY_JSON,
            text: String::new(),
            flags,
            max_ws: 0,
            check: Check::Json,
            lazy: false,
            schema_file: None,
            words: Vec::new(),
        });
    }
    let gbnf = opts.gbnf.iter().map(|p| (p, false));
    for (path, json) in gbnf.chain(opts.gbnf_json.iter().map(|p| (p, true))) {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
            eprintln!("reading {}: {e}", path.display());
            std::process::exit(1)
        });
        out.push(Source {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            kind: CG_KIND_GBNF,
            text,
            flags: 0,
            max_ws: 0,
            check: if json { Check::Json } else { Check::Language },
            lazy: false,
            schema_file: None,
            words: Vec::new(),
        });
    }
    for (i, re) in REGEXES.iter().enumerate() {
        let dfa = dense::DFA::new(&format!("^(?:{re})$")).expect("the regexes build");
        out.push(Source {
            name: format!("regex-{i}"),
            kind: CG_KIND_REGEX,
            text: re.to_string(),
            flags: 0,
            max_ws: 0,
            check: Check::Regex(Box::new(dfa)),
            lazy: false,
            schema_file: None,
            words: Vec::new(),
        });
    }
    out.push(Source {
        name: "lazy-tool-call".into(),
        kind: CG_KIND_GBNF,
        text: TOOL_CALL_GBNF.into(),
        flags: 0,
        max_ws: 0,
        check: Check::ToolCall,
        lazy: true,
        schema_file: None,
        words: Vec::new(),
    });
    out
}

/// The tokens (not all whitespace, at most 16 bytes) whose text occurs in
/// `text`.
fn source_tokens(text: &str, classes: &Classes) -> Vec<u32> {
    const MAX: usize = 16;
    let t = text.as_bytes();
    let mut subs: HashSet<&[u8]> = HashSet::new();
    for i in 0..t.len() {
        for j in i + 1..=(i + MAX).min(t.len()) {
            subs.insert(&t[i..j]);
        }
    }
    (0..classes.n_vocab)
        .filter(|&id| {
            let b = &classes.bytes[id as usize];
            b.len() <= MAX && has_bit(&classes.non_space, id) && subs.contains(b.as_slice())
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Token classes and mask helpers.

/// Where a JSON text is: in a string (after a backslash), and how deep.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Lex {
    pub in_string: bool,
    pub escaped: bool,
    pub depth: i32,
}

/// What [`Lex::read`] saw outside strings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Seen {
    /// `{`, `[`, `:` or the quote of a new string.
    pub opened: bool,
    pub comma: bool,
}

impl Lex {
    pub fn read(&mut self, bytes: &[u8]) -> Seen {
        let mut seen = Seen::default();
        for &b in bytes {
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'{' | b'[' => {
                    self.depth += 1;
                    seen.opened = true;
                }
                b'}' | b']' => self.depth -= 1,
                b':' => seen.opened = true,
                b',' => seen.comma = true,
                b'"' => {
                    self.in_string = true;
                    seen.opened = true;
                }
                _ => {}
            }
        }
        seen
    }
}

/// Per-vocabulary facts the sampler uses, as bitsets over token ids.
struct Classes {
    n_vocab: u32,
    words: usize,
    bytes: Vec<Vec<u8>>,
    eos_bits: Vec<u32>,
    /// JSON, outside a string: tokens that close containers and open
    /// nothing (`}`, `]}`, `},`, ...).
    out_close: Vec<u32>,
    /// JSON, outside a string: separators that open nothing (`,`, `,\n`).
    out_sep: Vec<u32>,
    /// JSON, inside a string: tokens that end it and open nothing after
    /// it (`"`, `abc"`, `"}`, `",`, ...).
    in_close: Vec<u32>,
    /// Other languages: tokens with a separator or closing character.
    punct: Vec<u32>,
    /// Tokens with a byte that is not ASCII whitespace.
    non_space: Vec<u32>,
    /// The trigger word as tokens (greedy longest match).
    trigger_tokens: Vec<i32>,
}

fn set_bit(bits: &mut [u32], t: u32) {
    bits[(t / 32) as usize] |= 1 << (t % 32);
}

pub fn has_bit(bits: &[u32], t: u32) -> bool {
    bits[(t / 32) as usize] >> (t % 32) & 1 == 1
}

impl Classes {
    fn new(v: &Vocab) -> Classes {
        // SAFETY: a live vocabulary.
        let n_vocab = unsafe { cg_vocab_size(v.0) };
        let words = n_vocab.div_ceil(32) as usize;
        let mut bytes = Vec::with_capacity(n_vocab as usize);
        let [mut out_close, mut out_sep, mut in_close, mut punct, mut non_space] =
            std::array::from_fn(|_| vec![0u32; words]);
        let mut by_bytes: HashMap<Vec<u8>, i32> = HashMap::new();
        for t in 0..n_vocab {
            let mut len = 0usize;
            // SAFETY: `t` is in range; the pointer lives as long as `v`
            // (copied right away).
            let b = unsafe {
                let p = cg_vocab_token_bytes(v.0, t as i32, &mut len);
                std::slice::from_raw_parts(p, len).to_vec()
            };
            let mut out = Lex::default();
            let seen = out.read(&b);
            if !out.in_string && !seen.opened {
                if out.depth < 0 {
                    set_bit(&mut out_close, t);
                } else if out.depth == 0 && seen.comma {
                    set_bit(&mut out_sep, t);
                }
            }
            let mut inside = Lex {
                in_string: true,
                ..Lex::default()
            };
            let seen = inside.read(&b);
            if !inside.in_string && !seen.opened && inside.depth <= 0 {
                set_bit(&mut in_close, t);
            }
            if b.iter().any(|c| b"\n,.;=@)\"}]".contains(c)) {
                set_bit(&mut punct, t);
            }
            if b.iter().any(|c| !c.is_ascii_whitespace()) {
                set_bit(&mut non_space, t);
            }
            by_bytes.entry(b.clone()).or_insert(t as i32);
            bytes.push(b);
        }
        let mut eos_bits = vec![0u32; words];
        for t in eos_tokens(v) {
            set_bit(&mut eos_bits, t as u32);
        }
        let word = TRIGGER_WORD.as_bytes();
        let mut trigger_tokens = Vec::new();
        let mut i = 0;
        while i < word.len() {
            let j = (i + 1..=word.len())
                .rev()
                .find(|&j| by_bytes.contains_key(&word[i..j]))
                .expect("every byte is a token");
            trigger_tokens.push(by_bytes[&word[i..j]]);
            i = j;
        }
        Classes {
            n_vocab,
            words,
            bytes,
            eos_bits,
            out_close,
            out_sep,
            in_close,
            punct,
            non_space,
            trigger_tokens,
        }
    }

    fn is_eos(&self, t: i32) -> bool {
        has_bit(&self.eos_bits, t as u32)
    }
}

fn eos_tokens(v: &Vocab) -> Vec<i32> {
    // SAFETY: a live vocabulary; the buffer holds `n` ids.
    unsafe {
        let n = cg_vocab_eos_tokens(v.0, null_mut(), 0);
        let mut out = vec![0i32; n.max(0) as usize];
        cg_vocab_eos_tokens(v.0, out.as_mut_ptr(), out.len());
        out
    }
}

/// The number of tokens in `mask` (and in `class` too, when given).
pub fn count(mask: &[u32], class: Option<&[u32]>) -> u64 {
    match class {
        None => mask.iter().map(|w| w.count_ones() as u64).sum(),
        Some(c) => mask
            .iter()
            .zip(c)
            .map(|(w, c)| (w & c).count_ones() as u64)
            .sum(),
    }
}

/// A token of `mask` (and of `class`), uniformly at random; `None` if
/// there is none.
pub fn pick(mask: &[u32], class: Option<&[u32]>, rng: &mut Rng) -> Option<u32> {
    let total = count(mask, class);
    if total == 0 {
        return None;
    }
    let mut k = rng.below(total);
    for (i, &w) in mask.iter().enumerate() {
        let mut w = match class {
            Some(c) => w & c[i],
            None => w,
        };
        let n = w.count_ones() as u64;
        if k >= n {
            k -= n;
            continue;
        }
        for _ in 0..k {
            w &= w - 1;
        }
        return Some(i as u32 * 32 + w.trailing_zeros());
    }
    unreachable!("k < total")
}

fn mask_hash(mask: &[u32]) -> u64 {
    let mut h = 0x243F_6A88_85A3_08D3u64;
    for (i, &w) in mask.iter().enumerate() {
        h = (h ^ (w as u64) ^ ((i as u64) << 32))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }
    h
}

// ---------------------------------------------------------------------------
// Memory.

pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// The peak resident size (`VmHWM`), in bytes.
pub fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|s| s.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

const MB: f64 = 1024.0 * 1024.0;

#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub tokens: u64,
    pub secs: f64,
    pub rss: u64,
    /// Live heap bytes (see `heap`), when counted.
    pub heap: Option<u64>,
    pub compiled: u64,
    pub completed: u64,
    pub seen: usize,
    /// The vocabulary's lexeme cache (`cg_vocab_cache_bytes`) at the end
    /// of the last session.
    pub lexeme_cache: usize,
}

#[derive(Debug)]
pub struct Verdict {
    /// The first row at or past the warm-up.
    pub warm: Row,
    pub end: Row,
    pub growth_mb: f64,
    pub allowed_mb: f64,
    pub ok: bool,
}

/// End against warm-up: the growth may be up to `tol_mb` or `tol_pct`
/// percent of the warm size, whichever is larger. `None` without a row
/// past the warm-up.
pub fn verdict(rows: &[Row], warmup_tokens: u64, tol_mb: f64, tol_pct: f64) -> Option<Verdict> {
    let warm = *rows.iter().find(|r| r.tokens >= warmup_tokens)?;
    let end = *rows.last()?;
    let growth_mb = (end.rss as f64 - warm.rss as f64) / MB;
    let allowed_mb = tol_mb.max(warm.rss as f64 / MB * tol_pct / 100.0);
    Some(Verdict {
        warm,
        end,
        growth_mb,
        allowed_mb,
        ok: growth_mb <= allowed_mb,
    })
}

/// Least-squares slope of resident size over tokens, in MB per 100k
/// tokens, over the rows from the warm-up on.
pub fn slope_mb_per_100k(rows: &[Row]) -> f64 {
    let n = rows.len() as f64;
    if rows.len() < 2 {
        return 0.0;
    }
    let mx = rows.iter().map(|r| r.tokens as f64).sum::<f64>() / n;
    let my = rows.iter().map(|r| r.rss as f64 / MB).sum::<f64>() / n;
    let sxy: f64 = rows
        .iter()
        .map(|r| (r.tokens as f64 - mx) * (r.rss as f64 / MB - my))
        .sum();
    let sxx: f64 = rows.iter().map(|r| (r.tokens as f64 - mx).powi(2)).sum();
    if sxx == 0.0 {
        0.0
    } else {
        sxy / sxx * 100_000.0
    }
}

// ---------------------------------------------------------------------------
// The run.

#[derive(Default)]
struct Stats {
    tokens: u64,
    masks: u64,
    sessions: u64,
    compiled: u64,
    via_cache: u64,
    compile_errors: BTreeMap<i32, u64>,
    matchers: u64,
    outputs: u64,
    completed: u64,
    capped: u64,
    mask_limits: u64,
    json_parsed: u64,
    reaccepted: u64,
    regex_matched: u64,
    tool_calls: u64,
    untriggered: u64,
    dumped: u64,
    rollbacks: u64,
    clones: u64,
    resets: u64,
    rejections: u64,
    forced: u64,
    vocab_loads: u64,
    failures: u64,
    seen: HashSet<usize>,
}

struct Soak<'a> {
    opts: &'a Options,
    classes: Classes,
    rng: Rng,
    st: Stats,
    /// `words` + 1: the last word is a guard `cg_fill_mask` must not touch.
    mask: Vec<u32>,
    mask2: Vec<u32>,
    dump: Option<std::io::BufWriter<std::fs::File>>,
    start: Instant,
    rows: Vec<Row>,
    interval: u64,
    next_sample: u64,
    warmup_tokens: u64,
    warm_marked: bool,
    /// Sessions after which the resident size rose by at least
    /// [`STEP_REPORTED`]: (tokens at the end, bytes, source index).
    steps: Vec<(u64, u64, usize)>,
    /// See [`Row::lexeme_cache`].
    lexeme_cache: usize,
}

/// The smallest rise of the resident size in one session that is listed.
const STEP_REPORTED: u64 = 4 << 20;

const GUARD: u32 = 0xA5A5_5A5A;

/// Names of the error codes.
fn code_name(code: i32) -> &'static str {
    match code {
        CG_ERR_INVALID_ARGUMENT => "CG_ERR_INVALID_ARGUMENT",
        CG_ERR_PARSE => "CG_ERR_PARSE",
        CG_ERR_UNSUPPORTED => "CG_ERR_UNSUPPORTED",
        CG_ERR_LIMIT => "CG_ERR_LIMIT",
        CG_ERR_IO => "CG_ERR_IO",
        CG_ERR_TOKEN_REJECTED => "CG_ERR_TOKEN_REJECTED",
        CG_ERR_TERMINATED => "CG_ERR_TERMINATED",
        CG_ERR_INTERNAL => "CG_ERR_INTERNAL",
        _ => "?",
    }
}

/// How a walk ended: `Failed` after a failure (the matcher is then
/// dropped), `Done` otherwise.
enum Stop {
    Failed,
    Done,
}

impl Soak<'_> {
    fn fail(&mut self, src: &Source, text: &[u8], msg: String) {
        self.st.failures += 1;
        if self.st.failures <= 20 {
            let tail = &text[text.len().saturating_sub(120)..];
            eprintln!(
                "FAILURE [{}] at token {}: {msg}; output so far (tail): {:?}",
                src.name,
                self.st.tokens,
                String::from_utf8_lossy(tail)
            );
        }
    }

    fn done(&self) -> bool {
        self.st.tokens >= self.opts.tokens
    }

    fn sample(&mut self) {
        let row = Row {
            tokens: self.st.tokens,
            secs: self.start.elapsed().as_secs_f64(),
            rss: rss_bytes(),
            heap: crate::heap::live_bytes(),
            compiled: self.st.compiled,
            completed: self.st.completed,
            seen: self.st.seen.len(),
            lexeme_cache: self.lexeme_cache,
        };
        let mark = if !self.warm_marked && row.tokens >= self.warmup_tokens {
            self.warm_marked = true;
            "  <- warm-up"
        } else {
            ""
        };
        let heap = row
            .heap
            .map_or("-".into(), |h| format!("{:.1}", h as f64 / MB));
        println!(
            "{:>10} {:>9.1} {:>9.1} {:>9} {:>9.1} {:>9} {:>9} {:>7}{mark}",
            row.tokens,
            row.secs,
            row.rss as f64 / MB,
            heap,
            row.lexeme_cache as f64 / MB,
            row.compiled,
            row.completed,
            row.seen
        );
        let _ = std::io::stdout().flush();
        self.rows.push(row);
    }

    fn count_token(&mut self) {
        self.st.tokens += 1;
        if self.st.tokens >= self.next_sample {
            self.sample();
            self.next_sample += self.interval;
        }
    }

    /// One session: compile, one to four outputs, free.
    fn session(&mut self, vocab: &Vocab, cache: &Cache, src: &Source) {
        self.st.sessions += 1;
        // SAFETY: all-zero is a valid value of this C struct (a NULL
        // `root`); cg_compile_options_init_size then writes every field.
        let mut o: cg_compile_options = unsafe { std::mem::zeroed() };
        unsafe { cg_compile_options_init_size(&mut o, std::mem::size_of::<cg_compile_options>()) };
        o.kind = src.kind;
        o.flags = src.flags;
        o.json_max_whitespace = src.max_ws;
        let through_cache = self.rng.chance(0.25);
        // SAFETY: live vocabulary and cache; the source outlives the call.
        let g = unsafe {
            if through_cache {
                cg_grammar_cache_compile(
                    cache.0,
                    vocab.0,
                    src.text.as_ptr().cast(),
                    src.text.len(),
                    &o,
                )
            } else {
                cg_compile(vocab.0, src.text.as_ptr().cast(), src.text.len(), &o)
            }
        };
        if g.is_null() {
            let code = cg_last_error_code();
            *self.st.compile_errors.entry(code).or_default() += 1;
            if code == CG_ERR_INTERNAL {
                self.fail(src, b"", format!("compile: {}", last_error()));
            }
            return;
        }
        let g = Grammar(g);
        self.st.compiled += 1;
        self.st.via_cache += through_cache as u64;
        // SAFETY: a live grammar.
        let words = unsafe { cg_mask_words(g.0) };
        if words != self.classes.words {
            self.fail(
                src,
                b"",
                format!("cg_mask_words {words}, not {}", self.classes.words),
            );
            return;
        }
        let triggers = src.lazy.then(|| {
            let word = CString::new(TRIGGER_WORD).unwrap();
            let t = cg_trigger {
                kind: CG_TRIGGER_WORD,
                text: word.as_ptr(),
                token: 0,
            };
            // SAFETY: one trigger, its text alive during the call.
            Triggers(unsafe {
                if self.rng.chance(0.5) {
                    cg_grammar_cache_triggers(cache.0, vocab.0, &t, 1)
                } else {
                    cg_triggers_new(vocab.0, &t, 1)
                }
            })
        });
        if triggers.as_ref().is_some_and(|t| t.0.is_null()) {
            self.fail(src, b"", format!("triggers: {}", last_error()));
            return;
        }
        let outputs = 1 + self.rng.below(4);
        let mut m: Option<Matcher> = None;
        for _ in 0..outputs {
            if self.done() {
                break;
            }
            match &m {
                Some(old) if self.rng.chance(0.5) => {
                    // SAFETY: a live matcher.
                    unsafe { cg_reset(old.0) };
                    self.st.resets += 1;
                }
                _ => {
                    // SAFETY: live grammar and triggers.
                    let p = unsafe {
                        match &triggers {
                            Some(t) => cg_matcher_new_lazy(g.0, t.0),
                            None => cg_matcher_new(g.0),
                        }
                    };
                    if p.is_null() {
                        self.fail(src, b"", format!("cg_matcher_new: {}", last_error()));
                        return;
                    }
                    m = Some(Matcher(p));
                    self.st.matchers += 1;
                }
            }
            self.st.outputs += 1;
            if let Stop::Failed = self.walk(m.as_mut().unwrap(), src, &g) {
                m = None; // a fresh matcher for the next output
            }
        }
    }

    /// Whether the masks of `m` are a function of its state (lazy matchers
    /// awaiting their trigger may stop checking tokens after a time
    /// budget, so their masks are not).
    fn deterministic(m: &Matcher, src: &Source) -> bool {
        // SAFETY: a live matcher.
        !src.lazy || unsafe { cg_is_triggered(m.0, null_mut(), null_mut()) } == 1
    }

    /// Generates one output with `m` (fresh or reset).
    fn walk(&mut self, m: &mut Matcher, src: &Source, g: &Grammar) -> Stop {
        let words = self.classes.words;
        let cap = self.opts.max_output;
        let mut toks: Vec<i32> = Vec::new();
        let mut text: Vec<u8> = Vec::new();
        // Text length before token i; mask hash before token i.
        let mut text_at: Vec<usize> = Vec::new();
        let mut hashes: Vec<u64> = Vec::new();
        let mut expect: Option<u64> = None;
        let mut queue: VecDeque<i32> = VecDeque::new();
        let mut forced = [0i32; 16];
        loop {
            if self.done() {
                return Stop::Done;
            }
            if toks.len() >= cap {
                self.st.capped += 1;
                return Stop::Done;
            }
            self.mask[words] = GUARD;
            // SAFETY: the buffer holds words + 1 words.
            let rc = unsafe { cg_fill_mask(m.0, self.mask.as_mut_ptr(), words + 1) };
            if rc == CG_ERR_LIMIT {
                self.st.mask_limits += 1;
                eprintln!("[{}] mask limit: {}", src.name, last_error());
                return Stop::Failed;
            }
            if rc != CG_OK {
                self.fail(src, &text, format!("cg_fill_mask: {}", last_error()));
                return Stop::Failed;
            }
            self.st.masks += 1;
            let mask = &self.mask[..words];
            if self.mask[words] != GUARD {
                self.fail(src, &text, "cg_fill_mask wrote past cg_mask_words".into());
                return Stop::Failed;
            }
            let tail = self.classes.n_vocab % 32;
            if tail != 0 && mask[words - 1] >> tail != 0 {
                self.fail(src, &text, "a bit past the vocabulary".into());
                return Stop::Failed;
            }
            let h = mask_hash(mask);
            let deterministic = Self::deterministic(m, src);
            if let Some(e) = expect.take() {
                if deterministic && e != h {
                    self.fail(
                        src,
                        &text,
                        "mask differs from the one seen in this state".into(),
                    );
                    return Stop::Failed;
                }
            }
            hashes.truncate(toks.len());
            hashes.push(h);
            let allowed = count(mask, None);
            let eos_allowed = count(mask, Some(&self.classes.eos_bits));
            // SAFETY: a live matcher.
            let (accepting, terminated) = unsafe { (cg_is_accepting(m.0), cg_is_terminated(m.0)) };
            if allowed == 0 {
                self.fail(src, &text, "no token allowed".into());
                return Stop::Failed;
            }
            if (eos_allowed > 0) != (accepting == 1) {
                self.fail(
                    src,
                    &text,
                    format!("EOS allowed: {eos_allowed}, cg_is_accepting: {accepting}"),
                );
                return Stop::Failed;
            }
            if terminated == 1 && allowed != eos_allowed {
                self.fail(
                    src,
                    &text,
                    "terminated, yet tokens other than EOS allowed".into(),
                );
                return Stop::Failed;
            }

            // Now and then: rollback, clone, reset, a refused token.
            if !toks.is_empty() && self.rng.chance(1.0 / 64.0) {
                let n = 1 + self.rng.below(toks.len().min(8) as u64) as usize;
                // SAFETY: a live matcher.
                if unsafe { cg_rollback(m.0, n as u32) } != CG_OK {
                    self.fail(src, &text, format!("cg_rollback({n}): {}", last_error()));
                    return Stop::Failed;
                }
                let keep = toks.len() - n;
                toks.truncate(keep);
                text.truncate(text_at[keep]);
                text_at.truncate(keep);
                expect = Some(hashes[keep]);
                queue.clear();
                self.st.rollbacks += 1;
                continue;
            }
            if self.rng.chance(1.0 / 128.0) {
                // SAFETY: a live matcher.
                let c = unsafe { cg_matcher_clone(m.0) };
                if c.is_null() {
                    self.fail(src, &text, format!("cg_matcher_clone: {}", last_error()));
                    return Stop::Failed;
                }
                let mut c = Matcher(c);
                // SAFETY: the buffer holds words + 1 words.
                let rc = unsafe { cg_fill_mask(c.0, self.mask2.as_mut_ptr(), words + 1) };
                if rc != CG_OK || (deterministic && mask_hash(&self.mask2[..words]) != h) {
                    self.fail(
                        src,
                        &text,
                        "a clone's mask differs from its original's".into(),
                    );
                    return Stop::Failed;
                }
                if self.rng.chance(0.5) {
                    std::mem::swap(m, &mut c); // go on with the clone
                }
                self.st.clones += 1;
            }
            if !toks.is_empty() && self.rng.chance(1.0 / 512.0) {
                // SAFETY: a live matcher.
                unsafe { cg_reset(m.0) };
                toks.clear();
                text.clear();
                text_at.clear();
                queue.clear();
                expect = Some(hashes[0]);
                self.st.resets += 1;
                continue;
            }
            if deterministic && allowed < self.classes.n_vocab as u64 && self.rng.chance(1.0 / 32.0)
            {
                let refused = (0..8)
                    .map(|_| self.rng.below(self.classes.n_vocab as u64) as u32)
                    .find(|&t| !has_bit(mask, t));
                if let Some(t) = refused {
                    // SAFETY: a live matcher, `t` in range.
                    let rc = unsafe { cg_accept(m.0, t as i32) };
                    if rc != CG_ERR_TOKEN_REJECTED {
                        self.fail(
                            src,
                            &text,
                            format!("token {t} outside the mask: cg_accept gave {rc}"),
                        );
                        return Stop::Failed;
                    }
                    self.st.rejections += 1;
                    expect = Some(h); // unchanged
                    continue;
                }
            }

            // The token.
            let progress = toks.len() as f64 / cap as f64;
            let t = if let Some(t) = queue.pop_front() {
                t
            } else if src.lazy && !deterministic {
                // Awaiting the trigger: end, type the trigger, or anything.
                if eos_allowed > 0 && self.rng.chance(0.05 + 0.3 * progress) {
                    pick(mask, Some(&self.classes.eos_bits), &mut self.rng).unwrap() as i32
                } else if self.rng.chance(0.2 + 0.5 * progress) {
                    queue.extend(self.classes.trigger_tokens.iter().copied());
                    queue.pop_front().unwrap()
                } else {
                    pick(mask, None, &mut self.rng).unwrap() as i32
                }
            } else if self.rng.chance(1.0 / 8.0) && {
                // SAFETY: a live matcher, a buffer of 16.
                let n = unsafe { cg_forced_tokens(m.0, forced.as_mut_ptr(), forced.len()) };
                if n < 0 {
                    self.fail(src, &text, format!("cg_forced_tokens: {}", last_error()));
                    return Stop::Failed;
                }
                queue.extend(&forced[..n as usize]);
                self.st.forced += n as u64;
                n > 0
            } {
                queue.pop_front().unwrap()
            } else {
                let json = match src.check {
                    Check::Json => Some(0),
                    Check::ToolCall => {
                        let mut start = 0usize;
                        // SAFETY: a live matcher, a valid out-pointer.
                        unsafe { cg_is_triggered(m.0, null_mut(), &mut start) };
                        Some(start + TRIGGER_WORD.len())
                    }
                    _ => None,
                };
                self.choose(progress, eos_allowed > 0, &text, json, &src.words)
            };
            if t < 0 || t as u32 >= self.classes.n_vocab || !has_bit(&self.mask[..words], t as u32)
            {
                self.fail(
                    src,
                    &text,
                    format!("token {t} (queued: forced or the trigger) not in the mask"),
                );
                return Stop::Failed;
            }
            // SAFETY: a live matcher.
            let rc = unsafe { cg_accept(m.0, t) };
            if rc != CG_OK {
                self.fail(
                    src,
                    &text,
                    format!("cg_accept({t}) of a token in the mask: {}", last_error()),
                );
                return Stop::Failed;
            }
            self.count_token();
            text_at.push(text.len());
            toks.push(t);
            if self.classes.is_eos(t) {
                self.st.completed += 1;
                return self.verify(m, src, g, &text);
            }
            text.extend_from_slice(&self.classes.bytes[t as usize]);
        }
    }

    /// Biased to finish, more and more as the output grows: EOS when
    /// allowed; else, for JSON (`json`: where the JSON text starts in
    /// `text`, if it is JSON), a token that ends the string or closes
    /// containers, then a separator; for other languages, a token with a
    /// separator or closing character; else mostly a token that is not all
    /// whitespace (JSON allows runs of it almost everywhere); else any.
    fn choose(
        &mut self,
        progress: f64,
        eos_allowed: bool,
        text: &[u8],
        json: Option<usize>,
        source_words: &[u32],
    ) -> i32 {
        let words = self.classes.words;
        let mask = &self.mask[..words];
        let rng = &mut self.rng;
        if eos_allowed && rng.chance(0.3 + 0.7 * progress) {
            return pick(mask, Some(&self.classes.eos_bits), rng).unwrap() as i32;
        }
        let c = &self.classes;
        if rng.chance(0.2 + 0.75 * progress) {
            let tiers: [Option<&Vec<u32>>; 2] = match json {
                Some(from) => {
                    let mut lex = Lex::default();
                    lex.read(&text[from.min(text.len())..]);
                    match (lex.in_string, lex.escaped) {
                        (true, false) => [Some(&c.in_close), None],
                        (true, true) => [None, None],
                        (false, _) => [Some(&c.out_close), Some(&c.out_sep)],
                    }
                }
                None => [Some(&c.punct), None],
            };
            for class in tiers.iter().flatten() {
                if let Some(t) = pick(mask, Some(class), rng) {
                    return t as i32;
                }
            }
        }
        if rng.chance(0.5) {
            let allowed: Vec<u32> = source_words
                .iter()
                .copied()
                .filter(|&t| has_bit(mask, t))
                .collect();
            if !allowed.is_empty() {
                return allowed[rng.below(allowed.len() as u64) as usize] as i32;
            }
        }
        if rng.chance(0.95) {
            if let Some(t) = pick(mask, Some(&c.non_space), rng) {
                return t as i32;
            }
        }
        pick(mask, None, rng).unwrap() as i32
    }

    /// The checks of a completed output.
    fn verify(&mut self, m: &Matcher, src: &Source, g: &Grammar, text: &[u8]) -> Stop {
        // SAFETY: a live matcher.
        if unsafe { cg_is_terminated(m.0) } != 1 {
            self.fail(src, text, "EOS accepted but not terminated".into());
            return Stop::Failed;
        }
        if !src.lazy {
            // The same text, as bytes, into a fresh matcher.
            // SAFETY: a live grammar; the text outlives the calls.
            let ok = unsafe {
                let f = Matcher(cg_matcher_new(g.0));
                !f.0.is_null()
                    && cg_accept_bytes(f.0, text.as_ptr(), text.len()) == CG_OK
                    && cg_is_accepting(f.0) == 1
            };
            if !ok {
                self.fail(
                    src,
                    text,
                    format!(
                        "a fresh matcher refuses the output's bytes: {}",
                        last_error()
                    ),
                );
                return Stop::Failed;
            }
            self.st.reaccepted += 1;
        }
        match &src.check {
            Check::Json => match is_json(text) {
                Ok(_) => {
                    self.st.json_parsed += 1;
                    if let (Some(out), Some(file)) = (&mut self.dump, &src.schema_file) {
                        let line = serde_json::json!({
                            "source": src.name,
                            "schema_file": file.to_string_lossy(),
                            "flags": src.flags,
                            "output": String::from_utf8_lossy(text),
                        });
                        if writeln!(out, "{line}").is_err() {
                            eprintln!("writing the dump failed");
                            std::process::exit(1);
                        }
                        self.st.dumped += 1;
                    }
                }
                Err(e) => {
                    self.fail(src, text, format!("output is not JSON: {e}"));
                    return Stop::Failed;
                }
            },
            Check::Regex(dfa) => match dfa.try_search_fwd(&Input::new(text)) {
                Ok(Some(_)) => self.st.regex_matched += 1,
                _ => {
                    self.fail(src, text, "output does not match the regex".into());
                    return Stop::Failed;
                }
            },
            Check::ToolCall => {
                let (mut index, mut start) = (0i32, 0usize);
                // SAFETY: a live matcher, valid out-pointers.
                if unsafe { cg_is_triggered(m.0, &mut index, &mut start) } != 1 {
                    self.st.untriggered += 1;
                    return Stop::Done;
                }
                let call = &text[start.min(text.len())..];
                let body = call.strip_prefix(TRIGGER_WORD.as_bytes());
                let parsed = body.and_then(|b| serde_json::from_slice::<Value>(b).ok());
                let ok =
                    parsed.is_some_and(|v| v["name"].is_string() && v["arguments"].is_object());
                if !ok {
                    self.fail(src, text, format!("not a tool call from byte {start}"));
                    return Stop::Failed;
                }
                self.st.tool_calls += 1;
            }
            Check::Language => {}
        }
        Stop::Done
    }
}

/// Whether `text` is one JSON value (whitespace around it allowed):
/// `serde_json`'s syntax check, without converting numbers (a grammar
/// allows `1e999`, which does not fit an `f64` but is JSON).
pub fn is_json(text: &[u8]) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<Box<RawValue>>(text).map(|_| ())
}

pub fn run(opts: &Options) -> i32 {
    let mut sources = sources(opts);
    let n_schemas = sources
        .iter()
        .filter(|s| s.kind == CG_KIND_JSON_SCHEMA)
        .count();
    let mut vocab = load_vocab(&opts.tokenizer);
    vocab.set_lexeme_budget(opts.lexeme_budget);
    let classes = Classes::new(&vocab);
    for s in &mut sources {
        s.words = source_tokens(&s.text, &classes);
    }
    let words = classes.words;
    let cache = Cache(cg_grammar_cache_new(opts.cache_budget));
    let mut order: Vec<usize> = (0..sources.len()).collect();
    let mut rng = Rng::new(opts.seed);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let dump = opts.dump.as_ref().map(|p| {
        std::io::BufWriter::new(std::fs::File::create(p).unwrap_or_else(|e| {
            eprintln!("creating {}: {e}", p.display());
            std::process::exit(1)
        }))
    });
    let interval = (opts.tokens / opts.rows.max(1)).max(1);
    let mut s = Soak {
        opts,
        classes,
        rng,
        st: Stats::default(),
        mask: vec![0; words + 1],
        mask2: vec![0; words + 1],
        dump,
        start: Instant::now(),
        rows: Vec::new(),
        interval,
        next_sample: interval,
        warmup_tokens: (opts.tokens as f64 * opts.warmup_percent / 100.0).ceil() as u64,
        warm_marked: false,
        steps: Vec::new(),
        lexeme_cache: 0,
    };
    println!(
        "soak: {} tokens, seed {}, outputs capped at {} tokens; vocabulary {} tokens (EOS {:?})",
        opts.tokens,
        opts.seed,
        opts.max_output,
        s.classes.n_vocab,
        eos_tokens(&vocab)
    );
    println!(
        "sources: {} ({} MaskBench schemas, {} other), cycled in a seeded order",
        sources.len(),
        n_schemas,
        sources.len() - n_schemas
    );
    println!(
        "{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "tokens", "seconds", "RSS MB", "heap MB", "lexeme MB", "grammars", "outputs", "sources"
    );
    s.sample();
    let mut k = 0usize;
    while !s.done() {
        if opts.vocab_every > 0 && k > 0 && (k as u64).is_multiple_of(opts.vocab_every) {
            // SAFETY: live cache and vocabulary.
            unsafe { cg_grammar_cache_forget_vocab(cache.0, vocab.0) };
            drop(vocab);
            vocab = load_vocab(&opts.tokenizer);
            vocab.set_lexeme_budget(opts.lexeme_budget);
            s.st.vocab_loads += 1;
        }
        let i = order[k % order.len()];
        s.st.seen.insert(i);
        let before = rss_bytes();
        s.session(&vocab, &cache, &sources[i]);
        // SAFETY: a live vocabulary.
        s.lexeme_cache = unsafe { cg_vocab_cache_bytes(vocab.0) };
        let step = rss_bytes().saturating_sub(before);
        if step >= STEP_REPORTED {
            s.steps.push((s.st.tokens, step, i));
        }
        k += 1;
    }
    if s.rows.last().map(|r| r.tokens) != Some(s.st.tokens) {
        s.sample();
    }
    if let Some(d) = &mut s.dump {
        if d.flush().is_err() {
            eprintln!("writing the dump failed");
            return 1;
        }
    }
    let secs = s.start.elapsed().as_secs_f64();
    let st = &s.st;
    let mut cs = cg_grammar_cache_stats {
        struct_size: std::mem::size_of::<cg_grammar_cache_stats>() as u32,
        hits: 0,
        misses: 0,
        evictions: 0,
        entries: 0,
        bytes: 0,
        budget: 0,
    };
    // SAFETY: a live cache, a sized struct.
    unsafe { cg_grammar_cache_get_stats(cache.0, &mut cs) };
    println!();
    println!(
        "tokens: {} in {:.1} s ({:.0} tokens/s), {} masks; {} sessions over {} of {} sources{}",
        st.tokens,
        secs,
        st.tokens as f64 / secs,
        st.masks,
        st.sessions,
        st.seen.len(),
        sources.len(),
        if st.vocab_loads > 0 {
            format!(", vocabulary reloaded {} times", st.vocab_loads)
        } else {
            String::new()
        }
    );
    let errors: Vec<String> = st
        .compile_errors
        .iter()
        .map(|(c, n)| format!("{} {n}", code_name(*c)))
        .collect();
    println!(
        "grammars: {} compiled ({} through the cache: {} hits, {} misses, {} evictions, {} entries / {:.1} MB at the end), compile errors: {}",
        st.compiled,
        st.via_cache,
        cs.hits,
        cs.misses,
        cs.evictions,
        cs.entries,
        cs.bytes as f64 / MB,
        if errors.is_empty() { "none".into() } else { errors.join(", ") }
    );
    println!(
        "matchers: {} created, {} resets, {} clones, {} rollbacks, {} refused tokens checked, {} forced tokens",
        st.matchers, st.resets, st.clones, st.rollbacks, st.rejections, st.forced
    );
    println!(
        "outputs: {} started, {} completed (EOS), {} capped at {} tokens, {} stopped by the mask limit",
        st.outputs, st.completed, st.capped, opts.max_output, st.mask_limits
    );
    println!(
        "checks: {} re-accepted as bytes, {} parsed as JSON, {} full regex matches, {} tool calls parsed ({} lazy outputs ended untriggered), {} schema outputs dumped",
        st.reaccepted, st.json_parsed, st.regex_matched, st.tool_calls, st.untriggered, st.dumped
    );
    let late: Vec<String> = s
        .steps
        .iter()
        .filter(|x| x.0 > s.warmup_tokens)
        .map(|&(tokens, bytes, i)| {
            format!(
                "+{:.1} MB {} (at {tokens})",
                bytes as f64 / MB,
                sources[i].name
            )
        })
        .collect();
    println!(
        "sessions that raised RSS by {} MB or more: {} before the warm-up's end, {} after{}{}",
        STEP_REPORTED >> 20,
        s.steps.len() - late.len(),
        late.len(),
        if late.is_empty() { "" } else { ": " },
        late.join(", ")
    );
    let mut status = 0;
    if st.failures > 0 {
        println!(
            "FAILED: {} broken invariants or checks (see stderr)",
            st.failures
        );
        status = 1;
    }
    match verdict(
        &s.rows,
        s.warmup_tokens,
        opts.tolerance_mb,
        opts.tolerance_percent,
    ) {
        Some(v) => {
            let after: Vec<Row> = s
                .rows
                .iter()
                .filter(|r| r.tokens >= v.warm.tokens)
                .copied()
                .collect();
            println!(
                "RSS: start {:.1} MB, after warm-up ({} tokens) {:.1} MB, end {:.1} MB, peak {:.1} MB; growth after warm-up {:+.1} MB ({:+.2} MB per 100k tokens), allowed {:.1} MB",
                s.rows[0].rss as f64 / MB,
                v.warm.tokens,
                v.warm.rss as f64 / MB,
                v.end.rss as f64 / MB,
                peak_rss_bytes() as f64 / MB,
                v.growth_mb,
                slope_mb_per_100k(&after),
                v.allowed_mb
            );
            if let (Some(w), Some(e)) = (v.warm.heap, v.end.heap) {
                println!(
                    "live heap: start {:.1} MB, after warm-up {:.1} MB, end {:.1} MB",
                    s.rows[0].heap.unwrap_or(0) as f64 / MB,
                    w as f64 / MB,
                    e as f64 / MB
                );
            }
            if v.ok {
                println!("memory: flat after warm-up");
            } else {
                println!("FAILED: resident memory grew past the tolerance after warm-up");
                status = 1;
            }
        }
        None => {
            println!("FAILED: no sample past the warm-up");
            status = 1;
        }
    }
    println!("verdict: {}", if status == 0 { "PASS" } else { "FAIL" });
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(tokens: u64, mb: f64) -> Row {
        Row {
            tokens,
            secs: 0.0,
            rss: (mb * MB) as u64,
            heap: None,
            compiled: 0,
            completed: 0,
            seen: 0,
            lexeme_cache: 0,
        }
    }

    #[test]
    fn verdict_measures_from_the_warm_up_row() {
        // Growth before the warm-up does not count; after it, it does.
        let rows = [
            row(0, 100.0),
            row(10, 400.0),
            row(20, 405.0),
            row(30, 410.0),
        ];
        let v = verdict(&rows, 10, 16.0, 2.0).unwrap();
        assert_eq!(v.warm.tokens, 10);
        assert!((v.growth_mb - 10.0).abs() < 1e-6);
        assert!(v.ok);
        let rows = [row(0, 100.0), row(10, 400.0), row(20, 420.0)];
        let v = verdict(&rows, 10, 16.0, 2.0).unwrap();
        assert!(!v.ok, "20 MB over 16 MB");
        // The percentage wins on a large base: 2% of 2000 MB is 40 MB.
        let rows = [row(0, 100.0), row(10, 2000.0), row(20, 2030.0)];
        let v = verdict(&rows, 10, 16.0, 2.0).unwrap();
        assert!(v.ok && (v.allowed_mb - 40.0).abs() < 1e-6);
        assert!(verdict(&rows, 21, 16.0, 2.0).is_none());
    }

    #[test]
    fn slope_is_per_100k_tokens() {
        let rows = [row(0, 10.0), row(100_000, 12.0), row(200_000, 14.0)];
        assert!((slope_mb_per_100k(&rows) - 2.0).abs() < 1e-9);
        assert_eq!(slope_mb_per_100k(&rows[..1]), 0.0);
    }

    #[test]
    fn pick_is_uniform_over_the_set_bits() {
        let mut mask = vec![0u32; 3];
        for t in [1u32, 31, 32, 77, 95] {
            set_bit(&mut mask, t);
        }
        let mut class = vec![0u32; 3];
        set_bit(&mut class, 77);
        set_bit(&mut class, 2); // not in the mask
        let mut rng = Rng::new(7);
        let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
        for _ in 0..5000 {
            *seen
                .entry(pick(&mask, None, &mut rng).unwrap())
                .or_default() += 1;
            assert_eq!(pick(&mask, Some(&class), &mut rng), Some(77));
        }
        assert_eq!(
            seen.keys().copied().collect::<Vec<_>>(),
            [1, 31, 32, 77, 95]
        );
        assert!(seen.values().all(|&n| (800..1200).contains(&n)), "{seen:?}");
        assert_eq!(pick(&[0, 0], None, &mut rng), None);
        assert_eq!(count(&mask, Some(&class)), 1);
    }

    #[test]
    fn json_check_is_syntax_only() {
        for ok in [
            "1e999",
            " {\"a\": [1, -0.5e-3, \"\\u00e9\", null]}\n",
            "\"x\"",
            "[]",
        ] {
            assert!(is_json(ok.as_bytes()).is_ok(), "{ok}");
        }
        for bad in [
            "01",
            "[1,]",
            "{\"a\" 1}",
            "\"\u{1}\"",
            "\"\\x\"",
            "1 2",
            "",
            "{",
            "nul",
        ] {
            assert!(is_json(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert!(is_json(b"\"\xff\"").is_err());
    }

    #[test]
    fn lex_classifies_tokens() {
        let mut l = Lex::default();
        assert_eq!(
            l.read(b"{\"a\\\"}"),
            Seen {
                opened: true,
                comma: false
            }
        );
        assert!(l.in_string && l.depth == 1);
        let seen = l.read(b"\"},");
        assert!(!l.in_string && l.depth == 0 && seen.comma && !seen.opened);
    }

    #[test]
    fn rng_is_reproducible() {
        let (mut a, mut b) = (Rng::new(3), Rng::new(3));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert!((0..1000).all(|_| a.below(10) < 10));
    }
}
