//! The profiling signal handler's own stacks.
//!
//! The handler runs on whatever stack the interrupted code was using, and
//! that may be small: a program's signal handler on its `sigaltstack`
//! (`SIGSTKSZ`, 8 KiB), a coroutine's `makecontext` stack (often 8–64
//! KiB, in the heap). Unwinding and recording a sample needs about 13
//! KiB, so on such stacks the agent overflowed into the heap or the guard
//! page and crashed the program (found by the torture suite,
//! `tests/torture.rs`). So the handler only reads its signal's context on
//! the interrupted stack, then moves to one of these: preallocated
//! (`prepare`, outside any handler, before the first session arms a
//! timer), each with a guard page below it, taken with an atomic flag and
//! never waited for. The kernel's signal frame itself (about 3.4 KiB with
//! this CPU's `AT_MINSIGSTKSZ`) is still pushed on the interrupted stack,
//! as for any signal the program receives.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Usable bytes of each stack (the handler needs about 13 KiB).
const STACK_BYTES: usize = 64 * 1024;
/// Below each stack, a page that faults instead of letting an overflow
/// reach the next one.
const GUARD_BYTES: usize = 4096;
/// This many handlers can run on their own stack at once. Not just one
/// per CPU: a thread preempted inside the handler holds its stack until
/// it runs again (with 64 busy threads on 2 CPUs, 8 stacks were all held
/// a third of the time). 256 × 68 KiB of address space; a stack's pages
/// are touched only when used (about 16 KiB each).
const MAX_STACKS: usize = 256;

struct HandlerStack {
    busy: AtomicBool,
    /// The stack's highest address (16-byte aligned), 0 before `prepare`.
    top: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const NO_STACK: HandlerStack = HandlerStack {
    busy: AtomicBool::new(false),
    top: AtomicUsize::new(0),
};

static STACKS: [HandlerStack; MAX_STACKS] = [NO_STACK; MAX_STACKS];
/// How many of [`STACKS`] are mapped (published after their `top`s).
static PREPARED: AtomicUsize = AtomicUsize::new(0);

/// Maps the [`MAX_STACKS`] stacks once (never fewer than `at_least`, the
/// unwinder caches, 8–256); never unmapped. Untouched pages cost nothing
/// (`MAP_NORESERVE`). Returns how many exist.
pub(crate) fn prepare(at_least: usize) -> usize {
    let prepared = PREPARED.load(Ordering::Acquire);
    if prepared > 0 {
        return prepared;
    }
    debug_assert!(at_least <= MAX_STACKS);
    let count = MAX_STACKS;
    let each = STACK_BYTES + GUARD_BYTES;
    // SAFETY: a fresh anonymous private mapping; the guard pages are then
    // made inaccessible inside it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            each * count,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return 0;
    }
    for (i, stack) in STACKS.iter().take(count).enumerate() {
        let low = base as usize + i * each;
        // SAFETY: the guard page lies inside the mapping made above.
        unsafe { libc::mprotect(low as *mut c_void, GUARD_BYTES, libc::PROT_NONE) };
        stack.top.store((low + each) & !15, Ordering::Relaxed);
    }
    match PREPARED.compare_exchange(0, count, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => count,
        Err(other) => {
            // Prepared concurrently by another thread: keep theirs.
            // SAFETY: ours was never published.
            unsafe { libc::munmap(base, each * count) };
            other
        }
    }
}

/// Runs `work` on one of the agent's stacks; false (and `work` not run)
/// when none is prepared or all are in use (the caller then decides
/// whether the interrupted stack can take it). Async-signal-safe: atomics and
/// a stack switch only.
pub(crate) fn run_on_own_stack<F: FnOnce()>(hint: usize, work: F) -> bool {
    let count = PREPARED.load(Ordering::Acquire);
    if count == 0 {
        return false;
    }
    for i in 0..count {
        let Some(stack) = STACKS.get((hint + i) % count) else {
            continue;
        };
        if stack
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        let mut work = Some(work);
        extern "C" fn entry<F: FnOnce()>(data: *mut c_void) {
            // SAFETY: `data` is the `Option<F>` of the caller's frame,
            // alive until the call returns.
            let work = unsafe { &mut *data.cast::<Option<F>>() };
            if let Some(work) = work.take() {
                work();
            }
        }
        let top = stack.top.load(Ordering::Relaxed);
        // SAFETY: [top - STACK_BYTES, top) is mapped, 16-byte aligned at
        // the top, and ours until `busy` is released.
        unsafe {
            call_on_stack(
                top,
                entry::<F>,
                (&mut work as *mut Option<F>).cast::<c_void>(),
            )
        };
        stack.busy.store(false, Ordering::Release);
        return true;
    }
    false
}

/// Calls `entry(data)` with the stack pointer at `top`, then returns to
/// the caller's stack (kept in r12, which `entry` preserves as the C ABI
/// requires).
///
/// # Safety
/// `top` must be the 16-byte aligned top of a mapped stack that nothing
/// else uses during the call, large enough for `entry`.
unsafe fn call_on_stack(top: usize, entry: extern "C" fn(*mut c_void), data: *mut c_void) {
    // SAFETY: see the function's contract; the stack pointer is restored
    // before the block ends, and every register the call may change is
    // declared clobbered.
    unsafe {
        std::arch::asm!(
            "mov r12, rsp",
            "mov rsp, {top}",
            "call {entry}",
            "mov rsp, r12",
            top = in(reg) top,
            entry = in(reg) entry,
            in("rdi") data,
            out("r12") _,
            clobber_abi("C"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The work runs on one of our stacks (its locals are in the mapped
    /// range), the flag is released after it, and with every stack taken
    /// (nested calls) the innermost call refuses instead of waiting. One
    /// test: the stacks are process-wide.
    #[test]
    fn work_runs_on_a_prepared_stack_and_busy_stacks_refuse() {
        let count = prepare(2);
        assert!(count >= 1);
        let mut seen = 0usize;
        assert!(run_on_own_stack(0, || {
            let local = 0u8;
            seen = std::hint::black_box(&local) as *const u8 as usize;
        }));
        let on_one = STACKS.iter().take(count).any(|s| {
            let top = s.top.load(Ordering::Relaxed);
            seen < top && seen >= top - STACK_BYTES
        });
        assert!(on_one, "local at {seen:#x} is on none of our stacks");
        assert!(STACKS.iter().all(|s| !s.busy.load(Ordering::Relaxed)));

        fn nest(depth: usize, count: usize, innermost: &mut bool) -> bool {
            if depth == count {
                return run_on_own_stack(0, || *innermost = true);
            }
            let mut result = true;
            let ran = run_on_own_stack(depth, || result = nest(depth + 1, count, innermost));
            ran && result
        }
        let mut innermost = false;
        assert!(!nest(0, count, &mut innermost));
        assert!(!innermost);
        assert!(run_on_own_stack(0, || innermost = true));
        assert!(innermost);
    }
}
