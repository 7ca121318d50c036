//! The vocabulary of a GGUF model file, as llama.cpp makes it when it loads
//! the model: the same bytes per token, the same special tokens and the same
//! end-of-generation set as the llama.cpp adapter reads from the loaded
//! model (`adapters/llama`, `llama_token_to_piece` with `special = true`,
//! control and unknown tokens special, `llama_vocab_is_eog`), for a host
//! that has the model file and no `tokenizer.json`.
//!
//! What the file holds (`tokenizer.ggml.*`, see [`super::gguf`]):
//!
//! - the tokenizer family (`model`): `llama` (SentencePiece: `▁` for a
//!   space, `<0xNN>` byte tokens), `gpt2` and `gemma4` (BPE; byte-level,
//!   GPT-2's alphabet, unless the pre-tokenizer writes `▁` for spaces as
//!   Gemma 4's does), `t5` and `bert` (spelled as SentencePiece's);
//! - the token texts and their types (normal, unknown, control,
//!   user-defined, unused, byte);
//! - some special ids (end of sequence, of turn, of message, the
//!   fill-in-the-middle markers).
//!
//! What it does not hold, llama.cpp infers, and so does this module: a
//! missing end-of-turn or fill-in-the-middle id is the token spelled as
//! one of the markers model families use (`<|im_end|>`, `<end_of_turn>`,
//! `<|fim_pad|>`, ...), and such a token becomes a control token; the
//! end-of-generation set is the end-of-sequence, end-of-turn and
//! end-of-message ids, the fill-in-the-middle padding markers and every
//! token spelled as an end marker. These rules follow the llama.cpp that
//! `scripts/lib/llama-build.sh` builds; the test in `tests/llama_vocab.c`
//! compares the two vocabularies token by token on every vocabulary file
//! llama.cpp ships and on a real model.

use std::path::Path;

use super::gguf::{self, Metadata, Value};
use super::{Vocab, MAX_TOKEN_BYTES, MAX_VOCAB_SIZE, TOKEN_SPECIAL};
use crate::error::{Error, ErrorKind, Result};

/// Loads the vocabulary of the GGUF file at `path` (see the module doc).
pub fn load(path: &Path) -> Result<Vocab> {
    let cannot_read = |e: std::io::Error| Error::io(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    let len = file.metadata().map_err(cannot_read)?.len();
    gguf::read_metadata(file, len, wanted)
        .and_then(|m| build(&m))
        .map_err(|e| {
            // What the file holds is never the caller's argument.
            let e = match e.kind() {
                ErrorKind::InvalidArgument => Error::io(e.message()),
                _ => e,
            };
            e.context(path.display())
        })
}

/// The keys read: the rest (merges, scores, the chat template) is stepped
/// over, not kept.
fn wanted(key: &str) -> bool {
    matches!(
        key,
        "tokenizer.ggml.model"
            | "tokenizer.ggml.pre"
            | "tokenizer.ggml.tokens"
            | "tokenizer.ggml.token_type"
            | "tokenizer.ggml.eos_token_id"
            | "tokenizer.ggml.eot_token_id"
            | "tokenizer.ggml.eom_token_id"
    ) || FIM_KEYS
        .iter()
        .any(|(k, old)| key == *k || Some(key) == *old)
}

/// How token texts spell bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Spelling {
    /// `▁` stands for a space (SentencePiece, and BPE written that way).
    Metaspace,
    /// GPT-2's byte-level alphabet: each char stands for one byte.
    ByteLevel,
}

/// Token types of the format.
mod token_type {
    pub const NORMAL: i128 = 1;
    pub const UNKNOWN: i128 = 2;
    pub const CONTROL: i128 = 3;
    pub const USER_DEFINED: i128 = 4;
    pub const UNUSED: i128 = 5;
    pub const BYTE: i128 = 6;
}

/// What llama.cpp keeps of a token's type: a set of these bits.
mod attr {
    pub const UNKNOWN: u32 = 1 << 1;
    pub const UNUSED: u32 = 1 << 2;
    pub const NORMAL: u32 = 1 << 3;
    pub const CONTROL: u32 = 1 << 4;
    pub const USER_DEFINED: u32 = 1 << 5;
    pub const BYTE: u32 = 1 << 6;
}

/// Markers of the end of a turn, by model family, for a file without
/// `tokenizer.ggml.eot_token_id`.
const END_OF_TURN: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<｜end▁of▁sentence｜>",
    "<end_of_utterance>",
];

/// Markers of the end of a message (tool calls), without
/// `tokenizer.ggml.eom_token_id`.
const END_OF_MESSAGE: &[&str] = &["<|eom_id|>"];

/// Fill-in-the-middle markers, without their `tokenizer.ggml.fim_*` ids:
/// prefix, suffix, middle, padding, repository, file separator.
const FIM_MARKERS: [&[&str]; 6] = [
    &[
        "<|fim_prefix|>",
        "<fim-prefix>",
        "<fim_prefix>",
        "<｜fim▁begin｜>",
        "<PRE>",
        "▁<PRE>",
        "<|code_prefix|>",
        "<|prefix|>",
    ],
    &[
        "<|fim_suffix|>",
        "<fim-suffix>",
        "<fim_suffix>",
        "<｜fim▁hole｜>",
        "<SUF>",
        "▁<SUF>",
        "<|code_suffix|>",
        "<|suffix|>",
    ],
    &[
        "<|fim_middle|>",
        "<fim-middle>",
        "<fim_middle>",
        "<｜fim▁end｜>",
        "<MID>",
        "▁<MID>",
        "<|code_middle|>",
        "<|middle|>",
    ],
    &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
    &[
        "<|fim_repo|>",
        "<|repo_name|>",
        "<fim-repo>",
        "<REPO>",
        "<reponame>",
    ],
    &["<|file_sep|>"],
];

/// The keys of the fill-in-the-middle ids, in [`FIM_MARKERS`]' order (the
/// second name of the first three: older files').
const FIM_KEYS: [(&str, Option<&str>); 6] = [
    (
        "tokenizer.ggml.fim_pre_token_id",
        Some("tokenizer.ggml.prefix_token_id"),
    ),
    (
        "tokenizer.ggml.fim_suf_token_id",
        Some("tokenizer.ggml.suffix_token_id"),
    ),
    (
        "tokenizer.ggml.fim_mid_token_id",
        Some("tokenizer.ggml.middle_token_id"),
    ),
    ("tokenizer.ggml.fim_pad_token_id", None),
    ("tokenizer.ggml.fim_rep_token_id", None),
    ("tokenizer.ggml.fim_sep_token_id", None),
];

/// Tokens that end generation wherever they appear, by their text.
const END_OF_GENERATION: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
];

/// Tokens that chat formats write as text (gpt-oss' channel markers):
/// user-defined, whatever the file says.
const RENDERED_MARKERS: &[&str] = &["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];

/// The tokenizer family: how texts spell bytes, and the end-of-sequence id
/// when the file names none.
fn family(model: &[u8], pre: &[u8]) -> Result<(Spelling, Option<u32>)> {
    let metaspace_bpe = matches!(pre, b"gemma4" | b"granite-embed-multi-311m" | b"sarvam-moe");
    Ok(match model {
        b"llama" => (Spelling::Metaspace, Some(2)),
        b"gpt2" if metaspace_bpe => (Spelling::Metaspace, Some(11)),
        b"gpt2" => (Spelling::ByteLevel, Some(11)),
        b"gemma4" => (Spelling::Metaspace, None),
        b"t5" => (Spelling::Metaspace, Some(1)),
        b"bert" => (Spelling::Metaspace, None),
        other => {
            let name = String::from_utf8_lossy(other);
            return Err(Error::unsupported(format!(
                "the GGUF tokenizer model `{name}` is not supported yet (supported: llama, gpt2, \
                 gemma4, t5, bert); build the vocabulary from its tokenizer.json, or through \
                 the llama.cpp adapter"
            )));
        }
    })
}

fn build(meta: &Metadata) -> Result<Vocab> {
    let text_of = |key: &str| -> Result<Option<&[u8]>> {
        match meta.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| Error::io(format!("`{key}` is not a string"))),
        }
    };
    let model = text_of("tokenizer.ggml.model")?
        .ok_or_else(|| Error::io("the file has no tokenizer (no `tokenizer.ggml.model`)"))?;
    let pre = text_of("tokenizer.ggml.pre")?.unwrap_or_default();
    let (spelling, default_eos) = family(model, pre)?;
    let (data, ends) = match meta.get("tokenizer.ggml.tokens") {
        Some(Value::Strings { data, ends }) => (data, ends),
        Some(_) => {
            return Err(Error::io(
                "`tokenizer.ggml.tokens` is not an array of strings",
            ))
        }
        None => return Err(Error::io("the file has no `tokenizer.ggml.tokens`")),
    };
    let n = ends.len();
    if n == 0 {
        return Err(Error::io("`tokenizer.ggml.tokens` is empty"));
    }
    if n > MAX_VOCAB_SIZE {
        return Err(Error::limit(format!(
            "vocabulary of {n} tokens exceeds the limit of {MAX_VOCAB_SIZE}"
        )));
    }
    let mut texts: Vec<Vec<u8>> = Vec::with_capacity(n);
    let mut start = 0;
    for (i, &end) in ends.iter().enumerate() {
        let t = &data[start..end];
        start = end;
        if t.len() > MAX_TOKEN_BYTES {
            return Err(Error::limit(format!(
                "token {i} has {} bytes, more than the limit of {MAX_TOKEN_BYTES}",
                t.len()
            )));
        }
        texts.push(if t.is_empty() {
            format!("[EMPTY_{i}]").into_bytes()
        } else {
            t.to_vec()
        });
    }
    let mut attrs = match meta.get("tokenizer.ggml.token_type") {
        None => vec![attr::NORMAL; n],
        Some(Value::Ints(types)) if types.len() == n => types.iter().map(|&t| attr_of(t)).collect(),
        Some(Value::Ints(types)) => {
            return Err(Error::io(format!(
                "{} token types for {n} tokens",
                types.len()
            )))
        }
        Some(_) => {
            return Err(Error::io(
                "`tokenizer.ggml.token_type` is not an integer array",
            ))
        }
    };
    // Where a text is given twice, the later id is the one found by text.
    // (The standard map's keyed hash: the texts are the file's, and a file
    // of colliding texts must not make this quadratic.)
    let mut by_text: std::collections::HashMap<&[u8], u32> =
        std::collections::HashMap::with_capacity(n);
    for (i, t) in texts.iter().enumerate() {
        by_text.insert(t.as_slice(), i as u32);
    }
    let id_of = |key: &str| -> Option<u32> {
        let id = meta.get(key)?.as_int()?;
        (0..n as i128).contains(&id).then_some(id as u32)
    };
    let eos = id_of("tokenizer.ggml.eos_token_id").or(default_eos.filter(|&id| (id as usize) < n));
    // Ids the file leaves out, found by their marker text (the first by id
    // among the markers present); a token found so is a control token.
    let mut detect = |given: Option<u32>, markers: &[&str]| -> Option<u32> {
        if given.is_some() {
            return given;
        }
        let found = markers
            .iter()
            .filter_map(|m| by_text.get(m.as_bytes()).copied())
            .min()?;
        attrs[found as usize] |= attr::CONTROL;
        Some(found)
    };
    let eot = detect(id_of("tokenizer.ggml.eot_token_id"), END_OF_TURN);
    let eom = detect(id_of("tokenizer.ggml.eom_token_id"), END_OF_MESSAGE);
    let mut fim = [None; 6];
    for (k, ((key, old_key), markers)) in FIM_KEYS.iter().zip(FIM_MARKERS).enumerate() {
        let given = id_of(key).or_else(|| old_key.and_then(&id_of));
        fim[k] = detect(given, markers);
    }
    let mut eog: Vec<u32> = fim[3..].iter().flatten().copied().collect();
    for m in END_OF_GENERATION {
        if let Some(&id) = by_text.get(m.as_bytes()) {
            eog.push(id);
            attrs[id as usize] |= attr::CONTROL;
        }
    }
    for m in RENDERED_MARKERS {
        if let Some(&id) = by_text.get(m.as_bytes()) {
            attrs[id as usize] = attr::USER_DEFINED;
        }
    }
    eog.extend([eos, eot, eom].into_iter().flatten());
    eog.sort_unstable();
    eog.dedup();
    // Which end-of-generation token is spelled `text`, if one is.
    let find = |eog: &[u32], text: &str| -> Option<u32> {
        eog.iter()
            .copied()
            .find(|&id| texts[id as usize] == text.as_bytes())
    };
    // Chat formats where `<|end|>` closes a message but not the
    // generation (gpt-oss' `<|return|>`/`<|call|>`, and the same with
    // `<|calls|>`/`<|flush|>`).
    let has = |eog: &[u32], text: &str| find(eog, text).is_some();
    let calls = has(&eog, "<|call|>") || has(&eog, "<|calls|>");
    if calls && (has(&eog, "<|return|>") || has(&eog, "<|flush|>")) {
        if let Some(end) = find(&eog, "<|end|>") {
            eog.retain(|&id| id != end);
            attrs[end as usize] = attr::USER_DEFINED;
        }
    }
    // Where `<|tool_response>` or `<|plamo:eos|>` ends generation, `</s>`
    // is an ordinary token.
    if has(&eog, "<|tool_response>") || has(&eog, "<|plamo:eos|>") {
        if let Some(s) = find(&eog, "</s>") {
            eog.retain(|&id| id != s);
            attrs[s as usize] = attr::NORMAL;
        }
    }
    let mut flags = Vec::with_capacity(n);
    let mut tokens = Vec::with_capacity(n);
    for (text, &a) in texts.iter().zip(&attrs) {
        flags.push(if a & (attr::CONTROL | attr::UNKNOWN) != 0 {
            TOKEN_SPECIAL
        } else {
            0
        });
        tokens.push(token_bytes(text, a, spelling));
    }
    Vocab::new(tokens, flags, eog)
}

fn attr_of(token_type: i128) -> u32 {
    match token_type {
        token_type::NORMAL => attr::NORMAL,
        token_type::UNKNOWN => attr::UNKNOWN,
        token_type::CONTROL => attr::CONTROL,
        token_type::USER_DEFINED => attr::USER_DEFINED,
        token_type::UNUSED => attr::UNUSED,
        token_type::BYTE => attr::BYTE,
        // Undefined: no bytes.
        _ => 0,
    }
}

/// The bytes llama.cpp gives a token of text `text` and attributes `a`:
/// special and user-defined tokens as written, normal ones decoded, byte
/// tokens their byte, unused and undefined ones nothing.
fn token_bytes(text: &[u8], a: u32, spelling: Spelling) -> Vec<u8> {
    if a & (attr::CONTROL | attr::UNKNOWN | attr::USER_DEFINED) != 0 {
        return text.to_vec();
    }
    if a & attr::NORMAL != 0 {
        return match spelling {
            Spelling::Metaspace => replace_metaspace(text),
            Spelling::ByteLevel => byte_level(text),
        };
    }
    if a & attr::BYTE != 0 {
        return vec![byte_token_value(text)];
    }
    Vec::new()
}

/// `▁` (U+2581) as a space.
fn replace_metaspace(text: &[u8]) -> Vec<u8> {
    const METASPACE: &[u8] = "▁".as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(METASPACE) {
            out.push(b' ');
            i += METASPACE.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
}

/// A byte-level text decoded: each char the byte it stands for. A char
/// outside GPT-2's alphabet (or text that is not UTF-8) is spelled as
/// llama.cpp spells it, `[UNK_BYTE_0x..` with the char's UTF-8 in hex and
/// the whole text, then `]`, so that the bytes agree with what llama.cpp
/// prints for that token.
fn byte_level(text: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(text);
    let mut out = Vec::with_capacity(text.len());
    for c in s.chars() {
        match super::tokenizer_json::byte_level_byte(c) {
            Some(b) => out.push(b),
            None => {
                out.extend_from_slice(b"[UNK_BYTE_0x");
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.extend_from_slice(format!("{b:02x}").as_bytes());
                }
                out.extend_from_slice(text);
                out.push(b']');
            }
        }
    }
    out
}

/// The byte of a byte token `<0xNN>`: the hex digits at offsets 3 and 4
/// (as many as there are), as llama.cpp reads them.
fn byte_token_value(text: &[u8]) -> u8 {
    let digits = text.get(3..text.len().min(5)).unwrap_or_default();
    let mut v = 0u32;
    for &d in digits {
        match (d as char).to_digit(16) {
            Some(x) => v = v * 16 + x,
            None => break,
        }
    }
    v as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::gguf::{enc, encode};
    use std::io::Cursor;

    const STRING: u32 = 8;
    const ARRAY: u32 = 9;
    const U32: u32 = 4;

    fn vocab(keys: &[(&str, u32, Vec<u8>)]) -> Result<Vocab> {
        let bytes = encode(3, keys);
        let meta = gguf::read_metadata(Cursor::new(&bytes), bytes.len() as u64, wanted)?;
        build(&meta)
    }

    #[test]
    fn sentencepiece_tokens_and_end_markers() {
        let tokens: &[&[u8]] = &[
            b"<unk>",
            b"<s>",
            b"</s>",
            "▁hello".as_bytes(),
            b"<0x0A>",
            b"<end_of_turn>",
            b"",
            b"<pad_unused>",
        ];
        let v = vocab(&[
            ("tokenizer.ggml.model", STRING, enc::string(b"llama")),
            ("tokenizer.ggml.tokens", ARRAY, enc::strings(tokens)),
            (
                "tokenizer.ggml.token_type",
                ARRAY,
                enc::i32s(&[2, 3, 3, 1, 6, 1, 1, 5]),
            ),
        ])
        .unwrap();
        assert_eq!(v.token_bytes(0), b"<unk>");
        assert!(v.is_special(0) && v.is_special(1) && v.is_special(2));
        assert_eq!(v.token_bytes(3), b" hello");
        assert!(!v.is_special(3));
        assert_eq!(v.token_bytes(4), b"\n");
        // A normal token spelled as an end marker: a control token that
        // ends generation, with the default end of sequence (2).
        assert!(v.is_special(5));
        assert_eq!(v.token_bytes(5), b"<end_of_turn>");
        assert_eq!(v.eos_tokens(), &[2, 5]);
        assert_eq!(v.token_bytes(6), b"[EMPTY_6]");
        assert_eq!(v.token_bytes(7), b"");
    }

    #[test]
    fn byte_level_tokens_and_given_ids() {
        let tokens: &[&[u8]] = &[
            "Ġthe".as_bytes(),
            "Ċ".as_bytes(),
            b"<|endoftext|>",
            b"<|fim_pad|>",
            "\u{4e2d}".as_bytes(),
        ];
        let v = vocab(&[
            ("tokenizer.ggml.model", STRING, enc::string(b"gpt2")),
            ("tokenizer.ggml.tokens", ARRAY, enc::strings(tokens)),
            (
                "tokenizer.ggml.token_type",
                ARRAY,
                enc::i32s(&[1, 1, 3, 1, 1]),
            ),
            (
                "tokenizer.ggml.eos_token_id",
                U32,
                2u32.to_le_bytes().to_vec(),
            ),
        ])
        .unwrap();
        assert_eq!(v.token_bytes(0), b" the");
        assert_eq!(v.token_bytes(1), b"\n");
        // Detected as the padding marker: special, ending generation.
        assert!(v.is_special(3));
        assert_eq!(v.eos_tokens(), &[2, 3]);
        assert_eq!(v.token_bytes(4), "[UNK_BYTE_0xe4b8ad\u{4e2d}]".as_bytes());
    }

    #[test]
    fn what_is_not_a_vocabulary_is_refused() {
        let tokens = enc::strings(&[b"a"]);
        let e = vocab(&[("tokenizer.ggml.tokens", ARRAY, tokens.clone())]).expect_err("no model");
        assert_eq!(e.kind(), ErrorKind::Io);
        let e = vocab(&[
            ("tokenizer.ggml.model", STRING, enc::string(b"rwkv")),
            ("tokenizer.ggml.tokens", ARRAY, tokens.clone()),
        ])
        .expect_err("unsupported");
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let e = vocab(&[
            ("tokenizer.ggml.model", STRING, enc::string(b"llama")),
            ("tokenizer.ggml.tokens", ARRAY, tokens),
            ("tokenizer.ggml.token_type", ARRAY, enc::i32s(&[1, 1])),
        ])
        .expect_err("types of another length");
        assert_eq!(e.kind(), ErrorKind::Io);
    }

    #[test]
    fn byte_token_values() {
        assert_eq!(byte_token_value(b"<0x0A>"), 0x0A);
        assert_eq!(byte_token_value(b"<0xff>"), 0xFF);
        assert_eq!(byte_token_value(b"<0x"), 0);
        assert_eq!(byte_token_value(b"<0x1G>"), 1);
    }
}
