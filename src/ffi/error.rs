//! Error codes, the calling thread's last error, and the panic guard
//! every entry point runs under (`guard`): the one place where a Rust
//! error or panic becomes a C return value.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Once;

use crate::error::{Error, ErrorKind, Result};

/// Success. Functions that return `int` return `CG_OK` (or a count, or 1/0
/// for yes/no questions) on success and a negative `CG_ERR_*` code on
/// failure; `cg_last_error()` then says what went wrong.
pub const CG_OK: c_int = 0;
/// A NULL pointer, a buffer too short, a token id out of range, options
/// that make no sense, a source that is not UTF-8.
pub const CG_ERR_INVALID_ARGUMENT: c_int = -1;
/// The grammar, schema or regex text could not be parsed.
pub const CG_ERR_PARSE: c_int = -2;
/// The input is well formed but uses something cgram does not support.
pub const CG_ERR_UNSUPPORTED: c_int = -3;
/// A limit was reached (compile time, automaton size, nesting depth).
pub const CG_ERR_LIMIT: c_int = -4;
/// A file could not be read or does not have the expected format.
pub const CG_ERR_IO: c_int = -5;
/// `cg_accept` / `cg_accept_bytes`: the grammar does not allow this here.
/// The matcher is unchanged.
pub const CG_ERR_TOKEN_REJECTED: c_int = -6;
/// The matcher has terminated (EOS was accepted) and takes no more input.
pub const CG_ERR_TERMINATED: c_int = -7;
/// A bug inside cgram (a caught panic). The object involved may be left in
/// any valid state; please report the message.
pub const CG_ERR_INTERNAL: c_int = -8;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
    static LAST_ERROR_CODE: std::cell::Cell<c_int> = const { std::cell::Cell::new(CG_OK) };
}

/// Records `message` and `code` as this thread's last error.
fn set_last_error(code: c_int, message: String) {
    let _ = LAST_ERROR_CODE.try_with(|c| c.set(code));
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some(message);
        }
    });
}

thread_local! {
    /// How many [`catch_quietly`] calls this thread is inside.
    static QUIET_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// Where the last quiet panic of this thread happened.
    static PANIC_PLACE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `body` under `catch_unwind` without the panic printing anything.
///
/// Rust's default panic hook writes the message (and, under
/// `RUST_BACKTRACE`, a backtrace) to stderr before unwinding starts, even
/// when the panic is then caught. The first call installs a hook that keeps
/// quiet on threads inside this function (recording where the panic
/// happened, for the error message) and hands every other panic to the hook
/// that was there before, so a Rust program linking cgram keeps its own
/// panic output.
pub(crate) fn catch_quietly<T>(body: impl FnOnce() -> T) -> std::thread::Result<T> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET_DEPTH.try_with(|d| d.get()).unwrap_or(0) == 0 {
                previous(info);
            } else if let Some(place) = info.location() {
                let place = format!("{}:{}", place.file(), place.line());
                let _ = PANIC_PLACE.try_with(|p| p.replace(Some(place)));
            }
        }));
    });
    QUIET_DEPTH.with(|d| d.set(d.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(body));
    QUIET_DEPTH.with(|d| d.set(d.get() - 1));
    result
}

/// The text of a panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

pub(crate) fn internal_error(payload: &(dyn std::any::Any + Send)) -> Error {
    let place = PANIC_PLACE
        .try_with(|p| p.take())
        .ok()
        .flatten()
        .map(|p| format!(" at {p}"))
        .unwrap_or_default();
    Error::new(
        ErrorKind::Internal,
        format!("internal error (panic{place}): {}", panic_message(payload)),
    )
}

/// Runs `body` for the C function `func`: a failure or a panic is recorded
/// in the error slot (prefixed with `func`) and turned into a return value
/// by `fail`, which gets the error code.
pub(crate) fn guard<T>(
    func: &str,
    fail: impl FnOnce(c_int) -> T,
    body: impl FnOnce() -> Result<T>,
) -> T {
    let error = match catch_quietly(body) {
        Ok(Ok(value)) => return value,
        Ok(Err(error)) => error,
        Err(payload) => internal_error(&*payload),
    };
    // Formatting the message cannot unwind past here either.
    let code = error.kind().code();
    let _ = catch_quietly(|| set_last_error(code, format!("{func}: {}", error.message())));
    fail(code)
}

/// [`guard`] for functions returning `int`: the error code on failure.
pub(crate) fn guard_int(func: &str, body: impl FnOnce() -> Result<c_int>) -> c_int {
    guard(func, |code| code, body)
}

/// [`guard`] for functions returning a pointer: NULL on failure.
pub(crate) fn guard_ptr<T>(func: &str, body: impl FnOnce() -> Result<*mut T>) -> *mut T {
    guard(func, |_| ptr::null_mut(), body)
}

/// The message of the last failed cgram call on the calling thread (the
/// name of the function, then what went wrong), or "" if no call has failed
/// on this thread yet. Never NULL.
///
/// Each thread has its own message. Successful calls do not change it, so
/// check the return value first and read the message only after a failure.
/// The string is owned by cgram and stays valid until the next failing
/// cgram call on the same thread (or until the thread exits): copy it to
/// keep it longer. Do not free it.
#[no_mangle]
pub extern "C" fn cg_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| match slot.try_borrow() {
            Ok(slot) => slot.as_ref().map_or(c"".as_ptr(), |m| m.as_ptr()),
            Err(_) => c"".as_ptr(),
        })
        .unwrap_or(c"".as_ptr())
}

/// The `CG_ERR_*` code of the last failed cgram call on the calling thread
/// (the call `cg_last_error` describes), or `CG_OK` if none has failed on
/// this thread. For functions that return a pointer, this is how the kind
/// of failure is told apart (`CG_ERR_PARSE` from `CG_ERR_LIMIT`, say).
/// Thread-safe.
#[no_mangle]
pub extern "C" fn cg_last_error_code() -> c_int {
    LAST_ERROR_CODE.try_with(|c| c.get()).unwrap_or(CG_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last_error() -> String {
        unsafe { CStr::from_ptr(cg_last_error()) }
            .to_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_panic_becomes_an_internal_error() {
        let rc = guard_int("cg_test", || panic!("boom {}", 42));
        assert_eq!(rc, CG_ERR_INTERNAL);
        let msg = last_error();
        assert!(
            msg.starts_with("cg_test: internal error (panic at src/ffi/error.rs:")
                && msg.ends_with("): boom 42"),
            "{msg}"
        );
        let p: *mut u8 = guard_ptr("cg_test", || panic!("static message"));
        assert!(p.is_null());
        assert!(last_error().contains("static message"));
    }

    /// Set in the child process of [`a_caught_panic_prints_nothing`].
    const PANIC_CHILD: &str = "CGRAM_TEST_PANIC_CHILD";

    /// A panic inside a C call writes nothing to stderr, even with
    /// backtraces on, while a panic elsewhere in the process still reaches
    /// the hook that was there before. Run in a child process: the test
    /// harness captures panic output of its own threads, which would hide
    /// a print.
    #[test]
    fn a_caught_panic_prints_nothing() {
        if std::env::var_os(PANIC_CHILD).is_some() {
            let rc = guard_int("cg_test", || panic!("quiet boom"));
            assert_eq!(rc, CG_ERR_INTERNAL);
            assert!(last_error().contains("quiet boom"));
            // A worker thread (as `cg_fill_masks` starts) is quiet too.
            let worker = std::thread::spawn(|| catch_quietly(|| panic!("quiet worker")).is_err());
            assert!(worker.join().unwrap());
            let outside = std::thread::spawn(|| panic!("loud boom")).join();
            assert!(outside.is_err());
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "ffi::error::tests::a_caught_panic_prints_nothing",
            ])
            .args(["--nocapture", "--test-threads", "1"])
            .env(PANIC_CHILD, "1")
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed: {stderr}");
        assert!(
            !stderr.contains("quiet"),
            "a caught panic printed: {stderr}"
        );
        assert!(
            stderr.contains("loud boom"),
            "the host's panic was lost: {stderr}"
        );
    }

    #[test]
    fn errors_keep_their_code_and_the_slot_is_per_thread() {
        assert_eq!(last_error(), "");
        let rc = guard_int("cg_x", || Err(Error::limit("too big")));
        assert_eq!(rc, CG_ERR_LIMIT);
        assert_eq!(last_error(), "cg_x: too big");
        std::thread::spawn(|| assert_eq!(last_error(), ""))
            .join()
            .unwrap();
        // A success leaves the message alone.
        assert_eq!(guard_int("cg_y", || Ok(7)), 7);
        assert_eq!(last_error(), "cg_x: too big");
        // A NUL inside a message does not lose it.
        guard_int("cg_z", || Err(Error::invalid("a\0b")));
        assert_eq!(last_error(), "cg_z: a\\0b");
    }
}
