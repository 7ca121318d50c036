//! Threads through the C API, as a server uses cgram: 8 threads share one
//! vocabulary (the real Llama 3 tokenizer), its grammars (llama.cpp's
//! json.gbnf, a JSON Schema, any JSON, a regex, a lazy tool-call grammar
//! and its triggers) and a grammar cache; each thread drives its own
//! matchers, compiles sources at the same moment as the others (the same
//! schema in all 8, a different source in each), and fills batches of
//! masks with `cg_fill_masks`.
//!
//! Every job records what it saw (a hash of every mask, the allowed count,
//! forced tokens, accepting and terminated states). The same jobs then run
//! again in one thread, on grammars compiled afresh (so that both runs
//! start with cold caches), and every record must be identical. Inside
//! each job, rollback must give back the exact mask of the earlier step, a
//! clone the mask of its original, and a batch mask the single mask.
//!
//! It is also the workload of ThreadSanitizer in `scripts/sanitize.sh`
//! (shared lazily filled token sets, the triggers' fire sets, the cache),
//! so it is kept to a few seconds in a release build. The tokenizer comes
//! from `scripts/fetch-tokenizers.sh`.

mod common;

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::Barrier;

use cgram::ffi::*;

const THREADS: usize = 8;

/// The Llama 3 regular tokens are ids below this; the specials follow.
const LLAMA3_SPECIAL_START: i32 = 128_000;

fn last_error() -> String {
    unsafe { CStr::from_ptr(cg_last_error()) }
        .to_string_lossy()
        .into_owned()
}

// ---------------------------------------------------------------------------
// What is compiled and walked.

struct Source {
    kind: u32,
    text: String,
}

fn gbnf(text: &str) -> Source {
    Source {
        kind: CG_KIND_GBNF,
        text: text.to_string(),
    }
}

fn schema(text: &str) -> Source {
    Source {
        kind: CG_KIND_JSON_SCHEMA,
        text: text.to_string(),
    }
}

const PERSON_SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 20},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "red", "blue"]}, "maxItems": 4},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "age"],
  "additionalProperties": false
}"#;

const TOOL_CALL_GBNF: &str = r#"root ::= "<tool_call>" "{\"name\": \"" [a-z_]+ "\", \"arguments\": " args "}"
args ::= "{" ( pair ( ", " pair )* )? "}"
pair ::= "\"" [a-z]+ "\": " [0-9]+"#;

/// The grammars every thread shares, in this order (index = `G_*`).
fn shared_sources() -> Vec<Source> {
    let gbnf_dir = common::llamacpp_dir().join("gbnf");
    let json_gbnf = std::fs::read_to_string(gbnf_dir.join("json.gbnf")).unwrap();
    vec![
        gbnf(&json_gbnf),
        schema(PERSON_SCHEMA),
        Source {
            kind: CG_KIND_ANY_JSON,
            text: String::new(),
        },
        Source {
            kind: CG_KIND_REGEX,
            text: r"[a-z]+(\.[a-z]+)*@[a-z]+\.(com|org|net)".to_string(),
        },
        gbnf(TOOL_CALL_GBNF),
    ]
}
const G_JSON_GBNF: usize = 0;
const G_SCHEMA: usize = 1;
const G_ANY_JSON: usize = 2;
const G_REGEX: usize = 3;
const G_TOOL: usize = 4;

/// Valid texts of the shared grammars: (grammar, lazy, text).
const TEXTS: &[(usize, bool, &str)] = &[
    (
        G_JSON_GBNF,
        false,
        r#"{"name": "cgram", "tags": ["c", "rust"], "version": 1, "ok": true, "pi": 3.14}"#,
    ),
    (
        G_SCHEMA,
        false,
        r#"{"name": "Ada", "age": 36, "tags": ["red", "a"], "ok": true}"#,
    ),
    (
        G_ANY_JSON,
        false,
        r#"[1, -2.5e3, "caf\u00e9 ☕ naïve", {"k": null, "nested": [true, false, {}]}]"#,
    ),
    (G_REGEX, false, "ada.lovelace@example.org"),
    (
        G_TOOL,
        true,
        r#"Let me check the weather. <tool_call>{"name": "get_weather", "arguments": {"city": 12, "days": 3}}"#,
    ),
    (
        G_SCHEMA,
        false,
        "{ \"age\" : 7 ,\n  \"name\" : \"Bob \\\"the\\\" builder\" }",
    ),
];

/// Sources compiled concurrently: every thread compiles `SAME` at once,
/// then `different()[thread]`.
fn different_sources() -> Vec<Source> {
    let gbnf_dir = common::llamacpp_dir().join("gbnf");
    let read = |f: &str| std::fs::read_to_string(gbnf_dir.join(f)).unwrap();
    vec![
        gbnf(&read("arithmetic.gbnf")),
        gbnf(&read("list.gbnf")),
        schema(r#"{"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 5}"#),
        schema(
            r#"{"anyOf": [{"type": "string", "format": "date"}, {"enum": [1, 2, "three", null]}]}"#,
        ),
        Source {
            kind: CG_KIND_REGEX,
            text: r"\d{3}-\d{4}( ext\. \d+)?".to_string(),
        },
        gbnf(&read("json_arr.gbnf")),
        gbnf("root ::= (\"yes\" | \"no\" | \"maybe\") (\", \" [a-z]{1,6})*"),
        schema(
            r#"{"type": "object", "properties": {"id": {"type": "integer"}, "v": {"type": "string", "pattern": "^[A-F0-9]{4}$"}}, "required": ["id", "v"]}"#,
        ),
    ]
}

// ---------------------------------------------------------------------------
// The shared objects.

struct Shared {
    vocab: *mut cg_vocab,
    grammars: Vec<*mut cg_grammar>,
    triggers: *mut cg_triggers,
    cache: *mut cg_grammar_cache,
    eos: Vec<i32>,
    n_words: usize,
    /// Regular tokens by their bytes (for greedy tokenization).
    ids: HashMap<Vec<u8>, i32>,
    max_len: usize,
}

// SAFETY: this is what the header promises and what the test checks:
// vocabularies, grammars, triggers and caches may be used from any number
// of threads at once. Matchers never leave the job that made them.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

fn compile(vocab: *const cg_vocab, s: &Source) -> *mut cg_grammar {
    let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
    unsafe {
        cg_compile_options_init_size(o.as_mut_ptr(), std::mem::size_of::<cg_compile_options>())
    };
    let mut o = unsafe { o.assume_init() };
    o.kind = s.kind;
    // The limits are not under test here, and sanitizers slow compiles.
    o.max_compile_ms = 0;
    let g = unsafe { cg_compile(vocab, s.text.as_ptr().cast(), s.text.len(), &o) };
    assert!(!g.is_null(), "{}: {}", s.text, last_error());
    g
}

impl Shared {
    fn new(vocab: *mut cg_vocab) -> Shared {
        let grammars: Vec<_> = shared_sources().iter().map(|s| compile(vocab, s)).collect();
        let word = c"<tool_call>";
        let list = [cg_trigger {
            kind: CG_TRIGGER_WORD,
            text: word.as_ptr(),
            token: 0,
        }];
        let triggers = unsafe { cg_triggers_new(vocab, list.as_ptr(), 1) };
        assert!(!triggers.is_null(), "{}", last_error());
        let cache = cg_grammar_cache_new(0);
        assert!(!cache.is_null());
        let n_eos = unsafe { cg_vocab_eos_tokens(vocab, null_mut(), 0) };
        assert!(n_eos >= 1, "{}", last_error());
        let mut eos = vec![0i32; n_eos as usize];
        assert_eq!(
            unsafe { cg_vocab_eos_tokens(vocab, eos.as_mut_ptr(), eos.len()) },
            n_eos
        );
        let n_words = unsafe { cg_mask_words(grammars[0]) };
        let mut ids = HashMap::new();
        let mut max_len = 0;
        for t in 0..LLAMA3_SPECIAL_START {
            let mut len = 0usize;
            let p = unsafe { cg_vocab_token_bytes(vocab, t, &mut len) };
            assert!(!p.is_null(), "{}", last_error());
            if len > 0 {
                let bytes = unsafe { std::slice::from_raw_parts(p, len) }.to_vec();
                max_len = max_len.max(len);
                ids.entry(bytes).or_insert(t);
            }
        }
        Shared {
            vocab,
            grammars,
            triggers,
            cache,
            eos,
            n_words,
            ids,
            max_len,
        }
    }

    /// `text` as tokens, longest match first (every byte is a token in
    /// Llama 3, and any spelling of a valid text must be accepted).
    fn tokenize(&self, text: &str) -> Vec<i32> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let n = (1..=self.max_len.min(b.len() - i))
                .rev()
                .find(|&n| self.ids.contains_key(&b[i..i + n]))
                .expect("every byte is a token");
            out.push(self.ids[&b[i..i + n]]);
            i += n;
        }
        out
    }

    fn matcher(&self, grammar: usize, lazy: bool) -> Matcher {
        self.matcher_of(self.grammars[grammar], lazy)
    }

    fn matcher_of(&self, g: *const cg_grammar, lazy: bool) -> Matcher {
        let m = unsafe {
            if lazy {
                cg_matcher_new_lazy(g, self.triggers)
            } else {
                cg_matcher_new(g)
            }
        };
        assert!(!m.is_null(), "{}", last_error());
        Matcher {
            m,
            mask: vec![0; self.n_words],
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        unsafe {
            for &g in &self.grammars {
                cg_free(g);
            }
            cg_triggers_free(self.triggers);
            cg_grammar_cache_free(self.cache);
        }
    }
}

// ---------------------------------------------------------------------------
// A matcher with its mask, and what it records.

struct Matcher {
    m: *mut cg_matcher,
    mask: Vec<u32>,
}

impl Drop for Matcher {
    fn drop(&mut self) {
        unsafe { cg_matcher_free(self.m) }
    }
}

fn hash_words(words: &[u32]) -> u64 {
    // FNV-1a over the words.
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &w in words {
        h = (h ^ w as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn allowed(mask: &[u32]) -> Vec<i32> {
    let mut out = Vec::new();
    for (i, &w) in mask.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            out.push((i * 32) as i32 + w.trailing_zeros() as i32);
            w &= w - 1;
        }
    }
    out
}

fn bit(mask: &[u32], t: i32) -> bool {
    mask[t as usize / 32] >> (t % 32) & 1 == 1
}

impl Matcher {
    /// Fills the mask and returns its hash.
    fn fill(&mut self) -> u64 {
        let rc = unsafe { cg_fill_mask(self.m, self.mask.as_mut_ptr(), self.mask.len()) };
        assert_eq!(rc, CG_OK, "cg_fill_mask: {}", last_error());
        hash_words(&self.mask)
    }

    fn accept(&mut self, t: i32) {
        let rc = unsafe { cg_accept(self.m, t) };
        assert_eq!(rc, CG_OK, "cg_accept({t}): {}", last_error());
    }

    fn accepting(&self) -> u64 {
        let rc = unsafe { cg_is_accepting(self.m) };
        assert!(rc == 0 || rc == 1, "{}", last_error());
        rc as u64
    }

    fn terminated(&self) -> u64 {
        let rc = unsafe { cg_is_terminated(self.m) };
        assert!(rc == 0 || rc == 1, "{}", last_error());
        rc as u64
    }

    /// The mask's hash, its allowed count, the states and the forced
    /// tokens, appended to `rec`; checks that a clone has the same mask.
    fn record(&mut self, rec: &mut Vec<u64>) -> u64 {
        let h = self.fill();
        rec.push(h);
        rec.push(allowed(&self.mask).len() as u64);
        rec.push(self.accepting() << 1 | self.terminated());
        let mut forced = [0i32; 4];
        let n = unsafe { cg_forced_tokens(self.m, forced.as_mut_ptr(), forced.len()) };
        assert!(n >= 0, "cg_forced_tokens: {}", last_error());
        rec.push(n as u64);
        rec.extend(forced[..n as usize].iter().map(|&t| t as u64));
        let c = unsafe { cg_matcher_clone(self.m) };
        assert!(!c.is_null(), "{}", last_error());
        let mut c = Matcher {
            m: c,
            mask: vec![0; self.mask.len()],
        };
        assert_eq!(c.fill(), h, "a clone has another mask");
        h
    }
}

/// splitmix64: a seeded generator, the same in every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A token from the mask: EOS one time in four when allowed, otherwise any
/// other allowed token (EOS when nothing else is).
fn choose(sh: &Shared, mask: &[u32], rng: &mut Rng) -> Option<i32> {
    let all = allowed(mask);
    let eos = sh.eos.iter().copied().find(|&e| bit(mask, e));
    let others: Vec<i32> = all.into_iter().filter(|t| !sh.eos.contains(t)).collect();
    if eos.is_some() && (others.is_empty() || rng.below(4) == 0) {
        return eos;
    }
    if others.is_empty() {
        return None;
    }
    Some(others[rng.below(others.len())])
}

// ---------------------------------------------------------------------------
// Jobs.

#[derive(Clone, Debug)]
enum Job {
    /// Walk a valid text token by token, rolling back and replaying every
    /// few tokens, then end it with EOS.
    Walk { text: usize },
    /// Sample from the masks with a seed.
    Random {
        grammar: usize,
        lazy: bool,
        seed: u64,
        steps: usize,
    },
    /// Compile a source (through the shared cache or not), then sample.
    Compile {
        source: Option<usize>,
        cached: bool,
        seed: u64,
    },
    /// Batches of matchers through `cg_fill_masks`.
    Batch { seed: u64, threads: u32 },
}

/// The jobs of thread `t`.
fn plan(t: usize) -> Vec<Job> {
    let seed = 1000 * (t as u64 + 1);
    let n_diff = different_sources().len();
    vec![
        // Every thread compiles the same schema at the same moment.
        Job::Compile {
            source: None,
            cached: t % 2 == 1,
            seed,
        },
        Job::Walk {
            text: t % TEXTS.len(),
        },
        Job::Random {
            grammar: t % 5,
            lazy: false,
            seed: seed + 1,
            steps: 24,
        },
        Job::Compile {
            source: Some(t % n_diff),
            cached: false,
            seed: seed + 2,
        },
        Job::Batch {
            seed: seed + 3,
            threads: [0, 1, 2, 3, 64][t % 5],
        },
        Job::Walk {
            text: (t + 3) % TEXTS.len(),
        },
        Job::Random {
            grammar: G_TOOL,
            lazy: true,
            seed: seed + 4,
            steps: 16,
        },
        Job::Compile {
            source: Some((t + 1) % 4),
            cached: true,
            seed: seed + 5,
        },
    ]
}

fn run(sh: &Shared, job: &Job) -> Vec<u64> {
    let mut rec = Vec::new();
    match *job {
        Job::Walk { text } => {
            let (g, lazy, text) = TEXTS[text];
            walk(sh, &mut sh.matcher(g, lazy), &sh.tokenize(text), &mut rec);
        }
        Job::Random {
            grammar,
            lazy,
            seed,
            steps,
        } => random(sh, &mut sh.matcher(grammar, lazy), seed, steps, &mut rec),
        Job::Compile {
            source,
            cached,
            seed,
        } => {
            let s = match source {
                None => schema(PERSON_SCHEMA),
                Some(i) => different_sources().swap_remove(i),
            };
            let g = if cached {
                let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
                unsafe {
                    cg_compile_options_init_size(
                        o.as_mut_ptr(),
                        std::mem::size_of::<cg_compile_options>(),
                    )
                };
                let mut o = unsafe { o.assume_init() };
                o.kind = s.kind;
                o.max_compile_ms = 0;
                let g = unsafe {
                    cg_grammar_cache_compile(
                        sh.cache,
                        sh.vocab,
                        s.text.as_ptr().cast(),
                        s.text.len(),
                        &o,
                    )
                };
                assert!(!g.is_null(), "{}", last_error());
                g
            } else {
                compile(sh.vocab, &s)
            };
            assert_eq!(unsafe { cg_mask_words(g) }, sh.n_words);
            let mut m = sh.matcher_of(g, false);
            unsafe { cg_free(g) }; // the matcher keeps it alive
            random(sh, &mut m, seed, 20, &mut rec);
        }
        Job::Batch { seed, threads } => batch(sh, seed, threads, &mut rec),
    }
    rec
}

/// Walks `tokens` (a valid text), rolling back two tokens and replaying
/// them every fifth token; ends with EOS.
fn walk(sh: &Shared, m: &mut Matcher, tokens: &[i32], rec: &mut Vec<u64>) {
    let mut hashes = Vec::new();
    for (i, &t) in tokens.iter().enumerate() {
        hashes.push(m.record(rec));
        assert!(bit(&m.mask, t), "token {i} ({t}) of a valid text is masked");
        m.accept(t);
        if i % 5 == 4 {
            assert_eq!(unsafe { cg_rollback(m.m, 2) }, CG_OK, "{}", last_error());
            assert_eq!(m.fill(), hashes[i - 1], "rollback gave another mask");
            m.accept(tokens[i - 1]);
            m.accept(t);
        }
    }
    m.record(rec);
    assert_eq!(m.accepting(), 1, "a valid text is not complete");
    let eos = sh.eos[0];
    assert!(bit(&m.mask, eos), "EOS is masked after a complete text");
    m.accept(eos);
    assert_eq!(m.terminated(), 1);
    rec.push(tokens.len() as u64);
}

/// Samples up to `steps` tokens from the masks.
fn random(sh: &Shared, m: &mut Matcher, seed: u64, steps: usize, rec: &mut Vec<u64>) {
    let mut rng = Rng(seed);
    for _ in 0..steps {
        if m.terminated() == 1 {
            break;
        }
        m.record(rec);
        let Some(t) = choose(sh, &m.mask, &mut rng) else {
            panic!("nothing allowed and not terminated");
        };
        rec.push(t as u64);
        m.accept(t);
    }
    rec.push(m.accepting() << 1 | m.terminated());
}

/// Six matchers of several grammars, lazy and eager, at different points:
/// three rounds of `cg_fill_masks` (each mask checked against
/// `cg_fill_mask` of the same matcher), each matcher then taking a token.
fn batch(sh: &Shared, seed: u64, threads: u32, rec: &mut Vec<u64>) {
    let mut rng = Rng(seed);
    let mut ms: Vec<Matcher> = (0..6)
        .map(|j| {
            let g = (seed as usize + j) % sh.grammars.len();
            sh.matcher(g, g == G_TOOL && j % 2 == 0)
        })
        .collect();
    for (j, m) in ms.iter_mut().enumerate() {
        for _ in 0..j % 4 {
            m.fill();
            if let Some(t) = choose(sh, &m.mask, &mut rng) {
                if m.terminated() == 0 {
                    m.accept(t);
                }
            }
        }
    }
    let n = ms.len();
    for _ in 0..3 {
        let ptrs: Vec<*mut cg_matcher> = ms.iter().map(|m| m.m).collect();
        let mut masks = vec![0xA5A5_A5A5u32; n * sh.n_words];
        let rc =
            unsafe { cg_fill_masks(ptrs.as_ptr(), n, masks.as_mut_ptr(), sh.n_words, threads) };
        assert_eq!(rc, CG_OK, "cg_fill_masks: {}", last_error());
        for (j, m) in ms.iter_mut().enumerate() {
            let batch_mask = &masks[j * sh.n_words..(j + 1) * sh.n_words];
            let h = hash_words(batch_mask);
            assert_eq!(m.fill(), h, "batch mask {j} differs from cg_fill_mask");
            rec.push(h);
            if m.terminated() == 0 {
                if let Some(t) = choose(sh, &m.mask, &mut rng) {
                    rec.push(t as u64);
                    m.accept(t);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------

fn load_vocab() -> *mut cg_vocab {
    let path = common::tokenizer_path("llama3");
    let c = CString::new(path.to_str().unwrap()).unwrap();
    let v = unsafe { cg_vocab_from_tokenizer_json(c.as_ptr()) };
    assert!(!v.is_null(), "{}", last_error());
    assert_eq!(unsafe { cg_vocab_size(v) }, 128_256);
    v
}

fn cache_stats(cache: *const cg_grammar_cache) -> cg_grammar_cache_stats {
    let mut s: cg_grammar_cache_stats = unsafe { std::mem::zeroed() };
    s.struct_size = std::mem::size_of::<cg_grammar_cache_stats>() as u32;
    assert_eq!(unsafe { cg_grammar_cache_get_stats(cache, &mut s) }, CG_OK);
    s
}

/// Cached compiles in a plan: lookups and distinct keys.
fn cached_lookups() -> (u64, u64) {
    let mut keys = std::collections::HashSet::new();
    let mut n = 0;
    for t in 0..THREADS {
        for job in plan(t) {
            if let Job::Compile {
                source,
                cached: true,
                ..
            } = job
            {
                n += 1;
                keys.insert(source);
            }
        }
    }
    (n, keys.len() as u64)
}

#[test]
fn threads_share_a_vocabulary_and_grammars_and_agree_with_one_thread() {
    let vocab = load_vocab();
    let plans: Vec<Vec<Job>> = (0..THREADS).map(plan).collect();
    let (lookups, keys) = cached_lookups();

    // All threads at once, on cold grammars.
    let concurrent: Vec<Vec<Vec<u64>>> = {
        let sh = Shared::new(vocab);
        let start = Barrier::new(THREADS);
        let results = std::thread::scope(|s| {
            let handles: Vec<_> = plans
                .iter()
                .map(|jobs| {
                    let (sh, start) = (&sh, &start);
                    s.spawn(move || {
                        start.wait();
                        jobs.iter().map(|j| run(sh, j)).collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a thread failed"))
                .collect()
        });
        let s = cache_stats(sh.cache);
        assert_eq!(s.hits + s.misses, lookups);
        assert_eq!(s.entries, keys, "the cache holds each source once");
        results
    };

    // The same jobs in one thread, on grammars compiled again.
    let sequential: Vec<Vec<Vec<u64>>> = {
        let sh = Shared::new(vocab);
        let results = plans
            .iter()
            .map(|jobs| jobs.iter().map(|j| run(&sh, j)).collect())
            .collect();
        let s = cache_stats(sh.cache);
        assert_eq!((s.hits + s.misses, s.misses), (lookups, keys));
        results
    };

    let mut records = 0;
    let mut values = 0;
    for (t, (a, b)) in concurrent.iter().zip(&sequential).enumerate() {
        for (j, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(!x.is_empty());
            assert_eq!(
                x, y,
                "thread {t} job {j} ({:?}) differs from one thread",
                plans[t][j]
            );
            records += 1;
            values += x.len();
        }
    }
    eprintln!("threads: {THREADS} threads x {} jobs, {records} records ({values} values) identical to one thread",
        plans[0].len());
    unsafe { cg_vocab_free(vocab) };
}

/// Matchers created on one thread and used on another (one at a time), and
/// freed on a third; grammars freed while their matchers run elsewhere.
#[test]
fn handles_move_between_threads() {
    let vocab = load_vocab();
    let sh = Shared::new(vocab);
    let tokens = sh.tokenize(TEXTS[1].2);
    let g = compile(vocab, &schema(PERSON_SCHEMA));
    struct Moved<T>(T);
    unsafe impl<T> Send for Moved<T> {}
    let ms: Vec<Moved<*mut cg_matcher>> = (0..4)
        .map(|_| Moved(unsafe { cg_matcher_new(g) }))
        .collect();
    unsafe { cg_free(g) };
    let n_words = sh.n_words;
    let eos = sh.eos[0];
    let walked: Vec<Moved<*mut cg_matcher>> = std::thread::scope(|s| {
        ms.into_iter()
            .map(|m| {
                let tokens = &tokens;
                s.spawn(move || {
                    let m = m;
                    let mut mask = vec![0u32; n_words];
                    for &t in tokens {
                        assert_eq!(
                            unsafe { cg_fill_mask(m.0, mask.as_mut_ptr(), n_words) },
                            CG_OK
                        );
                        assert!(bit(&mask, t));
                        assert_eq!(unsafe { cg_accept(m.0, t) }, CG_OK);
                    }
                    m
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect()
    });
    std::thread::spawn(move || {
        let walked = walked;
        for m in walked {
            unsafe {
                assert_eq!(cg_is_accepting(m.0), 1);
                assert_eq!(cg_accept(m.0, eos), CG_OK);
                cg_matcher_free(m.0);
            }
        }
    })
    .join()
    .unwrap();
    drop(sh);
    unsafe { cg_vocab_free(vocab) };
}

/// Each thread has its own error message and code.
#[test]
fn errors_are_per_thread() {
    let vocab = load_vocab();
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let start = &start;
            let vocab = vocab as usize;
            s.spawn(move || {
                start.wait();
                for i in 0..50 {
                    let src = format!("root ::= \"x{t}\" (");
                    let g = unsafe {
                        cg_compile(
                            vocab as *const cg_vocab,
                            src.as_ptr().cast(),
                            src.len(),
                            null(),
                        )
                    };
                    assert!(g.is_null());
                    assert_eq!(cg_last_error_code(), CG_ERR_PARSE);
                    assert!(last_error().starts_with("cg_compile: "), "{}", last_error());
                    let rc = unsafe { cg_accept(null_mut(), i) };
                    assert_eq!(rc, CG_ERR_INVALID_ARGUMENT);
                    assert_eq!(cg_last_error_code(), CG_ERR_INVALID_ARGUMENT);
                    assert_eq!(last_error(), "cg_accept: matcher is NULL");
                }
            });
        }
    });
    unsafe { cg_vocab_free(vocab) };
}
