//! `cg_fill_masks`: the masks of many matchers at once, spread over
//! threads. The pointer checks are here; the scheduling is safe Rust
//! (`fill_batch`).

use std::ffi::c_int;

use super::args::{array_arg, array_mut, null};
use super::error::{guard_int, CG_OK};
use super::matcher::{cg_matcher, fill};
use crate::error::{Error, Result};
use crate::matcher::AnyMatcher;

/// Fills the masks of `n` matchers at once, spread over `n_threads` threads
/// (0: one per CPU; 1: all in the calling thread). `matchers` holds `n`
/// distinct, non-NULL matcher pointers (the same matcher twice is an error);
/// `masks` holds `n * n_words` words, mask `i` starting at
/// `masks + i * n_words`, and `n_words` must be at least `cg_mask_words` of
/// every matcher's grammar.
///
/// Returns `CG_OK` when every mask was filled. Arguments that break these
/// rules are `CG_ERR_INVALID_ARGUMENT` before any mask is written.
/// Otherwise returns the error code of the first matcher that failed (its
/// index is in `cg_last_error`); the other masks are still filled, and
/// each failed one is all zeros. No matcher of the batch may be in use by
/// another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn cg_fill_masks(
    matchers: *const *mut cg_matcher,
    n: usize,
    masks: *mut u32,
    n_words: usize,
    n_threads: u32,
) -> c_int {
    guard_int("cg_fill_masks", || {
        let ptrs = array_arg(matchers, n, "matchers")?;
        if let Some(i) = ptrs.iter().position(|p| p.is_null()) {
            return Err(Error::invalid(format!("matchers[{i}] is NULL")));
        }
        let mut sorted: Vec<(usize, usize)> = ptrs
            .iter()
            .enumerate()
            .map(|(i, &p)| (p as usize, i))
            .collect();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::invalid(format!(
                "matchers[{}] and matchers[{}] are the same matcher; each may appear once",
                w[0].1.min(w[1].1),
                w[0].1.max(w[1].1)
            )));
        }
        // SAFETY of the &mut: the pointers are distinct (checked above) and
        // the caller promises no other thread uses them.
        let mut ms: Vec<&mut AnyMatcher> = ptrs.iter().map(|&p| &mut (*p).inner).collect();
        if let Some((i, m)) = ms
            .iter()
            .enumerate()
            .find(|(_, m)| m.grammar().engine().vocab().mask_words() > n_words)
        {
            return Err(Error::invalid(format!(
                "n_words is {n_words} but matchers[{i}] needs {} (cg_mask_words)",
                m.grammar().engine().vocab().mask_words()
            )));
        }
        let total = n
            .checked_mul(n_words)
            .ok_or_else(|| Error::invalid("n * n_words overflows"))?;
        if n == 0 {
            return Ok(CG_OK);
        }
        if masks.is_null() {
            return Err(null("masks"));
        }
        let masks = array_mut(masks, total, "masks")?;
        let results = fill_batch(&mut ms, masks, n_words, n_threads);
        for (i, r) in results.into_iter().enumerate() {
            r.map_err(|e| e.context(format!("matchers[{i}]")))?;
        }
        Ok(CG_OK)
    })
}

/// Fills `masks[i * n_words..]` for each matcher `i`, spread over
/// `n_threads` threads (0: one per CPU); the calling thread takes the
/// first share itself. Each mask is filled (or, on failure, cleared) by
/// [`fill`], which catches panics, so one matcher's failure leaves the
/// others' masks whole. Returns each matcher's result, in order.
pub(crate) fn fill_batch(
    matchers: &mut [&mut AnyMatcher],
    masks: &mut [u32],
    n_words: usize,
    n_threads: u32,
) -> Vec<Result<()>> {
    let n = matchers.len();
    let mut results: Vec<Result<()>> = (0..n).map(|_| Ok(())).collect();
    if n == 0 {
        return results;
    }
    let threads = match n_threads {
        0 => std::thread::available_parallelism().map_or(1, |t| t.get()),
        t => t as usize,
    }
    .clamp(1, n);
    let run = |ms: &mut [&mut AnyMatcher], masks: &mut [u32], results: &mut [Result<()>]| {
        for ((m, mask), r) in ms.iter_mut().zip(masks.chunks_mut(n_words)).zip(results) {
            let need = m.grammar().engine().vocab().mask_words();
            *r = fill(m, &mut mask[..need]);
        }
    };
    if threads == 1 {
        run(matchers, masks, &mut results);
        return results;
    }
    let per = n.div_ceil(threads);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        let mut chunks = matchers
            .chunks_mut(per)
            .zip(masks.chunks_mut(per * n_words))
            .zip(results.chunks_mut(per));
        let first = chunks.next();
        for ((ms, masks), results) in chunks {
            handles.push(s.spawn(move || run(ms, masks, results)));
        }
        if let Some(((ms, masks), results)) = first {
            run(ms, masks, results);
        }
        for h in handles {
            // `fill` catches panics, so joining cannot fail.
            let _ = h.join();
        }
    });
    results
}
