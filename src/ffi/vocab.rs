//! `cg_vocab`: a tokenizer's vocabulary and its per-vocabulary caches.

use std::ffi::{c_char, c_int, CStr};
use std::ptr;
use std::sync::Arc;

use super::args::{array_arg, array_mut, bytes_arg, null, token_arg};
use super::error::{guard, guard_int, guard_ptr, CG_OK};
use super::handle::{handle, Handle};
use crate::error::{Error, ErrorKind, Result};
use crate::tokensets::Engine;
use crate::vocab::{Vocab, MAX_VOCAB_SIZE};

/// Token flag for `cg_vocab_new`: a special/control token (`<|eot_id|>`,
/// `<s>`, ...). Text rules never match it; only a grammar element naming
/// the token does.
pub const CG_TOKEN_SPECIAL: u32 = 1;

/// A tokenizer's vocabulary: the bytes of every token, which tokens are
/// special, which end the sequence, and the caches its grammars share.
/// Share one across threads and grammars. Its tokens never change; its
/// end-of-sequence tokens change only through `cg_vocab_set_eos`, before
/// any grammar is compiled from it (not thread-safe); its cache budget
/// through `cg_vocab_set_cache_budget`, at any time (thread-safe, never a
/// mask).
pub struct cg_vocab {
    pub(crate) inner: Arc<Engine>,
}

handle!(cg_vocab, Arc<Engine>, "vocab");

/// Loads a vocabulary from a HuggingFace `tokenizer.json` file (byte-level
/// BPE such as Llama 3, GPT-2 and Qwen; SentencePiece-style with byte
/// fallback) or a Mistral `tekken.json`. The end-of-sequence tokens are
/// taken from the file; override them with `cg_vocab_set_eos`.
///
/// `path` is a NUL-terminated file name (UTF-8 on Windows). Returns a new vocabulary that the
/// caller frees with `cg_vocab_free`, or NULL on error, with
/// `cg_last_error` saying why: `CG_ERR_IO` (the file, or the
/// `tokenizer_config.json` / `generation_config.json` next to it, cannot be
/// read, is not a tokenizer, or contradicts itself: no tokens, an id twice,
/// an end-of-sequence token that is not in the vocabulary, ids that leave
/// most of the id range without a token: a vocabulary of more than 65536
/// ids must give tokens to at least half of them),
/// `CG_ERR_UNSUPPORTED` (a tokenizer model cgram cannot read, such as
/// WordPiece, or no decoder that tells the bytes of its tokens),
/// `CG_ERR_LIMIT` (more than 16777216 tokens or a token longer than 65536
/// bytes), `CG_ERR_INVALID_ARGUMENT` (`path` is NULL). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_from_tokenizer_json(path: *const c_char) -> *mut cg_vocab {
    guard_ptr("cg_vocab_from_tokenizer_json", || {
        vocab_from_file(path, Vocab::from_tokenizer_json)
    })
}

/// Loads the vocabulary of a GGUF model file (llama.cpp's format) as
/// llama.cpp makes it when it loads the model: each token's bytes as
/// `llama_token_to_piece` gives them (special tokens as their text),
/// control and unknown tokens special, the end-of-generation tokens
/// (`llama_vocab_is_eog`) as end-of-sequence. The same vocabulary as the
/// llama.cpp adapter builds from the loaded model, for a host that has the
/// `.gguf` file and no `tokenizer.json`.
///
/// Only the file's header and metadata are read, through a buffer (never
/// the tensors, and the file is not mapped): a few megabytes for a model of
/// several gigabytes. Tokenizer models read: `llama` (SentencePiece, `▁`
/// and `<0xNN>` byte tokens), `gpt2` and `gemma4` (BPE, byte-level or `▁`),
/// `t5` and `bert`; GGUF versions 2 and 3.
///
/// `path` is a NUL-terminated file name (UTF-8 on Windows). Returns a new
/// vocabulary that the caller frees with `cg_vocab_free`, or NULL on
/// error, with `cg_last_error` saying why: `CG_ERR_IO` (the file cannot be
/// read, is not a GGUF file, is cut short or corrupt, or holds no
/// tokenizer), `CG_ERR_UNSUPPORTED` (another tokenizer model, such as
/// `rwkv`, or GGUF version 1), `CG_ERR_LIMIT` (more than 16777216 tokens
/// or a token longer than 65536 bytes), `CG_ERR_INVALID_ARGUMENT` (`path`
/// is NULL). Memory is bounded by the file's size whatever its counts
/// claim. Thread-safe. Since 0.3.0.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_from_gguf(path: *const c_char) -> *mut cg_vocab {
    guard_ptr("cg_vocab_from_gguf", || {
        vocab_from_file(path, Vocab::from_gguf)
    })
}

/// A vocabulary read from the file `path` names by `load`.
unsafe fn vocab_from_file(
    path: *const c_char,
    load: fn(&std::path::Path) -> Result<Vocab>,
) -> Result<*mut cg_vocab> {
    if path.is_null() {
        return Err(null("path"));
    }
    let path = CStr::from_ptr(path);
    #[cfg(unix)]
    let path = {
        use std::os::unix::ffi::OsStrExt;
        std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()))
    };
    // Elsewhere (Windows) the name is UTF-8, as llama.cpp takes it; a
    // name that is not names no file there.
    #[cfg(not(unix))]
    let path = std::path::Path::new(path.to_str().map_err(|e| {
        let e = super::args::utf8_error("path", e);
        Error::io(format!("{}: file names are UTF-8 here", e.message()))
    })?);
    // The path is the only argument: whatever is wrong with what it names
    // (an end-of-sequence token missing from the vocabulary, say) is the
    // file's fault, not the caller's.
    let vocab = load(path).map_err(|e| match e.kind() {
        ErrorKind::InvalidArgument => Error::io(e.message()),
        _ => e,
    })?;
    Ok(Handle::into_raw(cg_vocab {
        inner: Engine::new(vocab),
    }))
}

/// Builds a vocabulary from what a host such as llama.cpp knows about its
/// tokenizer: for each token id `0 .. n_tokens-1`, its exact bytes
/// (`token_bytes[i]`, `token_lens[i]` bytes long, not NUL-terminated; NULL
/// is allowed for a token of length 0) and its flags (`token_flags[i]`, a
/// combination of `CG_TOKEN_SPECIAL`; `token_flags` may be NULL: no special
/// tokens), plus the `n_eos` end-of-sequence ids in `eos_tokens` (NULL if
/// `n_eos` is 0).
///
/// Special tokens and tokens with no bytes never match grammar text. All
/// arrays are copied: the caller keeps ownership and may free them after
/// the call. Returns a new vocabulary that the caller frees with
/// `cg_vocab_free`, or NULL on error (`CG_ERR_INVALID_ARGUMENT` for NULL
/// arrays, no tokens, unknown flag bits or an EOS id out of range; `CG_ERR_LIMIT` for more than
/// 16777216 tokens or a token longer than 65536 bytes). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_new(
    n_tokens: u32,
    token_bytes: *const *const u8,
    token_lens: *const u32,
    token_flags: *const u32,
    eos_tokens: *const i32,
    n_eos: u32,
) -> *mut cg_vocab {
    guard_ptr("cg_vocab_new", || {
        let n = n_tokens as usize;
        if n == 0 {
            return Err(Error::invalid(
                "n_tokens is 0: a vocabulary needs at least one token",
            ));
        }
        if n > MAX_VOCAB_SIZE {
            return Err(Error::limit(format!(
                "n_tokens {n} exceeds the limit of {MAX_VOCAB_SIZE}"
            )));
        }
        if token_bytes.is_null() {
            return Err(null("token_bytes"));
        }
        if token_lens.is_null() {
            return Err(null("token_lens"));
        }
        let ptrs = array_arg(token_bytes, n, "token_bytes")?;
        let lens = array_arg(token_lens, n, "token_lens")?;
        let flags = if token_flags.is_null() {
            vec![0; n]
        } else {
            array_arg(token_flags, n, "token_flags")?.to_vec()
        };
        if let Some(i) = flags.iter().position(|&f| f & !CG_TOKEN_SPECIAL != 0) {
            return Err(Error::invalid(format!(
                "token_flags[{i}] has unknown bits {:#x}",
                flags[i] & !CG_TOKEN_SPECIAL
            )));
        }
        let mut tokens = Vec::with_capacity(n);
        for (i, (&p, &len)) in ptrs.iter().zip(lens).enumerate() {
            let bytes = bytes_arg(p, len as usize, "token_bytes[i]")
                .map_err(|e| Error::invalid(format!("token {i}: {}", e.message())))?;
            tokens.push(bytes.to_vec());
        }
        let eos = array_arg(eos_tokens, n_eos as usize, "eos_tokens")?
            .iter()
            .map(|&t| token_arg(t, n, "end-of-sequence token"))
            .collect::<Result<Vec<u32>>>()?;
        let vocab = Vocab::new(tokens, flags, eos)?;
        Ok(Handle::into_raw(cg_vocab {
            inner: Engine::new(vocab),
        }))
    })
}

/// The number of tokens of the vocabulary (token ids are `0 .. size-1`), or
/// 0 if `vocab` is NULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_size(vocab: *const cg_vocab) -> u32 {
    guard(
        "cg_vocab_size",
        |_| 0,
        || Ok(cg_vocab::arg(vocab)?.vocab().len() as u32),
    )
}

/// The exact bytes of token `token`: returns a pointer to `*len` bytes (not
/// NUL-terminated), owned by the vocabulary and valid as long as the
/// vocabulary lives (until `cg_vocab_free` and the last grammar compiled
/// from it are gone, or `cg_vocab_set_eos`). Special tokens have their text
/// (e.g. "<|eot_id|>"). An empty token gives a non-NULL pointer and
/// `*len` = 0.
///
/// Returns NULL and sets `*len` to 0 (when `len` is not NULL) if `vocab` or
/// `len` is NULL or `token` is out of range. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_token_bytes(
    vocab: *const cg_vocab,
    token: i32,
    len: *mut usize,
) -> *const u8 {
    if !len.is_null() {
        *len = 0;
    }
    guard(
        "cg_vocab_token_bytes",
        |_| ptr::null(),
        || {
            let engine = cg_vocab::arg(vocab)?;
            if len.is_null() {
                return Err(null("len"));
            }
            let id = token_arg(token, engine.vocab().len(), "token")?;
            let bytes = engine.vocab().token_bytes(id);
            *len = bytes.len();
            Ok(bytes.as_ptr())
        },
    )
}

/// The vocabulary's end-of-sequence token ids, in increasing order: writes
/// up to `cap` of them to `out` (which may be NULL when `cap` is 0) and
/// returns how many there are in all, which may be more than `cap` (call
/// once with `cap` = 0 to size the buffer). Returns a negative `CG_ERR_*` on
/// error. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_eos_tokens(
    vocab: *const cg_vocab,
    out: *mut i32,
    cap: usize,
) -> c_int {
    guard_int("cg_vocab_eos_tokens", || {
        let eos = cg_vocab::arg(vocab)?.vocab().eos_tokens();
        let out = array_mut(out, cap.min(eos.len()), "out")?;
        for (o, &e) in out.iter_mut().zip(eos) {
            *o = e as i32;
        }
        Ok(eos.len() as c_int)
    })
}

/// Replaces the vocabulary's end-of-sequence tokens with the `n_eos` ids in
/// `eos_tokens` (NULL if `n_eos` is 0; an empty list means no token ends
/// the sequence). Hosts use it when the model's chat template ends turns
/// with another token than the tokenizer's default.
///
/// Only possible before any grammar is compiled from the vocabulary: fails
/// with `CG_ERR_INVALID_ARGUMENT` while a grammar (or a matcher made from
/// one) compiled from it, or another handle from `cg_vocab_clone`, is
/// still alive, since they were built for the old
/// list. Invalidates pointers from `cg_vocab_token_bytes`. Returns `CG_OK`
/// or a negative `CG_ERR_*`. Not thread-safe: no other thread may use this
/// vocabulary during the call.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_set_eos(
    vocab: *mut cg_vocab,
    eos_tokens: *const i32,
    n_eos: usize,
) -> c_int {
    guard_int("cg_vocab_set_eos", || {
        let handle = vocab.as_mut().ok_or_else(|| null("vocab"))?;
        let n = handle.inner.vocab().len();
        let eos = array_arg(eos_tokens, n_eos, "eos_tokens")?
            .iter()
            .map(|&t| token_arg(t, n, "end-of-sequence token"))
            .collect::<Result<Vec<u32>>>()?;
        let users = Arc::strong_count(&handle.inner) - 1;
        if Arc::get_mut(&mut handle.inner).is_none() {
            return Err(Error::invalid(format!(
                "cannot change the end-of-sequence tokens: {users} grammar(s) compiled from this \
                 vocabulary (or other handles from cg_vocab_clone) are still alive; set them \
                 before compiling, or free the grammars and their matchers first"
            )));
        }
        handle.inner = handle.inner.with_eos(eos)?;
        Ok(CG_OK)
    })
}

/// A new handle to the same vocabulary (nothing is copied): for a host that
/// keeps the vocabulary in two places and frees each handle on its own.
/// Returns NULL on error (`vocab` is NULL). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_clone(vocab: *const cg_vocab) -> *mut cg_vocab {
    guard_ptr("cg_vocab_clone", || {
        Ok(Handle::into_raw(cg_vocab {
            inner: Arc::clone(cg_vocab::arg(vocab)?),
        }))
    })
}

/// Sets the byte budget of the vocabulary's caches (default 256 MiB; 0
/// keeps nothing, `SIZE_MAX` has no bound) and evicts down to it.
///
/// Every vocabulary keeps the lexeme automata its grammars were built
/// from, with the token sets masks computed for their states, so that the
/// next grammar that needs the same lexeme (a string pattern, a format, a
/// number) gets them ready. Eleven sixteenths of the budget go to them:
/// past it the least recently used are dropped from the cache; grammars
/// that use them keep them until freed, and a later compile builds them
/// again. An eighth each goes to two shared tables of token sets (exits of
/// lexeme states, counted strings) and a sixteenth to the token sets that
/// walks found alike, each cleared when full. The budget changes compile
/// and first-mask times, never a mask. A server that compiles many distinct
/// schemas on one vocabulary sets it to the memory it can spare. The
/// budget is shared by all handles of the vocabulary (`cg_vocab_clone`)
/// and kept by `cg_vocab_set_eos`.
/// Returns `CG_OK`, or `CG_ERR_INVALID_ARGUMENT` if `vocab` is NULL.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_set_cache_budget(
    vocab: *mut cg_vocab,
    budget_bytes: usize,
) -> c_int {
    guard_int("cg_vocab_set_cache_budget", || {
        cg_vocab::arg(vocab)?.set_cache_budget(budget_bytes);
        Ok(CG_OK)
    })
}

/// The approximate bytes held by the vocabulary's caches now (see
/// `cg_vocab_set_cache_budget`), or 0 if `vocab` is NULL. It can exceed
/// the budget between compiles, by what masks learned since the last
/// one. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_cache_bytes(vocab: *const cg_vocab) -> usize {
    guard(
        "cg_vocab_cache_bytes",
        |_| 0,
        || Ok(cg_vocab::arg(vocab)?.cache_stats().bytes),
    )
}

/// Releases the caller's reference to a vocabulary. Grammars compiled from
/// it keep their own reference, so it may be freed while they live: the
/// memory goes when the last of them is freed. NULL is a no-op. Each
/// vocabulary must be freed exactly once.
#[no_mangle]
pub unsafe extern "C" fn cg_vocab_free(vocab: *mut cg_vocab) {
    cg_vocab::free("cg_vocab_free", vocab)
}
