//! Locks around caches that one panic cannot break for good.
//!
//! A panic while a `std::sync::Mutex` is held poisons it, and every later
//! `lock().unwrap()` panics in turn. The C API catches every panic, so one
//! bug met once would turn every later call on the vocabulary or grammar
//! into `CG_ERR_INTERNAL`. Yet what these locks guard is a cache, and
//! clearing a cache changes speed, never a mask: a [`CacheMutex`] gives
//! the next caller its value after [`Recover::recover`] has brought it
//! back to a state that is whole whatever the interrupted section did (for
//! most caches, empty), and clears the poison.
//!
//! Every lock of the library is a [`CacheMutex`]. Each has a name, under
//! which a unit test makes it panic while held (`test_hook`) to show
//! that later calls still give the same masks.

use std::sync::{Mutex, MutexGuard};

/// What a cache behind a [`CacheMutex`] does after a panic interrupted a
/// section that held it: come back to a state every reader can trust,
/// dropping whatever the section may have left half done.
pub trait Recover {
    fn recover(&mut self);
}

/// A mutex whose poison is healed by [`Recover`] rather than passed on.
pub struct CacheMutex<T> {
    name: &'static str,
    inner: Mutex<T>,
}

impl<T: Recover> CacheMutex<T> {
    /// `name` says which cache this is (the test hook finds it by it).
    pub const fn new(name: &'static str, value: T) -> CacheMutex<T> {
        CacheMutex {
            name,
            inner: Mutex::new(value),
        }
    }

    /// The value, recovered first if a panic poisoned the lock.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        let guard = match self.inner.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                let mut guard = poisoned.into_inner();
                guard.recover();
                self.inner.clear_poison();
                guard
            }
        };
        #[cfg(test)]
        test_hook::entered(self.name);
        guard
    }

    /// Which cache this is.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl<K, V, S> Recover for std::collections::HashMap<K, V, S> {
    fn recover(&mut self) {
        self.clear();
    }
}

/// Panics on demand inside a named [`CacheMutex`]'s section, on this
/// thread only, and counts the sections entered.
#[cfg(test)]
pub mod test_hook {
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    thread_local! {
        static PANIC_AT: RefCell<Option<(&'static str, usize)>> = const { RefCell::new(None) };
        static ENTERED: RefCell<BTreeMap<&'static str, usize>> = const { RefCell::new(BTreeMap::new()) };
    }

    /// Makes the `nth` (from 1) entry of this thread into the lock named
    /// `name` from now on panic while holding it; `None` stops.
    pub fn panic_at(target: Option<(&'static str, usize)>) {
        take_entered();
        PANIC_AT.with(|p| *p.borrow_mut() = target);
    }

    /// Whether the panic asked for has not happened yet.
    pub fn pending() -> bool {
        PANIC_AT.with(|p| p.borrow().is_some())
    }

    /// How many times this thread entered each named lock since the last
    /// call, which starts the count again.
    pub fn take_entered() -> BTreeMap<&'static str, usize> {
        ENTERED.with(|e| std::mem::take(&mut *e.borrow_mut()))
    }

    pub(super) fn entered(name: &'static str) {
        let count = ENTERED.with(|e| {
            let mut e = e.borrow_mut();
            let n = e.entry(name).or_insert(0);
            *n += 1;
            *n
        });
        let fire = PANIC_AT.with(|p| {
            p.borrow()
                .is_some_and(|(at, nth)| at == name && nth == count)
        });
        if fire {
            PANIC_AT.with(|p| *p.borrow_mut() = None);
            panic!("test hook: panic inside the lock `{name}`");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Counter {
        value: u32,
        recovered: u32,
    }

    impl Recover for Counter {
        fn recover(&mut self) {
            self.value = 0;
            self.recovered += 1;
        }
    }

    #[test]
    fn a_panic_under_the_lock_recovers_the_value_once() {
        let m = CacheMutex::new("counter", Counter::default());
        m.lock().value = 5;
        let caught = std::panic::catch_unwind(|| {
            let mut g = m.lock();
            g.value = 7;
            panic!("inside");
        });
        assert!(caught.is_err());
        let g = m.lock();
        assert_eq!((g.value, g.recovered), (0, 1));
        drop(g);
        assert_eq!(m.lock().recovered, 1, "the poison was cleared");
    }
}
