//! Limits on what one input may cost, and the tools that enforce them.
//!
//! cgram runs inside servers where every grammar, schema and trigger comes
//! from a request, so no input may take unbounded time, memory or stack.
//! Every limit has a default, is reported as [`ErrorKind::Limit`] with a
//! message naming the limit and its value, and, where a host may want
//! another value, is a field of `cg_compile_options`:
//!
//! | limit | default | option | where |
//! |---|---|---|---|
//! | source text | [`MAX_SOURCE_BYTES`] (64 MiB), with `json_documents` | - | every kind |
//! | compile time | 10,000 ms | `max_compile_ms` | front ends and compiler, checked in every loop that can run long ([`Deadline`], [`Meter`]) |
//! | one trigger pattern's compile time | [`TRIGGER_MAX_COMPILE_MS`] | - | `cg_triggers_new` (each pattern or word) |
//! | automaton states | 1,000,000, plus one per byte of a GBNF source (a literal is a state per byte) | `max_states` | the compiled grammar |
//! | one mask's work | [`DEFAULT_MAX_MASK_STEPS`] parser steps | `max_mask_steps` | `cg_fill_mask`: past it the call fails with `CG_ERR_LIMIT` and allows nothing |
//! | GBNF group nesting | [`crate::gbnf::MAX_NESTING`] (20,000; llama.cpp overflows an 8 MiB stack from ~18,700) | - | parser |
//! | GBNF repetition | 2,000 copies (llama.cpp's) | - | parser |
//! | JSON Schema nesting | [`crate::json_schema::MAX_SCHEMA_NESTING`] | - | JSON reader |
//! | JSON Schema size | 100,000 rules, 200,000 subschema combinations, 1,024 alternatives of one type (`MAX_SHAPES` in `json_schema/node.rs`), 1,024 number constraints in one union, 65,536 pairs of them per intersection and 262,144 per complement (`MAX_NUM_ATOMS`, `MAX_NUM_PAIRS`, `MAX_NOT_PAIRS` in `json_schema/number.rs`), 6 negated `additionalProperties` on one object (`MAX_NEEDS` in `json_schema/compiler.rs`) | - | schema translation |
//! | JSON Schema `multipleOf` | [`MAX_MULTIPLE_OF_STATES`] residue states (divisor `a × 10^-k`: `a × (k + 3)`) | - | schema translation |
//! | regex nesting and repetition | see [`crate::regex`] | - | regex parser |
//! | one lexeme DFA | 32 MiB | - | lexeme builder: a regular part whose DFA would be larger becomes a parser rule (no error; intersections and complements, which only exist as DFAs, are refused, and so is the trie of a large set of strings) |
//! | vocabulary | 16,777,216 tokens of at most 65,536 bytes | - | `cg_vocab_new` |
//! | memory kept per vocabulary | [`crate::tokensets::DEFAULT_CACHE_BUDGET`] (256 MiB) | `cg_vocab_set_cache_budget` | the engine's caches: least recently used lexemes dropped past three quarters of it, two shared tables cleared past an eighth each |
//!
//! Recursion over grammar expressions is as deep as the input nests, and a
//! host thread may have a small stack: compilation runs on a stack of its
//! own ([`on_compile_stack`]).

use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Default for `cg_compile_options.max_compile_ms`.
pub const DEFAULT_MAX_COMPILE_MS: u64 = 10_000;
/// Default for `cg_compile_options.max_states`.
pub const DEFAULT_MAX_STATES: usize = 1_000_000;

/// Parser-rule automaton edges allowed per state of `max_states`.
/// Removing the epsilon edges of a rule copies each state's reachable
/// edges into it, so edges can grow with the square of the states: each
/// of the 3,000 iterations of `(a|b?){3000}` can skip to every later one,
/// millions of edges.
pub const EDGES_PER_STATE: usize = 16;

/// How long one trigger pattern (or word) may take to compile, in ms.
/// Triggers take no options, so their limit is fixed, and tighter than a
/// grammar's: a pattern naming 300 tools compiles in 5-20 ms (release),
/// while hostile patterns (counted repetitions searched anywhere, nested
/// assertions) otherwise ran up to their automaton size limit, 40-80 ms
/// in release and ten times that in an instrumented build.
pub const TRIGGER_MAX_COMPILE_MS: u64 = 250;

/// Most states of one `multipleOf` residue automaton: a divisor
/// `a × 10^-k` takes `a × (k + 3)` (so integer divisors up to 33,333).
/// Measured with the Llama 3 vocabulary (release): see the commit that set
/// it and `json_schema_suite::multiple_of_large_divisors_llama3`.
pub const MAX_MULTIPLE_OF_STATES: usize = 100_000;

/// Longest source text `cg_compile` takes (JSON Schema: the schema and
/// its `json_documents` together).
pub const MAX_SOURCE_BYTES: usize = 64 << 20;

/// Default for `cg_compile_options.max_mask_steps`: the parser steps (an
/// item read past one byte, offered by a closure, or scanned to complete
/// a rule) one mask may take. Every mask of MaskBench's schemas needs
/// less than 100,000; the default stops a mask after one to a few seconds
/// of one core.
pub const DEFAULT_MAX_MASK_STEPS: u64 = 100_000_000;

/// The stack compilation runs on (reserved, touched only as deep as the
/// input nests).
pub const COMPILE_STACK_BYTES: usize = 256 << 20;

/// A point in time after which a compilation gives up.
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    start: Instant,
    /// `None`: no limit.
    max: Option<Duration>,
    /// The limit's name in the error message.
    name: &'static str,
}

impl Deadline {
    /// `max_ms` from now; 0 means no limit.
    pub fn after_ms(max_ms: u64) -> Deadline {
        Deadline::named(max_ms, "max_compile_ms")
    }

    /// [`Deadline::after_ms`] for a limit other than `max_compile_ms`,
    /// which the error message names.
    pub fn named(max_ms: u64, name: &'static str) -> Deadline {
        Deadline {
            start: Instant::now(),
            max: (max_ms > 0).then(|| Duration::from_millis(max_ms)),
            name,
        }
    }

    /// No limit.
    pub fn none() -> Deadline {
        Deadline::after_ms(0)
    }

    /// An error once the time is up.
    pub fn check(&self) -> Result<()> {
        match self.max {
            Some(max) if self.start.elapsed() > max => Err(Error::limit(format!(
                "compilation took longer than {} ms ({})",
                max.as_millis(),
                self.name
            ))),
            _ => Ok(()),
        }
    }

    /// Milliseconds since the start.
    pub fn elapsed_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// A [`Meter`] of this deadline.
    pub fn meter(&self) -> Meter {
        Meter {
            deadline: *self,
            left: WORK_PER_CHECK,
        }
    }
}

/// Elementary steps (a transition followed, a state set element copied or
/// hashed, an element sorted) between two readings of the clock by a
/// [`Meter`]: 10-100 us of work in a release build, so that reading the
/// clock (about 20 ns) costs nothing measurable and a compilation stops
/// within a fraction of a millisecond of its deadline.
pub const WORK_PER_CHECK: usize = 1 << 14;

/// A [`Deadline`] checked as work is done. Every loop of a compilation
/// whose length depends on the input counts its steps with
/// [`Meter::step`] (an iteration whose cost varies counts that cost), and
/// the clock is read once per [`WORK_PER_CHECK`] steps: no stretch of
/// work, however the input shapes it, goes unchecked for long.
pub struct Meter {
    deadline: Deadline,
    left: usize,
}

impl Meter {
    /// Counts `work` steps just done or about to be done: an error once
    /// the time is up.
    #[inline]
    pub fn step(&mut self, work: usize) -> Result<()> {
        if work < self.left {
            self.left -= work;
            Ok(())
        } else {
            self.left = WORK_PER_CHECK;
            self.deadline.check()
        }
    }

    /// The deadline it checks.
    pub fn deadline(&self) -> &Deadline {
        &self.deadline
    }
}

/// Checks between two readings of the clock by a [`SampledDeadline`].
pub const CHECKS_PER_CLOCK_READ: u32 = 8;

/// A [`Deadline`] for checks on paths taken thousands of times per
/// compilation, each followed by little work of its own (a grammar rule
/// made, a subschema evaluated): the clock is read on one check in
/// [`CHECKS_PER_CLOCK_READ`]. Read on every check, it took 2% of compiling
/// a Kubernetes schema. Work that runs long between two checks counts its
/// own steps with a [`Meter`], so the deadline is still noticed soon.
pub struct SampledDeadline {
    deadline: Deadline,
    checks: std::cell::Cell<u32>,
}

impl SampledDeadline {
    pub fn new(deadline: Deadline) -> SampledDeadline {
        SampledDeadline {
            deadline,
            checks: std::cell::Cell::new(0),
        }
    }

    /// An error once the time is up, noticed within
    /// [`CHECKS_PER_CLOCK_READ`] checks.
    #[inline]
    pub fn check(&self) -> Result<()> {
        let n = self.checks.get().wrapping_add(1);
        self.checks.set(n);
        if n.is_multiple_of(CHECKS_PER_CLOCK_READ) {
            self.deadline.check()
        } else {
            Ok(())
        }
    }

    /// The deadline it samples, for a check that must read the clock.
    pub fn deadline(&self) -> &Deadline {
        &self.deadline
    }
}

/// Runs `f` on a stack of [`COMPILE_STACK_BYTES`]: the front ends and the
/// compiler recurse as deep as the input nests, and the host's thread may
/// have little stack (a Rust thread has 2 MiB, some C runtimes less).
///
/// On Unix the stack is mapped once per thread and reused: a fresh
/// mapping per compilation (`stacker::grow`) cost 25 us in page faults and
/// `munmap`, five times the compilation of a small grammar. Pages that a
/// long (possibly deep) compilation touched below the first MiB are given
/// back afterwards.
/// Elsewhere, `stacker` maps one per call.
pub fn on_compile_stack<T>(f: impl FnOnce() -> T) -> T {
    #[cfg(unix)]
    {
        compile_stack::run(f)
    }
    #[cfg(not(unix))]
    {
        stacker::maybe_grow(COMPILE_STACK_BYTES / 2, COMPILE_STACK_BYTES, f)
    }
}

#[cfg(unix)]
mod compile_stack {
    use std::cell::{Cell, RefCell};
    use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

    use super::COMPILE_STACK_BYTES;

    /// Bytes at the top of the stack that stay mapped between uses.
    const KEEP: usize = 1 << 20;
    /// Calls shorter than this leave the stack as it is (they touch a few
    /// pages beyond [`KEEP`] at most).
    const TRIM_AFTER: std::time::Duration = std::time::Duration::from_micros(100);

    /// A mapped stack: a guard page, then `COMPILE_STACK_BYTES`.
    struct Stack {
        map: *mut libc::c_void,
        page: usize,
    }

    impl Stack {
        fn new() -> Option<Stack> {
            // SAFETY: sysconf has no preconditions; mmap asks for a fresh
            // anonymous mapping (checked below) and mprotect covers its
            // first page.
            unsafe {
                let page = libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize;
                let map = libc::mmap(
                    std::ptr::null_mut(),
                    page + COMPILE_STACK_BYTES,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                );
                if map == libc::MAP_FAILED {
                    return None;
                }
                if libc::mprotect(map, page, libc::PROT_NONE) != 0 {
                    libc::munmap(map, page + COMPILE_STACK_BYTES);
                    return None;
                }
                Some(Stack { map, page })
            }
        }

        fn base(&self) -> *mut u8 {
            // SAFETY: within the mapping (after the guard page).
            unsafe { (self.map as *mut u8).add(self.page) }
        }

        /// Gives back the pages below the top [`KEEP`] bytes.
        fn trim(&self) {
            // SAFETY: the range lies inside the mapping, and nothing runs
            // on this stack now; its contents are dead.
            unsafe {
                libc::madvise(
                    self.base().cast(),
                    COMPILE_STACK_BYTES - KEEP,
                    libc::MADV_DONTNEED,
                );
            }
        }
    }

    impl Drop for Stack {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`, no longer in use.
            unsafe {
                libc::munmap(self.map, self.page + COMPILE_STACK_BYTES);
            }
        }
    }

    thread_local! {
        static STACK: RefCell<Option<Stack>> = const { RefCell::new(None) };
        static ON_IT: Cell<bool> = const { Cell::new(false) };
    }

    pub fn run<T>(f: impl FnOnce() -> T) -> T {
        if ON_IT.with(|o| o.get()) {
            return f();
        }
        let stack = STACK.with(|s| s.borrow_mut().take()).or_else(Stack::new);
        let Some(stack) = stack else {
            // No memory for a stack: the thread's own, as a last resort.
            return f();
        };
        ON_IT.with(|o| o.set(true));
        let start = std::time::Instant::now();
        // SAFETY: the stack is mapped, page-aligned and as large as said;
        // the callback does not unwind out of it (panics are caught and
        // resumed after switching back).
        let result = unsafe {
            psm::on_stack(stack.base(), COMPILE_STACK_BYTES, || {
                catch_unwind(AssertUnwindSafe(f))
            })
        };
        ON_IT.with(|o| o.set(false));
        // Trimming costs 3 us; a call this short cannot have gone deep.
        if start.elapsed() >= TRIM_AFTER {
            stack.trim();
        }
        STACK.with(|s| *s.borrow_mut() = Some(stack));
        match result {
            Ok(v) => v,
            Err(panic) => resume_unwind(panic),
        }
    }
}
