//! Loading Mistral `tekken.json` files (the tiktoken-style tokenizer of
//! Mistral NeMo, Pixtral, Ministral and later models).
//!
//! A tekken file is not a HuggingFace `tokenizer.json`: it holds
//!
//! - `vocab`: the byte-level BPE tokens, each `{"rank", "token_bytes"
//!   (base64), "token_str"}`, in rank order;
//! - `special_tokens` (optional in older files): `{"rank", "token_str",
//!   "is_control"}`;
//! - `config`: `default_num_special_tokens`, `default_vocab_size`,
//!   `version`, and the pre-tokenizer `pattern`.
//!
//! Ids follow mistral-common's `Tekkenizer`: the first
//! `default_num_special_tokens` ids are the special tokens (at their
//! ranks; ranks no special token claims are `<SPECIAL_N>` fillers), and a
//! regular token of rank `r` has id `r + default_num_special_tokens`. The
//! regular vocabulary is cut to its first `default_vocab_size -
//! default_num_special_tokens` ranks, so the vocabulary has exactly
//! `default_vocab_size` ids. Files of version `v7` or older without
//! `special_tokens` get the twenty special tokens mistral-common gives them
//! (`<unk>`, `<s>`, `</s>`, `[INST]`, ...). Every special token is flagged
//! [`TOKEN_SPECIAL`] and has its `token_str` as text; the end-of-sequence
//! token is `</s>`.

use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::Value;

use super::{Vocab, MAX_VOCAB_SIZE, TOKEN_SPECIAL};
use crate::error::{Error, Result};

/// What mistral-common assumes for tekken files up to `v7` that list no
/// special tokens (`Tekkenizer.DEPRECATED_SPECIAL_TOKENS`), at ranks 0...
const DEPRECATED_SPECIAL_TOKENS: [&str; 20] = [
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
];

const EOS: &str = "</s>";

/// The tekken file is malformed: `message`.
fn malformed(message: impl Into<String>) -> Error {
    Error::io(format!("tekken file: {}", message.into()))
}

fn get_usize(obj: &Value, key: &str) -> Result<Option<usize>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| malformed(format!("`{key}` is not a non-negative integer"))),
    }
}

/// One regular token of a tekken file: its rank and (decoded) bytes.
pub(super) struct Entry {
    rank: u64,
    bytes: Vec<u8>,
}

/// Reads a tekken file's `vocab` list in a streaming pass, decoding each
/// `token_bytes` as it goes (`token_str` is skipped).
pub(super) struct VocabSeed;

impl<'de> DeserializeSeed<'de> for VocabSeed {
    type Value = Vec<Entry>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Entry>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for VocabSeed {
    type Value = Vec<Entry>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tekken vocab list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Vec<Entry>, A::Error> {
        let mut out = Vec::with_capacity(s.size_hint().unwrap_or(0));
        while let Some(e) = s.next_element_seed(EntryVisitor)? {
            out.push(e);
        }
        Ok(out)
    }
}

struct EntryVisitor;

impl<'de> DeserializeSeed<'de> for EntryVisitor {
    type Value = Entry;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Entry, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tekken vocab entry {rank, token_bytes, token_str}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Entry, A::Error> {
        let mut rank = None;
        let mut bytes = None;
        while let Some(key) = m.next_key::<Field>()? {
            match key {
                Field::Rank => rank = Some(m.next_value::<u64>()?),
                Field::TokenBytes => bytes = Some(m.next_value_seed(Base64)?),
                Field::Other => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        match (rank, bytes) {
            (Some(rank), Some(bytes)) => Ok(Entry { rank, bytes }),
            _ => Err(de::Error::custom(
                "a tekken vocab entry lacks `rank` or `token_bytes`",
            )),
        }
    }
}

/// The keys of a vocab entry that matter, read without allocating.
enum Field {
    Rank,
    TokenBytes,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Field, E> {
                Ok(match s {
                    "rank" => Field::Rank,
                    "token_bytes" => Field::TokenBytes,
                    _ => Field::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// A base64 string, decoded without an intermediate `String`.
struct Base64;

impl<'de> DeserializeSeed<'de> for Base64 {
    type Value = Vec<u8>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Base64 {
    type Value = Vec<u8>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a base64 string")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Vec<u8>, E> {
        base64_decode(s).ok_or_else(|| E::custom(format!("token_bytes {s:?} is not base64")))
    }
}

/// The vocabulary of a tekken file from its `config`, `special_tokens`
/// (`Null` when absent) and `vocab`.
pub(super) fn build(config: &Value, special_tokens: &Value, vocab: Vec<Entry>) -> Result<Vocab> {
    let num_special = get_usize(config, "default_num_special_tokens")?
        .ok_or_else(|| malformed("`config.default_num_special_tokens` is missing"))?;
    let vocab_size =
        get_usize(config, "default_vocab_size")?.unwrap_or(vocab.len().saturating_add(num_special));
    if vocab_size > MAX_VOCAB_SIZE {
        return Err(Error::limit(format!(
            "tekken file: vocabulary of {vocab_size} tokens exceeds the limit of {MAX_VOCAB_SIZE}"
        )));
    }
    if vocab_size < num_special {
        return Err(malformed(format!(
            "default_vocab_size {vocab_size} is smaller than default_num_special_tokens {num_special}"
        )));
    }
    let inner = vocab_size - num_special;
    if vocab.len() < inner {
        return Err(malformed(format!(
            "default_vocab_size {vocab_size} needs {inner} regular tokens but `vocab` has {}",
            vocab.len()
        )));
    }

    // The ids the file names: its special tokens (or the implied ones of
    // old files) and the regular tokens in use; the other special ranks
    // become fillers.
    let named_specials = match special_tokens {
        Value::Array(list) => list.len().min(num_special),
        _ => DEPRECATED_SPECIAL_TOKENS.len().min(num_special),
    };
    super::check_dense_ids(named_specials + inner, vocab_size)
        .map_err(|e| malformed(e.message()))?;

    let mut tokens: Vec<Vec<u8>> = Vec::with_capacity(vocab_size);
    let mut flags = vec![0u32; vocab_size];

    // Special tokens: at their ranks; fillers for the ranks nobody claims.
    let mut specials: Vec<Option<String>> = vec![None; num_special];
    match special_tokens {
        Value::Array(list) => {
            for entry in list {
                let rank = get_usize(entry, "rank")?
                    .ok_or_else(|| malformed("a special token has no `rank`"))?;
                let text = entry
                    .get("token_str")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed(format!("special token {rank} has no `token_str`")))?;
                let slot = specials.get_mut(rank).ok_or_else(|| {
                    malformed(format!(
                        "special token {text:?} has rank {rank}, not below default_num_special_tokens {num_special}"
                    ))
                })?;
                if slot.is_some() {
                    return Err(malformed(format!("two special tokens have rank {rank}")));
                }
                *slot = Some(text.to_owned());
            }
        }
        Value::Null => {
            let version = config.get("version").and_then(Value::as_str).unwrap_or("");
            let old = version
                .strip_prefix('v')
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| n <= 7);
            if !old {
                return Err(malformed(format!(
                    "no `special_tokens` (only files of version v7 or older may omit them; this one is {version:?})"
                )));
            }
            if num_special < DEPRECATED_SPECIAL_TOKENS.len() {
                return Err(malformed(format!(
                    "default_num_special_tokens {num_special} is less than the {} implied special tokens",
                    DEPRECATED_SPECIAL_TOKENS.len()
                )));
            }
            for (slot, text) in specials.iter_mut().zip(DEPRECATED_SPECIAL_TOKENS) {
                *slot = Some(text.to_owned());
            }
        }
        _ => return Err(malformed("`special_tokens` is not an array")),
    }
    let mut eos = Vec::new();
    for (rank, text) in specials.into_iter().enumerate() {
        let text = text.unwrap_or_else(|| format!("<SPECIAL_{rank}>"));
        if text == EOS {
            eos.push(rank as u32);
        }
        tokens.push(text.into_bytes());
        flags[rank] = TOKEN_SPECIAL;
    }

    // Regular tokens: rank r is id r + num_special.
    for (i, entry) in vocab.into_iter().take(inner).enumerate() {
        if entry.rank != i as u64 {
            return Err(malformed(format!(
                "vocab entry {i} has rank {}; ranks must be 0, 1, 2, ... in order",
                entry.rank
            )));
        }
        tokens.push(entry.bytes);
    }

    Vocab::new(tokens, flags, eos)
}

/// Decodes standard base64 (`A-Z a-z 0-9 + /`, `=` padding optional).
pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    fn sextet(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let data = s.trim_end_matches('=').as_bytes();
    if s.len() - data.len() > 2 || data.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    for chunk in data.chunks(4) {
        let mut acc = 0u32;
        for &c in chunk {
            acc = (acc << 6) | sextet(c)?;
        }
        match chunk.len() {
            4 => out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]),
            3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
            2 => out.push((acc >> 4) as u8),
            _ => unreachable!("length checked above"),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64() {
        assert_eq!(base64_decode("").unwrap(), b"");
        assert_eq!(base64_decode("AA==").unwrap(), [0]);
        assert_eq!(base64_decode("/w==").unwrap(), [255]);
        assert_eq!(base64_decode("Zm8=").unwrap(), b"fo");
        assert_eq!(base64_decode("Zm9v").unwrap(), b"foo");
        assert_eq!(base64_decode("Zm9vYg").unwrap(), b"foob");
        assert_eq!(base64_decode("ICgiKg==").unwrap(), b" (\"*");
        assert!(base64_decode("Z").is_none());
        assert!(base64_decode("Zm9v!").is_none());
        assert!(base64_decode("Zg===").is_none());
    }

    fn from_json(j: &Value) -> Result<Vocab> {
        let vocab = VocabSeed
            .deserialize(j["vocab"].clone())
            .map_err(|e| malformed(e.to_string()))?;
        build(&j["config"], &j["special_tokens"], vocab)
    }

    fn tiny(special_tokens: Option<Value>, version: &str) -> Value {
        let mut vocab: Vec<Value> = (0..256u32)
            .map(|i| json!({"rank": i, "token_bytes": "", "token_str": null}))
            .collect();
        for (i, v) in vocab.iter_mut().enumerate() {
            let b = [i as u8];
            // Encode with a tiny encoder of our own, to round-trip the decoder.
            let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let s = format!(
                "{}{}==",
                alphabet[(b[0] >> 2) as usize] as char,
                alphabet[((b[0] & 3) << 4) as usize] as char
            );
            v["token_bytes"] = json!(s);
        }
        vocab.push(json!({"rank": 256, "token_bytes": "aGk=", "token_str": "hi"}));
        vocab.push(json!({"rank": 257, "token_bytes": "eW8=", "token_str": "yo"}));
        let mut j = json!({
            "config": {"default_num_special_tokens": 24, "default_vocab_size": 24 + 257,
                       "version": version, "pattern": "."},
            "vocab": vocab,
        });
        if let Some(s) = special_tokens {
            j["special_tokens"] = s;
        }
        j
    }

    #[test]
    fn ids_specials_and_truncation() {
        let j = tiny(None, "v3");
        let v = from_json(&j).unwrap();
        assert_eq!(v.len(), 24 + 257);
        assert_eq!(v.token_bytes(0), b"<unk>");
        assert_eq!(v.token_bytes(2), b"</s>");
        assert_eq!(v.token_bytes(19), b"[TOOL_CONTENT]");
        assert_eq!(v.token_bytes(20), b"<SPECIAL_20>");
        assert!((0..24).all(|i| v.is_special(i)));
        assert_eq!(v.eos_tokens(), &[2]);
        assert_eq!(v.token_bytes(24), [0]);
        assert_eq!(v.token_bytes(24 + 255), [255]);
        assert!(!v.is_special(24 + 255));
        // rank 256 is "hi"; rank 257 is cut by default_vocab_size.
        assert_eq!(v.token_bytes(24 + 256), b"hi");
    }

    #[test]
    fn explicit_special_tokens() {
        let s = json!([
            {"rank": 0, "token_str": "<unk>", "is_control": true},
            {"rank": 1, "token_str": "<s>", "is_control": true},
            {"rank": 2, "token_str": "</s>", "is_control": true},
            {"rank": 5, "token_str": "[THINK]", "is_control": true},
        ]);
        let v = from_json(&tiny(Some(s), "v13")).unwrap();
        assert_eq!(v.token_bytes(3), b"<SPECIAL_3>");
        assert_eq!(v.token_bytes(5), b"[THINK]");
        assert_eq!(v.eos_tokens(), &[2]);
        // Newer files must list their special tokens.
        assert!(from_json(&tiny(None, "v13")).is_err());
        let out_of_range = json!([{"rank": 30, "token_str": "<x>"}]);
        assert!(from_json(&tiny(Some(out_of_range), "v13")).is_err());
    }

    #[test]
    fn mostly_filler_special_ranks_are_refused() {
        // 16 million special ranks, 20 of them named: a small file that
        // would build 16 million filler tokens.
        let mut j = tiny(None, "v3");
        j["config"]["default_num_special_tokens"] = json!(16_000_000);
        j["config"]["default_vocab_size"] = json!(16_000_000 + 257);
        let e = from_json(&j).expect_err("refused");
        assert_eq!(e.kind(), crate::error::ErrorKind::Io);
        assert!(e.message().contains("sparse"), "{}", e.message());
        // Fillers up to the free size are fine.
        j["config"]["default_num_special_tokens"] = json!(60_000);
        j["config"]["default_vocab_size"] = json!(60_000 + 257);
        assert_eq!(from_json(&j).unwrap().len(), 60_257);
    }
}
