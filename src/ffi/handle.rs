//! The one ownership rule of the C objects ([`Handle`]).
//!
//! Every C object (`cg_vocab`, `cg_grammar`, `cg_grammar_cache`,
//! `cg_matcher`, `cg_triggers`) is a Rust struct that the host holds
//! through an opaque pointer:
//!
//! - a constructor boxes it and hands the host the pointer
//!   ([`Handle::into_raw`]); the host owns it from then on;
//! - every call borrows it for its duration ([`Handle::arg`],
//!   [`Handle::arg_mut`]); a NULL pointer is an invalid argument named
//!   after the object, never a crash;
//! - the object's free function takes it back once ([`Handle::free`]);
//!   NULL is a no-op.
//!
//! What the object shares lives behind an `Arc` inside it (a vocabulary,
//! a grammar, triggers), so that freeing the handle drops the host's
//! reference only: a grammar outlives the vocabulary handle it was
//! compiled from, a matcher the grammar handle. Each object's file
//! implements the trait; nothing else names every object.

use super::args::null;
use super::error::guard;
use crate::error::Result;

/// A C object (see the module docs).
pub(crate) trait Handle: Sized + 'static {
    /// What calls work on.
    type Inner;
    /// The object's name in error messages ("vocab is NULL").
    const NAME: &'static str;

    fn inner(&self) -> &Self::Inner;
    fn inner_mut(&mut self) -> &mut Self::Inner;

    /// Hands the object to the host.
    fn into_raw(self) -> *mut Self {
        Box::into_raw(Box::new(self))
    }

    /// The object behind a host's pointer, for the call.
    ///
    /// # Safety
    /// `p` is NULL or came from [`Handle::into_raw`] and was not freed;
    /// no other thread mutates it meanwhile.
    unsafe fn arg<'a>(p: *const Self) -> Result<&'a Self::Inner> {
        p.as_ref().map(Self::inner).ok_or_else(|| null(Self::NAME))
    }

    /// The object behind a host's pointer, to change it.
    ///
    /// # Safety
    /// As for [`Handle::arg`], and no other reference to it is in use.
    unsafe fn arg_mut<'a>(p: *mut Self) -> Result<&'a mut Self::Inner> {
        p.as_mut()
            .map(Self::inner_mut)
            .ok_or_else(|| null(Self::NAME))
    }

    /// Takes the object back from the host and drops it; NULL is a no-op.
    /// `func` names the C function for a panic's message.
    ///
    /// # Safety
    /// `p` is NULL or came from [`Handle::into_raw`] and was not freed.
    unsafe fn free(func: &str, p: *mut Self) {
        if !p.is_null() {
            guard(
                func,
                |_| (),
                || {
                    drop(Box::from_raw(p));
                    Ok(())
                },
            )
        }
    }
}

/// Implements [`Handle`] for a C object whose calls work on its `inner`
/// field.
macro_rules! handle {
    ($object:ty, $inner:ty, $name:literal) => {
        impl $crate::ffi::handle::Handle for $object {
            type Inner = $inner;
            const NAME: &'static str = $name;

            fn inner(&self) -> &$inner {
                &self.inner
            }

            fn inner_mut(&mut self) -> &mut $inner {
                &mut self.inner
            }
        }
    };
}
pub(crate) use handle;
