//! `cg_fill_masks` with 1 and N threads: a batch of matchers, one at every
//! token position of the texts, all driven through the C API (as a
//! serving loop with many sequences would), masks filled again and again.
//!
//! The first fill of the batch computes and caches each state's token sets
//! (it is reported apart); the rounds after it measure the steady state,
//! where each mask is assembled from cached sets. Rounds alternate between
//! the thread counts; each is reported by its median and best round.

use std::ffi::CString;
use std::time::Instant;

use cgram::ffi::*;

/// Rounds timed per thread count.
const ROUNDS: usize = 30;

pub fn run(tokenizer: &str, source: &[u8], texts: &[&[u32]], threads: u32) {
    // SAFETY: every pointer comes from the C API itself and is freed once,
    // at the end; buffers are sized by `cg_mask_words`.
    unsafe {
        let path = CString::new(tokenizer).expect("a path without NUL");
        let vocab = cg_vocab_from_tokenizer_json(path.as_ptr());
        assert!(!vocab.is_null(), "cg_vocab_from_tokenizer_json failed");
        let grammar = cg_compile(
            vocab,
            source.as_ptr().cast(),
            source.len(),
            std::ptr::null(),
        );
        assert!(!grammar.is_null(), "cg_compile failed");
        let words = cg_mask_words(grammar);
        let mut matchers = Vec::new();
        for ids in texts {
            let m = cg_matcher_new(grammar);
            for &id in ids.iter() {
                matchers.push(cg_matcher_clone(m));
                assert_eq!(cg_accept(m, id as i32), CG_OK, "cg_accept");
            }
            cg_matcher_free(m);
        }
        let n = matchers.len();
        let mut masks = vec![0u32; n * words];
        let fill = |t: u32, masks: &mut [u32]| -> f64 {
            let start = Instant::now();
            let rc = cg_fill_masks(matchers.as_ptr(), n, masks.as_mut_ptr(), words, t);
            assert_eq!(rc, CG_OK, "cg_fill_masks");
            start.elapsed().as_secs_f64() * 1e3
        };
        let first = fill(1, &mut masks);
        println!("batch: {n} matchers; first fill (token sets computed): {first:.2} ms");
        // Rounds alternate between the thread counts, so that a shared
        // machine's slow spells fall on both alike.
        let counts = [1, threads];
        let mut times = [Vec::new(), Vec::new()];
        for _ in 0..ROUNDS {
            for (k, &t) in counts.iter().enumerate() {
                times[k].push(fill(t, &mut masks));
            }
        }
        let mut base = (f64::NAN, f64::NAN);
        for (k, &t) in counts.iter().enumerate() {
            let v = &mut times[k];
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let (median, best) = (v[ROUNDS / 2], v[0]);
            if k == 0 {
                base = (median, best);
            }
            println!(
                "  {t} thread(s): median {median:.3} ms per batch ({:.2} us per mask), speedup {:.2}x; best {best:.3} ms, speedup {:.2}x",
                median * 1e3 / n as f64,
                base.0 / median,
                base.1 / best
            );
        }
        for m in matchers {
            cg_matcher_free(m);
        }
        cg_free(grammar);
        cg_vocab_free(vocab);
    }
}
