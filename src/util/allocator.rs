//! The library's allocator settings.

/// mimalloc's `mi_option_purge_delay` (its index in `mi_option_t`, the
/// same in mimalloc 2 and 3; `libmimalloc-sys` names no constant).
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps freed memory for reuse instead of returning it to the system:
/// each return (`madvise`) cost whichever mask ran then 1-5 ms of
/// kernel time. With mimalloc's 1 s delay that happened several times
/// a second while grammars came and went; with 10 s, it still made the
/// largest masks of a MaskBench run (2-9 ms of kernel time in masks
/// that take 0.1 ms). Never returning it leaves the peak resident size
/// and compile times as they were (maskbench-dev, 2.2 GB either way).
/// Called before a vocabulary is built (everything starts there);
/// idempotent.
pub fn configure() {
    #[cfg(feature = "mimalloc")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: sets an option of the statically linked mimalloc,
        // which reads it on each purge decision.
        ONCE.call_once(|| unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) });
    }
}
