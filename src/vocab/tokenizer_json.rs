//! Loading HuggingFace `tokenizer.json` files (and, through the same entry
//! point, Mistral `tekken.json` files: see [`super::tekken`]).
//!
//! # Token bytes
//!
//! cgram needs the exact bytes each token id stands for, which the file
//! does not store directly: they come out of the tokenizer's *decoder*.
//! The loader reads the vocabulary (`model.vocab`: a `{token: id}` map for
//! `BPE`, a `[[piece, score], ...]` list for `Unigram`) and the added tokens,
//! and runs every token through the per-token part of the decoder:
//!
//! - `ByteLevel` (GPT-2, Llama 3, Qwen, ...): each character is mapped back
//!   to its byte through GPT-2's bytes-to-unicode table (a token with a
//!   character outside the table keeps its UTF-8 text, as in `tokenizers`).
//! - SentencePiece style (Llama 2, Mistral v0.1, TinyLlama, Gemma, ...):
//!   `Replace` (e.g. `▁` → space), `ByteFallback` (a `<0xNN>` token is the
//!   single byte `NN`), `Metaspace` (its replacement character → space);
//!   `Fuse` joins tokens and changes nothing for one token. A `Strip` after
//!   a `Fuse` only trims the start of a whole text (the leading space of
//!   SentencePiece's dummy prefix), so it is not applied to tokens; before
//!   any `Fuse` it is applied per token, as `tokenizers` does. When the
//!   model has `byte_fallback` on, `<0xNN>` tokens are bytes even if the
//!   decoder forgot `ByteFallback`.
//! - With no decoder, the pre-tokenizer decides (`ByteLevel` or
//!   `Metaspace`).
//! - Anything else (`WordPiece`, `BPEDecoder`, `CTC`, a regex `Replace`, a
//!   `WordPiece` or `WordLevel` model) is refused with
//!   [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported) naming
//!   it (under most of them a token's text depends on its neighbours).
//!
//! Added tokens (`added_tokens`) are their `content` as UTF-8, not decoded;
//! those with `"special": true` are flagged [`TOKEN_SPECIAL`]. Ids that no
//! token has (holes below the largest id) have empty bytes, so they never
//! match text; a file of more than 65,536 ids with holes in most of them
//! is refused (see [`super::check_dense_ids`]).
//!
//! A file with no `model` and a top-level `vocab` list is a Mistral tekken
//! file and is read by [`super::tekken`], whatever its name.
//!
//! # End-of-sequence tokens
//!
//! 1. `tokenizer_config.json` next to the file: its `eos_token` (a string,
//!    or an object with `content`), looked up among the tokens.
//! 2. `generation_config.json` next to the file: `eos_token_id` (an id or a
//!    list of ids).
//!
//! The union of both when either is present. Otherwise every added token
//! whose text is one of the well-known end markers: `<|end_of_text|>`,
//! `<|eot_id|>`, `<|eom_id|>`, `</s>`, `<|endoftext|>`, `<|im_end|>`,
//! `<eos>`, `<end_of_turn>`, `<|end|>`. If none is found the list is empty
//! (the host can set it with [`Vocab::with_eos`]).
//!
//! # Speed
//!
//! The file is read in one streaming `serde` pass that keeps only what is
//! needed (the BPE merges, most of a tokenizer.json, are skipped unbuilt).
//! For Llama 3 (128k tokens) loading and building the vocabulary and its
//! trie takes about 40-60 ms in a release build, where
//! `tokenizers::Tokenizer::from_file` alone takes about 270 ms.

use std::fmt;
use std::path::Path;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{check_dense_ids, tekken, Vocab, MAX_VOCAB_SIZE, TOKEN_SPECIAL};
use crate::error::{Error, ErrorKind, Result};

/// Added-token texts taken as end-of-sequence when no config file names one.
pub const WELL_KNOWN_EOS: [&str; 9] = [
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "</s>",
    "<|endoftext|>",
    "<|im_end|>",
    "<eos>",
    "<end_of_turn>",
    "<|end|>",
];

/// Loads a `tokenizer.json` (or a `tekken.json`); see the module docs.
pub fn load(path: &Path) -> Result<Vocab> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
    let raw: RawFile = serde_json::from_slice(&bytes).map_err(|e| {
        Error::io(format!(
            "{}: not a tokenizer.json or tekken.json: {e}",
            path.display()
        ))
    })?;
    drop(bytes);
    build(raw, path.parent()).map_err(|e| {
        // What the file holds is never the caller's argument: a file that
        // makes no vocabulary (no tokens at all, say) is not a tokenizer,
        // `CG_ERR_IO` as the header says.
        let e = match e.kind() {
            ErrorKind::InvalidArgument => Error::io(e.message()),
            _ => e,
        };
        e.context(path.display())
    })
}

/// The vocabulary of a read file; `dir` is where to look for
/// `tokenizer_config.json` and `generation_config.json`.
fn build(raw: RawFile, dir: Option<&Path>) -> Result<Vocab> {
    if raw.model.is_none() {
        if let Some(vocab) = raw.tekken_vocab {
            return tekken::build(&raw.config, &raw.special_tokens, vocab);
        }
        return Err(malformed(
            "no `model`: neither a tokenizer.json nor a tekken.json",
        ));
    }
    let parsed = parse(raw)?;
    let eos = find_eos(&parsed, dir)?;
    Vocab::new(parsed.tokens, parsed.flags, eos)
}

/// The tokenizer file is malformed: `message`.
fn malformed(message: impl Into<String>) -> Error {
    Error::io(message.into())
}

/// What cgram reads of a tokenizer file, read in one streaming pass: the
/// BPE merges (most of a tokenizer.json) are skipped, not built.
#[derive(Default)]
struct RawFile {
    model: Option<RawModel>,
    added_tokens: Value,
    decoder: Value,
    pre_tokenizer: Value,
    /// A tekken file's top-level `vocab`, `config` and `special_tokens`.
    tekken_vocab: Option<Vec<tekken::Entry>>,
    config: Value,
    special_tokens: Value,
}

#[derive(Default)]
struct RawModel {
    ty: Option<String>,
    byte_fallback: bool,
    has_merges: bool,
    vocab: RawVocab,
}

#[derive(Default)]
enum RawVocab {
    #[default]
    Missing,
    /// BPE, WordPiece, WordLevel: `{token: id}`.
    Map(Vec<(String, u32)>),
    /// Unigram: `[[piece, score], ...]`, id = index.
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for RawFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawFile;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tokenizer.json object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<RawFile, A::Error> {
                let mut raw = RawFile::default();
                while let Some(key) = m.next_key::<String>()? {
                    match key.as_str() {
                        "model" => raw.model = Some(m.next_value()?),
                        "added_tokens" => raw.added_tokens = m.next_value()?,
                        "decoder" => raw.decoder = m.next_value()?,
                        "pre_tokenizer" => raw.pre_tokenizer = m.next_value()?,
                        "vocab" => raw.tekken_vocab = Some(m.next_value_seed(tekken::VocabSeed)?),
                        "config" => raw.config = m.next_value()?,
                        "special_tokens" => raw.special_tokens = m.next_value()?,
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(raw)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for RawModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawModel;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tokenizer model object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<RawModel, A::Error> {
                let mut model = RawModel::default();
                while let Some(key) = m.next_key::<String>()? {
                    match key.as_str() {
                        "type" => model.ty = Some(m.next_value()?),
                        "byte_fallback" => {
                            model.byte_fallback = m.next_value::<Option<bool>>()?.unwrap_or(false)
                        }
                        "vocab" => model.vocab = m.next_value()?,
                        "merges" => {
                            model.has_merges = true;
                            m.next_value::<IgnoredAny>()?;
                        }
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(model)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for RawVocab {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawVocab;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a vocabulary: {token: id} or [[piece, score], ...]")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<RawVocab, A::Error> {
                let mut v = Vec::with_capacity(m.size_hint().unwrap_or(0));
                while let Some(entry) = m.next_entry::<String, u32>()? {
                    v.push(entry);
                }
                Ok(RawVocab::Map(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> std::result::Result<RawVocab, A::Error> {
                let mut v = Vec::with_capacity(s.size_hint().unwrap_or(0));
                while let Some((piece, _score)) = s.next_element::<(String, IgnoredAny)>()? {
                    v.push(piece);
                }
                Ok(RawVocab::List(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// Token bytes and flags, plus what EOS detection needs.
struct Parsed {
    tokens: Vec<Vec<u8>>,
    flags: Vec<u32>,
    /// `(content, id)` of every added token, in file order.
    added: Vec<(String, u32)>,
    /// The model vocabulary's `(text, id)` (for `eos_token` lookups).
    model_tokens: Vec<(String, u32)>,
}

/// One per-token decoding step.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// GPT-2 byte-level: chars back to bytes.
    ByteLevel,
    /// `<0xNN>` -> byte NN.
    ByteFallback,
    /// Replace every occurrence of `from` with `to`.
    Replace { from: Vec<u8>, to: Vec<u8> },
    /// Strip up to `start` leading and `stop` trailing `content` chars.
    Strip {
        content: char,
        start: usize,
        stop: usize,
    },
}

fn parse(raw: RawFile) -> Result<Parsed> {
    let model = raw.model.unwrap_or_default();
    let model_type = match model.ty.as_deref() {
        Some(t) => t,
        // Old files without a type: tokenizers tells the models apart by shape.
        None if model.has_merges => "BPE",
        None if matches!(model.vocab, RawVocab::List(_)) => "Unigram",
        None => {
            return Err(Error::unsupported(
                "model has no `type` and is not BPE or Unigram",
            ))
        }
    };
    let entries: Vec<(String, u32)> = match (model_type, model.vocab) {
        ("BPE", RawVocab::Map(v)) => v,
        ("Unigram", RawVocab::List(v)) => v
            .into_iter()
            .enumerate()
            .map(|(i, p)| (p, i as u32))
            .collect(),
        ("BPE", _) => return Err(malformed("BPE model has no `vocab` object")),
        ("Unigram", _) => return Err(malformed("Unigram model has no `vocab` list")),
        (other, _) => {
            return Err(Error::unsupported(format!(
                "tokenizer model type {other} is not supported (only BPE and Unigram: \
                 byte-level or SentencePiece-style vocabularies)"
            )))
        }
    };

    let mut added: Vec<(String, u32, bool)> = Vec::new();
    if !raw.added_tokens.is_null() {
        let list = raw
            .added_tokens
            .as_array()
            .ok_or_else(|| malformed("`added_tokens` is not a list"))?;
        for t in list {
            let content = t
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("an added token has no `content`"))?;
            let id = t
                .get("id")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| malformed(format!("added token {content:?} has no valid `id`")))?;
            let special = t.get("special").and_then(Value::as_bool).unwrap_or(false);
            added.push((content.to_owned(), id, special));
        }
    }

    let max_id = entries
        .iter()
        .map(|e| e.1)
        .chain(added.iter().map(|a| a.1))
        .max()
        .ok_or_else(|| Error::invalid("the tokenizer has no tokens"))?;
    let size = max_id as usize + 1;
    if size > MAX_VOCAB_SIZE {
        return Err(Error::limit(format!(
            "token id {max_id} exceeds the vocabulary size limit of {MAX_VOCAB_SIZE}"
        )));
    }
    let mut named: Vec<u32> = entries
        .iter()
        .map(|e| e.1)
        .chain(added.iter().map(|a| a.1))
        .collect();
    named.sort_unstable();
    named.dedup();
    check_dense_ids(named.len(), size)?;
    drop(named);

    let mut steps = decoder_steps(&raw.decoder, &raw.pre_tokenizer)?;
    if model.byte_fallback && !steps.contains(&Step::ByteFallback) {
        steps.insert(0, Step::ByteFallback);
    }

    let mut tokens: Vec<Vec<u8>> = vec![Vec::new(); size];
    let mut filled = vec![false; size];
    for (text, id) in &entries {
        let slot = *id as usize;
        if filled[slot] {
            return Err(malformed(format!(
                "token id {id} appears twice in the model vocabulary"
            )));
        }
        filled[slot] = true;
        tokens[slot] = decode_token(text, &steps);
    }
    let mut flags = vec![0u32; size];
    for (content, id, special) in &added {
        let slot = *id as usize;
        tokens[slot] = content.as_bytes().to_vec();
        if *special {
            flags[slot] = TOKEN_SPECIAL;
        }
    }
    Ok(Parsed {
        tokens,
        flags,
        added: added.into_iter().map(|(c, id, _)| (c, id)).collect(),
        model_tokens: entries,
    })
}

/// The per-token decoding steps of the file's decoder (or, without one,
/// of its pre-tokenizer).
fn decoder_steps(decoder: &Value, pre: &Value) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    match decoder {
        Value::Null => {
            let mut kinds = Vec::new();
            pre_tokenizer_kinds(pre, &mut kinds);
            if kinds.contains(&"ByteLevel") {
                steps.push(Step::ByteLevel);
            } else if let Some(m) = find_metaspace(pre) {
                steps.push(metaspace_step(m)?);
            } else {
                return Err(Error::unsupported(
                    "the tokenizer has no decoder and no ByteLevel or Metaspace pre-tokenizer, \
                     so its tokens' bytes are unknown",
                ));
            }
        }
        decoder => {
            let mut fused = false;
            add_decoder(decoder, &mut steps, &mut fused)?;
        }
    }
    Ok(steps)
}

fn add_decoder(d: &Value, steps: &mut Vec<Step>, fused: &mut bool) -> Result<()> {
    let ty = d.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "Sequence" => {
            let list = d
                .get("decoders")
                .and_then(Value::as_array)
                .ok_or_else(|| malformed("Sequence decoder has no `decoders` list"))?;
            for sub in list {
                add_decoder(sub, steps, fused)?;
            }
        }
        "ByteLevel" => {
            steps.push(Step::ByteLevel);
            *fused = true;
        }
        "ByteFallback" => steps.push(Step::ByteFallback),
        "Fuse" => *fused = true,
        "Metaspace" => steps.push(metaspace_step(d)?),
        "Replace" => {
            let pattern = d.get("pattern").unwrap_or(&Value::Null);
            let from = pattern.get("String").and_then(Value::as_str).ok_or_else(|| {
                Error::unsupported(format!(
                    "Replace decoder with pattern {pattern} is not supported (only a plain String pattern)"
                ))
            })?;
            let to = d
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("Replace decoder has no `content`"))?;
            if !from.is_empty() {
                steps.push(Step::Replace {
                    from: from.as_bytes().to_vec(),
                    to: to.as_bytes().to_vec(),
                });
            }
        }
        "Strip" => {
            if !*fused {
                let content = d
                    .get("content")
                    .and_then(Value::as_str)
                    .and_then(|s| s.chars().next())
                    .ok_or_else(|| malformed("Strip decoder has no `content` character"))?;
                let n = |k: &str| d.get(k).and_then(Value::as_u64).unwrap_or(0) as usize;
                steps.push(Step::Strip {
                    content,
                    start: n("start"),
                    stop: n("stop"),
                });
            }
        }
        "" => return Err(malformed(format!("decoder without a `type`: {d}"))),
        other => {
            return Err(Error::unsupported(format!(
                "decoder type {other} is not supported: cgram cannot tell the exact bytes of \
                 its tokens (supported: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip)"
            )))
        }
    }
    Ok(())
}

fn metaspace_step(d: &Value) -> Result<Step> {
    let rep = d
        .get("replacement")
        .and_then(Value::as_str)
        .unwrap_or("\u{2581}");
    if rep.chars().count() != 1 {
        return Err(malformed(format!(
            "Metaspace replacement {rep:?} is not one character"
        )));
    }
    Ok(Step::Replace {
        from: rep.as_bytes().to_vec(),
        to: b" ".to_vec(),
    })
}

fn pre_tokenizer_kinds<'a>(p: &'a Value, out: &mut Vec<&'a str>) {
    if let Some(ty) = p.get("type").and_then(Value::as_str) {
        out.push(ty);
    }
    if let Some(list) = p.get("pretokenizers").and_then(Value::as_array) {
        for sub in list {
            pre_tokenizer_kinds(sub, out);
        }
    }
}

fn find_metaspace(p: &Value) -> Option<&Value> {
    if p.get("type").and_then(Value::as_str) == Some("Metaspace") {
        return Some(p);
    }
    p.get("pretokenizers")
        .and_then(Value::as_array)?
        .iter()
        .find_map(find_metaspace)
}

/// GPT-2's bytes-to-unicode table, inverted: for each char below U+0144,
/// the byte it stands for, or `NO_BYTE`. Printable bytes (`!`..=`~`,
/// `¡`..=`¬`, `®`..=`ÿ`) stand for themselves; the other 68 bytes take the
/// chars U+0100, U+0101, ... in byte order.
fn byte_level_table() -> &'static [u16; 0x144] {
    use std::sync::OnceLock;
    static TABLE: OnceLock<[u16; 0x144]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = [NO_BYTE; 0x144];
        let mut next = 0x100;
        for b in 0..=255u8 {
            let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
            let c = if printable {
                b as usize
            } else {
                next += 1;
                next - 1
            };
            table[c] = b as u16;
        }
        table
    })
}

const NO_BYTE: u16 = u16::MAX;

/// The byte a char stands for in GPT-2's byte-level alphabet.
pub(super) fn byte_level_byte(c: char) -> Option<u8> {
    let table = byte_level_table();
    table
        .get(c as usize)
        .filter(|&&b| b != NO_BYTE)
        .map(|&b| b as u8)
}

fn decode_token(text: &str, steps: &[Step]) -> Vec<u8> {
    let mut cur: Vec<u8> = text.as_bytes().to_vec();
    for step in steps {
        match step {
            Step::ByteLevel => {
                let Ok(s) = std::str::from_utf8(&cur) else {
                    continue;
                };
                // A char outside the alphabet keeps the token's UTF-8 text.
                if let Some(bytes) = s.chars().map(byte_level_byte).collect() {
                    cur = bytes;
                }
            }
            Step::ByteFallback => {
                if cur.len() == 6 && cur.starts_with(b"<0x") && cur[5] == b'>' {
                    let hex = std::str::from_utf8(&cur[3..5]).ok();
                    if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                        cur = vec![b];
                    }
                }
            }
            Step::Replace { from, to } => {
                if cur.windows(from.len()).any(|w| w == from.as_slice()) {
                    cur = replace_all(&cur, from, to);
                }
            }
            Step::Strip {
                content,
                start,
                stop,
            } => {
                if let Ok(s) = std::str::from_utf8(&cur) {
                    let mut t = s;
                    for _ in 0..*start {
                        match t.strip_prefix(*content) {
                            Some(r) => t = r,
                            None => break,
                        }
                    }
                    for _ in 0..*stop {
                        match t.strip_suffix(*content) {
                            Some(r) => t = r,
                            None => break,
                        }
                    }
                    cur = t.as_bytes().to_vec();
                }
            }
        }
    }
    cur
}

fn replace_all(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// End-of-sequence ids; see the module docs.
fn find_eos(parsed: &Parsed, dir: Option<&Path>) -> Result<Vec<u32>> {
    let lookup = |text: &str| -> Option<u32> {
        parsed
            .added
            .iter()
            .find(|(c, _)| c == text)
            .map(|a| a.1)
            .or_else(|| {
                parsed
                    .model_tokens
                    .iter()
                    .find(|(t, _)| t == text)
                    .map(|m| m.1)
            })
    };
    let mut eos = Vec::new();
    let mut configured = false;
    if let Some(dir) = dir {
        if let Some(cfg) = read_side_json(&dir.join("tokenizer_config.json"))? {
            let tok = cfg.get("eos_token").unwrap_or(&Value::Null);
            let text = tok
                .as_str()
                .or_else(|| tok.get("content").and_then(Value::as_str));
            if let Some(text) = text {
                configured = true;
                let id = lookup(text).ok_or_else(|| {
                    Error::invalid(format!(
                        "tokenizer_config.json names eos_token {text:?}, which is not in the vocabulary"
                    ))
                })?;
                eos.push(id);
            }
        }
        if let Some(cfg) = read_side_json(&dir.join("generation_config.json"))? {
            let ids = match cfg.get("eos_token_id") {
                Some(Value::Array(list)) => list.iter().collect(),
                Some(Value::Null) | None => Vec::new(),
                Some(one) => vec![one],
            };
            for v in ids {
                configured = true;
                let id = v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| (n as usize) < parsed.tokens.len())
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "generation_config.json: eos_token_id {v} is not a token id"
                        ))
                    })?;
                eos.push(id);
            }
        }
    }
    if !configured {
        eos.extend(
            parsed
                .added
                .iter()
                .filter(|(c, _)| WELL_KNOWN_EOS.contains(&c.as_str()))
                .map(|a| a.1),
        );
    }
    eos.sort_unstable();
    eos.dedup();
    Ok(eos)
}

/// A JSON file next to the tokenizer, if it exists.
fn read_side_json(path: &Path) -> Result<Option<Value>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("cannot read {}: {e}", path.display()))),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Error::io(format!("{}: not valid JSON: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn from_json(json: &Value, dir: Option<&Path>) -> Result<Vocab> {
        let raw: RawFile =
            serde_json::from_value(json.clone()).map_err(|e| malformed(e.to_string()))?;
        build(raw, dir)
    }

    #[test]
    fn byte_level_table_is_gpt2s() {
        assert_eq!(byte_level_byte('!'), Some(b'!'));
        assert_eq!(byte_level_byte('~'), Some(b'~'));
        assert_eq!(byte_level_byte('\u{100}'), Some(0));
        assert_eq!(byte_level_byte('Ġ'), Some(b' ')); // U+0120
        assert_eq!(byte_level_byte('Ċ'), Some(b'\n')); // U+010A
        assert_eq!(byte_level_byte('ĉ'), Some(b'\t'));
        assert_eq!(byte_level_byte('ġ'), Some(127)); // U+0121
        assert_eq!(byte_level_byte('Ń'), Some(173)); // U+0143, the last one
        assert_eq!(byte_level_byte('\u{144}'), None);
        assert_eq!(byte_level_byte(' '), None);
        assert_eq!(byte_level_byte('é'), Some(0xE9));
        // A bijection between 256 chars and the 256 bytes.
        let mut seen = [false; 256];
        let mut n = 0;
        for c in 0..0x200u32 {
            if let Some(b) = char::from_u32(c).and_then(byte_level_byte) {
                assert!(!seen[b as usize]);
                seen[b as usize] = true;
                n += 1;
            }
        }
        assert_eq!(n, 256);
    }

    fn byte_level_file() -> Value {
        json!({
            "added_tokens": [
                {"id": 6, "content": "<|endoftext|>", "special": true},
                {"id": 7, "content": "<think>", "special": false},
            ],
            "decoder": {"type": "ByteLevel", "add_prefix_space": true},
            "model": {"type": "BPE", "vocab": {
                "a": 0, "Ġa": 1, "ĠĠ": 2, "Ċ": 3, "Ã©": 4, "ðŁ": 5, "x y": 9
            }, "merges": []}
        })
    }

    #[test]
    fn byte_level() {
        let v = from_json(&byte_level_file(), None).unwrap();
        assert_eq!(v.len(), 10);
        assert_eq!(v.token_bytes(0), b"a");
        assert_eq!(v.token_bytes(1), b" a");
        assert_eq!(v.token_bytes(2), b"  ");
        assert_eq!(v.token_bytes(3), b"\n");
        assert_eq!(v.token_bytes(4), "é".as_bytes());
        assert_eq!(v.token_bytes(5), [0xF0, 0x9F]);
        assert_eq!(v.token_bytes(6), b"<|endoftext|>");
        assert!(v.is_special(6));
        assert_eq!(v.token_bytes(7), b"<think>");
        assert!(!v.is_special(7));
        assert_eq!(v.token_bytes(8), b""); // a hole
        assert_eq!(v.token_bytes(9), b"x y"); // not byte-level: kept as text
        assert_eq!(v.eos_tokens(), &[6]);
    }

    #[test]
    fn ids_leaving_most_of_a_large_range_empty_are_refused() {
        let file = |ids: &[u32]| {
            let vocab: serde_json::Map<String, Value> = ids
                .iter()
                .map(|&id| (format!("t{id}"), json!(id)))
                .collect();
            json!({"decoder": {"type": "ByteLevel"},
                   "model": {"type": "BPE", "vocab": vocab, "merges": []}})
        };
        // One token at the largest id the limit allows: 16,777,216 ids.
        let e = from_json(&file(&[16_777_215]), None).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(
            e.message().contains("token ids are sparse"),
            "{}",
            e.message()
        );
        // Just under half of 70,000 ids, and half of them.
        let ids: Vec<u32> = (0..34_998).chain([69_999]).collect();
        assert!(from_json(&file(&ids), None).is_err());
        let ids: Vec<u32> = (0..35_000).map(|i| 2 * i).collect();
        assert_eq!(from_json(&file(&ids), None).unwrap().len(), 69_999);
        // Small vocabularies may have any holes.
        let v = from_json(&file(&[0, 65_535]), None).unwrap();
        assert_eq!(v.len(), 65_536);
        assert_eq!(v.token_bytes(65_535), b"t65535");
    }

    #[test]
    fn sentencepiece_style() {
        let j = json!({
            "added_tokens": [
                {"id": 0, "content": "<unk>", "special": true},
                {"id": 1, "content": "<s>", "special": true},
                {"id": 2, "content": "</s>", "special": true},
            ],
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0}
            ]},
            "model": {"type": "BPE", "byte_fallback": true, "vocab": {
                "<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "<0xFF>": 4,
                "▁the": 5, "▁▁": 6, "a▁b": 7, "<0x4>": 8
            }, "merges": []}
        });
        let v = from_json(&j, None).unwrap();
        assert_eq!(v.token_bytes(3), b"\n");
        assert_eq!(v.token_bytes(4), [0xFF]);
        assert_eq!(v.token_bytes(5), b" the");
        assert_eq!(v.token_bytes(6), b"  ");
        assert_eq!(v.token_bytes(7), b"a b");
        assert_eq!(v.token_bytes(8), b"<0x4>");
        assert!(v.is_special(1) && v.is_special(2));
        assert_eq!(v.eos_tokens(), &[2]);
    }

    #[test]
    fn metaspace_unigram_and_strip_before_fuse() {
        let j = json!({
            "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
            "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": true,
                      "vocab": [["<unk>", 0.0], ["▁hi", -1.0], ["<0x41>", -2.0]]}
        });
        let v = from_json(&j, None).unwrap();
        assert_eq!(v.token_bytes(1), b" hi");
        assert_eq!(v.token_bytes(2), b"A");
        assert!(v.eos_tokens().is_empty());

        let j = json!({
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Strip", "content": "_", "start": 2, "stop": 1}]},
            "model": {"type": "BPE", "vocab": {"___x__": 0}, "merges": []}
        });
        assert_eq!(from_json(&j, None).unwrap().token_bytes(0), b"_x_");
    }

    #[test]
    fn unsupported_is_named() {
        let j = json!({
            "decoder": {"type": "WordPiece", "prefix": "##"},
            "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}
        });
        let e = from_json(&j, None).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
        assert!(e.message().contains("WordPiece"), "{e}");
        let j = json!({
            "decoder": {"type": "WordPiece", "prefix": "##"},
            "model": {"type": "WordPiece", "vocab": {"a": 0}}
        });
        let e = from_json(&j, None).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
        assert!(e.message().contains("WordPiece"), "{e}");
        let j = json!({
            "decoder": {"type": "Replace", "pattern": {"Regex": "a+"}, "content": "b"},
            "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}
        });
        assert_eq!(
            from_json(&j, None).unwrap_err().kind(),
            crate::error::ErrorKind::Unsupported
        );
        assert!(from_json(&json!({"vocab": {}}), None).is_err());
    }

    #[test]
    fn no_decoder_uses_pre_tokenizer() {
        let j = json!({
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split"}, {"type": "ByteLevel"}]},
            "model": {"type": "BPE", "vocab": {"Ġa": 0}, "merges": []}
        });
        assert_eq!(from_json(&j, None).unwrap().token_bytes(0), b" a");
        let j = json!({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}});
        assert_eq!(
            from_json(&j, None).unwrap_err().kind(),
            crate::error::ErrorKind::Unsupported
        );
    }

    #[test]
    fn eos_from_config_files() {
        let dir = std::env::temp_dir().join(format!("cgram-eos-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokenizer.json");
        std::fs::write(&path, byte_level_file().to_string()).unwrap();
        // No config: the well-known name.
        assert_eq!(load(&path).unwrap().eos_tokens(), &[6]);
        // tokenizer_config.json's eos_token (object form) wins over names.
        std::fs::write(
            dir.join("tokenizer_config.json"),
            r#"{"eos_token": {"content": "<think>", "special": false}}"#,
        )
        .unwrap();
        assert_eq!(load(&path).unwrap().eos_tokens(), &[7]);
        // ... joined by generation_config.json's ids.
        std::fs::write(
            dir.join("generation_config.json"),
            r#"{"eos_token_id": [0, 6]}"#,
        )
        .unwrap();
        assert_eq!(load(&path).unwrap().eos_tokens(), &[0, 6, 7]);
        std::fs::write(dir.join("tokenizer_config.json"), r#"{"eos_token": "Ġa"}"#).unwrap();
        std::fs::write(dir.join("generation_config.json"), r#"{"eos_token_id": 3}"#).unwrap();
        assert_eq!(load(&path).unwrap().eos_tokens(), &[1, 3]);
        std::fs::write(
            dir.join("tokenizer_config.json"),
            r#"{"eos_token": "nope"}"#,
        )
        .unwrap();
        assert!(load(&path).is_err());
        std::fs::write(dir.join("tokenizer_config.json"), "{").unwrap();
        assert!(load(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            load(&dir.join("tokenizer.json")).unwrap_err().kind(),
            crate::error::ErrorKind::Io
        );
    }
}
