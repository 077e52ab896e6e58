//! Threads that block every signal are still sampled: our
//! `pthread_sigmask` and `sigprocmask` (interposed like `pthread_create`)
//! leave the session's sampling signal out of what a program blocks.
//!
//! Programs block all signals in worker threads so that their signals
//! (SIGINT, SIGTERM, …) go to one thread: `xz -T2` creates its compressing
//! threads with every signal blocked, servers do the same. A signal-based
//! profiler then sees nothing of them — the torture suite's `xz -T2` run
//! used 6 CPU-s and left 0 samples, silently. The sampling signal is a
//! real-time signal the program does not use (chosen free at start), sent
//! to one thread by its own clock, so leaving it deliverable changes
//! nothing the program's signals do. It is protected only while a session
//! samples with per-thread clocks; not `SIGPROF` (the `setitimer`
//! fallback's process-wide signal, which programs may use), and no longer
//! once the program installed its own handler on the signal (the session
//! then stops arming it). A mask a program reads back shows the signal
//! unblocked.

use std::sync::atomic::{AtomicI32, Ordering};

use crate::interpose::{PTHREAD_SIGMASK, SIGPROCMASK};

/// The signal kept unblocked (0: none).
static PROTECTED: AtomicI32 = AtomicI32::new(0);

/// Keeps `signal` deliverable from now on (a session samples on it with
/// per-thread clocks), starting with the calling thread.
pub(crate) fn protect(signal: i32) {
    if signal == libc::SIGPROF || !(1..=64).contains(&signal) {
        return;
    }
    PROTECTED.store(signal, Ordering::Release);
    unblock_in_this_thread();
}

/// Stops protecting any signal (the session stopped or lost its signal).
pub(crate) fn unprotect() {
    PROTECTED.store(0, Ordering::Release);
}

/// Unblocks the protected signal in the calling thread (a new thread may
/// have inherited a mask that blocks it).
pub(crate) fn unblock_in_this_thread() {
    let signal = PROTECTED.load(Ordering::Acquire);
    if signal == 0 {
        return;
    }
    let Some(real) = real(&PTHREAD_SIGMASK) else {
        return;
    };
    // SAFETY: a local set; libc's pthread_sigmask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        real(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

type SigmaskFn = unsafe extern "C" fn(i32, *const libc::sigset_t, *mut libc::sigset_t) -> i32;

fn real(next: &crate::interpose::NextDefinition) -> Option<SigmaskFn> {
    match next.address() {
        0 => None,
        // SAFETY: libc's definition of a function with this signature.
        address => Some(unsafe { std::mem::transmute::<usize, SigmaskFn>(address) }),
    }
}

/// Calls libc's `next` with `set` minus the protected signal when it would
/// block it. Async-signal-safe (sigprocmask is).
unsafe fn filtered(
    next: &crate::interpose::NextDefinition,
    how: i32,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> i32 {
    let Some(real) = real(next) else {
        // SAFETY: errno of the calling thread.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    };
    let signal = PROTECTED.load(Ordering::Acquire);
    if set.is_null() || signal == 0 || how == libc::SIG_UNBLOCK {
        // SAFETY: the caller's arguments, as given.
        return unsafe { real(how, set, old) };
    }
    // SAFETY: `set` is a valid sigset_t (the caller's contract); we pass a
    // copy without the protected signal.
    unsafe {
        let mut copy = *set;
        libc::sigdelset(&mut copy, signal);
        real(how, &copy, old)
    }
}

/// `pthread_sigmask(3)`, keeping the sampling signal deliverable.
///
/// # Safety
/// As libc's: `set` and `old` are null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_sigmask(
    how: i32,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> i32 {
    // SAFETY: forwarded under the caller's contract.
    unsafe { filtered(&PTHREAD_SIGMASK, how, set, old) }
}

/// `sigprocmask(2)`, keeping the sampling signal deliverable.
///
/// # Safety
/// As libc's: `set` and `old` are null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigprocmask(
    how: i32,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> i32 {
    // SAFETY: forwarded under the caller's contract.
    unsafe { filtered(&SIGPROCMASK, how, set, old) }
}
