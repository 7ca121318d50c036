//! Vocabularies: the exact bytes of every token, which tokens are special,
//! which end the sequence, and the token trie built once per vocabulary.
//!
//! A [`Vocab`] is immutable once built and shared (behind an `Arc`) by every
//! grammar compiled for it; it also owns the per-vocabulary caches that
//! grammars share (lexeme automata and their token sets).

pub mod trie;

mod from_gguf;
mod gguf;
mod tekken;
mod tokenizer_json;

use crate::error::{Error, Result};
pub use trie::TokenTrie;

/// Token flag: a special/control token (`<|eot_id|>`, `<s>`, ...). Text
/// rules never match it; only a token element in the grammar does.
pub const TOKEN_SPECIAL: u32 = 1;

/// Vocabularies larger than this are refused (ids must fit the mask API).
pub const MAX_VOCAB_SIZE: usize = 1 << 24;

/// Tokens longer than this many bytes are refused.
pub const MAX_TOKEN_BYTES: usize = 1 << 16;

/// Tokenizer files of up to this many ids may leave any of them without a
/// token (see [`check_dense_ids`]).
pub const SPARSE_IDS_ALLOWED: usize = 1 << 16;

/// The rule for tokenizer files (`tokenizer.json`, `tekken.json`): a file
/// whose vocabulary has `size` ids (its largest id + 1) must name at least
/// half of them (`named` distinct ids), unless `size` is at most
/// [`SPARSE_IDS_ALLOWED`]; otherwise it is refused ([`ErrorKind::Io`]: the
/// file is not a tokenizer). Ids a file does not name still become tokens
/// (empty ones, or tekken's `<SPECIAL_n>` fillers) that cost memory and
/// time like any other, so without the rule an 80-byte file naming id
/// 16,777,215 built a vocabulary of 16,777,216 tokens (0.3 s and 500 MB);
/// with it, a vocabulary costs at most twice what its file spells out.
/// Real tokenizers number their tokens densely: Llama 3, SentencePiece
/// models and tekken files name every id (tekken's at most 1,000 reserved
/// special ranks aside).
///
/// [`ErrorKind::Io`]: crate::error::ErrorKind::Io
pub(crate) fn check_dense_ids(named: usize, size: usize) -> Result<()> {
    if size > SPARSE_IDS_ALLOWED && named.saturating_mul(2) < size {
        return Err(Error::io(format!(
            "token ids are sparse: the file gives tokens to {named} of the {size} ids up to \
             its largest, and a tokenizer of more than {SPARSE_IDS_ALLOWED} ids must give \
             tokens to at least half of them"
        )));
    }
    Ok(())
}

/// A tokenizer's vocabulary as cgram needs it.
pub struct Vocab {
    /// Concatenated token bytes; token `i` is `data[offsets[i]..offsets[i + 1]]`.
    data: Vec<u8>,
    offsets: Vec<u32>,
    flags: Vec<u32>,
    eos: Vec<u32>,
    trie: TokenTrie,
    /// Largest text-token length in bytes.
    max_token_len: usize,
}

impl std::fmt::Debug for Vocab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocab")
            .field("size", &self.len())
            .field("eos", &self.eos)
            .finish()
    }
}

impl Vocab {
    /// A vocabulary from raw token bytes (what a host such as llama.cpp has),
    /// per-token flags ([`TOKEN_SPECIAL`]) and end-of-sequence ids.
    ///
    /// Special tokens and tokens with no bytes never match text.
    pub fn new(tokens: Vec<Vec<u8>>, flags: Vec<u32>, eos: Vec<u32>) -> Result<Vocab> {
        crate::util::allocator::configure();
        if tokens.is_empty() {
            return Err(Error::invalid("a vocabulary needs at least one token"));
        }
        if tokens.len() > MAX_VOCAB_SIZE {
            return Err(Error::limit(format!(
                "vocabulary of {} tokens exceeds the limit of {MAX_VOCAB_SIZE}",
                tokens.len()
            )));
        }
        if flags.len() != tokens.len() {
            return Err(Error::invalid(format!(
                "{} tokens but {} flags",
                tokens.len(),
                flags.len()
            )));
        }
        let mut data = Vec::with_capacity(tokens.iter().map(|t| t.len()).sum());
        let mut offsets = Vec::with_capacity(tokens.len() + 1);
        offsets.push(0u32);
        for (i, t) in tokens.iter().enumerate() {
            if t.len() > MAX_TOKEN_BYTES {
                return Err(Error::limit(format!(
                    "token {i} has {} bytes, more than the limit of {MAX_TOKEN_BYTES}",
                    t.len()
                )));
            }
            data.extend_from_slice(t);
            if data.len() > u32::MAX as usize {
                return Err(Error::limit("vocabulary bytes exceed 4 GiB"));
            }
            offsets.push(data.len() as u32);
        }
        let mut eos = eos;
        for &e in &eos {
            if e as usize >= tokens.len() {
                return Err(Error::invalid(format!(
                    "end-of-sequence token {e} is out of range (vocabulary size {})",
                    tokens.len()
                )));
            }
        }
        eos.sort_unstable();
        eos.dedup();
        let trie = TokenTrie::build(
            tokens
                .iter()
                .enumerate()
                .filter(|(i, _)| {
                    flags[*i] & TOKEN_SPECIAL == 0 && eos.binary_search(&(*i as u32)).is_err()
                })
                .map(|(i, t)| (i as u32, t.as_slice())),
        );
        let max_token_len = trie.max_len();
        let vocab = Vocab {
            data,
            offsets,
            flags,
            eos,
            trie,
            max_token_len,
        };
        Ok(vocab)
    }

    /// Loads a HuggingFace `tokenizer.json` (byte-level BPE such as Llama 3,
    /// GPT-2 and Qwen; SentencePiece-style with `▁` and `<0xNN>` byte
    /// fallback) or a Mistral `tekken.json`.
    pub fn from_tokenizer_json(path: &std::path::Path) -> Result<Vocab> {
        tokenizer_json::load(path)
    }

    /// Reads the vocabulary of a GGUF model file (llama.cpp's format) as
    /// llama.cpp makes it when it loads the model, without reading the
    /// tensors (see `from_gguf`).
    pub fn from_gguf(path: &std::path::Path) -> Result<Vocab> {
        from_gguf::load(path)
    }

    /// Number of tokens (ids are `0..len()`).
    pub fn len(&self) -> usize {
        self.flags.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    /// The exact bytes of a token.
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        let i = id as usize;
        &self.data[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    pub fn token_flags(&self, id: u32) -> u32 {
        self.flags[id as usize]
    }

    pub fn is_special(&self, id: u32) -> bool {
        self.flags[id as usize] & TOKEN_SPECIAL != 0
    }

    /// End-of-sequence ids, sorted.
    pub fn eos_tokens(&self) -> &[u32] {
        &self.eos
    }

    pub fn is_eos(&self, id: u32) -> bool {
        self.eos.binary_search(&id).is_ok()
    }

    /// The same vocabulary with other end-of-sequence ids.
    pub fn with_eos(&self, eos: Vec<u32>) -> Result<Vocab> {
        let tokens = (0..self.len() as u32)
            .map(|i| self.token_bytes(i).to_vec())
            .collect();
        Vocab::new(tokens, self.flags.clone(), eos)
    }

    /// The trie of text tokens (not special, not end-of-sequence, not empty).
    pub fn trie(&self) -> &TokenTrie {
        &self.trie
    }

    /// Longest text token, in bytes.
    pub fn max_token_len(&self) -> usize {
        self.max_token_len
    }

    /// Words of a token mask: `ceil(len / 32)`.
    pub fn mask_words(&self) -> usize {
        self.len().div_ceil(32)
    }

    /// The one token whose text is exactly `text`: a special token with that
    /// text first, else a text token. Used by GBNF's `<text>` elements.
    pub fn token_by_text(&self, text: &[u8]) -> Option<u32> {
        let special =
            (0..self.len() as u32).find(|&i| self.is_special(i) && self.token_bytes(i) == text);
        special.or_else(|| {
            let ids = self.trie.token_ids();
            let k = ids.partition_point(|&id| self.token_bytes(id) < text);
            ids.get(k)
                .copied()
                .filter(|&id| self.token_bytes(id) == text)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_checks_arguments() {
        assert!(Vocab::new(vec![], vec![], vec![]).is_err());
        assert!(Vocab::new(vec![b"a".to_vec()], vec![], vec![]).is_err());
        assert!(Vocab::new(vec![b"a".to_vec()], vec![0], vec![1]).is_err());
        let v = Vocab::new(
            vec![
                b"a".to_vec(),
                b"<s>".to_vec(),
                b"ab".to_vec(),
                b"</s>".to_vec(),
            ],
            vec![0, TOKEN_SPECIAL, 0, TOKEN_SPECIAL],
            vec![3],
        )
        .unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v.trie().num_tokens(), 2);
        assert_eq!(v.token_by_text(b"<s>"), Some(1));
        assert_eq!(v.token_by_text(b"ab"), Some(2));
        assert_eq!(v.token_by_text(b"b"), None);
        assert!(v.is_eos(3));
        assert_eq!(v.mask_words(), 1);
    }
}
