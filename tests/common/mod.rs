//! Helpers shared by the oracle and llama.cpp vector tests: where the data
//! and tokenizers are, small vocabularies, a seeded RNG, mask bits.
#![allow(dead_code)]

pub mod reference;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use cgram::{Engine, Vocab, TOKEN_SPECIAL};

use reference::SortedVocab;

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// llama.cpp's grammar test data, vendored in `tests/data/llamacpp-grammar`.
pub fn llamacpp_dir() -> PathBuf {
    manifest_dir().join("tests/data/llamacpp-grammar")
}

/// llama.cpp's example grammars (`*.gbnf`), sorted by name.
pub fn example_grammars() -> Vec<(String, String)> {
    let dir = llamacpp_dir().join("gbnf");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "gbnf"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect();
    assert!(!out.is_empty(), "no .gbnf files in {}", dir.display());
    out.sort();
    out
}

/// The MaskBench folder: `$CGRAM_MASKBENCH` when set (the whole
/// `maskbench-dev`, say), else the 12 schemas vendored in
/// `tests/data/maskbench-subset`. No other place is looked at, so that a
/// test runs the same on every machine.
pub fn maskbench_dir() -> PathBuf {
    match std::env::var_os("CGRAM_MASKBENCH") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => manifest_dir().join("tests/data/maskbench-subset"),
    }
}

/// The `*.json` files of [`maskbench_dir`], sorted.
pub fn maskbench_files() -> Vec<PathBuf> {
    let dir = maskbench_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("MaskBench folder {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no MaskBench files in {}", dir.display());
    files
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON in {}: {e}", path.display()))
}

/// `${CGRAM_CACHE:-<repo>/.cache}`.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("CGRAM_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => manifest_dir().join(".cache"),
    }
}

/// The tokenizer file of a fetched tokenizer (`llama3`, `spm`, ...).
/// Panics, telling how to fetch it, when it is missing: tests that need a
/// real tokenizer must never pass without one.
pub fn tokenizer_path(name: &str) -> PathBuf {
    let file = if name == "tekken" {
        "tekken.json"
    } else {
        "tokenizer.json"
    };
    let p = cache_dir().join("tokenizers").join(name).join(file);
    if !p.is_file() {
        panic!(
            "tokenizer '{name}' not found at {}: run scripts/fetch-tokenizers.sh \
             (it fetches the real tokenizers into ${{CGRAM_CACHE:-.cache}}/tokenizers)",
            p.display()
        );
    }
    p
}

/// A real tokenizer's vocabulary (loaded once per test binary).
pub fn real_engine(name: &str) -> Arc<Engine> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Engine>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().unwrap().get(name) {
        return v.clone();
    }
    let path = tokenizer_path(name);
    let v = Engine::new(
        Vocab::from_tokenizer_json(&path)
            .unwrap_or_else(|e| panic!("loading {}: {e}", path.display())),
    );
    assert!(
        !v.vocab().eos_tokens().is_empty(),
        "tokenizer '{name}' has no end-of-sequence token"
    );
    cache.lock().unwrap().insert(name.to_string(), v.clone());
    v
}

/// A small synthetic vocabulary: every single byte, some multi-byte tokens
/// (words, punctuation runs, whole and partial UTF-8 characters, invalid
/// UTF-8), special tokens and an end-of-sequence token.
pub fn synthetic_engine() -> Arc<Engine> {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let mut flags = vec![0u32; 256];
    let texts: &[&[u8]] = &[
        b"ab",
        b"abc",
        b"ba",
        b"aa",
        b"aaa",
        b"bb",
        b"xyz",
        b"true",
        b"false",
        b"null",
        b"tr",
        b"ue",
        b"fa",
        b"lse",
        b"nu",
        b"ll",
        b"12",
        b"123",
        b"00",
        b"0.",
        b".5",
        b"e+",
        b"-1",
        b"{\"",
        b"\":",
        b"\": ",
        b"\",",
        b"\", \"",
        b"\"}",
        b"}}",
        b"]]",
        b"[[",
        b"[{",
        b"},",
        b"}]",
        b", ",
        b" \"",
        b"  ",
        b"   ",
        b"\n",
        b"\n ",
        b"\n  ",
        b"\\n",
        b"\\\"",
        b"\\u00",
        b"\\u",
        b"()",
        b"((",
        b"))",
        b"+1",
        b"*2",
        b" = ",
        b"a b",
        b"hello",
        b" world",
        b"\xc3\xa9",
        b"\xc3",
        b"\xa9",
        b"\xe2\x82\xac",
        b"\xe2\x82",
        b"\x82\xac",
        b"\xe2",
        b"\xf0\x9f\x98\x80",
        b"\xf0\x9f",
        b"\x98\x80",
        b"\xf0\x9f\x98",
        b"a\xc3",
        b"\xc3\xa9a",
        b"\xce\xb1\xce\xb2",
        b"\xe3\x81\x82",
        b"\xe3\x81\x82\xe3\x81",
        b"\xed\x9f\xbf",
        b"\xee\x80\x80",
        b"\xed\xa0\x80",
        b"\xef\xbf\xbf",
        b"\xf4\x8f\xbf\xbf",
        b"\xf4\x90\x80\x80",
        b"\xc0\x80",
        b"\xff\xfe",
        b"\x00a",
        b"a\x00",
    ];
    for t in texts {
        tokens.push(t.to_vec());
        flags.push(0);
    }
    for t in [&b"<s>"[..], b"<|special|>", b"</s>", b"<|eot|>", b"a"] {
        tokens.push(t.to_vec());
        flags.push(TOKEN_SPECIAL);
    }
    let n = tokens.len() as u32;
    // "</s>" and "<|eot|>" end the sequence.
    let eos = vec![n - 3, n - 2];
    Engine::new(Vocab::new(tokens, flags, eos).unwrap())
}

/// The text tokens of `vocab` (not special, not end-of-sequence, not empty)
/// sorted by bytes, for the reference's whole-vocabulary walks.
pub fn sorted_vocab(vocab: &Vocab) -> SortedVocab {
    let toks: Vec<Option<&[u8]>> = (0..vocab.len() as u32)
        .map(|t| {
            if vocab.is_special(t) || vocab.is_eos(t) {
                None
            } else {
                Some(vocab.token_bytes(t))
            }
        })
        .collect();
    SortedVocab::new(&toks)
}

/// Bit `t` of a token mask.
#[inline]
pub fn mask_bit(mask: &[u32], t: u32) -> bool {
    mask[(t >> 5) as usize] >> (t & 31) & 1 == 1
}

/// An environment variable as a number, or `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        _ => default,
    }
}

/// Printable form of token or text bytes.
pub fn show(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            s.extend(c.escape_debug());
        }
        for b in chunk.invalid() {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s.push('"');
    s
}

/// The last `n` bytes of `text`, shown.
pub fn show_tail(text: &[u8], n: usize) -> String {
    if text.len() <= n {
        show(text)
    } else {
        format!("...{}", show(&text[text.len() - n..]))
    }
}

/// SplitMix64: a small seeded generator.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// A stable 64-bit hash of a string (FNV-1a), to derive per-case seeds.
pub fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}
