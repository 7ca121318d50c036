//! Live heap bytes, for `soak` to tell memory the program holds from
//! memory the allocator keeps. Only without the `mimalloc` feature
//! (`cargo build --release --no-default-features --bin cgram-bench`, which
//! turns off this crate's `mimalloc` and with it the library's): the
//! system allocator behind a counter, which then serves the library too.
//! With mimalloc (the default) the library sets the global allocator and
//! there is no count.

#[cfg(not(feature = "mimalloc"))]
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    pub static LIVE: AtomicUsize = AtomicUsize::new(0);

    pub struct Counting;

    // SAFETY: every call goes to the system allocator unchanged; the
    // counter only adds and subtracts the sizes it was given.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let p = System.alloc(layout);
            if !p.is_null() {
                LIVE.fetch_add(layout.size(), Relaxed);
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            let p = System.alloc_zeroed(layout);
            if !p.is_null() {
                LIVE.fetch_add(layout.size(), Relaxed);
            }
            p
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            System.dealloc(ptr, layout);
            LIVE.fetch_sub(layout.size(), Relaxed);
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let p = System.realloc(ptr, layout, new_size);
            if !p.is_null() {
                LIVE.fetch_add(new_size, Relaxed);
                LIVE.fetch_sub(layout.size(), Relaxed);
            }
            p
        }
    }

    #[global_allocator]
    static ALLOCATOR: Counting = Counting;
}

/// Bytes allocated and not freed, when counted.
pub fn live_bytes() -> Option<u64> {
    #[cfg(not(feature = "mimalloc"))]
    {
        Some(counting::LIVE.load(std::sync::atomic::Ordering::Relaxed) as u64)
    }
    #[cfg(feature = "mimalloc")]
    {
        None
    }
}
